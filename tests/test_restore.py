"""restore: real sessions come back record for record; -o DIR/ archives restore every file; a bad
archive is an error."""

from __future__ import annotations

import os

import orjson
import pytest

import compactctl
from compactctl import api
from compactctl.errors import DataError
from compactctl.jsonl import expand_inputs

from .conftest import CORPUS, ROOT, cli, needs_corpus, read_jsonl, tool_session, write_jsonl


def _lines(path) -> list[bytes]:
    return [ln.rstrip(b"\r") for ln in open(path, "rb").read().split(b"\n") if ln.strip()]


@needs_corpus
@pytest.mark.parametrize("fmt", ["claude-code", "codex"])
def test_every_corpus_session_restores_record_for_record(fmt, tmp_path):
    root = str(CORPUS / fmt) + "/"
    sources = expand_inputs([root])
    out_dir, arch = tmp_path / "out", tmp_path / "a.jsonl"
    r = cli("compact", root, "-o", str(out_dir) + "/", "--archive", str(arch), "--context-window", "32000", "--on-error", "skip", "-q")
    assert r.returncode == 0, r.stderr
    changed = 0
    for src in sources:
        out = out_dir / os.path.relpath(src, root)
        changed += _lines(out) != _lines(src)
        back = tmp_path / "back.jsonl"
        api.restore_file(str(out), str(arch), str(back))
        assert _lines(back) == _lines(src), src
    assert changed >= len(sources) // 2  # most were compacted: the restore had work to do


def _compacted(tmp_path, n_files=1):
    srcs = [write_jsonl(tmp_path / f"s{k}.jsonl", tool_session(30, 4000)) for k in range(n_files)]
    return srcs


def test_archive_from_an_output_dir_restores_every_file(tmp_path):
    srcs = _compacted(tmp_path, 3)
    r = cli(
        "compact",
        *map(str, srcs),
        "-o",
        str(tmp_path / "out") + "/",
        "--archive",
        str(tmp_path / "a.jsonl"),
        "--context-window",
        "3000",
        "--summary-min",
        "300",
    )
    assert r.returncode == 0, r.stderr
    for s in srcs:
        back = cli("restore", str(tmp_path / "out" / s.name), "--archive", str(tmp_path / "a.jsonl"))
        assert back.returncode == 0, back.stderr
        assert [orjson.loads(x) for x in back.stdout.splitlines()] == [orjson.loads(x) for x in _lines(s)]


def test_outputs_of_the_same_name_restore_their_own_inputs(tmp_path):
    """From a review: `-o DIR/` with d1/ (holding sub/s.jsonl) and d2/s.jsonl wrote out/sub/s.jsonl and out/s.jsonl;
    restore matched out/s.jsonl to an input by name and took d1's (silently the wrong originals), and a `.json`
    input's output (t.jsonl) matched nothing. The archive now names each input's output."""
    (tmp_path / "d1" / "sub").mkdir(parents=True)
    (tmp_path / "d2").mkdir()
    one, two = tool_session(8, 1500), tool_session(8, 1500)
    two[-1]["content"] = "another ask"
    a = write_jsonl(tmp_path / "d1" / "sub" / "s.jsonl", one)
    b = write_jsonl(tmp_path / "d2" / "s.jsonl", two)
    doc = tmp_path / "t.json"
    doc.write_bytes(orjson.dumps([{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}]))
    out, arch = tmp_path / "out", tmp_path / "a.jsonl"
    r = cli("compact", str(tmp_path / "d1"), str(b), str(doc), "-o", f"{out}/", "--archive", str(arch), "--context-window", "4000", "-q")
    assert r.returncode == 0, r.stderr
    for written, source in ((out / "sub" / "s.jsonl", a), (out / "s.jsonl", b)):
        back = cli("restore", str(written), "--archive", str(arch))
        assert back.returncode == 0 and back.stdout == source.read_bytes(), (written, back.stderr)
    back = cli("restore", str(out / "t.jsonl"), "--archive", str(arch))
    assert back.returncode == 0 and orjson.loads(back.stdout) == orjson.loads(doc.read_bytes())[0], back.stderr
    (tmp_path / "moved").mkdir()  # an output moved elsewhere is still found by its name
    (tmp_path / "moved" / "t.jsonl").write_bytes((out / "t.jsonl").read_bytes())
    back = cli("restore", str(tmp_path / "moved" / "t.jsonl"), "--archive", str(arch))
    assert back.returncode == 0 and orjson.loads(back.stdout) == orjson.loads(doc.read_bytes())[0], back.stderr


@pytest.mark.parametrize("damage", ["empty", "truncated", "foreign", "other-run"])
def test_a_bad_archive_is_an_error(tmp_path, damage):
    [src] = _compacted(tmp_path)
    out, arch = tmp_path / "c.jsonl", tmp_path / "a.jsonl"
    r = cli("compact", str(src), "-o", str(out), "--archive", str(arch), "--context-window", "3000", "--summary-min", "300")
    assert r.returncode == 0, r.stderr
    lines = _lines(arch)
    if damage == "empty":
        arch.write_bytes(b"")
    elif damage == "truncated":
        arch.write_bytes(b"\n".join(lines[: len(lines) // 2]) + b"\n")
    elif damage == "foreign":
        write_jsonl(arch, [{"role": "user", "content": "hi"}])
    else:  # the closing record of a run that changed nothing
        write_jsonl(arch, [{"type": "end", "transcripts": 1, "sources": [str(src)], "first_seq": {str(src): 0}}])
    back = cli("restore", str(out), "--archive", str(arch))
    assert back.returncode != 0 and back.stdout == b"" and b"Traceback" not in back.stderr, back.stderr
    with pytest.raises(DataError):
        api.restore_file(str(out), str(arch), str(tmp_path / "r.jsonl"))


@pytest.mark.parametrize("window", ["8000", "32000"])
def test_every_bundled_sample_restores_byte_for_byte(window, tmp_path):
    """Formats without call ids (Hermes, ShareGPT) number them by position when read: a message read back
    from the compacted file has other ids than the original, and the restore map must not depend on them."""
    from .conftest import SAMPLES

    for src in sorted(SAMPLES.glob("*.jsonl")):
        out, arch, back = tmp_path / "c.jsonl", tmp_path / "a.jsonl", tmp_path / "b.jsonl"
        r = cli("compact", str(src), "-o", str(out), "--archive", str(arch), "--context-window", window, "--on-error", "skip", "-q")
        assert r.returncode == 0, r.stderr
        api.restore_file(str(out), str(arch), str(back))
        assert back.read_bytes() == src.read_bytes(), src.name


REWRITTEN = {  # a message the model holds right, whose source form an API refuses: repair writes it anew
    "empty-calls": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello", "tool_calls": []},
        {"role": "user", "content": "bye"},
        {"role": "assistant", "content": "ok"},
    ],
    "result-order": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "x"}, {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]},
        {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "tool_result", "tool_use_id": "t1", "content": "a"}]},
        {"role": "assistant", "content": "ok"},
    ],
    "ids-list": [
        {"role": "user", "content": "fix it"},
        {
            "role": "assistant",
            "content": "look",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}],
        },
        {"role": "tool", "content": "a.py", "tool_call_ids": ["c1"]},
        {"role": "assistant", "content": "done"},
    ],
}


