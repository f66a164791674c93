"""The format registry: one entry per format module, what it provides, typed lookups."""

from __future__ import annotations

from importlib import import_module

import pytest

from compactctl import api
from compactctl.errors import UsageError
from compactctl.formats import FORMAT_NAMES, REGISTRY, Format, detect, get_format

from .conftest import SAMPLES


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

    modules = {p.stem for p in Path(pkg.__file__).parent.glob("*.py")} - {"__init__", "blocks", "linelog"}
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
