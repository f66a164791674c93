"""The command line: options, reading, writing, exit codes. No logic: each command calls the library."""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from ..errors import CheckFailed, CompactError, Exit, UsageError
from .groups import BUDGET, IO, PRUNE, SUMMARY, input_bytes, prune_options
from .options import SETTINGS, with_groups
from .recall import HINT, REFS
from .recall import mcp as _mcp
from .recall import recall as _recall

if TYPE_CHECKING:
    from typer.models import CommandInfo

# Start-up matters (a hook runs the tool once per session file): each command imports the library,
# orjson and the runner when it runs, so `--help` and completion load only typer and the option tables.


@contextmanager
def exit_codes() -> Iterator[None]:
    """A CompactError becomes its documented exit code (errors.Exit), with its message on stderr; so does a
    standard output its reader closed (`| head`): an unwritable output, exit 4, whichever path was writing."""
    try:
        yield
    except CompactError as e:
        print(f"compactctl: error: {e}", file=sys.stderr)
        raise typer.Exit(int(e.exit_code)) from e
    except BrokenPipeError as e:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing more goes to it, not even at exit
        with contextlib.suppress(OSError):
            print("compactctl: error: standard output: its reader closed it (broken pipe)", file=sys.stderr)
        raise typer.Exit(int(Exit.IO)) from e


@contextmanager
def _loading() -> Iterator[None]:
    """A command's own imports (the library, orjson, the runner) load as entry.main loads the command line: no
    collection meanwhile, then what they made is frozen (issue 11: ~2 ms a process). Only in the process that
    main() runs, not in one that runs the app in-process (CliRunner), whose objects it must not freeze."""
    if not _PROCESS:
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


class _App(TyperGroup):
    """The top-level command group. Exit codes and the config-file defaults are applied here, inside
    the app, so that `CliRunner().invoke(app, args)` exits as the real process does."""

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        settings: dict = {}
        if "default_map" not in extra and not extra.get("resilient_parsing"):  # not while completing
            with exit_codes(), _loading():
                extra["default_map"], settings = _default_map(list(args))
        ctx = super().make_context(info_name, args, parent, **extra)
        ctx.meta[SETTINGS] = settings  # where each value of the default map came from, for the checks' messages
        return ctx

    def invoke(self, ctx: Any) -> Any:
        with exit_codes():
            return super().invoke(ctx)


app = typer.Typer(
    cls=_App,
    name="compactctl",
    help="Compact LLM-agent transcripts (JSONL) to a token budget, keeping what the agent needs to carry on.\n\n"
    "Example: compactctl compact session.jsonl -o compacted.jsonl",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help and errors, as in a pipe; main() turns rich on for a terminal
    context_settings={"help_option_names": ["-h", "--help"]},
)

Inputs = Annotated[
    list[str] | None,
    typer.Argument(help="JSONL files, directories (recursive *.jsonl, *.json, *.traj), or - for stdin (the default).", show_default=False),
]


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        print(f"compactctl {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", "-V", is_eager=True, callback=_version, help="Print the version and exit.")] = False,
) -> None:
    pass


def _check_workers(workers: int | None) -> None:
    if workers is not None and workers < 1:
        raise UsageError(f"--workers {workers}: must be at least 1")


def _workers(workers: int | None) -> int:
    """--workers, or the machine's cores."""
    return workers or os.cpu_count() or 1


def _say(io, msg: str) -> None:
    if not io.quiet:
        print(msg, file=sys.stderr)


@app.command()
@with_groups(IO, BUDGET, PRUNE, REFS)
def prune(
    inputs: Inputs = None,
    stats: Annotated[bool, typer.Option("--stats", help="Print what each pass saved, as JSON on stderr.")] = False,
    workers: Annotated[
        int | None,
        typer.Option(
            "-w",
            "--workers",
            help="Worker processes for a dataset (several transcripts; default: the machine's cores). "
            "Output, --stats and --archive stay in input order, the same bytes as with 1.",
            show_default=False,
        ),
    ] = None,
    *,
    io,
    budget,
    prune_raw,
    refs,
):
    """Phase 1: shrink old tool output with no LLM (dedup, one-line summaries, argument cuts, image placeholders).

    Example: compactctl prune session.jsonl --protect-tokens 4000 --stats > pruned.jsonl
    """
    with _loading():
        from ..runner import PruneJob, run

    _check_workers(workers)
    counter = budget.counter()  # an unknown encoding or a bad rank file fails here, before any worker starts
    opts = prune_options(prune_raw, budget)
    opts.count_tokens = stats
    opts.exact_totals = stats  # without --stats no token figure is shown: count only what pruning needs
    opts.refs = refs
    job = PruneJob(opts, counter.encoding, counter.approx, input_bytes(inputs or []), stats)
    io.workers = _workers(workers)
    run(inputs or ["-"], io, job.build(), "prune", job=job)


