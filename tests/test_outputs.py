"""What a call's output says (compactctl/outputs.py), as a digest shows it."""

from __future__ import annotations

import orjson
import pytest

from compactctl.describe import describe
from compactctl.model import Message, ToolCall
from compactctl.outputs import _benign, outcome, tally


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("", 0),
        ("one", 1),
        ("one\n", 1),
        ("one\ntwo", 2),
        ("one\ntwo\n", 2),  # was 3: a digest said "302 lines output" of what `wc -l` and its excerpt call 301
        ("one\r\ntwo\r\n", 2),
        ("\n", 1),
        ("one\n\n", 2),
    ],
)
def test_an_output_has_the_lines_wc_counts_plus_a_last_one_without_its_newline(text, lines):
    assert outcome(Message(role="tool", content=text, tool_call_id="c1")).lines == lines


def test_a_digest_and_its_excerpt_say_the_same_number_of_lines():
    body = "".join(f"line {i}\n" for i in range(1, 302))
    call = ToolCall(id="c1", name="Bash", arguments='{"command": "seq 301"}')
    line = describe(call, Message(role="tool", content=body, tool_call_id="c1"))
    assert "301 lines output" in line and "302" not in line


def result(text: str, is_error: bool | None = None) -> Message:
    return Message(role="tool", content=text, tool_call_id="c1", is_error=is_error)


def test_a_call_with_no_result_recorded_ended_ok_with_no_output():
    """A session cut off before a call's result (a killed run, a Ctrl-C) has nothing to say of it: no lines, no
    characters, no exit code, not failed."""
    out = outcome(None)
    assert (out.exit_code, out.failed, out.error_lines, out.lines, out.chars, out.text) == (None, False, [], 0, 0, "")
    assert out.status == "ok"


def test_a_codex_output_cut_off_in_its_json_is_read_as_text():
    """A Codex shell output whose JSON was cut (an output capped mid-string) is not JSON: it is read as it is,
    never an error of compactctl's own."""
    text = '{"output": "Traceback (most recent call last):\\n  File \\"app.py\\", line 3'
    out = outcome(result(text))
    assert out.text == text and out.exit_code is None and not out.failed


GEMINI_PIP = (
    "Command: pip install requets\nDirectory: (root)\n"
    "Output: ERROR: Could not find a version that satisfies the requirement requets (from versions: none)\n"
    "ERROR: No matching distribution found for requets\n"
    "Error: (none)\nExit Code: 1\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 48213"
)


def test_gemini_cli_shell_output_is_its_output_and_exit_code():
    """Gemini CLI's run_shell_command result: the output is what follows "Output: " (no "utput: ..." line, no
    "Directory:" line), the exit code its "Exit Code:" even with the "Signal:" and PID lines after it."""
    out = outcome(result(GEMINI_PIP))
    assert out.text == (
        "ERROR: Could not find a version that satisfies the requirement requets (from versions: none)\n"
        "ERROR: No matching distribution found for requets"
    )
    assert out.exit_code == 1 and out.failed
    assert out.error_lines == [
        "ERROR: Could not find a version that satisfies the requirement requets (from versions: none)",
        "ERROR: No matching distribution found for requets",
    ]


def test_gemini_cli_shell_error_is_kept_after_its_output():
    """Gemini's "Error: ..." (a command it stopped, a command it could not start) is part of what the call said:
    a timed-out command with no output and no exit code failed with that error."""
    text = (
        "Command: npm run dev\nDirectory: (root)\nOutput: (empty)\nError: Command timed out after 120000ms\n"
        "Exit Code: (none)\nSignal: 15\nBackground PIDs: (none)"
    )
    out = outcome(result(text))
    assert out.text == "Error: Command timed out after 120000ms" and out.exit_code is None
    assert out.failed and out.error_lines == ["Error: Command timed out after 120000ms"]
    started = text.replace("Output: (empty)", "Output: > web@0.1.0 dev\n> vite")
    assert outcome(result(started)).text == "> web@0.1.0 dev\n> vite\nError: Command timed out after 120000ms"


def _codex(output: str, code: int) -> str:
    return orjson.dumps({"output": output, "metadata": {"exit_code": code, "duration_seconds": 0.2}}).decode()


RG_ERRORS = (
    "build.log:14:error[E0425]: cannot find value `cfg` in this scope\n"
    "build.log:27:error[E0308]: mismatched types\n"
    'build.log:41:error: could not compile `app` (bin "app") due to 2 previous errors\n'
)


def test_a_call_that_succeeded_keeps_two_of_its_error_lines():
    """Codex's `rg -n error build.log` ended 0: the error lines it found are what it printed, not its failure: a
    successful call keeps at most two of them (the digest shows them), a failed one all (up to five)."""
    ok = outcome(result(_codex(RG_ERRORS, 0)))
    assert ok.exit_code == 0 and not ok.failed and ok.status == "exit 0"
    assert ok.error_lines == [
        "build.log:14:error[E0425]: cannot find value `cfg` in this scope",
        "build.log:27:error[E0308]: mismatched types",
    ]
    failed = outcome(result(_codex(RG_ERRORS, 2)))
    assert failed.failed and len(failed.error_lines) == 3


def test_error_lines_of_a_successful_call_are_not_looked_for_when_not_asked():
    """outcome(ok_errors=False) spares the scan of a successful output: a `cargo run` that printed the program's own
    "Error: ..." and ended well (Claude Code flags no error) has no error lines; a failed one still has them."""
    run = (
        "   Compiling app v0.1.0 (/home/u/app)\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 2.31s\n"
        "     Running `target/debug/app --check`\nError: config file not found, using defaults\n"
    )
    assert outcome(result(run), ok_errors=False).error_lines == []
    assert outcome(result(run)).error_lines == ["Error: config file not found, using defaults"]
    assert outcome(result(run, is_error=True), ok_errors=False).error_lines == ["Error: config file not found, using defaults"]


