"""Codex CLI rollouts ({timestamp, type, payload} per line) and, more generally, Responses-API items.

`response_item` lines carry the history: `message` (input_text / output_text parts), `function_call`
and `function_call_output` linked by `call_id` (the output is often JSON text with an exit code),
`custom_tool_call` / `custom_tool_call_output`, and `reasoning` (opaque `encrypted_content`, kept
as is; its summary text is the message's reasoning, and one with none is said when written in another format). A run of reasoning / assistant message / calls becomes one canonical assistant message.
`session_meta`, `turn_context` and `event_msg` lines are not sent to a model. A rollout written from
another format has no `session_meta` line: its thread id, cwd and CLI version (what Codex CLI resumes a
session by) are not in the source, and are not invented.

A compacted rollout is written the way Codex records its own compaction: a `compacted` line whose
`replacement_history` is the new history (head items + the summary as a user message), then the
tail. Reading a rollout that has one starts from that replacement history.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import orjson

from ..errors import DataError
from ..model import Message, ToolCall, Transcript, blank_parts
from . import Reader, Record
from .linelog import LineLog, layout, lines_of, unchanged
from .linelog import dropped_records as dropped_records  # noqa: PLC0414

NAME = "codex"
CARRIER_KEYS = ()
CALLS = ("function_call", "custom_tool_call", "local_shell_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output")
ROLES = ("user", "assistant", "system", "developer")
MESSAGE_KINDS = ("message", "reasoning", *CALLS, *OUTPUTS)  # the item types messages are read from


def sniff(obj: dict) -> str | None:
    if obj.get("type") in ("session_meta", "response_item", "event_msg", "turn_context", "compacted") and "payload" in obj:
        return "session"
    if obj.get("type") == "compacted" and "replacement_history" in obj:
        return "session"  # bare items compacted: the compacted line comes first when no head was kept
    if obj.get("type") in ("message", "function_call", "function_call_output", "reasoning") and (
        "role" in obj or "call_id" in obj or "summary" in obj
    ):
        return "session"  # bare Responses-API items, one per line
    if "type" not in obj and obj.get("role") in ROLES and _responses_parts(obj.get("content")):
        return "session"  # a message without "type" (EasyInputMessage) in the Responses API's own parts
    return None


def _responses_parts(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(p, dict) and p.get("type") in ("input_text", "output_text", "input_image") for p in content
    )


def _kind(it: dict) -> Any:
    """An item's type. A message may come without one (the Responses API's EasyInputMessage: role and
    content only): it is a message all the same."""
    typ = it.get("type")
    if typ is None and it.get("role") in ROLES and "content" in it:
        return "message"
    return typ


def _item(obj: dict) -> dict | None:
    """The Responses-API item a line carries, if any."""
    if obj.get("type") == "response_item" and isinstance(obj.get("payload"), dict):
        return obj["payload"]
    if "payload" not in obj and _kind(obj) in ("message", *CALLS, *OUTPUTS, "reasoning"):
        return obj
    return None


FUNCTION_KEYS = ("type", "name", "arguments", "call_id")  # a function_call as Codex writes it


def _call(item: dict) -> ToolCall:
    """A call item as a canonical call. The item's own shape (its type, and every field beside the arguments:
    id, status, a local shell call's timeout_ms and working_directory, ...) is kept in extra["_item"], with
    the arguments' place held by None, so a changed call is written back in kind."""
    shape = {k: (None if k in ("arguments", "input") else v) for k, v in item.items()}
    if item["type"] == "custom_tool_call":
        args = item.get("input", "")
        args = orjson.dumps({"input": args}).decode() if isinstance(args, str) else orjson.dumps(args).decode()
        name = item.get("name", "custom")
        return ToolCall(item.get("call_id"), name if isinstance(name, str) else "", args, {"_custom": True, "_item": shape})
    if item["type"] == "local_shell_call":  # its command stays in the shape too: the fallback for arguments cut unreadable
        action = item.get("action") or {}
        return ToolCall(
            item.get("call_id"),
            "local_shell",
            orjson.dumps({"command": action.get("command", [])}).decode(),
            {"_local": True, "_item": item},
        )
    args = item.get("arguments", "")
    extra = {"_item": shape} if tuple(item) != FUNCTION_KEYS else {}
    name = item.get("name", "")  # a name that is no text: none (repair names the call)
    return ToolCall(
        item.get("call_id"), name if isinstance(name, str) else "", args if isinstance(args, str) else orjson.dumps(args).decode(), extra
    )


