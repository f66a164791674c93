"""The phase commands' fast path (compactctl/cli/fast.py, issue 11), in process: its option table is what typer
declares, and every command line it takes gives the command the keywords and parameter sources typer gives it, with
the same default map from config files and the environment; an error in a command ends as typer ends it. Real
processes (imports, exit codes and messages): tests/test_fast_process.py."""

from __future__ import annotations

import contextlib
import io
import os
from enum import Enum
from pathlib import Path
from unittest import mock

import pytest
import typer.main
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from compactctl.cli import app, app_for, fast, options, phases
from compactctl.cli.options import SETTINGS, SPEC

from .conftest import tool_session, write_jsonl


def _opts(name: str) -> list[options.Opt]:
    return getattr(getattr(phases, name), SPEC).opts


# click's parameter types the fast path converts as they do (exactly these: a range or a custom type converts otherwise)
CLICK_TYPES = {int: "IntParamType", float: "FloatParamType", str: "StringParamType", bool: "BoolParamType"}


@pytest.mark.parametrize("name", fast.COMMANDS)
def test_the_fast_table_is_what_typer_declares(name):
    group = typer.main.get_command(app)
    cmd = group.commands[name]
    opts = _opts(name)
    assert [o.name for o in opts] == [p.name for p in cmd.params]
    declared: dict[str, tuple[str, bool | None]] = {}
    for o, p in zip(opts, cmd.params, strict=True):
        base, many = fast.kind(o.type)
        assert (p.param_type_name == "argument") == (not o.decls), o.name
        if p.param_type_name == "argument":
            assert p.nargs == -1 and many and not p.required, o.name
        else:
            assert p.nargs == 1 and p.multiple == many and not p.count and not p.required, o.name
            assert p.is_flag == (base is bool), o.name
            declared.update({s: (p.name, True if p.is_flag else None) for s in p.opts})
            declared.update({s: (p.name, False) for s in p.secondary_opts})
        assert p.default == o.default and type(p.default) is type(o.default), o.name
        assert not p.is_eager and p.callback is None and p.envvar is None and p.expose_value, o.name
        if isinstance(base, type) and issubclass(base, Enum):
            assert type(p.type).__name__ == "TyperChoice" and list(p.type.choices) == [m.value for m in base], o.name
            assert p.type.case_sensitive, o.name
        else:
            assert type(p.type).__name__ == CLICK_TYPES[base], o.name
    assert {flag: (o.name, const) for flag, (o, const) in fast.flags(opts).items()} == declared
    for flag, (o, const) in fast.flags(opts).items():  # what each flag stores, as click parses it alone
        if const is not None:
            assert cmd.make_context(name, [flag]).params[o.name] is const, flag
    # How click reads the line: options anywhere among the files, no unknown one let through; no context setting
    # (token normalizing, auto envvars...) but help's, -h and --help, which the table does not hold (declined).
    assert cmd.allow_interspersed_args and not cmd.ignore_unknown_options and not cmd.allow_extra_args
    assert cmd.context_settings == {} and group.context_settings == {"help_option_names": ["-h", "--help"]}
    assert not {"-h", "--help"} & set(declared)
    # Nothing typer does around the command that the fast path does not: no help for no arguments (a phase reads
    # stdin), no deprecation warning, a bug's traceback the interpreter's own.
    assert not cmd.no_args_is_help and not cmd.deprecated and app.pretty_exceptions_enable is False


class Captured(Exception):
    """Raised in place of options.check: what the command received (keywords with their types, each value's source,
    the settings of the default map), before it does anything. Values as their repr: --min-saving nan is NaN on both
    paths, and NaN is equal to nothing."""


def _capture(checked, kw, ctx):
    given = {k: repr(s) for k, s in ctx.meta.get(SETTINGS, {}).items()}
    raise Captured([(k, type(v), repr(v)) for k, v in kw.items()], {k: ctx.get_parameter_source(k).name for k in kw}, given)


