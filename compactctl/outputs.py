"""What a tool call's output says: how the call ended (`outcome`: its exit code, whether it failed, its error
lines), the tally of a test run it printed, the answers to Claude Code's AskUserQuestion. Codex's JSON and Gemini
CLI's shell output are unwrapped first, terminal colours stripped.

A failed call never reads like a success: exit codes, error flags and error lines in the output are looked
for in every case. `describe` says a call in one line from these and from what tools.py says of the call.
"""

from __future__ import annotations

import re
from dataclasses import field

import orjson

from .lean import dataclass
from .model import Message
from .redact import cut

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")
EXIT_PATTERNS = [
    re.compile(r"(?:exit(?:ed)?(?: with)?[ _]?(?:code|status)|exit_code|returncode|return code)[\"']?\s*[:=]?\s*(-?\d+)", re.I),
    re.compile(r"non-zero exit status (\d+)", re.I),
    re.compile(r"Process exited with code (-?\d+)", re.I),
    re.compile(r"\] ran `.*` -> exit (-?\d+)"),  # our own one-liner
    re.compile(r"<returncode>(-?\d+)</returncode>"),  # mini-swe-agent's observation
]
# A log record's opening before its level: a time ("21:33:40.227 ", "2024-05-01 12:00:00,123 ", "[2024-05-01T12:00:00Z] "),
# then perhaps a thread or process in brackets ("[main] ", "[12345] "; not a level: "[warning] Failed ..." is no error) or
# Python's " - name - "; logrus's time="...".
_LOG_TIME = (
    r"\[?(?:\d{4}[-/]\d\d[-/]\d\d[T ])?\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[ ]?[+-]\d\d:?\d\d)?\]?[ \t]+"
    r"(?:\[(?!(?:info|warn(?:ing)?|notice|debug|trace|err(?:or)?|crit(?:ical)?|fatal|alert|emergency)\])[^\]\s]{1,40}\][ \t]+)?"
    r"(?:-[ \t]+(?:[\w.]+[ \t]+-[ \t]+)?)?"
    r'|time=(?:"[^"\n]*"|\S+)[ \t]+'
)
ERROR_LINE = re.compile(
    # after an optional place, "file:12:" ("file(12,5):": tsc's, MSBuild's), or a shell's own prefix ("bash: line 1: pip: ",
    # "/bin/sh: 1: ", "zsh: "); before it, perhaps docker compose's service ("web-1  | ") and a log record's time (_LOG_TIME)
    # (the indent taken whole, as an atomic group would: what follows never opens with a space, so giving one back to try
    # again is vain; the search runs in about half the time)
    r"^(?=(?P<indent>[ \t]*))(?P=indent)(?P<at>(?:[\w.-]+[-_]\d+[ \t]+\|[ \t]*)?(?P<log>" + _LOG_TIME + r")?"
    r"(?:\S+(?::\d+(?::\d+)?|\(\d+,\d+\)):[ \t]*|(?:/\S*/)?(?:ba|z|da|k)?sh: (?:line \d+: |\d+: )?(?:[^\s:]+: )?)?)"
    # glog's (klog's) error and fatal records: "E0501 12:00:00.123456    1 main.go:12] ..."; logrus's "level=error"
    r"(?P<word>(?-i:[EF])\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^\s\]]+:\d+\]|level=(?:error|fatal|panic)\b|"
    r"error\b|fatal\b|panic\b|exception\b|traceback \(most recent call last\)|"
    r"(?:\w+\.)*\w+(?:error|exception)\b:?|failed\b|failure\b|fail:|e\s+\w+error|npm err!|err!|cannot |can't |could not |"
    r"unable to |permission denied|no such file|command not found|not found:|segmentation fault|undefined reference|"
    r"syntaxerror|typeerror|referenceerror|assertionerror|\[error\]|✗|✘|×)",
    re.I | re.M,
)
# An output that opens so reports a failure whatever its lines say (SWE-agent's linter refusing an edit).
FAILURE_OPENINGS = ("Your proposed edit has introduced new syntax error",)
TOOL_USE_ERROR = re.compile(r"<tool_use_error>(.*?)</tool_use_error>", re.S)


