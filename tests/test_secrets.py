"""Secrets suite: every planted family is redacted, and none reaches an LLM request body, the summary
cache, the report or stderr, wherever it was planted (user text, call arguments, tool outputs, a key
block cut in the middle by the output cap). The cache is private (0600 files in a 0700 folder); the
archive keeps the originals verbatim (it is the user's own restore data) and is written 0600."""

from __future__ import annotations

import os
import random
import stat
import string

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactctl.formats.openai import message_from_dict
from compactctl.redact import cut, redact
from compactctl.summarizers import llm as llm_mod

from .conftest import cli, tool_session, write_jsonl
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


def test_a_rule_is_compiled_only_when_its_hint_occurs():
    from compactctl import redact as mod

    mod._compiled.cache_clear()
    assert redact("make lint && ruff check") == "make lint && ruff check"
    assert mod._compiled.cache_info().currsize == 0  # no hint: no rule compiled
    assert redact("key ghp_" + "a1B2" * 9) != "key ghp_" + "a1B2" * 9
    assert 0 < mod._compiled.cache_info().currsize < len(mod._RULES) // 4


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


def test_a_digest_or_summary_never_cuts_a_secret_on_an_error_line(tmp_path):
    """Error lines of a failed output go into its digest (cut at 200 characters) and the summary's action line (at
    120): a key there was cut into a fragment no later redaction recognizes (no prefix, too short for the entropy
    rule). They are redacted first, as every text is before a cap cuts it."""

    secret = next(s for family, s, _t in PLANTED if family == "github-pat")
    msgs = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Deploy the service."},
    ]
    for i, col in enumerate([100, 180, 100, 180, 60, 60]):
        err = "Error: " + "remote rejected the push because the credential was not accepted ".ljust(col - 7, ".") + f" {secret} end"
        cid = f"call_{i}"
        msgs.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": cid, "type": "function", "function": {"name": "terminal", "arguments": f'{{"command": "git push {i}"}}'}}
                ],
            }
        )
        msgs.append({"role": "tool", "tool_call_id": cid, "content": "x\n" * 800 + err + "\nexit code: 1"})
    msgs.append({"role": "user", "content": "Try once more."})
    src = write_jsonl(tmp_path / "s.jsonl", msgs)
    body = secret[4:]
    for args in (["prune", "--context-window", "2000"], ["compact", "--context-window", "3000"]):
        r = cli(*args, str(src))
        assert r.returncode == 0, r.stderr
        out = r.stdout.decode()
        fragments = [body[k : k + 12] for k in range(len(body) - 11)]  # the recent outputs, kept verbatim, hold it whole
        assert not any(f in out.replace(secret, "") for f in fragments), args
        assert "[REDACTED" in out


@pytest.mark.parametrize("family,secret,text", PLANTED, ids=[p[0] for p in PLANTED])
def test_a_cut_through_a_secret_leaves_no_piece_of_it(family, secret, text):
    """redact.cut at every position inside each planted secret: no piece of 8 characters or more is left at the
    end; the text is kept as it was up to the cut, or redacted there (a mark cut through is kept whole)."""
    t = f"some words before {text} and after"
    i = t.find(secret)
    for n in range(i + 1, i + len(secret)):
        out = cut(t, n)
        assert not any(out.endswith(secret[:j]) for j in range(8, n - i + 1)), (n, out)
        assert (len(out) <= n and t.startswith(out)) or "[REDACTED" in out


def test_a_cut_elsewhere_is_a_plain_cut():
    words = "The quick brown fox jumps over the lazy dog near /usr/local/lib/python3.11/site-packages/pkg/mod.py"
    assert all(cut(words, n) == words[:n] for n in range(len(words) + 2))


def test_a_cut_argument_leaves_no_piece_of_a_secret(tmp_path):
    """A long Write call's content is cut (JSON stays valid): the cut went through a key in it."""
    secret = next(s for family, s, _t in PLANTED if family == "openai")
    content = "x = 1\n" * 30 + f'OPENAI_API_KEY = "{secret}"\n' + "y = 2\n" * 400
    msgs = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "Write the config."}]
    for i in range(4):
        args = orjson.dumps({"path": f"cfg{i}.py", "content": content}).decode()
        msgs.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": "write_file", "arguments": args}}],
            }
        )
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": "written\n" + "z" * 3000})
    msgs.append({"role": "user", "content": "Now run it."})
    src = write_jsonl(tmp_path / "w.jsonl", msgs)
    for keep in ("206", "215", "230"):  # the key starts at 198: cuts 8, 17 and 32 characters into it
        r = cli("prune", str(src), "--context-window", "1500", "--prune-all", "--arg-keep", keep, "--arg-limit", "300")
        assert r.returncode == 0, r.stderr
        out = r.stdout.decode().replace(secret, "")
        assert not any(secret[:j] in out for j in range(8, len(secret))), keep


def test_a_cut_never_rewrites_part_of_an_earlier_word():
    """From a review: the text looked at before the cut began inside an earlier key, whose tail alone redaction then
    took for a high-entropy string, leaving its head: a piece made by the cut's own redaction."""
    sendgrid = next(s for family, s, _t in PLANTED if family == "sendgrid")
    github = next(s for family, s, _t in PLANTED if family == "github-pat")
    for fill in range(0, 90, 3):
        t = f"sendgrid {sendgrid} {'see the docs here please ' * 4}"[: 10 + len(sendgrid) + fill] + f" {github} rest"
        for n in range(len(t)):
            out = cut(t, n)
            for s in (sendgrid, github):
                assert s in out or not any(s[:j] in out for j in range(8, len(s))), (fill, n, out)


