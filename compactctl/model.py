"""The one transcript shape every phase speaks.

A `Transcript` is a list of `Message`s plus the record-level metadata of its source. Formats convert
to and from it at the edge; phases only ever see this model.

Where a message came from is one `Provenance`: untouched messages keep its `origin` (the parsed source
object) and `index` (their position in the transcript as read); a phase that changes a message makes a
new one with `Message.evolve`, which keeps only the `anchor` (its place in a line-based source): writers
then re-emit untouched messages exactly as they came and put changed ones where their originals stood,
and the archive knows which originals were replaced. (`message.origin`, `.index` and `.anchor` read and
set the provenance's parts.)
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import field
from typing import Any

import orjson

from .errors import DataError
from .harness import answers_action, is_injected
from .lean import dataclass

ROLES = ("system", "developer", "user", "assistant", "tool")
LEGACY = "_legacy_function"  # key in ToolCall.extra / Message.extra: a legacy OpenAI function_call / role "function"
SYSTEM_ROLES = ("system", "developer")
# key in Message.extra: the reader found this user message's blocks before the tool results of the same source
# message (Anthropic refuses it: "Messages following tool_use blocks must begin with ... tool_result blocks")
BEFORE_RESULTS = "_before_results"
# key in ToolCall.extra: the source held the call's arguments as a JSON object, not as JSON text, or had none (the
# APIs want text; repair writes them so)
OBJECT_ARGUMENTS = "_arguments_object"


class _Missing:
    """Marks a key that was absent from the source (distinct from an explicit null)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()


@dataclass(slots=True)
class ToolCall:
    """A tool call an assistant message makes."""

    id: str | None
    name: str
    arguments: str  # JSON text as the model produced it (may be invalid JSON: kept as is)
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. {"type": "function"}, unknown keys


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a message came from, in one place.

    `origin` (the parsed source object, which a writer re-emits as it was) and `index` (the message's position
    in the transcript as read) hold only while the message is untouched; `anchor` (where it stands in a
    line-based source: the lines it came from, the record it was split from) survives a change, so a writer
    puts the changed message back where its original stood."""

    origin: Any = None
    index: int | None = None
    anchor: Any = None

    def changed(self) -> Provenance:
        return Provenance(anchor=self.anchor) if self.anchor is not None else NEW


NEW = Provenance()  # a message compactctl made (a summary, a stub), or a format that records nothing


@dataclass(slots=True)
class Message:
    """One message of the canonical transcript, whatever format it was read from."""

    role: str
    content: Any = MISSING  # str | None | list[part dict] | MISSING
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None  # for role "tool"
    name: str | None = None  # tool name on a tool result, or a participant name
    is_error: bool | None = None  # a tool result the source marked as failed
    reasoning: str | None = None  # replayed reasoning text (reasoning_content, thinking)
    extra: dict[str, Any] = field(default_factory=dict)  # every key we do not model, in order
    note: dict[str, Any] = field(default_factory=dict)  # compactctl's own annotation ("_compactctl" key)
    injected: bool = False  # a user-role message the harness wrote (the source flags it, e.g. Claude Code's isMeta)
    # A user-role message that carries output, not words: the environment's observation of the agent's text action
    # before it, or a demonstration the harness shows (SWE-agent). A tool output in all but role; always injected too.
    observation: bool = False
    provenance: Provenance = NEW  # where it came from (see Provenance; frozen, so one shared default)

    # The provenance's parts, read and set on the message (setting one replaces the frozen Provenance; the
    # readers set them once per message read, so directly rather than through dataclasses.replace).
    @property
    def origin(self) -> Any:
        return self.provenance.origin

    @origin.setter
    def origin(self, value: Any) -> None:
        p = self.provenance
        self.provenance = Provenance(value, p.index, p.anchor)

    @property
    def index(self) -> int | None:
        return self.provenance.index

    @index.setter
    def index(self, value: int | None) -> None:
        p = self.provenance
        self.provenance = Provenance(p.origin, value, p.anchor)

    @property
    def anchor(self) -> Any:
        return self.provenance.anchor

    @anchor.setter
    def anchor(self, value: Any) -> None:
        p = self.provenance
        self.provenance = Provenance(p.origin, p.index, value)

    def evolve(self, **changes: Any) -> Message:
        """A changed copy: no longer an untouched original (its provenance keeps only the anchor)."""
        changes.setdefault("provenance", self.provenance.changed())
        if "tool_calls" not in changes:
            changes["tool_calls"] = list(self.tool_calls)
        if "extra" not in changes:
            changes["extra"] = dict(self.extra)
        if "note" not in changes:
            changes["note"] = dict(self.note)
        return dataclasses.replace(self, **changes)

    @property
    def untouched(self) -> bool:
        return self.index is not None

    def text(self) -> str:
        """All text this message carries in its content (text parts joined by newlines)."""
        return content_text(self.content)


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, dict):
                t = part.get("text")
                if t is None and part.get("type") in TEXT_TYPES:
                    t = part.get("value")  # LlamaFactory's form (repair moves it)
                if isinstance(t, str):
                    out.append(t)
                elif part.get("type") in ("tool_result",) and isinstance(part.get("content"), (str, list)):
                    out.append(content_text(part.get("content")))
            elif isinstance(part, str):
                out.append(part)
        return "\n".join(out)
    return ""


TEXT_TYPES = ("text", "input_text", "output_text")  # a text part, as Chat Completions and the Responses API type it


def part_problem(part: Any) -> str | None:
    """What makes a content part one neither API takes and repair cannot mend (None when it is fine): a part that is
    no object, has no type, or is a text part whose text is not a string (under "text", or "value": `is_value_part`)."""
    if not isinstance(part, dict):
        return f"a content part must be an object, got {type(part).__name__}"
    kind = part.get("type")
    if not isinstance(kind, str):
        return "a content part has no type"
    if kind in TEXT_TYPES and not isinstance(part.get("text", part.get("value")), str):
        return f"a {kind} part without a string text"
    return None


# Anthropic's blocks of a call and of a result: its readers make them tool calls and tool messages, never parts of
# a message's content, where no API takes them (OpenAI chat refuses them, and no phase would pair them)
CALL_BLOCKS = {"tool_use": "a tool call", "tool_result": "a tool result"}


def call_block(part: Any) -> str | None:
    """The type of a content part that is one of Anthropic's CALL_BLOCKS, or None."""
    kind = part.get("type") if isinstance(part, dict) else None
    return kind if kind in CALL_BLOCKS else None


