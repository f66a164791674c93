"""The offline summarizer behind the common interface."""

from __future__ import annotations

from ..phases.summarize import SummaryRequest, SummaryResult
from ..tokens import Counter
from . import offline


class OfflineSummarizer:
    name = "offline"

    def summarize(self, req: SummaryRequest, counter: Counter) -> SummaryResult:
        return SummaryResult(offline.summarize(req.facts, counter, req.budget, req.focus), "offline")
