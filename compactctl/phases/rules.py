"""The rules of the chat APIs a transcript can break, as predicates over the model, and `check`.

`check` reports each rule a transcript breaks as a Violation (transcript, message index, rule, detail) without
changing anything; `repair` (phases/repair.py) mends what they find. An id reused across turns is a violation
only in a format sent to Anthropic's API: real OpenAI transcripts do it, and OpenAI takes it (repair renames it
anyway). `tests/validator.py` judges written output by the same rules, with code of its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import orjson

from ..lean import dataclass
from ..model import (
    BEFORE_RESULTS,
    LEGACY,
    MISSING,
    OBJECT_ARGUMENTS,
    ROLES,
    SYSTEM_ROLES,
    Message,
    ToolCall,
    Transcript,
    anthropic_image_url,
    blank_parts,
    call_block_content,
    is_blank_part,
    is_chat_text,
    openai_image_block,
    other_content,
    refused_part,
    refused_system,
    unknown_content,
    unknown_role,
)
from ..pairs import VALID_ID as VALID_ID  # noqa: PLC0414 (a tool-call id both APIs take; repair and passthrough read it here)
from ..pairs import match

# A tool name both APIs take, in `tools` and in a conversation's calls alike (Anthropic: "tool_use.name: String
# should match pattern '^[a-zA-Z0-9_-]{1,64}$'"; OpenAI: letters, digits, _ and -, at most 64).
VALID_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Formats sent to Anthropic's Messages API, which wants a tool_use id unique over the whole request (OpenAI takes
# an id reused in a later turn, and real OpenAI transcripts do it: not a violation there; repair renames it anyway).
ANTHROPIC_API = ("anthropic", "claude_code")
# Logs an agent writes (one session per file): one with no user or assistant message (only summary or meta lines:
# Claude Code writes such files beside its sessions) is an empty session, valid as it is, never sent as it is.
SESSION_LOGS = ("claude_code", "codex")


def empty_log(t: Transcript) -> bool:
    """A session log (`SESSION_LOGS`) read with no user or assistant message: nothing to mend, written back as it
    came. Read: it has its source's lines (`native`); a transcript some code emptied (an eval's baseline) has none
    and stays invalid."""
    return t.format in SESSION_LOGS and t.native is not None and all(m.role in SYSTEM_ROLES for m in t.messages)


@dataclass(slots=True)
class Violation:
    """A rule of the chat APIs that a transcript breaks, and where."""

    transcript: str
    index: int
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.transcript}: message {self.index}: {self.rule}: {self.detail}"


def empty_message(m: Message) -> bool:
    """A user or assistant message with nothing either API takes as content. Replayed reasoning alone is not
    content: OpenAI wants content (or calls) beside `reasoning_content`, and Anthropic a block that is not a
    thinking one (the reasoning is archived with the message). A system message of blank text parts alone says
    nothing either, and Anthropic refuses a text block without text (in its own format, see blank_system)."""
    if m.role in SYSTEM_ROLES:
        return isinstance(m.content, list) and bool(m.content) and blank_parts(m.content)
    if m.role not in ("user", "assistant") or m.tool_calls or other_content(m.extra):
        return False
    c = m.content
    if c is MISSING or c is None:
        return True
    if isinstance(c, str):
        return not c.strip()
    if isinstance(c, list):
        return blank_parts(c)
    return False


def final_turn(msgs: list[Message]) -> int | None:
    """Where the last message after which a model answers is: the last one not a system or developer message
    (Anthropic moves those into its `system` prompt, so an assistant message before them ends the conversation)."""
    return next((j for j in range(len(msgs) - 1, -1, -1) if msgs[j].role not in SYSTEM_ROLES), None)


def final_space(m: Message) -> bool:
    """The last turn (`final_turn`), an assistant's without calls, whose text ends in whitespace (Anthropic refuses it)."""
    if m.role != "assistant" or m.tool_calls:
        return False
    c = m.content
    if isinstance(c, list) and c and isinstance(c[-1], dict):
        c = c[-1].get("text")
    return isinstance(c, str) and c != c.rstrip()


