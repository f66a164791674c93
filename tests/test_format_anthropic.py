"""Anthropic Messages (formats/anthropic.py): what a user of the format sees read and written back, case by case
(the mutation run's survivors: bench/mutation.py --module anthropic)."""

from __future__ import annotations

import orjson
import pytest

from compactctl import api

from .conftest import cli, write_jsonl
from .rows import ELSEWHERE, TRAJECTORY_RECORD, assert_named_for_what_it_is
from .validator import validate_anthropic


def _rows(data: bytes) -> list[dict]:
    return [orjson.loads(line) for line in data.splitlines()]


@pytest.mark.parametrize("orphan_first", [False, True])
def test_a_row_of_tool_results_alone_keeps_its_own_keys_when_rewritten(tmp_path, orphan_first):
    """A user row's keys besides role and content were kept when the row held text, and lost when it held tool
    results alone and was written again (here: repair drops a result that answers no call, first or last)."""
    results = [
        {"type": "tool_result", "tool_use_id": "t1", "content": "a.py"},
        {"type": "tool_result", "tool_use_id": "zz", "content": "orphan"},
    ]
    rows = [
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}], "timestamp": "t1"},
        {"role": "user", "content": results[::-1] if orphan_first else results, "timestamp": "t2"},
        {"role": "assistant", "content": "done", "timestamp": "t3"},
    ]
    src = write_jsonl(tmp_path / "a.jsonl", rows)
    [t] = api.read([str(src)])
    assert t.format == "anthropic"
    r = cli("repair", str(src))
    assert r.returncode == 0, r.stderr
    got = _rows(r.stdout)
    assert got[2] == {"role": "user", "content": [results[0]], "timestamp": "t2"}
    assert got[1] == rows[1] and got[3] == rows[3]
    assert cli("repair", "--check", "-", input=r.stdout).returncode == 0


def test_a_dataset_records_violation_is_named_by_its_record(tmp_path):
    """`repair --check` names a dataset record's transcript by its number in the file (#2 for the second)."""
    ok = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "text", "text": "yo"}]}]}
    bad = {
        "system": "s",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": ""}, {"type": "text", "text": "x"}]},
        ],
    }
    src = write_jsonl(tmp_path / "d.jsonl", [ok, bad])
    assert [t.id for t in api.read([str(src)])] == [f"{src}#1", f"{src}#2"]
    r = cli("repair", "--check", str(src))
    assert r.returncode != 0 and f"{src}#2: message 2: blank-part".encode() in r.stderr, r.stderr


def test_a_session_refused_as_a_whole_names_its_first_lines_number(tmp_path):
    """A session of a system line alone (after two blank lines) is refused at line 3, its first record's."""
    src = tmp_path / "s.jsonl"
    src.write_bytes(b'\n\n{"system": "be brief"}\n')
    r = cli("repair", str(src))
    assert r.returncode == 3 and r.stdout == b""
    assert b"s.jsonl:3: no user or assistant message with content" in r.stderr


# rows as a source may hold them: keys in another order than the writer's, a result block's own key
AS_THEY_CAME = [
    {"content": "list the files", "role": "user"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]},
    {"content": [{"tool_use_id": "t1", "type": "tool_result", "content": "a.py", "cache_control": {"type": "ephemeral"}}], "role": "user"},
    {"content": [{"type": "text", "text": "and the tests?"}], "role": "user"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ls tests"}}]},
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t2", "content": "t.py"},
            {"type": "tool_result", "tool_use_id": "zz", "content": "x"},
        ],
    },
    {"content": "done", "role": "assistant", "timestamp": "t6"},
]


@pytest.mark.parametrize("layout", ["session", "dataset"])
def test_rows_a_repair_leaves_alone_are_written_as_they_came(tmp_path, layout):
    """Repair drops the result that answers no call (row 5); every other row is written back as it came, byte for
    byte (keys in their order, a result block's own keys), in a session and in a dataset record."""
    if layout == "session":
        src = write_jsonl(tmp_path / "s.jsonl", AS_THEY_CAME)
    else:
        src = write_jsonl(tmp_path / "d.jsonl", [{"messages": AS_THEY_CAME, "id": 7}])
    r = cli("repair", str(src))
    assert r.returncode == 0, r.stderr
    if layout == "session":
        got = r.stdout.splitlines()
    else:
        [rec] = [orjson.loads(line) for line in r.stdout.splitlines()]
        assert list(rec) == ["messages", "id"] and rec["id"] == 7
        got = [orjson.dumps(row) for row in rec["messages"]]
    want = [orjson.dumps(row) for row in AS_THEY_CAME]
    assert got[:5] == want[:5] and got[6] == want[6]
    assert orjson.loads(got[5]) == {"role": "user", "content": [AS_THEY_CAME[5]["content"][0]]}


