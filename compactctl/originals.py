"""restore: the original transcripts from a compacted file and the --archive its run wrote (several archives: a
chain's stages, undone last first). The map record of each transcript says where every kept message went and which
originals the archive holds."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence

from . import formats
from .errors import DataError, UsageError
from .formats.openai import message_from_dict
from .jsonl import Output
from .model import Message, ToolCall, Transcript, call_input, content_print, digest, fingerprint, transcript_print

ARCHIVE = "<archive>"  # the source of an archived original's error in `restore` (restore_file names the archive)


def _kept_messages(messages: list[Message], kept: list[list]) -> Iterator[tuple[int, Message | None]]:
    """(original index, the compacted message that is it) for each [original, output, print] of the map.
    Archives hold model.content_print (ids left out), older ones the same over the arguments' text or
    model.fingerprint; a writer may order lines as its format does, so a message not at its output index is
    looked up by its print."""
    prints = [(content_print(m), fingerprint(m), content_print(m, canonical_arguments=False)) for m in messages]
    by_print: dict[str, list[Message]] = {}
    for m, variants in zip(messages, prints, strict=True):
        for p in dict.fromkeys(variants):
            by_print.setdefault(p, []).append(m)
    taken: set[int] = set()
    for orig, out, said in kept:
        found = messages[out] if out < len(messages) else None
        if found is None or said not in prints[out] or id(found) in taken:
            found = next((m for m in by_print.get(said, ()) if id(m) not in taken), None)
        if found is not None:
            taken.add(id(found))
        yield orig, found


def restore(compacted: Transcript, entries: list[dict]) -> Transcript:
    """The original transcript from a compacted one and its archive entries (same `seq`)."""
    mapping = _map_of(compacted, entries)
    if mapping is None:
        return compacted  # written as it came (an `unchanged` record), or nothing archived
    compacted = _read_as_written(compacted, mapping)
    n = mapping["messages"]
    native_origins = mapping.get("format", compacted.format) == "openai"
    originals: list[Message | None] = [None] * n
    for orig, found in _kept_messages(compacted.messages, mapping["kept"]):
        originals[orig] = found
    read_as = mapping.get("format", compacted.format)
    calls: dict[int, dict] = {}  # an archived result's call (name, arguments), by its place
    for e in entries:
        if e.get("type") != "map":
            originals[e["index"]] = _archived_original(e, native_origins, read_as, compacted.format)
            if isinstance(e.get("call"), dict):
                calls[e["index"]] = e["call"]
    missing = [i for i, m in enumerate(originals) if m is None]
    if missing:
        raise DataError(compacted.source, compacted.line, f"archive does not cover messages {missing[:5]}")
    msgs = [m for m in originals if m is not None]
    anchors = mapping.get("anchors")
    if not isinstance(anchors, list) or len(anchors) != n:  # each original stood alone in its source message
        anchors = [_alone(read_as, i) for i in range(n)]
    for i, m in enumerate(msgs):
        m.index = i
        m.anchor = _tuples(anchors[i])  # messages read from one source message go back as one
    if compacted.format == "sharegpt":
        msgs = _sharegpt_restored(msgs, mapping.get("format", "sharegpt"), calls)
    if read_as != compacted.format:  # written with --to: the originals' call ids as that conversion gives them
        msgs = formats.ids_for(msgs, compacted.format)
    # A dataset record keeps the key that carried its messages (a SWE-agent trajectory's "history"); line
    # layouts' state (their lines) described the compacted file.
    carrier = compacted.native if compacted.format == "openai" and isinstance(compacted.native, str) else None
    return compacted.evolve(messages=msgs, native=carrier)


def _map_of(compacted: Transcript, entries: list[dict]) -> dict | None:
    """The entries' map record; None where nothing was archived. Originals without it cannot be placed: an error."""
    mapping = next((e for e in entries if e.get("type") == "map"), None)
    if mapping is None and any(isinstance(e.get("message"), dict) for e in entries):
        raise DataError(
            compacted.source,
            None,
            "archive entries with originals but no map record: restore needs every record of the transcript's seq "
            "as an --archive file holds them (a record API result's `archived` holds the originals alone)",
        )
    return mapping


