"""The record API (compactctl/record.py): bad records, options, defaults, and the same bytes as the CLI."""

from __future__ import annotations

import dataclasses
import functools
import json
from enum import Enum

import orjson
import pytest

import compactctl
from compactctl import ray as cray
from compactctl.errors import CompactError, Exit, UsageError

from .conftest import SAMPLES, cli, tool_session

HI = [{"role": "user", "content": "hi"}]


def _deep(levels: int) -> dict:
    rec: dict = {"messages": HI}
    cur = rec
    for _ in range(levels):
        cur["x"] = {}
        cur = cur["x"]
    return rec


@pytest.mark.parametrize(
    "record, reason",
    [
        ({"messages": HI, "s": {1, 2}}, "record['s'] is not a JSON value (set)"),
        ({"messages": HI, 1: "a"}, "the key 1 of record is not a string (int)"),
        ({"messages": HI, "o": object()}, "record['o'] is not a JSON value (object)"),
        ({"messages": [{"role": "user", "content": "hi", "n": 2**70}], "s": {1}}, "record['s'] is not a JSON value (set)"),
        ({"messages": HI, "f": [float("inf"), 2**70]}, "record['f'][0] is inf"),
        ({"messages": HI, "f": float("nan")}, "record['f'] is nan (NaN and infinities are not JSON)"),
        (_deep(5_000), "nested more than 512 levels deep"),
        ('{"messages": [{"role": "user", "content": "a\ud800"}]}', "lone surrogate at character 44"),
    ],
    ids=["set", "int-key", "object", "set-and-big-int", "inf", "nan", "deep", "str-surrogate"],
)
def test_a_bad_record_comes_back_as_an_error_never_raised(record, reason):
    c = compactctl.Compactor(context_window=4000)
    res = c.compact(record)
    assert (res.status, res.record) == ("error", None)
    assert reason in res.error and res.report == {"status": "error", "reason": res.error}
    json.dumps(dataclasses.asdict(res))
    out, rep = compactctl.compact_record(record, context_window=4000)
    assert out is None and rep["status"] == "error" and reason in rep["error"]


def test_json_orjson_does_not_write_is_read_as_the_cli_reads_it(tmp_path):
    """Integers beyond 64 bits stay exact, lone surrogates become U+FFFD, nesting orjson does not write (over
    254 levels) is read: the record is what the CLI makes of the same line."""
    c = compactctl.Compactor(context_window=4000)
    res = c.compact({"messages": [{"role": "user", "content": "a\ud800b"}], "n": 2**70, "e": "é"})
    assert res.status == "not-needed" and res.record == {"messages": [{"role": "user", "content": "a\ufffdb"}], "n": 2**70, "e": "é"}
    assert orjson.loads(res.to_json())["status"] == "not-needed" and b'"n":1180591620717411303424' in res.to_json()
    line = b'{"messages":[{"role":"user","content":"hi"}],"n":123456789012345678901234567890}'
    res = c.compact(line)
    assert res.record is not None and res.record["n"] == 123456789012345678901234567890 and isinstance(res.record["n"], int)
    (tmp_path / "in.jsonl").write_bytes(line + b"\n")
    r = cli("compact", str(tmp_path / "in.jsonl"), "--context-window", "4000", "--summarizer", "offline", "-q")
    assert r.returncode == 0 and r.stdout == line + b"\n" == c.compact_line(line)[0] + b"\n"
    deep = c.compact(_deep(300))
    assert deep.status == "not-needed" and deep.record == _deep(300)


def test_a_record_that_cannot_be_written_back_is_an_error():
    big = {"messages": tool_session(30, 3000)}
    cur = big
    for _ in range(300):  # orjson writes 254 levels: the compacted record cannot be written
        cur["x"] = {}
        cur = cur["x"]
    res = compactctl.Compactor(context_window=6000).compact(big)
    assert res.status == "error" and "cannot be written back as JSON" in res.error
    line = json.dumps(big).encode()
    new, res = compactctl.Compactor(context_window=6000).compact_line(line)
    assert new is None and res.status == "error"


