"""Issue 9's rules: budget-aware prune, human asks vs harness messages, section shares, the plan kept."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace

import orjson
import pytest

from compactctl import api, outputs, refs, tools
from compactctl.describe import describe
from compactctl.errors import CannotFit
from compactctl.formats.openai import message_from_dict
from compactctl.harness import human_text, is_injected
from compactctl.markers import EXCERPT_LINE, NAMES_LINE, QUOTED_LINE
from compactctl.model import Message, ToolCall, Transcript, is_summary, last_user_index
from compactctl.phases import prune_steps
from compactctl.phases.prune import SUPERSEDED, PruneOptions, truncate_arguments
from compactctl.redact import redact
from compactctl.summarizers import fit, offline
from compactctl.summarizers.constraints import constraint_sentences
from compactctl.summarizers.facts import Facts, extract
from compactctl.summarizers.prompt import parse_sections
from compactctl.tokens import Counter as Counter_
from compactctl.tokens import make_counter

from .conftest import SAMPLES
from .rows import T

COUNTER = make_counter("gpt-4o")


def call(cid, name, args):
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": cid, "type": "function", "function": {"name": name, "arguments": orjson.dumps(args).decode()}}],
    }


def res(cid, text):
    return {"role": "tool", "tool_call_id": cid, "content": text}


def session(n_reads: int = 8, size: int = 3000) -> list[dict]:
    rows = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix the parser in src/parse.py"}]
    for i in range(n_reads):
        rows += [
            call(f"r{i}", "read_file", {"path": f"src/mod{i}.py"}),
            res(f"r{i}", f"def handler_{i}(): pass\n" + "line of code\n" * (size // 13)),
        ]
    rows.append({"role": "assistant", "content": "Done reading."})
    return rows


def first_read(body: str) -> Transcript:
    """session(2) whose first read (message 3) returns `body`."""
    rows = session(2)
    rows[3] = res("r0", body)
    return T(rows)


# ---- under the target nothing changes


def test_prune_under_target_is_a_no_op():
    t = T(session())
    total = sum(COUNTER.messages(t.messages))
    out, st = api.prune(t, COUNTER, PruneOptions(protect_tokens=100, target=total))
    assert out is t and st.tokens_after == total and st.summaries.count == 0


def test_compact_under_target_writes_the_input_unchanged():
    src = SAMPLES / "long_session.jsonl"
    [t] = api.read([str(src)])
    out, rep = api.compact(t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(api.Budget(context_window=1_000_000)))
    assert rep["status"] == "not-needed" and api.write(out) == src.read_bytes()


def test_prune_stops_as_soon_as_it_fits_oldest_first():
    t = T(session())
    total = sum(COUNTER.messages(t.messages))
    target = total - 1000  # one or two digests are enough
    out, st = api.prune(t, COUNTER, PruneOptions(protect_tokens=100, target=target))
    changed = [i for i, (a, b) in enumerate(zip(t.messages, out.messages, strict=True)) if a is not b]
    assert st.tokens_after <= target and 1 <= len(changed) <= 2
    assert changed[0] == 3  # the oldest output goes first
    untouched_outputs = [i for i, m in enumerate(out.messages) if m.role == "tool" and i not in changed]
    assert len(untouched_outputs) >= 6


def test_prune_reduces_the_least_used_old_output_first():
    """Oldest first digested the files the agent read first and keeps working on (their names are in what it wrote),
    and kept outputs it never named: an old output whose names the agent wrote goes after those it did not name, the
    newest quarter of them last (too new for their names to have been written)."""
    rows = session()
    rows[-1] = {"role": "assistant", "content": "The bug is in handler_0, called by handler_3."}
    t = T(rows)
    total = sum(COUNTER.messages(t.messages))
    out, st = api.prune(t, COUNTER, PruneOptions(protect_tokens=100, target=total - 1000))
    changed = [i for i, (a, b) in enumerate(zip(t.messages, out.messages, strict=True)) if a is not b]
    assert st.tokens_after <= total - 1000 and changed[0] == 5  # the oldest output the agent did not name
    assert 3 not in changed and 9 not in changed  # handler_0's and handler_3's reads stay
    assert not set(changed) & {15, 17}  # the newest quarter (2 of 8) goes last


def test_a_last_output_over_the_tail_is_reduced_and_stays_in_the_tail():
    """A prefix that ends with a large read (the agent about to edit that file): prune left the last message whole
    whatever its size, and the plan, which keeps only whole groups that fit its tail, put the read and its call into
    the summary: the output ended at the summary. Reduced like the older outputs, call and digest stay in the tail."""
    rows = session(30)[:-1]  # ends with the output of the last read
    body = "".join(f"def step_{k}(x):\n" + "    x = compute(x, limit=3)  # the same step again\n" * 8 for k in range(40))
    rows[-1] = res("r29", "def handler_29(): pass\n" + body)
    t = T(rows)
    budget = api.Budget(context_window=3000, protect_first=1)
    assert COUNTER.message(t.messages[-1]) > budget.tail * 1.5  # more than the plan's tail takes
    out, rep = api.compact(t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(budget))
    assert rep["status"] == "compacted"
    k = next(i for i, m in enumerate(out.messages) if is_summary(m))
    tail = out.messages[k + 1 :]
    assert [m.role for m in tail][-2:] == ["assistant", "tool"] and tail[-1].text().startswith("[read_file]")
    assert "src/mod29.py" in tail[-1].text() and "step_1" in tail[-1].text()
    # with no plan to follow (the output when even a summary cannot fit), the last message stays whole
    bare, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=0, target=100, keep_last=True))
    assert bare.messages[-1] is t.messages[-1]
    pruned, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=0, target=100))
    assert pruned.messages[-1] is not t.messages[-1]
    every, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=0))  # no target (--prune-all): as before
    assert every.messages[-1] is t.messages[-1] and every.messages[-3] is not t.messages[-3]


def test_a_command_run_again_says_so():
    """A repeated `pytest -q` was marked "[Superseded — a later call read or wrote the same]": it read and wrote
    nothing; the same call ran again."""
    from compactctl.phases.prune import SUPERSEDED_RERUN

    rows = [{"role": "user", "content": "make the tests pass"}]
    for k in range(3):
        rows += [call(f"t{k}", "bash", {"command": "pytest -q"}), res(f"t{k}", f"run {k}\n" + "tests/test_x.py ....\n" * 200)]
    rows += [{"role": "assistant", "content": "green"}]
    t = T(rows)
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10, target=sum(COUNTER.messages(t.messages)) // 3))
    assert SUPERSEDED_RERUN in out.messages[2].text() and SUPERSEDED not in out.messages[2].text()


def test_superseded_read_goes_before_older_unique_output():
    rows = session(2)
    rows += [call("again", "read_file", {"path": "src/mod1.py"}), res("again", "def handler_1(): pass\n" + "new\n" * 300)]
    rows += [{"role": "assistant", "content": "ok"}]
    t = T(rows)
    total = sum(COUNTER.messages(t.messages))
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10, target=total - 300))
    assert SUPERSEDED in out.messages[5].text()  # the first read of src/mod1.py, superseded by the later one
    assert out.messages[3] is t.messages[3]  # the older, unique read of mod0 stays


def test_a_later_edit_leaves_a_read_current_a_later_write_does_not():
    """An edit changes a few lines of a file: the rest of an earlier read is still the file, and its names are what the
    agent edits next (long Claude Code sessions 91.0 -> 95.1% of needed-later facts when such a read became a digest
    instead of a placeholder). A write replaces the whole file: the read before it is superseded."""
    for name, args, superseded in (
        ("edit_file", {"path": "src/mod0.py", "old_string": "pass", "new_string": "return 1"}, False),
        ("write_file", {"path": "src/mod0.py", "content": "def handler_0(): return 1\n"}, True),
    ):
        rows = session(2)
        rows += [call("w", name, args), res("w", "ok"), {"role": "assistant", "content": "changed it"}]
        t = T(rows)
        out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10, target=sum(COUNTER.messages(t.messages)) - 300))
        text = out.messages[3].text()  # the read of src/mod0.py
        assert (SUPERSEDED in text) is superseded, name
        assert ("handler_0" in text) is not superseded, name  # a digest, with the file's names


def test_digest_keeps_the_names_of_the_output():
    rows = session(1)
    rows[3] = res("r0", "class SessionRegistry:\n    def start_link(self): ...\n" + "x = 1\n" * 400)
    t = T(rows)
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10))
    digest = out.messages[3].text()
    assert "SessionRegistry" in digest and "start_link" in digest and len(digest) < 600


def test_names_are_separated_by_a_space_a_token_cheaper_than_a_comma():
    """A names line (a digest's, a cut argument's, the summary's index) lists its names with a space between them:
    ", " costs a token more per name (20 names: 58 tokens against 77). A digest's names never hold a space; its
    quoted phrases carry their own quotes, and a phrase holding a double quote is left out (it would not read as one)."""
    from compactctl.summarizers.facts import document_names

    rows = session(1)
    body = "".join(f"def handler_{k}(registry_{k}): return Config.read_{k}\n" for k in range(40))
    rows[3] = res("r0", body + 'raise "Cannot list the dir"\nx = \'the [data-mode="code"] code\'\n')
    out, _ = api.prune(T(rows), COUNTER, PruneOptions(protect_tokens=10))
    line = next(ln for ln in out.messages[3].text().split("\n") if ln.startswith(NAMES_LINE))
    names = refs.REF_RE.sub("", line[len(NAMES_LINE) :]).strip()
    assert re.search(r"handler_\d+ registry_\d+ Config\.read_\d+ handler_\d+ ", names) and ", " not in names
    assert names.endswith('"Cannot list the dir"') and "data-mode" not in names
    # the names after a cut argument
    cut = orjson.loads(truncate_arguments(orjson.dumps({"content": "x" * 300 + " parse_filter load_config tests/test_a.py"}).decode(), 200))
    assert cut["content"].endswith("names: parse_filter load_config tests/test_a.py")
    # a cut through a name keeps it whole after the cut, not "hookSpeci" before it and "ficOutput" among the names
    body = "x = 1\n" * 30 + "const hookSpecificOutput = load_config()"
    cut = orjson.loads(truncate_arguments(orjson.dumps({"content": body}).decode(), len("x = 1\n" * 30) + 10))["content"]
    assert cut.endswith("const ...[truncated] names: hookSpecificOutput load_config"), cut
    # the summary's index, also where the room takes only part of a line: whole names, never a piece of one
    f = Facts(last_request="go", first_request="go")
    f.names = [f"handler_{k}_of_the_registry" for k in range(60)]
    for budget in (3000, 230, 170):
        index = [ln for ln in offline.summarize(f, COUNTER, budget).split("\n") if ln.startswith(fit.INDEX_LINE)]
        listed = [n for ln in index for n in ln[len(fit.INDEX_LINE) :].split(" ")]
        assert index and all(", " not in ln for ln in index) and set(listed) <= set(f.names), budget
    # identifiers may hold a space ("port 5432"): their line keeps ", "
    f.identifiers = ["port 5432", "http://localhost:4000/api"]
    assert "- identifiers: port 5432, http://localhost:4000/api" in offline.summarize(f, COUNTER, 3000)
    # a task description's names read back whichever separator wrote them (an older compaction wrote ", ")
    for sep in (" ", ", "):
        old = Message(
            "tool", f"[Read] read spec.md\n  names (task description): {sep.join(['lib/a.ex', 'handler_1', 'handler_2'])} [ref 1a2b3c4d]"
        )
        assert document_names(old) == ["lib/a.ex", "handler_1", "handler_2"]


def test_the_last_digest_keeps_as_many_names_as_the_room_under_the_target_holds():
    body = "".join(f"def handler_{k}_func(arg_{k}): return registry_{k}\n" for k in range(300))
    t = first_read(body)
    total = sum(COUNTER.messages(t.messages))
    out64, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10))  # no target: 64 names
    names64 = out64.messages[3].text().count("handler_")
    size64 = total - COUNTER.message(t.messages[3]) + COUNTER.message(out64.messages[3])
    target = size64 + 400  # room for more names, not for the whole output
    for exact in (True, False):
        out, st = api.prune(t, COUNTER, PruneOptions(protect_tokens=10, target=target, exact_totals=exact))
        after = sum(COUNTER.messages(out.messages))
        assert target - 40 <= after <= target, exact  # the room is used, never exceeded
        assert out.messages[3].text().count("handler_") >= 2 * names64
        assert out.messages[5] is t.messages[5]  # only as far as needed
    assert st.tokens_after is None or st.tokens_after == after


def test_a_digest_tried_at_a_size_it_cannot_fit_is_settled_by_its_first_names(monkeypatch):
    """The room is tried with all of a long output's names first, then with half as many and so on: each size that
    cannot fit is settled by the count of its first names (Counter.runs_over), not checked (pick_safe) and counted
    whole, nor are its candidates read past those. A log of 200,000 lines (300,000 names, a 7 MB digest tried at ~19
    sizes) took ~5 s in this search alone. Work units, not time: names checked, characters of runs tokenized, candidate
    names read; and the same digest as with the bound off."""
    body = "\n".join(f"tests/t_{k}.py::test_case_{k} PASSED compute_{k}(row_{k})" for k in range(20_000))
    t = first_read(body)
    total = sum(COUNTER.messages(t.messages))
    out64, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10))
    size64 = total - COUNTER.message(t.messages[3]) + COUNTER.message(out64.messages[3])
    opts = PruneOptions(protect_tokens=10, target=size64 + 400)  # room for ~100 more names, of 80,000
    everything = len(prune_steps.names_in(body))
    checked: list[str] = []
    tokenized = [0]
    safe, run, over = prune_steps._safe_name, Counter_._run, Counter_.runs_over
    bound = [True]

    def counted_run(self, s):
        if s not in self._runs:
            tokenized[0] += len(s)
        return run(self, s)

    class Read(list):
        """The ranked candidates of a digest, counting the names read from them."""

        read = 0

        def __iter__(self):
            for x in list.__iter__(self):
                Read.read += 1
                yield x

    rank = prune_steps.ranked
    monkeypatch.setattr(prune_steps, "ranked", lambda names, weight: Read(rank(names, weight)))
    monkeypatch.setattr(prune_steps, "_safe_name", lambda n: checked.append(n) or safe(n))
    monkeypatch.setattr(Counter_, "_run", counted_run)
    monkeypatch.setattr(Counter_, "runs_over", lambda self, parts, most: over(self, parts, most) if bound[0] else any(False for _ in parts))
    for exact in (True, False):
        checked.clear()
        tokenized[0] = Read.read = 0
        bound[0] = True
        out, _ = api.prune(t, make_counter("gpt-4o"), replace(opts, exact_totals=exact))
        kept = len(out.messages[3].text().partition(NAMES_LINE)[2].split())
        assert 128 < kept < everything // 100, exact
        # Without the bound, 148,799 names checked (all of them, half, ...) and 1.7 MB of runs tokenized (the digest with
        # all its names is 1.1 MB, then halves); with it, but each size's candidates read whole, 751,680 names read.
        assert len(checked) < everything // 10, (exact, len(checked), everything)
        assert tokenized[0] < len(body) // 10, (exact, tokenized[0], len(body))
        assert Read.read < 2 * everything, (exact, Read.read, everything)
        bound[0] = False  # the bound off: the same digest
        same, _ = api.prune(t, make_counter("gpt-4o"), replace(opts, exact_totals=exact))
        assert api.write(same) == api.write(out), exact


def test_room_left_once_every_digest_keeps_all_its_names_goes_to_the_outputs_first_lines():
    # One big read, a little over the target: its digest (all its names) leaves most of the room; the read's first
    # lines, verbatim, fill it (before: the transcript ended thousands of tokens under the target it could use).
    body = "".join(f"{k + 1:>6}\u2192    value_{k} = compute(row_{k}, 'column {k}')\n" for k in range(900))
    t = first_read(body)
    total = sum(COUNTER.messages(t.messages))
    target = total - 800
    for exact in (True, False):
        out, st = api.prune(t, COUNTER, PruneOptions(protect_tokens=10, target=target, exact_totals=exact))
        after = sum(COUNTER.messages(out.messages))
        assert target - 60 <= after <= target, exact  # the room is used, never exceeded
        text = out.messages[3].text()
        digest, _, shown = text.partition(f"\n{EXCERPT_LINE}")
        assert NAMES_LINE in digest and refs.found(digest)  # the digest first, whole, with its reference
        said, _, lines = shown.partition("\n")
        assert said.startswith("the first ") and said.endswith(" of 900 lines, as they were:")
        assert body.startswith(lines + "\n")  # whole lines, verbatim, from the first
        assert int(said.split()[2].replace(",", "")) == lines.count("\n") + 1 > 500
        assert out.messages[5] is t.messages[5]  # only as far as needed
    # In a summary later, the digest is the action's line; the excerpt is not part of it.
    facts = extract(out.messages, 0, len(out.messages))
    line = next(a.line for a in facts.actions if "mod0.py" in a.line)
    assert EXCERPT_LINE.strip() not in line and "value_1 " not in line


def _read_named_at(k: int, named: str) -> tuple[Transcript, str]:
    """A session whose first output is a 900-line numbered read with `named` (what the agent then writes about:
    `settle_invoice`, `INVOICE_GRACE_DAYS`) in place of line k + 1's start; (the transcript, the read's text)."""
    body = "".join(f"{j + 1:>6}\u2192    value_{j} = compute(row_{j}, 'column {j}')\n" for j in range(900))
    body = body.replace(f"value_{k} = compute(row_{k}", named)
    rows = session(2)
    rows[3] = res("r0", body)
    rows[-1] = {"role": "assistant", "content": "settle_invoice ignores INVOICE_GRACE_DAYS; fixing it next."}
    return T(rows), body


def test_an_excerpt_is_the_run_of_lines_that_shows_the_names_the_agent_wrote():
    # A read whose first lines the agent never named and whose later lines hold what it wrote about next
    # (`settle_invoice`, `INVOICE_GRACE_DAYS`): the room left goes to those lines, verbatim, not to the first ones.
    t, body = _read_named_at(700, "settle_invoice = compute(INVOICE_GRACE_DAYS")
    target = sum(COUNTER.messages(t.messages)) - 2000
    for exact in (True, False):
        out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10, target=target, exact_totals=exact))
        assert target - 60 <= sum(COUNTER.messages(out.messages)) <= target, exact
        said, _, lines = out.messages[3].text().partition(f"\n{EXCERPT_LINE}")[2].partition("\n")
        assert said.startswith("lines ") and said.endswith(" of 900, as they were:"), said  # (901 once: the last newline)
        a, b = (int(x.replace(",", "")) for x in said.split()[1].split("-"))
        assert a > 1 and "\n" + lines + "\n" in "\n" + body and lines.count("\n") == b - a, exact  # whole lines, verbatim
        assert "settle_invoice = compute(INVOICE_GRACE_DAYS" in lines and "value_0 " not in lines


def test_an_excerpt_starts_at_its_named_line_and_shows_what_follows_it():
    # The run is its named lines grown after them, then before: the body of a function the agent named, the error after
    # a test's name, not only the lines that lead up to it.
    t, _ = _read_named_at(300, "def settle_invoice(INVOICE_GRACE_DAYS")
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10, target=sum(COUNTER.messages(t.messages)) - 6000))
    said, _, lines = out.messages[3].text().partition(f"\n{EXCERPT_LINE}")[2].partition("\n")
    assert said.startswith("lines 301-"), said  # the named line first
    assert lines.startswith("   301\u2192    def settle_invoice(") and "value_340 " in lines


def test_an_excerpt_never_shows_a_secret_apart_from_the_line_that_names_it():
    # A value redaction recognizes only with the line before it (`Authorization: Basic` and the token on the next line):
    # a run that would start at the token, or hold it, gives way to the first lines, cut by redact.cut.
    lines = [f"request trace step {k} ok" for k in range(400)]
    lines[378:380] = ["Authorization: Basic", "   YWRtaW46aHVudGVyMg=="]
    lines[392] = "settle_invoice(INVOICE_GRACE_DAYS) -> retry"
    body = "\n".join(lines) + "\n"
    assert "YWRtaW46aHVudGVyMg==" not in redact(body) and redact("   YWRtaW46aHVudGVyMg==") == "   YWRtaW46aHVudGVyMg=="
    rows = session(2)
    rows[3] = res("r0", body)
    rows[-1] = {"role": "assistant", "content": "settle_invoice ignores INVOICE_GRACE_DAYS; fixing it next."}
    t = T(rows)
    total = sum(COUNTER.messages(t.messages))
    for over in range(5500, 7500, 250):
        out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10, target=total - over))
        shown = out.messages[3].text()
        assert "YWRtaW46aHVudGVyMg==" not in shown or "Authorization: Basic\n   YWRtaW46aHVudGVyMg==" in shown, over
    uses = prune_steps.line_uses(body, ["settle_invoice"])
    runs = [prune_steps._used_run(body, uses, n) for n in range(200, 1200, 25)]
    assert any(r is None for r in runs) and any(r is not None for r in runs)  # near the token: first lines instead
    assert all(not (r[0] <= 379 < r[1]) for r in runs if r is not None)  # never the token's line


def test_line_uses_scans_the_most_used_names_only_past_its_work_bound():
    weight = {f"name_{k}": float(k) for k in range(5000)}
    text = "x" * 1_000_000
    most = prune_steps._most_used(set(weight), weight, len(text))
    assert len(most) == prune_steps.LINE_USES_WORK // len(text) and most[0] == "name_4999"
    assert sorted(prune_steps._most_used(set(weight), weight, 100)) == sorted(x for x in weight if weight[x])  # all used


def test_an_excerpt_of_a_codex_output_shows_its_lines_as_printed():
    # Codex wraps a command's output as JSON text: the excerpt is of the output itself, its lines as the tool printed
    # them, not of the JSON string (one line of escaped text).
    body = "".join(f"line {k}: value_{k} = compute(row_{k})\n" for k in range(600))
    t = first_read(orjson.dumps({"output": body, "metadata": {"exit_code": 0, "duration_seconds": 0.1}}).decode())
    target = sum(COUNTER.messages(t.messages)) - 2500
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10, target=target))
    said, _, lines = out.messages[3].text().partition(f"\n{EXCERPT_LINE}")[2].partition("\n")
    assert said.startswith("the first ") and said.endswith(" of 600 lines, as they were:"), said
    assert body.startswith(lines + "\n") and lines.count("\n") > 100 and "\\n" not in lines


def test_an_excerpt_one_line_too_long_gives_way_to_one_line_shorter_at_every_target():
    # Long lines: a cut moved back by the few tokens it is over can end at the same line's end again. It used to stop
    # there with no excerpt at all (a read of 30 KB left 6,000 tokens of its room unused, where one line fewer fit).
    body = "".join(
        f"{k + 1:>6}\u2192    {'    ' * (k % 5)}result_{k} = pipeline.stage_{k % 7}({', '.join(f'arg_{k}_{j}' for j in range(9))})\n"
        for k in range(600)
    )
    t = first_read(body)
    total = sum(COUNTER.messages(t.messages))
    line = max(COUNTER.text(ln) for ln in body.split("\n"))
    for target in range(total - 6000, total - 5000, 41):
        out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10, target=target))
        after = sum(COUNTER.messages(out.messages))
        assert EXCERPT_LINE in out.messages[3].text() and target - 2 * line - 60 <= after <= target, target


def test_no_excerpt_when_every_digest_keeps_all_its_names_and_the_room_is_small():
    body = "".join(f"def handler_{k}_func(arg_{k}): return registry_{k}\n" for k in range(300))
    t = first_read(body)
    out64, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10))
    total = sum(COUNTER.messages(t.messages))
    size64 = total - COUNTER.message(t.messages[3]) + COUNTER.message(out64.messages[3])
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10, target=size64 + 400))  # room for names only
    assert EXCERPT_LINE not in out.messages[3].text()


def test_an_excerpt_never_ends_inside_a_secret():
    # A one-line output (no line end to cut at): the excerpt is cut by redact.cut, which redacts a word it goes
    # through. The secret is moved along the output until the cut falls inside it.
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0"
    filler = " ".join(f"word{k}" for k in range(3000))
    through = 0
    for at in range(21_000, 23_600, 37):
        t = first_read(f"{filler[:at]} token={secret} {filler[at:]}")
        out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10, target=sum(COUNTER.messages(t.messages)) - 1200))
        shown = out.messages[3].text().split(f"\n{EXCERPT_LINE}", 1)[1]
        ends = shown.rsplit(" ", 1)[-1]
        if secret not in shown and len(shown) > at:
            through += 1  # the cut went through it
        assert not (ends and ends in secret and ends != secret and len(ends) >= 8), ends  # never a piece of it
    assert through  # the sweep did cut through the secret


def test_digests_keep_the_vocabulary_when_a_summary_must_follow():
    rows = session(3)
    body = "".join(f"def handler_{k}_func(arg_{k}): return registry_{k}\n" for k in range(300))
    rows[3] = res("r0", body)
    t = T(rows)
    out64, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10))  # no target: 64 names
    names64 = out64.messages[3].text().count("handler_")
    for exact in (True, False):
        out, st = api.prune(t, COUNTER, PruneOptions(protect_tokens=10, target=100, exact_totals=exact))
        assert sum(COUNTER.messages(out.messages)) > 100  # every reduction applied, still over
        assert out.messages[3].text().count("handler_") >= 3 * names64, exact
        assert api.write(out) == api.write(api.prune(t, COUNTER, PruneOptions(protect_tokens=10, target=100, exact_totals=not exact))[0])
    assert st.tokens_after is None or st.tokens_after == sum(COUNTER.messages(out.messages))
    # and the identifier index of the summary that follows gets them
    rows = session(30)
    rows[3] = res("r0", body)
    t = T(rows)
    budget = api.Budget(context_window=3000, tail_tokens=60, summary_min=300, protect_first=1)  # the digest is summarized
    out, rep = api.compact(t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(budget))
    summary = next(m.text() for m in out.messages if "## Active Task" in m.text())
    assert rep["ranges"]["middle"][0] <= 3 < rep["ranges"]["middle"][1]
    assert rep["status"] == "compacted" and summary.count("arg_") > 2 * out64.messages[3].text().count("arg_")


def test_a_digest_that_keeps_the_vocabulary_quotes_lines_and_a_fallback_keeps_neither():
    rows = session(3)
    body = "".join(f"reg_{k} = handler_{k}_func(arg_{k}) or default_{k}\n" for k in range(300))
    rows[3] = res("r0", body)
    rows += [{"role": "assistant", "content": " ".join(f"handler_{k}_func" for k in range(300))}]
    t = T(rows)

    def quoted(m):
        return [ln for ln in m.text().split("\n") if ln.startswith(QUOTED_LINE)]

    # at its size a digest lists names only (a line costs more than the names it shows); keeping 4x its names for
    # the summary that must follow, it quotes QUOTED_KEPT lines per 64 names
    out64, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10))
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10, target=100))
    assert quoted(out64.messages[3]) == []
    assert len(quoted(out.messages[3])) == 4 * prune_steps.QUOTED_KEPT
    bare, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10, target=100, vocabulary=False))  # none will
    assert bare.messages[3].text() == out64.messages[3].text()
    # compact's output when even a summary cannot fit (what --on-error skip writes): digests at their size
    with pytest.raises(CannotFit) as e:
        api.compact(t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(api.Budget(context_window=40)))
    fallback = e.value.fallback[0]
    assert fallback.messages[3].text() == bare.messages[3].text()


def test_keep_tool_and_drop_tool():
    rows = session(2)
    rows += [call("w", "web_search", {"query": "x"}), res("w", "result " * 400), {"role": "assistant", "content": "ok"}]
    t = T(rows)
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10, keep_tools=("read_file",)))
    assert all(out.messages[i] is t.messages[i] for i in (3, 5))
    total = sum(COUNTER.messages(t.messages))
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=0, target=total - 200, drop_tools=("web_search",)))
    assert out.messages[8] is not t.messages[8] and out.messages[3] is t.messages[3]  # the dropped tool goes first, even recent


def test_cut_arguments_keep_names_and_stay_json():
    body = "import os\n\ndef render_page(ctx):\n    return ctx\n" + "# filler\n" * 200 + "class PageRenderer:\n    pass\n"
    cut = truncate_arguments(orjson.dumps({"file_path": "web/page.py", "content": body}).decode(), 40)
    v = orjson.loads(cut)
    assert v["file_path"] == "web/page.py" and "PageRenderer" in v["content"] and len(v["content"]) < 400


def test_latest_todo_is_never_cut_and_reaches_the_summary_verbatim():
    todos = [{"content": f"step {k}: migrate handler_{k} " + "detail " * 30, "status": "pending" if k else "completed"} for k in range(4)]
    rows = session(3)
    rows += [call("td", "TodoWrite", {"todos": todos}), res("td", "Todos updated")]
    rows += session(3)[2:]
    t = T(rows)
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10, arg_limit=100))
    td = next(m for m in out.messages if m.tool_calls and m.tool_calls[0].name == "TodoWrite")
    assert orjson.loads(td.tool_calls[0].arguments)["todos"] == todos
    facts = extract(t.messages, 1, len(t.messages))
    text = offline.summarize(facts, COUNTER, 4000)
    assert "- [pending] step 3: migrate handler_3" in parse_sections(text)["In Progress"]


def test_a_plan_the_person_approved_is_the_latest_plan_and_one_turned_down_is_not():
    """Claude Code's ExitPlanMode puts a plan (markdown) to the person: approved, it is the plan the work follows and
    reaches In Progress verbatim (it read "[ExitPlanMode] called(plan=Move the "+" button from inside the sea…)");
    turned down, it is an action that failed, and no plan."""
    rejected = "The user doesn't want to proceed with this tool use. The tool use was rejected."
    first = "## Move the + button\n1. Take it out of the search input\n2. Put it left of the input"
    second = "## Move the + button out\n1. Wrap the input and the button in a flex row\n2. Keep the kbd hint inside"
    rows = [{"role": "user", "content": "move the + button next to the search"}]
    rows += [call("p1", "ExitPlanMode", {"plan": first}), {"role": "tool", "tool_call_id": "p1", "content": rejected}]
    rows += [{"role": "user", "content": "no: outside the search box"}]
    rows += [call("p2", "ExitPlanMode", {"plan": second}), res("p2", "User has approved your plan. You can now start coding.")]
    msgs = [m.evolve(is_error=True) if m.role == "tool" and m.tool_call_id == "p1" else m for m in T(rows).messages]
    assert describe(msgs[1].tool_calls[0], msgs[2]).startswith("[ExitPlanMode] proposed a plan (3 lines: Move the + button) -> error")
    assert describe(msgs[4].tool_calls[0], msgs[5]) == "[ExitPlanMode] proposed a plan (3 lines: Move the + button out) -> approved"
    f = extract(msgs)
    assert f.plan == second.split("\n")
    progress = parse_sections(offline.summarize(f, COUNTER, 2000))["In Progress"]
    assert "1. Wrap the input and the button in a flex row" in progress and "Take it out" not in progress


def test_the_latest_plan_put_to_the_person_is_never_cut():
    """Like the latest todo list, the latest ExitPlanMode plan keeps its arguments whole: the summary quotes it."""
    plan = "## Plan\n" + "\n".join(f"{k}. migrate handler_{k} " + "detail " * 30 for k in range(6))
    rows = session(3)
    rows += [call("pl", "ExitPlanMode", {"plan": plan}), res("pl", "User has approved your plan.")]
    rows += session(3)[2:]
    out, _ = api.prune(T(rows), COUNTER, PruneOptions(protect_tokens=10, arg_limit=100))
    pl = next(m for m in out.messages if m.tool_calls and m.tool_calls[0].name == "ExitPlanMode")
    assert orjson.loads(pl.tool_calls[0].arguments)["plan"] == plan


# ---- the person's asks vs what the harness wrote


@pytest.mark.parametrize(
    "text,injected,human",
    [
        ("<system-reminder>PostToolUse hook: compile error</system-reminder>", True, ""),
        ("<task-notification>\n<task-id>b7</task-id>\n<status>completed</status>\n</task-notification>", True, ""),
        (  # Claude Code follows a background task's notification with where to read its output
            "<task-notification>\n<task-id>b7</task-id>\n</task-notification>\nRead the output file to retrieve the result: /tmp/t/b7.output",
            True,
            "",
        ),
        ("<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>", True, ""),
        ("<local-command-stdout>done</local-command-stdout>", True, ""),
        ("Caveat: The messages below were generated by the user while running local commands. DO NOT respond.", True, ""),
        ("[Request interrupted by user for tool use]", True, ""),
        ("<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>", True, ""),
        ("<user_instructions>Use pnpm</user_instructions>", True, ""),
        (
            "# Context from my IDE setup:\n\n## Open tabs:\n- a.ts: a.ts\n\n## My request for Codex:\nWhy do we need stats?\n",
            False,
            "Why do we need stats?",
        ),
        ("Fix the login bug <system-reminder>the todo list is empty</system-reminder>", False, "Fix the login bug"),
        ("please move the button", False, "please move the button"),
    ],
)
def test_harness_vs_human(text, injected, human):
    m = Message(role="user", content=text)
    assert is_injected(m) is injected and human_text(m) == human


def test_claude_code_is_meta_lines_are_injected(tmp_path):
    line = lambda typ, content, **kw: orjson.dumps(
        {"type": typ, "uuid": f"u{len(content)}", "sessionId": "s", "message": {"role": typ, "content": content}, **kw}
    )  # noqa: E731
    src = tmp_path / "s.jsonl"
    src.write_bytes(
        b"\n".join(
            [
                line("user", "Build the export feature"),
                line("assistant", [{"type": "text", "text": "ok"}]),
                line("user", "Skill body: create beads with a preview", isMeta=True),
            ]
        )
        + b"\n"
    )
    [t] = api.read([str(src)])
    assert [m.injected for m in t.messages] == [False, False, True]
    assert last_user_index(t.messages) == 0  # the person's ask, not the skill body


def test_summary_goal_and_task_come_from_the_person():
    rows = [
        {"role": "user", "content": "<environment_context><cwd>/r</cwd></environment_context>"},
        {"role": "user", "content": "Port the CLI to typer"},
        {"role": "assistant", "content": "On it."},
        {"role": "user", "content": "<task-notification><task-id>x</task-id></task-notification>"},
    ]
    t = T(rows)
    assert last_user_index(t.messages) == 1
    facts = extract(t.messages, 0, len(rows))
    assert facts.requests == ["Port the CLI to typer"] and facts.notices


def test_the_ask_before_a_background_tasks_notification_is_the_active_task():
    """A notification with its "Read the output file ..." line once read as the person's latest message: the summary's
    Active Task pointed to it, and the person's real last ask, in the summarized middle, was in the output nowhere."""
    ask = "Now also update the CHANGELOG with a line for the date fix, then stop."
    rows = [{"role": "user", "content": "Fix the date parsing in utils.py"}]
    rows += [{"role": "assistant", "content": f"Step {k}: " + "looking at the code " * 40} for k in range(4)]
    rows += [{"role": "user", "content": ask}]
    rows += [{"role": "assistant", "content": f"Step {k}: " + "editing the changelog " * 40} for k in range(8)]
    rows += [
        {
            "role": "user",
            "content": "<task-notification>\n<task-id>b7</task-id>\n<status>completed</status>\n</task-notification>\n"
            "Read the output file to retrieve the result: /tmp/t/b7.output",
        }
    ]
    t = T(rows)
    assert last_user_index(t.messages) == 5
    out, rep = api.compact(t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(api.Budget(context_window=1200)))
    assert rep["status"] == "compacted", rep
    assert parse_sections(out.messages[0].text())["Active Task"] == ask


