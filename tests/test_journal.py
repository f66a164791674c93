"""journal.Journal: what --resume reads back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from compactctl.errors import IOFailure, UsageError
from compactctl.journal import Journal, PartFile, finish_part, part_path
from compactctl.jsonl import record_line


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

    # No checkpoint by the clock (one a second): on a loaded machine the run takes over a second and writes one.
    env = {**os.environ, "COMPACTCTL_JOURNAL_EVERY": "3600"}
    r = subprocess.run([sys.executable, "-c", COUNT_FSYNCS, *args], capture_output=True, env=env)
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
    r = subprocess.run(
        [sys.executable, "-c", INTERRUPT_AT, *args], capture_output=True, env={**os.environ, "AT": at, "COMPACTCTL_JOURNAL_EVERY": "3600"}
    )
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
    p.send_signal(signal.SIGKILL)  # (Ctrl-C keeps nothing of such a run: tests/test_sinks.py)
    p.wait(timeout=60)
    assert any(f.name.endswith("journal") for f in tmp_path.iterdir())  # killed after a checkpoint
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


# -- part files and the journal's entries, as --resume reads them back ---------------------------------------------------


def test_a_resumed_part_is_cut_back_to_its_checkpoint_and_goes_on_from_there(tmp_path):
    """What a killed run wrote after its last checkpoint goes: the resumed run writes that transcript again, and what
    it writes may be shorter (an LLM's summary differs from one call to the next): no byte of the older one stays."""
    target = tmp_path / "o.jsonl"
    part = tmp_path / "o.jsonl.compactctl-part"
    part.write_bytes(b'{"a":1}\n{"b":22222222}\n{"c":')
    p = PartFile(str(target), resume_at=8)
    assert p.offset == 8
    p.write(b'{"b":2}\n')
    assert p.offset == 16
    p.commit()
    assert target.read_bytes() == b'{"a":1}\n{"b":2}\n' and not part.exists()


def test_a_part_shorter_than_its_checkpoint_or_missing_is_refused_untouched(tmp_path):
    """A part that lost bytes the journal says were written (another tool cut it, a disk filled) cannot be resumed:
    going on would leave a hole of zero bytes in the output. Refused, and the part is left as it was."""
    target = tmp_path / "o.jsonl"
    part = tmp_path / "o.jsonl.compactctl-part"
    part.write_bytes(b'{"a":1}\n')
    with pytest.raises(UsageError, match="holds 8 bytes, the journal says 9: cannot resume"):
        PartFile(str(target), resume_at=9)
    assert part.read_bytes() == b'{"a":1}\n'
    assert PartFile(str(target), resume_at=8).offset == 8  # exactly as long: resumed
    part.unlink()
    with pytest.raises(UsageError, match="missing, cannot resume"):
        PartFile(str(target), resume_at=0)
    with pytest.raises(IOFailure, match="cannot write here"):
        PartFile(str(tmp_path / "no" / "such" / "o.jsonl"))  # a new part in a folder that does not exist
    assert not target.exists()


def test_a_new_part_is_empty_and_private_and_a_committed_one_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    """A new output is readable by its owner only (it holds what a transcript held); written over a file, it keeps
    that file's mode (the user's choice), also when a --resume finishes the rename a kill cut."""
    import stat

    p = PartFile(str(tmp_path / "n.jsonl"))
    part = Path(p.path)
    assert stat.S_IMODE(part.stat().st_mode) == 0o600
    p.write(b"x\n")
    p.leave()
    p = PartFile(str(tmp_path / "n.jsonl"))  # not resumed: an older part is started over
    assert p.offset == 0 and part.read_bytes() == b""
    p.write(b"y\n")
    p.commit()
    assert (tmp_path / "n.jsonl").read_bytes() == b"y\n" and stat.S_IMODE((tmp_path / "n.jsonl").stat().st_mode) == 0o600
    for finish in (False, True):
        old = tmp_path / f"old{finish}.jsonl"
        old.write_bytes(b"old\n")
        old.chmod(0o640)
        p = PartFile(str(old))
        p.write(b"new\n")
        if finish:  # killed after the run's end was journaled, before the rename: --resume does it
            p.leave()
            finish_part(str(old))
        else:
            p.commit()
        assert old.read_bytes() == b"new\n" and stat.S_IMODE(old.stat().st_mode) == 0o640, finish
        assert not Path(part_path(str(old))).exists()
    finish_part(str(tmp_path / "never.jsonl"))  # no part (renamed before the kill): nothing to do
    assert not (tmp_path / "never.jsonl").exists()


def test_a_new_part_or_journal_never_reuses_a_leftover_file_its_mode_or_where_its_link_points(tmp_path):
    """A part file left by another program (made 0644) or planted as a symbolic link: a run that does not resume
    starts a part of its own, private, and never writes through the link into the file it names."""
    import stat

    left = Path(part_path(str(tmp_path / "a.jsonl")))
    left.write_bytes(b"left\n")
    left.chmod(0o644)
    p = PartFile(str(tmp_path / "a.jsonl"))
    assert stat.S_IMODE(left.stat().st_mode) == 0o600 and left.read_bytes() == b""
    p.write(b"a\n")
    p.commit()
    assert stat.S_IMODE((tmp_path / "a.jsonl").stat().st_mode) == 0o600
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_bytes(b"keep me\n")
    link = Path(part_path(str(tmp_path / "b.jsonl")))
    link.symlink_to(elsewhere)
    p = PartFile(str(tmp_path / "b.jsonl"))
    p.write(b"b\n")
    p.commit()
    assert elsewhere.read_bytes() == b"keep me\n"
    assert (tmp_path / "b.jsonl").read_bytes() == b"b\n" and not (tmp_path / "b.jsonl").is_symlink()
    journal = tmp_path / "b.compactctl-journal"
    journal.symlink_to(elsewhere)
    j = Journal(str(journal), _header(1))
    j.start(CK)
    j.close()
    assert elsewhere.read_bytes() == b"keep me\n" and not journal.is_symlink() and j.load()[0] == [CK]


def test_an_aborted_part_is_gone_and_a_left_one_stays_for_resume(tmp_path):
    kept, gone = PartFile(str(tmp_path / "k.jsonl")), PartFile(str(tmp_path / "g.jsonl"))
    for p in (kept, gone):
        p.write(b"x\n")
    kept.leave()
    gone.abort()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.jsonl.compactctl-part"]
    assert (tmp_path / "k.jsonl.compactctl-part").read_bytes() == b"x\n"


CK = {"t": "ck", "n": 3, "fn": 1, "key": "d.jsonl#3", "file": "*", "off": {"out": 120, "archive": 40}}


def test_a_journal_reads_back_its_entries_in_order_and_a_torn_last_line_is_dropped(tmp_path):
    """A kill while a checkpoint was being written leaves its line cut: the entries before it are what --resume
    goes on from, and the cut line is removed from the journal, so that the next checkpoint starts a line of its own."""
    path = tmp_path / "o.compactctl-journal"
    j = Journal(str(path), _header(2))
    j.start(CK)
    j.append({"t": "done", "file": "a.jsonl"}, {**CK, "n": 5, "off": {"out": 200}})
    j.close()
    whole = path.read_bytes()
    assert whole.count(b"\n") == 4 and (path.stat().st_mode & 0o777) == 0o600
    path.write_bytes(whole + b'{"t":"ck","n":6,"fn')
    again = Journal(str(path), _header(2))
    entries, valid = again.load()
    assert entries == [CK, {"t": "done", "file": "a.jsonl"}, {**CK, "n": 5, "off": {"out": 200}}] and valid == len(whole)
    again.reopen(valid)
    again.append({"t": "end"})
    again.close()
    assert path.read_bytes() == whole + b'{"t":"end"}\n'
    assert Journal(str(path), _header(2)).load()[0][-1] == {"t": "end"}
    again.remove()
    assert not path.exists()


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"version": 2}, "journal version 2"),
        ({"command": "repair"}, "another command or other options"),
        ({"options": "y"}, "another command or other options"),
        ({"inputs": _header(1)["inputs"]}, "other inputs"),
        ({"output": "/p/"}, "another output"),
        ({"journal": "other"}, "not a compactctl journal"),
    ],
)
def test_a_journal_of_another_run_is_refused(tmp_path, change, said):
    """--resume goes on only from the journal of the same command, options, inputs (as they were) and output."""
    path = tmp_path / "o.compactctl-journal"
    Journal(str(path), {**_header(2), **change}).start(CK)
    with pytest.raises(UsageError, match=said):
        Journal(str(path), _header(2)).load()
    Journal(str(path), _header(2)).start(CK)
    assert Journal(str(path), _header(2)).load()[0] == [CK]  # the same run's


