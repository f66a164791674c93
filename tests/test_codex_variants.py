"""Codex rollouts and bare Responses-API items in the shapes the API allows beside the ones Codex writes:
messages without "type" (EasyInputMessage), rollouts that already hold a `compacted` line, and calls of
other kinds (local_shell_call, custom_tool_call) rewritten in kind."""

from __future__ import annotations

import json

import orjson
import pytest

from compactctl import api

from .conftest import cli, read_jsonl


def lines(rows):
    return b"".join(orjson.dumps(r) + b"\n" for r in rows)


TYPELESS = [
    {"role": "user", "content": "Find the bug in io.py"},
    {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": "io.py"},
    {"role": "assistant", "content": "Found it."},
    {"role": "user", "content": "Now write a test. LAST ASK"},
]


def test_messages_without_type_are_read_as_messages(tmp_path):
    """A Responses-API message may come without "type" (role and content only). Detection went to Codex on the
    calls that follow, and the reader took only typed items: both user asks and the assistant's answer were
    dropped, with exit 0."""
    src = tmp_path / "resp.jsonl"
    src.write_bytes(lines(TYPELESS))
    [t] = api.read([str(src)])
    assert t.format == "codex"
    assert [m.role for m in t.messages] == ["user", "assistant", "tool", "assistant", "user"]
    assert api.write(t) == src.read_bytes()  # untouched: byte for byte
    r = cli("convert", "--to", "openai", str(src))
    assert r.returncode == 0, r.stderr
    out = read_jsonl(r.stdout)
    assert out[0] == {"role": "user", "content": "Find the bug in io.py"}
    assert out[3] == {"role": "assistant", "content": "Found it."}
    assert out[-1] == {"role": "user", "content": "Now write a test. LAST ASK"}
    r = cli("compact", "--context-window", "4000", str(src))
    assert r.returncode == 0, r.stderr
    assert r.stdout == src.read_bytes()  # nothing to compact: written as it came


def test_changed_typeless_message_is_written_back_as_it_came(tmp_path):
    """A changed message whose line had no "type" and a string content keeps that shape."""
    src = tmp_path / "resp.jsonl"
    src.write_bytes(lines(TYPELESS))
    [t] = api.read([str(src)])
    t.messages[3] = t.messages[3].evolve(content="Found it: line 3.")
    out = read_jsonl(api.write(t))
    assert out[3] == {"role": "assistant", "content": "Found it: line 3."}
    assert out[:3] == TYPELESS[:3] and out[4] == TYPELESS[4]


def test_typeless_assistant_text_joins_the_calls_after_it(tmp_path):
    rows = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "Let me look."},
        {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "x"},
    ]
    src = tmp_path / "resp.jsonl"
    src.write_bytes(lines(rows))
    [t] = api.read([str(src)])
    assert [m.role for m in t.messages] == ["user", "assistant", "tool"]
    assert t.messages[1].content == "Let me look." and [c.id for c in t.messages[1].tool_calls] == ["c1"]


def test_first_typeless_message_in_responses_parts_is_detected_as_codex(tmp_path):
    """A first line {role, content: [input_text parts]} tells the Responses API (chat has no input_text): it was
    read as OpenAI chat and the next line failed."""
    rows = [{"role": "user", "content": [{"type": "input_text", "text": "go"}]}, *TYPELESS[1:]]
    src = tmp_path / "resp.jsonl"
    src.write_bytes(lines(rows))
    [t] = api.read([str(src)])
    assert t.format == "codex" and [m.role for m in t.messages] == ["user", "assistant", "tool", "assistant", "user"]


def test_a_role_line_that_is_no_item_is_refused_not_dropped(tmp_path):
    """A bare line with a role that no Responses item has (an OpenAI chat tool message) names its file and line
    (--on-error skip: rejected and warned); it was left out of the messages with exit 0."""
    rows = [*TYPELESS[:2], {"role": "tool", "tool_call_id": "c1", "content": "io.py"}, TYPELESS[-1]]
    src = tmp_path / "mixed.jsonl"
    src.write_bytes(lines(rows))
    r = cli("convert", "--to", "openai", str(src))
    assert r.returncode == 3
    assert f"{src}:3:" in r.stderr.decode() and "role 'tool'" in r.stderr.decode()
    r = cli("convert", "--to", "openai", "--on-error", "skip", str(src))
    assert r.returncode == 0 and f"skipped {src}:3:" in r.stderr.decode()
    assert read_jsonl(r.stdout)[-1] == {"role": "user", "content": "Now write a test. LAST ASK"}


