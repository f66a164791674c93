"""compactctl eval: probes, matching, baselines."""

from __future__ import annotations

import orjson

from compactctl import api, evaluate
from compactctl.tokens import make_counter

from .conftest import SAMPLES, cli
from .rows import T

COUNTER = make_counter("gpt-4o")


def test_probes_and_normalized_matching():
    rows = [
        {"role": "user", "content": "Fix it. Never touch prod.db."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "a", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "pytest  -q"}'}}],
        },
        {"role": "tool", "tool_call_id": "a", "content": "E   ValueError: bad day\nexit code: 1"},
        {"role": "user", "content": "now ship v1.2.3"},
    ]
    t = T(rows)
    ps = evaluate.probes(t, {0, 1, 2})
    cats = {p.category for p in ps}
    assert {"constraints", "commands", "errors", "last_ask"} <= cats
    cmd = next(p for p in ps if p.category == "commands")
    assert cmd.exit_code == 1
    assert evaluate.found(cmd, evaluate.norm("ran `PYTEST -q` -> exit 1"))
    assert not evaluate.found(cmd, evaluate.norm("ran `pytest -q` -> exit 0"))
    assert evaluate.found(evaluate.Probe("errors", "E   ValueError: bad day"), evaluate.norm("e valueerror:   bad day"))


def test_compactctl_beats_baselines_on_samples():
    ts = api.read([str(SAMPLES / "dataset.jsonl"), str(SAMPLES / "long_session.jsonl")])
    rows, agg = evaluate.run(ts, COUNTER, evaluate.strategies(COUNTER, 0.05))
    assert agg["compactctl"]["retention"] > agg["head-tail"]["retention"]
    assert agg["compactctl"]["retention"] > agg["masking"]["retention"]
    assert agg["compactctl"]["reduction"] >= 0.8
    assert all(r["valid"] for rs in rows.values() for r in rs)


def test_eval_cli_json_and_given_compacted(tmp_path):
    src = SAMPLES / "long_session.jsonl"
    r = cli("eval", str(src), "--probes", "--json")
    assert r.returncode == 0, r.stderr
    d = orjson.loads(r.stdout)
    assert set(d["aggregate"]) == {"compactctl", "head-tail", "masking"}
    out = tmp_path / "c.jsonl"
    assert cli("compact", str(src), "--context-window", "8000", "-o", str(out)).returncode == 0
    g = cli("eval", str(src), "--compacted", str(out))
    assert g.returncode == 0 and "| given |" in g.stdout.decode()


def test_the_local_command_caveat_is_no_constraint_probe():
    """Claude Code's caveat before local-command output ("DO NOT respond to these messages ...") says how to read other
    messages; the summary leaves it out since the eighteenth session, and the probe eval still asked for it (the long
    sessions' constraint probes read 83.3%: this caveat was the one lost)."""
    from compactctl.harness import LOCAL_COMMAND_CAVEAT

    caveat = f"<local-command-caveat>{LOCAL_COMMAND_CAVEAT} DO NOT respond to these messages.</local-command-caveat>"
    t = T([{"role": "user", "content": caveat}, {"role": "user", "content": "Never touch prod.db."}, {"role": "user", "content": "go"}])
    assert [p.text for p in evaluate.probes(t, {0, 1}) if p.category == "constraints"] == ["Never touch prod.db."]


def test_strategies_that_no_part_knows_are_usage_errors():
    """A misspelt or misplaced --strategies name was dropped without a word: the run printed empty tables
    and exited 0 (`--strategies foo`, `--probes --strategies recent`: recent is the continuation's)."""
    src = str(SAMPLES / "parallel_calls.jsonl")
    for args, named in (
        (["--strategies", "foo"], "foo"),
        (["--probes", "--strategies", "recent"], "recent"),
        (["--continuation", "--strategies", "compactctl-llm"], "compactctl-llm"),
    ):
        r = cli("eval", src, *args)
        assert r.returncode == 2 and r.stdout == b"", (args, r.stdout)
        assert f"--strategies: unknown strategy '{named}'" in r.stderr.decode()
    r = cli("eval", src, "--probes", "--json", "--strategies", "compactctl, masking")  # a space after the comma
    assert r.returncode == 0, r.stderr
    assert set(orjson.loads(r.stdout)["aggregate"]) == {"compactctl", "masking"}


