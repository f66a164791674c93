"""LlamaFactory's typed-parts records ({"messages": [{"role", "content": [{"type", "value"}]}], "tools"}), read by the
sharegpt format: calls are tool_call parts, results are tool messages without ids (answered in order)."""

from __future__ import annotations

import orjson
import pytest

from compactctl import api
from compactctl.errors import DataError
from compactctl.model import is_summary

from .conftest import CORPUS, cli, needs_corpus, read_jsonl

TOOLS = orjson.dumps(
    [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in ("get_weather", "get_time")]
).decode()


def text(v: str) -> dict:
    return {"type": "text", "value": v}


def call(name: str, **args) -> dict:
    return {"type": "tool_call", "value": orjson.dumps({"name": name, "arguments": args}).decode()}


def turn(k: int, result: str = "sunny") -> list[dict]:
    """An ask, two calls, their two results (one tool message each, as LlamaFactory writes them) and the answer."""
    return [
        {"role": "user", "content": [text(f"Weather and time in city {k}?")]},
        {
            "role": "assistant",
            "content": [
                {"type": "reasoning", "value": f"I need both tools for city {k}."},
                call("get_weather", city=f"c{k}"),
                call("get_time", city=f"c{k}"),
            ],
        },
        {"role": "tool", "content": [text(f'{{"city": "c{k}", "weather": "{result}"}}')]},
        {"role": "tool", "content": [text(f'{{"city": "c{k}", "time": "12:0{k % 10}"}}')]},
        {"role": "assistant", "content": [{"type": "reasoning", "value": "Both came back."}, text(f"City {k}: {result}, 12:0{k % 10}.")]},
    ]


def record(*turns: list[dict]) -> dict:
    msgs = [{"role": "system", "content": [text("You answer with tools.")]}]
    for t in turns:
        msgs += t
    return {"messages": msgs, "tools": TOOLS}


def write(tmp_path, *records: dict, name: str = "lf.jsonl"):
    path = tmp_path / name
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def test_typed_parts_are_read_as_calls_reasoning_and_results(tmp_path):
    [t] = api.read([str(write(tmp_path, record(turn(1))))])
    assert t.format == "sharegpt" and t.layout == "dataset"
    roles = [m.role for m in t.messages]
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant"]
    calls = t.messages[2].tool_calls
    assert [(c.name, orjson.loads(c.arguments)) for c in calls] == [("get_weather", {"city": "c1"}), ("get_time", {"city": "c1"})]
    assert t.messages[2].reasoning == "I need both tools for city 1." and not t.messages[2].text()
    assert [m.tool_call_id for m in t.messages[3:5]] == [c.id for c in calls] and len({c.id for c in calls}) == 2
    assert t.messages[3].text() == '{"city": "c1", "weather": "sunny"}'
    assert t.messages[5].text() == "City 1: sunny, 12:01." and t.messages[5].reasoning == "Both came back."
    assert api.check(t) == []


def test_repair_keeps_the_results(tmp_path):
    """They were orphan results of OpenAI chat (the calls were text parts): repair deleted both."""
    src = write(tmp_path, record(turn(1), turn(2)))
    r = cli("repair", str(src))
    assert r.returncode == 0, r.stderr
    assert r.stdout == src.read_bytes()
    assert cli("repair", "--check", str(src)).returncode == 0


def test_round_trip_is_byte_identical(tmp_path):
    raw = b'{"messages": [{"role": "user", "content": [{"type": "text", "value": "hi"}]}, {"role": "assistant", "content": [{"type": "tool_call", "value": "{\\"name\\": \\"get_time\\", \\"arguments\\": {}}"}]}, {"role": "tool", "content": [{"type": "text", "value": "noon"}], "loss_weight": 0.0}], "tools": "[]"}\n'
    src = tmp_path / "spaced.jsonl"
    src.write_bytes(raw + orjson.dumps(record(turn(1))) + b"\n")
    ts = api.read([str(src)])
    assert b"".join(api.write(t) for t in ts) == raw + orjson.dumps(record(turn(1))) + b"\n"
    assert cli("convert", str(src)).stdout == src.read_bytes()


