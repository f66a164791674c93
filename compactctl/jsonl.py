"""Reading and writing JSONL safely: lines, decoding, errors by file and line, atomic outputs.

Lines are split on b"\\n" only (never str.splitlines: U+2028/U+2029 may stand raw inside strings).
A BOM, CRLF endings, blank lines and a last line without a newline are accepted. Invalid UTF-8 (a UTF-16 file
is named as one), a truncated line, or a non-object value is a `DataError` naming the file and line. Lone UTF-16
surrogates (valid JSON, but not encodable) become U+FFFD with a warning, so output always encodes.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

import orjson

from .errors import DataError, IOFailure, UsageError

BOM = b"\xef\xbb\xbf"
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")  # a file Windows PowerShell's `>` wrote, say: named as such, not as bad UTF-8
UTF16 = "the file is UTF-16 (it starts with its byte-order mark); compactctl reads UTF-8: convert it first (iconv -f UTF-16 -t UTF-8)"
INPUT_SUFFIXES = (".jsonl", ".json", ".traj")  # what a directory input contributes
MAX_LINE_ENV = "COMPACTCTL_MAX_LINE_MB"  # refuse a single line (one record), or a JSON document read whole, larger than this


def max_line_bytes() -> int:
    """The single-line limit: $COMPACTCTL_MAX_LINE_MB (default 128; 0 = no limit). A 200 MB line
    would take ~13x its size in memory once parsed and tokenized, so the default refuses it clearly."""
    raw = os.environ.get(MAX_LINE_ENV, "128")
    try:
        mb = float(raw)
    except ValueError:
        mb = math.nan
    if not (math.isfinite(mb) and mb >= 0):
        raise UsageError(f"${MAX_LINE_ENV} must be a number of megabytes (0: no limit), got {raw!r}")
    return int(mb * (1 << 20))


STDIN = "-"
Warn = Callable[[str], None]


def _no_warn(msg: str) -> None:
    pass


def expand_inputs(paths: Iterable[str]) -> list[str]:
    """Files as given, directories as their *.jsonl, *.json and *.traj files (recursively, sorted), '-' for stdin."""
    out: list[str] = []
    for p in paths:
        if p == STDIN:
            out.append(p)
            continue
        if _is_dir(p):
            from pathlib import Path  # only for a directory: pathlib is ~4 ms of each process's start

            found = sorted(str(f) for f in Path(p).rglob("*") if f.suffix in INPUT_SUFFIXES and f.is_file())
            if not found:
                raise IOFailure(f"{p}: directory holds no *.jsonl, *.json or *.traj file")
            out.extend(found)
        else:
            out.append(p)
    return out or [STDIN]


def _is_dir(p: str) -> bool:
    """Whether input `p` is a directory; an IOFailure naming it when it cannot be looked at (missing, a folder on
    its way that may not be searched, `file.jsonl/`, an empty name), with the system's reason."""
    try:
        return stat.S_ISDIR(os.stat(p).st_mode)
    except FileNotFoundError:
        raise IOFailure(f"{p}: no such file or directory") from None
    except (OSError, ValueError) as e:  # ValueError: a NUL in the name
        raise IOFailure(f"{p}: {getattr(e, 'strerror', None) or e}") from None


def open_input(name: str) -> IO[bytes]:
    if name == STDIN:
        return sys.stdin.buffer
    try:
        return open(name, "rb")
    except OSError as e:
        raise IOFailure(f"{name}: {e.strerror or e}") from e


def iter_lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """(line number, line bytes without its ending) for each non-blank line."""
    for lineno, line in enumerate(stream, 1):
        if lineno == 1 and line.startswith(BOM):
            line = line[3:]
        line = line.rstrip(b"\n").rstrip(b"\r")
        if line.strip():
            yield lineno, line


def parse_line(raw: bytes, source: str, lineno: int, warn: Warn = _no_warn) -> Any:
    """Parse one JSON line, or raise DataError naming where and what."""
    return parse_record(raw, source, lineno, warn)[0]


MAX_DEPTH = 254  # levels of nesting orjson writes (it reads 1,024): a deeper record cannot be written back