@app.command()
@with_groups(IO, BUDGET)
def plan(
    inputs: Inputs = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON on stdout instead of the annotated transcript.")] = False,
    *,
    io,
    budget,
):
    """Phase 2: choose head, middle and tail by exact token counts, and show it.

    Writes the transcript with each message's zone in a "_compactctl" annotation (for `summarize`),
    and a readable plan on stderr. Exit 5 when even head + tail + the minimum summary cannot fit.

    Example: compactctl prune session.jsonl | compactctl plan --context-window 32000
    """
    with _loading():
        import orjson

        from ..phases import plan as phase
        from ..runner import Result, run

    counter = budget.counter(inputs)

    def work(t):
        p = phase.plan_for_repair(t, counter, budget.budget)
        rep = {"transcript": t.id, "status": "planned", "plan": p.as_dict()}  # --report (the record API's shape)
        if as_json:
            return Result(None, rep, lines=[orjson.dumps(p.as_dict())])
        _say(io, p.describe())
        return Result(phase.annotate(t, p), rep)

    run(inputs or ["-"], io, work, "plan")


@app.command()
@with_groups(IO, BUDGET, SUMMARY, REFS, HINT)
def summarize(
    inputs: Inputs = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print each report as JSON on stderr.")] = False,
    *,
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
    with _loading():
        from .. import api
        from ..runner import Result, run, warn

    counter = budget.counter(inputs)
    summarizer = api.make_summarizer(summary, budget.model, warn=None if io.quiet else warn)
    io.jobs = summary.jobs

    sopts = api.SummarizeOptions(
        budget.budget,
        summary.focus,
        summary.min_saving,
        force=summary.force,
        refs=refs,
        recall_hint=recall_hint,
        instructions=summary.instructions,
    )

    def work(t):
        out, st = api.summarize(t, counter, summarizer, sopts)
        rep = api.summarize_report(t, st.tokens_before, st.tokens_after, st)
        _report_line(io, rep, as_json)
        return Result(out, rep, st.archived)

    run(inputs or ["-"], io, work, "summarize")


@app.command()
@with_groups(IO, BUDGET)
def repair(
    inputs: Inputs = None,
    check: Annotated[bool, typer.Option("--check", help="Only validate: print each violation, exit 6 if any.")] = False,
    strip_unanswered: Annotated[
        bool, typer.Option("--strip-unanswered", help="Remove calls that have no result instead of adding a stub result.")
    ] = False,
    *,
    io,
    budget,
):
    """Phase 5: make the transcript valid for the OpenAI and Anthropic APIs (tool pairs, placement, roles).

    Example: compactctl repair broken.jsonl -o fixed.jsonl ; compactctl repair --check fixed.jsonl
    """
    with _loading():
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
        rep = {"transcript": t.id, "status": "repaired", "repair": {k: v for k, v in vars(st).items() if k != "archived"}}
        return Result(out, rep, st.archived)

    from ..passthrough import repair_keeps

    # A record written as read (passthrough) makes no report line and no archive record (one that holds a summary
    # needs one, or restore takes it for another run's): with --report or --archive, every record is repaired.
    stats = run(inputs or ["-"], io, work, "repair", keeps=None if check or io.report or io.archive else repair_keeps)
    if check:
        bad = stats.skipped_lines + stats.rejected  # --on-error skip: not checked, in --rejects
        skipped = f" ({bad} bad record{'s' if bad != 1 else ''} skipped)" if bad else ""
        if violations:
            raise CheckFailed(f"{violations} violation(s) in {stats.transcripts} transcript(s){skipped}")
        _say(io, f"ok: {stats.transcripts} transcript(s), no violations{skipped}")


@app.command()
@with_groups(IO, BUDGET, PRUNE, SUMMARY, REFS, HINT)
def compact(
    inputs: Inputs = None,
    strip_unanswered: Annotated[
        bool, typer.Option("--strip-unanswered", help="Repair by removing unanswered calls instead of stubbing them.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print each report as JSON on stderr.")] = False,
    workers: Annotated[
        int | None,
        typer.Option(
            "-w",
            "--workers",
            help="Worker processes for offline compaction (default: the machine's cores). "
            "Output stays in input order. With an LLM summarizer, --jobs applies instead.",
            show_default=False,
        ),
    ] = None,
    engine: Annotated[
        str,
        typer.Option(
            "--engine",
            help="local (this machine: --workers processes) or ray (Ray Data: -o DIR/ gets one JSONL "
            "file per input; datasets of one transcript per line).",
        ),
    ] = "local",
    ray_address: Annotated[
        str | None, typer.Option("--ray-address", help="With --engine ray: the cluster to join (default: start a local Ray).")
    ] = None,
    *,
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
    with _loading():
        from .. import api
        from ..record import Compactor, Options, PhaseJob
        from ..runner import Result, run, warn
        from ..summarizers.base import OfflineSummarizer

    _check_workers(workers)
    if engine not in ("local", "ray"):
        raise UsageError("--engine must be local or ray")
    summarizer = api.make_summarizer(summary, budget.model, warn=None if io.quiet or engine == "ray" else warn)
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
        to=io.fmt_to,
        fmt=io.fmt_from,
        refs=refs,
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
        _say(io, f"ray: {stats['records']} records, {stats['errors']} errors, {stats['shards']} shard(s) in {io.output}")
        return
    compactor = Compactor(options, summarizer=summarizer, counter=budget.counter(inputs))
    io.jobs = summary.jobs
    io.workers = _workers(workers) if offline else 1

    def work(t):
        oc = compactor.compact_transcript(t, on_cannot_fit="raise")  # the runner applies --on-error
        return Result(oc.transcript, oc.report, oc.archived)

    def on_report(rep: dict) -> None:
        if rep["status"] != "cannot-fit":  # cannot-fit: warned already
            _report_line(io, rep, as_json)

    run(inputs or ["-"], io, work, "compact", job=PhaseJob(options) if offline else None, on_report=on_report)


@app.command()
@with_groups(IO)
def convert(inputs: Inputs = None, *, io):
    """Read transcripts and write them in another format (--to), changing nothing else.

    Example: compactctl convert ~/.claude/projects/x/session.jsonl --to openai > session.openai.jsonl
    """
    with _loading():
        from ..runner import Result, run

    run(inputs or ["-"], io, lambda t: Result(t), "convert", check_written=True)  # an output no API takes is said to be one


@app.command()
def restore(
    compacted: Annotated[str, typer.Argument(help="A file written by compact/prune/summarize/repair.")],
    archive: Annotated[str, typer.Option("--archive", help="The archive written by that same command.")],
    output: Annotated[str | None, typer.Option("-o", "--output", help="Write here instead of stdout.")] = None,
):
    """Rebuild the original transcripts from a compacted file and its archive.

    Example: compactctl compact s.jsonl -o c.jsonl --archive a.jsonl && compactctl restore c.jsonl --archive a.jsonl
    """
    from .. import api

    api.restore_file(compacted, archive, output)


@app.command("eval")
@with_groups(BUDGET, SUMMARY)
def eval_(
    inputs: Annotated[list[str], typer.Argument(help="Original transcripts (files or directories).", show_default=False)],
    continuation_only: Annotated[bool, typer.Option("--continuation", help="Only continuation scoring (needed-later facts).")] = False,
    probes_only: Annotated[bool, typer.Option("--probes", help="Only the probe eval (facts of what each strategy removed).")] = False,
    twice: Annotated[
        bool,
        typer.Option(
            "--twice",
            help="Continuation: also compact each transcript twice (at the first of --cuts, then, carried on, at the last) "
            "and score what the continuation after the last uses, against one compaction and head-tail.",
        ),
    ] = False,
    compacted: Annotated[
        str | None,
        typer.Option(
            "--compacted", help="Probe eval: score this compacted file (same transcripts, same order) instead of running strategies."
        ),
    ] = None,
    strategies: Annotated[
        str | None,
        typer.Option(
            "--strategies",
            help="Comma-separated. Continuation: compactctl, head-tail, recent, masking (default all). "
            "Probes: compactctl, compactctl-llm, head-tail, masking (default compactctl,head-tail,masking).",
            show_default=False,
        ),
    ] = None,
    cuts: Annotated[
        str, typer.Option("--cuts", help="Continuation: cut points, as fractions of each transcript's messages.")
    ] = "0.4,0.6,0.8",
    window_ratio: Annotated[
        float, typer.Option("--window-ratio", help="Continuation: compactctl's context window, as a share of each prefix's tokens.")
    ] = 0.4,
    explain: Annotated[
        int, typer.Option("--explain", help="Continuation: print N facts compactctl lost, where they were and where they were used.")
    ] = 0,
    ratio: Annotated[
        float, typer.Option("--ratio", help="Probes: token budget of every strategy, as a share of each transcript's tokens.")
    ] = 0.2,
    as_json: Annotated[bool, typer.Option("--json", help="Print rows and aggregates as JSON instead of tables.")] = False,
    *,
    budget,
    summary,
):
    """Measure what compaction keeps. Continuation scoring first: cut each transcript at --cuts, compact
    the prefix, and count the paths, identifiers, commands, URLs and values of the prefix that the
    continuation writes again and the compacted prefix still holds, against baselines at the same tokens.
    Then the probe eval (facts of what each strategy removed) as a second table.

    Example: compactctl eval ~/.claude/projects/x/ --cuts 0.4,0.6,0.8 --explain 10
    """
    from . import evaluation

    if continuation_only and (probes_only or compacted is not None):
        raise UsageError("--continuation cannot go with --probes or --compacted")
    if twice and (probes_only or compacted is not None):
        raise UsageError("--twice cannot go with --probes or --compacted")
    evaluation.check_options(cuts, window_ratio, ratio, explain)
    out = evaluation.measure(
        inputs,
        budget,
        summary,
        continuation=not probes_only and compacted is None,
        probes=not continuation_only,
        twice=twice,
        compacted=compacted,
        strategies=strategies,
        cuts=cuts,
        window_ratio=window_ratio,
        ratio=ratio,
    )
    evaluation.show(out, as_json=as_json, cuts=cuts, window_ratio=window_ratio, explain=explain, ratio=ratio)


def _settings(warn=None):
    from .. import config

    return config.resolve([(o.name, o.type, o.default) for g in (BUDGET, PRUNE, SUMMARY, REFS, HINT) for o in g.opts], warn=warn)


@app.command("config")
def config_(as_json: Annotated[bool, typer.Option("--json", help="Print the settings as JSON.")] = False):
    """Show the effective option defaults and where each comes from: the command line beats the
    environment (COMPACTCTL_<NAME>), which beats the project (compactctl.toml, or [tool.compactctl] in
    pyproject.toml, in this folder or a parent), which beats the user file (~/.config/compactctl/config.toml).

    Example: compactctl config --json
    """
    import orjson

    from .. import config
    from ..runner import warn

    settings = _settings(warn)
    if as_json:
        print(orjson.dumps({k: {"value": s.value, "source": s.source} for k, s in settings.items()}, option=orjson.OPT_INDENT_2).decode())
    else:
        width = max(map(len, settings))
        for k, s in settings.items():
            shown = "(none)" if s.value is None else orjson.dumps(s.value).decode()
            print(f"{k.replace('_', '-'):<{width}} = {shown:<12} # {s.source}")
    config.check(settings.values())  # shown first, then refused (exit 2) as the commands would refuse it


def _command_name(ci: CommandInfo) -> str:
    from typer.main import get_command_name

    assert ci.callback is not None  # every command here is registered with @app.command() on a function
    return ci.name or get_command_name(ci.callback.__name__)


def _default_map(argv: list[str]) -> tuple[dict | None, dict]:
    """Option defaults from the environment and config files, for the command being run, and the
    settings (config.Setting, with their sources) they came from."""
    if not argv or argv[0].startswith("-"):
        return None, {}
    import inspect

    ci = next((ci for ci in app.registered_commands if _command_name(ci) == argv[0]), None)
    takes = set(inspect.signature(ci.callback).parameters) if ci is not None and ci.callback is not None else set()
    if not takes & {o.name for g in (BUDGET, PRUNE, SUMMARY) for o in g.opts}:
        return None, {}  # a command without these options (convert, restore, config) does not read the files
    from ..runner import warn

    quiet = "-q" in argv or "--quiet" in argv
    chosen = {k: s for k, s in _settings(None if quiet else warn).items() if s.source != "default" and k in takes}
    return ({argv[0]: {k: s.value for k, s in chosen.items()}} if chosen else None), chosen


app.command("recall")(_recall)
app.command("mcp")(_mcp)


def _report_line(io, rep: dict, as_json: bool) -> None:
    if as_json:
        import orjson

        print(orjson.dumps(rep).decode(), file=sys.stderr)
    elif not io.quiet:
        print(
            f"{rep['transcript']}: {rep['status']}: {rep['tokens_before']:,} -> {rep['tokens_after']:,} tokens"
            + (f" ({rep['summarizer']})" if rep.get("summarizer") else "")
            + (f"; {rep['reason']}" if rep.get("reason") and rep["status"] != "compacted" else ""),
            file=sys.stderr,
        )


def app_for(argv: list[str]) -> typer.Typer:
    """The app to run for these arguments, built with only what they need: typer builds the click
    command, every parameter included, of each registered command at every start. A subcommand
    run gets an app with that command alone; the top-level help gets the commands without their
    parameters (it lists names and help only); anything else, completion included, the whole app."""
    import copy
    import inspect

    if os.environ.get("_COMPACTCTL_COMPLETE"):
        # zsh, fish and PowerShell completion show option help, which typer runs through rich to strip
        # markup; ours has none, and importing rich would double the time of every TAB press.
        from typer import _completion_classes

        _completion_classes._sanitize_help_text = lambda text: text
        return app
    names = {_command_name(ci): ci for ci in app.registered_commands}
    wanted = [a for a in argv if a in names]
    if (wanted and wanted[0] != argv[0]) or (not wanted and any(not a.startswith("-") for a in argv)):
        return app  # an option before the command, or no known command: the whole app parses it
    sub = copy.copy(app)
    if wanted:
        sub.registered_commands = [names[wanted[0]]]
        return sub

    def listed(name: str, ci):
        def stub() -> None:
            raise AssertionError("a command listed for help only was run")

        shown = copy.copy(ci)
        shown.name, shown.callback = name, stub
        shown.help = inspect.getdoc(ci.callback) if ci.help is None else ci.help
        return shown

    sub.registered_commands = [listed(n, ci) for n, ci in names.items()]
    return sub


def _terminated(signum: int, frame: Any) -> None:
    """SIGTERM ends a run as Ctrl-C does (temporary files removed; with -o, the parts and the journal kept for
    --resume), then exits 143 (128 + SIGTERM), as a process the signal ended."""
    global _TERMINATED
    _TERMINATED = True
    llm = sys.modules.get("compactctl.summarizers.llm")
    if llm is not None:
        llm.CANCEL.set()  # LLM calls in flight (--jobs) give up at once, as on Ctrl-C
    raise KeyboardInterrupt


_TERMINATED = False
_PROCESS = False  # main() runs this process (see _loading)


def main() -> None:
    import signal

    global _PROCESS
    _PROCESS = True

    # rich (~0.1 s to import) formats help and usage errors only for a terminal; piped, they are plain.
    if sys.stdout.isatty():
        app.rich_markup_mode = "rich"
    if sys.argv[1:2] != ["mcp"]:  # the MCP server reads stdin in a thread: SIGTERM ends it outright, as before
        signal.signal(signal.SIGTERM, _terminated)
    try:
        app_for(sys.argv[1:])()  # standalone: exit codes (errors.Exit, usage errors 2, Ctrl-C 130) come from the app
    except SystemExit as e:
        if _TERMINATED and e.code == 130:
            sys.exit(128 + signal.SIGTERM)
        raise
    except BrokenPipeError:
        sys.exit(0)
    except KeyboardInterrupt:  # before the app runs (while importing); inside it, typer exits 130 itself
        sys.exit(128 + signal.SIGTERM if _TERMINATED else 130)
