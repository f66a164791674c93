"""`compact` is literally the composition of the phases: prune -> plan -> summarize (+ assemble) -> repair."""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any

from . import config
from .errors import CannotFit
from .formats import get_format
from .lean import dataclass
from .model import Transcript, check_built
from .phases.plan import Budget, Plan
from .phases.prune import PruneOptions, prune
from .phases.repair import RepairOptions, repair
from .phases.summarize import SummarizeOptions, Summarizer, summarize
from .tokens import Counter


class Report(dict):
    """`compact`'s report: a plain dict of JSON types (tokens per zone, summarizer, ...). The originals that were
    replaced or removed (`Archived`, not JSON) are its `archived` attribute, not one of its keys."""

    archived: list[Any]

    def __init__(self, data: dict[str, Any], archived: list[Any]):
        super().__init__(data)
        self.archived = archived


@dataclass
class CompactOptions:
    """The options of the whole pipeline: budget, prune, summary and repair.

    Checked when built, as Budget is: a value of the wrong type (budget=None) or out of range (min_saving=2,
    max_strikes=0: every transcript skipped) raises UsageError."""

    budget: Budget = field(default_factory=Budget)
    prune: PruneOptions | None = None  # default: protect the tail budget
    focus: str | None = None
    min_saving: float = 0.10
    max_strikes: int = 2
    force: bool = False
    strip_unanswered: bool = False
    # When a local summary leaves room under the target, compact once more with that room given to the verbatim tail
    # (see compact). False: what the `prune | plan | summarize | repair` chain writes.
    grow_tail: bool = True
    refs: bool = True  # references to archived originals in pruned messages and summaries (see refs)
    recall_hint: bool = False  # the summary names the recall tools
    instructions: str | None = None  # extra instructions for an LLM summarizer

    def __post_init__(self) -> None:
        config.check_fields(self, {"max_strikes": (lambda v: v >= 1, "at least 1")})

    def prune_options(self) -> PruneOptions:
        return self.prune or PruneOptions(protect_tokens=self.budget.tail, target=self.budget.target, refs=self.refs)

    def summarize_options(self) -> SummarizeOptions:
        return SummarizeOptions(
            budget=self.budget,
            focus=self.focus,
            min_saving=self.min_saving,
            max_strikes=self.max_strikes,
            force=self.force,
            refs=self.refs,
            recall_hint=self.recall_hint,
            instructions=self.instructions,
        )

    def repair_options(self) -> RepairOptions:
        return RepairOptions(self.strip_unanswered)


def compact(t: Transcript, counter: Counter, summarizer: Summarizer, opts: CompactOptions | None = None) -> tuple[Transcript, Report]:
    """Compact one transcript; returns it and a report (tokens per zone, summarizer; JSON types only), whose
    `archived` attribute lists the originals that were replaced or removed.

    Prune runs before the plan, so when a summary must follow it protects only the tail's budget and digests the
    outputs before it. When the summary then leaves room under the target (it said all it had in fewer tokens than the
    plan gave it), or the last ask stretched the tail past its budget (so prune digested outputs the plan keeps), the
    transcript is compacted once more with the tail the first compaction kept and that room as the tail's budget: prune
    protects it, so the newest outputs stay verbatim (the agent's working set) and the older ones go to the summary
    (the last ask too, verbatim in it, when it no longer falls in the tail). Kept when it fits; only with a local
    summarizer (no second call to an LLM). The report's `tail_grown` gives that budget."""
    opts = opts or CompactOptions()
    check_built(t)  # before any work (an LLM's call too): repair would refuse it at the end
    out, report, p = _compact(t, counter, summarizer, opts)
    grown = _grown(report, p, opts) if opts.grow_tail and getattr(summarizer, "local", False) else None
    if grown is None:
        return out, report
    try:
        out2, report2, _ = _compact(t, counter, summarizer, grown)
    except CannotFit:
        return out, report
    if report2["status"] != "compacted" or out2.messages == out.messages:  # (the same messages: the tail grew by none)
        return out, report
    report2["tail_grown"] = grown.budget.tail
    return out2, report2


# The tail is grown (compact's second pass) when the room the summary left and the tail the first pass kept come to this
# much more than the tail's budget (a tenth): less would rerun the pipeline for a message or two.
GROW_MIN = 0.1