def parse_record(raw: bytes, source: str, lineno: int, warn: Warn = _no_warn) -> tuple[Any, bytes]:
    """(value, its JSON bytes): the line as is, or re-encoded when lone surrogates were replaced."""
    try:
        return orjson.loads(raw), raw
    except orjson.JSONDecodeError as e:
        err = e
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        if lineno == 1 and raw.startswith(UTF16_BOMS):
            raise DataError(source, lineno, UTF16) from None
        raise DataError(source, lineno, f"invalid UTF-8 at byte {e.start}") from None
    try:
        # accepts lone surrogates (and integers beyond 64 bits), which orjson rejects; never NaN,
        # Infinity or a number that overflows to infinity (1e999): not JSON, and not writable back
        value = json.loads(text, parse_constant=_non_finite, parse_float=_finite_float, parse_int=_finite_int)
    except _NonFinite as e:
        raise DataError(
            source, lineno, f"invalid JSON: the number {e} is not finite (NaN, Infinity and out-of-range numbers like 1e999 are not JSON)"
        ) from None
    except json.JSONDecodeError as e:
        body = text.strip()  # (a line that opens no object or array, `x`, is not one cut short)
        ends_early = body[:1] in ("{", "[") and _cut_short(text, e)
        what = (
            f"truncated JSON (the line ends early: {e.msg})"
            if ends_early
            else f"invalid JSON: {e.msg.removesuffix(' at')} at column {e.colno}"
        )
        raise DataError(source, lineno, what) from None
    except RecursionError:
        raise DataError(source, lineno, f"invalid JSON: {err}") from None
    if not _any_surrogate(value):
        return value, raw  # valid JSON orjson does not take (deep nesting): kept as written
    warn(f"{source}:{lineno}: lone UTF-16 surrogate replaced by U+FFFD")
    value = _fix_surrogates(value)
    try:
        return value, orjson.dumps(value)
    except TypeError:  # an integer beyond 64 bits: exact in the line, the nearest float in the value (as orjson reads it)
        return _nearest(value), json.dumps(value, ensure_ascii=False).encode()


# What completes a token the end of a line cut short: a literal's first letters, a number's sign, dot or exponent,
# a \\u escape's first hex digits (json's error stands at the token, or at what its number part could not take).
_TOKEN_REST = {w[:k]: w[k:] for w in ("true", "false", "null") for k in range(1, len(w))}
_TOKEN_REST.update({"-": "0", ".": "0", "e": "0", "E": "0", "e+": "0", "e-": "0", "E+": "0", "E-": "0"})
_ESCAPE_CUT = re.compile(r"u[0-9a-fA-F]{0,3}")


def _cut_short(text: str, e: json.JSONDecodeError) -> bool:
    """Whether `text`, which json failed on with `e`, is JSON cut short: its error is at its end, or at a token its end
    cuts (`tr`, `1.`, `1e+`, `-`, `\\u12`), which completed moves the error to the end. Not a line with one character
    too many (`{...}}`) or a trailing comma (`{"a": 1,}`): they were "truncated JSON (the line ends early: Extra data)"."""
    end = len(text.rstrip())
    if e.msg.startswith("Unterminated") or e.pos >= end:
        return True
    rest = text[e.pos :]
    fill = _TOKEN_REST.get(rest)
    if fill is None and _ESCAPE_CUT.fullmatch(rest):
        fill = "0" * (5 - len(rest)) + '"'  # (and the string closed: json wants a character after the escape)
    if fill is None:
        return False
    try:
        json.loads(text + fill)
    except json.JSONDecodeError as again:  # (always: the line opens an object or array that no token closes)
        return again.msg.startswith("Unterminated") or again.pos >= len(text + fill)
    return True


class _NonFinite(ValueError):
    pass


def _non_finite(name: str) -> Any:
    raise _NonFinite(name)


def _finite_float(s: str) -> float:
    v = float(s)
    if v in (float("inf"), float("-inf")):
        raise _NonFinite(s)
    return v


