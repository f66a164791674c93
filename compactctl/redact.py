"""Secrets are redacted before anything is sent to an LLM, and before any cut.

The rules are a data table, one row per secret family, taken from the families of the maintained
rule sets of gitleaks (MIT, github.com/gitleaks/gitleaks, config/gitleaks.toml) and detect-secrets
(Apache-2.0, github.com/Yelp/detect-secrets, detect_secrets/plugins/): the regexes are rewritten
here for Python, widened where a truncated or reformatted secret must still be caught (a private key
whose END line is gone), and each has literal hints that must be present before its regex runs
(most text holds no secret: the common case costs one lower-casing and a few substring tests).

`redact(text)` replaces each secret by `[REDACTED <KIND>]` (for key = value shapes only the value).
It is idempotent, and runs on whole texts: callers cut (cap) only what it returned.

`cut(text, n)` is `text[:n]` for the texts compaction writes back (a digest's command and error lines, a
cut argument, a summary line): it never leaves a piece of a secret, which no rule would recognize later (the
next compaction's LLM request is redacted, a fragment without its prefix or length is not). Only a cut
through a long word, or after a key word, is looked at, so compaction keeps its speed.
"""

from __future__ import annotations

import base64
import functools
import math
import re
import string
from collections import Counter

# The keys whose values are secrets in `key: value`, `key=value`, `"key": "value"` (JSON, YAML, env, ini).
_KEY = (
    r"(?:password|passwd|passphrase|pwd|secret|token|api[_\-]?key|apikey|access[_\-]?key|"
    r"auth[_\-]?key|private[_\-]?key|client[_\-]?secret|credentials?|_authtoken|session[_\-]?key|"
    r"(?:signing|encryption|master)[_\-]?key)[A-Za-z0-9_.\-]*"
)
_NOT_A_VALUE = r"(?!(?:true|false|null|none|nil|undefined|\d{1,12}(?:\.\d+)?)\b|\[REDACTED)"
# a string literal's prefix in code (Python's bytes, raw or unicode: `secret=b"..."`; not f, whose value is mostly code)
_STR_PREFIX = r"(?:[bB][rR]?|[rR][bB]?|[uU])?"
# a quoted value that is only a variable: "${GH_TOKEN}", "$API_KEY", "${{ secrets.DB_PASSWORD }}"
_NOT_A_VARIABLE = r"(?!\$\{[^}\"'\n]*\}\}?[\"'])(?!\$[A-Za-z_]\w*[\"'])"

