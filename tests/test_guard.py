"""The guard (what is done to an LLM's answer before it is a summary), on answers and Facts built by hand: no server."""

from __future__ import annotations

from compactctl.summarizers.base import SummaryRequest
from compactctl.summarizers.facts import Facts
from compactctl.summarizers.fit import EXCERPT_HEAD, EXCERPT_INDENT, INDEX_LINE
from compactctl.summarizers.guard import COMMAND_CHARS, COMMANDS_SHARE, MIN_INDEX_ROOM, OMITTED, guard, trim, within
from compactctl.summarizers.prompt import SECTIONS, parse_sections, render
from compactctl.summarizers.vocabulary import Excerpt
from compactctl.tokens import make_counter

COUNTER = make_counter("gpt-4o")


def answer(**bodies: str) -> str:
    """A model's answer with the 13 sections ("None" under those not given; keyword: the section's first word)."""
    secs = dict.fromkeys(SECTIONS, "None")
    for key, body in bodies.items():
        secs[next(s for s in SECTIONS if s.split()[0].lower() == key)] = body
    return render(secs)


ANSWER = answer(active="fix the parser", goal="Make the parser read headers.", completed="1. Read src/parse.py.")


def run(text: str, facts: Facts, budget: int) -> tuple[str, float | None]:
    return guard(text, facts, COUNTER, SummaryRequest("t", [], 0, 0, budget, facts))


def listed_commands(summary: str) -> list[str]:
    return [ln for ln in parse_sections(summary)["Completed Actions"].split("\n") if ln.startswith("- `")]


# -- retention and the key facts put back


def test_retention_is_the_share_of_key_facts_the_answer_itself_kept():
    facts = Facts(
        files={"src/a.py": {"read"}, "src/b.py": {"edit"}},
        errors=["TypeError: bad header"],
        constraints=["Never touch tests/."],
        last_request="fix the parser",
    )
    text = answer(active="fix the parser", relevant="- src/a.py", critical="None")
    _, retention = run(text, facts, 2_000)
    assert retention == 2 / 5  # src/a.py and the ask, of 5
    assert run(answer(), Facts(), 2_000)[1] is None  # no key fact: nothing to measure


def test_the_key_facts_the_answer_left_out_are_put_back_once():
    facts = Facts(files={"src/a.py": {"read"}, "src/b.py": {"edit"}}, errors=["TypeError: bad header"], constraints=["Never touch tests/."])
    text = answer(relevant="- src/a.py (read it)", critical="The parser fails on empty headers.")
    secs = parse_sections(run(text, facts, 2_000)[0])
    assert secs["Relevant Files"].split("\n") == ["- src/a.py (read it)", "- src/b.py"]
    assert secs["Critical Context"].split("\n")[:2] == ["The parser fails on empty headers.", "- TypeError: bad header"]
    assert secs["Constraints & Preferences"] == "- Never touch tests/."  # in place of the answer's "None"


def test_sections_the_answer_left_out_come_from_the_offline_summary_and_its_own_are_kept():
    facts = Facts(decisions=["Use sqlite for the cache, not a JSON file."], pending=["also add a --verbose flag"])
    text = "## Active Task\nfix the parser\n## Goal\nMake the parser read headers.\n## Key Decisions\nKeep the old API."
    secs = parse_sections(run(text, facts, 2_000)[0])
    assert list(secs) == list(SECTIONS)
    assert secs["Key Decisions"] == "Keep the old API." and secs["Goal"] == "Make the parser read headers."
    assert "also add a --verbose flag" in secs["Pending User Asks"]  # the offline summary's, for a section left out


# -- the commands the answer does not show


def commands_facts(n: int, width: int = 0) -> Facts:
    return Facts(commands=[(f"pytest tests/test_case_{k}.py" + " -q" * width, k % 2, k % 2 == 1) for k in range(n)])


def test_the_commands_take_at_most_their_share_of_the_room_newest_first_listed_in_order():
    facts = commands_facts(200)
    budget = 1_500
    out = run(ANSWER, facts, budget)[0]
    listed = listed_commands(out)
    room = int((budget - COUNTER.text(ANSWER) - 2) * COMMANDS_SHARE)
    cost = sum(COUNTER.text(ln) + 1 for ln in listed)
    assert cost <= room < cost + COUNTER.text(listed[0]) + 1  # as many as fit: the next older one would not
    numbers = [int(ln.split("test_case_")[1].split(".")[0]) for ln in listed]
    assert numbers == list(range(200 - len(numbers), 200))  # the newest, in the order they ran
    assert listed[-1] == "- `pytest tests/test_case_199.py` exit 1" and listed[-2] == "- `pytest tests/test_case_198.py` exit 0"


