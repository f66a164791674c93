"""Anthropic Messages: content blocks, tool results inside user messages, system as its own field.

Session file: one message per line ({"role", "content"}; a line {"system": ...} gives the system
prompt). Dataset: {"system": ..., "messages": [...], ...} per line, other keys kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from ..errors import DataError
from ..model import Message, Provenance, Transcript, openai_image_block, refused_system
from . import Reader, Record
from .blocks import (
    assistant_blocks,
    assistant_from_blocks,
    check_block,
    is_anthropic_block,
    openai_marked,
    tool_result_block,
    user_from_blocks,
)
from .registry import elsewhere, foreign

NAME = "anthropic"
# A {"role": "system"} row among the messages: the Messages API takes the system prompt apart.
SYSTEM_ROW = (
    "a system message among Anthropic's messages: the Messages API takes the system prompt apart; put it on a"
    ' {"system": ...} line before the messages (a session) or under the record\'s "system" key (a dataset); an OpenAI'
    " chat file reads with --from openai"
)
CARRIER_KEYS = ("messages", "system")  # record keys that hold the transcript itself
ROW_KEYS = "_row_keys"  # a user row's own keys (besides role and content) when it holds tool results alone
_WANTS = (
    'Anthropic Messages is a message a line ({"role", "content"}; the system prompt a line {"system"}), or a record a line'
    ' with its messages under "messages" (and its system prompt under "system")'
)
_DOCUMENT = "a file is a document block: a PDF as base64 data or by URL, its name a title"
# OpenAI's own parts in a message's content (Chat Completions', the Responses API's): what each is, what Anthropic
# Messages has for it (it refuses them all; an image_url part it can say exactly, repair writes as an image block),
# and what reads such a file
_OPENAI_ONLY = {
    "image_url": ("OpenAI chat's form of an image", "", "openai"),
    "input_audio": ("OpenAI chat's audio input", "it takes no audio", "openai"),
    "file": ("OpenAI chat's form of a file", _DOCUMENT, "openai"),
    "refusal": ("OpenAI chat's form of a refusal", "a refusal is the assistant's text", "openai"),
    "input_image": ("the Responses API's form of an image", "an image is an image block with a source", "codex"),
    "input_file": ("the Responses API's form of a file", _DOCUMENT, "codex"),
}
_FILE_OF = {"openai": "an OpenAI chat file", "codex": "a Codex (Responses API) file"}


def _has_blocks(msgs: list) -> bool:
    if openai_marked(msgs):
        return False
    for m in msgs[:100]:
        c = m.get("content") if isinstance(m, dict) else None
        if isinstance(c, list) and any(is_anthropic_block(p) for p in c):
            return True
    return False


def sniff(obj: dict) -> str | None:
    msgs = obj.get("messages")
    if (
        isinstance(msgs, list)
        and not openai_marked(msgs)
        and ("system" in obj and not any(isinstance(m, dict) and m.get("role") == "system" for m in msgs[:3]) or _has_blocks(msgs))
    ):
        return "dataset"
    if "role" in obj and _has_blocks([obj]):
        return "session"
    if set(obj) == {"system"}:
        return "session"
    return None


def no_messages(obj: dict, told: int | None = None) -> str:
    """What a record read as Anthropic's messages is when it is no message and holds none where this format looks
    (registry.foreign; `told`: the line the file's format was told from, None when --from gave it)."""
    return foreign(obj, NAME, "Anthropic Messages", ("messages",), _WANTS, told)


def messages_from(rows: list, source: str, lineno: int, start: int = 0) -> list[Message]:
    out: list[Message] = []
    for k, d in enumerate(rows):
        if not isinstance(d, dict):
            raise DataError(source, lineno, "a message must be a JSON object")
        role = d.get("role")
        extra = {key: v for key, v in d.items() if key not in ("role", "content")}
        origin = ("msg", start + k)
        if role == "assistant":
            m = assistant_from_blocks(d.get("content"), source, lineno, provenance=Provenance(origin=origin, anchor=origin))
            m.extra.update(extra)
            out.append(m)
        elif role == "user":
            out += _user_row(d, extra, source, lineno, Provenance(origin=origin, anchor=origin))
        elif role == "system":  # (read as the prompt, it could not be written back where it stood: refused, the fix said)
            raise DataError(source, lineno, SYSTEM_ROW)
        elif role is None:
            raise DataError(source, lineno, "message has no role")
        else:
            hint = " (a tool message is OpenAI chat's: such a file reads with --from openai)" if role == "tool" else ""
            raise DataError(source, lineno, f"unknown role {role!r} for Anthropic messages (expected user or assistant){hint}")
        _openai_parts(d.get("content"), role, source, lineno)
    return out


def _openai_parts(content: Any, role: Any, source: str, lineno: int) -> None:
    """Refuses a part of OpenAI's form in a message's content (a tool_result's too, as a tool result's): a DataError
    that says what it is and what Anthropic has for it (openai_part)."""
    for part in content if isinstance(content, list) else ():
        problem = openai_part(part, role)
        if problem is not None:
            raise DataError(source, lineno, problem)
        if isinstance(part, dict) and part.get("type") == "tool_result":
            _openai_parts(part.get("content"), "tool", source, lineno)


def openai_part(part: Any, role: Any, file: bool = True) -> str | None:
    """What is wrong with a part of OpenAI's form in Anthropic content (in a `role` message, "tool" for a tool
    result's), and what Anthropic has for it; None for any other part, and for an image_url part that repair writes as
    an image block (rules.openai_image). `file`: said of a line of a file, which another --from may read
    (model.refused_part says it of a transcript built through the library, read from no file)."""
    kind = part.get("type") if isinstance(part, dict) else None
    if kind not in _OPENAI_ONLY:
        return None
    if kind == "image_url" and role in ("user", "tool") and openai_image_block(part) is not None:
        return None
    what, own, fmt = _OPENAI_ONLY[kind]
    own = own or _image_fix(part, role)
    hint = f"; {_FILE_OF[fmt]} reads with --from {fmt}" if file else ""
    return f"content holds {'an' if kind[0] in 'aeiou' else 'a'} {kind} part, {what}: Anthropic Messages refuses it there ({own}{hint})"


def _image_fix(part: dict, role: Any) -> str:
    """Why repair cannot write an OpenAI chat image_url part as Anthropic's image block."""
    if role not in ("user", "tool"):
        return (
            f"it takes an image in a user message or a tool result only, not in a{'n' if str(role)[:1] in 'aeiou' else ''} {role} message"
        )
    img = part.get("image_url")
    if not (isinstance(img, dict) and isinstance(img.get("url"), str)):
        return 'its image_url is no object with a "url"'
    detail = img.get("detail", "auto")
    if detail != "auto":
        return f'an image block has no detail, and {detail!r} would be lost: without it, or with "auto", repair writes an image block'
    own = sorted({*part, *img} - {"type", "image_url", "url", "detail"})
    if own:
        return f"an image block has no place for its {', '.join(map(str, own))}: repair converts an image_url part that holds a type and a URL alone"
    if img["url"].startswith("data:"):
        return "its data URL is no base64 image of a type Anthropic takes: JPEG, PNG, GIF or WebP"
    return "its URL is neither http(s) nor a base64 data URL"


def _roleless(items: Any) -> bool:
    """A record's "messages" whose first is an object without a role: none of this format's (ShareGPT's turns)."""
    return isinstance(items, list) and bool(items) and isinstance(items[0], dict) and "role" not in items[0]


def _user_row(d: dict, extra: dict, source: str, lineno: int, provenance: Provenance) -> list[Message]:
    """A user row's messages (a result per tool_result block, then the other blocks), its keys besides role and
    content on the user message; on each result when there is none, for the row written again (`_row`)."""
    read = user_from_blocks(d.get("content"), source, lineno, provenance=provenance)
    alone = read[-1].role == "tool"
    for m in read:
        if m.role == "user":
            m.extra.update(extra)
        elif alone and extra:
            m.extra[ROW_KEYS] = extra
    return read


def _system(system: Any, source: str, lineno: int) -> Any:
    """The system prompt, checked: text or a list of blocks (the API takes nothing else)."""
    if isinstance(system, list):
        for b in system:
            check_block(b, source, lineno)
        _openai_parts(system, "system", source, lineno)
    elif system is not None and not isinstance(system, str):
        raise DataError(source, lineno, f"system must be text or a list of blocks, got {type(system).__name__}")
    return system


def _finish(msgs: list[Message], system) -> list[Message]:
    if system is not None:
        msgs.insert(0, Message(role="system", content=system, provenance=Provenance(origin=("system", 0))))
    for i, m in enumerate(msgs):
        m.index = i
    return msgs


class Rows(list):
    """A session's message rows as read (what the writer writes an untouched message back from) and `raws`, the
    lines they and its system lines were read from, in order (what --rejects takes of it: formats.as_read)."""

    def __init__(self) -> None:
        super().__init__()
        self.raws: list[bytes] = []


def read(records: Iterator[Record], source: str, layout: str, reader: Reader) -> Iterator[Transcript]:
    if layout == "dataset":
        for n, (lineno, raw, obj) in enumerate(records):
            with reader.guard(lineno, raw):
                items = obj.get("messages")
                if ("role" not in obj and "system" not in obj and not isinstance(items, list)) or _roleless(items):
                    raise DataError(source, lineno, no_messages(obj, reader.told))  # say what it is: another format's record, ...
                if not isinstance(items, list):
                    raise DataError(source, lineno, 'a dataset record needs a "messages" list')
                yield Transcript(
                    _finish(messages_from(items, source, lineno), _system(obj.get("system"), source, lineno)),
                    id=f"{source}#{n + 1}",
                    source=source,
                    line=lineno,
                    format=NAME,
                    layout="dataset",
                    metadata=dict(obj),
                    raw=raw,
                    native=items,
                )
        return
    rows = Rows()
    msgs: list[Message] = []
    system, first = None, 0
    for lineno, raw, obj in records:
        first = first or lineno
        with reader.guard(lineno, raw):
            if _no_line_of_a_session(obj):
                raise DataError(source, lineno, no_messages(obj, reader.told))  # no message with its role left out: say what it is
            if "role" not in obj and "system" in obj:
                system = _system(obj["system"], source, lineno)
                if reader.rejects is not None:  # kept for --rejects alone (as_read)
                    rows.raws.append(raw)
                continue
            msgs += messages_from([obj], source, lineno, start=len(rows))  # errors name this line
            rows.append(obj)
            if reader.rejects is not None:  # kept for --rejects alone (as_read)
                rows.raws.append(raw)
    if rows or system is not None:
        yield Transcript(_finish(msgs, system), id=source, source=source, line=first, format=NAME, layout="session", native=rows)


def _prompt(system: Any, content: Any) -> Any:
    """The system prompt so far with a system message's content: the API has one prompt, and a later system
    message joins it (it was dropped). One without text adds nothing: a blank text block would make the prompt
    one the API refuses."""
    if system is None or (refused_system(system) and not refused_system(content)):
        return content
    return system if refused_system(content) else _joined(system, content)


def _no_line_of_a_session(obj: dict) -> bool:
    """A line of a session file that is neither a message nor the system prompt's line: no role, and no content or a
    record another format reads (an OpenHands event has a "content"), and no "system" alone."""
    return "role" not in obj and ("content" not in obj or elsewhere(obj, NAME)) and ("system" not in obj or "messages" in obj)


def to_rows(t: Transcript) -> tuple[object, list[dict]]:
    """(system, message dicts) for a transcript; untouched source messages come back as they were."""
    src = t.native if isinstance(t.native, list) else None
    system = None
    rows: list[dict] = []
    i = 0
    msgs = t.messages
    while i < len(msgs):
        m = msgs[i]
        if m.role in ("system", "developer"):
            system = _prompt(system, m.content)
            i += 1
            continue
        origin = m.anchor if isinstance(m.anchor, tuple) else None
        group = [m]
        j = i + 1
        if origin is not None and origin[0] == "msg":
            while j < len(msgs) and msgs[j].anchor == origin:
                group.append(msgs[j])
                j += 1
        elif m.role == "tool":
            while j < len(msgs) and msgs[j].role == "tool":
                group.append(msgs[j])
                j += 1
        if (
            src is not None
            and origin is not None
            and origin[0] == "msg"
            and all(g.untouched for g in group)
            and _complete(group, src[origin[1]])
        ):
            rows.append(src[origin[1]])
        else:
            rows.append(_row(group))
        i = j
    return system, rows


def _joined(a: Any, b: Any) -> Any:
    """Two system contents as one: text after text, or blocks after blocks."""
    if not b:
        return a
    if isinstance(a, str) and isinstance(b, str):
        return f"{a}\n\n{b}" if a else b
    blocks = lambda c: [{"type": "text", "text": c}] if isinstance(c, str) else list(c or [])  # noqa: E731
    return blocks(a) + blocks(b)


def _complete(group: list[Message], row: dict) -> bool:
    """`group` holds every message read from `row` (a result per tool_result block, then a user message for
    the other blocks), so that the row may be written as it came; a row whose results do not lead is rebuilt
    (results first: the API refuses anything before them)."""
    c = row.get("content")
    if not isinstance(c, list):
        return len(group) == 1
    kinds = [isinstance(b, dict) and b.get("type") == "tool_result" for b in c]
    n = sum(kinds)
    if any(kinds[n:]):  # a result after another block
        return False
    return sum(1 for g in group if g.role == "tool") == n and len(group) == n + (1 if n < len(c) or not n else 0)


def _row(group: list[Message]) -> dict:
    first = group[0]
    if first.role == "assistant":
        d = {"role": "assistant", "content": assistant_blocks(first)}
        d.update({k: v for k, v in first.extra.items() if not k.startswith("_")})
        return d
    blocks: list = []
    extra: dict = {}
    for g in group:
        if g.role == "tool":
            blocks.append(tool_result_block(g))
            extra.update(g.extra.get(ROW_KEYS, {}))
        else:
            c = g.content
            blocks += c if isinstance(c, list) else ([{"type": "text", "text": c}] if isinstance(c, str) and c else [])
            extra.update({k: v for k, v in g.extra.items() if not k.startswith("_")})
            if len(group) == 1 and isinstance(c, str):
                return {"role": "user", "content": c, **extra}
    return {"role": "user", "content": blocks, **extra}


def write(t: Transcript) -> Iterator[bytes]:
    if t.layout == "dataset":
        if t.raw is not None:
            yield t.raw
            return
        system, rows = to_rows(t)
        rec = dict(t.metadata) if t.metadata else {}
        if system is not None and ("system" in rec or not refused_system(system)):
            rec["system"] = system
        # else a "system" the record came with stays; a blank system message of another format (which its API
        # took, and which holds nothing to lose) is left out: this API refuses a system prompt without text
        rec["messages"] = rows
        yield orjson.dumps(rec)
        return
    system, rows = to_rows(t)
    if not refused_system(system):
        yield orjson.dumps({"system": system})
    for r in rows:
        yield orjson.dumps(r)
