"""Needed-later facts: what an agent transcript names, and where, for continuation scoring.

This module is the *extractor* of the continuation eval (`compactctl.continuation` is the harness).
It is deliberately independent of the compaction it judges: it imports nothing from compactctl at
all (not `summarizers`, `phases`, `tools`, `harness`, `names`, nor `model`: messages are read through
a small Protocol; a test parses the imports to guard this), and it was written from what agent
transcripts contain, not from compactctl's own fact extractor or harness-message rules.

Segments. Every message is split into text segments with a source:
- ``system``: system and developer messages;
- ``written``: what the person and the agent write: user text, assistant text, and the string values of
  tool-call arguments (JSON decoded; keys and non-string values such as timeouts are not text);
- ``output``: tool results, and user-role observations of text-action agents (SWE-agent and the like:
  in a transcript with no tool calls, a user message that answers an assistant message holding an
  action block: fenced ```, or SWE-agent's XML ``<command>...</command>``);
- ``injected``: text the harness put in a user turn: ``<system-reminder>``, ``<local-command-*>``,
  ``<task-notification>``, ``<command-name>``/``<command-message>`` blocks, Codex ``<environment_context>``
  and ``<user_instructions>``, the "# Context from my IDE setup" preamble (up to "## My request for
  Codex:"), "Caveat: The messages below..." notes, earlier compaction summaries and compaction prompts.
Reasoning (thinking) is not a segment: it is not what the agent writes to the world.
JSON text in tool outputs (Codex's ``{"output": ..., "metadata": ...}``) is decoded to its strings.

Facts, by kind (each fact is a string `key` that is searched in text):
- ``path``: tokens with a slash that start with ``/``, ``~``, ``./`` or ``../``, or end in a known file
  extension, or have 3+ segments; and bare file names with a known extension. The key is the last two
  segments (``live/foo_test.exs``), or the file name for a single segment: a later mention of the same
  file by a shorter or relative path is the same fact.
- ``url``: http(s) URLs, trailing punctuation and slash removed.
- ``identifier``: snake_case and CONSTANT_CASE (with an underscore), camelCase, PascalCase with 2+
  humps or a leading acronym (``JSONDecodeError``), dotted names (``Spotter.Repo.get``) whose last part
  is not a file extension, errno names (``EACCES``, ``ECONNREFUSED``, npm's ``ELIFECYCLE``: a list, not any
  capital word starting with E such as ``ERROR``); 4+ characters, minus a stop-list and plural acronyms (``APIs``).
- ``command``: from tool-call arguments named command/cmd/script (Codex ``["bash", "-lc", s]`` too)
  and, for text-action agents, fenced (or ``<command>``) blocks in assistant text: per simple command (split on
  ``&& || ; |`` and newlines, env assignments / sudo / timeout skipped, ``cd`` dropped), the leading
  words (the program and up to two plain sub-command words, e.g. ``git push``, ``npx prisma migrate``)
  and the whole command when it is short (<= 60 characters, redirections removed). One-word trivial
  programs (``ls``, ``cat``, ``grep``, ``sed``, ...), programs named by an English word (``make`` alone: prose
  writes it) and trivial git reads are stop-listed.
- ``value``: numbers of 3+ digits, versions (``1.2.3``, ``v2.1``, ``@1.4``), hex hashes (7+ hex chars
  with a digit and a letter) and UUIDs, ids mixing letters and digits (``spotter-gqc.6``, ``E0425``),
  quoted string literals of 6-60 characters holding a space or punctuation (a single word is already
  an identifier or not informative).

Matching (`occurs`): case-sensitive, on whitespace-folded text, at boundaries: an identifier, value
or command must not continue with a word character on either side, nor a value that starts or ends with a digit
with a longer number (``404`` is not in ``1.404`` or ``1,404``); a path key may follow a ``/``
(it is a suffix of a longer path) but not a word character, ``.`` or ``-``; a path or URL key may be followed by
the trailing ``/`` its key dropped, not by a longer path or URL.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import orjson


class ToolCallLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def arguments(self) -> str: ...  # JSON text


class Message(Protocol):
    """What the extractor reads of a message (compactctl.model.Message has it; nothing else is imported)."""

    @property
    def role(self) -> str: ...
    @property
    def tool_calls(self) -> Sequence[ToolCallLike]: ...
    @property
    def extra(self) -> dict: ...

    def text(self) -> str: ...


KINDS = ("path", "identifier", "command", "url", "value")
SOURCES = ("written", "output", "injected")

EXTENSIONS = frozenset(
    "py pyi ts tsx js jsx mjs cjs ex exs heex eex leex json jsonl md mdx toml yaml yml txt rs go rb java kt kts c h cc "
    "cpp hpp cs sh bash zsh fish css scss sass less html htm sql lock cfg ini env xml vue svelte swift php lua ipynb "
    "proto gradle mod sum csv tsv log conf dockerfile tf hcl erl hrl elm clj scala dart r jl nix zig ml mli hs traj "
    "patch diff svg png jpg jpeg gif webp pdf wasm so dylib dll exe whl gz tgz zip tar bz2 xz sqlite db pem crt key "
    "service plist gemspec rake cabal bzl bazel mk cmake make pl pm t tex rst adoc org prisma graphql gql".split()
)

STOP_IDENTIFIERS = frozenset(
    "__init__ __main__ __name__ __file__ __dict__ __class__ __repr__ __str__ __all__ __doc__ __future__ "
    "JavaScript TypeScript GitHub GitLab PostgreSQL MySQL SQLite MongoDB NodeJS YouTube LinkedIn PowerShell macOS iOS "
    "iPhone iPad OpenAI ChatGPT DevTools VSCode WebSocket LiveView".split()
)
# errno names (POSIX, Linux, BSD) and the E-codes of npm and Node.js; the rule took any capital word starting with E
ERRNO_NAMES = frozenset(
    "E2BIG EACCES EADDRINUSE EADDRNOTAVAIL EAFNOSUPPORT EAGAIN EALREADY EBADF EBADMSG EBUSY ECANCELED ECHILD "
    "ECONNABORTED ECONNREFUSED ECONNRESET EDEADLK EDESTADDRREQ EDOM EDQUOT EEXIST EFAULT EFBIG EHOSTDOWN EHOSTUNREACH "
    "EIDRM EILSEQ EINPROGRESS EINTR EINVAL EIO EISCONN EISDIR ELOOP EMFILE EMLINK EMSGSIZE ENAMETOOLONG ENETDOWN "
    "ENETRESET ENETUNREACH ENFILE ENOBUFS ENODATA ENODEV ENOENT ENOEXEC ENOLCK ENOLINK ENOMEM ENOMSG ENOPROTOOPT ENOSPC "
    "ENOSR ENOSTR ENOSYS ENOTBLK ENOTCONN ENOTDIR ENOTEMPTY ENOTRECOVERABLE ENOTSOCK ENOTSUP ENOTTY ENXIO EOPNOTSUPP "
    "EOVERFLOW EOWNERDEAD EPERM EPFNOSUPPORT EPIPE EPROTO EPROTONOSUPPORT EPROTOTYPE ERANGE EREMOTE EROFS ESHUTDOWN "
    "ESOCKTNOSUPPORT ESPIPE ESRCH ESTALE ETIME ETIMEDOUT ETOOMANYREFS ETXTBSY EUSERS EWOULDBLOCK EXDEV "
    "ENOTFOUND ELIFECYCLE ERESOLVE EJSONPARSE EINTEGRITY ENOTCACHED EBADENGINE ENEEDAUTH ENOAUDIT ENOVERSIONS ETARGET "
    "EPUBLISHCONFLICT ENOWORKSPACES EUSAGE EBADPLATFORM ENOTSUPPORTED".split()
)
STOP_PATHS = frozenset("bin/env bin/bash bin/sh bin/zsh dev/null dev/stdout dev/stderr tmp dev".split())
STOP_DOTTED_HEADS = frozenset("e i vs etc www fig eq cf al".split())
STOP_VALUES = frozenset(
    "utf8 utf-8 utf16 base64 x86_64 sha256 sha1 md5 int32 int64 uint8 float32 float64 i386 amd64 arm64 h264 mp4 mp3 1080p 720p".split()
)
TRIVIAL_PROGRAMS = frozenset(
    "cd ls ll la cat echo printf pwd grep egrep fgrep rg ag find fd sed awk head tail wc sort uniq cut tr tee xargs "
    "mkdir rmdir rm cp mv touch ln chmod chown true false test bash sh zsh which whereis type env export source set "
    "unset sleep clear exit read nl less more file stat du df date time wait kill ps top diff cmp tree open start "
    "python python3 node ruby perl".split()
)
# programs whose name is an English word: alone, "make" would be used again by every "make sure" (its longer forms,
# "make test", are facts)
WORD_PROGRAMS = frozenset("make watch patch just task".split())
TRIVIAL_COMMANDS = frozenset(["git status", "git diff", "git log", "git show", "git branch", "git add"])
WRAPPERS = frozenset("sudo time nohup exec command builtin noglob".split())
PATTERN_PROGRAMS = TRIVIAL_PROGRAMS | frozenset(["pytest", "curl", "wget", "jq", "ssh", "scp", "make"])
SHELLS = frozenset("bash sh zsh fish /bin/bash /bin/sh /bin/zsh /usr/bin/bash".split())
COMMAND_KEYS = ("command", "cmd", "script")

_WS = re.compile(r"\s+")
_URL = re.compile(r"https?://[^\s\"'<>`)\]}|\\]+")
_PATH = re.compile(r"(?<![\w/.@+~-])(?:~|\.{1,2})?/?[\w@+.-]+(?:/[\w@+.-]+)+/?")
_FILE = re.compile(r"(?<![\w/.@-])[\w][\w.-]*\.([A-Za-z0-9]{1,10})(?![\w/-])")
_SNAKE = re.compile(r"(?<![\w.-])_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*(?![\w-])")
_CAMEL = re.compile(r"(?<![\w.-])[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+(?![\w-])")
_PASCAL = re.compile(r"(?<![\w.-])(?:[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[A-Z]{2,}[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)*)(?![\w-])")
_DOTTED = re.compile(r"(?<![\w.-])[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+(?![\w-])(?!\.\w)")
_ERRNO = re.compile(r"(?<![\w-])E[A-Z0-9]{2,20}(?![\w-])")
_PLURAL_ACRONYM = re.compile(r"[A-Z]{2,}s")  # APIs, URLs: what the leading-acronym rule would read as "AP" + "Is"
_NUMBER = re.compile(r"(?<![\w.,-])\d{3,}(?![\w]|\.\d|,\d)")
_VERSION = re.compile(r"(?<![\w.-])(?:v\d+(?:\.\d+)+|@\d+(?:\.\d+)+|\d+\.\d+\.\d+(?:\.\d+)*)(?:-[0-9A-Za-z.]+)?(?![\w-])(?!\.\d)")
_HEX = re.compile(r"(?<![\w-])[0-9a-f]{7,64}(?![\w-])")
_UUID = re.compile(r"(?<![\w-])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![\w-])")
_MIXED = re.compile(r"(?<![\w.-])[A-Za-z0-9]+(?:[-.][A-Za-z0-9]+)*(?![\w-])(?!\.\w)")
# (An apostrophe inside a word opens no quote: "the user's name * @param name - The user's" holds no literal; a
# string's prefix does: f'...', rb'...'.)
_QUOTED = re.compile(r"\"([^\"\n\\]{6,60})\"|(?:(?<!\w)|(?<=(?<!\w)[bBfFrRuU])|(?<=(?<!\w)[bBfFrR]{2}))'([^'\n\\]{6,60})'(?!\w)")
_FENCE = re.compile(r"```[\w-]*\n(.*?)```|<command>\n?(.*?)</command>", re.S)  # SWE-agent's xml_* configs: <command>
_INJECTED_BLOCK = re.compile(
    r"<(system-reminder|local-command-stdout|local-command-stderr|local-command-caveat|task-notification|command-name|"
    r"command-message|environment_context|user_instructions|ide_opened_file|ide_selection)>.*?</\1>",
    re.S,
)
_INJECTED_OPENINGS = (
    "Caveat: The messages below were generated by the user",
    "This session is being continued from a previous conversation",
    "Your task is to create a detailed summary of the conversation",
    "Another language model started to solve this problem",
)
_IDE = "# Context from my IDE setup:"
_IDE_ASK = "## My request for Codex:"
_SPLIT_CMD = re.compile(r"&&|\|\||;|\||\n|\$\(|`")
_EXT_AFTER = re.compile(r"(?:" + "|".join(sorted(EXTENSIONS, key=len, reverse=True)) + r")(?![\w-])", re.I)
_UNIT = re.compile(r"^[\d.,]+[A-Za-z]{1,3}$")  # 200p (a sed range), 0.8rem, 100ms: a number with a unit
_TOKEN = re.compile(r"\"[^\"]*\"|'[^']*'|\S+")
_REDIRECT = re.compile(r"^\d?>>?|^&>|^<")
_SUBWORD = re.compile(r"^[a-z][a-z0-9:_-]*$")
_ASSIGN = re.compile(r"^[A-Za-z_]\w*=")
_WORDCH = r"[A-Za-z0-9_]"


def fold(s: str) -> str:
    return _WS.sub(" ", s).strip()


# ---- segments


@dataclass(frozen=True, slots=True)
class Segment:
    """A piece of a transcript's text, with who wrote it."""

    source: str  # system | written | output | injected
    text: str  # whitespace-folded


