"""An independent validator of OpenAI chat transcripts (as written, plain dicts), written apart from
compactctl's `repair --check`: it shares no code with compactctl.

Rules (what the OpenAI chat-completions and Anthropic messages APIs reject):
- OpenAI: every `tool_calls` entry has a non-empty string `id`; the assistant message is followed at
  once by exactly one `role: "tool"` message per call, each with a `tool_call_id` equal to one of
  those ids (no repeats, none missing, none extra); a tool message anywhere else is an orphan.
  A legacy `function_call` is followed at once by one `role: "function"` message of the same name.
- Anthropic (after conversion): `tool_use` ids are unique over the whole request; the first
  non-system message is from the user; no user/assistant message is empty; no text block is empty
  ("text content blocks must be non-empty"): a text part in a content list has non-blank text.
- Both: no message carries compactctl's private `_compactctl` key (the APIs refuse properties they do not define);
  a call names its tool, 1-64 letters, digits, `_` or `-` (in a conversation's calls too); every content part is an object with a type; a text part holds its text, a string, under "text".
- OpenAI, its content parts: none of Anthropic's blocks (its calls and results, thinking, documents, server tools,
  search results: OpenAI chat's parts are text, image_url, input_audio, file and refusal), nor an image in
  Anthropic's form (`{"type": "image", "source"}`: OpenAI's is `image_url`).
- Anthropic, its content parts (a tool_result's and the system prompt's too): none of OpenAI's own (Chat
  Completions' image_url, input_audio, file and refusal parts, the Responses API's input_text, output_text,
  input_image and input_file: Anthropic's image is `{"type": "image", "source"}`, its file a document block).
- Anthropic, as written (`validate_anthropic`, rows of the Messages API): consecutive turns of one role are
  one turn (the API combines them); the turn after an assistant turn with `tool_use` blocks is a user turn
  that begins with one `tool_result` block per call, ids one to one ("Messages following tool_use blocks must
  begin with a matching number of tool_result blocks"); a `tool_result` anywhere else answers nothing.
"""

from __future__ import annotations

import re
from typing import Any


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def validate(messages: list[dict]) -> list[str]:
    """Every rule the messages break, as text (empty when valid)."""
    errors: list[str] = []
    all_ids: set[str] = set()
    i = 0
    n = len(messages)
    first = next((m for m in messages if m.get("role") not in ("system", "developer")), None)
    if first is not None and first.get("role") != "user":
        errors.append(f"first non-system message is {first.get('role')!r}")
    while i < n:
        m = messages[i]
        role = m.get("role")
        if (
            role in ("user", "assistant")
            and not m.get("tool_calls")
            and not m.get("function_call")
            and not _text(m.get("content")).strip()
            and not (isinstance(m.get("content"), list) and m["content"])
        ):
            errors.append(f"{i}: empty {role} message")
        if "_compactctl" in m:
            errors.append(f"{i}: a private _compactctl key")
        content = m.get("content")
        if isinstance(content, list) and any(
            isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str) and not p["text"].strip() for p in content
        ):
            errors.append(f"{i}: a text part without text")
        errors += [f"{i}: {e}" for e in _malformed_parts(content)]
        errors += [f"{i}: {e}" for e in _anthropic_parts(content)]
        if role == "assistant" and (m.get("tool_calls") or m.get("function_call")):
            calls = m.get("tool_calls") or []
            ids = []
            for c in calls:
                cid = c.get("id")
                if not isinstance(cid, str) or not cid:
                    errors.append(f"{i}: a tool call has no id")
                    continue
                fn = c.get("function")
                if not (isinstance(fn, dict) and isinstance(fn.get("name"), str) and fn["name"].strip()):
                    errors.append(f"{i}: call {cid!r} has no tool name")
                elif not _tool_name(fn["name"]):
                    errors.append(f"{i}: call {cid!r}: tool name {fn['name']!r} is not what the API takes")
                if cid in all_ids:
                    errors.append(f"{i}: call id {cid!r} is not unique")
                all_ids.add(cid)
                ids.append(cid)
            j = i + 1
            got: list[str] = []
            while j < n and messages[j].get("role") == "tool":
                rid = messages[j].get("tool_call_id")
                if not isinstance(rid, str):
                    errors.append(f"{j}: tool result without tool_call_id")
                else:
                    got.append(rid)
                j += 1
            if sorted(got) != sorted(ids):
                errors.append(f"{i}: results {got} do not answer calls {ids} one to one")
            if m.get("function_call"):
                if j >= n or messages[j].get("role") != "function" or messages[j].get("name") != m["function_call"].get("name"):
                    errors.append(f"{i}: legacy function_call not followed by its function result")
                else:
                    j += 1
            i = j
            continue
        if role in ("tool", "function"):
            errors.append(f"{i}: orphan {role} result")
        i += 1
    return errors