@pytest.mark.parametrize("rule", sorted(REWRITTEN))
@pytest.mark.parametrize("window", ["64000", "300"])
def test_a_message_repair_writes_anew_is_archived(tmp_path, rule, window):
    """`tool_calls: []` left out, text put after an Anthropic user message's results, a SWE-agent result given its
    `tool_call_id` (every SWE-agent function-calling trajectory, as function_calling_simple.traj of the corpus):
    repair wrote the message anew without archiving its original, so `restore` failed, "archive does not cover
    messages [1]" (exit 3), even for a transcript that needed no compaction."""
    src = write_jsonl(tmp_path / "s.jsonl", REWRITTEN[rule])
    out, arch, back = tmp_path / "c.jsonl", tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for cmd in (["compact", "--context-window", window], ["repair"]):
        r = cli(*cmd, str(src), "-o", str(out), "--archive", str(arch), "--on-error", "skip")
        assert r.returncode == 0, r.stderr
        assert cli("repair", "--check", str(out)).returncode == 0
        restored = cli("restore", str(out), "--archive", str(arch), "-o", str(back))
        assert restored.returncode == 0, restored.stderr
        if rule != "result-order":
            assert back.read_bytes() == src.read_bytes()
        else:  # the message as repair writes it, its result first: the archive keeps no block order of the source
            rows = REWRITTEN[rule][:2] + [{"role": "user", "content": REWRITTEN[rule][2]["content"][::-1]}] + REWRITTEN[rule][3:]
            assert read_jsonl(back.read_bytes()) == rows


@pytest.mark.parametrize(
    ("sample", "to"),
    [("hermes_trajectory", "openai"), ("anthropic_session", "openai"), ("anthropic_session", "codex"), ("hermes_trajectory", "codex")],
)
def test_a_transcript_written_in_another_format_restores_as_convert_writes_it(tmp_path, sample, to):
    """The archived originals of a transcript compacted with --to were written back as the input's format had them:
    a Hermes message as OpenAI chat with its reader's internal keys ("_from", "_raw_call", "_tagged"), an Anthropic
    assistant turn of calls alone with `"content": []` (OpenAI refuses both), Anthropic's text parts in a Codex
    rollout typed "text" (the Responses API wants output_text). Now as `convert --to` writes them."""
    from .conftest import SAMPLES

    src = SAMPLES / f"{sample}.jsonl"
    out, arch, back = tmp_path / "c.jsonl", tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    r = cli("compact", str(src), "--to", to, "-o", str(out), "--archive", str(arch), "--context-window", "8000", "-q")
    assert r.returncode == 0, r.stderr
    api.restore_file(str(out), str(arch), str(back))
    assert b'"_' not in back.read_bytes()
    assert read_jsonl(back.read_bytes()) == read_jsonl(cli("convert", str(src), "--to", to, "-q").stdout)


@pytest.mark.parametrize("to", ["anthropic", "codex"])
def test_calls_that_reuse_an_id_restore_with_the_ids_convert_gives_them(tmp_path, to):
    """An OpenAI session whose calls all reuse one id (OpenAI takes it; real transcripts do it), compacted --to
    anthropic: `convert --to anthropic` renames the reused ids, but restore wrote the originals' 40 `tool_use` blocks
    all with id "call_1", which Anthropic's API refuses (`repair --check` found 39 reused ids). Now the ids are the
    conversion's, and the restored file is `convert`'s output."""
    msgs: list[dict] = [{"role": "system", "content": "sys"}, {"role": "user", "content": "do the task " + "x " * 50}]
    for i in range(40):
        call = {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": f'{{"cmd": "ls dir{i}"}}'}}
        msgs += [
            {"role": "assistant", "content": f"step {i}", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": f"out {i} " + "word " * 300},
        ]
    msgs.append({"role": "user", "content": "thanks, now finish"})
    src, out, arch, back = (tmp_path / n for n in ("s.jsonl", "c.jsonl", "a.jsonl", "b.jsonl"))
    write_jsonl(src, [{"messages": msgs}])
    r = cli("compact", str(src), "--to", to, "-o", str(out), "--archive", str(arch), "--context-window", "6000", "-q")
    assert r.returncode == 0, r.stderr
    api.restore_file(str(out), str(arch), str(back))
    assert back.read_bytes() == cli("convert", str(src), "--to", to, "-q").stdout
    checked = cli("repair", "--check", str(back), "-q")
    assert checked.returncode == 0, checked.stderr


def test_a_trajectory_restores_into_the_key_that_carried_its_messages(tmp_path):
    """A SWE-agent trajectory keeps its messages in "history": restored, they go back there (they once went to a
    new "messages" key, the compacted "history" left beside them)."""
    from .test_budget_aware import swe_trajectory

    src = tmp_path / "x.traj"
    traj = swe_trajectory(False, steps=10, size=3000)
    src.write_bytes(orjson.dumps(traj))
    out, arch, back = tmp_path / "out.jsonl", tmp_path / "a.jsonl", tmp_path / "back.jsonl"
    r = cli("compact", str(src), "-o", str(out), "--archive", str(arch), "--context-window", "12000", "--on-error", "skip", "-q")
    assert r.returncode == 0, r.stderr
    assert orjson.loads(_lines(out)[0])["history"] != traj["history"]  # compacted: the restore has work to do
    api.restore_file(str(out), str(arch), str(back))
    assert orjson.loads(_lines(back)[0]) == traj


def _spaced_session(tmp_path, mid_system: bool = False):
    """An OpenAI chat session whose arguments are written as Python's json.dumps writes them (spaces after : and ,),
    and some that are not a JSON object (kept verbatim: in the tail); with `mid_system`, a developer message and a
    system message in the middle too."""
    import json

    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": "read them all"}]
    if mid_system:
        msgs.insert(1, {"role": "developer", "content": "dev"})
    odd = ["", "ls -la", "[1, 2]", '"just a string"', '{"x": NaN}']
    for i in range(30 + len(odd)):
        args = json.dumps({"path": f"src/f{i}.py", "note": "caf\u00e9"}) if i < 30 else odd[i - 30]
        msgs.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": args}}],
            }
        )
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": "x = 1\n" * (300 if i < 30 else 1)})
        if mid_system and i == 10:
            msgs.append({"role": "system", "content": "be brief from here on"})
    msgs.append({"role": "user", "content": "now finish"})
    return write_jsonl(tmp_path / "s.jsonl", [{"messages": msgs}])


