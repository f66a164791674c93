"""compactctl: compact LLM-agent transcripts to a token budget.

import compactctl
[t] = compactctl.read(["session.jsonl"])
counter = compactctl.make_counter("gpt-4o")
out, report = compactctl.compact(t, counter, compactctl.OfflineSummarizer())
print(compactctl.write(out).decode())
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._version import __version__

# The library's names come from `compactctl.api`, imported at first use (PEP 562), so that the CLI
# (`compactctl --help`, completion) starts without loading the whole library.
_API = [
    "Budget",
    "CompactOptions",
    "Counter",
    "Plan",
    "PruneOptions",
    "RepairOptions",
    "SummarizeOptions",
    "Transcript",
    "Message",
    "annotate",
    "check",
    "compact",
    "make_counter",
    "make_summarizer",
    "plan",
    "prune",
    "read",
    "repair",
    "restore",
    "restore_file",
    "summarize",
    "summarize_report",
    "write",
    # the record API (compactctl/record.py)
    "CompactResult",
    "Compactor",
    "Options",
    "compact_record",
    "from_messages",
    "plan_record",
    "prune_record",
    "repair_record",
    "summarize_record",
    "to_messages",
    "to_record",
    "to_transcript",
]  # kept equal to api.__all__ (tests/test_config.py checks it)
__all__ = [*_API, "OfflineSummarizer", "__version__"]

if TYPE_CHECKING:
    from .api import *  # noqa: F403
    from .summarizers.base import OfflineSummarizer


def __getattr__(name: str):
    if name in _API:
        value = getattr(importlib.import_module(".api", __name__), name)
    elif name == "OfflineSummarizer":
        value = importlib.import_module(".summarizers.base", __name__).OfflineSummarizer
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
