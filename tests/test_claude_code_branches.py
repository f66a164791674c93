"""A Claude Code session is a tree (uuid/parentUuid): a rewind or a retry leaves the abandoned branch in the file,
old versions wrote subagent turns (isSidechain) into it, and parallel tool calls give a line two live children.
The conversation is the chain from the leaf, with the parallel siblings and their results; the rest is off it."""

from __future__ import annotations

import itertools

import orjson
import pytest

from compactctl import api
from compactctl.formats.linelog import LineLog
from compactctl.phases.repair import STUB

from .conftest import CORPUS, SAMPLES, cli, needs_corpus, read_jsonl, write_jsonl

TIGHT = ["--context-window", "4000", "--tail-tokens", "400", "--summary-min", "400", "--summary-max", "800"]
_clock = itertools.count()


def _line(kind: str, uuid: str, parent: str | None, message: dict, **extra) -> dict:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/repo",
        "sessionId": "s1",
        "version": "2.0.0",
        "type": kind,
        "message": message,
        "uuid": uuid,
        "timestamp": f"2026-01-01T00:{next(_clock) % 60:02d}:00.000Z",
        **extra,
    }


def user(uuid, parent, text, **extra):
    return _line("user", uuid, parent, {"role": "user", "content": text}, **extra)


def said(uuid, parent, text, mid, **extra):
    return _line("assistant", uuid, parent, {"id": mid, "role": "assistant", "content": [{"type": "text", "text": text}]}, **extra)


def call(uuid, parent, tool_id, command, mid, **extra):
    block = {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}
    return _line("assistant", uuid, parent, {"id": mid, "role": "assistant", "content": [block]}, **extra)


def result(uuid, parent, tool_id, output, **extra):
    block = {"type": "tool_result", "tool_use_id": tool_id, "content": output}
    return _line("user", uuid, parent, {"role": "user", "content": [block]}, toolUseResult={"stdout": output}, **extra)


def progress(uuid, parent):
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": "s1",
        "type": "progress",
        "uuid": uuid,
        "data": {"type": "hook_progress"},
    }


def flow(t) -> list[str]:
    """What the model sees: role and text or calls of each message."""
    out = []
    for m in t.messages:
        calls = ",".join(c.id for c in m.tool_calls)
        out.append(f"{m.role}:{m.text()}" + (f" [{calls}]" if calls else "") + (f" ->{m.tool_call_id}" if m.tool_call_id else ""))
    return out


def resumable(objs: list[dict]) -> list[dict]:
    """Every parentUuid points at a line written before it; the chain Claude Code follows from the last line."""
    seen: set[str] = set()
    for o in objs:
        if o.get("parentUuid") is not None:
            assert o["parentUuid"] in seen, f"{o.get('uuid')}: parentUuid points at a line not written before it"
        if o.get("uuid"):
            seen.add(o["uuid"])
    by = {o["uuid"]: o for o in objs if o.get("uuid")}
    cur: dict | None = [o for o in objs if o.get("type") in ("user", "assistant")][-1]
    chain = []
    while cur is not None:
        chain.append(cur)
        cur = by.get(cur.get("parentUuid"))
    return chain[::-1]


def rewound() -> list[dict]:
    """A prompt edited after its turn ran a command (Esc Esc): the old prompt and its turn stay in the file."""
    return [
        {"type": "file-history-snapshot", "messageId": "u1", "snapshot": {}},
        user("u1", None, "Add a --json flag to the CLI."),
        said("a1", "u1", "Which command?", "m1"),
        user("u2", "a1", "Use the old parser and rewrite main.py."),
        call("a2", "u2", "t_old", "rm -rf build", "m2"),
        progress("p1", "a2"),
        result("r_old", "a2", "t_old", "removed build/"),
        said("a3", "r_old", "Rewrote main.py with the old parser.", "m3"),
        user("u2b", "a1", "The `report` command, keep the new parser."),  # the edited prompt: same parent as u2
        said("a4", "u2b", "Added --json to report.", "m4"),
    ]


def test_a_rewind_drops_the_abandoned_branch(tmp_path):
    src = write_jsonl(tmp_path / "s.jsonl", rewound())
    with pytest.warns(UserWarning, match="off the conversation's path"):  # said, not read
        [t] = api.read([str(src)])
    assert flow(t) == [
        "user:Add a --json flag to the CLI.",
        "assistant:Which command?",
        "user:The `report` command, keep the new parser.",
        "assistant:Added --json to report.",
    ]
    assert isinstance(t.native, LineLog) and sorted(t.native.off_path) == [3, 4, 5, 6, 7]  # u2, a2, its progress, r_old, a3
    assert api.write(t) == src.read_bytes()  # nothing changed: the file as it was (Claude Code resumes it alike)
    r = cli("convert", str(src), "--to", "openai")
    assert r.returncode == 0, r.stderr
    assert b"old parser" not in r.stdout and b"t_old" not in r.stdout
    assert b"abandoned branches" in r.stderr  # said, not silent


