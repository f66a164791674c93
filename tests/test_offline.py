"""The offline summarizer (compactctl/summarizers/offline.py): which items the 13 sections get from the facts of the
span and from an earlier summary, pinned where mutation testing (bench/mutation.py) found that no test looked: a
request capped to its tokens, the numbering carried on, the project root, a line said once, what the index lists."""

from __future__ import annotations

from compactctl.summarizers import offline
from compactctl.summarizers.facts import FAILED_VERB, Action, Facts
from compactctl.summarizers.fit import INDEX_LINE, index_line_names
from compactctl.summarizers.prompt import parse_sections
from compactctl.tokens import make_counter

COUNTER = make_counter("gpt-4o")
APPROX = make_counter("gpt-4o", tokenizer="approx")
MARK = " …[cut]"


def section(text: str, name: str) -> list[str]:
    return [ln for ln in parse_sections(text).get(name, "").split("\n") if ln.strip() and ln != "None"]


def index_names(text: str) -> list[str]:
    return [n for ln in text.split("\n") if ln.startswith(INDEX_LINE) for n in index_line_names(ln)]


def test_a_text_within_its_token_cap_is_kept_whole_and_a_longer_one_is_cut_to_the_cap():
    """A request of exactly its cap is not marked cut; a longer one keeps as many tokens as the cap allows, no more,
    with the exact tokenizer (dense text: about two characters a token) and with the approximate one (chars/4)."""
    text = " ".join(str(k % 10) for k in range(400))  # 400 one-digit tokens and spaces
    cap = COUNTER.text(text)
    assert offline.token_cap(text, COUNTER, cap) == text
    assert offline.token_cap(text, COUNTER, cap + 1) == text
    out = offline.token_cap(text, COUNTER, 100)
    assert out.endswith(MARK) and text.startswith(out[: -len(MARK)])
    assert 95 <= COUNTER.text(out[: -len(MARK)]) <= 100
    words = "alpha beta gamma delta " * 50
    assert offline.token_cap(words, APPROX, APPROX.text(words)) == words
    out = offline.token_cap(words, APPROX, 40)
    assert out.endswith(MARK) and words.startswith(out[: -len(MARK)]) and APPROX.text(out[: -len(MARK)]) == 40


def test_a_second_summary_numbers_its_actions_after_the_earlier_summarys():
    """The earlier summary's Completed Actions are carried and the new ones continue their numbering, whatever other
    sections number (a plan's steps)."""
    acts = [Action(f"[bash] ran `make step{k}` -> exit 0", False, "bash", command=f"make step{k}") for k in range(7)]
    plan = ["1. check", "2. ship", "12. celebrate"]
    first = offline.summarize(Facts(first_request="build it", last_request="build it", actions=acts, plan=plan), COUNTER, 3000)
    assert section(first, "Completed Actions")[-1].startswith("7. ") and "12. celebrate" in section(first, "In Progress")
    later = Facts(
        first_request="go on",
        last_request="go on",
        prior_summary=first,
        actions=[Action("[bash] ran `make check` -> exit 0", False, "bash", command="make check")],
    )
    lines = section(offline.summarize(later, COUNTER, 3000), "Completed Actions")
    assert [ln.split(".")[0] for ln in lines] == [str(k) for k in range(1, 9)], lines
    assert lines[-1] == "8. `make check` exit 0"


def test_the_project_root_is_the_deepest_directory_most_absolute_paths_share():
    """Three files directly under a three-segment directory make it the root; paths too shallow to sit under one
    (/etc/ssl/cert.pem) are not the project's and do not count against the share; fewer than three, no root."""
    assert offline.common_root(["/home/me/proj/a.py", "/home/me/proj/b.py", "/home/me/proj/c.py"]) == "/home/me/proj/"
    deep = ["/repo/app/src/a.py", "/repo/app/src/b.py", "/repo/app/src/c.py"]
    shallow = ["/etc/ssl/cert.pem", "/usr/bin/python3", "/tmp/build/log.txt", "/opt/tool/run"]
    assert offline.common_root(deep + shallow) == "/repo/app/src/"
    assert offline.common_root(deep[:2] + shallow) is None
    assert offline.common_root([*deep[:2], "/repo/lib/util/d.py"]) is None  # two of three: no root
    # The session's working directory is the root when three of the paths (and half) sit under it, not a deeper one.
    assert offline.common_root(deep, cwd="/repo") == "/repo/"
    assert offline.common_root([*deep[:2], "/srv/x/y/z.py"], cwd="/repo") is None