_ANCHORED = ("anthropic", "sharegpt")  # formats whose readers anchor each message at the source message it was read from


def _alone(read_as: str, i: int) -> tuple | None:
    """The anchor of original `i` when no two originals were read from one source message (the map holds no
    `anchors`), as the input's reader gave it: none where the format anchors nothing (OpenAI chat: an Anthropic or
    Hermes writer puts a turn's results together), else one of its own. Kept messages held the places they were
    read from in the output, and an archived result among them was written apart from its turn's kept results."""
    return ("msg", i) if read_as in _ANCHORED else None


def _read_as_written(compacted: Transcript, mapping: dict) -> Transcript:
    """The compacted transcript read as the format its run wrote it in (the map's `written_as`): one of role and text
    alone, every message summarized, reads as OpenAI chat (OpenAI chat and Anthropic's messages read it alike), and
    was restored as OpenAI chat when written as Anthropic's."""
    fmt = mapping.get("written_as")
    if not isinstance(fmt, str) or fmt == compacted.format or fmt not in formats.FORMAT_NAMES:
        return compacted
    try:
        [back] = formats.read_back(list(formats.write(compacted)), fmt, compacted.layout, compacted.source)
    except (DataError, ValueError):  # not what that format reads: restored as it reads
        return compacted
    return back.evolve(id=compacted.id, line=compacted.line)


def _archived_original(e: dict, native_origins: bool, read_as: str, written_as: str) -> Message:
    """An archived original as a message of the restored transcript: in the format the output was written in, as
    `convert --to` gives it (a message read as ShareGPT or Anthropic and written as OpenAI chat takes no internal
    keys, `_from`, `_raw_call`, nor an empty part list beside its calls: restore wrote them). One that is no message
    is an error of ARCHIVE, the source restore_file names."""
    try:
        m = message_from_dict(e["message"], ARCHIVE, 0, e["index"], own=True)
    except DataError as err:
        raise DataError(ARCHIVE, None, f"the archived original of message {e['index']}: {err.what}") from err
    if isinstance(e.get("is_error"), bool) and m.role == "tool":  # the source's error flag (not in OpenAI chat's shape)
        m.is_error = e["is_error"]
    if not native_origins:
        m.origin = None  # rebuilt by the format's writer from the canonical message
    if read_as != written_as and read_as in formats.FORMAT_NAMES and written_as in formats.FORMAT_NAMES:
        m = formats.ported(m, written_as, read_as)
        m.index = e["index"]
    return m


def _sharegpt_restored(msgs: list[Message], read_as: str, calls: dict[int, dict]) -> list[Message]:
    """A restored ShareGPT record's messages: converted from another format, its system turns joined as `convert
    --to` joins them, and its archived results tied to the kept calls they answer (the writer puts results in call
    order); read as ShareGPT, the ids of the input's reading (archived originals) and of the output's (messages
    kept) made one, as the reader pairs results with calls."""
    if read_as != "sharegpt":
        _answer_kept_calls(msgs, calls)
        return formats.one_system_turn(msgs)
    from .formats.sharegpt import paired_in_order

    paired_in_order(msgs)
    return msgs


def _answer_kept_calls(msgs: list[Message], calls: dict[int, dict]) -> None:
    """Each archived result (the input's call id) after a kept call (read back from ShareGPT: an id numbered by
    position) given the id of the call not yet answered in its turn that its archive record names (its name, and
    its arguments where the record holds them whole), and each kept result after an archived call the id of the
    call at its position: ShareGPT pairs results with calls by position only, and its writer puts them in call
    order by id (parallel results are logged as they finish)."""
    pending: list[ToolCall] = []
    turn: list[ToolCall] = []
    for i, m in enumerate(msgs):
        if m.role == "assistant":
            pending, turn = list(m.tool_calls), list(m.tool_calls)
        elif m.role == "tool" and pending:
            answered = next((c for c in pending if c.id == m.tool_call_id), None)
            if answered is None:
                answered = _by_record(pending, calls[i]) if i in calls else _by_position(pending, turn, m)
                if answered is not None:
                    m.tool_call_id = answered.id
            if answered is not None:
                pending.remove(answered)


