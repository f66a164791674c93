"""The record-level API: compact one record (a `dict`) from inside someone else's pipeline.

    import compactctl
    out, report = compactctl.compact_record({"messages": [...]}, context_window=32_000)

    c = compactctl.Compactor(compactctl.Options(context_window=32_000))  # encoding and summarizer loaded once
    for rec in records:
        res = c.compact(rec)               # a CompactResult: never raises for "cannot fit" or a bad record
        json.dumps(asdict(res))            # plain JSON types only
        if res.status != "error":
            keep(res.record)

A record is one transcript as a JSON object in any known format (OpenAI chat `{"messages": [...]}`,
Anthropic Messages, ShareGPT, ...). The CLI, `--workers` and `compactctl.ray` run the same `Compactor`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import typing
from collections.abc import Callable
from dataclasses import field
from typing import Any

import orjson

from . import config, formats
from .errors import CannotFit, CompactError, DataError, LLMAuthError, UsageError
from .formats.openai import message_from_dict, message_to_dict
from .jsonl import BOM
from .lean import dataclass
from .model import Transcript, mark_observations
from .phases import Archived
from .phases.plan import Budget, annotate
from .phases.plan import plan_for_repair as plan_phase  # the zones `summarize` and `compact` plan with
from .phases.prune import PruneOptions
from .phases.prune import prune as prune_phase
from .phases.repair import RepairOptions
from .phases.repair import repair as repair_phase
from .phases.summarize import SummarizeOptions
from .phases.summarize import summarize as summarize_phase
from .pipeline import CompactOptions, summarize_report
from .pipeline import compact as compact_pipeline
from .tokens import Counter, context_window_for, make_counter

STATUSES = ("compacted", "not-needed", "ineffective", "skipped", "cannot-fit", "error", "pruned", "repaired", "planned")


def _default(cls: type, name: str) -> Any:
    """The default of option `name` where the library keeps it (Budget, PruneOptions, SummarizeOptions,
    RepairOptions): the one place the CLI's defaults agree with too (tests/test_cli.py, tests/test_record.py)."""
    return next(f.default for f in dataclasses.fields(cls) if f.name == name)


