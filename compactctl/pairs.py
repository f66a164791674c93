"""Which tool result answers which call.

Pairing is by position and id, never by guessing:

0. The run of results right after an assistant message that answers its calls one to one in order
   (as many results as calls, each with its call's id or none, no contradicting name) pairs by
   position: repeated ids and lost ids inside it are resolved by where each result stands.
1. Any other result with an id answers a call with that id: the nearest earlier assistant message holding an
   unanswered call with that id (real data reuses ids across turns and answers out of order); inside
   that message, when the id is repeated, the call whose name the result names, else the first
   unanswered one in call order (the k-th result with a repeated id answers the k-th call with it).
   Every result with an id is paired before any result without one, so a result that lost its id can
   never take a call that another result answers by id.
2. A result with no id answers a still unanswered call of the nearest earlier assistant message that
   made calls (legacy `function_call` results, writers that drop ids): the call whose name it names,
   else the first unanswered call in order. It never reaches further back: if that message has no
   unanswered call, the result answers nothing and is an orphan.
"""

from __future__ import annotations

import re

from .lean import dataclass
from .model import Message, ToolCall

# A tool-call id both APIs take: Anthropic's pattern, OpenAI's length (40 at most).
VALID_ID = re.compile(r"[A-Za-z0-9_-]{1,40}")


class NewIds:
    """New call ids, as `repair` and a conversion (`formats.ids_for`) give them: from the old id's own characters (any
    other as `_`, cut to 30) and a count over the transcript, `base__N` (`call_ccN` from none); never an id the
    transcript holds or one given out before."""

    def __init__(self, taken: set) -> None:
        self.taken = set(taken)
        self.n = 0

    def new(self, old: str | None) -> str:
        base = re.sub(r"[^A-Za-z0-9_-]", "_", old)[:30] if old else None  # room for "__N" within 40
        while True:
            self.n += 1
            cand = f"{base}__{self.n}" if base else f"call_cc{self.n}"
            if cand not in self.taken:
                self.taken.add(cand)
                return cand


@dataclass(frozen=True, slots=True)
class Pair:
    """A tool call and the message that holds its result."""

    call_msg: int  # index of the assistant message
    call_pos: int  # position of the call in that message's tool_calls
    result: int  # index of the tool message


def _pick(cands: list[int], calls: list[ToolCall], name: str | None, at: int | None) -> int:
    """Index into `cands` (unanswered call positions, in call order) of the call a result answers: the
    call at the result's own position `at` in the run of results after the calls (when that is a
    candidate and the name does not contradict it), else the first call of the name it gives, else the
    first one."""
    if at is not None and at in cands and (not name or calls[at].name == name):
        return cands.index(at)
    if name:
        for k, p in enumerate(cands):
            if calls[p].name == name:
                return k
    return 0


def _aligned(calls: list[ToolCall], run: list[Message]) -> bool:
    """The run of results after a message answers its calls one to one, in order: as many results as
    calls, each with the id of the call at its position (or none, when that is all it lost) and no
    other tool's name."""
    if len(run) != len(calls):
        return False
    for c, r in zip(calls, run, strict=True):
        rid = r.tool_call_id
        if rid is not None and rid != c.id:
            return False
        if r.name and c.name and r.name != c.name:
            return False
    return True


def match(messages: list[Message]) -> tuple[list[Pair], list[int]]:
    """(pairs sorted by result index, indices of results that answer no call)."""
    found: dict[int, tuple[int, int]] = {}  # result index -> (call message, call position)
    offset: dict[int, tuple[int, int]] = {}  # result index -> (call message, position in the run right after it)
    _pair_runs(messages, found, offset)
    idless = _pair_by_id(messages, found, offset)
    if idless:
        _pair_idless(messages, found, offset, idless)
    pairs = [Pair(found[r][0], found[r][1], r) for r in sorted(found)]
    orphans = [i for i, m in enumerate(messages) if m.role == "tool" and i not in found]
    return pairs, orphans


def _pair_runs(messages: list[Message], found: dict[int, tuple[int, int]], offset: dict[int, tuple[int, int]]) -> None:
    """Rule 0: runs of results right after their calls; aligned ones pair by position outright."""
    n = len(messages)
    i = 0
    while i < n:
        m = messages[i]
        if m.role == "assistant" and m.tool_calls:
            j = i + 1
            while j < n and messages[j].role == "tool":
                offset[j] = (i, j - i - 1)
                j += 1
            if _aligned(m.tool_calls, messages[i + 1 : j]):
                for q in range(j - i - 1):
                    found[i + 1 + q] = (i, q)
            i = max(j, i + 1)
            continue
        i += 1


def _pair_by_id(messages: list[Message], found: dict[int, tuple[int, int]], offset: dict[int, tuple[int, int]]) -> list[tuple[int, int]]:
    """Rule 1: results with an id. Returns the results with none: (result index, nearest earlier call message or -1)."""
    taken = set(found.values())
    by_id: dict[str, list[tuple[int, list[int]]]] = {}  # call id -> [(assistant message, unanswered positions)]
    idless: list[tuple[int, int]] = []
    last_call_msg = -1
    for i, m in enumerate(messages):
        if m.role == "assistant" and m.tool_calls:
            last_call_msg = i
            here: dict[str, list[int]] = {}
            for p, c in enumerate(m.tool_calls):
                if isinstance(c.id, str) and (i, p) not in taken:
                    here.setdefault(c.id, []).append(p)
            for cid, positions in here.items():
                by_id.setdefault(cid, []).append((i, positions))
        elif m.role == "tool" and i not in found:
            rid = m.tool_call_id
            if not isinstance(rid, str):
                idless.append((i, last_call_msg))
                continue
            entries = by_id.get(rid)
            if entries:  # the nearest earlier message with an unanswered call of this id
                j, positions = entries[-1]
                at = offset[i][1] if i in offset and offset[i][0] == j else None
                p = positions.pop(_pick(positions, messages[j].tool_calls, m.name, at))
                if not positions:
                    entries.pop()
                found[i] = (j, p)
    return idless


def _pair_idless(
    messages: list[Message], found: dict[int, tuple[int, int]], offset: dict[int, tuple[int, int]], idless: list[tuple[int, int]]
) -> None:
    """Rule 2: a result with no id answers an unanswered call of the nearest earlier message that made calls."""
    taken = set(found.values())
    open_in: dict[int, list[int]] = {}  # assistant message -> its unanswered call positions (built lazily)
    for i, j in idless:
        if j < 0:
            continue
        calls = messages[j].tool_calls
        cands = open_in.get(j)
        if cands is None:
            cands = open_in[j] = [p for p in range(len(calls)) if (j, p) not in taken]
        if cands:
            at = offset[i][1] if i in offset and offset[i][0] == j else None
            found[i] = (j, cands.pop(_pick(cands, calls, messages[i].name, at)))


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
