"""--to: what each target format holds of a transcript from another, and what it cannot hold said aloud.

Faults found by a read-only hunt (sixteenth session), each with a test that failed before its fix."""

from __future__ import annotations

import orjson
import pytest

from compactctl import api
from compactctl.model import is_summary

from .conftest import CORPUS, SAMPLES, cli, needs_corpus, write_jsonl


def _pairs(t) -> list[tuple[str, str]]:
    """(call name, result text) for every answered call, by id."""
    calls = {c.id: c.name for m in t.messages for c in m.tool_calls}
    return [(calls.get(m.tool_call_id, "?"), m.text()) for m in t.messages if m.role == "tool"]


def _convert(tmp_path, rows_or_path, to: str, *more: str):
    src = rows_or_path if not isinstance(rows_or_path, list) else write_jsonl(tmp_path / "in.jsonl", [{"messages": rows_or_path}])
    out = tmp_path / f"out.{to}.jsonl"
    r = cli("convert", str(src), "--to", to, "-o", str(out), *more)
    assert r.returncode == 0, r.stderr
    return out, r.stderr.decode()


PARALLEL = [
    {"role": "user", "content": "two"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "cA", "type": "function", "function": {"name": "read_a", "arguments": "{}"}},
            {"id": "cB", "type": "function", "function": {"name": "read_b", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "tool_call_id": "cB", "content": "B-result"},  # finished first
    {"role": "tool", "tool_call_id": "cA", "content": "A-result"},
    {"role": "assistant", "content": "done"},
]


def test_sharegpt_writes_parallel_results_in_the_order_of_their_calls(tmp_path):
    """ShareGPT pairs results with calls by position: results logged as they finished went to the wrong calls."""
    out, _ = _convert(tmp_path, PARALLEL, "sharegpt")
    back = api.read([str(out)])[0]
    assert sorted(_pairs(back)) == [("read_a", "A-result"), ("read_b", "B-result")]


@needs_corpus
def test_claude_code_parallel_results_keep_their_calls_in_sharegpt(tmp_path):
    src = CORPUS / "claude-code" / "spotter" / "tool_heavy.jsonl"
    out, _ = _convert(tmp_path, src, "sharegpt")
    before, after = api.read([str(src)])[0], api.read([str(out)])[0]
    assert sorted(_pairs(after)) == sorted(_pairs(before))


def _records(path) -> list:
    return [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]


SYSTEM_MID = [
    {"role": "system", "content": "S1"},
    {"role": "developer", "content": [{"type": "text", "text": "D1"}]},
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "hello"},
    {"role": "system", "content": "S2 mid"},
    {"role": "user", "content": "more"},
    {"role": "assistant", "content": "ok"},
]


def test_claude_code_keeps_system_prompts_as_meta_lines_and_says_so(tmp_path):
    """Claude Code's files hold no system prompt: every system and developer message was dropped without a word."""
    out, err = _convert(tmp_path, SYSTEM_MID, "claude-code")
    lines = _records(out)
    meta = [r["message"]["content"] for r in lines if r.get("isMeta")]
    assert meta == ["S1", [{"type": "text", "text": "D1"}], "S2 mid"]
    assert "3 system message (written as a meta user line" in err
    [back] = api.read([str(out)])
    assert [(m.role, m.text()) for m in back.messages if m.role in ("system", "developer")] == [
        ("system", "S1"),
        ("developer", "D1"),
        ("system", "S2 mid"),
    ]  # read back as the prompts they were (compact keeps them at the head, not in the summary)
    # An empty prompt is written as no line, and not counted as one.
    out, err = _convert(tmp_path, [{"role": "system", "content": " "}, *SYSTEM_MID], "claude-code")
    assert len([r for r in _records(out) if r.get("isMeta")]) == 3 and "3 system message (written as a meta user line" in err


def test_anthropic_says_when_a_later_system_message_joins_the_prompt(tmp_path):
    out, err = _convert(tmp_path, SYSTEM_MID, "anthropic")
    [rec] = _records(out)
    assert "S2 mid" in str(rec["system"]) and "1 system message from the middle of the conversation" in err


