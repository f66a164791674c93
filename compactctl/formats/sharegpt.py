"""Hermes / ShareGPT trajectories: {"conversations": [{"from", "value"}], ...} per line.

`from` is system / human / gpt / tool (or user / assistant), with calls as <tool_call>{...}</tool_call>
in gpt turns (several per turn, no ids: matched to results by order), results as
<tool_response>{...}</tool_response> in tool turns, and <think> blocks; or the variant with
function_call / observation turns. Synthetic call ids (`sg_<turn>_<k>`) exist only in the canonical
model; they are not written back. Other keys of the record are kept.

Also LlamaFactory's typed-parts records, {"messages": [{"role", "content": [{"type", "value"}]}], "tools": ...}:
`text` parts are the message's text, `reasoning` parts its reasoning, each `tool_call` part (JSON: name and
arguments) a call; a `tool` message answers the pending calls in order, one each (a lone tool message after
several calls that holds a JSON array of one result per call answers them all, one item each). A changed
record is written in the same shape; untouched messages come back as they were.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson

from ..errors import DataError
from ..lean import dataclass
from ..model import MISSING, Message, Provenance, ToolCall, Transcript
from . import Reader, Record
from .blocks import is_anthropic_block

NAME = "sharegpt"
# Record keys that hold the transcript itself (messages: LlamaFactory's; system: the system prompt, read as the
# first message, as LlamaFactory's loader does).
CARRIER_KEYS = ("conversations", "messages", "system")
SYSTEM_KEY = ("key", "system")  # where the system message read from the record's "system" came from
ROLE = {
    "system": "system",
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "tool": "tool",
    "observation": "tool",
    "function_call": "assistant",
    "function": "tool",
}
CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)
# The writer puts the text on its own lines between the tags: one newline on each side is the tags', the rest
# (a leading indent of the output) is the text's, so a record re-written after compaction restores byte for byte.
RESPONSE = re.compile(r"<tool_response>\n?(.*?)\n?</tool_response>", re.S)
THINK = re.compile(r"^\s*<think>\n?(.*?)\n?</think>\n?", re.S)


def sniff(obj: dict) -> str | None:
    conv = obj.get("conversations")
    if isinstance(conv, list) and all(isinstance(t, dict) and "from" in t for t in conv[:3]):
        return "dataset"
    if "role" not in obj and _typed_parts(obj.get("messages")):
        return "dataset"
    return None


def _typed_parts(msgs: Any) -> bool:
    """LlamaFactory's messages: content parts that hold their text under "value" (never under "text"), and nothing
    of OpenAI chat's or Anthropic's own (calls, results that name their call, their blocks): such a record is
    theirs, its "value" parts a slip repair mends."""
    if not isinstance(msgs, list):
        return False
    typed = False
    for k, m in enumerate(msgs):  # the first 50 tell LlamaFactory's parts; any one, OpenAI's or Anthropic's own
        if not isinstance(m, dict):
            continue
        if "tool_calls" in m or "tool_call_id" in m or "function_call" in m:
            return False
        c = m.get("content")
        if not isinstance(c, list):
            continue
        for p in c:
            if is_anthropic_block(p):
                return False
            typed = typed or (k < 50 and isinstance(p, dict) and isinstance(p.get("type"), str) and "value" in p and "text" not in p)
    return typed


def _call_from_json(text: str, turn: int, k: int) -> ToolCall:
    try:
        v = orjson.loads(text)
    except orjson.JSONDecodeError:
        return ToolCall(f"sg_{turn}_{k}", "unknown", text, {"_raw_call": text})
    if not isinstance(v, dict):
        return ToolCall(f"sg_{turn}_{k}", "unknown", text, {"_raw_call": text})
    return _call_from_obj(v, text, turn, k)


def _call_from_obj(v: dict, raw: str, turn: int, k: int) -> ToolCall:
    args, name = v.get("arguments", {}), v.get("name")
    return ToolCall(
        f"sg_{turn}_{k}",
        name if isinstance(name, str) else "",
        args if isinstance(args, str) else orjson.dumps(args).decode(),
        {"_raw_call": raw},
    )


def _function_calls(text: str, turn: int) -> list[ToolCall]:
    """A `function_call` turn's calls: one JSON object, or (LlamaFactory's parallel calls) a list of them."""
    try:
        v = orjson.loads(text)
    except orjson.JSONDecodeError:
        v = None
    if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
        calls = [_call_from_obj(x, orjson.dumps(x).decode(), turn, k) for k, x in enumerate(v)]
        calls[0].extra["_call_list"] = text  # written back as a list (as it came, when no call changed)
        return calls
    return [_call_from_json(text, turn, 0)]


def messages_from(conv: list, source: str, lineno: int) -> list[Message]:
    out: list[Message] = []
    pending: list[ToolCall] = []  # calls not yet answered, in order
    for turn, t in enumerate(conv):
        if not isinstance(t, dict) or "from" not in t:
            raise DataError(source, lineno, f"turn {turn} has no 'from'")
        frm, value = t["from"], t.get("value", "")
        role = ROLE.get(frm) if isinstance(frm, str) else None
        if role is None:
            raise DataError(source, lineno, f"turn {turn}: unknown 'from' {frm!r}")
        if not isinstance(value, str):
            raise DataError(source, lineno, f"turn {turn}: 'value' must be a string")
        extra = {k: v for k, v in t.items() if k not in ("from", "value")}
        origin = ("turn", turn)
        if frm == "function_call":
            calls = _function_calls(value, turn)
            pending = list(calls)
            out.append(
                Message(
                    role="assistant", content=None, tool_calls=calls, extra={"_from": frm, **extra}, provenance=Provenance(origin=origin)
                )
            )
        elif role == "assistant":
            msg = _assistant_turn(value, turn, {"_from": frm, **extra}, origin)
            pending = list(msg.tool_calls)
            out.append(msg)
        elif role == "tool":
            out.extend(_tool_turns(frm, value, turn, extra, origin, pending))
        else:
            out.append(Message(role=role, content=value, extra={"_from": frm, **extra}, provenance=Provenance(origin=origin)))
    for i, m in enumerate(out):
        m.index = i
        m.anchor = m.origin
    return out


def _assistant_turn(value: str, turn: int, extra: dict, origin: tuple) -> Message:
    """An assistant turn: optional <think> reasoning first, then text with <tool_call> blocks."""
    reasoning = None
    mo = THINK.match(value)
    text = value
    if mo:
        reasoning, text = mo.group(1), value[mo.end() :]
    calls = [_call_from_json(c, turn, k) for k, c in enumerate(CALL.findall(text))]
    text = CALL.sub("", text).strip() if calls else text
    msg = Message(role="assistant", content=text, tool_calls=calls, reasoning=reasoning, extra=extra, provenance=Provenance(origin=origin))
    if mo is not None:
        msg.extra["_think"] = True
    return msg


def _tool_turns(frm: str, value: str, turn: int, extra: dict, origin: tuple, pending: list[ToolCall]) -> list[Message]:
    """A tool or observation turn: one result per <tool_response> block, answering the pending calls in order."""
    bodies = RESPONSE.findall(value) if frm == "tool" else [value]
    if not bodies:
        bodies = [value]
    return _answers(bodies, turn, {"_from": frm, "_tagged": frm == "tool" and bool(RESPONSE.search(value)), **extra}, origin, pending)


def paired_in_order(msgs: list[Message]) -> None:
    """Each result given the id of the call it answers as the reader pairs them (ShareGPT keeps no ids: a result
    answers the next call not yet answered since the last assistant turn). A restored record mixes the ids of two
    readings, the input's (archived originals) and the output's (messages kept, their turns numbered anew after the
    summary); the writer joins the results read from one tool message when they answer their calls (_answers_all)."""
    pending: list[ToolCall] = []
    for m in msgs:
        if m.role == "assistant":
            pending = list(m.tool_calls)
        elif m.role == "tool" and pending:
            m.tool_call_id = pending.pop(0).id


def _answers(bodies: list, turn: int, extra: dict, origin: tuple, pending: list[ToolCall]) -> list[Message]:
    """One result per body, answering the pending calls in order (an orphan, with an id of its own, when none is left)."""
    out = []
    for k, body in enumerate(bodies):
        answered = pending.pop(0) if pending else None
        out.append(
            Message(
                role="tool",
                content=body,
                tool_call_id=answered.id if answered else f"sg_{turn}_orphan{k}",
                name=(answered.name or None) if answered else None,
                extra=dict(extra),
                provenance=Provenance(origin=origin),
            )
        )
    return out


def read(records: Iterator[Record], source: str, layout: str, reader: Reader) -> Iterator[Transcript]:
    for n, (lineno, raw, obj) in enumerate(records):
        with reader.guard(lineno, raw):
            conv = obj.get("conversations")
            if conv is None and isinstance(obj.get("messages"), list):
                rows = obj["messages"]
                msgs, produced = typed_messages_from(rows, source, lineno)
                native: Any = TypedRecord(rows, produced)
            elif isinstance(conv, list):
                msgs, native = messages_from(conv, source, lineno), conv
            else:
                raise DataError(source, lineno, 'a ShareGPT record needs a "conversations" list (or LlamaFactory\'s "messages")')
            msgs = _with_system(msgs, obj.get("system"))
            yield Transcript(
                msgs,
                id=f"{source}#{n + 1}",
                source=source,
                line=lineno,
                format=NAME,
                layout="dataset",
                metadata=dict(obj),
                raw=raw,
                native=native,
            )


def _with_system(msgs: list[Message], system: Any) -> list[Message]:
    """The record's "system" (the system prompt of LlamaFactory's ShareGPT and typed records) as the first message."""
    if not isinstance(system, str) or not system:
        return msgs
    out = [Message(role="system", content=system, provenance=Provenance(SYSTEM_KEY, 0, SYSTEM_KEY)), *msgs]
    for m in msgs:
        if m.index is not None:
            m.index += 1
    return out


def _system_key(t: Transcript, rec: dict) -> list[Message]:
    """The transcript's messages for the record's turns. In a record with a "system" (`rec`), the first message,
    read from it (compacted, or restored from an archive), goes back there."""
    msgs = t.messages
    if isinstance(rec.get("system"), str) and rec["system"] and msgs and msgs[0].role == "system":
        rec["system"] = msgs[0].text()
        return msgs[1:]
    return msgs


def _names(conv: list | None) -> dict[str, str]:
    """The role names this record uses (human or user, gpt or assistant, tool or observation)."""
    names = {"system": "system", "developer": "system", "user": "human", "assistant": "gpt", "tool": "tool"}
    for t in conv or []:
        frm = t.get("from") if isinstance(t, dict) else None
        if frm in ("user", "human"):
            names["user"] = frm
        elif frm in ("assistant", "gpt"):
            names["assistant"] = frm
        elif frm in ("observation", "function"):
            names["tool"] = frm
    return names


def _call_text(c: ToolCall) -> str:
    raw = c.extra.get("_raw_call")
    try:
        args = orjson.loads(c.arguments) if c.arguments else {}
    except orjson.JSONDecodeError:
        args = c.arguments
    if isinstance(args, str):  # a JSON string stays its text: "x" written as x would read back as the text x
        args = c.arguments
    return _as_read(raw, orjson.dumps({"name": c.name, "arguments": args}).decode())


def _as_read(raw: object, fresh: str) -> str:
    """The source text when it says what `fresh` says (its own spacing kept), else `fresh`."""
    if isinstance(raw, str):
        try:
            if orjson.loads(raw) == orjson.loads(fresh):
                return raw
        except orjson.JSONDecodeError:
            pass
    return fresh


def _function_call_text(calls: list[ToolCall]) -> str:
    """A `function_call` turn's value: the call, or the list of them it was read from."""
    if len(calls) == 1 and "_call_list" not in calls[0].extra:
        return _call_text(calls[0])
    return _call_list_text(calls)


