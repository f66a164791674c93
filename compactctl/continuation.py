"""Continuation scoring: does a compaction keep what the agent needs next?

The harness of `compactctl eval` (continuation mode); the facts come from `compactctl.needed`, an
extractor that shares no code with the compaction it judges.

Protocol, per transcript and per cut fraction f (default 0.4, 0.6, 0.8):
1. cut at the message nearest to f x messages that starts a turn (a user or assistant message that
   is not inside a tool-call group: a call is never separated from its results);
   prefix = messages before the cut, continuation = the rest;
2. needed facts = paths, identifiers, commands, URLs and values of the prefix's removable region
   (everything but its leading system messages) that the continuation *writes* again (user text,
   assistant text, tool-call arguments; not tool outputs), minus those a system message holds;
3. each strategy compacts the prefix; a fact is kept when it occurs in the compacted prefix.
   - ``compactctl``: `pipeline.compact` with the offline summarizer (or the one given) and a context
     window of ``window_ratio`` x the prefix's tokens (default 0.4: with the default threshold 0.5 the
     target is 20% of the prefix); a prefix that cannot fit is scored as what ``--on-error skip``
     writes (the pruned, repaired fallback) and counted in ``cannot_fit``;
   - baselines get the same output tokens as compactctl's output for that cut (never more):
     ``head-tail`` (system + the first 3 messages + the last whole groups that fit, every tool output
     cut to 500 characters: the naive baseline), ``head-tail-fill`` (system + the first messages for a
     quarter of the budget + the last ones for the rest, the group at each boundary with its texts cut to
     fit: a head and tail that fill the budget), ``recent`` (system + the first user ask + the most recent whole groups
     that fit), ``masking`` (tool outputs replaced by a placeholder from the oldest on until the budget
     is met; then the oldest groups are dropped). All are repaired (`phases.repair`) and checked.
4. scores: kept / needed, over all cuts of a group (facts pooled), by kind, by source (written by the
   person or the agent in the prefix / only in tool outputs / only in harness-injected text), and on
   the facts the continuation does not re-discover (a fact shown by a continuation tool output before
   its first written use is "re-discovered": the agent could have done without it).

Library use::

    from compactctl import continuation
    res = continuation.evaluate_files(["a.jsonl", "b.jsonl"],
                                      strategies=("compactctl", "head-tail", "head-tail-fill", "recent", "masking"),
                                      cuts=(0.4, 0.6, 0.8), window_ratio=0.4)
    res["aggregate"]["compactctl"]["kept"]           # share of needed facts kept, all cuts pooled
    print(continuation.tables(res["aggregate"]))     # the markdown tables `compactctl eval` prints

``evaluate(transcripts, ...)`` does the same on `Transcript` objects; ``options`` (a `CompactOptions`,
its budget's context window replaced per cut) and ``summarizer`` let you score other settings.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from . import lexical, needed, refs
from .baselines import head_tail, head_tail_fill, masking, recent, tokens_of
from .errors import CannotFit
from .markers import DOC_NAMES_LINE, EXCERPT_LINE, NAMES_LINE, OUTLINE_LINE, QUOTE_HEAD, QUOTE_INDENT, QUOTED_LINE
from .model import SUMMARY_MARKER, SYSTEM_ROLES, Message, Transcript
from .pairs import groups
from .phases.rules import check
from .pipeline import CompactOptions, compact
from .summarizers.fit import INDEX_LINE
from .tokens import Counter, make_counter

STRATEGIES = ("compactctl", "head-tail", "head-tail-fill", "recent", "masking")
CUTS = (0.4, 0.6, 0.8)
SOURCE_LABELS = {"written": "written by person/agent", "output": "only in tool outputs", "injected": "only in harness text"}


# ---- cuts


def cut_points(msgs: list[Message], fractions: Sequence[float]) -> list[tuple[float, int]]:
    """(fraction, index) for each fraction: the nearest turn start to fraction x len(msgs).

    A fraction whose nearest start an earlier fraction already took is left out: the same cut scored twice
    would count its facts twice in every pooled figure (a short transcript has few turn starts)."""
    n = len(msgs)
    first = next((i for i, m in enumerate(msgs) if m.role not in SYSTEM_ROLES), n)
    starts = [s for s, _ in groups(msgs) if first < s < n and msgs[s].role in ("user", "assistant")]
    out: list[tuple[float, int]] = []
    for f in fractions:
        if not starts:
            continue
        want = f * n
        best = min(starts, key=lambda s: (abs(s - want), s))
        if all(best != taken for _, taken in out):
            out.append((f, best))
    return out


# ---- one transcript


def prefix_of(t: Transcript, cut: int) -> Transcript:
    """The messages before the cut, as a transcript of their own."""
    return t.evolve(messages=t.messages[:cut], native=None)


def run_compactctl(
    prefix: Transcript, counter: Counter, window: int, summarizer=None, options: CompactOptions | None = None, archived: list | None = None
) -> tuple[Transcript, str | None]:
    """compactctl's output for a prefix and the error when it could not fit (scored as its fallback);
    the originals it removed are appended to `archived` when given."""
    from .summarizers.base import OfflineSummarizer

    opts = dataclasses.replace(options) if options is not None else CompactOptions()
    opts.budget = dataclasses.replace(opts.budget, context_window=max(window, 1))
    try:
        out, rep = compact(prefix, counter, summarizer or OfflineSummarizer(), opts)
        if archived is not None:
            archived += rep.archived
        return out, None
    except CannotFit as e:
        if archived is not None and e.fallback is not None:
            archived += e.fallback[1]
        return (e.fallback[0] if e.fallback is not None else prefix), str(e)


def recovered(prefix: Transcript, facts: list, kept: list[bool], archived: list) -> list[bool]:
    """The recovery arm: for each fact compactctl did not keep, whether one `recall --search` for it (top 5)
    in the archive of what it removed brings back an original that holds it, matched as `kept` matches (case and
    boundaries: a search hit that holds `a.html` does not bring back `a`)."""
    import tempfile

    from .archive import SqliteSink
    from .recovery import recoverable
    from .search import Index

    lost = [f.key for f, k in zip(facts, kept, strict=True) if not k]
    kinds: dict[str, set[str]] = {}
    for f, k in zip(facts, kept, strict=True):
        if not k:
            kinds.setdefault(f.key, set()).add(f.kind)
    if not lost or not archived:
        return [False] * len(facts)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "archive.sqlite")
        sink = SqliteSink(path)
        for a in archived:
            sink.add({"seq": 0, **a.record()})
        sink.close(True)
        with Index.open(path) as ix:
            back = recoverable(lost, ix, holds=lambda key, text: _holds(kinds[key], key, text))
    return [(not k) and f.key in back for f, k in zip(facts, kept, strict=True)]


def _holds(kinds: set[str], key: str, text: str) -> bool:
    hay = needed.fold(needed.decode_json_text(text))
    return any(needed.occurs(kind, key, hay) for kind in kinds)


def score_cut(
    t: Transcript,
    frac: float,
    cut: int,
    counter: Counter,
    strategies: Sequence[str],
    window_ratio: float,
    summarizer=None,
    options: CompactOptions | None = None,
) -> dict:
    """One cut of one transcript: needed facts and, per strategy, which it kept."""
    prefix = prefix_of(t, cut)
    before = tokens_of(counter, prefix.messages)
    facts = needed.needed_facts(t.messages, cut)
    words = lexical.needed_words(t.messages, cut)
    window = int(before * window_ratio)
    archived: list = []
    ours, err = run_compactctl(prefix, counter, window, summarizer, options, archived)
    budget = tokens_of(counter, ours.messages)
    makers: dict[str, Callable[[], Transcript]] = {
        "compactctl": lambda: ours,
        "head-tail": lambda: head_tail(prefix, counter, budget),
        "head-tail-fill": lambda: head_tail_fill(prefix, counter, budget),
        "recent": lambda: recent(prefix, counter, budget),
        "masking": lambda: masking(prefix, counter, budget),
    }
    row: dict[str, Any] = {
        "transcript": t.id,
        "cut": frac,
        "cut_index": cut,
        "messages": len(t.messages),
        "tokens_before": before,
        "window": window,
        "target": int(max(window, 1) * (options or CompactOptions()).budget.threshold),
        "facts": [f.as_dict() for f in facts],
        "words": len(words),
        "strategies": {},
    }
    scores: dict[str, dict] = row["strategies"]
    for name in strategies:
        out = makers[name]()
        flags = needed.kept_facts(facts, out.messages)
        scores[name] = {
            "tokens_after": tokens_of(counter, out.messages),
            "valid": not check(out),
            "cannot_fit": bool(err) if name == "compactctl" else False,
            "error": err if name == "compactctl" else None,
            "kept": flags,
            "in_context": needed.context_facts(facts, prefix.messages, out.messages, flags),
            "words_kept": lexical.kept_words(words, out.messages),
        }
        if name == "compactctl":
            scores[name]["recovered"] = recovered(prefix, facts, flags, archived)
            ctx = scores[name]["in_context"]
            scores[name]["forms"] = {str(j): output_form(f, out.messages) for j, f in enumerate(facts) if flags[j] and not ctx[j]}
    return row


def evaluate(
    transcripts: Iterable[Transcript],
    counter: Counter | None = None,
    strategies: Sequence[str] = STRATEGIES,
    cuts: Sequence[float] = CUTS,
    window_ratio: float = 0.4,
    summarizer=None,
    options: CompactOptions | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """{"rows": one per (transcript, cut), "aggregate": per strategy} (see `aggregate`)."""
    counter = counter or make_counter("gpt-4o")
    for s in strategies:
        if s not in STRATEGIES:
            raise ValueError(f"unknown strategy {s!r} (known: {', '.join(STRATEGIES)})")
    rows = []
    for t in transcripts:
        for frac, cut in cut_points(t.messages, cuts):
            rows.append(score_cut(t, frac, cut, counter, strategies, window_ratio, summarizer, options))
            if progress:
                progress(f"{t.id} cut {frac:.0%} (message {cut} of {len(t.messages)}): {len(rows[-1]['facts'])} needed facts")
    return {
        "rows": rows,
        "aggregate": aggregate(rows, strategies),
        "settings": {"cuts": list(cuts), "window_ratio": window_ratio, "strategies": list(strategies)},
    }


def evaluate_files(
    paths: Sequence[str],
    strategies: Sequence[str] = STRATEGIES,
    cuts: Sequence[float] = CUTS,
    window_ratio: float = 0.4,
    counter: Counter | None = None,
    summarizer=None,
    options: CompactOptions | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """`evaluate` on the transcripts read from files (any known format)."""
    from . import formats

    ts = list(formats.Reader().read([str(p) for p in paths]))
    return evaluate(ts, counter, strategies, cuts, window_ratio, summarizer, options, progress)


# ---- aggregates and tables


def _share(k: int, n: int) -> float | None:
    return k / n if n else None


def aggregate(rows: list[dict], strategies: Sequence[str]) -> dict[str, dict]:
    out = {}
    for name in strategies:
        tot = [0, 0]
        fresh = [0, 0]
        kinds = {k: [0, 0] for k in needed.KINDS}
        sources = {s: [0, 0] for s in needed.SOURCES}
        before = after = valid = cannot = cuts = within = 0
        words = [0, 0]
        ctx = 0
        rediscovered = 0
        back = 0
        for r in rows:
            st = r["strategies"].get(name)
            if st is None:
                continue
            cuts += 1
            before += r["tokens_before"]
            after += st["tokens_after"]
            valid += st["valid"]
            cannot += st["cannot_fit"]
            within += st["tokens_after"] <= r.get("target", st["tokens_after"])
            back += sum(st.get("recovered", ()))
            words[0] += st.get("words_kept", 0)
            words[1] += r.get("words", 0)
            ctx += sum(st.get("in_context", ()))
            for f, k in zip(r["facts"], st["kept"], strict=True):
                tot[0] += k
                tot[1] += 1
                kinds[f["kind"]][0] += k
                kinds[f["kind"]][1] += 1
                sources[f["source"]][0] += k
                sources[f["source"]][1] += 1
                if f["rediscovered"]:
                    rediscovered += 1
                else:
                    fresh[0] += k
                    fresh[1] += 1
        out[name] = {
            "cuts": cuts,
            "needed": tot[1],
            "kept_facts": tot[0],
            "kept": _share(*tot),
            "in_context": _share(ctx, tot[1]),
            "not_rediscovered": fresh[1],
            "kept_not_rediscovered": _share(*fresh),
            "rediscovered": rediscovered,
            "tokens_before": before,
            "tokens_after": after,
            "reduction": 1 - after / before if before else 0.0,
            "valid": valid,
            "cannot_fit": cannot,
            "within_target": within,
            "recovered": back,
            "with_recovery": _share(tot[0] + back, tot[1]),
            "words": {"kept": words[0], "needed": words[1], "share": _share(*words)},
            "kinds": {k: {"kept": v[0], "needed": v[1], "share": _share(*v)} for k, v in kinds.items()},
            "sources": {s: {"kept": v[0], "needed": v[1], "share": _share(*v)} for s, v in sources.items()},
        }
    return out


def pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def md_table(header: list[str], rows: list[list[str]]) -> str:
    """A markdown table whose every row has as many cells as the header."""
    for r in rows:
        if len(r) != len(header):
            raise ValueError(f"row has {len(r)} cells, header {len(header)}")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def tables(agg: dict[str, dict]) -> str:
    """Overall, per kind, per source: three markdown tables."""
    if not agg:
        return "(no cut)"
    any_ = next(iter(agg.values()))
    overall = md_table(
        [
            "strategy",
            "cuts",
            "needed facts",
            "kept",
            "kept in context",
            "kept, not re-discovered",
            "tokens before",
            "tokens after",
            "reduction",
            "at or under target",
            "valid",
            "cannot fit",
        ],
        [
            [
                n,
                str(a["cuts"]),
                f"{a['needed']:,}",
                pct(a["kept"]),
                pct(a.get("in_context")),
                pct(a["kept_not_rediscovered"]),
                f"{a['tokens_before']:,}",
                f"{a['tokens_after']:,}",
                pct(a["reduction"]),
                f"{a['within_target']}/{a['cuts']}",
                f"{a['valid']}/{a['cuts']}",
                str(a["cannot_fit"]),
            ]
            for n, a in agg.items()
        ],
    )
    kinds = md_table(
        ["strategy"] + [f"{k} ({any_['kinds'][k]['needed']})" for k in needed.KINDS],
        [[n] + [pct(a["kinds"][k]["share"]) for k in needed.KINDS] for n, a in agg.items()],
    )
    sources = md_table(
        ["strategy"] + [f"{SOURCE_LABELS[s]} ({any_['sources'][s]['needed']})" for s in needed.SOURCES],
        [[n] + [pct(a["sources"][s]["share"]) for s in needed.SOURCES] for n, a in agg.items()],
    )
    ours = agg.get("compactctl")
    recovery = (
        (
            f"Recovery arm: of the needed facts compactctl did not keep, {ours['recovered']:,} come back with one "
            f"`compactctl recall --search` for the fact (top 5) in the archive of what it removed: kept or recoverable "
            f"{pct(ours['with_recovery'])}."
        )
        if ours
        else ""
    )
    lexical_line = (
        f"Words the continuation writes again ({any_['words']['needed']:,}; no fact kinds, compactctl/lexical.py): "
        + ", ".join(f"{n} {pct(a['words']['share'])}" for n, a in agg.items())
        + "."
    )
    red = any_["rediscovered"]
    note = (
        f"{any_['needed']:,} needed facts in {any_['cuts']} cuts; {red:,} ({pct(_share(red, any_['needed']))}) are re-discovered "
        f"by the continuation (shown by a tool output before the agent writes them)."
    )
    return "\n\n".join(
        [
            x
            for x in (
                overall,
                recovery,
                lexical_line,
                "By kind (needed facts in parentheses):",
                kinds,
                "By source in the prefix:",
                sources,
                note,
            )
            if x
        ]
    )


def cut_lines(rows: list[dict]) -> list[str]:
    """One line per cut: needed facts, and per strategy the share kept and its tokens."""
    out = []
    for r in rows:
        n = len(r["facts"])
        parts = []
        for name, st in r["strategies"].items():
            k = sum(st["kept"])
            parts.append(
                f"{name} {pct(_share(k, n))} ({st['tokens_after']:,} tok{', cannot fit' if st['cannot_fit'] else ''}"
                f"{', INVALID' if not st['valid'] else ''})"
            )
        out.append(
            f"{r['transcript']} cut {r['cut']:.0%} (#{r['cut_index']} of {r['messages']}, {r['tokens_before']:,} tok): "
            f"{n} needed; " + "; ".join(parts)
        )
    return out


def per_transcript(rows: list[dict], strategies: Sequence[str]) -> str:
    """A markdown table: per transcript (all its cuts), the share each strategy kept."""
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["transcript"], []).append(r)
    body = []
    for tid, rs in by.items():
        n = sum(len(r["facts"]) for r in rs)
        cells = [pct(_share(sum(sum(r["strategies"][s]["kept"]) for r in rs), n)) for s in strategies]
        cf = sum(r["strategies"]["compactctl"]["cannot_fit"] for r in rs) if "compactctl" in strategies else 0
        body.append([tid.rsplit("/", 1)[-1], str(len(rs)), str(n), *cells, str(cf)])
    return md_table(["transcript", "cuts", "needed", *strategies, "cannot fit"], body)


# ---- explaining what a strategy lost


def output_form(f: needed.Fact, messages: Sequence[Message]) -> str:
    """Where and in what form a fact stands in a compacted transcript (its first occurrence): the output message's
    index and role, what compaction made of that place (a summary's section, a digest's names, outline, quoted line or
    excerpt, a digest's own line, a cut argument's names or kept part, or the message as it was) and the line
    around it."""
    for i, m in enumerate(messages):
        places = [("", m.text())] + [(f"call {c.name} ", needed.decode_json_text(c.arguments)) for c in m.tool_calls]
        for label, text in places:
            lines = text.split("\n")
            for j, line in enumerate(lines):
                folded = needed.fold(line)
                if needed.occurs(f.kind, f.key, folded):
                    form = _form(f, m, label, lines, j, text)
                    return f"#{i} {m.role} {label}{form}: {needed.snippet(f.kind, f.key, folded, 40)!r}"
    return "across lines"


_DIGEST_LINES = {
    NAMES_LINE: "digest names",
    DOC_NAMES_LINE: "digest names (task document)",
    OUTLINE_LINE: "digest outline",
    QUOTED_LINE: "digest quoted line",
    EXCERPT_LINE: "digest excerpt",
}


def _form(f: needed.Fact, m: Message, label: str, lines: list[str], j: int, text: str) -> str:
    """What compaction made of line j of a message's text (or of a call's arguments when `label` names one), where
    fact `f` stands."""
    line = lines[j]
    if SUMMARY_MARKER in text:
        heading = next((x.strip() for x in reversed(lines[:j]) if x.startswith("#")), "")
        what = " index" if line.startswith(INDEX_LINE) else " quoted line" if line.startswith(QUOTE_INDENT) and QUOTE_HEAD in text else ""
        return f"summary{what} [{heading[:60]}]"
    if label:
        at = line.find(refs.TRUNCATED)
        if at >= 0 and needed.occurs(f.kind, f.key, needed.fold(line[at:])):
            return "cut argument, names"
        return "cut argument, kept part" if refs.TRUNCATED in text else "argument"
    for mark, form in _DIGEST_LINES.items():
        if line.startswith(mark):
            return form
    if any(x.startswith(EXCERPT_LINE) for x in lines[:j]):
        return "digest excerpt"
    if m.untouched:
        return "as it was"
    if refs.REF_RE.search(text):
        return "digest line" if j == 0 else "reduced message"
    return "changed message"


def explain(rows: list[dict], n: int, strategy: str = "compactctl", what: str = "lost", versus: str | None = None) -> list[str]:
    """Up to n facts `strategy` lost (`what` "lost"), or kept but not in context ("context": its output shows the fact
    without a neighbour it had in the prefix), with where they sat in the prefix and where the continuation used them
    (taken in turn from each cut, so a few cuts do not fill the list). "context" also says in what form the output
    shows it (`output_form`, compactctl's only); `versus`: how another strategy of the rows did on the same fact
    (in context, kept, lost)."""
    if what not in ("lost", "context"):
        raise ValueError(f"what: 'lost' or 'context', not {what!r}")
    per_cut = []
    for r in rows:
        st = r["strategies"].get(strategy)
        if st is not None:
            ctx = st.get("in_context") or [False] * len(st["kept"])
            per_cut.append(
                [(r, j) for j, (k, c) in enumerate(zip(st["kept"], ctx, strict=True)) if (not k if what == "lost" else k and not c)]
            )
    out: list[str] = []
    depth = 0
    while len(out) < n and any(depth < len(c) for c in per_cut):
        for c in per_cut:
            if depth < len(c) and len(out) < n:
                out.append(_explained(*c[depth], strategy, what, versus))
        depth += 1
    return out


def _explained(r: dict, j: int, strategy: str, what: str, versus: str | None) -> str:
    f = r["facts"][j]
    where = ", ".join(f"#{i} {role} ({src})" for i, role, src in f["where"][:3])
    line = (
        f"{r['transcript']} cut {r['cut']:.0%} (#{r['cut_index']}): {f['kind']} {f['key']!r} [{f['source']}] "
        f"in {where}: {f.get('seen', '')!r}; used at #{f['used_at']}"
        f"{' (re-discovered first)' if f['rediscovered'] else ''}: {f.get('used', '')!r}"
    )
    if what == "context":
        line += f"; kept as {r['strategies'][strategy].get('forms', {}).get(str(j), '?')}"
    other = r["strategies"].get(versus) if versus else None
    if other is not None:
        state = "in context" if (other.get("in_context") or [False] * (j + 1))[j] else "kept" if other["kept"][j] else "lost"
        line += f"; {versus}: {state}"
    return line
