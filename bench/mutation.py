"""Mutation testing of the modules whose faults would break users most: does the test suite catch real faults?

    python bench/mutation.py                       # every target below, results in bench/results/mutation/
    python bench/mutation.py --module repair --jobs 2 --sample 150 --seed 1
    python bench/mutation.py --list --module plan  # the mutants, not run
    python bench/mutation.py --show plan:41        # one mutant's diff
    python bench/mutation.py --only plan:41,plan:57 # run these alone (after a test was added to kill them)
    make mutate                                    # the same as the first line (opt-in: not in CI)

How: each mutant is one small change to one module, made on its syntax tree (stdlib `ast`) and written out with
`ast.unparse` to a copy of compactctl/ (and tests/) in a temporary tree that comes first on PYTHONPATH; the
module's fast related tests then run there (`pytest -x -q`, hypothesis with a fixed seed and no example database,
so that a run is repeatable) under a per-mutant timeout. A mutant is killed when a test fails (or the run times out),
survived when every test passes. The unmutated module, written out the same way, must pass first (the baseline; its
time sets the timeout: 3x it and 30 s; on a loaded machine a slow survivor can still time out, so rerun the timed-out
ones with --only and a larger --timeout). Identical mutants (the same source once unparsed) run once.

Operators (one change a mutant):
- cmp:    a comparison operator negated (== !=, < >=, > <=, in / not in, is / is not) or its boundary moved (< <=, > >=);
- bool:   `and` for `or` and back;
- int:    an integer constant +1 and -1 (not True/False);
- const:  True for False and back;
- not:    a `not` removed;
- none:   a returned expression replaced by None, in a function whose return annotation allows None;
- delete: a statement in the body of an if/else, for or while replaced by `pass`.

What it measured (December 2026; a sample of 50 mutants a module, seed 1, 36 minutes on 2 shared cores with
--jobs 2; the first run's subsets were test_phases, test_properties and test_fuzz or test_grown_tail):
- repair    301 mutants, 50 run: 39 killed, 11 survived (8 against every related test then: test_formats and
            test_llamafactory killed 3); after the tests they led to: 1 survivor, equivalent;
- pairs     172 mutants, 50 run: 33 killed (5 by the timeout: loops that no longer end), 17 survived; after: 3,
            equivalent (pairing with lost or repeated ids had been tested for validity, never for which result
            answers which call);
- plan      330 mutants, 50 run: 22 killed (2 timeouts), 28 survived (2 "timeouts" under load were survivors); after:
            11 (6 equivalent, 5 real gaps left: boundaries of a token or of a heuristic window, a rung of the
            give-ground ladder no test lands on, a flag of a plan made from annotated zones);
- assemble   83 mutants, 50 run: 29 killed, 21 survived (the summary's role was checked only after repair had made the
            output valid); after: 10 (3 equivalent; 7 move the frame's token estimate, by one token (once down) or
            by the system note's on a second compaction: no test pins the estimate to the token).
A second sample (40 each of repair and pairs, seed 2) against the first round's tests: 4 and 5 survivors (+4
timeouts); after a second round, 3 and 2, all equivalent. One survivor was a bug (plan: from annotated zones, an
earlier summary past the head was still taken as the prior summary; fixed). Surviving mutants are the list to read:
each is either equivalent (no behaviour a user could see changes) or a gap in the tests.
- passthrough (the repair fast path, added later): 145 mutants, all run (10 min, --jobs 2, over test_passthrough and
            the restore test of a repaired compacted dataset): 120 killed (2 timeouts: a loop whose step was made 0),
            25 survived. 19 of them let a record through that repair changes, or raised on it (a first message not the
            user's, the last result lost, blank text or a list beside calls, `tool_calls: []`, calls on a user or
            system message, a malformed or reused call, the last text part's space told from the first part's); 5
            only lost the fast path (a record under "history", a refusal or an audio reply, a result named as its
            call); 1 equivalent. After the tests they led to (near-valid records: a valid one with one to three
            faults, what the fast path keeps compared with the ordinary path and tests/validator.py; valid records of
            each form it knows): 147 mutants (the fix below added 2), 1 survivor, equivalent (`content[-0]` for
            `content[-1]` in a check that every part is a dict, which it is by then). The near-valid records found a
            bug in the unmutated module: a source key named as the model's marks (a message's `_before_results`, a
            call's `_arguments_object`) passed the fast path, and what repair wrote failed `repair --check` (fixed).
The forty-first session (one helper a module, --jobs 1, four runs sharing 2 cores; samples, seed 1 then seed 2):
- prune, prune_steps (60 each, 90 min): 25 and 28 survived (+5 timeouts, loops that no longer end); after
            tests/test_prune.py, 9 and 15: equivalent (the bounded path taken longer to the same stopping point, a
            memo miss, a limit of 0), excerpt-sizing heuristics the mutant sizes no worse, and boundaries no test lands
            on yet (a message whose count is exactly the remaining limit; a run one character over its budget). A
            second sample (10 each, narrower tests): 2 and 1 left. No bug in prune.
- redact (100, 29 min): 46 survived (+1 timeout); after 20 tests, 18: 14 equivalent, 5 that only redact more,
            the rest size constants (`_AROUND` 64, `_AROUND_NAME` 240, `_BLOB` 4096, `KEY_WIDTH_MIN` 40). Second
            sample (60): 17, then 12. Two leaks fixed (the last line of a double-spaced key's tail; a 16-23-character
            piece of a quoted high-entropy string listed as a name).
- claude_code, codex (60 each, 23 min): 10 and 14 survived (+2 timeouts); after the tests, 3 and 0. Second sample
            (40 each): 10 and 2, then 1 and 0. Left: 11, all equivalent. Two writer bugs fixed (a prompt's line
            written before a late result; a moved line linked to a line off an earlier turn).
- fit (70, 55 min): 28 survived (+3 timeouts); after tests/test_fit.py, 10: 5 equivalent, 1 layout constant (12
            names an index line), 4 that move a token estimate by one (the exact check on the rendered text still
            holds the budget). Second sample (40): 9, all equivalent or one-token estimates. A rule its tests led
            to (after the shares, no index line after the first that does not fit: names strictly in rank order)
            kept fewer needed-later facts (Codex at 20% 96.7 -> 96.4%) and was reverted; `index_fit` no longer
            returns more names than it was given (no output changed).
The forty-second session (one helper a module, --jobs 1, three runs sharing 2 cores):
- offline (the offline summarizer, 303 mutants; 50, seed 1, 29 min over test_phases, test_budget_aware, test_fit and
            test_properties, not test_llm: it reaches the module only through the LLM's fallback): 25 survived, no
            timeouts. No test had pinned a request cut to its token cap (at the cap, or how much is kept), the
            numbering a second summary continues, the project root's thresholds, a line the earlier summary and the
            span both say, the earlier summary's files, decisions and open work carried, Blocked's one line, the
            plan's open items, --focus (a three-letter word, off-topic actions after the rest, a verbatim ask never
            shed), or which names the index leaves out. After tests/test_offline.py (Facts built by hand, the
            summary's sections read back), 7: 4 equivalent (`FOREIGN_GOAL_CAP` 601, which `goal_cap` <= 600 always
            undercuts; `return None` for fewer than 3 paths, which the threshold of 3 refuses anyway; the split of an
            error's first line at 2 or 0, the same for the lines facts writes) and 3 size constants (`ANCHOR_CAP`
            1500, the 400 of a pending ask, the 300 of a finding). A second sample (30, seed 2) against those tests:
            11, then 3 (`ANCHOR_CAP` again, the 8 characters an error's short form needs to be dropped, the window
            of 10 in which a plan item says "done"). One bug fixed: an indented error line under a failed action that
            began with a number and a dot ("  10.0.0.5:5432: connection refused") set the number the next summary's
            actions continued from (1, then 11). No output of compact on the corpus changed (8,000 and 32,000).
- facts (the offline summarizer's fact extractor; 307 mutants, 50 run, 18 min, over test_budget_aware, test_outline,
            test_phases and test_fit: 34 s, where the TARGETS list took over 60): 16 survived, no timeout. They were
            boundaries and constants no test landed on (a finding's 20 characters, a decision's 12 to 300, a text plan's
            300 a line, the four quoted phrases a write's line keeps, an answer that is a list's "10."), ports that no
            test ever showed (`group(0)` or `group(3)` for `group(1)` survived; `group(3)` raises on any port), a write's
            line given an empty `strings:`, a digest's outline put on its last error line, a failed patch's short error
            placed at its last file. After tests/test_facts.py: 1, equivalent (`return ''` for a digest with no line
            left, which cannot happen: its first line is its `[name] ...`). A second sample (30, seed 2): 6 (an earlier
            summary in the span no longer taken as the prior summary, a hash inside a UUID listed, a greeting's three
            words, a short error's 100 characters, an asked question's 300), then 1: a greeting of four small-talk words
            ("Good morning, thank you") counts as a goal, and with the mutant's limit it would not; left as is (a
            heuristic's limit, not a clear bug). A third sample (30, seed 3, about 8 shared with the first): all killed.
            The 4 left survived test_properties, test_recall, test_llm, test_continuation and test_llm_faults too (11
            min). One bug fixed: a command run in a workdir of its own that holds "` -> " (`grep -n '` -> ' notes.md`)
            had "(in dir)" written inside the command; now it follows the command (its new mutants: 2 of 9 survive,
            equivalent: the command's backtick is never at 0). No compact output on the corpus changed (8k and 32k
            windows, 69 files each: the corpus has no workdir call).
- journal (83 mutants; 40, seed 1, 37 min over test_journal, the resume tests of test_scale, test_dataset_faults,
            test_archive_carry and test_exit_codes: 112 s a run): 11 survived, no timeout. Every resume test killed a
            real process at a moment it timed, and none had looked at a part file itself: a part longer than its
            checkpoint not cut back (the resumed run rewrote the same bytes over it; a shorter rewrite, as an LLM's
            summary gives, would have left the old tail), a part shorter than the journal says not refused (a hole of
            zero bytes), a new part's 0600, the mode of the file a rename finished by --resume replaces, the line number
            of a damaged journal line, three error messages' wording. After tests of PartFile and Journal in
            tests/test_journal.py: 3, equivalent (stdin left out of the header of a run that cannot be resumed anyway;
            Journal.close not closing, or not forgetting, a file it fsyncs at every write). The other 43 mutants (the
            whole module then run) against those tests: 3, then 1, equivalent (a file not closed before the error
            that refuses it). No bug in the journal.
- sinks (388 mutants; 50, seed 1, 49 min over test_dataset_faults, test_scale, test_journal, test_archive_carry and
            test_cli: 117 s): 10 survived, no timeout. Gaps: a second kill in the same file of -o DIR/ (the resumed
            run's count of that file's transcripts restarted at 0: the next --resume wrote some again), a kill while the
            outputs were renamed into place (the side files left as parts), --resume over an SQLite archive, a
            resumed rerun over its own archive (what the killed run had archived counted as references to carry:
            copied in twice), the end record's `carried`. tests/test_sinks.py kills a process (os._exit) at a chosen
            point instead of a timed one (after the N-th transcript with what it wrote flushed, at the first rename, at
            the N-th -o DIR/ file put in place, Ctrl-C), once or several times, and compares every file with an
            uninterrupted run's, byte for byte. After: 5 (3 equivalent: two initial values the constructor sets again,
            an assert; 2 untested error paths: the wording of a rename that fails at the end, closing the side files
            when keeping them failed). A second sample (30, seed 2) against those tests: 4 (--resume with no
            checkpoint beside a device side file refused, the "side files match it" note under -q, a makedirs for a
            part that exists), then 2, equivalent. One bug fixed: an output whose place is a folder (an -o DIR/ file, a
            side file) failed only at the end, exit 4, with the outputs renamed before it in place and the archive
            naming the missing one (after a kill, --resume deleted the parts and the journal); it is refused before
            anything is written (check_collisions; exit 4). No output of a run that succeeds changes.
The forty-third session (one helper a module, --jobs 1, three runs sharing 2 cores):
- needed (the continuation eval's fact extractor, 578 mutants; 60, seed 1) 36 survived, after tests/test_needed.py 6;
            continuation (308; 50, seed 1) 8, then 3; second samples (30 each, seed 2): 9 -> 3 and 2 -> 1. What is
            left is equivalent (a 1-character key no rule makes, a cache size, boundaries no cut reaches, a window of
            0-1 token). Four instrument bugs fixed, each moving the published figures (the eval was rerun): a path or
            URL written again with the trailing slash its key dropped was not "used again"; any capital word starting
            with E (ERROR, EXIT) was an identifier and ECONNREFUSED was not, and plural acronyms (APIs) were
            identifiers; `make` alone was a command fact every "make sure" used again; a value matched inside a longer
            number (404 in 1,404), which favoured compactctl (its "(4,193 chars)" kept a needed 193).
- engines (the runner's serial, thread and worker-process engines, 279 mutants; 60, seed 1, first over 17 tests that
            run --workers, --jobs and --on-error skip, the target's list taking 307 s a run): 35 survived, after
            tests/test_engines.py and wider files 13; second sample (30, seed 2) 14 -> 5. What is left is equivalent
            (where batches are cut, how many transcripts are in flight, a Windows-only branch, a tokenizer built in
            each worker). Two bugs fixed: a session refused in a worker lost its batch's finished records (--workers 2
            printed nothing where --workers 1 printed them); with --jobs a bad line read ahead was reported before the
            error of a transcript read before it.
- guard (186; 60, seed 1; the target's list would take ~55 min: 16 run over it, the rest with tests/test_guard.py
            first): 9 of the first 16 survived; after the tests 13 of 60 (equivalent, `COMMAND_CHARS` and
            `MIN_INDEX_ROOM`, one-token margins of _cut_to_fit); second sample (30, seed 2) 7 -> 6. llm (383; 50, seed 1,
            over test_llm and test_llm_faults): 14 survived (+1 timeout), after the tests 5 (equivalent, a one-token
            floor of a chunk). No bug; the notes led to one in the guard (a one-word command taken as shown by a
            longer word), fixed.
The forty-fourth session (one helper for restore's two modules, one for the counter and the reader; --jobs 1):
- originals (restore, 276 mutants; 60, seed 1) 16 survived, after tests/test_originals.py 4 (equivalent); second
            sample (25, seed 2) 3 -> 2; carry (95; 40, seed 1) 22, then 12 (equivalent: the closure by reference adds
            nothing `_others` does not carry; or unreachable), second sample (20) 5, equivalent. Three bugs: parallel
            results restored as ShareGPT answered the wrong calls (exit 0; found writing a test for a survivor), a
            damaged archived original named "<archive>:0", a damaged index row beside an intact JSONL archive
            written over ended in a traceback.
- jsonl (195; 50, seed 1) 16 survived (+9 that a replaced /dev/full had "killed", see devices_mended), after the
            tests 6, second sample (30, seed 2) 10 -> 7, equivalent or killed only outside the list; tokens (322; 50)
            37, then 10 (equivalent, memo and size constants), second 10 -> 8; ranks (255; 40) 12 (+2 timeouts), then
            10, equivalent, second 8, equivalent. One bug: a line cut short was told from a wrong one by where the
            JSON error stood (`{...}}` said "truncated", a line cut inside `tru` or a `\\u00` escape said "invalid"). The
            rank-cache tests set XDG_CACHE_HOME, which conftest's COMPACTCTL_RANK_CACHE overrides: they tested the
            shared cache, never an unwritable folder; they use their own now.
The forty-fifth session (one helper for the OpenAI and Anthropic formats, one for repair's rules and ShareGPT; --jobs
1, four helpers sharing 2 cores at a load of 9-10):
- openai (179 mutants; 50, seed 1) 11 survived, none a bug in openai.py (a first record `{"messages": []}` a
            traceback, Anthropic blocks under "history" read as OpenAI chat, object arguments written as an object, a
            call without a name a traceback, a session refused naming line -1), 0 after tests/test_format_openai.py.
- anthropic (224; 50, seed 1; 47 run, 3 loops by inspection left to the timeout) 13 survived, 0 after
            tests/test_format_anthropic.py (--timeout 60: the loops time out or are killed). Two bugs: a user row of
            tool results alone lost its own keys ("timestamp") when written again; an Anthropic session whose first
            line held a key besides role and content was read as OpenAI chat (its tool blocks opaque, an orphan
            result left in place, `repair --check` ok).
- rules (184; 50, seed 1) 11 survived (a rule said at the wrong message, text before Anthropic tool results never
            reported), 0 after tests/test_rules.py. One bug: content no API takes (a dict), built through the
            library, passed check and was written.
- sharegpt (477; 50, seed 1; stopped after 18: two loop mutants cost the timeout each) 7 survived, 1 after
            tests/test_sharegpt.py (equivalent: `_think` is set only with a string). One bug, found reading the
            writer: results repair adds to a record of observation or function turns were one tagged turn, read back
            as one result (repair's output failed --check). The other 32 of the sample (forty-seventh session, 14.7
            min, one job): 18 killed, 1 timed out, 13 survived; 5 equivalent (a loop bound one past the end, a
            one-item list's [-1], a zip whose lengths were checked the line before, results carrying one tool
            message's keys, an index no reader produces), 8 gaps killed by six tests in tests/test_llamafactory.py
            (string content, malformed parts refused with file and line, an assistant turn of calls alone, a lone
            result holding a JSON array, an image's text kept; rerun 8 of 8 killed). No bug found.
- harness (who wrote a user message: the person or the harness; 77 mutants; 50, seed 1, 19 min over test_budget_aware,
            test_formats and test_codex_variants: 18 s a run): 10 survived, no timeout. No test had shown a Codex
            `<cwd>` that a command's output or the agent's reply quotes before the summarized span (it set the
            session's directory), an IDE selection that quotes "## My request for Codex:" (the request taken from
            between the two), a command echo with arguments but no `<command-name>` (a traceback, or the tags as the
            ask), SWE-agent's function-calling turns, whose parsed `action` sits beside their `tool_calls` (each
            command listed twice, the second "no result recorded"), a system prompt showing its reply format in a
            ```bash block before the demonstration (the demonstration's digest read "[bash] ran `ls -a`"), or a
            mini-swe-agent thought quoting a ```sh snippet before its ```bash action (the snippet taken as the
            command). After tests/test_harness.py: 2, equivalent (is_injected's `role != "user"` check: every caller
            passes user messages only) or a size constant (`HARNESS_ASK_CHARS` 601). The other 27 mutants (the whole
            module then run) against those tests: 3 (`HARNESS_ASK_CHARS` 599, the cap's `<=` made `<`: a harness ask
            of exactly 600 characters said "…[cut]" with nothing cut; bare_command's `and` made `or`: a `/model` echo
            merged with its output, as a converter that makes turns alternate writes it, lost the output's note),
            then 1 (`HARNESS_ASK_CHARS` 599). Left: 3 of 77, 1 equivalent and 2 the size constant moved by one. No bug
            in harness.py.
- archive (the archive of removed originals and a JSONL archive's index, 92 mutants; 40, seed 1, 18.5 min over
            test_recall_index, test_archive_carry, test_restore and test_originals: the list's test_sinks made a run
            too slow under load): 19 survived, no timeout. No test had looked at the text an original is found and
            recalled by (a reasoning left out, call arguments that are a JSON array or a number a traceback, a
            command's string written escaped, an argv as a JSON list), at `recall --index`'s count and path, at a JSONL
            that is no archive (a transcript given as --archive indexed without a word), at a missing SQLite archive
            (said to be no archive index), at the wording of a SQLite archive in a missing folder, or at a filesystem
            without hard links (the index never put in place; a file that appeared meanwhile written over). After
            tests/test_archive.py: 6, equivalent (`DERIVED_VERSION` 3, which only rebuilds an older index once; the line
            and index `searchable` gives `message_from_dict`, which no error shows any more; `SqliteSink.count`, which
            nothing reads; the commit before `executescript(INDEXES)`, which commits first anyway (Python's sqlite3);
            `uri=False`, the same on an SQLite built with URI filenames on, as the one tested). The fix's 8 mutants: all
            killed. Two bugs fixed, both in a JSONL archive edited by hand: a record whose message no reader takes
            (no role, content an object) was refused as `<archive>:0: message has no role`, naming neither the file
            nor the line; a field a run writes as a string or a number edited into an object or a list (`"ref": {}`)
            ended in a traceback (sqlite3.ProgrammingError, exit 1). Both now name `archive.jsonl:LINE` (exit 3).
- record (the record API, 168 mutants; 30, seed 1, 32 min over the target's list): 13 survived, no timeout. No test
            had pinned where a value that is no JSON stands (the path cut to `[...]` past 7 levels), a list nested past
            512 levels (its check removed: refused only later, by the writer), the line such an error names, a line
            that is no JSON object, the name compact_line gives a transcript (`file#N`, `file`: three mutants), a
            session read from a file written back as one record, a format that writes no single record or line
            (claude-code, codex: the error dropped, or naming the input's format), or the warning of a record that
            cannot fit. After tests in tests/test_record.py: 2, equivalent (`ensure_ascii=True` for the line of a
            record orjson cannot write: the same values are read back from it, and no byte of it is written; the
            warning "written as read" of a CannotFit without a fallback, which compact never raises: the pipeline gives
            every CannotFit one). No bug in record.py; the warning said "pruned and repaired, not
            summarized" of a transcript compacted but over its target (fixed).
- outputs (how a tool output ended: outcome, error lines, tally; 303 mutants; 40, seed 1, 20 min over test_outputs,
            test_budget_aware, test_phases and test_formats: 37 s a run): 19 survived, no timeout. No test had shown
            Gemini CLI's shell output unwrapped (its text after "Output: ", its "Error: ..." kept, its exit code
            before a "Signal:" line), a Codex JSON cut mid-string (read as text; `return None` raised), the two error
            lines a successful call keeps, outcome(ok_errors=False), a call with no result (0 lines, 0 characters),
            a failed output of names alone (`git diff --exit-code --name-only`: its last name, not the names run
            together), an exit code only at the end of a long output (OpenHands' "[The command completed with exit
            code 1.]"), the first of several lines that say a failure (jest), a bare "Error: " said with its next
            line only (prisma), an "Error: (none)" that says nothing failed, or the limits (SHORT_FAILURE's 400, a
            failure line of 8 characters, the 200 and 300 character cuts, the 400-character error line). After
            tests/test_outputs.py: 4, equivalent (`find("\n", at + 2)` in the Gemini unwrap, `0 <=` before a short
            failure's conclusion, two `split` limits whose first pieces are the same). The two fixes' 12 new mutants:
            3, then 1, equivalent. A second sample (30, seed 2): 12 (4 gaps: JSON that is not Codex's with
            "metadata" or a non-text "output", TALLY_LINE's 160, a <tool_use_error> cut at 300 or empty), then 8,
            equivalent (windows of 64, 200 and 4000 characters that real outputs never straddle, the ERROR_HINTS
            pre-test made always true: only time changes). Two bugs fixed: a tally line the 2000-character window
            cut read with its count's first digits lost ("12 passed" said "2 passed"); Gemini CLI's older
            "Stdout: (empty)" / "Stderr: (empty)" kept as a line of the output beside the other stream. No outcome or
            tally of the corpus's 2728 tool results changed. Left then: an error line of 400 characters or more was not
            one, and _benign dropped Maven's "[ERROR] Tests run: 3, Failures: 1, Errors: 0 ... <<< FAILURE!" for its
            "Errors: 0": both fixed in the forty-seventh session (helper 160; a long line counts when it opens as a
            message, cut to 300; a zero count beside a failure is not benign), with tsc's "file(l,c): error" lines
            and four tally misreads (`ls -l` times, git's "create mode", wc's "total", all-zero and jest snapshot
            tallies: 11 of the corpus's 44 tallies were misreads); then (helper 162) log records' error lines after their
            time, unittest's verdict in its tally, short JSON error bodies.
Do not edit a target module while its run goes on: each mutant is made from the module as it then reads (its
indices shift); tests/ is copied once, at the start.
`--only m:N` runs module m alone (it ran every target's baseline first).
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import contextlib
import copy
import difflib
import functools
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# module -> the fast tests related to it (found with grep: the tests that import it or what calls it), quickest and
# most direct first, so that `-x` stops early on a killed mutant. The first run used test_phases, test_properties and
# test_fuzz (repair, pairs) or test_grown_tail (plan, assemble); the rest are what its survivors were then run against.
TARGETS: dict[str, tuple[str, list[str]]] = {
    "repair": (
        "compactctl/phases/repair.py",
        ["tests/test_phases.py", "tests/test_properties.py", "tests/test_fuzz.py", "tests/test_formats.py", "tests/test_llamafactory.py"],
    ),
    "pairs": ("compactctl/pairs.py", ["tests/test_phases.py", "tests/test_properties.py", "tests/test_fuzz.py", "tests/test_formats.py"]),
    "plan": (
        "compactctl/phases/plan.py",
        [
            "tests/test_phases.py",
            "tests/test_api.py",
            "tests/test_properties.py",
            "tests/test_grown_tail.py",
            "tests/test_cli.py::test_plan_shows_zones_and_annotates",
            "tests/test_budget_aware.py::test_a_transcript_that_repair_takes_over_its_target_is_compacted_not_refused",
        ],
    ),
    "assemble": (
        "compactctl/phases/assemble.py",
        [
            "tests/test_phases.py",
            "tests/test_properties.py",
            "tests/test_grown_tail.py",
            "tests/test_api.py",
            "tests/test_budget_aware.py::test_output_over_the_target_is_never_a_silent_success",
        ],
    ),
    "passthrough": (
        "compactctl/passthrough.py",
        ["tests/test_passthrough.py", "tests/test_restore.py::test_a_compacted_dataset_repaired_without_change_restores"],
    ),
    "prune": (
        "compactctl/phases/prune.py",
        [
            "tests/test_prune.py",
            "tests/test_phases.py",
            "tests/test_prune_bounded.py",
            "tests/test_budget_aware.py",
            "tests/test_properties.py",
            "tests/test_outline.py::test_a_read_that_fits_its_target_with_a_bare_outline_needs_no_summary",
        ],
    ),
    "prune_steps": (
        "compactctl/phases/prune_steps.py",
        [
            "tests/test_prune.py",
            "tests/test_phases.py",
            "tests/test_prune_bounded.py",
            "tests/test_budget_aware.py",
            "tests/test_properties.py",
        ],
    ),
    "redact": ("compactctl/redact.py", ["tests/test_secrets.py", "tests/test_secrets_keys.py"]),
    "claude_code": (
        "compactctl/formats/claude_code.py",
        ["tests/test_formats.py", "tests/test_claude_code_branches.py", "tests/test_format_properties.py", "tests/test_odd_input.py"],
    ),
    "fit": (
        "compactctl/summarizers/fit.py",
        ["tests/test_fit.py", "tests/test_phases.py", "tests/test_budget_aware.py", "tests/test_properties.py", "tests/test_llm.py"],
    ),
    "codex": (
        "compactctl/formats/codex.py",
        ["tests/test_formats.py", "tests/test_codex_variants.py", "tests/test_format_properties.py", "tests/test_odd_input.py"],
    ),
    "offline": (
        "compactctl/summarizers/offline.py",
        ["tests/test_phases.py", "tests/test_budget_aware.py", "tests/test_fit.py", "tests/test_properties.py", "tests/test_llm.py"],
    ),
    "facts": (
        "compactctl/summarizers/facts.py",
        ["tests/test_facts.py", "tests/test_budget_aware.py", "tests/test_outline.py", "tests/test_phases.py", "tests/test_fit.py"],
    ),
    "sinks": (
        "compactctl/runner/sinks.py",
        [
            "tests/test_sinks.py",
            "tests/test_dataset_faults.py",
            "tests/test_scale.py",
            "tests/test_journal.py",
            "tests/test_archive_carry.py",
            "tests/test_cli.py",
        ],
    ),
    "journal": (
        "compactctl/journal.py",
        [
            "tests/test_journal.py",
            "tests/test_sinks.py",
            "tests/test_dataset_faults.py",
            "tests/test_archive_carry.py",
            "tests/test_exit_codes.py",
        ],
    ),
    "llm": (
        "compactctl/summarizers/llm.py",
        ["tests/test_llm.py", "tests/test_llm_faults.py", "tests/test_record.py", "tests/test_secrets.py", "tests/test_budget_aware.py"],
    ),
    "guard": ("compactctl/summarizers/guard.py", ["tests/test_llm.py", "tests/test_llm_faults.py", "tests/test_names.py"]),
    "engines": (
        "compactctl/runner/engines.py",
        [
            "tests/test_lane.py",
            "tests/test_dataset_faults.py",
            "tests/test_exit_codes.py",
            "tests/test_scale.py",
            "tests/test_sinks.py",
            "tests/test_determinism.py",
            "tests/test_prune_bounded.py",
        ],
    ),
    "needed": ("compactctl/needed.py", ["tests/test_continuation.py", "tests/test_outside_eval.py"]),
    "continuation": ("compactctl/continuation.py", ["tests/test_continuation.py", "tests/test_evaluate.py"]),
    "originals": ("compactctl/originals.py", ["tests/test_restore.py", "tests/test_archive_carry.py", "tests/test_originals.py"]),
    "carry": (
        "compactctl/carry.py",
        [
            "tests/test_archive_carry.py",
            "tests/test_restore.py",
            "tests/test_sinks.py::test_a_rerun_over_its_own_archive_killed_and_resumed_carries_nothing_twice",
        ],
    ),
    "tokens": ("compactctl/tokens.py", ["tests/test_tokens.py", "tests/test_config.py"]),
    "ranks": ("compactctl/ranks.py", ["tests/test_tokens.py", "tests/test_config.py"]),
    "jsonl": ("compactctl/jsonl.py", ["tests/test_jsonl.py", "tests/test_odd_input.py"]),
    "search": ("compactctl/search.py", ["tests/test_recall.py", "tests/test_recall_index.py", "tests/test_mcp.py"]),
    "sharegpt": (
        "compactctl/formats/sharegpt.py",
        [
            "tests/test_sharegpt.py",
            "tests/test_llamafactory.py",
            "tests/test_odd_input.py",
            "tests/test_formats.py",
            "tests/test_convert.py",
            "tests/test_restore.py",
            "tests/test_originals.py",
            "tests/test_format_properties.py",
        ],
    ),
    "openai": (
        "compactctl/formats/openai.py",
        [
            "tests/test_format_openai.py",
            "tests/test_formats.py",
            "tests/test_convert.py",
            "tests/test_odd_input.py",
            "tests/test_format_properties.py",
            "tests/test_passthrough.py",
        ],
    ),
    "anthropic": (
        "compactctl/formats/anthropic.py",
        [
            "tests/test_format_anthropic.py",
            "tests/test_formats.py",
            "tests/test_convert.py",
            "tests/test_odd_input.py",
            "tests/test_format_properties.py",
            "tests/test_restore.py",
        ],
    ),
    "rules": (
        "compactctl/phases/rules.py",
        [
            "tests/test_rules.py",
            "tests/test_api.py",
            "tests/test_phases.py",
            "tests/test_properties.py",
            "tests/test_fuzz.py",
            "tests/test_passthrough.py",
            "tests/test_odd_input.py",
        ],
    ),
    "harness": (
        "compactctl/harness.py",
        ["tests/test_harness.py", "tests/test_budget_aware.py", "tests/test_formats.py", "tests/test_codex_variants.py"],
    ),
    "archive": (
        "compactctl/archive.py",
        [
            "tests/test_archive.py",
            "tests/test_recall_index.py",
            "tests/test_restore.py",
            "tests/test_archive_carry.py",
            "tests/test_originals.py",
            "tests/test_sinks.py",
        ],
    ),
    "record": (
        "compactctl/record.py",
        ["tests/test_record.py", "tests/test_dataset_faults.py", "tests/test_scale.py", "tests/test_llm.py"],
    ),
    "outputs": (
        "compactctl/outputs.py",
        ["tests/test_outputs.py", "tests/test_budget_aware.py", "tests/test_phases.py", "tests/test_formats.py"],
    ),
}

NEGATED: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
BOUNDARY: dict[type[ast.cmpop], type[ast.cmpop]] = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
SYMBOL = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}


@dataclass(frozen=True)
class Site:
    """One mutant: where, which operator, what it does."""

    module: str  # key of TARGETS
    index: int  # its number among the module's mutants (stable while the module's source is)
    line: int
    op: str
    desc: str

    @property
    def id(self) -> str:
        return f"{self.module}:{self.index}"


class Mutator(ast.NodeTransformer):
    """Walks a module's tree and offers every mutation site in a fixed order; with `target`, applies that one."""

    def __init__(self, module: str, target: int | None = None) -> None:
        self.module = module
        self.target = target
        self.sites: list[Site] = []
        self.optional_return: list[bool] = []

    def offer(self, node: ast.AST, op: str, desc: str, make: Callable[[], ast.AST]) -> ast.AST | None:
        """Record a site at `node`; the mutated node when it is the target, else None."""
        site = Site(self.module, len(self.sites), getattr(node, "lineno", 0), op, desc)
        self.sites.append(site)
        return make() if site.index == self.target else None

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        self.optional_return.append(node.returns is not None and "None" in ast.unparse(node.returns))
        self.body_only(node)
        self.optional_return.pop()
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        self.body_only(node)
        return node

    def body_only(self, node: ast.FunctionDef | ast.ClassDef) -> None:
        """Visit a definition's body and arguments, not its decorators (`@dataclass(frozen=True)` is no behaviour)."""
        decorators, node.decorator_list = node.decorator_list, []
        self.generic_visit(node)
        node.decorator_list = decorators

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        self.optional_return.append(False)
        self.generic_visit(node)
        self.optional_return.pop()
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        out: ast.AST | None = None
        for k, o in enumerate(node.ops):
            for table, kind in ((NEGATED, "negated"), (BOUNDARY, "boundary")):
                new = table.get(type(o))
                if new is None:
                    continue
                desc = f"{SYMBOL[type(o)]} -> {SYMBOL[new]} ({kind})"
                out = self.offer(node, "cmp", desc, functools.partial(_with_op, node, k, new())) or out
        return out or node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        desc = "and -> or" if isinstance(node.op, ast.And) else "or -> and"
        return self.offer(node, "bool", desc, lambda: ast.BoolOp(op=other, values=node.values)) or node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        v = node.value
        if isinstance(v, bool):
            return self.offer(node, "const", f"{v} -> {not v}", lambda: ast.Constant(not v)) or node
        if isinstance(v, int):
            plus = self.offer(node, "int", f"{v} -> {v + 1}", lambda: ast.Constant(v + 1))
            minus = self.offer(node, "int", f"{v} -> {v - 1}", lambda: ast.Constant(v - 1))
            return plus or minus or node
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return self.offer(node, "not", "not removed", lambda: node.operand) or node
        return node

    def visit_Return(self, node: ast.Return) -> ast.AST:
        self.generic_visit(node)
        v = node.value
        if self.optional_return and self.optional_return[-1] and v is not None and not (isinstance(v, ast.Constant) and v.value is None):
            return self.offer(node, "none", "return None", lambda: ast.Return(value=ast.Constant(None))) or node
        return node

    def visit_If(self, node: ast.If) -> ast.AST:
        self.generic_visit(node)
        return self.delete_in_bodies(node)

    def visit_For(self, node: ast.For) -> ast.AST:
        self.generic_visit(node)
        return self.delete_in_bodies(node)

    def visit_While(self, node: ast.While) -> ast.AST:
        self.generic_visit(node)
        return self.delete_in_bodies(node)

    def delete_in_bodies(self, node: ast.If | ast.For | ast.While) -> ast.AST:
        for body in (node.body, node.orelse):
            for k, stmt in enumerate(body):
                if isinstance(stmt, ast.Pass):
                    continue
                first = ast.unparse(stmt).split("\n")[0][:60]
                made = self.offer(stmt, "delete", f"delete `{first}`", functools.partial(_without, node, body, k))
                if made is not None:
                    return made
        return node


