"""Running a phase over inputs: read, process transcript by transcript (in order; threads for LLM calls,
worker processes for offline compaction), write all-or-nothing and resumably, and keep the side files
(archive, rejects, report).

The CLI is a thin layer over this; library users can call it too.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from . import formats
from .archive import SqliteSink, is_sqlite
from .archive import sink as archive_sink
from .errors import CannotFit, CompactError, DataError, UsageError
from .journal import Journal, PartFile, finish_part, input_ids, journal_path
from .jsonl import MAX_DEPTH, JsonlSink, Output, expand_inputs, open_input
from .model import Transcript, content_print
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
    workers: int = 1  # processes for offline work (a `job` must be given to run())
    resume: bool = False
    options: Any = None  # what the output depends on, for the journal's fingerprint (JSON-able)


@dataclass
class Result:
    transcript: Transcript | None  # what to write (None: write `lines` instead)
    report: dict[str, Any] | None = None
    archived: list[Archived] = field(default_factory=list)
    lines: list[bytes] | None = None
    input_messages: int = 0
    notes: list[str] = field(default_factory=list)  # lines for stderr, printed by the parent in input order (prune --stats)


@dataclass
class RunStats:
    transcripts: int = 0
    changed: int = 0
    skipped_lines: int = 0


@dataclass
class Done:
    """A transcript ready to write (built where the work ran: in a worker process or here)."""

    lines: list[bytes]
    archive: list[dict]
    report: dict | None
    changed: bool
    rejects: list[bytes] = field(default_factory=list)  # a record found bad where it was parsed (a Lazy one)
    notes: list[str] = field(default_factory=list)  # Result.notes


@dataclass
class _Ctx:
    fmt_to: str | None
    many: bool
    archive: bool
    on_error: str
    keeps: Callable[[str, Any], bool] | None = None  # (format, parsed record) -> the work writes it as it came


def warn(msg: str) -> None:
    print(f"compactctl: {msg}", file=sys.stderr)


def _progress(items: Iterable[Item], quiet: bool, desc: str) -> Iterable[Item]:
    if quiet or not sys.stderr.isatty():
        return items
    from tqdm import tqdm

    return tqdm(items, desc=desc, unit=" transcripts", file=sys.stderr, leave=False)


def _guarded(work: Callable[[Transcript], Result], t: Transcript, on_error: str) -> Result:
    try:
        return work(t)
    except CannotFit as e:
        if on_error != "skip":
            raise
        rep = {"transcript": t.id, "status": "cannot-fit", "reason": str(e)}
        if e.fallback is not None:  # compact: pruned and repaired; summarize: as read, without plan's annotations
            warn(f"{e} -- written {e.fallback_is}")
            return Result(e.fallback[0], rep, e.fallback[1])
        warn(f"{e} -- written as read")
        return Result(t, rep)


def _finish(seq: int, t_in: Transcript, res: Result, ctx: _Ctx) -> Done:
    lines: list[bytes] = list(res.lines) if res.lines is not None else []
    archive: list[dict] = []
    changed = False
    if res.transcript is not None:
        t = res.transcript
        changed = t is not t_in
        if t.layout == "session" and ctx.many:
            t = _as_dataset_record(t, ctx.fmt_to)
        written = list(formats.write(t, ctx.fmt_to))
        lines.extend(written)
        if ctx.archive and (res.archived or changed):  # repair may add or move messages
            from .api import lines_record

            src = t_in.source
            archive = [{"seq": seq, "source": src, **a.record()} for a in res.archived]
            archive.append(
                {
                    "seq": seq,
                    "source": src,
                    "transcript": t_in.id,
                    "type": "map",
                    "format": t_in.format,
                    "messages": len(t_in.messages),
                    "kept": _kept(t),
                }
            )
            log = lines_record(t_in, written)  # line logs: every source line, record for record
            if log is not None:
                archive.append({"seq": seq, "source": src, **log})
    return Done(lines, archive, res.report, changed, notes=res.notes)


# -- where the work runs -----------------------------------------------------------------------

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

    @property
    def id(self) -> str:
        return f"{self.source}#{self.n + 1}"

    def __getstate__(self) -> dict:
        return {**self.__dict__, "obj": None}  # to a worker: the bytes only (it parses them there)


def _materialize(item: Transcript | Lazy, on_error: str) -> tuple[Transcript | None, list[bytes]]:
    if not isinstance(item, Lazy):
        return item, []
    rejects = _Rejects()
    reader = formats.Reader(on_error=on_error, rejects=rejects, warn=warn)
    obj, item.obj = item.obj, None
    if obj is None:
        obj = orjson.loads(item.raw)
    found = list(formats.get_format(item.fmt).read(iter([(item.lineno, item.raw, obj)]), item.source, "dataset", reader))
    if not found:  # rejected (--on-error skip): the reader kept its raw line
        return None, rejects.take()
    t = found[0]
    t.id = item.id
    return t, []


def _kept_as_read(item: Lazy, ctx: _Ctx) -> bool:
    return ctx.keeps is not None and item.obj is not None and ctx.fmt_to in (None, item.fmt) and ctx.keeps(item.fmt, item.obj)


def _process(seq: int, item: Transcript | Lazy, work, ctx: _Ctx) -> Done:
    if isinstance(item, Lazy) and _kept_as_read(item, ctx):  # the work would write it as it came: nothing to build
        return Done([item.raw], [], None, False)
    t, rejected = _materialize(item, ctx.on_error)
    if t is None:
        return Done([], [], None, False, rejected)
    try:
        return _finish(seq, t, _guarded(work, t, ctx.on_error), ctx)
    except (DataError, TypeError) as e:  # a transcript the work cannot make valid, or that cannot be written back
        err = _data_error(e, t)
        if err is None:
            raise
        if ctx.on_error != "skip":
            raise err from None
        warn(f"skipped {err}")
        return Done([], [], None, False, rejected + [item.raw] if isinstance(item, Lazy) else rejected + list(formats.write(t)))


def _data_error(e: Exception, t: Transcript) -> DataError | None:
    """`e` as the data error it is (repair: no message to send; a record nested deeper than the 254 levels
    orjson writes, which a phase or the writer failed on), or None for any other error (a bug: raised as is)."""
    if isinstance(e, DataError):
        return e
    if isinstance(e, TypeError) and "Recursion limit" in str(e):  # orjson.JSONEncodeError
        return DataError(t.source or t.id, t.line or 1, f"the record is nested deeper than {MAX_DEPTH} levels: it cannot be written back")
    return None


Item = tuple[int, "Transcript | Lazy", list[bytes]]  # (seq, transcript, rejected lines read before it)
Meta = tuple[int, str, str, list[bytes]]  # (seq, source, id, rejects)


def _serial(work, items: Iterable[Item], ctx: _Ctx) -> Iterator[tuple[Meta, Done]]:
    for seq, t, rej in items:
        yield (seq, t.source, t.id, rej), _process(seq, t, work, ctx)


def _threads(work, items: Iterable[Item], ctx: _Ctx, jobs: int) -> Iterator[tuple[Meta, Done]]:
    # Twice as many threads as --jobs: while `jobs` of them wait on LLM calls (the summarizer caps
    # calls in flight at `jobs`), the others prepare the next transcripts.
    from concurrent.futures import ThreadPoolExecutor  # here: it imports logging, which a run without --jobs never needs

    def one(seq, t):
        return _process(seq, t, work, ctx)

    with ThreadPoolExecutor(max_workers=jobs * 2) as pool:
        window: deque = deque()
        for seq, t, rej in items:
            window.append(((seq, t.source, t.id, rej), pool.submit(one, seq, t)))
            if len(window) >= jobs * 4:
                m, f = window.popleft()
                yield m, f.result()
        while window:
            m, f = window.popleft()
            yield m, f.result()


_W: dict[str, Any] = {}


def _init_worker(job, ctx: _Ctx) -> None:
    """Once per worker process: build the work function (the Compactor: encoding, summarizer)."""
    _W["work"] = job.build()
    _W["ctx"] = ctx
    parent = os.getppid()

    def watch() -> None:  # the parent was killed (kill -9): do not linger
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _work_batch(batch: list[tuple[int, Transcript | Lazy]]) -> list[Done] | tuple[str, int, str]:
    work, ctx = _W["work"], _W["ctx"]
    try:
        return [_process(seq, t, work, ctx) for seq, t in batch]
    except CompactError as e:  # exceptions with custom constructors do not pickle: carry the code and text
        return ("error", int(e.exit_code), str(e))


def _size(t: Transcript | Lazy) -> int:
    raw = getattr(t, "raw", None)
    if isinstance(raw, bytes):
        return len(raw)
    assert isinstance(t, Transcript)  # a Lazy record always has its bytes
    if isinstance(t.native, list):
        return sum(len(r) for r in t.native if isinstance(r, bytes)) or 200 * len(t.messages)
    return 500 * len(t.messages)


def _processes(job, items: Iterator[Item], ctx: _Ctx, workers: int) -> Iterator[tuple[Meta, Done]]:
    """Batches of transcripts to `workers` processes; results in input order; at most 3 batches per
    worker in flight (memory bounded whatever the input size)."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    method = "fork" if sys.platform.startswith("linux") else "spawn"
    pool = ProcessPoolExecutor(workers, mp_context=mp.get_context(method), initializer=_init_worker, initargs=(job, ctx))
    window: deque = deque()

    def drain(limit: int) -> Iterator[tuple[Meta, Done]]:
        while len(window) > limit:
            metas, fut = window.popleft()
            got = fut.result()
            if isinstance(got, tuple):
                err = CompactError(got[2])
                err.exit_code = got[1]
                raise err
            yield from zip(metas, got, strict=True)

    try:
        batch: list[tuple[int, Transcript | Lazy]] = []
        metas: list[Meta] = []
        size = 0
        late: CompactError | None = None
        while True:
            try:
                seq, t, rej = next(items)
            except StopIteration:
                break
            except CompactError as e:  # a bad line read ahead: errors of the transcripts before it come first
                late = e
                break
            if isinstance(t, Lazy):
                t.obj = None  # a worker parses the bytes: the parent does not hold parsed records in flight
            batch.append((seq, t))
            metas.append((seq, t.source, t.id, rej))
            size += _size(t)
            if size >= 512 << 10 or len(batch) >= 256:
                window.append((metas, pool.submit(_work_batch, batch)))
                batch, metas, size = [], [], 0
                yield from drain(workers * 3)
        if batch:
            window.append((metas, pool.submit(_work_batch, batch)))
        yield from drain(0)
        if late is not None:
            raise late
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@dataclass
class PruneJob:
    """A picklable recipe for `prune`'s work, in this process or in each worker process (--workers):
    each builds its token counter once. With `stats`, each transcript's figures are a note (stderr,
    printed here in input order)."""

    opts: Any  # phases.prune.PruneOptions
    encoding: str
    approx: bool = False
    expect_bytes: int = 0  # the input's size (Counter.expect)
    stats: bool = False

    def build(self) -> Callable[[Transcript], Result]:
        from .phases import prune as phase  # the phase alone: the library's api imports every phase
        from .tokens import Counter

        counter = Counter(self.encoding, approx=self.approx)
        counter.expect(self.expect_bytes)
        opts, stats = self.opts, self.stats

        def work(t: Transcript) -> Result:
            out, st = phase.prune(t, counter, opts)
            notes = [orjson.dumps({"transcript": t.id, **st.as_dict()}).decode()] if stats else []
            return Result(out, archived=st.archived, notes=notes)

        return work


