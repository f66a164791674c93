"""The recovery arm of the eval: facts that left the context but come back with one search.

A fact counts as recoverable when one `recall --search` for it (the fact string as the query, top 5)
returns an archived original that contains it (normalized as the eval matches: lower case, ANSI
escapes removed, whitespace folded).
"""

from __future__ import annotations

from collections.abc import Callable

from .evaluate import haystack, norm
from .model import Transcript
from .search import Index

TOP = 5


def recoverable(
    facts: list[str],
    index: Index,
    transcript: str | None = None,
    top: int = TOP,
    holds: Callable[[str, str], bool] | None = None,
) -> set[str]:
    """The facts found by one search each (top `top`) in the archive (optionally one transcript's part). A hit
    holds a fact when `holds(fact, text)` says so; by default when its normalized text contains the fact's."""
    out: set[str] = set()
    for fact in facts:
        needle = norm(fact)
        if not needle:
            continue
        found = (holds(fact, h.text) if holds is not None else needle in norm(h.text) for h in index.search(fact, top, transcript))
        if any(found):
            out.add(fact)
    return out


def recovery(original: Transcript, compacted: Transcript, index: Index, facts: list[str], top: int = TOP) -> dict:
    """For facts of `original`: which the compacted context holds, which one search gets back, which are lost."""
    hay = haystack(compacted)
    in_context = {f for f in facts if norm(f) in hay}
    back = recoverable([f for f in facts if f not in in_context], index, original.id, top)
    lost = [f for f in facts if f not in in_context and f not in back]
    n = len(facts) or 1
    return {
        "facts": len(facts),
        "in_context": len(in_context),
        "recoverable": len(back),
        "lost": lost,
        "in_context_share": len(in_context) / n,
        "with_recovery_share": (len(in_context) + len(back)) / n,
    }
