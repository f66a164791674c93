"""Option defaults from config files and the environment.

Where a setting comes from, highest first:
1. the command line;
2. the environment: `COMPACTCTL_<NAME>` (e.g. COMPACTCTL_CONTEXT_WINDOW), and OPENAI_BASE_URL for base_url;
3. the project: the nearest `compactctl.toml` in the current folder or its parents, or else, in the
   same walk, a `pyproject.toml` with a `[tool.compactctl]` table (a compactctl.toml in a folder
   wins over that folder's pyproject.toml);
4. the user: `$XDG_CONFIG_HOME/compactctl/config.toml` (default `~/.config/compactctl/config.toml`);
5. the built-in defaults.

Keys are the long option names of the budget, prune and summary options (`context-window` or
`context_window`), and of --on-error and --workers (`on-error = "skip"`, `workers = 4`: a command without the
option, such as plan without --workers, leaves the key alone); a repeatable option (keep-tool, drop-tool) takes a list of names in a file and names
separated by commas in the environment. A file's value has its TOML type (text where a number or a boolean goes,
`threshold = "0.4"`, is a wrong type); an environment variable's text is parsed. Any other key that would hold a secret (api_key, token, password...) is refused with
a warning: the key belongs in $OPENAI_API_KEY, not in a file that may be committed. Any other unknown
key is warned about (with the closest known key) and ignored: a newer version's key does not break an
older one.

LIMITS holds the allowed values of these settings and `check` applies it, whatever their source: the
command line calls it on the effective values (and `compactctl config` on the resolved ones); a value
out of range is a usage error naming where it came from (the flag, $COMPACTCTL_<NAME>, or the file
and its key).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import re
import stat
import sys
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from enum import Enum
from typing import Any

from . import xdg
from .errors import UsageError
from .lean import dataclass

PROJECT_FILE = "compactctl.toml"
SECRET_WORDS = ("key", "token", "secret", "password", "passwd", "credential")
ENV_ALIASES = {"base_url": ("OPENAI_BASE_URL",)}


@dataclass
class Setting:
    """One effective setting and where its value came from."""

    name: str
    value: Any
    source: str  # "default", "flag", "env:NAME", "project:PATH", "user:PATH"
    key: str | None = None  # the key as a file spells it (context-window or context_window)


def _toml(path: str) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e}") from e
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path}: invalid TOML: {e}") from e
    except UnicodeDecodeError as e:  # TOML is UTF-8; tomllib decodes the whole file first
        raise UsageError(f"{path}: invalid TOML: not UTF-8 (byte {e.start})") from e


def user_file(environ: Mapping[str, str] | None = None) -> str:
    return os.path.join(xdg.base("XDG_CONFIG_HOME", ".config", environ), "compactctl", "config.toml")


# Every way TOML can spell a [tool.compactctl] table: the keys `tool` and `compactctl` joined by a dot (a header
# `[tool.compactctl]`, a dotted key `tool.compactctl.x = 1`; spaces and quotes allowed), or a `[tool]` table or a
# `tool = {...}` inline table whose keys are not seen without parsing. A pyproject.toml that merely names the
# package (a dependency, a script `compactctl = "..."`) has none of these and is not parsed (~4 ms a process).
_MAY_HOLD_TABLE = re.compile(
    rb"""["']?tool["']?[ \t]*\.[ \t]*["']?compactctl\b|^[ \t]*\[[ \t]*["']?tool["']?[ \t]*\]|^[ \t]*["']?tool["']?[ \t]*=""",
    re.MULTILINE,
)


def _may_hold_table(data: bytes) -> bool:
    return b"compactctl" in data and _MAY_HOLD_TABLE.search(data) is not None


def _folders(start: str | os.PathLike[str]) -> Iterator[str]:
    """`start` made absolute, links resolved, then each parent up to the root."""
    folder = os.path.realpath(start)
    while True:
        yield folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        folder = parent


def project_table(cwd: str | os.PathLike[str] | None = None) -> tuple[dict, str] | None:
    """The nearest project settings and where they came from ('path' or 'path [tool.compactctl]')."""
    for folder in _folders(cwd or os.getcwd()):
        own = os.path.join(folder, PROJECT_FILE)
        if _is_file(own):
            return _toml(own), own
        py = os.path.join(folder, "pyproject.toml")
        if _is_file(py) and _may_hold_table(_read(py)):  # most pyproject.toml files are not parsed at all
            table = _toml(py).get("tool", {}).get("compactctl")
            if isinstance(table, dict):
                return table, f"{py} [tool.compactctl]"
    return None


def _is_file(path: str) -> bool:
    """Whether a settings file is there; a folder on the way that may not be searched is an error naming the file
    (not skipped: a nearer file there would win over the one found further up)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e}") from e


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:  # as _toml says it
        raise UsageError(f"cannot read {path}: {e}") from e


def _coerce(name: str, kind: Any, value: Any, where: str, text: bool = False) -> Any:
    """A file or environment value as the option's type. `text`: the value is an environment variable's, a string
    to parse (`COMPACTCTL_THRESHOLD=0.4`); a file's has a TOML type, and a string where a number or a boolean goes
    (`threshold = "0.4"`) is a wrong type, as `no-dedup = 1` is."""
    try:
        if isinstance(kind, type) and issubclass(kind, Enum):
            choices = [m.value for m in kind]
            if value not in choices:
                raise ValueError(f"one of {', '.join(choices)}")
            return value
        if kind in (bool, int, float):
            return _scalar(kind, value, text)
        if getattr(kind, "__origin__", None) is list:
            return _names(value)
        if not isinstance(value, str):
            raise ValueError("a string")
        return value
    except ValueError as e:
        raise UsageError(f"{where}: {name} = {value!r} is not valid (expected {e})") from None


_EXPECTED = {bool: "true or false", int: "an integer", float: "a number"}


def _scalar(kind: type, value: Any, text: bool) -> Any:
    """A boolean, integer or number: of that TOML type in a file (an integer for a number too), parsed from text in the
    environment."""
    expected = _EXPECTED[kind]
    if isinstance(value, str):
        if not text:  # a quoted value in a file: said how to write it, when it would parse
            try:
                parsed = _scalar(kind, value, True)
            except ValueError:
                raise ValueError(expected) from None
            raise ValueError(f"{expected}, not text: {str(parsed).lower() if kind is bool else value.strip()}, without quotes")
        if kind is bool:
            if value.lower() in ("1", "true", "yes", "on", "0", "false", "no", "off"):
                return value.lower() in ("1", "true", "yes", "on")
            raise ValueError(expected)
        try:
            return kind(value)
        except ValueError:
            raise ValueError(expected) from None
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise ValueError(expected)
    if isinstance(value, bool) or not isinstance(value, (int,) if kind is int else (int, float)):
        raise ValueError(expected)
    return kind(value)


def _names(value: Any) -> list[str]:
    """A repeatable option's values (keep-tool, drop-tool): a file's list of strings, or a string of names
    separated by commas (the environment's form: `COMPACTCTL_DROP_TOOL=browser_snapshot,web_extract`)."""
    if isinstance(value, str):
        return [n.strip() for n in value.split(",") if n.strip()]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise ValueError("a list of tool names")


def resolve(
    options: Iterable[tuple[str, Any, Any]],
    cwd: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    warn: Callable[[str], None] | None = None,
    only: set[str] | None = None,
) -> dict[str, Setting]:
    """Effective defaults of `options` ((name, type, built-in default) triples), with their sources. With `only`, the
    settings a command takes: a file's key or a variable for another setting is left alone, unread (a bad
    `threshold` in the project's file, `COMPACTCTL_WORKERS=abc`, does not stop `convert`, which takes neither)."""
    env = os.environ if environ is None else environ
    kinds = {name: (kind, default) for name, kind, default in options}
    out = {
        name: Setting(name, default.value if isinstance(default, Enum) else default, "default") for name, (kind, default) in kinds.items()
    }

    def apply(table: dict, where: str, source: str) -> None:
        for raw_key, value in table.items():
            key = raw_key.replace("-", "_")
            if key not in kinds:
                if warn:
                    warn(f"{where}: {_ignored(raw_key, kinds)}")
                continue
            if only is not None and key not in only:
                continue
            value = _coerce(raw_key, kinds[key][0], value, where)
            if key == "base_url" and isinstance(value, str) and "@" in value.split("//", 1)[-1].split("/", 1)[0] and warn:
                warn(f"{where}: base_url carries credentials; prefer $OPENAI_API_KEY")
            out[key] = Setting(key, value, source, raw_key)

    user = user_file(env)
    if _is_file(user):
        apply(_toml(user), user, f"user:{user}")
    project = project_table(cwd)
    if project is not None:
        table, where = project
        apply(table, where, f"project:{where}")
    for name, (kind, _) in kinds.items():
        if only is not None and name not in only:
            continue
        for var in (f"COMPACTCTL_{name.upper()}", *ENV_ALIASES.get(name, ())):
            if env.get(var):
                out[name] = Setting(name, _coerce(var, kind, env[var], f"${var}", text=True), f"env:{var}")
                break
    return out


def _ignored(raw_key: str, known: Iterable[str]) -> str:
    """Why a key that is not a setting is ignored. A setting's name is never taken for a secret
    (tail-tokens and protect-tokens hold counts of tokens)."""
    if any(w in raw_key.lower() for w in SECRET_WORDS):
        return f"ignoring {raw_key!r}: never keep an API key or other secret in a config file; use $OPENAI_API_KEY"
    return f"unknown setting {raw_key!r} (ignored){_did_you_mean(raw_key, known)}"


def _did_you_mean(raw_key: str, known: Iterable[str]) -> str:
    """'; did you mean 'context-window'?' for a key close to a known one (spelled the way the key is)."""
    spelled = {(k.replace("_", "-") if "_" not in raw_key else k): k for k in known}
    close = difflib.get_close_matches(raw_key, spelled, n=1, cutoff=0.75)
    return f"; did you mean {close[0]!r}?" if close else ""


def _nonneg(v: Any) -> bool:
    return v >= 0


def _positive_int(v: Any) -> bool:
    return v >= 1


# The allowed values of each setting with a range (None, "from the model" or "from the target", is always
# allowed): (test, what the message says it must be). NaN fails every test.
LIMITS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "context_window": (_positive_int, "at least 1 (leave it out for the model's own window)"),
    "threshold": (lambda v: 0 < v <= 1, "in (0, 1]"),
    "tail_tokens": (_nonneg, "0 or more"),
    "protect_first": (_nonneg, "0 or more"),
    "summary_ratio": (lambda v: 0 <= v < math.inf, "a finite number, 0 or more"),
    "summary_min": (_nonneg, "0 or more"),
    "summary_max": (_positive_int, "at least 1"),
    "last_ask": (lambda v: v in ("auto", "tail", "summary"), "auto, tail or summary"),
    "protect_tokens": (_nonneg, "0 or more"),
    "min_dedup_chars": (_nonneg, "0 or more"),
    "arg_limit": (_nonneg, "0 or more"),
    "arg_keep": (_nonneg, "0 or more"),
    "digest_names": (_nonneg, "0 or more"),
    "jobs": (_positive_int, "at least 1"),
    "workers": (_positive_int, "at least 1"),
    "min_saving": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    "timeout": (lambda v: 0 < v < math.inf, "a positive number of seconds"),
    "retries": (_nonneg, "0 or more"),
    "llm_context": (_positive_int, "at least 1"),
}


def describe(s: Setting, flag: str | None = None) -> str:
    """A setting and where its value came from, for a message: `--jobs 0`, `$COMPACTCTL_JOBS=0 (--jobs)`,
    or `PATH: jobs = 0` (the key as the file spells it)."""
    kind, _, where = s.source.partition(":")
    option = flag or f"--{s.name.replace('_', '-')}"
    if kind == "env":
        return f"${where}={s.value} ({option})"
    if kind in ("project", "user"):
        return f"{where}: {s.key or s.name.replace('_', '-')} = {s.value!r}"
    return f"{option} {s.value}" + ("" if kind == "flag" else " (the built-in default)")


def out_of_range(name: str, value: Any) -> str | None:
    """What `value` must be when it is out of the range of setting `name` (LIMITS), else None (also for
    None and a setting without a range). The command line (`check`) and the record API's Options use it."""
    limit = LIMITS.get(name)
    if limit is None or value is None:
        return None
    ok, expected = limit
    return None if ok(value) else expected


def type_ok(value: Any, hint: Any) -> bool:
    """`value` is of the option's type (an int is a float; a bool is no number; a list of str is a tuple of str)."""
    if hint is type(None):
        return value is None
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return any(type_ok(value, h) for h in typing.get_args(hint))
    if typing.get_origin(hint) is tuple:
        return isinstance(value, (tuple, list)) and all(isinstance(x, str) for x in value)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


_FIELD_HINTS: dict[type, dict[str, tuple[Any, str]]] = {}  # per class: each field's type, and as a message says it


def _field_hints(cls: type) -> dict[str, tuple[Any, str]]:
    hints = _FIELD_HINTS.get(cls)
    if hints is None:
        hints = _FIELD_HINTS[cls] = {name: (hint, _said(hint)) for name, hint in typing.get_type_hints(cls).items()}
    return hints


def _said(hint: Any) -> str:
    """`int | None`, `tuple[str, ...]`, `Budget`: a type as a message says it."""
    text = str(hint).replace("typing.", "").replace("<class '", "").replace("'>", "")
    return re.sub(r"\b[\w.]+\.(\w+)", r"\1", text)  # compactctl.phases.plan.Budget: Budget


def check_fields(obj: Any, ranges: Mapping[str, tuple[Callable[[Any], bool], str]] | None = None) -> None:
    """Raise UsageError for the first field of the dataclass `obj` of the wrong type or out of its range (LIMITS
    by the field's name, `ranges` before it), naming the class: the record API's Options, the library's Budget
    and CompactOptions, checked when built."""
    cls = type(obj).__name__
    hints = _field_hints(type(obj))
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        hint, text = hints[f.name]
        if not type_ok(value, hint):
            raise UsageError(f"{cls}: {f.name}={value!r} is not valid: expected {text}")
        limit = (ranges or {}).get(f.name, LIMITS.get(f.name))
        if limit is not None and value is not None and not limit[0](value):
            raise UsageError(f"{cls}: {f.name}={value!r} is not valid: must be {limit[1]}")


def check(settings: Iterable[Setting], flags: Mapping[str, str] | None = None) -> None:
    """Refuse (UsageError, exit 2) the first setting whose value is out of its range (LIMITS), naming
    where the value came from. `flags` maps a setting's name to its option (--jobs for jobs)."""
    for s in settings:
        expected = out_of_range(s.name, s.value)
        if expected is not None:
            raise UsageError(f"{describe(s, (flags or {}).get(s.name))}: must be {expected}")
