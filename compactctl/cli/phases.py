"""The five phases' commands: prune, plan, summarize, repair, and compact (all of them). Each parses its options
(the shared groups and its own, declared as data: with_groups), calls the library and writes through the runner.
No typer here: a phase command's run parses its command line without it (fast.py)."""

from __future__ import annotations

import sys

from ..errors import CheckFailed, UsageError
from .groups import BUDGET, HINT, IO, PRUNE, REFS, SUMMARY, hint_said, input_bytes, llm_configured, prune_options, refs_for
from .options import Opt, with_groups
from .shared import INPUTS, loading, report_line, say, worker_count

_REPORTS_AS_JSON = Opt("as_json", bool, False, ("--json",), "Print each report as JSON on stderr.")


@with_groups(
    IO,
    BUDGET,
    PRUNE,
    REFS,
    own=(
        INPUTS,
        Opt("stats", bool, False, ("--stats",), "Print what each pass saved, as JSON on stderr."),
        Opt(
            "workers",
            int | None,
            None,
            ("-w", "--workers"),
            "Worker processes for a dataset (several transcripts; default: the machine's cores). "
            "Output, --stats and --archive stay in input order, the same bytes as with 1.",
        ),
    ),
)
def prune(
    *,
    inputs: list[str] | None,
    stats: bool,
    workers: int | None,
    io,
    budget,
    prune_raw,
    refs,
):
    """Phase 1: shrink old tool output with no LLM (dedup, one-line summaries, argument cuts, image placeholders).

    Example: compactctl prune session.jsonl --protect-tokens 4000 --stats > pruned.jsonl
    """
    with loading():
        from ..runner import PruneJob, run

    counter = budget.counter()  # an unknown encoding or a bad rank file fails here, before any worker starts
    opts = prune_options(prune_raw, budget)
    opts.count_tokens = stats
    opts.exact_totals = stats  # without --stats no token figure is shown: count only what pruning needs
    opts.refs = refs_for(refs, io)
    opts.check_names = opts.check_names or llm_configured()  # a summarize with an LLM may read these digests
    job = PruneJob(opts, counter.encoding, counter.approx, input_bytes(inputs or []), stats)
    io.workers = worker_count(workers)
    run(inputs or ["-"], io, job.build(), "prune", job=job)


@with_groups(
    IO,
    BUDGET,
    own=(
        INPUTS,
        Opt(
            "as_json",
            bool,
            False,
            ("--json",),
            'Print the plan as JSON on stdout instead of the annotated transcript ("fits": true). One that cannot fit '
            'is printed too: "fits": false, the tokens it needs against the target, and the error.',
        ),
    ),
)
def plan(
    *,
    inputs: list[str] | None,
    as_json: bool,
    io,
    budget,
):
    """Phase 2: choose head, middle and tail by exact token counts, and show it.

    Writes the transcript with each message's zone in a "_compactctl" annotation (for `summarize`),
    and a readable plan on stderr. Exit 5 when even head + tail + the minimum summary cannot fit.

    Example: compactctl prune session.jsonl | compactctl plan --context-window 32000
    """
    with loading():
        import orjson

        from ..errors import CannotFit
        from ..phases import plan as phase
        from ..runner import Result, run

    counter = budget.counter(inputs)
    unfit: list[CannotFit] = []  # --json: printed as such; exit 5 after them all (unless --on-error skip)

    def work(t):
        try:
            p = phase.plan_for_repair(t, counter, budget.budget)
        except CannotFit as e:
            if not as_json:
                raise  # the runner applies --on-error
            unfit.append(e)
            rep = {"transcript": t.id, "status": "cannot-fit", "reason": str(e)}
            notes = [f"compactctl: {e}"] if io.on_error == "skip" else []
            return Result(None, rep, lines=[orjson.dumps(phase.unfit_json(t.id, e))], notes=notes)
        rep = {"transcript": t.id, "status": "planned", "plan": p.as_dict()}  # --report (the record API's shape)
        if as_json:
            return Result(None, rep, lines=[orjson.dumps({**p.as_dict(), "fits": True})])
        say(io, p.describe())
        return Result(phase.annotate(t, p), rep)

    run(inputs or ["-"], io, work, "plan")
    if unfit and io.on_error != "skip":
        for e in unfit[:-1]:
            print(f"compactctl: error: {e}", file=sys.stderr)
        raise unfit[-1]


