"""The ShareGPT format (formats/sharegpt.py: Hermes/ShareGPT `conversations`, LlamaFactory's typed parts): which
records it takes, what it reads them as, and what it writes back."""

from __future__ import annotations

import orjson
import pytest

from compactctl import api
from compactctl.formats import sharegpt
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
