"""The facts a summary must keep, extracted deterministically from a span of messages.

Used by the offline summarizer (to write the summary), by the LLM path (the retention guard), and
by `compactctl eval` (the probes). Identifiers are taken from what people and the agent wrote (user
and assistant text, tool-call arguments, error lines), not from every byte of tool output.
"""

from __future__ import annotations

import re
from dataclasses import field

from .. import outputs, refs, tools
from ..describe import describe, short
from ..harness import MARKUP, bare_command, human_text, is_boilerplate, is_cancelled, is_injected, working_directory
from ..lean import dataclass
from ..markers import DOC_NAMES_LINE, DUPLICATE, EXCERPT_LINE, NAMES_LINE, OUTLINE_LINE, QUOTED_LINE
from ..model import Message, ToolCall, is_output, is_summary
from ..names import is_task_document, literals_in, names_in
from ..pairs import match
from ..redact import cut, redact
from .constraints import constraint_sentences, sentences
from .vocabulary import Excerpt, excerpts, index_names, signatures

DECISION = re.compile(
    r"\b(?:I'll|I will|I'm going to|let's|we'll|decided|decision|instead(?: of)?|chose|choosing|going with|"
    r"the (?:fix|cause|root cause|problem|issue) (?:is|was)|root cause|will use|switch(?:ed|ing)? to|approach)\b",
    re.I,
)
# What makes a sentence of DECISION a decision, not the agent saying what it does next ("Let me check the tests.",
# "I'll read main.py."): a reason (because, instead, rather than, since, so that) or a choice (chose, decided, switch
# to, replace X with, the fix is, going with, will use).
_WHY_OR_WHICH = re.compile(
    r"\b(?:because|since|so (?:that|I|we|let's|both|it|they|the)|rather than|instead|in order to|to avoid|otherwise|due to|"
    r"given that|decided|decision|chose|choosing|choose|going with|go with|opt(?:ed|ing)? for|switch(?:ed|ing)? to|replac\w* .{1,80}? with|"
    r"the (?:fix|cause|root cause|problem|issue|solution) (?:is|was)|root cause|(?:will|I'll|we'll|let's) use|approach|prefer)\b",
    re.I,
)
_GOING_TO = re.compile(r"(?:(?:now|first|ok(?:ay)?|sure|great)[,!.]?\s+)?(?:let me|let's|I'll|I will|I'm going to)\b", re.I)
URL = re.compile(r"https?://[^\s<>\"'`)\]}${]+")  # up to a shell variable: "http://127.0.0.1:${PORT}/x" is no URL past it
HASH = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")
UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I)
PORT = re.compile(r"(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\]):(\d{2,5})\b|\bport\s+(\d{2,5})\b", re.I)
VERSION = re.compile(r"\bv?\d+\.\d+\.\d+(?:\.\d+)*(?:[-+][0-9A-Za-z.]+)?\b")  # an address (127.0.0.1) whole, not its 127.0.0


@dataclass
class Action:
    """A tool call of the span, as a line of the summary."""

    line: str  # the one-liner (error lines follow it for failed calls)
    failed: bool
    kind: str
    command: str | None = None
    exit_code: int | None = None
    files: list[tuple[str, str]] = field(default_factory=list)
    answered: bool = True  # a result came back (an interrupted call has none: it succeeded at nothing)