def _call_list_text(calls: list[ToolCall]) -> str:
    """Parallel calls as LlamaFactory writes them: a JSON list (the source text when it says the same)."""
    return _as_read(calls[0].extra.get("_call_list"), "[" + ", ".join(_call_text(c) for c in calls) + "]")


def to_conversations(t: Transcript) -> list[dict]:
    src = t.native if isinstance(t.native, list) else None
    names = _names(src)
    out: list[dict] = []
    msgs = t.messages
    i = 0
    while i < len(msgs):
        m = msgs[i]
        group = [m]
        j = i + 1
        if m.role == "tool" and _tool_from(m, names) == "tool":  # an observation or function turn: one result each
            while (
                j < len(msgs)
                and msgs[j].role == "tool"
                and (m.anchor is None or msgs[j].anchor in (m.anchor, None))
                and _tool_from(msgs[j], names) == "tool"
            ):
                group.append(msgs[j])
                j += 1
        origin = m.anchor if isinstance(m.anchor, tuple) else None
        if (
            src is not None
            and origin is not None
            and all(g.untouched and g.anchor == origin for g in group)
            and len(group) == _produced(src[origin[1]])  # every message the turn read as, untouched: the turn as it was
        ):
            out.append(src[origin[1]])
        else:
            out.append(_turn(group, names))
        i = j
    return out


