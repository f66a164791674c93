"""The library's calls (compactctl/api.py) as a Python user makes them."""

from __future__ import annotations

import dataclasses
import warnings

import pytest

import compactctl
from compactctl.errors import UsageError

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
