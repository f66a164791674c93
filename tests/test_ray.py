"""Ray Data on a local Ray (2 CPUs, 127.0.0.1), datasets.map, and the same records on every path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

pytest.importorskip("ray", reason="the ray extra is not installed (make install installs it)")

import ray  # noqa: E402
import ray.data  # noqa: E402

import compactctl  # noqa: E402
from compactctl import ray as cray  # noqa: E402
from compactctl.cli import app  # noqa: E402

from .conftest import ROOT, cli, tool_session  # noqa: E402

LIB = {"context_window": 6000, "summaries": False, "summary_min": 500}
OPTS = ["--context-window", "6000", "--no-summaries", "--summary-min", "500", "--on-error", "skip"]


@pytest.fixture(scope="module")
def local_ray():
    cray.init(num_cpus=2)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("ray") / "in"
    d.mkdir()
    gen = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "gen.py"), "dataset", "--seed", "5", "--mb", "0.4", "--turns", "8", "--scale", "0.3"],
        capture_output=True,
        check=True,
    ).stdout
    lines = gen.split(b"\n")[:-1]
    lines.insert(4, b'{"messages": [{"role": "user", "content": "truncated')
    (d / "a.jsonl").write_bytes(b"\n".join(lines[:15]) + b"\n")
    (d / "b.jsonl").write_bytes(b"\n".join(lines[15:]) + b"\n")
    return d


def test_same_records_on_every_path(local_ray, data, tmp_path, monkeypatch):
    """CLI (one process), --workers 2, Ray (the CLI engine and map_batches), the library: the same bytes."""
    monkeypatch.setattr(cray, "MIN_RANGE", 10_000)  # several byte ranges per file
    outs = {}
    for w in ("1", "2"):
        r = cli("compact", str(data), *OPTS, "-o", f"{tmp_path}/w{w}/", "--workers", w, "-q", "--report", f"{tmp_path}/w{w}.rep")
        assert r.returncode == 0, r.stderr
        outs[f"workers {w}"] = {p.name: p.read_bytes() for p in (tmp_path / f"w{w}").iterdir()}
    # the CLI's --engine ray, in this process so that it joins the Ray started above
    app(
        [
            "compact",
            str(data),
            *OPTS,
            "-o",
            f"{tmp_path}/ray/",
            "--engine",
            "ray",
            "--workers",
            "2",
            "-q",
            "--rejects",
            str(tmp_path / "rejects"),
            "--report",
            str(tmp_path / "ray.rep"),
        ],
        standalone_mode=False,
    )
    outs["ray engine"] = {p.name: p.read_bytes() for p in (tmp_path / "ray").iterdir()}
    assert (tmp_path / "rejects").read_bytes().startswith(b'{"messages": [{"role": "user", "content": "truncated')
    c = compactctl.Compactor(**LIB)
    lib = {}
    for name in ("a.jsonl", "b.jsonl"):
        got = [c.compact(ln) for ln in (data / name).read_bytes().split(b"\n") if ln]
        lib[name] = b"".join(orjson.dumps(r.record) + b"\n" for r in got if r.status != "error")
    assert [orjson.loads(x) for x in lib["a.jsonl"].splitlines()] == [orjson.loads(x) for x in outs["workers 1"]["a.jsonl"].splitlines()]
    ds = ray.data.from_items(
        [{"text": ln.decode()} for name in ("a.jsonl", "b.jsonl") for ln in (data / name).read_bytes().split(b"\n") if ln]
    )
    rows = ds.map_batches(
        cray.CompactBatch, fn_constructor_kwargs={"options": LIB}, compute=ray.data.ActorPoolStrategy(size=2), batch_size=4, num_cpus=1
    ).take_all()
    outs["map_batches"] = b"".join(r["text"].encode() + b"\n" for r in rows if r["compactctl_status"] != "error")
    ref = outs["workers 1"]
    assert outs["workers 2"] == ref and outs["ray engine"] == ref and set(ref) == {"a.jsonl", "b.jsonl"}
    assert (tmp_path / "ray.rep").read_bytes() == (tmp_path / "w1.rep").read_bytes()  # file.jsonl#N, as the local engine names them
    assert outs["map_batches"] == ref["a.jsonl"] + ref["b.jsonl"]
    statuses = [r["compactctl_status"] for r in rows]
    assert statuses.count("error") == 1 and "compacted" in statuses and "not-needed" in statuses
    for r in rows:
        rep = orjson.loads(r["compactctl_report"])
        assert rep["status"] == r["compactctl_status"]


def test_map_batches_on_record_columns_never_fails(local_ray):
    rows = [
        {"messages": tool_session(30, 3000), "id": "long"},
        {"messages": tool_session(1, 50), "id": "short"},
        {"messages": [{"content": "no role"}], "id": "bad"},
    ]
    ds = ray.data.from_items(rows)
    for fmt in ("numpy", "pandas", "pyarrow"):
        out = ds.map_batches(
            cray.CompactBatch,
            fn_constructor_kwargs={"options": LIB, "column": None},
            batch_format=fmt,
            compute=ray.data.ActorPoolStrategy(size=1),
            batch_size=2,
        ).take_all()
        by_id = {r["id"]: r for r in out}
        assert set(by_id) == {"long", "short", "bad"}
        assert [by_id[k]["compactctl_status"] for k in ("long", "short", "bad")] == ["compacted", "not-needed", "error"], fmt
        assert set(out[0]) == {"messages", "id", "compactctl_status", "compactctl_report"}
        long = [m for m in by_id["long"]["messages"]]
        assert len(long) < len(rows[0]["messages"]) and any("summary" in str(m.get("content", "")).lower() for m in long)


def test_datasets_map_example(data):
    datasets = pytest.importorskip("datasets")  # installed by `make install` (the hf extra)
    lines = [ln.decode() for ln in (data / "a.jsonl").read_bytes().split(b"\n") if ln]
    ds = datasets.Dataset.from_dict({"text": lines})
    out = ds.map(cray.CompactBatch(LIB), batched=True, batch_size=4, num_proc=2, load_from_cache_file=False)
    assert out.column_names == ["text", "compactctl_status", "compactctl_report"]
    ok = [t for t, s in zip(out["text"], out["compactctl_status"], strict=True) if s != "error"]
    c = compactctl.Compactor(**LIB)
    assert ok == [c.compact_line(ln.encode())[0].decode() for ln in lines if c.compact(ln).status != "error"]
    assert out["compactctl_status"].count("error") == 1


def test_byte_ranges_give_every_line_once(tmp_path):
    """The Ray engine's read: ranges that tile a file give its non-blank lines once, in order, as the local
    reader gives them (BOM, CRLF, blank lines, a line longer than a range, no final newline), wherever it cuts."""
    from compactctl.jsonl import iter_lines

    f = tmp_path / "x.jsonl"
    f.write_bytes(b'\xef\xbb\xbf{"a": 1}\r\n\n  \n{"b": "' + b"x" * 40 + b'"}\n{"c": "\xe2\x80\xa8"}\r\n\n{"d": 4}')
    with open(f, "rb") as fh:
        want = [ln for _, ln in iter_lines(fh)]
    size = f.stat().st_size
    for chunk in (1, 2, 3, 7, 11, size - 1, size, size + 5):
        got = [ln for a in range(0, size, chunk) for ln in cray.range_lines(str(f), a, min(a + chunk, size))]
        assert got == want, chunk


def test_plan_ranges_tile_the_files_large_first(tmp_path):
    """Guided self-scheduling: the ranges tile every file in order; large first, smaller toward the end."""
    files = []
    for name, size in (("a", 3_000_000), ("b", 10), ("c", 0), ("d", 700_000)):
        (tmp_path / name).write_bytes(b"x" * size)
        files.append(str(tmp_path / name))
    ranges = cray.plan_ranges(files, 2, min_bytes=50_000, max_bytes=600_000)
    for f in files:
        mine = [(a, b) for p, a, b in ranges if p == f]
        size = Path(f).stat().st_size
        assert [a for a, _ in mine] == ([0] + [b for _, b in mine[:-1]] if size else []) and (mine[-1][1] if mine else 0) == size
    assert [p for p, _, _ in ranges] == sorted(p for p, _, _ in ranges)  # file order
    sizes = [b - a for _, a, b in ranges]
    assert sizes[0] == 600_000 and max(sizes) == 600_000  # (3 MB + 0.7 MB) / 4, capped
    in_a = sizes[: len([r for r in ranges if r[0] == files[0]]) - 1]  # file a but its remainder
    assert in_a == sorted(in_a, reverse=True) and in_a[-1] < in_a[0] / 2  # less and less
    assert sizes[-2] == 50_000 and min(s for s in sizes if s != 10) >= 25_000  # no sliver at the end of a file
    assert [b - a for _, a, b in cray.plan_ranges([files[0]], 2)] == [1 << 20, 1 << 20, 3_000_000 - (2 << 20)]
    (tmp_path / "e").write_bytes(b"x" * 1_400_000)
    assert cray.plan_ranges([str(tmp_path / "e")], 2) == [(str(tmp_path / "e"), 0, 1_400_000)]  # 1 MB + a sliver: one


def test_compact_batch_keeps_one_compactor_per_process(monkeypatch):
    """Built once and reused within a run; another run (or other options) replaces it: a worker never holds
    two token-count memos, and a run never starts with the memo of the one before (as with --workers)."""
    import pyarrow as pa

    monkeypatch.setattr(cray, "_PER_PROCESS", {})
    line = orjson.dumps({"messages": tool_session(1, 50)})
    batch = pa.table({"text": pa.array([line], pa.binary())})
    out = cray.compact_batch(batch, LIB, "text", "run-1")
    assert out.column("compactctl_status").to_pylist() == ["not-needed"]
    (first,) = cray._PER_PROCESS.values()
    cray.compact_batch(batch, LIB, "text", "run-1")
    assert list(cray._PER_PROCESS.values()) == [first]
    cray.compact_batch(batch, LIB, "text", "run-2")
    assert len(cray._PER_PROCESS) == 1 and next(iter(cray._PER_PROCESS.values())) is not first
    cray.compact_batch(batch, {**LIB, "context_window": 7000}, "text")
    assert len(cray._PER_PROCESS) == 1


def test_engine_reports_name_transcripts_as_the_local_engine(tmp_path, monkeypatch):
    """The Ray engine's read tasks and its driver, without Ray: in several byte ranges, each report names its
    transcript file.jsonl#N as the local engine does (N counts the file's lines that are JSON objects,
    bad ones included; blank lines, invalid JSON and non-objects are not counted)."""
    monkeypatch.setattr(cray, "_PER_PROCESS", {})
    long = orjson.dumps({"messages": tool_session(30, 3000)})
    lines = [
        long,
        b'{"messages": [{"role": "user", "content": "truncated',
        b'{"messages": [{"role": "user"}]}',
        b"",
        orjson.dumps({"messages": tool_session(1, 50)}),
        b"[1, 2]",
        long,
    ]
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (src / "b.jsonl").write_bytes(long + b"\n")
    cli_rep, ray_rep = tmp_path / "cli.rep", tmp_path / "ray.rep"
    r = cli("compact", str(src), *OPTS, "-o", f"{tmp_path}/cli/", "--report", str(cli_rep), "-q")
    assert r.returncode == 0, r.stderr
    names = {str((src / n).resolve()): str(src / n) for n in ("a.jsonl", "b.jsonl")}
    options = compactctl.Options(**LIB, count_tokens=True)
    ranges = cray.plan_ranges(sorted(names), 1, min_bytes=2_000, max_bytes=len(long) // 2)
    assert len([p for p, _, _ in ranges if p.endswith("a.jsonl")]) >= 4
    tables = [t for p, a, b in ranges for t in cray._compact_range(p, a, b, options, 2, "run", names[p])]
    rows = [row for t in tables for row in t.to_pylist()]
    targets = {p: str(tmp_path / "ray" / Path(p).name) for p in names}
    stats = {"records": 0, "errors": 0, "shards": 0}
    cray._write(iter(rows), targets, str(ray_rep), None, stats, names)
    assert stats == {"records": 7, "errors": 3, "shards": 2}
    assert ray_rep.read_bytes() == cli_rep.read_bytes()
    assert [orjson.loads(x)["transcript"][len(str(src)) :] for x in ray_rep.read_bytes().splitlines()] == [
        "/a.jsonl#1",
        "/a.jsonl#3",
        "/a.jsonl#4",
        "/b.jsonl#1",
    ]
    assert {p.name: p.read_bytes() for p in (tmp_path / "ray").iterdir()} == {p.name: p.read_bytes() for p in (tmp_path / "cli").iterdir()}


def test_an_input_whose_every_row_is_an_error_gets_no_file(tmp_path, monkeypatch):
    """The driver wrote an empty file for an input whose every row is an error, as the local engine did under
    --on-error skip; as the local engine now, it writes none, and an earlier run's file there goes."""
    monkeypatch.setattr(cray, "_PER_PROCESS", {})
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.jsonl").write_bytes(b'{"messages": [{"role": "user"}]}\n{"messages": [{"role": "wizard", "content": "x"}]}\nnot json\n')
    (src / "b.jsonl").write_bytes(orjson.dumps({"messages": tool_session(30, 3000)}) + b"\n")
    r = cli("compact", str(src), *OPTS, "-o", f"{tmp_path}/cli/", "-q")
    assert r.returncode == 0, r.stderr
    names = {str((src / n).resolve()): str(src / n) for n in ("a.jsonl", "b.jsonl")}
    tables = [
        t
        for p, a, b in cray.plan_ranges(sorted(names), 1)
        for t in cray._compact_range(p, a, b, compactctl.Options(**LIB), 2, "run", names[p])
    ]
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "a.jsonl").write_bytes(b"an earlier run's\n")
    stats = {"records": 0, "errors": 0, "shards": 0}
    targets = {p: str(tmp_path / "ray" / Path(p).name) for p in names}
    cray._write(iter(row for t in tables for row in t.to_pylist()), targets, None, None, stats, names)
    assert stats == {"records": 4, "errors": 3, "shards": 1}
    assert {p.name: p.read_bytes() for p in (tmp_path / "ray").iterdir()} == {p.name: p.read_bytes() for p in (tmp_path / "cli").iterdir()}
    assert sorted(p.name for p in (tmp_path / "cli").iterdir()) == ["b.jsonl"]


