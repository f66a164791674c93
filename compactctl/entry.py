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
    from .cli import main as cli_main

    cli_main()
