"""`compactctl eval`: run continuation scoring (with --twice, compacting twice too) and the probe eval
(compactctl.continuation, compactctl.twice, compactctl.evaluate) over the inputs, and print what they found."""

from __future__ import annotations

import math
from typing import Any

from ..errors import DataError, UsageError
from .groups import BudgetOptions, SummaryOptions


def measure(
    inputs: list[str],
    budget: BudgetOptions,
    summary: SummaryOptions,
    *,
    continuation: bool,
    probes: bool,
    twice: bool = False,
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
    if not originals:  # an empty file: the tables came out with every count 0, exit 0, as if measured
        raise DataError(_named(inputs), None, f"nothing to evaluate: {'they hold' if len(inputs) > 1 else 'it holds'} no transcript")
    out: dict[str, Any] = {}
    if continuation:
        out["continuation"] = _continuation(originals, counter, budget, summary, strategies, cuts, window_ratio)
        _uncut(originals, out["continuation"]["rows"], inputs, alone=not probes)
    if twice:
        out["twice"] = _twice(originals, counter, budget, summary, cuts, window_ratio)
        _unscored(originals, out["twice"]["rows"], "--twice", "no two turns to cut at")
    if probes:
        out["probes"] = _probes(originals, counter, budget, summary, strategies, compacted, ratio)
    return out


def _named(inputs: list[str]) -> str:
    """The inputs as a data error names them ("-", or none: standard input)."""
    return ", ".join("<stdin>" if x == "-" else x for x in inputs) or "<stdin>"


def _uncut(originals: list, rows: list[dict], inputs: list[str], alone: bool) -> None:
    """Say each transcript continuation scoring could not cut (it was left out without a word, and an input of
    such transcripts alone printed tables of 0 cuts, exit 0): a data error when there is nothing else to show."""
    if not rows and alone:
        raise DataError(
            _named(inputs), None, "nothing to score by continuation: no transcript has a turn to cut at (too short; --probes measures it)"
        )
    _unscored(originals, rows, "continuation", "no turn to cut at")


def _unscored(originals: list, rows: list[dict], what: str, why: str) -> None:
    """Say each transcript of `originals` that has no row in `rows` (`what` left it out: `why`)."""
    from ..runner import warn

    scored = {r["transcript"] for r in rows}
    for t in originals:
        if t.id not in scored:
            n = len(t.messages)
            warn(f"{t.id}: not scored by {what}: {why} ({n} message{'s' if n != 1 else ''})")


def _fractions(cuts: str) -> list[float]:
    try:
        return [float(x) for x in cuts.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--cuts must be comma-separated fractions, not {cuts!r}") from None


def _strategy_names(strategies: str) -> list[str]:
    return [x.strip() for x in strategies.split(",") if x.strip()]


def check_options(
    cuts: str,
    window_ratio: float,
    ratio: float,
    explain: int,
    strategies: str | None = None,
    continuation: bool = True,
    probes: bool = True,
) -> None:
    """The eval's own options, before any transcript is read (a usage error, exit 2). A --strategies name
    that none of the parts run knows is refused (it was dropped, and the tables came out empty)."""
    fracs = _fractions(cuts)
    if not fracs or not all(0 < f < 1 for f in fracs):
        raise UsageError(f"--cuts {cuts}: must be one or more fractions in (0, 1), comma-separated")
    if not 0 < window_ratio < math.inf:
        raise UsageError(f"--window-ratio {window_ratio}: must be a positive number")
    if not 0 < ratio <= 1:
        raise UsageError(f"--ratio {ratio}: must be in (0, 1]")
    if explain < 0:
        raise UsageError(f"--explain {explain}: must be 0 or more")
    if strategies is not None:
        from .. import continuation as cont
        from .. import evaluate

        known = [*(cont.STRATEGIES if continuation else ()), *(evaluate.PROBE_STRATEGIES if probes else ())]
        for name in _strategy_names(strategies):
            if name not in known:
                raise UsageError(f"--strategies: unknown strategy {name!r} (known here: {', '.join(dict.fromkeys(known))})")


def _compaction(budget: BudgetOptions, summary: SummaryOptions) -> tuple[Any, Any]:
    """The summarizer (offline unless an LLM is asked for) and the options the eval's compactions run with."""
    from .. import api
    from ..runner import warn

    summarizer = api.make_summarizer(summary, budget.model, warn=warn) if summary.summarizer == "llm" else None
    return summarizer, api.CompactOptions(budget.budget, min_saving=summary.min_saving)


def _continuation(originals, counter, budget: BudgetOptions, summary: SummaryOptions, strategies, cuts: str, window_ratio: float) -> dict:
    from .. import continuation

    fracs = _fractions(cuts)
    names = [x for x in _strategy_names(strategies or ",".join(continuation.STRATEGIES)) if x in continuation.STRATEGIES]
    if "compactctl" not in names:
        names.insert(0, "compactctl")  # the baselines are sized to its output
    summarizer, opts = _compaction(budget, summary)
    return continuation.evaluate(originals, counter, names, fracs, window_ratio, summarizer, opts)


def _twice_cuts(cuts: str) -> tuple[float, float]:
    """Where --twice compacts: the first and the last of --cuts (with one cut, compactctl.twice's own)."""
    from .. import twice

    fracs = sorted(_fractions(cuts))
    return (fracs[0], fracs[-1]) if len(fracs) > 1 else twice.CUTS


def _twice(originals, counter, budget: BudgetOptions, summary: SummaryOptions, cuts: str, window_ratio: float) -> dict:
    """Compacted at the first cut, carried on to the last and compacted again (compactctl.twice)."""
    from .. import twice

    summarizer, opts = _compaction(budget, summary)
    return twice.evaluate(originals, counter, _twice_cuts(cuts), window_ratio, summarizer, opts)


def _probes(originals, counter, budget: BudgetOptions, summary: SummaryOptions, strategies, compacted: str | None, ratio: float) -> dict:
    from .. import api, evaluate, formats
    from ..runner import warn

    given = None
    if compacted is not None:
        given = dict(enumerate(formats.Reader(warn=warn).read([compacted])))
        if len(given) != len(originals):
            raise UsageError(f"{compacted} holds {len(given)} transcripts, the originals {len(originals)}")
    wanted = _strategy_names(strategies or "compactctl,head-tail,masking")
    factory = (lambda: api.make_summarizer(summary, budget.model, warn=warn)) if "compactctl-llm" in wanted else None
    b = budget.budget
    every = evaluate.strategies(counter, ratio, factory, b.last_ask, b.summary_min, b.summary_max, b.summary_ratio)
    rows, agg = evaluate.run(originals, counter, {k: v for k, v in every.items() if k in wanted}, given)
    return {"rows": rows, "aggregate": agg}


CONTINUATION_COLUMNS = (
    "Columns: needed facts: the paths, identifiers, commands, URLs and values of each prefix that its continuation "
    "writes again (compactctl/needed.py), summed over cuts; kept: the share the compacted prefix still holds; "
    "kept in context: held next to 8 characters it had beside it in the prefix (a name only in a list is kept, not "
    "in context); kept, not re-discovered: the share kept of the facts the continuation does not see in a tool output "
    "(or harness text) before it writes them; tokens before / after: the prefixes' and the outputs' tokens, summed; reduction: 1 - after / before; "
    "at or under target: cuts whose output is within compactctl's target (--threshold x its window); valid: outputs "
    "that pass `repair --check`; cannot fit: cuts compactctl could not bring to its target, scored as what "
    "`--on-error skip` writes. The baselines get compactctl's output tokens at each cut, never more: head-tail, the "
    "system message(s), the first 3 messages and the last whole tool-call groups that fit, every tool output cut to 500 "
    "characters (the naive baseline); head-tail-fill, the system message(s), the first messages for a quarter of the tokens "
    "they leave and the last ones for the rest, the group at each boundary with its texts cut to fit (no fixed cut: it "
    "fills the budget); recent, the system message(s), the first ask and the last whole groups that fit; masking, tool "
    "outputs replaced by a placeholder from the oldest on, then the oldest groups dropped."
)
PROBE_COLUMNS = (
    "Columns: retention: the share of the probes kept (facts of what each strategy removed or rewrote: files, "
    "commands with their exit codes, error lines, user constraints, the last ask, identifiers; one column each, "
    "- where a strategy removed none); tokens before / after, reduction: as above, at a budget of --ratio of each "
    "transcript's tokens; valid: outputs that pass `repair --check`; cannot fit: transcripts compactctl could not "
    "bring to the budget, scored as what `--on-error skip` writes."
)


def show(out: dict[str, Any], *, as_json: bool, cuts: str, window_ratio: float, explain: int, ratio: float) -> None:
    if as_json:
        import orjson

        print(orjson.dumps(out if len(out) > 1 else next(iter(out.values()))).decode())
        return
    if "continuation" in out:
        _show_continuation(out["continuation"], cuts, window_ratio, explain)
    if "twice" in out:
        _show_twice(out["twice"], cuts)
    if "probes" in out:
        _show_probes(out["probes"], ratio, after_continuation="continuation" in out)


def _show_continuation(c: dict, cuts: str, window_ratio: float, explain: int) -> None:
    from .. import continuation

    for line in continuation.cut_lines(c["rows"]):
        print(line)
    print(f"\n## Continuation scoring (cuts {cuts}, compactctl window {window_ratio:g} x prefix tokens, baselines at its output tokens)\n")
    if not c["rows"]:
        print("(no transcript could be cut: nothing scored)\n")
        return
    print(continuation.tables(c["aggregate"]))
    print("\n" + CONTINUATION_COLUMNS)
    if explain:
        lost = continuation.explain(c["rows"], explain)
        ours = c["aggregate"].get("compactctl", {})
        total = ours.get("needed", 0) - ours.get("kept_facts", 0)
        print(
            f"\nFacts compactctl lost ({len(lost)} of {total:,} shown; #N: message N of the transcript as read, from 0; "
            "[where it sat], then where the continuation first wrote it):"
        )
        for line in lost:
            print("- " + line)
    print()


def _show_twice(t: dict, cuts: str) -> None:
    from .. import twice

    first, last = _twice_cuts(cuts)
    print(f"## Compacting twice (at {first:.0%}, carried on to {last:.0%} and compacted again; scored after {last:.0%})\n")
    print(twice.table({"all": t["aggregate"]}))
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
    print("\n" + PROBE_COLUMNS)
