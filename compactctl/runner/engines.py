"""Where the work runs: in order, serially, in threads (--jobs: LLM calls) or in worker processes
(--workers: offline work), each transcript turned into what to write (Done); PruneJob, prune's work as a
picklable recipe for the workers."""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
import time
import traceback
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import orjson

from .. import formats
from ..errors import CannotFit, CompactError, DataError, Exit, UsageError
from ..jsonl import MAX_DEPTH
from ..lane import Lane, working_for
from ..lean import dataclass
from ..model import Message, Transcript, content_print, digest, fingerprint, transcript_print
from ..phases import Archived
from ..phases.rules import empty_log
from .base import SAID_WITH, SAYING, Done, Result, _Ctx, noted, say_notes, warn
from .inputs import Item, Lazy, _Rejects


def _guarded(work: Callable[[Transcript], Result], t: Transcript, on_error: str, say: Callable[[str], None]) -> Result:
    try:
        return work(t)
    except CannotFit as e:
        if on_error != "skip":
            raise
        rep = {"transcript": t.id, "status": "cannot-fit", "reason": str(e)}
        if e.fallback is not None:  # compact: pruned and repaired; summarize: as read, without plan's annotations
            say(f"{e} -- written {e.fallback_is}")
            return Result(e.fallback[0], rep, e.fallback[1])
        say(f"{e} -- written as read")
        return Result(t, rep)


def _finish(seq: int, t_in: Transcript, res: Result, ctx: _Ctx) -> Done:
    lines: list[bytes] = list(res.lines) if res.lines is not None else []
    archive: list[dict] = []
    changed = False
    fmt = None
    if res.transcript is not None:
        t = res.transcript
        changed = t is not t_in
        fmt = formats.written_as(t.format, ctx.fmt_to)
        _one_session_per_file(t_in, fmt, ctx.many)
        _empty_log_as_itself(t_in, fmt)
        if t.layout == "session" and ctx.many:
            t = _as_dataset_record(t, fmt)
        lost: Counter = Counter()
        written = list(formats.write(t, ctx.fmt_to, lost))
        lines.extend(written)
        if lost:  # what the target format could not hold as it was: said, never silently
            said = "; ".join(f"{n} {what}" for what, n in lost.items())
            res.notes.append(f"compactctl: {t_in.id}: written as {fmt.replace('_', '-')}: {said}")
            if isinstance(res.report, dict):
                res.report["not_carried"] = dict(lost)
        if ctx.check_written:
            res.notes += _broken_as_written(t_in.id, written, fmt, t.layout)
        if ctx.archive:
            archive = _archive_records(seq, t_in, t, res, written, fmt, changed)
    return Done(lines, archive, res.report, changed, notes=res.notes, fmt=fmt)


def _broken_as_written(tid: str, written: list[bytes], fmt: str, layout: str) -> list[str]:
    """What `convert`, which changes nothing but the format, says of a transcript whose output an API would refuse:
    the rules it breaks, as `repair --check` reads the output."""
    from ..phases.rules import check

    try:
        rules = Counter(v.rule for back in formats.read_back(written, fmt, layout, tid) for v in check(back))
    except (DataError, ValueError) as e:  # a writer's fault: said, the output is written all the same
        return [f"compactctl: {tid}: its output does not read back as {fmt.replace('_', '-')}: {e}"]
    if not rules:
        return []
    said = ", ".join(f"{n} {rule}" for rule, n in rules.items())
    zones = "annotation" in rules  # a planned file: its zones are for summarize, which takes them off as repair does
    hint = "; `compactctl summarize` reads plan's `_compactctl` zones first, `repair` drops them" if zones else ""
    return [f"compactctl: {tid}: breaks the APIs' rules ({said}); `compactctl repair` mends it{hint}"]


