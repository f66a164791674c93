"""What each tool call did, in one line, with its outcome (`describe`): a describer per kind of tool
(tools.kind_of), a generic form for the rest. A failed call never reads like a success (outputs.outcome)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from . import outline
from .lean import dataclass
from .model import Message, ToolCall
from .outputs import EXIT_PATTERNS, Outcome, outcome, tally
from .redact import cut, redact
from .tools import command_of, files_of, first_str, kind_of, parse_args


def short(s: str, n: int = 80) -> str:
    """`s` on one line (its whitespace runs one space), at most `n` characters: cut with "…" when longer."""
    if "\n" in s:  # redacted while its lines are lines: a YAML passphrase's value ends with its line
        s = redact(s)
    s = " ".join(s.split())
    return s if len(s) <= n else cut(s, n - 1) + "…"


def describe(call: ToolCall, result: Message | None, out: Outcome | None = None, error_lines: int = 0) -> str:
    """One line: what the call did and how it ended; with `error_lines`, that many error lines of a
    failed call follow it verbatim, one per line."""
    out = out or outcome(result)
    line = _describe(call, result, out)
    if error_lines and out.error_lines and (out.failed or (out.exit_code not in (None, 0))):
        line += "".join(f"\n  {cut(e, 200)}" for e in out.error_lines[:error_lines])
    return line


@dataclass
class _Seen:
    """What every describer gets: the call, its parsed arguments, its outcome and the common pieces."""

    call: ToolCall
    result: Message | None
    out: Outcome
    args: dict[str, Any]
    tag: str
    size: str  # "N lines output" or "N chars output"
    err: str  # "" or " -> error..." or " -> no result recorded"


def _describe(call: ToolCall, result: Message | None, out: Outcome) -> str:
    size = f"{out.lines:,} lines output" if out.lines > 1 else f"{out.chars:,} chars output"
    err = f" -> error: {short(out.error_lines[0], 120)}" if out.failed and out.error_lines else (" -> error" if out.failed else "")
    if result is None:
        err = " -> no result recorded"
    seen = _Seen(call, result, out, parse_args(call), f"[{call.name}]", size, err)
    describer = DESCRIBERS.get(kind_of(call.name))
    line = describer(seen) if describer else None
    return line if line is not None else _describe_generic(seen)


# A command's or another call's output of one line this short is shown, not its size: a branch name (`git status -sb`:
# "## fix/x"), a count, a path, a sum (tau-bench's calculate: "23553.0") is what the agent uses next, in about the
# tokens "28 chars output" takes.
SHOWN_OUTPUT = 80


def _size_or_output(s: _Seen) -> str:
    """A successful command's one-line output of SHOWN_OUTPUT characters or fewer, its exit code's line apart
    (`output "## fix/x"`; never one redaction would change, nor one that reads as a line's own arrow), else its size."""
    if s.out.failed or s.out.exit_code not in (None, 0) or s.out.chars > SHOWN_OUTPUT + 40:
        return s.size
    said = [ln.strip() for ln in s.out.text.split("\n") if ln.strip() and not any(p.search(ln) for p in EXIT_PATTERNS)]
    if len(said) != 1 or len(said[0]) > SHOWN_OUTPUT or " -> " in said[0] or redact(said[0]) != said[0]:
        return s.size
    if _ASKS_SECRET.search(f"{s.call.name} {s.call.arguments}") or _SECRET_LIKE.fullmatch(said[0]) or not said[0].isprintable():
        return s.size  # what a call for a secret printed (`echo $DB_PASSWORD`, `cat ~/.pgpass`), a lone token-like word
    return f'output "{said[0]}"'


# A call that asks for a secret: its output is not shown, whatever redaction makes of the value alone.
_ASKS_SECRET = re.compile(r"pass(?:wd|word)?|secret|token|api[_-]?key|credential|private|\.netrc|\.env\b|printenv|\benv\b", re.I)
# One word that reads as a password or a key, not shown: 8 or more characters with a letter, a digit and a symbol
# other than a name's (`P@ssw0rd!2024`), or 24 or more mixing capitals, small letters and digits (a token).
_SECRET_LIKE = re.compile(r"(?=\S*[A-Za-z])(?=\S*\d)(?=\S*[^\w\s./:-])\S{8,}|(?=\S*[A-Z])(?=\S*[a-z])(?=\S*\d)[A-Za-z0-9+=_-]{24,}")


def _describe_shell(s: _Seen) -> str:
    cmd = f"`{short(command_of(s.call, s.args) or '?', 160)}`"
    tallied = tally(s.out.text)
    counted = f"; {short(tallied, 120)}" if tallied else ""  # a test run's tally: what a report of it says again
    if s.out.exit_code is not None:
        status = f"exit {s.out.exit_code}"
        if s.out.exit_code != 0 and s.out.error_lines:
            status += f": {short(s.out.error_lines[0], 120)}"
        return f"{s.tag} ran {cmd} -> {status}, {_size_or_output(s)}{counted}"
    if s.result is None:
        return f"{s.tag} ran {cmd}{s.err}"
    return f"{s.tag} ran {cmd}{s.err or ' -> ok'}, {_size_or_output(s)}{counted}"


def _describe_file(s: _Seen) -> str | None:
    files = files_of(s.call, result=s.result, args=s.args)
    if not files:
        return None
    action, path = files[0]
    verb = {"read": "read", "write": "wrote", "edit": "edited"}[action]
    extra = f" (+{len(files) - 1} more files)" if len(files) > 1 else ""
    where = ""
    off = s.args.get("offset", s.args.get("view_range", s.args.get("start_line")))
    lines = outline.shown(s.out.text) if action == "read" else None
    if lines is not None:  # a numbered read: the lines it showed (from 1: the file's length, or the read's limit)
        where = f" lines {lines[0]}-{lines[1]}"
    elif action == "read" and off not in (None, ""):
        where = f" from line {off[0] if isinstance(off, list) and off else off}"
    what = f" ({s.out.chars:,} chars)" if action == "read" else f" ({len(s.call.arguments):,} chars of arguments)"
    if lines is not None:
        what = ""  # the lines say the size
    return f"{s.tag} {verb} {path}{extra}{where}{what}{s.err}"


def _describe_search(s: _Seen) -> str:
    pat = first_str(s.args, "pattern", "query", "regex", "search_term", "glob", "file_name")
    scope = first_str(s.args, "path", "dir", "directory", "dir_path")
    n = s.out.lines if s.out.text.strip() else 0
    if pat is None and scope is not None:  # a listing (ls, list_directory): no pattern, nothing matched
        return f"{s.tag} listed {scope} -> {n:,} lines{s.err}"
    return f"{s.tag} searched `{short(pat or '?', 80)}`{' in ' + scope if scope else ''} -> {n:,} matching lines{s.err}"


def _describe_fetch(s: _Seen) -> str:
    url = first_str(s.args, "url", "urls", "ref", "element") or "?"
    return f"{s.tag} fetched {short(url, 120)} ({s.out.chars:,} chars){s.err}"


# The results a web search's line names: what the agent fetches next is most often the first of them.
SEARCH_RESULTS = 2
_RESULT_URL = re.compile(r"https?://[^\s\"'<>)\]},]+")


def _describe_websearch(s: _Seen) -> str:
    q = first_str(s.args, "query", "q") or "?"
    found = _RESULT_URL.findall(s.out.text) if not s.err and "://" in s.out.text else []
    urls = [u for u in dict.fromkeys(found) if redact(u) == u][:SEARCH_RESULTS]  # never one that holds a secret
    top = f" -> {' '.join(urls)}" if urls else ""
    return f"{s.tag} searched the web for `{short(q, 100)}` ({s.out.chars:,} chars){top}{s.err}"


def _describe_delegate(s: _Seen) -> str:
    d = first_str(s.args, "description", "goal", "prompt", "task") or "?"
    return f"{s.tag} delegated `{short(d, 100)}` -> {s.out.chars:,} chars back{s.err}"


def _describe_todo(s: _Seen) -> str:
    todos = s.args.get("todos") or s.args.get("plan") or []
    return f"{s.tag} updated the plan ({len(todos) if isinstance(todos, list) else '?'} items){s.err}"


def _describe_plan(s: _Seen) -> str:
    plan = first_str(s.args, "plan") or ""
    lines = [ln.strip() for ln in plan.split("\n") if ln.strip()]
    what = f" ({len(lines)} lines: {short(lines[0].lstrip('# '), 80)})" if lines else ""
    return f"{s.tag} proposed a plan{what}{s.err or ' -> approved'}"


def _describe_code(s: _Seen) -> str:
    """The cell's first line, as a shell call's command, and the files it names (files_of)."""
    code = first_str(s.args, "code", "source", "_raw") or ""
    tail = s.err if s.out.exit_code is None else ""
    lines = [ln for ln in code.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    what = f"`{short(lines[0], 120)}`" if lines else "code"
    if len(lines) > 1:
        what += f" (+{len(lines) - 1} line{'s' if len(lines) > 2 else ''})"
    files = [p for _, p in files_of(s.call, args=s.args) if not lines or p not in lines[0]]
    named = f" on {', '.join(files[:3])}{f' (+{len(files) - 3} more)' if len(files) > 3 else ''}" if files else ""
    return f"{s.tag} ran {what}{named} -> {s.out.status}, {s.size}{tail}"


def _describe_generic(s: _Seen) -> str:
    brief = ", ".join(f"{k}={short(str(v), 40)}" for k, v in list(s.args.items())[:3] if not k.startswith("_"))
    if not brief and "_raw" in s.args:
        brief = short(s.args["_raw"], 60)
    status = s.err or f" -> {s.out.status}"
    return f"{s.tag} called({short(brief, 140)}){status}, {_size_or_output(s)}"


# A describer per kind of tool (kind_of); None from a describer, or a kind not here: the generic form.
DESCRIBERS: dict[str, Callable[[_Seen], str | None]] = {
    "shell": _describe_shell,
    "read": _describe_file,
    "write": _describe_file,
    "edit": _describe_file,
    "editor": _describe_file,
    "search": _describe_search,
    "fetch": _describe_fetch,
    "websearch": _describe_websearch,
    "delegate": _describe_delegate,
    "todo": _describe_todo,
    "plan": _describe_plan,
    "code": _describe_code,
}