def test_a_line_the_earlier_summary_says_and_this_span_says_again_is_written_once():
    """A decision and the project root the earlier summary states, stated again by this span's facts: one line each."""
    files = {f"/repo/app/src/m{k}.py": {"edit"} for k in range(3)}
    first = offline.summarize(Facts(first_request="go", last_request="go", decisions=["keep the cache"], files=files), COUNTER, 3000)
    root = "- project root: /repo/app/src (paths in actions and names are relative to it)"
    assert root in section(first, "Critical Context") and section(first, "Key Decisions") == ["- keep the cache"]
    later = Facts(first_request="go on", last_request="go on", prior_summary=first, decisions=["keep the cache"], files=files)
    text = offline.summarize(later, COUNTER, 3000)
    assert section(text, "Key Decisions") == ["- keep the cache"]
    assert section(text, "Critical Context").count(root) == 1


def test_the_index_lists_the_names_of_the_actions_left_out_not_those_of_the_ask():
    """A name the Active Task shows (always kept) is not listed in the identifier index; the names only actions show
    are, for the actions the budget leaves out."""
    ask = "fix parse_header in the reader"
    facts = Facts(
        first_request=ask,
        last_request=ask,
        last_request_verbatim=True,
        names=["parse_header"] + [f"handler_{k}" for k in range(30)],
        actions=[Action(f"[grep] searched for handler_{k} -> {k} matches", False, "grep") for k in range(30)],
    )
    text = offline.summarize(facts, COUNTER, 200)
    assert ask in section(text, "Active Task") and COUNTER.text(text) <= 200
    actions = section(text, "Completed Actions")
    assert actions[-1].startswith("(+") and "handler_29" in actions[-2]  # the newest kept, the oldest left out
    left_out = [f"handler_{k}" for k in range(30) if not any(f"handler_{k} " in ln for ln in actions)]
    listed = index_names(text)
    assert len(listed) >= 5 and set(listed) <= set(left_out), (listed, left_out)


def test_an_earlier_summarys_files_are_carried_and_a_file_touched_again_is_one_line():
    """The earlier summary's Relevant Files this span does not touch are carried as they are; one it touches again
    is one line that says what was done to it in both ("read, edited"), not a line from each summary."""
    first = offline.summarize(
        Facts(first_request="go", last_request="go", files={"src/a.py": {"read"}, "src/b.py": {"edit"}}), COUNTER, 3000
    )
    assert section(first, "Relevant Files") == ["- src/a.py (read)", "- src/b.py (edited)"]
    later = Facts(first_request="go on", last_request="go on", prior_summary=first, files={"src/a.py": {"edit"}})
    assert sorted(section(offline.summarize(later, COUNTER, 3000), "Relevant Files")) == [
        "- src/a.py (read, edited)",
        "- src/b.py (edited)",
    ]


def test_a_last_action_that_failed_is_blocked_by_its_first_line_only():
    """The last action failed: Blocked says so with the action's line, not the error lines under it (the action
    gives them)."""
    failed = Action("[bash] ran `make build` -> exit 2: missing header foo.h\nfoo.c:1: fatal error: foo.h: No such file", True, "bash")
    facts = Facts(first_request="go", last_request="go", actions=[failed])
    text = offline.summarize(facts, COUNTER, 3000)
    assert section(text, "Blocked") == ["- the last action failed: `make build` exit 2: missing header foo.h"]
    assert "foo.c:1: fatal error" in "\n".join(section(text, "Completed Actions"))
    facts = Facts(first_request="go", last_request="go", actions=[failed, Action("[bash] ran `ls` -> exit 0", False, "bash")])
    assert section(offline.summarize(facts, COUNTER, 3000), "Blocked") == []  # moved past it


