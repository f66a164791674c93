"""Where a run's transcripts go (compactctl/runner/sinks.py): one output file or one file per input (-o DIR/), with
the archive, report and rejects beside it; each written whole or not at all, in input order, and a run killed
anywhere (kill -9 included) finished by --resume into exactly what an uninterrupted run writes.

The kills here are made at a chosen point (a patched process that exits with os._exit, as SIGKILL would leave it:
no cleanup, nothing more written), so that each test lands on the same point every time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import read_jsonl, tool_session, write_jsonl

# A compactctl process killed (os._exit, no cleanup) at a point given by KILL_AT:
#   add=N:     just after the N-th transcript is handed to the outputs (what it wrote reached the files; its checkpoint not)
#   commit:    when the first output is being renamed into place (the journal says the run ended)
#   finish=N:  when the N-th finished file of -o DIR/ is being renamed into place
#   ctrl-c=N:  not killed: Ctrl-C (KeyboardInterrupt) just after the N-th transcript is handed to the outputs
KILL = """
import os, sys
from compactctl import journal
from compactctl.runner import sinks
where, _, at = os.environ["KILL_AT"].partition("=")
calls = [0]
def killed(self=None):
    for s in (getattr(self, "out", None), *getattr(self, "sides", {}).values()):
        f = getattr(s, "f", None)
        if f is not None and not f.closed:
            f.flush()  # written to the file, as a kill after the write would leave it
    os._exit(137)
def hook(obj, name, after):
    real = getattr(obj, name)
    def hooked(*a, **k):
        out = None if where not in ("add", "ctrl-c") else real(*a, **k)
        calls[0] += 1
        if calls[0] == after and where == "ctrl-c":
            raise KeyboardInterrupt
        if calls[0] == after:
            killed(a[0] if where == "add" else None)
        return out if where in ("add", "ctrl-c") else real(*a, **k)
    setattr(obj, name, hooked)
if where in ("add", "ctrl-c"):
    hook(sinks._Sinks, "add", int(at))
elif where == "commit":
    hook(journal.PartFile, "commit", 1)
else:
    hook(sinks, "finish_part", int(at))
sys.argv = ["compactctl", *sys.argv[1:]]
from compactctl.entry import main
main()
"""

EVERY = {"COMPACTCTL_JOURNAL_EVERY": "0"}  # a checkpoint after each transcript


def run(*args: str, kill_at: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    e = {**os.environ, **EVERY, **(env or {})}
    if kill_at is None:
        cmd = [sys.executable, "-m", "compactctl", *args]
    else:
        cmd, e["KILL_AT"] = [sys.executable, "-c", KILL, *args], kill_at
    return subprocess.run(cmd, capture_output=True, env=e, timeout=300)


def files(root: Path) -> dict[str, bytes]:
    """Every file under `root` (parts and journals included), by its path under it."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def dataset(path: Path, n: int = 6, bad: tuple[int, ...] = ()) -> Path:
    """n transcripts, each its own (told apart by its first prompt); those at `bad` rejected when built."""
    rows = []
    for k in range(n):
        if k in bad:
            rows.append({"messages": [{"role": "wizard", "content": f"bad {k}"}]})
            continue
        msgs = tool_session(4, 1500 + 100 * k)
        msgs[1] = {**msgs[1], "content": f"task {k}: fix the bug in app.py"}
        rows.append({"messages": msgs})
    return write_jsonl(path, rows)


OPTS = ["--context-window", "2000", "--summary-min", "300", "-q", "--workers", "1"]


def sides(root: Path, out: str) -> list[str]:
    return [*OPTS, "--on-error", "skip", "-o", out, "--archive", f"{root}/a.jsonl", "--report", f"{root}/r.jsonl",
            "--rejects", f"{root}/x.jsonl"]  # fmt: skip


