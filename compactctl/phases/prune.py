"""Phase 1: shrink old tool output with no LLM.

- dedup: identical tool outputs (at least `min_dedup_chars`): the most recent copy stays, older
  copies become a placeholder followed by that call's own one-liner (the same output can come from
  different commands, and the bare placeholder would lose their exit codes);
- summaries: old tool results (outside the protected recent part, counted in tokens) become one
  line that says what the call did and how it ended (see tools.describe);
- arguments: tool-call arguments over `arg_limit` characters get their long string values cut to
  `arg_keep` characters + "...[truncated]", staying valid JSON;
- images: old image parts become a short text placeholder.
Old outputs are pruned wherever they stand, the first messages included. No message is removed,
the last user message is never touched, tool pairs stay intact.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import orjson

from .. import refs, tools
from ..model import Message, Transcript, is_image_part, last_user_index
from ..pairs import calls_for_results
from ..tokens import Counter
from . import Archived, archive

DUPLICATE = "[Duplicate tool output — same content as a more recent call]"
TRUNCATED = "...[truncated]"
IMAGE_PLACEHOLDER = "[image omitted by compaction]"


@dataclass
class PruneOptions:
    protect_tokens: int = 12_800  # the most recent tokens are left verbatim
    min_dedup_chars: int = 200
    min_summary_chars: int = 200  # shorter outputs are already about one line
    arg_limit: int = 500
    arg_keep: int = 200
    dedup: bool = True
    summaries: bool = True
    args: bool = True
    images: bool = True
    count_tokens: bool = True  # count the tokens each pass saved (exact, costly on large outputs)
    refs: bool = True  # tag each pruned message with the reference of its archived original


@dataclass
class PassStats:
    count: int = 0
    chars: int = 0
    tokens: int = 0


@dataclass
class PruneStats:
    dedup: PassStats = field(default_factory=PassStats)
    summaries: PassStats = field(default_factory=PassStats)
    args: PassStats = field(default_factory=PassStats)
    images: PassStats = field(default_factory=PassStats)
    protected_from: int = 0  # first index of the protected recent part
    archived: list[Archived] = field(default_factory=list, repr=False)

    def as_dict(self) -> dict:
        d = {k: vars(getattr(self, k)).copy() for k in ("dedup", "summaries", "args", "images")}
        d["protected_from"] = self.protected_from
        return d


def protected_start(counts, budget: int) -> int:
    """First index of the recent part whose tokens fit `budget` (at least the last message).
    `counts` may be a list or a function of the index (counted from the end only as far as needed)."""
    n = len(counts) if isinstance(counts, list) else counts.n
    at = counts.__getitem__ if isinstance(counts, list) else counts
    total = 0
    i = n
    while i > 0 and total + at(i - 1) <= budget:
        total += at(i - 1)
        i -= 1
    return min(i, max(n - 1, 0))


def prune(t: Transcript, counter: Counter, opts: PruneOptions | None = None) -> tuple[Transcript, PruneStats]:
    opts = opts or PruneOptions()
    st = PruneStats()
    msgs = list(t.messages)
    n = len(msgs)
    if not n:
        return t, st
    def count_at(i: int) -> int:
        return counter.message(msgs[i])

    count_at.n = n  # type: ignore[attr-defined]
    protect = protected_start(count_at, opts.protect_tokens)
    st.protected_from = protect
    keep_user = last_user_index(msgs)
    call_of = calls_for_results(msgs)
    changed = False

    def replace(i: int, new: Message, stats: PassStats) -> None:
        nonlocal changed
        old = msgs[i]
        archive(t, old, "prune", st.archived)
        if opts.refs and old.untouched:  # the first change of a message carries its original's reference
            new = refs.tag(old, new, refs.ref_of(old))
        before_chars = _chars(old)
        stats.count += 1
        stats.chars += before_chars - _chars(new)
        if opts.count_tokens:
            stats.tokens += counter.message(old) - counter.message(new)
        msgs[i] = new
        changed = True

    # Dedup, newest first: the most recent copy of each output stays.
    if opts.dedup:
        seen: set[bytes] = set()
        for i in range(n - 1, -1, -1):
            m = msgs[i]
            if m.role != "tool" or i == keep_user:
                continue
            text = m.text()
            if len(text) < opts.min_dedup_chars:
                continue
            h = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
            if h in seen:
                call = call_of.get(i)
                line = tools.describe(call, m, error_lines=3) if call is not None else ""
                replace(i, m.evolve(content=_same_shape(m.content, f"{DUPLICATE} {line}".rstrip())), st.dedup)
            else:
                seen.add(h)

    for i in range(protect):
        m = msgs[i]
        if i == keep_user:
            continue
        if opts.summaries and m.role == "tool" and m.untouched:
            text = m.text()
            if len(text) >= opts.min_summary_chars:
                call = call_of.get(i)
                line = tools.describe(call, m, error_lines=3) if call is not None else _generic_line(m)
                if len(line) < len(text):
                    replace(i, m.evolve(content=_same_shape(m.content, line)), st.summaries)
                    m = msgs[i]
        if opts.args and m.role == "assistant" and any(len(c.arguments) > opts.arg_limit for c in m.tool_calls):
            calls = [type(c)(c.id, c.name, truncate_arguments(c.arguments, opts.arg_keep), dict(c.extra))
                     if len(c.arguments) > opts.arg_limit else c for c in m.tool_calls]
            replace(i, m.evolve(tool_calls=calls), st.args)
            m = msgs[i]
        if opts.images and isinstance(m.content, list) and any(is_image_part(p) for p in m.content):
            parts = [{"type": "text", "text": IMAGE_PLACEHOLDER} if is_image_part(p) else p for p in m.content]
            replace(i, m.evolve(content=parts), st.images)
    if not changed:
        return t, st
    return t.evolve(messages=msgs), st


def _chars(m: Message) -> int:
    n = len(m.text()) + sum(len(c.arguments) for c in m.tool_calls)
    if isinstance(m.content, list):
        n += sum(len(orjson.dumps(p)) for p in m.content if is_image_part(p))
    return n


def _same_shape(content: Any, text: str) -> Any:
    """New text in the shape the content had (a string stays a string, parts stay parts)."""
    if isinstance(content, list):
        return [{"type": "text", "text": text}]
    return text


def _generic_line(m: Message) -> str:
    out = tools.outcome(m)
    first = next((ln.strip() for ln in out.text.split("\n") if ln.strip()), "")
    err = f" -> error: {out.error_lines[0][:120]}" if out.failed and out.error_lines else ""
    return f"[tool result{' ' + m.name if m.name else ''}] {out.lines:,} lines, {out.chars:,} chars: {first[:80]}{err}"


def truncate_arguments(arguments: str, keep: int) -> str:
    """Cut long string values, keeping the arguments valid JSON; non-JSON text is cut as text."""
    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return arguments[:keep] + TRUNCATED

    def cut(v: Any) -> Any:
        if isinstance(v, str) and len(v) > keep:
            return v[:keep] + TRUNCATED
        if isinstance(v, list):
            return [cut(x) for x in v]
        if isinstance(v, dict):
            return {k: cut(x) for k, x in v.items()}
        return v

    return orjson.dumps(cut(value)).decode()

