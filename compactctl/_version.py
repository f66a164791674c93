"""The version, in one place: pyproject.toml reads it (`[tool.hatch.version]`), `compactctl.__version__`
and `compactctl --version` print it."""

__version__ = "0.1.0"
