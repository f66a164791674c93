"""The CPU lane of a run in threads (--jobs): one transcript prepared at a time, first come first served; a thread
leaves the lane when its LLM call goes out, so that the first calls start before the later transcripts are prepared."""

from __future__ import annotations

import threading
import time

from compactctl import api, lane
from compactctl.formats.openai import message_from_dict
from compactctl.model import Transcript
from compactctl.runner.base import Result, _Ctx
from compactctl.runner.engines import _threads
from compactctl.summarizers.llm import LLMSummarizer
from compactctl.tokens import make_counter

from .conftest import tool_session
from .llm_server import Server

COUNTER = make_counter("gpt-4o")
BUDGET = api.Budget(context_window=3000, tail_tokens=300, summary_min=300, summary_max=800)


def transcripts(n: int) -> list[Transcript]:
    rows = tool_session(30, 4000)
    return [Transcript([message_from_dict(d, f"t{k}", i + 1, i) for i, d in enumerate(rows)], id=f"t{k}") for k in range(n)]


def items(ts: list[Transcript]):
    return ((seq, t, [], []) for seq, t in enumerate(ts))


CTX = _Ctx(fmt_to=None, many=True, archive=False, on_error="fail")


def test_the_lane_serves_its_threads_one_at_a_time_in_the_order_they_came():
    cpu = lane.Lane()
    events: list[tuple[str, int]] = []
    inside = 0
    most = 0
    gate = threading.Lock()

    def one(k: int, started: threading.Event) -> None:
        nonlocal inside, most
        started.set()
        with cpu.held():
            with gate:
                inside += 1
                most = max(most, inside)
                events.append(("in", k))
            time.sleep(0.01)  # other threads run meanwhile: without the lane they would be in here too
            with gate:
                inside -= 1
            if k % 2:
                lane.leave()  # left early (a call going out): the next goes in; the block's end leaves nothing more
                time.sleep(0.01)

    threads = []
    for k in range(6):
        started = threading.Event()
        th = threading.Thread(target=one, args=(k, started))
        th.start()
        started.wait()
        time.sleep(0.002)  # taken in this order (a ticket is taken at once: the lane is busy for a while)
        threads.append(th)
    for th in threads:
        th.join(10)
    assert most == 1
    assert [k for _, k in events] == list(range(6))
    lane.leave()  # outside any lane: nothing to leave


def test_with_jobs_the_first_call_goes_out_before_the_later_transcripts_are_prepared():
    """Under the GIL, 2 x jobs threads preparing at once shared the CPU: the first call went out only when nearly all
    of them were prepared. In the lane, the first transcript's call goes out before the third one's preparation starts
    (the threads all start at once: without the lane, the four preparations start before any call), and the second
    call goes out while the first waits."""
    events: list[str] = []
    gate = threading.Lock()

    def log(what: str) -> None:
        with gate:
            events.append(what)

    with Server(latency=0.5) as server:
        s = LLMSummarizer("latency", server.url, "k", None, timeout=10, retries=0, cache=None, max_in_flight=2)
        s.client  # noqa: B018 - made here: the openai import does not count in the timeline
        sent = s._call

        def call(*a):
            log("call")
            try:
                return sent(*a)
            finally:
                log("answered")

        s._call = call

        def work(t: Transcript) -> Result:
            log(f"start {t.id}")
            out, rep = api.compact(t, COUNTER, s, api.CompactOptions(BUDGET))
            return Result(out, rep)

        done = list(_threads(work, items(transcripts(6)), CTX, 2))
    assert len(done) == 6 and all(d.report is not None and d.report["summarizer"] == "llm:latency" for _, d in done)
    assert events.count("call") == 6
    first_call = events.index("call")
    assert first_call < 3 and events[:first_call] == [e for e in events[:first_call] if e.startswith("start")], events
    # the lane was left as the call went out: the next transcript was prepared, and its call made, while it waited
    assert events.index("call", first_call + 1) < events.index("answered"), events


def test_what_a_transcripts_work_warns_is_said_with_its_notes_in_input_order(capsys):
    """From a review: a summarizer's warning (an LLM summary that failed) was printed from its --jobs thread at once,
    in the order the calls ended; it joins the transcript's notes, which the parent prints in input order."""
    from compactctl.runner.base import warn

    def work(t: Transcript) -> Result:
        k = int(t.id[1:])
        lane.leave()
        time.sleep(0.05 * (5 - k))  # the later transcripts end first
        warn(f"{t.id}: LLM summary failed")
        return Result(t)

    capsys.readouterr()
    said = [note for _meta, done in _threads(work, items(transcripts(5)), CTX, 4) for note in done.notes]
    assert capsys.readouterr().err == ""  # nothing said from the threads
    assert said == [f"compactctl: t{k}: LLM summary failed" for k in range(5)]


