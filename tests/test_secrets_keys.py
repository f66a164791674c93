"""Key files that the private-key rules, or compaction around them, left in part (a review after the thirty-eighth
session): a PuTTY `.ppk` file's private lines and MAC, the base64 of a whole PEM file (a Kubernetes secret's `tls.key`,
`base64 key.pem`), an ed25519 OpenSSH key's short last line, and the head excerpt of an output that holds a key. Each is
built from its format's spec with random bytes (tests/keys_data.py), and shown in the shapes a tool shows a file in."""

from __future__ import annotations

import json
import random
import time

import orjson
import pytest

from compactctl.redact import cut, redact, redact_json_text

from .conftest import cli, tool_session, write_jsonl
from .keys_data import leaked, openssh_ed25519, pem_base64, pieces, ppk, shapes

_rng = random.Random(5150)
KEYS = {
    "openssh-ed25519": openssh_ed25519(_rng),
    "ppk-v2-rsa": ppk(_rng, 2),
    "ppk-v3-rsa": ppk(_rng, 3),
    "ppk-v3-ed25519": ppk(_rng, 3, "ssh-ed25519", 48),
    "pem-base64-76": pem_base64(_rng),
    "pem-base64-64": pem_base64(_rng, width=64),
    "pem-base64-one-line": pem_base64(_rng, width=0),
    "pem-base64-aligned-1": pem_base64(_rng, b"\n"),
    "pem-base64-aligned-2": pem_base64(_rng, b"#\n"),
    "pem-base64-aligned-2-one-line": pem_base64(_rng, b"#\n", width=0),
}
SHAPES = sorted(shapes(KEYS["openssh-ed25519"][0]))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("key", sorted(KEYS))
def test_no_piece_of_a_key_file_survives_redaction(key, shape):
    """No 8-character piece of the key's secret lines (and no short last line whole) is left, in any shape a tool shows
    the file in; the lines after it are the tool's and stay; redaction is idempotent."""
    text, secret = KEYS[key]
    out = redact(f"$ cat ~/.ssh/id\n{shapes(text)[shape]}\n$ ls -la")
    assert not leaked(out, pieces(secret)), (key, shape, out)
    assert out.startswith("$ cat ~/.ssh/id\n") and out.endswith("\n$ ls -la"), out
    assert redact(out) == out


@pytest.mark.parametrize("key", sorted(KEYS))
def test_a_key_file_cut_anywhere_leaves_no_piece(key):
    """The file cut at every few characters (an output cap, an excerpt's end), and redact.cut through it."""
    text, secret = KEYS[key]
    secret_pieces = pieces(secret)
    for n in range(0, len(text), 3):
        assert not leaked(redact(text[:n]), secret_pieces), (key, n)
        assert not leaked(cut(redact("$ cat id\n" + text), n), secret_pieces), (key, n)


def test_the_ppk_lines_around_the_private_ones_are_kept():
    """Only the private part (its lines and the MAC) is the secret: the public key, the comment and the Argon2
    parameters stay for the summary to say which key it was."""
    text, _secret = KEYS["ppk-v3-ed25519"]
    out = redact(text)
    for kept in ("PuTTY-User-Key-File-3: ssh-ed25519", "Comment: ssh-ed25519-key-20240611", "Argon2-Passes: 21", "Private-Lines: 1"):
        assert kept in out
    assert "[REDACTED PRIVATE KEY]" in out


def test_a_ppk_files_mac_alone_is_redacted():
    """`grep Private-MAC *.ppk`: an encrypted key's MAC is keyed by its passphrase (one to try guesses against)."""
    _text, secret = KEYS["ppk-v3-rsa"]
    for line in (f"id.ppk:Private-MAC: {secret[-1]}", f"Private-MAC: {secret[-1]}"):
        out = redact(f"$ grep -r Private-MAC .\n{line}\n$ ls")
        assert secret[-1][:8] not in out and "Private-MAC: [REDACTED PRIVATE KEY]\n$ ls" in out, out


def test_a_kubernetes_secret_keeps_its_other_fields():
    text, secret = KEYS["pem-base64-one-line"]
    manifest = f"apiVersion: v1\nkind: Secret\ndata:\n  tls.key: {text.strip()}\nkind: Secret\ntype: kubernetes.io/tls\n"
    out = redact(manifest)
    assert not leaked(out, pieces(secret))
    assert out.endswith("  tls.key: [REDACTED PEM BASE64]\nkind: Secret\ntype: kubernetes.io/tls\n"), out


