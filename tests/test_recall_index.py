"""The index a JSONL archive gets on first use: never written over a file that is not that JSONL's index."""

from __future__ import annotations

import json
import os
import sqlite3

from compactctl import archive, refs, search
from compactctl.errors import Exit

from .conftest import CORPUS, SAMPLES, cli, needs_corpus

SESSION_A = CORPUS / "claude-code" / "agentcmd" / "full-session-four.jsonl"
SESSION_B = CORPUS / "claude-code" / "spotter" / "subagent.jsonl"


def compact(src, out, arch):
    r = cli("compact", str(src), "--context-window", "8000", "-q", "-o", str(out), "--archive", str(arch))
    assert r.returncode == 0, r.stderr
    return refs.REF_RE.findall(out.read_text())


def first_word(arch) -> str:
    """A word of an archived original, to search for."""
    text = next(r["message"]["content"] for r in archive.records(str(arch)) if isinstance(r.get("message", {}).get("content"), str))
    return next(w for w in text.split() if w.isalpha() and len(w) > 4)


@needs_corpus
def test_a_jsonl_index_leaves_another_runs_sqlite_archive_alone(tmp_path):
    """The reviewer's case: run A archives into removed.sqlite, run B into removed.jsonl; searching B's archive
    must not overwrite A's (A's references and restore keep working) and finds B's originals."""
    out_a, out_b = tmp_path / "outA.jsonl", tmp_path / "outB.jsonl"
    refs_a = compact(SESSION_A, out_a, tmp_path / "removed.sqlite")
    refs_b = compact(SESSION_B, out_b, tmp_path / "removed.jsonl")
    assert refs_a and refs_b
    before = (tmp_path / "removed.sqlite").read_bytes()
    r = cli("recall", "--search", first_word(tmp_path / "removed.jsonl"), "--archive", str(tmp_path / "removed.jsonl"))
    assert r.returncode == 0 and r.stdout, r.stderr
    assert (tmp_path / "removed.sqlite").read_bytes() == before
    assert cli("recall", refs_b[0], "--archive", str(tmp_path / "removed.jsonl")).returncode == 0
    assert cli("recall", refs_a[0], "--archive", str(tmp_path / "removed.sqlite")).returncode == 0
    r = cli("restore", str(out_a), "--archive", str(tmp_path / "removed.sqlite"))
    assert r.returncode == 0 and r.stdout == SESSION_A.read_bytes(), r.stderr
    r = cli("restore", str(out_b), "--archive", str(tmp_path / "removed.jsonl"))
    assert r.returncode == 0 and r.stdout == SESSION_B.read_bytes(), r.stderr
    with search.Index.open(str(tmp_path / "removed.jsonl")) as ix:  # the index went to a name of its own
        assert ix.path == str(tmp_path / "removed.jsonl.index.sqlite")
        assert ix.recall(refs_b[0]) and not any(h.transcript == str(SESSION_A) for h in ix.search(first_word(tmp_path / "removed.jsonl")))


def test_a_sibling_that_is_not_an_index_is_left_untouched(tmp_path):
    out = tmp_path / "c.jsonl"
    found = compact(SAMPLES / "long_session.jsonl", out, tmp_path / "a.jsonl")
    for junk in (b"my notes, not a database\n", b""):
        (tmp_path / "a.sqlite").write_bytes(junk)
        r = cli("recall", found[0], "--archive", str(tmp_path / "a.jsonl"))
        assert r.returncode == 0, r.stderr
        assert (tmp_path / "a.sqlite").read_bytes() == junk
        (tmp_path / "a.jsonl.index.sqlite").unlink()
    # --index too: it says where the index went
    r = cli("recall", "--index", "--archive", str(tmp_path / "a.jsonl"))
    assert r.returncode == 0 and str(tmp_path / "a.jsonl.index.sqlite").encode() in r.stderr
    assert (tmp_path / "a.sqlite").read_bytes() == b""


def test_when_both_names_are_taken_it_says_so_and_writes_nothing(tmp_path):
    found = compact(SAMPLES / "long_session.jsonl", tmp_path / "c.jsonl", tmp_path / "a.jsonl")
    other = compact(SAMPLES / "claude_code_session.jsonl", tmp_path / "d.jsonl", tmp_path / "a.sqlite")
    (tmp_path / "a.jsonl.index.sqlite").write_bytes(b"mine\n")
    before = sorted((p.name, p.read_bytes()) for p in tmp_path.iterdir())
    r = cli("recall", found[0], "--archive", str(tmp_path / "a.jsonl"))
    assert r.returncode == Exit.IO and b"left untouched" in r.stderr, r.stderr
    assert cli("recall", "--index", "--archive", str(tmp_path / "a.jsonl")).returncode == Exit.IO
    assert sorted((p.name, p.read_bytes()) for p in tmp_path.iterdir()) == before
    assert other and cli("recall", other[0], "--archive", str(tmp_path / "a.sqlite")).returncode == 0


def test_the_index_records_its_jsonl_and_is_reused_while_it_is_unchanged(tmp_path):
    compact(SAMPLES / "long_session.jsonl", tmp_path / "c.jsonl", tmp_path / "a.jsonl")
    with search.Index.open(str(tmp_path / "a.jsonl")) as ix:
        assert ix.path == str(tmp_path / "a.sqlite")
    db = sqlite3.connect(tmp_path / "a.sqlite")
    (name,) = db.execute("SELECT name FROM derived_from").fetchone()
    db.close()
    assert name == "a.jsonl"
    built = os.stat(tmp_path / "a.sqlite")
    with search.Index.open(str(tmp_path / "a.jsonl")):
        pass
    assert os.stat(tmp_path / "a.sqlite").st_ino == built.st_ino  # not rebuilt


