"""Key files built from their formats' specs with random bytes (no key literal in the repository, no ssh-keygen or
puttygen needed), and the shapes a tool shows them in.

Each generator returns (file text, secret lines): the lines whose any 8-character piece must never be left by redaction.
"""

from __future__ import annotations

import base64
import json
import random
import struct


def _string(b: bytes) -> bytes:
    return struct.pack(">I", len(b)) + b


def _wrap(s: str, width: int) -> list[str]:
    return [s[k : k + width] for k in range(0, len(s), width)]


def openssh_ed25519(rng: random.Random, comment: str = "dev@build-host-07.corp.example.com") -> tuple[str, list[str]]:
    """An unencrypted ed25519 key as ssh-keygen writes it (PROTOCOL.key): base64 wrapped at 70 columns. The default
    comment gives a 6-character last line (its padding bytes and a `=`), the one a review saw left."""
    pk, seed = rng.randbytes(32), rng.randbytes(32)
    pub = _string(b"ssh-ed25519") + _string(pk)
    check = rng.randbytes(4)
    private = check + check + _string(b"ssh-ed25519") + _string(pk) + _string(seed + pk) + _string(comment.encode())
    private += bytes(range(1, 1 + (-len(private)) % 8))  # padding 1, 2, 3 ... to the cipher's block size (8)
    blob = b"openssh-key-v1\0" + _string(b"none") + _string(b"none") + _string(b"") + struct.pack(">I", 1)
    blob += _string(pub) + _string(private)
    body = _wrap(base64.b64encode(blob).decode(), 70)
    text = "\n".join(["-----BEGIN OPENSSH PRIVATE KEY-----", *body, "-----END OPENSSH PRIVATE KEY-----"]) + "\n"
    return text, body[1:]  # (the first line is the format's fixed header)


def ppk(rng: random.Random, version: int = 2, algorithm: str = "ssh-rsa", private_bytes: int = 642) -> tuple[str, list[str]]:
    """A PuTTY private key file (PuTTY-User-Key-File-2, or -3 with its Argon2 lines), as puttygen writes it: base64
    lines of 64 characters. 642 private bytes give 13 full lines and a last one of 24 characters."""
    public = _string(algorithm.encode()) + rng.randbytes(270 if algorithm == "ssh-rsa" else 36)
    pub_lines = _wrap(base64.b64encode(public).decode(), 64)
    priv_lines = _wrap(base64.b64encode(rng.randbytes(private_bytes)).decode(), 64)
    lines = [f"PuTTY-User-Key-File-{version}: {algorithm}"]
    lines += ["Encryption: aes256-cbc" if version == 3 else "Encryption: none", f"Comment: {algorithm}-key-20240611"]
    lines += [f"Public-Lines: {len(pub_lines)}", *pub_lines]
    if version == 3:
        salt = rng.randbytes(16).hex()
        lines += ["Key-Derivation: Argon2id", "Argon2-Memory: 8192", "Argon2-Passes: 21", "Argon2-Parallelism: 1"]
        lines += [f"Argon2-Salt: {salt}"]
    mac = rng.randbytes(32 if version == 3 else 20).hex()
    lines += [f"Private-Lines: {len(priv_lines)}", *priv_lines, f"Private-MAC: {mac}"]
    return "\n".join(lines) + "\n", [*priv_lines, mac]