def is_value_part(part: Any) -> bool:
    """A text part in LlamaFactory's form, its text under "value": both APIs look for "text" (repair moves it)."""
    return isinstance(part, dict) and part.get("type") in TEXT_TYPES and "text" not in part and isinstance(part.get("value"), str)


RESPONSES_TEXT = ("input_text", "output_text")  # the Responses API's text parts (Codex): "text" in Chat Completions and Anthropic


def is_chat_text(part: Any, responses: bool = False) -> bool:
    """A text part as the target API takes it: not in LlamaFactory's form, and (unless `responses`, for Codex) not
    typed as the Responses API types it."""
    return not is_value_part(part) and (responses or not (isinstance(part, dict) and part.get("type") in RESPONSES_TEXT))


def text_part(part: Any, responses: bool = False) -> Any:
    """`part` as `is_chat_text` wants it (a copy): its text under "text" (the key renamed in place), typed "text"
    (unless `responses`); any other part as it is."""
    if is_value_part(part):
        part = {("text" if k == "value" else k): v for k, v in part.items()}
    if not responses and isinstance(part, dict) and part.get("type") in RESPONSES_TEXT:
        part = {**part, "type": "text"}
    return part


def anthropic_image_url(part: Any) -> str | None:
    """The URL of an image part in Anthropic's form (`{"type": "image", "source"}`) that says nothing an OpenAI
    `image_url` part cannot say: its type and source alone, base64 data with its media type (a data URL of them) or a
    URL. None for any other part: an image by Anthropic's file id, one with a key of its own (cache_control)."""
    if not (isinstance(part, dict) and part.get("type") == "image" and len(part) == 2 and isinstance(part.get("source"), dict)):
        return None
    src = part["source"]
    if src.get("type") == "base64" and len(src) == 3 and isinstance(src.get("media_type"), str) and isinstance(src.get("data"), str):
        return f"data:{src['media_type']};base64,{src['data']}"
    if src.get("type") == "url" and len(src) == 2 and isinstance(src.get("url"), str):
        return src["url"]
    return None