def _call_item(c: ToolCall) -> dict:
    """A canonical call as a Responses-API item, in the kind and shape it was read in (its id, name and
    arguments as they are now)."""
    shape = c.extra.get("_item")
    item = copy.deepcopy(shape) if isinstance(shape, dict) else {}
    if c.extra.get("_local"):
        item.update(type="local_shell_call", call_id=c.id)
        item.setdefault("status", "completed")
        action = item.get("action")
        if not isinstance(action, dict):
            action = item["action"] = {"type": "exec"}
        args = _loads(c.arguments, None)
        command = args.get("command") if isinstance(args, dict) else None
        if isinstance(command, list) or "command" not in action:  # else: the command as read
            action["command"] = command if isinstance(command, list) else []
    elif c.extra.get("_custom"):
        value = _loads(c.arguments, None)
        item.update(
            type="custom_tool_call",
            call_id=c.id,
            name=c.name,
            input=value.get("input", c.arguments) if isinstance(value, dict) else c.arguments,
        )
    else:
        item.update(type="function_call", name=c.name, arguments=c.arguments, call_id=c.id)
    return item


def _loads(text: str, default: Any) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return default


def messages_from_items(items: list[tuple[int | None, dict]], where: str = "lines") -> list[Message]:
    """Canonical messages from (line index or None, item) pairs. Each message is anchored at the indices its
    items had: ("lines", ...) for source lines, ("history", ...) for the items of a compacted line's
    replacement_history (such a message has no line of its own: it lives in that compacted line)."""
    msgs: list[Message] = []
    cur: Message | None = None  # the assistant message being built from a run of items
    lines: dict[int, list] = {}

    def anchor(m: Message, j: int | None) -> None:
        if j is not None:
            lines.setdefault(id(m), []).append(j)

    for j, it in items:
        typ = _kind(it)
        if typ == "message" and it.get("role") in ("user", "developer", "system"):
            cur = None
            m = Message(role="user" if it["role"] == "user" else "system", content=it.get("content"))
            msgs.append(m)
            anchor(m, j)
        elif typ in ("reasoning", "message") or typ in CALLS:
            if cur is None or (typ == "message" and (cur.tool_calls or cur.content)):
                cur = Message(role="assistant", content=[])
                msgs.append(cur)
            _add_to_assistant(cur, typ, it)
            anchor(cur, j)
        elif typ in OUTPUTS:
            cur = None
            m = _output_message(it)
            msgs.append(m)
            anchor(m, j)
    for m in msgs:
        ls = lines.get(id(m))
        if ls and where == "lines":
            m.origin = m.anchor = ("lines", tuple(ls))
        elif ls:
            m.anchor = (where, tuple(ls))
    return msgs


def _add_to_assistant(cur: Message, typ: str, it: dict) -> None:
    """Add a reasoning, message or call item to the assistant message being built."""
    if typ == "reasoning":
        text = _summary_text(it)
        cur.reasoning = (cur.reasoning + "\n" if cur.reasoning else "") + text if text else cur.reasoning
    elif typ == "message":
        c = it.get("content")
        if isinstance(c, str) and not cur.content:
            cur.content = c  # an EasyInputMessage's text, as it came
            return
        parts = [{"type": "output_text", "text": c}] if isinstance(c, str) else list(c or [])
        had = cur.content
        cur.content = ([{"type": "output_text", "text": had}] if isinstance(had, str) else list(had or [])) + parts
    else:
        cur.tool_calls.append(_call(it))


def _output_message(it: dict) -> Message:
    out = it.get("output", "")
    if isinstance(out, dict):  # {"content": ..., "success": ...}
        text = out.get("content", "")
        return Message(
            role="tool",
            content=text if isinstance(text, str) else orjson.dumps(text).decode(),
            tool_call_id=it.get("call_id"),
            is_error=out.get("success") is False,
        )
    return Message(role="tool", content=out if isinstance(out, str) else orjson.dumps(out).decode(), tool_call_id=it.get("call_id"))


