"""The repair fast path (passthrough.repair_keeps): a record it accepts reads without error and comes out
of repair byte for byte as it went in; `compactctl repair` writes the same bytes with it and without it."""

from __future__ import annotations

import pickle
import re
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
from tests.validator import validate

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


# Near-valid records: a valid OpenAI chat record (bench-like turns) with one to three faults, each a thing repair
# mends or the reader refuses (or, now and then, a change that keeps the record valid). The fast path must answer
# False for every fault repair would see; whatever it accepts, the ordinary path writes back byte for byte, and it
# is valid under tests/validator.py (which shares no code with compactctl).
BAD_NAMES = ["", "ns.tool", "a b", "x" * 65, "dots schema search --json", "é", "read\n"]
BAD_IDS = ["", "a b", "x" * 41, "call.1", "id\n", 5, None, ["c"]]
ODD_PARTS = [
    1,
    "s",
    None,
    {},
    {"type": 1},
    {"type": "text"},
    {"type": "text", "text": 5},
    {"type": "text", "text": ""},
    {"type": "text", "text": " \n"},
    {"type": "text", "value": "v"},
    {"type": "input_text", "text": "x"},
    {"type": "output_text", "text": "x"},
    {"type": "image_url", "image_url": {"url": "data:,"}},
    {"type": "text", "text": "ok"},
]
ODD_ROLES = [1, None, True, ["user"], {"r": 1}, "function", "robot", "User", "tool", "user", "system", "developer"]
EMPTY_CONTENTS = ["", " ", "\n\t", None, [], [{"type": "text", "text": ""}], [{"type": "text", "text": " "}]]


def _valid_record(draw) -> dict:
    msgs: list[dict] = []
    if draw(st.booleans()):
        msgs.append({"role": draw(st.sampled_from(["system", "developer"])), "content": "You are terse."})
    msgs.append({"role": "user", "content": draw(st.sampled_from(["fix the bug", [{"type": "text", "text": "look"}]]))})
    n = 0
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["calls", "calls", "say", "user"]))
        if kind == "calls":
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                n += 1
                name = draw(st.sampled_from(["terminal", "read_file", "edit-file"]))
                calls.append({"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": '{"p":1}'}})
            msgs.append({"role": "assistant", "content": draw(st.sampled_from([None, "let me look", ""])), "tool_calls": calls})
            for c in calls:
                r = {
                    "role": "tool",
                    "tool_call_id": c["id"],
                    "content": draw(st.sampled_from(["out", "", [{"type": "text", "text": "o"}]])),
                }
                if draw(st.integers(0, 3)) == 0:
                    r["name"] = c["function"]["name"]
                msgs.append(r)
        elif kind == "say":
            msgs.append({"role": "assistant", "content": draw(st.sampled_from(["done", [{"type": "text", "text": "done"}]]))})
        else:
            msgs.append({"role": "user", "content": "and then?"})
    rec: dict = {"id": "r", "messages": msgs}
    if draw(st.booleans()):
        rec["tools"] = [{"type": "function", "function": {"name": "terminal", "parameters": {}}}]
        if draw(st.booleans()):
            rec["tool_choice"] = {"type": "function", "function": {"name": "terminal"}}
    return rec


def _where(draw, msgs: list, pred) -> int | None:
    at = [i for i, m in enumerate(msgs) if isinstance(m, dict) and pred(m)]
    return draw(st.sampled_from(at)) if at else None


def _a_call(draw, msgs: list) -> dict | None:
    calls = [c for m in msgs if isinstance(m, dict) and type(m.get("tool_calls")) is list for c in m["tool_calls"]]
    calls = [c for c in calls if isinstance(c, dict) and isinstance(c.get("function"), dict)]
    return draw(st.sampled_from(calls)) if calls else None


def _dicts(msgs: list) -> list[dict]:
    return [m for m in msgs if isinstance(m, dict)]


def _reuse_id(draw, rec: dict, msgs: list) -> None:
    calls = [c for m in _dicts(msgs) if type(m.get("tool_calls")) is list for c in m["tool_calls"] if isinstance(c, dict)]
    if len(calls) >= 2:
        a, b = draw(st.sampled_from(calls)), draw(st.sampled_from(calls))
        for m in _dicts(msgs):
            if m.get("tool_call_id") == b.get("id") and draw(st.booleans()):
                m["tool_call_id"] = a.get("id")
        b["id"] = a.get("id")


