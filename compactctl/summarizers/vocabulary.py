"""The vocabulary of the replaced turns, for the summary's identifier index: their names (paths, symbols, values)
ranked by how many messages use them and how recently, then their quoted phrases, minus what the kept turns show."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from .. import outline, refs, tools
from ..harness import MARKUP
from ..lean import dataclass
from ..markers import DOC_NAMES_LINE, EXCERPT_LINE, NAMES_LINE, OUTLINE_LINE, QUOTED_LINE, quote_block
from ..model import Message, is_demonstration, is_output, is_summary
from ..names import literals_in, names_in, quotable
from ..redact import holds_key, redact


def index_names(messages: list[Message], start: int, end: int, prior: int | None = None) -> list[str]:
    """The names of what the summary replaces (messages[start:end] and an earlier summary at `prior`, whose
    names count as the oldest), ranked, then its quoted phrases (rank_literals), minus those the kept turns (head and
    tail) show: they stay in context."""
    replaced = [messages[prior]] if prior is not None and not start <= prior < end else []
    kept = [_with_arguments(m) for m in messages[:start] + messages[end:] if not replaced or m is not replaced[0]]
    shown = {n for text in kept for n in names_in(text)}
    span = replaced + messages[start:end]
    literals = [q for q in rank_literals(span) if not any(q[1:-1] in text for text in kept)]
    return [n for n in rank_names(span) if n not in shown] + literals


def rank_names(messages: list[Message]) -> list[str]:
    """Names in the messages (text, arguments, outputs), by how many messages use them, the most recent
    use breaking ties, so a few hundred tokens keep the vocabulary of the work."""
    score: dict[str, float] = {}
    for w, m, text in _weighed(messages):
        defined = _defined(text) if is_output(m) else frozenset()
        for name in names_in(text):
            score[name] = score.get(name, 0.0) + w + (DEFINED_BONUS if name in defined else 0.0)
    for name in score:
        if _GENERATED.search(name):
            score[name] *= GENERATED_FACTOR
    # A long name costs more of the index than a short one: rank by use per (rough) token.
    return sorted(score, key=lambda x: -score[x] / (1 + len(x) / 4) ** 0.5)


def rank_literals(messages: list[Message]) -> list[str]:
    """The quoted phrases of the messages (a label, a message, a test's name: `names.literals_in`), by how many
    messages use them, the most recent use breaking ties; never one redaction would change. After the names, they
    are what the index shows when its room holds every name ("Guest User", "Search projects...": what code the
    agent writes next quotes again)."""
    score: dict[str, float] = {}
    for w, _, text in _weighed(messages):
        if '"' in text or "'" in text:
            for q in literals_in(text):
                score[q] = score.get(q, 0.0) + w
    return sorted((q for q in score if redact(q) == q), key=lambda q: -score[q])


def _weighed(messages: list[Message]) -> Iterator[tuple[float, Message, str]]:
    """Each message's weight (1, plus up to 1 the more recent it is), the message and its text with its calls'
    arguments, references and the harness's markup left out; another task's demonstration is not the vocabulary of
    this work and is left out. A text that holds a private key is redacted first: names_in redacts a long token alone,
    and a key's short last line is a secret only where it stands, under its BEGIN line."""
    n = max(len(messages), 1)
    for k, m in enumerate(messages):
        if is_demonstration(m):
            continue
        text = _with_arguments(m)
        if m.role == "user" and "<" in text:
            text = MARKUP.sub(" ", text)  # the harness's tags (`<command-name>`, `<local-command-stdout>`) name nothing
        if holds_key(text):
            text = redact(text)
        yield 1.0 + k / n, m, refs.without(text)


def _with_arguments(m: Message) -> str:
    """A message's text and its calls' arguments (the code the agent wrote is its vocabulary too)."""
    return m.text() + "\n" + "\n".join(tools.argument_text(c) for c in m.tool_calls)


# A path into what a build or an installer made (`_build/dev/lib/app/ebin/Elixir.App.beam`, `node_modules/x`): a
# listing of it names many, and the work goes on in the sources. Such a name ranks at this share of its uses.
_GENERATED = re.compile(r"(?:^|/)(?:_build|node_modules|__pycache__|\.git|dist|target|\.next|\.venv|site-packages)/")
GENERATED_FACTOR = 0.5


# What a name defined in an output (a file read's function, class, module: its outline) adds to its rank: the
# file's own vocabulary, which a report on the file names, over what the file only uses.
DEFINED_BONUS = 1.0


def _defined(text: str) -> frozenset[str]:
    """The names an output defines: its prune digest's outline line, or the definitions of a numbered file read."""
    if OUTLINE_LINE in text:
        return frozenset(n for ln in text.split("\n") if ln.startswith(OUTLINE_LINE) for n in outline.listed(ln[len(OUTLINE_LINE) :]))
    return frozenset(d.name for d in outline.definitions(text)) if "\n" in text else frozenset()


def signatures(messages: list[Message]) -> dict[str, str]:
    """The parameters of each function the messages' file reads define (`capture_pane` -> "(pane_id)"): from a
    numbered read's definitions, or from the outline line of the digest prune made of it; the newest read first. The
    index writes them beside the name (`fit.with_signatures`): what a call of it passes."""
    out: dict[str, str] = {}
    for m in reversed(messages):
        if not is_output(m):
            continue
        text = m.text()
        if OUTLINE_LINE in text:
            pairs = [
                p for ln in text.split("\n") if ln.startswith(OUTLINE_LINE) for p in outline.listed_parameters(ln[len(OUTLINE_LINE) :])
            ]
        else:
            pairs = [(d.name, d.args) for d in outline.definitions(text) if d.args] if "\n" in text else []
        for name, args in pairs:
            out.setdefault(name, args)
    return out


# ---- excerpts: the index's names with their neighbours


@dataclass(frozen=True)
class Excerpt:
    """A line of the replaced turns (as they were before prune), and the weight of each index name it shows."""

    text: str
    names: tuple[tuple[str, float], ...]


def showing(excerpts: list[Excerpt], listed: set[str], name: Callable[[str], str] = str) -> list[Excerpt]:
    """The excerpts that show one of the names a summary lists (`name(n)` as it lists them), weighing those only."""
    kept = (Excerpt(e.text, tuple((n, w) for n, w in e.names if name(n) in listed)) for e in excerpts)
    return [e for e in kept if e.names]


EXCERPT_TOP = 400  # the index names an excerpt may show (the most used)
_LISTS = (NAMES_LINE, DOC_NAMES_LINE, OUTLINE_LINE, EXCERPT_LINE, "- names: ")


# The first line of prune's digest of an output: what the action line of the summary says of the call.
_DIGEST_HEAD = re.compile(
    r"\[(?!(?:INFO|WARN|WARNING|ERROR|DEBUG|TRACE|FATAL|NOTICE)\])[\w.:/-]+\] (?:called\(|ran |read |wrote |edited |fetched |searched |delegated |listed |updated the plan|proposed a plan)"
)


def excerpts(messages: list[Message], ranked: list[str]) -> list[Excerpt]:
    """The lines of `messages` (newest first, each once) that show one of the first EXCERPT_TOP names of `ranked`,
    a name weighing 1/sqrt(1 + its rank) (`fit.pick_excerpts` never takes one redaction would change)."""
    weight = {n: (1 + k) ** -0.5 for k, n in enumerate(ranked[:EXCERPT_TOP])}
    if not weight:
        return []
    seen: set[str] = set()
    out = []
    for m in reversed(messages):
        if is_demonstration(m):
            continue
        text = _with_arguments(m)
        if m.role == "user" and "<" in text:
            text = MARKUP.sub(" ", text)
        for raw in _candidate_lines(m, text):
            if raw.startswith(_LISTS) or _DIGEST_HEAD.match(raw):  # a digest's or an index's list of names, a digest's
                continue  # head (its action line says it): no line of the work
            if refs.TRUNCATED in raw:  # a cut argument: what it kept, not the names listed after the cut
                raw = raw[: raw.index(refs.TRUNCATED)]
            line = quotable(raw[len(QUOTED_LINE) :] if raw.startswith(QUOTED_LINE) else raw)
            if line is None or line in seen:
                continue
            seen.add(line)
            shown = tuple((n, weight[n]) for n in names_in(line) if n in weight)
            if shown:
                out.append(Excerpt(line, shown))
    return out


def _candidate_lines(m: Message, text: str) -> list[str]:
    """The lines of message `m` (its text `text`) a summary may quote. Of an earlier summary, only the lines its quoted
    block holds: its other lines are carried as its sections' items, not quoted a second time."""
    lines = refs.without(text).split("\n")
    return quote_block(lines)[1] if is_summary(m) else lines
