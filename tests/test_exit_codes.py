"""Every documented exit code (errors.Exit, README "exit | meaning") comes out of the typer app itself:
typer's CliRunner gets the code the real process exits with."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from compactctl.cli import app
from compactctl.errors import Exit

from .conftest import SAMPLES, cli, proc, tool_session, write_jsonl

BROKEN = str(SAMPLES / "broken_pairs.jsonl")
LONG = str(SAMPLES / "long_session.jsonl")


def _args(code: Exit, tmp_path) -> list[str]:
    """Arguments that end `compactctl` with `code`."""
    if code == Exit.OK:
        return ["repair", LONG, "-q"]
    if code == Exit.USAGE:
        return ["compact", LONG, "--workers", "0"]  # checked by the command (a UsageError), not by typer
    if code == Exit.DATA:
        bad = tmp_path / "bad.jsonl"
        bad.write_bytes(b'{"role": "user", "content": "hi"}\n{"role": "user", "content": \n')
        return ["repair", str(bad)]
    if code == Exit.IO:
        return ["prune", str(tmp_path / "missing.jsonl")]
    if code == Exit.CANNOT_FIT:
        return ["plan", LONG, "--context-window", "3000", "--last-ask", "tail"]
    if code == Exit.CHECK_FAILED:
        return ["repair", "--check", BROKEN]
    if code == Exit.NOT_FOUND:
        arch = tmp_path / "a.jsonl"
        out = tmp_path / "c.jsonl"
        assert (
            CliRunner().invoke(app, ["compact", LONG, "--context-window", "8000", "-q", "-o", str(out), "--archive", str(arch)]).exit_code
            == 0
        )
        return ["recall", "deadbeef", "--archive", str(arch)]
    raise AssertionError(code)


IN_APP = [Exit.OK, Exit.USAGE, Exit.DATA, Exit.IO, Exit.CANNOT_FIT, Exit.CHECK_FAILED, Exit.NOT_FOUND]


@pytest.mark.parametrize("code", IN_APP, ids=[c.name for c in IN_APP])
def test_cli_runner_gets_each_exit_code(code, tmp_path):
    r = CliRunner().invoke(app, _args(code, tmp_path))
    assert r.exit_code == code, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)  # the app exited; nothing escaped it
    if code != Exit.OK:
        assert "compactctl: error: " in r.stderr, r.stderr


@pytest.mark.parametrize("code", [Exit.USAGE, Exit.DATA, Exit.CHECK_FAILED], ids=lambda c: c.name)
def test_the_real_process_exits_the_same(code, tmp_path):
    args = _args(code, tmp_path)
    assert proc(*args).returncode == CliRunner().invoke(app, args).exit_code == code


def test_a_bad_option_is_a_usage_error_in_the_app():
    r = CliRunner().invoke(app, ["prune", "--threshold"])
    assert r.exit_code == Exit.USAGE and "requires an argument" in r.stderr


def test_a_broken_config_file_is_a_usage_error_in_the_app(tmp_path, monkeypatch):
    (tmp_path / "compactctl.toml").write_text("threshold = [\n")
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(app, ["repair", LONG])
    assert r.exit_code == Exit.USAGE and "compactctl: error: " in r.stderr and "compactctl.toml" in r.stderr


def test_llm_auth(server, tmp_path):
    args = ["compact", LONG, "--context-window", "8000", "--summarizer", "llm", "--llm-model", "denied", "--base-url", server.url]
    r = CliRunner().invoke(app, [*args, "--no-cache"], env={"OPENAI_API_KEY": "k"})
    assert r.exit_code == Exit.LLM_AUTH and "compactctl: error: " in r.stderr


def test_a_bug_is_exit_1_and_ctrl_c_is_130(tmp_path, monkeypatch):
    from compactctl.phases import repair

    f = write_jsonl(tmp_path / "s.jsonl", tool_session(2, 100))

    def bug(*a, **k):
        raise RuntimeError("a bug")

    monkeypatch.setattr(repair, "repair", bug)
    r = CliRunner().invoke(app, ["repair", str(f)])
    assert r.exit_code == Exit.INTERNAL and isinstance(r.exception, RuntimeError)

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(repair, "repair", interrupted)
    assert CliRunner().invoke(app, ["repair", str(f)]).exit_code == 130


OUT_OF_RANGE = [
    ("--context-window", "0"),  # was the model's window: nothing compacted
    ("--context-window", "-5"),  # was exit 5 (cannot fit)
    ("--threshold", "0"),
    ("--threshold", "1.5"),
    ("--threshold", "nan"),
    ("--tail-tokens", "-1"),
    ("--protect-first", "-1"),
    ("--summary-ratio", "-0.5"),
    ("--summary-min", "-1"),
    ("--summary-max", "0"),
    ("--last-ask", "never"),
    ("--protect-tokens", "-1"),
    ("--min-dedup-chars", "-1"),
    ("--arg-limit", "-1"),
    ("--arg-keep", "-1"),
    ("--digest-names", "-1"),
    ("--min-saving", "-0.1"),
    ("--min-saving", "1.5"),
    ("--jobs", "0"),
    ("--llm-context", "0"),
    ("--timeout", "0"),
    ("--retries", "-1"),
    ("--workers", "0"),
]


@pytest.mark.parametrize("flag, value", OUT_OF_RANGE, ids=[f"{f}={v}" for f, v in OUT_OF_RANGE])
def test_an_out_of_range_option_is_a_usage_error(flag, value, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no project config
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    r = CliRunner().invoke(app, ["compact", LONG, flag, value])
    assert r.exit_code == Exit.USAGE, r.stderr
    assert f"compactctl: error: {flag} {value}" in r.stderr and "must be" in r.stderr
    assert r.stdout == ""


def test_eval_and_recall_option_errors_are_usage_errors(tmp_path):
    arch = tmp_path / "a.jsonl"
    assert (
        CliRunner()
        .invoke(app, ["compact", LONG, "--context-window", "8000", "-q", "-o", str(tmp_path / "c.jsonl"), "--archive", str(arch)])
        .exit_code
        == 0
    )
    for args in (
        ["eval", LONG, "--continuation", "--probes"],  # was exit 1, the code of a bug
        ["eval", LONG, "--cuts", "half"],  # was exit 1
        ["eval", LONG, "--cuts", "0.5,1.5"],
        ["eval", LONG, "--ratio", "0"],
        ["eval", LONG, "--window-ratio", "-1"],
        ["eval", LONG, "--explain", "-1"],
        ["recall", "--search", "test", "--archive", str(arch), "--limit", "-1"],  # was every match (SQLite's LIMIT -1)
    ):
        r = CliRunner().invoke(app, args)
        assert r.exit_code == Exit.USAGE and "compactctl: error: " in r.stderr, (args, r.exit_code, r.stderr)


@pytest.mark.parametrize("streamed", [False, True])
def test_a_reader_that_closes_stdout_early_is_exit_4_said_once(tmp_path, streamed):
    """`compactctl compact big | head -c 100`: the reader closes the pipe. Held back or streamed (--on-error skip),
    the same I/O exit code and one line on stderr (typer turned the held-back case into a silent exit 1)."""
    import subprocess
    import sys

    src = write_jsonl(tmp_path / "d.jsonl", [{"messages": tool_session(12, 3000)} for _ in range(40)])
    cmd = [sys.executable, "-m", "compactctl", "compact", str(src), "--context-window", "4000", "-q", "--workers", "1"]
    p = subprocess.Popen(cmd + (["--on-error", "skip"] if streamed else []), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stdout.read(100)
    p.stdout.close()  # as `head -c 100` does
    err = p.stderr.read() if p.stderr else b""
    assert p.wait(timeout=120) == Exit.IO
    assert err.count(b"broken pipe") == 1 and b"Traceback" not in err and b"Exception ignored" not in err


def test_an_error_said_to_a_closed_stderr_keeps_its_exit_code():
    """`compactctl repair --check f 2>&1 | head -4` (the findings go to stderr): when the reader had closed the pipe
    by the last line, the error's own message failed to print and typer turned the broken pipe into exit 1,
    "internal error (a bug)", one run in four; the check's exit 6 (or the error's code) it is."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "class Closed:\n"  # a stderr whose reader left once the findings were read
        "    def __init__(self, s): self.s = s\n"
        "    def write(self, t):\n"
        "        if t.startswith('compactctl: error:'): raise BrokenPipeError(32, 'Broken pipe')\n"
        "        return self.s.write(t)\n"
        "    def __getattr__(self, k): return getattr(self.s, k)\n"
        "sys.stderr = Closed(sys.stderr)\n"
        "sys.argv = ['compactctl', *sys.argv[1:]]\n"
        "from compactctl.entry import main\n"
        "main()\n"
    )
    for args, code in ((["repair", "--check", BROKEN], Exit.CHECK_FAILED), (["prune", "missing.jsonl"], Exit.IO)):
        p = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, timeout=120)
        assert p.returncode == code, (args, p.returncode, p.stderr[-500:])
        assert b"Traceback" not in p.stderr