def test_a_cut_between_the_words_of_a_value_and_a_mark_kept_whole_stay_bounded():
    t = '{"user": "bob", "password": "s3cr3t C4Xz9kLmQw7 zz"} more'
    for n in range(30, 50):
        assert "s3cr3t" not in cut(t, n)  # a cut between the words of a password still redacts it
    github = next(s for family, s, _t in PLANTED if family == "github-pat")
    long = f"{github} [REDACTED{'a' * 3000}] tail"  # a literal mark without its end nearby
    assert len(cut(long, 90)) <= 90 + 40


@pytest.mark.parametrize("family,secret,text", PLANTED, ids=[p[0] for p in PLANTED])
def test_a_cut_in_minified_json_or_after_a_long_key_leaves_no_piece(family, secret, text):
    """From a second review: in a word longer than the look-back (minified JSON, one line), a cut 4,096 characters
    past a secret began its window inside it; a key name of 58+ characters, or a Unicode space, kept the key out of
    the window. Quotes, commas and brackets end words now, and the window begins at a word's start."""
    cases = [
        '{"a":"' + "x" * 3000 + '","c":"' + text + '","b":"' + "abc_def_ghi," * 800 + '"}',
        "x" * 60 + "\u00a0" + text + " and more",
        '{"MY_APPLICATION_PRODUCTION_DATABASE_PRIMARY_REPLICA_ADMIN_SETTING": "' + text + '"}',
    ]
    for t in cases:
        i = t.find(secret)
        for n in [*range(i, i + len(secret) + 1, 3), *(i + k + 4096 for k in range(0, len(secret), 5))]:
            out = cut(t, n)
            assert secret in out or not any(secret[:j] in out for j in range(8, len(secret))), (n - i, out[-80:])


def test_a_cut_through_a_quoted_high_entropy_string_sees_its_closing_quote():
    """Quotes end words for a cut; the window keeps the quote that ends it, or the quoted-string rule (mostly lower
    case: the bare base64 rule passes it) never matched and the piece stayed."""
    s = "qwErtyuiop4sdfghjklzxcvbnmQazwsxedcrfvtgbyhn" * 3  # its end more than 64 characters past the cuts
    t = f'const KEY = "{s}"; more code here'
    i = t.find(s)
    for n in range(i + 8, i + 60):
        assert cut(t, n).startswith('const KEY = "[REDACTED HIGH-ENTROPY STRING]')


def test_credentials_in_the_base_url_are_never_said_on_stderr(tmp_path):
    """`--base-url https://user:password@host/v1` (config.py warns that it carries credentials) was said whole in the
    "summarizer: llm (... at URL)" line and in a 404's error: the password on stderr, in CI logs."""
    src = _session(tmp_path)
    with Server() as server:
        url = server.url.replace("http://", "http://me:pw-5ecret-x@") + "?api-key=q-5ecret-x"
        for model, code in (("good", 0), ("error404", 7)):
            r = cli("compact", str(src), "--context-window", "3000", "--base-url", url, "--llm-model", model, "--no-cache")
            err = r.stderr.decode()
            assert r.returncode == code, err
            assert "5ecret" not in err and "summarizer: llm" in err and "127.0.0.1" in err, err


def test_focus_and_instructions_are_redacted_before_the_request(server):
    """From a security review: --focus and --instructions went into the system message, the one text of the request
    that was never redacted (the user message is, whole, in `_complete`)."""
    from compactctl.phases.summarize import SummaryRequest
    from compactctl.summarizers.facts import extract
    from compactctl.summarizers.llm import LLMSummarizer
    from compactctl.summarizers.prompt import system_prompt
    from compactctl.tokens import make_counter

    anthropic = next(s for family, s, _t in PLANTED if family == "anthropic")
    openai = next(s for family, s, _t in PLANTED if family == "openai")
    msgs = [message_from_dict(d, "t", i + 1, i) for i, d in enumerate(tool_session(20, 2000))]
    facts = extract(msgs, 2, len(msgs) - 2, last_request="go on")
    s = LLMSummarizer("good", server.url, "k", None, timeout=5, retries=0, cache=None)
    req = SummaryRequest("t", msgs, 2, len(msgs) - 2, 800, facts, f"the key {anthropic}", f"Use OPENAI_API_KEY={openai} if needed.")
    assert s.summarize(req, make_counter("gpt-4o")).summarizer == "llm:good"
    body = server.raw[-1].decode()
    assert anthropic not in body and openai not in body and "[REDACTED" in body
    for focus in (None, "the auth module and its token refresh"):  # the prompt itself is left as it is
        assert redact(system_prompt(2000, focus, "Keep every password policy rule.")) == system_prompt(
            2000, focus, "Keep every password policy rule."
        )


def test_a_prior_summary_is_redacted_before_it_is_trimmed(server):
    """From a security review: an earlier summary over the budget was trimmed (one without the 13 headings, an agent's
    own, cut at twice the budget in characters) and only then redacted: a key cut there lost the length its rule
    needs, and its first characters were sent."""
    from compactctl.phases.summarize import SummaryRequest
    from compactctl.summarizers.facts import extract
    from compactctl.summarizers.llm import LLMSummarizer
    from compactctl.tokens import make_counter

    github = next(s for family, s, _t in PLANTED if family == "github-pat")
    budget = 300
    msgs = [message_from_dict(d, "t", i + 1, i) for i, d in enumerate(tool_session(20, 2000))]
    facts = extract(msgs, 2, len(msgs) - 2, last_request="go on")
    opening = "This session is being continued from a previous conversation. "
    for into in (6, 12, 20):
        head = (opening + "The deploy step ran fine. " * 40)[: budget * 2 - into - 1] + " "
        facts.prior_summary = head + github + " was used to push.\n" + "More notes. " * 200
        s = LLMSummarizer("good", server.url, "k", None, timeout=5, retries=0, cache=None)
        s.summarize(SummaryRequest("t", msgs, 2, len(msgs) - 2, budget, facts), make_counter("gpt-4o"))
        body = orjson.loads(server.raw[-1])["messages"][1]["content"]
        assert "PREVIOUS SUMMARY" in body
        assert not any(github[:j] in body for j in range(6, len(github))), into