def _result_moved(draw, rec: dict, msgs: list) -> None:
    """A result one message late or early."""
    j = _where(draw, msgs, lambda m: m.get("role") == "tool")
    k = None if j is None else j + draw(st.sampled_from([1, -1]))
    if k is not None and 0 <= k < len(msgs):
        msgs[j], msgs[k] = msgs[k], msgs[j]


def _empty(draw, rec: dict, msgs: list) -> None:
    m = {"role": draw(st.sampled_from(["assistant", "user", "system"]))}
    content = draw(st.sampled_from([*EMPTY_CONTENTS, "absent"]))
    if content != "absent":
        m["content"] = content
    if draw(st.booleans()):
        m["reasoning_content"] = "thinking"
    if draw(st.integers(0, 3)) == 0:
        m.update(draw(st.sampled_from([{"refusal": "no"}, {"refusal": " "}, {"audio": {"id": "a"}}, {"audio": "a"}])))
    msgs.insert(draw(st.integers(0, len(msgs))), m)


def _odd_role(draw, rec: dict, msgs: list) -> None:
    j = _where(draw, msgs, lambda m: True)
    if j is not None:
        msgs[j]["role"] = draw(st.sampled_from(ODD_ROLES))
        if draw(st.integers(0, 4)) == 0:
            del msgs[j]["role"]


def _bad_name(draw, rec: dict, msgs: list) -> None:
    c = _a_call(draw, msgs)
    if c is not None:
        c["function"]["name"] = draw(st.sampled_from([*BAD_NAMES, 5, None]))
        if draw(st.integers(0, 4)) == 0:
            del c["function"]["name"]


def _odd_calls(draw, rec: dict, msgs: list) -> None:
    """`tool_calls: []` (or another odd value) on any message."""
    j = _where(draw, msgs, lambda m: True)
    if j is not None:
        msgs[j]["tool_calls"] = draw(st.sampled_from([[], [], {}, "", None, [None], ["c"], 5, {"id": "call_1"}]))


def _odd_parts(draw, rec: dict, msgs: list) -> None:
    j = _where(draw, msgs, lambda m: True)
    if j is not None:
        msgs[j]["content"] = draw(st.lists(st.sampled_from(ODD_PARTS), max_size=3))


def _odd_content(draw, rec: dict, msgs: list) -> None:
    j = _where(draw, msgs, lambda m: True)
    if j is not None:
        msgs[j]["content"] = draw(st.sampled_from([5, {"a": 1}, True, 1.5, " ", "", None]))
        if draw(st.integers(0, 4)) == 0:
            del msgs[j]["content"]


def _bad_id(draw, rec: dict, msgs: list) -> None:
    c = _a_call(draw, msgs)
    if c is not None:
        cid = draw(st.sampled_from(BAD_IDS))
        for m in _dicts(msgs):
            if m.get("tool_call_id") == c.get("id") and draw(st.booleans()):
                m["tool_call_id"] = cid
        c["id"] = cid
        if draw(st.integers(0, 4)) == 0:
            del c["id"]


def _result_id(draw, rec: dict, msgs: list) -> None:
    j = _where(draw, msgs, lambda m: m.get("role") == "tool")
    if j is not None:
        msgs[j]["tool_call_id"] = draw(st.sampled_from(["nobody", "call_1", "call_2", "", None, 3, ["call_1"]]))
        if draw(st.integers(0, 3)) == 0:
            del msgs[j]["tool_call_id"]


def _result_name(draw, rec: dict, msgs: list) -> None:
    j = _where(draw, msgs, lambda m: m.get("role") == "tool")
    if j is not None:
        msgs[j]["name"] = draw(st.sampled_from(["other", "", 5, None, "terminal", "read_file"]))


def _arguments(draw, rec: dict, msgs: list) -> None:
    c = _a_call(draw, msgs)
    if c is not None:
        c["function"]["arguments"] = draw(st.sampled_from([{"p": 1}, None, 5, ""]))
        if draw(st.booleans()):
            del c["function"]["arguments"]