def _hook(size: int) -> str:
    """A git pre-commit hook's refusal, padded to `size` characters: its failure is its second line, its last line
    advice."""
    head = "Running pre-commit checks...\nPre-commit validation failed:\n"
    tail = "Fix the issues above and commit again."
    items = "".join(f"  - src/app/module_{i}.py: line too long (101 > 100 characters)\n" for i in range(4))
    pad = size - len(head) - len(items) - len(tail)
    return head + items + f"  - src/app/{'m' * (pad - 35)}.py: missing docstring\n" + tail


def test_a_failed_output_of_400_characters_says_its_last_line_and_a_longer_one_its_failure():
    """SHORT_FAILURE (400): a failed output that short with no error line is its own message, its last line; a
    longer one says its first line that says the failure."""
    assert len(_hook(400)) == 400 and len(_hook(401)) == 401
    assert outcome(result(_hook(400), is_error=True)).error_lines == ["Fix the issues above and commit again."]
    assert outcome(result(_hook(401), is_error=True)).error_lines == ["Pre-commit validation failed:"]


def test_a_long_failed_output_says_its_failure_of_eight_characters():
    """A click command that asked before dropping tables and read no answer ends "Aborted!": in an output too long to
    be its own message, that line (8 characters, the least a line that says the failure may be) is its error."""
    names = ["initial schema", "add users table", "add orders table", "index orders by user", "add payments table"]
    names += ["split user names", "drop legacy sessions", "add audit log"]
    listing = "".join(f"  {i:04d}_{n.replace(' ', '_')}.py  {n}\n" for i, n in enumerate(names, 1))
    text = (
        f"Migrations to roll back on postgres://app@localhost/app_dev:\n{listing}"
        "This drops the tables audit_log, payments and orders and every row in them.\nProceed? [y/N]: \nAborted!\n"
    )
    assert len(text) > 400 and outcome(result(text, is_error=True)).error_lines == ["Aborted!"]


def test_a_long_line_that_says_the_failure_is_cut_to_200_characters():
    """A Claude Code hook's refusal echoes its JSON on one line: its error line is that line's first 200 characters."""
    hook = (
        "PreToolUse:Bash [python3 ~/.claude/hooks/guard.py] failed with non-blocking status code 1: "
        '{"decision": "block", "reason": "rm -rf build/ dist/ node_modules/ deletes directories outside the allowed '
        'list.\\nAllowed: build/ only.\\nAsk the user before deleting anything else."}\n'
    )
    out = outcome(result(hook + "".join(f"removed 'build/asset-{i}.js'\n" for i in range(20)), is_error=True))
    [line] = out.error_lines
    assert len(line) == 200 and hook.startswith(line)


def _check_run(before: int) -> str:
    """`make check`: `pytest -q`'s dots and tally, then the linter's warnings, `before` characters from the tally's
    line to the end."""
    tail = "12 passed in 0.51s\n"
    report = "".join(f"src/app/views.py:{i}:1: W291 trailing whitespace\n" for i in range(100, 200))
    report = report[: report.rfind("\n", 0, before - len(tail) - 60) + 1]
    last = "40 warnings in src/app/views.py, src/app/"
    last += "v" * (before - len(tail) - len(report) - len(last) - len(".py\n")) + ".py\n"
    return "." * 12 + " [100%]\n" + tail + report + last


def test_a_tally_is_looked_for_in_the_last_2000_characters():
    """A tally whose line begins 2000 characters from the end is read; one whose line begins further back is not."""
    assert len(_check_run(2000).split("\n", 1)[1]) == 2000
    assert tally(_check_run(2000)) == "12 passed in 0.51s"
    assert tally(_check_run(2001)) is None


def test_a_tally_cut_by_the_window_is_not_read_with_a_wrong_count():
    """The window's edge cut through the tally's line: "12 passed" was read "2 passed" (a run of 12 said 2)."""
    for before in range(2001, 2020):
        assert tally(_check_run(before)) is None, before
    for before in range(1960, 2000):  # the window cuts the line before the tally's: the tally is read
        assert tally(_check_run(before)) == "12 passed in 0.51s", before
    run = _check_run(2000)[-2000:]  # an output of 2000 characters, its tally its first line
    assert len(run) == 2000 and tally(run) == "12 passed in 0.51s"


MIX_AND_COMMIT = """Finished in 2.1 seconds (1.2s async, 0.9s sync)
14 doctests, 297 tests, 0 failures

Randomized with seed 52817
[main 3f2c1a9] Add cart live view tests
 2 files changed, 48 insertions(+)
 create mode 100644 test/shop_web/live/cart_live_test.exs
"""


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # `ls -l`: a directory named test(s) after its time (or year), a file named error.h
        ("total 24\n-rw-r--r--  1 dev dev 1067 Jul 17 01:31 LICENSE\ndrwxr-xr-x  2 dev dev 4096 Jul 17 01:31 tests\n", None),
        ("drwxr-xr-x  7 dev dev 4096 Apr 30 09:56 src\ndrwxr-xr-x  2 dev dev 4096 Jul 17  2023 test\n", None),
        ("-rw-r--r-- 1 dev dev 2210 Apr 30 08:32 build.h\n-rw-r--r-- 1 dev dev 4492 Apr 30 08:32 error.h\n", None),
        # `wc -l`'s total
        ("  120 lib/shop/cart.ex\n  334 lib/shop/orders.ex\n  454 total\n", None),
        # `mix test && git commit`: the run's tally, not the test file git created
        (MIX_AND_COMMIT, "14 doctests, 297 tests, 0 failures"),
    ],
    ids=["ls-time", "ls-year", "ls-file", "wc", "mix-and-commit"],
)
def test_a_line_that_counts_files_is_no_tally(text, said):
    """`ls -l`'s line for a directory "tests" ("01:31 tests"), git's "create mode 100644 test/...", a file "error.h", `wc`'s
    "454 total" read as a test run's tally, said again in the call's digest."""
    assert tally(text) == said