def test_hashes_images_and_variables_are_not_secrets():
    """From a security review: a go.sum line's `h1:` hash, an image's base64 (a data URI, an Anthropic image block) and a
    quoted `${VAR}` were redacted as secrets: the summary lost them, or was told a secret was there."""
    import base64
    import hashlib
    import random

    rng = random.Random(33)
    png = base64.b64encode(bytes(rng.randrange(256) for _ in range(3000))).decode()
    h1 = base64.b64encode(hashlib.sha256(b"go.mod").digest()).decode()
    texts = [
        f"github.com/pkg/errors v0.9.1 h1:{h1}\ngithub.com/pkg/errors v0.9.1/go.mod h1:{h1}",
        f'<img alt="chart" src="data:image/png;base64,{png}">',
        f"![screenshot](data:image/jpeg;base64,{png})",
        '{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "' + png + '"}}',
        'export TOKEN="${GH_TOKEN}"\nAPI_KEY: "$API_KEY"\npassword: "${{ secrets.DB_PASSWORD }}"',
    ]
    for t in texts:
        assert redact(t) == t, t[:80]


def test_a_pytest_node_id_or_a_scope_is_no_key_value():
    """From a security review: `tests/test_token.py::test_retry_1 PASSED` (a key word in a file name, then `::`) read as
    `key: value`: the LLM was sent `tests/test_token.py:[REDACTED] PASSED`, and a digest lost the test's name."""
    text = "tests/test_token.py::test_retry_1 PASSED [  1%]\nauth/test_secret_store.py::TestKeys::test_rotate FAILED\nToken::value()"
    assert redact(text) == text


def _context_secrets_session(tmp_path, turns: int = 2):
    """A session whose old outputs hold a YAML password and a Postgres URL's password: values no rule knows alone."""
    yaml_pw = next(s for family, s, _t in PLANTED if family == "yaml-password")
    url_pw = next(s for family, s, _t in PLANTED if family == "postgres-url")
    outs = [next(t for family, _s, t in PLANTED if family == f) + "\n" for f in ("yaml-password", "postgres-url")]
    rows = [{"role": "system", "content": "agent"}, {"role": "user", "content": "set up the database"}]
    for i, o in enumerate(outs * turns):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "terminal", "arguments": f'{{"command": "cat conf{i}.txt"}}'}}
        rows.append({"role": "assistant", "content": None, "tool_calls": [call]})
        rows.append({"role": "tool", "tool_call_id": f"c{i}", "content": o + "".join(f"log line {k} of run {i} ok\n" for k in range(300))})
        rows.append({"role": "user", "content": f"ok {i}"})
    return write_jsonl(tmp_path / "n.jsonl", rows), (yaml_pw, url_pw)


def _listed_names(out: bytes) -> list[str]:
    import re

    return re.findall(r"names: [^\"\\]*", out.decode())


