"""OpenAI chat (formats/openai.py): what a user of the format sees read and written back, case by case (the
mutation run's survivors: bench/mutation.py --module openai)."""

from __future__ import annotations

import orjson
import pytest

from compactctl import api

from .conftest import cli, write_jsonl
from .rows import ELSEWHERE, TRAJECTORY_RECORD, assert_named_for_what_it_is
from .validator import validate


def test_a_dataset_whose_first_record_has_no_messages_is_read_as_openai(tmp_path):
    """An empty "messages" list decides nothing but is OpenAI chat: the record is read (and refused by compact with
    its line named), never a traceback from the sniffer."""
    src = write_jsonl(tmp_path / "d.jsonl", [{"messages": []}, {"messages": [{"role": "user", "content": "hi"}]}])
    ts = api.read([str(src)])
    assert [(t.format, t.layout, len(t.messages)) for t in ts] == [("openai", "dataset", 0), ("openai", "dataset", 1)]
    r = cli("repair", str(src))
    assert r.returncode == 3
    assert b"d.jsonl:1: no user or assistant message" in r.stderr
    assert b"Traceback" not in r.stderr


ANTHROPIC_TURNS = [
    {"role": "user", "content": "list"},
    {
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}, {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}]},
    {"role": "assistant", "content": "done"},
]


def test_anthropic_blocks_under_history_are_not_taken_for_openai_chat(tmp_path):
    """A SWE-agent-style "history" of Anthropic blocks: taken for OpenAI chat, it was written back with its tool_use
    and tool_result parts inside OpenAI messages (which the API refuses) and exit 0; the format cannot be told, and
    the error says so."""
    src = write_jsonl(tmp_path / "h.jsonl", [{"history": ANTHROPIC_TURNS}])
    r = cli("repair", str(src))
    assert r.returncode == 3
    assert r.stdout == b""
    assert b"h.jsonl:1: cannot tell the transcript format" in r.stderr


def test_plans_zones_read_back_are_kept_and_named(tmp_path):
    """A message's `_compactctl` note (plan --annotate's zone) is read as it is: convert writes it back and
    `repair --check` names its keys (a reader that kept only a placeholder lost the zones summarize reads)."""
    rows = [
        {"role": "user", "content": "fix it", "_compactctl": {"zone": "head"}},
        {"role": "assistant", "content": "done", "_compactctl": {"zone": "tail"}},
    ]
    src = write_jsonl(tmp_path / "planned.jsonl", rows)
    [t] = api.read([str(src)])
    assert [m.note for m in t.messages] == [{"zone": "head"}, {"zone": "tail"}]
    r = cli("convert", str(src), "--to", "openai")
    assert r.returncode == 0, r.stderr
    assert [orjson.loads(line) for line in r.stdout.splitlines()] == rows
    check = cli("repair", "--check", str(src))
    assert check.returncode != 0 and b"'_compactctl' key (zone)" in check.stderr


def test_a_reasoning_content_that_is_not_text_survives_a_rewrite(tmp_path):
    """`reasoning_content` that is not a string is no reasoning compactctl reads, but it is the message's: when repair
    rewrites the message (here for its empty `tool_calls`), the key is kept as it came."""
    rows = [
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": "done", "reasoning_content": {"steps": ["a", "b"]}, "tool_calls": []},
    ]
    r = cli("repair", str(write_jsonl(tmp_path / "r.jsonl", rows)))
    assert r.returncode == 0, r.stderr
    last = orjson.loads(r.stdout.splitlines()[-1])
    assert last == {"role": "assistant", "content": "done", "reasoning_content": {"steps": ["a", "b"]}}


def test_a_functions_own_keys_beside_its_arguments_survive_a_rewrite(tmp_path):
    """A call's `function` with a key besides name and arguments: when repair rewrites the message (its blank text
    part dropped), the key stays in the function."""
    fn = {"name": "ls", "arguments": "{}", "strict": True}
    rows = [
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": [{"type": "text", "text": ""}], "tool_calls": [{"id": "c1", "type": "function", "function": fn}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
        {"role": "assistant", "content": "done"},
    ]
    r = cli("repair", str(write_jsonl(tmp_path / "f.jsonl", rows)))
    assert r.returncode == 0, r.stderr
    call = orjson.loads(r.stdout.splitlines()[1])
    assert call["content"] is None and call["tool_calls"] == [{"id": "c1", "type": "function", "function": fn}]