def test_a_command_too_long_for_the_room_is_passed_over_for_older_ones_that_fit():
    facts = Facts(commands=[("make a", 0, False), ("make b", 0, False), ("x" * 100 + " " + "y" * 50, 0, False)])
    budget = COUNTER.text(ANSWER) + 2 + 3 * MIN_INDEX_ROOM + 2  # a room of MIN_INDEX_ROOM: less than the long line
    listed = listed_commands(run(ANSWER, facts, budget)[0])
    assert listed == ["- `make a` exit 0", "- `make b` exit 0"]


def test_a_command_is_shown_by_the_answer_only_as_a_whole_word():
    """From a mutation run's notes: a one-word command was taken as shown by a longer word (`ls` in "tools", `cat` in
    "indicates"), so the guard did not list it; a command the answer names, in any case, is not listed again."""
    facts = Facts(commands=[("ls", 0, False), ("cat notes.md", 0, False), ("make test", 2, True)])
    text = answer(active="fix the parser", completed="1. Checked the tools; the log indicates a bug.\n2. Ran MAKE TEST: it failed.")
    assert listed_commands(run(text, facts, 2_000)[0]) == ["- `ls` exit 0", "- `cat notes.md` exit 0"]


def test_commands_are_listed_from_a_room_of_min_index_room_tokens():
    facts = Facts(commands=[("make a", 2, True)])
    at = COUNTER.text(ANSWER) + 2 + 3 * MIN_INDEX_ROOM  # a room of exactly MIN_INDEX_ROOM
    assert listed_commands(run(ANSWER, facts, at)[0]) == ["- `make a` exit 2"]
    assert listed_commands(run(ANSWER, facts, at - 1)[0]) == []


def test_a_long_command_is_shown_to_command_chars_with_an_ellipsis():
    whole = "echo " + "a" * (COMMAND_CHARS - 5)  # exactly COMMAND_CHARS
    longer = "echo " + "b" * (COMMAND_CHARS - 4)
    facts = Facts(commands=[(whole, 0, False), (longer, None, False), ("cat <<EOF\nline\nEOF", None, True)])
    listed = listed_commands(run(ANSWER, facts, 3_000)[0])
    assert listed[0] == f"- `{whole}` exit 0"
    assert listed[1] == f"- `{longer[: COMMAND_CHARS - 1]}…` ok"
    assert listed[2] == "- `cat <<EOF …` failed"


# -- the quoted lines and the identifier index


def test_the_index_takes_a_room_of_min_index_room_tokens_and_not_less():
    facts = Facts(names=["parse_header", "TokenBucket"])
    at = COUNTER.text(ANSWER) + 2 + MIN_INDEX_ROOM
    assert parse_sections(run(ANSWER, facts, at)[0])["Critical Context"] == INDEX_LINE + "parse_header TokenBucket"
    assert parse_sections(run(ANSWER, facts, at - 1)[0])["Critical Context"] == "None"


def test_the_quoted_lines_take_their_share_of_the_room_and_the_index_the_rest():
    names = [f"name_{k}" for k in range(300)]
    excerpts = [Excerpt(f"value = name_{k}(name_{k + 1}) + {k}", ((f"name_{k}", 1.0), (f"name_{k + 1}", 0.5))) for k in range(0, 300, 2)]
    facts = Facts(names=names, excerpts=excerpts)
    budget = 1_200
    out = run(ANSWER, facts, budget)[0]
    lines = parse_sections(out)["Critical Context"].split("\n")
    assert lines[0] == EXCERPT_HEAD
    quoted = [ln for ln in lines if ln.startswith(EXCERPT_INDENT)]
    index = [ln for ln in lines if ln.startswith(INDEX_LINE)]
    room = budget - COUNTER.text(ANSWER) - 2
    block = COUNTER.text("\n".join([EXCERPT_HEAD, *quoted]))
    line = COUNTER.text(quoted[0]) + 1
    assert quoted and index and room / 3 - 2 * line < block <= room / 3  # EXCERPT_SHARE / (1 + EXCERPT_SHARE) of the room
    assert budget - 20 < COUNTER.text(out) <= budget  # the index lines fill the rest


# -- within and trim


def test_within_leaves_a_summary_in_its_budget_as_it_is():
    text = "**Active Task:** fix it\n**Goal:** the parser\n**Completed Actions:**\n1. ran it"  # not as render writes it
    assert within(text, COUNTER, COUNTER.text(text)) == text
    assert within(text, COUNTER, COUNTER.text(text) + 50) == text
    cut = within(text, COUNTER, COUNTER.text(text) - 1)
    assert cut.startswith("## Active Task\nfix it") and COUNTER.text(cut) < COUNTER.text(text)


