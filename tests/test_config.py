"""Config files and environment defaults, `compactctl config`, --version, completion, the start-up app."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from compactctl import __version__, config
from compactctl.errors import UsageError

from .conftest import cli, proc, write_jsonl

OPTS = [
    ("model", str, "gpt-4o"),
    ("context_window", int, None),
    ("threshold", float, 0.5),
    ("base_url", str, None),
    ("no_cache", bool, False),
    ("jobs", int, 1),
]


def _resolve(cwd, env, warnings=None):
    return config.resolve(OPTS, cwd=cwd, environ=env, warn=(warnings.append if warnings is not None else None))


def test_precedence_env_over_project_over_user_over_default(tmp_path):
    user_dir = tmp_path / "xdg"
    (user_dir / "compactctl").mkdir(parents=True)
    (user_dir / "compactctl" / "config.toml").write_text('model = "gpt-4.1"\ncontext-window = 1000\nthreshold = 0.9\njobs = 3\n')
    proj = tmp_path / "proj"
    (proj / "a" / "b").mkdir(parents=True)
    (proj / "compactctl.toml").write_text("context_window = 2000\nthreshold = 0.8\n")
    env = {"XDG_CONFIG_HOME": str(user_dir), "COMPACTCTL_THRESHOLD": "0.7"}
    s = _resolve(proj / "a" / "b", env)
    assert (s["model"].value, s["model"].source) == ("gpt-4.1", f"user:{user_dir / 'compactctl' / 'config.toml'}")
    assert (s["context_window"].value, s["context_window"].source) == (2000, f"project:{proj / 'compactctl.toml'}")
    assert (s["threshold"].value, s["threshold"].source) == (0.7, "env:COMPACTCTL_THRESHOLD")
    assert (s["jobs"].value, s["no_cache"].value, s["no_cache"].source) == (3, False, "default")
    assert s["base_url"].value is None


def test_pyproject_table_and_nearest_folder(tmp_path):
    root = tmp_path / "root"
    sub = root / "sub"
    sub.mkdir(parents=True)
    (root / "compactctl.toml").write_text("context_window = 1\n")
    (sub / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.compactctl]\ncontext-window = 32000\nno-cache = true\n')
    s = _resolve(sub, {"XDG_CONFIG_HOME": str(tmp_path / "none")})
    assert s["context_window"].value == 32000 and s["no_cache"].value is True
    assert s["context_window"].source == f"project:{sub / 'pyproject.toml'} [tool.compactctl]"
    # A pyproject.toml without the table does not stop the walk; a compactctl.toml beside it wins.
    (sub / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert _resolve(sub, {})["context_window"].value == 1
    (sub / "pyproject.toml").write_text("[tool.compactctl]\ncontext_window = 5\n")
    (sub / "compactctl.toml").write_text("context_window = 6\n")
    assert _resolve(sub, {})["context_window"].value == 6


def test_a_folder_on_the_way_up_that_may_not_be_searched_is_an_error_not_skipped(tmp_path, monkeypatch):
    """A review found the walk (on os.path) passing over such a folder, where a nearer compactctl.toml would win,
    and using the one further up without a word (the pathlib walk before it was a traceback)."""
    (tmp_path / "compactctl.toml").write_text("context_window = 1\n")
    sub = tmp_path / "locked" / "sub"
    sub.mkdir(parents=True)
    real = os.stat

    def denied(p, *a, **k):
        if os.fspath(p).startswith(os.fspath(tmp_path / "locked")):
            raise PermissionError(13, "Permission denied", os.fspath(p))
        return real(p, *a, **k)

    monkeypatch.setattr(os, "stat", denied)
    with pytest.raises(UsageError, match=r"cannot read .*locked/sub/compactctl\.toml: .*Permission denied"):
        _resolve(sub, {"XDG_CONFIG_HOME": str(tmp_path / "none")})


def test_a_pyproject_that_cannot_be_read_is_a_usage_error_naming_it(tmp_path, monkeypatch):
    """Read before parsing (to tell whether it may hold the table): that read fails as the parse's does, not as a
    traceback (there before the os.path walk too)."""
    (tmp_path / "pyproject.toml").write_text("[tool.compactctl]\ncontext_window = 1\n")

    def denied(path, *a, **k):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(config, "open", denied, raising=False)
    with pytest.raises(UsageError, match=r"cannot read .*pyproject\.toml: .*Permission denied"):
        _resolve(tmp_path, {"XDG_CONFIG_HOME": str(tmp_path / "none")})


@pytest.mark.parametrize(
    "text",
    [
        "[tool.compactctl]\ncontext_window = 7000\n",
        '[ "tool" . compactctl ]\ncontext_window = 7000\n',
        "tool.compactctl.context_window = 7000\n",
        "[tool]\ncompactctl = { context_window = 7000 }\n",
        "tool = { compactctl = { context_window = 7000 } }\n",
        "[tool]\ncompactctl.context_window = 7000\n",
    ],
)
def test_every_spelling_of_the_pyproject_table_is_read(tmp_path, text):
    (tmp_path / "pyproject.toml").write_text(text)
    assert _resolve(tmp_path, {"XDG_CONFIG_HOME": str(tmp_path / "none")})["context_window"].value == 7000


def test_a_pyproject_that_only_names_the_package_is_not_parsed(tmp_path):
    # A dependency and a script named compactctl, and invalid TOML after them: not parsed, so no error.
    (tmp_path / "pyproject.toml").write_text(
        '[project]\ndependencies = ["compactctl>=1"]\n[project.scripts]\ncompactctl = "compactctl.entry:main"\n[x\n'
    )
    assert _resolve(tmp_path, {"XDG_CONFIG_HOME": str(tmp_path / "none")})["context_window"].source == "default"
    (tmp_path / "pyproject.toml").write_text("[tool.compactctl]\n[x\n")
    with pytest.raises(UsageError, match="invalid TOML"):
        _resolve(tmp_path, {"XDG_CONFIG_HOME": str(tmp_path / "none")})


def test_secrets_are_refused_and_unknown_keys_warned(tmp_path):
    (tmp_path / "compactctl.toml").write_text(
        'api_key = "sk-live-123"\nopenai-api-key = "x"\nbogus = 1\nbase_url = "http://u:p@127.0.0.1:1/v1"\n'
    )
    warnings: list[str] = []
    s = _resolve(tmp_path, {}, warnings)
    assert "api_key" not in s and "openai_api_key" not in s
    text = "\n".join(warnings)
    assert "ignoring 'api_key'" in text and "ignoring 'openai-api-key'" in text and "OPENAI_API_KEY" in text
    assert "unknown setting 'bogus'" in text
    assert "base_url carries credentials" in text
    assert "sk-live-123" not in text


@pytest.mark.parametrize(
    "content, what",
    [
        ('threshold = "high"\n', "threshold"),
        ("jobs = 1.5\n", "jobs"),
        ("no_cache = 3\n", "no_cache"),
        ("context_window = [\n", "invalid TOML"),
    ],
)
def test_bad_values_are_usage_errors(tmp_path, content, what):
    (tmp_path / "compactctl.toml").write_text(content)
    with pytest.raises(UsageError, match=what):
        _resolve(tmp_path, {})


def test_env_values_are_checked(tmp_path):
    with pytest.raises(UsageError, match="COMPACTCTL_JOBS"):
        _resolve(tmp_path, {"COMPACTCTL_JOBS": "many"})
    assert _resolve(tmp_path, {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})["base_url"].source == "env:OPENAI_BASE_URL"


def run_in(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return cli(*args, env=env, cwd=cwd)


def test_cli_uses_config_defaults_and_flags_win(tmp_path):
    src = write_jsonl(tmp_path / "s.jsonl", [{"role": "user", "content": "hello"}])
    (tmp_path / "compactctl.toml").write_text("context-window = 10000\nthreshold = 0.4\n")
    target = lambda r: orjson.loads(r.stdout)["target"]
    assert target(run_in(tmp_path, "plan", "--json", str(src))) == 4000
    assert target(run_in(tmp_path, "plan", "--json", str(src), env={"COMPACTCTL_THRESHOLD": "0.2"})) == 2000
    assert target(run_in(tmp_path, "plan", "--json", str(src), "--threshold", "0.3", env={"COMPACTCTL_THRESHOLD": "0.2"})) == 3000
    r = run_in(tmp_path, "config", "--json", env={"COMPACTCTL_THRESHOLD": "0.2"})
    shown = orjson.loads(r.stdout)
    assert shown["context_window"] == {"value": 10000, "source": f"project:{tmp_path / 'compactctl.toml'}"}
    assert shown["threshold"] == {"value": 0.2, "source": "env:COMPACTCTL_THRESHOLD"}
    assert shown["model"]["source"] == "default"
    text = run_in(tmp_path, "config").stdout.decode()
    assert "context-window" in text and "10000" in text and f"# project:{tmp_path / 'compactctl.toml'}" in text
    (tmp_path / "compactctl.toml").write_text("threshold = 7\n")
    bad = run_in(tmp_path, "plan", str(src))
    assert bad.returncode == 2 and b"threshold" in bad.stderr  # the value is checked like the flag


def test_version_fast_path_and_typer_path():
    r = subprocess.run([sys.executable, "-m", "compactctl", "--version"], capture_output=True, timeout=60)
    assert r.stdout.decode() == f"compactctl {__version__}\n"
    from typer.testing import CliRunner

    from compactctl.cli import app

    res = CliRunner().invoke(app, ["-V"])
    assert res.exit_code == 0 and res.output == f"compactctl {__version__}\n"


def _help(argv: list[str]) -> str:
    from typer.testing import CliRunner

    from compactctl.cli import app, app_for

    full = CliRunner().invoke(app, argv, prog_name="compactctl")
    slim = CliRunner().invoke(app_for(argv), argv, prog_name="compactctl")
    assert full.exit_code == slim.exit_code == 0
    assert slim.output == full.output
    return slim.output


def test_start_up_app_gives_the_same_help():
    top = _help(["--help"])
    for name in ("prune", "plan", "summarize", "repair", "compact", "convert", "restore", "eval", "config"):
        assert re.search(rf"\b{name}\b", top)
    assert "--version" in top and "--install-completion" in top
    assert "--context-window" in _help(["compact", "--help"])
    from compactctl.cli import app, app_for

    assert app_for(["compact", "x.jsonl"]).registered_commands[0].callback.__name__ == "compact"
    assert app_for(["nonsense"]) is app


def test_help_does_not_import_the_library_or_rich(tmp_path):
    code = (
        "import sys; sys.argv = ['compactctl', '--help']\n"
        "from compactctl.entry import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "bad = [m for m in ('rich', 'openai', 'tqdm', 'tiktoken', 'compactctl.api', 'compactctl.phases.prune', 'orjson', 'pydantic') if m in sys.modules]\n"
        "print(bad, file=sys.stderr)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert r.stderr.decode().strip().splitlines()[-1] == "[]"
    code = code.replace("'--help'", "'compact', sys.argv[1]").replace(", 'compactctl.api', 'compactctl.phases.prune', 'orjson'", "")
    small = write_jsonl(tmp_path / "s.jsonl", [{"role": "user", "content": "Fix the failing test in tests/test_api.py, please."}])
    r = subprocess.run([sys.executable, "-c", code, str(small)], capture_output=True, timeout=120)
    assert r.stderr.decode().strip().splitlines()[-1] == "[]"


def test_a_pruning_compact_loads_no_openssl(tmp_path):
    """The digests and references of pruned outputs are BLAKE2b from CPython's `_blake2`: importing hashlib loads
    OpenSSL (~3 ms a process) for nothing here."""
    rows = [{"role": "user", "content": "Fix the failing test in tests/test_api.py, please."}]
    for i in range(12):
        rows.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": '{"command": "pytest -q"}'}}],
            }
        )
        rows.append(
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"run {i}\n" + "FAILED tests/test_api.py::test_x - AssertionError\n" * 400}
        )
    rows.append({"role": "user", "content": "and now?"})
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    code = (
        "import sys; sys.argv = ['compactctl', 'compact', sys.argv[1], '--context-window', '3000', '--refs', '-o', sys.argv[2]]\n"
        "from compactctl.entry import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('hashlib' in sys.modules, '_hashlib' in sys.modules, file=sys.stderr)"
    )
    out = tmp_path / "out.jsonl"
    for _ in range(2):  # the first run may build (and check by sha256) this test's rank cache
        r = subprocess.run([sys.executable, "-c", code, str(src), str(out)], capture_output=True, timeout=120)
    assert "[ref " in out.read_text()  # it did prune and refer
    assert r.stderr.decode().strip().splitlines()[-1] == "False False"


def test_bash_completion():
    exe = Path(sys.executable).parent / "compactctl"
    if not exe.exists():
        pytest.skip("the compactctl script is not installed beside this Python")
    env = {**os.environ, "_COMPACTCTL_COMPLETE": "complete_bash", "COMP_WORDS": "compactctl compact --context-w", "COMP_CWORD": "2"}
    r = subprocess.run([str(exe)], capture_output=True, env=env, timeout=60)
    assert r.stdout.decode().split() == ["--context-window"]
    env.update(COMP_WORDS="compactctl con", COMP_CWORD="1")
    assert sorted(subprocess.run([str(exe)], capture_output=True, env=env, timeout=60).stdout.decode().split()) == ["config", "convert"]


def test_commands_without_these_options_ignore_a_broken_config(tmp_path):
    src = write_jsonl(tmp_path / "s.jsonl", [{"role": "user", "content": "hello"}])
    out, archive = tmp_path / "c.jsonl", tmp_path / "a.jsonl"
    assert run_in(tmp_path, "compact", str(src), "-o", str(out), "--archive", str(archive)).returncode == 0
    (tmp_path / "compactctl.toml").write_text("threshold = [\n")
    assert run_in(tmp_path, "restore", str(out), "--archive", str(archive)).returncode == 0
    assert run_in(tmp_path, "repair", str(src)).returncode == 2  # repair takes the budget options
    assert run_in(tmp_path, "convert", str(src)).returncode == 2  # convert takes --on-error, a setting


def test_a_bad_value_of_a_setting_a_command_does_not_take_leaves_it_alone(tmp_path):
    """`COMPACTCTL_WORKERS=abc` stopped `plan` and `convert` (neither takes --workers), and a project file's
    `threshold = "0.4"` stopped `convert` (which reads the files for --on-error alone): a command reads only the
    settings it takes (helper 166's review). One that takes them still says what is wrong, and where."""
    src = write_jsonl(tmp_path / "s.jsonl", [{"role": "user", "content": "hello"}])
    env = _cfg_env(tmp_path, COMPACTCTL_WORKERS="abc")
    assert run_in(tmp_path, "plan", str(src), env=env).returncode == 0
    assert run_in(tmp_path, "convert", str(src), env=env).returncode == 0
    bad = run_in(tmp_path, "prune", str(src), env=env)
    assert bad.returncode == 2 and b"COMPACTCTL_WORKERS" in bad.stderr
    (tmp_path / "compactctl.toml").write_text('threshold = "0.4"\non-error = "skip"\n')
    assert run_in(tmp_path, "convert", str(src), env=_cfg_env(tmp_path)).returncode == 0
    bad = run_in(tmp_path, "repair", str(src), env=_cfg_env(tmp_path))
    assert bad.returncode == 2 and b"compactctl.toml" in bad.stderr and b"threshold" in bad.stderr


def test_zsh_completion_without_rich():
    code = (
        "import os, sys; sys.argv = ['compactctl']\n"
        "from compactctl.entry import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('rich' in sys.modules, file=sys.stderr)"
    )
    env = {**os.environ, "_COMPACTCTL_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "compactctl compact --context-w"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, timeout=60)
    assert '"--context-window":"Context window in tokens' in r.stdout.decode()
    assert r.stderr.decode().strip().splitlines()[-1] == "False"


def test_lazy_package_exports_equal_the_api():
    import compactctl
    from compactctl import api

    assert api.__all__ == compactctl._API
    assert all(getattr(compactctl, n) is getattr(api, n) for n in api.__all__)


LONG = Path(__file__).resolve().parent.parent / "sample_transcripts" / "long_session.jsonl"


def _cfg_env(tmp_path: Path, **env: str) -> dict:
    return {"XDG_CONFIG_HOME": str(tmp_path / "no-user-config"), **env}


@pytest.mark.parametrize("where", ["flag", "env", "compactctl.toml", "pyproject.toml"])
def test_context_window_zero_is_a_usage_error_naming_its_source(tmp_path, where):
    """0 used to fall back to the model's window (64,000 tokens of target: nothing compacted)."""
    args, env = ["compact", str(LONG), "-q"], _cfg_env(tmp_path)
    if where == "flag":
        args += ["--context-window", "0"]
        named = "--context-window 0"
    elif where == "env":
        env["COMPACTCTL_CONTEXT_WINDOW"] = "0"
        named = "$COMPACTCTL_CONTEXT_WINDOW=0"
    elif where == "compactctl.toml":
        (tmp_path / "compactctl.toml").write_text("context-window = 0\n")
        named = f"{tmp_path / 'compactctl.toml'}: context-window = 0"
    else:
        (tmp_path / "pyproject.toml").write_text("[tool.compactctl]\ncontext_window = 0\n")
        named = f"{tmp_path / 'pyproject.toml'} [tool.compactctl]: context_window = 0"
    r = run_in(tmp_path, *args, env=env)
    assert r.returncode == 2, r.stderr
    assert named in r.stderr.decode() and "must be at least 1" in r.stderr.decode()
    assert r.stdout == b""


def test_a_negative_context_window_is_a_usage_error_not_cannot_fit(tmp_path):
    r = run_in(tmp_path, "compact", str(LONG), "--context-window", "-5", env=_cfg_env(tmp_path))
    assert r.returncode == 2 and b"--context-window -5: must be at least 1" in r.stderr


def test_an_out_of_range_file_value_names_the_file_and_the_key(tmp_path):
    (tmp_path / "compactctl.toml").write_text("threshold = 1.5\n")
    env = _cfg_env(tmp_path)
    r = run_in(tmp_path, "plan", "--json", str(LONG), env=env)
    assert r.returncode == 2
    assert f"{tmp_path / 'compactctl.toml'}: threshold = 1.5: must be in (0, 1]" in r.stderr.decode()
    # The effective value is checked: a flag that overrides the file's value wins.
    assert run_in(tmp_path, "plan", "--json", str(LONG), "--threshold", "0.5", "--context-window", "200000", env=env).returncode == 0
    # `compactctl config` shows the settings, then refuses the value as the commands do.
    shown = run_in(tmp_path, "config", env=env)
    assert shown.returncode == 2 and b"threshold" in shown.stdout and b"compactctl.toml: threshold = 1.5" in shown.stderr
    (tmp_path / "compactctl.toml").write_text("tail-tokens = -1\n")
    r = run_in(tmp_path, "repair", str(LONG), env=env)
    assert r.returncode == 2 and f"{tmp_path / 'compactctl.toml'}: tail-tokens = -1: must be 0 or more".encode() in r.stderr


def test_an_out_of_range_env_value_names_the_variable(tmp_path):
    r = run_in(tmp_path, "compact", str(LONG), env=_cfg_env(tmp_path, COMPACTCTL_SUMMARY_MIN="-1"))
    assert r.returncode == 2 and b"$COMPACTCTL_SUMMARY_MIN=-1 (--summary-min): must be 0 or more" in r.stderr


def test_unknown_keys_are_warned_with_a_close_match_and_ignored(tmp_path):
    (tmp_path / "compactctl.toml").write_text("contxt-window = 8000\nsumary_min = 300\nfrobnicate = 1\n")
    env = _cfg_env(tmp_path)
    r = run_in(tmp_path, "plan", "--json", str(LONG), env=env)
    assert r.returncode == 0, r.stderr
    err = r.stderr.decode()
    where = str(tmp_path / "compactctl.toml")
    assert f"{where}: unknown setting 'contxt-window' (ignored); did you mean 'context-window'?" in err
    assert f"{where}: unknown setting 'sumary_min' (ignored); did you mean 'summary_min'?" in err
    assert f"{where}: unknown setting 'frobnicate' (ignored)\n" in err
    assert orjson.loads(r.stdout)["target"] == 64000  # the misspelt window was not applied
    (tmp_path / "compactctl.toml").unlink()
    (tmp_path / "pyproject.toml").write_text("[tool.compactctl]\nthreshhold = 0.3\n")
    r = run_in(tmp_path, "config", env=env)
    assert r.returncode == 0
    assert f"{tmp_path / 'pyproject.toml'} [tool.compactctl]: unknown setting 'threshhold' (ignored); did you mean 'threshold'?" in (
        r.stderr.decode()
    )


def test_check_names_each_source():
    S = config.Setting
    cases = [
        (S("jobs", 0, "flag"), "--jobs 0: must be at least 1"),
        (S("jobs", 0, "env:COMPACTCTL_JOBS"), "$COMPACTCTL_JOBS=0 (--jobs): must be at least 1"),
        (S("jobs", 0, "user:/h/.config/compactctl/config.toml", "jobs"), "/h/.config/compactctl/config.toml: jobs = 0: must be at least 1"),
        (S("last_ask", "x", "project:/p/compactctl.toml", "last-ask"), "/p/compactctl.toml: last-ask = 'x': must be auto, tail or summary"),
        (S("threshold", float("nan"), "flag"), "--threshold nan: must be in (0, 1]"),
    ]
    for setting, message in cases:
        with pytest.raises(UsageError) as e:
            config.check([setting])
        assert str(e.value) == message
    config.check([S("context_window", None, "default"), S("threshold", 1.0, "flag"), S("tail_tokens", 0, "flag"), S("model", "x", "flag")])


def test_token_counts_are_settings_not_secrets(tmp_path):
    """tail-tokens and protect-tokens hold a word of SECRET_WORDS, and were refused as secrets."""
    (tmp_path / "compactctl.toml").write_text("tail-tokens = 900\nprotect_tokens = 1200\nauth-token = 'x'\n")
    warnings: list[str] = []
    opts = [*OPTS, ("tail_tokens", int, None), ("protect_tokens", int, None)]
    s = config.resolve(opts, cwd=tmp_path, environ={}, warn=warnings.append)
    assert (s["tail_tokens"].value, s["protect_tokens"].value) == (900, 1200)
    assert warnings == [
        f"{tmp_path / 'compactctl.toml'}: ignoring 'auth-token': never keep an API key or other secret in a config file; use $OPENAI_API_KEY"
    ]


def test_refs_and_recall_hint_are_settings(tmp_path):
    src = tmp_path / "s.jsonl"
    rows = [{"role": "system", "content": "sys"}, {"role": "user", "content": "fix the parser"}]
    for i in range(30):
        rows += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"output line {i} " * 200},
        ]
    rows.append({"role": "user", "content": "go on"})
    write_jsonl(src, rows)
    args = ("compact", str(src), "--context-window", "1500", "-q", "--archive", str(tmp_path / "a.jsonl"))
    ref = re.compile(rb"\[ref [0-9a-f]{8}\]")
    assert ref.search(run_in(tmp_path, *args).stdout)
    (tmp_path / "compactctl.toml").write_text("refs = true\n")  # said in a file: references without --archive too
    assert ref.search(run_in(tmp_path, *args[:-2]).stdout) and not ref.search(run_in(tmp_path, *args[:-2], "--no-refs").stdout)
    (tmp_path / "compactctl.toml").write_text("refs = false\nrecall-hint = true\n")
    r = run_in(tmp_path, *args)
    assert r.returncode == 0 and not ref.search(r.stdout) and b"unknown setting" not in r.stderr
    assert b"the `search` tool" in r.stdout and b"the `recall` tool" not in r.stdout  # the hint, without references
    shown = orjson.loads(run_in(tmp_path, "config", "--json").stdout)
    assert shown["refs"]["value"] is False and shown["recall_hint"]["value"] is True


