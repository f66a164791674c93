"""Claude Code sessions (~/.claude/projects/<slug>/<session>.jsonl, subagents in <session>/subagents/).

One API message is split over several lines with the same message.id (merged here); tool results
come in `user` lines (with a structured `toolUseResult` copy); most lines are not messages
(`progress`, `file-history-snapshot`, `system` records); `uuid`/`parentUuid` chain the lines.
As in Claude Code, the live context is what follows the last `compact_boundary`; the lines before
it are kept as they are.

The lines form a tree, not a list: a rewind (Esc Esc, an edited prompt) or a retry leaves the abandoned
branch in the file, and an old version wrote subagent turns (`isSidechain`) into it. The conversation is
the chain from the leaf back to the root, with the parallel tool calls the chain walk alone would miss
(see `_off_path`); the other lines of the context are off the path: not read, and left out of a changed file.

A compacted session is written the way Claude Code writes its own compaction: a `compact_boundary`
record (parentUuid null) then the head, an `isCompactSummary` user line holding the summary, and the
tail, with the parentUuid chain relinked wherever a parent was removed, so the tool can resume it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from collections.abc import Set as AbstractSet

import orjson

from ..errors import DataError
from ..model import SYSTEM_ROLES, Message, Transcript, is_summary
from . import Reader, Record
from .blocks import assistant_blocks, assistant_from_blocks, tool_result_block, user_from_blocks
from .linelog import LineLog, layout, lines_of, stable_uuid, unchanged
from .linelog import dropped_records as dropped_records  # noqa: PLC0414

NAME = "claude_code"
CARRIER_KEYS = ()
CONTINUED = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\n"
)
ENVELOPE = ("parentUuid", "isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch", "slug")


def sniff(obj: dict) -> str | None:
    if obj.get("type") in ("user", "assistant", "progress", "system", "summary", "file-history-snapshot", "queue-operation") and (
        "sessionId" in obj or "uuid" in obj or "leafUuid" in obj or obj.get("type") == "file-history-snapshot"
    ):
        return "session"
    return None


def _is_boundary(obj: dict) -> bool:
    return obj.get("type") == "system" and obj.get("subtype") == "compact_boundary"


def _message_id(msg: dict) -> str | None:
    """The API message id a line's message carries (an id that is no text groups nothing)."""
    mid = msg.get("id")
    return mid if isinstance(mid, str) else None


def read(records: Iterator[Record], source: str, layout_: str, reader: Reader) -> Iterator[Transcript]:
    lines: list[tuple[bytes, dict]] = []
    linenos: list[int] = []
    for lineno, raw, obj in records:
        if "role" in obj and "type" not in obj:  # a chat message of another format: never read, so never silently kept
            with reader.guard(lineno, raw):
                raise DataError(source, lineno, "a chat message (a role, no type) in a Claude Code log: a line of another format")
            continue
        lines.append((raw, obj))
        linenos.append(lineno)
    if not lines:
        return
    start = 0
    for i, (_, obj) in enumerate(lines):
        if _is_boundary(obj):
            start = i + 1
    off = _off_path(lines, start, source, reader)
    msgs: list[Message] = []
    msg_lines: list[list[int]] = []
    last_assistant: dict[str | None, int] = {}  # message.id -> index in msgs (looked up only for an id)
    for i in range(start, len(lines)):
        raw, obj = lines[i]
        typ, msg = obj.get("type"), obj.get("message")
        if typ not in ("user", "assistant") or not isinstance(msg, dict) or i in off:
            continue
        with reader.guard(linenos[i], raw):
            if typ == "assistant":
                mid = _message_id(msg)
                k = last_assistant.get(mid, -1) if mid is not None else -1
                if k >= 0 and (k == len(msgs) - 1 or all(x.role == "tool" for x in msgs[k + 1 :])):
                    _merge(msgs[k], assistant_from_blocks(msg.get("content"), source, linenos[i]))
                    msg_lines[k].append(i)
                    continue
                m = assistant_from_blocks(msg.get("content"), source, linenos[i])
                last_assistant[mid] = len(msgs)
                msgs.append(m)
                msg_lines.append([i])
            else:
                for m in _user_messages(obj, msg, source, linenos[i]):
                    msgs.append(m)
                    msg_lines.append([i])
    for k, m in enumerate(msgs):
        m.index = k
        m.origin = m.anchor = ("lines", tuple(msg_lines[k]))
    native = LineLog(lines, start, msg_lines, off)
    yield Transcript(msgs, id=source, source=source, line=linenos[0], format=NAME, layout="session", native=native, cwd=_cwd(lines, start))