def _ui(text):
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _line(ts, typ, payload):
    return {"timestamp": ts, "type": typ, "payload": payload}


def _shell(cid, cmd):
    return {"type": "function_call", "name": "shell", "arguments": orjson.dumps({"command": ["bash", "-lc", cmd]}).decode(), "call_id": cid}


def _out(cid, text):
    return {"type": "function_call_output", "call_id": cid, "output": orjson.dumps({"output": text, "metadata": {"exit_code": 0}}).decode()}


def _items_after_compacted(objs):
    at = max(k for k, o in enumerate(objs) if o.get("type") == "compacted")
    return [o["payload"] for o in objs[at + 1 :] if o.get("type") == "response_item"]


def test_repair_leaves_a_compacted_lines_history_in_it(tmp_path):
    """The messages of a compacted line's replacement_history were written again as response_item lines after it
    when anything else changed (repair answering a trailing call): Codex resumes from that history and then
    replays the lines after it, so it saw them twice."""
    compacted = {"message": "summary S", "replacement_history": [_ui("old ask"), _ui("summary S")]}
    rows = [
        _line("t0", "session_meta", {"id": "s"}),
        _line("t1", "response_item", _ui("old ask")),
        _line("t2", "compacted", compacted),
        _line("t3", "response_item", _ui("new ask")),
        _line("t4", "response_item", _shell("c9", "ls")),
    ]
    src = tmp_path / "rollout.jsonl"
    src.write_bytes(lines(rows))
    r = cli("repair", str(src))
    assert r.returncode == 0, r.stderr
    objs = read_jsonl(r.stdout)
    assert objs[:5] == rows  # the compacted line as it was
    after = _items_after_compacted(objs)
    assert [it["type"] for it in after] == ["message", "function_call", "function_call_output"]
    assert after[0] == _ui("new ask")
    out = tmp_path / "fixed.jsonl"
    out.write_bytes(r.stdout)
    [t] = api.read([str(out)])
    assert [m.text() for m in t.messages[:3]] == ["old ask", "summary S", "new ask"]
    assert cli("repair", "--check", str(out)).returncode == 0


def _rollout_with_history(n_live=12):
    history = [
        _ui("old ask"),
        {"type": "reasoning", "summary": [], "content": None, "encrypted_content": "gAAA"},
        _shell("c0", "cat f0.py"),
        _out("c0", "line of old output\n" * 80),
        {"type": "ghost_snapshot", "ghost_commit": {"id": "g1"}},
        _ui("summary S"),
    ]
    rows = [
        _line("t0", "session_meta", {"id": "s"}),
        _line("t1", "compacted", {"message": "summary S", "replacement_history": history}),
        _line("t2", "response_item", _ui("new ask")),
    ]
    for k in range(1, n_live):
        rows.append(_line(f"t{k + 2}", "response_item", _shell(f"c{k}", f"cat f{k}.py")))
        rows.append(_line(f"t{k + 2}", "response_item", _out(f"c{k}", f"line of output {k}\n" * 80)))
    rows.append(_line("tz", "response_item", _ui("LAST ASK")))
    return rows, history


def test_a_changed_history_message_is_rewritten_inside_the_compacted_line(tmp_path):
    """prune shrinking an old output that stands in the replacement history: the compacted line's history gets
    the new output in its place (the other items as they were, the ghost_snapshot and reasoning kept where they
    stood), and nothing of it is written after the line; restore gives the file back byte for byte."""
    rows, history = _rollout_with_history()
    src = tmp_path / "rollout.jsonl"
    src.write_bytes(lines(rows))
    out, archive = tmp_path / "pruned.jsonl", tmp_path / "archive.jsonl"
    r = cli("prune", "--context-window", "4000", "--protect-tokens", "300", "--archive", str(archive), str(src), "-o", str(out))
    assert r.returncode == 0, r.stderr
    objs = read_jsonl(out.read_bytes())
    new_history = objs[1]["payload"]["replacement_history"]
    assert len(new_history) == len(history)
    assert [h for k, h in enumerate(new_history) if k != 3] == [h for k, h in enumerate(history) if k != 3]
    assert "[ref" in new_history[3]["output"] and new_history[3]["call_id"] == "c0"
    after = _items_after_compacted(objs)
    assert after[0] == _ui("new ask") and not any(it.get("call_id") == "c0" for it in after)
    assert sum(1 for it in after if it["type"] == "message") == 2
    back = cli("restore", str(out), "--archive", str(archive))
    assert back.returncode == 0 and back.stdout == src.read_bytes()