def _finite_int(s: str) -> int:
    """An integer, refused (as orjson refuses it) when no float holds it: a converted message holds its nearest float."""
    v = int(s)
    if len(s) > 300:
        try:
            float(v)
        except OverflowError:
            raise _NonFinite(f"{s[:12]}... ({len(s.lstrip('-'))} digits)") from None
    return v


def _nearest(v: Any) -> Any:
    """`v` with each integer beyond 64 bits as the nearest float, as orjson reads it (orjson writes no such integer)."""
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v if -(2**63) <= v < 2**64 else float(v)
    if isinstance(v, list):
        return [_nearest(x) for x in v]
    if isinstance(v, dict):
        return {k: _nearest(x) for k, x in v.items()}
    return v


def without_surrogates(s: str) -> str:
    """`s` with every lone UTF-16 surrogate replaced by U+FFFD (it cannot be encoded as UTF-8)."""
    return s.encode("utf-16", "surrogatepass").decode("utf-16", "replace") if _has_surrogate(s) else s


def record_line(v: Any) -> bytes:
    """`v` as one JSON line of a side file (archive, report). A name that holds a lone surrogate (a file name that is
    not UTF-8, as Python reads it) has U+FFFD in its place: JSON cannot carry it, and the record must still be written."""
    try:
        return orjson.dumps(v) + b"\n"
    except TypeError:
        if not _any_surrogate(v):
            raise
        return orjson.dumps(_fix_surrogates(v)) + b"\n"


def _fix_surrogates(v: Any) -> Any:
    if isinstance(v, str):
        return without_surrogates(v)
    if isinstance(v, (list, tuple)):
        return [_fix_surrogates(x) for x in v]
    if isinstance(v, dict):
        return {_fix_surrogates(k): _fix_surrogates(x) for k, x in v.items()}
    return v


def _any_surrogate(v: Any) -> bool:
    if isinstance(v, str):
        return _has_surrogate(v)
    if isinstance(v, (list, tuple)):
        return any(_any_surrogate(x) for x in v)
    if isinstance(v, dict):
        return any(_any_surrogate(k) or _any_surrogate(x) for k, x in v.items())
    return False


def _has_surrogate(s: str) -> bool:
    return any("\ud800" <= c <= "\udfff" for c in s)


def keep_mode(new: str, target: str) -> None:
    """A file written anew over `target` keeps the mode `target` had (the user's choice for it); a new file
    stays 0600, as its temporary file was made (an output may hold what a transcript held)."""
    with contextlib.suppress(FileNotFoundError):
        os.chmod(new, stat.S_IMODE(os.stat(target).st_mode))


_DESCRIPTOR = re.compile(r"/(?:dev/fd|proc/self/fd|proc/thread-self/fd)/(\d+)")


def descriptor(path: str) -> int | None:
    """The open file of this process a path names (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N, or a link to
    one): its number, else None."""
    p = os.path.abspath(path)
    for _ in range(8):  # /dev/stdout -> /proc/self/fd/1; a link to a link
        m = _DESCRIPTOR.fullmatch(p)
        if m:
            return int(m[1])
        if not os.path.islink(p):
            return None
        p = os.path.normpath(os.path.join(os.path.dirname(p), os.readlink(p)))
    return None


def in_place(path: str) -> bool:
    """An output written to in place, never renamed over: a device or a pipe (/dev/null, a FIFO), or one of this
    process's open files by name (/dev/stdout, /dev/fd/1, whatever the shell opened it on: `> out.jsonl` makes it a
    link to a regular file, and a part file renamed over /dev/stdout replaced the system's link with a file)."""
    return (os.path.exists(path) and not os.path.isfile(path)) or descriptor(path) is not None


def _write_in_place(path: str, src: IO[bytes]) -> None:
    """Copy `src` to a device, a pipe, or an open descriptor named by path: through the descriptor itself, so that it
    goes where the shell's redirection points, after what was written there (`2>>log`), truncating nothing."""
    fd = descriptor(path)
    if fd is None:
        with open(path, "wb") as f:
            shutil.copyfileobj(src, f)
        return
    for std in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            if std.fileno() == fd:
                std.flush()
    with os.fdopen(os.dup(fd), "wb") as f:
        shutil.copyfileobj(src, f)


