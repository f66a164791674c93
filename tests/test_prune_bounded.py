"""prune with a target counting only what its decisions need (PruneOptions.exact_totals False, the
`prune` command without --stats): the same transcript, archive and counts of steps and characters as
counting everything; and the token bounds it rests on."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactctl import tokens
from compactctl.formats.openai import message_from_dict
from compactctl.model import Message, ToolCall, Transcript
from compactctl.phases import prune as P
from compactctl.tokens import _CUT, make_counter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from gen import session  # noqa: E402  (bench/gen.py: the benchmark's generated sessions)

COUNTERS = {e: make_counter(encoding=e) for e in ("o200k_base", "cl100k_base")}
PIECES = st.sampled_from(
    [
        "a",
        "Z",
        "9",
        "42",
        " ",
        "  ",
        "\n",
        "\n\n",
        "\r\n",
        "\t",
        "'s",
        "'T",
        "don't",
        "_x",
        ".",
        "->",
        "{",
        '"',
        "é",
        "e\u0301",
        "日本",
        "ß",
        "١٢",
        "😀",
        "/",
        "\u00a0",
        "  \n",
    ]
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, min_size=2, max_size=60).map("".join), st.sampled_from(sorted(COUNTERS)))
def test_a_cut_splits_the_count_exactly(text, enc):
    """Where _CUT matches, the pre-tokenizer must split: the count of the text is the sum of its two parts."""
    c = COUNTERS[enc]
    n = len(c.encode(text))
    for m in _CUT.finditer(text):
        p = m.end()
        assert len(c.encode(text[:p])) + len(c.encode(text[p:])) == n, (text, p)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(PIECES, min_size=0, max_size=6).map("".join), min_size=0, max_size=40), st.sampled_from(sorted(COUNTERS)))
def test_text_from_parts_is_the_count_of_the_text(parts, enc):
    """Counter.text_from counts a text part by part where the pre-tokenizer must split (a prune digest's names): the
    same count as the whole text, whatever the parts (runs are memoized across calls)."""
    c = COUNTERS[enc]
    text = "".join(parts)
    exact = len(c.encode(text))
    c._memo.clear()
    assert c.text_from(text, parts) == exact
    assert c.text(text) == exact  # memoized
    assert make_counter(encoding=enc, tokenizer="approx").text_from(text, parts) == (len(text) + 3) // 4


def test_the_run_memo_holds_a_text_counted_again(monkeypatch):
    """A digest with more names than the run memo held (RUNS_MAX) counted again at other sizes (prune._use_room's
    search) tokenizes its runs once more at most: the memo holds twice the runs of the longest text since. (It was
    cleared as it filled, and every try counted every name again: with a 1M window, a log's digest of 75,000 names
    tried at 19 sizes.)"""
    monkeypatch.setattr(tokens, "RUNS_MAX", 100)
    c = make_counter(encoding="o200k_base")
    parts = ["[terminal] ran make", "\n  names: ", "name_0", *(f" name_{k}" for k in range(1, 300))]
    tokenized: list[str] = []
    count = c._count
    monkeypatch.setattr(c, "_count", lambda s: tokenized.append(s) or count(s), raising=False)
    whole = c.text_from("".join(parts), parts)
    for size in (300, 150, 225, 187, 300):  # the sizes a search tries
        c._memo.clear()  # (texts are memoized whole too: counted from their runs here)
        assert c.text_from("".join(parts[:size]), parts[:size]) == len(c.encode("".join(parts[:size])))
    assert c.runs_over(parts, whole - 5) and not c.runs_over(parts, whole)
    assert len(tokenized) <= 301  # its 301 runs counted once: held before the first count (not cleared halfway)


def test_the_run_memo_is_back_to_its_size_after_a_transcript(monkeypatch):
    """A second review: the memo's bound only rose, so a counter that lives for a dataset (a worker, a library's)
    kept twice the runs of the largest digest it ever counted (24 MB after one 150,000-name digest). prune sheds it
    when a transcript is done."""
    from compactctl.model import Transcript
    from compactctl.phases.prune import PruneOptions, prune

    monkeypatch.setattr(tokens, "RUNS_MAX", 100)
    c = make_counter(encoding="o200k_base")
    parts = ["[terminal] ran make", "\n  names: ", "name_0", *(f" name_{k}" for k in range(1, 300))]
    c.text_from("".join(parts), parts)
    assert c._runs_max >= 600 and len(c._runs) > 100
    rows = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    t = Transcript([message_from_dict(d, "t", i + 1, i) for i, d in enumerate(rows)], id="t")
    prune(t, c, PruneOptions(target=1000))
    assert c._runs_max == 100 and len(c._runs) <= 100


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.lists(PIECES, min_size=0, max_size=6).map("".join), min_size=0, max_size=40),
    st.integers(-1, 60),
    st.sampled_from(sorted(COUNTERS)),
    st.booleans(),
)
def test_runs_over_is_sure_and_reads_only_as_far_as_it_takes(parts, most, enc, approx):
    """Counter.runs_over: True only when the text counts more than `most` (a digest's size that cannot fit, settled by
    its first parts); the parts after the one that settles it are not read."""
    c = make_counter(encoding=enc, tokenizer="approx") if approx else COUNTERS[enc]
    read: list[str] = []
    if c.runs_over((read.append(p) or p for p in parts), most):
        assert c.text_from("".join(parts), parts) > most
        assert not c.runs_over(read[:-1], most)  # the last part it read settled it
    else:
        assert read == parts


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, min_size=300, max_size=1200).map("".join), st.integers(-5, 600))
def test_text_bound_is_exact_or_at_least_the_need(text, need):
    c = COUNTERS["o200k_base"]
    exact = len(c.encode(text))
    c._memo.clear()  # not memoized: the bound counts a prefix
    got = c.text_bound(text, need)
    assert got <= exact
    assert got == exact or got >= need


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, min_size=300, max_size=1200).map("".join), st.integers(1, 600), st.sampled_from(sorted(COUNTERS)))
def test_text_bound_counted_to_the_end_memoizes_the_exact_count(text, need, enc):
    """text_bound adds up the counts of parts: when they never reach the need, their sum is the text's count, memoized."""
    c = COUNTERS[enc]
    exact = len(c.encode(text))
    c._memo.clear()
    got = c.text_bound(text, need)
    if got < need:
        assert got == exact == c._memo[text]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, min_size=0, max_size=80).map("".join), st.sampled_from(sorted(COUNTERS)), st.booleans())