def _produced(turn: Any) -> int:
    """How many messages a source turn reads as: one per <tool_response> block of a tool turn, else one (a
    turn whose messages repair dropped some of, e.g. a response that answers no call, is written anew)."""
    if isinstance(turn, dict) and turn.get("from") == "tool" and isinstance(turn.get("value"), str):
        return max(1, len(RESPONSE.findall(turn["value"])))
    return 1


def _tool_from(m: Message, names: dict[str, str]) -> str:
    """The turn a tool result is written as: the one it was read from, else the record's (a result repair added to a
    record of observation turns is one too). Only a `tool` turn holds several, each in <tool_response> tags; an
    observation or function turn is one result, read as its text (tags and all)."""
    frm = m.extra.get("_from")
    return frm if frm in ("tool", "observation", "function") else names["tool"]


def _turn(group: list[Message], names: dict[str, str]) -> dict:
    m = group[0]
    extra = {k: v for k, v in m.extra.items() if not k.startswith("_")}
    frm = m.extra.get("_from")
    if m.role == "tool":
        frm = _tool_from(m, names)
        if frm != "tool":
            return {"from": frm, "value": m.text(), **extra}
        return {"from": frm, "value": "\n".join(f"<tool_response>\n{g.text()}\n</tool_response>" for g in group), **extra}
    if m.role == "assistant":
        if frm == "function_call" and m.tool_calls and not m.text():
            return {"from": "function_call", "value": _function_call_text(m.tool_calls), **extra}
        value = m.text()
        if m.tool_calls:  # the text beside the calls is read back stripped (_assistant_turn): written so
            value = (value.strip() + "\n" if value.strip() else "") + "\n".join(
                f"<tool_call>\n{_call_text(c)}\n</tool_call>" for c in m.tool_calls
            )
        if m.reasoning is not None or m.extra.get("_think"):
            value = f"<think>\n{m.reasoning or ''}\n</think>\n{value}"
        return {"from": frm if frm in ("gpt", "assistant") else names["assistant"], "value": value, **extra}
    role_name = frm if frm in ("human", "user", "system") else names.get(m.role, m.role)
    return {"from": role_name, "value": m.text(), **extra}


