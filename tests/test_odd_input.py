"""Odd input: per-record errors, non-finite numbers, blank asks, full disks, huge lines, directories."""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest

from compactctl import api
from compactctl.formats.openai import message_from_dict
from compactctl.model import Transcript, last_user_index

from .conftest import CORPUS, ROOT, SAMPLES, cli, own_device, tool_session, write_jsonl
from .validator import validate, validate_anthropic


def test_list_valued_tool_call_id_is_a_per_record_error(tmp_path):
    good = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    bad = {
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": ["a"], "content": "r"},
        ]
    }
    f = write_jsonl(tmp_path / "d.jsonl", [good, bad, good])
    p = cli("repair", str(f), "--on-error", "skip", "-o", str(tmp_path / "out.jsonl"))
    assert p.returncode == 0, p.stderr
    assert len((tmp_path / "out.jsonl").read_bytes().splitlines()) == 2
    assert b"tool_call_id must be a string" in p.stderr and b"Traceback" not in p.stderr
    p = cli("repair", str(f))
    assert p.returncode != 0 and b"tool_call_id must be a string" in p.stderr and b"Traceback" not in p.stderr


@pytest.mark.parametrize("number", [b"1e999", b"NaN", b"-Infinity"])
def test_non_finite_numbers_are_a_clear_error(tmp_path, number):
    f = tmp_path / "s.jsonl"
    f.write_bytes(b'{"role": "user", "content": "hi", "score": ' + number + b'}\n{"role": "assistant", "content": "x"}\n')
    p = cli("repair", str(f))
    assert p.returncode != 0 and b"not finite" in p.stderr and b"surrogate" not in p.stderr and b"Traceback" not in p.stderr
    p = cli("repair", str(f), "--on-error", "skip")
    assert p.returncode == 0 and b"not finite" in p.stderr
    assert b"null" not in p.stdout


def test_big_integer_is_kept_as_written(tmp_path):
    f = tmp_path / "s.jsonl"
    line = b'{"role": "user", "content": "hi", "n": 123456789012345678901234567890}'
    f.write_bytes(line + b'\n{"role": "assistant", "content": "x"}\n')
    p = cli("repair", str(f))
    assert p.returncode == 0 and p.stdout.splitlines()[0] == line


def test_whitespace_only_last_user_turn_does_not_hide_the_real_ask():
    rows = tool_session(3, 100) + [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "  \n\t "}]
    t = Transcript([message_from_dict(d, "t", i + 1, i) for i, d in enumerate(rows)], id="t")
    i = last_user_index(t.messages)
    assert t.messages[i].text() == "Thanks. Now update the changelog."


def test_full_disk_is_a_clean_error(tmp_path):
    f = write_jsonl(tmp_path / "s.jsonl", tool_session(3, 100))
    full_path = own_device(tmp_path, "/dev/full")
    with open(full_path, "wb") as full:
        p = subprocess.run([sys.executable, "-m", "compactctl", "repair", str(f)], stdout=full, stderr=subprocess.PIPE)
    assert p.returncode != 0 and b"Traceback" not in p.stderr and b"No space left" in p.stderr
    p = cli("repair", str(f), "-o", full_path)
    assert p.returncode == 4 and b"Traceback" not in p.stderr
    assert f"compactctl: error: {full_path}: No space left on device" in p.stderr.decode(), p.stderr


def test_huge_single_line_is_refused_clearly_with_a_limit(tmp_path):
    f = tmp_path / "big.jsonl"
    f.write_bytes(orjson.dumps({"role": "user", "content": "x" * (3 << 20)}) + b"\n")
    p = cli("repair", str(f), env={"COMPACTCTL_MAX_LINE_MB": "2"})
    assert p.returncode != 0 and b"COMPACTCTL_MAX_LINE_MB" in p.stderr and b"Traceback" not in p.stderr
    p = cli("repair", str(f), env={"COMPACTCTL_MAX_LINE_MB": "4"})
    assert p.returncode == 0
    # a line just over the limit said "the line is 3 MB, over the 3 MB limit", and one under 1 MB "0 MB, over the 0 MB"
    for limit, said in (("3", "over the limit of 3 MB (3,145,728 bytes)"), ("0.5", "over the limit of 0.5 MB (524,288 bytes)")):
        p = cli("repair", str(f), env={"COMPACTCTL_MAX_LINE_MB": limit})
        assert p.returncode == 3 and f"the line is {len(f.read_bytes()) - 1:,} bytes, {said}" in p.stderr.decode(), p.stderr


