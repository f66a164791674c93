"""Phase 2: choose what stays verbatim (head, tail) and what goes to the summary (middle).

- head: the leading system message(s) plus the first `protect_first` messages; after an earlier
  compaction the head ends at its summary (right after the system message(s), or after the first
  messages that compaction kept);
- tail: walking back from the end, whole tool-call groups while they fit `tail_tokens`; up to 1.5x
  that budget while the tail holds fewer than `min_tail_messages`; the last user message is always
  in the tail, even past its budget (the plan says so);
- a cut never splits an assistant message from the results of its calls;
- summary budget: `summary_ratio` of the middle's tokens, clamped to [summary_min, summary_max],
  lowered to what is left under the target when that is less (so the summary uses the room the
  target leaves, up to `summary_ratio` of what it replaces: all of it by default);
- target: `threshold` x `context_window` tokens. At or under it, nothing needs compaction.
If even head + tail + the minimum summary exceed the target, `CannotFit` says what is irreducible;
with `last_ask="summary"` the tail keeps its budget instead and the last user message is kept
verbatim in the summary's Active Task.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import field

from .. import config
from ..errors import CannotFit
from ..harness import ask_words
from ..lean import dataclass
from ..model import SUMMARY_END, SYSTEM_ROLES, Message, Transcript, is_summary, last_user_index
from ..pairs import groups
from ..refs import RECALL_HINT_START, SPAN_LINE_START
from ..tokens import Counter
from .assemble import summary_overhead

ZONES = ("head", "middle", "tail")


# Budget's own fields, and its window (no model here to leave it out for), before config.LIMITS
_RANGES = {
    "context_window": (lambda v: v >= 1, "at least 1"),
    "tail_share": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    "min_tail_messages": (lambda v: v >= 0, "0 or more"),
}


@dataclass
class Budget:
    """The context window and how a plan shares it: target, head, tail, summary.

    Checked when built, as the record API's Options is: a value of the wrong type or out of the range the command
    line allows (context_window=0, threshold=1.5, ...) raises UsageError."""

    context_window: int = 128_000
    threshold: float = 0.5
    tail_tokens: int | None = None  # default: `tail_share` of the target
    tail_share: float = 0.2
    protect_first: int = 3
    min_tail_messages: int = 3
    summary_ratio: float = 1.0
    summary_min: int = 2_000
    summary_max: int = 16_000
    # auto: in the tail while it fits, else verbatim in the summary; tail: always in the tail; summary: the tail is never
    # stretched for it (verbatim in the summary when the tail's budget does not reach it)
    last_ask: str = "auto"

    def __post_init__(self) -> None:
        config.check_fields(self, _RANGES)

    @property
    def target(self) -> int:
        return int(self.context_window * self.threshold)

    @property
    def tail(self) -> int:
        return self.tail_tokens if self.tail_tokens is not None else int(self.target * self.tail_share)


@dataclass(frozen=True)
class Plan:
    """What to keep and what to summarize; built once by `plan` (frozen)."""

    transcript: str
    messages: int
    head_end: int  # head = [0, head_end)
    tail_start: int  # middle = [head_end, tail_start), tail = [tail_start, messages)
    tokens: dict[str, int]
    total: int
    target: int
    tail_budget: int
    summary_budget: int
    encoding: str
    needs_compaction: bool
    reason: str
    anchor_forced: bool = False  # the last user message pulled the tail past its budget
    last_ask_in_summary: bool = False  # --last-ask summary: the ask is kept verbatim in the summary instead
    prior_summary: int | None = None  # index of an earlier compaction summary
    reserve: int = 0  # of the budget's target, left free for what repair adds (target is what is left)
    counts: list[int] = field(default_factory=list, repr=False)

    def zone(self, i: int) -> str:
        return "head" if i < self.head_end else "middle" if i < self.tail_start else "tail"

    def as_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "counts"}
        d["tokens"] = dict(self.tokens)
        d["ranges"] = {"head": [0, self.head_end], "middle": [self.head_end, self.tail_start], "tail": [self.tail_start, self.messages]}
        return d

    def describe(self) -> str:
        rng = lambda a, b: f"messages {a}-{b - 1}" if b > a else "no messages"  # noqa: E731
        lines = [
            f"plan for {self.transcript} ({self.encoding}): {self.total:,} tokens in {self.messages} messages; target {self.target:,}",
            f"  head   {rng(0, self.head_end):<22} {self.tokens['head']:>9,} tokens (kept verbatim)",
            f"  middle {rng(self.head_end, self.tail_start):<22} {self.tokens['middle']:>9,} tokens "
            + (f"-> summary of at most {self.summary_budget:,}" if self.needs_compaction else "(kept: nothing to compact)"),
            f"  tail   {rng(self.tail_start, self.messages):<22} {self.tokens['tail']:>9,} tokens (budget {self.tail_budget:,}{', stretched to keep the last user message' if self.anchor_forced else ''})",
            f"  {self.reason}",
        ]
        return "\n".join(lines)


def with_observations(spans: list[tuple[int, int]], msgs: list) -> list[tuple[int, int]]:
    """The groups with each observation (Message.observation, after a text action) joined to the action before
    it: a cut keeps an action with its output, as it keeps a call with its results."""
    out: list[tuple[int, int]] = []
    for a, b in spans:
        if out and msgs[a].observation and msgs[a - 1].role == "assistant":
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def head_end(t: Transcript, spans: list[tuple[int, int]], protect_first: int, keep_prior: bool = True) -> tuple[int, int | None]:
    msgs = t.messages
    s = 0
    while s < len(msgs) and msgs[s].role in SYSTEM_ROLES:
        s += 1
    end = min(s + protect_first, len(msgs))
    # After an earlier compaction the head ends at its summary: right after the system message(s),
    # or right after the protected messages that compaction kept (so the head stays byte-stable).
    # Without `keep_prior` (it does not fit) the earlier summary is summarized again with the middle.
    for k in range(s, min(end + 3, len(msgs)) if keep_prior else 0):
        if is_summary(msgs[k]):
            return k + 1, k
    for a, b in spans:  # never split a group
        if a < end < b:
            end = b
            break
    return end, None


@dataclass(frozen=True)
class _Zones:
    """Where a plan's head ends and its tail starts, and how it got there."""

    head_end: int
    tail_start: int
    prior: int | None
    anchor_forced: bool
    last_ask_in_summary: bool