def _cargo_test(unit: int) -> str:
    """`cargo test`: the unit tests' binary, then the doc-tests', each with its "test result" line."""
    tests = "".join(f"test cart::tests::total_case_{i} ... ok\n" for i in range(unit))
    return (
        "   Compiling shop v0.3.0 (/home/dev/shop)\n    Finished `test` profile [unoptimized + debuginfo] target(s) in 3.08s\n"
        "     Running unittests src/lib.rs (target/debug/deps/shop-4f1c2a9e8b7d6c5a)\n\n"
        f"running {unit} tests\n{tests}\n"
        f"test result: ok. {unit} passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.02s\n\n"
        "   Doc-tests shop\n\nrunning 0 tests\n\n"
        "test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\n"
    )


def test_a_tally_of_zeros_gives_way_to_an_earlier_one_that_counts_something():
    """`cargo test` of 12 unit tests and no doc-tests ends with the doc-tests' "0 passed": the run was said "0 passed"."""
    assert tally(_cargo_test(12)) == "test result: ok. 12 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.02s"
    nothing = _cargo_test(0)  # no test at all: its zeros are what it says
    assert tally(nothing) == "test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # `tsc --watch`: the latest compile found none (an earlier one's count is stale)
        (
            "[12:00:01 PM] File change detected. Starting incremental compilation...\n\nsrc/a.ts(3,7): error TS2322: "
            "Type 'string' is not assignable to type 'number'.\n\n[12:00:02 PM] Found 1 error. Watching for file changes.\n\n"
            "[12:00:09 PM] File change detected. Starting incremental compilation...\n\n"
            "[12:00:10 PM] Found 0 errors. Watching for file changes.\n",
            "[12:00:10 PM] Found 0 errors. Watching for file changes.",
        ),
        ("1 failed, 4 passed in 0.3s\nrerun after the fix:\n5 passed, 0 failed in 0.3s\n", "5 passed, 0 failed in 0.3s"),
        ("Found 2 errors in setup script\nretried:\n\n  0 passing (4ms)\n", "0 passing (4ms)"),
        # a rule of dashes around a runner's summary is no `ls -l` mode
        ("collected 6 items\n---------- 5 passed, 1 failed ----------\n", "5 passed, 1 failed"),
    ],
    ids=["tsc-watch", "rerun", "mocha", "dashes"],
)
def test_the_last_tally_is_the_runs_even_when_it_counts_zeros(text, said):
    """Only cargo's zeros (its doc-tests' line, after the unit tests') give way to an earlier line of its own: any other
    runner's last tally is the latest run's (helper 166's review: `tsc --watch` ending "Found 0 errors" was said by an
    earlier "Found 1 error")."""
    assert tally(text) == said


def test_a_bare_error_word_before_a_long_run_of_blanks_is_read_in_linear_time():
    """ "ERROR" and a megabyte of spaces: the bare-word pattern's two runs of blanks around an optional colon tried every
    split of the run (10,000 spaces 0.3 s, 40,000 6.6 s: hours at a megabyte; helper 166's review)."""
    import time

    text = "ERROR" + " " * 1_000_000 + "x\nTraceback (most recent call last):\nValueError: bad\n"
    t0 = time.perf_counter()
    out = outcome(result(_codex(text, 1)))
    assert time.perf_counter() - t0 < 5 and "ValueError: bad" in out.error_lines


@pytest.mark.parametrize("snapshots", ["0 total", "3 passed, 3 total", "1 failed, 2 passed, 3 total"])
def test_jests_tally_is_its_tests_line_not_its_snapshots(snapshots):
    """jest ends its summary with "Snapshots:   0 total" (and its time): every jest run was said by its snapshots."""
    run = JEST.replace("Snapshots:   0 total", f"Snapshots:   {snapshots}")
    assert tally(run) == "Tests:       1 failed, 7 passed, 8 total"


def test_a_failed_call_that_printed_only_its_exit_code_has_no_error_line():
    """Claude Code's Bash result of a command that failed silently (`test -f .env`, `grep -q TODO src/`) is only
    "Exit code 1": exit 1, failed, and no error line made of the exit code itself."""
    out = outcome(result("Exit code 1", is_error=True))
    assert (out.exit_code, out.failed, out.error_lines, out.status) == (1, True, [], "exit 1")


def test_a_failed_output_of_names_alone_says_its_last_name():
    """`git diff --exit-code --name-only` (a CI check that nothing is left unformatted) failed listing the files: no
    line introduces the list, so its last line is what it said, not the list run together."""
    out = outcome(result("Exit code 1\nsrc/app/models.py\nsrc/app/views.py\n", is_error=True))
    assert out.failed and out.error_lines == ["src/app/views.py"]


def test_swe_agents_refused_edit_says_its_first_lint_errors_in_300_characters():
    """SWE-agent's linter refused an edit: its error line is the refusal and the first three lint errors, cut at 300
    characters."""
    names = ["DEFAULT_CONNECTION_TIMEOUT_SECONDS_FOR_REMOTE_REPOSITORIES", "REMOTE_REPOSITORY_AUTHENTICATION_TOKEN_ENVIRONMENT_VARIABLE"]
    names += ["MAXIMUM_NUMBER_OF_RETRIES_BEFORE_GIVING_UP_ON_A_REMOTE_FETCH", "FETCH_BACKOFF"]
    text = (
        "Your proposed edit has introduced new syntax error(s). Please read this error message carefully and then retry "
        "editing the file.\n\nERRORS:\n" + "".join(f"- F821 undefined name '{n}'\n" for n in names) + "\n"
        "This is how your edit would have looked if applied\n-------------------------------------------------\n"
        "[File: /repo/src/fetch.py (120 lines total)]\n"
    )
    said = "Your proposed edit has introduced new syntax error(s): " + "; ".join(f"F821 undefined name '{n}'" for n in names[:3])
    out = outcome(result(text))
    assert out.failed and out.error_lines == [said[:300]] and len(said) > 300


def test_an_exit_code_at_the_end_of_a_long_output_is_read():
    """OpenHands ends a command's output "[The command completed with exit code 1.]": a pytest run's long output says
    its exit code only there."""
    run = "".join(f"tests/test_api.py::test_case_{i} PASSED\n" for i in range(10)) + "tests/test_api.py::test_case_10 FAILED\n"
    text = f"{run}{'=' * 20} 1 failed, 10 passed in 0.84s {'=' * 20}\n[The command completed with exit code 1.]"
    out = outcome(result(text))
    assert len(text) > 400 and out.exit_code == 1 and out.failed