def test_sharegpt_gets_one_system_turn_first(tmp_path):
    """A system turn after the first or in the middle of a conversation stayed there, and LlamaFactory's loaders drop
    such a record (its turns must alternate after one system turn). They join the first, as Anthropic's prompt."""
    out, err = _convert(tmp_path, SYSTEM_MID, "sharegpt")
    [rec] = _records(out)
    assert [t["from"] for t in rec["conversations"]] == ["system", "human", "gpt", "human", "gpt"]
    assert rec["conversations"][0]["value"] == "S1\n\nD1\n\nS2 mid"
    assert "1 system message from the middle of the conversation (joined to the system prompt)" in err
    assert cli("repair", "--check", str(out)).returncode == 0
    out, err = _convert(tmp_path, SYSTEM_MID[2:], "sharegpt")  # one, in the middle: moved first
    assert [t["from"] for t in _records(out)[0]["conversations"]] == ["system", "human", "gpt", "human", "gpt"] and err
    out, err = _convert(tmp_path, SYSTEM_MID[:1] + SYSTEM_MID[2:4], "sharegpt")  # one, first: nothing to join or say
    assert [t["from"] for t in _records(out)[0]["conversations"]] == ["system", "human", "gpt"] and not err


IMAGE_JPG = "data:image/jpg;base64,/9j/4AAQ"
PDF = "data:application/pdf;base64,JVBERi0x"
OPENAI_PARTS = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": IMAGE_JPG}},
            {"type": "image_url", "image_url": {"url": "data:image/svg+xml;utf8,<svg/>"}},
            {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
            {"type": "file", "file": {"file_data": PDF, "filename": "spec.pdf"}},
            {"type": "file", "file": {"file_id": "file-abc"}},
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "call_a", "content": "a.py"},
    {"role": "assistant", "content": [{"type": "refusal", "refusal": "I cannot open that file."}]},
    {"role": "user", "content": "why?"},
]


def test_openai_parts_become_what_anthropic_takes_or_a_line_that_says_what_was_there(tmp_path):
    from .validator import validate_anthropic

    out, err = _convert(tmp_path, OPENAI_PARTS, "anthropic")
    [rec] = _records(out)
    first = rec["messages"][0]["content"]
    assert first[1] == {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQ"}}  # jpg: jpeg
    assert first[2] == {"type": "text", "text": "[image: image/svg+xml]"}  # not base64: no source Anthropic takes; never the data
    assert first[3] == {"type": "text", "text": "[audio: wav]"}
    assert first[4] == {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0x"},
        "title": "spec.pdf",
    }
    assert first[5] == {"type": "text", "text": "[file: file-abc]"}
    use = rec["messages"][1]["content"][0]
    assert use == {"type": "tool_use", "id": "call_a", "name": "ls", "input": {}}  # no "index": Anthropic refuses extra keys
    assert rec["messages"][3]["content"] == [{"type": "text", "text": "I cannot open that file."}]
    assert validate_anthropic(rec["messages"]) == []
    assert "3 image part" not in err and "2 image part" not in err  # the JPEG is carried
    assert "1 image part" in err and "1 audio part" in err and "1 file part" in err


def test_openai_parts_become_the_responses_apis_in_codex(tmp_path):
    """Codex lines held chat part types ("text", "image_url"), which the Responses API refuses."""
    out, err = _convert(tmp_path, OPENAI_PARTS, "codex")
    items = [r["payload"] for r in _records(out) if r.get("type") == "response_item"]
    user = next(i for i in items if i.get("role") == "user")
    assert [p["type"] for p in user["content"]] == ["input_text", "input_image", "input_text", "input_text", "input_file", "input_text"]
    assert user["content"][1] == {"type": "input_image", "image_url": IMAGE_JPG}
    assert user["content"][4] == {"type": "input_file", "file_data": PDF, "filename": "spec.pdf"}
    said = [i for i in items if i.get("role") == "assistant"]
    assert said and said[-1]["content"] == [{"type": "refusal", "refusal": "I cannot open that file."}]
    allowed = {"input_text", "input_image", "input_file", "output_text", "refusal"}
    assert {p["type"] for i in items if i.get("type") == "message" for p in i["content"]} <= allowed


ANTHROPIC_PARTS = {
    "system": "s",
    "messages": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "read", "cache_control": {"type": "ephemeral"}},
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0x"}, "title": "a.pdf"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}},
                {"type": "text", "text": "found it"},
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "a.py"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "print(1)"}}],
                }
            ],
        },
        {"role": "assistant", "content": "done"},
    ],
}


