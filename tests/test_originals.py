"""restore's code (compactctl/originals.py), case by case: what the mutation run of the forty-fourth session found
untested. The end-to-end restores (every sample, -o DIR/, chains) are in test_restore.py."""

from __future__ import annotations

import orjson
import pytest

from compactctl import api

from .conftest import SAMPLES, cli, read_jsonl, write_jsonl


def _compacted(tmp_path, src, *extra: str):
    out, arch = tmp_path / "c.jsonl", tmp_path / "a.jsonl"
    r = cli("compact", str(src), "-o", str(out), "--archive", str(arch), "-q", *extra)
    assert r.returncode == 0, r.stderr
    return out, arch


def _parallel_session(tmp_path, big_from: int = 0, long: bool = False):
    """Turns of two parallel calls whose results came back in the other order (b's before a's, as OpenAI chat and
    Claude Code log them as they finish); results of turns from `big_from` on are big (pruned, archived). `long`:
    arguments longer than the archive keeps of a result's call, written as Python's json.dumps writes them."""
    import json

    def call(cid: str) -> dict:
        args = json.dumps({"path": f"{cid}.py", "note": "n " * 800}) if long else orjson.dumps({"path": f"{cid}.py"}).decode()
        return {"id": cid, "type": "function", "function": {"name": "read", "arguments": args}}

    rows = [{"role": "system", "content": "sys"}, {"role": "user", "content": "read every file " + "x " * 40}]
    for i in range(20):
        a, b = f"a{i}", f"b{i}"
        rows.append({"role": "assistant", "content": None, "tool_calls": [call(a), call(b)]})
        for cid in (b, a):
            rows.append(
                {"role": "tool", "tool_call_id": cid, "content": f"text of {cid}.py " + ("word " * 200 if big_from <= i < 16 else "")}
            )
    rows.append({"role": "user", "content": "thanks, now finish"})
    return write_jsonl(tmp_path / "s.jsonl", rows)


@pytest.mark.parametrize(("big_from", "long"), [(0, False), (8, False), (0, True)])
def test_parallel_results_restored_as_sharegpt_answer_their_own_calls(tmp_path, big_from, long):
    """ShareGPT pairs a result with a call by position, so its writer puts each turn's results in call order. Restored
    from a `--to sharegpt` compaction, the pruned results (archived with the input's call ids) followed calls read back
    from the output (ids numbered by position): nothing tied them, and they were written in the input's order, b's
    result answering a's call (exit 0). They answer their own calls, as `convert --to sharegpt` writes them."""
    src = _parallel_session(tmp_path, big_from, long)
    out, arch = _compacted(tmp_path, src, "--to", "sharegpt", "--context-window", "30000" if long else "6000")
    back = cli("restore", str(out), "--archive", str(arch))
    assert back.returncode == 0, back.stderr
    assert back.stdout == cli("convert", str(src), "--to", "sharegpt", "-q").stdout
    (tmp_path / "back.jsonl").write_bytes(back.stdout)
    [t] = api.read([str(tmp_path / "back.jsonl")])
    calls = {c.id: c for m in t.messages for c in m.tool_calls}
    results = [m for m in t.messages if m.role == "tool"]
    assert len(results) == 40 and all(orjson.loads(calls[m.tool_call_id].arguments)["path"] in m.text() for m in results)


def test_a_damaged_original_in_the_archive_is_named_by_its_archive(tmp_path):
    """An archived original that is no message (hand-edited, damaged) was said as "<archive>:0: message has no role":
    neither the archive file nor the message. Exit 3, naming both, nothing written."""
    src = SAMPLES / "long_session.jsonl"
    out, arch = _compacted(tmp_path, src, "--context-window", "8000")
    rows = read_jsonl(arch.read_bytes())
    first = next(r for r in rows if isinstance(r.get("message"), dict))
    del first["message"]["role"]
    write_jsonl(arch, rows)
    back = tmp_path / "back.jsonl"
    r = cli("restore", str(out), "--archive", str(arch), "-o", str(back))
    said = f"{arch}: {out} (transcript 1): the archived original of message {first['index']}: message has no role"
    assert r.returncode == 3 and said.encode() in r.stderr and not back.exists(), r.stderr
