"""Round trips through every writable format, over generated transcripts (hypothesis).

For each format F that compactctl writes: a transcript read from OpenAI chat, converted to F (`convert --to F`) and
read back, says what it said, up to what README's "Formats" section says F cannot hold (`view` below, a normalizer
per format); written again from what was read, it is the same bytes; converted from a valid transcript, it is valid
(`check`); and no JSON object per line makes a reader (or a writer after it) fail other than with a data error that
names the file and the line. COMPACTCTL_PROPERTY_EXAMPLES raises the number of examples (a few thousand finds more,
slowly); the default keeps each test within a few seconds.
"""

from __future__ import annotations

import json
import os
import warnings
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactctl import api, formats
from compactctl.errors import DataError, UsageError
from compactctl.model import SYSTEM_ROLES, Transcript, call_input
from compactctl.pairs import match
from compactctl.phases.rules import check

EXAMPLES = int(os.environ.get("COMPACTCTL_PROPERTY_EXAMPLES", "40"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
WRITABLE = ("openai", "anthropic", "sharegpt", "claude_code", "codex")

# -- strategies ---------------------------------------------------------------------------------------------------

PLAIN = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)  # astral characters included
ODD = st.sampled_from(["", " ", "\n", "\r\n", "\t", "\u2028", "\x00", "\x7f", "😀", "𝔘", "\u200b", "\ufeff", '"', "\\", "{}", "null"])
SURROGATE = st.sampled_from(["\ud800", "\udfff", "\udc00x"])  # lone: read as U+FFFD
TEXT = st.lists(st.one_of(PLAIN, ODD, SURROGATE, st.just("x" * 1200)), max_size=4).map("".join)
NUMBER = st.one_of(
    st.integers(-(2**63), 2**64 - 1),
    st.sampled_from([2**63 - 1, -(2**63), 2**63, 2**64 - 1, 2**64, 2**70, -0.0, 0.0, 1e16, 5e-324, 1.7976931348623157e308]),
    st.floats(allow_nan=False, allow_infinity=False),
)
JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), NUMBER, TEXT),
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(PLAIN, c, max_size=3)),
    max_leaves=6,
)
IDS = st.one_of(st.sampled_from(["call_a", "toolu_01", "c-1", "x" * 40]), st.text(alphabet="abcXYZ019_-", min_size=1, max_size=40))
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}


def _json_text(value) -> str:
    return json.dumps(value)  # ASCII: a lone surrogate as its escape, as an editor or Python writes it


@st.composite
def contents(draw, role: str):
    kind = draw(st.sampled_from(["text", "text", "parts"] + (["empty"] if role == "assistant" else [])))
    if kind == "text":
        return draw(TEXT)
    if kind == "empty":
        return draw(st.sampled_from(["", None]))
    n = draw(st.integers(0, 3))
    return [IMAGE if role == "user" and draw(st.booleans()) else {"type": "text", "text": draw(TEXT)} for _ in range(n)]


@st.composite
def arguments(draw) -> str:
    kind = draw(st.sampled_from(["object", "object", "none", "not json", "list"]))
    if kind == "object":
        return _json_text(draw(st.dictionaries(PLAIN, JSON, max_size=3)))
    if kind == "none":
        return ""
    if kind == "not json":
        return "{not json " + draw(PLAIN)
    return _json_text(draw(st.lists(JSON, max_size=2)))


