"""The outputs of a run: the main output (a file, stdout, or one file per input with -o DIR/) written
all-or-nothing and resumably (journal, checkpoints), and the side files (archive, rejects, report)."""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from ..errors import IOFailure, UsageError
from ..journal import Journal, PartFile, finish_part, input_ids, journal_path, part_path
from ..jsonl import JsonlSink, Output, descriptor, expand_inputs, in_place, record_line
from .base import Done, IOOptions, RunStats, no_transcript, warn

if TYPE_CHECKING:
    from ..carry import Carry


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
        # how many of first_seq the journal holds: a checkpoint adds the files begun since the one before (all of them
        # in each one made a journal over thousands of files grow with their square)
        self.fs_journaled = 0
        self.pending: list[str] = []  # -o DIR/: finished files (their targets), renamed into place when the run ends (all or nothing)
        # -o DIR/: the targets of finished inputs that gave no transcript (every record rejected): no file is written for
        # them, and an earlier run's output there is removed when the run ends
        self.unwritten: list[str] = []
        self.written_as: tuple[str, str] | None = None  # (format, input) of the first transcript written to the one output
        self.every = float(os.environ.get("COMPACTCTL_JOURNAL_EVERY", "1.0"))  # seconds between checkpoints
        self.carry: Carry | None = _carry(io.archive)  # an archive this run writes over: what its output still refers to in it
        self.archive_ended = False  # the archive's end record is written
        self.unresumable: str | None = None  # a side file written whole (an SQLite archive, a device): no --resume
        out = io.output
        journaled = self.journaled = to_dir or (out not in (None, "-") and not in_place(out))
        if io.resume and not journaled:
            raise UsageError("--resume needs -o FILE or -o DIR/ (stdout cannot be resumed)")
        if not journaled:  # stdout, or a device: written whole (spooled), not resumable
            self.out = Output(out, spool=io.on_error != "skip")
            self.sides = {k: (_archive_sink if k == "archive" else JsonlSink)(getattr(io, k)) for k in self.SIDES if getattr(io, k)}
            return
        assert out is not None  # journaled: -o FILE or -o DIR/
        ck = self._open_journal(out, files, desc)
        self._open_sides(ck)
        self._open_output(out, ck)
        if self.carry is not None and ck:  # --resume: what the parts written before the interrupt refer to
            self._seed_carry(self.carry, out)
        rejected = ck.get("rj", 0)  # "n" counts every record read, the rejected too (--resume skips them all)
        self.stats = RunStats(ck.get("n", 0) - rejected, ck.get("changed", 0), rejected=rejected)
        self.key = ck.get("key", "")
        self.first_seq = dict(ck.get("fs", {}))
        self.fs_journaled = len(self.first_seq)
        self.written_as = tuple(ck["wf"]) if isinstance(ck.get("wf"), list) else None  # what the killed run wrote
        self.archive_ended = bool(ck.get("ae"))  # killed after the archive's end record was checkpointed: not again

    def _open_journal(self, out: str, files: list[str], desc: str) -> dict:
        """Start a journal, or (--resume) load the interrupted run's: its last checkpoint ({} if none)."""
        io, to_dir = self.io, self.to_dir
        inputs = input_ids(files)  # as the run starts reading them

        def header() -> dict:
            return {
                "journal": "compactctl",
                "version": 1,
                "command": desc,
                "options": _fingerprint(io),
                "inputs": inputs,
                "output": os.path.abspath(out) + (os.sep if to_dir else ""),
            }

        if to_dir:
            try:
                os.makedirs(out, exist_ok=True)
            except OSError as err:  # a file of that name, a read-only parent
                raise IOFailure(f"{out}: cannot be the output directory ({err.strerror or err})") from err
        self.journal = Journal(journal_path(out, to_dir), header)
        if not (io.resume and os.path.exists(self.journal.path)) or self.journal.unstarted():
            if os.path.exists(self.journal.path):
                if not io.quiet and not io.resume:
                    warn(f"{self.journal.path}: an interrupted run's journal; starting over (use --resume to continue it)")
                self.journal.start()  # replaced at once: its checkpoints describe another run's parts
            # else written at the first checkpoint (see checkpoint): a run that ends before one may need none
            return {}
        if "-" in files:
            raise UsageError("cannot resume a run that reads stdin")
        entries, valid = self.journal.load()
        ck: dict = {}
        first_seq: dict = {}
        for e in entries:
            if e["t"] == "ck":
                ck = e
                first_seq.update(e.get("fs") or {})  # each checkpoint holds the files begun since the one before
            elif e["t"] == "done":
                self.done_files.add(e["file"])
                if e.get("empty"):  # no output file (see _close_file)
                    self.unwritten.append(self.targets[e["file"]])
            else:
                self.ended = True
        self.state = ck
        self.journal.reopen(valid)
        return {**ck, "fs": first_seq} if ck else ck

    def _seed_carry(self, carry: Carry, out: str) -> None:
        assert self.io.archive is not None  # a Carry is made for an archive only
        carry.seed(part_path(self.io.archive), archive=True)
        outputs = [out]
        if self.to_dir:  # the files finished before the interrupt, and the one it cut
            outputs = [*self.pending, *([self.targets[self.current]] if self.current and self.out is not None else [])]
        for target in outputs:
            carry.seed(part_path(target), archive=False)

    def _open_sides(self, ck: dict) -> None:
        """The side files as part files, truncated to the checkpoint when resuming (an SQLite archive is written whole;
        so is a device or a pipe, /dev/null: a part file renamed over it would replace the device with a file)."""
        offs = ck.get("off", {})
        for k in self.SIDES:
            p = getattr(self.io, k)
            if not p:
                continue
            if p == "-" or in_place(p):
                if self.io.resume and ck:  # spooled and written at the end: what the interrupted run wrote is gone
                    raise UsageError(f"--resume cannot continue --{k} {p}: it is not a regular file; give a file")
                self.sides[k] = (_archive_sink if k == "archive" else JsonlSink)(p)
                self.unresumable = f"--{k} {p}"
            elif k == "archive" and _is_sqlite(p):  # an SQLite index is written whole, not in resumable parts
                if self.io.resume and ck:
                    raise UsageError(
                        f"--resume cannot continue the SQLite archive {p}: use a JSONL archive (recall indexes it on first use)"
                    )
                self.sides[k] = _archive_sink(p)
                self.unresumable = f"the SQLite archive {p}"
            else:
                self.sides[k] = PartFile(p, offs.get(k) if ck else None) if not self.ended else None

    def _open_output(self, out: str, ck: dict) -> None:
        """-o FILE: its part file. -o DIR/: finish the renames a kill left, reopen the file that was being written."""
        offs = ck.get("off", {})
        if not self.to_dir:
            self.out = PartFile(out, offs.get("out") if ck else None) if not self.ended else None
            return
        finished = [self.targets[f] for f in sorted(self.done_files)]
        self.pending += [t for t in finished if t not in self.unwritten]  # finished before the kill: renamed at the end
        if ck and ck.get("file") not in self.done_files and not self.ended:
            self.current = ck["file"]
            self.file_n = ck["fn"]
            if "out" in offs:  # else every record of it read so far was rejected: no file yet
                os.makedirs(os.path.dirname(self.targets[self.current]) or ".", exist_ok=True)
                self.out = PartFile(self.targets[self.current], offs["out"])

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

    def add(self, source: str, tid: str, done: Done, rejects: list[bytes]) -> None:
        """Write one transcript's outputs, numbered as written: a record rejected once read (--on-error skip) takes
        no number, so that output record k is archive seq k (or first_seq + k in its file), as `restore` reads them."""
        self._same_format(source, done)
        seq = self.stats.transcripts
        self.first_seq.setdefault(source, seq)
        for rec in done.archive:
            rec["seq"] = seq
        self.write(source, done, rejects)
        self.stats.transcripts += not done.skipped
        self.stats.rejected += done.skipped
        self.stats.changed += done.changed
        self.key = tid

    def _same_format(self, source: str, done: Done) -> None:
        """One output holds one format: a reader detects it from the first record, so a file whose later records
        are in another format does not read back (nor does a dataset of mixed formats train)."""
        if self.to_dir or done.fmt is None:
            return
        if self.written_as is None:
            self.written_as = (done.fmt, source)
        elif done.fmt != self.written_as[0]:
            fmt, first = self.written_as
            raise UsageError(
                f"{source} is written as {done.fmt}, and {first} before it as {fmt}: inputs of different formats cannot share one "
                "output (it would not read back). Give --to FORMAT (e.g. --to openai), or -o DIR/ for one output per input."
            )

    def write(self, source: str, done: Done, rejects: list[bytes]) -> None:
        if self.to_dir:
            self._to_file(source, done.skipped)
        if "rejects" in self.sides:
            for line in (*rejects, *done.rejects):
                self._side("rejects", line + b"\n")
        carry = self.carry
        for line in done.lines:
            self.out.write(line + b"\n")
            if carry is not None:
                carry.wrote(line)
        if "archive" in self.sides:
            for rec in done.archive:
                data = record_line(rec)
                self._side("archive", data)
                if carry is not None:
                    carry.archived(rec, data)
        if done.report is not None and "report" in self.sides:
            self._side("report", record_line(done.report))
        self.file_n += 1

    def _to_file(self, source: str, skipped: bool) -> None:
        """-o DIR/: one output file per input file, each atomic, opened at the first transcript written to it: an input
        whose every record is rejected (--on-error skip) gets no file."""
        if source != self.current:
            self._close_file()
            self.current = source
            self.file_n = 0
        if self.out is None and not skipped:
            os.makedirs(os.path.dirname(self.targets[source]) or ".", exist_ok=True)
            self.out = PartFile(self.targets[source])  # -o DIR/ always keeps a journal

    def _side(self, k: str, data: bytes) -> None:
        s = self.sides[k]
        if _whole(s):
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
        write = self.journal.append if self.journal.started else self.journal.start  # the first: with the header
        write(
            {
                "t": "ck",
                "n": stats.transcripts + stats.rejected,  # records read: what --resume skips
                "rj": stats.rejected,
                "key": key,
                "file": self.current if self.to_dir else "*",
                "fn": self.file_n,
                "off": off,
                "changed": stats.changed,
                "fs": dict(itertools.islice(self.first_seq.items(), self.fs_journaled, None)),
                "wf": self.written_as,
                **({"ae": True} if self.archive_ended else {}),  # the archive's end record is in its part
            }
        )
        self.fs_journaled = len(self.first_seq)
        self.last_ck = time.monotonic()

    def _close_file(self) -> None:
        if self.current is None:
            return
        if self.journal is not None:
            self.checkpoint()
            self.journal.append(self._done_entry())
        if self.out is None:  # no transcript of it was written
            self.unwritten.append(self.targets[self.current])
            return
        self.out.leave()  # closed; renamed with the others when the run ends (a kill after "done": --resume renames it)
        self.pending.append(self.out.target)
        self.out = None

    def _done_entry(self) -> dict:
        """The journal's record that the current input's output is complete; "empty": it has none (--resume then
        neither reads that input again nor looks for its file)."""
        return {"t": "done", "file": self.current, **({"empty": True} if self.out is None else {})}

    def finish(self, tail_rejects: list[bytes]) -> None:
        for line in tail_rejects:
            if "rejects" in self.sides:
                self._side("rejects", line + b"\n")
        if not self.ended:
            self._end_archive()
            self._end_journal()
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
                s.close(True) if _whole(s) else s.commit()
        for target in self.pending:
            try:
                finish_part(target)
            except OSError as e:
                raise IOFailure(f"{target}: {e.strerror or e}") from e
        self._say_empty()
        self._remove_unwritten()
        if self.journal is not None:
            self.journal.remove()

    def _say_empty(self) -> None:
        """What an input that holds no transcript (empty, blank lines, every line rejected as read) gives, said: under
        -o DIR/ no file (as for an input whose every record is rejected; an earlier run's file there goes too), with
        -o FILE the file written empty (the run's one output, as stdout gives nothing)."""
        if self.to_dir:
            seen = {*self.first_seq, *self.done_files}
            for f, target in self.targets.items():
                if f not in seen:  # never gave the run a record: the sinks never opened its file
                    self.unwritten.append(target)
                    if not self.io.quiet:
                        warn(no_transcript(f, target))
        elif self.journaled and self.stats.transcripts == 0 and not self.io.quiet:
            warn(f"{self.io.output}: written empty: the input gives no transcript")

    def _remove_unwritten(self) -> None:
        """-o DIR/: an input that gave no transcript has no output; one an earlier run left at its place would pass for
        this run's (an older compactctl wrote it empty), so it goes, as a file written there would have replaced it."""
        for target in self._unwritten_now():
            if not os.path.isfile(target) or os.path.islink(target):
                continue
            try:
                os.unlink(target)
            except OSError as e:
                raise IOFailure(f"{target}: {e.strerror or e}") from e
            if not self.io.quiet:
                warn(f"{target}: removed: an earlier run's output, and its input gave no transcript this time")

    def _end_journal(self) -> None:
        """Checkpoint the finished run and say it ended: a kill after this leaves only the renames, which --resume
        does. One output, no side file and no checkpoint yet: nothing to keep in step, so no journal; its part is
        made durable before it is renamed."""
        if self.journal is None:
            return
        if not self.journal.started and not self.sides and not self.pending and isinstance(self.out, PartFile):
            self.out.sync()
            self.journal = None
            return
        self.checkpoint()
        if self.to_dir and self.current is not None:
            self.journal.append(self._done_entry())
        self.journal.append({"t": "end"})

    def _end_archive(self, stopped: str | None = None) -> None:
        """The archive's closing record (restore refuses an archive without it: truncated); `stopped`: why a run
        whose output was streamed ended early (the archive covers what was written)."""
        if self.sides.get("archive") is None or self.archive_ended:
            return
        carried = 0
        if self.carry is not None:
            for rec in self.carry.records(warn):
                self._side("archive", record_line(rec))
                carried += 1
        end = {
            "type": "end",
            "transcripts": self.stats.transcripts,
            "sources": list(self.first_seq),
            "first_seq": self.first_seq,
            "rejected": self.stats.rejected,  # records rejected once read (--on-error skip)
        }
        if self.stats.skipped_lines:  # lines rejected as read (not JSON, not a record of the format)
            end["skipped_lines"] = self.stats.skipped_lines
        if self.to_dir and self.io.output:  # restore finds an output's input by it (names alone may tie); none: no file
            none = set(self._unwritten_now())
            written = [s for s in self.first_seq if s in self.targets and self.targets[s] not in none]
            end["outputs"] = {s: os.path.relpath(self.targets[s], self.io.output) for s in written}
        if carried:
            end["carried"] = carried
        if stopped is not None:
            end["stopped"] = stopped
        self._side("archive", record_line(end))
        self.archive_ended = True

    def _unwritten_now(self) -> list[str]:
        """The targets with no output file: the finished inputs that gave no transcript, and the current one if so far."""
        current = [self.targets[self.current]] if self.to_dir and self.current is not None and self.out is None else []
        return self.unwritten + current

    def fail(self, interrupted: bool, error: Exception | None = None) -> None:
        """An error: nothing is left (all or nothing). An interrupt (Ctrl-C): the parts and the journal stay, for --resume
        (before the first checkpoint there is no journal and nothing to resume: nothing stays).
        Transcripts already streamed to stdout (--on-error skip) stay written: the side files are kept to match them."""
        if isinstance(self.out, Output) and self.out.streams and self.stats.transcripts:
            self._keep_sides((str(error) or type(error).__name__) if error is not None else "interrupted")
            return
        if interrupted and self._nothing_to_resume():
            interrupted = False  # so nothing is kept
        if not interrupted:  # finished files not yet in place: an error leaves none
            for target in self.pending:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(part_path(target))
        for s in (self.out, *self.sides.values()):
            if s is None:
                continue
            if _whole(s):
                s.close(False)
            elif isinstance(s, PartFile):
                s.leave() if interrupted else s.abort()
            else:
                s.abort()
        if self.journal is not None:
            self.journal.close() if interrupted else self.journal.remove()
            if interrupted:
                with contextlib.suppress(OSError):
                    print(
                        f"compactctl: interrupted: what was written is kept ({self.journal.path} and *.compactctl-part); "
                        "the same command with --resume continues from there",
                        file=sys.stderr,
                    )

    def _nothing_to_resume(self) -> bool:
        """An interrupted run to files that wrote no journal yet (before its first checkpoint), or that writes a side
        file whole (an SQLite archive, a device): --resume would start over, or refuse, so what it wrote is removed;
        said on stderr, as is the one output already renamed into place."""
        if not self.journaled:
            return False
        if self.journal is not None and self.journal.started:
            if self.unresumable is None:
                return False
            with contextlib.suppress(OSError):  # what was kept would only be refused by --resume
                print(
                    f"compactctl: interrupted: nothing was kept (--resume cannot continue a run that writes {self.unresumable})",
                    file=sys.stderr,
                )
            return True
        renamed = isinstance(self.out, PartFile) and not os.path.exists(self.out.path)
        with contextlib.suppress(OSError):
            print(
                f"compactctl: interrupted after {self.out.target} was written whole"
                if renamed
                else "compactctl: interrupted before the first checkpoint: nothing was kept",
                file=sys.stderr,
            )
        return True

    def _keep_sides(self, reason: str) -> None:
        """The side files as the transcripts printed before the run stopped: their archive records (closed, with the
        reason, so `restore` rebuilds what was printed), reports and the rejected lines read before them."""
        try:
            self._end_archive(stopped=reason)
            for s in self.sides.values():
                s.close(True) if _whole(s) else s.commit()
        except Exception as e:  # noqa: BLE001 (the run's own error is the one to report)
            warn(f"the side files could not be kept: {e}")
            for s in self.sides.values():
                with contextlib.suppress(Exception):
                    s.close(False) if _whole(s) else s.abort()
            return
        kept = ", ".join(getattr(self.io, k) for k in self.SIDES if getattr(self.io, k))
        if kept and not self.io.quiet:
            warn(f"what was written to standard output stays; the side files match it: {kept}")


