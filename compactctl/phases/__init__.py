"""The five phases, each a pure function from transcript to transcript plus a small stats record.

Originals a phase replaces or removes are returned as `Archived` entries; the caller decides
whether to write them (`--archive`). Phases never do I/O.
"""

from __future__ import annotations

from ..lean import dataclass
from ..model import Message, Transcript


@dataclass(slots=True)
class Archived:
    """A message a phase removed or changed, as it was, for the archive."""

    transcript: str
    index: int  # position of the original in the transcript as read
    phase: str
    message: Message  # the original, untouched
    span: tuple[str, int, int] | None = None  # (reference, start, end) of the summarized span it belonged to
    call: dict | None = None  # a tool result's call (name, arguments): what a search for its file or command finds

    def record(self) -> dict:
        """The original as a JSON record: its source object for OpenAI chat, else the canonical
        message in OpenAI chat shape (which restore reads back through the canonical model),
        with its reference (see refs)."""
        import hashlib

        from .. import refs

        body = refs.body_of(self.message)
        canon = refs.canonical(body)
        digest = hashlib.sha256(canon).hexdigest()
        rec = {
            "transcript": self.transcript,
            "index": self.index,
            "phase": self.phase,
            "sha256": digest,
            "ref": refs.ref_of_canonical(canon),
            "message": body,
        }
        if self.span is not None:
            rec["span"], rec["span_start"], rec["span_end"] = self.span
        if self.call is not None:
            rec["call"] = self.call
        if self.message.is_error is not None:  # a failed result's flag, which OpenAI chat's shape has no key for
            rec["is_error"] = self.message.is_error
        return rec


def archive(t: Transcript, m: Message, phase: str, into: list[Archived]) -> None:
    """Keep the original of a message about to be changed or removed (only the first change counts)."""
    if m.index is not None:  # untouched
        into.append(Archived(t.id, m.index, phase, m, call=_call_of(t, m)))


CALL_LOOKBACK = 64  # messages searched back for a result's call (it is right before its result, as a rule)
CALL_CHARS = 1_000  # of its arguments (a written file's content is not copied whole)


def _call_of(t: Transcript, m: Message) -> dict | None:
    """The call a tool result answers (by id, the nearest before it), as the archive records it. `m.index` is its
    place as read; a phase may have moved it since (repair adds an opening turn), so the search starts a little after."""
    if m.role != "tool" or not m.tool_call_id or m.index is None:
        return None
    msgs = t.messages
    if m.index < len(msgs) and msgs[m.index] is m:  # where it was read, as a rule (prune, summarize): no search
        start = m.index
    else:
        start = min(m.index + CALL_LOOKBACK, len(msgs)) - 1
        for k in range(start, max(m.index - CALL_LOOKBACK, -1), -1):
            if msgs[k] is m:  # its own place: the nearest call before it from here on
                start = k
                break
    for k in range(start, max(start - CALL_LOOKBACK, -1), -1):
        for c in msgs[k].tool_calls:
            if c.id == m.tool_call_id:
                return {"name": c.name, "arguments": c.arguments[:CALL_CHARS]}  # a file's path, a command: its start
    return None