def _under_typer(argv: list[str]) -> tuple:
    """What the typer app makes of `argv` (as main() runs it: app_for), in this process."""
    r = CliRunner().invoke(app_for(argv), argv, prog_name="compactctl")
    if isinstance(r.exception, Captured):
        return ("ran", r.exception.args, r.stderr)
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exc_info
    return ("exit", r.exit_code, r.stdout, r.stderr)


def _on_fast_path(argv: list[str]) -> tuple | None:
    """What the fast path makes of `argv`, in this process; None: it declines (typer reads it)."""
    parsed = fast.parse(argv)
    if parsed is None:
        return None
    out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            fast.run(parsed)
        except Captured as c:
            return ("ran", c.args, err.getvalue())
        except SystemExit as e:
            out.flush()
            return ("exit", e.code, out.buffer.getvalue().decode(), err.getvalue())  # type: ignore[attr-defined]
    raise AssertionError("fast.run returned")


# Settings a config file gives (TOML as written), and the environment, drawn from for each command line.
CONFIG = {
    "context-window": "9000",
    "threshold": "0.4",
    "tokenizer": '"approx"',
    "keep-tool": '["Read", "Bash"]',
    "no-dedup": "true",
    "refs": "false",
    "summarizer": '"offline"',
    "protect_first": "2",
    "recall-hint": "true",
    "jobs": "0",  # out of range: the command's check would refuse it (captured before)
    "model": '"gpt-4"',
    "min-saving": "1",  # an integer where a number goes: 1.0
    "unknown-key": "1",  # warned about, on stderr (compared)
    "drop-tool": "[]",  # an empty list: a list to the command, not None
    "workers": "3",  # prune's and compact's own option; plan, summarize and repair leave it alone
    "on-error": '"skip"',  # an Enum's member to the command
}
ENV = {
    "COMPACTCTL_ARG_LIMIT": "100",
    "COMPACTCTL_DROP_TOOL": "x,y",
    "COMPACTCTL_MIN_SAVING": "0.2",
    "COMPACTCTL_RECALL_HINT": "1",
    "COMPACTCTL_THRESHOLD": "0.3",
    "COMPACTCTL_TOKENIZER": "approx",
    "COMPACTCTL_REFS": "no",
    "COMPACTCTL_LLM_CONTEXT": "abc",  # not a number: a usage error naming the variable
    "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    "COMPACTCTL_KEEP_TOOL": ",",  # an empty list
    "COMPACTCTL_WORKERS": "0",  # out of range: the command's check would refuse it (captured before)
    "COMPACTCTL_ON_ERROR": "skip",
}

POSITIONAL = ["a.jsonl", "-", "dir/", "x=y", "", " ", "ä.jsonl"]
# Tokens the fast path declines, or that click reads otherwise than as an option and its value.
ODD = ["--bogus", "-x", "-qo", "-o=x", "-ox", "-o-", "--", "-h", "--help", "--quiet=1", "--no-refs=1", "---", "--output="]
ODD += ["-V", "--version", "--stat", "--json=", "-", "--install-completion", "-q-"]
VALUES = {
    int: ["0", "5", "8000", "1_000", " 12", "12 ", "+3", "-1", "1e3", "", "abc", "0x10", "١٢", "3.0", "-", "_1"],
    float: ["0.5", "1", "nan", "inf", "-0.1", "1e-3", " 0.2", "1_0.5", ".5", "abc", "", "1,5", "+.5", "-", "٣.٥", "infinity"],
    str: ["out.jsonl", "-", "", "a=b", "--x", "-x", "gpt-4o", "ä", "--help", "dir/"],
}
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=3)


def _values(o: options.Opt) -> st.SearchStrategy[str]:
    base, _ = fast.kind(o.type)
    if isinstance(base, type) and issubclass(base, Enum):
        pool = [m.value for m in base] + [m.value.upper() for m in base] + ["x", ""]
    else:
        pool = VALUES[base]
    return st.one_of(st.sampled_from(pool), st.sampled_from(pool), TEXT)


def _option(table: dict, flag: str) -> st.SearchStrategy[list[str]]:
    o, const = table[flag]
    if const is not None:
        return st.sampled_from([[flag], [flag], [flag], [flag + "=1"]])
    if flag.startswith("--"):
        return _values(o).flatmap(lambda v: st.sampled_from([[flag, v], [flag + "=" + v]]))
    return _values(o).map(lambda v: [flag, v])