@dataclass
class Facts:
    """What the summarized span holds, sorted into what the summary's sections need."""

    first_request: str | None = None
    last_request: str | None = None  # the latest user message of the whole transcript, verbatim
    last_request_verbatim: bool = False  # not in the kept turns: the summary carries all of it (else it points to it)
    first_request_kept: bool = False  # the message that holds first_request is kept verbatim (in the head or tail)
    last_request_harness: bool = False  # no message holds the person's words: last_request is the harness's text
    # The person's latest answer to the agent's questions (Claude Code's AskUserQuestion): the index of the message that
    # asked, and "question -> answer"; the Active Task when it came after the person's last typed ask (summarize.py).
    latest_answer: tuple[int, str] | None = None
    requests: list[str] = field(default_factory=list)  # user messages in the span
    constraints: list[str] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    files: dict[str, set[str]] = field(default_factory=dict)  # path -> {"read", "write", "edit", "shell-read", "edit-failed" ...}
    commands: list[tuple[str, int | None, bool]] = field(default_factory=list)  # (command, exit code, failed)
    errors: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    questions: list[tuple[str, str | None]] = field(default_factory=list)  # (question, answer)
    pending: list[str] = field(default_factory=list)
    identifiers: list[str] = field(default_factory=list)
    last_assistant: str | None = None  # the agent's latest statement in the span
    # The latest statement that says something (a finding, a result) when the latest only says what comes next
    # ("Let me read the relevant files:"): where things stand is in it.
    last_finding: str | None = None
    # The agent's latest reasoning (Codex's summaries: "**Searching for issue queries**"), cut: where things stand when
    # it wrote no text in the span.
    last_reasoning: str | None = None
    prior_summary: str | None = None
    plan: list[str] = field(default_factory=list)  # the latest todo / plan of the span, one line per item, verbatim
    notices: list[str] = field(default_factory=list)  # what the harness said (task notifications, hook output): facts, not asks
    names: list[str] = field(default_factory=list)  # the span's vocabulary, most used and most recent first, then its quoted phrases
    excerpts: list[Excerpt] = field(default_factory=list)  # lines of the span (a digest's quoted lines too) that show its names
    signatures: dict[str, str] = field(default_factory=dict)  # a function of the span's file reads -> its parameters
    documents: list[tuple[str, list[str]]] = field(default_factory=list)  # (what showed it, its names): outputs that describe work
    cwd: str | None = None  # the session's working directory as the harness last stated it (Codex's `<cwd>`)


# Markup says nothing: a short element is a label ("<option>Review or explain code</option>": a choice offered).
_ELEMENT = re.compile(r"<([A-Za-z][\w-]*)>[^<\n]{0,80}</\1>")
_TAG = re.compile(r"</?[A-Za-z][\w-]*>")
REASONING_CHARS = 300  # of the latest reasoning, when it stands for the Active State
# Under this many characters a sentence says no finding ("Good.", "Perfect!", "Found it.").
FINDING_CHARS = 20


def says_something(said: list[str]) -> bool:
    """One of the sentences says something beyond what the agent does next: not "Let me ..." or a line that
    introduces the call after it ("Now the tests:"), nor a word of assent."""
    said = [_TAG.sub("", _ELEMENT.sub("", s)).strip() for s in said] if any("<" in s for s in said) else said
    return any(len(s) >= FINDING_CHARS and not _narration(s) for s in said)


# Words of courtesy: a sentence of only these answers nothing ("Of course!", "Certainly!", "Sure, I can help with that!",
# "I'm sorry to hear that.").
_COURTESY = re.compile(
    r"\b(?:of course|certainly|sure(?: thing)?|absolutely|great|no problem|thank you|thanks|you're welcome|"
    r"(?:I(?:'d| would) be )?(?:happy|glad) to help(?: you)?|I can (?:help|assist|check(?: that| this)?)(?: you)?"
    r"(?: with (?:that|this))?(?: for you)?|(?:I'm|I am) sorry(?: to hear that)?|sorry|"
    r"I apologi[sz]e(?: for (?:the|any|my) (?:confusion|inconvenience|oversight|error|mistake))?|apologies|"
    r"understood|got it|alright|all right|okay|ok|perfect|excellent|hello|hi)\b",
    re.I,
)


def _courtesy(s: str) -> bool:
    """Whether a sentence is only courtesy (_COURTESY): no answer to a question."""
    return re.search(r"\w", _COURTESY.sub("", s)) is None


def _narration(s: str) -> bool:
    """The agent saying what it does next ("Let me trace the code.", "Now the tests:"), not what it found."""
    return s.endswith(":") or _GOING_TO.match(s) is not None