def _call_keys(draw, rec: dict, msgs: list) -> None:
    c = _a_call(draw, msgs)
    if c is not None:
        c.update(
            draw(
                st.sampled_from(
                    [
                        {"_legacy_function": True},
                        {"_arguments_object": True},
                        {"_function_extra": {"x": 1}},
                        {"type": "custom"},
                        {"extra": 1},
                        {"function": "f"},
                        {"function": None},
                    ]
                )
            )
        )


def _defined_name(draw, rec: dict, msgs: list) -> None:
    """A tool definition, or tool_choice, naming a tool as no API takes it (or well)."""
    name = draw(st.sampled_from([*BAD_NAMES, "ok_name"]))
    holder = draw(st.sampled_from(["tools", "tool_choice", "flat", "text"]))
    if holder == "tools":
        rec["tools"] = [{"type": "function", "function": {"name": "terminal"}}, {"type": "function", "function": {"name": name}}]
    elif holder == "tool_choice":
        rec["tool_choice"] = {"type": "function", "function": {"name": name}}
    else:
        tools = [{"name": name, "input_schema": {}}]
        rec["tools"] = tools if holder == "flat" else orjson.dumps(tools).decode()


def _trailing_space(draw, rec: dict, msgs: list) -> None:
    """The last turn's text ends in white space (an assistant's, or not), a system message after it or not."""
    last = next((m for m in reversed(_dicts(msgs)) if m.get("role") not in ("system", "developer")), None)
    if last is not None:
        text = draw(st.sampled_from(["done ", "done\n", "done\u3000", "done"]))
        last["content"] = draw(st.sampled_from([text, [{"type": "text", "text": "a"}, {"type": "text", "text": text}]]))
        if draw(st.booleans()):
            last["role"] = "assistant"
            last.pop("tool_calls", None)
        if draw(st.booleans()):
            msgs.append({"role": "system", "content": "later"})


def _no_user(draw, rec: dict, msgs: list) -> None:
    j = _where(draw, msgs, lambda m: m.get("role") == "user")
    if j is not None:
        del msgs[j]


def _odd_keys(draw, rec: dict, msgs: list) -> None:
    j = _where(draw, msgs, lambda m: True)
    if j is not None:
        msgs[j].update(draw(st.sampled_from(ODD_MESSAGE_KEYS)))


def _moved(draw, rec: dict, msgs: list) -> None:
    """A message dropped, duplicated or swapped with another."""
    if not msgs:
        return
    i, j = draw(st.integers(0, len(msgs) - 1)), draw(st.integers(0, len(msgs) - 1))
    op = draw(st.sampled_from(["drop", "drop", "dup", "swap"]))
    if op == "drop":
        del msgs[i]
    elif op == "dup":
        msgs.insert(j, orjson.loads(orjson.dumps(msgs[i])))
    else:
        msgs[i], msgs[j] = msgs[j], msgs[i]


def _blank_beside_calls(draw, rec: dict, msgs: list) -> None:
    j = _where(draw, msgs, lambda m: bool(m.get("tool_calls")))
    if j is not None:
        msgs[j]["content"] = draw(st.sampled_from([" ", "\n", [{"type": "text", "text": " "}], [], [{"type": "text", "text": "x"}]]))


def _calls_elsewhere(draw, rec: dict, msgs: list) -> None:
    """A message with calls (and its results after it) from another role than the assistant."""
    j = _where(draw, msgs, lambda m: bool(m.get("tool_calls")))
    if j is not None:
        msgs[j]["role"] = draw(st.sampled_from(["user", "system", "developer", "tool"]))


def _result_lost(draw, rec: dict, msgs: list) -> None:
    """A result lost: any, or the record's last message (its last call's)."""
    j = _where(draw, msgs, lambda m: m.get("role") == "tool")
    if j is not None:
        del msgs[len(msgs) - 1 if draw(st.booleans()) else j]


def _system(draw, rec: dict, msgs: list) -> None:
    content = draw(st.sampled_from(["", None, " ", [], [{"type": "text", "text": " "}], "rule"]))
    msgs.insert(draw(st.integers(0, len(msgs))), {"role": draw(st.sampled_from(["system", "developer"])), "content": content})


