"""Option groups shared by the subcommands, injected by one decorator so that every phase takes the
same budget and model options, with the same defaults, as `compact`. Options are data (Opt): typer's signature
of a command is built from them (`typed`, once typer is loaded) and so is the fast path's table (fast.py), which
parses the phase commands' command lines without importing typer (issue 11: start-up)."""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Annotated, Any

from ..lean import dataclass

if TYPE_CHECKING:
    import inspect

# Every option value of the running command, flat (before the groups are built): what the output depends on.
PARAMS: ContextVar[dict[str, Any] | None] = ContextVar("compactctl_params", default=None)
# The click context's meta key of the settings (config.Setting by name) the config files and the environment gave.
SETTINGS = "compactctl.settings"
_CTX = "compactctl_ctx"  # the keyword of the click context the wrapper of a command takes


@dataclass
class Opt:
    """One command-line option (of a group, or a command's own): its parameter name, type, default, flags and
    help. No flags (decls empty): the command's positional argument."""

    name: str
    type: Any
    default: Any
    decls: tuple[str, ...]
    help: str


@dataclass
class Group:
    """Options that commands share, built into one object (`build`) that the command receives."""

    name: str  # the keyword the command receives
    title: str  # help panel
    opts: list[Opt]
    build: Callable[..., Any]


_built: dict[int, list[inspect.Parameter]] = {}


def _parameters(g: Group) -> list[inspect.Parameter]:
    """A group's parameters, built once and shared by the commands that take it (typer copies the
    option info it reads), which saves start-up time."""
    if id(g) not in _built:
        _built[id(g)] = [_parameter(o, g.title) for o in g.opts]
    return _built[id(g)]


def _parameter(o: Opt, panel: str | None) -> inspect.Parameter:
    """The option as typer reads it: a keyword parameter annotated with typer.Option (typer.Argument without flags)."""
    import inspect

    import typer

    shown = o.default not in (None, False)
    info = (
        typer.Option(*o.decls, help=o.help, rich_help_panel=panel, show_default=shown)
        if o.decls
        else typer.Argument(help=o.help, show_default=shown)
    )
    return inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default, annotation=Annotated[o.type, info])


@dataclass
class Spec:
    """What a command built by with_groups takes, as data: its own options (`own`, first) and its groups."""

    own: tuple[Opt, ...]
    groups: tuple[Group, ...]

    @property
    def opts(self) -> list[Opt]:
        """Every option the command takes, in the order typer passes them (its signature's)."""
        return [*self.own, *(o for g in self.groups for o in g.opts)]


SPEC = "compactctl_spec"  # the attribute of a with_groups command that holds its Spec


def with_groups(*groups: Group, own: tuple[Opt, ...] = ()):
    """The command takes these groups, each built into one object (Group.build) under the group's name, and its own
    options `own`, each as a keyword of its own. Its parameters not named by either (typer's Annotated) are kept.
    The typer signature is built by `typed` when the app is (typer_app.py): importing a command imports no typer."""
    checked = [*(o for o in own if o.decls), *(o for g in groups for o in g.opts)]  # the options, --workers too (not INPUTS)

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(**kw):
            ctx = kw.pop(_CTX, None)
            PARAMS.set(dict(kw))
            check(checked, kw, ctx)
            for g in groups:
                kw[g.name] = g.build(**{o.name: kw.pop(o.name) for o in g.opts})
            return fn(**kw)

        setattr(wrapper, SPEC, Spec(tuple(own), groups))
        return wrapper

    return deco


def typed(command: Callable) -> Callable:
    """Give a with_groups command the signature typer reads: its own parameters, its own options and its groups'
    (typer.Option annotations), and the click context. Others are returned as they are. The function's annotation of
    an own option must be the Opt's type (mypy checks the body against it; this, that the two agree)."""
    spec = getattr(command, SPEC, None)
    if spec is None or "__signature__" in vars(command):
        return command
    import inspect

    import typer

    fn = command.__wrapped__  # type: ignore[attr-defined]  # functools.wraps
    sig = inspect.signature(fn)
    hints = typing.get_type_hints(fn, include_extras=True, localns={"typer": typer})
    for o in spec.own:
        if hints.get(o.name, o.type) != o.type:
            raise TypeError(f"{fn.__name__}: {o.name} is annotated {hints[o.name]}, its option says {o.type}")
    named = {g.name for g in spec.groups} | {o.name for o in spec.own}
    kept = [p.replace(annotation=_annotated(hints.get(p.name, p.annotation))) for p in sig.parameters.values() if p.name not in named]
    context = inspect.Parameter(_CTX, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)  # typer passes it
    params = kept + [_parameter(o, None) for o in spec.own] + [p for g in spec.groups for p in _parameters(g)] + [context]
    command.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    return command


def _annotated(hint: Any) -> Any:
    """The hint as Python 3.11+ gives it: 3.10's get_type_hints wraps `Annotated[T | None, typer.Argument()] = None`
    in Optional[...], and typer, which reads only the outer type, would not see the Argument (every command lost its
    file arguments)."""
    if typing.get_origin(hint) is typing.Union and type(None) in typing.get_args(hint):
        inner = [a for a in typing.get_args(hint) if typing.get_origin(a) is typing.Annotated]
        if len(inner) == 1:
            return inner[0]
    return hint


def _flag(o: Opt) -> str:
    return max((d.split("/")[0] for d in o.decls), key=len)


def check(opts: list[Opt], values: dict[str, Any], ctx: Any = None) -> None:
    """The effective values of these options, wherever each came from (the command line, or the
    default map the config files and the environment filled), checked against config.LIMITS. `ctx`: the click
    context, or the fast path's stand-in (fast.Context), which answers the same two questions."""
    from .. import config

    given = ctx.meta.get(SETTINGS, {}) if ctx is not None else {}
    settings = []
    for o in opts:
        if o.name not in config.LIMITS:
            continue
        source = getattr(ctx.get_parameter_source(o.name) if ctx is not None else None, "name", "COMMANDLINE")
        if source == "DEFAULT_MAP" and o.name in given:
            settings.append(given[o.name])
        else:
            settings.append(config.Setting(o.name, values[o.name], "default" if source == "DEFAULT" else "flag"))
    config.check(settings, {o.name: _flag(o) for o in opts})
