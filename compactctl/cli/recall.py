"""`recall` and `mcp`: getting removed originals back from an archive (the --refs/--recall-hint options that
make the references are in groups.py)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..errors import UsageError

Archive = Annotated[
    list[str],
    typer.Option(
        "--archive",
        help="The archive: JSONL (indexed on first use into a sibling .sqlite) or .sqlite. Give it again to read "
        "several as one (the archives of separate compactions).",
    ),
]


def recall(
    ref: Annotated[str | None, typer.Argument(help="A reference: the 8 hex digits of a 'ref 3f9a2c1b' mark.", show_default=False)] = None,
    archive: Archive = ...,  # type: ignore[assignment]
    search: Annotated[str | None, typer.Option("--search", help="List the best matches for these words instead.")] = None,
    limit: Annotated[int, typer.Option("--limit", help="Matches listed by --search.")] = 5,
    transcript: Annotated[str | None, typer.Option("--transcript", help="Only this transcript of the archive.")] = None,
    index: Annotated[bool, typer.Option("--index", help="Only (re)build the index of a JSONL archive.")] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="JSON lines for tools: full records for REF, ref + snippet for --search.")
    ] = False,
):
    """Print the original behind a reference, or search the archive of removed originals (bm25).

    Exit 8 when no archived original has the reference.

    Example: compactctl recall 3f9a2c1b --archive removed.jsonl ; compactctl recall --search "config.py" --archive removed.jsonl
    --archive older.jsonl
    """
    import orjson

    from .. import archive as arc
    from ..search import Archives

    if index:
        for a in archive:
            if arc.is_sqlite(a):
                raise UsageError(f"--index builds the index of a JSONL archive; {a} is already SQLite")
        for a in archive:
            n = arc.build(a, arc.index_path(a))
            print(f"indexed {n:,} records into {arc.index_path(a)}", file=sys.stderr)
        if ref is None and search is None:
            return
    if (ref is None) == (search is None):
        raise UsageError("give a reference or --search TERMS (not both)")
    if limit < 1:
        raise UsageError(f"--limit {limit}: must be at least 1")
    _check_ref(ref)
    with Archives.open(archive) as ix:
        ix.check_transcript(transcript)
        if search is not None:
            hits = ix.search(search, limit, transcript)
            for h in hits:
                print(orjson.dumps(h.as_dict()).decode() if as_json else f"[ref {h.ref}] {h.transcript} #{h.index} {h.role}: {h.snippet}")
            return
        assert ref is not None  # exactly one of ref and --search, checked above
        hits = ix.recall(ref, transcript)
    if as_json:
        for h in hits:
            print(orjson.dumps(h.as_dict()).decode())
    elif len(hits) == 1 and not hits[0].span:
        sys.stdout.write(hits[0].text + ("\n" if not hits[0].text.endswith("\n") else ""))
    else:
        if not hits[0].span:
            print(f"compactctl: {len(hits)} different originals have this reference; --transcript picks one", file=sys.stderr)
        for h in hits:
            print(f"--- [ref {h.ref}] {h.transcript} #{h.index} {h.role} ---")
            print(h.text)


def _check_ref(ref: str | None) -> None:
    """A reference that is no reference at all (not hex) is a usage error (exit 2), not one the archive lacks (8)."""
    from ..search import UnknownRef, normalized_ref

    if ref is None:
        return
    try:
        normalized_ref(ref)
    except UnknownRef as e:
        raise UsageError(str(e)) from None


def mcp(archive: Archive = ...):  # type: ignore[assignment]
    """Serve `search` (argument `query`) and `recall` (argument `ref`) over an archive to an agent: an MCP server on stdio.

    Needs the mcp package: pip install '.[mcp]' in a compactctl checkout, or pip install mcp.

    Example (client config): {"command": "compactctl", "args": ["mcp", "--archive", "/path/removed.jsonl"]} (--archive again: several as one)
    """
    from ..mcp_server import serve

    serve(archive)
