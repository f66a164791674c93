"""Short stable references to archived originals: `[ref 3f9a2c1b]`.

A reference is 8 hex characters (32 bits) of BLAKE2b over the original's canonical JSON (the body
the archive record holds, keys sorted) and nothing else, so a rerun over the same input writes the
same references whatever the input is called (a file, stdin), and the archive record carries the
same `ref`. Byte-identical originals share a reference, and recall gives the same content for all of
them. Different originals collide by chance with probability about N**2 / 2**33 in an archive of N
records (0.1% at 3,000, one expected at 90,000); `recall` then lists every candidate with its
transcript rather than pick one, and `--transcript` narrows it.

A summarized span gets one reference for the whole span (over the fingerprints of the messages it
replaced); its archive records carry it as `span`, with the positions it covered.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from .model import Message, blake2b, digest, fingerprint

REF_HEX = 8
REF_RE = re.compile(r"\[ref ([0-9a-f]{8})\]")
TRUNCATED = "...[truncated]"
RECALL_HINT_START = "Removed originals are archived:"
RECALL_HINT = (
    f"{RECALL_HINT_START} the `search` tool (argument `query`) finds them by words, "
    "the `recall` tool (argument `ref`) returns the original behind any [ref ...]."
)
RECALL_HINT_SEARCH = f"{RECALL_HINT_START} the `search` tool (argument `query`) finds them by words."  # --no-refs


def body_of(m: Message) -> Any:
    """The original as the archive stores it: its source object for OpenAI chat, else the canonical
    message in OpenAI chat shape."""
    from .chat import message_to_dict

    return m.origin if isinstance(m.origin, dict) else message_to_dict(m.evolve())


def canonical(body: Any) -> bytes:
    return orjson.dumps(body, option=orjson.OPT_SORT_KEYS)


def ref_of_canonical(canon: bytes) -> str:
    return digest(canon, REF_HEX // 2)


def ref_of_body(body: Any) -> str:
    return ref_of_canonical(canonical(body))


def ref_of(original: Message) -> str:
    """The reference of an original (untouched) message."""
    return ref_of_body(body_of(original))


def span_ref(members: list[Message]) -> str:
    """One reference for a summarized span, from what its messages say."""
    h = blake2b(b"span", digest_size=REF_HEX // 2)
    for m in members:
        h.update(b"\n" + fingerprint(m).encode())
    return h.hexdigest()


def mark(ref: str) -> str:
    return f"[ref {ref}]"


def tag(old: Message, new: Message, ref: str) -> Message:
    """`new` (a pruned `old`) with its reference where the content was cut: in the first
    truncation marker of each cut tool call (inside the JSON string, so arguments stay valid),
    else at the end of the text."""
    if new.tool_calls and [c.arguments for c in new.tool_calls] != [c.arguments for c in old.tool_calls]:
        marker = f"{TRUNCATED} {mark(ref)}"
        calls, done = [], False
        for c_new, c_old in zip(new.tool_calls, old.tool_calls, strict=False):
            if c_new.arguments != c_old.arguments and TRUNCATED in c_new.arguments:
                c_new = type(c_new)(c_new.id, c_new.name, c_new.arguments.replace(TRUNCATED, marker, 1), dict(c_new.extra))
                done = True
            calls.append(c_new)
        calls.extend(new.tool_calls[len(calls) :])
        if done:
            return new.evolve(tool_calls=calls)
    return new.evolve(content=_append(new.content, " " + mark(ref)))


def _append(content: Any, extra: str) -> Any:
    if isinstance(content, str):
        return content + extra
    if isinstance(content, list):
        parts = list(content)
        for k in range(len(parts) - 1, -1, -1):
            p = parts[k]
            if isinstance(p, dict) and isinstance(p.get("text"), str):
                parts[k] = {**p, "text": p["text"] + extra}
                return parts
        return parts + [{"type": "text", "text": extra.strip()}]
    return extra.strip()


def without(text: str) -> str:
    """`text` with its archive references (`[ref 49601d51]`) taken out: they name no fact of the work."""
    return REF_RE.sub("", text) if "[ref " in text else text


def found(text: str) -> list[str]:
    """The references a text carries, in order."""
    return REF_RE.findall(text)


SPAN_LINE_START = "Originals of the summarized turns:"


def span_line(ref: str | None, hint: bool = False, refs: bool = True) -> str:
    """The lines a summary ends with: the reference of the span it replaced, and (--recall-hint) the tools; without
    references (`refs` False) the hint names only `search`, there being no [ref ...] to recall."""
    lines = [f"{SPAN_LINE_START} {mark(ref)}."] if ref else []
    return "\n".join(lines + [RECALL_HINT if refs else RECALL_HINT_SEARCH] if hint else lines)
