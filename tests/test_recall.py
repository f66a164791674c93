"""References, the archive index, `recall`, and the recovery arm."""

from __future__ import annotations

import os
import re

import orjson
import pytest

import compactctl
from compactctl import api, archive, refs, search
from compactctl.errors import Exit
from compactctl.formats.openai import message_from_dict
from compactctl.model import Transcript
from compactctl.phases.prune import PruneOptions
from compactctl.recovery import recoverable, recovery
from compactctl.tokens import make_counter

from .conftest import SAMPLES, cli, read_jsonl, tool_session, write_jsonl

COUNTER = make_counter("gpt-4o")
LONG = SAMPLES / "long_session.jsonl"


def T(rows, id="t.jsonl"):
    return Transcript([message_from_dict(r, "t", i + 1, i) for i, r in enumerate(rows)], id=id)


def compacted(tmp_path, *extra, src=LONG, arch="a.jsonl", window="8000"):
    out, a = tmp_path / "c.jsonl", tmp_path / arch
    r = cli("compact", str(src), "--context-window", window, "-q", "-o", str(out), "--archive", str(a), *extra)
    assert r.returncode == 0, r.stderr
    return out, a


def test_ref_is_content_derived_and_stable():
    rows = tool_session(4, 2000)
    a, b = T(rows, "x.jsonl"), T(rows, "<stdin>")
    assert refs.ref_of(a.messages[3]) == refs.ref_of(b.messages[3])  # whatever the input is called
    assert re.fullmatch(r"[0-9a-f]{8}", refs.ref_of(a.messages[3]))
    assert refs.ref_of(a.messages[3]) != refs.ref_of(a.messages[5])
    changed = dict(rows[3], content=rows[3]["content"] + "!")
    assert refs.ref_of(T(rows[:3] + [changed]).messages[3]) != refs.ref_of(a.messages[3])


def test_prune_tags_every_replacement_and_the_archive_agrees():
    rows = tool_session(6, 3000)
    rows.insert(
        4,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "w",
                    "type": "function",
                    "function": {"name": "write_file", "arguments": orjson.dumps({"path": "a.py", "content": "q" * 3000}).decode()},
                }
            ],
        },
    )
    rows.insert(5, {"role": "tool", "tool_call_id": "w", "content": "ok"})
    t = T(rows)
    out, st = api.prune(t, COUNTER, PruneOptions(protect_tokens=500))
    recs = {a.index: a.record() for a in st.archived}
    assert len(recs) >= 4
    for i, rec in recs.items():
        assert rec["ref"] == refs.ref_of(t.messages[i]) == refs.ref_of_body(rec["message"])
        m = out.messages[i]
        carried = refs.found(m.text() + "".join(c.arguments for c in m.tool_calls))
        assert carried == [rec["ref"]], (i, m)
    args = orjson.loads(out.messages[4].tool_calls[0].arguments)  # the cut argument stays valid JSON, the ref at the cut
    assert args["content"] == "q" * 200 + f"...[truncated] [ref {recs[4]['ref']}]"
    plain, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=500, refs=False))
    assert not any("[ref " in m.text() or "[ref " in "".join(c.arguments for c in m.tool_calls) for m in plain.messages)
    assert api.check(out) == []


def test_every_reference_in_a_compacted_output_resolves(tmp_path):
    out, a = compacted(tmp_path)
    text = out.read_text()
    found = set(refs.REF_RE.findall(text))
    assert len(found) > 10
    with search.Index.open(str(a)) as ix:
        assert ix.path == str(tmp_path / "a.sqlite")  # built on first use next to the JSONL
        originals = {r["ref"]: r for r in archive.records(str(a)) if "ref" in r}
        for ref in found:
            hits = ix.recall(ref)
            assert hits and all(refs.ref_of_body(h.message) == h.ref for h in hits)
            if hits[0].span:  # the summary's span: every archived original of the summarized turns
                assert len(hits) > 10 and {h.ref for h in hits} <= set(originals)
            else:
                assert hits[0].message == originals[ref]["message"]
    spans = [r for r in archive.records(str(a)) if r.get("span")]
    assert spans and f"Originals of the summarized turns: [ref {spans[0]['span']}]" in text