def test_one_tool_message_with_a_result_per_call_answers_them_all(tmp_path):
    """A lone tool message after several calls that holds a JSON array of one result per call (as in
    reason_tool_use_demo_50): one result each, written back as it was."""
    msgs = turn(1)[:3] + turn(1)[4:]
    msgs[2] = {"role": "tool", "content": [text('[{"name": "get_weather", "content": "sunny"}, {"name": "get_time", "content": "12:01"}]')]}
    rec = record(msgs)
    [t] = api.read([str(write(tmp_path, rec))])
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    assert [orjson.loads(m.text())["name"] for m in t.messages[3:5]] == ["get_weather", "get_time"]
    assert api.check(t) == [] and api.write(t) == orjson.dumps(rec) + b"\n"
    msgs[2]["content"] = [text('[{"name": "get_time", "content": "12:01"}, {"name": "get_weather", "content": "sunny"}]')]
    [t] = api.read([str(write(tmp_path, record(msgs)))])  # items that name other calls: one result, for the first call
    assert [m.role for m in t.messages].count("tool") == 1


def test_compact_keeps_every_call_paired_and_writes_typed_parts(tmp_path):
    big = "rain and wind " * 120
    src = write(tmp_path, record(*[turn(k, big) for k in range(12)]))
    [orig] = api.read([str(src)])
    r = cli("compact", str(src), "--context-window", "4000", "--tail-tokens", "400", "--summary-min", "400", "--summary-max", "800")
    assert r.returncode == 0, r.stderr
    [rec] = read_jsonl(r.stdout)
    assert set(rec) == {"messages", "tools"} and rec["tools"] == TOOLS
    for m in rec["messages"]:  # the same shape: typed parts with their text under "value"
        assert set(m) <= {"role", "content"} and m["role"] in ("system", "user", "assistant", "tool")
        assert m["content"] and all(set(p) == {"type", "value"} and p["type"] in ("text", "reasoning", "tool_call") for p in m["content"])
    msgs = rec["messages"]
    for i, m in enumerate(msgs):  # every call answered by the tool messages right after it, one each
        n = sum(p["type"] == "tool_call" for p in m["content"])
        if n:
            assert [x["role"] for x in msgs[i + 1 : i + 1 + n]] == ["tool"] * n
            assert i + 1 + n == len(msgs) or msgs[i + 1 + n]["role"] != "tool"
    out = tmp_path / "out.jsonl"
    out.write_bytes(r.stdout)
    [back] = api.read([str(out)])
    assert back.format == "sharegpt" and api.check(back) == []
    assert any(is_summary(m) for m in back.messages) and back.messages[-1].text() == orig.messages[-1].text()
    assert cli("repair", "--check", str(out)).returncode == 0


@pytest.mark.parametrize("to", ["openai", "anthropic"])
def test_conversion_gives_what_the_apis_accept(to, tmp_path):
    src = write(tmp_path, record(turn(1), turn(2)))
    r = cli("convert", str(src), "--to", to)
    assert r.returncode == 0, r.stderr
    out = tmp_path / f"{to}.jsonl"
    out.write_bytes(r.stdout)
    assert cli("repair", "--check", str(out)).returncode == 0
    assert b'"value"' not in r.stdout
    [t] = api.read([str(out)])
    assert t.format == to and sum(len(m.tool_calls) for m in t.messages) == 4 and sum(m.role == "tool" for m in t.messages) == 4
    if to == "openai":
        [rec] = read_jsonl(r.stdout)
        calls = [c for m in rec["messages"] for c in m.get("tool_calls", [])]
        assert [m["tool_call_id"] for m in rec["messages"] if m["role"] == "tool"] == [c["id"] for c in calls]
        assert rec["messages"][2]["reasoning_content"] == "I need both tools for city 1."


@needs_corpus
def test_corpus_demo_keeps_its_results(tmp_path):
    src = CORPUS / "sharegpt" / "llamafactory" / "reason_tool_use_demo_50.jsonl"
    rows = read_jsonl(src.read_bytes())
    r = cli("repair", str(src))
    assert r.returncode == 0, r.stderr
    out = read_jsonl(r.stdout)
    assert len(out) == len(rows) == 50
    assert out[1] == rows[1]  # record 2: 9 messages, two calls answered (repair kept 7)
    for a, b in zip(rows, out, strict=True):  # no result lost; calls still in flight at the end get a stub result
        tools = lambda rec: [m for m in rec["messages"] if m["role"] == "tool"]  # noqa: E731
        assert tools(a) == tools(b)[: len(tools(a))]


def test_restore_gives_the_record_back(tmp_path):
    big = "rain and wind " * 120
    rec = record(*[turn(k, big) for k in range(12)])
    src = write(tmp_path, rec)
    out, arch = tmp_path / "c.jsonl", tmp_path / "a.jsonl"
    r = cli("compact", str(src), "--context-window", "4000", "-o", str(out), "--archive", str(arch))
    assert r.returncode == 0, r.stderr
    assert read_jsonl(out.read_bytes()) != [rec]
    back = cli("restore", str(out), "--archive", str(arch))
    assert back.returncode == 0, back.stderr
    assert read_jsonl(back.stdout) == [rec]  # in its own shape (it came back as "conversations" beside the compacted messages)


