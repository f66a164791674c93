"""The library's calls (compactctl/api.py) as a Python user makes them."""

from __future__ import annotations

import warnings

import pytest

import compactctl

from .conftest import SAMPLES


def test_read_takes_one_path_or_several_as_str_or_pathlib():
    """`read("s.jsonl")` read the characters of the name as paths ("s: no such file or directory"), and
    `read([Path(...)])` raised AttributeError ('PosixPath' object has no attribute 'endswith')."""
    src = SAMPLES / "long_session.jsonl"
    want = compactctl.write(compactctl.read([str(src)])[0])
    for paths in (src, str(src), [src], (src,), (p for p in [src])):
        [t] = compactctl.read(paths)
        assert compactctl.write(t) == want
    assert len(compactctl.read([SAMPLES / "dataset.jsonl", str(src)])) == len(compactctl.read([str(SAMPLES / "dataset.jsonl")])) + 1


def test_read_of_no_path_reads_nothing_not_stdin(monkeypatch):
    """An empty list (a glob that matched nothing) read standard input, as the command line does with no file."""

    class NoStdin:
        buffer = property(lambda self: pytest.fail("read standard input"))

    monkeypatch.setattr("sys.stdin", NoStdin())
    assert compactctl.read([]) == []


def test_read_says_what_it_skips_as_a_python_warning_not_on_stderr(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": [{"role": "user", "content": "hi"}]}\nnot json\n')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert len(compactctl.read([bad], on_error="skip")) == 1
    assert [str(w.message) for w in caught] == [f"skipped {bad}:2: invalid JSON: Expecting value at column 1"]
    assert capsys.readouterr() == ("", "")
    said: list[str] = []
    compactctl.read([bad], on_error="skip", warn=said.append)  # or to a function of one's own
    assert len(said) == 1


def test_restore_file_takes_pathlib_paths(tmp_path):
    """`restore_file(Path, Path, Path)` raised AttributeError ('PosixPath' object has no attribute 'lower')."""
    from .conftest import cli

    src = SAMPLES / "long_session.jsonl"
    out, arch = tmp_path / "c.jsonl", tmp_path / "c.arch.jsonl"
    assert cli("compact", str(src), "--context-window", "8000", "-o", str(out), "--archive", str(arch), "-q").returncode == 0
    compactctl.restore_file(out, arch, tmp_path / "r.jsonl")
    assert (tmp_path / "r.jsonl").read_bytes() == src.read_bytes()