@dataclass
class Options:
    """Every option of `compactctl compact`, flat, picklable (worker processes rebuild a Compactor from it).

    Checked when built (and again when a Compactor uses it): a value of the wrong type or out of the range the
    command line allows (config.LIMITS: context_window=0, threshold=1.5, ...) raises UsageError."""

    model: str = "gpt-4o"
    encoding: str | None = None
    tokenizer: str = "exact"
    context_window: int | None = None  # default: from the model
    threshold: float = _default(Budget, "threshold")
    tail_tokens: int | None = _default(Budget, "tail_tokens")
    protect_first: int = _default(Budget, "protect_first")
    summary_ratio: float = _default(Budget, "summary_ratio")
    summary_min: int = _default(Budget, "summary_min")
    summary_max: int = _default(Budget, "summary_max")
    last_ask: str = _default(Budget, "last_ask")
    # prune
    protect_tokens: int | None = None  # default: the tail budget
    min_dedup_chars: int = _default(PruneOptions, "min_dedup_chars")
    arg_limit: int = _default(PruneOptions, "arg_limit")
    arg_keep: int = _default(PruneOptions, "arg_keep")
    dedup: bool = _default(PruneOptions, "dedup")
    summaries: bool = _default(PruneOptions, "summaries")
    args: bool = _default(PruneOptions, "args")
    images: bool = _default(PruneOptions, "images")
    count_tokens: bool = _default(PruneOptions, "count_tokens")  # per-pass token savings in the report
    prune_all: bool = False  # prune every old output even under the target
    keep_tools: tuple[str, ...] = _default(PruneOptions, "keep_tools")
    digest_names: int = _default(PruneOptions, "digest_names")  # names a digest keeps (0: one-liners only)
    drop_tools: tuple[str, ...] = _default(PruneOptions, "drop_tools")
    refs: bool | None = None  # references to archived originals (None: with `archive`, whose originals they point at)
    recall_hint: bool = _default(SummarizeOptions, "recall_hint")
    instructions: str | None = None  # extra instructions for an LLM summarizer
    # summarize / repair
    focus: str | None = None
    min_saving: float = _default(SummarizeOptions, "min_saving")
    force: bool = _default(SummarizeOptions, "force")
    strip_unanswered: bool = _default(RepairOptions, "strip_unanswered")
    grow_tail: bool = True  # compact's second pass into the room a local summary left (pipeline.compact)
    summarizer: str = "offline"  # the record API and worker processes are offline; pass summarizer= for an LLM
    # output
    to: str | None = None  # write records in this format instead of the input's
    fmt: str | None = None  # force the input format
    archive: bool = False  # put the originals that were replaced or removed in the result (for recall; restore reads an --archive file)

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Raise UsageError for the first option of the wrong type or out of its range (config.LIMITS, the
        ranges the command line checks)."""
        config.check_fields(self)

    def budget(self) -> Budget:
        self.check()  # again: a field may have been set since
        window = self.context_window if self.context_window is not None else context_window_for(self.model)
        if window is None:
            raise UsageError(f"unknown context window for model {self.model!r}: give context_window")
        return Budget(
            context_window=window,
            threshold=self.threshold,
            tail_tokens=self.tail_tokens,
            protect_first=self.protect_first,
            summary_ratio=self.summary_ratio,
            summary_min=self.summary_min,
            summary_max=self.summary_max,
            last_ask=self.last_ask,
        )

    def with_refs(self) -> bool:
        """`refs` as given, else references only when the result holds the originals (`archive`), as the CLI
        writes them only with --archive: without, they would point at nothing."""
        return self.refs if self.refs is not None else self.archive

    def prune_options(self, budget: Budget | None = None) -> PruneOptions:
        b = budget or self.budget()
        return PruneOptions(
            protect_tokens=b.tail if self.protect_tokens is None else self.protect_tokens,
            min_dedup_chars=self.min_dedup_chars,
            arg_limit=self.arg_limit,
            arg_keep=self.arg_keep,
            dedup=self.dedup,
            summaries=self.summaries,
            args=self.args,
            images=self.images,
            count_tokens=self.count_tokens,
            target=None if self.prune_all else b.target,
            keep_tools=tuple(self.keep_tools),
            digest_names=self.digest_names,
            drop_tools=tuple(self.drop_tools),
            refs=self.with_refs(),
        )

    def compact_options(self) -> CompactOptions:
        b = self.budget()
        return CompactOptions(
            b,
            self.prune_options(b),
            self.focus,
            self.min_saving,
            force=self.force,
            strip_unanswered=self.strip_unanswered,
            grow_tail=self.grow_tail,
            refs=self.with_refs(),
            recall_hint=self.recall_hint,
            instructions=self.instructions,
        )

    @classmethod
    def of(cls, budget: Budget, prune: PruneOptions, **rest: Any) -> Options:
        """The flat options of a Budget and PruneOptions (the inverse of `budget()` and `prune_options()`: the fields
        of the same name, and `prune_all` for a prune without a target), with the rest (model, focus, to ...) as given:
        what the command line's option groups make."""
        names = {f.name for f in dataclasses.fields(cls)}
        flat = {f.name: getattr(budget, f.name) for f in dataclasses.fields(Budget) if f.name in names}
        flat |= {f.name: getattr(prune, f.name) for f in dataclasses.fields(PruneOptions) if f.name in names}
        flat["prune_all"] = prune.target is None
        return cls(**(flat | rest))

    @classmethod
    def from_kwargs(cls, options: Options | None = None, **kw: Any) -> Options:
        base = options or cls()
        unknown = set(kw) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise TypeError(f"unknown option(s): {', '.join(sorted(unknown))}")
        return dataclasses.replace(base, **kw) if kw else base


