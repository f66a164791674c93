"""`compactctl eval`: run continuation scoring and the probe eval (compactctl.continuation,
compactctl.evaluate) over the inputs, and print what they found."""

from __future__ import annotations

import math
from typing import Any

from ..errors import UsageError
from .groups import BudgetOptions, SummaryOptions


def measure(
    inputs: list[str],
    budget: BudgetOptions,
    summary: SummaryOptions,
    *,
    continuation: bool,
    probes: bool,
    compacted: str | None,
    strategies: str | None,
    cuts: str,
    window_ratio: float,
    ratio: float,
) -> dict[str, Any]:
    """{"continuation": {...}, "probes": {"rows", "aggregate"}}: the parts asked for."""
    from .. import formats
    from ..runner import warn

    counter = budget.counter(inputs)
    originals = list(formats.Reader(warn=warn).read(inputs))
    out: dict[str, Any] = {}
    if continuation:
        out["continuation"] = _continuation(originals, counter, budget, summary, strategies, cuts, window_ratio)
    if probes:
        out["probes"] = _probes(originals, counter, budget, summary, strategies, compacted, ratio)
    return out


def _fractions(cuts: str) -> list[float]:
    try:
        return [float(x) for x in cuts.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--cuts must be comma-separated fractions, not {cuts!r}") from None


def check_options(cuts: str, window_ratio: float, ratio: float, explain: int) -> None:
    """The eval's own options, before any transcript is read (a usage error, exit 2)."""
    fracs = _fractions(cuts)
    if not fracs or not all(0 < f < 1 for f in fracs):
        raise UsageError(f"--cuts {cuts}: must be one or more fractions in (0, 1), comma-separated")
    if not 0 < window_ratio < math.inf:
        raise UsageError(f"--window-ratio {window_ratio}: must be a positive number")
    if not 0 < ratio <= 1:
        raise UsageError(f"--ratio {ratio}: must be in (0, 1]")
    if explain < 0:
        raise UsageError(f"--explain {explain}: must be 0 or more")


def _continuation(originals, counter, budget: BudgetOptions, summary: SummaryOptions, strategies, cuts: str, window_ratio: float) -> dict:
    from .. import api, continuation
    from ..runner import warn

    fracs = _fractions(cuts)
    names = [x for x in (strategies or ",".join(continuation.STRATEGIES)).split(",") if x in continuation.STRATEGIES]
    if "compactctl" not in names:
        names.insert(0, "compactctl")  # the baselines are sized to its output
    summarizer = api.make_summarizer(summary, budget.model, warn=warn) if summary.summarizer == "llm" else None  # offline unless asked
    opts = api.CompactOptions(budget.budget, min_saving=summary.min_saving)
    return continuation.evaluate(originals, counter, names, fracs, window_ratio, summarizer, opts)


def _probes(originals, counter, budget: BudgetOptions, summary: SummaryOptions, strategies, compacted: str | None, ratio: float) -> dict:
    from .. import api, evaluate, formats
    from ..runner import warn

    given = None
    if compacted is not None:
        given = dict(enumerate(formats.Reader(warn=warn).read([compacted])))
        if len(given) != len(originals):
            raise UsageError(f"{compacted} holds {len(given)} transcripts, the originals {len(originals)}")
    wanted = (strategies or "compactctl,head-tail,masking").split(",")
    factory = (lambda: api.make_summarizer(summary, budget.model, warn=warn)) if "compactctl-llm" in wanted else None
    b = budget.budget
    every = evaluate.strategies(counter, ratio, factory, b.last_ask, b.summary_min, b.summary_max, b.summary_ratio)
    rows, agg = evaluate.run(originals, counter, {k: v for k, v in every.items() if k in wanted}, given)
    return {"rows": rows, "aggregate": agg}


def show(out: dict[str, Any], *, as_json: bool, cuts: str, window_ratio: float, explain: int, ratio: float) -> None:
    if as_json:
        import orjson

        print(orjson.dumps(out if len(out) > 1 else next(iter(out.values()))).decode())
        return
    if "continuation" in out:
        _show_continuation(out["continuation"], cuts, window_ratio, explain)
    if "probes" in out:
        _show_probes(out["probes"], ratio, after_continuation="continuation" in out)


def _show_continuation(c: dict, cuts: str, window_ratio: float, explain: int) -> None:
    from .. import continuation

    for line in continuation.cut_lines(c["rows"]):
        print(line)
    print(f"\n## Continuation scoring (cuts {cuts}, compactctl window {window_ratio:g} x prefix tokens, baselines at its output tokens)\n")
    print(continuation.tables(c["aggregate"]))
    if explain:
        lost = continuation.explain(c["rows"], explain)
        print(f"\nFacts compactctl lost ({len(lost)} shown):")
        for line in lost:
            print("- " + line)
    print()


def _show_probes(p: dict, ratio: float, after_continuation: bool) -> None:
    from .. import evaluate

    if after_continuation:
        print(f"## Probe eval (budget {ratio:.0%} of each transcript's tokens)\n")
    else:
        for name, rs in p["rows"].items():
            for r in rs:
                print(
                    f"{name:<15} {r['transcript']}: retention {r['retention']:.1%} of {r['probes']} probes, "
                    f"{r['tokens_before']:,} -> {r['tokens_after']:,} tokens ({r['reduction']:.1%} fewer){'' if r['valid'] else ', INVALID'}"
                    f"{', cannot fit' if r.get('error') else ''}"
                )
        print()
    print(evaluate.table(p["aggregate"]))
