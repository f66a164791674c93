"""Summary cache in SQLite under the user's cache dir, keyed by the exact request."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import orjson


def default_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "compactctl"


def key_of(request: dict[str, Any]) -> str:
    """The prompt, model and parameters, canonically encoded."""
    return hashlib.sha256(orjson.dumps(request, option=orjson.OPT_SORT_KEYS)).hexdigest()


class SummaryCache:
    def __init__(self, directory: str | os.PathLike | None = None):
        d = Path(directory) if directory else default_dir()
        d.mkdir(parents=True, exist_ok=True)
        self.path = d / "summaries.sqlite"
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS summaries (key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL NOT NULL)")
        self._db.commit()

    def get(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM summaries WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, value: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO summaries VALUES (?, ?, ?)", (key, value, time.time()))
            self._db.commit()
