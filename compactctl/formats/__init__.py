"""Format readers and writers at the edge, and detection.

A format is a module `formats/<name>.py` that provides what `FormatModule` says (`NAME`,
`CARRIER_KEYS`, `sniff(first_record) -> layout | None`, `read(records, source, layout, reader) ->
Iterator[Transcript]`), plus `write(transcript) -> Iterator[bytes]` (output lines without newlines)
unless it is read-only, and `dropped_records(transcript)` if it is a line log. `REGISTRY` lists every
format once, with what it provides; `get_format(name)` gives its `Format` (the module's members, typed,
the optional ones None when absent), and mypy checks each module against its protocol (below).
Detection is per file, from its first record (the first that can tell, when it holds only role and text);
`--from` forces a format.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import field
from importlib import import_module
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from ..errors import DataError, UsageError
from ..jsonl import (
    BOM,
    MAX_DEPTH,
    MAX_LINE_ENV,
    STDIN,
    UTF16,
    UTF16_BOMS,
    expand_inputs,
    iter_lines,
    max_line_bytes,
    open_input,
    parse_record,
)
from ..lean import dataclass
from ..model import MISSING, RESPONSES_TEXT, SYSTEM_ROLES, ToolCall, Transcript, is_value_part, other_content

Record = tuple[int, bytes, Any]  # (line number, raw line, parsed object)


class FormatModule(Protocol):
    """What every format module provides."""

    NAME: str
    CARRIER_KEYS: tuple[str, ...]  # record keys that hold the messages (dropped when converting to another format)

    def sniff(self, obj: dict, /) -> str | None:
        """The layout ("session" or "dataset") if this first record is in this format, else None."""
        ...

    def read(self, records: Iterator[Record], source: str, layout: str, reader: Reader, /) -> Iterator[Transcript]: ...


class WritableFormat(FormatModule, Protocol):
    def write(self, t: Transcript, /) -> Iterator[bytes]: ...


class LineLogFormat(WritableFormat, Protocol):
    def dropped_records(self, t: Transcript, /) -> int:
        """Lines never sent to a model (progress, snapshots, ...) that compaction dropped."""
        ...


@dataclass(frozen=True)
class Registered:
    """A format in the registry: its module's name and which optional members it provides."""

    name: str
    writes: bool = True  # False: read-only, written as OpenAI chat
    line_log: bool = False  # one record per line (formats/linelog.py): it has dropped_records
    # The module's sniff can only say yes to a record with one of these keys (None: any record). Detection
    # imports a module only for a record that has one: start-up pays for the formats it may be reading.
    # tests/test_format_registry.py checks them against the sniffers.
    needs: tuple[str, ...] | None = None


# Every format, once. Order matters: detection tries the most specific sniffers first.
REGISTRY: tuple[Registered, ...] = (
    Registered("claude_code", line_log=True, needs=("type",)),
    Registered("codex", line_log=True, needs=("type", "role")),
    Registered("gemini", writes=False, needs=("sessionId",)),
    Registered("openhands", writes=False, needs=("history", "action", "observation")),
    Registered("sharegpt", needs=("conversations", "messages")),
    Registered("anthropic", needs=("messages", "role", "system")),
    Registered("openai"),
)
FORMAT_NAMES = tuple(r.name for r in REGISTRY)

if TYPE_CHECKING:  # mypy checks each module against what the registry says it provides
    from . import anthropic, claude_code, codex, gemini, openai, openhands, sharegpt

    _read_only: list[FormatModule] = [gemini, openhands]
    _writable: list[WritableFormat] = [sharegpt, anthropic, openai]
    _line_logs: list[LineLogFormat] = [claude_code, codex]


@dataclass(frozen=True)
class Format:
    """A registered format's members (what get_format gives)."""

    name: str
    carrier_keys: tuple[str, ...]
    sniff: Callable[[dict], str | None]
    read: Callable[[Iterator[Record], str, str, Reader], Iterator[Transcript]]
    write: Callable[[Transcript], Iterator[bytes]] | None  # None: read-only
    dropped_records: Callable[[Transcript], int] | None  # None: not a line log

    @property
    def NAME(self) -> str:  # noqa: N802 (the module constant's name, for callers that read it)
        return self.name


_loaded: dict[str, Format] = {}


def get_format(name: str) -> Format:
    key = name.replace("-", "_")
    fmt = _loaded.get(key)
    if fmt is None:
        fmt = _loaded[key] = _load(key)
    return fmt