def _json_strings(v, out: list[str]) -> None:
    if isinstance(v, str):
        out.append(v)
    elif isinstance(v, list):
        for x in v:
            _json_strings(x, out)
    elif isinstance(v, dict):
        for x in v.values():
            _json_strings(x, out)


def decode_json_text(s: str) -> str:
    """JSON text -> its string values joined by newlines; other text (or invalid JSON) as it is, unescaped a little."""
    st = s.lstrip()
    if st[:1] in ("{", "["):
        try:
            v = orjson.loads(st)
        except orjson.JSONDecodeError:
            return s.replace("\\n", "\n").replace('\\"', '"').replace("\\t", "\t")
        out: list[str] = []
        _json_strings(v, out)
        return "\n".join(out)
    return s


def _arguments(raw: str) -> object:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def text_action_agent(messages: Sequence[Message]) -> bool:
    """A transcript whose agent acts through fenced blocks in its text (no structured tool calls)."""
    return not any(m.tool_calls or m.role == "tool" for m in messages)


def is_observation(messages: Sequence[Message], i: int, text_actions: bool) -> bool:
    m = messages[i]
    if m.role != "user" or not text_actions or i == 0:
        return False
    if m.extra.get("message_type") == "observation" and messages[i - 1].role == "assistant":
        return True
    prev = messages[i - 1]
    return prev.role == "assistant" and any(mark in prev.text() for mark in ("```", "<command>"))


