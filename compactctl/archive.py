"""The archive of removed originals as a searchable SQLite database (FTS5, bm25).

`--archive x.jsonl` writes JSON lines (as always); `--archive x.sqlite` (or .db) writes the same
records straight into an index. A JSONL archive is indexed on first use into the sibling `x.sqlite`,
which records the JSONL it was made from (`derived_from`: its name relative to the index, size,
mtime, inode) and is rebuilt when that JSONL changes. A sibling that is not that JSONL's index
(another run's `--archive x.sqlite`, any other file) is never written over: the index goes to
`x.jsonl.index.sqlite` instead, and when that name is taken too, nothing is written (IOFailure).
Records are keyed by transcript, reference and position; every record's JSON is kept verbatim, so
`restore` reads either kind.

Schema: `records` (one row per archive record, the "map" records included), `search` (FTS5 over
the text of each archived message: content, tool-call names and arguments), `spans` (summarized
spans: reference -> the positions they covered); a derived index also has `derived_from` (one row).
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
import sqlite3
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import field
from typing import Any

import orjson

from .errors import CompactError, DataError, Exit, IOFailure
from .jsonl import JsonlSink, iter_lines, open_input, parse_line
from .lean import dataclass
from .refs import REF_RE

MAX_TERMS = 12  # words of a query that count (a record with all of the query's words has these too)
SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
SCHEMA = """
CREATE TABLE records(id INTEGER PRIMARY KEY, seq INTEGER, transcript TEXT, idx INTEGER, phase TEXT, ref TEXT,
                     span TEXT, role TEXT, text TEXT, call TEXT, raw BLOB NOT NULL);
CREATE TABLE spans(seq INTEGER, transcript TEXT, span TEXT, start INTEGER, end INTEGER, PRIMARY KEY(seq, transcript, span));
CREATE VIRTUAL TABLE search USING fts5(text, call, content='records', content_rowid='id');
INSERT INTO search(search, rank) VALUES('rank', 'bm25(1.0, 0.25)');
"""
# (a tool result's call, its second column, counts a quarter: it finds the output of reading a file by the file's
# path without crowding out the originals that hold the words themselves)
# An index built from a JSONL archive says which one, so that it is only ever rebuilt over itself.
DERIVED_VERSION = 2
DERIVED = "CREATE TABLE derived_from(version INTEGER, name TEXT, path TEXT, size INTEGER, mtime_ns INTEGER, ino INTEGER);"
INDEXES = """
CREATE INDEX IF NOT EXISTS records_ref ON records(ref);
CREATE INDEX IF NOT EXISTS records_pos ON records(seq, transcript, idx);
CREATE INDEX IF NOT EXISTS spans_ref ON spans(span);
"""


class UnknownRef(CompactError):
    """No archived original has this reference."""

    exit_code = Exit.NOT_FOUND


def is_sqlite(path: str) -> bool:
    return path.lower().endswith(SQLITE_SUFFIXES)


def sink(path: str | None):
    """Where the runner writes archive records: JSON lines, or an index for a .sqlite/.db path."""
    if path and is_sqlite(path):
        return SqliteSink(path)
    return JsonlSink(path)


def searchable(body: dict) -> tuple[str, str]:
    """(role, text) of an archived message: its text, then each tool call's name and arguments (readable)."""
    from .formats.openai import message_from_dict

    m = message_from_dict(body, "<archive>", 0, 0)
    parts = [m.text()] if m.text() else []
    if m.reasoning:
        parts.append(m.reasoning)
    parts.extend(f"[call {c.name}] {_readable(c.arguments)}" for c in m.tool_calls)
    return m.role, "\n".join(parts)


def _readable(arguments: str) -> str:
    """Call arguments as a person (or a search for a command line) reads them: the string values of a
    JSON object unescaped (an argv list joined by spaces), one `key: value` per line; anything else as written."""
    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return arguments
    if not isinstance(value, dict):
        return arguments
    return "\n".join(f"{k}: {_plain(v)}" for k, v in value.items())


