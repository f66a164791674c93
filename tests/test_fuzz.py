"""Pairing and repair under generated breakage (tests/fuzz.py), checked by an independent validator."""

from __future__ import annotations

import orjson

from compactctl import api

from . import fuzz
from .rows import T
from .validator import validate, validate_anthropic, validate_anthropic_records


def rows_of(t):
    return [orjson.loads(line) for line in api.write(t).splitlines()]


def call(cid, name, sig):
    c = {"type": "function", "function": {"name": name, "arguments": orjson.dumps({"sig": sig}).decode()}}
    if cid is not None:
        c["id"] = cid
    return c


def test_fuzz_1000_cases():
    tally = fuzz.run(1000)
    assert tally.ok, tally.failures[:5]
    assert tally.cases == 1000 and tally.results_checked > 5000
    assert set(tally.kinds) >= {
        "dup-id",
        "reused-id",
        "result-no-id",
        "call-no-id",
        "shuffled",
        "dropped",
        "orphan",
        "legacy",
        "interjection",
        "opening-assistant",
    }


def test_fuzz_compact_100_cases():
    tally = fuzz.run_compact(100)
    assert tally.ok, tally.failures[:5]
    assert tally.cases >= 90 and tally.results_checked > 10  # most results are summarized away


def test_validator_rejects_what_the_apis_reject():
    ok = [
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": None, "tool_calls": [call("a", "f", "S1")]},
        {"role": "tool", "tool_call_id": "a", "content": "r"},
    ]
    assert validate(ok) == []
    assert validate([ok[0], {**ok[1], "tool_calls": [call(None, "f", "S1")]}, ok[2]])  # call without id
    assert validate([ok[0], ok[1], {"role": "tool", "content": "r"}])  # result without id
    assert validate(ok + [{"role": "tool", "tool_call_id": "zz", "content": "r"}])  # orphan
    assert validate(ok + [ok[1], {"role": "tool", "tool_call_id": "a", "content": "r"}])  # id not unique
    assert validate([ok[0], ok[1], {"role": "user", "content": "x"}, ok[2]])  # result not right after
    assert validate(ok[1:])  # opens with the assistant
    for part in (  # Anthropic's blocks in OpenAI chat content (its parts: text, image_url, input_audio, file, refusal)
        {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
        {"type": "tool_result", "tool_use_id": "t1", "content": "r"},
        {"type": "thinking", "thinking": "hmm", "signature": "c2ln"},
        {"type": "redacted_thinking", "data": "ZW5j"},
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
    ):
        assert validate([{"role": "user", "content": [{"type": "text", "text": "see"}, part]}, *ok[1:]]), part
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    assert validate([{"role": "user", "content": [{"type": "text", "text": "see"}, image]}, *ok[1:]]) == []  # OpenAI's own
    rows = [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]
    for part in (  # OpenAI's parts in Anthropic content (its blocks: text, image with a source, document, ...)
        image,
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"}},
        {"type": "input_text", "text": "t"},
        {"type": "input_image", "image_url": "https://example.com/a.png"},
    ):
        assert validate_anthropic([{"role": "user", "content": [{"type": "text", "text": "see"}, part]}, rows[1]]), part
    assert validate_anthropic([rows[0], {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]}])
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [image]}]}
    assert validate_anthropic([rows[0], use, result, rows[1]])  # a tool result's content too
    assert validate_anthropic_records([{"system": [{"type": "text", "text": "s"}, image], "messages": rows}])  # the system prompt's
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    assert validate_anthropic([{"role": "user", "content": [{"type": "text", "text": "see"}, block]}, rows[1]]) == []  # Anthropic's own


def test_repeated_id_in_one_message_keeps_each_result_with_its_call():
    rows = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call("d", "read", "S1"), call("d", "read", "S2")]},
        {"role": "tool", "tool_call_id": "d", "content": "result of S1"},
        {"role": "tool", "tool_call_id": "d", "content": "result of S2"},
    ]
    out = rows_of(api.repair(T(rows))[0])
    assert validate(out) == []
    ids = [c["id"] for c in out[1]["tool_calls"]]
    assert len(set(ids)) == 2
    assert out[2]["tool_call_id"] == ids[0] and out[2]["content"] == "result of S1"
    assert out[3]["tool_call_id"] == ids[1] and out[3]["content"] == "result of S2"