def test_restore_gives_back_a_tool_message_holding_one_result_per_call_as_it_was_written(tmp_path):
    """The array of results was split into one result per call, then written again by orjson, without the spaces
    json.dumps had put in (reason_tool_use_demo_50): the restored record's text was not the original's."""
    array = '[{"name": "get_weather", "content": "%s"}, {"name": "get_time", "content": "12:01"}]'
    turns = []
    for k in range(10):
        t = turn(k)
        turns.append(t[:2] + [{"role": "tool", "content": [text(array % (f"rain {k} " * (200 if k < 9 else 1)))]}] + t[4:])
    rec = record(*turns)
    src = write(tmp_path, rec)
    out, arch = tmp_path / "c.jsonl", tmp_path / "a.jsonl"
    r = cli("compact", str(src), "--context-window", "1200", "-o", str(out), "--archive", str(arch))
    assert r.returncode == 0 and b": compacted:" in r.stderr, r.stderr  # the old results summarized, then put back
    back = cli("restore", str(out), "--archive", str(arch))
    assert back.returncode == 0, back.stderr
    assert read_jsonl(back.stdout) == [rec]


def test_restore_gives_back_a_tool_message_holding_one_result_per_call_that_prune_cut_in_the_kept_tail(tmp_path):
    """The last turn's array of results is in the kept tail, its first item pruned (compact prunes the protected
    part too when the plan cannot fit): its original came from the archive with the ids of the input, its neighbour
    and its calls from the output with the output's (the turns numbered anew after the summary), so the two results
    did not look like the answers to those calls and were given back as two tool messages, not the array."""
    array = '[{"name": "get_weather", "content": "%s"}, {"name": "get_time", "content": "12:01"}]'
    turns = []
    for k in range(10):
        t = turn(k)
        turns.append(t[:2] + [{"role": "tool", "content": [text(array % (f"rain {k} " * 200))]}] + t[4:])
    rec = record(*turns)
    src = write(tmp_path, rec)
    out, arch = tmp_path / "c.jsonl", tmp_path / "a.jsonl"
    r = cli("compact", str(src), "--context-window", "1200", "-o", str(out), "--archive", str(arch))
    assert r.returncode == 0 and b": compacted:" in r.stderr, r.stderr
    tail = read_jsonl(out.read_bytes())[0]["messages"][-2]
    assert tail["role"] == "tool" and "[ref " in tail["content"][0]["value"]  # the array, its first item a digest
    back = cli("restore", str(out), "--archive", str(arch))
    assert back.returncode == 0, back.stderr
    assert back.stdout == src.read_bytes()


@pytest.mark.parametrize("shape", ["typed", "conversations"])
def test_the_records_system_key_is_its_system_prompt(shape, tmp_path):
    """LlamaFactory's records carry the system prompt under "system" (its ShareGPT and typed forms alike). It was kept
    as an unknown key: converted to Anthropic it became "system": null (the prompt lost), to OpenAI a key no API reads."""
    prompt = "You answer with tools, in French."
    if shape == "typed":
        rec = {"system": prompt, **record(*[turn(k, "rain and wind " * 120) for k in range(12)])}
        rec["messages"] = rec["messages"][1:]  # the prompt only under "system"
    else:
        conv = [
            t
            for k in range(12)
            for t in ({"from": "human", "value": f"ask {k} " * 80}, {"from": "gpt", "value": (f"answer {k} " * 80).strip()})
        ]
        rec = {"conversations": conv, "system": prompt, "tools": TOOLS}
    src = write(tmp_path, rec)
    [t] = api.read([str(src)])
    assert t.format == "sharegpt" and t.messages[0].role == "system" and t.messages[0].text() == prompt
    assert cli("repair", str(src)).stdout == src.read_bytes()  # as it came
    anth = read_jsonl(cli("convert", str(src), "--to", "anthropic").stdout)[0]
    assert anth["system"] == prompt and all(m["role"] != "system" for m in anth["messages"])
    oai = read_jsonl(cli("convert", str(src), "--to", "openai").stdout)[0]
    assert "system" not in oai and oai["messages"][0] == {"role": "system", "content": prompt}
    arch = tmp_path / "a.jsonl"
    r = cli("compact", str(src), "--context-window", "3000", "--archive", str(arch))
    assert r.returncode == 0, r.stderr
    (tmp_path / "c.jsonl").write_bytes(r.stdout)
    assert cli("restore", str(tmp_path / "c.jsonl"), "--archive", str(arch)).stdout == src.read_bytes()
    [out] = read_jsonl(r.stdout)
    turns = out["messages" if shape == "typed" else "conversations"]
    assert out["system"].startswith(prompt) and len(turns) < len(rec["messages" if shape == "typed" else "conversations"])
    assert all(m.get("role", m.get("from")) != "system" for m in turns)  # the prompt (and compaction's note) not twice