@pytest.mark.parametrize("mid_system", [False, True])
@pytest.mark.parametrize("fmt", ["anthropic", "sharegpt"])
def test_a_session_written_in_another_format_restores_whatever_its_arguments(tmp_path, fmt, mid_system):
    # Anthropic stores a call's arguments as an object: read back they are '{"path":"src/f0.py",...}', and the
    # map's print of '{"path": "src/f0.py", ...}' did not match them ("archive does not cover messages [2, 4, ...]");
    # nor did '' (written as {}), text that is not JSON, a list or a JSON string. System messages the target joins
    # into its one prompt were not in the output as they were, nor in the archive (the same error).
    src = _spaced_session(tmp_path, mid_system)
    out, arch = tmp_path / "c.jsonl", tmp_path / "a.jsonl"
    r = cli("compact", str(src), "--context-window", "6000", "--to", fmt, "-q", "-o", str(out), "--archive", str(arch))
    assert r.returncode == 0, r.stderr
    back = cli("restore", str(out), "--archive", str(arch))
    assert back.returncode == 0, back.stderr
    assert back.stdout == cli("convert", str(src), "--to", fmt).stdout  # the input, in the format it was written in


def test_an_archive_that_printed_the_arguments_text_still_restores(tmp_path):
    """Archives written before the twelfth session printed a call's arguments as their text."""
    from compactctl import formats
    from compactctl.model import content_print

    src = _spaced_session(tmp_path)
    out, arch = tmp_path / "c.jsonl", tmp_path / "a.jsonl"
    assert cli("compact", str(src), "--context-window", "6000", "-q", "-o", str(out), "--archive", str(arch)).returncode == 0
    [t] = formats.Reader().read([str(src)])
    old = []
    for line in arch.read_bytes().splitlines():
        rec = orjson.loads(line)
        if rec.get("type") == "map":
            rec["kept"] = [[o, j, content_print(t.messages[o], canonical_arguments=False)] for o, j, _ in rec["kept"]]
            assert any(p != content_print(t.messages[o]) for o, _, p in rec["kept"])  # the old prints differ
        old.append(orjson.dumps(rec))
    arch.write_bytes(b"\n".join(old) + b"\n")
    back = cli("restore", str(out), "--archive", str(arch))
    assert back.returncode == 0 and back.stdout == src.read_bytes(), back.stderr


@pytest.mark.parametrize("same_archive,to", [(False, None), (True, None), (False, "sharegpt"), (True, "anthropic")])
def test_a_compacted_session_compacted_again_without_change_restores(tmp_path, same_archive, to):
    """A session that already holds a summary and fits its new target is written as it came, with no archive
    record: restore took it for another run's output ("which was changed: this archive belongs to another run").
    Such a run archives that it left the transcript as it was. With the same --archive path (a hook compacting
    one session twice), the earlier originals its references need are carried into the new archive too."""
    sample = ROOT / "sample_transcripts" / "long_session.jsonl"
    a1, arch = tmp_path / "a1.jsonl", tmp_path / "arch.jsonl"
    assert cli("compact", str(sample), "--context-window", "8000", "-q", "-o", str(a1), "--archive", str(arch)).returncode == 0
    if to == "sharegpt":  # a text that ends in white space, which the ShareGPT writer strips (a review's case)
        rows = [orjson.loads(line) for line in a1.read_bytes().splitlines()]
        said = next(r for r in rows if r["role"] == "assistant" and isinstance(r.get("content"), str) and r["content"])
        said["content"] += "\n\n"
        a1.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    b1, arch2 = tmp_path / "b1.jsonl", arch if same_archive else tmp_path / "arch2.jsonl"
    r = cli("compact", str(a1), "--context-window", "200000", "-q", "-o", str(b1), "--archive", str(arch2), *(["--to", to] if to else []))
    assert r.returncode == 0, r.stderr
    if to is None:
        assert b1.read_bytes() == a1.read_bytes()
    else:  # written in another format: restore gives back what that run wrote (a ShareGPT text loses its end's white space)
        a1 = b1
    back = cli("restore", str(b1), "--archive", str(arch2))
    assert back.returncode == 0, back.stderr
    assert back.stdout == a1.read_bytes()
    other = tmp_path / "other.jsonl"  # another compaction of the same session: not what that run wrote
    assert cli("compact", str(sample), "--context-window", "6000", "-q", "-o", str(other)).returncode == 0
    wrong = cli("restore", str(other), "--archive", str(arch2))
    assert wrong.returncode == 3 and b"belongs to another run" in wrong.stderr, wrong.stderr


def test_a_compacted_dataset_repaired_without_change_restores(tmp_path):
    """repair writes a dataset record that needs nothing as it was read, decided from the parsed JSON (passthrough):
    with --archive, that skipped the `unchanged` record, and restore refused the archive of a compacted dataset."""
    src = tmp_path / "d.jsonl"
    src.write_bytes(b"".join(orjson.dumps({"id": f"t{i}", "messages": tool_session(20, 3000)}) + b"\n" for i in range(3)))
    out, rout = tmp_path / "out.jsonl", tmp_path / "rout.jsonl"
    assert (
        cli("compact", str(src), "--context-window", "2000", "-q", "-o", str(out), "--archive", str(tmp_path / "a.jsonl")).returncode == 0
    )
    assert all(b"Active Task" in line for line in out.read_bytes().splitlines())  # each holds a summary
    r = cli("repair", str(out), "-o", str(rout), "--archive", str(tmp_path / "ra.jsonl"))
    assert r.returncode == 0, r.stderr
    assert rout.read_bytes() == out.read_bytes()
    back = cli("restore", str(rout), "--archive", str(tmp_path / "ra.jsonl"))
    assert back.returncode == 0, back.stderr
    assert back.stdout == out.read_bytes()


def test_an_archive_of_more_transcripts_than_the_file_writes_nothing(tmp_path):
    """The check ran after the output was written (and put in place): a wrong archive left a file behind."""
    src = tmp_path / "d.jsonl"
    src.write_bytes(b"".join(orjson.dumps({"id": f"t{i}", "messages": tool_session(20, 3000)}) + b"\n" for i in range(3)))
    out, arch = tmp_path / "out.jsonl", tmp_path / "a.jsonl"
    assert cli("compact", str(src), "--context-window", "2000", "-q", "-o", str(out), "--archive", str(arch)).returncode == 0
    one = tmp_path / "one.jsonl"
    one.write_bytes(out.read_bytes().splitlines(keepends=True)[0])
    r = cli("restore", str(one), "--archive", str(arch), "-o", str(tmp_path / "back.jsonl"))
    assert r.returncode == 3 and b"holds more transcripts" in r.stderr, r.stderr
    assert not (tmp_path / "back.jsonl").exists()