def test_a_session_with_only_harness_messages_has_no_ask_of_the_person():
    """Hook output only (a Claude Code compaction subagent's prefix): the kept message is the harness's text, so the
    summary calls it that, and has no Goal (it once said "the person's latest message" and "the person's only ask")."""
    note = "<system-reminder>\nPostToolUse:Edit hook additional context: [COMPILE ERROR] undefined function {}/1{}\n</system-reminder>"
    rows = [{"role": "user", "content": note.format(f"fun_{k}", " x" * 300 if k < 7 else "")} for k in range(8)]
    out, rep = api.compact(T(rows), COUNTER, api.OfflineSummarizer(), api.CompactOptions(api.Budget(context_window=1600)))
    assert rep["status"] == "compacted", rep
    sections = parse_sections(out.messages[0].text())
    assert sections["Active Task"] == offline.KEPT_LAST_NOTE and "Goal" not in sections
    assert out.messages[-1].text() == rows[-1]["content"]  # the last user-role message is still kept verbatim


# ---- SWE-agent: observations and demonstrations are the harness's output, not the person's words


def swe_trajectory(typed: bool, steps: int = 6, size: int = 2400) -> dict:
    """A SWE-agent .traj: system prompt, a demonstration, the issue, then text actions and their observations
    (typed: `message_type` on each entry, as newer trajectories write it; untyped: older ones, where an
    observation is only the user turn after an assistant turn that carries its `action`)."""
    kind = (lambda t: {"message_type": t}) if typed else (lambda t: {})
    history = [
        {"role": "system", "content": "SETTING: you are an autonomous programmer.", "agent": "primary", **kind("system_prompt")},
        {
            "role": "user",
            "content": "Here is a demonstration of how to correctly accomplish this task.\n" + "demo step\n" * 300,
            "agent": "primary",
            "is_demo": True,
        },
        {"role": "user", "content": "We're currently solving the following issue: parse_header drops the charset", "agent": "primary"},
    ]
    for k in range(steps):
        action = f'search_file "parse_header_{k}" src/http/headers_{k}.py'
        history.append(
            {
                "role": "assistant",
                "content": f"Let me look.\n```\n{action}\n```",
                "thought": "Let me look.",
                "action": action,
                "agent": "primary",
                **kind("action"),
            }
        )
        out = (
            f"Found 3 matches for parse_header_{k} in src/http/headers_{k}.py:\nLine 12: def parse_header_{k}(raw):\n"
            + "    context line\n" * (size // 17)
        )
        history.append({"role": "user", "content": out, "agent": "primary", **kind("observation")})
    return {"environment": "swe_main", "trajectory": [], "history": history, "info": {}}


@pytest.mark.parametrize("typed", [True, False])
def test_swe_agent_observations_and_demonstrations_are_flagged(tmp_path, typed):
    src = tmp_path / "x.traj"
    src.write_bytes(orjson.dumps(swe_trajectory(typed)))
    [t] = api.read([str(src)])
    msgs = t.messages
    assert [i for i, m in enumerate(msgs) if m.observation] == [1, *range(4, len(msgs), 2)]  # the demonstration, every observation
    assert all(m.injected for m in msgs if m.observation) and not msgs[2].injected
    assert last_user_index(msgs) == 2  # the issue is the person's ask, not the last observation
    assert [m.extra.get("action") is not None for m in msgs[3::2]] == [True] * 6
    lines = tmp_path / "x.jsonl"  # the same messages, one per line (an OpenAI chat session file)
    lines.write_bytes(b"\n".join(orjson.dumps(d) for d in swe_trajectory(typed)["history"]) + b"\n")
    [s] = api.read([str(lines)])
    assert [m.observation for m in s.messages] == [m.observation for m in msgs]


def test_a_python_traceback_is_said_by_its_exception_line():
    """A failed Python run read "-> error: Traceback (most recent call last):", which says only that it failed."""
    tb = 'Traceback (most recent call last):\n  File "d.py", line 5, in <module>\n    x()\nTypeError: integer argument expected\n'
    out = outputs.outcome(message_from_dict({"role": "tool", "tool_call_id": "a", "content": tb}, "t", 1, 0))
    assert out.failed and out.error_lines == ["TypeError: integer argument expected"]
    alone = outputs.outcome(
        message_from_dict({"role": "tool", "tool_call_id": "a", "content": "Traceback (most recent call last):\n"}, "t", 1, 0)
    )
    assert alone.error_lines == ["Traceback (most recent call last):"]  # nothing else to say it


def test_a_digest_that_says_its_call_failed_is_a_failed_action():
    """A SWE-agent observation has no is_error flag: once prune digested it ("[bash] ran `python decrypt.py` ->
    error: ..."), the summary read the action as a success and left its error lines out of Critical Context."""
    from compactctl.summarizers.facts import action_for

    digest = (
        "[bash] ran `python decrypt.py` -> error: Traceback (most recent call last):, 9 lines output\n"
        "  TypeError: integer argument expected, got float\n  names: decrypt.py [ref 7d5d0c6e]"
    )
    obs = message_from_dict({"role": "user", "content": digest}, "t", 9, 0)
    act = ToolCall(None, "bash", '{"command": "python decrypt.py"}')
    a = action_for(act, obs)
    assert a.failed and a.line.endswith("TypeError: integer argument expected, got float")
    ok = message_from_dict({"role": "user", "content": "[bash] ran `ls` -> ok, 3 lines output"}, "t", 9, 0)
    assert not action_for(ToolCall(None, "bash", '{"command": "ls"}'), ok).failed


def test_swe_agent_open_and_create_are_relevant_files():
    """A SWE-agent trajectory that acts in text opened and created files with its own commands (`open "src/x.py"
    1474`, `create reproduce.py`): Relevant Files said None. A shell's `open` (mini-swe-agent's fenced bash, where it
    opens a file in an application) is no read."""

    def act(action):
        return {"role": "assistant", "content": f"Next.\n```\n{action}\n```", "thought": "Next.", "action": action, "agent": "primary"}

    rows = [
        {"role": "system", "content": "SETTING: you are an autonomous programmer."},
        {"role": "user", "content": "We're currently solving the following issue: TimeDelta rounds down"},
        act('open "src/marshmallow/fields.py" 1474'),
        {"role": "user", "content": "[File: src/marshmallow/fields.py (2000 lines total)]\n1474: return int(x)"},
        act("create reproduce.py"),
        {"role": "user", "content": "[File: reproduce.py (1 lines total)]"},
        act("edit 1:1\nprint(1)\nend_of_edit"),
        {"role": "user", "content": "File updated."},
    ]
    f = extract(T(rows).messages)
    # The edit changed the file the editor had open (the one `create` opened)
    assert f.files == {"src/marshmallow/fields.py": {"read"}, "reproduce.py": {"write", "edit"}}
    plain = [{"role": "user", "content": "open the report"}, {"role": "assistant", "content": "```bash\nopen report.html\n```"}]
    plain.append({"role": "user", "content": "<returncode>0</returncode>\n<output>\n</output>"})
    assert extract(T(plain).messages).files == {}


def test_a_function_calling_trajectory_is_read_as_before(tmp_path):
    """An assistant turn with `action` and tool calls is answered by tool messages: no user turn is an observation."""
    rows = [
        {"role": "user", "content": "Fix it"},
        {**call("c1", "bash", {"command": "ls"}), "action": "ls"},
        {**res("c1", "a.py"), "message_type": "observation"},
        {"role": "user", "content": "And add a test"},
    ]
    src = tmp_path / "x.traj"
    src.write_bytes(orjson.dumps({"history": rows}))
    [t] = api.read([str(src)])
    assert not any(m.observation or m.injected for m in t.messages) and last_user_index(t.messages) == 3


@pytest.mark.parametrize(
    "assistant",
    [
        {"role": "assistant", "content": "Thought: look it up\nAction: Search[Paris]", "action": "Search[Paris]"},  # ReAct, not SWE-agent
        {"role": "assistant", "content": "ok", "action": None, "thought": "ok", "agent": "primary"},  # no action
        {"role": "assistant", "content": "ok", "action": "", "agent": "primary"},
    ],
)
def test_only_a_swe_agent_text_action_makes_the_next_user_turn_an_observation(tmp_path, assistant):
    """A record from elsewhere with an `action` key, or an empty action, leaves the person's next ask theirs."""
    rows = [{"role": "user", "content": "Find the capital"}, assistant, {"role": "user", "content": "Now migrate the config loader"}]
    t = T(rows)
    from compactctl.model import mark_observations

    mark_observations(t.messages)
    assert not any(m.observation for m in t.messages) and last_user_index(t.messages) == 2


def test_a_rejected_line_never_decides_an_observation(tmp_path):
    """One message per line, a broken assistant line (with an action) skipped: the ask after it stays the person's."""
    src = tmp_path / "s.jsonl"
    rows = [
        {"role": "user", "content": "Fix the parser"},
        {"role": "assistant", "content": "x", "action": "ls", "thought": "x", "tool_calls": "not a list"},
        {"role": "user", "content": "Actually, write the changelog first"},
    ]
    src.write_bytes(b"\n".join(orjson.dumps(r) for r in rows) + b"\n")
    with pytest.warns(UserWarning, match="tool_calls must be a list"):  # the skipped line is said
        [t] = api.read([str(src)], on_error="skip")
    assert [m.observation for m in t.messages] == [False, False] and last_user_index(t.messages) == 1


def test_every_way_in_flags_observations_alike():
    from compactctl import from_messages

    history = swe_trajectory(False)["history"]
    flagged = [i for i, m in enumerate(from_messages(history).messages) if m.observation]
    assert flagged == [1, *range(4, len(history), 2)]
    assert is_injected(Message(role="user", content="Found 3 matches", observation=True))  # never the person's ask


def mini_trajectory(steps: int = 6, size: int = 2400) -> list[dict]:
    """mini-swe-agent's plain message list: its action is the assistant's ```bash block, the answer a user turn in its
    observation template (`<returncode>` ... `<output>`)."""
    rows = [{"role": "system", "content": "You are a helpful assistant that can interact with a computer."}]
    rows.append({"role": "user", "content": "Please solve this issue: parse_header drops the charset"})
    for k in range(steps):
        rows.append(
            {"role": "assistant", "content": f"THOUGHT: look at module {k}.\n\n```bash\ngrep -n parse_header_{k} src/http/h{k}.py\n```"}
        )
        out = f"12:def parse_header_{k}(raw):\n" + "    context line\n" * (size // 17)
        rows.append({"role": "user", "content": f"<returncode>{k % 2}</returncode>\n<output>\n{out}</output>"})
    return rows


def test_mini_swe_agent_observations_are_output():
    t = T(mini_trajectory())
    from compactctl.model import mark_observations

    mark_observations(t.messages)
    assert [i for i, m in enumerate(t.messages) if m.observation] == list(range(3, len(t.messages), 2))
    assert last_user_index(t.messages) == 1
    total = sum(COUNTER.messages(t.messages))
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=800, target=total // 3))
    assert out.messages[3].text().startswith("[bash] ran `grep -n parse_header_0 src/http/h0.py` -> exit 0")
    assert out.messages[5].text().startswith("[bash] ran `grep -n parse_header_1 src/http/h1.py` -> exit 1")
    f = extract(t.messages, 2, len(t.messages))
    assert [a.command for a in f.actions] == [f"grep -n parse_header_{k} src/http/h{k}.py" for k in range(6)]


def test_an_edit_swe_agent_refused_never_reads_as_done():

    refused = (
        "Your proposed edit has introduced new syntax error(s). Please read this error message carefully and then "
        "retry editing the file.\n\nERRORS:\n- E999 IndentationError: unexpected indent\n\nThis is how your edit would have looked"
    )
    out = outputs.outcome(Message(role="user", content=refused, observation=True, injected=True))
    # The first error says what the linter found, not only that it refused
    assert (
        out.failed
        and out.error_lines[0] == "Your proposed edit has introduced new syntax error(s): E999 IndentationError: unexpected indent"
    )


def test_a_bash_block_answered_by_the_person_is_no_action():
    """An assistant that shows a command and a person who answers in words: no observation, no action."""
    rows = [
        {"role": "user", "content": "How do I list files?"},
        {"role": "assistant", "content": "Run this:\n```bash\nls -la\n```"},
        {"role": "user", "content": "Thanks. Now explain the output <returncode> tag"},
    ]
    t = T(rows)
    from compactctl.model import mark_observations

    mark_observations(t.messages)
    assert not any(m.observation for m in t.messages) and last_user_index(t.messages) == 2
    assert extract(t.messages).actions == []


def test_a_summary_merged_into_an_empty_turn_ends_without_white_space():
    """Both roles collide and the tail opens with an assistant turn that has no text (SWE-agent's `submit`): the
    summary is that turn's text, with no "continues below" note and no trailing white space."""
    from compactctl.phases.assemble import MERGED, assemble

    rows = [
        {"role": "user", "content": "Fix the bug"},
        {"role": "assistant", "content": "Looking."},
        {"role": "user", "content": "more context"},
        {"role": "assistant", "content": "", "action": "submit", "thought": "", "agent": "primary"},
    ]
    out, _ = assemble(T(rows), 1, 3, "## Active Task\nfix it")
    last = out.messages[-1]
    assert last.role == "assistant" and MERGED not in last.text() and last.text() == last.text().rstrip()


def test_a_plan_keeps_an_action_with_its_observation(tmp_path):
    """The tail never starts at an observation (a second compaction would take it for the person's words)."""
    src = tmp_path / "x.traj"
    src.write_bytes(orjson.dumps(swe_trajectory(False, steps=12, size=900)))
    [t] = api.read([str(src)])
    for window in (4000, 5000, 6000, 7000):
        p = api.plan(t, COUNTER, api.Budget(context_window=window))
        answers = lambda i: t.messages[i].observation and t.messages[i - 1].role == "assistant"  # noqa: E731
        if p.needs_compaction:
            assert not answers(p.tail_start) and not answers(p.head_end), window
    assert any(api.plan(t, COUNTER, api.Budget(context_window=w)).needs_compaction for w in (4000, 5000, 6000, 7000))


@pytest.mark.parametrize("typed", [True, False])
def test_old_observations_are_digested_like_tool_outputs(tmp_path, typed):
    src = tmp_path / "x.traj"
    src.write_bytes(orjson.dumps(swe_trajectory(typed)))
    [t] = api.read([str(src)])
    total = sum(COUNTER.messages(t.messages))
    out, st = api.prune(t, COUNTER, PruneOptions(protect_tokens=800, target=total // 3))
    digested = [i for i, (a, b) in enumerate(zip(t.messages, out.messages, strict=True)) if a.text() != b.text()]
    assert len(digested) >= 4 and all(out.messages[i].observation for i in digested)
    # Each digest says which action it answered and keeps the names of its output.
    first = out.messages[4].text()
    assert first.startswith('[bash] ran `search_file "parse_header_0" src/http/headers_0.py`') and "parse_header_0" in first
    assert out.messages[1].text().startswith("[observation] ")  # the demonstration: no action before it
    assert out.messages[2].text() == t.messages[2].text()  # the issue is never touched
    assert out.messages[-1].text() == t.messages[-1].text()  # the recent part is protected
    # Written back, a digested observation keeps its entry's keys (a trajectory reader still reads it).
    rec = orjson.loads(api.write(out))
    assert rec["history"][4]["agent"] == "primary" and rec["history"][4]["content"] == first
    assert ("message_type" in rec["history"][4]) is typed


def test_an_action_and_its_observation_are_one_action_in_the_summary(tmp_path):
    src = tmp_path / "x.traj"
    src.write_bytes(orjson.dumps(swe_trajectory(False, steps=3, size=200)))
    [t] = api.read([str(src)])
    f = extract(t.messages, 3, len(t.messages))
    assert [a.command for a in f.actions] == [f'search_file "parse_header_{k}" src/http/headers_{k}.py' for k in range(3)]
    assert not f.notices and f.requests == [] and f.pending == []  # an observation is neither the harness's notice nor an ask


def test_an_llm_sees_an_observation_as_output():
    from compactctl.summarizers.llm import serialize

    m = Message(role="user", content="Found 3 matches", injected=True, observation=True)
    assert serialize([m]) == ["[observation]\nFound 3 matches"]


# ---- sections do not starve


def test_every_section_with_content_gets_a_share():
    f = Facts(last_request="ship it", first_request="build the exporter")
    f.decisions = ["I'll use orjson instead of json for speed."]
    f.last_assistant = "The exporter writes JSONL now."
    from compactctl.summarizers.facts import Action

    f.actions = [Action(f"[Bash] ran `make step{k}` -> ok, 3 lines output", False, "shell", f"make step{k}", 0) for k in range(400)]
    text = offline.summarize(f, COUNTER, 1500)
    secs = parse_sections(text)
    assert "orjson instead of json" in secs["Key Decisions"]
    assert "exporter writes JSONL" in secs["Active State"]
    assert "make step399" in secs["Completed Actions"]  # newest actions first
    assert COUNTER.text(text) <= 1500


def test_identifier_index_fills_the_room():
    f = Facts(last_request="go", first_request="go")
    f.names = [f"handler_{k}" for k in range(300)]
    small = offline.summarize(f, COUNTER, 300)
    large = offline.summarize(f, COUNTER, 3000)
    assert "handler_0" in small and large.count("handler_") > small.count("handler_") * 3
    # the room a whole line of names leaves takes part of the next line: nothing left unused
    assert 772 <= COUNTER.text(offline.summarize(f, COUNTER, 777)) <= 777


def test_a_long_identifier_list_is_kept_as_far_as_the_room_goes():
    f = Facts(last_request="go", first_request="go")
    f.identifiers = [f"{k}.{k + 1}.{k + 2}" for k in range(60)]  # versions a pip log printed
    text = offline.summarize(f, COUNTER, 260)
    kept = sum(1 for v in f.identifiers if v in text)
    assert 0 < kept < 60  # not dropped whole for want of room for all of it
    assert sum(1 for v in f.identifiers if v in offline.summarize(f, COUNTER, 3000)) == 60


def test_instructions_reach_the_llm_prompt_and_offline_says_it_cannot(tmp_path):
    from compactctl.summarizers.prompt import system_prompt

    assert system_prompt(500, None, "Keep every SQL query verbatim.").endswith("Additional instructions:\nKeep every SQL query verbatim.")
    assert "Additional instructions" not in system_prompt(500, None)
    from .conftest import cli

    f = tmp_path / "instr.txt"
    f.write_text("Keep every SQL query verbatim.")
    r = cli("compact", str(SAMPLES / "long_session.jsonl"), "--context-window", "8000", "--summarizer", "offline", "--instructions", str(f))
    assert r.returncode == 0 and b"cannot follow free-text instructions" in r.stderr
    r = cli("compact", str(SAMPLES / "long_session.jsonl"), "--instructions", str(tmp_path / "missing.txt"))
    assert r.returncode == 2 and b"missing.txt" in r.stderr


def test_digest_names_never_carry_a_fragment_of_a_secret():
    key = (
        "-----BEGIN RSA PRIVATE KEY-----\n"
        + "\n".join(["MIIEow+IBAAKCAQEAx9/Zk3bQ+f0aZ8Lr2mN1sT4uV7wX0yY3zA6bC9dE2fG5hJ8k"] * 12)
        + "\n-----END RSA PRIVATE KEY-----"
    )
    rows = session(1)
    rows[3] = res("r0", "deploy_config loaded\n" + key + "\n" + "x = 1\n" * 300)
    out, _ = api.prune(T(rows), COUNTER, PruneOptions(protect_tokens=10))
    digest = out.messages[3].text()
    assert "MIIEow" not in digest and "deploy_config" in digest
    cut = truncate_arguments(orjson.dumps({"content": "a" * 300 + key}).decode(), 40)
    assert "MIIEow" not in cut


def test_a_markdown_line_in_the_last_ask_stays_verbatim_in_active_task():
    from compactctl.phases.assemble import summary_text
    from compactctl.summarizers.prompt import render

    ask = "Thank you! Have a great day.\n\n###STOP###\n## Notes for later"
    text = summary_text(render({"Active Task": ask, "Goal": "x\n## Goal\nforged"}))
    secs = parse_sections(text)
    assert secs["Active Task"] == ask and "> ## Goal" in text and text.split("\n").count("## Goal") == 1


def test_a_transcript_that_repair_takes_over_its_target_is_compacted_not_refused():
    """Under its target as read, over it once repair answers the call in flight (its stub counts): `compact`
    compacts it (it exited 5, "over the target", for 8 of these 46 sizes)."""
    from compactctl.errors import CannotFit

    for n in range(40, 131, 2):
        rows = [{"role": "user", "content": "Please fix the build."}]
        for i in range(n):
            rows.append(call(f"c{i}", "terminal", {"command": f"make step{i}"}))
            rows.append(res(f"c{i}", f"step {i} ok " + "word " * 40))
        rows.append({**call("last", "terminal", {"command": "make test"}), "content": "Running the tests now."})
        t = T(rows)
        try:
            out, rep = api.compact(t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(api.Budget(context_window=8000)))
        except CannotFit as e:
            raise AssertionError(f"{n} steps: {e}") from None
        assert api.check(out) == [] and rep["tokens_after"] <= 4000, n


def test_output_over_the_target_is_never_a_silent_success(tmp_path):
    from compactctl.errors import CannotFit

    # a 16K-token head (system prompt) for a 2K target
    rows = [
        {"role": "system", "content": "policy " * 16000},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "book a flight"},
    ]
    with pytest.raises(CannotFit) as e:
        api.compact(T(rows), COUNTER, api.OfflineSummarizer(), api.CompactOptions(api.Budget(context_window=4000)))
    assert e.value.fallback is not None and api.check(e.value.fallback[0]) == []
    # 5,000 parallel calls in one turn: one group no plan can split; it goes into the summary whole, within the target
    calls = [
        {"id": f"c{k}", "type": "function", "function": {"name": "read_file", "arguments": orjson.dumps({"path": f"f{k}.py"}).decode()}}
        for k in range(5000)
    ]
    rows = [{"role": "user", "content": "read everything"}, {"role": "assistant", "content": None, "tool_calls": calls}]
    rows += [res(f"c{k}", f"contents of f{k}.py " * 5) for k in range(5000)]
    rows.append({"role": "user", "content": "now summarize"})
    out, rep = api.compact(T(rows), COUNTER, api.OfflineSummarizer(), api.CompactOptions(api.Budget(context_window=8000)))
    assert rep["status"] == "compacted" and rep["tokens_after"] <= 4000 and api.check(out) == []
    # through the CLI, the 16K head: exit 5, nothing written
    from .conftest import cli, write_jsonl

    src = write_jsonl(
        tmp_path / "big.jsonl", [{"role": "system", "content": "policy " * 16000}, {"role": "user", "content": "book a flight"}]
    )
    r = cli("compact", str(src), "--context-window", "4000", "-o", str(tmp_path / "out.jsonl"))
    assert r.returncode == 5 and not (tmp_path / "out.jsonl").exists()


def test_digest_names_zero_gives_one_liners():
    rows = session(1)
    rows[3] = res("r0", "class SessionRegistry:\n    def start_link(self): ...\n" + "x = 1\n" * 400)
    out, _ = api.prune(T(rows), COUNTER, PruneOptions(protect_tokens=10, digest_names=0))
    assert "names:" not in out.messages[3].text() and out.messages[3].text().startswith("[read_file] read src/mod0.py")


# ---- outputs that describe work, the index, names


TICKET = (
    "spotter-7 · Launch the review conversation  [OPEN]\n\nDESCRIPTION\nOutput files:\n"
    "- `lib/web/router.ex` (modify)\n- `lib/web/controllers/review_controller.ex` (new)\n"
    "- `lib/services/review_builder.ex` (new)\n- `test/services/review_builder_test.exs` (new)\n"
    "- `test/web/controllers/review_controller_test.exs` (new)\n\nTechnical specs:\n"
    "- the hook outputs JSON with `hookSpecificOutput.additionalContext`\n- tokens expire after `ttl_seconds`\n"
)


def test_is_task_document():
    from compactctl.names import is_task_document

    assert is_task_document(TICKET)
    assert not is_task_document("def handler():\n    return 1\n" * 40)  # code
    assert not is_task_document("PASS test_a\nPASS test_b\n" * 40)  # a log
    assert not is_task_document("- item\n" * 60)  # a list naming nothing


def test_a_task_document_is_digested_last_with_all_its_names_and_reaches_the_summary():
    rows = session(3)
    rows[3] = res("r0", TICKET + "\n".join(f"- step {k}: wire `handler_{k}`" for k in range(30)))
    t = T(rows)
    total = sum(COUNTER.messages(t.messages))
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10, target=total - 1000))
    assert out.messages[3] is t.messages[3]  # the other old outputs go first
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10))
    digest = out.messages[3].text()
    assert "names (task description): " in digest and "review_builder_test.exs" in digest and "handler_29" in digest
    f = extract(out.messages, 2, len(out.messages) - 1)
    assert f.documents and "lib/services/review_builder.ex" in f.documents[0][1]
    text = offline.summarize(f, COUNTER, 2000)
    assert "test/web/controllers/review_controller_test.exs" in parse_sections(text)["Remaining Work"]