def test_a_new_summary_over_a_compacted_rollout_does_not_repeat_the_old_history(tmp_path):
    """Compacting a rollout that already has a compacted line: the old history's messages go into the new
    compacted line's history, not into response_item lines."""
    rows, _ = _rollout_with_history(40)
    src = tmp_path / "rollout.jsonl"
    src.write_bytes(lines(rows))
    r = cli("compact", str(src), "--context-window", "3000", "--tail-tokens", "300", "--summary-min", "300", "--summary-max", "600")
    assert r.returncode == 0, r.stderr
    objs = read_jsonl(r.stdout)
    assert sum(o["type"] == "compacted" for o in objs) == 2
    texts = [p["content"][0]["text"] for o in objs if o["type"] == "response_item" and (p := o["payload"])["type"] == "message"]
    assert "old ask" not in texts and "summary S" not in texts
    assert "old ask" in [
        h["content"][0]["text"]
        for h in objs[-1 - len(_items_after_compacted(objs))]["payload"]["replacement_history"]
        if h["type"] == "message"
    ]


def test_bare_items_compacted_are_read_back_from_the_compacted_line(tmp_path):
    """Bare Responses items get a bare `{"type": "compacted", ...}` line; it was not recognized when read back:
    the summary was lost and the head read twice."""
    rows = [{"role": "user", "content": "Find the bug in io.py"}]
    for k in range(30):
        rows.append({"role": "assistant", "content": f"Step {k}: looking."})
        rows.append(_shell(f"c{k}", f"cat f{k}.py"))
        rows.append({"type": "function_call_output", "call_id": f"c{k}", "output": f"line of output {k}\n" * 60})
    rows.append({"role": "user", "content": "Now write a test. LAST ASK"})
    src = tmp_path / "resp.jsonl"
    src.write_bytes(lines(rows))
    # --refs: the sizes that make it summarize were set with references in the pruned outputs (no --archive here)
    r = cli(
        "compact", str(src), "--context-window", "4000", "--tail-tokens", "400", "--summary-min", "400", "--summary-max", "800", "--refs"
    )
    assert r.returncode == 0, r.stderr
    [compacted] = [o for o in read_jsonl(r.stdout) if o.get("type") == "compacted"]
    assert set(compacted) == {"type", "message", "replacement_history"}  # bare items in, a bare compacted line out
    out = tmp_path / "out.jsonl"
    out.write_bytes(r.stdout)
    [t] = api.read([str(out)])
    from compactctl.model import is_summary

    assert sum(is_summary(m) for m in t.messages) == 1
    assert sum(m.text() == "Find the bug in io.py" for m in t.messages) == 1
    assert t.messages[-1].text() == "Now write a test. LAST ASK"


LOCAL_1 = {
    "type": "local_shell_call",
    "id": "lsh_1",
    "call_id": "d",
    "status": "completed",
    "action": {
        "type": "exec",
        "command": ["bash", "-lc", "echo 1"],
        "timeout_ms": 1000,
        "working_directory": "/p",
        "env": {"A": "1"},
        "user": None,
    },
}
LOCAL_2 = {**LOCAL_1, "id": "lsh_2", "action": {**LOCAL_1["action"], "command": ["bash", "-lc", "echo 2"], "timeout_ms": 2000}}
CUSTOM_1 = {
    "type": "custom_tool_call",
    "id": "ctc_1",
    "status": "completed",
    "call_id": "e",
    "name": "apply_patch",
    "input": "*** Begin Patch\n*** End Patch",
}
CUSTOM_2 = {**CUSTOM_1, "id": "ctc_2", "input": "*** Begin Patch\nx\n*** End Patch"}