def test_a_changed_user_message_is_written_in_its_form_with_its_keys(tmp_path):
    """A user message a phase changed is written again: text stays a string, blocks stay blocks, and the row's own
    keys stay with it."""
    rows = [
        {"system": "be brief"},
        {"role": "user", "content": "list the files", "timestamp": "t0"},
        {"role": "assistant", "content": "which ones?"},
        {"role": "user", "content": [{"type": "text", "text": "the tests"}], "timestamp": "t2"},
        {"role": "assistant", "content": "t.py"},
    ]
    [t] = api.read([str(write_jsonl(tmp_path / "s.jsonl", rows))])
    assert t.format == "anthropic" and t.messages[0].role == "system"
    t.messages[1] = t.messages[1].evolve(content="list the files (shortened)")
    t.messages[3] = t.messages[3].evolve(content=[{"type": "text", "text": "the tests (shortened)"}])
    out = [orjson.loads(line) for line in api.write(t).splitlines()]
    assert out[0] == {"system": "be brief"} and out[2] == rows[2] and out[4] == rows[4]
    assert out[1] == {"role": "user", "content": "list the files (shortened)", "timestamp": "t0"}
    assert out[3] == {"role": "user", "content": [{"type": "text", "text": "the tests (shortened)"}], "timestamp": "t2"}


def test_openai_system_messages_become_the_dataset_records_one_prompt(tmp_path):
    """Converted from an OpenAI dataset: the system messages are the record's "system" (one prompt, text after
    text; a blank one adds nothing and a record with no other has none: the API refuses a blank prompt), and the
    results of parallel calls are one user row."""
    calls = [{"id": f"c{k}", "type": "function", "function": {"name": "ls", "arguments": "{}"}} for k in (1, 2)]
    turns = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "c1", "content": "a"},
        {"role": "tool", "tool_call_id": "c2", "content": "b"},
        {"role": "assistant", "content": "done"},
    ]
    records = [
        {"messages": [{"role": "system", "content": "  "}, {"role": "system", "content": "be brief"}, *turns]},
        {"messages": [{"role": "system", "content": "be brief"}, {"role": "system", "content": "and kind"}, *turns]},
        {"messages": [{"role": "system", "content": ""}, *turns]},
    ]
    r = cli("convert", str(write_jsonl(tmp_path / "d.jsonl", records)), "--to", "anthropic")
    assert r.returncode == 0, r.stderr
    got = _rows(r.stdout)
    assert [rec.get("system", "(none)") for rec in got] == ["be brief", "be brief\n\nand kind", "(none)"]
    for rec in got:
        assert rec["messages"][2] == {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"c{k}", "content": c} for k, c in ((1, "a"), (2, "b"))],
        }
    assert cli("repair", "--check", "-", input=r.stdout).returncode == 0


def test_a_row_of_results_and_text_keeps_its_results_when_its_text_is_changed(tmp_path):
    """A user row of a tool result and text, whose text a phase replaced with a string: written again, the row
    holds the result first, then the text as a block (the result was lost: its call left unanswered)."""
    rows = [
        {"system": "be brief"},
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}, {"type": "text", "text": "now the tests"}],
        },
        {"role": "assistant", "content": "t.py"},
    ]
    [t] = api.read([str(write_jsonl(tmp_path / "s.jsonl", rows))])
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "tool", "user", "assistant"]
    t.messages[4] = t.messages[4].evolve(content="now the tests, shortened")
    out = [orjson.loads(line) for line in api.write(t).splitlines()]
    assert out[3] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}, {"type": "text", "text": "now the tests, shortened"}],
    }


