"""Each format: detection, reading its oddities, lossless round trips, compaction written back in kind."""

from __future__ import annotations

import orjson
import pytest

from compactctl import api
from compactctl.describe import describe
from compactctl.formats.linelog import LineLog
from compactctl.model import is_summary

from .conftest import SAMPLES, cli, read_jsonl

TIGHT = ["--context-window", "4000", "--tail-tokens", "400", "--summary-min", "400", "--summary-max", "800"]
FORMAT_SAMPLES = {
    "openai": "long_session.jsonl",
    "anthropic": "anthropic_session.jsonl",
    "sharegpt": "hermes_trajectory.jsonl",
    "claude_code": "claude_code_session.jsonl",
    "codex": "codex_rollout.jsonl",
}


def lines(rows):
    return b"".join(orjson.dumps(r) + b"\n" for r in rows)


@pytest.mark.parametrize("fmt,sample", sorted(FORMAT_SAMPLES.items()))
def test_detect_round_trip_compact(fmt, sample, tmp_path):
    src = SAMPLES / sample
    [t] = api.read([str(src)])
    assert t.format == fmt
    assert api.write(t) == src.read_bytes()  # untouched: byte for byte
    r = cli("compact", str(src), *TIGHT)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out.jsonl"
    out.write_bytes(r.stdout)
    [back] = api.read([str(out)])
    assert back.format == fmt
    assert api.check(back) == []
    assert any(is_summary(m) for m in back.messages)
    assert back.messages[-1].text() == t.messages[-1].text()


@pytest.mark.parametrize("fmt", sorted(FORMAT_SAMPLES))
def test_convert_between_formats_keeps_the_conversation(fmt, tmp_path):
    [orig] = api.read([str(SAMPLES / "long_session.jsonl")])
    r = cli("convert", str(SAMPLES / "long_session.jsonl"), "--to", fmt.replace("_", "-"))
    assert r.returncode == 0, r.stderr
    back = cli("convert", "-", "--to", "openai", input=r.stdout)
    src = tmp_path / "back.jsonl"
    src.write_bytes(back.stdout)
    [t] = api.read([str(src)])

    prompts = {m.text() for m in orig.messages if m.role in ("system", "developer")}

    def flow(msgs):  # what the model sees, in order; message boundaries may differ (Responses items merge turns)
        out = []
        for m in msgs:
            if m.role in ("system", "developer") or m.text() in prompts:  # Claude Code: the prompt is a meta user line
                continue
            if m.text().strip():
                out.append((m.role if m.role != "tool" else "tool", m.text().strip()))
            out += [("call", c.id if fmt != "sharegpt" else None, c.name, c.arguments) for c in m.tool_calls]  # ShareGPT has no ids
        return out

    assert flow(t.messages) == flow(orig.messages)
    assert cli("repair", "--check", "-", input=back.stdout).returncode == 0


def test_converted_output_holds_only_what_the_apis_know(tmp_path):
    """`--to openai` from Codex wrote its `input_text` / `output_text` parts and `"content": []` beside calls; from
    Claude Code or Anthropic, a tool_use's own keys (`caller`) inside `tool_calls` and `_thinking_blocks`; from
    Hermes, `_from`, `_raw_call`, `_tagged`. `--to anthropic` from Codex: text blocks of type "text"."""
    use = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}, "caller": {"type": "direct"}}
    anth = tmp_path / "a.jsonl"
    anth.write_bytes(
        lines(
            [
                {"system": "s"},
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "x"}, use]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}]},
            ]
        )
    )
    for src in (SAMPLES / "codex_rollout.jsonl", SAMPLES / "hermes_trajectory.jsonl", anth):
        r = cli("convert", str(src), "--to", "openai")
        assert r.returncode == 0, r.stderr
        for m in read_jsonl(r.stdout):
            assert not [k for k in m if k.startswith("_")] and all(set(c) == {"id", "type", "function"} for c in m.get("tool_calls", []))
            assert not (m.get("tool_calls") and m.get("content") == [])
            parts = m["content"] if isinstance(m.get("content"), list) else []
            assert {p.get("type") for p in parts} <= {"text"}, (src.name, parts)
    r = cli("convert", str(SAMPLES / "codex_rollout.jsonl"), "--to", "anthropic")
    blocks = [b for m in read_jsonl(r.stdout) if isinstance(m.get("content"), list) for b in m["content"]]
    assert blocks and not {b.get("type") for b in blocks} & {"input_text", "output_text"}


