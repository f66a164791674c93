"""The library's calls (compactctl/api.py) as a Python user makes them."""

from __future__ import annotations

import dataclasses
import warnings

import pytest

import compactctl
from compactctl.errors import UsageError
from compactctl.model import ToolCall

from .conftest import SAMPLES


def test_read_takes_one_path_or_several_as_str_or_pathlib():
    """`read("s.jsonl")` read the characters of the name as paths ("s: no such file or directory"), and
    `read([Path(...)])` raised AttributeError ('PosixPath' object has no attribute 'endswith')."""
    src = SAMPLES / "long_session.jsonl"
    want = compactctl.write(compactctl.read([str(src)])[0])
    for paths in (src, str(src), [src], (src,), (p for p in [src])):
        [t] = compactctl.read(paths)
        assert compactctl.write(t) == want
    assert len(compactctl.read([SAMPLES / "dataset.jsonl", str(src)])) == len(compactctl.read([str(SAMPLES / "dataset.jsonl")])) + 1


def test_read_of_no_path_reads_nothing_not_stdin(monkeypatch):
    """An empty list (a glob that matched nothing) read standard input, as the command line does with no file."""

    class NoStdin:
        buffer = property(lambda self: pytest.fail("read standard input"))

    monkeypatch.setattr("sys.stdin", NoStdin())
    assert compactctl.read([]) == []


def test_read_says_what_it_skips_as_a_python_warning_not_on_stderr(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": [{"role": "user", "content": "hi"}]}\nnot json\n')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert len(compactctl.read([bad], on_error="skip")) == 1
    assert [str(w.message) for w in caught] == [f"skipped {bad}:2: invalid JSON: Expecting value at column 1"]
    assert capsys.readouterr() == ("", "")
    said: list[str] = []
    compactctl.read([bad], on_error="skip", warn=said.append)  # or to a function of one's own
    assert len(said) == 1


def test_restore_file_takes_pathlib_paths(tmp_path):
    """`restore_file(Path, Path, Path)` raised AttributeError ('PosixPath' object has no attribute 'lower')."""
    from .conftest import cli

    src = SAMPLES / "long_session.jsonl"
    out, arch = tmp_path / "c.jsonl", tmp_path / "c.arch.jsonl"
    assert cli("compact", str(src), "--context-window", "8000", "-o", str(out), "--archive", str(arch), "-q").returncode == 0
    compactctl.restore_file(out, arch, tmp_path / "r.jsonl")
    assert (tmp_path / "r.jsonl").read_bytes() == src.read_bytes()


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: compactctl.Budget(context_window=0), "Budget: context_window=0 is not valid: must be at least 1"),
        (lambda: compactctl.Budget(context_window=-5), "Budget: context_window=-5 is not valid: must be at least 1"),
        (lambda: compactctl.Budget(context_window="8000"), "Budget: context_window='8000' is not valid: expected int"),
        (lambda: compactctl.Budget(threshold=1.5), "Budget: threshold=1.5 is not valid: must be in (0, 1]"),
        (lambda: compactctl.Budget(threshold=0), "Budget: threshold=0 is not valid: must be in (0, 1]"),
        (lambda: compactctl.Budget(threshold=float("nan")), "Budget: threshold=nan is not valid"),
        (lambda: compactctl.Budget(threshold="0.5"), "Budget: threshold='0.5' is not valid: expected float"),
        (lambda: compactctl.Budget(tail_tokens=-1), "Budget: tail_tokens=-1 is not valid: must be 0 or more"),
        (lambda: compactctl.Budget(tail_share=2.0), "Budget: tail_share=2.0 is not valid: must be in [0, 1]"),
        (lambda: compactctl.Budget(min_tail_messages=-1), "Budget: min_tail_messages=-1 is not valid: must be 0 or more"),
        (lambda: compactctl.Budget(summary_ratio=float("inf")), "Budget: summary_ratio=inf is not valid"),
        (lambda: compactctl.Budget(summary_max=0), "Budget: summary_max=0 is not valid: must be at least 1"),
        (lambda: compactctl.Budget(last_ask="bogus"), "Budget: last_ask='bogus' is not valid: must be auto, tail or summary"),
        (lambda: dataclasses.replace(compactctl.Budget(), protect_first=-1), "Budget: protect_first=-1 is not valid"),
        (lambda: compactctl.CompactOptions(min_saving=2.0), "CompactOptions: min_saving=2.0 is not valid: must be in [0, 1]"),
        (lambda: compactctl.CompactOptions(max_strikes=0), "CompactOptions: max_strikes=0 is not valid: must be at least 1"),
        (lambda: compactctl.CompactOptions(budget=None), "CompactOptions: budget=None is not valid: expected Budget"),
        (lambda: compactctl.CompactOptions({"context_window": 8000}), "CompactOptions: budget={'context_window': 8000} is not valid"),
        (lambda: compactctl.CompactOptions(force="yes"), "CompactOptions: force='yes' is not valid: expected bool"),
    ],
)
def test_bad_budget_and_compact_options_raise_a_usage_error_when_built(build, message):
    """Budget and CompactOptions took any value: a window of 0 or -5 gave CannotFit ("the target of 0 tokens"),
    `threshold="0.5"` a ValueError from int() of the string repeated, `context_window="8000"` a TypeError,
    `budget=None` an AttributeError ('tail'), all from deep inside `compact`; `threshold=1.5`, `last_ask="bogus"`,
    `min_saving=2.0` ran as if meant, and `max_strikes=0` skipped every transcript. As `Options` does: a UsageError
    when built, naming the class, the field and what it must be."""
    with pytest.raises(UsageError) as e:
        build()
    assert message in str(e.value), str(e.value)