def identifiers_in(text: str) -> list[str]:
    """URLs, UUIDs, hashes, ports and versions in `text`; an archive reference (`[ref 49601d51]`, which prune puts
    in what it cut) is none."""
    text = refs.without(text)
    found = []
    for rx in (URL, UUID):
        found += [m.group(0).rstrip(".,;:") for m in rx.finditer(text)]
    uuids = set(found)
    found += [h for h in (m.group(0) for m in HASH.finditer(text)) if not any(h in u for u in uuids)]
    found += [f"port {m.group(1) or m.group(2)}" for m in PORT.finditer(text)]
    found += [m.group(0) for m in VERSION.finditer(text)]
    return found


def _add(seq: list, item, seen: set) -> None:
    if item not in seen:
        seen.add(item)
        seq.append(item)


# A message of only these words greets or acknowledges: no goal ("Hey", "thanks!", "ok").
_SMALL_TALK = frozenset("hey hi hello hallo hola bonjour yo howdy sup good morning there thanks thank you ok okay".split())


def is_small_talk(text: str) -> bool:
    """Whether a user message only greets or acknowledges ("Hey", "Thanks!"): the session's goal is the next ask."""
    words = re.findall(r"[^\W\d_]+", text.lower())
    return 0 < len(words) <= 3 and all(w in _SMALL_TALK for w in words)


def request_text(m: Message) -> str:
    """The person's words in a user message ('' for what the harness wrote)."""
    return human_text(m)


PLAN_LINES = 40  # of a plan written as text (Claude Code's ExitPlanMode), kept verbatim at most


def plan_lines(call: ToolCall) -> list[str]:
    """A todo / plan call's items, verbatim, one line each ("- [status] text"); a plan written as text, its first
    PLAN_LINES non-blank lines."""
    args = tools.parse_args(call)
    items = args.get("todos") or args.get("plan") or args.get("items") or []
    if isinstance(items, str):
        return _text_plan(items)
    out = []
    if isinstance(args.get("explanation"), str) and args["explanation"].strip():
        out.append(args["explanation"].strip())
    for it in items if isinstance(items, list) else []:
        if isinstance(it, dict):
            text = it.get("content") or it.get("step") or it.get("title") or it.get("text") or it.get("description") or ""
            status = it.get("status") or ""
            out.append(f"- [{status}] {text}" if status else f"- {text}")
        elif isinstance(it, str):
            out.append(f"- {it}")
    return out


def _text_plan(text: str) -> list[str]:
    """A plan written as text: its first PLAN_LINES non-blank lines, verbatim (each cut to 300 characters)."""
    lines = [cut(ln.rstrip(), 300) for ln in text.split("\n") if ln.strip()]
    return lines[:PLAN_LINES] + ([f"(+{len(lines) - PLAN_LINES} more lines)"] if len(lines) > PLAN_LINES else [])


def document_names(result: Message | None) -> list[str]:
    """The names of an output that describes work (its prune digest's list, or found in it), in order."""
    if result is None or not is_output(result):
        return []
    text = result.text()
    for ln in text.split("\n"):
        if ln.startswith(DOC_NAMES_LINE):
            # A name never holds a space nor a comma: a line written with either separator (an older compaction's ", ") reads alike.
            return refs.without(ln[len(DOC_NAMES_LINE) :]).replace(",", " ").split()
    return names_in(text) if is_task_document(text) else []


FAILED_VERB = "-failed"  # Facts.files: "edit-failed", a file an edit or write was tried on and failed
DIGEST_FAILED = " -> error"  # how a digest's line (describe.describe) says its call failed