def test_an_exceptions_line_of_400_characters_or_more_is_its_error_line_cut_to_300():
    """An exception's message with a long value: its line was no error line from 400 characters (taken for data), the
    traceback said only its header; its first 300 characters are the error line, whatever its length."""
    fields = "{" + ", ".join(f"'field_{i}': {i}" for i in range(60))
    for size in (399, 400, 900):
        line = ("ValueError: invalid payload " + fields)[: size - 1] + "}"
        tb = f'Traceback (most recent call last):\n  File "load.py", line 9, in <module>\n    load(doc)\n{line}\n'
        assert outcome(result(tb)).error_lines == [line[:300]], size


_JAVA_TYPE = "java.util.Map<java.lang.String,java.util.List<java.util.Optional<java.math.BigDecimal>>>"
_MAVEN_LONG = (
    "[ERROR] /home/dev/shop/src/main/java/com/example/shop/checkout/PriceCalculator.java:[48,31] incompatible types: "
    f"{_JAVA_TYPE} cannot be converted to java.util.Map<java.lang.String,java.util.List<java.math.BigDecimal>> in "
    "method totalsByCategory(java.util.List<com.example.shop.checkout.LineItem>,com.example.shop.checkout.TaxTable)"
)
_MAVEN = f"""[INFO] --- compiler:3.11.0:compile (default-compile) @ shop ---
[INFO] Compiling 42 source files with javac [debug target 17] to target/classes
[INFO] -------------------------------------------------------------
[ERROR] COMPILATION ERROR :\x20
[INFO] -------------------------------------------------------------
{_MAVEN_LONG}
[INFO] 1 error
[INFO] BUILD FAILURE
[ERROR] Failed to execute goal org.apache.maven.plugins:maven-compiler-plugin:3.11.0:compile (default-compile) on project shop: Compilation failure
"""
_ROWS = ", ".join(f"{{'id': {i}, 'name': 'Widget {i}', 'price': '{i}.99', 'tags': ['sale', 'new']}}" for i in range(1, 5))
_ASSERTION = f"AssertionError: assert [{_ROWS}] == [{_ROWS.replace('.99', '.98')}]"
_PYTEST = f"""..F..                                                                    [100%]
=================================== FAILURES ===================================
_______________________________ test_export_rows _______________________________

    def test_export_rows():
>       assert export(CART) == EXPECTED
E       {_ASSERTION}

tests/test_export.py:14: AssertionError
=========================== short test summary info ============================
FAILED tests/test_export.py::test_export_rows - {_ASSERTION}
1 failed, 4 passed in 0.31s
"""


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # Maven's compiler message with its long types: only the "COMPILATION ERROR" banner and the goal's failure were said
        (_MAVEN, ["[ERROR] COMPILATION ERROR :", _MAVEN_LONG[:300], _MAVEN.splitlines()[-1][:300]]),
        # pytest's assertion on long values: only the traceback's "tests/test_export.py:14: AssertionError" was said
        (
            _PYTEST,
            [
                f"E       {_ASSERTION}"[:300],
                "tests/test_export.py:14: AssertionError",
                f"FAILED tests/test_export.py::test_export_rows - {_ASSERTION}"[:300],
            ],
        ),
    ],
    ids=["maven", "pytest"],
)
def test_an_error_message_of_400_characters_or_more_is_an_error_line_cut_to_300(text, said):
    """A message that opens as one ("[ERROR] ", "E       AssertionError: ", "FAILED ") is an error line at any length:
    a line of 400 characters or more was none (taken for data), so a compiler's message with long types or an
    assertion on long values was lost."""
    assert any(len(e) >= 400 for e in text.split("\n"))
    assert outcome(result(_codex(text, 1))).error_lines == said


_TS_LONG = (
    "src/hooks/useCart.ts(88,5): error TS2322: Type '({ id, quantity }: UpdateLineData) => Promise<{ previousCart: Cart | "
    "undefined; previousTotals: CartTotals | undefined; cartKey: string[]; totalsKey: string[]; }>' is not assignable to "
    "type '(variables: UpdateLineData, context: MutationFunctionContext) => Promise<{ previousCart: Cart | undefined; "
    "previousTotals: CartTotals | undefined; }> | { previousCart: Cart | undefined; previousTotals: CartTotals | undefined; }'."
)
_TSC = f"""src/components/CartSummary.tsx(41,7): error TS2322: Type '{{ items: LineItem[]; total: number; onCheckout: () => Promise<void>; }}' is not assignable to type 'CartSummaryProps'.
  Object literal may only specify known properties, and 'onCheckout' does not exist in type 'CartSummaryProps'.
{_TS_LONG}

Found 2 errors in 2 files.

Errors  Files
     1  src/components/CartSummary.tsx:41
     1  src/hooks/useCart.ts:88
"""


def test_tscs_error_lines_are_said_after_their_place_in_parentheses():
    """tsc (and MSBuild) write a message's place "file(line,col): ": its lines were no error lines (only "file:line:"
    was a place), the failure said by its first line alone."""
    first = _TSC.split("\n", 1)[0]
    assert len(_TS_LONG) >= 400 and outcome(result(_codex(_TSC, 2))).error_lines == [first, _TS_LONG[:300]]
    dotnet = "/home/dev/shop/Program.cs(12,17): error CS1002: ; expected [/home/dev/shop/shop.csproj]"
    assert outcome(result(f"  Determining projects to restore...\n{dotnet}\n\nBuild FAILED.\n")).error_lines == [dotnet]