def _joined_turns(fmt: str, steps: int = 24) -> dict:
    """A record whose source messages each read as several canonical ones: Anthropic user messages holding a
    tool result and the person's text; Hermes tool turns holding two <tool_response> blocks; LlamaFactory tool
    messages holding a JSON array of a result per call (restore wrote them as one tool message each)."""
    out = lambda i: f"line of output naming /src/mod{i}.py and the value 4242\n" * 60  # noqa: E731
    if fmt == "anthropic":
        msgs: list[dict] = [{"role": "user", "content": "Fix the bug in mod.py"}]
        for i in range(steps):
            use = {"type": "tool_use", "id": f"toolu_{i}", "name": "Read", "input": {"path": f"/src/mod{i}.py"}}
            msgs.append({"role": "assistant", "content": [{"type": "text", "text": f"step {i}"}, use]})
            result = {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": out(i)}
            msgs.append({"role": "user", "content": [result, {"type": "text", "text": f"note {i}"}]})
        msgs += [{"role": "assistant", "content": "done"}, {"role": "user", "content": "now run the tests"}]
        return {"system": "You are a coding agent.", "messages": msgs}
    if fmt == "llamafactory":
        v = lambda x: [{"type": "text", "value": x}]  # noqa: E731
        msgs = [{"role": "system", "content": v("You are a coding agent.")}, {"role": "user", "content": v("Fix mod.py")}]
        for i in range(steps):
            calls = [
                {"type": "tool_call", "value": orjson.dumps({"name": "read", "arguments": {"path": f"/src/mod{i}{k}.py"}}).decode()}
                for k in "ab"
            ]
            msgs.append({"role": "assistant", "content": calls})
            msgs.append({"role": "tool", "content": v(orjson.dumps([{"name": "read", "content": out(i)}] * 2).decode())})
        msgs += [{"role": "assistant", "content": v("done")}, {"role": "user", "content": v("now run the tests")}]
        return {"messages": msgs, "tools": "[]"}
    turns: list[dict] = [{"from": "system", "value": "You are a function calling AI model."}, {"from": "human", "value": "Fix mod.py"}]
    for i in range(steps):
        calls = "\n".join(f'<tool_call>\n{{"name": "read", "arguments": {{"path": "/src/mod{i}{k}.py"}}}}\n</tool_call>' for k in "ab")
        turns.append({"from": "gpt", "value": calls})
        responses = "\n".join(
            f'<tool_response>\n{{"name": "read", "content": {orjson.dumps(out(i)).decode()}}}\n</tool_response>' for _ in "ab"
        )
        turns.append({"from": "tool", "value": responses})
    turns += [{"from": "gpt", "value": "done"}, {"from": "human", "value": "now run the tests"}]
    return {"conversations": turns}


@pytest.mark.parametrize("fmt", ["anthropic", "hermes", "llamafactory"])
def test_a_source_message_read_as_several_restores_as_one(tmp_path, fmt):
    """The archive's map says which originals one source message was read as (`anchors`), so a restore writes them
    back as that one message (it once wrote an Anthropic result and the text after it as two user messages)."""
    rec = _joined_turns(fmt)
    src, out, arch, back = (tmp_path / f"{k}.jsonl" for k in ("src", "out", "a", "back"))
    src.write_bytes(orjson.dumps(rec) + b"\n")
    r = cli("compact", str(src), "-o", str(out), "--archive", str(arch), "--context-window", "8000", "-q")
    assert r.returncode == 0, r.stderr
    assert orjson.loads(_lines(out)[0]) != rec  # compacted: the restore has work to do
    assert cli("repair", "--check", str(out)).returncode == 0  # results written back together still pair with their calls
    mapping = next(e for e in map(orjson.loads, _lines(arch)) if e.get("type") == "map")
    anchors = mapping["anchors"]
    assert any(a is not None and a == b for a, b in zip(anchors, anchors[1:], strict=False)), anchors
    api.restore_file(str(out), str(arch), str(back))
    assert back.read_bytes() == src.read_bytes()


@pytest.mark.parametrize("to", ["anthropic", "sharegpt", "claude-code", "codex"])
@pytest.mark.parametrize(
    "prompts",
    [
        ([{"role": "developer", "content": "dev"}], []),  # Codex wrote it back otherwise than read
        ([{"role": "system", "content": ""}], [{"role": "system", "content": "late"}]),  # Claude Code writes no empty one
        ([{"role": "system", "content": ""}], [{"role": "developer", "content": ""}]),
    ],
)
def test_prompts_a_target_writes_otherwise_are_archived(tmp_path, to, prompts):
    """A prompt a conversion does not write as it was (joined into one, left out when empty, a developer message
    written as another) was neither in the output nor in the archive: restore failed with "archive does not cover
    messages". The output is read back, and what restore would not find there is archived."""
    head, tail = prompts
    msgs = [*head, {"role": "user", "content": "Fix mod.py"}]
    for i in range(30):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": orjson.dumps({"path": f"/m{i}.py"}).decode()}}
        msgs += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"/m{i}.py 4242\n" * 60},
        ]
    msgs += [{"role": "assistant", "content": "done"}, {"role": "user", "content": "now run the tests"}, *tail]
    src = write_jsonl(tmp_path / "s.jsonl", [{"messages": msgs}])
    out, arch = tmp_path / "c.jsonl", tmp_path / "a.jsonl"
    r = cli("compact", str(src), "--context-window", "8000", "--to", to, "-q", "-o", str(out), "--archive", str(arch))
    assert r.returncode == 0, r.stderr
    back = cli("restore", str(out), "--archive", str(arch))
    assert back.returncode == 0, back.stderr
    if to in ("anthropic", "sharegpt"):  # Claude Code and Codex sessions get new line ids
        assert back.stdout == cli("convert", str(src), "--to", to).stdout