def test_calls_renamed_by_repair_keep_their_kind_and_fields(tmp_path):
    """repair renaming a duplicate call id rewrote a local_shell_call as a function_call named local_shell (its
    id, status, timeout_ms, working_directory and env lost) and a custom_tool_call without its id and status:
    only the call_id may change."""
    rows = [
        _line("t1", "response_item", _ui("run both")),
        _line("t2", "response_item", LOCAL_1),
        _line("t3", "response_item", LOCAL_2),
        _line("t4", "response_item", {"type": "function_call_output", "call_id": "d", "output": "1"}),
        _line("t5", "response_item", {"type": "function_call_output", "call_id": "d", "output": "2"}),
        _line("t6", "response_item", CUSTOM_1),
        _line("t6", "response_item", CUSTOM_2),
        _line("t7", "response_item", {"type": "custom_tool_call_output", "call_id": "e", "output": "ok"}),
        _line("t7", "response_item", {"type": "custom_tool_call_output", "call_id": "e", "output": "ok2"}),
        _line("t8", "response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}),
    ]
    src = tmp_path / "rollout.jsonl"
    src.write_bytes(lines(rows))
    r = cli("repair", str(src))
    assert r.returncode == 0, r.stderr
    items = [o["payload"] for o in read_jsonl(r.stdout)]
    assert items[1] == LOCAL_1 and items[5] == CUSTOM_1  # the first of each id: as it was
    renamed_local, renamed_custom = items[2], items[6]
    assert renamed_local["call_id"] not in ("d", None) and renamed_local == {**LOCAL_2, "call_id": renamed_local["call_id"]}
    assert renamed_custom["call_id"] not in ("e", None) and renamed_custom == {**CUSTOM_2, "call_id": renamed_custom["call_id"]}
    assert list(renamed_local) == list(LOCAL_2) and list(renamed_local["action"]) == list(LOCAL_2["action"])
    out = tmp_path / "fixed.jsonl"
    out.write_bytes(r.stdout)
    assert cli("repair", "--check", str(out)).returncode == 0


def test_changed_call_arguments_are_written_into_the_calls_own_field(tmp_path):
    """A changed call keeps every field but the one changed: a local shell call's action.command, a custom
    call's input, a Responses function_call's arguments (its id and status kept)."""
    fn = {"type": "function_call", "id": "fc_1", "status": "completed", "call_id": "f", "name": "shell", "arguments": '{"command":["ls"]}'}
    rows = [
        _line("t1", "response_item", _ui("go")),
        _line("t2", "response_item", LOCAL_1),
        _line("t3", "response_item", CUSTOM_1),
        _line("t4", "response_item", fn),
    ]
    src = tmp_path / "rollout.jsonl"
    src.write_bytes(lines(rows))
    [t] = api.read([str(src)])
    from compactctl.model import ToolCall

    m = t.messages[1]
    local, custom, call = m.tool_calls
    args = ['{"command":["bash","-lc","echo 3"]}', '{"input":"*** Begin Patch\\ny\\n*** End Patch"}', '{"command":["pwd"]}']
    t.messages[1] = m.evolve(
        tool_calls=[ToolCall(c.id, c.name, a, dict(c.extra)) for c, a in zip((local, custom, call), args, strict=True)]
    )
    items = [o["payload"] for o in read_jsonl(api.write(t))]
    assert items[1] == {**LOCAL_1, "action": {**LOCAL_1["action"], "command": ["bash", "-lc", "echo 3"]}}
    assert items[2] == {**CUSTOM_1, "input": "*** Begin Patch\ny\n*** End Patch"}
    assert items[3] == {**fn, "arguments": '{"command":["pwd"]}'}
    assert list(items[3]) == list(fn)


def test_calls_of_other_kinds_keep_their_kind_in_a_new_compacted_history(tmp_path):
    """A head message's calls written into the replacement history of a new compacted line are in kind too."""
    [t] = api.read([str(_write(tmp_path, [_line("t1", "response_item", _ui("go")), _line("t2", "response_item", LOCAL_1)]))])
    from compactctl.formats.codex import items_of

    assert items_of(t.messages[1].evolve()) == [LOCAL_1]


def _write(tmp_path, rows):
    src = tmp_path / "rollout.jsonl"
    src.write_bytes(lines(rows))
    return src


def test_reasoning_with_only_encrypted_content_is_said_when_another_format_cannot_hold_it(tmp_path):
    """A reasoning item with no summary text, only `encrypted_content` (OpenAI's encrypted reasoning, which only the
    Responses API reads), was left out of an OpenAI chat or Anthropic output without a word, while one with a
    summary was carried (as `reasoning_content`) or said (Anthropic). It is said, and counted in `not_carried`;
    Codex keeps it (the rollout's own line), and its ciphertext is never written as text anywhere."""
    enc = {"type": "reasoning", "summary": [], "content": None, "encrypted_content": "gAAAENCRYPTED"}
    told = {"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Looking**"}], "encrypted_content": "gAAAX"}
    rows = [
        _line("t0", "session_meta", {"id": "s"}),
        _line("t1", "response_item", _ui("find the bug")),
        _line("t2", "response_item", enc),
        _line("t3", "response_item", _shell("c1", "cat io.py")),
        _line("t4", "response_item", _out("c1", "print(1)")),
        _line("t5", "response_item", told),
        _line("t6", "response_item", enc),
        _line("t7", "response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Found."}]}),
    ]
    src = tmp_path / "rollout.jsonl"
    src.write_bytes(lines(rows))
    said = "2 reasoning item with only encrypted content (no summary text; only the Responses API reads it)"
    for to in ("openai", "anthropic", "claude-code"):
        r = cli("convert", str(src), "--to", to)
        assert r.returncode == 0 and b"gAAAENCRYPTED" not in r.stdout, r.stderr
        assert said in r.stderr.decode(), (to, r.stderr)
        report = tmp_path / f"r.{to}.jsonl"  # convert writes no report; compact --to does
        assert cli("compact", str(src), "--to", to, "-o", str(tmp_path / "c.jsonl"), "--report", str(report)).returncode == 0
        assert orjson.loads(report.read_bytes())["not_carried"][said[2:]] == 2
    r = cli("convert", str(src), "--to", "codex")
    assert r.returncode == 0 and r.stdout == src.read_bytes() and b"encrypted" not in r.stderr, r.stderr
    plain = tmp_path / "plain.jsonl"
    plain.write_bytes(lines([rows[1], rows[3], rows[4], rows[5], rows[7]]))  # reasoning with a summary only
    r = cli("convert", str(plain), "--to", "openai")
    assert r.returncode == 0 and b"encrypted" not in r.stderr, r.stderr


