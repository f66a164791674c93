"""The `compactctl` command's entry point: answers `--version` without loading anything, then hands
over to the typer app (compactctl.cli)."""

from __future__ import annotations

import os
import sys


def main() -> None:
    if sys.argv[1:] in (["--version"], ["-V"]):
        from . import __version__

        try:
            print(f"compactctl {__version__}", flush=True)
        except BrokenPipeError:  # `compactctl --version | true`
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return
    import gc

    # Start-up (issue 11): no collection while typer and the command line load (nothing they make is garbage),
    # then what they made is frozen: no later collection walks it, nor the one at exit (~10 ms a process).
    gc.disable()
    try:
        from .cli import main as cli_main
    finally:
        gc.freeze()
        gc.enable()
    cli_main()