@dataclass(frozen=True)
class CompactResult:
    """What compacting one record gave; plain JSON types only (`json.dumps(dataclasses.asdict(r))` works).

    status: compacted | not-needed | ineffective | skipped (anti-thrash) | cannot-fit (the record is the
    pruned, repaired transcript, valid but not summarized) | error (bad record: `record` is None) |
    pruned | repaired | planned (single phases)."""

    status: str
    transcript: str = ""
    record: dict[str, Any] | None = None
    report: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    archived: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> bytes:
        d = dataclasses.asdict(self)
        try:
            return orjson.dumps(d)
        except orjson.JSONEncodeError:  # an integer beyond 64 bits in the record
            return json.dumps(d, ensure_ascii=False, separators=(",", ":")).encode()


@dataclass
class Outcome:
    """One transcript through a phase, before it is written (internal to the runner and the record API)."""

    transcript: Transcript | None
    report: dict[str, Any] | None
    archived: list[Archived]
    status: str


def from_messages(messages: list[dict], **metadata: Any) -> Transcript:
    """A transcript from OpenAI chat messages (a list of dicts); `metadata` are the record's other keys."""
    if not isinstance(messages, list):
        raise DataError("<messages>", 1, "messages must be a list")
    msgs = [message_from_dict(d, "<messages>", 1, i) for i, d in enumerate(messages)]
    mark_observations(msgs)  # as the openai reader does
    return Transcript(
        msgs,
        id=str(metadata.get("id", "<messages>")),
        source="<messages>",
        line=1,
        format="openai",
        layout="dataset",
        metadata={**metadata, "messages": None},
        native="messages",
    )


def to_messages(t: Transcript) -> list[dict]:
    """A transcript's messages as OpenAI chat dicts (converted from its format when needed)."""
    if t.format != "openai":
        return to_record(t, "openai")["messages"]
    return [message_to_dict(m) for m in t.messages]


def to_transcript(record: dict, fmt: str | None = None, source: str = "<record>") -> Transcript:
    """One record (a transcript as a JSON object, any known format) as a Transcript."""
    if not isinstance(record, dict):
        raise DataError(source, 1, f"a record must be a JSON object, got {type(record).__name__}")
    try:
        fast = orjson.dumps(record)
    except orjson.JSONEncodeError:  # not JSON, or JSON orjson does not write: an integer beyond 64 bits, a lone surrogate, deep nesting
        fast = None
    if fast is not None:
        if b"null" in fast and _non_finite(record):  # orjson writes NaN and infinities as null: refused, as the CLI does
            _check_json(record, source)  # names the value
        return line_to_transcript(fast, fmt, source, obj=record)
    _check_json(record, source)
    # Read as the CLI reads the same record from a line (jsonl.parse_record): lone surrogates become U+FFFD,
    # the line keeps integers beyond 64 bits as written.
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    try:
        raw = text.encode()
    except UnicodeEncodeError:  # a lone surrogate: written as its escape, which the reader replaces
        raw = json.dumps(record, separators=(",", ":")).encode()
    return line_to_transcript(raw, fmt, source)


def _non_finite(record: dict) -> bool:
    """Whether a NaN or an infinity is anywhere in `record` (a plain walk: the path is named only when one is)."""
    stack: list[Any] = [record]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, float) and not math.isfinite(v):
            return True
    return False


MAX_DEPTH = 512  # records nested deeper are refused (orjson writes 254 levels; Python's json recurses)


