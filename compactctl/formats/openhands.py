"""OpenHands (V0) event streams: a list of events, or records with a "history" list of them.

Read-only: `message` actions become user / assistant messages, `system` the system message; other
agent actions (run, run_ipython, read, write, edit, browse, ...) become tool calls (named by their
tool_call_metadata, or by the action), and an observation becomes the result of the action its
`cause` points at (with its exit code). A call's arguments are the model's, as the model response its
tool_call_metadata keeps them; without one, the action's own fields less what the harness set (confirmation,
risk, sandbox flags) and the unset ones (null). Both shapes are read: `args` nested, or flattened into the
event. Output is OpenAI chat unless `--to` says otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator

import orjson

from ..errors import DataError
from ..model import Message, ToolCall, Transcript
from . import Reader, Record
from .registry import read_elsewhere

NAME = "openhands"
CARRIER_KEYS = ("history",)
TEXT_ACTIONS = ("message", "finish", "think", "system")
SKIP = ("null", "agent_state_changed", "change_agent_state", "recall", "condensation")
# An action's fields the harness sets, not the model: left out of a call read from the action (no model response).
HARNESS_ARGS = (
    "thought",
    "is_confirmed",
    "confirmation_state",
    "action_risk",
    "security_risk",
    "kernel_init_code",
    "keep_prompt",
    "blocking",
    "is_static",
    "hidden",
    "impl_source",
)


def _is_event(o) -> bool:
    return isinstance(o, dict) and ("action" in o or "observation" in o) and "role" not in o


def sniff(obj: dict) -> str | None:
    h = obj.get("history")
    if isinstance(h, list) and h and _is_event(h[0]):
        return "dataset"
    if _is_event(obj):
        return "session"
    return None


def _args(e: dict) -> dict:
    a = e.get("args")
    if isinstance(a, dict):
        return a
    return {
        k: v
        for k, v in e.items()
        if k
        not in ("id", "timestamp", "source", "message", "action", "observation", "cause", "tool_call_metadata", "timeout", "llm_metrics")
    }


def check_event(e: object, source: str, lineno: int) -> None:
    """An event whose action or observation is no string is a data error (it names no kind of event)."""
    if isinstance(e, dict) and ("action" in e or "observation" in e):
        key = "action" if "action" in e else "observation"
        if not isinstance(e[key], str):
            raise DataError(source, lineno, f"an event's {key} must be a string, got {type(e[key]).__name__}")


def messages_from(events: list) -> list[Message]:
    """The messages of a stream of events (checked by check_event)."""
    out: list[Message] = []
    links = _Links()
    for k, e in enumerate(events):
        if not isinstance(e, dict):
            continue
        e = _plain(e)
        if "action" in e:
            m = None if e["action"] in SKIP else _action(k, e, _args(e), links)
        elif "observation" in e:
            m = None if e["observation"] in SKIP else _observation(e, _args(e), links)
        else:
            m = None
        if m is not None:
            out.append(m)
    for i, m in enumerate(out):
        m.index = i
    return out


def _plain(e: dict) -> dict:
    """The event with what is read from it in the types it is read as: ids a string or a number (any other left out),
    `tool_call_metadata` an object with string names and ids, text a string (other JSON as its text)."""
    e = {k: v for k, v in e.items() if k not in ("id", "cause") or _is_id(v)}
    meta = e.get("tool_call_metadata")
    if meta is not None:
        meta = (
            {k: v for k, v in meta.items() if isinstance(v, str) or k not in ("tool_call_id", "function_name")}
            if isinstance(meta, dict)
            else {}
        )
        e["tool_call_metadata"] = meta
    return e


def _is_id(v: object) -> bool:
    return isinstance(v, (str, int, float)) and not isinstance(v, bool)


def _text(v: object) -> str:
    return v if isinstance(v, str) else "" if v is None else orjson.dumps(v).decode()


class _Links:
    """Which call each action event became, to link observations (by `cause`, else the last call)."""

    def __init__(self) -> None:
        self.call_of: dict = {}  # event id -> call id
        self.last_call: str | None = None


def _action(k: int, e: dict, args: dict, links: _Links) -> Message:
    act = e["action"]
    if act in TEXT_ACTIONS:
        return _text_action(k, e, args)
    meta = e.get("tool_call_metadata") or {}
    cid = meta.get("tool_call_id") or f"oh_{e.get('id', k)}"
    name = meta.get("function_name") or {"run": "execute_bash", "run_ipython": "execute_ipython_cell"}.get(act) or act
    links.call_of[e.get("id", k)] = cid
    links.last_call = cid
    arguments = (
        _model_arguments(meta.get("model_response"), cid)
        or orjson.dumps({key: v for key, v in args.items() if key not in HARNESS_ARGS and v is not None}).decode()
    )
    return Message(role="assistant", content=_text(args.get("thought")), tool_calls=[ToolCall(cid, name, arguments)])


def _model_arguments(response: object, cid: str) -> str | None:
    """The arguments of call `cid` as the model wrote them (a JSON object's text), from the model response an
    action's tool_call_metadata keeps; None when it holds no such call. The action's fields are OpenHands' own:
    defaults the model never sent (`"start": 0, "end": -1`), the harness's flags (`"impl_source": "oh_aci"`,
    `"confirmation_state"`), and not the editor's `command` the model gave."""
    choices = response.get("choices") if isinstance(response, dict) else None
    message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    for c in calls if isinstance(calls, list) else ():
        fn = c.get("function") if isinstance(c, dict) else None
        if isinstance(fn, dict) and c.get("id") == cid and isinstance(fn.get("arguments"), str):
            try:
                return fn["arguments"] if isinstance(orjson.loads(fn["arguments"]), dict) else None
            except orjson.JSONDecodeError:
                return None
    return None