def _load(key: str) -> Format:
    entry = next((r for r in REGISTRY if r.name == key), None)
    if entry is None:
        raise UsageError(f"unknown format {key!r} (known: {', '.join(n.replace('_', '-') for n in FORMAT_NAMES)})")
    mod = import_module(f"{__name__}.{key}")  # imported when first used: start-up stays fast
    return Format(
        mod.NAME,
        mod.CARRIER_KEYS,
        mod.sniff,
        mod.read,
        mod.write if entry.writes else None,
        mod.dropped_records if entry.line_log else None,
    )


def detect(obj: Any) -> tuple[Format, str] | None:
    if not isinstance(obj, dict):
        return None
    for entry in REGISTRY:
        if entry.needs is not None and not any(k in obj for k in entry.needs):
            continue
        fmt = get_format(entry.name)
        layout = fmt.sniff(obj)
        if layout:
            return fmt, layout
    return None


class RawSink(Protocol):
    """Where rejected lines go: a JsonlSink (--rejects), or the runner's per-batch collector."""

    def add_raw(self, line: bytes) -> None: ...


@dataclass
class Reader:
    """Reading options and the policy for bad lines."""

    on_error: str = "fail"  # or "skip"
    fmt: str | None = None  # force a format
    layout: str | None = None  # force a layout
    rejects: RawSink | None = None
    warn: Callable[[str], None] = field(default=lambda msg: print(f"compactctl: {msg}", file=sys.stderr))
    skipped: int = 0
    # while the format is told from records read ahead: what the reader says of those lines, said (or raised) when
    # the record after them is taken, in input order (detect_stream)
    held: list[Callable[[], None]] | None = field(default=None, repr=False, compare=False)

    @contextlib.contextmanager
    def guard(self, lineno: int, raw: bytes):
        """Run a record's conversion; in skip mode a DataError skips that record (kept in rejects)."""
        try:
            yield
        except DataError as e:
            self.reject(e, raw)

    def reject(self, e: DataError, raw: bytes | None) -> None:
        """Raise `e` (--on-error fail), or skip its record: warn, count it, keep its raw bytes (if any) in rejects."""
        if self.held is not None:
            self.held.append(lambda: self.reject(e, raw))
            return
        if self.on_error != "skip":
            raise e
        self.skipped += 1
        self.warn(f"skipped {e}")
        if self.rejects is not None and raw is not None:
            self.rejects.add_raw(raw)

    def read_file(self, name: str) -> Iterator[Transcript]:
        source = "<stdin>" if name == STDIN else name
        stream = open_input(name)
        try:
            records = self._json_records(stream, source) if name.endswith((".json", ".traj")) else self._records(stream, source)
            found = self.detect_records(records, source)
            if found is not None:
                mod, layout, records = found
                yield from mod.read(records, source, layout, self)
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()

    def _records(self, stream, source: str) -> Iterator[Record]:
        """A stream's records: JSONL, line by line as it comes; or, when its first line opens a JSON document that
        line does not close (a pretty-printed object, an array: what a .json file holds, on stdin or in a file named
        otherwise), the document's, read whole as a .json file is. JSONL is never held in memory."""
        head: list[bytes] = []
        for line in stream:
            head.append(line)
            if line.removeprefix(BOM).strip():
                break
        if not _opens_document(head[-1] if head else b""):
            yield from self._line_records(itertools.chain(head, stream), source)
            return
        yield from self._document(b"".join(head) + stream.read(), source, lines_if_bad=True)

    def _line_records(self, stream, source: str) -> Iterator[Record]:
        limit = max_line_bytes()
        for lineno, raw in iter_lines(stream):
            try:
                if limit and len(raw) > limit:
                    raise DataError(source, lineno, _over_limit(len(raw), limit))
                obj, raw = parse_record(raw, source, lineno, self.warn)
                if not isinstance(obj, dict):
                    raise DataError(source, lineno, f"expected a JSON object, got {_json_kind(obj)}")
            except DataError as e:
                self.reject(e, raw)
                continue
            yield lineno, raw, obj

    def _json_records(self, stream, source: str) -> Iterator[Record]:
        """A whole-file JSON document (.json, .traj): an array gives one record per element (numbered
        from 1 in errors), an object one record."""
        yield from self._document(stream.read(), source)

    def _document(self, data: bytes, source: str, lines_if_bad: bool = False) -> Iterator[Record]:
        """The records of one JSON document (`_json_records`). With `lines_if_bad`, a document that does not parse
        but has a later line that is a JSON object alone is JSONL whose first line is broken (cut by a crash): it is
        read line by line, as ever, each bad line named."""
        data = data.removeprefix(BOM)
        limit = max_line_bytes()
        if limit and len(data) > limit and not (lines_if_bad and _object_line_after_first(data)):
            # parsed whole, as one line is: held to the line limit, before it is parsed (to rejects whole, with skip)
            self.reject(DataError(source, None, _over_limit(len(data), limit, data)), data.strip(b"\r\n"))
            return
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as e:
            if lines_if_bad and _object_line_after_first(data):
                yield from self._line_records(io.BytesIO(data), source)
                return
            # with --on-error skip: the whole document to rejects, as it is
            what = UTF16 if data.startswith(UTF16_BOMS) else f"invalid JSON: {e.msg}"
            self.reject(DataError(source, getattr(e, "lineno", 1), what), data.strip(b"\r\n") or None)
            return
        items = doc if isinstance(doc, list) else [doc]
        for k, obj in enumerate(items, 1):
            if not isinstance(obj, dict):
                self.reject(DataError(source, k, f"element {k} is not a JSON object"), orjson.dumps(obj, default=str))
                continue
            try:
                raw = orjson.dumps(obj)
            except TypeError:  # deeper than orjson writes (it reads deeper)
                self.reject(
                    DataError(source, k, f"the record is nested deeper than {MAX_DEPTH} levels: it cannot be written back"),
                    json.dumps(obj).encode(),
                )
                continue
            yield k, raw, obj

    def detect_records(self, records: Iterator[Record], source: str) -> tuple[Any, str, Iterator[Record]] | None:
        """detect_stream from the first record that tells the format: with --on-error skip, a first record that
        cannot tell is rejected like any bad line and the next one tried (None: no record told)."""
        for first in records:
            try:
                return self.detect_stream(first, records, source)
            except DataError as e:  # the format cannot be told from this record
                self.reject(e, first[1])
        return None

    def detect_stream(self, first: Record, records: Iterator[Record], source: str) -> tuple[Any, str, Iterator[Record]]:
        """The format and layout of a file from its first record, and its records again. A first record every chat
        format reads alike (role and text only) cannot tell OpenAI chat from Anthropic's messages: the first
        record that can, within the look-ahead, decides (an Anthropic session without a system line was read
        as OpenAI chat, its tool blocks as text)."""
        mod, layout = self._detect(first, source)
        if self.fmt or not _plain(first[2]):
            return mod, layout, _chain(first, records)
        ahead: list[tuple[list[Callable[[], None]], Record]] = [([], first)]
        size, warn = len(first[1]), self.warn
        self.held = []
        self.warn = lambda msg: self.held.append(lambda: warn(msg)) if self.held is not None else warn(msg)
        try:
            for rec in records:
                ahead.append((self.held, rec))
                self.held = []
                size += len(rec[1])
                if not _plain(rec[2]):
                    found = detect(rec[2])
                    if found is not None and (self.layout or found[1]) == layout:
                        mod = found[0]
                    break
                if len(ahead) >= LOOKAHEAD_RECORDS or size >= LOOKAHEAD_BYTES:
                    break
            after = self.held  # of lines after the last record (the input ended)
        finally:
            self.held, self.warn = None, warn
        return mod, layout, itertools.chain(_replayed(ahead, after), records)

    def _detect(self, first: Record, source: str):
        lineno, _, obj = first
        if self.fmt:
            mod = get_format(self.fmt)
            layout = self.layout or mod.sniff(obj) or ("dataset" if "messages" in obj or "conversations" in obj else "session")
            return mod, layout
        found = detect(obj)
        if found is None:
            keys = ", ".join(list(obj)[:6]) if isinstance(obj, dict) else ""
            said = f"keys: {keys}" if keys else ("an empty object" if isinstance(obj, dict) else f"a JSON {type(obj).__name__}")
            raise DataError(source, lineno, f"cannot tell the transcript format from this record ({said}); use --from")
        mod, layout = found
        return mod, self.layout or layout

    def read(self, paths: Iterable[str]) -> Iterator[Transcript]:
        for name in expand_inputs(paths):
            yield from self.read_file(name)