def _tool_name(name: str) -> bool:
    """A tool name as both APIs take it, in a conversation too (Anthropic: "messages.3.content.0.tool_use.name:
    String should match pattern '^[a-zA-Z0-9_-]{1,64}$'"; OpenAI: a-z, A-Z, 0-9, underscores and dashes, 64 at most)."""
    return re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name) is not None


def _malformed_parts(content: Any) -> list[str]:
    """Parts neither API takes: not an object, no type, a text part whose text is not a string (both look for it
    under "text"), also inside an Anthropic tool_result's content."""
    out: list[str] = []
    for p in content if isinstance(content, list) else ():
        if not isinstance(p, dict) or not isinstance(p.get("type"), str):
            out.append(f"a content part that is not a typed object: {p!r}")
        elif p["type"] in ("text", "input_text", "output_text") and not isinstance(p.get("text"), str):
            out.append(f"a {p['type']} part without a string text: {p!r}")
        elif p["type"] == "tool_result":
            out += _malformed_parts(p.get("content"))
    return out


# Content block types of Anthropic's Messages API that OpenAI chat has no part for (written here, not taken from
# compactctl, so that the validator stays independent)
ANTHROPIC_BLOCKS = (
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "document",
    "server_tool_use",
    "web_search_tool_result",
    "search_result",
)


def _anthropic_parts(content: Any) -> list[str]:
    """Parts of Anthropic's form in OpenAI chat content, which OpenAI refuses: one of its blocks, or an image with a
    `source` (OpenAI's image is an `image_url` part)."""
    out: list[str] = []
    for p in content if isinstance(content, list) else ():
        kind = p.get("type") if isinstance(p, dict) else None
        if kind in ANTHROPIC_BLOCKS:
            out.append(f"an Anthropic {kind} block in OpenAI chat content: {p!r}"[:300])
        elif kind == "image" and "source" in p:
            out.append(f"an image in Anthropic's form in OpenAI chat content (OpenAI's is image_url): {p!r}"[:300])
    return out


# Content part types of OpenAI's APIs (Chat Completions', the Responses API's) that Anthropic's Messages API has no
# block of that type for (written here, not taken from compactctl)
OPENAI_PARTS = ("image_url", "input_audio", "file", "refusal", "input_text", "output_text", "input_image", "input_file")


def _openai_parts(content: Any) -> list[str]:
    """Parts of OpenAI's form in Anthropic content, which Anthropic refuses, also inside a tool_result's content."""
    out: list[str] = []
    for p in content if isinstance(content, list) else ():
        kind = p.get("type") if isinstance(p, dict) else None
        if kind in OPENAI_PARTS:
            out.append(f"an OpenAI {kind} part in Anthropic content: {p!r}"[:300])
        elif kind == "tool_result":
            out += _openai_parts(p.get("content"))
    return out


def _blank_text(b: Any) -> bool:
    """A text block of white space alone ("text content blocks must contain non-whitespace text")."""
    return isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str) and not b["text"].strip()


def _blocks(content: Any) -> list:
    if isinstance(content, list):
        return content
    return [{"type": "text", "text": content}] if isinstance(content, str) and content else []


def _leading_results(blocks: list) -> list:
    lead = []
    for b in blocks:
        if not (isinstance(b, dict) and b.get("type") == "tool_result"):
            break
        lead.append(str(b.get("tool_use_id")))
    return lead


