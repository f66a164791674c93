"""Running a phase over inputs: read, process transcript by transcript (in order; threads for LLM calls,
worker processes for offline compaction and prune), write all-or-nothing and resumably, and keep the side files
(archive, rejects, report).

The CLI is a thin layer over this; library users can call it too. Here: run(); inputs.py reads the items,
engines.py runs the work on them, sinks.py writes the outputs, base.py holds what they share.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .. import formats
from ..errors import CompactError, Exit
from ..jsonl import STDIN, expand_inputs
from ..model import Transcript
from .base import SAID_WITH, Done, IOOptions, Result, RunStats, _Ctx, say_notes, warn
from .engines import PruneJob, SharedSession, _materialize, _processes, _serial, _threads
from .inputs import LAZY_FORMATS, Item, Lazy, _items, _peek, _Rejects, kind_of
from .sinks import _Sinks, _targets, check_collisions

# Imported from here by the CLI, the record API, Ray and the tests: the names as they were in runner.py.
__all__ = [
    "LAZY_FORMATS",
    "Done",
    "IOOptions",
    "Lazy",
    "PruneJob",
    "Result",
    "RunStats",
    "_materialize",
    "_targets",
    "check_collisions",
    "run",
    "warn",
]


def _progress(items: Iterable[Item], quiet: bool, desc: str) -> Iterable[Item]:
    if quiet or not sys.stderr.isatty():
        return items
    from tqdm import tqdm

    return tqdm(items, desc=desc, unit=" transcripts", file=sys.stderr, leave=False)


_WHILE_READING = "_compactctl_while_reading"  # set on a data error the reader raised (a bad line), not the work


def _counted(items: Iterable[Item], seqs: list[int], on_start: Callable[[], None] | None) -> Iterator[Item]:
    try:
        for item in items:
            if not seqs and on_start is not None:
                on_start()
            seqs.append(item[0])
            yield item
    except CompactError as e:
        with contextlib.suppress(Exception):
            setattr(e, _WHILE_READING, True)
        raise


def _flow(work: Callable[[Transcript], Result], job: Any, items: Iterable[Item], ctx: _Ctx, io: IOOptions) -> Iterator:
    """Where the work runs: worker processes (with a job, --workers, and two transcripts or more), threads (--jobs)
    or here, in order."""
    if job is not None and io.workers > 1:
        peeked, several = _peek(items, 2)
        return _processes(job, peeked, ctx, io.workers) if several else _serial(work, peeked, ctx)
    if io.jobs > 1:
        return _threads(work, items, ctx, io.jobs)
    return _serial(work, items, ctx)


def _say_nothing_written(e: Exception, io: IOOptions, read: int, done: int) -> None:
    """A data error that stopped the run (from a worker process it is a CompactError with that exit code) says that
    nothing was written, and when other transcripts came before it, that --on-error skip writes them: `read`, the
    transcripts read before a bad line (met while its transcript is read, before it counts as read); `done`, those
    whose work ended before the one that failed (in input order: not the ones --workers or --jobs read ahead, which
    would make the message depend on them)."""
    if not (isinstance(e, CompactError) and e.exit_code == Exit.DATA and io.on_error == "fail"):
        return
    reading = getattr(e, _WHILE_READING, False)
    if (read if reading else done) > 0:  # transcripts other than the one that failed
        e.args = (f"{e} -- nothing written: --on-error skip writes the others and reports this one",)
    else:  # with skip, what is written then depends on the input: the rest of a session, none of a UTF-16 file
        e.args = (f"{e} -- nothing written",)


def _described(e: SharedSession, files: list[str], io: IOOptions) -> SharedSession:
    """A session file that cannot share the output, with what the other inputs are (their first records read again:
    on this error only)."""
    reader = formats.Reader(on_error="skip", fmt=io.fmt_from, layout=io.layout, warn=lambda _: None)
    kinds = [(f, k) for f in files if f not in (e.source, STDIN) for k in [kind_of(reader, f)] if k is not None]
    return e.described(kinds)


def run(
    inputs: list[str],
    io: IOOptions,
    work: Callable[[Transcript], Result],
    desc: str = "compactctl",
    job: Any = None,
    on_report: Callable[[dict], None] | None = None,
    keeps: Callable[[str, Any], bool] | None = None,
    check_written: bool = False,
    on_start: Callable[[], None] | None = None,
    writes: bool = True,
) -> RunStats:
    """Read `inputs`, apply `work` to each transcript, write in input order.

    `job`: a picklable object whose `build()` returns `work`; with it and `io.workers > 1` the work runs
    in worker processes (each builds it once). `on_report`: called here, in order, with each report.
    `keeps(format, record)`: True for a parsed dataset record that `work` would write back byte for
    byte with no report and nothing archived (see passthrough.py): it is written as read, unbuilt.
    `check_written`: each transcript's output is read back and checked, and the rules it breaks are said.
    `on_start`: called here, once, when the first transcript is read, before any work on it (not for an input that
    holds none, or that fails before its first). `writes`: False for a run that writes no transcript (`repair
    --check`), whose data error then does not say that nothing was written."""
    files = expand_inputs(inputs)
    if files == [STDIN] and not io.quiet and sys.stdin.isatty():  # `compactctl compact` typed alone: say why it waits
        warn("reading JSONL from the terminal (end with Ctrl-D); give a file or a directory, or pipe one in")
    output = io.output or ""
    to_dir = bool(output) and (output.endswith(os.sep) or os.path.isdir(output))
    targets = _targets(inputs, output) if to_dir else {}
    check_collisions(files, io, targets, to_dir)
    many = len(files) > 1 and not to_dir
    ctx = _Ctx(io.fmt_to, many, bool(io.archive), io.on_error, keeps, check_written)
    sinks = _Sinks(io, files, to_dir, targets, desc)
    stats = sinks.stats
    slow = float(os.environ.get("COMPACTCTL_SLOW_DOWN", "0"))  # seconds per transcript: a test hook (kill points)
    rejects = _Rejects()
    read_seqs: list[int] = []  # the transcripts read so far
    finished = 0  # the transcripts whose work ended, in input order
    # the reader's notes (a line skipped) go with the transcript after them: said in input order (see the loop)
    reader = formats.Reader(
        on_error=io.on_error, fmt=io.fmt_from, layout=io.layout, rejects=rejects if io.rejects else None, warn=rejects.note
    )
    try:
        if not sinks.ended:
            rest, seq0, skip, skip_key = sinks.plan_reading(files)
            read = _counted(_items(reader, rest, rejects, seq0, skip, skip_key), read_seqs, on_start) if rest else iter(())
            for (_, source, tid, rej, read_notes), done in _flow(work, job, _progress(read, io.quiet, desc), ctx, io):
                say_notes(read_notes)  # what the reader said of the lines before it (workers read ahead)
                sinks.add(source, tid, done, rej)  # first: a record it refuses (formats that cannot share a file) gets no note
                finished += 1
                say_notes(done.notes)
                if done.report is not None and on_report is not None:
                    on_report(done.report)
                sinks.maybe_checkpoint()
                if slow:
                    time.sleep(slow)
        stats.skipped_lines = reader.skipped  # the archive's end record counts them
        say_notes(rejects.take_notes())  # of the lines after the last transcript
        sinks.finish(rejects.take())
    except SharedSession as e:
        say_notes(rejects.take_notes())
        sinks.fail(interrupted=False, error=e)
        raise _described(e, files, io) from None
    except Exception as e:
        say_notes(rejects.take_notes())  # read before the error
        say_notes(getattr(e, SAID_WITH, []))  # what the failed transcript's work said before it
        sinks.fail(interrupted=False, error=e)
        if writes:
            _say_nothing_written(e, io, len(read_seqs), finished)
        raise
    except BaseException:
        say_notes(rejects.take_notes())
        sinks.fail(interrupted=True)
        raise
    finally:
        stats.skipped_lines = reader.skipped
    return stats