@pytest.mark.parametrize(
    "line",
    [
        b'{"t":"ck","n":"3","fn":1,"key":"k","file":"*","off":{}}',
        b'{"t":"ck","n":3,"key":"k","file":"*","off":{}}',
        b'{"t":"ck","n":3,"fn":1,"key":null,"file":"*","off":{}}',
        b'{"t":"ck","n":3,"fn":1,"key":"k","file":7,"off":{}}',
        b'{"t":"ck","n":3,"fn":1,"key":"k","file":"*","off":[]}',
        b'{"t":"ck","n":3,"fn":1,"key":"k","file":"*","off":{"out":"12"}}',
        b'{"t":"stop"}',
        b"[1, 2]",
        b"not json",
        b"",
    ],
)
def test_a_damaged_entry_before_the_last_line_is_refused(tmp_path, line):
    """Only the last line may be cut (a kill while it was written); anything else that is not a checkpoint, a file's
    end or the run's end is damage, and the run is not resumed from it."""
    path = tmp_path / "o.compactctl-journal"
    Journal(str(path), _header(1)).start(CK)
    path.write_bytes(path.read_bytes() + line + b"\n" + record_line({"t": "end"}))
    said = "corrupt journal entry" if line.startswith(b"{") else "line 3 is corrupt"  # after the header and a checkpoint
    with pytest.raises(UsageError, match=said):
        Journal(str(path), _header(1)).load()


