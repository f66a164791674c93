"""Every real transcript in ../shared/corpus (skipped when it is absent)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from compactctl import api
from compactctl.errors import CannotFit
from compactctl.harness import human_text
from compactctl.model import Transcript, last_user_index
from compactctl.tokens import make_counter

from .conftest import CORPUS, cli, needs_corpus
from .validator import validate_anthropic_records

pytestmark = [needs_corpus, pytest.mark.corpus]
COUNTER = make_counter("gpt-4o")
JSONL = sorted(p for p in CORPUS.rglob("*.jsonl")) if CORPUS.is_dir() else []
TRANSCRIPT_JSONL = [p for p in JSONL if "openhands" not in p.parts]  # formats written back in kind
EVERY = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".jsonl", ".json", ".traj")) if CORPUS.is_dir() else []


def tau_dataset(tmp_path):
    data = orjson.loads((CORPUS / "openai-chat/tau-bench/gpt-4o-airline.json").read_bytes())
    path = tmp_path / "tau.jsonl"
    path.write_bytes(b"".join(orjson.dumps({"messages": r["traj"], **{k: v for k, v in r.items() if k != "traj"}}) + b"\n" for r in data))
    return path


def test_corpus_has_what_we_expect():
    assert len(TRANSCRIPT_JSONL) >= 30 and len(EVERY) >= 69
    formats = {t.format for p in EVERY for t in api.read([str(p)])}
    assert formats == {"openai", "anthropic", "sharegpt", "claude_code", "codex", "gemini", "openhands"} - {"anthropic"}


@pytest.mark.parametrize("path", TRANSCRIPT_JSONL, ids=lambda p: str(p.relative_to(CORPUS)))
def test_round_trip_is_lossless(path):
    ts = api.read([str(path)])
    out = b"".join(api.write(t) for t in ts)
    assert out == path.read_bytes() or [orjson.loads(x) for x in out.splitlines()] == [
        orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()
    ]


BUDGET = api.Budget(context_window=32000)
_COMPACTED: dict[Path, list] = {}


def compacted(path: Path, take: bool = False) -> list[tuple[Transcript, Transcript | None, dict | None, CannotFit | None]]:
    """(transcript, output, report, cannot-fit error) for each transcript of a corpus file, compacted
    offline at a 32,000-token window: computed once for the tests of this module and of
    test_recall_corpus.py (which takes it, `take`, to free it)."""
    if path not in _COMPACTED:
        got = []
        for t in api.read([str(path)]):
            try:
                out, rep = api.compact(t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(BUDGET))
                got.append((t, out, rep, None))
            except CannotFit as e:
                got.append((t, None, None, e))
        _COMPACTED[path] = got
    return _COMPACTED.pop(path) if take else _COMPACTED[path]


@pytest.mark.parametrize("path", EVERY, ids=lambda p: str(p.relative_to(CORPUS)))
def test_compact_is_valid_rereads_and_keeps_the_last_ask(path, tmp_path):
    budget = BUDGET
    for k, (t, out, rep, err) in enumerate(compacted(path)):
        if err is not None:  # what --on-error skip writes: pruned and repaired, valid
            assert err.fallback is not None and api.check(err.fallback[0]) == []
            continue
        assert out is not None and rep is not None
        assert api.check(out) == []
        assert rep["tokens_after"] <= budget.target or rep["status"] != "compacted"
        assert rep["tokens_after"] == sum(COUNTER.messages(out.messages))  # counted after repair: its stubs too
        written = tmp_path / f"out{k}.jsonl"
        written.write_bytes(api.write(out))
        [back] = api.read([str(written)])
        assert back.format == (t.format if t.format not in ("gemini", "openhands") else "openai")  # read-only formats -> OpenAI chat
        assert api.check(back) == []
        lu = last_user_index(t.messages)
        if lu is not None:  # verbatim: as a message, or as the summary's Active Task when the tail could not hold it
            ask = t.messages[lu]
            kept = ask.text() in [m.text() for m in back.messages]
            assert kept or any(human_text(ask) in m.text() and "## Active Task" in m.text() for m in back.messages)
        again, _ = api.compact(t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(budget))
        assert api.write(again) == api.write(out)


@pytest.mark.parametrize("path", EVERY, ids=lambda p: str(p.relative_to(CORPUS)))
def test_compact_at_small_windows_writes_files_the_apis_accept(path, tmp_path):
    """Written in the input's format and read back, valid at windows where most sessions get a summary (a
    summary merged into a tool-calling turn once lost that turn's line in Claude Code logs)."""
    for window in (4000, 8000, 16000):
        for k, t in enumerate(api.read([str(path)])):
            try:
                out, _ = api.compact(t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(api.Budget(context_window=window)))
            except CannotFit as e:
                assert e.fallback is not None
                out = e.fallback[0]
            written = tmp_path / f"w{window}-{k}.jsonl"
            written.write_bytes(api.write(out))
            assert [v for back in api.read([str(written)]) for v in api.check(back)] == [], (window, t.id)
            # and as the Messages API takes it (--to anthropic), judged by a validator that shares no code with repair
            records = [orjson.loads(x) for x in api.write(out, "anthropic").splitlines()]
            assert any("messages" in r or "role" in r for r in records), (window, t.id)
            assert validate_anthropic_records(records) == [], (window, t.id)


