"""The archive of removed originals (archive.py), as a user meets it: what a run archives (JSONL or SQLite, the
same records), what `recall` prints from it (the text each original is found by), the index a JSONL archive gets
(where it goes, when it is reused or rebuilt) and the errors that name the file and line at fault."""

from __future__ import annotations

import errno
import os

import orjson
import pytest

from compactctl import archive
from compactctl.errors import Exit

from .conftest import SAMPLES, cli, write_jsonl

SOURCE = SAMPLES / "long_session.jsonl"


def compact(tmp_path, arch: str) -> str:
    """Compact the long sample into `arch` (a JSONL or SQLite archive); returns the archive's path."""
    path = str(tmp_path / arch)
    r = cli("compact", str(SOURCE), "--context-window", "8000", "-q", "-o", str(tmp_path / f"{arch}.out.jsonl"), "--archive", path)
    assert r.returncode == 0, r.stderr
    return path


def original(index: int, ref: str, message: dict, **more) -> dict:
    """An archive record as `compact` writes one (a message that prune removed)."""
    return {
        "seq": 0,
        "source": "t.jsonl",
        "transcript": "t.jsonl",
        "index": index,
        "phase": "prune",
        "ref": ref,
        "message": message,
        **more,
    }


def call(name: str, arguments: str) -> dict:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": name, "arguments": arguments}}],
    }


def recall(ref: str, arch) -> str:
    r = cli("recall", ref, "--archive", str(arch))
    assert r.returncode == 0, r.stderr
    return r.stdout.decode()


def test_a_sqlite_archive_holds_the_records_a_jsonl_archive_holds(tmp_path):
    """`--archive x.sqlite` writes the same records as `--archive x.jsonl` (the map and end records too), into an
    SQLite file put in place whole; restore from either gives the transcript back byte for byte."""
    jsonl, sqlite = compact(tmp_path, "a.jsonl"), compact(tmp_path, "a.sqlite")
    with open(sqlite, "rb") as f:
        assert f.read(16) == b"SQLite format 3\x00"
    written = list(archive.records(jsonl))
    assert [r.get("type") for r in written].count("map") == 1 and written[-1]["type"] == "end"
    assert list(archive.records(sqlite)) == written
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".compactctl-")]
    for arch in (jsonl, sqlite):
        r = cli("restore", str(tmp_path / f"{os.path.basename(arch)}.out.jsonl"), "--archive", arch)
        assert r.returncode == 0 and r.stdout == SOURCE.read_bytes(), r.stderr


@pytest.mark.parametrize("kind", ["a.jsonl", "a.sqlite"])
def test_a_summarized_span_is_recalled_member_by_member(tmp_path, kind):
    """The reference of a summary gives back every archived original of the span it summarized, in order."""
    arch = compact(tmp_path, kind)
    records = [r for r in archive.records(arch) if r.get("message")]
    span = next(r for r in records if r.get("span"))
    start, end = span["span_start"], span["span_end"]
    members = sorted(r["index"] for r in records if r.get("span") == span["span"] or start <= r["index"] < end)
    assert len(members) > 5
    said = recall(span["span"], arch)
    assert [int(line.split(" #")[1].split()[0]) for line in said.splitlines() if line.startswith("--- [ref ")] == members


