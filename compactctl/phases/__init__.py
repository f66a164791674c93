"""The five phases, each a pure function from transcript to transcript plus a small stats record.

Originals a phase replaces or removes are returned as `Archived` entries; the caller decides
whether to write them (`--archive`). Phases never do I/O.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import orjson

from ..model import Message, Transcript


@dataclass(slots=True)
class Archived:
    transcript: str
    index: int  # position of the original in the transcript as read
    phase: str
    message: Message  # the original, untouched

    def record(self) -> dict:
        """The original as a JSON record: its source object for OpenAI chat, else the canonical
        message in OpenAI chat shape (which restore reads back through the canonical model)."""
        from ..formats.openai import message_to_dict

        m = self.message
        body = m.origin if isinstance(m.origin, dict) else message_to_dict(m.evolve())
        digest = hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()
        return {"transcript": self.transcript, "index": self.index, "phase": self.phase, "sha256": digest, "message": body}


def archive(t: Transcript, m: Message, phase: str, into: list[Archived]) -> None:
    """Keep the original of a message about to be changed or removed (only the first change counts)."""
    if m.untouched:
        into.append(Archived(t.id, m.index, phase, m))
