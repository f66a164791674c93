"""The record API (compactctl/record.py): bad records, options, defaults, and the same bytes as the CLI."""

from __future__ import annotations

import dataclasses
import json
from enum import Enum

import orjson
import pytest

import compactctl
from compactctl import ray as cray
from compactctl.errors import CompactError, UsageError

from .conftest import SAMPLES, cli, tool_session

HI = [{"role": "user", "content": "hi"}]


def _deep(levels: int) -> dict:
    rec: dict = {"messages": HI}
    cur = rec
    for _ in range(levels):
        cur["x"] = {}
        cur = cur["x"]
    return rec


def test_compact_report_is_json():
    """compactctl.compact's report is a small stats record; the archived originals are its `archived` attribute."""
    [t] = compactctl.read([str(SAMPLES / "long_session.jsonl")])
    opts = compactctl.CompactOptions(compactctl.Budget(context_window=8000))
    out, report = compactctl.compact(t, compactctl.make_counter("gpt-4o"), compactctl.OfflineSummarizer(), opts)
    assert report["status"] == "compacted" and "_archived" not in report
    assert json.loads(json.dumps(report)) == report and orjson.loads(orjson.dumps(report)) == report
    assert report.archived and all(a.transcript == t.id for a in report.archived)
    assert report["_archived"] is report.archived  # the old key still answers (never serialized)