def test_the_archives_of_a_chain_restore_together_in_the_order_they_were_written(tmp_path):
    src = write_jsonl(tmp_path / "s.jsonl", tool_session(30, 4000))
    a1, a2, a3 = (str(tmp_path / f"a{k}.jsonl") for k in (1, 2, 3))
    r = cli("prune", str(src), "--archive", a1, "--context-window", "3000")
    assert r.returncode == 0, r.stderr
    r = cli("plan", "--context-window", "3000", "--summary-min", "300", input=r.stdout)
    r = cli("summarize", "--archive", a2, "--context-window", "3000", "--summary-min", "300", input=r.stdout)
    assert r.returncode == 0, r.stderr
    r = cli("repair", "--archive", a3, input=r.stdout)
    assert r.returncode == 0, r.stderr
    compacted = tmp_path / "c.jsonl"
    compacted.write_bytes(r.stdout)
    back = tmp_path / "back.jsonl"
    r = cli("restore", str(compacted), "--archive", a1, "--archive", a2, "--archive", a3, "-o", str(back))
    assert r.returncode == 0, r.stderr
    assert compacted.read_bytes() != src.read_bytes()
    assert back.read_bytes() == src.read_bytes()  # every stage undone, not the last archive's alone
    # in the other order the first stage's archive meets the last stage's output: an error saying the order, nothing written
    other = tmp_path / "other.jsonl"
    r = cli("restore", str(compacted), "--archive", a3, "--archive", a2, "--archive", a1, "-o", str(other))
    assert r.returncode == 3 and b"in the order the stages wrote them" in r.stderr and not other.exists()
    r = cli("restore", str(compacted), "--archive", a2, "--archive", a1, "--archive", a3, "-o", str(other))  # a later step fails
    err = r.stderr.decode()
    assert r.returncode == 3 and f"what undoing {a3} gave (transcript 1)" in err and "compactctl-restore-" not in err, err


@pytest.mark.parametrize("to", ["sharegpt", "anthropic"])
def test_a_converted_transcript_that_holds_a_stub_restores(tmp_path, to):
    """`convert --to sharegpt --archive` of a transcript that holds an earlier run's text (a stub) and parallel results
    that came back out of call order: the archive's `unchanged` record held the print of the input's messages, but
    ShareGPT writes the results in call order, so restore refused the right archive ("this archive belongs to another
    run"; a real Claude Code session of the corpus did it). The print is now of the messages as written."""
    from compactctl.phases.repair import STUB

    def call(cid: str, path: str) -> dict:
        return {"id": cid, "type": "function", "function": {"name": "read", "arguments": orjson.dumps({"path": path}).decode()}}

    rows = [
        {"role": "user", "content": "read both files"},
        {"role": "assistant", "content": None, "tool_calls": [call("a", "a.py"), call("b", "b.py")]},
        {"role": "tool", "tool_call_id": "b", "content": "text of b"},
        {"role": "tool", "tool_call_id": "a", "content": "text of a"},
        {"role": "assistant", "content": None, "tool_calls": [call("c", "c.py")]},
        {"role": "tool", "tool_call_id": "c", "content": STUB},
        {"role": "user", "content": "thanks"},
        {"role": "assistant", "content": "done"},
    ]
    src, out, arch, back = (tmp_path / n for n in ("s.jsonl", "c.jsonl", "a.jsonl", "b.jsonl"))
    write_jsonl(src, rows)
    r = cli("convert", str(src), "--to", to, "-o", str(out), "--archive", str(arch), "-q")
    assert r.returncode == 0, r.stderr
    api.restore_file(str(out), str(arch), str(back))
    assert back.read_bytes() == out.read_bytes()


SAMPLES = ROOT / "sample_transcripts"


@pytest.mark.parametrize("sample", ["long_session.jsonl", "claude_code_session.jsonl", "codex_rollout.jsonl"])
def test_what_a_session_added_after_compaction_is_restored_after_its_originals(tmp_path, sample):
    """From a review: a compacted session that went on (the agent's reply, a new ask: lines added after what the
    run wrote) restored to the first input alone, exit 0: the work done since was lost. It comes back after the
    originals, as it is; in a chain (compact, go on, compact again) too."""
    src = SAMPLES / sample
    c, a = tmp_path / "c.jsonl", tmp_path / "a.jsonl"
    assert cli("compact", str(src), "-o", str(c), "--archive", str(a), "--context-window", "8000", "-q").returncode == 0
    added = _added_lines(sample, c)
    live = tmp_path / "live.jsonl"
    live.write_bytes(c.read_bytes() + b"".join(line + b"\n" for line in added))
    back = cli("restore", str(live), "--archive", str(a))
    assert back.returncode == 0, back.stderr
    assert back.stdout == src.read_bytes() + b"".join(line + b"\n" for line in added)
    if sample != "long_session.jsonl":
        return
    c2, a2 = tmp_path / "c2.jsonl", tmp_path / "a2.jsonl"  # compacted again, once more work was done
    more = [orjson.dumps({"role": "assistant", "content": f"step {i}: " + "checked the parser again " * 60}) for i in range(30)]
    live.write_bytes(live.read_bytes() + b"".join(line + b"\n" for line in more))
    assert cli("compact", str(live), "-o", str(c2), "--archive", str(a2), "--context-window", "8000", "-q").returncode == 0
    chain = cli("restore", str(c2), "--archive", str(a), "--archive", str(a2))
    assert chain.returncode == 0, chain.stderr
    assert chain.stdout == src.read_bytes() + b"".join(line + b"\n" for line in [*added, *more])


def _added_lines(sample: str, compacted) -> list[bytes]:
    if sample == "long_session.jsonl":
        return [b'{"role":"assistant","content":"Tests pass after the fix."}', b'{"role":"user","content":"Now add a changelog entry."}']
    last = orjson.loads(compacted.read_bytes().splitlines()[-1])
    if sample == "claude_code_session.jsonl":
        row = {"parentUuid": last["uuid"], "isSidechain": False, "sessionId": last["sessionId"], "type": "assistant", "uuid": "added-1"}
        row["message"] = {"id": "msg_added", "role": "assistant", "content": [{"type": "text", "text": "Opened PR #42."}]}
        return [orjson.dumps(row)]
    msg = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Opened PR #42."}]}
    return [orjson.dumps({"timestamp": last.get("timestamp", ""), "type": "response_item", "payload": msg})]