_READ_BACK_ID = re.compile(r"sg_\d+_(\d+)")  # the id the ShareGPT reader gives the k-th call of a turn (formats/sharegpt.py)


def _by_record(pending: list[ToolCall], recorded: dict) -> ToolCall | None:
    return next((c for c in pending if _is_call(c, recorded)), None)


def _by_position(pending: list[ToolCall], turn: list[ToolCall], m: Message) -> ToolCall | None:
    """A kept result (read back from ShareGPT: `sg_<turn>_<k>`) after an archived call (the input's ids): the k-th
    call of the turn, which ShareGPT wrote it after, when it is still unanswered and of the result's name."""
    mo = _READ_BACK_ID.fullmatch(m.tool_call_id or "")
    if mo is None or int(mo[1]) >= len(turn):
        return None
    c = turn[int(mo[1])]
    return c if any(c is p for p in pending) and (not m.name or m.name == c.name) else None


def _is_call(c: ToolCall, recorded: dict) -> bool:
    """`c` is the call an archive record names (`phases.Archived.call`: its arguments' first CALL_CHARS)."""
    from .phases import CALL_CHARS

    args = recorded.get("arguments")
    if c.name != recorded.get("name") or not isinstance(args, str):
        return False
    if len(args) < CALL_CHARS:
        return call_input(c.arguments) == call_input(args)
    # cut: its start, white space and escapes aside (a ShareGPT call's arguments read back as orjson writes them)
    return "".join(_unescaped(c.arguments).split()).startswith("".join(_unescaped(args).split()))


# a JSON string escape, or one a cut ended inside (scanned left to right: `\\u` is an escaped backslash, then "u")
_ESCAPE = re.compile(r'\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt])|u[0-9a-fA-F]{0,3}\Z|\Z)')
_ESCAPED = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _unescaped(text: str) -> str:
    """JSON text with its strings' escapes read: `\\u00e9` as the character, a surrogate pair's two escapes as one,
    so that arguments written with `\\u` escapes (Python's json.dumps) and without (orjson) compare alike; an escape
    the cut ended inside, or the first half of a pair it ended between, left out."""
    if "\\" not in text:
        return text
    out = _ESCAPE.sub(lambda mo: chr(int(mo[1], 16)) if mo[1] else _ESCAPED.get(mo[2] or "", ""), text)
    out = out.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")  # pairs joined
    return out[:-1] if out and "\ud800" <= out[-1] <= "\udbff" else out


def _tuples(x):
    """A JSON array back as the tuple it was written from (nested too)."""
    return tuple(_tuples(v) for v in x) if isinstance(x, list) else x


def lines_record(t: Transcript, written: list[bytes]) -> dict | None:
    """For a line-log session (Claude Code, Codex: every source line kept, most not messages), the
    archive record that gives back the file record for record: each source line as the index of the
    identical line written (when it was written unchanged) or its text."""
    from .formats.linelog import LineLog

    log = t.native
    if not isinstance(log, LineLog):
        return None
    at: dict[bytes, int] = {}
    for j, line in enumerate(written):
        at.setdefault(line, j)
    return {
        "transcript": t.id,
        "type": "lines",
        "format": t.format,
        "lines": [at[raw] if raw in at else raw.decode("utf-8") for raw, _ in log.lines],
    }


def _read_archive(archive_path: str) -> list[dict]:
    from .archive import records

    entries: list[dict] = []
    for lineno, e in enumerate(records(archive_path), 1):  # JSON lines or an SQLite archive
        if not isinstance(e, dict) or ("seq" not in e and e.get("type") != "end"):
            raise DataError(archive_path, lineno, "not a compactctl archive record (is this the --archive of a compactctl run?)")
        if entries and entries[-1].get("type") == "end":  # `cat a1 a2 > both`, or `>>` onto one file
            raise DataError(
                archive_path,
                lineno,
                f"a second archive begins after line {lineno - 1}'s closing record: give each run's archive as an --archive "
                "of its own, in the order the runs wrote them",
            )
        entries.append(e)
    if not entries:
        raise DataError(archive_path, 1, "the archive is empty: nothing to restore from")
    if entries[-1].get("type") != "end":
        raise DataError(
            archive_path, len(entries), "the archive is truncated (its closing record is missing): it cannot be trusted to restore"
        )
    return entries