def test_a_stale_index_is_rebuilt_even_when_the_new_jsonl_looks_older(tmp_path):
    """Another run's archive written to the same JSONL (or an older archive copied back with its mtime):
    the index is rebuilt in place, whatever the mtimes say."""
    arch = tmp_path / "a.jsonl"
    old = compact(SAMPLES / "long_session.jsonl", tmp_path / "c.jsonl", arch)
    assert cli("recall", old[0], "--archive", str(arch)).returncode == 0
    # another run's archive copied over it (a run writing over it would carry the earlier transcript's originals)
    new = compact(SAMPLES / "claude_code_session.jsonl", tmp_path / "d.jsonl", tmp_path / "other.jsonl")
    arch.write_bytes((tmp_path / "other.jsonl").read_bytes())
    past = os.stat(tmp_path / "a.sqlite").st_mtime_ns - 10**10
    os.utime(arch, ns=(past, past))
    gone = next(x for x in old if x not in new)
    assert cli("recall", gone, "--archive", str(arch)).returncode == Exit.NOT_FOUND
    for x in new:
        assert cli("recall", x, "--archive", str(arch)).returncode == 0
    assert not (tmp_path / "a.jsonl.index.sqlite").exists()  # its own index, rebuilt where it was


def test_a_file_that_appears_while_the_index_is_built_is_not_written_over(tmp_path, monkeypatch):
    compact(SAMPLES / "long_session.jsonl", tmp_path / "c.jsonl", tmp_path / "a.jsonl")
    insert = archive._insert

    def racing(db, rec, raw, *rest):  # another run writes its --archive a.sqlite meanwhile
        if not (tmp_path / "a.sqlite").exists():
            (tmp_path / "a.sqlite").write_bytes(b"another run's archive")
        insert(db, rec, raw, *rest)

    monkeypatch.setattr(archive, "_insert", racing)
    r = cli("recall", "--search", "error", "--archive", str(tmp_path / "a.jsonl"))
    assert r.returncode == Exit.IO and b"left untouched" in r.stderr
    assert (tmp_path / "a.sqlite").read_bytes() == b"another run's archive"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".compactctl-")]  # no temporary file left


def test_archives_in_a_folder_whose_name_looks_like_a_uri(tmp_path):
    d = tmp_path / "runs #1?x=%20"
    d.mkdir()
    found = compact(SAMPLES / "long_session.jsonl", d / "c.jsonl", d / "a.jsonl")
    assert cli("recall", found[0], "--archive", str(d / "a.jsonl")).returncode == 0
    assert (d / "a.sqlite").is_file()
    compact(SAMPLES / "long_session.jsonl", d / "s.jsonl", d / "s.sqlite")
    assert cli("recall", found[0], "--archive", str(d / "s.sqlite")).returncode == 0


def test_a_database_that_is_not_an_archive_is_a_data_error_not_a_traceback(tmp_path):
    """`--archive other.db`, another program's SQLite file with a `records` table, passed the check and then
    failed with sqlite3.OperationalError (exit 1, a traceback; the MCP server started and failed every call).
    A file that is no SQLite at all was named as line 0 (`fake.sqlite:0: ...`)."""
    other = tmp_path / "other.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE records(x)")
    db.commit()
    db.close()
    fake = tmp_path / "fake.sqlite"
    fake.write_text("not a database")
    (tmp_path / "c.jsonl").write_text('{"role": "user", "content": "hi"}\n')
    for path in (other, fake):
        for args in (("recall", "--search", "x"), ("recall", "deadbeef"), ("restore", str(tmp_path / "c.jsonl"))):
            r = cli(*args, "--archive", str(path))
            assert r.returncode == Exit.DATA, (args, r.stderr)
            assert f"{path}: not a compactctl archive".encode() in r.stderr and b"Traceback" not in r.stderr


def test_an_archived_result_holding_an_image_block_is_indexed_and_restored(tmp_path):
    """The archive keeps messages in OpenAI chat's shape, as the model holds them: an Anthropic (or Claude Code)
    result's image block stays in its content. OpenAI chat's reader refuses that block in a file; reading the archive
    back with it made the SQLite archive's index fail on the corpus session that has one (full-session-two)."""
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
    rows = [{"role": "user", "content": "Take screenshots of the settings page and fix the layout."}]
    for k in range(8):
        rows.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": "screenshot", "input": {"page": k}}]})
        result = [{"type": "text", "text": f"screenshot {k} " + "pixel row " * 200}, image]
        rows.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}", "content": result}]})
    rows.append({"role": "user", "content": "Now make the header sticky."})
    src = tmp_path / "s.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out, arch = tmp_path / "out.jsonl", tmp_path / "removed.sqlite"
    r = cli("compact", str(src), "--context-window", "3000", "-q", "-o", str(out), "--archive", str(arch))
    assert r.returncode == 0, r.stderr
    assert any(isinstance(m["message"].get("content"), list) for m in archive.records(str(arch)))
    r = cli("recall", "--search", "screenshot", "--archive", str(arch))
    assert r.returncode == 0 and b"screenshot" in r.stdout, r.stderr
    r = cli("restore", str(out), "--archive", str(arch))
    assert r.returncode == 0, r.stderr
    assert [json.loads(line) for line in r.stdout.splitlines()] == rows