def _check_json(record: dict, source: str) -> None:
    """DataError naming the first value of `record` that is not JSON: a non-string key, a set or other
    object, NaN or infinity, nesting deeper than MAX_DEPTH."""
    stack: list[tuple[Any, str, int]] = [(record, "record", 1)]
    while stack:
        v, where, depth = stack.pop()
        if isinstance(v, dict):
            if depth > MAX_DEPTH:
                raise DataError(source, 1, f"not JSON: nested more than {MAX_DEPTH} levels deep ({where})")
            for k, x in v.items():
                if not isinstance(k, str):
                    raise DataError(source, 1, f"not JSON: the key {k!r} of {where} is not a string ({type(k).__name__})")
                stack.append((x, _at(where, repr(k), depth), depth + 1))
        elif isinstance(v, (list, tuple)):
            if depth > MAX_DEPTH:
                raise DataError(source, 1, f"not JSON: nested more than {MAX_DEPTH} levels deep ({where})")
            stack.extend((x, _at(where, str(i), depth), depth + 1) for i, x in enumerate(v))
        elif isinstance(v, float) and not math.isfinite(v):
            raise DataError(source, 1, f"not JSON: {where} is {v} (NaN and infinities are not JSON)")
        elif not (v is None or isinstance(v, (str, int, float))):
            raise DataError(source, 1, f"not JSON: {where} is not a JSON value ({type(v).__name__})")


def _at(where: str, key: str, depth: int) -> str:
    """Where a value stands, for a message: record['messages'][0]['content'] (deep ones end in [...])."""
    if depth < 8:
        return f"{where}[{key}]"
    return where if where.endswith("[...]") else f"{where}[...]"


def line_to_transcript(
    raw: bytes, fmt: str | None = None, source: str = "<record>", lineno: int = 1, obj: Any = None, number: int | str | None = None
) -> Transcript:
    """One JSONL line holding a whole transcript (a dataset record) as a Transcript. Its id is `source`, or
    `source#number` (as the CLI names the records of a file) when `number` is given."""
    from .jsonl import parse_record

    if obj is None:
        obj, raw = parse_record(raw, source, lineno)
        if not isinstance(obj, dict):
            raise DataError(source, lineno, "expected a JSON object")
    reader = formats.Reader(fmt=fmt, layout="dataset" if fmt else None, warn=lambda msg: None)
    mod, layout = reader._detect((lineno, raw, obj), source)
    if layout != "dataset":
        raise DataError(
            source, lineno, 'this is one message, not a transcript: a record holds a whole transcript (e.g. {"messages": [...]})'
        )
    found = list(mod.read(iter([(lineno, raw, obj)]), source, layout, reader))
    if len(found) != 1:
        raise DataError(source, lineno, "no transcript in this record")
    t = found[0]
    if number is not None:
        t.id = f"{source}#{number}"
    elif source != "<record>":
        t.id = source
    return t


def to_lines(t: Transcript, to: str | None = None) -> list[bytes]:
    return list(formats.write(t, to))


def to_record(t: Transcript, to: str | None = None) -> dict:
    """A transcript as one record (dict): dataset layout in its own format or `to`."""
    if t.layout != "dataset":
        t = t.evolve(layout="dataset", native=None, metadata={**t.metadata, "messages": None})
    lines = to_lines(t, to)
    if len(lines) != 1:
        raise CompactError(f"{t.id}: format {to or t.format} does not write one record per transcript")
    return _loads(lines[0])


_LONG_NUMBER = re.compile(rb"\d{19,}")


def _loads(line: bytes) -> Any:
    """A JSON line as Python values, integers beyond 64 bits exact (orjson reads them as floats): the
    record holds what the line says, as the line the CLI writes does."""
    if _LONG_NUMBER.search(line) is None:
        return orjson.loads(line)
    return json.loads(line)


