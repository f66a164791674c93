"""The 13 sections of a compaction summary, the LLM prompt, and parsing a summary back into sections."""

from __future__ import annotations

import re

SECTIONS = (
    "Active Task", "Goal", "Constraints & Preferences", "Completed Actions", "Active State", "In Progress",
    "Blocked", "Key Decisions", "Resolved Questions", "Pending User Asks", "Relevant Files", "Remaining Work",
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
        out.setdefault(name, text[m.end():body_end].strip())
    return out


def render(sections: dict[str, str]) -> str:
    return "\n\n".join(f"## {s}\n{sections.get(s, '').strip() or 'None'}" for s in SECTIONS)
