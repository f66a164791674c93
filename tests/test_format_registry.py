"""The format registry: one entry per format module, what it provides, typed lookups."""

from __future__ import annotations

from importlib import import_module

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from compactctl import api
from compactctl.errors import UsageError
from compactctl.formats import FORMAT_NAMES, REGISTRY, Format, detect, get_format

from .conftest import SAMPLES, cli, write_jsonl
from .rows import ELSEWHERE


@pytest.mark.parametrize("entry", REGISTRY, ids=lambda r: r.name)
def test_each_entry_says_what_its_module_provides(entry):
    mod = import_module(f"compactctl.formats.{entry.name}")
    assert entry.name == mod.NAME and isinstance(mod.CARRIER_KEYS, tuple)
    assert hasattr(mod, "write") == entry.writes
    assert hasattr(mod, "dropped_records") == entry.line_log
    fmt = get_format(entry.name.replace("_", "-"))
    assert isinstance(fmt, Format) and fmt.name == fmt.NAME == entry.name
    assert (fmt.write is not None) == entry.writes and (fmt.dropped_records is not None) == entry.line_log
    assert fmt.sniff is mod.sniff and fmt.read is mod.read and fmt.carrier_keys == mod.CARRIER_KEYS


def test_every_module_is_registered_once():
    from pathlib import Path

    import compactctl.formats as pkg

    modules = {p.stem for p in Path(pkg.__file__).parent.glob("*.py")} - {
        "__init__",
        "registry",
        "reader",
        "convert",
        "blocks",
        "linelog",
        "parts",
        "toolspec",
    }  # the package's own parts and helpers, not formats
    assert sorted(FORMAT_NAMES) == sorted(modules) and len(set(FORMAT_NAMES)) == len(FORMAT_NAMES)


def test_unknown_format_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown format 'nope'.*claude-code"):
        get_format("nope")


def test_detection_goes_through_the_registry():
    found = detect({"type": "user", "sessionId": "s", "message": {"role": "user", "content": "hi"}})
    assert found is not None and found[0] is get_format("claude_code") and found[1] == "session"
    assert detect({"role": "user", "content": "hi"}) == (get_format("openai"), "session")
    assert detect(["not", "a", "record"]) is None


def test_a_read_only_format_cannot_be_written_to():
    [t] = api.read([str(SAMPLES / "long_session.jsonl")])
    with pytest.raises(UsageError, match="gemini is read-only"):
        api.write(t, "gemini")
    assert api.write(t, "openai") == api.write(t)  # the input's own format: written back as it was read


# Keys the sniffers look at, and values that make them say yes (from each module's sniff).
_KEYS = ["type", "role", "content", "messages", "system", "sessionId", "uuid", "leafUuid", "payload", "history", "action",
         "observation", "conversations", "call_id", "summary", "replacement_history", "from", "x"]  # fmt: skip
_VALUES = st.sampled_from(
    [
        "user",
        "assistant",
        "system",
        "summary",
        "session_meta",
        "response_item",
        "compacted",
        "message",
        "function_call",
        "file-history-snapshot",
        "input_text",
        "tool_use",
        "run",
        "gemini",
        1,
        None,
    ]  # fmt: skip
)
_PART = st.fixed_dictionaries({}, optional={"type": _VALUES, "text": _VALUES, "value": _VALUES})
_ITEM = st.dictionaries(st.sampled_from(_KEYS), st.one_of(_VALUES, st.lists(_PART, max_size=2)), max_size=4)
_RECORD = st.dictionaries(
    st.sampled_from(_KEYS), st.one_of(_VALUES, st.lists(_PART, max_size=2), st.lists(_ITEM, max_size=3), _ITEM), max_size=5
)


@settings(max_examples=3000, deadline=None)
@given(_RECORD)
# one record each sniffer takes, by each of its ways
@example({"type": "user", "sessionId": "s"})
@example({"type": "file-history-snapshot"})
@example({"type": "response_item", "payload": {}})
@example({"type": "compacted", "replacement_history": []})
@example({"type": "message", "role": "user"})
@example({"role": "user", "content": [{"type": "input_text", "text": "x"}]})
@example({"sessionId": "s", "messages": [{"type": "user"}]})
@example({"history": [{"action": "run"}]})
@example({"observation": "run"})
@example({"conversations": [{"from": "human"}]})
@example({"messages": [{"role": "user", "content": [{"type": "text", "value": "x"}]}]})
@example({"messages": [{"role": "user", "content": "x"}], "system": "s"})
@example({"role": "user", "content": [{"type": "tool_use"}]})
@example({"system": "s"})
@example({"messages": [{"role": "user", "content": "x"}]})
def test_a_format_is_skipped_only_for_records_its_sniffer_refuses(obj):
    """Detection skips a format (and does not import it) when the record has none of the keys the registry says
    its sniffer needs: that must never hide a record the sniffer would take."""
    for entry in REGISTRY:
        if entry.needs is not None and not any(k in obj for k in entry.needs):
            assert get_format(entry.name).sniff(obj) is None, (entry.name, obj)


def test_the_needed_keys_hold_on_the_samples_and_the_corpus():
    from .conftest import CORPUS

    paths = sorted(SAMPLES.glob("*.jsonl")) + (sorted(CORPUS.rglob("*.jsonl"))[:200] if CORPUS.is_dir() else [])
    seen = 0
    for p in paths:
        with open(p, "rb") as f:
            for line in f.readlines()[:50]:
                try:
                    obj = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(obj, dict):
                    seen += 1
                    test_a_format_is_skipped_only_for_records_its_sniffer_refuses.hypothesis.inner_test(obj)
    assert seen > 100