def test_a_developer_message_is_written_as_the_system_prompt(tmp_path):
    """`--to sharegpt` wrote a developer message as {"from": "developer"}, which no reader (ours either) takes."""
    src = tmp_path / "dev.jsonl"
    src.write_bytes(
        orjson.dumps(
            {
                "messages": [
                    {"role": "developer", "content": "be brief"},
                    {"role": "user", "content": "q"},
                    {"role": "assistant", "content": "a"},
                ]
            }
        )
        + b"\n"
    )
    r = cli("convert", str(src), "--to", "sharegpt")
    assert r.returncode == 0 and read_jsonl(r.stdout)[0]["conversations"][0] == {"from": "system", "value": "be brief"}
    (tmp_path / "back.jsonl").write_bytes(r.stdout)
    assert cli("repair", "--check", str(tmp_path / "back.jsonl")).returncode == 0


def test_a_dataset_of_several_records_is_not_merged_into_one_session(tmp_path):
    """Claude Code and Codex hold one session per file: a dataset's records were written as one merged session
    (their keys lost, exit 0). A record alone converts."""
    rows = [{"id": k, "messages": [{"role": "user", "content": f"q{k}"}, {"role": "assistant", "content": f"a{k}"}]} for k in "AB"]
    src = tmp_path / "ds.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    for to in ("codex", "claude-code"):
        r = cli("convert", str(src), "--to", to, "-o", str(tmp_path / f"{to}.jsonl"))
        assert r.returncode == 2 and b"cannot be written as " + to.encode() in r.stderr and not (tmp_path / f"{to}.jsonl").exists()
    one = tmp_path / "one.jsonl"
    one.write_bytes(orjson.dumps(rows[0]) + b"\n")
    assert cli("convert", str(one), "--to", "codex").returncode == 0


def test_an_openai_records_system_key_is_not_written_as_null(tmp_path):
    """To Anthropic, a record with a "system" key and no system message got "system": null (the key's text lost)."""
    src = tmp_path / "s.jsonl"
    src.write_bytes(
        orjson.dumps({"system": "META", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}) + b"\n"
    )
    r = cli("convert", str(src), "--from", "openai", "--to", "anthropic")
    assert r.returncode == 0 and read_jsonl(r.stdout)[0]["system"] == "META"


def test_the_tools_text_names_its_tools_as_the_mended_calls(tmp_path):
    """LlamaFactory keeps its tool definitions as a JSON text: a name the APIs refuse (`get.weather`) was mended in the
    calls and left in that text, so `--to openai` defined a tool OpenAI refuses, one the calls no longer named."""
    from .validator import validate, validate_anthropic_records

    rec = record(turn(1))
    rec["tools"] = rec["tools"].replace("get_weather", "get.weather")
    for m in rec["messages"]:
        for p in m["content"]:
            if p["type"] == "tool_call":
                p["value"] = p["value"].replace("get_weather", "get.weather")
    [t] = api.read([str(write(tmp_path, rec))])
    assert sorted(v.rule for v in api.check(t)) == ["bad-name"] * 2  # the call and the definition
    out, st = api.repair(t)
    assert api.check(out) == [] and st.names_mended == 2
    [got] = read_jsonl(api.write(out))
    assert [d["function"]["name"] for d in orjson.loads(got["tools"])] == ["get_weather", "get_time"]
    assert api.repair(out)[0] is out  # idempotent
    [oa] = read_jsonl(api.write(out, "openai"))
    assert validate(oa["messages"]) == [] and [d["function"]["name"] for d in oa["tools"]] == ["get_weather", "get_time"]
    assert validate_anthropic_records(read_jsonl(api.write(out, "anthropic"))) == []
    # the transcript read is not changed (`rec`, written to a file, never reached compactctl)
    assert orjson.loads(t.metadata["tools"])[0]["function"]["name"] == "get.weather"


