"""Gemini CLI sessions (one JSON document: {"sessionId", "messages": [{"type", "content", "toolCalls"}]}).

Read-only: `user` and `gemini` turns become user and assistant messages (thoughts as reasoning),
each tool call's recorded result becomes a tool message; `info` and `error` records are not sent to
a model and are left out. Output is OpenAI chat unless `--to` says otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator

import orjson

from ..errors import DataError
from ..model import Message, ToolCall, Transcript
from . import Reader, Record

NAME = "gemini"
CARRIER_KEYS = ("messages",)


def sniff(obj: dict) -> str | None:
    msgs = obj.get("messages")
    if "sessionId" in obj and isinstance(msgs, list) and all(isinstance(m, dict) and "type" in m and "role" not in m for m in msgs[:5]):
        return "dataset"
    return None


def _result_text(result) -> str:
    """A tool call's recorded result: functionResponse parts -> their output text."""
    if isinstance(result, str):
        return result
    texts = []
    for part in result if isinstance(result, list) else [result]:
        if not isinstance(part, dict):
            continue
        resp = (part.get("functionResponse") or {}).get("response", part)
        out = resp.get("output", resp.get("error", resp)) if isinstance(resp, dict) else resp
        texts.append(out if isinstance(out, str) else orjson.dumps(out).decode())
    return "\n".join(texts)


# Gemini CLI's statuses of a call that did not succeed: it failed, or the person cancelled it before it ran.
FAILED_STATUSES = ("error", "cancelled")


def _failed(call: dict) -> bool:
    """A recorded call that did not succeed: its status says so, or its response is an error and no output."""
    if call.get("status") in FAILED_STATUSES:
        return True
    parts = call.get("result")
    for part in parts if isinstance(parts, list) else [parts]:
        resp = (part.get("functionResponse") or {}).get("response") if isinstance(part, dict) else None
        if isinstance(resp, dict) and "error" in resp and "output" not in resp:
            return True
    return False


def _text_of(content) -> str:
    """A turn's content: a string, or (newer Gemini CLI) a list of parts, whose text parts are the text; other
    parts (an inline image, a file) say what they were, anything else is kept as JSON."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else [content]
    texts = []
    for p in parts:
        if isinstance(p, str):
            texts.append(p)
        elif isinstance(p, dict) and isinstance(p.get("text"), str):
            texts.append(p["text"])
        elif isinstance(p, dict) and isinstance(p.get("inlineData") or p.get("fileData"), dict):
            data: dict = p.get("inlineData") or p.get("fileData") or {}
            uri = data.get("fileUri")
            texts.append(f"[{data.get('mimeType') or 'file'}{': ' + uri if isinstance(uri, str) else ''}]")
        elif p is not None:
            texts.append(orjson.dumps(p).decode())
    return "\n".join(texts)


def messages_from(rows: list, source: str, lineno: int) -> list[Message]:
    if not isinstance(rows, list):
        raise DataError(source, lineno, f'a Gemini session\'s "messages" must be a list, got {type(rows).__name__}')
    out: list[Message] = []
    for m in rows:
        if not isinstance(m, dict):
            raise DataError(source, lineno, "a Gemini message must be an object")
        typ = m.get("type")
        if typ is None and "role" in m:  # (read as Gemini's, it was left out: a record came out with no messages)
            raise DataError(source, lineno, "a Gemini message has a 'type', this one a 'role': not a Gemini session (--from openai?)")
        text = _text_of(m.get("content", ""))
        if typ == "user":
            out.append(Message(role="user", content=text))
        elif typ == "gemini":
            out.extend(_turn(m, text, source, lineno))
    for i, msg in enumerate(out):
        msg.index = i
    return out


def _turn(m: dict, text: str, source: str, lineno: int) -> list[Message]:
    """A "gemini" message: the assistant's turn, then a result for each call that has one."""
    thoughts = m.get("thoughts") or []
    if not isinstance(thoughts, list) or not isinstance(m.get("toolCalls") or [], list):
        raise DataError(source, lineno, "a Gemini message's thoughts and toolCalls must be lists")
    reasoning = "\n".join(f"{t.get('subject', '')}: {t.get('description', '')}" for t in thoughts if isinstance(t, dict)) or None
    calls = [c for c in m.get("toolCalls") or [] if isinstance(c, dict)]
    tc = [ToolCall(c.get("id"), str(c.get("name", "")), orjson.dumps(c.get("args", {})).decode()) for c in calls]
    out = [Message(role="assistant", content=text, tool_calls=tc, reasoning=reasoning)]
    for c in calls:
        if "result" in c:
            out.append(Message(role="tool", content=_result_text(c["result"]), tool_call_id=c.get("id"), is_error=_failed(c) or None))
    return out


def read(records: Iterator[Record], source: str, layout: str, reader: Reader) -> Iterator[Transcript]:
    for n, (lineno, raw, obj) in enumerate(records):
        with reader.guard(lineno, raw):
            meta = {k: v for k, v in obj.items() if k != "messages"}
            yield Transcript(
                messages_from(obj.get("messages") or [], source, lineno),
                id=f"{source}#{n + 1}" if n else source,
                source=source,
                line=lineno,
                format=NAME,
                layout="dataset",
                metadata=meta,
                raw=raw if reader.rejects is not None else None,  # for --rejects alone (as_read): the writer never reads it
            )