def test_a_digest_names_no_value_a_rule_knows_by_its_context_when_an_llm_reads_it(tmp_path, monkeypatch):
    """From a security review: a digest's names are checked alone (a name under 16 characters not at all), and a
    password is a secret only by what stands before it (`password: X`, `postgres://app:X@host`): the value was listed as
    a name, with no key near it in the LLM request for any rule to know it by. Where an LLM will read the digests
    (--check-names, or an LLM configured) a name redaction takes from its line is left out; offline, where nothing
    leaves the machine, the check (about 2x prune's time) is not paid and the name stays (the recent outputs, kept
    verbatim, hold the value anyway)."""
    src, secrets = _context_secrets_session(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    offline = cli("prune", str(src), "--context-window", "1500")
    assert offline.returncode == 0, offline.stderr
    assert any(s in n for s in secrets for n in _listed_names(offline.stdout))  # the check is off: the gap it closes
    for args, env in ((["--check-names"], None), ([], {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})):
        r = cli("prune", str(src), "--context-window", "1500", *args, env=env)
        assert r.returncode == 0, r.stderr
        names = _listed_names(r.stdout)
        assert names and "DATABASE_URL" in " ".join(names), args
        assert not any(s in n for s in secrets for n in names), (args, names)


def test_compact_with_an_llm_sends_no_value_a_rule_knows_by_its_context(tmp_path, server):
    """The same session compacted with an LLM summarizer: no request body holds either password (the digests' names
    are checked because the summarizer sends what it reads)."""
    src, secrets = _context_secrets_session(tmp_path, turns=10)
    r = cli("compact", str(src), "--context-window", "1500", "--summarizer", "llm", "--base-url", server.url, "--llm-model", "echo")
    assert r.returncode == 0, r.stderr
    bodies = b"".join(server.raw).decode()
    assert "DATABASE_URL" in bodies  # the digests went out with their names
    assert not any(s in bodies for s in secrets)


def test_a_name_is_looked_at_where_it_stands_only_near_a_rules_hint():
    """taken_where_it_stands: a value known by its key, a URL's password, a bearer token; not a name beside them, nor a
    name in a line no context rule's hint is in (that one is never redacted at all)."""
    from compactctl.redact import taken_where_it_stands

    assert taken_where_it_stands("hunter2x", "db:\n  password: hunter2x\n  host: db.internal")
    assert not taken_where_it_stands("db.internal", "db:\n  password: hunter2x\n  host: db.internal")
    assert taken_where_it_stands("s3cr3tPw", "DATABASE_URL=postgres://app:s3cr3tPw@db.internal/app")
    assert not taken_where_it_stands("DATABASE_URL", "DATABASE_URL=postgres://app:s3cr3tPw@db.internal/app")
    assert taken_where_it_stands("abcDEF123456ghi", "curl -H 'Authorization: Bearer abcDEF123456ghi' https://api")
    assert not taken_where_it_stands("parse_config", "def parse_config(path):\n    return load(path)")
    # the first occurrences are looked at: a value listed later, away from its key, is still known by the first
    assert taken_where_it_stands("hunter2x", "password: hunter2x\n" + "x\n" * 50 + "hunter2x was used")


def test_a_digests_names_are_checked_where_they_stand_until_it_has_enough(monkeypatch):
    """pick_safe looks at the first `limit` + 8 candidates, and checks them where they stand only until `limit` are
    kept (each check reads the text around a name: most of the names check's cost); the names kept are the same."""
    from compactctl.phases import prune_steps

    source = "password: hunter2x\n" + " ".join(f"name_{k}" for k in range(40))
    candidates = ["hunter2x"] + [f"name_{k}" for k in range(40)]
    checked: list[str] = []
    taken = prune_steps.taken_where_it_stands

    def counted(name: str, text: str) -> bool:
        checked.append(name)
        return taken(name, text)

    monkeypatch.setattr(prune_steps, "taken_where_it_stands", counted)
    assert prune_steps.pick_safe(candidates, "", 5, source) == [f"name_{k}" for k in range(5)]
    assert checked == ["hunter2x"] + [f"name_{k}" for k in range(5)]
    assert prune_steps.safe_literals(['"a b"', '"c d"', '"e f"'], "", 2, 'x = "a b", "c d", "e f"') == ['"a b"', '"c d"']
    assert checked[-2:] == ["a b", "c d"]


_KEY_WORDS = ["password", "PassWord", "db_pass", "passphrase", "pwd", "secret", "client_secret", "token", "_authToken", "api-key"]
_KEY_WORDS += ["apikey", "ACCESS_KEY", "private_key", "credentials", "signing-key", "MASTER_KEY", "paſſword", "api_\u212aey", "key"]


@settings(max_examples=600, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(_KEY_WORDS),
            st.sampled_from([":", "=", ":=", "::", " : ", '": "', "': '", '"', "'", " ", "\t", "\n", "- ", "-"]),
            st.sampled_from(["hunter2hunter2", "correct horse battery", "true", "${DB_PASS}", "$TOKEN", "[REDACTED]", "1234"]),
            st.text(alphabet="abcXYZ019_.-:=\"' \t\n\u017f\u212a\u0130", max_size=8),
        ),
        max_size=8,
    ).map("".join)
)
def test_a_text_a_key_value_rule_changes_has_their_shape(text):
    """The key = value rules (SECRET FIELD) run only where a text has the shape they all need (redact._FIELD_SHAPE: a
    key word's hint, the rest of the word, `:` or `=`); what they would change always has it."""
    from compactctl import redact as r

    changed = any(r._compiled(rx).sub(repl, text) != text for rx, repl in r._FIELDS)
    assert not changed or r._FIELD_SHAPE.search(text), text


def test_the_key_value_rules_do_not_run_on_a_line_without_their_shape(monkeypatch):
    """A line of test output holds their hints ("passed", "test_token") without a key = value: they are not run on it
    (the final prompt's redaction spent most of its time there). The one line that has the shape is still redacted."""
    from compactctl import redact as r

    ran: list[str] = []
    compiled = r._compiled

    def counted(rx: str):
        if any(rx == f for f, _ in r._FIELDS):
            ran.append(rx)
        return compiled(rx)

    monkeypatch.setattr(r, "_compiled", counted)
    out = redact("tests/test_token.py::test_parse passed [ 50%]\n" * 20 + "5 passed in 0.2s\npassword: hunter2hunter2\n")
    assert "hunter2hunter2" not in out and out.count("passed") == 21
    assert len(ran) == len(r._FIELDS)  # the password line alone


# Secrets that redaction knows as one token, whose names are pieces (names_in splits at - . / + ~, and a JSON text's
# `\/`): from a read-only review, where a digest listed `KnHfDNxSIvPZZ63fFKcZjR4I` of a Slack token.
_WHOLE_TOKEN_FAMILIES = ("slack", "gitlab", "sendgrid", "azure-ad-secret", "telegram", "json-slash-escaped")


@pytest.mark.parametrize("family", _WHOLE_TOKEN_FAMILIES)
def test_no_name_of_a_digest_or_of_the_summary_is_a_piece_of_a_secret(tmp_path, family):
    """Offline and with --check-names, at a target where the output is digested and at one where it is summarized:
    neither the digests' names nor the summary's index hold 10 characters of the secret."""
    secret, text = next((s, t) for fam, s, t in PLANTED if fam == family)
    plain = secret.replace("\\/", "/")
    pieces = {plain[k : k + 10] for k in range(len(plain) - 9)}
    msgs = tool_session(8, 1500)
    for i, m in enumerate(msgs):
        if m["role"] == "tool" and i < 8:
            m["content"] = "\n".join(["request trace ok"] * 5 + [f"  connected with {text} as bot"] + ["request trace ok"] * 5)
    src = write_jsonl(tmp_path / "s.jsonl", msgs)
    for window in ("1500", "2500", "6000"):
        for args in ([], ["--check-names"]):
            r = cli("compact", str(src), "--context-window", window, "-q", *args)
            assert r.returncode == 0, r.stderr
            texts = [str(orjson.loads(line).get("content")) for line in r.stdout.splitlines()]
            # what a later compaction's request would hold, but the recent outputs kept verbatim (the secret whole)
            out = redact("\n".join(texts).replace(secret, "").replace(plain, ""))
            assert not any(p in out for p in pieces), (window, args)