class Output:
    """All-or-nothing output: a file is written to a temp file and renamed on success; stdout is
    spooled and copied out only on success when `spool` is set (a failed run prints nothing)."""

    def __init__(self, target: str | None, spool: bool = True):
        self.target = target if target not in (None, STDIN) else None
        self._tmp: IO[bytes] | None = None
        self._tmp_path: str | None = None
        self._special: str | None
        self.spool = spool
        if self.target and in_place(self.target):
            # A device, a pipe or an open descriptor (/dev/null, a FIFO, /dev/stdout): never rename over it; spool,
            # then write once.
            self._special = self.target
            self.target = None
        else:
            self._special = None
        if self.target:
            d = os.path.dirname(os.path.abspath(self.target))
            try:
                fd, self._tmp_path = tempfile.mkstemp(prefix=".compactctl-", suffix=".tmp", dir=d)
            except OSError as e:
                raise IOFailure(f"{self.target}: cannot write here ({e.strerror or e})") from e
            self._tmp = os.fdopen(fd, "wb")
        elif spool:
            self._tmp = tempfile.SpooledTemporaryFile(max_size=64 << 20)  # noqa: SIM115
        if self._special and self._tmp is None:
            self._tmp = tempfile.SpooledTemporaryFile(max_size=64 << 20)  # noqa: SIM115
        self.stream: IO[bytes] = self._tmp if self._tmp is not None else sys.stdout.buffer

    @property
    def streams(self) -> bool:
        """Written straight to stdout as it comes (not spooled): what was written before an error stays written."""
        return self._tmp is None

    def write(self, data: bytes) -> None:
        try:
            self.stream.write(data)
        except BrokenPipeError:
            raise  # the reader closed standard output: cli.exit_codes says so, as everywhere
        except OSError as e:  # a full disk, a closed pipe's neighbour errors
            raise IOFailure(f"{self.target or self._special or 'standard output'}: cannot write ({e.strerror or e})") from e

    def commit(self) -> None:
        if self.target:
            assert self._tmp is not None and self._tmp_path is not None
            try:
                self._tmp.close()  # flushes: a full disk shows here
                keep_mode(self._tmp_path, self.target)
                os.replace(self._tmp_path, self.target)
            except OSError as e:
                raise IOFailure(f"{self.target}: {e.strerror or e}") from e
        elif self._tmp is not None:
            self._tmp.seek(0)
            if self._special:
                try:
                    _write_in_place(self._special, self._tmp)
                except OSError as e:
                    raise IOFailure(f"{self._special}: {e.strerror or e}") from e
            else:
                try:
                    shutil.copyfileobj(self._tmp, sys.stdout.buffer)
                except OSError as e:
                    if isinstance(e, BrokenPipeError):
                        raise
                    raise IOFailure(f"standard output: cannot write ({e.strerror or e})") from e
            self._tmp.close()
        if not self._special:
            try:
                sys.stdout.buffer.flush()
            except BrokenPipeError:
                raise
            except OSError as e:
                raise IOFailure(f"standard output: cannot write ({e.strerror or e})") from e

    def abort(self) -> None:
        if self._tmp is not None:
            self._tmp.close()
        if self._tmp_path and os.path.exists(self._tmp_path):
            os.unlink(self._tmp_path)

    def __enter__(self) -> Output:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


class JsonlSink:
    """A side file of JSON lines (archive, rejects, report), written atomically on success."""

    def __init__(self, path: str | None):
        self.out = Output(path, spool=False) if path else None
        self.count = 0

    def add(self, obj: Any) -> None:
        if self.out is not None:
            self.out.write(orjson.dumps(obj) + b"\n")
            self.count += 1

    def add_raw(self, line: bytes) -> None:
        if self.out is not None:
            self.out.write(line + b"\n")
            self.count += 1

    def close(self, ok: bool) -> None:
        if self.out is not None:
            self.out.commit() if ok else self.out.abort()