class Compactor:
    """Loads the encoding and the summarizer once; compacts records, lines or transcripts.

    `summarizer`: a Summarizer object (e.g. an LLMSummarizer); default offline."""

    def __init__(self, options: Options | None = None, summarizer: Any = None, counter: Counter | None = None, **kw: Any):
        self.options = Options.from_kwargs(options, **kw)
        o = self.options
        self.counter = counter or make_counter(o.model, o.encoding, o.tokenizer)
        if summarizer is None:
            if o.summarizer not in ("offline", "auto"):
                raise UsageError("the record API builds the offline summarizer only: pass summarizer= for an LLM")
            from .summarizers.base import OfflineSummarizer

            summarizer = OfflineSummarizer()
        self.summarizer = summarizer
        self.compact_opts = o.compact_options()
        self.budget = self.compact_opts.budget

    # -- transcripts (what the runner calls) --------------------------------------------------
    def compact_transcript(self, t: Transcript, on_cannot_fit: str = "fallback", warn: Callable[[str], None] | None = None) -> Outcome:
        """`on_cannot_fit`: "fallback" (the pruned, repaired transcript, status cannot-fit) or "raise"."""
        try:
            out, rep = compact_pipeline(t, self.counter, self.summarizer, self.compact_opts)
        except CannotFit as e:
            if on_cannot_fit == "raise":
                raise
            failed = {"transcript": t.id, "status": "cannot-fit", "reason": str(e)}
            if e.fallback is not None:
                if warn:
                    warn(f"{e} -- written {e.fallback_is}")  # (compacted but over the target, or pruned only)
                return Outcome(e.fallback[0], failed, e.fallback[1], "cannot-fit")
            if warn:
                warn(f"{e} -- written as read")
            return Outcome(t, failed, [], "cannot-fit")
        return Outcome(out, dict(rep), rep.archived, rep["status"])

    def prune_transcript(self, t: Transcript) -> Outcome:
        out, st = prune_phase(t, self.counter, self.compact_opts.prune_options())
        return Outcome(out, {"transcript": t.id, "status": "pruned", "prune": st.as_dict()}, st.archived, "pruned")

    def plan_transcript(self, t: Transcript) -> Outcome:
        p = plan_phase(t, self.counter, self.budget)
        return Outcome(annotate(t, p), {"transcript": t.id, "status": "planned", "plan": p.as_dict()}, [], "planned")

    def summarize_transcript(self, t: Transcript) -> Outcome:
        out, st = summarize_phase(t, self.counter, self.summarizer, self.compact_opts.summarize_options())
        return Outcome(out, summarize_report(t, st.tokens_before, st.tokens_after, st), st.archived, st.status)

    def repair_transcript(self, t: Transcript) -> Outcome:
        out, st = repair_phase(t, self.compact_opts.repair_options())
        return Outcome(out, {"transcript": t.id, "status": "repaired", "repair": st.as_dict()}, st.archived, "repaired")

    # -- records -------------------------------------------------------------------------------
    def run(self, record: dict | bytes | str | Transcript, phase: str = "compact") -> CompactResult:
        """One record through a phase (compact, prune, plan, summarize, repair). Never raises for a bad
        record or "cannot fit": the status says what happened. An LLM endpoint that refuses the run (401/403, a spent
        quota, or a 404 for every model) raises LLMAuthError, as the CLI stops (exit 7)."""
        try:
            if isinstance(record, Transcript):
                t = record
            elif isinstance(record, (bytes, str)):
                t = line_to_transcript(_utf8(record) if isinstance(record, str) else record, self.options.fmt)
            else:
                t = to_transcript(record, self.options.fmt)
            fn = getattr(self, f"{phase}_transcript")
            oc = fn(t)
            out = to_record(oc.transcript, self.options.to) if oc.transcript is not None else None
            archived = [a.record() for a in oc.archived] if self.options.archive else []
            return CompactResult(oc.status, t.id, out, _jsonable(oc.report or {}), None, archived)
        except CannotFit as e:  # a single phase (plan, summarize): the record as it came
            return CompactResult(
                "cannot-fit", t.id, to_record(t, self.options.to), {"transcript": t.id, "status": "cannot-fit", "reason": str(e)}, str(e)
            )
        except LLMAuthError:  # the endpoint refuses the run, not this record: the CLI stops too (exit 7)
            raise
        except CompactError as e:
            return _error(str(e))
        except orjson.JSONEncodeError as e:  # e.g. nested deeper than orjson writes (254 levels)
            return _error(f"the record cannot be written back as JSON: {e}")

    def compact(self, record: dict | bytes | str | Transcript) -> CompactResult:
        return self.run(record, "compact")

    def compact_line(self, line: bytes, source: str = "<record>", number: int | str | None = None) -> tuple[bytes | None, CompactResult]:
        """A JSONL line in, the compacted line out (None on error) and the result (without its record).
        `source` and `number` name the transcript as the CLI does (`file.jsonl#3`)."""
        try:
            t = line_to_transcript(line.removeprefix(BOM).rstrip(b"\r"), self.options.fmt, source, number=number)
            oc = self.compact_transcript(t)
            assert oc.transcript is not None  # compact always gives a transcript (the input's, at worst)
            lines = to_lines(oc.transcript, self.options.to)
            if len(lines) != 1:
                raise CompactError(f"{t.id}: format {self.options.to or t.format} does not write one line per transcript")
            archived = [a.record() for a in oc.archived] if self.options.archive else []
            return lines[0], CompactResult(oc.status, t.id, None, _jsonable(oc.report or {}), None, archived)
        except LLMAuthError:
            raise
        except CompactError as e:
            return None, _error(str(e))
        except orjson.JSONEncodeError as e:
            return None, _error(f"the record cannot be written back as JSON: {e}")