def _plain(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, list) and all(isinstance(x, str) for x in v):  # argv, as Codex writes commands
        return " ".join(v)
    return orjson.dumps(v).decode()


class SqliteSink:
    """Archive records written into a new index, atomically: a temporary file renamed on success."""

    def __init__(self, path: str):
        self.path = path
        d = os.path.dirname(os.path.abspath(path))
        try:
            fd, self.tmp = tempfile.mkstemp(prefix=".compactctl-", suffix=".sqlite", dir=d)
        except OSError as e:
            raise IOFailure(f"{path}: {e.strerror or e}") from e
        os.close(fd)
        self.db = sqlite3.connect(self.tmp)
        self.db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + SCHEMA)
        self.count = 0
        self.publish: Callable[[str, str], None] = os.replace  # (temporary file, path): puts the finished index in place

    def add(self, rec: dict) -> None:
        _insert(self.db, rec, orjson.dumps(rec))
        self.count += 1

    def add_raw(self, line: bytes) -> None:
        self.add(orjson.loads(line))

    def close(self, ok: bool) -> None:
        try:
            if ok:
                self.db.executescript(INDEXES)
                self.db.commit()
            self.db.close()
            if ok:
                self.publish(self.tmp, self.path)
        finally:
            if os.path.exists(self.tmp):
                os.unlink(self.tmp)


def _insert(db: sqlite3.Connection, rec: dict, raw: bytes, search: bool = True) -> None:
    seq, transcript = rec.get("seq"), rec.get("transcript")
    if rec.get("type") == "map" or not isinstance(rec.get("message"), dict):
        db.execute("INSERT INTO records(seq, transcript, raw) VALUES (?, ?, ?)", (seq, transcript, raw))
        return
    role, text = searchable(rec["message"])
    call = rec.get("call")  # a tool result is found by its call too (the file it read, the command it ran)
    said = f"[output of {call.get('name')}] {_readable(str(call.get('arguments') or ''))}" if isinstance(call, dict) else None
    cur = db.execute(
        "INSERT INTO records(seq, transcript, idx, phase, ref, span, role, text, call, raw) VALUES (?,?,?,?,?,?,?,?,?,?)",
        (seq, transcript, rec.get("index"), rec.get("phase"), rec.get("ref"), rec.get("span"), role, text, said, raw),
    )
    if search:
        db.execute("INSERT INTO search(rowid, text, call) VALUES (?, ?, ?)", (cur.lastrowid, text, said))
    if rec.get("span"):
        db.execute(
            "INSERT OR IGNORE INTO spans VALUES (?, ?, ?, ?, ?)", (seq, transcript, rec["span"], rec.get("span_start"), rec.get("span_end"))
        )


def build(jsonl_path: str, sqlite_path: str) -> int:
    """Index a JSONL archive into `sqlite_path` (atomically); returns the number of records.
    `sqlite_path` must be absent or an index of this JSONL: anything else is left untouched (IOFailure)."""
    if _state(sqlite_path, jsonl_path) == "foreign":
        raise IOFailure(f"{sqlite_path}: not the index of {jsonl_path} (another run's archive, or another file): left untouched")
    ident = _identity(jsonl_path)  # before reading: a JSONL that changes meanwhile is indexed again next time
    s = SqliteSink(sqlite_path)
    s.publish = lambda tmp, path: _publish(tmp, path, jsonl_path)
    ok = False
    try:
        s.count = _fill(s.db, jsonl_path)
        s.db.executescript(DERIVED)
        s.db.execute(
            "INSERT INTO derived_from VALUES (?, ?, ?, ?, ?, ?)",
            (DERIVED_VERSION, _name(jsonl_path, sqlite_path), os.path.abspath(jsonl_path), *ident),
        )
        ok = True
    finally:
        s.close(ok)
    return s.count


