"""The offline summarizer: deterministic, no network.

Fills the 13 sections from the facts of the middle, and fits its token budget by priority, not by
cutting the end off: the latest request and the goal first; then open asks, constraints, errors,
files and the latest plan; then decisions, answers, identifiers, the state and the actions that ran
a command, wrote a file or failed; then the other actions, newest first. What does not fit is
counted in a "(+N more ...)" line. `focus` promotes
every item that mentions the topic to the first tier. This module builds the items, section by
section; fit.py chooses what fits and renders it.

When the transcript already holds a compaction summary, its sections are carried over and updated
(numbering continues) rather than summarized again. Another tool's summary (Claude Code's "This session
is being continued ...") gives the Goal from the request it states, and its lines as room allows; the
names of any earlier summary the new one replaces join the identifier index.
"""

from __future__ import annotations

import re

from ..harness import MARKUP
from ..markers import NAMES_SEP, quote_block
from ..redact import cut
from ..tokens import Counter
from .facts import FAILED_VERB, Facts
from .fit import INDEX_LINE, NAMES_PER_LINE, Item, Tier, fit, shown, token_cap, with_signatures
from .prompt import parse_sections
from .vocabulary import showing

FOREIGN_GOAL_CAP = 600
GOAL_CAP = 600  # tokens of the first request restated as the Goal at most
KEPT_LAST_ASK = "the person's latest message, kept verbatim (not summarized)"
KEPT_FIRST_ASK = "the person's first message, kept verbatim (not summarized)"
ONLY_ASK = "the Active Task (the person's only ask)"
KEPT_LAST_NOTE = "none from the person; the latest user-role message (the harness's text) is kept verbatim"
FROM_PRIOR_NEXT = "(no ask since the earlier summary; its next step) "
FROM_ANSWER = "(the person's latest words, an answer to the agent's question; the harness wrote since) "
THEN_ANSWER = "(then the person's answer to the agent's question) "
FROM_PRIOR_NEXT_SINCE = "(no ask since the earlier summary; the next step it named, worked on since: see Completed Actions) "
# Another tool's summary quoted in Critical Context: said to be older than this span's actions (its "IN PROGRESS",
# "NOT YET COMMITTED" may be done since).
FOREIGN_QUOTE_HEAD = "- the earlier summary said (before the actions above):"
NEXT_WORDS = ("next step",)  # a heading of another tool's summary that says what comes next
POINTERS = (KEPT_LAST_ASK, KEPT_FIRST_ASK, ONLY_ASK, KEPT_LAST_NOTE)  # what an Active Task or Goal says instead of repeating a kept ask
ANCHOR_CAP = 1_500  # tokens of a verbatim request kept in the summary at most


def _prior_items(prior: str) -> tuple[dict[str, list[str]], int]:
    """Items of a previous summary by section, and the last number used in Completed Actions."""
    secs = parse_sections(prior)
    items: dict[str, list[str]] = {}
    last_no = 0
    for name, body in secs.items():
        if name in ("Active Task",) or body.strip() in ("", "None"):
            continue
        lines = [ln for ln in body.split("\n") if ln.strip() and not ln.strip().startswith("(+")]
        # Its quoted lines are not carried as items (taken first, they pushed its actions out): they go back into the
        # pool of lines the new summary quotes from (vocabulary.excerpts), and are quoted again as room allows.
        items[name] = quote_block(lines)[0]
        if name == "Completed Actions":  # its actions' numbers, not a number that begins an error line under one
            for ln in lines:
                m = re.match(r"(\d+)\.", ln)
                if m:
                    last_no = max(last_no, int(m.group(1)))
    return items, last_no


DOCUMENTS = 3  # the latest outputs that describe work whose names the summary lists
DOCUMENT_NAMES = 120


_TERSE = [
    (re.compile(r"^\[[^\]]+\] ran `"), "`"),
    (re.compile(r"^\[(?:Read|read_file|view)\] read "), "read "),
    (re.compile(r" lines output\b"), " lines"),
    (re.compile(r" chars output\b"), " chars"),
    (re.compile(r"` -> "), "` "),
    (re.compile(r"(` \(in [^)\n]+\)) -> "), r"\1 "),  # a command run in a directory of its own (facts._with_workdir)
]


