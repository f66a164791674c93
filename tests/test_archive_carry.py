"""An archive written over by a later run keeps the originals the new output still refers to (carry.Carry).

Compacting an already compacted session keeps some of its references: the new summary's action lines and the
digests it archives again hold `[ref ...]` marks whose originals only the earlier archive has. A hook that
compacts the same session with the same --archive path replaced that archive, and those references pointed at
nothing (2 of the 4 in the sample's second compaction)."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from compactctl.archive import records
from compactctl.search import Index, UnknownRef

from .conftest import SAMPLES, cli, tool_session, write_jsonl

REF = re.compile(r"\[ref ([0-9a-f]{8})\]")
SAMPLE = SAMPLES / "long_session.jsonl"


def _compact(src: Path, out: Path, archive: Path, window: str, *extra: str) -> None:
    r = cli("compact", str(src), "--context-window", window, "-q", "-o", str(out), "--archive", str(archive), *extra)
    assert r.returncode == 0 and b"could not be read" not in r.stderr, r.stderr  # nothing of the archive written over lost


def _refs(*paths: Path) -> set[str]:
    return {r for p in paths for r in REF.findall(p.read_text(encoding="utf-8"))}


def _unresolved(refs: set[str], archive: Path) -> list[str]:
    missing = []
    with Index.open(str(archive)) as ix:
        for r in sorted(refs):
            try:
                ix.recall(r)
            except UnknownRef:
                missing.append(r)
    return missing


@pytest.mark.parametrize("name", ["arch.jsonl", "arch.sqlite"])
def test_compacting_a_compacted_session_over_its_archive_loses_no_reference(tmp_path, name):
    arch, a1, a2 = tmp_path / name, tmp_path / "a1.jsonl", tmp_path / "a2.jsonl"
    _compact(SAMPLE, a1, arch, "8000")
    first = {r for r in _refs(a1)}
    _compact(a1, a2, arch, "3000")
    kept = _refs(a2)
    assert kept & first, "the second compaction keeps references of the first: the case this covers"
    assert _unresolved(kept, arch) == []
    if name.endswith(".jsonl"):  # and every reference the archive's own records hold
        assert _unresolved(_refs(arch), arch) == []
    end = list(records(str(arch)))[-1]
    assert end["type"] == "end" and end["carried"] > 0
    # restore reads this run's records only: the second output gives back the first
    back = cli("restore", str(a2), "--archive", str(arch))
    assert back.returncode == 0 and back.stdout == a1.read_bytes(), back.stderr


def test_a_span_reference_carried_gives_back_its_members(tmp_path):
    arch, a1, a2 = tmp_path / "arch.jsonl", tmp_path / "a1.jsonl", tmp_path / "a2.jsonl"
    _compact(SAMPLE, a1, arch, "8000")
    with Index.open(str(arch)) as ix:
        spans = {r: [h.text for h in ix.recall(r)] for r in _refs(a1) if any(h.span for h in ix.recall(r))}
    assert spans, "the first compaction summarized a span"
    _compact(a1, a2, arch, "3000")
    with Index.open(str(arch)) as ix:
        for r, texts in spans.items():
            hits = ix.recall(r)
            assert [h.text for h in hits] == texts and all(h.span == r for h in hits)


def test_a_rerun_writes_the_same_archive_and_a_fresh_input_carries_nothing(tmp_path):
    arch, a1, a2 = tmp_path / "arch.jsonl", tmp_path / "a1.jsonl", tmp_path / "a2.jsonl"
    _compact(SAMPLE, a1, arch, "8000")
    alone = tmp_path / "alone.jsonl"
    _compact(SAMPLE, tmp_path / "x.jsonl", alone, "8000")
    assert arch.read_bytes() == alone.read_bytes()
    _compact(SAMPLE, a1, arch, "8000")  # the same run over its own archive: nothing to carry, the same bytes
    assert arch.read_bytes() == alone.read_bytes()
    _compact(a1, a2, arch, "3000")
    second = arch.read_bytes()
    _compact(a1, a2, arch, "3000")  # carried records are found again in the carried copies: the same bytes, no growth
    assert arch.read_bytes() == second


def test_an_unreadable_archive_written_over_is_said(tmp_path):
    arch, a1 = tmp_path / "arch.jsonl", tmp_path / "a1.jsonl"
    _compact(SAMPLE, a1, arch, "8000")
    arch.write_bytes(b"not an archive\n")
    r = cli("compact", str(a1), "--context-window", "3000", "-o", str(tmp_path / "a2.jsonl"), "--archive", str(arch))
    assert r.returncode == 0, r.stderr
    assert (
        b"the archive written over could not be read" in r.stderr
        and b"references the output keeps from it and the originals of other transcripts it held are lost" in r.stderr
    )


@pytest.mark.parametrize("to_dir", [False, True])
def test_resume_carries_what_the_parts_written_before_the_kill_refer_to(tmp_path, to_dir):
    """After a kill, the references in the output and archive parts written before it count too (-o FILE: one
    part; -o DIR/: the finished files' parts and the one the kill cut)."""
    from .test_scale import SLOW, _killed_run

    def session(k: int) -> list[dict]:  # outputs of their own: references are content hashes, shared by equal outputs
        return [{**m, "content": f"session {k}: {m['content']}"} if m["role"] == "tool" else m for m in tool_session(8 + k % 4, 1500)]

    src = tmp_path / "src"
    src.mkdir()
    for f in range(4):
        write_jsonl(src / f"d{f}.jsonl", [{"messages": session(4 * f + k), "id": k} for k in range(4)])
    arch, once = tmp_path / "first.jsonl", tmp_path / "once"
    r = cli("compact", str(src), "--context-window", "3000", "--summary-min", "300", "-q", "-o", f"{once}/", "--archive", str(arch))
    assert r.returncode == 0, r.stderr

    def args(base: str) -> list[str]:
        out = f"{tmp_path / base}.out" + ("/" if to_dir else "")
        return [str(once), "--context-window", "1800", "--summary-min", "200", "-q", "-o", out, "--archive", f"{tmp_path / base}.archive"]

    for base in ("ref", "k"):
        (tmp_path / f"{base}.archive").write_bytes(arch.read_bytes())
    assert cli("compact", *args("ref")).returncode == 0
    _killed_run(args("k"), tmp_path / ("k.out/.compactctl-journal" if to_dir else "k.out.compactctl-journal"), 6, SLOW)
    r = cli("compact", *args("k"), "--resume")
    assert r.returncode == 0, r.stderr
    outs = sorted((tmp_path / "ref.out").glob("*.jsonl")) if to_dir else [tmp_path / "ref.out"]
    for ref in outs:
        assert (tmp_path / "k.out" / ref.name if to_dir else tmp_path / "k.out").read_bytes() == ref.read_bytes()
    assert (tmp_path / "k.archive").read_bytes() == (tmp_path / "ref.archive").read_bytes()
    carried = [orjson.loads(x) for x in (tmp_path / "ref.archive").read_bytes().splitlines()[:-1]]
    assert len({c["transcript"] for c in carried if c.get("carried")}) == 16  # each transcript's own: those before the kill too
    assert _unresolved(_refs(*outs), tmp_path / "ref.archive") == []


KILL_AT_END = """
import os, signal, sys
from compactctl import journal
append = journal.Journal.append
def killed_at_end(self, *entries):
    if any(e.get("t") == "end" for e in entries):
        os.kill(os.getpid(), signal.SIGKILL)  # after the last checkpoint, before the journal says the run ended
    append(self, *entries)
journal.Journal.append = killed_at_end
sys.argv = ["compactctl", *sys.argv[1:]]
from compactctl.entry import main
main()
"""


@pytest.mark.parametrize("over", [False, True])
def test_a_kill_after_the_last_checkpoint_leaves_one_end_record(tmp_path, over):
    """Killed between the checkpoint that holds the archive's end record and the journal's end: --resume wrote a
    second end record (restore then failed on it), with an archive written over (`over`) and without."""
    import subprocess
    import sys

    out, arch = tmp_path / "o.jsonl", tmp_path / "a.jsonl"
    first = tmp_path / "first.jsonl"
    _compact(SAMPLE, first, tmp_path / "first-archive.jsonl", "8000")
    if over:
        arch.write_bytes((tmp_path / "first-archive.jsonl").read_bytes())
    args = [str(first), "--context-window", "3000", "-q", "-o", str(out), "--archive", str(arch)]
    r = subprocess.run([sys.executable, "-c", KILL_AT_END, "compact", *args], capture_output=True)
    assert r.returncode == -9 and not out.exists() and (tmp_path / "o.jsonl.compactctl-journal").exists()
    r = cli("compact", *args, "--resume")
    assert r.returncode == 0, r.stderr
    ends = [rec for rec in records(str(arch)) if rec.get("type") == "end"]
    assert len(ends) == 1 and bool(ends[0].get("carried")) == over
    back = cli("restore", str(out), "--archive", str(arch))
    assert back.returncode == 0 and back.stdout == first.read_bytes(), back.stderr


def test_a_damaged_index_of_an_intact_archive_or_a_damaged_record_is_no_traceback(tmp_path):
    """The earlier JSONL's own index, damaged, is passed over for the JSONL; a record SQLite cannot hold (an
    integer over 2^63) is said, not a traceback."""
    import sqlite3

    arch, a1 = tmp_path / "arch.jsonl", tmp_path / "a1.jsonl"
    _compact(SAMPLE, a1, arch, "8000")
    first = arch.read_bytes()
    assert cli("recall", "--index", "--archive", str(arch)).returncode == 0
    db = sqlite3.connect(tmp_path / "arch.sqlite")
    db.execute("DROP TABLE spans")
    db.commit()
    db.close()
    r = cli("compact", str(a1), "--context-window", "3000", "-q", "-o", str(tmp_path / "a2.jsonl"), "--archive", str(arch))
    assert r.returncode == 0 and b"could not be read" not in r.stderr, r.stderr
    assert list(records(str(arch)))[-1]["carried"] > 0
    arch.write_bytes(first + b'{"seq":9223372036854775808,"message":{"role":"user","content":"x"}}\n')
    r = cli("compact", str(a1), "--context-window", "3000", "-q", "-o", str(tmp_path / "a3.jsonl"), "--archive", str(arch))
    assert r.returncode == 0 and b"the archive written over could not be read" in r.stderr and b"Traceback" not in r.stderr


KILL_IN_LOOKUP = """
import os, signal, sys
from compactctl import search
def killed(self, ref):
    os.kill(os.getpid(), signal.SIGKILL)  # while the earlier archive's temporary index is open
search.Index.originals = killed
sys.argv = ["compactctl", *sys.argv[1:]]
from compactctl.entry import main
main()
"""


def test_a_kill_during_the_lookup_leaves_nothing_in_the_temporary_directory(tmp_path):
    """The earlier JSONL archive without a fresh index is looked up through a temporary index of its references:
    a kill while it was open left a compactctl-carry-* directory behind. SQLite's private temporary database
    unlinks its file as soon as it opens it."""
    import os
    import subprocess
    import sys

    arch, a1, tmp = tmp_path / "arch.jsonl", tmp_path / "a1.jsonl", tmp_path / "tmp"
    _compact(SAMPLE, a1, arch, "8000")
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "SQLITE_TMPDIR": str(tmp)}
    args = [str(a1), "--context-window", "3000", "-q", "-o", str(tmp_path / "a2.jsonl"), "--archive", str(arch)]
    r = subprocess.run([sys.executable, "-c", KILL_IN_LOOKUP, "compact", *args], capture_output=True, env=env)
    assert r.returncode == -9, r.stderr
    assert list(tmp.iterdir()) == []


