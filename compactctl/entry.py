"""The `compactctl` command's entry point: answers `--version` without loading anything, then hands
over to the typer app (compactctl.cli)."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] in (["--version"], ["-V"]):
        from . import __version__

        print(f"compactctl {__version__}")
        return
    from .cli import main as cli_main

    cli_main()