def write(t: Transcript) -> Iterator[bytes]:
    if t.raw is not None:
        yield t.raw
        return
    rec = dict(t.metadata) if t.metadata else {}
    t = t.evolve(messages=_in_call_order(_system_key(t, rec)))
    if _typed_record(t):
        rec["messages"] = to_typed_messages(t)
    else:
        rec["conversations"] = to_conversations(t)
    yield orjson.dumps(rec)


def _in_call_order(msgs: list[Message]) -> list[Message]:
    """Each run of tool results in the order of the calls they answer: ShareGPT pairs a result with a call by
    position only (other formats log parallel results as they finish: Claude Code, OpenAI chat). Only a run whose
    results each name a different call of the assistant turn before it is reordered."""
    out = list(msgs)
    i = 0
    while i < len(out):
        j = i
        while j < len(out) and out[j].role == "tool":
            j += 1
        if j - i > 1 and i > 0 and out[i - 1].tool_calls:
            at = {c.id: k for k, c in enumerate(out[i - 1].tool_calls) if c.id is not None}
            ids = [m.tool_call_id for m in out[i:j]]
            if all(x in at for x in ids) and len(set(ids)) == len(ids):
                out[i:j] = sorted(out[i:j], key=lambda m: at[m.tool_call_id or ""])
        i = max(j, i + 1)
    return out


# -- LlamaFactory's typed parts ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TypedRecord:
    """A LlamaFactory record's source messages, and how many canonical messages each one became."""

    rows: list
    produced: list[int]


