"""prune, repair, plan, summarize/assemble on hand-made transcripts."""

from __future__ import annotations

import dataclasses

import orjson
import pytest

from compactctl import api, refs
from compactctl.describe import describe
from compactctl.errors import CannotFit
from compactctl.formats.openai import message_from_dict
from compactctl.model import SUMMARY_END, SUMMARY_MARKER, Message, ToolCall, Transcript, is_summary, last_user_index
from compactctl.phases.assemble import SYSTEM_NOTE
from compactctl.phases.plan import plan_for_repair
from compactctl.phases.prune import DUPLICATE, PruneOptions, truncate_arguments
from compactctl.phases.repair import STUB, repair
from compactctl.phases.rules import check
from compactctl.summarizers.offline import KEPT_LAST_ASK
from compactctl.summarizers.prompt import SECTIONS, parse_sections
from compactctl.tokens import make_counter

from .conftest import SAMPLES, cli, tool_session, write_jsonl
from .rows import T
from .validator import validate, validate_anthropic

COUNTER = make_counter("gpt-4o")


def small():
    return api.Budget(context_window=3000, tail_tokens=300, summary_min=300, summary_max=800)


def call(cid, name, args, content=None):
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [{"id": cid, "type": "function", "function": {"name": name, "arguments": orjson.dumps(args).decode()}}],
    }


def res(cid, text):
    return {"role": "tool", "tool_call_id": cid, "content": text}


# ---- tools: one-liners never make a failure read like a success


@pytest.mark.parametrize(
    "name,args,output,expect",
    [
        ("terminal", {"command": "npm test"}, "ok\n" * 46 + "exit code: 1", "ran `npm test` -> exit 1"),
        ("Bash", {"command": "ls"}, "a\nb", "ran `ls` -> ok"),
        # No exit code recorded (Claude Code's Bash): an output that is only a program's error lines failed
        ("Bash", {"command": "find /p/css"}, "find: ‘/p/css’: No such file or directory", "-> error: find: ‘/p/css’: No such file"),
        ("Bash", {"command": "ls x"}, "ls: cannot access 'x': No such file or directory", "-> error: ls: cannot access 'x'"),
        ("Bash", {"command": "find /p"}, "/p/a.css\nfind: ‘/p/q’: Permission denied", "ran `find /p` -> ok"),  # found some
        ("shell", {"command": ["bash", "-lc", "make"]}, '{"output":"boom","metadata":{"exit_code":2}}', "ran `make` -> exit 2"),
        ("read_file", {"path": "config.py", "offset": 1}, "x" * 1200, "read config.py from line 1 (1,200 chars)"),
        ("Read", {"file_path": "/a/b.py"}, "<tool_use_error>File does not exist.</tool_use_error>", "-> error: File does not exist."),
        ("Grep", {"pattern": "TODO", "path": "src"}, "a:1\nb:2", "searched `TODO` in src -> 2 matching lines"),
        # A listing has no pattern: it is said a listing, not a search for `?` (Gemini CLI's list_directory, Claude Code's LS)
        (
            "list_directory",
            {"path": "/p/src"},
            "Directory listing for /p/src:\nmain.py\nutil.py",
            "[list_directory] listed /p/src -> 3 lines",
        ),
        ("LS", {"path": "/p"}, "- /p/\n  - a.py", "[LS] listed /p -> 2 lines"),
        # OpenHands' read and write events carry no editor `command`: a read is no edit, a create a write
        ("str_replace_editor", {"path": "/w/p.c", "start": 0, "end": -1, "view_range": None}, "     1\tint x;", "read /w/p.c"),
        (
            "str_replace_editor",
            {"path": "/w/a.js", "content": "", "translated_ipython_code": "print(file_editor(**{'command': 'create', 'path': '/w/a.js'}))"},
            "File created successfully at: /w/a.js",
            "wrote /w/a.js",
        ),
        (
            "create",
            {"filename": "reproduce.py"},
            "[File: /repo/reproduce.py (1 lines total)]\n1:",
            "[create] wrote reproduce.py",
        ),  # SWE-agent's
        # An error word alone on its line: its message is the next line
        (
            "str_replace_editor",
            {"command": "str_replace", "path": "/w/a.c", "old_str": "x", "new_str": "y"},
            "ERROR:\nNo replacement was performed, old_str `x` did not appear verbatim in /w/a.c.",
            "-> error: ERROR: No replacement was performed, old_str `x`",
        ),
        # A code cell says its first line and the files it names (CodeAct's file helpers, Python's open)
        (
            "execute_ipython_cell",
            {"code": "# look first\nopen_file('/w/src/App.css')"},
            "[File: /w/src/App.css (3 lines total)]",
            "[execute_ipython_cell] ran `open_file('/w/src/App.css')` -> ok",
        ),
        (
            "execute_ipython_cell",
            {"code": "import json\nwith open('out/data.json', 'w') as f:\n    json.dump(rows, f)"},
            "",
            "ran `import json` (+2 lines) on out/data.json -> ok",
        ),
        ("WebFetch", {"url": "https://x.dev/a"}, "page", "fetched https://x.dev/a"),
        ("mystery", {"q": 1}, "Error: kaput", "-> error: Error: kaput"),
    ],
)
def test_describe(name, args, output, expect):
    c = ToolCall("c1", name, orjson.dumps(args).decode())
    line = describe(c, Message(role="tool", content=output, tool_call_id="c1"))
    assert expect in line, line


@pytest.mark.parametrize(
    "code,expect",
    [
        ("edit_file_by_replace(\n'/w/src/App.tsx',\nto_replace='a', new_content='b')", [("edit", "/w/src/App.tsx")]),
        ("open_file('/w/a.py')\nopen_file('/w/a.py', 40)\ncreate_file('/w/b.py')", [("read", "/w/a.py"), ("write", "/w/b.py")]),
        ("append_file(file_name='notes.md', content='x')", [("edit", "notes.md")]),
        ("print(open('setup.cfg').read())\nopen('log.txt', mode='a').write('x')", [("read", "setup.cfg"), ("edit", "log.txt")]),
        ("open(path)\nprint('hello')\nreopen('x.py')", []),  # a variable, a string that is no path, another function
    ],
)
def test_a_code_cells_files(code, expect):
    from compactctl.tools import files_of

    assert files_of(ToolCall("c1", "execute_ipython_cell", orjson.dumps({"code": code}).decode())) == expect


def test_a_long_failed_output_says_the_line_that_says_it_failed():
    """A pre-commit hook's refusal (52 lines, its first line's newlines echoed as "\\n") said only "-> error": none
    of its lines starts with an error word. The first line that says the failure anywhere is its error."""
    c = ToolCall("c1", "Bash", '{"command": "git commit -m wip"}')
    out = "Pre-commit validation failed:\\n\\n[FORMAT] Code is not formatted.\\nRun 'mix format' to fix.\n" + "  checking\n" * 40
    line = describe(c, Message(role="tool", content=out, tool_call_id="c1", is_error=True))
    assert "-> error: Pre-commit validation failed: [FORMAT] Code is not formatted. Run 'mix format' to fix." in line, line
    ok = describe(c, Message(role="tool", content="[main 1a2b3c4] wip\n" + " 1 file changed\n" * 40, tool_call_id="c1"))
    assert "-> ok" in ok


def test_is_error_flag_reads_as_failure():
    c = ToolCall("c1", "Edit", '{"file_path":"a.py"}')
    line = describe(c, Message(role="tool", content="String not found", is_error=True))
    assert "error" in line


# ---- prune