def test_a_token_whose_last_character_is_a_hyphen_is_still_redacted():
    """SendGrid, Telegram and Square rules ended at a word boundary, which a final `-` (in their alphabets) never
    gives before a space: such a token was left whole (a review's SendGrid key)."""
    for secret in (
        "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",
        "1234567890:AAhT3mPq9Lr2XvB7nK4sW8yZ1cF6dJ0gE5-",
        "sq0atp-k3J9xQ2mV7pL4nR8tW1yB6cF0dG5h-",
    ):
        assert secret not in redact(f"using {secret} now"), secret


def test_names_in_lists_no_piece_of_a_token_redaction_takes_whole():
    from compactctl.names import names_in

    text = "bot xoxb-398259791907-4833788762328-KnHfDNxSIvPZZ63fFKcZjR4I ready; see src\\/app\\/main.py and Spotter.Repo"
    found = names_in(text)
    assert "KnHfDNxSIvPZZ63fFKcZjR4I" not in found and not any("KnHf" in n for n in found)
    assert "src/app/main.py" in found and "Spotter.Repo" in found  # (JSON's escaped slash read as a path's)


def _encrypted_key(last: int = 24) -> tuple[str, list[str]]:
    """An encrypted PKCS#1 key as openssl writes it: RFC 1421 headers, a blank line, 64-character base64 lines and a
    short last one (24 characters for an EC key on secp224r1 or prime192v1). Generated: no key literal in the repo."""
    import random

    rng = random.Random(4211)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    body = ["".join(rng.choice(alphabet) for _ in range(64)) for _ in range(2)]
    body.append("".join(rng.choice(alphabet[:62]) for _ in range(last - 2)) + "==")
    iv = "".join(rng.choice("0123456789ABCDEF") for _ in range(32))
    head = ["-----BEGIN EC PRIVATE KEY-----", "Proc-Type: 4,ENCRYPTED", f"DEK-Info: AES-128-CBC,{iv}", ""]
    return "\n".join([*head, *body, "-----END EC PRIVATE KEY-----"]), body


@pytest.mark.parametrize("form", ["unterminated", "cut-at-its-end-line", "json-escaped-unterminated"])
def test_no_body_line_of_an_encrypted_key_survives_redaction(form):
    """The rule for a key block without its END line (a cut output, or an excerpt's first lines) stopped at the blank
    line after the RFC 1421 headers; the body lines after it were left to the 32-character high-entropy rule, and a
    short last line (24 characters) survived: into a digest's head excerpt, its names and the summary's index
    (a read-only review)."""
    key, body = _encrypted_key()
    text = {
        "unterminated": key.rsplit("-----END", 1)[0],
        "cut-at-its-end-line": key[: key.index("-----END") + 9],
        "json-escaped-unterminated": '{"private_key": "' + key.rsplit("-----END", 1)[0].replace("\n", "\\n") + '", "x": 1}',
    }[form]
    out = redact(f"$ cat key.pem\n{text}")
    for line in body:
        assert line.rstrip("=") not in out, (form, out)


def test_a_compacted_session_holds_no_line_of_an_encrypted_key(tmp_path):
    """End to end: the key in an old tool output, whole or cut before its END line; at windows where that output is
    digested (with a head excerpt) or summarized, no body line of it is in what compaction wrote."""
    from compactctl.names import names_in

    key, body = _encrypted_key()
    assert body[-1].rstrip("=") in names_in(key)  # what the summary's index would list unredacted
    for text in (key, key.rsplit("-----END", 1)[0]):
        msgs = tool_session(8, 1500)
        msgs[3]["content"] = text + "\n" + "\n".join(f"render_report_{k} ok" for k in range(40))
        src = write_jsonl(tmp_path / "s.jsonl", msgs)
        for window in ("1500", "2500", "4000", "6000", "8000"):
            r = cli("compact", str(src), "--context-window", window, "-q")
            assert r.returncode == 0, r.stderr
            # what compaction wrote (digests, excerpts, the summary); an output kept as it was is the user's own
            derived = [str(orjson.loads(x).get("content")) for x in r.stdout.splitlines()]
            derived = [c for c in derived if c != msgs[3]["content"]]
            for line in body:
                assert not any(line.rstrip("=") in c for c in derived), (window, line)


def test_the_summarys_index_names_no_line_of_a_private_key():
    """rank_names read names from the raw text, where names_in redacts each long token alone: a key's 24-character
    last line is a secret only under its BEGIN line, and the index listed it (a read-only review)."""
    from compactctl.model import Message
    from compactctl.summarizers.vocabulary import rank_names

    key, body = _encrypted_key()
    for text in (key, key.rsplit("-----END", 1)[0]):
        ranked = rank_names([Message(role="tool", content=f"{text}\nrender_report ok", tool_call_id="c1")])
        assert "render_report" in ranked
        assert not any(n in line for n in ranked for line in body if len(n) >= 8), ranked


