"""Reading input files into transcripts: JSONL line by line, or a whole JSON document; the format told from the
first record that can tell it (read ahead when the first ones cannot); bad lines failed on or skipped (to rejects).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import field
from typing import Any, Protocol

import orjson

from ..errors import DataError
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
from ..model import Transcript
from .registry import Record, detect, get_format


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
    # the line of the current file its format was told from (detect_stream); None when --from gave it. A record of
    # another format in a file told so is a mixed file (registry.foreign), not one the wrong --from was given for.
    told: int | None = None
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
                raw = bytes(memoryview(orjson.dumps(obj)))  # a copy of its size: orjson's own holds >= 4 KB, ~2x
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
        self.told = None if self.fmt else first[0]
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
                        mod, self.told = found[0], rec[0]
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


# keys the OpenAI chat reader reads and the Anthropic one does not (a Responses item's "type" too): a message with
# none of them reads alike in both, whatever else it holds (a "timestamp", an "id": kept by both as they came)
_TOLD_APART = ("tool_calls", "tool_call_id", "tool_call_ids", "function_call", "reasoning_content", "_compactctl", "type")


def _plain_message(m: Any) -> bool:
    if not isinstance(m, dict) or any(k in m for k in _TOLD_APART) or not isinstance(m.get("role"), str):
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
