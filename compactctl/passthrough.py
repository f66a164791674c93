"""Records a phase would write back byte for byte, told from the parsed JSON alone.

Building the model (a `Message` per message, a `ToolCall` per call) costs more than reading and
parsing the record; for a record that is already valid, `repair` then changes nothing and the writer
re-emits the line as it came. `repair_keeps(fmt, obj)` decides that on the record's dicts: True only
when reading it into the model raises no error and `repair` changes nothing (see `phases/repair.py`),
so that the runner may write the line as it is without building anything. It is conservative: anything
unusual (a legacy `function_call`, a role `function`, SWE-agent's `tool_call_ids`, a compactctl note, a
result that does not directly follow its call with its id, an empty message, ...) answers False, and
the record takes the ordinary path. `tests/test_passthrough.py` checks it against that path.
"""

from __future__ import annotations

from typing import Any

from .formats.blocks import is_anthropic_block
from .formats.openai import NOTE_KEY, messages_key
from .model import (
    BEFORE_RESULTS,
    LEGACY,
    OBJECT_ARGUMENTS,
    SYSTEM_ROLES,
    blank_parts,
    is_blank_part,
    is_chat_text,
    part_problem,
)
from .phases.rules import VALID_ID, VALID_NAME, defined_names

_PLAIN_ROLES = ("system", "developer", "user", "assistant")  # a tuple: a role may be any JSON value, hashable or not


def repair_keeps(fmt: str, obj: Any) -> bool:
    """An OpenAI chat dataset record (`obj`, as parsed) that reads without error and that `repair` leaves
    exactly as it is: every call with an id not used before in the record, its result right after the
    call's message with that id, in call order; no empty user/assistant message; the first message
    after the system ones from the user (and there is one)."""
    if fmt != "openai" or type(obj) is not dict:
        return False
    msgs = obj.get(messages_key(obj) or "messages")
    if type(msgs) is not list or not all(VALID_NAME.fullmatch(name) for _, _, name in defined_names(obj)):
        return False
    seen: set[str] = set()  # call ids so far: each must be new (repair renames a reused one)
    opened = False  # the first non-system message was seen (and is from the user)
    i, n = 0, len(msgs)
    while i < n:
        d = msgs[i]
        calls = _plain(d)
        if calls is None:
            return False
        if not opened and d["role"] not in SYSTEM_ROLES:
            if d["role"] != "user":
                return False
            opened = True
        if i + len(calls) >= n:  # a result is missing at the end
            return False
        for pos, c in enumerate(calls):
            if not _intact_call(c, msgs[i + 1 + pos], seen):
                return False
        i += 1 + len(calls)
    last = next((d for d in reversed(msgs) if d.get("role") not in SYSTEM_ROLES), None)  # every one a dict by now
    if last is not None and last.get("role") == "assistant" and _final_space(last.get("content")):
        return False  # repair cuts the whitespace the last turn, an assistant's, ends in (see rules.final_turn)
    return opened  # a record without a user or assistant message is repair's to refuse


def _final_space(content: Any) -> bool:
    if type(content) is list and content and type(content[-1]) is dict:
        content = content[-1].get("text")
    return type(content) is str and content != content.rstrip()


def _plain(d: Any) -> list | None:
    """A message (not a result) that reads without error and that repair keeps where it is: its calls
    ([] if none); None otherwise."""
    if type(d) is not dict or _unusual(d) or d.get("tool_call_id") is not None:
        return None
    role = d.get("role")
    if role not in _PLAIN_ROLES:  # a result here answers no call before it; "function", unknown or missing roles
        return None
    content = d.get("content")
    if not _plain_content(content):
        return None
    calls = d.get("tool_calls")
    if calls and type(content) is str and content and not content.strip():  # blank text beside calls: repair drops it
        return None
    if not calls:  # absent or null ([] is repair's to leave out; not a list: {} or "" read as an error)
        if calls is not None:
            return None
        return None if role in ("user", "assistant") and _empty(d, content) else []
    return calls if role == "assistant" and type(calls) is list else None


def _unusual(d: dict) -> bool:
    """Keys the ordinary path handles specially: a compactctl note, a legacy call, SWE-agent's list of ids, the
    reader's mark of text that stood before tool results (a source key of that name reads as the mark)."""
    return NOTE_KEY in d or "function_call" in d or "tool_call_ids" in d or BEFORE_RESULTS in d


def _plain_content(content: Any) -> bool:
    """Content the reader takes and repair keeps as it is: a string or null, or a list of parts without a blank
    text part (repair drops it, or removes the message), a text part whose text is under "value" or typed input_text (repair mends it),
    a part the reader refuses (a data error: Anthropic's blocks too) or an image in Anthropic's form (repair writes it as image_url)."""
    if content is None or type(content) is str:
        return True
    return type(content) is list and not any(
        is_blank_part(p) or part_problem(p) or is_anthropic_block(p) or not is_chat_text(p) for p in content
    )


def _empty(d: dict, content: Any) -> bool:
    """rules.empty_message for a user or assistant message without calls (reasoning alone is not content)."""
    refusal = d.get("refusal")
    if (type(refusal) is str and refusal.strip()) or type(d.get("audio")) is dict:  # says something outside content
        return False
    if content is None:  # null or absent
        return True
    if type(content) is str:
        return not content.strip()
    return blank_parts(content)


def _intact_call(c: Any, r: Any, seen: set[str]) -> bool:
    """Call `c` reads without error, has an id new to the record, and `r` (the message at its position
    after the calls) is its result: role tool, that id, no other tool's name."""
    if type(c) is not dict or LEGACY in c or OBJECT_ARGUMENTS in c:  # the model's marks, read from the source's keys
        return False
    fn = c.get("function")
    if type(fn) is not dict:
        return False
    name = fn.get("name")
    cid = c.get("id")
    if (
        type(name) is not str
        or not VALID_NAME.fullmatch(name)  # repair names it, or mends the name
        or type(cid) is not str
        or not VALID_ID.fullmatch(cid)
        or cid in seen
        or type(fn.get("arguments")) is not str
    ):
        return False
    seen.add(cid)
    if type(r) is not dict or r.get("role") != "tool" or r.get("tool_call_id") != cid or _unusual(r):
        return False
    content = r.get("content")
    if not _plain_content(content) or r.get("tool_calls") is not None:
        return False
    rname = r.get("name")
    return not (rname and name and rname != name)