@st.composite
def command_lines(draw) -> list[str]:
    name = draw(st.sampled_from(fast.COMMANDS))
    table = fast.flags(_opts(name))
    known = st.sampled_from(sorted(table)).flatmap(lambda f: _option(table, f))
    piece = st.one_of(*[known] * 7, st.sampled_from(POSITIONAL).map(lambda p: [p]), st.sampled_from(ODD).map(lambda t: [t]))
    return [name, *(token for part in draw(st.lists(piece, max_size=8)) for token in part)]


@pytest.fixture(scope="module")
def place(tmp_path_factory) -> Path:
    """A folder to run in, without config files above it (the one under test is written per example)."""
    return tmp_path_factory.mktemp("fast")


@contextlib.contextmanager
def _setting(place: Path, config: list[str], env: list[str], broken: bool):
    """Run in `place` with these config-file keys and environment variables (and no others), options.check captured."""
    toml = place / "compactctl.toml"
    toml.write_text("threshold = [\n" if broken else "".join(f"{k} = {CONFIG[k]}\n" for k in config))
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("COMPACTCTL_", "OPENAI_", "_"))}
    environ.update({k: ENV[k] for k in env}, XDG_CONFIG_HOME=str(place / "no-user-config"))
    old = os.getcwd()
    os.chdir(place)
    try:
        with mock.patch.dict(os.environ, environ, clear=True), mock.patch.object(options, "check", _capture):
            yield
    finally:
        os.chdir(old)


def _same(argv: list[str], place: Path, config=(), env=(), broken=False) -> bool:
    """The fast path declines `argv`, or gives the command what typer gives it (or exits as typer exits). Whether it
    took it."""
    with _setting(place, list(config), list(env), broken):
        got = _on_fast_path(argv)
        if got is None:
            return False
        assert got == _under_typer(argv), argv
    return True


@settings(max_examples=500, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    argv=command_lines(),
    config=st.lists(st.sampled_from(sorted(CONFIG)), unique=True, max_size=5),
    env=st.lists(st.sampled_from(sorted(ENV)), unique=True, max_size=3),
    broken=st.integers(0, 19).map(lambda i: i == 0),
)
@example(
    argv=["compact", "a.jsonl", "--keep-tool", "x", "--refs", "--no-refs", "-j", " 2"], config=["keep-tool", "refs"], env=[], broken=False
)
@example(argv=["summarize", "--tokenizer=approx", "-", "--threshold", "abc", "--threshold", "0.25"], config=[], env=[], broken=False)
@example(
    argv=["prune", "-q", "--context-window", "1_000"], config=["unknown-key", "context-window"], env=["COMPACTCTL_ARG_LIMIT"], broken=False
)
@example(argv=["plan", "--output=", "--on-error", "skip"], config=[], env=["COMPACTCTL_LLM_CONTEXT"], broken=False)
@example(argv=["compact", "--min-saving", "nan"], config=[], env=[], broken=False)
@example(argv=["prune", "--context-window", "0x10", "--protect-tokens", "0o7"], config=[], env=[], broken=False)  # int(v), not int(v, 0)
@example(argv=["compact", "a.jsonl"], config=["drop-tool"], env=["COMPACTCTL_KEEP_TOOL"], broken=False)  # empty lists
@example(argv=["plan", "a.jsonl"], config=["workers", "on-error"], env=["COMPACTCTL_WORKERS"], broken=False)  # not plan's
@example(argv=["prune", "a.jsonl", "-w", "2"], config=["workers"], env=["COMPACTCTL_ON_ERROR"], broken=False)
def test_the_fast_path_gives_the_command_what_typer_gives(place, argv, config, env, broken):
    event("fast path" if _same(argv, place, config, env, broken) else "declined")


