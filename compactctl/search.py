"""Reading an archive back: the originals behind a reference (`recall`) and the best matches for words (`search`, bm25).

`Index` reads one archive, read-only: a .sqlite archive itself, or a JSONL archive's derived index (built on first
use, rebuilt when the JSONL changed: see archive.py). `Archives` reads several as one. `recall`, `mcp` and the eval's
recovery arm read archives through these.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import field
from typing import Any

import orjson

from .archive import build, connect, identity, is_sqlite, locate
from .errors import CompactError, Exit, IOFailure, UsageError
from .jsonl import without_surrogates
from .lean import dataclass


def _bindable(text: str) -> str:
    """`text` as SQLite takes it: a lone surrogate as U+FFFD, as the reader wrote it into the archive."""
    return without_surrogates(text)


MAX_TERMS = 12  # words of a query that count (a record with all of the query's words has these too)


class UnknownRef(CompactError):
    """No archived original has this reference."""

    exit_code = Exit.NOT_FOUND


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
            # Significant digits, not decimals: a word in every original of an archive weighs almost nothing in bm25
            # (SQLite's idf floor, 1e-6), so its hits score ~1e-6, ordered all the same (rounded, they read 0.0).
            d["snippet"], d["score"] = self.snippet, float(f"{self.score:.5g}")
        else:
            d["message"] = self.message
        return d


SNIPPET_CHARS = 400  # a search hit's snippet at most


def normalized_ref(ref: str) -> str:
    """`3f9a2c1b` from `3f9a2c1b`, `[ref 3f9a2c1b]` or `3F9A2C1B`; UnknownRef for anything else."""
    ref = ref.strip().lower().removeprefix("[ref ").removesuffix("]").strip()
    if not re.fullmatch(r"[0-9a-f]{4,16}", ref):
        raise UnknownRef(f"{ref!r} is not a reference (4 to 16 hex digits: a mark's 8, as in [ref 3f9a2c1b])")
    return ref


class Index:
    """A read-only archive index. `open(path)` takes a .sqlite archive or a JSONL one (indexed on first use)."""

    def __init__(self, db: sqlite3.Connection, path: str, source: str | None = None, opened: tuple | None = None):
        self.db, self.path = db, path
        self.source = source  # the JSONL archive this index was built from (None: a SQLite archive)
        # what it indexed (size, mtime, inode), as the index recorded it: a JSONL that changed while it was built shows;
        # for a SQLite archive, the file as it was opened (`opened`; None: never read again, as a temporary index)
        row = db.execute("SELECT size, mtime_ns, ino FROM derived_from").fetchone() if source is not None else None
        self.identity = tuple(row) if row is not None else opened

    @classmethod
    def open(cls, archive: str) -> Index:
        if is_sqlite(archive):
            try:
                opened: tuple | None = identity(archive)  # before connecting: a file renamed over it meanwhile shows
            except IOFailure:
                opened = None  # connect says that it is missing
            return cls(connect(archive), archive, opened=opened)
        if not os.path.isfile(archive):
            raise IOFailure(f"{archive}: no such archive")
        path, state = locate(archive)
        if state != "fresh":
            build(archive, path)
        return cls(connect(path), path, archive)

    def current(self) -> Index:
        """This index, or a new one when its archive changed since it was opened (a long-lived reader, the MCP
        server, sees what a later run wrote: a JSONL archive is indexed again; a SQLite one, which a run renames
        into place, is opened again). One stat when nothing changed."""
        watched = self.source or self.path
        if self.source is None and self.identity is None:
            return self
        try:
            if identity(watched) == self.identity:
                return self
            return Index.open(watched)  # this one is left open: a request in another thread may be using it
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
        spans: dict[tuple, list[Hit]] = {}
        for row, span in self._rows(ref, transcript):
            h = self._hit(row, span=span)
            if span is not None:
                spans.setdefault((h.seq, h.transcript), []).append(h)
                continue
            said = (h.role, h.text)  # the same content under one reference (the same output of several calls): given once
            if said not in seen:
                seen.add(said)
                hits.append(h)
        told = set()  # a span summarized alike in several transcripts (identical dataset records): its members once
        for members in spans.values():
            said_all = tuple((m.role, m.text) for m in members)
            if said_all not in told:
                told.add(said_all)
                hits.extend(members)
        if not hits:
            raise UnknownRef(
                f"no archived original has reference {ref}" + (f" in transcript {transcript}" if transcript else "") + f" ({self.path})"
            )
        return hits

    def originals(self, ref: str) -> list[tuple[dict, str | None]]:
        """The archive records behind a reference, as recall finds them: (record, the span it was found as a member of)."""
        return [(orjson.loads(row[-1]), span) for row, span in self._rows(ref, None)]

    def _rows(self, ref: str, transcript: str | None) -> Iterator[tuple[tuple, str | None]]:
        transcript = transcript and _bindable(transcript)  # `--transcript` of a name with a Latin-1 byte: no match
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

    def transcripts(self, limit: int) -> list[str]:
        """Up to `limit` of the names of the transcripts this archive holds."""
        rows = self.db.execute("SELECT DISTINCT transcript FROM records WHERE transcript IS NOT NULL LIMIT ?", (limit,))
        return [t for (t,) in rows]

    def holds(self, transcript: str) -> bool:
        """Whether a transcript of this name has records here (`--transcript` of a name it has not: said, not no hits)."""
        return self.db.execute("SELECT 1 FROM records WHERE transcript = ? LIMIT 1", (_bindable(transcript),)).fetchone() is not None

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
        # what the index holds for them: a NUL ends SQLite's query text, a lone surrogate (a Latin-1 byte in argv,
        # `\ud800` in an MCP client's JSON) cannot be encoded, and the archive's text has U+FFFD for it
        query, transcript = _bindable(query.replace("\x00", " ")), transcript and _bindable(transcript)
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

    def check_transcript(self, transcript: str | None) -> None:
        """A usage error when no archive holds a transcript of this name (a search in it found nothing, exit 0;
        a recall said only that no original has the reference), naming the name and the archives as given."""
        if transcript is None or any(ix.holds(transcript) for ix in self.indexes):
            return
        names = [t for ix in self.indexes for t in ix.transcripts(4)]
        said = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        given = ", ".join(ix.source or ix.path for ix in self.indexes)
        raise UsageError(f"--transcript {transcript!r}: no transcript of that name in {given}" + (f" (it holds {said})" if names else ""))

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