def _fill(db: sqlite3.Connection, jsonl_path: str, search: bool = True) -> int:
    """Insert every record of a JSONL archive (`search`: into the full-text index too); returns how many."""
    n = 0
    with open_input(jsonl_path) as f:
        for lineno, raw in iter_lines(f):
            rec = parse_line(raw, jsonl_path, lineno)
            if not isinstance(rec, dict) or ("seq" not in rec and rec.get("type") != "end"):
                raise DataError(jsonl_path, lineno, "not a compactctl archive record")
            _insert(db, rec, raw, search)
            n += 1
    return n


def _identity(jsonl_path: str) -> tuple[int, int, int]:
    """(size, mtime in ns, inode) of a JSONL archive: any rewrite of it changes one of them."""
    try:
        st = os.stat(jsonl_path)
    except OSError as e:
        raise IOFailure(f"{jsonl_path}: {e.strerror or e}") from e
    return st.st_size, st.st_mtime_ns, st.st_ino


def _name(jsonl_path: str, sqlite_path: str) -> str:
    """The JSONL as its index names it: relative to the index's folder (both can move together)."""
    jsonl, folder = os.path.abspath(jsonl_path), os.path.dirname(os.path.abspath(sqlite_path))
    try:
        return os.path.relpath(jsonl, folder)
    except ValueError:  # another drive (Windows)
        return jsonl


def _state(sqlite_path: str, jsonl_path: str) -> str:
    """What `sqlite_path` is to the JSONL archive: "absent", its index ("fresh", or "stale" when the JSONL
    changed since), or "foreign": any other file (another run's archive, an index of another JSONL, not SQLite)."""
    try:
        st = os.lstat(sqlite_path)
    except FileNotFoundError:
        return "absent"
    except OSError:
        return "foreign"
    if not stat.S_ISREG(st.st_mode):  # a link, a folder: never written over
        return "foreign"
    try:
        db = sqlite3.connect(_read_only(sqlite_path), uri=True)
        try:
            row = db.execute("SELECT version, name, size, mtime_ns, ino FROM derived_from").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return "foreign"
    if row is None or row[1] != _name(jsonl_path, sqlite_path):
        return "foreign"
    try:
        same = row[0] == DERIVED_VERSION and tuple(row[2:]) == _identity(jsonl_path)
    except IOFailure:
        same = False
    return "fresh" if same else "stale"


def _publish(tmp: str, path: str, jsonl_path: str) -> None:
    """Put a finished index in place, never over a file that is not an index of `jsonl_path` (one that
    appeared while it was built included): a new name is linked, not renamed over."""
    try:
        os.link(tmp, path)
        return
    except FileExistsError:
        pass
    except OSError:  # a filesystem without hard links
        if not os.path.lexists(path):
            os.replace(tmp, path)
            return
    if _state(path, jsonl_path) == "foreign":
        raise IOFailure(f"{path}: not the index of {jsonl_path} (it appeared while the index was built): left untouched")
    os.replace(tmp, path)


def _read_only(path: str) -> str:
    """An SQLite URI opening `path` read-only (any character of the path quoted)."""
    return pathlib.Path(os.path.abspath(path)).as_uri() + "?mode=ro"


def _locate(archive: str) -> tuple[str, str]:
    """(index path, its state) of a JSONL archive: the sibling .sqlite, or when that is some other
    file, the JSONL's name + .index.sqlite. IOFailure when both are taken."""
    root, ext = os.path.splitext(archive)
    sibling = (root if ext.lower() == ".jsonl" else archive) + ".sqlite"
    for path in (sibling, archive + ".index.sqlite"):
        state = _state(path, archive)
        if state != "foreign":
            return path, state
    raise IOFailure(
        f"{archive}: {sibling} and {archive}.index.sqlite are not its index (another run's archive, or other files) "
        "and are left untouched; move one of them to index it"
    )


