"""The outline of a file an agent read with line numbers: which lines it showed and where each definition is.

A file read shows its lines numbered (Claude Code's Read `  12→code`, `cat -n` and `nl -ba`'s `    12\tcode`,
OpenHands' viewer, SWE-agent's `12:code`). When prune replaces such a read with a one-line digest, the digest says which lines the
read showed (`lines 1-776`: the file's length when it began at line 1) and lists the file's definitions with
their line ranges (`load_transcript 400-458`), so an agent that needs a part again can read just those lines,
and a later report can still cite them. Language-agnostic: a definition is a line starting with one of the
common keywords (def, class, function, fn, func, struct, describe/test blocks ...); it ends at the last
non-blank line before the next line indented as far or less that is not its closing `end` or bracket.

A leaf module: imports nothing from compactctl.
"""

from __future__ import annotations

import functools
import re

from .lean import dataclass

# "   12→code" (Claude Code), "    12\tcode" (cat -n, nl -ba, OpenHands) or "12:code" (SWE-agent's viewer): the
# number, then the line.
_NUMBERED = re.compile(r"^[ \t]*(\d{1,7})(?:→|\t|:)(.*)$")
_MIN_NUMBERED = 0.9  # of the non-blank lines, for a text to be a numbered read
_MIN_LINES = 3
_HEADER = 2  # lines before the first numbered one
_MAX_LINE = 400  # longer lines are no definition's first line (and the patterns need not look at them)

_MODIFIERS = r"(?:(?:export|default|public|private|protected|internal|static|async|pub(?:\([a-z]+\))?|override|abstract|final|inline|unsafe|extern|open|sealed|data)\s+)*"


@functools.cache
def _definition() -> re.Pattern[str]:
    """A definition's line (compiled on first use: ~3 ms, which a `compact` of a small file need not pay)."""
    return re.compile(
        # The modifiers atomically (a lookahead then its backreference): a line of them could be split between
        # them and a C type's words in every way (quadratic).
        r"^(?P<indent>[ \t]*)(?=(?P<mods>" + _MODIFIERS + r"))(?P=mods)(?:"
        r"(?:def|defp|defmacro|defmacrop|defmodule|defimpl|defprotocol|defdelegate|defguard|class|function\*?|fn|"
        r"interface|struct|enum|trait|impl|module|object|record|namespace|protocol|extension)\s+(?P<name>[A-Za-z_$][\w$.!?]*)"
        r"|func\s+(?:\([^)]*\)\s*)?(?P<goname>[A-Za-z_]\w*)"  # Go, with a receiver or not
        r"|(?:describe|test|it|context)\s*\(?\s*[\"'](?P<title>[^\"'\n]{3,60})[\"']"  # test blocks, by their title
        r"|(?!(?:return|new|else|case|throw|raise|assert|refute|await|yield|delete|del|goto|sizeof|typedef|not|import|"
        r"from|print|echo|call|go|defer|if|while|for|switch|when|match|change|catch|with|and|or|in|is|let|var)\b)"
        r"(?:[A-Za-z_][\w<>,*&\[\]]*(?:::[\w<>,*&\[\]]+)*\s+)+[*&]*(?P<cname>[A-Za-z_]\w*(?:::~?\w+)*)\s*\("  # C, C++,
        r"[^;]*\)\s*(?:const\s*)?(?:throws\s+[\w., ]+)?(?P<brace>\{)?\s*$"  # Java, C#: a type, name(args), then `{`
        r")"
    )


# Module-level bindings worth an outline entry: `const handle = (...) =>`, `type Props = {`.
_TOP = re.compile(r"^(?:export\s+)?(?:const|let|var|type)\s+(?P<name>[A-Za-z_$][\w$]*)\s*(?::[^=]*)?=")
# A definition's closing line, an opening brace on its own line, or a clause within it (`rescue`, `else:`): it goes on.
_CLOSER = re.compile(r"^\s*(?:(?:end|else|elif|elsif|except|catch|rescue|after|finally|ensure)\b|[{}\])]|\"\"\"|''')")


@dataclass(frozen=True, slots=True)
class Definition:
    """A definition in a numbered file read: its name and its first and last lines."""

    name: str
    start: int
    end: int
    args: str = ""  # what follows the name on its line: its parameters, "(path, opts \\ [])" (ARGS_CHARS at most)

    def __str__(self) -> str:
        lines = f"{self.start}" if self.end == self.start else f"{self.start}-{self.end}"
        return f"{self.name}{self.args} {lines}"

    def bare(self) -> Definition:
        """The definition without its parameters (what a digest followed by its excerpt, or one that fits its target
        only so, lists: prune_steps._Context.bare_digest)."""
        return Definition(self.name, self.start, self.end) if self.args else self