def _archive_records(seq: int, t_in: Transcript, t: Transcript, res: Result, written: list[bytes], fmt: str, changed: bool) -> list[dict]:
    """What `--archive` keeps of one transcript: the originals the work replaced, and the map that says where the
    others went (or, for one written as it came that holds an earlier run's summary, a record that it was)."""
    src = t_in.source
    if res.archived or changed or fmt != t_in.format:  # repair may add or move messages; --to writes some otherwise
        from ..originals import lines_record

        log = lines_record(t_in, written)  # line logs: every source line, record for record
        back = _read_back(t, written, fmt) if fmt != t.format or log is None else None  # read once, used twice
        kept, unfound = _placed(t, back or []) if fmt != t.format else (_kept(t), [])
        res.archived += [Archived(t_in.id, m.index, "convert", m) for m in unfound if m.index is not None]
        archive = [{"seq": seq, "source": src, **a.record()} for a in res.archived]
        archive.append(
            {
                "seq": seq,
                "source": src,
                "transcript": t_in.id,
                "type": "map",
                "format": t_in.format,
                "written_as": fmt,  # what restore reads the output as: a file of role and text alone reads as OpenAI chat
                "messages": len(t_in.messages),
                "kept": kept,
            }
        )
        if log is not None:
            archive.append({"seq": seq, "source": src, **log})
        elif (anchors := _shared_anchors(t_in)) is not None:
            archive[-1]["anchors"] = anchors
        if (check := _written_check(written, back, log is not None)) is not None:
            archive[-2 if log is not None else -1]["written"] = check
        return archive
    from ..originals import compacted_here

    # written as it came; when it holds an earlier run's summary, restore would take it for another run's
    # output without a record that this run left it as it was
    if compacted_here(t_in):
        rec = {"seq": seq, "source": src, "transcript": t_in.id, "type": "unchanged", "print": _written_print(t_in, t, written, fmt)}
        return [{**rec, "messages": len(t_in.messages)}] if fmt == t_in.format else [rec]
    return []


def _written_check(written: list[bytes], back: list[Transcript] | None, line_log: bool) -> dict | None:
    """What restore checks the file it is given against (originals._as_written): the print of the lines written (a
    line log) or of the messages they read back as (`back`), and how many there were, so that what was added after
    them (a session that went on) is told from a changed transcript or another run's output. None where the output
    does not read back as one transcript."""
    if line_log:
        return {"lines": len(written), "print": digest(b"\n".join(written), 16)}
    if back is None or len(back) != 1:
        return None
    return {"messages": len(back[0].messages), "print": transcript_print(back[0].messages)}


def _read_back(t: Transcript, written: list[bytes], fmt: str) -> list[Transcript] | None:
    """The transcripts the lines written read back as (None: they do not: a writer's fault)."""
    try:
        return formats.read_back(written, fmt, t.layout, t.id)
    except (DataError, ValueError):
        return None


def _written_print(t_in: Transcript, t: Transcript, written: list[bytes], fmt: str) -> str:
    """The print restore checks the output against: of the messages as written, read back when converted (ShareGPT
    writes parallel results in call order: the input's print told restore the right archive was another run's)."""
    if fmt == t_in.format:
        return transcript_print(t_in.messages)
    try:
        back = formats.read_back(written, fmt, t.layout, t_in.id)
    except (DataError, ValueError):
        return transcript_print(t_in.messages)
    return transcript_print([m for b in back for m in b.messages])


def _materialize(item: Transcript | Lazy, on_error: str, say: Callable[[str], None] = warn) -> tuple[Transcript | None, list[bytes]]:
    if not isinstance(item, Lazy):
        return item, []
    rejects = _Rejects()
    reader = formats.Reader(on_error=on_error, rejects=rejects, warn=say, told=item.told)
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
    """`item` made ready to write. What --on-error skip says of it (skipped, written as read) is in its notes, which
    the parent prints in input order, wherever the work ran."""
    said: list[str] = []
    token = SAYING.set(lambda msg: said.append(noted(msg)))
    try:
        done = _process_saying(seq, item, work, ctx, lambda msg: said.append(noted(msg)))
    except Exception as e:  # what it said before the error is said with it (SAID_WITH), not lost
        with contextlib.suppress(Exception):  # (an exception that takes no attribute: a frozen dataclass's)
            setattr(e, SAID_WITH, said)  # this transcript's: an error object raised again in a later run says it once
        raise
    finally:
        SAYING.reset(token)
    if said:
        done.notes = said + done.notes
    return done