@pytest.mark.parametrize(
    "field", [{"context_window": 1}, {"threshold": 1.0}, {"tail_share": 0.0}, {"tail_share": 1.0}, {"min_tail_messages": 0}]
)
def test_a_budget_at_the_edge_of_a_range_is_built(field):
    """The ranges' own ends are values the command line allows: built, not refused."""
    assert compactctl.Budget(**field).target >= 0


@pytest.mark.parametrize("role", ["function", "bogus", "User", None])
def test_a_message_built_with_an_unknown_role_is_refused_not_written(role, monkeypatch):
    """The readers refuse a role none of the APIs take; a Message built through the library passed repair as it was,
    `check` found nothing, and `write` gave `{"role": "function", ...}`, which every API refuses."""
    from compactctl.errors import DataError

    msgs = [compactctl.Message(role="user", content="fix it"), compactctl.Message(role=role, content="out")]
    msgs.append(compactctl.Message(role="assistant", content="done"))
    t = compactctl.Transcript(messages=msgs, id="built")
    assert [(v.index, v.rule) for v in compactctl.check(t)] == [(1, "unknown-role")]
    with pytest.raises(DataError, match=r"built: message 2: unknown role"):
        compactctl.repair(t)
    _written_and_compacted_never(t, "unknown role", monkeypatch)
    msgs[1] = compactctl.Message(role="tool", content="out", tool_call_id="x")  # a known role: no such error
    assert all(v.rule != "unknown-role" for v in compactctl.check(t))


def _written_and_compacted_never(t, match: str, monkeypatch) -> None:
    """`t` is refused (DataError matching `match`) by every writer, written as it was or made a user's or an
    assistant's, and by `compact` before any work on it."""
    from compactctl.errors import DataError

    for to in (None, "anthropic", "sharegpt", "codex"):
        with pytest.raises(DataError, match=match):
            compactctl.write(t, to)

    def no_work(*a, **k):  # pragma: no cover (the point: never reached)
        raise AssertionError("compacted a transcript it then refuses (an LLM's call too)")

    monkeypatch.setattr("compactctl.pipeline._compact", no_work)
    with pytest.raises(DataError, match=match):
        compactctl.compact(t, compactctl.make_counter("gpt-4o"), compactctl.OfflineSummarizer())


