"""Continuation scoring: the independent extractor (compactctl.needed) and the harness (compactctl.continuation)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import orjson

from compactctl import api, baselines, continuation, evaluate, lexical, needed
from compactctl.formats.openai import message_from_dict
from compactctl.pairs import groups
from compactctl.phases.rules import check
from compactctl.tokens import make_counter

from .conftest import SAMPLES, cli
from .rows import T

COUNTER = make_counter("gpt-4o")
PKG = Path(needed.__file__).resolve().parent


def call(cid, command, name="terminal"):
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": orjson.dumps({"command": command}).decode()}}
        ],
    }


ROWS = [
    {"role": "system", "content": "You are a coding agent. Settings live in conf/sys_settings.yaml."},
    {"role": "user", "content": "Fix parse_config in src/app/config.py, then run the tests."},
    call("a", "pytest -q tests/test_config.py"),
    {
        "role": "tool",
        "tool_call_id": "a",
        "content": "FAILED tests/test_config.py::test_timeout - DEFAULT_TIMEOUT_MS is 3000\nsee helper_in_output",
    },
    {"role": "assistant", "content": "The bug is in load_settings; conf/sys_settings.yaml is fine. Commit 9f3e2ab1 broke it."},
    # ---- cut here (index 5)
    {"role": "user", "content": "ok, rename load_settings and check conf/sys_settings.yaml"},
    call("b", "grep -n helper_in_output src/app/config.py"),
    {"role": "tool", "tool_call_id": "b", "content": "12: helper_in_output()  # also 9f3e2ab1"},
    {"role": "assistant", "content": "DEFAULT_TIMEOUT_MS now 3000 everywhere; 9f3e2ab1 reverted."},
]


def keys(facts):
    return {(f.kind, f.key) for f in facts}


def test_needed_facts_are_prefix_facts_the_continuation_writes():
    t = T(ROWS)
    fs = needed.needed_facts(t.messages, 5)
    k = keys(fs)
    assert ("identifier", "load_settings") in k  # written in the prefix, written again later
    assert ("identifier", "DEFAULT_TIMEOUT_MS") in k  # only a tool output in the prefix, written later
    assert ("path", "app/config.py") in k  # used later by the same relative path
    assert ("identifier", "parse_config") not in k  # never used again
    assert ("path", "conf/sys_settings.yaml") not in k  # the system prompt holds it: every strategy keeps it
    by = {(f.kind, f.key): f for f in fs}
    assert by[("identifier", "DEFAULT_TIMEOUT_MS")].source == "output"
    assert by[("identifier", "load_settings")].source == "written"
    assert by[("identifier", "load_settings")].used_at == 5
    # helper_in_output: written later only inside a command argument -> it is used (tool-call arguments are written)
    assert ("identifier", "helper_in_output") in k
    # 9f3e2ab1: the continuation's tool output shows it (message 7) before the agent writes it (message 8)
    assert by[("value", "9f3e2ab1")].rediscovered and by[("value", "9f3e2ab1")].used_at == 8
    assert not by[("identifier", "load_settings")].rediscovered


def test_in_context_needs_a_neighbour_the_fact_had_in_the_prefix():
    t = T(ROWS)
    fs = [f for f in needed.needed_facts(t.messages, 5) if f.key == "load_settings"]
    prefix = t.messages[:5]

    def scored(text):
        out = [message_from_dict({"role": "user", "content": text}, "t", 1, 0)]
        return needed.context_facts(fs, prefix, out, needed.kept_facts(fs, out))

    assert scored("The bug is in load_settings; conf/sys_settings.yaml is fine.") == [True]  # a line kept whole
    assert scored("- names: parse_config load_settings DEFAULT_TIMEOUT_MS") == [False]  # a bare name is kept, not in context
    assert needed.kept_facts(fs, [message_from_dict({"role": "user", "content": "names: load_settings"}, "t", 1, 0)]) == [True]
    assert scored("nothing of it") == [False]
    agg = continuation.aggregate(
        [
            {
                "tokens_before": 1,
                "facts": [f.as_dict() for f in fs] * 2,
                "strategies": {"x": {"tokens_after": 1, "valid": 1, "cannot_fit": 0, "kept": [True, True], "in_context": [True, False]}},
            }
        ],
        ["x"],
    )
    assert agg["x"]["kept"] == 1.0 and agg["x"]["in_context"] == 0.5


def test_explain_context_lists_facts_kept_out_of_context_with_the_form_the_output_shows_them_in():
    """`explain(rows, n, what="context")`: the facts a strategy kept but not next to a neighbour they had in the prefix,
    with where they sat, what compaction made of the place the output shows them (`output_form`: a digest's names
    line, a summary's section, a cut argument's names) and, with `versus`, how another strategy did on each."""
    from compactctl.markers import EXCERPT_LINE, NAMES_LINE
    from compactctl.model import SUMMARY_MARKER

    t = T(ROWS)
    fs = needed.needed_facts(t.messages, 5)
    by = {f.key: f for f in fs}
    digest = message_from_dict(
        {
            "role": "tool",
            "tool_call_id": "a",
            "content": f"[terminal] ran `pytest` -> exit 1\n{NAMES_LINE}DEFAULT_TIMEOUT_MS x [ref 0a1b2c3d]",
        },
        "t",
        1,
        0,
    )
    out = [*t.messages[:3], digest.evolve(content=digest.text())]
    assert continuation.output_form(by["DEFAULT_TIMEOUT_MS"], out).startswith("#3 tool digest names: ")
    excerpt = digest.evolve(
        content=f"[terminal] ran `pytest` -> exit 1\n{EXCERPT_LINE}lines 4-5 of 9, as they were:\nx = DEFAULT_TIMEOUT_MS"
    )
    assert continuation.output_form(by["DEFAULT_TIMEOUT_MS"], [*t.messages[:3], excerpt]).startswith("#3 tool digest excerpt: ")
    summary = message_from_dict({"role": "user", "content": f"{SUMMARY_MARKER}\n## Key Decisions\n- names: load_settings"}, "t", 1, 0)
    assert "summary index [## Key Decisions]" in continuation.output_form(by["load_settings"], [summary])
    cut = message_from_dict(call("c", "x" * 20 + "...[truncated] [ref 0a1b2c3d] names: load_settings"), "t", 1, 0)
    assert "call terminal cut argument, names" in continuation.output_form(by["load_settings"], [cut])
    assert continuation.output_form(by["load_settings"], t.messages[:5]).startswith("#4 assistant as it was: ")

    sample = api.read([str(SAMPLES / "dataset.jsonl")])[0]  # compactctl keeps 4 of its 11 facts at 50% out of context
    res = continuation.evaluate([sample], COUNTER, strategies=("compactctl", "head-tail-fill"), cuts=(0.5,))
    [row] = res["rows"]
    ours = row["strategies"]["compactctl"]
    out_of_context = [f["key"] for f, k, c in zip(row["facts"], ours["kept"], ours["in_context"], strict=True) if k and not c]
    assert out_of_context
    assert set(ours["forms"]) == {str(j) for j, (k, c) in enumerate(zip(ours["kept"], ours["in_context"], strict=True)) if k and not c}
    listed = continuation.explain(res["rows"], 50, what="context", versus="head-tail-fill")
    assert len(listed) == len(out_of_context)
    for line, key in zip(listed, out_of_context, strict=True):
        assert repr(key) in line and "; kept as " in line and "; head-tail-fill: " in line
    # A hand-made row: one fact kept in context, one kept out of it, one lost.
    f3 = [f.as_dict() for f in fs[:3]]
    row = {
        "transcript": "t",
        "cut": 0.5,
        "cut_index": 5,
        "facts": f3,
        "strategies": {
            "x": {"kept": [True, True, False], "in_context": [True, False, False], "forms": {"1": "#3 tool digest names: 'x'"}},
            "y": {"kept": [True, True, True], "in_context": [True, True, False]},
        },
    }
    [line] = continuation.explain([row], 5, "x", what="context", versus="y")
    assert repr(f3[1]["key"]) in line and line.endswith("; kept as #3 tool digest names: 'x'; y: in context")
    [lost] = continuation.explain([row], 5, "x", versus="y")
    assert repr(f3[2]["key"]) in lost and lost.endswith("; y: kept")
    try:
        continuation.explain([row], 5, "x", what="kept")
    except ValueError as e:
        assert "'lost' or 'context'" in str(e)
    else:
        raise AssertionError("an unknown `what` must raise")


def test_a_fact_seen_later_only_in_tool_output_is_not_needed():
    rows = ROWS[:5] + [
        {"role": "user", "content": "go on"},
        call("b", "make build"),
        {"role": "tool", "tool_call_id": "b", "content": "load_settings DEFAULT_TIMEOUT_MS 9f3e2ab1"},
    ]
    assert needed.needed_facts(T(rows).messages, 5) == []


def test_harness_text_in_user_turns_is_not_written():
    rows = ROWS[:5] + [{"role": "user", "content": "<system-reminder>\nremember load_settings\n</system-reminder>\ngo on"}]
    assert needed.needed_facts(T(rows).messages, 5) == []
    inj, rest = needed.split_injected("<environment_context>\n<cwd>/a/b/c</cwd>\n</environment_context>")
    assert inj and not rest.strip()
    inj, rest = needed.split_injected("# Context from my IDE setup:\n## Active file: x/y/z.ts\n## My request for Codex:\nfix getAll")
    assert "z.ts" in inj[0] and rest.strip() == "fix getAll"


def test_text_action_agents_and_json_outputs():
    # SWE-agent style: actions are fenced blocks in the assistant's text, observations come back as user turns
    rows = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Fix the colon in missing_colon.py"},
        {"role": "assistant", "content": "Let me look.\n```\nopen tests/missing_colon.py\n```"},
        {"role": "user", "content": "def division_helper(a, b)\n(Open file: tests/missing_colon.py)"},
        {"role": "assistant", "content": "Fix tests/missing_colon.py:\n```\nedit 4:4\ndef division_helper(a, b):\nend_of_edit\n```"},
    ]
    msgs = T(rows).messages
    assert needed.text_action_agent(msgs)
    assert [s.source for s in needed.segments(msgs, 3)] == ["output"]
    by = {(f.kind, f.key): f for f in needed.needed_facts(msgs, 4)}
    assert by[("identifier", "division_helper")].source == "output"
    assert by[("path", "tests/missing_colon.py")].source == "written"
    # SWE-agent's xml_* configs: the action is a <command> block; its observation is output, its script a command
    xml = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Fix the colon in missing_colon.py"},
        {"role": "assistant", "content": "Let me look.\n<command>\nopen tests/missing_colon.py\n</command>"},
        {"role": "user", "content": "1:def division_helper(a, b)\n(Open file: tests/missing_colon.py)"},
        {"role": "assistant", "content": "Now run it.\n<command>\npython -m pytest tests/missing_colon.py\n</command>"},
        {"role": "user", "content": "def division_helper(a, b) ok"},
    ]
    xm = T(xml).messages
    assert [s.source for s in needed.segments(xm, 3)] == ["output"]
    assert list(needed.scripts_of(xm[4], True)) == ["python -m pytest tests/missing_colon.py\n"]
    assert needed.is_observation(xm, 5, True) and not needed.is_observation(xm, 1, True)
    # Codex: a tool output that is JSON text is read as its strings (no `\n` glued to the next word)
    out = needed.decode_json_text('{"output":"README.md\\nsrc/main_app.py\\n","metadata":{"exit_code":0}}')
    assert set(needed.facts_in(needed.fold(out))) == {("path", "README.md"), ("path", "src/main_app.py")}
    assert list(
        needed.scripts_of(
            message_from_dict(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c",
                            "type": "function",
                            "function": {"name": "shell", "arguments": '{"command":["bash","-lc","pnpm --filter web lint"]}'},
                        }
                    ],
                },
                "t",
                1,
                0,
            ),
            False,
        )
    ) == ["pnpm --filter web lint"]


def test_commands_and_matching_boundaries():
    cmds = list(needed.commands_in("cd repo && FOO=1 npx prisma migrate dev 2>&1 | tail -5; git status; ls -la"))
    assert cmds == ["npx prisma migrate", "npx prisma migrate dev"]
    heredoc = "git commit -m \"$(cat <<'EOF'\nfeat: x\n\nCo-Authored-By: me\nEOF\n)\" && git push"
    assert list(needed.commands_in(heredoc)) == ["git commit", "git push"]
    assert list(needed.commands_in("(cd app/(protected) && pnpm lint); sed -n '1,200p' a.ts")) == ["pnpm lint"]
    assert not [v for v in needed.facts_in("sed -n '1,200p' and 0.8rem") if v[0] == "value"]
    assert needed.occurs("identifier", "getAll", "call getAll(x)")
    assert not needed.occurs("identifier", "getAll", "call getAllUsers(x)")
    assert needed.occurs("path", "app/config.py", "edited /x/src/app/config.py.")
    assert not needed.occurs("path", "app/config.py", "edited src/app/config.pyc")
    assert not needed.occurs("path", "app/config.py", "see myapp/config.py")
    facts = set(needed.facts_in(needed.fold("See https://example.com/a/b/ and Spotter.Repo.get, v1.2.3, ENOENT, 0x and e.g. this")))
    assert ("url", "https://example.com/a/b") in facts
    assert ("identifier", "Spotter.Repo.get") in facts and ("value", "v1.2.3") in facts and ("identifier", "ENOENT") in facts
    assert not any(k == "path" for k, _ in facts)  # a URL is not also a path
    assert ("identifier", "e.g") not in facts


def _imports(path: Path) -> set[str]:
    """Absolute names of the compactctl modules a file imports."""
    tree = ast.parse(path.read_text())
    pkg = ".".join(path.relative_to(PKG.parent).with_suffix("").parts[:-1])
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("compactctl")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.rsplit(".", node.level - 1)[0] if node.level > 1 else pkg
                mod = f"{base}.{node.module}" if node.module else base
                names = [mod] + ([f"{mod}.{a.name}" for a in node.names] if not node.module else [])
            else:
                names = [node.module or ""]
            out |= {n for n in names if n.startswith("compactctl")}
    return out


def test_extractor_is_independent_of_the_compaction():
    # compactctl.needed imports nothing from compactctl; whatever it might import later must not reach
    # the compaction's own extraction (summarizers, phases, tools and outputs, harness rules, name index)
    forbidden = (
        "compactctl.summarizers",
        "compactctl.phases",
        "compactctl.tools",
        "compactctl.outputs",
        "compactctl.harness",
        "compactctl.names",
    )
    assert _imports(PKG / "needed.py") == set()
    seen: set[str] = set()
    todo = ["compactctl.needed"]
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        seen.add(mod)
        spec = importlib.util.find_spec(mod)
        if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
            continue
        for imp in _imports(Path(spec.origin)):
            assert not imp.startswith(forbidden), f"{mod} imports {imp}"
            todo.append(imp)
    # the parser does see relative and absolute imports (the harness module imports the compaction, as it must)
    assert {"compactctl.needed", "compactctl.pipeline"} <= _imports(PKG / "continuation.py")
    assert {"compactctl.needed", "compactctl.phases.repair"} <= _imports(PKG / "baselines.py")


_RUN_EXTRACTORS = """
import sys
from compactctl import lexical, needed

