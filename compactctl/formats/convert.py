"""Writing a transcript in its own format or another (`convert --to`, `--to`): what each target takes of the
source's messages, parts, calls and record keys, and counting what it cannot hold (`lost`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import orjson

from ..errors import UsageError
from ..model import MISSING, RESPONSES_TEXT, SYSTEM_ROLES, ToolCall, Transcript, check_built, is_value_part, other_content
from .linelog import LineLog
from .reader import Reader
from .registry import REGISTRY, get_format


def written_as(fmt: str, to: str | None = None) -> str:
    """The format `write` writes a transcript read as `fmt` in: `to`, else its own, else (read-only) OpenAI chat."""
    if to:
        return get_format(to).name
    return fmt if get_format(fmt).write is not None else "openai"


def write(t: Transcript, to: str | None = None, lost: Counter | None = None) -> Iterator[bytes]:
    """Output lines for one transcript, in its own format or converted with `to`. Formats that are
    read-only (Gemini, OpenHands) are written as OpenAI chat unless `to` says otherwise. `lost` counts, by
    kind, what the target could not hold as it was (a part it does not take, a system prompt moved). A message whose
    role or content none of the APIs take (built through the library: the readers refuse one) is a DataError, not a
    line."""
    check_built(t)
    source = get_format(t.format)
    if not to and source.write is None:
        to = "openai"
    if to and to.replace("-", "_") != t.format:
        target = get_format(to)
        if target.write is None:
            writable = ", ".join(r.name.replace("_", "-") for r in REGISTRY if r.writes)
            raise UsageError(f"{target.name.replace('_', '-')} is read-only: it cannot be written (--to one of {writable})")
        from . import toolspec

        meta = {k: v for k, v in (t.metadata or {}).items() if k not in source.carrier_keys}
        meta = toolspec.convert(meta, source.name, target.name, lost)
        if lost is not None:
            _count_record_keys(meta, target.name, lost)
            _count_native(t, target.name, lost)
        t = t.evolve(format=target.name, native=None, raw=None, metadata=meta)
        t.messages = [_portable(m, target.name, source.name, lost) for m in t.messages]  # origins and internals are the old format's
        if lost is not None:
            _count_moved_system(t.messages, target.name, lost)
        if target.name == "sharegpt":
            t.messages = one_system_turn(t.messages)
        t.messages = ids_for(t.messages, target.name)
        return target.write(t)
    if source.write is None:  # to names the read-only input format itself
        raise UsageError(f"{source.name.replace('_', '-')} is read-only: it cannot be written")
    return source.write(t)


def as_read(t: Transcript) -> list[bytes] | None:
    """The lines a transcript was read from, as its reader kept them: what --rejects takes of one the run cannot
    write. None where its reader did not keep them all (an OpenAI session line with a note, re-encoded; a transcript
    built otherwise). Nothing is copied: a dataset record's `raw`, a line log's lines and an OpenAI session's lines
    are what the writer writes back from; an Anthropic session's rows, a Gemini record and OpenHands events keep
    theirs for this alone."""
    if t.raw is not None:
        return [t.raw]
    if isinstance(t.native, LineLog):
        return [raw for raw, _ in t.native.lines]
    raws = getattr(t.native, "raws", t.native)  # an Anthropic session's rows carry theirs
    if isinstance(raws, list) and raws and all(isinstance(raw, bytes) for raw in raws):
        return list(raws)
    return None


def _count_native(t: Transcript, target: str, lost: Counter) -> None:
    """What of the source format's own lines no message holds, and so no other format gets: Codex's reasoning
    items with only encrypted content (no summary text stands for them), and its session_meta line."""
    if t.format == "codex":
        from .codex import ENCRYPTED_ONLY, encrypted_reasoning, session_meta_lines

        n = encrypted_reasoning(t)
        if n:
            lost[ENCRYPTED_ONLY] += n
        n = session_meta_lines(t)
        if n:
            where = target.replace("_", "-")
            lost[f"session_meta line (the rollout's session id, cwd and CLI version: {where} has no place for them; left out)"] += n


def _count_record_keys(meta: dict, target: str, lost: Counter) -> None:
    """A Claude Code or Codex session file holds messages only: a dataset record's other keys are left out."""
    if any(r.line_log and r.name == target for r in REGISTRY):
        for key in meta:
            lost[f"record key ({key}: a {target.replace('_', '-')} session has no place for it; left out)"] += 1