def test_a_stderr_whose_reader_left_ends_nothing(tmp_path):
    """`repair --check f 2>&1 | head -3`, `compact dir/ -o out/ 2>&1 | head -1`: a finding or a note that met the
    closed pipe was taken for a closed standard output, exit 4 ("standard output: its reader closed it"), and the
    compact run wrote no file. What goes to stderr is not the run's result: the check's exit 6, the files written."""
    import subprocess
    import sys

    def run(*args: str) -> int:
        p = subprocess.Popen([sys.executable, "-m", "compactctl", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        assert p.stderr is not None
        p.stderr.close()  # the reader has left before the first line, as `| head` after its lines
        return p.wait(timeout=120)

    assert run("repair", "--check", BROKEN) == Exit.CHECK_FAILED
    src = tmp_path / "in"
    src.mkdir()
    for name in ("a", "b"):
        (src / f"{name}.jsonl").write_bytes(Path(LONG).read_bytes())
    assert run("compact", str(src), "-o", str(tmp_path / "out") + "/", "--context-window", "8000", "--workers", "1") == 0
    assert sorted(f.name for f in (tmp_path / "out").iterdir()) == ["a.jsonl", "b.jsonl"]
    assert run("prune", str(tmp_path / "missing.jsonl")) == Exit.IO  # an error keeps its own code, as before


def test_sigterm_ends_a_run_as_ctrl_c_does_and_exits_143(tmp_path):
    """The parts and the journal stay for --resume (said on stderr), no temporary file is left, and the resumed
    output is the uninterrupted one."""
    import os
    import signal
    import subprocess
    import sys
    import time

    src = write_jsonl(tmp_path / "d.jsonl", [{"messages": tool_session(12, 3000)} for _ in range(400)])
    out = tmp_path / "o" / "out.jsonl"
    out.parent.mkdir()
    args = ["compact", str(src), "--context-window", "4000", "-q", "-o", str(out), "--archive", str(out.parent / "a.jsonl")]
    env = {**os.environ, "COMPACTCTL_JOURNAL_EVERY": "0", "COMPACTCTL_SLOW_DOWN": "0.05"}  # a checkpoint a transcript
    p = subprocess.Popen([sys.executable, "-m", "compactctl", *args], stderr=subprocess.PIPE, env=env)
    journal = out.parent / "out.jsonl.compactctl-journal"
    part = out.parent / "out.jsonl.compactctl-part"
    for _ in range(1200):  # until the run has written its first records and checkpointed them (the journal's start)
        if part.exists() and part.stat().st_size > 0 and journal.exists() and b'"t":"ck"' in journal.read_bytes():
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    err = p.stderr.read() if p.stderr else b""
    assert p.wait(timeout=120) == 128 + signal.SIGTERM, err
    assert b"--resume" in err and not out.exists() and journal.exists()
    assert all(f.name.endswith(("compactctl-part", "compactctl-journal")) for f in out.parent.iterdir()), list(out.parent.iterdir())
    assert proc(*args, "--resume").returncode == 0
    whole = tmp_path / "whole.jsonl"
    assert proc(*args[:-4], "-o", str(whole), "--archive", str(tmp_path / "whole.archive.jsonl")).returncode == 0
    assert out.read_bytes() == whole.read_bytes()


def test_bad_environment_values_are_usage_errors(tmp_path):
    for value in ("inf", "nan", "-1", "abc"):
        p = proc("repair", LONG, "-q", env={"COMPACTCTL_MAX_LINE_MB": value})
        assert p.returncode == Exit.USAGE and b"COMPACTCTL_MAX_LINE_MB" in p.stderr, value
    p = proc("compact", LONG, "-q", env={"COMPACTCTL_CONTEXT_WINDOW": "abc"})
    assert p.returncode == Exit.USAGE and b"expected an integer)" in p.stderr and b"invalid literal" not in p.stderr


def test_an_output_directory_that_is_a_file_is_an_io_error(tmp_path):
    f = tmp_path / "taken.jsonl"
    f.write_bytes(b"")
    r = cli("compact", LONG, "-o", str(f) + "/", "-q")
    assert r.returncode == Exit.IO and b"cannot be the output directory" in r.stderr and b"Traceback" not in r.stderr


def test_an_output_in_a_missing_folder_is_an_io_error(tmp_path):
    """-o into a folder that does not exist said "x.jsonl.compactctl-part: missing, cannot resume (remove the journal
    to start over)", exit 2, in a run that resumed nothing and had no journal."""
    for args in (
        ["-o", str(tmp_path / "nodir" / "x.jsonl")],
        ["--archive", str(tmp_path / "nodir" / "a.jsonl"), "-o", str(tmp_path / "c.jsonl")],
    ):
        r = cli("compact", LONG, "--context-window", "8000", "-q", *args)
        assert r.returncode == Exit.IO, r.stderr
        assert b"cannot write here (No such file or directory)" in r.stderr and b"resume" not in r.stderr
    assert [p.name for p in tmp_path.iterdir()] == []


def test_sigterm_stops_the_mcp_server_at_once_while_its_client_holds_stdin(tmp_path):
    """The server reads stdin in a thread: SIGTERM ends it outright (the Ctrl-C path waited on that thread)."""
    import signal
    import subprocess
    import sys
    import time

    p = subprocess.Popen(
        [sys.executable, "-m", "compactctl", "mcp", "--archive", str(tmp_path / "a.jsonl")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert p.stdin is not None
    p.stdin.write(
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
    )
    p.stdin.flush()
    time.sleep(1.5)
    t0 = time.perf_counter()
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=10)
    finally:
        p.kill()
        p.stdin.close()
    assert time.perf_counter() - t0 < 5


def test_version_into_a_closed_pipe_is_quiet():
    import subprocess
    import sys

    r = subprocess.run(
        f"{sys.executable} -m compactctl --version | true; exit ${{PIPESTATUS[0]}}", shell=True, executable="/bin/bash", capture_output=True
    )
    assert r.returncode == 0 and b"Traceback" not in r.stderr


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_datasets_bad_record_says_nothing_was_written_and_how_to_write_the_others(workers, tmp_path):
    """The run stops at a record's data error and writes nothing (all or nothing): the message says so, and how to
    write the other records (from a worker process the error comes back without its class, by its exit code). An
    input of one transcript has no others."""
    import orjson

    ok = {"messages": [{"role": "user", "content": "hi " * 300}, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "go"}]}
    bad = {"messages": [{"role": "assistant", "content": ""}]}
    data = tmp_path / "ds.jsonl"
    data.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in (ok, ok, bad, ok)))
    out = tmp_path / "out.jsonl"
    r = cli("compact", str(data), "--context-window", "2000", "-o", str(out), "--workers", workers)
    assert r.returncode == Exit.DATA and not out.exists()
    assert f"{data}:3: no user or assistant message" in r.stderr.decode()
    assert "nothing written: --on-error skip writes the others and reports this one" in r.stderr.decode()
    data.write_bytes(orjson.dumps(bad) + b"\n")
    r = cli("compact", str(data), "--context-window", "2000", "-o", str(out), "--workers", workers)
    assert r.returncode == Exit.DATA and "--on-error skip" not in r.stderr.decode()
    r = cli("compact", str(data), "--context-window", "2000", "-o", str(out), "--on-error", "skip")
    assert r.returncode == 0