def test_an_images_detail_moves_between_chat_and_the_responses_api_and_is_said_where_it_cannot(tmp_path):
    """An OpenAI image's `detail` ("high": the resolution the model sees it at) was dropped without a word by every
    conversion. Now chat and the Responses API (Codex) carry it both ways, and Anthropic, whose image has none, says so."""
    img = {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "high"}}
    src = write_jsonl(tmp_path / "s.jsonl", [{"messages": [{"role": "user", "content": [{"type": "text", "text": "what is it"}, img]}]}])
    codex = cli("convert", str(src), "--to", "codex")
    assert codex.returncode == 0 and b'"detail":"high"' in codex.stdout, codex.stdout
    back = cli("convert", "--to", "openai", "-", input=codex.stdout)
    assert img in orjson.loads(back.stdout.splitlines()[0])["content"]  # (a session: one message a line)
    anth = cli("convert", str(src), "--to", "anthropic")
    assert anth.returncode == 0 and b"1 image detail" in anth.stderr and b'"detail"' not in anth.stdout


def test_anthropic_blocks_become_what_openai_takes_and_the_file_reads_back(tmp_path):
    """A document stayed an Anthropic block in OpenAI chat (and the file then read as Anthropic's and failed);
    server_tool_use stayed in an assistant message; cache_control stayed on text."""
    from .validator import validate

    src = write_jsonl(tmp_path / "a.jsonl", [ANTHROPIC_PARTS])
    out, err = _convert(tmp_path, src, "openai")
    [rec] = _records(out)
    msgs = rec["messages"]
    assert msgs[1]["content"] == [
        {"type": "text", "text": "read"},
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0x", "filename": "a.pdf"}},
    ]
    assert msgs[2]["content"] == [{"type": "text", "text": "[server_tool_use: web_search]"}, {"type": "text", "text": "found it"}]
    assert msgs[3]["content"] == [{"type": "text", "text": "print(1)"}]  # a text document's text
    assert validate(msgs) == [] and "1 server_tool_use part" in err
    assert "1 text part key (cache_control: another API's)" in err  # dropped, and said
    assert cli("repair", "--check", str(out)).returncode == 0  # read back as OpenAI chat


def test_sharegpt_and_llamafactory_media_leave_a_line_that_names_them(tmp_path):
    rows = [
        {"role": "user", "content": [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "https://x.org/a.png"}}]}
    ]
    out, err = _convert(tmp_path, [*rows, {"role": "assistant", "content": "ok"}], "sharegpt")
    assert _records(out)[0]["conversations"][0]["value"] == "see\n[image: https://x.org/a.png]" and "1 image part" in err
    lf = {"messages": [{"role": "user", "content": [{"type": "image", "value": "images/b.jpg"}, {"type": "text", "value": "what?"}]}]}
    lf["messages"].append({"role": "assistant", "content": [{"type": "text", "value": "a cat"}]})
    out, err = _convert(tmp_path, write_jsonl(tmp_path / "lf.jsonl", [lf]), "openai")
    assert _records(out)[0]["messages"][0]["content"][0] == {"type": "text", "text": "[image: images/b.jpg]"}  # the path kept


def test_ids_anthropic_refuses_are_renamed_with_their_results(tmp_path):
    """OpenAI chat reuses ids across turns and takes any id; Anthropic wants each tool_use id once, of letters,
    digits, `_` and `-`: convert wrote a valid OpenAI file as an invalid Anthropic one."""
    from .validator import validate_anthropic

    call = lambda cid, name: {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}  # noqa: E731
    rows = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call("call_X", "ls")]},
        {"role": "tool", "tool_call_id": "call_X", "content": "first"},
        {"role": "assistant", "content": None, "tool_calls": [call("call_X", "ls"), call("functions.get_weather:0", "w")]},
        {"role": "tool", "tool_call_id": "call_X", "content": "second"},
        {"role": "tool", "tool_call_id": "functions.get_weather:0", "content": "rain"},
        {"role": "assistant", "content": "done"},
    ]
    out, _ = _convert(tmp_path, rows, "anthropic")
    [rec] = _records(out)
    assert validate_anthropic(rec["messages"]) == []
    [back] = api.read([str(out)])
    assert _pairs(back) == [("ls", "first"), ("ls", "second"), ("w", "rain")]