@st.composite
def chat_rows(draw) -> list[dict]:
    """An OpenAI chat conversation: a user turn first, assistant turns with parallel calls answered in order or not,
    results as text or parts, system and developer turns anywhere, reasoning, participant names."""
    rows: list[dict] = []
    if draw(st.booleans()):
        rows.append({"role": "system", "content": draw(contents("system"))})
    rows.append({"role": "user", "content": draw(contents("user"))})
    used: set[str] = set()
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["user", "assistant", "calls", "calls", "system"]))
        if kind == "system":
            rows.append({"role": draw(st.sampled_from(SYSTEM_ROLES)), "content": draw(contents("system"))})
        elif kind == "user":
            rows.append({"role": "user", "content": draw(contents("user"))})
        elif kind == "assistant":
            d = {"role": "assistant", "content": draw(contents("assistant"))}
            if draw(st.integers(0, 3)) == 0:
                d["reasoning_content"] = draw(TEXT)
            rows.append(d)
        else:
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                cid = draw(IDS)
                cid = cid if cid not in used else f"{cid[:30]}_{len(used)}"
                used.add(cid)
                calls.append(
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": draw(st.sampled_from(["bash", "read_file"])), "arguments": draw(arguments())},
                    }
                )
            rows.append({"role": "assistant", "content": draw(st.one_of(st.none(), TEXT)), "tool_calls": calls})
            order = draw(st.permutations(range(len(calls))))
            for k in order:
                content = draw(st.one_of(TEXT, st.lists(st.builds(lambda t: {"type": "text", "text": t}, TEXT), min_size=1, max_size=2)))
                rows.append({"role": "tool", "tool_call_id": calls[k]["id"], "content": content})
    return rows