ORDINARY = [
    ["compact"],
    ["compact", "s.jsonl", "-o", "out.jsonl"],
    ["compact", "s.jsonl", "-o", "out/", "--archive", "a.jsonl", "--context-window", "8000", "-q", "--json"],
    ["compact", "-", "--summarizer", "offline", "--keep-tool", "Read", "--keep-tool", "Bash", "--drop-tool=web", "-w", "2"],
    ["compact", "a.jsonl", "b.jsonl", "--no-refs", "--recall-hint", "--threshold=0.4", "--min-saving", "0", "-m", "gpt-4"],
    ["prune", "s.jsonl", "--protect-tokens", "4000", "--stats"],
    ["prune", "--refs", "--prune-all", "--on-error", "skip", "--rejects", "r.jsonl", "-q"],
    ["plan", "--context-window", "32000", "--json"],
    ["plan", "--last-ask", "tail", "--tokenizer", "approx", "--tail-tokens", "0"],
    ["summarize", "--focus", "the parser", "--instructions", "i.txt", "-j", "4", "--timeout", "30"],
    ["repair", "--check", "fixed.jsonl"],
    ["repair", "broken.jsonl", "-o", "fixed.jsonl", "--strip-unanswered", "--report", "rep.jsonl"],
]


@pytest.mark.parametrize("argv", ORDINARY, ids=" ".join)
@pytest.mark.parametrize("with_config", [False, True], ids=["defaults", "config"])
def test_ordinary_command_lines_take_the_fast_path(argv, with_config, place):
    config, env = (
        (
            ["threshold", "keep-tool", "tokenizer", "refs", "workers"],
            ["COMPACTCTL_ARG_LIMIT", "COMPACTCTL_DROP_TOOL", "COMPACTCTL_ON_ERROR"],
        )
        if with_config
        else ((), ())
    )
    assert _same(argv, place, config, env)


DECLINED = [
    ["compact", "--help"],
    ["compact", "s.jsonl", "-h"],
    ["compact", "--", "-s.jsonl"],
    ["compact", "-qo", "out.jsonl"],
    ["compact", "-oout.jsonl"],
    ["compact", "-o=out.jsonl"],
    ["compact", "--bogus"],
    ["compact", "--quiet=1"],
    ["compact", "-o"],
    ["compact", "-o", "-q"],
    ["compact", "--output=-x"],
    ["compact", "--context-window", "8k"],
    ["compact", "--context-window", "8000", "--context-window", "8k"],
    ["compact", "--on-error", "Skip"],
    ["compact", "--version"],
    ["eval", "s.jsonl"],
    ["--version"],
    [],
]


@pytest.mark.parametrize("argv", DECLINED, ids=" ".join)
def test_the_fast_path_declines_what_typer_should_read(argv):
    assert fast.parse(argv) is None


def test_completion_is_typers(monkeypatch):
    monkeypatch.setenv("_COMPACTCTL_COMPLETE", "complete_bash")
    assert fast.parse(["compact", "s.jsonl"]) is None


@pytest.mark.parametrize("exc, code", [(EOFError, 1), (KeyboardInterrupt, 130)], ids=["eof", "ctrl-c"])
def test_an_eof_or_an_interrupt_ends_the_command_as_under_typer(exc, code, tmp_path, monkeypatch):
    """typer.core._main: an EOFError is a blank line and "Aborted!" (exit 1); Ctrl-C exit 130 (main() makes SIGTERM's 143)."""
    from compactctl.phases import repair

    def interrupted(*a, **k):
        raise exc

    monkeypatch.setattr(repair, "repair", interrupted)
    monkeypatch.chdir(tmp_path)
    argv = ["repair", str(write_jsonl(tmp_path / "s.jsonl", tool_session(2, 100)))]
    expected = _under_typer(argv)
    assert expected[:2] == ("exit", code)
    assert _on_fast_path(argv) == expected


def test_the_commands_own_options_are_typed_as_their_bodies_say():
    """options.typed refuses an own option whose function annotation is not the Opt's type."""
    bad = options.with_groups(own=(options.Opt("n", int, 0, ("--n",), "n"),))(_annotated_str)
    with pytest.raises(TypeError, match="n is annotated"):
        options.typed(bad)


def _annotated_str(*, n: str):
    return n