def test_parallel_tool_calls_and_their_results_are_all_kept(tmp_path):
    """One API message over three lines (thinking, two tool_use): each result's parent is its own call's line, so
    the second call and its result are off the single-parent chain; a retried answer is abandoned."""
    rows = [
        user("u1", None, "Run the linters."),
        said("a1", "u1", "Running both.", "m1"),
        call("a2", "a1", "tA", "ruff check", "m1"),
        call("a3", "a2", "tB", "mypy", "m1"),
        progress("p1", "a3"),
        result("rB", "a3", "tB", "Success: no issues"),
        result("rA", "a2", "tA", "All checks passed!"),
        said("a4", "rA", "Both failed?", "m2"),  # a retry after an API error: same parent as a5
        said("a5", "rA", "Both linters pass.", "m3"),
    ]
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    with pytest.warns(UserWarning, match="off the conversation's path"):  # said, not read
        [t] = api.read([str(src)])
    assert flow(t) == [
        "user:Run the linters.",
        "assistant:Running both. [tA,tB]",
        "tool:Success: no issues ->tB",
        "tool:All checks passed! ->tA",
        "assistant:Both linters pass.",
    ]
    assert sorted(t.native.off_path) == [7]
    assert cli("repair", "--check", str(src)).returncode == 0
    out = cli("repair", str(src))  # valid as it is (both APIs pair parallel results by id): the file as it was
    assert out.returncode == 0 and out.stdout == src.read_bytes(), out.stderr
    last = t.messages[-1]
    changed = t.evolve(messages=[*t.messages[:-1], last.evolve(content=[{"type": "text", "text": "Both pass, checked."}])])
    objs = read_jsonl(api.write(changed))
    assert [o["uuid"] for o in objs] == [o["uuid"] for o in rows if o["uuid"] != "a4"]  # the retried answer is left out
    assert [o["uuid"] for o in resumable(objs)] == ["u1", "a1", "a2", "rA", "a5"]  # Claude Code puts a3 and rB back


def test_a_parallel_result_under_a_progress_line_of_its_call_is_kept(tmp_path):
    """A tool's result whose parent is a progress line of its call (not the call's own line) is that call's result:
    found through the progress line, it stays in the conversation (it was read as a branch off the path)."""
    rows = [
        user("u1", None, "Run both."),
        call("a1", "u1", "tA", "ruff check", "m1"),
        progress("p1", "a1"),
        call("a2", "p1", "tB", "mypy", "m1"),
        result("rA", "p1", "tA", "LIVE-RESULT-1"),
        result("rB", "a2", "tB", "Success: no issues"),
        said("a3", "rB", "Both pass.", "m2"),
    ]
    [t] = api.read([str(write_jsonl(tmp_path / "s.jsonl", rows))])
    assert "tool:LIVE-RESULT-1 ->tA" in flow(t) and not t.native.off_path


def test_sidechain_lines_in_the_main_file_are_not_the_conversation(tmp_path):
    """Old versions wrote a Task subagent's turns into the session file (isSidechain: true); its own file holds
    only such lines, and is read whole."""
    side = {"isSidechain": True}
    rows = [
        user("u1", None, "Find where the config is loaded."),
        call("a1", "u1", "t1", "Task: search the code", "m1"),
        user("s1", None, "Search the code for config loading.", **side),
        call("s2", "s1", "g1", "grep -rn load_config", "sm1", **side),
        result("s3", "s2", "g1", "app/config.py:12", **side),
        said("s4", "s3", "It is in app/config.py.", "sm2", **side),
        result("r1", "a1", "t1", "It is in app/config.py."),
        said("a2", "r1", "app/config.py loads it.", "m2"),
    ]
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    with pytest.warns(UserWarning, match="off the conversation's path"):  # said, not read
        [t] = api.read([str(src)])
    assert flow(t) == [
        "user:Find where the config is loaded.",
        "assistant: [t1]",
        "tool:It is in app/config.py. ->t1",
        "assistant:app/config.py loads it.",
    ]
    assert api.check(t) == []
    sub = write_jsonl(tmp_path / "agent-x.jsonl", rows[2:6])
    [s] = api.read([str(sub)])
    assert len(s.messages) == 4 and not s.native.off_path


def test_an_abandoned_tool_use_without_a_result_leaves_nothing_dangling(tmp_path):
    """The person rewound while a command was waiting for approval: the call has no result, and is not part of
    the conversation; repair has nothing to stub, and a compacted file does not bring the call back."""
    rows = [
        user("u1", None, "Tidy the migrations."),
        said("a1", "u1", "Sure.", "m1"),
        user("u2", "a1", "Squash them all."),
        call("a2", "u2", "t_drop", "dropdb prod", "m2"),
        user("u2b", "a1", "Only list them, change nothing."),
        call("a3", "u2b", "t_ls", "ls migrations", "m3"),
        result("r3", "a3", "t_ls", "0001_init.py\n0002_users.py"),
        said("a4", "r3", "Two migrations.", "m4"),
    ]
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    assert cli("repair", "--check", str(src)).returncode == 0
    fixed = tmp_path / "fixed.jsonl"
    r = cli("repair", str(src), "-o", str(fixed))
    assert r.returncode == 0, r.stderr
    with pytest.warns(UserWarning, match="off the conversation's path"):  # said, not read
        [t] = api.read([str(fixed)])
    assert api.check(t) == [] and STUB not in fixed.read_text()
    assert "t_drop" not in {c.id for m in t.messages for c in m.tool_calls} | {m.tool_call_id for m in t.messages}
    long = write_jsonl(
        tmp_path / "long.jsonl",
        _long([said("x1", "fork", "Dropping the test database.", "mx1"), call("x2", "x1", "t_drop", "dropdb test", "mx2")]),
    )
    compacted = cli("compact", str(long), *TIGHT)
    assert compacted.returncode == 0, compacted.stderr
    assert b"t_drop" not in compacted.stdout and STUB.encode() not in compacted.stdout
    resumable(read_jsonl(compacted.stdout))
    out = tmp_path / "c.jsonl"
    out.write_bytes(compacted.stdout)
    assert cli("repair", "--check", str(out)).returncode == 0


