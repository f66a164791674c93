"""Render the CLI reference, docs/cli.md, from the app: `compactctl --help` and every command's `--help`.

    python docs/gen_cli.py           # rewrite docs/cli.md (make docs)
    python docs/gen_cli.py --check   # exit 1 when docs/cli.md is not what the app prints

Each help is the plain text the real command prints into a pipe (TYPER_USE_RICH=0, NO_COLOR, COLUMNS=100;
click caps help at 80 columns), rendered through typer's CliRunner in one fresh process started in an
empty folder with an empty HOME and no COMPACTCTL_* variables, so that config files and the environment
cannot change the defaults shown. tests/test_clidoc.py checks the committed file, and that real
`compactctl ... --help` processes print the same.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "cli.md"

HEADER = """# CLI reference

Generated from the app by `make docs` (`docs/gen_cli.py`): do not edit by hand. `tests/test_clidoc.py`
fails when this file is not what the commands print. See the README for examples and figures.
"""


def commands() -> list[str]:
    """The app's command names, in the order `compactctl --help` lists them."""
    from typer.main import get_command_name

    from compactctl.cli import app

    return [ci.name or get_command_name(ci.callback.__name__) for ci in app.registered_commands]


def _clean_env(home: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMPACTCTL_", "OPENAI_", "XDG_"))}
    env.update(
        HOME=home, XDG_CONFIG_HOME=home, XDG_CACHE_HOME=home, COLUMNS="100", LINES="50", TYPER_USE_RICH="0", NO_COLOR="1", TERM="dumb"
    )
    env.pop("FORCE_COLOR", None)
    return env


def _render_here() -> str:
    """Every help, rendered in this process (the one `render` starts, with a clean environment) through
    typer's CliRunner: the app's own output, as `compactctl ... --help` prints it into a pipe."""
    from typer.testing import CliRunner

    from compactctl.cli import app

    parts = [HEADER]
    for argv in [[], *([name] for name in commands())]:
        # 78 columns: what click gives a pipe with COLUMNS=100 (min(100, 80) - 2); CliRunner would force 80
        r = CliRunner().invoke(app, [*argv, "--help"], prog_name="compactctl", terminal_width=78)
        if r.exit_code != 0:
            raise SystemExit(f"compactctl {' '.join(argv)} --help failed ({r.exit_code}): {r.output}")
        text = "\n".join(line.rstrip() for line in r.stdout.strip("\n").split("\n"))
        parts.append(f"## {' '.join(['compactctl', *argv])}\n\n```text\n{text}\n```\n")
    return "\n".join(parts)


def real_help(argv: list[str], home: str) -> str:
    """What a real `compactctl ARGV --help` process prints into a pipe, run as `render` runs."""
    run = "import sys; sys.argv[0] = 'compactctl'; from compactctl.entry import main; main()"
    r = subprocess.run([sys.executable, "-c", run, *argv, "--help"], cwd=home, env=_clean_env(home), capture_output=True, timeout=120)
    if r.returncode != 0:
        raise SystemExit(f"compactctl {' '.join(argv)} --help failed ({r.returncode}): {r.stderr.decode(errors='replace')}")
    return "\n".join(line.rstrip() for line in r.stdout.decode().strip("\n").split("\n"))


def render() -> str:
    """One fresh process, in an empty folder with an empty HOME and no COMPACTCTL_* variables (option
    defaults are read at import and from config files), renders every help."""
    with tempfile.TemporaryDirectory(prefix="compactctl-clidoc-") as home:
        r = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--render-here"],
            cwd=home,
            env=_clean_env(home),
            capture_output=True,
            timeout=120,
        )
    if r.returncode != 0:
        raise SystemExit(f"rendering the CLI reference failed ({r.returncode}): {r.stderr.decode(errors='replace')}")
    return r.stdout.decode()


def main() -> int:
    if "--render-here" in sys.argv[1:]:
        sys.stdout.write(_render_here())
        return 0
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