def _process_saying(seq: int, item: Transcript | Lazy, work, ctx: _Ctx, say: Callable[[str], None]) -> Done:
    if isinstance(item, Lazy) and _kept_as_read(item, ctx):  # the work would write it as it came: nothing to build
        return Done([item.raw], [], None, False, fmt=item.fmt)
    t, rejected = _materialize(item, ctx.on_error, say)
    if t is None:
        return Done([], [], None, False, rejected, skipped=True)
    try:
        return _finish(seq, t, _guarded(work, t, ctx.on_error, say), ctx)
    except (DataError, TypeError) as e:  # a transcript the work cannot make valid, or that cannot be written back
        err = _data_error(e, t)
        if err is None:
            raise
        if ctx.on_error != "skip":
            raise err from None
        say(f"skipped {err}")
        raw = [item.raw] if isinstance(item, Lazy) else formats.as_read(t) or list(formats.write(t))
        return Done([], [], None, False, rejected + raw, skipped=True)


def _data_error(e: Exception, t: Transcript) -> DataError | None:
    """`e` as the data error it is (repair: no message to send; a record nested deeper than the 254 levels
    orjson writes, which a phase or the writer failed on), or None for any other error (a bug: raised as is)."""
    if isinstance(e, DataError):
        return e
    if isinstance(e, TypeError) and "Recursion limit" in str(e):  # orjson.JSONEncodeError
        return DataError(t.source or t.id, t.line or 1, f"the record is nested deeper than {MAX_DEPTH} levels: it cannot be written back")
    return None


Meta = tuple[int, str, str, list[bytes], list[str]]  # (seq, source, id, rejects, notes: what was read before it)


def _serial(work, items: Iterable[Item], ctx: _Ctx) -> Iterator[tuple[Meta, Done]]:
    for seq, t, rej, notes in items:
        say_notes(notes)  # here, before the work, which may print (plan's description): nothing is read ahead
        yield (seq, t.source, t.id, rej, []), _process(seq, t, work, ctx)


def _threads(work, items: Iterable[Item], ctx: _Ctx, jobs: int) -> Iterator[tuple[Meta, Done]]:
    # Twice as many threads as --jobs: while `jobs` of them wait on LLM calls (the summarizer caps
    # calls in flight at `jobs`), the others prepare the next transcripts, one at a time (lane.py): the first
    # prompts are ready, and their calls go out, before the later transcripts are prepared.
    from concurrent.futures import ThreadPoolExecutor  # here: it imports logging, which a run without --jobs never needs

    cpu = Lane()
    stop = threading.Event()  # set when the run ends early (_abandon)

    def one(seq, t):
        with working_for(stop), cpu.held():  # the lane is left by the summarizer as its call goes out (lane.leave)
            return _process(seq, t, work, ctx)

    pool = ThreadPoolExecutor(max_workers=jobs * 2)
    try:
        window: deque = deque()
        reading = _ReadAhead(items)
        for seq, t, rej, notes in reading:
            window.append(((seq, t.source, t.id, rej, notes), pool.submit(one, seq, t)))
            if len(window) >= jobs * 4:
                m, f = window.popleft()
                yield m, f.result()
        while window:
            m, f = window.popleft()
            yield m, f.result()
        reading.raise_late()
    except BaseException:  # an error (a thread's, or reading), Ctrl-C, or the reader stopped (GeneratorExit)
        _abandon(pool, stop)
        raise
    pool.shutdown(wait=True)


def _abandon(pool, stop: threading.Event) -> None:
    """A run in threads that ends early starts none of the transcripts still queued, and its LLM calls in flight give
    up (`stop`, which lane.stopped reads in their threads) rather than being waited for and their answers thrown away.
    Its own event, not llm.CANCEL: another run in the process goes on, and a Ctrl-C meanwhile stays said."""
    stop.set()
    pool.shutdown(wait=True, cancel_futures=True)


_W: dict[str, Any] = {}