def test_an_ed25519_keys_short_last_line_goes_with_its_key():
    """Its last line (6 characters here: the comment's end and the padding) was left where the rules stop at a line under
    8 characters: the block cut before its END line, and its last lines without the BEGIN line (`tail -3`)."""
    text, secret = KEYS["openssh-ed25519"]
    assert len(secret[-1]) == 6
    lines = text.rstrip("\n").split("\n")
    for shown in ("\n".join(lines[:-1]), "\n".join(lines[-3:]), "\n".join(lines[-2:])):
        out = redact(f"$ run\n{shown}\n$ ls")
        assert secret[-1] not in out and out.endswith("\n$ ls"), out
    # a word after a cut key that is not a whole line of base64 is the tool's
    out = redact("\n".join(lines[:-2]) + "\nError: the key is cut")
    assert out.endswith("\nError: the key is cut"), out


# the keys of the end-to-end tests: one of each kind
E2E = ("openssh-ed25519", "ppk-v2-rsa", "ppk-v3-ed25519", "pem-base64-76", "pem-base64-aligned-1")


def _session_with(texts: list[str]) -> list[dict]:
    msgs = tool_session(12, 1500)
    for k, text in enumerate(texts):
        at = 3 + 2 * k  # the old outputs, which compaction digests or summarizes
        msgs[at]["content"] = text + "\n" + "\n".join(f"render_report_{j} ok" for j in range(40))
    return msgs


def _derived(stdout: bytes, kept: set[str]) -> str:
    """What compaction wrote (digests, excerpts, the summary and its index): an output kept as it was is the user's own."""
    contents = [orjson.loads(x).get("content") for x in stdout.splitlines()]
    return "\n".join(str(c) for c in contents if c not in kept)


def test_an_excerpt_of_an_output_that_holds_a_key_shows_none_of_it(tmp_path):
    """prune's head excerpt (an output's first lines, "as they were", where no run of lines shows more of what the agent
    uses) showed a private key whole, though a digest quotes no line of such an output nor shows a run of its lines."""
    text, secret = KEYS["openssh-ed25519"]
    msgs = tool_session(12, 1500)
    for at in (3, 5, 7, 9):
        msgs[at]["content"] = text + "\n".join(f"render_report_{j} ok" for j in range(40))
    src = write_jsonl(tmp_path / "s.jsonl", msgs)
    kept = {m["content"] for m in msgs if m["role"] == "tool"}
    excerpts = 0
    for window in ("3000", "3500", "4000", "4500"):
        r = cli("compact", str(src), "--context-window", window, "-q")
        assert r.returncode == 0, r.stderr
        derived = _derived(r.stdout, kept)
        excerpts += "excerpt: the first" in derived
        assert not leaked(derived, pieces(secret)), window
    assert excerpts  # (what the test is about)


@pytest.mark.parametrize("form", ["whole", "cut-before-last-line", "numbered-read", "json-escaped"])
def test_a_compacted_session_holds_no_piece_of_a_key_file(tmp_path, form):
    """End to end, offline: each key file in an old tool output; compact at windows where it is digested (names, head
    excerpt) or summarized (the summary's index), and prune; nothing they wrote holds an 8-character piece of it."""
    texts = [shapes(KEYS[k][0])[form] for k in E2E]
    secret_pieces = pieces([s for k in KEYS for s in KEYS[k][1]])
    msgs = _session_with(texts)
    src = write_jsonl(tmp_path / "s.jsonl", msgs)
    kept = {m["content"] for m in msgs if m["role"] == "tool"}
    runs = [("compact", w) for w in ("1500", "2500", "4000", "6000", "8000")] + [("prune", w) for w in ("1500", "3000")]
    for command, window in runs:
        for extra in ([], ["--check-names"]):
            r = cli(command, str(src), "--context-window", window, "-q", *extra)
            assert r.returncode == 0, r.stderr
            assert not leaked(_derived(r.stdout, kept), secret_pieces), (command, window, extra)


