"""Key files that the private-key rules, or compaction around them, left in part (a review after the thirty-eighth
session): a PuTTY `.ppk` file's private lines and MAC, the base64 of a whole PEM file (a Kubernetes secret's `tls.key`,
`base64 key.pem`), an ed25519 OpenSSH key's short last line, and the head excerpt of an output that holds a key. Each is
built from its format's spec with random bytes (tests/keys_data.py), and shown in the shapes a tool shows a file in."""

from __future__ import annotations

import random

import orjson

from .conftest import cli, tool_session, write_jsonl
from .keys_data import leaked, openssh_ed25519, pieces

_rng = random.Random(5150)
KEYS = {
    "openssh-ed25519": openssh_ed25519(_rng),
}


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