@pytest.mark.parametrize("content", [{"type": "text", "text": "out"}, 42, True, ("a", "b")])
def test_a_message_built_with_content_no_api_takes_is_refused_not_written(content, monkeypatch):
    """The readers refuse content that is none of a string, null or a list of parts ("content must be a string, null
    or a list of parts, got dict"); a Message built through the library with such content passed `check` (nothing
    said), repair kept it, and `write` gave `{"role": "user", "content": {...}}`, which both APIs refuse."""
    from compactctl.errors import DataError

    msgs = [compactctl.Message(role="user", content="fix it"), compactctl.Message(role="assistant", content="looking")]
    msgs += [compactctl.Message(role="user", content=content), compactctl.Message(role="assistant", content="done")]
    t = compactctl.Transcript(messages=msgs, id="built")
    name = type(content).__name__
    assert [(v.index, v.rule, v.detail) for v in compactctl.check(t)] == [
        (2, "bad-content", f"content is a {name}, not a string, null or a list of parts")
    ]
    with pytest.raises(DataError, match=rf"built: message 3: content must be a string, null or a list of parts, got {name}"):
        compactctl.repair(t)
    _written_and_compacted_never(t, "content must be", monkeypatch)
    for fine in ("", None, [], [{"type": "text", "text": "out"}]):  # what the readers take: no such error
        msgs[2] = compactctl.Message(role="user", content=fine)
        assert all(v.rule != "bad-content" for v in compactctl.check(t))
    msgs[2] = compactctl.Message(role="user")  # no content at all (MISSING)
    assert all(v.rule != "bad-content" for v in compactctl.check(t))


_PDF = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}}
_IMAGE_URL = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
_IMAGE = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
# Parts the reader of a transcript's format refuses (formats/openai.py, formats/anthropic.py, blocks.check_block): the
# format, the role of the message that holds it, the part, and what is said of it
REFUSED_PARTS = {
    "openai-thinking": (
        "openai",
        "assistant",
        {"type": "thinking", "thinking": "hmm", "signature": "c2ln"},
        "content holds a thinking block, Anthropic's form of the model's reasoning: OpenAI chat refuses it there (its text"
        " goes in the message's reasoning_content, without its signature)",
    ),
    "openai-redacted_thinking": ("openai", "assistant", {"type": "redacted_thinking", "data": "ZW5j"}, "only Anthropic reads it"),
    "openai-document": ("openai", "user", _PDF, "content holds a document block, Anthropic's form of a file: OpenAI chat refuses it"),
    "openai-server_tool_use": (
        "openai",
        "assistant",
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
        "content holds a server_tool_use block, one of Anthropic's own: OpenAI chat refuses it there (it has none)",
    ),
    "openai-image-by-file-id": ("openai", "user", {"type": "image", "source": {"type": "file", "file_id": "f"}}, "by Anthropic's file id"),
    "openai-image-of-the-assistant": ("openai", "assistant", _IMAGE, "in a user message only, not in an assistant message"),
    "openai-image-of-a-tool": ("openai", "tool", _IMAGE, "in a user message only, not in a tool message"),
    "openai-no-type": ("openai", "user", {"text": "x"}, "a content part has no type"),
    "anthropic-input_audio": (
        "anthropic",
        "user",
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
        "content holds an input_audio part, OpenAI chat's audio input: Anthropic Messages refuses it there (it takes no audio)",
    ),
    "anthropic-file": (
        "anthropic",
        "user",
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0="}},
        "a file is a document block",
    ),
    "anthropic-refusal": ("anthropic", "assistant", {"type": "refusal", "refusal": "no"}, "a refusal is the assistant's text"),
    "anthropic-input_image": (
        "anthropic",
        "user",
        {"type": "input_image", "image_url": "https://example.com/a.png"},
        "the Responses API's form",
    ),
    "anthropic-image_url-of-the-assistant": ("anthropic", "assistant", _IMAGE_URL, "not in an assistant message"),
    "anthropic-image_url-detail": (
        "anthropic",
        "user",
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "high"}},
        "an image block has no detail",
    ),
    "anthropic-no-type": ("anthropic", "user", {"text": "x"}, "a content block has no type"),
    "claude_code-no-type": ("claude_code", "user", {"text": "x"}, "a content block has no type"),
}


