"""Secrets are redacted before anything is sent to an LLM."""

from __future__ import annotations

import re

# (literal hint that must be present, pattern, replacement): the hint keeps the common case fast.
RULES = [
    ("PRIVATE KEY", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.S), "[REDACTED PRIVATE KEY]"),
    ("sk-", re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}"), "[REDACTED API KEY]"),
    ("gh", re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"), "[REDACTED GITHUB TOKEN]"),
    ("xox", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), "[REDACTED SLACK TOKEN]"),
    ("AKIA", re.compile(r"\bAKIA[0-9A-Z]{16}\b"), "[REDACTED AWS KEY]"),
    ("AIza", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"), "[REDACTED GOOGLE KEY]"),
    ("earer", re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/\-]{12,}=*"), r"\1 [REDACTED]"),
    ("://", re.compile(r"(\b[a-z][a-z0-9+.\-]*://[^\s:/@]+:)[^\s@/]+@", re.I), r"\1[REDACTED]@"),
    ("=", re.compile(r"(?i)\b((?:api[_-]?key|secret|token|passwd|password)\s*[=:]\s*[\"']?)[^\s\"'&]{6,}"), r"\1[REDACTED]"),
]


def redact(text: str) -> str:
    for hint, rx, repl in RULES:
        if hint in text:
            text = rx.sub(repl, text)
    return text
