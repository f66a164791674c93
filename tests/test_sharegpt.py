"""The ShareGPT format (formats/sharegpt.py: Hermes/ShareGPT `conversations`, LlamaFactory's typed parts): which
records it takes, what it reads them as, and what it writes back."""

from __future__ import annotations

import dataclasses

import orjson
import pytest

from compactctl import api
from compactctl.errors import DataError
from compactctl.formats import sharegpt
from compactctl.model import Message, ToolCall
from compactctl.phases.repair import STUB


def lines(tmp_path, *records: dict, name: str = "d.jsonl"):
    path = tmp_path / name
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def test_a_record_with_anthropic_blocks_is_anthropics_even_with_a_value_text_part(tmp_path):
    """A text part under "value" is LlamaFactory's form, and a slip repair mends in an Anthropic record: a record
    with a block only Anthropic writes (tool_use, tool_result, an image with a source) is Anthropic's, wherever the
    block stands, and is not read as LlamaFactory's typed parts."""
    slip = {"role": "user", "content": [{"type": "text", "value": "go"}]}
    use = {
        "role": "assistant",
        "content": [{"type": "text", "value": "on it"}, {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}],
    }
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a"}]}
    image = {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}]}
    done = {"role": "assistant", "content": "ok"}
    for msgs in ([slip, use, result, done], [slip, done, image, done]):
        rec = {"system": "s", "messages": msgs}
        assert sharegpt.sniff(rec) is None
        [t] = api.read([str(lines(tmp_path, rec))])
        assert t.format == "anthropic" and "value-text" in {v.rule for v in api.check(t)}
    assert sharegpt.sniff({"messages": [slip, done]}) == "dataset"  # value parts alone: LlamaFactory's


def calls_turn(frm: str, *names: str) -> dict:
    """A turn of calls: Hermes' <tool_call> blocks in a gpt turn, or a function_call turn holding a list of them."""
    if frm == "function_call":
        return {"from": frm, "value": orjson.dumps([{"name": n, "arguments": {}} for n in names]).decode()}
    return {"from": frm, "value": "\n".join(f'<tool_call>\n{{"name": "{n}", "arguments": {{}}}}\n</tool_call>' for n in names)}


@pytest.mark.parametrize("calls,results", [("gpt", "observation"), ("function_call", "function"), ("gpt", "tool")])
def test_results_repair_adds_to_an_observation_record_read_back_one_each_without_tags(tmp_path, calls, results):
    """Three calls, one result: repair adds a result for each of the other two. In a record whose results are
    `observation` or `function` turns (one result each, read as their text: no <tool_response> tags), the two were
    written as ONE such turn holding both in tags: read back it was one result whose text held the tags, and the last
    call had none (`repair --check` on repair's own output: missing-result, exit 6). A lone added result was written
    in tags too, which read back as part of its text. They are one turn each now, as the record writes results."""
    rec = {"conversations": [{"from": "human", "value": "go"}, calls_turn(calls, "ls", "pwd", "id")]}
    rec["conversations"] += [{"from": results, "value": "a b"}, {"from": "gpt", "value": "done"}]
    src = lines(tmp_path, rec)
    [t] = api.read([str(src)])
    out = tmp_path / "out.jsonl"
    out.write_bytes(api.write(api.repair(t)[0]))
    [back] = api.read([str(out)])
    assert api.check(back) == []
    tools = [m for m in back.messages if m.role == "tool"]
    assert [m.text() for m in tools] == ["a b", STUB, STUB]
    conv = orjson.loads(out.read_bytes())["conversations"]
    if results == "tool":  # Hermes' tool turn: the results in tags, one turn (as it writes parallel results)
        assert [c["from"] for c in conv] == ["human", calls, "tool", "gpt"]
    else:
        assert [c["from"] for c in conv] == ["human", calls, results, results, results, "gpt"]
        assert "<tool_response>" not in out.read_text()


