"""What the commands share: exit codes, loading a command's imports, the file arguments, --workers, notes on stderr."""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import CompactError, Exit
from .options import Opt

# Start-up matters (a hook runs the tool once per session file): each command imports the library,
# orjson and the runner when it runs, so `--help` and completion load only typer and the option tables,
# and a phase command's run (the fast path, fast.py) only the option tables.

_RUN_BY_MAIN = False  # cli.main() runs this process (see loading)


def run_by_main() -> None:
    """Said by cli.main(): this process is the command's own (not a test running the app in-process)."""
    global _RUN_BY_MAIN
    _RUN_BY_MAIN = True


@contextmanager
def exit_codes(ending: Callable[[int], BaseException] = SystemExit) -> Iterator[None]:
    """A CompactError becomes its documented exit code (errors.Exit), with its message on stderr; so does a
    standard output its reader closed (`| head`): an unwritable output, exit 4, whichever path was writing.
    `ending` makes the exception that ends the run: the app's typer.Exit (click turns it into SystemExit, or returns
    its code with standalone_mode=False), the fast path's SystemExit (it has no typer)."""
    try:
        yield
    except CompactError as e:
        try:
            print(f"compactctl: error: {e}", file=sys.stderr)
        except OSError:  # stderr's reader left (`2>&1 | head`): the error's own code, not typer's exit 1 for a broken pipe
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stderr.fileno())  # nor a failed flush at exit
        raise ending(int(e.exit_code)) from e
    except BrokenPipeError as e:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing more goes to it, not even at exit
        with contextlib.suppress(OSError):
            print("compactctl: error: standard output: its reader closed it (broken pipe)", file=sys.stderr)
        raise ending(int(Exit.IO)) from e


class Stderr:
    """sys.stderr of the command's own process (cli.main): what the run says there (notes, warnings, `repair
    --check`'s findings) is not its result. Once the reader has left (`2>&1 | head`), the rest goes nowhere and the
    run goes on to its own end and exit code; before, the broken pipe was taken for a closed standard output (exit
    4, a `-o DIR/` run's files not written)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._gone = stream is None  # started with stderr closed (`2>&-`): what it says goes nowhere

    def isatty(self) -> bool:
        return not self._gone and self._stream.isatty()

    def write(self, text: str) -> int:
        if not self._gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._leave()
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._leave()

    def _leave(self) -> None:
        self._gone = True
        with contextlib.suppress(OSError, ValueError):  # nor a failed flush of what is left in its buffer at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class ClosedStdout:
    """sys.stdout of a process started with its standard output closed (`>&-`; Python makes it None). A run that
    writes elsewhere (-o FILE) runs as with any stdout; a write to it fails as a write to a closed descriptor does,
    an OSError that the output's writer reports (exit 4, "standard output: cannot write (Bad file descriptor)"),
    however the command line was spelled: before, the first look at it (`isatty`) was a traceback, exit 1."""

    encoding = "utf-8"

    @property
    def buffer(self) -> ClosedStdout:
        return self

    def write(self, data: Any) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    def flush(self) -> None:
        pass  # nothing was written, nothing to flush (the writer flushes stdout after writing a file, too)

    def fileno(self) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    def isatty(self) -> bool:
        return False


@contextmanager
def loading() -> Iterator[None]:
    """A command's own imports (the library, orjson, the runner) load as entry.main loads the command line: no
    collection meanwhile, then what they made is frozen (issue 11: ~2 ms a process). Only in the process that
    main() runs (`run_by_main`), not in one that runs the app in-process (CliRunner), whose objects it must not freeze."""
    if not _RUN_BY_MAIN:
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


# The commands' positional argument, as data (options.Opt without flags).
INPUTS = Opt(
    "inputs", list[str] | None, None, (), "JSONL files, directories (recursive *.jsonl, *.json, *.traj), or - for stdin (the default)."
)


def worker_count(workers: int | None) -> int:
    """--workers, or the machine's cores."""
    return workers or os.cpu_count() or 1


def say(io, msg: str) -> None:
    if not io.quiet:
        print(msg, file=sys.stderr)


def report_line(io, rep: dict, as_json: bool) -> None:
    if as_json:
        import orjson

        print(orjson.dumps(rep).decode(), file=sys.stderr)
    elif not io.quiet:
        print(
            f"{rep['transcript']}: {rep['status']}: {rep['tokens_before']:,} -> {rep['tokens_after']:,} tokens"
            + (f" ({rep['summarizer']})" if rep.get("summarizer") else "")
            + (f"; {rep['reason']}" if rep.get("reason") and rep["status"] != "compacted" else "")
            + (_what_changed(rep) if rep["status"] == "not-needed" else ""),
            file=sys.stderr,
        )


def _what_changed(rep: dict) -> str:
    """What prune and repair still did to a transcript that needed no summary: "not-needed" alone read as untouched."""
    parts = []
    pruned = rep.get("prune") or {}
    if pruned.get("tokens_before") is not None and pruned["tokens_after"] < pruned["tokens_before"]:
        parts.append(f"pruned {pruned['tokens_before']:,} -> {pruned['tokens_after']:,} tokens")
    fixes = [f"{k.replace('_', ' ')} {v}" for k, v in (rep.get("repair") or {}).items() if isinstance(v, int) and v]
    if fixes:
        parts.append("repaired: " + ", ".join(fixes))
    return "".join("; " + p for p in parts)
