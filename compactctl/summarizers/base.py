"""The summarizer contract (what the summarize phase hands a summarizer and gets back) and the
offline summarizer behind it.

The contract lives here, below the phases, so that a summarizer depends on nothing above its layer;
`compactctl.phases.summarize` re-exports the three names for existing callers.
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Protocol

from ..lean import dataclass
from ..model import Message
from ..tokens import Counter

if TYPE_CHECKING:  # the fact extractor and the offline summarizer load when a summary is made, not at start-up
    from .facts import Facts


@dataclass
class SummaryRequest:
    """What a summarizer is asked to summarize, in how many tokens."""

    transcript: str
    messages: list[Message]
    head_end: int
    tail_start: int
    budget: int  # tokens the summary may take
    facts: Facts
    focus: str | None = None
    instructions: str | None = None  # extra instructions for an LLM summarizer (--instructions)


@dataclass
class SummaryResult:
    """A summary and how it was made."""

    text: str
    summarizer: str  # "offline", or "llm:<model>"
    cache_hit: bool = False
    calls: int = 0
    retention: float | None = None  # share of key facts the LLM's own answer kept
    warnings: list[str] = field(default_factory=list)


class Summarizer(Protocol):
    """What writes a summary. One whose class sets `local = True` sends nothing off the machine; any other (an LLM, a
    library user's own) is taken to send what it reads, and `compact` then checks the names its digests list
    (PruneOptions.check_names)."""

    name: str

    def summarize(self, req: SummaryRequest, counter: Counter) -> SummaryResult: ...


class OfflineSummarizer:
    name = "offline"
    local = True

    def summarize(self, req: SummaryRequest, counter: Counter) -> SummaryResult:
        from . import offline

        return SummaryResult(offline.summarize(req.facts, counter, req.budget, req.focus), "offline")
