"""Format readers and writers at the edge, and detection.

A format is a module `formats/<name>.py` that provides what `FormatModule` says (`NAME`,
`CARRIER_KEYS`, `sniff(first_record) -> layout | None`, `read(records, source, layout, reader) ->
Iterator[Transcript]`), plus `write(transcript) -> Iterator[bytes]` (output lines without newlines)
unless it is read-only, and `dropped_records(transcript)` if it is a line log. `REGISTRY` lists every
format once, with what it provides; `get_format(name)` gives its `Format` (the module's members, typed,
the optional ones None when absent), and mypy checks each module against its protocol (below).
Detection is per file, from its first record; `--from` forces a format.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from ..errors import DataError, UsageError
from ..jsonl import MAX_LINE_ENV, STDIN, expand_inputs, iter_lines, max_line_bytes, open_input, parse_record
from ..model import Transcript

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


# Every format, once. Order matters: detection tries the most specific sniffers first.
REGISTRY: tuple[Registered, ...] = (
    Registered("claude_code", line_log=True),
    Registered("codex", line_log=True),
    Registered("gemini", writes=False),
    Registered("openhands", writes=False),
    Registered("sharegpt"),
    Registered("anthropic"),
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
    for name in FORMAT_NAMES:
        fmt = get_format(name)
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

    def reject(self, e: DataError, raw: bytes) -> None:
        if self.on_error != "skip":
            raise e
        self.skipped += 1
        self.warn(f"skipped {e}")
        if self.rejects is not None:
            self.rejects.add_raw(raw)

    def read_file(self, name: str) -> Iterator[Transcript]:
        source = "<stdin>" if name == STDIN else name
        stream = open_input(name)
        try:
            records = self._json_records(stream, source) if name.endswith((".json", ".traj")) else self._records(stream, source)
            first = next(records, None)
            if first is None:
                return
            mod, layout = self._detect(first, source)
            yield from mod.read(_chain(first, records), source, layout, self)
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
        except orjson.JSONDecodeError as e:
            raise DataError(source, getattr(e, "lineno", 1), f"invalid JSON: {e.msg}") from None
        items = doc if isinstance(doc, list) else [doc]
        for k, obj in enumerate(items, 1):
            if not isinstance(obj, dict):
                self.reject(DataError(source, k, f"element {k} is not a JSON object"), orjson.dumps(obj, default=str))
                continue
            yield k, orjson.dumps(obj), obj

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


def _chain(first: Record, rest: Iterator[Record]) -> Iterator[Record]:
    yield first
    yield from rest


def _json_kind(v: Any) -> str:
    return {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}.get(type(v), "null")


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
        t.messages = [m.evolve() if m.origin is not None else m for m in t.messages]  # origins are the old format's
        if target.name != "openai":
            t.messages = _with_ids(t.messages)
        return target.write(t)
    if source.write is None:  # to names the read-only input format itself
        raise UsageError(f"{source.name.replace('_', '-')} is read-only: it cannot be written")
    return source.write(t)


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