def _error(reason: str) -> CompactResult:
    return CompactResult("error", "", None, {"status": "error", "reason": reason}, reason)


def _utf8(text: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError as e:
        raise DataError("<record>", 1, f"the record's text holds a lone surrogate at character {e.start}: it is not UTF-8") from None


def _jsonable(d: dict) -> dict:
    """The report with JSON types only (tuples become lists, as they would through JSON)."""
    return orjson.loads(orjson.dumps(d))


class RecordFunction(typing.Protocol):
    """compact_record and the other *_record: what type checkers see of them (the factory below makes them)."""

    def __call__(self, record: dict[str, Any], summarizer: Any = None, **options: Any) -> tuple[dict[str, Any] | None, dict[str, Any]]: ...


def _record_api(phase: str) -> RecordFunction:
    def fn(record: dict[str, Any], summarizer: Any = None, **options: Any) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        res = Compactor(Options.from_kwargs(None, **options), summarizer=summarizer).run(record, phase)
        return res.record, {**res.report, "status": res.status, **({"error": res.error} if res.error else {})}

    fn.__name__ = f"{phase}_record"
    fn.__doc__ = (
        f"{phase.capitalize()} one record (a dict, any known format) -> (record, report). Options are the fields of "
        f"`Options` (context_window=, model=, ...). The report's status says what happened; a bad record gives "
        f"(None, report with status 'error'); nothing is raised for it (an LLM endpoint that refuses the run raises "
        f"LLMAuthError)."
    )
    return fn


compact_record = _record_api("compact")
prune_record = _record_api("prune")
plan_record = _record_api("plan")
summarize_record = _record_api("summarize")
repair_record = _record_api("repair")

__all__ = [
    "CompactResult",
    "Compactor",
    "Options",
    "compact_record",
    "from_messages",
    "plan_record",
    "prune_record",
    "repair_record",
    "summarize_record",
    "to_messages",
    "to_record",
    "to_transcript",
]


@dataclass
class PhaseJob:
    """A picklable recipe for the runner's worker processes: each builds its Compactor once."""

    options: Options
    phase: str = "compact"

    def build(self) -> Callable[[Transcript], Any]:
        from .runner import Result

        c = Compactor(self.options)
        fn = getattr(c, f"{self.phase}_transcript")

        def work(t: Transcript) -> Result:
            oc = fn(t, on_cannot_fit="raise") if self.phase == "compact" else fn(t)
            return Result(oc.transcript, oc.report, oc.archived)

        return work