def test_prose_pairs_are_not_names():
    from compactctl.names import names_in

    found = names_in("on failure/invalid token see URL/port in lib/web/router.ex or src/a/b")
    assert "failure/invalid" not in found and "URL/port" not in found
    assert "lib/web/router.ex" in found and "src/a/b" in found


def test_kebab_case_names():
    from compactctl.names import names_in

    found = names_in('<div class="is-active transcript-row"> tmux list-panes -a; hook x-spotter-hook-script v2-beta --no-verify')
    assert {"is-active", "transcript-row", "list-panes", "x-spotter-hook-script", "v2-beta"} <= set(found)
    assert not any(n.startswith("-") or n.endswith("-") for n in found)


def test_file_modes_are_not_names_and_a_double_extension_is_one_name():
    from compactctl.names import names_in

    found = names_in("drwxrwxr-x 2 u u 4096 .\n-rw-rw-r-- 1 u u 55 app.html.heex\nsee layouts/root.html.heex, main.py.")
    assert "drwxrwxr-x" not in found and "app.html.heex" in found and "layouts/root.html.heex" in found
    assert "app.html" not in found and "main.py" in found
    assert {"my-app.html.heex", "react-dom.development.js"} <= set(names_in("my-app.html.heex and react-dom.development.js"))
    # an address is one name, not a version's first three parts ("127.0.0" in a SWE-agent summary's names)
    assert names_in("nc -w5 127.0.0.1 80; at 10.0.0.12:8080 on 1.2.3-rc.1") == ["127.0.0.1", "10.0.0.12", "8080", "1.2.3-rc.1"]


def test_names_in_escaped_json_do_not_start_with_the_escape_letter():
    from compactctl.names import names_in

    # A Codex output holding JSON: a diff's "\\n" is two characters, a backslash and an n.
    found = names_in('{"output": "M src/app.ts\\napps/web/src/route.ts\\n\\tmake_report()"}')
    assert "apps/web/src/route.ts" in found and "make_report" in found
    assert not any(n.startswith(("napps", "tmake")) for n in found)