def action_for(call: ToolCall, result: Message | None, cwd: str | None = None, opened: str | None = None) -> Action:
    """The action of a call and its result; an output prune digested keeps its reference (`[ref ...]`, see
    refs.py) on the action's line, so the item points at what `recall` gives back. (Outputs summarized whole
    are not cited one by one: the summary's last line names the span's reference; per-item citations there
    cost 5 points of the probe eval in tokens.) `opened`: the file SWE-agent's editor had open, for an edit that names
    none whose result no longer says (a digest)."""
    text = result.text() if result is not None else ""
    if text.startswith(DUPLICATE):
        text = text[len(DUPLICATE) :].strip()
    if result is not None and text.startswith(f"[{call.name}] "):
        line = _digest_line(text)
        out = outputs.outcome(result)
        said_failed = DIGEST_FAILED in line.split("\n", 1)[0]  # a SWE-agent observation has no is_error flag to keep
    else:
        out = outputs.outcome(result)
        line = describe(call, result, out, error_lines=3)
        said_failed = False
    line = _with_workdir(line, call, cwd)
    failed = out.failed or out.exit_code not in (None, 0) or said_failed
    files = tools.files_of(call, cwd, result)
    if not files and opened and tools.is_open_file_edit(call):
        files = [("edit", opened)]
    if failed:  # a failed read showed no file (not there, a directory); a failed edit or write changed none: it says so
        files = [(a + FAILED_VERB, p) for a, p in files if a != "read"]
    else:  # (a shell command that failed printed no file, or not the one named: `sed -n 1,80p missing.ts`, exit 1)
        files += tools.shell_reads(call, cwd)
        line = _with_strings(line, call, files)
    kind = "write" if tools.changes_state(call.name) else tools.kind_of(call.name)  # ranked as a write (offline's tiers)
    return Action(line, failed, kind, tools.command_of(call), out.exit_code, files, answered=result is not None)


def _opened(c: ToolCall, a: Action) -> str | None:
    """The file a SWE-agent action opened in its editor (`open`, `create`: the file read or written), or None."""
    if not (c.extra.get(tools.SWE_AGENT) or c.name.lower() in ("open", "create")):
        return None
    return next((p for act, p in a.files if act in ("read", "write")), None)


_DIGEST_PARTS = (NAMES_LINE, DOC_NAMES_LINE, OUTLINE_LINE, QUOTED_LINE)  # a digest's lines its action line leaves out


def _digest_line(text: str) -> str:
    """An output prune already digested, as an action's line: its line and error lines, a file read's outline on the
    first (where each definition is: what a report cites, what a re-read takes), its reference last; its names go
    to the identifier index."""
    lines = text.split("\n")
    shown = next((k for k, ln in enumerate(lines) if ln.startswith(EXCERPT_LINE)), None)
    lines = lines[:shown]  # what follows is the output's first lines (an excerpt), not the digest
    kept = [ln for ln in lines if not ln.startswith(_DIGEST_PARTS)]
    if not kept:
        return ""
    outlined = next((ln for ln in lines if ln.startswith(OUTLINE_LINE)), None)
    if outlined:
        kept[0] += "; outline: " + " ".join(refs.without(outlined[len(OUTLINE_LINE) :]).split())
    cited = [r for ln in lines if ln.startswith(_DIGEST_PARTS) for r in refs.found(ln)]
    kept[0] += "".join(f" {refs.mark(r)}" for r in cited)  # (it stood at the end of its names, outline or quoted line)
    return "\n".join(kept)


WRITTEN_STRINGS = 4  # quoted phrases of written code an action line keeps


def _with_strings(line: str, call: ToolCall, files: list[tuple[str, str]]) -> str:
    """A write or edit's line, with the first quoted phrases its code says (a message, a label: `strings: "Team not
    found"`), never one redaction would change: what a later test, log or report quotes again."""
    if not any(a in ("write", "edit") for a, _ in files):
        return line
    text = tools.argument_text(call)
    found = [q for q in literals_in(text) if redact(q) == q][:WRITTEN_STRINGS] if '"' in text or "'" in text else []
    if not found:
        return line
    first, nl, rest = line.partition("\n")
    return f"{first} strings: {' '.join(found)}{nl}{rest}"


# An error line shorter than this says where it happened (the file or command that failed) when it names neither.
PLACED_BELOW = 100


WHERE_CHARS = 60  # of the command an error line says it came from


