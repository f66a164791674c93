"""bench/outside_eval.py: an instrument apart from compactctl (it imports none of it), its fact extractor,
its readers, its scoring and its baselines, on tiny in-memory sessions."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "outside_eval.py"
ALLOWED_THIRD_PARTY = {"tiktoken", "orjson"}


def _load():
    spec = importlib.util.spec_from_file_location("outside_eval", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["outside_eval"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


oe = _load()


def _dynamic_import(node: ast.Call) -> bool:
    name = getattr(node.func, "attr", getattr(node.func, "id", ""))
    return name in ("import_module", "__import__") and bool(node.args) and isinstance(node.args[0], ast.Constant)


def imported_modules(source: str) -> set[str]:
    """Top-level names of every module a source imports (import x.y, from x import y, importlib.import_module("x"))."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add("." if node.level else (node.module or "").split(".")[0])
        elif isinstance(node, ast.Call) and _dynamic_import(node):
            names.add(str(node.args[0].value).split(".")[0])
    return names


def test_the_import_check_sees_compactctl():
    assert "compactctl" in imported_modules("from compactctl.tokens import make_counter")
    assert "compactctl" in imported_modules("def f():\n    import compactctl.api as a\n")
    assert "compactctl" in imported_modules("import importlib\nimportlib.import_module('compactctl.needed')")
    assert "." in imported_modules("from . import x")


def test_the_script_imports_nothing_from_compactctl():
    mods = imported_modules(SCRIPT.read_text(encoding="utf-8"))
    assert "compactctl" not in mods
    assert "." not in mods
    others = mods - set(sys.stdlib_module_names) - {"__future__"}
    assert others <= ALLOWED_THIRD_PARTY, f"beyond stdlib + tiktoken + orjson: {sorted(others - ALLOWED_THIRD_PARTY)}"


def test_the_script_does_not_run_compactctl_in_process():
    assert "sys.path" not in SCRIPT.read_text(encoding="utf-8")  # no way to reach the project's modules


def test_extractor_kinds():
    facts: dict[str, str] = {}
    text = (
        "See https://example.com/a?b=1 and lib/spotter/annotation.ex, then mix.exs. SessionLive calls useState and "
        'load_tool_call_stats via Ash.Query.filter; v1.2.3 at commit 9dd68ea, port 4000, "hello world", it\'s fine, '
        'x = "a", else: "b"'
    )
    oe.text_facts(text, facts)
    assert facts["https://example.com/a?b=1"] == "url"
    assert facts["lib/spotter/annotation.ex"] == "path"
    assert facts["mix.exs"] == "path"
    for ident in ("SessionLive", "useState", "load_tool_call_stats", "Ash.Query.filter"):
        assert facts[ident] == "identifier", ident
    assert facts["v1.2.3"] == facts["9dd68ea"] == facts["hello world"] == "value"
    assert facts["4000"] == "number"
    assert "example.com" not in facts  # inside the URL, which is one fact
    assert not any(", else" in f for f in facts)  # the text between two string literals is no string
    assert not any(f.startswith("s fine") for f in facts)  # an apostrophe opens no quote


def test_command_facts_take_the_first_line_parts():
    facts: dict[str, str] = {}
    oe.command_facts("cd /repo && mix test 2>&1 | tail -5\nsecond line is a heredoc body", facts)
    assert facts == {"cd /repo": "command", "mix test 2>&1": "command", "tail -5": "command"}


def test_finder_matches_at_word_boundaries_only():
    f = oe.Finder("see user_ids and /home/x/lib/foo.ex:12")
    assert f.has("lib/foo.ex")
    assert not f.has("user_id")
    assert not f.has("foo.e")


def _msg(role, text, evidence=None, commands=()):
    if evidence is None:
        evidence = text if role in ("user", "assistant") else ""
    return oe.Msg(role, text, evidence, 0, list(commands))


def tiny_session():
    prefix = [
        _msg("user", "Fix the bug in app/main.py"),
        _msg("assistant", "Bash: grep -rn parse_config src", commands=["grep -rn parse_config src"]),
        _msg("tool", "src/config_loader.py:12: def parse_config(path):\nMAX_RETRIES = 17"),
        _msg("assistant", "thinking about it", evidence=""),
    ]
    cont = [
        _msg("tool", "MAX_RETRIES = 17 again"),
        _msg("assistant", "Edit src/config_loader.py: parse_config now retries MAX_RETRIES times; also app/main.py"),
        _msg("user", "and run grep -rn parse_config src again"),
    ]
    return prefix, cont


