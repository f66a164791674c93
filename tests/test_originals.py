"""restore's code (compactctl/originals.py), case by case: what the mutation run of the forty-fourth session found
untested. The end-to-end restores (every sample, -o DIR/, chains) are in test_restore.py."""

from __future__ import annotations

import orjson
import pytest

from compactctl import api
from compactctl.errors import DataError

from .conftest import SAMPLES, cli, read_jsonl, tool_session, write_jsonl


def _compacted(tmp_path, src, *extra: str):
    out, arch = tmp_path / "c.jsonl", tmp_path / "a.jsonl"
    r = cli("compact", str(src), "-o", str(out), "--archive", str(arch), "-q", *extra)
    assert r.returncode == 0, r.stderr
    return out, arch


def _said(messages) -> list:
    return [(m.role, m.text(), m.tool_call_id, [(c.id, c.name, c.arguments) for c in m.tool_calls]) for m in messages]


def test_kept_messages_read_back_in_another_order_go_back_to_their_places(tmp_path):
    """A writer may order a transcript's lines as its format does, so a kept message read back at another place
    than the map's is found by what it says: the library restore of a compacted transcript whose kept messages
    came back in another order gives the originals in their order, not the messages found at the map's places."""
    src = SAMPLES / "long_session.jsonl"
    out, arch = _compacted(tmp_path, src, "--context-window", "8000")
    [t] = api.read([str(out)])
    entries = read_jsonl(arch.read_bytes())[:-1]
    mapping = next(e for e in entries if e.get("type") == "map")
    places = [j for _, j, _ in mapping["kept"]]
    first, last = places[1], places[-1]  # two kept messages that say different things
    assert t.messages[first].text() != t.messages[last].text()
    moved = list(t.messages)
    moved[first], moved[last] = moved[last], moved[first]
    back = api.restore(t.evolve(messages=moved), entries)
    [orig] = api.read([str(src)])
    assert _said(back.messages) == _said(orig.messages)
    # a kept message missing from what is given (a place past its end) is an error, not a silent gap
    short = t.evolve(messages=[m for j, m in enumerate(t.messages) if j != last])
    with pytest.raises(DataError, match="archive does not cover messages"):
        api.restore(short, entries)


def test_a_rewritten_message_that_reads_as_a_later_kept_one_keeps_its_own_original(tmp_path):
    """Repair writes `"tool_calls": []` anew (archived); written, it says what a later kept message says. Each
    original goes back to its own place: the kept one is the message at its place, not the first that reads alike."""
    rows = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello", "tool_calls": [], "tag": "rewritten"},
        {"role": "user", "content": "bye"},
        {"role": "assistant", "content": "hello", "tag": "kept"},
    ]
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    out, arch = _compacted(tmp_path, src, "--context-window", "64000")
    back = cli("restore", str(out), "--archive", str(arch))
    assert back.returncode == 0, back.stderr
    assert back.stdout == src.read_bytes()


def test_the_wrong_file_given_as_the_archive_is_told_so(tmp_path):
    """The transcript itself, or any JSON lines that are not archive records, given as --archive: exit 3, saying it
    is not an archive (not "truncated"), and JSON lines that are not objects are no traceback."""
    src = SAMPLES / "long_session.jsonl"
    out, _ = _compacted(tmp_path, src, "--context-window", "8000")
    for given in (src, write_jsonl(tmp_path / "lists.jsonl", [[1, 2], [3]])):
        r = cli("restore", str(out), "--archive", str(given))
        assert r.returncode == 3 and b"not a compactctl archive record" in r.stderr and b"Traceback" not in r.stderr, r.stderr
    end_only = write_jsonl(tmp_path / "foreign.jsonl", [{"role": "user", "content": "hi"}, {"type": "end"}])
    r = cli("restore", str(out), "--archive", str(end_only))
    assert r.returncode == 3 and f"{end_only}:1: not a compactctl archive record".encode() in r.stderr, r.stderr