def split_injected(text: str) -> tuple[list[str], str]:
    """(harness-injected parts, what the person wrote) of a user message."""
    if text.lstrip().startswith(_INJECTED_OPENINGS):
        return [text], ""
    injected: list[str] = []
    if text.lstrip().startswith(_IDE):
        k = text.find(_IDE_ASK)
        if k < 0:
            return [text], ""
        injected.append(text[:k])
        text = text[k + len(_IDE_ASK) :]

    def take(mo: re.Match) -> str:
        injected.append(mo.group(0))
        return "\n"

    rest = _INJECTED_BLOCK.sub(take, text)
    return injected, rest


def segments(messages: Sequence[Message], i: int, text_actions: bool | None = None) -> list[Segment]:
    """The text segments of message `i` with their sources."""
    if text_actions is None:
        text_actions = text_action_agent(messages)
    m = messages[i]
    out: list[Segment] = []

    def add(src: str, s: str) -> None:
        s = fold(s)
        if s:
            out.append(Segment(src, s))

    if m.role in ("system", "developer"):
        add("system", m.text())
    elif m.role == "tool":
        add("output", decode_json_text(m.text()))
    elif m.role == "user":
        if is_observation(messages, i, text_actions):
            add("output", m.text())
        else:
            inj, rest = split_injected(m.text())
            for s in inj:
                add("injected", s)
            add("written", rest)
    else:
        add("written", m.text())
        for c in m.tool_calls:
            add("written", decode_json_text(c.arguments))
    return out


