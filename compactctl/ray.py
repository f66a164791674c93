"""Ray Data: compact datasets past one machine (the `ray` extra: `pip install '.[ray]'` in a checkout).

    import ray, compactctl.ray
    ds = ray.data.read_text("s3://bucket/trajectories/")            # one transcript per line: column "text"
    out = ds.map_batches(compactctl.ray.CompactBatch, fn_constructor_kwargs={"options": {"context_window": 32_000}},
                         compute=ray.data.ActorPoolStrategy(size=16), batch_size=16)

`CompactBatch` builds its `Compactor` (encoding, summarizer) once per actor. Its output has the input's
columns, the transcript compacted in place, plus `compactctl_status` (compacted, not-needed, cannot-fit,
error, ...) and `compactctl_report` (the report as a JSON string). A bad record never fails the job: it
keeps its input value and gets status "error".

Two ways to give it transcripts: a column of JSON lines (`column="text"`, what `read_text` gives:
lossless, the compacted line is the same bytes the CLI writes), or rows whose columns are the record's
keys (`column=None`, e.g. `from_items([{"messages": [...]}, ...])`; values come back through Arrow, which
may add null keys to messages).

`compactctl compact --engine ray IN... -o OUT/` runs this over JSONL files cut into byte ranges (one Ray
task reads and compacts each range) and writes one output file per input file under OUT/ (the same files,
byte for byte, as `compactctl compact IN... -o OUT/`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from .errors import CompactError, UsageError
from .record import Compactor, Options

STATUS = "compactctl_status"
REPORT = "compactctl_report"


def _options(options: Options | dict | None) -> Options:
    if isinstance(options, Options):
        return options
    return Options.from_kwargs(None, **(options or {}))


class CompactBatch:
    """A callable class for `Dataset.map_batches` (also for `datasets.Dataset.map(batched=True)`)."""

    def __init__(self, options: Options | dict | None = None, column: str | None = "text"):
        self.options = _options(options)
        self.column = column
        self._compactor: Compactor | None = None

    @property
    def compactor(self) -> Compactor:
        if self._compactor is None:  # once per worker (a Ray actor, a datasets process)
            self._compactor = Compactor(self.options)
        return self._compactor

    def __getstate__(self) -> dict:  # shipped to workers without the loaded encoding
        return {"options": self.options, "column": self.column, "_compactor": None}

    def __call__(self, batch: Any) -> Any:
        kind, cols = _columns(batch)
        n = len(next(iter(cols.values()))) if cols else 0
        out = {k: list(v) for k, v in cols.items()}
        status: list[str] = []
        report: list[str] = []
        for i in range(n):
            if self.column is not None:
                value = out[self.column][i]
                new, res = _compact_line(self.compactor, value)
                if new is not None:
                    out[self.column][i] = new.decode() if isinstance(value, str) else new
            else:
                try:
                    res = self.compactor.compact({k: _py(v[i]) for k, v in cols.items() if k not in (STATUS, REPORT)})
                except Exception as e:  # noqa: BLE001 -- a bad record never fails the job
                    res = _crashed(e)
                if res.record is not None:
                    for k in out:
                        if k in res.record:
                            out[k][i] = res.record[k]
            status.append(res.status)
            report.append(orjson.dumps(res.report).decode())
        out[STATUS] = status
        out[REPORT] = report
        return _like(kind, out)


def _compact_line(compactor: Compactor, value: Any, *where: Any) -> tuple[bytes | None, Any]:
    """`compactor.compact_line` of a line (bytes, or text); a bad record never fails the job: its error is its result."""
    try:
        return compactor.compact_line(value.encode() if isinstance(value, str) else bytes(value), *where)
    except Exception as e:  # noqa: BLE001
        return None, _crashed(e)


_PER_PROCESS: dict[tuple, CompactBatch] = {}


def compact_batch(batch: Any, options: Options | dict | None = None, column: str | None = "text", run: str | None = None) -> Any:
    """The same as a function, for Ray tasks (`map_batches(compact_batch, fn_kwargs=...)`): the Compactor is
    built once per worker process and kept while the process lives (Ray reuses its task workers), one at a
    time: other options (or another `run`: the CLI engine gives each run its own Compactor, as `--workers`
    does) replace it, so a worker never holds the token-count memo of more than one."""
    return _per_process(options, column, run)(batch)


def _per_process(options: Options | dict | None, column: str | None, run: str | None) -> CompactBatch:
    key = (repr(_options(options)), column, run)
    fn = _PER_PROCESS.get(key)
    if fn is None:
        _PER_PROCESS.clear()
        fn = _PER_PROCESS[key] = CompactBatch(options, column)
    return fn


def _columns(batch: Any) -> tuple[str, dict[str, Any]]:
    if not isinstance(batch, dict) and isinstance(batch, Mapping):  # datasets' LazyBatch: lists in, lists out
        return "lists", {k: list(batch[k]) for k in batch}
    if isinstance(batch, dict):
        return "dict", {
            k: (v.tolist() if hasattr(v, "tolist") and getattr(v, "dtype", None) is not None and v.dtype != object else v)
            for k, v in batch.items()
        }
    mod = type(batch).__module__
    if mod.startswith("pandas"):
        return "pandas", {k: batch[k].tolist() for k in batch.columns}
    if mod.startswith("pyarrow"):
        return "pyarrow", batch.to_pydict()
    raise TypeError(f"unsupported batch type {type(batch).__name__}: use batch_format='numpy', 'pandas' or 'pyarrow'")


def _like(kind: str, cols: dict[str, list]) -> Any:
    if kind == "pandas":
        import pandas as pd

        return pd.DataFrame(cols)
    if kind == "pyarrow":
        import pyarrow as pa

        return pa.Table.from_pydict(cols)
    if kind == "lists":
        return cols
    import numpy as np

    out = {}
    for k, v in cols.items():
        a: Any = np.empty(len(v), dtype=object)
        a[:] = v
        out[k] = a
    return out


def _py(v: Any) -> Any:
    """Numpy values from Arrow back to plain Python (arrays to lists, recursively)."""
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):
        v = v.tolist()
    if isinstance(v, dict):
        return {k: _py(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_py(x) for x in v]
    return v


# -- the CLI engine ----------------------------------------------------------------------------


def init(address: str | None = None, num_cpus: int | None = None) -> None:
    """Join the cluster at `address`, or start a local Ray on 127.0.0.1 (no dashboard)."""
    import logging

    import ray

    if ray.is_initialized():
        return
    if address:
        ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
    else:
        cpus = num_cpus or os.cpu_count() or 1
        ray.init(num_cpus=cpus, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False, logging_level=logging.WARNING)
        # Ray starts its task workers bare: each imports Ray Data and compactctl at its first task (~2 s here).
        # Done now, without waiting, it overlaps the driver's own set-up (importing Ray Data, starting its
        # executor's actors), and the first run's tasks start at once.
        warm = ray.remote(num_cpus=1)(_warm_worker)
        for _ in range(cpus):
            warm.remote()


def _warm_worker() -> None:
    import contextlib

    import pyarrow  # noqa: F401
    import ray.data  # noqa: F401

    with contextlib.suppress(Exception):  # only a warm-up: a real run reports what is wrong
        Compactor(Options.from_kwargs(None))  # the modules a Compactor loads (encoding, summarizer)


def run_files(
    inputs: list[str],
    output: str | None,
    options: Options,
    address: str | None = None,
    workers: int | None = None,
    report: str | None = None,
    rejects: str | None = None,
    quiet: bool = False,
    batch_size: int = 8,
) -> dict[str, int]:
    """Compact JSONL datasets (one transcript per line) with Ray Data; one output file per input under `output`.

    As `compact --on-error skip`: a record that cannot fit is written pruned and repaired; a bad line
    is left out of the output (its raw text goes to `rejects`) and counted."""
    from .jsonl import expand_inputs
    from .runner import IOOptions, _targets, check_collisions

    if not output or not (output.endswith(os.sep) or os.path.isdir(output)):
        raise UsageError("--engine ray writes one file per input: give -o DIR/")
    if not inputs or "-" in inputs:
        raise UsageError("--engine ray reads files or directories, not stdin")
    files = expand_inputs(inputs)
    targets = _targets(inputs, output)
    check_collisions(files, IOOptions(output=output, report=report, rejects=rejects), targets, True)
    # Ray Data fetches each finished block's metadata on a background thread by default (ray 2.60); fetched
    # inline, a task's end is seen sooner: 0.06-0.08 s instead of 0.16-0.17 s between one task's end and the
    # next one's start on a worker (measured here). Read when ray.data is first imported in this process.
    os.environ.setdefault("RAY_DATA_METADATA_PREFETCH_ON_THREAD", "0")
    try:
        import ray
        import ray.data
    except ImportError as e:
        raise UsageError(
            f"--engine ray needs Ray Data: pip install '.[ray]' in a compactctl checkout, or pip install 'ray[data]' ({e})"
        ) from e
    if not quiet:
        os.environ.setdefault("RAY_DATA_DISABLE_PROGRESS_BARS", "1")
    init(address, workers)
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True  # the output in input order, as the local engine writes it
    ctx.enable_progress_bars = not quiet
    paths = [os.path.abspath(f) for f in files]
    cpus = workers or int(ray.cluster_resources().get("CPU", 1))
    # The files cut into byte ranges; one Ray task per range reads its lines and compacts them (Ray keeps its
    # task workers from task to task and run to run; each builds one Compactor per run). Nothing is read on
    # the driver, no whole file is held anywhere, and compaction starts with the first range.
    names = {os.path.abspath(f): f for f in files}  # as the local engine names the transcripts: file.jsonl#3
    source = jsonl_ranges(plan_ranges(paths, cpus), options, batch_size, names)
    by_abs = {os.path.abspath(f): targets[f] for f in files}
    stats = {"records": 0, "errors": 0, "shards": 0}
    if not source.ranges:  # empty files only
        return _write(iter(()), by_abs, report, rejects, stats, names, quiet)
    out = ray.data.read_datasource(
        source, num_cpus=1, override_num_blocks=len(source.ranges), **({"concurrency": workers} if workers else {})
    )
    return _write(_rows(out), by_abs, report, rejects, stats, names, quiet)


MIN_RANGE = 1 << 20
MAX_RANGE = 128 << 20


def plan_ranges(paths: list[str], cpus: int, min_bytes: int | None = None, max_bytes: int | None = None) -> list[tuple[str, int, int]]:
    """The files cut into byte ranges, in order, one Ray task each. Guided self-scheduling: each range is the
    bytes still to plan / (2 x CPUs), within [min_bytes, max_bytes] (1-128 MB): large ranges first (few tasks: Ray Data
    spends ~0.1 s between one task's end and the next one's start on each worker), smaller and smaller ones
    toward the end (the last ones end close together: a short tail where one CPU idles)."""
    lo, hi = min_bytes or MIN_RANGE, max_bytes or MAX_RANGE
    sizes = [(p, os.path.getsize(p)) for p in paths]
    left = sum(size for _, size in sizes)
    out: list[tuple[str, int, int]] = []
    for p, size in sizes:
        a = 0
        while a < size:
            b = a + min(hi, max(lo, left // (2 * max(cpus, 1))))
            if size - b < lo // 2:  # no sliver of a range at the end of a file
                b = size
            out.append((p, a, b))
            left -= b - a
            a = b
    return out


def range_lines(path: str, start: int, end: int) -> Iterator[bytes]:
    """The non-blank lines of `path` that begin in [start, end), without their ending (and the file's BOM),
    one at a time: ranges that tile a file give each line once, in order, as the local engine reads them."""
    from .jsonl import BOM

    with open(path, "rb") as f:
        if start > 0:
            f.seek(start - 1)
            if f.read(1) != b"\n":
                f.readline()  # the rest of a line that began in the range before
        while (pos := f.tell()) < end:
            line = f.readline()
            if not line:
                break
            if pos == 0 and line.startswith(BOM):
                line = line[len(BOM) :]
            line = line.rstrip(b"\n").rstrip(b"\r")
            if line.strip():
                yield line


# A record's number in its file is known on the driver only (it sees every range's rows in order): a task names
# each transcript NAME#? and the driver puts the number in its report (`_numbered`).
PENDING = "?"


def _compact_range(path: str, start: int, end: int, options: Options, batch_size: int, run: str, name: str | None = None) -> Iterator[Any]:
    """One range's lines, compacted: tables of path, text (the output line, or the input line when status
    is "error"), status, report (the transcript named `name`#?, `name` being the file as the local engine
    names it) and counted (the line is a JSON object: the local engine counts it in the numbers of the
    file's transcripts); `batch_size` lines at a time (Ray Data moves each table on as it comes), read as
    they are needed (a range is never held whole)."""
    import pyarrow as pa

    compactor = _per_process(options, "text", run).compactor
    source = name or path

    def table(part: list[bytes]) -> Any:
        cols: dict[str, list] = {"text": [], STATUS: [], REPORT: [], COUNTED: []}
        for line in part:
            new, res = _compact_line(compactor, line, source, PENDING)
            cols["text"].append(line if new is None else new)
            cols[STATUS].append(res.status)
            cols[REPORT].append(orjson.dumps(res.report).decode())
            cols[COUNTED].append(res.status != "error" or _is_object(line))
        return pa.table(
            {
                "path": pa.array([path] * len(part), pa.string()),
                "text": pa.array(cols["text"], pa.binary()),
                STATUS: pa.array(cols[STATUS], pa.string()),
                REPORT: pa.array(cols[REPORT], pa.string()),
                COUNTED: pa.array(cols[COUNTED], pa.bool_()),
            }
        )

    part: list[bytes] = []
    for line in range_lines(path, start, end):
        part.append(line)
        if len(part) >= max(batch_size, 1):
            yield table(part)
            part = []
    if part:
        yield table(part)


COUNTED = "counted"


def _is_object(line: bytes) -> bool:
    """The line reads as a JSON object (as the local reader reads it)."""
    from .jsonl import parse_record

    try:
        return isinstance(parse_record(line, "", 0)[0], dict)
    except CompactError:
        return False


def _crashed(e: Exception) -> Any:
    from .record import CompactResult

    return CompactResult("error", "", None, {"status": "error", "reason": f"{type(e).__name__}: {e}"}, str(e))


def _numbered(report: str, name: str, n: int) -> str:
    """The report with its transcript named `name#n` instead of `name#?` (in every string that names it)."""
    pending, numbered = (orjson.dumps(f"{name}#{x}").decode()[1:-1] for x in (PENDING, n))
    return report.replace(pending, numbered)


def jsonl_ranges(ranges: list[tuple[str, int, int]], options: Options, batch_size: int, names: dict[str, str] | None = None) -> Any:
    """A Ray Data datasource that compacts as it reads: one read task per byte range (path, start, end), in
    order (a line belongs to the range its first byte is in). Each worker builds one Compactor for it.
    `names`: each path as the reports name it (the input as given; default: the path)."""
    import functools
    import uuid

    run = uuid.uuid4().hex

    from ray.data.block import BlockMetadata
    from ray.data.datasource import Datasource, ReadTask

    class JsonlRanges(Datasource):
        def __init__(self) -> None:
            super().__init__()
            self.ranges = ranges

        def get_name(self) -> str:
            return "CompactJsonlRanges"

        def estimate_inmemory_data_size(self) -> int:
            return sum(b - a for _, a, b in self.ranges)

        def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None, data_context: Any = None) -> list:
            return [
                ReadTask(
                    functools.partial(_compact_range, p, a, b, options, batch_size, run, (names or {}).get(p, p)),
                    BlockMetadata(num_rows=None, size_bytes=b - a, exec_stats=None, input_files=[p]),
                    per_task_row_limit=per_task_row_limit,
                )
                for p, a, b in self.ranges
            ]

    return JsonlRanges()


def _rows(ds) -> Iterator[dict]:
    """The rows in order, a batch at a time (cheaper than iter_rows: one conversion per column)."""
    for b in ds.iter_batches(batch_format="pyarrow", batch_size=None):
        cols = {k: b.column(k).to_pylist() for k in ("path", "text", STATUS, REPORT, COUNTED)}
        for i in range(b.num_rows):
            yield {k: v[i] for k, v in cols.items()}


def _bytes(v: str | bytes) -> bytes:
    return v if isinstance(v, bytes) else v.encode()


def _close(out: Any, target: str) -> None:
    """One input's output done: its part renamed into place; none (every row an error): an earlier file there removed."""
    if out is not None:
        out.commit()
    elif target and os.path.isfile(target) and not os.path.islink(target):
        os.unlink(target)


def _no_rows(targets: dict[str, str], seen: set[str], names: dict[str, str], quiet: bool) -> None:
    """The inputs that gave no row (no transcript): no output file, an earlier run's removed, said as the local engine says it."""
    from .runner.base import no_transcript, warn

    for path, target in targets.items():
        if path not in seen:
            _close(None, target)
            if not quiet:
                warn(no_transcript(names.get(path, path), target))


def _left_out(skips: dict[str, list], names: dict[str, str]) -> None:
    """Each input some of whose lines were left out (not a record, not a transcript), as the local engine says each
    skipped record, `-q` or not: how many, and the first one's reason (a session file, a message per line, is no
    dataset: every line of it)."""
    import re

    from .runner.base import warn

    for path, (rows, errors, first) in skips.items():
        if errors:
            name = names.get(path, path)
            reason = re.sub(rf"^{re.escape(name)}:[0-9?]+: ", "", first)  # a line alone is its own line 1
            warn(f"{name}: {errors:,} of its {rows:,} lines left out (the first: {reason})")


def _write(
    rows: Iterator[dict],
    targets: dict[str, str],
    report: str | None,
    rejects: str | None,
    stats: dict[str, int],
    names: dict[str, str],
    quiet: bool = True,
) -> dict[str, int]:
    """The rows to their files, in order; each report names its transcript as the local engine does (file.jsonl#N,
    N counting the file's lines that are JSON objects). As the local engine, a file whose every row is an error gets
    no output file (nor keeps an earlier run's), and one that gives no row at all (empty, blank lines) neither, which
    is said unless `quiet`."""
    from .journal import PartFile
    from .jsonl import Output, in_place

    def side(path: str | None) -> Any:  # a device or an open descriptor (/dev/null, /dev/stderr) is written in place
        return None if not path else Output(path, spool=False) if in_place(path) else PartFile(path)

    current: str | None = None
    number = 0
    target = ""
    out: PartFile | None = None
    rep = side(report)
    rej = side(rejects)
    seen: set[str] = set()
    skips: dict[str, list] = {}  # per input: rows, errors, the first error's reason
    try:
        for row in rows:
            path = row["path"]
            if path != current:
                seen.add(path)
                _close(out, target)
                out, current, number = None, path, 0
                target = targets.get(path) or targets.get(os.path.abspath(path)) or ""
                if not target:
                    raise CompactError(f"ray returned a row of {path}, not an input")
            stats["records"] += 1
            skip = skips.setdefault(path, [0, 0, ""])
            skip[0] += 1
            if row[STATUS] == "error":
                stats["errors"] += 1
                skip[1] += 1
                skip[2] = skip[2] or str(orjson.loads(row[REPORT]).get("reason", ""))
                if rej is not None:
                    rej.write(_bytes(row["text"]) + b"\n")
            else:
                if out is None:
                    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
                    out = PartFile(target)
                    stats["shards"] += 1
                out.write(_bytes(row["text"]) + b"\n")
                if rep is not None:
                    rep.write(_numbered(row[REPORT], names.get(path, path), number + 1).encode() + b"\n")
            number += bool(row[COUNTED])
        _close(out, target)
        _no_rows(targets, seen, names, quiet)
        _left_out(skips, names)
        for p in (rep, rej):
            if p is not None:
                p.commit()
    except BaseException:
        for p in (out, rep, rej):
            if p is not None:
                p.abort()
        raise
    return stats
