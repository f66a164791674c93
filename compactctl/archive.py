"""The archive of removed originals, written as JSON lines or as a searchable SQLite database (FTS5, bm25).

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

`records` reads any archive back as written. The originals behind a reference and the search by words are
`search.py`; what an archive written over still has to give, `carry.py`.
"""

from __future__ import annotations

import os
import pathlib
import sqlite3
import stat
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from .errors import DataError, IOFailure
from .jsonl import JsonlSink, iter_lines, open_input, parse_line

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

    m = message_from_dict(body, "<archive>", 0, 0, own=True)
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


def open_for_writing(path: str) -> sqlite3.Connection:
    """A new database at `path` ("": SQLite's private temporary one) with the archive's schema, in a transaction
    begun for its records, which the caller commits. The transaction is explicit: Python's sqlite3 (before 3.13)
    begins one before a statement it takes for an INSERT, and tells one with the C library's case folding, so under
    a Turkish locale "INSERT" (whose I folds to a dotless i) was none: each row was committed alone, and FTS5 wrote
    its index in other segments, an archive of other bytes (and slower)."""
    db = sqlite3.connect(path, isolation_level=None)  # no transaction but the ones begun here
    db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + SCHEMA)
    db.execute("BEGIN")
    return db


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
        self.db = open_for_writing(self.tmp)
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
                self.db.commit()
                self.db.executescript(INDEXES)
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
    ident = identity(jsonl_path)  # before reading: a JSONL that changes meanwhile is indexed again next time
    s = SqliteSink(sqlite_path)
    s.publish = lambda tmp, path: _publish(tmp, path, jsonl_path)
    ok = False
    try:
        s.count = fill(s.db, jsonl_path)
        s.db.executescript(DERIVED)
        s.db.execute(
            "INSERT INTO derived_from VALUES (?, ?, ?, ?, ?, ?)",
            (DERIVED_VERSION, _name(jsonl_path, sqlite_path), os.path.abspath(jsonl_path), *ident),
        )
        ok = True
    finally:
        s.close(ok)
    return s.count


def fill(db: sqlite3.Connection, jsonl_path: str, search: bool = True) -> int:
    """Insert every record of a JSONL archive (`search`: into the full-text index too); returns how many."""
    n = 0
    with open_input(jsonl_path) as f:
        for lineno, raw in iter_lines(f):
            rec = parse_line(raw, jsonl_path, lineno)
            if not isinstance(rec, dict) or ("seq" not in rec and rec.get("type") != "end"):
                raise DataError(jsonl_path, lineno, "not a compactctl archive record")
            odd = _odd_field(rec)
            if odd is not None:
                raise DataError(jsonl_path, lineno, f"not a compactctl archive record: {odd}")
            try:
                _insert(db, rec, raw, search)
            except DataError as e:  # an archived message no reader takes (an archive edited by hand)
                raise DataError(jsonl_path, lineno, f"the archived message: {e.what}") from e
            n += 1
    return n


_FIELDS = ("seq", "transcript", "index", "phase", "ref", "span", "span_start", "span_end")  # what fills a record's columns


def _odd_field(rec: dict) -> str | None:
    """What is wrong with a field of an archive record that SQLite cannot hold (an archive edited by hand), if any."""
    for k in _FIELDS:
        v = rec.get(k)
        if isinstance(v, (dict, list)):
            return f"its {k!r} is a JSON {'object' if isinstance(v, dict) else 'array'}"
    return None


def identity(jsonl_path: str) -> tuple[int, int, int]:
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
        same = row[0] == DERIVED_VERSION and tuple(row[2:]) == identity(jsonl_path)
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


def locate(archive: str) -> tuple[str, str]:
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
    free or already this JSONL's index, else `<archive>.index.sqlite` (see `locate`)."""
    if is_sqlite(archive):
        return archive
    return locate(archive)[0]


def records(path: str) -> Iterator[dict]:
    """Every record of an archive, JSONL or SQLite, in the order it was written."""
    if is_sqlite(path):
        db = connect(path)
        try:
            for (raw,) in db.execute("SELECT raw FROM records ORDER BY id"):
                yield orjson.loads(raw)
        finally:
            db.close()
        return
    with open_input(path) as f:
        for lineno, raw in iter_lines(f):
            yield parse_line(raw, path, lineno)


def connect(path: str) -> sqlite3.Connection:
    if not os.path.isfile(path):
        raise IOFailure(f"{path}: no such archive")
    try:
        db = sqlite3.connect(_read_only(path), uri=True, check_same_thread=False)
        for check in _SHAPE:  # another program's database (a `records` table of its own) fails here, not at a query
            db.execute(check)
    except sqlite3.DatabaseError as e:
        raise DataError(path, None, f"not a compactctl archive index ({e})") from e
    return db


# What reading an archive index queries: every table and column (a query of none of their rows).
_SHAPE = (
    "SELECT id, seq, transcript, idx, phase, ref, span, role, text, call, raw FROM records LIMIT 0",
    "SELECT seq, transcript, span, start, end FROM spans LIMIT 0",
    "SELECT rowid FROM search WHERE search MATCH 'x' LIMIT 0",
)