def test_eval_of_no_transcript_is_a_data_error_naming_the_input(tmp_path):
    """An empty file (or one of blank lines) printed the eval's tables with every count 0 and exited 0, as if
    something had been measured: it is a data error (exit 3) naming the input, and nothing is printed."""
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    blank = tmp_path / "blank.jsonl"
    blank.write_bytes(b"\n\n")
    for args in ([str(empty)], [str(empty), "--probes", "--json"], [str(blank), "--continuation"], [str(empty), "--twice"]):
        r = cli("eval", *args)
        assert r.returncode == 3 and r.stdout == b"", (args, r.stdout)
        assert f"{args[0]}: nothing to evaluate: it holds no transcript" in r.stderr.decode(), r.stderr
    r = cli("eval", str(empty), str(blank))
    assert r.returncode == 3 and f"{empty}, {blank}: nothing to evaluate" in r.stderr.decode()
    r = cli("eval", str(empty), str(SAMPLES / "parallel_calls.jsonl"), "--probes", "--json")  # one empty input among others
    assert r.returncode == 0, r.stderr


def test_a_transcript_too_short_to_cut_is_said_and_nothing_cut_is_a_data_error(tmp_path):
    """A transcript with no turn to cut at (one message, or a user message and one answer) was left out of
    continuation scoring without a word: its tables came out with 0 cuts, exit 0. Each such transcript is named on
    stderr; when continuation scoring is all that was asked and no input could be cut, it is a data error (exit 3)
    naming the inputs, as an input that holds no transcript is; with the probe eval too, the probe eval runs."""
    one = tmp_path / "one.jsonl"
    one.write_bytes(b'{"role": "user", "content": "hi"}\n')
    long = SAMPLES / "parallel_calls.jsonl"
    for args in ([str(one), "--continuation"], [str(one), "--continuation", "--json"], [str(one), "--continuation", "--twice"]):
        r = cli("eval", *args)
        assert r.returncode == 3 and r.stdout == b"", (args, r.stdout)
        err = r.stderr.decode()
        assert f"{one}: nothing to score by continuation: no transcript has a turn to cut at" in err, err
    r = cli("eval", str(one))  # the probe eval still has something to measure
    assert r.returncode == 0, r.stderr
    out, err = r.stdout.decode(), r.stderr.decode()
    assert f"{one}: not scored by continuation: no turn to cut at (1 message)" in err, err
    assert "(no transcript could be cut: nothing scored)" in out and "| compactctl | 0 |" not in out, out
    assert "Probe eval" in out
    r = cli("eval", str(one), str(long), "--continuation", "--cuts", "0.5")  # one among others: said, the rest scored
    assert r.returncode == 0, r.stderr
    assert f"{one}: not scored by continuation" in r.stderr.decode() and "| compactctl | 1 |" in r.stdout.decode()


def test_explain_is_refused_where_no_continuation_scoring_runs():
    """`--explain N` lists facts that continuation scoring found lost; with --probes or --compacted (the probe eval
    alone) it printed nothing and said nothing."""
    src = str(SAMPLES / "parallel_calls.jsonl")
    for args in (["--probes"], ["--compacted", src]):
        r = cli("eval", src, "--explain", "3", *args)
        assert r.returncode == 2 and r.stdout == b"", args
        assert "--explain lists facts continuation scoring lost: it cannot go with --probes or --compacted" in r.stderr.decode()


def test_the_tables_say_what_their_columns_mean():
    """The continuation and probe tables' columns (kept in context, not re-discovered, at or under target, valid,
    cannot fit; retention and the probe kinds) were named and not explained anywhere in what `eval` prints."""
    r = cli("eval", str(SAMPLES / "parallel_calls.jsonl"), "--cuts", "0.5", "--explain", "2")
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    for said in (
        "kept in context:",
        "kept, not re-discovered:",
        "at or under target:",
        "valid:",
        "cannot fit:",
        "retention:",
    ):
        assert said in out, said
    # --explain says how many were lost in all and what its numbers are
    head = next(x for x in out.splitlines() if x.startswith("Facts compactctl lost"))
    assert "2 of " in head and "#N: message N of the transcript as read, from 0" in head, head


def test_a_transcript_compacting_twice_cannot_cut_is_said(tmp_path):
    """--twice compacts at two points; a transcript with one (an ask and its answer: continuation scores its one cut)
    was left out of the twice table without a word (the corpus's short group showed 19 of its 20 sessions there)."""
    pair = tmp_path / "pair.jsonl"
    pair.write_bytes(b'{"role": "user", "content": "edit app.py"}\n{"role": "assistant", "content": "Edited app.py."}\n')
    long = SAMPLES / "parallel_calls.jsonl"
    r = cli("eval", str(pair), str(long), "--continuation", "--twice")
    assert r.returncode == 0, r.stderr
    err = r.stderr.decode()
    assert f"{pair}: not scored by --twice: no two turns to cut at (2 messages)" in err, err
    assert f"{pair}: not scored by continuation" not in err  # its one cut is scored there
    assert f"{long}: not scored" not in err
