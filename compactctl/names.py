"""The vocabulary of a session: the names in a text that an agent reuses.

Paths, code identifiers (snake_case, camelCase, PascalCase, kebab-case, dotted.names, CONSTANTS), URLs and
distinctive values (versions, hashes, long numbers). Used by prune (the names a cut output or
argument keeps) and by the offline summarizer (the identifier index of what the summary replaced).
"""

from __future__ import annotations

import heapq
import re
from collections import Counter
from collections.abc import Callable, Iterator
from itertools import islice, repeat

from .outline import without_numbers, without_runs
from .redact import redact

_NAME = re.compile(
    r"https?://[^\s<>\"'`)\]}]+"  # URLs
    r"|(?<![\w@.+~/-])(?:~|\.{1,2})?/?(?:[\w@.+-]+/)+[\w@.+-]+"  # paths with a slash (tried at a token's start only)
    r"|\b[\w-]+(?:\.[\w-]+)*\.(?:py|pyi|ts|tsx|js|jsx|mjs|cjs|ex|exs|heex|eex|rs|go|rb|java|kt|c|h|cc|cpp|hpp|cs|swift|php|md|json|jsonl|ya?ml|toml|"
    r"ini|cfg|sql|sh|css|scss|html|vue|svelte|lock|txt|env|xml|proto|gradle|dart|lua|zig)\b(?!\.\w)"  # file names (my-app.html.heex: whole)
    r"|\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\b"  # dotted.names
    r"|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b|\b_+[a-z0-9][a-z0-9_]*\b"  # snake_case (a run of underscores is no name)
    r"|\b[a-z]+(?:[A-Z][a-z0-9]*)+\b"  # camelCase
    r"|(?<![\w-])[a-z][a-z0-9]*(?:-[a-z0-9]+)+(?![\w-])"  # kebab-case
    r"|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b"  # PascalCase with two humps or more
    r"|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b"  # CONSTANTS
    r"|\bv?\d+\.\d+\.\d+(?:\.\d+)*(?:[-+][0-9A-Za-z.]+)?\b"  # versions, addresses (127.0.0.1 whole)
    r"|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b"  # hashes
    r"|\b\d{4,}\b"  # long numbers (ports, ids, counts)
)
# Dotted matches that are only prose ("e.g", "i.e") or a sentence's last word and the next one.
_SKIP = {"e.g", "i.e", "etc", "vs"}
# "open/closed", "URL/port": two words and one slash, prose rather than a path (no dot, no leading / ~ .).
_PROSE_PAIR = re.compile(r"[A-Za-z][A-Za-z-]*/[A-Za-z][A-Za-z-]*$")
# A file mode as `ls -l` prints it ("drwxrwxr-x" reads as kebab-case): never a name the agent reuses.
_MODE = re.compile(r"[dlcbps-]?[rwxsStT-]{9}[.+@]?$")


# Names never hold these characters: a text is first split on them (str.replace and str.split, faster than
# a regex pass), then each distinct token is searched once with `_NAME` (cached) (tokens repeat a lot: a session has
# a few thousand distinct ones). Tokens shorter than 3 characters name nothing (a name has 3 or more).
_SEPARATORS = "\"'`<>()[]{},;|*\\"  # and whitespace (str.split's: the same Unicode set as the regex \s)
# A colon is in no name but a URL's: a text without "://" is split on it too, which leaves the same names (no
# match spans it, and every look-around at its place sees the same as at a token's edge) and far fewer distinct
# tokens to search ("src/app.py:12:5:", "tests/test_x.py::test_y" are the cached "src/app.py", "test_y" ...).
_SEPARATORS_NO_URL = _SEPARATORS + ":"
_ESCAPES = ("\\n", "\\r", "\\t")  # the two characters backslash and n, as JSON inside a text shows them
_CACHE: dict[str, tuple[str, ...]] = {}
_CACHE_MAX = 200_000


def _names_of_token(tok: str) -> tuple[str, ...]:
    found = _CACHE.get(tok)
    if found is None:
        found = tuple(
            s
            for s in (m.group(0).rstrip(".,;:") for m in _NAME.finditer(tok))
            if len(s) >= 3 and s.lower() not in _SKIP and not _PROSE_PAIR.match(s) and not _MODE.match(s)
        )
        if found and len(tok) >= SECRET_TOKEN_MIN:
            found = _outside_secrets(tok, found)
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[tok] = found
    return found