def restore_file(
    compacted_path: str | os.PathLike[str],
    archive_path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str] | None,
) -> None:
    """Write the originals of `compacted_path` (a file written with --archive `archive_path`; with
    -o DIR, any one file of that directory) to `output` (None: stdout). A truncated, empty or foreign archive is an error.

    Several archives are those of a chain's stages (`prune --archive a1 | ... | repair --archive a3`), in the order
    the stages wrote them: the last one is undone first, each result read back for the one before. Nothing is
    written unless every step restores."""
    import tempfile

    compacted_path = os.fspath(compacted_path)
    output = None if output is None else os.fspath(output)
    if isinstance(archive_path, (str, os.PathLike)):
        archives = [os.fspath(archive_path)]
    else:
        archives = [os.fspath(a) for a in archive_path]
    if not archives:
        raise UsageError("restore needs an --archive")
    if os.path.isdir(compacted_path):
        raise UsageError(
            f"{compacted_path}: is a folder: restore one output file at a time (each file of a -o DIR/ run restores from its archive)"
        )
    for a in archives:
        if os.path.isdir(a):
            raise UsageError(
                f"--archive {a}: is a folder: give the archive file the run wrote (one file for every output of a -o DIR/ run)"
            )
    if output is not None and (os.path.isdir(output) or output.endswith(("/", os.sep))):
        raise UsageError(f"-o {output}: is a folder: restore writes one file, the input the compacted file came from")
    _not_over_an_input(output, [compacted_path, *archives])
    loaded = [(a, _read_archive(a)) for a in archives]  # each one whole before any is undone
    if len(loaded) == 1:
        _restore_one(compacted_path, compacted_path, *loaded[0], output)
        return
    with tempfile.TemporaryDirectory(prefix="compactctl-restore-") as tmp:
        data, name, undone = compacted_path, compacted_path, ""
        for k, (a, entries) in enumerate(reversed(loaded)):
            last = k == len(loaded) - 1
            step = output if last else os.path.join(tmp, f"{k}.jsonl")
            try:
                name = _restore_one(data, name, a, entries, step)
            except DataError as e:
                what = e.what.replace(data, f"what undoing {undone} gave") if undone else e.what  # not a temporary file's name
                raise DataError(
                    e.source if e.source != data else name,
                    e.line,
                    f"{what} (several archives are undone last first: give them in the order the stages wrote them)",
                ) from e
            data, undone = step or "", a


def _not_over_an_input(output: str | None, inputs: list[str]) -> None:
    """restore writes its output only once everything is restored, but never over what it reads."""
    if output is None or not os.path.isfile(output):
        return
    for p in inputs:
        if os.path.isfile(p) and os.path.samefile(output, p):
            raise UsageError(f"{output}: is an input of this restore (the compacted file or an archive): write the originals elsewhere")


def _restore_one(data_path: str, name: str, archive_path: str, entries: list[dict], output: str | None) -> str:
    """Restore the transcripts of `data_path` (named `name`: the compacted file, or in a chain the output a later
    stage read) from one archive's `entries`; returns the name of the input this archive's run read, for an earlier
    archive."""
    end = entries[-1]
    sources = end.get("sources") or []
    transcripts = list(formats.Reader().read([data_path]))
    # with -o DIR/ one archive covers several output files: take the records of this file's input
    mine = None
    if len(sources) > 1 and len(transcripts) != end.get("transcripts"):
        mine = _mine(name, sources, end, entries[:-1], transcripts, archive_path)
    by_seq = _by_seq(entries[:-1], mine)
    seqs = sorted(by_seq)
    first_seq = _first_seq(end, mine)
    if seqs and first_seq + len(transcripts) <= max(seqs):  # before writing: a wrong archive leaves no output
        raise DataError(archive_path, None, f"the archive holds more transcripts than {name}: is it the right file?")
    with Output(output) as out:
        for k, t in enumerate(transcripts):
            for line in _restored(t, k, by_seq.get(first_seq + k, []), archive_path, name):
                out.write(line + b"\n")
    read = mine if mine is not None else (sources[0] if len(sources) == 1 else None)
    return read if read not in (None, "<stdin>", "-") else name


