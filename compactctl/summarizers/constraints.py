"""The rules a person (or a harness) set for the work: the sentences of a text that constrain it.

"Never push to main.", "You MUST run this checklist:" with the list it introduces, in the languages agents' users
write in; not a compiler's diagnostic, a command reference's description or a harness's setting. Used by the facts
(Constraints & Preferences) and by the probe eval.
"""

from __future__ import annotations

import re

from .. import outputs
from ..redact import cut

# Sentences that constrain, in the languages agents' users write in.
CONSTRAINT = re.compile(
    r"\b(?:must(?:n't| not)?|don'?t|do not|never|always|only|prefer(?:ably)?|should(?:n'?t| not)?|make sure|ensure|"
    r"avoid|no more than|at most|at least|required?|keep (?:it|the|them|our|my|this|these|those|using)|without)\b"
    r"|\b(?:doit|doivent|jamais|toujours|seulement|uniquement|préfère|il faut|ne \w+ pas)\b"
    r"|\b(?:muss|müssen|niemals|nie|immer|nur|kein(?:e|en)?|nicht)\b"
    r"|\b(?:debe|deben|nunca|siempre|solo|sólo|solamente|prefiero|hay que|no (?:uses?|hagas|cambies))\b"
    r"|\b(?:deve|devem|sempre|apenas|somente|não)\b"
    r"|\b(?:должен|должны|нельзя|никогда|всегда|только|не )"
    r"|必须|不要|不能|别|永远|总是|始终|只能|只用|仅|务必|禁止|请勿|必ず|しないで|ないでください|絶対|常に|のみ|반드시|하지 마|절대|항상",
    re.I,
)
SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in SENTENCE.split(text) if s and s.strip()]


def constraint_sentences(text: str) -> list[str]:
    """The sentences of `text` that constrain the work, a rule that introduces a list with its items."""
    out = []
    lines = _logical_lines(outputs.ANSI.sub("", text) if "\x1b" in text else text)  # hook output in a terminal's colours
    taken, upto = "", 0  # the last rule that took the list after it, and the end of that list
    for k, (line, code) in enumerate(lines):
        if code:
            continue
        said = sentences(_unmarked(line))
        for j, s in enumerate(said):
            if 8 <= len(s) <= 400 and _binds(s) and not (k < upto and s in taken):  # a rule of an item it left out stays
                if j == len(said) - 1 and s.endswith(":"):
                    s, upto = _with_items(s, lines, k + 1)
                    taken = s
                out.append(s)
    return out


def _unmarked(line: str) -> str:
    """A line without its Markdown marks: a quote's, a list item's, a heading's ("### Phase 5: ... (only after
    approval)"), a table row's pipes (its cells joined with "; ")."""
    line = _HEADING.sub("", _BULLET.sub("", _QUOTE.sub("", line, count=1), count=1), count=1)
    row = line.strip()
    if len(row) > 2 and row[0] == "|" and row[-1] == "|":
        line = "; ".join(c.strip() for c in row[1:-1].split("|") if c.strip())
    return line


def _binds(s: str) -> bool:
    if not CONSTRAINT.search(s) or not CONSTRAINT.search(_NOT_A_RULE.sub(" ", s)):
        return False
    if s.endswith(("?", "？")) and not _COMMANDS.search(_NOT_A_RULE.sub(" ", s)):
        return False  # a question asks, it sets no rule ("Can anything be done without it?"); "Never commit .env, okay?" does
    if _ASK.match(s) and not _STRONG.search(s):  # an ask ("Can you run the tests to ensure all is green."), not a rule
        return False
    if _DIAGNOSTIC.match(s) or _SETTING.fullmatch(s):  # a compiler's line in hook output, a harness's setting
        return False
    ref = _REFERENCE.match(s)  # "`bd sync --status` - Check sync status without syncing": what a command does
    return ref is None or _STRONG.search(s, ref.end()) is not None


