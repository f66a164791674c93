"""Datasets under --on-error skip: a record rejected where it is built (an unknown role, nothing repair can send)
takes no place in the output's numbering, so `restore` gives back the kept records; counts say how many were
rejected."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from compactctl import api

from .conftest import SAMPLES, cli, proc, tool_session, write_jsonl

SMALL = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
BAD = {
    "wizard": {"messages": [{"role": "wizard", "content": "x"}]},  # rejected when its transcript is built
    "empty": {"messages": []},  # rejected by repair: nothing a model could be sent
}


def _anthropic(messages: list[dict]) -> dict:
    """An OpenAI chat tool session as an Anthropic dataset record."""
    out: list[dict] = []
    for m in messages[1:]:
        if m["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}
            out.append({"role": "user", "content": [block]})
        elif m.get("tool_calls"):
            calls = [
                {"type": "tool_use", "id": c["id"], "name": c["function"]["name"], "input": orjson.loads(c["function"]["arguments"])}
                for c in m["tool_calls"]
            ]
            out.append({"role": "assistant", "content": calls})
        else:
            out.append({"role": m["role"], "content": [{"type": "text", "text": m["content"]}]})
    return {"system": messages[0]["content"], "messages": out}


def _records(fmt: str, bad: str) -> list[dict]:
    big = {"messages": tool_session(30, 4000)}
    small, worse = SMALL, BAD[bad]
    if fmt == "anthropic":
        small = {"system": "s", **SMALL}
        worse = {"system": "s", **worse}
        big = _anthropic(big["messages"])
    return [small, worse, big]


def _json_lines(data: bytes) -> list:
    return [orjson.loads(x) for x in data.split(b"\n") if x.strip()]


def _compact(tmp_path: Path, src: Path, *more: str) -> tuple[Path, Path, Path]:
    out, arch, rej = tmp_path / "o.jsonl", tmp_path / "a.jsonl", tmp_path / "r.jsonl"
    r = cli(
        "compact",
        str(src),
        "--context-window",
        "4000",
        "-q",
        "--on-error",
        "skip",
        "--archive",
        str(arch),
        "--rejects",
        str(rej),
        "-o",
        str(out),
        *more,
    )
    assert r.returncode == 0, r.stderr
    return out, arch, rej


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("bad", sorted(BAD))
@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_a_rejected_record_does_not_break_restore(tmp_path, fmt, bad, workers):
    rows = _records(fmt, bad)
    src = write_jsonl(tmp_path / "m.jsonl", rows)
    out, arch, rej = _compact(tmp_path, src, "--workers", workers)
    assert _json_lines(rej.read_bytes()) == [rows[1]]
    written = _json_lines(out.read_bytes())
    assert len(written) == 2 and written[1] != rows[2]  # the big record was compacted: restore has work to do
    end = _json_lines(arch.read_bytes())[-1]
    assert end["type"] == "end" and end["transcripts"] == 2 and end["rejected"] == 1
    back = cli("restore", str(out), "--archive", str(arch))
    assert back.returncode == 0, back.stderr
    assert _json_lines(back.stdout) == [rows[0], rows[2]]
    for phase in ("prune", "repair"):  # the phase commands share the runner (prune writes an empty record as it came)
        o2, a2, r2 = (tmp_path / f"{phase}.{k}.jsonl" for k in ("o", "a", "r"))
        args = ["--context-window", "4000", "-q", "--on-error", "skip", "--archive", str(a2), "--rejects", str(r2), "-o", str(o2)]
        r = cli(phase, str(src), *args)
        assert r.returncode == 0, r.stderr
        back = cli("restore", str(o2), "--archive", str(a2))
        assert back.returncode == 0, back.stderr
        rejected = _json_lines(r2.read_bytes())
        assert rejected in ([], [rows[1]]) and _json_lines(back.stdout) == [x for x in rows if x not in rejected]


def test_rejected_records_in_a_directory_output_restore_per_file(tmp_path):
    rows = _records("openai", "wizard")
    d = tmp_path / "in"
    d.mkdir()
    write_jsonl(d / "a.jsonl", [rows[1], *rows])  # a rejected record first, and another in the middle
    write_jsonl(d / "b.jsonl", [rows[2], rows[1], rows[0]])
    r = cli(
        "compact",
        str(d),
        "--context-window",
        "4000",
        "-q",
        "--on-error",
        "skip",
        "--archive",
        str(tmp_path / "a.jsonl"),
        "-o",
        f"{tmp_path / 'out'}/",
    )
    assert r.returncode == 0, r.stderr
    for name, kept in (("a.jsonl", [rows[0], rows[2]]), ("b.jsonl", [rows[2], rows[0]])):
        back = tmp_path / f"back-{name}"
        api.restore_file(str(tmp_path / "out" / name), str(tmp_path / "a.jsonl"), str(back))
        assert _json_lines(back.read_bytes()) == kept, name


def _all_rejected_dir(tmp_path: Path) -> tuple[Path, list]:
    """in/: a.jsonl and c.jsonl with records to write, b.jsonl whose every record is rejected where it is built."""
    rows = _records("openai", "wizard")
    d = tmp_path / "in"
    d.mkdir()
    write_jsonl(d / "a.jsonl", rows)
    write_jsonl(d / "b.jsonl", [BAD["wizard"], BAD["empty"], BAD["wizard"]])
    write_jsonl(d / "c.jsonl", [rows[2], rows[0]])
    return d, rows


@pytest.mark.parametrize("workers", ["1", "2"])
def test_an_input_whose_every_record_is_rejected_gets_no_output_file(tmp_path, workers):
    """-o DIR/ under --on-error skip wrote an empty file for an input that gave no transcript; now none (the skip notes
    and the rejects say what became of it), an earlier run's file there is removed, and the archive names no output
    for it. The phase commands share the writer."""
    d, rows = _all_rejected_dir(tmp_path)
    out, arch, rej = tmp_path / "out", tmp_path / "a.jsonl", tmp_path / "r.jsonl"
    out.mkdir()
    (out / "b.jsonl").write_bytes(b'{"messages": []}\n')  # an earlier run's output for b.jsonl
    args = ["--context-window", "4000", "--on-error", "skip", "--archive", str(arch), "--rejects", str(rej), "--workers", workers]
    r = cli("compact", str(d), *args, "-o", f"{out}/")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["a.jsonl", "c.jsonl"], r.stderr
    assert f"{out / 'b.jsonl'}: removed" in r.stderr.decode()
    assert _json_lines(rej.read_bytes()) == [rows[1], BAD["wizard"], BAD["empty"], BAD["wizard"]]
    end = _json_lines(arch.read_bytes())[-1]
    assert end["transcripts"] == 4 and end["rejected"] == 4 and end["outputs"] == {str(d / n): n for n in ("a.jsonl", "c.jsonl")}
    for name, kept in (("a.jsonl", [rows[0], rows[2]]), ("c.jsonl", [rows[2], rows[0]])):
        back = cli("restore", str(out / name), "--archive", str(arch))
        assert back.returncode == 0 and _json_lines(back.stdout) == kept, back.stderr
    for cmd in ("repair", "prune", "convert"):  # prune and convert write the empty record as it came: b.jsonl holds it
        o2 = tmp_path / f"{cmd}.out"
        r = cli(cmd, str(d), "-q", "--on-error", "skip", "-o", f"{o2}/")
        assert r.returncode == 0, r.stderr
        kept = {"a.jsonl", "c.jsonl"} | ({"b.jsonl"} if cmd != "repair" else set())
        assert {p.name for p in o2.iterdir()} == kept and all(p.stat().st_size for p in o2.iterdir()), cmd


@pytest.mark.parametrize("cmd", ["compact", "prune", "convert"])
def test_an_input_that_holds_no_transcript_is_said_for_either_output(tmp_path, cmd):
    """An empty input (or blank lines, or lines all rejected as read) gave an empty file with -o FILE and no file with
    -o DIR/, exit 0, not a word either way, and under -o DIR/ an earlier run's file at its place stayed, passing for
    this run's (the sinks never saw the input). -o DIR/: no file (as for an input whose every record is rejected), an
    earlier one removed; -o FILE: written empty (the run's one output); both said on stderr, not with -q."""
    d = tmp_path / "in"
    d.mkdir()
    write_jsonl(d / "a.jsonl", [SMALL])
    (d / "empty.jsonl").write_bytes(b"")
    (d / "blank.jsonl").write_bytes(b"\n  \n")
    (d / "junk.jsonl").write_bytes(b"x\n")  # every line rejected as read (--on-error skip)
    out = tmp_path / "out"
    out.mkdir()
    for name in ("empty.jsonl", "blank.jsonl", "junk.jsonl"):
        (out / name).write_bytes(b'{"messages": []}\n')  # an earlier run's outputs
    r = cli(cmd, str(d), "--on-error", "skip", "-o", f"{out}/")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["a.jsonl"], r.stderr
    err = r.stderr.decode()
    for name in ("empty.jsonl", "blank.jsonl", "junk.jsonl"):
        assert f"{d / name}: gives no transcript: no output file for it" in err and f"{out / name}: removed" in err, err
    one = tmp_path / "one.jsonl"
    r = cli(cmd, str(d / "empty.jsonl"), "-o", str(one))
    assert r.returncode == 0 and one.read_bytes() == b"" and f"{one}: written empty: the input gives no transcript" in r.stderr.decode()
    r = cli(cmd, str(d / "empty.jsonl"), str(d / "blank.jsonl"), "-o", f"{tmp_path}/o2/", "-q")
    assert r.returncode == 0 and r.stderr == b"" and not list((tmp_path / "o2").iterdir())
    r = cli(cmd, str(d / "a.jsonl"), str(d / "empty.jsonl"), "-o", str(one))  # a transcript written: nothing to say
    assert r.returncode == 0 and b"gives no transcript" not in r.stderr and one.read_bytes()


@pytest.mark.parametrize("after", [3, 6, 8])
def test_resume_over_an_input_whose_every_record_is_rejected(tmp_path, after):
    """Killed before, in and after the input that gives no transcript: --resume neither reads it again nor looks for
    its output file, and writes what an uninterrupted run writes."""
    from .test_scale import SLOW, _killed_run

    d, rows = _all_rejected_dir(tmp_path)
    write_jsonl(d / "c.jsonl", [rows[2], rows[0], rows[2], rows[0]])

    def args(base: str) -> list[str]:
        sides = [x for k in ("archive", "rejects", "report") for x in (f"--{k}", str(tmp_path / f"{base}.{k}"))]
        return [str(d), "--context-window", "4000", "-q", "--on-error", "skip", "-o", f"{tmp_path / base}/", *sides]

    def outputs(base: str) -> dict[str, bytes]:
        files = {p.name: p.read_bytes() for p in (tmp_path / base).iterdir()}
        return {**files, **{k: (tmp_path / f"{base}.{k}").read_bytes() for k in ("archive", "rejects", "report")}}

    assert cli("compact", *args("ref")).returncode == 0
    _killed_run(args("k"), tmp_path / "k" / ".compactctl-journal", after, SLOW)
    r = cli("compact", *args("k"), "--resume")
    assert r.returncode == 0, r.stderr
    assert outputs("k") == outputs("ref")
    assert sorted(outputs("ref")) == ["a.jsonl", "archive", "c.jsonl", "rejects", "report"]


def test_repair_check_counts_the_valid_records_and_the_rejected(tmp_path):
    rows = [SMALL, BAD["wizard"], SMALL, b"{not json", SMALL]
    src = tmp_path / "bad.jsonl"
    src.write_bytes(b"".join((r if isinstance(r, bytes) else orjson.dumps(r)) + b"\n" for r in rows))
    r = cli("repair", "--check", str(src), "--on-error", "skip")
    assert r.returncode == 0, r.stderr
    assert b"ok: 3 transcript(s), no violations (2 bad records skipped)" in r.stderr, r.stderr
    src.write_bytes(src.read_bytes() + orjson.dumps(BAD["empty"]) + b"\n")  # --check reports it (repair rejects it)
    r = cli("repair", "--check", str(src), "--on-error", "skip")
    assert r.returncode == 6 and b"1 violation(s) in 4 transcript(s) (2 bad records skipped)" in r.stderr, r.stderr


def test_resume_over_rejected_records_is_byte_identical(tmp_path):
    """--resume skips every record read (the rejected too) and numbers on from the records written."""
    from .test_scale import SLOW, _killed_run

    rows = [BAD["wizard"] if k % 5 == 2 else {"messages": tool_session(6 + k % 4, 1500), "id": k} for k in range(24)]
    src = write_jsonl(tmp_path / "d.jsonl", rows)

    def args(base: str) -> list[str]:
        sides = [x for k in ("archive", "rejects", "report") for x in (f"--{k}", str(tmp_path / f"{base}.{k}"))]
        return [
            str(src),
            "--context-window",
            "3000",
            "--summary-min",
            "300",
            "-q",
            "--on-error",
            "skip",
            "-o",
            str(tmp_path / f"{base}.out"),
            *sides,
        ]

    def outputs(base: str) -> list[bytes]:
        return [(tmp_path / f"{base}.{k}").read_bytes() for k in ("out", "archive", "rejects", "report")]

    assert cli("compact", *args("ref")).returncode == 0
    _killed_run(args("k"), tmp_path / "k.out.compactctl-journal", 6, SLOW)
    r = cli("compact", *args("k"), "--resume", "--workers", "2")
    assert r.returncode == 0, r.stderr
    assert outputs("k") == outputs("ref")
    back = cli("restore", str(tmp_path / "k.out"), "--archive", str(tmp_path / "k.archive"))
    assert back.returncode == 0, back.stderr
    assert _json_lines(back.stdout) == [x for x in rows if x is not BAD["wizard"]]


def test_skip_notes_come_in_input_order_with_workers(tmp_path):
    """--on-error skip with worker processes: the notes of records rejected in a worker (an unknown role, nothing to
    send) were printed by the workers as they went, and those of lines the parent rejected (not JSON) as it read
    ahead: out of input order, and not the same from run to run. Now the parent says every note with the transcript
    it comes before, in input order: stderr is the same bytes as with one process."""
    rows: list[bytes] = []
    for k in range(360):
        bad = {2: orjson.dumps(BAD["wizard"]), 4: b"{not json %d" % k, 5: orjson.dumps(BAD["empty"])}.get(k % 7)
        rows.append(bad or orjson.dumps({"messages": tool_session(2 + k % 3, 1000 + 4000 * (k % 5)), "id": k}))
    src = tmp_path / "d.jsonl"
    src.write_bytes(b"\n".join(rows) + b"\n")
    args = ["compact", str(src), "--context-window", "4000", "--on-error", "skip", "-o", str(tmp_path / "o.jsonl")]
    one = proc(*args, "--workers", "1")  # real processes: what workers print to stderr goes where the parent's goes
    assert one.returncode == 0, one.stderr
    lines = [int(x.split(b":")[2]) for x in one.stderr.splitlines() if x.startswith(b"compactctl: skipped ")]
    assert lines == sorted(lines) and len(lines) == sum(k % 7 in (2, 4, 5) for k in range(360))  # each, in input order
    for _ in range(2):
        two = proc(*args, "--workers", "2")
        assert two.returncode == 0 and two.stderr == one.stderr


@pytest.mark.parametrize("stdin", [False, True])
@pytest.mark.parametrize("workers", ["1", "2"])
def test_lines_read_ahead_to_tell_the_format_are_said_in_input_order(tmp_path, workers, stdin):
    """A file whose first records hold only role and text is read ahead (up to 1,000 records) for one that tells
    OpenAI chat from Anthropic. The bad lines of that look-ahead were said (and written to --rejects) as it read
    them, before the notes of the records before them: line 3 before line 2. Under --on-error fail the error
    named was line 3's, not the first in the input."""
    plain = [{"messages": [{"role": "user", "content": f"hi {k}"}, {"role": "assistant", "content": "yo"}]} for k in range(5)]
    rows = [orjson.dumps(plain[0]), orjson.dumps(BAD["wizard"]), b"{not json", orjson.dumps(plain[3]), b"[1]", orjson.dumps(plain[4])]
    src = tmp_path / "d.jsonl"
    src.write_bytes(b"\n".join(rows) + b"\n")
    name = "<stdin>" if stdin else str(src)
    args = ["compact", "-" if stdin else str(src), "-q", "--workers", workers]
    feed = {"input": src.read_bytes()} if stdin else {}
    r = proc(*args, "--on-error", "skip", "--rejects", str(tmp_path / "r.jsonl"), "-o", str(tmp_path / "o.jsonl"), **feed)
    assert r.returncode == 0, r.stderr
    said = [x.split(b": ")[1].decode() for x in r.stderr.splitlines() if x.startswith(b"compactctl: skipped ")]
    assert said == [f"skipped {name}:{k}" for k in (2, 3, 5)], r.stderr
    assert (tmp_path / "r.jsonl").read_bytes() == b"\n".join([rows[1], rows[2], rows[4]]) + b"\n"
    failed = proc(*args, "-o", str(tmp_path / "x.jsonl"), **feed)
    assert failed.returncode == 3 and f"{name}:2: unknown role".encode() in failed.stderr, failed.stderr


# -- a first record that cannot tell the format, a whole-file JSON that is not a transcript --------------------


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_an_undetectable_first_line_is_skipped_like_any_bad_line(tmp_path, fmt, workers):
    rows = _records(fmt, "wizard")
    good = [rows[0], rows[2], rows[0]]
    src = tmp_path / "f.jsonl"
    src.write_bytes(b'{"foo":1}\n[1]\n{"bar":2}\n' + b"".join(orjson.dumps(r) + b"\n" for r in good))
    out, arch, rej = _compact(tmp_path, src, "--workers", workers)
    assert _json_lines(rej.read_bytes()) == [{"foo": 1}, [1], {"bar": 2}]
    written = _json_lines(out.read_bytes())
    assert len(written) == 3 and written[0] == good[0] and written[2] == good[2] and written[1] != good[1]
    end = _json_lines(arch.read_bytes())[-1]  # the archive accounts for every line read: 3 written, 3 skipped
    assert end["type"] == "end" and end["transcripts"] == 3 and end["rejected"] == 0 and end["skipped_lines"] == 3, end
    back = cli("restore", str(out), "--archive", str(arch))
    assert back.returncode == 0 and _json_lines(back.stdout) == good, back.stderr
    err = cli("compact", str(src), "--context-window", "4000", "-q", "--on-error", "skip").stderr.decode()
    assert f"skipped {src}:1: cannot tell the transcript format" in err and f"skipped {src}:3: cannot tell" in err, err
    failed = cli("compact", str(src), "--context-window", "4000", "-q", "-o", str(tmp_path / "x.jsonl"))
    assert failed.returncode == 3 and f"{src}:1: cannot tell the transcript format".encode() in failed.stderr
    assert not (tmp_path / "x.jsonl").exists()


def test_a_file_no_record_of_which_tells_its_format_writes_nothing(tmp_path):
    src = tmp_path / "f.jsonl"
    src.write_bytes(b'{"foo":1}\n{"bar":2}\n')
    r = cli("compact", str(src), "-q", "--on-error", "skip", "--rejects", str(tmp_path / "r.jsonl"))
    assert r.returncode == 0 and r.stdout == b"", r.stderr
    assert (tmp_path / "r.jsonl").read_bytes() == src.read_bytes()


def test_a_bad_whole_file_json_in_a_directory_is_skipped(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "package.json").write_bytes(b'{"name": "x", "version": "1.0.0"}\n')  # JSON, not a transcript
    (d / "broken.json").write_bytes(b'{"messages": [\n  {"role": "user"')  # not JSON: to rejects as it is
    (d / "empty.traj").write_bytes(b"")
    (d / "list.json").write_bytes(orjson.dumps([SMALL["messages"][0], SMALL["messages"][1]]))  # a plain message list
    write_jsonl(d / "good.jsonl", [SMALL])
    out, rej = tmp_path / "out", tmp_path / "r.jsonl"
    r = cli("compact", str(d), "-q", "--on-error", "skip", "--rejects", str(rej), "-o", f"{out}/")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["good.jsonl", "list.jsonl"]
    assert _json_lines((out / "good.jsonl").read_bytes()) == [SMALL]
    assert rej.read_bytes() == b'{"messages": [\n  {"role": "user"\n{"name":"x","version":"1.0.0"}\n'
    err = r.stderr.decode()
    for name in ("broken.json:2: invalid JSON", "empty.traj:1: invalid JSON", "package.json:1: cannot tell the transcript format"):
        assert f"skipped {d / name}" in err, err
    failed = cli("compact", str(d), "-q", "-o", f"{tmp_path / 'out2'}/")
    assert failed.returncode == 3 and f"{d / 'broken.json'}:2: invalid JSON".encode() in failed.stderr
    assert not list((tmp_path / "out2").glob("*.jsonl"))


# -- a fatal error after --on-error skip has streamed transcripts to stdout --------------------------------------


def test_a_fatal_error_keeps_the_side_files_of_what_stdout_got(server, tmp_path):
    """stdout under --on-error skip is streamed (a dataset through a pipe is never held whole): a 401 part way leaves
    the transcripts before it printed, and the archive, rejects and report now match them (they were removed, so
    the printed output's references and `restore` had nothing behind them). -o FILE and --on-error fail: nothing."""
    rows = [SMALL, BAD["wizard"], {"messages": tool_session(8, 2000)}, SMALL, {"messages": tool_session(30, 4000)}, SMALL]
    src = write_jsonl(tmp_path / "d.jsonl", rows)
    sides = {k: tmp_path / f"{k}.jsonl" for k in ("archive", "rejects", "report")}
    args = [str(src), "--context-window", "3000", "-q", "--base-url", server.url, "--llm-model", "error401"]
    args += [x for k, p in sides.items() for x in (f"--{k}", str(p))]
    r = cli("compact", *args, "--on-error", "skip")
    assert r.returncode == 7, r.stderr
    printed = _json_lines(r.stdout)
    assert printed[0] == SMALL and printed[1] != rows[2] and printed[2] == SMALL and len(printed) == 3  # the second was pruned
    assert _json_lines(sides["rejects"].read_bytes()) == [BAD["wizard"]]
    assert len(_json_lines(sides["report"].read_bytes())) == 3
    end = _json_lines(sides["archive"].read_bytes())[-1]
    assert end["type"] == "end" and end["transcripts"] == 3 and end["rejected"] == 1 and "401" in end["stopped"]
    out = tmp_path / "printed.jsonl"
    out.write_bytes(r.stdout)
    back = cli("restore", str(out), "--archive", str(sides["archive"]))
    assert back.returncode == 0 and _json_lines(back.stdout) == [rows[0], rows[2], rows[3]], back.stderr
    for p in sides.values():
        p.unlink()
    no_rejects = [x for x in args if x not in ("--rejects", str(sides["rejects"]))]  # --rejects needs skip
    for given, more in ((args, ["--on-error", "skip", "-o", str(tmp_path / "o.jsonl")]), (no_rejects, ["--on-error", "fail"])):
        r = cli("compact", *given, *more)  # all or nothing
        assert r.returncode == (7 if "skip" in more else 3) and r.stdout == b"", r.stderr  # fail: the bad record stops it
        assert not [p for p in tmp_path.iterdir() if p.name not in ("d.jsonl", "printed.jsonl", "cache")], more


def test_an_error_in_a_later_file_under_o_dir_writes_nothing(tmp_path):
    """-o DIR/ with --on-error fail: a bad line in the second file left the first file's output in place (its
    archive removed); every file is renamed into place only when the run ends."""

    din = tmp_path / "in"
    din.mkdir()
    good = (SAMPLES / "dataset.jsonl").read_bytes()
    (din / "a.jsonl").write_bytes(good)
    (din / "b.jsonl").write_bytes(good.splitlines()[0] + b"\nnot json\n")
    out = tmp_path / "out"
    r = cli("compact", str(din), "-o", f"{out}/", "--archive", str(tmp_path / "arc.jsonl"), "-q", "--context-window", "4000")
    assert r.returncode == 3, r.stderr
    assert not out.exists() or not [p for p in out.rglob("*") if p.is_file()]
    assert not (tmp_path / "arc.jsonl").exists()
    r = cli("compact", str(din / "a.jsonl"), "-o", f"{out}/", "-q", "--context-window", "4000")  # a good run still writes
    assert r.returncode == 0 and (out / "a.jsonl").exists()


def test_an_input_given_twice_is_refused_before_anything_is_written(tmp_path):

    din = tmp_path / "in"
    din.mkdir()
    (din / "a.jsonl").write_bytes((SAMPLES / "dataset.jsonl").read_bytes())
    for args in ([str(din), str(din / "a.jsonl")], [str(din / "a.jsonl"), str(din / "a.jsonl")]):
        out = tmp_path / "o.jsonl"
        r = cli("compact", *args, "-o", str(out), "-q")
        assert r.returncode == 2 and b"given twice" in r.stderr, r.stderr
        assert not out.exists()


SHAREGPT = {"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}


@pytest.mark.parametrize("cmd", ["compact", "convert", "repair"])
@pytest.mark.parametrize("to_stdout", [False, True])
def test_inputs_of_different_formats_do_not_share_one_output(tmp_path, cmd, to_stdout):
    """A reader tells a file's format from its first records: an Anthropic dataset followed by a ShareGPT one in one
    output did not read back ('a dataset record needs a "messages" list'). Refused, naming both; nothing written."""
    first = write_jsonl(tmp_path / "a.jsonl", [_anthropic(tool_session(2)), SMALL])
    second = write_jsonl(tmp_path / "b.jsonl", [SHAREGPT])
    out = tmp_path / "out.jsonl"
    r = cli(cmd, str(first), str(second), *([] if to_stdout else ["-o", str(out)]))
    assert r.returncode == 2
    assert b"b.jsonl is written as sharegpt, and" in r.stderr and b"a.jsonl before it as anthropic" in r.stderr
    assert b"--to" in r.stderr and r.stdout == b"" and not out.exists()
    # One format, either way: --to, or one output per input.
    r = cli(cmd, str(first), str(second), "--to", "openai", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert len(api.read([str(out)])) == 3
    r = cli(cmd, str(first), str(second), "-o", str(tmp_path / "each") + "/")
    assert r.returncode == 0, r.stderr
    assert [t.format for t in api.read([str(tmp_path / "each" / "b.jsonl")])] == ["sharegpt"]


def test_a_record_refused_for_its_format_gets_no_written_as_note(tmp_path):
    """A Gemini session after an Anthropic file cannot share its output: the run stops there, and the note that the
    session was 'written as openai' (its tool result's error flag not carried) was printed before the refusal."""
    call = {"id": "c1", "name": "run", "args": {}, "status": "error", "result": "boom"}
    gemini = tmp_path / "g.json"
    gemini.write_bytes(
        orjson.dumps(
            {"sessionId": "s1", "messages": [{"type": "user", "content": "hi"}, {"type": "gemini", "content": "", "toolCalls": [call]}]}
        )
    )
    anthropic = write_jsonl(
        tmp_path / "a.jsonl", [{"system": "s", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]}]
    )
    r = cli("repair", str(anthropic), str(gemini), "-o", str(tmp_path / "out.jsonl"))
    err = r.stderr.decode()
    assert r.returncode == 2 and "inputs of different formats cannot share one output" in err and "error flag" not in err
    r = cli("repair", str(gemini), "-o", str(tmp_path / "g.out.jsonl"))
    assert r.returncode == 0 and "written as openai: 1 error flag of a tool result" in r.stderr.decode()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_session_file_that_cannot_share_stdout_is_refused_naming_both_formats(tmp_path, workers):
    """A Claude Code session and an Anthropic file on one stdout were refused with "several session files cannot share
    one output in this format", naming neither file nor format (and "session files" when the other was a dataset):
    the refusal names the session file, what it is read and written as, and what the other inputs are."""
    session = SAMPLES / "claude_code_session.jsonl"
    anthropic = SAMPLES / "anthropic_session.jsonl"
    r = cli("prune", str(session), str(anthropic), "--workers", workers)
    err = r.stderr.decode()
    assert r.returncode == 2 and r.stdout == b"", err
    assert f"{session} is a claude-code session and {anthropic} an anthropic session: " in err, err
    assert "give -o DIR/ (one output per input), or convert with --to openai" in err
    dataset = SAMPLES / "dataset.jsonl"
    r = cli("compact", str(dataset), str(anthropic), "--workers", workers, "-q")
    err = r.stderr.decode()
    assert r.returncode == 2 and f"{anthropic} is an anthropic session and {dataset} an openai dataset: " in err, err
    plain = SAMPLES / "long_session.jsonl"
    r = cli("convert", str(plain), str(SAMPLES / "parallel_calls.jsonl"), "--to", "anthropic")
    err = r.stderr.decode()
    assert r.returncode == 2 and f"{plain} is an openai session (written as anthropic) and " in err, err


def test_a_read_only_format_shares_an_output_with_what_it_is_written_as(tmp_path):
    """Gemini and OpenHands are read only, and written as OpenAI chat: with an OpenAI file, one output (it was refused
    as 'gemini' and 'openai', and an OpenHands session beside anything as a session file of another format)."""
    gemini = tmp_path / "g.json"
    gemini.write_bytes(
        orjson.dumps({"sessionId": "s1", "messages": [{"type": "user", "content": "hi"}, {"type": "gemini", "content": "yo"}]})
    )
    openai = write_jsonl(tmp_path / "o.jsonl", [SMALL])
    out = tmp_path / "out.jsonl"
    for cmd in ("convert", "compact", "repair"):
        r = cli(cmd, str(gemini), str(openai), "-o", str(out))
        assert r.returncode == 0, r.stderr
        assert [t.format for t in api.read([str(out)])] == ["openai", "openai"]


@pytest.mark.parametrize("engine", [["--workers", "2"], ["--jobs", "2"], ["--jobs", "2", "--workers", "1"]], ids=" ".join)
def test_a_bug_in_a_phase_leaves_what_one_process_printed_before_it(tmp_path, monkeypatch, engine):
    """compact --on-error skip on stdout (streamed), a phase with a bug (a RuntimeError) on the 6th record, a bad record
    rejected before it: one process prints the 4 good records before it, keeps the report and the rejects to match,
    then ends on the bug (exit 1, its traceback). With worker processes (--workers 2, or --jobs 2, whose offline
    summarizer runs in workers) the records of the bug's batch done before it were lost with it: nothing printed, no
    report, no rejects. Now every engine gives what one process gives."""
    from compactctl import pipeline

    real = pipeline.repair

    def buggy(t, *a, **k):
        if any("BOOM" in str(m.content) for m in t.messages):
            raise RuntimeError("a bug in repair")
        return real(t, *a, **k)

    monkeypatch.setattr(pipeline, "repair", buggy)  # forked workers have it too
    rows = [{"id": f"r{k}", "messages": tool_session(3, 300) + [{"role": "user", "content": f"q{k}"}]} for k in range(8)]
    rows[2] = {"id": "bad", **BAD["wizard"]}
    rows[5]["messages"][-1]["content"] = "BOOM"
    src = write_jsonl(tmp_path / "d.jsonl", rows)
    got = {}
    for name, args in (("one", ["--workers", "1"]), ("engine", engine)):
        rep, rej = tmp_path / f"{name}.report", tmp_path / f"{name}.rejects"
        r = cli(
            "compact", str(src), "--context-window", "2000", "-q", "--on-error", "skip", "--report", str(rep), "--rejects", str(rej), *args
        )
        err = r.stderr.decode()
        assert r.returncode == 1 and err.rstrip().endswith("RuntimeError: a bug in repair"), err
        assert "skipped" in err and "d.jsonl:3" in err, err
        got[name] = (r.stdout, [x["transcript"] for x in _json_lines(rep.read_bytes())], rej.read_bytes())
    assert [x["id"] for x in _json_lines(got["one"][0])] == ["r0", "r1", "r3", "r4"]
    assert got["one"][2] == orjson.dumps(rows[2]) + b"\n"
    assert got["engine"] == got["one"]


DEEP = b"[" * 300 + b"1" + b"]" * 300  # read (orjson reads 1024 levels), never written back (254)
GEMINI = {"sessionId": "s1", "messages": [{"type": "user", "content": "hi"}, {"type": "gemini", "content": "yo", "thoughts": []}]}
OPENHANDS = {
    "instance_id": "i1",
    "history": [
        {"id": 0, "source": "user", "action": "message", "message": "fix it", "args": {"content": "fix it"}},
        {"id": 1, "source": "agent", "action": "finish", "message": "done", "args": {"final_thought": "done"}},
    ],
}
SPACED = b'{"system": "be brief"}\n{"role": "user", "content": "caf\\u00e9?"}\n{"role": "assistant", "content": [{"type": "text", "text": "yes"}]}\n'


def _deep(rec: dict) -> bytes:
    """`rec` as a line with one more key nested 300 levels deep."""
    return orjson.dumps(rec)[:-1] + b', "deep": ' + DEEP + b"}"


@pytest.mark.parametrize("kind", ["gemini", "openhands", "anthropic-session"])
def test_a_record_too_deep_to_write_goes_to_rejects_as_read(tmp_path, kind):
    """--on-error skip, a record nested deeper than orjson writes: skipped, and its lines go to --rejects as read. A
    Gemini or OpenHands record (read-only formats, written as OpenAI chat) and an Anthropic session (one transcript
    of many lines) kept no lines: --rejects was to get the transcript written again, which failed as its output had,
    and the run ended in a traceback (exit 1, nothing written)."""
    if kind == "anthropic-session":
        data = SPACED + _deep({"role": "user", "content": "and?"}) + b"\n"
        want, kept = data, 0
    else:
        rec = GEMINI if kind == "gemini" else OPENHANDS
        data = orjson.dumps(rec) + b"\n" + _deep(rec) + b"\n"
        want, kept = data.split(b"\n", 1)[1], 1
    src = tmp_path / "in.jsonl"
    src.write_bytes(data)
    out, rej = tmp_path / "o.jsonl", tmp_path / "r.jsonl"
    r = cli("repair", str(src), "--on-error", "skip", "--rejects", str(rej), "-o", str(out))
    err = r.stderr.decode()
    assert r.returncode == 0 and "nested deeper than 254 levels" in err and "Traceback" not in err, err
    assert rej.read_bytes() == want
    assert len(_json_lines(out.read_bytes())) == kept


def _fail_every_transcript(monkeypatch) -> None:
    from compactctl import pipeline
    from compactctl.errors import DataError

    def refused(t, *a, **k):
        raise DataError(t.source or t.id, t.line or 1, "nothing a model could be sent")

    monkeypatch.setattr(pipeline, "repair", refused)


@pytest.mark.parametrize("kind", ["gemini.json", "openhands.json", "anthropic.jsonl"])
def test_a_skipped_session_file_goes_to_rejects_as_read_not_written_again(tmp_path, monkeypatch, kind):
    """compact --on-error skip, a session file the work refuses (a DataError): --rejects got it written again, not
    as read: a Gemini session as Gemini with its messages rewritten (3.2 KB of a 7.6 KB corpus session), OpenHands
    events as OpenAI chat messages (8.5 KB for 24 KB of events), an Anthropic session re-encoded (spaces and escapes
    gone). Now each gets the lines its reader read: the document's record, or its elements one a line, as a
    document's bad element goes to --rejects; a JSONL session's lines byte for byte."""
    _fail_every_transcript(monkeypatch)
    src = tmp_path / kind
    if kind == "gemini.json":
        src.write_bytes(orjson.dumps(GEMINI, option=orjson.OPT_INDENT_2))
        want = orjson.dumps(GEMINI) + b"\n"
    elif kind == "openhands.json":
        src.write_bytes(orjson.dumps(OPENHANDS["history"], option=orjson.OPT_INDENT_2))
        want = b"".join(orjson.dumps(e) + b"\n" for e in OPENHANDS["history"])
    else:
        src.write_bytes(SPACED)
        want = SPACED
    rej = tmp_path / "r.jsonl"
    r = cli("compact", str(src), "--on-error", "skip", "--rejects", str(rej), "-o", str(tmp_path / "o.jsonl"), "-q")
    assert r.returncode == 0 and "skipped" in r.stderr.decode(), r.stderr
    assert rej.read_bytes() == want


def test_the_records_of_a_json_document_hold_their_raw_bytes_at_their_size(tmp_path):
    """A .json array's records keep their raw bytes (written as read, or to --rejects): orjson.dumps's bytes hold its
    buffer, 4 KB at least and up to twice the size: 2000 records of ~47 bytes held 8 MB for 0.09 MB of lines (tau-bench's
    200 transcripts held 22.4 MB, now 12.5 MB). Now each is a copy of its size."""
    import tracemalloc

    src = tmp_path / "d.json"
    src.write_bytes(orjson.dumps([{"messages": [{"role": "user", "content": f"q{k}"}]} for k in range(2000)]))
    tracemalloc.start()
    try:
        ts = api.read([str(src)])
        at = tracemalloc.get_object_traceback(ts[0].raw)  # where the records' raw bytes were made
        snap = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    raw = sum(len(t.raw or b"") for t in ts)
    held = sum(s.size for s in snap.statistics("traceback") if s.traceback == at)
    assert at is not None and len(ts) == 2000 and raw > 90_000 and held < 2 * raw, (held, raw)


def test_the_lines_kept_for_rejects_are_kept_only_when_rejects_are_asked_for(tmp_path):
    """The readers of Anthropic, Gemini and OpenHands sessions keep the lines they read for --rejects (as_read); held
    on every run, they raised the peak memory of a 13.9 MB Anthropic session 140 -> 155 MB (helper 143's review)."""
    from compactctl import formats
    from compactctl.formats.reader import Reader

    src = SAMPLES / "anthropic_session.jsonl"

    class Sink:
        def add_raw(self, raw):
            pass

    for rejects, kept in ((None, False), (Sink(), True)):
        [t] = list(Reader(on_error="skip", rejects=rejects).read_file(str(src)))
        assert (formats.as_read(t) is not None) is kept
        if kept:
            assert b"".join(formats.as_read(t)) == b"".join(src.read_bytes().splitlines())