def _cwd(lines: list[tuple[bytes, dict]], start: int) -> str | None:
    """The working directory most lines of the live context record (`cwd`: the project; a `cd` moves it for a while)."""
    seen: dict[str, int] = {}
    for _, obj in lines[start:]:
        cwd = obj.get("cwd")
        if isinstance(cwd, str) and cwd.startswith("/"):
            seen[cwd] = seen.get(cwd, 0) + 1
    return max(seen, key=seen.__getitem__) if seen else None


def _is_message(obj: dict) -> bool:
    return obj.get("type") in ("user", "assistant") and isinstance(obj.get("message"), dict)


def _off_path(lines: list[tuple[bytes, dict]], start: int, source: str, reader: Reader) -> frozenset[int]:
    """The context lines (from `start`) that are not part of the conversation Claude Code resumes.

    Claude Code's loader (`loadTranscriptFile` + `buildConversationChain` in its sessionStorage; described in
    github.com/zhukunpenglinyutong/jetbrains-cc-gui pull 1660 and zenolab124/monet pull 28, which mirror it, and
    in Claude Code's CHANGELOG 2.1.101, "the loader anchored on a dead-end branch instead of the live
    conversation") takes the newest non-sidechain leaf, walks `parentUuid` back to the root, then adds what that
    single-parent walk misses: the other lines of each API message on the path (one line per content block, the
    same `message.id`: parallel tool calls are siblings) and the tool-result lines whose parent is one of them.
    Here the leaf is the last user/assistant line of the file that is not a sidechain (all lines of a subagent's
    own file are: then the last of them). Off the path are only, so that nothing else changes:
    - user/assistant lines that fork off the path (a rewound or retried turn) and every line under them;
    - sidechain lines (with their descendants) in a file that has a main thread.
    Non-message lines hanging off the path (progress, system records) stay, as do lines whose chain ends
    before reaching the path (a parent that is not in the file: a subagent's prompts, a broken chain), as read.
    `summary` records (a title for a leaf) and lines with no uuid never decide anything and are kept."""
    at: dict[str, int] = {}
    for i in range(start, len(lines)):
        u = lines[i][1].get("uuid")
        if isinstance(u, str):
            at[u] = i
    live, main = _live_path(lines, start, at)
    if not live:
        return frozenset()
    state: dict[int, tuple[bool, bool]] = {}  # line -> (hangs off the path, off the path)
    for i in range(start, len(lines)):
        if isinstance(lines[i][1].get("uuid"), str) and lines[i][1]["uuid"] not in live:
            _classify(i, lines, at, live, main, state)
    found = frozenset(i for i, (_, off) in state.items() if off)
    if found:
        reader.warn(
            f"{source}: {len(found)} lines off the conversation's path (abandoned branches of a rewind or retry, sidechains) "
            "are not read; a changed file is written without them (--archive keeps them for restore)"
        )
    return found


def _live_path(lines: list[tuple[bytes, dict]], start: int, at: dict[str, int]) -> tuple[set[str], bool]:
    """(the uuids of the conversation's lines, whether the file has a main thread): the chain from the leaf and
    the parallel siblings and results Claude Code's `recoverOrphanedParallelToolResults` adds back."""
    msgs = [i for i in range(start, len(lines)) if _is_message(lines[i][1]) and isinstance(lines[i][1].get("uuid"), str)]
    main = [i for i in msgs if not lines[i][1].get("isSidechain")]
    pool = main or msgs
    live: set[str] = set()
    if not pool:
        return live, bool(main)
    u = lines[pool[-1]][1]["uuid"]
    while isinstance(u, str) and u in at and u not in live:
        live.add(u)
        u = lines[at[u]][1].get("parentUuid")
    _recover_parallel(lines, msgs, at, live)
    return live, bool(main)