def test_an_earlier_summarys_decisions_answers_and_open_work_are_carried():
    """A second summary of a span that decided and asked nothing new still says what the first one had decided,
    answered, left open and been asked."""
    plan = ["- [pending] add tests"]
    first = offline.summarize(
        Facts(
            first_request="go",
            last_request="ship it",
            decisions=["keep the cache"],
            questions=[("which port?", "5432")],
            pending=["also update the docs"],
            plan=plan,
        ),
        COUNTER,
        3000,
    )
    later = offline.summarize(Facts(first_request="go", last_request="ship it", prior_summary=first), COUNTER, 3000)
    for name in ("Key Decisions", "Resolved Questions", "Pending User Asks", "Remaining Work"):
        assert section(first, name) and set(section(first, name)) <= set(section(later, name)), name


def test_remaining_work_points_to_the_plans_open_items():
    """Remaining Work counts the latest plan's items not completed or done and points to In Progress, which quotes
    the plan verbatim: it listed them again (a 7-item plan twice in one summary)."""
    plan = ["Refactor the parser first.", "- [completed] read the code", "- [in_progress] write the tokenizer", "- [pending] add tests"]
    text = offline.summarize(Facts(first_request="go", last_request="go", plan=plan), COUNTER, 3000)
    assert section(text, "Remaining Work") == ["- the latest plan's 2 open items (In Progress)"]
    assert section(text, "In Progress") == ["Latest plan (verbatim):", *plan]


def test_focus_keeps_the_actions_on_its_topic_a_three_letter_word_too():
    """`--focus api` promotes the actions that mention the API, kept before the others when the budget is small;
    words of one or two letters are not a topic."""
    acts = [Action(f"[bash] ran `pytest tests/test_mod{k}.py` -> exit 0", False, "bash", command="pytest") for k in range(30)]
    acts[3] = Action("[bash] ran `curl localhost/api/health` -> exit 0", False, "bash", command="curl")
    facts = Facts(first_request="go", last_request="go", actions=acts)
    assert "api/health" not in offline.summarize(facts, COUNTER, 200)
    assert "api/health" in "\n".join(section(offline.summarize(facts, COUNTER, 200, focus="api"), "Completed Actions"))
    assert "api/health" not in offline.summarize(facts, COUNTER, 200, focus="a pi")


def test_focus_leaves_the_actions_off_its_topic_only_the_room_the_other_sections_leave():
    """Under a focus, the actions that do not mention it come after every other section: the decisions are all kept
    where, without a focus, the actions' share took room from them."""
    acts = [Action(f"[bash] ran `pytest tests/test_mod{k}.py` -> exit 0", False, "bash", command="pytest") for k in range(30)]
    decisions = [f"use option {k} for the cache layer" for k in range(12)]
    facts = Facts(first_request="go", last_request="go", actions=acts, decisions=decisions)
    plain, focused = offline.summarize(facts, COUNTER, 250), offline.summarize(facts, COUNTER, 250, focus="api")
    assert section(focused, "Key Decisions") == [f"- {d}" for d in decisions]
    assert len(section(plain, "Key Decisions")) < len(decisions)
    assert len(section(focused, "Completed Actions")) < len(section(plain, "Completed Actions"))


def test_a_verbatim_ask_on_the_focus_topic_is_still_never_shed():
    """The ask the summary carries verbatim stays whole in a budget too small for it (the summary is then over it,
    which the caller refuses), with a focus that names its topic as without one."""
    ask = "please fix the api client: " + "the retry loop drops the last page of results when the server answers slowly. " * 10
    facts = Facts(first_request=ask, last_request=ask, last_request_verbatim=True)
    for focus in (None, "api client"):
        text = offline.summarize(facts, COUNTER, 60, focus=focus)
        assert section(text, "Active Task") == [ask.rstrip()] and COUNTER.text(text) > 60, focus


def test_a_name_the_kept_lines_show_is_not_listed_again_in_the_index():
    """The index lists the names no kept line shows: not one a decision or an action the budget kept shows, nor one
    the earlier summary's carried index line already lists."""
    facts = Facts(
        first_request="go",
        last_request="go",
        decisions=["rename read_chunk to read_block"],
        actions=[Action("[grep] searched for parse_header -> 3 matches", False, "grep")],
        names=["read_chunk", "parse_header", "open_stream"],
    )
    first = offline.summarize(facts, COUNTER, 3000)
    assert index_names(first) == ["open_stream"]
    later = Facts(first_request="go", last_request="go", prior_summary=first, names=["open_stream", "close_stream"])
    text = offline.summarize(later, COUNTER, 3000)
    assert sorted(index_names(text)) == ["close_stream", "open_stream"]


