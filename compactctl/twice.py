"""Compacting twice: what a long session that compacts more than once keeps (an arm of `make eval`).

A session that goes on after a compaction compacts again, and its second summary replaces the first one too: what
the first kept has to survive the second. Per transcript (continuation.py's protocol, its instrument and its cuts):
1. compact the prefix up to the first cut (default 40% of the messages) with a window of `window_ratio` x its tokens;
2. carry on: that output, then the messages up to the second cut (80%), as the agent's context would be;
3. compact that again with the window one compaction of the raw 80% prefix gets (`window_ratio` x its tokens);
4. score the facts the continuation after the second cut uses (`compactctl.needed`) in: the twice-compacted context,
   one compaction of the raw 80% prefix (``once``), and head-tail and head-tail-fill (`baselines`) at the
   twice-compacted tokens.

Library use::

    from compactctl import twice
    res = twice.evaluate(transcripts)      # {"rows": [...], "aggregate": {...}}
    print(twice.table({"long": res["aggregate"]}))
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from . import continuation, needed
from .baselines import head_tail, head_tail_fill, tokens_of
from .continuation import prefix_of
from .model import Transcript
from .phases.rules import check
from .pipeline import CompactOptions
from .tokens import Counter, make_counter

CUTS = (0.4, 0.8)
KEPT = ("once", "twice", "head-tail", "head-tail-fill")


def score(
    t: Transcript,
    counter: Counter,
    cuts: Sequence[float] = CUTS,
    window_ratio: float = 0.4,
    summarizer=None,
    options: CompactOptions | None = None,
) -> dict[str, Any] | None:
    """One transcript compacted once and twice (see the module's docstring), or None when it has no two cuts."""
    points = continuation.cut_points(t.messages, cuts)
    if len(points) < 2 or points[0][1] >= points[1][1]:
        return None
    (_, early), (_, late) = points
    facts = needed.needed_facts(t.messages, late)
    prefix, first = prefix_of(t, late), prefix_of(t, early)
    before = tokens_of(counter, prefix.messages)
    window = int(before * window_ratio)
    once, err_once = continuation.run_compactctl(prefix, counter, window, summarizer, options)
    kept_first, err_first = continuation.run_compactctl(
        first, counter, int(tokens_of(counter, first.messages) * window_ratio), summarizer, options
    )
    grown = t.evolve(messages=[*kept_first.messages, *t.messages[early:late]], native=None)
    again, err_again = continuation.run_compactctl(grown, counter, window, summarizer, options)
    tokens = tokens_of(counter, again.messages)
    outs = {
        "once": once,
        "twice": again,
        "head-tail": head_tail(prefix, counter, tokens),
        "head-tail-fill": head_tail_fill(prefix, counter, tokens),
    }
    return {
        "transcript": t.id,
        "needed": len(facts),
        "tokens_before": before,
        "tokens": {name: tokens_of(counter, out.messages) for name, out in outs.items()},
        "kept": {name: sum(needed.kept_facts(facts, out.messages)) for name, out in outs.items()},
        "valid": not check(again),
        "cannot_fit": any((err_once, err_first, err_again)),
    }


def aggregate(rows: list[dict]) -> dict[str, Any]:
    n = sum(r["needed"] for r in rows)
    return {
        "sessions": len(rows),
        "needed": n,
        "kept": {k: (sum(r["kept"][k] for r in rows) / n if n else None) for k in KEPT},
        "tokens_before": sum(r["tokens_before"] for r in rows),
        "tokens": {k: sum(r["tokens"][k] for r in rows) for k in KEPT},
        "valid": sum(r["valid"] for r in rows),
        "cannot_fit": sum(r["cannot_fit"] for r in rows),
    }


def evaluate(
    transcripts: Iterable[Transcript],
    counter: Counter | None = None,
    cuts: Sequence[float] = CUTS,
    window_ratio: float = 0.4,
    summarizer=None,
    options: CompactOptions | None = None,
) -> dict[str, Any]:
    """{"rows": one per transcript with two cuts, "aggregate": pooled (`aggregate`)}."""
    counter = counter or make_counter("gpt-4o")
    rows = [r for t in transcripts if (r := score(t, counter, cuts, window_ratio, summarizer, options)) is not None]
    return {"rows": rows, "aggregate": aggregate(rows)}


def table(by_group: dict[str, dict[str, Any]]) -> str:
    """One row per group: needed facts kept once, twice and by head-tail and head-tail-fill at the twice-compacted tokens."""
    rows = [
        [
            title,
            str(a["sessions"]),
            f"{a['needed']:,}",
            *(continuation.pct(a["kept"][k]) for k in KEPT),
            f"{a['tokens_before']:,}",
            f"{a['tokens']['once']:,}",
            f"{a['tokens']['twice']:,}",
            f"{a['valid']}/{a['sessions']}",
            str(a["cannot_fit"]),
        ]
        for title, a in by_group.items()
    ]
    header = ["group", "sessions", "needed facts", "once", "twice", "head-tail (twice's tokens)", "head-tail-fill (twice's tokens)"]
    header.append("tokens before")
    return continuation.md_table([*header, "tokens once", "tokens twice", "valid (twice)", "cannot fit (any step)"], rows)