def named(c: ToolCall) -> bool:
    """A call with a tool's name: both APIs refuse an empty one (Hermes writes `"name": ""`)."""
    return isinstance(c.name, str) and bool(c.name.strip())


def ids_list_only(m: Message) -> bool:
    """A result read with SWE-agent's `tool_call_ids` list and no `tool_call_id`, written back as read (the APIs
    want `tool_call_id`)."""
    o = m.origin
    return m.role == "tool" and m.untouched and isinstance(o, dict) and "tool_call_ids" in o and "tool_call_id" not in o


def empty_calls(m: Message) -> bool:
    """A message read with `"tool_calls": []` and written back as read (OpenAI refuses an empty array)."""
    return not m.tool_calls and m.untouched and isinstance(m.origin, dict) and m.origin.get("tool_calls") == []


def has_foreign_text(m: Message, fmt: str) -> bool:
    """A text part that the APIs of format `fmt` do not take as it is: LlamaFactory's form, its text under "value";
    outside Codex, the Responses API's `input_text`/`output_text` (Chat Completions and Anthropic want "text")."""
    responses = fmt == "codex"
    return isinstance(m.content, list) and not all(is_chat_text(p, responses) for p in m.content)


def anthropic_image(m: Message, fmt: str) -> bool:
    """An OpenAI chat user message with an image part in Anthropic's form that an `image_url` part says exactly
    (model.anthropic_image_url): OpenAI refuses the form, and repair writes the `image_url` part. The OpenAI reader
    refuses any other part of Anthropic's form (one of its own blocks, an image it cannot say so)."""
    return (
        fmt == "openai" and m.role == "user" and isinstance(m.content, list) and any(anthropic_image_url(p) is not None for p in m.content)
    )


def openai_image(m: Message, fmt: str) -> bool:
    """An Anthropic user message or tool result with an OpenAI chat `image_url` part that an image block says exactly
    (model.openai_image_block): Anthropic refuses the part, and repair writes the image block. The Anthropic reader
    refuses any other part of OpenAI's form (audio, a file, a refusal, an image it cannot say so)."""
    return (
        fmt == "anthropic"
        and m.role in ("user", "tool")
        and isinstance(m.content, list)
        and any(openai_image_block(p) is not None for p in m.content)
    )


def has_blank_part(m: Message) -> bool:
    """A blank text that repair drops from a message it keeps: a blank text part beside other parts, or all of a
    tool result's or of a message with calls (a user or assistant message of blank parts alone is empty, and
    removed); a message with calls whose text is blank white space (Anthropic: an empty text block beside them)."""
    c = m.content
    if isinstance(c, str):
        return bool(m.tool_calls) and bool(c) and not c.strip()
    if not isinstance(c, list) or not any(is_blank_part(p) for p in c):
        return False
    return not blank_parts(c) or m.role == "tool" or bool(m.tool_calls)


def is_legacy(c) -> bool:
    """A legacy OpenAI `function_call` (one per message, no id; its result is a `role: "function"` turn)."""
    return bool(c.extra.get(LEGACY))