def _where(a: Action, files: list[tuple[str, str]]) -> str:
    """What an action ran or touched, said short: its command on one line ("…" where it was cut), else its first
    file."""
    return f"`{short(a.command, WHERE_CHARS)}`" if a.command else files[0][1] if files else ""


# How an error line says that a later action did again what failed, and succeeded (the error is behind the agent).
RESOLVED = " (resolved later: "
_RESOLVED_BY = {
    "command": "the same command succeeded)",
    "file": "a later edit of the file succeeded)",
    "plan": "a later plan was approved)",
}


def unresolved(error: str) -> str:
    """An error line of Facts.errors without its mark of being resolved (what the error itself said)."""
    return error.split(RESOLVED, 1)[0]


def _redone(a: Action) -> set[tuple[str, str]]:
    """What a later success must have done again to resolve a failure of `a`: run its command, edit or write one of
    its files, put a plan to the person again (ExitPlanMode turned down, then approved)."""
    keys = {("command", " ".join(a.command.split()))} if a.command else set()
    keys |= {("file", p) for act, p in a.files if act.removesuffix(FAILED_VERB) in ("write", "edit")}
    return keys | ({("plan", "")} if a.kind == "plan" else set())


def _open_first(errors: list[str], actions: list[Action], failed_at: dict[str, int]) -> list[str]:
    """The error lines, those no later action resolved first; a resolved one (the same command run again, a later
    edit of the file, a plan approved after one was turned down, and it succeeded) says so, after them."""
    open_, resolved = [], []
    for e in errors:
        at = failed_at.get(e, len(actions))
        wanted = _redone(actions[at]) if at < len(actions) else set()
        how = next((k for a in actions[at + 1 :] if not a.failed and a.answered for k, _ in sorted(wanted & _redone(a))), None)
        if how is None:
            open_.append(e)
        else:
            resolved.append(e + RESOLVED + _RESOLVED_BY[how])
    return open_ + resolved


def _placed(error: str, where: str) -> str:
    """A short error line that names no path, with what failed (`where`: "File does not exist. (/app/conn_case.ex)"):
    in Critical Context it stands apart from its action's line, which a small summary may leave out."""
    if not where or len(error) >= PLACED_BELOW or "/" in error:  # (a path in it says where)
        return error
    return f"{error} ({where})"


def _with_workdir(line: str, call: ToolCall, cwd: str | None) -> str:
    """A shell command run in a directory of its own (Codex's `workdir`, not the session's) says where: its paths are
    relative to it ("`sed -n '1,160p' createService.ts` (in packages/services/src) -> exit 0, 161 lines")."""
    if tools.kind_of(call.name) != "shell" or "` -> " not in line:
        return line
    workdir = tools.workdir_of(call)
    if not workdir or workdir == cwd:
        return line
    if cwd and workdir.startswith(cwd.rstrip("/") + "/"):
        workdir = workdir[len(cwd.rstrip("/")) + 1 :]
    # After the command as the line shows it, which may hold "` -> " itself; one shown cut or redacted: the first.
    shown = " ".join((tools.command_of(call) or "").split())
    at = line.find(f"`{shown}` -> ")
    at = at + len(shown) + 1 if at >= 0 else line.index("` -> ")
    return f"{line[:at]}` (in {workdir}){line[at + 1 :]}"


