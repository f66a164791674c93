"""The option groups: input/output, budget and model, prune knobs, summarizer, references."""

from __future__ import annotations

import os
from enum import Enum
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..lean import dataclass
from .options import PARAMS, Group, Opt

if TYPE_CHECKING:  # imported where used: `--help` does not load the library
    from ..phases.plan import Budget
    from ..phases.prune import PruneOptions
    from ..tokens import Counter


class OnError(str, Enum):
    fail = "fail"
    skip = "skip"


class Tokenizer(str, Enum):
    exact = "exact"
    approx = "approx"


class SummarizerName(str, Enum):
    auto = "auto"
    offline = "offline"
    llm = "llm"


# Options that never change what is written: a run may be resumed with other values of these.
_NOT_IN_OUTPUT = {
    "inputs",
    "output",
    "resume",
    "quiet",
    "jobs",
    "workers",
    "engine",
    "ray_address",
    "rejects",
    "archive",
    "report",
    "as_json",
    "timeout",
    "retries",
}


def _io(output, from_, to, layout, on_error, rejects, archive, report, quiet, resume):
    from ..runner import IOOptions

    if layout not in (None, "session", "dataset"):
        raise UsageError("--layout must be session or dataset")
    if rejects is not None and on_error is not OnError.skip:
        # without skip a bad line stops the run and nothing is rejected: the file would only ever be empty
        raise UsageError(f"--rejects {rejects} writes the lines --on-error skip rejects: add --on-error skip, or leave --rejects out")
    options = {k: v for k, v in (PARAMS.get() or {}).items() if k not in _NOT_IN_OUTPUT}
    return IOOptions(
        output=output,
        fmt_from=from_,
        fmt_to=to,
        layout=layout,
        on_error=on_error.value,
        rejects=rejects,
        archive=archive,
        report=report,
        quiet=quiet,
        resume=resume,
        options=options,
    )


IO = Group(
    "io",
    "Input and output",
    [
        Opt(
            "output",
            str,
            None,
            ("-o", "--output"),
            "Write here (atomically) instead of stdout. A directory (or a path ending in /) "
            "gets one file per input file, mirroring the input folders.",
        ),
        Opt("from_", str, None, ("--from",), "Force the input format: openai, anthropic, sharegpt, claude-code, codex, gemini, openhands."),
        Opt("to", str, None, ("--to",), "Write in this format instead of the input's."),
        Opt("layout", str, None, ("--layout",), "Force the layout: session (a message per line) or dataset (a transcript per line)."),
        Opt(
            "on_error",
            OnError,
            OnError.fail,
            ("--on-error",),
            "fail: stop at the first bad line, writing nothing. skip: report it and go on.",
        ),
        Opt("rejects", str, None, ("--rejects",), "With --on-error skip (needs it): write the rejected raw lines here."),
        Opt(
            "archive",
            str,
            None,
            ("--archive",),
            "Write every original that was replaced or removed here (JSONL, or SQLite for a .sqlite/.db path), for `restore` and `recall`.",
        ),
        Opt("report", str, None, ("--report",), "Write a JSON report line per transcript here."),
        Opt("quiet", bool, False, ("-q", "--quiet"), "No progress bar, no notes on stderr."),
        Opt(
            "resume",
            bool,
            False,
            ("--resume",),
            "Finish a run that was interrupted (even by kill -9): -o FILE or -o DIR/ keeps a journal "
            "(OUT.compactctl-journal, or DIR/.compactctl-journal) while it runs; the finished output is the same as an uninterrupted run's.",
        ),
    ],
    _io,
)


@dataclass
class BudgetOptions:
    """The budget options of a command, and the token counter they choose."""

    budget: Budget
    model: str
    encoding: str | None
    tokenizer: str

    def counter(self, inputs: list[str] | None = None) -> Counter:
        """The token counter; with the inputs, it knows up front whether tiktoken's encoder (~0.2 s
        to build, then about twice as fast as the pure-Python counter) will pay off."""
        from ..tokens import make_counter

        counter = make_counter(self.model, self.encoding, self.tokenizer)
        if inputs:
            counter.expect(input_bytes(inputs))
        return counter


