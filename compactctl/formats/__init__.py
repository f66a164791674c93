"""Format readers and writers at the edge, and detection.

One module a format (`formats/<name>.py`), each listed once in the registry (`registry.py`: what a format module
provides, `get_format(name)`, `detect(first_record)`); `reader.py` reads files into transcripts (JSONL or a JSON
document, the format told from the first record that can tell it, bad lines failed on or skipped); `convert.py`
writes a transcript in its own format or another and counts what the target cannot hold. Detection is per file,
from its first record (the first that can tell, when it holds only role and text); `--from` forces a format.
"""

from __future__ import annotations

from .. import model
from .convert import as_read, ids_for, one_system_turn, ported, read_back, write, written_as
from .reader import LOOKAHEAD_BYTES, LOOKAHEAD_RECORDS, RawSink, Reader
from .registry import (
    FORMAT_NAMES,
    REGISTRY,
    Format,
    FormatModule,
    LineLogFormat,
    Record,
    Registered,
    WritableFormat,
    detect,
    foreign_part,
    get_format,
)

model.foreign_part = foreign_part  # the model layer's check of a built transcript asks the format edge (check_built)

__all__ = [
    "FORMAT_NAMES",
    "LOOKAHEAD_BYTES",
    "LOOKAHEAD_RECORDS",
    "REGISTRY",
    "Format",
    "FormatModule",
    "LineLogFormat",
    "RawSink",
    "Reader",
    "Record",
    "Registered",
    "WritableFormat",
    "as_read",
    "detect",
    "get_format",
    "ids_for",
    "one_system_turn",
    "ported",
    "read_back",
    "write",
    "written_as",
]