def _read(tmp: str, data: bytes, fmt: str | None = None) -> list[Transcript]:
    path = os.path.join(tmp, "in.jsonl")
    with open(path, "wb") as f:
        f.write(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the lone surrogates replaced
        return api.read(path, fmt=fmt)


def _source(rows: list[dict], layout: str) -> bytes:
    if layout == "dataset":
        return _json_text({"messages": rows}).encode() + b"\n"
    return b"".join(_json_text(r).encode() + b"\n" for r in rows)


def _written(t: Transcript, to: str | None = None) -> bytes:
    return b"".join(line + b"\n" for line in formats.write(t, to, Counter()))


def _changed(t: Transcript) -> Transcript:
    """Every message changed: writers build each from the model, none is written as it came."""
    return t.evolve(messages=[m.evolve() for m in t.messages])


# -- what each format holds (README, "Formats") ------------------------------------------------------------------


def view(t: Transcript, fmt: str) -> list[tuple]:
    """What a transcript says, as `fmt` holds it: per message its role, its text and the calls it makes (name and
    arguments as an object: Anthropic's `input`), a result the position of the call it answers; less what README
    says `fmt` cannot hold."""
    msgs = list(t.messages)
    pairs, _ = match(msgs)
    answers = {p.result: (p.call_msg, p.call_pos) for p in pairs}
    calls_before = {}
    n = 0
    for i, m in enumerate(msgs):
        calls_before[i] = n
        n += len(m.tool_calls)
    rows: list[tuple] = []
    for i, m in enumerate(msgs):
        role = "system" if m.role in SYSTEM_ROLES else m.role
        text = m.text()
        if fmt == "sharegpt" and isinstance(m.content, list):  # an image as a line that says what was there
            text = "\n".join(p.get("text", "") if p.get("type") == "text" else "[image: image/png]" for p in m.content)
        if role == "assistant" and m.tool_calls and fmt == "sharegpt":
            text = text.strip()  # Hermes: the text beside <tool_call> tags is read stripped
        row: tuple = (role, text, tuple((c.name, _arguments(c.arguments)) for c in m.tool_calls))
        if role == "tool":
            at = answers.get(i)
            row += (None if at is None else calls_before[at[0]] + at[1],)
        # reasoning: Anthropic replays only its own signed thinking, the Responses API only its own reasoning items
        if fmt not in ("anthropic", "claude_code", "codex"):
            row += (m.reasoning or None,)
        rows.append(row)
    if fmt in ("anthropic", "sharegpt"):  # one system prompt, first: every system message joined to it
        prompts = [r[1] for r in rows if r[0] == "system"]
        rows = [r for r in rows if r[0] != "system"]
        joined = " ".join(" ".join(prompts).split())  # text after text, or blocks after blocks
        if prompts and (joined or fmt == "sharegpt"):  # Anthropic refuses a prompt without text: left out
            rows.insert(0, ("system", joined, ()) + ((None,) if fmt == "sharegpt" else ()))
    if fmt == "sharegpt":  # results pair with calls by position: parallel ones are written in the order of their calls
        rows = _in_call_order(rows)
    if fmt in ("claude_code", "codex"):  # an empty system prompt is written as no line
        rows = [r for r in rows if r[0] != "system" or r[1].strip()]
    if fmt == "codex":
        rows = _as_items(rows)
    return rows


def _in_call_order(rows: list[tuple]) -> list[tuple]:
    out = list(rows)
    i = 0
    while i < len(out):
        j = i
        while j < len(out) and out[j][0] == "tool":
            j += 1
        out[i:j] = sorted(out[i:j], key=lambda r: (r[3] is None, r[3] or 0))
        i = j + 1
    return out


def _as_items(rows: list[tuple]) -> list[tuple]:
    """Codex's Responses items have no turn boundary: an assistant turn with neither text nor calls is no item,
    and the calls of an assistant turn without text are read as the calls of the assistant turn before them."""
    out: list[tuple] = []
    for r in rows:
        if r[0] == "assistant" and not r[1] and not r[2]:
            continue
        if r[0] == "assistant" and not r[1] and out and out[-1][0] == "assistant" and not out[-1][2]:
            out[-1] = (*out[-1][:2], r[2])
            continue
        out.append(r)
    return out


def _arguments(text: str):
    return json.dumps(call_input(text), sort_keys=True)


# -- the properties ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", WRITABLE)
@SETTINGS
@given(rows=chat_rows(), layout=st.sampled_from(["dataset", "session"]))
def test_a_conversion_reads_back_as_it_was_less_what_readme_says_is_lost(tmp_path_factory, fmt, rows, layout):
    tmp = str(tmp_path_factory.mktemp("rt"))
    [t] = _read(tmp, _source(rows, layout), "openai")
    out = _written(t, fmt)
    [back] = _read(tmp, out, fmt)
    assert back.format == fmt
    assert view(back, fmt) == view(t, fmt), out[:2000]


@pytest.mark.parametrize("fmt", WRITABLE)
@SETTINGS
@given(rows=chat_rows(), layout=st.sampled_from(["dataset", "session"]))
def test_a_written_transcript_read_and_written_again_is_the_same_bytes(tmp_path_factory, fmt, rows, layout):
    tmp = str(tmp_path_factory.mktemp("idem"))
    [t] = _read(tmp, _source(rows, layout), "openai")
    out = _written(_changed(t), fmt)
    [back] = _read(tmp, out, fmt)
    assert _written(back) == out  # untouched: as it came
    assert _written(_changed(back)) == out  # every message rebuilt from the model


@pytest.mark.parametrize("fmt", WRITABLE)
@SETTINGS
@given(rows=chat_rows(), layout=st.sampled_from(["dataset", "session"]))
def test_a_valid_transcript_converts_to_a_valid_one(tmp_path_factory, fmt, rows, layout):
    tmp = str(tmp_path_factory.mktemp("valid"))
    [t] = _read(tmp, _source(rows, layout), "openai")
    if check(t):
        return
    out = _written(t, fmt)
    [back] = _read(tmp, out, fmt)
    assert check(back) == [], out[:2000]


KEYS = st.sampled_from(
    "role content type text message payload conversations messages from value tool_calls function name arguments id "
    "tool_call_id tool_use_id input system uuid parentUuid sessionId call_id output history action observation cause "
    "toolCalls thoughts result args extras tool_call_metadata isMeta replacement_history image_url source is_error "
    "thinking signature reasoning_content function_call summary encrypted_content timestamp tools traj".split()
)
VALUES = st.sampled_from(
    "user assistant system tool developer function gpt human observation function_call text tool_use tool_result "
    "thinking image message function_call_output response_item compacted session_meta reasoning local_shell_call "
    "custom_tool_call input_text output_text input_image gemini run compact_boundary redacted_thinking".split()
)
ANY = st.recursive(
    st.one_of(st.none(), st.booleans(), NUMBER, VALUES, TEXT),
    lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(KEYS, c, max_size=5)),
    max_leaves=20,
)