_SIGNALS = {signal.SIGINT, signal.SIGTERM}


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM held back while the pool may fork its workers (in submit): a worker takes them only once it
    has left the process group (_init_worker); the parent, right after. The executor's threads, started there too,
    never take them: they come to the main thread, where they raise KeyboardInterrupt."""
    if not hasattr(signal, "pthread_sigmask"):  # Windows
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _leave_signals_to_the_parent() -> None:
    """A terminal's Ctrl-C, or `timeout`, signals the whole process group. Workers that took those signals with the
    handlers they inherit (KeyboardInterrupt) died waiting for work, which broke the pool, or were killed while
    sending a result, which the executor then waited for forever: a run hung. A worker has a process group of its
    own: the parent alone is signalled, and stops its workers (_stop). SIGINT sent to a worker itself is ignored;
    SIGTERM ends it (as the executor ends the others when one dies)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one sent to the group while it forked is discarded
    if hasattr(os, "setpgid"):
        os.setpgid(0, 0)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)  # held back by _signals_held
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _init_worker(job, ctx: _Ctx, stop, parent: int) -> None:
    """Once per worker process: build the work function (a PhaseJob's Compactor: encoding, summarizer; a PruneJob's
    token counter). `parent`: the parent's pid, given by it: a parent killed before this runs, or while the work is
    built (seconds on a busy machine), is seen as gone; read here after the build, it was the reaper's, and the
    worker lingered for ever."""

    def watch() -> None:  # the parent was killed (kill -9): do not linger
        while True:
            if os.getppid() != parent:
                os._exit(1)
            time.sleep(0.5)

    threading.Thread(target=watch, daemon=True).start()
    _leave_signals_to_the_parent()
    _W["work"] = job.build()
    _W["ctx"] = ctx
    _W["stop"] = stop


# A batch that ended on an error (_work_batch): (exit code, text, notes, the Done before it, the error to raise as it
# is: a SharedSession, or a bug's own exception) and, for a bug, its traceback in the worker
Failed = tuple[int, str, list[str], list[Done], "Exception | None", str]


def _work_batch(batch: list[tuple[int, Transcript | Lazy]]) -> list[Done] | Failed:
    work, ctx, stop = _W["work"], _W["ctx"], _W["stop"]
    done: list[Done] = []
    try:
        for seq, t in batch:
            if stop.value:  # the run was interrupted: the rest is not wanted (_stop)
                break
            done.append(_process(seq, t, work, ctx))
        return done
    except CompactError as e:  # exceptions with custom constructors do not pickle: carry the code, text and notes,
        # and the batch's transcripts done before it (written, with their notes, as a run in one process writes them);
        # a SharedSession pickles as it is (its __reduce__): the run names the other inputs' formats in it
        return (int(e.exit_code), str(e), getattr(e, SAID_WITH, []), done, e if isinstance(e, SharedSession) else None, "")
    except Exception as e:  # a bug: raised in the parent as it is, after the transcripts done before it, as one process
        # raises it after writing them (the executor, given it, would drop them); its traceback here is its cause there
        tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        return (int(Exit.INTERNAL), str(e), getattr(e, SAID_WITH, []), done, _portable(e), tb)


def _portable(e: Exception) -> Exception:
    """`e` if it comes back from pickle as it is (an exception whose constructor takes other arguments than its
    `args` does not), else a RuntimeError that names it."""
    try:
        back = pickle.loads(pickle.dumps(e))
    except Exception:
        return RuntimeError(f"{type(e).__module__}.{type(e).__qualname__}: {e}")
    return e if type(back) is type(e) else RuntimeError(f"{type(e).__module__}.{type(e).__qualname__}: {e}")


class _WorkerTraceback(Exception):
    """A bug's traceback in the worker process it happened in (the cause of the error raised here)."""

    def __str__(self) -> str:
        return f'\n"""\n{self.args[0]}"""'