def _cc_line(uuid, parent, role, content):
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "type": role,
        "message": {"role": role, "content": content},
        "uuid": uuid,
        "sessionId": "s",
    }


def test_what_repair_fixes_the_native_writers_keep_fixed(tmp_path):
    """repair's output passes --check in the input's own format: a Claude Code user line between a call and its
    result stays where repair moved it (the writer put it back by source position) and the parent chain goes
    through it; a Codex duplicate call id renamed by repair is renamed in its output line too (the output kept
    the old id); a Hermes <tool_response> that answers no call is gone from the rewritten turn (the source turn
    was written back whole)."""
    use = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "sleep 5"}}
    cc = [
        _cc_line("u1", None, "user", "run it"),
        _cc_line("u2", "u1", "assistant", [use]),
        _cc_line("u3", "u2", "user", "hurry up"),
        _cc_line("u4", "u3", "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "done"}]),
        _cc_line("u5", "u4", "assistant", [{"type": "text", "text": "ok"}]),
    ]
    codex = [
        {
            "timestamp": "2025-09-25T21:12:14.126Z",
            "type": "session_meta",
            "payload": {"id": "x", "cwd": "/p", "originator": "codex_cli", "cli_version": "0.40.0"},
        },
        {
            "timestamp": "2025-09-25T21:12:14.126Z",
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "run both"}]},
        },
        {
            "timestamp": "2025-09-25T21:12:14.126Z",
            "type": "response_item",
            "payload": {"type": "function_call", "name": "shell", "arguments": '{"command": ["bash", "-lc", "echo 1"]}', "call_id": "d"},
        },
        {
            "timestamp": "2025-09-25T21:12:14.126Z",
            "type": "response_item",
            "payload": {"type": "function_call", "name": "shell", "arguments": '{"command": ["bash", "-lc", "echo 2"]}', "call_id": "d"},
        },
        {
            "timestamp": "2025-09-25T21:12:14.126Z",
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "d", "output": '{"output": "1", "metadata": {"exit_code": 0}}'},
        },
        {
            "timestamp": "2025-09-25T21:12:14.126Z",
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "d", "output": '{"output": "2", "metadata": {"exit_code": 0}}'},
        },
        {
            "timestamp": "2025-09-25T21:12:14.126Z",
            "type": "response_item",
            "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
        },
    ]
    hermes = [
        {
            "conversations": [
                {"from": "human", "value": "go"},
                {"from": "gpt", "value": '<tool_call>\n{"name": "terminal", "arguments": {"command": "ls"}}\n</tool_call>'},
                {
                    "from": "tool",
                    "value": '<tool_response>\n{"name": "terminal", "content": "a"}\n</tool_response>\n<tool_response>\n{"name": "terminal", "content": "b"}\n</tool_response>',
                },
                {"from": "gpt", "value": "done"},
            ]
        },
    ]
    for name, rows in (("cc.jsonl", cc), ("codex.jsonl", codex), ("hermes.jsonl", hermes)):
        src = tmp_path / name
        src.write_bytes(lines(rows))
        assert cli("repair", "--check", str(src)).returncode == 6, name
        out = tmp_path / ("fixed-" + name)
        assert cli("repair", str(src), "-o", str(out)).returncode == 0
        r = cli("repair", "--check", str(out))
        assert r.returncode == 0, (name, r.stdout + r.stderr)
    chain = {d["uuid"]: d["parentUuid"] for d in read_jsonl((tmp_path / "fixed-cc.jsonl").read_bytes())}
    walk, at = [], "u5"
    while at is not None:
        walk.append(at)
        at = chain[at]
    assert walk == ["u5", "u3", "u4", "u2", "u1"]  # every line on the chain Claude Code follows


