"""compactctl.needed, the continuation eval's fact extractor: what counts as a fact, what is noise, and how a fact
of the prefix is matched in the continuation (used again) and in a compacted output (kept)."""

from __future__ import annotations

from compactctl import needed

from .rows import T, call


def keys(facts):
    return {(f.kind, f.key) for f in facts}


def test_a_url_or_directory_written_with_its_trailing_slash_is_the_same_fact():
    """The key of a URL or a path drops its trailing slash ("https://docs.example.com/guide/" is
    "https://docs.example.com/guide"); the matcher refused a key followed by "/", so the same URL or directory written
    again with its slash was not a use, and an output that kept it verbatim did not keep it. A slash that goes on to a
    longer URL or path is still another fact."""
    ask = "Read https://docs.example.com/guide/ and fix /srv/app/static/ first"
    for later in (
        "Again: https://docs.example.com/guide/ and /srv/app/static/ please",
        "Again: https://docs.example.com/guide and /srv/app/static please",
    ):
        msgs = T([{"role": "user", "content": ask}, {"role": "assistant", "content": "ok"}, {"role": "user", "content": later}]).messages
        fs = needed.needed_facts(msgs, 2)
        assert keys(fs) == {("url", "https://docs.example.com/guide"), ("path", "app/static")}, later
        assert needed.kept_facts(fs, msgs[:1]) == [True, True], later  # the ask kept verbatim keeps both
    assert needed.occurs("url", "https://docs.example.com/guide", "see https://docs.example.com/guide/.")
    assert needed.occurs("path", "app/static", "(in /srv/app/static/)")
    assert not needed.occurs("url", "https://docs.example.com/guide", "see https://docs.example.com/guide/intro")
    assert not needed.occurs("path", "app/static", "ls /srv/app/static/css")
    assert not needed.occurs("path", "app/static", "ls /srv/app/static/.env")


def test_what_counts_as_a_path():
    """A relative path of three segments is one without an extension (two are not: `and/or`, `client/server`); a
    path whose last segment has no letter (a log folder's year, a REST id) is not a file anyone names."""
    assert set(needed.facts_in("see src/app/components and lib/util")) == {("path", "app/components")}
    assert not [f for f in needed.facts_in("/var/log/2024 and /api/v1/items/42") if f[0] == "path"]


def test_a_url_is_not_also_a_name():
    """The host and the parts of a URL are not paths or identifiers of their own: github.com is not a dotted name."""
    url = "https://github.com/acme/widget_tools/blob/main/README.md"
    assert set(needed.facts_in(f"see {url} now")) == {("url", url)}


def test_what_counts_as_an_identifier():
    """A file's stem is not an identifier (its path is the fact), a name before a full stop is; dotted single letters
    (a.k.a) are not a dotted name."""
    facts = set(needed.facts_in("Fix parse_config. Then main_app.py, a.k.a the entry point."))
    assert facts == {("identifier", "parse_config"), ("path", "main_app.py")}


def test_a_fact_only_in_harness_text_is_needed_from_the_injected_source():
    """A fact the prefix shows only in harness-injected text (a system reminder) that the person writes later is
    needed, with source "injected" (the per-source table's third column)."""
    rows = [
        {"role": "user", "content": "<system-reminder>\nThe open file is src/app/settings_loader.py\n</system-reminder>\nhello"},
        {"role": "assistant", "content": "Hi."},
        {"role": "user", "content": "please look at app/settings_loader.py"},
    ]
    [f] = needed.needed_facts(T(rows).messages, 2)
    assert (f.kind, f.key, f.source, f.used_at) == ("path", "app/settings_loader.py", "injected", 2)


def test_a_compacted_output_keeps_a_fact_in_a_call_name_or_its_arguments():
    """`kept` reads a compacted output's tool calls as well as its texts: the call's name and its arguments."""
    rows = [
        {"role": "user", "content": "run run_migrations, then fix src/db/schema_v2.sql"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "did run_migrations pass on db/schema_v2.sql?"},
    ]
    fs = needed.needed_facts(T(rows).messages, 2)
    assert keys(fs) == {("identifier", "run_migrations"), ("path", "db/schema_v2.sql")}
    out = T([call("c1", "run_migrations", {"file": "src/db/schema_v2.sql"}), {"role": "tool", "tool_call_id": "c1", "content": "ok"}])
    assert needed.kept_facts(fs, out.messages) == [True, True]