class Call:
    def __init__(self, name, arguments):
        self.name, self.arguments = name, arguments

class Msg:
    def __init__(self, role, text, calls=()):
        self.role, self._text, self.tool_calls, self.extra = role, text, list(calls), {}
    def text(self):
        return self._text

msgs = [
    Msg("system", "You are a coding agent."),
    Msg("user", "Fix parse_config in src/app/config.py"),
    Msg("assistant", "", [Call("terminal", '{"command": "pytest -q tests/test_config.py"}')]),
    Msg("tool", "FAILED test_timeout: DEFAULT_TIMEOUT_MS is 3000"),
    Msg("user", "now fix parse_config and DEFAULT_TIMEOUT_MS, run pytest -q tests/test_config.py"),
]
facts = needed.needed_facts(msgs, 4)
assert facts, "no fact found: the extractor was not exercised"
kept = needed.kept_facts(facts, msgs[:2])
needed.context_facts(facts, msgs[:4], msgs[:2], kept)
lexical.kept_words(lexical.needed_words(msgs, 4), msgs[:2])
print(" ".join(sorted(m for m in sys.modules if m == "compactctl" or m.startswith("compactctl."))))
"""


def test_extractor_loads_nothing_of_the_compaction_when_run():
    """The import walk above reads `import` statements; an `importlib.import_module(...)` or `__import__(...)` in
    the extractor (at module level or in a function it runs) passed it. Run the extractor alone in a fresh
    interpreter, on messages of its own Protocol, and look at what it loaded."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", _RUN_EXTRACTORS], capture_output=True, text=True, cwd=PKG.parent)
    assert r.returncode == 0, r.stderr
    loaded = set(r.stdout.split())
    assert loaded == {"compactctl", "compactctl._version", "compactctl.needed", "compactctl.lexical"}, loaded
    for name in ("needed.py", "lexical.py"):  # and no way to import by name that a run might not reach
        text = (PKG / name).read_text()
        for dynamic in ("importlib", "__import__", "import_module", "exec(", "eval("):
            assert dynamic not in text, f"{name} uses {dynamic}"


