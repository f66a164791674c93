"""`compactctl mcp`: a real MCP session over stdio with the SDK's own client (no mock)."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (make install installs it)")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from compactctl import archive, search

from .conftest import cli, tool_session, write_jsonl


def _text(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def _session(arch: str, calls: list[tuple[str, dict]], *more: str):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "compactctl", "mcp", "--archive", arch, *(x for a in more for x in ("--archive", a))],
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


def test_the_server_names_itself_with_compactctls_version(tmp_path):
    """A client's initialize saw an empty server version (mcp 2.x asks for one; 1.x's FastMCP takes none)."""
    import inspect

    from compactctl import __version__
    from compactctl.mcp_server import _sdk

    arch = tmp_path / "a.jsonl"
    arch.write_text("")
    params = StdioServerParameters(command=sys.executable, args=["-m", "compactctl", "mcp", "--archive", str(arch)])

    async def info():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
        return getattr(init, "server_info", None) or init.serverInfo

    got = asyncio.run(info())
    assert got.name == "compactctl"
    if "version" in inspect.signature(_sdk()[0]).parameters:
        assert got.version == __version__


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
    assert len(text) == MAX_CHARS and text.endswith("or search for what you need]") and "of 60,000" in text
    # the rest, in parts: every character once, in order
    got, offset = "", 0
    while True:
        part = recall_text(Ix(), "r", offset)  # type: ignore[arg-type]
        body, _, note = part.partition("\n...[characters ")
        got += body
        if not note:
            break
        # the offset as the tool takes it: digits only ("offset=39,906" is no integer to a model that copies it)
        offset = int(note.split("offset=")[1].split(", or")[0])
    assert got == "x" * 60_000
    assert "past the end" in recall_text(Ix(), "r", 70_000)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["a.jsonl", "a.sqlite"])
def test_the_server_answers_for_what_a_later_run_archived(tmp_path, name):
    """The server lives long: a compaction that writes its archive after it started is found (it said "no archived
    original has reference ..." until restarted). The index is checked with one stat per request. An SQLite
    archive too (README's `mcp --archive removed.sqlite`): a hook's next compaction renames a new file over it,
    and the server kept reading the old one, every new reference unknown."""
    rows = tool_session(6, 3000)
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    arch = tmp_path / name
    cli("compact", str(src), "--context-window", "3000", "-q", "-o", str(tmp_path / "c1.jsonl"), "--archive", str(arch))
    ix = search.Index.open(str(arch))
    assert ix.current() is ix  # nothing changed: the same index
    rows[3]["content"] = "Traceback: KeyError 'warp_core' in engine/core.py line 88\n" + "noise\n" * 600
    src2 = write_jsonl(tmp_path / "s2.jsonl", rows)
    cli("compact", str(src2), "--context-window", "3000", "-q", "-o", str(tmp_path / "c2.jsonl"), "--archive", str(arch))
    [rec] = [x for x in archive.records(str(arch)) if "warp_core" in str(x.get("message", {}).get("content"))]
    fresh = ix.current()
    assert fresh is not ix and fresh.recall(rec["ref"])[0].text == rec["message"]["content"]


def test_search_answers_and_snippets_are_capped(tmp_path):
    """Outputs that are each one 800 KB token made a 9.6 MB search answer: a snippet is SNIPPET_CHARS at most, and
    an answer MAX_CHARS."""
    from compactctl.mcp_server import MAX_CHARS, search_text
    from compactctl.search import SNIPPET_CHARS

    rows = tool_session(8, 3000)
    for i, r in enumerate(rows):
        if r["role"] == "tool":
            r["content"] = f"MARKER {i} " + "ab12" * 50_000
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    arch = tmp_path / "a.jsonl"
    cli("compact", str(src), "--context-window", "3000", "-q", "-o", str(tmp_path / "c.jsonl"), "--archive", str(arch))
    with search.Index.open(str(arch)) as ix:
        hits = ix.search("MARKER", 50)
        assert hits and all(len(h.snippet) <= SNIPPET_CHARS + 2 for h in hits)
        assert len(search_text(ix, "MARKER", 50)) <= MAX_CHARS

    class Hit:
        def __init__(self, k):
            self.ref, self.transcript, self.index, self.role, self.snippet = f"{k:08x}", "t", k, "tool", "x" * 2_000

    class Ix:
        def search(self, query, limit):
            return [Hit(k) for k in range(limit)]

    text = search_text(Ix(), "x", 50)  # type: ignore[arg-type]
    assert len(text) == MAX_CHARS and text.endswith("ask for fewer]")


def test_the_same_content_under_one_reference_is_recalled_once(tmp_path):
    """Byte-identical originals share a reference: the same assistant line summarized in several transcripts of a
    dataset (twice in one) came back once per copy ("4 different originals have this reference")."""
    from .conftest import SAMPLES

    arch = tmp_path / "a.jsonl"
    r = cli(
        "compact", str(SAMPLES / "dataset.jsonl"), "--context-window", "8000", "-q", "-o", str(tmp_path / "d.jsonl"), "--archive", str(arch)
    )
    assert r.returncode == 0, r.stderr
    copies: dict[str, list] = {}
    for x in archive.records(str(arch)):
        if x.get("ref"):
            copies.setdefault(x["ref"], []).append((x["message"].get("role"), x["message"].get("content")))
    shared = {ref: c for ref, c in copies.items() if len(c) > 1}
    assert shared  # the sample has them
    with search.Index.open(str(arch)) as ix:
        for ref, c in shared.items():
            assert len(ix.recall(ref)) == len(set(map(str, c))), ref


def test_the_server_reads_several_archives_as_one(tmp_path):
    refs = []
    for k, word in enumerate(("flux_capacitor", "warp_coil")):
        rows = tool_session(6, 3000)
        rows[3]["content"] = f"Traceback: KeyError '{word}' in engine/core.py line 88\n" + "noise\n" * 600
        src = write_jsonl(tmp_path / f"s{k}.jsonl", rows)
        arch = tmp_path / f"a{k}.jsonl"
        r = cli("compact", str(src), "--context-window", "3000", "-q", "-o", str(tmp_path / f"c{k}.jsonl"), "--archive", str(arch))
        assert r.returncode == 0, r.stderr
        [rec] = [x for x in archive.records(str(arch)) if x.get("index") == 3]
        refs.append(rec)
    calls = [("recall", {"ref": refs[0]["ref"]}), ("recall", {"ref": refs[1]["ref"]}), ("search", {"query": "warp_coil"})]
    _, (first, second, found) = asyncio.run(_session(str(tmp_path / "a0.jsonl"), calls, str(tmp_path / "a1.jsonl")))
    assert _text(first) == refs[0]["message"]["content"] and _text(second) == refs[1]["message"]["content"]
    assert _text(found).startswith(f"[ref {refs[1]['ref']}]")
