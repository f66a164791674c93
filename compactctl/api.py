"""The library: every CLI command is a call to a function of the same name here."""

from __future__ import annotations

from collections.abc import Callable

from . import formats
from .errors import DataError
from .formats.openai import message_from_dict
from .jsonl import Output
from .model import Message, Transcript, fingerprint
from .phases.plan import Budget, Plan, annotate, plan
from .phases.prune import PruneOptions, prune
from .phases.repair import check, repair
from .phases.summarize import summarize
from .pipeline import CompactOptions, compact, summarize_report
from .summarizers.base import OfflineSummarizer
from .tokens import Counter, make_counter

__all__ = [
    "Budget", "CompactOptions", "Counter", "Plan", "PruneOptions", "Transcript", "Message", "annotate", "check",
    "compact", "make_counter", "make_summarizer", "plan", "prune", "read", "repair", "restore", "restore_file",
    "summarize", "summarize_report", "write",
]


def read(paths: list[str], **reader_options) -> list[Transcript]:
    """Read transcripts (any known format) from files, directories or '-'."""
    return list(formats.Reader(**reader_options).read(paths))


def write(t: Transcript, to: str | None = None) -> bytes:
    """A transcript as JSONL bytes, in its own format or `to`."""
    return b"".join(line + b"\n" for line in formats.write(t, to))


def make_summarizer(opts, model: str, warn: Callable[[str], None] | None = None):
    """The summarizer the options ask for: offline, llm, or auto (the LLM when a key or base URL is set)."""
    use_llm = opts.summarizer == "llm" or (opts.summarizer == "auto" and (opts.api_key or opts.base_url))
    if not use_llm:
        if warn:
            warn("summarizer: offline (no LLM configured)" if opts.summarizer == "auto" else "summarizer: offline")
            if getattr(opts, "instructions", None):
                warn("--instructions: the offline summarizer cannot follow free-text instructions; they are used only by an LLM")
        return OfflineSummarizer()
    from .summarizers.llm import LLMSummarizer

    s = LLMSummarizer.from_options(opts, model, warn=warn)
    if warn:
        warn(f"summarizer: llm ({s.model} at {s.base_url or 'the OpenAI API'})")
    return s


def restore(compacted: Transcript, entries: list[dict]) -> Transcript:
    """The original transcript from a compacted one and its archive entries (same `seq`)."""
    mapping = next((e for e in entries if e.get("type") == "map"), None)
    if mapping is None:
        return compacted
    n = mapping["messages"]
    native_origins = mapping.get("format", compacted.format) == "openai"
    originals: list[Message | None] = [None] * n
    by_print: dict[str, list[Message]] = {}
    for m in compacted.messages:
        by_print.setdefault(fingerprint(m), []).append(m)
    for orig, out, digest in mapping["kept"]:
        m = compacted.messages[out] if out < len(compacted.messages) else None
        if m is None or fingerprint(m) != digest:  # a writer may order lines as its format does
            m = by_print[digest].pop(0) if by_print.get(digest) else None
        originals[orig] = m
    for e in entries:
        if e.get("type") != "map":
            m = message_from_dict(e["message"], "<archive>", 0, e["index"])
            if not native_origins:
                m.origin = None  # rebuilt by the format's writer from the canonical message
            originals[e["index"]] = m
    missing = [i for i, m in enumerate(originals) if m is None]
    if missing:
        raise DataError(compacted.source, compacted.line, f"archive does not cover messages {missing[:5]}")
    msgs = [m for m in originals if m is not None]
    for i, m in enumerate(msgs):
        m.index = i
    return compacted.evolve(messages=msgs, native=None)


def restore_file(compacted_path: str, archive_path: str, output: str | None) -> None:
    from .archive import records

    by_seq: dict[int, list[dict]] = {}
    for lineno, e in enumerate(records(archive_path), 1):  # JSON lines or an SQLite archive
        if not isinstance(e, dict) or "seq" not in e:
            raise DataError(archive_path, lineno, "not a compactctl archive record")
        by_seq.setdefault(e["seq"], []).append(e)
    with Output(output) as out:
        for seq, t in enumerate(formats.Reader().read([compacted_path])):
            for line in formats.write(restore(t, by_seq.get(seq, []))):
                out.write(line + b"\n")