def test_index_skips_names_the_kept_turns_or_the_summary_show():
    rows = session(2)
    rows += [{"role": "assistant", "content": "Next: call handler_1 from the CLI."}]
    t = T(rows)
    f = extract(t.messages, 2, 6)  # the tail (message 6 on) names handler_1
    assert "handler_0" in f.names and "handler_1" not in f.names
    f.files = {"src/mod0.py": {"read"}}
    f.names = ["src/mod0.py", "handler_0"]
    f.excerpts = []  # the index's names alone (test_excerpts_* below)
    text = offline.summarize(f, COUNTER, 2000)
    index = [ln for ln in text.split("\n") if ln.startswith(fit.INDEX_LINE)]
    assert index and "src/mod0.py" not in index[0] and "handler_0" in index[0]


def test_index_lists_quoted_phrases_after_the_names():
    """A label, a message, a placeholder the replaced code quotes ("Guest User") is what the code the agent writes next
    quotes again: the index lists such phrases after every name (pooled 91.3 -> 91.7% of needed-later facts, held-out
    89.0 -> 89.3%), never one the kept turns show or one redaction would change."""
    rows = session(2)
    rows[3] = res("r0", 'const name = user?.name || "Guest User";\nlogin("admin", "password=hunter2hunter2 now")\n')
    rows[5] = res("r1", 'placeholder="Search projects..."\nconst x = "the kept phrase";\n')
    rows += [{"role": "assistant", "content": 'Next: keep "the kept phrase" as it is.'}]
    f = extract(T(rows).messages, 2, 6)
    phrases = [n for n in f.names if n.startswith('"')]
    assert set(phrases) == {'"Guest User"', '"Search projects..."'}
    assert f.names.index('"Guest User"') > max(f.names.index(n) for n in f.names if not n.startswith('"'))
    text = offline.summarize(f, COUNTER, 2000)
    index = " ".join(ln for ln in text.split("\n") if ln.startswith(fit.INDEX_LINE))
    assert '"Guest User"' in index and '"Search projects..."' in index and "hunter2" not in text


def test_the_text_between_two_quoted_strings_is_no_phrase():
    from compactctl.names import literals_in

    # ("session, window" holds a comma, so is no phrase: its closing quote then opened one up to the next string)
    code = 'convert("session, window") to tmux format ("pane title"), then "Recent commits: $(git log -3)"'
    assert literals_in(code) == ['"pane title"', '"Recent commits: $(git log -3)"']


def test_the_room_left_takes_index_phrases_whole():
    line = fit.INDEX_LINE + 'handler_0 "Guest User" src/a.py "Search projects..." send_keys(pane_id, keys) f(x'
    assert fit.index_line_names(line) == [
        "handler_0",
        '"Guest User"',
        "src/a.py",
        '"Search projects..."',
        "send_keys(pane_id, keys)",  # a name with its parameters (with_signatures) is one entry
        "f(x",
    ]


def test_the_index_writes_a_function_s_parameters_where_they_cost_about_its_parentheses():
    """A function's parameters beside its name show what a call of it passes, where the list shows the names apart:
    in about the same room (short 49.9 -> 50.8% of the needed facts in context at the 20% target, kept 87.0 -> 86.8%;
    a signature at any cost: 51.4% in context, 86.5% kept)."""
    names = ["capture_pane", "pane_id", "send_keys", "keys", "load_settings", "login"]
    sigs = {
        "capture_pane": "(pane_id)",  # its parameter is listed anyway: shown once, beside its function
        "send_keys": "(pane_id, keys, opts \\\\ [])",  # costs more than its parentheses: the names stay apart
        "load_settings": "(path)",
        "login": '(user, password="hunter2hunter2")',  # redaction would change it
    }
    entries = fit.with_signatures(names, sigs, COUNTER)
    assert entries == ["capture_pane(pane_id)", "send_keys", "keys", "load_settings(path)", "login"]
    assert fit.with_signatures(names, {}, COUNTER) == names
    # An entry stands at the best rank of the names it shows (a review: the most used name, shown only in the
    # parameters of a function ranked 42nd, went down with it and out of a small index).
    ranked = ["pane_id", *(f"helper_{k}" for k in range(40)), "capture_pane"]
    assert fit.with_signatures(ranked, {"capture_pane": "(pane_id)"}, COUNTER)[:2] == ["capture_pane(pane_id)", "helper_0"]


def test_the_summary_s_index_shows_the_parameters_of_the_functions_the_replaced_reads_define():
    from compactctl.summarizers.vocabulary import signatures

    rows = session(2)
    body = "def capture_pane(pane_id):\n    return run(pane_id)\n\ndef kill_session(name, force=False, timeout=30):\n    pass\n"
    rows[3] = res("r0", "\n".join(f"{n:6d}→{line}" for n, line in enumerate((body + "x = 1\n" * 40).split("\n"), 1)))
    t = T(rows)
    assert signatures(t.messages) == {"capture_pane": "(pane_id)", "kill_session": "(name, force=False, timeout=30)"}
    # So does prune's digest of the read (its outline line).
    pruned, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10))
    assert "capture_pane(pane_id)" in pruned.messages[3].text() and signatures(pruned.messages)["capture_pane"] == "(pane_id)"
    f = extract(t.messages, 2, 6)
    f.excerpts = []  # the index alone (no quoted lines)
    text = offline.summarize(f, COUNTER, 2000)
    listed = [n for ln in text.split("\n") if ln.startswith(fit.INDEX_LINE) for n in fit.index_line_names(ln)]
    assert "capture_pane(pane_id)" in listed and "pane_id" not in listed and "kill_session" in listed


def test_an_earlier_summary_in_the_head_leaves_its_room_to_the_new_one():
    from compactctl.phases.assemble import summary_text
    from compactctl.phases.plan import Budget, plan

    prior = {"role": "user", "content": summary_text("## Goal\nbuild it\n\n## Critical Context\n" + "- old fact\n" * 400)}
    rows = [{"role": "system", "content": "You are a coding agent."}, prior, *session(6, 1500)[1:]]
    t = T(rows)
    counts = COUNTER.messages(t.messages)
    p = plan(t, COUNTER, Budget(context_window=2 * (sum(counts) // 3), summary_min=200))
    assert p.prior_summary == 1 and p.head_end == 2 and p.needs_compaction
    # The new summary replaces the earlier one, so the room counts its tokens: head + tail + summary <= target.
    assert p.summary_budget > p.target - p.tokens["head"] - p.tokens["tail"]
    assert p.summary_budget <= p.target - p.tokens["head"] - p.tokens["tail"] + counts[1]


def test_digest_keeps_quoted_phrases_but_never_a_secret():
    rows = session(1)
    code = (
        'test "excludes closed annotations" do\n'
        "  assert msg == 'Team not found'\n"
        '  login("user", "password=hunter2hunter2 now")\n'
        "  it's the user's, not a phrase\n"
    )
    rows[3] = res("r0", code + "x = 1\n" * 400)
    out, _ = api.prune(T(rows), COUNTER, PruneOptions(protect_tokens=10))
    digest = out.messages[3].text()
    assert '"excludes closed annotations"' in digest and '"Team not found"' in digest
    assert "hunter2" not in digest  # a phrase redaction would change is never kept
    assert "s the user" not in digest  # apostrophes are not quotes
    one_liners, _ = api.prune(T(rows), COUNTER, PruneOptions(protect_tokens=10, digest_names=0))
    assert "excludes closed" not in one_liners.messages[3].text()


def test_an_earlier_summary_the_new_one_replaces_gives_its_names_to_the_index():
    from compactctl.phases.assemble import summary_text

    prior = {"role": "user", "content": summary_text("## Goal\nbuild it\n\n## Critical Context\n- uses legacy_loader and OldRegistry\n")}
    rows = [{"role": "system", "content": "You are a coding agent."}, prior, *session(3, 600)[1:]]
    t = T(rows)
    # The earlier summary (message 1) sits in the head; the new summary replaces it, so its names are not "shown".
    f = extract(t.messages, 2, len(rows) - 1, prior=1)
    assert "legacy_loader" in f.names and "OldRegistry" in f.names
    kept = extract(t.messages, 2, len(rows) - 1)  # without it the head would keep them in context
    assert "legacy_loader" not in kept.names


def test_another_tools_summary_gives_the_goal_from_its_request():
    from compactctl.model import is_summary

    foreign = (
        "This session is being continued from a previous conversation that ran out of context.\n\n"
        "Analysis:\nLet me go through it.\n\nSummary:\n1. Primary Request and Intent:\n"
        "   The user asked to add OpenTelemetry tracing to the hooks controller.\n\n"
        "2. Key Technical Concepts:\n   - W3C trace context\n\n7. Pending Tasks:\n   - spotter-4te.6: controller tests\n"
    )
    assert offline.foreign_request(foreign) == "The user asked to add OpenTelemetry tracing to the hooks controller."
    rows = [{"role": "user", "content": foreign}, *session(3, 600)[2:], {"role": "user", "content": "check again"}]
    t = T(rows)
    assert is_summary(t.messages[0])
    f = extract(t.messages, 1, len(rows) - 1, last_request="check again")
    f.prior_summary = foreign
    sections = parse_sections(offline.summarize(f, COUNTER, 2000))
    assert "OpenTelemetry tracing" in sections["Goal"] and sections["Active Task"] == offline.KEPT_LAST_ASK  # in the tail
    assert sections["Critical Context"].count("OpenTelemetry tracing") == 0  # said once, as the goal


def test_with_no_ask_since_another_tools_summary_its_next_step_is_the_active_task():
    """A session that goes on from Claude Code's summary has no ask of the person after it: the Active Task said
    "None" while the summary's "Optional Next Step" said what to do, last in the summary and first shed."""
    foreign = (
        "This session is being continued from a previous conversation that ran out of context.\n\nSummary:\n"
        "1. Primary Request and Intent:\n   Work on bead spotter-fum.\n\n8. Current Work:\n   Working on `spotter-fum.3`.\n\n"
        "9. Optional Next Step:\n   Complete spotter-fum.3 by running `mix test`, then `bd close spotter-fum.3`.\n\n"
        "If you need specific details from before compaction, read the full transcript at: /home/u/x.jsonl\n"
        "Please continue the conversation from where we left off without asking the user any further questions."
    )
    assert (
        offline.foreign_request(foreign, offline.NEXT_WORDS)
        == "Complete spotter-fum.3 by running `mix test`, then `bd close spotter-fum.3`."
    )
    rows = [{"role": "user", "content": foreign}, *session(3, 600)[2:]]
    t = T(rows)
    f = extract(t.messages, 1, len(rows))
    f.prior_summary = foreign
    sections = parse_sections(offline.summarize(f, COUNTER, 2000))
    assert f.actions  # the span went on from it: the step named may be done since (see Completed Actions)
    assert (
        sections["Active Task"]
        == offline.FROM_PRIOR_NEXT_SINCE + "Complete spotter-fum.3 by running `mix test`, then `bd close spotter-fum.3`."
    )
    assert "bd close" not in sections["Critical Context"] and "Working on `spotter-fum.3`" in sections["Critical Context"]
    # Without a next step, its current work; with an ask since, the ask.
    f.prior_summary = foreign.replace("9. Optional Next Step:", "Notes:")
    assert "Working on `spotter-fum.3`" in parse_sections(offline.summarize(f, COUNTER, 2000))["Active Task"]
    f.prior_summary, f.last_request = foreign, "now fix the tests"
    assert parse_sections(offline.summarize(f, COUNTER, 2000))["Active Task"] == offline.KEPT_LAST_ASK


def test_another_tools_summary_is_quoted_without_its_code_blocks():
    """Claude Code's summary quotes code under "Files and Code Sections": quoted line by line as room allowed, the
    short fence lines got in where their code did not ("> ```elixir", "> ```")."""
    code = "\n".join(f'     def handler_{k}(conn, params), do: render(conn, :show, item: params["id"])' for k in range(30))
    foreign = (
        "This session is being continued from a previous conversation that ran out of context.\n\nSummary:\n"
        "1. Primary Request and Intent:\n   Work on bead spotter-fum.\n\n3. Files and Code Sections:\n"
        f"   - **lib/spotter_web/router.ex**: added the route\n     ```elixir\n{code}\n     ```\n"
        "4. Errors and Fixes:\n   - BadMapError in the processor config: fixed by the flat form.\n"
    )
    rows = [{"role": "user", "content": foreign}, *session(3, 600)[2:], {"role": "user", "content": "check again"}]
    f = extract(T(rows).messages, 1, len(rows) - 1, last_request="check again")
    f.prior_summary = foreign
    context = parse_sections(offline.summarize(f, COUNTER, 2000))["Critical Context"]
    assert "```" not in context and "def handler_" not in context
    assert "> - **lib/spotter_web/router.ex**: added the route" in context and "BadMapError in the processor config" in context


def test_an_error_line_that_says_error_is_not_labelled_again():
    """Critical Context read "- error: error: undefined function find_transcript_file/1" for a compiler's line."""
    f = Facts(errors=["error: undefined function find_transcript_file/1", "Error: ENOENT", "ModuleNotFoundError: No module named 'x'"])
    context = parse_sections(offline.summarize(f, COUNTER, 2000))["Critical Context"].split("\n")
    assert context[:3] == [
        "- error: undefined function find_transcript_file/1",
        "- Error: ENOENT",
        "- error: ModuleNotFoundError: No module named 'x'",
    ]


def test_an_archive_reference_is_no_identifier():
    """Prune cuts a long argument with `...[truncated] [ref 49601d51]`: the summary's "identifiers:" line listed
    nineteen such references (the action lines cite them already) and nothing else."""
    from compactctl.summarizers.facts import identifiers_in

    assert identifiers_in("...[truncated] [ref 49601d51] names: x; commit 1a2b3c4d5e on v1.2.3") == ["1a2b3c4d5e", "v1.2.3"]
    rows = [
        {"role": "user", "content": "patch it"},
        call("a", "shell", {"command": ["bash", "-lc", "apply_patch <<'PATCH'\n*** Begin Patch\n-a...[truncated] [ref 49601d51]"]}),
        res("a", "Success."),
        {"role": "assistant", "content": "Done."},
    ]
    assert extract(T(rows).messages).identifiers == []


def test_an_address_is_not_a_version_nor_a_variable_part_of_a_url():
    """The identifiers line read "http://127.0.0.1:$, 127.0.0" for `curl http://127.0.0.1:${PORT}/api` and an address."""
    from compactctl.summarizers.facts import identifiers_in

    assert identifiers_in("curl http://127.0.0.1:${PORT}/api/x") == ["http://127.0.0.1", "127.0.0.1"]
    assert identifiers_in("bound 10.0.0.12, bumped to v1.2.3-beta.1 and 2.0.1.") == ["10.0.0.12", "v1.2.3-beta.1", "2.0.1"]


def test_the_rules_of_a_verbatim_active_task_are_not_listed_again():
    """A SWE-agent task moved into the summary verbatim (the last ask) had its eleven rules listed again under
    Constraints, ~200 tokens of a tight summary, which then left out the refused edits' errors."""
    ask = "Solve the challenge. You must enter one command at a time. Do not use interactive commands."
    f = Facts(last_request=ask, last_request_verbatim=True, first_request=ask, constraints=[*constraint_sentences(ask), "Never push."])
    secs = parse_sections(offline.summarize(f, COUNTER, 2000))
    assert secs["Active Task"] == ask and secs["Constraints & Preferences"] == "- Never push."
    f.last_request_verbatim = False  # kept in the tail, not in the summary: the summary lists them
    assert "one command at a time" in parse_sections(offline.summarize(f, COUNTER, 2000))["Constraints & Preferences"]


def test_a_slash_command_with_arguments_is_the_persons_ask():
    """Claude Code writes `/create-beads websearch to learn ...` as harness tags around the arguments the person
    typed: the message read as the harness's, so the skill body after it (2,310 tokens) was taken for the last ask
    and the cut could not fit. Without arguments (`/clear`) it is the harness's still."""
    from compactctl.harness import human_text

    typed = (
        "<command-message>create-beads</command-message>\n<command-name>/create-beads</command-name>\n"
        "<command-args>websearch how to set up credo</command-args>"
    )
    bare = "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>"
    rows = [
        {"role": "user", "content": typed},
        {"role": "user", "content": "Create beads.\n> **SCOPE**: This skill ONLY creates beads.", "isMeta": True},
        {"role": "assistant", "content": "on it"},
        {"role": "user", "content": bare},
    ]
    t = T(rows)
    t.messages[1].injected = True  # a skill body (Claude Code's isMeta line)
    assert [is_injected(m) for m in t.messages] == [False, True, False, True]
    assert human_text(t.messages[0]) == "/create-beads websearch how to set up credo" and human_text(t.messages[3]) == ""
    assert last_user_index(t.messages) == 0
    assert constraint_sentences(t.messages[1].text()) == ["**SCOPE**: This skill ONLY creates beads."]  # no quote marker


def test_harness_tags_are_no_names_and_a_bare_command_no_note():
    """A short session's summary read "harness note: /clear clear", an empty "harness note:" (a blank
    local-command-stdout) and the names "command-name command-args command-message local-command-stdout"."""
    from compactctl.summarizers.vocabulary import rank_names

    rows = [
        {"role": "user", "content": "add the initials to NavUser"},
        {"role": "assistant", "content": "done, see getInitials"},
        {
            "role": "user",
            "content": "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>",
        },
        {"role": "user", "content": "<local-command-stdout></local-command-stdout>"},
        {"role": "user", "content": "<local-command-stdout>Set model to opus_4</local-command-stdout>"},
        {"role": "assistant", "content": "ok"},
    ]
    msgs = T(rows).messages
    f = extract(msgs)
    assert f.notices == ["Set model to opus_4"]
    names = rank_names(msgs)
    assert "getInitials" in names and "opus_4" in names and not any(n.startswith(("command-", "local-command")) for n in names)


def test_a_question_is_answered_by_what_the_agent_found_not_by_what_it_does_next():
    """A summary read "Q: does it get the logged in user from the authStore? A: Let me trace through the code to
    verify where the user data comes from:": the agent saying what it does next is no answer; nor is a list's "1."."""
    rows = [
        {"role": "user", "content": "does it get the logged in user from the authStore?"},
        {"role": "assistant", "content": "Let me trace through the code to verify where the user data comes from:"},
        {"role": "assistant", "content": "Yes! NavUser reads `user` from useAuthStore."},
        {"role": "user", "content": "Can you help with that setup?"},
        {"role": "assistant", "content": "1. **Reservation ID** first."},
    ]
    f = extract(T(rows).messages)
    assert f.questions == [
        ("does it get the logged in user from the authStore?", "Yes!"),
        ("Can you help with that setup?", "**Reservation ID** first."),
    ]


def test_a_harness_setting_is_no_constraint():
    """Codex's environment context gave the constraint "<approval_policy>never</approval_policy>"."""
    assert constraint_sentences("<cwd>/repo</cwd>\n<approval_policy>never</approval_policy>\n<sandbox_mode>read-only</sandbox_mode>") == []
    assert constraint_sentences("Never use <code>eval</code> here.") == ["Never use <code>eval</code> here."]


def test_the_summary_points_to_asks_the_kept_turns_hold_instead_of_repeating_them():
    ask = "Find why handler_0 fails on empty input and report it."
    rows = [{"role": "user", "content": ask}, *session(3, 600)[2:-1]]  # no final answer yet: the ask is pending
    t = T(rows)
    f = extract(t.messages, 0, len(rows), last_request=ask)
    assert f.pending == [ask]
    f.first_request, f.last_request_verbatim = ask, True  # the only ask, moved into the summary
    sections = parse_sections(offline.summarize(f, COUNTER, 2000))
    assert sections["Active Task"] == ask and sections["Goal"] == offline.ONLY_ASK  # written once
    assert "finish the pending asks" not in sections["Remaining Work"]
    f.first_request, f.last_request, f.first_request_kept, f.last_request_verbatim = "Fix the parser.", ask, True, False
    sections = parse_sections(offline.summarize(f, COUNTER, 2000))
    assert sections["Goal"] == offline.KEPT_FIRST_ASK and sections["Active Task"] == offline.KEPT_LAST_ASK


def test_a_small_target_is_met_when_the_summary_has_under_100_tokens_of_room():
    # The summary's room (its budget less the marker) was raised to 100 tokens: a 120-180 token target
    # then ended over the target ("cannot fit") though the plan had found room for it.
    rows = [
        {"role": "user", "content": "search the web for the response types"},
        {"role": "assistant", "content": "I'll search the web for the response types."},
        call("w1", "WebSearch", {"query": "response types"}),
        res("w1", " ".join(f"stop_reason_{k} see src/mod_{k}.py" for k in range(60))),
        {"role": "assistant", "content": "The stop reasons are end_turn, tool_use, max_tokens and stop_sequence."},
    ]
    for window in (240, 280, 320, 360):
        out, rep = api.compact(T(rows), COUNTER, api.OfflineSummarizer(), api.CompactOptions(api.Budget(context_window=window)))
        assert rep["status"] == "compacted" and rep["tokens_after"] <= window // 2 and api.check(out) == []


def test_the_index_takes_part_of_a_line_when_a_whole_line_does_not_fit():
    f = Facts(last_request="go", first_request="go")
    f.names = [f"lib/spotter_web/controllers/session_hook_controller_{k}.ex" for k in range(40)]
    from compactctl.summarizers.facts import Action

    f.actions = [Action(f"[Bash] ran `mix test test/case_{k}_test.exs` -> ok", False, "shell", f"mix test {k}", 0) for k in range(40)]
    text = offline.summarize(f, COUNTER, 260)
    index = [ln for ln in text.split("\n") if ln.startswith(fit.INDEX_LINE)]
    assert index and 0 < sum(ln.count("session_hook_controller_") for ln in index) < fit.NAMES_PER_LINE
    assert COUNTER.text(text) <= 260


def test_argument_keys_are_not_names_the_agent_wrote():
    rows = session(2) + [call("e1", "Edit", {"file_path": "src/mod0.py", "old_string": "x", "new_string": "handler_zero"})]
    rows += [res("e1", "ok"), {"role": "user", "content": "thanks"}]
    f = extract(T(rows).messages, 2, len(rows) - 1)
    assert "handler_zero" in f.names and "file_path" not in f.names and "old_string" not in f.names


def test_room_the_last_digest_cannot_use_goes_to_the_earlier_digests():
    rows = session(3)
    for k in (0, 1):
        names = "".join(f"def handler_{k}_{j}(): pass\n" for j in range(100))
        rows[3 + 2 * k] = res(f"r{k}", names + "line of code\n" * 3000)
    t = T(rows)
    out64, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10))  # no target: both digests keep 64 names
    assert [out64.messages[i].text().count("handler_") for i in (3, 5)] == [64, 64]
    size64 = sum(COUNTER.messages(out64.messages)) - COUNTER.message(out64.messages[7]) + COUNTER.message(t.messages[7])
    target = size64 + 400  # more than the last digest's 36 other names take
    for exact in (True, False):
        out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10, target=target, exact_totals=exact))
        assert sum(COUNTER.messages(out.messages)) <= target
        assert out.messages[5].text().count("handler_") == 100, exact  # the last digest: all its names
        assert out.messages[3].text().count("handler_") > 64, exact  # and the earlier one more than 64


