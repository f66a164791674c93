"""Phase 1's steps: what each reduction `prune` applies makes of a message, over what the transcript shows.

`_Context` finds the candidates (drops, duplicates, superseded outputs, images, old outputs, long arguments) and
makes each one's new message: a digest of an old output (what the call did and how it ended, its error lines, the
names it holds ranked by how much the rest of the transcript uses them, its quoted phrases; never one redaction
would change), cut arguments that stay valid JSON and keep the names of what was cut. The order, the budget and
the stopping point are prune's (phases/prune.py), which imports this module only for a transcript over its target.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Iterable, Iterator
from itertools import accumulate, chain, islice
from typing import Any

import orjson

from .. import outline, outputs, refs, tools
from ..describe import describe
from ..markers import DOC_NAMES_LINE, DUPLICATE, EXCERPT_LINE, NAMES_LINE, NAMES_SEP, OUTLINE_LINE, QUOTED_LINE
from ..model import Message, ToolCall, Transcript, is_demonstration, is_image_part, is_output, last_user_index
from ..names import LineIndex, count_names, first_not_in, is_task_document, literals_in, names_in, quoted_lines, ranked
from ..pairs import calls_for_results
from ..redact import cut, holds_key, redact, taken_where_it_stands
from ..tokens import Counter
from .prune import (
    ARGS,
    DEDUP,
    DOC_NAMES_FACTOR,
    DROP,
    IMAGE,
    IMAGE_PLACEHOLDER,
    LITERALS_KEPT,
    NAMES_KEPT,
    OLD_DOC,
    OLD_FAILED,
    OLD_OK,
    SUPERSEDE,
    SUPERSEDED,
    SUPERSEDED_RERUN,
    TRUNCATED,
    VOCABULARY_FACTOR,
    PruneOptions,
    _tagged,
)


def _memo(cache: dict, key, make):
    """cache[key], made by make() the first time."""
    found = cache.get(key)
    if found is None:
        found = cache[key] = make()
    return found


# A read's arguments that show part of a file: a later read with one of them leaves an earlier read's other lines current.
RANGE_KEYS = ("offset", "limit", "view_range", "start_line", "end_line")


class _Later:
    """What the messages after the one being looked at did: output texts seen, calls made, files touched.

    `failed(call)`: whether a call failed. A later call that failed touched no file (a read of a file that is not
    there, a write refused: an earlier read of it is still the latest view), a later read of part of a file (offset,
    limit) leaves an earlier read's other lines current, and so does a later edit (it changes a few of them: the names
    around it are what the agent edits next)."""

    def __init__(self, failed: Callable[[ToolCall], bool]) -> None:
        self.texts: set[str] = set()  # the texts themselves: a str caches its hash, no digest to compute
        self.calls: set[tuple[str, str]] = set()
        self.files: set[str] = set()
        self.failed = failed
        self._touched: dict[int, list[tuple[str, str]]] = {}  # id(call) -> tools.files_of(call): asked for twice, by
        # supersedes (for its result) and then by saw_calls (for the turn that made it, the next one looked at)
        self._args: dict[int, dict[str, Any]] = {}  # id(call) -> tools.parse_args(call): what the others read

    def args(self, call: ToolCall) -> dict[str, Any]:
        return _memo(self._args, id(call), lambda: tools.parse_args(call))

    def touched(self, call: ToolCall) -> list[tuple[str, str]]:
        return _memo(self._touched, id(call), lambda: tools.files_of(call, args=self.args(call)))

    def saw_calls(self, m: Message) -> None:
        for c in m.tool_calls:
            touched = self.touched(c)
            if touched and self.failed(c):
                continue  # (a failed command run again is the latest state: it supersedes the same command's output)
            self.calls.add((c.name, c.arguments))
            if any(a == "read" for a, _ in touched) and not self.args(c).keys().isdisjoint(RANGE_KEYS):
                touched = [(a, p) for a, p in touched if a != "read"]
            self.files.update(p for a, p in touched if a != "edit")  # (an edit changes part of a file: the rest of a read stays current)

    def supersedes(self, call: ToolCall | None) -> str | None:
        """How a later call supersedes this one: it reads or writes a file this one read (SUPERSEDED), or it repeats
        this call, a command run again (SUPERSEDED_RERUN); None when none does."""
        if call is None:
            return None
        if any(a == "read" and p in self.files for a, p in self.touched(call)):
            return SUPERSEDED
        return SUPERSEDED_RERUN if (call.name, call.arguments) in self.calls else None


def _read_paths(call: ToolCall, later: _Later) -> list[str]:
    """The files a call printed: a read tool's, a shell command's (`sed -n '1,80p' F`, `cat F`: tools.shell_reads)."""
    return [p for a, p in later.touched(call) if a == "read"] + [p for _, p in tools.shell_reads(call, args=later.args(call))]


def _same_file(a: str, b: str) -> bool:
    """Whether two paths name the same file, one of them relative (Codex's `apply_patch` paths are) or both absolute."""
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _base(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _note_reads(read_later: dict[str, set[str]], m: Message, later: _Later) -> None:
    """Adds the files message m's calls printed (those that did not fail) to `read_later`, by file name."""
    for c in m.tool_calls:
        paths = _read_paths(c, later)
        if paths and not later.failed(c):  # (a call that printed no file: its outcome is not needed)
            for p in paths:
                read_later.setdefault(_base(p), set()).add(p)


def _read_again(call: ToolCall, read_later: dict[str, set[str]], later: _Later) -> bool:
    """Whether a call writes or edits files (code the agent wrote: its arguments) that later calls all printed
    (`read_later`): the file as it then stood shows that code, so its long arguments are cut with the superseded
    outputs, before any output is digested. `read_later`: those paths by file name."""
    written = [p for a, p in later.touched(call) if a in ("write", "edit")]
    return bool(written) and all(any(_same_file(p, r) for r in read_later.get(_base(p), ())) for p in written)


class _Context:
    """What the steps need to know about a transcript: calls and results, what recurs, what is newer."""

    def __init__(self, t: Transcript, msgs: list[Message], counter: Counter, opts: PruneOptions, protect: int) -> None:
        self.t, self.msgs, self.counter, self.opts, self.protect = t, msgs, counter, opts, protect
        self.keep_user = last_user_index(msgs)
        self.call_of = calls_for_results(msgs)
        for i, m in enumerate(msgs):  # an observation answers the text action before it (SWE-agent)
            if m.observation and i and (c := tools.text_action_call(msgs[i - 1], answered=True)) is not None:
                self.call_of[i] = c
        self._weight = None
        self._outcomes: dict[int, outputs.Outcome] = {}
        # Per output text (memoized: _settle digests an output again with more names, and its names,
        # their ranking and its quoted phrases stay the same).
        self._names: dict[str, list[str]] = {}
        self._ranked: dict[tuple[str, bool], list[str]] = {}
        self._literals: dict[str, list[str]] = {}
        self._outlines: dict[str, list[outline.Definition]] = {}
        self._plain: dict[str, str] = {}
        self._uses: dict[str, list[int]] = {}
        self._said: dict[int, tuple[Message, str]] = {}  # output index -> (the message, its line): _line
        self._lines: LineIndex | None = None
        self._keyed = False  # whether self._lines's text holds key material
        keep = {k.lower() for k in opts.keep_tools}
        # --keep-tool outputs, and the person's answers to the agent's questions (their words, in a tool result)
        self.kept = {i for i, c in self.call_of.items() if c.name.lower() in keep or tools.kind_of(c.name) == "ask"}
        self.superseded: dict[int, str] = {}  # output index -> how a later call superseded it (candidates)
        self.drop = {d.lower() for d in opts.drop_tools}
        # The latest todo list and the latest plan put to the person (ExitPlanMode): never cut.
        self.latest_plans = {
            max((i for i, m in enumerate(msgs) for c in m.tool_calls if tools.kind_of(c.name) == kind), default=-1)
            for kind in ("todo", "plan")
        }

    # Memoized per output text (or index): _settle digests an output again with more names, and its names, their
    # ranking, its quoted phrases and its outline stay the same.
    def outcome(self, i: int) -> outputs.Outcome:
        """outputs.outcome of message i, memoized; a success's error lines left out (a digest shows none)."""
        return _memo(self._outcomes, i, lambda: outputs.outcome(self.msgs[i], ok_errors=False))

    def names_of(self, text: str) -> list[str]:
        """names_in(text), memoized."""
        return _memo(self._names, text, lambda: names_in(text))

    def _candidate_names(self, text: str, rank: bool) -> list[str]:
        """candidate_names(text, ...) ranked by self.weight when `rank`, memoized."""
        return _memo(
            self._ranked, (text, rank), lambda: candidate_names(self._unwrapped(text), self.weight if rank else None, self.names_of)
        )

    def _unwrapped(self, text: str) -> str:
        """An output as the tool printed it (_unwrapped), memoized: its names and the lines it quotes read it."""
        return _memo(self._plain, text, lambda: _unwrapped(text))

    def _line_index(self, plain: str) -> LineIndex | None:
        """A names.LineIndex of an output as printed (_unwrapped), the last one's kept: a digest is made again at other
        sizes (prune._use_room), one output after another. None for one with key material (a digest quotes none of its
        lines; looked for once, not at each size: a scan of the whole output)."""
        if self._lines is None or self._lines.text is not plain:
            self._lines = LineIndex(plain)
            self._keyed = holds_key(plain)
        return None if self._keyed else self._lines

    def _outline_of(self, text: str) -> list[outline.Definition]:
        """outline.definitions(text) without a secret-shaped name (a test's title may hold a password), memoized."""
        return _memo(self._outlines, text, lambda: [d for d in outline.definitions(text) if _unchanged_by_redaction(d.name)])

    def _literals_of(self, text: str) -> list[str]:
        """literals_in(text), memoized."""
        return _memo(self._literals, text, lambda: literals_in(text))

    @property
    def weight(self):
        """How many messages the person and the agent wrote name each name (text and call arguments' values;
        computed once, when a digest first needs it). Outputs are left out: they are most of the bytes,
        and a name the agent never wrote is weak evidence of use."""
        if self._weight is None:
            self._weight = count_names(
                "\n".join([m.text(), *map(tools.argument_text, m.tool_calls)]) for m in self.msgs if not is_output(m)
            )
        return self._weight

    def _failed(self) -> Callable[[ToolCall], bool]:
        """Whether a call failed, by its result's outcome (False for a call with no result)."""
        result_of = {id(c): i for i, c in self.call_of.items()}
        return lambda c: (r := result_of.get(id(c))) is not None and self.outcome(r).failed

    def candidates(self) -> list[tuple[int, int, int]]:
        """(rank, index, step) for every reduction that may apply, sorted: the rank orders them, the cheapest value
        first (OLD_FAILED after OLD_OK); the step is what `reduce` applies (OLD_OK for both)."""
        out: list[tuple[int, int, int]] = []
        o, msgs = self.opts, self.msgs
        later = _Later(self._failed())
        read_later: dict[str, set[str]] = {}  # the files later calls printed whole or in part (a read tool, `sed -n`), by name
        writer = self._first_writer(later)  # read_later matters only after it
        for i in range(len(msgs) - 1, -1, -1):
            m = msgs[i]
            old = i < self.protect
            if is_output(m) and i != self.keep_user and i not in self.kept:
                step = self._output_step(i, m, old, later)
                if step is not None:
                    out.append(step)
            if m.role == "assistant":
                later.saw_calls(m)
                if old and o.args and i not in self.latest_plans and (args := self._args_step(i, m, read_later, later)):
                    out.append(args)
                if i > writer:
                    _note_reads(read_later, m, later)
            if old and o.images and i != self.keep_user and isinstance(m.content, list) and any(is_image_part(p) for p in m.content):
                out.append((IMAGE, i, IMAGE))
        # Oldest first within a step (the list was built newest first); old outputs least used first (_by_use).
        out.sort(key=lambda x: (x[0], x[1]))
        return self._by_use(out) if o.digest_names else out

    def _by_use(self, candidates: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
        """`candidates` (sorted) with the old outputs of each rank (OLD_OK, OLD_FAILED) least used first: by how many of
        their names the person or the agent wrote (self.weight) per character of output, ties oldest first; the newest
        FRESH_SHARE-th of them after the others, oldest first (their names have had little time to be written)."""
        keys: dict[tuple[int, int], tuple[int, float]] = {}
        for rank in (OLD_OK, OLD_FAILED):
            idx = [i for s, i, _ in candidates if s == rank]
            fresh = len(idx) - len(idx) // FRESH_SHARE
            for r, i in enumerate(idx):
                keys[rank, i] = (1, float(i)) if r >= fresh else (0, self._used_per_char(i))
        return sorted(candidates, key=lambda x: (x[0], *keys.get((x[0], x[1]), (0, 0.0)), x[1]))

    def _used_per_char(self, i: int) -> float:
        """How many of output i's names the person or the agent wrote (self.weight), per character of it."""
        text = self.msgs[i].text()
        return len(self.weight.keys() & self.names_of(self._unwrapped(text))) / max(len(text), 1)  # (a Counter: no 0 count)

    def _first_writer(self, later: _Later) -> int:
        """The oldest message whose long arguments may be cut with the superseded outputs (_args_step: one of its long
        calls writes or edits files): what calls printed matters only after it. len(msgs) when there is none."""
        limit, n = self.opts.arg_limit, len(self.msgs)
        if not self.opts.args:
            return n
        writes = ("write", "edit")
        for i, m in enumerate(islice(self.msgs, self.protect)):
            if m.role != "assistant" or i in self.latest_plans:
                continue
            if any(len(c.arguments) > limit and any(a in writes for a, _ in later.touched(c)) for c in m.tool_calls):
                return i
        return n

    def _args_step(self, i: int, m: Message, read_later: dict[str, set[str]], later: _Later) -> tuple[int, int, int] | None:
        """The cut of assistant message i's long arguments, if it has any: ranked with the superseded outputs when each
        of them writes files later calls printed (_read_again), else after the old outputs."""
        long = [c for c in m.tool_calls if len(c.arguments) > self.opts.arg_limit]
        if not long:
            return None
        return (SUPERSEDE if all(_read_again(c, read_later, later) for c in long) else ARGS, i, ARGS)

    def _output_step(self, i: int, m: Message, old: bool, later: _Later) -> tuple[int, int, int] | None:
        """The reduction of tool output i, given what later messages did (`later`, which it updates)."""
        o = self.opts
        call = self.call_of.get(i)
        text = m.text()
        long_enough = o.dedup and len(text) >= o.min_dedup_chars
        step: tuple[int, int, int] | None = None
        if call is not None and call.name.lower() in self.drop and len(text) >= o.min_summary_chars:
            step = (DROP, i, DROP)
        elif long_enough and text in later.texts:
            step = (DEDUP, i, DEDUP)
        elif old and o.summaries and len(text) >= o.min_summary_chars and m.untouched:
            failed = self.outcome(i).failed
            how = None if failed else later.supersedes(call)
            if how:
                step = (SUPERSEDE, i, SUPERSEDE)
                self.superseded[i] = how
            elif is_task_document(text):
                step = (OLD_DOC, i, OLD_DOC)
            else:
                step = (OLD_FAILED if failed else OLD_OK, i, OLD_OK)
        if long_enough:
            later.texts.add(text)
        return step

    def reduce_from(self, old: Message, i: int, step: int, names: int, signatures: bool = True, most: int | None = None) -> Message | None:
        """What `step` makes of message i's original `old` with `names` names, tagged as the first change
        (message i may be a reduction of it already; it is left as it is); `signatures`, `most`: as `_with_names` takes
        them."""
        cur = self.msgs[i]
        self.msgs[i] = old
        try:
            return self.reduce(i, step, names, signatures, most)
        finally:
            self.msgs[i] = cur

    def excerpt_digest(self, i: int, step: int, old: Message, cur: Message) -> Message:
        """The digest an excerpt of output i (`old`) follows: `cur`, its digest, or, when the output holds no more
        names than a digest keeps at its default size, bare_digest (the excerpt's lines show definitions whole: the
        room goes to them)."""
        return cur if len(self.names_of(old.text())) > self.opts.digest_names else self.bare_digest(i, step, old, cur)

    def bare_digest(self, i: int, step: int, old: Message, cur: Message) -> Message:
        """Digest `cur` of output i (`old`, at its default size) with its outline's definitions bare, without their
        parameters (its names line lists theirs); `cur` when its outline shows none."""
        if OUTLINE_LINE not in cur.text() or not self.signature_chars(old):
            return cur
        new = self.reduce_from(old, i, step, self.opts.digest_names, signatures=False)
        return cur if new is None else new

    def signature_chars(self, old: Message) -> int:
        """The characters the parameters of output `old`'s definitions take (what a digest's outline shows of them at
        most): 0 for an output with no outline, or none with parameters."""
        return sum(len(d.args) for d in self._outline_of(old.text()))

    def excerpt(self, i: int, old: Message, n: int) -> Message | None:
        """Message i (a digest of `old`) followed by lines of `old`'s output as the tool printed it (_unwrapped),
        verbatim, at most `n` characters of them: the run of whole lines that shows the most names the person or the
        agent wrote (self.weight: what the agent acts on, as a digest's quoted lines are chosen), else its first lines
        (the whole lines of its first `n` characters, cut by redact.cut: never a piece of a secret; the start of the first
        line when that line is longer, said so); None when nothing is left."""
        text = self._unwrapped(old.text())
        cur = self.msgs[i]
        run = _used_run(text, self._line_uses(text), n)
        if run is not None:
            a, b, lines = run
            said = f"lines {a + 1:,}-{b:,} of {_line_count(text):,}, as they were:"
            return cur.evolve(content=_same_shape(cur.content, f"{cur.text()}\n{EXCERPT_LINE}{said}\n{chr(10).join(lines[a:b])}"))
        # (of a text with key material, its redacted form: the head showed a private key verbatim; a digest quotes no
        # line of such a text, nor shows a run of its lines)
        shown = redact(text) if holds_key(text) else text
        head = cut(shown, n)
        if len(head) < len(shown) and "\n" in head:
            head = head[: head.rfind("\n")]
        if not head.strip():
            return None
        if "\n" in head or len(head) == len(shown) or head == shown.partition("\n")[0]:
            said = f"the first {head.count(chr(10)) + 1:,} of {_line_count(text):,} lines, as they were:"
        else:  # a first line longer than the room: its start
            said = f"the start of line 1 of {_line_count(text):,}, as it was:"
        return cur.evolve(content=_same_shape(cur.content, f"{cur.text()}\n{EXCERPT_LINE}{said}\n{head}"))

    def _line_uses(self, text: str) -> list[int]:
        """Per line of an output as printed, how many names the person or the agent wrote (self.weight) it shows
        (each name once a line; memoized: an excerpt is sized by a few tries)."""
        return _memo(self._uses, text, lambda: line_uses(text, _most_used(set(self.names_of(text)), self.weight, len(text))))

    def reduce(self, i: int, step: int, names: int | None = None, signatures: bool = True, most: int | None = None) -> Message | None:
        """Message i after `step`, tagged as its first change (_tagged); `names`: the names its digest keeps
        (default: opts.digest_names); `signatures`, `most`: as `_with_names` takes them."""
        m = self.msgs[i]
        new = self._reduced(i, m, step, names, signatures, most)
        if new is None:
            return None
        return _tagged(m, new, self.opts) if isinstance(new, Message) else self._replaced(m, new)

    def _reduced(
        self, i: int, m: Message, step: int, names: int | None, signatures: bool = True, most: int | None = None
    ) -> Message | list[str] | None:
        """Message i (`m`) after `step`, untagged, or the parts of the text that replaces its content (a digest); None
        when it is no reduction, or a digest sure to count more than `most` tokens (_with_names)."""
        if step == IMAGE:
            if not isinstance(m.content, list) or not any(is_image_part(p) for p in m.content):
                return None
            return m.evolve(content=[{"type": "text", "text": IMAGE_PLACEHOLDER} if is_image_part(p) else p for p in m.content])
        if step == ARGS:
            calls = [
                ToolCall(
                    c.id,
                    c.name,
                    truncate_arguments(
                        c.arguments,
                        self.opts.arg_keep,
                        self.weight if self.opts.digest_names else None,
                        self.opts.digest_names,
                        self.opts.check_names,
                    ),
                    dict(c.extra),
                )
                if len(c.arguments) > self.opts.arg_limit
                else c
                for c in m.tool_calls
            ]
            return m.evolve(tool_calls=calls)
        text = m.text()
        if step == DEDUP:
            line = self._line(i, m) if i in self.call_of else ""
            return m.evolve(content=_same_shape(m.content, f"{DUPLICATE} {line}".rstrip()))
        line = self._line(i, m)
        if step == SUPERSEDE:
            parts: list[str] | None = [f"{line} {self.superseded.get(i, SUPERSEDED)}"]
        else:
            parts = self._with_names(line, text, step == OLD_DOC, names, is_demonstration(m), signatures, most)
        return parts if parts is not None and sum(map(len, parts)) < len(text) else None

    def _line(self, i: int, m: Message) -> str:
        """What output i (`m`) says in one line (describe, error lines and all, or _generic_line without a call),
        memoized while message i is `m`: _settle digests an output again at other sizes."""
        said = self._said.get(i)
        if said is None or said[0] is not m:
            call = self.call_of.get(i)
            said = self._said[i] = (m, describe(call, m, self.outcome(i), error_lines=3) if call is not None else _generic_line(m))
        return said[1]

    def _replaced(self, m: Message, parts: list[str]) -> Message:
        """`m` with its content replaced by the text of `parts`, tagged as its first change (as _tagged does: its
        reference ends the text). When tokens are counted, the text is counted from its parts (Counter.text_from:
        the names a digest keeps recur from digest to digest)."""
        if self.opts.refs and m.untouched:
            parts.append(" " + refs.mark(refs.ref_of(m)))
        text = "".join(parts)
        if self.opts.count_tokens or self.opts.target is not None:
            self.counter.text_from(text, parts)  # memoized: counter.message(the new message) finds it
        return m.evolve(content=_same_shape(m.content, text))

    def _with_names(
        self,
        line: str,
        text: str,
        doc: bool,
        keep: int | None = None,
        used_only: bool = False,
        signatures: bool = True,
        most: int | None = None,
    ) -> list[str] | None:
        """The parts of a digest: its line and the names of the output it replaces (a document's: 4x, in order; any
        other's: ranked by use, then its quoted phrases), one part each; `keep`: how many names, when not the default;
        `used_only` (a demonstration, model.is_demonstration): only names the person or the agent wrote too (the
        interface's commands), no quoted phrase. `most`: None instead when its parts up to its names are sure to count
        more than `most` tokens (Counter.runs_over), its names checked (pick_safe) only as far as that takes: a digest
        of a long output tried with all of its names (prune._use_room) checked and counted hundreds of thousands."""
        default = self.opts.digest_names * DOC_NAMES_FACTOR if doc else self.opts.digest_names
        limit = keep if keep is not None else default
        parts = [line]
        if not doc and limit > 0 and (entries := self._outline_of(text)):
            parts, limit = _with_outline(parts, entries, limit, signatures)
            line = "".join(parts)  # what the names need not repeat
        candidates = self._names_to_list(text, doc, used_only, limit)
        # A digest quotes lines when it keeps VOCABULARY_FACTOR x its names or more (a summary must follow and draws on
        # them; the room left holds them): QUOTED_KEPT per digest_names names. A digest at its size does not: lines
        # cost more than the names they show, and it would be larger than the reduction needs.
        per = limit // max(self.opts.digest_names, 1)
        quote = per if per >= VOCABULARY_FACTOR and not (doc or used_only) else 0
        plain = self._unwrapped(text)
        lines = self._line_index(plain) if quote else None
        parts, rest, limit = _with_quoted(parts, line, lines, candidates, limit, quote)
        source = plain if self.opts.check_names else ""
        label = DOC_NAMES_LINE if doc else NAMES_LINE
        safe = safe_names(rest, exclude=line, limit=limit, source=source)
        names: list[str] = []
        if most is not None and self.counter.runs_over(chain(parts, _listing(label, safe, names)), most):
            return None
        names += safe  # (all of them, or those the bound left unread)
        if not doc and not used_only:
            names += self._phrases(text, line, source)
        return parts + _listed(label, names) if names else parts

    def _names_to_list(self, text: str, doc: bool, used_only: bool, limit: int) -> list[str]:
        """The names a digest of `text` may list, in order (_candidate_names: ranked unless `doc`; `used_only`: those the
        person or the agent wrote); none when it keeps none (`limit` 0: --digest-names 0's one-liners find none)."""
        if limit <= 0:
            return []
        candidates = self._candidate_names(text, not doc)
        return [n for n in candidates if self.weight.get(n)] if used_only else candidates

    def _phrases(self, text: str, line: str, source: str) -> list[str]:
        """The quoted phrases a digest keeps after its names (safe_literals): none when it keeps no names."""
        if not self.opts.digest_names or ('"' not in text and "'" not in text):
            return []
        return safe_literals(self._literals_of(text), exclude=line, limit=LITERALS_KEPT, source=source)


def _with_outline(parts: list[str], entries: list[outline.Definition], limit: int, signatures: bool) -> tuple[list[str], int]:
    """A numbered file read's digest parts with its outline: its longest definitions (half of `limit` names at most), in
    file order, each with its lines ("name 12-40 other(a, b) 45"), and the names left to list. With `signatures`, each
    with its parameters at any size (what a call of it passes, beside its name: a names list shows their names alone);
    without, bare: a digest its excerpt follows (_Context.excerpt_digest), one that fits its target only so
    (prune._without_signatures)."""
    k = min(len(entries), max(1, limit // 2))
    chosen = sorted(sorted(entries, key=lambda d: d.start - d.end)[:k], key=lambda d: d.start)
    shown = chosen if signatures else [d.bare() for d in chosen]
    return parts + _listed(OUTLINE_LINE, list(map(str, shown))), limit - k


def _with_quoted(
    parts: list[str], said: str, plain: LineIndex | None, candidates: list[str], limit: int, per: int
) -> tuple[list[str], Iterable[str], int]:
    """A digest's parts with the lines it quotes of its output as printed (`plain`: a LineIndex of it, _unwrapped; a
    line each; `per` x QUOTED_KEPT of them) for names its parts so far
    (`said`: its line, an outline) do not show, the candidate names those lines do not show (read as far as the names
    line needs: of a long output, a few of hundreds of thousands), and how many of them its
    names line lists: `limit` less the names the lines show. `per` 0: none (a document's digest lists its names in
    order; a demonstration's keeps only the interface's commands)."""
    quoted = _quoted(plain, first_not_in(candidates, said, QUOTE_NAMES * per), per) if plain is not None and limit > 0 and per else []
    if not quoted:
        return parts, candidates, limit
    shown = set(names_in("\n".join(quoted)))
    rest = (n for n in candidates if n not in shown)
    return parts + [f"\n{QUOTED_LINE}{q}" for q in quoted], rest, limit - len(shown.intersection(candidates[:limit]))


def _quoted(plain: LineIndex, candidates: list[str], per: int) -> list[str]:
    """The lines a digest quotes whole (names.quoted_lines, `per` x QUOTED_KEPT at most) of its output as printed
    (`plain`: a LineIndex of it, Codex's JSON, Gemini's lines unwrapped, none for a text with key material:
    _Context._line_index), never one redaction would change."""
    if not QUOTED_KEPT:
        return []
    return [q for q in quoted_lines(plain.text, candidates, QUOTED_KEPT * per, QUOTE_NAMES * per, plain) if _unchanged_by_redaction(q)]


# Characters line_uses may scan in all (a scan of the text a name): past it, the most used names only (~25 ms).
LINE_USES_WORK = 1 << 26


def _most_used(names: set[str], weight: dict[str, float], chars: int) -> list[str]:
    """The names the person or the agent wrote (weight), as many of the most used as line_uses scans `chars`
    characters for within LINE_USES_WORK (all of them on any real output: the largest of the corpus needs 2M)."""
    used = [x for x in names if weight.get(x)]
    most = max(1, LINE_USES_WORK // max(chars, 1))
    return used if len(used) <= most else sorted(used, key=lambda x: (-weight[x], x))[:most]


def line_uses(text: str, names: list[str]) -> list[int]:
    """Per line of `text`, how many of `names` it shows (each once a line; a name found as a substring)."""
    starts = [0, *accumulate(len(line) + 1 for line in text.split("\n"))][:-1]
    uses = [0] * len(starts)
    for name in names:
        at, last = text.find(name), -1
        while at >= 0:
            line = bisect.bisect_right(starts, at) - 1
            if line != last:
                uses[line] += 1
                last = line
            at = text.find(name, at + len(name))
    return uses


# Lines on each side of an excerpt's run that redaction must leave as they are: a secret's value can stand on the line
# after its key (`Authorization: Basic` then the token), which a run starting at the value would show unrecognized.
RUN_MARGIN = 3


def _used_run(text: str, uses: list[int], n: int) -> tuple[int, int, list[str]] | None:
    """(a, b, lines): the run of whole lines a..b-1 of `text`, at most `n` characters, that shows the most uses (`uses`:
    per line, line_uses): the first such run, from its first named line to its last, grown to `n` characters after it
    and then before it; None when that run starts at the first line (the excerpt an output's first lines make) or
    shows none, when the text holds key material (a block of lines a run may cut into), or when redaction would change
    the run or the RUN_MARGIN lines around it (a run must never show a piece of a secret alone)."""
    if len(uses) < 2 or not any(uses) or holds_key(text):
        return None
    lines = text.split("\n")
    best, a, chars, shown = (0, 0, 0), 0, -1, 0
    for b, line in enumerate(lines):
        chars, shown = chars + len(line) + 1, shown + uses[b]
        while a <= b and chars > n:
            chars, shown, a = chars - len(lines[a]) - 1, shown - uses[a], a + 1
        if a <= b and shown > best[0]:
            best = (shown, a, b + 1)
    _, a, b = best
    if b == 0:
        return None
    while not uses[a]:
        a += 1
    while not uses[b - 1]:
        b -= 1
    chars, end = sum(len(line) + 1 for line in lines[a:b]) - 1, len(lines) - (not lines[-1])  # (not the final newline's "")
    while b < end and chars + len(lines[b]) + 1 <= n:
        chars, b = chars + len(lines[b]) + 1, b + 1
    while a and chars + len(lines[a - 1]) + 1 <= n:
        chars, a = chars + len(lines[a - 1]) + 1, a - 1
    around = "\n".join(lines[max(0, a - RUN_MARGIN) : b + RUN_MARGIN])
    if not a or redact(around) != around:
        return None
    return a, b, lines


def _line_count(text: str) -> int:
    """The lines of an output as `wc -l` would count them, plus a last one without its newline."""
    return text.count("\n") + (not text.endswith("\n"))


def _unwrapped(text: str) -> str:
    """An output as the tool printed it: Codex's JSON ({"output": ..., "metadata": {"exit_code": ...}}) and Gemini's
    labelled lines unwrapped, so that their keys (exit_code, duration_seconds) are no names of it."""
    return outputs.unwrap_output(text)[0] if text[:1] in "{C" else text


def _listed(label: str, items: list[str]) -> list[str]:
    """The parts of a digest's line that lists `items` after `label` (a new line, then NAMES_SEP between them)."""
    return ["\n" + label, items[0], *(NAMES_SEP + x for x in items[1:])]


def _listing(label: str, items: Iterable[str], into: list[str]) -> Iterator[str]:
    """_listed's parts, each item read from `items` only when its part is (and appended to `into`)."""
    for x in items:
        if into:
            yield NAMES_SEP + x
        else:
            yield "\n" + label
            yield x
        into.append(x)


def candidate_names(text: str, weight, names_of=names_in) -> list[str]:
    """Every name of `text` (of its redacted form when it holds key material), most used first by `weight`
    (None: in order of appearance); `names_of`: names_in or a memoized one."""
    if holds_key(text):
        text = redact(text)
    return ranked(names_of(text), weight)


def pick_safe(candidates: list[str], exclude: str, limit: int, source: str = "") -> list[str]:
    """The first `limit` of `candidates` (candidate_names) not in `exclude`, among the first `limit` + 8 of
    those, the ones that could be a fragment of a secret dropped, and those redaction takes from where they stand in
    `source` (the text they are names of): a value known by its key (`password: X`) is a name no rule knows alone."""
    return list(safe_names(candidates, exclude, limit, source))


def safe_names(candidates: Iterable[str], exclude: str, limit: int, source: str = "") -> Iterator[str]:
    """pick_safe's names, each checked as it is read, and each candidate read only then."""
    if limit <= 0:
        return iter(())
    picked = filter(_safe_name, islice((n for n in candidates if n not in exclude), limit + 8))  # (first_not_in's)
    kept = (n for n in picked if not taken_where_it_stands(n, source)) if source else picked
    return islice(kept, limit)  # checked until `limit` are kept


# A number or a lower-case hex digest (a commit, a checksum): no redaction rule changes one (tests/test_secrets.py
# holds it), and they are most of a log's long names, each new (the cache would not spare the check).
_PLAIN = re.compile(r"[0-9a-f]+")


def _safe_name(name: str) -> bool:
    """Not a fragment of a secret: too short to be one, a number or a hex digest, or left as it is by redaction."""
    return len(name) < 16 or _PLAIN.fullmatch(name) is not None or _unchanged_by_redaction(name)


def safe_literals(literals: list[str], exclude: str = "", limit: int = LITERALS_KEPT, source: str = "") -> list[str]:
    """The quoted phrases a digest keeps (of a text's `literals`, literals_in), in order, never one that redaction
    would change (a password in a message), alone or where it stands in `source` (`"password": "..."`)."""
    if limit <= 0:
        return []
    kept = (q for q in literals if q[1:-1] not in exclude and _unchanged_by_redaction(q))
    return list(islice((q for q in kept if not (source and taken_where_it_stands(q[1:-1], source))), limit))


@functools.lru_cache(maxsize=1 << 16)
def _unchanged_by_redaction(text: str) -> bool:
    """Cached: the same names and phrases recur across a dataset. (A name is checked whatever its characters: a
    Stripe test key can be letters only, `sk_test_` and 24 of them.)"""
    return redact(text) == text


def _same_shape(content: Any, text: str) -> Any:
    """New text in the shape the content had (a string stays a string, parts stay parts)."""
    if isinstance(content, list):
        return [{"type": "text", "text": text}]
    return text


def _generic_line(m: Message) -> str:
    out = outputs.outcome(m, ok_errors=False)
    first = next((ln.strip() for ln in out.text.split("\n") if ln.strip()), "")
    err = f" -> error: {cut(out.error_lines[0], 120)}" if out.failed and out.error_lines else ""
    tag = "observation" if m.observation else "tool result"
    return f"[{tag}{' ' + m.name if m.name else ''}] {out.lines:,} lines, {out.chars:,} chars: {cut(first, 80)}{err}"


_WORD_BACK = 40  # a cut backs up this far at most to the start of the word it goes through


def _word_start(v: str, at: int) -> int:
    """`at`, or the start of the word that a cut at `at` would go through (within _WORD_BACK characters)."""
    if not 0 < at < len(v) or not _in_word(v[at - 1]) or not _in_word(v[at]):
        return at
    i = at - 1
    while i > 0 and at - i < _WORD_BACK and _in_word(v[i - 1]):
        i -= 1
    return i if i == 0 or not _in_word(v[i - 1]) else at


def _in_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


# The newest of the old outputs, this share of them (1/FRESH_SHARE), are reduced after the others, oldest first: how much
# the agent wrote their names is no sign of their use yet.
FRESH_SHARE = 4
QUOTED_KEPT = 3  # lines a digest quotes whole, those that show the most of its most used names (names.quoted_lines)
QUOTE_NAMES = 12  # ... of its first this many names its line and outline do not show
ARG_LITERALS_KEPT = 8  # quoted phrases a cut argument keeps after its names


def _written_names(code: str, weight, exclude: str, limit: int, source: str = "") -> list[str]:
    """The names a cut argument keeps of its cut part: what that code defines first (`function EmptyState`, a top-level
    `const showNoSelection =`: what a later diff, test or report names), then what it binds inside its functions
    (`const showLoading =` in a component's body: what the next edit of the file names), then the others most used first."""
    if limit <= 0:
        return []
    candidates = candidate_names(code, weight)
    if "\n" in code:
        defined, bound = set(outline.defined_in(code)), set(outline.bound_in(code))
        candidates = sorted(candidates, key=lambda n: 0 if n in defined else 1 if n in bound else 2)  # (stable: ranked within each)
    return pick_safe(candidates, exclude, limit, source)


def truncate_arguments(arguments: str, keep: int, weight=None, names: int = NAMES_KEPT, check_names: bool = False) -> str:
    """Cut long string values, keeping the arguments valid JSON; non-JSON text is cut as text.
    The names in the cut part (paths, symbols) follow the cut, so the vocabulary of written code stays;
    `check_names`: each also looked at where it stands (PruneOptions.check_names)."""

    def cut_text(v: str) -> str:
        k = _word_start(v, keep)  # never through a name ("hookSpeci" kept, "ficOutput" listed): it goes whole after
        source = v if check_names else ""
        found = _written_names(v[k:], weight, v[:k], names, source)
        if names and ('"' in v or "'" in v):  # the messages and labels the code says ("Team not found"), after its names
            found += safe_literals(literals_in(v[k:]), exclude=v[:k], limit=ARG_LITERALS_KEPT, source=source)
        return cut(v, k) + TRUNCATED + (f" names: {NAMES_SEP.join(found)}" if found else "")

    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return cut_text(arguments)

    def cut_value(v: Any) -> Any:
        if isinstance(v, str) and len(v) > keep:
            return cut_text(v)
        if isinstance(v, list):
            return [cut_value(x) for x in v]
        if isinstance(v, dict):
            return {k: cut_value(x) for k, x in v.items()}
        return v

    return orjson.dumps(cut_value(value)).decode()