@pytest.mark.parametrize("sample", ["claude_code_session.jsonl", "codex_rollout.jsonl", "long_session.jsonl"])
def test_another_runs_output_or_a_changed_one_is_refused_and_nothing_written(tmp_path, sample):
    """From a review: Claude Code and Codex files were restored by line position alone, so another compaction's
    archive, the original given for the compacted file, or one line inserted into it gave a wrong file, exit 0.
    Each is refused (exit 3), naming the file, and no output is written."""
    src = SAMPLES / sample
    c8, a8, c5, a5 = (tmp_path / n for n in ("c8.jsonl", "a8.jsonl", "c5.jsonl", "a5.jsonl"))
    for c, a, w in ((c8, a8, "8000"), (c5, a5, "5000")):
        assert cli("compact", str(src), "-o", str(c), "--archive", str(a), "--context-window", w, "-q").returncode == 0
    assert c8.read_bytes() != c5.read_bytes()
    lines = c8.read_bytes().splitlines(keepends=True)
    inserted = tmp_path / "inserted.jsonl"
    inserted.write_bytes(b"".join([*lines[:2], lines[-1], *lines[2:]]))
    for given, archive in ((c8, a5), (src, a8), (inserted, a8)):
        out = tmp_path / "back.jsonl"
        r = cli("restore", str(given), "--archive", str(archive), "-o", str(out))
        assert r.returncode == 3 and b"is not what the run that wrote" in r.stderr and str(given).encode() in r.stderr, r.stderr
        assert not out.exists()
    assert cli("restore", str(c8), "--archive", str(a8)).stdout == src.read_bytes()


def test_dataset_records_reordered_after_compaction_are_refused_not_given_each_others_messages(tmp_path):
    """From a review: records that share their head and tail (templated data), compacted and then reordered (shuf, a
    split), were restored by position: each record's id and reward with the other's conversation, exit 0."""

    def record(tag: str, reward: float) -> dict:
        msgs = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "Fix parser.py. Never touch tests."}]
        for i in range(40):
            call = {"id": f"call_{i}", "type": "function", "function": {"name": "bash", "arguments": f'{{"command": "cat src/m{i}.py"}}'}}
            msgs.append({"role": "assistant", "content": f"step {i}", "tool_calls": [call]})
            body = f"def f{i}():\n    return {i}\n" * 60 + (f"# variant {tag}" if i < 35 else "")
            msgs.append({"role": "tool", "tool_call_id": f"call_{i}", "content": body})
        msgs.append({"role": "user", "content": "now run the tests"})
        return {"id": tag, "reward": reward, "messages": msgs}

    ds = write_jsonl(tmp_path / "ds.jsonl", [record("A", 1.0), record("B", 0.0)])
    c, a = tmp_path / "c.jsonl", tmp_path / "a.jsonl"
    assert cli("compact", str(ds), "-o", str(c), "--archive", str(a), "--context-window", "3000", "-q").returncode == 0
    first, second = c.read_bytes().splitlines(keepends=True)
    shuffled = tmp_path / "shuffled.jsonl"
    shuffled.write_bytes(second + first)
    r = cli("restore", str(shuffled), "--archive", str(a))
    assert r.returncode == 3 and b"shuffled.jsonl:1:" in r.stderr and r.stdout == b"", r.stderr
    assert cli("restore", str(c), "--archive", str(a)).stdout == ds.read_bytes()


def test_a_moved_copy_of_one_of_two_outputs_named_alike_restores_its_own_input(tmp_path):
    """From a review: under -o DIR/, two inputs named alike (p1/s.jsonl, p2/s.jsonl); a copy of p2's output moved
    elsewhere was restored with p1's records (the first of the tie), a wrong file, exit 0. The records that fit
    what the file holds decide; where none or both fit, it is an error naming the candidates."""
    for p, sample in (("p1", "claude_code_session.jsonl"), ("p2", "codex_rollout.jsonl")):
        (tmp_path / "in" / p).mkdir(parents=True)
        (tmp_path / "in" / p / "s.jsonl").write_bytes((SAMPLES / sample).read_bytes())
    a = tmp_path / "a.jsonl"
    r = cli("compact", str(tmp_path / "in") + "/", "-o", str(tmp_path / "out") + "/", "--archive", str(a), "--context-window", "6000", "-q")
    assert r.returncode == 0, r.stderr
    (tmp_path / "moved").mkdir()
    for p, sample in (("p1", "claude_code_session.jsonl"), ("p2", "codex_rollout.jsonl")):
        moved = tmp_path / "moved" / "s.jsonl"
        moved.write_bytes((tmp_path / "out" / p / "s.jsonl").read_bytes())
        back = cli("restore", str(moved), "--archive", str(a))
        assert back.returncode == 0 and back.stdout == (SAMPLES / sample).read_bytes(), (p, back.stderr)
    moved.write_bytes((SAMPLES / "codex_rollout.jsonl").read_bytes())  # neither run's output
    r = cli("restore", str(moved), "--archive", str(a))
    assert r.returncode == 3 and b"2 inputs of" in r.stderr and b"p1/s.jsonl" in r.stderr, r.stderr


def test_two_archives_in_one_file_a_folder_or_an_output_over_an_input_are_refused(tmp_path):
    """From a review: `cat a1 a2 > both` ended in a traceback (KeyError, exit 1); `restore DIR/` wrote one file
    mixing formats; `-o` naming the archive wrote the originals over it."""
    src = SAMPLES / "long_session.jsonl"
    c1, a1, c2, a2 = (tmp_path / n for n in ("c1.jsonl", "a1.jsonl", "c2.jsonl", "a2.jsonl"))
    assert cli("compact", str(src), "-o", str(c1), "--archive", str(a1), "--context-window", "8000", "-q").returncode == 0
    assert cli("compact", str(c1), "-o", str(c2), "--archive", str(a2), "--context-window", "5000", "-q").returncode == 0
    both = tmp_path / "both.jsonl"
    both.write_bytes(a1.read_bytes() + a2.read_bytes())
    n1 = len(a1.read_bytes().splitlines())
    r = cli("restore", str(c2), "--archive", str(both))
    assert r.returncode == 3 and f"both.jsonl:{n1 + 1}: a second archive begins after line {n1}".encode() in r.stderr, r.stderr
    assert cli("restore", str(c2), "--archive", str(a1), "--archive", str(a2)).stdout == src.read_bytes()
    r = cli("restore", str(tmp_path), "--archive", str(a1))
    assert r.returncode == 2 and b"is a folder" in r.stderr, r.stderr
    (tmp_path / "dd").mkdir()  # an archive or an output that is a folder: exit 4 ("Is a directory") before
    for args in (
        ("--archive", str(tmp_path / "dd")),
        ("--archive", str(a1), "-o", str(tmp_path / "dd")),
        ("--archive", str(a1), "-o", f"{tmp_path}/new/"),
    ):
        r = cli("restore", str(c1), *args)
        assert r.returncode == 2 and b"is a folder" in r.stderr, (args, r.stderr)
    before = a1.read_bytes()
    for target in (a1, c1):
        r = cli("restore", str(c1), "--archive", str(a1), "-o", str(target))
        assert r.returncode == 2 and b"is an input of this restore" in r.stderr, r.stderr
    assert a1.read_bytes() == before