_PAYMENTS = (
    "Failed payments are retried three times, an hour apart, before the order is cancelled; each attempt is logged "
    "with the gateway's reason code, and the customer gets one email after the last attempt, never one per attempt. "
    "Refunds of a failed payment are not needed: the gateway holds nothing. A payment the customer cancelled is not "
    "failed and is never retried. See docs/gateway.md for the codes the gateway returns and what each one means here."
)
_ERRORS = (
    "Error handling in the checkout service is centralised in src/checkout/errors.py, which maps every exception a "
    "gateway client raises to one of four outcomes (retry, decline, cancel, escalate); handlers never catch a "
    "gateway exception themselves, and a new gateway adds its exceptions to the table there, with a test in "
    "tests/test_errors.py that raises each one and checks the outcome the customer sees and the log line it writes."
)


def test_a_paragraph_of_400_characters_or_more_that_opens_with_an_error_word_is_no_error_line():
    """A document's paragraph that starts with an error word is not an error message: from 400 characters a line
    needs to open as one (a place, a label, capitals, a mark) to be an error line; a shorter one needs not."""
    assert len(_PAYMENTS) >= 400 and len(_ERRORS) >= 400
    doc = f"# Payments\n\n{_PAYMENTS}\n\n{_ERRORS}\n"
    assert outcome(result(doc)).error_lines == []
    short = f"# Payments\n\n{_PAYMENTS[:398]}.\n"
    assert outcome(result(short)).error_lines == [_PAYMENTS[:300]]


JEST = """> shop@1.4.0 test
> jest src/cart

FAIL src/cart/total.test.js
  ● cart total › applies the discount before tax

    expect(received).toBe(expected) // Object.is equality

    Expected: 108
    Received: 110

      12 |   const cart = build([{ price: 100 }], { discount: 0.1, tax: 0.2 });
    > 13 |   expect(total(cart)).toBe(108);
         |                       ^

PASS src/cart/items.test.js

Test Suites: 1 failed, 1 passed, 2 total
Tests:       1 failed, 7 passed, 8 total
Snapshots:   0 total
Time:        1.24 s
Ran all test suites matching /src\\/cart/i.
"""


def test_a_long_failed_output_says_the_first_line_that_says_it_failed_once():
    """A failed jest run has no error line (its "FAIL" and "●" lines start with no error word): it says its first
    line that says the failure, not every such line."""
    assert outcome(result(JEST, is_error=True)).error_lines == ["Test Suites: 1 failed, 1 passed, 2 total"]


def test_an_error_word_alone_on_its_line_is_said_with_the_next_line_only():
    """`prisma db seed`: "Error: " alone on its line, its message on the next; the lines after that (the code, the
    constraint) are not part of the error line."""
    text = """Running seed command `ts-node prisma/seed.ts` ...
Error:\x20
Invalid `prisma.user.create()` invocation in
/app/prisma/seed.ts:14:21

  11 const main = async () => {
  12   for (const u of users) {
→ 14     await prisma.user.create(
Unique constraint failed on the fields: (`email`)

An error occurred while running the seed command:
Error: Command failed with exit code 1: ts-node prisma/seed.ts
"""
    out = outcome(result(text, is_error=True))
    assert out.exit_code == 1 and out.error_lines == [
        "Error: Invalid `prisma.user.create()` invocation in",
        "Error: Command failed with exit code 1: ts-node prisma/seed.ts",
    ]


@pytest.mark.parametrize(
    ("stdout", "stderr", "text"),
    [
        ("(empty)", "ls: cannot access 'dist': No such file or directory", "ls: cannot access 'dist': No such file or directory"),
        ("dist/app.js", "(empty)", "dist/app.js"),
        ("(empty)", "(empty)", ""),
        (
            "dist/app.js",
            "ls: cannot access 'build': No such file or directory",
            "dist/app.js\nls: cannot access 'build': No such file or directory",
        ),
    ],
)
def test_gemini_clis_older_shell_output_has_no_empty_stream_in_it(stdout, stderr, text):
    """Gemini CLI's older run_shell_command result gives "Stdout: ..." and "Stderr: ...", each "(empty)" when the
    stream was: an empty one was kept as a line "(empty)" of the output (its first line, counted) when the other was
    not."""
    gemini = (
        f"Command: ls dist build\nDirectory: (root)\nStdout: {stdout}\nStderr: {stderr}\nError: (none)\nExit Code: 2\n"
        "Signal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 5120"
    )
    out = outcome(result(gemini))
    assert out.text == text and out.exit_code == 2 and out.lines == text.count("\n") + bool(text)


def test_an_error_line_that_says_nothing_failed_is_not_an_error_line():
    """Gemini CLI's shell output cut at its head (too large: it keeps the tail) is not unwrapped: its "Error: (none)"
    says there was no error."""
    text = (
        "Tool output was too large and has been truncated.\n... [CONTENT TRUNCATED] ...\n"
        "tests/test_cart.py .......                                               [100%]\n\n"
        "============================== 48 passed in 3.02s ==============================\n"
        "Error: (none)\nExit Code: 0\nSignal: (none)\nBackground PIDs: (none)\n"
    )
    out = outcome(result(text))
    assert out.exit_code == 0 and not out.failed and out.error_lines == []


@pytest.mark.parametrize(
    ("line", "benign"),
    [
        ("Found 0 errors. Watching for file changes.", True),  # tsc --watch
        ("Error: (none)", True),  # Gemini CLI's shell output
        ("passed: 12, failed: 0", True),
        ("no errors found", True),
        ("===== 5 passed, 0 failed in 0.20s =====", True),
        ("Tests run: 12, Errors: 0, Failures: 0, Skipped: 0", True),
        ("test result: ok. 5 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s", True),  # cargo
        ("✖ 4 problems (0 errors, 4 warnings)", True),  # eslint
        ("100% tests passed, 0 tests failed out of 12", True),  # ctest
        ("[         0 tests failed          ]", True),  # JUnit's console launcher
        ("Passed!  - Failed:     0, Passed:    12, Skipped:     0, Total:    12, Duration: 85 ms - Shop.Tests.dll (net8.0)", True),
        ("10 runs, 20 assertions, 0 failures, 0 errors, 0 skips", True),  # minitest
        # each says 0 errors, or none failed, and that something failed: was benign
        ("[ERROR] Tests run: 5, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 0.1 s <<< FAILURE! - in com.example.FooTest", False),
        ("[ERROR] Tests run: 12, Failures: 1, Errors: 0, Skipped: 0", False),  # Maven's results
        ("10 runs, 20 assertions, 1 failures, 0 errors, 0 skips", False),  # minitest
        ("==== 1 failed, 4 passed, 0 errors in 0.31s ====", False),
        ("test result: FAILED. 4 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s", False),  # cargo
        ("Failed!  - Failed:     1, Passed:    11, Skipped:     0, Total:    12, Duration: 90 ms - Shop.Tests.dll (net8.0)", False),
        ("92% tests passed, 1 tests failed out of 12", False),  # ctest
    ],
)
def test_a_line_is_benign_when_it_says_nothing_failed_and_nothing_else_did(line, benign):
    """A line that says 0 errors (or none failed) says no failure, unless it says one too ("Failures: 1", "1 failed",
    "<<< FAILURE!"): Maven's line for a failed test class was dropped for its "Errors: 0", minitest's for its "0 errors".
    (go test, jest and Gradle print no count of 0.)"""
    assert _benign(line) == benign