def input_bytes(inputs: list[str]) -> int:
    total = 0
    for p in inputs:
        try:
            if os.path.isdir(p):
                total += sum(e.stat().st_size for e in os.scandir(p) if e.is_file())  # a lower bound is enough
            elif p != "-":
                total += os.path.getsize(p)
        except OSError:
            pass  # the reader reports it
    return total


def _budget(
    model, encoding, tokenizer, context_window, threshold, tail_tokens, protect_first, summary_ratio, summary_min, summary_max, last_ask
):
    from ..phases.plan import Budget
    from ..tokens import context_window_for

    # The values are in range here (options.check, config.LIMITS): 0 is not "the model's window".
    window = context_window if context_window is not None else context_window_for(model)
    if window is None:
        raise UsageError(f"unknown context window for model {model!r}: give --context-window")
    b = Budget(
        context_window=window,
        threshold=threshold,
        tail_tokens=tail_tokens,
        protect_first=protect_first,
        summary_ratio=summary_ratio,
        summary_min=summary_min,
        summary_max=summary_max,
        last_ask=last_ask,
    )
    return BudgetOptions(b, model, encoding, tokenizer.value)


BUDGET = Group(
    "budget",
    "Budget and model (the same on every subcommand)",
    [
        Opt(
            "model",
            str,
            os.environ.get("COMPACTCTL_MODEL", "gpt-4o"),
            ("-m", "--model"),
            "Model the transcript is for (picks the encoding and context window); also the LLM summarizer's model.",
        ),
        Opt("encoding", str, None, ("--encoding",), "Token encoding: o200k_base or cl100k_base (default: from --model)."),
        Opt("tokenizer", Tokenizer, Tokenizer.exact, ("--tokenizer",), "exact (tiktoken, offline) or approx (chars/4, only if you ask)."),
        Opt("context_window", int, None, ("--context-window",), "Context window in tokens (default: from --model)."),
        Opt(
            "threshold", float, 0.5, ("--threshold",), "Compact when the transcript exceeds this share of the window; also the target size."
        ),
        Opt("tail_tokens", int, None, ("--tail-tokens",), "Tokens of recent messages kept verbatim (default: 20% of the target)."),
        Opt("protect_first", int, 3, ("--protect-first",), "Messages after the system message(s) kept verbatim at the head."),
        Opt("summary_ratio", float, 1.0, ("--summary-ratio",), "Summary budget as a share of the middle's tokens (then clamped)."),
        Opt("summary_min", int, 2000, ("--summary-min",), "Smallest summary budget in tokens."),
        Opt("summary_max", int, 16000, ("--summary-max",), "Largest summary budget in tokens."),
        Opt(
            "last_ask",
            str,
            "auto",
            ("--last-ask",),
            "auto: the last user message stays in the tail while that fits, else it is kept "
            "verbatim in the summary (and the head gives ground before the plan refuses). tail: always in the tail (exit 5 if that cannot fit). "
            "summary: always in the summary.",
        ),
    ],
    _budget,
)


def _prune(
    protect_tokens,
    min_dedup_chars,
    arg_limit,
    arg_keep,
    no_dedup,
    no_summaries,
    no_args,
    no_images,
    prune_all,
    keep_tool,
    drop_tool,
    digest_names,
    check_names,
):
    return dict(
        protect_tokens=protect_tokens,
        min_dedup_chars=min_dedup_chars,
        arg_limit=arg_limit,
        arg_keep=arg_keep,
        dedup=not no_dedup,
        summaries=not no_summaries,
        args=not no_args,
        images=not no_images,
        prune_all=prune_all,
        keep_tools=tuple(keep_tool or ()),
        drop_tools=tuple(drop_tool or ()),
        digest_names=digest_names,
        check_names=check_names,
    )