@pytest.mark.parametrize("form", ["numbered-read", "cat-n", "double-escaped-json", "two-blank-lines", "tail-only"])
def test_no_body_line_of_a_key_survives_in_other_forms(form):
    """A second review of the rule above: a numbered read (`     5→`, `cat -n`) put a number before each body line, so
    the rule stopped at the BEGIN line; a JSON text escaped twice, two blank lines, and the last lines of a key without
    its BEGIN line (`tail -3 key.pem`) left the short last line too."""
    key, body = _encrypted_key()
    lines = key.split("\n")
    cut = "\n".join(lines[:-1])  # before its END line
    text = {
        "numbered-read": "\n".join(f"{k + 1:>6}→{ln}" for k, ln in enumerate(lines[:-1])),
        "cat-n": "\n".join(f"{k + 1:>6}\t{ln}" for k, ln in enumerate(lines[:-1])),
        "double-escaped-json": cut.replace("\n", "\\\\n"),
        "two-blank-lines": cut.replace("\n\n", "\n\n\n"),
        "tail-only": "\n".join(lines[-3:]),
    }[form]
    out = redact(f"$ cat key.pem\n{text}\n$ ls")
    for line in body:
        assert line.rstrip("=") not in out, (form, out)
    assert out.endswith("\n$ ls")


def test_the_lines_after_an_empty_key_block_are_the_tools():
    """Only RFC 1421 headers are read as a key's: the widened rule took `Error:`, `Loaded:` and `Active:` lines after an
    empty block (a second review)."""
    log = '{"msg":"key file: -----BEGIN RSA PRIVATE KEY-----\\n\\nError: tls: failed to find any PEM data in key input"}'
    assert "Error: tls: failed to find any PEM data" in redact(log)
    status = "-----BEGIN PRIVATE KEY-----\n\nLoaded: loaded (/lib/systemd/system/nginx.service)\nActive: failed"
    assert "Loaded: loaded" in redact(status) and "Active: failed" in redact(status)


def test_many_key_blocks_without_an_end_line_are_redacted_in_linear_time():
    """The whole-key rule searched for an END line from every BEGIN line to the text's end: 1,000 such blocks in 1 MB
    took 5 s, 4,000 in 4 MB 80 s. Now its body stops at the next BEGIN line (~0.05 s for 2,000 here)."""
    import time

    text = ("\n-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAK\n" + "zz " * 300) * 2000
    t0 = time.process_time()
    out = redact(text)
    assert time.process_time() - t0 < 2.0  # quadratic: ~20 s
    assert "MIIBOgIBAAJBAK" not in out


def test_a_secret_in_a_bytes_or_raw_string_literal_is_redacted():
    """`secret=b"..."` (Python's bytes, raw or unicode literal) was left whole: the key = value rules wanted the quote
    right after `=` (a second review saw it in a function's default, which the summary's index may show)."""
    for text in ('secret=b"Tr0ub4dor&3x"', 'password = b"hunter2xyz"', 'api_key=r"abcdEFGH1234zz"', "token=rb'abcdefgh12'"):
        out = redact(text)
        assert "[REDACTED]" in out and not any(w in out for w in ("Tr0ub4dor", "hunter2", "abcdEFGH", "abcdefgh12")), out
    from compactctl.summarizers import fit
    from compactctl.tokens import make_counter

    sigs = {"open_db": '(host="db", secret=b"Tr0ub4dor&3x")'}
    assert fit.with_signatures(["open_db", "host"], sigs, make_counter("gpt-4o")) == ["open_db", "host"]


@pytest.mark.parametrize("form", ["grep-n-A", "grep-r-B", "diff-removed-cut", "diff-removed-tail"])
def test_no_body_line_of_a_key_survives_grep_or_a_diff(form):
    """A third review: grep's `12-` / `path-12-` prefixes and a diff's `-` stopped both key rules (there before this
    session): every body line of a key that grep showed, or that a diff removed, was left."""
    key, body = _encrypted_key()
    lines = key.split("\n")
    text = {
        "grep-n-A": "\n".join(f"{k + 1}{':' if k == 0 else '-'}{ln}" for k, ln in enumerate(lines[:-1])),
        "grep-r-B": "\n".join(f"./certs/k.pem-{ln}" for ln in lines[-4:-1]) + f"\n./certs/k.pem:{lines[-1]}",
        "diff-removed-cut": "\n".join(f"-{ln}" for ln in lines[:-1]),
        "diff-removed-tail": "\n".join(f"-{ln}" for ln in lines[-3:]),
    }[form]
    out = redact(f"$ run\n{text}\n$ ls")
    for line in body:
        assert line.rstrip("=") not in out, (form, out)


def test_blank_runs_near_a_key_line_cost_linear_time():
    """A third review: the key-tail pattern had three runs of blanks in a row, one optional, so a line of blanks above
    an END line took the cube of its length (4,000 spaces: 52 s); the END pattern two (4,000: 0.1 s, 40,000: ~11 s)."""
    import time

    end = "-----END RSA PRIVATE KEY-----"
    for text in (" " * 40_000 + "x\n" + end, "private key\n" + " " * 40_000 + "-----ENDX", "\n".join([" " * 700 + "!", end] * 10)):
        t0 = time.process_time()
        redact(text)
        assert time.process_time() - t0 < 1.0


def _regex_runs(monkeypatch, kind: str) -> list[str]:
    """Each run of the rule `kind`'s regex from now on, as it is compiled (cached) for each text it is run on."""
    from compactctl import redact as r

    rule = next(rx for k, _h, rx, _r in r.RULES if k == kind)
    ran: list[str] = []
    compiled = r._compiled

    def counted(rx: str):
        if rx == rule:
            ran.append(rx)
        return compiled(rx)

    monkeypatch.setattr(r, "_compiled", counted)
    return ran