def test_an_openai_record_is_detected_without_importing_the_other_formats():
    import subprocess
    import sys

    code = (
        "import sys; from compactctl.formats import detect; print(detect({'role': 'user', 'content': 'hi'})[0].name); "
        "print(sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('compactctl.formats.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "openai"
    for skipped in ("claude_code", "gemini", "openhands", "sharegpt"):
        assert skipped not in out[1]


# Files whose first records tell one format (the line that told it), read with no --from: OpenAI chat and Anthropic
# messages, a message a line (session) or a record a line (dataset, read where the work runs).
_CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
}
_USE = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]}
MIXED_HEADS = {
    "openai-session": ("OpenAI chat", 1, [_CALL, {"role": "tool", "tool_call_id": "c1", "content": "a.py"}]),
    "openai-session-told-later": ("OpenAI chat", 2, [{"role": "user", "content": "list"}, _CALL]),  # read ahead
    "anthropic-session": ("Anthropic Messages", 2, [{"role": "user", "content": "list"}, _USE]),
    "openai-dataset": ("OpenAI chat", 1, [{"messages": [{"role": "user", "content": "list"}, _CALL]}]),
    "anthropic-dataset": ("Anthropic Messages", 1, [{"system": "be brief", "messages": [{"role": "user", "content": "hi"}]}]),
}


@pytest.mark.parametrize("other", sorted(ELSEWHERE))
@pytest.mark.parametrize("head", sorted(MIXED_HEADS))
def test_a_file_that_mixes_formats_is_told_so_not_told_to_use_from(tmp_path, head, other):
    """A record of another format in a file whose format was told from its first records said "it reads as X: use
    --from X, or no --from": no --from is what was given, and --from X refuses the file's other lines. With no --from
    the error says which format the file was told to be, from which line, and that a file holds one; with --from (a
    format forced, maybe the wrong one) it says which --from reads the record, as it did."""
    said, told, rows = MIXED_HEADS[head]
    rec, _ = ELSEWHERE[other]
    src = write_jsonl(tmp_path / "m.jsonl", [*rows, rec])
    line = len(rows) + 1
    r = cli("repair", str(src))
    err = r.stderr.decode()
    assert r.returncode == 3 and r.stdout == b"", err
    fmt = "openhands" if other.startswith("openhands") else other
    assert f"{src}:{line}: not {said}: no role (keys: " in err, err
    assert f"; it reads as {fmt}, and this file as {said} (told from line {told}): a file holds one format" in err, err
    assert "--from" not in err, err
    name = "anthropic" if said.startswith("Anthropic") else "openai"
    r = cli("repair", "--from", name, str(src))
    assert r.returncode == 3 and f"{src}:{line}: not {said}: " in r.stderr.decode(), r.stderr
    assert f"; it reads as {fmt}: use --from {fmt}, or no --from" in r.stderr.decode(), r.stderr


_EVENT = ELSEWHERE["openhands-event"][0]
_CLAUDE_LINE = {"type": "user", "message": {"role": "user", "content": "hello"}, "uuid": "u1", "parentUuid": None, "sessionId": "s"}
_NO_EVENT = 'not an OpenHands event: no "action" or "observation"'
_MIXED_HINT = "and this file as OpenHands (told from line {}): a file holds one format"
OPENHANDS_MIXED = {  # lines, --from, the line refused, what is said of it
    "openai-after": (
        [_EVENT, {"role": "user", "content": "hi"}],
        None,
        2,
        f"(keys: role, content); it reads as openai, {_MIXED_HINT.format(1)}",
    ),
    "openai-before": (
        [{"role": "user", "content": "hi"}, _EVENT],
        None,
        1,
        f"(keys: role, content); it reads as openai, {_MIXED_HINT.format(2)}",
    ),
    "claude-code": ([_EVENT, _CLAUDE_LINE], None, 2, f"parentUuid, sessionId); it reads as claude-code, {_MIXED_HINT.format(1)}"),
    "openai-from": (
        [_EVENT, {"role": "user", "content": "hi"}],
        "openhands",
        2,
        "(keys: role, content); it reads as openai: use --from openai, or no --from",
    ),
    "nothing-known": ([_EVENT, {"a": 1}], None, 2, "(keys: a): an OpenHands session is an event a line"),
}


@pytest.mark.parametrize("case", sorted(OPENHANDS_MIXED))
def test_a_line_that_is_no_event_in_an_openhands_session_is_refused_not_dropped(tmp_path, case):
    """An OpenHands session read every line but kept only its events: an OpenAI message or a Claude Code line in it
    (or an OpenAI session whose first lines, role and text alone, were followed by an event: read as OpenHands) was
    dropped without a word, exit 0. A line that is no event is refused by file and line, with what it reads as."""
    rows, given, line, said = OPENHANDS_MIXED[case]
    src = write_jsonl(tmp_path / "o.jsonl", rows)
    r = cli("repair", *(["--from", given] if given else []), str(src))
    assert r.returncode == 3 and r.stdout == b"", r.stderr
    assert f"{src}:{line}: {_NO_EVENT} ".encode() in r.stderr and said.encode() in r.stderr, r.stderr
    r = cli("repair", "--on-error", "skip", *(["--from", given] if given else []), str(src))  # the event is read
    assert r.returncode == 0 and r.stdout == b'{"role":"user","content":"Fix app.py"}\n', (r.stdout, r.stderr)
