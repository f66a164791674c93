"""harness.py: what the person asked, told from what the agent's harness wrote into the transcript (Claude Code's
tags and slash-command echoes, Codex's environment context and IDE context, SWE-agent's and mini-swe-agent's text
actions and observations), pinned where mutation testing (bench/mutation.py) found that no test looked."""

from __future__ import annotations

import orjson

from compactctl import api, from_messages
from compactctl.harness import HARNESS_ASK, HARNESS_ASK_CHARS, ask_words, human_text, is_injected
from compactctl.model import Message, last_user_index
from compactctl.phases.prune import PruneOptions
from compactctl.summarizers.facts import extract
from compactctl.tokens import make_counter

from .rows import T, call

COUNTER = make_counter("gpt-4o")


def res(cid: str, text: str) -> dict:
    return {"role": "tool", "tool_call_id": cid, "content": text}


# ---- Codex


def test_the_working_directory_is_the_one_the_harness_states_not_one_an_output_or_the_agent_quotes():
    """Codex states the session's directory in `<environment_context><cwd>`. A command's output that prints another
    session's rollout (`grep -r "<cwd>" ~/.codex/sessions`) and the agent's reply quoting it state nothing: before the
    summarized span as inside it, the directory stays the harness's."""
    env = "<environment_context>\n  <cwd>/home/ana/shop</cwd>\n  <approval_policy>on-request</approval_policy>\n</environment_context>"
    other = (
        '{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\\n  <cwd>/home/ana/blog</cwd>"}]}'
    )
    rows = [
        {"role": "user", "content": env},
        {"role": "user", "content": "Which directory did my other Codex session run in?"},
        call("c1", "shell", {"command": ["bash", "-lc", 'grep -rh "<cwd>" ~/.codex/sessions | head -1']}),
        res("c1", other),
        {"role": "assistant", "content": "It ran in <cwd>/home/ana/blog</cwd>."},
        {"role": "user", "content": "Thanks. Now fix the failing cart test."},
        call("c2", "shell", {"command": ["bash", "-lc", "npm test -- cart"]}),
        res("c2", "1 failing"),
    ]
    msgs = T(rows).messages
    for start in (0, 5):  # the output and the reply inside the span, then before it
        assert extract(msgs, start).cwd == "/home/ana/shop"


def test_a_codex_ide_selection_that_quotes_the_request_heading_leaves_the_request_the_persons():
    """Codex's IDE extension writes the context (open tabs, the active selection) before "## My request for Codex:"
    and the request after it; a selection whose code holds that heading is still context."""
    text = (
        "# Context from my IDE setup:\n\n## Active file: src/prompt.ts\n\n## Active selection of the file:\n"
        'const HEADING = "## My request for Codex:";\n'
        "## Open tabs:\n- prompt.ts: src/prompt.ts\n\n## My request for Codex:\nRename HEADING to REQUEST_HEADING everywhere\n"
    )
    m = Message(role="user", content=text)
    assert not is_injected(m) and human_text(m) == "Rename HEADING to REQUEST_HEADING everywhere"


# ---- Claude Code


def test_a_command_echo_without_its_name_tag_still_gives_the_arguments_the_person_typed():
    """The person's arguments of a slash command are their ask even when the echo has no `<command-name>` (only the
    message and the arguments): the arguments alone, tags left out."""
    m = Message(
        role="user", content="<command-message>review-pr</command-message>\n<command-args>142 focus on the auth changes</command-args>"
    )
    assert not is_injected(m) and human_text(m) == "142 focus on the auth changes"
    assert last_user_index([Message(role="user", content="go on"), Message(role="assistant", content="ok"), m]) == 2


# ---- SWE-agent and mini-swe-agent


def test_a_swe_agent_function_call_is_one_action_not_a_second_text_action_without_a_result(tmp_path):
    """SWE-agent's function-calling trajectories keep the parsed `action` (and `thought`) beside the turn's
    `tool_calls`, answered by `tool` turns: each command is one action with its result, not also a text action that
    "no result recorded" answers."""

    def step(k: int, name: str, args: dict, action: str, out: str) -> list[dict]:
        cid = f"call_{k}"
        fn = {"name": name, "arguments": orjson.dumps(args).decode()}
        return [
            {
                "role": "assistant",
                "content": f"Step {k}: let me {action}.",
                "thought": f"Step {k}: let me {action}.",
                "action": action,
                "agent": "main",
                "tool_calls": [{"id": cid, "type": "function", "function": fn}],
                "message_type": "action",
            },
            {"role": "tool", "content": out, "agent": "main", "message_type": "observation", "tool_call_ids": [cid]},
        ]

    history = [
        {"role": "system", "content": "SETTING: You are an autonomous programmer.", "agent": "main", "message_type": "system_prompt"},
        {"role": "user", "content": "We're currently solving the following issue: SyntaxError in missing_colon.py", "agent": "main"},
        *step(1, "find_file", {"file_name": "missing_colon.py"}, "find_file missing_colon.py", "Found 1 matches: tests/missing_colon.py"),
        *step(2, "bash", {"command": "python tests/missing_colon.py"}, "python tests/missing_colon.py", "SyntaxError: expected ':'"),
    ]
    src = tmp_path / "fc.traj"
    src.write_bytes(orjson.dumps({"environment": "swe_main", "trajectory": [], "history": history, "info": {}}))
    [t] = api.read([str(src)])
    actions = extract(t.messages).actions
    assert len(actions) == 2 and all(a.answered for a in actions)
    assert not any("no result recorded" in a.line for a in actions)


