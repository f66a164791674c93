from __future__ import annotations

import os
import socket
import subprocess
import sys
import traceback
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_transcripts"
CORPUS = Path(os.environ.get("COMPACTCTL_CORPUS", ROOT.parent / "shared" / "corpus"))

needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is absent")


def cli(*args: str, input: bytes | None = None, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`compactctl ARGS` run in this process through typer's CliRunner, which gives the same exit codes,
    stdout and stderr as the real command (the app raises its exit codes itself). An exception that
    escapes the app ends the run with exit 1 and its traceback on stderr, as the interpreter would.
    Use `proc` for what needs a real process: pipes between stages, signals, start-up."""
    from typer.testing import CliRunner

    from compactctl.cli import app

    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        r = CliRunner().invoke(app, list(args), input=input, env=env)
    finally:
        os.chdir(old)
    err = r.stderr_bytes
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        assert r.exc_info is not None
        err += "".join(traceback.format_exception(*r.exc_info)).encode()
    return subprocess.CompletedProcess(["compactctl", *args], r.exit_code, r.stdout_bytes, err)


def proc(*args: str, input: bytes | None = None, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`compactctl ARGS` as a real process (python -m compactctl)."""
    e = {**os.environ, **(env or {})}
    e.pop("OPENAI_API_KEY", None) if not (env and "OPENAI_API_KEY" in env) else None
    e.pop("OPENAI_BASE_URL", None) if not (env and "OPENAI_BASE_URL" in env) else None
    return subprocess.run([sys.executable, "-m", "compactctl", *args], input=input, capture_output=True, env=e, cwd=cwd, timeout=300)


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def read_jsonl(data: bytes) -> list:
    return [orjson.loads(line) for line in data.split(b"\n") if line.strip()]


def own_device(tmp_path: Path, device: str) -> str:
    """A device to write to (/dev/full, /dev/null): as root, a node of the test's own with the device's number in
    `tmp_path` (a fault that renames an output over its target, as a mutant of jsonl.Output does, then replaces that
    node, not the machine's device: a mutation run replaced /dev/full); otherwise the device itself, which no rename
    can replace."""
    import stat

    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    if os.geteuid() != 0:
        return device
    own = tmp_path / os.path.basename(device)
    try:
        os.mknod(own, 0o666 | stat.S_IFCHR, os.stat(device).st_rdev)
    except OSError:
        pytest.skip(f"cannot make a {device} of the test's own")
    return str(own)


def refuse_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a connection fails (until `monkeypatch` is undone)."""

    def refuse(*a, **k):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a connection fails the test."""
    refuse_network(monkeypatch)


@pytest.fixture(scope="session")
def _rank_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("ranks")


@pytest.fixture(autouse=True)
def _no_llm_env(monkeypatch, tmp_path, _rank_cache):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("COMPACTCTL_RANK_CACHE", str(_rank_cache))  # the token rank cache, built once per session
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no user config file of the machine's user
    for var in [v for v in os.environ if v.startswith("COMPACTCTL_") and v not in ("COMPACTCTL_CORPUS", "COMPACTCTL_RANK_CACHE")]:
        monkeypatch.delenv(var)


def tool_session(n_turns: int = 6, out_chars: int = 3000) -> list[dict]:
    """A small tool-heavy OpenAI chat session."""
    msgs = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Fix the bug in app.py. You must not touch tests/."},
    ]
    for i in range(n_turns):
        cid = f"call_{i}"
        cmd = {"command": f"pytest -k case{i}"} if i % 2 else {"path": f"src/mod{i}.py"}
        name = "terminal" if i % 2 else "read_file"
        out = ("x" * out_chars + f"\nexit code: {i % 4 == 1 and 1 or 0}") if i % 2 else ("line\n" * (out_chars // 5))
        msgs.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": cid, "type": "function", "function": {"name": name, "arguments": orjson.dumps(cmd).decode()}}],
            }
        )
        msgs.append({"role": "tool", "tool_call_id": cid, "content": out})
    msgs.append({"role": "assistant", "content": "Done: the fix is in app.py."})
    msgs.append({"role": "user", "content": "Thanks. Now update the changelog."})
    return msgs


@pytest.fixture
def server():
    """A local OpenAI-compatible server for the test (127.0.0.1; see llm_server.py)."""
    from .llm_server import Server

    with Server() as s:
        yield s


@pytest.fixture(autouse=True)
def fresh_breakers():
    """No circuit-breaker state or pending cancellation carried from one test to the next (only when the
    LLM summarizer was loaded: other tests do not pay for importing it)."""
    llm_mod = sys.modules.get("compactctl.summarizers.llm")
    if llm_mod is not None:
        llm_mod._breakers.clear()
        llm_mod.CANCEL.clear()


def assert_sections(summary: str, summarizer: str) -> None:
    """An LLM's answer has the 13 sections in order; the offline summary at a small budget only those with
    content, in that order (fit.HEADINGS_SHARE)."""
    from compactctl.summarizers.prompt import SECTIONS, parse_sections

    secs = list(parse_sections(summary))
    expected = list(SECTIONS) if summarizer.startswith("llm:") else [s for s in SECTIONS if s in secs]
    assert secs == expected and "Active Task" in secs