@dataclass
class Outcome:
    """How a tool call ended, read from its output."""

    exit_code: int | None = None
    failed: bool = False
    error_lines: list[str] = field(default_factory=list)
    lines: int = 0
    chars: int = 0
    text: str = ""  # the output text, ANSI stripped, unwrapped from Codex JSON

    @property
    def status(self) -> str:
        if self.exit_code is not None:
            return f"exit {self.exit_code}"
        return "error" if self.failed else "ok"


def unwrap_output(text: str) -> tuple[str, int | None]:
    """Codex wraps shell output as JSON text {"output": ..., "metadata": {"exit_code": N}}; Gemini CLI as lines
    (see _unwrap_gemini)."""
    if text.startswith("Command: "):
        got = _unwrap_gemini(text)
        if got is not None:
            return got
    s = text[:64].lstrip()  # look at the start only: outputs can be megabytes
    if s.startswith("{") and ('"output"' in text[:200] or '"metadata"' in text):
        try:
            obj = orjson.loads(text)
        except orjson.JSONDecodeError:
            return text, None
        if isinstance(obj, dict) and isinstance(obj.get("output"), str):
            meta = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
            code = meta.get("exit_code", obj.get("exit_code"))
            return obj["output"], code if isinstance(code, int) else None
    return text, None


ANSWERED = "User has answered your questions:"  # how Claude Code's AskUserQuestion result opens
_ANSWER = re.compile(r'"((?:[^"\\]|\\.)+)"="((?:[^"\\]|\\.)*)"')


def answers(result: Message | None) -> list[tuple[str, str]]:
    """(question, the person's answer) from a result of Claude Code's AskUserQuestion ("User has answered your
    questions: "Q"="A", "Q2"="A2". You can now continue ..."); [] for any other result."""
    text = result.text() if result is not None else ""
    if not text.startswith(ANSWERED):
        return []
    return [(q.strip(), a.strip()) for q, a in _ANSWER.findall(text)]


_GEMINI_CODE = re.compile(r"-?\d+")


def _unwrap_gemini(text: str) -> tuple[str, int | None] | None:
    """Gemini CLI's `run_shell_command` result: "Command: ...", "Directory: ...", then "Output: ..." (older: "Stdout:
    ..." and "Stderr: ..."), "Error: ..." ("(none)" when there was none), "Exit Code: N", "Signal: ...", "Background
    PIDs: ...". The output (stderr and an error after it) and the exit code; None when the text is not of that form."""
    at = text.find("\nDirectory: ")
    end = text.rfind("\nExit Code: ")
    if at < 0 or end < at:
        return None
    body = text[text.find("\n", at + 1) + 1 : end]
    code_s = text[end + len("\nExit Code: ") :].split("\n", 1)[0].strip()
    body, sep, err = body.rpartition("\nError: ")
    if not sep:
        body, err = err, ""
    for label in ("Output: ", "Stdout: "):
        if body.startswith(label):
            body = body[len(label) :]
    body = "\n".join(s for s in body.split("\nStderr: ", 1) if s.strip() != "(empty)")  # a stream with nothing: "(empty)"
    if err.strip() not in ("", "(none)"):
        body = f"{body}\nError: {err.strip()}" if body else f"Error: {err.strip()}"
    return body, int(code_s) if _GEMINI_CODE.fullmatch(code_s) else None