@pytest.mark.parametrize(
    "call",
    [
        {"tool_calls": [{"id": "c1", "type": "function", "function": {"arguments": "{}"}}]},
        {"tool_calls": [{"id": "c1", "type": "function", "function": {"name": 5, "arguments": "{}"}}]},
        {"tool_calls": [{"id": "c1", "type": "function"}]},
        {"tool_calls": ["ls"]},
        {"function_call": {"arguments": "{}"}},
        {"function_call": {"name": ["ls"], "arguments": "{}"}},
        {"function_call": "ls"},
    ],
)
def test_a_call_without_a_name_is_a_data_error_naming_its_line(tmp_path, call):
    """A call with no function name (or one that is not text) is refused with its line named (exit 3), and with
    --on-error skip its record alone is rejected: never a traceback, never a call written with no name."""
    bad = {"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": None, **call}]}
    good = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    src = write_jsonl(tmp_path / "calls.jsonl", [good, bad, good])
    r = cli("repair", str(src))
    assert r.returncode == 3 and r.stdout == b""
    err = r.stderr.decode()
    assert "calls.jsonl:2: " in err and ("function.name" in err or "function_call needs a name" in err), err
    assert "Traceback" not in err
    skip = cli("repair", str(src), "--on-error", "skip")
    assert skip.returncode == 0 and len(skip.stdout.splitlines()) == 2, skip.stderr
    assert b"skipped " in skip.stderr and b"calls.jsonl:2: " in skip.stderr


def test_arguments_given_as_an_object_are_written_as_json_text_and_converted_as_the_object(tmp_path):
    """OpenAI takes a call's arguments as JSON text only: an object (as some datasets hold them) is written back as its
    JSON text when repair rewrites the message, and converts to Anthropic as the tool_use's input itself."""
    rows = [
        {"role": "user", "content": "fix it"},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": ""}],
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": {"path": "src"}}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
        {"role": "assistant", "content": "done"},
    ]
    src = write_jsonl(tmp_path / "o.jsonl", rows)
    r = cli("repair", str(src))
    assert r.returncode == 0, r.stderr
    [call] = orjson.loads(r.stdout.splitlines()[1])["tool_calls"]
    assert call["function"] == {"name": "ls", "arguments": '{"path":"src"}'}
    conv = cli("convert", str(src), "--to", "anthropic")
    assert conv.returncode == 0, conv.stderr
    use = orjson.loads(conv.stdout.splitlines()[1])["content"][-1]
    assert use == {"type": "tool_use", "id": "c1", "name": "ls", "input": {"path": "src"}}


def test_a_session_refused_as_a_whole_names_its_first_lines_number(tmp_path):
    """A session file with no message a model could be sent is refused at its first record's line: after two blank
    lines, line 3 (not 1, not -1)."""
    src = tmp_path / "s.jsonl"
    src.write_bytes(b'\n\n{"role": "system", "content": "be brief"}\n')
    r = cli("repair", str(src))
    assert r.returncode == 3 and r.stdout == b""
    assert b"s.jsonl:3: no user or assistant message with content" in r.stderr


