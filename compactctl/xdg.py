"""The per-user folders of the XDG base directory spec: settings (`XDG_CONFIG_HOME`) and caches (`XDG_CACHE_HOME`).

A variable that is unset, empty or relative is ignored, as the spec says (a relative one would name another folder in
each directory compactctl runs from), and the home folder's default is used; the path is normalised (`/x//` is `/x`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping


def base(variable: str, default: str, environ: Mapping[str, str] | None = None) -> str:
    """`$variable` when it is an absolute path, else `~/<default>` (".config", ".cache"), normalised."""
    value = (os.environ if environ is None else environ).get(variable, "")
    if not os.path.isabs(value):
        value = os.path.join(os.path.expanduser("~"), default)
    return os.path.normpath(value)
