"""Resumable outputs: part files and the journal that says how much of them is done.

A run that writes to files (`-o FILE` or `-o DIR/`) writes each output (and each side file: archive,
report, rejects) to `NAME.compactctl-part` next to it, and keeps a journal (`FILE.compactctl-journal`,
or `DIR/.compactctl-journal`): a header naming the inputs (path, size, mtime) and a fingerprint of the
options, then checkpoints. A checkpoint is written after the part files are flushed and fsync'd:

    {"t": "ck", "n": transcripts written, "key": the last one's id, "file": the input file (DIR) or "*",
     "fn": transcripts written of that file, "off": {"out": bytes, "archive": bytes, ...}, ...}
    {"t": "done", "file": input}  one output file of -o DIR/ is complete (renamed next); with "empty": true,
                                   the input gave no transcript (every record rejected): it has no file
    {"t": "end"}                   every output is complete (renamed next)

On success the parts are renamed over their targets and the journal is removed, so a finished run looks
exactly as before (all or nothing). The journal is written at the first checkpoint (a header alone resumes
nothing), so a run that ends before one with one output and no side file (a hook's `-o FILE` on one
session) writes no journal at all: its part is fsync'd and renamed, four fsyncs fewer. After a kill (kill -9
included) the parts and the journal stay; `--resume` truncates each part to its last checkpoint, skips the
transcripts already written and carries on. A torn last journal line (killed while writing it) is ignored; anything else that does not
parse, or a journal written for other inputs or options, is refused.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from typing import IO, Any

import orjson

from .errors import IOFailure, UsageError
from .jsonl import keep_mode, record_line

PART = ".compactctl-part"
VERSION = 1


def journal_path(output: str, to_dir: bool) -> str:
    return os.path.join(output, ".compactctl-journal") if to_dir else output + ".compactctl-journal"


def part_path(target: str) -> str:
    return target + PART


def fingerprint(options: Any) -> str:
    import hashlib  # here: a run to stdout keeps no journal, and never pays OpenSSL's start-up

    return hashlib.sha256(orjson.dumps(options, option=orjson.OPT_SORT_KEYS, default=str)).hexdigest()


def input_ids(files: list[str]) -> list[list]:
    out: list[list] = []
    for f in files:
        if f == "-":
            out.append(["-", None, None])
            continue
        st = os.stat(f)
        out.append([os.path.abspath(f), st.st_size, st.st_mtime_ns])
    return out


class PartFile:
    """An output written to TARGET.compactctl-part, renamed over TARGET on commit."""

    def __init__(self, target: str, resume_at: int | None = None):
        self.target = target
        self.path = part_path(target)
        try:
            if resume_at is None:
                # 0600, like the temporary files of one-shot outputs: an output may hold what a transcript held. A file
                # of its own: a leftover part (another program's, 0644, or a link to a file elsewhere) is removed, never
                # written through.
                if os.path.lexists(self.path):
                    os.unlink(self.path)
                self.f: IO[bytes] = os.fdopen(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb")
                self.offset = 0
            else:
                # never through a link planted where the part was (O_NOFOLLOW: ELOOP, refused below)
                self.f = os.fdopen(os.open(self.path, os.O_RDWR | os.O_NOFOLLOW), "r+b")
                size = os.fstat(self.f.fileno()).st_size
                if size < resume_at:
                    self.f.close()
                    raise UsageError(
                        f"{self.path} holds {size} bytes, the journal says {resume_at}: cannot resume "
                        f"(remove the journal and the .compactctl-part files to start over)"
                    )
                self.f.truncate(resume_at)
                self.f.seek(resume_at)
                self.offset = resume_at
        except FileNotFoundError as e:
            if resume_at is None:  # a new part in a folder that does not exist: nothing to resume
                raise IOFailure(f"{target}: cannot write here ({e.strerror or e})") from e
            raise UsageError(f"{self.path}: missing, cannot resume (remove the journal to start over)") from e
        except OSError as e:
            if resume_at is not None and e.errno == errno.ELOOP:
                raise UsageError(
                    f"{self.path}: a symbolic link, not the part the run wrote: cannot resume (remove it and the journal to start over)"
                ) from e
            raise IOFailure(f"{target}: cannot write here ({e.strerror or e})") from e

    def write(self, data: bytes) -> None:
        self.f.write(data)
        self.offset += len(data)

    def sync(self) -> None:
        self.f.flush()
        os.fsync(self.f.fileno())

    def commit(self) -> None:
        self.f.close()
        try:
            keep_mode(self.path, self.target)
            os.replace(self.path, self.target)
        except OSError as e:
            raise IOFailure(f"{self.target}: {e.strerror or e}") from e

    def abort(self) -> None:
        self.f.close()
        if os.path.exists(self.path):
            os.unlink(self.path)

    def leave(self) -> None:
        """Keep the part for a later --resume (an interrupt)."""
        self.f.close()


def finish_part(target: str) -> None:
    """Complete a commit a kill interrupted: the part is renamed if it is still there."""
    p = part_path(target)
    if os.path.exists(p):
        keep_mode(p, target)
        os.replace(p, target)


class Journal:
    def __init__(self, path: str, header: dict | Callable[[], dict]):
        """`header`: the header, or what makes it when it is first needed (at the first checkpoint, or to read a
        journal left by a kill): a run that writes no journal never hashes its options (OpenSSL's start-up)."""
        self.path = path
        self._header = header
        self.f: IO[bytes] | None = None
        self._started = False

    @property
    def header(self) -> dict:
        if callable(self._header):
            self._header = self._header()
        return self._header

    @property
    def started(self) -> bool:
        """The journal file is written (by this run, or by the interrupted one --resume reopened); still so while
        it is being closed and removed at the end."""
        return self._started

    def start(self, *entries: dict) -> None:
        """Write the journal: its header and `entries` (a first checkpoint), in one write and one fsync."""
        try:
            if os.path.lexists(self.path):  # an old journal (not resumed) or a link planted where it goes: replaced
                os.unlink(self.path)
            self.f = os.fdopen(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb")
        except OSError as e:
            raise IOFailure(f"{self.path}: cannot write the journal ({e.strerror or e})") from e
        self._started = True
        self.append(self.header, *entries)
        _fsync_dir(self.path)

    def reopen(self, valid_bytes: int) -> None:
        try:
            self.f = os.fdopen(os.open(self.path, os.O_RDWR | os.O_NOFOLLOW), "r+b")  # never through a planted link
        except OSError as e:
            raise IOFailure(f"{self.path}: cannot reopen the journal to resume ({e.strerror or e})") from e
        self._started = True
        self.f.truncate(valid_bytes)  # drop a torn last line
        self.f.seek(valid_bytes)

    def append(self, *entries: dict) -> None:
        assert self.f is not None
        self.f.write(b"".join(record_line(e) for e in entries))
        self.f.flush()
        os.fsync(self.f.fileno())

    def close(self) -> None:
        if self.f is not None:
            self.f.close()
            self.f = None

    def remove(self) -> None:
        self.close()
        if os.path.exists(self.path):
            os.unlink(self.path)

    def unstarted(self) -> bool:
        """A run killed between creating its journal and writing its header (all it writes first): the file holds a
        beginning of this run's header, or nothing. Nothing else was written yet, so --resume starts over."""
        head = record_line(self.header)
        try:
            with open(self.path, "rb") as f:
                data = f.read(len(head))
        except OSError:
            return False
        return len(data) < len(head) and head.startswith(data)

    def load(self) -> tuple[list[dict], int]:
        """The entries after the header, checked against this run's header; and the bytes that hold them."""
        entries, valid = self._read_lines()
        if not entries or entries[0].get("journal") != "compactctl":
            raise UsageError(f"{self.path}: not a compactctl journal; refusing to resume")
        self._check_header(entries.pop(0))
        for entry in entries:
            if not _valid_entry(entry):
                raise UsageError(f"{self.path}: corrupt journal entry {entry!r:.80}; refusing to resume")
        return entries, valid

    def _read_lines(self) -> tuple[list[dict], int]:
        """Every complete line as an object (a torn last line left out); the bytes they take."""
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise IOFailure(f"{self.path}: {e.strerror or e}") from e
        lines = data.split(b"\n")
        torn = lines.pop()  # b"" when the file ends with a newline; else a line cut by a kill
        entries = []
        for k, line in enumerate(lines):
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                obj = None
            if not isinstance(obj, dict):
                raise UsageError(
                    f"{self.path}: line {k + 1} is corrupt: not a compactctl journal, or damaged; "
                    f"refusing to resume (remove it and the .compactctl-part files to start over)"
                )
            entries.append(obj)
        return entries, len(data) - len(torn)

    def _check_header(self, head: dict) -> None:
        """Refuse a journal of another version, command, options, inputs or output."""
        if head.get("version") != VERSION:
            raise UsageError(f"{self.path}: journal version {head.get('version')} (this compactctl writes {VERSION}); refusing to resume")
        mine = orjson.loads(record_line(self.header))  # as written: a name that is not UTF-8 holds U+FFFD there
        if head.get("command") != mine["command"] or head.get("options") != mine["options"]:
            raise UsageError(
                f"{self.path}: written by another command or other options ({head.get('command')}); refusing to resume "
                f"(run with the same options, or remove the journal to start over)"
            )
        if head.get("inputs") != mine["inputs"]:
            raise UsageError(f"{self.path}: written for other inputs (or they changed since: size or mtime); refusing to resume")
        if head.get("output") != mine["output"]:
            raise UsageError(f"{self.path}: written for another output ({head.get('output')}); refusing to resume")


def _valid_entry(entry: dict) -> bool:
    if entry.get("t") in ("done", "end"):
        return True
    return (
        entry.get("t") == "ck"
        and isinstance(entry.get("n"), int)
        and isinstance(entry.get("fn"), int)
        and isinstance(entry.get("key"), str)
        and isinstance(entry.get("file"), (str, type(None)))
        and isinstance(entry.get("off"), dict)
        and all(isinstance(v, int) for v in entry["off"].values())
    )


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
