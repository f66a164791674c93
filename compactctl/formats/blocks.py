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
from ..model import BEFORE_RESULTS, MISSING, Message, ToolCall, call_input, part_problem

THINKING = ("thinking", "redacted_thinking")
# Block types only Anthropic's Messages API has (OpenAI chat's parts are text, image_url, input_audio, file, refusal).
ANTHROPIC_ONLY = ("tool_use", "tool_result", *THINKING, "document", "server_tool_use", "web_search_tool_result", "search_result")


def openai_marked(msgs: list) -> bool:
    """Messages with something of OpenAI chat's own (a tool result's role, its calls, a result's id): never
    Anthropic's, whatever blocks they hold besides (an image in Anthropic's form is read as one)."""
    return any(
        isinstance(m, dict) and (m.get("role") in ("tool", "function") or "tool_calls" in m or "tool_call_id" in m or "function_call" in m)
        for m in msgs
    )


def is_anthropic_block(p: Any) -> bool:
    """A content block of Anthropic's form, never OpenAI chat's: one of ANTHROPIC_ONLY, or an image with a `source`
    (OpenAI's is `image_url`; LlamaFactory's `image` holds its path under "value")."""
    if not isinstance(p, dict):
        return False
    kind = p.get("type")
    return kind in ANTHROPIC_ONLY or (kind == "image" and isinstance(p.get("source"), dict))


def _args(value: Any) -> str:
    return orjson.dumps(value).decode() if not isinstance(value, str) else value


def assistant_from_blocks(content: Any, source: str, lineno: int, **kw) -> Message:
    if isinstance(content, str) or content is None:
        return Message(role="assistant", content=content, **kw)
    if not isinstance(content, list):
        raise DataError(source, lineno, "assistant content must be a string or a list of blocks")
    parts, calls, thinking = [], [], []
    for b in content:
        check_block(b, source, lineno)
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
    return m


def user_from_blocks(content: Any, source: str, lineno: int, **kw) -> list[Message]:
    if isinstance(content, str) or content is None:
        return [Message(role="user", content=content, **kw)]
    if not isinstance(content, list):
        raise DataError(source, lineno, "user content must be a string or a list of blocks")
    out: list[Message] = []
    rest: list = []
    before = False  # a block other than a result stood before a result
    for b in content:
        check_block(b, source, lineno)
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
    return out


def check_block(b: Any, source: str, lineno: int) -> None:
    """A block either API takes (see model.part_problem), a tool_result's own blocks too, whose content is text
    or a list of blocks."""
    problem = part_problem(b)
    if problem is not None:
        raise DataError(source, lineno, problem.replace("content part", "content block"))
    if b["type"] == "tool_result" and "content" in b:
        inner = b["content"]
        if isinstance(inner, list):
            for p in inner:
                check_block(p, source, lineno)
        elif inner is not None and not isinstance(inner, str):
            raise DataError(source, lineno, f"a tool_result's content must be text or a list of blocks, got {type(inner).__name__}")


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
