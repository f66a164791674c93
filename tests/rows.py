"""Transcripts written as OpenAI chat rows, the way most tests build them."""

from __future__ import annotations

import orjson

from compactctl.formats.openai import message_from_dict
from compactctl.model import Transcript


def T(rows: list[dict], id: str = "t") -> Transcript:
    """The transcript of `rows` (OpenAI chat messages), each message read as from line i + 1 of a file "t"."""
    return Transcript([message_from_dict(d, "t", i + 1, i) for i, d in enumerate(rows)], id=id)


def call(cid: str, name: str, args: dict) -> dict:
    """An assistant message that calls `name` with `args` (no text)."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": cid, "type": "function", "function": {"name": name, "arguments": orjson.dumps(args).decode()}}],
    }
