"""One-way layers: a module imports only from its own layer or the layers below it.

    cli -> eval tools -> api (I/O orchestration) -> pipeline -> phases -> summarizers
        -> formats/tools/tokens/names/pairs/refs/archive -> model -> leaves

and, across that order, formats are the edge: below the api layer only the formats themselves and
the archive reader import `compactctl.formats` (the core works on the one transcript model).

Every module under compactctl/ is parsed with `ast`; imports at module level, inside functions and
under `if TYPE_CHECKING:` all count, and so do `importlib.import_module` calls. Known violations are
listed in ALLOWED, one line each with the reason; the test fails on a new violation, and also on an
ALLOWED entry that no longer happens (remove it). See ARCHITECTURE.md.
"""

from __future__ import annotations

import ast
import fnmatch
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "compactctl"

# Lowest first. A name ending in ".*" covers a package's submodules; the package itself is listed apart.
LAYERS: list[tuple[str, list[str]]] = [
    # Import nothing from compactctl but each other (errors, mostly).
    (
        "leaf",
        [
            "compactctl._version",
            "compactctl.errors",
            "compactctl.xdg",  # the per-user settings and cache folders (XDG base directories)
            "compactctl.markers",
            "compactctl.harness",
            "compactctl.jsonl",
            "compactctl.cache",
            "compactctl.config",
            "compactctl.ranks",
            "compactctl.needed",
            "compactctl.lexical",  # the continuation eval's second instrument: words, no fact kinds (reads text as needed does)
            "compactctl.journal",  # the resume journal (issue 10)
            "compactctl.outline",  # definitions and line ranges of a numbered file read (prune digests)
            "compactctl.redact",  # secrets redacted before an LLM sees a text and before any cut (tools cut too)
            "compactctl.lean",  # dataclass, generating only __init__ at import (start-up, issue 11)
            "compactctl.shell",  # the files a shell command printed (Relevant Files of agents that read through a shell)
            "compactctl.lane",  # one thread at a time prepares a transcript (--jobs): the runner enters it, the LLM summarizer leaves it
        ],
    ),
    ("model", ["compactctl.model"]),
    (
        "base",
        [
            "compactctl.formats",
            "compactctl.formats.*",
            "compactctl.tools",
            "compactctl.outputs",  # what a call's output says (outcome, error lines, test tally), beside tools
            "compactctl.describe",  # a call in one line (the describers), over tools
            "compactctl.tokens",
            "compactctl.names",
            "compactctl.pairs",
            "compactctl.refs",
            "compactctl.chat",  # a message as an OpenAI chat dict (the archive's and the openai format's shape)
            "compactctl.archive",  # writing an archive (JSONL or SQLite/FTS5), reading its records, a JSONL's derived index
            "compactctl.search",  # reading an archive by reference (recall) and by words (search), over archive
            "compactctl.carry",  # what an archive written over still has to give, over archive and search
        ],
    ),
    ("summarizers", ["compactctl.summarizers", "compactctl.summarizers.*"]),
    ("phases", ["compactctl.phases", "compactctl.phases.*"]),
    ("pipeline", ["compactctl.pipeline"]),
    # The library's face and I/O orchestration. `compactctl` is the package (lazy re-exports of api);
    # record (the record API) and ray (Ray Data workers) come with issue 10.
    # passthrough: records a phase writes back as they came, told from the parsed JSON (the runner's fast path).
    # runner is a package: run() and its re-exports; base (what its parts share), inputs, engines, sinks.
    (
        "api",
        [
            "compactctl",
            "compactctl.api",
            "compactctl.originals",  # restore: the originals from a compacted file and its archive
            "compactctl.runner",
            "compactctl.runner.*",
            "compactctl.record",
            "compactctl.ray",
            "compactctl.passthrough",
        ],
    ),
    # The evals judge compaction from outside: they call the pipeline and read the archive.
    ("eval", ["compactctl.evaluate", "compactctl.continuation", "compactctl.baselines", "compactctl.twice", "compactctl.recovery"]),
    ("cli", ["compactctl.cli", "compactctl.cli.*", "compactctl.entry", "compactctl.__main__", "compactctl.mcp_server"]),
]
RANK = {name: i for i, (name, _) in enumerate(LAYERS)}