def read_back(lines: list[bytes], fmt: str, layout: str, source: str) -> list[Transcript]:
    """The transcripts `lines` (written as `fmt`, in `layout`) read back, as a later command reads them."""
    records = [(k, raw, orjson.loads(raw)) for k, raw in enumerate(lines, 1)]
    return list(get_format(fmt).read(iter(records), source, layout, Reader()))


def ported(m: Any, target: str, source: str) -> Any:
    """A message read as `source` as `convert --to target` writes it (restore: an archived original)."""
    return _portable(m, target, source)


def _portable(m: Any, target: str, source: str, lost: Counter | None = None) -> Any:
    """`m` for another format: a changed copy (its origin is the old format's), its content parts in the forms the
    target takes (formats/parts.py; a part it cannot take becomes a line that says what was there, counted in
    `lost`). OpenAI chat takes no internals of the source format (`_`-keys: Claude Code's thinking blocks, Hermes's
    raw calls), no keys of another format's tool calls (Claude Code's `caller`), and no empty part list beside
    calls; Anthropic no keys of another API's calls (a streamed call's `index`): both APIs reject what they do
    not know."""
    from . import parts

    same = parts.FAMILY.get(source) == parts.FAMILY.get(target)
    content = m.content
    changes: dict[str, Any] = {}
    if isinstance(content, list) and (not same or _foreign_parts(content)):  # within an API family, only text parts move
        changes["content"] = [parts.port(p, target, m.role, lost) if not same or _foreign_text(p) else p for p in content]
    if target == "openai":
        _to_openai(m, changes)
    elif target in ("anthropic", "claude_code"):  # Claude Code's lines hold Messages API messages
        _to_anthropic(m, changes, same)
    elif target == "codex" and m.role == "assistant" and not m.text().strip() and not m.tool_calls and other_content(m.extra):
        changes["content"] = _said_elsewhere(m)
    if lost is not None and not same:
        _count_unsaid(m, parts.FAMILY.get(target), lost)
    if lost is not None and target in ROLE_AND_CONTENT:
        _count_message_keys(m, target, lost)
    return m.evolve(**changes) if changes else m


ROLE_AND_CONTENT = ("anthropic", "claude_code", "codex")  # targets whose messages (items) hold no keys of their own


def _count_message_keys(m: Any, target: str, lost: Counter) -> None:
    """A message's keys of its own (SWE-agent's `thought` and `action`, OpenAI's participant `name`): an Anthropic
    message holds its role and content only, a Codex item what the Responses API reads; a null loses nothing.
    `_`-keys are the reader's internals (the source format's, or carried as the target's own)."""
    keys = ["name"] if m.name and m.role != "tool" else []  # a tool result's name is its call's, which goes over
    keys += [k for k, v in m.extra.items() if not k.startswith("_") and v is not None]
    for key in keys:
        lost[f"message key ({key}: {target.replace('_', '-')} messages have no place for it; left out)"] += 1


THINKING_SIGNATURE = "thinking block's signature (its text is carried as reasoning; the signature Anthropic needs to take it back is not)"


