"""--to: what each target format holds of a transcript from another, and what it cannot hold said aloud.

Faults found by a read-only hunt (sixteenth session), each with a test that failed before its fix."""

from __future__ import annotations

from compactctl import api

from .conftest import CORPUS, cli, needs_corpus, write_jsonl


def _pairs(t) -> list[tuple[str, str]]:
    """(call name, result text) for every answered call, by id."""
    calls = {c.id: c.name for m in t.messages for c in m.tool_calls}
    return [(calls.get(m.tool_call_id, "?"), m.text()) for m in t.messages if m.role == "tool"]


def _convert(tmp_path, rows_or_path, to: str, *more: str):
    src = rows_or_path if not isinstance(rows_or_path, list) else write_jsonl(tmp_path / "in.jsonl", rows_or_path)
    out = tmp_path / f"out.{to}.jsonl"
    r = cli("convert", str(src), "--to", to, "-o", str(out), *more)
    assert r.returncode == 0, r.stderr
    return out, r.stderr.decode()


PARALLEL = [
    {"role": "user", "content": "two"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "cA", "type": "function", "function": {"name": "read_a", "arguments": "{}"}},
            {"id": "cB", "type": "function", "function": {"name": "read_b", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "tool_call_id": "cB", "content": "B-result"},  # finished first
    {"role": "tool", "tool_call_id": "cA", "content": "A-result"},
    {"role": "assistant", "content": "done"},
]


def test_sharegpt_writes_parallel_results_in_the_order_of_their_calls(tmp_path):
    """ShareGPT pairs results with calls by position: results logged as they finished went to the wrong calls."""
    out, _ = _convert(tmp_path, PARALLEL, "sharegpt")
    back = api.read([str(out)])[0]
    assert sorted(_pairs(back)) == [("read_a", "A-result"), ("read_b", "B-result")]


@needs_corpus
def test_claude_code_parallel_results_keep_their_calls_in_sharegpt(tmp_path):
    src = CORPUS / "claude-code" / "spotter" / "tool_heavy.jsonl"
    out, _ = _convert(tmp_path, src, "sharegpt")
    before, after = api.read([str(src)])[0], api.read([str(out)])[0]
    assert sorted(_pairs(after)) == sorted(_pairs(before))