def _parallel_session(tmp_path, big_from: int = 0, long: bool = False):
    """Turns of two parallel calls whose results came back in the other order (b's before a's, as OpenAI chat and
    Claude Code log them as they finish); results of turns from `big_from` on are big (pruned, archived). `long`:
    arguments longer than the archive keeps of a result's call, written as Python's json.dumps writes them."""
    import json

    def call(cid: str) -> dict:
        args = json.dumps({"path": f"{cid}.py", "note": "n " * 800}) if long else orjson.dumps({"path": f"{cid}.py"}).decode()
        return {"id": cid, "type": "function", "function": {"name": "read", "arguments": args}}

    rows = [{"role": "system", "content": "sys"}, {"role": "user", "content": "read every file " + "x " * 40}]
    for i in range(20):
        a, b = f"a{i}", f"b{i}"
        rows.append({"role": "assistant", "content": None, "tool_calls": [call(a), call(b)]})
        for cid in (b, a):
            rows.append(
                {"role": "tool", "tool_call_id": cid, "content": f"text of {cid}.py " + ("word " * 200 if big_from <= i < 16 else "")}
            )
    rows.append({"role": "user", "content": "thanks, now finish"})
    return write_jsonl(tmp_path / "s.jsonl", rows)


@pytest.mark.parametrize(("big_from", "long"), [(0, False), (8, False), (0, True)])
def test_parallel_results_restored_as_sharegpt_answer_their_own_calls(tmp_path, big_from, long):
    """ShareGPT pairs a result with a call by position, so its writer puts each turn's results in call order. Restored
    from a `--to sharegpt` compaction, the pruned results (archived with the input's call ids) followed calls read back
    from the output (ids numbered by position): nothing tied them, and they were written in the input's order, b's
    result answering a's call (exit 0). They answer their own calls, as `convert --to sharegpt` writes them."""
    src = _parallel_session(tmp_path, big_from, long)
    out, arch = _compacted(tmp_path, src, "--to", "sharegpt", "--context-window", "30000" if long else "6000")
    back = cli("restore", str(out), "--archive", str(arch))
    assert back.returncode == 0, back.stderr
    assert back.stdout == cli("convert", str(src), "--to", "sharegpt", "-q").stdout
    (tmp_path / "back.jsonl").write_bytes(back.stdout)
    [t] = api.read([str(tmp_path / "back.jsonl")])
    calls = {c.id: c for m in t.messages for c in m.tool_calls}
    results = [m for m in t.messages if m.role == "tool"]
    assert len(results) == 40 and all(orjson.loads(calls[m.tool_call_id].arguments)["path"] in m.text() for m in results)


def test_kept_results_of_an_archived_call_restored_as_sharegpt_answer_their_own_calls(tmp_path):
    """The mirror of the test above (helper 143's review): the call message archived (repair took off its blank text
    part), its results kept and logged out of call order. Read back from the ShareGPT output they carry ids numbered
    by their call's position, which the archived call's ids never match: they stayed in the input's order, glob's
    result answering search (exit 0). Now each answers the call at its position, as `convert --to sharegpt` writes."""
    calls = [
        {"id": "call_a", "type": "function", "function": {"name": "search", "arguments": '{"q": "x"}'}},
        {"id": "call_b", "type": "function", "function": {"name": "glob", "arguments": '{"p": "*.js"}'}},
    ]
    src = write_jsonl(
        tmp_path / "p.jsonl",
        [
            {"role": "user", "content": "look at both"},
            {"role": "assistant", "content": [{"type": "text", "text": "\n\n"}], "tool_calls": calls},
            {"role": "tool", "tool_call_id": "call_b", "content": "app.js"},
            {"role": "tool", "tool_call_id": "call_a", "content": "results for x"},
            {"role": "assistant", "content": "done"},
        ],
    )
    out, arch = _compacted(tmp_path, src, "--to", "sharegpt")
    back = cli("restore", str(out), "--archive", str(arch))
    assert back.returncode == 0, back.stderr
    assert back.stdout == cli("convert", str(src), "--to", "sharegpt", "-q").stdout
    assert back.stdout.index(b"results for x") < back.stdout.index(b"app.js")


def test_a_damaged_original_in_the_archive_is_named_by_its_archive(tmp_path):
    """An archived original that is no message (hand-edited, damaged) was said as "<archive>:0: message has no role":
    neither the archive file nor the message. Exit 3, naming both, nothing written."""
    src = SAMPLES / "long_session.jsonl"
    out, arch = _compacted(tmp_path, src, "--context-window", "8000")
    rows = read_jsonl(arch.read_bytes())
    first = next(r for r in rows if isinstance(r.get("message"), dict))
    del first["message"]["role"]
    write_jsonl(arch, rows)
    back = tmp_path / "back.jsonl"
    r = cli("restore", str(out), "--archive", str(arch), "-o", str(back))
    said = f"{arch}: {out} (transcript 1): the archived original of message {first['index']}: message has no role"
    assert r.returncode == 3 and said.encode() in r.stderr and not back.exists(), r.stderr