# Read-only formats become OpenAI chat at the first stage of the chain, and OpenAI chat has no place for a tool
# result's error flag (Gemini's): later stages see that result as a success, where `compact` still knew.
CHAIN_LOSSY = ("gemini",)


@pytest.mark.parametrize(
    "path", [p for p in EVERY if p.relative_to(CORPUS).parts[0] not in CHAIN_LOSSY], ids=lambda p: str(p.relative_to(CORPUS))
)
def test_the_chain_of_stages_equals_compact(path):
    """`prune | plan | summarize | repair` writes what `compact --no-grow-tail` writes (as JSON; the first stage
    re-serializes records), at a window where most sessions get a summary; a stage that cannot fit goes on
    (--on-error skip). Without the flag, compact may run a second pass the chain cannot (its prune runs before any
    summary): tests/test_grown_tail.py."""
    opts = ["--context-window", "8000", "-q", "--on-error", "skip"]
    direct = cli("compact", *opts, "--no-grow-tail", str(path))
    out = cli("prune", *opts, str(path)).stdout
    for stage in ("plan", "summarize", "repair"):
        out = cli(stage, *opts, "-", input=out).stdout
    as_json = lambda b: [orjson.loads(x) for x in b.splitlines() if x.strip()]  # noqa: E731
    assert b"_compactctl" not in out and as_json(out) == as_json(direct.stdout)


def test_tau_bench_prune_and_check(tmp_path):
    src = tau_dataset(tmp_path)
    r = cli("prune", str(src), "--protect-tokens", "1000", "--prune-all", "--stats", "-o", str(tmp_path / "p.jsonl"))
    assert r.returncode == 0, r.stderr
    stats = [orjson.loads(line) for line in r.stderr.decode().splitlines() if line.startswith("{")]
    assert len(stats) == 200 and sum(s["summaries"]["chars"] + s["dedup"]["chars"] for s in stats) > 100_000
    assert cli("repair", "--check", str(tmp_path / "p.jsonl")).returncode == 0


def test_tau_bench_compact_and_restore_exactly(tmp_path):
    src = tau_dataset(tmp_path)
    out, arch = tmp_path / "c.jsonl", tmp_path / "a.jsonl"
    r = cli("compact", str(src), "--context-window", "8000", "--on-error", "skip", "-o", str(out), "--archive", str(arch))
    assert r.returncode == 0, r.stderr
    assert cli("repair", "--check", str(out)).returncode == 0
    assert len(out.read_bytes().splitlines()) == 200  # no transcript dropped
    back = cli("restore", str(out), "--archive", str(arch))
    assert [orjson.loads(x) for x in back.stdout.splitlines()] == [orjson.loads(x) for x in src.read_bytes().splitlines()]


@pytest.mark.parametrize(
    "path",
    [p for p in TRANSCRIPT_JSONL if p.parent.name in ("spotter", "agentcmd") and p.stat().st_size > 50_000][:12],
    ids=lambda p: p.name,
)
def test_restore_rebuilds_real_sessions(path, tmp_path):
    out, arch = tmp_path / "c.jsonl", tmp_path / "a.jsonl"
    r = cli("compact", str(path), "--context-window", "64000", "--on-error", "skip", "-o", str(out), "--archive", str(arch))
    assert r.returncode == 0, r.stderr
    back = cli("restore", str(out), "--archive", str(arch))
    assert back.returncode == 0, back.stderr
    [orig] = api.read([str(path)])
    rebuilt = tmp_path / "r.jsonl"
    rebuilt.write_bytes(back.stdout)
    [again] = api.read([str(rebuilt)])
    canon = lambda t: [(m.role, m.text(), [(c.id, c.name, c.arguments) for c in m.tool_calls], m.tool_call_id) for m in t.messages]  # noqa: E731
    assert canon(again) == canon(orig)