def _recover_parallel(lines: list[tuple[bytes, dict]], msgs: list[int], at: dict[str, int], live: set[str]) -> None:
    """Add to `live` the other lines of each API message on it and the tool results whose parent is one of them."""
    siblings: dict[str, list[str]] = {}  # message.id -> its lines' uuids
    results: dict[str, list[str]] = {}  # parentUuid -> the tool-result lines under it
    for i in msgs:
        obj = lines[i][1]
        mid = obj["message"].get("id")
        if obj["type"] == "assistant" and isinstance(mid, str):
            siblings.setdefault(mid, []).append(obj["uuid"])
        elif obj["type"] == "user" and _has_result(obj["message"].get("content")):
            parent = _message_above(lines, at, obj.get("parentUuid"))
            if parent is not None:
                results.setdefault(parent, []).append(obj["uuid"])
    on_path = {
        _message_id(lines[at[u]][1]["message"]) for u in live if lines[at[u]][1].get("type") == "assistant" and _is_message(lines[at[u]][1])
    }
    for mid in on_path:
        for s in siblings.get(mid, []) if isinstance(mid, str) else []:
            live.add(s)
            live.update(results.get(s, []))


def _message_above(lines: list[tuple[bytes, dict]], at: dict[str, int], u) -> str | None:
    """The uuid of the nearest user/assistant line at or above `u`, through the progress and system lines between
    (a tool's result may hang under a progress line of its call)."""
    seen: set[str] = set()
    while isinstance(u, str) and u in at and u not in seen:
        obj = lines[at[u]][1]
        if _is_message(obj):
            return u
        seen.add(u)
        u = obj.get("parentUuid")
    return None


def _has_result(content) -> bool:
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def _classify(i: int, lines, at: dict[str, int], live: set[str], main: bool, state: dict[int, tuple[bool, bool]]) -> None:
    """Set state[i] (and its ancestors'): whether the line hangs off the path, whether it is off it."""
    path: list[int] = []
    j: int | None = i
    parent: tuple[bool, bool] | None = None  # the state below the first ancestor already known
    while j is not None and j not in state and j not in path:
        path.append(j)
        p = lines[j][1].get("parentUuid")
        k = at.get(p) if isinstance(p, str) else None
        if k is not None and lines[k][1]["uuid"] in live:
            parent, j = (True, False), None  # a child of the path: hangs off it, not off it by that alone
        else:
            j = k
    if parent is None:
        parent = state.get(j, (False, False)) if j is not None else (False, False)
    for k in reversed(path):
        obj = lines[k][1]
        hangs, off = parent
        off = off or (hangs and _is_message(obj)) or (main and bool(obj.get("isSidechain")))
        state[k] = parent = (hangs, off)


def _merge(base: Message, part: Message) -> None:
    """Add a later line of the same API message (same message.id: one line per content block) to it."""
    base.content = (base.content if isinstance(base.content, list) else []) + (part.content if isinstance(part.content, list) else [])
    base.tool_calls += part.tool_calls
    if part.reasoning:
        base.reasoning = (base.reasoning + "\n" if base.reasoning else "") + part.reasoning
    if part.extra.get("_thinking_blocks"):
        base.extra.setdefault("_thinking_blocks", []).extend(part.extra["_thinking_blocks"])


def _envelope(template: dict) -> dict:
    return {k: template[k] for k in ENVELOPE if k in template}