# -- reading -----------------------------------------------------------------------------------


class _Rejects:
    """Collects rejected lines as the reader goes; each batch is written with the transcript after it,
    so that the rejects file, too, is in input order and resumable."""

    def __init__(self):
        self.pending: list[bytes] = []

    def add_raw(self, line: bytes) -> None:
        self.pending.append(line)

    def take(self) -> list[bytes]:
        out, self.pending = self.pending, []
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
            records = reader._records(stream, name)
            first = next(records, None)
            if first is None:
                continue
            mod, layout, records = reader.detect_stream(first, records, name)
            if layout != "dataset" or mod.NAME not in LAZY_FORMATS:
                yield from mod.read(records, name, layout, reader)
                continue
            for n, (lineno, raw, obj) in enumerate(records):
                yield Lazy(raw, name, lineno, n, mod.NAME, obj)
        finally:
            stream.close()


def _items(reader: formats.Reader, files: list[str], rejects: _Rejects, seq0: int, skip: int, skip_key: str | None) -> Iterator[Item]:
    seq = seq0
    skipped = 0
    for t in _read(reader, files):
        rej = rejects.take()
        if skipped < skip:  # already written by the interrupted run
            skipped += 1
            seq += 1
            if skipped == skip and skip_key is not None and t.id != skip_key:
                raise UsageError(
                    f"cannot resume: transcript {skip} of the input is {t.id}, the journal says {skip_key} (the input changed)"
                )
            continue
        yield seq, t, rej
        seq += 1
    if skipped < skip:
        raise UsageError(f"cannot resume: the input holds {skipped} transcripts, the journal says {skip} were written (the input changed)")


