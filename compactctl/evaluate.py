"""`compactctl eval`: what a compaction keeps, measured against baselines.

Probes are extracted deterministically from the messages a strategy did not keep verbatim (what it
removed or summarized), in six categories: files (paths read, written or edited), commands (with
their exit codes), errors (the first three error lines of each failed output), constraints (user
sentences with must / don't / never / only ...), the last ask (the latest user message), and
identifiers (hashes, URLs, ports, versions, ids written by the user or the agent, in commands or in
error lines).

Matching is normalized: lower case, ANSI escapes removed, whitespace folded, then a substring test
against all the text of the compacted transcript (contents, tool-call names and arguments). A
command counts when its text (first 100 characters) is found and, when its exit code is known, an
exit status with that code follows within 2,000 characters. Scores are per category and overall
(found / total), with token reduction and validity (`repair --check`).

Baselines, at compactctl's target (the continuation eval's: `baselines.head_tail`, `baselines.masking`):
- head-tail: the system message(s) and first 3 messages (whole groups) + the last whole groups that fit, every
  tool output cut to 500 characters (the naive `messages[:N] + messages[-M:]`), then repaired;
- masking: tool outputs replaced by a placeholder from the oldest on until the target is met, then the oldest
  groups dropped; repaired.
An observation (Message.observation: SWE-agent's output of a text action, in a user turn) counts as a tool
output throughout: its error lines are probes, its sentences are not the user's constraints.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from . import baselines, outputs, tools
from .harness import is_boilerplate
from .model import Message, ToolCall, Transcript, fingerprint, is_output, is_summary, last_user_index
from .phases.plan import Budget
from .phases.rules import check
from .pipeline import CompactOptions, compact
from .summarizers.constraints import constraint_sentences
from .summarizers.facts import identifiers_in
from .tokens import Counter

CATEGORIES = ("files", "commands", "errors", "constraints", "last_ask", "identifiers")
_WS = re.compile(r"\s+")
_EXIT = r"exit(?:ed)?(?: with)?[ _]?(?:code|status)?[\"']?\s*[:=]?\s*{code}\b"


def norm(s: str) -> str:
    return _WS.sub(" ", outputs.ANSI.sub("", s)).strip().lower()


@dataclass(frozen=True)
class Probe:
    """A fact the probe eval looks for in a compacted transcript."""

    category: str
    text: str
    exit_code: int | None = None


def probes(t: Transcript, removed: set[int]) -> list[Probe]:
    """The probes of the messages at `removed` indices (plus the last ask, always)."""
    msgs = t.messages
    from .pairs import calls_for_results

    call_of = calls_for_results(msgs)
    result_of = {id(c): msgs[i] for i, c in call_of.items()}
    out: dict[Probe, None] = {}
    for i in sorted(removed):
        m = msgs[i]
        if is_summary(m):
            continue
        if m.role == "user" and not m.observation:  # an observation is output (SWE-agent), below
            # Claude Code's caveat before local-command output is how to read other messages, not the person's rule
            rules = [] if is_boilerplate(m.text()) else constraint_sentences(m.text())
            found = [Probe("constraints", s) for s in rules] + _identifiers(m.text())
        elif m.role == "assistant":
            found = _identifiers(m.text()) + [p for c in m.tool_calls for p in _call_probes(c, result_of.get(id(c)))]
        elif is_output(m):
            o = outputs.outcome(m)
            found = [p for e in o.error_lines[:3] for p in [Probe("errors", e[:200]), *_identifiers(e)]] if o.failed else []
        else:
            found = []
        out.update((p, None) for p in found if p.text.strip())
    lu = last_user_index(msgs)
    if lu is not None and msgs[lu].text().strip():
        out.setdefault(Probe("last_ask", msgs[lu].text()))
    return list(out)


def _identifiers(text: str) -> list[Probe]:
    return [Probe("identifiers", ident) for ident in identifiers_in(text)]


def _call_probes(c: ToolCall, result: Message | None) -> list[Probe]:
    """A call's files, and its command with the exit code its result shows."""
    found = [Probe("files", path) for _, path in tools.files_of(c)]
    cmd = tools.command_of(c)
    if cmd:
        code = outputs.outcome(result).exit_code if result is not None else None
        found += [Probe("commands", cmd[:100], code), *_identifiers(cmd)]
    return found


def haystack(t: Transcript) -> str:
    parts = []
    for m in t.messages:
        parts.append(m.text())
        parts += [f"{c.name} {c.arguments}" for c in m.tool_calls]
    return norm("\n".join(parts))


def found(p: Probe, hay: str) -> bool:
    needle = norm(p.text)
    if p.category != "commands":
        return needle in hay
    start = hay.find(needle)
    if start < 0:
        return False
    if p.exit_code is None:
        return True
    rx = re.compile(_EXIT.format(code=p.exit_code))
    while start >= 0:
        if rx.search(hay, start, start + len(needle) + 2000):
            return True
        start = hay.find(needle, start + 1)
    return False


def removed_indices(original: Transcript, compacted: Transcript) -> set[int]:
    kept: dict[str, int] = {}
    for m in compacted.messages:
        kept[fingerprint(m)] = kept.get(fingerprint(m), 0) + 1
    out = set()
    for i, m in enumerate(original.messages):
        f = fingerprint(m)
        if kept.get(f):
            kept[f] -= 1
        else:
            out.add(i)
    return out