def test_a_fatal_error_in_a_thread_starts_no_more_work_and_ends_the_calls_in_flight():
    """From a review: an error in one --jobs thread (the endpoint refused the key) ended the run only once every queued
    transcript had been prepared and its LLM call answered (8 calls over 20 s at 5 s each, their output thrown away).
    Now the queued ones are not started and the calls in flight give up (lane.stopped, as an LLM call's wait reads
    it); llm.CANCEL, process-wide, is not touched."""
    import pytest

    from compactctl.summarizers import llm

    started: list[str] = []
    gave_up: list[str] = []

    def work(t: Transcript) -> Result:
        started.append(t.id)
        lane.leave()
        if t.id == "t0":
            time.sleep(0.2)  # the others are waiting on their calls by now
            raise RuntimeError("the endpoint refused the credentials")
        end = time.monotonic() + 10
        while time.monotonic() < end:  # a call in flight, as LLMSummarizer._call waits on one
            if lane.stopped():
                gave_up.append(t.id)
                raise llm.Cancelled("interrupted")
            time.sleep(0.02)
        return Result(t)

    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="refused"):
        for _ in _threads(work, items(transcripts(8)), CTX, 2):
            pass
    assert time.monotonic() - t0 < 5  # not the 10 s the calls in flight would have waited
    # the 4 threads' transcripts, and one more that the failed one's thread took before the error reached the reader
    assert len(started) <= 5 and sorted(gave_up) == sorted(set(started) - {"t0"}), (started, gave_up)
    assert not llm.CANCEL.is_set()


def test_what_a_transcripts_work_warned_before_an_error_is_not_lost():
    """From a review: once warnings joined a transcript's notes, one said before the work failed (an LLM summary that
    failed, then an error with --on-error fail) was lost with the Done that never came; the error carries it."""
    import pytest

    from compactctl.runner.base import SAID_WITH, warn

    def work(t: Transcript) -> Result:
        warn(f"{t.id}: LLM summary failed")
        raise RuntimeError("the endpoint refused the credentials")

    with pytest.raises(RuntimeError) as e:
        list(_threads(work, items(transcripts(1)), CTX, 2))
    assert getattr(e.value, SAID_WITH) == ["compactctl: t0: LLM summary failed"]


def test_a_run_that_ends_early_leaves_another_run_in_the_process_alone():
    """A second review: the early end set the process-wide llm.CANCEL, so a library caller's other run in the same
    process had its LLM calls cancelled, and a Ctrl-C during that end was cleared with it. Each run has its own stop
    event, which its threads read (lane.stopped); llm.CANCEL is left to Ctrl-C."""
    from concurrent.futures import ThreadPoolExecutor

    from compactctl.runner.engines import _abandon
    from compactctl.summarizers import llm

    stop, other = threading.Event(), threading.Event()
    waiting = threading.Barrier(3)
    seen: dict[str, bool] = {}

    def call(run: str, event: threading.Event) -> None:  # an LLM call in flight, as LLMSummarizer._call waits on one
        with lane.working_for(event):
            waiting.wait(5)
            end = time.monotonic() + 1
            while not lane.stopped() and time.monotonic() < end:
                time.sleep(0.01)
            seen[run] = lane.stopped() or llm.CANCEL.is_set()

    mine, theirs = ThreadPoolExecutor(1), ThreadPoolExecutor(1)
    mine.submit(call, "this run", stop)
    f = theirs.submit(call, "another run", other)
    waiting.wait(5)
    _abandon(mine, stop)
    f.result(5)
    theirs.shutdown()
    assert seen == {"this run": True, "another run": False}
    assert not llm.CANCEL.is_set() and not lane.stopped()


class _WarnsThenFails:
    """A job (runner.engines._processes builds its work in each worker) whose work warns, and fails on t2 (DataError)."""

    def build(self):
        from compactctl.errors import DataError
        from compactctl.runner.base import warn

        def work(t: Transcript) -> Result:
            warn(f"{t.id}: something said before the error")
            if t.id == "t2":
                raise DataError(t.id, 1, "no message to send")
            return Result(t)

        return work


def test_what_a_worker_process_warned_before_an_error_is_not_lost():
    """A second review: under --workers, an error the work raises comes back as (code, text), without the notes said
    before it; they come back with it now. And an error object raised again says its own transcript's notes once."""
    import pytest

    from compactctl.errors import CompactError
    from compactctl.runner.base import SAID_WITH
    from compactctl.runner.engines import _processes

    got: list[tuple[str, list[str]]] = []
    with pytest.raises(CompactError) as e:
        for meta, done in _processes(_WarnsThenFails(), items(transcripts(3)), CTX, 2):
            got.append((meta[2], done.notes))
    assert getattr(e.value, SAID_WITH) == ["compactctl: t2: something said before the error"]
    # the transcripts of its batch done before it come first, with their notes, as a run in one process gives them
    assert got == [(f"t{k}", [f"compactctl: t{k}: something said before the error"]) for k in range(2)]

    again = RuntimeError("the same object, raised by two runs")

    def work(t: Transcript) -> Result:
        from compactctl.runner.base import warn

        warn(f"{t.id}: LLM summary failed")
        raise again

    for _ in range(2):
        with pytest.raises(RuntimeError):
            list(_threads(work, items(transcripts(1)), CTX, 1))
    assert getattr(again, SAID_WITH) == ["compactctl: t0: LLM summary failed"]
