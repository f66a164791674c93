"""repair's rules (phases/rules.py): which rule `check` (`repair --check`) reports for a transcript, at which
message, and what it says. Transcripts built by hand, each breaking one rule (or keeping one just inside it)."""

from __future__ import annotations

import orjson

from compactctl import api
from compactctl.model import Message, ToolCall, Transcript
from compactctl.phases.rules import check

from .conftest import SAMPLES


def rules(t: Transcript) -> list[tuple[int, str]]:
    return [(v.index, v.rule) for v in check(t)]


def chat(*msgs: Message, **kw) -> Transcript:
    return Transcript(list(msgs), id="t", **kw)


U = Message(role="user", content="go")
A = Message(role="assistant", content="done")


def test_an_empty_session_log_read_is_valid_and_one_built_empty_is_not():
    """A Claude Code file of summary lines alone (read: it has its source lines) is an empty session, valid as it
    is; the same format with no source lines (built, or emptied by code) has no message an API could be sent."""
    [t] = api.read([str(SAMPLES / "claude_code_session.jsonl")])
    read_empty = t.evolve(messages=[m for m in t.messages if m.role == "system"])
    assert read_empty.native is not None and check(read_empty) == []
    assert rules(chat(format="claude_code")) == [(0, "no-messages")]
    assert rules(chat(Message(role="system", content="be brief"), format="codex")) == [(0, "no-messages")]
    # Only the session logs: a dataset record read with no message is no empty session
    assert rules(t.evolve(messages=[], format="openai")) == [(0, "no-messages")]


def test_a_bad_tool_name_in_the_records_tools_is_said_at_message_0_cut_to_80_characters():
    name = "x" * 70 + " " + "y" * 100  # a space: not 1-64 letters, digits, _ or -
    t = chat(U, A, metadata={"tools": [{"type": "function", "function": {"name": name}}], "tool_choice": {"name": "ok_name"}})
    [v] = check(t)
    assert (v.index, v.rule) == (0, "bad-name")
    assert v.detail == f"the record's tools or tool_choice name {name[:80]!r}, not 1-64 letters, digits, _ or -"
    assert str(v) == f"t: message 0: bad-name: {v.detail}"


def test_the_first_turn_not_the_users_is_said_at_its_own_index():
    t = chat(Message(role="system", content="be brief"), Message(role="developer", content="x"), A, U)
    [v] = check(t)
    assert (v.index, v.rule, v.detail) == (2, "first-role", "first non-system message is assistant, not user")


def test_content_no_api_takes_is_bad_content_not_an_empty_message():
    """Built through the library (the readers refuse it): a dict, a number, a tuple is neither text nor parts."""
    for odd in ({"type": "text", "text": "hi"}, 0, ()):
        assert rules(chat(U, Message(role="assistant", content=odd))) == [(1, "bad-content")]
        assert rules(chat(Message(role="user", content=odd), A)) == [(0, "bad-content")]


def test_an_anthropic_records_null_system_is_said_at_message_0():
    t = chat(U, A, format="anthropic", metadata={"system": None})
    assert [(v.index, v.rule, v.detail) for v in check(t)] == [(0, "blank-system", 'the record\'s "system" is null (Anthropic refuses it)')]
    assert check(t.evolve(metadata={})) == check(t.evolve(metadata={"system": "be brief"})) == []
    assert check(t.evolve(format="openai")) == []  # only Anthropic's record has a "system"


def test_text_before_the_tool_results_of_an_anthropic_user_turn_is_result_order(tmp_path):
    """The Messages API wants a user turn's tool_result blocks first: text before them is said, and repair mends it."""
    rec = {
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}]},
            {
                "role": "user",
                "content": [{"type": "text", "text": "here"}, {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a"}],
            },
            {"role": "assistant", "content": "ok"},
        ]
    }
    p = tmp_path / "a.jsonl"
    p.write_bytes(orjson.dumps(rec) + b"\n")
    [t] = api.read([str(p)])
    assert t.format == "anthropic" and rules(t) == [(3, "result-order")]
    assert check(api.repair(t)[0]) == []
    rec["messages"][2]["content"].reverse()  # the result first: as the API wants it
    p.write_bytes(orjson.dumps(rec) + b"\n")
    assert check(api.read([str(p)])[0]) == []


def test_a_calls_bad_tool_name_is_said_cut_to_80_characters():
    name = "run " + "z" * 120
    t = chat(
        U,
        Message(role="assistant", content=None, tool_calls=[ToolCall("c1", name, "{}")]),
        Message(role="tool", content="x", tool_call_id="c1"),
        A,
    )
    [v] = check(t)
    assert (v.index, v.rule, v.detail) == (1, "bad-name", f"call 'c1': tool name {name[:80]!r} is not 1-64 letters, digits, _ or -")


def test_an_unknown_role_is_said_with_the_role():
    [v] = check(chat(U, Message(role="function", content="out"), A))
    assert (v.index, v.rule, v.detail) == (1, "unknown-role", "role 'function' is none of system, developer, user, assistant, tool")