def test_claude_code_merges_split_messages_and_keeps_non_message_lines(tmp_path):
    env = {"sessionId": "s1", "cwd": "/x", "version": "2.0", "isSidechain": False, "userType": "external"}
    rows = [
        {"type": "file-history-snapshot", "messageId": "m0", "snapshot": {}},
        {**env, "type": "user", "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": "Fix it. Never push to main."}},
        {
            **env,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "message": {"id": "msg_1", "role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "sig"}]},
        },
        {
            **env,
            "type": "assistant",
            "uuid": "a2",
            "parentUuid": "a1",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}}],
            },
        },
        {**env, "type": "progress", "uuid": "p1", "parentUuid": "a2", "data": {"type": "hook_progress"}},
        {
            **env,
            "type": "assistant",
            "uuid": "a3",
            "parentUuid": "p1",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "/x/a.py"}}],
            },
        },
        {
            **env,
            "type": "user",
            "uuid": "r1",
            "parentUuid": "a3",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "make: *** [all] Error 2", "is_error": True}],
            },
            "toolUseResult": {"stdout": "x"},
        },
        {
            **env,
            "type": "user",
            "uuid": "r2",
            "parentUuid": "r1",
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "print(1)"}]},
        },
        {**env, "type": "user", "uuid": "u2", "parentUuid": "r2", "message": {"role": "user", "content": "ok, continue"}},
    ]
    src = tmp_path / "session.jsonl"
    src.write_bytes(lines(rows))
    [t] = api.read([str(src)])
    assert t.format == "claude_code" and [m.role for m in t.messages] == ["user", "assistant", "tool", "tool", "user"]
    assert [c.id for c in t.messages[1].tool_calls] == ["t1", "t2"] and t.messages[1].reasoning == "hmm"
    assert t.messages[2].is_error is True
    assert api.write(t) == src.read_bytes()

    assert "error" in describe(t.messages[1].tool_calls[0], t.messages[2])


def test_claude_code_compaction_records_and_chain(tmp_path):
    r = cli("compact", str(SAMPLES / "claude_code_session.jsonl"), *TIGHT, "--report", str(tmp_path / "r.jsonl"))
    assert "records_dropped" in read_jsonl((tmp_path / "r.jsonl").read_bytes())[0]
    objs = read_jsonl(r.stdout)
    boundary = [o for o in objs if o.get("subtype") == "compact_boundary"]
    summary = [o for o in objs if o.get("isCompactSummary")]
    assert len(boundary) == 1 and len(summary) == 1 and boundary[0]["parentUuid"] is None
    seen = set()
    for o in objs:
        if o.get("parentUuid") is not None:
            assert o["parentUuid"] in seen, "parentUuid points at a line not written before it"
        if o.get("uuid"):
            seen.add(o["uuid"])
    by = {o["uuid"]: o for o in objs if o.get("uuid")}
    cur, chain = objs[-1], []
    while cur is not None:
        chain.append(cur)
        cur = by.get(cur.get("parentUuid"))
    assert chain[-1] is boundary[0] and summary[0] in chain  # the resumed context: boundary -> ... -> summary -> tail


def test_codex_output_json_exit_code_and_compacted_record(tmp_path):
    rows = [
        {"timestamp": "t0", "type": "session_meta", "payload": {"id": "s"}},
        {
            "timestamp": "t1",
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "run the tests"}]},
        },
        {
            "timestamp": "t2",
            "type": "response_item",
            "payload": {"type": "reasoning", "summary": [], "content": None, "encrypted_content": "gAAA"},
        },
        {
            "timestamp": "t3",
            "type": "response_item",
            "payload": {"type": "function_call", "name": "shell", "arguments": '{"command":["bash","-lc","pytest"]}', "call_id": "c1"},
        },
        {"timestamp": "t4", "type": "event_msg", "payload": {"type": "token_count"}},
        {
            "timestamp": "t5",
            "type": "response_item",
            "payload": {
                "type": "function_call_output",
                "call_id": "c1",
                "output": '{"output":"E   boom\\n1 failed","metadata":{"exit_code":1}}',
            },
        },
    ]
    src = tmp_path / "rollout.jsonl"
    src.write_bytes(lines(rows))
    [t] = api.read([str(src)])
    assert t.format == "codex" and [m.role for m in t.messages] == ["user", "assistant", "tool"]

    assert "ran `pytest` -> exit 1" in describe(t.messages[1].tool_calls[0], t.messages[2])
    assert api.write(t) == src.read_bytes()
    r = cli("compact", str(SAMPLES / "codex_rollout.jsonl"), *TIGHT)
    objs = read_jsonl(r.stdout)
    compacted = [o for o in objs if o.get("type") == "compacted"]
    assert len(compacted) == 1 and is_summary_text(compacted[0]["payload"]["message"])
    assert compacted[0]["payload"]["replacement_history"][-1]["role"] == "user"


