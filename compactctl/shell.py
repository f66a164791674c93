"""The files a shell command printed: `cat F`, `sed -n '1,80p' F`, `head -n 40 F`, `nl -ba F | sed -n ...`.

Agents that read through a shell (Codex reads every file this way; Claude Code's Bash, OpenHands' terminal
too) leave no `file_path` argument behind, so a summary's Relevant Files missed everything they read. The
command is split as a POSIX shell would (quotes, `&&`, `;`, `|`), a `cd` is followed, redirections are left
out, and only the programs that print a file they are given count: `cat`, `nl`, `head`, `tail`, `bat`,
`less`, `more`, and `sed` without `-i` (its script is not a file). Searches (`rg`, `grep`, `ls`) read many
files and print a few lines of some: they name no file read. A path with a glob, a variable or a command
substitution in it is not a file name; a relative one is joined to the call's working directory when it has
one (Codex's `workdir`). Nothing is run, nothing is looked up on disk.
"""

from __future__ import annotations

import posixpath
import re
import shlex

READERS = frozenset({"cat", "nl", "head", "tail", "bat", "batcat", "less", "more", "sed"})
_READER = re.compile(r"\b(?:" + "|".join(sorted(READERS)) + r")\b")  # no reader named: nothing to split
# Options of the readers that take a value (the next word), which is not a file.
VALUED = {
    "head": {"-n", "-c", "--lines", "--bytes"},
    "tail": {"-n", "-c", "--lines", "--bytes"},
    "nl": {"-b", "-w", "-s", "-v", "-i", "-n", "-h", "-f", "-d", "-l"},
    "sed": {"-e", "-f", "-l"},
    "bat": {"-r", "--line-range", "-l", "--language", "-H", "--highlight-line", "--style", "--theme"},
}
VALUED["batcat"] = VALUED["bat"]
_OPERATORS = frozenset({"&&", "||", ";", "|", "&", "|&", ";;", "(", ")"})
_NOT_A_NAME = frozenset("*?[]$`{}~")
MAX_COMMAND = 4000  # longer commands are scripts (a heredoc, a program): not looked into


def files_read(command: str, workdir: str | None = None) -> list[str]:
    """The paths `command` printed the content of, in order, each once."""
    if not command or len(command) > MAX_COMMAND or "<<" in command or not _READER.search(command):
        return []
    try:
        lex = shlex.shlex(command, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        words = list(lex)
    except ValueError:  # an unclosed quote: not a command a shell ran as written
        return []
    if any(w == "(" and k and words[k - 1] not in _OPERATORS for k, w in enumerate(words)):
        return []  # a parenthesis inside a command (an unquoted `app/(protected)/x`): bash's syntax error, nothing read
    here = workdir if workdir and workdir.startswith("/") else None
    out: list[str] = []
    for simple in _simple_commands(words):
        if simple[0] == "cd" and len(simple) == 2 and _is_name(simple[1]):
            here = _join(here, simple[1])
            continue
        for path in _files_of(simple):
            full = _join(here, path)
            if full not in out:
                out.append(full)
    return out


def _simple_commands(words: list[str]) -> list[list[str]]:
    """The words of each simple command (split at operators), redirections and their targets left out."""
    out: list[list[str]] = []
    cur: list[str] = []
    skip = False
    for k, w in enumerate(words):
        if skip:
            skip = False
            continue
        if w in _OPERATORS:
            if cur:
                out.append(cur)
            cur = []
        elif set(w) <= set("<>&"):  # a redirection: its target is the next word
            skip = True
        elif w.isdigit() and k + 1 < len(words) and words[k + 1][:1] in "<>":  # the 2 of 2>/dev/null
            continue
        else:
            cur.append(w)
    if cur:
        out.append(cur)
    return [c for c in out if c]


def _files_of(words: list[str]) -> list[str]:
    prog = posixpath.basename(words[0])
    if prog not in READERS:
        return []
    valued = VALUED.get(prog, set())
    args: list[str] = []
    script_given = False
    k = 1
    while k < len(words):
        w = words[k]
        if prog == "sed" and (w.startswith("--in-place") or w[:1] == "-" and w[1:2] != "-" and "i" in w[1:]):
            return []  # sed -i (or -ni, -i.bak) edits: not a read
        if w == "--":
            args += words[k + 1 :]
            break
        if w.startswith("-") and len(w) > 1:
            if w in valued:  # its value is the next word (head -n 40); head -40 is one word
                script_given |= prog == "sed" and w in ("-e", "-f")
                k += 1
            k += 1
            continue
        args.append(w)
        k += 1
    if prog == "sed" and not script_given:
        args = args[1:]  # the first word is its script
    return [a for a in args if _is_name(a)]


def _is_name(word: str) -> bool:
    return bool(word) and not (_NOT_A_NAME & set(word)) and word[0] not in "-+" and not word.startswith("/dev/")


def joined(workdir: str | None, path: str) -> str:
    """`path` joined to a command's working directory when it is relative and the directory absolute."""
    return _join(workdir if workdir and workdir.startswith("/") else None, path)


def _join(base: str | None, path: str) -> str:
    if path.startswith("/") or base is None:
        return posixpath.normpath(path) if path.startswith("/") else path
    return posixpath.normpath(posixpath.join(base, path))
