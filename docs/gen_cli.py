"""Render the CLI reference, docs/cli.md, from the app: `compactctl --help` and every command's `--help`.

    python docs/gen_cli.py           # rewrite docs/cli.md (make docs)
    python docs/gen_cli.py --check   # exit 1 when docs/cli.md is not what the app prints

Each help is the plain text the real command prints into a pipe (TYPER_USE_RICH=0, NO_COLOR, COLUMNS=100;
click caps help at 80 columns), run in an empty folder with an empty HOME and no COMPACTCTL_* variables,
so that config files and the environment cannot change the defaults shown. tests/test_clidoc.py checks
the committed file.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "cli.md"
RUN = "import sys; sys.argv[0] = 'compactctl'; from compactctl.entry import main; main()"

HEADER = """# CLI reference

Generated from the app by `make docs` (`docs/gen_cli.py`): do not edit by hand. `tests/test_clidoc.py`
fails when this file is not what the commands print. See the README for examples and figures.
"""


def commands() -> list[str]:
    """The app's command names, in the order `compactctl --help` lists them."""
    from typer.main import get_command_name

    from compactctl.cli import app

    return [ci.name or get_command_name(ci.callback.__name__) for ci in app.registered_commands]


def help_text(argv: list[str], home: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMPACTCTL_", "OPENAI_", "XDG_"))}
    env.update(
        HOME=home, XDG_CONFIG_HOME=home, XDG_CACHE_HOME=home, COLUMNS="100", LINES="50", TYPER_USE_RICH="0", NO_COLOR="1", TERM="dumb"
    )
    env.pop("FORCE_COLOR", None)
    r = subprocess.run([sys.executable, "-c", RUN, *argv, "--help"], cwd=home, env=env, capture_output=True, timeout=120)
    if r.returncode != 0:
        raise SystemExit(f"compactctl {' '.join(argv)} --help failed ({r.returncode}): {r.stderr.decode(errors='replace')}")
    return "\n".join(line.rstrip() for line in r.stdout.decode().strip("\n").split("\n"))


def render() -> str:
    parts = [HEADER]
    with tempfile.TemporaryDirectory(prefix="compactctl-clidoc-") as home:
        for argv in [[], *([name] for name in commands())]:
            title = " ".join(["compactctl", *argv])
            parts.append(f"## {title}\n\n```text\n{help_text(argv, home)}\n```\n")
    return "\n".join(parts)


def main() -> int:
    text = render()
    if "--check" in sys.argv[1:]:
        if OUT.is_file() and OUT.read_text(encoding="utf-8") == text:
            return 0
        print(f"{OUT.relative_to(ROOT)} is not what the app prints: run make docs", file=sys.stderr)
        return 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