def numbered(text: str) -> list[tuple[int, str]] | None:
    """The (number, line) pairs of a numbered read, or None when the text is not one."""
    if not _looks_numbered(text):  # most outputs are told by their first lines
        return None
    return _numbered(text)


@functools.lru_cache(maxsize=32)  # a read is looked at by describe, its digest and names_in: parsed once
def _numbered(text: str) -> list[tuple[int, str]] | None:
    pairs: list[tuple[int, str]] = []
    other = pending = 0  # unnumbered lines between numbered ones (a header or a trailing reminder is no part)
    for raw in text.split("\n"):
        m = _NUMBERED.match(raw)
        if m is not None:
            pairs.append((int(m.group(1)), m.group(2)))
            other, pending = other + pending, 0
        elif raw.strip() and pairs:
            pending += 1
    if len(pairs) < _MIN_LINES or len(pairs) < _MIN_NUMBERED * (len(pairs) + other):
        return None
    # Numbers that climb by one (an unnumbered wrapped line aside): a read, not a list of counts.
    climbing = sum(1 for a, b in zip(pairs, pairs[1:], strict=False) if b[0] == a[0] + 1)
    return pairs if climbing >= _MIN_NUMBERED * (len(pairs) - 1) else None


_PREFIX = re.compile(r"^[ \t]*(\d{1,7})(?:→|\t|:)", re.M)  # a numbered line's number and its mark
_ARROW = re.compile(r"^[ \t]*\d{1,7}→", re.M)


def without_numbers(text: str) -> str:
    """`text` without the line numbers of a numbered read (they read as long numbers: "2561→" is no name); a
    table whose first column is a number (ids before a tab, times before a colon) keeps it."""
    if "→" in text:  # Claude Code's mark: a line number, whatever follows
        return _ARROW.sub("", text)
    if ("\t" in text or ":" in text) and numbered(text) is not None:
        return _PREFIX.sub("", text)
    return text


def without_runs(text: str) -> str:
    """`text` without the numbers of its runs of numbered lines that climb by one (_MIN_LINES or more): the
    reads inside a longer output (SWE-agent's linter refusing an edit shows the edit and the original under a
    header of its own; no numbered read as a whole). A scan of every line: for a text whose names say it holds one."""
    hits = [(m.start(1), m.end(1), int(m.group(1))) for m in _PREFIX.finditer(text)]
    if len(hits) < _MIN_LINES:
        return text
    cuts: list[tuple[int, int]] = []
    start = 0
    for k in range(1, len(hits) + 1):
        if k < len(hits) and hits[k][2] == hits[k - 1][2] + 1:
            continue
        if k - start >= _MIN_LINES:
            cuts += [(a, e) for a, e, _ in hits[start:k]]
        start = k
    if not cuts:
        return text
    out, at = [], 0
    for a, e in cuts:
        out.append(text[at:a])
        at = e
    out.append(text[at:])
    return "".join(out)


def _looks_numbered(text: str) -> bool:
    """Whether one of the first lines of `text` is a numbered line (a read may have a header line)."""
    head = text[:4096].lstrip("\n")  # a bounded look: outputs can be megabytes
    return any(_NUMBERED.match(ln) for ln in head.split("\n", _HEADER + 1)[: _HEADER + 1])


def shown(text: str) -> tuple[int, int] | None:
    """The first and last line numbers a numbered read showed."""
    pairs = numbered(text)
    return (pairs[0][0], pairs[-1][0]) if pairs else None


def definitions(text: str) -> list[Definition]:
    """The definitions of a numbered read, in file order, each with the lines it spans.

    One pass: a definition stays open until a non-blank line indented less than it, or as far and not a closer
    (`end`, `}`, `else`); it ends at the last non-blank line before that one."""
    pairs = numbered(text)
    if not pairs:
        return []
    definition = _definition()
    found: list[tuple[int, str]] = []  # (index in pairs, name), in file order
    end: list[int] = []  # index in pairs of each found definition's last line
    open_: list[tuple[int, int]] = []  # (indent, position in found) of the definitions still open, innermost last
    last = -1  # index of the latest non-blank line
    for k, (_, line) in enumerate(pairs):
        stripped = line.lstrip()
        if not stripped:
            continue
        at = _indent(line[: len(line) - len(stripped)])
        while open_ and (open_[-1][0] > at or (open_[-1][0] == at and not _CLOSER.match(line))):
            end[open_.pop()[1]] = last
        name = _name_at(pairs, k, at, definition)
        if name is not None:
            open_.append((at, len(found)))
            found.append((k, name))
            end.append(k)
        last = k
    for _, f in open_:
        end[f] = last
    out: list[Definition] = []
    for (k, name), e in zip(found, end, strict=True):
        d = Definition(name, pairs[k][0], pairs[e][0], _args(pairs[k][1], name))
        if out and out[-1].name == name:  # the clauses of one function (Elixir, Erlang, Haskell): one entry
            first = out.pop()  # (their parameters only when every clause has the same)
            d = Definition(name, first.start, d.end, first.args if first.args == d.args else "")
        out.append(d)
    return out


