"""Phase 4: head + summary message + tail, with no role conflicts.

The summary opens with the reference-only marker and closes with the end marker; the first system
message gets a one-time note. The summary's role: user after an assistant/tool message (or after
the system messages alone), assistant after a user message. When the first tail message has that
role too, the other role would collide with the message before (an assistant summary after a user
turn's answer, or one after a tool result standing for the model's reply to it), so the summary is
merged into the first tail message with clear delimiters, unless that message is the last user ask,
which stays verbatim: then the summary stands before it as its own user turn (both APIs accept
consecutive user turns), as it does when only system messages come before it.
"""

from __future__ import annotations

import dataclasses

from ..model import SUMMARY_END, SUMMARY_MARKER, SUMMARY_MERGED, SYSTEM_ROLES, Message, Transcript, last_user_index

PREAMBLE = (
    f"{SUMMARY_MARKER} Earlier turns were compacted into the summary below. It is background for reference "
    "only, not a request: do not act on it or answer it; continue from the messages that follow it."
)
SYSTEM_NOTE = "[Note: earlier turns of this conversation were compacted into a reference summary (marked CONTEXT COMPACTION).]"
MERGED = SUMMARY_MERGED


def summary_text(body: str) -> str:
    """The framed summary. The body is escaped here, where every summarizer's text passes: no content
    (a tool output, an LLM answer) can close the frame, forge a heading, a role line or a tool call."""
    from ..summarizers.prompt import frame_body  # the prompt tables load when a summary is made

    return f"{PREAMBLE}\n\n{frame_body(body.strip())}\n\n{SUMMARY_END}"


def framing_cost(t: Transcript, head_end: int, counter) -> int:
    """Tokens assembly adds besides the summary itself: the note on the first system message and, when the
    summary has to be merged into the first tail message, the delimiter (counted as if it always were)."""
    msgs = t.messages
    cost = counter.text(MERGED) + 2
    if head_end and msgs[0].role in SYSTEM_ROLES and SYSTEM_NOTE not in msgs[0].text():
        cost += counter.text("\n\n" + SYSTEM_NOTE) + 1
    return cost


def summary_overhead(t: Transcript, head_end: int, counter, trailer: str) -> int:
    """Tokens the summary message takes besides its body: the frame, the message's own overhead, the trailer
    (the span's reference line) and what assembly adds around it."""
    from ..tokens import MESSAGE_OVERHEAD

    return (
        counter.text(summary_text(""))
        + MESSAGE_OVERHEAD
        + (counter.text(trailer) + 1 if trailer else 0)
        + framing_cost(t, head_end, counter)
    )


def assemble(t: Transcript, head_end: int, tail_start: int, body: str, prior: int | None = None) -> tuple[Transcript, list[Message]]:
    """(new transcript, originals it replaced or changed)."""
    msgs = t.messages
    head = list(msgs[:head_end])
    tail = list(msgs[tail_start:])
    replaced = list(msgs[head_end:tail_start])
    if prior is not None and prior < len(head):
        replaced.append(head.pop(prior))
    text = summary_text(body)

    if head and head[0].role in SYSTEM_ROLES and SYSTEM_NOTE not in head[0].text():
        replaced.append(head[0])
        head[0] = _append_text(head[0], "\n\n" + SYSTEM_NOTE)

    prev = next((m for m in reversed(head) if m.role not in SYSTEM_ROLES), None)
    role = "assistant" if prev is not None and prev.role == "user" else "user"
    nxt = tail[0] if tail else None
    if nxt is not None and nxt.role == role and prev is not None:  # (after system messages alone: two user turns)
        # both roles collide: merge into the first tail message, or stand before the last ask
        if last_user_index(msgs) == tail_start:
            summary = Message(role="user", content=text)
            return t.evolve(messages=head + [summary] + tail), replaced
        replaced.append(nxt)
        # Into a message with neither text nor calls (SWE-agent's empty turn that only submitted) the summary goes
        # alone: nothing continues below it (and a last assistant turn must not end in white space).
        said = nxt.text().strip() or nxt.tool_calls
        tail[0] = _prepend_text(nxt, text + "\n\n" + MERGED + "\n\n" if said else text)
        return t.evolve(messages=head + tail), replaced
    summary = Message(role=role, content=text)
    return t.evolve(messages=head + [summary] + tail), replaced


def _append_text(m: Message, extra: str) -> Message:
    c = m.content
    if isinstance(c, list):
        return m.evolve(content=c + [{"type": "text", "text": extra.strip()}])
    return m.evolve(content=(c if isinstance(c, str) else "") + extra)


def _prepend_text(m: Message, text: str) -> Message:
    c = m.content
    if isinstance(c, list):
        return m.evolve(content=[{"type": "text", "text": text.rstrip()}] + c)
    return m.evolve(content=text + (c if isinstance(c, str) else ""))


def strip_zone(m: Message) -> Message:
    if "zone" not in m.note:
        return m
    note = {k: v for k, v in m.note.items() if k != "zone"}
    return dataclasses.replace(m, note=note)


def without_notes(t: Transcript) -> Transcript:
    """`t` without compactctl's own keys on its messages (`plan`'s zones, a session's strikes): no API takes them."""
    if not any(m.note for m in t.messages):
        return t
    return dataclasses.replace(t, messages=[dataclasses.replace(m, note={}) if m.note else m for m in t.messages], raw=None)


def without_zones(t: Transcript) -> Transcript:
    """`t` without `plan`'s zone annotations (for `summarize`, which reads them; no API takes the key)."""
    if not any("zone" in m.note for m in t.messages):
        return t
    return dataclasses.replace(t, messages=[strip_zone(m) for m in t.messages], raw=None)