def _raise_failed(got: Failed) -> None:
    """The error a batch ended on, raised here as a run in one process raises it."""
    code, text, said, _, exc, tb = got
    if isinstance(exc, SharedSession):
        raise exc
    if exc is not None:
        setattr(exc, SAID_WITH, said)
        raise exc from _WorkerTraceback(tb)
    err = CompactError(text)
    err.exit_code = Exit(code)
    setattr(err, SAID_WITH, said)
    raise err


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
    if method == "fork" and hasattr(job, "before_fork"):
        job.before_fork()  # what every worker would build alike, built once here: forked, they all have it
    stop = mp.get_context(method).RawValue("b", 0)  # set by _stop; shared memory, no lock a killed worker could hold
    pool = ProcessPoolExecutor(workers, mp_context=mp.get_context(method), initializer=_init_worker, initargs=(job, ctx, stop, os.getpid()))
    window: deque = deque()

    def drain(limit: int) -> Iterator[tuple[Meta, Done]]:
        while len(window) > limit:
            metas, fut = window.popleft()
            got = fut.result()
            if isinstance(got, tuple):
                yield from zip(metas, got[3], strict=False)  # those before the error (fewer), as in one process
                _raise_failed(got)
            yield from zip(metas, got, strict=True)

    try:
        batch: list[tuple[int, Transcript | Lazy]] = []
        metas: list[Meta] = []
        size = 0
        reading = _ReadAhead(items)
        for seq, t, rej, notes in reading:
            if isinstance(t, Lazy):
                t.obj = None  # a worker parses the bytes: the parent does not hold parsed records in flight
            batch.append((seq, t))
            metas.append((seq, t.source, t.id, rej, notes))
            size += _size(t)
            if size >= 512 << 10 or len(batch) >= 256:
                window.append((metas, _submit(pool, batch)))
                batch, metas, size = [], [], 0
                yield from drain(workers * 3)
        if batch:
            window.append((metas, _submit(pool, batch)))
        yield from drain(0)
        reading.raise_late()
    except BaseException:  # Ctrl-C, SIGTERM, an error, or the loop that reads the results left early (GeneratorExit)
        _stop(pool, stop)
        raise
    pool.shutdown(wait=True)


class _ReadAhead:
    """The items an engine reads ahead of its work, ending at a bad line (a CompactError of the reader) or a bug of
    the reader (any other Exception), which is raised only once the transcripts read before it, and their own errors,
    are out (`raise_late`), as one process without read-ahead would have met them. (Ctrl-C is no error of the reader:
    it is raised at once.)"""

    def __init__(self, items: Iterable[Item]):
        self.items = iter(items)
        self.late: Exception | None = None

    def __iter__(self) -> Iterator[Item]:
        while True:
            try:
                item = next(self.items)
            except StopIteration:
                return
            except Exception as e:
                self.late = e
                return
            yield item

    def raise_late(self) -> None:
        if self.late is not None:
            raise self.late


def _submit(pool, batch: list[tuple[int, Transcript | Lazy]]):
    with _signals_held():
        return pool.submit(_work_batch, batch)


def _stop(pool, stop) -> None:
    """An interrupted (or failed) run: the batches not started are cancelled, and the workers leave the ones they
    are on at the next transcript and send back what they did, which the executor reads as usual. A worker killed
    instead could be killed while sending a result: the executor would wait for its end forever."""
    stop.value = 1
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

    def before_fork(self) -> None:
        """In the parent, before its workers fork: tiktoken's encoder (~0.15 s of CPU to build) when a worker's counter
        would build it at its first count, so that every worker has it from here instead of building its own."""
        from ..tokens import Counter

        counter = Counter(self.encoding, approx=self.approx)
        counter.expect(self.expect_bytes)
        counter.prepare()

    def build(self) -> Callable[[Transcript], Result]:
        from ..phases import prune as phase  # the phase alone: the library's api imports every phase
        from ..tokens import Counter

        counter = Counter(self.encoding, approx=self.approx)
        counter.expect(self.expect_bytes)
        opts, stats = self.opts, self.stats

        def work(t: Transcript) -> Result:
            out, st = phase.prune(t, counter, opts)
            figures = st.as_dict()
            notes = [orjson.dumps({"transcript": t.id, **figures}).decode()] if stats else []
            report = {"transcript": t.id, "status": "pruned", "prune": figures}  # --report (the record API's shape)
            return Result(out, report, st.archived, notes=notes)

        return work


def _kept(t: Transcript) -> list[list]:
    """[original index, output index, content print] of every original written unchanged (ids left out: see
    model.content_print; `restore` also reads archives that hold model.fingerprint)."""
    return [[m.index, j, content_print(m)] for j, m in enumerate(t.messages) if m.untouched]