OPENAI_TURNS = [
    {"role": "user", "content": "list"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
    {"role": "assistant", "content": "done"},
]


@pytest.mark.parametrize("layout", ["session", "dataset"])
@pytest.mark.parametrize("block", [1, 2])  # ANTHROPIC_TURNS' tool_use, its tool_result
@pytest.mark.parametrize("told", [[], ["--from", "openai"]])
def test_anthropic_call_blocks_in_openai_content_are_named_not_passed(tmp_path, layout, block, told):
    """An OpenAI chat message whose content holds Anthropic's tool_use or tool_result blocks (after OpenAI messages
    of its own, or under --from openai) passed `repair --check` ("no violations") and was written back so: OpenAI
    refuses such content, and no phase pairs a call held as a part. Refused as other content no API takes is, the
    file, line and block named, and what reads an Anthropic file."""
    rows = [*OPENAI_TURNS, {"role": "user", "content": "again"}, ANTHROPIC_TURNS[block], {"role": "assistant", "content": "ok"}]
    src = write_jsonl(tmp_path / "m.jsonl", rows if layout == "session" else [{"id": 1, "messages": rows}])
    kind = ("tool_use", "tool_result")[block - 1]
    line = 6 if layout == "session" else 1
    for cmd in (["repair", "--check"], ["repair"], ["compact"]):
        r = cli(*cmd, *told, str(src))
        assert r.returncode == 3 and r.stdout == b"", (cmd, r.stdout, r.stderr)
        assert f"{src}:{line}: content holds a {kind} block, Anthropic's form of a tool".encode() in r.stderr, r.stderr
        assert b"--from anthropic" in r.stderr


def test_a_message_built_with_an_anthropic_call_block_in_its_content_is_bad_content():
    """Built through the library (the readers refuse it): a tool_use part is no call to `check` and repair."""
    from compactctl.errors import DataError
    from compactctl.model import Message, Transcript
    from compactctl.phases.repair import repair
    from compactctl.phases.rules import check

    use = {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}
    t = Transcript([Message(role="user", content="list"), Message(role="assistant", content=[use])], id="built")
    assert [(v.index, v.rule, v.detail) for v in check(t)] == [
        (1, "bad-content", "content holds a tool_use block, Anthropic's form of a tool call")
    ]
    with pytest.raises(DataError, match="built: message 2: content holds a tool_use block"):
        repair(t)


NOT_CHAT = {
    **ELSEWHERE,  # a record --from openai is given, and what the error says it is
    "other-key": (
        TRAJECTORY_RECORD,
        'no role (keys: id, trajectory); its messages are under "trajectory", and OpenAI chat reads a record\'s messages under'
        ' "messages", "history" or "traj"',
    ),
    "roleless-messages": (
        {"messages": [{"from": "human", "value": "hi"}]},
        'no role (keys: messages): its "messages" hold no role either (the first\'s keys: from, value)',
    ),
    "nothing-known": ({"a": 1}, 'no role (keys: a): OpenAI chat is a message a line ({"role", "content"}), or a record a line'),
}


@pytest.mark.parametrize("case", sorted(NOT_CHAT))
def test_a_record_that_is_no_openai_chat_is_named_for_what_it_is(tmp_path, case):
    """`--from openai` on a record that holds no OpenAI chat messages where the format looks ({"history": [...]} of
    OpenHands events, a ShareGPT record, messages under a key of its own) said only "message has no role": the error
    says what the record is, which --from reads it or where OpenAI chat wants its messages, with its file and line."""
    rec, said = NOT_CHAT[case]
    assert_named_for_what_it_is(tmp_path, rec, said, "openai", "OpenAI chat")


B64_IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
URL_IMAGE = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
FOREIGN_PARTS = {  # Anthropic's own blocks OpenAI chat refuses: (role of the message that holds it, block, said)
    "thinking": ("assistant", {"type": "thinking", "thinking": "hmm", "signature": "c2ln"}, "reasoning_content"),
    "redacted_thinking": ("assistant", {"type": "redacted_thinking", "data": "ZW5j"}, "only Anthropic reads it"),
    "document": (
        "user",
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}, "title": "a.pdf"},
        "a file is a file part of a user message",
    ),
    "server_tool_use": (
        "assistant",
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}},
        "it has none",
    ),
    "image-by-file-id": (
        "user",
        {"type": "image", "source": {"type": "file", "file_id": "file_01"}},
        "by Anthropic's file id has no image_url",
    ),
    "image-cache_control": ("user", {**B64_IMAGE, "cache_control": {"type": "ephemeral"}}, "no place for its cache_control"),
    "image-of-the-assistant": ("assistant", B64_IMAGE, "in a user message only, not in an assistant message"),
}


def _with_part(role: str, part: dict) -> list[dict]:
    """OPENAI_TURNS, then a turn of `role` that holds `part` beside text (and an assistant answer to a user turn)."""
    turn = {"role": role, "content": [{"type": "text", "text": "see"}, part]}
    return (
        [*OPENAI_TURNS, {"role": "user", "content": "again"}, turn]
        if role == "assistant"
        else [*OPENAI_TURNS, turn, {"role": "assistant", "content": "ok"}]
    )


@pytest.mark.parametrize("layout", ["session", "dataset"])
@pytest.mark.parametrize("case", sorted(FOREIGN_PARTS))
def test_anthropic_only_parts_in_openai_content_are_named_not_passed(tmp_path, layout, case):
    """Anthropic's other blocks in OpenAI chat content (thinking, redacted_thinking, document, server tools, an image
    that no image_url part says exactly) passed `repair --check` and were written back so (a dataset's record by the
    fast path too): OpenAI refuses them. Refused as its call blocks are, the file, line and block named, what OpenAI
    chat has for it and what reads an Anthropic file; the same blocks in an Anthropic file read as they did."""
    role, part, said = FOREIGN_PARTS[case]
    rows = _with_part(role, part)
    assert validate(rows)  # tests/validator.py refuses it too
    src = write_jsonl(tmp_path / "m.jsonl", rows if layout == "session" else [{"id": 1, "messages": rows}])
    kind = part["type"]
    line = (6 if role == "assistant" else 5) if layout == "session" else 1
    for cmd in (["repair", "--check"], ["repair", "--from", "openai"], ["compact"]):
        r = cli(*cmd, str(src))
        assert r.returncode == 3 and r.stdout == b"", (cmd, r.stdout, r.stderr)
        assert f"{src}:{line}: content holds a{'n' if kind[0] in 'aeiou' else ''} {kind} block, ".encode() in r.stderr, r.stderr
        assert said.encode() in r.stderr and b"OpenAI chat refuses it there" in r.stderr and b"--from anthropic" in r.stderr, r.stderr
    if case != "image-of-the-assistant":  # Anthropic takes the block where it stands
        anthropic = [{"role": "user", "content": "see"}, {"role": role, "content": [{"type": "text", "text": "see"}, part]}]
        if role == "user":
            anthropic = [anthropic[1], {"role": "assistant", "content": "ok"}]
        a = write_jsonl(tmp_path / "a.jsonl", anthropic)
        r = cli("repair", "--check", str(a))
        assert r.returncode == 0, r.stderr
        assert api.read([str(a)])[0].format == "anthropic"