@pytest.mark.parametrize("sample", ["claude_code_session.jsonl", "long_session.jsonl"])
def test_an_archive_from_before_the_written_print_still_restores(tmp_path, sample):
    """Archives written before the map held the print of what its run wrote (`written`) are taken as they are."""
    src = SAMPLES / sample
    out, arch = _compacted(tmp_path, src, "--context-window", "8000")
    rows = read_jsonl(arch.read_bytes())
    for r in rows:
        if r.get("type") == "map":
            assert r.pop("written")
    write_jsonl(arch, rows)
    back = cli("restore", str(out), "--archive", str(arch))
    assert back.returncode == 0 and back.stdout == src.read_bytes(), back.stderr


def test_lines_added_in_another_format_are_counted_in_the_refusal(tmp_path):
    """The refusal of lines added to a line log written in another format says which transcript, and how many lines."""
    src = SAMPLES / "claude_code_session.jsonl"
    out, arch = _compacted(tmp_path, src, "--context-window", "8000", "--to", "openai")
    out.write_bytes(out.read_bytes() + b'{"role":"user","content":"go on"}\n{"role":"assistant","content":"ok"}\n')
    r = cli("restore", str(out), "--archive", str(arch))
    assert r.returncode == 3 and b"(transcript 1): what was added after the run wrote it as openai (2 lines) cannot" in r.stderr, r.stderr


@pytest.mark.parametrize("n", [3, 4])
def test_a_file_that_fits_none_of_the_inputs_named_like_it_lists_them(tmp_path, n):
    """A file named like several -o DIR/ outputs and fitting none of their records: exit 3, naming up to three of the
    inputs, and "..." only when there are more."""
    for k in range(n):
        (tmp_path / "in" / f"p{k}").mkdir(parents=True)
        write_jsonl(tmp_path / "in" / f"p{k}" / "s.jsonl", [*tool_session(8, 1500), {"role": "user", "content": f"ask {k}"}])
    a = tmp_path / "a.jsonl"
    r = cli("compact", str(tmp_path / "in") + "/", "-o", str(tmp_path / "out") + "/", "--archive", str(a), "--context-window", "4000", "-q")
    assert r.returncode == 0, r.stderr
    (tmp_path / "moved").mkdir()
    moved = write_jsonl(tmp_path / "moved" / "s.jsonl", [{"role": "user", "content": "another"}, {"role": "assistant", "content": "ok"}])
    r = cli("restore", str(moved), "--archive", str(a))
    assert r.returncode == 3 and f"{n} inputs of {a} are named like this file (".encode() in r.stderr, r.stderr
    assert r.stderr.count(b"/in/p") == 3 and (b"s.jsonl ...)" in r.stderr) == (n > 3), r.stderr


def _dir_run(tmp_path):
    """-o DIR/ over other.jsonl and sub/t.json (its output sub/t.jsonl: named otherwise than its input)."""
    rows = read_jsonl((SAMPLES / "long_session.jsonl").read_bytes())
    (tmp_path / "in" / "sub").mkdir(parents=True)
    write_jsonl(tmp_path / "in" / "other.jsonl", rows)
    (tmp_path / "in" / "sub" / "t.json").write_bytes(orjson.dumps([{"messages": rows[:-1]}]))
    a = tmp_path / "a.jsonl"
    r = cli("compact", str(tmp_path / "in") + "/", "-o", str(tmp_path / "out") + "/", "--archive", str(a), "--context-window", "8000", "-q")
    assert r.returncode == 0, r.stderr
    return a


