"""The CPU lane of a run in threads (--jobs): one thread at a time prepares a transcript, first come first served,
and leaves the lane when it starts to wait on the network (an LLM call), or when its work ends.

Under the GIL, threads that all prepared at once shared the CPU round-robin: the first prompt was ready only when
nearly every transcript in flight was, and the calls started late (16 transcripts at --jobs 4 against a 1 s endpoint:
the first call went out after ~1.4 s). In the lane, the first prompt is ready after one preparation, and the next
ones follow it; the others are prepared while the calls wait."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_HELD = threading.local()  # the lane the current thread is in, if any
_RUN = threading.local()  # the stop event of the run in threads the current thread works for, if any


class Lane:
    """Tickets served in the order they were taken: a thread waits for its turn, then has the lane until it leaves."""

    def __init__(self) -> None:
        self._turn = threading.Condition(threading.Lock())
        self._taken = 0  # tickets handed out
        self._serving = 0  # the ticket whose turn it is

    @contextmanager
    def held(self) -> Iterator[None]:
        """In the lane for the block, unless the thread leaves it first (`leave`)."""
        with self._turn:
            ticket = self._taken
            self._taken += 1
            while self._serving != ticket:
                self._turn.wait()
        _HELD.lane = self
        try:
            yield
        finally:
            leave()

    def _next(self) -> None:
        with self._turn:
            self._serving += 1
            self._turn.notify_all()


def leave() -> None:
    """The current thread leaves its lane, if it is in one (before it waits on the network); the next thread goes on."""
    lane = getattr(_HELD, "lane", None)
    if lane is not None:
        _HELD.lane = None
        lane._next()


@contextmanager
def working_for(stop: threading.Event) -> Iterator[None]:
    """The current thread works for a run in threads (its `stop` event) until the block ends: see `stopped`."""
    _RUN.stop = stop
    try:
        yield
    finally:
        _RUN.stop = None


def stopped() -> bool:
    """Whether the run in threads the current thread works for has ended early (an error in another of its threads,
    or its reader stopped: runner.engines._abandon); an LLM call waiting for its answer then gives up, as on Ctrl-C.
    Per run, not process-wide: another run in the same process (a library caller's) goes on."""
    stop = getattr(_RUN, "stop", None)
    return stop is not None and stop.is_set()