def write(t: Transcript) -> Iterator[bytes]:
    log = t.native if isinstance(t.native, LineLog) else None
    if log is None:
        yield from _fresh(t)
        return
    if unchanged(t):
        for raw, _ in log.lines:
            yield raw
        return
    plan = layout(t)
    template, last_uuid = _last_of_path(log)
    # New lines' uuids come from the session and their content, never from the input's name: a file and the
    # same bytes through stdin (the `prune | plan | summarize` chain) get the same lines.
    seed = template.get("sessionId") or t.id
    out: list[tuple[bytes | None, dict]] = [log.lines[j] for j in range(log.context_start)]
    boundary_at = None
    if plan.summary is not None:
        boundary_at = len(out)
        out.append(
            (
                None,
                {
                    **_envelope(template),
                    "parentUuid": None,
                    "logicalParentUuid": last_uuid,
                    "type": "system",
                    "subtype": "compact_boundary",
                    "content": "Conversation compacted",
                    "isMeta": False,
                    "timestamp": template.get("timestamp"),
                    "uuid": stable_uuid(seed, "boundary", last_uuid),
                    "level": "info",
                    "compactMetadata": {"trigger": "auto", "compactctl": True},
                },
            )
        )
    written = _lay_out(out, boundary_at, _context_items(plan, log, template, seed, False), log, template, seed)
    # the summary is written as a user line (`isCompactSummary`), whatever role assembly gave it
    summary = [("user", (), None)] if plan.summary is not None else []
    expected = [*map(_shape, plan.head), *summary, *map(_shape, plan.tail)]
    if not _reads_back(written, expected):
        # the lines placed where they came from do not read back as this transcript (a shape Claude Code does not
        # write: one message's lines around another's results, results of several messages on one line): every
        # message on a line of its own, in transcript order, on one chain
        written = _lay_out(out, boundary_at, _context_items(plan, log, template, seed, True), log, template, seed, linear=True)
    for raw, _ in written:
        yield raw


def _context_items(plan, log: LineLog, template: dict, seed: str, linear: bool) -> list[tuple[float | None, tuple, bool]]:
    """The items after the boundary, in the order they are written, the summary after the last of the head."""
    items: list[tuple[float | None, tuple, bool]] = list(_items(plan, log, linear))  # the summary goes in with no source position
    if plan.summary is not None:
        last_head = max((n for n, (_, _, in_head) in enumerate(items) if in_head), default=-1)
        summary = {
            **_envelope(template),
            "type": "user",
            "message": {"role": "user", "content": CONTINUED + plan.summary.text()},
            "isCompactSummary": True,
            "isVisibleInTranscriptOnly": True,
            "uuid": stable_uuid(seed, "summary", plan.summary.text()),
            "timestamp": template.get("timestamp"),
        }
        items.insert(last_head + 1, (None, (None, summary), True))
    return items


def _lay_out(
    prefix: list, boundary_at: int | None, items: list, log: LineLog, template: dict, seed: str, linear: bool = False
) -> list[tuple[bytes, dict]]:
    """The lines written: `prefix` (the lines before the context, the boundary) then `items`, relinked."""
    out = list(prefix)
    # lines whose parent is the line before them: moved and new lines (repair's stubs) and the line after each, so
    # that the chain Claude Code follows goes through them (every message line, written `linear`)
    force: set[int] = set()
    after_moved = False
    ids: set[str] = set()
    for _, payload, _ in items:
        moved = payload[0] == "moved"
        inserted = moved or payload[0] in ("new", "split", "moved-rebuild")
        line = _materialize(payload[1] if moved else payload, log, template, seed)
        if linear and _is_message(line[1]):
            inserted = True
            line = _own_id(line, ids, seed)
        if inserted or after_moved:
            force.add(len(out))
        after_moved = inserted
        out.append(line)
    return list(_relink(out, boundary_at, force))


def _own_id(line: tuple[bytes | None, dict], ids: set[str], seed: str) -> tuple[bytes | None, dict]:
    """An assistant line written `linear` holds one whole message: a message.id an earlier line had is replaced,
    so that the reader does not merge the two messages."""
    raw, obj = line
    mid = _message_id(obj["message"]) if obj.get("type") == "assistant" else None
    if mid is None:
        return line
    if mid in ids:
        mid = "msg_" + stable_uuid(seed, "id", obj.get("uuid")).replace("-", "")
        obj = {**obj, "message": {**obj["message"], "id": mid}}
        raw = None
    ids.add(mid)
    return raw, obj


def _shape(m: Message) -> tuple:
    """What of a message the lines must give back when read: its role, its calls, the call it answers."""
    return ("user" if m.role in SYSTEM_ROLES else m.role, tuple(c.id for c in m.tool_calls), m.tool_call_id)


