"""What a type checker sees of the library, as a user's code uses it: checked by mypy (pyproject's `files`, `make lint`),
never run. A call that mypy sees as `Any` passes a `mypy --strict` user's every mistake; `assert_type` fails on it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typing_extensions import assert_type

import compactctl
from compactctl.model import Transcript
from compactctl.pipeline import Report


def usage(record: dict[str, Any]) -> None:
    ts = compactctl.read([Path("s.jsonl"), "t.jsonl"])
    assert_type(ts, list[Transcript])
    counter = compactctl.make_counter("gpt-4o")
    out, report = compactctl.compact(ts[0], counter, compactctl.OfflineSummarizer())
    assert_type(out, Transcript)
    assert_type(report, Report)
    assert_type(compactctl.write(out), bytes)
    Record = tuple[dict[str, Any] | None, dict[str, Any]]
    assert_type(compactctl.compact_record(record, context_window=32_000), Record)
    assert_type(compactctl.prune_record(record), Record)
    assert_type(compactctl.plan_record(record), Record)
    assert_type(compactctl.summarize_record(record), Record)
    assert_type(compactctl.repair_record(record), Record)
    res = compactctl.Compactor(compactctl.Options(context_window=32_000)).compact(record)
    assert_type(res, compactctl.CompactResult)
    assert_type(res.status, str)