# A token this long may be a secret that redaction knows whole (a Slack, GitLab or SendGrid token, an AWS secret
# key), whose names are its pieces (split at its - . / + ~): alone, no rule knows a piece, so a digest or the summary's
# index that listed it would hold part of a secret that no later redaction recognizes.
SECRET_TOKEN_MIN = 20


def _outside_secrets(tok: str, found: tuple[str, ...]) -> tuple[str, ...]:
    """The names of token `tok` that redaction leaves in it (all of them, for most tokens)."""
    clean = redact(tok)
    return found if clean == tok else tuple(s for s in found if s in clean)


# A line of `ls -l`: mode, links, owner, group, size, date ("-rw-r--r--@ 1 me staff 6148 Oct 20 14:55 .DS_Store").
_LISTED = re.compile(
    r"^[dlcbps-][rwxsStT-]{9}[.+@]?\s+\d+\s+\S+\s+\S+\s+[\d,.]+[KMGTP]?\s+\w{3}\s+\d{1,2}\s+(?:\d{1,2}:\d{2}|\d{4})\s+", re.M
)


def names_in(text: str) -> list[str]:
    """The names in `text`, in order of first appearance, each once. Line numbers are no names: those of a
    numbered read, and those of the reads inside a longer output, which its names show (numbers that climb by one);
    nor are the sizes and dates of an `ls -l` listing (its file names are)."""
    if "r-" in text:  # in every mode (rw-, r-x, r--): one scan
        text = _LISTED.sub("", text)
    text = without_numbers(text)
    found = _names(text)
    if _climbing(found):
        again = without_runs(text)
        if again is not text:
            found = _names(again)
    return found


def _climbing(names: list[str]) -> bool:
    """Whether `names` holds a run of numbers that climb by one (line numbers, as a numbered read shows them)."""
    prev, run = -2, 0
    for n in names:
        if len(n) <= 7 and n.isdecimal():  # a line number has 7 digits at most (a 5,000-digit one is no int() to take)
            v = int(n)
            run = run + 1 if v == prev + 1 else 1
            if run >= 3:
                return True
            prev = v
    return False


def _names(text: str) -> list[str]:
    if "\\" in text:  # escaped text inside a text (JSON in a tool output): `\n` ends a name, it does not start one with "n"
        for esc in _ESCAPES:
            if esc in text:
                text = text.replace(esc, " ")
        if "\\/" in text:  # JSON's escaped slash: a path's, or a secret's that redaction knows whole only as one token
            text = text.replace("\\/", "/")
    for c in _SEPARATORS if "://" in text or ":AA" in text else _SEPARATORS_NO_URL:  # (:AA: a Telegram bot token's, whole)
        if c in text:
            text = text.replace(c, " ")
    out: dict[str, None] = {}
    get = _CACHE.get
    # Every token in turn, repeats too (`out` keeps each name once, in the same order): deduplicating the
    # tokens first (dict.fromkeys) costs more than it saves (names_in 12-19% slower on the corpus's and the bench's texts).
    for tok in text.split():
        found = get(tok)
        if found is None:
            if len(tok) < 3:  # names nothing; not cached (the cache is for the tokens worth a regex search)
                continue
            found = _names_of_token(tok)
        if found:  # most tokens are plain words and name nothing
            for s in found:
                out[s] = None
    return list(out)


def count_names(texts) -> Counter:
    """How many of the texts name each name (a text counts a name once)."""
    c: Counter = Counter()
    for t in texts:
        c.update(names_in(t))
    return c


# A quoted literal that reads as a phrase: a test's name, a message, a label ("excludes closed annotations").
# No comma inside (names lines were comma-separated once; a phrase with a comma is rarely one a continuation
# quotes back); single quotes only around, never inside, a word.
# The lookbehind of a single-quoted one sits after its quote (the character before that quote is not a word
# character nor a quote), so that both alternatives start with a literal quote: a regex scan that is ~3x faster.
_LITERAL = re.compile(r'"([^"\n\\,]{6,60})"|\'(?<![\w\']\')([^\'\n\\,]{6,60})\'(?![\w\'])')


_CLOSING, _OPENING = ")]},", "([{,"


def literals_in(text: str) -> list[str]:
    """The quoted phrases of `text` (with a space, a letter, no padding), quoted, in order, each once."""
    out: dict[str, None] = {}
    pos = 0
    while (mo := _LITERAL.search(text, pos)) is not None:
        pos = mo.end()
        q = mo.group(1) or mo.group(2)
        if q[0] in _CLOSING or q[-1] in _OPENING:
            # The text between two quoted strings (`f("a, b") to ("c d")`: a string with a comma is no phrase): its
            # closing quote opens the next phrase.
            pos = mo.end() - 1
            continue
        # Listed between double quotes among the names of a digest: a phrase holding one would not read as one.
        if " " in q and q.strip() == q and '"' not in q and any(c.isalpha() for c in q):
            out['"' + q + '"'] = None
    return list(out)