def _reads_back(written: list[tuple[bytes, dict]], expected: list[tuple]) -> bool:
    """Whether `written` reads back as messages of the shapes `expected` (the summary: a user message)."""
    quiet = Reader(warn=lambda _msg: None)
    try:
        got = [
            _shape(m) for t in read(((n, raw, obj) for n, (raw, obj) in enumerate(written, 1)), "", "session", quiet) for m in t.messages
        ]
    except DataError:
        return False
    return _in_any_result_order(got) == _in_any_result_order(expected)


def _in_any_result_order(shapes: list[tuple]) -> list:
    """`shapes` with each run of tool results as a set: the writer keeps results in the order Claude Code logged
    them (both APIs take them in any order)."""
    out: list = []
    for s in shapes:
        if s[0] == "tool" and out and isinstance(out[-1], list):
            out[-1].append(s)
        else:
            out.append([s] if s[0] == "tool" else s)
    return [sorted(x, key=repr) if isinstance(x, list) else x for x in out]


def _last_of_path(log: LineLog) -> tuple[dict, str | None]:
    """The last line with a session (the envelope of new lines) and the last uuid, of the lines on the path."""
    kept = [o for j, (_, o) in enumerate(log.lines) if j not in log.off_path]
    template: dict = next((o for o in reversed(kept) if o.get("sessionId")), {})
    return template, next((o["uuid"] for o in reversed(kept) if o.get("uuid")), None)


def _items(plan, log: LineLog, linear: bool = False) -> list[tuple[float, tuple, bool]]:
    """(source position, what to emit, in head) for the context, in source order: untouched lines as
    they are, a line holding a changed message rebuilt from all the messages it holds, new messages
    after their predecessor, and non-message lines outside the compacted region."""
    items = _linear_items(plan, log) if linear else _message_items(plan, log)
    head_max = max((p for p, _, h in items if h), default=-1.0)
    message_lines = {j for ls in log.msg_lines for j in ls}
    for j in range(log.context_start, len(log.lines)):
        if j not in message_lines and j not in plan.dropped_lines:
            items.append((float(j) - 0.0001, log.lines[j], j <= head_max))
    items.sort(key=lambda x: x[0])
    return items


def _message_items(plan, log: LineLog) -> list[tuple[float, tuple, bool]]:
    """The items of the kept messages, in transcript order, a run of messages read from one line at a time. A
    message that repair moved after a later one (the user line that came between a call and its result, placed
    after the result) is written where the transcript has it, marked "moved", not back at its source position.
    A line is rebuilt when a message of its run changed or is gone (repair's orphan result); a line whose
    messages the transcript no longer holds together (results of two calls that repair put each after its own
    call) is written as one line a run, the later ones "split" off it. Results written in another order than
    their calls (Claude Code logs them as they complete) keep their lines and their parents: both APIs take them."""
    read_from: dict[int, int] = {}  # first line -> the messages read from it (a user line holds several results)
    for ls in log.msg_lines:
        if ls:
            read_from[ls[0]] = read_from.get(ls[0], 0) + 1
    items: list[tuple[float, tuple, bool]] = []
    place = _Placer(float(log.context_start) - 0.5)
    for in_head, msgs in ((True, plan.head), (False, plan.tail)):
        for run in _runs(msgs):
            ls = lines_of(run[0])
            if not ls:
                items.append((place.new(), ("new", run), in_head))
                continue
            rebuilt = len(run) != read_from.get(ls[0]) or any(not m.untouched for m in run)
            at, kind = place.run(run[0].role, run[-1].role, ls, rebuilt)
            if kind == "split":
                items.append((at, ("split", run), in_head))
            elif rebuilt:
                items.append((at if kind == "moved" else float(ls[0]), ("moved-rebuild" if kind == "moved" else "rebuild", run), in_head))
            elif kind == "moved":
                items += [(at + k * 1e-6, ("moved", log.lines[j]), in_head) for k, j in enumerate(ls)]
            else:
                items += [(float(j), log.lines[j], in_head) for j in ls]
    return items