def test_an_input_that_gives_no_row_gets_no_file_and_is_said(tmp_path, capsys):
    """An empty input gave Ray no row, so the driver never saw it: an earlier run's file at its place stayed and
    passed for this run's output, and nothing was said (the local engine removes it and says so)."""
    empty, full = str(tmp_path / "in" / "empty.jsonl"), str(tmp_path / "in" / "full.jsonl")
    out = tmp_path / "ray"
    out.mkdir()
    (out / "empty.jsonl").write_bytes(b"an earlier run's\n")
    targets = {empty: str(out / "empty.jsonl"), full: str(out / "full.jsonl")}
    row = {"path": full, "text": b'{"messages": []}', cray.STATUS: "ok", cray.REPORT: "{}", cray.COUNTED: True}
    stats = {"records": 0, "errors": 0, "shards": 0}
    cray._write(iter([row]), targets, None, None, stats, {empty: "in/empty.jsonl", full: "in/full.jsonl"}, quiet=False)
    assert sorted(p.name for p in out.iterdir()) == ["full.jsonl"]
    assert f"in/empty.jsonl: gives no transcript: no output file for it ({out / 'empty.jsonl'})" in capsys.readouterr().err


def test_skipped_lines_are_said_per_input_also_quiet(tmp_path, monkeypatch, capsys):
    """`compact DIR/ -o out/ --engine ray -q` left each bad line out without a word (the local engine says each,
    `-q` or not): a session file (a message per line: no dataset) gave 150 errors, no output file and exit 0, said
    only in the closing count, which `-q` silences. Each input with lines left out is said now, `-q` or not: how
    many, and the first one's reason."""
    monkeypatch.setattr(cray, "_PER_PROCESS", {})
    src = tmp_path / "in"
    src.mkdir()
    (src / "s.jsonl").write_bytes((ROOT / "sample_transcripts" / "long_session.jsonl").read_bytes())
    (src / "a.jsonl").write_bytes(orjson.dumps({"messages": tool_session(1, 50)}) + b"\n\nnot json\n")
    names = {str((src / n).resolve()): str(src / n) for n in ("a.jsonl", "s.jsonl")}
    tables = [
        t
        for p, a, b in cray.plan_ranges(sorted(names), 1)
        for t in cray._compact_range(p, a, b, compactctl.Options(**LIB), 8, "run", names[p])
    ]
    stats = {"records": 0, "errors": 0, "shards": 0}
    targets = {p: str(tmp_path / "ray" / Path(p).name) for p in names}
    cray._write(iter(row for t in tables for row in t.to_pylist()), targets, None, None, stats, names, quiet=True)
    assert stats == {"records": 152, "errors": 151, "shards": 1}
    err = capsys.readouterr().err
    assert f"compactctl: {src / 'a.jsonl'}: 1 of its 2 lines left out (the first: invalid JSON: Expecting value" in err
    assert f"compactctl: {src / 's.jsonl'}: 150 of its 150 lines left out (the first: this is one message, not a transcript" in err