def test_prune_dedups_summarizes_and_truncates():
    big = "E   AssertionError: boom\n" + "log line\n" * 500
    rows = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "do it"},
        call("a", "terminal", {"command": "pytest"}),
        res("a", big + "exit code: 1"),
        call("b", "terminal", {"command": "pytest"}),
        res("b", big + "exit code: 1"),
        call("c", "write_file", {"path": "x.py", "content": "z" * 2000}),
        res("c", "ok"),
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "next"},
    ]
    t = T(rows)
    out, st = api.prune(t, COUNTER, PruneOptions(protect_tokens=10))
    assert len(out.messages) == len(rows)
    assert out.messages[3].text().startswith(DUPLICATE) and "exit 1" in out.messages[3].text()
    assert out.messages[5].text().startswith("[terminal] ran `pytest` -> exit 1")
    assert "E   AssertionError: boom" in out.messages[5].text()  # the error line survives verbatim
    args = orjson.loads(out.messages[6].tool_calls[0].arguments)
    ref = f" [ref {refs.ref_of(t.messages[6])}]"  # the original's reference stands where the cut is
    assert args["content"].endswith("...[truncated]" + ref) and len(args["content"]) == 200 + len("...[truncated]" + ref)
    assert out.messages[3].text().endswith(f"[ref {refs.ref_of(t.messages[3])}]")
    assert out.messages[-1] is t.messages[-1]
    assert st.dedup.count == 1 and st.summaries.count == 1 and st.args.count == 1 and st.summaries.tokens > 0
    assert api.check(out) == []
    assert t.messages[3].text().startswith("E   AssertionError")  # the input is not mutated
    assert {a.index for a in st.archived} == {3, 5, 6}


def test_prune_protects_recent_tokens_and_reaches_the_head():
    rows = tool_session(6, 3000)
    out, _ = api.prune(T(rows), COUNTER, PruneOptions(protect_tokens=800))
    texts = [m.text() for m in out.messages]
    assert "[read_file] read src/mod0.py (3,000 chars)" in texts[3]  # the first output, inside the head, is pruned
    assert texts[-3] == rows[-3]["content"]  # the last output is in the protected part


def test_truncate_arguments_keeps_json_valid():
    s = orjson.dumps({"a": "é" * 1000, "b": [{"c": "x" * 900}], "n": 3}).decode()
    v = orjson.loads(truncate_arguments(s, 200))
    assert len(v["a"]) == 214 and v["b"][0]["c"].endswith("[truncated]") and v["n"] == 3
    # cut at 20, through the word "not": at its start, not after "no"
    assert truncate_arguments("not json " * 100, 20) == ("not json " * 100)[:18] + "...[truncated]"


def test_prune_replaces_old_images():
    rows = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 5000}},
            ],
        },
        {"role": "assistant", "content": "I see."},
        {"role": "user", "content": "more"},
    ]
    out, st = api.prune(T(rows), COUNTER, PruneOptions(protect_tokens=5))
    assert out.messages[0].content[1]["type"] == "text" and st.images.count == 1


# ---- repair


def test_repair_orphans_stubs_reused_ids_placement():
    rows = [
        {"role": "user", "content": "go"},
        res("ghost", "orphan"),
        call("x", "terminal", {"command": "a"}),
        {"role": "user", "content": "interjection"},
        res("x", "first"),
        call("x", "terminal", {"command": "b"}),
        res("x", "second"),
        call("y", "terminal", {"command": "c"}),
        {"role": "user", "content": "end"},
    ]
    t = T(rows)
    found = {v.rule for v in api.check(t)}
    assert found == {"orphan-result", "missing-result", "placement"}  # "x" reused across turns: valid for OpenAI
    out, st = api.repair(t)
    assert api.check(out) == []
    roles = [(m.role, m.text()) for m in out.messages]
    assert roles[1:4] == [("assistant", ""), ("tool", "first"), ("user", "interjection")]
    assert roles[4:6] == [("assistant", ""), ("tool", "second")]
    assert roles[7] == ("tool", STUB)
    # There is no summary here (an agent stopped mid-call): the stub says what happened, and points at nothing.
    assert STUB == "[No result was recorded for this call]" and not any(is_summary(m) for m in out.messages)
    assert st.orphan_results_removed == 1 and st.stubs_added == 1 and st.results_moved == 1
    again, st2 = api.repair(out)
    assert again is out and not st2.changed


def test_repair_strip_duplicate_ids_empty_and_first_role():
    rows = [
        {"role": "system", "content": "s"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": ""},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "d", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "d", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            ],
        },
        res("d", "one"),
        res("d", "two"),
        call("z", "f", {}),
    ]
    t = T(rows)
    rules = {v.rule for v in api.check(t)}
    assert {"duplicate-id", "empty-message", "first-role", "missing-result"} <= rules
    out, st = api.repair(t, api.RepairOptions(strip_unanswered=True))
    assert api.check(out) == []
    assert out.messages[1].role == "user" and st.openings_added == 1 and st.ids_renamed == 1 and st.calls_stripped == 1
    # the empty user message, and the call's message left with neither call nor text: both gone
    assert st.empty_removed == 2 and len(out.messages) == 6 and out.messages[-1].role == "tool"
    ids = [c.id for c in out.messages[3].tool_calls]
    assert len(set(ids)) == 2 and [m.tool_call_id for m in out.messages[4:6]] == ids


def test_repair_text_parts_without_text_are_an_empty_message():
    """`[{"type": "text", "text": ""}]` is as empty as "" for both APIs (it passed --check and went out)."""
    rows = [
        {"role": "user", "content": [{"type": "text", "text": ""}]},
        {"role": "assistant", "content": [{"type": "text", "text": " \n"}, {"type": "text", "text": ""}]},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [{"type": "text", "text": ""}, {"type": "text", "text": "a"}]},
        {"role": "user", "content": [{"type": "text", "value": "LlamaFactory keeps its text under value"}]},
    ]
    t = T(rows)
    assert [v.rule for v in api.check(t)] == ["empty-message", "empty-message", "blank-part", "value-text"]
    out, st = api.repair(t)
    assert api.check(out) == [] and st.empty_removed == 2 and [m.text().strip() for m in out.messages][:2] == ["q", "a"]
    assert (
        out.messages[1].content == [{"type": "text", "text": "a"}] and st.blank_parts_removed == 1
    )  # Anthropic: a text block must not be empty
    # not blank: kept, its text moved where both APIs look for it
    assert out.messages[-1].content == [{"type": "text", "text": "LlamaFactory keeps its text under value"}]


def test_repair_drops_blank_parts_beside_calls_images_and_in_results():
    img = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    rows = [
        {"role": "user", "content": [{"type": "text", "text": " "}, img]},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": ""}],
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": ""}]},
        {"role": "assistant", "content": "done"},
    ]
    t = T(rows)
    assert [v.rule for v in api.check(t)] == ["blank-part", "blank-part", "blank-part"]
    out, st = api.repair(t)
    assert api.check(out) == [] and st.blank_parts_removed == 3
    assert [m.content for m in out.messages[:3]] == [[img], None, ""]
    assert out.messages[1].tool_calls[0].id == "c1" and out.messages[2].tool_call_id == "c1"  # the pairing is untouched
    assert [(a.index, a.message.content) for a in st.archived] == [(k, rows[k]["content"]) for k in range(3)]  # what --archive keeps


def test_repair_blank_text_beside_calls_reasoning_alone_and_responses_api_parts(tmp_path):
    """Found by an adversarial review: blank white space beside calls became an empty Anthropic text block; a message
    whose only content was replayed reasoning (with blank or no text) was kept, and neither API takes it; a Codex
    `output_text`/`input_text` part without text was not seen as blank."""
    from tests.validator import validate

    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    rows = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": " ", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
        {"role": "assistant", "content": "  ", "reasoning_content": "thinking"},
        {"role": "user", "content": "go on"},
        {"role": "assistant", "reasoning_content": "thinking"},
        {"role": "user", "content": [{"type": "input_text", "text": "and?"}]},
        {"role": "assistant", "content": [{"type": "output_text", "text": ""}, {"type": "output_text", "text": "ok"}]},
    ]
    t = T(rows)
    # the Responses API's part types are Codex's own: in OpenAI chat, "text" (Chat Completions refuses the others)
    assert [v.rule for v in api.check(t)] == ["blank-part", "empty-message", "empty-message", "value-text", "blank-part", "value-text"]
    out, st = api.repair(t)
    assert api.check(out) == [] and st.empty_removed == 2 and st.blank_parts_removed == 2 and st.text_parts_moved == 2
    assert out.messages[1].content is None and out.messages[-1].content == [{"type": "text", "text": "ok"}]
    assert {a.message.reasoning for a in st.archived if a.message.reasoning} == {"thinking"}  # archived, not lost
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    for to in ("openai", "anthropic"):
        p = cli("repair", str(src), "--to", to, "-q")
        assert p.returncode == 0, p.stderr
        written = [orjson.loads(x) for x in p.stdout.splitlines()]
        assert not any(
            b.get("type") == "text" and not b["text"].strip() for m in written if isinstance(m["content"], list) for b in m["content"]
        )
        if to == "openai":
            assert validate(written) == []


