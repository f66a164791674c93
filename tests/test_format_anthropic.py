"""Anthropic Messages (formats/anthropic.py): what a user of the format sees read and written back, case by case
(the mutation run's survivors: bench/mutation.py --module anthropic)."""

from __future__ import annotations

import orjson
import pytest

from compactctl import api

from .conftest import cli, write_jsonl


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