def pem_base64(rng: random.Random, before: bytes = b"", width: int = 76) -> tuple[str, list[str]]:
    """The base64 of a whole PEM file (`base64 key.pem`, a Kubernetes secret's `tls.key`), wrapped at `width` (0: one
    line). `before`: bytes ahead of the BEGIN line in what was encoded (1 or 2 put it at the other alignments)."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    body = ["".join(rng.choice(alphabet) for _ in range(64)) for _ in range(8)] + ["".join(rng.choice(alphabet) for _ in range(20)) + "=="]
    pem = "\n".join(["-----BEGIN RSA PRIVATE KEY-----", *body, "-----END RSA PRIVATE KEY-----"]) + "\n"
    b64 = base64.b64encode(before + pem.encode()).decode()
    lines = _wrap(b64, width) if width else [b64]
    # the secret: the characters that encode the key's body, not its BEGIN and END lines (fixed text), line by line
    a = -(-(len(before) + pem.index("\n") + 1) * 4 // 3)
    b = (len(before) + pem.rindex("-----END")) * 4 // 3
    width = width or len(b64)
    secret = [ln[max(a - k, 0) : max(b - k, 0)] for k, ln in zip(range(0, len(b64), width), lines, strict=True)]
    return "\n".join(lines) + "\n", [s for s in secret if s]


def pieces(secrets: list[str], n: int = 8) -> set[str]:
    """Every n-character piece of the secret lines (of the whole line when it is shorter)."""
    out: set[str] = set()
    for s in secrets:
        s = s.rstrip("=")
        out.update({s} if len(s) < n else {s[k : k + n] for k in range(len(s) - n + 1)})
    return out


def leaked(out: str, secret_pieces: set[str], n: int = 8) -> set[str]:
    """The pieces of `secret_pieces` (made by `pieces`) that `out` holds."""
    short = {p for p in secret_pieces if len(p) < n}
    return {out[k : k + n] for k in range(len(out) - n + 1)} & secret_pieces | {p for p in short if p in out}


def shapes(text: str) -> dict[str, str]:
    """A key file as tools show it: whole, cut before its last line and its last two, a numbered read (`     5→`,
    `cat -n`), JSON-escaped once and twice, grep's prefixes (`path:12:`, `path-12-`), a diff's removed and added
    lines, its last three lines (`tail -3`); Windows grep's `C:\\path:12:`, `less -N`'s `     12 `, a markdown quote's `> `."""
    lines = text.rstrip("\n").split("\n")
    cut1, cut2 = "\n".join(lines[:-1]), "\n".join(lines[:-2])
    return {
        "whole": text,
        "cut-before-last-line": cut1,
        "cut-before-last-two": cut2,
        "numbered-read": "\n".join(f"{k + 1:>6}→{ln}" for k, ln in enumerate(lines)),
        "numbered-read-cut": "\n".join(f"{k + 1:>6}→{ln}" for k, ln in enumerate(lines[:-1])),
        "cat-n": "\n".join(f"{k + 1:>6}\t{ln}" for k, ln in enumerate(lines)),
        "json-escaped": json.dumps({"output": text})[1:-1],
        "json-escaped-cut": json.dumps({"output": cut1})[1:-1],
        "json-escaped-twice": json.dumps(json.dumps({"output": text})),
        "json-escaped-twice-cut": json.dumps(json.dumps({"output": cut2})),
        "grep-prefix": "\n".join(f"keys/id.txt:{k + 1}:{ln}" for k, ln in enumerate(lines)),
        "grep-context": "\n".join(f"keys/id.txt-{k + 1}-{ln}" for k, ln in enumerate(lines)),
        "diff-removed": "\n".join(f"-{ln}" for ln in lines),
        "diff-added": "\n".join(f"+{ln}" for ln in lines),
        "diff-added-cut": "\n".join(f"+{ln}" for ln in lines[:-1]),
        "tail-3": "\n".join(lines[-3:]),
        "tail-2": "\n".join(lines[-2:]),
        "windows-grep": "\n".join(f"C:\\Users\\me\\.ssh\\id:{k + 1}:{ln}" for k, ln in enumerate(lines)),
        "windows-grep-cut": "\n".join(f"C:\\Users\\me\\.ssh\\id:{k + 1}:{ln}" for k, ln in enumerate(lines[:-1])),
        "windows-grep-tail-3": "\n".join(f"C:\\Users\\me\\.ssh\\id:{k + 1}:{ln}" for k, ln in enumerate(lines[-3:])),
        "windows-grep-json-escaped": json.dumps("\n".join(f"C:\\Users\\me\\id.ppk:{k + 1}:{ln}" for k, ln in enumerate(lines))),
        "less-n": "\n".join(f"{k + 1:>7} {ln}" for k, ln in enumerate(lines)),
        "less-n-cut": "\n".join(f"{k + 1:>7} {ln}" for k, ln in enumerate(lines[:-1])),
        "less-n-tail-3": "\n".join(f"{k + 1:>7} {ln}" for k, ln in enumerate(lines[-3:])),
        "blockquote": "\n".join(f"> {ln}" for ln in lines),
        "blockquote-cut": "\n".join(f"> {ln}" for ln in lines[:-1]),
    }