# Substring tests that each error line pattern needs one of: cheap, and skip most outputs.
TRACEBACK = "Traceback (most recent call last)"
ERROR_HINTS = (
    "rror",
    "ERR",
    "ail",
    "AIL",
    "not found",
    "denied",
    "annot",
    "atal",
    "anic",
    "xception",
    "nable",
    "ndefined",
    "Traceback",
    "an't",
    "ould not",
    "o such file",
    "egmentation",
    "rr!",
    "✗",
    "✘",
    "×",
)
EXIT_HINTS = ("xit", "XIT", "eturn", "ETURN")  # every exit pattern needs one


def outcome(result: Message | None, max_error_lines: int = 5, ok_errors: bool = True) -> Outcome:
    """How a call ended, from its result. `ok_errors` False: the error lines of a call that succeeded are not
    looked for (left empty; `describe` shows none there), which spares a scan of every successful output."""
    if result is None:
        return Outcome(failed=False)
    text, code = unwrap_output(result.text())
    text = _clean(text)
    if code is None:
        code = _exit_code(text)
    errors: list[str] = []
    said = _says_failed(text, errors) or _json_failed(text, code, errors)
    said = said or (code is None and not result.is_error and (_only_program_errors(text, errors) or _tests_failed(text)))
    failed = _errors(text, code, bool(result.is_error) or (code is not None and code != 0) or said, errors, max_error_lines, ok_errors)
    return Outcome(
        code,
        failed,
        errors if (failed or code is None or code != 0) else errors[:2],
        text.count("\n") + (1 if text and not text.endswith("\n") else 0),  # as `wc -l`, plus a last line without its newline
        len(text),
        text,
    )


# A test run's tally: a line that counts tests, passes, failures ("297 tests, 0 failures", "12 passed, 1 skipped in 0.5s",
# "Tests: 5 passed, 5 total", "test result: ok. 5 passed; 0 failed"), looked for in the last TALLY_TAIL characters.
# `\d(?<!\w\w)\d*` is `\b\d+` (a digit is a word character: the boundary is before it) written to start with the digit, which
# the regex engine then looks for alone, skipping the rest of a text: tally's search of an output's tail takes ~half the time.
# The word is no path's ("create mode 100644 test/app_test.exs", "08:32 error.h").
_TALLY = re.compile(
    r"\d(?<!\w\w)\d* (?:tests?|doctests?|examples?|specs?|passed|passing|failed|failing|failures?|errors?|skipped|pending|total)\b"
    r"(?![/.]\w)",
    re.I,
)
TALLY_TAIL = 2000
_TALLY_WORDS = ("test", "pass", "fail", "error", "skip", "pending", "total", "example", "spec")  # one is in every tally
TALLY_LINE = 160  # a longer line is code or a log record, not a tally
# A line that counts, not a test run's: `ls -l`'s ("drwxr-xr-x 2 dev dev 4096 Jul 17 01:31 tests"), `wc`'s "454 total",
# jest's "Snapshots:   3 passed, 3 total" after its "Tests:" line.
_NO_TALLY = re.compile(r"(?!-{10})[-dlcbps][rwxsStT-]{9}[.+@]?[ \t]|\d+ total$|Snapshots:")  # (a rule of dashes is no mode)
_CARGO = "test result:"  # cargo's tally line: one for each test program of the run, its doc-tests' last


def tally(text: str) -> str | None:
    """The last line of an output that counts a test run's results, without the rules around it ("===== 12 passed in
    0.51s =====" -> "12 passed in 0.51s"), or None: what a report of the run says again. cargo's line that counts only
    zeros gives way to an earlier one of its lines that counts something: `cargo test` ends with its doc-tests' "test
    result: ok. 0 passed; 0 failed; ..." after the unit tests' "40 passed". Any other runner's last line is the run's
    (`tsc --watch`'s "Found 0 errors" after an earlier "Found 1 error": the latest compile found none)."""
    tail = text[-TALLY_TAIL:]
    if len(text) > TALLY_TAIL and text[-TALLY_TAIL - 1] != "\n":  # a line the window cuts: "12 passed" would read "2 passed"
        tail = tail.partition("\n")[2]
    low = tail.lower()
    if not any(w in low for w in _TALLY_WORDS) or not _TALLY.search(tail):  # (most outputs: a few substring scans)
        return None
    zeros = None
    for ln in reversed(tail.split("\n")):
        ln = ln.strip()
        if _NO_TALLY.match(ln):
            continue
        ln = ln.strip("=-*# ").strip()
        if not (ln and len(ln) <= TALLY_LINE and _TALLY.search(ln)) or (zeros and not ln.startswith(_CARGO)):
            continue
        if (zeros is None and not ln.startswith(_CARGO)) or any(int(m.group().split(" ", 1)[0]) for m in _TALLY.finditer(ln)):
            return _with_verdict(ln, tail)
        zeros = zeros or ln
    return zeros


