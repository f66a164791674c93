"""What the runner's parts share: the run's options and what it returns, what the work returns for a
transcript, a transcript ready to write (an engine's output, the sinks' input), and warnings."""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import field
from typing import Any

from ..lean import dataclass
from ..model import Transcript
from ..phases import Archived


@dataclass
class IOOptions:
    """Where a run reads and writes, and in which formats."""

    output: str | None = None
    fmt_from: str | None = None
    fmt_to: str | None = None
    layout: str | None = None
    on_error: str = "fail"
    rejects: str | None = None
    archive: str | None = None
    report: str | None = None
    quiet: bool = False
    jobs: int = 1
    workers: int = 1  # processes for offline work (a `job` must be given to run())
    resume: bool = False
    options: Any = None  # what the output depends on, for the journal's fingerprint (JSON-able)


@dataclass
class Result:
    """What the work made of one transcript: what to write, report and archive."""

    transcript: Transcript | None  # what to write (None: write `lines` instead)
    report: dict[str, Any] | None = None
    archived: list[Archived] = field(default_factory=list)
    lines: list[bytes] | None = None
    input_messages: int = 0
    notes: list[str] = field(default_factory=list)  # lines for stderr, printed by the parent in input order (prune --stats)


@dataclass
class RunStats:
    """Counts of a run."""

    transcripts: int = 0  # written (numbered 0, 1, ... in the archive: `restore` maps output record k to seq k)
    changed: int = 0
    skipped_lines: int = 0  # lines the reader rejected (not JSON, not a record of the format)
    rejected: int = 0  # records rejected once read (--on-error skip: to --rejects, nothing written, no seq)


@dataclass
class Done:
    """A transcript ready to write (built where the work ran: in a worker process or here)."""

    lines: list[bytes]
    archive: list[dict]
    report: dict | None
    changed: bool
    rejects: list[bytes] = field(default_factory=list)  # a record found bad where it was parsed (a Lazy one)
    notes: list[str] = field(default_factory=list)  # Result.notes
    skipped: bool = False  # rejected (--on-error skip): nothing written, its raw lines in `rejects`
    fmt: str | None = None  # the format `lines` are in (None: lines a work wrote itself)


@dataclass
class _Ctx:
    """What the work on each transcript needs to know about the run."""

    fmt_to: str | None
    many: bool
    archive: bool
    on_error: str
    keeps: Callable[[str, Any], bool] | None = None  # (format, parsed record) -> the work writes it as it came
    check_written: bool = False  # say of each transcript written which API rules its output breaks (convert)


# While a transcript is worked on (engines._process), what `warn` says of it joins its notes, printed in input order
# with them: a summarizer's warning from one of --jobs threads too, not at once in the order the calls ended.
SAYING: ContextVar[Callable[[str], None] | None] = ContextVar("compactctl_saying", default=None)
# The attribute of an error that ended a transcript's work holding what the work said before it (its notes, in order):
# the run prints them before it ends on the error.
SAID_WITH = "compactctl_said"


def warn(msg: str) -> None:
    say = SAYING.get()
    if say is not None:
        say(msg)
    else:
        print(noted(msg), file=sys.stderr)


def no_transcript(name: str, target: str) -> str:
    """What is said of an input that gave no transcript under -o DIR/ (both engines say it alike)."""
    return f"{name}: gives no transcript: no output file for it ({target})"


def noted(msg: str) -> str:
    """A warning as a line for stderr (what `warn` prints): for notes said later, in input order."""
    return f"compactctl: {msg}"


def say_notes(notes: list[str]) -> None:
    for note in notes:
        print(note, file=sys.stderr)
