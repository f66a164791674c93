"""A second instrument for continuation scoring, with no notion of what a fact is: the words the
continuation writes again.

`needed` finds paths, identifiers, commands, URLs and values by rules of its own. A compaction can come to
keep those kinds well (the summary's index of names is made for them) and what they miss not at all, and
the facts score would not show it. This measure has no kinds and no rules to match: a word is a run of
four or more ASCII letters and digits that starts with a letter (a path or an identifier is split at its
punctuation, case is folded). Per cut, the needed words are those the continuation writes (user and
assistant text, tool-call arguments: `needed.segments`) that the prefix's removable region holds (from any
source) and that neither a system message nor the list of common English words below holds. A word is kept
when the compacted prefix holds it (`needed.haystack`).

It reads the text as `needed` does, and imports nothing else of compactctl (tests/test_continuation.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from . import needed

WORD = re.compile(r"(?<![A-Za-z0-9])[A-Za-z][A-Za-z0-9]{3,}")

# Common English words of four or more letters: function words, pronouns, auxiliaries, the commonest verbs,
# adverbs and nouns of any text. Fixed; never chosen by what a compaction keeps.
COMMON = frozenset(
    """
about above after again against also although always among another anything around because been before
being below between both cannot come could does doing done down during each either else enough even ever
every first from further give going gone good have having here however into just keep know last least less
like look made make many maybe more most much must need never next none only other over please quite rather
really same should since some something still such sure take than that their them then there these they
thing think this those though through thus together under until upon very want well were what whatever when
where whether which while will with within without would your yours okay yeah thanks thank right left back
instead already actually almost later once used uses using makes work works working
""".split()
)


def words_in(text: str) -> set[str]:
    return {w.lower() for w in WORD.findall(text)}


def needed_words(messages: Sequence[needed.Message], cut: int) -> set[str]:
    """The words of the removable prefix (messages[:cut] minus its leading system messages) that the continuation
    (messages[cut:]) writes, minus those of any system message and the COMMON ones."""
    text_actions = needed.text_action_agent(messages)
    system: set[str] = set()  # (a system or developer message's text is all of source "system")
    past: set[str] = set()
    written: set[str] = set()
    for i in range(len(messages)):
        for seg in needed.segments(messages, i, text_actions):
            if seg.source == "system":
                system |= words_in(seg.text)
            elif i < cut:
                past |= words_in(seg.text)
            elif seg.source == "written":
                written |= words_in(seg.text)
    return (written & past) - system - COMMON


def kept_words(words: set[str], messages: Sequence[needed.Message]) -> int:
    """How many of `words` the (compacted) messages hold."""
    return len(words & words_in(needed.haystack(messages)))
