"""Choosing what of the offline summary's items fits its token budget, and rendering the 13 sections.

Not by cutting the end off: the ask and the goal first; the identifier index in its share of the room, the lines
quoted from the replaced turns that show its names in half as much again; an equal
share for every other section with content; what is left by tier, newest actions first; the room the rendered
summary still leaves takes more of the index's names. What does not fit is counted in a "(+N more ...)" line. The
index's lines and `shown` (whether a text shows a name) serve the LLM summary's guard too.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Sequence
from enum import IntEnum
from typing import TYPE_CHECKING

from ..lean import dataclass
from ..markers import NAMES_SEP, QUOTE_HEAD, QUOTE_INDENT
from ..names import greedy, names_in
from ..redact import cut, redact
from ..tokens import Counter
from .prompt import SECTIONS, escape_body

if TYPE_CHECKING:
    from .vocabulary import Excerpt

NAMES_PER_LINE = 12
INDEX_LINE = "- names: "
INDEX_SHARE = 0.3  # of the room left after the ask and goal
EXCERPT_HEAD = QUOTE_HEAD  # (markers: a later summary reads an earlier one's block back)
EXCERPT_INDENT = QUOTE_INDENT
EXCERPT_SHARE = 0.5  # x the index's room, on top of it: lines of the replaced turns that show its names with their neighbours
# When the 13 headings ("## Blocked\nNone" ...) would take more than this share of the budget, a section
# with nothing chosen is left out: a summary of a few hundred tokens keeps its room for content.
HEADINGS_SHARE = 0.1
# A section of one long statement that does not fit its share is cut to it, not left out whole ("(+1 omitted"): where
# things stand, the agent's latest text (up to 600 tokens), was dropped from 22 of 175 corpus summaries at 4,000 tokens.
CUT_TO_SHARE = ("Active State",)
MIN_CUT = 24  # tokens of such a statement at least, or it is left out
MAX_CUT = 120  # and at most: the room the share holds beyond it goes to the other sections (and a grown tail)


class Tier(IntEnum):
    """How surely a line of the offline summary is kept: the lower, the sooner (`fit`)."""

    ASK = -1  # the person's ask the plan moved into the summary, verbatim: never shed
    FIRST = 0  # the Active Task and the Goal (and what --focus names): kept before anything else
    KEY = 1  # pending asks, constraints, error lines, files a tool wrote, edited or read, the latest plan, the project root
    WORK = 2  # failed actions, commands, writes; decisions, answers, state, remaining work; an earlier summary's context, files
    DETAIL = 3  # other actions, harness notes, another tool's summary lines; an earlier summary's actions and other sections
    AS_ROOM_ALLOWS = 4  # no share of its section, only what the shares leave (actions off the --focus topic, files only a shell printed)
    INDEX = 5  # the identifier index and the quoted lines: a share of its own first; its leftover lines go after WORK


@dataclass
class Item:
    """A line the offline summary may keep, in its section and tier."""

    section: str
    text: str
    tier: int  # a Tier
    order: int  # its position in the list of items (the order the section builders add them)


_NAME_CHARS = r"[A-Za-z0-9_]"


def shown(name: str, text: str) -> bool:
    """Whether `text` shows `name` as a name of its own, not only as a piece of a longer one: `create` is not
    shown by `createService`, nor the directory `/app/src` by the path `/app/src/db.ts` (a relative path at the end
    of a longer one is: `src/db.ts` in `/app/src/db.ts`)."""
    if name not in text:
        return False
    return _shown_pattern(name).search(text) is not None


@functools.lru_cache(maxsize=8192)
def _shown_pattern(name: str) -> re.Pattern[str]:
    """`shown`'s pattern for a name, compiled once (an index lists thousands of names: more than `re`'s own cache
    holds, so each would be compiled again on every call)."""
    left = f"(?<!{_NAME_CHARS})(?<![.-])" if re.match(_NAME_CHARS, name) else ""
    right = rf"(?!{_NAME_CHARS})(?![/.-]{_NAME_CHARS})(?!/)" if re.search(rf"{_NAME_CHARS}$", name) else ""
    return re.compile(left + re.escape(name) + right)


def index_items(names: list[str], order: int, first: int = NAMES_PER_LINE) -> list[Item]:
    """The index in lines of NAMES_PER_LINE names; the first `first` names close a line of their own (so a
    room smaller than one full line still takes the most used names)."""
    cuts = [*range(0, first, NAMES_PER_LINE), *range(first, len(names), NAMES_PER_LINE), len(names)]
    return [
        Item("Critical Context", INDEX_LINE + NAMES_SEP.join(names[a:e]), Tier.INDEX, order + k)
        for k, (a, e) in enumerate(itertools.pairwise(cuts))
    ]


# A quoted phrase (it holds spaces; never a double quote), a name with its parameters (`with_signatures`; they may hold
# spaces), or a name.
_INDEX_NAME = re.compile(r'"[^"]*"|[^\s"(]+\((?:[^()\n]|\([^()\n]*\))*\)|[^ ]+')


def index_line_names(line: str) -> list[str]:
    """The names an index line lists (its quoted phrases whole)."""
    return _INDEX_NAME.findall(line[len(INDEX_LINE) :])


# What a name's parameters may cost in the index beyond the names they show (which it then does not list again): the
# two parentheses, about.
SIGNATURE_EXTRA = 2


def with_signatures(names: list[str], signatures: dict[str, str], counter: Counter) -> list[str]:
    """The index's names with a function's parameters beside its name (`capture_pane(pane_id)`, from `signatures`:
    what a call of it passes, where a list shows the two names apart) when they cost at most SIGNATURE_EXTRA tokens
    more than the names of the list they show, which it then leaves out: the same room, the names in the shape the
    code uses them. Never a signature redaction would change. An entry stands at the best rank of the names it shows:
    a most used name shown in the parameters of a function used less is not pushed out of a small index with it."""
    listed = set(names)
    entries: dict[str, str] = {}
    hosts: dict[str, list[str]] = {}  # a name -> the functions whose entries show it (itself, or in their parameters)
    for name in names:
        args = signatures.get(name)
        if not args or redact(name + args) != name + args:
            continue
        inner = {n for n in names_in(args) if n != name and n in listed}
        extra = counter.text(name + args) - counter.text(name) - sum(counter.text(NAMES_SEP + n) for n in inner)
        if extra <= SIGNATURE_EXTRA:
            entries[name] = name + args
            for n in (name, *inner):
                hosts.setdefault(n, []).append(name)
    if not entries:
        return names
    said = "\n".join(entries.values())
    out: list[str] = []
    placed: set[str] = set()
    for n in names:
        if n not in hosts:
            if not shown(n, said):
                out.append(n)
            continue
        for host in hosts[n]:
            if host not in placed:
                placed.add(host)
                out.append(entries[host])
    return out


def index_fit(names: list[str], counter: Counter, room: int) -> int:
    """How many of the ranked names the index lines (NAMES_PER_LINE each) show in `room` tokens: whole lines
    while they fit, then as much of the next line as fits."""

    def cost(a: int, e: int) -> int:
        return counter.text(INDEX_LINE + NAMES_SEP.join(names[a:e])) + 1

    start = 0
    while start < len(names) and cost(start, start + NAMES_PER_LINE) <= room:
        room -= cost(start, start + NAMES_PER_LINE)
        start += NAMES_PER_LINE
    lo, hi = start, min(start + NAMES_PER_LINE, len(names))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if cost(start, mid) <= room else (lo, mid - 1)
    return min(lo, len(names))  # (a last line fitting whole took start past the end)


def token_cap(text: str, counter: Counter, cap: int) -> str:
    """`text` cut to `cap` tokens (" …[cut]" after it when cut)."""
    if counter.text(text) <= cap:
        return text
    ids = counter.encode(text)[:cap] if not counter.approx else None
    head = counter._enc.decode(ids) if ids is not None else text[: cap * 4]
    head = head.rstrip("\ufffd")  # a token cap through a multi-byte character decodes its bytes as U+FFFD
    return (cut(text, len(head)) if text.startswith(head) else head) + " …[cut]"


def _section_order(it: Item) -> int:
    """Within a section: newest actions first, everything else in order."""
    return -it.order if it.section == "Completed Actions" else it.order


class _Choice:
    """Items chosen so far and the tokens they take (headings of all sections included)."""

    def __init__(self, items: list[Item], counter: Counter, budget: int) -> None:
        self.items, self.counter = items, counter
        self.heading = {s: counter.text(f"## {s}\nNone\n\n") for s in SECTIONS}
        # terse: only sections with something chosen are rendered, each paying its heading when it gets one
        self.terse = sum(self.heading.values()) > budget * HEADINGS_SHARE
        self.used = 0 if self.terse else sum(self.heading.values())
        self.chosen: list[int] = []
        self.taken: set[int] = set()
        self.sections: set[str] = set()

    def cost(self, it: Item) -> int:
        heading = self.heading[it.section] if self.terse and it.section not in self.sections else 0
        return self.counter.text(it.text) + 1 + heading

    def take(self, it: Item) -> None:
        self.used += self.cost(it)
        self.chosen.append(it.order)
        self.taken.add(it.order)
        self.sections.add(it.section)

    def fill(self, candidates, room: int, stop_at_first_miss: bool = False) -> None:
        """Take candidates in order while they fit `room` (and the whole budget check is the caller's)."""
        spent = 0
        for it in candidates:
            c = self.cost(it)
            if spent + c > room:
                if stop_at_first_miss:
                    return
                continue
            self.take(it)
            spent += c


def pick_excerpts(excerpts: Sequence[Excerpt], counter: Counter, room: int) -> list[str]:
    """The excerpts that show the most (weighed) names not shown yet per token, while they fit `room`, in their
    order in the transcript (`excerpts` comes newest first)."""
    cost = [counter.text(EXCERPT_INDENT + e.text) + 1 for e in excerpts]
    room -= counter.text(EXCERPT_HEAD) + 1
    covered: set[str] = set()

    def gain(k: int) -> float:
        return sum(w for n, w in excerpts[k].names if n not in covered) / cost[k]

    out, spent = [], 0
    for k in greedy(gain, len(excerpts)):
        if spent + cost[k] <= room and redact(excerpts[k].text) == excerpts[k].text:
            out.append(k)
            spent += cost[k]
            covered.update(n for n, _ in excerpts[k].names)
    return [excerpts[k].text for k in sorted(out, reverse=True)]


def fit(items: list[Item], counter: Counter, budget: int, names: list[str] | None = None, excerpts: Sequence[Excerpt] = ()) -> str:
    """Choose what fits the budget, then render in order.

    1. Tier 0 (the ask, the goal) is kept first (in a budget too small for them, the goal goes, then a pointer
       to the ask; never an ask the summary carries verbatim, tier -1).
    2. The identifier index (tier 5) gets INDEX_SHARE of what is left: names are what a continuation
       reuses most, and a name costs a few tokens where an action line costs tens. Before it, the lines quoted
       from the replaced turns (`excerpts`) that show the most of its names per token take EXCERPT_SHARE x that
       room more; the index lists the names they do not show.
    3. Every other section that has content gets an equal share of what is left, filled in its own
       order (so decisions and state are never starved by a long list of actions).
    4. What is still left goes by tier, newest actions first (the index's lines after tier 2's items).
    5. The room the rendered summary still leaves takes the names of the first index line that did not fit.
    The rendered text (headings, "(+N more ...)" notes included) is then checked exactly, shedding the
    last-chosen items until it fits."""
    ch = _Choice(items, counter, budget)
    for it in items:
        if it.tier <= Tier.FIRST:
            ch.take(it)
    room = int(max(budget - ch.used, 0) * INDEX_SHARE)
    names = _quote(ch, excerpts, int(room * EXCERPT_SHARE), names)  # on top of the index's room
    items = ch.items
    heading = ch.heading["Critical Context"] if ch.terse and "Critical Context" not in ch.sections else 0
    index = index_items(names, len(items), index_fit(names, counter, room - heading)) if names else []
    items = ch.items = items + index
    ch.fill(index, room, stop_at_first_miss=True)
    _shares(ch, budget)
    for tier in sorted({it.tier for it in items if it.tier > Tier.FIRST}, key=lambda k: Tier.WORK + 0.5 if k == Tier.INDEX else k):
        for it in sorted((it for it in items if it.tier == tier and it.order not in ch.taken), key=_section_order):
            if ch.used + ch.cost(it) <= budget:
                ch.take(it)
    _top_up(ch, budget)
    while True:
        text = _render(items, set(ch.chosen), ch.terse)
        if counter.text(text) <= budget or not ch.chosen or items[ch.chosen[-1]].tier <= Tier.ASK:
            return text  # (over the budget only when the ask the plan moved here does not fit: the caller refuses)
        ch.chosen.pop()  # the last chosen first; tier 0 too (the goal before a pointer to the ask) when the budget cannot hold it


def _quote(ch: _Choice, excerpts: Sequence[Excerpt], room: int, names: list[str] | None) -> list[str] | None:
    """The excerpts that fit `room` (one item per line, after the items so far); returns the names they do not show."""
    if not excerpts or not names:
        return names
    lines = pick_excerpts(excerpts, ch.counter, room)
    texts = [EXCERPT_INDENT + ln for ln in lines]
    texts[:1] = [f"{EXCERPT_HEAD}\n{t}" for t in texts[:1]]
    quoted = [Item("Critical Context", t, Tier.INDEX, len(ch.items) + k) for k, t in enumerate(texts)]
    ch.items = ch.items + quoted
    ch.fill(quoted, room)
    shows = "\n".join(lines)
    return [n for n in names if not shown(n, shows)]


def _top_up(ch: _Choice, budget: int) -> None:
    """The room the rendered summary leaves takes the first index line that did not fit, as far as its names go (an
    index line: a quoted line left out shares its tier and is no list of names)."""
    k = next((k for k, it in enumerate(ch.items) if it.text.startswith(INDEX_LINE) and it.order not in ch.taken), None)
    if k is None:
        return
    it = ch.items[k]
    names = index_line_names(it.text)
    heading = ch.heading[it.section] if ch.terse and it.section not in ch.sections else 0
    left = budget - ch.counter.text(_render(ch.items, set(ch.chosen), ch.terse)) - heading  # exact: the "(+N more)" notes too
    count = index_fit(names, ch.counter, left)
    if count:
        ch.items[k] = Item(it.section, INDEX_LINE + NAMES_SEP.join(names[:count]), Tier.INDEX, it.order)
        ch.take(ch.items[k])


def _shares(ch: _Choice, budget: int) -> None:
    """Every section with content (the index and Tier.AS_ROOM_ALLOWS items apart) gets an equal share of what is left, in
    its own order."""
    sections = [s for s in SECTIONS if any(it.section == s and Tier.FIRST < it.tier < Tier.AS_ROOM_ALLOWS for it in ch.items)]
    if not sections:
        return
    share = max(budget - ch.used, 0) // len(sections)
    for s in sections:
        own = sorted(
            (it for it in ch.items if it.section == s and Tier.FIRST < it.tier < Tier.AS_ROOM_ALLOWS),
            key=lambda it: (it.tier, _section_order(it)),
        )
        room = min(share, budget - ch.used)
        taken = len(ch.chosen)
        ch.fill(own, room)
        if len(ch.chosen) == taken and s in CUT_TO_SHARE:
            _cut_to(ch, own[0], room)


def _cut_to(ch: _Choice, it: Item, room: int) -> None:
    """`it` cut to the section's share instead of left out whole: where things stand, in the room the section has."""
    framing = ch.cost(it) - ch.counter.text(it.text) + ch.counter.text(" …[cut]")
    if room - framing < MIN_CUT:
        return
    cut_item = Item(it.section, token_cap(it.text, ch.counter, min(room - framing, MAX_CUT)), it.tier, it.order)
    if ch.cost(cut_item) <= room:
        ch.items[ch.items.index(it)] = cut_item
        ch.take(cut_item)


def _render(items: list[Item], chosen: set[int], terse: bool = False) -> str:
    """The 13 sections in order ("None" under an empty one); terse: only the sections with something chosen."""
    by_section: dict[str, list[str]] = {s: [] for s in SECTIONS}
    dropped: dict[str, int] = {}
    for it in items:
        if it.order in chosen:
            by_section[it.section].append(it.text)
        else:
            dropped[it.section] = dropped.get(it.section, 0) + 1
    out = []
    for s in SECTIONS:
        if terse and not by_section[s]:
            continue
        body = "\n".join(by_section[s])
        if dropped.get(s):  # not "None" over what was left out
            body += f"\n(+{dropped[s]} more omitted to fit the budget)" if body else f"(+{dropped[s]} omitted to fit the budget)"
        body = body or "None"
        out.append(f"## {s}\n{escape_body(body)}")  # quoted here, so the budget counts what framing shows
    return "\n\n".join(out)