@with_groups(IO, BUDGET, SUMMARY, REFS, HINT, own=(INPUTS, _REPORTS_AS_JSON))
def summarize(
    *,
    inputs: list[str] | None,
    as_json: bool,
    io,
    budget,
    summary,
    refs,
    recall_hint,
):
    """Phases 3-4: replace the middle with a 13-section summary (LLM or offline) and assemble.

    Takes the zones from `plan` when the input carries them, else plans with the same options.

    Example: compactctl prune s.jsonl | compactctl plan | compactctl summarize | compactctl repair
    """
    with loading():
        from .. import api
        from ..runner import Result, run, warn

    counter = budget.counter(inputs)
    hint_said(recall_hint, refs_for(refs, io), io, warn)
    status: list[str] = []  # said once the first transcript is read: an input's error comes first
    # a fallback (the LLM failed: the offline summary written) is what was lost: said with -q too
    summarizer = api.make_summarizer(summary, budget.model, warn=warn, status=status.append)
    _imports_as_the_command(summarizer)
    io.jobs = summary.jobs

    sopts = api.SummarizeOptions(
        budget.budget,
        summary.focus,
        summary.min_saving,
        force=summary.force,
        refs=refs_for(refs, io),
        recall_hint=recall_hint,
        instructions=summary.instructions,
    )

    def work(t):
        out, st = api.summarize(t, counter, summarizer, sopts)
        rep = api.summarize_report(t, st.tokens_before, st.tokens_after, st)
        report_line(io, rep, as_json)
        return Result(out, rep, st.archived)

    def on_report(rep: dict) -> None:  # a transcript that cannot fit (warned already): its line too with --json
        if as_json and rep["status"] == "cannot-fit":
            report_line(io, rep, as_json)

    run(inputs or ["-"], io, work, "summarize", on_report=on_report, on_start=lambda: _say_all(io, status))


@with_groups(
    IO,
    BUDGET,
    own=(
        INPUTS,
        Opt("check", bool, False, ("--check",), "Only validate: print each violation, exit 6 if any."),
        Opt("strip_unanswered", bool, False, ("--strip-unanswered",), "Remove calls that have no result instead of adding a stub result."),
    ),
)
def repair(
    *,
    inputs: list[str] | None,
    check: bool,
    strip_unanswered: bool,
    io,
    budget,
):
    """Phase 5: make the transcript valid for the OpenAI and Anthropic APIs (tool pairs, placement, roles).

    Example: compactctl repair broken.jsonl -o fixed.jsonl ; compactctl repair --check fixed.jsonl
    """
    with loading():
        from ..phases import repair as phase
        from ..phases.rules import check as check_rules
        from ..runner import Result, run

    violations = 0

    def work(t):
        nonlocal violations
        if check:
            found = check_rules(t)
            for v in found:
                print(str(v), file=sys.stderr)
            violations += len(found)
            return Result(None, {"transcript": t.id, "status": "checked", "violations": [str(v) for v in found]}, lines=[])
        out, st = phase.repair(t, phase.RepairOptions(strip_unanswered))
        rep = {"transcript": t.id, "status": "repaired", "repair": st.as_dict()}
        return Result(out, rep, st.archived)

    from ..passthrough import repair_keeps

    # A record written as read (passthrough) makes no report line and no archive record (one that holds a summary
    # needs one, or restore takes it for another run's): with --report or --archive, every record is repaired.
    stats = run(inputs or ["-"], io, work, "repair", keeps=None if check or io.report or io.archive else repair_keeps, writes=not check)
    if check:
        bad = stats.skipped_lines + stats.rejected  # --on-error skip: not checked, in --rejects
        skipped = f" ({bad} bad record{'s' if bad != 1 else ''} skipped)" if bad else ""
        if violations:
            raise CheckFailed(f"{violations} violation(s) in {stats.transcripts} transcript(s){skipped}")
        say(io, f"ok: {stats.transcripts} transcript(s), no violations{skipped}")