def test_what_counts_as_a_value():
    """Values: numbers of 3+ digits (not 2, not the parts of 1,234 or 3.14159), quoted literals with a space or
    punctuation (not a single quoted word), ids mixing letters and digits (not an encoding, a unit or a file name),
    versions."""
    text = 'port 8080, 42 and 1,234 and 3.14159; "hello world" and "single"; ids E0425, spotter-gqc.6; main2.py, utf8, 100ms, v2.1'
    assert set(needed.facts_in(text)) == {
        ("value", "8080"),
        ("value", "hello world"),
        ("value", "E0425"),
        ("value", "spotter-gqc.6"),
        ("value", "v2.1"),
        ("path", "main2.py"),
    }


def test_what_counts_as_a_quoted_value():
    """A quoted literal is a value when it is whole (it may end a sentence with its full stop), not when the quotes
    cut it at punctuation or a space (what lies between two strings), nor a quoted path (the path rule has it)."""
    text = 'say "a quick fix" or "stop here." but not ", then it" nor " spaced out" nor "cut at (" nor "src/app/x"'
    assert {v for k, v in needed.facts_in(text) if k == "value"} == {"a quick fix", "stop here."}
    # apostrophes in words are no quotes: what lies between two of them is no literal; a single-quoted one is
    text = "the user's name * @param name - The user's id; it's done - isn't it; run 'make test now' or 'cut it'"
    assert {v for k, v in needed.facts_in(text) if k == "value"} == {"make test now", "cut it"}
    text = "print(f'Processing file now') and rb'raw bytes here' but not elf'ish words here'"
    assert {v for k, v in needed.facts_in(text) if k == "value"} == {"Processing file now", "raw bytes here"}


def test_an_errno_name_is_an_identifier_a_shouted_word_is_not():
    """The errno rule took any capital word of 4 to 10 letters starting with E: ERROR, EXIT, EMPTY, EXPECTED were facts
    (WARNING, FAILED were not), and ECONNREFUSED (12 letters) was not. Errno names (and npm's codes) are."""
    text = "ERROR: EXIT code 1, EMPTY body, EXPECTED ok; ENOENT, ECONNREFUSED, ETIMEDOUT, EADDRINUSE, ELIFECYCLE"
    assert {v for k, v in needed.facts_in(text) if k == "identifier"} == {"ENOENT", "ECONNREFUSED", "ETIMEDOUT", "EADDRINUSE", "ELIFECYCLE"}


def test_a_program_named_by_an_english_word_is_no_fact_alone():
    """`make` (or `watch`, `patch`) run in the prefix made the one-word command fact "make", which every "make sure"
    the continuation writes used again and every output with the word kept. Its longer forms are facts."""
    assert list(needed.commands_in("make")) == []
    assert list(needed.commands_in("make test && watch -n 1 ls")) == ["make test", "watch -n 1 ls"]
    rows = [call("c1", "terminal", {"command": "make"}), {"role": "tool", "tool_call_id": "c1", "content": "built"}]
    rows.append({"role": "user", "content": "Now make sure the docs build."})
    assert needed.needed_facts(T(rows).messages, 2) == []
    assert list(needed.commands_in("cargo")) == ["cargo"]  # a one-word program that no prose writes still is one


def test_a_plural_acronym_is_a_word_not_an_identifier():
    """The leading-acronym rule (JSONDecodeError, IOError, HTTPServer) read a plural acronym as an acronym and a hump
    ("AP" + "Is"): "the APIs", "URLs", "LLMs", "TODOs" were identifier facts that any prose uses again and keeps."""
    text = "the APIs and URLs, LLMs, TODOs, GPUs; but HTTPServer, JSONDecodeError, IOError, UIView, XMLHttpRequest"
    assert {v for k, v in needed.facts_in(text) if k == "identifier"} == {
        "HTTPServer",
        "JSONDecodeError",
        "IOError",
        "UIView",
        "XMLHttpRequest",
    }


