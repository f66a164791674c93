"""What a tool call is: its kind (by the tool names real agents use: Hermes, Claude Code, Codex, OpenHands,
SWE-agent, Gemini CLI), its arguments, the command it ran and the files it read or wrote (SWE-agent's editor
edits the file its observation's footer says is open). What its output says (how it ended) is outputs.py's;
`describe` says a call in one line from both.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from .harness import fenced_action, text_action
from .model import Message, ToolCall

# Canonical kinds of tool, by name (case-insensitive). Gemini CLI's, from its tools reference: run_shell_command,
# read_file / read_many_files, write_file, replace, glob, search_file_content, list_directory, web_fetch,
# google_web_search, write_todos.
KINDS: dict[str, str] = {}
for _kind, _names in {
    "shell": "terminal bash shell execute_bash exec_command local_shell run_command execute_command run_shell container.exec "
    "run_terminal_cmd run_shell_command",
    "read": "read_file read view_file open_file open cat read_many_files",  # open: SWE-agent's viewer (a path, a line)
    "write": "write_file write create_file create",  # create: SWE-agent's (a filename; the file starts empty)
    "edit": "patch edit multiedit apply_patch edit_file replace str_replace notebookedit insert",  # edit, insert: SWE-agent's
    "editor": "str_replace_editor str_replace_based_edit_tool",
    "search": "search_files grep glob find_file search_dir search_file find list_files ls codebase_search search_file_content "
    "list_directory",
    "fetch": "webfetch web_extract fetch browse web_fetch",
    "websearch": "websearch web_search google_web_search",
    "delegate": "task delegate_task agent",
    "todo": "todowrite update_plan todo_write write_todos",
    "plan": "exitplanmode",  # Claude Code: the plan (markdown) the agent puts to the person, who approves it or not
    "think": "think",
    "ask": "askuserquestion",  # Claude Code: the person answers in the result
    "code": "execute_code python ipython run_code execute_ipython_cell",
}.items():
    for _n in _names.split():
        KINDS[_n] = _kind


def kind_of(name: str) -> str:
    n = name.lower()
    if n in KINDS:
        return KINDS[n]
    if n.startswith("browser"):
        return "fetch"
    return "generic"


# A generic call named for a change it makes (tau-bench's update_reservation_flights, cancel_reservation,
# book_reservation, send_certificate; an MCP server's mcp__github__create_issue; updateRecord): which were made is what a
# later turn needs, as a write's record is, not what a lookup found.
_CHANGES = re.compile(
    r"(?i:update|cancel|book|create|delete|send|transfer|modify|exchange|return|remove|add|set|submit|post|insert|reset|"
    r"revoke|grant|assign|close|merge|publish|deploy|move|rename|upload|refund|pay|charge|schedule|reschedule|approve|reject)"
    r"(?:_|-|[A-Z]|$)"
)


def changes_state(name: str) -> bool:
    """Whether a call of no known kind (kind_of: generic) is named for a change it makes (_CHANGES), an MCP tool by
    its own name (after the server's)."""
    return kind_of(name) == "generic" and _CHANGES.match(name.rsplit("__", 1)[-1]) is not None


def parse_args(call: ToolCall) -> dict[str, Any]:
    try:
        v = orjson.loads(call.arguments) if call.arguments else {}
    except orjson.JSONDecodeError:
        return {"_raw": call.arguments}
    return v if isinstance(v, dict) else {"_value": v}


def argument_text(call: ToolCall) -> str:
    """The string values of a call's arguments, one per line: what the agent wrote, without the JSON keys
    ("file_path", "command") the harness defines. Arguments that are not JSON come back as they are."""
    try:
        v = orjson.loads(call.arguments) if call.arguments else {}
    except orjson.JSONDecodeError:
        return call.arguments
    out: list[str] = []
    stack = [v]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            out.append(x)
        elif isinstance(x, dict):
            stack.extend(reversed(list(x.values())))
        elif isinstance(x, list):
            stack.extend(reversed(x))
    return "\n".join(out)


def first_str(args: dict, *keys: str) -> str | None:
    for k in keys:
        v = args.get(k)
        if isinstance(v, str) and v:
            return v
        if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
            return " ".join(v)
    return None


def text_action_call(m: Message, answered: bool = False) -> ToolCall | None:
    """The call an assistant turn's text action amounts to: SWE-agent's parsed command (harness.text_action, run
    in its shell with its own commands installed) or, when the next turn is its observation (`answered`), the
    command of its last ```bash block (mini-swe-agent); None without one."""
    swe = text_action(m)
    action = swe or (fenced_action(m) if answered else None)
    if action is None:
        return None
    return ToolCall(None, "bash", orjson.dumps({"command": action}).decode(), {SWE_AGENT: True} if swe else {})


def command_of(call: ToolCall, args: dict[str, Any] | None = None) -> str | None:
    """The shell command a call ran, if it ran one; `args`: its arguments, when parsed already (parse_args)."""
    kind = kind_of(call.name)
    args = parse_args(call) if args is None else args
    if kind == "shell" or (kind == "generic" and "command" in args and isinstance(args.get("command"), (str, list))):
        cmd = args.get("command", args.get("cmd", args.get("_raw")))
        if isinstance(cmd, list):
            # Codex: ["bash", "-lc", "real command"]
            if len(cmd) >= 3 and cmd[0].endswith(("bash", "sh", "zsh")) and cmd[1] in ("-lc", "-c"):
                cmd = cmd[2]
            else:
                cmd = " ".join(str(x) for x in cmd)
        return cmd.strip() if isinstance(cmd, str) and cmd.strip() else None
    return None


WORKDIR_KEYS = ("workdir", "cwd", "working_directory", "dir_path", "directory")  # a shell call's working directory
PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$", re.M)


def files_of(
    call: ToolCall, cwd: str | None = None, result: Message | None = None, args: dict[str, Any] | None = None
) -> list[tuple[str, str]]:
    """(action, path) for each file the call read, wrote or edited; a relative path joined to the call's working
    directory, or to the session's (`cwd`) when the call names none (Codex's `apply_patch` takes relative paths).
    An edit that names no file (SWE-agent's `edit` and `insert` change the file its editor has open) edited the
    file its result's footer says is open. `args`: the call's arguments, when parsed already (parse_args)."""
    args = parse_args(call) if args is None else args
    found = _files_of(call, kind_of(call.name), args)
    if not found and is_open_file_edit(call):
        opened = open_file(result)
        found = [("edit", opened)] if opened else []
    base = first_str(args, *WORKDIR_KEYS) or cwd
    if not (found and base):
        return found
    from .shell import joined

    return [(a, joined(base, p)) for a, p in found]


def _files_of(call: ToolCall, kind: str, args: dict) -> list[tuple[str, str]]:
    path = first_str(args, "file_path", "path", "filename", "file", "notebook_path", "target_file", "absolute_path")
    if kind == "editor":
        return [(_editor_action(args), path)] if path else []
    if kind in ("read", "write", "edit"):
        out = [(kind, path)] if path else []
        text = first_str(args, "input", "patch", "_raw") or ""
        if kind == "edit" or "*** Begin Patch" in text:
            for m in PATCH_FILE.finditer(text):
                out.append(("write" if m.group(1) == "Add" else "edit", m.group(2).strip()))
        return out
    if kind == "code":
        return code_files(first_str(args, "code", "source", "_raw") or "")
    if kind == "shell":
        cmd = command_of(call, args) or ""
        if call.extra.get(SWE_AGENT):
            return _swe_agent_files(cmd)
        return [("write" if m.group(1) == "Add" else "edit", m.group(2).strip()) for m in PATCH_FILE.finditer(cmd)] if "*** " in cmd else []
    return []


# A code cell's file calls: a Jupyter agent's file helpers (CodeAct's `open_file('/src/App.css')`,
# `edit_file_by_replace('/src/App.tsx', ...)`) and Python's `open(path, mode)`.
_CODE_FILE = re.compile(
    r"""\b(open_file|read_file|view_file|create_file|write_file|edit_file\w*|append_file|insert_content_at_line|open)"""
    r"""\(\s*(?:\w+\s*=\s*)?(['"])([^'"\n]+)\2(?:\s*,\s*(?:mode\s*=\s*)?['"]([rwaxbt+]+)['"])?"""
)
_CODE_ACTION = {"open_file": "read", "read_file": "read", "view_file": "read", "create_file": "write", "write_file": "write"}


def code_files(code: str) -> list[tuple[str, str]]:
    """(action, path) for each file a code cell reads, writes or edits by name, in order, each once: its file helpers
    (`open_file`, `create_file`, `edit_file_by_replace`, `append_file`...) and `open(path, mode)` (a read, a write with
    "w" or "x", an edit with "a" or "+")."""
    if "(" not in code:
        return []
    out: dict[str, str] = {}
    for m in _CODE_FILE.finditer(code):
        fn, path, mode = m.group(1), m.group(3).strip(), m.group(4) or ""
        if fn == "open":
            action = "edit" if "a" in mode or "+" in mode else "write" if "w" in mode or "x" in mode else "read"
        else:
            action = _CODE_ACTION.get(fn, "edit")
        if path and ("/" in path or "." in path):
            out.setdefault(path, action)
    return [(a, p) for p, a in out.items()]


_EDITOR_COMMAND = re.compile(r"""['"]command['"]:\s*['"](\w+)['"]""")
_EDITOR_WRITES = ("old_str", "new_str", "file_text", "content", "insert_line")


def _editor_action(args: dict) -> str:
    """What a file editor call (str_replace_editor) did: its `command` says (view, create, str_replace, insert...).
    OpenHands' read and write events carry none: the call its `translated_ipython_code` shows says, else a call that
    gives no text to write is a read."""
    sub = args.get("command")
    if not isinstance(sub, str) or not sub:
        m = _EDITOR_COMMAND.search(str(args.get("translated_ipython_code") or ""))
        sub = m.group(1) if m else ("str_replace" if any(k in args for k in _EDITOR_WRITES) else "view")
    return {"view": "read", "create": "write"}.get(sub.lower(), "edit")


# A text action's call (text_action_call) is marked so: SWE-agent's shell has its own commands installed.
SWE_AGENT = "swe_agent_action"
_SWE_AGENT_FILE = re.compile(r"(open|create)[ \t]+(\"[^\"\n]+\"|'[^'\n]+'|[^\s\"']+)")


_OPEN_FILE = re.compile(r"\(Open file: ([^)\n]+)\)")
_EDIT_COMMAND = re.compile(r"(?:edit|insert)(?:[ \t]|$)")


_CURRENT_DIRECTORY = re.compile(r"\(Current directory: ([^)\n]+)\)")


def open_file(result: Message | None) -> str | None:
    """The file SWE-agent's editor has open, as its observation's footer says ("(Open file: /repo/src/x.py)"), relative
    to the footer's current directory when it is under it ("src/x.py", as the agent's `open` names it)."""
    tail = result.text()[-600:] if result is not None else ""
    m = _OPEN_FILE.search(tail) if "(Open file: " in tail else None
    path = m.group(1).strip() if m is not None else ""
    if path in ("", "n/a"):
        return None
    d = _CURRENT_DIRECTORY.search(tail)
    base = d.group(1).strip().rstrip("/") + "/" if d is not None else None
    return path[len(base) :] if base and path.startswith(base) and len(path) > len(base) else path


def is_open_file_edit(call: ToolCall) -> bool:
    """An edit of the file SWE-agent's editor has open: its `edit` or `insert` tool (naming no file), or the same
    commands as a text action (`edit 4:4 ...`, `insert 12 ...`)."""
    if call.extra.get(SWE_AGENT):
        return _EDIT_COMMAND.match(command_of(call) or "") is not None
    return call.name.lower() in ("edit", "insert") and not first_str(parse_args(call), "file_path", "path", "filename", "file")


def _swe_agent_files(cmd: str) -> list[tuple[str, str]]:
    """SWE-agent's viewer and its file creation (`open "src/x.py" 120`, `create reproduce.py`): a read and a write."""
    m = _SWE_AGENT_FILE.match(cmd)
    if m is None:
        return []
    return [("read" if m.group(1) == "open" else "write", m.group(2).strip("\"'"))]


def workdir_of(call: ToolCall) -> str | None:
    """The working directory a call names for itself (Codex's `workdir`), or None."""
    return first_str(parse_args(call), *WORKDIR_KEYS)


def shell_reads(call: ToolCall, cwd: str | None = None, args: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    """("shell-read", path) for each file a shell call printed (`cat F`, `sed -n '1,80p' F`: see shell.files_read),
    a relative path joined to the call's working directory (Codex's `workdir`), else to the session's (`cwd`).
    `args`: the call's arguments, when parsed already (parse_args)."""
    if kind_of(call.name) not in ("shell", "generic"):
        return []
    args = parse_args(call) if args is None else args
    cmd = command_of(call, args)
    if not cmd:
        return []
    from .shell import files_read

    return [("shell-read", p) for p in files_read(cmd, first_str(args, *WORKDIR_KEYS) or cwd)]
