"""Exit codes and the errors that carry them."""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class Exit(IntEnum):
    OK = 0
    INTERNAL = 1
    USAGE = 2
    DATA = 3  # malformed input
    IO = 4  # cannot read or write a file
    CANNOT_FIT = 5  # head + tail + summary exceed the target
    CHECK_FAILED = 6  # repair --check found violations
    LLM_AUTH = 7  # the LLM endpoint refused our credentials (401/403), the quota is spent (429), or no model asked is there (404)
    NOT_FOUND = 8  # recall: no archived original has this reference


class CompactError(Exception):
    exit_code = Exit.INTERNAL


class DataError(CompactError):
    """Malformed input, named by file and line (by file alone, line None, for what is wrong with the whole input)."""

    exit_code = Exit.DATA

    def __init__(self, source: str, line: int | None, what: str):
        self.source, self.line, self.what = source, line, what
        super().__init__(f"{source}: {what}" if line is None else f"{source}:{line}: {what}")


class UsageError(CompactError):
    exit_code = Exit.USAGE


class IOFailure(CompactError):
    exit_code = Exit.IO


class CannotFit(CompactError):
    exit_code = Exit.CANNOT_FIT
    fallback: tuple[Any, list[Any]] | None = None  # (transcript, archived): the pruned, repaired transcript `compact` had when it gave up
    fallback_is = "pruned and repaired, not summarized"  # what the fallback is, for the note `--on-error skip` prints
    facts: dict[str, Any] | None = None  # a plan's refusal: total, target, needed, over, tokens per zone (`plan --json`)


class CheckFailed(CompactError):
    exit_code = Exit.CHECK_FAILED


class LLMAuthError(CompactError):
    exit_code = Exit.LLM_AUTH
