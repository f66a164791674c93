"""The format registry: every format once, what each provides, and detection from a first record.

A format is a module `formats/<name>.py` that provides what `FormatModule` says (`NAME`, `CARRIER_KEYS`,
`sniff(first_record) -> layout | None`, `read(records, source, layout, reader) -> Iterator[Transcript]`), plus
`write(transcript) -> Iterator[bytes]` unless it is read-only, and `dropped_records(transcript)` if it is a line log.
A module is imported when first used (start-up pays for the formats it may be reading). `foreign` says what a record
a format was told to read (--from) is when it holds no message of that format.
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


def foreign(obj: dict, name: str, said: str, keys: tuple[str, ...], wants: str, told: int | None = None) -> str:
    """What a record is that format `name` (`said`: its name in an error) was told to read and that is no message of
    it, nor holds one where it looks (under `keys`): a record of messages in a file read as a message a line, the
    format it reads as, the key its messages are under, or what the format wants (`wants`). The OpenAI chat and
    Anthropic readers say it (their "message has no role" said nothing of what the record was). Of a record another
    format reads: with --from (`told` None), that --from reads it; in a file whose format line `told` told (no
    --from), that the file mixes formats (--from that one would refuse the file's other lines)."""
    listed = f"keys: {', '.join(map(str, list(obj)[:6])) or 'none'}"
    for k in keys:
        v = obj.get(k)
        if isinstance(v, list) and (not v or isinstance(v[0], dict) and "role" in v[0]):  # a dataset's record
            return f"not {said}: a record of messages ({listed}) in a file read as a message a line: a file holds one or the other"
    head = f"not {said}: no role ({listed})"
    elsewhere_said = read_elsewhere(obj, name, said, told)
    if elsewhere_said is not None:
        return f"{head}; {elsewhere_said}"
    for k, v in obj.items():
        first = v[0] if isinstance(v, list) and v else None
        if k in keys and not isinstance(v, list):
            return f'{head}: its "{k}" is no list'
        if k in keys and isinstance(first, dict):  # (one with a role was said above)
            return f'{head}: its "{k}" hold no role either (the first\'s keys: {", ".join(map(str, list(first)[:6]))})'
        if isinstance(first, dict) and "role" in first:
            return f'{head}; its messages are under "{k}", and {said} reads a record\'s messages under {said_keys(keys)}'
    return f"{head}: {wants}"


def read_elsewhere(obj: dict, name: str, said: str, told: int | None) -> str | None:
    """Of a record that format `name` (`said`) refuses and another format reads, which: with --from (`told` None),
    that --from reads it; in a file whose format line `told` told (no --from), that the file mixes formats (--from
    that one would refuse the file's other lines). None when no other format reads it."""
    found = detect(obj)
    if found is None or found[0].name == name:
        return None
    other = found[0].name.replace("_", "-")
    if told is not None:
        return f"it reads as {other}, and this file as {said} (told from line {told}): a file holds one format (split it, and read each part on its own)"
    return f"it reads as {other}: use --from {other}, or no --from"


def elsewhere(obj: dict, name: str) -> bool:
    """Whether a line with no role that format `name` reads is a record another format reads (an OpenHands event has
    a "content" too): `foreign` then says which, where "message has no role" said nothing of it."""
    found = detect(obj)
    return found is not None and found[0].name != name


def said_keys(keys: tuple[str, ...]) -> str:
    """Record keys as an error says them: "a", "b" or "c"."""
    quoted = [f'"{k}"' for k in keys]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def foreign_part(fmt: str, part: Any, role: str) -> str | None:
    """What the reader of `fmt` says of a part of the other API's form in a `role` message of a transcript built
    through the library, read from no file (no --from hint): OpenAI chat of Anthropic's blocks, Anthropic's messages
    of OpenAI's parts; None where the reader takes it (model.foreign_part, set to this by compactctl.formats). Each
    format's module is imported when a transcript of its format is checked."""
    if fmt == "openai":
        from .openai import foreign_part as of_openai

        return of_openai(part, role, file=False)
    if fmt == "anthropic":
        from .anthropic import openai_part

        return openai_part(part, role, file=False)
    return None