def typed_messages_from(rows: list, source: str, lineno: int) -> tuple[list[Message], list[int]]:
    out: list[Message] = []
    produced: list[int] = []
    pending: list[ToolCall] = []  # calls not yet answered, in order
    for turn, d in enumerate(rows):
        if not isinstance(d, dict) or not isinstance(d.get("role"), str):
            raise DataError(source, lineno, f"message {turn} has no role")
        role, parts = d["role"], _parts(d.get("content"), source, lineno, turn)
        extra = {k: v for k, v in d.items() if k not in ("role", "content")}
        origin = ("msg", turn)
        if role == "assistant":
            made = [_typed_assistant(parts, turn, extra, origin)]
            pending = list(made[0].tool_calls)
        elif role == "tool":
            alone = turn + 1 == len(rows) or not (isinstance(rows[turn + 1], dict) and rows[turn + 1].get("role") == "tool")
            made = _typed_results(parts, turn, extra, origin, pending, alone)
        elif role in ("system", "user"):
            if any(p["type"] == "tool_call" for p in parts):
                raise DataError(source, lineno, f"message {turn}: a tool_call part in a {role} message")
            made = [Message(role=role, content=_typed_content(parts), extra=extra, provenance=Provenance(origin=origin))]
        else:
            raise DataError(source, lineno, f"message {turn}: unknown role {role!r} (expected system, user, assistant or tool)")
        out += made
        produced.append(len(made))
    for i, m in enumerate(out):
        m.index = i
        m.anchor = m.origin
    return out, produced


def _parts(content: Any, source: str, lineno: int, turn: int) -> list[dict]:
    """A message's typed parts (a string is one text part)."""
    if content is None or content is MISSING:
        return []
    if isinstance(content, str):
        return [{"type": "text", "value": content}]
    if not isinstance(content, list) or not all(isinstance(p, dict) and isinstance(p.get("type"), str) for p in content):
        raise DataError(source, lineno, f"message {turn}: content must be a list of typed parts ({{type, value}})")
    return content


def _value(p: dict) -> str:
    v = p.get("value", p.get("text", ""))
    return v if isinstance(v, str) else orjson.dumps(v).decode()


def _typed_content(parts: list[dict]) -> Any:
    """Text parts as one string (LlamaFactory joins them as they are); with any other part (an image), a list of
    OpenAI chat parts."""
    if all(p["type"] == "text" for p in parts):
        return "".join(_value(p) for p in parts)
    out: list = []
    for p in parts:
        if p["type"] == "text":
            out.append({"type": "text", "text": _value(p)})
        elif p["type"] == "image_url" and isinstance(p.get("value"), str):
            out.append({"type": "image_url", "image_url": {"url": p["value"]}})
        else:
            out.append(p)
    return out


def _typed_assistant(parts: list[dict], turn: int, extra: dict, origin: tuple) -> Message:
    """reasoning parts -> reasoning, tool_call parts -> calls, the rest -> content (None when only calls)."""
    reasoning = [_value(p) for p in parts if p["type"] == "reasoning"]
    calls = [_call_from_json(_value(p), turn, k) for k, p in enumerate(p for p in parts if p["type"] == "tool_call")]
    rest = [p for p in parts if p["type"] not in ("reasoning", "tool_call")]
    return Message(
        role="assistant",
        content=_typed_content(rest) if rest or not calls else None,
        tool_calls=calls,
        reasoning="".join(reasoning) if reasoning else None,
        extra=extra,
        provenance=Provenance(origin=origin),
    )


def _typed_results(parts: list[dict], turn: int, extra: dict, origin: tuple, pending: list[ToolCall], alone: bool) -> list[Message]:
    """A tool message: the result of the next pending call; or, alone after several calls and holding a JSON array
    of one item per call (each naming its call, when it names one), one result per item."""
    content = _typed_content(parts)
    items = _items_for(content, pending) if alone and len(pending) > 1 else None
    if items is None:
        return _answers([content], turn, extra, origin, pending)
    out = _answers(items, turn, extra, origin, pending)
    out[0].extra[_ARRAY_TEXT] = content  # the array as written (its spacing): written again while its items are the same
    return out


_ARRAY_TEXT = "_array_text"


def _items_for(content: Any, calls: list[ToolCall]) -> list[str] | None:
    if not isinstance(content, str) or not content.lstrip().startswith("["):
        return None
    try:
        items = orjson.loads(content)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(items, list) or len(items) != len(calls):
        return None
    for it, c in zip(items, calls, strict=True):
        if isinstance(it, dict) and it.get("name") not in (None, c.name):
            return None
    return [it if isinstance(it, str) else orjson.dumps(it).decode() for it in items]