def test_a_text_that_is_no_reference_is_told_what_one_is():
    """The message said "8 hex digits" while 4 to 16 are taken (a shortened or a longer reference)."""
    from compactctl.search import normalized_ref

    assert normalized_ref("[ref 3F9A]") == "3f9a" and normalized_ref("3f9a2c1b00ff00ff") == "3f9a2c1b00ff00ff"
    with pytest.raises(UnknownRef, match=r"4 to 16 hex digits: a mark's 8, as in \[ref 3f9a2c1b\]"):
        normalized_ref("3f9")


def _originals(archive: Path) -> set[str]:
    """Every original an archive holds, carried or not (the same content archived by two transcripts once)."""
    return {orjson.dumps(r["message"]).decode() for r in records(str(archive)) if isinstance(r.get("message"), dict)}


@pytest.mark.parametrize("name", ["hook.jsonl", "hook.sqlite"])
def test_one_archive_path_for_several_sessions_keeps_every_sessions_originals(tmp_path, name):
    """From a review: a hook that compacts every session with one --archive path replaced the first session's
    originals with the second's (146 of 147 records gone, silently): the first output's references pointed at
    nothing and `recall` exited 8. The originals of transcripts the new run did not write are carried, whole."""
    hook, x, y = tmp_path / name, tmp_path / "x.jsonl", tmp_path / "y.jsonl"
    _compact(SAMPLE, x, hook, "8000")
    first = _originals(hook)
    _compact(SAMPLES / "anthropic_session.jsonl", y, hook, "8000")
    assert first <= _originals(hook) and len(_originals(hook)) > len(first)
    assert _unresolved(_refs(x, y), hook) == []
    back = cli("restore", str(y), "--archive", str(hook))  # the new run's own records still restore its output
    assert back.returncode == 0 and back.stdout == (SAMPLES / "anthropic_session.jsonl").read_bytes(), back.stderr
    again = hook.read_bytes()  # and a rerun of the second carries the first's again, no more
    _compact(SAMPLES / "anthropic_session.jsonl", y, hook, "8000")
    assert hook.read_bytes() == again