def _fingerprint(io: IOOptions) -> str:
    from ..journal import fingerprint as fp

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
    """Refuse, before anything is written, outputs that would overwrite an input or each other, or a folder (renamed
    into place at the end, the outputs before it would be there and the run failed)."""

    def same(p: str) -> str:
        return os.path.realpath(p)

    def regular(p: str) -> bool:  # devices (/dev/null), pipes and open descriptors (/dev/stderr) may be shared
        return not in_place(p)

    inputs: dict[str, str] = {}
    for f in files:
        if f == "-":
            continue
        if same(f) in inputs:
            raise UsageError(f"{f} is given twice (also as {inputs[same(f)]}): each input is read once")
        inputs[same(f)] = f
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
    _one_on_stdout(io, to_dir)
    owner: dict[str, str] = {}
    for label, p in outs:
        if os.path.isdir(p):
            raise IOFailure(f"{p}: is a directory: {label} cannot be written there")
        if not regular(p):
            continue
        k = same(p)
        if k in inputs:
            raise UsageError(f"{label} ({p}) is also an input: it would be overwritten")
        if k in owner:
            raise UsageError(f"{owner[k]} and {label} are the same file ({p}): each output needs its own file")
        owner[k] = f"{label} {p}" if label.startswith("-") else label


def _one_on_stdout(io: IOOptions, to_dir: bool) -> None:
    """`--report -` (or /dev/stdout) with the transcripts on stdout too: report lines between the records, a stream
    the next stage of a pipe cannot read. One output a stream."""
    sides = [f"--{k} {getattr(io, k)}" for k in ("archive", "report", "rejects") if getattr(io, k) and _on_stdout(getattr(io, k))]
    if not to_dir and (io.output is None or _on_stdout(io.output)):
        sides.insert(0, "the output")
    if len(sides) > 1:
        raise UsageError(
            f"{' and '.join(sides)} cannot share standard output (the lines of one between the other's): give all but one a file"
        )


def _on_stdout(p: str) -> bool:
    return p == "-" or descriptor(p) == 1


def _whole(s: Any) -> bool:
    """A side written whole and closed with close(ok) (a JsonlSink, an archive's SqliteSink), not a resumable part file."""
    return hasattr(s, "add_raw")


# The archive modules (and sqlite3) are imported by a run that writes one.
def _archive_sink(path: str) -> Any:
    from ..archive import sink

    return sink(path)


def _carry(path: str | None) -> Carry | None:
    """A Carry when the run writes its archive over an existing file (see carry.Carry), else None."""
    if not path or path == "-" or not os.path.isfile(path):
        return None
    from ..carry import Carry

    return Carry(path)


def _is_sqlite(path: str) -> bool:
    from ..archive import is_sqlite

    return is_sqlite(path)