# unittest's verdict (Django's test runner's too) on the line after its tally, "Ran 12 tests in 0.005s", and an empty one:
# "FAILED (failures=1, errors=2)", "OK", "OK (skipped=3)", "NO TESTS RAN".
_UNITTEST_VERDICT = re.compile(r"[ \t]*\n\n?(FAILED \([^)\n]*\)|OK(?: \([^)\n]*\))?|NO TESTS RAN)[ \t]*(?:\n|$)")


def _with_verdict(ln: str, tail: str) -> str:
    """unittest's tally with its verdict: "Ran 12 tests in 0.005s, FAILED (failures=1, errors=2)" (its tally line alone
    says no failure)."""
    if not ln.startswith("Ran "):
        return ln
    m = _UNITTEST_VERDICT.match(tail, tail.rfind(ln) + len(ln))
    return f"{ln}, {m.group(1)}" if m else ln


def _tests_failed(text: str) -> bool:
    """An output with no exit code (Claude Code's Bash of `python -m unittest 2>&1 | tail -20`) whose tally is unittest's
    with its "FAILED (failures=1)": the run failed."""
    return "\nFAILED (" in text[-TALLY_TAIL:] and ", FAILED (" in (tally(text) or "")


# A failed output this short with no error line is its own message: its last line says what failed.
SHORT_FAILURE = 400


def _errors(text: str, code: int | None, failed: bool, errors: list[str], limit: int, ok_errors: bool) -> bool:
    """Append the output's error lines to `errors`; returns whether it failed (`failed`: as its flag, exit code or
    words say), which an output with no exit code that opens with an error word and holds an error line did."""
    opens_failed = code is None and not failed and text.lstrip()[:9].lower().startswith(("error", "traceback", "fatal", "failed"))
    if (ok_errors or failed or opens_failed) and any(h in text for h in ERROR_HINTS):
        _error_lines(text, errors, limit)
    if opens_failed and errors:
        failed = True
    if failed and not errors and 0 < len(text.strip()) <= SHORT_FAILURE:  # a short failed output is its own message
        _conclusion(text, errors)
    elif failed and not errors:
        _saying_failed(text, errors)
    return failed


# A line that says a failure in so many words, anywhere in it ("Pre-commit validation failed:").
_SAYS_FAILED = re.compile(r"\b(?:failed|failure|error|fatal|denied|refused|rejected|aborted)\b", re.I)


def _saying_failed(text: str, errors: list[str]) -> None:
    """A long failed output whose lines start with no error word: its first line among the first 20 that says the
    failure anywhere (a literal "\\n" in it, as a hook's echoed text keeps them, read as a space)."""
    for line in text[:4000].split("\n", 20)[:20]:
        if _SAYS_FAILED.search(line) and not _benign(line):
            said = " ".join(line.replace("\\n", " ").split())
            if len(said) >= 8:
                errors.append(cut(said, 200))
                return


# A program's own error line: "find: '/p/css': No such file or directory", "ls: cannot access 'x': ...".
_PROGRAM_ERROR = re.compile(
    r"(?:[\w.+-]+: )+.*(?:No such file or directory|Permission denied|Operation not permitted|Is a directory|"
    r"Not a directory|command not found|cannot (?:access|open|stat|remove|create)\b)"
)