def test_command_facts_skip_wrappers_and_one_word_noise():
    """The program and its plain sub-command words after wrappers, env assignments and a timeout's duration; a
    one-word program of 3 letters or less (npm), a bare `timeout`, cd/echo/export/source and trivial git reads make
    no fact."""
    assert list(needed.commands_in("timeout npm test")) == ["npm test"]
    assert list(needed.commands_in("env A=1 timeout 60 cargo test --release")) == ["cargo test", "cargo test --release"]
    assert list(needed.commands_in("timeout; npm; echo hi; export X=1; source .venv/bin/activate; git status")) == []
    assert list(needed.commands_in("git status && git push origin main")) == ["git push origin", "git push origin main"]


def test_the_scripts_a_call_runs():
    """A command argument as a string, as an argv list (joined) or as a shell's `-lc` script (the script); an editor's
    "command" (view, str_replace) runs nothing; in a transcript with tool calls, a fenced block in the text is no
    action."""
    msg = T(
        [
            {
                "role": "assistant",
                "content": "```\nrm -rf build\n```",
                "tool_calls": [
                    {
                        "id": "a",
                        "type": "function",
                        "function": {"name": "shell", "arguments": '{"command": ["cargo", "test", "--release"]}'},
                    },
                    {"id": "b", "type": "function", "function": {"name": "shell", "arguments": '{"cmd": ["bash", "-lc", "npm ci"]}'}},
                    {"id": "c", "type": "function", "function": {"name": "str_replace_editor", "arguments": '{"command": "view"}'}},
                    {"id": "d", "type": "function", "function": {"name": "run", "arguments": '{"script": "make lint"}'}},
                ],
            }
        ]
    ).messages[0]
    assert list(needed.scripts_of(msg, False)) == ["cargo test --release", "npm ci", "make lint"]


def test_an_id_does_not_match_a_longer_id_and_a_key_ending_in_punctuation_needs_no_boundary():
    assert needed.occurs("value", "spotter-gqc.6", "closed spotter-gqc.6, next")
    assert not needed.occurs("value", "spotter-gqc.6", "closed spotter-gqc.67")
    assert needed.occurs("value", "stop here.", 'he said "stop here."Then left')


def test_a_fact_records_where_it_sat_and_where_it_was_first_used():
    """Where a fact sat: (message, role, source), one entry per message and source, in order (a call's text and its
    arguments are one entry); a row shows five. Its first use in the continuation, and whether an output showed it
    before that use (not after)."""
    rows = [{"role": "user", "content": f"step {i}: see parse_config"} for i in range(6)]
    rows.append({**call("c1", "grep", {"pattern": "parse_config"}), "content": "looking for parse_config"})
    rows.append({"role": "tool", "tool_call_id": "c1", "content": "x.py:3: def parse_config"})
    rows += [{"role": "assistant", "content": "parse_config is fixed"}, {"role": "user", "content": "parse_config? show me"}]
    rows.append({**call("c2", "grep", {"pattern": "parse_config"}), "content": None})
    rows.append({"role": "tool", "tool_call_id": "c2", "content": "x.py:3: def parse_config"})
    rows.append({"role": "assistant", "content": "parse_config is there"})
    [f] = needed.needed_facts(T(rows).messages, 8)
    assert f.where == [(i, "user", "written") for i in range(6)] + [(6, "assistant", "written"), (7, "tool", "output")]
    assert f.as_dict()["where"] == f.where[:5]
    assert (f.used_at, f.rediscovered, f.source) == (8, False, "written")
    assert f.seen == "step 0: see parse_config" and f.used == "parse_config is fixed"


def test_a_fact_written_anywhere_in_the_prefix_is_from_the_written_source():
    """The source of a fact is where it sat at its best: written (by the person or the agent) wins over an output,
    whichever came first."""
    rows = [
        call("c1", "terminal", {"command": "pytest"}),
        {"role": "tool", "tool_call_id": "c1", "content": "FAILED: DEFAULT_TIMEOUT_MS"},
        {"role": "assistant", "content": "DEFAULT_TIMEOUT_MS is too low"},
        {"role": "user", "content": "raise DEFAULT_TIMEOUT_MS"},
    ]
    [f] = needed.needed_facts(T(rows).messages, 3)
    assert f.source == "written" and f.where == [(1, "tool", "output"), (2, "assistant", "written")]


