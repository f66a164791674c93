"""The phase commands' fast path (issue 11) in real processes: `compactctl compact FILE -o OUT` (and prune, plan,
summarize, repair) imports no typer, click or rich; help is typer's; errors on the fast path exit with the codes and
messages the typer app gives (the app in this process, through CliRunner, is the reference). This file does not
import compactctl.cli.fast: on a tree without the fast path, these tests fail on what they check."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from compactctl.cli import app
from compactctl.errors import Exit

from .conftest import SAMPLES, write_jsonl

PHASES = ["prune", "plan", "summarize", "repair", "compact"]
LONG = str(SAMPLES / "long_session.jsonl")
BROKEN = str(SAMPLES / "broken_pairs.jsonl")
UI = ("typer", "click", "rich")

# `compactctl ARGS` as the console script runs it, then the typer, click and rich modules it loaded, into REPORT.
RUN = (
    "import sys\n"
    "report = sys.argv.pop(1)\n"
    "sys.argv[0] = 'compactctl'\n"
    "from compactctl.entry import main\n"
    "try:\n"
    "    main()\n"
    "finally:\n"
    "    with open(report, 'w') as f:\n"
    f"        f.write(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in {UI!r})))\n"
)


def _env(tmp_path: Path) -> dict[str, str]:
    """No user config, no LLM, no COMPACTCTL_ settings; help into a pipe as docs/gen_cli.py renders it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMPACTCTL_", "OPENAI_", "_"))}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "no-user-config"), COLUMNS="100")
    return env


def real(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, list[str]]:
    """`compactctl ARGS` run in tmp_path (with these environment variables more), and the typer/click/rich modules
    the process imported."""
    report = tmp_path / "ui-modules.txt"
    cmd = [sys.executable, "-c", RUN, str(report), *args]
    r = subprocess.run(cmd, capture_output=True, cwd=tmp_path, env={**_env(tmp_path), **(env or {})}, timeout=300)
    return r, report.read_text().split()


