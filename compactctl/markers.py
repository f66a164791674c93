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
# A summary's block of lines quoted whole from the turns it replaced (summarizers/fit.py): this line, then the lines, each
# after QUOTE_INDENT.
QUOTE_HEAD = "- lines quoted from the replaced turns (files read, code written, outputs), in order:"
QUOTE_INDENT = "  "


def quote_block(lines: list[str]) -> tuple[list[str], list[str]]:
    """A summary section's lines split into (the others, the lines its quoted block quotes, without their indent)."""
    rest: list[str] = []
    quoted: list[str] = []
    inside = False
    for line in lines:
        if line == QUOTE_HEAD:
            inside = True
        elif inside and line.startswith(QUOTE_INDENT):
            quoted.append(line[len(QUOTE_INDENT) :])
        else:
            inside = False
            rest.append(line)
    return rest, quoted