@pytest.mark.parametrize(
    "options, message",
    [
        ({"context_window": 0}, "context_window=0 is not valid: must be at least 1"),
        ({"threshold": 1.5}, "threshold=1.5 is not valid: must be in (0, 1]"),
        ({"threshold": -1}, "threshold=-1 is not valid: must be in (0, 1]"),
        ({"threshold": float("nan")}, "threshold=nan is not valid"),
        ({"tail_tokens": -5}, "tail_tokens=-5 is not valid: must be 0 or more"),
        ({"summary_min": -1}, "summary_min=-1"),
        ({"digest_names": -1}, "digest_names=-1"),
        ({"last_ask": "bogus"}, "last_ask='bogus' is not valid: must be auto, tail or summary"),
        ({"context_window": "8000"}, "context_window='8000' is not valid: expected int | None"),
        ({"threshold": "0.5"}, "expected float"),
        ({"dedup": 1}, "dedup=1 is not valid: expected bool"),
        ({"keep_tools": "grep"}, "expected tuple[str, ...]"),
    ],
)
def test_bad_options_raise_a_usage_error(options, message):
    for build in (
        lambda: compactctl.Options(**options),
        lambda: compactctl.Compactor(**options),
        lambda: compactctl.compact_record({"messages": HI}, **options),
        lambda: cray.CompactBatch(options),
    ):
        with pytest.raises(UsageError) as e:
            build()
        assert message in str(e.value) and isinstance(e.value, CompactError)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"model": "no-such-model"}, "unknown context window for model 'no-such-model'"),
        ({"model": "no-such-model", "context_window": 0}, "context_window=0"),
        ({"summarizer": "llm"}, "offline summarizer only"),  # Options may name it: a Compactor given summarizer= runs it
    ],
)
def test_options_a_compactor_cannot_use_raise_a_usage_error(options, message):
    with pytest.raises(UsageError) as e:
        compactctl.Compactor(compactctl.Options(**options))
    assert message in str(e.value)


def test_options_are_checked_again_when_used():
    o = compactctl.Options(context_window=8000)
    o.threshold = 2.0
    with pytest.raises(UsageError, match="threshold=2.0"):
        compactctl.Compactor(o)
    assert compactctl.Options(context_window=None, keep_tools=["grep"], threshold=1).budget().target == 128_000


def test_record_api_defaults_are_the_clis():
    """The record API's defaults are the library's (Budget, PruneOptions, SummarizeOptions), which the CLI's agree with."""
    from compactctl.cli.groups import BUDGET, PRUNE, SUMMARY

    fields = {f.name: f.default for f in dataclasses.fields(compactctl.Options)}
    compared = {}
    for o in [*BUDGET.opts, *PRUNE.opts, *SUMMARY.opts]:
        name, default = o.name, o.default.value if isinstance(o.default, Enum) else o.default
        if name.startswith("no_") and name[3:] in fields:  # --no-dedup: dedup=True
            name, default = name[3:], not default
        if name in fields and name not in ("model", "summarizer"):  # the CLI's model may come from $COMPACTCTL_MODEL
            compared[name] = (fields[name], default)
    assert {"threshold", "protect_first", "summary_min", "summary_max", "last_ask", "digest_names", "dedup", "min_saving"} <= set(compared)
    assert {k: a for k, (a, _) in compared.items()} == {k: b for k, (_, b) in compared.items()}
    assert compactctl.Options().digest_names == 64


