"""Shared machinery for agent logs written as one record per line (Claude Code, Codex).

The reader keeps every source line; a canonical message remembers which lines it came from. The
writer re-emits untouched lines byte for byte, rebuilds the lines of changed messages, drops the
records that are never sent to a model only inside the compacted region (counted), and lets the
format place its own compaction records.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from ..lean import dataclass
from ..model import SUMMARY_END, SUMMARY_MERGED, Message, Transcript, is_summary


@dataclass
class LineLog:
    """A session file's source lines, kept so that a changed transcript is written back into them."""

    lines: list[tuple[bytes, dict]]  # every source line: (raw, parsed)
    context_start: int  # first line of the live context (after the tool's own last compaction)
    msg_lines: list[list[int]] = field(default_factory=list)  # per message read: its line indices
    # context lines that are not part of the conversation (Claude Code: abandoned branches, sidechains): never
    # read as messages; written back only when nothing changed (the file as it was), else left out and counted
    off_path: frozenset[int] = frozenset()


def lines_of(m: Message) -> list[int]:
    """The source lines a message came from (also after a phase changed it)."""
    a = m.anchor
    return list(a[1]) if isinstance(a, tuple) and len(a) == 2 and a[0] == "lines" else []


def unchanged(t: Transcript) -> bool:
    log = t.native
    return (
        isinstance(log, LineLog)
        and len(t.messages) == len(log.msg_lines)
        and all(m.untouched and m.index == i for i, m in enumerate(t.messages))
    )


@dataclass
class Plan:
    """What the writer emits, in order, for a changed transcript."""

    summary: Message | None
    head: list[Message]  # messages before the summary (all messages when there is none)
    tail: list[Message]
    dropped_lines: set[int]  # non-message lines dropped inside the compacted region, and the lines off the path


def layout(t: Transcript) -> Plan:
    log: LineLog = t.native
    k = next((i for i, m in enumerate(t.messages) if is_summary(m) and not m.untouched), None)
    kept = {j for m in t.messages for j in lines_of(m)}
    removed = [j for i, ls in enumerate(log.msg_lines) for j in ls if j not in kept]
    dropped: set[int] = set()
    if removed:
        lo, hi = min(removed), max(removed)
        message_lines = {j for ls in log.msg_lines for j in ls}
        dropped = {j for j in range(lo, hi + 1) if j not in message_lines and j >= log.context_start}
    dropped |= log.off_path
    if k is None:
        return Plan(None, list(t.messages), [], dropped)
    summary, rest = split_merged(t.messages[k])
    return Plan(summary, t.messages[:k], ([rest] if rest is not None else []) + t.messages[k + 1 :], dropped)


def split_merged(m: Message) -> tuple[Message, Message | None]:
    """A summary that assembly merged into the next message (both roles collided there), as the summary
    on its own line and that message as it was, with its calls: a log's summary record holds text only,
    and these formats accept consecutive user lines. (m, None) for a summary of its own."""
    text = m.text()
    end = text.find(SUMMARY_END)
    at = text.find(SUMMARY_MERGED, end) if end >= 0 else -1
    if at < 0:
        return m, None
    frame = Message(role="user", content=text[:at].rstrip())
    c = m.content
    if isinstance(c, list):  # assembly put the summary in a text part of its own, first
        rest = m.evolve(content=c[1:])
    else:
        rest = m.evolve(content=(c if isinstance(c, str) else "")[len(text[:at]) + len(SUMMARY_MERGED) :].lstrip("\n"))
    return frame, rest


def dropped_records(t: Transcript) -> int:
    return len(layout(t).dropped_lines) if isinstance(t.native, LineLog) and not unchanged(t) else 0


def stable_uuid(*parts: Any) -> str:
    import hashlib  # here: only new lines need one; uuid and OpenSSL's start-up are not paid by a run that writes none
    import uuid

    h = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()
    return str(uuid.UUID(h[:32], version=4))
