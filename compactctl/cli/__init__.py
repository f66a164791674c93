"""The command line: options, reading, writing, exit codes. No logic: each command calls the library."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import orjson
import typer

from .. import api
from ..errors import CheckFailed, CompactError, UsageError
from ..runner import Result, run, warn
from .groups import BUDGET, IO, PRUNE, SUMMARY, prune_options
from .options import with_groups

app = typer.Typer(
    name="compactctl",
    help="Compact LLM-agent transcripts (JSONL) to a token budget, keeping what the agent needs to carry on.\n\n"
    "Example: compactctl compact session.jsonl -o compacted.jsonl",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

Inputs = Annotated[list[str] | None, typer.Argument(help="JSONL files, directories (recursive *.jsonl), or - for stdin (the default).", show_default=False)]


def _say(io, msg: str) -> None:
    if not io.quiet:
        print(msg, file=sys.stderr)


@app.command()
@with_groups(IO, BUDGET, PRUNE)
def prune(inputs: Inputs = None, stats: Annotated[bool, typer.Option("--stats", help="Print what each pass saved, as JSON on stderr.")] = False, *, io, budget, prune_raw):
    """Phase 1: shrink old tool output with no LLM (dedup, one-line summaries, argument cuts, image placeholders).

    Example: compactctl prune session.jsonl --protect-tokens 4000 --stats > pruned.jsonl
    """
    counter = budget.counter()
    opts = prune_options(prune_raw, budget)
    opts.count_tokens = stats

    def work(t):
        out, st = api.prune(t, counter, opts)
        if stats:
            print(orjson.dumps({"transcript": t.id, **st.as_dict()}).decode(), file=sys.stderr)
        return Result(out, archived=st.archived)

    run(inputs or ["-"], io, work, "prune")


@app.command()
@with_groups(IO, BUDGET)
def plan(inputs: Inputs = None, as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON on stdout instead of the annotated transcript.")] = False, *, io, budget):
    """Phase 2: choose head, middle and tail by exact token counts, and show it.

    Writes the transcript with each message's zone in a "_compactctl" annotation (for `summarize`),
    and a readable plan on stderr. Exit 5 when even head + tail + the minimum summary cannot fit.

    Example: compactctl prune session.jsonl | compactctl plan --context-window 32000
    """
    counter = budget.counter()

    def work(t):
        p = api.plan(t, counter, budget.budget)
        if as_json:
            return Result(None, lines=[orjson.dumps(p.as_dict())])
        _say(io, p.describe())
        return Result(api.annotate(t, p))

    run(inputs or ["-"], io, work, "plan")


@app.command()
@with_groups(IO, BUDGET, SUMMARY)
def summarize(inputs: Inputs = None, as_json: Annotated[bool, typer.Option("--json", help="Print each report as JSON on stderr.")] = False, *, io, budget, summary):
    """Phases 3-4: replace the middle with a 13-section summary (LLM or offline) and assemble.

    Takes the zones from `plan` when the input carries them, else plans with the same options.

    Example: compactctl prune s.jsonl | compactctl plan | compactctl summarize | compactctl repair
    """
    counter = budget.counter()
    summarizer = api.make_summarizer(summary, budget.model, warn=None if io.quiet else warn)
    io.jobs = summary.jobs

    def work(t):
        out, st = api.summarize(t, counter, budget.budget, summarizer, summary.focus, summary.min_saving, force=summary.force)
        rep = api.summarize_report(t, st.tokens_before, st.tokens_after, st)
        _report_line(io, rep, as_json)
        return Result(out, rep, st.archived)

    run(inputs or ["-"], io, work, "summarize")


@app.command()
@with_groups(IO, BUDGET)
def repair(
    inputs: Inputs = None,
    check: Annotated[bool, typer.Option("--check", help="Only validate: print each violation, exit 6 if any.")] = False,
    strip_unanswered: Annotated[bool, typer.Option("--strip-unanswered", help="Remove calls that have no result instead of adding a stub result.")] = False,
    *, io, budget,
):
    """Phase 5: make the transcript valid for the OpenAI and Anthropic APIs (tool pairs, placement, roles).

    Example: compactctl repair broken.jsonl -o fixed.jsonl ; compactctl repair --check fixed.jsonl
    """
    violations = 0

    def work(t):
        nonlocal violations
        if check:
            found = api.check(t)
            for v in found:
                print(str(v), file=sys.stderr)
            violations += len(found)
            return Result(None, lines=[])
        out, st = api.repair(t, strip_unanswered)
        return Result(out, archived=st.archived)

    stats = run(inputs or ["-"], io, work, "repair")
    if check:
        if violations:
            raise CheckFailed(f"{violations} violation(s) in {stats.transcripts} transcript(s)")
        _say(io, f"ok: {stats.transcripts} transcript(s), no violations")


@app.command()
@with_groups(IO, BUDGET, PRUNE, SUMMARY)
def compact(
    inputs: Inputs = None,
    strip_unanswered: Annotated[bool, typer.Option("--strip-unanswered", help="Repair by removing unanswered calls instead of stubbing them.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print each report as JSON on stderr.")] = False,
    workers: Annotated[int | None, typer.Option("-w", "--workers", help="Worker processes for offline compaction (default: the machine's cores). "
                                                "Output stays in input order. With an LLM summarizer, --jobs applies instead.",
                                                show_default=False)] = None,
    engine: Annotated[str, typer.Option("--engine", help="local (this machine: --workers processes) or ray (Ray Data: -o DIR/ gets JSONL "
                                        "shards; datasets of one transcript per line).")] = "local",
    ray_address: Annotated[str | None, typer.Option("--ray-address", help="With --engine ray: the cluster to join (default: start a local Ray).")] = None,
    *, io, budget, prune_raw, summary,
):
    """All five phases: prune, plan, summarize, assemble, repair. Offline unless an LLM is configured.

    Example: compactctl compact session.jsonl -o compacted.jsonl --archive removed.jsonl
    """
    from ..record import Compactor, Options, PhaseJob
    from ..summarizers.base import OfflineSummarizer

    if workers is not None and workers < 1:
        raise UsageError("--workers must be at least 1")
    if engine not in ("local", "ray"):
        raise UsageError("--engine must be local or ray")
    summarizer = api.make_summarizer(summary, budget.model, warn=None if io.quiet or engine == "ray" else warn)
    popts = prune_options(prune_raw, budget)
    b = budget.budget
    options = Options(model=budget.model, encoding=budget.encoding, tokenizer=budget.tokenizer, context_window=b.context_window,
                      threshold=b.threshold, tail_tokens=b.tail_tokens, protect_first=b.protect_first, summary_ratio=b.summary_ratio,
                      summary_min=b.summary_min, summary_max=b.summary_max, last_ask=b.last_ask, protect_tokens=popts.protect_tokens,
                      min_dedup_chars=popts.min_dedup_chars, arg_limit=popts.arg_limit, arg_keep=popts.arg_keep, dedup=popts.dedup,
                      summaries=popts.summaries, args=popts.args, images=popts.images,
                      count_tokens=bool(io.report or as_json),  # per-pass token savings only when a report shows them
                      focus=summary.focus, min_saving=summary.min_saving, force=summary.force, strip_unanswered=strip_unanswered,
                      to=io.fmt_to, fmt=io.fmt_from)
    offline = isinstance(summarizer, OfflineSummarizer)
    if engine == "ray":
        from .. import ray as cray

        if not offline:
            raise UsageError("--engine ray runs the offline summarizer only (use --summarizer offline)")
        if io.archive or io.resume:
            raise UsageError("--engine ray does not write --archive nor --resume: use the local engine for those")
        stats = cray.run_files(inputs or [], io.output, options, address=ray_address, workers=workers, report=io.report, rejects=io.rejects,
                               quiet=io.quiet)
        _say(io, f"ray: {stats['records']} records, {stats['errors']} errors, {stats['shards']} shard(s) in {io.output}")
        return
    compactor = Compactor(options, summarizer=summarizer, counter=budget.counter())
    io.jobs = summary.jobs
    io.workers = (workers or os.cpu_count() or 1) if offline else 1

    def work(t):
        oc = compactor.compact_transcript(t, on_cannot_fit="raise")  # the runner applies --on-error
        return Result(oc.transcript, oc.report, oc.archived)

    run(inputs or ["-"], io, work, "compact", job=PhaseJob(options) if offline else None,
        on_report=lambda rep: rep["status"] == "cannot-fit" or _report_line(io, rep, as_json))  # cannot-fit: warned already


@app.command()
@with_groups(IO)
def convert(inputs: Inputs = None, *, io):
    """Read transcripts and write them in another format (--to), changing nothing else.

    Example: compactctl convert ~/.claude/projects/x/session.jsonl --to openai > session.openai.jsonl
    """
    run(inputs or ["-"], io, lambda t: Result(t), "convert")


@app.command()
def restore(
    compacted: Annotated[str, typer.Argument(help="A file written by compact/prune/summarize/repair.")],
    archive: Annotated[str, typer.Option("--archive", help="The archive written by that same command.")],
    output: Annotated[str | None, typer.Option("-o", "--output", help="Write here instead of stdout.")] = None,
):
    """Rebuild the original transcripts from a compacted file and its archive.

    Example: compactctl compact s.jsonl -o c.jsonl --archive a.jsonl && compactctl restore c.jsonl --archive a.jsonl
    """
    api.restore_file(compacted, archive, output)


@app.command("eval")
@with_groups(BUDGET, SUMMARY)
def eval_(
    inputs: Annotated[list[str], typer.Argument(help="Original transcripts (files or directories).", show_default=False)],
    compacted: Annotated[str | None, typer.Option("--compacted", help="Score this compacted file (same transcripts, same order) instead of running strategies.")] = None,
    strategies: Annotated[str, typer.Option("--strategies", help="Comma-separated: compactctl, compactctl-llm, head-tail, masking.")] = "compactctl,head-tail,masking",
    ratio: Annotated[float, typer.Option("--ratio", help="Token budget of every strategy, as a share of each transcript's tokens.")] = 0.2,
    as_json: Annotated[bool, typer.Option("--json", help="Print rows and aggregates as JSON instead of tables.")] = False,
    *, budget, summary,
):
    """Measure what compaction keeps: probes (files, commands + exit codes, errors, constraints, last ask,
    identifiers) from what each strategy removed, scored against baselines at the same budget.

    Example: compactctl eval ~/.claude/projects/x/ --ratio 0.2
    """
    from .. import evaluate, formats

    counter = budget.counter()
    originals = list(formats.Reader(warn=warn).read(inputs))
    given = None
    if compacted is not None:
        given = dict(enumerate(formats.Reader(warn=warn).read([compacted])))
        if len(given) != len(originals):
            raise CompactError(f"{compacted} holds {len(given)} transcripts, the originals {len(originals)}")
    factory = (lambda: api.make_summarizer(summary, budget.model, warn=warn)) if "compactctl-llm" in strategies else None
    strats = {k: v for k, v in evaluate.strategies(counter, ratio, factory, budget.budget.last_ask, budget.budget.summary_min, budget.budget.summary_max,
                                                            budget.budget.summary_ratio).items() if k in strategies.split(",")}
    rows, agg = evaluate.run(originals, counter, strats, given)
    if as_json:
        print(orjson.dumps({"rows": rows, "aggregate": agg}).decode())
        return
    for name, rs in rows.items():
        for r in rs:
            print(f"{name:<15} {r['transcript']}: retention {r['retention']:.1%} of {r['probes']} probes, "
                  f"{r['tokens_before']:,} -> {r['tokens_after']:,} tokens ({r['reduction']:.1%} fewer){'' if r['valid'] else ', INVALID'}"
                  f"{', cannot fit' if r.get('error') else ''}")
    print()
    print(evaluate.table(agg))


def _report_line(io, rep: dict, as_json: bool) -> None:
    if as_json:
        print(orjson.dumps(rep).decode(), file=sys.stderr)
    elif not io.quiet:
        print(f"{rep['transcript']}: {rep['status']}: {rep['tokens_before']:,} -> {rep['tokens_after']:,} tokens"
              + (f" ({rep['summarizer']})" if rep.get("summarizer") else "") + (f"; {rep['reason']}" if rep.get("reason") and rep["status"] != "compacted" else ""),
              file=sys.stderr)


def main() -> None:
    try:
        app()  # standalone: typer handles --help and usage errors (exit 2)
    except CompactError as e:
        print(f"compactctl: error: {e}", file=sys.stderr)
        sys.exit(int(e.exit_code))
    except BrokenPipeError:
        sys.exit(0)
    except KeyboardInterrupt:
        sys.exit(130)
