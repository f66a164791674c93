"""The five phases, each a pure function from transcript to transcript plus a small stats record.

Originals a phase replaces or removes are returned as `Archived` entries; the caller decides
whether to write them (`--archive`). Phases never do I/O.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import orjson

from ..model import Message, Transcript


@dataclass(slots=True)
class Archived:
    transcript: str
    index: int  # position of the original in the transcript as read
    phase: str
    origin: Any  # the original as its format holds it (the parsed source object)

    def record(self) -> dict:
        body = orjson.dumps(self.origin, option=orjson.OPT_SORT_KEYS)
        return {"transcript": self.transcript, "index": self.index, "phase": self.phase,
                "sha256": hashlib.sha256(body).hexdigest(), "message": self.origin}


def archive(t: Transcript, m: Message, phase: str, into: list[Archived]) -> None:
    """Keep the original of a message about to be changed or removed (only the first change counts)."""
    if m.untouched:
        into.append(Archived(t.id, m.index, phase, m.origin))