def test_record_api_ray_batch_and_cli_give_the_same_bytes(tmp_path):
    """With digests (summaries of old outputs) on: the CLI, Compactor.compact_line, Compactor.compact and
    compactctl.ray's batch function give the same records."""
    pytest.importorskip("pandas", reason="the ray or hf extra is not installed (make install installs them)")
    checked = 0
    for name in ("dataset.jsonl", "hermes_trajectory.jsonl"):
        path = SAMPLES / name
        r = cli("compact", str(path), "--context-window", "8000", "--summarizer", "offline", "-q")
        assert r.returncode == 0, r.stderr
        want = r.stdout.split(b"\n")[:-1]
        lines = [ln for ln in path.read_bytes().split(b"\n") if ln]
        c = compactctl.Compactor(context_window=8000)
        got = [c.compact_line(ln) for ln in lines]
        assert [res.status for _, res in got] == ["compacted"] * len(lines)
        assert [new for new, _ in got] == want
        assert [c.compact(ln).record for ln in lines] == [orjson.loads(w) for w in want]
        batch = cray.CompactBatch({"context_window": 8000})({"text": [ln.decode() for ln in lines]})
        assert [t.encode() for t in batch["text"]] == want and list(batch[cray.STATUS]) == ["compacted"] * len(lines)
        checked += len(lines)
    assert checked == 5


def test_compact_report_is_json():
    """compactctl.compact's report is a small stats record; the archived originals are its `archived` attribute."""
    [t] = compactctl.read([str(SAMPLES / "long_session.jsonl")])
    opts = compactctl.CompactOptions(compactctl.Budget(context_window=8000))
    out, report = compactctl.compact(t, compactctl.make_counter("gpt-4o"), compactctl.OfflineSummarizer(), opts)
    assert report["status"] == "compacted" and "_archived" not in report
    assert json.loads(json.dumps(report)) == report and orjson.loads(orjson.dumps(report)) == report
    assert report.archived and all(a.transcript == t.id for a in report.archived)


@pytest.mark.parametrize("prune_all", [False, True])
def test_options_of_a_budget_and_prune_options_gives_them_back(prune_all):
    """`Options.of` (what the command line's option groups make) is the inverse of `budget()` and `prune_options()`."""
    Options = compactctl.Options
    o = Options(
        context_window=32_000, threshold=0.6, tail_tokens=900, protect_first=2, summary_min=300, last_ask="tail",
        protect_tokens=700, arg_limit=300, dedup=False, keep_tools=("Read",), drop_tools=("Bash",), digest_names=8,
        refs=False, prune_all=prune_all,
    )  # fmt: skip
    back = Options.of(o.budget(), o.prune_options(), count_tokens=o.count_tokens)
    assert back.budget() == o.budget() and back.prune_options() == o.prune_options()
    assert back.prune_all is prune_all and back.refs is False


@pytest.mark.parametrize("model", ["denied", "error404"])
def test_an_llm_endpoint_that_refuses_the_run_raises_it_is_not_one_records_error(server, model):
    """401/403, or a 404 for every model, stop the CLI (exit 7, nothing written); the record API turned them into
    status "error" for every record (each paying its failed call): a job that wrote nothing of use and succeeded."""
    from compactctl.errors import LLMAuthError
    from compactctl.summarizers.llm import LLMSummarizer

    record = {"messages": tool_session(30, 4000)}
    line = json.dumps(record).encode()
    s = LLMSummarizer(model, server.url, "k")
    c = compactctl.Compactor(compactctl.Options(context_window=3000, summary_min=300), summarizer=s)
    for call in (
        lambda: c.compact(record),
        lambda: c.compact_line(line),
        lambda: compactctl.compact_record(record, s, context_window=3000),
    ):
        with pytest.raises(LLMAuthError):
            call()
    assert c.compact({"messages": "no"}).status == "error"  # a bad record is still its own error