def _grown(report: dict[str, Any], p: Plan | None, opts: CompactOptions) -> CompactOptions | None:
    """The options of compact's second pass (see compact): the tail's budget is the tail the first kept (`p`, its plan)
    and the room under the target its output left; None when that is not GROW_MIN more than the budget, when nothing
    was summarized, or when the last ask stretched the tail and must stay in it (last_ask "tail")."""
    budget = opts.budget
    if p is None or report["status"] != "compacted" or (p.anchor_forced and budget.last_ask == "tail"):
        return None
    tail = report["zones"]["tail"] + max(budget.target - report["tokens_after"], 0)
    if tail <= budget.tail * (1 + GROW_MIN):
        return None
    last_ask = "summary" if p.anchor_forced else budget.last_ask
    prune = opts.prune
    if prune is not None and prune.protect_tokens == budget.tail:  # protection that follows the tail's budget
        prune = dataclasses.replace(prune, protect_tokens=tail)
    return dataclasses.replace(opts, budget=dataclasses.replace(budget, tail_tokens=tail, last_ask=last_ask), prune=prune)


def _compact(t: Transcript, counter: Counter, summarizer: Summarizer, opts: CompactOptions) -> tuple[Transcript, Report, Plan | None]:
    """`compact`'s one pass: the output, its report and the plan it followed (None when summarize planned nothing)."""
    popts = opts.prune_options()
    if not popts.check_names and not getattr(summarizer, "local", False):  # what it reads may leave the machine
        popts = dataclasses.replace(popts, check_names=True)
    t1, ps = prune(t, counter, popts)
    harder = None

    sopts = opts.summarize_options()

    def summarized(tx: Transcript):
        return summarize(tx, counter, summarizer, sopts)

    try:
        try:
            t2, ss = summarized(t1)
        except CannotFit:
            if popts.protect_tokens == 0:
                raise
            # Before giving up: prune the protected recent part too (never the last ask), then plan again.
            t1, harder = prune(t1, counter, dataclasses.replace(popts, protect_tokens=0))
            ps.archived += harder.archived
            t2, ss = summarized(t1)
    except CannotFit as e:
        # What a caller that goes on (--on-error skip) writes instead: pruned and valid, never the raw input; its
        # digests at their size, not the 4x names they kept for a summary that cannot follow.
        bare, bs = prune(t, counter, dataclasses.replace(popts, protect_tokens=0, vocabulary=False, keep_last=True))
        fallback, rs = repair(bare, opts.repair_options())
        e.fallback, e.fallback_is = (fallback, bs.archived + rs.archived), CannotFit.fallback_is
        raise
    t3, rs = repair(t2, opts.repair_options())
    # Counted last: with an LLM, the call goes out before this work.
    before = sum(counter.messages(t.messages))
    after = sum(counter.messages(t3.messages))
    target = opts.budget.target
    if after > target and before > target and ss.status in ("compacted", "not-needed"):
        # Checked after repair: stubs it adds count too. What a caller that goes on writes: this output, valid.
        over = CannotFit(
            f"{t.id}: {after:,} tokens after compaction ({ss.status}), over the target of {target:,}. "
            "Raise --context-window or --threshold, or lower --protect-first, --tail-tokens or --summary-min."
        )
        over.fallback, over.fallback_is = (t3, ps.archived + ss.archived + rs.archived), "compacted, over the target"
        raise over
    report = summarize_report(t, before, after, ss, ps, rs)
    if harder is not None:
        report["prune_recent"] = harder.as_dict()  # the recent part was pruned too, to fit
    counted = get_format(t.format).dropped_records  # line logs only (formats.Format)
    if counted is not None:
        report["records_dropped"] = counted(t3)  # lines never sent to a model (dropped inside the compacted region) or off the path
    return t3, Report(report, ps.archived + ss.archived + rs.archived), ss.plan


def summarize_report(t: Transcript, before: int, after: int, ss, ps=None, rs=None) -> dict[str, Any]:
    r: dict[str, Any] = {"transcript": t.id, "format": t.format, "status": ss.status, "tokens_before": before, "tokens_after": after}
    if ss.plan is not None:
        r["zones"] = ss.plan.tokens
        r["ranges"] = ss.plan.as_dict()["ranges"]
        r["target"] = ss.plan.target + ss.plan.reserve  # the budget's; the plan left `reserve` of it for repair
        r["summary_budget"] = ss.plan.summary_budget
    if ss.result is not None:
        r.update(
            summarizer=ss.result.summarizer,
            cache_hit=ss.result.cache_hit,
            llm_calls=ss.result.calls,
            retention=ss.result.retention,
            warnings=ss.result.warnings,
        )
    r["reason"] = ss.reason
    if ps is not None:
        r["prune"] = ps.as_dict()
    if rs is not None:
        r["repair"] = rs.as_dict()
    return r
