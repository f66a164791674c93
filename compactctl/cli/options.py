"""Option groups shared by the subcommands, injected by one decorator so that every phase takes the
same budget and model options, with the same defaults, as `compact`."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from contextvars import ContextVar
from typing import Annotated, Any

import typer

from ..lean import dataclass

# Every option value of the running command, flat (before the groups are built): what the output depends on.
PARAMS: ContextVar[dict[str, Any] | None] = ContextVar("compactctl_params", default=None)
# The click context's meta key of the settings (config.Setting by name) the config files and the environment gave.
SETTINGS = "compactctl.settings"
_CTX = "compactctl_ctx"  # the keyword of the click context the wrapper of a command takes


@dataclass
class Opt:
    """One command-line option of a group: its parameter name, type, default, flags and help."""

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
        _built[id(g)] = _build_parameters(g)
    return _built[id(g)]


def _build_parameters(g: Group) -> list[inspect.Parameter]:
    return [
        inspect.Parameter(
            o.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=o.default,
            annotation=Annotated[
                o.type, typer.Option(*o.decls, help=o.help, rich_help_panel=g.title, show_default=o.default not in (None, False))
            ],
        )
        for o in g.opts
    ]


def with_groups(*groups: Group):
    checked = [o for g in groups for o in g.opts]

    def deco(fn):
        sig = inspect.signature(fn)
        hints = typing.get_type_hints(fn, include_extras=True)
        own = [
            p.replace(annotation=_annotated(hints.get(p.name, p.annotation)))
            for p in sig.parameters.values()
            if p.name not in {g.name for g in groups}
        ]
        extra = [p for g in groups for p in _parameters(g)]
        context = inspect.Parameter(_CTX, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)  # typer passes it

        @functools.wraps(fn)
        def wrapper(**kw):
            ctx = kw.pop(_CTX, None)
            PARAMS.set(dict(kw))
            check(checked, kw, ctx)
            for g in groups:
                kw[g.name] = g.build(**{o.name: kw.pop(o.name) for o in g.opts})
            return fn(**kw)

        params = own + extra + [context]
        wrapper.__signature__ = sig.replace(parameters=params)
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        return wrapper

    return deco


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


def check(opts: list[Opt], values: dict[str, Any], ctx: typer.Context | None = None) -> None:
    """The effective values of these options, wherever each came from (the command line, or the
    default map the config files and the environment filled), checked against config.LIMITS."""
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
