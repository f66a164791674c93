"""An MCP server (stdio) over an archive (or several read as one): the tools `search` and `recall`, on the official `mcp` SDK.

An agent resumed from a compacted transcript sees `[ref 3f9a2c1b]` where content was removed;
`recall` returns the original, `search` finds originals by words. Local only: stdio, no network.
"""

from __future__ import annotations

import inspect
import threading

from ._version import __version__
from .errors import UsageError
from .search import Archives, Index, UnknownRef

MAX_CHARS = 40_000  # what one recall returns at most (a summarized span can be megabytes)


def _sdk():
    """(server class, the error a tool raises to report a failure to the model)."""
    try:
        from mcp.server.mcpserver import MCPServer  # mcp >= 2
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        try:
            from mcp.server.fastmcp import FastMCP as MCPServer  # mcp 1.x
            from mcp.server.fastmcp.exceptions import ToolError
        except ImportError as e:
            raise UsageError(  # a missing extra is the command line's to fix (exit 2), as --engine ray without Ray
                "the MCP server needs the mcp package: pip install '.[mcp]' in a compactctl checkout, or pip install mcp"
            ) from e
    return MCPServer, ToolError


def search_text(ix: Index | Archives, query: str, limit: int = 5) -> str:
    hits = ix.search(query, max(1, min(limit, 50)))
    if not hits:
        return f"no archived original matches {query!r}"
    return _capped("\n".join(f"[ref {h.ref}] {h.transcript} #{h.index} {h.role}: {h.snippet}" for h in hits), "ask for fewer")


def recall_text(ix: Index | Archives, ref: str, offset: int = 0) -> str:
    """The original(s) behind `ref`, from character `offset` on: MAX_CHARS at most, the note saying where the next
    part starts (a long output or span is read in parts)."""
    hits = ix.recall(ref)
    if len(hits) == 1 and not hits[0].span:
        text = hits[0].text
    else:
        text = "\n".join(f"--- [ref {h.ref}] {h.transcript} #{h.index} {h.role} ---\n{h.text}" for h in hits)
    offset = max(0, offset)
    if offset >= len(text) > 0:
        return f"[offset {offset:,} is past the end: the original has {len(text):,} characters]"
    part = text[offset:]
    if len(part) <= MAX_CHARS:
        return part
    # the offset in digits only: a model copies it into the tool's integer argument ("39,906" is none)
    note = "\n...[characters {:,}-{:,} of " + f"{len(text):,}: the rest with offset={{}}, or search for what you need]"
    keep = MAX_CHARS - len(note.format(offset, offset + MAX_CHARS, offset + MAX_CHARS))
    return part[:keep] + note.format(offset, offset + keep, offset + keep)


def _capped(text: str, hint: str) -> str:
    """An answer of MAX_CHARS at most (the note counts too)."""
    if len(text) <= MAX_CHARS:
        return text
    note = f"\n...[cut at {{:,}} of {len(text):,} chars: {hint}]"
    keep = MAX_CHARS - len(note.format(MAX_CHARS))
    return text[:keep] + note.format(keep)


def build_server(archives: list[str]):
    opened = [Archives.open(archives)]  # fails early (bad path, not an archive) before the session starts
    lock = threading.Lock()

    def ix() -> Archives:  # re-indexed when a later run wrote a JSONL archive (the server lives long)
        with lock:
            opened[0] = opened[0].current()
            return opened[0]

    server_class, tool_error = _sdk()
    about: dict[str, str] = {
        "instructions": "Originals that compaction removed from this conversation. "
        "`search` finds them by words; `recall` returns the one behind a [ref ...]."
    }
    if "version" in inspect.signature(server_class).parameters:  # mcp 2.x (1.x's FastMCP names no version: empty there)
        about["version"] = __version__
    server = server_class("compactctl", **about)

    @server.tool()
    def search(query: str, limit: int = 5) -> str:
        """Search the archived originals (removed tool outputs, cut arguments, summarized turns) by words; best matches first, each with its [ref ...]."""
        return search_text(ix(), query, limit)

    @server.tool()
    def recall(ref: str, offset: int = 0) -> str:
        """The original content behind a reference such as 3f9a2c1b (from [ref 3f9a2c1b] in the conversation or a search result); a long one comes in parts: pass the offset the answer names for the next."""
        try:
            return recall_text(ix(), ref, offset)
        except UnknownRef as e:
            raise tool_error(str(e)) from e

    return server


def serve(archives: list[str]) -> None:
    build_server(archives).run("stdio")