def changed(t, k: int, content):
    """The transcript with message k's content changed (as a phase changes it: no longer written as it was read)."""
    msgs = list(t.messages)
    msgs[k] = msgs[k].evolve(content=content)
    return t.evolve(messages=msgs)


def test_a_message_whose_content_is_a_string_is_one_text_part(tmp_path):
    """LlamaFactory also takes a plain string as a message's content: read as its text, written back as it was."""
    rec = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [text("hello")]}], "tools": "[]"}
    src = write(tmp_path, rec)
    [t] = api.read([str(src)])
    assert [(m.role, m.text()) for m in t.messages] == [("user", "hi"), ("assistant", "hello")]
    assert api.write(t) == src.read_bytes() and cli("convert", str(src)).stdout == src.read_bytes()
    [got] = read_jsonl(api.write(changed(t, 1, "hello!")))  # the untouched message as it was
    assert got["messages"] == [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [text("hello!")]}]


@pytest.mark.parametrize(
    ("content", "what"),
    [
        ([text("q"), call("get_time")], "message 0: a tool_call part in a user message"),
        (["q"], r"message 0: content must be a list of typed parts \(\{type, value\}\)"),
        ([text("q"), {"value": "untyped"}], r"message 0: content must be a list of typed parts \(\{type, value\}\)"),
        (7, r"message 0: content must be a list of typed parts \(\{type, value\}\)"),
    ],
)
def test_a_malformed_message_is_refused_naming_file_and_line(tmp_path, content, what):
    """A call in a user message, or content that is not typed parts: refused, naming the file and line (not read as
    something else, no traceback)."""
    src = write(tmp_path, {"messages": [{"role": "user", "content": content}, {"role": "assistant", "content": [text("a")]}]})
    with pytest.raises(DataError, match=rf"^{src}:1: {what}$"):
        api.read([str(src)])
    r = cli("repair", "--check", str(src))
    assert r.returncode == 3 and f"{src}:1: ".encode() in r.stderr and b"Traceback" not in r.stderr


def test_an_assistant_message_of_calls_alone_has_no_content_and_an_empty_one_has_empty_text(tmp_path):
    """Calls alone: no content (null to OpenAI, beside its tool_calls); no parts at all: empty text, as written."""
    from .validator import validate

    msgs = turn(1)[:2] + [{"role": "tool", "content": [text("sunny")]}, {"role": "tool", "content": [text("12:01")]}]
    msgs[1]["content"] = [call("get_weather", city="c1"), call("get_time", city="c1")]
    [t] = api.read([str(write(tmp_path, record(msgs)))])
    assert t.messages[2].content is None and t.messages[2].tool_calls
    [oa] = read_jsonl(api.write(t, "openai"))
    assert validate(oa["messages"]) == [] and oa["messages"][2]["content"] is None
    [t] = api.read([str(write(tmp_path, record([*msgs, {"role": "assistant", "content": []}])))])
    assert t.messages[-1].content == ""


def test_a_lone_result_of_one_call_holding_a_json_array_is_that_array(tmp_path):
    """The array is split into results only when there are several calls to answer: after one call, the array is the
    result; changed, it is still written as its text (not wrapped in another array)."""
    msgs = [
        {"role": "user", "content": [text("list?")]},
        {"role": "assistant", "content": [call("get_time")]},
        {"role": "tool", "content": [text('["noon"]')]},
        {"role": "assistant", "content": [text("noon")]},
    ]
    [t] = api.read([str(write(tmp_path, record(msgs)))])
    assert [m.role for m in t.messages].count("tool") == 1 and t.messages[3].text() == '["noon"]'
    [got] = read_jsonl(api.write(changed(t, 3, "12:00")))
    assert got["messages"][3] == {"role": "tool", "content": [text("12:00")]}


def test_a_changed_message_with_an_image_keeps_its_text(tmp_path):
    """Text beside an image is read as OpenAI chat parts ({type: text, text}): written anew, as a text part again."""
    img = {"type": "image_url", "value": "https://example.com/cat.png"}
    msgs = [{"role": "user", "content": [text("what is this?"), img]}, {"role": "assistant", "content": [text("a cat")]}]
    [t] = api.read([str(write(tmp_path, record(msgs)))])
    assert t.messages[1].content == [{"type": "text", "text": "what is this?"}, {"type": "image_url", "image_url": {"url": img["value"]}}]
    [got] = read_jsonl(api.write(changed(t, 1, [*t.messages[1].content, {"type": "text", "text": " and this?"}])))
    assert got["messages"][1] == {"role": "user", "content": [text("what is this?"), img, text(" and this?")]}
