"""The CLI end to end: the chain of stages equals compact (in process, and once through real pipes), archive
and restore, plan output."""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest

from .conftest import SAMPLES, cli, read_jsonl, write_jsonl

OPTS = ["--context-window", "8000"]


def pipe(*stages: list[str], src: bytes) -> bytes:
    procs = []
    prev = None
    for k, args in enumerate(stages):
        p = subprocess.Popen(
            [sys.executable, "-m", "compactctl", *args],
            stdin=subprocess.PIPE if k == 0 else prev.stdout,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        if prev is not None:
            prev.stdout.close()
        procs.append(p)
        prev = p
    procs[0].stdin.write(src)
    procs[0].stdin.close()
    out = procs[-1].stdout.read()
    for p in procs:
        assert p.wait(timeout=300) == 0
    return out


def chain(*stages: list[str], src: bytes) -> bytes:
    """The stages run one after the other in this process, each reading the previous one's stdout."""
    for args in stages:
        r = cli(*args, "-q", input=src)
        assert r.returncode == 0, r.stderr
        src = r.stdout
    return src


STAGES = (["prune", *OPTS], ["plan", *OPTS], ["summarize", *OPTS], ["repair", *OPTS])


@pytest.mark.parametrize("sample", ["long_session.jsonl", "parallel_calls.jsonl", "broken_pairs.jsonl", "dataset.jsonl"])
def test_chain_equals_compact(sample):
    src = (SAMPLES / sample).read_bytes()
    chained = chain(*STAGES, src=src)
    direct = cli("compact", *OPTS, "-", input=src)
    assert direct.returncode == 0, direct.stderr
    assert chained == direct.stdout
    assert cli("repair", "--check", "-", input=chained).returncode == 0


def test_chain_from_stdin_equals_compact_of_the_file_for_claude_code():
    """Claude Code lines the compaction adds (boundary, summary) get uuids from the session, not the input's name."""
    src = SAMPLES / "claude_code_session.jsonl"
    opts = ["--context-window", "3000"]
    chained = chain(*[[s[0], *opts] for s in STAGES], src=src.read_bytes())
    direct = cli("compact", *opts, str(src))
    assert direct.returncode == 0, direct.stderr
    assert b"compact_boundary" in direct.stdout and chained == direct.stdout


def test_summarize_that_cannot_fit_writes_the_input_without_plans_annotations():
    src = (SAMPLES / "dataset.jsonl").read_bytes()
    planned = cli("plan", "--context-window", "8000", "-q", "-", input=src)
    assert planned.returncode == 0 and b'"_compactctl"' in planned.stdout
    r = cli("summarize", "--context-window", "300", "--on-error", "skip", "-", input=planned.stdout)
    assert r.returncode == 0 and b"cannot fit" in r.stderr and b"written as read, not summarized" in r.stderr
    assert b'"_compactctl"' not in r.stdout and cli("repair", "--check", "-", input=r.stdout).returncode == 0


@pytest.mark.parametrize("sample", ["dataset.jsonl", "long_session.jsonl"])
def test_repair_after_plan_writes_no_zone_annotations(sample):
    """`plan | repair` (a plan kept, its summary skipped) wrote every message with plan's `"_compactctl": {"zone": ...}`
    key, which no API takes, and `repair --check` passed it. repair, the stage that makes a transcript valid for the
    APIs, now leaves plan's annotations out: here it writes what it writes from the input."""
    src = (SAMPLES / sample).read_bytes()
    planned = cli("plan", "--context-window", "8000", "-q", "-", input=src)
    assert planned.returncode == 0 and b'"_compactctl"' in planned.stdout
    r = cli("repair", "-q", "-", input=planned.stdout)
    assert r.returncode == 0 and b'"_compactctl"' not in r.stdout
    assert r.stdout == cli("repair", "-q", "-", input=src).stdout


@pytest.mark.parametrize("value", ["{}", "null", "3", '"x"', "[]"])
@pytest.mark.parametrize("layout", ["session", "dataset"])
def test_compactctls_key_whatever_it_holds_is_named_by_check_and_taken_off_by_repair(value, layout):
    """`"_compactctl": {}` passed `repair --check`, and `"_compactctl": null` passed it and was written back by
    `repair` (both APIs refuse the key, whatever it holds): only an object with keys was read as compactctl's note."""
    first = '{"role":"user","content":"hi","_compactctl":' + value + "}"
    rest = '{"role":"assistant","content":"ok"}'
    src = (f"{first}\n{rest}\n" if layout == "session" else '{"messages":[' + first + "," + rest + "]}\n").encode()
    check = cli("repair", "--check", "-", input=src)
    assert check.returncode == 6 and b"annotation" in check.stderr, check.stderr
    r = cli("repair", "-q", "-", input=src)
    assert r.returncode == 0 and b"_compactctl" not in r.stdout
    assert cli("repair", "--check", "-", input=r.stdout).returncode == 0


def test_real_pipe_of_four_processes_equals_compact():
    """The README's pipe, as real processes through real pipes."""
    src = (SAMPLES / "dataset.jsonl").read_bytes()
    assert pipe(*STAGES, src=src) == cli("compact", *OPTS, "-", input=src).stdout


def test_prune_then_repair_chain_equals_in_process():
    from compactctl import api
    from compactctl.phases.prune import PruneOptions
    from compactctl.tokens import make_counter

    src = SAMPLES / "broken_pairs.jsonl"
    piped = chain(["prune", "--protect-tokens", "500", "--prune-all"], ["repair"], src=src.read_bytes())
    [t] = api.read([str(src)])
    c = make_counter("gpt-4o")
    out, _ = api.prune(t, c, PruneOptions(protect_tokens=500, refs=False))  # the CLI without --archive writes none
    out, _ = api.repair(out)
    assert piped == api.write(out)


def test_compact_archive_restore_is_exact(tmp_path):
    for sample in ("long_session.jsonl", "dataset.jsonl", "broken_pairs.jsonl"):
        out, arch = tmp_path / f"{sample}.out", tmp_path / f"{sample}.arch"
        r = cli("compact", str(SAMPLES / sample), *OPTS, "-o", str(out), "--archive", str(arch))
        assert r.returncode == 0, r.stderr
        back = cli("restore", str(out), "--archive", str(arch), "-q")  # -q as every command takes it
        assert back.returncode == 0, back.stderr
        assert read_jsonl(back.stdout) == read_jsonl((SAMPLES / sample).read_bytes()), sample


def test_plan_shows_zones_and_annotates():
    r = cli("plan", str(SAMPLES / "long_session.jsonl"), "--context-window", "200000", "--threshold", "0.1")
    assert r.returncode == 0, r.stderr
    err = r.stderr.decode()
    assert "head" in err and "middle" in err and "tail" in err and "o200k_base" in err
    zones = [m["_compactctl"]["zone"] for m in read_jsonl(r.stdout)]
    assert zones[0] == "head" and "middle" in zones and zones[-1] == "tail"
    h, m = zones.count("head"), zones.count("middle")  # the text names the zones' first and last messages
    assert f"head   messages 0-{h - 1} " in err and f"middle messages {h}-{h + m - 1} " in err
    assert f"tail   messages {h + m}-{len(zones) - 1} " in err
    j = cli("plan", str(SAMPLES / "long_session.jsonl"), "--json", "--context-window", "200000", "--threshold", "0.1")
    plan = orjson.loads(j.stdout)
    assert plan["needs_compaction"] and plan["ranges"]["tail"][1] == len(zones)


def test_plan_cannot_fit_exit_code():
    r = cli("plan", str(SAMPLES / "long_session.jsonl"), "--context-window", "3000", "--last-ask", "tail")
    assert r.returncode == 5
    assert "cannot fit" in r.stderr.decode()


def test_plan_json_prints_a_plan_that_cannot_fit(tmp_path):
    """`plan --json` printed nothing for a transcript that cannot fit (exit 5): a script reading stdout got no object.
    Now one, "fits": false with the facts of the error, which stays on stderr with exit 5; a plan that fits says
    "fits": true."""
    long = SAMPLES / "long_session.jsonl"
    r = cli("plan", str(long), "--json", "--context-window", "3000", "--last-ask", "tail")
    err = r.stderr.decode()
    assert r.returncode == 5 and err.startswith("compactctl: error: ") and "cannot fit" in err, err
    [got] = read_jsonl(r.stdout)
    assert got["fits"] is False and got["transcript"] == str(long) and got["error"] in err
    assert got["target"] == 1500 and got["needed"] == got["target"] + got["over"] and got["over"] > 0
    assert f"{got['needed']:,} tokens, {got['over']:,} over" in got["error"] and sum(got["tokens"].values()) == got["total"]
    # A dataset: an object a transcript, in order; exit 5 once all are printed (the error said), 0 under skip (a note)
    small = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    src = write_jsonl(tmp_path / "d.jsonl", [{"messages": read_jsonl(long.read_bytes())}, small])
    for on_error, code in (("fail", 5), ("skip", 0)):
        r = cli("plan", str(src), "--json", "--context-window", "3000", "--last-ask", "tail", "--on-error", on_error)
        assert r.returncode == code, r.stderr
        assert [x["fits"] for x in read_jsonl(r.stdout)] == [False, True]
        assert r.stderr.decode().count(f"{src}#1: cannot fit the target") == 1, r.stderr


def test_check_reports_violations_and_exit_code():
    r = cli("repair", "--check", str(SAMPLES / "broken_pairs.jsonl"))
    assert r.returncode == 6
    err = r.stderr.decode()
    assert "orphan-result" in err and "missing-result" in err and "message " in err
    fixed = cli("repair", str(SAMPLES / "broken_pairs.jsonl"))
    assert cli("repair", "--check", "-", input=fixed.stdout).returncode == 0


def test_report_and_offline_note(tmp_path):
    rep = tmp_path / "r.jsonl"
    r = cli("compact", str(SAMPLES / "long_session.jsonl"), *OPTS, "--report", str(rep))
    assert "summarizer: offline" in r.stderr.decode()
    [line] = read_jsonl(rep.read_bytes())
    assert line["status"] == "compacted" and line["summarizer"] == "offline" and line["tokens_after"] < line["tokens_before"]


def test_an_input_error_comes_before_the_summarizer_status(tmp_path):
    """`compact` and `summarize` said "summarizer: offline" before a missing file's or a bad line's error: the status
    is said once the first transcript is read, so the error is the first thing on stderr."""
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"role": "user", "content": "hi"}\n{"role": "user", "content": \n')
    llm = ["--summarizer", "llm", "--base-url", "http://127.0.0.1:9/v1", "--llm-model", "m"]  # never asked
    for cmd in ("compact", "summarize"):
        for args, code in (([str(tmp_path / "missing.jsonl")], 4), ([str(bad)], 3), ([str(bad), *llm], 3)):
            r = cli(cmd, *args)
            err = r.stderr.decode()
            assert r.returncode == code and err.startswith("compactctl: error: ") and "summarizer" not in err, (cmd, err)
        r = cli(cmd, str(SAMPLES / "long_session.jsonl"), *OPTS)
        assert r.returncode == 0 and r.stderr.decode().startswith("compactctl: summarizer: offline"), r.stderr


def test_cannot_fit_in_skip_mode_still_writes_valid_output(tmp_path):
    src = SAMPLES / "broken_pairs.jsonl"
    r = cli(
        "compact", str(src), "--context-window", "2500", "--last-ask", "tail", "--on-error", "skip", "--report", str(tmp_path / "r.jsonl")
    )
    assert r.returncode == 0, r.stderr
    assert "pruned and repaired, not summarized" in r.stderr.decode()
    assert read_jsonl((tmp_path / "r.jsonl").read_bytes())[0]["status"] == "cannot-fit"
    assert cli("repair", "--check", "-", input=r.stdout).returncode == 0  # the input itself is not valid
    assert cli("compact", str(src), "--context-window", "2500", "--last-ask", "tail").returncode == 5


def test_output_directory_mirrors_the_inputs(tmp_path):
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    (src / "a.jsonl").write_bytes((SAMPLES / "long_session.jsonl").read_bytes())
    (src / "sub" / "b.jsonl").write_bytes((SAMPLES / "claude_code_session.jsonl").read_bytes())
    out = tmp_path / "out"
    r = cli("compact", str(src), "-o", f"{out}/", "--context-window", "8000")
    assert r.returncode == 0, r.stderr
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*.jsonl")) == ["a.jsonl", "sub/b.jsonl"]
    from compactctl import api

    [b] = api.read([str(out / "sub" / "b.jsonl")])
    assert b.format == "claude_code" and api.check(b) == []
    assert cli("compact", "-", "-o", f"{out}/").returncode == 2
    # a whole-file JSON document in is JSON lines out, named .jsonl (it was written under the .json name and
    # could not be read back: "unexpected content after document")
    doc = tmp_path / "doc"
    doc.mkdir()
    rows = [orjson.loads(x) for x in (SAMPLES / "dataset.jsonl").read_bytes().splitlines() if x.strip()]
    (doc / "trajs.json").write_bytes(orjson.dumps(rows))
    r = cli("repair", str(doc), "-o", f"{tmp_path / 'fixed'}/")
    assert r.returncode == 0, r.stderr
    assert [p.name for p in (tmp_path / "fixed").iterdir()] == ["trajs.jsonl"]
    assert len(api.read([str(tmp_path / "fixed" / "trajs.jsonl")])) == len(rows)


def test_prune_option_defaults_are_the_librarys():
    import dataclasses

    from compactctl.cli.groups import PRUNE
    from compactctl.phases.prune import PruneOptions

    lib = {f.name: f.default for f in dataclasses.fields(PruneOptions)}
    shared = [o for o in PRUNE.opts if o.name in lib and o.default is not None]
    assert {o.name for o in shared} >= {"digest_names", "min_dedup_chars", "arg_limit", "arg_keep"}
    assert {o.name: o.default for o in shared} == {o.name: lib[o.name] for o in shared}


def test_a_file_argument_survives_python_310_type_hints():
    """Python 3.10's get_type_hints wraps `Annotated[T | None, typer.Argument()] = None` in Optional: typer then saw
    no Argument and every command refused its files ("Got unexpected extra argument")."""
    import typing

    from compactctl.cli.options import _annotated

    arg = typing.Annotated[list[str] | None, "argument"]
    assert _annotated(typing.Optional[arg]) is arg  # noqa: UP045 (the 3.10 shape, spelled as 3.10 builds it)
    assert _annotated(arg) is arg and _annotated(int | None) == int | None


def test_an_output_written_over_a_file_keeps_that_files_mode(tmp_path):
    """A new output is 0600 (it may hold what a transcript held); one written over an existing file keeps the mode
    the user gave that file (it became 0600)."""
    import stat

    out = tmp_path / "out.jsonl"
    out.write_text("old\n")
    out.chmod(0o640)
    src = str(SAMPLES / "long_session.jsonl")
    for args in (["compact", src, "-q", "-o", str(out)], ["repair", src, "-o", str(out)]):
        cli(*args)
        assert stat.S_IMODE(out.stat().st_mode) == 0o640, args
    new = tmp_path / "new.jsonl"
    cli("compact", src, "-q", "-o", str(new))
    assert stat.S_IMODE(new.stat().st_mode) == 0o600


@pytest.mark.parametrize("cmd,status", [("repair", "repaired"), ("prune", "pruned"), ("plan", "planned"), ("summarize", "not-needed")])
def test_report_has_a_line_per_transcript_for_every_phase(tmp_path, cmd, status):
    """--report is one JSON line per transcript for each phase command (repair, prune and plan wrote an empty file),
    a record repair would write as read included."""
    ok = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    src = write_jsonl(tmp_path / "d.jsonl", [ok, ok])
    rep = tmp_path / "rep.jsonl"
    r = cli(cmd, str(src), "-o", str(tmp_path / "out.jsonl"), "--report", str(rep))
    assert r.returncode == 0, r.stderr
    lines = read_jsonl(rep.read_bytes())
    assert [x["status"] for x in lines] == [status, status] and [x["transcript"] for x in lines] == [f"{src}#1", f"{src}#2"]
    if cmd == "repair":
        checked = cli("repair", "--check", str(src), "--report", str(rep))
        assert checked.returncode == 0 and [x["violations"] for x in read_jsonl(rep.read_bytes())] == [[], []]


def test_a_record_needing_no_summary_says_what_repair_still_changed(tmp_path):
    """A training record that ends with the assistant's call (its target) gets a stub result, valid for the APIs; the
    line said only "not-needed", which read as "written unchanged"."""
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
    rec = {"messages": [{"role": "user", "content": "Weather in Oslo?"}, {"role": "assistant", "content": None, "tool_calls": [call]}]}
    src = write_jsonl(tmp_path / "d.jsonl", [rec])
    r = cli("compact", str(src), "-o", str(tmp_path / "out.jsonl"))
    assert r.returncode == 0, r.stderr
    assert b"not-needed" in r.stderr and b"; repaired: stubs added 1" in r.stderr


def test_a_command_typed_alone_says_it_reads_the_terminal(monkeypatch, capsys):
    """`compactctl compact` with no file, in a terminal, waited for input and said nothing: it says what it waits for
    (not when piped or with -q)."""
    import io
    import sys

    from compactctl.runner import IOOptions, Result, run

    class Terminal(io.TextIOWrapper):
        def isatty(self) -> bool:
            return True

    def read(quiet: bool) -> str:
        monkeypatch.setattr(sys, "stdin", Terminal(io.BytesIO(b'{"role":"user","content":"hi"}\n')))
        run([], IOOptions(quiet=quiet), Result)
        return capsys.readouterr().err

    assert "reading JSONL from the terminal (end with Ctrl-D)" in read(False)
    assert "terminal" not in read(True)


@pytest.mark.parametrize("cmd", ["prune", "compact", "convert"])
def test_rejects_without_on_error_skip_is_a_usage_error(tmp_path, cmd):
    """`--rejects FILE` without `--on-error skip` wrote an empty file (a bad line stops the run, nothing is ever
    rejected), though its help says it applies with skip: a usage error, as `--resume` without `-o`, nothing written."""
    src = write_jsonl(tmp_path / "s.jsonl", [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    rej, out = tmp_path / "rej.jsonl", tmp_path / "o.jsonl"
    r = cli(cmd, str(src), "--rejects", str(rej), "-o", str(out))
    assert r.returncode == 2 and b"--rejects" in r.stderr and b"--on-error skip" in r.stderr, r.stderr
    assert not rej.exists() and not out.exists()
    r = cli(cmd, str(src), "--rejects", str(rej), "-o", str(out), "--on-error", "skip")
    assert r.returncode == 0 and rej.read_bytes() == b"" and out.exists(), r.stderr


def test_json_gives_a_line_for_a_transcript_that_cannot_fit_too(tmp_path):
    """`--json` is a line per transcript: one that cannot fit (written pruned, or as read, under --on-error skip) had
    only its warning, so a script reading the JSON lines did not see it (`--report -` had it)."""
    src = SAMPLES / "long_session.jsonl"
    planned = tmp_path / "planned.jsonl"
    planned.write_bytes(cli("plan", str(src), "--context-window", "300", "--on-error", "skip").stdout)
    for args in (("compact", str(src)), ("summarize", str(planned))):
        r = cli(*args, "--context-window", "300", "--on-error", "skip", "--json", "-o", str(tmp_path / "out.jsonl"))
        lines = [orjson.loads(x) for x in r.stderr.splitlines() if x.startswith(b"{")]
        assert r.returncode == 0 and [x["status"] for x in lines] == ["cannot-fit"], (args, r.stderr)
        r = cli(*args, "--context-window", "30000", "--json", "-o", str(tmp_path / "out.jsonl"))
        assert [orjson.loads(x)["status"] for x in r.stderr.splitlines() if x.startswith(b"{")] in (["compacted"], ["not-needed"])