def _text_action(k: int, e: dict, args: dict) -> Message:
    """The system message, or what the user or the agent said (message, finish, think)."""
    act = e["action"]
    if act == "system":
        return Message(role="system", content=_text(args.get("content") or e.get("message") or args.get("thought")))
    role = "user" if e.get("source") == "user" or (act == "message" and e.get("source") is None and k == 0) else "assistant"
    return Message(role=role, content=_text(args.get("content") or args.get("final_thought") or e.get("message") or args.get("thought")))


def _observation(e: dict, args: dict, links: _Links) -> Message | None:
    cid = links.call_of.get(e.get("cause")) or ((e.get("tool_call_metadata") or {}).get("tool_call_id")) or links.last_call
    if cid is None:
        return None
    content = e.get("content", args.get("content", ""))
    extras = e["extras"] if isinstance(e.get("extras"), dict) else args
    code = extras.get("exit_code", (extras.get("metadata") or {}).get("exit_code") if isinstance(extras.get("metadata"), dict) else None)
    text = _text(content)
    if code not in (None, "", -1, "-1"):
        text += f"\n[exit code: {code}]"
    links.last_call = None
    return Message(role="tool", content=text, tool_call_id=cid, is_error=e["observation"] == "error" or None)


def _no_event(obj: dict, told: int | None) -> str:
    """What a line of an OpenHands session is that is no event (neither an action nor an observation), which was
    dropped without a word: another format's record (registry.read_elsewhere), or its keys."""
    listed = f"keys: {', '.join(map(str, list(obj)[:6])) or 'none'}"
    head = f'not an OpenHands event: no "action" or "observation" ({listed})'
    other = read_elsewhere(obj, NAME, "OpenHands", told)
    return f"{head}; {other}" if other is not None else f"{head}: an OpenHands session is an event a line"


def read(records: Iterator[Record], source: str, layout: str, reader: Reader) -> Iterator[Transcript]:
    if layout == "dataset":
        for n, (lineno, raw, obj) in enumerate(records):
            with reader.guard(lineno, raw):
                meta = {k: v for k, v in obj.items() if k != "history"}
                events = obj.get("history") or []
                if not isinstance(events, list):
                    raise DataError(source, lineno, f'"history" must be a list of events, got {type(events).__name__}')
                for e in events:
                    check_event(e, source, lineno)
                yield Transcript(
                    messages_from(events),
                    id=f"{source}#{n + 1}",
                    source=source,
                    line=lineno,
                    format=NAME,
                    layout="dataset",
                    metadata=meta,
                    raw=raw if reader.rejects is not None else None,  # for --rejects alone (as_read)
                )
        return
    events, raws = [], []
    for lineno, raw, obj in records:
        with reader.guard(lineno, raw):
            if "action" not in obj and "observation" not in obj:  # messages_from reads no such line: say what it is
                raise DataError(source, lineno, _no_event(obj, reader.told))
            check_event(obj, source, lineno)
            events.append(obj)
            if reader.rejects is not None:  # for --rejects alone (as_read): the writer never reads them
                raws.append(raw)
    yield Transcript(messages_from(events), id=source, source=source, line=1, format=NAME, layout="session", native=raws)