def many_lines(n: int = 60) -> dict[str, str]:
    secs = dict.fromkeys(SECTIONS, "None")
    secs["Active Task"] = "now add tests for parse_header"
    secs["Completed Actions"] = "\n".join(f"{k}. ran `pytest tests/test_{k}.py` exit 0" for k in range(1, n + 1))
    secs["Critical Context"] = "\n".join(f"- error {k}: header {k} is empty" for k in range(1, 21))
    secs["Remaining Work"] = "- the docs\n- the changelog"
    return secs


def test_trim_drops_only_the_lines_it_must():
    secs = many_lines()
    for budget in (300, 450, 600):
        text = trim(dict(secs), COUNTER, budget)
        assert budget - 15 <= COUNTER.text(text) <= budget, budget  # within one line of the budget
        out = parse_sections(text)
        assert out["Remaining Work"] == "- the docs\n- the changelog"  # the longest sections lose lines first


def test_trim_keeps_the_newest_line_of_every_section_it_cuts():
    secs = dict.fromkeys(SECTIONS, "None")
    secs["Active Task"] = "go on"
    for s in ("Completed Actions", "Critical Context", "Key Decisions"):
        secs[s] = f"old {s} line\n" + " ".join(f"{s.split()[0].lower()}_{k}" for k in range(60))
    text = trim(dict(secs), COUNTER, 600)
    assert COUNTER.text(text) <= 600
    for s in ("Completed Actions", "Critical Context", "Key Decisions"):
        assert parse_sections(text)[s] == OMITTED.format(1) + "\n" + secs[s].split("\n")[1]


def test_a_section_of_two_lines_loses_its_older_one_first():
    secs = dict.fromkeys(SECTIONS, "None")
    secs["Active Task"] = "go on"
    secs["Completed Actions"] = "1. " + " ".join(f"older_{k}" for k in range(80)) + "\n2. the newest step"
    text = trim(dict(secs), COUNTER, 200)
    assert parse_sections(text)["Completed Actions"] == OMITTED.format(1) + "\n2. the newest step"


def test_a_small_summary_exactly_at_its_budget_keeps_every_heading():
    secs = dict.fromkeys(SECTIONS, "None")
    secs["Active Task"] = "go on"
    budget = COUNTER.text(render(secs))
    assert budget < 200  # where a summary over it shows only the sections with content
    assert trim(dict(secs), COUNTER, budget) == render(secs)
    assert trim(dict(secs), COUNTER, budget - 1).count("## ") == 1


def test_a_large_summary_cut_to_its_budget_keeps_every_heading():
    secs = {s: " ".join(f"{s.split()[0].lower()}_{k}" for k in range(100)) for s in SECTIONS}
    text = trim(secs, COUNTER, 1_000)  # over 10 x the headings: they are all shown
    assert 980 < COUNTER.text(text) <= 1_000 and list(parse_sections(text)) == list(SECTIONS)  # cut no further than it must


def test_the_ask_the_summary_carries_is_never_cut_even_over_the_budget():
    secs = dict.fromkeys(SECTIONS, "None")
    secs["Active Task"] = " ".join(f"step_{k}" for k in range(100))
    secs["Completed Actions"] = "1. ran it"
    text = trim(dict(secs), COUNTER, 60, keep_ask=True)
    assert secs["Active Task"] in text  # the caller refuses a summary over its budget
    cut = trim(dict(secs), COUNTER, 60)
    assert COUNTER.text(cut) <= 60 and "step_0" in cut and "step_99" not in cut


def test_the_longest_section_loses_lines_while_it_is_the_longest():
    secs = dict.fromkeys(SECTIONS, "None")
    secs["Active Task"] = "go on"
    secs["Completed Actions"] = "\n".join(f"{k}. " + " ".join(f"step{k}_{j}" for j in range(60)) for k in range(1, 4))
    secs["Critical Context"] = "\n".join(f"- error {k}: header {k} is empty" for k in range(1, 11))
    whole = COUNTER.text(render(secs))
    step = COUNTER.text(secs["Completed Actions"].split("\n")[0])
    text = trim(dict(secs), COUNTER, whole - step - step // 2)  # two of its three lines must go
    out = parse_sections(text)
    assert out["Completed Actions"] == OMITTED.format(2) + "\n" + secs["Completed Actions"].split("\n")[2]
    assert out["Critical Context"] == secs["Critical Context"]  # still the shorter: untouched


def test_the_index_lists_neither_a_name_the_answer_shows_nor_one_redaction_would_change():
    secret = "sk-abcdefghijklmnopqrstuvwxyz123456"
    facts = Facts(names=["parse_header", secret, "TokenBucket", "refill_rate"])
    text = answer(active="fix parse_header", goal="Make the parser read headers.")
    index = parse_sections(run(text, facts, 2_000)[0])["Critical Context"]
    assert index == INDEX_LINE + "TokenBucket refill_rate"