def _placed(t: Transcript, back_as: list[Transcript]) -> tuple[list[list], list[Message]]:
    """For a transcript written in another format: `_kept` of the originals found in the output as read back
    (`back_as`), as `restore` finds them (by print, at their place there), and the originals it would not find, which
    the writer wrote otherwise (system prompts joined into one, an empty prompt left out, a developer message as a
    system one): those go to the archive (all of them when the output does not read back: a writer's fault)."""
    back = [m for b in back_as for m in b.messages]
    at: dict[str, deque[int]] = {}
    for j, m in enumerate(back):
        for p in dict.fromkeys((content_print(m), fingerprint(m), content_print(m, canonical_arguments=False))):
            at.setdefault(p, deque()).append(j)
    kept: list[list] = []
    unfound: list[Message] = []
    taken: set[int] = set()
    for m in t.messages:
        if not m.untouched:
            continue
        p = content_print(m)
        q = at.get(p, deque())
        while q and q[0] in taken:
            q.popleft()
        if q:
            taken.add(q[0])
            kept.append([m.index, q.popleft(), p])
        else:
            unfound.append(m)
    return kept, unfound


def _shared_anchors(t: Transcript) -> list | None:
    """Each original message's place in its source record, when some source message was read as several (an
    Anthropic user message of tool results and text, a Hermes turn of several tool responses): `restore` writes
    those back as one message again. None when every message stood alone."""
    anchors = [m.anchor if isinstance(m.anchor, tuple) else None for m in t.messages]
    if not any(a is not None and a == b for a, b in zip(anchors, anchors[1:], strict=False)):
        return None
    return anchors


def _one_session_per_file(t: Transcript, fmt: str, many: bool) -> None:
    """A line-log format (Claude Code, Codex) holds one session per file: a dataset's second record, or a record of
    another file into the same output (`many`), would be merged into the first one's session (its keys lost). A file's
    first record is named `file#1`, or `file` alone (a Gemini session: one record, named as its file)."""
    if t.layout != "dataset" or formats.get_format(fmt).dropped_records is None:
        return
    name = fmt.replace("_", "-")
    if not (t.id == t.source or t.id.endswith("#1")):
        raise UsageError(
            f"{t.source}: a dataset of several records cannot be written as {name} (one session per file): convert with --to openai"
        )
    if many:
        raise UsageError(
            f"several files cannot share one output as {name} (one session per file): give -o DIR/, or convert with --to openai"
        )


def _empty_log_as_itself(t: Transcript, fmt: str) -> None:
    """A session log with no user or assistant message (`rules.empty_log`) is written back as it came, in its own
    format only: in another it would be a record with no message, which no API takes."""
    if fmt != t.format and empty_log(t):
        where = fmt.replace("_", "-")
        raise DataError(t.source or t.id, t.line or 1, f"no user or assistant message: an empty session, nothing to write as {where}")


class SharedSession(UsageError):
    """A session file among several inputs on one output, in a format that cannot write it as one record of it. The
    run names the other inputs' formats too (`described`): this one is known where the work runs, they where it reads."""

    def __init__(self, source: str, read_as: str, written_as: str, others: str = "") -> None:
        self.source, self.read_as, self.written_as = source, read_as, written_as
        kind = _a(read_as.replace("_", "-") + " session") + (
            "" if written_as == read_as else f" (written as {written_as.replace('_', '-')})"
        )
        super().__init__(
            f"{source} is {kind}{others}: several inputs share one output as records of a dataset, and only OpenAI chat "
            "writes a session file as one: give -o DIR/ (one output per input), or convert with --to openai"
        )

    def __reduce__(self):  # from a worker process as it was raised
        return type(self), (self.source, self.read_as, self.written_as)

    def described(self, kinds: list[tuple[str, str]]) -> SharedSession:
        """The same error naming the other inputs' formats: (file, "anthropic session") pairs, at most three named."""
        named = [f"{f} {_a(kind)}" for f, kind in kinds[:3]] + ([f"{len(kinds) - 3} more"] if len(kinds) > 3 else [])
        if not named:
            return self
        others = ", ".join(named[:-1]) + (" and " if len(named) > 1 else "") + named[-1]
        return SharedSession(self.source, self.read_as, self.written_as, f" and {others}")


def _a(kind: str) -> str:
    return ("an " if kind[:1] in "aeiou" else "a ") + kind


def _as_dataset_record(t: Transcript, fmt: str) -> Transcript:
    """A session as one record of the shared output; `fmt`: the format it is written in."""
    if fmt != "openai":
        raise SharedSession(t.source or t.id, t.format, fmt)
    return t.evolve(layout="dataset", metadata={"source": t.source, "messages": None}, native=None)
