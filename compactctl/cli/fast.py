"""The phase commands' fast path (issue 11: start-up). A hook or a CI step runs one `compactctl compact FILE -o OUT`
per session file, and typer (click included: its import, building the command, parsing) was ~25 ms of each ~95 ms
run (the rest of typer's ~45 ms import is the standard library, which the library loads anyway). prune, plan,
summarize, repair and compact run with an ordinary command line are parsed here, without typer: from the same
declarations typer's signature is built from (options.Spec), with the same default map (defaults.default_map), and
the command receives the same keywords and parameter sources as under typer (tests/test_fast.py checks both).

Whatever it is not sure click reads the same way, it declines (parse gives None) before anything has run, and
typer parses the command line as before: help, completion, `--`, bundled or attached short options (-qo x, -ox),
an unknown option, a flag given a value, a missing value or one starting with '-' (but '-' itself), a value the
option's type refuses. So every help text and every usage error, with its wording, stays typer's."""

from __future__ import annotations

import os
import sys
import types
import typing
from enum import Enum
from typing import Any, NoReturn

from ..lean import dataclass
from .options import SETTINGS, SPEC, Opt

COMMANDS = ("prune", "plan", "summarize", "repair", "compact")


class Source(Enum):
    """Where a value came from, named as click's ParameterSource names them (options.check reads the name)."""

    COMMANDLINE = "commandline"
    DEFAULT_MAP = "default_map"
    DEFAULT = "default"


class Context:
    """What a command reads of click's context (options.check): the settings the default map came from, and the
    source of each value."""

    def __init__(self, settings: dict, sources: dict[str, Source]) -> None:
        self.meta = {SETTINGS: settings}
        self._sources = sources

    def get_parameter_source(self, name: str) -> Source | None:
        return self._sources.get(name)


@dataclass
class Parsed:
    """A command line the fast path reads as typer would: the command (with_groups' wrapper), its arguments, its
    options in typer's order, and the values the command line gave them (converted, by name)."""

    command: Any
    argv: list[str]
    opts: list[Opt]
    given: dict[str, Any]


def parse(argv: list[str]) -> Parsed | None:
    """`argv` (a command and its arguments) read as typer would read it, or None: typer reads it."""
    if os.name == "nt" or not argv or argv[0] not in COMMANDS or _completing():
        return None  # typer expands wildcards on Windows; completion is typer's
    from . import phases

    command = getattr(phases, argv[0])
    opts = getattr(command, SPEC).opts
    scanned = _scan(argv[1:], flags(opts))
    if scanned is None:
        return None
    raw, positional = scanned
    by_name = {o.name: o for o in opts}
    try:
        given = {name: _converted(by_name[name], values) for name, values in raw.items()}
    except ValueError:
        return None  # a value the option's type refuses: typer says so, its way
    if positional:
        given[next(o.name for o in opts if not o.decls)] = positional
    return Parsed(command, argv, opts, given)


def _completing() -> bool:
    """The shell completion's variable, _{PROG}_COMPLETE (typer names it after the program as it was started)."""
    return any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ)


def flags(opts: list[Opt]) -> dict[str, tuple[Opt, bool | None]]:
    """Each flag of these options, with the value it stores: True or False for a boolean flag (--refs, --no-refs),
    None for an option that takes the next argument."""
    out: dict[str, tuple[Opt, bool | None]] = {}
    for o in opts:
        is_flag = kind(o.type)[0] is bool
        for decl in o.decls:
            on, _, off = decl.partition("/")
            out[on] = (o, True if is_flag else None)
            if off:
                out[off] = (o, False)
    return out