def _zones(
    t: Transcript,
    counts: list[int],
    spans: list[tuple[int, int]],
    protect_first: int,
    tail_budget: int,
    min_tail_messages: int,
    ask_in_summary: bool,
    keep_prior: bool = True,
) -> _Zones:
    msgs = t.messages
    n = len(msgs)
    h_end, prior = head_end(t, spans, protect_first, keep_prior)
    t_start = n
    tail_tokens = 0
    for a, b in reversed(spans):  # whole groups from the end
        if a < h_end:
            break
        g = sum(counts[a:b])
        fits = tail_tokens + g <= tail_budget
        soft = (n - t_start) < min_tail_messages and tail_tokens + g <= tail_budget * 1.5
        if not (fits or soft):
            break
        t_start, tail_tokens = a, tail_tokens + g
    t_start = max(t_start, h_end)
    lu = last_user_index(msgs)
    if lu is None or lu < h_end or lu >= t_start:
        return _Zones(h_end, t_start, prior, False, False)
    if ask_in_summary:
        return _Zones(h_end, t_start, prior, False, True)
    start = next(a for a, b in spans if a <= lu < b)
    return _Zones(h_end, max(start, h_end), prior, True, False)


def _freed(counts: list[int], z: _Zones) -> int:
    """Tokens of the earlier summary kept in the head, which assembly replaces with the new summary."""
    return counts[z.prior] if z.prior is not None and z.prior < z.head_end else 0