def test_a_compaction_without_references_over_the_archive_keeps_the_earlier_originals(tmp_path):
    """From a review: with --no-refs nothing refers to the earlier archive, so a second compaction over it (a session
    compacted, continued and compacted again) kept 9 of 150 originals; `recall --search` found none of the rest."""
    arch, a1, a2 = tmp_path / "arch.jsonl", tmp_path / "a1.jsonl", tmp_path / "a2.jsonl"
    _compact(SAMPLE, a1, arch, "8000", "--no-refs")
    first = _originals(arch)
    _compact(a1, a2, arch, "3000", "--no-refs")
    assert first <= _originals(arch)
    chain = cli("restore", str(a2), "--archive", str(arch))
    assert chain.returncode == 0 and chain.stdout == a1.read_bytes(), chain.stderr


def test_sessions_piped_one_after_another_into_one_archive_keep_each_others_originals(tmp_path):
    """From the review of that change: a piped session's transcript is `<stdin>` every time, so telling "this run's
    transcripts" by name dropped the first session's originals (141 of 144) when the second was piped in. What this
    run archived itself is told by content."""
    arch = tmp_path / "arch.jsonl"
    for sample in ("long_session.jsonl", "parallel_calls.jsonl"):
        r = cli("compact", "-", "--context-window", "8000", "-q", "--archive", str(arch), input=(SAMPLES / sample).read_bytes())
        assert r.returncode == 0, r.stderr
        if sample == "long_session.jsonl":
            first = _originals(arch)
    assert first <= _originals(arch)