def test_the_library_restore_refuses_originals_without_their_map():
    """From a review: `api.restore(t, entries)` with the originals alone (a record API result's `archived`, no map
    record) returned the compacted transcript unchanged, silently."""
    t = api.read([str(SAMPLES / "long_session.jsonl")])[0]
    c = compactctl.Compactor(compactctl.Options(context_window=8000, archive=True))
    res = c.compact({"messages": read_jsonl((SAMPLES / "long_session.jsonl").read_bytes())})
    assert res.archived
    entries = [{"seq": 0, **a} for a in res.archived]
    with pytest.raises(DataError, match="no map record"):
        api.restore(t, entries)
    assert api.restore(t, []) is t  # nothing archived: as it is


@pytest.mark.parametrize("command", ["convert", "compact"])
def test_what_a_conversion_writes_otherwise_is_archived_even_when_nothing_else_changed(tmp_path, command):
    """From a review: `convert --to anthropic --archive` (and `compact --to` on a transcript under its target) archived
    nothing, though stderr said an audio part, a developer message and a system message from the middle were
    written otherwise: the audio's data was in neither the output nor the archive. They are archived (phase
    `convert`), and restore gives back what `convert --to` gives, as for a compacted one."""
    rows = [
        {"role": "system", "content": "first system"},
        {"role": "user", "content": "hi"},
        {"role": "system", "content": "mid system note"},
        {"role": "developer", "content": "dev note"},
        {"role": "assistant", "content": "hello"},
        {
            "role": "user",
            "content": [{"type": "input_audio", "input_audio": {"data": "QUFBQUFB", "format": "wav"}}, {"type": "text", "text": "listen"}],
        },
        {"role": "assistant", "content": "ok"},
    ]
    src = write_jsonl(tmp_path / "odd.jsonl", rows)
    out, arch = tmp_path / "out.jsonl", tmp_path / "a.jsonl"
    r = cli(command, str(src), "--to", "anthropic", "-o", str(out), "--archive", str(arch), "-q")
    assert r.returncode == 0, r.stderr
    kept = {orjson.dumps(rec["message"]) for rec in read_jsonl(arch.read_bytes()) if rec.get("phase") == "convert"}
    assert {orjson.dumps(rows[i]) for i in (0, 2, 3, 5)} <= kept
    back = cli("restore", str(out), "--archive", str(arch))
    assert back.returncode == 0 and back.stdout == cli("convert", str(src), "--to", "anthropic", "-q").stdout, back.stderr


def test_lines_added_to_a_session_written_in_another_format_are_refused_not_mixed_in(tmp_path):
    """From the review of that change: a Claude Code session compacted `--to openai` and then continued restored to
    its Claude Code lines followed by the OpenAI line added, a file of two formats nothing reads (exit 0)."""
    out, arch, back = tmp_path / "out.jsonl", tmp_path / "a.jsonl", tmp_path / "back.jsonl"
    src = SAMPLES / "claude_code_session.jsonl"
    r = cli("compact", str(src), "--context-window", "8000", "--to", "openai", "-o", str(out), "--archive", str(arch), "-q")
    assert r.returncode == 0, r.stderr
    assert cli("restore", str(out), "--archive", str(arch)).stdout == src.read_bytes()
    out.write_bytes(out.read_bytes() + b'{"role":"user","content":"go on"}\n')
    r = cli("restore", str(out), "--archive", str(arch), "-o", str(back))
    assert r.returncode == 3 and b"what was added after the run wrote it as openai (1 line) cannot be written back" in r.stderr, r.stderr
    assert not back.exists()


def _all_summarized_session() -> list[dict]:
    """An OpenAI chat session without a system prompt: at a small target every message goes into the summary."""
    msgs: list[dict] = [{"role": "user", "content": "do the task " + "x " * 50}]
    for i in range(6):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": f'{{"cmd": "ls d{i}"}}'}}
        msgs += [
            {"role": "assistant", "content": f"step {i}", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"out {i} " + "word " * 300},
        ]
    return [*msgs, {"role": "assistant", "content": "done " + "y " * 300}]


@pytest.mark.parametrize(
    ("layout", "given_as"), [("dataset", "openai"), ("session", "openai"), ("dataset", "anthropic"), ("session", "anthropic")]
)
def test_a_session_whose_every_message_was_summarized_restores_in_the_format_it_was_written_in(tmp_path, layout, given_as):
    """Written as Anthropic's messages (`--to anthropic`, or an Anthropic input), a transcript whose every message
    went into the summary holds the summary alone: role and text, which reads as OpenAI chat, and restore wrote the
    originals as OpenAI chat (`"tool_calls"`, not `tool_use` blocks). The map now says what the run wrote it as."""
    msgs = _all_summarized_session()
    src = write_jsonl(tmp_path / "s.jsonl", [{"messages": msgs}] if layout == "dataset" else msgs)
    to: tuple[str, ...] = ("--to", "anthropic")
    if given_as == "anthropic":  # the input itself in Anthropic's form, compacted without --to
        src.write_bytes(cli("convert", str(src), "--to", "anthropic", "-q").stdout)
        to = ()
    expected = cli("convert", str(src), *to, "-q").stdout if to else src.read_bytes()
    out, arch = tmp_path / "c.jsonl", tmp_path / "a.jsonl"
    r = cli("compact", str(src), *to, "-o", str(out), "--archive", str(arch), "--context-window", "400", "-q")
    assert r.returncode == 0, r.stderr
    assert b"tool_use" not in out.read_bytes() and b"CONTEXT COMPACTION" in out.read_bytes()  # nothing but the summary
    back = cli("restore", str(out), "--archive", str(arch))
    assert back.returncode == 0, back.stderr
    assert back.stdout == expected
    [m] = [rec for rec in read_jsonl(arch.read_bytes()) if rec.get("type") == "map"]
    assert m["written_as"] == "anthropic"


def _parallel_batches() -> list[dict]:
    """Turns of three parallel reads whose middle result alone is long: prune archives it, its siblings stay."""
    msgs: list[dict] = [{"role": "system", "content": "sys"}, {"role": "user", "content": "read the files"}]
    for t in range(4):
        calls = [
            {"id": f"c{t}_{k}", "type": "function", "function": {"name": "read_file", "arguments": f'{{"path": "f{t}_{k}.py"}}'}}
            for k in range(3)
        ]
        msgs.append({"role": "assistant", "content": f"reading batch {t}", "tool_calls": calls})
        msgs += [{"role": "tool", "tool_call_id": f"c{t}_{k}", "content": f"line of f{t}\n" * (400 if k == 1 else 2)} for k in range(3)]
    return [*msgs, {"role": "assistant", "content": "all read"}, {"role": "user", "content": "now summarize them"}]


