"""Invariants over generated transcripts (hypothesis)."""

from __future__ import annotations

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactctl import api
from compactctl import errors as api_errors
from compactctl.formats.openai import message_from_dict
from compactctl.model import Transcript, last_user_index
from compactctl.pairs import groups
from compactctl.phases.prune import PruneOptions
from compactctl.phases.rules import empty_message
from compactctl.tokens import make_counter

COUNTER = make_counter("gpt-4o")
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400)
IDS = st.sampled_from(["a", "b", "c", "d"])  # few ids: reuse and collisions happen


@st.composite
def transcripts(draw):
    rows = [{"role": "system", "content": "sys"}] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(0, 25))):
        kind = draw(st.sampled_from(["user", "assistant", "calls", "result", "empty"]))
        if kind == "user":
            rows.append({"role": "user", "content": draw(TEXT)})
        elif kind == "assistant":
            rows.append({"role": "assistant", "content": draw(TEXT)})
        elif kind == "calls":
            n = draw(st.integers(1, 3))
            rows.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": draw(IDS),
                            "type": "function",
                            "function": {
                                "name": draw(st.sampled_from(["terminal", "read_file", "x"])),
                                "arguments": orjson.dumps({"command": draw(TEXT), "path": "p.py"}).decode(),
                            },
                        }
                        for _ in range(n)
                    ],
                }
            )
        elif kind == "result":
            rows.append({"role": "tool", "tool_call_id": draw(IDS), "content": draw(TEXT) * draw(st.integers(1, 20))})
        else:
            rows.append({"role": draw(st.sampled_from(["user", "assistant"])), "content": ""})
    return Transcript([message_from_dict(d, "gen", i + 1, i) for i, d in enumerate(rows)], id="gen")


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def nothing_to_send(t: Transcript) -> bool:
    """No user or assistant message with content: repair refuses it (a data error), never writes it empty."""
    return all(m.role not in ("user", "assistant") or empty_message(m) for m in t.messages)


def repaired(t: Transcript) -> Transcript | None:
    """api.repair's output, or None when it refused a transcript with nothing to send (checked to be that)."""
    try:
        return api.repair(t)[0]
    except api_errors.DataError:
        assert nothing_to_send(t)
        return None


@SETTINGS
@given(transcripts())
def test_repair_makes_valid_and_is_idempotent(t):
    out = repaired(t)
    if out is None:
        return
    assert api.check(out) == []
    again, st2 = api.repair(out)
    assert again is out and not st2.changed


@SETTINGS
@given(transcripts(), st.integers(0, 2000))
def test_prune_keeps_messages_last_user_and_validity(t, protect):
    valid = repaired(t)
    if valid is None:
        return
    before = api.write(valid)
    out, _ = api.prune(valid, COUNTER, PruneOptions(protect_tokens=protect, min_dedup_chars=20, min_summary_chars=20))
    assert len(out.messages) == len(valid.messages)
    assert api.write(valid) == before  # input not mutated
    lu = last_user_index(valid.messages)
    if lu is not None:
        assert out.messages[lu] is valid.messages[lu]
    assert api.check(out) == []


@SETTINGS
@given(transcripts(), st.integers(50, 3000), st.integers(0, 4))
def test_plan_partition(t, tail, first):
    valid = repaired(t)
    if valid is None:
        return
    try:
        p = api.plan(
            valid, COUNTER, api.Budget(context_window=200_000, threshold=0.001, tail_tokens=tail, protect_first=first, summary_min=1)
        )
    except api_errors.CannotFit:
        return
    assert 0 <= p.head_end <= p.tail_start <= p.messages == len(valid.messages)
    zones = [p.zone(i) for i in range(p.messages)]
    assert zones == sorted(zones, key=["head", "middle", "tail"].index)
    spans = groups(valid.messages)
    for cut in (p.head_end, p.tail_start):
        assert not any(a < cut < b for a, b in spans), "a cut splits a tool call from its results"
    lu = last_user_index(valid.messages)
    if lu is not None and lu >= p.head_end:
        assert lu >= p.tail_start or p.last_ask_in_summary
    if not p.anchor_forced and p.tail_start > p.head_end:
        assert p.tokens["tail"] <= tail * 1.5


@SETTINGS
@given(transcripts())
def test_compact_output_is_valid(t):
    try:
        out, rep = api.compact(
            t,
            COUNTER,
            api.OfflineSummarizer(),
            api.CompactOptions(api.Budget(context_window=4000, tail_tokens=200, summary_min=200, summary_max=400)),
        )
    except api_errors.CannotFit:
        return
    except api_errors.DataError:
        assert nothing_to_send(t)
        return
    assert api.check(out) == []
    assert rep["tokens_after"] <= 2000 or rep["status"] != "compacted"  # never over the target (half the window)


@st.composite
def facts(draw):
    from compactctl.summarizers.facts import Action, Facts

    words = st.lists(TEXT, max_size=8)
    f = Facts(
        first_request=draw(st.none() | TEXT),
        last_request=draw(st.none() | TEXT),
        last_request_verbatim=draw(st.booleans()),
        first_request_kept=draw(st.booleans()),
        constraints=draw(words),
        errors=draw(words),
        decisions=draw(words),
        pending=draw(words),
        identifiers=draw(words),
        notices=draw(words),
        plan=draw(words),
        last_assistant=draw(st.none() | TEXT),
        names=draw(st.lists(st.from_regex(r"[a-z_./]{3,40}", fullmatch=True), max_size=200, unique=True)),
    )
    f.actions = [Action(line, draw(st.booleans()), "shell", line[:20] or None, 1) for line in draw(words)]
    f.files = {p: {"read"} for p in draw(st.lists(st.from_regex(r"/[a-z/]{3,30}\.py", fullmatch=True), max_size=10))}
    return f