def test_refs_off_and_the_recall_hint(tmp_path):
    out, _ = compacted(tmp_path, "--no-refs")
    assert "[ref " not in out.read_text() and refs.RECALL_HINT not in out.read_text()
    on, _ = compacted(tmp_path, arch="b.jsonl")
    assert refs.RECALL_HINT not in on.read_text()
    hint, _ = compacted(tmp_path, "--recall-hint", arch="h.jsonl")
    [summary] = [m for m in read_jsonl(hint.read_bytes()) if refs.RECALL_HINT in str(m.get("content"))]
    assert "CONTEXT COMPACTION" in summary["content"]
    # Without references the hint names only `search`: there is no [ref ...] to recall.
    bare, _ = compacted(tmp_path, "--recall-hint", "--no-refs", arch="n.jsonl")
    assert refs.RECALL_HINT_SEARCH in bare.read_text() and "[ref " not in bare.read_text()


def test_sqlite_archive_restores_exactly_and_recalls(tmp_path):
    out, a = compacted(tmp_path, arch="a.sqlite")
    r = cli("restore", str(out), "--archive", str(a))
    assert r.returncode == 0 and r.stdout == LONG.read_bytes()
    ref = refs.REF_RE.findall(out.read_text())[0]
    r = cli("recall", ref, "--archive", str(a))
    assert r.returncode == 0 and len(r.stdout) > 200
    [rec] = [x for x in archive.records(str(a)) if x.get("ref") == ref]
    assert r.stdout.decode().rstrip("\n") == rec["message"]["content"].rstrip("\n")
    j = read_jsonl(cli("recall", ref, "--archive", str(a), "--json").stdout)
    assert j[0]["ref"] == ref and j[0]["message"] == rec["message"]


def test_recall_errors(tmp_path):
    _, a = compacted(tmp_path)
    r = cli("recall", "deadbeef", "--archive", str(a))
    assert r.returncode == Exit.NOT_FOUND and b"no archived original has reference deadbeef" in r.stderr
    assert cli("recall", "not-a-ref", "--archive", str(a)).returncode == Exit.USAGE  # no reference at all: a usage error
    assert cli("recall", "--archive", str(a)).returncode == Exit.USAGE
    assert cli("recall", "deadbeef", "--archive", str(tmp_path / "none.jsonl")).returncode == Exit.IO
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"x": 1}])
    assert cli("recall", "--search", "x", "--archive", str(bad)).returncode == Exit.DATA


def test_search_ranks_and_snippets(tmp_path):
    rows = tool_session(6, 3000)
    rows[3]["content"] = "Traceback: KeyError 'flux_capacitor' in engine/core.py line 88\n" + "noise\n" * 600
    _, a = compacted(tmp_path, src=write_jsonl(tmp_path / "s.jsonl", rows), window="3000")
    r = cli("recall", "--search", "flux_capacitor core.py", "--archive", str(a), "--json")
    assert r.returncode == 0, r.stderr
    hits = read_jsonl(r.stdout)
    assert hits[0]["ref"] == refs.ref_of(T(rows).messages[3]) and "flux_capacitor" in hits[0]["snippet"]
    assert cli("recall", "--search", "zzqqxx", "--archive", str(a)).stdout == b""
    with search.Index.open(str(a)) as ix:  # no hit with every word: any word
        assert ix.search("flux_capacitor absentword")[0].ref == hits[0]["ref"]
        assert ix.search('"; DROP TABLE records; -- NEAR(') == []  # query text is never FTS syntax


def test_a_query_with_a_nul_or_a_lone_surrogate_is_searched_not_a_traceback(tmp_path):
    """A NUL ended SQLite's query text ("unterminated string": the MCP tool failed), and a lone surrogate (a
    Latin-1 byte in a UTF-8 terminal's argv, `--search $'caf\\xe9 flux'`, or `\\ud800` in an MCP client's JSON)
    could not be encoded: recall --search exited 1 with a traceback. They are searched as what the index holds
    for them (a space, U+FFFD), and the other words still find their originals."""
    rows = tool_session(6, 3000)
    rows[3]["content"] = "Traceback: KeyError 'flux_capacitor' in engine/core.py line 88\n" + "noise\n" * 600
    _, a = compacted(tmp_path, src=write_jsonl(tmp_path / "s.jsonl", rows), window="3000")
    want = refs.ref_of(T(rows).messages[3])
    with search.Index.open(str(a)) as ix:
        for q in ("flux_capacitor\x00x", "flux_capacitor x\ud800y", "caf\udce9 flux_capacitor"):
            assert [h.ref for h in ix.search(q)][:1] == [want], q
    r = cli("recall", "--search", "caf\udce9 flux_capacitor", "--archive", str(a))
    assert r.returncode == 0 and r.stdout.startswith(f"[ref {want}]".encode()), r.stderr
    for args in (("--search", "flux_capacitor"), (want,)):  # a transcript named so: none of the archive's (a usage error)
        r = cli("recall", *args, "--transcript", "caf\udce9.jsonl", "--archive", str(a))
        assert r.returncode == Exit.USAGE and r.stdout == b"" and b"Traceback" not in r.stderr, r.stderr