def prune_options(raw: dict, budget: BudgetOptions) -> PruneOptions:
    from ..phases.prune import PruneOptions

    d = dict(raw)
    if d["protect_tokens"] is None:
        d["protect_tokens"] = budget.budget.tail
    d["target"] = None if d.pop("prune_all") else budget.budget.target
    return PruneOptions(**d)


PRUNE = Group(
    "prune_raw",
    "Prune",
    [
        Opt(
            "protect_tokens",
            int,
            None,
            ("--protect-tokens",),
            "Recent tokens whose tool output is left verbatim (default: the tail budget).",
        ),
        Opt("min_dedup_chars", int, 200, ("--min-dedup-chars",), "Shortest tool output that dedup considers."),
        Opt("arg_limit", int, 500, ("--arg-limit",), "Tool-call arguments longer than this get their long strings cut."),
        Opt("arg_keep", int, 200, ("--arg-keep",), "Characters kept of each long argument string."),
        Opt("no_dedup", bool, False, ("--no-dedup",), "Turn off dedup of identical outputs."),
        Opt("no_summaries", bool, False, ("--no-summaries",), "Turn off digests of old outputs."),
        Opt("no_args", bool, False, ("--no-args",), "Turn off argument truncation."),
        Opt("no_images", bool, False, ("--no-images",), "Turn off image placeholders."),
        Opt(
            "prune_all",
            bool,
            False,
            ("--prune-all",),
            "Prune every old output even when the transcript fits the target (default: least valuable first, stopping as soon as it fits).",
        ),
        Opt("keep_tool", list[str], None, ("--keep-tool",), "Keep this tool's outputs verbatim (repeatable)."),
        Opt("drop_tool", list[str], None, ("--drop-tool",), "Prune this tool's outputs first, wherever they stand (repeatable)."),
        Opt(
            "digest_names",
            int,
            64,  # phases.prune.NAMES_KEPT (not imported at start; a test checks they agree)
            ("--digest-names",),
            "Names (paths, identifiers, values) a digest of an old output or a cut argument keeps; 0: one-liners only (fastest). "
            "The digest that brings the transcript under its target keeps more if the room allows; when none does, 4x this.",
        ),
        Opt(
            "check_names",
            bool,
            False,
            ("--check-names",),
            "Look at each name a digest or a cut argument keeps where it stands, and leave it out when a redaction rule takes "
            "it there (password: X). On by itself when an LLM will read the output: compact with an LLM summarizer, prune "
            "with an LLM configured (OPENAI_API_KEY, a base URL in the environment or a config file). About doubles prune's time.",
        ),
    ],
    _prune,
)


@dataclass
class SummaryOptions:
    """The summary options of a command: which summarizer, which LLM, how to call it."""

    summarizer: str
    llm_model: str | None
    base_url: str | None
    api_key: str | None
    fallback_model: str | None
    focus: str | None
    cache_dir: str | None
    no_cache: bool
    jobs: int
    min_saving: float
    force: bool
    timeout: float
    retries: int
    llm_context: int
    instructions: str | None = None  # the text of --instructions FILE