def is_summary_text(s: str) -> bool:
    from compactctl.model import Message

    return is_summary(Message(role="user", content=s))


def test_sharegpt_function_call_variant_and_order_matching(tmp_path):
    rec = {
        "conversations": [
            {"from": "human", "value": "weather in Paris and Rome?"},
            {
                "from": "gpt",
                "value": '<think>\ntwo calls\n</think>\n<tool_call>\n{"name": "weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "weather", "arguments": {"city": "Rome"}}\n</tool_call>',
            },
            {"from": "tool", "value": '<tool_response>\n{"temp": 20}\n</tool_response>\n<tool_response>\n{"temp": 25}\n</tool_response>'},
            {"from": "gpt", "value": "Paris 20, Rome 25."},
        ],
        "id": "x",
    }
    alt = {
        "conversations": [
            {"from": "human", "value": "find"},
            {"from": "function_call", "value": '{"name": "search", "arguments": {"q": 1}}'},
            {"from": "observation", "value": '{"hits": 3}'},
            {"from": "gpt", "value": "3 hits"},
        ],
        "tools": "[]",
    }
    src = tmp_path / "sg.jsonl"
    src.write_bytes(lines([rec, alt]))
    a, b = api.read([str(src)])
    assert [m.role for m in a.messages] == ["user", "assistant", "tool", "tool", "assistant"]
    assert [m.tool_call_id for m in a.messages[2:4]] == [c.id for c in a.messages[1].tool_calls]
    assert a.messages[1].reasoning == "two calls"
    assert [m.role for m in b.messages] == ["user", "assistant", "tool", "assistant"]
    assert api.write(a) + api.write(b) == src.read_bytes()


def test_anthropic_dataset_with_system_and_errors(tmp_path):
    rec = {
        "system": "be brief",
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "ok"}, {"type": "tool_use", "id": "x", "name": "Bash", "input": {"command": "ls"}}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "x", "content": "denied", "is_error": True},
                    {"type": "text", "text": "hmm"},
                ],
            },
        ],
        "meta": 1,
    }
    src = tmp_path / "a.jsonl"
    src.write_bytes(lines([rec]))
    [t] = api.read([str(src)])
    assert t.format == "anthropic" and [m.role for m in t.messages] == ["system", "user", "assistant", "tool", "user"]
    assert api.write(t) == src.read_bytes()
    changed = t.evolve(messages=[m.evolve() for m in t.messages])
    assert orjson.loads(api.write(changed)) == rec  # rebuilt from the model: equal as JSON


def test_a_first_record_of_text_only_does_not_decide_the_format(tmp_path):
    """A plain first message reads alike in OpenAI chat and Anthropic: the first record that can tell decides, for
    a session and for a dataset, through the library and the CLI (an Anthropic session without a system line was
    read as OpenAI chat: its tool_use block was text, repair found nothing and `--check` said ok)."""
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]}
    session = tmp_path / "s.jsonl"
    session.write_bytes(lines([{"role": "user", "content": "go"}, use, {"role": "assistant", "content": "done"}]))
    dataset = tmp_path / "d.jsonl"
    first = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    dataset.write_bytes(lines([first, {"messages": [{"role": "user", "content": "go"}, use]}]))
    for src, n in ((session, 1), (dataset, 2)):
        ts = api.read([str(src)])
        assert [t.format for t in ts] == ["anthropic"] * n
        assert any(c.id == "t1" for m in ts[-1].messages for c in m.tool_calls)
        r = cli("repair", "--check", str(src))
        assert r.returncode == 6 and "missing-result" in r.stdout.decode() + r.stderr.decode(), src
    plain = tmp_path / "p.jsonl"  # nothing tells: OpenAI chat, as before
    plain.write_bytes(lines([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]))
    assert [t.format for t in api.read([str(plain)])] == ["openai"]


