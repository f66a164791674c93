"""The 13 sections of a compaction summary, the LLM prompt, and parsing a summary back into sections."""

from __future__ import annotations

import re

SECTIONS = (
    "Active Task",
    "Goal",
    "Constraints & Preferences",
    "Completed Actions",
    "Active State",
    "In Progress",
    "Blocked",
    "Key Decisions",
    "Resolved Questions",
    "Pending User Asks",
    "Relevant Files",
    "Remaining Work",
    "Critical Context",
)

GUIDE = {
    "Active Task": "the user's latest request, copied verbatim",
    "Goal": "the overall goal of the session (the first request and how it evolved)",
    "Constraints & Preferences": "every rule the user set (must / don't / never / always / only / prefer), verbatim",
    "Completed Actions": "numbered lines: each tool action with its outcome (exit code, error or success)",
    "Active State": "where things stand now: what works, what is running, the current branch or state",
    "In Progress": "what was being done when the turns were compacted",
    "Blocked": "what failed or is waiting, with the error",
    "Key Decisions": "decisions taken and why",
    "Resolved Questions": "questions asked and their answers",
    "Pending User Asks": "user requests not yet done",
    "Relevant Files": "paths read, written or edited, with what was done to each",
    "Remaining Work": "what is left to do",
    "Critical Context": "error lines verbatim, identifiers (hashes, URLs, ports, versions, ids) and anything needed to continue",
}

SYSTEM_PROMPT = """You compact an AI agent's transcript. Write a structured summary of the turns you are given, so \
the agent can continue the work without them. Use exactly these 13 sections, as markdown headings, in this order:

{sections}

Rules: copy the user's latest request verbatim under Active Task; keep user constraints verbatim; keep file paths, \
commands with their exit codes, error lines and identifiers exactly as written; say plainly what failed; write \
"None" under a section with nothing to say. Be dense: no preamble, no closing remarks. Stay under {budget} tokens.{focus}"""

UPDATE_INSTRUCTIONS = """PREVIOUS SUMMARY and NEW TURNS follow. Update the previous summary with the new turns: \
keep what is still relevant, move finished work to Completed Actions, continue its numbering, and replace \
Active Task with the latest request."""

FOCUS = "\n\nFocus: keep full detail about {topic!r} and give it most of the budget; summarize everything else harder."


def system_prompt(budget: int, focus: str | None, instructions: str | None = None) -> str:
    secs = "\n".join(f"## {s}\n({GUIDE[s]})" for s in SECTIONS)
    extra = f"\n\nAdditional instructions:\n{instructions.strip()}" if instructions and instructions.strip() else ""
    return SYSTEM_PROMPT.format(sections=secs, budget=budget, focus=FOCUS.format(topic=focus) if focus else "") + extra


_NAMES = "|".join(re.escape(s) for s in SECTIONS)
# A heading alone on its line ("## Goal", "**Goal**", "3. Goal:"), or followed by its first line of content
# when it is marked as a heading ("**Goal:** fix it", "## Goal: fix it", "3. Goal: fix it", "Goal: fix it").
_HEADING = re.compile(
    r"^[ \t]{0,3}(?:#{1,6}[ \t]*)?(?:\d+[.)][ \t]*)?(?:\*\*|__)?[ \t]*(" + _NAMES + r")[ \t]*(?:\*\*|__)?[ \t]*"
    r"(?::?[ \t]*(?:\*\*|__)?[ \t]*$|:[ \t]*(?:\*\*|__)?[ \t]*(?=\S)|(?:[-–—][ \t]+)(?=\S))",
    re.I | re.M,
)


def parse_sections(text: str) -> dict[str, str]:
    """Section name -> body, for the headings found (markdown, bold, numbered or bare; any case)."""
    found = list(_HEADING.finditer(text))
    out: dict[str, str] = {}
    canon = {s.lower(): s for s in SECTIONS}
    for k, m in enumerate(found):
        body_end = found[k + 1].start() if k + 1 < len(found) else len(text)
        name = canon[m.group(1).lower()]
        out.setdefault(name, text[m.end() : body_end].strip())
    return out


# Lines that could pass for framing inside a summary: a compaction marker, a role line ("SYSTEM: ...",
# "[assistant]", "Human:"), chat-template or tool-call tags.
_FRAMING = re.compile(
    r"^[ \t]*(?:\[?[ \t]*(?:END OF )?CONTEXT COMPACTION"
    r"|</?\|?[ \t]*(?:im_start|im_end|system|developer|user|assistant|human|tool|tool_call|tool_calls|tool_result|"
    r"tool_response|function_call|function_calls|function_results|invoke|antml:[a-z_]+)\b"
    r"|\[[ \t]*(?:system|developer|user|assistant|human|tool|tool result|function)\b[^\]\n]*\]"
    r"|\**(?:system|developer|user|assistant|human|tool|function)\**[ \t]*(?:message|prompt|note)?[ \t]*:)",
    re.I,
)
QUOTE = "> "  # a quoted line: read as content, never as a heading or as framing


def _defuse_markers(text: str) -> str:
    from ..model import SUMMARY_END, SUMMARY_MARKER

    return text.replace(SUMMARY_MARKER, "(CONTEXT COMPACTION — REFERENCE ONLY, quoted)").replace(
        SUMMARY_END, "(END OF CONTEXT COMPACTION, quoted)"
    )


def escape_line(line: str) -> str:
    """`line` quoted when it looks like one of the 13 section headings or like framing. Other markdown
    headings stay as written: they cannot open a section, and the last ask must stay verbatim."""
    probe = line.rstrip()  # as frame_body and parse_sections read it: "## Goal\r" or "## Goal\xa0" is a heading too
    if _HEADING.match(probe) or _FRAMING.match(probe):
        return QUOTE + line
    return line


def unescape_body(text: str) -> str:
    """`escape_body`'s quotes taken off again (a line quoted only because it read as a heading or as framing)."""
    return "\n".join(ln[len(QUOTE) :] if ln.startswith(QUOTE) and escape_line(ln[len(QUOTE) :]) == ln else ln for ln in text.split("\n"))


def escape_body(text: str) -> str:
    """A section body that cannot close or forge the summary's framing: compaction markers defused
    anywhere, heading-like and framing-like lines quoted."""
    return "\n".join(escape_line(ln) for ln in _defuse_markers(text).split("\n"))


def frame_body(text: str) -> str:
    """A rendered summary ("## Section" headings in SECTIONS order) made safe to frame: each section's
    own heading is kept once, in order; any other line that looks like a heading or like framing,
    whatever summarizer wrote it or whatever it quotes, is quoted, and markers are defused."""
    index = {f"## {s}": k for k, s in enumerate(SECTIONS)}
    nxt = 0
    out = []
    for ln in _defuse_markers(text).split("\n"):
        k = index.get(ln.rstrip())
        if k is not None and k >= nxt:
            out.append(ln.rstrip())
            nxt = k + 1
        else:
            out.append(escape_line(ln))
    return "\n".join(out)


def render(sections: dict[str, str], terse: bool = False) -> str:
    """The 13 sections in order ("None" under an empty one); terse: only those with content."""
    bodies = [(s, escape_body(sections.get(s, "").strip())) for s in SECTIONS]
    return "\n\n".join(f"## {s}\n{body or 'None'}" for s, body in bodies if not terse or body not in ("", "None"))