def test_the_leaf_can_be_a_tool_result(tmp_path):
    """The session ended while the second of two parallel calls was finishing: the last line is a result whose
    parent is the first call's line; the other call and its result (written before it) are kept."""
    rows = [
        user("u1", None, "What changed?"),
        said("a1", "u1", "Let me look.", "m1"),
        user("u2", "a1", "Never mind that, show the log."),  # rewound
        said("a2", "u2", "Here is the log.", "m2"),
        user("u3", "a1", "Show the diff and the status."),
        call("a3", "u3", "t1", "git diff", "m3"),
        call("a4", "a3", "t2", "git status", "m3"),
        result("r2", "a4", "t2", "clean"),
        result("r1", "a3", "t1", "diff --git a/x b/x"),
    ]
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    with pytest.warns(UserWarning, match="off the conversation's path"):  # said, not read
        [t] = api.read([str(src)])
    assert flow(t) == [
        "user:What changed?",
        "assistant:Let me look.",
        "user:Show the diff and the status.",
        "assistant: [t1,t2]",
        "tool:clean ->t2",
        "tool:diff --git a/x b/x ->t1",
    ]
    assert sorted(t.native.off_path) == [2, 3]


def _long(abandoned: list[dict], fork: str = "fork") -> list[dict]:
    """A session long enough to be summarized, with `abandoned` forking off it after the 30 turns (a retried
    answer: its first try's lines have the parent "fork")."""
    rows = [user("u0", None, "Speed up the test suite. Never touch the fixtures.")]
    parent = "u0"
    for k in range(30):
        out = "\n".join(f"tests/test_{k}.py::case_{i} {(i * 37 + k) % 97}.{i % 10}s slowest in module_{i % 7}" for i in range(40))
        rows += [
            call(f"c{k}", parent, f"t{k}", f"pytest tests/test_{k}.py --durations=5", f"mc{k}"),
            result(f"r{k}", f"c{k}", f"t{k}", out),
        ]
        parent = f"r{k}"
    rows += [{**o, "parentUuid": parent if o["parentUuid"] == fork else o["parentUuid"]} for o in abandoned]
    rows += [
        said("y1", parent, "The slowest tests share a database; caching it per session saves 40 s.", "my1"),
        user("y2", "y1", "Do that."),
    ]
    return rows


def _long_rewound() -> list[dict]:
    return _long(
        [
            said("x1", "fork", "I will rewrite the fixtures to be faster.", "mx1"),
            call("x2", "x1", "tx", "sed -i s/scope=function/scope=session/ tests/conftest.py", "mx2"),
            result("x3", "x2", "tx", "edited"),
        ]
    )


def test_a_compacted_rewound_session_resumes_without_the_branch_and_restores_whole(tmp_path):
    src = write_jsonl(tmp_path / "s.jsonl", _long_rewound())
    out, arch, rep = tmp_path / "c.jsonl", tmp_path / "a.jsonl", tmp_path / "r.jsonl"
    r = cli("compact", str(src), *TIGHT, "-o", str(out), "--archive", str(arch), "--report", str(rep))
    assert r.returncode == 0, r.stderr
    objs = read_jsonl(out.read_bytes())
    assert not {"x1", "x2", "x3"} & {o.get("uuid") for o in objs} and b"scope=session" not in out.read_bytes()
    chain = resumable(objs)
    assert chain[0].get("subtype") == "compact_boundary" and chain[-1]["uuid"] == "y2"
    assert any(o.get("isCompactSummary") for o in chain)
    assert all(o.get("isSidechain") is False for o in objs if "isSidechain" in o)  # new lines take the path's envelope
    [report] = read_jsonl(rep.read_bytes())
    assert report["status"] == "compacted" and report["records_dropped"] >= 3
    back = tmp_path / "back.jsonl"
    api.restore_file(str(out), str(arch), str(back))
    assert back.read_bytes() == src.read_bytes()


@pytest.mark.parametrize("name", ["claude_code_session.jsonl"])
def test_a_branch_free_session_reads_and_writes_as_before(name, tmp_path):
    """Every user/assistant line is on the path: the transcript is the linear reading, the bytes unchanged."""
    src = SAMPLES / name
    [t] = api.read([str(src)])
    assert not t.native.off_path
    objs = [orjson.loads(raw) for raw, _ in t.native.lines]
    read_lines = sorted({j for ls in t.native.msg_lines for j in ls})
    assert read_lines == [j for j, o in enumerate(objs) if j >= t.native.context_start and o.get("type") in ("user", "assistant")]
    assert api.write(t) == src.read_bytes()
    r = cli("compact", str(src), *TIGHT, "-q")
    assert r.returncode == 0 and r.stderr == b"", r.stderr  # no note about lines off the path
    resumable(read_jsonl(r.stdout))


@needs_corpus
def test_no_corpus_session_has_an_abandoned_branch():
    """The real sessions' forks are all parallel tool calls and progress/system side lines (31 of them have two
    message children, each a result and the next call of one API message): nothing is off the path."""
    files = sorted((CORPUS / "claude-code").rglob("*.jsonl"))
    assert files
    for f in files:
        for t in api.read([str(f)]):
            assert not t.native.off_path, f
            assert api.write(t) == f.read_bytes(), f


def _results(uuid, parent, *pairs):
    blocks = [{"type": "tool_result", "tool_use_id": tid, "content": out} for tid, out in pairs]
    return _line("user", uuid, parent, {"role": "user", "content": blocks})


def _calls(uuid, parent, mid, *tool_ids):
    blocks = [{"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": "ls"}} for tid in tool_ids]
    return _line("assistant", uuid, parent, {"id": mid, "role": "assistant", "content": blocks})


