"""Reading JSONL: every malformed case names file and line, exits 3, and leaves no output behind."""

from __future__ import annotations

import os

import orjson
import pytest

from .conftest import cli, own_device, read_jsonl, tool_session

GOOD = b'{"role":"user","content":"hi"}\n{"role":"assistant","content":"hello"}\n'

BAD_CASES = {
    "invalid-json": (GOOD + b'{"role": "user", content: 1}\n', 3, "invalid JSON"),
    "truncated-last-line": (GOOD + b'{"role":"user","content":"unfinis', 3, "truncated"),
    # a line that opens no object was "truncated JSON (the line ends early: Expecting value)"
    "not-json-at-all": (GOOD + b"x\n", 3, "invalid JSON: Expecting value at column 1"),
    "invalid-utf8": (GOOD + b'{"role":"user","content":"\xff\xfe"}\n', 3, "invalid UTF-8"),
    # a UTF-16 file (Windows PowerShell's `>` writes one) was "invalid UTF-8 at byte 0", not what to do about it
    "utf-16": (GOOD.decode().encode("utf-16-le").join([b"\xff\xfe", b""]), 1, "the file is UTF-16 (it starts with its byte-order mark)"),
    "utf-16-be": (b"\xfe\xff" + GOOD.decode().encode("utf-16-be"), 1, "iconv -f UTF-16 -t UTF-8"),
    # only a first line that starts with UTF-16's byte-order mark is named as UTF-16
    "invalid-utf8-first-line": (b'{"role":"user","content":"\xff"}\n' + GOOD, 1, "invalid UTF-8 at byte 26"),
    "utf-16-bom-on-a-later-line": (GOOD + b'\xff\xfe{"role":"user","content":"x"}\n', 3, "invalid UTF-8 at byte 0"),
    "non-object": (GOOD + b"[1, 2]\n", 3, "expected a JSON object"),
    "unknown-role": (GOOD + b'{"role":"wizard","content":"x"}\n', 3, "unknown role 'wizard'"),
    "no-role": (GOOD + b'{"content":"x"}\n', 3, "no role"),
    "bad-content": (GOOD + b'{"role":"user","content":42}\n', 3, "content must be"),
    "bad-tool-call": (GOOD + b'{"role":"assistant","content":null,"tool_calls":[{"id":"a"}]}\n', 3, "function.name"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
@pytest.mark.parametrize("to_file", [True, False])
def test_bad_input_names_file_and_line_and_writes_nothing(tmp_path, case, to_file):
    data, line, what = BAD_CASES[case]
    src = tmp_path / "in.jsonl"
    src.write_bytes(data)
    out = tmp_path / "out.jsonl"
    args = ["prune", str(src)] + (["-o", str(out)] if to_file else [])
    r = cli(*args)
    assert r.returncode == 3, r.stderr
    assert f"{src}:{line}:" in r.stderr.decode()
    assert what in r.stderr.decode()
    assert r.stdout == b""
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["in.jsonl"]  # no temp file left either


def test_a_utf16_json_document_is_named_as_one(tmp_path):
    src = tmp_path / "t.json"
    src.write_bytes('[{"role": "user", "content": "hi"}]'.encode("utf-16"))
    r = cli("repair", str(src))
    assert r.returncode == 3 and f"{src}:1: the file is UTF-16" in r.stderr.decode(), r.stderr


def test_skip_mode_reports_each_line_and_keeps_rejects(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(GOOD + b"not json\n" + b'{"role":"user","content":"last"}\n' + b"[3]\n")
    rej = tmp_path / "rejects.jsonl"
    r = cli("repair", str(src), "--on-error", "skip", "--rejects", str(rej))
    assert r.returncode == 0, r.stderr
    err = r.stderr.decode()
    assert f"{src}:3:" in err and f"{src}:5:" in err
    assert rej.read_bytes() == b"not json\n[3]\n"
    assert [m["content"] for m in read_jsonl(r.stdout)] == ["hi", "hello", "last"]


def test_tolerated_oddities(tmp_path):
    """BOM, CRLF, blank lines, raw U+2028 in a string, no final newline, a several-MB line."""
    big = "y" * (5 << 20)
    data = (
        b"\xef\xbb\xbf"
        + b'{"role":"user","content":"a\xe2\x80\xa8b"}\r\n\r\n\n'
        + orjson.dumps({"role": "assistant", "content": big})
        + b"\n"
        + b'{"role":"user","content":"end"}'
    )
    src = tmp_path / "odd.jsonl"
    src.write_bytes(data)
    r = cli("repair", str(src))
    assert r.returncode == 0, r.stderr
    msgs = read_jsonl(r.stdout)
    assert msgs[0]["content"] == "a\u2028b"
    assert len(msgs[1]["content"]) == len(big)
    assert msgs[2]["content"] == "end"


def test_lone_surrogate_becomes_replacement_with_warning(tmp_path):
    src = tmp_path / "s.jsonl"
    src.write_bytes(b'{"role":"user","content":"bad \\ud800 here"}\n{"role":"assistant","content":"ok"}\n')
    r = cli("repair", str(src))
    assert r.returncode == 0
    assert f"{src}:1: lone UTF-16 surrogate" in r.stderr.decode()
    assert read_jsonl(r.stdout)[0]["content"] == "bad \ufffd here"


def test_missing_input_is_io_error(tmp_path):
    r = cli("prune", str(tmp_path / "nope.jsonl"))
    assert r.returncode == 4
    assert "no such file" in r.stderr.decode()


@pytest.mark.parametrize(
    "name,expect",
    [("s.jsonl/", "s.jsonl/: Not a directory"), ("", ": no such file or directory")],
    ids=["a file as a folder", "an empty name"],
)
def test_an_input_that_cannot_be_looked_at_is_named_with_the_reason(tmp_path, name, expect):
    """A review found these read as "no such file or directory" whatever the reason (a trailing slash after a file,
    a folder that may not be searched); an empty name read the working directory's files before."""
    (tmp_path / "s.jsonl").write_bytes(GOOD)
    r = cli("prune", name, cwd=tmp_path)
    assert r.returncode == 4 and r.stdout == b""
    assert f"compactctl: error: {expect}" in r.stderr.decode()


def test_an_input_whose_folder_may_not_be_searched_says_so(tmp_path, monkeypatch):
    from compactctl import jsonl
    from compactctl.errors import IOFailure

    real = os.stat

    def denied(p, *a, **k):
        if str(p).startswith(str(tmp_path / "locked")):
            raise PermissionError(13, "Permission denied", str(p))
        return real(p, *a, **k)

    monkeypatch.setattr(os, "stat", denied)
    with pytest.raises(IOFailure, match=r"locked/s\.jsonl: Permission denied"):
        jsonl.expand_inputs([str(tmp_path / "locked" / "s.jsonl")])


def test_usage_error_exit_code():
    assert cli("prune", "--threshold").returncode == 2


def test_dataset_layout_is_kept_and_streams(tmp_path):
    rows = [{"id": f"t{i}", "messages": tool_session(2, 50), "extra_key": [i]} for i in range(3)]
    src = tmp_path / "d.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    r = cli("repair", str(src))
    assert r.returncode == 0
    assert r.stdout == src.read_bytes()  # untouched records are written back byte for byte


def test_directory_input_and_several_sessions_become_a_dataset(tmp_path):
    d = tmp_path / "dir" / "sub"
    d.mkdir(parents=True)
    (d / "a.jsonl").write_bytes(GOOD)
    (tmp_path / "dir" / "b.jsonl").write_bytes(GOOD)
    r = cli("repair", str(tmp_path / "dir"))
    assert r.returncode == 0, r.stderr
    recs = read_jsonl(r.stdout)
    assert [rec["source"].split("/")[-1] for rec in recs] == ["b.jsonl", "a.jsonl"]
    assert all(len(rec["messages"]) == 2 for rec in recs)


GEMINI_DOC = {
    "sessionId": "s1",
    "messages": [
        {"type": "user", "content": "Change Hello to Goodbye in a.txt"},
        {"type": "gemini", "content": "Done."},
    ],
}
ROWS = [{"task_id": k, "traj": [{"role": "user", "content": f"ask {k}"}, {"role": "assistant", "content": "ok"}]} for k in range(2)]


@pytest.mark.parametrize(
    "doc, args",
    [
        (orjson.dumps(GEMINI_DOC, option=orjson.OPT_INDENT_2), ["--from", "gemini"]),
        (orjson.dumps(GEMINI_DOC, option=orjson.OPT_INDENT_2), []),
        (orjson.dumps(ROWS, option=orjson.OPT_INDENT_2), []),
        (orjson.dumps(ROWS), []),  # an array on one line: never a JSONL record
        (b"\xef\xbb\xbf\n" + orjson.dumps(ROWS, option=orjson.OPT_INDENT_2) + b"\r\n", []),
    ],
    ids=["gemini-from", "gemini", "array-pretty", "array-one-line", "bom-blank-line-crlf"],
)
def test_a_json_document_on_stdin_or_in_a_jsonl_file_reads_as_in_a_json_file(tmp_path, doc, args):
    """stdin holding one JSON document (the only way Gemini sessions come), and a .jsonl file holding one, read as
    the same bytes in a .json file do: they were read line by line, "<stdin>:1: truncated JSON"."""
    as_json = tmp_path / "d.json"
    as_json.write_bytes(doc)
    as_jsonl = tmp_path / "d.jsonl"
    as_jsonl.write_bytes(doc)
    want = cli("compact", *args, str(as_json), "-q")
    assert want.returncode == 0 and want.stdout, want.stderr
    for r in (
        cli("compact", *args, "-q", input=doc),
        cli("compact", *args, "-", "-q", input=doc),
        cli("compact", *args, str(as_jsonl), "-q"),
    ):
        assert (r.returncode, r.stdout) == (0, want.stdout), r.stderr


def test_a_broken_document_on_stdin_names_its_line(tmp_path):
    doc = orjson.dumps(GEMINI_DOC, option=orjson.OPT_INDENT_2)
    r = cli("compact", "--from", "gemini", input=doc[:60])  # cut in the first message
    assert r.returncode == 3 and r.stdout == b""
    assert "<stdin>:5: invalid JSON" in r.stderr.decode()


def test_jsonl_whose_first_line_is_cut_is_still_read_line_by_line(tmp_path):
    """A first line that opens an object it does not close is a document's start, unless a later line is a record
    by itself: then it is JSONL whose first line a crash cut, read as ever (the line named; skipped on request)."""
    data = b'{"role":"user","content":"cut\n' + GOOD
    r = cli("repair", "-", input=data)
    assert r.returncode == 3 and "<stdin>:1: truncated JSON" in r.stderr.decode()
    r = cli("repair", "--on-error", "skip", "-", input=data)
    assert r.returncode == 0 and r.stdout == GOOD, r.stderr


def test_a_json_document_over_the_line_limit_is_refused_naming_the_file(tmp_path):
    """$COMPACTCTL_MAX_LINE_MB refused a JSONL line over it, while a .json/.traj document, parsed whole as one line
    is, was read at any size. A document is held to the same limit, named by file, before it is parsed; JSONL whose
    first line a crash cut (read line by line) is still held to it line by line."""
    big = {"history": [{"role": "user", "content": "x" * (3 << 20)}, {"role": "assistant", "content": "ok"}]}
    traj = tmp_path / "big.traj"
    traj.write_bytes(orjson.dumps(big, option=orjson.OPT_INDENT_2))
    size = len(traj.read_bytes())
    env = {"COMPACTCTL_MAX_LINE_MB": "2"}
    for args, named in (([str(traj)], str(traj)), (["-"], "<stdin>")):
        r = cli("repair", *args, env=env, input=traj.read_bytes() if args == ["-"] else None)
        err = r.stderr.decode()
        assert r.returncode == 3 and r.stdout == b"", err
        assert f"{named}: the JSON document is {size:,} bytes, over the limit of 2 MB (2,097,152 bytes)" in err, err
        assert "COMPACTCTL_MAX_LINE_MB=0" in err and "Traceback" not in err
    rej = tmp_path / "rejects.json"
    r = cli("repair", str(traj), "--on-error", "skip", "--rejects", str(rej), env=env)
    assert r.returncode == 0 and r.stdout == b"" and f"skipped {traj}: the JSON document" in r.stderr.decode(), r.stderr
    assert rej.read_bytes().rstrip(b"\n") == traj.read_bytes().rstrip(b"\n")  # the whole document, as the other document rejects
    for limit in ("4", "0"):
        r = cli("repair", str(traj), env={"COMPACTCTL_MAX_LINE_MB": limit})
        assert r.returncode == 0 and len(read_jsonl(r.stdout)) == 1, r.stderr  # the trajectory, one record
    arr = tmp_path / "rows.json"  # an array of records: its elements can be written as JSONL
    arr.write_bytes(orjson.dumps([{"messages": m} for m in (big["history"], big["history"])]))
    r = cli("repair", str(arr), env=env)
    assert r.returncode == 3 and "the JSON document is" in r.stderr.decode() and "jq -c '.[]'" in r.stderr.decode(), r.stderr
    cut = tmp_path / "cut.jsonl"  # a cut first line, then records: JSONL, each line under the limit
    cut.write_bytes(
        b'{"role":"user","content":"cut\n' + b"\n".join(orjson.dumps({"role": "user", "content": "x" * (1 << 20)}) for _ in range(3))
    )
    r = cli("repair", "--on-error", "skip", str(cut), env=env)
    assert r.returncode == 0 and len(read_jsonl(r.stdout)) == 3 and f"{cut}:1: truncated JSON" in r.stderr.decode(), r.stderr


@pytest.mark.parametrize(
    "line, said",
    [
        (b'{"role":"user","content":"hi"}}', "invalid JSON: Extra data at column 31"),
        (b'{"role":"user","content":"hi",}', "invalid JSON: "),  # Python 3.13's json words it otherwise, at column 30
        (b'{"role":"user","content":"hi","n":1.5.}', "invalid JSON: Expecting ',' delimiter at column 38"),
        (b'{"role":"user","content":"hi","ok":t}', "invalid JSON: Expecting value at column 36"),
        (b'{"role":"user","content":"hi","ok":tr', "truncated JSON"),
        (b'{"role":"user","content":"hi","ok":nul', "truncated JSON"),
        (b'{"role":"user","content":"hi","ok":f', "truncated JSON"),
        (b'{"role":"user","content":"hi","n":-', "truncated JSON"),
        (b'{"role":"user","content":"hi","n":1.', "truncated JSON"),
        (b'{"role":"user","content":"hi","n":1e+', "truncated JSON"),
        (b'{"role":"user","content":"hi \\u00', "truncated JSON"),
        (b'{"role":"user","content":"hi","n":1', "truncated JSON"),
    ],
    ids=[
        "one-brace-too-many",
        "trailing-comma",
        "two-dots",
        "bad-literal",
        "in-true",
        "in-null",
        "in-false",
        "at-sign",
        "at-dot",
        "in-exponent",
        "in-escape",
        "after-number",
    ],
)
def test_a_line_cut_short_is_told_from_one_that_is_wrong(tmp_path, line, said):
    """A line a crash cut (in a literal, a number, an escape) is "truncated JSON"; a line with one character too many
    or a trailing comma is invalid JSON at its column. They were told apart by where json's error stood (the last
    character or after): `{...}}` was "truncated JSON (the line ends early: Extra data)", `"ok":tr` invalid JSON."""
    src = tmp_path / "in.jsonl"
    src.write_bytes(GOOD + line + b"\n")
    r = cli("repair", str(src))
    err = r.stderr.decode()
    assert r.returncode == 3 and r.stdout == b"", err
    assert f"{src}:3: {said}" in err, err
    assert ("truncated" in err) == said.startswith("truncated"), err


@pytest.mark.parametrize("value", ["lots", "-1", "nan", "inf", ""])
def test_a_line_limit_that_is_not_a_size_is_a_usage_error(tmp_path, value):
    src = tmp_path / "in.jsonl"
    src.write_bytes(GOOD)
    r = cli("repair", str(src), env={"COMPACTCTL_MAX_LINE_MB": value})
    assert r.returncode == 2 and r.stdout == b"", r.stderr
    assert f"$COMPACTCTL_MAX_LINE_MB must be a number of megabytes (0: no limit), got {value!r}" in r.stderr.decode()


def test_a_directory_contributes_only_its_transcript_files(tmp_path):
    """Notes, a README or a folder whose name ends in .jsonl beside the transcripts are not inputs."""
    d = tmp_path / "dir"
    (d / "old.jsonl").mkdir(parents=True)  # a folder: its files are read, not it
    (d / "a.jsonl").write_bytes(GOOD)
    (d / "old.jsonl" / "b.json").write_bytes(b"[" + GOOD.strip().replace(b"\n", b",") + b"]")
    (d / "notes.txt").write_bytes(b"not json\n")
    (d / "README.md").write_bytes(b"# transcripts\n")
    r = cli("repair", str(d))
    assert r.returncode == 0, r.stderr
    assert [rec["source"].removeprefix(str(d) + "/") for rec in read_jsonl(r.stdout)] == ["a.jsonl", "old.jsonl/b.json"]


def _parsed(line: bytes):
    from compactctl.jsonl import parse_record

    said: list[str] = []
    value, raw = parse_record(line, "f.jsonl", 7, said.append)
    return value, raw, said


def test_valid_json_orjson_refuses_is_kept_as_written_without_a_surrogate_warning():
    """Nesting deeper than orjson reads (1,024 levels) is valid JSON: where json reads it (Python 3.12's json takes
    deeper nesting than 3.11's recursion limit of 1,000 lets it: raised here), kept as written, and no "lone
    surrogate" warning (there is none: an escaped pair is one character)."""
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(5000)
    deep = b'{"role": "user", "content": "hi \\u00e9 \\ud83d\\ude00", "x": ' + b"[" * 1100 + b"]" * 1100 + b"}"
    try:
        value, raw, said = _parsed(deep)
    finally:
        sys.setrecursionlimit(limit)
    assert (value["content"], raw, said) == ("hi \u00e9 \U0001f600", deep, [])


def test_lone_surrogates_are_replaced_wherever_they_stand():
    """In a list (content parts), in a key, at either end of the surrogate range (U+D800, U+DFFF): replaced by U+FFFD,
    with one warning naming file and line, and the bytes written back encode."""
    line = b'{"role": "user", "content": [{"type": "text", "text": "a \\udfff"}, "b \\ud800"], "k\\udbff": ["\\udc00"]}'
    value, raw, said = _parsed(line)
    assert value == {"role": "user", "content": [{"type": "text", "text": "a \ufffd"}, "b \ufffd"], "k\ufffd": ["\ufffd"]}
    assert orjson.loads(raw) == value
    assert said == ["f.jsonl:7: lone UTF-16 surrogate replaced by U+FFFD"]


def test_integers_beside_a_surrogate_are_read_as_orjson_reads_them():
    """A record with a lone surrogate and an integer beyond 64 bits: the line keeps each integer exact, the value holds
    what orjson reads from it (an integer within its range, the nearest float beyond), as for any other record."""
    ints = [-(2**63) - 1, -(2**63), -5, 0, 7, 2**63, 2**64 - 1, 2**64]
    body = b'{"role": "user", "content": "caf\xc3\xa9", "n": [' + ", ".join(map(str, ints)).encode() + b"]"
    value, raw, said = _parsed(body + b', "s": "\\ud800"}')
    want = orjson.loads(body + b', "s": "\\ufffd"}')
    assert [type(v) for v in value["n"]] == [type(v) for v in want["n"]] == [float, int, int, int, int, int, int, float]
    assert value == want and said
    assert orjson.loads(raw.replace(b"18446744073709551616", b"0").replace(b"-9223372036854775809", b"0"))["s"] == "\ufffd"
    assert b"18446744073709551616" in raw and b"-9223372036854775809" in raw  # exact in the line
    assert '"café"'.encode() in raw  # UTF-8, as orjson writes every other line (not an escape)


def test_an_integer_no_float_holds_is_named_in_the_error(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(GOOD + b'{"role":"user","content":"hi","n":-' + b"1234567890" * 40 + b"}\n")
    r = cli("repair", str(src))
    assert r.returncode == 3, r.stderr
    assert f"{src}:3: invalid JSON: the number -12345678901... (400 digits) is not finite" in r.stderr.decode(), r.stderr


def test_a_device_side_file_gets_its_lines_and_stdout_only_the_records(tmp_path):
    """--rejects to a device (/dev/null, or one of the test's own) is written there, spooled and copied once: not to
    standard output among the records, and the device stays a device."""
    import stat

    null = own_device(tmp_path, "/dev/null")
    src = tmp_path / "in.jsonl"
    src.write_bytes(GOOD + b"not json\n")
    r = cli("repair", str(src), "--on-error", "skip", "--rejects", null)
    assert r.returncode == 0 and r.stdout == GOOD, r.stderr
    assert stat.S_ISCHR(os.stat(null).st_mode)


def test_an_output_whose_folder_cannot_be_written_is_named_with_the_reason(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(GOOD)
    out = tmp_path / "no-such-folder" / "out.jsonl"
    r = cli("repair", str(src), "-o", str(out))
    assert r.returncode == 4 and r.stdout == b""
    assert f"compactctl: error: {out}: cannot write here (No such file or directory)" in r.stderr.decode(), r.stderr
    from compactctl.errors import IOFailure
    from compactctl.jsonl import Output

    with pytest.raises(IOFailure) as e:  # a side file's output (repair -o FILE above is a journaled part file)
        Output(str(out))
    assert str(e.value) == f"{out}: cannot write here (No such file or directory)"


def test_an_unspooled_output_on_stdout_streams(monkeypatch):
    """With --on-error skip, records go to standard output as they come (a pipe's next stage starts at once; what was
    written before a fatal error stays written): Output(None, spool=False) writes through, not at commit."""
    import io
    import sys

    from compactctl.jsonl import Output

    fake = io.TextIOWrapper(io.BytesIO())
    monkeypatch.setattr(sys, "stdout", fake)
    out = Output(None, spool=False)
    assert out.streams
    out.write(b"first\n")
    assert fake.buffer.getvalue() == b"first\n"
    out.commit()
    assert fake.buffer.getvalue() == b"first\n"


def test_an_open_descriptor_is_known_by_any_of_its_names(tmp_path):
    """/dev/fd/N, /proc/self/fd/N and /dev/stdout (a link to one) name an open file of this process: written in place,
    through the descriptor (never a part file renamed over the name); a regular file, or a link to one, is not."""
    from compactctl.jsonl import descriptor, in_place

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc/self/fd")
    assert descriptor("/dev/fd/5") == 5 and descriptor("/proc/self/fd/12") == 12
    if os.path.islink("/dev/stdout"):
        assert descriptor("/dev/stdout") == 1 and descriptor("/dev/stderr") == 2
    link = tmp_path / "out"
    link.symlink_to("/proc/self/fd/7")
    assert descriptor(str(link)) == 7
    plain = tmp_path / "plain.jsonl"
    plain.write_bytes(GOOD)
    (tmp_path / "to-plain").symlink_to(plain)
    assert descriptor(str(plain)) is None and descriptor(str(tmp_path / "to-plain")) is None
    assert not in_place(str(plain)) and not in_place(str(tmp_path / "new.jsonl"))
    with open(plain, "rb") as f:
        assert in_place(f"/dev/fd/{f.fileno()}")