def _terse(line: str) -> str:
    for rx, rep in _TERSE:
        line = rx.sub(rep, line)
    return line


def common_root(paths: list[str], share: float = 0.5, cwd: str | None = None) -> str | None:
    """The deepest directory (3 segments or more) that at least `share` of the absolute paths (and 3
    or more) sit under: the project's root, said once instead of in front of every path. The session's
    working directory (`cwd`, as the harness states it) is the root when that share sits under it: the
    commands' own relative paths are relative to it, so a deeper root would misread them."""
    paths = [p for p in paths if p.startswith("/") and p.count("/") >= 4]
    if len(paths) < 3:
        return None
    home = cwd.rstrip("/") + "/" if cwd and cwd.strip("/") else None
    if home and sum(p.startswith(home) for p in paths) >= max(3, share * len(paths)):
        return home
    under: dict[str, int] = {}
    for p in paths:
        parts = p.split("/")
        for k in range(4, len(parts)):
            d = "/".join(parts[:k]) + "/"
            under[d] = under.get(d, 0) + 1
    fits = [d for d, c in under.items() if c >= max(3, share * len(paths))]
    return max(fits, key=len) if fits else None


class _Items:
    """The summary's candidate items, in the order the section builders add them."""

    def __init__(self, facts: Facts, counter: Counter, budget: int) -> None:
        self.facts, self.counter = facts, counter
        # A goal restated in the summary (always kept) takes at most half of it: a 600-token request in a 100-token
        # summary would take the whole compaction over its target.
        self.goal_cap = max(min(GOAL_CAP, budget // 2), 1)
        self.items: list[Item] = []
        self._added: set[tuple[str, str]] = set()
        self.root = common_root(list(facts.files), cwd=facts.cwd)
        self.prior, self.number = _prior_items(facts.prior_summary) if facts.prior_summary else ({}, 0)
        # Another tool's summary (none of our sections): the request it states is the session's goal.
        foreign = facts.prior_summary if facts.prior_summary and not self.prior else ""
        self.foreign_goal = foreign_request(foreign) if foreign else ""
        # With no ask since, the work it says comes next (Claude Code: "9. Optional Next Step:") is the active task.
        self.foreign_next = (
            (foreign_request(foreign, NEXT_WORDS) or foreign_request(foreign, ("current work",)))
            if foreign and not facts.last_request
            else ""
        )

    def add(self, section: str, text: str, tier: int) -> None:
        if text and text.strip():
            key = (section, text.rstrip())
            if key in self._added:  # (an earlier summary's "project root:" line, said again by this one)
                return
            self._added.add(key)
            self.items.append(Item(section, text.rstrip(), tier, len(self.items)))

    def carry(self, section: str, tier: int) -> None:
        """The earlier summary's lines of `section`."""
        for line in self.prior.get(section, []):
            self.add(section, line, tier)

    def rel(self, text: str) -> str:
        return text.replace(self.root, "") if self.root else text

    def written(self) -> str:
        """What the first tiers (always or nearly always kept) already say."""
        return "\n".join(it.text for it in self.items if it.tier <= Tier.KEY)


def _asks(b: _Items) -> None:
    _active_task(b)
    _goal(b)
    for p in _pending(b.facts):
        b.add("Pending User Asks", "- " + token_cap(p, b.counter, 400), Tier.KEY)


def _active_task(b: _Items) -> None:
    """What the kept turns hold verbatim is pointed to, not repeated (a repeated ask can cost a third of a small
    summary). The person's latest words that answered the agent's question (after their last typed ask) are said with
    that ask, or instead of "none from the person" when only the harness wrote since."""
    f, counter = b.facts, b.counter
    answer = token_cap(f.latest_answer[1], counter, min(FOREIGN_GOAL_CAP, b.goal_cap)) if f.latest_answer else ""
    if f.last_request and answer and not f.last_request_verbatim and f.last_request_harness:
        b.add("Active Task", FROM_ANSWER + answer, Tier.FIRST)
    elif f.last_request:
        verbatim = f.last_request if f.last_request_verbatim else KEPT_LAST_NOTE if f.last_request_harness else KEPT_LAST_ASK
        b.add("Active Task", verbatim, Tier.ASK if f.last_request_verbatim else Tier.FIRST)
        if answer:
            b.add("Active Task", THEN_ANSWER + answer, Tier.FIRST)
    elif b.foreign_next:
        said = FROM_PRIOR_NEXT_SINCE if f.actions else FROM_PRIOR_NEXT  # the span went on with it: maybe done since
        b.add("Active Task", said + token_cap(b.foreign_next, counter, min(FOREIGN_GOAL_CAP, b.goal_cap)), Tier.FIRST)


def _goal(b: _Items) -> None:
    f, counter = b.facts, b.counter
    goal = f.first_request or (f.last_request if not f.last_request_harness else None)  # harness text is no goal
    if b.prior.get("Goal"):
        b.add("Goal", "\n".join(b.prior["Goal"]), Tier.FIRST)
    elif b.foreign_goal:  # the request as the earlier summary states it: the session's goal, before any later ask
        b.add("Goal", token_cap(b.foreign_goal, counter, min(FOREIGN_GOAL_CAP, b.goal_cap)), Tier.FIRST)
    elif goal and goal == f.last_request:
        b.add("Goal", ONLY_ASK, Tier.FIRST)
    elif goal and f.first_request_kept:
        b.add("Goal", KEPT_FIRST_ASK, Tier.FIRST)
    elif goal:
        b.add("Goal", token_cap(goal, counter, b.goal_cap), Tier.FIRST)


def _pending(f: Facts) -> list[str]:
    """The asks no final reply answered, but the Active Task and the Goal (said there already)."""
    return [p for p in f.pending if p not in (f.last_request, f.first_request)]


def _constraints(b: _Items) -> None:
    f = b.facts
    b.carry("Constraints & Preferences", Tier.KEY)
    verbatim = f.last_request if f.last_request and f.last_request_verbatim else ""  # the Active Task says them already
    for c in f.constraints:
        if c not in verbatim:
            b.add("Constraints & Preferences", f"- {c}", Tier.KEY)


# The heading of another tool's summary that states the person's request (Claude Code: "1. Primary Request and
# Intent:"), and any heading after it.
_FOREIGN_HEADING = re.compile(r"^\s{0,3}(?:#{1,4}\s*|\d{1,2}\.\s+)\**([A-Z][\w &/,'-]{2,60}?)\**:?\**\s*$")


# What Claude Code writes after the summary it continues from: how to read the old transcript, how to go on.
_FOREIGN_TRAILERS = ("If you need specific details from before compaction", "Please continue the conversation from where")


def foreign_request(text: str, words: tuple[str, ...] = ("request", "intent")) -> str:
    """The request as another tool's summary states it (the lines under its heading that has one of `words`: by
    default its request/intent heading), or ""."""
    out: list[str] = []
    inside = False
    for raw in text.split("\n"):
        if raw.startswith(_FOREIGN_TRAILERS):  # the harness's own words after the summary
            break
        head = _FOREIGN_HEADING.match(raw)
        if head:
            title = head.group(1).lower()
            inside = any(w in title for w in words)
        elif inside and raw.strip():
            out.append(raw.strip())
    return "\n".join(out)


def _outside_code(lines: list[str]) -> list[str]:
    """Lines outside code fences: an earlier summary's code quoted line by line, as room allows, left a fence
    without its code ("> ```elixir", "> ```"); its names join the index."""
    out: list[str] = []
    fenced = False
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            out.append(line)
    return out


# A line that introduces what follows ("Analysis:", "4. Errors and fixes:", "**Current state:**", "## Files"): quoted
# with the line after it, never alone.
_INTRO = re.compile(r"^\s{0,3}(?:#{1,4}\s*|\d{1,2}\.\s+)?\**([A-Z][\w &/,'()-]{1,60}?)\**:?\**\s*$")


def _quoted(lines: list[str], said: set[str]) -> list[str]:
    """The lines as quoted items ("> line", each cut to 400 characters), a line that introduces others with the line
    after it: kept as room allows, such a line was kept alone while what it introduces was left out ("> 4. Errors and
    fixes:" then "> 7. Pending Tasks:"). Lines `said` already (the Goal's) are left out, with what introduces them."""
    out: list[str] = []
    intro = ""
    for line in lines:
        text = line.strip()
        if not text or line.lstrip().startswith(("This session is being continued", "<")):
            continue
        if text in said:
            intro = ""
            continue
        quoted = f"{intro}\n> {cut(text, 400)}" if intro else f"> {cut(text, 400)}"
        if (text.endswith(":") or _FOREIGN_HEADING.match(line)) and _INTRO.match(line):
            intro = quoted
            continue
        out.append(quoted)
        intro = ""
    return out


def _context(b: _Items) -> None:
    f = b.facts
    b.carry("Critical Context", Tier.WORK)
    if f.prior_summary and not b.prior:  # another tool's summary: its lines, as room allows
        goal = set((b.foreign_goal + "\n" + b.foreign_next).split("\n"))  # already the Goal and the Active Task
        for k, quoted in enumerate(_quoted(_outside_code(f.prior_summary.split("\n")), goal)):
            b.add("Critical Context", f"{FOREIGN_QUOTE_HEAD}\n{quoted}" if k == 0 else quoted, Tier.WORK if k == 0 else Tier.DETAIL)
    for e in f.errors:
        b.add("Critical Context", f"- {e}" if e[:6].lower() in ("error:", "error ") else f"- error: {e}", Tier.KEY)  # not "error: error:"
    earlier = _earlier_files(b)
    for path, acts in f.files.items():
        acts = acts | earlier.pop(path, set())  # a file the earlier summary lists too: one line, what was done to it since
        # A file a shell command printed (`sed -n '1,80p' F`) is listed as room allows: its action line names it.
        b.add("Relevant Files", f"- {path} ({_verbs(acts)})", Tier.AS_ROOM_ALLOWS if acts == {"shell-read"} else Tier.KEY)
    if f.plan:
        b.add("In Progress", "Latest plan (verbatim):\n" + "\n".join(f.plan), Tier.KEY)


_VERBS = {"read": "read", "write": "written", "edit": "edited"}
_FILE_LINE = re.compile(r"^- (?P<path>.+) \((?P<verbs>[a-z, ]+)\)$")


def _earlier_files(b: _Items) -> dict[str, set[str]]:
    """The earlier summary's Relevant Files: each line this span's files do not name is carried as it is; those it
    names are returned (path -> what was done to it), for one line each (not "router.ex (read)" and then
    "router.ex (edited)")."""
    words = {word: v for v, word in _VERBS.items()} | {f"{v} failed": v + FAILED_VERB for v in ("write", "edit")}
    named = {b.rel(p): p for p in b.facts.files} | {p: p for p in b.facts.files}  # (the earlier one may be relative to the root)
    out: dict[str, set[str]] = {}
    for line in b.prior.get("Relevant Files", []):
        m = _FILE_LINE.match(line.strip())
        verbs = [v.strip() for v in m.group("verbs").split(",")] if m else []
        path = named.get(m.group("path")) if m else None
        if path is not None and verbs and all(v in words for v in verbs):
            out[path] = {words[v] for v in verbs}
        else:
            b.add("Relevant Files", line, Tier.WORK)
    return out


def _verbs(acts: set[str]) -> str:
    """What was done to a file: "read, edited"; an edit or write that failed only when none succeeded ("edit failed")."""
    done = [word for v, word in _VERBS.items() if v in acts or v == "read" and "shell-read" in acts]
    if not any(v in acts for v in ("write", "edit")):
        done += [f"{v} failed" for v in ("write", "edit") if v + FAILED_VERB in acts]
    return ", ".join(done)


# An action line's first error, said short: after "exit N" or "-> error", up to its size and references.
_SAID_ERROR = re.compile(
    r"(?P<head>exit -?\d+| -> error): (?P<said>.*?)(?P<tail>, [\d,]+ (?:lines|chars)(?: output)?)?(?P<refs>(?: \[[^\]]*\])*)$"
)


def _unrepeated(first: str, rest: str) -> str:
    """An action's first line without its first error's short form when the error lines under it give it whole
    ("exit 1: failed in sandbox ... /opt/h…, 4 lines" over the same error in full: said twice). Compared with runs
    of spaces folded: pytest's "E       ValueError: ..." is said "E ValueError: ..." on the first line."""
    below = " ".join(rest.split("\n", 1)[0].split())
    m = _SAID_ERROR.search(first) if below else None
    if m is None or len(m.group("said")) < 8 or not below.startswith(" ".join(m.group("said").rstrip("…").split())):
        return first
    return first[: m.start("said") - 2] + (m.group("tail") or "") + m.group("refs")


def _actions(b: _Items) -> None:
    """Completed actions, terse, numbered after the earlier summary's; repeated identical actions (the
    same command, the same outcome) collapse into their latest one."""
    f = b.facts
    b.carry("Completed Actions", Tier.DETAIL)
    repeats: dict[str, int] = {}
    for a in f.actions:
        repeats[a.line] = repeats.get(a.line, 0) + 1
    seen: dict[str, int] = {}
    number = b.number
    for a in f.actions:
        number += 1
        seen[a.line] = seen.get(a.line, 0) + 1
        if seen[a.line] < repeats[a.line]:
            continue
        times = f" (x{repeats[a.line]})" if repeats[a.line] > 1 else ""
        first, _, rest = a.line.partition("\n")
        first = _terse(_unrepeated(first, rest))
        if not first.startswith("`"):  # commands stay verbatim
            first = b.rel(first)
        tier = Tier.WORK if (a.failed or a.kind in ("write", "edit", "editor") or a.command) else Tier.DETAIL
        b.add("Completed Actions", f"{number}. {first}{times}" + (f"\n{rest}" if rest else ""), tier)
    # Blocked: only a failure the agent has not moved past (the last action failed). An earlier failure is in the
    # action list, and the latest action leads it (newest first): no line repeats one.
    if f.actions and f.actions[-1].failed:
        b.add(
            "Blocked", f"- the last action failed: {_terse(f.actions[-1].line.split(chr(10))[0])}", Tier.WORK
        )  # as its action line says it


def _state(b: _Items) -> None:
    f = b.facts
    for name in ("Key Decisions", "Resolved Questions", "Active State", "In Progress", "Blocked", "Remaining Work", "Pending User Asks"):
        b.carry(name, Tier.DETAIL)
    for d in f.decisions:
        if not any(said and d in said for said in (f.last_assistant, f.last_finding)):  # Active State says it already
            b.add("Key Decisions", f"- {d}", Tier.WORK)
    for q, answer in f.questions:
        if answer:
            b.add("Resolved Questions", f"- Q: {q} A: {answer}", Tier.WORK)
    _active_state(b)
    if f.plan:
        open_items = [ln for ln in f.plan if ln.startswith("- [") and "completed" not in ln[:16] and "done" not in ln[:10]]
        if open_items:  # In Progress quotes the plan whole (a tier before): pointed to, not repeated
            b.add(
                "Remaining Work",
                f"- the latest plan's {len(open_items)} open item{'s' if len(open_items) > 1 else ''} (In Progress)",
                Tier.WORK,
            )
    if _pending(f):
        b.add("Remaining Work", "- finish the pending asks above, then the Active Task", Tier.DETAIL)


def _active_state(b: _Items) -> None:
    """Where things stand: the agent's latest text; led by its latest finding when that text only says what comes
    next ("Next: ..."); its latest reasoning when it wrote no text in the span (Codex)."""
    f = b.facts
    if f.last_finding:  # the latest statement only says what comes next: the finding before it says where things stand
        b.add("Active State", token_cap(f.last_finding, b.counter, 300), Tier.WORK)
    if f.last_reasoning and not f.last_assistant:
        b.add("Active State", "(the agent's latest reasoning) " + f.last_reasoning, Tier.WORK)
    if f.last_assistant:
        lead = "Next: " if f.last_finding else ""
        b.add("Active State", lead + token_cap(f.last_assistant, b.counter, 600 if not lead else 200), Tier.WORK)


# A command that shows a description of work (`bd show spotter-dov`, `gh issue view 12`): the tool's words before
# the verb, and the item it names.
_SHOWN_ITEM = re.compile(r"((?:[\w.-]+ ){1,3}?)(?:show|view) +([\w][\w.#/+-]*)")
_SEGMENTS = re.compile(r"\s*(?:;|&&|\|\||\|)\s*")


def _closed(label: str, commands: list[tuple[str, int | None, bool]]) -> bool:
    """The item a description of work was shown for was closed by a command of the span that succeeded, with the same
    tool (`bd close spotter-dov`, `bd update spotter-dov --status done`, `gh issue close 12`; not `gh pr close 12`):
    no work remains of it."""
    m = _SHOWN_ITEM.search(label.strip("`"))
    if m is None:
        return False
    tool, item = re.escape(m.group(1).strip()), re.escape(m.group(2))
    end = r"(?![\w#/+-]|\.\w)"
    closes = re.compile(
        rf"(?:^|\s){tool} +(?:(?:close|done|resolve|complete)\b(?: +\S+)*? +{item}{end}|update +{item}{end}.*--status[= ](?:closed|done))"
    )
    return any(not failed and any(closes.search(seg) for seg in _SEGMENTS.split(cmd)) for cmd, _, failed in commands)


def _work_and_notes(b: _Items) -> None:
    f = b.facts
    # Outputs that described work (a ticket, a spec): the agent works through them after reading them.
    written = b.written()
    for label, doc in [d for d in f.documents if not _closed(d[0], f.commands)][-DOCUMENTS:]:
        doc = [n for n in doc if not shown(n, written)]
        if doc:
            b.add(
                "Remaining Work", f"- named by {b.rel(label)} (a description of work): " + NAMES_SEP.join(doc[:DOCUMENT_NAMES]), Tier.WORK
            )
    # In lines of a few, not one item: a long list (a pip log's versions and URLs) is kept as far as the room goes,
    # not dropped whole when it does not fit.
    for k in range(0, len(f.identifiers), NAMES_PER_LINE):
        # ", " here, not NAMES_SEP: an identifier may hold a space ("port 5432").
        b.add("Critical Context", "- identifiers: " + ", ".join(f.identifiers[k : k + NAMES_PER_LINE]), Tier.WORK)
    for note in f.notices[-5:]:
        b.add("Critical Context", "- harness note: " + cut(" ".join(MARKUP.sub(" ", note).split()), 300), Tier.DETAIL)


def _apply_focus(items: list[Item], focus: str | None) -> None:
    """`focus` promotes every item that mentions the topic to the first tier, and actions that do not
    below the rest."""
    if not focus:
        return
    words = [w.lower() for w in re.findall(r"\w+", focus) if len(w) > 2]
    for it in items:
        if it.tier <= Tier.ASK:
            continue
        low = it.text.lower()
        if words and any(w in low for w in words):
            it.tier = Tier.FIRST
        elif it.section == "Completed Actions":
            it.tier = Tier.AS_ROOM_ALLOWS


def summarize(facts: Facts, counter: Counter, budget: int, focus: str | None = None) -> str:
    b = _Items(facts, counter, budget)
    for build in (_asks, _constraints, _context, _actions, _state, _work_and_notes):
        build(b)
    _apply_focus(b.items, focus)
    # The identifier index: the vocabulary of the replaced turns, most used first, in its share of the room.
    # It lists only names the rest of the summary does not show: a first fit tells what that is. The second writes a
    # function's parameters beside its name where that costs about the tokens of its parentheses (fit.with_signatures).
    written = b.written()
    names = list(dict.fromkeys(b.rel(n) for n in facts.names if not shown(n, written)))
    if b.root:
        b.add("Critical Context", f"- project root: {b.root.rstrip('/')} (paths in actions and names are relative to it)", Tier.KEY)
    listed = set(names)  # the excerpts show what the index would list, not what the sections show
    excerpts = showing(facts.excerpts, listed, b.rel)
    text = fit(b.items, counter, budget, names, excerpts)
    carried = {it.text for it in b.items if it.text.startswith(INDEX_LINE)}  # an earlier summary's index lines
    rest = "\n".join(ln for ln in text.split("\n") if not ln.startswith(INDEX_LINE) or ln in carried)
    return fit(b.items, counter, budget, with_signatures([n for n in names if not shown(n, rest)], facts.signatures, counter), excerpts)