def test_needed_words_have_no_kinds():
    """The second instrument: words of 4+ letters and digits the continuation writes that the removable prefix
    holds, from any source; not the system's, not common English."""
    t = T(ROWS)
    words = lexical.needed_words(t.messages, 5)
    # held before the cut (a user ask, a tool output, the agent's text; identifiers split at "_") and written after it
    assert words == {"config", "default", "helper", "load", "output", "timeout"}
    # "rename": not in the prefix; "settings", "conf", "yaml": the system message holds them; "3000": no letter first;
    # "now": too short; "grep": a command word in the continuation only
    assert not words & lexical.COMMON
    kept = t.evolve(messages=t.messages[:2])  # the system message and the first ask
    assert lexical.kept_words(words, kept.messages) == len(words & lexical.words_in(ROWS[1]["content"]))


def test_lexical_is_independent_of_the_compaction():
    assert _imports(PKG / "lexical.py") == {"compactctl", "compactctl.needed"}  # (`from . import needed`)


def test_cuts_start_turns_and_baselines_meet_the_budget():
    [t] = api.read([str(SAMPLES / "parallel_calls.jsonl")])
    starts = {s for s, _ in groups(t.messages)}
    cuts = continuation.cut_points(t.messages, (0.4, 0.6, 0.8))
    assert len(cuts) == 3
    for _, c in cuts:
        assert c in starts and t.messages[c].role in ("user", "assistant")
    prefix = t.evolve(messages=t.messages[: cuts[0][1]])
    total = sum(COUNTER.messages(prefix.messages))
    for budget in (total // 5, total // 10):
        for fn in (baselines.head_tail, baselines.head_tail_fill, baselines.recent, baselines.masking):
            out = fn(prefix, COUNTER, budget)
            assert sum(COUNTER.messages(out.messages)) <= budget, fn.__name__
            assert check(out) == [], fn.__name__
    masked = baselines.masking(prefix, COUNTER, total - 10)
    assert any(m.text() == baselines.MASK for m in masked.messages)
    assert len(masked.messages) == len(prefix.messages)  # masking a little drops nothing


def test_two_fractions_nearest_the_same_turn_start_make_one_cut():
    # four messages, turn starts at 1, 2 and 3: 0.4 x 4 and 0.6 x 4 are both nearest 2, scored once
    t = T(
        [
            {"role": "user", "content": "first ask"},
            {"role": "assistant", "content": "first answer"},
            {"role": "user", "content": "second ask"},
            {"role": "assistant", "content": "second answer"},
        ]
    )
    assert continuation.cut_points(t.messages, (0.4, 0.6, 0.8)) == [(0.4, 2), (0.8, 3)]


def test_baselines_never_exceed_the_budget_when_the_first_ask_alone_does():
    """A first user message larger than the budget (a long pasted issue, a carried-over summary, Codex's
    instructions): head-tail kept it whole and recent kept it as the ask, over the budget (on the corpus: 22 cuts,
    up to 9,505 tokens against compactctl's 2,162), though the baselines are to get compactctl's tokens, never more.
    Only the system messages are always kept."""
    ask = "Please fix the parser in src/app/config.py. " + " ".join(f"detail_{i} of the issue" for i in range(400))
    rows = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": ask}]
    for i in range(6):
        rows += [
            call(f"c{i}", f"pytest -q tests/test_{i}.py"),
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"{i} passed in 0.{i}s"},
            {"role": "assistant", "content": f"Step {i} done."},
        ]
    for system in (True, False):
        t = T(rows if system else rows[1:])
        s = 1 if system else 0
        first = sum(COUNTER.messages(t.messages[: s + 1]))
        budget = first // 2
        assert budget > sum(COUNTER.messages(t.messages[:s])) + 60
        for fn in (baselines.head_tail, baselines.head_tail_fill, baselines.recent, baselines.masking):
            out = fn(t, COUNTER, budget)
            assert sum(COUNTER.messages(out.messages)) <= budget, (fn.__name__, system)
            assert out.messages[:s] == t.messages[:s], fn.__name__  # the system prompt stays
            assert all(m.text() != ask for m in out.messages), fn.__name__
        # the probe eval's head-tail, at compactctl's target (which compactctl too overshoots by its head when it
        # cannot fit), keeps the first message as before
        assert any(m.text() == ask for m in baselines.head_tail(t, COUNTER, budget, strict=False).messages)
    # a head cut through a group of parallel calls: repair gives each call left without its result a stub, which
    # counts (a Claude Code subagent of the corpus: head-tail 622 tokens against compactctl's 591)
    fan = [{"role": "user", "content": "Search for the latest versions of these six packages and report them."}]
    fan.append(
        {
            "role": "assistant",
            "content": "Searching.",
            "tool_calls": [
                {"id": f"w{i}", "type": "function", "function": {"name": "web_search", "arguments": f'{{"query": "pkg_{i} latest"}}'}}
                for i in range(6)
            ],
        }
    )
    fan += [{"role": "tool", "tool_call_id": f"w{i}", "content": f"pkg_{i} " + "result text " * 200} for i in range(6)]
    fan += [{"role": "assistant", "content": "Found them."}]
    t = T(fan)
    for budget in range(200, 1200, 25):
        for fn in (baselines.head_tail, baselines.head_tail_fill):
            out = fn(t, COUNTER, budget)
            assert sum(COUNTER.messages(out.messages)) <= budget, (fn.__name__, budget)
    # end to end: at every cut, no baseline gets more tokens than compactctl's output
    rows = continuation.evaluate([T(rows)], COUNTER, cuts=(0.3, 0.6))["rows"]
    assert rows
    for r in rows:
        ours = r["strategies"]["compactctl"]["tokens_after"]
        assert all(st["tokens_after"] <= ours for st in r["strategies"].values()), r["strategies"]


