"""Where the work runs (runner/engines.py): serially, in threads (--jobs), in worker processes (--workers). Every
transcript read comes back once, in input order, whatever the engine; what --on-error skip writes or reports of a
transcript the work fails on; what the worker processes do when the run ends early or their parent dies."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import orjson
import pytest

from compactctl import lane
from compactctl.model import Transcript
from compactctl.runner.base import SAID_WITH, Result, _Ctx
from compactctl.runner.engines import _processes, _serial, _threads

from .conftest import ROOT, SAMPLES, cli, read_jsonl, tool_session, write_jsonl
from .rows import T

CTX = _Ctx(fmt_to=None, many=True, archive=False, on_error="fail")


def small(n: int) -> list[Transcript]:
    return [T([{"role": "user", "content": f"ask {k}"}, {"role": "assistant", "content": f"answer {k}"}], id=f"t{k}") for k in range(n)]


def items(ts: list[Transcript]):
    return ((seq, t, [], []) for seq, t in enumerate(ts))


def said(done) -> list[str]:
    """The user's text in the records a Done writes (OpenAI chat dataset records)."""
    return [m["content"] for r in map(orjson.loads, done.lines) for m in r["messages"] if m["role"] == "user"]


def test_threads_give_every_transcript_back_once_in_input_order_past_their_window():
    """--jobs 2 keeps 8 transcripts in flight; the later ones end first. All 20 come back, each with its own output."""

    def work(t: Transcript) -> Result:
        k = int(t.id[1:])
        lane.leave()
        time.sleep(0.001 * (k % 4 == 0) * 5)
        return Result(t)

    got = list(_threads(work, items(small(20)), CTX, 2))
    assert [meta[2] for meta, _ in got] == [f"t{k}" for k in range(20)]
    assert [said(done) for _, done in got] == [[f"ask {k}"] for k in range(20)]


def test_with_jobs_the_next_transcripts_are_prepared_while_the_calls_wait():
    """--jobs 2: two LLM calls in flight (the summarizer's cap), and meanwhile the next two transcripts are prepared up
    to their calls, which go out as soon as a slot is free (threads: twice --jobs)."""
    import threading

    events: list[str] = []
    gate, slots = threading.Lock(), threading.Semaphore(2)

    def work(t: Transcript) -> Result:
        with gate:
            events.append(f"start {t.id}")
        lane.leave()  # as LLMSummarizer._sent does, before it waits for a free slot
        with slots:
            time.sleep(0.3)
            with gate:
                events.append(f"answered {t.id}")
        return Result(t)

    assert [meta[2] for meta, _ in _threads(work, items(small(6)), CTX, 2)] == [f"t{k}" for k in range(6)]
    first = next(k for k, e in enumerate(events) if e.startswith("answered"))
    assert sorted(events[:first]) == [f"start t{k}" for k in range(4)], events


class Echo:
    """A job (built once in each worker process) whose work writes a transcript as it came; `slow_from`: the seq from
    which each transcript takes 20 ms; `log`: a file each transcript's id is appended to as its work starts."""

    def __init__(self, log: str | None = None, slow_from: int | None = None) -> None:
        self.log, self.slow_from = log, slow_from

    def build(self):
        log, slow_from = self.log, self.slow_from

        def work(t: Transcript) -> Result:
            if log is not None:
                with open(log, "a", encoding="utf-8") as f:
                    f.write(t.id + "\n")
            if slow_from is not None and int(t.id[1:]) >= slow_from:
                time.sleep(0.02)
            return Result(t)

        return work


def test_workers_give_every_transcript_back_once_in_input_order_across_batches():
    """600 transcripts are 3 batches (256 a batch) over 2 worker processes: each comes back once, in input order,
    with its own output, as the serial engine gives them."""
    ts = small(600)
    got = list(_processes(Echo(), items(ts), CTX, 2))
    serial = list(_serial(Echo().build(), items(ts), CTX))
    assert [meta[2] for meta, _ in got] == [f"t{k}" for k in range(600)]
    assert [d.lines for _, d in got] == [d.lines for _, d in serial]
    assert [said(d) for _, d in got[::97]] == [[f"ask {k}"] for k in range(0, 600, 97)]