@pytest.mark.parametrize("engine", [(), ("--workers", "2"), ("--jobs", "2")])
def test_the_message_of_a_first_record_refused_by_the_work_is_the_same_on_every_engine(engine, tmp_path):
    """The first record of a dataset refused by the work said "nothing written: --on-error skip writes the others"
    with --workers 2 (which had read the second ahead) and nothing at all with one worker. The transcripts counted
    are those finished before it, in input order: the same words on every engine."""
    import orjson

    ok = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]}
    bad = {"messages": [{"role": "system", "content": "s"}]}
    data = tmp_path / "ds.jsonl"
    data.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in (bad, ok, ok)))
    r = cli("compact", str(data), "-q", *engine)
    assert r.returncode == Exit.DATA and r.stdout == b""
    assert (
        r.stderr.decode()
        == f"compactctl: error: {data}:1: no user or assistant message with content: nothing a model could be sent -- nothing written\n"
    )


def test_a_sessions_bad_line_says_nothing_was_written_and_that_skip_writes_the_others(tmp_path):
    """A session file (one message a line) with a bad line stopped the run with the line's error alone, where the
    README promises "nothing written" (and, when other transcripts were read, that --on-error skip writes them).
    What skip writes of the file itself depends on it (the rest of a session; nothing of a UTF-16 file or a .json
    document cut short): not said. `repair --check` writes nothing anyway: not said there."""
    src = SAMPLES / "long_session.jsonl"
    lines = src.read_bytes().splitlines(keepends=True)
    bad = tmp_path / "s.jsonl"
    bad.write_bytes(b"".join(lines[:2]) + b"{bad\n" + b"".join(lines[2:6]))
    out = tmp_path / "o.jsonl"
    r = cli("repair", str(bad), "-o", str(out))
    err = r.stderr.decode()
    assert r.returncode == Exit.DATA and not out.exists(), err
    assert f"{bad}:3: invalid JSON" in err and err.endswith(" -- nothing written\n"), err
    r = cli("repair", "--check", str(bad))
    assert r.returncode == Exit.DATA and "nothing written" not in r.stderr.decode()
    utf16 = tmp_path / "u.jsonl"
    utf16.write_bytes(b"".join(lines[:4]).decode().encode("utf-16"))
    r = cli("repair", str(utf16), "-o", str(out))
    assert r.returncode == Exit.DATA and r.stderr.decode().endswith(" -- nothing written\n"), r.stderr
    r = cli("repair", str(bad), "-o", str(out), "--on-error", "skip")
    assert r.returncode == 0 and out.read_bytes().startswith(b"".join(lines[:4])) and b"{bad" not in out.read_bytes()
    first = tmp_path / "a.jsonl"  # another input read before it: skip writes the others too
    first.write_bytes(b"".join(lines[:4]))
    r = cli("repair", str(first), str(bad), "-o", f"{tmp_path}/d/")
    assert r.returncode == Exit.DATA and "nothing written: --on-error skip writes the others" in r.stderr.decode()


