"""summarizers/facts.py: what the fact extractor takes from a span (identifiers, findings, decisions, answers, the lines
of actions and the errors they raise), pinned where mutation testing (bench/mutation.py) found that no test looked."""

from __future__ import annotations

import re

import orjson

from compactctl import api
from compactctl.markers import OUTLINE_LINE
from compactctl.model import ToolCall
from compactctl.phases.prune import PruneOptions
from compactctl.summarizers.facts import Facts, extract, identifiers_in, plan_lines, says_something
from compactctl.tokens import make_counter

from .rows import T, call

COUNTER = make_counter("gpt-4o")


def res(cid: str, text: str, error: bool = False) -> dict:
    return {"role": "tool", "tool_call_id": cid, "content": text, **({"is_error": True} if error else {})}


def facts(*rows: dict) -> Facts:
    return extract(T([{"role": "user", "content": "go on"}, *rows]).messages)


# ---- identifiers


def test_a_port_is_an_identifier_whether_written_after_a_host_or_after_the_word_port():
    """`localhost:8080` and "port 5432" both name a port; a URL with a port names it too."""
    assert identifiers_in("start it on localhost:8080, then the db on port 5432") == ["port 8080", "port 5432"]
    assert identifiers_in("open http://127.0.0.1:3000/x") == ["http://127.0.0.1:3000/x", "port 3000", "127.0.0.1"]
    f = extract(T([{"role": "user", "content": "The API listens on [::1]:9000, not on port 80."}]).messages)
    assert f.identifiers == ["port 9000", "port 80"]


def test_a_hash_is_an_identifier_unless_it_is_a_piece_of_a_uuid():
    """A UUID is one identifier, not a UUID and the hash its first group looks like; a commit beside it is one."""
    text = "session 550e8400-e29b-41d4-a716-446655440000 at commit 1a2b3c4d5e"
    assert identifiers_in(text) == ["550e8400-e29b-41d4-a716-446655440000", "1a2b3c4d5e"]
    assert identifiers_in("at commit 1a2b3c4d5e") == ["1a2b3c4d5e"]