def haystack(messages: Sequence[Message]) -> str:
    """All text of a (compacted) transcript, for `kept` checks: contents, tool-call names and arguments."""
    parts = []
    for m in messages:
        parts.append(decode_json_text(m.text()) if m.role == "tool" else m.text())
        for c in m.tool_calls:
            parts.append(c.name)
            parts.append(decode_json_text(c.arguments))
    return fold("\n".join(parts))


# ---- facts


def path_key(p: str) -> str | None:
    p = p.rstrip("/.,:;")
    if p.startswith("./"):
        p = p[2:]
    parts = [x for x in p.split("/") if x not in ("", ".", "..", "~")]
    if not parts or not any(ch.isalpha() for ch in parts[-1]):
        return None
    key = "/".join(parts[-2:])
    return key if len(key) >= 4 and key not in STOP_PATHS else None


def _is_path(tok: str) -> bool:
    if not any(ch.isalpha() for ch in tok):
        return False
    t = tok.rstrip("/")
    segs = [s for s in t.split("/") if s]
    if len(segs) < 1:
        return False
    ext = segs[-1].rsplit(".", 1)[-1].lower() if "." in segs[-1] else ""
    if tok.startswith(("/", "~", "./", "../")):
        return len(segs) >= 2 or ext in EXTENSIONS  # `./getAll` (an import) names a module, not a file we can tell
    return ext in EXTENSIONS or len(segs) >= 3