@pytest.mark.parametrize(
    "case",
    [
        # an orphan result beside a real one in one line: the line was written back as it was, the orphan with it
        [user("u1", None, "list"), _calls("u2", "u1", "m1", "t1"), _results("u3", "u2", ("t1", "a.py"), ("nobody", "stray"))],
        # one line holding the results of two calls made in two messages: repair puts each after its call, the line
        # was written once, before the second call
        [
            user("u1", None, "go"),
            _calls("u2", "u1", "m1", "t1"),
            _calls("u3", "u2", "m2", "t2"),
            _results("u4", "u3", ("t1", "a.py"), ("t2", "root")),
            said("u5", "u4", "done", "m3"),
        ],
        # two calls without a result before a later call: the stubs were chained, the later call's line still
        # pointed past them, so Claude Code resumed without them
        [
            user("u1", None, "go"),
            _calls("u2", "u1", "m1", "t1", "t3"),
            _calls("u3", "u2", "m2", "t2"),
            _results("u4", "u3", ("t2", "root")),
        ],
        # from a second review: one API message over several lines with its first call's result between them (as
        # two long corpus sessions have it), its blank text block dropped by repair: the rebuilt line went after the result
        [
            user("u1", None, "go"),
            _line("assistant", "a0", "u1", {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "\n\n"}]}),
            said("a2", "a0", "Checking.", "m1"),
            call("a3", "a2", "tA", "ls", "m1"),
            progress("p1", "a3"),
            result("rA", "p1", "tA", "outA"),
            call("a4", "rA", "tB", "pwd", "m1"),
            result("rB", "a4", "tB", "outB"),
            said("a5", "rB", "Done.", "m2"),
        ],
        # two user lines between a call and its result: the second went back before the result
        [
            user("u1", None, "go"),
            _calls("a1", "u1", "m1", "tA"),
            user("u2", "a1", "wait"),
            user("u3", "u2", "more"),
            _results("r", "u3", ("tA", "outA")),
            said("a3", "r", "Done.", "m3"),
        ],
        # two calls' results in reverse order on their own lines: the second call was moved, its result stayed before it
        [
            user("u1", None, "go"),
            _calls("a1", "u1", "m1", "tA"),
            _calls("a2", "a1", "m2", "tB"),
            _results("r1", "a2", ("tB", "outB")),
            _results("r2", "r1", ("tA", "outA")),
            said("a3", "r2", "Done.", "m3"),
        ],
        # from mutation testing: a prompt typed while two calls ran, their results then logged in reverse order: the
        # prompt goes after both results, not after the first one placed
        [
            user("u1", None, "go"),
            _calls("a1", "u1", "m1", "tA", "tB"),
            user("u2", "a1", "wait"),
            _results("r1", "u2", ("tB", "outB")),
            _results("r2", "r1", ("tA", "outA")),
            said("a3", "r2", "Done.", "m3"),
        ],
    ],
    ids=[
        "orphan-beside-a-result",
        "one-line-two-calls",
        "stubs-on-the-path",
        "a-message-over-lines",
        "asks-between",
        "results-reversed",
        "asks-between-results-reversed",
    ],
)
def test_a_repaired_session_is_valid_on_the_path_claude_code_resumes(tmp_path, case):
    """From an adversarial review: the native output of `repair` failed its own --check, or held the fix off the path."""
    src = write_jsonl(tmp_path / "s.jsonl", case)
    out = cli("repair", str(src), "-q")
    assert out.returncode == 0, out.stderr
    objs = read_jsonl(out.stdout)
    on_path = {o["uuid"] for o in resumable(objs)}
    assert all(o["uuid"] in on_path for o in objs if o.get("type") in ("user", "assistant"))  # every message line on the path
    (tmp_path / "o.jsonl").write_bytes(out.stdout)
    check = cli("repair", "--check", str(tmp_path / "o.jsonl"))
    assert check.returncode == 0 and b"off the conversation" not in check.stderr, check.stdout + check.stderr
    assert cli("repair", str(tmp_path / "o.jsonl"), "-q").stdout == out.stdout  # repaired once and for all


def test_the_summary_takes_the_project_root_from_the_cwd_claude_code_records(tmp_path):
    """Claude Code records the session's working directory on every line; the summary's project root came only from
    the paths' common directory, so a session that worked mostly in lib/ had "project root: /home/u/app/lib" and
    said "spotter_web/live/x.ex" where the agent's commands say "lib/spotter_web/live/x.ex"."""
    from compactctl.phases.plan import Budget
    from compactctl.pipeline import CompactOptions, compact
    from compactctl.summarizers.base import OfflineSummarizer
    from compactctl.tokens import make_counter

    files = ["lib/a.ex", "lib/b.ex", "lib/c.ex", "assets/app.js"]
    objs, parent = [user("u0", None, "Tidy the modules.", cwd="/home/u/app")], "u0"
    for k, f in enumerate(files):
        block = {"type": "tool_use", "id": f"r{k}", "name": "Read", "input": {"file_path": f"/home/u/app/{f}"}}
        objs.append(_line("assistant", f"c{k}", parent, {"id": f"m{k}", "role": "assistant", "content": [block]}, cwd="/home/u/app"))
        code = "\n".join(f"  def f{k}_{i}(x), do: x + {i * 7}" for i in range(150))
        objs.append(result(f"o{k}", f"c{k}", f"r{k}", code, cwd="/home/u/app"))
        parent = f"o{k}"
    objs.append(said("a9", parent, "Read them all.", "m9", cwd="/home/u/app"))
    objs.append(user("u9", "a9", "Now rename the modules.", cwd="/home/u/app"))
    [t] = api.read([str(write_jsonl(tmp_path / "s.jsonl", objs))])
    budget = Budget(context_window=1000, protect_first=0, tail_tokens=60, summary_min=200, summary_max=450)
    out, report = compact(t, make_counter(), OfflineSummarizer(), CompactOptions(budget=budget))
    assert report["status"] == "compacted"
    summary = next(m.text() for m in out.messages if "REFERENCE ONLY" in m.text())
    assert "project root: /home/u/app (paths" in summary
    assert "read assets/app.js" in summary  # relative to the root the agent's commands use, not the absolute path


