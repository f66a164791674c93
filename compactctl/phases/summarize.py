"""Phase 3: replace the middle with a structured summary (then Phase 4 assembles it).

Takes the plan from the `_compactctl` zone annotations when the input carries them (the output of
`compactctl plan`), otherwise plans with the same options. Anti-thrash: a compaction that saves less
than `min_saving` of the tokens and still leaves the transcript over its target is not applied; the input goes out unchanged with a strike recorded
in the transcript, and after `max_strikes` strikes in a row the transcript is skipped, saying why.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import TYPE_CHECKING

from .. import refs as _refs
from ..errors import CannotFit
from ..harness import ask_words
from ..lean import dataclass
from ..model import Message, Transcript, is_summary, last_user_index
from ..summarizers.base import Summarizer, SummaryRequest, SummaryResult  # the summarizer contract (re-exported)
from ..tokens import Counter
from . import Archived, archive
from .assemble import assemble, summary_overhead, without_zones
from .plan import Budget, Plan, carried_ask, carrier, from_annotations, plan_for_repair, text_cost

if TYPE_CHECKING:
    from ..summarizers.facts import Facts

STRIKES_KEY = "strikes"


@dataclass
class SummarizeStats:
    """What summarize did: its plan, its status, the tokens before and after."""

    plan: Plan | None = None
    status: str = "unchanged"  # compacted | not-needed | ineffective | skipped
    tokens_before: int = 0
    tokens_after: int = 0
    result: SummaryResult | None = None
    reason: str = ""
    archived: list[Archived] = field(default_factory=list, repr=False)


def get_strikes(t: Transcript) -> int:
    holder = t.metadata.get("_compactctl") if t.layout == "dataset" else (t.messages[0].note if t.messages else {})
    n = holder.get(STRIKES_KEY, 0) if isinstance(holder, dict) else 0
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 0  # a count compactctl wrote, else none


def set_strikes(t: Transcript, n: int) -> Transcript:
    if t.layout == "dataset":
        meta = dict(t.metadata)
        held = meta.get("_compactctl")
        note = {k: v for k, v in held.items() if k != STRIKES_KEY} if isinstance(held, dict) else {}
        if n:
            note[STRIKES_KEY] = n
        if note:
            meta["_compactctl"] = note
        else:
            meta.pop("_compactctl", None)
        return t.evolve(metadata=meta)
    if not t.messages:
        return t
    first = t.messages[0]
    note = {k: v for k, v in first.note.items() if k != STRIKES_KEY}
    if n:
        note[STRIKES_KEY] = n
    return dataclasses.replace(t, messages=[dataclasses.replace(first, note=note)] + t.messages[1:], raw=None)


def facts_for(t: Transcript, p: Plan) -> Facts:
    """The facts of the middle the plan replaces, with what the whole transcript tells: the person's first
    and latest asks, the rules they set in the head, an earlier summary."""
    from ..summarizers.constraints import constraint_sentences  # only when there is a middle
    from ..summarizers.facts import extract, is_small_talk, request_text

    lu = last_user_index(t.messages)
    last = t.messages[lu] if lu is not None else None
    ask = ask_words(last) if last is not None else None
    facts = extract(t.messages, p.head_end, p.tail_start, last_request=ask, prior=p.prior_summary)
    facts.cwd = facts.cwd or t.cwd  # a harness message states it (Codex's); else the source may record it (Claude Code's)
    asks = [(k, text) for k, m in enumerate(t.messages) if m.role == "user" and not is_summary(m) for text in (request_text(m),) if text]
    first = next((a for a in asks if not is_small_talk(a[1])), asks[0] if asks else None)  # "Hey" is no goal
    if first is not None:
        facts.first_request = first[1]
        facts.first_request_kept = not p.head_end <= first[0] < p.tail_start
    head_rules = [
        c for m in t.messages[: p.head_end] if m.role == "user" and not is_summary(m) for c in constraint_sentences(request_text(m))
    ]
    facts.constraints = list(dict.fromkeys(head_rules + facts.constraints))
    facts.last_request_verbatim = p.last_ask_in_summary
    facts.last_request_harness = last is not None and not request_text(last)  # every user message is the harness's
    facts.latest_answer = _since_last_ask(facts.latest_answer, asks)
    if p.prior_summary is not None:
        facts.prior_summary = t.messages[p.prior_summary].text()
    carried = _carried(t, p)
    if carried:
        facts.last_request, facts.last_request_verbatim = carried, True
    return facts


def _since_last_ask(answer: tuple[int, str] | None, asks: list[tuple[int, str]]) -> tuple[int, str] | None:
    """The person's latest answer to the agent's question, when no ask they typed came after it (that ask would be the
    Active Task)."""
    return answer if answer is not None and (not asks or answer[0] > asks[-1][0]) else None


def _carried(t: Transcript, p: Plan) -> str | None:
    """The latest ask when it lives only in an earlier summary this one replaces (in the head, or summarized again
    in the middle) and no user turn came after that summary: it is carried on, verbatim (the plan charged it)."""
    k = carrier(t)
    return carried_ask(t.messages[k].text()) if k is not None and k < p.tail_start else None


def _planned(t: Transcript, counter: Counter, budget: Budget, counts: list[int], zones: tuple[int, int] | None) -> Plan:
    """plan_for_repair; when it cannot fit, what a caller that goes on writes is the input without `plan`'s annotations."""
    try:
        return plan_for_repair(t, counter, budget, counts, zones)
    except CannotFit as e:
        if e.fallback is None:
            _as_read(e, t)
        raise