def _ident_ok(s: str) -> bool:
    return (
        len(s) >= 4
        and s not in STOP_IDENTIFIERS
        and not s.strip("_").isdigit()
        and not s.startswith("REDACTED")
        and not _PLURAL_ACRONYM.fullmatch(s)
    )


def facts_in(text: str) -> Iterator[tuple[str, str]]:
    """(kind, key) of every fact in a folded text (may repeat)."""
    spans: list[tuple[int, int]] = []
    for mo in _URL.finditer(text):
        url = mo.group(0).rstrip(".,:;!?'\"").rstrip("/")
        if len(url) > 10:
            yield "url", url
        spans.append(mo.span())
    if spans:  # URLs are not also paths and identifiers
        buf = list(text)
        for a, b in spans:
            buf[a:b] = " " * (b - a)
        text = "".join(buf)
    yield from _paths_in(text)
    yield from _identifiers_in(text)
    yield from _values_in(text)


def _paths_in(text: str) -> Iterator[tuple[str, str]]:
    for mo in _PATH.finditer(text):
        tok = mo.group(0)
        if _is_path(tok):
            k = path_key(tok)
            if k:
                yield "path", k
    for mo in _FILE.finditer(text):
        if mo.group(1).lower() in EXTENSIONS and any(ch.isalpha() for ch in mo.group(0).rsplit(".", 1)[0]):
            k = path_key(mo.group(0))
            if k:
                yield "path", k


def _identifiers_in(text: str) -> Iterator[tuple[str, str]]:
    for rx in (_SNAKE, _CAMEL, _PASCAL):
        for mo in rx.finditer(text):
            s = mo.group(0)
            a, b = mo.span()
            if a and text[a - 1] == "/":
                continue  # a path segment: the path rule has it
            if text[b : b + 1] == "." and (_EXT_AFTER.match(text, b + 1) or None) is not None:
                continue  # a file name's stem (main_app.py)
            if _ident_ok(s):
                yield "identifier", s
    for mo in _DOTTED.finditer(text):
        s = mo.group(0)
        parts = s.split(".")
        if parts[0].lower() in STOP_DOTTED_HEADS or parts[-1].lower() in EXTENSIONS or len(s) < 5:
            continue
        if all(len(p) == 1 for p in parts):
            continue
        yield "identifier", s
    for mo in _ERRNO.finditer(text):
        if mo.group(0) in ERRNO_NAMES:
            yield "identifier", mo.group(0)


def _values_in(text: str) -> Iterator[tuple[str, str]]:
    for mo in _UUID.finditer(text):
        yield "value", mo.group(0)
    for mo in _HEX.finditer(text):
        s = mo.group(0)
        if any(c.isdigit() for c in s) and any(c.isalpha() for c in s):
            yield "value", s
    for mo in _VERSION.finditer(text):
        yield "value", mo.group(0)
    for mo in _NUMBER.finditer(text):
        yield "value", mo.group(0)
    for mo in _MIXED.finditer(text):
        if _mixed_ok(mo.group(0)):
            yield "value", mo.group(0)
    for mo in _QUOTED.finditer(text):
        s = mo.group(1) or mo.group(2)
        if _quoted_ok(s):
            yield "value", s