@SETTINGS
@given(
    records=st.lists(st.dictionaries(KEYS, ANY, min_size=1, max_size=6), min_size=1, max_size=4),
    fmt=st.sampled_from([None, *WRITABLE, "gemini", "openhands"]),
    to=st.sampled_from([None, *WRITABLE]),
)
def test_any_json_object_per_line_is_read_or_refused_by_file_and_line(tmp_path_factory, records, fmt, to):
    tmp = str(tmp_path_factory.mktemp("any"))
    try:
        read = _read(tmp, b"".join(_json_text(r).encode() + b"\n" for r in records), fmt)
    except DataError as e:
        assert e.source.endswith("in.jsonl") and (e.line is None or 1 <= e.line <= len(records)), str(e)
        return
    for t in read:
        try:
            _written(t, to)
            _written(_changed(t), to)
        except UsageError:  # several records as one Claude Code or Codex session, a read-only target
            pass


# -- regressions the properties found ----------------------------------------------------------------------------


def _lines(rows: list[dict]) -> bytes:
    return b"".join(_json_text(r).encode() + b"\n" for r in rows)


@pytest.mark.parametrize(
    "record,what",
    [
        ({"action": [], "content": None}, "in.jsonl:1: an event's action must be a string, got list"),
        ({"observation": {"x": 1}}, "in.jsonl:1: an event's observation must be a string, got dict"),
        ({"history": [{"action": 1}]}, "in.jsonl:1: an event's action must be a string, got int"),
    ],
)
def test_an_openhands_event_whose_action_is_no_string_is_a_data_error(tmp_path, record, what):
    """It failed with a TypeError (unhashable type: 'list'), or read a dict's keys as events."""
    with pytest.raises(DataError, match=what):
        _read(str(tmp_path), _lines([record]), "openhands")


def test_openhands_ids_and_texts_of_other_json_types_are_read(tmp_path):
    """An `id`/`cause` that is an object, a tool_call_metadata that is a list, a text that is a number: read, not a
    TypeError (unhashable type, 'list' object has no attribute 'get')."""
    events = [
        {"action": "message", "source": "user", "args": {"content": 7}},
        {"id": {"x": 1}, "action": "run", "args": {"command": "ls"}, "tool_call_metadata": []},
        {"cause": [1], "observation": "run", "content": ["a.py"], "extras": {"exit_code": 0}},
    ]
    [t] = _read(str(tmp_path), _lines(events), "openhands")
    assert [m.role for m in t.messages] == ["user", "assistant", "tool"]
    assert t.messages[0].content == "7" and t.messages[2].content == '["a.py"]\n[exit code: 0]'
    assert check(t) == []


def test_gemini_messages_that_are_no_list_are_a_data_error(tmp_path):
    with pytest.raises(DataError, match='in.jsonl:1: a Gemini session\'s "messages" must be a list, got int'):
        _read(str(tmp_path), _lines([{"sessionId": "s", "messages": 1}]), "gemini")


def test_a_line_with_a_lone_surrogate_and_an_integer_beyond_64_bits_converts(tmp_path):
    """The integer was kept exact in the message read (json.loads), and every writer of a converted or changed
    message failed with 'TypeError: Integer exceeds 64-bit range'. Now the message holds the nearest float (as
    orjson reads it) and the line as it came keeps the integer exact."""
    line = b'{"role": "user", "content": "a\\ud800", "n": 18446744073709551616}\n'
    [t] = _read(str(tmp_path), line, "openai")
    assert _written(t) == b'{"role": "user", "content": "a\xef\xbf\xbd", "n": 18446744073709551616}\n'
    assert t.messages[0].extra["n"] == 2.0**64
    for fmt in WRITABLE:
        assert _written(_changed(t), fmt)
    with pytest.raises(DataError, match=r"the number 100000000000\.\.\. \(401 digits\) is not finite"):
        _read(str(tmp_path), b'{"role": "user", "content": "hi", "n": 1' + b"0" * 400 + b"}\n", "openai")


