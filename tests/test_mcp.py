"""`compactctl mcp`: a real MCP session over stdio with the SDK's own client (no mock)."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (make install installs it)")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from compactctl import archive

from .conftest import cli, tool_session, write_jsonl


def _text(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def _session(arch: str, calls: list[tuple[str, dict]]):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "compactctl", "mcp", "--archive", arch],
        env={k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        results = [await session.call_tool(name, args) for name, args in calls]
    return {t.name: t for t in tools.tools}, results


def test_mcp_server_searches_and_recalls(tmp_path):
    rows = tool_session(6, 3000)
    rows[3]["content"] = "Traceback: KeyError 'flux_capacitor' in engine/core.py line 88\n" + "noise\n" * 600
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    out, arch = tmp_path / "c.jsonl", tmp_path / "a.jsonl"
    r = cli("compact", str(src), "--context-window", "3000", "-q", "-o", str(out), "--archive", str(arch))
    assert r.returncode == 0, r.stderr
    [rec] = [x for x in archive.records(str(arch)) if x.get("index") == 3]
    assert f"[ref {rec['ref']}]" in out.read_text()  # the agent sees the reference where the output was

    tools, (found, got, unknown) = asyncio.run(
        _session(str(arch), [("search", {"query": "flux_capacitor"}), ("recall", {"ref": rec["ref"]}), ("recall", {"ref": "deadbeef"})])
    )
    assert set(tools) >= {"search", "recall"}
    schema = {n: getattr(t, "input_schema", None) or t.inputSchema for n, t in tools.items()}  # mcp 2.x / 1.x
    assert "query" in schema["search"]["properties"] and "ref" in schema["recall"]["properties"]
    error = lambda res: getattr(res, "is_error", None) or getattr(res, "isError", False)
    assert not error(found) and _text(found).startswith(f"[ref {rec['ref']}]") and "flux_capacitor" in _text(found)
    assert not error(got) and _text(got) == rec["message"]["content"]
    assert error(unknown) and "deadbeef" in _text(unknown)


def test_a_recall_longer_than_the_cap_is_cut_note_included():
    """A summarized span of 60,000 characters came back as 40,062: the note was added after the cut."""
    from compactctl.mcp_server import MAX_CHARS, recall_text

    class One:
        def __init__(self, text):
            self.text, self.span, self.ref, self.transcript, self.index, self.role = text, None, "r", "t", 0, "tool"

    class Ix:
        def recall(self, ref):
            return [One("x" * 60_000)]

    text = recall_text(Ix(), "r")  # type: ignore[arg-type]
    assert len(text) == MAX_CHARS and text.endswith("of 60,000 chars: search for what you need]")