def test_blocked_holds_only_a_failure_the_agent_has_not_moved_past_and_no_line_repeats_an_action():
    from compactctl.summarizers.facts import Action

    tree = Action("[Bash] ran `tree lib` -> exit 127: command not found: tree", True, "shell", "tree lib", 127)
    find = Action("[Bash] ran `find lib -type d` -> ok, 8 lines output", False, "shell", "find lib -type d", 0)
    f = Facts(last_request="go", first_request="go")
    f.actions = [tree, find]  # the failure was worked around
    secs = parse_sections(offline.summarize(f, COUNTER, 3000))
    assert secs["Blocked"].strip() == "None" and "tree lib" in secs["Completed Actions"]
    assert sum(body.count("find lib -type d") for body in secs.values()) == 1  # the latest action is said once
    f.actions = [find, tree]  # the last action failed: that blocks
    secs = parse_sections(offline.summarize(f, COUNTER, 3000))
    assert "tree lib" in secs["Blocked"] and "exit 127" in secs["Blocked"]
    assert secs["Blocked"] == "- the last action failed: `tree lib` exit 127: command not found: tree"  # terse, as its action line


def test_harness_notes_lose_their_markup_not_their_facts():
    f = Facts(last_request="go", first_request="go")
    f.notices = [
        "<system-reminder>\nPostToolUse:Edit hook additional context: [COMPILE ERROR] undefined function maybe_sync/1\n</system-reminder>"
    ]
    text = offline.summarize(f, COUNTER, 2000)
    note = next(ln for ln in text.split("\n") if ln.startswith("- harness note:"))
    assert "maybe_sync/1" in note and "[COMPILE ERROR]" in note
    assert "system-reminder" not in note and "hook additional context" not in note


def test_the_summary_never_exceeds_its_budget_even_with_a_long_goal():
    f = Facts(last_request="go on", first_request="Please solve this issue: " + "the parser fails on a missing colon. " * 200)
    for budget in (15, 60, 200, 1000):
        text = offline.summarize(f, COUNTER, budget)
        assert COUNTER.text(text) <= budget, budget
    assert "Please solve this issue" in offline.summarize(f, COUNTER, 200)  # the goal, cut to half the budget


def test_an_ask_inside_harness_context_costs_the_summary_only_the_persons_words():
    # A Codex user message: the IDE's context (open tabs) and then the person's request. Moved into the summary, the
    # Active Task holds the request verbatim; the plan charged the whole message and refused targets it could meet.
    rows = session(8)
    ide = "# Context from my IDE setup:\n\n## Open tabs:\n" + "".join(f"- file_{k}.ts: src/components/file_{k}.ts\n" for k in range(150))
    rows.append({"role": "user", "content": ide + "\n## My request for Codex:\nnow add tests for parse_header in src/parse.py\n"})
    t = T(rows)
    assert COUNTER.message(t.messages[-1]) > 1900
    out, rep = api.compact(t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(api.Budget(context_window=1600)))
    assert rep["status"] == "compacted" and rep["tokens_after"] <= 800 and api.check(out) == []
    secs = parse_sections(next(m.text() for m in out.messages if "## Active Task" in m.text()))
    assert secs["Active Task"].strip() == "now add tests for parse_header in src/parse.py"


def test_one_error_from_two_digested_outputs_is_listed_once():
    rows = [{"role": "user", "content": "build it"}]
    for k, ref in enumerate(("8ae1f7f9", "0ae141e1")):
        rows += [
            call(f"b{k}", "Bash", {"command": "npm run build"}),
            res(f"b{k}", f"[Bash] ran `npm run build` -> exit 1, 43 lines output\n  Error: Cannot find module 'left-pad' [ref {ref}]"),
        ]
    rows.append({"role": "user", "content": "why?"})
    f = extract(T(rows).messages, 1, 5)
    assert f.errors == ["Error: Cannot find module 'left-pad' (`npm run build`)"]  # once, with the command that failed


def test_a_compaction_never_loses_the_ask_it_moves_into_the_summary():
    # The plan reserved the ask and the minimum summary but not the summary's frame (~110 tokens): the summary's
    # text had less room than the ask, and it was shed: "compacted", under target, the person's request gone.
    import itertools

    from compactctl.errors import CannotFit

    for words, window, summary_min in itertools.product((5, 40, 150), (300, 400, 600, 900), (2000, 60, 0)):
        rows = session(8) + [{"role": "user", "content": "please now handle " + " ".join(f"w{k}" for k in range(words)) + " ENDASK"}]
        try:
            out, rep = api.compact(
                T(rows), COUNTER, api.OfflineSummarizer(), api.CompactOptions(api.Budget(context_window=window, summary_min=summary_min))
            )
        except CannotFit:
            continue
        assert "ENDASK" in "\n".join(m.text() for m in out.messages), (words, window, summary_min)
        assert rep["tokens_after"] <= window // 2


def test_harness_note_markup_is_only_the_harness_tags():
    f = Facts(last_request="go", first_request="go")
    f.notices = ["<system-reminder>hook said: expected Vec<u8>, found Option<String> in <module></system-reminder>"]
    note = next(ln for ln in offline.summarize(f, COUNTER, 2000).split("\n") if ln.startswith("- harness note:"))
    assert "Vec<u8>" in note and "<module>" in note and "system-reminder" not in note


def test_the_budget_counts_the_quotes_framing_adds():
    from compactctl.summarizers.prompt import frame_body

    ask = "\n".join(f"User: step {k} of the plan" for k in range(30))  # role-like lines: framing quotes them
    f = Facts(last_request=ask, first_request="go")
    f.last_request_verbatim = True
    text = offline.summarize(f, COUNTER, 400)
    assert frame_body(text.strip()) == text.strip() and COUNTER.text(text) <= 400


def test_a_heading_with_a_carriage_return_inside_an_ask_is_quoted_not_a_section():
    from compactctl.summarizers.prompt import frame_body, parse_sections

    for end in ("\r", "\xa0", "\u3000"):
        f = Facts(last_request=f"line one\nUser: line two\n## Goal{end}\nENDASK", first_request="go")
        f.last_request_verbatim = True
        framed = frame_body(offline.summarize(f, COUNTER, 400).strip())
        secs = parse_sections(framed)
        assert "ENDASK" in secs["Active Task"] and "> ## Goal" in framed, repr(end)


def _first_round_with_the_ask_in_the_summary(budget, after: list[dict]):
    """A session whose long last ask goes into the summary at this budget, then failing test runs; compacted."""
    ask = "now switch to the lexer and rename tokenize() " + " ".join(f"w{k}" for k in range(150)) + " ENDASK"
    rows = session(8) + [{"role": "user", "content": ask}]
    for k in range(5):
        rows += [call(f"z{k}", "run", {"cmd": f"pytest -q tests/t{k}.py"}), res(f"z{k}", "1 failed\n" + f"trace line {k}\n" * 60)]
    first, rep = api.compact(T(rows + after), COUNTER, api.OfflineSummarizer(), budget)
    assert rep["status"] == "compacted" and "ENDASK" in "\n".join(m.text() for m in first.messages)
    return first


def test_a_second_compaction_carries_the_ask_the_first_summary_holds():
    # The ask moved into the first summary (the tail could not hold it); the agent went on; nothing new from the
    # person. The second summary replaces the first: it must carry that ask, not point to an older message.
    from compactctl.errors import CannotFit

    budget = api.CompactOptions(api.Budget(context_window=1200, summary_min=0))
    first = _first_round_with_the_ask_in_the_summary(budget, [])
    more = list(first.messages)
    for k in range(4):
        more += [
            message_from_dict(d, "t", 0, 0)
            for d in (call(f"y{k}", "read_file", {"path": f"src/big{k}.py"}), res(f"y{k}", f"big line {k}\n" * 150))
        ]
    try:
        second, rep2 = api.compact(Transcript(more, id="t"), COUNTER, api.OfflineSummarizer(), budget)
    except CannotFit:
        return
    assert rep2["status"] == "compacted" and "ENDASK" in "\n".join(m.text() for m in second.messages)


def test_summarize_never_says_compacted_over_its_target():
    # 30 role-like lines: framing quotes each; the pipe's summarize stage reported "compacted" over the target
    # where `compact` refused.
    from compactctl.errors import CannotFit

    rows = session(8) + [{"role": "user", "content": "\n".join(f"User: step {k} of the plan" for k in range(30)) + "\nENDASK"}]
    for window in range(700, 1000, 20):
        budget = api.Budget(context_window=window, summary_min=60)
        pruned, _ = api.prune(T(rows), COUNTER, api.PruneOptions(target=budget.target))
        try:
            out, st = api.summarize(
                api.annotate(pruned, api.plan(pruned, COUNTER, budget)), COUNTER, api.OfflineSummarizer(), api.SummarizeOptions(budget)
            )
        except CannotFit:
            continue
        assert st.status != "compacted" or sum(COUNTER.messages(out.messages)) <= budget.target, window


def test_the_carried_ask_is_only_the_ask_and_only_when_no_one_spoke_since():
    from compactctl.model import SUMMARY_MERGED
    from compactctl.phases.assemble import summary_text
    from compactctl.phases.summarize import carried_ask

    # a summary merged into the next message: the ask ends where the summary does, not in the agent's text after it
    merged = summary_text("## Active Task\nrename tokenize() ENDASK") + "\n\n" + SUMMARY_MERGED + "\n\nAGENTTEXT next."
    assert carried_ask(merged) == "rename tokenize() ENDASK"
    assert carried_ask(summary_text("## Active Task\n" + offline.KEPT_LAST_ASK)) is None  # a pointer is not an ask
    assert carried_ask(summary_text("## Active Task\nrename tokenize() and … …[cut]")) is None  # nor a cut copy
    # a later user turn (a slash command the harness wrapped, too): the earlier summary's ask is not carried
    from compactctl.phases.summarize import _carried

    held = summary_text("## Active Task\nrename tokenize() ENDASK")
    rows = [{"role": "system", "content": "s"}, {"role": "user", "content": held}, {"role": "assistant", "content": "on it"}]
    slash = {"role": "user", "content": "<command-name>/review-pr</command-name><command-args>NEWASK</command-args>"}
    plan_all = api.Plan("t", 4, 1, 4, {}, 0, 0, 0, 0, "", needs_compaction=True, reason="")
    assert _carried(T(rows + [{"role": "assistant", "content": "done"}]), plan_all) == "rename tokenize() ENDASK"
    assert _carried(T(rows + [slash]), plan_all) is None


def test_the_plan_budgets_an_ask_an_earlier_summary_carries():
    # Round 2 must carry round 1's ask (nothing from the person since): the plan gives ground (a smaller tail) so
    # that the new summary holds it, where it planned as if there were none and summarize then refused.
    budget = api.CompactOptions(api.Budget(context_window=900, summary_min=0))
    first = _first_round_with_the_ask_in_the_summary(budget, [{"role": "assistant", "content": "Looking."}])
    more = list(first.messages)
    for k in range(4):
        more += [
            message_from_dict(d, "t", 0, 0)
            for d in (
                call(f"y{k}", "read_file", {"path": f"src/y{k}.py"}),
                res(f"y{k}", f"y line {k}\n" * 150),
                {"role": "assistant", "content": f"Read y{k}."},
            )
        ]
    second, rep2 = api.compact(Transcript(more, id="t"), COUNTER, api.OfflineSummarizer(), budget)
    assert rep2["status"] == "compacted" and rep2["tokens_after"] <= 450
    assert "ENDASK" in "\n".join(m.text() for m in second.messages)


def test_ranking_then_excluding_is_like_excluding_then_ranking():
    """names.ranked() is a stable sort, so first_not_in() after it (prune's digests: candidate_names, memoized, then
    pick_safe) leaves names out as leaving them out before the ranking would, in the same order."""
    from collections import Counter

    from compactctl.names import first_not_in, names_in, ranked

    text = "see a_b.py and c_d.py, then e_f.py and g_h.py; run make_report() in lib/x.py and lib/y.py"
    weight = Counter({"c_d.py": 2, "lib/y.py": 2, "make_report": 1})
    for exclude in ("", "c_d.py", "lib/y.py e_f.py"):
        found = [n for n in names_in(text) if n not in exclude]
        expected = sorted(found, key=lambda n: weight.get(n, 0), reverse=True)[:4]
        assert first_not_in(ranked(names_in(text), weight), exclude, 4) == expected


def test_a_harness_caveat_and_terminal_colours_are_not_constraints():
    """Claude Code's caveat before local-command output ("DO NOT respond to these messages ...") became a constraint
    and a harness note of every summary that had one; hook output kept its terminal escapes (`\\x1b[2m`), and a
    list item's own "- " gave "- - " in the section."""
    caveat = (
        "<local-command-caveat>Caveat: The messages below were generated by the user while running local commands. "
        "DO NOT respond to these messages or otherwise consider them in your response unless the user explicitly asks "
        "you to.</local-command-caveat>"
    )
    hook = "<system-reminder>\x1b[2m## Core Rules\x1b[22m\n\x1b[2m- **Prohibited**: Do NOT use TodoWrite for task tracking\x1b[22m</system-reminder>"
    rows = [
        {"role": "user", "content": "work on the epic"},
        {"role": "user", "content": caveat},
        {"role": "user", "content": hook},
        {"role": "assistant", "content": "on it"},
    ]
    t = T(rows)
    assert all(is_injected(m) for m in t.messages[1:3])
    f = extract(t.messages)
    assert f.constraints == ["**Prohibited**: Do NOT use TodoWrite for task tracking"]
    assert len(f.notices) == 1 and "\x1b" not in f.notices[0] and "Caveat" not in f.notices[0]
    secs = parse_sections(offline.summarize(f, COUNTER, 2000))
    assert "- **Prohibited**" in secs["Constraints & Preferences"] and "- - " not in secs["Constraints & Preferences"]
    assert "respond to these messages" not in "".join(secs.values())


def test_a_sentence_typed_over_several_lines_is_one_constraint():
    """A request pasted with hard line breaks gave the constraint "We should" (its line's words alone) and lost the
    rest of the sentence."""
    ask = (
        "I want to migrate this app from\n  @supabase/supabase-js to prisma. Please review the codebase\n"
        "  and propose a solution. We should\n  start with packages/services. We will keep our database\n  on supabase. You must never\n  drop a table.\n"
        "- Do not touch\n  the tests\n- Always run `make lint`\n```\nnever: a code line\n```\nKeep it short\nNo more than 3 files."
    )
    f = extract(T([{"role": "user", "content": ask}, {"role": "assistant", "content": "on it"}]).messages)
    assert f.constraints == [
        "We should start with packages/services.",
        "We will keep our database on supabase.",
        "You must never drop a table.",
        "Do not touch the tests",
        "Always run `make lint`",
        "Keep it short",
        "No more than 3 files.",
    ]


def test_a_rule_that_introduces_a_list_keeps_its_items():
    """A hook's "you MUST run this checklist:" was a constraint without its checklist (a code block after it), and
    "Avoid these in bead descriptions:" one without what to avoid. A command reference's "`bd sync --status` -
    Check sync status without syncing" and a compiler's "warning: ... was set but never used" were constraints."""
    hook = (
        "\x1b[2m**CRITICAL**: Before saying done, you MUST run this checklist:\x1b[22m\n\x1b[2m\x1b[22m\n\x1b[2m```\x1b[22m\n"
        "\x1b[2m[ ] 1. git status              (check what changed)\x1b[22m\n\x1b[2m[ ] 2. git push\x1b[22m\n\x1b[2m```\x1b[22m\n"
        "\x1b[2m- `bd sync --status` - Check sync status without syncing\x1b[22m\n"
        "\x1b[2m- `bd edit` - never use it: it opens $EDITOR\x1b[22m\n\n"
        "    warning: module attribute @extension_to_language was set but never used\n"
        "[W] lib/a.ex:12:3 Using `length/1` is expensive, prefer comparing against an empty list.\n"
    )
    assert constraint_sentences(hook) == [
        "**CRITICAL**: Before saying done, you MUST run this checklist: git status (check what changed); git push",
        "`bd edit` - never use it: it opens $EDITOR",
    ]
    avoid = "Avoid these in descriptions:\n\n- Missing paths\n- A title restated without specifics\n\nDone."
    assert constraint_sentences(avoid) == ["Avoid these in descriptions: Missing paths; A title restated without specifics"]
    # Code after the colon is not a list; a long list is shortened, and a rule of an item left out stays one.
    assert constraint_sentences("It should be caught here:\n```\nfun take(): Foo =>\n```") == ["It should be caught here:"]
    items = "".join(f"- item {k} {'x' * 70}\n" for k in range(9)) + "- Never push to main\n"
    (rule, *rest) = constraint_sentences("You must include:\n" + items)
    assert rule.startswith("You must include: item 0 ") and rule.endswith("; …") and len(rule) <= 400
    assert rest == ["Never push to main"]


def test_files_read_through_a_shell_are_relevant_files():
    """Codex reads every file with `sed -n`/`cat` in a shell call's workdir: its summaries said Relevant Files: None
    after sixty reads. A search, a listing and an in-place edit name no file read; prune's superseded step is
    unchanged (two ranges of one file read by `sed` are two reads, neither superseding the other)."""

    def sh(cid, cmd, workdir="/repo/packages/svc"):
        return call(cid, "shell", {"command": ["bash", "-lc", cmd], "workdir": workdir})

    rows = [
        {"role": "user", "content": "review the service layer"},
        sh("a", "sed -n '1,160p' src/create.ts"),
        res("a", "export function create() {}\n" * 40),
        sh("b", "sed -n '160,320p' src/create.ts"),
        res("b", "export function update() {}\n" * 40),
        sh("c", "cd .. && cat README.md | head -n 20"),
        res("c", "# packages\n"),
        sh("d", "rg -n createService src && ls src"),
        res("d", "src/create.ts:1:createService"),
        sh("e", "sed -i 's/a/b/' src/x.ts"),
        res("e", ""),
        {"role": "assistant", "content": "Reviewed."},
    ]
    t = T(rows)
    f = extract(t.messages)
    assert f.files == {"/repo/packages/svc/src/create.ts": {"shell-read"}, "/repo/packages/README.md": {"shell-read"}}
    secs = parse_sections(offline.summarize(f, COUNTER, 2000))
    assert "- /repo/packages/svc/src/create.ts (read)" in secs["Relevant Files"]
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=0))
    assert SUPERSEDED not in "".join(m.text() for m in out.messages)