def check(t: Transcript) -> list[Violation]:
    out: list[Violation] = []
    msgs = t.messages
    pairs, orphans = match(msgs)
    for i in orphans:
        out.append(Violation(t.id, i, "orphan-result", f"tool result {msgs[i].tool_call_id!r} answers no earlier call"))
    answered = {(p.call_msg, p.call_pos) for p in pairs}
    results_of: dict[int, list[int]] = {}
    for p in pairs:
        results_of.setdefault(p.call_msg, []).append(p.result)
        c = msgs[p.call_msg].tool_calls[p.call_pos]
        if not is_legacy(c) and msgs[p.result].tool_call_id != c.id:
            out.append(
                Violation(
                    t.id, p.result, "result-id", f"tool result has tool_call_id {msgs[p.result].tool_call_id!r}, not its call's id {c.id!r}"
                )
            )
        elif is_legacy(c) and not msgs[p.result].extra.get(LEGACY):
            out.append(Violation(t.id, p.result, "result-id", "a legacy function_call's result is a tool message, not a function message"))
    earlier: set = set()  # call ids of earlier turns
    for i, m in enumerate(msgs):
        if m.role == "assistant" and m.tool_calls:
            out.extend(_call_violations(t.id, i, m, answered, sorted(results_of.get(i, []))))
            if t.format in ANTHROPIC_API:
                out.extend(_reused(t.id, i, m, earlier))
            earlier.update(c.id for c in m.tool_calls if isinstance(c.id, str))
        out.extend(_content_violations(t.id, i, m, t.format))
        if m.note:
            out.append(
                Violation(t.id, i, "annotation", f"compactctl's own '_compactctl' key ({', '.join(map(str, m.note))}): no API takes it")
            )
    last = final_turn(msgs)
    if last is not None and final_space(msgs[last]):
        out.append(Violation(t.id, last, "final-space", "the last turn, an assistant's, ends in whitespace (Anthropic refuses it)"))
    out.extend(_system_violations(t))
    for _, _, name in defined_names(t.metadata):
        if not VALID_NAME.fullmatch(name):
            out.append(
                Violation(t.id, 0, "bad-name", f"the record's tools or tool_choice name {name[:80]!r}, not 1-64 letters, digits, _ or -")
            )
    out.extend(_opening_violations(t, msgs))
    out.extend(_built_violations(t))
    return out


def _built_violations(t: Transcript) -> Iterator[Violation]:
    """What the readers refuse and a transcript built through the library may hold (model.check_built)."""
    bad = unknown_role(t)
    if bad is not None:
        yield Violation(t.id, bad[0], "unknown-role", f"role {bad[1]!r} is none of {', '.join(ROLES)}")
    odd = unknown_content(t)
    if odd is not None:
        yield Violation(t.id, odd[0], "bad-content", f"content is a {odd[1]}, not a string, null or a list of parts")
    block = call_block_content(t)
    if block is not None:
        yield Violation(t.id, block[0], "bad-content", f"content holds {block[1]}")
    part = refused_part(t)
    if part is not None:
        yield Violation(t.id, part[0], "bad-content", part[1])


def _opening_violations(t: Transcript, msgs: list[Message]) -> list[Violation]:
    """The conversation's first turn after the system ones: there is one (but in an empty session log), the user's."""
    first = next(((i, m) for i, m in enumerate(msgs) if m.role not in SYSTEM_ROLES), None)
    if first is None:
        return [] if empty_log(t) else [Violation(t.id, 0, "no-messages", "no user or assistant message: both APIs need one")]
    if first[1].role != "user":
        return [Violation(t.id, first[0], "first-role", f"first non-system message is {first[1].role}, not user")]
    return []


def null_system(t: Transcript) -> bool:
    """An Anthropic record whose `"system"` is null (the reader takes it for no system prompt)."""
    return t.format == "anthropic" and t.metadata.get("system", "") is None


def blank_system(m: Message, fmt: str) -> bool:
    """An Anthropic system message without text (see model.refused_system)."""
    return fmt == "anthropic" and m.role in SYSTEM_ROLES and m.content is not None and refused_system(m.content)


def _system_violations(t: Transcript) -> Iterator[Violation]:
    if null_system(t):
        yield Violation(t.id, 0, "blank-system", 'the record\'s "system" is null (Anthropic refuses it)')
    for i, m in enumerate(t.messages):
        if blank_system(m, t.format):
            yield Violation(t.id, i, "blank-system", "the system prompt has no text (Anthropic refuses it)")