def test_session_meta_round_trips_through_codex_and_is_said_where_another_format_leaves_it_out(tmp_path):
    """A rollout's `session_meta` line (its thread id, cwd, CLI version: what Codex CLI resumes a session by) is kept
    by `--to codex` and by compaction, first, byte for byte; written in another format, which has no place for it,
    it was left out without a word: it is said (`not_carried`). A source that has none gets none: Codex's session
    record needs a thread id, a cwd and a CLI version that compactctl would have to invent (README)."""
    meta = {"id": "01997e76-d124-7592-9cac-2ec05abbca08", "timestamp": "2025-09-25T01:22:20.068Z", "cwd": "/w", "cli_version": "0.40.0"}
    rows = [_line("2025-09-25T01:22:20.083Z", "session_meta", meta), _line("t1", "response_item", _ui("find the bug"))]
    for k in range(1, 30):
        rows.append(_line(f"t{k + 1}", "response_item", _shell(f"c{k}", f"cat f{k}.py")))
        rows.append(_line(f"t{k + 1}", "response_item", _out(f"c{k}", f"line of output {k}\n" * 80)))
    rows.append(_line("tz", "response_item", _ui("LAST ASK")))
    src = tmp_path / "rollout.jsonl"
    src.write_bytes(lines(rows))
    first = src.read_bytes().split(b"\n", 1)[0]
    r = cli("convert", str(src), "--to", "codex")
    assert r.returncode == 0 and r.stdout == src.read_bytes(), r.stderr
    # --refs: the sizes that make it summarize were set with references in the pruned outputs (no --archive here)
    r = cli(
        "compact", str(src), "--context-window", "3000", "--tail-tokens", "300", "--summary-min", "300", "--summary-max", "600", "--refs"
    )
    assert r.returncode == 0 and r.stdout.split(b"\n", 1)[0] == first, r.stderr
    assert b'"type":"compacted"' in r.stdout
    said = "1 session_meta line (the rollout's session id, cwd and CLI version: openai has no place for them; left out)"
    r = cli("convert", str(src), "--to", "openai")
    assert r.returncode == 0 and said in r.stderr.decode() and b"01997e76" not in r.stdout, r.stderr
    bare = tmp_path / "bare.jsonl"
    bare.write_bytes(lines(rows[1:]))
    r = cli("convert", str(bare), "--to", "openai")
    assert r.returncode == 0 and b"session_meta" not in r.stderr, r.stderr
    r = cli("convert", str(tmp_path / "rollout.jsonl"), "--to", "openai", "-o", str(tmp_path / "o.jsonl"))
    r = cli("convert", str(tmp_path / "o.jsonl"), "--to", "codex")
    assert r.returncode == 0 and b"session_meta" not in r.stdout and b"session_meta" not in r.stderr, r.stderr