def test_a_claude_code_prompt_line_changed_is_written_as_it_was_read(tmp_path):
    """A system prompt written as a meta user line (text) was written, once changed, as a list of blocks."""
    rows = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    [t] = _read(str(tmp_path), _lines(rows), "openai")
    out = _written(t, "claude_code")
    [back] = _read(str(tmp_path), out, "claude_code")
    assert back.messages[0].role == "system"
    assert _written(_changed(back)) == out


def test_hermes_text_beside_calls_is_written_as_it_reads_back(tmp_path):
    """The text beside <tool_call> tags is read stripped: written unstripped, the record changed when written again."""
    rows = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": " look \n",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
    ]
    [t] = _read(str(tmp_path), _source(rows, "dataset"), "openai")
    out = _written(t, "sharegpt")
    assert b'"value":"look\\n<tool_call>' in out
    [back] = _read(str(tmp_path), out, "sharegpt")
    assert _written(_changed(back)) == out


@pytest.mark.parametrize("content", ["", " "])
def test_a_system_prompt_without_text_is_no_codex_line(tmp_path, content):
    """It was written as a developer message of a blank input_text, which the check finds empty (convert's output
    said to be one no API takes); Claude Code leaves such a prompt out too."""
    rows = [{"role": "system", "content": content}, {"role": "user", "content": "hi"}]
    [t] = _read(str(tmp_path), _source(rows, "dataset"), "openai")
    assert check(t) == []
    out = _written(t, "codex")
    assert b"developer" not in out
    [back] = _read(str(tmp_path), out, "codex")
    assert check(back) == [] and [m.role for m in back.messages] == ["user"]


def test_an_openhands_call_has_the_models_arguments_not_the_actions_fields(tmp_path):
    """A call was read from the action's fields: OpenHands' defaults the model never sent (`"start": 0, "end": -1`,
    `"view_range": null`), the harness's flags (`"impl_source": "oh_aci"`, `"confirmation_state"`, `"blocking"`), and
    no editor `command`. The model response tool_call_metadata keeps has the call as the model wrote it; without one,
    the action's fields less the harness's and the unset ones."""
    meta = {
        "function_name": "str_replace_editor",
        "tool_call_id": "t1",
        "model_response": {
            "choices": [
                {
                    "message": {
                        "tool_calls": [
                            {"id": "t0", "function": {"name": "execute_bash", "arguments": '{"command": "ls"}'}},
                            {"id": "t1", "function": {"name": "str_replace_editor", "arguments": '{"command": "view", "path": "/w/p.c"}'}},
                        ]
                    }
                }
            ]
        },
    }
    read_args = {"path": "/w/p.c", "start": 0, "end": -1, "thought": "look", "impl_source": "oh_aci", "view_range": None}
    run_args = {"command": "ls", "is_input": False, "blocking": False, "cwd": None, "hidden": False, "confirmation_state": "confirmed"}
    events = [
        {"id": 1, "action": "message", "source": "user", "args": {"content": "fix it"}},
        {"id": 2, "action": "read", "source": "agent", "args": read_args, "tool_call_metadata": meta},
        {"id": 3, "cause": 2, "observation": "read", "content": "     1\tint x;", "tool_call_metadata": meta},
        {"id": 4, "action": "run", "source": "agent", "args": run_args},
        {"id": 5, "cause": 4, "observation": "run", "content": "p.c", "extras": {"exit_code": 0}},
    ]
    [t] = _read(str(tmp_path), _lines(events), "openhands")
    [read], [run] = t.messages[1].tool_calls, t.messages[3].tool_calls
    assert (read.id, read.name, read.arguments) == ("t1", "str_replace_editor", '{"command": "view", "path": "/w/p.c"}')
    assert t.messages[1].content == "look" and t.messages[2].tool_call_id == "t1"
    assert json.loads(run.arguments) == {"command": "ls", "is_input": False}
    assert check(t) == []