def test_a_transcript_with_nothing_to_send_is_a_data_error_never_an_empty_output(tmp_path):
    """Every message empty (or none): repair wrote `{"messages": []}` and --check said ok; both APIs reject it."""
    from compactctl.errors import DataError

    assert [v.rule for v in api.check(T([{"role": "system", "content": "s"}]))] == ["no-messages"]
    with pytest.raises(DataError, match="^t:1: no user or assistant message with content: nothing a model could be sent"):
        api.repair(T([{"role": "user", "content": ""}, {"role": "assistant", "content": " "}]))  # no line read: the first
    src = tmp_path / "d.jsonl"
    recs = [
        {"messages": [{"role": "user", "content": "hi"}]},
        {"messages": [{"role": "user", "content": ""}]},
        {"messages": []},
        {"messages": [{"role": "user", "content": "b"}]},
    ]
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    r = cli("repair", str(src))
    assert r.returncode == 3 and f"{src}:2: no user or assistant message" in r.stderr.decode()
    rejects = tmp_path / "rejects.jsonl"
    for cmd in (["repair"], ["compact", "--workers", "2"]):
        r = cli(*cmd, str(src), "--on-error", "skip", "--rejects", str(rejects))
        assert r.returncode == 0 and [orjson.loads(x) for x in r.stdout.splitlines()] == [recs[0], recs[3]], cmd
        assert [orjson.loads(x) for x in rejects.read_bytes().splitlines()] == [recs[1], recs[2]]  # nothing lost


# ---- plan


def _long(n=20, out_chars=4000):
    return T(tool_session(n, out_chars))


def test_plan_partitions_and_keeps_pairs():
    t = _long()
    p = api.plan(t, COUNTER, api.Budget(context_window=12000, tail_tokens=1500))
    assert p.needs_compaction and 0 < p.head_end <= p.tail_start < p.messages
    assert t.messages[p.tail_start].role != "tool" and t.messages[p.head_end].role != "tool"
    assert last_user_index(t.messages) >= p.tail_start
    assert p.tokens["head"] + p.tokens["middle"] + p.tokens["tail"] == p.total
    assert 2000 <= p.summary_budget <= 8000


def test_plan_never_cuts_between_interleaved_calls_and_their_results():
    """Two calls, each in its own assistant message, then both results (a writer that splits parallel calls): one
    group, the calls' messages and both results; no budget puts the cut inside it (a result in the tail whose call
    went to the summary would be an orphan, removed)."""
    rows = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "go " * 400},
        {"role": "assistant", "content": "looking " * 300},
        call("a", "ls", {"path": "x"}),
        call("b", "pwd", {}),
        res("a", "x.py\n" * 300),
        res("b", "/w " * 300),
        {"role": "assistant", "content": "found " * 50},
        {"role": "user", "content": "next?"},
    ]
    t = T(rows)
    for tail in range(0, 1600, 100):
        p = api.plan(t, COUNTER, api.Budget(context_window=3000, tail_tokens=tail, summary_min=100, protect_first=1, min_tail_messages=0))
        assert p.needs_compaction and p.tail_start not in range(4, 7), tail


def test_plan_defaults_clamp_the_summary_and_stretch_a_short_tail():
    """Budget()'s defaults are the documented ones, the command line's: the summary gets at most 16,000 tokens and at
    least 2,000; a tail of fewer than 3 messages (min_tail_messages, which the command line leaves to the library)
    takes up to 1.5x its budget (20% of the target) to hold 3."""
    big = T(
        [{"role": "system", "content": "s"}]
        + [{"role": ("user", "assistant")[k % 2], "content": f"m{k} " + "text " * 2000} for k in range(30)]
    )
    assert api.plan(big, COUNTER, api.Budget(context_window=60000)).summary_budget == 16000  # a 48,000-token middle
    assert api.plan(big, COUNTER, api.Budget(context_window=60000, summary_ratio=0.02)).summary_budget == 2000  # not 963
    rows = [{"role": "system", "content": "s"}, {"role": "user", "content": "start"}]
    for k in range(6):
        rows += [{"role": "user", "content": f"q{k} " + "why " * 800}, {"role": "assistant", "content": f"a{k} " + "so " * 800}]
    rows += [{"role": "user", "content": "q " + "why " * 300}, {"role": "assistant", "content": "big " * 1000}]
    rows += [{"role": "user", "content": "next " * 600}, {"role": "assistant", "content": "ok " * 800}]
    p = api.plan(T(rows), COUNTER, api.Budget(context_window=20000))
    assert p.tail_budget == 2000 and p.tail_start == len(rows) - 3 and 2000 < p.tokens["tail"] <= 3000


def test_zones_annotated_out_of_order_are_ignored_and_planned_afresh():
    """`plan --annotate` writes each message's zone for `summarize`; zones out of order (a tail message before a middle
    one: edited, or joined from two plans) are no plan, and summarize plans afresh."""
    t = _long()
    budget = api.Budget(context_window=12000, tail_tokens=1500)
    p = api.plan(t, COUNTER, budget)
    noted = api.annotate(t, p)
    k = p.head_end  # the first middle message, marked tail
    bad = noted.evolve(
        messages=[dataclasses.replace(m, note={**m.note, "zone": "tail"}) if i == k else m for i, m in enumerate(noted.messages)]
    )
    fresh, _ = api.summarize(t, COUNTER, api.OfflineSummarizer(), api.SummarizeOptions(budget))
    out, _ = api.summarize(bad, COUNTER, api.OfflineSummarizer(), api.SummarizeOptions(budget))
    assert [m.text() for m in out.messages] == [m.text() for m in fresh.messages]


def test_a_plan_with_nothing_between_head_and_tail_says_so():
    t = T([{"role": "system", "content": "s"}, {"role": "user", "content": "go " * 500}, {"role": "assistant", "content": "ok " * 500}])
    with pytest.raises(CannotFit, match="nothing between head .* and tail .* to summarize"):
        api.plan(t, COUNTER, api.Budget(context_window=1000, last_ask="tail"))


def test_at_a_tiny_target_the_smallest_summary_is_100_tokens():
    """Giving ground, the minimum summary shrinks to a quarter of the target, never under 100 tokens."""
    rows = [{"role": "system", "content": "s"}, {"role": "user", "content": "go " * 50}]
    t = T(rows + [{"role": ("assistant", "user")[k % 2], "content": f"m{k} " + "x " * 60} for k in range(8)])
    with pytest.raises(CannotFit, match=r"head 5 \+ tail 0 \+ minimum summary 100 = 105 tokens, 5 over"):
        api.plan(t, COUNTER, api.Budget(context_window=200, summary_min=400))


def test_plan_not_needed_under_threshold():
    p = api.plan(_long(2, 100), COUNTER, api.Budget())
    assert not p.needs_compaction and "no compaction needed" in p.reason


def test_plan_anchor_forces_tail_and_cannot_fit():
    rows = tool_session(2, 100)
    rows.insert(-1, {"role": "assistant", "content": "z " * 6000})
    rows.append(call("late", "terminal", {"command": "x"}))
    rows.append(res("late", "y " * 6000))
    t = T(rows)
    p = api.plan(t, COUNTER, api.Budget(context_window=100000, threshold=0.1, tail_tokens=500, summary_min=100, last_ask="tail"))
    assert p.anchor_forced and p.tail_start <= last_user_index(t.messages)
    with pytest.raises(CannotFit, match="cannot fit"):
        api.plan(t, COUNTER, api.Budget(context_window=10000, tail_tokens=500, last_ask="tail"))
    # By default the plan gives ground instead: the ask goes verbatim into the summary.
    p = api.plan(t, COUNTER, api.Budget(context_window=10000, tail_tokens=500))
    assert p.needs_compaction and p.last_ask_in_summary and not p.anchor_forced


