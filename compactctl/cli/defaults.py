"""Option defaults from config files and the environment (config.resolve), for the command being run: one
function for the typer app (typer_app._App.make_context) and the fast path (fast.py), so that both read them alike."""

from __future__ import annotations

from .groups import BUDGET, HINT, PRUNE, REFS, SUMMARY


def settings(warn=None):
    """Every setting (config.Setting by name) the config files and the environment give, or the built-in default."""
    from .. import config

    return config.resolve([(o.name, o.type, o.default) for g in (BUDGET, PRUNE, SUMMARY, REFS, HINT) for o in g.opts], warn=warn)


def default_map(argv: list[str], takes: set[str]) -> tuple[dict | None, dict]:
    """Option defaults from the environment and config files for the command argv[0], which takes the parameters
    `takes`, as click's default map ({command: {name: value}}, or None), and the settings (config.Setting, with their
    sources) they came from."""
    if not takes & {o.name for g in (BUDGET, PRUNE, SUMMARY) for o in g.opts}:
        return None, {}  # a command without these options (convert, restore, config) does not read the files
    from ..runner import warn

    quiet = "-q" in argv or "--quiet" in argv
    chosen = {k: s for k, s in settings(None if quiet else warn).items() if s.source != "default" and k in takes}
    return ({argv[0]: {k: s.value for k, s in chosen.items()}} if chosen else None), chosen
