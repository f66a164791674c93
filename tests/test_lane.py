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
    Now the queued ones are not started and the calls in flight give up (llm.CANCEL), which is clear again after."""
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
        if llm.CANCEL.wait(10):  # a call in flight: given up on CANCEL
            gave_up.append(t.id)
            raise llm.Cancelled("interrupted")
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
