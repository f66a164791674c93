"""The offline summarizer: deterministic, no network.

Fills the 13 sections from the facts of the middle, and fits its token budget by priority, not by
cutting the end off: the latest request, the goal and open asks first; then constraints, errors,
files and failed commands; then decisions, answers, identifiers and the state; then the other
actions, newest first. What does not fit is counted in a "(+N more ...)" line. `focus` promotes
every item that mentions the topic to the first tier.

When the transcript already holds a compaction summary, its sections are carried over and updated
(numbering continues) rather than summarized again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..tokens import Counter
from .facts import Facts
from .prompt import SECTIONS, parse_sections

ANCHOR_CAP = 1_500  # tokens of a verbatim request kept in the summary at most


@dataclass
class Item:
    section: str
    text: str
    tier: int
    order: int  # position within its section


def _cap(text: str, counter: Counter, cap: int) -> str:
    if counter.text(text) <= cap:
        return text
    ids = counter.encode(text)[:cap] if not counter.approx else None
    cut = counter._enc.decode(ids) if ids is not None else text[: cap * 4]
    return cut + " …[cut]"


def _prior_items(prior: str) -> tuple[dict[str, list[str]], int]:
    """Items of a previous summary by section, and the last number used in Completed Actions."""
    secs = parse_sections(prior)
    items: dict[str, list[str]] = {}
    last_no = 0
    for name, body in secs.items():
        if name in ("Active Task",) or body.strip() in ("", "None"):
            continue
        lines = [ln for ln in body.split("\n") if ln.strip() and not ln.strip().startswith("(+")]
        items[name] = lines
        if name == "Completed Actions":
            for ln in lines:
                m = re.match(r"\s*(\d+)\.", ln)
                if m:
                    last_no = max(last_no, int(m.group(1)))
    return items, last_no


NAMES_PER_LINE = 12
INDEX_LINE = "- names: "
DOCUMENTS = 3  # the latest outputs that describe work whose names the summary lists
DOCUMENT_NAMES = 120
INDEX_SHARE = 0.3  # of the room left after the ask and goal


_TERSE = [
    (re.compile(r"^\[[^\]]+\] ran `"), "`"),
    (re.compile(r"^\[(?:Read|read_file|view)\] read "), "read "),
    (re.compile(r" lines output\b"), " lines"),
    (re.compile(r" chars output\b"), " chars"),
    (re.compile(r"` -> "), "` "),
]


def _terse(line: str) -> str:
    for rx, rep in _TERSE:
        line = rx.sub(rep, line)
    return line


def common_root(paths: list[str], share: float = 0.5) -> str | None:
    """The deepest directory (3 segments or more) that at least `share` of the absolute paths (and 3
    or more) sit under: the project's root, said once instead of in front of every path."""
    paths = [p for p in paths if p.startswith("/") and p.count("/") >= 4]
    if len(paths) < 3:
        return None
    under: dict[str, int] = {}
    for p in paths:
        parts = p.split("/")
        for k in range(4, len(parts)):
            d = "/".join(parts[:k]) + "/"
            under[d] = under.get(d, 0) + 1
    fits = [d for d, c in under.items() if c >= max(3, share * len(paths))]
    return max(fits, key=len) if fits else None