class Faulty:
    """A job whose work has a bug (a RuntimeError, no CompactError) on transcript `bad`, and says a note before it."""

    def __init__(self, bad: str) -> None:
        self.bad = bad

    def build(self):
        from compactctl.runner import warn

        bad = self.bad

        def work(t: Transcript) -> Result:
            if t.id == bad:
                warn(f"{t.id}: about to fail")
                raise RuntimeError(f"a bug on {t.id}")
            return Result(t)

        return work


def _until_error(run) -> tuple[list[tuple[str, list[str]]], BaseException]:
    """(id, user text) of each transcript an engine gives back before it raises, and the error."""
    got: list[tuple[str, list[str]]] = []
    with pytest.raises(Exception) as e:
        for meta, done in run:
            got.append((meta[2], said(done)))
    return got, e.value


def test_a_bug_in_a_worker_raises_after_the_transcripts_of_its_batch_done_before_it():
    """An unexpected error (a bug, not a CompactError) on the 6th transcript of a batch: the serial engine gives the 5
    before it, then raises it. With --workers 2 the 5 were lost with the error (the batch's finished records dropped:
    nothing before it written on a streamed stdout, no report)."""
    serial = _until_error(_serial(Faulty("t5").build(), items(small(8)), CTX))
    workers = _until_error(_processes(Faulty("t5"), items(small(8)), CTX, 2))
    assert serial[0] == workers[0] == [(f"t{k}", [f"ask {k}"]) for k in range(5)]
    for _, e in (serial, workers):
        assert type(e) is RuntimeError and str(e) == "a bug on t5"
        assert getattr(e, SAID_WITH) == ["compactctl: t5: about to fail"]
    assert "in work" in str(workers[1].__cause__)  # the worker's traceback, where the bug is


class Unpicklable(Exception):
    def __init__(self, what: str, where: str) -> None:  # pickle rebuilds it from its args: one, not two
        super().__init__(f"{what} on {where}")


class FaultyOdd:
    """A job whose work raises an exception that does not come back from pickle, on t3."""

    def build(self):
        def work(t: Transcript) -> Result:
            if t.id == "t3":
                raise Unpicklable("a bug", t.id)
            return Result(t)

        return work


def test_a_bug_whose_exception_does_not_pickle_is_named_not_a_broken_pool():
    """An exception of a worker that does not unpickle (a constructor of its own) broke the result's way back: the
    run said "A process in the process pool was terminated abruptly" (BrokenProcessPool) and wrote none of the batch.
    Now the transcripts before it come back and the error names it (exit 1, as the serial engine's own)."""
    got, e = _until_error(_processes(FaultyOdd(), items(small(8)), CTX, 2))
    assert [tid for tid, _ in got] == ["t0", "t1", "t2"]
    assert type(e) is RuntimeError and str(e) == "tests.test_engines.Unpicklable: a bug on t3", e


def test_a_bug_in_the_reader_comes_after_the_transcripts_read_before_it_whatever_the_engine():
    """The reader fails with a bug (no CompactError: the read-ahead held those only) after 3 transcripts: one process
    gives the 3, then raises it. The thread and process engines, which read ahead, raised it at once: the 3 were lost
    (compact --on-error skip on stdout printed nothing)."""

    def read():
        yield from items(small(3))
        raise RuntimeError("a bug in the reader")

    for run in (_serial(Echo().build(), read(), CTX), _threads(Echo().build(), read(), CTX, 2), _processes(Echo(), read(), CTX, 2)):
        got, e = _until_error(run)
        assert [tid for tid, _ in got] == ["t0", "t1", "t2"]
        assert type(e) is RuntimeError and str(e) == "a bug in the reader"