def _long_session() -> list[dict]:
    """A system message, a short ask, then 40 turns of calls (one in four a pair of parallel calls) with outputs of
    300 to 6,000 characters, and a last word: a prefix far larger than the budgets below."""
    rows = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the flaky test in tests/test_sync.py; keep the public API of sync_core as it is."},
    ]
    for i in range(40):
        ids = [f"c{i}", f"d{i}"] if i % 4 == 0 else [f"c{i}"]
        rows.append(
            {
                "role": "assistant",
                "content": f"Step {i}: looking at module_{i}.",
                "tool_calls": [
                    {"id": c, "type": "function", "function": {"name": "terminal", "arguments": f'{{"command": "cat src/module_{c}.py"}}'}}
                    for c in ids
                ],
            }
        )
        rows += [{"role": "tool", "tool_call_id": c, "content": f"line {c} of output_{i}\n" * (20 + (i * 37) % 330)} for c in ids]
    rows.append({"role": "assistant", "content": "Done: test_sync_retry now waits for sync_core.flush (commit 7c1d9e2)."})
    return rows


def test_head_tail_fill_fills_the_budget_and_keeps_both_ends():
    """head-tail-fill (the first messages for a quarter of the budget, the last for the rest, the group at each boundary
    cut to fit): never over the budget, nearly all of it used when the prefix is far larger (the naive head-tail, whole
    groups and outputs cut to 500 characters, left a third of compactctl's tokens unused on short sessions), valid, and
    it keeps the first messages and the last ones."""
    rows = _long_session()
    t = T(rows)
    total = sum(COUNTER.messages(t.messages))
    naive = fill = 0
    for budget in range(total // 40, total // 3, total // 23):
        out = baselines.head_tail_fill(t, COUNTER, budget)
        used = sum(COUNTER.messages(out.messages))
        assert 0.9 * budget <= used <= budget, (budget, used)
        assert check(out) == [], budget
        assert [m.text() for m in out.messages[:2]] == [r["content"] for r in rows[:2]], budget  # the system message and the ask
        assert out.messages[-1].text() == rows[-1]["content"], budget  # the last word
        assert baselines.head_tail_fill(t, COUNTER, budget).messages == out.messages  # deterministic
        naive += sum(COUNTER.messages(baselines.head_tail(t, COUNTER, budget).messages))
        fill += used
    assert naive < 0.9 * fill
    # one huge output between the ask and the last word: it is cut to all the room they leave, not to a quarter
    one = [*rows[:2], rows[2], *({**r, "content": r["content"] * 40} for r in rows[3:5]), rows[-1]]
    t = T(one)
    for budget in (600, 1500, 4000):
        out = baselines.head_tail_fill(t, COUNTER, budget)
        assert 0.9 * budget <= sum(COUNTER.messages(out.messages)) <= budget and check(out) == [], budget
        assert out.messages[1].text() == one[1]["content"] and out.messages[-1].text() == one[-1]["content"], budget
    # a prefix within the budget is kept whole
    assert baselines.head_tail_fill(t, COUNTER, 10**6).messages == t.messages


def test_head_tail_fill_is_scored_beside_head_tail():
    """Continuation scoring runs head-tail-fill at compactctl's output tokens, and every table `eval` prints shows it
    beside the naive head-tail: the main one, per kind and per source, the words line, per transcript, compacting
    twice; its column explanation says what it is."""
    from compactctl import twice

    [t] = api.read([str(SAMPLES / "long_session.jsonl")])
    res = continuation.evaluate([t], COUNTER, cuts=(0.4, 0.8))
    for r in res["rows"]:
        st = r["strategies"]
        assert st["head-tail-fill"]["valid"] and st["head-tail-fill"]["tokens_after"] <= st["compactctl"]["tokens_after"]
        assert st["head-tail-fill"]["tokens_after"] >= st["head-tail"]["tokens_after"]
    text = continuation.tables(res["aggregate"])
    assert text.count("| head-tail-fill |") == 3 and "head-tail-fill " in text.split("Words the continuation")[1]
    assert "head-tail-fill" in continuation.per_transcript(res["rows"], continuation.STRATEGIES)
    row = twice.score(t, COUNTER)
    assert row is not None and row["tokens"]["head-tail"] <= row["tokens"]["head-tail-fill"] <= row["tokens"]["twice"]
    assert "head-tail-fill (twice's tokens)" in twice.table({"samples": twice.aggregate([row])})
    r = cli("eval", str(SAMPLES / "long_session.jsonl"), "--continuation", "--cuts", "0.5")
    assert r.returncode == 0, r.stderr
    assert "head-tail-fill, the system message(s), the first messages for a quarter" in r.stdout.decode()


def _cells(line: str) -> int:
    return line.strip().count("|") - 1


def test_evaluate_and_tables_render():
    [t] = api.read([str(SAMPLES / "parallel_calls.jsonl")])
    res = continuation.evaluate([t], COUNTER, cuts=(0.5,))
    agg = res["aggregate"]
    assert set(agg) == set(continuation.STRATEGIES)
    a = agg["compactctl"]
    assert a["cuts"] == 1 and a["needed"] > 0 and 0 <= a["kept"] <= 1
    for name, s in agg.items():
        assert s["valid"] == 1, name
        assert s["tokens_after"] <= a["tokens_after"], name  # baselines never get more tokens than compactctl
    assert len(continuation.cut_lines(res["rows"])) == 1
    for table in (
        continuation.tables(agg),
        continuation.per_transcript(res["rows"], continuation.STRATEGIES),
        evaluate.table({"x": evaluate.aggregate([evaluate.score(t, t, COUNTER)])}),
    ):
        lines = [x for x in table.splitlines() if x.startswith("|")]
        assert lines
        blocks: list[list[str]] = []
        for x in table.splitlines():
            if x.startswith("|"):
                if not blocks or not blocks[-1]:
                    blocks.append([])
                blocks[-1].append(x)
            elif blocks and blocks[-1]:
                blocks.append([])
        for b in filter(None, blocks):
            assert set(b[1].strip("|").split("|")) == {"---"}
            assert {_cells(x) for x in b} == {_cells(b[0])}, b[0]
    lost = continuation.explain(res["rows"], 3)
    assert len(lost) == min(3, a["needed"] - a["kept_facts"])


def test_eval_cli_continuation(tmp_path):
    src = SAMPLES / "parallel_calls.jsonl"
    r = cli("eval", str(src), "--continuation", "--cuts", "0.5", "--json")
    assert r.returncode == 0, r.stderr
    d = orjson.loads(r.stdout)
    assert set(d["aggregate"]) == set(continuation.STRATEGIES) and len(d["rows"]) == 1
    r = cli("eval", str(src), "--cuts", "0.5", "--explain", "2", "--strategies", "compactctl,masking")
    out = r.stdout.decode()
    assert r.returncode == 0, r.stderr
    assert out.index("Continuation scoring") < out.index("Probe eval") and "Facts compactctl lost" in out


def test_compacting_twice_scores_once_twice_and_head_tail_at_the_same_facts():
    """twice.py: compacted at 40%, carried on to 80%, compacted again; scored on the facts after 80% as one compaction of
    the same prefix is, with head-tail at the twice-compacted tokens; a transcript with no two cuts gives no row."""
    from compactctl import twice

    [t] = api.read([str(SAMPLES / "long_session.jsonl")])
    row = twice.score(t, COUNTER)
    assert row is not None and row["needed"] == len(needed.needed_facts(t.messages, continuation.cut_points(t.messages, [0.8])[0][1]))
    assert set(row["kept"]) == set(twice.KEPT) and all(0 <= k <= row["needed"] for k in row["kept"].values())
    assert row["valid"] and row["tokens"]["head-tail"] <= row["tokens"]["twice"] < row["tokens_before"]
    assert twice.score(T(ROWS[:2]), COUNTER) is None  # a system message and an ask: nothing to cut twice
    res = twice.evaluate([t, T(ROWS[:2])], COUNTER)
    assert len(res["rows"]) == 1 and res["aggregate"]["needed"] == row["needed"]
    table = twice.table({"samples": res["aggregate"]})
    assert table.count("\n") == 2 and {_cells(x) for x in table.splitlines()} == {_cells(table.splitlines()[0])}


def test_eval_cli_twice():
    """`compactctl eval --twice`: compacted at the first of --cuts, carried on to the last and compacted again, a table
    after continuation scoring (and in --json under "twice"); not with --probes, which has no cuts."""
    src = SAMPLES / "long_session.jsonl"
    r = cli("eval", str(src), "--continuation", "--twice", "--cuts", "0.4,0.6,0.8", "--json")
    assert r.returncode == 0, r.stderr
    d = orjson.loads(r.stdout)
    assert set(d) == {"continuation", "twice"} and len(d["twice"]["rows"]) == 1
    assert d["twice"]["aggregate"]["needed"] == d["twice"]["rows"][0]["needed"] > 0
    r = cli("eval", str(src), "--continuation", "--twice")
    assert r.returncode == 0 and "## Compacting twice (at 40%, carried on to 80%" in r.stdout.decode()
    assert cli("eval", str(src), "--probes", "--twice").returncode == 2


def _fact(kind: str, key: str, source: str, rediscovered: bool = False, where=((1, "user", "written"),)) -> dict:
    return {
        "kind": kind,
        "key": key,
        "source": source,
        "where": [list(w) for w in where],
        "used_at": 7,
        "rediscovered": rediscovered,
        "seen": "",
        "used": "",
    }


def _rows() -> list[dict]:
    """Two hand-made cuts: five facts then two; strategy "ours" keeps 3 then 2 (with a recovery arm), "base" 1 then 0,
    and is left out of the second cut's third strategy "only"."""
    f1 = [
        _fact("path", "app/x.py", "written"),
        _fact("identifier", "load_cfg", "output", rediscovered=True),
        _fact("value", "8080", "output"),
        _fact("command", "make test", "written"),
        _fact("identifier", "DEFAULT_MS", "injected"),
    ]
    f2 = [_fact("url", "https://example.com/a", "written", rediscovered=True), _fact("path", "lib/y.ts", "output")]
    st = {"valid": True, "cannot_fit": False, "error": None}
    return [
        {
            "transcript": "dir/a.jsonl",
            "cut": 0.4,
            "cut_index": 6,
            "messages": 15,
            "tokens_before": 1000,
            "window": 400,
            "target": 200,
            "facts": f1,
            "words": 10,
            "strategies": {
                "ours": {
                    **st,
                    "tokens_after": 200,
                    "kept": [True, True, False, True, False],
                    "in_context": [True, False, False, True, False],
                    "words_kept": 6,
                    "recovered": [False, False, True, False, False],
                },
                "base": {
                    **st,
                    "tokens_after": 190,
                    "valid": False,
                    "kept": [False, True, False, False, False],
                    "in_context": [False, True, False, False, False],
                    "words_kept": 3,
                },
            },
        },
        {
            "transcript": "dir/b.jsonl",
            "cut": 0.8,
            "cut_index": 9,
            "messages": 11,
            "tokens_before": 600,
            "window": 240,
            "target": 120,
            "facts": f2,
            "words": 4,
            "strategies": {
                "ours": {
                    **st,
                    "tokens_after": 150,
                    "cannot_fit": True,
                    "error": "cannot fit",
                    "kept": [True, True],
                    "in_context": [True, True],
                    "words_kept": 4,
                    "recovered": [False, False],
                },
                "base": {**st, "tokens_after": 100, "kept": [False, False], "in_context": [False, False], "words_kept": 1},
                "only": {**st, "tokens_after": 50, "kept": [True, False], "in_context": [False, False], "words_kept": 2},
            },
        },
    ]


def test_aggregate_pools_the_cuts_by_kind_source_and_rediscovery():
    """Every figure of `aggregate` on two hand-made cuts: facts pooled over cuts, per kind and per source, the facts
    not re-discovered, tokens, the cuts at or under target, valid and cannot-fit counts, words, the recovery arm; a
    strategy a cut does not score is left out of that cut's sums."""
    agg = continuation.aggregate(_rows(), ["ours", "base", "only"])
    ours, base, only = agg["ours"], agg["base"], agg["only"]
    assert (ours["cuts"], ours["needed"], ours["kept_facts"], ours["kept"]) == (2, 7, 5, 5 / 7)
    assert ours["in_context"] == 4 / 7 and base["in_context"] == 1 / 7
    assert (ours["rediscovered"], ours["not_rediscovered"], ours["kept_not_rediscovered"]) == (2, 5, 3 / 5)
    assert (base["kept_facts"], base["kept_not_rediscovered"]) == (1, 0.0)
    assert (ours["tokens_before"], ours["tokens_after"], ours["reduction"]) == (1600, 350, 1 - 350 / 1600)
    assert (ours["valid"], ours["cannot_fit"], ours["within_target"]) == (2, 1, 1)  # 150 > 120 at the second cut
    assert (base["valid"], base["cannot_fit"], base["within_target"]) == (1, 0, 2)
    assert (ours["recovered"], ours["with_recovery"], base["recovered"], base["with_recovery"]) == (1, 6 / 7, 0, 1 / 7)
    assert ours["words"] == {"kept": 10, "needed": 14, "share": 10 / 14}
    assert ours["kinds"] == {
        "path": {"kept": 2, "needed": 2, "share": 1.0},
        "identifier": {"kept": 1, "needed": 2, "share": 0.5},
        "command": {"kept": 1, "needed": 1, "share": 1.0},
        "url": {"kept": 1, "needed": 1, "share": 1.0},
        "value": {"kept": 0, "needed": 1, "share": 0.0},
    }
    assert ours["sources"] == {
        "written": {"kept": 3, "needed": 3, "share": 1.0},
        "output": {"kept": 2, "needed": 3, "share": 2 / 3},
        "injected": {"kept": 0, "needed": 1, "share": 0.0},
    }
    assert (only["cuts"], only["needed"], only["kept"], only["tokens_before"], only["reduction"]) == (1, 2, 0.5, 600, 1 - 50 / 600)
    assert only["kinds"]["value"] == {"kept": 0, "needed": 0, "share": None}  # no such fact: no share, not 0%
    # rows of an older eval (no words, target, in_context or recovered): those figures are empty, not made up
    old = _rows()
    for r in old:
        del r["words"], r["target"]
        for st in r["strategies"].values():
            del st["words_kept"], st["in_context"]
            st.pop("recovered", None)
    a = continuation.aggregate(old, ["ours"])["ours"]
    assert a["words"] == {"kept": 0, "needed": 0, "share": None} and (a["in_context"], a["recovered"]) == (0.0, 0)
    assert a["within_target"] == 2 and a["kept"] == 5 / 7
    bad = _rows()
    bad[1]["strategies"]["ours"]["kept"].pop()  # a row whose flags do not answer its facts: refused, not pooled short
    try:
        continuation.aggregate(bad, ["ours"])
    except ValueError:
        pass
    else:
        raise AssertionError("a row with fewer flags than facts must raise")
    empty = continuation.aggregate([], ["ours"])["ours"]
    assert (empty["kept"], empty["reduction"], empty["needed"]) == (None, 0.0, 0)


def test_tables_print_the_pooled_figures_per_kind_and_per_source():
    """The tables `eval` prints, cell by cell, from the aggregate above."""
    agg = continuation.aggregate(_rows(), ["ours", "base"])
    agg["compactctl"] = agg.pop("ours")  # the recovery line is compactctl's
    text = continuation.tables(agg)
    lines = text.splitlines()
    assert "| compactctl | 2 | 7 | 71.4% | 57.1% | 60.0% | 1,600 | 350 | 78.1% | 1/2 | 2/2 | 1 |" in lines
    assert "| base | 2 | 7 | 14.3% | 14.3% | 0.0% | 1,600 | 290 | 81.9% | 2/2 | 1/2 | 0 |" in lines
    assert "| strategy | path (2) | identifier (2) | command (1) | url (1) | value (1) |" in lines
    assert "| compactctl | 100.0% | 50.0% | 100.0% | 100.0% | 0.0% |" in lines
    assert "| base | 0.0% | 50.0% | 0.0% | 0.0% | 0.0% |" in lines
    assert "| strategy | written by person/agent (3) | only in tool outputs (3) | only in harness text (1) |" in lines
    assert "| compactctl | 100.0% | 66.7% | 0.0% |" in lines
    assert "| base | 0.0% | 33.3% | 0.0% |" in lines
    assert "compactctl did not keep, 1 come back with one" in text and "kept or recoverable 85.7%." in text
    assert "Words the continuation writes again (14; no fact kinds, compactctl/lexical.py): base 28.6%, compactctl 71.4%." in text
    assert "7 needed facts in 2 cuts; 2 (28.6%) are re-discovered" in text
    assert "Recovery arm" not in continuation.tables(continuation.aggregate(_rows(), ["base"]))
    assert continuation.tables({}) == "(no cut)"


def test_cut_lines_and_per_transcript():
    rows = _rows()
    assert continuation.cut_lines(rows) == [
        "dir/a.jsonl cut 40% (#6 of 15, 1,000 tok): 5 needed; ours 60.0% (200 tok); base 20.0% (190 tok, INVALID)",
        "dir/b.jsonl cut 80% (#9 of 11, 600 tok): 2 needed; ours 100.0% (150 tok, cannot fit); base 0.0% (100 tok); only 50.0% (50 tok)",
    ]
    for r in rows:
        r["strategies"]["compactctl"] = r["strategies"].pop("ours")
    table = continuation.per_transcript(rows, ["compactctl", "base"]).splitlines()
    assert table[2:] == ["| a.jsonl | 1 | 5 | 60.0% | 20.0% | 0 |", "| b.jsonl | 1 | 2 | 100.0% | 0.0% | 1 |"]
    assert continuation.per_transcript(rows, ["base"]).splitlines()[2] == "| a.jsonl | 1 | 5 | 20.0% | 0 |"


def test_cut_points_take_the_nearest_turn_start_after_the_first_ask():
    """A cut is a user or assistant message that starts a group, after the first message past the system ones (a
    prefix must hold something to compact); the nearest to f x messages, the earlier of two as near; never a tool
    result (5 here, the middle of a call's group)."""
    rows = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u1"},
        {"role": "assistant", "content": "a2"},
        {"role": "user", "content": "u3"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "x", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "ls"}'}}],
        },
        {"role": "tool", "tool_call_id": "x", "content": "out"},
        {"role": "assistant", "content": "a6"},
        {"role": "user", "content": "u7"},
        {"role": "assistant", "content": "a8"},
        {"role": "user", "content": "u9"},
    ]
    msgs = T(rows).messages
    assert continuation.cut_points(msgs, (0.0,)) == [(0.0, 2)]
    assert continuation.cut_points(msgs, (0.5,)) == [(0.5, 4)]  # 4 and 6 are as near 5: the earlier
    assert continuation.cut_points(msgs, (0.55, 1.0)) == [(0.55, 6), (1.0, 9)]
    assert continuation.cut_points(msgs, (0.1, 0.2, 0.3)) == [(0.1, 2), (0.3, 3)]  # 0.2 is nearest 2 too: one cut
    assert continuation.cut_points(msgs[:2], (0.4, 0.8)) == []


