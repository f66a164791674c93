"""Texts compaction writes into a transcript that a later stage recognises.

A leaf module (imports nothing from compactctl), so that prune, which writes them, and the fact
extractor, which reads them back out of a pruned transcript, both depend on it rather than on
each other (see tests/test_layers.py).
"""

from __future__ import annotations

DUPLICATE = "[Duplicate tool output — same content as a more recent call]"  # prune: an output repeated later
NAMES_LINE = "  names: "  # how a prune digest lists the names it kept
DOC_NAMES_LINE = "  names (task description): "  # ... of an output that describes work (names.is_task_document)
OUTLINE_LINE = "  outline: "  # ... the definitions of a numbered file read, with their lines (outline.py)
QUOTED_LINE = "  line: "  # ... a line of the output, whole, that shows its most used names (names.quoted_lines)
EXCERPT_LINE = "  excerpt: "  # ... then the output's first lines, verbatim, when the room the target leaves holds them
NAMES_SEP = " "  # between the names of a names, outline or index line (", " costs a token more per name)
