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
import itertools
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from ..errors import DataError, UsageError
from ..jsonl import MAX_DEPTH, MAX_LINE_ENV, STDIN, expand_inputs, iter_lines, max_line_bytes, open_input, parse_record
from ..model import MISSING, ToolCall, Transcript, is_value_part, other_content

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

    @contextlib.contextmanager
    def guard(self, lineno: int, raw: bytes):
        """Run a record's conversion; in skip mode a DataError skips that record (kept in rejects)."""
        try:
            yield
        except DataError as e:
            self.reject(e, raw)

    def reject(self, e: DataError, raw: bytes | None) -> None:
        """Raise `e` (--on-error fail), or skip its record: warn, count it, keep its raw bytes (if any) in rejects."""
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
        limit = max_line_bytes()
        for lineno, raw in iter_lines(stream):
            try:
                if limit and len(raw) > limit:
                    raise DataError(
                        source,
                        lineno,
                        f"the line is {len(raw) / (1 << 20):,.0f} MB, over the {limit / (1 << 20):,.0f} MB "
                        f"limit for one record (set ${MAX_LINE_ENV}=0 to lift it; it needs ~13x its size in memory)",
                    )
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
        data = stream.read()
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as e:  # with --on-error skip: the whole file to rejects, as it is
            self.reject(DataError(source, getattr(e, "lineno", 1), f"invalid JSON: {e.msg}"), data.strip(b"\r\n") or None)
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
        ahead, size = [first], len(first[1])
        for rec in records:
            ahead.append(rec)
            size += len(rec[1])
            if not _plain(rec[2]):
                found = detect(rec[2])
                if found is not None and (self.layout or found[1]) == layout:
                    mod = found[0]
                break
            if len(ahead) >= LOOKAHEAD_RECORDS or size >= LOOKAHEAD_BYTES:
                break
        return mod, layout, itertools.chain(ahead, records)

    def _detect(self, first: Record, source: str):
        lineno, _, obj = first
        if self.fmt:
            mod = get_format(self.fmt)
            layout = self.layout or mod.sniff(obj) or ("dataset" if "messages" in obj or "conversations" in obj else "session")
            return mod, layout
        found = detect(obj)
        if found is None:
            keys = ", ".join(list(obj)[:6])
            raise DataError(source, lineno, f"cannot tell the transcript format from this record (keys: {keys}); use --from")
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


def write(t: Transcript, to: str | None = None) -> Iterator[bytes]:
    """Output lines for one transcript, in its own format or converted with `to`. Formats that are
    read-only (Gemini, OpenHands) are written as OpenAI chat unless `to` says otherwise."""
    source = get_format(t.format)
    if not to and source.write is None:
        to = "openai"
    if to and to.replace("-", "_") != t.format:
        target = get_format(to)
        if target.write is None:
            writable = ", ".join(r.name.replace("_", "-") for r in REGISTRY if r.writes)
            raise UsageError(f"{target.name.replace('_', '-')} is read-only: it cannot be written (--to one of {writable})")
        meta = {k: v for k, v in (t.metadata or {}).items() if k not in source.carrier_keys}
        t = t.evolve(format=target.name, native=None, raw=None, metadata=meta)
        t.messages = [_portable(m, target.name) for m in t.messages]  # origins and internals are the old format's
        if target.name != "openai":
            t.messages = _with_ids(t.messages)
        return target.write(t)
    if source.write is None:  # to names the read-only input format itself
        raise UsageError(f"{source.name.replace('_', '-')} is read-only: it cannot be written")
    return source.write(t)


TEXT_PARTS = ("input_text", "output_text")  # Codex's text parts: "text" in OpenAI chat and Anthropic


def _portable(m: Any, target: str) -> Any:
    """`m` for another format: a changed copy (its origin is the old format's), its text parts in the target's
    type. OpenAI chat takes no internals of the source format (`_`-keys: Claude Code's thinking blocks, Hermes's
    raw calls), no keys of another format's tool calls (Claude Code's `caller`), and no empty part list beside
    calls: both APIs reject what they do not know."""
    retype = target != "codex" and _foreign_parts(m.content)  # Codex writes its own part types
    images = target in ("openai", "anthropic") and _foreign_images(m.content, target)
    if m.origin is None and target not in ("openai", "anthropic", "claude_code") and not retype:
        return m
    changes: dict[str, Any] = {}
    if retype or images:
        changes["content"] = [_part_for(p, target, m.role) for p in m.content]
    if target == "openai":
        _to_openai(m, changes)
    elif target in ("anthropic", "claude_code"):  # Claude Code's lines hold Messages API messages
        _to_anthropic(m, changes)
    return m.evolve(**changes) if changes else m