def test_recall_prints_the_text_an_original_is_found_by(tmp_path):
    """What `recall REF` prints (and `--search` finds): the message's text, its reasoning, then each call with its
    arguments as a person reads them: one `key: value` a line, strings unescaped, an argv joined by spaces, any
    other JSON value as JSON, and arguments that are no JSON object as written."""
    arch = write_jsonl(
        tmp_path / "a.jsonl",
        [
            original(3, "0000aaaa", {"role": "assistant", "content": "Done.", "reasoning_content": "the flaky test needs a seed"}),
            original(4, "0000bbbb", call("shell", orjson.dumps({"command": ["git", "status", "--short"]}).decode())),
            original(
                5, "0000cccc", call("terminal", orjson.dumps({"command": 'cd src\nmake "all"', "timeout": 30, "env": {"A": 1}}).decode())
            ),
            original(6, "0000dddd", call("run", '["ls", "-la"]')),
            original(7, "0000eeee", call("run", "42")),
            original(8, "0000ffff", call("run", "ls -la (not JSON)")),
            {"type": "end", "transcripts": 1},
        ],
    )
    assert recall("0000aaaa", arch) == "Done.\nthe flaky test needs a seed\n"
    assert recall("0000bbbb", arch) == "[call shell] command: git status --short\n"
    assert recall("0000cccc", arch) == '[call terminal] command: cd src\nmake "all"\ntimeout: 30\nenv: {"A":1}\n'
    assert recall("0000dddd", arch) == '[call run] ["ls", "-la"]\n'
    assert recall("0000eeee", arch) == "[call run] 42\n"
    assert recall("0000ffff", arch) == "[call run] ls -la (not JSON)\n"
    for word, ref in (("flaky", "0000aaaa"), ("make", "0000cccc"), ("status", "0000bbbb")):
        r = cli("recall", "--search", word, "--archive", str(arch))
        assert r.returncode == 0 and r.stdout.decode().startswith(f"[ref {ref}] t.jsonl #"), (word, r.stdout, r.stderr)


def small_archive(tmp_path, refs=("0000aaaa", "0000bbbb")):
    rows = [original(i, ref, {"role": "tool", "tool_call_id": "c1", "content": f"output {ref}"}) for i, ref in enumerate(refs)]
    return write_jsonl(tmp_path / "a.jsonl", [*rows, {"type": "end", "transcripts": 1}])


def test_recall_index_says_how_many_records_it_indexed_and_where(tmp_path):
    arch = small_archive(tmp_path)
    r = cli("recall", "--index", "--archive", str(arch))
    assert r.returncode == 0 and r.stderr == f"indexed 3 records into {tmp_path / 'a.sqlite'}\n".encode(), r.stderr
    assert recall("0000bbbb", arch) == "output 0000bbbb\n"


def test_an_unchanged_jsonl_archive_keeps_its_index_and_a_changed_one_is_indexed_again(tmp_path):
    arch = small_archive(tmp_path)
    assert recall("0000aaaa", arch) == "output 0000aaaa\n"
    built = os.stat(tmp_path / "a.sqlite").st_ino
    assert recall("0000bbbb", arch) == "output 0000bbbb\n"
    assert recall("0000aaaa", arch) == "output 0000aaaa\n"
    assert os.stat(tmp_path / "a.sqlite").st_ino == built  # reused, not built again
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "a.sqlite"]
    small_archive(tmp_path, refs=("0000cccc",))  # another run's archive written over it
    assert recall("0000cccc", arch) == "output 0000cccc\n"
    assert cli("recall", "0000aaaa", "--archive", str(arch)).returncode == Exit.NOT_FOUND
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "a.sqlite"]  # rebuilt in its place


@pytest.mark.parametrize(
    "lines",
    [
        [b'{"role": "user", "content": "hi"}'],  # a transcript given as the archive
        [orjson.dumps(original(0, "0000aaaa", {"role": "user", "content": "hi"})), b"[1, 2]"],
        [orjson.dumps(original(0, "0000aaaa", {"role": "user", "content": "hi"})), b'{"type": "map", "messages": 3}'],
    ],
)
def test_a_jsonl_that_is_no_archive_is_refused_naming_its_line(tmp_path, lines):
    arch = tmp_path / "a.jsonl"
    arch.write_bytes(b"\n".join(lines) + b"\n")
    r = cli("recall", "--search", "hi", "--archive", str(arch))
    assert r.returncode == Exit.DATA, r.stderr
    assert f"{arch}:{len(lines)}: not a compactctl archive record".encode() in r.stderr, r.stderr


