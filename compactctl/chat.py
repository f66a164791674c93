"""A message as an OpenAI chat dict: the shape the openai format writes and the archive stores.

Below the formats (the archive's records hold removed originals in this shape, and `refs` builds
them), so it needs nothing but the model; `formats.openai` re-exports it.
"""

from __future__ import annotations

from typing import Any

import orjson

from .model import BEFORE_RESULTS, LEGACY, MISSING, OBJECT_ARGUMENTS, Message, ToolCall

NOTE_KEY = "_compactctl"  # a message's note (what a phase did to it), kept across a write and a read


def message_to_dict(m: Message) -> dict:
    d = dict(m.origin) if isinstance(m.origin, dict) else _fresh_dict(m)
    if m.note:
        d[NOTE_KEY] = m.note
    return d


def _fresh_dict(m: Message) -> dict:
    """A changed or new message as OpenAI chat."""
    extra = dict(m.extra)
    extra.pop(BEFORE_RESULTS, None)  # a reader's note on the source's block order, not part of the message
    legacy_result = extra.pop(LEGACY, False) and m.role == "tool" and m.tool_call_id is None
    d = {"role": "function" if legacy_result else m.role}
    if m.content is not MISSING:
        d["content"] = m.content
    if m.name is not None:
        d["name"] = m.name
    _put_calls(d, m.tool_calls)
    ids = extra.get("tool_call_ids")
    if m.tool_call_id is not None:  # the API's key, also beside SWE-agent's list of ids (its own reader takes either)
        d["tool_call_id"] = m.tool_call_id
        if isinstance(ids, list) and ids and isinstance(ids[0], str) and ids[0] != m.tool_call_id:
            extra["tool_call_ids"] = [m.tool_call_id, *ids[1:]]  # a repaired id replaces the first
    if m.reasoning is not None:
        d["reasoning_content"] = m.reasoning
    d.update(extra)
    return d


def _put_calls(d: dict, tool_calls: list[ToolCall]) -> None:
    calls = [c for c in tool_calls if not c.extra.get(LEGACY)]
    legacy_calls = [c for c in tool_calls if c.extra.get(LEGACY)]
    if calls:
        d["tool_calls"] = [_call_to_dict(c) for c in calls]
    if legacy_calls:
        fc = _call_to_dict(legacy_calls[0])["function"]
        d["function_call"] = fc
        for c in legacy_calls[1:]:  # only one legacy call fits in a message: the rest as tool calls
            d.setdefault("tool_calls", []).append(_call_to_dict(c))


def _call_to_dict(c: ToolCall) -> dict:
    extra = dict(c.extra)
    extra.pop(LEGACY, None)
    obj_args = extra.pop(OBJECT_ARGUMENTS, False)
    fn_extra = extra.pop("_function_extra", {})
    fn: dict[str, Any] = {"name": c.name, "arguments": orjson.loads(c.arguments) if obj_args and _is_json(c.arguments) else c.arguments}
    fn.update(fn_extra)
    d: dict[str, Any] = {"id": c.id} if c.id is not None else {}
    d.update(extra)
    d.setdefault("type", "function")
    d["function"] = fn
    return d


def _is_json(s: str) -> bool:
    try:
        orjson.loads(s)
        return True
    except orjson.JSONDecodeError:
        return False
