"""compact's second pass: when a summary must follow and leaves room under the target, or the last ask stretched the
tail, the newest outputs (the tail the plan keeps) stay verbatim instead of being digested (pipeline._grown)."""

from __future__ import annotations

import orjson

from compactctl import api
from compactctl.model import Transcript, is_summary
from compactctl.pipeline import _compact, _grown
from compactctl.summarizers.prompt import parse_sections
from compactctl.tokens import make_counter

from .rows import T

COUNTER = make_counter("gpt-4o")


def read(i: int) -> list[dict]:
    """A read of src/mod<i>.py: a dozen definitions, then comments (few names: its digest is small)."""
    args = orjson.dumps({"path": f"src/mod{i}.py"}).decode()
    body = "".join(f"def step_{i}_{k}(value_{k}): return compute_{i}(value_{k}) + {k}\n" for k in range(12))
    body += "    # nothing to see here, only comments in this block\n" * 60
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": f"r{i}", "type": "function", "function": {"name": "read_file", "arguments": args}}],
        },
        {"role": "tool", "tool_call_id": f"r{i}", "content": body},
    ]


def session(last_ask: str = "ok, keep going", reads: int = 6) -> Transcript:
    """Eight turns of prose (nothing prune can reduce, little a summary keeps), `last_ask` as the last of the person's
    turns, then `reads` file reads and the agent's last words."""
    return T(session_rows(last_ask, reads))


def session_rows(last_ask: str = "ok, keep going", reads: int = 6) -> list[dict]:
    """`session`'s messages as OpenAI chat rows."""
    rows = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix the parser in src/parse.py"}]
    for i in range(8):
        rows.append({"role": "assistant", "content": "I am thinking about how the overall design should go here. " * 40})
        rows.append({"role": "user", "content": last_ask if i == 7 else "ok, keep going"})
    for i in range(reads):
        rows += read(i)
    rows.append({"role": "assistant", "content": f"Read them all; editing src/mod{reads - 1}.py next."})
    return rows


def options(t: Transcript, ratio: float, **budget) -> api.CompactOptions:
    return api.CompactOptions(api.Budget(context_window=int(sum(COUNTER.messages(t.messages)) * ratio), **budget))


def verbatim(out: Transcript, m) -> bool:
    return any(x.text() == m.text() for x in out.messages)


def test_the_room_a_summary_leaves_keeps_the_newest_outputs_verbatim():
    t = session()
    opts = options(t, 0.8)
    first, rep1, _ = _compact(t, COUNTER, api.OfflineSummarizer(), opts)
    newest = t.messages[-2]  # the last read: over the tail's budget, so prune digests it
    assert rep1["status"] == "compacted" and not verbatim(first, newest)
    assert opts.budget.target - rep1["tokens_after"] > opts.budget.tail  # the summary left room
    out, rep = api.compact(t, COUNTER, api.OfflineSummarizer(), opts)
    assert verbatim(out, newest) and verbatim(out, t.messages[-4])
    assert rep["tail_grown"] == rep1["zones"]["tail"] + opts.budget.target - rep1["tokens_after"]
    assert rep1["tokens_after"] < rep["tokens_after"] <= opts.budget.target


def test_a_last_ask_that_stretched_the_tail_goes_to_the_summary_and_the_newest_reads_stay():
    """After "continue implementation" the agent read six files: the ask stretched the tail over all of them, and prune
    digested them (the ones the agent is about to edit too). The second pass keeps the newest verbatim in a tail of the
    same tokens and the ask, verbatim, in the summary."""
    t = session("continue implementation")
    opts = options(t, 0.6, summary_min=300)
    first, rep1, p1 = _compact(t, COUNTER, api.OfflineSummarizer(), opts)
    assert p1 is not None and p1.anchor_forced and not verbatim(first, t.messages[-2])
    out, rep = api.compact(t, COUNTER, api.OfflineSummarizer(), opts)
    assert verbatim(out, t.messages[-2]) and verbatim(out, t.messages[-4])
    assert rep["tokens_after"] <= opts.budget.target and rep["tail_grown"] > opts.budget.tail
    summary = next(m.text() for m in out.messages if is_summary(m))
    assert "continue implementation" in parse_sections(summary)["Active Task"]
    assert not any(m.role == "user" and m.text() == "continue implementation" for m in out.messages)