def _typed_record(t: Transcript) -> bool:
    """A LlamaFactory record: read as one, or rebuilt from one (restore keeps its keys, not what was read)."""
    if isinstance(t.native, TypedRecord):
        return True
    return t.native is None and isinstance(t.metadata.get("messages"), list) and "conversations" not in t.metadata


def to_typed_messages(t: Transcript) -> list[dict]:
    """The record's messages: a source message whose canonical messages are all here, together and untouched,
    as it was; every other message anew (the results of one tool message that answered several calls, when they
    still answer all of those calls and nothing else does, as one tool message again; otherwise one each)."""
    src = t.native if isinstance(t.native, TypedRecord) else TypedRecord([], [])
    msgs = t.messages
    out: list[dict] = []
    i = 0
    while i < len(msgs):
        a = msgs[i].anchor
        j = i + 1
        while a is not None and j < len(msgs) and msgs[j].anchor == a:
            j += 1
        group = msgs[i:j]
        turn = a[1] if isinstance(a, tuple) and len(a) == 2 and a[0] == "msg" and isinstance(a[1], int) else None
        if turn is not None and turn < len(src.rows) and all(g.untouched for g in group) and len(group) == src.produced[turn]:
            out.append(src.rows[turn])
        elif _answers_all(msgs, i, j):
            out.append(_one_result_per_item(group))
        else:
            out += [_typed_dict(m) for m in group]
        i = j
    return out


def _answers_all(msgs: list[Message], i: int, j: int) -> bool:
    """Whether msgs[i:j], results read from one tool message, are the results of every call before them, in call
    order, and the only ones: written as one tool message again, they read back as these results."""
    prev = msgs[i - 1] if i > 0 else None
    return (
        j - i > 1
        and prev is not None
        and prev.role == "assistant"
        and [m.tool_call_id for m in msgs[i:j]] == [c.id for c in prev.tool_calls]
        and all(m.role == "tool" for m in msgs[i:j])
        and (j == len(msgs) or msgs[j].role != "tool")
    )


def _one_result_per_item(group: list[Message]) -> dict:
    """One tool message holding a JSON array of the results (an object as the object it was read from)."""
    items: list[Any] = []
    for m in group:
        text = m.text()
        try:
            obj = orjson.loads(text) if text.startswith("{") else None
        except orjson.JSONDecodeError:
            obj = None
        items.append(obj if isinstance(obj, dict) else text)
    text = orjson.dumps(items).decode()
    was = group[0].extra.get(_ARRAY_TEXT)
    if isinstance(was, str) and _same_json(was, text):
        text = was
    d: dict[str, Any] = {"role": "tool", "content": [{"type": "text", "value": text}]}
    d.update({k: v for k, v in group[0].extra.items() if not k.startswith("_")})
    return d


def _same_json(a: str, b: str) -> bool:
    try:
        return bool(orjson.loads(a) == orjson.loads(b))
    except orjson.JSONDecodeError:
        return False


def _typed_dict(m: Message) -> dict:
    parts: list[dict] = []
    if m.role == "assistant" and m.reasoning is not None:
        parts.append({"type": "reasoning", "value": m.reasoning})
    parts += _value_parts(m.content)
    if m.role == "tool" and not parts:
        parts.append({"type": "text", "value": ""})
    parts += [{"type": "tool_call", "value": _call_text(c)} for c in m.tool_calls]
    d: dict[str, Any] = {"role": "system" if m.role == "developer" else m.role, "content": parts}
    d.update({k: v for k, v in m.extra.items() if not k.startswith("_")})
    return d


def _value_parts(content: Any) -> list[dict]:
    """Content (a string or OpenAI chat parts) as typed parts holding their text under "value"."""
    if isinstance(content, str):
        return [{"type": "text", "value": content}] if content else []
    if not isinstance(content, list):
        return []
    out = []
    for p in content:
        if isinstance(p, str):
            out.append({"type": "text", "value": p})
        elif not isinstance(p, dict) or "value" in p:
            out.append(p)
        elif isinstance(p.get("text"), str):
            out.append({"type": "text", "value": p["text"]})
        elif p.get("type") == "image_url" and isinstance(p.get("image_url"), dict):
            out.append({"type": "image_url", "value": p["image_url"].get("url", "")})
        else:
            out.append(p)
    return out