LOOKAHEAD_RECORDS = 1000  # records read ahead to tell the format when the first ones cannot
LOOKAHEAD_BYTES = 16 << 20


def _plain_message(m: Any) -> bool:
    if not isinstance(m, dict) or not set(m) <= {"role", "content", "name"} or not isinstance(m.get("role"), str):
        return False
    c = m.get("content")
    return isinstance(c, str) or (isinstance(c, list) and all(isinstance(p, dict) and p.get("type") == "text" for p in c))


def _plain(obj: dict) -> bool:
    """A message of role and text only, or a dataset record of such messages (no system field): OpenAI chat and
    Anthropic's messages read it alike."""
    if "role" in obj:
        return _plain_message(obj)
    msgs = obj.get("messages")
    return isinstance(msgs, list) and "system" not in obj and all(_plain_message(m) for m in msgs)


def _opens_document(line: bytes) -> bool:
    """A first line that starts a JSON document it does not end: an array (never a JSONL record), or an object
    not closed on this line (a pretty-printed one; or a JSONL record cut short, which `_document` tells apart)."""
    s = line.removeprefix(BOM).strip()
    return s.startswith(b"[") or (s.startswith(b"{") and not s.endswith(b"}"))


def _over_limit(size: int, limit: int, document: bytes | None = None) -> str:
    """What $COMPACTCTL_MAX_LINE_MB refuses: one line (one record), or a JSON document, which is parsed whole as a
    line is (a .traj of N MB takes what a line of N MB does)."""
    what, unit = ("the JSON document", "for a document, which is read whole") if document is not None else ("the line", "for one record")
    lift = f"set ${MAX_LINE_ENV}=0 to lift it; it needs ~13x its size in memory"
    if document is not None and document.lstrip().startswith(b"["):  # records in an array: as JSONL, read one by one
        lift += "; or write its elements as JSONL, read record by record: jq -c '.[]'"
    return f"{what} is {size:,} bytes, over the limit of {limit / (1 << 20):g} MB ({limit:,} bytes) {unit} ({lift})"