@pytest.mark.parametrize(
    ("message", "what"),
    [({"content": "no role"}, "message has no role"), ({"role": "tool", "content": {"x": 1}}, "content must be a string")],
)
def test_a_damaged_archived_message_is_named_by_file_and_line(tmp_path, message, what):
    """A JSONL archive edited by hand (a message without a role): its index said `<archive>:0: message has no role`,
    naming neither the file nor the line."""
    arch = write_jsonl(tmp_path / "a.jsonl", [original(0, "0000aaaa", {"role": "user", "content": "hi"}), original(1, "0000bbbb", message)])
    for args in (("--search", "hi"), ("0000aaaa",), ("--index",)):
        r = cli("recall", *args, "--archive", str(arch))
        assert r.returncode == Exit.DATA, r.stderr
        assert f"{arch}:2: the archived message: {what}".encode() in r.stderr and b"<archive>" not in r.stderr, r.stderr


@pytest.mark.parametrize(
    ("field", "value", "what"),
    [
        ("ref", {"x": 1}, "'ref' is a JSON object"),
        ("seq", [1], "'seq' is a JSON array"),
    ],
)
def test_an_archive_record_with_a_field_sqlite_cannot_hold_is_named_by_file_and_line(tmp_path, field, value, what):
    """A field a run writes as a string or a number, edited into an object (`"ref": {...}`): indexing the archive
    ended in a traceback (sqlite3.ProgrammingError: Error binding parameter 5)."""
    rows = [
        original(0, "0000aaaa", {"role": "user", "content": "hi"}),
        {**original(1, "0000bbbb", {"role": "user", "content": "hi"}), field: value},
    ]
    arch = write_jsonl(tmp_path / "a.jsonl", rows)
    r = cli("recall", "--search", "hi", "--archive", str(arch))
    assert r.returncode == Exit.DATA, r.stderr
    assert r.stderr == f"compactctl: error: {arch}:2: not a compactctl archive record: its {what}\n".encode(), r.stderr


def test_a_missing_sqlite_archive_is_said_to_be_missing(tmp_path):
    for name in ("gone.sqlite", "gone.jsonl"):
        r = cli("recall", "0000aaaa", "--archive", str(tmp_path / name))
        assert r.returncode == Exit.IO and r.stderr == f"compactctl: error: {tmp_path / name}: no such archive\n".encode(), r.stderr


def test_a_sqlite_archive_in_a_missing_folder_is_an_io_error_naming_it(tmp_path):
    path = tmp_path / "nope" / "a.sqlite"
    r = cli("compact", str(SOURCE), "--context-window", "8000", "-q", "-o", str(tmp_path / "c.jsonl"), "--archive", str(path))
    assert r.returncode == Exit.IO and f"{path}: No such file or directory\n".encode() in r.stderr, r.stderr


def no_hard_links(monkeypatch):
    def link(src, dst, **kw):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", link)


def test_on_a_filesystem_without_hard_links_the_index_is_still_put_in_place(tmp_path, monkeypatch):
    arch = small_archive(tmp_path)
    no_hard_links(monkeypatch)
    assert recall("0000aaaa", arch) == "output 0000aaaa\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "a.sqlite"]
    small_archive(tmp_path, refs=("0000cccc",))
    assert recall("0000cccc", arch) == "output 0000cccc\n"  # a stale index is replaced there too


def test_on_a_filesystem_without_hard_links_a_file_that_appears_meanwhile_is_not_written_over(tmp_path, monkeypatch):
    arch = small_archive(tmp_path)
    no_hard_links(monkeypatch)
    insert = archive._insert

    def racing(db, rec, raw, *rest):  # another run writes its --archive a.sqlite while the index is built
        if not (tmp_path / "a.sqlite").exists():
            (tmp_path / "a.sqlite").write_bytes(b"another run's archive")
        insert(db, rec, raw, *rest)

    monkeypatch.setattr(archive, "_insert", racing)
    r = cli("recall", "0000aaaa", "--archive", str(arch))
    assert r.returncode == Exit.IO and b"left untouched" in r.stderr, r.stderr
    assert (tmp_path / "a.sqlite").read_bytes() == b"another run's archive"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "a.sqlite"]