@pytest.mark.parametrize("key", ["timestamp", "id"])
def test_a_first_line_with_a_key_of_its_own_does_not_decide_the_format(tmp_path, key):
    """An Anthropic session whose first line is text with a key besides role and content (a "timestamp") was read as
    OpenAI chat: its tool blocks were opaque parts, repair left a result that answers no call in place and
    `repair --check` said ok. A key both readers keep alike decides nothing: the first line that can tell does."""
    rows = [
        {"role": "user", "content": "list", key: "k0"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}], key: "k1"},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "a.py"},
                {"type": "tool_result", "tool_use_id": "zz", "content": "x"},
            ],
        },
        {"role": "assistant", "content": "done", key: "k3"},
    ]
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    [t] = api.read([str(src)])
    assert t.format == "anthropic" and [c.id for c in t.messages[1].tool_calls] == ["t1"]
    check = cli("repair", "--check", str(src))
    assert check.returncode == 6 and b"orphan-result" in check.stdout + check.stderr
    r = cli("repair", str(src))
    assert r.returncode == 0, r.stderr
    got = _rows(r.stdout)
    assert got[0] == rows[0] and got[2] == {"role": "user", "content": [rows[2]["content"][0]]}


@pytest.mark.parametrize("layout", ["session", "dataset"])
@pytest.mark.parametrize("extra", [{}, {"timestamp": "2026-01-01T00:00:00Z"}])
def test_a_system_row_among_anthropic_messages_is_refused_with_the_fix(tmp_path, layout, extra):
    """A `{"role": "system", ...}` row (with a "timestamp" or without) before Anthropic's tool blocks said only
    "unknown role 'system'". Read as the system prompt, it could not be given back where it stood (restore wrote it as
    the prompt; prune and plan moved it silently: the forty-sixth session's review), so it is refused, saying where
    the Messages API wants the prompt, with the file and line."""
    rows = [
        {"role": "system", "content": "You are terse.", **extra},
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}]},
        {"role": "assistant", "content": "done"},
    ]
    src = write_jsonl(tmp_path / "s.jsonl", rows if layout == "session" else [{"id": 7, "messages": rows}])
    for cmd in (["repair", "--check"], ["repair"], ["prune"], ["compact"]):
        r = cli(*cmd, str(src))
        assert r.returncode == 3 and b"s.jsonl:1: a system message among Anthropic's messages" in r.stderr, (cmd, r.stderr)
        assert b'{"system": ...} line' in r.stderr and b'"system" key' in r.stderr and not r.stdout


def test_an_openai_file_read_as_anthropic_is_told_to_use_from_openai(tmp_path):
    """OpenAI chat with an image in Anthropic's form is detected as Anthropic (its first lines say so): its system row
    and its tool message were refused with no hint; `--from openai` reads it (and repair writes the image as
    image_url)."""
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    call = {"id": "c1", "type": "function", "function": {"name": "look", "arguments": "{}"}}
    rows = [
        {"role": "user", "content": [{"type": "text", "text": "what is this"}, image]},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "seen"},
        {"role": "assistant", "content": "ok"},
    ]
    for first in ([], [{"role": "system", "content": "sys"}]):
        src = write_jsonl(tmp_path / "o.jsonl", first + rows)
        r = cli("repair", str(src))
        assert r.returncode == 3 and b"reads with --from openai" in r.stderr, r.stderr
        r = cli("repair", "--from", "openai", str(src))
        assert r.returncode == 0, r.stderr
    assert cli("repair", "--check", "-", input=r.stdout).returncode == 0


NO_MESSAGES = {
    **ELSEWHERE,  # a record --from anthropic is given, and what the error says it is
    "openai-history": (
        {"history": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]},
        "no role (keys: history); it reads as openai: use --from openai, or no --from",
    ),
    "other-key": (
        TRAJECTORY_RECORD,
        'no role (keys: id, trajectory); its messages are under "trajectory", and Anthropic Messages reads a record\'s messages'
        ' under "messages"',
    ),
    "roleless-messages": (
        {"system": "s", "messages": [{"from": "human", "value": "hi"}]},
        'no role (keys: system, messages): its "messages" hold no role either (the first\'s keys: from, value)',
    ),
    "messages-no-list": ({"messages": "hi"}, 'no role (keys: messages): its "messages" is no list'),
    "nothing-known": ({"a": 1}, 'no role (keys: a): Anthropic Messages is a message a line ({"role", "content"}; the system prompt'),
}