# Modules that import nothing from compactctl at all.
INDEPENDENT = {"compactctl.needed": "the continuation eval's extractor shares no code with the compaction it judges"}

# Below the api layer, who may import compactctl.formats (the edge): the formats, and the archive reader.
FORMAT_USERS = {"compactctl.formats", "compactctl.formats.*", "compactctl.archive"}

# (importer, imported): why it is still there. Shrink this list; never grow it without a reason.
ALLOWED: dict[tuple[str, str], str] = {
    (
        "compactctl.pipeline",
        "compactctl.formats",
    ): "compact() asks the input's Format for `dropped_records` (line logs) to report lines dropped inside the compacted region",
}


def layer_of(module: str) -> str | None:
    for name, patterns in LAYERS:
        if module in patterns:
            return name
    best: tuple[int, str] | None = None
    for name, patterns in LAYERS:
        for p in patterns:
            if p.endswith(".*") and fnmatch.fnmatchcase(module, p) and (best is None or len(p) > best[0]):
                best = (len(p), name)
    return best[1] if best else None


def modules(root: Path) -> dict[str, Path]:
    """Dotted name -> file, for every .py under root (root is the package directory)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _resolve(base: str, level: int, name: str | None, is_package: bool) -> str:
    """The absolute module a relative import names, as Python resolves it."""
    if not level:
        return name or ""
    pkg = base if is_package else base.rpartition(".")[0]
    if level > 1:
        pkg = pkg.rsplit(".", level - 1)[0]
    return f"{pkg}.{name}" if name else pkg


def imports_of(module: str, path: Path, known: set[str]) -> tuple[set[str], list[str]]:
    """The compactctl modules `module` imports (module level, in functions, under TYPE_CHECKING, and
    through importlib.import_module), and the dynamic imports it could not resolve."""
    top = module.split(".")[0]
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    unresolved: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node.level, node.module, is_package)
            for a in node.names:
                # `from pkg import sub` imports the submodule pkg.sub when there is one.
                found.add(f"{target}.{a.name}" if f"{target}.{a.name}" in known else target)
        elif isinstance(node, ast.Call):
            f = node.func
            fname = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if fname not in ("import_module", "__import__"):
                continue
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                name = arg.value
                level = len(name) - len(name.lstrip("."))
                found.add(_resolve(module, level, name[level:] or None, True) if level else name)
            elif (
                isinstance(arg, ast.JoinedStr)
                and arg.values
                and isinstance(arg.values[0], ast.FormattedValue)
                and isinstance(arg.values[0].value, ast.Name)
                and arg.values[0].value.id in ("__name__", "__package__")
            ):
                pass  # f"{__name__}.{x}", f"{__package__}.{x}": a submodule of its own or of its package, its own layer
            else:
                unresolved.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return {m for m in found if m == top or m.startswith(top + ".")} - {module}, unresolved


def violations(root: Path) -> tuple[dict[tuple[str, str], str], list[str], list[str]]:
    """(importer, imported) -> the rule it breaks; modules without a layer; unresolved dynamic imports."""
    mods = modules(root)
    known = set(mods)
    out: dict[tuple[str, str], str] = {}
    unmapped = sorted(m for m in mods if layer_of(m) is None)
    unresolved: list[str] = []
    for mod, path in mods.items():
        deps, dyn = imports_of(mod, path, known)
        unresolved += dyn
        mine = layer_of(mod)
        if mod in INDEPENDENT and deps:
            for d in deps:
                out[(mod, d)] = f"{mod} imports nothing from compactctl ({INDEPENDENT[mod]})"
            continue
        if mine is None:
            continue
        for dep in sorted(deps):
            theirs = layer_of(dep)
            if theirs is not None and RANK[theirs] > RANK[mine]:
                out[(mod, dep)] = f"layer {mine} imports layer {theirs}"
            elif (
                (dep == "compactctl.formats" or dep.startswith("compactctl.formats."))
                and RANK[mine] < RANK["api"]
                and not any(fnmatch.fnmatchcase(mod, p) for p in FORMAT_USERS)
            ):
                out[(mod, dep)] = f"the core ({mine}) imports a format: formats are the edge"
    return out, unmapped, unresolved


def _report(pairs, found) -> str:
    return "\n".join(f"  {a} -> {b}: {found[(a, b)]}" for a, b in sorted(pairs))


def test_every_module_has_a_layer():
    _, unmapped, unresolved = violations(PKG)
    assert not unmapped, f"put these modules in a layer in tests/test_layers.py LAYERS (and ARCHITECTURE.md): {unmapped}"
    assert not unresolved, f"dynamic imports the layer test cannot check (use a constant name): {unresolved}"


def test_imports_follow_the_layers():
    found, _, _ = violations(PKG)
    new = set(found) - set(ALLOWED)
    assert not new, (
        "imports against the layer order (cli -> eval -> api -> pipeline -> phases -> summarizers -> "
        "formats/tools/tokens -> model -> leaves), see ARCHITECTURE.md:\n" + _report(new, found)
    )
    gone = set(ALLOWED) - set(found)
    assert not gone, f"no longer happen; remove them from ALLOWED in tests/test_layers.py: {sorted(gone)}"


def test_the_checker_sees_every_kind_of_import(tmp_path):
    # A package laid out like compactctl, with one upward import of each kind the checker reads.
    root = tmp_path / "compactctl"
    (root / "phases").mkdir(parents=True)
    (root / "summarizers").mkdir()
    files = {
        "__init__.py": "",
        "errors.py": "",
        "model.py": "def f():\n    from .phases import prune\n",  # function level, upward
        "tokens.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import pipeline\n",
        "pipeline.py": "import compactctl.cli\n",
        "needed.py": "from .errors import X\n",
        "cli.py": "import importlib\nimportlib.import_module('.api', __name__)\nimportlib.import_module(name)\n",
        "api.py": "from .model import Message\n",
        "phases/__init__.py": "",
        "phases/prune.py": "from ..formats import get_format\n",
        "summarizers/__init__.py": "",
        "summarizers/facts.py": "from ..phases.prune import DUPLICATE\nfrom .. import errors\n",
        "formats/__init__.py": "from importlib import import_module\ndef g(k):\n    return import_module(f'{__name__}.{k}')\n",
        "extra.py": "",
    }
    (root / "formats").mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    found, unmapped, unresolved = violations(root)
    assert set(found) == {
        ("compactctl.model", "compactctl.phases.prune"),
        ("compactctl.tokens", "compactctl.pipeline"),
        ("compactctl.pipeline", "compactctl.cli"),
        ("compactctl.needed", "compactctl.errors"),
        ("compactctl.phases.prune", "compactctl.formats"),
        ("compactctl.summarizers.facts", "compactctl.phases.prune"),
    }, found
    assert unmapped == ["compactctl.extra"]
    assert len(unresolved) == 1 and "import_module(name)" in unresolved[0]


@pytest.mark.parametrize(
    "module, layer",
    [
        ("compactctl.formats.openai", "base"),
        ("compactctl.phases", "phases"),
        ("compactctl.cli.groups", "cli"),
        ("compactctl", "api"),
        ("compactctl.summarizers.llm", "summarizers"),
        ("compactctl.needed", "leaf"),
    ],
)
def test_layer_of(module, layer):
    assert layer_of(module) == layer