SUREFIRE = """[INFO] Running com.example.shop.PriceCalculatorTest
[ERROR] Tests run: 5, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 0.112 s <<< FAILURE! - in com.example.shop.PriceCalculatorTest
[ERROR] com.example.shop.PriceCalculatorTest.appliesDiscountBeforeTax  Time elapsed: 0.021 s  <<< FAILURE!
org.opentest4j.AssertionFailedError: expected: <108> but was: <110>
\tat com.example.shop.PriceCalculatorTest.appliesDiscountBeforeTax(PriceCalculatorTest.java:23)
[INFO]
[INFO] Results:
[INFO]
[ERROR] Failures:\x20
[ERROR]   PriceCalculatorTest.appliesDiscountBeforeTax:23 expected: <108> but was: <110>
[INFO]
[ERROR] Tests run: 5, Failures: 1, Errors: 0, Skipped: 0
[INFO]
[INFO] BUILD FAILURE
"""


def test_mavens_line_for_a_failed_test_class_is_an_error_line():
    """`mvn test`: the class's "Tests run: 5, Failures: 1, Errors: 0 ... <<< FAILURE!" comes first among the error
    lines, the run's "Tests run: ..." after; both were dropped as benign for their "Errors: 0"."""
    lines = SUREFIRE.split("\n")
    assert outcome(result(_codex(SUREFIRE, 1))).error_lines == [lines[1], lines[2], lines[3], lines[8].strip(), lines[9]]
    last = SUREFIRE.replace("[ERROR] Failures: \n", "").replace("[ERROR]   Price", "[INFO]   Price")
    assert outcome(result(_codex(last, 1))).error_lines[-1] == "[ERROR] Tests run: 5, Failures: 1, Errors: 0, Skipped: 0"


@pytest.mark.parametrize(
    "text",
    [
        # an MCP search tool's JSON: "metadata", no "output"
        '{"metadata": {"page": 1, "total": 2}, "results": [{"path": "src/cart.py", "line": 12}, {"path": "src/tax.py", "line": 3}]}',
        # an "output" that is not text
        '{"output": {"stdout": "ok\\n", "stderr": ""}, "metadata": {"exit_code": 0}}',
    ],
)
def test_a_json_output_that_is_not_codexs_is_read_as_it_is(text):
    """Only Codex's form, {"output": "...", "metadata": {...}}, is unwrapped: other JSON a tool answers with, with
    "output" or "metadata" in it, is its text."""
    out = outcome(result(text))
    assert out.text == text and not out.failed


def test_a_tally_line_is_at_most_160_characters():
    """A longer line that counts (a JSON log record after the run) is not the run's tally: pytest's is."""
    record = '{"level": "info", "msg": "report uploaded", "summary": "2 failed", "url": "https://ci.example.com/r/'
    run = f"{'=' * 10} 12 passed in 0.51s {'=' * 10}\n"
    at_most = record + "x" * (160 - len(record) - 2) + '"}'
    longer = record + "x" * (161 - len(record) - 2) + '"}'
    assert (len(at_most), len(longer)) == (160, 161)
    assert tally(f"{run}{at_most}\n") == at_most
    assert tally(f"{run}{longer}\n") == "12 passed in 0.51s"


def test_claude_codes_tool_use_error_is_said_by_its_first_line_in_300_characters():
    """Claude Code's <tool_use_error>: its first line, cut at 300 characters; an empty one is "tool use error"."""
    reason = (
        "Hook PreToolUse:Bash denied this tool use: the command `rm -rf ~/projects/shop/node_modules "
        "~/projects/shop/dist ~/projects/shop/.next` deletes paths outside the project's build directories, which "
        "this repository's policy (.claude/hooks/guard.py, rule 4: no recursive delete outside build/) forbids "
        "without the person's approval; ask them first"
    )
    out = outcome(result(f"<tool_use_error>{reason}\nSee .claude/hooks/README.md</tool_use_error>", is_error=True))
    assert len(reason) > 300 and out.failed and out.error_lines == [reason[:300]]
    empty = outcome(result("<tool_use_error></tool_use_error>", is_error=True))
    assert empty.failed and empty.error_lines == ["tool use error"]


