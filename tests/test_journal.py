"""journal.Journal: what --resume reads back."""

from __future__ import annotations

import pytest

from compactctl.journal import Journal


def _header(n_inputs: int) -> dict:
    inputs = [[f"/data/{'d' * 120}/f{i:04}.jsonl", 1000 + i, 1_700_000_000_000 + i] for i in range(n_inputs)]
    return {"journal": "compactctl", "version": 1, "command": "prune", "options": "x", "inputs": inputs, "output": "/o/"}


@pytest.mark.parametrize("n_inputs", [1, 600])  # 600 long paths: a header of ~100 KB
def test_unstarted_is_only_a_journal_killed_before_its_header_was_written(tmp_path, n_inputs):
    path = tmp_path / "o.compactctl-journal"
    j = Journal(str(path), _header(n_inputs))
    path.write_bytes(b"")
    assert j.unstarted()
    j.start()
    head = path.read_bytes()
    assert not j.unstarted()  # the whole header: a started run, resumed from its checkpoints
    j.append({"t": "ck", "n": 1, "fn": 0, "key": "k", "file": None, "off": {}})
    j.close()
    assert not j.unstarted()
    for k in (1, len(head) // 2, len(head) - 1):  # a beginning of this run's header (a kill while writing it)
        path.write_bytes(head[:k])
        assert j.unstarted()
    other = Journal(str(path), {**_header(n_inputs), "options": "y"})
    path.write_bytes(head[: len(head) // 2])
    assert not other.unstarted()  # another run's header: refused by load(), not started over
    path.unlink()
    assert not j.unstarted()  # no journal at all is not this case