def read(records: Iterator[Record], source: str, layout_: str, reader: Reader) -> Iterator[Transcript]:
    lines, linenos = [], []
    for lineno, raw, obj in records:
        with reader.guard(lineno, raw):
            _check_message_line(obj, source, lineno)
            lines.append((raw, obj))
            linenos.append(lineno)
    if not lines:
        return
    start = next((i + 1 for i in range(len(lines) - 1, -1, -1) if _compaction(lines[i][1]) is not None), 0)
    history = _history(_compaction(lines[start - 1][1])) if start else []
    # The replacement history and the lines after it are read apart: an assistant run never spans the two.
    msgs = messages_from_items([(k, it) for k, it in enumerate(history) if isinstance(it, dict)], "history")
    msgs += messages_from_items([(i, it) for i in range(start, len(lines)) if (it := _item(lines[i][1])) is not None])
    msg_lines = []
    for k, m in enumerate(msgs):
        m.index = k
        msg_lines.append(lines_of(m))
    yield Transcript(
        msgs, id=source, source=source, line=linenos[0], format=NAME, layout="session", native=LineLog(lines, start, msg_lines)
    )


ENCRYPTED_ONLY = "reasoning item with only encrypted content (no summary text; only the Responses API reads it)"


def encrypted_reasoning(t: Transcript) -> int:
    """The reasoning items of `t`'s messages that hold no summary text, only `encrypted_content`: no reasoning text
    stands for them, so written in another format they are left out (said: `not_carried`). The message keeps
    only its source lines or replacement-history items, so they are counted from there."""
    log = t.native
    if not isinstance(log, LineLog):
        return 0
    history = _history(_compaction(log.lines[log.context_start - 1][1])) if log.context_start else []
    n = 0
    for m in t.messages:
        if m.role == "assistant":
            items = [_item(log.lines[j][1]) for j in lines_of(m)] + [history[k] for k in _history_of(m) if k < len(history)]
            n += sum(
                isinstance(it, dict) and _kind(it) == "reasoning" and not _summary_text(it) and bool(it.get("encrypted_content"))
                for it in items
            )
    return n


def session_meta_lines(t: Transcript) -> int:
    """The rollout's `session_meta` lines (its thread id, cwd, CLI version): Codex keeps them, no other format has
    a place for them."""
    log = t.native
    return sum(obj.get("type") == "session_meta" for _, obj in log.lines) if isinstance(log, LineLog) else 0


def _summary_text(it: dict) -> str:
    """A reasoning item's summary text (its parts' text, a line each)."""
    summary = it.get("summary")
    if not isinstance(summary, list):
        return ""
    return "\n".join(s["text"] for s in summary if isinstance(s, dict) and isinstance(s.get("text"), str))


def _compaction(obj: dict) -> dict | None:
    """The payload of a `compacted` line (a bare one, as written for bare items, is its own payload)."""
    if obj.get("type") != "compacted":
        return None
    payload = obj.get("payload")
    if isinstance(payload, dict):
        return payload
    return obj if "payload" not in obj else None


