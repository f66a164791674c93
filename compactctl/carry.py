"""What an archive written over still has to give (`Carry`): the originals behind the references the new run's
output still holds, copied from the earlier archive into the new one before it is replaced."""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from .archive import INDEXES, connect, fill, is_sqlite, locate, open_for_writing
from .archive import records as archive_records
from .errors import CompactError, DataError, IOFailure
from .refs import REF_RE
from .search import Index

_REF_BYTES = re.compile(REF_RE.pattern.encode())  # refs.REF_RE over bytes: output lines and archive records as written


class Carry:
    """What an archive being written over still has to give: the originals of the references the new run's output
    and archive still hold but did not archive themselves.

    Compacting an already compacted transcript keeps some of its references (in a summary's action lines, in the
    digests it archives again); with the same `--archive` path the earlier archive is replaced. So the records
    behind those references (for a summarized span, its members) are copied from the earlier archive into the new
    one, and so on for the references they hold in turn. They are marked `carried` (restore skips them) and numbered
    below 0 (`seq` -1, -2, ... one per reference carried: a span's members stay together, apart from this run's).
    A rerun over the same input carries nothing: everything its output refers to, it archived itself.

    The other originals the earlier archive holds, those this run did not archive itself (another session's, as a
    hook with one archive path for every session writes them; the first input of a session compacted, continued and
    compacted again), are carried too, told by their content (a piped session's transcript is `<stdin>` every
    time): their outputs elsewhere still refer to them, and the archive is where what compaction removed is kept.
    Restore's own records (maps, line records, `end`) are not: they restore the output of the run that wrote them,
    from that run's archive."""

    def __init__(self, previous: str):
        self.previous = previous
        self.own: set[bytes] = set()  # references this run archived (records and spans)
        self.used: set[bytes] = set()  # references its output and its archive records hold
        self.own_content: set[str] = set()  # the sha256 of the originals this run archived: the earlier copies are its own

    def archived(self, rec: dict, data: bytes) -> None:
        for k in ("ref", "span"):
            v = rec.get(k)
            if isinstance(v, str):
                self.own.add(v.encode())
        if isinstance(rec.get("sha256"), str) and not rec.get("carried"):
            self.own_content.add(rec["sha256"])
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

    def records(self, warn: Callable[[str], None]) -> Iterator[dict]:
        """The records to copy, in a stable order (references sorted, then what they hold in turn, then the other
        originals in the earlier archive's order), streamed: an archive written over may be large. An earlier archive
        that cannot be read (foreign, damaged) is said, and nothing is copied from it."""
        todo = sorted(self.used - self.own, reverse=True)
        started = False
        try:
            try:
                with self._previous(index=True) as ix:
                    carried = self._closure(ix, list(todo)) if todo else []
                    started = True
                    yield from carried
                    yield from self._others(ix, carried)
            except (sqlite3.Error, DataError, orjson.JSONDecodeError):  # an index that is not one, or damaged
                if is_sqlite(self.previous) or started:
                    raise
                with self._previous(index=False) as ix:  # a damaged index of an intact JSONL: the JSONL itself
                    carried = self._closure(ix, list(todo)) if todo else []
                    started = True
                    yield from carried
                    yield from self._others(ix, carried)
        # OverflowError: an integer SQLite cannot hold; JSONDecodeError: a row of an SQLite archive that is no JSON
        except (CompactError, sqlite3.Error, OSError, OverflowError, orjson.JSONDecodeError) as e:
            lost = (
                "the rest of what it held"
                if started
                else f"{len(todo)} references the output keeps from it and the originals of other transcripts it held"
            )
            warn(f"{self.previous}: the archive written over could not be read ({e}): {lost} are lost")

    def _others(self, ix: Index, carried: list[dict]) -> Iterator[dict]:
        """The originals the earlier archive holds that this run did not archive itself (by content: another
        session's, whatever its transcript's name, `<stdin>` too), as it holds them (in its order), each transcript's
        numbered below those `carried` by reference, which are not copied twice."""
        done = {(c.get("transcript"), c.get("index"), c.get("ref"), c.get("phase")) for c in carried}
        k = -min((c["seq"] for c in carried), default=0)
        numbers: dict[tuple, int] = {}
        for seq, transcript, rec in self._rows(ix):
            if not isinstance(rec, dict) or not isinstance(rec.get("message"), dict):
                continue  # restore's records of the run that wrote them: a map, a line record
            if rec.get("sha256") in self.own_content or (rec.get("transcript"), rec.get("index"), rec.get("ref"), rec.get("phase")) in done:
                continue
            if (seq, transcript) not in numbers:
                k += 1
                numbers[(seq, transcript)] = k
            yield {**rec, "seq": -numbers[(seq, transcript)], "carried": True}

    def _rows(self, ix: Index) -> Iterator[tuple[Any, Any, Any]]:
        """(seq, transcript, record) of every record of the earlier archive that names its transcript, in its order:
        an SQLite archive's rows; a JSONL's own lines (its index, once the references are looked up, is not read
        again: a damaged row past them would stop the copy with records already given)."""
        if is_sqlite(self.previous):
            rows = ix.db.execute("SELECT seq, transcript, raw FROM records WHERE transcript IS NOT NULL ORDER BY id")
            for seq, transcript, raw in rows:
                yield seq, transcript, orjson.loads(raw)
            return
        for rec in archive_records(self.previous):
            if isinstance(rec, dict) and rec.get("transcript") is not None:
                yield rec.get("seq"), rec["transcript"], rec

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
            path, state = locate(self.previous)
        except IOFailure:  # both index names taken by other files: a temporary index instead
            path, state = "", "foreign"
        if index and state == "fresh":
            with Index(connect(path), path, self.previous) as ix:
                yield ix
            return
        # SQLite's private temporary database (""): its file in the temporary directory is unlinked as soon as it is
        # opened, so even a killed run leaves nothing behind; pages stay in memory up to the cache size, then spill
        db = open_for_writing("")
        try:
            fill(db, self.previous, search=False)
            db.commit()
            db.executescript(INDEXES)
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