@pytest.mark.parametrize(
    ("record", "said"),
    [
        # Elixir's Logger; a [warning] that says "Failed" is no error line
        ("21:33:40.227 [error] GenServer Shop.Cart terminating", "[error] GenServer Shop.Cart terminating"),
        # Python's logging: its date, time and milliseconds; "%(asctime)s - %(name)s - %(levelname)s - %(message)s"
        ("2024-05-01 12:00:00,123 ERROR shop.db: connection refused", "ERROR shop.db: connection refused"),
        ("2024-05-01 12:00:00,123 - shop.db - ERROR - connection refused", "ERROR - connection refused"),
        # an ISO time with its zone, a time in brackets (Laravel's, Monolog's), gunicorn's with its process
        ("2024-05-01T12:00:00.512+02:00 ERROR worker crashed", "ERROR worker crashed"),
        ("[2024-05-01 12:00:00] ERROR payment declined", "ERROR payment declined"),
        ("[2024-05-01 12:00:00 +0000] [4121] [ERROR] Exception in worker process", "[ERROR] Exception in worker process"),
        # logback's thread, logrus's time="..." level=error, glog's (klog's) E record
        ("12:00:00.123 [main] ERROR com.shop.App - startup failed", "ERROR com.shop.App - startup failed"),
        ('time="2024-05-01T12:00:00Z" level=error msg="dial tcp: connection refused"', 'level=error msg="dial tcp: connection refused"'),
        ("E0501 12:00:00.123456       1 main.go:42] failed to sync pod", "E0501 12:00:00.123456       1 main.go:42] failed to sync pod"),
        # docker compose's service before the line
        ('web-1  | ERROR: relation "users" does not exist', 'web-1  | ERROR: relation "users" does not exist'),
        (
            "web-1  | Traceback (most recent call last):\nweb-1  |   File \"app.py\", line 3\nweb-1  | KeyError: 'DB_URL'",
            "web-1  | KeyError: 'DB_URL'",
        ),
    ],
    ids=["elixir", "python", "python-name", "iso", "brackets", "gunicorn", "logback", "logrus", "glog", "compose", "compose-traceback"],
)
def test_a_log_records_error_line_is_said_without_its_time(record, said):
    """A log record's level came after its time: the record was never an error line (the error word had to open the
    line), a failed run's digest said the first line that mentions an error, a record at INFO level among them. The
    time is no part of what failed; a record at INFO, WARNING (or glog's I) level that mentions an error is no error line."""
    text = (
        "2024-05-01 12:00:00,050 INFO shop: listening on 0.0.0.0:8000 with 4 workers (pid 4121)\n"
        "2024-05-01 12:00:00,061 INFO shop.db: pool of 10 connections to postgres://shop@db:5432/shop\n"
        "2024-05-01 12:00:00,100 INFO shop.db: retrying after error\n"
        "21:33:40.100 [warning] Failed to parse sessions-index.json: :file_not_found\n"
        'time="2024-05-01T12:00:00Z" level=info msg="retry after error"\n'
        "I0501 12:00:00.100000       1 main.go:40] error budget ok\n"
        "web-1  | INFO: no error in config\n"
        f"{record}\n"
    )
    assert len(text) > 400 and outcome(result(_codex(text, 1))).error_lines == [said]  # (a shorter one says its last line)


def test_a_log_records_error_lines_come_after_the_failure_the_runner_reports():
    """An app logs errors while its tests run (a worker that fails on purpose, a refused connection retried): five
    such records before the failure would take every error line the digest and the summary show, and the failing
    test would be said by none of them."""
    logs = "".join(f"2024-05-01 12:00:00,{i:03d} ERROR shop.worker: job {i + 1} of 9 failed, retrying\n" for i in range(6))
    text = (
        f"============================= test session starts ==============================\n{logs}"
        "FAILED tests/test_orders.py::test_refund - RuntimeError: order 7 was never paid\n"
        "========================= 1 failed, 13 passed in 0.41s =========================\n"
    )
    lines = outcome(result(_codex(text, 1))).error_lines
    assert lines[0] == "FAILED tests/test_orders.py::test_refund - RuntimeError: order 7 was never paid"
    assert lines[1:] == [f"ERROR shop.worker: job {i + 1} of 9 failed, retrying" for i in range(4)]


UNITTEST = """..F.E.......
======================================================================
ERROR: test_refund (tests.test_orders.OrderTest.test_refund)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/home/dev/shop/tests/test_orders.py", line 41, in test_refund
    order.refund(amount=5)
  File "/home/dev/shop/shop/orders.py", line 88, in refund
    raise RefundError(f"order {self.id} was never paid")
shop.orders.RefundError: order 7 was never paid

======================================================================
FAIL: test_total (tests.test_cart.CartTest.test_total)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/home/dev/shop/tests/test_cart.py", line 17, in test_total
    self.assertEqual(cart.total(), 30)
AssertionError: 25 != 30

----------------------------------------------------------------------
Ran 12 tests in 0.005s

FAILED (failures=1, errors=1)
"""


@pytest.mark.parametrize(
    ("end", "said"),
    [
        ("FAILED (failures=1, errors=1)\n", "Ran 12 tests in 0.005s, FAILED (failures=1, errors=1)"),
        ("OK\n", "Ran 12 tests in 0.005s, OK"),
        ("OK (skipped=3)\n", "Ran 12 tests in 0.005s, OK (skipped=3)"),
        # Django's test runner, which then drops its database
        ("FAILED (failures=1)\nDestroying test database for alias 'default'...\n", "Ran 12 tests in 0.005s, FAILED (failures=1)"),
    ],
    ids=["failed", "ok", "skipped", "django"],
)
def test_unittests_tally_says_its_verdict(end, said):
    """unittest's tally, "Ran 12 tests in 0.005s", counts no failure: its verdict, on a line after it, does."""
    assert tally(UNITTEST.replace("FAILED (failures=1, errors=1)\n", end)) == said


def test_an_output_that_ends_with_unittests_failed_verdict_failed():
    """`python -m unittest 2>&1 | tail -25` in Claude Code's Bash: no exit code, not flagged an error (the pipe's exit
    was tail's), and its lines open with no error word: it read as a success, "-> ok", its tally "Ran 12 tests"."""
    out = outcome(result(UNITTEST))
    assert out.failed and out.error_lines == [
        "ERROR: test_refund (tests.test_orders.OrderTest.test_refund)",
        "Traceback (most recent call last):",
        "shop.orders.RefundError: order 7 was never paid",
        "FAIL: test_total (tests.test_cart.CartTest.test_total)",
        "AssertionError: 25 != 30",
    ]
    call = ToolCall(id="c1", name="Bash", arguments='{"command": "python -m unittest 2>&1 | tail -25"}')
    line = describe(call, result(UNITTEST))
    assert line.startswith("[Bash] ran `python -m unittest 2>&1 | tail -25` -> error: ERROR: test_refund (tests."), line
    assert line.endswith(", 23 lines output; Ran 12 tests in 0.005s, FAILED (failures=1, errors=1)"), line
    passed = f"{'.' * 12}\n{'-' * 70}\nRan 12 tests in 0.005s\n\nOK\n"
    assert not outcome(result(passed)).failed


