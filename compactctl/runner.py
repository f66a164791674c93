"""Running a phase over inputs: read, process transcript by transcript (in order, optionally in
parallel), write all-or-nothing, and keep the side files (archive, rejects, report).

The CLI is a thin layer over this; library users can call it too.
"""

from __future__ import annotations

import os
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from . import formats
from .errors import CannotFit, UsageError
from .jsonl import JsonlSink, Output, expand_inputs
from .model import Transcript, fingerprint
from .phases import Archived


@dataclass
class IOOptions:
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


@dataclass
class Result:
    transcript: Transcript | None  # what to write (None: write `lines` instead)
    report: dict[str, Any] | None = None
    archived: list[Archived] = field(default_factory=list)
    lines: list[bytes] | None = None
    input_messages: int = 0


@dataclass
class RunStats:
    transcripts: int = 0
    changed: int = 0
    skipped_lines: int = 0


def warn(msg: str) -> None:
    print(f"compactctl: {msg}", file=sys.stderr)


def _progress(items: Iterable, quiet: bool, desc: str) -> Iterable:
    if quiet or not sys.stderr.isatty():
        return items
    from tqdm import tqdm

    return tqdm(items, desc=desc, unit=" transcripts", file=sys.stderr, leave=False)


def _ordered(fn: Callable[[Transcript], Result], items: Iterator[Transcript], jobs: int) -> Iterator[tuple[Transcript, Result]]:
    if jobs <= 1:
        for t in items:
            yield t, fn(t)
        return
    # Twice as many workers as --jobs: while `jobs` of them wait on LLM calls (the summarizer caps
    # calls in flight at `jobs`), the others prepare the next transcripts.
    with ThreadPoolExecutor(max_workers=jobs * 2) as pool:
        window: deque = deque()
        for t in items:
            window.append((t, pool.submit(fn, t)))
            if len(window) >= jobs * 4:
                t0, f0 = window.popleft()
                yield t0, f0.result()
        while window:
            t0, f0 = window.popleft()
            yield t0, f0.result()


def run(inputs: list[str], io: IOOptions, work: Callable[[Transcript], Result], desc: str = "compactctl") -> RunStats:
    rejects = JsonlSink(io.rejects)
    archive = JsonlSink(io.archive)
    report = JsonlSink(io.report)
    reader = formats.Reader(on_error=io.on_error, fmt=io.fmt_from, layout=io.layout, rejects=rejects if io.rejects else None, warn=warn)
    stats = RunStats()
    ok = False
    to_dir = bool(io.output) and (io.output.endswith(os.sep) or os.path.isdir(io.output))
    targets = _targets(inputs, io.output) if to_dir else {}
    out = None if to_dir else Output(io.output, spool=io.on_error != "skip")
    current: str | None = None  # with -o DIR: the input file whose output is open
    many = len(expand_inputs(inputs)) > 1 and not to_dir
    first_seq: dict[str, int] = {}  # input file -> seq of its first transcript (for the archive)
    from .api import lines_record

    def guarded(t: Transcript) -> Result:
        try:
            return work(t)
        except CannotFit as e:
            if io.on_error != "skip":
                raise
            rep = {"transcript": t.id, "status": "cannot-fit", "reason": str(e)}
            if e.fallback is not None:  # compact: pruned and repaired, not summarized
                warn(f"{e} -- written pruned and repaired, not summarized")
                return Result(e.fallback[0], rep, e.fallback[1])
            warn(f"{e} -- written as read")
            return Result(t, rep)

    try:
        for seq, (t_in, res) in enumerate(_ordered(guarded, _progress(reader.read(inputs), io.quiet, desc), io.jobs)):
            stats.transcripts += 1
            if to_dir and t_in.source != current:  # one output file per input file, each atomic
                if out is not None:
                    out.commit()
                current = t_in.source
                os.makedirs(os.path.dirname(targets[current]) or ".", exist_ok=True)
                out = Output(targets[current], spool=False)
            if res.lines is not None:
                for line in res.lines:
                    out.write(line + b"\n")
            if res.transcript is not None:
                t = res.transcript
                if t is not t_in:
                    stats.changed += 1
                if t.layout == "session" and many:
                    t = _as_dataset_record(t, io.fmt_to)
                written = list(formats.write(t, io.fmt_to))
                for line in written:
                    out.write(line + b"\n")
                first_seq.setdefault(t_in.source, seq)
                if io.archive and (res.archived or res.transcript is not t_in):  # repair may add or move messages
                    for a in res.archived:
                        archive.add({"seq": seq, "source": t_in.source, **a.record()})
                    archive.add({"seq": seq, "source": t_in.source, "transcript": t_in.id, "type": "map", "format": t_in.format,
                                 "messages": len(t_in.messages), "kept": _kept(t)})
                    lines = lines_record(t_in, written)  # line logs: every source line, record for record
                    if lines is not None:
                        archive.add({"seq": seq, "source": t_in.source, **lines})
            if res.report is not None:
                report.add(res.report)
        if io.archive:  # the closing record: restore refuses an archive without it (truncated)
            archive.add({"type": "end", "transcripts": stats.transcripts, "sources": list(first_seq), "first_seq": first_seq})
        ok = True
    finally:
        stats.skipped_lines = reader.skipped
        if out is not None:
            out.commit() if ok else out.abort()
        for sink in (rejects, archive, report):
            sink.close(ok)
    return stats


def _targets(inputs: list[str], out_dir: str) -> dict[str, str]:
    """Input file -> output path under `out_dir`: a directory's files keep their relative paths."""
    out: dict[str, str] = {}
    for arg in inputs:
        if arg == "-":
            raise UsageError("-o DIR writes one file per input file: give files or directories, not stdin")
        files = expand_inputs([arg])
        for f in files:
            rel = os.path.relpath(f, arg) if os.path.isdir(arg) else os.path.basename(f)
            out[f] = os.path.join(out_dir, rel)
    return out


def _kept(t: Transcript) -> list[list]:
    """[original index, output index, fingerprint] of every original written unchanged."""
    return [[m.index, j, fingerprint(m)] for j, m in enumerate(t.messages) if m.untouched]


def _as_dataset_record(t: Transcript, to: str | None) -> Transcript:
    if (to or t.format) != "openai":
        raise UsageError("several session files cannot share one output in this format: give -o DIR/, or convert with --to openai")
    return t.evolve(layout="dataset", metadata={"source": t.source, "messages": None}, native=None)