def _to_openai(m: Any, changes: dict[str, Any]) -> None:
    changes["extra"] = {k: v for k, v in m.extra.items() if not k.startswith("_")}
    changes["tool_calls"] = [ToolCall(c.id, c.name, c.arguments) for c in m.tool_calls]
    if m.tool_calls and changes.get("content", m.content) == []:
        changes["content"] = None


def _to_anthropic(m: Any, changes: dict[str, Any]) -> None:
    # A message holds its role and content only (the API refuses other keys: OpenAI's `refusal`, SWE-agent's `action`).
    changes["extra"] = {k: v for k, v in m.extra.items() if k.startswith("_")}
    if m.role == "tool" and m.content in (None, MISSING):
        changes["content"] = ""  # a tool_result's content is text or blocks, never null
    if m.role == "assistant" and not m.text().strip() and not m.tool_calls and other_content(m.extra):
        refusal = m.extra.get("refusal")  # what it said outside content, as text
        changes["content"] = refusal if isinstance(refusal, str) and refusal.strip() else "[an audio reply]"


def _foreign_images(content: Any, target: str) -> bool:
    """An image part in the other API's form (OpenAI `image_url`, Anthropic `image`)."""
    other = ("image", "input_image") if target == "openai" else ("image_url", "input_image")
    return isinstance(content, list) and any(isinstance(p, dict) and p.get("type") in other for p in content)


def _part_for(p: Any, target: str, role: str) -> Any:
    """A content part in the target's form: Codex text parts as "text"; an image as the target API takes it (an
    OpenAI tool result holds text only: the image becomes a line that says it was there)."""
    if _is_text_part(p):
        return {"type": "text", "text": p.get("text", p.get("value", ""))}
    if not isinstance(p, dict):
        return p
    if p.get("type") == "input_image" and target in ("openai", "anthropic"):  # Codex: {"type": "input_image", "image_url": "data:..."}
        url = p.get("image_url")
        p = {"type": "image_url", "image_url": {"url": url if isinstance(url, str) else ""}}
        if target == "openai":
            return p
    if target == "anthropic" and p.get("type") == "image_url":
        return _anthropic_image(p)
    if target == "openai" and p.get("type") == "image":
        return _openai_image(p, role)
    return p


def _anthropic_image(p: dict) -> dict:
    """An OpenAI `image_url` part as an Anthropic `image` block (a data URL as base64, any other as a URL)."""
    url = p.get("image_url", {}).get("url", "") if isinstance(p.get("image_url"), dict) else str(p.get("image_url", ""))
    head, _, data = url.partition(";base64,")
    if url.startswith("data:") and data:
        return {"type": "image", "source": {"type": "base64", "media_type": head[5:], "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _openai_image(p: dict, role: str) -> dict:
    """An Anthropic `image` block as an OpenAI `image_url` part; in a tool result (text only), or from a source
    OpenAI cannot take (an uploaded file), a line that says it was there."""
    src: dict = p["source"] if isinstance(p.get("source"), dict) else {}
    if src.get("type") == "base64" and role != "tool":
        return {"type": "image_url", "image_url": {"url": f"data:{src.get('media_type', 'image/png')};base64,{src.get('data', '')}"}}
    if src.get("type") == "url" and src.get("url") and role != "tool":
        return {"type": "image_url", "image_url": {"url": src["url"]}}
    return {"type": "text", "text": f"[image: {src.get('media_type') or src.get('url') or src.get('file_id') or 'not carried over'}]"}


def _is_text_part(p: Any) -> bool:
    """A text part another format types or keys otherwise: Codex's types, LlamaFactory's "value"."""
    return isinstance(p, dict) and (p.get("type") in TEXT_PARTS or is_value_part(p))


def _foreign_parts(content: Any) -> bool:
    return isinstance(content, list) and any(_is_text_part(p) for p in content)


def _with_ids(messages: list) -> list:
    """Calls without an id (legacy OpenAI `function_call`s) given one, and their results too, for
    formats that link results to calls by id only (Anthropic tool_use, Codex call_id)."""
    from ..model import LEGACY, ToolCall
    from ..pairs import match

    if not any(c.id is None for m in messages for c in m.tool_calls):
        return messages
    pairs, _ = match(messages)
    result_of = {(p.call_msg, p.call_pos): p.result for p in pairs}
    out = list(messages)
    for i, m in enumerate(messages):
        if not any(c.id is None for c in m.tool_calls):
            continue
        calls = []
        for pos, c in enumerate(m.tool_calls):
            if c.id is None:
                cid = f"call_legacy_{i}_{pos}"
                c = ToolCall(cid, c.name, c.arguments, {k: v for k, v in c.extra.items() if k != LEGACY})
                r = result_of.get((i, pos))
                if r is not None:
                    out[r] = out[r].evolve(tool_call_id=cid, extra={k: v for k, v in out[r].extra.items() if k != LEGACY})
            calls.append(c)
        out[i] = out[i].evolve(tool_calls=calls)
    return out