def test_an_agent_loops_archive_written_as_the_readme_says_serves_recall(tmp_path):
    """README (Library): a loop that compacts its context each time it grows too long and appends `archived` to a
    JSONL archive, each record with a `seq` per compaction, gives recall (and the MCP server) every reference of
    its context, a summarized span's members from its own compaction (the records alone, without `seq`, are no
    archive: "not a compactctl archive record")."""
    import re

    rows = tool_session(16, 3000)
    c = compactctl.Compactor(compactctl.Options(context_window=1500, archive=True))
    context: list[dict] = []
    arch = tmp_path / "archive.jsonl"
    n, summaries = 0, 0
    with open(arch, "w", encoding="utf-8") as f:
        for m in rows:
            context.append(m)
            if m["role"] != "tool":
                continue
            res = c.compact({"messages": context})  # not-needed: pruned only (no summary), archived all the same
            assert res.record is not None
            if res.archived:
                n += 1
                f.writelines(json.dumps({"seq": n, **a}) + "\n" for a in res.archived)
            context = res.record["messages"]
            summaries += res.status == "compacted"
    assert summaries >= 2
    refs = set(re.findall(r"\[ref ([0-9a-f]{8})\]", json.dumps(context)))
    assert refs
    for ref in refs:
        r = cli("recall", ref, "--archive", str(arch), "--json")
        assert r.returncode == 0, (ref, r.stderr)
        hits = [orjson.loads(line) for line in r.stdout.splitlines()]
        assert {h.get("span") for h in hits} in ({None}, {ref})
        # a span's members are its own compaction's: one per position (a `seq` shared by compactions mixed them in)
        assert len({h["index"] for h in hits}) == len(hits), ref


def _too_long() -> list[dict]:
    """A session whose last ask alone is over the target: it cannot fit (pruned and repaired, not summarized)."""
    msgs = tool_session()
    msgs[-1] = {"role": "user", "content": " ".join(f"word{i}" for i in range(3000))}
    return msgs