@pytest.mark.parametrize(
    ("body", "said"),
    [
        # OpenAI's, Stripe's: {"error": {"message": ...}}
        (
            '{"error": {"message": "The model `gpt-5-mini` does not exist", "type": "invalid_request_error", "code": 404}}',
            "The model `gpt-5-mini` does not exist",
        ),
        # FastAPI's validation errors, its "detail" alone
        ('{"detail": [{"loc": ["body", "email"], "msg": "field required", "type": "value_error.missing"}]}', "field required"),
        # {"error": true, "message": ...}, OAuth's error and its description, Spring Boot's, GraphQL's errors
        ('{"error": true, "message": "Invalid API token"}', "Invalid API token"),
        ('{"error": "invalid_grant", "error_description": "Bad credentials"}', "invalid_grant: Bad credentials"),
        ('{"timestamp": "2024-05-01T12:00:00.000+00:00", "status": 404, "error": "Not Found", "path": "/api/cart"}', "Not Found"),
        (
            '{\n  "data": {"user": null},\n  "errors": [{"message": "Cannot query field \\"nam\\" on type \\"User\\"."}]\n}',
            'Cannot query field "nam" on type "User".',
        ),
    ],
    ids=["openai", "fastapi", "flag", "oauth", "spring", "graphql"],
)
def test_a_json_error_body_is_its_error_line(body, said):
    """`curl -s` of an API that answered an error: the output is one JSON object, which opens with "{", never an error
    line; Claude Code's Bash records no exit code (curl ended 0), so it read "-> ok". It failed, said by its message
    (not "error: ..." : a digest says "-> error: " before it, the summary "error: ")."""
    out = outcome(result(body))
    assert out.failed and out.error_lines == [said]
    failed = outcome(result(_codex(body, 22)))  # `curl -f`'s exit 22: failed by its exit, said by its body
    assert failed.failed and failed.error_lines == [said]


_ITEMS = ", ".join(f'{{"id": {i}, "name": "item {i}"}}' for i in range(100))


def test_a_long_csv_record_that_opens_with_an_error_level_is_data():
    """`grep ERROR app.csv` in Claude Code's Bash (no exit code): records of 400+ characters that open "ERROR," read as
    error messages in capitals, and the call as failed (helper 164's review)."""
    rows = "".join(f"ERROR,2024-05-01T12:00:0{i},worker-{i},{'x' * 420}\n" for i in range(3))
    out = outcome(result(rows))
    assert not out.failed and out.error_lines == []


@pytest.mark.parametrize(
    "data",
    [
        '{"common": {"save": "Save"}, "errors": {"required": "This field is required"}}',  # `cat en.json`: a translation
        '{"detail": "Successfully logged out."}',  # dj-rest-auth's success (FastAPI's "Not Found" is told from it by nothing)
        '{"detail": ["a", "b"]}',
        '{"error": "No error"}',
        '{"error": "success"}',
        '{"error": "n/a"}',
        '{"error": {"code": 0, "message": "OK"}, "result": [1, 2]}',  # an answer with its result
        '{"error": {"type": "string", "description": "what failed"}, "required": ["error"]}',  # a schema's property
        '{"errors": {"E100": "disk full", "E200": "no route"}}',  # a catalogue of error codes
        '{"error": "Something went wrong", "save": "Save"}',  # a translation's key (helper 164's review)
        '{"level": "info", "error": "logs/error.log"}',  # a logging config's file
        '{"errors": ["Required"], "labels": {}}',
        '{"error": {"code": 0, "message": "OK"}}',
        '{"error": {"code": 200, "message": "success"}}',
    ],
    ids=[
        *("translations", "detail-success", "detail-list", "no-error", "success", "n-a", "json-rpc-result", "schema"),
        *("catalogue", "translation-key", "log-file", "form-errors", "code-0", "code-200"),
    ],
)
def test_json_data_that_names_errors_is_no_error_body(data):
    """A JSON file or answer that holds an "error" or "errors" key among its data, or says there is none, is read as
    what it is: the call did not fail, and no line of it is an error (helper 166's review: `cat src/locales/en.json`
    read "-> error: error: {"required": ...}")."""
    out = outcome(result(data))
    assert not out.failed and out.error_lines == []


@pytest.mark.parametrize(
    ("none", "some"),
    [
        ('{"error": null, "data": [{"id": 1}]}', '{"error": "quota exceeded", "status": 429, "data": [{"id": 1}]}'),
        ('{"error": false, "id": 7}', '{"error": true, "id": 7}'),
        ('{"errors": [], "data": {"user": null}}', '{"errors": [{"message": "user 7 not found"}], "data": {"user": null}}'),
        ('{"error": "", "ok": true}', '{"error": "timeout", "message": "upstream took 30 s"}'),
        ('{"error": {}}', '{"error": {"code": 500}}'),
        ('{"error": "none"}', '{"error": "no route to host"}'),
        ('{"detail": "order 7", "id": 7}', '{"error": "order 7 not found"}'),  # a "detail" among other keys is data
        (f'{{"error": "Not Found", "items": [{_ITEMS}]}}', '{"error": "Not Found", "status": 404, "items": []}'),  # a long JSON is data
    ],
    ids=["null", "false", "empty-list", "empty-text", "empty-object", "none", "detail-with-data", "long"],
)
def test_a_json_error_body_says_an_error(none, some):
    """A JSON whose "error" is null, false, empty, "none", a "detail" among other keys, a JSON longer than 2000 characters,
    is no error body: the call did not fail. The same with an error in it did."""
    assert not outcome(result(none)).failed and outcome(result(none)).error_lines == []
    assert outcome(result(some)).failed and outcome(result(some)).error_lines[0]