# -- writing -----------------------------------------------------------------------------------


class _Sinks:
    """The outputs of a run: the main output (a file, stdout, or one file per input with -o DIR/) and
    the side files. Journaled (resumable part files) when the main output is a file or a directory."""

    SIDES = ("archive", "report", "rejects")

    def __init__(self, io: IOOptions, files: list[str], to_dir: bool, targets: dict[str, str], desc: str):
        self.io, self.to_dir, self.targets = io, to_dir, targets
        self.journal: Journal | None = None
        self.out: Any = None
        self.sides: dict[str, Any] = {}
        self.current: str | None = None  # -o DIR/: the input whose output is open
        self.file_n = 0
        self.state: dict = {}  # from the journal: the last checkpoint, the files done
        self.done_files: set[str] = set()
        self.ended = False
        self.stats = RunStats()
        self.key = ""
        self.last_ck = time.monotonic()
        self.first_seq: dict[str, int] = {}  # input file -> seq of its first transcript (the archive's end record)
        self.every = float(os.environ.get("COMPACTCTL_JOURNAL_EVERY", "1.0"))  # seconds between checkpoints
        out = io.output
        journaled = to_dir or (out not in (None, "-") and (not os.path.exists(out) or os.path.isfile(out)))
        if io.resume and not journaled:
            raise UsageError("--resume needs -o FILE or -o DIR/ (stdout cannot be resumed)")
        if not journaled:  # stdout, or a device: written whole (spooled), not resumable
            self.out = Output(out, spool=io.on_error != "skip")
            self.sides = {k: (archive_sink if k == "archive" else JsonlSink)(getattr(io, k)) for k in self.SIDES if getattr(io, k)}
            return
        assert out is not None  # journaled: -o FILE or -o DIR/
        ck = self._open_journal(out, files, desc)
        self._open_sides(ck)
        self._open_output(out, ck)
        self.stats = RunStats(ck.get("n", 0), ck.get("changed", 0))
        self.key = ck.get("key", "")
        self.first_seq = dict(ck.get("fs", {}))

    def _open_journal(self, out: str, files: list[str], desc: str) -> dict:
        """Start a journal, or (--resume) load the interrupted run's: its last checkpoint ({} if none)."""
        io, to_dir = self.io, self.to_dir
        header = {
            "journal": "compactctl",
            "version": 1,
            "command": desc,
            "options": _fingerprint(io),
            "inputs": input_ids(files),
            "output": os.path.abspath(out) + (os.sep if to_dir else ""),
        }
        if to_dir:
            os.makedirs(out, exist_ok=True)
        self.journal = Journal(journal_path(out, to_dir), header)
        if not (io.resume and os.path.exists(self.journal.path)):
            if os.path.exists(self.journal.path) and not io.quiet:
                warn(f"{self.journal.path}: an interrupted run's journal; starting over (use --resume to continue it)")
            self.journal.start()
            return {}
        if "-" in files:
            raise UsageError("cannot resume a run that reads stdin")
        entries, valid = self.journal.load()
        ck: dict = {}
        for e in entries:
            if e["t"] == "ck":
                ck = e
            elif e["t"] == "done":
                self.done_files.add(e["file"])
            else:
                self.ended = True
        self.state = ck
        self.journal.reopen(valid)
        return ck

    def _open_sides(self, ck: dict) -> None:
        """The side files as part files, truncated to the checkpoint when resuming (an SQLite archive is written whole)."""
        offs = ck.get("off", {})
        for k in self.SIDES:
            p = getattr(self.io, k)
            if not p:
                continue
            if k == "archive" and is_sqlite(p):  # an SQLite index is written whole, not in resumable parts
                if self.io.resume and ck:
                    raise UsageError(
                        f"--resume cannot continue the SQLite archive {p}: use a JSONL archive (recall indexes it on first use)"
                    )
                self.sides[k] = SqliteSink(p)
            else:
                self.sides[k] = PartFile(p, offs.get(k) if ck else None) if not self.ended else None

    def _open_output(self, out: str, ck: dict) -> None:
        """-o FILE: its part file. -o DIR/: finish the renames a kill left, reopen the file that was being written."""
        offs = ck.get("off", {})
        if not self.to_dir:
            self.out = PartFile(out, offs.get("out") if ck else None) if not self.ended else None
            return
        for f in sorted(self.done_files):
            finish_part(self.targets[f])  # a kill between "done" and the rename
        if ck and ck.get("file") not in self.done_files and not self.ended:
            self.current = ck["file"]
            self.file_n = ck["fn"]
            os.makedirs(os.path.dirname(self.targets[self.current]) or ".", exist_ok=True)
            self.out = PartFile(self.targets[self.current], offs.get("out"))

    # where to start reading
    def plan_reading(self, files: list[str]) -> tuple[list[str], int, int, str | None]:
        """(files still to read, seq of the first, transcripts to skip in them, id of the last skipped)."""
        ck = self.state
        if not ck:
            return files, 0, 0, None
        if self.to_dir:
            rest = [f for f in files if f not in self.done_files]
            skip = ck["fn"] if ck.get("file") not in self.done_files else 0
            return rest, ck["n"] - skip, skip, ck["key"] if skip else None
        return files, 0, ck["n"], ck["key"]

    def write(self, source: str, done: Done, rejects: list[bytes]) -> None:
        if self.to_dir and source != self.current:  # one output file per input file, each atomic
            self._close_file()
            self.current = source
            self.file_n = 0
            os.makedirs(os.path.dirname(self.targets[source]) or ".", exist_ok=True)
            self.out = PartFile(self.targets[source]) if self.journal else Output(self.targets[source], spool=False)
        if "rejects" in self.sides:
            for line in (*rejects, *done.rejects):
                self._side("rejects", line + b"\n")
        for line in done.lines:
            self.out.write(line + b"\n")
        if "archive" in self.sides:
            for rec in done.archive:
                self._side("archive", orjson.dumps(rec) + b"\n")
        if done.report is not None and "report" in self.sides:
            self._side("report", orjson.dumps(done.report) + b"\n")
        self.file_n += 1

    def _side(self, k: str, data: bytes) -> None:
        s = self.sides[k]
        if isinstance(s, (JsonlSink, SqliteSink)):
            s.add_raw(data[:-1])
        else:
            s.write(data)

    def maybe_checkpoint(self) -> None:
        if self.journal is not None and time.monotonic() - self.last_ck >= self.every:
            self.checkpoint()

    def checkpoint(self) -> None:
        if self.journal is None:
            return
        stats, key = self.stats, self.key
        for s in (self.out, *self.sides.values()):
            if isinstance(s, PartFile):
                s.sync()
        off = {k: s.offset for k, s in self.sides.items() if isinstance(s, PartFile)}
        if isinstance(self.out, PartFile):
            off["out"] = self.out.offset
        self.journal.append(
            {
                "t": "ck",
                "n": stats.transcripts,
                "key": key,
                "file": self.current if self.to_dir else "*",
                "fn": self.file_n,
                "off": off,
                "changed": stats.changed,
                "fs": self.first_seq,
            }
        )
        self.last_ck = time.monotonic()

    def _close_file(self) -> None:
        if self.out is None:
            return
        if self.journal is not None:
            self.checkpoint()
            self.journal.append({"t": "done", "file": self.current})
        self.out.commit()
        self.out = None

    def finish(self, tail_rejects: list[bytes]) -> None:
        for line in tail_rejects:
            if "rejects" in self.sides:
                self._side("rejects", line + b"\n")
        if "archive" in self.sides and self.sides["archive"] is not None and not self.ended:
            # the closing record: restore refuses an archive without it (truncated)
            end = {"type": "end", "transcripts": self.stats.transcripts, "sources": list(self.first_seq), "first_seq": self.first_seq}
            self._side("archive", orjson.dumps(end) + b"\n")
        if self.journal is not None and not self.ended:
            self.checkpoint()
            if self.to_dir and self.out is not None:
                self.journal.append({"t": "done", "file": self.current})
            self.journal.append({"t": "end"})
        if self.ended:  # the interrupted run had finished writing: only renames were left
            if not self.to_dir:
                assert self.io.output is not None  # a journal (and so `ended`) needs -o
                finish_part(self.io.output)
            for k in self.SIDES:
                if getattr(self.io, k):
                    finish_part(getattr(self.io, k))
        else:
            if self.out is not None:
                self.out.commit()
            for s in self.sides.values():
                s.close(True) if isinstance(s, (JsonlSink, SqliteSink)) else s.commit()
        if self.journal is not None:
            self.journal.remove()

    def fail(self, interrupted: bool) -> None:
        """An error: nothing is left (all or nothing). An interrupt (Ctrl-C): the parts and the journal stay, for --resume."""
        for s in (self.out, *self.sides.values()):
            if s is None:
                continue
            if isinstance(s, (JsonlSink, SqliteSink)):
                s.close(False)
            elif isinstance(s, PartFile):
                s.leave() if interrupted else s.abort()
            else:
                s.abort()
        if self.journal is not None:
            self.journal.close() if interrupted else self.journal.remove()


