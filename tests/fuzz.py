"""A seeded generator of broken tool-call transcripts whose results are tagged with their call, and a
runner that repairs each and checks the output with the independent validator (tests/validator.py).

Each call's arguments carry a tag {"sig": "S<n>"}; its result says "result of S<n>". Breakages, per
turn, at random: a repeated id inside one message, an id reused from an earlier turn, results that lost
their tool_call_id, calls that lost their id (their results too), shuffled results, a user turn between
the calls and their results, dropped results, orphan results (with an unknown id or none), legacy
`function_call` turns, empty turns, an opening assistant turn. Only breakages that leave the pairing
recoverable from ids, positions and names are combined: a dropped result in a block whose other results
have no usable id, or an orphan without id after a block with an unanswered call, leaves nothing to
tell which call lost its result (not generated).

Checks per case: the output is valid (validator), every result sits under the call of its tag (0 wrong
attachments), every result that answered a call in the input is still there, orphans are gone,
`check` finds nothing, and a second repair changes nothing (idempotent, byte for byte).

`run_compact` puts the same cases, with long outputs, through the whole `compact` on a small budget.

Run: `python -m tests.fuzz 10000` (make fuzz: 10,000 repair cases, 1,000 compact cases); tests/test_fuzz.py
runs 1,000 repair cases and 100 compact cases.
"""

from __future__ import annotations

import random
import re
import sys
import time
from dataclasses import dataclass, field

import orjson

from compactctl import formats
from compactctl.formats.openai import message_from_dict
from compactctl.model import Transcript
from compactctl.phases.repair import repair
from compactctl.phases.rules import check

from .validator import attachments, validate

NAMES = ("read", "write", "bash", "grep")
_RES = re.compile(r"result of (S\d+)")


def _sig_of_call(call: dict) -> str | None:
    fn = call.get("function") or {}
    try:
        return orjson.loads(fn.get("arguments") or "{}").get("sig")
    except orjson.JSONDecodeError:
        return None


def _sig_of_result(text: str) -> str | None:
    m = _RES.search(text)
    return m.group(1) if m else None


@dataclass
class Case:
    rows: list[dict]
    expected: set[str] = field(default_factory=set)  # result tags that must survive
    orphans: set[str] = field(default_factory=set)  # texts that must be gone
    kinds: set[str] = field(default_factory=set)


def generate(seed: int) -> Case:
    rng = random.Random(seed)
    rows: list[dict] = []
    case = Case(rows)
    n = 0
    used_ids: list[str] = []
    if rng.random() < 0.1:
        rows.append({"role": "system", "content": "You are a coding agent."})
    if rng.random() < 0.1:
        rows.append({"role": "assistant", "content": "Hello, what shall I do?"})
        case.kinds.add("opening-assistant")
    for turn in range(rng.randint(1, 6)):
        rows.append({"role": "user", "content": f"ask {turn}" if rng.random() > 0.05 else "   "})
        if rng.random() < 0.12:  # legacy function call
            n += 1
            sig = f"S{n}"
            name = rng.choice(NAMES)
            rows.append(
                {"role": "assistant", "content": None, "function_call": {"name": name, "arguments": orjson.dumps({"sig": sig}).decode()}}
            )
            if rng.random() < 0.85:
                rows.append({"role": "function", "name": name, "content": f"result of {sig}"})
                case.expected.add(sig)
            case.kinds.add("legacy")
            rows.append({"role": "assistant", "content": f"done {turn}"})
            continue
        k = rng.choice((0, 1, 1, 2, 2, 3, 4))
        if k == 0:
            rows.append({"role": "assistant", "content": f"answer {turn}"})
            continue
        calls, results = [], []
        for _ in range(k):
            n += 1
            sig = f"S{n}"
            cid = f"call_{rng.getrandbits(40):x}"
            name = rng.choice(NAMES)
            calls.append({"id": cid, "type": "function", "function": {"name": name, "arguments": orjson.dumps({"sig": sig}).decode()}})
            results.append({"role": "tool", "tool_call_id": cid, "content": f"result of {sig}", "_sig": sig})
        ambiguous = False  # a block whose results cannot all be told apart by id
        if k >= 2 and rng.random() < 0.3:  # the same id twice in one message
            a, b = sorted(rng.sample(range(k), 2))
            calls[b]["id"] = calls[a]["id"]
            results[b]["tool_call_id"] = calls[a]["id"]
            ambiguous = True
            case.kinds.add("dup-id")
        if used_ids and rng.random() < 0.15:  # an id reused from an earlier turn
            p = rng.randrange(k)
            old = rng.choice(used_ids)
            for q in range(k):
                if q != p and calls[q]["id"] == calls[p]["id"]:
                    break
            else:
                calls[p]["id"] = old
                results[p]["tool_call_id"] = old
                case.kinds.add("reused-id")
        if rng.random() < 0.25:  # results that lost their id
            for r in rng.sample(results, rng.randint(1, k)):
                r.pop("tool_call_id", None)
                if rng.random() < 0.5:
                    r["name"] = calls[results.index(r)]["function"]["name"]
            ambiguous = True
            case.kinds.add("result-no-id")
        if rng.random() < 0.15:  # a call that lost its id (its result cannot name it either)
            p = rng.randrange(k)
            calls[p].pop("id", None)
            results[p].pop("tool_call_id", None)
            ambiguous = True
            case.kinds.add("call-no-id")
        used_ids.extend(c["id"] for c in calls if "id" in c)
        if not ambiguous and rng.random() < 0.3:
            rng.shuffle(results)
            case.kinds.add("shuffled")
        complete = True
        if not ambiguous and rng.random() < 0.2:
            results.pop(rng.randrange(len(results)))
            complete = False
            case.kinds.add("dropped")
        rows.append({"role": "assistant", "content": rng.choice((None, "", "let me look")), "tool_calls": calls})
        if rng.random() < 0.1 and not any("tool_call_id" not in r for r in results):
            rows.append({"role": "user", "content": "(interjection)"})
            case.kinds.add("interjection")
        for r in results:
            case.expected.add(r.pop("_sig"))
            rows.append(r)
        if rng.random() < 0.12:
            n += 1
            text = f"orphan O{n}"
            # with no id, an orphan is only recognisable as one after a block whose calls are all answered
            idless = complete and rng.random() < 0.5
            rows.append({"role": "tool", "content": text} if idless else {"role": "tool", "tool_call_id": f"ghost_{n}", "content": text})
            case.orphans.add(text)
            case.kinds.add("orphan")
        if rng.random() < 0.5:
            rows.append({"role": "assistant", "content": f"after {turn}" if rng.random() > 0.05 else ""})
    return case


