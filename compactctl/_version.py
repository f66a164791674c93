"""The version, in one place: pyproject.toml reads it (`[tool.setuptools.dynamic]`), `compactctl.__version__`
and `compactctl --version` print it."""

__version__ = "0.1.0"