@needs_corpus
def test_every_tau_bench_conversation_converts_to_valid_anthropic(tmp_path):
    from .validator import validate_anthropic_records

    out, _ = _convert(tmp_path, CORPUS / "openai-chat" / "tau-bench" / "gpt-4o-airline.json", "anthropic")
    recs = _records(out)
    assert len(recs) == 200 and validate_anthropic_records(recs) == []


def test_thinking_alone_and_error_flags_are_written_validly_or_said(tmp_path):
    """A thinking-only Anthropic turn became `"content": []` in OpenAI chat (refused) and vanished from Codex without
    a word; a tool result's is_error went unsaid."""
    rec = {
        "system": "s",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "sig"}]},
            {"role": "user", "content": "run it"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "x"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "exit 1", "is_error": True}]},
            {"role": "assistant", "content": "it failed"},
        ],
    }
    src = write_jsonl(tmp_path / "th.jsonl", [rec])
    out, err = _convert(tmp_path, src, "openai")
    [got] = _records(out)
    assert got["messages"][2] == {"role": "assistant", "content": "", "reasoning_content": "hmm"}
    assert "1 error flag of a tool result" in err
    out, err = _convert(tmp_path, src, "codex")
    assert "1 reasoning (the Responses API replays only its own reasoning items)" in err and "1 error flag" in err


def test_tool_definitions_are_written_in_the_targets_form(tmp_path):
    """OpenAI `tools` and `tool_choice` went into Anthropic records as they were (Anthropic wants `input_schema` and
    a tool_choice object), and back; LlamaFactory's tools (JSON text) stayed text in OpenAI records."""
    params = {"type": "object", "properties": {"city": {"type": "string"}}}
    oa = {
        "messages": [{"role": "user", "content": "weather?"}, {"role": "assistant", "content": "sunny"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": params}}],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
    }
    out, _ = _convert(tmp_path, write_jsonl(tmp_path / "oa.jsonl", [oa]), "anthropic")
    [rec] = _records(out)
    assert rec["tools"] == [{"name": "get_weather", "description": "Weather.", "input_schema": params}]
    assert rec["tool_choice"] == {"type": "tool", "name": "get_weather"}
    rec["tools"].append({"type": "web_search_20250305", "name": "web_search"})
    rec["tool_choice"] = {"type": "any"}
    rec["system"] = "s"  # read as Anthropic's (plain role and text messages read as OpenAI chat)
    back, err = _convert(tmp_path, write_jsonl(tmp_path / "an.jsonl", [rec]), "openai")
    [b] = _records(back)
    assert b["tools"] == oa["tools"] and b["tool_choice"] == "required" and "1 tool definition without a schema" in err
    lf = {
        "conversations": [{"from": "human", "value": "weather?"}, {"from": "gpt", "value": "sunny"}],
        "tools": orjson.dumps([oa["tools"][0]["function"]]).decode(),
    }
    out, _ = _convert(tmp_path, write_jsonl(tmp_path / "lf.jsonl", [lf]), "openai")
    assert _records(out)[0]["tools"] == oa["tools"]


def test_one_call_a_turn_is_carried_between_the_apis(tmp_path):
    """Anthropic's `disable_parallel_tool_use` was dropped going to OpenAI, and OpenAI's `parallel_tool_calls`
    stayed in Anthropic records as a key the API refuses."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    msgs = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "ok"}]
    out, _ = _convert(
        tmp_path, write_jsonl(tmp_path / "oa.jsonl", [{"messages": msgs, "tools": tools, "parallel_tool_calls": False}]), "anthropic"
    )
    [rec] = _records(out)
    assert "parallel_tool_calls" not in rec and rec["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    back, _ = _convert(tmp_path, write_jsonl(tmp_path / "an.jsonl", [{**rec, "system": "s"}]), "openai")
    [b] = _records(back)
    assert b["parallel_tool_calls"] is False and b["tool_choice"] == "auto" and b["tools"] == tools
    for rows, to in (
        ({"messages": msgs, "parallel_tool_calls": True, "tools": tools}, "anthropic"),
        ({"messages": msgs, "parallel_tool_calls": False}, "anthropic"),
    ):
        out, _ = _convert(tmp_path, write_jsonl(tmp_path / "x.jsonl", [rows]), to)
        [rec] = _records(out)
        assert "parallel_tool_calls" not in rec and "tool_choice" not in rec  # the default, or no tools to call


def test_an_anthropic_image_of_an_uploaded_file_stays_one_for_anthropic(tmp_path):
    """An image Anthropic holds by file id (no URL or data another API could take) is still Anthropic's own image
    when the target is Anthropic's: it became a line that said it was there."""
    from compactctl.formats.parts import port

    upload = {"type": "image", "source": {"type": "file", "file_id": "file_011"}}
    assert port(upload, "anthropic", "user") == upload and port(upload, "claude_code", "tool") == upload
    assert port(upload, "openai", "user") == {"type": "text", "text": "[image: file_011]"}
    jpg = {"type": "image", "source": {"type": "base64", "media_type": "image/jpg", "data": "/9j/"}}
    assert port(jpg, "anthropic", "user")["source"]["media_type"] == "image/jpeg"


@pytest.mark.parametrize(
    "choice",
    [{"type": "function", "function": "f"}, {"type": ["x"]}, {"type": "allowed_tools", "mode": "auto"}, 5, None],
)
def test_an_odd_tool_choice_is_left_out_and_said_never_a_traceback(tmp_path, choice):
    """A review of the fixes: a `tool_choice` whose function was a string, or whose type was a list, stopped the whole
    run with a traceback (outside --on-error skip); one the target cannot hold went without a word."""
    rec = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}], "tool_choice": choice}
    rec["tools"] = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    out, err = _convert(tmp_path, write_jsonl(tmp_path / "tc.jsonl", [rec]), "anthropic")
    [got] = _records(out)
    assert "tool_choice" not in got and "1 tool_choice the target cannot hold" in err
    assert got["tools"] == [{"name": "f", "input_schema": {"type": "object"}}]


