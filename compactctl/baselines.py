"""The baselines every eval compares compactctl against, at a token budget: head-tail (the naive
`messages[:N] + messages[-M:]` with tool outputs cut to 500 characters), recent (the first ask and the most recent
turns) and masking (old tool outputs replaced by a placeholder). Used by continuation scoring (at compactctl's
output tokens), compacting twice, and the probe eval (at compactctl's target). Each cuts at whole tool-call groups
and is repaired, so that what it writes is a transcript the APIs accept (an empty one is scored as written)."""

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