def test_mixed_or_unknown_format_names_the_line(tmp_path):
    src = tmp_path / "x.jsonl"
    src.write_bytes(b'{"hello": 1}\n')
    r = cli("repair", str(src))
    assert r.returncode == 3 and f"{src}:1: cannot tell the transcript format" in r.stderr.decode()
    assert "(keys: hello)" in r.stderr.decode()
    src.write_bytes(b"{}\n")  # it said "(keys: )"
    assert "from this record (an empty object); use --from" in cli("repair", str(src)).stderr.decode()
    bad = tmp_path / "y.jsonl"
    bad.write_bytes((SAMPLES / "codex_rollout.jsonl").read_bytes()[:2000] + b"\n")
    r = cli("repair", str(bad))
    assert r.returncode == 3 and f"{bad}:" in r.stderr.decode()


def test_special_output_paths_are_not_replaced(tmp_path):
    import os
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []

    def drain():
        with open(fifo, "rb") as f:
            got.append(f.read())

    reader = threading.Thread(target=drain)
    reader.start()
    r = cli("repair", str(SAMPLES / "long_session.jsonl"), "-o", str(fifo))
    reader.join(timeout=60)
    assert r.returncode == 0 and fifo.is_fifo() and got[0] == (SAMPLES / "long_session.jsonl").read_bytes()


def test_linelog_kept_for_line_formats():
    [t] = api.read([str(SAMPLES / "claude_code_session.jsonl")])
    assert isinstance(t.native, LineLog)


def test_a_summary_merged_into_a_tool_calling_turn_keeps_that_turn_in_a_claude_code_log(tmp_path):
    """Head ending with a user ask and a tail opening with an assistant call: assembly merges the summary into
    that turn; the log writer puts the summary on its own line and keeps the turn and its call."""
    from compactctl.formats.linelog import split_merged
    from compactctl.phases.assemble import MERGED, assemble

    [t] = api.read([str(SAMPLES / "claude_code_session.jsonl")])
    assert t.messages[16].role == "user" and t.messages[18].tool_calls
    out, _ = assemble(t, 17, 18, "## Active Task\ncheck 2.4.1")
    merged = out.messages[17]
    assert MERGED in merged.text() and merged.tool_calls
    frame, rest = split_merged(merged)
    assert rest is not None and MERGED not in frame.text() + rest.text() and rest.tool_calls == merged.tool_calls
    written = tmp_path / "c.jsonl"
    written.write_bytes(api.write(out))
    [back] = api.read([str(written)])
    assert api.check(back) == [] and any(c.name == "terminal" for m in back.messages for c in m.tool_calls)


def test_a_later_system_message_joins_the_anthropic_system_prompt(tmp_path):
    """Anthropic has one system prompt: a system message after the first turn joins it (it was dropped)."""
    src = tmp_path / "mid.jsonl"
    rows = [
        {"role": "system", "content": "top rules"},
        {"role": "user", "content": "hi"},
        {"role": "system", "content": "mid system note"},
        {"role": "assistant", "content": "ok"},
    ]
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    [t] = api.read([str(src)])
    lines = [orjson.loads(ln) for ln in api.write(t, "anthropic").splitlines()]
    assert lines[0] == {"system": "top rules\n\nmid system note"} and [x["role"] for x in lines[1:]] == ["user", "assistant"]