def test_a_file_is_one_relevant_file_however_codex_named_it():
    """Codex reads a file with `sed` in the call's workdir and patches it with `apply_patch` by a relative path, in
    a call that may name no workdir (the session's, from its environment context): Relevant Files listed the same
    file twice, absolute (read) and relative (edited). A read that failed (no such file; an unquoted `(group)`
    that bash refused) listed a file that was never printed."""

    def sh(cid, cmd, **workdir):
        return call(cid, "shell", {"command": ["bash", "-lc", cmd], **workdir})

    patch = "apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: src/app/(group)/page.tsx\n@@\n-a\n+b\n*** End Patch\nPATCH"
    rows = [
        {"role": "user", "content": "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"},
        {"role": "user", "content": "tidy the page"},
        sh("a", "sed -n '1,80p' 'src/app/(group)/page.tsx'", workdir="/repo"),
        res("a", "export default function Page() {}\n" * 20),
        sh("b", "sed -n '1,80p' src/missing.ts", workdir="/repo"),
        res("b", '{"output": "sed: src/missing.ts: No such file or directory", "metadata": {"exit_code": 1}}'),
        sh("c", "sed -n '1,80p' src/app/(group)/page.tsx", workdir="/repo"),
        res("c", '{"output": "bash: -c: line 0: syntax error near unexpected token `(\'", "metadata": {"exit_code": 2}}'),
        sh("d", patch),
        res("d", '{"output": "Success. Updated the following files:\nM src/app/(group)/page.tsx", "metadata": {"exit_code": 0}}'),
        {"role": "assistant", "content": "Done."},
    ]
    f = extract(T(rows).messages)
    assert f.files == {"/repo/src/app/(group)/page.tsx": {"shell-read", "edit"}}
    secs = parse_sections(offline.summarize(f, COUNTER, 2000))
    assert secs["Relevant Files"] == "- /repo/src/app/(group)/page.tsx (read, edited)"


def test_a_shell_command_run_in_a_directory_of_its_own_says_where():
    """Codex runs `sed -n '1,160p' createService.ts` with `workdir` packages/services/src: the action line showed the
    bare name under a project root note ("paths in actions ... are relative to it") that pointed elsewhere."""

    def sh(cid, cmd, **workdir):
        return call(cid, "shell", {"command": ["bash", "-lc", cmd], **workdir})

    rows = [
        {"role": "user", "content": "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"},
        {"role": "user", "content": "review the services"},
        sh("a", "sed -n '1,160p' createService.ts", workdir="/repo/packages/services/src"),
        res("a", '{"output": "export function createService() {}", "metadata": {"exit_code": 0}}'),
        sh("b", "ls", workdir="/repo"),
        res("b", '{"output": "packages", "metadata": {"exit_code": 0}}'),
        sh("c", "ls", workdir="/elsewhere"),
        res("c", '{"output": "x", "metadata": {"exit_code": 0}}'),
        {"role": "assistant", "content": "Reviewed."},
    ]
    lines = [a.line for a in extract(T(rows).messages).actions]
    assert lines[0].startswith("[shell] ran `sed -n '1,160p' createService.ts` (in packages/services/src) -> exit 0")
    assert lines[1].startswith("[shell] ran `ls` -> exit 0") and lines[2].startswith("[shell] ran `ls` (in /elsewhere) -> ")
    f = extract(T(rows).messages)
    actions = parse_sections(offline.summarize(f, COUNTER, 2000))["Completed Actions"]
    assert "1. `sed -n '1,160p' createService.ts` (in packages/services/src) exit 0, " in actions


def test_a_name_inside_a_longer_one_is_not_taken_as_shown():
    """The identifier index leaves out names the rest of the summary shows; "shows" was a substring test, so `create`
    went because `createService` was there, and a working directory because a file under it was listed."""
    from compactctl.summarizers.fit import shown

    text = "ran `rg createService` in /app/src/db.ts and get_all(); see ./lib/, v1.2.3-rc and the root /srv/x."
    assert not shown("create", text) and shown("createService", text)
    assert not shown("/app/src", text) and shown("/app/src/db.ts", text) and shown("src/db.ts", text)
    assert not shown("get", text) and shown("get_all", text)
    assert not shown("v1.2", text) and shown("v1.2.3-rc", text)
    assert shown("./lib/", text) and shown("/srv/x", text)  # a sentence's full stop ends a name
    assert not shown("db", text) and not shown("app", text)


def test_a_work_description_shown_twice_is_listed_once():
    """`bd show X` run twice (once to plan, once to start the task) gave two identical "named by `bd show X`" lines in
    Remaining Work; the later showing is the one kept."""
    rows = [{"role": "user", "content": "work on spotter-7"}]
    for k, text in enumerate((TICKET, TICKET + "- also `lib/web/endpoint.ex`\n")):
        rows += [call(f"s{k}", "Bash", {"command": "bd show spotter-7"}), res(f"s{k}", text)]
    rows.append({"role": "assistant", "content": "on it"})
    f = extract(T(rows).messages)
    assert len(f.documents) == 1 and "lib/web/endpoint.ex" in f.documents[0][1]
    work = parse_sections(offline.summarize(f, COUNTER, 2000))["Remaining Work"]
    assert work.count("named by `bd show spotter-7`") == 1


def test_gemini_cli_tools_are_known():
    """Gemini CLI's documented tools read as their kinds: `run_shell_command` was a generic call, so a failed
    `pip install` (Exit Code: 127) read "error: Error: (none)", Gemini's way of saying no error; a `read_file` by
    `absolute_path` named no file; a `write_todos` plan was not kept."""

    out = (
        "Command: pip install RestrictedPython\nDirectory: (root)\nOutput: bash: line 1: pip: command not found\n"
        "Error: (none)\nExit Code: 127\nSignal: 0\nBackground PIDs: (none)\nProcess Group PGID: 88536"
    )
    rows = [
        {"role": "user", "content": "make me an agent"},
        call("a", "run_shell_command", {"command": "pip install RestrictedPython", "description": "Install it"}),
        res("a", out),
        call("b", "read_file", {"absolute_path": "/p/main.py"}),
        res("b", "print(1)\n"),
        call("c", "write_todos", {"todos": [{"description": "sandbox exec()", "status": "in_progress"}]}),
        res("c", "ok"),
        {"role": "assistant", "content": "done"},
    ]
    t = T(rows)
    line = describe(t.messages[1].tool_calls[0], t.messages[2], error_lines=3)
    assert "exit 127" in line and "pip: command not found" in line and "(none)" not in line
    assert tools.kind_of("execute_ipython_cell") == "code"  # OpenHands' (a generic call before)
    f = extract(t.messages)
    assert f.files == {"/p/main.py": {"read"}} and f.plan == ["- [in_progress] sandbox exec()"]
    assert f.errors == ["bash: line 1: pip: command not found (`pip install RestrictedPython`)"]  # not "Error: (none)", nor "Output: "


@pytest.mark.parametrize(
    "text, lines",
    [
        ("bash: line 1: pip: command not found", ["bash: line 1: pip: command not found"]),
        ("/bin/sh: 1: cd: can't cd to /nope", ["/bin/sh: 1: cd: can't cd to /nope"]),
        ("zsh: command not found: gti", ["zsh: command not found: gti"]),
        ("shell: ok\nbash: fine", []),
        # Error words whose lines the cheap substring test before the scan (ERROR_HINTS) let through unread.
        ("fatal: could not read Username", ["fatal: could not read Username"]),
        ("Could not resolve host: x", ["Could not resolve host: x"]),
        ("No such file or directory (os error 2)", ["No such file or directory (os error 2)"]),
        ("Segmentation fault (core dumped)", ["Segmentation fault (core dumped)"]),
        ("npm err! code E404", ["npm err! code E404"]),
        # a module-qualified exception (the traceback's header gives way to it)
        (
            'Traceback (most recent call last):\n  File "<string>", line 6\njson.decoder.JSONDecodeError: Unterminated string',
            ["json.decoder.JSONDecodeError: Unterminated string"],
        ),
    ],
)
def test_a_shells_own_error_lines(text, lines):
    """A shell's messages carry its own prefix before the error words: they were never error lines. Nor were
    "can't", "could not", "no such file", "segmentation fault" or a lowercase "npm err!" without another error word."""

    assert outputs.outcome(message_from_dict({"role": "tool", "tool_call_id": "a", "content": text}, "t", 1, 0)).error_lines == lines


def test_what_the_person_does_not_remember_is_not_a_constraint():
    from compactctl.summarizers.constraints import constraint_sentences

    assert constraint_sentences("I don't remember the reservation ID, sorry. We do not know the cause yet.") == []
    assert constraint_sentences("I don't know why, but never touch prod. I don't want insurance.") == [
        "I don't know why, but never touch prod.",
        "I don't want insurance.",
    ]


def test_what_the_person_does_not_have_a_question_and_an_ask_are_not_constraints():
    """tau-bench's "I don't have my reservation ID" (88 of 185 constraint lines), a question ("Can anything be done
    without it?"), an ask ("Can you run tests ... to ensure all is green.") and the person's own promise ("I'll make
    sure to find it") set no rule; a rule beside them, or an ask with a word that commands, still does."""
    from compactctl.summarizers.constraints import constraint_sentences

    said = (
        "I'm sorry, but I don't have my reservation ID with me at the moment. I don’t actually have it. "
        "Can anything be done without it? How should we proceed if that is the case? "
        "Can you run tests, lint and check-types to ensure all is green. I'll make sure to find it first. "
        "I must have left it somewhere else."
    )
    assert constraint_sentences(said) == []
    assert constraint_sentences("I don't have the ID, but never cancel the return flight. Could you never push to main.") == [
        "I don't have the ID, but never cancel the return flight.",
        "Could you never push to main.",
    ]
    # a question that commands is a rule (it was dropped as a question: review helper 149)
    assert constraint_sentences("Never commit the .env file, okay? Can you make sure you never push to main?") == [
        "Never commit the .env file, okay?",
        "Can you make sure you never push to main?",
    ]


def test_a_think_call_is_reasoning_not_an_action():
    """Anthropic's think tool and OpenHands' write the agent's reasoning as a call: it was an action line cut to 40
    characters ("[think] called(thought=To find the fastest return trip, I need…) -> ok, 0 chars")."""
    thought = "The cheapest option is the gift card 7091239. I decided to use it instead of the certificate."
    rows = [
        {"role": "user", "content": "upgrade my flight"},
        call("t", "think", {"thought": thought}),
        res("t", ""),
        call("u", "update_reservation_flights", {"reservation_id": "OBUT9V"}),
        res("u", "Error: gift card balance is not enough"),
        {"role": "assistant", "content": "It failed."},
    ]
    f = extract(T(rows).messages)
    assert [a.line.split("]")[0] for a in f.actions] == ["[update_reservation_flights"]
    assert f.decisions == ["I decided to use it instead of the certificate."]


def test_the_persons_answers_to_ask_user_question_are_resolved_questions():
    """Claude Code's AskUserQuestion gets the person's answers in its result ("User has answered your questions:
    "Q"="A" ..."): their words, read as a tool output (a digest, an action line `[AskUserQuestion] called(...)`)."""
    q = "Pre-commit hook blocks on pre-existing issues (not our code). How should we proceed?"
    answer = f'User has answered your questions: "{q}"="main was clean; fix the issues", "Which rig?"="No rig". You can now continue.'
    rows = [
        {"role": "user", "content": "commit it"},
        call("a", "AskUserQuestion", {"questions": [{"question": q, "options": [{"label": "Skip hook (--no-verify)"}]}]}),
        res("a", answer),
        call("r", "AskUserQuestion", {"questions": [{"question": "Go?"}]}),
        res("r", "The user doesn't want to proceed with this tool use."),
        {"role": "assistant", "content": "Fixing them."},
    ]
    f = extract(T(rows).messages)
    assert f.questions == [(q, "main was clean; fix the issues"), ("Which rig?", "No rig")]
    assert [a.line.split("]")[0] for a in f.actions] == ["[AskUserQuestion"]  # a refusal stays an action
    secs = parse_sections(offline.summarize(f, COUNTER, 2000))
    assert f"- Q: {q} A: main was clean; fix the issues" in secs["Resolved Questions"]


def test_the_persons_latest_answer_is_the_active_task_when_only_the_harness_wrote_since():
    """The person's latest words were an AskUserQuestion answer ("main was clean; fix the issues") after their last
    typed ask, then only a harness note (a background task's notification): the Active Task did not say it. It
    follows the ask now (carried verbatim here); an ask the person typed after it is the Active Task as before."""
    from compactctl.phases.plan import Budget

    q = "Pre-commit hook blocks on pre-existing issues (not our code). How should we proceed?"
    answer = f'User has answered your questions: "{q}"="main was clean; fix the issues". You can now continue.'
    note = "<task-notification><status>completed</status><summary>Background command finished</summary></task-notification>"
    body = "".join(f"def f_{{k}}_{j}(): return {j}\n" for j in range(150))  # each read its own (no dedup)
    reads = [r for k in range(6) for r in (call(f"r{k}", "read_file", {"path": f"src/m{k}.py"}), res(f"r{k}", body.format(k=k)))]
    rows = [{"role": "user", "content": "commit the renderer work"}, *reads[:6]]
    rows += [call("q", "AskUserQuestion", {"questions": [{"question": q}]}), res("q", answer), *reads[6:]]
    rows.append({"role": "assistant", "content": "Fixed them and committed."})
    budget = Budget(context_window=2500)

    def active_task(last: str) -> str:
        out, _ = api.compact(T([*rows, {"role": "user", "content": last}]), COUNTER, api.OfflineSummarizer(), api.CompactOptions(budget))
        [summary] = [m.text() for m in out.messages if is_summary(m)]
        return parse_sections(summary)["Active Task"]

    then = offline.THEN_ANSWER + f"{q} -> main was clean; fix the issues"
    assert active_task(note) == "commit the renderer work\n" + then  # the ask, carried verbatim, then the answer
    assert "main was clean" not in active_task("now push it")  # a typed ask after the answer


def test_prune_keeps_the_persons_answers():
    """An AskUserQuestion result holds the person's answers: prune leaves it as it is, as a --keep-tool output."""
    rows = session(4)
    answer = 'User has answered your questions: "Which approach?"="' + "Remove anything custom and use the library. " * 8 + '".'
    rows[1:1] = [call("q", "AskUserQuestion", {"questions": [{"question": "Which approach?"}]}), res("q", answer)]
    out, _ = api.prune(T(rows), COUNTER, PruneOptions(protect_tokens=10))
    assert out.messages[2].text() == answer
    assert out.messages[4].text() != rows[4]["content"]  # the other old outputs are digested


def test_the_project_root_is_the_session_directory_its_commands_are_relative_to():
    """Codex's session ran in /repo and read most files under /repo/apps/web/src: the summary said "project root:
    /repo/apps/web/src (paths in actions and names are relative to it)" above `sed -n '1,80p' apps/web/src/a.ts`,
    which is relative to /repo. The stated working directory is the root when most paths sit under it."""

    def sh(cid, cmd):
        return call(cid, "shell", {"command": ["bash", "-lc", cmd], "workdir": "/repo"})

    rows = [
        {"role": "user", "content": "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"},
        {"role": "user", "content": "review the app"},
    ]
    for k, name in enumerate(["a.ts", "b.ts", "c.ts", "d.ts"]):
        rows += [sh(f"c{k}", f"sed -n '1,80p' apps/web/src/{name}"), res(f"c{k}", f"export const v{k} = {k};\n" * 30)]
    rows += [sh("p", "sed -n '1,80p' packages/lib/x.ts"), res("p", "export const x = 1;\n" * 30)]
    rows.append({"role": "assistant", "content": "Reviewed."})
    f = extract(T(rows).messages)
    assert f.cwd == "/repo"
    context = parse_sections(offline.summarize(f, COUNTER, 3000))["Critical Context"]
    assert "- project root: /repo (paths in actions and names are relative to it)" in context
    assert offline.common_root(list(f.files)) == "/repo/apps/web/src/"  # without the stated directory: the deepest shared


def test_a_name_a_file_read_defines_ranks_above_one_it_only_uses():
    """A subagent read tmux.ex (`def capture_pane`, `def launch_review_session`) and then data_case.ex; its report
    named the functions tmux.ex defines, but the index ranked the later file's `Ecto.Query` first and left them out.
    A name an output defines (a numbered read's definitions, or its digest's outline) counts one use more."""
    from compactctl.summarizers.vocabulary import rank_names

    tmux = "\n".join(
        f"{k:>6}→{line}"
        for k, line in enumerate(
            ["defmodule Spotter.Services.Tmux do", "  def capture_pane(pane_id) do", '    System.cmd("tmux", [pane_id])', "  end", "end"], 1
        )
    )
    used = "\n".join(f"{k:>6}→  import Ecto.Query # {k}" for k in range(1, 6))
    rows = [
        {"role": "user", "content": "how does tmux.ex work?"},
        call("a", "Read", {"file_path": "/p/lib/tmux.ex"}),
        res("a", tmux),
        call("b", "Read", {"file_path": "/p/test/data_case.ex"}),
        res("b", used),
        {"role": "assistant", "content": "Reading on."},
    ]
    names = rank_names(T(rows).messages)
    assert names.index("capture_pane") < names.index("Ecto.Query")
    digest = "[Read] read /p/lib/tmux.ex lines 1-5\n  outline: Spotter.Services.Tmux 1-5 capture_pane 2-4\n  names: capture_pane System.cmd"
    rows[2] = res("a", digest)
    names = rank_names(T(rows).messages)
    assert names.index("capture_pane") < names.index("Ecto.Query")


@pytest.mark.parametrize(
    ("later_args", "later_text", "superseded"),
    [
        ({"path": "src/mod1.py"}, "def handler_1(): pass\n" + "new\n" * 300, True),  # read again whole: the latest view
        ({"path": "src/mod1.py"}, "<tool_use_error>File does not exist.</tool_use_error>", False),  # failed: showed nothing
        ({"path": "src/mod1.py", "offset": 400, "limit": 50}, "   400→tail\n" * 50, False),  # other lines of it
    ],
)
def test_only_a_later_read_that_shows_the_file_again_supersedes_an_earlier_one(later_args, later_text, superseded):
    """A read was pruned first as "superseded" when a later call named the same file, even when that call failed (the
    file was moved: an error) or read other lines of it (offset/limit): the earlier read was still the latest view."""
    rows = session(2)
    rows += [call("again", "read_file", later_args), res("again", later_text)]
    rows += [{"role": "assistant", "content": "ok"}]
    t = T(rows)
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10))
    assert (SUPERSEDED in out.messages[5].text()) is superseded