def _mixed_ok(s: str) -> bool:
    """An id mixing letters and digits, not a unit, an encoding-like stop word or a file name."""
    return (
        len(s) >= 4
        and any(c.isdigit() for c in s)
        and any(c.isalpha() for c in s)
        and s.lower() not in STOP_VALUES
        and not _UNIT.match(s)
        and not (s.split(".")[-1].lower() in EXTENSIONS and "." in s)
    )


def _quoted_ok(s: str) -> bool:
    """A quoted literal worth a fact: not cut at punctuation, not a path or URL, with a space or punctuation."""
    if s[0].isspace() or s[-1].isspace() or s[0] in ",;:)]}." or s[-1] in "([{,":
        return False
    if ("/" in s and " " not in s) or _UNIT.match(s):
        return False  # a quoted path or URL: the path and URL rules have it
    return len(s) >= 6 and any(c.isalpha() for c in s) and re.search(r"[\s:,;=()\[\]{}/<>!?+*&%$#@-]", s) is not None


_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1[^\n]*\n.*?\n\s*\2(?=\s|$|\))", re.S)
_QUOTED_ARG = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'[^']*'", re.S)
_PROGRAM = re.compile(r"^[\w./~+@-]*\w$")
HIDDEN = '"…"'


def _mask_quotes(mo: re.Match) -> str:
    s = mo.group(0)
    return HIDDEN if any(ch in s for ch in "\n;&|()`$") else s


def _simple_commands(script: str) -> Iterator[list[str]]:
    script = _QUOTED_ARG.sub(_mask_quotes, _HEREDOC.sub("<<EOF", script))
    for part in _SPLIT_CMD.split(script):
        toks = [t.strip("()") for t in _TOKEN.findall(part.strip().lstrip("(").rstrip(")"))]
        toks = [t for t in toks if t]
        while toks and (_ASSIGN.match(toks[0]) or toks[0] in WRAPPERS or toks[0] == "env"):
            toks = toks[1:]
        if toks and toks[0] == "timeout":
            toks = toks[2:] if len(toks) > 1 and toks[1][:1].isdigit() else toks[1:]
        toks = [t for t in toks if not _REDIRECT.match(t) and t not in ("2>&1", "&")]
        if toks:
            yield toks


def commands_in(script: str) -> Iterator[str]:
    """Command facts of a shell script: the leading words of each simple command, and short whole commands."""
    for toks in _simple_commands(script):
        prog = toks[0]
        if (
            not _PROGRAM.match(prog)
            or prog in ("cd", "pushd", "popd", "echo", "printf", "export", "source", ".")
            or prog.startswith(("#", "-", "'", '"'))
        ):
            continue
        lead = [prog]
        if prog not in PATTERN_PROGRAMS:
            for t in toks[1:3]:
                if not _SUBWORD.match(t):
                    break
                lead.append(t)
        s = " ".join(lead)
        if (len(lead) > 1 or (prog not in TRIVIAL_PROGRAMS and prog not in WORD_PROGRAMS and len(prog) >= 4)) and s not in TRIVIAL_COMMANDS:
            yield s
        whole = " ".join(toks)
        if (
            len(toks) > len(lead)
            and len(whole) <= 60
            and HIDDEN not in whole
            and prog not in ("cat", "ls", "sed", "head", "tail", "grep", "rg", "find", "wc")
        ):
            yield whole


def scripts_of(m: Message, text_actions: bool) -> Iterator[str]:
    """The shell scripts a message runs: command arguments of its tool calls, or fenced action blocks."""
    for c in m.tool_calls:
        if "edit" in c.name.lower():
            continue  # an editor's "command" is a sub-command (view/create/str_replace), not a shell
        args = _arguments(c.arguments)
        if not isinstance(args, dict):
            continue
        for k in COMMAND_KEYS:
            v = args.get(k)
            if isinstance(v, str):
                yield v
            elif isinstance(v, list) and all(isinstance(x, str) for x in v) and v:
                if v[0] in SHELLS and len(v) >= 3 and v[1] in ("-c", "-lc", "-ic", "-l"):
                    yield v[-1]
                else:
                    yield " ".join(v)
    if text_actions and m.role == "assistant":
        for mo in _FENCE.finditer(m.text()):
            yield mo.group(1) if mo.group(1) is not None else mo.group(2)


# ---- occurrence