def _first_seq(end: dict, mine: str | None) -> int:
    return (end.get("first_seq") or {}).get(mine, 0) if mine is not None else 0


def _restored(t: Transcript, k: int, got: list[dict], archive_path: str, name: str) -> Iterator[bytes]:
    """The original lines of transcript `t` (the k-th of the file `name`) from its archive records `got`: what its
    run wrote, checked against the map's `written` print, restored; what was added after it, as it is."""
    _check_unchanged(t, k, got, archive_path, name)
    if not got and compacted_here(t):
        raise DataError(
            archive_path, None, f"no archive record for {t.id} (transcript {k + 1}), which was changed: this archive belongs to another run"
        )
    mapping = next((e for e in got if e.get("type") == "map"), None)
    written = mapping.get("written") if mapping is not None else None
    lines = next((e for e in got if e.get("type") == "lines"), None)
    if lines is not None:
        head, added = _as_written_lines(list(formats.write(t)), written, t, k, archive_path, name)
        if added and lines.get("format", t.format) != t.format:  # restored as its own lines, added to as another format
            raise DataError(
                name,
                t.line,
                f"{t.id} (transcript {k + 1}): what was added after the run wrote it as {t.format} ({len(added)} "
                f"line{'s' if len(added) > 1 else ''}) cannot be written back into the original's {lines.get('format')}: "
                "restore the file as the run wrote it",
            )
        yield from _restore_lines(head, lines, archive_path, name)
        yield from added
        return
    ours, more = _as_written(t, written, k, archive_path, name)
    try:
        restored = restore(ours, got)
    except DataError as e:
        if e.source != ARCHIVE:
            raise
        raise DataError(archive_path, None, f"{t.id} (transcript {k + 1}): {e.what}") from e
    if more:
        restored = restored.evolve(messages=[*restored.messages, *more])
        for i, m in enumerate(restored.messages):
            m.index = i
    yield from formats.write(restored)


def _as_written(t: Transcript, written: dict | None, k: int, archive_path: str, name: str) -> tuple[Transcript, list[Message]]:
    """`t` as its run wrote it, and the messages added after it since (a session that went on), if its map holds the
    print of what was written (archives from before it: taken as they are)."""
    if not isinstance(written, dict) or not isinstance(written.get("messages"), int):
        return t, []
    n = written["messages"]
    if len(t.messages) < n or transcript_print(t.messages[:n]) != written.get("print"):
        raise _not_written(t, k, archive_path, name)
    return (t if n == len(t.messages) else t.evolve(messages=t.messages[:n])), t.messages[n:]


def _as_written_lines(
    now: list[bytes], written: dict | None, t: Transcript, k: int, archive_path: str, name: str
) -> tuple[list[bytes], list[bytes]]:
    """A line log's lines as its run wrote them, and the lines added after them since."""
    if not isinstance(written, dict) or not isinstance(written.get("lines"), int):
        return now, []
    n = written["lines"]
    if len(now) < n or digest(b"\n".join(now[:n]), 16) != written.get("print"):
        raise _not_written(t, k, archive_path, name)
    return now[:n], now[n:]


def _not_written(t: Transcript, k: int, archive_path: str, name: str) -> DataError:
    return DataError(
        name,
        t.line,
        f"{t.id} (transcript {k + 1}) is not what the run that wrote {archive_path} wrote: it was changed since (what is "
        "only added after it is kept; a change cannot be undone), or this archive belongs to another run",
    )