def test_no_piece_of_a_key_file_reaches_the_llm_request(tmp_path, server):
    """The same, summarized by an LLM: no request body holds a piece (the echo model sends the request back as the
    summary: the output is checked too)."""
    texts = [shapes(KEYS[k][0])[form] for k in E2E for form in ("whole", "numbered-read-cut")]
    secret_pieces = pieces([s for k in KEYS for s in KEYS[k][1]])
    msgs = _session_with(texts)
    src = write_jsonl(tmp_path / "s.jsonl", msgs)
    kept = {m["content"] for m in msgs if m["role"] == "tool"}
    for window in ("1500", "2500", "4000"):
        r = cli("compact", str(src), "--context-window", window, "--summarizer", "llm", "--base-url", server.url, "--llm-model", "echo")
        assert r.returncode == 0, r.stderr
        assert not leaked(_derived(r.stdout, kept), secret_pieces), window
    assert server.raw
    for body in server.raw:
        assert not leaked(orjson.loads(body)["messages"][1]["content"], secret_pieces)


# -- adversarial inputs: each of the rules added here in linear time

_ADVERSARIAL = {
    "blanks": " " * 100_000,
    "blank lines after a header": "Private-Lines: 9\n" + " \n" * 50_000,
    "ppk headers without lines": "Private-Lines: 14\nPrivate-MAC: \n" * 10_000,
    "BEGIN lines without an END": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n" * 10_000,
    "short lines after BEGIN": "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "AbCd\n" * 200_000,
    "base64 BEGIN forms": "LS0tLS1CRUdJTi 0tLS0tQkVHSU4g tLS0tLUJFR0lOI LS0tLS1FTkQg\n" * 10_000,
    "a 5 MB line of base64": "LS0tLS1CRUdJTi" + "QUJDRA" * 850_000,
    "a 5 MB line of base64 without a form": "QUJDRA" * 850_000 + "\n-----END RSA PRIVATE KEY-----",
    "short lines": "AbCd\n" * 200_000 + "Private-MAC: 00ff",
    "END forms under short lines": ("AQID\n" * 50 + "LS0tLS1FTkQg\n") * 4_000,
    "blanks before an END form": (" " * 5_000 + "\n") * 20 + "LS0tLS1FTkQgUlNB",
}


@pytest.mark.parametrize("name", sorted(_ADVERSARIAL))
def test_the_key_rules_take_linear_time_on_adversarial_inputs(name):
    """Each under ~0.1 s on a 2-core machine; the bound is generous (a quadratic took minutes on these)."""
    text = _ADVERSARIAL[name]
    t0 = time.process_time()
    redact(text)
    assert time.process_time() - t0 < 2.0, name


# -- JSON-escaped line breaks (a review of the commits above): after each `\n` (backslash-n, a JSON text's or a one-line
# env file's), a grep path prefix ran to the text's end looking for its colon: quadratic (1 MB: 225 s)