def _history(compaction: dict | None) -> list:
    """A compacted line's replacement history: what Codex resumes from (its summary alone when it has none)."""
    compaction = compaction or {}
    history = compaction.get("replacement_history")
    if isinstance(history, list) and history:
        return history
    if compaction.get("message"):
        return [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": compaction["message"]}]}]
    return []


def _history_of(m: Message) -> list[int]:
    """The replacement-history items a message came from (also after a phase changed it)."""
    a = m.anchor
    return list(a[1]) if isinstance(a, tuple) and len(a) == 2 and a[0] == "history" else []


def _check_message_line(obj: dict, source: str, lineno: int) -> None:
    """A bare line with a role that is no Responses-API item (an OpenAI chat tool message, a message without
    content) is refused by file and line: read as a line that is not a message, it was silently lost."""
    if "payload" not in obj and "role" in obj and _item(obj) is None:
        raise DataError(
            source,
            lineno,
            f"a line with role {obj.get('role')!r} is not a Responses-API item (a message needs a role of {', '.join(ROLES)} and content)",
        )


def _wrap(template: dict | None, item: dict) -> dict:
    if template is not None and "payload" not in template:
        return item  # bare items in, bare items out
    return {"timestamp": (template or {}).get("timestamp"), "type": "response_item", "payload": item}


def items_of(m: Message) -> list[dict]:
    """Responses-API items for a canonical message (changed or new)."""
    if m.role == "tool":
        return [{"type": "function_call_output", "call_id": m.tool_call_id, "output": m.text()}]
    if m.role in ("user", "system", "developer"):
        c = m.content
        parts = c if isinstance(c, list) else [{"type": "input_text", "text": c if isinstance(c, str) else ""}]
        return [{"type": "message", "role": "user" if m.role == "user" else "developer", "content": parts}]
    out: list[dict] = []
    parts = m.content if isinstance(m.content, list) else ([{"type": "output_text", "text": m.content}] if m.content else [])
    if parts:
        out.append({"type": "message", "role": "assistant", "content": parts})
    return out + [_call_item(c) for c in m.tool_calls]


def _blank_prompt(m: Message) -> bool:
    """A system or developer message with no text (a developer item of blank text parts: the check finds it empty)."""
    return m.role in ("system", "developer") and (not isinstance(m.content, list) or blank_parts(m.content)) and not m.text().strip()


def _rebuild(m: Message, log: LineLog) -> list[tuple[int, tuple[bytes | None, dict]]]:
    """A changed message written into its own source lines where it can be: reasoning items stay as
    they were, outputs and calls get their new text; each line with the source line it stands for (a new
    call: the last)."""
    ls = lines_of(m)
    fresh = items_of(m)
    out: list[tuple[int, tuple[bytes | None, dict]]] = []
    calls = [it for it in fresh if it["type"] in CALLS]
    source_ids = {(_item(log.lines[j][1]) or {}).get("call_id") for j in ls}
    text_done = False
    for j in ls:
        raw, obj = log.lines[j]
        it = _item(obj) or {}
        typ = _kind(it)
        if typ == "reasoning":
            out.append((j, (raw, obj)))
            continue
        new = copy.deepcopy(obj)
        target = new.get("payload", new) if "payload" in new else new
        if typ in OUTPUTS:
            target["output"] = m.text()
            if m.tool_call_id is not None:
                target["call_id"] = m.tool_call_id  # repair may have renamed the call it answers
        elif typ in CALLS:
            call = _take_call(calls, it.get("call_id"), source_ids)
            if call is None:
                continue  # the call was stripped
            target.clear()
            target.update(call)
        elif typ == "message":
            if text_done:
                continue
            text_done = True
            msg = next((f for f in fresh if f["type"] == "message"), None)
            if msg is None:
                continue
            target.clear()
            target.update(_as_came(it, msg))
        out.append((j, (None, new)))
    template = log.lines[ls[0]][1] if ls else None
    for call in calls:
        out.append((max(ls, default=0), (None, _wrap(template, call))))
    return out


def _as_came(old: dict, msg: dict) -> dict:
    """A rewritten message item in the shape its source line had: without "type" when it had none, its text
    as a string when it was one (and still is a single text part)."""
    if "type" not in old:
        msg = {k: v for k, v in msg.items() if k != "type"}
    c = msg.get("content")
    if isinstance(old.get("content"), str) and isinstance(c, list) and len(c) == 1 and _is_text(c[0]):
        msg["content"] = c[0].get("text", "")
    return msg


def _is_text(p: Any) -> bool:
    return isinstance(p, dict) and p.get("type") in ("input_text", "output_text", "text") and set(p) <= {"type", "text", "annotations"}


def _take_call(calls: list[dict], cid: Any, source_ids: set) -> dict | None:
    """The message's call written into a source line that had id `cid`: the one with that id, else the first
    whose id no source line had (repair renamed a duplicate id: order is kept); None when it was stripped."""
    for k, call in enumerate(calls):
        if call["call_id"] == cid:
            return calls.pop(k)
    for k, call in enumerate(calls):
        if call["call_id"] not in source_ids:
            return calls.pop(k)
    return None


def write(t: Transcript) -> Iterator[bytes]:
    log = t.native if isinstance(t.native, LineLog) else None
    if log is None:
        for m in t.messages:
            for it in [] if _blank_prompt(m) else items_of(m):  # a prompt without text says nothing: no line
                yield orjson.dumps(_wrap(None, it))
        return
    if unchanged(t):
        for raw, _ in log.lines:
            yield raw
        return
    for line, obj in _Rewrite(t, log).lines():
        yield line if line is not None else orjson.dumps(obj)


class _Rewrite:
    """A changed rollout: its lines in order, untouched messages as they were read, the summary as a
    `compacted` record, and the lines that are not messages where they stood.

    The messages read from the replacement history of the rollout's last `compacted` line (those that still
    stand before its first message line) live in that line, never in lines of their own: Codex resumes from
    that history, so a message written again after it would be sent twice. When they are as they were read,
    the compacted line is kept as it was; when one changed, was dropped or a new one was put among them
    (repair, prune), the line's replacement_history is rewritten with them, untouched items as they were."""

    def __init__(self, t: Transcript, log: LineLog) -> None:
        self.log = log
        self.plan = layout(t)
        self.template = next((o for _, o in log.lines if _item(o) is not None), None)
        self.message_lines = {j for ls in log.msg_lines for j in ls}
        self.out: list[tuple[bytes | None, dict]] = []
        self.emitted: set[int] = set()
        self.pos = log.context_start
        self.compaction = _compaction(log.lines[log.context_start - 1][1]) if log.context_start else None
        self.history = _history(self.compaction)

    def lines(self) -> list[tuple[bytes | None, dict]]:
        log, plan = self.log, self.plan
        self.out.extend(log.lines[: log.context_start])
        n = self.in_history(plan.head)
        if plan.summary is None and self.compaction is not None:
            self.rewrite_history(plan.head[:n])
        for m in plan.head[n:]:  # with a new summary, those before it are in its replacement history
            self.emit(m)
        if plan.summary is not None:
            self.out.append((None, self.compacted(plan.head, plan.summary, plan.tail)))
        for m in plan.tail:
            self.emit(m)
        self.flush_until(len(log.lines))
        return self.out

    def flush_until(self, limit: int) -> None:
        while self.pos < limit:
            if self.pos not in self.message_lines and self.pos not in self.plan.dropped_lines:
                self.out.append(self.log.lines[self.pos])
            self.pos += 1

    def emit(self, m: Message) -> None:
        ls = lines_of(m)
        if ls:
            self.flush_until(min(ls))
        if m.untouched and ls:
            for j in ls:
                if j not in self.emitted:
                    self.flush_until(j)  # the lines between a message's lines (events) stay between them
                    self.out.append(self.log.lines[j])
        elif ls:
            for j, line in _rebuild(m, self.log):
                self.flush_until(j)
                self.out.append(line)
        elif not _blank_prompt(m):  # a new prompt without text says nothing: no line (as in Claude Code)
            self.out.extend((None, _wrap(self.template, it)) for it in items_of(m))
        self.emitted.update(ls)

    def in_history(self, head: list[Message]) -> int:
        """How many messages at the start stand in the last compacted line's history (none without one)."""
        if self.compaction is None:
            return 0
        return next((k for k, m in enumerate(head) if lines_of(m)), len(head))

    def rewrite_history(self, region: list[Message]) -> None:
        """The last compacted line with `region` as its replacement history, unless it is that history as read."""
        read = [k for k, ls in enumerate(self.log.msg_lines) if not ls]
        if all(m.untouched for m in region) and [m.index for m in region] == read:
            return
        j = self.log.context_start - 1
        new = copy.deepcopy(self.log.lines[j][1])
        target = new["payload"] if isinstance(new.get("payload"), dict) else new
        target["replacement_history"] = self.history_items(region)
        self.out[j] = (None, new)

    def history_items(self, region: list[Message]) -> list:
        """The items of `region` for a replacement history: each untouched message's items as they were, a
        changed one's reasoning items as they were and its new items; an item no message was read from stays
        in its place (by the index of the message after it)."""
        loose = [k for k, it in enumerate(self.history) if not (isinstance(it, dict) and _kind(it) in MESSAGE_KINDS)]
        out: list = []
        for m in region:
            ks = _history_of(m)
            while loose and ks and loose[0] < min(ks):
                out.append(self.history[loose.pop(0)])
            if m.untouched and ks:
                out.extend(self.history[k] for k in ks)
                continue
            out.extend(self.history[k] for k in ks if _kind(self.history[k]) == "reasoning")
            out.extend(items_of(m))
        return out + [self.history[k] for k in loose]

    def compacted(self, head: list[Message], summary: Message, tail: list[Message]) -> dict:
        lines = self.log.lines
        history = [it for m in head for it in items_of(m)] + items_of(summary)
        first_tail = next((min(lines_of(m)) for m in tail if lines_of(m)), len(lines))
        ts = lines[first_tail][1].get("timestamp") if first_tail < len(lines) else None
        compacted = {"message": summary.text(), "replacement_history": history}
        if self.template is None or "payload" in self.template:
            return {"timestamp": ts, "type": "compacted", "payload": compacted}
        return {"type": "compacted", **compacted}
