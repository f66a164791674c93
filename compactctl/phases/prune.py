"""Phase 1: shrink tool output and long arguments with no LLM, least valuable first, only as far as needed.

Budget-aware: with a `target` (tokens), a transcript at or under it is left exactly as it is, and
reductions stop as soon as it fits. What goes first is decided from what the transcript shows, not
from tool names alone:

1. outputs of `--drop-tool` tools; identical outputs (the most recent copy stays; older ones become a
   placeholder and that call's one-liner);
2. superseded outputs: a read of a file that is read or written again later, a call repeated later
   with the same arguments;
3. old images (a short placeholder);
4. old outputs (outside the protected recent part), successful before failed, the least used first (the fewest names
   the person or the agent wrote per character; the newest quarter last, oldest first): each
   becomes a digest: what the call did and how it ended, its error lines, the names it holds
   (paths, identifiers, values) ranked by how often the rest of the transcript uses them, then its
   quoted phrases (a test's name, a message; never one redaction would change). The digest that takes the
   transcript under its target, then the earlier ones, keep as many more names as the room left holds; room
   still left goes to the outputs' lines, verbatim, under their digests (an excerpt): the run of lines that shows the
   most names the person or the agent wrote, else the first lines;
5. old tool-call arguments over `arg_limit` characters (code the agent wrote): long strings are cut to
   `arg_keep` characters, the JSON stays valid, and the names of the cut part (paths, symbols) are kept;
   the latest todo / plan call is never cut;
6. last, old outputs that describe work (an issue a tracker printed, a spec read: a list of items
   naming files and symbols, see `names.is_task_document`): their digest keeps 4x the names, in order.
With no `target` every step runs over everything outside the protected part. No message is removed,
the last user ask and `--keep-tool` outputs are never touched, tool pairs stay intact.
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Any

import orjson

from .. import refs
from ..lean import dataclass
from ..markers import DOC_NAMES_LINE, DUPLICATE, EXCERPT_LINE, NAMES_LINE, NAMES_SEP, OUTLINE_LINE  # noqa: F401 (re-exported for callers of prune)
from ..model import Message, Transcript, is_image_part
from ..tokens import Counter
from . import Archived, archive

if TYPE_CHECKING:
    from .prune_steps import _Context

# What each step makes of a message (digests, cut arguments) lives in prune_steps, with the name finding,
# outlines, tool outcomes and redaction it needs: imported by the first transcript that is over its target, so a
# run whose transcripts fit (a hook's, a CI fixture's) never loads them. Its helpers stay reachable from here.
_STEPS = ("truncate_arguments", "safe_literals", "candidate_names", "pick_safe")


def __getattr__(name: str) -> Any:
    if name in _STEPS:
        from . import prune_steps

        return getattr(prune_steps, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_STEPS])


SUPERSEDED = "[Superseded — a later call read or wrote this file]"
SUPERSEDED_RERUN = "[Superseded — the same call ran again later]"  # (the same name and arguments)
TRUNCATED = "...[truncated]"
IMAGE_PLACEHOLDER = "[image omitted by compaction]"
NAMES_KEPT = 64  # names a digest keeps
LITERALS_KEPT = 16  # ... and quoted phrases (a test's name, a message), after the names
DOC_NAMES_FACTOR = 4  # ... times that for an output that describes work, in its own order


@dataclass
class PruneOptions:
    """What prune may reduce, and how far."""

    protect_tokens: int = 12_800  # the most recent tokens are left verbatim
    target: int | None = None  # stop once the transcript fits this many tokens (None: prune all old output)
    min_dedup_chars: int = 200
    min_summary_chars: int = 200  # shorter outputs are already about one line
    arg_limit: int = 500
    arg_keep: int = 200
    dedup: bool = True
    summaries: bool = True
    args: bool = True
    images: bool = True
    count_tokens: bool = True  # count the tokens each pass saved (exact, costly on large outputs)
    keep_tools: tuple[str, ...] = ()  # tools whose outputs are kept verbatim
    digest_names: int = NAMES_KEPT  # names a digest or a cut argument keeps (0: one-liners only, the fastest)
    drop_tools: tuple[str, ...] = ()  # tools whose outputs are pruned first, wherever they stand
    refs: bool = True  # tag each pruned message with the reference of its archived original
    # With a target: count every message, for tokens_before/tokens_after and each pass's tokens. False:
    # count only what the decisions need (the same transcript and counts of steps and characters, much
    # less tokenizing on a transcript well over its target), those token figures left out (None, 0).
    exact_totals: bool = True
    # Over the target after every reduction, digests keep VOCABULARY_FACTOR x their names for the summary that must
    # follow. False: they do not (no summary will: compact's output when even a summary cannot fit).
    vocabulary: bool = True
    # The last message is left as it is, even a tool's output over protect_tokens. False (with a plan to follow): such an
    # output is reduced like the older ones, since the plan keeps only whole groups that fit its tail (see _always_kept).
    keep_last: bool = False
    # Each name a digest or a cut argument lists is also looked at where it stands in its output, and left out when a
    # redaction rule takes it there (`password: X`, `postgres://app:X@host`: alone, no rule knows it). For an output an
    # LLM will read: `compact` sets it with an LLM summarizer. It about doubles prune's time, so a run whose output
    # stays on the machine does not pay it.
    check_names: bool = False


@dataclass
class PassStats:
    """What one kind of reduction did: messages, characters and tokens saved."""

    count: int = 0
    chars: int = 0
    tokens: int = 0


@dataclass
class PruneStats:
    """What a prune did, per kind of reduction."""

    dedup: PassStats = field(default_factory=PassStats)
    summaries: PassStats = field(default_factory=PassStats)
    args: PassStats = field(default_factory=PassStats)
    images: PassStats = field(default_factory=PassStats)
    protected_from: int = 0  # first index of the protected recent part
    tokens_before: int | None = None  # with a target: the transcript's tokens before and after
    tokens_after: int | None = None
    archived: list[Archived] = field(default_factory=list, repr=False)

    def as_dict(self) -> dict:
        d: dict[str, Any] = {k: vars(getattr(self, k)).copy() for k in ("dedup", "summaries", "args", "images")}
        d["protected_from"] = self.protected_from
        if self.tokens_before is not None:
            d["tokens_before"], d["tokens_after"] = self.tokens_before, self.tokens_after
        return d


def protected_start(counts: list[int], budget: int, msgs: list[Message], keep_last: bool = False) -> int:
    """First index of the recent part whose tokens (`counts`, one per message) fit `budget` (at least the last message,
    unless it is a tool's output: see `_always_kept`)."""
    n = len(counts)
    total = 0
    i = n
    while i > 0 and total + counts[i - 1] <= budget:
        total += counts[i - 1]
        i -= 1
    return min(i, _always_kept(msgs, keep_last))


def _always_kept(msgs: list[Message], keep_last: bool) -> int:
    """The index from which prune leaves messages as they are whatever the budget: the last message (the last ask,
    the agent's last words), but not a tool's output over the budget unless `keep_last`. The plan keeps only whole
    groups that fit its tail, so such an output kept whole would go to the summary; reduced, its call and the digest
    stay in the tail."""
    n = len(msgs)
    return n if n and msgs[-1].role == "tool" and not keep_last else max(n - 1, 0)


# _prune_bounded's way only for a transcript of this many characters a target token (about twice the
# target at 4 characters a token): nearer the target, reducing beyond the stopping point costs more than
# counting everything.
BOUNDED_MIN_CHARS = 8

# Steps, in the order their candidates are applied (lowest value first). OLD_DOC: an old output that
# describes work (names.is_task_document), digested last and with all its names.
DROP, DEDUP, SUPERSEDE, IMAGE, OLD_OK, OLD_FAILED, ARGS, OLD_DOC = range(8)


def prune(t: Transcript, counter: Counter, opts: PruneOptions | None = None) -> tuple[Transcript, PruneStats]:
    try:
        return _prune(t, counter, opts)
    finally:
        counter.shed_runs()  # what a long output's digest needed held while its sizes were tried


def _prune(t: Transcript, counter: Counter, opts: PruneOptions | None) -> tuple[Transcript, PruneStats]:
    opts = opts or PruneOptions()
    st = PruneStats()
    msgs = list(t.messages)
    n = len(msgs)
    if not n:
        return t, st
    if opts.target is not None:
        if not opts.exact_totals:
            done = _prune_bounded(t, counter, opts)
            if done is not None:
                return done
        counts = counter.messages(msgs)
        total = sum(counts)
        st.tokens_before = st.tokens_after = total
        if total <= opts.target:
            st.protected_from = n
            return t, st
        protect = protected_start(counts, opts.protect_tokens, msgs, opts.keep_last)
    else:
        # No target (--prune-all): no plan is told what fits, so the last message stays as it is.
        protect = _protected_start_bounded(msgs, counter, opts.protect_tokens, {}, keep_last=True)
        total = 0
    st.protected_from = protect
    from .prune_steps import _Context

    ctx = _Context(t, msgs, counter, opts, protect)
    last: tuple[int, int, Message] | None = None
    digests: list[tuple[int, int, Message, PassStats]] = []
    for _, i, step in ctx.candidates():
        if opts.target is not None and total <= opts.target:
            break
        new = ctx.reduce(i, step)
        if new is None:
            continue
        old = msgs[i]
        delta = counter.message(old) - counter.message(new) if (opts.count_tokens or opts.target is not None) else 0
        if opts.target is not None and delta <= 0:
            continue
        archive(t, old, "prune", st.archived)
        stats = _pass_stats(st, step)
        stats.count += 1
        stats.chars += _chars(old) - _chars(new)
        stats.tokens += delta
        total -= delta
        msgs[i] = new
        last = (i, step, old)
        if step in (OLD_OK, OLD_DOC):
            digests.append((i, step, old, stats))
    if last is None:
        return t, st
    if opts.target is not None:
        st.tokens_after = total + _settle(ctx, st, total, last, digests)
    return t.evolve(messages=msgs), st


def _settle(ctx: _Context, st: PruneStats, total: int, last: tuple[int, int, Message], digests, count: bool = True) -> int:
    """Where the reductions stopped, with a target (`total`: exact): still over it, the digests keep the
    vocabulary; under it, the last reduction uses the room left. Returns the tokens that adds; `count`:
    the pass stats get their token figures (not on _prune_bounded's way, which leaves them out)."""
    target = ctx.opts.target
    assert target is not None
    if total > target:
        bare = _without_signatures(ctx, digests, total - target, count)
        if bare is not None:
            return bare
        return _keep_vocabulary(ctx, digests, count) if ctx.opts.vocabulary else 0
    added = _use_room(ctx, *last, target - total, _pass_stats(st, last[1]), count)
    # What the last digest cannot use (it keeps all its names) goes to the earlier ones, the last reduced first;
    # what is left when every digest keeps all its names, to excerpts of their outputs' lines, in the same order.
    for i, step, old, stats in reversed(digests):
        if target - total - added < MIN_ROOM:
            break
        if i != last[0]:
            added += _use_room(ctx, i, step, old, target - total - added, stats, count)
    for i, step, old, stats in reversed(digests):
        if target - total - added < EXCERPT_MIN_ROOM:
            break
        added += _with_excerpt(ctx, i, step, old, target - total - added, stats, count)
    return added


def _without_signatures(ctx: _Context, digests: list[tuple[int, int, Message, PassStats]], over: int, count: bool) -> int | None:
    """Every reduction left the transcript `over` tokens over its target: when its digests' outlines without their
    definitions' parameters (ctx.bare_digest: as a digest at its default size listed them before it showed them) take
    it within, they do, and no summary needs to follow (a transcript that fit by pruning alone still does). Returns
    the tokens that adds (negative); None when they would not take it within (the digests stay as they are). Counts
    the digests it remakes whatever `count` (their stats' token figures only with it)."""
    if sum(ctx.signature_chars(old) for _, step, old, _ in digests if step == OLD_OK) < over:
        return None  # (a token is at least a character: leaving out the parameters cannot save enough)
    bare: list[tuple[int, Message, int, PassStats]] = []
    saved = 0
    for i, step, old, stats in digests:
        cur = ctx.msgs[i]
        new = ctx.bare_digest(i, step, old, cur) if step == OLD_OK else cur
        if new is not cur:
            delta = ctx.counter.message(new) - ctx.counter.message(cur)
            bare.append((i, new, delta, stats))
            saved -= delta
    if saved < over:
        return None
    return sum(_put(ctx, i, new, delta, stats, count) for i, new, delta, stats in bare)


# How many times its names a digest keeps when every reduction leaves the transcript over its target (a summary must follow).
VOCABULARY_FACTOR = 4  # x opts.digest_names: 256 by default


def _keep_vocabulary(ctx: _Context, digests: list[tuple[int, int, Message, PassStats]], count: bool) -> int:
    """Every reduction left the transcript over its target, so a summary must follow, and its identifier
    index can only draw on the names the digests kept: each digest keeps up to VOCABULARY_FACTOR x its names (a
    document's 4x that). The digests of a transcript that fits stay at opts.digest_names. Replaces
    ctx.msgs[i] and returns the tokens added (0 without `count`)."""
    if not ctx.opts.digest_names:
        return 0
    keep = ctx.opts.digest_names * VOCABULARY_FACTOR
    added = 0
    for i, step, old, stats in digests:
        cur = ctx.msgs[i]
        new = ctx.reduce_from(old, i, step, keep * (DOC_NAMES_FACTOR if step == OLD_DOC else 1))
        if new is None or new.text() == cur.text():
            continue
        stats.chars -= _chars(new) - _chars(cur)
        if count:
            delta = ctx.counter.message(new) - ctx.counter.message(cur)
            stats.tokens -= delta
            added += delta
        ctx.msgs[i] = new
    return added


# The room a digest may grow into is used when it is at least this many tokens.
MIN_ROOM = 16


def _use_room(ctx: _Context, i: int, step: int, old: Message, room: int, stats: PassStats, count: bool = True) -> int:
    """The last reduction took the transcript under its target with `room` tokens to spare: a digest
    keeps as many more names as that room holds (the reduction goes only as far as the target needs).
    Replaces ctx.msgs[i] and returns the tokens it added (0 when it stays as it was). A size tried that is
    sure not to fit by its first parts is not made whole (`most`: _Context._with_names)."""
    if step not in (OLD_OK, OLD_FAILED, OLD_DOC) or room < MIN_ROOM or not ctx.opts.digest_names:
        return 0
    counter, cur = ctx.counter, ctx.msgs[i]
    base = counter.message(cur)
    lo = ctx.opts.digest_names * (DOC_NAMES_FACTOR if step == OLD_DOC else 1)
    hi = len(ctx.names_of(old.text()))
    best, best_tokens = cur, base
    if hi > lo:  # all of them, when the room holds them (no search)
        new = ctx.reduce_from(old, i, step, hi, most=base + room)
        tokens = counter.message(new) if new is not None else room + base + 1
        if new is not None and tokens - base <= room:
            best, best_tokens, lo = new, tokens, hi
        else:
            hi -= 1
    while lo < hi:  # the most names whose digest fits base + room
        mid = (lo + hi + 1) // 2
        new = ctx.reduce_from(old, i, step, mid, most=base + room)
        tokens = counter.message(new) if new is not None else room + base + 1
        if new is not None and tokens - base <= room:
            best, best_tokens, lo = new, tokens, mid
        else:
            hi = mid - 1
    return _put(ctx, i, best, best_tokens - base, stats, count)


def _put(ctx: _Context, i: int, new: Message, added: int, stats: PassStats, count: bool) -> int:
    """Message i becomes `new` (`added` tokens longer; nothing when it is message i already), in its pass's stats too
    (tokens only when `count`). Returns the tokens added."""
    cur = ctx.msgs[i]
    if new is cur:
        return 0
    stats.chars -= _chars(new) - _chars(cur)
    if count:
        stats.tokens -= added
    ctx.msgs[i] = new
    return added


# The room a digest that keeps all its names leaves is given to its output's lines (an excerpt) when it holds this many tokens.
EXCERPT_MIN_ROOM = 48


def _with_excerpt(ctx: _Context, i: int, step: int, old: Message, room: int, stats: PassStats, count: bool) -> int:
    """Digest i keeps all its names and `room` tokens are still free: lines of its output follow it (_excerpt), after
    the digest ctx.excerpt_digest makes (its outline bare when the excerpt shows the definitions' lines instead).
    Replaces ctx.msgs[i] and returns the tokens it added (0 when no line fits: the digest stays as it was)."""
    cur = ctx.msgs[i]
    if EXCERPT_LINE in cur.text():
        return 0
    base = ctx.counter.message(cur)
    digest = ctx.excerpt_digest(i, step, old, cur)
    new, tokens = _excerpt(ctx, i, old, digest, base if digest is cur else ctx.counter.message(digest), base + room)
    if new is digest:
        return 0
    return _put(ctx, i, new, tokens - base, stats, count)


def _excerpt_said(text: str) -> str:
    """The part of an excerpt's digest before its lines: the digest's separator, EXCERPT_LINE and what it says (to
    the line's end)."""
    at = text.index(EXCERPT_LINE)
    return text[at - 1 : text.index("\n", at) + 1]


def _excerpt(ctx: _Context, i: int, old: Message, digest: Message, tokens: int, limit: int) -> tuple[Message, int]:
    """`digest` (of `old`, message i, `tokens` long) followed by as many of `old`'s lines, verbatim, as keep
    it within `limit` tokens: the room the target leaves once every digest keeps all its names. The first try sizes
    the cut at the characters a token of the whole output took; each exact count after moves it by what is left (or
    over) at those of the excerpt; the longest that fits is kept (the digest alone when no line fits)."""
    counter, cur = ctx.counter, ctx.msgs[i]
    best, best_tokens = digest, tokens
    # Characters: the first guess at the characters a token of the whole output took (counted already), then measured.
    n, seen = int((limit - tokens) * len(old.text()) / max(counter.message(old), 1) * 0.97), ""
    ctx.msgs[i] = digest
    try:
        for _ in range(6):
            new = ctx.excerpt(i, old, n)
            if new is None or new.text() == seen:
                break
            seen, got = new.text(), counter.message(new)
            per = (len(seen) - len(digest.text())) / max(got - tokens, 1)  # characters a token of the excerpt took
            if got <= limit:
                if got > best_tokens:
                    best, best_tokens = new, got
                if limit - got < EXCERPT_MIN_ROOM // 2:
                    break
                n += int((limit - got) * per * 0.9)
            else:  # at least its last line fewer: the cut is at a line's end, and a smaller n may end at the same one
                n = min(n - int((got - limit) * per * 1.1) - 1, len(seen) - len(digest.text()) - len(_excerpt_said(seen)) - 1)
    finally:
        ctx.msgs[i] = cur
    return best, best_tokens


def _tagged(old: Message, new: Message, opts: PruneOptions) -> Message:
    """The first change of a message carries its original's reference."""
    return refs.tag(old, new, refs.ref_of(old)) if opts.refs and old.untouched else new


def _pass_stats(st: PruneStats, step: int) -> PassStats:
    return {DROP: st.summaries, DEDUP: st.dedup, SUPERSEDE: st.summaries, IMAGE: st.images, ARGS: st.args}.get(step, st.summaries)


@dataclass(slots=True)
class _Applied:
    """A reduction `_prune_bounded` applied, and how to take it back."""

    i: int
    step: int
    old: Message
    tokens: int  # of the new message, exactly
    stats: PassStats
    chars: int
    archived: int  # len(st.archived) before it


def _prune_bounded(t: Transcript, counter: Counter, opts: PruneOptions) -> tuple[Transcript, PruneStats] | None:
    """`prune` with a target, counting only what its decisions need (opts.exact_totals False): the same
    transcript and stats but the token figures. None: the transcript does not look well over its target
    (by its size), where counting everything (the exact path) costs less than reducing beyond the stopping point.

    A transcript whose UTF-8 bytes (and the fixed costs) are within the target fits whatever its exact
    count (a token is at least one byte): it is returned as it came, nothing tokenized.

    The exact path applies the candidates in order, skipping those that save no token, until the total
    fits. Here every candidate is applied (_apply_bounded), each decided "saves tokens" on a lower bound of its
    original (counter.message_bound: a prefix of a long output settles it); then, from the total at the end (the
    remaining originals counted exactly, the reduced messages' counts known), the applied reductions are
    taken back from the last while the total before one was already within the target, which is where
    the exact loop stops (totals only fall, so the ones it applied are the first ones here)."""
    assert opts.target is not None
    target = opts.target
    msgs = list(t.messages)
    n = len(msgs)
    if sum(counter.message_upper(m) for m in msgs) <= target:  # it fits as it came, proven with no tokenizing
        return t, PruneStats(protected_from=n)
    if sum(_chars(m) for m in msgs) < BOUNDED_MIN_CHARS * target:  # a guess: it picks the way, not the result
        return None
    exact: dict[int, int] = {}  # message index -> its current version's tokens, exactly

    def count_at(i: int) -> int:
        c = exact.get(i)
        if c is None:
            c = exact[i] = counter.message(msgs[i])
        return c

    protect = _protected_start_bounded(msgs, counter, opts.protect_tokens, exact, opts.keep_last)
    st = PruneStats(protected_from=protect)
    from .prune_steps import _Context

    ctx = _Context(t, msgs, counter, opts, protect)
    applied = _apply_bounded(ctx, st, exact, target)
    total = sum(count_at(i) for i in range(n))
    while applied:
        a = applied[-1]
        need = target - total + a.tokens + 1  # the total before it is over the target when its original has this many tokens
        before = total + counter.message_bound(a.old, need) - a.tokens  # exact when within the target
        if before > target:
            break
        applied.pop()  # the exact loop stops before it
        msgs[a.i] = a.old
        del st.archived[a.archived :]
        a.stats.count -= 1
        a.stats.chars -= a.chars
        total = before
    if not applied:
        if total <= target:  # it fitted as it came
            st.protected_from = n
        return t, st
    last = applied[-1]
    digests = [(a.i, a.step, a.old, a.stats) for a in applied if a.step in (OLD_OK, OLD_DOC)]
    _settle(ctx, st, total, (last.i, last.step, last.old), digests, count=False)
    return t.evolve(messages=msgs), st


def _apply_bounded(ctx: _Context, st: PruneStats, exact: dict[int, int], target: int) -> list[_Applied]:
    """_prune_bounded's reductions, applied in the candidates' order, each that saves tokens. The later steps (long
    arguments, task documents) are the ones mostly taken back: when they begin with the transcript near its target
    (_total_within: counted to the end, a few of its messages), it goes on as the exact loop does, stopping as soon
    as the total fits."""
    counter, msgs = ctx.counter, ctx.msgs
    applied: list[_Applied] = []
    total: int | None = None  # exact, once the later steps begin near the target
    at = None
    for key, i, step in ctx.candidates():
        if total is None and key != at and key >= ARGS:
            total = _total_within(counter, msgs, exact, target + target // NEAR)
        if total is not None and total <= target:
            break  # the exact loop stops here
        at = key
        new = ctx.reduce(i, step)
        if new is None:
            continue
        old = msgs[i]
        tokens = counter.message(new)
        if (exact[i] if i in exact else counter.message_bound(old, tokens + 1)) <= tokens:
            continue  # saves no token (message_bound is exact when under its need)
        done = _Applied(i, step, old, tokens, _pass_stats(st, step), _chars(old) - _chars(new), len(st.archived))
        archive(ctx.t, old, "prune", st.archived)
        done.stats.count += 1
        done.stats.chars += done.chars
        applied.append(done)
        msgs[i] = new
        if total is not None:
            total -= exact[i] - tokens
        exact[i] = tokens
    return applied


# Near the target, for _apply_bounded: within a NEAR-th of it above. A guess at GUESS_CHARS characters a token of what
# is not counted yet decides whether to count (the guess picks the way, not the result).
NEAR = 4
GUESS_CHARS = 4


def _total_within(counter: Counter, msgs: list[Message], exact: dict[int, int], limit: int) -> int | None:
    """The total tokens of `msgs` as they stand when it is within `limit`, each message counted to its end going into
    `exact` (the others' counts there); None when over it, counting only as far as that takes, or with no counting
    when the guess puts it over."""
    total = sum(exact.values())
    rest = [i for i in range(len(msgs)) if i not in exact]
    if total + sum(_chars(msgs[i]) for i in rest) // GUESS_CHARS > limit:
        return None
    for i in rest:
        c = counter.message_bound(msgs[i], limit - total + 1)  # exact when within the limit
        total += c
        if total > limit:
            return None
        exact[i] = c
    return total


def _protected_start_bounded(msgs: list[Message], counter: Counter, budget: int, exact: dict[int, int], keep_last: bool = False) -> int:
    """protected_start, counting the message that no longer fits only as far as it takes (message_bound);
    the counts of the ones that fit go into `exact`."""
    n = len(msgs)
    total = 0
    i = n
    while i > 0:
        c = counter.message_bound(msgs[i - 1], budget - total + 1)  # exact when it fits
        if total + c > budget:
            break
        exact[i - 1] = c
        total += c
        i -= 1
    return min(i, _always_kept(msgs, keep_last))


def _chars(m: Message) -> int:
    n = len(m.text()) + sum(len(c.arguments) for c in m.tool_calls)
    if isinstance(m.content, list):
        n += sum(len(orjson.dumps(p)) for p in m.content if is_image_part(p))
    return n