def index_path(archive: str) -> str:
    """The index of an archive: itself when it is SQLite, else the sibling .sqlite of the JSONL when that is
    free or already this JSONL's index, else `<archive>.index.sqlite` (see `_locate`)."""
    if is_sqlite(archive):
        return archive
    return _locate(archive)[0]


def records(path: str) -> Iterator[dict]:
    """Every record of an archive, JSONL or SQLite, in the order it was written."""
    if is_sqlite(path):
        db = _connect(path)
        try:
            for (raw,) in db.execute("SELECT raw FROM records ORDER BY id"):
                yield orjson.loads(raw)
        finally:
            db.close()
        return
    with open_input(path) as f:
        for lineno, raw in iter_lines(f):
            yield parse_line(raw, path, lineno)


def _connect(path: str) -> sqlite3.Connection:
    if not os.path.isfile(path):
        raise IOFailure(f"{path}: no such archive")
    try:
        db = sqlite3.connect(_read_only(path), uri=True, check_same_thread=False)
        db.execute("SELECT 1 FROM records LIMIT 1")
    except sqlite3.DatabaseError as e:
        raise DataError(path, 0, f"not a compactctl archive index ({e})") from e
    return db


@dataclass
class Hit:
    """A search hit in an archive: where the removed message sat, and its text."""

    ref: str
    transcript: str
    seq: int
    index: int
    phase: str
    role: str
    text: str
    message: dict = field(repr=False)
    snippet: str = ""
    score: float = 0.0
    span: str | None = None  # set on the members of a span a recall resolved

    def as_dict(self) -> dict[str, Any]:
        d = {"ref": self.ref, "transcript": self.transcript, "index": self.index, "phase": self.phase, "role": self.role}
        if self.span:
            d["span"] = self.span
        if self.snippet:
            d["snippet"], d["score"] = self.snippet, round(self.score, 4)
        else:
            d["message"] = self.message
        return d


SNIPPET_CHARS = 400  # a search hit's snippet at most


def normalized_ref(ref: str) -> str:
    """`3f9a2c1b` from `3f9a2c1b`, `[ref 3f9a2c1b]` or `3F9A2C1B`; UnknownRef for anything else."""
    ref = ref.strip().lower().removeprefix("[ref ").removesuffix("]").strip()
    if not re.fullmatch(r"[0-9a-f]{4,16}", ref):
        raise UnknownRef(f"{ref!r} is not a reference (8 hex digits, as in [ref 3f9a2c1b])")
    return ref