@pytest.mark.parametrize(
    "first",
    [
        {"type": "message", "role": "user", "content": "Find the bug in io.py"},  # a typed message, its text a string
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Reading io.py"}], "encrypted_content": "gAAA"},
        {"type": "compacted", "message": "S", "replacement_history": [_ui("Find the bug in io.py"), _ui("S")]},  # bare compacted
    ],
    ids=["typed-message", "reasoning", "bare-compacted"],
)
def test_bare_items_are_told_by_their_first_line(tmp_path, first):
    """A file of bare Responses-API items whose first line is any item Codex writes is read as one (format codex)."""
    rows = [first, _shell("c1", "cat io.py"), _out("c1", "print(1)"), {"type": "message", "role": "user", "content": "LAST ASK"}]
    src = _write(tmp_path, rows)
    [t] = api.read([str(src)])
    assert t.format == "codex" and t.messages[-1].text() == "LAST ASK"
    assert [m.role for m in t.messages][-3:] == ["assistant", "tool", "user"]
    assert api.write(t) == src.read_bytes()


def test_a_local_shell_call_without_an_action_is_written_back_with_one(tmp_path):
    """A local_shell_call with no action (a cut line) renamed by repair (a duplicate id) is written with an exec action."""
    bad = {"type": "local_shell_call", "call_id": "d", "status": "completed", "action": None}
    rows = [
        _line("t1", "response_item", _ui("run both")),
        _line("t2", "response_item", LOCAL_1),
        _line("t3", "response_item", {"type": "function_call_output", "call_id": "d", "output": "1"}),
        _line("t4", "response_item", bad),
        _line("t5", "response_item", {"type": "function_call_output", "call_id": "d", "output": "2"}),
        _line("t6", "response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}),
    ]
    r = cli("repair", str(_write(tmp_path, rows)))
    assert r.returncode == 0, r.stderr
    renamed = [o["payload"] for o in read_jsonl(r.stdout)][3]
    assert renamed["type"] == "local_shell_call" and renamed["call_id"] not in ("d", None)
    assert renamed["action"] == {"type": "exec", "command": []}


def test_an_output_that_says_it_failed_is_an_error_result(tmp_path):
    """A function_call_output whose output is {"content", "success": false} is a failed call: an error result in
    Claude Code's lines (is_error), the one that succeeded is not."""
    rows = [
        _ui("run both"),
        _shell("c1", "make"),
        _shell("c2", "make test"),
        {"type": "function_call_output", "call_id": "c1", "output": {"content": "built", "success": True}},
        {"type": "function_call_output", "call_id": "c2", "output": {"content": "2 failed", "success": False}},
    ]
    src = _write(tmp_path, rows)
    [t] = api.read([str(src)])
    assert [(m.text(), m.is_error) for m in t.messages[2:]] == [("built", False), ("2 failed", True)]
    r = cli("convert", str(src), "--to", "claude-code")
    assert r.returncode == 0, r.stderr
    results = [b for o in read_jsonl(r.stdout) if isinstance(o["message"]["content"], list) for b in o["message"]["content"]]
    results = {b["tool_use_id"]: b.get("is_error", False) for b in results if b["type"] == "tool_result"}
    assert results == {"c1": False, "c2": True}


def test_encrypted_reasoning_in_a_compacted_lines_history_is_said_when_converted(tmp_path):
    """The encrypted-only reasoning items of a compacted line's replacement history are counted too."""
    enc = {"type": "reasoning", "summary": [], "encrypted_content": "gAAAENCRYPTED"}
    history = [_ui("old ask"), _shell("c0", "ls"), _out("c0", "a.py"), enc, _ui("summary S")]  # counted once, not by line
    rows = [
        _line("t0", "session_meta", {"id": "s"}),
        _line("t1", "compacted", {"message": "summary S", "replacement_history": history}),
        _line("t2", "response_item", _ui("new ask")),
        _line("t3", "response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}),
    ]
    r = cli("convert", str(_write(tmp_path, rows)), "--to", "openai")
    assert r.returncode == 0, r.stderr
    assert "1 reasoning item with only encrypted content" in r.stderr.decode() and b"gAAAENCRYPTED" not in r.stdout


def _spaced(rows):
    """Lines as Python's json writes them (", " and ": "): a line rewritten by compactctl would differ."""
    return b"".join(json.dumps(r).encode() + b"\n" for r in rows)


def test_a_stripped_call_loses_its_line_and_the_other_calls_keep_theirs(tmp_path):
    """repair --strip-unanswered removes a call without a result: its line goes, the call beside it stays in its own
    line (its timestamp), every other line as it was."""
    rows = [
        _line("t1", "response_item", _ui("run both")),
        _line("t2", "response_item", _shell("c1", "sleep 100")),
        _line("t3", "event_msg", {"type": "token_count"}),
        _line("t4", "response_item", _shell("c2", "ls")),
        _line("t5", "response_item", _out("c2", "a.py")),
        _line("t6", "response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}),
    ]
    r = cli("repair", "--strip-unanswered", str(_write(tmp_path, rows)))
    assert r.returncode == 0, r.stderr
    objs = read_jsonl(r.stdout)
    assert sorted(orjson.dumps(o) for o in objs) == sorted(orjson.dumps(o) for o in rows[:1] + rows[2:])


def test_a_changed_rollout_keeps_its_other_lines_as_they_were(tmp_path):
    """repair trimming the last answer's final space rewrites that line alone: the reasoning item of the same turn and
    the lines that are no message (turn_context, event_msg) stay, in place, byte for byte."""
    reasoning = {"type": "reasoning", "summary": [], "content": None, "encrypted_content": "gAAAENCRYPTED"}
    answer = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Found it. "}]}
    rows = [
        _line("t0", "session_meta", {"id": "s"}),
        _line("t1", "turn_context", {"cwd": "/w"}),
        _line("t2", "response_item", _ui("find the bug")),
        _line("t3", "event_msg", {"type": "user_message", "message": "find the bug"}),
        _line("t4", "event_msg", {"type": "token_count"}),
        _line("t5", "event_msg", {"type": "agent_reasoning"}),
        _line("t6", "response_item", reasoning),
        _line("t7", "response_item", answer),
        _line("t8", "event_msg", {"type": "token_count"}),
        _line("t9", "event_msg", {"type": "task_complete"}),
    ]
    src = tmp_path / "rollout.jsonl"
    src.write_bytes(_spaced(rows))
    r = cli("repair", str(src))
    assert r.returncode == 0, r.stderr
    before, after = src.read_bytes().split(b"\n"), r.stdout.split(b"\n")
    assert len(after) == len(before) and [k for k in range(len(before)) if after[k] != before[k]] == [7]
    assert orjson.loads(after[7])["payload"]["content"] == [{"type": "output_text", "text": "Found it."}]


def test_an_answer_over_two_message_items_is_written_once(tmp_path):
    """An assistant message item with no content and the one after it are one answer: changed, its text is written
    into the first item's line alone (it was written into both)."""
    rows = [
        _line("t1", "response_item", _ui("find the bug")),
        _line("t2", "response_item", {"type": "message", "role": "assistant", "content": []}),
        _line("t3", "response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Found it. "}]}),
    ]
    r = cli("repair", str(_write(tmp_path, rows)))
    assert r.returncode == 0, r.stderr
    out = tmp_path / "fixed.jsonl"
    out.write_bytes(r.stdout)
    [t] = api.read([str(out)])
    assert [m.text() for m in t.messages] == ["find the bug", "Found it."]