def _only_program_errors(text: str, errors: list[str]) -> bool:
    """A short output with no exit code (Claude Code's Bash records none) that is only a program's error lines
    ("find: '/p/assets/css': No such file or directory") says its command failed; its lines go to `errors`."""
    if not 0 < len(text) <= SHORT_FAILURE or ": " not in text:
        return False
    lines = [ln.strip() for ln in text.strip().split("\n") if ln.strip()]
    if not all(_PROGRAM_ERROR.match(ln) for ln in lines):
        return False
    errors += [cut(ln, 300) for ln in lines[:3] if ln not in errors]
    return True


def _conclusion(text: str, errors: list[str]) -> None:
    """The last line of a short failed output that is not its exit code ("nothing to commit, working tree clean") nor
    git's advice ("hint: ..."); a line that ends a list says it with the line that introduced it ("The following paths
    are ignored by one of your .gitignore files: priv/static/assets")."""
    lines = [ln.strip() for ln in text.strip().split("\n")]
    lines = [ln for ln in lines if ln and not ln.startswith(_ADVICE) and not any(p.search(ln) for p in EXIT_PATTERNS)]
    if not lines:
        return
    k = len(lines) - 1
    while k > 0 and len(lines) - k <= _LISTED_MAX and " " not in lines[k]:  # a list of names (paths) ends the output
        k -= 1
    listed = k < len(lines) - 1 and lines[k].endswith(":")
    errors.append(cut(f"{lines[k]} {' '.join(lines[k + 1 :])}" if listed else lines[-1], 300))


_ADVICE = ("hint: ",)  # git's advice under an error: how to silence or force it, never what failed
_LISTED_MAX = 5  # the names a list that ends a short failed output shows with the line that introduced it (": ")


def _says_failed(text: str, errors: list[str]) -> bool:
    """The output says in so many words that the call failed (Claude Code's <tool_use_error>, SWE-agent's linter
    refusing an edit); its message goes first among `errors`."""
    m = TOOL_USE_ERROR.search(text)
    if m:
        errors.append(cut(m.group(1).strip().splitlines()[0], 300) if m.group(1).strip() else "tool use error")
        return True
    if text.lstrip().startswith(FAILURE_OPENINGS):
        first = text.strip().split("\n", 1)[0]
        lint = _LINT_LINE.findall(text[:4000])  # what the linter found ("- E999 IndentationError: unexpected indent")
        said = first.split(". ", 1)[0] + ": " + "; ".join(lint[:3]) if lint else first
        errors.append(cut(said, 300))
        return True
    return False


# A JSON error body this short is the whole answer (an HTTP API's to curl, a function's); a longer JSON is data.
SHORT_JSON = 2000
# Where a JSON error body says what failed: {"error": {"message": ...}}, {"error": true, "message": ...}, OAuth's
# {"error": "invalid_grant", "error_description": ...}, FastAPI's {"detail": [{"msg": ...}]}.
_JSON_MESSAGE = ("message", "msg", "detail", "reason")  # (not "description": a JSON schema's property has one)
# An "error" whose text says there is none.
_NO_ERROR = ("", "none", "null", "false", "ok", "0", "no error", "no errors", "success", "n/a", "-")


def _json_failed(text: str, code: int | None, errors: list[str]) -> bool:
    """An output that is one short JSON object shaped as an API's error body (`_error_of`) says what failed: its message
    goes to `errors`; with no exit code, the call failed (a curl of it ends 0)."""
    s = text.strip()
    if not (s.startswith("{") and s.endswith("}")) or len(s) > SHORT_JSON or ('"error' not in s and '"detail"' not in s):
        return False
    try:
        obj = orjson.loads(s)
    except orjson.JSONDecodeError:
        return False
    said = _error_of(obj) if isinstance(obj, dict) else None
    if said is None:
        return False
    errors.append(cut(" ".join(said.split()), 300))  # (a digest says "-> error: " before it, the summary "error: ")
    return code is None