@with_groups(
    IO,
    BUDGET,
    PRUNE,
    SUMMARY,
    REFS,
    HINT,
    own=(
        INPUTS,
        Opt("strip_unanswered", bool, False, ("--strip-unanswered",), "Repair by removing unanswered calls instead of stubbing them."),
        Opt(
            "no_grow_tail",
            bool,
            False,
            ("--no-grow-tail",),
            "Keep the first pass: when the offline summary leaves room under the target, compact otherwise runs "
            "once more with that room given to the verbatim tail. With it, the bytes of the prune | plan | summarize | "
            "repair chain.",
        ),
        _REPORTS_AS_JSON,
        Opt(
            "workers",
            int | None,
            None,
            ("-w", "--workers"),
            "Worker processes for offline compaction (default: the machine's cores). "
            "Output stays in input order. With an LLM summarizer, --jobs applies instead.",
        ),
        Opt(
            "engine",
            str,
            "local",
            ("--engine",),
            "local (this machine: --workers processes) or ray (Ray Data: -o DIR/ gets one JSONL "
            "file per input; datasets of one transcript per line).",
        ),
        Opt("ray_address", str | None, None, ("--ray-address",), "With --engine ray: the cluster to join (default: start a local Ray)."),
    ),
)
def compact(
    *,
    inputs: list[str] | None,
    strip_unanswered: bool,
    no_grow_tail: bool,
    as_json: bool,
    workers: int | None,
    engine: str,
    ray_address: str | None,
    io,
    budget,
    prune_raw,
    summary,
    refs,
    recall_hint,
):
    """All five phases: prune, plan, summarize, assemble, repair. Offline unless an LLM is configured.

    Example: compactctl compact session.jsonl -o compacted.jsonl --archive removed.jsonl
    """
    with loading():
        from .. import api
        from ..record import Compactor, Options, PhaseJob
        from ..runner import Result, run, warn
        from ..summarizers.base import OfflineSummarizer

    if engine not in ("local", "ray"):
        raise UsageError("--engine must be local or ray")
    hint_said(recall_hint, refs_for(refs, io), io, warn)
    status: list[str] = []  # said once the first transcript is read: an input's error comes first
    summarizer = api.make_summarizer(summary, budget.model, warn=None if engine == "ray" else warn, status=status.append)
    _imports_as_the_command(summarizer)
    popts = prune_options(prune_raw, budget)
    options = Options.of(
        budget.budget,
        popts,
        model=budget.model,
        encoding=budget.encoding,
        tokenizer=budget.tokenizer,
        count_tokens=bool(io.report or as_json),  # per-pass token savings only when a report shows them
        focus=summary.focus,
        min_saving=summary.min_saving,
        force=summary.force,
        strip_unanswered=strip_unanswered,
        grow_tail=not no_grow_tail,
        to=io.fmt_to,
        fmt=io.fmt_from,
        refs=refs_for(refs, io),
        recall_hint=recall_hint,
        instructions=summary.instructions,
    )
    offline = isinstance(summarizer, OfflineSummarizer)
    if engine == "ray":
        from .. import ray as cray

        if not offline:
            raise UsageError("--engine ray runs the offline summarizer only (use --summarizer offline)")
        if io.archive or io.resume:
            raise UsageError("--engine ray does not write --archive nor --resume: use the local engine for those")
        stats = cray.run_files(
            inputs or [], io.output, options, address=ray_address, workers=workers, report=io.report, rejects=io.rejects, quiet=io.quiet
        )
        say(io, f"ray: {stats['records']} records, {stats['errors']} errors, {stats['shards']} shard(s) in {io.output}")
        return
    compactor = Compactor(options, summarizer=summarizer, counter=budget.counter(inputs))
    io.jobs = summary.jobs
    io.workers = worker_count(workers) if offline else 1

    def work(t):
        oc = compactor.compact_transcript(t, on_cannot_fit="raise")  # the runner applies --on-error
        return Result(oc.transcript, oc.report, oc.archived)

    def on_report(rep: dict) -> None:
        if rep["status"] != "cannot-fit" or as_json:  # cannot-fit: warned already (--json: a line for every transcript)
            report_line(io, rep, as_json)

    job = PhaseJob(options) if offline else None
    run(inputs or ["-"], io, work, "compact", job=job, on_report=on_report, on_start=lambda: _say_all(io, status))


def _say_all(io, lines: list[str]) -> None:
    """The summarizer's status (api.make_summarizer), on stderr as warnings are."""
    for line in lines:
        say(io, f"compactctl: {line}")


def _imports_as_the_command(summarizer) -> None:
    """An LLM summarizer's first call imports the openai package (~0.35 s, thousands of objects): as the command's own
    imports load (shared.loading), so that what it made is frozen, walked by no later collection nor the one at exit."""
    if hasattr(summarizer, "loading"):
        summarizer.loading = loading
