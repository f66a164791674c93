"""What is done to an LLM's answer before it is a summary: the retention guard and the budget.

Sections the answer left out come from the offline summary; the key facts it dropped (files, error lines,
constraints, the last ask) are put back in their sections; the identifier index takes the room left, after the
lines quoted from the replaced turns that show its names (as the offline summary quotes them); an answer
over the budget loses the oldest lines of its longest sections first (never the Active Task or the constraints),
each such section saying how many it lost. Pure functions over text: no network.
"""

from __future__ import annotations

import heapq
import re
from typing import TYPE_CHECKING

from ..redact import redact
from ..tokens import Counter
from .prompt import SECTIONS, parse_sections, render

if TYPE_CHECKING:
    from .base import SummaryRequest
    from .facts import Facts


def key_facts(facts: Facts) -> dict[str, list[str]]:
    """What the retention guard checks for, by the section it belongs to."""
    from .facts import unresolved

    return {
        # A file only a shell command printed is listed as room allows (fit.Tier.AS_ROOM_ALLOWS): the guard does not insist.
        "Relevant Files": [path for path, acts in facts.files.items() if acts != {"shell-read"}],
        "Critical Context": [unresolved(e) for e in facts.errors],  # (what the error said; not that a later action resolved it)
        "Constraints & Preferences": facts.constraints,
        "Active Task": [facts.last_request] if facts.last_request else [],
    }


def _norm(s: str) -> str:
    return " ".join(s.lower().split())


def _says(text: str, command: str) -> bool:
    """Whether a normalized text names a normalized command as a whole: `ls` is not in "tools", nor `cat` in
    "indicates"."""
    return re.search(r"(?<![\w-])" + re.escape(command) + r"(?![\w-])", text) is not None


def guard(answer: str, facts: Facts, counter: Counter, req: SummaryRequest) -> tuple[str, float | None]:
    """The model's answer made a summary: missing sections completed from the offline summary, missing key facts
    put back, the identifier index in the room left, the budget fitted. Returns it and the share of key facts the
    answer kept."""
    from . import offline

    secs = parse_sections(answer)
    wanted = key_facts(facts)
    retention = _retention(answer, wanted)
    empty = [s for s in SECTIONS if s not in secs or not secs[s].strip()]
    if empty:  # sections the answer left out are filled from the offline summary
        fallback = parse_sections(offline.summarize(facts, counter, req.budget, req.focus))
        for s in empty:
            secs[s] = fallback.get(s, "None")
    if facts.last_request:  # verbatim when the plan moved the ask into the summary (--last-ask summary)
        verbatim = getattr(facts, "last_request_verbatim", False)
        secs["Active Task"] = facts.last_request if verbatim else offline.token_cap(facts.last_request, counter, offline.ANCHOR_CAP)
    _put_back(secs, wanted)
    _with_commands(secs, facts, counter, req.budget)
    _with_index(secs, facts, counter, req.budget)
    return trim(secs, counter, req.budget, keep_ask=bool(getattr(facts, "last_request_verbatim", False))), retention


def within(summary: str, counter: Counter, budget: int) -> str:
    """A summary so far at most `budget` tokens: trimmed as a final one is (sections kept, oldest lines first out)."""
    if counter.text(summary) <= budget:
        return summary
    secs = parse_sections(summary)
    return trim(secs, counter, budget) if secs else summary[: budget * 2]


def _retention(answer: str, wanted: dict[str, list[str]]) -> float | None:
    """The share of the key facts that the model's answer kept (None when there are none)."""
    low = _norm(answer)
    total = sum(len(v) for v in wanted.values())
    kept = sum(1 for v in wanted.values() for f in v if _norm(f) in low)
    return kept / total if total else None


def _put_back(secs: dict[str, str], wanted: dict[str, list[str]]) -> None:
    """Append the key facts a section is missing to it, as bullets (Active Task is set verbatim instead)."""
    for section, items in wanted.items():
        if section == "Active Task":
            continue
        _append(secs, section, [f"- {f}" for f in items if _norm(f) not in _norm(secs.get(section, ""))])