def test_a_moved_output_is_found_by_its_output_name_and_an_archive_without_outputs_by_its_input(tmp_path):
    """A moved copy of out/sub/t.jsonl (input sub/t.json) is found by the name of the output it is, not of its input;
    an archive from before the end record named the outputs finds a file by its input's name."""
    a = _dir_run(tmp_path)
    (tmp_path / "moved").mkdir()
    moved = tmp_path / "moved" / "t.jsonl"
    moved.write_bytes((tmp_path / "out" / "sub" / "t.jsonl").read_bytes())
    back = cli("restore", str(moved), "--archive", str(a))
    assert back.returncode == 0 and orjson.loads(back.stdout) == orjson.loads((tmp_path / "in" / "sub" / "t.json").read_bytes())[0], (
        back.stderr
    )
    rows = read_jsonl(a.read_bytes())
    assert rows[-1].pop("outputs")
    write_jsonl(a, rows)
    back = cli("restore", str(tmp_path / "out" / "other.jsonl"), "--archive", str(a))
    assert back.returncode == 0 and back.stdout == (tmp_path / "in" / "other.jsonl").read_bytes(), back.stderr


def test_a_transcript_written_unchanged_then_continued_restores_with_what_was_added(tmp_path):
    """A transcript a run wrote as it came (its `unchanged` record) that went on since: what was added stays, after
    it; an `unchanged` record from before it said how many messages it covered is taken as it is."""
    a1, _ = _compacted(tmp_path, SAMPLES / "long_session.jsonl", "--context-window", "8000")
    b1, arch = tmp_path / "b1.jsonl", tmp_path / "b.jsonl"
    r = cli("compact", str(a1), "--context-window", "200000", "-q", "-o", str(b1), "--archive", str(arch))
    assert r.returncode == 0 and b1.read_bytes() == a1.read_bytes(), r.stderr
    rows = read_jsonl(arch.read_bytes())
    assert rows[0]["type"] == "unchanged"
    added = b'{"role":"assistant","content":"Tests pass."}\n{"role":"user","content":"Now the changelog."}\n'
    live = tmp_path / "live.jsonl"
    live.write_bytes(b1.read_bytes() + added)
    back = cli("restore", str(live), "--archive", str(arch))
    assert back.returncode == 0 and back.stdout == live.read_bytes(), back.stderr
    del rows[0]["messages"]
    write_jsonl(arch, rows)
    back = cli("restore", str(b1), "--archive", str(arch))
    assert back.returncode == 0 and back.stdout == b1.read_bytes(), back.stderr


def test_parallel_results_of_calls_alike_restored_as_sharegpt_answer_their_own_calls(tmp_path):
    """The same: a turn whose calls repeat one (read x twice) or share their arguments under another name (grep x),
    arguments with a non-ASCII character (escaped by json.dumps, not once read back)."""
    import json

    def call(cid: str, name: str, path: str) -> dict:
        return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps({"path": path, "note": "café"})}}

    rows: list[dict] = [{"role": "user", "content": "look at the files " + "x " * 40}]
    for i in range(16):
        calls = [call(f"r{i}", "read", f"x{i}.py"), call(f"g{i}", "grep", f"x{i}.py"), call(f"again{i}", "read", f"x{i}.py")]
        rows.append({"role": "assistant", "content": None, "tool_calls": calls})
        for cid in (f"g{i}", f"r{i}", f"again{i}"):
            rows.append({"role": "tool", "tool_call_id": cid, "content": f"{cid}: " + "word " * 200})
    rows.append({"role": "user", "content": "thanks, now finish"})
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    out, arch = _compacted(tmp_path, src, "--to", "sharegpt", "--context-window", "6000")
    back = cli("restore", str(out), "--archive", str(arch))
    assert back.returncode == 0 and back.stdout == cli("convert", str(src), "--to", "sharegpt", "-q").stdout, back.stderr


@pytest.mark.parametrize("sample", ["claude_code_session.jsonl", "codex_rollout.jsonl"])
def test_a_line_log_archive_keeps_a_line_written_unchanged_as_its_number(tmp_path, sample):
    """A Claude Code or Codex session's archive gives each source line written unchanged as the number of the line
    that holds it (the archive does not hold the session twice), and the text of the others."""
    src = SAMPLES / sample
    out, arch = _compacted(tmp_path, src, "--context-window", "8000")
    [rec] = [r for r in read_jsonl(arch.read_bytes()) if r.get("type") == "lines"]
    written = out.read_bytes().splitlines()
    source = src.read_bytes().splitlines()
    unchanged = [line for line in source if line in written]
    assert unchanged and len(unchanged) < len(source)
    assert [x for x in rec["lines"] if isinstance(x, int)] == [written.index(line) for line in unchanged]
