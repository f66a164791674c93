"""Reading inputs into items: the reader's transcripts, or dataset records as Lazy ones (built where
the work runs), numbered in input order with the rejected lines read before each; skipping what an
interrupted run already wrote (--resume)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import field
from typing import Any

from .. import formats
from ..errors import UsageError
from ..jsonl import open_input
from ..lean import dataclass
from ..model import Transcript
from .base import noted

LAZY_FORMATS = ("openai", "anthropic", "sharegpt")  # dataset records that read independently of each other


@dataclass
class Lazy:
    """A dataset record whose transcript is built where the work runs (a worker parses it, not the
    reader): only its bytes travel to the worker."""

    raw: bytes
    source: str
    lineno: int
    n: int  # its number in the file, as the format reader counts it
    fmt: str
    obj: Any = field(default=None, repr=False, compare=False)  # the record as the reader parsed it (not sent to workers)
    told: int | None = None  # the line the file's format was told from (None: --from gave it): Reader.told

    @property
    def id(self) -> str:
        return f"{self.source}#{self.n + 1}"

    def __getstate__(self) -> dict:
        return {**self.__dict__, "obj": None}  # to a worker: the bytes only (it parses them there)


Item = tuple[int, "Transcript | Lazy", list[bytes], list[str]]  # (seq, transcript, rejected lines and notes read before it)


class _Rejects:
    """Collects rejected lines as the reader goes; each batch is written with the transcript after it,
    so that the rejects file, too, is in input order and resumable. So are the reader's notes (a line skipped):
    said with the transcript after them, in input order however far worker processes read ahead."""

    def __init__(self) -> None:
        self.pending: list[bytes] = []
        self.notes: list[str] = []

    def add_raw(self, line: bytes) -> None:
        self.pending.append(line)

    def note(self, msg: str) -> None:
        self.notes.append(noted(msg))

    def take(self) -> list[bytes]:
        out, self.pending = self.pending, []
        return out

    def take_notes(self) -> list[str]:
        out, self.notes = self.notes, []
        return out


def _read(reader: formats.Reader, files: list[str]) -> Iterator[Transcript | Lazy]:
    """The reader's transcripts; a dataset file of independent records (OpenAI chat, Anthropic, ShareGPT)
    as Lazy records: each line checked here (JSON, an object: what the reader rejects, it rejects here
    too, in order), turned into a transcript where the work runs."""
    for name in files:
        if name == "-" or name.endswith((".json", ".traj")):
            yield from reader.read_file(name)
            continue
        stream = open_input(name)
        try:
            found = reader.detect_records(reader._records(stream, name), name)
            if found is None:
                continue
            mod, layout, records = found
            if layout != "dataset" or mod.NAME not in LAZY_FORMATS:
                yield from mod.read(records, name, layout, reader)
                continue
            for n, (lineno, raw, obj) in enumerate(records):
                yield Lazy(raw, name, lineno, n, mod.NAME, obj, reader.told)
        finally:
            stream.close()


def kind_of(reader: formats.Reader, name: str) -> str | None:
    """What a file is read as, from its first records ("anthropic session", "openai dataset"); None when they do not
    tell, or it cannot be read (what is said of a file in another's error, never an error of its own)."""
    from ..errors import CompactError

    try:
        stream = open_input(name)
    except (CompactError, OSError):
        return None
    try:
        records = reader._json_records(stream, name) if name.endswith((".json", ".traj")) else reader._records(stream, name)
        found = reader.detect_records(records, name)
    except (CompactError, OSError, ValueError):
        return None
    finally:
        stream.close()
    return None if found is None else f"{found[0].NAME.replace('_', '-')} {found[1]}"


def _items(reader: formats.Reader, files: list[str], rejects: _Rejects, seq0: int, skip: int, skip_key: str | None) -> Iterator[Item]:
    seq = seq0
    skipped = 0
    for t in _read(reader, files):
        rej = rejects.take()
        if skipped < skip:  # already written by the interrupted run (its notes are said again, with the next one)
            skipped += 1
            seq += 1
            if skipped == skip and skip_key is not None and t.id != skip_key:
                raise UsageError(
                    f"cannot resume: transcript {skip} of the input is {t.id}, the journal says {skip_key} (the input changed)"
                )
            continue
        yield seq, t, rej, rejects.take_notes()
        seq += 1
    if skipped < skip:
        raise UsageError(f"cannot resume: the input holds {skipped} transcripts, the journal says {skip} were written (the input changed)")


def _peek(items: Iterable, n: int) -> tuple[Iterator, bool]:
    """(the same items, whether there are at least n): one transcript is not worth starting workers."""
    it = iter(items)
    head = []
    for x in it:
        head.append(x)
        if len(head) >= n:
            break

    def chain():
        yield from head
        yield from it

    return chain(), len(head) >= n