def test_result_without_id_does_not_take_another_calls_result():
    rows = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call("a", "bash", "S1"), call("b", "bash", "S2")]},
        {"role": "tool", "content": "result of S1"},  # lost its id
        {"role": "tool", "tool_call_id": "b", "content": "result of S2"},
        {"role": "user", "content": "more"},
        {"role": "assistant", "content": None, "tool_calls": [call("c", "bash", "S3"), call("e", "bash", "S4")]},
        {"role": "tool", "tool_call_id": "e", "content": "result of S4"},
        {"role": "tool", "content": "result of S3"},
    ]  # out of order and without id: the one call left
    t = T(rows)
    assert {v.rule for v in api.check(t)} >= {"result-id"}
    out_t, _ = api.repair(t)
    out = rows_of(out_t)
    assert validate(out) == []
    assert [(r["tool_call_id"], r["content"]) for r in out if r["role"] == "tool"] == [
        ("a", "result of S1"),
        ("b", "result of S2"),
        ("c", "result of S3"),
        ("e", "result of S4"),
    ]
    again, st = api.repair(T(out))
    assert not st.changed and api.check(T(out)) == []


def test_check_rejects_call_without_id_and_result_without_id():
    rows = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call(None, "f", "S1")]},
        {"role": "tool", "content": "result of S1"},
    ]
    rules = {v.rule for v in api.check(T(rows))}
    assert "missing-id" in rules
    out = rows_of(api.repair(T(rows))[0])
    assert validate(out) == [] and out[2]["tool_call_id"] == out[1]["tool_calls"][0]["id"]
    rows2 = [rows[0], {"role": "assistant", "content": None, "tool_calls": [call("a", "f", "S1")]}, rows[2]]
    assert "result-id" in {v.rule for v in api.check(T(rows2))}


def test_legacy_function_call_survives_repair_and_compact(tmp_path):
    rows = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "function_call": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
        {"role": "function", "name": "get_weather", "content": "sunny, 21 C"},
        {"role": "assistant", "content": "It is sunny."},
        {"role": "assistant", "content": None, "function_call": {"name": "get_time", "arguments": "{}"}},
    ]  # unanswered
    t = T(rows)
    assert {v.rule for v in api.check(t)} == {"missing-result"}
    out_t, st = api.repair(t)
    out = rows_of(out_t)
    assert out[:4] == rows[:4]  # untouched, byte for byte
    assert out[5]["role"] == "function" and out[5]["name"] == "get_time"
    assert validate(out) == [] and api.check(T(out)) == []
    assert not api.repair(T(out))[1].changed


def test_a_tool_result_without_id_that_answers_a_legacy_call_becomes_its_function_result():
    # Pairing gives an id-less `tool` result to the nearest earlier call; for a legacy function_call the APIs want
    # a `function` message of its name there (a review found repair moving it beside the call as a `tool` message).
    rows = [
        {"role": "user", "content": "ask 0"},
        {"role": "assistant", "content": None, "function_call": {"name": "write", "arguments": '{"sig": "S1"}'}},
        {"role": "assistant", "content": "done 0"},
        {"role": "user", "content": "go on"},
        {"role": "tool", "content": "orphan output"},
    ]
    assert "result-id" in {v.rule for v in api.check(T(rows))}
    out = rows_of(api.repair(T(rows))[0])
    assert out[2] == {"role": "function", "content": "orphan output", "name": "write"}
    assert validate(out) == [] and api.check(T(out)) == []
    right_after = [*rows[:2], rows[4], rows[2]]
    out = rows_of(api.repair(T(right_after))[0])
    assert out[2] == {"role": "function", "content": "orphan output", "name": "write"} and validate(out) == []


def test_legacy_function_call_converts_to_anthropic_with_ids():
    rows = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "function_call": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
        {"role": "function", "name": "get_weather", "content": "sunny"},
    ]
    out = [orjson.loads(x) for x in api.write(T(rows), to="anthropic").splitlines()]
    use = out[1]["content"][0]
    res = out[2]["content"][0]
    assert use["type"] == "tool_use" and isinstance(use["id"], str) and res["tool_use_id"] == use["id"]
