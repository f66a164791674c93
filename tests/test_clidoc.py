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


def test_the_readmes_demo_line_is_what_make_demo_prints(tmp_path):
    """README's opening quotes the line `make demo` prints; a change to the summary moves its token count, and the
    README said 3,980 for a run that printed 3,972. The command here is the Makefile's demo command."""
    import re
    import shlex

    from .conftest import cli

    recipe = re.search(r"^demo:.*\n\t\$\(BIN\)/compactctl (compact [^\n]+)", (ROOT / "Makefile").read_text(), re.M)
    assert recipe, "the Makefile's demo target runs compactctl compact"
    args = [a.replace("/tmp/", f"{tmp_path}/") for a in shlex.split(recipe.group(1))]
    r = cli(*args)
    assert r.returncode == 0, r.stderr
    printed = r.stderr.decode().strip().splitlines()[-1]
    quoted = re.search(r"`make demo` prints\n`([^`]+)`", (ROOT / "README.md").read_text(encoding="utf-8"))
    assert quoted and quoted.group(1) == printed


def test_the_readmes_plan_example_is_what_plan_prints():
    """README's plan section quotes what `prune | plan` prints for the long sample at an 8k window; the twenty-ninth
    session's digests (their quoted lines) moved it, and the README still said 13,852 tokens for a run that printed
    17,485."""
    import re
    import shlex

    from .conftest import cli

    block = re.search(
        r"```sh\n\$ (compactctl prune [^|\n]+) \| (compactctl plan [^>\n]+) > planned\.jsonl\n(.*?)\n```",
        (ROOT / "README.md").read_text(encoding="utf-8"),
        re.S,
    )
    assert block, "the README's plan example"
    pruned = cli(*shlex.split(block.group(1))[1:], cwd=ROOT)
    assert pruned.returncode == 0, pruned.stderr
    planned = cli(*shlex.split(block.group(2))[1:], input=pruned.stdout, cwd=ROOT)
    assert planned.returncode == 0, planned.stderr
    assert planned.stderr.decode().strip() == block.group(3)