def test_index_is_rebuilt_when_the_jsonl_is_newer(tmp_path):
    _, a = compacted(tmp_path)
    assert cli("recall", "--index", "--archive", str(a)).returncode == 0
    n = sum(1 for _ in archive.records(str(tmp_path / "a.sqlite")))
    assert n == sum(1 for _ in archive.records(str(a)))


def test_recoverable_finds_removed_facts(tmp_path):
    rows = tool_session(6, 3000)
    rows[3]["content"] = "config loaded from /etc/app/settings.toml; port=8443\n" + "noise\n" * 600
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    out, a = compacted(tmp_path, src=src, window="3000")
    [orig], [comp] = api.read([str(src)]), api.read([str(out)])
    facts = ["/etc/app/settings.toml", "port=8443", "Fix the bug in app.py", "never-said-anything-like-this"]
    with search.Index.open(str(a)) as ix:
        assert recoverable(facts, ix) == {"/etc/app/settings.toml", "port=8443"}  # the first ask stays in context, not archived
        rep = recovery(orig, comp, ix, facts)
    assert rep["in_context"] >= 1 and rep["lost"] == ["never-said-anything-like-this"]
    assert rep["with_recovery_share"] == pytest.approx(0.75)


def test_summary_items_cite_references_that_resolve(tmp_path):
    out, a = compacted(tmp_path)
    [comp] = api.read([str(out)])
    summary = next(m.text() for m in comp.messages if "## Completed Actions" in m.text())
    actions = summary.split("## Completed Actions", 1)[1].split("\n## ", 1)[0]
    cited = refs.REF_RE.findall(actions)
    assert len(cited) >= 5  # the actions point at their archived outputs
    with search.Index.open(str(a)) as ix:
        for r in cited:
            assert ix.recall(r)