def _object_line_after_first(data: bytes) -> bool:
    """Whether a line after the first non-blank one is a JSON object by itself (a JSONL record)."""
    lines = (x for x in data.split(b"\n") if x.strip())
    next(lines, None)
    for x in lines:
        with contextlib.suppress(orjson.JSONDecodeError):
            if isinstance(orjson.loads(x), dict):
                return True
    return False


def _replayed(ahead: list[tuple[list[Callable[[], None]], Record]], after: list[Callable[[], None]]) -> Iterator[Record]:
    """The records read ahead again, each after what the reader held back about the lines before it (a bad line
    skipped, or the error that stops the run): said when the record is taken, as if it had not been read ahead."""
    for held, rec in ahead:
        for say in held:
            say()
        yield rec
    for say in after:
        say()


def _chain(first: Record, rest: Iterator[Record]) -> Iterator[Record]:
    yield first
    yield from rest


def _json_kind(v: Any) -> str:
    return {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}.get(type(v), "null")


def written_as(fmt: str, to: str | None = None) -> str:
    """The format `write` writes a transcript read as `fmt` in: `to`, else its own, else (read-only) OpenAI chat."""
    if to:
        return get_format(to).name
    return fmt if get_format(fmt).write is not None else "openai"


def write(t: Transcript, to: str | None = None, lost: Counter | None = None) -> Iterator[bytes]:
    """Output lines for one transcript, in its own format or converted with `to`. Formats that are
    read-only (Gemini, OpenHands) are written as OpenAI chat unless `to` says otherwise. `lost` counts, by
    kind, what the target could not hold as it was (a part it does not take, a system prompt moved)."""
    source = get_format(t.format)
    if not to and source.write is None:
        to = "openai"
    if to and to.replace("-", "_") != t.format:
        target = get_format(to)
        if target.write is None:
            writable = ", ".join(r.name.replace("_", "-") for r in REGISTRY if r.writes)
            raise UsageError(f"{target.name.replace('_', '-')} is read-only: it cannot be written (--to one of {writable})")
        from . import toolspec

        meta = {k: v for k, v in (t.metadata or {}).items() if k not in source.carrier_keys}
        meta = toolspec.convert(meta, source.name, target.name, lost)
        if lost is not None:
            _count_record_keys(meta, target.name, lost)
            _count_native(t, target.name, lost)
        t = t.evolve(format=target.name, native=None, raw=None, metadata=meta)
        t.messages = [_portable(m, target.name, source.name, lost) for m in t.messages]  # origins and internals are the old format's
        if lost is not None:
            _count_moved_system(t.messages, target.name, lost)
        if target.name == "sharegpt":
            t.messages = one_system_turn(t.messages)
        t.messages = ids_for(t.messages, target.name)
        return target.write(t)
    if source.write is None:  # to names the read-only input format itself
        raise UsageError(f"{source.name.replace('_', '-')} is read-only: it cannot be written")
    return source.write(t)