def _linear_items(plan, log: LineLog) -> list[tuple[float, tuple, bool]]:
    """The items of the kept messages, each message a line of its own (a message read from several lines rebuilt
    on its first), in transcript order: at its last source line, or after the message before it when that went
    later. The writer links them all into one chain."""
    items: list[tuple[float, tuple, bool]] = []
    pos = float(log.context_start) - 0.5
    written: set[int] = set()
    for in_head, msgs in ((True, plan.head), (False, plan.tail)):
        for run in _runs(msgs):
            ls = lines_of(run[0])
            pos = max(pos + 0.001, float(max(ls, default=-1)))
            if not ls:
                items.append((pos, ("new", run), in_head))
            elif ls[0] in written:
                items.append((pos, ("split", run), in_head))
            else:
                items.append((pos, ("moved-rebuild", run), in_head))
            written.update(ls[:1])
    return items


class _Placer:
    """Where each run of _message_items goes: at its source lines ("stay"), or after what was placed before it when
    it stood before something already written ("moved"), or when its line was written already ("split"). A
    message moves when its lines stand before the first line of a message placed at its source; results move only
    when they stand before their calls (results in another order than their calls stay put). A line of results with
    a prompt after them is both: its prompt must follow every result placed before it (a late result that repair
    put after its call, from a later line)."""

    def __init__(self, start: float) -> None:
        self.pos = start  # where the last item went
        self.high = -1  # the last first source line of a message placed at its source
        self.call_at = -1.0  # where the message before the results being placed went (their calls)
        self.written: set[int] = set()  # first lines a run was placed from

    def new(self) -> float:
        self.pos += 0.001
        return self.pos

    def run(self, first: str, last: str, ls: list[int], rebuilt: bool = False) -> tuple[float, str]:
        """Place a run whose first and last messages have roles `first` and `last` (results, then a prompt); a
        `rebuilt` run is written on its first line alone."""
        kind = "split" if ls[0] in self.written else "stay"
        self.written.add(ls[0])
        before = max(self.call_at if first == "tool" else -1.0, self.high if last != "tool" else -1.0)
        if first != "tool":  # read back where its first line is: after every line placed before it (results of an
            before = max(before, self.pos)  # earlier call that stood between the lines of one message.id)
        if kind == "stay" and (ls[0] if first != "tool" else max(ls)) < before:
            kind = "moved"
        if kind == "stay":
            at = float(max(ls))
            self.high = max(self.high, ls[0])
            self.pos = max(self.pos, at) if last == "tool" else at
        else:
            at = self.pos = self.pos + 0.001
        if last != "tool":  # a message at its source: its results may sit between its lines
            self.call_at = at if kind != "stay" else float(ls[0])
        return at, kind


def _runs(msgs: list[Message]) -> Iterator[list[Message]]:
    """`msgs` in runs of consecutive messages read from the same first line (a new message is a run of its own)."""
    run: list[Message] = []
    for m in msgs:
        ls = lines_of(m)
        if run and ls and lines_of(run[0])[:1] == ls[:1]:
            run.append(m)
            continue
        if run:
            yield run
        run = [m]
    if run:
        yield run


def _materialize(payload, log: LineLog, template: dict, seed: str) -> tuple[bytes | None, dict]:
    if isinstance(payload[0], bytes) or payload[0] is None:
        return payload  # a source line, or an object built already
    kind, msgs = payload
    first = msgs[0]
    idx = lines_of(first)
    if idx:
        base = copy.deepcopy(log.lines[idx[0]][1])
        if kind == "split":  # a second line made of the source line's later messages
            base["uuid"] = stable_uuid(seed, "split", base.get("uuid"), first.tool_call_id, first.text()[:200])
    else:
        base = {
            **_envelope(template),
            "uuid": stable_uuid(seed, "new", first.role, first.tool_call_id, first.text()[:200]),
            "timestamp": template.get("timestamp"),
        }
    message = base.setdefault("message", {})
    if first.role == "assistant":
        base["type"] = "assistant"
        message["role"] = "assistant"
        message["content"] = assistant_blocks(first)
        return (None, base)
    blocks: list = []
    for g in msgs:
        if g.role == "tool":
            blocks.append(tool_result_block(g))
        elif isinstance(g.content, list):
            blocks += g.content
        elif isinstance(g.content, str) and g.content:
            blocks.append({"type": "text", "text": g.content})
    base["type"] = "user"
    message["role"] = "user"
    plain = len(msgs) == 1 and first.role in ("user", *SYSTEM_ROLES) and isinstance(first.content, str)  # a prompt's meta line too
    message["content"] = first.content if plain else blocks
    base.pop("toolUseResult", None)  # its structured copy would keep the full output
    return (None, base)