def kind(hint: Any) -> tuple[Any, bool]:
    """An option's type without None, and whether it is repeatable: `int | None` is (int, False), `list[str] | None`
    (str, True)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        (hint,) = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) is list:
        return typing.get_args(hint)[0], True
    return hint, False


def _scan(args: list[str], table: dict[str, tuple[Opt, bool | None]]) -> tuple[dict[str, list], list[str]] | None:
    """The raw values of each option given (by name, in order) and the positional arguments, as click's parser reads
    them; None where it would read them otherwise or refuse them."""
    raw: dict[str, list] = {}
    positional: list[str] = []
    rest = iter(args)
    for arg in rest:
        if arg == "-" or not arg.startswith("-"):
            positional.append(arg)  # click too: interspersed with the options, '-' (stdin) included
            continue
        # --name=value: click splits a long option at its first '='; a short one (-o=x: the value '=x') is declined
        name, eq, attached = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name not in table:
            return None  # unknown, -h/--help, --, -qo (bundled), -ox (attached)
        opt, const = table[name]
        if const is not None:
            if eq:
                return None  # a flag given a value: typer's usage error
            raw.setdefault(opt.name, []).append(const)
            continue
        value = attached if eq else next(rest, None)
        if value is None or (value.startswith("-") and value != "-"):
            return None  # missing; or an option's name, which click would take as the value
        raw.setdefault(opt.name, []).append(value)
    return raw, positional


def _converted(o: Opt, values: list) -> Any:
    """An option's value from its raw values, as click and typer convert it: a repeatable option's list, else the last
    one given (click keeps only the last, and converts only it). ValueError where click's type refuses it."""
    base, many = kind(o.type)
    if many:
        return [_one(base, v) for v in values]
    return _one(base, values[-1])


def _one(base: Any, value: Any) -> Any:
    if base is bool or base is str:
        return value  # a flag's stored value; a string as given
    if base is int or base is float:
        return base(value)  # click's INT and FLOAT: int(value), float(value) (' 12', '1_000', '+3', 'nan' alike)
    if isinstance(base, type) and issubclass(base, Enum) and value in [m.value for m in base]:
        return base(value)  # typer's choice: exactly a value (case-sensitive), then that member
    raise ValueError(f"{value!r} for {base}: for typer to say")


def keywords(p: Parsed, defaults: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Source]]:
    """The command's keywords and their sources: the command line's value, else the default map's (the config
    files and the environment: `defaults`), else the option's default, as click's consume_value takes them."""
    kwargs: dict[str, Any] = {}
    sources: dict[str, Source] = {}
    for o in p.opts:
        if o.name in p.given:
            kwargs[o.name], sources[o.name] = p.given[o.name], Source.COMMANDLINE
        elif defaults.get(o.name) is not None:
            kwargs[o.name], sources[o.name] = _from_map(o, defaults[o.name]), Source.DEFAULT_MAP
        else:
            kwargs[o.name], sources[o.name] = o.default, Source.DEFAULT
    return kwargs, sources


def _from_map(o: Opt, value: Any) -> Any:
    """A default map's value (config._coerce gave it the option's type) as typer passes it: a member of an Enum, a
    repeatable option's list (None for an empty one where the default is None: typer's generate_list_convertor)."""
    base, many = kind(o.type)
    if many:
        return None if o.default is None and not value else list(value)
    return base(value) if isinstance(base, type) and issubclass(base, Enum) else value


def run(p: Parsed) -> NoReturn:
    """Run the command as the app runs it (typer_app._App, typer.core._main): the default map first (an error in a
    config file is said before the command line is looked at), then the command; exit codes and messages as typer's."""
    from .defaults import default_map
    from .shared import exit_codes, loading

    try:
        with exit_codes(), loading():
            dmap, settings = default_map(p.argv, {o.name for o in p.opts})
        kwargs, sources = keywords(p, (dmap or {}).get(p.argv[0], {}))
        with exit_codes():
            p.command(**kwargs, compactctl_ctx=Context(settings, sources))
    except KeyboardInterrupt as e:
        raise SystemExit(130) from e  # typer: Exit(130)
    except EOFError:
        _aborted()
    raise SystemExit(0)  # typer: ctx.exit()


def _aborted() -> NoReturn:
    """An EOFError ends a run as typer.core._main ends it: a blank line, then "Aborted!" on stderr (rich's form where
    main() turns rich on, on a terminal), exit 1. Rare enough to load typer for."""
    from gettext import gettext as _

    from typer import _click, core

    _click.echo(file=sys.stderr)
    if core.HAS_RICH and sys.stdout.isatty():
        from typer import rich_utils

        rich_utils.rich_abort_error()
    else:
        _click.echo(_("Aborted!"), file=sys.stderr)
    raise SystemExit(1)
