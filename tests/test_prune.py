"""phases/prune.py and phases/prune_steps.py: what prune writes for a transcript and its options, pinned where mutation
testing (bench/mutation.py) found that no test looked: the defaults, the stats, the stopping point and the steps' edges."""

from __future__ import annotations

import re

import orjson

from compactctl import api
from compactctl.formats.openai import message_from_dict
from compactctl.model import Transcript
from compactctl.phases.prune import LITERALS_KEPT, PruneOptions
from compactctl.tokens import make_counter

COUNTER = make_counter("gpt-4o")


def T(rows: list[dict]) -> Transcript:
    return Transcript([message_from_dict(d, "t", i + 1, i) for i, d in enumerate(rows)], id="t")


def call(cid: str, name: str, args: dict) -> dict:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": cid, "type": "function", "function": {"name": name, "arguments": orjson.dumps(args).decode()}}],
    }


def res(cid: str, text: str) -> dict:
    return {"role": "tool", "tool_call_id": cid, "content": text}


def lint(lines: int, pad: int = 0) -> list[dict]:
    """An ask, a lint run whose output has `lines` warnings (and `pad` more tokens), the agent's last words."""
    body = "".join(f"src/app/module_{i}.py:{i}: warning: unused import os\n" for i in range(lines)) + " z" * pad
    return [
        {"role": "user", "content": "lint it"},
        call("a", "bash", {"command": "ruff check"}),
        res("a", body),
        {"role": "assistant", "content": "done"},
    ]


def total(t: Transcript) -> int:
    return sum(COUNTER.messages(t.messages))


# ---- the defaults


def test_by_default_the_last_12800_tokens_are_left_verbatim():
    """PruneOptions() protects the most recent 12,800 tokens: an output that, with the message after it, takes 12,801
    is digested; one a token shorter is not."""
    base = COUNTER.messages(T(lint(850)).messages)
    pad = 12_801 - base[2] - base[3]
    over = T(lint(850, pad))
    assert sum(COUNTER.messages(over.messages)[2:]) == 12_801
    out, st = api.prune(over, COUNTER)
    assert out.messages[2].text().startswith("[bash] ran `ruff check`") and st.protected_from == 3
    under = T(lint(850, pad - 1))
    out, st = api.prune(under, COUNTER)
    assert out.messages[2] is under.messages[2] and st.protected_from == 2


def test_a_digest_keeps_16_quoted_phrases_after_its_names():
    """An output's quoted phrases (a test's message) follow its names in its digest: the first 16 its line does not show."""
    body = "\n".join(f'FAILED test_{k} - assert "message number {k} here"' for k in range(30))
    rows = [{"role": "user", "content": "run the tests"}, call("a", "bash", {"command": "pytest"}), res("a", body)]
    rows += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"}]
    out, _ = api.prune(T(rows), COUNTER, PruneOptions(protect_tokens=5))
    names = out.messages[2].text().split("  names: ")[1]
    assert LITERALS_KEPT == 16
    assert re.findall(r'"[^"]*"', names) == [f'"message number {k} here"' for k in range(3, 19)]  # 0-2: its quoted lines


# ---- the stats


def test_the_stats_of_a_prune_count_what_each_pass_saved_and_nothing_else():
    t = T(lint(300) + [{"role": "user", "content": "thanks"}])
    out, st = api.prune(t, COUNTER, PruneOptions(protect_tokens=5))
    old, new = t.messages[2], out.messages[2]
    saved = {"count": 1, "chars": len(old.text()) - len(new.text()), "tokens": COUNTER.message(old) - COUNTER.message(new)}
    zero = {"count": 0, "chars": 0, "tokens": 0}
    assert st.as_dict() == {"dedup": zero, "summaries": saved, "args": zero, "images": zero, "protected_from": 4}


def test_without_token_counts_a_target_still_decides_and_no_target_counts_no_token():
    """count_tokens False (`prune` without --stats) with a target: the same output as counting them (the target needs
    the counts whatever it reports); with no target, the passes' tokens stay 0."""
    t = T(lint(300) + lint(320) + [{"role": "user", "content": "thanks"}])
    target = total(t) - 500
    for exact in (True, False):
        counted, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, target=target, exact_totals=exact))
        uncounted, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, target=target, exact_totals=exact, count_tokens=False))
        assert counted.messages[2] is not t.messages[2] and [m.text() for m in uncounted.messages] == [m.text() for m in counted.messages]
    _, st = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, count_tokens=False))
    assert st.summaries.count == 2 and st.summaries.chars > 0 and st.summaries.tokens == 0
