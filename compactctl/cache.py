"""Summary cache in SQLite under the user's cache dir, keyed by the exact request.

Private: the directory is made 0700 and the database (and SQLite's -wal/-shm files, which take the
database's mode) 0600. It stores a hash of the request (already redacted) and the answer.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from . import xdg


def default_dir() -> Path:
    return Path(xdg.base("XDG_CACHE_HOME", ".cache")) / "compactctl"


def key_of(request: dict[str, Any]) -> str:
    """The prompt, model and parameters, canonically encoded."""
    return hashlib.sha256(orjson.dumps(request, option=orjson.OPT_SORT_KEYS)).hexdigest()


def open_cache(directory: str | os.PathLike | None, warn=None) -> SummaryCache | None:
    """The summary cache, or None (said through `warn`) when it cannot be used: a directory that cannot be made
    or written, a damaged database. The cache only saves calls: a run goes on without it, never stops on it."""
    try:
        return SummaryCache(directory)
    except (OSError, sqlite3.Error) as e:
        if warn is not None:
            where = directory or default_dir()
            warn(f"the summary cache in {where} cannot be used ({type(e).__name__}: {e}); running without it")
        return None


class SummaryCache:
    def __init__(self, directory: str | os.PathLike | None = None):
        d = Path(directory) if directory else default_dir()
        if not d.is_dir() or not directory:  # ours: made (or the default one) 0700; a given existing one is left as is
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
            with contextlib.suppress(OSError):
                os.chmod(d, 0o700)
        self.path = d / "summaries.sqlite"
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        os.chmod(self.path, 0o600)
        for side in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.chmod(str(self.path) + side, 0o600)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS summaries (key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL NOT NULL)")
        self._db.commit()

    def get(self, key: str) -> str | None:
        """The cached answer, or None: also for a value that is not text or a database that fails on read."""
        try:
            with self._lock:
                row = self._db.execute("SELECT value FROM summaries WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error:
            return None
        return row[0] if row and isinstance(row[0], str) else None

    def put(self, key: str, value: str) -> None:
        """Keep an answer; a write that fails (disk full, a damaged database) only loses the saving."""
        try:
            with self._lock:
                self._db.execute("INSERT OR REPLACE INTO summaries VALUES (?, ?, ?)", (key, value, time.time()))
                self._db.commit()
        except sqlite3.Error:
            return