def test_a_failed_call_lists_no_file_it_did_not_touch_and_its_error_says_where():
    """A summary listed "test/support (read)" for a Read of a directory (EISDIR) and "conn_case.ex (read)" for one
    that does not exist; its error said only "File does not exist."; Claude Code's "Sibling tool call errored" (a
    parallel call that never ran) was listed as an error of the work; and a failed edit read as "edited"."""
    rows = [
        {"role": "user", "content": "check the test helpers"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "Read", "arguments": '{"file_path": "/p/test/support"}'}},
                {"id": "b", "type": "function", "function": {"name": "Bash", "arguments": '{"command": "ls /p/test"}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "EISDIR: illegal operation on a directory, read"},
        {"role": "tool", "tool_call_id": "b", "content": "<tool_use_error>Sibling tool call errored</tool_use_error>"},
        call("c", "Read", {"file_path": "/p/test/conn_case.ex"}),
        {"role": "tool", "tool_call_id": "c", "content": "<tool_use_error>File does not exist.</tool_use_error>"},
        call("d", "Edit", {"file_path": "/p/lib/x.ex", "old_string": "a", "new_string": "b"}),
        {"role": "tool", "tool_call_id": "d", "content": "<tool_use_error>String to replace not found in file.</tool_use_error>"},
        call("e", "Read", {"file_path": "/p/test/data_case.ex"}),
        res("e", "defmodule DataCase do\nend"),
        {"role": "assistant", "content": "Only data_case.ex exists."},
    ]
    msgs = [
        m.evolve(is_error=True) if m.role == "tool" and i < 9 else m for i, m in enumerate(T(rows).messages)
    ]  # as Claude Code flags them
    f = extract(msgs)
    assert f.files == {"/p/lib/x.ex": {"edit-failed"}, "/p/test/data_case.ex": {"read"}}
    assert f.errors == [
        "EISDIR: illegal operation on a directory, read (/p/test/support)",
        "File does not exist. (/p/test/conn_case.ex)",
        "String to replace not found in file. (/p/lib/x.ex)",
    ]
    files = parse_sections(offline.summarize(f, COUNTER, 2000))["Relevant Files"]
    assert files == "- /p/lib/x.ex (edit failed)\n- /p/test/data_case.ex (read)"


def test_a_call_the_person_cancelled_is_said_in_its_action_not_as_an_error_of_the_work():
    """Gemini CLI answers a call the person cancelled "[Operation Cancelled] Reason: User cancelled the operation.":
    the action says the call did not succeed (it read "`python3` ok"), and Critical Context lists no error of it."""
    rows = [
        {"role": "user", "content": "start python"},
        call("a", "run_shell_command", {"command": "python3"}),
        {"role": "tool", "tool_call_id": "a", "content": "[Operation Cancelled] Reason: User cancelled the operation."},
        {"role": "assistant", "content": "Cancelled; tell me when."},
    ]
    msgs = [m.evolve(is_error=True) if m.role == "tool" else m for m in T(rows).messages]  # as the Gemini reader flags it
    f = extract(msgs)
    assert f.errors == []
    sections = parse_sections(offline.summarize(f, COUNTER, 2000))
    assert "`python3` error" in sections["Completed Actions"] and "Operation Cancelled" in sections["Completed Actions"]
    assert "Operation Cancelled" not in sections.get("Critical Context", "")


def test_a_short_failed_output_with_no_error_line_is_its_own_message():
    """`git commit` exited 1 with "On branch main / nothing to commit, working tree clean": no line reads as an error,
    so the action said only "-> error"; a short failed output's last line is what failed."""
    from compactctl.outputs import outcome

    m = message_from_dict(
        {"role": "tool", "tool_call_id": "x", "content": "On branch main\nnothing to commit, working tree clean\n[exit code: 1]"}, "t", 1, 0
    )
    out = outcome(m)
    assert out.failed and out.error_lines == ["nothing to commit, working tree clean"]  # not its exit code's line
    m = message_from_dict({"role": "tool", "tool_call_id": "x", "content": "EISDIR: illegal operation on a directory, read"}, "t", 1, 0)
    assert outcome(m.evolve(is_error=True)).error_lines == ["EISDIR: illegal operation on a directory, read"]
    assert outcome(m).error_lines == []  # not flagged as failed: no error line is made up


def test_a_path_into_build_output_ranks_below_the_sources():
    """A long session's index listed `_build/dev/lib/spotter/ebin/Elixir.SpotterWeb.UserSocket.beam` and four more
    compiled files from one `find _build` among the names the work used; what a build or installer made counts half."""
    from compactctl.summarizers.vocabulary import rank_names

    rows = [
        {"role": "user", "content": "why is the socket module stale?"},
        call("a", "Bash", {"command": "find _build lib -name '*socket*'"}),
        res("a", "_build/dev/lib/app/ebin/Elixir.App.Socket.beam\nlib/app_web/channels/sockets/user_socket_handler.ex"),
        {"role": "assistant", "content": "Found them."},
    ]
    names = rank_names(T(rows).messages)  # (the source's path is the longer one: a longer name ranks lower)
    assert names.index("lib/app_web/channels/sockets/user_socket_handler.ex") < names.index(
        "_build/dev/lib/app/ebin/Elixir.App.Socket.beam"
    )


def test_a_harness_message_standing_for_the_last_ask_is_carried_cut_and_said_as_what_it_is():
    """Claude Code's compaction subagent sees only hook outputs as user messages. The latest (a 3,000-token compile
    log) stood for the last ask and moved into the summary verbatim: it was the whole summary, or the cut could not
    fit at all. It is carried cut (HARNESS_ASK_CHARS), said as the harness's, and leaves room for the rest."""
    from compactctl.harness import HARNESS_ASK, HARNESS_ASK_CHARS

    log = "[COMPILE ERROR]\n" + "\n".join(f"  error: undefined function helper_{k}/1 in lib/app/mod_{k}.ex" for k in range(120))
    rows = [{"role": "system", "content": "You are a coding agent."}]
    for k in range(6):
        rows += [
            call(f"e{k}", "Edit", {"file_path": f"/p/lib/app/mod_{k}.ex", "old_string": "a", "new_string": f"call_{k}()"}),
            res(f"e{k}", "ok " * 400),
            {
                "role": "user",
                "content": f"<system-reminder>\nPostToolUse:Edit hook additional context: [CREDO] mod_{k}.ex fine\n</system-reminder>",
            },
        ]
    rows.append({"role": "user", "content": f"<system-reminder>\nPostToolUse:Edit hook additional context: {log}\n</system-reminder>"})
    t = T(rows)
    window = sum(COUNTER.messages(t.messages)) * 2 // 5
    out, rep = api.compact(t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(api.Budget(context_window=window, tail_tokens=50)))
    assert rep["tokens_after"] <= window // 2
    summary = next(m.text() for m in out.messages if m.text().startswith("[CONTEXT COMPACTION"))
    task = parse_sections(summary)["Active Task"]
    assert task.startswith(HARNESS_ASK + "[COMPILE ERROR]") and task.endswith("…[cut]") and "<system-reminder>" not in task
    assert len(task) < len(HARNESS_ASK) + HARNESS_ASK_CHARS + 20
    assert "helper_119" not in summary and "mod_3.ex" in summary  # the log cut; room for what the work touched


def test_the_strings_written_code_says_outlive_its_cut_and_its_summary():
    """A Codex patch added `err(new Error('Team not found'))` and a log message; the continuation's test and diff
    quoted them, but the cut argument kept only names and the summary's action line said "edited". A cut argument
    keeps the quoted phrases of its cut part after its names, and a write or edit's action line its first ones."""
    code = (
        "export function getTeam(id) {\n" + "  const team = lookup(id);\n" * 30 + "  if (!team) return err(new Error('Team not found'));\n"
    )
    code += '  console.error("Unexpected error in getTeamWithStats:", id);\n}\n'
    cut_args = truncate_arguments(orjson.dumps({"file_path": "/p/team.ts", "content": code}).decode(), 200)
    assert orjson.loads(cut_args)["content"].endswith('"Team not found" "Unexpected error in getTeamWithStats:"')
    rows = [
        {"role": "user", "content": "add getTeam"},
        call("w", "Write", {"file_path": "/p/team.ts", "content": code}),
        res("w", "File created successfully at: /p/team.ts"),
        call("x", "Write", {"file_path": "/p/other.ts", "content": "const a = 'Never shown';"}),
        {"role": "tool", "tool_call_id": "x", "content": "<tool_use_error>File has not been read yet.</tool_use_error>"},
        {"role": "assistant", "content": "Added."},
    ]
    lines = [a.line for a in extract(T(rows).messages).actions]
    assert lines[0].endswith('strings: "Team not found" "Unexpected error in getTeamWithStats:"')
    assert "strings:" not in lines[1]  # a failed write wrote nothing
    rows[1] = call("w", "Write", {"file_path": "/p/team.ts", "content": orjson.loads(cut_args)["content"]})  # pruned first
    assert extract(T(rows).messages).actions[0].line.endswith('strings: "Team not found" "Unexpected error in getTeamWithStats:"')


def test_a_web_search_says_its_first_results_and_active_state_is_not_a_decision_again():
    """A subagent searched hex.pm six times and then fetched the first result of each; its summary said only
    "searched the web for `...` (1,628 chars)", and its one sentence ("I'll search hex.pm ...") filled both Active
    State and Key Decisions."""
    links = '[{"title":"key","url":"https://x.example/a?api_key=sk-abcdefghijklmnopqrstuvwx123456"},'
    links += '{"title":"opentelemetry_ash - Hex.pm","url":"https://hex.pm/packages/opentelemetry_ash"},'
    links += '{"title":"ash","url":"https://hex.pm/packages/ash"},{"title":"docs","url":"https://hexdocs.pm/ash"}]'
    rows = [
        {"role": "user", "content": "find the latest opentelemetry_ash"},
        {"role": "assistant", "content": "I'll search hex.pm for the latest version."},
        call("s", "WebSearch", {"query": "hex.pm opentelemetry_ash latest"}),
        res("s", f'Web search results for query: "hex.pm opentelemetry_ash latest"\n\nLinks: {links}\n\nThe latest is 0.3.0.'),
    ]
    f = extract(T(rows).messages)
    assert f.actions[0].line.endswith("-> https://hex.pm/packages/opentelemetry_ash https://hex.pm/packages/ash")
    secs = parse_sections(offline.summarize(f, COUNTER, 2000))
    assert secs["Active State"] == "I'll search hex.pm for the latest version." and secs["Key Decisions"] == "None"


def test_a_cut_argument_keeps_what_its_code_defines_first():
    """A Codex patch rewrote TeamSheet.tsx; its cut argument kept 64 names ranked by use (className words first)
    and left out `EmptyState`, `LoadingState` and `showNoSelection`, which the patch defined and the next diff named."""
    from compactctl.outline import defined_in

    used = " ".join(f"text-xs mb-2 mt-1 item{k}" for k in range(40))
    patch = "*** Begin Patch\n*** Update File: a.tsx\n@@\n" + "".join(f'+  <div className="{used}" />\n' for _ in range(3))
    patch += "+function EmptyState({ message }) {\n+  return <p>{message}</p>;\n+}\n+const showNoSelection = !teamId;\n*** End Patch"
    assert defined_in(patch) == ["EmptyState", "showNoSelection"]
    weight = Counter({f"item{k}": 5 for k in range(40)} | {"text-xs": 9, "mb-2": 9, "mt-1": 9})
    cut_args = truncate_arguments(orjson.dumps({"input": patch}).decode(), 100, weight, names=8)
    names = orjson.loads(cut_args)["input"].split(" names: ")[1].split(" ")
    assert names[:2] == ["EmptyState", "showNoSelection"]


def test_a_cut_argument_keeps_the_bindings_its_code_makes_inside_functions():
    """The same patch, as written: `const showLoading = ...` and `const showNoSelection = ...` sit inside the
    component's body, so defined_in (top-level definitions) does not name them; the names ranked by use pushed them
    past the cut argument's 64, and the next apply_patch on the file wrote them again."""
    from compactctl.outline import bound_in

    used = " ".join(f"text-xs mb-2 mt-1 item{k}" for k in range(40))
    patch = "*** Begin Patch\n*** Update File: a.tsx\n@@\n" + "".join(f'+  <div className="{used}" />\n' for _ in range(3))
    patch += "+export function TeamSheet({ teamId }) {\n+  const showNoSelection = !teamId;\n+  let showLoading: boolean = busy;\n"
    patch += "   const unchangedRow = 1;\n+  return null;\n+}\n*** End Patch"
    assert bound_in(patch) == ["showNoSelection", "showLoading", "unchangedRow"]
    weight = Counter({f"item{k}": 5 for k in range(40)} | {"text-xs": 9, "mb-2": 9, "mt-1": 9})
    cut_args = truncate_arguments(orjson.dumps({"input": patch}).decode(), 100, weight, names=8)
    names = orjson.loads(cut_args)["input"].split(" names: ")[1].split(" ")
    assert names[:4] == ["TeamSheet", "showNoSelection", "showLoading", "unchangedRow"]


def test_the_persons_message_is_never_said_to_be_the_harnesss():
    """ask_words said "no message is the person's" of any user message with no words of its own: an image the person
    pasted alone is theirs (no text to carry), and only an injected message reads as the harness's."""
    from compactctl.harness import HARNESS_ASK, ask_words

    image = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}
    hook = {"role": "user", "content": "<system-reminder>\nPostToolUse:Edit hook additional context: [CREDO] ok\n</system-reminder>"}
    ask = {"role": "user", "content": "fix the parser"}
    msgs = T([image, hook, ask]).messages
    assert ask_words(msgs[0]) == "" and ask_words(msgs[2]) == "fix the parser"
    assert ask_words(msgs[1]) == HARNESS_ASK + "[CREDO] ok"


def test_an_error_line_is_listed_without_its_runs_of_spaces():
    """pytest's "E       ValueError: ..." was listed as is under Critical Context: seven spaces that say nothing."""
    rows = [
        {"role": "user", "content": "run the tests"},
        call("t", "Bash", {"command": "python -m pytest -x -q"}),
        res("t", "E       ValueError: day is out of range for month\nFAILED tests/test_x.py::test_y - ValueError\n[exit code: 1]"),
        {"role": "assistant", "content": "It fails."},
    ]
    assert extract(T(rows).messages).errors[0] == "E ValueError: day is out of range for month (`python -m pytest -x -q`)"


def test_a_digested_reads_action_line_keeps_its_outline():
    """A subagent's report cited "Transcript Rendering Logic (lines 115-146)" of a file it had read; the summary's
    action line said "read session_live.ex lines 1-560", its digest's outline (each definition with its lines) gone."""
    digest = "[Read] read /p/lib/session_live.ex lines 1-560\n  outline: mount 12-40 handle_event 115-146 render 500-560 [ref 0a1b2c3d]"
    digest += "\n  names: socket.assigns handle_event"
    rows = [
        {"role": "user", "content": "explain session_live.ex"},
        call("r", "Read", {"file_path": "/p/lib/session_live.ex"}),
        res("r", digest),
        {"role": "assistant", "content": "Read it."},
    ]
    line = extract(T(rows).messages).actions[0].line
    assert line == "[Read] read /p/lib/session_live.ex lines 1-560; outline: mount 12-40 handle_event 115-146 render 500-560 [ref 0a1b2c3d]"


def test_an_action_says_its_first_error_once():
    """A Codex summary said "exit 1: failed in sandbox MacosSeatbelt with execution error: sandbox denied exec error,
    exit code: 1, stdout: , stderr: /opt/h…, 4 lines" and then the same error in full under it, seven times over."""
    err = "failed in sandbox MacosSeatbelt with execution error: sandbox denied exec error, exit code: 1, stdout: , stderr: x"
    rows = [
        {"role": "user", "content": "look for the chart"},
        call("a", "shell", {"command": ["bash", "-lc", 'rg "AreaChart"']}),
        res("a", f'{{"output": "{err}", "metadata": {{"exit_code": 1}}}}'),
        {"role": "assistant", "content": "The sandbox refused it."},
    ]
    f = extract(T(rows).messages)
    actions = parse_sections(offline.summarize(f, COUNTER, 2000))["Completed Actions"]
    assert actions.count("failed in sandbox") == 1 and actions.startswith('1. `rg "AreaChart"` exit 1, ')


def test_an_action_says_a_pytest_error_once():
    """The bundled sample's summary said "exit 1: E ValueError: day is out of range ..., 73 lines" over the same
    error as pytest prints it ("E       ValueError: ..."): said twice, the runs of spaces hid it."""
    out = "\n".join(["...F", "E       ValueError: day is out of range for month (got '2024-02-30' in filter)"] * 2)
    rows = [
        {"role": "user", "content": "run the tests"},
        call("a", "bash", {"command": "python -m pytest -x -q"}),
        res("a", out + "\nFAILED tests/test_filter.py::test_filter_edge - ValueError: day is out of range for month\nexit code 1"),
        {"role": "assistant", "content": "It fails."},
    ]
    actions = parse_sections(offline.summarize(extract(T(rows).messages), COUNTER, 2000))["Completed Actions"]
    assert actions.count("day is out of range for month (got") == 1, actions


def test_a_greeting_is_no_goal():
    """A short session opened with "Hey", then "Can you audit this codebase?": the summary's Goal read "Hey"."""
    from compactctl.summarizers.facts import is_small_talk

    assert is_small_talk("Hey") and is_small_talk("thanks!") and is_small_talk("Hi there")
    assert not is_small_talk("fix it") and not is_small_talk("Hey, fix the parser") and not is_small_talk("")
    rows = [{"role": "user", "content": "Hey"}, {"role": "assistant", "content": "Hi! What can I do?"}]
    rows += [{"role": "user", "content": "Can you audit this codebase?"}]
    rows += [{"role": "assistant", "content": f"Finding {k}: " + "the module handles parsing and caching. " * 60} for k in range(8)]
    rows += [{"role": "user", "content": "Go on with the audit."}]
    t = T(rows)
    window = sum(COUNTER.messages(t.messages)) * 2 // 5
    out, _ = api.compact(t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(api.Budget(context_window=window, protect_first=0)))
    secs = parse_sections(next(m.text() for m in out.messages if m.text().startswith("[CONTEXT COMPACTION")))
    assert "Hey" not in secs.get("Goal", "") and extract(t.messages).first_request == "Can you audit this codebase?"


def test_active_state_says_the_latest_finding_when_the_latest_text_only_says_what_comes_next():
    """A long Claude Code session's Active State was "Let me read the relevant files:": where things stood was in the
    agent's statement before it ("Tasks 4 and 5 are ready ..."). Now that finding leads, the latest text follows as
    "Next: ..."; a latest text that says something stays alone."""
    from compactctl.summarizers.facts import says_something, sentences

    assert not says_something(sentences("Let me read the relevant files:"))
    assert not says_something(sentences("Good. Now the tests:"))
    assert says_something(sentences("All 18 tests pass (15 existing + 3 new). Now run the full suite:"))
    rows = [
        {"role": "user", "content": "work on the ready tasks"},
        {"role": "assistant", "content": "Tasks 4 and 5 are ready (no blockers). Task 6 is blocked by 4 and 5."},
        call("b", "Bash", {"command": "bd ready"}),
        res("b", "4 ready"),
        {"role": "assistant", "content": "Good. Let me read the relevant files:"},
        call("r", "Read", {"file_path": "/p/config.exs"}),
        res("r", "import Config"),
    ]
    secs = parse_sections(offline.summarize(extract(T(rows).messages), COUNTER, 2000))
    assert (
        secs["Active State"]
        == "Tasks 4 and 5 are ready (no blockers). Task 6 is blocked by 4 and 5.\nNext: Good. Let me read the relevant files:"
    )
    rows += [{"role": "assistant", "content": "The config has no OTEL exporter yet."}]
    secs = parse_sections(offline.summarize(extract(T(rows).messages), COUNTER, 2000))
    assert secs["Active State"] == "The config has no OTEL exporter yet."
    # A choice offered in markup says nothing; nor does a finding from before the person's latest ask.
    assert not says_something(sentences("<options>\n<option>Review or explain code</option>\n<option>Fix a bug</option>\n</options>"))
    rows += [
        {"role": "user", "content": "Add the exporter."},
        {"role": "assistant", "content": "Let me add it:"},
        call("e", "Edit", {"file_path": "/p/config.exs", "old_string": "a", "new_string": "b"}),
        res("e", "ok"),
    ]
    secs = parse_sections(offline.summarize(extract(T(rows).messages), COUNTER, 2000))
    assert secs["Active State"] == "Let me add it:"


def test_a_demonstration_keeps_the_interfaces_commands_not_the_other_tasks_names(tmp_path):
    """SWE-agent's demonstration is another task worked through (marshmallow's TimeDelta) to teach the interface.
    Its digest kept 256 of that task's names (1,055 tokens), and the summary's index listed them (`td_field`,
    `self.DAYS`) as this work's vocabulary. Now its digest keeps the names the person or the agent wrote too (the
    commands), and the index leaves it out."""
    traj = swe_trajectory(typed=True)
    demo = "Here is a demonstration of how to correctly accomplish this task.\n--- DEMONSTRATION ---\n"
    demo += "".join(f"search_file td_field_{k} in src/marshmallow/fields.py\nself.DAYS_{k} = TimeDelta_{k}(precision)\n" for k in range(80))
    traj["history"][1]["content"] = demo
    src = tmp_path / "x.traj"
    src.write_bytes(orjson.dumps(traj))
    [t] = api.read([str(src)])
    total = sum(COUNTER.messages(t.messages))
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=800, target=total // 4))
    digest = out.messages[1].text()
    assert digest.startswith("[observation] ") and "search_file" in digest  # the agent's actions use it
    assert "td_field" not in digest and "TimeDelta" not in digest and "marshmallow" not in digest
    f = extract(t.messages, 1, len(t.messages) - 2)
    assert f.names and not any("td_field" in n or "TimeDelta" in n for n in f.names)


def test_a_rule_in_a_markdown_heading_or_table_row_is_said_without_its_marks():
    """A skill's "### Phase 5: Create Beads (only after plan approval)" and a table row "| Are source references
    listed? | ... only file paths |" were listed under Constraints with their heading marks and pipes."""
    assert constraint_sentences("### Phase 5: Create Beads (only after plan approval)") == [
        "Phase 5: Create Beads (only after plan approval)"
    ]
    row = "| Are source references listed? | Paths to read first; no rig names, only file paths |"
    assert constraint_sentences(row) == ["Are source references listed?; Paths to read first; no rig names, only file paths"]
    assert constraint_sentences("| a | b |\n|---|---|") == []  # a table without a rule binds nothing


def test_the_sizes_and_dates_of_an_ls_l_listing_are_not_names():
    """`ls -la` in a Claude Code session: a digest and the index listed "6148" (the size of .DS_Store) and the
    other sizes as names; the file names are what a continuation uses."""
    from compactctl.names import names_in

    listing = (
        "total 48\ndrwxr-xr-x@ 24 jn staff 768 Oct 20 20:40 node_modules\n-rw-r--r--@ 1 jn staff 6148 Oct 20 14:55 .DS_Store\n"
        "-rw-r--r--  1 root root 104857 Jan  3  2024 pnpm-lock.yaml\nlrwxrwxrwx 1 u u 2.1K Dec  5 21:14 turbo.json\n"
    )
    assert names_in(listing) == ["node_modules", "pnpm-lock.yaml", "turbo.json"]
    assert names_in("port 6148 and user-rw-data") == ["6148", "user-rw-data"]  # outside a listing: as before