def test_a_greeting_of_up_to_three_words_is_no_goal():
    """ "Hi there, thanks!" (three words of greeting) says no goal: the session's first request is the ask after it."""
    rows = [
        {"role": "user", "content": "Hi there, thanks!"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Audit the parser."},
    ]
    f = extract(T(rows).messages)
    assert f.first_request == "Audit the parser." and f.requests == ["Hi there, thanks!", "Audit the parser."]


# ---- what the agent said: findings, decisions, answers


def test_a_sentence_of_twenty_characters_is_a_finding_and_a_shorter_one_is_not():
    """Where things stand is the latest statement that says something: "The cache was stale." (20 characters) does,
    "The cache is stale." (19) is as short as "Found it." and does not; the agent's next step ("Let me fix it:") then
    points back to the finding only in the first case."""
    assert says_something(["The cache was stale."]) and not says_something(["The cache is stale."])
    for said, finding in (("The cache was stale.", "The cache was stale."), ("The cache is stale.", None)):
        f = facts({"role": "assistant", "content": said}, {"role": "assistant", "content": "Let me fix it:"})
        assert (f.last_finding, f.last_assistant) == (finding, "Let me fix it:")


def test_a_decision_is_a_sentence_of_12_to_300_characters():
    """A decision sentence shorter than 12 characters says too little to keep ("I'll use X."), one longer than 300 is
    no decision line (a paragraph); "I'll use it." (12) and a 300-character one are kept."""
    long_one = "Let's use the v2 API " + "x" * 278 + "."
    assert len(long_one) == 300
    for said, kept in (("I'll use it.", True), ("I'll use X.", False), (long_one, True), (long_one[:-1] + "x.", False)):
        assert facts({"role": "assistant", "content": said}).decisions == ([said] if kept else []), said


def test_a_list_number_is_no_answer_to_the_persons_question():
    """The answer to the person's question is the agent's first sentence that says something: not the list's
    numbers ("10.", a sentence of three characters), nor the line that introduces the list."""
    f = extract(
        T(
            [
                {"role": "user", "content": "Which steps are left?"},
                {"role": "assistant", "content": "Left:\n10. Drop the cache.\n11. Ship."},
            ]
        ).messages
    )
    assert f.questions == [("Which steps are left?", "Drop the cache.")]


def test_a_courtesy_is_no_answer_and_one_reply_answers_the_latest_questions_once():
    """ "Of course!" or "Sure, I can help with that!" answers nothing: the answer is the next sentence that says
    something. The questions of one message are one question with one answer, and a reply answers only the latest
    questions asked (not an earlier one the agent left unanswered)."""
    rows = [
        {"role": "user", "content": "Which port does the API use?"},
        {"role": "assistant", "content": "Of course! Sure, I can help with that! The API listens on 8080."},
        {"role": "user", "content": "Is the cache on? And how large is it?"},
        call("a", "bash", {"command": "cat cache.toml"}),
        res("a", "enabled = true"),
        {"role": "user", "content": "Where is the log written?"},
        {"role": "assistant", "content": "I'm sorry to hear that. The log goes to /var/log/app.log."},
        {"role": "user", "content": "thanks"},
        {"role": "assistant", "content": "Certainly!"},
    ]
    assert extract(T(rows).messages).questions == [
        ("Which port does the API use?", "The API listens on 8080."),
        ("Is the cache on? And how large is it?", None),
        ("Where is the log written?", "The log goes to /var/log/app.log."),
    ]


def test_a_question_of_an_ask_still_pending_is_not_resolved():
    """The Active Task (or any ask no final reply answered) is not a resolved question: Gemini's "Of course. I'll start
    by reviewing the codebase", then calls, answered it at most in passing; nor a reply that went on to call tools."""
    rows = [
        {"role": "user", "content": "Can you audit this codebase?"},
        {**call("a", "bash", {"command": "ls"}), "content": "Of course. I'll start by reviewing the codebase."},
        res("a", "main.py"),
    ]
    assert extract(T(rows).messages).questions == []
    rows = [
        {"role": "user", "content": "Could I get a refund? And how much will this save me?"},
        {
            **call("a", "update_reservation_flights", {"reservation_id": "JG7FMM"}),
            "content": "The total savings will be $23,553. I will now proceed with the refunds.",
        },
        res("a", "{}"),
    ]
    assert extract(T(rows).messages).questions == []
    rows[-1:] = [res("a", "{}"), {"role": "assistant", "content": "Done: both refunds are on their way."}]
    assert extract(T(rows).messages).questions == [
        ("Could I get a refund? And how much will this save me?", "The total savings will be $23,553.")
    ]


def test_the_persons_answers_to_the_agents_questions_keep_each_question_and_answer_to_300_characters():
    """A long question the agent asked (Claude Code's AskUserQuestion) and the person's long answer are resolved
    questions, each cut to 300 characters."""
    q = "Should the exporter " + "really " * 60 + "send traces?"
    a = "Yes, " + "always " * 60 + "send them."
    f = facts(
        call("a", "AskUserQuestion", {"questions": [{"question": q}]}),
        res("a", f'User has answered your questions: "{q}"="{a}". You can now continue.'),
    )
    assert f.questions == [(q[:300], a[:300])] and f.actions == []


def test_a_summary_in_the_span_is_its_prior_summary_not_an_ask():
    """An earlier summary inside the span (another tool's, Claude Code's "This session is being continued ...") is
    what the new summary carries on from; it is no request, nor an ask still pending."""
    summary = (
        "This session is being continued from a previous conversation that ran out of context.\n\n1. Primary Request: port the CLI to typer"
    )
    rows = [
        {"role": "user", "content": "port the CLI"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": summary},
        {"role": "user", "content": "now fix the tests"},
    ]
    f = extract(T(rows).messages, 2)
    assert f.prior_summary == summary
    assert f.requests == f.pending == ["now fix the tests"] and f.first_request == "now fix the tests"


# ---- plans


def test_a_plan_written_as_text_keeps_each_line_to_300_characters():
    """A plan written as text (Claude Code's ExitPlanMode) is kept verbatim line by line, a long line cut to 300
    characters."""
    para = " ".join(f"word{k}" for k in range(100))
    lines = plan_lines(ToolCall("p", "ExitPlanMode", orjson.dumps({"plan": f"# Plan\n\n{para}\n- step two"}).decode()))
    assert lines == ["# Plan", para[:300], "- step two"]


# ---- actions: their lines and the errors they raise


def test_a_write_keeps_the_first_four_quoted_phrases_of_its_code_and_one_without_any_says_none():
    """What a later log or test quotes again: a write's line ends with the first four quoted phrases of its code (in
    order); code that quotes nothing, or edits with no phrase, add nothing to the line."""
    code = "".join(f'raise Error("failure number {k}")\n' for k in range(1, 7))
    plain = "x = 1\ny = compute(x)\n"
    f = facts(
        call("w", "Write", {"file_path": "/p/errors.py", "content": code}),
        res("w", "File created successfully at: /p/errors.py"),
        call("v", "Write", {"file_path": "/p/plain.py", "content": plain}),
        res("v", "File created successfully at: /p/plain.py"),
        call("e", "Edit", {"file_path": "/p/plain.py", "old_string": "x = 1", "new_string": "x = 'a'"}),
        res("e", "The file /p/plain.py has been updated."),
    )
    written, bare, edited = (a.line for a in f.actions)
    assert written.endswith(' strings: "failure number 1" "failure number 2" "failure number 3" "failure number 4"')
    assert "strings:" not in bare and "strings:" not in edited


def test_a_short_error_of_a_call_with_no_command_says_the_first_file_it_touched():
    """An error line that names no path ("error: hunk did not apply") says where it happened: a failed patch over two
    files, its first; every file it named is listed as an edit that failed."""
    patch = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** Update File: src/b.py\n@@\n-x\n+y\n*** End Patch"
    f = facts(call("p", "apply_patch", {"input": patch}), res("p", "error: hunk did not apply", error=True))
    assert f.errors == ["error: hunk did not apply (src/a.py)"]
    assert f.files == {"src/a.py": {"edit-failed"}, "src/b.py": {"edit-failed"}}


def test_a_digested_failed_command_keeps_its_outline_on_its_first_line_and_its_error_lines_after():
    """A command prune digested (`cat -n` of a file and of one missing) gives its line, its outline after the first line
    (where each definition is) and its reference, then its error lines, each an error of the span."""
    body = "defmodule MyApp.Sessions do\n  def list(opts) do\n    Repo.all(opts)\n  end\nend\n" + "\n".join(
        f"# filler line {i} with a_name_{i}" for i in range(300)
    )
    numbered = "\n".join(f"{n:6d}\t{line}" for n, line in enumerate(body.split("\n"), 1))
    error = "Error: cat: lib/missing.ex: No such file or directory"
    rows = [
        {"role": "user", "content": "read them"},
        call("c", "bash", {"command": "cat -n lib/my_app/sessions.ex lib/missing.ex"}),
        res("c", f"{numbered}\n{error}\nexit code 1", error=True),
        {"role": "assistant", "content": "One is missing."},
    ]
    out, _ = api.prune(T(rows), COUNTER, PruneOptions(protect_tokens=10))
    assert OUTLINE_LINE in out.messages[2].text()
    f = extract(out.messages)
    first, *errors = f.actions[0].line.split("\n")
    assert first.startswith("[bash] ran `cat -n lib/my_app/sessions.ex lib/missing.ex` -> exit 1")
    assert re.search(r", \d+ lines output; outline: MyApp.Sessions 1-5 list\(opts\) 2-4 \[ref [0-9a-f]{8}\]$", first), first
    assert errors == [f"  {error}"] and f.errors == [error]


def test_a_command_run_in_a_directory_of_its_own_says_where_after_the_command_whatever_it_quotes():
    """A command run in a workdir (Codex's) says where right after the command: not inside a command that holds
    "` -> " (a grep for a markdown arrow), nor in an error line that holds one; the session's own directory is not
    said."""
    shell = {"command": ["bash", "-lc", "grep -n '` -> ' notes.md"], "workdir": "/repo/pkg"}
    f = facts(call("s", "shell", shell), res("s", "12: `a` -> b"))
    assert f.actions[0].line == "[shell] ran `grep -n '` -> ' notes.md` (in /repo/pkg) -> ok, 12 chars output"
    failing = {"command": ["bash", "-lc", "make check"], "workdir": "/repo/pkg"}
    f = facts(call("s", "shell", failing), res("s", "error: renamed `old_name` -> `new_name` breaks callers\nexit code 2", error=True))
    assert f.actions[0].line.split("\n") == [
        "[shell] ran `make check` (in /repo/pkg) -> exit 2: error: renamed `old_name` -> `new_name` breaks callers, 2 lines output",
        "  error: renamed `old_name` -> `new_name` breaks callers",
    ]
    secret = {
        "command": ["bash", "-lc", "export OPENAI_API_KEY=sk-proj-" + "4fG7hJ2kL9mN3pQ8rS1tV6wX0yZ5aB7cD9eF\nmake deploy"],
        "workdir": "/repo/pkg",
    }
    f = facts(call("s", "shell", secret), res("s", "done"))  # the line shows the command redacted
    # (a command that handles a key: its output is not shown, only its size)
    assert f.actions[0].line == "[shell] ran `export OPENAI_API_KEY=[REDACTED OPENAI KEY] make deploy` (in /repo/pkg) -> ok, 4 chars output"
    rows = [{"role": "user", "content": "<cwd>/repo/pkg</cwd>\ngo on"}, call("s", "shell", failing), res("s", "ok")]
    assert extract(T(rows).messages).actions[0].line == '[shell] ran `make check` -> ok, output "ok"'


def test_an_error_line_shorter_than_100_characters_says_where_it_happened():
    """A short error line that names no path says what failed (the command); one of 100 characters or more says enough
    to stand alone."""
    for n, placed in ((99, True), (100, False)):
        error = "Error: " + "x" * (n - 7)
        f = facts(call("c", "bash", {"command": "make"}), res("c", f"{error}\nexit code 2", error=True))
        assert f.errors == [f"{error} (`make`)" if placed else error], n


def test_an_error_line_says_its_command_on_one_line_and_marks_where_it_was_cut():
    """The command an error line names (a heredoc's commit message, an editor's multi-line edit) is said on one line,
    its whitespace runs one space, with "…" where it was cut: not its raw lines, nor a cut that reads as whole."""
    commit = "git commit -m \"$(cat <<'EOF'\nfeat: unified transcript visual\n\nlong body of the message\nEOF\n)\""
    f = facts(call("c", "bash", {"command": commit}), res("c", "error: pathspec did not match\nexit code 1", error=True))
    (error,) = f.errors
    assert "\n" not in error
    assert error == "error: pathspec did not match (`git commit -m \"$(cat <<'EOF' feat: unified transcript visua…`)"
    f = facts(call("c", "bash", {"command": "make"}), res("c", "error: no rule\nexit code 2", error=True))
    assert f.errors == ["error: no rule (`make`)"]  # a short command whole, no mark


def test_an_error_a_later_success_of_the_same_command_or_edit_resolved_is_marked_so_and_listed_after_the_open_ones():
    """A test run that failed and later passed, an edit of a file that failed and a later one that succeeded: their
    error lines say they were resolved, after the errors still open (a different command that failed and was not run
    again); the retention guard looks for what the error said."""
    from compactctl.summarizers.guard import key_facts

    f = facts(
        call("a", "bash", {"command": "mix test test/a_test.exs"}),
        res("a", "Assertion with =~ failed\nexit code 1", error=True),
        call("b", "apply_patch", {"input": "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** End Patch"}),
        res("b", "error: hunk did not apply", error=True),
        call("c", "bash", {"command": "make lint"}),
        res("c", "error: unused import\nexit code 2", error=True),
        call("d", "bash", {"command": "mix  test test/a_test.exs"}),
        res("d", "12 tests, 0 failures\nexit code 0"),
        call("e", "apply_patch", {"input": "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+z\n*** End Patch"}),
        res("e", "Success. Updated the following files:\nM src/a.py"),
    )
    assert f.errors == [
        "error: unused import (`make lint`)",
        "Assertion with =~ failed (`mix test test/a_test.exs`) (resolved later: the same command succeeded)",
        "error: hunk did not apply (src/a.py) (resolved later: a later edit of the file succeeded)",
    ]
    assert key_facts(f)["Critical Context"] == [
        "error: unused import (`make lint`)",
        "Assertion with =~ failed (`mix test test/a_test.exs`)",
        "error: hunk did not apply (src/a.py)",
    ]
    again = facts(
        call("a", "bash", {"command": "make lint"}),
        res("a", "error: unused import\nexit code 2", error=True),
        call("b", "bash", {"command": "make lint"}),
        res("b", "error: unused import\nexit code 2", error=True),
    )
    assert again.errors == ["error: unused import (`make lint`)"]  # run again and failed again: still open
    cut_short = facts(
        call("a", "bash", {"command": "pytest -x"}),
        res("a", "FAILED test_a.py::test_one\nexit code 1", error=True),
        call("b", "bash", {"command": "pytest -x"}),  # interrupted: no result came back, it succeeded at nothing
        {"role": "user", "content": "[Request interrupted by user]"},
    )
    assert [e for e in cut_short.errors if "resolved" in e] == []
    plan = facts(
        call("p", "ExitPlanMode", {"plan": "# Move the button"}),
        res("p", "Error: The user doesn't want to proceed with this tool use. The tool use was rejected."),
        call("q", "ExitPlanMode", {"plan": "# Move the button, keep the input"}),
        res("q", "User has approved your plan."),
    )
    assert [e.split(" (resolved later: ")[1] for e in plan.errors] == ["a later plan was approved)"]


def test_a_decision_gives_a_reason_or_a_choice_and_narration_of_the_next_step_is_none():
    """ "Let me ...", "I'll ...", "Now let's ..." say what the agent does next: no decision. A sentence that gives its
    reason (because, instead, rather than, since, so that) or names a choice (decided, chose, switch to, replace X with,
    the fix is) is one."""
    narration = [
        "Now let's check what's next.",
        "I'll start with the renderer edge case tests, the LiveView test, and the JS test.",
        "I will proceed with downgrading all your reservations from business to economy class.",
        "To proceed, I'll need your user ID and reservation ID.",
        "Let me read the config file first.",
    ]
    decisions = [
        "I'll use sqlite because the JSON file grows without bound.",
        "Let's keep the old parser instead of porting it.",
        "We'll patch the caller rather than the library.",
        "Since the cache is stale, I'll rebuild it from the log.",
        "I'll make the helper public so that the controllers can use it.",
        "I decided to pin the version.",
        "I'll switch to the v2 API for the batch calls.",
        "I'll replace exec() with a restricted evaluator.",
        "The fix is to close the handle before the rename.",
    ]
    for said in narration + decisions:
        assert facts({"role": "assistant", "content": said}).decisions == ([said] if said in decisions else []), said


def test_a_commands_short_one_line_output_is_shown_instead_of_its_size():
    """`git status -sb` printing `## fix/team-optimization-v2` (the branch the continuation pushes) shows it, where the
    line said "28 chars output"; an output of 81 characters or two lines, a failed command's, one redaction would change
    and one holding a line's arrow ("` -> ") keep their size."""
    cases = [
        ("## fix/team-optimization-v2", 'exit 0, output "## fix/team-optimization-v2"'),
        ("x" * 80, f'exit 0, output "{"x" * 80}"'),
        ("x" * 81, "exit 0, 2 lines output"),  # (its exit code's line counted)
        ("a\nb", "exit 0, 3 lines output"),
        ("a -> b", "exit 0, 2 lines output"),
        ("OPENAI_API_KEY=sk-proj-4fG7hJ2kL9mN3pQ8rS1tV6wX0yZ5aB7cD9eF", "exit 0, 2 lines output"),
    ]
    for out, said in cases:
        f = facts(call("s", "shell", {"command": ["bash", "-lc", "git status -sb"]}), res("s", f"{out}\nexit code 0"))
        assert f.actions[0].line == f"[shell] ran `git status -sb` -> {said}", out
    f = facts(call("s", "bash", {"command": "git branch --show-current"}), res("s", "main"))
    assert f.actions[0].line == '[bash] ran `git branch --show-current` -> ok, output "main"'
    f = facts(call("s", "bash", {"command": "make"}), res("s", "make: *** no rule\nexit code 2", error=True))
    assert 'output "' not in f.actions[0].line
    f = facts(call("c", "calculate", {"expression": "(1859 - 140) * 2"}), res("c", "3438.0"))
    assert f.actions[0].line == '[calculate] called(expression=(1859 - 140) * 2) -> ok, output "3438.0"'
    # what a call for a secret printed, or a lone word that reads as a password or a token, is not shown (review
    # helper 149: `echo $DB_PASSWORD`, `cat ~/.pgpass` and `get_user_password` showed theirs)
    secret_calls = [
        (call("s", "bash", {"command": "echo $DB_PASSWORD"}), "correct-horse-battery-staple-42"),
        (call("s", "bash", {"command": "cat ~/.pgpass"}), "db.example.com:5432:app:admin:Tr0ub4dor&3"),
        (call("s", "get_user_password", {"user": "ann"}), "P@ssw0rd!2024"),
        (call("s", "bash", {"command": "cat out.txt"}), "P@ssw0rd!2024"),
        (call("s", "bash", {"command": "cat out.txt"}), "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3"),
        (call("s", "bash", {"command": "cat out.txt"}), "caf\u200e\u202ename"),  # bidi and invisible marks
    ]
    for c, printed in secret_calls:
        line = facts(c, res("s", printed)).actions[0].line
        assert 'output "' not in line and printed not in line, line