def _boundary(uuid: str, logical: str | None) -> dict:
    return {
        "parentUuid": None,
        "logicalParentUuid": logical,
        "isSidechain": False,
        "sessionId": "s1",
        "type": "system",
        "subtype": "compact_boundary",
        "content": "Conversation compacted",
        "uuid": uuid,
        "compactMetadata": {"trigger": "auto"},
    }


def test_a_session_compacted_by_claude_code_is_read_from_its_last_boundary(tmp_path):
    """What Claude Code resumes after its own compaction: the summary and what follows the last compact_boundary;
    the turns before it stay in the file, unread, and are written back as they were."""
    rows = [
        user("u0", None, "OLD-ASK: rename the module."),
        said("a0", "u0", "OLD-ANSWER: renamed.", "m0"),
        _boundary("b1", "a0"),
        user("s0", "b1", "Summary: FIRST-SUMMARY.", isCompactSummary=True, isVisibleInTranscriptOnly=True),
        said("a1", "s0", "MIDDLE-ANSWER.", "m1"),
        _boundary("b2", "a1"),
        user("s1", "b2", "Summary: the module was renamed.", isCompactSummary=True, isVisibleInTranscriptOnly=True),
        user("u1", "s1", "Now update the imports."),
        said("a2", "u1", "Imports updated.", "m2"),
    ]
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    [t] = api.read([str(src)])
    assert flow(t) == ["user:Summary: the module was renamed.", "user:Now update the imports.", "assistant:Imports updated."]
    r = cli("convert", str(src), "--to", "openai")
    assert r.returncode == 0, r.stderr
    assert b"OLD-" not in r.stdout and b"FIRST-SUMMARY" not in r.stdout and b"MIDDLE-ANSWER" not in r.stdout
    last = t.messages[-1]
    changed = t.evolve(messages=[*t.messages[:-1], last.evolve(content=[{"type": "text", "text": "Imports fixed."}])])
    objs = read_jsonl(api.write(changed))
    assert objs[:6] == rows[:6]  # the lines before the live context, as they were
    assert flow(api.read([str(write_jsonl(tmp_path / "c.jsonl", objs))])[0])[-1] == "assistant:Imports fixed."


def test_the_lines_of_one_api_message_are_one_message_across_its_results(tmp_path):
    """One API message over several lines (one a content block) with the first call's result logged before the
    second call's line (as two long corpus sessions have it) is one assistant message with both calls; a line of
    the same message.id after a prompt of the person's is a message of its own (it answers that prompt)."""
    rows = [
        user("u1", None, "Run both."),
        call("a1", "u1", "tA", "ruff check", "m1"),
        result("rA", "a1", "tA", "outA"),
        call("a2", "rA", "tB", "mypy", "m1"),
        result("rB", "a2", "tB", "outB"),
        user("u2", "rB", "And the tests?"),
        said("a3", "u2", "Running them.", "m1"),
    ]
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    [t] = api.read([str(src)])
    assert flow(t) == [
        "user:Run both.",
        "assistant: [tA,tB]",
        "tool:outA ->tA",
        "tool:outB ->tB",
        "user:And the tests?",
        "assistant:Running them.",
    ]
    assert api.write(t) == src.read_bytes()


def test_a_broken_chain_keeps_the_turns_before_the_break(tmp_path):
    """A result line whose parent was never written (a crash before the line was flushed) breaks the parentUuid
    chain: the turns before the break are read as they are (Claude Code shows them), not taken for a branch."""
    rows = [
        user("u1", None, "Fix the flaky test."),
        call("a1", "u1", "t1", "pytest -x tests/test_io.py", "m1"),
        result("r1", "lost-line", "t1", "3 passed"),
        said("a2", "r1", "It passes now.", "m2"),
    ]
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    [t] = api.read([str(src)])
    assert flow(t) == ["user:Fix the flaky test.", "assistant: [t1]", "tool:3 passed ->t1", "assistant:It passes now."]
    assert not t.native.off_path and api.write(t) == src.read_bytes()


def test_with_no_head_kept_the_summary_comes_first_after_the_boundary(tmp_path):
    src = write_jsonl(tmp_path / "s.jsonl", _long([]))
    r = cli("compact", str(src), *TIGHT, "--protect-first", "0")
    assert r.returncode == 0, r.stderr
    objs = read_jsonl(r.stdout)
    [at] = [n for n, o in enumerate(objs) if o.get("subtype") == "compact_boundary"]
    assert objs[at + 1].get("isCompactSummary") and objs[-1]["uuid"] == "y2"
    assert [o["uuid"] for o in resumable(objs)][:2] == [objs[at]["uuid"], objs[at + 1]["uuid"]]


def test_the_lines_a_compaction_adds_carry_the_session_they_join(tmp_path):
    """The boundary and the summary line take the envelope (sessionId, cwd, version) of the conversation's last line,
    and the boundary points at its last uuid (logicalParentUuid), as Claude Code's own compaction writes them."""
    rows = _long([])
    rows[-1] = {**rows[-1], "cwd": "/repo/sub", "gitBranch": "fix-tests"}
    r = cli("compact", str(write_jsonl(tmp_path / "s.jsonl", rows)), *TIGHT)
    assert r.returncode == 0, r.stderr
    objs = read_jsonl(r.stdout)
    [boundary] = [o for o in objs if o.get("subtype") == "compact_boundary"]
    [summary] = [o for o in objs if o.get("isCompactSummary")]
    assert boundary["logicalParentUuid"] == "y2"
    for o in (boundary, summary):
        assert {k: o.get(k) for k in ("sessionId", "cwd", "version", "gitBranch", "isSidechain")} == {
            "sessionId": "s1",
            "cwd": "/repo/sub",
            "version": "2.0.0",
            "gitBranch": "fix-tests",
            "isSidechain": False,
        }