def test_tools_in_no_known_form_or_none_at_all_are_left_out(tmp_path):
    """`tools` of an unknown form went to Anthropic in OpenAI's form; an empty list (all server tools, or none) was
    written as `[]`, which OpenAI refuses."""
    rows = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]
    odd = {"messages": rows, "tools": [{"type": "function", "function": "f"}], "tool_choice": "auto"}
    out, err = _convert(tmp_path, write_jsonl(tmp_path / "odd.jsonl", [odd]), "anthropic")
    [got] = _records(out)
    assert "tools" not in got and "tool_choice" not in got and "1 tool definitions in a form not converted" in err
    lf = {"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "ok"}], "tools": "[]"}
    out, _ = _convert(tmp_path, write_jsonl(tmp_path / "lf.jsonl", [lf]), "openai")
    assert "tools" not in _records(out)[0]


def test_a_file_part_that_is_no_object_and_a_data_url_never_show_their_data(tmp_path):
    from compactctl.formats.parts import port

    assert port({"type": "file", "file": "x"}, "anthropic", "user") == {"type": "text", "text": "[file: a file]"}
    assert port({"type": "image_url", "image_url": {"url": "data:image/png,SECRET"}}, "anthropic", "user")["text"] == "[image: image/png]"
    svg = {"type": "image_url", "image_url": {"url": "data:image/svg+xml;base64,PHN2Zy8+"}}
    assert port(svg, "codex", "user") == {"type": "input_text", "text": "[image: image/svg+xml]"}  # PNG, JPEG, GIF, WebP only


def test_compact_keeps_a_converted_system_prompt_at_the_head(tmp_path):
    """A prompt written as a Claude Code meta line was read back as a user message: compact summarized it to a
    200-character note."""
    policy = "Policy: " + " ".join(f"rule {k} says refunds need approval {k}." for k in range(200))
    rows = [{"role": "system", "content": policy}]
    for k in range(30):
        rows += [{"role": "user", "content": f"question {k} " * 40}, {"role": "assistant", "content": f"answer {k} " * 40}]
    cc, _ = _convert(tmp_path, rows, "claude-code")
    out = tmp_path / "c.jsonl"
    r = cli("compact", str(cc), "--context-window", "12000", "-q", "-o", str(out))
    assert r.returncode == 0, r.stderr
    [back] = api.read([str(out)])
    assert any(is_summary(m) for m in back.messages)  # compacted
    assert back.messages[0].role == "system" and back.messages[0].text().startswith(policy)  # whole, with the note compaction adds


def test_convert_says_when_a_transcript_breaks_the_apis_rules_as_read(tmp_path):
    """convert changes nothing but the format: a call without a result went out without a word, and the API then
    refused the request. It is said, with the command that mends it; a valid transcript gets no note."""
    call = {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    broken = [
        {"role": "assistant", "content": "first"},
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]
    out, err = _convert(tmp_path, broken, "anthropic")
    assert "breaks the APIs' rules (1 missing-result, 1 first-role); `compactctl repair` mends it" in err
    assert [m["role"] for m in _records(out)[0]["messages"]] == ["assistant", "user", "assistant"]  # converted, nothing else
    assert cli("repair", "--check", str(out)).returncode == 6
    _, err = _convert(tmp_path, SYSTEM_MID[:4], "openai")
    assert "breaks" not in err


def test_convert_of_a_planned_file_says_summarize_reads_its_zones():
    """convert of `plan`'s output said only "`compactctl repair` mends it", and repair takes off the zones that
    `summarize` needs: the hint names summarize too."""
    planned = cli("plan", "--context-window", "8000", "-q", "-", input=(SAMPLES / "dataset.jsonl").read_bytes())
    r = cli("convert", "--to", "openai", "-", input=planned.stdout)
    assert r.returncode == 0 and b" annotation" in r.stderr
    assert b"`compactctl summarize` reads plan's `_compactctl` zones first" in r.stderr


def test_a_parameter_schema_without_a_type_gets_the_object_type_anthropic_requires(tmp_path):
    """OpenAI takes `parameters` without a top-level type (some MCP and Codex tools ship one); Anthropic refuses
    such an input_schema ("tools.N.custom.input_schema.type: Field required")."""
    loose = {"properties": {"path": {"type": "string"}}, "required": ["path"]}
    rec = {
        "messages": [{"role": "user", "content": "read it"}, {"role": "assistant", "content": "ok"}],
        "tools": [
            {"type": "function", "function": {"name": "read", "parameters": loose}},
            {"type": "function", "function": {"name": "ls", "parameters": {"type": "object", "properties": {}}}},
        ],
    }
    out, _ = _convert(tmp_path, write_jsonl(tmp_path / "t.jsonl", [rec]), "anthropic")
    [got] = _records(out)
    assert [t["input_schema"] for t in got["tools"]] == [{"type": "object", **loose}, {"type": "object", "properties": {}}]


GEMINI = {
    "sessionId": "s1",
    "messages": [
        {"type": "user", "content": "run ls"},
        {
            "type": "gemini",
            "content": "",
            "toolCalls": [
                {
                    "id": "c1",
                    "name": "run_shell_command",
                    "args": {"command": "ls"},
                    "status": "success",
                    "result": [{"functionResponse": {"id": "c1", "name": "run_shell_command", "response": {"output": "a.py"}}}],
                }
            ],
        },
        {"type": "gemini", "content": "a.py is there."},
    ],
}


@pytest.mark.parametrize("to", ["claude-code", "codex"])
def test_one_gemini_session_is_one_session_for_a_line_log_format(tmp_path, to):
    """A Gemini session (one record, named as its file: no `#1`) was refused for Claude Code and Codex as "a dataset
    of several records"; a second record of a file, and several files into one output, still are."""
    src = tmp_path / "g.json"
    src.write_bytes(orjson.dumps(GEMINI))
    for cmd in ("convert", "compact"):
        r = cli(cmd, str(src), "--to", to, "-q")
        assert r.returncode == 0, r.stderr
        back = tmp_path / f"back.{cmd}.jsonl"
        back.write_bytes(r.stdout)
        [t] = api.read([str(back)])
        assert t.format == to.replace("-", "_") and _pairs(t) == [("run_shell_command", "a.py")]
    two = tmp_path / "two.json"
    two.write_bytes(orjson.dumps([GEMINI, GEMINI]))
    r = cli("convert", str(two), "--to", to)
    assert r.returncode == 2 and "a dataset of several records cannot be written as" in r.stderr.decode()
    other = tmp_path / "h.json"
    other.write_bytes(orjson.dumps(GEMINI))
    r = cli("convert", str(src), str(other), "--to", to)
    assert r.returncode == 2 and "several files cannot share one output" in r.stderr.decode()
    assert cli("convert", str(src), str(other), "--to", to, "-o", str(tmp_path / "out") + "/").returncode == 0


@pytest.mark.parametrize("to", ["codex", "claude-code"])
def test_record_keys_a_session_file_cannot_hold_are_said(tmp_path, to):
    """A dataset record written as a Claude Code or Codex session lost its other keys (an id, a reward, its tool
    definitions) without a word: those files hold messages only."""
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object", "properties": {}}}}]
    rec = {
        "id": "ex1",
        "reward": 1.0,
        "tools": tools,
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
    }
    out, err = _convert(tmp_path, write_jsonl(tmp_path / "ds.jsonl", [rec]), to)
    assert b"ex1" not in out.read_bytes() and b"reward" not in out.read_bytes()
    for key in ("id", "reward", "tools"):
        assert f"1 record key ({key}: a {to} session has no place for it; left out)" in err, err
    report = tmp_path / "r.jsonl"
    assert cli("compact", str(tmp_path / "ds.jsonl"), "--to", to, "-o", str(tmp_path / "c.jsonl"), "--report", str(report)).returncode == 0
    carried = orjson.loads(report.read_bytes())["not_carried"]
    assert carried[f"record key (reward: a {to} session has no place for it; left out)"] == 1
    _, err = _convert(tmp_path, write_jsonl(tmp_path / "plain.jsonl", rec["messages"]), to)
    assert "record key" not in err  # a session file's transcript has no record keys


@pytest.mark.parametrize("to", ["openai", "codex", "sharegpt"])
def test_redacted_thinking_another_api_cannot_hold_is_said(tmp_path, to):
    """Anthropic's redacted_thinking (encrypted reasoning only Anthropic reads) was left out of an OpenAI, Codex or
    ShareGPT record without a word, as no reasoning text stands for it."""
    rec = {
        "system": "s",
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "ENCRYPTED"}, {"type": "text", "text": "a"}]},
            {"role": "user", "content": "more"},
        ],
    }
    out, err = _convert(tmp_path, write_jsonl(tmp_path / "rt.jsonl", [rec]), to)
    assert b"ENCRYPTED" not in out.read_bytes()
    assert "1 redacted thinking block (encrypted: only Anthropic reads it)" in err, err
    _, err = _convert(tmp_path, write_jsonl(tmp_path / "rt.jsonl", [rec]), "claude-code")
    assert "redacted thinking block" not in err  # Claude Code's lines hold it