_DEFAULT_LEFT = rf"(?<!{_WORDCH})"
_EXT_ALT = "|".join(sorted(EXTENSIONS, key=len, reverse=True))

# A key drops a path's or URL's trailing slash: the same path or URL written with it is the same fact (a slash that goes
# on to a longer path or URL is not: after it and any trailing punctuation the URL rule strips, no more of it follows).
_BOUNDS: dict[str, tuple[str, str]] = {
    "path": (r"(?<![A-Za-z0-9_.-])", r"(?![A-Za-z0-9_-])(?!/[\w@+.~-])(?!\.[A-Za-z0-9])"),
    "url": (r"", r"(?![A-Za-z0-9_-])(?!/+[.,:;!?]*[^\s\"'<>`)\]}|\\.,:;!?/])(?!\.[A-Za-z0-9])"),
    # an identifier is not used again by a file it names the stem of (main_app in main_app.py)
    "identifier": (_DEFAULT_LEFT, rf"(?!{_WORDCH})(?!\.(?:{_EXT_ALT})(?![A-Za-z0-9_(-]))"),
}
_DEFAULT_BOUNDS = (_DEFAULT_LEFT, rf"(?!{_WORDCH})")
_rx_cache: dict[tuple[str, str], re.Pattern] = {}


def _pattern(kind: str, key: str) -> re.Pattern:
    rx = _rx_cache.get((kind, key))
    if rx is None:
        left, right = _BOUNDS.get(kind, _DEFAULT_BOUNDS)
        if key[:1] and not re.match(r"\w", key[0]):
            left = ""  # a key that starts (or ends) with punctuation carries its own boundary
        if key[-1:] and not re.match(r"\w", key[-1]) and kind != "path":
            right = ""
        if kind == "value":  # not inside a longer number: 404 is not in 1.404, 404.5 or 1,404; 1.2.3 not in 1.2.3.4
            if key[:1].isdigit():
                left += r"(?<!\d[.,])"
            if key[-1:].isdigit():
                right += r"(?![.,]\d)"
        rx = re.compile(left + re.escape(key) + right)
        if len(_rx_cache) > 200_000:
            _rx_cache.clear()
        _rx_cache[(kind, key)] = rx
    return rx


def occurs(kind: str, key: str, text: str) -> bool:
    """Whether a fact occurs in a folded text (case-sensitive, at boundaries)."""
    if key not in text:
        return False
    return _pattern(kind, key).search(text) is not None


# ---- needed-later facts


@dataclass
class Fact:
    """A fact of the prefix that the continuation writes again, and where it sat and was used."""

    kind: str
    key: str
    source: str  # written | output | injected: where it sat in the prefix (written wins, then output)
    where: list[tuple[int, str, str]] = field(default_factory=list)  # (message index, role, source) in the prefix
    used_at: int = -1  # index (in the whole transcript) of the first continuation message that writes it
    rediscovered: bool = False  # the continuation shows it in a tool output (or harness text) before that use
    seen: str = ""  # the text around its first occurrence in the prefix
    used: str = ""  # the text around its first written use in the continuation

    def as_dict(self) -> dict:
        return {
            "kind": self.kind,
            "key": self.key,
            "source": self.source,
            "where": self.where[:5],
            "used_at": self.used_at,
            "rediscovered": self.rediscovered,
            "seen": self.seen,
            "used": self.used,
        }


def snippet(kind: str, key: str, text: str, width: int = 50) -> str:
    """The text around the first occurrence of a fact, with ... where it was cut."""
    mo = _pattern(kind, key).search(text)
    if mo is None:
        return ""
    a, b = max(mo.start() - width, 0), min(mo.end() + width, len(text))
    return ("..." if a else "") + text[a:b] + ("..." if b < len(text) else "")


def _message_facts(messages: Sequence[Message], i: int, text_actions: bool) -> Iterator[tuple[str, str, str]]:
    """(kind, key, source) of message i."""
    for seg in segments(messages, i, text_actions):
        for kind, key in facts_in(seg.text):
            yield kind, key, seg.source
    for script in scripts_of(messages[i], text_actions):
        for cmd in commands_in(script):
            yield "command", fold(cmd), "written"