def test_an_assistant_message_added_through_the_api_is_written_as_an_assistant_line(tmp_path):
    from compactctl.model import Message

    src = write_jsonl(tmp_path / "s.jsonl", [user("u1", None, "Say hi."), said("a1", "u1", "Hi.", "m1"), user("u2", "a1", "Again.")])
    [t] = api.read([str(src)])
    added = t.evolve(messages=[*t.messages, Message(role="assistant", content="Hi again.")])
    out = write_jsonl(tmp_path / "o.jsonl", read_jsonl(api.write(added)))
    assert read_jsonl(out.read_bytes())[-1]["type"] == "assistant"
    assert flow(api.read([str(out)])[0]) == ["user:Say hi.", "assistant:Hi.", "user:Again.", "assistant:Hi again."]


def test_a_late_result_is_written_before_the_line_that_holds_a_prompt_after_results(tmp_path):
    """Found by mutation testing: of two parallel calls, one result came in a line with a prompt after it, the other
    a turn later. Repair puts the late result after its call, but the line with the prompt was written back first, so
    the file read as result, prompt, result: `repair` wrote what its own --check refuses (placement)."""
    text_after = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "tB", "content": "outB"}, {"type": "text", "text": "Be quick."}],
    }
    rows = [
        user("u1", None, "Run both."),
        _calls("a1", "u1", "m1", "tA", "tB"),
        _line("user", "r1", "a1", text_after),
        said("a2", "r1", "Waiting for the first.", "m2"),
        _results("r2", "a2", ("tA", "outA")),
        said("a3", "r2", "Both done.", "m3"),
    ]
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    r = cli("repair", "-q", str(src))
    assert r.returncode == 0, r.stderr
    fixed = tmp_path / "fixed.jsonl"
    fixed.write_bytes(r.stdout)
    [t] = api.read([str(fixed)])
    assert flow(t)[:5] == ["user:Run both.", "assistant: [tA,tB]", "tool:outA ->tA", "tool:outB ->tB", "user:Be quick."]
    assert cli("repair", "--check", str(fixed)).returncode == 0
    assert [o["uuid"] for o in resumable(read_jsonl(r.stdout))] == ["u1", "a1", "r2", "r1", "a2", "a3"]


def test_repair_moves_a_prompt_out_from_between_parallel_results_and_leaves_the_results_where_they_were(tmp_path):
    """A prompt logged between the results of one message's two calls goes after them; the results keep their lines
    and their order (the second call's first, as Claude Code logged them: both APIs take them)."""
    rows = [
        user("u1", None, "Run both."),
        call("a1", "u1", "tA", "ruff check", "m1"),
        call("a2", "a1", "tB", "mypy", "m1"),
        result("rB", "a2", "tB", "outB"),
        user("u2", "rB", "Be quick."),
        result("rA", "u2", "tA", "outA"),
        said("a3", "rA", "Both pass.", "m2"),
    ]
    r = cli("repair", "-q", str(write_jsonl(tmp_path / "s.jsonl", rows)))
    assert r.returncode == 0, r.stderr
    objs = read_jsonl(r.stdout)
    assert [o["uuid"] for o in objs] == ["u1", "a1", "a2", "rB", "rA", "u2", "a3"]
    assert [o["uuid"] for o in resumable(objs)] == ["u1", "a1", "a2", "rB", "rA", "u2", "a3"]


def test_a_result_between_the_lines_of_its_message_stays_there_when_repair_answers_the_other_call(tmp_path):
    """One API message over two lines with the first call's result logged between them (as two long corpus sessions
    have it); the second call has no result: repair adds one after the message, the first result stays where it was."""
    rows = [
        user("u1", None, "Check both."),
        call("a1", "u1", "tA", "ls", "m1"),
        result("rA", "a1", "tA", "outA"),
        call("a2", "rA", "tB", "pwd", "m1"),
        user("u2", "a2", "Next."),
    ]
    r = cli("repair", "-q", str(write_jsonl(tmp_path / "s.jsonl", rows)))
    assert r.returncode == 0, r.stderr
    objs = read_jsonl(r.stdout)
    assert [o.get("uuid") for o in objs][:4] == ["u1", "a1", "rA", "a2"] and objs[2] == rows[2]
    assert STUB in str(objs[4]["message"]["content"]) and objs[5]["uuid"] == "u2"


def test_a_moved_result_is_linked_to_its_call_not_to_a_line_off_an_earlier_turn(tmp_path):
    """Found by random sessions while mutation testing: a progress line hanging off the prompt (the first line of a
    retried branch) was written between a call and its result, which repair moved there from after a later prompt.
    The moved result was linked to the line before it, the progress line: the chain Claude Code resumes skipped the
    call, and the file `repair` wrote failed its own --check (a result answering no call)."""
    rows = [
        user("u1", None, "Run it."),
        call("a1", "u1", "tA", "make", "m1"),
        progress("p1", "u1"),
        said("x1", "p1", "An answer that was retried.", "mx"),
        user("u2", "a1", "Be quick."),
        result("rA", "u2", "tA", "built"),
        said("a2", "rA", "Built.", "m2"),
    ]
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    r = cli("repair", "-q", str(src))
    assert r.returncode == 0, r.stderr
    objs = read_jsonl(r.stdout)
    assert [o["uuid"] for o in resumable(objs)] == ["u1", "a1", "rA", "u2", "a2"]
    fixed = tmp_path / "fixed.jsonl"
    fixed.write_bytes(r.stdout)
    check = cli("repair", "--check", str(fixed))
    assert check.returncode == 0, check.stderr