def _count_native(t: Transcript, target: str, lost: Counter) -> None:
    """What of the source format's own lines no message holds, and so no other format gets: Codex's reasoning
    items with only encrypted content (no summary text stands for them), and its session_meta line."""
    if t.format == "codex":
        from .codex import ENCRYPTED_ONLY, encrypted_reasoning, session_meta_lines

        n = encrypted_reasoning(t)
        if n:
            lost[ENCRYPTED_ONLY] += n
        n = session_meta_lines(t)
        if n:
            where = target.replace("_", "-")
            lost[f"session_meta line (the rollout's session id, cwd and CLI version: {where} has no place for them; left out)"] += n


def _count_record_keys(meta: dict, target: str, lost: Counter) -> None:
    """A Claude Code or Codex session file holds messages only: a dataset record's other keys are left out."""
    if any(r.line_log and r.name == target for r in REGISTRY):
        for key in meta:
            lost[f"record key ({key}: a {target.replace('_', '-')} session has no place for it; left out)"] += 1


def read_back(lines: list[bytes], fmt: str, layout: str, source: str) -> list[Transcript]:
    """The transcripts `lines` (written as `fmt`, in `layout`) read back, as a later command reads them."""
    records = [(k, raw, orjson.loads(raw)) for k, raw in enumerate(lines, 1)]
    return list(get_format(fmt).read(iter(records), source, layout, Reader()))


def ported(m: Any, target: str, source: str) -> Any:
    """A message read as `source` as `convert --to target` writes it (restore: an archived original)."""
    return _portable(m, target, source)


def _portable(m: Any, target: str, source: str, lost: Counter | None = None) -> Any:
    """`m` for another format: a changed copy (its origin is the old format's), its content parts in the forms the
    target takes (formats/parts.py; a part it cannot take becomes a line that says what was there, counted in
    `lost`). OpenAI chat takes no internals of the source format (`_`-keys: Claude Code's thinking blocks, Hermes's
    raw calls), no keys of another format's tool calls (Claude Code's `caller`), and no empty part list beside
    calls; Anthropic no keys of another API's calls (a streamed call's `index`): both APIs reject what they do
    not know."""
    from . import parts

    same = parts.FAMILY.get(source) == parts.FAMILY.get(target)
    content = m.content
    changes: dict[str, Any] = {}
    if isinstance(content, list) and (not same or _foreign_parts(content)):  # within an API family, only text parts move
        changes["content"] = [parts.port(p, target, m.role, lost) if not same or _foreign_text(p) else p for p in content]
    if target == "openai":
        _to_openai(m, changes)
    elif target in ("anthropic", "claude_code"):  # Claude Code's lines hold Messages API messages
        _to_anthropic(m, changes, same)
    elif target == "codex" and m.role == "assistant" and not m.text().strip() and not m.tool_calls and other_content(m.extra):
        changes["content"] = _said_elsewhere(m)
    if lost is not None and not same:
        _count_unsaid(m, parts.FAMILY.get(target), lost)
    if lost is not None and target in ROLE_AND_CONTENT:
        _count_message_keys(m, target, lost)
    return m.evolve(**changes) if changes else m


ROLE_AND_CONTENT = ("anthropic", "claude_code", "codex")  # targets whose messages (items) hold no keys of their own


def _count_message_keys(m: Any, target: str, lost: Counter) -> None:
    """A message's keys of its own (SWE-agent's `thought` and `action`, OpenAI's participant `name`): an Anthropic
    message holds its role and content only, a Codex item what the Responses API reads; a null loses nothing.
    `_`-keys are the reader's internals (the source format's, or carried as the target's own)."""
    keys = ["name"] if m.name and m.role != "tool" else []  # a tool result's name is its call's, which goes over
    keys += [k for k, v in m.extra.items() if not k.startswith("_") and v is not None]
    for key in keys:
        lost[f"message key ({key}: {target.replace('_', '-')} messages have no place for it; left out)"] += 1