def test_an_untouched_compacted_line_is_kept_byte_for_byte_when_the_tail_changes(tmp_path):
    rows = [
        _line("t0", "session_meta", {"id": "s"}),
        _line("t1", "compacted", {"message": "summary S", "replacement_history": [_ui("old ask"), _ui("summary S")]}),
        _line("t2", "response_item", _ui("new ask")),
        _line("t3", "response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done. "}]}),
    ]
    src = tmp_path / "rollout.jsonl"
    src.write_bytes(_spaced(rows))
    r = cli("repair", str(src))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split(b"\n")[:3] == src.read_bytes().split(b"\n")[:3]
    assert r.stdout != src.read_bytes()


def test_a_rollout_without_messages_is_refused_in_another_format_at_its_first_line(tmp_path):
    """A rollout of session_meta, turn_context and event_msg lines alone has nothing another format could hold: the
    error names the file and the line the session starts at (it named its last line)."""
    rows = [_line("t0", "session_meta", {"id": "s"}), _line("t1", "turn_context", {"cwd": "/w"}), _line("t2", "event_msg", {"type": "x"})]
    src = _write(tmp_path, rows)
    r = cli("convert", str(src), "--to", "openai")
    assert r.returncode == 3 and f"{src}:1: no user or assistant message".encode() in r.stderr, r.stderr