@pytest.mark.parametrize("layout", ["dataset", "session"])
@pytest.mark.parametrize("to", [None, "openai", "anthropic", "sharegpt"])
def test_one_archived_result_of_parallel_calls_restores_beside_its_kept_siblings(tmp_path, layout, to):
    """An OpenAI chat turn of parallel calls whose one result alone was archived, written --to anthropic: the kept
    results held the places they were read from in the output, the archived one none, and restore wrote the turn's
    results as two or three user messages where `convert --to anthropic` writes one."""
    msgs = _parallel_batches()
    src = write_jsonl(tmp_path / "s.jsonl", [{"messages": msgs}] if layout == "dataset" else msgs)
    out, arch = tmp_path / "c.jsonl", tmp_path / "a.jsonl"
    conv = ("--to", to) if to else ()
    r = cli("compact", str(src), *conv, "-o", str(out), "--archive", str(arch), "--context-window", "3000", "-q")
    assert r.returncode == 0, r.stderr
    archived = [rec for rec in read_jsonl(arch.read_bytes()) if rec.get("phase") == "prune"]
    assert {rec["message"]["tool_call_id"] for rec in archived} >= {"c0_1", "c1_1"}  # the long results
    assert to == "sharegpt" or b"c0_0" in out.read_bytes() and b"c0_2" in out.read_bytes()  # their siblings kept (ShareGPT has no ids)
    back = cli("restore", str(out), "--archive", str(arch))
    assert back.returncode == 0, back.stderr
    assert back.stdout == (cli("convert", str(src), *conv, "-q").stdout if to else src.read_bytes())


def _written_calls(results_first: int) -> list[dict]:
    """Turns of two parallel writes whose first call's arguments (over 1,000 characters) hold `\\u` escapes, as
    Python's json.dumps writes them; the results logged as they finished (the short one first), the long one
    pruned."""
    import json

    msgs: list[dict] = [{"role": "system", "content": "sys"}, {"role": "user", "content": "write the files"}]
    for t in range(6):
        body = ("caf\u00e9 \u2014 r\u00e9sum\u00e9 \U0001f600 tab\there\n" * 30, "x")
        calls = [
            {
                "id": f"c{t}_{k}",
                "type": "function",
                "function": {"name": "write", "arguments": json.dumps({"path": f"f{t}_{k}.py", "content": body[k]})},
            }
            for k in range(2)
        ]
        msgs.append({"role": "assistant", "content": f"writing batch {t}", "tool_calls": calls})
        msgs += [
            {"role": "tool", "tool_call_id": f"c{t}_{k}", "content": f"wrote f{t}_{k}\n" * (1500 if k == 0 else 1)}
            for k in (results_first, 1 - results_first)
        ]
    return [*msgs, {"role": "assistant", "content": "all written"}, {"role": "user", "content": "now check them"}]


@pytest.mark.parametrize("results_first", [1, 0])
def test_an_archived_result_finds_its_kept_call_whose_arguments_hold_escapes_beyond_the_cut(tmp_path, results_first):
    """Written --to sharegpt, an archived result is tied to the kept call its archive record names by the first
    1,000 characters of that call's arguments; arguments written with `\\u` escapes (json.dumps) never matched the
    call read back from ShareGPT (orjson writes `é`), so the result kept its own id and ShareGPT's writer, which
    puts a turn's results in call order, put it after its sibling where `convert --to sharegpt` puts it first."""
    src = write_jsonl(tmp_path / "s.jsonl", [{"messages": _written_calls(results_first)}])
    out, arch = tmp_path / "c.jsonl", tmp_path / "a.jsonl"
    r = cli("prune", str(src), "--to", "sharegpt", "-o", str(out), "--archive", str(arch), "--context-window", "20000", "-q")
    assert r.returncode == 0, r.stderr
    records = [rec for rec in read_jsonl(arch.read_bytes()) if rec.get("phase") == "prune"]
    assert records and all(len(rec["call"]["arguments"]) == 1000 and "\\u00e9" in rec["call"]["arguments"] for rec in records)
    back = cli("restore", str(out), "--archive", str(arch))
    assert back.returncode == 0, back.stderr
    assert back.stdout == cli("convert", str(src), "--to", "sharegpt", "-q").stdout


@pytest.mark.parametrize("pad", range(13))
def test_a_call_matches_its_record_wherever_the_cut_ends_in_an_escape(pad):
    """The cut at 1,000 characters may end inside `\\u00e9`, or between or inside a surrogate pair's two escapes."""
    import json

    from compactctl.model import ToolCall
    from compactctl.originals import _is_call

    args = json.dumps({"path": "p" * pad, "content": 'caf\u00e9 \U0001f600 \\u00e9 "q"\n' * 100})
    kept = ToolCall("sg_2_0", "write", orjson.dumps(json.loads(args)).decode())  # as ShareGPT's call reads back
    assert _is_call(kept, {"name": "write", "arguments": args[:1000]})
    assert not _is_call(kept, {"name": "write", "arguments": args[:999] + "X"})
    assert not _is_call(kept, {"name": "read", "arguments": args[:1000]})


@pytest.mark.parametrize("to", [None, "anthropic", "sharegpt"])
def test_an_archived_failed_result_restores_with_its_error_flag(tmp_path, to):
    """An archived original is kept in OpenAI chat's shape, which has no key for a failed result's flag: an Anthropic
    `tool_result` with `"is_error": true` (or a Gemini or OpenHands failed result written --to anthropic) that was
    archived came back without it. The archive record now keeps it beside the message."""
    src = write_jsonl(tmp_path / "s.jsonl", [{"messages": _parallel_batches()}])
    [rec] = read_jsonl(cli("convert", str(src), "--to", "anthropic", "-q").stdout)
    for m in rec["messages"]:
        for b in m["content"] if isinstance(m["content"], list) else []:
            if b.get("type") == "tool_result" and b["tool_use_id"] in ("c0_1", "c1_1", "c2_0"):
                b["is_error"] = True
    src = write_jsonl(src, [rec])
    out, arch = tmp_path / "c.jsonl", tmp_path / "a.jsonl"
    conv = ("--to", to) if to else ()
    r = cli("compact", str(src), *conv, "-o", str(out), "--archive", str(arch), "--context-window", "3000", "-q")
    assert r.returncode == 0, r.stderr
    failed = [x for x in read_jsonl(arch.read_bytes()) if x.get("is_error")]
    assert {x["message"]["tool_call_id"] for x in failed} == {"c0_1", "c1_1"}  # archived; c2_0 kept
    back = cli("restore", str(out), "--archive", str(arch))
    assert back.returncode == 0, back.stderr
    assert back.stdout == (cli("convert", str(src), *conv, "-q").stdout if to else src.read_bytes())
    assert back.stdout.count(b'"is_error":true') == (0 if to == "sharegpt" else 3)
