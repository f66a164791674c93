"""The format registry: every format once, what each provides, and detection from a first record.

A format is a module `formats/<name>.py` that provides what `FormatModule` says (`NAME`, `CARRIER_KEYS`,
`sniff(first_record) -> layout | None`, `read(records, source, layout, reader) -> Iterator[Transcript]`), plus
`write(transcript) -> Iterator[bytes]` unless it is read-only, and `dropped_records(transcript)` if it is a line log.
A module is imported when first used (start-up pays for the formats it may be reading).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from importlib import import_module
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import UsageError
from ..lean import dataclass
from ..model import Transcript

if TYPE_CHECKING:
    from .reader import Reader

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
    mod = import_module(f"{__package__}.{key}")  # imported when first used: start-up stays fast
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
