"""Secrets suite: every planted family is redacted, and none reaches an LLM request body, the summary
cache, the report or stderr, wherever it was planted (user text, call arguments, tool outputs, a key
block cut in the middle by the output cap). The cache is private (0600 files in a 0700 folder); the
archive keeps the originals verbatim (it is the user's own restore data) and is written 0600."""

from __future__ import annotations

import os
import stat

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactctl.summarizers import llm as llm_mod
from compactctl.summarizers.redact import redact

from .conftest import cli, write_jsonl
from .llm_server import Server
from .secrets_data import FAMILIES, PLANTED


@pytest.mark.parametrize("family,secret,text", PLANTED, ids=[p[0] for p in PLANTED])
def test_each_family_is_redacted(family, secret, text):
    out = redact(text)
    assert secret not in out and "[REDACTED" in out
    assert redact(out) == out  # idempotent


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="0123456789abcdef", min_size=1, max_size=96), st.text(alphabet="0123456789", min_size=1, max_size=96))
def test_a_number_or_a_lower_case_hex_digest_is_never_redacted(hexes, digits):
    """prune.pick_safe keeps such a name without asking redact (phases/prune_steps.py _PLAIN): no rule may change one."""
    for s in (hexes, digits, "0" * 40, "deadbeef" * 8, "0123456789abcdef" * 4):
        assert redact(s) == s


def test_families_cover_the_rule_sets():
    assert len(FAMILIES) >= 35
    for must in (
        "aws-secret-key",
        "curl-user",
        "basic-auth-header",
        "json-password",
        "stripe",
        "hugging-face",
        "npm",
        "github-pat",
        "gitlab",
        "slack",
        "google-api-key",
        "openai",
        "anthropic",
        "jwt",
        "private-key",
        "postgres-url",
        "azure-storage",
        "high-entropy-quoted",
        "private-key-unterminated",
    ):
        assert must in FAMILIES


def test_ordinary_text_is_left_alone():
    text = (
        "def get_token_count(tokens: list[str]) -> int:\n    max_tokens = 4096\n    password_min_length = 12\n"
        "git checkout 3f2c9e1d8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e\nmkdir -p build/out && curl https://example.com/a@b\n"
        "The basic idea is simple. Bearer of news.\nuuid 123e4567-e89b-12d3-a456-426614174000 path /usr/lib/python3.11/site.py\n"
        "bypass = cache_layer\ncompass: north_by_west\nauthor: Jane Doe\n"
        '{"author": "Jane Doe", "oauth_flow": "device"}\nmysql -u root -h db.internal appdb\npytest -p no:cacheprovider\n'
        "First pass: tokenize the input\nauth: required\nPASS: test_parser\nbypass=true"
    )
    assert redact(text) == text


def test_serialize_redacts_before_the_cap():
    from compactctl.model import Message
    from compactctl.summarizers.llm import TOOL_HEAD, serialize

    for fam, secret, text in PLANTED:
        out = "x" * (TOOL_HEAD - 40) + "\n" + text + "\n" + "y" * 5000  # the cap cuts through the secret
        blocks = serialize(
            [Message(role="tool", content=out, tool_call_id="c1"), Message(role="user", content="z" * 2990 + text + "w" * 4000)]
        )
        assert not any(secret in b for b in blocks), fam


def _session(tmp_path):
    rows = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Set up the deployment. Notes:\n" + "\n".join(t for _, _, t in PLANTED[:12])},
    ]
    for k, (_, _, text) in enumerate(PLANTED):
        cid = f"call_{k}"
        rows.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {
                            "name": "terminal",
                            "arguments": orjson.dumps({"command": text, "password": f"pw-{k}-plain"}).decode(),
                        },
                    }
                ],
            }
        )
        # tool output: the secret sits where the LLM path's output cap (1,500 head chars) cuts through it
        out = ("x" * 1400 + "\n" + text + "\n" + "y" * 3000) if k % 3 == 0 else (text + "\n" + "log line\n" * 200)
        rows.append({"role": "tool", "tool_call_id": cid, "content": out})
        rows.append({"role": "assistant", "content": f"Step {k} done."})
        rows.append({"role": "user", "content": f"ok, next {k}"})
    rows.append({"role": "user", "content": "Now rotate everything. " + PLANTED[5][2]})
    return write_jsonl(tmp_path / "s.jsonl", rows)


def _no_secret(blob: bytes, where: str) -> None:
    text = blob.decode("utf-8", "replace")
    leaked = sorted(
        {fam for fam, secret, _ in PLANTED if secret in text}
        | {"password-argument" for k in range(len(PLANTED)) if f"pw-{k}-plain" in text}
    )
    assert not leaked, f"{where} holds secrets of: {leaked}"


def test_no_secret_reaches_the_endpoint_cache_report_or_stderr(tmp_path):
    llm_mod._breakers.clear()
    src = _session(tmp_path)
    cache = tmp_path / "cache"
    with Server() as server:
        p = cli(
            "compact",
            str(src),
            "-o",
            str(tmp_path / "out.jsonl"),
            "--context-window",
            "6000",
            "--summary-min",
            "500",
            "--summarizer",
            "llm",
            "--base-url",
            server.url,
            "--llm-model",
            "echo",
            "--llm-context",
            "3000",
            "--cache-dir",
            str(cache),
            "--report",
            str(tmp_path / "report.jsonl"),
            "--archive",
            str(tmp_path / "archive.jsonl"),
            env={"OPENAI_API_KEY": "test-key"},
        )
        assert p.returncode == 0, p.stderr.decode()[-2000:]
        assert len(server.raw) >= 2  # chunked: the echo answers come back as the PREVIOUS SUMMARY too
        for k, body in enumerate(server.raw):
            _no_secret(body, f"request {k}")
    report = (tmp_path / "report.jsonl").read_bytes()
    assert b'"summarizer":"llm:echo"' in report
    _no_secret(report, "the report")
    _no_secret(p.stderr, "stderr")
    files = sorted(cache.iterdir())
    assert files
    for f in files:
        _no_secret(f.read_bytes(), f.name)
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    archive = tmp_path / "archive.jsonl"
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600  # kept verbatim for restore, private
    assert stat.S_IMODE(os.stat(tmp_path / "out.jsonl").st_mode) == 0o600