def needed_facts(messages: Sequence[Message], cut: int) -> list[Fact]:
    """Facts of the removable prefix (messages[:cut] minus its leading system messages) that the
    continuation (messages[cut:]) writes again, minus any that a system message holds."""
    text_actions = text_action_agent(messages)
    start = 0
    while start < cut and messages[start].role in ("system", "developer"):
        start += 1
    system_text = " ".join(
        s.text for i, m in enumerate(messages) if m.role in ("system", "developer") for s in segments(messages, i, text_actions)
    )
    cands = _prefix_facts(messages, start, cut, text_actions)
    later: list[tuple[int, list[Segment]]] = [(j, segments(messages, j, text_actions)) for j in range(cut, len(messages))]
    written_all = " \n ".join(s.text for _, segs in later for s in segs if s.source == "written")
    out = []
    for (kind, key), f in cands.items():
        if not occurs(kind, key, written_all) or (system_text and occurs(kind, key, system_text)):
            continue
        _first_use(f, later)
        if f.used_at < 0:  # matched only across a segment join: not a use
            continue
        i0, _, src0 = f.where[0]
        f.seen = next((x for x in (snippet(kind, key, s.text) for s in segments(messages, i0, text_actions) if s.source == src0) if x), "")
        out.append(f)
    out.sort(key=lambda f: (KINDS.index(f.kind), f.key))
    return out


_RANK = {"written": 0, "output": 1, "injected": 2, "system": 3}


def _prefix_facts(messages: Sequence[Message], start: int, cut: int, text_actions: bool) -> dict[tuple[str, str], Fact]:
    """Every fact of messages[start:cut], with where it sat (written wins, then output)."""
    cands: dict[tuple[str, str], Fact] = {}
    for i in range(start, cut):
        role = messages[i].role
        for kind, key, src in _message_facts(messages, i, text_actions):
            if src == "system":
                continue
            f = cands.get((kind, key))
            if f is None:
                f = cands[(kind, key)] = Fact(kind, key, src)
            elif _RANK[src] < _RANK[f.source]:
                f.source = src
            if len(f.where) < 20 and (not f.where or f.where[-1][0] != i or f.where[-1][2] != src):
                f.where.append((i, role, src))
    return cands


def _first_use(f: Fact, later: list[tuple[int, list[Segment]]]) -> None:
    """Set where the continuation first writes the fact, and whether an output showed it before."""
    for j, segs in later:
        hit = next((s for s in segs if s.source == "written" and occurs(f.kind, f.key, s.text)), None)
        if hit is not None:
            f.used_at = j
            f.used = snippet(f.kind, f.key, hit.text)
            return
        if any(s.source != "written" and occurs(f.kind, f.key, s.text) for s in segs):
            f.rediscovered = True


def kept(f: Fact, hay: str) -> bool:
    return occurs(f.kind, f.key, hay)


def kept_facts(facts: Iterable[Fact], messages: Sequence[Message]) -> list[bool]:
    hay = haystack(messages)
    return [kept(f, hay) for f in facts]


# How many characters next to a fact make its neighbourhood, and how many of its occurrences in the prefix count.
NEIGHBOUR_CHARS = 8
NEIGHBOUR_OCCURRENCES = 50


def in_context(f: Fact, prefix_hay: str, hay: str) -> bool:
    """Whether a folded output shows the fact next to what it had beside it in the prefix (the NEIGHBOUR_CHARS
    characters before or after one of its occurrences there): a line of code or output kept whole does, a list of
    bare names does not. A stricter reading of `kept`: a name a model sees with its neighbours is one it can use."""
    at, seen = prefix_hay.find(f.key), 0
    while at >= 0 and seen < NEIGHBOUR_OCCURRENCES:
        end = at + len(f.key)
        left, right = prefix_hay[max(at - NEIGHBOUR_CHARS, 0) : at], prefix_hay[end : end + NEIGHBOUR_CHARS]
        if (left and left + f.key in hay) or (right and f.key + right in hay):
            return True
        at, seen = prefix_hay.find(f.key, end), seen + 1
    return False


def context_facts(facts: Sequence[Fact], prefix: Sequence[Message], messages: Sequence[Message], kept: Sequence[bool]) -> list[bool]:
    """`in_context` for each fact the output keeps (`kept`), the prefix and the output given as messages."""
    prefix_hay, hay = haystack(prefix), haystack(messages)
    return [k and in_context(f, prefix_hay, hay) for f, k in zip(facts, kept, strict=True)]
