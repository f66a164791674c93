"""The repair fast path (passthrough.repair_keeps): a record it accepts reads without error and comes out
of repair byte for byte as it went in; `compactctl repair` writes the same bytes with it and without it."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactctl import formats, runner
from compactctl.errors import DataError
from compactctl.passthrough import repair_keeps
from compactctl.phases.repair import repair
from tests.conftest import cli

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from gen import session  # noqa: E402  (bench/gen.py: the benchmark's generated sessions)

IDS = st.sampled_from(["a", "b", "c", "", None, 5])
NAMES = st.sampled_from(["terminal", "read_file", "", None])
CONTENTS = [
    "hi",
    "",
    "  \n",
    "\u3000",
    None,
    7,
    [],
    [{"type": "text", "text": "x"}],
    [{"type": "text", "text": " "}],
    [{"type": "text", "value": "v"}],
    {"a": 1},
    "done.\n",  # a last assistant message ending in whitespace: repair cuts it
    [{"type": "text", "text": "x "}],
]
CONTENT = st.one_of(st.sampled_from(CONTENTS), st.text(max_size=8))
ODD_KEYS = [
    {},
    {},
    {},
    {"_compactctl": {"pruned": "x"}},
    {"_compactctl": {}},
    {"function_call": {"name": "f", "arguments": "{}"}},
    {"tool_call_ids": ["a"]},
    {"reasoning_content": "why"},
    {"reasoning_content": 3},
    {"name": "terminal"},
    {"name": "other"},
    {"tool_call_id": "a"},
    {"_legacy_function": True},
]
ODD = st.sampled_from(ODD_KEYS)


def _call(draw, n: int) -> dict:
    c: dict = {"type": "function", "function": {"name": draw(NAMES), "arguments": draw(st.sampled_from(["{}", '{"a":1}', {"a": 1}]))}}
    cid = draw(IDS)
    if cid is not None or draw(st.booleans()):
        c["id"] = cid
    if draw(st.integers(0, 15)) == 0:
        c = draw(
            st.sampled_from(
                [{"id": "a"}, {"id": "a", "function": "x"}, "call", {"id": "z", "function": {"name": "t"}, "_legacy_function": 1}]
            )
        )
    return c


def _clean_call(draw, n: int) -> dict:
    return {"id": f"call_{n}", "type": "function", "function": {"name": "terminal", "arguments": '{"command":"ls"}'}}


ODD_MESSAGES = [
    {"role": "developer", "content": "d"},
    {"role": "robot", "content": "x"},
    {"content": "no role"},
    {"role": ["user"], "content": "x"},
    "text",
    {"role": "user", "content": "x", "tool_calls": []},
    {"role": "assistant", "content": "x", "tool_calls": None},
    {"role": "assistant", "content": "x", "tool_calls": {}},
    {"role": "user", "content": "x", "tool_calls": [{"id": "q", "function": {"name": "t", "arguments": "{}"}}]},
]


@st.composite
def records(draw) -> dict:
    """Dataset records: valid ones with now and then one oddity (`clean`), or anything goes; every oddity
    the fast path must refuse (or may accept)."""
    clean = draw(st.booleans())
    odd = st.one_of(st.just({}), ODD) if not clean else st.sampled_from([{}] * 80 + ODD_KEYS)
    content = CONTENT if not clean else st.sampled_from(["done", "ok", "x", [{"type": "text", "text": "x"}]] * 8 + CONTENTS)
    kinds = ["user", "assistant", "group", "group", "result", "odd"] if not clean else ["user", "assistant", "group", "group"]
    make_call = _call if not clean else _clean_call
    msgs: list = [{"role": "system", "content": "sys"}] if draw(st.booleans()) else []
    if clean:
        msgs.append({"role": "user", "content": "task"})
    n_calls = 0
    for _ in range(draw(st.integers(0, 10))):
        kind = draw(st.sampled_from(kinds))
        if kind in ("user", "assistant"):
            msgs.append({"role": kind, "content": draw(content), **draw(odd)})
        elif kind == "group":
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                n_calls += 1
                calls.append(make_call(draw, n_calls))
            msgs.append({"role": "assistant", "content": draw(st.sampled_from([None, "ok", ""])), "tool_calls": calls, **draw(odd)})
            for c in calls:
                if draw(st.integers(0, 9 if not clean else 40)) == 0:
                    continue  # a lost result
                cid = c.get("id") if isinstance(c, dict) else None
                role = draw(st.sampled_from(["tool", "tool", "tool", "function"])) if not clean else "tool"
                msgs.append({"role": role, "tool_call_id": cid, "content": draw(content), **draw(odd)})
        elif kind == "result":
            msgs.append({"role": "tool", "tool_call_id": draw(IDS), "content": "out"})
        else:
            msgs.append(draw(st.sampled_from(ODD_MESSAGES)))
    if clean and draw(st.integers(0, 5)) == 0 and len(msgs) > 2:  # one message moved, one duplicated, one lost
        i, j = draw(st.integers(0, len(msgs) - 1)), draw(st.integers(0, len(msgs) - 1))
        op = draw(st.sampled_from(["move", "dup", "drop"]))
        if op == "move":
            msgs.insert(j, msgs.pop(i))
        elif op == "dup":
            msgs.insert(j, msgs[i])
        else:
            del msgs[i]
    key = draw(st.sampled_from(["messages", "messages", "history"]))
    rec = {"id": "r", key: msgs}
    if draw(st.integers(0, 20)) == 0:
        rec = draw(st.sampled_from([{"messages": "x"}, {"messages": msgs, "history": []}, {"other": 1}]))
    return rec


def _slow(raw: bytes, obj: dict) -> bytes | None:
    """What repair writes for this record on the ordinary path; None: it does not read."""
    reader = formats.Reader()
    try:
        (t,) = formats.get_format("openai").read(iter([(1, raw, obj)]), "f.jsonl", "dataset", reader)
    except DataError:
        return None
    out, st_ = repair(t)
    lines = list(formats.write(out))
    assert (out is t) == (not st_.changed and not st_.archived)
    return b"\n".join(lines)


@settings(max_examples=700, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records())
def test_a_record_the_fast_path_keeps_comes_out_of_repair_as_it_went_in(rec):
    raw = orjson.dumps(rec)
    if repair_keeps("openai", orjson.loads(raw)):
        assert _slow(raw, orjson.loads(raw)) == raw


def test_valid_generated_sessions_take_the_fast_path():
    for seed in range(30):
        rec = {"id": f"s{seed}", "messages": session(seed, turns=6, scale=0.05)}
        raw = orjson.dumps(rec)
        assert repair_keeps("openai", orjson.loads(raw))
        assert _slow(raw, orjson.loads(raw)) == raw
    assert not repair_keeps("anthropic", rec)  # other formats: the ordinary path


def _mixed_dataset(path: Path) -> Path:
    """Valid records and broken ones (each kind of repair, and a record that does not read)."""
    rows = []
    for seed in range(12):
        msgs = session(seed, turns=5, scale=0.05)
        k = seed % 6
        if k == 1:
            del msgs[next(i for i, m in enumerate(msgs) if m["role"] == "tool")]  # a call loses its result
        elif k == 2:
            msgs.append({"role": "tool", "tool_call_id": "nobody", "content": "orphan"})
        elif k == 3:
            msgs.insert(2, {"role": "assistant", "content": "  "})
        elif k == 4:
            msgs[2]["content"] = 42  # does not read: skipped with --on-error skip
        rows.append({"id": f"s{seed}", "messages": msgs})
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def test_repair_writes_the_same_bytes_with_and_without_the_fast_path(tmp_path, monkeypatch):
    data = _mixed_dataset(tmp_path / "d.jsonl")
    args = ["repair", str(data), "--on-error", "skip", "--archive", str(tmp_path / "a.jsonl"), "--rejects", str(tmp_path / "r.jsonl")]
    fast = cli(*args, "-o", str(tmp_path / "fast.jsonl"))
    fast_side = (tmp_path / "a.jsonl").read_bytes(), (tmp_path / "r.jsonl").read_bytes()
    monkeypatch.setattr("compactctl.passthrough.repair_keeps", lambda fmt, obj: False)
    slow = cli(*args, "-o", str(tmp_path / "slow.jsonl"))
    assert fast.returncode == slow.returncode == 0
    assert fast.stderr == slow.stderr and b"skipped" in fast.stderr
    assert (tmp_path / "fast.jsonl").read_bytes() == (tmp_path / "slow.jsonl").read_bytes()
    assert fast_side == ((tmp_path / "a.jsonl").read_bytes(), (tmp_path / "r.jsonl").read_bytes())
    assert b'"type":"map"' in fast_side[0]  # the broken records were repaired, and archived


def test_the_fast_path_is_taken_and_check_and_to_bypass_it(tmp_path, monkeypatch):
    data = _mixed_dataset(tmp_path / "d.jsonl")
    built: list[str] = []
    real = runner.engines._materialize

    def counting(item, on_error, *say):
        built.append(item.id)
        return real(item, on_error, *say)

    monkeypatch.setattr(runner.engines, "_materialize", counting)  # where _process looks it up
    assert cli("repair", str(data), "--on-error", "skip").returncode == 0
    assert len(built) == 8  # the 4 valid records (seed % 6 in 0, 5) are written unbuilt
    built.clear()
    assert cli("repair", str(data), "--on-error", "skip", "--check").returncode == 6
    assert len(built) == 12  # --check reports every record's violations
    built.clear()
    assert cli("repair", str(data), "--on-error", "skip", "--to", "anthropic").returncode == 0
    assert len(built) == 12


def test_a_lazy_record_goes_to_a_worker_without_its_parsed_object():
    lazy = runner.Lazy(b'{"messages":[]}', "f.jsonl", 1, 0, "openai", {"messages": []})
    back = pickle.loads(pickle.dumps(lazy))
    assert back.obj is None and back.raw == lazy.raw and back.id == "f.jsonl#1"


def test_a_last_assistant_message_ending_in_whitespace_takes_the_ordinary_path():
    """repair cuts that whitespace (Anthropic refuses it): the fast path must not write the record as it came."""
    for content in ("done.\n", [{"type": "text", "text": "done. "}]):
        rec = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": content}]}
        raw = orjson.dumps(rec)
        assert not repair_keeps("openai", orjson.loads(raw))
        assert _slow(raw, orjson.loads(raw)) != raw
    assert repair_keeps("openai", {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "done."}]})
    # A system message after it does not end the conversation (Anthropic moves it into its prompt).
    rec = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "done. "}, {"role": "system", "content": "x"}]}
    assert not repair_keeps("openai", rec)


def test_a_key_the_model_marks_with_takes_the_ordinary_path(tmp_path):
    """A source message with `_before_results`, or a call with `_arguments_object`: the reader keeps such a key as the
    model's own mark, and repair acts on it (rewrites the message, writes the arguments as text). The fast path wrote
    the record as it came: `repair --check` then found a violation in what `repair` had written."""
    call = {"id": "call_1", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}
    recs = [
        {"messages": [{"role": "user", "content": "hi", "_before_results": True}, {"role": "assistant", "content": "ok"}]},
        {
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": None, "tool_calls": [{**call, "_arguments_object": True}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "out"},
            ]
        },
    ]
    for rec in recs:
        raw = orjson.dumps(rec)
        assert _slow(raw, orjson.loads(raw)) != raw
        assert not repair_keeps("openai", orjson.loads(raw))
    data, out = tmp_path / "d.jsonl", tmp_path / "out.jsonl"
    data.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    assert cli("repair", str(data), "-o", str(out)).returncode == 0
    check = cli("repair", str(out), "--check")
    assert check.returncode == 0, check.stderr