def test_in_context_reads_the_first_fifty_occurrences_in_the_prefix():
    """A fact is in context when the output shows it beside the 8 characters it had before or after one of its first
    50 occurrences in the prefix."""
    f = needed.Fact("identifier", "parse_config", "written")
    prefix = " ".join(f"[{i:06d}] parse_config <{i:06d}>" for i in range(60))
    assert needed.in_context(f, prefix, "we saw 000000] parse_config")
    assert needed.in_context(f, prefix, "we saw parse_config <000049 there")  # the 50th
    assert not needed.in_context(f, prefix, "we saw 000050] parse_config there")  # the 51st
    assert not needed.in_context(f, prefix, "we saw parse_config there")
    assert needed.in_context(f, "see parse_config here", "I see parse_config")  # fewer than 8 characters before it


def test_a_number_does_not_match_inside_a_longer_number():
    """A value that starts or ends with a digit is not found inside a longer number: 404 is not in 1.404, 404.5 or
    1,404 (the extractor does not read 404 there either), 1.2.3 is not in 1.2.3.4; at a sentence's full stop or
    beside other punctuation it is."""
    assert needed.occurs("value", "404", "got a 404. then (404), 404-page, :404")
    for text in ("v1.404", "404.5 s", "1,404 rows", "1.404,2"):
        assert not needed.occurs("value", "404", text), text
        assert ("value", "404") not in set(needed.facts_in(text)), text
    assert not needed.occurs("value", "1.2.3", "now 1.2.3.4") and needed.occurs("value", "1.2.3", "now 1.2.3.")
    assert not needed.occurs("value", "spotter-gqc.6", "spotter-gqc.6.1")
    rows = [{"role": "user", "content": "the server returned 404 on /login"}, {"role": "assistant", "content": "ok"}]
    rows.append({"role": "user", "content": "it took 0.404 s and served 1,404 rows"})
    assert needed.needed_facts(T(rows).messages, 2) == []


def test_more_boundaries_of_paths_values_commands_and_observations():
    """Stop-listed paths (/usr/bin/bash, /dev/null) and a file name with no letter in its stem (2024.log) are no
    path; a quoted flag with punctuation and no space is a value; a commit message is part of a short whole command
    unless it holds shell punctuation (then the command is not written out whole); the first message of a
    text-action transcript is written, even when the last one is an action."""
    facts = set(needed.facts_in('/usr/bin/bash and /dev/null, 2024.log, notes_2.log, run "--dry-run=true" now'))
    assert {f for f in facts if f[0] == "path"} == {("path", "notes_2.log")} and ("value", "--dry-run=true") in facts
    assert list(needed.commands_in('git commit -m "fix: parser"')) == ["git commit", 'git commit -m "fix: parser"']
    assert list(needed.commands_in('git commit -m "a; b" && npm test')) == ["git commit", "npm test"]
    msgs = T([{"role": "user", "content": "fix main_app.py"}, {"role": "assistant", "content": "```\nls\n```"}]).messages
    assert [s.source for s in needed.segments(msgs, 0)] == ["written"]


def test_a_command_the_prefix_ran_and_the_continuation_writes_is_needed():
    rows = [
        call("c1", "terminal", {"command": "cd web &&  npx prisma   migrate dev"}),
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
        {"role": "user", "content": "run npx prisma migrate dev again"},
    ]
    fs = needed.needed_facts(T(rows).messages, 2)
    assert {(f.kind, f.key, f.source) for f in fs} == {
        ("command", "npx prisma migrate", "written"),
        ("command", "npx prisma migrate dev", "written"),
    }


def test_a_url_is_not_used_again_by_a_longer_file_name_and_an_identifier_not_by_a_file_of_its_stem():
    # a summary or digest that lists `a.html` or `main_app.py` does not keep the URL `.../a` or the name `main_app`
    assert not needed.occurs("url", "https://example.com/docs/a", "see https://example.com/docs/a.html")
    assert needed.occurs("url", "https://example.com/docs/a", "see https://example.com/docs/a. Then")
    assert not needed.occurs("identifier", "main_app", "edited main_app.py and main_app.json")
    assert needed.occurs("identifier", "main_app", "main_app.run() and main_app.")
    assert needed.occurs("identifier", "logger", "logger.log(msg)")  # a call of a method named like an extension
    assert needed.occurs("identifier", "main_app", "main_app.pyx")  # not an extension the rule knows