# A dataset pipeline's defaults in a project file: `--workers` (prune's and compact's own option) and `--on-error`.
DATASET = 'workers = 3\non-error = "skip"\n'


def _runs(monkeypatch) -> list[tuple[int, str]]:
    """The worker count and --on-error of each run of a phase command (its IOOptions), as the runner gets them."""
    from compactctl import runner

    seen: list[tuple[int, str]] = []
    monkeypatch.setattr(runner, "run", lambda inputs, io, *a, **k: seen.append((io.workers, io.on_error)))
    return seen


@pytest.mark.parametrize("command", ["prune", "compact"])
def test_workers_and_on_error_come_from_a_file_the_environment_or_the_flag(tmp_path, monkeypatch, command):
    """Neither was a setting: `workers = 3` and `on-error = "skip"` in compactctl.toml were warned about as unknown
    settings and ignored (the machine's cores, fail)."""
    seen = _runs(monkeypatch)
    src = write_jsonl(tmp_path / "s.jsonl", [{"role": "user", "content": "hello"}])
    (tmp_path / "compactctl.toml").write_text(DATASET)
    r = run_in(tmp_path, command, str(src))
    assert r.returncode == 0 and b"unknown setting" not in r.stderr, r.stderr
    assert seen.pop() == (3, "skip")
    assert run_in(tmp_path, command, str(src), "--workers", "2", "--on-error", "fail").returncode == 0  # the flag wins
    assert seen.pop() == (2, "fail")
    assert run_in(tmp_path, command, str(src), env={"COMPACTCTL_WORKERS": "5", "COMPACTCTL_ON_ERROR": "fail"}).returncode == 0
    assert seen.pop() == (5, "fail")  # the environment beats the file
    assert run_in(tmp_path, command, str(src), "-w", "1", env={"COMPACTCTL_WORKERS": "5"}).returncode == 0
    assert seen.pop() == (1, "skip")
    (tmp_path / "compactctl.toml").write_text("workers = 0\n")  # out of range; only the value in effect is checked
    assert run_in(tmp_path, command, str(src), "-w", "2").returncode == 0
    assert seen.pop() == (2, "fail")
    (tmp_path / "compactctl.toml").unlink()
    assert run_in(tmp_path, command, str(src)).returncode == 0
    assert seen.pop() == (os.cpu_count() or 1, "fail")  # the built-in defaults: the machine's cores, fail


