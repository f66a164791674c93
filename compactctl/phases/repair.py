"""Phase 5: make a transcript valid for the OpenAI and Anthropic APIs again.

- a tool result that answers no earlier call is removed;
- a call with no result gets a stub result right after its group (or, with strip, loses the call);
- results are placed directly after the assistant message that made the calls, in call order when the group
  needs a fix (a result moved, an id renamed, a stub); a group that needs none keeps its results in the order
  they came back (both APIs pair them by id);
- every call gets an id unique over the transcript (a missing or repeated id is replaced, also one reused
  from an earlier turn, which OpenAI accepts but Anthropic does not) and its result carries it (pairing by
  position and id: see pairs.py); legacy `function_call`s keep their form;
- empty user/assistant messages are removed; a conversation that opens with an assistant turn gets
  a short user turn before it (Anthropic requires the first message to be from the user);
- an image in Anthropic's form in an OpenAI chat user message is written as the `image_url` part that says the same,
  and an OpenAI chat `image_url` part in an Anthropic user message or tool result as the image block that does;
- a conversation that ends with an assistant turn whose text ends in whitespace loses that whitespace
  (Anthropic refuses "final assistant content" ending in it).
The rules themselves, and `check`, which reports them without changing anything: phases/rules.py.
"""

from __future__ import annotations

import re
from dataclasses import field

import orjson

from ..errors import DataError
from ..lean import dataclass
from ..model import (
    BEFORE_RESULTS,
    LEGACY,
    OBJECT_ARGUMENTS,
    SYSTEM_ROLES,
    Message,
    ToolCall,
    Transcript,
    check_built,
    image_block,
    image_url_part,
    is_blank_part,
    refused_system,
    text_part,
)
from ..pairs import NewIds, match
from . import Archived, archive
from .assemble import without_notes
from .rules import (
    VALID_ID,
    VALID_NAME,
    anthropic_image,
    blank_system,
    defined_names,
    empty_calls,
    empty_log,
    empty_message,
    final_space,
    final_turn,
    has_blank_part,
    has_foreign_text,
    ids_list_only,
    is_legacy,
    named,
    null_system,
    openai_image,
    tools_text,
)

STUB = "[No result was recorded for this call]"
UNNAMED = "unknown"  # the name of a call that came without one (the ShareGPT reader's for a call it cannot parse)
# The stub before the eleventh session, which pointed at a summary that most transcripts repaired this way do not
# have (an agent stopped mid-call): recognized still as compactctl's own text.
OLD_STUBS = ("[Result from earlier conversation — see context summary above]",)
OPENING = "[Earlier conversation compacted — continuing from here]"


@dataclass
class RepairStats:
    """What a repair did, counted by kind."""

    orphan_results_removed: int = 0
    stubs_added: int = 0
    calls_stripped: int = 0
    results_moved: int = 0
    ids_renamed: int = 0
    result_ids_set: int = 0  # results given their call's (new or missing) id
    empty_removed: int = 0
    openings_added: int = 0
    blank_parts_removed: int = 0  # blank text parts beside other content (Anthropic refuses an empty text block)
    text_parts_moved: int = 0  # messages whose text parts held their text under "value", or were typed input_text (outside Codex)
    results_put_first: int = 0  # Anthropic user messages whose text stood before their tool results
    empty_calls_removed: int = 0  # `"tool_calls": []` (OpenAI refuses an empty array)
    result_ids_written: int = 0  # results that named their call in SWE-agent's tool_call_ids only (tool_call_id added)
    arguments_as_text: int = 0  # calls whose arguments the source held as a JSON object (OpenAI wants the text)
    calls_named: int = 0  # calls without a name, named UNNAMED (both APIs want a tool's name)
    names_mended: int = 0  # calls whose tool name the APIs refuse (a space, a dot, over 64), written as one they take
    final_space_cut: int = 0  # a last assistant message whose text ended in whitespace (Anthropic refuses it)
    blank_system_removed: int = 0  # an Anthropic system prompt that is null, or has no text (the API refuses it)
    images_as_image_url: int = 0  # OpenAI user messages whose images were in Anthropic's form (written as image_url parts)
    images_as_blocks: int = 0  # Anthropic user messages and tool results whose images were image_url parts (written as image blocks)
    archived: list[Archived] = field(default_factory=list, repr=False)

    def as_dict(self) -> dict[str, int]:
        """The counts, as a report gives them (the archived originals left out)."""
        return {k: v for k, v in vars(self).items() if k != "archived"}

    @property
    def changed(self) -> bool:
        return any(self.as_dict().values())