def killed_then_resumed(args: list[str], kills: list[str]) -> None:
    """Run `args`, killed at each point of `kills` in turn (the first run fresh, the others --resume), then --resume it
    to the end."""
    for k, kill_at in enumerate(kills):
        r = run(*args, *(["--resume"] if k else []), kill_at=kill_at)
        assert r.returncode == 137, r.stderr
    r = run(*args, "--resume")
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("kills", [["add=1"], ["add=3"], ["add=6"], ["commit"], ["add=3", "add=2", "commit"]])
def test_a_dataset_killed_anywhere_is_resumed_into_what_an_uninterrupted_run_writes(tmp_path, kills):
    """Killed before the first checkpoint (started over), after some transcripts (the one the kill cut written again),
    while the outputs are renamed into place, or several times over: the same files, byte for byte."""
    src = dataset(tmp_path / "d.jsonl", 7, bad=(2,))
    ref, out = tmp_path / "ref", tmp_path / "out"
    ref.mkdir(), out.mkdir()
    assert run("compact", str(src), *sides(ref, f"{ref}/o.jsonl")).returncode == 0
    want = files(ref)
    args = ["compact", str(src), *sides(out, f"{out}/o.jsonl")]
    killed_then_resumed(args, kills)
    assert files(out) == want


def inputs(root: Path) -> Path:
    """A folder of inputs: two datasets, one whose every record is rejected, one in a subfolder."""
    src = root / "in"
    (src / "sub").mkdir(parents=True)
    dataset(src / "a.jsonl", 3)
    dataset(src / "b.jsonl", 2, bad=(0, 1))
    dataset(src / "c.jsonl", 4, bad=(1,))
    dataset(src / "sub" / "d.jsonl", 2)
    return src


@pytest.mark.parametrize(
    "kills",
    [["add=2"], ["add=4"], ["add=5"], ["add=8"], ["add=11"], ["commit"], ["finish=1"], ["finish=2"], ["add=7", "add=2", "add=1"]],
)
def test_a_folder_of_inputs_killed_anywhere_is_resumed_into_what_an_uninterrupted_run_writes(tmp_path, kills):
    """-o DIR/: killed in a file, at its end, in an input whose every record is rejected, while the finished files are
    renamed into place, or several times in the same file: the same files, byte for byte, and no other."""
    src = inputs(tmp_path)
    ref, out = tmp_path / "ref", tmp_path / "out"
    ref.mkdir(), out.mkdir()
    assert run("compact", str(src), *sides(ref, f"{ref}/o/")).returncode == 0
    want = files(ref)
    assert sorted(want) == ["a.jsonl", "o/a.jsonl", "o/c.jsonl", "o/sub/d.jsonl", "r.jsonl", "x.jsonl"]
    args = ["compact", str(src), *sides(out, f"{out}/o/")]
    killed_then_resumed(args, kills)
    assert files(out) == want


def test_a_rerun_over_its_own_archive_killed_and_resumed_carries_nothing_twice(tmp_path):
    """Run again over its own archive, a run archives again every original its output refers to: nothing is carried
    from the archive it replaces. Killed and resumed, what the killed run archived counts as archived by the run (not
    as references to carry: their originals were copied a second time into the archive)."""
    src = dataset(tmp_path / "d.jsonl", 6)
    ref, out = tmp_path / "ref", tmp_path / "out"
    ref.mkdir(), out.mkdir()
    for root in (ref, out):
        args = ["compact", str(src), *OPTS, "-o", f"{root}/o.jsonl", "--archive", f"{root}/a.jsonl"]
        assert run(*args).returncode == 0
    want = files(ref)
    assert b'"carried"' not in want["a.jsonl"]
    r = run(*args, kill_at="add=4")
    assert r.returncode == 137, r.stderr
    r = run(*args, "--resume")
    assert r.returncode == 0, r.stderr
    assert files(out) == want


def test_resume_refuses_an_sqlite_archive_the_killed_run_had_begun(tmp_path):
    """An SQLite archive is written whole when the run ends: what the killed run had for it is gone, and a resumed run
    would write an archive without the transcripts before the kill. Refused; before the first checkpoint there is
    nothing to continue, and the run starts over."""
    src = dataset(tmp_path / "d.jsonl", 5)
    args = ["compact", str(src), *OPTS, "-o", f"{tmp_path}/o.jsonl", "--archive", f"{tmp_path}/a.sqlite"]
    assert run(*args, kill_at="add=3").returncode == 137
    r = run(*args, "--resume")
    assert r.returncode == 2 and b"--resume cannot continue the SQLite archive" in r.stderr, r.stderr
    assert not (tmp_path / "o.jsonl").exists() and not (tmp_path / "a.sqlite").exists()
    for f in tmp_path.glob("o.jsonl.*"):
        f.unlink()
    assert run(*args, kill_at="add=1").returncode == 137  # before the first checkpoint
    r = run(*args, "--resume")
    assert r.returncode == 0 and (tmp_path / "a.sqlite").exists(), r.stderr