def image_url_part(part: Any) -> Any:
    """An image part in Anthropic's form as the OpenAI `image_url` part that says the same (see anthropic_image_url);
    any other part as it is."""
    url = anthropic_image_url(part)
    return part if url is None else {"type": "image_url", "image_url": {"url": url}}


ANTHROPIC_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")  # the media types Anthropic's image takes


def openai_image_block(part: Any) -> dict | None:
    """The Anthropic image block that says exactly what an OpenAI chat `image_url` part says: an http(s) URL as a
    source by URL, a base64 data URL of a media type Anthropic takes as base64 data (`image/jpg` named `image/jpeg`).
    None for any other part: a `detail` other than "auto" (the default; Anthropic's image has none), a key of its own,
    another URL or media type (anthropic.openai_part says why)."""
    if not (isinstance(part, dict) and part.get("type") == "image_url" and len(part) == 2 and isinstance(part.get("image_url"), dict)):
        return None
    img = part["image_url"]
    url = img.get("url")
    if not isinstance(url, str) or set(img) - {"url", "detail"} or img.get("detail", "auto") != "auto":
        return None
    if url.startswith(("https://", "http://")):
        return {"type": "image", "source": {"type": "url", "url": url}}
    head, sep, data = url.partition(",")
    media = head[5:-7].replace("image/jpg", "image/jpeg") if head.startswith("data:") and head.endswith(";base64") else None
    if not sep or media not in ANTHROPIC_IMAGE_TYPES:
        return None
    return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}


def image_block(part: Any) -> Any:
    """An OpenAI chat `image_url` part as the Anthropic image block that says the same (see openai_image_block); any
    other part as it is."""
    block = openai_image_block(part)
    return part if block is None else block