def _fingerprint(io: IOOptions) -> str:
    from .journal import fingerprint as fp

    return fp(
        {
            "options": io.options,
            "from": io.fmt_from,
            "to": io.fmt_to,
            "layout": io.layout,
            "on_error": io.on_error,
            "archive": bool(io.archive),
            "report": bool(io.report),
            "rejects": bool(io.rejects),
        }
    )


# -- the run -----------------------------------------------------------------------------------


def run(
    inputs: list[str],
    io: IOOptions,
    work: Callable[[Transcript], Result],
    desc: str = "compactctl",
    job: Any = None,
    on_report: Callable[[dict], None] | None = None,
    keeps: Callable[[str, Any], bool] | None = None,
) -> RunStats:
    """Read `inputs`, apply `work` to each transcript, write in input order.

    `job`: a picklable object whose `build()` returns `work`; with it and `io.workers > 1` the work runs
    in worker processes (each builds it once). `on_report`: called here, in order, with each report.
    `keeps(format, record)`: True for a parsed dataset record that `work` would write back byte for
    byte with no report and nothing archived (see passthrough.py): it is written as read, unbuilt."""
    files = expand_inputs(inputs)
    output = io.output or ""
    to_dir = bool(output) and (output.endswith(os.sep) or os.path.isdir(output))
    targets = _targets(inputs, output) if to_dir else {}
    check_collisions(files, io, targets, to_dir)
    many = len(files) > 1 and not to_dir
    ctx = _Ctx(io.fmt_to, many, bool(io.archive), io.on_error, keeps)
    sinks = _Sinks(io, files, to_dir, targets, desc)
    stats = sinks.stats
    slow = float(os.environ.get("COMPACTCTL_SLOW_DOWN", "0"))  # seconds per transcript: a test hook (kill points)
    rejects = _Rejects()
    reader = formats.Reader(on_error=io.on_error, fmt=io.fmt_from, layout=io.layout, rejects=rejects if io.rejects else None, warn=warn)
    try:
        if not sinks.ended:
            rest, seq0, skip, skip_key = sinks.plan_reading(files)
            read = _items(reader, rest, rejects, seq0, skip, skip_key) if rest else iter(())
            items = _progress(read, io.quiet, desc)
            if job is not None and io.workers > 1:
                peeked, several = _peek(items, 2)
                flow = _processes(job, peeked, ctx, io.workers) if several else _serial(work, peeked, ctx)
            elif io.jobs > 1:
                flow = _threads(work, items, ctx, io.jobs)
            else:
                flow = _serial(work, items, ctx)
            for (seq, source, tid, rej), done in flow:
                for note in done.notes:
                    print(note, file=sys.stderr)
                sinks.first_seq.setdefault(source, seq)
                sinks.write(source, done, rej)
                stats.transcripts += 1
                stats.changed += done.changed
                sinks.key = tid
                if done.report is not None and on_report is not None:
                    on_report(done.report)
                sinks.maybe_checkpoint()
                if slow:
                    time.sleep(slow)
        sinks.finish(rejects.take())
    except Exception:
        sinks.fail(interrupted=False)
        raise
    except BaseException:
        sinks.fail(interrupted=True)
        raise
    finally:
        stats.skipped_lines = reader.skipped
    return stats


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