@pytest.mark.parametrize("case", sorted(NO_MESSAGES))
def test_a_record_that_is_no_anthropic_message_is_named_for_what_it_is(tmp_path, case):
    """`--from anthropic` on a record that holds no Anthropic messages where the format looks ({"history": [...]} of
    OpenHands events or of OpenAI messages, a ShareGPT record, messages under a key of its own) said only "message has
    no role" (a ShareGPT record: 'a dataset record needs a "messages" list'), as `--from openai` did: the error says
    what the record is, which --from reads it or where the format wants its messages, with its file and line."""
    rec, said = NO_MESSAGES[case]
    assert_named_for_what_it_is(tmp_path, rec, said, "anthropic", "Anthropic Messages")


@pytest.mark.parametrize("fmt", [None, "anthropic", "openai"])
def test_a_record_of_messages_among_message_lines_is_refused_not_dropped(tmp_path, fmt):
    """A dataset's record (`{"system", "messages"}`) as a line of an Anthropic session file was read as a system line:
    its prompt replaced the session's and its messages were dropped without a word (exit 0). A record of messages in a
    file read as a message a line is refused, named, with its line (as OpenAI chat's reader refuses it too)."""
    call = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]}
    rows = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        call,
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}]},
        {"system": "be brief", "messages": [{"role": "user", "content": "kept?"}, {"role": "assistant", "content": "yes"}]},
    ]
    if fmt == "openai":  # the same in an OpenAI chat session
        rows[1:3] = [{"role": "assistant", "content": "ok"}]
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    r = cli("repair", *(["--from", fmt] if fmt else []), str(src))
    name = "OpenAI chat" if fmt == "openai" else "Anthropic Messages"
    line = len(rows)
    said = f"{src}:{line}: not {name}: a record of messages (keys: system, messages) in a file read as a message a line"
    assert r.returncode == 3 and r.stdout == b"" and said.encode() in r.stderr, r.stderr


CALL_TURNS = [  # an Anthropic conversation with a call: its tool_use block tells the format
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "r"}]},
    {"role": "assistant", "content": "ok"},
]
WEB_IMAGE_URL = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
OPENAI_PARTS = {  # OpenAI's own parts Anthropic Messages refuses: (role of the message that holds it, part, said, --from)
    "input_audio": ("user", {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}, "it takes no audio", "openai"),
    "file": (
        "user",
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"}},
        "a file is a document block",
        "openai",
    ),
    "refusal": ("assistant", {"type": "refusal", "refusal": "no"}, "a refusal is the assistant's text", "openai"),
    "input_image": ("user", {"type": "input_image", "image_url": "https://example.com/a.png"}, "an image is an image block", "codex"),
    "image-detail": (
        "user",
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "high"}},
        "an image block has no detail, and 'high' would be lost",
        "openai",
    ),
    "image-bmp": (
        "user",
        {"type": "image_url", "image_url": {"url": "data:image/bmp;base64,Qk0="}},
        "no base64 image of a type Anthropic takes",
        "openai",
    ),
    "image-by-path": ("user", {"type": "image_url", "image_url": {"url": "/tmp/a.png"}}, "neither http(s) nor a base64 data URL", "openai"),
    "image-of-the-assistant": (
        "assistant",
        WEB_IMAGE_URL,
        "in a user message or a tool result only, not in an assistant message",
        "openai",
    ),
}


def _with_part(role: str, part: dict) -> list[dict]:
    """CALL_TURNS, then a turn of `role` that holds `part` beside text (and an assistant answer to a user turn)."""
    turn = {"role": role, "content": [{"type": "text", "text": "see"}, part]}
    if role == "assistant":
        return [*CALL_TURNS, {"role": "user", "content": "again"}, turn]
    return [*CALL_TURNS, turn, {"role": "assistant", "content": "ok"}]