def _write(t: Transcript) -> list[dict]:
    return [orjson.loads(line) for line in formats.write(t)]


def _read(rows: list[dict]) -> Transcript:
    return Transcript(
        [message_from_dict(d, "fuzz", i + 1, i) for i, d in enumerate(rows)], id="fuzz", native=[orjson.dumps(d) for d in rows]
    )


@dataclass
class Tally:
    cases: int = 0
    results_checked: int = 0
    wrong: int = 0
    invalid: int = 0
    lost: int = 0
    orphans_kept: int = 0
    check_failed: int = 0
    not_idempotent: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.wrong or self.invalid or self.lost or self.orphans_kept or self.check_failed or self.not_idempotent)


def run_one(seed: int, tally: Tally) -> None:
    case = generate(seed)
    out, _ = repair(_read(case.rows))
    rows = _write(out)
    tally.cases += 1
    for k in case.kinds:
        tally.kinds[k] = tally.kinds.get(k, 0) + 1
    bad = []
    errs = validate(rows)
    if errs:
        tally.invalid += 1
        bad.append(f"invalid: {errs[:3]}")
    checked, wrong, details = attachments(rows, _sig_of_call, _sig_of_result)
    tally.results_checked += checked
    if wrong:
        tally.wrong += wrong
        bad.append(f"wrong: {details[:3]}")
    texts = [r.get("content") for r in rows if r.get("role") in ("tool", "function")]
    found = [s for s in (_sig_of_result(t) for t in texts if isinstance(t, str)) if s]
    if sorted(found) != sorted(case.expected):
        tally.lost += 1
        bad.append(f"lost: {sorted(case.expected - set(found))} extra {sorted(set(found) - case.expected)}")
    if any(t in case.orphans for t in texts):
        tally.orphans_kept += 1
        bad.append("orphan kept")
    again = _read(rows)
    if check(again):
        tally.check_failed += 1
        bad.append(f"check: {[str(v) for v in check(again)][:3]}")
    out2, st2 = repair(again)
    if st2.changed or _write(out2) != rows:
        tally.not_idempotent += 1
        bad.append("second repair changed the output")
    if bad:
        tally.failures.append(f"seed {seed} ({', '.join(sorted(case.kinds))}): {'; '.join(bad)}")


def run_compact(n: int, start: int = 0) -> Tally:
    """The same cases, their outputs made long, through the whole `compact` (prune, plan, summarize,
    repair) on a small budget: the output must be valid and every result left must sit under its call."""
    from compactctl import api
    from compactctl.errors import CannotFit
    from compactctl.tokens import make_counter

    counter = make_counter("gpt-4o")
    opts = api.CompactOptions(api.Budget(context_window=2000, tail_tokens=200, summary_min=200, summary_max=400))
    tally = Tally()
    for seed in range(start, start + n):
        case = generate(seed)
        for r in case.rows:
            if r.get("role") in ("tool", "function"):
                r["content"] += "\n" + "log line " * 150
        try:
            out, _ = api.compact(_read(case.rows), counter, api.OfflineSummarizer(), opts)
        except CannotFit:
            continue
        rows = _write(out)
        tally.cases += 1
        errs = validate(rows)
        checked, wrong, details = attachments(rows, _sig_of_call, _sig_of_result)
        tally.results_checked += checked
        tally.wrong += wrong
        tally.invalid += bool(errs)
        if errs or wrong:
            tally.failures.append(f"compact seed {seed}: {errs[:2]} {details[:2]}")
    return tally


def run(n: int, start: int = 0) -> Tally:
    tally = Tally()
    for seed in range(start, start + n):
        run_one(seed, tally)
    return tally


def main(argv: list[str]) -> int:
    n = int(argv[0]) if argv else 10_000
    t0 = time.perf_counter()
    tally = run(n)
    print(
        f"fuzz: {tally.cases:,} cases, {tally.results_checked:,} results checked, {tally.wrong} wrong attachments, "
        f"{tally.invalid} invalid outputs, {tally.lost} with lost results, {tally.orphans_kept} with orphans kept, "
        f"{tally.check_failed} failing check, {tally.not_idempotent} not idempotent ({time.perf_counter() - t0:.1f} s)"
    )
    print("  breakages (cases): " + ", ".join(f"{k} {v:,}" for k, v in sorted(tally.kinds.items())))
    for f in tally.failures[:20]:
        print("  " + f)
    t0 = time.perf_counter()
    ct = run_compact(n // 10)
    print(
        f"fuzz compact: {ct.cases:,} cases compacted, {ct.results_checked:,} results checked, {ct.wrong} wrong attachments, "
        f"{ct.invalid} invalid outputs ({time.perf_counter() - t0:.1f} s)"
    )
    for f in ct.failures[:20]:
        print("  " + f)
    return 0 if tally.ok and ct.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