def test_a_run_that_ends_early_stops_its_workers_at_the_next_transcript(tmp_path):
    """Ctrl-C, an error, or a reader that stops: the batches not started are cancelled and a worker leaves the batch it
    is on at its next transcript (a run with --workers ends at once, not after ~512 KB more work a worker)."""
    log = tmp_path / "started"
    run = _processes(Echo(str(log), slow_from=256), items(small(256 * 3)), CTX, 1)
    meta, _ = next(run)  # the first batch is done (fast); the worker is on the second, 20 ms a transcript
    assert meta[2] == "t0"
    t0 = time.monotonic()
    run.close()
    started = log.read_text(encoding="utf-8").split()
    assert started[:256] == [f"t{k}" for k in range(256)]
    assert len(started) < 256 + 100 and time.monotonic() - t0 < 4, len(started)  # not the 512 left (10 s)


def _children(pid: int) -> list[int]:
    kids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            if fields[0] != "Z" and int(fields[1]) == pid:
                kids.append(int(d))
    return kids


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")
def test_worker_processes_end_when_their_parent_is_killed(tmp_path):
    """kill -9 of a run with --workers: its worker processes (each in a process group of its own, so a terminal's
    Ctrl-C reaches the parent alone) notice and end within a second or so, not lingering for ever."""
    import subprocess
    import sys

    src = write_jsonl(tmp_path / "d.jsonl", [{"messages": tool_session(4, 800), "id": f"r{k}"} for k in range(40)])
    args = [sys.executable, "-m", "compactctl", "compact", str(src), "--context-window", "3000", "-q", "--workers", "2"]
    env = {**os.environ, "COMPACTCTL_SLOW_DOWN": "0.5", "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    kids: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while len(kids := _children(p.pid)) < 2 and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert p.poll() is None and len(kids) == 2, kids
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
        deadline = time.monotonic() + 5
        while any(map(_alive, kids)) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [k for k in kids if _alive(k)]
    finally:
        p.kill()
        for k in filter(_alive, kids):
            os.kill(k, signal.SIGKILL)  # this test's own workers, had they lingered
    assert left == []


def test_a_worker_whose_parent_died_while_it_started_ends_too(tmp_path):
    """The watch on the parent began after the work was built, with the parent's pid read then: a parent killed
    while its workers built their work (seconds on a busy machine: the kill test above failed under two suites at
    once) left them running for ever, the reaper taken for the parent. The parent gives its pid; the watch begins
    first. Here the worker's parent is not the pid it is given, and its build takes 30 s: it ends at once."""
    import subprocess
    import sys

    code = (
        "import time\n"
        "from compactctl.runner import engines\n"
        "class Slow:\n"
        "    def build(self):\n"
        "        time.sleep(30)\n"
        "engines._init_worker(Slow(), None, None, 1)\n"  # pid 1 is never this process's parent here
    )
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, timeout=60)
    assert r.returncode == 1 and r.stderr == b"" and time.monotonic() - t0 < 15, r.stderr  # os._exit(1), not an error


def test_a_session_that_cannot_share_the_output_names_three_others_at_most(tmp_path):
    """The refusal of a session file among several inputs on one output names the other inputs' formats, three of
    them, and says how many more there are (none: no "0 more")."""
    session = SAMPLES / "claude_code_session.jsonl"
    others = []
    for k in range(4):
        others.append(tmp_path / f"a{k}.jsonl")
        others[-1].write_bytes((SAMPLES / "anthropic_session.jsonl").read_bytes())
    three = ", ".join(f"{o} an anthropic session" for o in others[:2]) + f" and {others[2]} an anthropic session"
    r = cli("prune", str(session), *map(str, others[:3]))
    err = r.stderr.decode()
    assert r.returncode == 2 and r.stdout == b"", err
    assert f"{session} is a claude-code session and {three}: several inputs share one output" in err, err
    r = cli("prune", str(session), *map(str, others))
    err = r.stderr.decode()
    named = ", ".join(f"{o} an anthropic session" for o in others[:3])
    assert r.returncode == 2 and f"{session} is a claude-code session and {named} and 1 more: several" in err, err