class Index:
    """A read-only archive index. `open(path)` takes a .sqlite archive or a JSONL one (indexed on first use)."""

    def __init__(self, db: sqlite3.Connection, path: str, source: str | None = None):
        self.db, self.path = db, path
        self.source = source  # the JSONL archive this index was built from (None: a SQLite archive)
        # what it indexed (size, mtime, inode), as the index recorded it: a JSONL that changed while it was built shows
        row = db.execute("SELECT size, mtime_ns, ino FROM derived_from").fetchone() if source is not None else None
        self.identity = tuple(row) if row is not None else None

    @classmethod
    def open(cls, archive: str) -> Index:
        if is_sqlite(archive):
            return cls(_connect(archive), archive)
        if not os.path.isfile(archive):
            raise IOFailure(f"{archive}: no such archive")
        path, state = _locate(archive)
        if state != "fresh":
            build(archive, path)
        return cls(_connect(path), path, archive)

    def current(self) -> Index:
        """This index, or a new one when its JSONL archive changed since it was opened (a long-lived reader, the MCP
        server, sees what a later run wrote). One stat when nothing changed."""
        if self.source is None:
            return self
        try:
            if _identity(self.source) == self.identity:
                return self
            return Index.open(self.source)  # this one is left open: a request in another thread may be using it
        except CompactError:
            return self  # gone, unreadable or not indexable now: what was indexed still answers

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    _COLS = "r.ref, r.transcript, r.seq, r.idx, r.phase, r.role, r.text, r.raw"

    def _hit(self, row, **kw) -> Hit:
        ref, transcript, seq, idx, phase, role, text, raw = row
        return Hit(ref, transcript, seq, idx, phase, role, text, orjson.loads(raw)["message"], **kw)

    def recall(self, ref: str, transcript: str | None = None) -> list[Hit]:
        """The original(s) behind a reference: one message (copies of the same content given once), or
        every archived member of a summarized span in order. UnknownRef when there is none."""
        ref = normalized_ref(ref)
        hits, seen = [], set()
        for row, span in self._rows(ref, transcript):
            h = self._hit(row, span=span)
            said = (h.role, h.text)  # the same content under one reference (the same output of several calls): given once
            if span is None and said in seen:
                continue
            seen.add(said)
            hits.append(h)
        if not hits:
            raise UnknownRef(
                f"no archived original has reference {ref}" + (f" in transcript {transcript}" if transcript else "") + f" ({self.path})"
            )
        return hits

    def originals(self, ref: str) -> list[tuple[dict, str | None]]:
        """The archive records behind a reference, as recall finds them: (record, the span it was found as a member of)."""
        return [(orjson.loads(row[-1]), span) for row, span in self._rows(ref, None)]

    def _rows(self, ref: str, transcript: str | None) -> Iterator[tuple[tuple, str | None]]:
        where, args = ("AND r.transcript = ?", (transcript,)) if transcript else ("", ())
        for row in self.db.execute(f"SELECT {self._COLS} FROM records r WHERE r.ref = ? {where} ORDER BY r.id", (ref, *args)):
            yield row, None
        spans = self.db.execute(
            f"SELECT seq, transcript, start, end FROM spans WHERE span = ? {where.replace('r.', '')}", (ref, *args)
        ).fetchall()
        for seq, tr, start, end in spans:
            rows = self.db.execute(
                f"SELECT {self._COLS} FROM records r WHERE r.seq = ? AND r.transcript = ? AND r.ref IS NOT NULL "
                "AND ((r.idx >= ? AND r.idx < ?) OR r.span = ?) ORDER BY r.idx, r.id",
                (seq, tr, start, end, ref),
            )
            for row in rows:
                yield row, ref

    def _ranked(self, rowid: int, rank: float, match: str) -> Hit:
        row = self.db.execute(f"SELECT {self._COLS} FROM records r WHERE r.id = ?", (rowid,)).fetchone()
        (snip,) = self.db.execute(
            "SELECT snippet(search, -1, '', '', ' … ', 24) FROM search WHERE search MATCH ? AND rowid = ?", (match, rowid)
        ).fetchone()
        snip = " ".join(snip.split())
        if len(snip) > SNIPPET_CHARS:  # an FTS token may be a megabyte of hex: a snippet of 24 of them is cut
            snip = snip[:SNIPPET_CHARS] + " …"
        return self._hit(row, snippet=snip, score=-rank)

    def search(self, query: str, limit: int = 5, transcript: str | None = None) -> list[Hit]:
        """The best matches (bm25) for the words of `query`: all of them if any record has all,
        else any of them. Each word is matched as a phrase of its tokens ("config.py", "a_b");
        of a long query, the MAX_TERMS longest words."""
        terms = list(dict.fromkeys(t for t in query.split() if re.search(r"\w", t)))
        if not terms:
            return []
        if len(terms) > MAX_TERMS:  # a pasted paragraph: its longest words (the rarest, mostly) keep a search fast
            terms = sorted(terms, key=len, reverse=True)[:MAX_TERMS]
        phrases = ['"' + t.replace('"', '""') + '"' for t in terms]
        # Rank first (rowids only: no record is read), then read the few best and their snippets.
        join, args = ("JOIN records r ON r.id = search.rowid AND r.transcript = ? ", (transcript,)) if transcript else ("", ())
        best = f"SELECT search.rowid, rank FROM search {join}WHERE search MATCH ? ORDER BY rank LIMIT ?"
        for match in [" ".join(phrases)] + ([" OR ".join(phrases)] if len(phrases) > 1 else []):
            ranked = self.db.execute(best, (*args, match, limit)).fetchall()
            if ranked:
                return [self._ranked(rowid, rank, match) for rowid, rank in ranked]
        return []