def test_needed_facts_rediscovery_and_head():
    prefix, cont = tiny_session()
    needs = {n.fact: n for n in oe.needed_facts(prefix, cont)}
    assert set(needs) >= {"src/config_loader.py", "parse_config", "MAX_RETRIES", "grep -rn parse_config src"}
    assert "app/main.py" not in needs  # in the first user message: every method keeps it
    assert "17" not in needs  # only a tool output repeats it: nobody writes it
    assert needs["MAX_RETRIES"].rediscovered and not needs["parse_config"].rediscovered
    assert needs["grep -rn parse_config src"].kind == "command" and needs["grep -rn parse_config src"].used_at == 2
    assert needs["src/config_loader.py"].used_at == 1


def test_score_counts_kept_lost_and_in_context():
    prefix, cont = tiny_session()
    needs = oe.needed_facts(prefix, cont)
    prefix_text = "\n".join(m.text for m in prefix)
    out = "Bash: grep -rn parse_config src\nnames: MAX_RETRIES src/config_loader.py"
    row = oe.score(needs, out, prefix_text)
    assert row["needed"] == len(needs)
    lost = set(row["lost"])
    assert "MAX_RETRIES" not in lost and "parse_config" not in lost
    assert row["kept"] == row["needed"] - len(lost)
    assert row["needed_nr"] == sum(not n.rediscovered for n in needs)
    # MAX_RETRIES and the path (and config_loader, an identifier inside it) only sit in a list of names,
    # away from their neighbourhood in the prefix; the command and parse_config keep theirs
    assert row["kept_ctx"] == row["kept"] - 3
    assert oe.kept_in_context("parse_config", prefix_text, out)
    assert not oe.kept_in_context("MAX_RETRIES", prefix_text, out)
    assert oe.score(needs, "", prefix_text)["kept"] == 0


def test_claude_reader_merges_one_message_and_splits_results():
    lines = [
        b'{"type":"user","message":{"role":"user","content":"go"}}',
        b'{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"a"}]}}',
        b'{"type":"progress","data":{}}',
        b'{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","name":"Bash","input":{"command":"ls -la /tmp"}}]}}',
        b'{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":[{"type":"text","text":"x"}]}]}}',
        b'{"type":"system","subtype":"compact_boundary"}',
        b'{"type":"user","isCompactSummary":true,"message":{"role":"user","content":"summary"}}',
        b"not json",
    ]
    msgs = oe.read_messages(lines)
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "boundary", "user"]
    assert msgs[1].last_line == 3 and msgs[1].commands == ["ls -la /tmp"] and "ls -la /tmp" in msgs[1].evidence
    assert msgs[2].text == "x" and msgs[2].evidence == ""
    assert msgs[4].evidence == ""  # a compaction summary is nobody's writing
    assert oe.live_start(msgs) == 4


def test_codex_reader_reads_calls_outputs_and_compacted():
    lines = [
        b'{"type":"session_meta","payload":{"id":"x"}}',
        b'{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}',
        b'{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\\"command\\":[\\"bash\\",\\"-lc\\",\\"rg foo\\"]}","call_id":"c"}}',
        b'{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"{\\"output\\":\\"a.py:1\\",\\"metadata\\":{}}"}}',
        b'{"type":"compacted","payload":{"message":"s","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"kept"}]}]}}',
    ]
    msgs = oe.read_messages(lines)
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "boundary", "user"]
    assert msgs[1].commands == ["rg foo"] and msgs[2].text == "a.py:1"
    assert msgs[4].text == "kept" and msgs[4].evidence == ""


@pytest.fixture(scope="module")
def tok():
    try:
        return oe.Tokens()
    except Exception as e:  # no network and no local copy of the rank file
        pytest.skip(f"o200k_base not available: {e}")


def test_baselines_hold_the_budget(tok):
    msgs = [_msg("user", "task " * 50)] + [_msg("tool" if i % 2 else "assistant", f"step {i} " + "word " * 200) for i in range(11)]
    counts = [tok.count(m.text) for m in msgs]
    budget = sum(counts) // 5
    ht = oe.head_tail([m.text for m in msgs], counts, budget, tok)
    assert budget - 5 <= sum(tok.count(t) for t in ht) <= budget + 5
    assert ht[0] == msgs[0].text and ht[-1] == msgs[-1].text
    mk, dropped = oe.masking(msgs, counts, budget, tok)
    assert dropped and mk[0] == msgs[0].text and mk[-1] == msgs[-1].text
    assert sum(tok.count(t) for t in mk) <= budget + 5
    roomy, dropped = oe.masking(msgs, counts, sum(counts) - counts[1] // 2, tok)
    assert not dropped and oe.PLACEHOLDER in roomy[2] and roomy[4] == msgs[4].text