THINKING_SIGNATURE = "thinking block's signature (its text is carried as reasoning; the signature Anthropic needs to take it back is not)"


def _count_unsaid(m: Any, family: str | None, lost: Counter) -> None:
    """What of `m` a target of another API family has no place for (said by the run, not written)."""
    if m.role == "assistant" and m.reasoning and not m.extra.get("_thinking_blocks") and family == "anthropic":
        lost["reasoning (Anthropic replays only its own signed thinking)"] += 1
    elif m.role == "assistant" and m.reasoning and family == "responses":
        lost["reasoning (the Responses API replays only its own reasoning items)"] += 1
    if m.role == "tool" and m.is_error and family != "anthropic":
        lost["error flag of a tool result (is_error: the target has none; its text says what failed)"] += 1
    blocks = [b for b in m.extra.get("_thinking_blocks", ()) if isinstance(b, dict)]
    redacted = sum(b.get("type") == "redacted_thinking" for b in blocks)
    if redacted and family != "anthropic":  # no reasoning text stands for it, unlike signed thinking
        lost["redacted thinking block (encrypted: only Anthropic reads it)"] += redacted
    signed = sum(b.get("type") == "thinking" and bool(b.get("signature")) for b in blocks)
    if signed and family in ("chat", "text"):  # the text goes as reasoning (the Responses API's: said lost above)
        lost[THINKING_SIGNATURE] += signed


def _count_moved_system(msgs: list, target: str, lost: Counter) -> None:
    """System messages a target cannot hold where they stand: Anthropic has one system prompt and ShareGPT one
    system turn, first (a later one joins it), Claude Code's files none (each is written as a meta user line)."""
    roles = [m.role for m in msgs]
    if target == "claude_code":  # an empty prompt is written as nothing (claude_code._fresh): not a line to count
        n = sum(m.role in SYSTEM_ROLES and bool(m.text().strip()) for m in msgs)
        if n:
            lost["system message (written as a meta user line: Claude Code's files hold no system prompt)"] += n
    elif target in ("anthropic", "sharegpt"):
        first = next((i for i, r in enumerate(roles) if r not in SYSTEM_ROLES), len(roles))
        n = sum(r in SYSTEM_ROLES for r in roles[first:])
        if n:
            lost["system message from the middle of the conversation (joined to the system prompt)"] += n


ONE_PROMPT = ("anthropic", "sharegpt")  # targets with one system prompt, first: Anthropic's `system`, ShareGPT's turn


def _joined_prompts(msgs: list, target: str) -> list:
    """The system and developer messages a conversion to `target` does not write as they are, because it joins
    them into its one system prompt: all of them, unless there is one, a system message, first."""
    prompts = [m for m in msgs if m.role in SYSTEM_ROLES]
    if target not in ONE_PROMPT or not prompts or (len(prompts) == 1 and msgs[0] is prompts[0] and prompts[0].role == "system"):
        return []
    return prompts


def one_system_turn(msgs: list) -> list:
    """ShareGPT's one system turn, first (LlamaFactory's loaders drop a record with a system turn anywhere else):
    every system message joined into it, text after text, as into Anthropic's one system prompt. A conversion to
    ShareGPT writes it so, and a restore of one (a ShareGPT record of its own keeps its turns where they are)."""
    prompts = _joined_prompts(msgs, "sharegpt")
    if not prompts:
        return msgs
    text = "\n\n".join(x for m in prompts if (x := m.text()))
    return [prompts[0].evolve(role="system", content=text), *(m for m in msgs if m.role not in SYSTEM_ROLES)]


def _to_openai(m: Any, changes: dict[str, Any]) -> None:
    changes["extra"] = {k: v for k, v in m.extra.items() if not k.startswith("_")}
    changes["tool_calls"] = [ToolCall(c.id, c.name, c.arguments) for c in m.tool_calls]
    if changes.get("content", m.content) == []:  # OpenAI refuses an empty part list (thinking alone was read as none)
        changes["content"] = None if m.tool_calls else ""