def in_app(tmp_path: Path, *args: str, monkeypatch: pytest.MonkeyPatch, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The same arguments through the typer app in this process (CliRunner): the reference."""
    monkeypatch.chdir(tmp_path)
    for k in [k for k in os.environ if k.startswith(("COMPACTCTL_", "OPENAI_"))]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-user-config"))
    for k, v in (env or {}).items():
        monkeypatch.setenv(k, v)
    r = CliRunner().invoke(app, list(args), prog_name="compactctl")
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exc_info
    return subprocess.CompletedProcess(["compactctl", *args], r.exit_code, r.stdout_bytes, r.stderr_bytes)


def _small(tmp_path: Path) -> str:
    return str(write_jsonl(tmp_path / "s.jsonl", [{"role": "user", "content": "Fix the failing test in tests/test_api.py, please."}]))


@pytest.mark.parametrize("name", PHASES)
def test_a_phase_command_imports_no_typer_click_or_rich(name, tmp_path):
    out = tmp_path / "out.jsonl"
    cmd = [sys.executable, "-X", "importtime", "-m", "compactctl", name, _small(tmp_path), "-o", str(out)]
    r = subprocess.run(cmd, capture_output=True, cwd=tmp_path, env=_env(tmp_path), timeout=300)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    assert out.is_file()
    imported = [line.rsplit("|", 1)[-1].strip() for line in r.stderr.decode().splitlines() if line.startswith("import time:")]
    assert "compactctl.cli.phases" in imported  # the import lines were read
    assert [m for m in imported if m.split(".")[0] in UI] == []


def test_compact_with_a_warm_rank_cache_imports_no_pathlib_or_openai(tmp_path):
    """What a start costs that the work does not need: pathlib (with urllib.parse and ipaddress, ~4 ms: the config
    lookup walks up on os.path), the LLM client, and the secret rules (compactctl.redact compiles ~20 patterns, ~6 ms:
    nothing is cut or redacted in a session that fits). The first run builds the rank cache from the wheel's file
    (importlib.resources, which loads pathlib); the second is every later start."""
    cmd = [sys.executable, "-X", "importtime", "-m", "compactctl", "compact", _small(tmp_path), "-o", str(tmp_path / "out.jsonl")]
    for _ in range(2):
        r = subprocess.run(cmd, capture_output=True, cwd=tmp_path, env=_env(tmp_path), timeout=300)
        assert r.returncode == 0, r.stderr.decode()[-2000:]
    imported = [line.rsplit("|", 1)[-1].strip() for line in r.stderr.decode().splitlines() if line.startswith("import time:")]
    assert "compactctl.cli.phases" in imported  # the import lines were read
    assert [m for m in imported if m.split(".")[0] in ("pathlib", "openai") or m == "compactctl.redact"] == []


@pytest.mark.parametrize("name", PHASES)
def test_a_phase_commands_help_is_typers(name, tmp_path, monkeypatch):
    r, loaded = real(tmp_path, name, "--help")
    assert r.returncode == 0 and "typer" in loaded
    monkeypatch.setenv("COLUMNS", "100")
    ref = CliRunner().invoke(app, [name, "--help"], prog_name="compactctl", terminal_width=78)  # as docs/gen_cli.py
    assert r.stdout.decode() == ref.stdout and f"Usage: compactctl {name} [OPTIONS] [inputs]..." in ref.stdout


def test_a_bad_line_is_exit_3_naming_file_and_line(tmp_path, monkeypatch):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"role": "user", "content": "hi"}\n{"role": "user", "content": \n')
    r, loaded = real(tmp_path, "compact", str(bad), "-q")
    assert loaded == []
    assert r.returncode == Exit.DATA
    assert r.stderr.decode() == (f"compactctl: error: {bad}:2: truncated JSON (the line ends early: Expecting value) -- nothing written\n")
    ref = in_app(tmp_path, "compact", str(bad), "-q", monkeypatch=monkeypatch)
    assert (r.returncode, r.stdout, r.stderr) == (ref.returncode, ref.stdout, ref.stderr)


def test_an_unknown_option_is_typers_usage_error(tmp_path, monkeypatch):
    src = _small(tmp_path)
    r, loaded = real(tmp_path, "compact", src, "--context-windw", "8000")
    assert "typer" in loaded  # declined: typer read the line
    assert r.returncode == Exit.USAGE
    ref = in_app(tmp_path, "compact", src, "--context-windw", "8000", monkeypatch=monkeypatch)
    assert (r.returncode, r.stdout, r.stderr) == (ref.returncode, ref.stdout, ref.stderr)
    assert "No such option: --context-windw" in ref.stderr.decode()


@pytest.mark.parametrize("where", ["file", "env", "flag"])
def test_a_value_out_of_range_is_the_same_usage_error(where, tmp_path, monkeypatch):
    args, env = ["compact", _small(tmp_path), "-q"], {}
    if where == "file":
        (tmp_path / "compactctl.toml").write_text("context-window = 0\n")
        said = f"{tmp_path / 'compactctl.toml'}: context-window = 0"
    elif where == "env":
        env["COMPACTCTL_CONTEXT_WINDOW"] = "0"
        said = "$COMPACTCTL_CONTEXT_WINDOW=0 (--context-window)"
    else:
        args += ["--context-window", "0"]
        said = "--context-window 0"
    r, loaded = real(tmp_path, *args, env=env)
    assert loaded == []
    assert r.returncode == Exit.USAGE
    assert r.stderr.decode() == f"compactctl: error: {said}: must be at least 1 (leave it out for the model's own window)\n"
    ref = in_app(tmp_path, *args, monkeypatch=monkeypatch, env=env)
    assert (r.returncode, r.stdout, r.stderr) == (ref.returncode, ref.stdout, ref.stderr)


SAME = {
    "ok": ["compact", LONG, "--context-window", "8000", "-q"],
    "ok, stderr notes": ["compact", LONG, "--context-window", "8000", "--json"],
    "usage error in the command": ["compact", LONG, "--workers", "0"],
    "missing file": ["prune", "missing.jsonl"],
    "cannot fit": ["plan", LONG, "--context-window", "3000", "--last-ask", "tail"],
    "check failed": ["repair", "--check", BROKEN],
    "plan json": ["plan", LONG, "--context-window=8000", "--json"],
    "summarize": ["summarize", LONG, "--context-window", "8000", "--summarizer", "offline"],
}


@pytest.mark.parametrize("args", list(SAME.values()), ids=list(SAME))
def test_the_fast_path_writes_and_exits_as_the_app(args, tmp_path, monkeypatch):
    r, loaded = real(tmp_path, *args)
    assert loaded == []
    ref = in_app(tmp_path, *args, monkeypatch=monkeypatch)
    assert (r.returncode, r.stdout, r.stderr) == (ref.returncode, ref.stdout, ref.stderr)


def _closed(fd: int, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """`compactctl ARGS` started with its standard output (fd 1) or error (fd 2) closed, as `>&-` / `2>&-` start it."""
    keep = {1: {"stderr": subprocess.PIPE}, 2: {"stdout": subprocess.PIPE}}[fd]
    cmd = [sys.executable, "-m", "compactctl", *args]
    return subprocess.run(cmd, cwd=tmp_path, env=_env(tmp_path), timeout=300, preexec_fn=lambda: os.close(fd), **keep)


@pytest.mark.parametrize("spelling", [["-q", "-o", "out.jsonl"], ["-qo", "out.jsonl"]], ids=["fast path", "typer"])
def test_a_closed_stdout_is_no_matter_to_a_run_that_writes_a_file(tmp_path, spelling):
    """Both paths alike (a review found the fast path ran where typer's looked at the closed stdout: a traceback)."""
    write_jsonl(tmp_path / "s.jsonl", [{"role": "user", "content": "hi"}])
    r = _closed(1, tmp_path, "compact", "s.jsonl", *spelling)
    assert (r.returncode, r.stderr) == (0, b"")
    assert (tmp_path / "out.jsonl").read_bytes() == (tmp_path / "s.jsonl").read_bytes()


@pytest.mark.parametrize("command", [["compact", "s.jsonl"], ["compact", "s.jsonl", "-q", "--", "more.jsonl"]], ids=["fast path", "typer"])
def test_a_closed_stdout_that_a_run_writes_to_is_an_output_error(tmp_path, command):
    write_jsonl(tmp_path / "s.jsonl", [{"role": "user", "content": "hi"}])
    write_jsonl(tmp_path / "more.jsonl", [{"role": "user", "content": "again"}])
    r = _closed(1, tmp_path, *command)
    assert r.returncode == Exit.IO
    assert r.stderr.decode().splitlines()[-1] == "compactctl: error: standard output: cannot write (Bad file descriptor)"


def test_a_closed_stderr_keeps_the_exit_code(tmp_path):
    (tmp_path / "bad.jsonl").write_text("x\n")
    assert _closed(2, tmp_path, "compact", "bad.jsonl").returncode == Exit.DATA
    assert _closed(2, tmp_path, "compact", "bad.jsonl", "-qo", "o.jsonl").returncode == Exit.DATA
    assert not (tmp_path / "o.jsonl").exists()