def test_workers_from_a_file_is_the_ray_engines_too(tmp_path, monkeypatch):
    """With --engine ray, --workers is Ray's concurrency (and a local Ray's CPUs): a file's value is the flag's."""
    from compactctl import ray as cray

    got: list = []
    monkeypatch.setattr(cray, "run_files", lambda *a, workers=None, **k: got.append(workers) or {"records": 0, "errors": 0, "shards": 0})
    src = write_jsonl(tmp_path / "s.jsonl", [{"role": "user", "content": "hello"}])
    args = ("compact", str(src), "--engine", "ray", "-o", f"{tmp_path / 'out'}/", "-q")
    (tmp_path / "compactctl.toml").write_text("workers = 3\n")
    assert run_in(tmp_path, *args).returncode == 0 and run_in(tmp_path, *args, "-w", "2").returncode == 0
    (tmp_path / "compactctl.toml").unlink()
    assert run_in(tmp_path, *args).returncode == 0
    assert got == [3, 2, None]  # None: the cluster's CPUs, as without the flag


def test_on_error_from_a_file_applies_to_every_command_that_takes_it_and_workers_leaves_plan_alone(tmp_path):
    """As a real process (the phase commands' fast path): a bad line is skipped by the file's `on-error = "skip"` and
    stops the run with the flag's --on-error fail (exit 3); plan, which has no --workers, takes the file's on-error
    and says nothing of its workers (a key of an option the command does not take is not an unknown setting)."""
    good = orjson.dumps({"messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]}).decode()
    src = tmp_path / "d.jsonl"
    src.write_text(f"{{not json\n{good}\n")
    (tmp_path / "compactctl.toml").write_text(DATASET)
    env = _cfg_env(tmp_path)
    for command in ("prune", "plan", "summarize", "repair", "compact"):
        r = proc(command, str(src), cwd=tmp_path, env=env)
        assert r.returncode == 0 and b"skipped" in r.stderr and b"unknown setting" not in r.stderr, (command, r.stderr)
        assert b"hello" in r.stdout, command  # the good record, after the bad line
        assert proc(command, str(src), "--on-error", "fail", cwd=tmp_path, env=env).returncode == 3, command
    (tmp_path / "compactctl.toml").write_text("workers = 0\n")  # out of range: only a command with --workers refuses it
    assert proc("plan", "--json", str(LONG), cwd=tmp_path, env=env).returncode == 0
    r = proc("prune", str(LONG), cwd=tmp_path, env=env)
    assert r.returncode == 2 and f"{tmp_path / 'compactctl.toml'}: workers = 0: must be at least 1".encode() in r.stderr


def test_convert_takes_on_error_from_a_file_or_the_environment(tmp_path):
    """convert takes --on-error as the phase commands do, but read no config file (it had no budget option): a
    project's `on-error = "skip"` left it stopping at the first bad line (exit 3)."""
    good = orjson.dumps({"messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]}).decode()
    src = tmp_path / "d.jsonl"
    src.write_text(f"{{not json\n{good}\n")
    (tmp_path / "compactctl.toml").write_text(DATASET)
    r = run_in(tmp_path, "convert", str(src), "--to", "anthropic")
    assert r.returncode == 0 and b"skipped" in r.stderr and b"unknown setting" not in r.stderr, r.stderr  # workers: not convert's
    assert b'"hello"' in r.stdout
    assert run_in(tmp_path, "convert", str(src), "--on-error", "fail").returncode == 3
    (tmp_path / "compactctl.toml").unlink()
    assert run_in(tmp_path, "convert", str(src)).returncode == 3
    assert run_in(tmp_path, "convert", str(src), env={"COMPACTCTL_ON_ERROR": "skip"}).returncode == 0
    r = run_in(tmp_path, "convert", str(src), env={"COMPACTCTL_ON_ERROR": "ignore"})
    assert r.returncode == 2 and b"COMPACTCTL_ON_ERROR = 'ignore' is not valid (expected one of fail, skip)" in r.stderr


@pytest.mark.parametrize(
    ("file", "env", "message"),
    [
        ("compactctl.toml", "workers = 0", "{path}: workers = 0: must be at least 1"),
        ("compactctl.toml", "workers = -2", "{path}: workers = -2: must be at least 1"),
        ("compactctl.toml", 'workers = "4"', "{path}: workers = '4' is not valid (expected an integer, not text: 4, without quotes)"),
        ("compactctl.toml", "workers = 1.5", "{path}: workers = 1.5 is not valid (expected an integer)"),
        ("compactctl.toml", 'on-error = "ignore"', "{path}: on-error = 'ignore' is not valid (expected one of fail, skip)"),
        ("pyproject.toml", "on_error = true", "{path} [tool.compactctl]: on_error = True is not valid (expected one of fail, skip)"),
        (None, "COMPACTCTL_WORKERS=0", "$COMPACTCTL_WORKERS=0 (--workers): must be at least 1"),
        (None, "COMPACTCTL_WORKERS=many", "$COMPACTCTL_WORKERS: COMPACTCTL_WORKERS = 'many' is not valid (expected an integer)"),
        (None, "COMPACTCTL_ON_ERROR=Skip", "$COMPACTCTL_ON_ERROR: COMPACTCTL_ON_ERROR = 'Skip' is not valid (expected one of fail, skip)"),
    ],
)
def test_a_bad_workers_or_on_error_is_a_usage_error_naming_where_it_came_from(tmp_path, file, env, message):
    """Before, a file's key was ignored with a warning (the run went on with the cores and fail) and the variable was
    not read at all."""
    environ = _cfg_env(tmp_path)
    if file is None:
        name, _, value = env.partition("=")
        environ[name] = value
    else:
        (tmp_path / file).write_text(("[tool.compactctl]\n" if file == "pyproject.toml" else "") + env + "\n")
    r = run_in(tmp_path, "compact", str(LONG), "-q", env=environ)
    assert r.returncode == 2 and r.stdout == b""
    assert message.format(path=tmp_path / (file or "")) in r.stderr.decode(), r.stderr
    shown = run_in(tmp_path, "config", env=environ)  # `compactctl config` refuses it as the commands do
    assert shown.returncode == 2 and message.format(path=tmp_path / (file or "")) in shown.stderr.decode()


def test_config_lists_workers_and_on_error_with_their_sources(tmp_path):
    path = tmp_path / "compactctl.toml"
    path.write_text(DATASET)
    shown = orjson.loads(run_in(tmp_path, "config", "--json", env={"COMPACTCTL_ON_ERROR": "fail"}).stdout)
    assert shown["workers"] == {"value": 3, "source": f"project:{path}"}
    assert shown["on_error"] == {"value": "fail", "source": "env:COMPACTCTL_ON_ERROR"}
    r = run_in(tmp_path, "config")
    assert r.returncode == 0 and b"unknown setting" not in r.stderr
    lines = {line.split("=")[0].strip(): line for line in r.stdout.decode().splitlines()}
    assert lines["workers"].endswith(f"= 3            # project:{path}")
    assert lines["on-error"].endswith(f'= "skip"       # project:{path}')
    path.unlink()
    shown = orjson.loads(run_in(tmp_path, "config", "--json").stdout)
    assert shown["workers"] == {"value": None, "source": "default"} and shown["on_error"] == {"value": "fail", "source": "default"}


def test_repeatable_tool_options_from_a_file_or_the_environment(tmp_path):
    """keep-tool and drop-tool failed from any config file or variable: a TOML list was refused ("expected a
    string"), a string was handed to the repeatable option whole ("Value must be an iterable", exit 2)."""
    src = tmp_path / "s.jsonl"
    rows: list[dict] = [{"role": "user", "content": "fix the parser"}]
    for i, name in enumerate(["bash", "read_file"] * 3):
        call = {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": '{"cmd": "x"}'}}
        rows += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"out {i} " * 300},
        ]
    rows.append({"role": "user", "content": "go on"})
    write_jsonl(src, rows)
    env = _cfg_env(tmp_path)
    args = ("prune", str(src), "--prune-all", "--protect-tokens", "0", "-q")
    flags = run_in(tmp_path, *args, "--keep-tool", "bash", "--keep-tool", "read_file", env=env)
    assert flags.returncode == 0 and flags.stdout != run_in(tmp_path, *args, env=env).stdout
    (tmp_path / "compactctl.toml").write_text('keep-tool = ["bash", "read_file"]\n')
    from_file = run_in(tmp_path, *args, env=env)
    assert (from_file.returncode, from_file.stdout) == (0, flags.stdout), from_file.stderr
    shown = orjson.loads(run_in(tmp_path, "config", "--json", env=env).stdout)["keep_tool"]
    assert shown["value"] == ["bash", "read_file"]
    (tmp_path / "compactctl.toml").unlink()
    from_env = run_in(tmp_path, *args, env={**env, "COMPACTCTL_KEEP_TOOL": "bash,read_file"})
    assert (from_env.returncode, from_env.stdout) == (0, flags.stdout), from_env.stderr
    one = run_in(tmp_path, *args, env={**env, "COMPACTCTL_KEEP_TOOL": "bash"})
    assert (one.returncode, one.stdout) == (0, run_in(tmp_path, *args, "--keep-tool", "bash", env=env).stdout)
    (tmp_path / "compactctl.toml").write_text("drop-tool = [1]\n")
    bad = run_in(tmp_path, *args, env=env)
    assert bad.returncode == 2 and b"drop-tool = [1] is not valid (expected a list of tool names)" in bad.stderr


def test_a_file_value_of_the_wrong_toml_type_is_refused_and_the_environments_text_parsed(tmp_path):
    """A file took `threshold = "0.4"` and `no-dedup = "yes"` (text, parsed as the environment's strings are) but
    refused `no-dedup = 1`, where the README says a wrong type is a usage error: a file's value has a TOML type, and
    text where a number or a boolean goes is refused too, saying how to write it; the environment's strings parse."""
    opts = [*OPTS, ("no_dedup", bool, False)]
    for content, what in (
        ('threshold = "0.4"\n', "threshold = '0.4' is not valid (expected a number, not text: 0.4, without quotes)"),
        ('no_dedup = "yes"\n', "no_dedup = 'yes' is not valid (expected true or false, not text: true, without quotes)"),
        ('jobs = "2"\n', "jobs = '2' is not valid (expected an integer, not text: 2, without quotes)"),
        ("no_dedup = 1\n", "no_dedup = 1 is not valid (expected true or false)"),
        ('threshold = "high"\n', "threshold = 'high' is not valid (expected a number)"),
    ):
        (tmp_path / "compactctl.toml").write_text(content)
        with pytest.raises(UsageError) as e:
            config.resolve(opts, cwd=tmp_path, environ={})
        assert str(e.value) == f"{tmp_path / 'compactctl.toml'}: {what}"
    (tmp_path / "compactctl.toml").write_text("threshold = 1\nno_dedup = true\njobs = 2\n")  # an integer is a number
    s = config.resolve(opts, cwd=tmp_path, environ={})
    assert (s["threshold"].value, s["no_dedup"].value, s["jobs"].value) == (1.0, True, 2)
    env = {"COMPACTCTL_THRESHOLD": "0.4", "COMPACTCTL_NO_DEDUP": "yes", "COMPACTCTL_JOBS": "3"}
    s = config.resolve(opts, cwd=tmp_path, environ=env)
    assert (s["threshold"].value, s["no_dedup"].value, s["jobs"].value) == (0.4, True, 3)
    (tmp_path / "compactctl.toml").write_text('no-dedup = "yes"\n')  # the command line says it, exit 2
    r = run_in(tmp_path, "prune", str(write_jsonl(tmp_path / "s.jsonl", [{"role": "user", "content": "hi"}])), env=_cfg_env(tmp_path))
    assert r.returncode == 2 and b"no-dedup = 'yes' is not valid" in r.stderr, r.stderr


def test_a_config_file_that_is_not_utf8_is_a_usage_error(tmp_path):
    """TOML is UTF-8: another encoding was a UnicodeDecodeError's traceback (exit 1), for every command (a review)."""
    (tmp_path / "compactctl.toml").write_bytes(b'model = "caf\xe9"\n')
    with pytest.raises(UsageError, match=r"compactctl.toml: invalid TOML: not UTF-8 \(byte 12\)"):
        _resolve(tmp_path, {})


@pytest.mark.parametrize(
    ("xdg", "expected"),
    [
        ("/x//", "/x/compactctl/config.toml"),
        ("/x/y/../z/", "/x/y/../z/compactctl/config.toml"),  # `..` left to the system: y may be a link
        ("relative/dir", None),  # ignored, as the XDG spec says: the default under the home folder
        ("", None),
    ],
)
def test_the_user_file_is_xdg_config_home_normalised_and_only_when_absolute(monkeypatch, tmp_path, xdg, expected):
    from compactctl import cache, ranks
    from compactctl.config import user_file

    monkeypatch.setenv("HOME", str(tmp_path))
    default = str(tmp_path / ".config" / "compactctl" / "config.toml")
    assert user_file({"XDG_CONFIG_HOME": xdg}) == (expected or default)
    # the caches read XDG_CACHE_HOME by the same rule
    monkeypatch.delenv("COMPACTCTL_RANK_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    folder = expected.replace("/config.toml", "") if expected else str(tmp_path / ".cache" / "compactctl")
    assert ranks.cache_dir() == folder
    assert str(cache.default_dir()) == folder