def _count_unsaid(m: Any, family: str | None, lost: Counter) -> None:
    """What of `m` a target of another API family has no place for (said by the run, not written)."""
    if m.role == "assistant" and m.reasoning and not m.extra.get("_thinking_blocks") and family == "anthropic":
        lost["reasoning (Anthropic replays only its own signed thinking)"] += 1
    elif m.role == "assistant" and m.reasoning and family == "responses":
        lost["reasoning (the Responses API replays only its own reasoning items)"] += 1
    if m.role == "tool" and m.is_error and family != "anthropic":
        lost["error flag of a tool result (is_error: the target has none; its text says what failed)"] += 1
    blocks = [b for b in m.extra.get("_thinking_blocks", ()) if isinstance(b, dict)]
    redacted = sum(b.get("type") == "redacted_thinking" for b in blocks)
    if redacted and family != "anthropic":  # no reasoning text stands for it, unlike signed thinking
        lost["redacted thinking block (encrypted: only Anthropic reads it)"] += redacted
    signed = sum(b.get("type") == "thinking" and bool(b.get("signature")) for b in blocks)
    if signed and family in ("chat", "text"):  # the text goes as reasoning (the Responses API's: said lost above)
        lost[THINKING_SIGNATURE] += signed


def _count_moved_system(msgs: list, target: str, lost: Counter) -> None:
    """System messages a target cannot hold where they stand: Anthropic has one system prompt and ShareGPT one
    system turn, first (a later one joins it), Claude Code's files none (each is written as a meta user line)."""
    roles = [m.role for m in msgs]
    if target == "claude_code":  # an empty prompt is written as nothing (claude_code._fresh): not a line to count
        n = sum(m.role in SYSTEM_ROLES and bool(m.text().strip()) for m in msgs)
        if n:
            lost["system message (written as a meta user line: Claude Code's files hold no system prompt)"] += n
    elif target in ("anthropic", "sharegpt"):
        first = next((i for i, r in enumerate(roles) if r not in SYSTEM_ROLES), len(roles))
        n = sum(r in SYSTEM_ROLES for r in roles[first:])
        if n:
            lost["system message from the middle of the conversation (joined to the system prompt)"] += n


ONE_PROMPT = ("anthropic", "sharegpt")  # targets with one system prompt, first: Anthropic's `system`, ShareGPT's turn


def _joined_prompts(msgs: list, target: str) -> list:
    """The system and developer messages a conversion to `target` does not write as they are, because it joins
    them into its one system prompt: all of them, unless there is one, a system message, first."""
    prompts = [m for m in msgs if m.role in SYSTEM_ROLES]
    if target not in ONE_PROMPT or not prompts or (len(prompts) == 1 and msgs[0] is prompts[0] and prompts[0].role == "system"):
        return []
    return prompts


def one_system_turn(msgs: list) -> list:
    """ShareGPT's one system turn, first (LlamaFactory's loaders drop a record with a system turn anywhere else):
    every system message joined into it, text after text, as into Anthropic's one system prompt. A conversion to
    ShareGPT writes it so, and a restore of one (a ShareGPT record of its own keeps its turns where they are)."""
    prompts = _joined_prompts(msgs, "sharegpt")
    if not prompts:
        return msgs
    text = "\n\n".join(x for m in prompts if (x := m.text()))
    return [prompts[0].evolve(role="system", content=text), *(m for m in msgs if m.role not in SYSTEM_ROLES)]


def _to_openai(m: Any, changes: dict[str, Any]) -> None:
    changes["extra"] = {k: v for k, v in m.extra.items() if not k.startswith("_")}
    changes["tool_calls"] = [ToolCall(c.id, c.name, c.arguments) for c in m.tool_calls]
    if changes.get("content", m.content) == []:  # OpenAI refuses an empty part list (thinking alone was read as none)
        changes["content"] = None if m.tool_calls else ""


def _to_anthropic(m: Any, changes: dict[str, Any], same: bool) -> None:
    # A message holds its role and content only (the API refuses other keys: OpenAI's `refusal`, SWE-agent's `action`).
    changes["extra"] = {k: v for k, v in m.extra.items() if k.startswith("_")}
    if not same and m.tool_calls:  # another API's keys on a call (a streamed call's `index`): not a tool_use block's
        changes["tool_calls"] = [
            ToolCall(c.id, c.name, c.arguments, {k: v for k, v in c.extra.items() if k.startswith("_")}) for c in m.tool_calls
        ]
    if m.role == "tool" and m.content in (None, MISSING):
        changes["content"] = ""  # a tool_result's content is text or blocks, never null
    if m.role == "assistant" and not m.text().strip() and not m.tool_calls and other_content(m.extra):
        changes["content"] = _said_elsewhere(m)