class _Extractor:
    """Fills a Facts message by message; each list is kept free of repeats (the `_seen` sets)."""

    def __init__(self, f: Facts) -> None:
        self.f = f
        self._seen: dict[str, set] = {"constraints": set(), "errors": set(), "decisions": set(), "identifiers": set()}
        self.cwd: str | None = None  # the session's working directory as the harness last stated it
        self.opened: str | None = None  # the file SWE-agent's editor has open (its `edit` names none)
        self.finding: str | None = None  # the agent's latest text that says something (says_something)
        self.open_question: int | None = None  # the index in Facts.questions of the latest message's questions, unanswered
        self.asked_at: dict[int, int] = {}  # an index in Facts.questions -> the message that asked it
        self.at = 0  # the index of the assistant message whose calls are read
        self.failed_at: dict[str, int] = {}  # an error line -> the index in Facts.actions of the latest action that gave it

    def keep(self, field_name: str, item: str) -> None:
        _add(getattr(self.f, field_name), item, self._seen[field_name])

    def idents(self, text: str) -> None:
        for ident in identifiers_in(text):
            self.keep("identifiers", ident)

    def user(self, m: Message, i: int = 0) -> None:
        """User message i (`m`): the person's ask, its rules, its questions (all of one message one question: one
        answer), its identifiers; what the harness wrote, a notice and its rules."""
        f = self.f
        text = request_text(m)
        if not text:
            said = m.text()
            if is_injected(m) and said.strip() and not is_boilerplate(said):
                said = outputs.ANSI.sub("", said) if "\x1b" in said else said  # hook output in a terminal's colours
                said = MARKUP.sub(" ", said)
                if said.strip() and not bare_command(m.text()):  # `/clear` with nothing after it says nothing
                    f.notices.append(said.strip())
                for s in constraint_sentences(said):  # rules the harness set (skills, reminders) still bind
                    self.keep("constraints", s)
            return
        f.requests.append(text)
        self.finding = f.last_finding = None  # what the agent found before this ask is not where things stand now
        if f.first_request is None and not is_small_talk(text):
            f.first_request = text
        for s in constraint_sentences(text):
            self.keep("constraints", s)
        asked = [s for s in sentences(text) if s.endswith(("?", "？")) and len(s) < 400]
        if asked:
            self.open_question = len(f.questions)
            self.asked_at[self.open_question] = i
            f.questions.append((cut(" ".join(asked), 400), None))
        self.idents(text)

    def assistant(self, m: Message, i: int, messages: list[Message], result_of: dict) -> bool:
        """Assistant message i (`m`): its reasoning, text, calls and text action. True when it answered without
        calling anything (a final reply)."""
        text = m.text().strip()
        nxt = messages[i + 1] if i + 1 < len(messages) and messages[i + 1].observation else None
        action = tools.text_action_call(m, answered=nxt is not None)
        if m.reasoning and m.reasoning.strip():
            self.f.last_reasoning = cut(" ".join(m.reasoning.replace("**", "").split()), REASONING_CHARS)
        if text:
            self.assistant_text(text)
        self.at = i
        for pos, c in enumerate(m.tool_calls):
            self.call(c, result_of.get((i, pos)))
        if action is not None:
            self.call(action, nxt)
        return bool(text) and not m.tool_calls and action is None

    def assistant_text(self, text: str) -> None:
        f = self.f
        said = sentences(text)
        if says_something(said):
            self.finding, f.last_finding = text, None
        else:
            f.last_finding = self.finding
        f.last_assistant = text
        # The answer is the first sentence that is not the agent saying what it does next ("Let me trace the code:"),
        # nor a courtesy ("Of course!", "Sure, I can help with that!"); it answers the latest questions asked, only them.
        answer = next((s for s in said if len(s) > 3 and not _narration(s) and not _courtesy(s)), None)  # not "1."
        if answer is not None and self.open_question is not None:
            f.questions[self.open_question] = (f.questions[self.open_question][0], cut(answer, 300))
            self.open_question = None
        self.decisions(said)
        self.idents(text)

    def decisions(self, said: list[str]) -> None:
        """The agent's sentences (its text, or a think call's thought) that state a decision: with its reason or the
        choice it made (_WHY_OR_WHICH), not only what the agent does next."""
        for s in said:
            if 12 <= len(s) <= 300 and DECISION.search(s) and _WHY_OR_WHICH.search(s):
                self.keep("decisions", s)

    def call(self, c: ToolCall, result: Message | None) -> None:
        f = self.f
        kind = tools.kind_of(c.name)
        if kind == "todo" or kind == "plan" and not outputs.outcome(result).failed:  # a plan the person turned down is no plan
            f.plan = plan_lines(c) or f.plan
        elif self._not_an_action(kind, c, result):
            return
        a = action_for(c, result, self.cwd, self.opened)
        self.opened = tools.open_file(result) or _opened(c, a) or self.opened
        f.actions.append(a)
        doc = document_names(result)
        if doc:
            label = f"`{a.command}`" if a.command else a.line.split(" (")[0].split("\n")[0]
            f.documents = [d for d in f.documents if d[0] != label] + [(label, doc)]  # shown again: the latest showing
        for action, path in a.files:
            f.files.setdefault(path, set()).add(action)
        if a.command:
            f.commands.append((a.command, a.exit_code, a.failed))
        self.idents(a.command or c.arguments[:2000])
        if a.failed:
            where = _where(a, tools.files_of(c, self.cwd))
            for e in a.line.split("\n")[1:]:
                e = " ".join(refs.without(e).split())  # the same error from two outputs is one (their refs differ); "E   x": "E x"
                if is_cancelled(e):
                    continue
                placed = _placed(e, where)
                self.keep("errors", placed)
                self.failed_at[placed] = len(f.actions) - 1
                self.idents(e)

    def _not_an_action(self, kind: str, c: ToolCall, result: Message | None) -> bool:
        """A call that is words, read as such: the person's answers to the agent's questions (Claude Code's
        AskUserQuestion result) are resolved questions; a think call (Anthropic's think tool, OpenHands') is the agent's
        reasoning, whose decisions count. True when `c` was read so (it is then no action)."""
        answered = outputs.answers(result) if kind == "ask" else []
        if answered:
            for question, answer in answered:
                self.f.questions.append((cut(question, 300), cut(answer, 300)))
                self.idents(answer)
            said = "; ".join(f"{cut(q, 200)} -> {cut(a, 300)}" for q, a in answered)
            self.f.latest_answer = (self.at, said)
            return True
        thought = tools.parse_args(c).get("thought") if kind == "think" else None
        if not isinstance(thought, str) or not thought.strip():
            return False
        self.decisions(sentences(thought))
        self.idents(thought)
        return True