@SETTINGS
@given(facts(), st.integers(1, 3000))
def test_the_offline_summary_never_exceeds_its_budget(f, budget):
    from compactctl.summarizers import offline

    text = offline.summarize(f, COUNTER, budget)
    if COUNTER.text(text) > budget:  # only an ask the summary must carry verbatim may stand over it (the caller refuses)
        assert f.last_request_verbatim and f.last_request and f.last_request.strip() in text


# Wilder input, judged by the independent validators (tests/validator.py shares no code with repair): what
# `compact` writes, as OpenAI chat and as Anthropic Messages, is what the APIs take, whatever came in.
BLANKS = st.sampled_from(["", " ", "\n", " \t "])
WORDS = st.sampled_from(["fix the test", "ran pytest: 3 failed", "src/app.py", "ok", "Error: boom\n"])
SPACE_END = st.sampled_from(["", " ", "\n"])
NAMES = st.sampled_from(["bash", "read", "ns.tool", "run tests --all", "t" * 70])  # the last three: names the APIs refuse


@st.composite
def parts(draw):
    """A content value: text, a blank, null, or a list of text parts some of which are blank."""
    kind = draw(st.sampled_from(["text", "blank", "none", "list"]))
    if kind == "text":
        return draw(WORDS) + draw(SPACE_END)
    if kind == "blank":
        return draw(BLANKS)
    if kind == "none":
        return None
    return [{"type": "text", "text": draw(st.one_of(WORDS, BLANKS))} for _ in range(draw(st.integers(0, 3)))]


@st.composite
def wild_transcripts(draw):
    rows: list[dict] = []
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["system", "user", "user", "assistant", "calls", "calls", "result", "result"]))
        if kind in ("system", "user", "assistant"):
            rows.append({"role": kind, "content": draw(parts())})
        elif kind == "calls":
            calls = [
                {"id": draw(IDS), "type": "function", "function": {"name": draw(NAMES), "arguments": "{}"}}
                for _ in range(draw(st.integers(1, 3)))
            ]
            rows.append({"role": "assistant", "content": draw(parts()), "tool_calls": calls})
        else:
            rows.append({"role": "tool", "tool_call_id": draw(IDS), "content": draw(parts()) or "out"})
    return Transcript([message_from_dict(d, "gen", i + 1, i) for i, d in enumerate(rows)], id="gen")


@SETTINGS
@given(wild_transcripts(), st.sampled_from([300, 4000]))
def test_compact_writes_what_both_apis_take_whatever_came_in(t, window):
    from .validator import validate, validate_anthropic_records

    try:
        out, _ = api.compact(t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(api.Budget(context_window=window)))
    except api_errors.CannotFit as e:
        out = e.fallback[0]
    except api_errors.DataError:
        assert nothing_to_send(t)
        return
    openai = [orjson.loads(x) for x in api.write(out).splitlines()]
    assert validate(openai) == [], openai
    anthropic = [orjson.loads(x) for x in api.write(out, "anthropic").splitlines()]
    assert validate_anthropic_records(anthropic) == [], anthropic


@st.composite
def anthropic_blocks(draw, role):
    out: list[dict] = []
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["text", "text", "use", "result", "thinking"] if role == "assistant" else ["text", "result", "result"]))
        if kind == "text":
            out.append({"type": "text", "text": draw(st.one_of(WORDS, BLANKS)) + draw(SPACE_END)})
        elif kind == "use":
            out.append({"type": "tool_use", "id": draw(IDS), "name": draw(NAMES), "input": {"c": draw(WORDS)}})
        elif kind == "thinking":
            out.append({"type": "thinking", "thinking": draw(WORDS), "signature": "sig"})
        else:
            out.append({"type": "tool_result", "tool_use_id": draw(IDS), "content": draw(st.one_of(WORDS, BLANKS, st.just([])))})
    return out


@st.composite
def anthropic_records(draw):
    rec: dict = {}
    if draw(st.booleans()):
        rec["system"] = draw(
            st.one_of(
                st.none(), WORDS, BLANKS, st.lists(st.builds(lambda t: {"type": "text", "text": t}, st.one_of(WORDS, BLANKS)), max_size=2)
            )
        )
    rows = []
    for _ in range(draw(st.integers(1, 10))):
        role = draw(st.sampled_from(["user", "assistant"]))
        rows.append({"role": role, "content": draw(st.one_of(WORDS, BLANKS, anthropic_blocks(role)))})
    rec["messages"] = rows
    return rec


@SETTINGS
@given(anthropic_records(), st.sampled_from([300, 4000]))
def test_compact_of_anthropic_records_writes_what_both_apis_take(tmp_path_factory, rec, window):
    from .validator import validate, validate_anthropic_records

    path = tmp_path_factory.mktemp("a") / "a.jsonl"
    path.write_bytes(orjson.dumps(rec) + b"\n")
    try:
        [t] = api.read([str(path)])
        out, _ = api.compact(t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(api.Budget(context_window=window)))
    except api_errors.CannotFit as e:
        out = e.fallback[0]
    except api_errors.DataError:
        return  # said with the file and line (an empty conversation, a block the reader refuses)
    anthropic = [orjson.loads(x) for x in api.write(out, "anthropic").splitlines()]
    assert validate_anthropic_records(anthropic) == [], (rec, anthropic)
    openai = [orjson.loads(x) for x in api.write(out, "openai").splitlines()]
    assert validate([m for r in openai for m in r.get("messages", [r])]) == [], (rec, openai)
