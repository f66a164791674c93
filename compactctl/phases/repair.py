"""Phase 5: make a transcript valid for the OpenAI and Anthropic APIs again.

- a tool result that answers no earlier call is removed;
- a call with no result gets a stub result right after its group (or, with strip, loses the call);
- results are placed directly after the assistant message that made the calls, in call order;
- duplicate call ids within one assistant message are renamed (with their results);
- empty user/assistant messages are removed; a conversation that opens with an assistant turn gets
  a short user turn before it (Anthropic requires the first message to be from the user).
`check` reports the same rules as violations without changing anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import MISSING, SYSTEM_ROLES, Message, Transcript
from ..pairs import match
from . import Archived, archive

STUB = "[Result from earlier conversation — see context summary above]"
OPENING = "[Earlier conversation compacted — continuing from here]"


@dataclass(slots=True)
class Violation:
    transcript: str
    index: int
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.transcript}: message {self.index}: {self.rule}: {self.detail}"


@dataclass
class RepairStats:
    orphan_results_removed: int = 0
    stubs_added: int = 0
    calls_stripped: int = 0
    results_moved: int = 0
    ids_renamed: int = 0
    empty_removed: int = 0
    openings_added: int = 0
    archived: list[Archived] = field(default_factory=list, repr=False)

    @property
    def changed(self) -> bool:
        return any((self.orphan_results_removed, self.stubs_added, self.calls_stripped, self.results_moved,
                    self.ids_renamed, self.empty_removed, self.openings_added))


def _empty(m: Message) -> bool:
    if m.role not in ("user", "assistant") or m.tool_calls:
        return False
    c = m.content
    if c is MISSING or c is None:
        return not m.reasoning
    if isinstance(c, str):
        return not c.strip() and not m.reasoning
    if isinstance(c, list):
        return len(c) == 0
    return False


def check(t: Transcript) -> list[Violation]:
    out: list[Violation] = []
    msgs = t.messages
    pairs, orphans = match(msgs)
    for i in orphans:
        out.append(Violation(t.id, i, "orphan-result", f"tool result {msgs[i].tool_call_id!r} answers no earlier call"))
    answered = {(p.call_msg, p.call_pos) for p in pairs}
    results_of: dict[int, list[int]] = {}
    for p in pairs:
        results_of.setdefault(p.call_msg, []).append(p.result)
    for i, m in enumerate(msgs):
        if m.role == "assistant" and m.tool_calls:
            seen = set()
            for pos, c in enumerate(m.tool_calls):
                if (i, pos) not in answered:
                    out.append(Violation(t.id, i, "missing-result", f"call {c.id!r} ({c.name}) has no result"))
                if c.id is not None and c.id in seen:
                    out.append(Violation(t.id, i, "duplicate-id", f"call id {c.id!r} appears twice in one message"))
                seen.add(c.id)
            res = sorted(results_of.get(i, []))
            if res and res != list(range(i + 1, i + 1 + len(res))):
                out.append(Violation(t.id, i, "placement", "tool results do not directly follow their calls"))
        if _empty(m):
            out.append(Violation(t.id, i, "empty-message", f"{m.role} message has no content"))
    first = next(((i, m) for i, m in enumerate(msgs) if m.role not in SYSTEM_ROLES), None)
    if first is not None and first[1].role != "user":
        out.append(Violation(t.id, first[0], "first-role", f"first non-system message is {first[1].role}, not user"))
    return out


def repair(t: Transcript, strip_unanswered: bool = False) -> tuple[Transcript, RepairStats]:
    st = RepairStats()
    msgs = t.messages
    pairs, orphans = match(msgs)
    for i in orphans:
        archive(t, msgs[i], "repair", st.archived)
    st.orphan_results_removed = len(orphans)
    result_for: dict[tuple[int, int], int] = {(p.call_msg, p.call_pos): p.result for p in pairs}
    placed: list[Message] = []
    for i, m in enumerate(msgs):
        if m.role == "tool":
            continue  # placed with its call, or dropped as an orphan
        if _empty(m):
            archive(t, m, "repair", st.archived)
            st.empty_removed += 1
            continue
        if not (m.role == "assistant" and m.tool_calls):
            placed.append(m)
            continue
        calls = list(m.tool_calls)
        results: list[Message] = []
        kept_calls = []
        seen: set = set()
        renamed = False
        for pos, c in enumerate(calls):
            r = result_for.get((i, pos))
            rmsg = msgs[r] if r is not None else None
            if c.id is not None and c.id in seen:
                new_id = f"{c.id}__{pos}"
                c = type(c)(new_id, c.name, c.arguments, dict(c.extra))
                if rmsg is not None:
                    archive(t, rmsg, "repair", st.archived)
                    rmsg = rmsg.evolve(tool_call_id=new_id)
                renamed = True
                st.ids_renamed += 1
            seen.add(c.id)
            if rmsg is None:
                if strip_unanswered:
                    st.calls_stripped += 1
                    continue
                rmsg = Message(role="tool", content=STUB, tool_call_id=c.id, name=c.name if c.id is None else None)
                st.stubs_added += 1
            kept_calls.append(c)
            results.append(rmsg)
        if renamed or len(kept_calls) != len(calls):
            archive(t, m, "repair", st.archived)
            if not kept_calls and not (m.text().strip() or m.reasoning):
                st.empty_removed += 1
                continue
            m = m.evolve(tool_calls=kept_calls)
        placed.append(m)
        order = [result_for[(i, pos)] for pos in range(len(calls)) if (i, pos) in result_for]
        if order != list(range(i + 1, i + 1 + len(order))):
            st.results_moved += len(order)
        placed.extend(results)
    first = next((j for j, m in enumerate(placed) if m.role not in SYSTEM_ROLES), None)
    if first is not None and placed[first].role != "user":
        placed.insert(first, Message(role="user", content=OPENING))
        st.openings_added += 1
    if not st.changed and len(placed) == len(msgs) and all(a is b for a, b in zip(placed, msgs, strict=True)):
        return t, st
    return t.evolve(messages=placed), st