def _targets(inputs: list[str], out_dir: str) -> dict[str, str]:
    """Input file -> output path under `out_dir`: a directory's files keep their relative paths."""
    out: dict[str, str] = {}
    for arg in inputs:
        if arg == "-":
            raise UsageError("-o DIR writes one file per input file: give files or directories, not stdin")
        files = expand_inputs([arg])
        for f in files:
            rel = os.path.relpath(f, arg) if os.path.isdir(arg) else os.path.basename(f)
            stem, ext = os.path.splitext(rel)
            if ext in (".json", ".traj"):  # a whole-file JSON document in, JSON lines out: named so it reads back
                rel = stem + ".jsonl"
            out[f] = os.path.join(out_dir, rel)
    return out


def check_collisions(files: list[str], io: IOOptions, targets: dict[str, str], to_dir: bool) -> None:
    """Refuse, before anything is written, outputs that would overwrite an input or each other."""

    def same(p: str) -> str:
        return os.path.realpath(p)

    def regular(p: str) -> bool:  # devices (/dev/null) and pipes may be shared
        return not os.path.exists(p) or os.path.isfile(p)

    inputs = {same(f): f for f in files if f != "-"}
    outs: list[tuple[str, str]] = []
    if to_dir:
        seen: dict[str, str] = {}
        for f, target in targets.items():
            k = same(target)
            if k in seen and seen[k] != f:
                raise UsageError(f"{seen[k]} and {f} would both be written to {target}: give them different names or -o FILE")
            seen[k] = f
            outs.append((f"the output for {f}", target))
    elif io.output not in (None, "-"):
        outs.append(("-o", io.output))
    outs += [(f"--{k}", getattr(io, k)) for k in ("archive", "report", "rejects") if getattr(io, k) not in (None, "-")]
    owner: dict[str, str] = {}
    for label, p in outs:
        if not regular(p):
            continue
        k = same(p)
        if k in inputs:
            raise UsageError(f"{label} {p} is also an input: it would be overwritten")
        if k in owner:
            raise UsageError(f"{owner[k]} and {label} are the same file ({p}): each output needs its own file")
        owner[k] = f"{label} {p}" if label.startswith("-") else label


def _kept(t: Transcript) -> list[list]:
    """[original index, output index, content print] of every original written unchanged (ids left out: see
    model.content_print; `restore` also reads archives that hold model.fingerprint)."""
    return [[m.index, j, content_print(m)] for j, m in enumerate(t.messages) if m.untouched]


def _as_dataset_record(t: Transcript, to: str | None) -> Transcript:
    if (to or t.format) != "openai":
        raise UsageError("several session files cannot share one output in this format: give -o DIR/, or convert with --to openai")
    return t.evolve(layout="dataset", metadata={"source": t.source, "messages": None}, native=None)