ODD_MESSAGE_KEYS = [
    {"_compactctl": {"pruned": "x"}},
    {"function_call": {"name": "f", "arguments": "{}"}},
    {"function_call": None},
    {"tool_call_ids": ["call_1"]},
    {"tool_call_id": "call_1"},
    {"tool_call_id": None},
    {"_legacy_function": True},
    {"refusal": "no"},
    {"audio": {"id": "a"}},
    {"name": "bob"},
    {"reasoning_content": 3},
    {"_before_results": True},
]
FAULTS = [
    _reuse_id, _result_moved, _empty, _odd_role, _bad_name, _odd_calls, _odd_parts, _odd_content, _bad_id, _result_id,
    _result_name, _arguments, _call_keys, _defined_name, _trailing_space, _no_user, _odd_keys, _moved, _blank_beside_calls,
    _system, _calls_elsewhere, _result_lost,
]  # fmt: skip


@st.composite
def near_valid_records(draw) -> dict:
    rec = _valid_record(draw)
    for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2, 3]))):
        draw(st.sampled_from(FAULTS))(draw, rec, rec["messages"])
    if draw(st.integers(0, 30)) == 0:
        rec["history"] = rec.pop("messages")
    return rec


def _other_content(m: dict) -> bool:
    refusal = m.get("refusal")
    return (isinstance(refusal, str) and bool(refusal.strip())) or isinstance(m.get("audio"), dict)


def _names_valid(rec: dict) -> bool:
    tools = rec.get("tools")
    if isinstance(tools, str):
        tools = orjson.loads(tools)
    found = [t.get("function", t) for t in [*(tools if isinstance(tools, list) else []), rec.get("tool_choice")] if isinstance(t, dict)]
    return all(
        re.fullmatch(r"[A-Za-z0-9_-]{1,64}", f["name"])
        for f in found
        if isinstance(f, dict) and isinstance(f.get("name"), str) and f["name"]
    )


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(near_valid_records())
def test_a_near_valid_record_the_fast_path_keeps_is_valid_and_written_as_repair_writes_it(rec):
    raw = orjson.dumps(rec)
    if not repair_keeps("openai", orjson.loads(raw)):
        return
    assert _slow(raw, orjson.loads(raw)) == raw
    msgs = rec.get("messages", rec.get("history"))
    said = [{**m, "content": "(said outside content)"} if _other_content(m) else m for m in msgs]  # the validator knows no refusal
    assert validate(said) == []
    assert _names_valid(rec)
    last = next((m for m in reversed(msgs) if m.get("role") not in ("system", "developer")), None)
    text = last.get("content") if last is not None else None
    text = text[-1].get("text") if isinstance(text, list) and text else text
    assert not (last is not None and last.get("role") == "assistant" and isinstance(text, str) and text != text.rstrip())


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


def test_valid_records_of_every_form_take_the_fast_path():
    """What the fast path is for: valid records, in each form it knows, written as read (a fast path lost is no
    wrong output, only a slower repair: these would go unnoticed)."""
    call = {"id": "call_1", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}
    result = {"role": "tool", "tool_call_id": "call_1", "content": "out"}
    turn = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [call]}, result]
    recs = [
        {"history": [*turn, {"role": "assistant", "content": "done"}]},  # SWE-agent's key
        {"traj": [*turn, {"role": "assistant", "content": "done"}]},  # tau-bench's
        {"messages": [*turn[:2], {**result, "name": "terminal"}]},  # a result named as its call
        {"messages": [*turn, {"role": "assistant", "content": "", "refusal": "I can't"}]},  # a refusal says something
        {"messages": [*turn, {"role": "assistant", "content": None, "audio": {"id": "a"}}]},  # so does an audio reply
        {"messages": [{"role": "developer", "content": "d"}, *turn, {"role": "system", "content": "later"}]},
        {
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "data:,"}}]}
            ]
        },
    ]
    for rec in recs:
        raw = orjson.dumps(rec)
        assert repair_keeps("openai", orjson.loads(raw)), rec
        assert _slow(raw, orjson.loads(raw)) == raw