def _archive_replaced(t: Transcript, replaced: list, members: list, span: tuple | None, st: SummarizeStats) -> None:
    """Archive what the summary replaced; the originals of the summarized span carry its reference."""
    in_span = {id(x) for x in members}
    for m in replaced:
        archive(t, m, "summarize", st.archived)
        if span is not None and m.untouched and id(m) in in_span:
            st.archived[-1].span = span


def _as_read(e: CannotFit, t: Transcript) -> CannotFit:
    """`e`, with what a caller that goes on writes: the input as read (without `plan`'s annotations)."""
    e.fallback, e.fallback_is = (t, []), "as read, not summarized"
    return e


def _ending(
    t: Transcript, p: Plan, members: list[Message], facts: Facts, counter: Counter, refs: bool, recall_hint: bool
) -> tuple[tuple | None, str, int, str]:
    """The span the summary cites (None: no reference), the lines it ends with, the room left for its text, and
    the lines left out for the ask's room (added back when the summary leaves room for them).

    The span's reference names the originals archived under it: the untouched members (a pruned member's
    original went to the archive with prune, under its own reference); none untouched, no reference to cite.
    When the reference line (and the recall hint) would keep the ask out, the summary goes without them: the
    originals are archived all the same. Raises CannotFit when the ask does not fit even then."""
    span = (_refs.span_ref(members), p.head_end, p.tail_start) if refs and any(m.untouched for m in members) else None
    trailer = _refs.span_line(span[0] if span else None, recall_hint, refs)
    room = p.summary_budget - summary_overhead(t, p.head_end, counter, trailer)
    ask = text_cost(facts.last_request or "", counter) if facts.last_request_verbatim and facts.last_request else 0
    dropped = ""
    if ask and room < ask and trailer:
        bare = p.summary_budget - summary_overhead(t, p.head_end, counter, "")
        if bare >= ask:
            dropped, trailer, room = trailer, "", bare
    if ask and room < ask:  # never a summary without the ask it was to carry
        raise _as_read(
            CannotFit(
                f"{t.id}: cannot fit the target of {p.target:,} tokens: the last ask ({ask:,} tokens) goes into the summary, "
                f"which has {max(room, 0):,} tokens for its text. Raise --context-window or --threshold."
            ),
            t,
        )
    return span, trailer, room, dropped


def _body(text: str, trailer: str, dropped: str, room: int, counter: Counter) -> str:
    """The summary's text and the lines it ends with; the lines left out for the ask's room come back when the
    text leaves room for them."""
    if dropped and counter.text(text.rstrip() + "\n\n" + dropped) <= room:
        trailer = dropped
    return text.rstrip() + "\n\n" + trailer if trailer else text


@dataclass(frozen=True)
class SummarizeOptions:
    """How summarize plans and when it gives up."""

    budget: Budget = field(default_factory=Budget)
    focus: str | None = None  # items that mention it are kept first
    min_saving: float = 0.10  # a compaction saving less (and still over target) is a strike, the input kept
    max_strikes: int = 2  # after that many strikes in a row, skip (anti-thrash) unless `force`
    force: bool = False
    refs: bool = True  # the summary cites the span's reference (see refs)
    recall_hint: bool = False  # the summary names the recall tools
    instructions: str | None = None  # extra instructions for an LLM summarizer


def summarize(
    t: Transcript, counter: Counter, summarizer: Summarizer, opts: SummarizeOptions | None = None
) -> tuple[Transcript, SummarizeStats]:
    o = opts or SummarizeOptions()
    budget, focus, min_saving, max_strikes, force = o.budget, o.focus, o.min_saving, o.max_strikes, o.force
    refs, recall_hint, instructions = o.refs, o.recall_hint, o.instructions
    st = SummarizeStats()
    zones = from_annotations(t)
    t = without_zones(t)
    counts = counter.messages(t.messages)
    st.tokens_before = st.tokens_after = sum(counts)
    strikes = get_strikes(t)
    if strikes >= max_strikes and not force:
        st.status = "skipped"
        st.reason = f"skipped: the last {strikes} compactions saved under {min_saving:.0%} each (use --force to try again)"
        return t, st
    p = st.plan = _planned(t, counter, budget, counts, zones)
    if not p.needs_compaction:
        st.status = "not-needed"
        st.reason = p.reason
        return t, st
    facts = facts_for(t, p)
    members = t.messages[p.head_end : p.tail_start] + ([t.messages[p.prior_summary]] if p.prior_summary is not None else [])
    span, trailer, room, dropped = _ending(t, p, members, facts, counter, refs, recall_hint)
    req = SummaryRequest(t.id, t.messages, p.head_end, p.tail_start, max(room, 1), facts, focus, instructions)
    result = summarizer.summarize(req, counter)
    st.result = result
    out, replaced = assemble(t, p.head_end, p.tail_start, _body(result.text, trailer, dropped, room, counter), p.prior_summary)
    after = sum(counter.messages(out.messages))
    if st.tokens_before and (st.tokens_before - after) / st.tokens_before < min_saving and after > p.target and not force:
        st.status = "ineffective"
        st.reason = f"ineffective: would save {(st.tokens_before - after) / st.tokens_before:.1%} (< {min_saving:.0%}); input kept (strike {strikes + 1})"
        return set_strikes(t, strikes + 1), st
    _archive_replaced(t, replaced, members, span, st)
    if strikes:
        out = set_strikes(out, 0)
    st.status = "compacted"
    st.tokens_after = after
    st.reason = f"compacted {st.tokens_before:,} -> {after:,} tokens by {result.summarizer}"
    return out, st
