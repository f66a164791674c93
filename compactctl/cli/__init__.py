"""The command line: the process's `main` (signals, exit codes). A phase command run with an ordinary command line
takes the fast path (fast.py: no typer); anything else, the typer app (typer_app.py, loaded only then:
`compactctl.cli.app` and `compactctl.cli.app_for` are the app's)."""

from __future__ import annotations

import sys
from typing import Any

from . import shared


def __getattr__(name: str) -> Any:
    """`from compactctl.cli import app`: the typer app, imported on first use (importing this package imports no typer)."""
    if name in ("app", "app_for"):
        from . import typer_app

        return getattr(typer_app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _interrupted(signum: int, frame: Any) -> None:
    """Ctrl-C (SIGINT) or SIGTERM ends a run (temporary files removed; with -o, the parts and the journal kept for
    --resume), then exits 130, or 143 (128 + SIGTERM) as a process the signal ended. Once: the signals that come
    while the run ends are ignored, to its exit code. `timeout` sends its signal twice (to the process, then to its
    group), and a second KeyboardInterrupt cut that end short: a run with --workers waited for its workers forever."""
    import signal

    global _TERMINATED, _ENDING
    if _ENDING:  # a second signal while this handler runs
        return
    _ENDING = True
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.SIG_IGN)  # not a handler that returns: Python resets those to the default as it exits
    _TERMINATED = signum == signal.SIGTERM
    llm = sys.modules.get("compactctl.summarizers.llm")
    if llm is not None:
        llm.CANCEL.set()  # LLM calls in flight (--jobs) give up at once, as on Ctrl-C
    raise KeyboardInterrupt


_TERMINATED = False  # ended by SIGTERM: exit 143
_ENDING = False  # a signal was taken: the run is ending


def main() -> None:
    import signal

    shared.run_by_main()
    sys.stderr = shared.Stderr(sys.stderr)  # a reader of stderr that leaves (`2>&1 | head`) ends nothing
    if sys.stdout is None:  # started with stdout closed (`>&-`)
        sys.stdout = shared.ClosedStdout()

    if sys.argv[1:2] != ["mcp"]:  # the MCP server reads stdin in a thread: SIGTERM ends it outright, as before
        signal.signal(signal.SIGINT, _interrupted)
        signal.signal(signal.SIGTERM, _interrupted)
    try:
        with shared.loading():
            from . import fast

            parsed = fast.parse(sys.argv[1:])
        if parsed is not None:
            fast.run(parsed)  # exits as the app would
        with shared.loading():
            from .typer_app import app, app_for
        # rich (~0.1 s to import) formats help and usage errors only for a terminal; piped, they are plain.
        if sys.stdout.isatty():
            app.rich_markup_mode = "rich"
        app_for(sys.argv[1:])()  # standalone: exit codes (errors.Exit, usage errors 2, Ctrl-C 130) come from the app
    except SystemExit as e:
        if _TERMINATED and e.code == 130:
            sys.exit(128 + signal.SIGTERM)
        raise
    except BrokenPipeError:
        sys.exit(0)
    except KeyboardInterrupt:  # before the app runs (while importing); inside it, typer exits 130 itself
        sys.exit(128 + signal.SIGTERM if _TERMINATED else 130)
