"""The per-user folders of the XDG base directory spec: settings (`XDG_CONFIG_HOME`) and caches (`XDG_CACHE_HOME`).

A variable that is unset, empty or relative is ignored, as the spec says (a relative one would name another folder in
each directory compactctl runs from), and the home folder's default is used. Repeated and trailing slashes are taken
out (`/x//` is `/x`); `.` and `..` are left to the system (`link/..` is the link target's parent, not the folder
that holds the link).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping


def base(variable: str, default: str, environ: Mapping[str, str] | None = None) -> str:
    """`$variable` when it is an absolute path, else `~/<default>` (".config", ".cache"), without repeated slashes."""
    value = (os.environ if environ is None else environ).get(variable, "")
    if not os.path.isabs(value):
        value = os.path.join(os.path.expanduser("~"), default)
    return re.sub(r"/{2,}", "/", value).rstrip("/") or "/"