def test_run_compactctl_scores_what_cannot_fit_as_its_fallback():
    """A prefix that cannot fit its window (an ask of 2,000 tokens against a target of 500) is scored as the pruned,
    repaired fallback compact had, with the error, and what that fallback archived is given back when asked for; run
    as a library call without `archived` it does the same. One that fits is compacted, with no error."""
    rows = _long_session()
    rows[1] = {"role": "user", "content": "Fix it. " + " ".join(f"detail_{i} of the issue" for i in range(400))}
    t = T(rows)
    total = sum(COUNTER.messages(t.messages))
    out, err = continuation.run_compactctl(t, COUNTER, 1000)
    assert err and "cannot fit" in err and check(out) == []
    assert out.messages[1].text() == rows[1]["content"] and sum(COUNTER.messages(out.messages)) < total // 5  # pruned
    archived: list = []
    out2, err2 = continuation.run_compactctl(t, COUNTER, 1000, archived=archived)
    assert err2 == err and out2.messages == out.messages and archived  # the outputs pruning removed
    # a window under one token (a small --window-ratio of a short prefix) is a window of 1: cannot fit, not a usage error
    tiny, why = continuation.run_compactctl(T(ROWS), COUNTER, 0)
    assert why and "cannot fit the target of 0 tokens" in why and tiny.messages == T(ROWS).messages
    archived = []
    fits, none = continuation.run_compactctl(t, COUNTER, total // 2, archived=archived)
    assert none is None and archived and sum(COUNTER.messages(fits.messages)) <= total // 4


def test_evaluate_reports_progress_per_cut_and_refuses_an_unknown_strategy():
    said: list[str] = []
    res = continuation.evaluate([T(ROWS)], COUNTER, strategies=("head-tail",), cuts=(0.3, 0.7), progress=said.append)
    assert len({len(r["facts"]) for r in res["rows"]}) == 2  # each line its own cut's count
    assert said == [f"t cut {r['cut']:.0%} (message {r['cut_index']} of 9): {len(r['facts'])} needed facts" for r in res["rows"]]
    assert res["settings"] == {"cuts": [0.3, 0.7], "window_ratio": 0.4, "strategies": ["head-tail"]}
    try:
        continuation.evaluate([T(ROWS)], COUNTER, strategies=("head-tail", "tail"))
    except ValueError as e:
        assert "unknown strategy 'tail'" in str(e)
    else:
        raise AssertionError("an unknown strategy must raise")


def test_explain_takes_lost_facts_from_each_cut_in_turn():
    """`explain` lists the facts a strategy lost a cut at a time (the first of each cut, then the second...), at most
    n, with up to three places each sat in the prefix and how the `versus` strategy did on it."""
    rows = _rows()
    rows[0]["facts"][0]["where"] = [[1, "user", "written"], [2, "assistant", "written"], [3, "tool", "output"], [4, "user", "written"]]
    lost = continuation.explain(rows, 3, "base", versus="ours")
    assert [line.split(": ", 1)[1].split(" [")[0] for line in lost] == ["path 'app/x.py'", "url 'https://example.com/a'", "value '8080'"]
    assert "in #1 user (written), #2 assistant (written), #3 tool (output): ''" in lost[0]
    assert lost[0].endswith("; ours: in context") and lost[2].endswith("; ours: lost")
    assert "used at #7 (re-discovered first): " in lost[1]
    assert len(continuation.explain(rows, 10, "base")) == 6 and continuation.explain(rows, 0, "base") == []
    assert continuation.explain(rows, 10, "ours") == [
        "dir/a.jsonl cut 40% (#6): value '8080' [output] in #1 user (written): ''; used at #7: ''",
        "dir/a.jsonl cut 40% (#6): identifier 'DEFAULT_MS' [injected] in #1 user (written): ''; used at #7: ''",
    ]
    rows[1]["strategies"]["base"]["in_context"].pop()  # flags that do not answer the facts: refused
    try:
        continuation.explain(rows, 10, "base", what="context")
    except ValueError:
        pass
    else:
        raise AssertionError("in_context flags fewer than the kept ones must raise")


def test_md_table_refuses_a_row_of_another_width():
    assert continuation.md_table(["a", "b"], [["1", "2"]]) == "| a | b |\n|---|---|\n| 1 | 2 |"
    try:
        continuation.md_table(["a", "b"], [["1", "2"], ["3"]])
    except ValueError as e:
        assert str(e) == "row has 1 cells, header 2"
    else:
        raise AssertionError("a row of another width must raise")


def test_the_recovery_arm_matches_a_lost_fact_as_kept_does(tmp_path):
    # an archived original that holds only `Config_Loader.py` or `CONFIG_LOADER` does not bring back `config_loader`
    from compactctl.continuation import recovered
    from compactctl.model import Message, Transcript
    from compactctl.needed import Fact
    from compactctl.phases import Archived

    def arch(text: str) -> Archived:
        return Archived("s", 1, "prune", Message("tool", text, tool_call_id="c1"))

    facts = [Fact("identifier", "config_loader", "output"), Fact("path", "src/app.py", "output")]
    prefix = Transcript([Message("user", "go")], id="s")
    assert recovered(prefix, facts, [False, False], [arch("wrote Config_Loader.py and CONFIG_LOADER=1; src/app.py")]) == [False, True]
    assert recovered(prefix, facts, [False, False], [arch("config_loader() failed; see src/app.py:12")]) == [True, True]