def test_plan_after_earlier_compaction_heads_with_the_summary():
    t = _long(30)
    out, _ = api.compact(t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(small()))
    k = next(i for i, m in enumerate(out.messages) if m.text().startswith(SUMMARY_MARKER))
    p = api.plan(out, COUNTER, small())
    assert p.prior_summary == k and p.head_end == k + 1
    only = out.evolve(messages=[out.messages[0]] + out.messages[k:])
    p2 = api.plan(only, COUNTER, small())
    assert p2.prior_summary == 1 and p2.head_end == 2


# ---- summarize and assembly


def test_offline_summary_sections_budget_and_anchor():
    t = _long(30)
    budget = small()
    out, rep = api.compact(t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(budget))
    assert rep["status"] == "compacted" and rep["tokens_after"] <= budget.target
    summary = next(m for m in out.messages if SUMMARY_MARKER in m.text())
    text = summary.text()
    assert text.rstrip().endswith(SUMMARY_END)
    secs = parse_sections(text)
    # A summary this small (headings of 13 sections would take over 10% of it) shows only the sections
    # with content, in the 13-section order.
    assert rep["summary_budget"] < 900 and len(secs) < len(SECTIONS)
    assert list(secs) == [s for s in SECTIONS if s in secs] and all(body.strip() != "None" for body in secs.values())
    # The ask is in the tail: the summary points to it instead of repeating it.
    assert secs["Active Task"] == KEPT_LAST_ASK
    assert "You must not touch tests/." in secs["Constraints & Preferences"]
    assert COUNTER.text(text) <= rep["summary_budget"] + 80
    assert api.check(out) == []
    assert out.messages[-1].text() == "Thanks. Now update the changelog."
    again, _ = api.compact(t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(budget))
    assert api.write(again) == api.write(out)


def test_offline_summary_has_all_13_sections_when_room_allows():
    t = _long(30)
    budget = api.Budget(context_window=8000, tail_tokens=500, summary_min=1000, summary_max=2000)
    no_digests = api.PruneOptions(protect_tokens=500, target=budget.target, summaries=False)
    out, rep = api.compact(t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(budget, prune=no_digests))
    assert rep["status"] == "compacted" and rep["summary_budget"] >= 1000
    secs = parse_sections(next(m for m in out.messages if SUMMARY_MARKER in m.text()).text())
    assert list(secs) == list(SECTIONS) and "None" in secs.values()  # empty ones too


def test_second_compaction_updates_the_summary_and_continues_numbering():
    budget = small()
    first, _ = api.compact(_long(30), COUNTER, api.OfflineSummarizer(), api.CompactOptions(budget))
    more = tool_session(30, 4000)[2:]
    for m in more:
        if m.get("tool_calls"):
            m["tool_calls"][0]["id"] += "_b"
        if m.get("tool_call_id"):
            m["tool_call_id"] += "_b"
    grown = first.evolve(messages=first.messages + [message_from_dict(d, "t", 0, None) for d in more])
    second, rep = api.compact(grown, COUNTER, api.OfflineSummarizer(), api.CompactOptions(budget))
    summaries = [m for m in second.messages if SUMMARY_MARKER in m.text()]
    assert len(summaries) == 1 and rep["status"] == "compacted"
    assert [m.text().count(SYSTEM_NOTE) for m in (first.messages[0], second.messages[0])] == [1, 1]  # the note once
    nums = [int(line.split(".")[0]) for line in parse_sections(summaries[0].text())["Completed Actions"].split("\n") if line[:1].isdigit()]
    assert max(nums) > 30


def test_focus_promotes_topic():
    t = _long(30)
    budget = small()
    out, _ = api.compact(t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(budget, focus="mod8"))
    text = next(m for m in out.messages if SUMMARY_MARKER in m.text()).text()
    assert "src/mod8.py" in text


HEADS = {  # the head after the system message, by the role of its last message
    None: [],
    "user": [{"role": "user", "content": "u0"}],
    "assistant": [{"role": "user", "content": "u0"}, {"role": "assistant", "content": "a0"}],
    "tool": [{"role": "user", "content": "u0"}, call("h", "ls", {}), res("h", "a.py")],
}


@pytest.mark.parametrize(
    "prev,nxt,last_ask,expect",
    [
        (None, "user", False, [("user", "summary"), ("user", "first tail")]),  # never an assistant turn first
        (None, "assistant", False, [("user", "summary"), ("assistant", "first tail")]),
        ("user", "user", False, [("assistant", "summary"), ("user", "first tail")]),
        ("user", "assistant", False, [("assistant", "merged"), ("user", "last")]),
        ("assistant", "user", False, [("user", "merged"), ("assistant", "reply")]),
        ("assistant", "user", True, [("user", "summary"), ("user", "first tail")]),  # the last ask stays as it is
        ("assistant", "assistant", False, [("user", "summary"), ("assistant", "first tail")]),
        ("tool", "user", False, [("user", "merged"), ("assistant", "reply")]),  # not an assistant turn after a result
        ("tool", "user", True, [("user", "summary"), ("user", "first tail")]),
        ("tool", "assistant", False, [("user", "summary"), ("assistant", "first tail")]),
    ],
)
def test_the_summary_takes_the_role_the_messages_around_it_leave(prev, nxt, last_ask, expect):
    """Where the summary goes and as whose turn, by the head's last message and the tail's first (assemble's table); a
    merged message keeps its own text below the delimiter, and its original goes to the archive."""
    from compactctl.model import SUMMARY_MERGED
    from compactctl.phases.assemble import assemble

    rows = [{"role": "system", "content": "s"}, *HEADS[prev], {"role": "assistant", "content": "middle"}, {"role": "user", "content": "mu"}]
    head_end, tail_start = 1 + len(HEADS[prev]), 3 + len(HEADS[prev])
    rows.append({"role": nxt, "content": "first tail"})
    rows += [{"role": "assistant", "content": "reply"}] if last_ask or nxt == "user" else [{"role": "user", "content": "last"}]
    rows += [{"role": "user", "content": "last"}] if nxt == "user" and not last_ask else []
    t = T(rows)
    out, replaced = assemble(t, head_end, tail_start, "body")
    got = []
    for m in out.messages[head_end : head_end + 2]:
        text = m.text()
        kind = (
            "merged"
            if SUMMARY_MARKER in text and text.endswith(SUMMARY_MERGED + "\n\nfirst tail")
            else "summary"
            if SUMMARY_MARKER in text
            else text
        )
        got.append((m.role, kind))
    assert got == expect
    if expect[0][1] == "merged":
        assert [m.text() for m in replaced if m.text() == "first tail"] == ["first tail"]  # the original, archived


def test_the_compaction_note_is_a_text_part_of_a_system_prompt_made_of_parts():
    from compactctl.phases.assemble import assemble

    system = {"role": "system", "content": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}]}
    t = T([system, {"role": "user", "content": "u0"}, {"role": "assistant", "content": "middle"}, {"role": "user", "content": "last"}])
    out, replaced = assemble(t, 2, 3, "body")
    assert out.messages[0].content == [*system["content"], {"type": "text", "text": SYSTEM_NOTE}]
    assert replaced[-1].content == system["content"]  # the original, archived