def _to_anthropic(m: Any, changes: dict[str, Any], same: bool) -> None:
    # A message holds its role and content only (the API refuses other keys: OpenAI's `refusal`, SWE-agent's `action`).
    changes["extra"] = {k: v for k, v in m.extra.items() if k.startswith("_")}
    if not same and m.tool_calls:  # another API's keys on a call (a streamed call's `index`): not a tool_use block's
        changes["tool_calls"] = [
            ToolCall(c.id, c.name, c.arguments, {k: v for k, v in c.extra.items() if k.startswith("_")}) for c in m.tool_calls
        ]
    if m.role == "tool" and m.content in (None, MISSING):
        changes["content"] = ""  # a tool_result's content is text or blocks, never null
    if m.role == "assistant" and not m.text().strip() and not m.tool_calls and other_content(m.extra):
        changes["content"] = _said_elsewhere(m)


def _said_elsewhere(m: Any) -> str:
    """What an assistant turn said outside its content (a refusal, an audio reply), as text."""
    refusal = m.extra.get("refusal")
    return refusal if isinstance(refusal, str) and refusal.strip() else "[an audio reply]"


def _foreign_text(p: Any) -> bool:
    """A text part another format types or keys otherwise: Codex's types, LlamaFactory's "value"."""
    return isinstance(p, dict) and (p.get("type") in RESPONSES_TEXT or is_value_part(p))


def _foreign_parts(content: Any) -> bool:
    return isinstance(content, list) and any(_foreign_text(p) for p in content)


def ids_for(messages: list, target: str) -> list:
    """`messages` with the call ids `convert --to target` gives them: an id longer than the 40 characters OpenAI takes
    renamed for every target, and for Anthropic's API (and Claude Code) also one it refuses; a call without one
    given one where results link to calls by id only (not OpenAI chat, whose legacy `function_call` has none)."""
    return _with_ids(messages, legacy=target != "openai", strict=target in ("anthropic", "claude_code"))


def _with_ids(messages: list, legacy: bool = True, strict: bool = False) -> list:
    """Calls given the ids `_ids_to_give` names, and their results too (OpenAI takes a reused id; results pair with
    the nearest call of their id, and keep pairing so)."""
    from ..model import LEGACY, ToolCall
    from ..pairs import match

    renamed = _ids_to_give(messages, legacy, strict)
    if not renamed:
        return messages
    pairs, _ = match(messages)
    result_of = {(p.call_msg, p.call_pos): p.result for p in pairs}
    out = list(messages)
    for (i, pos), cid in renamed.items():
        c = out[i].tool_calls[pos]
        calls = list(out[i].tool_calls)
        calls[pos] = ToolCall(cid, c.name, c.arguments, {k: v for k, v in c.extra.items() if k != LEGACY})
        out[i] = out[i].evolve(tool_calls=calls)
        r = result_of.get((i, pos))
        if r is not None:
            out[r] = out[r].evolve(tool_call_id=cid, extra={k: v for k, v in out[r].extra.items() if k != LEGACY})
    return out


def _ids_to_give(messages: list, legacy: bool, strict: bool) -> dict[tuple[int, int], str]:
    """{(message, position): new id}: with `legacy`, a call without an id (a legacy OpenAI `function_call`) gets one,
    for formats that link results to calls by id only (Anthropic tool_use, Codex call_id); an id over 40 characters
    (Gemini CLI's run to 45: OpenAI refuses them) gets a new one, named as `repair` names it (`pairs.NewIds`); with
    `strict` (Anthropic's API), so does an id reused from an earlier call or holding other than letters, digits,
    `_` and `-`."""
    from ..model import LEGACY
    from ..pairs import NewIds

    ids = NewIds({c.id for m in messages for c in m.tool_calls if isinstance(c.id, str)})
    seen: set = set()
    out: dict[tuple[int, int], str] = {}
    for i, m in enumerate(messages):
        for pos, c in enumerate(m.tool_calls):
            cid = c.id
            if cid is None and legacy:
                cid = f"call_legacy_{i}_{pos}"
            elif isinstance(cid, str) and (legacy or not c.extra.get(LEGACY)) and _renamed(cid, strict, seen):
                cid = ids.new(cid)
            if cid != c.id:
                out[(i, pos)] = cid
                ids.taken.add(cid)
            seen.add(cid)
    return out


def _renamed(cid: str, strict: bool, seen: set) -> bool:
    """Whether a conversion renames this call id: over 40 characters for any target; for Anthropic's API (`strict`)
    also one an earlier call used, or holding other than letters, digits, `_` and `-`."""
    from ..pairs import VALID_ID

    return len(cid) > 40 or (strict and (cid in seen or not VALID_ID.fullmatch(cid)))