def test_a_number_in_an_earlier_actions_error_line_does_not_move_the_numbering():
    """The error lines under a failed action (indented) can begin with a number and a dot (an address, a version):
    the next summary's actions are numbered after the earlier summary's last action, not after that number."""
    failed = Action(
        "[bash] ran `psql -h db` -> exit 2: could not connect\n  10.0.0.5:5432: connection refused", True, "bash", command="psql"
    )
    first = offline.summarize(Facts(first_request="go", last_request="go", actions=[failed]), COUNTER, 3000)
    assert section(first, "Completed Actions") == ["1. `psql -h db` exit 2: could not connect", "  10.0.0.5:5432: connection refused"]
    later = Facts(
        first_request="go",
        last_request="go",
        prior_summary=first,
        actions=[Action("[bash] ran `ls` -> exit 0", False, "bash", command="ls")],
    )
    assert section(offline.summarize(later, COUNTER, 3000), "Completed Actions")[-1] == "2. `ls` exit 0"


def test_repeated_identical_actions_collapse_into_the_latest_with_their_count():
    """The same command with the same outcome three times is one line, the latest's number with "(x3)"; the
    numbering still counts every action."""
    same = Action("[bash] ran `make test` -> exit 1: 2 failed", True, "bash", command="make test")
    other = Action("[bash] ran `git diff` -> exit 0", False, "bash", command="git diff")
    facts = Facts(first_request="go", last_request="go", actions=[same, other, same, same])
    lines = section(offline.summarize(facts, COUNTER, 3000), "Completed Actions")
    assert lines == ["2. `git diff` exit 0", "4. `make test` exit 1: 2 failed (x3)"]


def test_commands_writes_and_failures_are_kept_before_reads():
    """In a small budget the actions that ran a command, wrote a file or failed are kept before the newer reads."""
    acts = [
        Action("[bash] ran `make migrate` -> exit 0", False, "bash", command="make migrate"),
        Action("[write_file] wrote src/schema.sql", False, "write"),
        Action("[read_file] read src/missing.py -> error: not found", True, "read"),
        *(Action(f"[read_file] read docs/page_{k}.md", False, "read") for k in range(30)),
    ]
    text = "\n".join(
        section(offline.summarize(Facts(first_request="go", last_request="go", actions=acts), COUNTER, 250), "Completed Actions")
    )
    assert "make migrate" in text and "src/schema.sql" in text and "src/missing.py" in text
    assert "docs/page_29.md" in text and "docs/page_0.md" not in text


def test_the_agents_latest_statement_is_the_active_state_longer_when_no_finding_leads_it():
    """The agent's latest text is kept up to 600 tokens as the Active State; when it only says what comes next, the
    finding before it leads and the "Next:" line is kept to 200."""
    said = "the parser now accepts trailing commas and the tests pass. " * 40  # about 440 tokens
    text = offline.summarize(Facts(first_request="go", last_request="go", last_assistant=said), COUNTER, 3000)
    assert section(text, "Active State") == [said.rstrip()]
    facts = Facts(first_request="go", last_request="go", last_assistant=said, last_finding="the lexer drops the last token")
    state = section(offline.summarize(facts, COUNTER, 3000), "Active State")
    assert state[0] == "the lexer drops the last token" and state[1].startswith("Next: the parser") and state[1].endswith(MARK)
    assert 190 <= COUNTER.text(state[1]) <= 215


def test_a_file_line_says_what_was_done_to_it_a_failed_edit_only_when_none_succeeded():
    """Relevant Files says what was done to each file: a file a shell command printed was read; an edit or a write
    that failed is said only when none succeeded."""
    files = {
        "src/a.py": {"edit" + FAILED_VERB},
        "src/b.py": {"edit", "edit" + FAILED_VERB},
        "src/c.py": {"shell-read", "write" + FAILED_VERB},
    }
    text = offline.summarize(Facts(first_request="go", last_request="go", files=files), COUNTER, 3000)
    assert section(text, "Relevant Files") == ["- src/a.py (edit failed)", "- src/b.py (edited)", "- src/c.py (read, write failed)"]


FOREIGN = (
    "This session is being continued from a previous conversation that ran out of context.\n\nSummary:\n"
    "1. Primary Request and Intent:\n   Work on bead spotter-fum.\n\n8. Current Work:\n   Working on `spotter-fum.3`.\n\n"
    "9. Optional Next Step:\n   Complete spotter-fum.3 by running `mix test`.\n"
)