def test_converted_messages_are_in_the_target_apis_form(tmp_path):
    """--to anthropic: images as `image` blocks, no keys the Messages API refuses, a null tool result as "";
    --to openai: images as `image_url`, and an image in a tool result as a line (OpenAI tool results hold text)."""
    rows = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}}],
        },
        {"role": "assistant", "content": "ok", "refusal": None, "thought": "t", "action": "ls"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "shot", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": None},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]},
    ]
    src = tmp_path / "c.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    [t] = api.read([str(src)])
    out = [orjson.loads(ln) for ln in api.write(t, "anthropic").splitlines()]
    assert out[0]["content"][1] == {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}}
    assert out[1] == {"role": "assistant", "content": "ok"}
    assert out[3]["content"] == [{"type": "tool_result", "tool_use_id": "c1", "content": ""}]
    assert out[4]["content"] == [{"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}]
    anth = tmp_path / "a.jsonl"
    anth.write_bytes(api.write(t, "anthropic"))
    [a] = api.read([str(anth)], fmt="anthropic")
    back = [orjson.loads(ln) for ln in api.write(a, "openai").splitlines()]
    assert back[0]["content"] == rows[0]["content"] and back[4]["content"] == rows[4]["content"]
    res = tmp_path / "r.jsonl"
    res.write_bytes(
        b"\n".join(
            orjson.dumps(r)
            for r in [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "shot", "input": {}}]},
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t1",
                            "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAA"}}],
                        }
                    ],
                },
            ]
        )
        + b"\n"
    )
    [r] = api.read([str(res)])
    tool = [orjson.loads(ln) for ln in api.write(r, "openai").splitlines()][-1]
    assert tool["role"] == "tool" and tool["content"] == [{"type": "text", "text": "[image: image/png]"}]


def test_codex_and_uploaded_images_convert_to_what_each_api_takes(tmp_path):
    """A Codex `input_image` (refused by both chat APIs) becomes the target's image; an Anthropic image of an
    uploaded file (no URL OpenAI could take) becomes a line that says it was there, never an empty URL."""
    from compactctl.formats.parts import port as _part_for

    codex = {"type": "input_image", "image_url": "data:image/png;base64,QUJD"}
    assert _part_for(codex, "openai", "user") == {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}}
    assert _part_for(codex, "anthropic", "user") == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"},
    }
    upload = {"type": "image", "source": {"type": "file", "file_id": "file_011"}}
    assert _part_for(upload, "openai", "user") == {"type": "text", "text": "[image: file_011]"}


def _anthropic_rows(data: bytes) -> list[dict]:
    return [r for r in map(orjson.loads, data.splitlines()) if "role" in r]


def test_anthropic_text_before_tool_results_is_reported_and_written_after_them(tmp_path):
    """The Messages API wants a user turn after tool_use blocks to begin with their results: text before them is a
    `result-order` violation, and repair writes the results first (written as read, the file was refused)."""
    from .validator import validate_anthropic

    rows = [
        {"role": "user", "content": "list files"},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "ok"}, {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "text", "text": "here"}, {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}],
        },
        {"role": "assistant", "content": "done"},
    ]
    src = tmp_path / "a.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    [t] = api.read([str(src)])
    assert validate_anthropic(rows) and [v.rule for v in api.check(t)] == ["result-order"]
    fixed, st = api.repair(t)
    assert st.results_put_first == 1 and api.check(fixed) == []
    out = _anthropic_rows(api.write(fixed))
    assert validate_anthropic(out) == [] and out[2]["content"] == [rows[2]["content"][1], rows[2]["content"][0]]
    assert out[:2] == rows[:2] and out[3] == rows[3]  # the rest as it came
    # results first, then text: as the API wants it, written back byte for byte
    ok = [*rows[:2], {"role": "user", "content": [rows[2]["content"][1], rows[2]["content"][0]]}, rows[3]]
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in ok))
    [t2] = api.read([str(src)])
    assert api.check(t2) == [] and api.write(api.repair(t2)[0]) == src.read_bytes()