def test_an_interrupted_run_that_writes_an_sqlite_archive_keeps_nothing_resume_would_refuse(tmp_path):
    """Ctrl-C (or SIGTERM) kept the parts and the journal and said "the same command with --resume continues from
    there", which then refused the SQLite archive (exit 2): nothing kept now, and said why."""
    src = dataset(tmp_path / "d.jsonl", 5)
    args = ["compact", str(src), *OPTS, "-o", f"{tmp_path}/o.jsonl", "--archive", f"{tmp_path}/a.sqlite"]
    r = run(*args, kill_at="ctrl-c=3")
    assert r.returncode == 130 and b"nothing was kept (--resume cannot continue a run that writes the SQLite archive" in r.stderr
    assert b"--resume continues" not in r.stderr and sorted(p.name for p in tmp_path.iterdir()) == ["d.jsonl"]
    r = run(*args, "--resume")  # starts over, as without a journal
    assert r.returncode == 0 and (tmp_path / "a.sqlite").exists(), r.stderr


@pytest.mark.parametrize("where", ["o/c.jsonl", "r.jsonl", "a.jsonl"])
def test_an_output_whose_place_is_a_folder_is_refused_before_anything_is_written(tmp_path, where):
    """A folder where an output goes (-o DIR/'s file for one input, a side file) cannot be written over: the run
    wrote everything, put the files before it into place, then failed (exit 4) with them there, and the archive naming
    an output that was not; an interrupted run lost its parts. Said (exit 4) before anything is written."""
    src = inputs(tmp_path)
    out = tmp_path / "out"
    (out / where).mkdir(parents=True)
    before = files(out)
    args = ["compact", str(src), *sides(out, f"{out}/o/")]
    r = run(*args)
    assert r.returncode == 4 and f"{out / where}: is a directory".encode() in r.stderr, r.stderr
    assert files(out) == before == {} and (out / where).is_dir()
    if where == "o/c.jsonl":  # killed, the folder made after: --resume keeps what the killed run wrote
        (out / where).rmdir()
        assert run(*args, kill_at="add=8").returncode == 137
        parts = files(out)
        (out / where).mkdir()
        r = run(*args, "--resume")
        assert r.returncode == 4 and files(out) == parts, r.stderr
        (out / where).rmdir()
        assert run(*args, "--resume").returncode == 0 and sorted(files(out)) == [
            "a.jsonl",
            "o/a.jsonl",
            "o/c.jsonl",
            "o/sub/d.jsonl",
            "r.jsonl",
            "x.jsonl",
        ]


def test_an_archive_written_over_counts_in_its_end_record_each_original_it_carried(tmp_path):
    """Compacting a compacted session over its archive copies the originals the new output still refers to into the
    new archive (carry.py); the end record says how many of its records are such copies."""
    from .conftest import SAMPLES, cli

    arch, a1, a2 = tmp_path / "a.jsonl", tmp_path / "a1.jsonl", tmp_path / "a2.jsonl"
    for src, out, window in ((SAMPLES / "long_session.jsonl", a1, "8000"), (a1, a2, "3000")):
        r = cli("compact", str(src), "--context-window", window, "-q", "-o", str(out), "--archive", str(arch))
        assert r.returncode == 0, r.stderr
    *recs, end = read_jsonl(arch.read_bytes())
    assert end["type"] == "end" and end["carried"] == sum(1 for r in recs if r.get("carried")) > 0