def _without_final_space(m: Message) -> Message:
    c = m.content
    if isinstance(c, str):
        return m.evolve(content=c.rstrip())
    return m.evolve(content=[*c[:-1], {**c[-1], "text": c[-1]["text"].rstrip()}])


def mended_name(name: str) -> str:
    """A tool name the APIs take for one they refuse (`dots schema search --json`, `ns.tool`): each run of
    other characters one `_`, at most 64 characters; UNNAMED when nothing is left. Calls of one tool keep one name."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_")[:64] or UNNAMED


def _without_blank_parts(m: Message) -> Message:
    """`m` without its blank text (see has_blank_part): a result left without parts says nothing (""), a
    message with calls has no content."""
    if isinstance(m.content, str):
        return m.evolve(content=None)
    parts = [p for p in m.content if not is_blank_part(p)]
    if not parts:
        return m.evolve(content="" if m.role == "tool" else None)
    return m.evolve(content=parts)


@dataclass(frozen=True)
class RepairOptions:
    """How repair mends a call without a result."""

    strip_unanswered: bool = False  # remove calls that have no result instead of adding a stub result
    allow_empty: bool = False  # a transcript with nothing to send comes back empty instead of a DataError (measuring only)


MEASURED = RepairOptions(allow_empty=True)  # for callers that only measure what repair does (plan's reserve, the evals)


def repair(t: Transcript, opts: RepairOptions | None = None) -> tuple[Transcript, RepairStats]:
    o = opts or RepairOptions()
    check_built(t)  # the readers refuse a bad role or content; a transcript built through the library may hold one
    t = without_notes(t)  # `plan`'s zones are for `summarize`, a strike for the next `summarize`: no API takes the key
    fix = _Repair(t, o.strip_unanswered)
    msgs = fix.msgs
    placed: list[Message] = []
    for i, m in enumerate(msgs):
        if m.role == "tool":
            continue  # placed with its call, or dropped as an orphan
        if blank_system(m, t.format):
            archive(t, m, "repair", fix.st.archived)
            fix.st.blank_system_removed += 1
            continue
        if empty_message(m):
            archive(t, m, "repair", fix.st.archived)
            fix.st.empty_removed += 1
            continue
        if not (m.role == "assistant" and m.tool_calls):
            placed.append(m)
            continue
        fix.group(i, m, placed)
    st = fix.st
    _mend_ends(t, placed, st, o.allow_empty)
    meta = _mended_meta(t, st)
    if not st.changed and len(placed) == len(t.messages) and all(a is b for a, b in zip(placed, t.messages, strict=True)):
        return t, st
    return t.evolve(messages=placed, metadata=meta), st


def _mended_meta(t: Transcript, st: RepairStats) -> dict:
    """The record's other keys, mended: a null or blank Anthropic prompt becomes no blocks, which the API takes (and
    the record still reads as Anthropic's); tool definitions and `tool_choice` name their tools as the calls do."""
    meta = t.metadata
    if null_system(t) or (st.blank_system_removed and refused_system(meta.get("system"))):
        meta = {**meta, "system": []}
        st.blank_system_removed += null_system(t)
    if any(not VALID_NAME.fullmatch(name) for _, _, name in defined_names(meta)):
        from copy import deepcopy

        text = meta.get("tools") if isinstance(meta.get("tools"), str) else None  # LlamaFactory's: a JSON text
        meta = {**meta, **{k: deepcopy(meta[k]) for k in ("tools", "tool_choice") if k in meta}}
        if text is not None:
            meta["tools"] = tools_text(text)
        for holder, key, name in defined_names(meta):
            if not VALID_NAME.fullmatch(name):
                holder[key] = mended_name(name)
                st.names_mended += 1
        if text is not None:
            meta["tools"] = orjson.dumps(meta["tools"]).decode()
    return meta