@pytest.mark.parametrize("rows", ["map", "all"])
def test_a_damaged_row_in_the_index_of_an_intact_archive_keeps_every_original(tmp_path, rows):
    """A row of the earlier JSONL's own index whose record is no JSON (a damaged index; the JSONL intact): a
    traceback (exit 1, nothing written), whether a reference looked up read it (`all`) or only the copy of the other
    originals did (`map`: no reference names it). The JSONL itself is read, and every original is kept."""
    import sqlite3

    arch, a1, a2 = tmp_path / "arch.jsonl", tmp_path / "a1.jsonl", tmp_path / "a2.jsonl"
    _compact(SAMPLE, a1, arch, "8000")
    first = _originals(arch)
    assert cli("recall", "--index", "--archive", str(arch)).returncode == 0
    db = sqlite3.connect(tmp_path / "arch.sqlite")
    where = "transcript IS NOT NULL" if rows == "all" else "transcript IS NOT NULL AND idx IS NULL"  # a map has no index
    assert db.execute(f"UPDATE records SET raw = '{{' WHERE {where}").rowcount >= 1
    db.commit()
    db.close()
    r = cli("compact", str(a1), "--context-window", "3000", "-q", "-o", str(a2), "--archive", str(arch))
    assert r.returncode == 0 and b"could not be read" not in r.stderr and b"Traceback" not in r.stderr, r.stderr
    assert first <= _originals(arch) and _unresolved(_refs(a2), arch) == []