def _summary(
    summarizer,
    llm_model,
    base_url,
    fallback_model,
    focus,
    cache_dir,
    no_cache,
    jobs,
    min_saving,
    force,
    timeout,
    retries,
    llm_context,
    instructions,
):
    text = None
    if instructions is not None:
        try:
            with open(instructions, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise UsageError(f"--instructions {instructions}: {getattr(e, 'strerror', None) or e}") from None
    return SummaryOptions(
        summarizer.value,
        llm_model,
        base_url or os.environ.get("OPENAI_BASE_URL"),
        os.environ.get("OPENAI_API_KEY"),
        fallback_model,
        focus,
        cache_dir,
        no_cache,
        jobs,
        min_saving,
        force,
        timeout,
        retries,
        llm_context,
        text,
    )


SUMMARY = Group(
    "summary",
    "Summary",
    [
        Opt(
            "summarizer",
            SummarizerName,
            SummarizerName.auto,
            ("--summarizer",),
            "auto: the LLM when OPENAI_API_KEY or a base URL is set, else offline.",
        ),
        Opt("llm_model", str, None, ("--llm-model",), "Model that writes the summary (default: --model)."),
        Opt(
            "base_url",
            str,
            None,
            ("--base-url",),
            "OpenAI-compatible endpoint (default: $OPENAI_BASE_URL). The key comes from $OPENAI_API_KEY.",
        ),
        Opt("fallback_model", str, None, ("--fallback-model",), "Model tried once when the main one keeps failing."),
        Opt("focus", str, None, ("--focus",), "Topic that keeps full detail and most of the budget."),
        Opt("cache_dir", str, None, ("--cache-dir",), "Summary cache folder (default: the user cache dir)."),
        Opt("no_cache", bool, False, ("--no-cache",), "Neither read nor write the summary cache."),
        Opt("jobs", int, 1, ("-j", "--jobs"), "Transcripts summarized at once (LLM calls in flight)."),
        Opt("min_saving", float, 0.10, ("--min-saving",), "A compaction saving less than this share is not applied (anti-thrash)."),
        Opt("force", bool, False, ("--force",), "Compact even after repeated ineffective compactions."),
        Opt(
            "timeout",
            float,
            120.0,
            ("--timeout",),
            "Seconds per LLM request (one call, retries included, ends within timeout x (retries + 1) + backoff + at most 10 s).",
        ),
        Opt("retries", int, 2, ("--retries",), "Retries per LLM request on 429, 5xx and timeouts (with backoff)."),
        Opt(
            "llm_context",
            int,
            32000,
            ("--llm-context",),
            "Tokens of transcript the summarizing LLM takes per call (larger middles go in chunks).",
        ),
        Opt(
            "instructions", str, None, ("--instructions",), "A file of extra instructions for the LLM summarizer (appended to its prompt)."
        ),
    ],
    _summary,
)


REFS = Group(
    "refs",
    "References",
    [
        Opt(
            "refs",
            bool,
            None,
            ("--refs/--no-refs",),
            "Tag each pruned output, cut argument and summarized span with a reference "
            "to its archived original, e.g. 'ref 3f9a2c1b' in brackets (recall and the MCP server return the original). "
            "Default: on with --archive, which holds the originals, off without.",
        ),
    ],
    lambda refs: refs,
)


def refs_for(refs: bool | None, io) -> bool:
    """--refs or --no-refs as given, else references only where --archive holds the originals they point at."""
    return refs if refs is not None else io.archive is not None


def hint_said(recall_hint: bool, refs: bool, io, warn) -> None:
    """--recall-hint without --archive: the summary names tools for originals this run archives nowhere (said, not
    refused: an earlier stage of a pipe may archive what it removed). Without references it names `search` alone."""
    if recall_hint and io.archive is None and not io.quiet:
        tools = "`search` and `recall`" if refs else "`search`"
        warn(f"--recall-hint without --archive: the summary names {tools} for originals this run archives nowhere")


HINT = Group(
    "recall_hint",
    "References",
    [
        Opt(
            "recall_hint",
            bool,
            False,
            ("--recall-hint",),
            "Tell the model in the summary that the `search` and `recall` tools (compactctl mcp --archive ...) fetch archived originals.",
        ),
    ],
    lambda recall_hint: recall_hint,
)


def llm_configured() -> bool:
    """Whether `--summarizer auto` would use an LLM, by the environment and the config files: what `prune` knows of a
    `summarize` that may read its output (not options given to that command alone)."""
    from .. import config

    s = config.resolve([(o.name, o.type, o.default) for o in SUMMARY.opts])
    return s["summarizer"].value == "llm" or bool(s["base_url"].value or os.environ.get("OPENAI_API_KEY"))