def test_the_twilio_rule_runs_only_where_its_prefix_stands_in_capitals(monkeypatch):
    """Its hints were "sk" and "ac", matched in the lower-cased text: most English texts ("ask", "back", "track") ran
    its regex (the costliest of the rules on the corpus). Its regex wants SK or AC as written, and so do its hints now;
    what it redacts is the same."""
    from compactctl import redact as r

    ran = _regex_runs(monkeypatch, "TWILIO KEY")
    prose = "Ask the backend team to track each task and pack the stack. " * 10
    assert redact(prose) == prose and not ran
    for sid in ("AC" + "0123456789abcdef" * 2, "SK" + "fedcba9876543210" * 2):
        assert redact(f"the account {sid} is live") == "the account [REDACTED TWILIO KEY] is live"
    assert len(ran) == 2
    # a short text (a long token names_in checks alone: 150,000 in a 15 MB log) that holds "ac" runs no rule's hint test
    hint, exact = r._any_hint()
    assert hint.search("trace=0f3c9a7e_stack") is None and exact.search("trace=0f3c9a7e_stack") is None
    assert exact.search("sid AC0123") is not None


def test_a_rules_hints_stand_in_every_text_its_regex_matches():
    """A rule runs only where one of its hints stands (lower-cased, and as written for one with capitals): on every
    planted text, in three cases, and beside a Twilio key, no rule's regex matches where its hints would keep it from
    running (a hint narrowed too far loses a secret)."""
    from compactctl import redact as r

    texts = [t for _f, _s, t in PLANTED] + ["sid AC" + "0123456789abcdef" * 2, "(SK" + "0123456789abcdef" * 2 + ")"]
    texts += [t.lower() for t in texts] + [t.upper() for t in texts]
    for kind, hints, exact, rx, _repl in r._RULES:
        for t in texts:
            if r._compiled(rx).search(t):
                assert any(h in t.lower() for h in hints) and (not exact or any(h in t for h in exact)), (kind, t)


def test_the_vault_rule_does_not_run_on_every_sentence(monkeypatch):
    """Its hints held "s." (a sentence's last plural), the prefix of legacy tokens its regex does not take."""
    ran = _regex_runs(monkeypatch, "VAULT TOKEN")
    prose = "The tests pass. The docs build. All files are formatted. " * 10
    assert redact(prose) == prose and not ran
    token = "hvs." + "CAESIJ" * 5
    assert redact(f"VAULT_TOKEN {token}") == "VAULT_TOKEN [REDACTED VAULT TOKEN]" and ran


# -- mutation testing of redact.py (bench/mutation.py --module redact): what its survivors showed no test pinned


def test_a_hash_or_an_image_at_the_very_start_of_a_text_is_not_a_secret():
    """A go.sum hash or an image's base64 whose `h1:` or `image/` opens the text (a tool's output that is only that, a
    name a digest keeps), and an image's base64 of 200 characters (150 bytes: the shortest taken as an image's)."""
    import base64
    import hashlib
    import random

    rng = random.Random(34)
    h1 = base64.b64encode(hashlib.sha256(b"go.mod").digest()).decode()
    png = base64.b64encode(bytes(rng.randrange(256) for _ in range(3000))).decode()
    icon = base64.b64encode(bytes(rng.randrange(256) for _ in range(150))).decode()
    assert len(icon) == 200
    for text in (
        f"h1:{h1}",
        f"image/png;base64,{png}",
        f"data:image/png;base64,{icon}",
        f'{{"media_type": "image/gif", "data": "{icon}"}}',
    ):
        assert redact(text) == text, text[:60]