@pytest.mark.parametrize("to", ["openai", "anthropic", "codex"])
def test_call_ids_over_40_characters_get_the_ids_repair_gives_them(tmp_path, to):
    """Gemini CLI's call ids (`list_directory-1761594964607-802afbb1c1c44`, 45 characters) are longer than the 40
    OpenAI takes: `convert` wrote them as they were and said the output breaks the APIs' rules, which `repair`
    mends by renaming them. A conversion gives them valid ids itself, named as repair names them (the id's own
    characters cut to 30, `__N`), so `convert` and `repair | convert` write the same ids; their results follow."""
    import copy
    import re

    long_ids = ["list_directory-1761594964607-802afbb1c1c44", "run_shell_command-1761595916500-521fefbd026d5"]
    doc = copy.deepcopy(GEMINI)
    turn = doc["messages"][1]
    call = turn["toolCalls"][0]
    turn["toolCalls"] = [
        {**call, "id": cid, "result": [{"functionResponse": {**call["result"][0]["functionResponse"], "id": cid}}]}
        for cid in [*long_ids, "c1"]
    ]
    src = tmp_path / "session.json"
    src.write_bytes(orjson.dumps(doc))
    out, err = _convert(tmp_path, src, to)
    assert "breaks the APIs' rules" not in err, err
    assert cli("repair", "--check", str(out)).returncode == 0
    [t] = api.read([str(out)])
    ids = [c.id for m in t.messages for c in m.tool_calls]
    assert ids == ["list_directory-1761594964607-8__1", "run_shell_command-176159591650__2", "c1"], ids
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,40}", i) for i in ids)
    assert [m.tool_call_id for m in t.messages if m.role == "tool"] == ids
    repaired = tmp_path / "repaired.jsonl"
    assert cli("repair", str(src), "-o", str(repaired)).returncode == 0
    assert cli("convert", str(repaired), "--to", to, "-q").stdout == out.read_bytes()


