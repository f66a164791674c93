"""The library: every CLI command is a call to a function of the same name here."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from . import formats
from .errors import UsageError
from .model import Message, Transcript
from .originals import restore, restore_file
from .phases.plan import Budget, Plan, annotate, plan
from .phases.prune import PruneOptions, prune
from .phases.repair import RepairOptions, repair
from .phases.rules import check
from .phases.summarize import SummarizeOptions, summarize
from .pipeline import CompactOptions, compact, summarize_report
from .record import (
    Compactor,
    CompactResult,
    Options,
    compact_record,
    from_messages,
    plan_record,
    prune_record,
    repair_record,
    summarize_record,
    to_messages,
    to_record,
    to_transcript,
)
from .summarizers.base import OfflineSummarizer
from .tokens import Counter, make_counter

__all__ = [
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
]


def read(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], **reader_options: Any) -> list[Transcript]:
    """Read transcripts (any known format) from one path or several: files, directories or '-' (stdin). No path
    reads nothing. `reader_options` are formats.Reader's (`on_error="skip"`, `fmt=`, ...); what it says (a record
    skipped, a Claude Code session's abandoned branches) goes to `warnings.warn`, or to `warn=` if given."""
    names = [os.fspath(paths)] if isinstance(paths, (str, os.PathLike)) else [os.fspath(p) for p in paths]
    if not names:
        return []
    reader_options.setdefault("warn", _warn)
    return list(formats.Reader(**reader_options).read(names))


def _warn(msg: str) -> None:
    warnings.warn(msg, stacklevel=2)


def write(t: Transcript, to: str | None = None) -> bytes:
    """A transcript as JSONL bytes, in its own format or `to`."""
    return b"".join(line + b"\n" for line in formats.write(t, to))


def make_summarizer(opts, model: str, warn: Callable[[str], None] | None = None, status: Callable[[str], None] | None = None):
    """The summarizer the options ask for: offline, llm, or auto (the LLM when a key or base URL is set). `opts` is the
    CLI's summary options (compactctl.cli.groups.SummaryOptions: summarizer, llm_model, base_url, api_key, ...). `status`
    takes the line that says which (and what the offline one ignores), `warn` if not given: the CLI says it once
    the input is read, so that an input's error is the first thing said."""
    use_llm = opts.summarizer == "llm" or (opts.summarizer == "auto" and (opts.api_key or opts.base_url))
    say = status or warn
    if not use_llm:
        if say:
            say("summarizer: offline (no LLM configured)" if opts.summarizer == "auto" else "summarizer: offline")
            if getattr(opts, "instructions", None):
                say("--instructions: the offline summarizer cannot follow free-text instructions; they are used only by an LLM")
        return OfflineSummarizer()
    from .summarizers.llm import LLMSummarizer, shown_url

    if not (opts.api_key or opts.base_url):  # the transcript would go to the OpenAI API with no key, to be refused
        raise UsageError("--summarizer llm needs an endpoint: --base-url (or $OPENAI_BASE_URL), or $OPENAI_API_KEY for the OpenAI API")
    s = LLMSummarizer.from_options(opts, model, warn=warn)
    if say:
        say(f"summarizer: llm ({s.model} at {shown_url(s.base_url)})")
    return s
