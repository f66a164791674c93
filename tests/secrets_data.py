"""Planted secrets, one or more per family of the gitleaks / detect-secrets rule sets, generated from a
fixed seed (fake values, built at run time: no key-shaped literal sits in the repository).

`PLANTED` is a list of (family, secret, text that carries it): the secret is the part that must never
reach an LLM request, the cache, the report or stderr.
"""

from __future__ import annotations

import base64
import random
import string

from . import keys_data

_rng = random.Random(1414)
UP, LOW, DIG = string.ascii_uppercase, string.ascii_lowercase, string.digits


def _r(n: int, alphabet: str = UP + LOW + DIG) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def _key_block(kind: str = "RSA ") -> tuple[str, str]:
    body = "\n".join(_r(64, UP + LOW + DIG + "+/") for _ in range(12))
    return body, f"-----BEGIN {kind}PRIVATE KEY-----\n{body}\n-----END {kind}PRIVATE KEY-----"


def _planted() -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []

    def add(family: str, secret: str, text: str) -> None:
        out.append((family, secret, text))

    k = "AKIA" + _r(16, UP + DIG)
    add("aws-access-key", k, f"aws_access_key_id = {k}")
    k = _r(40, UP + LOW + DIG + "/+")
    add("aws-secret-key", k, f"aws_secret_access_key = {k}")
    k = _r(40, UP + LOW + DIG + "/+")
    add("aws-secret-key-env", k, f"export AWS_SECRET_ACCESS_KEY={k}")
    pw = "Tr0ub4dor-" + _r(8)
    add("curl-user", pw, f"curl -u admin:{pw} https://api.example.com/v1/items")
    pw = "pa55-" + _r(10)
    add("curl-user-long", pw, f"curl --user deploy:{pw} -X POST https://ci.example.com/hook")
    b = base64.b64encode(f"alice:{_r(12)}".encode()).decode()
    add("basic-auth-header", b, f"curl -H 'Authorization: Basic {b}' https://example.com")
    pw = "s3cr3t " + _r(10)  # with a space: a JSON string value
    add("json-password", pw, '{"user": "bob", "password": "' + pw + '", "port": 5432}')
    pw = _r(14)
    add("yaml-password", pw, f"database:\n  user: app\n  password: {pw}\n  host: db")
    tok = _r(24)
    add("yaml-token", tok, f"slack:\n  token: '{tok}'")
    sec = _r(20)
    add("env-secret", sec, f"CLIENT_SECRET={sec}")
    tok = _r(30)
    add("npmrc-authtoken", tok, f"//registry.npmjs.org/:_authToken={tok}")
    k = "sk_live_" + _r(24)
    add("stripe", k, f"stripe.api_key = '{k}'")
    k = "rk_test_" + _r(24)
    add("stripe-restricted", k, f"use {k} for tests")
    k = "hf_" + _r(34, UP + LOW)
    add("hugging-face", k, f"HF_TOKEN {k}")
    k = "npm_" + _r(36)
    add("npm", k, f"npm token is {k}")
    k = "ghp_" + _r(36)
    add("github-pat", k, f"git clone https://{k}@github.com/o/r.git")
    k = "github_pat_" + _r(22) + "_" + _r(59)
    add("github-fine-grained", k, f"GITHUB_TOKEN: {k}")
    k = "glpat-" + _r(20, UP + LOW + DIG + "-_")
    add("gitlab", k, f"private token {k}")
    k = "xoxb-" + _r(12, DIG) + "-" + _r(12, DIG) + "-" + _r(24)
    add("slack", k, f"bot {k}")
    k = "https://hooks.slack.com/services/T" + _r(8, UP + DIG) + "/B" + _r(8, UP + DIG) + "/" + _r(24)
    add("slack-webhook", k, f"post to {k}")
    k = "AIza" + _r(35, UP + LOW + DIG + "_-")
    add("google-api-key", k, f"maps key {k}")
    k = "sk-proj-" + _r(48, UP + LOW + DIG + "_-")
    add("openai", k, f"OPENAI_API_KEY={k}")
    k = "sk-ant-api03-" + _r(93, UP + LOW + DIG + "_-")
    add("anthropic", k, f"the key {k} works")

    def b64url(s: bytes) -> str:
        return base64.urlsafe_b64encode(s).decode().rstrip("=")

    k = b64url(b'{"alg":"HS256","typ":"JWT"}') + "." + b64url(b'{"sub":"1234567890","name":"x"}') + "." + _r(43, UP + LOW + DIG + "_-")
    add("jwt", k, f"Cookie: session={k}")
    body, block = _key_block()
    add("private-key", body.splitlines()[5], f"key file:\n{block}\n")
    body, block = _key_block("OPENSSH ")
    add("private-key-openssh", body.splitlines()[7], block)
    body, block = _key_block("EC ")
    add("private-key-unterminated", body.splitlines()[3], block.rsplit("\n", 1)[0])  # END line lost
    pw = _r(16)
    add("postgres-url", pw, f"DATABASE_URL=postgres://app:{pw}@db.internal:5432/prod")
    pw = _r(12)
    add("mongodb-url", pw, f"mongodb+srv://root:{pw}@cluster0.example.net/test")
    k = _r(86, UP + LOW + DIG + "+/") + "=="
    add("azure-storage", k, f"DefaultEndpointsProtocol=https;AccountName=x;AccountKey={k};EndpointSuffix=core.windows.net")
    k = _r(3, LOW) + "8Q~" + _r(34, UP + LOW + DIG)
    add("azure-ad-secret", k, f"client secret {k}")
    k = _r(40, UP + LOW + DIG)
    add("high-entropy-quoted", k, f'const KEY = "{k}";')
    tok = _r(40, UP + LOW + DIG + "._-")
    add("bearer", tok, f"Authorization: Bearer {tok}")
    k = "SG." + _r(22) + "." + _r(43)
    add("sendgrid", k, f"sendgrid {k}")
    k = "dop_v1_" + _r(64, "0123456789abcdef")
    add("digitalocean", k, f"DO token {k}")
    k = "pypi-AgEIcHlwaS5vcmc" + _r(60, UP + LOW + DIG + "_-")
    add("pypi", k, f"twine upload -p {k}")
    k = _r(9, DIG) + ":AA" + _r(33, UP + LOW + DIG + "_-")
    add("telegram", k, f"bot token {k}")
    pw = _r(12)
    add("password-flag", pw, f"mysqladmin --password={pw} status")
    pw = "Tr0ub4dor3" + _r(6)
    add("env-pass", pw, f"DB_PASS={pw}")
    pw = "Zebra-Quokka-" + _r(4, DIG)
    add("json-pass", pw, '{"user":"admin","pass":"' + pw + '"}')
    pw = "Hunter2" + _r(8)
    add("mysql-p", pw, f"mysql -u root -p{pw} appdb")
    pw = "CorrectHorse" + _r(4, DIG)
    add("sshpass", pw, f"sshpass -p '{pw}' ssh deploy@10.0.0.5")
    pw = "Sup3r" + _r(10)
    add("url-password-no-user", pw, f"REDIS_URL=redis://:{pw}@cache.internal:6379/0")
    b = base64.b64encode(f"ci:{_r(12)}".encode()).decode()
    add("docker-auth", b, '{"auths": {"ghcr.io": {"auth": "' + b + '"}}}')
    # thirty-third session (a security review): each of these reached the LLM request, whole or in part
    k = _r(40, "0123456789abcdef")
    add("auth-header-token", k, f"curl -H 'Authorization: token {k}' https://api.github.com/user")
    pw = _r(6) + "@" + _r(12)  # an unescaped @ in the password: the part after it was left
    add("url-password-with-at", pw.split("@")[1], f"psql postgres://app:{pw}@db.internal:5432/prod")
    k = _r(40, "0123456789abcdef")
    add("url-token-user", k, f"git clone https://{k}@gitea.example.com/o/r.git")
    k = _r(24)
    add("signing-key", k, f"JWT_SIGNING_KEY={k}")
    pw = _r(14)
    add("yaml-passphrase-words", pw, f"ssh:\n  passphrase: correct horse {pw}\n  user: deploy")
    pw = _r(16)
    add("docker-login-p", pw, f"docker login -u me -p {pw} registry.example.com")
    pw = _r(16)
    add("password-stdin-echo", pw, f"echo {pw} | docker login ghcr.io -u me --password-stdin")
    k = "dckr_pat_" + _r(27, UP + LOW + DIG + "_-")
    add("docker-pat", k, f"DOCKERHUB_TOKEN {k}")
    k = "sntrys_" + base64.b64encode(b'{"iat":1700000000.0,"url":"https://sentry.io","org":"acme"}').decode().rstrip("=") + "_" + _r(43)
    add("sentry-token", k, f"sentry-cli --auth-token {k} releases new 1.0")
    k = "ATATT3" + _r(180, UP + LOW + DIG + "_-") + "=" + _r(8, UP + DIG)
    add("atlassian-token", k, f"jira token {k}")
    k = _r(48, UP + LOW + DIG)
    add("json-unicode-escaped", k, '{"value": "\\u0073k-proj-' + k + '"}')  # "sk-proj-..." as a JSON escape
    k = _r(18, UP + LOW + DIG) + "\\/" + _r(10, UP + LOW + DIG) + "\\/" + _r(10, UP + LOW + DIG)
    add("json-slash-escaped", k, '{"Parameter": {"Name": "/prod/db", "Value": "' + k + '"}}')  # a key with / written as \/
    # a review after the thirty-eighth session: key files the key rules left in part (tests/keys_data.py)
    rng = random.Random(_rng.random())
    text, secret = keys_data.ppk(rng, 2)
    add("putty-ppk", secret[-2], f"$ cat ~/.ssh/id.ppk\n{text}")  # its short last private line
    text, secret = keys_data.ppk(rng, 3, "ssh-ed25519", 48)
    add("putty-ppk-v3-mac", secret[-1], text)
    text, secret = keys_data.pem_base64(rng, width=0)
    add("pem-base64", secret[0][:40], f"  tls.key: {text.strip()}\n")
    text, secret = keys_data.openssh_ed25519(rng)
    add("openssh-ed25519-cut", secret[-1], text.rsplit("-----END", 1)[0])  # its short last line
    return out


PLANTED = _planted()
FAMILIES = sorted({f for f, _, _ in PLANTED})