@pytest.mark.parametrize(
    "prev,nxt,expect",
    [
        ("tool", "assistant", ["user", "assistant"]),
        ("user", "user", ["assistant", "user"]),
        ("user", "assistant", ["assistant*"]),  # both roles collide: merged into the first tail message (*)
    ],
)
def test_assembly_roles(prev, nxt, expect):
    from compactctl.phases.assemble import assemble

    rows = [{"role": "system", "content": "s"}, {"role": "user", "content": "u0"}]
    if prev == "tool":
        rows += [call("a", "f", {}), res("a", "r")]
    else:
        rows += [{"role": "assistant", "content": "a0"}, {"role": "user", "content": "u1"}]
    rows += [{"role": "assistant", "content": "middle"}, {"role": "user", "content": "middle user"}]
    rows += [{"role": nxt, "content": "first tail"}, {"role": "user" if nxt == "assistant" else "assistant", "content": "last"}]
    t = T(rows)
    head_end = 4
    out, _ = assemble(t, head_end, 6, "body")
    roles = [m.role for m in out.messages[head_end:]]
    shown = [m.role + "*" * (SUMMARY_MARKER in m.text() and "first tail" in m.text()) for m in out.messages[head_end:]]
    assert shown[: len(expect)] == expect
    assert out.messages[0].text().endswith("(marked CONTEXT COMPACTION).]")
    prev_role = out.messages[head_end - 1].role
    first = out.messages[head_end]
    assert first.role != prev_role or prev_role == "tool"
    if SUMMARY_MARKER in first.text():
        assert roles[1] != roles[0] or out.messages[head_end + 1].role == "user"
    assert api.check(api.repair(out)[0]) == []


def test_anti_thrash_strikes_then_skip():
    rows = [{"role": "system", "content": "s"}]
    for i in range(10):
        rows += [
            {"role": "user", "content": f"question {i}: " + "why " * 150},
            {"role": "assistant", "content": f"answer {i}: " + "because " * 150},
        ]
    t = T(rows)
    budget = api.Budget(context_window=3000, tail_tokens=300, summary_min=300, summary_max=300, protect_first=1)
    opts = api.CompactOptions(budget, min_saving=0.9)
    out, rep = api.compact(t, COUNTER, api.OfflineSummarizer(), opts)
    assert rep["status"] == "compacted"  # within the target: applied, however small the saving

    class Verbose:  # a summarizer whose answer leaves the transcript over its target
        name = "verbose"

        def summarize(self, req, counter):
            from compactctl.phases.summarize import SummaryResult

            return SummaryResult("## Goal\n" + "word " * 3000, "verbose")

    # a dataset record keeps its strikes in its own metadata, beside the messages
    d = dataclasses.replace(t, layout="dataset")
    out, rep = api.compact(d, COUNTER, Verbose(), opts)
    assert rep["status"] == "ineffective" and out.metadata["_compactctl"]["strikes"] == 1 and api.check(out) == []
    out2, rep2 = api.compact(out, COUNTER, Verbose(), opts)
    assert out2.metadata["_compactctl"]["strikes"] == 2
    _, rep3 = api.compact(out2, COUNTER, Verbose(), opts)
    assert rep3["status"] == "skipped" and "ineffective" not in rep3["reason"] and "saved under" in rep3["reason"]
    # a session has no place for them that the APIs take (a `_compactctl` key on its first message was written, and
    # `--check` passed it): `summarize` alone still notes the strike, which `repair` (and so `compact`) takes off
    out, rep = api.compact(t, COUNTER, Verbose(), opts)
    assert rep["status"] == "ineffective" and not any(m.note for m in out.messages) and api.check(out) == []
    s_out, _ = api.summarize(t, COUNTER, Verbose(), api.SummarizeOptions(budget, min_saving=0.9))
    assert s_out.messages[0].note == {"strikes": 1} and "annotation" in [v.rule for v in api.check(s_out)]
    assert api.check(api.repair(s_out)[0]) == []


def test_last_ask_summary_keeps_the_ask_verbatim_or_refuses():
    ask = "Please migrate every handler to the new API. " + "Keep the old names as aliases. " * 60
    rows = [{"role": "system", "content": "s"}, {"role": "user", "content": "start"}]
    rows += [{"role": "assistant", "content": "step " + "x " * 300}, {"role": "user", "content": "go on " + "y " * 300}] * 6
    rows.append({"role": "user", "content": ask})
    for i in range(12):  # a long autonomous stretch after the last ask
        rows += [call(f"c{i}", "terminal", {"command": f"make step{i}"}), res(f"c{i}", f"step {i} ok " * 150)]
    t = T(rows)
    budget = api.Budget(context_window=16000, tail_tokens=600, summary_min=300, last_ask="tail")
    with pytest.raises(CannotFit):
        api.compact(
            t,
            COUNTER,
            api.OfflineSummarizer(),
            api.CompactOptions(budget, api.PruneOptions(protect_tokens=600, summaries=False, dedup=False)),
        )
    budget.last_ask = "summary"
    out, rep = api.compact(
        t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(budget, api.PruneOptions(protect_tokens=600, summaries=False, dedup=False))
    )
    summary = next(m for m in out.messages if SUMMARY_MARKER in m.text())
    assert parse_sections(summary.text())["Active Task"] == ask.strip()
    # the plan gives the summary room for the ask verbatim and, besides it, a whole minimum summary (a small middle's
    # share would be less)
    p = api.plan(t, COUNTER, dataclasses.replace(budget, summary_ratio=0.01))
    assert p.last_ask_in_summary and p.summary_budget >= COUNTER.text(ask) + 300
    assert api.check(out) == [] and rep["tokens_after"] <= budget.target
    budget.context_window, budget.tail_tokens = 900, 100  # the ask alone no longer fits: refuse rather than lose it
    with pytest.raises(CannotFit, match="last user message"):
        api.compact(
            t,
            COUNTER,
            api.OfflineSummarizer(),
            api.CompactOptions(budget, api.PruneOptions(protect_tokens=600, summaries=False, dedup=False)),
        )


def _ladder(t: Transcript, windows: range) -> list[tuple]:
    """The distinct plans (head end, tail start, ask in the summary, tail stretched for it, earlier summary kept at) as
    the window shrinks; "cannot" where the plan refuses."""
    seen: list[tuple] = []
    for w in windows:
        try:
            budget = api.Budget(context_window=w, tail_tokens=1200, summary_min=400)
            p = api.plan(t, COUNTER, budget)
            key: tuple = (p.head_end, p.tail_start, p.last_ask_in_summary, p.anchor_forced, p.prior_summary)
            # `plan --annotate | summarize` plans again from the zones: the same summary
            q = api.plan(t, COUNTER, budget, zones=(p.head_end, p.tail_start))
            assert (q.summary_budget, q.last_ask_in_summary, q.needs_compaction) == (p.summary_budget, p.last_ask_in_summary, True), w
        except CannotFit:
            key = ("cannot",)
        if not seen or seen[-1] != key:
            seen.append(key)
    return seen


def test_a_plan_gives_ground_in_the_documented_order():
    """As the window shrinks: the last ask stretches the tail, then moves verbatim into the summary, then the head
    keeps fewer first messages (3, 2, 1, none), then the tail goes; an earlier summary stays at the head until the
    head gives up its first messages; then the plan refuses."""
    ask = "Please migrate every handler to the new API. " + "Keep the old names as aliases. " * 20
    rows = [{"role": "system", "content": "s"}, {"role": "user", "content": "goal " * 150}]
    rows += [{"role": "assistant", "content": "plan " * 150}, {"role": "user", "content": "more " * 150}]
    rows += [{"role": "assistant", "content": "step " + "x " * 300}, {"role": "user", "content": "go on " + "y " * 300}] * 4
    rows.append({"role": "user", "content": ask})
    for i in range(6):
        rows += [call(f"c{i}", "terminal", {"command": f"make step{i}"}), res(f"c{i}", f"step {i} ok " * 100)]
    t = T(rows)
    assert _ladder(t, range(8000, 200, -20)) == [
        (4, 12, False, True, None),
        (4, 21, True, False, None),
        (3, 21, True, False, None),
        (2, 21, True, False, None),
        (1, 21, True, False, None),
        (1, 25, True, False, None),
        ("cannot",),
    ]
    once, _ = api.compact(
        t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(api.Budget(context_window=7000, tail_tokens=1200, summary_min=400))
    )
    again = once.evolve(messages=once.messages + t.messages[13:])  # the same calls once more after the compaction
    assert is_summary(again.messages[4])
    assert _ladder(again, range(9000, 200, -20)) == [
        (5, 26, True, False, 4),
        (1, 26, True, False, None),
        (1, 30, True, False, None),
        ("cannot",),
    ]
    alone = again.evolve(messages=again.messages[4:])  # no system prompt: the earlier summary opens the transcript
    assert _ladder(alone, range(9000, 200, -20)) == [(1, 22, True, False, 0), (0, 26, True, False, None), ("cannot",)]
    # the earlier summary kept at the head, then summarized again with the middle (also where it opens the middle)
    for t2, window in ((again, 6000), (again, 3000), (alone, 2000)):
        opts = api.SummarizeOptions(api.Budget(context_window=window, tail_tokens=1200, summary_min=400))
        p = plan_for_repair(t2, COUNTER, opts.budget)  # as the command plans
        piped, _ = api.summarize(api.annotate(t2, p), COUNTER, api.OfflineSummarizer(), opts)  # plan --annotate | summarize
        direct, _ = api.summarize(t2, COUNTER, api.OfflineSummarizer(), opts)
        assert [m.text() for m in piped.messages] == [m.text() for m in direct.messages], window


