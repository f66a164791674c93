"""Which tool result answers which call.

A result is matched to the nearest earlier unanswered call with its id (real data reuses ids and
answers out of order); a result with no id takes the nearest earlier unanswered call of its name.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Message, ToolCall


@dataclass(frozen=True, slots=True)
class Pair:
    call_msg: int  # index of the assistant message
    call_pos: int  # position of the call in that message's tool_calls
    result: int  # index of the tool message


def match(messages: list[Message]) -> tuple[list[Pair], list[int]]:
    """(pairs, indices of results that answer no earlier call)."""
    open_calls: dict[str | None, list[tuple[int, int]]] = {}
    by_name: dict[str, list[tuple[int, int]]] = {}
    taken: set[tuple[int, int]] = set()
    pairs: list[Pair] = []
    orphans: list[int] = []
    for i, m in enumerate(messages):
        if m.role == "assistant" and m.tool_calls:
            for p, c in enumerate(m.tool_calls):
                open_calls.setdefault(c.id, []).append((i, p))
                by_name.setdefault(c.name, []).append((i, p))
        elif m.role == "tool":
            stack = open_calls.get(m.tool_call_id) if m.tool_call_id is not None else by_name.get(m.name or "", [])
            found = None
            while stack:
                cand = stack.pop()  # nearest earlier
                if cand not in taken:
                    found = cand
                    break
            if found is None:
                orphans.append(i)
            else:
                taken.add(found)
                pairs.append(Pair(found[0], found[1], i))
    return pairs, orphans


def calls_for_results(messages: list[Message]) -> dict[int, ToolCall]:
    """Result index -> the call it answers."""
    pairs, _ = match(messages)
    return {p.result: messages[p.call_msg].tool_calls[p.call_pos] for p in pairs}


def groups(messages: list[Message]) -> list[tuple[int, int]]:
    """Atomic spans [start, end) that a cut must not split: an assistant message with tool calls and
    every result answering it (assuming results follow their call, as after repair)."""
    pairs, _ = match(messages)
    last_result: dict[int, int] = {}
    for p in pairs:
        last_result[p.call_msg] = max(last_result.get(p.call_msg, p.call_msg), p.result)
    spans = []
    i = 0
    n = len(messages)
    while i < n:
        end = last_result.get(i, i) + 1
        j = i
        while j < end:  # a span grows while a message inside it has later results
            end = max(end, last_result.get(j, j) + 1)
            j += 1
        spans.append((i, end))
        i = end
    return spans