def _mend_ends(t: Transcript, placed: list[Message], st: RepairStats, allow_empty: bool) -> None:
    """The conversation's first turn from the user (a short one added before an assistant's), and its last, an
    assistant's, without the whitespace its text ends in."""
    first = next((j for j, m in enumerate(placed) if m.role not in SYSTEM_ROLES), None)
    if first is None and not (allow_empty or empty_log(t)):  # no message could make it valid: said, never written out empty
        raise DataError(t.source or t.id, t.line or 1, "no user or assistant message with content: nothing a model could be sent")
    if first is not None and placed[first].role != "user":
        placed.insert(first, Message(role="user", content=OPENING))
        st.openings_added += 1
    last = final_turn(placed)
    if last is not None and final_space(placed[last]):
        archive(t, placed[last], "repair", st.archived)
        placed[last] = _without_final_space(placed[last])
        st.final_space_cut += 1


def _odd_parts(m: Message, fmt: str) -> bool:
    """Parts `mend_parts` mends: a blank text, a text in another form (value-text), an image in Anthropic's form in
    OpenAI chat (anthropic-image), an image_url part in Anthropic's (openai-image)."""
    return has_blank_part(m) or has_foreign_text(m, fmt) or anthropic_image(m, fmt) or openai_image(m, fmt)