@pytest.mark.parametrize("layout", ["session", "dataset"])
@pytest.mark.parametrize("image", ["base64", "url"])
def test_an_anthropic_image_in_openai_content_is_written_as_image_url(tmp_path, layout, image):
    """An image in Anthropic's form (`{"type": "image", "source"}`) in an OpenAI chat user message passed `repair
    --check` and was written back so (OpenAI refuses it). An image_url part says it exactly (base64 data and its media
    type as a data URL, or the URL): `--check` names it (`anthropic-image`), repair writes it so (the original
    archived: restore gives it back; a dataset's record too, which the fast path wrote back as it came), `--to
    anthropic` as before."""
    part = B64_IMAGE if image == "base64" else URL_IMAGE
    url = "data:image/png;base64,iVBORw0KGgo=" if image == "base64" else "https://example.com/a.png"
    rows = _with_part("user", part)
    src = write_jsonl(tmp_path / "m.jsonl", rows if layout == "session" else [{"id": 1, "messages": rows}])
    check = cli("repair", "--check", str(src))
    assert check.returncode == 6 and b"message 4: anthropic-image: an image in Anthropic's form" in check.stderr, check.stderr
    r = cli("repair", str(src), "--archive", str(tmp_path / "a.jsonl"), "--report", str(tmp_path / "r.json"))
    assert r.returncode == 0, r.stderr
    out = [orjson.loads(line) for line in r.stdout.splitlines()]
    got = out if layout == "session" else out[0]["messages"]
    assert validate(rows) and validate(got) == []  # tests/validator.py, which shares no code with repair
    assert got[4]["content"] == [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": url}}]
    assert [{**m, "content": rows[4]["content"]} if k == 4 else m for k, m in enumerate(got)] == rows
    assert orjson.loads((tmp_path / "r.json").read_bytes())["repair"]["images_as_image_url"] == 1
    assert cli("repair", str(src)).stdout == r.stdout  # without --archive and --report (a dataset's fast path: passthrough)
    assert cli("repair", "--check", "-", input=r.stdout).returncode == 0
    (tmp_path / "o.jsonl").write_bytes(r.stdout)
    back = cli("restore", str(tmp_path / "o.jsonl"), "--archive", str(tmp_path / "a.jsonl"))
    assert back.returncode == 0 and [orjson.loads(line) for line in back.stdout.splitlines()] == (
        rows if layout == "session" else [{"id": 1, "messages": rows}]
    )
    conv = cli("convert", str(src), "--to", "anthropic")
    assert conv.returncode == 0, conv.stderr
    assert part in [b for line in conv.stdout.splitlines() for r_ in _rows_of(line) for b in r_.get("content") or [] if isinstance(b, dict)]


def _rows_of(line: bytes) -> list[dict]:
    rec = orjson.loads(line)
    return rec.get("messages", [rec])


def test_an_image_block_in_a_tool_message_gives_no_from_anthropic_hint(tmp_path):
    """A tool message is OpenAI chat's own: an Anthropic image block in one was told "an Anthropic file reads with
    --from anthropic", which then refused the file's tool role (the review's find). The error says why, without it."""
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    call = {"id": "c1", "type": "function", "function": {"name": "shot", "arguments": "{}"}}
    rows = [
        {"role": "user", "content": "take a screenshot"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "here"}, image]},
        {"role": "assistant", "content": "done"},
    ]
    src = write_jsonl(tmp_path / "m.jsonl", rows)
    r = cli("repair", "--from", "openai", str(src))
    assert r.returncode == 3 and f"{src}:3: content holds an image block".encode() in r.stderr, r.stderr
    assert b"not in a tool message" in r.stderr and b"--from anthropic" not in r.stderr, r.stderr
    assert cli("repair", "--from", "anthropic", str(src)).returncode == 3  # (what the hint would have led to)