@pytest.mark.parametrize("n", [1, 2, 3])
def test_a_function_call_turns_list_rebuilt_is_written_as_the_list_it_came_as(tmp_path, n):
    """LlamaFactory's parallel calls, a JSON list in one function_call turn (one call in a list too): rebuilt with its
    calls the same (an evolved message, as a phase makes), the turn is the list as written, its spacing kept."""
    calls = [{"name": "get_weather", "arguments": {"city": c}} for c in ("Paris", "Rome", "Oslo")[:n]]
    listed = orjson.dumps(calls, option=orjson.OPT_INDENT_2).decode()  # spacing the writer would not give
    conv = [{"from": "human", "value": "weather?"}, {"from": "function_call", "value": listed}]
    conv += [{"from": "observation", "value": f"{c['arguments']['city']} 20C"} for c in calls] + [{"from": "gpt", "value": "ok"}]
    [t] = api.read([str(lines(tmp_path, {"conversations": conv}))])
    assert [c.arguments for c in t.messages[1].tool_calls] == [orjson.dumps(c["arguments"]).decode() for c in calls]
    rebuilt = t.evolve(messages=[t.messages[0], t.messages[1].evolve(), *t.messages[2:]])
    assert orjson.loads(api.write(rebuilt))["conversations"] == conv
    one = dataclasses.replace(t.messages[1].tool_calls[0], arguments='{"city":"Lima"}')  # as prune cuts arguments
    changed = t.messages[1].evolve(tool_calls=[one, *t.messages[1].tool_calls[1:]])  # the list written anew
    value = orjson.loads(api.write(t.evolve(messages=[t.messages[0], changed, *t.messages[2:]])))["conversations"][1]["value"]
    assert orjson.loads(value) == [{"name": "get_weather", "arguments": {"city": "Lima"}}, *calls[1:]]


@pytest.mark.parametrize("value", [5, None, ["a"], {"text": "a"}])
def test_a_turn_whose_value_is_not_text_is_an_error_naming_file_line_and_turn(tmp_path, value):
    src = lines(tmp_path, {"conversations": [{"from": "human", "value": "go"}, {"from": "gpt", "value": value}]})
    with pytest.raises(DataError, match=rf"^{src}:1: turn 1: 'value' must be a string$"):
        api.read([str(src)])


@pytest.mark.parametrize("system", ["", None, 5, ["be brief"]])
def test_a_records_system_that_is_no_text_is_no_system_message_and_is_kept(tmp_path, system):
    """The record's "system" is its system prompt when it is text; empty, null or not text it is no message (an empty
    system message, or content no API takes), and comes back as it was."""
    rec = {"system": system, "conversations": [{"from": "human", "value": "go"}, {"from": "gpt", "value": "ok"}]}
    [t] = api.read([str(lines(tmp_path, rec))])
    assert [m.role for m in t.messages] == ["user", "assistant"] and api.check(t) == []
    rebuilt = t.evolve(messages=[m.evolve() for m in t.messages])
    assert orjson.loads(api.write(rebuilt)) == rec


@pytest.mark.parametrize(
    "user,assistant,tool", [("human", "gpt", "tool"), ("user", "assistant", "observation"), ("user", "gpt", "function")]
)
def test_messages_a_phase_adds_are_written_with_the_role_names_the_record_uses(tmp_path, user, assistant, tool):
    conv = [{"from": "system", "value": "s"}, {"from": user, "value": "go"}, calls_turn("gpt", "ls")]
    conv += [{"from": tool, "value": "a b"}, {"from": assistant, "value": "ok"}]
    [t] = api.read([str(lines(tmp_path, {"conversations": conv}))])
    made = [Message(role="user", content="and?"), Message(role="assistant", content=None, tool_calls=[ToolCall("n1", "pwd", "{}")])]
    made += [Message(role="tool", content="/w", tool_call_id="n1"), Message(role="assistant", content="more")]
    out = orjson.loads(api.write(t.evolve(messages=[*t.messages, *made])))["conversations"]
    assert out[: len(conv)] == conv
    assert [(c["from"], c["value"]) for c in out[len(conv) :]] == [
        (user, "and?"),
        (assistant, '<tool_call>\n{"name":"pwd","arguments":{}}\n</tool_call>'),
        (tool, "<tool_response>\n/w\n</tool_response>" if tool == "tool" else "/w"),
        (assistant, "more"),
    ]


@pytest.mark.parametrize("value", ["plain out", "<tool_response>\n  out\n</tool_response>", '<tool_response>{"a": 1}</tool_response>'])
def test_an_untouched_tool_turn_of_one_result_is_written_as_it_came(tmp_path, value):
    """A record written anew (another message changed) keeps an untouched tool turn as it was: one result, tagged or
    not, whatever its spacing (re-tagged, an untagged result would gain tags)."""
    conv = [
        {"from": "human", "value": "go"},
        calls_turn("gpt", "ls"),
        {"from": "tool", "value": value, "id": 7},
        {"from": "gpt", "value": "ok"},
    ]
    [t] = api.read([str(lines(tmp_path, {"conversations": conv}))])
    changed = t.evolve(messages=[*t.messages[:-1], t.messages[-1].evolve(content="ok!")])
    assert orjson.loads(api.write(changed))["conversations"][2] == conv[2]
