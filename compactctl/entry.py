"""The `compactctl` command's entry point: answers `--version` without loading anything, then hands
over to compactctl.cli.main (which loads the typer app)."""

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

    # Start-up (issue 11): no collection while the command line loads (nothing it makes is garbage), then what it
    # made is frozen: no later collection walks it, nor the one at exit (~10 ms a process). cli.main loads the rest
    # (typer, the commands) the same way (shared.loading).
    gc.disable()
    try:
        from .cli import main as cli_main
    finally:
        gc.freeze()
        gc.enable()
    cli_main()
