"""The typer app and its commands. No logic: each command calls the library (the phases' commands are in
phases.py, eval's work in evaluation.py, recall and mcp in recall.py, what they share in shared.py). The process
(signals, exit codes, the fast path of the phase commands that does without this module) is cli/__init__.py's main."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from ..errors import UsageError
from . import defaults, phases
from .groups import BUDGET, IO, SUMMARY
from .options import SETTINGS, typed, with_groups
from .recall import mcp as _mcp
from .recall import recall as _recall
from .shared import INPUTS, exit_codes, loading

if TYPE_CHECKING:
    from typer.models import CommandInfo


class _App(TyperGroup):
    """The top-level command group. Exit codes and the config-file defaults are applied here, inside
    the app, so that `CliRunner().invoke(app, args)` exits as the real process does."""

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        settings: dict = {}
        if "default_map" not in extra and not extra.get("resilient_parsing"):  # not while completing
            with exit_codes(typer.Exit), loading():
                extra["default_map"], settings = _default_map(list(args))
        ctx = super().make_context(info_name, args, parent, **extra)
        ctx.meta[SETTINGS] = settings  # where each value of the default map came from, for the checks' messages
        return ctx

    def invoke(self, ctx: Any) -> Any:
        with exit_codes(typer.Exit):
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


for _command in (phases.prune, phases.plan, phases.summarize, phases.repair, phases.compact):
    app.command()(_command)


@app.command()
@with_groups(IO, own=(INPUTS,))
def convert(*, inputs: list[str] | None, io):
    """Read transcripts and write them in another format (--to), changing nothing else.

    Example: compactctl convert ~/.claude/projects/x/session.jsonl --to openai > session.openai.jsonl
    """
    with loading():
        from ..runner import Result, run

    def work(t):  # --report: a line per transcript, with what the target could not hold (`not_carried`)
        return Result(t, {"transcript": t.id, "status": "converted"})

    run(inputs or ["-"], io, work, "convert", check_written=True)  # an output no API takes is said to be one


@app.command()
def restore(
    compacted: Annotated[str, typer.Argument(help="A file written by compact/prune/summarize/repair.")],
    archive: Annotated[
        list[str],
        typer.Option(
            "--archive",
            help="The archive written by that same command. For a chain's stages (prune --archive a1 | ... | repair "
            "--archive a3), give each, in the order they were written: the last is undone first.",
        ),
    ],
    output: Annotated[str | None, typer.Option("-o", "--output", help="Write here instead of stdout.")] = None,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="Accepted as by every command (restore writes no notes).")] = False,
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
            "and score what the continuation after the last uses, against one compaction, head-tail and head-tail-fill.",
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
            help="Comma-separated. Continuation: compactctl, head-tail, head-tail-fill, recent, masking (default all). "
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
    if explain and (probes_only or compacted is not None):
        raise UsageError("--explain lists facts continuation scoring lost: it cannot go with --probes or --compacted")
    evaluation.check_options(
        cuts, window_ratio, ratio, explain, strategies, continuation=not probes_only and compacted is None, probes=not continuation_only
    )
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

    settings = defaults.settings(warn)
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
    return defaults.default_map(argv, takes)


app.command("recall")(_recall)
app.command("mcp")(_mcp)
for _ci in app.registered_commands:
    if _ci.callback is not None:
        typed(_ci.callback)  # the with_groups commands' signatures, as typer reads them (options.typed)


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