def extract(
    messages: list[Message], start: int = 0, end: int | None = None, last_request: str | None = None, prior: int | None = None
) -> Facts:
    """Facts of messages[start:end]; `last_request` is the latest user message of the whole transcript; `prior`
    the index of an earlier summary outside the span that the new summary replaces (its names are removed too)."""
    end = len(messages) if end is None else end
    f = Facts(last_request=last_request)
    ex = _Extractor(f)
    span = messages[start:end]
    pairs, _ = match(messages)
    result_of = {(p.call_msg, p.call_pos): messages[p.result] for p in pairs}
    last_final = -1  # index of the latest assistant message that answered without calling tools
    ex.cwd = next(filter(None, map(working_directory, reversed(messages[:start]))), None)
    for i, m in enumerate(span, start):
        if is_summary(m):
            f.prior_summary = m.text()
        elif m.role == "user":
            ex.cwd = working_directory(m) or ex.cwd
            if not m.observation:  # an observation is the output of the text action before it (below)
                ex.user(m, i)
        elif m.role == "assistant" and ex.assistant(m, i, messages, result_of):
            last_final = i
    f.names = index_names(messages, start, end, prior)
    f.excerpts = excerpts(messages[start:end], f.names)
    f.signatures = signatures(messages[start:end])
    f.cwd = ex.cwd
    f.errors = _open_first(f.errors, f.actions, ex.failed_at)
    # Asks not yet answered by a final assistant reply; their questions are not resolved (a reply that went on to call
    # tools answered them at most in passing: "Of course. I'll start by reviewing the codebase").
    pending_from = max(last_final + 1, start)
    for k in range(pending_from, end):
        m = messages[k]
        if m.role == "user" and not is_summary(m) and request_text(m):
            f.pending.append(request_text(m))
    f.questions = [qa for q, qa in enumerate(f.questions) if ex.asked_at.get(q, -1) < pending_from]
    return f