def score(original: Transcript, compacted: Transcript, counter: Counter) -> dict:
    ps = probes(original, removed_indices(original, compacted))
    hay = haystack(compacted)
    cats = {c: [0, 0] for c in CATEGORIES}
    for p in ps:
        cats[p.category][1] += 1
        cats[p.category][0] += found(p, hay)
    before = sum(counter.messages(original.messages))
    after = sum(counter.messages(compacted.messages))
    total_found = sum(v[0] for v in cats.values())
    total = sum(v[1] for v in cats.values())
    return {
        "transcript": original.id,
        "tokens_before": before,
        "tokens_after": after,
        "reduction": 1 - after / before if before else 0.0,
        "valid": not check(compacted),
        "retention": total_found / total if total else 1.0,
        "probes": total,
        "categories": {c: {"found": v[0], "total": v[1]} for c, v in cats.items()},
    }


# ---- strategies

PROBE_STRATEGIES = ("compactctl", "compactctl-llm", "head-tail", "masking")  # the names `strategies` can give


def strategies(
    counter: Counter,
    ratio: float,
    summarizer_factory: Callable | None = None,
    last_ask: str = "tail",
    summary_min: int = 2000,
    summary_max: int = 8000,
    summary_ratio: float = 0.2,
) -> dict[str, Callable[[Transcript], Transcript]]:
    """name -> function, all aimed at `ratio` of each transcript's tokens."""

    def budget_for(t: Transcript) -> int:
        return max(int(sum(counter.messages(t.messages)) * ratio), 1)

    def ours(summarizer) -> Callable[[Transcript], Transcript]:
        def run(t: Transcript) -> Transcript:
            target = budget_for(t)
            b = Budget(
                context_window=target * 2,
                threshold=0.5,
                summary_min=min(summary_min, target // 3),
                summary_max=summary_max,
                summary_ratio=summary_ratio,
                last_ask=last_ask,
            )
            out, _ = compact(t, counter, summarizer, CompactOptions(b, min_saving=0.0))
            return out

        return run

    from .summarizers.base import OfflineSummarizer

    out = {"compactctl": ours(OfflineSummarizer())}
    if summarizer_factory is not None:
        out["compactctl-llm"] = ours(summarizer_factory())
    # The continuation eval's baselines (one implementation of each), at compactctl's target; head-tail keeps its
    # first message over it, as compactctl keeps its head when it cannot fit (`--on-error skip`).
    out["head-tail"] = lambda t: baselines.head_tail(t, counter, budget_for(t), strict=False)
    out["masking"] = lambda t: baselines.masking(t, counter, budget_for(t))
    return out


def run(
    transcripts, counter: Counter, strats: dict[str, Callable[[Transcript], Transcript]], compacted: dict[int, Transcript] | None = None
) -> tuple[dict[str, list[dict]], dict[str, dict]]:
    """Per-transcript rows and aggregates for each strategy (or for given compacted transcripts)."""
    from .errors import CannotFit

    rows: dict[str, list[dict]] = {name: [] for name in strats}
    if compacted is not None:
        rows = {"given": []}
    for k, t in enumerate(transcripts):
        if compacted is not None:
            rows["given"].append(score(t, compacted[k], counter))
            continue
        for name, fn in strats.items():
            try:
                r = score(t, fn(t), counter)
            except CannotFit as e:  # what the user gets with --on-error skip: pruned and repaired (or as read)
                r = {**score(t, e.fallback[0] if e.fallback is not None else t, counter), "error": str(e)}
            r["strategy"] = name
            rows[name].append(r)
    return rows, {name: aggregate(rs) for name, rs in rows.items() if rs}


def aggregate(rows: list[dict]) -> dict:
    cats = {c: [0, 0] for c in CATEGORIES}
    for r in rows:
        for c, v in r["categories"].items():
            cats[c][0] += v["found"]
            cats[c][1] += v["total"]
    before = sum(r["tokens_before"] for r in rows)
    after = sum(r["tokens_after"] for r in rows)
    f = sum(v[0] for v in cats.values())
    n = sum(v[1] for v in cats.values())
    return {
        "transcripts": len(rows),
        "tokens_before": before,
        "tokens_after": after,
        "reduction": 1 - after / before if before else 0.0,
        "retention": f / n if n else 1.0,
        "probes": n,
        "valid": sum(1 for r in rows if r["valid"]),
        "failed": sum(1 for r in rows if r.get("error")),
        "categories": {c: (v[0] / v[1] if v[1] else None) for c, v in cats.items()},
    }


def table(results: dict[str, dict]) -> str:
    """Markdown table: one row per strategy (aggregate)."""
    head = (
        "| strategy | transcripts | retention | "
        + " | ".join(CATEGORIES)
        + " | tokens before | tokens after | reduction | valid | cannot fit |"
    )
    sep = "|" + "---|" * (head.count("|") - 1)
    lines = [head, sep]
    for name, a in results.items():
        cats = " | ".join("-" if a["categories"][c] is None else f"{a['categories'][c]:.1%}" for c in CATEGORIES)
        lines.append(
            f"| {name} | {a['transcripts']} | {a['retention']:.1%} | {cats} | {a['tokens_before']:,} | {a['tokens_after']:,} | "
            f"{a['reduction']:.1%} | {a['valid']}/{a['transcripts']} | {a['failed']} |"
        )
    return "\n".join(lines)