def test_message_upper_is_at_least_the_count(text, enc, approx):
    c = make_counter(encoding=enc, tokenizer="approx" if approx else "exact")
    msgs = [
        Message(role="tool", content=text, tool_call_id="a", name="x"),
        Message(role="user", content=[{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": "u"}}, text]),
        Message(role="assistant", content=[{"type": "tool_result", "content": [{"type": "text", "text": text}]}], reasoning=text),
        Message(role="assistant", content=None, tool_calls=[ToolCall("a", "bash" + text[:3], orjson.dumps({"c": text}).decode())]),
    ]
    for m in msgs:
        assert c.message_upper(m) >= c.message(m)


def test_a_transcript_that_fits_by_its_bytes_is_not_tokenized(monkeypatch):
    t = _transcript(1, turns=6, scale=0.1)
    c = make_counter("gpt-4o")
    upper = sum(c.message_upper(m) for m in t.messages)
    monkeypatch.setattr(type(c), "_count", lambda self, s: pytest.fail("tokenized"))
    got, st = P.prune(t, c, P.PruneOptions(protect_tokens=100, target=upper, exact_totals=False))
    assert got is t and st.protected_from == len(t.messages) and st.tokens_before is None


def test_message_bound_reads_a_prefix_of_a_long_output():
    c = make_counter(encoding="o200k_base")
    text = "\n".join(f"line {i}: value_{i} ok" for i in range(5000))
    m = Message(role="tool", content=text, tool_call_id="a")
    got = c.message_bound(m, 100)
    assert 100 <= got < c.message(m) // 10
    assert c.message_bound(m, 10**9) == c.message(m)
    call = Message(role="assistant", content=None, tool_calls=[ToolCall("a", "write", orjson.dumps({"text": text}).decode())])
    assert 100 <= c.message_bound(call, 100) < c.message(call)


def _transcript(seed: int, turns: int, scale: float) -> Transcript:
    rows = session(seed, turns=turns, scale=scale)
    return Transcript([message_from_dict(d, "gen", i + 1, i) for i, d in enumerate(rows)], id=f"gen{seed}")


@pytest.fixture(autouse=True)
def _always_bounded(monkeypatch):
    """The bounded way for every transcript, not only those well over their target (a guess that only
    picks the way): each test compares it with the exact one."""
    monkeypatch.setattr(P, "BOUNDED_MIN_CHARS", 0)


def _same(t: Transcript, opts: P.PruneOptions) -> tuple[Transcript, P.PruneStats]:
    c = make_counter("gpt-4o")
    want, ws = P.prune(t, c, opts)
    got, gs = P.prune(t, make_counter("gpt-4o"), replace(opts, exact_totals=False))
    assert (got is t) == (want is t)
    assert [m.provenance for m in got.messages] == [m.provenance for m in want.messages]
    assert [(m.content, m.tool_calls) for m in got.messages] == [(m.content, m.tool_calls) for m in want.messages]
    assert [a.record() for a in gs.archived] == [a.record() for a in ws.archived]
    for k in ("dedup", "summaries", "args", "images"):
        assert (getattr(gs, k).count, getattr(gs, k).chars) == (getattr(ws, k).count, getattr(ws, k).chars)
    assert gs.protected_from == ws.protected_from
    assert gs.tokens_before is None and ws.tokens_before is not None
    return want, ws


@pytest.mark.parametrize("seed", range(6))
def test_bounded_prune_equals_exact_prune_at_every_stopping_point(seed):
    """Targets from under the transcript's size (nothing to do) to far below what pruning reaches (every
    step applies): the stopping point moves over the whole candidate list."""
    t = _transcript(seed, turns=14, scale=0.3)
    c = make_counter("gpt-4o")
    total = sum(c.messages(t.messages))
    floor = P.prune(t, c, P.PruneOptions(protect_tokens=400, target=0))[1].tokens_after
    assert floor is not None and floor < total
    steps = 0
    for k in range(12):
        target = floor - 200 + (total - floor + 400) * k // 11
        for protect in (0, 400, 3000):
            out, ws = _same(t, P.PruneOptions(protect_tokens=protect, target=target, min_dedup_chars=50, min_summary_chars=50))
            steps += sum(getattr(ws, x).count for x in ("dedup", "summaries", "args", "images"))
    assert steps > 0


@pytest.mark.parametrize("seed", range(4))
def test_bounded_prune_counting_the_later_steps_exactly_equals_exact_prune(seed, monkeypatch):
    """Near its target when the long arguments' step begins, the bounded way counts the transcript and goes on as the
    exact loop does (_total_within): with no guess and 'near' at twice the target it does so wherever it can, and the
    result is the exact way's."""
    monkeypatch.setattr(P, "GUESS_CHARS", 10**9)
    monkeypatch.setattr(P, "NEAR", 1)
    went_exact = [0]
    real = P._total_within

    def counting(*a):
        got = real(*a)
        went_exact[0] += got is not None
        return got

    monkeypatch.setattr(P, "_total_within", counting)
    t = _transcript(seed, turns=14, scale=0.5)
    c = make_counter("gpt-4o")
    opts = P.PruneOptions(protect_tokens=400, min_dedup_chars=50, min_summary_chars=50, arg_limit=100, arg_keep=50)
    total = sum(c.messages(t.messages))
    floor = P.prune(t, c, replace(opts, target=0))[1].tokens_after
    assert floor is not None
    for k in range(24):
        _same(t, replace(opts, target=floor - 100 + (total - floor) * k // 46))  # the lower half: the later steps apply
    assert went_exact[0] > 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.integers(3, 16), st.floats(0.05, 0.6), st.floats(0.0, 1.1), st.integers(0, 4000), st.booleans())
def test_bounded_prune_equals_exact_prune(seed, turns, scale, where, protect, refs):
    t = _transcript(seed, turns, scale)
    c = make_counter("gpt-4o")
    total = sum(c.messages(t.messages))
    _same(t, P.PruneOptions(protect_tokens=protect, target=int(total * where), refs=refs, arg_limit=300))


def test_the_prune_command_counts_less_without_stats(tmp_path, monkeypatch):
    """Same bytes with and without --stats; without, far less text goes through the tokenizer."""
    from compactctl import tokens

    from .conftest import cli

    data = tmp_path / "d.jsonl"
    data.write_bytes(b"".join(orjson.dumps({"messages": session(s, turns=30, scale=1.0)}) + b"\n" for s in range(3)))
    counted = [0]
    real = tokens.Counter._count

    def counting(self, s):
        counted[0] += len(s)
        return real(self, s)

    monkeypatch.setattr(tokens.Counter, "_count", counting)
    a = cli("prune", str(data), "--context-window", "16000", "-q", "--workers", "1")  # counted in this process
    without = counted[0]
    counted[0] = 0
    b = cli("prune", str(data), "--context-window", "16000", "-q", "--stats", "--workers", "1")
    assert a.returncode == b.returncode == 0 and a.stdout == b.stdout and a.stdout != data.read_bytes()
    assert without < counted[0] / 2
