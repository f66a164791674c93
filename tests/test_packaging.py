"""Packaging: the version in one place (compactctl/_version.py) and every way of asking agrees; py.typed ships."""

from __future__ import annotations

import ast
import importlib.metadata
import subprocess
import sys
from pathlib import Path

from packaging.version import Version

import compactctl

from .conftest import ROOT

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_version_is_defined_once():
    assert "version" not in PYPROJECT["project"] and "version" in PYPROJECT["project"]["dynamic"]
    assert PYPROJECT["tool"]["hatch"]["version"] == {"path": "compactctl/_version.py"}
    defined = []
    for path in sorted((ROOT / "compactctl").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets):
                defined.append(path.relative_to(ROOT).as_posix())
    assert defined == ["compactctl/_version.py"]
    Version(compactctl.__version__)  # a valid PEP 440 version


def test_every_way_of_asking_agrees():
    v = compactctl.__version__
    assert importlib.metadata.version("compactctl") == v, "the installed metadata is stale: run make install"
    script = Path(sys.executable).with_name("compactctl")  # the console script (compactctl.entry:main)
    for argv in ([str(script), "--version"], [sys.executable, "-m", "compactctl", "-V"]):
        r = subprocess.run(argv, capture_output=True, timeout=60)
        assert r.returncode == 0 and r.stdout.decode() == f"compactctl {v}\n", argv


def test_py_typed_is_shipped():
    assert (ROOT / "compactctl" / "py.typed").is_file()
    # the wheel ships every file of the package directory (hatchling's `packages`), py.typed with them
    assert PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["compactctl"]


def test_the_editable_install_is_a_path_entry():
    # setuptools' editable install of this flat layout is an import hook that cost every process ~20 ms at
    # start-up (make demo, the bench, a hook's CLI runs); hatchling's is a .pth line: `import site` loads nothing more
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "pass"], capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"}
    )
    assert r.returncode == 0 and "__editable__" not in r.stderr, r.stderr[-2000:]