@pytest.mark.parametrize(
    "record, error",
    [
        ({"messages": HI, "a": {"b": {"c": {"d": {"e": {"f": {"g": {1}}}}}}}}, "record['a']['b']['c']['d']['e']['f']['g'] is not"),
        (
            {"messages": HI, "a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {1}}}}}}}}},
            "record['a']['b']['c']['d']['e']['f']['g'][...] is not",
        ),
        ({"messages": HI, "s": [[0, {1}]]}, "record['s'][0][1] is not a JSON value (set)"),
        ({"messages": HI, "d": _deep(600)["x"]}, "nested more than 512 levels deep (record['d']['x']['x']['x']['x']['x']['x'][...])"),
        (
            {"messages": HI, "l": functools.reduce(lambda x, _: [x], range(600), [])},
            "nested more than 512 levels deep (record['l'][0][0][0][0][0][0][...])",
        ),
    ],
    ids=["path-7", "path-8", "set-in-list", "deep-dict", "deep-list"],
)
def test_a_value_that_is_not_json_is_named_by_where_it_stands(record, error):
    res = compactctl.Compactor(context_window=4000).compact(record)
    assert res.status == "error" and res.error.startswith("<record>:1: not JSON: ") and error in res.error, res.error


def test_a_line_that_is_no_object_is_an_error_naming_it():
    res = compactctl.Compactor(context_window=4000).compact(b"[1, 2]")
    assert (res.status, res.error) == ("error", "<record>:1: expected a JSON object")
    new, res = compactctl.Compactor(context_window=4000).compact_line(b'"hi"', source="data.jsonl", number=7)
    assert new is None and res.error == "data.jsonl:1: expected a JSON object"


def test_compact_line_names_the_transcript_as_the_cli_does():
    line = orjson.dumps({"messages": HI})
    c = compactctl.Compactor(context_window=4000)
    assert c.compact_line(line, source="data.jsonl", number=3)[1].transcript == "data.jsonl#3"
    assert c.compact_line(line, source="data.jsonl")[1].transcript == "data.jsonl"
    assert c.compact_line(line)[1].transcript == "<record>#1"


def test_a_format_that_writes_no_single_record_is_an_error_naming_it():
    line = orjson.dumps({"messages": tool_session()})
    for to in ("claude-code", "codex"):
        c = compactctl.Compactor(context_window=4000, to=to)
        res = c.compact(orjson.loads(line))
        assert (res.status, res.record) == (
            "error",
            None,
        ) and res.error == f"<record>#1: format {to} does not write one record per transcript"
        new, res = c.compact_line(line)
        assert new is None and res.error == f"<record>#1: format {to} does not write one line per transcript"


def test_a_session_read_from_a_file_is_written_back_as_one_record():
    from compactctl import api

    (t,) = api.read(SAMPLES / "claude_code_session.jsonl")
    assert t.layout != "dataset"
    rec = compactctl.to_record(t, "openai")
    assert [(m.role, m.text()) for m in compactctl.to_transcript(rec).messages] == [(m.role, m.text()) for m in t.messages]
    res = compactctl.Compactor(context_window=100_000, to="openai").compact(t)
    assert res.status == "not-needed" and res.record == rec


def test_a_record_that_cannot_fit_comes_back_pruned_with_its_archived_originals():
    c = compactctl.Compactor(context_window=2000, archive=True)
    res = c.compact({"messages": _too_long()})
    assert res.status == "cannot-fit" and "cannot fit the target of 1,000 tokens" in res.report["reason"]
    assert res.record is not None and len(res.record["messages"]) == len(_too_long())
    assert res.archived and all(a["phase"] == "prune" and a["message"]["role"] == "tool" for a in res.archived)
    said: list[str] = []
    oc = c.compact_transcript(compactctl.to_transcript({"messages": _too_long()}), warn=said.append)
    assert oc.status == "cannot-fit" and len(said) == 1 and said[0].endswith(" -- written pruned and repaired, not summarized")
    with pytest.raises(CompactError, match="cannot fit the target"):
        c.compact_transcript(compactctl.to_transcript({"messages": _too_long()}), on_cannot_fit="raise")


def test_the_cli_stops_on_a_transcript_that_cannot_fit(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(orjson.dumps({"messages": _too_long()}) + b"\n")
    r = cli("compact", str(src), "--context-window", "2000", "-q", "-o", str(tmp_path / "out.jsonl"))
    assert r.returncode == Exit.CANNOT_FIT and b"cannot fit the target" in r.stderr, r.stderr
    r = cli("compact", str(src), "--context-window", "2000", "-q", "-o", str(tmp_path / "out.jsonl"), "--on-error", "skip")
    assert r.returncode == 0 and b"written pruned and repaired" in r.stderr, r.stderr


def test_by_default_a_record_gets_no_references_and_no_archived_originals():
    res = compactctl.Compactor(context_window=1500).compact({"messages": tool_session(16, 3000)})
    assert res.status == "compacted" and res.archived == [] and "[ref " not in json.dumps(res.record)
    res = compactctl.Compactor(context_window=1500, archive=True).compact({"messages": tool_session(16, 3000)})
    assert res.archived and "[ref " in json.dumps(res.record)


def test_the_warning_of_a_fallback_says_what_was_written(monkeypatch):
    """`compact_transcript(warn=...)` said "written pruned and repaired, not summarized" of every fallback, also of a
    transcript compacted but still over its target (the runner says each fallback's own `fallback_is`)."""
    from compactctl import record
    from compactctl.errors import CannotFit

    t = compactctl.read([str(SAMPLES / "long_session.jsonl")])[0]

    def over(*_a, **_k):
        e = CannotFit("over the target by 12 tokens")
        e.fallback, e.fallback_is = (t, []), "compacted, over the target"
        raise e

    monkeypatch.setattr(record, "compact_pipeline", over)
    said: list[str] = []
    out = record.Compactor().compact_transcript(t, warn=said.append)
    assert out.status == "cannot-fit" and said == ["over the target by 12 tokens -- written compacted, over the target"]
