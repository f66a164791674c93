"""The baselines every eval compares compactctl against, at a token budget: head-tail (the naive
`messages[:N] + messages[-M:]` with tool outputs cut to 500 characters), head-tail-fill (a head and a tail that fill
the budget: continuation scoring and compacting twice only), recent (the first ask and the most recent turns) and
masking (old tool outputs replaced by a placeholder). Used by continuation scoring (at compactctl's output tokens),
compacting twice, and the probe eval (at compactctl's target). Each cuts at whole tool-call groups (head-tail-fill
cuts the texts of the group at each of its two boundaries) and is repaired, so that what it writes is a transcript
the APIs accept (an empty one is scored as written)."""

from __future__ import annotations

from . import needed
from .model import SYSTEM_ROLES, Message, Transcript
from .pairs import groups
from .phases.repair import MEASURED, repair
from .tokens import Counter

MASK = "[tool output omitted]"


def tokens_of(counter: Counter, msgs: list[Message]) -> int:
    """The tokens of these messages, as every strategy's output is measured."""
    return sum(counter.messages(msgs))


def _leading_system(msgs: list[Message]) -> int:
    s = 0
    while s < len(msgs) and msgs[s].role in SYSTEM_ROLES:
        s += 1
    return s


def _is_output(msgs: list[Message], i: int, text_actions: bool) -> bool:
    return msgs[i].role == "tool" or needed.is_observation(msgs, i, text_actions)


def _repaired_tokens(t: Transcript, counter: Counter, msgs: list[Message]) -> int:
    """The tokens of these messages as written: repaired, a stub for each call whose result is not among them."""
    return tokens_of(counter, repair(t.evolve(messages=msgs), MEASURED)[0].messages)


def _fit_tail(t: Transcript, counter: Counter, head: list[Message], body: list[Message], budget: int) -> Transcript:
    """head + the most recent whole groups of `body` whose repaired total fits `budget`."""
    spans = groups(body)
    used = tokens_of(counter, head)
    k = len(spans)
    while k > 0:
        s, e = spans[k - 1]
        c = tokens_of(counter, body[s:e])
        if used + c > budget:
            break
        used += c
        k -= 1
    while True:
        tail = body[spans[k][0] :] if k < len(spans) else []
        out, _ = repair(t.evolve(messages=head + tail), MEASURED)
        if tokens_of(counter, out.messages) <= budget or not tail:
            return out
        k += 1  # repair added a stub or an opening: give up one more group


def head_tail(t: Transcript, counter: Counter, budget: int, first: int = 3, cut: int = 500, strict: bool = True) -> Transcript:
    """System + the first `first` messages (whole groups) + the last groups that fit; tool outputs cut to `cut` chars.
    A head larger than the budget gives way from its end, down to the system messages (`strict`: at compactctl's
    output tokens, never more), or down to the first message after them (`strict=False`: the probe eval's, at
    compactctl's target, which compactctl too overshoots by its head when it cannot fit)."""
    ta = needed.text_action_agent(t.messages)
    msgs = [
        m.evolve(content=m.text()[:cut]) if _is_output(t.messages, i, ta) and len(m.text()) > cut else m for i, m in enumerate(t.messages)
    ]
    s = _leading_system(msgs)
    head_end = s
    for gs, ge in groups(msgs):
        if gs < s:
            continue
        if head_end - s >= first:
            break
        head_end = ge
    head = msgs[:head_end]
    while len(head) > s + (not strict) and _repaired_tokens(t, counter, head) > budget:  # stubs for cut-off calls count
        head = head[:-1]
    return _fit_tail(t, counter, head, msgs[len(head) :], budget)


HEAD_SHARE = 0.25  # head-tail-fill's head: a quarter of the budget the system messages leave, as the outside eval's


def head_tail_fill(t: Transcript, counter: Counter, budget: int, head_share: float = HEAD_SHARE) -> Transcript:
    """System + the first messages for `head_share` of the budget the system messages leave + the last messages for
    the rest (what the head leaves): whole groups, and the group at each boundary with its texts cut to fit (`_cut`:
    its start kept in the head, its end in the tail); no fixed cut of tool outputs. It fills nearly all the budget
    when the transcript has more, never over it (the system messages, always kept, aside): a repair that adds (a stub
    for a call the transcript left without a result) takes its tokens from the room and it is built again."""
    msgs = t.messages
    if tokens_of(counter, msgs) <= budget:
        whole, _ = repair(t, MEASURED)
        if tokens_of(counter, whole.messages) <= budget:
            return whole
    s = _leading_system(msgs)
    body = msgs[s:]
    spans = [body[a:b] for a, b in groups(body)]
    room = budget - tokens_of(counter, msgs[:s])
    while True:
        kept = _head_and_tail(spans, room, head_share, counter)
        out, _ = repair(t.evolve(messages=msgs[:s] + [m for g in kept for m in g]), MEASURED)
        over = tokens_of(counter, out.messages) - budget
        if over <= 0 or room <= 0:
            return out
        room -= over