def summarize(facts: Facts, counter: Counter, budget: int, focus: str | None = None) -> str:
    items: list[Item] = []
    root = common_root(list(facts.files))

    def rel(text: str) -> str:
        return text.replace(root, "") if root else text

    def add(section: str, text: str, tier: int) -> None:
        if text and text.strip():
            items.append(Item(section, text.rstrip(), tier, len(items)))

    prior_items, number = _prior_items(facts.prior_summary) if facts.prior_summary else ({}, 0)

    if facts.last_request:
        add("Active Task", facts.last_request if facts.last_request_verbatim else _cap(facts.last_request, counter, ANCHOR_CAP), 0)
    goal = facts.first_request or facts.last_request
    if prior_items.get("Goal"):
        add("Goal", "\n".join(prior_items["Goal"]), 0)
    elif goal:
        add("Goal", _cap(goal, counter, 600), 0)
    for p in facts.pending:
        if p != facts.last_request:
            add("Pending User Asks", "- " + _cap(p, counter, 400), 1)
    for name in ("Constraints & Preferences",):
        for line in prior_items.get(name, []):
            add(name, line, 1)
    for c in facts.constraints:
        add("Constraints & Preferences", f"- {c}", 1)
    for line in prior_items.get("Critical Context", []):
        add("Critical Context", line, 2)
    if facts.prior_summary and not prior_items:  # another tool's summary: its lines, as room allows
        for line in facts.prior_summary.split("\n"):
            if line.strip() and not line.lstrip().startswith(("This session is being continued", "<")):
                add("Critical Context", "> " + line.strip()[:400], 3)
    for e in facts.errors:
        add("Critical Context", f"- error: {e}", 1)
    for line in prior_items.get("Relevant Files", []):
        add("Relevant Files", line, 2)
    for path, acts in facts.files.items():
        verbs = ", ".join(v for v in ("read", "write", "edit") if v in acts)
        add("Relevant Files", f"- {path} ({verbs.replace('write', 'written').replace('edit', 'edited')})", 1)
    if facts.plan:
        add("In Progress", "Latest plan (verbatim):\n" + "\n".join(facts.plan), 1)
    for line in prior_items.get("Completed Actions", []):
        add("Completed Actions", line, 3)
    # Repeated identical actions (the same command, the same outcome) collapse into their latest one.
    repeats: dict[str, int] = {}
    for a in facts.actions:
        repeats[a.line] = repeats.get(a.line, 0) + 1
    seen: dict[str, int] = {}
    for a in facts.actions:
        number += 1
        seen[a.line] = seen.get(a.line, 0) + 1
        if seen[a.line] < repeats[a.line]:
            continue
        times = f" (x{repeats[a.line]})" if repeats[a.line] > 1 else ""
        first, _, rest = a.line.partition("\n")
        first = _terse(first)
        if not first.startswith("`"):  # commands stay verbatim
            first = rel(first)
        tier = 2 if (a.failed or a.kind in ("write", "edit", "editor") or a.command) else 3
        add("Completed Actions", f"{number}. {first}{times}" + (f"\n{rest}" if rest else ""), tier)
    failed = [a for a in facts.actions if a.failed]
    if failed:
        last = failed[-1]
        add("Blocked", f"- last failure: {last.line.split(chr(10))[0]}", 2)
    for name in ("Key Decisions", "Resolved Questions", "Active State", "In Progress", "Blocked", "Remaining Work", "Pending User Asks"):
        for line in prior_items.get(name, []):
            add(name, line, 3)
    for d in facts.decisions:
        add("Key Decisions", f"- {d}", 2)
    for q, answer in facts.questions:
        if answer:
            add("Resolved Questions", f"- Q: {q} A: {answer}", 2)
    if facts.last_assistant:
        add("Active State", _cap(facts.last_assistant, counter, 600), 2)
    if facts.actions:
        add("In Progress", f"- last action: {facts.actions[-1].line.split(chr(10))[0]}", 2)
    if facts.plan:
        open_items = [ln for ln in facts.plan if ln.startswith("- [") and "completed" not in ln[:16] and "done" not in ln[:10]]
        if open_items:
            add("Remaining Work", "\n".join(open_items), 2)
    if facts.pending:
        add("Remaining Work", "- finish the pending asks above, then the Active Task", 3)
    # Outputs that described work (a ticket, a spec): the agent works through them after reading them.
    written = "\n".join(it.text for it in items if it.tier <= 1)
    for label, doc in facts.documents[-DOCUMENTS:]:
        doc = [n for n in doc if n not in written]
        if doc:
            add("Remaining Work", f"- named by {rel(label)} (a description of work): " + ", ".join(doc[:DOCUMENT_NAMES]), 2)
    if facts.identifiers:
        add("Critical Context", "- identifiers: " + ", ".join(facts.identifiers), 2)
    for note in facts.notices[-5:]:
        add("Critical Context", "- harness note: " + " ".join(note.split())[:300], 3)
    if focus:
        words = [w.lower() for w in re.findall(r"\w+", focus) if len(w) > 2]
        for it in items:
            low = it.text.lower()
            if words and any(w in low for w in words):
                it.tier = 0
            elif it.section == "Completed Actions":
                it.tier = 4
    # The identifier index: the vocabulary of the replaced turns, most used first, in its share of the room.
    # It lists only names the rest of the summary does not show: a first fit tells what that is.
    written = "\n".join(it.text for it in items if it.tier <= 1)
    names = list(dict.fromkeys(rel(n) for n in facts.names if n not in written))
    if root:
        add("Critical Context", f"- project root: {root} (paths in actions and names are relative to it)", 1)
    text = _fit(items + _index_items(names, len(items)), counter, budget)
    shown = "\n".join(ln for ln in text.split("\n") if not ln.startswith(INDEX_LINE))
    names = [n for n in names if n not in shown]
    return _fit(items + _index_items(names, len(items)), counter, budget)