def test_a_bare_secret_with_few_capitals_and_digits_is_redacted():
    """A bare run of base64 is a secret's with 30% or more capitals and digits (paths and words are mostly lower case):
    a token with exactly 30% goes."""
    import random

    from compactctl.redact import ENTROPY_LIMIT, entropy

    rng = random.Random(35)
    while True:
        chars = [rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(28)]
        chars += [rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") for _ in range(12)]
        rng.shuffle(chars)
        token = "".join(chars)
        if entropy(token) >= ENTROPY_LIMIT and any(c.isdigit() for c in token):
            break
    out = redact(f"$ cat ~/.config/app/session\n{token}\n")
    assert token not in out and out == "$ cat ~/.config/app/session\n[REDACTED HIGH-ENTROPY STRING]\n", out


def test_a_value_at_the_very_end_of_a_text_is_known_by_its_key():
    """taken_where_it_stands reads the line around a name to the text's end when no line break follows: a password that
    ends the text (an env file without a final newline) is known by its key as one in the middle is."""
    from compactctl.redact import taken_where_it_stands

    assert taken_where_it_stands("hunter2xyz", "DB_HOST=db.internal\nDB_PASSWORD=hunter2xyz")
    assert taken_where_it_stands("s3cr3tPw99", "$ mysql -u root -ps3cr3tPw99")
    assert not taken_where_it_stands("db.internal", "DB_PASSWORD=hunter2xyz\nDB_HOST=db.internal")


def test_a_cut_through_a_twelve_character_token_leaves_no_piece_of_it():
    """A cut through a word of 12 characters (CUT_WORD) is looked at: a bearer token of 12 characters, the shortest the
    rule knows, cut anywhere, leaves none of its characters (a shorter piece no rule would know later)."""
    token = "k3Jq9xWm2LpZ"
    text = f"curl -H 'Authorization: Bearer {token}' https://api.example.com/v1"
    at, marked = text.index(token), "curl -H 'Authorization: Bearer [REDACTED]"
    for n in range(at + 1, at + len(token)):
        out = cut(text, n)
        assert token[:2] not in out, (n, out)
        assert out == redact(text)[: max(n, len(marked))], (n, out)  # the mark kept whole, and nothing after it


@pytest.mark.parametrize("family", ["github-pat", "openai", "anthropic", "slack", "google-api-key", "jwt", "npm"])
def test_a_cut_through_a_secret_that_opens_the_text_leaves_no_piece_of_it(family):
    """As test_a_cut_through_a_secret_leaves_no_piece_of_it, for a secret at the very start of the text (a line a digest
    quotes, an argument that is only the token): the window around the cut starts at the text's first character."""
    secret = next(s for fam, s, _t in PLANTED if fam == family)
    t = f"{secret} was rejected"
    for n in range(1, len(secret)):
        out = cut(t, n)
        assert not any(out.startswith(secret[:j]) for j in range(8, n + 1)), (n, out)
        assert out.startswith("[REDACTED"), (n, out)


def test_a_piece_of_a_quoted_high_entropy_string_is_taken_where_it_stands(tmp_path):
    """A quoted high-entropy string is a secret only by its quotes, and names_in splits it at its `-`, `=` or `~`: each
    piece is a name. A piece of 16 to 23 characters (a shorter name is safe, prune_steps._safe_name; a longer one was
    checked with the quotes) was not looked at with them: a digest read by an LLM (--check-names) listed it (found by
    mutation testing: redact._LONG_NAME)."""
    from compactctl.redact import taken_where_it_stands

    rng = random.Random(36)
    alphabet = string.ascii_letters + string.digits
    head, tail = ("".join(rng.choice(alphabet) for _ in range(k)) for k in (16, 23))
    secret = f"{head}-{tail}"
    line = f'const SIGNING = "{secret}";'
    assert secret not in redact(line)
    for piece in (head, tail):
        assert taken_where_it_stands(piece, f"$ cat src/config.ts\n{line}\nexport default SIGNING;")
    assert not taken_where_it_stands("config.ts", f"$ cat src/config.ts\n{line}")
    rows = [{"role": "system", "content": "agent"}, {"role": "user", "content": "check the config"}]
    for i in range(2):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "terminal", "arguments": f'{{"command": "cat cfg{i}.ts"}}'}}
        rows.append({"role": "assistant", "content": None, "tool_calls": [call]})
        rows.append(
            {
                "role": "tool",
                "tool_call_id": f"c{i}",
                "content": line + "\n" + "".join(f"bundled chunk {k} of webpack_runtime ok\n" for k in range(300)),
            }
        )
        rows.append({"role": "user", "content": f"ok {i}"})
    src = write_jsonl(tmp_path / "q.jsonl", rows)
    r = cli("prune", str(src), "--context-window", "1500", "--check-names")
    assert r.returncode == 0, r.stderr
    names = _listed_names(r.stdout)
    assert "webpack_runtime" in " ".join(names) and not any(p in n for p in (head, tail) for n in names), names


def test_a_quoted_path_of_mixed_case_is_not_a_high_entropy_string():
    """A quoted string with two slashes or more is read as a path, not a secret (the high-entropy rule takes one slash at
    most): kept, though its letters and digits are as varied as a secret's."""
    for path in ("docs/Guides/Quickstart-Win64_MSVC2019.md", "web/static/js/BundleV3xq-8Hj2.min.js"):
        text = f"open(\"{path}\")\nimport x from '{path}'"
        assert redact(text) == text


def test_a_quoted_high_entropy_string_that_is_the_whole_text_is_redacted():
    """The shortest text the quoted rule reads: a 24-character string and its quotes (26 characters), a call's argument
    or an output that is only that."""
    token = "Xk9mP2vQ7rT4wZ8bN3cL6dF5"
    for q in ('"', "'", "`"):
        assert redact(f"{q}{token}{q}") == f"{q}[REDACTED HIGH-ENTROPY STRING]{q}"


def test_a_value_under_a_secret_named_key_in_call_arguments_is_redacted_whole():
    """redact_json_text (a call's arguments, for the LLM request): a string under a key named as a secret's goes whole,
    though no rule knows it alone (a plain password); the other strings and keys stay."""
    from compactctl.redact import redact_json_text

    args = {"user": "bob", "password": "hunter2 horse", "db": {"apiKey": "plainvalue", "host": "db.internal"}, "port": 5432}
    out = orjson.loads(redact_json_text(orjson.dumps(args).decode()))
    assert out == {"user": "bob", "password": "[REDACTED]", "db": {"apiKey": "[REDACTED]", "host": "db.internal"}, "port": 5432}


def test_call_arguments_that_are_a_json_scalar_are_redacted_as_text():
    """Arguments that are JSON but not an object or an array (a string, a number) are redacted as text, and kept byte for
    byte where nothing is redacted (not re-serialized: escapes, a number's zeros)."""
    from compactctl.redact import redact_json_text

    for text in ('"caf\\u00e9 au lait"', "12.50", "true"):
        assert redact_json_text(text) == text
    assert redact_json_text('"Xk9mP2vQ7rT4wZ8bN3cL6dF5"') == '"[REDACTED HIGH-ENTROPY STRING]"'


def test_a_cut_through_a_quoted_secret_that_opens_the_text_leaves_no_piece_of_it():
    """The window of a cut near the text's start starts at its first character: the opening quote of a quoted
    high-entropy string there (24 to 31 characters: under the bare rule's 32) is read with it."""
    token = "Xk9mP2vQ7rT4wZ8bN3cL6dF5"
    t = f'"{token}" was rejected'
    for n in range(2, len(token) + 1):
        out = cut(t, n)
        assert token[:1] not in out, (n, out)