def test_an_output_that_cannot_be_put_in_place_or_journaled_says_where_and_why(tmp_path):
    """The I/O errors a user sees (exit 4) name the file and the system's reason, not a Python exception."""
    (tmp_path / "o.jsonl").mkdir()  # a folder where the output goes
    p = PartFile(str(tmp_path / "o.jsonl"))
    p.write(b"x\n")
    with pytest.raises(IOFailure) as err:
        p.commit()
    assert str(err.value) == f"{tmp_path}/o.jsonl: Is a directory"
    j = Journal(str(tmp_path / "gone" / "o.compactctl-journal"), _header(1))
    with pytest.raises(IOFailure) as err:
        j.start(CK)
    assert str(err.value) == f"{tmp_path}/gone/o.compactctl-journal: cannot write the journal (No such file or directory)"
    (tmp_path / "p.jsonl.compactctl-part").mkdir()  # what cannot be a part file
    with pytest.raises(IOFailure) as err:
        PartFile(str(tmp_path / "p.jsonl"))
    assert str(err.value) == f"{tmp_path}/p.jsonl: cannot write here (Is a directory)"
    (tmp_path / "p.compactctl-journal").mkdir()  # what cannot be read as a journal
    with pytest.raises(IOFailure) as err:
        Journal(str(tmp_path / "p.compactctl-journal"), _header(1)).load()
    assert str(err.value) == f"{tmp_path}/p.compactctl-journal: Is a directory"


def test_a_resumed_part_that_is_now_a_link_is_refused_not_written_through(tmp_path):
    """From a review: --resume opened the part with `open(r+b)`, so a link planted where the part was had the file it
    names truncated and written, and the output renamed into place was the link."""
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_bytes(b"keep me, twelve bytes and more\n")
    Path(part_path(str(tmp_path / "o.jsonl"))).symlink_to(elsewhere)
    with pytest.raises(UsageError, match="a symbolic link, not the part the run wrote"):
        PartFile(str(tmp_path / "o.jsonl"), resume_at=8)
    assert elsewhere.read_bytes() == b"keep me, twelve bytes and more\n"
    journal = tmp_path / "o.compactctl-journal"
    journal.symlink_to(elsewhere)
    with pytest.raises(IOFailure, match="cannot reopen the journal"):
        Journal(str(journal), _header(1)).reopen(4)
    assert elsewhere.read_bytes() == b"keep me, twelve bytes and more\n"
