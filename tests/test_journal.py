"""journal.Journal: what --resume reads back."""

from __future__ import annotations

import os

import pytest

from compactctl.journal import Journal


def _header(n_inputs: int) -> dict:
    inputs = [[f"/data/{'d' * 120}/f{i:04}.jsonl", 1000 + i, 1_700_000_000_000 + i] for i in range(n_inputs)]
    return {"journal": "compactctl", "version": 1, "command": "prune", "options": "x", "inputs": inputs, "output": "/o/"}


@pytest.mark.parametrize("n_inputs", [1, 600])  # 600 long paths: a header of ~100 KB
def test_unstarted_is_only_a_journal_killed_before_its_header_was_written(tmp_path, n_inputs):
    path = tmp_path / "o.compactctl-journal"
    j = Journal(str(path), _header(n_inputs))
    path.write_bytes(b"")
    assert j.unstarted()
    j.start()
    head = path.read_bytes()
    assert not j.unstarted()  # the whole header: a started run, resumed from its checkpoints
    j.append({"t": "ck", "n": 1, "fn": 0, "key": "k", "file": None, "off": {}})
    j.close()
    assert not j.unstarted()
    for k in (1, len(head) // 2, len(head) - 1):  # a beginning of this run's header (a kill while writing it)
        path.write_bytes(head[:k])
        assert j.unstarted()
    other = Journal(str(path), {**_header(n_inputs), "options": "y"})
    path.write_bytes(head[: len(head) // 2])
    assert not other.unstarted()  # another run's header: refused by load(), not started over
    path.unlink()
    assert not j.unstarted()  # no journal at all is not this case


COUNT_FSYNCS = """
import atexit, os, sys
n = [0]
real = os.fsync
def fsync(fd):
    n[0] += 1
    real(fd)
os.fsync = fsync
atexit.register(lambda: print(f"fsyncs={n[0]}", file=sys.stderr))
sys.argv = ["compactctl", *sys.argv[1:]]
from compactctl.entry import main
main()
"""


def _fsyncs(*args: str) -> tuple[int, bytes]:
    import re
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", COUNT_FSYNCS, *args], capture_output=True)
    assert r.returncode == 0, r.stderr
    m = re.search(rb"fsyncs=(\d+)", r.stderr)
    assert m is not None, r.stderr
    return int(m.group(1)), r.stderr


def test_one_output_finished_before_a_checkpoint_is_synced_and_renamed_without_a_journal(tmp_path):
    """A hook's `compact -o FILE` on one session: the output's part is fsync'd once and renamed; no journal is
    written (it took four more fsyncs: header, directory, checkpoint, end). With a side file there are two
    renames to keep in step, so the journal is written, at the end, and removed."""
    from tests.conftest import SAMPLES, cli

    src = str(SAMPLES / "long_session.jsonl")
    out = tmp_path / "o.jsonl"
    n, _ = _fsyncs("compact", src, "--context-window", "8000", "-q", "-o", str(out))
    assert n == 1
    assert out.read_bytes() == cli("compact", src, "--context-window", "8000", "-q").stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.jsonl"]
    n, _ = _fsyncs(
        "compact", src, "--context-window", "8000", "-q", "-o", str(tmp_path / "p.jsonl"), "--archive", str(tmp_path / "a.jsonl")
    )
    assert n == 2 + 2 + 1  # the parts; the journal's header with the checkpoint, its directory; the end
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "o.jsonl", "p.jsonl"]


def test_an_interrupt_before_the_first_checkpoint_keeps_nothing_and_resume_starts_over(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import proc, tool_session, write_jsonl

    src = write_jsonl(tmp_path / "d.jsonl", [{"messages": tool_session(6, 2000)} for _ in range(40)])
    out = tmp_path / "out.jsonl"
    args = ["compact", str(src), "--context-window", "3000", "-q", "-o", str(out)]
    env = {**__import__("os").environ, "COMPACTCTL_JOURNAL_EVERY": "1000", "COMPACTCTL_SLOW_DOWN": "0.2"}
    p = subprocess.Popen([sys.executable, "-m", "compactctl", *args], stderr=subprocess.PIPE, env=env)
    part = tmp_path / "out.jsonl.compactctl-part"
    deadline = time.monotonic() + 60
    while not (part.exists() and part.stat().st_size > 0) and time.monotonic() < deadline:
        time.sleep(0.02)
    p.send_signal(signal.SIGINT)
    err = p.stderr.read() if p.stderr else b""
    assert p.wait(timeout=60) == 130, err
    assert b"before the first checkpoint: nothing was kept" in err and b"Traceback" not in err
    assert sorted(f.name for f in tmp_path.iterdir()) == ["d.jsonl"]
    assert proc(*args, "--resume").returncode == 0
    assert out.read_bytes() == proc(*args[:-2]).stdout


INTERRUPT_AT = """
import os, signal, sys, time
from compactctl import journal
obj, name = {"commit": (journal.PartFile, "commit"), "unlink": (os, "unlink")}[os.environ["AT"]]
real = getattr(obj, name)
fired = []
def hooked(*a, **k):
    if not fired:
        fired.append(1)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
    return real(*a, **k)
setattr(obj, name, hooked)
sys.argv = ["compactctl", *sys.argv[1:]]
from compactctl.entry import main
main()
"""


@pytest.mark.parametrize("at", ["commit", "unlink"])
def test_ctrl_c_while_the_outputs_are_put_in_place_says_what_it_left(tmp_path, at):
    """From a review: Ctrl-C at the rename of a run without a journal left its part, silently; Ctrl-C while the
    journal was removed (everything in place) said "nothing was kept"."""
    import subprocess
    import sys

    from tests.conftest import SAMPLES

    src = str(SAMPLES / "long_session.jsonl")
    extra = ["--archive", str(tmp_path / "a.jsonl")] if at == "unlink" else []
    args = ["compact", src, "--context-window", "8000", "-q", "-o", str(tmp_path / "o.jsonl"), *extra]
    r = subprocess.run([sys.executable, "-c", INTERRUPT_AT, *args], capture_output=True, env={**__import__("os").environ, "AT": at})
    assert r.returncode == 130, r.stderr
    left = sorted(p.name for p in tmp_path.iterdir())
    if at == "commit":  # interrupted before the rename: nothing stays, and it says so
        assert left == [] and b"nothing was kept" in r.stderr, (left, r.stderr)
    else:  # the outputs are in place: never "nothing was kept"
        assert {"o.jsonl", "a.jsonl"} <= set(left) and b"nothing was kept" not in r.stderr, (left, r.stderr)


def test_resume_refuses_a_side_file_that_is_no_regular_file(tmp_path):
    """A device or pipe side file is written whole at the end (a part file renamed over it would replace it): what
    an interrupted run had for it is gone, so --resume refused nothing and left an archive without the first part
    (a review's find, with a FIFO). It refuses now, as for an SQLite archive."""
    import signal
    import stat
    import subprocess
    import sys
    import time

    from tests.conftest import proc, tool_session, write_jsonl

    null = tmp_path / "null"
    try:
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError):
        pytest.skip("mknod needs root")
    src = write_jsonl(tmp_path / "d.jsonl", [{"messages": tool_session(6, 2000)} for _ in range(40)])
    out = tmp_path / "out.jsonl"
    args = ["compact", str(src), "--context-window", "3000", "-q", "-o", str(out), "--archive", str(null)]
    env = {**os.environ, "COMPACTCTL_JOURNAL_EVERY": "0.05", "COMPACTCTL_SLOW_DOWN": "0.1"}
    p = subprocess.Popen([sys.executable, "-m", "compactctl", *args], stderr=subprocess.PIPE, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(f.name.endswith("journal") for f in tmp_path.iterdir()):
        time.sleep(0.02)
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    p.wait(timeout=60)
    assert any(f.name.endswith("journal") for f in tmp_path.iterdir())  # interrupted after a checkpoint
    r = proc(*args, "--resume")
    assert r.returncode == 2 and b"--resume cannot continue --archive" in r.stderr, r.stderr


def test_a_file_name_that_is_not_utf8_is_written_to_the_journal_archive_and_report(tmp_path):
    """A file name with a byte that is not UTF-8 (Python reads it with a lone surrogate) crashed every side file:
    JSON cannot carry the surrogate (a traceback, exit 1, after the output was written). The name has U+FFFD there;
    a resume compares the journal's header as written, and restore gives the original back."""
    from .conftest import SAMPLES, cli

    name = os.fsdecode(b"caf\xe9.jsonl")
    src = tmp_path / name
    src.write_bytes((SAMPLES / "long_session.jsonl").read_bytes())
    r = cli("compact", str(src), "--context-window", "8000", "--archive", str(tmp_path / "a.jsonl"), "--report",
            str(tmp_path / "r.jsonl"), "-o", str(tmp_path / "o.jsonl"), "-q")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "caf\ufffd.jsonl" in (tmp_path / "r.jsonl").read_text()
    r = cli("restore", str(tmp_path / "o.jsonl"), "--archive", str(tmp_path / "a.jsonl"), "-o", str(tmp_path / "back.jsonl"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "back.jsonl").read_bytes() == src.read_bytes()
    path = tmp_path / "o.compactctl-journal"
    header = {**_header(1), "inputs": [[str(src), 1, 2]]}
    Journal(str(path), header).start({"t": "ck", "n": 1, "fn": 0, "key": "k", "file": None, "off": {}})
    entries, _ = Journal(str(path), header).load()  # the same run's header: resumed, not refused
    assert entries[0]["t"] == "ck"
