"""OpenHands (V0) event streams: a list of events, or records with a "history" list of them.

Read-only: `message` actions become user / assistant messages, `system` the system message; other
agent actions (run, run_ipython, read, write, edit, browse, ...) become tool calls (named by their
tool_call_metadata, or by the action), and an observation becomes the result of the action its
`cause` points at (with its exit code). Both shapes are read: `args` nested, or flattened into the
event. Output is OpenAI chat unless `--to` says otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator

import orjson

from ..model import Message, ToolCall, Transcript
from . import Reader, Record

NAME = "openhands"
CARRIER_KEYS = ("history",)
TEXT_ACTIONS = ("message", "finish", "think", "system")
SKIP = ("null", "agent_state_changed", "change_agent_state", "recall", "condensation")


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


def messages_from(events: list) -> list[Message]:
    out: list[Message] = []
    call_of: dict = {}  # event id -> call id
    last_call: str | None = None
    for k, e in enumerate(events):
        if not isinstance(e, dict):
            continue
        args = _args(e)
        if "action" in e:
            act = e["action"]
            if act in SKIP:
                continue
            text = args.get("content") or e.get("message") or args.get("thought") or ""
            if act == "system":
                out.append(Message(role="system", content=text))
            elif act in TEXT_ACTIONS:
                role = "user" if e.get("source") == "user" or (act == "message" and e.get("source") is None and k == 0) else "assistant"
                out.append(
                    Message(
                        role=role, content=args.get("content") or args.get("final_thought") or e.get("message") or args.get("thought") or ""
                    )
                )
            else:
                meta = e.get("tool_call_metadata") or {}
                cid = meta.get("tool_call_id") or f"oh_{e.get('id', k)}"
                name = meta.get("function_name") or {"run": "execute_bash", "run_ipython": "execute_ipython_cell"}.get(act) or act
                call_args = {key: v for key, v in args.items() if key != "thought"}
                out.append(
                    Message(
                        role="assistant",
                        content=args.get("thought") or "",
                        tool_calls=[ToolCall(cid, name, orjson.dumps(call_args).decode())],
                    )
                )
                call_of[e.get("id", k)] = cid
                last_call = cid
        elif "observation" in e:
            obs = e["observation"]
            if obs in SKIP:
                continue
            cid = call_of.get(e.get("cause")) or ((e.get("tool_call_metadata") or {}).get("tool_call_id")) or last_call
            if cid is None:
                continue
            content = e.get("content", args.get("content", ""))
            extras = e["extras"] if isinstance(e.get("extras"), dict) else args
            code = extras.get(
                "exit_code", (extras.get("metadata") or {}).get("exit_code") if isinstance(extras.get("metadata"), dict) else None
            )
            text = content if isinstance(content, str) else orjson.dumps(content).decode()
            if code not in (None, "", -1, "-1"):
                text += f"\n[exit code: {code}]"
            out.append(Message(role="tool", content=text, tool_call_id=cid, is_error=obs == "error" or None))
            last_call = None
    for i, m in enumerate(out):
        m.index = i
    return out


def read(records: Iterator[Record], source: str, layout: str, reader: Reader) -> Iterator[Transcript]:
    if layout == "dataset":
        for n, (lineno, raw, obj) in enumerate(records):
            with reader.guard(lineno, raw):
                meta = {k: v for k, v in obj.items() if k != "history"}
                yield Transcript(
                    messages_from(obj.get("history") or []),
                    id=f"{source}#{n + 1}",
                    source=source,
                    line=lineno,
                    format=NAME,
                    layout="dataset",
                    metadata=meta,
                )
        return
    events = [obj for _, _, obj in records]
    yield Transcript(messages_from(events), id=source, source=source, line=1, format=NAME, layout="session")