def test_convert_writes_a_report_line_per_transcript(tmp_path):
    """`convert --report FILE` (its --help: "a JSON report line per transcript") wrote an empty file: what a target
    could not hold was said on stderr alone, never in the report's `not_carried`."""
    rows = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "hi"}, {"type": "input_audio", "input_audio": {"data": "AA==", "format": "wav"}}],
        }
    ]
    src = write_jsonl(
        tmp_path / "ds.jsonl",
        [
            {"messages": rows + [{"role": "assistant", "content": "yo"}]},
            {"messages": [*rows[:0], {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]},
        ],
    )
    report = tmp_path / "r.jsonl"
    _convert(tmp_path, src, "anthropic", "--report", str(report))
    lines = [orjson.loads(x) for x in report.read_bytes().splitlines()]
    assert [x["status"] for x in lines] == ["converted", "converted"]
    assert lines[0]["not_carried"] == {"audio part (written as a line that says what was there)": 1} and "not_carried" not in lines[1]


SIGNED = {
    "system": "s",
    "messages": [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": "Let me look.", "signature": "EqQBSIGNED"}, {"type": "text", "text": "a"}],
        },
        {"role": "user", "content": "more"},
    ],
}
THINKING_SIGNATURE = "thinking block's signature (its text is carried as reasoning; the signature Anthropic needs to take it back is not)"


