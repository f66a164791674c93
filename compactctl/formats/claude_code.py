"""Claude Code sessions (~/.claude/projects/<slug>/<session>.jsonl, subagents in <session>/subagents/).

One API message is split over several lines with the same message.id (merged here); tool results
come in `user` lines (with a structured `toolUseResult` copy); most lines are not messages
(`progress`, `file-history-snapshot`, `system` records); `uuid`/`parentUuid` chain the lines.
As in Claude Code, the live context is what follows the last `compact_boundary`; the lines before
it are kept as they are.

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
from ..model import Message, Transcript, is_summary
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
    msgs: list[Message] = []
    msg_lines: list[list[int]] = []
    last_assistant: dict[str | None, int] = {}  # message.id -> index in msgs (looked up only for an id)
    for i in range(start, len(lines)):
        raw, obj = lines[i]
        typ, msg = obj.get("type"), obj.get("message")
        if typ not in ("user", "assistant") or not isinstance(msg, dict):
            continue
        with reader.guard(linenos[i], raw):
            if typ == "assistant":
                mid = msg.get("id")
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
                for m in user_from_blocks(msg.get("content"), source, linenos[i]):
                    m.injected = m.role == "user" and bool(obj.get("isMeta"))
                    msgs.append(m)
                    msg_lines.append([i])
    for k, m in enumerate(msgs):
        m.index = k
        m.origin = m.anchor = ("lines", tuple(msg_lines[k]))
    yield Transcript(
        msgs, id=source, source=source, line=linenos[0], format=NAME, layout="session", native=LineLog(lines, start, msg_lines)
    )


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
    template: dict = next((o for _, o in reversed(log.lines) if o.get("sessionId")), {})
    # New lines' uuids come from the session and their content, never from the input's name: a file and the
    # same bytes through stdin (the `prune | plan | summarize` chain) get the same lines.
    seed = template.get("sessionId") or t.id
    out: list[tuple[bytes | None, dict]] = [log.lines[j] for j in range(log.context_start)]
    boundary_at = None
    if plan.summary is not None:
        last_uuid = next((o["uuid"] for _, o in reversed(log.lines) if o.get("uuid")), None)
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
    items: list[tuple[float | None, tuple, bool]] = list(_items(plan, log))  # the summary goes in with no source position
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
    force: set[int] = set()  # lines whose parent is the line before them: moved lines and the line after each
    after_moved = False
    for _, payload, _ in items:
        moved = payload[0] == "moved"
        if moved or after_moved:
            force.add(len(out))
        after_moved = moved
        out.append(_materialize(payload[1] if moved else payload, log, template, seed))
    yield from _relink(out, boundary_at, force)


def _items(plan, log: LineLog) -> list[tuple[float, tuple, bool]]:
    """(source position, what to emit, in head) for the context, in source order: untouched lines as
    they are, a line holding a changed message rebuilt from all the messages it holds, new messages
    after their predecessor, and non-message lines outside the compacted region."""
    items = _message_items(plan, log)
    head_max = max((p for p, _, h in items if h), default=-1.0)
    message_lines = {j for ls in log.msg_lines for j in ls}
    for j in range(log.context_start, len(log.lines)):
        if j not in message_lines and j not in plan.dropped_lines:
            items.append((float(j) - 0.0001, log.lines[j], j <= head_max))
    items.sort(key=lambda x: x[0])
    return items


def _message_items(plan, log: LineLog) -> list[tuple[float, tuple, bool]]:
    """The items of the kept messages, in transcript order. A message that repair moved after a later one (the
    user line that came between a call and its result, placed after the result) is written where the transcript
    has it, marked "moved", not back at its source position. Results written in another order than their calls
    (Claude Code logs them as they complete) keep their lines and their parents: both APIs take them."""
    members: dict[int, list[Message]] = {}
    for m in plan.head + plan.tail:
        ls = lines_of(m)
        if ls:
            members.setdefault(ls[0], []).append(m)
    changed = {j for j, ms in members.items() if any(not m.untouched for m in ms)}
    items: list[tuple[float, tuple, bool]] = []
    done: set[int] = set()
    pos = float(log.context_start) - 0.5
    prev_first = -1  # the first source line of the message before
    for in_head, msgs in ((True, plan.head), (False, plan.tail)):
        for m in msgs:
            ls = lines_of(m)
            if not ls:
                pos += 0.001
                items.append((pos, ("new", [m]), in_head))
                continue
            moved = max(ls) < prev_first and m.role != "tool"  # results in another order than their calls' stay put
            pos, prev_first = (pos + 0.001 if moved else float(max(ls))), min(ls)
            if ls[0] in done:
                continue
            done.add(ls[0])
            if ls[0] in changed:
                items.append((pos, ("rebuild", members[ls[0]]), in_head))
            elif moved:
                items += [(pos + k * 1e-6, ("moved", log.lines[j]), in_head) for k, j in enumerate(ls)]
            else:
                items += [(float(j), log.lines[j], in_head) for j in ls]
    return items


def _materialize(payload, log: LineLog, template: dict, seed: str) -> tuple[bytes | None, dict]:
    if isinstance(payload[0], bytes) or payload[0] is None:
        return payload  # a source line, or an object built already
    _, msgs = payload
    first = msgs[0]
    idx = lines_of(first)
    if idx:
        base = copy.deepcopy(log.lines[idx[0]][1])
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
    plain = len(msgs) == 1 and first.role == "user" and isinstance(first.content, str)
    message["content"] = first.content if plain else blocks
    base.pop("toolUseResult", None)  # its structured copy would keep the full output
    return (None, base)


def _relink(out: list, boundary_at: int | None, force: AbstractSet[int] = frozenset()) -> Iterator[bytes]:
    """Every parentUuid points at a line written before it (after the boundary: at or after it); a line in
    `force` points at the line just before it (the chain Claude Code follows goes through moved lines)."""
    seen: set[str] = set()
    last: str | None = None
    for n, (raw, obj) in enumerate(out):
        if n == boundary_at:
            seen = set()
        elif "uuid" in obj:
            parent = obj.get("parentUuid")
            after_boundary = boundary_at is not None and n > boundary_at
            stale = (parent is not None and parent not in seen) or (parent is None and last is not None and (raw is None or after_boundary))
            if stale or (n in force and last is not None and parent != last):
                obj = {**obj, "parentUuid": last}
                raw = None
        if obj.get("uuid"):
            seen.add(obj["uuid"])
            last = obj["uuid"]
        yield raw if raw is not None else orjson.dumps(obj)


def _fresh(t: Transcript) -> Iterator[bytes]:
    """A transcript from another format, as new Claude Code lines."""
    parent = None
    session = stable_uuid(t.id, "session")
    msgs = [m for m in t.messages if m.role not in ("system", "developer")]
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
        else:
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
        yield orjson.dumps(rec)
        parent = uid
        i = j