def test_references_never_turn_a_compaction_that_fits_into_one_that_cannot():
    """The summary's reference line costs ~12 tokens: at a small target it kept the last ask out of the summary and
    the transcript could not fit, where without references it did (a LlamaFactory record of the corpus: 757 tokens
    written as read against 123 compacted). Now the line goes when the ask needs its room."""
    from compactctl import api
    from compactctl.errors import CannotFit
    from compactctl.formats.openai import message_from_dict
    from compactctl.model import Transcript
    from compactctl.tokens import make_counter

    counter = make_counter("gpt-4o")
    rows = [  # the record's shape: 101, 450, 61 and 145 tokens, the last ask third
        {"role": "user", "content": "Can you find the nearest gas station to my location at the corner of Main and 5th? " * 5},
        {"role": "assistant", "content": "I looked it up: the station on Elm Street is the closest one to you right now. " * 25},
        {"role": "user", "content": "Thanks. Now please convert 250 US dollars to euros at today's rate for me. " * 3},
        {"role": "assistant", "content": "250 USD is about 230 EUR at today's rate, give or take the bank's fee. " * 8},
    ]
    t = Transcript([message_from_dict(d, "t", i + 1, i) for i, d in enumerate(rows)], id="t")
    tried = 0
    for target in range(60, 400, 2):
        budget = api.Budget(context_window=target * 2, threshold=0.5, summary_min=target // 3)
        results = []
        for with_refs in (False, True):
            try:
                api.compact(t, counter, api.OfflineSummarizer(), api.CompactOptions(budget, min_saving=0.0, refs=with_refs))
                results.append(True)
            except CannotFit:
                results.append(False)
        tried += results[0]
        assert results[1] or not results[0], f"target {target}: fits without references, not with them"
    assert tried > 10


def test_a_summary_of_pruned_messages_only_cites_no_reference_it_cannot_resolve(tmp_path):
    """The span's reference names the untouched originals archived under it; when prune had touched every member
    (an edit call whose arguments were cut, its digested result: an OpenHands run of the corpus), the summary cited
    a reference that `recall` did not know."""
    code = "".join(f"def handler_{i}(board, move):\n    return merge_line(board, move) + {i}\n\n" for i in range(60))
    rows = [
        {"role": "user", "content": "Please create a simple 2048 game in game_2048.py. No need to run it."},
        {
            "role": "assistant",
            "content": "I'll write the game in one file.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {
                        "name": "str_replace_editor",
                        "arguments": orjson.dumps({"command": "create", "path": "/w/game_2048.py", "file_text": code}).decode(),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "File created successfully at: /w/game_2048.py\n" + code},
        {"role": "assistant", "content": "I've created a simple implementation of the 2048 game with the board, moves and merges. " * 4},
    ]
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    total = sum(COUNTER.messages(T(rows).messages))
    checked = 0
    for window in range(total // 4, total // 2, max(total // 40, 1)):
        out, a = compacted(tmp_path, "--summary-min", str(window // 6), src=src, window=str(window))
        text = out.read_text()
        if "CONTEXT COMPACTION" not in text:
            continue
        checked += 1
        with search.Index.open(str(a)) as ix:
            for ref in set(refs.REF_RE.findall(text)):
                assert ix.recall(ref), f"window {window}: [ref {ref}] does not resolve"
    assert checked > 3


def test_a_reference_line_given_up_for_the_ask_comes_back_when_the_summary_leaves_room():
    from compactctl.phases.summarize import _body

    line = refs.span_line("3f9a2c1b")
    text = "## Active Task\n> convert 250 USD to EUR"
    need = COUNTER.text(text + "\n\n" + line)
    assert _body(text, "", line, need, COUNTER).endswith(line)  # room for it: back
    assert _body(text, "", line, need - 1, COUNTER) == text  # no room: left out
    assert _body(text, line, "", 0, COUNTER).endswith(line)  # never given up: kept


def test_a_tool_output_is_found_by_the_file_or_command_of_its_call(tmp_path):
    """A search for a path found the calls that named it, never the archived output of reading that file (its text
    does not hold its own path): the archive records a result's call, and the search index holds it."""
    out, arch = tmp_path / "c.jsonl", tmp_path / "a.jsonl"
    r = cli("compact", str(SAMPLES / "long_session.jsonl"), "--context-window", "8000", "-q", "-o", str(out), "--archive", str(arch))
    assert r.returncode == 0, r.stderr
    reads = {
        x["ref"]
        for x in archive.records(str(arch))
        if x.get("call", {}).get("name") == "read_file" and "net/client.py" in x["call"]["arguments"]
    }
    assert reads
    with search.Index.open(str(arch)) as ix:
        found = {h.ref for h in ix.search("read_file net/client.py", 10)}
        assert reads & found
        assert all(h.text == h.message.get("content") for h in ix.recall(next(iter(reads))))  # recall: the output only


def test_several_archives_read_as_one(tmp_path):
    """The archives of separate compactions (other paths): one recall or search over all of them."""
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    out_a, a = compacted(tmp_path / "one")
    rows = tool_session(6, 3000)
    rows[3]["content"] = "Traceback: KeyError 'flux_capacitor' in engine/core.py line 88\n" + "noise\n" * 600
    out_b, b = compacted(tmp_path / "two", src=write_jsonl(tmp_path / "s.jsonl", rows), arch="b.sqlite", window="3000")
    ref_a = refs.REF_RE.findall(out_a.read_text())[0]
    ref_b = refs.ref_of(T(rows).messages[3])
    both = ["--archive", str(b), "--archive", str(a)]
    for ref, own in ((ref_a, a), (ref_b, b)):
        alone = cli("recall", ref, "--archive", str(own))
        r = cli("recall", ref, *both)
        assert r.returncode == 0 and r.stdout == alone.stdout and alone.returncode == 0, r.stderr
    r = cli("recall", "deadbeef", *both)
    assert r.returncode == Exit.NOT_FOUND and b"no archived original has reference deadbeef" in r.stderr
    hits = read_jsonl(cli("recall", "--search", "flux_capacitor", *both, "--json").stdout)
    assert hits[0]["ref"] == ref_b
    with search.Archives.open([str(a), str(b)]) as ix:  # best first across both, the limit over all
        found = ix.search("retry_buffer flux_capacitor", limit=3)
        assert len(found) == 3 and [h.score for h in found] == sorted((h.score for h in found), reverse=True)
        assert ix.recall(f"[ref {ref_b}]")[0].text == rows[3]["content"]


def test_several_archives_give_a_carried_span_and_a_search_hit_once(tmp_path):
    """After a compaction over the same archive path, a later archive holds copies of the earlier one's records
    (carry.Carry): read together, a span's members and a search's hits come once."""
    out1, a = compacted(tmp_path, window="8000")
    first = tmp_path / "first.jsonl"
    first.write_bytes(a.read_bytes())
    out2 = tmp_path / "c2.jsonl"
    r = cli("compact", str(out1), "--context-window", "3000", "-q", "-o", str(out2), "--archive", str(a))
    assert r.returncode == 0, r.stderr
    with search.Index.open(str(first)) as ix:
        span = next(r for r in refs.REF_RE.findall(out1.read_text()) if any(h.span for h in ix.recall(r)))
        members = [h.text for h in ix.recall(span)]
    with search.Archives.open([str(first), str(a), f"./{os.path.relpath(first)}"]) as both:
        assert [h.text for h in both.recall(span)] == members
        found = both.search("retry backoff", limit=10)
        assert len({(h.ref, h.text) for h in found}) == len(found) == 10


def test_a_word_in_every_original_scores_above_zero_in_json(tmp_path):
    """An archive of one original (or a word every original holds): bm25's idf is at SQLite's floor, so a hit scores
    ~1e-6, and `--json` printed it rounded to 4 decimals: `"score": 0.0`, as if nothing matched. Now 5 significant
    digits, and the hits of a word held more often still score higher."""
    rows = tool_session(3, 3000)
    rows[3]["content"] = "flux_capacitor " * 3 + "noise\n" * 600
    rows[5]["content"] = "flux_capacitor " + "noise\n" * 600
    _, a = compacted(tmp_path, src=write_jsonl(tmp_path / "s.jsonl", rows), window="2000")
    hits = read_jsonl(cli("recall", "--search", "flux_capacitor", "--archive", str(a), "--json").stdout)
    scores = [h["score"] for h in hits]
    assert len(hits) >= 2 and all(0 < s < 1e-3 for s in scores), hits
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]


def test_an_unknown_transcript_is_a_usage_error_naming_it_and_the_archive(tmp_path):
    """`recall --search W --transcript NAME` with a NAME no transcript of the archive has printed nothing and
    exited 0 (and `recall REF --transcript NAME` said only that no original has the reference): a usage error
    naming the name and the archive as given, nothing printed. The archive's own names still narrow."""
    _, a = compacted(tmp_path)
    ref = next(x["ref"] for x in archive.records(str(a)) if x.get("ref"))
    for args in (("--search", "retry"), (ref,)):
        r = cli("recall", *args, "--transcript", "nope.jsonl", "--archive", str(a))
        assert r.returncode == Exit.USAGE and r.stdout == b"", r.stderr
        assert b"--transcript 'nope.jsonl'" in r.stderr and str(a).encode() in r.stderr, r.stderr
    [name] = {x["transcript"] for x in archive.records(str(a)) if x.get("transcript")}
    for args in (("--search", "retry"), (ref,)):
        r = cli("recall", *args, "--transcript", name, "--archive", str(a))
        assert r.returncode == 0 and r.stdout, r.stderr


@pytest.mark.parametrize("command", ["compact", "prune", "summarize"])
def test_references_are_written_by_default_only_with_an_archive_to_hold_their_originals(tmp_path, command):
    """Without --archive, `compact` wrote 19 `[ref ...]` marks into long_session at an 8,000-token window (`prune`
    77, `summarize` 1) that pointed at nothing: no archive held their originals. By default they come with
    --archive only; --refs still writes them without one (the same marks: a reference is content-addressed, so a
    later run with --archive over the same input holds their originals), and --no-refs never."""
    args = (command, str(LONG), "--context-window", "8000", "-q")
    bare = cli(*args)
    assert bare.returncode == 0 and b"[ref " not in bare.stdout, bare.stderr
    a = tmp_path / "a.jsonl"
    kept = cli(*args, "--archive", str(a))
    marks = refs.REF_RE.findall(kept.stdout.decode())
    assert kept.returncode == 0 and marks
    held = {r["ref"] for r in archive.records(str(a)) if r.get("ref")} | {r["span"] for r in archive.records(str(a)) if r.get("span")}
    assert set(marks) <= held
    asked = cli(*args, "--refs")
    assert asked.returncode == 0 and refs.REF_RE.findall(asked.stdout.decode()) == marks
    assert b"[ref " not in cli(*args, "--no-refs", "--archive", str(tmp_path / "b.jsonl")).stdout
    if command == "compact":  # the record API (and compactctl.ray, the CLI's --workers): by `archive`, the same
        rec = {"messages": read_jsonl(LONG.read_bytes())}
        for archived, want in ((False, False), (True, True)):
            res = compactctl.Compactor(context_window=8000, archive=archived).compact(rec)
            assert ("[ref " in orjson.dumps(res.record).decode()) is want and bool(res.archived) is archived


def test_a_recall_hint_without_an_archive_is_said(tmp_path):
    """--recall-hint names tools that fetch archived originals: without --archive this run archives none (said, not
    refused, since an earlier stage of a pipe may have archived them; -q silences it)."""
    said = "--recall-hint without --archive"
    for cmd in ("compact", "summarize"):
        r = cli(cmd, str(LONG), "--context-window", "8000", "--recall-hint", "-o", str(tmp_path / f"{cmd}.jsonl"))
        assert r.returncode == 0 and said in r.stderr.decode(), (cmd, r.stderr)
        # it names what the summary names: without references (the default with no archive) `search` alone
        out = (tmp_path / f"{cmd}.jsonl").read_text()
        assert refs.RECALL_HINT_SEARCH in out and refs.RECALL_HINT not in out
        assert "names `search` for originals" in r.stderr.decode(), r.stderr
        with_refs = cli(cmd, str(LONG), "--context-window", "8000", "--recall-hint", "--refs", "-o", str(tmp_path / f"r{cmd}.jsonl"))
        assert refs.RECALL_HINT in (tmp_path / f"r{cmd}.jsonl").read_text()
        assert "names `search` and `recall` for originals" in with_refs.stderr.decode(), with_refs.stderr
        quiet = cli(cmd, str(LONG), "--context-window", "8000", "--recall-hint", "-q", "-o", str(tmp_path / f"q{cmd}.jsonl"))
        assert quiet.returncode == 0 and said not in quiet.stderr.decode()
        kept = cli(
            cmd,
            str(LONG),
            "--context-window",
            "8000",
            "--recall-hint",
            "--archive",
            str(tmp_path / f"{cmd}-a.jsonl"),
            "-o",
            str(tmp_path / f"a{cmd}.jsonl"),
        )
        assert kept.returncode == 0 and said not in kept.stderr.decode()


def test_a_span_summarized_alike_in_identical_records_is_recalled_once(tmp_path):
    """From a review: three identical dataset records share one span reference; recall (and the MCP tool, which calls
    the same Index.recall) listed every member once per record, 3 x 51, where README says such content is given once."""
    line = (SAMPLES / "dataset.jsonl").read_bytes().splitlines()[0]
    three = tmp_path / "three.jsonl"
    three.write_bytes(b"\n".join([line] * 3) + b"\n")
    c, a = tmp_path / "c.jsonl", tmp_path / "a.jsonl"
    assert cli("compact", str(three), "-o", str(c), "--archive", str(a), "--context-window", "3000", "-q").returncode == 0
    m = re.search(r"Originals of the summarized turns: \[ref ([0-9a-f]{8})\]", c.read_text())
    assert m is not None
    with search.Index.open(str(a)) as ix:
        hits = ix.recall(m.group(1))
        one = ix.recall(m.group(1), transcript=hits[0].transcript)
    assert len(hits) == len(one) > 10 and {h.transcript for h in hits} == {hits[0].transcript}
    assert [h.index for h in hits] == sorted(h.index for h in hits)