def is_image_part(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") in ("image_url", "image", "input_image")


@dataclass(slots=True)
class Transcript:
    """A conversation as read from one source: its messages, and what is needed to write it back."""

    messages: list[Message]
    id: str = ""  # stable name: "file.jsonl" or "file.jsonl#3" for a dataset record
    source: str = ""  # the file it came from ("<stdin>" for standard input)
    line: int = 0  # first line of the transcript in its source
    format: str = "openai"  # name of the format that read it
    layout: str = "session"  # "session" (one message per line) or "dataset" (one transcript per line)
    metadata: dict[str, Any] = field(default_factory=dict)  # record-level keys other than the messages
    native: Any = None  # format-specific state the writer needs (e.g. raw lines)
    raw: bytes | None = None  # the record as read, while nothing in it changed (dataset layout)
    # The session's working directory as the source records it outside the messages (Claude Code's `cwd`, the one
    # most of its lines give), or None. Never written: the summary says paths relative to it.
    cwd: str | None = None

    def evolve(self, **changes: Any) -> Transcript:
        changes.setdefault("raw", None)
        return dataclasses.replace(self, **changes)


_ROLES = frozenset(ROLES)


def unknown_role(t: Transcript) -> tuple[int, Any] | None:
    """(index, role) of the first message whose role is none of ROLES, or None. The readers refuse such a message
    (each maps its format's roles to these); a transcript built through the library may still hold one."""
    for i, m in enumerate(t.messages):
        if m.role not in _ROLES:
            return i, m.role
    return None


def unknown_content(t: Transcript) -> tuple[int, str] | None:
    """(index, type name) of the first message whose content is none of a string, null, a list of parts or absent
    (MISSING), or None. The readers refuse such content; a transcript built through the library may still hold it."""
    for i, m in enumerate(t.messages):
        c = m.content
        if not (c is MISSING or c is None or isinstance(c, (str, list))):
            return i, type(c).__name__
    return None


def call_block_content(t: Transcript) -> tuple[int, str] | None:
    """(index, what) of the first message whose content holds a `call_block`, or None. The readers refuse it (or make
    it a call or a result); a transcript built through the library may still hold it."""
    for i, m in enumerate(t.messages):
        if isinstance(m.content, list):
            kind = next((k for k in map(call_block, m.content) if k is not None), None)
            if kind is not None:
                return i, f"a {kind} block, Anthropic's form of {CALL_BLOCKS[kind]}"
    return None


def _takes_every_part(fmt: str, part: Any, role: str) -> str | None:
    return None


# What the reader of format `fmt` says of a part of the other API's form in a `role` message, said of a transcript
# read from no file (None: it takes it). The forms are the format edge's knowledge and this layer imports no format:
# compactctl.formats sets it when imported (the library's face, compactctl.api, imports it).
foreign_part: Callable[[str, Any, str], str | None] = _takes_every_part


# Formats whose readers refuse a part that `part_problem` names (as a "content block" in Anthropic's messages and
# Claude Code's lines: blocks.check_block); in OpenAI chat and Anthropic's messages, one of the other API's too
_PARTS_CHECKED = {"openai": "content part", "anthropic": "content block", "claude_code": "content block"}


def refused_part(t: Transcript) -> tuple[int, str] | None:
    """(index, what) of the first message whose content holds a part the reader of the transcript's format refuses,
    or None: one `part_problem` names; in OpenAI chat one of Anthropic's own blocks (formats/openai.foreign_part), in
    Anthropic's messages one of OpenAI's own parts (formats/anthropic.openai_part), but an image that repair writes
    in the format's form. A transcript built through the library may hold one, which its writer would write as it is
    (no API of the format takes it). Call and result blocks are `call_block_content`'s. The other formats' readers
    refuse no part (Claude Code's but one `part_problem` names): what they take, a phase takes."""
    said = _PARTS_CHECKED.get(t.format)
    if said is None:
        return None
    for i, m in enumerate(t.messages):
        for part in m.content if isinstance(m.content, list) else ():
            if call_block(part) is not None:
                continue
            problem = part_problem(part)
            problem = problem.replace("content part", said) if problem is not None else foreign_part(t.format, part, m.role)
            if problem is not None:
                return i, problem
    return None


def check_built(t: Transcript) -> None:
    """Raise DataError for what the readers refuse and a transcript built through the library may hold: a message
    whose role is none of ROLES, or whose content is none of a string, null or a list of parts, or holds an
    Anthropic call or result block (no API takes it, and no phase knows what it is), or a part the reader of its
    format refuses (`refused_part`)."""
    where = t.source or t.id or "<transcript>"
    bad = unknown_role(t)
    if bad is not None:
        i, role = bad
        raise DataError(where, None, f"message {i + 1}: unknown role {role!r} (expected one of {', '.join(ROLES)})")
    odd = unknown_content(t)
    if odd is not None:
        raise DataError(where, None, f"message {odd[0] + 1}: content must be a string, null or a list of parts, got {odd[1]}")
    block = call_block_content(t)
    if block is not None:
        raise DataError(where, None, f"message {block[0] + 1}: content holds {block[1]}")
    part = refused_part(t)
    if part is not None:
        raise DataError(where, None, f"message {part[0] + 1}: {part[1]}")


def other_content(extra: dict) -> bool:
    """An OpenAI assistant turn that says something outside `content` (its `extra`): a refusal, an audio reply."""
    refusal = extra.get("refusal")
    return (isinstance(refusal, str) and bool(refusal.strip())) or isinstance(extra.get("audio"), dict)


@functools.cache
def _blake2b() -> Any:
    try:
        from _blake2 import blake2b as new
    except ImportError:  # an interpreter built without it
        from hashlib import blake2b as new
    return new


def blake2b(data: bytes = b"", digest_size: int = 64) -> Any:
    """`hashlib.blake2b`, taken from CPython's own `_blake2` module, which hashlib's is: importing hashlib loads
    OpenSSL (~2.5-3.5 ms a process) for a hash it does not provide here."""
    return _blake2b()(data, digest_size=digest_size)


def digest(body: bytes, size: int = 8) -> str:
    """A short hex digest (BLAKE2b)."""
    return blake2b(body, size).hexdigest()


def fingerprint(m: Message) -> str:
    """A short stable digest of what a message says (role, text, calls, result id)."""
    return digest(orjson.dumps([m.role, m.text(), m.tool_call_id, [[c.id, c.name, c.arguments] for c in m.tool_calls]]))


def content_print(m: Message, canonical_arguments: bool = True) -> str:
    """`fingerprint` without call and result ids: formats that store none (ShareGPT, Hermes) number them by
    position when read, so a message read back from a compacted file has other ids than the original. A call's
    arguments count as the object a format that stores them as one (Anthropic's `input`) writes (`call_input`):
    '{"path": "a.py"}' reads back as '{"path":"a.py"}', '' as '{}' (`canonical_arguments=False`: as their text,
    as archives written before the twelfth session printed them)."""
    args = _canonical_arguments if canonical_arguments else str
    return digest(orjson.dumps([m.role, m.text(), [[c.name, args(c.arguments)] for c in m.tool_calls]]))


def transcript_print(messages: list[Message]) -> str:
    """One print of a transcript's messages, the same in every format: role, text with its white space collapsed
    (the ShareGPT writer strips a text's end), each call's name and arguments as an object. An archive's
    `unchanged` record holds it, and restore checks the output it is given against it."""
    rows = [[m.role, " ".join(m.text().split()), [[c.name, _canonical_arguments(c.arguments)] for c in m.tool_calls]] for m in messages]
    return digest(orjson.dumps(rows), 16)


def call_input(arguments: str) -> dict:
    """A call's arguments as a JSON object (a tool_use `input`): nothing -> {}; text that is not JSON ->
    {"_raw_arguments": text}; a list or a scalar -> {"arguments": value}."""
    try:
        value = orjson.loads(arguments) if arguments else {}
    except orjson.JSONDecodeError:
        return {"_raw_arguments": arguments}
    return value if isinstance(value, dict) else {"arguments": value}


def _canonical_arguments(arguments: str) -> str:
    return orjson.dumps(call_input(arguments)).decode()


def last_user_index(messages: list[Message]) -> int | None:
    """Index of the last ask of the person: a user message that is not a summary, not blank and not
    written by the harness (see harness.py); the last non-blank user message when every one is injected."""
    fallback = None
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.role != "user" or is_summary(m) or not _has_substance(m):
            continue
        if not is_injected(m):
            return i
        if fallback is None:
            fallback = i
    return fallback


def _has_substance(m: Message) -> bool:
    """Text that is not only whitespace, or a non-text part (an image)."""
    if m.text().strip():
        return True
    return isinstance(m.content, list) and any(isinstance(p, dict) and "text" not in p for p in m.content)


SUMMARY_MARKER = "[CONTEXT COMPACTION — REFERENCE ONLY]"
SUMMARY_END = "[END OF CONTEXT COMPACTION]"
SUMMARY_MERGED = "[The message continues below the summary.]"  # after a summary merged into the next message


# How agents open their own compaction summaries (Claude Code's isCompactSummary turn, Codex's handoff).
FOREIGN_SUMMARY_OPENINGS = (
    "This session is being continued from a previous conversation",
    "Another language model started to solve this problem and produced a summary",
)


def is_summary(m: Message) -> bool:
    head = m.text()[:400]
    return SUMMARY_MARKER in head or head.lstrip().startswith(FOREIGN_SUMMARY_OPENINGS)


def is_output(m: Message) -> bool:
    """A tool result, or an observation (Message.observation): output, not anyone's words."""
    return m.role == "tool" or m.observation


def is_demonstration(m: Message) -> bool:
    """SWE-agent's demonstration: a worked example of another task, shown to teach the interface. Its commands are
    the interface's; its names (files, functions, values) are that other task's."""
    x = m.extra
    return x.get("is_demo") is True or x.get("message_type") == "demonstration"


def mark_observations(messages: list[Message]) -> None:
    """Flag the harness's output in user turns (Message.observation, injected): the answer to a text action
    (harness.answers_action: SWE-agent's, mini-swe-agent's) and SWE-agent's demonstration (`is_demo`). Readers
    call it on the messages they parsed. (After an earlier compaction, an observation that follows the summary
    is not flagged: its action was summarized; a plan never starts the tail at one, see phases.plan.)"""
    prev = None
    for m in messages:
        if m.role == "user" and not m.observation and (is_demonstration(m) or answers_action(m, prev)):
            m.injected = m.observation = True
        prev = m


def blank_parts(parts: list) -> bool:
    """No part, or only text parts whose text is blank (`[{"type": "text", "text": ""}]`): both APIs reject it as
    empty. A part that holds its text under another key (LlamaFactory's "value") is not blank."""
    return all(is_blank_part(p) for p in parts)


def is_blank_part(p: Any) -> bool:
    return isinstance(p, dict) and p.get("type") in TEXT_TYPES and isinstance(p.get("text"), str) and not p["text"].strip()


def refused_system(system: Any) -> bool:
    """An Anthropic system prompt the API refuses: null, blank text, or only blank text blocks ("text content
    blocks must contain non-whitespace text"). An empty list of blocks it takes."""
    if isinstance(system, str):
        return not system.strip()
    return system is None or (isinstance(system, list) and bool(system) and blank_parts(system))
