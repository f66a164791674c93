"""The same input gives the same bytes (output, --archive, --report, --stats) whatever the environment: hash seed,
locale, time zone, working directory, Python version, --workers. A CI job keeps compacted fixtures and compares them
byte for byte; a difference it cannot explain is a failed build."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, SAMPLES, cli

SAMPLE = SAMPLES / "long_session.jsonl"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _sqlite_archive(tmp_path: Path, name: str) -> str:
    out = tmp_path / f"{name}.sqlite"
    r = cli("compact", str(SAMPLE), "--context-window", "16000", "-q", "-o", str(tmp_path / f"{name}.jsonl"), "--archive", str(out))
    assert r.returncode == 0, r.stderr
    return _sha(out)


def test_a_sqlite_archive_is_one_transaction_whatever_python_takes_a_statement_for(tmp_path, monkeypatch):
    """Python's sqlite3 (3.10 to 3.12) begins a transaction before a statement it takes for an INSERT, and tells one
    with the C library's case folding: under a Turkish locale "INSERT" is none (its I folds to a dotless ı), each row
    was committed alone, and FTS5 wrote its index in other segments: an archive of other bytes (and ~30x slower).
    Connections that never begin one (isolation_level=None, what that locale amounts to) give the same bytes."""
    plain = _sqlite_archive(tmp_path, "plain")
    connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: connect(*a, **{**k, "isolation_level": None}))
    assert _sqlite_archive(tmp_path, "autocommit") == plain


def _turkish_env() -> dict | None:
    env = {**os.environ, "LC_ALL": "tr_TR.UTF-8"}
    probe = subprocess.run([sys.executable, "-c", "import locale; locale.setlocale(locale.LC_ALL, '')"], env=env, capture_output=True)
    return env if probe.returncode == 0 else None


@pytest.mark.skipif(_turkish_env() is None, reason="no tr_TR.UTF-8 locale here (LOCPATH can point at one made with localedef)")
def test_a_sqlite_archive_has_the_same_bytes_under_a_turkish_locale(tmp_path):
    out = {}
    for loc in ("C.UTF-8", "tr_TR.UTF-8"):
        arc = tmp_path / f"{loc}.sqlite"
        env = {**os.environ, "LC_ALL": loc, "PYTHONPATH": str(ROOT)}
        args = [str(SAMPLE), "--context-window", "16000", "-q", "-o", str(tmp_path / f"{loc}.jsonl"), "--archive", str(arc)]
        r = subprocess.run([sys.executable, "-m", "compactctl", "compact", *args], env=env, capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr
        out[loc] = _sha(arc)
    assert out["C.UTF-8"] == out["tr_TR.UTF-8"]


def test_compact_gives_the_same_bytes_under_another_hash_seed(tmp_path):
    """Sets of names (the summary's identifier index, its files, the calls dedup has seen) iterate in an order that
    changes with PYTHONHASHSEED from one process to the next: an order leaking into the summary, the archive or the
    report would change the bytes run by run. Two processes, two seeds, the same bytes."""
    out = {}
    for seed in ("1", "2"):
        d = tmp_path / seed
        d.mkdir()
        args = [str(SAMPLE), "--context-window", "16000", "-q", "-o", str(d / "out.jsonl"), "--archive", str(d / "arc.jsonl")]
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        r = subprocess.run(
            [sys.executable, "-m", "compactctl", "compact", *args, "--report", str(d / "rep.jsonl")],
            env=env,
            capture_output=True,
            timeout=60,
        )
        assert r.returncode == 0, r.stderr
        out[seed] = {p.name: _sha(p) for p in sorted(d.iterdir())}
    assert out["1"] == out["2"]
    assert "Relevant Files" in (tmp_path / "1" / "out.jsonl").read_text(encoding="utf-8")  # the summary was written