def test_a_call_added_to_a_message_is_written_after_its_lines_in_the_rollouts_shape(tmp_path):
    """A call added to an assistant message (through the API) has no source line: it is written after the message's
    lines as a response_item of the rollout, with the message line's timestamp."""
    from compactctl.model import ToolCall

    rows = [
        _line("t1", "response_item", _ui("go")),
        _line("t2", "response_item", _shell("c1", "ls")),
        _line("t3", "response_item", _out("c1", "a.py")),
    ]
    [t] = api.read([str(_write(tmp_path, rows))])
    m = t.messages[1]
    t.messages[1] = m.evolve(tool_calls=[*m.tool_calls, ToolCall("c2", "shell", '{"command":["pwd"]}', {})])
    objs = read_jsonl(api.write(t))
    assert objs[:2] == rows[:2] and objs[3] == rows[2]
    assert objs[2] == _line(
        "t2", "response_item", {"type": "function_call", "name": "shell", "arguments": '{"command":["pwd"]}', "call_id": "c2"}
    )


def _rollout_with_events_inside_a_message() -> list[dict]:
    """A rollout whose assistant message (its text, then a call) has an event line between its two lines, as Codex
    logs the text's `agent_message` event as soon as the text is out."""

    def item(payload: dict) -> dict:
        return {"timestamp": "2026-01-01T00:00:00Z", "type": "response_item", "payload": payload}

    def event(payload: dict) -> dict:
        return {"timestamp": "2026-01-01T00:00:00Z", "type": "event_msg", "payload": payload}

    return [
        {"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "s1", "cwd": "/w"}},
        item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix io.py"}]}),
        item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me look."}]}),
        event({"type": "agent_message", "message": "Let me look."}),
        item({"type": "function_call", "call_id": "c1", "name": "shell", "arguments": '{"command":["cat","io.py"]}'}),
        event({"type": "token_count", "info": None}),
        item({"type": "function_call_output", "call_id": "c1", "output": "print(1)"}),
        item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}),
        item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Thanks. LAST ASK"}]}),
    ]


@pytest.mark.parametrize("changed", ["the message itself", "another message"])
def test_event_lines_between_a_messages_lines_stay_between_them(tmp_path, changed):
    """A written rollout keeps each event line where it stood among the lines of a message, whether that message
    was rewritten or kept as it was: before, they moved after the whole message, so a resumed session's history
    showed the agent's text event after its call."""
    rows = _rollout_with_events_inside_a_message()
    src = tmp_path / "rollout.jsonl"
    src.write_bytes(lines(rows))
    [t] = api.read([str(src)])
    assert [m.role for m in t.messages] == ["user", "assistant", "tool", "assistant", "user"]
    k = 1 if changed == "the message itself" else 3
    t.messages[k] = t.messages[k].evolve(content="Let me look at io.py." if k == 1 else "Done: io.py fixed.")
    out = read_jsonl(api.write(t))
    kinds = [(o["type"], o["payload"].get("type")) for o in out]
    assert kinds == [(o["type"], o["payload"].get("type")) for o in rows]  # every line, in its place
    assert out[3] == rows[3] and out[5] == rows[5]
    assert out[2]["payload"]["content"][0]["text"] == ("Let me look at io.py." if k == 1 else "Let me look.")