def _small_min(summary_min: int, target: int) -> int:
    """The minimum summary once the plan has given ground on it: a quarter of the target."""
    return min(summary_min, max(target // 4, 100))


@dataclass(frozen=True)
class _Asks:
    """What an ask costs the summary's Active Task when it goes there: the last user message's words (when the plan
    moves them there), or an ask an earlier summary holds (at `carrier`) when it is replaced and no user turn came after."""

    last: int
    carried: int = 0
    carrier: int = -1

    def cost(self, z: _Zones) -> int:
        if self.carried and self.carrier < z.tail_start:
            return self.carried
        return self.last if z.last_ask_in_summary else 0


def _asks(t: Transcript, counter: Counter, lu: int | None) -> _Asks:
    """The person's words of the last ask, verbatim (a Codex IDE context or a Claude Code reminder around them is the
    harness's, summarized with the middle), and an earlier summary's ask (see `carrier`)."""
    last = text_cost(ask_words(t.messages[lu]), counter) if lu is not None else 0
    k = carrier(t)
    ask = carried_ask(t.messages[k].text()) if k is not None else None
    return _Asks(last, text_cost(ask, counter), k) if k is not None and ask else _Asks(last)


def carrier(t: Transcript) -> int | None:
    """The latest compaction summary, when no user turn follows it: when a new summary replaces it, the ask it
    holds is still the latest one."""
    msgs = t.messages
    for k in range(len(msgs) - 1, -1, -1):
        m = msgs[k]
        if is_summary(m):
            return k if not any(x.role == "user" and not is_summary(x) and x.text().strip() for x in msgs[k + 1 :]) else None
    return None


def carried_ask(summary: str) -> str | None:
    """The ask an earlier summary carries verbatim in its Active Task (a plan had moved it there), or None when
    its Active Task points to a kept message, is empty, or is a cut copy."""
    from ..summarizers.offline import POINTERS
    from ..summarizers.prompt import parse_sections, unescape_body

    body = parse_sections(summary).get("Active Task", "")
    ends = (SPAN_LINE_START, RECALL_HINT_START, SUMMARY_END)  # a terse summary's last section runs into them
    lines = list(itertools.takewhile(lambda ln: not ln.startswith(ends), body.split("\n")))
    text = unescape_body("\n".join(lines)).strip()
    if not text or text in POINTERS or text == "None" or text.endswith("[cut]"):
        return None
    return text


def text_cost(words: str, counter: Counter) -> int:
    """Tokens a verbatim text takes as a summary section: itself as framing shows it (a line that reads as a
    heading or a role line quoted "> "), the section's heading ("## Active Task") and the line breaks around it."""
    from ..summarizers.prompt import escape_body  # the summary's framing rules (loaded when an ask goes there)

    return counter.text(escape_body(words)) + counter.text("## Active Task\n\n") + 1


def _need(t: Transcript, counter: Counter, z: _Zones, summary_min: int, asks: _Asks, giving_ground: bool = False) -> int:
    """The least room the summary needs: its minimum; with an ask in it, the ask and the summary message's own
    frame (marker, what assembly adds; not the reference line, which summarize leaves out when the ask needs its
    room) besides, so that the text has room for the ask. An earlier
    summary's ask is part of the summary that replaces it, so it counts within the minimum, except while the plan
    gives ground (it then looks for zones that leave the ask room beside a whole minimum summary)."""
    ask = asks.cost(z)
    if not ask:
        return summary_min
    frame = summary_overhead(t, z.head_end, counter, "")  # the reference line goes when the ask needs its room
    if not z.last_ask_in_summary and not giving_ground:
        return max(summary_min, ask + frame)
    return ask + max(summary_min, frame)


def _give_ground(
    t: Transcript, counter: Counter, counts: list[int], spans: list[tuple[int, int]], budget: Budget, target: int, ask: _Asks
) -> tuple[_Zones, int]:
    """The zones (and minimum summary) of the first attempt that leaves the summary its room, in the order
    `plan` documents; the last attempt when none does (plan then refuses with the reason)."""
    summary_min, tail = budget.summary_min, budget.tail
    attempts = [(budget.protect_first, budget.last_ask == "summary", summary_min, True, tail)]
    if budget.last_ask != "tail":
        attempts.append((budget.protect_first, True, summary_min, True, tail))
        attempts += [(k, True, summary_min, True, tail) for k in range(min(budget.protect_first, 2), -1, -1)]
        small = _small_min(summary_min, target)
        attempts += [
            (0, True, small, True, tail),
            (0, True, small, False, tail),
            (0, True, small, False, tail // 2),
            (0, True, small, False, 0),
        ]
    total = sum(counts)
    for protect_first, ask_in_summary, summary_min, keep_prior, tail in attempts:
        z = _zones(t, counts, spans, protect_first, tail, budget.min_tail_messages if tail else 0, ask_in_summary, keep_prior)
        room = target - sum(counts[: z.head_end]) - sum(counts[z.tail_start :]) + _freed(counts, z)
        # (room an earlier summary in the head frees is no use with nothing between head and tail to summarize)
        if total <= target or (z.head_end < z.tail_start and room >= _need(t, counter, z, summary_min, ask, giving_ground=True)):
            break
    return z, summary_min


def _advice(head: list[Message], head_tokens: int, target: int) -> str:
    """What to change: the system prompt alone over the target is no option of the plan's."""
    if head_tokens >= target and all(m.role in SYSTEM_ROLES for m in head):
        return f"The system prompt alone takes {head_tokens:,} tokens, over the target: raise --context-window or --threshold."
    return "Raise --context-window or --threshold, or lower --protect-first, --tail-tokens or --summary-min."


def plan(
    t: Transcript,
    counter: Counter,
    budget: Budget | None = None,
    counts: list[int] | None = None,
    zones: tuple[int, int] | None = None,
    reserve: int = 0,
) -> Plan:
    """The plan for `t`; `zones` (head_end, tail_start) takes the boundaries from an earlier plan.

    When head + tail + the minimum summary do not fit the target, the plan gives ground in this order
    before it refuses: the last ask moves into the summary (verbatim) instead of stretching the tail
    (unless `last_ask="tail"`), then the head keeps fewer first messages (the summary carries the goal),
    then the minimum summary shrinks to a quarter of the target, then the tail to half its budget, then
    to nothing (the summary then carries the last ask and the agent's latest statement). `reserve` tokens of the target are left
    free (what repair will add)."""
    budget = budget or Budget()
    msgs = t.messages
    n = len(msgs)
    counts = counts if counts is not None else counter.messages(msgs)
    total = sum(counts)
    target = budget.target - reserve
    spans = with_observations(groups(msgs), msgs)
    lu = last_user_index(msgs)
    summary_min = budget.summary_min
    ask = _asks(t, counter, lu) if total > target else _Asks(0)  # an ask costs something only in a compaction
    if zones is not None:
        z = _zones(t, counts, spans, budget.protect_first, budget.tail, budget.min_tail_messages, False)
        in_summary = lu is not None and zones[0] <= lu < zones[1]
        z = _Zones(zones[0], zones[1], _kept_prior(z.prior, zones), False, in_summary)
    else:
        z, summary_min = _give_ground(t, counter, counts, spans, budget, target, ask)

    h_end, t_start = z.head_end, z.tail_start
    zone_tokens = {"head": sum(counts[:h_end]), "middle": sum(counts[h_end:t_start]), "tail": sum(counts[t_start:])}
    # An earlier summary in the head is replaced by the new one: its tokens are the new summary's to use.
    freed = _freed(counts, z)
    room = target - zone_tokens["head"] - zone_tokens["tail"] + freed
    if zones is not None and room < _need(t, counter, z, summary_min, ask):
        summary_min = _small_min(summary_min, target)  # the zones of a plan that gave ground: its minimum too
    summary_budget = min(max(int((zone_tokens["middle"] + freed) * budget.summary_ratio), summary_min), budget.summary_max)
    p = Plan(
        t.id,
        n,
        h_end,
        t_start,
        zone_tokens,
        total,
        target,
        budget.tail,
        summary_budget,
        counter.label,
        needs_compaction=False,
        reason="",
        anchor_forced=z.anchor_forced,
        prior_summary=z.prior,
        counts=counts,
        last_ask_in_summary=z.last_ask_in_summary,
        reserve=reserve,
    )
    if total <= target:
        return dataclasses.replace(p, reason=f"no compaction needed: {total:,} tokens is within the target of {target:,}")
    if zone_tokens["middle"] == 0:
        raise _cannot_fit(
            p,
            total - target,
            f"{t.id}: cannot fit the target of {target:,} tokens: nothing between head ({zone_tokens['head']:,} tokens) and tail "
            f"({zone_tokens['tail']:,}{', stretched to keep the last user message' if z.anchor_forced else ''}) to summarize, and together "
            f"they take {total:,}. Raise --context-window or --threshold, or lower --protect-first or --tail-tokens.",
        )
    if room < summary_min:
        raise _cannot_fit(
            p,
            summary_min - room,
            f"{t.id}: cannot fit the target of {target:,} tokens: head {zone_tokens['head']:,} + tail "
            f"{zone_tokens['tail']:,}{' (stretched to keep the last user message)' if z.anchor_forced else ''} + minimum summary "
            f"{summary_min:,} = {zone_tokens['head'] + zone_tokens['tail'] + summary_min:,} tokens, "
            f"{summary_min - room:,} over. {_advice(msgs[:h_end], zone_tokens['head'], target)}",
        )
    summary_budget = min(summary_budget, room)
    if ask.cost(z):
        need = _need(t, counter, z, summary_min, ask)  # the ask verbatim, and room for the rest
        if room < need:
            raise _cannot_fit(
                p,
                need - room,
                f"{t.id}: cannot fit the target of {target:,} tokens even with the last ask in the summary: the "
                f"{'ask an earlier summary holds' if ask.carried and ask.carrier < z.tail_start else 'last user message'} alone "
                f"takes {ask.cost(z):,} tokens, the summary's frame {need - ask.cost(z):,} at least, and the summary has "
                f"{room:,}. Raise --context-window or --threshold.",
            )
        summary_budget = min(max(summary_budget, need), room)
    reason = f"compaction: the middle's {zone_tokens['middle']:,} tokens become a summary of at most {summary_budget:,}"
    if p.last_ask_in_summary:
        reason += "; the last user message is kept verbatim in the summary's Active Task"
    return dataclasses.replace(p, summary_budget=summary_budget, needs_compaction=True, reason=reason)


def _cannot_fit(p: Plan, over: int, message: str) -> CannotFit:
    """The refusal, with the facts its message gives (CannotFit.facts): the tokens the smallest plan `p` could make
    needs against the target."""
    e = CannotFit(message)
    e.facts = {"total": p.total, "target": p.target, "needed": p.target + over, "over": over, "tokens": dict(p.tokens)}
    return e


def unfit_json(transcript: str, e: CannotFit) -> dict:
    """`plan --json`'s object for a transcript that cannot fit: "fits": false, the facts, and the error's message."""
    return {"transcript": transcript, "fits": False, **(e.facts or {}), "error": str(e)}


def plan_for_repair(
    t: Transcript, counter: Counter, budget: Budget | None = None, counts: list[int] | None = None, zones: tuple[int, int] | None = None
) -> Plan:
    """`plan`, leaving free what repair will add after it (stubs for calls without a result): what `plan` (the
    command), `summarize` and `compact` all plan with, so that the pipe and `compact` agree."""
    from .repair import MEASURED, OPENING, STUB, repair

    counts = counts if counts is not None else counter.messages(t.messages)
    p = plan(t, counter, budget, counts=counts, zones=zones)
    calls = sum(len(m.tool_calls) for m in t.messages)
    # The most repair adds, a stub a call and an opening, bounded by their bytes (a token is at least one): exact
    # counts would tokenize their dash (the Unicode tables' import: ~13 ms of a `compact` of a small file).
    most = calls * (len(STUB.encode()) + 8) + len(OPENING.encode()) + 8
    if not p.needs_compaction and p.total + most <= p.target:
        return p  # within its target whatever repair adds: nothing to reserve (and no repair run to find out)
    fixed, st = repair(t, MEASURED)
    reserve = sum(counter.messages(fixed.messages)) - sum(counts) if st.changed else 0
    # Reserved when a compaction is needed anyway, or when repair alone would take the transcript over its target
    # (its stubs for unanswered calls count in the output); a transcript at or under its target once repaired is
    # never compacted.
    if reserve > 0 and (p.needs_compaction or p.total + reserve > p.target):
        p = plan(t, counter, budget, counts=counts, zones=zones, reserve=reserve)
    return p


def annotate(t: Transcript, p: Plan) -> Transcript:
    """The transcript with each message's zone in its `_compactctl` note (untouched otherwise)."""
    tail_start = p.tail_start if p.needs_compaction else p.head_end  # nothing to summarize: all kept
    msgs = [
        dataclasses.replace(m, note={**m.note, "zone": "head" if i < p.head_end else "middle" if i < tail_start else "tail"})
        for i, m in enumerate(t.messages)
    ]
    return dataclasses.replace(t, messages=msgs)


def from_annotations(t: Transcript) -> tuple[int, int] | None:
    """(head_end, tail_start) if every message carries a plan zone in order, else None."""
    zones = [m.note.get("zone") for m in t.messages]
    if not zones or any(z not in ZONES for z in zones):
        return None
    order = [ZONES.index(z) for z in zones]
    if order != sorted(order):
        return None
    return zones.count("head"), zones.count("head") + zones.count("middle")


def _kept_prior(prior: int | None, zones: tuple[int, int]) -> int | None:
    """An earlier summary the head keeps (the new summary replaces it); None when the zones given (`plan --annotate`) end
    the head before it: it is then in the middle, summarized with it (as the prior summary too, it was named twice among
    the originals the new summary's reference points to, and the pipe's reference was not `compact`'s)."""
    return prior if prior is not None and prior < zones[0] else None