def test_a_command_the_system_prompt_shows_is_not_what_the_demonstration_after_it_answers(tmp_path):
    """A SWE-agent system prompt that shows its reply format with a ```bash example (`ls -a`), then the
    demonstration (an observation, flagged `is_demo`): the demonstration's digest is an observation's, not the
    output of the example command."""
    history = [
        {
            "role": "system",
            "content": "SETTING: you are an autonomous programmer.\nReply with one discussion and one command, as in:\n"
            "DISCUSSION\nFirst I'll list the files.\n```bash\nls -a\n```\n",
            "agent": "primary",
        },
        {
            "role": "user",
            "content": "Here is a demonstration of how to correctly accomplish this task.\n" + "demo step\n" * 300,
            "agent": "primary",
            "is_demo": True,
        },
        {"role": "user", "content": "We're currently solving the following issue: parse_header drops the charset", "agent": "primary"},
    ]
    for k in range(4):
        action = f'search_file "parse_header_{k}" src/http/h{k}.py'
        history.append(
            {
                "role": "assistant",
                "content": f"Let me look.\n```\n{action}\n```",
                "thought": "Let me look.",
                "action": action,
                "agent": "primary",
            }
        )
        history.append(
            {"role": "user", "content": f"Found 1 matches for parse_header_{k}:\n" + "    context line\n" * 150, "agent": "primary"}
        )
    src = tmp_path / "x.traj"
    src.write_bytes(orjson.dumps({"environment": "swe_main", "trajectory": [], "history": history, "info": {}}))
    [t] = api.read([str(src)])
    assert t.messages[1].observation
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10))
    demo = out.messages[1].text()
    assert demo.startswith("[observation]") and "ls -a" not in demo


def test_a_mini_swe_agent_action_is_the_last_bash_block_not_a_snippet_its_thought_quotes():
    """mini-swe-agent runs the ```bash block of a turn; a thought may quote a README's ```sh snippet before it. The
    action (what the `<returncode>` observation answers) is the last block."""
    rows = [
        {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
        {"role": "user", "content": "Please solve this issue: the tests of the parser fail"},
        {
            "role": "assistant",
            "content": "THOUGHT: the README says to install first:\n\n```sh\nmake install\n```\n\n"
            "but the package is installed; run the parser's tests.\n\n```bash\npytest -x tests/test_parser.py\n```",
        },
        {"role": "user", "content": "<returncode>1</returncode>\n<output>\nFAILED tests/test_parser.py::test_charset\n</output>"},
    ]
    t = from_messages(rows)
    assert t.messages[3].observation and last_user_index(t.messages) == 1
    [action] = extract(t.messages).actions
    assert action.command == "pytest -x tests/test_parser.py" and action.answered


def test_a_command_echo_merged_with_its_output_keeps_the_output_as_a_harness_note():
    """A converter that makes turns alternate (ShareGPT) merges Claude Code's `/model` echo and the local command's
    output into one user turn: the echo alone says nothing, the output is a note of the session."""
    echo = "<command-name>/model</command-name>\n<command-message>model</command-message>\n<command-args></command-args>"
    rows = [
        {"role": "user", "content": "add the initials to NavUser"},
        {"role": "assistant", "content": "done, see getInitials"},
        {"role": "user", "content": echo + "\n<local-command-stdout>Set model to opus_4</local-command-stdout>"},
        {"role": "user", "content": echo},
        {"role": "assistant", "content": "ok"},
    ]
    msgs = T(rows).messages
    assert [human_text(m) for m in msgs[2:4]] == ["", ""] and last_user_index(msgs) == 0
    [note] = extract(msgs).notices
    assert "Set model to opus_4" in note


def test_a_harness_message_of_exactly_the_carried_length_is_carried_whole_and_not_said_cut():
    """When every user message is the harness's, the latest stands for the last ask: carried up to HARNESS_ASK_CHARS
    characters whole, a longer one cut and marked so."""
    hook = "<system-reminder>\nPostToolUse:Edit hook additional context: {}\n</system-reminder>"
    said = "[CREDO] " + "x" * (HARNESS_ASK_CHARS - len("[CREDO] "))
    assert ask_words(Message(role="user", content=hook.format(said))) == HARNESS_ASK + said
    longer = ask_words(Message(role="user", content=hook.format(said + "y")))
    assert longer.startswith(HARNESS_ASK + "[CREDO] x") and longer.endswith("…[cut]") and "y" not in longer