def _content_violations(tid: str, i: int, m: Message, fmt: str) -> Iterator[Violation]:
    """What is wrong with message i's content and the form it would be written in."""
    if empty_message(m) and not blank_system(m, fmt):  # that one is a blank-system
        yield Violation(tid, i, "empty-message", f"{m.role} message has no content")
    elif has_blank_part(m):
        yield Violation(tid, i, "blank-part", f"{m.role} message has a text part without text")
    if has_foreign_text(m, fmt):
        yield Violation(tid, i, "value-text", 'a text part holds its text under "value", or is typed as the Responses API types it')
    if anthropic_image(m, fmt):
        yield Violation(
            tid,
            i,
            "anthropic-image",
            'an image in Anthropic\'s form ({"type": "image", "source"}): OpenAI chat refuses it (repair writes it as image_url)',
        )
    if openai_image(m, fmt):
        yield Violation(
            tid,
            i,
            "openai-image",
            'an image in OpenAI chat\'s form ({"type": "image_url"}): Anthropic refuses it (repair writes it as an image block)',
        )
    if m.extra.get(BEFORE_RESULTS):
        yield Violation(tid, i, "result-order", "text stands before the tool results of its message (they must come first)")
    if empty_calls(m):
        yield Violation(tid, i, "empty-calls", "an empty tool_calls list (OpenAI wants at least one call, or none)")
    if ids_list_only(m):
        yield Violation(tid, i, "ids-list", "a tool result names its call in tool_call_ids only (the APIs want tool_call_id)")


def _reused(tid: str, i: int, m: Message, earlier: set) -> Iterator[Violation]:
    for c in m.tool_calls:
        if isinstance(c.id, str) and c.id in earlier and not is_legacy(c):
            yield Violation(tid, i, "reused-id", f"call id {c.id!r} was an earlier call's (Anthropic wants each id once per request)")


def _call_violations(tid: str, i: int, m: Message, answered: set[tuple[int, int]], res: list[int]) -> Iterator[Violation]:
    """What is wrong with the calls of assistant message i and the placement of their results `res`."""
    seen: set = set()  # within one message (both APIs reject it); reuse across turns is OpenAI-valid
    for pos, c in enumerate(m.tool_calls):
        if (i, pos) not in answered:
            yield Violation(tid, i, "missing-result", f"call {c.id!r} ({c.name}) has no result")
        if c.extra.get(OBJECT_ARGUMENTS):
            yield Violation(tid, i, "object-arguments", f"call {c.id!r}: arguments are missing or a JSON object (the API wants JSON text)")
        if not named(c):
            yield Violation(tid, i, "unnamed-call", f"call {c.id!r} has no tool name")
        elif not VALID_NAME.fullmatch(c.name):
            yield Violation(tid, i, "bad-name", f"call {c.id!r}: tool name {c.name[:80]!r} is not 1-64 letters, digits, _ or -")
        if not is_legacy(c) and not (isinstance(c.id, str) and c.id):
            yield Violation(tid, i, "missing-id", f"call {c.name!r} has no id")
        elif isinstance(c.id, str) and not is_legacy(c) and not VALID_ID.fullmatch(c.id):
            yield Violation(tid, i, "bad-id", f"call id {c.id!r} is not 1-40 letters, digits, _ or -")
        elif c.id is not None and c.id in seen:
            yield Violation(tid, i, "duplicate-id", f"call id {c.id!r} appears twice in one message")
        seen.add(c.id)
    if res and res != list(range(i + 1, i + 1 + len(res))):
        yield Violation(tid, i, "placement", "tool results do not directly follow their calls")


def defined_names(meta: dict) -> Iterator[tuple[dict, str, str]]:
    """(dict, key, name) of each tool a record's `tools` defines and its `tool_choice` names, in the forms of
    OpenAI chat (`{"function": {"name"}}`), Anthropic and the Responses API (`{"name"}`); LlamaFactory's `tools`,
    a JSON text of those, is read (its dicts are a parse's: see tools_text)."""
    tools = meta.get("tools")
    if isinstance(tools, str):
        tools = tools_text(tools)
    for d in [*(tools if isinstance(tools, list) else []), meta.get("tool_choice")]:
        holder = d.get("function") if isinstance(d, dict) and isinstance(d.get("function"), dict) else d
        if isinstance(holder, dict) and isinstance(holder.get("name"), str) and holder["name"]:
            yield holder, "name", holder["name"]


def tools_text(text: str) -> list | None:
    """LlamaFactory's `tools` (a JSON text of tool definitions) as a list, None when it is not one."""
    try:
        tools = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return tools if isinstance(tools, list) else None