@pytest.mark.parametrize("layout", ["session", "dataset"])
@pytest.mark.parametrize("case", sorted(OPENAI_PARTS))
def test_openai_only_parts_in_anthropic_content_are_named_not_passed(tmp_path, layout, case):
    """OpenAI's own parts in Anthropic Messages content (audio, a file, a refusal, the Responses API's image, an
    image_url part no image block says exactly) passed `repair --check` (exit 0, "no violations") and were written
    back so: Anthropic refuses them. Refused, the file, line and part named, what Anthropic has for it and what reads
    an OpenAI file; the same parts in an OpenAI chat file read as they did."""
    role, part, said, fmt = OPENAI_PARTS[case]
    rows = _with_part(role, part)
    assert validate_anthropic(rows)  # tests/validator.py refuses it too
    src = write_jsonl(tmp_path / "m.jsonl", rows if layout == "session" else [{"id": 1, "messages": rows}])
    kind = part["type"]
    line = (6 if role == "assistant" else 5) if layout == "session" else 1
    for cmd in (["repair", "--check"], ["repair", "--check", "--from", "anthropic"], ["repair", "--from", "anthropic"], ["compact"]):
        r = cli(*cmd, str(src))
        assert r.returncode == 3 and r.stdout == b"", (cmd, r.stdout, r.stderr)
        assert f"{src}:{line}: content holds a{'n' if kind[0] in 'aeiou' else ''} {kind} part, ".encode() in r.stderr, r.stderr
        assert said.encode() in r.stderr and b"Anthropic Messages refuses it there" in r.stderr, r.stderr
        assert f"reads with --from {fmt})".encode() in r.stderr, r.stderr
    if fmt == "openai" and role == "user":  # OpenAI chat takes the part where it stands
        chat = [{"role": "user", "content": [{"type": "text", "text": "see"}, part]}, {"role": "assistant", "content": "ok"}]
        o = write_jsonl(tmp_path / "o.jsonl", chat)
        assert cli("repair", "--check", "--from", "openai", str(o)).returncode == 0


@pytest.mark.parametrize("layout", ["session", "dataset"])
@pytest.mark.parametrize(
    "image",
    [
        ("base64", "data:image/png;base64,iVBORw0KGgo=", {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}),
        ("jpg", "data:image/jpg;base64,/9j/", {"type": "base64", "media_type": "image/jpeg", "data": "/9j/"}),
        ("url", "https://example.com/a.png", {"type": "url", "url": "https://example.com/a.png"}),
        ("tool-result", "https://example.com/a.png", {"type": "url", "url": "https://example.com/a.png"}),
    ],
    ids=lambda v: v[0],
)
def test_an_image_url_part_in_anthropic_content_is_written_as_an_image_block(tmp_path, layout, image):
    """An OpenAI chat image_url part in an Anthropic user message or tool result passed `repair --check` and was
    written back so (Anthropic refuses it). An image block says it exactly (a data URL's media type and base64 data,
    or the URL): `--check` names it (`openai-image`), repair writes it so (the original archived: restore gives it
    back)."""
    case, url, source = image
    part = {"type": "image_url", "image_url": {"url": url}}
    if case == "tool-result":
        rows = [
            *CALL_TURNS[:2],
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [part]}]},
            CALL_TURNS[3],
        ]
        at, want = 2, [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "image", "source": source}]}]
    else:
        rows = _with_part("user", part)
        at, want = 4, [{"type": "text", "text": "see"}, {"type": "image", "source": source}]
    src = write_jsonl(tmp_path / "m.jsonl", rows if layout == "session" else [{"id": 1, "messages": rows}])
    check = cli("repair", "--check", "--from", "anthropic", str(src))
    assert check.returncode == 6 and f"message {at}: openai-image: an image in OpenAI chat's form".encode() in check.stderr, check.stderr
    r = cli("repair", "--from", "anthropic", str(src), "--archive", str(tmp_path / "a.jsonl"), "--report", str(tmp_path / "r.json"))
    assert r.returncode == 0, r.stderr
    out = _rows(r.stdout)
    got = out if layout == "session" else out[0]["messages"]
    assert validate_anthropic(rows) and validate_anthropic(got) == []  # tests/validator.py, which shares no code with repair
    assert got[at]["content"] == want
    assert [{**m, "content": rows[at]["content"]} if k == at else m for k, m in enumerate(got)] == rows
    assert orjson.loads((tmp_path / "r.json").read_bytes())["repair"]["images_as_blocks"] == 1
    assert cli("repair", "--check", "--from", "anthropic", "-", input=r.stdout).returncode == 0
    (tmp_path / "o.jsonl").write_bytes(r.stdout)
    back = cli("restore", str(tmp_path / "o.jsonl"), "--archive", str(tmp_path / "a.jsonl"))
    assert back.returncode == 0 and _rows(back.stdout) == (rows if layout == "session" else [{"id": 1, "messages": rows}])