def test_another_tools_next_step_is_the_active_task_only_with_no_ask_since():
    """Claude Code's summary's next step is the Active Task when the person asked nothing after it, and then not
    quoted again; with an ask since, the ask is the Active Task and the next step is one of its lines quoted as
    room allows."""
    text = offline.summarize(Facts(prior_summary=FOREIGN), COUNTER, 2000)
    assert section(text, "Active Task") == [offline.FROM_PRIOR_NEXT + "Complete spotter-fum.3 by running `mix test`."]
    assert section(text, "Goal") == ["Work on bead spotter-fum."]
    assert (
        "> Working on `spotter-fum.3`." in section(text, "Critical Context") and "mix test" not in parse_sections(text)["Critical Context"]
    )
    ask = "now fix the tests"
    text = offline.summarize(Facts(prior_summary=FOREIGN, last_request=ask, last_request_verbatim=True), COUNTER, 2000)
    assert section(text, "Active Task") == [ask]
    assert "> Complete spotter-fum.3 by running `mix test`." in section(text, "Critical Context")


def test_another_tools_summary_is_quoted_as_older_than_the_actions_and_never_as_a_lone_heading():
    """Claude Code's summary was quoted as bare "> " lines among this span's facts: its "IN PROGRESS", "NOT YET
    COMMITTED" read as current while Completed Actions closed and committed the task; room allowing, its short
    heading lines were kept without what they introduce ("> Analysis:", "> 4. Errors and fixes:" then "> 7. Pending
    Tasks:"). Now the quote opens with a line that says it is older, and a heading goes with the line after it. (Its
    "Analysis:", the model's narrative before its "Summary:", stays: left out, the continuation eval's long sessions
    kept 95.7 -> 95.0% of the facts used later.)"""
    foreign = (
        "This session is being continued from a previous conversation that ran out of context.\n\nAnalysis:\n"
        "Let me chronologically analyze the conversation:\n1. **Initial Request**: work on spotter-fum\n\nSummary:\n"
        "1. Primary Request and Intent:\n   Work on bead spotter-fum.\n\n4. Errors and fixes:\n"
        "   - " + "CompileError in transcript_renderer.ex: fixed by the missing alias. " * 4 + "\n\n7. Pending Tasks:\n"
        "   - spotter-fum.3 (IN PROGRESS): NOT YET COMMITTED\n"
    )
    f = Facts(prior_summary=foreign, last_request="go on", last_request_verbatim=True)
    context = parse_sections(offline.summarize(f, COUNTER, 2000))["Critical Context"].split("\n")
    assert context[0] == offline.FOREIGN_QUOTE_HEAD
    assert "> 4. Errors and fixes:" in context and "> 7. Pending Tasks:" in context
    for k, line in enumerate(context):  # a heading quoted is followed by what it introduces
        if line in ("> 4. Errors and fixes:", "> 7. Pending Tasks:"):
            assert context[k + 1].startswith("> - "), context
    assert context[context.index("> Analysis:") + 2].startswith("> 1. **Initial Request**")  # through its own intro
    small = parse_sections(offline.summarize(f, COUNTER, 260))["Critical Context"].split("\n")
    assert "> 7. Pending Tasks:" not in small or small[small.index("> 7. Pending Tasks:") + 1].startswith("> - "), small


def test_the_goal_is_not_listed_again_as_a_pending_ask():
    """A first ask no final reply answered was both the Goal and a Pending User Ask (a subagent's one ask at 4,000
    tokens), and "Remaining Work" then said to finish it before the Active Task."""
    first = "/handgemacht:create-beads websearch for the three libraries"
    f = Facts(first_request=first, last_request="now the tests", last_request_verbatim=True, pending=[first, "also bump the version"])
    text = offline.summarize(f, COUNTER, 2000)
    assert section(text, "Goal") == [first] and section(text, "Pending User Asks") == ["- also bump the version"]
    f.pending = [first]
    text = offline.summarize(f, COUNTER, 2000)
    assert parse_sections(text)["Pending User Asks"] == "None" and "finish the pending asks" not in text