# The commands the answer does not show take at most this share of the room it leaves (the quoted lines and the
# index share the rest).
COMMANDS_SHARE = 1 / 3


def _with_commands(secs: dict[str, str], facts: Facts, counter: Counter, budget: int) -> None:
    """The commands of the replaced turns that the answer does not show, with their exit codes, appended to Completed
    Actions ("- `pytest -q` exit 1", "ok" or "failed" where the tool gives no code; its first line; a command run
    again counted once, as its latest outcome), newest first while they
    fit COMMANDS_SHARE of the room the answer leaves (one that does not is passed over), listed in the order they ran. A model names a few of the commands
    it read; the agent runs them again. A command redaction would change is left out."""
    text = render(secs)
    room = int((budget - counter.text(text) - 2) * COMMANDS_SHARE)
    if room < MIN_INDEX_ROOM or not facts.commands:
        return
    said = _norm(text)
    latest: dict[str, str] = {}  # command -> its line, in the order of their latest run
    for cmd, code, failed in facts.commands:
        one, shown = _command_shown(cmd)
        if one and not _says(said, _norm(one)) and redact(shown) == shown:
            latest.pop(one, None)
            latest[one] = f"- `{shown}` " + (f"exit {code}" if code is not None else ("failed" if failed else "ok"))
    lines: list[str] = []
    for line in reversed(latest.values()):
        cost = counter.text(line) + 1
        if cost > room:  # (a heredoc's whole text, say): the older ones may still fit
            continue
        room -= cost
        lines.append(line)
    _append(secs, "Completed Actions", lines[::-1])


COMMAND_CHARS = 160  # of a command as the guard lists it (the offline summary's action lines show as many)


def _command_shown(cmd: str) -> tuple[str, str]:
    """A command's first line (what the answer is searched for) and that line as listed: up to where prune cut the
    call's arguments, at most COMMAND_CHARS, "…" when more followed (a heredoc's text, a long script)."""
    from ..redact import cut
    from ..refs import TRUNCATED

    whole = cmd[: cmd.index(TRUNCATED)] if TRUNCATED in cmd else cmd
    first, _, more = whole.strip().partition("\n")
    one = " ".join(first.split())
    if len(one) > COMMAND_CHARS:
        return one, cut(one, COMMAND_CHARS - 1) + "…"
    return one, one + (" …" if more.strip() or TRUNCATED in cmd else "")


# The identifier index takes the room the answer leaves when it is at least this many tokens (a few names).
MIN_INDEX_ROOM = 24


def _with_index(secs: dict[str, str], facts: Facts, counter: Counter, budget: int) -> None:
    """The offline summary's identifier index, in the room the model's answer leaves under the budget: the names of
    the replaced turns (most used first) that the summary does not show, as "- names: ..." lines at the end of
    Critical Context, after the lines of those turns that show the most of them per token (the quoted block, in
    EXCERPT_SHARE x the index's room, as the offline summary gives it). A model's prose keeps few names; they are
    what a continuation reuses most, and a quoted line keeps them beside what they stood with. A name that
    redaction would change is left out (it may be part of a secret), and so is a line that holds one."""
    from .fit import EXCERPT_SHARE, index_fit, index_items, shown

    text = render(secs)
    room = budget - counter.text(text) - 2  # the line break before the index and the one it may add
    if room < MIN_INDEX_ROOM or not facts.names:
        return
    missing = [n for n in facts.names if not shown(n, text) and redact(n) == n]
    block, missing = _quoted(facts, missing, counter, int(room * EXCERPT_SHARE / (1 + EXCERPT_SHARE)))
    if block:
        room -= counter.text("\n".join(block)) + 1
    k = index_fit(missing, counter, room)
    _append(secs, "Critical Context", block + [it.text for it in index_items(missing[:k], 0)])  # the offline index's lines


