"""Option defaults from config files and the environment (config.resolve), for the command being run: one
function for the typer app (typer_app._App.make_context) and the fast path (fast.py), so that both read them alike."""

from __future__ import annotations

from .groups import BUDGET, HINT, IO, PRUNE, REFS, SUMMARY

# Settings besides the groups' options, as (name, type, built-in default): --on-error (the IO group's, which the
# commands reading transcripts take) and --workers (prune's and compact's own option: an integer, none by default,
# the machine's cores). A command that does not take one (plan has no --workers) is given none of it (default_map).
OTHERS = [*((o.name, o.type, o.default) for o in IO.opts if o.name == "on_error"), ("workers", int, None)]
NAMES = {o.name for g in (BUDGET, PRUNE, SUMMARY, REFS, HINT) for o in g.opts} | {name for name, _, _ in OTHERS}


def settings(warn=None, only: set[str] | None = None):
    """Every setting (config.Setting by name) the config files and the environment give, or the built-in default;
    with `only`, those of a command's options (the others are not read: config.resolve)."""
    from .. import config

    opts = [(o.name, o.type, o.default) for g in (BUDGET, PRUNE, SUMMARY, REFS, HINT) for o in g.opts]
    return config.resolve([*opts, *OTHERS], warn=warn, only=only)


def default_map(argv: list[str], takes: set[str]) -> tuple[dict | None, dict]:
    """Option defaults from the environment and config files for the command argv[0], which takes the parameters
    `takes`, as click's default map ({command: {name: value}}, or None), and the settings (config.Setting, with their
    sources) they came from."""
    if not takes & NAMES:
        return None, {}  # a command without these options (restore, recall, mcp, config) does not read the files
    from ..runner import warn

    quiet = "-q" in argv or "--quiet" in argv
    chosen = {k: s for k, s in settings(None if quiet else warn, takes & NAMES).items() if s.source != "default"}
    return ({argv[0]: {k: s.value for k, s in chosen.items()}} if chosen else None), chosen