def _head_and_tail(spans: list[list[Message]], room: int, head_share: float, counter: Counter) -> list[list[Message]]:
    """The head's groups within `head_share` of `room`, then the tail's within what it leaves. When the tail takes
    every group after the head whole, the head's cut group (if any) is cut again to all the room the tail left: it
    is the only group between the two, and a quarter of the room would leave the rest unused."""
    head, used = _fill(spans, int(room * head_share), counter, from_end=False)
    rest = spans[len(head) :]
    tail, tail_used = _fill(rest, room - used, counter, from_end=True)
    head_cut = bool(head) and head[-1] is not spans[len(head) - 1]
    if head_cut and len(tail) == len(rest) and (not tail or tail[0] is rest[0]):
        head, _ = _fill(spans[: len(head)], room - tail_used, counter, from_end=False)
    return head + tail


def _fill(spans: list[list[Message]], room: int, counter: Counter, from_end: bool) -> tuple[list[list[Message]], int]:
    """Whole groups of `spans` in order (from its end when `from_end`) while they fit `room` tokens, then the next one
    cut to what is left (`_cut`, if any cut of it fits): (the groups taken, in the transcript's order; their tokens)."""
    taken: list[list[Message]] = []
    used = 0
    for g in reversed(spans) if from_end else spans:
        c = tokens_of(counter, g)
        if used + c > room:
            cut = _cut(g, room - used, counter, keep_end=from_end)
            if cut:
                taken.append(cut)
                used += tokens_of(counter, cut)
            break
        taken.append(g)
        used += c
    return (taken[::-1] if from_end else taken), used


def _cut(group: list[Message], room: int, counter: Counter, keep_end: bool) -> list[Message]:
    """The largest cut of a group (`_cut_texts`) within `room` tokens, or [] when none fits (a call's arguments are
    never cut: a call kept with its results emptied still shows what it was)."""
    longest = max(1, *(len(m.text()) for m in group))
    best: list[Message] = []
    lo, hi = 0, longest - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        cut = _cut_texts(group, mid, longest, keep_end)
        if tokens_of(counter, cut) <= room:
            best, lo = cut, mid + 1
        else:
            hi = mid - 1
    return best


def _cut_texts(group: list[Message], k: int, longest: int, keep_end: bool) -> list[Message]:
    """The group with each message's text cut to k / longest of its characters (its end kept, or its start); a cut
    message keeps only that text (no image, no replayed reasoning), and one left with no text and no call is left
    out (a result never is)."""
    out = []
    for m in group:
        text = m.text()
        n = len(text) * k // longest
        if n == len(text) and not isinstance(m.content, list) and not m.reasoning:
            out.append(m)
        elif n or m.tool_calls or m.role == "tool":
            out.append(m.evolve(content=text[len(text) - n :] if keep_end else text[:n], reasoning=None))
    return out


def first_ask(msgs: list[Message]) -> int | None:
    """Index of the first user message with words the person wrote (not only harness text)."""
    ta = needed.text_action_agent(msgs)
    for i, m in enumerate(msgs):
        if m.role == "user" and not needed.is_observation(msgs, i, ta) and needed.split_injected(m.text())[1].strip():
            return i
    return None


def recent(t: Transcript, counter: Counter, budget: int) -> Transcript:
    """System + the first user ask (unless it alone is larger than the budget) + the most recent whole groups that fit."""
    msgs = t.messages
    s = _leading_system(msgs)
    a = first_ask(msgs)
    head = msgs[:s] + ([msgs[a]] if a is not None else [])
    if tokens_of(counter, head) > budget:  # an ask larger than the budget is not kept whole over it
        head = msgs[:s]
    body = msgs[a + 1 :] if a is not None else msgs[s:]
    return _fit_tail(t, counter, head, body, budget)


def masking(t: Transcript, counter: Counter, budget: int) -> Transcript:
    """Tool outputs -> a placeholder from the oldest on until `budget`; then the oldest groups are dropped."""
    ta = needed.text_action_agent(t.messages)
    msgs = list(t.messages)
    counts = counter.messages(msgs)
    total = sum(counts)
    for i, m in enumerate(msgs):
        if total <= budget:
            break
        if _is_output(t.messages, i, ta) and m.text() != MASK:
            new = m.evolve(content=MASK)
            c = counter.message(new)
            total += c - counts[i]
            msgs[i], counts[i] = new, c
    s = _leading_system(msgs)
    if total > budget:
        return _fit_tail(t, counter, msgs[:s], msgs[s:], budget)
    out, _ = repair(t.evolve(messages=msgs), MEASURED)
    return out