def _with_op(node: ast.Compare, k: int, new: ast.cmpop) -> ast.Compare:
    ops = list(node.ops)
    ops[k] = new
    return ast.Compare(left=node.left, ops=ops, comparators=node.comparators)


def _without(node: ast.If | ast.For | ast.While, body: list[ast.stmt], k: int) -> ast.AST:
    """`node` with statement k of `body` (its body or orelse) replaced by `pass`."""
    out = copy.copy(node)
    new = [*body[:k], ast.Pass(), *body[k + 1 :]]
    if body is node.body:
        out.body = new
    else:
        out.orelse = new
    return out


def parse(module: str) -> ast.Module:
    return ast.parse((ROOT / TARGETS[module][0]).read_text(encoding="utf-8"))


def sites(module: str) -> list[Site]:
    m = Mutator(module)
    m.visit(parse(module))
    return m.sites


def mutant_source(module: str, index: int | None) -> str:
    """The module written out by ast.unparse, with mutant `index` applied (None: unmutated, the baseline)."""
    tree = Mutator(module, index).visit(parse(module))
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


class Tree:
    """A temporary copy of the project (compactctl/, tests/, what the tests read) in which one mutant at a time runs."""

    def __init__(self, base: Path) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="tree-", dir=base))
        shutil.copytree(ROOT / "compactctl", self.dir / "compactctl", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(ROOT / "tests", self.dir / "tests", ignore=shutil.ignore_patterns("__pycache__"))
        for name in ("sample_transcripts", "pyproject.toml", "bench"):  # bench: gen.py, which some tests import
            (self.dir / name).symlink_to(ROOT / name)
        self.proc: subprocess.Popen | None = None

    def stop(self) -> None:
        """End the run under way in this tree (its own process group), if any."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)

    def run(self, module: str, source: str, tests: list[str], timeout: float) -> tuple[str, float, str]:
        """(outcome: killed / survived / timeout, seconds, the last lines of pytest's output) of `source` as `module`."""
        path = self.dir / TARGETS[module][0]
        original = path.read_text(encoding="utf-8")
        path.write_text(source, encoding="utf-8")
        for pyc in path.parent.glob(f"__pycache__/{path.stem}.*.pyc"):
            pyc.unlink()  # a mutant of the same size written in the same second would reuse it
        shutil.rmtree(self.dir / ".hypothesis", ignore_errors=True)  # no failing example replayed from another mutant
        env = {**os.environ, "PYTHONPATH": str(self.dir)}
        env.pop("COMPACTCTL_CORPUS", None)
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning"]
        cmd += ["-o", "addopts=", "--hypothesis-seed=0", *tests]
        t0 = time.monotonic()
        p = self.proc = subprocess.Popen(
            cmd, cwd=self.dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            out, _ = p.communicate(timeout=timeout)
            outcome = "survived" if p.returncode == 0 else "killed"
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)  # this run's own process group, nothing else
            out, _ = p.communicate()
            outcome = "timeout"
        finally:
            path.write_text(original, encoding="utf-8")
        tail = "\n".join(out.decode(errors="replace").strip().splitlines()[-3:])
        broken = devices_mended()
        if broken:  # a mutant renamed an output over a device (as root): mended, and that mutant counts as killed
            outcome, tail = "killed", f"replaced {', '.join(broken)} (made again)\n{tail}"
        return outcome, time.monotonic() - t0, tail


DEVICES = {"/dev/null": (1, 3), "/dev/full": (1, 7), "/dev/zero": (1, 5)}


def devices_mended() -> list[str]:
    """The machine's devices a test run replaced with a file, made again (as root). A mutant of the output writer
    renamed its part file over /dev/full when a test wrote there: every later run on the machine that wrote to
    /dev/full met a regular file for twenty minutes. Tests now write to devices of their own (tests/conftest.py's
    own_device), but a test that names one of these can still meet such a mutant."""
    import stat

    broken = []
    for dev, (major, minor) in DEVICES.items():
        try:
            if stat.S_ISCHR(os.stat(dev).st_mode):
                continue
        except FileNotFoundError:
            pass
        if os.geteuid() != 0:
            continue
        with contextlib.suppress(FileNotFoundError):
            os.unlink(dev)
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
        os.chmod(dev, 0o666)
        broken.append(dev)
    return broken


def chosen(args: argparse.Namespace) -> Iterator[tuple[str, list[Site]]]:
    """Per module, the mutants to run: all, those of --only, or a --sample of them."""
    only = {s for s in args.only.split(",")} if args.only else None
    named = list(dict.fromkeys(s.split(":")[0] for s in only)) if only else []  # --only a:1 runs module a alone
    for module in args.module or [m for m in named if m in TARGETS] or list(TARGETS):
        every = sites(module)
        pick = [s for s in every if only is None or s.id in only]
        if args.sample and len(pick) > args.sample:
            pick = sorted(random.Random(f"{args.seed}:{module}").sample(pick, args.sample), key=lambda s: s.index)
        yield module, pick


def show(mutant: str) -> str:
    module, index = mutant.split(":")
    base, mut = mutant_source(module, None), mutant_source(module, int(index))
    return "".join(difflib.unified_diff(base.splitlines(True), mut.splitlines(True), f"{module} (unparsed)", mutant, n=2))


def source_line(module: str, line: int) -> str:
    lines = (ROOT / TARGETS[module][0]).read_text(encoding="utf-8").splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def run_module(module: str, todo: list[Site], args: argparse.Namespace, trees: list[Tree], log) -> list[dict]:
    """Run the baseline, then every mutant of `todo` (distinct sources only) on the trees in parallel."""
    tests = args.tests.split(",") if args.tests else TARGETS[module][1]
    outcome, secs, tail = trees[0].run(module, mutant_source(module, None), tests, timeout=1800)
    if outcome != "survived":
        sys.exit(f"{module}: the unmutated module fails its tests; nothing to measure\n{tail}")
    timeout = args.timeout or max(3 * secs + 30, 60)
    print(f"{module}: baseline {secs:.1f}s over {', '.join(tests)}; timeout {timeout:.0f}s; {len(todo)} mutants", flush=True)
    base = mutant_source(module, None)
    seen: dict[str, str] = {}
    free: list[Tree] = list(trees)
    lock = threading.Lock()
    results: list[dict] = []

    def one(site: Site, source: str) -> dict:
        with lock:
            tree = free.pop()
        try:
            outcome, secs, tail = tree.run(module, source, tests, timeout)
        finally:
            with lock:
                free.append(tree)
        return {**asdict(site), "id": site.id, "outcome": outcome, "seconds": round(secs, 1), "tail": tail}

    pool = concurrent.futures.ThreadPoolExecutor(len(trees))
    try:
        futures = []
        for site in todo:
            source = mutant_source(module, site.index)
            digest = hashlib.sha256(source.encode()).hexdigest()
            if source == base or digest in seen:
                results.append({**asdict(site), "id": site.id, "outcome": "identical", "same_as": seen.get(digest, "original")})
                continue
            seen[digest] = site.id
            futures.append(pool.submit(one, site, source))
        for f in concurrent.futures.as_completed(futures):
            r = f.result()
            results.append(r)
            log.write(json.dumps(r) + "\n")
            log.flush()
            mark = {"killed": ".", "timeout": "t", "survived": "S"}[r["outcome"]]
            print(mark, end="" if mark != "S" else f"[{r['id']}]", flush=True)
    except BaseException:  # stopped: no mutant left to start, none left running
        pool.shutdown(wait=False, cancel_futures=True)
        for tree in trees:
            tree.stop()
        raise
    pool.shutdown()
    print(flush=True)
    return sorted(results, key=lambda r: r["index"])


def summary(module: str, generated: int, results: list[dict], seconds: float) -> str:
    count = {k: sum(r["outcome"] == k for r in results) for k in ("killed", "timeout", "survived", "identical")}
    ran = count["killed"] + count["timeout"] + count["survived"]
    lines = [
        f"## {module} ({TARGETS[module][0]}): {generated} mutants generated, {len(results)} chosen, {ran} run "
        f"({count['identical']} identical to another or the original, not run), {count['killed']} killed, "
        f"{count['timeout']} timed out, {count['survived']} survived; {seconds / 60:.1f} min",
    ]
    for r in results:
        if r["outcome"] == "survived":
            lines.append(f"- {r['id']} line {r['line']} {r['op']}: {r['desc']}    | {source_line(module, r['line'])}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--module", action="append", choices=list(TARGETS), help="a module to mutate (repeatable; default: all)")
    ap.add_argument("--tests", help="comma-separated test files or node ids, instead of the module's TARGETS subset")
    ap.add_argument("--only", help="comma-separated mutant ids (module:index) to run alone")
    ap.add_argument("--sample", type=int, default=0, help="at most this many mutants a module, drawn at random (0: all)")
    ap.add_argument("--seed", default="0", help="the sample's seed")
    ap.add_argument("--jobs", type=int, default=1, help="mutants run at once (each in a tree of its own)")
    ap.add_argument(
        "--timeout", type=float, default=0, help="seconds a mutant's tests may take (default: 3x the baseline + 30, 60 at least)"
    )
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "mutation", help="where results.jsonl and summary.md go")
    ap.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    ap.add_argument("--show", help="print one mutant's diff (module:index), run nothing")
    args = ap.parse_args()
    for sig in (signal.SIGTERM, signal.SIGHUP):  # (a closed terminal too) the temporary trees are removed on the way out
        signal.signal(sig, lambda *_: sys.exit("stopped"))
    if args.show or args.list:  # read through `| head`: a closed pipe ends the listing quietly
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if args.show:
        print(show(args.show), end="")
        return
    if args.list:
        for _module, todo in chosen(args):
            for s in todo:
                print(f"{s.id}\tline {s.line}\t{s.op}\t{s.desc}")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="trees-", dir=args.out))
    trees = [Tree(work) for _ in range(args.jobs)]
    report = []
    t0 = time.monotonic()
    try:
        with open(args.out / "results.jsonl", "a", encoding="utf-8") as log:
            for module, todo in chosen(args):
                m0 = time.monotonic()
                results = run_module(module, todo, args, trees, log)
                report.append(summary(module, len(sites(module)), results, time.monotonic() - m0))
                print(report[-1], flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report.append(f"\ntotal {(time.monotonic() - t0) / 60:.1f} min, {args.jobs} job(s)")
    (args.out / "summary.md").write_text("\n\n".join(report) + "\n", encoding="utf-8")
    print(report[-1])


if __name__ == "__main__":
    main()