def test_a_changed_message_keeps_only_the_anchor_of_its_provenance():
    from compactctl.model import Provenance

    m = Message(role="user", content="hi", provenance=Provenance(origin={"role": "user", "content": "hi"}, index=3, anchor=("lines", (7,))))
    e = m.evolve(content="changed")
    assert m.untouched and m.origin == {"role": "user", "content": "hi"}
    assert not e.untouched and e.origin is None and e.anchor == ("lines", (7,))
    assert Message(role="user", content="new").evolve().provenance == Provenance()
    m.index = 4  # setting a part replaces the frozen provenance
    assert m.provenance.index == 4 and m.provenance.anchor == ("lines", (7,))


def test_repair_gives_a_call_an_id_both_apis_take():
    """Anthropic takes `^[a-zA-Z0-9_-]+$`, OpenAI 40 characters at most: an id outside either is renamed (its result
    follows), from its own characters where it can."""
    import re

    long_id = "call_" + "a" * 59
    rows = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "toolu 01/bad.id", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
                {"id": long_id, "type": "function", "function": {"name": "ls", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "toolu 01/bad.id", "content": "a"},
        {"role": "tool", "tool_call_id": long_id, "content": "b"},
    ]
    t = T(rows)
    assert [v.rule for v in api.check(t)] == ["bad-id", "bad-id"]
    out, st = api.repair(t)
    ids = [c.id for c in out.messages[1].tool_calls]
    assert api.check(out) == [] and st.ids_renamed == 2 and all(re.fullmatch(r"[A-Za-z0-9_-]{1,40}", i) for i in ids)
    assert ids[0].startswith("toolu_01_bad_id__") and [m.tool_call_id for m in out.messages[2:]] == ids
    # `base__N`: the old id's own characters (others as `_`, cut to 30) and a count over the transcript
    assert ids == ["toolu_01_bad_id__1", long_id[:30] + "__2"]
    assert [m.text() for m in out.messages[2:]] == ["a", "b"]


# ---- pairing (pairs.py): which result answers which call when ids are lost or repeated


def answers(t: Transcript) -> list[tuple[str, str, str]]:
    """(tool name, arguments, the text of the result that answers it) of each call in `t` repaired, as written (valid
    for OpenAI)."""
    out, _ = api.repair(t)
    rows = [orjson.loads(x) for x in api.write(out).splitlines()]
    assert validate(rows) == []
    got = []
    for k, r in enumerate(rows):
        results = {x["tool_call_id"]: x["content"] for x in rows[k + 1 : k + 1 + len(r.get("tool_calls") or [])]}
        got += [(c["function"]["name"], c["function"]["arguments"], results[c["id"]]) for c in r.get("tool_calls") or []]
    return got


def two_calls(a: tuple[str, str, dict], b: tuple[str, str, dict]) -> dict:
    both = call(*a)
    both["tool_calls"] += call(*b)["tool_calls"]
    return both


@pytest.mark.parametrize("opening", [True, False])
def test_results_right_after_their_calls_answer_them_by_position_even_one_that_lost_its_id(opening):
    """Rule 0: as many results as calls right after them, none contradicting its call's id or name, pair by position
    (one lost its id): a later result with that id (a stray copy) answers nothing, it does not take the call."""
    rows = [
        two_calls(("a", "ls", {"path": "x"}), ("b", "pwd", {})),
        res("a", "x.py"),
        {"role": "tool", "name": "pwd", "content": "/w"},  # its id lost
        {"role": "user", "content": "again?"},
        res("b", "late copy"),
        {"role": "assistant", "content": "done"},
    ]
    rows = [{"role": "user", "content": "go"}, *rows] if opening else rows
    assert answers(T(rows)) == [("ls", '{"path":"x"}', "x.py"), ("pwd", "{}", "/w")]


@pytest.mark.parametrize("named", [False, True])
def test_a_result_with_a_repeated_id_answers_the_call_at_its_own_position(named):
    """Two calls with one id and a run of results after them that is not theirs one to one (a stray result first):
    the result at the second position answers the second call (its tool's name, the calls' both, changes nothing);
    the first call has none (a stub)."""
    rows = [
        {"role": "user", "content": "read both"},
        two_calls(("d", "read", {"path": "a"}), ("d", "read", {"path": "b"})),
        res("zz", "stray"),
        {**res("d", "b's text"), **({"name": "read"} if named else {})},
        {"role": "assistant", "content": "done"},
    ]
    assert answers(T(rows)) == [("read", '{"path":"a"}', STUB), ("read", '{"path":"b"}', "b's text")]


def test_results_right_after_their_calls_in_another_order_without_ids_answer_the_tool_they_name():
    """No ids, and the names say the results came back in another order than the calls: not one to one by position."""
    rows = [
        {"role": "user", "content": "go"},
        two_calls(("a", "ls", {}), ("b", "pwd", {})),
        {"role": "tool", "name": "pwd", "content": "/w"},
        {"role": "tool", "name": "ls", "content": "x.py"},
        {"role": "assistant", "content": "done"},
    ]
    assert answers(T(rows)) == [("ls", "{}", "x.py"), ("pwd", "{}", "/w")]


def test_a_result_without_an_id_before_any_call_answers_nothing():
    """It never answers a call made after it (the last message's, say): it is removed, and that call gets a stub."""
    rows = [
        {"role": "user", "content": "go"},
        {"role": "tool", "content": "stray"},
        {"role": "user", "content": "run it"},
        call("a", "ls", {}),
    ]
    _, st = api.repair(T(rows))
    assert answers(T(rows)) == [("ls", "{}", STUB)] and st.orphan_results_removed == 1


def test_a_legacy_function_call_answered_by_a_tool_result_without_an_id():
    """The result is written as the `function` result of that call, named as it is (OpenAI takes nothing else)."""
    rows = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "function_call": {"name": "ls", "arguments": "{}"}},
        {"role": "tool", "content": "a.py"},
        {"role": "assistant", "content": "done"},
    ]
    out, st = api.repair(T(rows))
    written = [orjson.loads(x) for x in api.write(out).splitlines()]
    assert validate(written) == [] and written[2] == {"role": "function", "name": "ls", "content": "a.py"} and st.result_ids_set == 1


@pytest.mark.parametrize("ids", [True, False])
@pytest.mark.parametrize("opening", [True, False])
def test_results_away_from_their_calls_answer_the_call_of_the_tool_they_name(ids, opening):
    """Results that came after a user turn, with the calls' repeated id (rule 1) or none (rule 2), the second call's
    first: each answers the call of the tool it names, not the first call still open."""
    rows = [
        two_calls(("d", "ls", {}), ("d", "pwd", {})),
        {"role": "user", "content": "wait"},
        {"role": "tool", "name": "pwd", "content": "/w", **({"tool_call_id": "d"} if ids else {})},
        {"role": "tool", "name": "ls", "content": "x.py", **({"tool_call_id": "d"} if ids else {})},
        {"role": "assistant", "content": "done"},
    ]
    rows = [{"role": "user", "content": "go"}, *rows] if opening else rows
    assert answers(T(rows)) == [("ls", "{}", "x.py"), ("pwd", "{}", "/w")]


