"""docs/cli.md is what the app prints: regenerated here and compared with the committed file."""

from __future__ import annotations

import importlib.util

from .conftest import ROOT


def _gen():
    spec = importlib.util.spec_from_file_location("gen_cli", ROOT / "docs" / "gen_cli.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_cli_reference_is_current():
    gen = _gen()
    text = gen.render()
    names = gen.commands()
    assert len(names) >= 10 and "compact" in names
    for name in names:  # every command has its section, with its real usage line
        assert f"## compactctl {name}\n\n```text\nUsage: compactctl {name} [OPTIONS]" in text, name
    committed = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert committed == text, "docs/cli.md is not what the app prints: run make docs (and commit docs/cli.md)"


def test_real_processes_print_the_rendered_help(tmp_path):
    """The reference is rendered in process (CliRunner); the real command, started as a user starts it
    (the slim start-up app, help into a pipe), prints the same."""
    gen = _gen()
    committed = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for argv in ([], ["compact"], ["eval"]):
        section = f"## {' '.join(['compactctl', *argv])}\n\n```text\n{gen.real_help(argv, str(tmp_path))}\n```\n"
        assert section in committed, argv