def test_a_transcript_changed_with_nothing_archived_still_restores(tmp_path):
    """repair adds a result for a call that had none and removes nothing: the archive holds no original, only the map
    of where each original went, and `restore` gives back the input from it (not the repaired transcript)."""
    rows = [
        {"role": "user", "content": "read a.py"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}],
        },
        {"role": "user", "content": "never mind, thanks"},
        {"role": "assistant", "content": "ok"},
    ]
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    out, arch = tmp_path / "o.jsonl", tmp_path / "a.jsonl"
    r = cli("repair", str(src), "-o", str(out), "--archive", str(arch))
    assert r.returncode == 0, r.stderr
    assert [m["role"] for m in read_jsonl(out.read_bytes())] == ["user", "assistant", "tool", "user", "assistant"]
    back = cli("restore", str(out), "--archive", str(arch))
    assert back.returncode == 0, back.stderr
    assert read_jsonl(back.stdout) == rows


def test_a_prune_job_says_its_figures_only_when_asked():
    """PruneJob, prune's work as the workers build it: each transcript's report; its figures as a note (stderr, in
    input order) with `stats` (prune --stats) only."""
    from compactctl.phases.prune import PruneOptions
    from compactctl.runner import PruneJob

    t = T(tool_session(4, 1500), id="s1")
    out = PruneJob(PruneOptions(protect_tokens=500), "o200k_base").build()(t)
    assert out.notes == [] and out.report is not None
    assert out.report["transcript"] == "s1" and out.report["status"] == "pruned" and out.archived
    assert out.transcript is not None and len(out.transcript.messages) == len(t.messages)
    said = PruneJob(PruneOptions(protect_tokens=500), "o200k_base", stats=True).build()(t).notes
    assert [orjson.loads(n) for n in said] == [{"transcript": "s1", **out.report["prune"]}]


def test_a_session_refused_in_a_worker_leaves_what_was_printed_before_it_as_one_process_does(tmp_path):
    """compact DATASET SESSION --on-error skip on stdout (streamed): the Claude Code session cannot share the output and
    the run stops (exit 2), leaving the records printed before it. With --workers 2 the records of the session's batch
    done before it were lost with the error (nothing printed, where --workers 1 printed the 3 records)."""
    src = write_jsonl(
        tmp_path / "d.jsonl",
        [{"id": f"r{k}", "messages": [{"role": "user", "content": f"q{k}"}, {"role": "assistant", "content": f"a{k}"}]} for k in range(3)],
    )
    session = SAMPLES / "claude_code_session.jsonl"
    got = {}
    for workers in ("1", "2"):
        report = tmp_path / f"r{workers}.jsonl"
        r = cli("compact", str(src), str(session), "--on-error", "skip", "--workers", workers, "-q", "--report", str(report))
        assert r.returncode == 2 and f"{session} is a claude-code session and {src} an openai dataset" in r.stderr.decode(), r.stderr
        got[workers] = (r.stdout, [rep["transcript"] for rep in read_jsonl(report.read_bytes())])
    assert [rec["id"] for rec in read_jsonl(got["1"][0])] == ["r0", "r1", "r2"]
    assert got["2"] == got["1"]