def test_carried_originals_are_numbered_below_the_runs_own_one_number_a_transcript(tmp_path):
    """Carried records take `seq` -1, -2, ...: never a number of this run's transcripts (0 on), and the originals
    of one earlier transcript (another session's, carried whole) share one."""
    hook, x, y = tmp_path / "hook.jsonl", tmp_path / "x.jsonl", tmp_path / "y.jsonl"
    _compact(SAMPLE, x, hook, "8000")
    _compact(SAMPLES / "anthropic_session.jsonl", y, hook, "8000")
    recs = list(records(str(hook)))[:-1]
    carried = [r for r in recs if r.get("carried")]
    assert carried and {r["seq"] for r in carried} == {-1}
    assert {r["seq"] for r in recs if not r.get("carried")} == {0}


def test_a_damaged_row_of_an_sqlite_archive_written_over_is_said_after_what_was_carried(tmp_path):
    """An SQLite archive (its own records) with a row that is no JSON, past the references carried: said, not a
    traceback; what the output refers to is carried and the warning says only the rest is lost."""
    import sqlite3

    arch, a1, a2 = tmp_path / "arch.sqlite", tmp_path / "a1.jsonl", tmp_path / "a2.jsonl"
    _compact(SAMPLE, a1, arch, "8000")
    db = sqlite3.connect(arch)
    assert db.execute("UPDATE records SET raw = '{' WHERE transcript IS NOT NULL AND idx IS NULL").rowcount == 1  # the map
    db.commit()
    db.close()
    r = cli("compact", str(a1), "--context-window", "3000", "-q", "-o", str(a2), "--archive", str(arch))
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr
    assert b"the archive written over could not be read" in r.stderr and b"the rest of what it held are lost" in r.stderr, r.stderr
    assert _unresolved(_refs(a2), arch) == []


@pytest.mark.parametrize("name", ["arch.jsonl", "arch.sqlite"])
def test_what_a_second_compaction_carries_is_numbered_from_minus_one_and_never_copied_twice_alike(tmp_path, name):
    """Compacted again over its archive: each earlier original is carried once as its own and once a span that holds
    it (found by either reference), under `seq` -1, -2, ... with no gap and none of this run's numbers."""
    arch, a1, a2 = tmp_path / name, tmp_path / "a1.jsonl", tmp_path / "a2.jsonl"
    _compact(SAMPLE, a1, arch, "8000")
    _compact(a1, a2, arch, "3000")
    recs = [r for r in records(str(arch)) if isinstance(r.get("message"), dict)]
    carried = [r for r in recs if r.get("carried")]
    assert carried and all(r["seq"] >= 0 for r in recs if not r.get("carried"))
    keys = [(r["transcript"], r["index"], r["phase"], r.get("span")) for r in carried]
    assert len(keys) == len(set(keys))
    assert sorted({r["seq"] for r in carried}, reverse=True) == list(range(-1, -1 - len({r["seq"] for r in carried}), -1))