@pytest.mark.parametrize("to", ["openai", "sharegpt"])
def test_a_thinking_signature_another_api_cannot_hold_is_said(tmp_path, to):
    """Anthropic's signed thinking written as OpenAI chat (or ShareGPT) kept its text as reasoning and dropped its
    signature without a word (28 signed blocks in the corpus's Claude Code sessions): said, as a redacted block is."""
    out, err = _convert(tmp_path, write_jsonl(tmp_path / "th.jsonl", [SIGNED]), to, "--report", str(tmp_path / "r.jsonl"))
    assert b"Let me look." in out.read_bytes() and b"EqQBSIGNED" not in out.read_bytes()
    assert f"written as {to}: 1 {THINKING_SIGNATURE}" in err, err
    assert orjson.loads((tmp_path / "r.jsonl").read_bytes())["not_carried"] == {THINKING_SIGNATURE: 1}
    for kept in ("anthropic", "claude-code", "codex"):  # held by Anthropic's; the Responses API's: the reasoning is said lost
        out, err = _convert(tmp_path, write_jsonl(tmp_path / "th.jsonl", [SIGNED]), kept)
        assert "thinking block's signature" not in err, err


@pytest.mark.parametrize("to", ["anthropic", "claude-code", "codex"])
def test_message_keys_a_target_cannot_hold_are_said(tmp_path, to):
    """A message's keys besides its role and content (SWE-agent's `thought` and `action`, OpenAI's `name` and
    `refusal`) were left out of Anthropic, Claude Code and Codex output without a word (where OpenAI chat and
    ShareGPT keep them). Said per key; a key whose value is null loses nothing and is not."""
    rows = [
        {"role": "user", "content": "fix it", "name": "bob"},
        {"role": "assistant", "content": "looking", "thought": "ls first", "action": "ls -la", "refusal": None},
        {"role": "user", "content": "ok"},
    ]
    out, err = _convert(tmp_path, rows, to, "--report", str(tmp_path / "r.jsonl"))
    assert b"ls -la" not in out.read_bytes()
    carried = orjson.loads((tmp_path / "r.jsonl").read_bytes())["not_carried"]
    for key in ("name", "thought", "action"):
        said = f"message key ({key}: {to} messages have no place for it; left out)"
        assert f"1 {said}" in err and carried[said] == 1, err
    assert "refusal" not in err
    for keeps in ("openai", "sharegpt"):
        out, err = _convert(tmp_path, rows, keeps)
        assert b"ls -la" in out.read_bytes() and "message key" not in err, err