def _relink(out: list, boundary_at: int | None, force: AbstractSet[int] = frozenset()) -> Iterator[tuple[bytes, dict]]:
    """Every parentUuid points at a line written before it (after the boundary: at or after it); a line in
    `force` points at the line of the chain just before it (the chain Claude Code follows goes through moved lines),
    as does a line whose parent is not before it: the last message, or a line under it (a progress line of a call),
    never a line that hangs off an earlier turn (a progress line a retried branch began with), through which the
    chain would skip the messages after that turn."""
    seen: set[str] = set()
    last: str | None = None
    tip: str | None = None  # the last line of the chain
    for n, (raw, obj) in enumerate(out):
        if n == boundary_at:
            seen = set()
        elif "uuid" in obj:
            parent = obj.get("parentUuid")
            after_boundary = boundary_at is not None and n > boundary_at
            stale = (parent is not None and parent not in seen) or (parent is None and last is not None and (raw is None or after_boundary))
            to = tip or last
            if stale or (n in force and to is not None and parent != to):
                obj = {**obj, "parentUuid": to}
                raw = None
        if obj.get("uuid"):
            seen.add(obj["uuid"])
            if n == boundary_at or _is_message(obj) or obj.get("parentUuid") == tip:
                tip = obj["uuid"]
            last = obj["uuid"]
        yield (raw if raw is not None else orjson.dumps(obj)), obj


def _user_messages(obj: dict, msg: dict, source: str, lineno: int) -> list[Message]:
    """A user line's messages: its results, then its text (a meta line's is the harness's; one that holds a system
    prompt another format had, `PROMPT_KEY`, is that prompt again)."""
    out = user_from_blocks(msg.get("content"), source, lineno)
    for m in out:
        m.injected = m.role == "user" and bool(obj.get("isMeta"))
        if m.injected and obj.get(PROMPT_KEY) in SYSTEM_ROLES:
            m.role, m.injected = obj[PROMPT_KEY], False
    return out


# A meta user line that holds a system prompt from another format (Claude Code's files hold none): its role.
PROMPT_KEY = "compactctlPromptRole"


def _fresh(t: Transcript) -> Iterator[bytes]:
    """A transcript from another format, as new Claude Code lines."""
    parent = None
    session = stable_uuid(t.id, "session")
    msgs = [m for m in t.messages if m.role not in SYSTEM_ROLES or m.text().strip()]  # an empty prompt: no line
    i = 0
    while i < len(msgs):
        m = msgs[i]
        group = [m]
        j = i + 1
        while m.role == "tool" and j < len(msgs) and msgs[j].role == "tool":
            group.append(msgs[j])
            j += 1
        uid = stable_uuid(t.id, i)
        if m.role == "assistant":
            message = {"role": "assistant", "content": assistant_blocks(m)}
        elif m.role == "tool":
            message = {"role": "user", "content": [tool_result_block(g) for g in group]}
        else:  # a system prompt too (the files hold none: Claude Code sends its own), as a meta line the model reads
            message = {"role": "user", "content": m.content if isinstance(m.content, (str, list)) else ""}
        rec = {
            "parentUuid": parent,
            "isSidechain": False,
            "sessionId": session,
            "type": "assistant" if m.role == "assistant" else "user",
            "message": message,
            "uuid": uid,
        }
        if is_summary(m) and m.role == "user":
            rec["isCompactSummary"] = True
        elif m.role in SYSTEM_ROLES:
            rec["isMeta"] = True
            rec[PROMPT_KEY] = m.role  # read back as the prompt it was (compact keeps it at the head)
        yield orjson.dumps(rec)
        parent = uid
        i = j