@pytest.mark.parametrize("to_dir", [False, True])
def test_ctrl_c_keeps_what_was_written_for_resume_and_an_error_keeps_nothing(tmp_path, to_dir):
    """Ctrl-C after a checkpoint: the parts and the journal stay (said on stderr), and --resume finishes them into an
    uninterrupted run's files; before the first checkpoint nothing stays. A record that fails the run (--on-error
    fail) leaves nothing: no part, no journal, no file of the inputs finished before it, and an earlier run's files
    as they were."""
    src = inputs(tmp_path)
    ref, out = tmp_path / "ref", tmp_path / "out"
    ref.mkdir(), out.mkdir()
    dest = "o/" if to_dir else "o.jsonl"
    assert run("compact", str(src), *sides(ref, f"{ref}/{dest}")).returncode == 0
    want = files(ref)
    args = ["compact", str(src), *sides(out, f"{out}/{dest}")]
    r = run(*args, kill_at="ctrl-c=1")
    assert r.returncode == 130 and b"before the first checkpoint: nothing was kept" in r.stderr, r.stderr
    assert files(out) == {}
    r = run(*args, kill_at="ctrl-c=7")
    assert r.returncode == 130 and b"the same command with --resume continues from there" in r.stderr, r.stderr
    journal = "o/.compactctl-journal" if to_dir else "o.jsonl.compactctl-journal"
    assert journal in files(out) and not set(files(out)) & set(want)
    r = run(*args, "--resume")
    assert r.returncode == 0, r.stderr
    assert files(out) == want
    fail = [a if a != "skip" else "fail" for a in args if a not in ("--rejects", f"{out}/x.jsonl")]
    r = run(*fail)
    assert r.returncode == 3 and b"nothing written" in r.stderr, r.stderr  # b.jsonl: an unknown role
    assert files(out) == want  # as the run before left them


def test_resume_with_nothing_to_resume_starts_over_also_beside_a_device(tmp_path):
    """--resume with no journal (none yet, or a run killed before its first checkpoint) is a run from the start; a
    side file on a device (written whole at the end) is refused only when there is a checkpoint to go on from."""
    src = dataset(tmp_path / "d.jsonl", 4)
    want = run("compact", str(src), *OPTS).stdout
    args = ["compact", str(src), *OPTS, "-o", f"{tmp_path}/o.jsonl", "--report", os.devnull, "--resume"]
    r = run(*args)
    assert r.returncode == 0 and (tmp_path / "o.jsonl").read_bytes() == want, r.stderr
    (tmp_path / "o.jsonl").unlink()
    assert run(*args[:-1], kill_at="add=1").returncode == 137
    r = run(*args)
    assert r.returncode == 0 and (tmp_path / "o.jsonl").read_bytes() == want, r.stderr
    assert run(*args[:-1], kill_at="add=3").returncode == 137
    r = run(*args)
    assert r.returncode == 2 and b"--resume cannot continue --report /dev/null" in r.stderr, r.stderr


def test_ctrl_c_of_a_run_streamed_to_stdout_keeps_side_files_that_match_what_was_printed(tmp_path):
    """To stdout under --on-error skip each transcript is printed as it is done: on Ctrl-C what was printed stays, and
    the side files are kept to match it (the archive closed with why it stopped, so restore gives those transcripts
    back); said on stderr, not with -q."""
    src = dataset(tmp_path / "d.jsonl", 6)
    whole = run("compact", str(src), *OPTS, "--archive", str(tmp_path / "whole.jsonl")).stdout.splitlines(keepends=True)
    for quiet in (True, False):
        arch = tmp_path / f"a{quiet}.jsonl"
        opts = [o for o in OPTS if quiet or o != "-q"]
        r = run("compact", str(src), *opts, "--on-error", "skip", "--archive", str(arch), kill_at="ctrl-c=3")
        assert r.returncode == 130 and r.stdout == b"".join(whole[:3]), r.stderr
        assert (b"the side files match it: " + bytes(arch) in r.stderr) != quiet, r.stderr
        end = read_jsonl(arch.read_bytes())[-1]
        assert end["type"] == "end" and end["transcripts"] == 3 and end["stopped"] == "interrupted"
        (tmp_path / "printed.jsonl").write_bytes(r.stdout)
        back = run("restore", str(tmp_path / "printed.jsonl"), "--archive", str(arch))
        assert back.returncode == 0 and read_jsonl(back.stdout) == read_jsonl(src.read_bytes())[:3], back.stderr
    r = run("compact", str(src), *[o for o in OPTS if o != "-q"], "--on-error", "skip", kill_at="ctrl-c=3")
    assert r.returncode == 130 and b"side files" not in r.stderr, r.stderr  # none to speak of