def test_system_lines_other_than_a_boundary_do_not_cut_the_conversation(tmp_path):
    """Claude Code writes many `system` lines (hook summaries, turn durations, local commands); only a
    compact_boundary starts the live context."""
    info = {"parentUuid": "a1", "isSidechain": False, "sessionId": "s1", "type": "system", "subtype": "stop_hook_summary", "uuid": "y1"}
    rows = [user("u1", None, "First ask."), said("a1", "u1", "First answer.", "m1"), info, user("u2", "y1", "Second ask.")]
    [t] = api.read([str(write_jsonl(tmp_path / "s.jsonl", rows))])
    assert flow(t) == ["user:First ask.", "assistant:First answer.", "user:Second ask."]


def test_sidechain_lines_after_the_main_thread_do_not_become_the_conversation(tmp_path):
    """A subagent's turns (isSidechain) logged after the main thread's last line: the leaf is still the main thread's."""
    side = {"isSidechain": True}
    rows = [
        user("u1", None, "Find where the config is loaded."),
        call("a1", "u1", "t1", "Task: search the code", "m1"),
        user("s1", None, "Search the code for config loading.", **side),
        said("s2", "s1", "It is in app/config.py.", "sm1", **side),
    ]
    with pytest.warns(UserWarning, match="off the conversation's path"):
        [t] = api.read([str(write_jsonl(tmp_path / "s.jsonl", rows))])
    assert flow(t) == ["user:Find where the config is loaded.", "assistant: [t1]"]


def test_a_file_and_the_same_bytes_through_stdin_are_compacted_alike(tmp_path):
    """New lines' uuids come from the session, not from the input's name: `compact FILE` and `compact - < FILE`
    (the prune | plan | summarize chain) write the same lines."""
    src = write_jsonl(tmp_path / "s.jsonl", _long([]))
    by_name = cli("compact", str(src), *TIGHT, "-q")
    by_stdin = cli("compact", "-", *TIGHT, "-q", input=src.read_bytes())
    assert by_name.returncode == 0 and by_stdin.returncode == 0, by_name.stderr + by_stdin.stderr
    assert b"compact_boundary" in by_name.stdout and by_name.stdout == by_stdin.stdout


def test_the_summary_follows_the_head_when_progress_lines_stand_among_the_turns(tmp_path):
    """Progress lines (a call's hook or tool progress) stand among the turns; the summary is written after the head
    and its progress lines, before the first line of the tail (it was written after a progress line of the tail)."""
    rows = []
    for o in _long([]):
        rows.append(o)
        if o["uuid"].startswith("c"):
            rows.append(progress("p" + o["uuid"], o["uuid"]))
    r = cli("compact", str(write_jsonl(tmp_path / "s.jsonl", rows)), *TIGHT, "-q")
    assert r.returncode == 0, r.stderr
    objs = read_jsonl(r.stdout)
    at = next(n for n, o in enumerate(objs) if o.get("isCompactSummary"))
    assert [o["uuid"] for o in objs[:at] if o["type"] in ("user", "assistant")] == ["u0", "c0", "r0"]  # --protect-first 3
    assert [o["uuid"] for o in objs[at + 1 :]] == ["c29", "pc29", "r29", "y1", "y2"]
    assert [o["uuid"] for o in resumable(objs)][1:] == ["u0", "c0", "r0", objs[at]["uuid"], "c29", "r29", "y1", "y2"]


def test_a_second_compaction_resumes_from_its_own_boundary(tmp_path):
    """A session Claude Code compacted before, compacted again: the chain Claude Code resumes from the last line
    goes back to the new boundary (not through the lines kept from before it to the old boundary)."""
    old = [
        user("o1", None, "OLD-ASK."),
        said("o2", "o1", "OLD-ANSWER.", "mo"),
        _boundary("b1", "o2"),
        user("s0", "b1", "Summary: OLD-SUMMARY.", isCompactSummary=True, isVisibleInTranscriptOnly=True),
    ]
    rows = old + [{**o, "parentUuid": "s0"} if o["uuid"] == "u0" else o for o in _long([])]
    r = cli("compact", str(write_jsonl(tmp_path / "s.jsonl", rows)), *TIGHT, "-q")
    assert r.returncode == 0, r.stderr
    objs = read_jsonl(r.stdout)
    assert objs[:3] == old[:3]  # the lines before the old boundary, and it, as they were
    chain = resumable(objs)
    assert chain[0].get("compactMetadata", {}).get("compactctl") is True and chain[-1]["uuid"] == "y2"
    assert not {"o1", "o2", "b1"} & {o["uuid"] for o in chain}


def _begun_around_a_result() -> list[dict]:
    """A second message (m2) begun before the first one's result, its later line after that result."""
    return [
        user("u1", None, "go"),
        _calls("a1", "u1", "m1", "tA"),
        said("a2", "a1", "Meanwhile.", "m2"),
        result("rA", "a2", "tA", "outA"),
        call("a3", "rA", "tB", "pwd", "m2"),
        result("rB", "a3", "tB", "outB"),
        user("u2", "rB", "next"),
    ]