def test_parallel_results_in_another_order_than_their_calls_are_left_as_they_came():
    """Both APIs pair a result with its call by id: results of parallel calls that came back in another order are
    valid as they are (check says so), and repair leaves them (it wrote them in call order: a changed transcript)."""
    both = call("a", "read", {"path": "x"})
    both["tool_calls"].append({"id": "b", "type": "function", "function": {"name": "read", "arguments": '{"path": "y"}'}})
    t = T([{"role": "user", "content": "read both"}, both, res("b", "y's text"), res("a", "x's text"), {"role": "user", "content": "ok"}])
    assert api.check(t) == []
    out, st = api.repair(t)
    assert out is t and not st.changed
    # Moved results are still put in call order.
    moved = T([{"role": "user", "content": "read both"}, both, {"role": "user", "content": "wait"}, res("b", "y"), res("a", "x")])
    fixed, st = api.repair(moved)
    assert [m.tool_call_id for m in fixed.messages if m.role == "tool"] == ["a", "b"] and st.results_moved == 2


def test_an_id_reused_in_a_later_turn_is_a_violation_for_anthropic_only(tmp_path):
    """Anthropic's API wants each tool_use id once per request, OpenAI takes one reused in a later turn (real OpenAI
    transcripts do it): check reports it for a format sent to Anthropic, so that check says ok exactly when repair
    changes nothing; repair renames it in every format."""
    from .conftest import cli, write_jsonl

    anthropic = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "pwd"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "/"}]},
        {"role": "assistant", "content": "done"},
    ]
    src = write_jsonl(tmp_path / "a.jsonl", anthropic)
    r = cli("repair", "--check", str(src))
    assert r.returncode == 6 and b"reused-id" in r.stderr
    fixed = cli("repair", str(src), "-o", str(tmp_path / "fixed.jsonl"))
    assert fixed.returncode == 0 and cli("repair", "--check", str(tmp_path / "fixed.jsonl")).returncode == 0
    openai = T([{"role": "user", "content": "go"}, call("c1", "ls", {}), res("c1", "a"), call("c1", "pwd", {}), res("c1", "/")])
    assert api.check(openai) == []
    out, st = api.repair(openai)
    assert st.ids_renamed == 1 and api.check(out) == []


def test_arguments_held_as_a_json_object_are_written_as_json_text(tmp_path):
    """From an adversarial review: `"arguments": {"x": 1}` went out as an object in OpenAI output (the API wants the
    JSON text); --check did not say so. The archive still gives back the record as it came."""
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": {"x": 1}}}
    rows = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    t = T(rows)
    assert [v.rule for v in api.check(t)] == ["object-arguments"]
    out, st = api.repair(t)
    assert api.check(out) == [] and st.arguments_as_text == 1
    src = write_jsonl(tmp_path / "d.jsonl", [{"messages": rows}])
    p = cli("repair", str(src), "-q", "-o", str(tmp_path / "o.jsonl"), "--archive", str(tmp_path / "a.jsonl"))
    assert p.returncode == 0, p.stderr
    written = orjson.loads((tmp_path / "o.jsonl").read_bytes())["messages"]
    assert written[1]["tool_calls"][0]["function"]["arguments"] == '{"x":1}'
    back = cli("restore", str(tmp_path / "o.jsonl"), "--archive", str(tmp_path / "a.jsonl"))
    assert back.returncode == 0 and back.stdout == src.read_bytes(), back.stderr


def test_a_call_without_a_tool_name_is_named(tmp_path):
    """Hermes writes `{"name": "", ...}` in a <tool_call>; both APIs want a tool's name. --check says so, repair
    names the call "unknown" (as the ShareGPT reader names a call it cannot parse), the fast path of a dataset too."""
    rows = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": " ", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    t = T(rows)
    assert [v.rule for v in api.check(t)] == ["unnamed-call"]
    out, st = api.repair(t)
    assert api.check(out) == [] and st.calls_named == 1 and out.messages[1].tool_calls[0].name == "unknown"
    src = write_jsonl(tmp_path / "d.jsonl", [{"messages": rows}])
    p = cli("repair", str(src), "-q")
    assert p.returncode == 0 and orjson.loads(p.stdout)["messages"][1]["tool_calls"][0]["function"]["name"] == "unknown"
    hermes = {
        "conversations": [
            {"from": "human", "value": "list files"},
            {"from": "gpt", "value": '<tool_call>\n{"name": "", "arguments": {"path": "."}}\n</tool_call>'},
            {"from": "tool", "value": '<tool_response>\n{"name": "", "content": "a b"}\n</tool_response>'},
            {"from": "gpt", "value": "done"},
        ]
    }
    src = write_jsonl(tmp_path / "h.jsonl", [hermes])
    assert cli("repair", "--check", str(src)).returncode == 6
    for to in ("openai", "anthropic"):
        p = cli("repair", str(src), "--to", to, "-q")
        [rec] = [orjson.loads(x) for x in p.stdout.splitlines()]
        assert (
            p.returncode == 0
            and b'"name":""' not in p.stdout
            and (validate_anthropic if to == "anthropic" else validate)(rec["messages"]) == []
        )


@pytest.mark.parametrize(
    "content",
    [
        "Sure.\n\n",
        [{"type": "text", "text": "a"}, {"type": "text", "text": "Sure. "}],
        [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}, {"type": "text", "text": "Sure. "}],  # its own keys
    ],
)
def test_repair_cuts_the_whitespace_a_last_assistant_message_ends_in(content):
    """Anthropic refuses a request whose final assistant content ends in whitespace ("final assistant content cannot
    end with trailing whitespace"); OpenAI takes it. An earlier message keeps its own."""
    t = Transcript(
        [
            Message(role="user", content="hi"),
            Message(role="assistant", content="first.\n"),
            Message(role="user", content="and?"),
            Message(role="assistant", content=content),
        ]
    )
    for i, m in enumerate(t.messages):
        m.index = i  # as read
    assert [v.rule for v in check(t)] == ["final-space"]
    out, st = repair(t)
    assert check(out) == [] and st.final_space_cut == 1 and len(st.archived) == 1
    assert out.messages[1].content == "first.\n" and out.messages[-1].text().endswith("Sure.")
    # only the last text loses its whitespace: the parts before it stay
    assert out.messages[-1].content == ("Sure." if isinstance(content, str) else [content[0], {"type": "text", "text": "Sure."}])
    assert repair(out)[0] is out  # idempotent


def test_a_system_message_after_the_last_assistant_turn_does_not_hide_its_final_whitespace():
    """Anthropic moves a system message into its `system` prompt, so the assistant turn before it is the final one."""
    t = Transcript(
        [Message(role="user", content="hi"), Message(role="assistant", content="Sure. "), Message(role="system", content="note")]
    )
    assert [(v.rule, v.index) for v in check(t)] == [("final-space", 1)]
    out, st = repair(t)
    assert [m.content for m in out.messages] == ["hi", "Sure.", "note"] and st.final_space_cut == 1 and check(out) == []
    only_system = Transcript([Message(role="system", content="rules ")])
    assert "final-space" not in [v.rule for v in check(only_system)]


@pytest.mark.parametrize(
    ("system", "refused"),
    [
        (None, True),  # null
        ("", True),
        (" \n", True),
        ([{"type": "text", "text": " "}], True),  # "text content blocks must contain non-whitespace text"
        ([{"type": "text", "text": ""}, {"type": "text", "text": "\t"}], True),
        ([], False),  # no block at all the API takes
        ("Be terse.", False),
        ([{"type": "text", "text": "Be terse.", "cache_control": {"type": "ephemeral"}}], False),
    ],
)
def test_an_anthropic_system_prompt_without_text_is_a_violation_repair_empties(tmp_path, system, refused):
    from .validator import validate_anthropic_records

    path = write_jsonl(tmp_path / "a.jsonl", [{"system": system, "messages": [{"role": "user", "content": "hi"}], "id": 7}])
    [t] = api.read([str(path)])
    assert t.format == "anthropic"
    assert [v.rule for v in api.check(t)] == (["blank-system"] if refused else [])
    out, st = api.repair(t)
    assert st.blank_system_removed == int(refused) and st.changed == refused
    [rec] = [orjson.loads(x) for x in api.write(out).splitlines()]
    assert validate_anthropic_records([rec]) == []
    assert rec == {"system": [] if refused else system, "messages": [{"role": "user", "content": "hi"}], "id": 7}
    [back] = api.read([str(write_jsonl(tmp_path / "b.jsonl", [rec]))])
    assert back.format == "anthropic"  # it still reads as what it is (restore writes it back as one)
    assert api.check(out) == []
    if refused and system is not None:  # a system message, archived as repair's (null was no message)
        assert [a.message.role for a in st.archived] == ["system"]