def _append(secs: dict[str, str], section: str, lines: list[str]) -> None:
    """`lines` at the end of a section (in place of its "None")."""
    if lines:
        body = secs.get(section, "").strip()
        secs[section] = "\n".join(([body] if body and body != "None" else []) + lines)


def _quoted(facts: Facts, names: list[str], counter: Counter, room: int) -> tuple[list[str], list[str]]:
    """The quoted block (its head and indented lines) that fits `room`, and the names it does not show."""
    from .fit import EXCERPT_HEAD, EXCERPT_INDENT, pick_excerpts, shown
    from .vocabulary import showing

    excerpts = showing(facts.excerpts, set(names))
    lines = pick_excerpts(excerpts, counter, room) if excerpts else []
    if not lines:
        return [], names
    shows = "\n".join(lines)
    return [EXCERPT_HEAD] + [EXCERPT_INDENT + ln for ln in lines], [n for n in names if not shown(n, shows)]


def trim(secs: dict[str, str], counter: Counter, budget: int, keep_ask: bool = False) -> str:
    """The rendered summary within `budget`: the longest section loses its oldest lines first, never the
    anchors (Active Task, Constraints), and says how many it lost (`(+N earlier lines omitted to fit the
    budget)`, as the offline summary does). Linear: each line is counted once, and a few rounds correct for
    the tokens that joining lines and the notes add or save."""
    text = render(secs)
    total = counter.text(text)
    lines = {s: secs.get(s, "").split("\n") for s in SECTIONS if s not in ("Active Task", "Constraints & Preferences")}
    start = dict.fromkeys(lines, 0)
    size = {s: len(secs.get(s, "")) for s in lines}
    for _ in range(8):
        if total <= budget:
            break
        over = total - budget
        heap = [(-size[s], s) for s in lines if len(lines[s]) - start[s] > 1]
        heapq.heapify(heap)
        freed = 0
        while heap and freed < over:
            _, s = heapq.heappop(heap)
            line = lines[s][start[s]]
            start[s] += 1
            freed += counter.text(line) + 1
            size[s] -= len(line) + 1
            if len(lines[s]) - start[s] > 1:
                heapq.heappush(heap, (-size[s], s))
        if not freed:
            break
        for s, k in start.items():
            if k:
                secs[s] = f"{OMITTED.format(k)}\n" + "\n".join(lines[s][k:])
        text = render(secs)
        total = counter.text(text)
    return _cut_to_fit(secs, counter, budget, text, total, keep_ask)


OMITTED = "(+{} earlier lines omitted to fit the budget)"


def _cut_to_fit(secs: dict[str, str], counter: Counter, budget: int, text: str, total: int, keep_ask: bool) -> str:
    """What dropping whole lines could not fit (one long line per section): in a small budget only the sections
    with content are shown (as the offline summary does); the largest section is cut at a token boundary; the
    Active Task last, and never when it is the ask the plan moved into the summary (`keep_ask`: the caller then
    refuses a summary over its budget)."""
    from . import offline
    from .fit import HEADINGS_SHARE

    if total <= budget:
        return text
    terse = counter.text(render({})) > budget * HEADINGS_SHARE
    for _ in range(len(SECTIONS) + 1):
        text = render(secs, terse=terse)
        total = counter.text(text)
        if total <= budget:
            return text
        sizes = {s: counter.text(secs.get(s, "")) for s in SECTIONS if s != "Active Task" and secs.get(s, "").strip() not in ("", "None")}
        if not sizes:
            break
        s = max(sizes, key=lambda k: sizes[k])
        keep = sizes[s] - (total - budget) - 4
        secs[s] = offline.token_cap(secs[s], counter, keep) if keep > 8 else "None"
    text = render(secs, terse=True)
    if counter.text(text) <= budget or keep_ask:
        return text
    ask = secs.get("Active Task", "")
    keep = counter.text(ask) - (counter.text(text) - budget) - 4
    secs["Active Task"] = offline.token_cap(ask, counter, keep) if keep > 8 else ""
    text = render(secs, terse=True)
    return text if counter.text(text) <= budget else ""