@pytest.mark.parametrize(
    "case",
    [
        # a second message begun before the first one's result, its later line after that result (one message.id on
        # lines separated by another message's results): the merged message was rebuilt on its first line, before the
        # result repair puts after the first call; read back, the calls stood before the results (placement)
        _begun_around_a_result(),
        # a parallel result under a progress line of its call, off the single-parent chain: the progress line was
        # linked under repair's stub for the other call, so the loader no longer took the result (missing result)
        [
            user("u1", None, "go"),
            _calls("a1", "u1", "m1", "tA", "tB"),
            progress("p1", "a1"),
            result("rB", "p1", "tB", "outB"),
            progress("p2", "p1"),
            user("u2", "p2", "next"),
            said("a2", "u2", "Done.", "m2"),
        ],
        # a message's second line after its first call's result, that result hanging off a line above the call: the
        # message, rebuilt on its first line (repair drops a blank text block), lost the second line, through which the
        # chain reached the first one: read back, the first line was off the path (orphan result)
        [
            user("u1", None, "go"),
            progress("p1", "u1"),
            _calls("a1", "p1", "m1", "tA"),
            result("rA", "p1", "tA", "outA"),
            _line(
                "assistant",
                "a2",
                "rA",
                {
                    "id": "m1",
                    "role": "assistant",
                    "content": [*_calls("x", None, "m1", "tB")["message"]["content"], {"type": "text", "text": ""}],
                },
            ),
            user("u2", "a2", "next"),
        ],
        # one line answering calls of two messages, the next call under it: repair put the first result after its
        # call, the prompt and the second message after it; the next call, after a progress line, kept its parent, the
        # first result's line: valid, but the chain from the leaf skipped the prompt and the second message (read back
        # without them)
        [
            user("u1", None, "go"),
            _calls("a1", "u1", "m1", "tA"),
            user("u2", "a1", "and this"),
            _calls("a2", "u2", "m2", "tB"),
            _results("r", "a2", ("tA", "outA"), ("tB", "outB")),
            progress("p0", "r"),
            _calls("a3", "r", "m3", "tC"),
            progress("p1", "a3"),
            result("rC", "p1", "tC", "outC"),
        ],
    ],
    ids=["one-id-around-another-messages-result", "parallel-result-under-progress", "chain-through-a-merged-line", "skipped-turn"],
)
def test_a_repaired_shape_claude_code_does_not_write_reads_back_as_repaired(tmp_path, case):
    """From random sessions: lines Claude Code itself may not write (hand-edited, merged, other tools) that `repair`
    wrote back where they came from, into a file that read back otherwise and failed its own --check."""
    src = write_jsonl(tmp_path / "s.jsonl", case)
    [t] = api.read([str(src)])
    fixed, _ = api.repair(t)
    out = cli("repair", str(src), "-q")
    assert out.returncode == 0, out.stderr
    (tmp_path / "o.jsonl").write_bytes(out.stdout)
    check = cli("repair", "--check", str(tmp_path / "o.jsonl"))
    assert check.returncode == 0, check.stdout + check.stderr
    [back] = api.read([str(tmp_path / "o.jsonl")])
    assert flow(back) == flow(fixed)


def test_a_message_begun_before_an_earlier_calls_result_keeps_its_lines_after_that_result(tmp_path):
    """One message.id on lines around another message's result: the message is read where its first line is, so
    every line of it goes after what the transcript puts before it (that result), not only its last line; its lines
    are kept as they were, not rewritten one message a line."""
    rows = _begun_around_a_result()
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    out = cli("repair", str(src), "-q")
    assert out.returncode == 0, out.stderr
    objs = read_jsonl(out.stdout)
    assert [o["uuid"] for o in objs] == ["u1", "a1", "rA", "a2", "a3", "rB", "u2"]
    assert [o["uuid"] for o in resumable(objs)] == ["u1", "a1", "rA", "a2", "a3", "rB", "u2"]
    assert [o["message"] for o in objs[3:5]] == [rows[2]["message"], rows[4]["message"]]  # one line a block, as read


def test_the_tail_keeps_its_lines_when_the_summary_is_an_assistant_turn(tmp_path):
    """A head that ends with a user message makes the summary an assistant turn, which the writer writes as a user
    line (`isCompactSummary`): the read-back compared it as an assistant's, never matched, and every compaction of
    such a session took the linear fallback (no tail line kept as it was; a message logged a block a line merged)."""
    objs, prev = [user("u-meta", None, "<system-reminder>\nhook context\n</system-reminder>", isMeta=True)], "u-meta"
    objs.append(user("u-ask", prev, "Please refactor the parser module. " * 3))
    prev = "u-ask"
    for k in range(12):
        mid, tid = f"msg_{k:04d}", f"toolu_{k:04d}"
        objs += [
            said(f"a{k}", prev, f"Step {k}: looking at the code now.", mid),
            call(f"c{k}", f"a{k}", tid, f"cat file{k}.py", mid),
            result(f"r{k}", f"c{k}", tid, f"line of output {k}\n" * 150),
            said(f"d{k}", f"r{k}", "Done with this step, and here is what changed. " * 40, mid + "b"),
            user(f"p{k}", f"d{k}", f"Now continue with part {k + 1}, please."),
        ]
        prev = f"p{k}"
    objs.append(said("end", prev, "All done.", "msg_end"))
    src, out = tmp_path / "s.jsonl", tmp_path / "out.jsonl"
    write_jsonl(src, objs)
    r = cli("compact", str(src), "-q", "--last-ask", "tail", "--protect-first", "1", "--context-window", "8000", "-o", str(out))
    assert r.returncode == 0, r.stderr
    source = set(src.read_bytes().splitlines())
    lines = out.read_bytes().splitlines()
    summary = [orjson.loads(x) for x in lines if b"isCompactSummary" in x]
    assert summary and summary[0]["type"] == "user"
    kept = [x for x in lines if x in source]
    assert len(kept) >= 4, f"{len(kept)} of {len(lines)} lines kept as they were"
    assert cli("repair", "--check", str(out)).returncode == 0