def test_anthropic_results_split_over_two_user_rows_with_text_between_are_written_once(tmp_path):
    """Results of one turn's calls in two user rows, text after the first: repair placed the second result after
    the first, and the writer wrote the first row as it came (with the text) and the text again after it."""
    from .validator import validate_anthropic

    rows = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}},
                {"type": "tool_use", "id": "toolu_2", "name": "pwd", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}, {"type": "text", "text": "note"}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "/x"}]},
        {"role": "assistant", "content": "done"},
    ]
    src = tmp_path / "s.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    [t] = api.read([str(src)])
    assert validate_anthropic(rows) and [v.rule for v in api.check(t)] == ["placement"]
    out = _anthropic_rows(api.write(api.repair(t)[0]))
    assert validate_anthropic(out) == []
    assert sum(1 for r in out for b in (r["content"] if isinstance(r["content"], list) else []) if b.get("text") == "note") == 1


def test_an_empty_tool_calls_list_is_reported_and_left_out(tmp_path):
    """OpenAI refuses `"tool_calls": []` ("empty array. Expected an array with minimum length 1"): --check says
    `empty-calls`, repair writes the message without it, and the fast path does not pass the line through."""
    from compactctl.phases.rules import check

    rows = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Here you go.", "tool_calls": []}]
    for layout in ("session", "dataset"):
        src = tmp_path / f"{layout}.jsonl"
        data = b"".join(orjson.dumps(r) + b"\n" for r in rows) if layout == "session" else orjson.dumps({"messages": rows}) + b"\n"
        src.write_bytes(data)
        [t] = api.read([str(src)])
        assert [v.rule for v in check(t)] == ["empty-calls"]
        fixed, st = api.repair(t)
        assert st.empty_calls_removed == 1 and check(fixed) == []
        assert b"tool_calls" not in api.write(fixed)
        out = cli("repair", str(src))
        assert out.returncode == 0 and b"tool_calls" not in out.stdout, layout


def test_a_refusal_or_an_audio_reply_is_not_an_empty_message(tmp_path):
    """An assistant turn with `content: null` and a `refusal` (or an `audio` reply) says something: repair removed
    it (two user turns in a row); written as Anthropic, the refusal is its text."""
    rows = [
        {"role": "user", "content": "bomb?"},
        {"role": "assistant", "content": None, "refusal": "I cannot help with that."},
        {"role": "user", "content": "then say hi"},
        {"role": "assistant", "content": None, "audio": {"id": "audio_1"}},
        {"role": "user", "content": "thanks"},
    ]
    src = tmp_path / "r.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    [t] = api.read([str(src)])
    assert api.check(t) == []
    assert cli("repair", str(src)).stdout == src.read_bytes()
    out = [orjson.loads(x) for x in api.write(t, "anthropic").splitlines()]
    assert out[1] == {"role": "assistant", "content": "I cannot help with that."}
    assert out[3]["content"] and "refusal" not in out[1] and "audio" not in out[3]


def test_gemini_content_as_a_list_of_parts_is_its_text(tmp_path):
    doc = {
        "sessionId": "s1",
        "messages": [
            {"type": "user", "content": [{"text": "Fix the bug in parser.py"}]},
            {"type": "gemini", "content": [{"text": "Looking."}, {"inlineData": {"mimeType": "image/png", "data": "iVBOR"}}]},
            {"type": "user", "content": [{"text": "LAST ASK"}, {"text": "please"}]},
        ],
    }
    src = tmp_path / "g.json"
    src.write_bytes(orjson.dumps(doc))
    [t] = api.read([str(src)])
    assert [m.text() for m in t.messages] == ["Fix the bug in parser.py", "Looking.\n[image/png]", "LAST ASK\nplease"]


