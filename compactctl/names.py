"""The vocabulary of a session: the names in a text that an agent reuses.

Paths, code identifiers (snake_case, camelCase, PascalCase, kebab-case, dotted.names, CONSTANTS), URLs and
distinctive values (versions, hashes, long numbers). Used by prune (the names a cut output or
argument keeps) and by the offline summarizer (the identifier index of what the summary replaced).
"""

from __future__ import annotations

import bisect
import heapq
import re
from collections import Counter
from collections.abc import Callable, Iterator
from itertools import accumulate, islice, repeat

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


# Characters the searches of one quoted_lines call may scan (each of its names from the text's start to its first
# occurrence, the whole text for one it does not hold): past it, its most used names only (~50 ms of str.find). A digest
# of a long output with many names (a log, a minified file: 60,000 and more) asks for all of them; a real output's
# needs are far below (the largest of the corpus and the benchmark: 480K).
QUOTE_WORK = 1 << 26


def quoted_lines(text: str, names: list[str], keep: int, top: int = 12, index: LineIndex | None = None) -> list[str]:
    """Up to `keep` lines of `text` (quotable) that show the most of its first `top` `names` (most used first, the
    first weighing most) per character, each at its first line: the names with their neighbours. Of those names, as
    many as QUOTE_WORK characters of search find (all of them, but on a long text with thousands of names). `index`:
    a LineIndex of `text` kept across calls (made here without one)."""
    if index is None or index.text is not text:
        index = LineIndex(text)
    first = index.searched(names[:top], QUOTE_WORK)
    weight = [(1 + k) ** -0.5 for k in range(len(first))]
    cands = index.candidates(first)
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


# Names added to a LineIndex since a line's names were found that are looked for in it one by one (more: a new scan).
_FEW_NEW = 32


class LineIndex:
    """What quoted_lines learns of one text, kept across its calls (a digest is made at several sizes, with more names
    each time): where each name first occurs, the line there as a digest quotes it, the names each such line shows.
    Each name is searched for once, each line is read once, and a line's names are found by one scan of it (the
    prefixes of the names at each of its places), not by a search of it for each name."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._at: dict[str, int] = {}  # a name's first position, -1 when the text does not hold it
        self._not_before: dict[str, int] = {}  # a name the text does not hold before this position (a search cut short)
        self._starts: list[int] = []  # where each line starts, and len(text) + 1 (once a line is needed)
        self._quotable: dict[int, str | None] = {}  # a line's quotable() form, by its index
        self._names: list[str] = []  # the names lines are read for, in the order they came (only appended to)
        self._known: set[str] = set()
        self._prefixes: set[str] = set()  # every prefix of those names
        self._shows: dict[str, tuple[int, set[str]]] = {}  # a line -> (len(_names) then, the names of _names it holds)

    def searched(self, names: list[str], work: int) -> list[str]:
        """The first of `names` whose searches (_cost) take `work` characters at most: all of them, most often."""
        for k, name in enumerate(names):
            cost = self._cost(name, work)
            if cost is None:
                return names[:k]
            work -= cost
        return names

    def _cost(self, name: str, room: int) -> int | None:
        """The characters a search for `name` scans (to the end of its first occurrence, the whole text when there is
        none); None when that is more than `room` (the search stops there: a later call may go on from it)."""
        text = self.text
        at = self._at.get(name)
        if at is None:
            end = min(room, len(text))
            done = self._not_before.get(name)
            if done is not None and end <= done:
                return None
            at = text.find(name, 0 if done is None else max(0, done - len(name) + 1), end)
            if at < 0 and end < len(text):
                self._not_before[name] = end
                return None
            self._at[name] = at
        cost = at + len(name) if at >= 0 else len(text)
        return cost if cost <= room else None

    def candidates(self, first: list[str]) -> dict[str, list[int]]:
        """The quotable lines where names of `first` (searched) first occur, each with the indexes in `first` of the
        names it shows (ascending), in the order of the names."""
        where: dict[str, list[int]] = {}
        for k, name in enumerate(first):
            where.setdefault(name, []).append(k)
        self._add(list(where))
        cands: dict[str, list[int]] = {}
        for name in first:
            at = self._at[name]
            if at < 0:
                continue
            line = self._line(at)
            if line is not None and line not in cands:
                cands[line] = sorted(k for x in self._names_in_line(line) if x in where for k in where[x])
        return cands

    def _line(self, at: int) -> str | None:
        """quotable() of the line of the text that holds position `at` (each line read once)."""
        starts = self._starts
        if not starts:
            starts += accumulate(len(line) + 1 for line in self.text.split("\n"))
            starts.insert(0, 0)
        k = bisect.bisect_right(starts, at) - 1
        if k not in self._quotable:
            self._quotable[k] = quotable(self.text[starts[k] : starts[k + 1] - 1])
        return self._quotable[k]

    def _add(self, names: list[str]) -> None:
        """Lines are read for `names` too."""
        for name in names:
            if name not in self._known:
                self._known.add(name)
                self._names.append(name)
                if len(name) <= QUOTED_CHARS[1]:  # a longer one is in no quotable line
                    self._prefixes.update(name[:j] for j in range(1, len(name) + 1))

    def _names_in_line(self, line: str) -> set[str]:
        """The names lines are read for that `line` holds (as `name in line` finds them)."""
        seen = self._shows.get(line)
        if seen is not None and seen[0] == len(self._names):
            return seen[1]
        if seen is not None and len(self._names) - seen[0] <= _FEW_NEW:
            found = seen[1] | {x for x in self._names[seen[0] :] if x in line}
        else:
            found = _substrings_in(line, self._prefixes, self._known)
        self._shows[line] = (len(self._names), found)
        return found


def _substrings_in(line: str, prefixes: set[str], names: set[str]) -> set[str]:
    """The `names` that are substrings of `line` (`prefixes`: every prefix of every name): from each place of the line,
    as long as it reads as a prefix of one."""
    found = {""} if "" in names else set()
    n = len(line)
    for i in range(n):
        j = i + 1
        while j <= n:
            piece = line[i:j]
            if piece not in prefixes:
                break
            if piece in names:
                found.add(piece)
            j += 1
    return found


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