_WRAP_LINE = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM0"  # 76 characters
_ESCAPED_BREAKS = {
    "base64 PEM, escaped lines": lambda k: "LS0tLS1CRUdJTiBSU0Eg" + ("\\n" + _WRAP_LINE) * (k // 78),
    "ppk, escaped lines": lambda k: "Private-Lines: 9" + ("\\n" + _WRAP_LINE) * (k // 78),
    "cut PEM, escaped lines": lambda k: "-----BEGIN RSA PRIVATE KEY-----" + ("\\n" + _WRAP_LINE) * (k // 78),
    "base64 PEM forms, escaped twice": lambda k: ("LS0tLS1CRUdJTi" + "\\\\n" + "A" * 10) * (k // 27),
    # (a Windows path's parts may run through escaped lines: 16 of them at most)
    "cut PEM, escaped Windows paths": lambda k: "-----BEGIN RSA PRIVATE KEY-----" + ("\\nC:\\" + "A" * 10) * (k // 15),
    "ppk, Windows path parts": lambda k: "Private-Lines: 9\n" + "C:" + ("\\" + "a-" * 100) * (k // 201),
}


@pytest.mark.parametrize("name", sorted(_ESCAPED_BREAKS))
def test_the_key_rules_take_linear_time_on_escaped_line_breaks(name):
    """1 MB well under the bound (~0.1 s; it took minutes), and 4x the text takes about 4x the time, not 16x."""
    times = []
    for size in (1 << 18, 1 << 20):
        text = _ESCAPED_BREAKS[name](size)
        t0 = time.process_time()
        redact(text)
        times.append(time.process_time() - t0)
    assert times[1] < 3.0, (name, times)
    assert times[1] < 10 * times[0] + 0.2, (name, times)


# -- what is not a key's (the same review): only a key file's own lines go

_HASHES = "\n".join(f"{k:040x}" for k in (0x3F2A9C, 0x77E01B5D, 0x9A0C44E1F))  # `git log --format=%H`'s lines


def _not_redacted(out: str, *kept: str) -> None:
    for word in kept:
        assert word in out, (word, out)


@pytest.mark.parametrize("key", ["pem-base64-76", "pem-base64-64", "pem-base64-one-line", "pem-base64-aligned-2"])
def test_a_base64_pem_blob_takes_only_its_own_lines(key):
    """The lines next to a blob that are words (file names) or hashes are not its wrapped lines: only lines of its width
    go (and a shorter last one that ends it)."""
    text, secret = KEYS[key]
    blob = text.strip("\n")
    tail = "\n".join(blob.split("\n")[-3:])  # (its last lines: the END form's line walks above)
    for shown in (
        f"$ ls; base64 -w0 pub.pem\nDockerfile\nMakefile\nrequirements\n{blob}\n$ ls\nDockerfile\nMakefile\nsrc",
        f"{blob}\nDockerfile\nMakefile\nsrc",
        f"$ git log --format=%H\n{_HASHES}\n{blob}\n$ ls",
        f"$ git log --format=%H\n{_HASHES}\n{tail}\n$ ls",
    ):
        out = redact(shown)
        assert not leaked(out, pieces(secret)), out
        assert "[REDACTED PEM BASE64]" in out
        _not_redacted(out, *[w for w in ("Dockerfile", "Makefile", "requirements", "src", *_HASHES.split("\n")) if w in shown])


def test_prose_about_a_ppk_file_is_not_redacted():
    """Its field names in a sentence: only a file's shape (`Private-Lines: N` ending its line, then base64 lines of
    PuTTY's width; a MAC of its length) is a key's."""
    for prose in (
        "The field Private-Lines: 14 indicates the number of lines of the private key.",
        "Private-MAC: followed by hex",
        "Field\nPrivate-MAC: deadbeef is an HMAC",
        "Private-Lines: 2\nrequirements of the format\n",
        "See Private-MAC: abc for details",
    ):
        assert redact(prose) == prose


def test_a_short_line_above_an_end_line_is_a_keys_only_after_its_body():
    """`ok` above a cut key's END line is the tool's, as is the word above it: a short line is a key's last line only
    under the key's full lines."""
    for text in ("building\nok\n-----END RSA PRIVATE KEY-----", "$ make\nok\n-----END OPENSSH PRIVATE KEY-----\n$ ls"):
        assert redact(text) == text


def _joined(text: str) -> dict[str, str]:
    """A file's lines as strings (a JSON array, Python's and JavaScript's concatenated literals), joined by blanks or
    HTML's breaks, and under bat's line numbers."""
    lines = text.rstrip("\n").split("\n")
    return {
        "json-array": orjson.dumps(lines).decode(),
        "json-array-indented": orjson.dumps(lines[:-1], option=orjson.OPT_INDENT_2).decode(),
        "python-concat": "key = (\n" + "\n".join(f'    "{ln}\\n"' for ln in lines) + "\n)",
        "js-plus": "const k =\n" + "\n".join(f'  "{ln}\\n" +' for ln in lines) + ' "";',
        "blank-joined": " ".join(lines),
        "html-br": "<p>" + "<br>".join(lines) + "</p>",
        "bat": "\n".join(f"{k + 1:>4} │ {ln}" for k, ln in enumerate(lines)),
        "bat-cut": "\n".join(f"{k + 1:>4} │ {ln}" for k, ln in enumerate(lines[:-1])),
    }


@pytest.mark.parametrize("shape", sorted(_joined("x")))
@pytest.mark.parametrize("key", ["ppk-v2-rsa", "ppk-v3-rsa", "ppk-v3-ed25519"])
def test_a_ppk_files_private_part_goes_in_joined_shapes(key, shape):
    """Its short last private line (24 characters: under the high-entropy rule's 32) and its MAC (hex: under its
    entropy limit) were left where the PuTTY rule did not read the shape; the public lines are another rule's."""
    text, secret = KEYS[key]
    out = redact(f"$ cat id.ppk\n{_joined(text)[shape]}\n$ ls")
    assert not leaked(out, pieces(secret)), out
    assert "Private-Lines:" in out and out.endswith("\n$ ls")


def test_a_vault_recovery_token_is_redacted():
    """`vault operator generate-root -dr-token`'s recovery tokens (hvr.) as the service (hvs.) and batch (hvb.) ones."""
    token = "hvr." + "CAESIKq3Zx8vLmN0pQr7sTuV2wXy" * 2
    out = redact(f"$ vault operator generate-root -decode=... -otp=...\nEncoded token: {token}\n")
    assert token[4:12] not in out and "[REDACTED VAULT TOKEN]" in out, out


@pytest.mark.parametrize("key", sorted(KEYS))
def test_a_key_files_lines_as_a_json_array_argument_are_redacted_together(key):
    """A call's arguments are redacted string by string (redact_json_text, for the LLM request): a key file's lines as
    an array were each too short or too plain for the key rules (an ed25519 body left 42 pieces, a ppk's last line 17;
    found by helper 116). The other strings and keys of the arguments stay."""
    text, secret = KEYS[key]
    args = orjson.dumps({"path": "notes.txt", "lines": text.split("\n"), "mode": "append"}).decode()
    out = redact_json_text(args)
    assert not leaked(out, pieces(secret)), (key, out)
    obj = orjson.loads(out)
    assert (obj["path"], obj["mode"]) == ("notes.txt", "append")
    assert redact_json_text(out) == out


def test_an_array_of_plain_lines_is_left_as_it_is():
    args = orjson.dumps({"lines": ["def f():", "    return 1", "", "ok"], "n": [1, 2]}).decode()
    assert redact_json_text(args) == args


# -- mutation testing of redact.py (bench/mutation.py --module redact): what its survivors showed no test pinned


def _body_lines(rng: random.Random, n: int, width: int = 64) -> list[str]:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    return ["".join(rng.choice(alphabet) for _ in range(width)) for _ in range(n)]


def test_the_tail_of_a_long_key_goes_as_one_key():
    """`tail -n 200` of a 16384-bit RSA key (about 200 lines of base64 above its END line): the lines above its END line
    are a key's up to 256 of them, and go with it, not line by line as high-entropy strings."""
    body = _body_lines(random.Random(71), 200)
    out = redact("$ tail -n 201 big.pem\n" + "\n".join(body) + "\n-----END RSA PRIVATE KEY-----\n$ ls")
    assert out == "$ tail -n 201 big.pem\n[REDACTED PRIVATE KEY]\n$ ls", out[:200]


def test_the_tail_of_an_encrypted_key_goes_whole_with_its_headers():
    """Without its BEGIN line (`tail -n +2`), an encrypted key's RFC 1421 headers, the blank line after them and its body
    are one key's."""
    iv = "".join(random.Random(72).choice("0123456789ABCDEF") for _ in range(32))
    body = _body_lines(random.Random(73), 3)
    text = "\n".join(["Proc-Type: 4,ENCRYPTED", f"DEK-Info: AES-128-CBC,{iv}", "", *body, "-----END RSA PRIVATE KEY-----"])
    assert redact(f"$ tail -n +2 key.pem\n{text}\n$ ls") == "$ tail -n +2 key.pem\n[REDACTED PRIVATE KEY]\n$ ls"


def test_a_word_above_an_end_line_in_a_numbered_read_or_grep_is_the_tools():
    """As `ok` above an END line is the tool's (test_a_short_line_above_an_end_line_is_a_keys_only_after_its_body), under
    a line number or grep's `path:12:` too: the prefix is not part of the word, nor of the line above it."""
    for text in (
        "   118→building\n   119→PASSED\n   120→-----END RSA PRIVATE KEY-----",
        "deploy/fixtures/ssh/keys/id.txt-11-building\ndeploy/fixtures/ssh/keys/id.txt-12-ok\ndeploy/fixtures/ssh/keys/id.txt:13:-----END OPENSSH PRIVATE KEY-----",
    ):
        assert redact(text) == text


def test_a_keys_short_last_line_that_reads_as_a_word_goes_with_its_key():
    """A short last line of letters only (`Zmxv`) under a key's full line is the key's, not a word of the tool's: the line
    right above it tells, not an encrypted key's header above that (a small key: one full line)."""
    body = [*_body_lines(random.Random(74), 2), "Zmxv"]
    encrypted = "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,9F3A61C0D2B4E5F60718293A4B5C6D7E\n\n" + "\n".join(body[-2:])
    for shown in ("\n".join(body[-2:]), "\n".join(f"{k + 40:>6}→{ln}" for k, ln in enumerate(body)), encrypted):
        out = redact(f"$ tail -3 key.pem\n{shown}\n-----END RSA PRIVATE KEY-----\n$ ls")
        assert "Zmxv" not in out and out.endswith("[REDACTED PRIVATE KEY]\n$ ls"), out


@pytest.mark.parametrize("width", [76, 64, 72, 60])
@pytest.mark.parametrize("before", [b"", b"\n", b"#\n"])
def test_the_last_lines_of_a_base64_pem_blob_go_as_one_blob(before, width):
    """`base64 key.pem | tail -n N` (its BEGIN form not shown): the lines above the one that holds its END or `KEY-----`
    form are its wrapped lines, at each alignment of the PEM text in the base64, and the blob goes as one."""
    text, secret = pem_base64(random.Random(75), before, width)
    lines = text.strip("\n").split("\n")
    for n in (2, 3, 5):
        out = redact(f"$ base64 key.pem | tail -n {n}\n" + "\n".join(lines[-n:]) + "\n$ ls")
        assert out == f"$ base64 key.pem | tail -n {n}\n[REDACTED PEM BASE64]\n$ ls", out


def test_a_long_word_above_a_one_line_blob_is_not_its_wrapped_line():
    """A line above a blob is one of its wrapped lines only when it is as wide as the blob's line (or the lines wrapped
    after it) and whole quanta of base64: a long name listed above a one-line blob stays."""
    text, secret = KEYS["pem-base64-one-line"]
    shown = f"$ ls; base64 -w0 key.pem\nApplicationController\nUserAccountsRepository\n{text.strip()}\n$ ls"
    out = redact(shown)
    assert not leaked(out, pieces(secret)), out
    assert out == "$ ls; base64 -w0 key.pem\nApplicationController\nUserAccountsRepository\n[REDACTED PEM BASE64]\n$ ls", out


@pytest.mark.parametrize("key", ["pem-base64-76", "pem-base64-one-line", "pem-base64-aligned-2"])
def test_a_base64_pem_blob_in_a_json_text_keeps_the_escapes_around_it(key):
    """In a JSON text (a tool output as a string), the `\\n` before a blob is the text's line break, not the blob's first
    letter: the text stays JSON, with the blob's mark on its own line."""
    text, secret = KEYS[key]
    doc = json.dumps({"output": f"$ base64 key.pem\n{text.strip()}\n$ ls"})
    out = redact(doc)
    assert json.loads(out) == {"output": "$ base64 key.pem\n[REDACTED PEM BASE64]\n$ ls"}, out


def test_the_tail_of_a_double_spaced_key_goes_with_its_short_last_line():
    """`for line in open("id"): print(line)` shows a file double-spaced: under the tail of a key (no BEGIN line), the
    blank line between its short last line (6 characters) and its END line took the place of that line, and the short
    line, under the 8 characters of a full one, was left (found while classifying a mutant of redact._lines_above). A
    short word above a double-spaced END line is still the tool's."""
    text, secret = KEYS["openssh-ed25519"]
    lines = text.rstrip("\n").split("\n")
    spaced = "\n\n".join(lines[1:]).split("\n")
    numbered = "\n".join(f"{k + 2:>6}→{ln}" for k, ln in enumerate(spaced))  # (a numbered read's blank line: its number)
    for shown in ("\n".join(spaced), "\n\n".join(lines[-3:]), "\r\n\r\n".join(lines[-2:]), numbered):
        out = redact(f"$ python3 show.py id\n{shown}\n\n$ ls")
        assert not leaked(out, pieces(secret)), out
        assert out.startswith("$ python3 show.py id\n") and out.endswith("\n$ ls"), out
    for kept in ("building\n\nok\n\n-----END RSA PRIVATE KEY-----", "$ make\n\nDone\n\n-----END OPENSSH PRIVATE KEY-----\n$ ls"):
        assert redact(kept) == kept


def test_a_short_word_above_the_tail_of_a_key_is_the_tools():
    """Only the line right above an END line (after blank lines) may be a key's short last line: a short word above the
    key's lines (`PASSED`, `Done`) is the tool's, and stays."""
    body = [*_body_lines(random.Random(76), 2), "Zm9v"]
    for shown in (
        "$ ./verify.sh\nPASSED\n" + "\n".join(body) + "\n-----END RSA PRIVATE KEY-----",
        "$ ./verify.sh\nDone\n" + "\n".join(body) + "\n\n-----END RSA PRIVATE KEY-----",
        "$ ./verify.sh\nPASSED\nZm9v\n\n-----END RSA PRIVATE KEY-----",
    ):
        out = redact(shown)
        assert out.split("\n")[:2] == shown.split("\n")[:2] and out.endswith("\n[REDACTED PRIVATE KEY]"), out
        assert not any(line in out for line in body), out