def _built(fmt: str, role: str, part: dict):
    """A transcript built through the library, of format `fmt`: a `role` message holds `part` beside text (message
    index 1 when the assistant's, 2 when the user's or a tool's)."""
    M = compactctl.Message
    turn = M(role=role, content=[{"type": "text", "text": "see"}, part], tool_call_id="c1" if role == "tool" else None)
    if role == "assistant":
        msgs = [M(role="user", content="fix it"), turn, M(role="user", content="more"), M(role="assistant", content="done")]
    else:
        calls = [ToolCall("c1", "look", "{}")] if role == "tool" else []
        msgs = [
            M(role="user", content="fix it"),
            M(role="assistant", content="ok", tool_calls=calls),
            turn,
            M(role="assistant", content="done"),
        ]
    return compactctl.Transcript(messages=msgs, id="built", format=fmt)


@pytest.mark.parametrize("case", sorted(REFUSED_PARTS))
def test_a_message_built_with_a_part_its_formats_reader_refuses_is_refused_not_written(case, monkeypatch):
    """A transcript built through the library whose content held a part no API of its format takes (Anthropic's
    thinking or document block in OpenAI chat, OpenAI's audio or refusal part in Anthropic's messages, a part with no
    type), which the format's reader refuses on input, passed `check`, `repair` and `write`: it was written as it
    was. It is bad content, said with the message and what the reader says of the part (no --from hint: it was read
    from no file), and refused by repair, every writer and compact."""
    from compactctl.errors import DataError

    fmt, role, part, said = REFUSED_PARTS[case]
    t = _built(fmt, role, part)
    i = 1 if role == "assistant" else 2
    found = [(v.index, v.rule, v.detail) for v in compactctl.check(t) if v.rule == "bad-content"]
    assert len(found) == 1 and found[0][:2] == (i, "bad-content") and said in found[0][2], found
    assert "--from" not in found[0][2]
    with pytest.raises(DataError, match=rf"built: message {i + 1}: ") as e:
        compactctl.repair(t)
    assert str(e.value).endswith(found[0][2]), (str(e.value), found)
    _written_and_compacted_never(t, f"message {i + 1}: ", monkeypatch)


TAKEN_PARTS = {  # what the readers take (repair mends the images): no bad-content
    "openai-image-of-the-user": ("openai", "user", _IMAGE),  # written as image_url
    "openai-image_url": ("openai", "user", _IMAGE_URL),
    "anthropic-image_url-of-the-user": ("anthropic", "user", _IMAGE_URL),  # written as an image block
    "anthropic-image_url-of-a-tool": ("anthropic", "tool", _IMAGE_URL),
    "anthropic-thinking": ("anthropic", "assistant", {"type": "thinking", "thinking": "hmm", "signature": "c2ln"}),
    "anthropic-document": ("anthropic", "user", _PDF),
    "claude_code-image-of-a-tool": (
        "claude_code",
        "tool",
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
    ),
    "codex-no-type": ("codex", "user", {"text": "x"}),  # the Codex reader takes it
}


def test_a_built_transcript_may_hold_what_its_formats_reader_takes_and_nothing_else():
    """Bad content is what the format's reader refuses, no more: what it takes (an image repair writes in the format's
    form, Anthropic's own blocks in Anthropic's messages, Claude Code's image in a result, any part in Codex's), built
    through the library, is repaired and written."""
    cases = {**{k: (*v[:3], True) for k, v in REFUSED_PARTS.items()}, **{k: (*v, False) for k, v in TAKEN_PARTS.items()}}
    bad = {}
    for case, (fmt, role, part, _) in cases.items():
        t = _built(fmt, role, part)
        bad[case] = any(v.rule == "bad-content" for v in compactctl.check(t))
        if not bad[case]:
            compactctl.write(compactctl.repair(t)[0])
    assert bad == {case: refused for case, (*_, refused) in cases.items()}