def test_a_blank_openai_system_message_stays_for_openai_and_is_left_out_for_anthropic():
    """OpenAI takes a system message with blank text; the Messages API's system prompt must have text, and a
    blank one holds nothing to lose."""
    t = T([{"role": "system", "content": " "}, {"role": "user", "content": "hi"}])
    assert api.check(t) == [] and api.repair(t)[0] is t
    assert [orjson.loads(x) for x in api.write(t).splitlines()][0] == {"role": "system", "content": " "}
    assert [orjson.loads(x) for x in api.write(t, "anthropic").splitlines()] == [{"role": "user", "content": "hi"}]


def test_a_tool_name_the_apis_refuse_is_mended_in_the_call_and_its_legacy_result():
    """Both APIs check the names of a conversation's calls, not only of `tools` (Anthropic: "messages.3.content.0.
    tool_use.name: String should match pattern"; OpenAI Responses refused a Claude Code history whose model had
    called `dots schema search --scope all --json`)."""
    from .validator import validate, validate_anthropic_records

    long = "mcp__server__" + "x" * 70

    def tc(cid, name):
        return call(cid, name, {})["tool_calls"][0]

    rows = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [tc("a", "dots schema search --json"), tc("b", "ns.tool")]},
        res("a", "unknown tool"),
        res("b", "ok"),
        {"role": "assistant", "content": None, "tool_calls": [tc("c", long), tc("d", "Read")]},
        res("c", "ok"),
        res("d", "ok"),
        {"role": "assistant", "content": None, "function_call": {"name": "old.fn", "arguments": "{}"}},
        {"role": "function", "name": "old.fn", "content": "done"},
        {"role": "assistant", "content": "done"},
    ]
    t = T(rows)
    assert [v.rule for v in api.check(t)] == ["bad-name", "bad-name", "bad-name", "bad-name"]
    out, st = api.repair(t)
    assert api.check(out) == [] and st.names_mended == 4
    names = [c.name for m in out.messages for c in m.tool_calls]
    assert names == ["dots_schema_search_--json", "ns_tool", ("mcp__server__" + "x" * 70)[:64], "Read", "old_fn"]
    assert out.messages[-2].name == "old_fn"  # the legacy result names its call as the call is named now
    assert [a.message.tool_calls[0].name for a in st.archived if a.message.tool_calls][:2] == ["dots schema search --json", long]
    written = [orjson.loads(x) for x in api.write(out).splitlines()]
    assert validate(written) == []
    assert validate_anthropic_records([orjson.loads(x) for x in api.write(out, "anthropic").splitlines()]) == []
    assert api.repair(out)[0] is out  # idempotent


def test_tool_definitions_and_tool_choice_are_named_as_the_mended_calls(tmp_path):
    """A record whose `tools` define `ns.tool` (Gemini takes dots; OpenAI and Anthropic do not) and whose calls call
    it: the calls were mended alone, and the request still defined a tool neither API takes."""
    from .validator import validate_anthropic_records

    rec = {
        "tools": [
            {"type": "function", "function": {"name": "ns.tool", "parameters": {"type": "object"}}},
            {"type": "function", "function": {"name": "ok_tool", "parameters": {"type": "object"}}},
        ],
        "tool_choice": {"type": "function", "function": {"name": "ns.tool"}},
        "messages": [{"role": "user", "content": "go"}, call("a", "ns.tool", {}), res("a", "ok"), {"role": "assistant", "content": "done"}],
    }
    path = write_jsonl(tmp_path / "t.jsonl", [rec])
    [t] = api.read([str(path)])
    assert sorted(v.rule for v in api.check(t)) == ["bad-name"] * 3
    out, st = api.repair(t)
    assert api.check(out) == [] and st.names_mended == 3
    [got] = [orjson.loads(x) for x in api.write(out).splitlines()]
    assert [d["function"]["name"] for d in got["tools"]] == ["ns_tool", "ok_tool"]
    assert got["tool_choice"]["function"]["name"] == "ns_tool" == got["messages"][1]["tool_calls"][0]["function"]["name"]
    # the transcript read was not changed in place (`rec`, written to a file, never reached compactctl)
    assert t.metadata["tools"][0]["function"]["name"] == "ns.tool" == t.metadata["tool_choice"]["function"]["name"]
    assert validate_anthropic_records([orjson.loads(x) for x in api.write(out, "anthropic").splitlines()]) == []
    assert cli("repair", str(path)).stdout.count(b"ns_tool") == 3  # the fast path does not pass it through


def test_a_compacted_transcript_compacts_again_at_a_smaller_window():
    """Compacted at 4,000, then at 3,600: the earlier summary sat in the head, the tail followed it, and the plan took
    the room the summary frees for enough, with nothing between them to summarize (exit 5); it now summarizes the
    earlier summary again."""
    [t] = api.read([str(SAMPLES / "long_session.jsonl")])
    opts = lambda w: api.CompactOptions(api.Budget(context_window=w))  # noqa: E731
    once, _ = api.compact(t, COUNTER, api.OfflineSummarizer(), opts(4000))
    twice, rep = api.compact(once, COUNTER, api.OfflineSummarizer(), opts(3600))
    assert rep["status"] == "compacted" and rep["tokens_after"] <= 1800
    assert sum(is_summary(m) for m in twice.messages) == 1 and check(twice) == []


def test_a_system_prompt_over_the_target_is_said_to_be_the_reason():
    """The advice was to lower --protect-first, --tail-tokens or --summary-min, none of which can help (Hermes' sample:
    an 11,890-token system prompt against a 10,000-token target)."""
    rows = [{"role": "system", "content": "Follow the rules. " * 400}, {"role": "user", "content": "go"}]
    rows += [{"role": "assistant", "content": f"step {k} " * 50} for k in range(6)]
    t = Transcript(messages=[message_from_dict(r, "x", 1, i) for i, r in enumerate(rows)], id="x")
    with pytest.raises(CannotFit, match="The system prompt alone takes 1,60[0-9] tokens, over the target: raise --context-window"):
        api.compact(t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(api.Budget(context_window=2000)))
    system = COUNTER.messages(t.messages)[0]
    with pytest.raises(CannotFit, match="The system prompt alone takes"):  # all of the target is over it too
        api.plan(t, COUNTER, api.Budget(context_window=2 * system))


@pytest.mark.parametrize("held", [{"strikes": "a"}, {"strikes": [1]}, {"strikes": {}}, {"strikes": True}, "x", 5, None])
def test_compactctls_key_holding_no_count_of_strikes_is_no_strike(held):
    """`"_compactctl": {"strikes": "a"}` (a record's or a message's) stopped compact and summarize with a traceback
    (`int("a")`), even under --on-error skip; a record's key that is no object failed in `.items()`. What is no
    count compactctl wrote counts as no strike."""
    from compactctl.phases.summarize import get_strikes, set_strikes

    msgs = [{"role": "user", "content": "go", "_compactctl": held}, {"role": "assistant", "content": "ok"}]
    assert get_strikes(T(msgs)) == 0
    record = dataclasses.replace(T([m for m in msgs]), layout="dataset", metadata={"_compactctl": held})
    assert get_strikes(record) == 0
    assert set_strikes(record, 1).metadata["_compactctl"] == {"strikes": 1}
    out, rep = api.compact(T(msgs), COUNTER, api.OfflineSummarizer(), api.CompactOptions(api.Budget(context_window=3000)))
    assert api.check(out) == []