class _Repair:
    """The state of one repair: the pairing, the ids given out so far, the stats."""

    def __init__(self, t: Transcript, strip_unanswered: bool) -> None:
        self.t = t
        self.strip = strip_unanswered
        self.st = RepairStats()
        self.msgs = self.mend_parts() if any(_odd_parts(m, t.format) for m in t.messages) else t.messages
        if any(m.extra.get(BEFORE_RESULTS) or empty_calls(m) or ids_list_only(m) for m in self.msgs):
            self.msgs = self.rewritten()
        msgs = t.messages
        pairs, orphans = match(msgs)
        for i in orphans:
            archive(t, msgs[i], "repair", self.st.archived)
        self.st.orphan_results_removed = len(orphans)
        self.result_for: dict[tuple[int, int], int] = {(p.call_msg, p.call_pos): p.result for p in pairs}
        self.ids = NewIds({c.id for m in msgs for c in m.tool_calls if isinstance(c.id, str)})  # as a conversion names them
        self.seen: set = set()  # call ids given out so far: unique over the whole transcript

    def mend_parts(self) -> list[Message]:
        """The messages with their text parts' text under "text", OpenAI chat's images as image_url parts, and
        without blank text parts beside other content (the originals archived); the pairing stays (it is by position)."""
        out = []
        responses = self.t.format == "codex"
        for m in self.t.messages:
            moved = has_foreign_text(m, self.t.format)
            if _odd_parts(m, self.t.format):
                archive(self.t, m, "repair", self.st.archived)
            if moved:
                m = m.evolve(content=[text_part(p, responses) for p in m.content])
                self.st.text_parts_moved += 1
            if anthropic_image(m, self.t.format):
                m = m.evolve(content=[image_url_part(p) for p in m.content])
                self.st.images_as_image_url += 1
            if openai_image(m, self.t.format):
                m = m.evolve(content=[image_block(p) for p in m.content])
                self.st.images_as_blocks += 1
            if has_blank_part(m):
                self.st.blank_parts_removed += 1
                m = _without_blank_parts(m)
            out.append(m)
        return out

    def rewritten(self) -> list[Message]:
        """The messages, those the model holds right but whose source form an API refuses written from the model
        (a changed message is, not as it came): the text that stood before its tool results (the reader put it
        after them), an empty `tool_calls` list (left out), a result with SWE-agent's `tool_call_ids` alone (its
        `tool_call_id` added)."""
        out = []
        for m in self.msgs:
            if m.extra.get(BEFORE_RESULTS) or empty_calls(m) or ids_list_only(m):
                archive(self.t, m, "repair", self.st.archived)  # restore gives back the form it came in
            if m.extra.get(BEFORE_RESULTS):
                m = m.evolve()
                del m.extra[BEFORE_RESULTS]
                self.st.results_put_first += 1
            elif empty_calls(m):
                m = m.evolve()
                self.st.empty_calls_removed += 1
            elif ids_list_only(m):
                m = m.evolve()
                self.st.result_ids_written += 1
            out.append(m)
        return out

    def group(self, i: int, m: Message, placed: list[Message]) -> None:
        """Place assistant message i (its calls fixed) and its results, in call order, on `placed`."""
        calls = m.tool_calls
        if self.intact(i, calls):  # the common case, checked fast: nothing to change
            placed.append(m)
            placed.extend(self.msgs[i + 1 : i + 1 + len(calls)])
            return
        results: list[Message] = []
        kept_calls = []
        renamed = False
        for pos, c in enumerate(calls):
            fixed = self.call(c)
            renamed = renamed or fixed is not c
            r = self.result_for.get((i, pos))
            rmsg = self.result(fixed, self.msgs[r] if r is not None else None)
            if rmsg is None:
                continue
            kept_calls.append(fixed)
            results.append(rmsg)
        if renamed or len(kept_calls) != len(calls):
            archive(self.t, m, "repair", self.st.archived)
            if not kept_calls and not m.text().strip():
                self.st.empty_removed += 1
                return
            m = m.evolve(tool_calls=kept_calls)
        placed.append(m)
        order = [self.result_for[(i, pos)] for pos in range(len(calls)) if (i, pos) in self.result_for]
        if order != list(range(i + 1, i + 1 + len(order))):
            self.st.results_moved += len(order)
        placed.extend(results)

    def intact(self, i: int, calls: list[ToolCall]) -> bool:
        """Every call of message i has an id not given out before and its result, with that id, right
        after the message (no legacy call): then `group` changes nothing. Results of parallel calls that came
        back in another order than the calls stay in it (both APIs pair them by id). Marks the ids seen."""
        msgs, result_for = self.msgs, self.result_for
        ids = set()
        after = range(i + 1, i + 1 + len(calls))
        for pos, c in enumerate(calls):
            cid = c.id
            if (
                not (isinstance(cid, str) and VALID_ID.fullmatch(cid))
                or cid in self.seen
                or cid in ids
                or c.extra.get(LEGACY)
                or c.extra.get(OBJECT_ARGUMENTS)
                or not (isinstance(c.name, str) and VALID_NAME.fullmatch(c.name))
            ):
                return False
            r = result_for.get((i, pos))
            if r is None or r not in after or msgs[r].tool_call_id != cid:
                return False
            ids.add(cid)
        self.seen.update(ids)
        return True

    def call(self, c: ToolCall) -> ToolCall:
        """The call with an id unique over the transcript (legacy calls keep their form), its arguments as text."""
        if c.extra.get(OBJECT_ARGUMENTS):
            c = ToolCall(c.id, c.name, c.arguments, {k: v for k, v in c.extra.items() if k != OBJECT_ARGUMENTS})
            self.st.arguments_as_text += 1
        if not named(c):  # a legacy call's result is named with it (see result)
            c = ToolCall(c.id, UNNAMED, c.arguments, dict(c.extra))
            self.st.calls_named += 1
        elif not VALID_NAME.fullmatch(c.name):
            c = ToolCall(c.id, mended_name(c.name), c.arguments, dict(c.extra))
            self.st.names_mended += 1
        if is_legacy(c):
            return c
        if not (isinstance(c.id, str) and VALID_ID.fullmatch(c.id)) or c.id in self.seen:
            c = ToolCall(self.ids.new(c.id if isinstance(c.id, str) and c.id else None), c.name, c.arguments, dict(c.extra))
            self.st.ids_renamed += 1
        self.seen.add(c.id)
        return c

    def result(self, c: ToolCall, rmsg: Message | None) -> Message | None:
        """The call's result carrying its id, a stub when it has none, or None when the call is stripped."""
        legacy = is_legacy(c)
        if rmsg is None:
            if self.strip:
                self.st.calls_stripped += 1
                return None
            extra = {LEGACY: True} if legacy else {}
            self.st.stubs_added += 1
            return Message(role="tool", content=STUB, tool_call_id=None if legacy else c.id, name=c.name if legacy else None, extra=extra)
        if not legacy and rmsg.tool_call_id != c.id:
            archive(self.t, rmsg, "repair", self.st.archived)
            self.st.result_ids_set += 1
            return rmsg.evolve(tool_call_id=c.id)
        if legacy and not rmsg.extra.get(LEGACY):  # a `tool` result (no id) paired with it: a `function` result, named
            archive(self.t, rmsg, "repair", self.st.archived)
            self.st.result_ids_set += 1
            return rmsg.evolve(tool_call_id=None, name=c.name, extra={**rmsg.extra, LEGACY: True})
        if legacy and rmsg.name != c.name and (c.name == UNNAMED or mended_name(str(rmsg.name)) == c.name):
            archive(self.t, rmsg, "repair", self.st.archived)  # a `function` result names its call: as it is now
            return rmsg.evolve(name=c.name)
        return rmsg