# What the person does not know, remember or have is not a rule ("I don't remember the reservation ID, sorry.", "I
# don't have my reservation ID with me."): a sentence is a constraint for its other words then.
# Nor what they must have done ("I must have left it somewhere else."), nor what they promise to do ("I'll make sure to
# find my user ID").
_NOT_A_RULE = re.compile(
    r"\b(?:I|we) (?:don['’]?t|do not)(?: \w+ly)? (?:remember|recall|know|think|understand|see|have)\b"
    r"|\bmust have (?:been|\w+(?:ed|en|t))\b|\b(?:I|we)(?:['’]ll| will) make sure\b",
    re.I,
)
# A sentence that asks the agent to do something ("Can you run tests, lint and check-types to ensure all is green."):
# a rule only with a word that commands (_STRONG).
_ASK = re.compile(r"(?:please,? )?(?:can|could|would|will) you\b", re.I)
# An entry of a command reference (a code span, then a dash or a colon and what it does) binds only with a word
# that commands ("`bd edit` - never: it opens $EDITOR"), not with "without" or "only" describing the command.
_REFERENCE = re.compile(r"`[^`]+`\s*(?:[-–—:]|$)")
# Lowercase as compilers write it (rustc, gcc, clang, elixir: "warning[E0502]: ..."), or a linter's "[W] " mark.
_DIAGNOSTIC = re.compile(r"(?:warning|error)(?:\[\w+\])?:\s|\[[A-Z]\]\s")
# One element of a harness's settings (Codex: "<approval_policy>never</approval_policy>"): a notice, not a sentence.
_SETTING = re.compile(r"<([\w-]+)>[^<>]*</\1>")
_STRONG = re.compile(r"\b(?:must|never|do not|don'?t|always|should)\b", re.I)
_COMMANDS = re.compile(r"\b(?:must|never|do not|don'?t|always)\b", re.I)  # in a question ("How should we proceed?" asks)


_QUOTE = re.compile(r"^\s*(?:>\s?)+")  # a Markdown quote's marker ("> **SCOPE**: ...")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d{1,3}[.)])\s+")
_HEADING = re.compile(r"^\s*#{1,6}\s+")
_CHECKBOX = re.compile(r"^\[[ xX]?\]\s*")
_ENDS = tuple(".!?:;。！？")
_CONTINUES = "@`(\"'"  # besides a lowercase letter, what the next line of a wrapped sentence may begin with
_ITEMS, _ITEM_CHARS, _RULE_CHARS = 8, 80, 400


def _with_items(rule: str, lines: list[tuple[str, bool]], k: int) -> tuple[str, int]:
    """A rule that ends with a colon ("you MUST run this checklist:") and the list after it that it introduces (a
    checklist in a code block too; not code), its items joined with "; " (each cut to _ITEM_CHARS; at most
    _ITEMS and _RULE_CHARS in all, "…" for the others). Returns the rule and the index of the first line after what it took."""
    items: list[str] = []
    in_code = None  # whether the list is in a code block: it ends with the block
    while k < len(lines):
        line, code = lines[k][0].strip(), lines[k][1]
        item = " ".join(_BULLET.sub("", _CHECKBOX.sub("", line), count=1).split())
        if not item:
            if items:
                break
        elif in_code in (None, code) and (_CHECKBOX.match(line) or _BULLET.match(line)):  # a checklist's too
            in_code = code
            items.append(item if len(item) <= _ITEM_CHARS else cut(item, _ITEM_CHARS) + "…")
        else:
            break
        k += 1
    shown = rule
    for n, item in enumerate(items):
        if n == _ITEMS or len(shown) + len(item) + 2 > _RULE_CHARS:
            shown += "; …" if n else " …"
            break
        shown += ("; " if n else " ") + item
    return shown, k


def _logical_lines(text: str) -> list[tuple[str, bool]]:
    """The lines of `text`, each with whether it is inside a code fence (the fences left out), a sentence wrapped
    over several lines (a message typed or pasted with hard line breaks: "We should\n  start with
    packages/services.") joined into one: a line that ends without a sentence's end and a next that goes on (a
    lowercase letter first, not a list item or a heading)."""
    out: list[tuple[str, bool]] = []
    in_code = False
    joinable = False  # the last line of `out` may go on in the next
    for line in text.split("\n"):
        s = line.strip()
        if s.startswith("```"):
            in_code, joinable = not in_code, False
            continue
        if in_code:
            out.append((line, True))
            continue
        if joinable and s and (s[0].islower() or s[0] in _CONTINUES) and not _BULLET.match(line):
            out[-1] = (out[-1][0] + " " + s, False)
        else:
            out.append((line, False))
        joinable = bool(s) and not s.endswith(_ENDS) and not s.startswith(("#", "|", ">"))
    return out