def test_an_error_of_a_transcript_comes_before_a_bad_line_read_after_it_whatever_the_engine(tmp_path):
    """A record that cannot fit (exit 5), then a truncated line (exit 3): the run stops on the record, as one process
    reads and works in order. With --jobs 2 the bad line, read ahead while the record was worked on, was the error
    (exit 3, "cf.jsonl:3: truncated JSON"); --workers 2 already gave the record's."""
    big = tool_session(4, 2000)
    big[-1] = {"role": "user", "content": "Please keep all of this in mind: " + "word " * 9000}
    src = write_jsonl(tmp_path / "cf.jsonl", [{"messages": tool_session(2, 200), "id": "ok0"}, {"messages": big, "id": "too-big"}])
    with open(src, "ab") as f:
        f.write(b'{"messages": [{"role": "user", "content": "truncated\n')
    said = {}
    for engine in (["--jobs", "1"], ["--jobs", "2", "--workers", "1"], ["--workers", "2"]):
        r = cli("compact", str(src), "--context-window", "6000", "--summary-min", "500", "-q", *engine)
        said[" ".join(engine)] = (r.returncode, r.stdout, r.stderr.decode())
    assert said["--jobs 1"][0] == 5 and "cf.jsonl#2: cannot fit the target" in said["--jobs 1"][2], said["--jobs 1"]
    assert said["--jobs 2 --workers 1"] == said["--jobs 1"] and said["--workers 2"] == said["--jobs 1"]


def test_a_runs_count_of_changed_transcripts_counts_only_those_the_work_changed(tmp_path):
    """RunStats.changed (runner.run's counts, journaled for --resume): a record written as read (the passthrough of
    `keeps`), one the work returns as it came, and lines a work writes itself (plan --json, repair --check) are not
    changed; a transcript the work replaced is."""
    from compactctl.runner import IOOptions, run

    rows = [
        {"id": f"r{k}", "messages": [{"role": "user", "content": f"q{k}"}, {"role": "assistant", "content": f"a{k}"}]} for k in range(3)
    ]
    src = write_jsonl(tmp_path / "d.jsonl", rows)

    def count(work, keeps=None) -> int:
        return run([str(src)], IOOptions(output=str(tmp_path / "o.jsonl"), quiet=True), work, keeps=keeps).changed

    assert count(Result, keeps=lambda fmt, obj: True) == 0
    assert count(Result) == 0
    assert count(lambda t: Result(None, {"transcript": t.id}, lines=[b'{"ok": true}'])) == 0
    assert count(lambda t: Result(t.evolve(messages=t.messages[:1]) if t.id.endswith("#2") else t)) == 1


def test_the_archive_keeps_anchors_only_for_a_source_message_read_as_several(tmp_path):
    """An Anthropic session that repair changes (a result added for a call that had none): with each source message
    read as one, its archive's map holds no `anchors` (one a message, for nothing); with a user message of a tool
    result and text (read as two), it does. Both restore."""
    use = {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a.py"}}
    alone = [
        {"role": "user", "content": "read a.py"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": "never mind, thanks"},
        {"role": "assistant", "content": "ok"},
    ]
    shared = [
        {"role": "user", "content": "read a.py"},
        {"role": "assistant", "content": [use]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "x = 1"}, {"type": "text", "text": "and b.py?"}],
        },
        {"role": "assistant", "content": [{**use, "id": "c2", "input": {"path": "b.py"}}]},
        {"role": "user", "content": "never mind, thanks"},
        {"role": "assistant", "content": "ok"},
    ]
    for rows, anchored in ((alone, False), (shared, True)):
        src = write_jsonl(tmp_path / "s.jsonl", rows)
        out, arch = tmp_path / "o.jsonl", tmp_path / "a.jsonl"
        r = cli("repair", str(src), "--from", "anthropic", "-o", str(out), "--archive", str(arch))
        assert r.returncode == 0, r.stderr
        [m] = [rec for rec in read_jsonl(arch.read_bytes()) if rec.get("type") == "map"]
        assert ("anchors" in m) is anchored, m
        back = cli("restore", str(out), "--archive", str(arch), "-q")
        assert back.returncode == 0 and read_jsonl(back.stdout) == rows, back.stderr