def test_sharegpt_parallel_function_calls_are_calls_each(tmp_path):
    """LlamaFactory writes parallel calls as a JSON list in one `function_call` turn: they read as one call
    each (they were one call named `unknown` whose arguments were the list), and come back as the list."""
    from .validator import validate_anthropic

    calls = [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_weather", "arguments": {"city": "Rome"}}]
    conv = [
        {"from": "human", "value": "weather in Paris and Rome?"},
        {"from": "function_call", "value": orjson.dumps(calls).decode()},
        {"from": "observation", "value": "Paris 20C"},
        {"from": "observation", "value": "Rome 25C"},
        {"from": "gpt", "value": "Paris 20C, Rome 25C."},
    ]
    src = tmp_path / "sg.jsonl"
    src.write_bytes(orjson.dumps({"conversations": conv}) + b"\n")
    [t] = api.read([str(src)])
    assert [(c.name, c.arguments) for c in t.messages[1].tool_calls] == [
        ("get_weather", '{"city":"Paris"}'),
        ("get_weather", '{"city":"Rome"}'),
    ]
    assert api.check(t) == [] and api.write(api.repair(t)[0]) == src.read_bytes()
    rows = orjson.loads(api.write(t, "anthropic"))["messages"]
    assert validate_anthropic(rows) == []
    changed = t.evolve(messages=[t.messages[0], t.messages[1].evolve(), *t.messages[2:]])  # rebuilt, not passed through
    assert orjson.loads(orjson.loads(api.write(changed))["conversations"][1]["value"]) == calls


def test_a_call_whose_arguments_are_not_an_object_is_a_valid_tool_use(tmp_path):
    rows = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "[1, 2]"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    src = tmp_path / "a.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    [t] = api.read([str(src)])
    out = [orjson.loads(x) for x in api.write(t, "anthropic").splitlines()]
    assert out[1]["content"][0]["input"] == {"arguments": [1, 2]}


def test_a_chat_message_in_a_claude_code_log_is_a_data_error_not_a_silent_loss(tmp_path):
    """A line of another format (role, no type) after Claude Code lines was neither read nor reported: its ask was
    not the last ask. It is a data error naming its line; --on-error skip leaves it out and says so."""
    rows = [
        {"type": "user", "message": {"role": "user", "content": "hello"}, "uuid": "u1", "parentUuid": None, "sessionId": "s"},
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
            "uuid": "u2",
            "parentUuid": "u1",
            "sessionId": "s",
        },
        {"role": "user", "content": "LAST ASK from another format"},
    ]
    src = tmp_path / "mix.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    r = cli("repair", str(src))
    assert r.returncode == 3 and b"mix.jsonl:3" in r.stderr
    r = cli("repair", str(src), "--on-error", "skip", "--rejects", str(tmp_path / "rej.jsonl"))
    assert r.returncode == 0 and b"skipped" in r.stderr and (tmp_path / "rej.jsonl").read_bytes() == orjson.dumps(rows[2]) + b"\n"


@pytest.mark.parametrize(
    "call",
    [
        # The person cancelled the call before it ran (Gemini CLI records it so).
        {"status": "cancelled", "response": {"error": "[Operation Cancelled] Reason: User cancelled the operation."}},
        {"status": "error", "response": {"error": "Path must be absolute: ."}},
        {"response": {"error": "File not found: a.py"}},  # no status: the response alone says it
    ],
)
def test_gemini_a_call_that_did_not_succeed_is_an_error(tmp_path, call):
    """A cancelled Gemini CLI call read as a success ("`python3` ok" in the summary's actions): its status
    and a response that is only an error make the result an error."""
    result = [{"functionResponse": {"id": "c1", "name": "run_shell_command", "response": call["response"]}}]
    tc = {"id": "c1", "name": "run_shell_command", "args": {"command": "python3"}, "result": result}
    if "status" in call:
        tc["status"] = call["status"]
    ok = {"id": "c2", "name": "run_shell_command", "args": {"command": "ls"}, "status": "success"}
    ok["result"] = [{"functionResponse": {"id": "c2", "name": "run_shell_command", "response": {"output": "a.py"}}}]
    doc = {"sessionId": "s1", "messages": [{"type": "user", "content": "run it"}, {"type": "gemini", "content": "", "toolCalls": [tc, ok]}]}
    src = tmp_path / "g.json"
    src.write_bytes(orjson.dumps(doc))
    [t] = api.read([str(src)])
    results = [m for m in t.messages if m.role == "tool"]
    assert [bool(m.is_error) for m in results] == [True, False]
    line = describe(t.messages[1].tool_calls[0], results[0])
    assert "-> error" in line and "-> ok" not in line, line