def _busy_dataset(path) -> None:
    """~20 MB of distinct tool outputs (20 sessions, written 15 times over): two worker processes take a few seconds
    to compact it, so a signal finds them in the middle of batches."""
    import random

    rnd = random.Random(0)
    rows = []
    for _ in range(20):
        session = tool_session(12, 10)
        for m in session:
            if m["role"] == "tool":
                m["content"] = " ".join(f"w{rnd.randrange(5000)}" for _ in range(600))
        rows.append({"messages": session})
    write_jsonl(path, rows * 15)


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_to_the_process_group_ends_a_run_with_workers_at_once(tmp_path, sig):
    """From a review: `timeout -s INT` (or TERM) on a run with 2 worker processes hung about one run in four, and a
    worker printed a KeyboardInterrupt traceback. The workers took the group's signal too (one waiting for work died
    of it, which broke the pool; one ended by the pool sent its KeyboardInterrupt back through a pipe nobody read),
    and `timeout` signals the process, then its group: a second KeyboardInterrupt cut the parent's wait for its pool
    short. Now the workers leave signals to the parent, which takes one and ends its pool: 130 or 143 within
    seconds, no traceback, nothing at -o. Tried with the workers idle (the parent slowed down: they wait for work,
    which always gave the traceback) and busy, the second signal at once or a little later (the hang was a race)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    src = tmp_path / "d.jsonl"
    _busy_dataset(src)
    out = tmp_path / "out.jsonl"
    part = tmp_path / "out.jsonl.compactctl-part"
    signum = getattr(signal, sig)
    args = [sys.executable, "-m", "compactctl", "compact", str(src), "--context-window", "3000", "-q", "-o", str(out), "--workers", "2"]
    for slow, delay, gap in (("0.01", 0.3, 0), ("0", 0.0, 0), ("0", 0.1, 0.005), ("0", 0.2, 0.02), ("0", 0.3, 0)):
        env = {**os.environ, "COMPACTCTL_SLOW_DOWN": slow}
        p = subprocess.Popen(args, stderr=subprocess.PIPE, env=env, start_new_session=True)
        deadline = time.monotonic() + 60
        while not (part.exists() and part.stat().st_size > 0) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)  # until the first results are written
        time.sleep(delay)
        assert p.poll() is None, "the run ended before the signal: give it more work"
        t0 = time.monotonic()
        os.kill(p.pid, signum)  # as `timeout` does
        time.sleep(gap)
        os.killpg(p.pid, signum)
        try:
            _, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            pytest.fail(f"{sig} ({slow}, {delay}, {gap}): still running 10 s later")
        took = time.monotonic() - t0
        assert p.returncode == 128 + signum and took < 2, (slow, delay, gap, p.returncode, took, err)
        assert b"Traceback" not in err and not out.exists(), (slow, delay, gap, err)
        for f in tmp_path.iterdir():  # what an interrupted run keeps for --resume
            if f != src:
                f.unlink()


def test_an_app_run_not_standalone_returns_the_exit_code():
    """app(standalone_mode=False), as a program that embeds the app runs it: a CompactError's exit code is returned
    (typer.Exit, as click returns it), not raised as SystemExit (the fast path's, which has no typer)."""
    r = CliRunner().invoke(app, ["compact", LONG, "--workers", "0"], standalone_mode=False)
    assert r.exit_code == 0 and r.return_value == Exit.USAGE
    assert "compactctl: error: --workers 0: must be at least 1" in r.stderr


def test_a_missing_extra_is_a_usage_error_naming_the_install(tmp_path, monkeypatch):
    """`compactctl mcp` without the mcp package (a plain `pip install .`) exited 1, the code of a bug, where
    `--engine ray` without Ray exits 2: both are the command line's to fix."""
    import sys

    src = write_jsonl(tmp_path / "s.jsonl", tool_session(12, 2000))
    archive = tmp_path / "a.jsonl"
    assert cli("compact", str(src), "--context-window", "2000", "--archive", str(archive), "-o", str(tmp_path / "o.jsonl")).returncode == 0
    for name in [n for n in sys.modules if n == "mcp" or n.startswith("mcp.")] + ["mcp"]:  # imported by an earlier test
        monkeypatch.setitem(sys.modules, name, None)  # `import mcp...` raises ImportError, as when it is not installed
    r = cli("mcp", "--archive", str(archive))
    assert r.returncode == Exit.USAGE and b"needs the mcp package: pip install '.[mcp]'" in r.stderr, r.stderr