def _index_items(names: list[str], order: int) -> list[Item]:
    return [
        Item("Critical Context", INDEX_LINE + ", ".join(names[k : k + NAMES_PER_LINE]), 5, order + k // NAMES_PER_LINE)
        for k in range(0, len(names), NAMES_PER_LINE)
    ]


def _section_order(it: Item) -> int:
    """Within a section: newest actions first, everything else in order."""
    return -it.order if it.section == "Completed Actions" else it.order


def _fit(items: list[Item], counter: Counter, budget: int) -> str:
    """Choose what fits the budget, then render in order.

    1. Tier 0 (the ask, the goal) is always kept.
    2. Every other section that has content gets an equal share of what is left, filled in its own
       order (so decisions and state are never starved by a long list of actions).
    3. What is still left goes by tier, newest actions first.
    The rendered text (headings, "(+N more ...)" notes included) is then checked exactly, shedding the
    last-chosen items until it fits."""
    used = sum(counter.text(f"## {s}\nNone\n\n") for s in SECTIONS)
    chosen: list[int] = []
    taken: set[int] = set()

    def take(it: Item) -> None:
        nonlocal used
        used += counter.text(it.text) + 1
        chosen.append(it.order)
        taken.add(it.order)

    for it in items:
        if it.tier == 0:
            take(it)
    mandatory = len(chosen)
    # The identifier index first gets its own share: names are what a continuation reuses most, and a
    # name costs a few tokens where an action line costs tens.
    index_room = int(max(budget - used, 0) * INDEX_SHARE)
    spent = 0
    for it in items:
        if it.tier == 5:
            cost = counter.text(it.text) + 1
            if spent + cost > index_room:
                break
            take(it)
            spent += cost
    sections = [s for s in SECTIONS if any(it.section == s and it.tier > 0 for it in items)]
    if sections:
        share = max(budget - used, 0) // len(sections)
        for s in sections:
            spent = 0
            for it in sorted((it for it in items if it.section == s and it.tier > 0 and it.tier < 5), key=_section_order):
                cost = counter.text(it.text) + 1
                if spent + cost <= share and used + cost <= budget:
                    take(it)
                    spent += cost
    for tier in sorted({it.tier for it in items if it.tier > 0}):
        for it in sorted((it for it in items if it.tier == tier and it.order not in taken), key=_section_order):
            if used + counter.text(it.text) + 1 <= budget:
                take(it)
    while True:
        text = _render(items, set(chosen))
        if counter.text(text) <= budget or len(chosen) <= mandatory:
            return text
        chosen.pop()


def _render(items: list[Item], chosen: set[int]) -> str:
    by_section: dict[str, list[str]] = {s: [] for s in SECTIONS}
    dropped: dict[str, int] = {}
    for it in items:
        if it.order in chosen:
            by_section[it.section].append(it.text)
        else:
            dropped[it.section] = dropped.get(it.section, 0) + 1
    out = []
    for s in SECTIONS:
        body = "\n".join(by_section[s]) or "None"
        if dropped.get(s):
            body += f"\n(+{dropped[s]} more omitted to fit the budget)"
        out.append(f"## {s}\n{body}")
    return "\n\n".join(out)
