"""Anthropic content blocks <-> canonical messages (used by the Anthropic and Claude Code formats).

An assistant message's blocks become: text parts (content), `thinking` text (reasoning; the blocks
themselves, with their signatures, are kept to be replayed), and `tool_use` blocks (tool calls).
A user message's `tool_result` blocks become canonical tool messages, one per block, followed by a
user message for any other blocks (marked BEFORE_RESULTS when some stood before a result, which the
API refuses: repair reports and clears it, and the message is written after the results). Writing
reverses it.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..errors import DataError
from ..model import BEFORE_RESULTS, MISSING, Message, ToolCall, call_input, part_problem, text_part

THINKING = ("thinking", "redacted_thinking")


def _args(value: Any) -> str:
    return orjson.dumps(value).decode() if not isinstance(value, str) else value


def assistant_from_blocks(content: Any, source: str, lineno: int, **kw) -> Message:
    if isinstance(content, str) or content is None:
        return Message(role="assistant", content=content, **kw)
    if not isinstance(content, list):
        raise DataError(source, lineno, "assistant content must be a string or a list of blocks")
    parts, calls, thinking = [], [], []
    moved = False  # a text block's "value" moved to "text" (see _block): the message is written anew
    for b in content:
        b, was = _block(b, source, lineno), b
        moved = moved or b is not was
        t = b.get("type")
        if t == "tool_result":
            raise DataError(source, lineno, "a tool_result block in an assistant message (results come in the user turn after)")
        if t == "tool_use":
            extra = {k: v for k, v in b.items() if k not in ("type", "id", "name", "input")}
            calls.append(ToolCall(b.get("id"), str(b.get("name", "")), _args(b.get("input", {})), extra))
        elif t in THINKING:
            thinking.append(b)
        else:
            parts.append(b)
    reasoning = "\n".join(b.get("thinking", "") for b in thinking if b.get("type") == "thinking") or None
    m = Message(role="assistant", content=parts, tool_calls=calls, reasoning=reasoning, **kw)
    if thinking:
        m.extra["_thinking_blocks"] = thinking
    if moved:
        m.provenance = m.provenance.changed()
    return m


def user_from_blocks(content: Any, source: str, lineno: int, **kw) -> list[Message]:
    if isinstance(content, str) or content is None:
        return [Message(role="user", content=content, **kw)]
    if not isinstance(content, list):
        raise DataError(source, lineno, "user content must be a string or a list of blocks")
    out: list[Message] = []
    rest: list = []
    before = False  # a block other than a result stood before a result
    moved = False  # as in assistant_from_blocks
    for b in content:
        b, was = _block(b, source, lineno), b
        moved = moved or b is not was
        if b.get("type") == "tool_use":
            raise DataError(source, lineno, "a tool_use block in a user message (calls come in an assistant message)")
        if b.get("type") == "tool_result":
            before = before or bool(rest)
            c = b.get("content", "")
            extra = {k: v for k, v in b.items() if k not in ("type", "tool_use_id", "content", "is_error")}
            m = Message(role="tool", content=c, tool_call_id=b.get("tool_use_id"), is_error=b.get("is_error"), **kw)
            m.extra.update(extra)
            if "content" not in b:
                m.extra["_no_content"] = True
            out.append(m)
        else:
            rest.append(b)
    if rest or not out:
        out.append(Message(role="user", content=rest, **kw))
        if before:
            out[-1].extra[BEFORE_RESULTS] = True
    if moved:
        for m in out:
            m.provenance = m.provenance.changed()
    return out


def _block(b: Any, source: str, lineno: int) -> Any:
    """The block checked (a tool_result's blocks too); a text block in LlamaFactory's form (its text under
    "value") as the one it means, in a changed copy."""
    b = text_part(b)
    problem = part_problem(b)
    if problem is not None:
        raise DataError(source, lineno, problem.replace("content part", "content block"))
    inner = b.get("content") if b["type"] == "tool_result" else None
    if isinstance(inner, list):
        blocks = [_block(p, source, lineno) for p in inner]
        if any(x is not y for x, y in zip(blocks, inner, strict=True)):
            b = {**b, "content": blocks}
    return b


def assistant_blocks(m: Message) -> list | str | None:
    """Blocks for a (changed) canonical assistant message."""
    blocks: list = list(m.extra.get("_thinking_blocks", []))
    c = m.content
    if isinstance(c, str):
        if not blocks and not m.tool_calls:
            return c
        if c:
            blocks.append({"type": "text", "text": c})
    elif isinstance(c, list):
        blocks += c
    for call in m.tool_calls:
        own = {k: v for k, v in call.extra.items() if not k.startswith("_") and k not in ("type", "id", "name", "input")}
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call_input(call.arguments), **own})
    return blocks


def tool_result_block(m: Message) -> dict:
    b: dict[str, Any] = {"type": "tool_result", "tool_use_id": m.tool_call_id}
    if not m.extra.get("_no_content") or m.content not in (MISSING, None, ""):
        b["content"] = m.content if m.content is not MISSING else ""
    if m.is_error is not None:
        b["is_error"] = m.is_error
    b.update({k: v for k, v in m.extra.items() if not k.startswith("_")})
    return b