def test_last_ask_tail_keeps_the_stretched_tail():
    t = session("continue implementation")
    opts = options(t, 0.6, summary_min=300, last_ask="tail")
    first, rep1, _ = _compact(t, COUNTER, api.OfflineSummarizer(), opts)
    out, rep = api.compact(t, COUNTER, api.OfflineSummarizer(), opts)
    assert "tail_grown" not in rep and [m.text() for m in out.messages] == [m.text() for m in first.messages]


class Remote(api.OfflineSummarizer):
    """A summarizer that is not local (an LLM's place): each call would be paid for."""

    local = False
    calls = 0

    def summarize(self, req, counter):
        Remote.calls += 1
        return super().summarize(req, counter)


def test_no_second_pass_with_a_summarizer_that_is_not_local():
    t = session()
    opts = options(t, 0.8)
    Remote.calls = 0
    out, rep = api.compact(t, COUNTER, Remote(), opts)
    assert Remote.calls == 1 and "tail_grown" not in rep and not verbatim(out, t.messages[-2])


def test_a_tail_that_the_room_would_grow_by_little_is_left_as_it_is():
    """At a tight target the summary fills its room: no second pass (the output is the one pass's)."""
    t = session(reads=20)
    opts = options(t, 0.25)
    first, rep1, _ = _compact(t, COUNTER, api.OfflineSummarizer(), opts)
    assert rep1["status"] == "compacted"
    out, rep = api.compact(t, COUNTER, api.OfflineSummarizer(), opts)
    assert "tail_grown" not in rep and [m.text() for m in out.messages] == [m.text() for m in first.messages]


def test_no_grow_tail_keeps_the_first_pass_in_the_library_and_on_the_command_line(tmp_path):
    """`grow_tail=False` (`compact --no-grow-tail`): the one pass the prune | plan | summarize | repair chain writes."""
    import dataclasses

    from .conftest import cli

    t = session()
    opts = options(t, 0.8)
    first, _, _ = _compact(t, COUNTER, api.OfflineSummarizer(), opts)
    out, rep = api.compact(t, COUNTER, api.OfflineSummarizer(), dataclasses.replace(opts, grow_tail=False))
    assert "tail_grown" not in rep and [m.text() for m in out.messages] == [m.text() for m in first.messages]
    src = tmp_path / "s.jsonl"
    src.write_bytes(b"\n".join(orjson.dumps(m) for m in session_rows()) + b"\n")
    window = ["--context-window", str(opts.budget.context_window), "-q"]
    grown, plain = cli("compact", *window, str(src)), cli("compact", *window, "--no-grow-tail", str(src))
    chain = cli("prune", *window, str(src)).stdout
    for stage in ("plan", "summarize", "repair"):
        chain = cli(stage, *window, "-", input=chain).stdout
    assert plain.stdout == chain and grown.stdout != plain.stdout


def test_a_second_pass_that_keeps_the_same_messages_is_not_reported_as_grown():
    """From a review: `tail_grown` was reported when the room admitted no message more (the same output, byte for
    byte): eight turns of prose, each larger than the room a summary leaves."""
    rows = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix the parser in src/parse.py"}]
    for i in range(8):
        rows.append(
            {"role": "assistant", "content": f"Design note {i}: " + "I am thinking about how the overall design should go here. " * 40}
        )
        rows.append({"role": "user", "content": "ok, keep going"})
    t = T(rows)
    opts = options(t, 0.3)
    first, rep1, p = _compact(t, COUNTER, api.OfflineSummarizer(), opts)
    grown = _grown(rep1, p, opts)
    assert grown is not None and _compact(t, COUNTER, api.OfflineSummarizer(), grown)[0].messages == first.messages
    out, rep = api.compact(t, COUNTER, api.OfflineSummarizer(), opts)
    assert "tail_grown" not in rep and out.messages == first.messages