# What may stand before a key's line where a tool printed it: a numbered read's line number (`     5→`, `cat -n`), grep's
# `path:12:` / `path-12-` / `12:`, a diff's `-` / `+`.
# Never two runs of blanks side by side in the patterns that use it: a failing match then took the square (or the
# cube) of a blank run's length.
# A path holds no backslash (after a JSON text's escaped line break, a path that could hold one was scanned to the
# text's end for a colon, from each line: quadratic) and is 255 characters at most; a Windows path (Select-String's,
# `C:\\Users\\me\\id.ppk:12:`, its backslashes JSON-escaped or not) is 16 such parts at most after its drive. Also
# `less -N`'s `     12 `, bat's `  12 │ ` and a markdown quote's `> `.
_KEY_PFX = r"(?:\d+(?:→|\t| )|\d+ +│|>|[A-Za-z]:(?:\\+[^\s:\\]{1,255}){1,16}[:-](?:\d+[:-])?|[^\s:\\]{0,255}[:-](?:\d+[:-])?)"
# What stands between two lines of a key: blanks, a newline or JSON's escaped one (escaped once or more), a prefix above,
# up to three times (blank lines: an encrypted key's RFC 1421 headers end with one).
_KEY_APART = r"[ \t]*(?:(?:\r?\n|(?:\\+r)?\\+n)[ \t]*(?:" + _KEY_PFX + r"[ \t]*)?){0,3}"
_LINE_END = r"(?=[ \t]*(?:[\r\n\"']|\\|\Z))"  # a line's end: a break (JSON's escaped one too), a closing quote
# A key's last line may be short (an ed25519 OpenSSH key's: 6 characters, the comment's end and the padding): one under
# 8 characters is a key's only as a whole line after its other lines, on a line of its own (a word after them on their
# line, or `Error:` on the next, is the tool's). Its prefix is a line number (a numbered read's, `less -N`'s, bat's, grep's
# after its path: `path:12:`), a diff's `-` or a quote's `>` at most: grep's `path:` alone would read a YAML key
# (`kind:`) as one, and its value as the line.
_SHORT_PFX = r"(?:\d+(?:→|\t| )[ \t]*|\d+ +│[ \t]*|-|>[ \t]*|(?:[A-Za-z]:(?:\\+[^\s:\\]{1,255}){1,16}|[^\s:\\]{0,255})[:-]\d+[:-])"
_SHORT_LINE = _SHORT_PFX + r"?[A-Za-z0-9+/=]{2,7}" + _LINE_END
_KEY_SHORT_LAST = r"[ \t]*(?:(?:\r?\n|(?:\\+r)?\\+n)[ \t]*){1,3}" + _SHORT_LINE
# A PuTTY key file's private lines: 64 characters of base64, the last one shorter (whole quanta, padded) or cut by the
# text's end; its MAC: HMAC-SHA-1's 40 hex digits (PuTTY-User-Key-File-2) or HMAC-SHA-256's 64 (-3), a whole word, or
# cut by the text's end.
# ... and as strings, one a line: a JSON array's items (`"...", "..."`), Python's or JavaScript's concatenated literals
# (`"...\\n"` then `"..."` or `+ "..."` on the next line). (No two runs of blanks side by side.)
_STRING_JOIN = r"(?:\\+n)?[\"'][ \t]*(?:[,+][ \t]*)?(?:\r?\n[ \t]*)?[\"']"
# Its lines may also stand joined by blanks or by HTML's or XML's line breaks (`<br>`, `&#10;`): a full line is one by its
# width alone; a shorter one by a line's end or the MAC after it. (The MAC: 40 or 64 characters, hex: never a line.)
_PPK_BREAK = r"(?:\r?\n|(?:\\+r)?\\+n|<br\s*/?>|&#10;|" + _STRING_JOIN + ")"
_PPK_APART = r"[ \t]*(?:" + _PPK_BREAK + r"[ \t]*(?:" + _KEY_PFX + r"[ \t]*)?){0,3}"
_PPK_LINE = r"\+?[A-Za-z0-9+/]{64}(?![A-Za-z0-9+/=])"  # (a diff's added line's `+` first, at most)
_PPK_LAST = (
    r"\+?(?:(?:(?:[A-Za-z0-9+/]{4}){0,15}(?:[A-Za-z0-9+/]{4}|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2}==)"
    + r"(?=[ \t]*(?:[\r\n\"'<&]|\\|\Z|Private-MAC:)))|[A-Za-z0-9+/=]{1,64}(?=[ \t]*\Z))"
)
_MAC_HEX = r"(?:[0-9a-fA-F]{64}|[0-9a-fA-F]{40}|[0-9a-fA-F]{1,63}(?=[ \t]*\Z))(?![0-9A-Za-z])"
_PPK_MAC = r"Private-MAC:[ \t]*" + _MAC_HEX
# (kind, literal hints (any; matched in the lower-cased text, and one written with upper-case letters, for a rule whose
# regex is case-sensitive, must stand so in the text too), regex, replacement or None for "[REDACTED KIND]")
RULES: list[tuple[str, tuple[str, ...], str, str | None]] = [
    # -- key material
    (
        "PRIVATE KEY",
        ("private key",),
        # the body never crosses another BEGIN line: from each of many BEGIN lines without an END, the search for one
        # ran to the text's end (quadratic)
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:(?!-----BEGIN)[\s\S])*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----",
        None,
    ),
    (
        "PRIVATE KEY",
        # An unterminated block (cut or truncated, or an excerpt's first lines): the BEGIN line and its body. Its lines
        # are apart by a newline or JSON's escaped one (escaped once or more), may begin with a numbered read's line
        # number (`     5→`, `cat -n`), and a blank line or two may stand between them (an encrypted key's RFC 1421
        # headers, Proc-Type and DEK-Info, end with one: the body after it, and its short last line, is the key's).
        # Only those headers are read as the key's: an `Error:` line after an empty block is the tool's. Its last line
        # may be short (_KEY_SHORT_LAST).
        ("private key",),
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:"
        + _KEY_APART
        + r"(?:[A-Za-z0-9+/=]{8,}|(?:Proc-Type|DEK-Info|Comment):[ \t]*[^\s\\]+(?:[ \t]+[^\s\\]+)*))*"  # a line
        + r"(?:"
        + _KEY_SHORT_LAST
        + r")?",
        None,
    ),
    (
        "PRIVATE KEY",
        # A PuTTY key file's private part (PuTTY-User-Key-File-2 and -3): after `Private-Lines: N`, its base64 lines (the
        # last one short: 24 characters for an RSA key) and the `Private-MAC:` line, whole or cut, apart as a PEM key's
        # lines may be. The public key, the comment and the Argon2 parameters before it tell which key it was and stay
        # (as does the header: the rule leaves what it redacted as it is).
        ("private-lines",),
        # Only a file's shape: `Private-Lines: N` ends its line, its lines are of PuTTY's width (64), the last one
        # shorter and whole quanta of base64 (or the text's end: a cut), its MAC of an HMAC's length (prose that names
        # the fields is no key). (The header kept with its line break: a prefix of the next line may run through a JSON
        # text's escaped lines, and would keep them.)
        r"(Private-Lines:[ \t]*\d+(?:[ \t]*"
        + _PPK_BREAK
        + r")?)[ \t]*(?:"
        + _KEY_PFX
        + r"[ \t]*)?(?:(?:"
        + _PPK_LINE
        + r"(?:"
        + _PPK_APART
        + _PPK_LINE
        + r")*(?:"
        + _PPK_APART
        + _PPK_LAST
        + r")?|"
        + _PPK_LAST
        + r")(?:"
        + _PPK_APART
        + _PPK_MAC
        + r")?|"
        + _PPK_MAC
        + r")",
        r"\1[REDACTED PRIVATE KEY]",
    ),
    ("AGE KEY", ("age-secret-key-",), r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", None),
    # -- cloud providers
    ("AWS KEY", ("akia", "asia", "abia", "acca", "a3t"), r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b", None),
    (
        "AWS SECRET",
        ("aws",),
        r"(?i)(aws[A-Za-z0-9_.\-]{0,20}(?:secret|key)[A-Za-z0-9_.\-]{0,20}[\"']?\s*[:=]\s*[\"']?)[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])",
        r"\1[REDACTED AWS SECRET]",
    ),
    ("GOOGLE API KEY", ("aiza",), r"\bAIza[0-9A-Za-z_\-]{35}", None),
    ("GOOGLE OAUTH", ("gocspx-", "ya29."), r"\bGOCSPX-[A-Za-z0-9_\-]{20,}|\bya29\.[0-9A-Za-z_\-]{20,}", None),
    (
        "AZURE KEY",
        ("accountkey=", "sharedaccesskey=", "sig="),
        r"(?i)((?:AccountKey|SharedAccessKey|sig)=)[A-Za-z0-9+/%]{20,}={0,2}",
        r"\1[REDACTED AZURE KEY]",
    ),
    ("AZURE SECRET", ("q~",), r"(?<![A-Za-z0-9_~.])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])", None),
    ("DIGITALOCEAN TOKEN", ("dop_v1_", "doo_v1_", "dor_v1_"), r"\bdo[opr]_v1_[a-f0-9]{64}\b", None),
    ("DATABRICKS TOKEN", ("dapi",), r"\bdapi[a-f0-9]{32}(?:-\d)?\b", None),
    # -- code hosts and package registries
    (
        "GITHUB TOKEN",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})",
        None,
    ),
    ("GITLAB TOKEN", ("gl",), r"\bgl(?:pat|dt|rt|ptt|cbt|soat|ft|imt|agent|oas)-[A-Za-z0-9_\-]{20,}", None),
    ("NPM TOKEN", ("npm_",), r"\bnpm_[A-Za-z0-9]{36}\b", None),
    ("PYPI TOKEN", ("pypi-",), r"\bpypi-AgE[A-Za-z0-9_\-]{50,}", None),
    ("DOCKER TOKEN", ("dckr_",), r"\bdckr_(?:pat|oat)_[A-Za-z0-9_\-]{20,}", None),
    ("HUGGING FACE TOKEN", ("hf_", "api_org_"), r"\b(?:hf_[A-Za-z0-9]{30,}|api_org_[A-Za-z0-9]{30,})\b", None),
    # -- AI providers
    ("ANTHROPIC KEY", ("sk-ant-",), r"\bsk-ant-[A-Za-z0-9_\-]{20,}", None),
    ("OPENAI KEY", ("sk-",), r"\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}", None),
    (
        "AI PROVIDER KEY",
        ("gsk_", "r8_", "pplx-", "xai-"),
        r"\b(?:gsk_[A-Za-z0-9]{40,}|r8_[A-Za-z0-9]{30,}|pplx-[A-Za-z0-9]{40,}|xai-[A-Za-z0-9]{60,})\b",
        None,
    ),
    # -- SaaS
    ("STRIPE KEY", ("sk_", "rk_", "pk_", "whsec_"), r"\b(?:(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}|whsec_[A-Za-z0-9]{20,})\b", None),
    ("SLACK TOKEN", ("xox",), r"\bxox[abposre]-[A-Za-z0-9\-]{10,}", None),
    ("SLACK WEBHOOK", ("hooks.slack.com",), r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{20,}", None),
    ("DISCORD WEBHOOK", ("discord",), r"https://(?:\w+\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{30,}", None),
    ("TELEGRAM TOKEN", (":aa",), r"\b\d{8,10}:AA[0-9A-Za-z_\-]{33}(?:\b|(?![A-Za-z0-9_\-]))", None),
    ("SENDGRID KEY", ("sg.",), r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}(?:\b|(?![A-Za-z0-9_\-]))", None),
    # (its hints as written: "sk" and "ac" are in most English texts, "SK" and "AC" in few)
    ("TWILIO KEY", ("SK", "AC"), r"\b(?:SK|AC)[0-9a-f]{32}\b", None),
    ("MAILGUN KEY", ("key-",), r"\bkey-[0-9a-zA-Z]{32}\b", None),
    ("SHOPIFY TOKEN", ("shp",), r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b", None),
    ("SQUARE TOKEN", ("sq0",), r"\bsq0(?:atp|csp)-[0-9A-Za-z_\-]{22,43}(?:\b|(?![A-Za-z0-9_\-]))", None),
    # (not "s.", the prefix of legacy tokens that gitleaks also takes and this regex does not: every plural at a sentence's
    # end ran it)
    # (service, batch and recovery tokens: hvs., hvb., hvr.)
    ("VAULT TOKEN", ("hvs.", "hvb.", "hvr."), r"\bhv[sbr]\.[A-Za-z0-9_\-]{24,}", None),
    ("GRAFANA TOKEN", ("glc_", "glsa_"), r"\b(?:glc_[A-Za-z0-9+/]{32,}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})", None),
    ("LINEAR KEY", ("lin_api_",), r"\blin_api_[A-Za-z0-9]{40}\b", None),
    ("ATLASSIAN TOKEN", ("atatt3", "atctt3"), r"\bAT[AC]TT3[A-Za-z0-9_\-=]{100,}", None),
    ("SENTRY TOKEN", ("sntry",), r"\bsntr(?:ys|yu|yi)_[A-Za-z0-9+/=_\-]{40,}", None),
    ("NOTION TOKEN", ("secret_", "ntn_"), r"\b(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,})\b", None),
    # -- web credentials
    ("JWT", ("eyj",), r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*", None),
    ("BASIC AUTH", ("basic",), r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?basic\s+)[A-Za-z0-9+/]{4,}={0,2}", r"\1[REDACTED]"),
    ("BEARER TOKEN", ("bearer",), r"(?i)(\bbearer\s+)(?!\[REDACTED)[A-Za-z0-9._~+/\-]{12,}=*", r"\1[REDACTED]"),
    # `Authorization: token <hex>` (GitHub's own form), `ApiKey ...`, or a bare value: one that holds a digit
    (
        "AUTH HEADER",
        ("authorization",),
        r"(?i)(\bauthorization[\"']?\s*[:=]\s*[\"']?(?:[a-z][a-z\-]*\s+)?)(?!\[REDACTED)(?=[^\s\"',;]*\d)[A-Za-z0-9._~+/:\-]{12,}=*",
        r"\1[REDACTED]",
    ),
    # (the user may be empty: redis://:PASSWORD@host)
    ("URL PASSWORD", ("://",), r"(?i)(\b[a-z][a-z0-9+.\-]*://[^\s:/@\"']*:)(?!\[REDACTED)[^\s/\"']+@", r"\1[REDACTED]@"),
    # a token as the whole user part (https://TOKEN@host): 20+ characters with a digit (`git@`, `x-access-token@` are names)
    (
        "URL TOKEN",
        ("://",),
        r"(?i)(\b[a-z][a-z0-9+.\-]*://)(?!\[REDACTED)(?=[^\s:/@\"']*\d)[A-Za-z0-9_\-.~%]{20,}@",
        r"\1[REDACTED]@",
    ),
    (
        "CURL PASSWORD",
        ("-u", "--user"),
        r"((?:^|\s)(?:-u|--user|--proxy-user)[ =]?[\"']?[^\s:\"']+:)(?!\[REDACTED)[^\s\"']+",
        r"\1[REDACTED]",
    ),
    # mysql -pSECRET (the password glued to -p), sshpass -p SECRET
    (
        "PASSWORD FLAG",
        ("mysql", "mariadb"),
        r"(?i)(\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]*?\s-p[\"']?)(?!\[REDACTED)[^\s\"'-][^\s\"']{2,}",
        r"\1[REDACTED]",
    ),
    # the bare words `pass` and `auth` are common English ("First pass:", "auth: required"): only as a quoted JSON key
    # ({"pass": "...", a Docker config's "auth") or an env assignment (DB_PASS=...)
    ("PASSWORD FIELD", ('"pass"', '"auth"'), r'(?i)("(?:pass|auth)"\s*:\s*")(?!\[REDACTED)[^"\\\n]{3,}(?=")', r"\1[REDACTED]"),
    ("PASSWORD FIELD", ("pass=",), r"(?i)(\b(?:[A-Za-z0-9]+_)*pass=)" + _NOT_A_VALUE + r"[^\s\"',;]{3,}", r"\1[REDACTED]"),
    (
        "PASSWORD FLAG",
        ("login",),
        r"(\b(?:docker|podman|buildah|skopeo|nerdctl|helm|oras)\b[^\n]*?\blogin\b[^\n]*?\s-p[ =]?[\"']?)(?!\[REDACTED)[^\s\"'$-][^\s\"']{2,}",
        r"\1[REDACTED]",
    ),
    (
        "PASSWORD FLAG",
        ("password-stdin",),
        r"(\b(?:echo|printf)\s+(?:-n\s+)?[\"']?)(?![$\[])[^\s\"'|$]{4,}(?=[\"']?\s*\|[^\n]*--password-stdin)",
        r"\1[REDACTED]",
    ),
    ("PASSWORD FLAG", ("sshpass",), r"(\bsshpass\s+-p\s*[\"']?)(?!\[REDACTED)[^\s\"']+", r"\1[REDACTED]"),
    ("PASSWORD FLAG", ("--pass",), r"((?:^|\s)--(?:password|passwd|pass)[ =][\"']?)(?!\[REDACTED)[^\s\"'-][^\s\"']{2,}", r"\1[REDACTED]"),
    # -- key = value and "key": "value" (JSON, YAML, env files, ini, code)
    (
        "SECRET FIELD",
        ("pass", "pwd", "secret", "token", "key", "credential"),
        r"(?i)(" + _KEY + r"[\"']?\s*[:=]\s*" + _STR_PREFIX + r"\")" + _NOT_A_VALUE + _NOT_A_VARIABLE + r"(?:[^\"\\\n]|\\.){3,}(?=\")",
        r"\1[REDACTED]",
    ),
    (
        "SECRET FIELD",
        ("pass", "pwd", "secret", "token", "key", "credential"),
        r"(?i)(" + _KEY + r"[\"']?\s*[:=]\s*" + _STR_PREFIX + r"')" + _NOT_A_VALUE + _NOT_A_VARIABLE + r"[^'\n]{3,}(?=')",
        r"\1[REDACTED]",
    ),
    # a YAML passphrase of several words (`password: correct horse battery`): the rest of its line
    (
        "SECRET FIELD",
        ("pass",),
        r"(?i)^([ \t]*(?:-[ \t]+)?[A-Za-z0-9_.\-]*(?:password|passwd|passphrase)[A-Za-z0-9_.\-]*[ \t]*:[ \t]+)"
        + _NOT_A_VALUE
        + r"(?![\"'|>&*!{\[$#])\S+[ \t]+[^\n]*?(?=[ \t\r]*$)",
        r"\1[REDACTED]",
    ),
    (
        "SECRET FIELD",
        ("pass", "pwd", "secret", "token", "key", "credential"),
        r"(?i)("
        + _KEY
        + r"[ \t]*(?::(?!:)|=|:=)[ \t]*)"
        + _NOT_A_VALUE
        + r"(?![\"'\s{\[(<$:])[^\s\"',;)}\]&<>\[(]{4,}(?=[\s\"',;)}\]&]|$)",
        r"\1[REDACTED]",
    ),
]


# The rules not of key = value shape, and each one's regex compiled at its first use (compiling all of
# them costs ~5.5 ms; most runs meet the hints of a few, or of none: a process pays for what it uses).
# (kind, hints lower-cased, the hints written with upper-case letters, regex, replacement)
_RULES = [
    (
        kind,
        tuple(h.lower() for h in hints),
        tuple(h for h in hints if h != h.lower()),
        rx,
        repl if repl is not None else f"[REDACTED {kind}]",
    )
    for kind, hints, rx, repl in RULES
    if kind != "SECRET FIELD"
]
_FIELDS = [(rx, repl) for kind, _h, rx, repl in RULES if kind == "SECRET FIELD" and repl is not None]  # each has one


@functools.cache
def _compiled(rx: str) -> re.Pattern[str]:
    return re.compile(rx)


def _alternatives(hints: set[str]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(h) for h in sorted(hints)))


@functools.cache
def _any_hint() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Every rule's hints as one search of the lower-cased text, those written with capitals (_RULES) as one of the text:
    one of them finds a match whenever a rule's hints let it run. On a short text (a name a digest keeps) they settle
    that no rule applies, where a substring test per hint costs more."""
    exact = {h for _k, _hs, x, _rx, _r in _RULES for h in x}
    return _alternatives({h for _k, hs, x, _rx, _r in _RULES if not x for h in hs}), _alternatives(exact)


# key = value rules are single-line and their keys are common words: they run only on the lines that
# hold a key word (a substring test per line is far cheaper than a case-insensitive scan of the text).
_FIELD_HINTS = ("pass", "pwd", "secret", "token", "key", "credential")
# ... and where one is, the shape they all need: each key word holds a hint, then [A-Za-z0-9_.\-]* to its end, then
# `=` or a `:` that is not `::` (after a quote and spaces, at most). A line of test output ("5 passed",
# "tests/test_token.py::test_parse PASSED") runs none of them.
_FIELD_SHAPE = re.compile(r"(?i)(?:" + "|".join(map(re.escape, _FIELD_HINTS)) + r")[A-Za-z0-9_.\-]*[\"']?\s*(?:=|:(?!:))")
SHORT = 256  # redact: a text this short is first searched for any rule's hint at once

# detect-secrets' Base64HighEntropyString idea: a quoted string of 24+ token characters with mixed
# classes and a Shannon entropy of at least 4.5 bits per character (its default limit).
_QUOTED = re.compile(r"([\"'`])([A-Za-z0-9+/_\-=.~]{24,})(\\?)\1")  # also inside JSON text (\"...\")
ENTROPY_LIMIT = 4.5


def entropy(s: str) -> float:
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values()) if n else 0.0


def _not_a_secret(m: re.Match, s: str) -> bool:
    """A go.sum `h1:` hash, or an image's base64 (a data URI, an image block's data): high entropy, no secret."""
    before = m.string[max(0, m.start() - 80) : m.start()]
    return before.endswith("h1:") or (len(s) >= 200 and "image/" in before)


def _high_entropy(m: re.Match) -> str:
    s = m.group(2)
    if (
        not _not_a_secret(m, s)
        and any(c.isdigit() for c in s)
        and any(c.isupper() for c in s)
        and any(c.islower() for c in s)
        and s.count("/") < 2
        and entropy(s) >= ENTROPY_LIMIT
    ):
        return f"{m.group(1)}[REDACTED HIGH-ENTROPY STRING]{m.group(3)}{m.group(1)}"
    return m.group(0)


# A bare run of base64 (a key body line, a fragment an earlier cut or digest left without its BEGIN line):
# 32+ characters, upper case and digits at least 30% of them (paths and words are mostly lower case),
# and the same entropy limit.
_BARE = re.compile(r"(?<![A-Za-z0-9+/=_\-.])[A-Za-z0-9+/]{32,}={0,2}(?![A-Za-z0-9+/=_\-])")


def _bare_high_entropy(m: re.Match) -> str:
    s = m.group(0)
    loud = sum(1 for c in s if c.isupper() or c.isdigit())
    if (
        loud >= 0.3 * len(s)
        and any(c.islower() for c in s)
        and any(c.isdigit() for c in s)
        and entropy(s) >= ENTROPY_LIMIT
        and not _not_a_secret(m, s)
    ):
        return "[REDACTED HIGH-ENTROPY STRING]"
    return s


# JSON escapes that hide a secret from the rules: `\u0073k-...` for `sk-...`, `\/` (PHP's, some loggers') inside a key.
# Only letters, digits and the characters keys are made of are unescaped (a quote or a backslash stays escaped), and only
# in the words that hold one: each is looked at again unescaped, and replaced (unescaped, redacted) when that finds a
# secret; a word without one keeps its bytes.
_ESCAPE = re.compile(r"\\u00([2-7][0-9a-fA-F])|\\/")
_ESCAPED_WORD = re.compile(r"(?<![A-Za-z0-9+/=_\-.~])[A-Za-z0-9+/=_\-.~]*(?:(?:\\u00[2-7][0-9a-fA-F]|\\/)[A-Za-z0-9+/=_\-.~]*)+")
_PLAIN = frozenset(string.ascii_letters + string.digits + "+-./_=~")


def _unescape(m: re.Match) -> str:
    if m.group(1) is None:
        return "/"
    c = chr(int(m.group(1), 16))
    return c if c in _PLAIN else m.group(0)


def _escaped_word(m: re.Match) -> str:
    word = m.group(0)
    plain = _ESCAPE.sub(_unescape, word)
    if plain == word:
        return word
    clean = _redact(plain)
    return clean if clean != plain else word


def redact(text: str) -> str:
    out = _redact(text)
    if "\\u00" in out or "\\/" in out:
        out = _ESCAPED_WORD.sub(_escaped_word, out)
    return out


# The END line of a private key whose BEGIN line is not in the text (`tail -3 key.pem`, an output cut before it), or the
# MAC line of a PuTTY key file without its `Private-Lines:` line (a diff's added line's `+` before either: for the body
# lines, it is one of base64's characters); and one of its body lines (a numbered read's line number first, as in the
# rules above).
_KEY_END = re.compile(
    r"^[ \t]*(?:" + _KEY_PFX + r"[ \t]*)?\+?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|(Private-MAC:)[ \t]*" + _MAC_HEX + ")", re.M
)
# (a line stripped first: three runs of blanks in a row, one of them optional, took the cube of a blank line's length)
_KEY_LINE = re.compile(r"(?:" + _KEY_PFX + r"[ \t]*)?(?:[A-Za-z0-9+/=]{8,}|(?:Proc-Type|DEK-Info|Comment):.*)?")
# The line right above the END line may be short (an ed25519 key's last line: 6 characters).
_KEY_LAST_LINE = re.compile(r"(?:" + _KEY_PFX + r"[ \t]*)?(?:[A-Za-z0-9+/=]{2,}|(?:Proc-Type|DEK-Info|Comment):.*)?")
KEY_LINES_MAX = 256  # body lines looked at above an END line (an 8192-bit RSA key has about 100)


def _lines_above(text: str, last: int, start: int, first: re.Pattern[str], rest: re.Pattern[str]) -> tuple[int, int]:
    """(where they start, how many): the lines right above position `start` (a line's start) that `first` (the first
    above that is not blank: a double-spaced key's blank lines stand between its lines), then `rest` fullmatch,
    stripped; KEY_LINES_MAX at most, none before position `last`. Walked back line by line: a regex looking back through
    them would retry from every line of a long base64 output."""
    k = blank = 0
    while start > last and k < KEY_LINES_MAX:
        prev = max(text.rfind("\n", last, start - 1) + 1, last)  # the line before, not before what is done
        line = text[prev : start - 1].strip(" \t\r")
        if not (rest if k > blank else first).fullmatch(line):
            break
        if k == blank and _blank(line):
            blank += 1
        start, k = prev, k + 1
    return start, k


def _blank(line: str) -> bool:
    """Whether a stripped line is blank, or a prefix alone (a numbered read's, grep's, a diff's blank line)."""
    m = _BODY.fullmatch(line)
    return m is not None and not m.group(1)


_BODY = re.compile(r"(?:" + _KEY_PFX + r"[ \t]*)?([A-Za-z0-9+/=]*)")
KEY_WIDTH_MIN = 40  # a key's wrapped line is this long at least (PEM's 64, OpenSSH's 70, PuTTY's 64)


def _short_alone(lines: list[str]) -> bool:
    """Whether the last of `lines` (the line above an END line, after the line above it) is a short line (under 8
    characters of base64) without a key's full line above it, and a word (`ok`, `Done`, `PASSED`: no digit, `+`, `/`
    or `=`, no capital after its first letter), not a key's short last line (`tail -2`)."""
    low = _BODY.fullmatch(lines[-1].strip(" \t\r"))
    if low is None or len(low.group(1)) >= 8:
        return False
    word = low.group(1)
    if not word.isalpha() or (word[1:] != word[1:].lower() and word != word.upper()):
        return False
    up = _BODY.fullmatch(lines[0].strip(" \t\r")) if len(lines) > 1 else None
    return up is None or len(up.group(1)) < KEY_WIDTH_MIN


def _key_tails(text: str) -> str:
    """The body lines above each END line of a private key that the rules left (its BEGIN line is not in the text:
    they take a whole or an unterminated block), and the END line, redacted: a key's last lines are its own only
    by the END line after them. A PuTTY key's MAC line is its END line, and redacted alone too (`grep Private-MAC`:
    for an encrypted key it is keyed by the passphrase)."""
    out, last = [], 0
    for m in _KEY_END.finditer(text):
        start, k = _lines_above(text, last, m.start(), _KEY_LAST_LINE, _KEY_LINE)
        if k:
            shown = [ln for ln in text[start : m.start()].split("\n") if not _blank(ln.strip(" \t\r"))]  # (blank lines apart)
            if shown and _short_alone(shown[-2:]):
                k = 0  # (a short line, `ok`, not under a key's lines is the tool's)
        if k:
            out.append(text[last:start] + "[REDACTED PRIVATE KEY]")
            last = m.end()
        elif m.group(1):
            out.append(text[last : m.end(1)] + " [REDACTED PRIVATE KEY]")
            last = m.end()
    return "".join(out) + text[last:] if out else text


# The base64 of a whole PEM file (`base64 key.pem`, a Kubernetes secret's `tls.key: LS0tLS1CRUdJTi...`, a kubeconfig's
# `client-key-data`): its middle lines were left to the high-entropy rule, but its first and last hold mostly the BEGIN
# and END text (their entropy is low) and part of the key beside it, and were left. Known by the characters that only
# "-----BEGIN ", "-----END " and "KEY-----" make, at each of the three alignments of a base64 text (a wrapped line's end
# may cut one of them, never both that stand on a key's BEGIN or END line), a blob is redacted whole: its run of base64,
# and its own wrapped lines: those after it of the run's width (then a shorter last one that ends the blob: its bytes
# end a PEM line's dashes, or the text ends, cut), and, when the run is its line's and may be one of them (the marker
# where its form stands in a base64 quantum), those above it of one width, a wrap's. Not a word or a hash beside it.
# A certificate's too: its base64 tells a summary nothing, and a bundle's key may come after it.
_PEM_BASE64 = re.compile(
    r"LS0tLS1CRUdJTi|0tLS0tQkVHSU4g|tLS0tLUJFR0lOI|LS0tLS1FTkQg|0tLS0tRU5EI|tLS0tLUVORC|S0VZLS0tLS|tFWS0tLS0t|LRVktLS0tL"
)
# each form's position in a base64 quantum (of 4 characters)
_FORM_AT = {"LS0": 0, "0tL": 2, "tLS": 3, "S0V": 0, "tFW": 2, "LRV": 3}
_BASE64 = string.ascii_letters + string.digits + "+/="
_BREAK = re.compile(r"[ \t]*(?:\r?\n|(?:\\+r)?\\+n)[ \t]*(?:" + _KEY_PFX + r"[ \t]*)?")
_BASE64_LINE = re.compile(r"[A-Za-z0-9+/]*={0,2}" + _LINE_END)
_AT_END = re.compile(r"\s*\Z")
_RUN = re.compile(r"[A-Za-z0-9+/=]*")
_PREFIX = re.compile(r"(?:" + _KEY_PFX + r")?")
_WRAPPED_LINE = re.compile(r"(?:" + _KEY_PFX + r"[ \t]*)?([A-Za-z0-9+/]{16,})")
_HEX = frozenset(string.hexdigits)
WRAP_MIN = 16  # a wrap's width at least (base64's 76, PEM's 64)


def _ends_pem(line: str) -> bool:
    """Whether a base64 line (at a quantum's start) decodes to a PEM file's end: its last line's dashes."""
    try:
        tail = base64.b64decode(line, validate=True).rstrip(b"\r\n")
    except ValueError:
        return False
    return tail.endswith(b"-----") or (tail != b"" and tail.strip(b"-") == b"")


def _wrapped_end(text: str, at: int, width: int) -> int:
    """The end of a blob whose run (`width` characters) ends at `at`: each next line of `width` characters of base64
    (after a break and a prefix) is one of its wrapped lines; a shorter one is its last, when it ends the blob or the
    text."""
    while (b := _BREAK.match(text, at)) is not None and (ln := _BASE64_LINE.match(text, b.end())) is not None:
        n = ln.end() - b.end()
        if n == width:
            at = ln.end()
            continue
        if 0 < n < width and (_AT_END.match(text, ln.end()) or (width % 4 == 0 and _ends_pem(ln.group(0).strip()))):
            at = ln.end()
        break
    return at


def _blob_above(text: str, last: int, start: int, width: int, took: bool) -> int:
    """Where the lines right above position `start` (a line's start) that are a blob's wrapped lines start, none before
    position `last`: lines of base64 of one width (WRAP_MIN at least, a multiple of 4, and the width of the run's
    line below, `width`, when lines were wrapped after it, `took`; at least it when not), no hash (hex only)."""
    wrap = 0
    for _ in range(KEY_LINES_MAX):
        prev = max(text.rfind("\n", last, start - 1) + 1, last)  # the line before, not before what is done
        if start <= last or (m := _WRAPPED_LINE.fullmatch(text[prev : start - 1].strip(" \t\r"))) is None:
            break
        n = len(m.group(1))
        if wrap == 0 and (n % 4 or n < width or (took and n != width)):
            break
        if (wrap and n != wrap) or _HEX.issuperset(m.group(1)):
            break
        start, wrap = prev, n
    return start


def _pem_base64(text: str) -> str:
    """Each blob of base64 that holds the base64 of a PEM file's BEGIN or END line, redacted whole."""
    out, last = [], 0
    while (m := _PEM_BASE64.search(text, last)) is not None:
        before = text[last : m.start()]
        start = m.start() - (len(before) - len(before.rstrip(_BASE64)))  # its run's start
        if start > last and text[start - 1] == "\\" and text[start] in "nrt":
            start += 1  # (the letter of a JSON text's escaped break, not the run's)
        run_end = _RUN.match(text, m.end()).end()  # type: ignore[union-attr]  # (it matches the empty string)
        end = _wrapped_end(text, run_end, run_end - start)
        line = max(text.rfind("\n", last, start) + 1, last)
        # the run is its line's, and its line may be a wrapped line (the form where it stands in a quantum): the lines
        # above may be the blob's
        if line > last and _PREFIX.fullmatch(text[line:start].strip(" \t\r")) and (m.start() - start) % 4 == _FORM_AT[m.group(0)[:3]]:
            above = _blob_above(text, last, line, run_end - start, end > run_end)
            start = above if above < line else start
        out.append(text[last:start] + "[REDACTED PEM BASE64]")
        last = end
    return "".join(out) + text[last:] if out else text


# What tells that a text holds key material, whose lines are secrets only where they stand: a key's short last line under
# its BEGIN line, a PuTTY key's MAC (a hex string) under its private lines, the lines of a base64 PEM blob that hold
# mostly its BEGIN or END text. Names read from such a text (redaction checks long ones alone), the lines a digest
# quotes from it, the runs of lines and the head an excerpt shows of it are read from it redacted, or not at all.
_KEY_MARKS = ("PRIVATE KEY", "PRIVATE_KEY", "Private-Lines:", "Private-MAC:")


def holds_key(text: str) -> bool:
    return any(k in text for k in _KEY_MARKS) or ("LS0t" in text and _PEM_BASE64.search(text) is not None)


def _fields(text: str, low: str) -> str:
    """The key = value rules, on the lines that have their shape (a key word, then `=` or `:`)."""
    lines = text.split("\n")
    for i, ll in enumerate(low.split("\n")):
        if any(h in ll for h in _FIELD_HINTS) and _FIELD_SHAPE.search(lines[i]):
            for rx, repl in _FIELDS:
                lines[i] = _compiled(rx).sub(repl, lines[i])
    return "\n".join(lines)


def _by_rules(text: str, low: str) -> tuple[str, str]:
    """`text` (and `low`, its lower-cased form) after the rules not of key = value shape whose hints it holds (a short
    text is first searched for any of them at once)."""
    if len(low) <= SHORT and _any_hint()[0].search(low) is None and _any_hint()[1].search(text) is None:
        return text, low
    for _kind, hints, exact, rx, repl in _RULES:
        if any(h in low for h in hints) and (not exact or any(h in text for h in exact)):
            new = _compiled(rx).sub(repl, text)
            if new is not text and new != text:
                text = new
                low = text.lower()
    return text, low


def _redact(text: str) -> str:
    if not text:
        return text
    text, low = _by_rules(text, text.lower())
    if any(h in low for h in _FIELD_HINTS) and _FIELD_SHAPE.search(text):
        text = _fields(text, low)
    if ("-----end" in low and "private key" in low) or "private-mac:" in low:
        text = _key_tails(text)
    if "ls0t" in low:  # (in each of _PEM_BASE64's, lower-cased)
        text = _pem_base64(text)
    if len(text) >= 26:
        text = _QUOTED.sub(_high_entropy, text)
    if len(text) >= 32:
        text = _BARE.sub(_bare_high_entropy, text)
    return text


# The rules that know a secret by what stands around it (a key or a scheme before it, a host after it, `--password-stdin`
# after an echo): those that keep part of their match (a replacement with \1), and their hints.
_IN_CONTEXT = [(hints, rx, repl) for kind, hints, rx, repl in RULES if repl is not None and kind != "SECRET FIELD"]
_HINTS_IN_CONTEXT = {h for _kind, hs, _rx, repl in RULES if repl is not None for h in hs}
_CONTEXT_HINTS = tuple(sorted(h for h in _HINTS_IN_CONTEXT if not any(k != h and k in h for k in _HINTS_IN_CONTEXT)))
# A name this long may be a quoted high-entropy string (24 characters at least), or a piece of one (names_in splits a
# token at its `-`, `=`, `~`), which only its quotes tell. A shorter name is too short to be a secret's piece (a digest
# keeps it: prune_steps._safe_name).
_LONG_NAME = 16
_AROUND_NAME = 240  # characters of its line on each side of a name that the rules read
_HINT_BEFORE, _HINT_AFTER = 64, 32  # ... and where one of their hints must be for them to run at all
_OCCURRENCES = 2  # the first occurrences of a name looked at (where a value stands beside its key)


def taken_where_it_stands(name: str, text: str) -> bool:
    """Whether redaction takes `name` from its line in `text` at one of its first occurrences: a value that no rule
    knows alone, only by its key (`password: X`, `postgres://app:X@host`, `Bearer X`). Only the rules that read a
    context run, and only when one of their hints stands near the name (most names: a find and a few substring tests)."""
    at = text.find(name)
    for _ in range(_OCCURRENCES):
        if at < 0:
            return False
        end = at + len(name)
        close = text[max(0, at - _HINT_BEFORE) : end + _HINT_AFTER].lower()
        if len(name) >= _LONG_NAME or any(h in close for h in _CONTEXT_HINTS):
            a = max(text.rfind("\n", 0, at) + 1, at - _AROUND_NAME)
            b = text.find("\n", end, end + _AROUND_NAME)
            near = text[a : b if b >= 0 else end + _AROUND_NAME]
            if _in_context(near, len(name) >= _LONG_NAME).count(name) < near.count(name):
                return True
        at = text.find(name, end)
    return False


@functools.lru_cache(maxsize=1 << 12)
def _in_context(text: str, quoted: bool) -> str:
    """`text` as the rules that read a context leave it (and the quoted high-entropy strings, when `quoted`). Cached:
    the names of a short line all read the line whole, and a digest's names are checked again as its vocabulary grows."""
    low = text.lower()
    for hints, rx, repl in _IN_CONTEXT:
        if any(h in low for h in hints):
            text = _compiled(rx).sub(repl, text)
    if any(h in low for h in _FIELD_HINTS) and _FIELD_SHAPE.search(text):
        for rx, repl in _FIELDS:
            text = _compiled(rx).sub(repl, text)
    return _QUOTED.sub(_high_entropy, text) if quoted else text


_KEY_RX = re.compile(r"(?i)" + _KEY + r"$")
_IS_VALUE = re.compile(r"(?i)\s*" + _NOT_A_VALUE + r"\S")


def _redact_value(v, key: str | None = None):
    if isinstance(v, str):
        if key is not None and _KEY_RX.search(key) and _IS_VALUE.match(v):
            return "[REDACTED]"
        return redact(v)
    if isinstance(v, list):
        out = [_redact_value(x) for x in v]
        if len(v) > 1 and all(isinstance(x, str) for x in v):
            # A file's lines as an array (a key file's): a key's rules read its lines together, and each line alone
            # is too short or too plain for them. Where the lines together show more to redact, they go as one text.
            whole = redact("\n".join(v))
            if whole != "\n".join(out):
                return whole.split("\n")
        return out
    if isinstance(v, dict):
        return {k: _redact_value(x, k if isinstance(k, str) else None) for k, x in v.items()}
    return v


def redact_json_text(text: str) -> str:
    """Tool-call arguments (JSON text): every string redacted as text, and a string under a secret-named
    key ("password", "api_key", ...) replaced whole; text that is not JSON is redacted as text."""
    import orjson

    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        return redact(text)
    if not isinstance(obj, (dict, list)):
        return redact(text)
    return orjson.dumps(_redact_value(obj)).decode()


CUT_WORD = 12  # a cut through a word this long is looked at; a shorter piece of a secret tells little
# Where a word ends, for a cut: white space (Unicode's common ones too) and the punctuation that stands around a
# value but never inside a key (quotes, commas, brackets): minified JSON is words, not one blob.
_WS = " \t\r\n\u00a0\u2002\u2003\u2009\u202f\u3000\"'`,;{}()<>[]"
_AROUND = 64  # text looked at on each side of a cut: a rule's key before it (`password=`), a value's words after
_BLOB = 4096  # a word longer than this is a blob: looked at in part
_MARK = 40  # a redaction mark is shorter than this ("[REDACTED HIGH-ENTROPY STRING]")


def _word_start(text: str, lo: int, at: int) -> int:
    """The start of the word that holds position `at - 1` (`at` when text[at - 1] ends a word), not before `lo`."""
    return max(lo, *(text.rfind(c, lo, at) + 1 for c in _WS))


def _word_end(text: str, at: int, hi: int) -> int:
    """The end of the word that holds position `at` (`at` when text[at] ends a word), not after `hi`."""
    return min([hi, *(i for c in _WS if (i := text.find(c, at, hi)) >= 0)])


def cut(text: str, n: int) -> str:
    """text[:n], never a piece of a secret: when the cut goes through a word of CUT_WORD characters or more, or
    follows a key word (`password`, `token`...) a multi-word value may follow, the words around it (_AROUND
    characters each side, whole words) are redacted first, then cut. A redaction mark the cut goes through is kept
    whole, a little past n."""
    if len(text) <= n:
        return text
    if n <= 0:
        return ""
    lo, hi = max(0, n - _BLOB), min(len(text), n + _BLOB)
    start = _word_start(text, lo, n)  # the window begins at a word's start: an earlier word is redacted whole or not at all
    end = _word_end(text, n, hi)
    p = max(lo, start - _AROUND)
    a = _word_start(text, lo, p + 1) if p > lo else p  # back to the start of the word there: whole, with its key
    if end - start < CUT_WORD and not any(h in text[a:n].lower() for h in _FIELD_HINTS):
        return text[:n]  # between words or through a short one: a piece only of a key = value rule's value
    b = min(len(text), _word_end(text, max(end, min(hi, n + _AROUND)), hi) + 1)  # with what ends it: a closing quote
    near = text[a:b]
    clean = redact(near)
    if clean == near:
        return text[:n]
    out = text[:a] + clean  # nothing past the window: a redaction that shortened it does not pull later text in
    mark = out.rfind("[REDACTED", max(0, n - _MARK), n + 8)
    close = out.find("]", mark, mark + _MARK) if 0 <= mark < n else -1
    return out[: close + 1] if close >= n else out[:n]