class Archives:
    """Several archives read as one (`recall` and `mcp` with --archive given more than once: the archives of
    separate compactions of one session). A reference is looked up in each, in the order given (the same
    content given once); a search takes each archive's best and orders them by score (bm25 weighs a word by
    how rare it is in its own archive, so scores from different archives compare only roughly)."""

    def __init__(self, indexes: list[Index]):
        self.indexes = indexes
        self.path = ", ".join(ix.path for ix in indexes)

    @classmethod
    def open(cls, paths: list[str]) -> Archives:
        unique: dict[str, str] = {}  # a.jsonl and ./a.jsonl: one archive, as first named
        for p in paths:
            unique.setdefault(os.path.realpath(p), p)
        opened: list[Index] = []
        try:
            for p in unique.values():
                opened.append(Index.open(p))
        except BaseException:
            for ix in opened:
                ix.close()
            raise
        return cls(opened)

    def current(self) -> Archives:
        now = [ix.current() for ix in self.indexes]
        return self if all(a is b for a, b in zip(now, self.indexes, strict=True)) else Archives(now)

    def recall(self, ref: str, transcript: str | None = None) -> list[Hit]:
        ref = normalized_ref(ref)
        hits: list[Hit] = []
        seen: set[tuple[str, str]] = set()
        spanned = False  # a span's members come from the first archive that has them (a later one may hold a copy)
        for ix in self.indexes:
            try:
                found = ix.recall(ref, transcript)
            except UnknownRef:
                continue
            for h in found:
                if (h.span is None and (h.role, h.text) in seen) or (h.span is not None and spanned):
                    continue
                seen.add((h.role, h.text))
                hits.append(h)
            spanned = spanned or any(h.span is not None for h in found)
        if not hits:
            where = f" in transcript {transcript}" if transcript else ""
            raise UnknownRef(f"no archived original has reference {ref}{where} ({self.path})")
        return hits

    def search(self, query: str, limit: int = 5, transcript: str | None = None) -> list[Hit]:
        if len(self.indexes) == 1:
            return self.indexes[0].search(query, limit, transcript)
        hits, seen = [], set()
        for h in sorted((h for ix in self.indexes for h in ix.search(query, limit, transcript)), key=lambda h: -h.score):
            if (h.ref, h.role, h.text) not in seen:  # the same original in two archives (carried into a later one): once
                seen.add((h.ref, h.role, h.text))
                hits.append(h)
        return hits[:limit]

    def close(self) -> None:
        for ix in self.indexes:
            ix.close()

    def __enter__(self) -> Archives:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_REF_BYTES = re.compile(REF_RE.pattern.encode())  # refs.REF_RE over bytes: output lines and archive records as written