def _said(d: object, keys: tuple[str, ...]) -> str | None:
    """The first of `keys` whose value in `d` is text that says something."""
    if not isinstance(d, dict):
        return None
    return next((d[k] for k in keys if isinstance(d.get(k), str) and d[k].strip()), None)


def _error_object(err: dict) -> str | None:
    """What an "error" object says: its message, or itself when its code fails; nothing when its code says none failed
    ({"code": 0, "message": "OK"}) or it has neither (a schema's "error" property)."""
    code = err.get("code", err.get("status"))
    if code in (0, "0", 200, "200", "", "OK", "ok"):
        return None
    return _said(err, _JSON_MESSAGE) or (orjson.dumps(err).decode() if code is not None else None)


def _failing_status(obj: dict) -> bool:
    """A body whose HTTP status says it failed (Spring Boot's {"status": 404, "error": "Not Found", ...})."""
    status = obj.get("status", obj.get("statusCode"))
    return isinstance(status, int) and not isinstance(status, bool) and status >= 400


def _error_of(obj: dict) -> str | None:
    """What an API's error body says failed, when `obj` has an error's shape: an "error" object with a message or a
    failing code (OpenAI's, Google's, JSON-RPC's: an answer without a "result"), an "error" text that names an error
    (OAuth's with its "error_description", Spring Boot's), "error": true (with its "message"), "errors" a list
    (GraphQL's), FastAPI's {"detail": [{"msg": ...}]}. Not a JSON file that holds an "error" or "errors" object among
    its data (a translation file's, a schema's, a catalogue of error codes), an "error" that says there is none
    ({"error": "No error"}), a success's lone "detail" ({"detail": "Successfully logged out."}: FastAPI's
    {"detail": "Not Found"} is told from it by nothing in the body), an answer with its "result"."""
    if "result" in obj:
        return None
    err = obj.get("error")
    if isinstance(err, dict):
        return _error_object(err)
    if isinstance(err, str) and err.strip().lower() not in _NO_ERROR:
        more = _said(obj, ("error_description", "message"))
        # (alone, or with a message or a failing status: beside other data, "error" is a key of it, a translation's)
        return f"{err}: {more}" if more else err if list(obj) == ["error"] or _failing_status(obj) else None
    if err is True:
        return _said(obj, ("message",)) or orjson.dumps(obj).decode()
    errs = obj.get("errors")
    if isinstance(errs, list) and errs and all(_said(e, ("message",)) for e in errs):  # GraphQL's (a form's ["Required"]: data)
        return _said(errs[0], ("message",))
    detail = obj.get("detail")
    if list(obj) == ["detail"] and isinstance(detail, list) and detail and all(_said(d, ("msg",)) for d in detail):
        return _said(detail[0], ("msg",))
    return None


_LINT_LINE = re.compile(r"^- ([EFW]\d{3,4} \S.*)$", re.M)


def _clean(text: str) -> str:
    if "\x1b" in text:
        text = ANSI.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    return text


def _exit_code(text: str) -> int | None:
    """An exit code written in the first or last 400 characters of the output."""
    head, tail = text[:400], text[-400:]
    if not any(h in head or h in tail for h in EXIT_HINTS):
        return None
    for pat in EXIT_PATTERNS:
        m = pat.search(tail) or pat.search(head)
        if m:
            return int(m.group(1))
    return None


_BARE_ERROR = re.compile(r"[ \t]*(?:error|fatal|exception)[ \t]*(?::[ \t]*)?$", re.I)  # (one run of blanks a place: linear)


