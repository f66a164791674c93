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


# Records of another format, and what the OpenAI chat and Anthropic readers both say of each when a --from that does
# not read them is given (tests/test_format_openai.py, tests/test_format_anthropic.py).
ELSEWHERE = {
    "openhands-history": (
        {"history": [{"action": "run", "args": {"command": "ls"}}, {"observation": "run", "content": "a.py", "cause": 0}]},
        "no role (keys: history); it reads as openhands: use --from openhands, or no --from",
    ),
    "sharegpt": (
        {"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "yo"}]},
        "no role (keys: conversations); it reads as sharegpt: use --from sharegpt, or no --from",
    ),
    "openhands-event": (  # an event holds a "content" too: it said "message has no role"
        {
            "id": 1,
            "source": "user",
            "message": "Fix app.py",
            "action": "message",
            "args": {"content": "Fix app.py"},
            "content": "Fix app.py",
        },
        "no role (keys: id, source, message, action, args, content); it reads as openhands: use --from openhands, or no --from",
    ),
}
# Messages under a key of their own: each reader says where it wants them.
TRAJECTORY_RECORD = {"id": 3, "trajectory": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}


def assert_named_for_what_it_is(tmp_path, rec: dict, said: str, fmt: str, label: str) -> None:
    """`repair` and `repair --check --from fmt` of a file holding record `rec` refuse it (exit 3, nothing written),
    saying "FILE:1: not LABEL: SAID"; where SAID names another --from, that --from reads the file."""
    from .conftest import cli, write_jsonl

    src = write_jsonl(tmp_path / "r.jsonl", [rec])
    for cmd in (["repair"], ["repair", "--check"]):
        r = cli(*cmd, "--from", fmt, str(src))
        assert r.returncode == 3 and r.stdout == b"", r.stderr
        assert f"{src}:1: not {label}: {said}".encode() in r.stderr, r.stderr
    if "--from" in said:  # and that --from reads it
        other = said.rsplit("--from ", 2)[1].split(",")[0]
        assert cli("repair", "--from", other, str(src)).returncode == 0