class Carry:
    """What an archive being written over still has to give: the originals of the references the new run's output
    and archive still hold but did not archive themselves.

    Compacting an already compacted transcript keeps some of its references (in a summary's action lines, in the
    digests it archives again); with the same `--archive` path the earlier archive is replaced. So the records
    behind those references (for a summarized span, its members) are copied from the earlier archive into the new
    one, and so on for the references they hold in turn. They are marked `carried` (restore skips them) and numbered
    below 0 (`seq` -1, -2, ... one per reference carried: a span's members stay together, apart from this run's).
    A rerun over the same input carries nothing: everything its output refers to, it archived itself."""

    def __init__(self, previous: str):
        self.previous = previous
        self.own: set[bytes] = set()  # references this run archived (records and spans)
        self.used: set[bytes] = set()  # references its output and its archive records hold

    def archived(self, rec: dict, data: bytes) -> None:
        for k in ("ref", "span"):
            v = rec.get(k)
            if isinstance(v, str):
                self.own.add(v.encode())
        self.used.update(_REF_BYTES.findall(data))

    def wrote(self, line: bytes) -> None:
        if b"[ref " in line:
            self.used.update(_REF_BYTES.findall(line))

    def seed(self, path: str, archive: bool) -> None:
        """From a part file written before an interrupt (--resume): what it holds."""
        try:
            with open(path, "rb") as f:
                for line in f:
                    if archive and line.startswith(b"{"):
                        with contextlib.suppress(orjson.JSONDecodeError):
                            rec = orjson.loads(line)
                            if isinstance(rec, dict):
                                self.archived(rec, line)
                                continue
                    self.wrote(line)
        except OSError:
            pass

    def records(self, warn: Callable[[str], None]) -> list[dict]:
        """The records to copy, in a stable order (references sorted, then what they hold in turn). All or none: an
        earlier archive that cannot be read (foreign, damaged) is said, and nothing is copied from it."""
        todo = sorted(self.used - self.own, reverse=True)
        if not todo:
            return []
        try:
            try:
                with self._previous(index=True) as ix:
                    return self._closure(ix, list(todo))
            except sqlite3.Error:
                if is_sqlite(self.previous):
                    raise
                with self._previous(index=False) as ix:  # a damaged index of an intact JSONL: the JSONL itself
                    return self._closure(ix, list(todo))
        except (CompactError, sqlite3.Error, OSError, OverflowError) as e:  # OverflowError: an integer SQLite cannot hold
            warn(
                f"{self.previous}: the archive written over could not be read ({e}): {len(todo)} references the output keeps from it are lost"
            )
            return []

    @contextlib.contextmanager
    def _previous(self, index: bool) -> Iterator[Index]:
        """The earlier archive's records by reference: itself (SQLite), its index when fresh (`index`), else a
        temporary index of references only (no full-text search; gone with the connection: the JSONL is about to be
        replaced)."""
        if is_sqlite(self.previous):
            with Index.open(self.previous) as ix:
                yield ix
            return
        try:
            path, state = _locate(self.previous)
        except IOFailure:  # both index names taken by other files: a temporary index instead
            path, state = "", "foreign"
        if index and state == "fresh":
            with Index(_connect(path), path, self.previous) as ix:
                yield ix
            return
        # SQLite's private temporary database (""): its file in the temporary directory is unlinked as soon as it is
        # opened, so even a killed run leaves nothing behind; pages stay in memory up to the cache size, then spill
        db = sqlite3.connect("")
        try:
            db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + SCHEMA)
            _fill(db, self.previous, search=False)
            db.executescript(INDEXES)
            db.commit()
            yield Index(db, f"{self.previous} (a temporary index of its references)")
        finally:
            db.close()

    def _closure(self, ix: Index, todo: list[bytes]) -> list[dict]:
        out: list[dict] = []
        seen = set(self.own)
        carried: set[tuple[Any, bytes]] = set()  # (reference, message) copied as its own: a second copy is the same
        k = 0
        while todo:
            ref = todo.pop()
            if ref in seen:
                continue
            seen.add(ref)
            found = ix.originals(ref.decode())
            if not found:
                continue
            k += 1
            held: set[bytes] = set()
            for rec, span in found:
                message = rec.get("message")
                if not isinstance(message, dict):
                    continue
                body = orjson.dumps(message)
                own = rec.get("ref")
                if span is None:
                    if (own, body) in carried:
                        continue
                    carried.add((own, body))
                elif isinstance(own, str):
                    seen.add(own.encode())  # recall finds a span's member by its own reference too
                copy = {key: v for key, v in rec.items() if key not in ("span", "span_start", "span_end")}
                copy["seq"], copy["carried"] = -k, True
                if span is not None:  # a member of a summarized span: found by the span's reference
                    copy["span"], copy["span_start"], copy["span_end"] = span, 0, 0
                held.update(_REF_BYTES.findall(body))
                out.append(copy)
            todo += sorted(held - seen, reverse=True)
        return out