def test_a_description_of_work_whose_item_a_later_command_closed_is_no_remaining_work():
    """Remaining Work listed the names of `bd show spotter-dov`'s output while the same summary's actions closed it
    (`bd close spotter-dov`: 6 of 7 such lines over the corpus at 16,000 tokens). A close that failed, or of another
    item, leaves it."""
    doc = [("`bd show spotter-dov 2>&1 | head -30`", ["SessionLive", "SubagentLive"]), ("`gh issue view 12`", ["parser"])]
    closing = [("bd close spotter-dov --reason='All subtasks complete'", 0, False), ("gh issue close 123", 0, False)]
    f = Facts(first_request="go", last_request="go", documents=doc, commands=closing)
    assert section(offline.summarize(f, COUNTER, 3000), "Remaining Work") == [
        "- named by `gh issue view 12` (a description of work): parser"
    ]
    f.commands = [("bd close spotter-dov", 1, True), ("bd close spotter-dov.2", 0, False)]
    assert len(section(offline.summarize(f, COUNTER, 3000), "Remaining Work")) == 2
    # the same tool's close, of the whole item, in one command of a line (review helper 149: loose matches)
    cases = [
        ("`bd show a+b`", "bd close a+c", False),
        ("`gh issue view 12`", "gh pr close 12", False),
        ("`gh issue view 12`", "gh issue close 12", True),
        ("`bd show x1`", "echo done; cat x1", False),
        ("`bd show X`", "bd update X --status done", True),
        ("`bd show spotter-a0y`", "cd /r && bd close spotter-a0y.4 spotter-a0y", True),
    ]
    for label, command, closed in cases:
        assert offline._closed(label, [(command, 0, False)]) is closed, (label, command)


def test_a_call_named_for_a_change_it_makes_is_kept_before_the_lookups_as_a_write_is():
    """tau-bench: the updates (update_reservation_flights, cancel_reservation) are what the agent did, the lookups
    (get_reservation_details) what it read; in a summary too small for all, the changes are kept, not the newest
    lookups."""
    from compactctl.summarizers.facts import extract
    from compactctl.tools import changes_state

    from .rows import T, call

    rows: list[dict] = [{"role": "user", "content": "downgrade all my reservations"}]
    ids = [f"R{k:05d}" for k in range(12)]
    for k, rid in enumerate(ids[:3]):
        rows += [call(f"u{k}", "update_reservation_flights", {"reservation_id": rid, "cabin": "economy"})]
        rows += [{"role": "tool", "tool_call_id": f"u{k}", "content": '{"cabin": "economy"}'}]
    rows += [call("c", "cancel_reservation", {"reservation_id": ids[3]}), {"role": "tool", "tool_call_id": "c", "content": "{}"}]
    for k, rid in enumerate(ids):
        rows += [
            call(f"g{k}", "get_reservation_details", {"reservation_id": rid}),
            {"role": "tool", "tool_call_id": f"g{k}", "content": "{}"},
        ]
    f = extract(T(rows).messages)
    assert [a.kind for a in f.actions[:5]] == ["write"] * 4 + ["generic"]
    kept = section(offline.summarize(f, COUNTER, 300), "Completed Actions")
    changed = [ln for ln in kept if "update_reservation_flights" in ln or "cancel_reservation" in ln]
    assert len(changed) == 4 and len(kept) > 5, kept  # (as lookups, none was kept: the newest actions go first)
    assert changes_state("mcp__github__create_issue") and changes_state("updateRecord")
    assert not any(map(changes_state, ("get_user_details", "address_lookup", "postprocess", "create_file", "Bash")))


def test_the_persons_answer_is_the_active_task_when_the_latest_user_message_is_the_harnesss():
    """Claude Code session 4d5611e5 at 32,000 tokens: the latest user-role message was a task notification, so the
    Active Task said "none from the person" while the person's latest words, an AskUserQuestion answer in the middle,
    said what to do ("main was clean; fix the issues")."""
    said = "How should we proceed? -> main was clean; fix the issues"
    f = Facts(last_request="<task-notification>done</task-notification>", last_request_harness=True, latest_answer=(40, said))
    assert section(offline.summarize(f, COUNTER, 2000), "Active Task") == [offline.FROM_ANSWER + said]
    f.latest_answer = None
    assert section(offline.summarize(f, COUNTER, 2000), "Active Task") == [offline.KEPT_LAST_NOTE]
