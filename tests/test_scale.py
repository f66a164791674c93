"""Datasets at scale: the record API, --workers, resumable runs (SIGKILL), output collisions."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import orjson
import pytest

import compactctl
from compactctl.errors import CannotFit

from .conftest import ROOT, SAMPLES, cli, own_device, read_jsonl, tool_session, write_jsonl

OPTS = ["--context-window", "6000", "--no-summaries", "--summary-min", "500", "--on-error", "skip"]
LIB = {"context_window": 6000, "summaries": False, "summary_min": 500, "archive": True}  # as the CLI's --archive: references


def _cannot_fit() -> dict:
    msgs = tool_session(4, 2000)
    msgs[-1] = {"role": "user", "content": "Please keep all of this in mind: " + "word " * 9000}
    return {"messages": msgs, "id": "too-big"}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """39 generated sessions (compacted and not-needed), a record that cannot fit, a bad line."""
    d = tmp_path_factory.mktemp("data")
    gen = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "gen.py"), "dataset", "--seed", "3", "--mb", "0.6", "--turns", "8", "--scale", "0.3"],
        capture_output=True,
        check=True,
    ).stdout
    lines = gen.split(b"\n")[:-1]
    lines.insert(10, orjson.dumps(_cannot_fit()))
    lines.insert(20, b'{"messages": [{"role": "user", "content": "truncated')
    path = d / "d.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    r = cli("compact", *args, env=env)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    return r


def _outputs(base: Path) -> dict[str, bytes]:
    return {k: (base.parent / f"{base.name}.{k}").read_bytes() for k in ("out", "archive", "report", "rejects")}


def _args(src: Path, base: Path) -> list[str]:
    return [
        str(src),
        *OPTS,
        "-o",
        f"{base}.out",
        "--archive",
        f"{base}.archive",
        "--report",
        f"{base}.report",
        "--rejects",
        f"{base}.rejects",
    ]


@pytest.fixture(scope="module")
def reference(dataset, tmp_path_factory) -> dict[str, bytes]:
    base = tmp_path_factory.mktemp("ref") / "r"
    _run(*_args(dataset, base), "--workers", "1")
    out = _outputs(base)
    statuses = {r["status"] for r in read_jsonl(out["report"])}
    assert {"compacted", "not-needed", "cannot-fit"} <= statuses and out["rejects"].count(b"\n") == 1
    return out


# -- the record API ----------------------------------------------------------------------------


def test_record_api_matches_the_cli_and_serializes(dataset, reference):
    lines = [ln for ln in dataset.read_bytes().split(b"\n") if ln.strip()]
    c = compactctl.Compactor(compactctl.Options(**LIB))
    got = []
    for ln in lines:
        res = c.compact(ln)
        json.dumps(asdict(res))  # plain JSON types only
        if res.status == "error":
            assert res.record is None and "truncated" in res.error
            continue
        got.append(res.record)
        rec, rep = compactctl.compact_record(orjson.loads(ln), **LIB)  # the one-shot function
        assert rec == res.record and rep["status"] == res.status
        json.dumps(rep)
    assert got == read_jsonl(reference["out"])
    statuses = [r["status"] for r in read_jsonl(reference["report"])]
    assert statuses.count("cannot-fit") == 1


def test_compact_result_statuses_never_raise():
    c = compactctl.Compactor(context_window=6000, summary_min=500, summaries=False, archive=True)
    res = c.compact(_cannot_fit())
    assert res.status == "cannot-fit" and res.record is not None and compactctl.check(compactctl.to_transcript(res.record)) == []
    ok = c.compact({"messages": tool_session(40, 3000)})
    assert ok.status == "compacted" and ok.archived and all("sha256" in a for a in ok.archived)
    json.loads(json.dumps(asdict(ok)))
    for bad in ({"foo": 1}, {"messages": [{"content": "no role"}]}, b"not json", [1, 2]):
        r = c.compact(bad)
        assert r.status == "error" and r.record is None and r.error
    with pytest.raises(CannotFit):  # the transcript-level call still raises when asked to
        c.compact_transcript(compactctl.to_transcript(_cannot_fit()), on_cannot_fit="raise")


def test_each_phase_has_a_record_function():
    rec = {"messages": tool_session(30, 3000), "id": "x"}
    pruned, rep = compactctl.prune_record(rec, context_window=6000)
    assert rep["status"] == "pruned" and pruned["id"] == "x" and len(orjson.dumps(pruned)) < len(orjson.dumps(rec))
    planned, rep = compactctl.plan_record(rec, context_window=6000, summary_min=500)
    assert rep["status"] == "planned" and rep["plan"]["needs_compaction"]
    summarized, rep = compactctl.summarize_record(rec, context_window=6000, summary_min=500)
    assert rep["status"] == "compacted"
    repaired, rep = compactctl.repair_record(
        {"messages": [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "?"}]}
    )
    assert rep["status"] == "repaired" and rep["repair"]["orphan_results_removed"] == 1 and len(repaired["messages"]) == 1
    with pytest.raises(TypeError):
        compactctl.compact_record(rec, no_such_option=1)


def test_from_and_to_messages_round_trip():
    msgs = tool_session(3)
    t = compactctl.from_messages(msgs, id="s1")
    assert compactctl.to_messages(t) == msgs
    assert compactctl.to_record(t) == {"id": "s1", "messages": msgs}
    out, _ = compactctl.compact(t, compactctl.make_counter("gpt-4o"), compactctl.OfflineSummarizer())  # the old API still works
    assert compactctl.check(out) == [] and len(compactctl.to_messages(out)) == len(msgs)  # small: pruned, not summarized


def test_other_formats_are_records_too():
    rec = orjson.loads((SAMPLES / "dataset.jsonl").read_bytes().split(b"\n")[0])
    out, rep = compactctl.compact_record(rec, context_window=8000, to="anthropic")
    assert rep["status"] in ("compacted", "not-needed") and "messages" in out
    assert all(m["role"] in ("user", "assistant") for m in out["messages"])


# -- --workers ---------------------------------------------------------------------------------


def test_workers_output_is_byte_identical(dataset, reference, tmp_path):
    base = tmp_path / "w2"
    r = _run(*_args(dataset, base), "--workers", "2", "--json")
    assert _outputs(base) == reference
    reports = [orjson.loads(ln) for ln in r.stderr.split(b"\n") if ln.startswith(b"{")]
    assert [x["transcript"] for x in reports] == [x["transcript"] for x in read_jsonl(reference["report"])]  # cannot-fit ones too


def test_workers_on_session_files_and_directories(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    for name in ("long_session.jsonl", "claude_code_session.jsonl", "codex_rollout.jsonl", "parallel_calls.jsonl"):
        (src / name).write_bytes((SAMPLES / name).read_bytes())
    outs = {}
    for w in ("1", "2"):
        _run(str(src), "--context-window", "8000", "-o", f"{tmp_path}/o{w}/", "--workers", w, "--archive", str(tmp_path / f"a{w}"))
        outs[w] = {p.name: p.read_bytes() for p in sorted((tmp_path / f"o{w}").iterdir())}
        outs[w]["archive"] = (tmp_path / f"a{w}").read_bytes()
    assert outs["1"] == outs["2"] and len(outs["1"]) == 5


def test_prune_workers_give_the_same_bytes(dataset, tmp_path):
    """prune --workers 2 (a dataset): output, archive, rejects and the --stats lines are those of --workers 1, in input order."""
    outs = {}
    for w in ("1", "2"):
        b = tmp_path / f"p{w}"
        r = cli(
            "prune", str(dataset), "--context-window", "6000", "--on-error", "skip", "--stats", "-o", f"{b}.out",
            "--archive", f"{b}.archive", "--rejects", f"{b}.rejects", "--workers", w,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr.decode()[-2000:]
        stats = [orjson.loads(ln) for ln in r.stderr.split(b"\n") if ln.startswith(b"{")]
        outs[w] = {k: (tmp_path / f"p{w}.{k}").read_bytes() for k in ("out", "archive", "rejects")} | {"stats": stats}
    assert outs["1"] == outs["2"]
    assert len(outs["1"]["stats"]) == 40 and outs["1"]["rejects"] and b"[ref " in outs["1"]["out"]
    assert cli("prune", str(dataset), "--workers", "0").returncode == 2


def test_workers_stop_on_the_first_error_and_write_nothing(dataset, tmp_path):
    out = tmp_path / "o.jsonl"
    r = cli("compact", str(dataset), "--context-window", "6000", "--no-summaries", "--summary-min", "500", "-o", str(out), "--workers", "2")
    assert r.returncode == 5 and b"cannot fit" in r.stderr  # the record that cannot fit, with --on-error fail
    assert not out.exists() and not list(tmp_path.iterdir())


# -- resume ------------------------------------------------------------------------------------


def _killed_run(args: list[str], journal: Path, after: int, env: dict) -> None:
    """Start a run, SIGKILL it once its journal holds `after` checkpoints."""
    e = {**os.environ, **env}
    e.pop("OPENAI_API_KEY", None)
    p = subprocess.Popen(
        [sys.executable, "-m", "compactctl", "compact", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=e,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            if journal.exists() and journal.read_bytes().count(b'"t":"ck"') >= after:
                break
            assert p.poll() is None, "the run finished before it could be killed"
            time.sleep(0.005)
        else:
            raise AssertionError("no checkpoint")
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


SLOW = {"COMPACTCTL_JOURNAL_EVERY": "0", "COMPACTCTL_SLOW_DOWN": "0.05"}


@pytest.mark.parametrize("points", [[1], [5, 17], [35]])
def test_resume_after_sigkill_is_byte_identical(dataset, reference, tmp_path, points):
    base = tmp_path / "k"
    args = _args(dataset, base)
    journal = Path(f"{base}.out.compactctl-journal")
    for k, after in enumerate(points):
        _killed_run([*args, *(["--resume"] if k else []), "--workers", str(1 + k % 2)], journal, after, SLOW)
        assert journal.exists() and not Path(f"{base}.out").exists()  # nothing final yet: only parts and the journal
    _run(*args, "--resume", "--workers", "2")
    assert _outputs(base) == reference
    assert not journal.exists() and not list(tmp_path.glob("*.compactctl-part"))


def test_resume_a_directory_output_per_file(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    for k in range(3):
        (src / f"s{k}.jsonl").write_bytes(
            subprocess.run(
                [
                    sys.executable,
                    str(ROOT / "bench" / "gen.py"),
                    "dataset",
                    "--seed",
                    str(k),
                    "--mb",
                    "0.15",
                    "--turns",
                    "8",
                    "--scale",
                    "0.3",
                ],
                capture_output=True,
                check=True,
            ).stdout
        )
    opts = ["--context-window", "6000", "--no-summaries", "--summary-min", "500", "--report", str(tmp_path / "rep")]
    _run(str(src), *opts, "-o", f"{tmp_path}/ref/", "--workers", "1")
    ref = {p.name: p.read_bytes() for p in (tmp_path / "ref").iterdir()}
    ref_report = (tmp_path / "rep").read_bytes()
    n0 = len(read_jsonl(ref["s0.jsonl"]))
    out = tmp_path / "out"
    _killed_run([str(src), *opts, "-o", f"{out}/"], out / ".compactctl-journal", n0 + 3, SLOW)  # in the second file
    # the first file is done but not yet in place (every file is renamed when the run ends); --resume puts it there
    assert (out / "s0.jsonl.compactctl-part").exists() and not (out / "s0.jsonl").exists()
    assert not (out / "s1.jsonl").exists() and (out / "s1.jsonl.compactctl-part").exists()
    _run(str(src), *opts, "-o", f"{out}/", "--resume")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == ref
    assert (tmp_path / "rep").read_bytes() == ref_report
    # A resumed run that then fails leaves none of its files either (the finished ones were put in place at once)
    out2 = tmp_path / "out2"
    _killed_run([str(src), *opts, "-o", f"{out2}/"], out2 / ".compactctl-journal", n0 + 3, SLOW)
    (out2 / "s2.jsonl").mkdir()  # the last file cannot be put in place: an I/O error at the end
    r = cli("compact", str(src), *opts, "-o", f"{out2}/", "--resume")
    assert r.returncode == 4, r.stderr
    assert not (out2 / "s0.jsonl").exists() and not (out2 / "s1.jsonl").exists()


def test_foreign_or_corrupt_journal_is_refused(dataset, tmp_path):
    base = tmp_path / "j"
    args = _args(dataset, base)
    journal = Path(f"{base}.out.compactctl-journal")
    _killed_run(args, journal, 3, SLOW)
    other = cli("compact", *[a if a != "6000" else "7000" for a in args], "--resume")
    assert other.returncode == 2 and b"other options" in other.stderr
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(dataset.read_bytes())
    foreign = cli("compact", *[str(copy) if a == str(dataset) else a for a in args], "--resume")
    assert foreign.returncode == 2 and b"other inputs" in foreign.stderr
    good = journal.read_bytes()
    journal.write_bytes(good.replace(b'"t":"ck"', b'"t":garbage', 1))
    bad = cli("compact", *args, "--resume")
    assert bad.returncode == 2 and b"corrupt" in bad.stderr
    journal.write_bytes(good.replace(b'"n":', b'"x":', 1))  # valid JSON, not a checkpoint
    bad = cli("compact", *args, "--resume")
    assert bad.returncode == 2 and b"corrupt" in bad.stderr
    journal.write_bytes(b"\x00\x01 not a journal\n")
    assert cli("compact", *args, "--resume").returncode == 2
    journal.write_bytes(good + b'{"t":"ck","n":')  # a torn last line (killed while writing it) is fine
    _run(*args, "--resume")
    assert not journal.exists()
    assert cli("compact", str(dataset), *OPTS, "--resume").returncode == 2  # stdout cannot be resumed


def test_resume_after_a_kill_before_the_journal_header_starts_over(dataset, reference, tmp_path):
    """A kill between creating the journal and writing its header (nothing else is written yet) left an empty
    journal that --resume refused as "not a compactctl journal"; it starts over. A beginning of another run's
    header is still refused."""
    base = tmp_path / "h"
    args = _args(dataset, base)
    journal = Path(f"{base}.out.compactctl-journal")
    _killed_run(args, journal, 1, SLOW)
    header = journal.read_bytes().split(b"\n")[0]
    for left in (b"", header[:40]):
        journal.write_bytes(left)
        r = _run(*args, "--resume")
        assert b"starting over" not in r.stderr and _outputs(base) == reference and not journal.exists()
    journal.write_bytes(header.replace(b'"version":1', b'"version":7')[:60])
    assert cli("compact", *args, "--resume").returncode == 2


def test_without_resume_an_old_journal_is_replaced(dataset, reference, tmp_path):
    base = tmp_path / "s"
    args = _args(dataset, base)
    _killed_run(args, Path(f"{base}.out.compactctl-journal"), 2, SLOW)
    r = _run(*args)
    assert b"starting over" in r.stderr and _outputs(base) == reference


# -- outputs that would overwrite an input or each other ---------------------------------------


def test_colliding_outputs_are_refused_before_writing(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for d in ("a", "b"):
        (tmp_path / d / "s.jsonl").write_bytes((SAMPLES / "long_session.jsonl").read_bytes())
    a, b = str(tmp_path / "a" / "s.jsonl"), str(tmp_path / "b" / "s.jsonl")
    before = sorted(p for p in tmp_path.rglob("*"))
    cases = [
        ([a, b, "-o", f"{tmp_path}/out/"], b"would both be written"),
        ([a, "-o", str(tmp_path / "o.jsonl"), "--on-error", "skip", "--rejects", a], b"is also an input"),
        ([a, "-o", str(tmp_path / "o.jsonl"), "--report", b, b], b"is also an input"),
        ([a, "-o", str(tmp_path / "o.jsonl"), "--archive", str(tmp_path / "o.jsonl")], b"same file"),
        ([a, "-o", a], b"is also an input"),
        ([a, "-o", f"{tmp_path}/a/"], b"is also an input"),
        ([a, "--report", str(tmp_path / "r"), "--archive", str(tmp_path / "a" / ".." / "r")], b"same file"),
    ]
    for args, msg in cases:
        r = cli("compact", *args, "--context-window", "8000")
        assert r.returncode == 2 and msg in r.stderr, (args, r.stderr)
    assert sorted(p for p in tmp_path.rglob("*")) == before
    null = own_device(tmp_path, "/dev/null")  # (as root, a node of its own: a fault that renames over it replaces that)
    assert cli("compact", a, "--context-window", "8000", "--archive", null, "--report", null).returncode == 0


def test_side_files_on_stdout_beside_the_transcripts_are_refused(tmp_path):
    """`compact d.jsonl --report -` wrote the report lines between the compacted records on stdout (exit 0): the next
    stage of a pipe failed on them ("cannot tell the transcript format"). Two outputs on stdout are a usage error;
    one is fine (`-o FILE --report -`)."""
    src = write_jsonl(tmp_path / "d.jsonl", [{"messages": tool_session(2)}] * 2)
    for args in (
        ["--report", "-"],
        ["--archive", "-"],
        ["-o", "-", "--report", "/dev/stdout"],
        ["-o", str(tmp_path / "o"), "--report", "-", "--on-error", "skip", "--rejects", "-"],
    ):
        r = cli("compact", str(src), "-q", *args)
        assert r.returncode == 2 and b"cannot share standard output" in r.stderr and r.stdout == b"", (args, r.stderr)
    r = cli("compact", str(src), "-q", "-o", str(tmp_path / "o"), "--report", "-")
    assert r.returncode == 0 and [x["status"] for x in read_jsonl(r.stdout)] == ["not-needed"] * 2


@pytest.mark.parametrize("out", ["dir", "file"])
def test_a_device_as_a_side_file_stays_a_device(tmp_path, out):
    """With -o DIR/ or -o FILE (a journaled run) the archive, report and rejects were part files renamed into place
    at the end: renamed over /dev/null, they made it a regular file for the whole machine (a review's run did)."""
    null = tmp_path / "null"
    try:
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a /dev/null of our own
    except (PermissionError, OSError):
        pytest.skip("mknod needs root")
    src = tmp_path / "s.jsonl"
    src.write_bytes((SAMPLES / "long_session.jsonl").read_bytes())
    dest = f"{tmp_path}/out/" if out == "dir" else str(tmp_path / "o.jsonl")
    for side in ("--archive", "--report", "--rejects"):
        r = cli("compact", str(src), "-o", dest, side, str(null), "--context-window", "8000", "-q", "--on-error", "skip")
        assert r.returncode == 0 and stat.S_ISCHR(os.stat(null).st_mode), (side, r.stderr)


@pytest.mark.parametrize("out", ["dir", "file"])
def test_an_open_descriptor_by_name_is_written_where_it_points(tmp_path, out):
    """`-o /dev/stdout > out.jsonl`, `--report /dev/stderr 2>>log`: the name is a link to the shell's file, a regular
    one, so the output was a part file beside the link, renamed over it: as root that replaced /dev/stdout with a
    regular file for the whole machine (a review's run did), else exit 4. Through /dev/fd/N (where no part file can be
    made, so the test cannot harm the machine): written where the descriptor points, after what was already there."""
    import subprocess
    import sys

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd")
    src = tmp_path / "s.jsonl"
    src.write_bytes((SAMPLES / "long_session.jsonl").read_bytes())
    args = [sys.executable, "-m", "compactctl", "compact", str(src), "--context-window", "8000", "-q"]
    want = cli("compact", str(src), "--context-window", "8000", "-q", "--report", str(tmp_path / "r.jsonl"))
    stdout, log = tmp_path / "stdout", tmp_path / "log"
    log.write_bytes(b"before\n")
    dest = ["-o", f"{tmp_path}/o/"] if out == "dir" else ["-o", "/dev/fd/1"]
    with stdout.open("wb") as o, log.open("ab") as e:
        p = subprocess.run([*args, *dest, "--report", "/dev/fd/2"], stdout=o, stderr=e, timeout=300)
    assert p.returncode == 0, log.read_bytes()
    if out == "file":
        assert stdout.read_bytes() == want.stdout
    assert log.read_bytes() == b"before\n" + (tmp_path / "r.jsonl").read_bytes()


def test_resume_keeps_one_format_per_output(tmp_path):
    """The format of what the killed run wrote is in its journal: a resumed run still refuses an input of another
    format (it wrote an Anthropic record, then a ShareGPT one, into a file that did not read back)."""
    from .test_dataset_faults import SHAREGPT, _anthropic

    first = write_jsonl(tmp_path / "a.jsonl", [_anthropic(tool_session(2))] * 6)
    second = write_jsonl(tmp_path / "b.jsonl", [SHAREGPT])
    out = tmp_path / "out.jsonl"
    args = [str(first), str(second), "-o", str(out), "--workers", "1"]
    # killed once every record of a.jsonl is written (each is followed by a 0.3 s pause): the resumed run starts at b.jsonl
    _killed_run(args, Path(f"{out}.compactctl-journal"), 6, {**SLOW, "COMPACTCTL_SLOW_DOWN": "0.3"})
    r = cli("compact", *args, "--resume")
    assert r.returncode == 2, r.stderr
    assert b"b.jsonl is written as sharegpt, and" in r.stderr and b"a.jsonl before it as anthropic" in r.stderr
    assert not out.exists()


def test_a_journal_over_many_files_grows_with_their_number_not_its_square(tmp_path):
    """Each checkpoint repeated the whole map of input files to their first archive seq: 7.8 MB of journal after
    327 of 600 files (a review). It holds the files begun since the checkpoint before; --resume merges them, and
    the archive's end record (sources, first_seq) comes out as an uninterrupted run's."""
    src = tmp_path / "in"
    src.mkdir()
    for k in range(40):
        write_jsonl(src / f"s{k:02}.jsonl", tool_session(3, 400))
    opts = ["--context-window", "1500", "--summary-min", "300"]
    _run(str(src), *opts, "-o", f"{tmp_path}/ref/", "--archive", str(tmp_path / "ref.archive.jsonl"), "--workers", "1")
    out, arch = tmp_path / "out", tmp_path / "out.archive.jsonl"
    args = [str(src), *opts, "-o", f"{out}/", "--archive", str(arch)]
    journal = out / ".compactctl-journal"
    _killed_run(args, journal, 25, SLOW)
    checkpoints = [e for e in read_jsonl(journal.read_bytes().rsplit(b"\n", 1)[0] + b"\n") if e.get("t") == "ck"]
    begun = [name for e in checkpoints for name in e["fs"]]
    assert len(begun) == len(set(begun)) and len(begun) >= 10  # each file once
    _run(*args, "--resume")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == {p.name: p.read_bytes() for p in (tmp_path / "ref").iterdir()}
    assert arch.read_bytes() == (tmp_path / "ref.archive.jsonl").read_bytes()  # its end record's first_seq too