def _error_lines(text: str, errors: list[str], limit: int) -> None:
    """Append the output's error lines (not benign ones, not repeated) to `errors`, up to `limit`; a log record's after
    the others (an app logs errors while its tests run and pass: the failure the runner reports says what failed)."""
    logged: list[str] = []
    for hit in ERROR_LINE.finditer(text):
        if len(errors) >= limit:
            break
        if len(logged) >= limit and hit.group("log"):  # (a long log of error records: only a runner's line may follow)
            continue
        start = hit.start()
        end = text.find("\n", start)
        line = text[start:] if end < 0 else text[start:end]
        if hit.group("log"):  # a log record's time is no part of what failed (and the same error at two times is one)
            line = line[: hit.start("log") - start] + line[hit.end("log") - start :]
        if end >= 0 and _BARE_ERROR.match(line):  # "ERROR:" on its own line (OpenHands' editor): its message is the next
            line = line.strip() + " " + text[end + 1 : end + 1000].lstrip().split("\n", 1)[0].strip()
        if (len(line) < LONG_LINE or _opens_message(hit, text)) and not _benign(line):
            s = line.strip()
            into = logged if hit.group("log") else errors
            if s and s not in errors and s not in logged and len(into) < limit:
                into.append(cut(s, 300))
    errors += logged[: max(limit - len(errors), 0)]
    if len(errors) > 1 and errors[0].rstrip(":").endswith(TRACEBACK):  # the exception's line says what failed; the header (after
        # docker compose's "web-1  | "), that it did
        del errors[0]


# A line this long is data (a JSON dump, a minified line, a paragraph of a document) unless it opens as an error
# message does: it is then one (a compiler's message with a long type, an exception's with a long value), cut to 300.
LONG_LINE = 400
# An error word labelled as a message's opens: "Error: ", "error TS2322: ", "error[E0308]: ", "Exception in thread".
_LABEL = re.compile(r"[ \t]*(?:[A-Za-z]*\d+|\[\w+\])?:|[ \t]+in thread\b")


def _opens_message(hit: re.Match[str], text: str) -> bool:
    """The error line `hit` found opens as a message, not as prose or code that starts with an error word ("Error
    handling is ...", "Failed payments are ...", "Error.captureStackTrace(...)"): after a place ("src/a.ts:20:3: ",
    "bash: line 1: ") or a log record's time, in capitals (a log level, a test runner's "FAILED"), a mark ("[ERROR]",
    "npm ERR!", "×", "ValueError:") or labelled (_LABEL)."""
    word = hit.group("word")
    if text.startswith(",", hit.end()):  # a CSV record's field ("ERROR,2024-05-01,...": `grep ERROR app.csv`)
        return False
    return bool(hit.group("at")) or word.isupper() or not (word[-1].isalnum() or word[-1].isspace()) or bool(_LABEL.match(text, hit.end()))


# A line that says nothing failed: "0 errors", "Errors: 0", "failed: 0", "no errors", CTest's "0 tests failed", .NET's
# "Failed:     0", Gemini CLI's "Error: (none)" (its shell output says so when nothing failed).
_NONE_FAILED = re.compile(
    r"\b0 (?:tests? )?(?:errors?|failed|failures?)\b|(?:errors?|failures?|failed):\s*0\b|errors?: \(none\)|no errors", re.I
)
# ... unless it says something did too: Maven's "Tests run: 5, Failures: 1, Errors: 0 ... <<< FAILURE!", minitest's
# "1 failures, 0 errors", a runner's FAIL, FAILED, FAILURE in capitals (its lower-case "0 failed" says none).
_SOME_FAILED = re.compile(
    r"(?i:\b[1-9]\d* (?:tests? )?(?:errors?|failed|failures?|failing)\b|\b(?:errors?|failures?|failed)\s*[:=]\s*[1-9])|"
    r"\bFAIL(?:ED|URES?)?\b"
)


def _benign(line: str) -> bool:
    return bool(_NONE_FAILED.search(line)) and not _SOME_FAILED.search(line)