def test_a_section_whose_items_all_missed_the_budget_says_how_many_not_none():
    """A Codex summary said "## Relevant Files\nNone\n(+12 more omitted to fit the budget)": twelve files, and "None"."""
    from compactctl.summarizers.fit import Item, _render

    items = [Item("Relevant Files", f"- src/f{k}.ts (read)", 4, k) for k in range(12)] + [Item("Goal", "ship it", 0, 12)]
    secs = parse_sections(_render(items, {12}))
    assert secs["Relevant Files"] == "(+12 omitted to fit the budget)" and secs["Blocked"] == "None"
    assert parse_sections(_render(items, {0, 12}))["Relevant Files"] == "- src/f0.ts (read)\n(+11 more omitted to fit the budget)"


def test_a_short_failed_output_says_its_message_not_gits_advice():
    """`git add` of an ignored path failed with "The following paths are ignored ...:", the path, and three "hint:"
    lines; the error said was the last hint ('hint: "git config advice.addIgnoredFile false"')."""
    text = (
        "Exit code 1\nThe following paths are ignored by one of your .gitignore files:\npriv/static/assets\n"
        'hint: Use -f if you really want to add them.\nhint: Turn this message off by running\nhint: "git config advice.addIgnoredFile false"'
    )
    out = outputs.outcome(message_from_dict({"role": "tool", "tool_call_id": "a", "content": text}, "t", 1, 0))
    assert out.failed and out.error_lines == ["The following paths are ignored by one of your .gitignore files: priv/static/assets"]
    usage = "Exit code 2\nUsage: foo:\n  -a\nbad flag -z"  # a last line with words is its own message
    assert outputs.outcome(message_from_dict({"role": "tool", "tool_call_id": "a", "content": usage}, "t", 1, 0)).error_lines == [
        "bad flag -z"
    ]


def test_with_no_text_from_the_agent_the_active_state_is_its_latest_reasoning():
    """A Codex span with 30 shell calls and no assistant text had "Active State: None"; Codex writes a reasoning summary
    before each call ("**Searching for cursor_usage table definitions**")."""
    rows = [{"role": "user", "content": "find where usage is stored"}]
    for k, thought in enumerate(["**Listing apps**", "**Searching for cursor_usage table definitions**"]):
        rows += [
            {**call(f"s{k}", "shell", {"command": ["bash", "-lc", f"rg usage_{k}"]}), "reasoning_content": thought},
            res(f"s{k}", f"src/db_{k}.ts: cursor_usage"),
        ]
    secs = parse_sections(offline.summarize(extract(T(rows).messages), COUNTER, 2000))
    assert secs["Active State"] == "(the agent's latest reasoning) Searching for cursor_usage table definitions"
    rows.append({"role": "assistant", "content": "The usage lives in cursor_usage."})
    assert parse_sections(offline.summarize(extract(T(rows).messages), COUNTER, 2000))["Active State"] == "The usage lives in cursor_usage."


@pytest.mark.parametrize(
    "output, said",
    [
        ("collected 13 items\n\ntests/test_x.py ....\n===== 12 passed, 1 skipped in 0.51s =====\n", "12 passed, 1 skipped in 0.51s"),
        (
            "Compiling 2 files (.ex)\nFinished in 0.4 seconds\n14 doctests, 297 tests, 0 failures\n\nRandomized with seed 1\n",
            "14 doctests, 297 tests, 0 failures",
        ),
        ("PASS src/a.test.ts\nTests:       5 passed, 5 total\nTime:        1.2 s\n", "Tests: 5 passed, 5 total"),
        ("Compiling 2 files (.ex)\nGenerated app\n", None),
    ],
)
def test_a_test_runs_tally_is_on_its_line(output, said):
    """A test run's line says its tally ("297 tests, 0 failures"): what a report of the run, a commit message or the
    next run's comparison says again ("309 tests (was 297)"); an output that counts nothing adds nothing."""
    rows = [{"role": "user", "content": "run the tests"}, call("t", "Bash", {"command": "mix test"}), res("t", output)]
    t = T(rows)
    line = describe(t.messages[1].tool_calls[0], t.messages[2])
    assert line.endswith(f"; {said}") if said else ";" not in line


def test_the_tally_pattern_matches_where_its_plain_word_boundary_form_does():
    """outputs._TALLY starts with its digit (`\\d(?<!\\w\\w)\\d*`, a faster search): it matches where `\\b\\d+ ...` does,
    at the same place, whatever is before the number (a word character, a Unicode digit, nothing) and in any case."""
    import random

    plain = re.compile(r"\b\d+ " + outputs._TALLY.pattern.split(" ", 1)[1], re.I)
    pieces = [*"0_aZ \n-.\u0663\u00b2\u00e9", "12", "x1", "tests", "Passed", "FAILURES", "\u017fkipped", "total"]
    rnd = random.Random(11)
    texts = ["12 passed", "x12 passed", "_3 tests", "v1.2 tests", "3 testsuite", "==== 1 FAILED ====", "\u0663 errors", "7 \u017fpecs"]
    texts += ["".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 10))) for _ in range(20_000)]
    for text in texts:
        new, old = outputs._TALLY.search(text), plain.search(text)
        assert (new and new.span()) == (old and old.span()), text


def test_compacting_again_merges_what_the_earlier_summary_says_with_what_came_since():
    """Compacted at 40% of a session, carried on and compacted again, a summary listed "router.ex (read)" from the
    earlier summary and then "router.ex (edited)", said "project root: ..." twice and repeated in its new index the
    names the earlier summary's index lines (carried) already listed: one line per file, each line and name once."""
    from compactctl.summarizers.prompt import parse_sections as sections_of

    root = "/home/u/proj/"
    rows = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix the parser in lib/parse.py"}]
    for i in range(6):
        body = f"defmodule Mod{i} do\n  def handler_{i}(conn), do: shared_helper_name(conn)\nend\n" + "  # line of code\n" * 200
        rows += [call(f"r{i}", "Read", {"file_path": f"{root}lib/mod{i}.ex"}), res(f"r{i}", body)]
        rows.append({"role": "assistant", "content": f"Mod{i} routes through shared_helper_name. " + "It reads the request first. " * 60})
    rows += [{"role": "user", "content": "now change mod1"}]
    first, rep = api.compact(T(rows), COUNTER, api.OfflineSummarizer(), api.CompactOptions(api.Budget(context_window=3000)))
    assert rep["status"] == "compacted", rep
    again = [orjson.loads(line) for line in api.write(first).splitlines()]
    assert "mod1.ex (read)" in next(m["content"] for m in again if str(m["content"]).startswith("[CONTEXT COMPACTION"))
    for k in range(6):
        again += [
            call(f"e{k}", "Edit", {"file_path": f"{root}lib/mod1.ex", "old_string": f"handler_{k}", "new_string": f"handler_{k}_v2"}),
            res(f"e{k}", "The file has been updated. " + "ok " * 400),
            {"role": "assistant", "content": f"Step {k} of the change: " + "the handler now takes the connection first. " * 40},
        ]
    again += [{"role": "assistant", "content": "Edited mod1."}, {"role": "user", "content": "run the tests"}]
    out, rep = api.compact(T(again), COUNTER, api.OfflineSummarizer(), api.CompactOptions(api.Budget(context_window=3000)))
    assert rep["status"] == "compacted", rep
    summary = next(m.text() for m in out.messages if m.text().startswith("[CONTEXT COMPACTION"))
    secs = sections_of(summary)
    mod1 = [ln for ln in secs["Relevant Files"].split("\n") if "mod1.ex" in ln]
    assert len(mod1) == 1 and mod1[0].endswith("(read, edited)"), secs["Relevant Files"]
    context = secs["Critical Context"].split("\n")
    assert sum(ln.startswith("- project root:") for ln in context) <= 1
    listed = [n for ln in context if ln.startswith(fit.INDEX_LINE) for n in fit.index_line_names(ln)]
    assert len(listed) == len(set(listed)), [n for n in listed if listed.count(n) > 1]


# ---- excerpts: the index's names with their neighbours


def test_excerpts_are_the_lines_that_show_index_names_newest_first():
    from compactctl.summarizers.vocabulary import excerpts

    ms = T(
        [
            {"role": "user", "content": "x"},
            res("a", "  12→def load_settings(path: str) -> dict:\n  13→    return {}\nshort\n" + "load_settings " * 30),
            call("b", "apply_patch", {"patch": "-    old = load_settings(p)\n+    settings_cfg = load_settings(path)\n"}),
            res("b", f"[apply_patch] done\n{QUOTED_LINE}cached_settings = load_settings(home)\n{NAMES_LINE}load_settings settings_cfg"),
            call("c", "Write", {"content": "cfg_loaded = load_settings(x)...[truncated] names: load_settings unused_name_here"}),
        ]
    ).messages
    ex = excerpts(ms, ["load_settings", "settings_cfg", "cached_settings", "unused_name_here"])
    # a digest's quoted line without its label, never its names line; a diff's added line without its "+"
    assert [e.text for e in ex] == [
        "cfg_loaded = load_settings(x)",  # a cut argument's kept part, not the names listed after the cut
        "cached_settings = load_settings(home)",
        "settings_cfg = load_settings(path)",
        "def load_settings(path: str) -> dict:",
    ]
    # a diff's removed line, a line of a few characters and one longer than names.QUOTED_CHARS are never quoted
    assert dict(ex[2].names) == {"settings_cfg": 2**-0.5, "load_settings": 1.0}
    assert excerpts(ms, []) == []


def test_a_digests_head_is_not_quoted_its_action_line_says_it():
    """The summary quoted a digest's first line (`[get_user_details] called(user_id=omar_davis_3817) -> ok, 947
    chars output`), which its Completed Actions line says too: 4 of 5 quoted lines of a tau-bench summary."""
    from compactctl.summarizers.vocabulary import excerpts

    head = "[get_user_details] called(user_id=omar_davis_3817) -> ok, 947 chars output"
    ms = T([{"role": "user", "content": "x"}, res("a", f"{head}\n{QUOTED_LINE}membership: gold for omar_davis_3817")]).messages
    assert [e.text for e in excerpts(ms, ["omar_davis_3817"])] == ["membership: gold for omar_davis_3817"]
    log = T([{"role": "user", "content": "x"}, res("a", "[INFO] called omar_davis_3817 back\n[INFO] ran omar_davis_3817's job")]).messages
    assert [e.text for e in excerpts(log, ["omar_davis_3817"])] == [  # a log line is one
        "[INFO] called omar_davis_3817 back",
        "[INFO] ran omar_davis_3817's job",
    ]


def test_a_digest_quotes_the_lines_that_show_its_most_used_names_and_its_names_line_does_not_repeat_them():
    from compactctl.names import quoted_lines

    body = "".join(f"filler_{k} = {k}\n" for k in range(200)) + "settings = parse_config(path) or AppConfig.load(path)\n"
    rows = session(2)
    rows[3] = res("r0", body)
    rows += [{"role": "assistant", "content": "parse_config and AppConfig, AppConfig.load: " * 3}]
    out, _ = api.prune(T(rows), COUNTER, PruneOptions(protect_tokens=10, target=100))  # a summary must follow
    digest = out.messages[3].text()
    quoted = [ln[len(QUOTED_LINE) :] for ln in digest.split("\n") if ln.startswith(QUOTED_LINE)]
    assert "settings = parse_config(path) or AppConfig.load(path)" in quoted and len(quoted) <= 12
    names = next(ln for ln in digest.split("\n") if ln.startswith(NAMES_LINE))
    assert "parse_config" not in names.split()
    # the action line of a later summary leaves the quoted lines out (they go to its excerpts)
    facts = extract(out.messages, 0, len(out.messages))
    line = next(a.line for a in facts.actions if "mod0.py" in a.line)
    assert "settings = parse_config" not in line
    assert quoted_lines("a_name here\n" + "x" * 200 + " b_name", ["a_name", "b_name"], 3) == []  # too short, too long
    assert quoted_lines("- old_name = 1 removed\n+ new_name = old_name + 1", ["old_name", "new_name"], 3) == ["new_name = old_name + 1"]


def test_pick_excerpts_covers_the_most_names_per_token_in_transcript_order_and_never_a_secret():
    from compactctl.summarizers.vocabulary import Excerpt

    newest_first = [
        Excerpt("api_key = 'sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD' for alpha", (("alpha", 1.0),)),
        Excerpt("alpha(beta)", (("alpha", 1.0), ("beta", 1.0))),
        Excerpt("gamma = alpha(beta) + delta", (("alpha", 1.0), ("beta", 1.0), ("gamma", 0.5), ("delta", 0.5))),
        Excerpt("only beta here", (("beta", 1.0),)),
    ]
    # the cheapest per name first, then what still shows new names ("only beta here" shows none); oldest first
    assert fit.pick_excerpts(newest_first, COUNTER, 1000) == ["gamma = alpha(beta) + delta", "alpha(beta)"]
    head = COUNTER.text(fit.EXCERPT_HEAD) + 1
    assert fit.pick_excerpts(newest_first, COUNTER, head + 6) == ["alpha(beta)"]  # the room holds the one line
    assert fit.pick_excerpts(newest_first[:1], COUNTER, 1000) == []  # redaction would change it
    both = [Excerpt("the beta line", (("beta", 1.0),)), Excerpt("the alpha line", (("alpha", 1.0),))]
    assert fit.pick_excerpts(both, COUNTER, 1000) == ["the alpha line", "the beta line"]  # oldest first


def test_compact_quotes_lines_of_the_outputs_and_the_index_does_not_repeat_their_names():
    [t] = api.read([str(SAMPLES / "long_session.jsonl")])
    out, rep = api.compact(t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(budget=api.Budget(context_window=8000)))
    assert rep["status"] == "compacted", rep
    [summary] = [m.text() for m in out.messages if is_summary(m)]
    quoted = summary.split(fit.EXCERPT_HEAD + "\n", 1)[1].split("\n- ", 1)[0].split("\n")
    assert len(quoted) > 5 and all(q.startswith(fit.EXCERPT_INDENT) for q in quoted)
    written = "\n".join(tools.argument_text(c) for m in t.messages for c in m.tool_calls)
    outputs_text = "\n".join(m.text() for m in t.messages if m.role == "tool")
    assert [q for q in quoted if q.strip() not in outputs_text + written] == []  # lines of the session, verbatim
    assert any(q.strip() in outputs_text and q.strip() not in written for q in quoted)  # an output's, from its digest
    index = " ".join(ln for ln in summary.split("\n") if ln.startswith(fit.INDEX_LINE))
    assert not any(f" {n} " in f" {index} " for q in quoted for n in q.split(" = ")[:1] if n.strip().isidentifier())


def test_compacting_again_quotes_the_earlier_summary_s_lines_from_its_pool_not_as_carried_items():
    # The earlier summary's quoted lines were carried as Critical Context items, taken before its completed actions:
    # compacted twice, the long sessions lost those actions (96.3 -> 93.9% of the facts). Now they go back into the
    # pool the new summary quotes from, with the new turns' lines; its other lines are carried, never quoted.
    [t] = api.read([str(SAMPLES / "long_session.jsonl")])
    opts = api.CompactOptions(budget=api.Budget(context_window=8000))
    half = t.evolve(messages=t.messages[: len(t.messages) // 2])
    first, _ = api.compact(half, COUNTER, api.OfflineSummarizer(), opts)
    [earlier] = [m.text() for m in first.messages if is_summary(m)]
    earlier_quoted = earlier.split(fit.EXCERPT_HEAD + "\n", 1)[1].split("\n- ", 1)[0].split("\n")
    assert len(earlier_quoted) > 3
    # Read back, its Critical Context items leave the block out; the pool holds the block's lines, none of its others.
    prior, _ = offline._prior_items(earlier)
    assert fit.EXCERPT_HEAD not in prior["Critical Context"] and not set(earlier_quoted) & set(prior["Critical Context"])
    from compactctl.summarizers.vocabulary import excerpts

    summary_message = next(m for m in first.messages if is_summary(m))
    pool = [e.text for e in excerpts([summary_message], names_in_order(earlier))]
    assert pool and set(pool) <= {q.strip() for q in earlier_quoted}
    # Compacted again: one block, every line of it a line of the session (not an action line of the earlier summary).
    grown = t.evolve(messages=[*first.messages, *t.messages[len(t.messages) // 2 :]])
    again, rep = api.compact(grown, COUNTER, api.OfflineSummarizer(), opts)
    assert rep["status"] == "compacted", rep
    [summary] = [m.text() for m in again.messages if is_summary(m)]
    assert summary.count(fit.EXCERPT_HEAD) == 1
    quoted = summary.split(fit.EXCERPT_HEAD + "\n", 1)[1].split("\n- ", 1)[0].split("\n")
    session = "\n".join(m.text() for m in t.messages) + "\n".join(tools.argument_text(c) for m in t.messages for c in m.tool_calls)
    assert [q for q in quoted if q.strip() not in session] == []


def names_in_order(text: str) -> list[str]:
    from compactctl.names import names_in

    return list(dict.fromkeys(names_in(text)))


def test_a_codex_output_s_digest_lists_the_names_of_what_the_command_printed_not_its_wrapper_s_keys():
    # Codex wraps a shell output as {"output": ..., "metadata": {"exit_code": 0, "duration_seconds": 0.1}}: the
    # digests of one Codex session listed "exit_code duration_seconds" 58 times, often as their only names.
    printed = "\n".join(f"src/services/service_{k}.ts" for k in range(40))
    body = orjson.dumps({"output": printed, "metadata": {"exit_code": 0, "duration_seconds": 0.1}}).decode()
    out, _ = api.prune(first_read(body), COUNTER, PruneOptions(protect_tokens=10))
    digest = out.messages[3].text()
    assert NAMES_LINE in digest and "src/services/service_0.ts" in digest, digest
    assert "exit_code" not in digest and "duration_seconds" not in digest, digest


def test_code_a_later_read_shows_again_is_cut_before_any_output_is_digested():
    """A patch's long arguments (code the agent wrote: Codex's `apply_patch` through `shell`) whose file a later call
    printed (`sed -n '1,200p' F`) are the file as it then stood: they are cut with the superseded outputs, before an
    old output is digested (Codex at the 50% target: the latest reads of the files the agent changed stay verbatim).
    A patch whose file no later call printed stays after the outputs, as before."""

    def patch(cid: str, path: str) -> dict:
        body = "".join(f"+def added_{cid}_{k}(): return {k}\n" for k in range(60))
        cmd = f"apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: {path}\n@@\n{body}*** End Patch\nPATCH"
        return call(cid, "shell", {"command": ["bash", "-lc", cmd], "workdir": "/repo"})

    for read_again in (True, False):
        rows = session(2)
        rows += [patch("p", "src/mod0.py"), res("p", "Success. Updated the following files:\nM src/mod0.py")]
        shown = "src/mod0.py" if read_again else "src/other.py"
        rows += [call("s", "shell", {"command": ["bash", "-lc", f"sed -n '1,200p' {shown}"], "workdir": "/repo"})]
        rows += [res("s", "def handler_0(): pass\n"), {"role": "assistant", "content": "ok"}]
        t = T(rows)
        out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10, target=sum(COUNTER.messages(t.messages)) - 300))
        cut = out.messages[7].tool_calls[0].arguments != t.messages[7].tool_calls[0].arguments
        assert cut is read_again
        assert (out.messages[3] is t.messages[3]) is read_again  # the old read of src/mod0.py stays verbatim


def test_what_later_calls_printed_is_looked_for_only_after_the_oldest_long_write(monkeypatch):
    """The files later calls printed (_note_reads) decide only whether an old message's long arguments that write
    files are cut with the superseded outputs: they are looked for after the oldest such message, and not at all in
    a transcript with none (issue 11: the calls' reads were noted in every transcript)."""
    noted: list[int] = []
    real = prune_steps._note_reads

    def note(read_later, m, later):
        noted.append(next(k for k, x in enumerate(t.messages) if x is m))
        real(read_later, m, later)

    body = "".join(f"+def added_{k}(): return {k}\n" for k in range(60))
    patch = f"apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: src/mod0.py\n@@\n{body}*** End Patch\nPATCH"
    later = [
        call("p", "shell", {"command": ["bash", "-lc", patch], "workdir": "/repo"}),
        res("p", "Success. Updated the following files:\nM src/mod0.py"),
        call("s", "shell", {"command": ["bash", "-lc", "sed -n '1,200p' src/mod0.py"], "workdir": "/repo"}),
        res("s", "def handler_0(): pass\n"),
        {"role": "assistant", "content": "ok"},
    ]
    monkeypatch.setattr(prune_steps, "_note_reads", note)
    for rows, expected in ((session(4), []), (session(2) + later, [11, 9])):
        noted.clear()
        t = T(rows)
        out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10, target=sum(COUNTER.messages(t.messages)) - 300))
        assert noted == expected
    assert out.messages[7].tool_calls[0].arguments != t.messages[7].tool_calls[0].arguments  # the patch is still cut