def ranked(names: list[str], weight: Counter | None) -> list[str]:
    """`names` most used first (`weight`), equal weights in their order (a stable sort, no per-name
    Python call); without `weight`, as they are. Filtering the result keeps the ranking of what is left."""
    if weight is None:
        return names
    keys = list(map(weight.get, names, repeat(0)))
    return [names[k] for k in sorted(range(len(names)), key=keys.__getitem__, reverse=True)]


def first_not_in(names: list[str], exclude: str, limit: int) -> list[str]:
    """The first `limit` of `names` that `exclude` does not contain."""
    return list(islice((n for n in names if n not in exclude), limit))


# A list item, after an optional line-number prefix of a file read ("  12→", "12\t").
_ITEM = re.compile(r"^[ \t]*(?:\d+(?:→|\t))?[ \t]*(?:[-*•]|\d+[.)])[ \t]+\S", re.M)


def is_task_document(text: str) -> bool:
    """Whether a tool output reads as a description of work: mostly a list of items naming things in
    `code` spans (an issue or ticket a tracker printed, a plan or spec file read), not code or a log.
    The agent works through such a list after reading it, so compaction keeps its names longest."""
    if not 300 <= len(text) <= 40_000 or text.count("`") < 10:
        return False
    items = len(_ITEM.findall(text))
    lines = sum(1 for ln in text.split("\n") if ln.strip())
    return items >= 5 and items * 4 >= lines


# ---- lines that show names: what a digest and the summary quote whole

QUOTED_CHARS = (12, 160)  # a line shorter says little, a longer one costs more than the names it shows
_LINE_NUMBER = re.compile(r"^\d+(?:→|\t|: |[:-](?=\D))")  # a numbered read's ("118→", "118\t") or grep -n's ("12:", "12-")


def quotable(raw: str) -> str | None:
    """A line as a digest or the summary quotes it: stripped, without a numbered read's or grep's line number, a diff's
    added line without its "+"; None for a diff's removed line (code that is gone) or a line out of QUOTED_CHARS."""
    line = raw.strip()
    if line[:1].isdigit():
        line = _LINE_NUMBER.sub("", line).strip()
    if line[:1] in ("+", "-") and line[1:2] not in ("+", "-"):
        if line[0] == "-":
            return None
        line = line[1:].strip()
    lo, hi = QUOTED_CHARS
    return line if lo <= len(line) <= hi else None


def quoted_lines(text: str, names: list[str], keep: int, top: int = 12) -> list[str]:
    """Up to `keep` lines of `text` (quotable) that show the most of its first `top` `names` (most used first, the
    first weighing most) per character, each at its first line: the names with their neighbours."""
    first = names[:top]
    weight = [(1 + k) ** -0.5 for k in range(len(first))]
    cands: dict[str, list[int]] = {}
    for n in first:
        at = text.find(n)
        if at < 0:
            continue
        start, end = text.rfind("\n", 0, at) + 1, text.find("\n", at)
        line = quotable(text[start : end if end >= 0 else len(text)])
        if line is not None and line not in cands:
            cands[line] = [k for k, m in enumerate(first) if m in line]
    lines = sorted(cands)  # ties go to the first in this order
    covered: set[int] = set()

    def gain(i: int) -> float:
        return sum(weight[k] for k in cands[lines[i]] if k not in covered) / (len(lines[i]) + 16)

    chosen: list[str] = []
    for i in greedy(gain, len(lines)):
        chosen.append(lines[i])
        covered.update(cands[lines[i]])
        if len(chosen) == keep:
            break
    return chosen


def greedy(gain: Callable[[int], float], n: int) -> Iterator[int]:
    """0 .. n-1 by `gain` (what an item adds per its cost given what the caller has taken so far; it only falls as the
    caller takes others), the best first, lazily: an item whose gain is still what it was when it was queued is the
    best. Items that add nothing are left out; ties go to the lower index."""
    heap = [(-gain(k), k) for k in range(n)]
    heapq.heapify(heap)
    while heap:
        was, k = heapq.heappop(heap)
        now = -gain(k)
        if now == 0:
            continue
        if now > was + 1e-12:  # it adds less than it did: back in line at its new value
            heapq.heappush(heap, (now, k))
            continue
        yield k