def _said_elsewhere(m: Any) -> str:
    """What an assistant turn said outside its content (a refusal, an audio reply), as text."""
    refusal = m.extra.get("refusal")
    return refusal if isinstance(refusal, str) and refusal.strip() else "[an audio reply]"


def _foreign_text(p: Any) -> bool:
    """A text part another format types or keys otherwise: Codex's types, LlamaFactory's "value"."""
    return isinstance(p, dict) and (p.get("type") in RESPONSES_TEXT or is_value_part(p))


def _foreign_parts(content: Any) -> bool:
    return isinstance(content, list) and any(_foreign_text(p) for p in content)


def ids_for(messages: list, target: str) -> list:
    """`messages` with the call ids `convert --to target` gives them: an id longer than the 40 characters OpenAI takes
    renamed for every target, and for Anthropic's API (and Claude Code) also one it refuses; a call without one
    given one where results link to calls by id only (not OpenAI chat, whose legacy `function_call` has none)."""
    return _with_ids(messages, legacy=target != "openai", strict=target in ("anthropic", "claude_code"))


def _with_ids(messages: list, legacy: bool = True, strict: bool = False) -> list:
    """Calls given the ids `_ids_to_give` names, and their results too (OpenAI takes a reused id; results pair with
    the nearest call of their id, and keep pairing so)."""
    from ..model import LEGACY, ToolCall
    from ..pairs import match

    renamed = _ids_to_give(messages, legacy, strict)
    if not renamed:
        return messages
    pairs, _ = match(messages)
    result_of = {(p.call_msg, p.call_pos): p.result for p in pairs}
    out = list(messages)
    for (i, pos), cid in renamed.items():
        c = out[i].tool_calls[pos]
        calls = list(out[i].tool_calls)
        calls[pos] = ToolCall(cid, c.name, c.arguments, {k: v for k, v in c.extra.items() if k != LEGACY})
        out[i] = out[i].evolve(tool_calls=calls)
        r = result_of.get((i, pos))
        if r is not None:
            out[r] = out[r].evolve(tool_call_id=cid, extra={k: v for k, v in out[r].extra.items() if k != LEGACY})
    return out


def _ids_to_give(messages: list, legacy: bool, strict: bool) -> dict[tuple[int, int], str]:
    """{(message, position): new id}: with `legacy`, a call without an id (a legacy OpenAI `function_call`) gets one,
    for formats that link results to calls by id only (Anthropic tool_use, Codex call_id); an id over 40 characters
    (Gemini CLI's run to 45: OpenAI refuses them) gets a new one, named as `repair` names it (`pairs.NewIds`); with
    `strict` (Anthropic's API), so does an id reused from an earlier call or holding other than letters, digits,
    `_` and `-`."""
    from ..model import LEGACY
    from ..pairs import NewIds

    ids = NewIds({c.id for m in messages for c in m.tool_calls if isinstance(c.id, str)})
    seen: set = set()
    out: dict[tuple[int, int], str] = {}
    for i, m in enumerate(messages):
        for pos, c in enumerate(m.tool_calls):
            cid = c.id
            if cid is None and legacy:
                cid = f"call_legacy_{i}_{pos}"
            elif isinstance(cid, str) and (legacy or not c.extra.get(LEGACY)) and _renamed(cid, strict, seen):
                cid = ids.new(cid)
            if cid != c.id:
                out[(i, pos)] = cid
                ids.taken.add(cid)
            seen.add(cid)
    return out


def _renamed(cid: str, strict: bool, seen: set) -> bool:
    """Whether a conversion renames this call id: over 40 characters for any target; for Anthropic's API (`strict`)
    also one an earlier call used, or holding other than letters, digits, `_` and `-`."""
    from ..pairs import VALID_ID

    return len(cid) > 40 or (strict and (cid in seen or not VALID_ID.fullmatch(cid)))