def _mine(name: str, sources: list[str], end: dict, records: list[dict], transcripts: list[Transcript], archive_path: str) -> str:
    """The input of a -o DIR/ run whose output `name` is: by its path, and where two inputs' outputs are named alike
    (a moved copy), the one whose records fit what the file holds."""
    named = _source_for(name, sources, end.get("outputs"))
    if len(named) == 1:
        return named[0]
    fits = [s for s in named if _fits(transcripts, _by_seq(records, s), _first_seq(end, s), archive_path, name)]
    if len(fits) == 1:
        return fits[0]
    shown = ", ".join(named[:3]) + (" ..." if len(named) > 3 else "")
    raise DataError(
        name, None, f"{len(named)} inputs of {archive_path} are named like this file ({shown}): restore it where that run wrote it"
    )


def _fits(transcripts: list[Transcript], by_seq: dict[int, list[dict]], first_seq: int, archive_path: str, name: str) -> bool:
    """Every transcript is what the run wrote for these records (their maps' `written` prints)."""
    if not by_seq or first_seq + len(transcripts) <= max(by_seq):
        return False
    try:
        for k, t in enumerate(transcripts):
            for _ in _restored(t, k, by_seq.get(first_seq + k, []), archive_path, name):
                pass
    except DataError:
        return False
    return True


def _by_seq(records: list[dict], mine: str | None) -> dict[int, list[dict]]:
    """This run's archive records by transcript `seq`: of input `mine` alone when one is named."""
    by_seq: dict[int, list[dict]] = {}
    for e in records:
        if e.get("carried"):  # an earlier archive's originals, still referred to (carry.Carry): not this run's
            continue
        if mine is None or e.get("source") == mine:
            by_seq.setdefault(e["seq"], []).append(e)
    return by_seq


def _restore_lines(written: list[bytes], record: dict, archive_path: str, compacted_path: str) -> Iterator[bytes]:
    """The original lines of a line-log transcript: a number is a line as written now, a string a line the archive kept."""
    for x in record["lines"]:
        if isinstance(x, int):
            if x >= len(written):
                raise DataError(archive_path, None, f"the archive does not match {compacted_path}")
            yield written[x]
        else:
            yield x.encode("utf-8")


def _source_for(compacted_path: str, sources: list[str], outputs: dict[str, str] | None = None) -> list[str]:
    """The input files whose output `compacted_path` may be: the one whose whole output path under -o DIR/ (the
    archive's `outputs`) `compacted_path` ends with; else (a moved output, or an archive without them) those whose
    output path, or own path, shares the most trailing parts with it (-o DIR/ keeps relative paths and names)."""
    b = os.path.abspath(compacted_path).split(os.sep)

    def shared(path: str) -> int:
        a = path.split(os.sep)
        n = 0
        while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
            n += 1
        return n

    outs = {s: os.path.normpath(outputs[s]) for s in sources if outputs and s in outputs}
    whole = [s for s, out in outs.items() if shared(out) == len(out.split(os.sep))]
    if whole:
        return [max(whole, key=lambda s: len(outs[s].split(os.sep)))]
    score = {s: shared(outs.get(s) or os.path.abspath(s)) for s in sources}
    best = max(score.values(), default=0)
    if best == 0:
        raise DataError(compacted_path, None, f"the archive covers {len(sources)} files and none is named like this one")
    return [s for s in sources if score[s] == best]


def _check_unchanged(t: Transcript, k: int, got: list[dict], archive_path: str, name: str) -> None:
    """A transcript the run wrote as it came (an `unchanged` record) must be the one it wrote: its print (of the
    messages it had then, where the record says how many: what was added after them stays as it is)."""
    same = next((e for e in got if e.get("type") == "unchanged"), None)
    if same is None:
        return
    n = same.get("messages")
    ours = t.messages[:n] if isinstance(n, int) and len(t.messages) >= n else t.messages
    if same.get("print") != transcript_print(ours):
        raise _not_written(t, k, archive_path, name)


def compacted_here(t: Transcript) -> bool:
    """`t` holds compactctl's own text: a summary, or what repair writes (a missing result's stub, an opening)."""
    from .model import is_summary
    from .phases.repair import OLD_STUBS, OPENING, STUB

    return any(is_summary(m) or m.text() in (STUB, OPENING, *OLD_STUBS) for m in t.messages)
