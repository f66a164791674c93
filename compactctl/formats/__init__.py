"""Format readers and writers at the edge, and detection.

Every format module has `NAME`, `sniff(first_record) -> layout | None`, `read(records, source, layout,
reader) -> Iterator[Transcript]` and `write(transcript) -> Iterator[bytes]` (output lines without
newlines). Detection is per file, from its first record; `--from` forces a format.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any, Protocol

import orjson

from ..errors import DataError, UsageError
from ..jsonl import MAX_LINE_ENV, STDIN, expand_inputs, iter_lines, max_line_bytes, open_input, parse_record
from ..model import Transcript

Record = tuple[int, bytes, Any]  # (line number, raw line, parsed object)

# Order matters: the most specific sniffers first.
FORMAT_NAMES = ("claude_code", "codex", "gemini", "openhands", "sharegpt", "anthropic", "openai")


def get_format(name: str):
    key = name.replace("-", "_")
    if key not in FORMAT_NAMES:
        raise UsageError(f"unknown format {name!r} (known: {', '.join(n.replace('_', '-') for n in FORMAT_NAMES)})")
    return import_module(f"{__name__}.{key}")


def detect(obj: Any) -> tuple[Any, str] | None:
    if not isinstance(obj, dict):
        return None
    for name in FORMAT_NAMES:
        mod = get_format(name)
        layout = mod.sniff(obj)
        if layout:
            return mod, layout
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
    if not to and not hasattr(get_format(t.format), "write"):
        to = "openai"
    if to and to.replace("-", "_") != t.format:
        target = get_format(to)
        drop = getattr(get_format(t.format), "CARRIER_KEYS", ())
        meta = {k: v for k, v in (t.metadata or {}).items() if k not in drop}
        t = t.evolve(format=target.NAME, native=None, raw=None, metadata=meta)
        t.messages = [m.evolve() if m.origin is not None else m for m in t.messages]  # origins are the old format's
        if target.NAME != "openai":
            t.messages = _with_ids(t.messages)
        return target.write(t)
    return get_format(t.format).write(t)


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