_DIFF_MARK = re.compile(r"^[+ -](?![+-])")  # a patch's line marker (not a `+++`/`---` header)


def defined_in(code: str) -> list[str]:
    """The names the lines of `code` (not numbered: what an agent writes, a patch's lines too) define, in order,
    each once: a function, class or module, a top-level `const`/`type` binding."""
    definition = _definition()
    pairs = list(enumerate((_DIFF_MARK.sub("", ln) for ln in code.split("\n")), 1))
    out: dict[str, None] = {}
    for k, (_, line) in enumerate(pairs):
        stripped = line.lstrip()
        if stripped and stripped[0].isalpha():
            name = _name_at(pairs, k, _indent(line[: len(line) - len(stripped)]), definition)
            if name is not None and " " not in name:  # (a test block's title is no name)
                out[name] = None
    return list(out)


# A binding at any depth of what an agent writes (a patch's `+  const showLoading = ...` too): a later edit names it again.
_BOUND = re.compile(r"^[+ ]?[ \t]*(?:export\s+)?(?:const|let|var)\s+(?P<name>[A-Za-z_$][\w$]*)\s*(?::[^=\n]*)?=", re.M)


def bound_in(code: str) -> list[str]:
    """The names `code` binds with `const`/`let`/`var` at any depth (inside functions too), in order, each once."""
    return list(dict.fromkeys(m.group("name") for m in _BOUND.finditer(code)))


def _name_at(pairs: list[tuple[int, str]], k: int, at: int, definition: re.Pattern[str]) -> str | None:
    """The name line pairs[k] (indented `at`) defines, or None."""
    line = pairs[k][1]
    m = definition.match(line) if len(line) <= _MAX_LINE else None
    if m is not None:
        name = m.group("name") or m.group("goname") or m.group("title")
        if name is None and (m.group("brace") or _brace_next(pairs, k)):  # a C function's body follows, not a call
            name = m.group("cname")
        return name
    t = _TOP.match(line) if at == 0 else None
    return t.group("name") if t is not None else None


ARGS_CHARS = 48  # a longer list is left out: a signature worth its tokens, not a line of code
_NO_ARGS = frozenset(("()", "( )", "(self)", "(cls)", "(&self)", "(&mut self)", "(this)"))  # they say nothing
_ARGS = re.compile(r"\((?:[^()\n]|\([^()\n]*\))*\)")  # a parenthesized list, one level of nested parentheses


def _args(line: str, name: str) -> str:
    """The parameter list right after `name` on its definition's line, whitespace folded, when it fits ARGS_CHARS."""
    at = line.find(name)
    m = _ARGS.match(line, at + len(name)) if at >= 0 else None
    if m is None:
        return ""
    args = " ".join(m.group().split())
    return args if len(args) <= ARGS_CHARS and args not in _NO_ARGS else ""


def _brace_next(pairs: list[tuple[int, str]], k: int) -> bool:
    """Whether the first non-blank line after pairs[k] opens a brace (a C function written Allman-style)."""
    nxt = next((line.strip() for _, line in pairs[k + 1 : k + 4] if line.strip()), "")
    return nxt.startswith("{")


def _indent(s: str) -> int:
    return len(s.expandtabs(4))


_LISTED = re.compile(r"([^\s(]+)(" + _ARGS.pattern + r")? \d+(?:-\d+)?(?= |$)")  # a name, its parameters, its lines


def listed(entries: str) -> list[str]:
    """The names of an outline as a digest lists it (`str` of each Definition, a space between them)."""
    return [m.group(1) for m in _LISTED.finditer(entries)]


def listed_parameters(entries: str) -> list[tuple[str, str]]:
    """(name, parameters) of each definition an outline lists with its parameters, as a digest lists them."""
    return [(m.group(1), m.group(2)) for m in _LISTED.finditer(entries) if m.group(2)]