def validate_anthropic(rows: list[dict]) -> list[str]:
    """Every rule Anthropic Messages rows (no system row) break, as text (empty when valid)."""
    errors: list[str] = []
    turns: list[tuple[str, list]] = []  # (role, blocks), consecutive rows of one role combined
    for r in rows:
        role = r.get("role")
        errors += _malformed_parts(r.get("content"))
        errors += _openai_parts(r.get("content"))
        errors += [f"a text block without text: {b!r}" for b in _blocks(r.get("content")) if _blank_text(b)]
        if role not in ("user", "assistant"):
            errors.append(f"a row with role {role!r}")
        elif turns and turns[-1][0] == role:
            turns[-1][1].extend(_blocks(r.get("content")))
        else:
            turns.append((role, list(_blocks(r.get("content")))))
    if turns and turns[0][0] != "user":
        errors.append("the first turn is not the user's")
    uses: list[str] = []  # the calls of the turn before
    for k, (role, blocks) in enumerate(turns):
        results = sum(1 for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result")
        if role == "user":
            lead = _leading_results(blocks)
            if sorted(lead) != sorted(uses):
                errors.append(f"turn {k} does not begin with the results of the calls {uses} before it: {lead}")
            elif results != len(lead):
                errors.append(f"turn {k}: a tool_result that does not open the turn after its call")
            uses = []
        else:
            if uses:
                errors.append(f"turn {k}: calls {uses} before it have no results")
            if results:
                errors.append(f"turn {k}: a tool_result in an assistant turn")
            uses = [str(b.get("id")) for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
            errors += [
                f"turn {k}: tool_use {b.get('id')!r} has no name the API takes: {b.get('name')!r}"
                for b in blocks
                if isinstance(b, dict) and b.get("type") == "tool_use" and not (isinstance(b.get("name"), str) and _tool_name(b["name"]))
            ]
    if uses:
        errors.append(f"the last turn's calls {uses} have no results")
    ids = [str(b.get("id")) for _, blocks in turns for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
    errors += [f"tool_use id {i!r} used more than once in the request" for i in sorted({i for i in ids if ids.count(i) > 1})]
    errors += [f"tool_use id {i!r} is not of letters, digits, _ and -" for i in ids if not re.fullmatch(r"[A-Za-z0-9_-]+", i)]
    if turns and turns[-1][0] == "assistant":
        texts = [b.get("text") for b in turns[-1][1] if isinstance(b, dict) and b.get("type") == "text"]
        if texts and isinstance(texts[-1], str) and texts[-1] != texts[-1].rstrip():
            errors.append("final assistant content ends with whitespace")
    return errors


def attachments(messages: list[dict], sig_of_call, sig_of_result) -> tuple[int, int, list[str]]:
    """(results checked, wrong attachments, details): a result whose tag differs from its call's tag.
    `sig_of_call(call dict) -> tag`, `sig_of_result(text) -> tag or None` (None: a stub, not checked)."""
    checked = wrong = 0
    details = []
    i = 0
    while i < len(messages):
        m = messages[i]
        if m.get("role") == "assistant" and (m.get("tool_calls") or m.get("function_call")):
            by_id = {c.get("id"): c for c in m.get("tool_calls") or []}
            j = i + 1
            while j < len(messages) and messages[j].get("role") in ("tool", "function"):
                r = messages[j]
                call = by_id.get(r.get("tool_call_id")) if r.get("role") == "tool" else {"function": m.get("function_call")}
                tag = sig_of_result(_text(r.get("content")))
                if tag is not None and call is not None:
                    checked += 1
                    if tag != sig_of_call(call):
                        wrong += 1
                        details.append(f"{j}: result {tag} attached to call {sig_of_call(call)}")
                j += 1
            i = j
            continue
        i += 1
    return checked, wrong, details


def validate_anthropic_records(records: list[dict]) -> list[str]:
    """Every rule Anthropic output records break: a dataset's records (`{"system", "messages"}`), each a
    request, or a session's lines (`{"system"}` and one row a line), one request together. A system prompt
    must have text: null, blank text and blank text blocks are refused."""
    errors: list[str] = []
    for r in records:
        if "system" in r:
            s = r["system"]
            if s is None or (isinstance(s, str) and not s.strip()):
                errors.append(f"a system prompt without text: {s!r}")
            elif isinstance(s, list):
                errors += [f"a system text block without text: {b!r}" for b in s if _blank_text(b)]
                errors += _openai_parts(s)
            elif not isinstance(s, str):
                errors.append(f"a system prompt that is neither text nor blocks: {s!r}")
        for tool in r.get("tools") or []:  # custom tools: a name the API takes, an input_schema with a type
            if isinstance(tool, dict) and "input_schema" in tool:
                if not (isinstance(tool.get("name"), str) and _tool_name(tool["name"])):
                    errors.append(f"a tool definition named {tool.get('name')!r}")
                if not (isinstance(tool["input_schema"], dict) and "type" in tool["input_schema"]):
                    errors.append(f"tool {tool.get('name')!r}: input_schema.type: Field required")
    if any("messages" in r for r in records):
        return errors + [e for r in records for e in validate_anthropic(r.get("messages") or [])]
    return errors + validate_anthropic([r for r in records if "role" in r])
