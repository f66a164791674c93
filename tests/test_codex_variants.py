"""Codex rollouts and bare Responses-API items in the shapes the API allows beside the ones Codex writes:
messages without "type" (EasyInputMessage), rollouts that already hold a `compacted` line, and calls of
other kinds (local_shell_call, custom_tool_call) rewritten in kind."""

from __future__ import annotations

import orjson

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
