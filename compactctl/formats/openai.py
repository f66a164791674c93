"""OpenAI chat messages: a session file (one message per line) or a dataset ({"messages": [...]} per line)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from ..chat import NOTE_KEY as NOTE_KEY  # noqa: PLC0414
from ..chat import message_to_dict as message_to_dict  # noqa: PLC0414
from ..errors import DataError
from ..model import (
    CALL_BLOCKS,
    LEGACY,
    MISSING,
    OBJECT_ARGUMENTS,
    ROLES,
    Message,
    Provenance,
    ToolCall,
    Transcript,
    anthropic_image_url,
    mark_observations,
    part_problem,
)
from . import Reader, Record
from .blocks import is_anthropic_block, openai_marked
from .registry import elsewhere, foreign, said_keys

NAME = "openai"
CARRIER_KEYS = ("messages", "history", "traj")  # record keys that hold the transcript itself
MESSAGE_KEYS = ("messages", "history", "traj")  # OpenAI chat, SWE-agent trajectories, tau-bench
_WANTS = f'OpenAI chat is a message a line ({{"role", "content"}}), or a record a line with its messages under {said_keys(MESSAGE_KEYS)}'
# Anthropic's own blocks in a message's content (formats/blocks.ANTHROPIC_ONLY, an image with a source): what each
# is, and what OpenAI chat has for it (it refuses them all; an image it can say exactly, repair writes so)
_FOREIGN = {
    "tool_use": (f"Anthropic's form of {CALL_BLOCKS['tool_use']}", "its calls are in tool_calls"),
    "tool_result": (f"Anthropic's form of {CALL_BLOCKS['tool_result']}", "its results are tool messages"),
    "thinking": ("Anthropic's form of the model's reasoning", "its text goes in the message's reasoning_content, without its signature"),
    "redacted_thinking": ("Anthropic's encrypted reasoning", "only Anthropic reads it: leave it out"),
    "document": ("Anthropic's form of a file", "a file is a file part of a user message, its data a data URL"),
}
_MODELED = {"role", "content", "tool_calls", "tool_call_id", "name", "reasoning_content", "function_call", NOTE_KEY}


def messages_key(obj: dict) -> str | None:
    for k in MESSAGE_KEYS:
        v = obj.get(k)
        if isinstance(v, list) and (not v or isinstance(v[0], dict) and "role" in v[0]):
            return k
    return None


def sniff(obj: dict) -> str | None:
    """The layout if this first record is OpenAI chat, else None."""
    key = messages_key(obj)
    if key is not None and "role" not in obj:
        msgs = obj[key]
        first = next((m for m in msgs if isinstance(m, dict)), None)
        if first is None or (isinstance(first.get("role"), str) and not _anthropic_like(obj, msgs)):
            return "dataset"
        return None
    if isinstance(obj.get("role"), str) and not _anthropic_like(obj, [obj]):
        return "session"
    return None


def _anthropic_like(obj: dict, msgs: list) -> bool:
    if openai_marked(msgs):
        return False
    if isinstance(obj.get("system"), (str, list)) and "messages" in obj:
        return True
    for m in msgs[:50]:
        c = m.get("content") if isinstance(m, dict) else None
        if isinstance(c, list) and any(is_anthropic_block(p) for p in c):
            return True
    return False


def no_chat(obj: dict, told: int | None = None) -> str:
    """What a record read as OpenAI chat is when it is no message and holds none where this format looks
    (registry.foreign; `told`: the line the file's format was told from, None when --from gave it)."""
    return foreign(obj, NAME, "OpenAI chat", MESSAGE_KEYS, _WANTS, told)


def message_from_dict(d: Any, source: str, lineno: int, index: int, own: bool = False) -> Message:
    """A message in OpenAI chat's shape. `own`: one compactctl wrote in that shape itself (an archived message), whose
    content may hold the parts another format's reader made (a Claude Code result's image block): not refused."""
    if not isinstance(d, dict):
        raise DataError(source, lineno, f"a message must be a JSON object, got {type(d).__name__}")
    role = d.get("role")
    if role is None:
        raise DataError(source, lineno, "message has no role")
    legacy = role == "function"  # legacy function-call result (answers the `function_call` before it)
    if legacy:
        role = "tool"
    if role not in ROLES:
        raise DataError(source, lineno, f"unknown role {role!r} (expected one of {', '.join(ROLES)})")
    content = _content(d, role, source, lineno, own)
    calls = _calls_from(d, source, lineno) if "tool_calls" in d or "function_call" in d else []
    reasoning = d.get("reasoning_content")
    note = _note(d)
    extra = {k: v for k, v in d.items() if k not in _MODELED or (k == "reasoning_content" and not isinstance(v, str))}
    if legacy:
        extra[LEGACY] = True
    return Message(
        role=role,
        content=content,
        tool_calls=calls,
        tool_call_id=_result_id(d, source, lineno),
        name=d.get("name"),
        reasoning=reasoning if isinstance(reasoning, str) else None,
        extra=extra,
        provenance=Provenance(origin=d if note is None else {k: v for k, v in d.items() if k != NOTE_KEY}, index=index),
        note=note if note is not None else {},
    )


def _note(d: dict) -> dict | None:
    """compactctl's own key, whatever it holds (`{}` and `null` too: no API takes the key), as the message's note,
    which `repair` takes off and `repair --check` names (one that is no object with keys is kept as its "value");
    None without the key."""
    if NOTE_KEY not in d:
        return None
    note = d[NOTE_KEY]
    return dict(note) if isinstance(note, dict) and note else {"value": note}


def _content(d: dict, role: str, source: str, lineno: int, own: bool = False) -> Any:
    """The message's content, checked: a string, null, absent, or a list of parts both APIs take, none of Anthropic's
    own blocks (`foreign_part`) but an image in a user message that an image_url part says exactly (repair writes it)."""
    content = d.get("content", MISSING)
    if not (content is MISSING or content is None or isinstance(content, (str, list))):
        raise DataError(source, lineno, f"content must be a string, null or a list of parts, got {type(content).__name__}")
    if isinstance(content, list):
        for part in content:
            problem = part_problem(part) or (None if own else foreign_part(part, role))
            if problem is not None:
                raise DataError(source, lineno, problem)
    return content


def foreign_part(part: dict, role: str, file: bool = True) -> str | None:
    """What is wrong with a part of Anthropic's form in OpenAI chat content, and what OpenAI chat has for it (None for
    any other part, and for an image that repair writes as image_url: rules.anthropic_image). `file`: said of a line
    of a file, which --from anthropic may read (model.refused_part says it of a transcript built through the library,
    read from no file)."""
    if not is_anthropic_block(part):
        return None
    kind = part["type"]
    if kind == "image":
        if role == "user" and anthropic_image_url(part) is not None:
            return None
        what, own = "Anthropic's form of an image", _image_fix(part, role)
    else:
        what, own = _FOREIGN.get(kind, ("one of Anthropic's own", "it has none"))
    # (a tool message is OpenAI chat's own: its file is no Anthropic one, and --from anthropic would refuse its role)
    hint = "" if role == "tool" or not file else "; an Anthropic file reads with --from anthropic"
    return f"content holds {'an' if kind[0] in 'aeiou' else 'a'} {kind} block, {what}: OpenAI chat refuses it there ({own}{hint})"


def _image_fix(part: dict, role: str) -> str:
    """Why repair cannot write an image of Anthropic's form as OpenAI chat's image_url part."""
    if role != "user":
        return f"it takes an image in a user message only, not in a{'n' if role[0] in 'aeiou' else ''} {role} message"
    src = part["source"]
    if src.get("type") not in ("base64", "url"):
        by = "Anthropic's file id" if src.get("type") == "file" else f"a source of type {src.get('type')!r}"
        return f"an image by {by} has no image_url form, which holds a URL or base64 data"
    own = sorted({*part, *src} - {"type", "source", "media_type", "data", "url"})
    if own:
        return f"an image_url part has no place for its {', '.join(map(str, own))}: repair writes an image with a type and a source alone"
    return "its source lacks what an image_url part needs: base64 data with its media type, or a URL"


def _calls_from(d: dict, source: str, lineno: int) -> list[ToolCall]:
    """The message's `tool_calls`, then its legacy `function_call` (one call, no id)."""
    calls = []
    raw_calls = d.get("tool_calls")
    if raw_calls is not None:
        if not isinstance(raw_calls, list):
            raise DataError(source, lineno, "tool_calls must be a list")
        for c in raw_calls:
            fn = c.get("function") if isinstance(c, dict) else None
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                raise DataError(source, lineno, "a tool call needs function.name")
            extra = {k: v for k, v in c.items() if k not in ("id", "function")}
            if len(fn) > 2 or "arguments" not in fn:  # keys besides name and arguments (rare)
                fn_extra = {k: v for k, v in fn.items() if k not in ("name", "arguments")}
                if fn_extra:
                    extra["_function_extra"] = fn_extra
            calls.append(ToolCall(c.get("id"), fn["name"], _arguments(fn, extra), extra))
    fc = d.get("function_call")
    if fc is not None:
        calls.append(_legacy_call(fc, source, lineno))
    return calls


def _legacy_call(fc: Any, source: str, lineno: int) -> ToolCall:
    """Legacy OpenAI function calling: one call, no id."""
    if not isinstance(fc, dict) or not isinstance(fc.get("name"), str):
        raise DataError(source, lineno, "function_call needs a name")
    extra: dict[str, Any] = {LEGACY: True}
    args = _arguments(fc, extra)
    fn_extra = {k: v for k, v in fc.items() if k not in ("name", "arguments")}
    if fn_extra:
        extra["_function_extra"] = fn_extra
    return ToolCall(None, fc["name"], args, extra)


def _arguments(fn: dict, extra: dict) -> str:
    """A call's arguments as JSON text (an object is serialized, none is "{}": `extra` says so, for repair)."""
    args = fn.get("arguments", MISSING)
    if args is MISSING:
        extra[OBJECT_ARGUMENTS] = True
        return "{}"
    if not isinstance(args, str):
        extra[OBJECT_ARGUMENTS] = True
        args = orjson.dumps(args).decode()
    return args


def _result_id(d: dict, source: str, lineno: int) -> str | None:
    call_id = d.get("tool_call_id")
    ids = d.get("tool_call_ids")  # SWE-agent: a list of ids
    if call_id is None and isinstance(ids, list) and ids and isinstance(ids[0], str):
        call_id = ids[0]
    if call_id is not None and not isinstance(call_id, str):
        raise DataError(source, lineno, f"tool_call_id must be a string, got {type(call_id).__name__}")
    return call_id


def read(records: Iterator[Record], source: str, layout: str, reader: Reader) -> Iterator[Transcript]:
    if layout == "dataset":
        for n, (lineno, raw, obj) in enumerate(records):
            with reader.guard(lineno, raw):
                found = messages_key(obj)
                key = found or "messages"
                msgs = obj.get(key)
                if found is None and "role" not in obj and (not isinstance(msgs, list) or isinstance(msgs[0], dict)):
                    raise DataError(source, lineno, no_chat(obj, reader.told))  # (messages_key takes an empty list)
                if not isinstance(msgs, list):
                    raise DataError(source, lineno, 'a dataset record needs a "messages" list')
                parsed = [message_from_dict(d, source, lineno, i) for i, d in enumerate(msgs)]
                mark_observations(parsed)
                noted = any(m.note for m in parsed)
                yield Transcript(
                    parsed,
                    id=f"{source}#{n + 1}",
                    source=source,
                    line=lineno,
                    format=NAME,
                    layout="dataset",
                    metadata=dict(obj),
                    raw=None if noted else raw,
                    native=key,
                )
        return
    messages: list[Message] = []
    raws: list[bytes | None] = []  # None: a line with a note, rewritten
    first = 0
    for lineno, raw, obj in records:
        first = first or lineno
        with reader.guard(lineno, raw):
            if "role" not in obj and ("content" not in obj or elsewhere(obj, NAME)):  # no message: say what it is
                raise DataError(source, lineno, no_chat(obj, reader.told))
            messages.append(message_from_dict(obj, source, lineno, len(messages)))
            raws.append(raw if NOTE_KEY not in obj else None)
    mark_observations(messages)  # over the lines read: a rejected line never decides
    if messages:
        yield Transcript(messages, id=source, source=source, line=first, format=NAME, layout="session", native=raws)


def write(t: Transcript) -> Iterator[bytes]:
    if t.layout == "dataset":
        key = t.native if isinstance(t.native, str) else "messages"
        if t.raw is not None and all(m.untouched and not m.note for m in t.messages) and len(t.messages) == len(t.metadata.get(key, ())):
            yield t.raw
            return
        rec = {}
        for k, v in t.metadata.items():
            rec[k] = [message_to_dict(m) for m in t.messages] if k == key else v
        if key not in rec:
            rec[key] = [message_to_dict(m) for m in t.messages]
        yield orjson.dumps(rec)
        return
    raws = t.native if isinstance(t.native, list) else None
    for m in t.messages:
        raw = raws[m.index] if raws is not None and m.index is not None and not m.note and m.index < len(raws) else None  # untouched
        yield raw if raw is not None else orjson.dumps(message_to_dict(m))