def test_directory_inputs_read_json_and_traj(tmp_path):
    d = tmp_path / "in"
    (d / "sub").mkdir(parents=True)
    write_jsonl(d / "a.jsonl", [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
    (d / "b.json").write_bytes(orjson.dumps([{"messages": [{"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}]}]))
    (d / "sub" / "c.traj").write_bytes(orjson.dumps({"history": [{"role": "user", "content": "e"}, {"role": "assistant", "content": "f"}]}))
    ts = api.read([str(d)])
    assert sorted(t.source.rsplit("/", 1)[-1] for t in ts) == ["a.jsonl", "b.json", "c.traj"]


def test_a_record_too_deep_to_write_back_is_a_data_error_naming_its_line(tmp_path):
    """orjson reads 1,024 levels and writes 254: a compacted record nested 300 levels deep ended in a traceback
    (exit 1). It is a data error naming its line (a .json document's element too), to --rejects with skip."""
    import json

    def nested(n):
        v: object = "x"
        for _ in range(n):
            v = [v]
        return v

    rows = [{"role": "user", "content": "hi " * 3000}] + [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "go"}]
    ok, deep = {"messages": rows, "meta": nested(250)}, {"messages": rows, "meta": nested(300)}
    src = tmp_path / "d.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in (ok, deep, ok)))
    r = cli("compact", str(src), "--context-window", "3000")
    assert r.returncode == 3 and f"{src}:2: the record is nested deeper than 254 levels" in r.stderr.decode()
    rejects = tmp_path / "rejects.jsonl"
    r = cli("compact", str(src), "--context-window", "3000", "--on-error", "skip", "--rejects", str(rejects))
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 2 and json.loads(rejects.read_bytes()) == deep
    doc = tmp_path / "d.json"
    doc.write_text(json.dumps([ok, deep]))
    r = cli("repair", str(doc))
    assert r.returncode == 3 and f"{doc}:2: the record is nested deeper" in r.stderr.decode()
    r = cli("repair", str(doc), "--on-error", "skip", "--rejects", str(rejects))
    assert r.returncode == 0 and json.loads(rejects.read_bytes()) == deep  # kept, not lost


@pytest.mark.parametrize(
    "content, said",
    [
        (["hello", 3], b"a content part must be an object"),
        ([{"type": "text"}], b"a text part without a string text"),
        ([{"type": "text", "text": 5}], b"a text part without a string text"),
        ([{"foo": "bar"}], b"a content part has no type"),
    ],
)
@pytest.mark.parametrize("layout", ["session", "dataset"])
def test_a_malformed_content_part_is_a_data_error_naming_its_line(tmp_path, content, said, layout):
    """From an adversarial review: such parts were written out as they came (exit 0, --check ok); both APIs refuse
    them. A dataset record is refused on the fast path of `repair` too (it writes records it need not build)."""
    rows = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}, {"role": "user", "content": content}]
    if layout == "dataset":
        rows = [{"messages": rows[:2]}, {"messages": rows}]
    src = tmp_path / "m.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    for cmd in ("repair", "compact"):
        p = cli(cmd, str(src), "-q")
        assert p.returncode == 3 and b"m.jsonl:" + (b"2" if layout == "dataset" else b"3") + b": " + said in p.stderr, (cmd, p.stderr)


@pytest.mark.parametrize(
    "row, said",
    [
        (
            {"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]},
            b"a tool_result block in an assistant",
        ),
        ({"role": "user", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]}, b"a tool_use block in a user message"),
    ],
)
def test_an_anthropic_block_in_the_wrong_role_is_a_data_error(tmp_path, row, said):
    src = tmp_path / "a.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in [{"role": "user", "content": "q"}, row]))
    p = cli("repair", str(src), "--from", "anthropic", "-q")
    assert p.returncode == 3 and b"a.jsonl:2: " + said in p.stderr, p.stderr


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
@pytest.mark.parametrize("layout", ["session", "dataset"])
def test_a_text_part_with_its_text_under_value_is_mended_and_archived(tmp_path, fmt, layout):
    """LlamaFactory's form of a text part, {"type": "text", "value": ...}, in OpenAI chat or Anthropic messages was
    written out as it came (neither API takes it: both look for "text") and counted as no text at all. repair moves
    the text (`value-text`), the original archived: restore gives the input back. A first fix in the reader lost the
    originals from the archive (a review's find), and a dataset record with calls was taken for LlamaFactory's."""
    said = "the long ask that only this part holds " * 20
    rows = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": [{"type": "text", "value": said}]},
        {"role": "assistant", "content": [{"type": "text", "value": "on it"}]},
    ]
    if fmt == "anthropic":
        rows = [{"system": "s"}, *rows[1:]]
        rows.insert(
            3, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "value": "out"}]}]}
        )
        rows[2]["content"].append({"type": "tool_use", "id": "t1", "name": "ls", "input": {}})
    else:
        rows[2]["tool_calls"] = [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]
        rows.append({"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "value": "out"}]})
    if layout == "dataset":
        rows = [{"system": "s", "messages": rows[1:]} if fmt == "anthropic" else {"messages": rows}]
    src = tmp_path / "v.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    [t] = api.read([str(src)], fmt=fmt if fmt == "anthropic" and layout == "session" else None)
    assert t.format == fmt and "value-text" in {v.rule for v in api.check(t)} and said in t.messages[1].text()
    for cmd in ("repair", "compact"):
        out, arch = tmp_path / f"{cmd}.jsonl", tmp_path / f"{cmd}-archive.jsonl"
        p = cli(cmd, str(src), "-q", "-o", str(out), "--archive", str(arch), "--context-window", "100000")
        assert p.returncode == 0, (cmd, p.stderr)
        written = out.read_bytes()
        assert b'"value"' not in written and said.encode() in written, cmd
        assert cli("repair", "--check", str(out)).returncode == 0
        recs = [orjson.loads(x) for x in written.splitlines()]
        msgs = recs[0]["messages"] if layout == "dataset" else [r for r in recs if "role" in r]
        assert (validate_anthropic(msgs) if fmt == "anthropic" else validate(msgs)) == []
        back = cli("restore", str(out), "--archive", str(arch))
        assert back.returncode == 0 and back.stdout == src.read_bytes(), (cmd, back.stderr)


@pytest.mark.parametrize(
    "name, rows, said",
    [
        ("sharegpt.jsonl", [{"conversations": [{"from": ["human"], "value": "hi"}]}], b"unknown 'from'"),
        (
            "gemini.json",
            {"sessionId": "s", "messages": [{"type": "user", "content": "hi"}, {"type": "gemini", "content": "x", "toolCalls": 1}]},
            b"thoughts and toolCalls must be lists",
        ),
        (
            "gemini.json",
            {"sessionId": "s", "messages": [{"type": "user", "content": "hi"}, {"type": "gemini", "content": "x", "thoughts": 5}]},
            b"thoughts and toolCalls must be lists",
        ),
        (
            "anthropic.jsonl",
            [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": {"a": 1}}]},
            ],
            b"a tool_result's content must be text or a list of blocks",
        ),
    ],
)
def test_odd_shapes_are_data_errors_not_tracebacks(tmp_path, name, rows, said):
    """From a review's fuzzing: these crashed with a Python traceback (and `--on-error skip` could not skip them)."""
    src = tmp_path / name
    src.write_bytes(orjson.dumps(rows) if name.endswith(".json") else b"".join(orjson.dumps(r) + b"\n" for r in rows))
    p = cli("repair", str(src), "-q")
    assert p.returncode == 3 and said in p.stderr and b"Traceback" not in p.stderr, p.stderr


def test_odd_ids_and_names_read_without_a_traceback(tmp_path):
    """A Claude Code message id that is a list, a Codex call whose name is an object, a reasoning summary whose text
    is a number: read (the id groups nothing, the call is unnamed and repair names it), not a traceback."""
    cc = tmp_path / "cc.jsonl"
    cc.write_bytes(
        b"".join(
            orjson.dumps(r) + b"\n"
            for r in [
                {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s", "message": {"role": "user", "content": "hi"}},
                {
                    "type": "assistant",
                    "uuid": "a1",
                    "parentUuid": "u1",
                    "sessionId": "s",
                    "message": {"id": ["m"], "role": "assistant", "content": [{"type": "text", "text": "yo"}]},
                },
            ]
        )
    )
    assert cli("repair", str(cc), "-q").returncode == 0
    item = lambda p: {"timestamp": "t", "type": "response_item", "payload": p}  # noqa: E731
    codex = tmp_path / "rollout.jsonl"
    codex.write_bytes(
        b"".join(
            orjson.dumps(r) + b"\n"
            for r in [
                {"timestamp": "t", "type": "session_meta", "payload": {"id": "s", "cwd": "/"}},
                item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}),
                item({"type": "reasoning", "summary": [{"type": "summary_text", "text": 1}]}),
                item({"type": "function_call", "name": {"k": 1}, "arguments": "{}", "call_id": "c1"}),
                item({"type": "function_call_output", "call_id": "c1", "output": "ok"}),
            ]
        )
    )
    for cmd in ("repair", "compact"):
        p = cli(cmd, str(codex), "-q", "--to", "openai")
        assert p.returncode == 0 and b'"name":"unknown"' in p.stdout, (cmd, p.stderr)


def test_an_anthropic_session_that_opens_with_an_image_is_read_as_anthropic(tmp_path):
    """Detection took it for OpenAI chat (it knew Anthropic only by tool and thinking blocks): the tool_use went out
    as a content part, without a result, and --check said ok."""
    rows = [
        {
            "role": "user",
            "content": [{"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}, {"type": "text", "text": "fix"}],
        },
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]},
        {"role": "user", "content": "continue"},
    ]
    src = write_jsonl(tmp_path / "img.jsonl", rows)
    [t] = api.read([str(src)])
    assert t.format == "anthropic" and [v.rule for v in api.check(t)] == ["missing-result"]
    p = cli("repair", str(src), "--to", "openai", "-q")
    msgs = [orjson.loads(x) for x in p.stdout.splitlines()]
    assert p.returncode == 0 and validate(msgs) == [] and msgs[0]["content"][0]["type"] == "image_url"


def test_responses_text_parts_and_missing_arguments_are_mended_outside_codex(tmp_path):
    """From a review: `input_text`/`output_text` parts (the Responses API's) in OpenAI chat, and a call without
    `function.arguments`, went out as they came (Chat Completions refuses both; --check said ok). In a Codex rollout
    those parts are its own and stay."""
    rows = [
        {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {
            "role": "assistant",
            "content": [{"type": "output_text", "text": "yo"}],
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    src = write_jsonl(tmp_path / "d.jsonl", [{"messages": rows}])
    [t] = api.read([str(src)])
    assert [v.rule for v in api.check(t)] == ["value-text", "object-arguments", "value-text"]
    p = cli("repair", str(src), "-q")
    [rec] = [orjson.loads(x) for x in p.stdout.splitlines()]
    assert p.returncode == 0 and validate(rec["messages"]) == [] and b"input_text" not in p.stdout
    assert rec["messages"][1]["tool_calls"][0]["function"]["arguments"] == "{}"
    for f in sorted((CORPUS / "codex").rglob("rollout-*.jsonl"))[:2]:
        assert cli("repair", "--check", str(f)).returncode == 0


@pytest.mark.parametrize("system, said", [("0", b"got int"), ('{"a": 1}', b"got dict"), ('[{"type": "text"}]', b"without a string text")])
def test_an_anthropic_system_prompt_of_another_shape_is_a_data_error(tmp_path, system, said):
    src = tmp_path / "a.jsonl"
    src.write_bytes(
        b'{"system": '
        + system.encode()
        + b'}\n{"role": "user", "content": "q"}\n{"role": "assistant", "content": [{"type": "text", "text": "a"}]}\n'
    )
    p = cli("repair", str(src), "--from", "anthropic", "-q")
    assert p.returncode == 3 and b"a.jsonl:1: " in p.stderr and said in p.stderr, p.stderr


def test_swe_agent_results_get_the_apis_tool_call_id(tmp_path):
    """From a review: SWE-agent's results name their call in `tool_call_ids` only, and were written so as OpenAI chat
    (the API wants `tool_call_id`; --check read the list and said ok); converted to Claude Code, their `agent` and
    `message_type` keys went into the tool_result blocks (Anthropic refuses unknown keys)."""
    rows = [
        {"role": "user", "content": "fix it"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
        },
        {"role": "tool", "content": "a.py", "tool_call_ids": ["c1"], "agent": "main", "message_type": "observation"},
        {"role": "assistant", "content": "done"},
    ]
    src = tmp_path / "t.traj"
    src.write_bytes(orjson.dumps({"history": rows}))
    [t] = api.read([str(src)])
    assert [v.rule for v in api.check(t)] == ["ids-list"]
    p = cli("repair", str(src), "-q")
    [rec] = [orjson.loads(x) for x in p.stdout.splitlines()]
    assert p.returncode == 0 and validate(rec["history"]) == [] and rec["history"][2]["tool_call_ids"] == ["c1"]  # SWE-agent's too
    p = cli("convert", str(src), "--to", "claude-code", "-q")
    blocks = [b for x in p.stdout.splitlines() for b in (orjson.loads(x).get("message") or {}).get("content") or [] if isinstance(b, dict)]
    assert [sorted(b) for b in blocks if b["type"] == "tool_result"] == [["content", "tool_use_id", "type"]]


def test_review_of_the_fixes(tmp_path):
    """What a review of these fixes found: an OpenAI record with an image in Anthropic's form was refused as
    Anthropic; a record with a "value" system part and calls past its 50th message was taken for LlamaFactory's
    (its call dropped); a legacy function_call without a name was never named; two one-record datasets went into
    one Codex session."""
    img = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    call = {"id": "c1", "type": "function", "function": {"name": "zoom", "arguments": "{}"}}
    mixed = [
        {"role": "user", "content": [img, {"type": "text", "text": "what?"}]},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]
    mixed.append({"role": "tool", "tool_call_id": "c1", "content": "big"})
    late = [{"role": "system", "content": [{"type": "text", "value": "sys"}]}]
    for i in range(30):
        late += [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]
    late += [{"role": "user", "content": "go"}, {"role": "assistant", "content": None, "tool_calls": [call]}, mixed[-1]]
    for rows in (mixed, late):
        [t] = api.read([str(write_jsonl(tmp_path / "r.jsonl", [{"messages": rows}]))])
        assert t.format == "openai" and sum(len(m.tool_calls) for m in t.messages) == 1
    legacy = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "function_call": {"name": "", "arguments": "{}"}}]
    legacy.append({"role": "function", "name": "", "content": "r"})
    src = write_jsonl(tmp_path / "leg.jsonl", [{"messages": legacy}])
    for to in ("openai", "anthropic"):
        p = cli("repair", str(src), "--to", to, "-q", "-o", str(tmp_path / f"leg-{to}.jsonl"))
        assert p.returncode == 0 and cli("repair", "--check", str(tmp_path / f"leg-{to}.jsonl")).returncode == 0
    a = write_jsonl(tmp_path / "a.jsonl", [{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}])
    b = write_jsonl(tmp_path / "b.jsonl", [{"messages": [{"role": "user", "content": "q2"}, {"role": "assistant", "content": "a2"}]}])
    p = cli("convert", str(a), str(b), "--to", "codex", "-o", str(tmp_path / "merged.jsonl"))
    assert p.returncode == 2 and not (tmp_path / "merged.jsonl").exists()


EMPTY_LOGS = {
    "claude-code": b'{"type":"summary","summary":"Fix the parser","leafUuid":"abc"}\n',
    "codex": b'{"timestamp":"2025-10-29T10:00:00Z","type":"session_meta","payload":{"id":"s1","cwd":"/repo"}}\n',
}


@pytest.mark.parametrize("fmt", sorted(EMPTY_LOGS))
def test_a_session_log_with_no_message_is_an_empty_session_written_as_it_came(tmp_path, fmt):
    """Claude Code keeps files of summary lines alone beside its sessions: one in a project folder stopped the whole run
    (exit 3, "nothing a model could be sent"), and with --on-error skip left an empty file in its place. A session log
    (Claude Code, Codex) with no message is an empty session: every command writes it back as it came, repair --check
    passes it; written as another format (a record with no message, which no API takes) it is still a data error."""
    sample = "claude_code_session.jsonl" if fmt == "claude-code" else "codex_rollout.jsonl"
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "a.jsonl").write_bytes((ROOT / "sample_transcripts" / sample).read_bytes())
    empty = proj / "b.jsonl"
    empty.write_bytes(EMPTY_LOGS[fmt])
    out = tmp_path / "out"
    r = cli("compact", str(proj), "-o", f"{out}/", "-q")
    assert r.returncode == 0, r.stderr
    assert (out / "b.jsonl").read_bytes() == empty.read_bytes() and (out / "a.jsonl").stat().st_size > 0
    assert cli("repair", "--check", f"{out}/").returncode == 0
    for cmd in (["repair"], ["prune"], ["plan"], ["convert"], ["summarize", "--context-window", "300"]):
        r = cli(*cmd, str(empty), "-q")
        assert (r.returncode, r.stdout) == (0, empty.read_bytes()), (cmd, r.stderr)
    r = cli("compact", str(empty), "--to", "openai")
    assert r.returncode == 3 and "an empty session, nothing to write as openai" in r.stderr.decode()
    r = cli("compact", str(empty), "--to", "openai", "--on-error", "skip")
    assert r.returncode == 0 and r.stdout == b""


def test_a_session_log_emptied_by_code_is_no_valid_output():
    """Only a log read with no message is an empty session: a Claude Code transcript whose messages some code took
    away (the continuation eval's baselines at a tiny budget) has no source lines, and stays "no-messages" (it
    passed for a moment, and the eval's baselines' empty outputs read as valid)."""
    [t] = api.read([str(ROOT / "sample_transcripts" / "claude_code_session.jsonl")])
    assert api.check(t) == []
    emptied = t.evolve(messages=[], native=None)
    assert [v.rule for v in api.check(emptied)] == ["no-messages"]


def test_a_dataset_read_with_from_gemini_is_an_error_not_empty_records():
    """`convert dataset.jsonl --from gemini` (an OpenAI chat dataset, the wrong --from) wrote every record with
    `"messages": []`, exit 0, saying only "1 no-messages": Gemini's reader left out each message without a `type`.
    A message with a `role` and no `type` is now a data error that names the file, the line and the likely format."""
    p = cli("convert", str(SAMPLES / "dataset.jsonl"), "--from", "gemini")
    assert p.returncode == 3 and p.stdout == b"", p.stdout[:200]
    assert b"dataset.jsonl:1: a Gemini message has a 'type', this one a 'role'" in p.stderr and b"--from openai" in p.stderr
