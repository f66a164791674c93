"""The LLM summarizer: any OpenAI-compatible chat-completions endpoint, through the openai package.

- the middle is serialized with per-message caps that keep the start and the end of long outputs,
  secrets redacted; a middle larger than `llm_context` goes in chunks, each later chunk updating
  the summary so far (PREVIOUS SUMMARY + NEW TURNS), never cut;
- retries with backoff on 429/5xx/timeouts (the client's own, honouring retry-after), then the
  fallback model once, then the offline summarizer (the report says so); 401/403 stop the run, so does a
  429 whose quota is spent (`insufficient_quota`), and so does a 404 for every model asked (no such model or path: a configuration error, not an outage); a model
  that answered 404 is not asked again in the same run (the fallback answers at once);
- a circuit breaker per endpoint pauses calls after repeated transient failures;
- answers are cached by the exact request; what is done to an answer after (sections completed from the
  offline summary, the retention guard, the identifier index, the budget) is in `guard.py`.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import field
from typing import TYPE_CHECKING, TypedDict

from .. import lane
from ..errors import LLMAuthError, UsageError
from ..jsonl import without_surrogates
from ..lean import dataclass
from ..model import Message, is_output
from ..redact import redact, redact_json_text
from ..tokens import Counter
from .base import SummaryRequest, SummaryResult
from .guard import guard, within
from .prompt import SECTIONS, UPDATE_INSTRUCTIONS, parse_sections, system_prompt

if TYPE_CHECKING:
    from ..cache import SummaryCache

# The offline summarizer (with the fact extraction under it) and the summary cache (sqlite3, hashlib) are imported
# by the first summary: an LLM configured for a run whose transcripts all fit (a hook's, with OPENAI_API_KEY set)
# does not load them.


class _CallStats(TypedDict):
    """What the calls for one summary did (counted as they go)."""

    calls: int
    cache_hits: int
    warnings: list[str]
    models: list[str]  # the model that wrote each part (the fallback's, when it answered)


TOOL_HEAD, TOOL_TAIL, TEXT_CAP = 1_500, 500, 6_000
MIN_HEADINGS = 2  # fewer is garbage: the offline summary is used instead
SKELETON = "Now write the summary of the turns above, with exactly these headings, in this order:\n" + "\n".join(
    f"## {s}" for s in SECTIONS
)


class Transient(Exception):
    pass


class Cancelled(Exception):
    """Ctrl-C: every LLM call in flight is abandoned at once (no offline fallback, no retry)."""


CANCEL = threading.Event()  # set by SIGINT (see _install_sigint): all waits on the endpoint end
DEADLINE_SLACK = 10.0  # at most this many seconds (and at most timeout + 1) added to timeout x (retries + 1) + backoff


def _install_sigint() -> None:
    """Chain a SIGINT handler that sets CANCEL, so worker threads waiting on the endpoint give up at
    once instead of keeping the process alive until their requests end (--jobs). Not over SIG_IGN."""
    if threading.current_thread() is not threading.main_thread():
        return
    prev = signal.getsignal(signal.SIGINT)
    if getattr(prev, "_compactctl", False) or prev == signal.SIG_IGN:  # a process that ignores Ctrl-C keeps ignoring it
        return

    def handler(signum, frame):
        CANCEL.set()
        if callable(prev):
            prev(signum, frame)
        else:
            raise KeyboardInterrupt

    handler._compactctl = True  # type: ignore[attr-defined]
    with contextlib.suppress(ValueError):  # not the main interpreter thread
        signal.signal(signal.SIGINT, handler)


@dataclass
class Breaker:
    """A circuit breaker: after `threshold` failures in a row, no call for `cooldown` seconds. "In a row" is in the
    order the calls went out (`call`): with --jobs, what the calls that went out before a failure gave is waited for,
    so a few transcripts whose calls fail do not open it by ending together (a review saw 3 different outputs in 6
    runs: healthy transcripts after them summarized offline); an outage (every call failing) opens it as before. When
    it opens, the calls already out still give their answers: which transcripts fall back offline depends on timing
    (deciding each call on the outcomes of all earlier ones would cap the calls in flight at `threshold`)."""

    threshold: int = 3
    cooldown: float = 60.0
    open_until: float = 0.0
    sent: int = 0  # calls gone out, each one's ticket its place in that order
    seen: int = 0  # tickets whose outcome, and every earlier one's, is counted
    in_row: int = 0  # failures in a row up to `seen`
    outcomes: dict[int, bool | None] = field(default_factory=dict)  # of tickets after `seen` (None: neither)
    lock: threading.Lock = field(default_factory=threading.Lock)
    mine: threading.local = field(default_factory=threading.local)  # this thread's call's ticket, until recorded

    def allow(self) -> bool:
        with self.lock:
            return time.monotonic() >= self.open_until

    @contextlib.contextmanager
    def call(self) -> Iterator[None]:
        """Around one call: its ticket; a call that records nothing (a 404, a cancel) counts as neither outcome."""
        with self.lock:
            self.sent += 1
            self.mine.ticket = self.sent
        try:
            yield
        finally:
            if getattr(self.mine, "ticket", None) is not None:
                self.record(None)

    def record(self, ok: bool | None) -> None:
        ticket, self.mine.ticket = getattr(self.mine, "ticket", None), None
        with self.lock:
            self.outcomes[self.sent + 1 if ticket is None else ticket] = ok  # (no ticket: a call of its own, next)
            if ticket is None:
                self.sent += 1
            while self.seen + 1 in self.outcomes:
                self.seen += 1
                outcome = self.outcomes.pop(self.seen)
                if outcome is None:
                    continue
                self.in_row = 0 if outcome else self.in_row + 1
                if self.in_row >= self.threshold:
                    self.open_until = time.monotonic() + self.cooldown
                    self.in_row = 0


_breakers: dict[str, Breaker] = {}
_breakers_lock = threading.Lock()


def breaker_for(endpoint: str, cooldown: float) -> Breaker:
    with _breakers_lock:
        return _breakers.setdefault(endpoint, Breaker(cooldown=cooldown))


def _cap(text: str, head: int, tail: int) -> str:
    if len(text) <= head + tail:
        return text
    return f"{text[:head]}\n…[{len(text) - head - tail:,} chars elided]…\n{text[-tail:]}"


def serialize(messages: list[Message]) -> list[str]:
    """One block per message, secrets redacted first (a cut must never split a secret so that its
    rule no longer sees it), then capped."""
    out = []
    for m in messages:
        if is_output(m):  # a tool result, or an observation: the output of the text action before it (SWE-agent)
            body = _cap(redact(m.text()), TOOL_HEAD, TOOL_TAIL)
            cid = m.tool_call_id if isinstance(m.tool_call_id, str) else None
            label = "observation" if m.observation else f"tool result{' for ' + redact(cid) if cid else ''}"
            out.append(f"[{label}]\n{body}")
            continue
        parts = []
        text = redact(m.text())
        if text:
            parts.append(_cap(text, TEXT_CAP // 2, TEXT_CAP // 2))
        for c in m.tool_calls:
            cid = f" id={c.id}" if isinstance(c.id, str) and c.id else ""
            parts.append(f"-> call {c.name}({_cap(redact_json_text(c.arguments), 400, 100)}){cid}")
        out.append(f"[{m.role}]\n" + "\n".join(parts))
    return out


def chunk(blocks: list[str], counter: Counter, limit: int) -> list[str]:
    chunks: list[str] = []
    cur: list[str] = []
    used = 0
    for b in blocks:
        n = counter.text(b) + 2
        if cur and used + n > limit:
            chunks.append("\n\n".join(cur))
            cur, used = [], 0
        cur.append(b)
        used += n
    if cur:
        chunks.append("\n\n".join(cur))
    return chunks or [""]


def shown_url(url: str | None) -> str:
    """An endpoint as said on stderr: its credentials (`user:password@`, a token before `@`, `?api-key=`) redacted."""
    if not url:
        return "the OpenAI API"
    scheme, sep, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    if "@" in host:
        host = "[REDACTED]@" + host.rsplit("@", 1)[1]
    return redact(f"{scheme}{sep}{host}{slash}{path}")


def _refused_param(e: Exception) -> str | None:
    """The parameter of ours a 400 names as one the model does not take (`max_tokens`, `temperature`), if it does."""
    openai = sys.modules.get("openai")
    if openai is None or not isinstance(e, openai.BadRequestError):
        return None
    param = getattr(e, "param", None)
    return param if param in ("max_tokens", "temperature") else None


def _as_taken(request: dict, refused: frozenset[str]) -> dict:
    """`request` without the parameters the model refused: max_completion_tokens for max_tokens, its own temperature."""
    out = {k: v for k, v in request.items() if k not in refused}
    if "max_tokens" in refused:
        out["max_completion_tokens"] = request["max_tokens"]
    return out


def _refused_credentials(e: Exception) -> bool:
    """A 401 or 403 from the endpoint (an openai error: the package is imported once a call was made)."""
    openai = sys.modules.get("openai")
    return openai is not None and isinstance(e, (openai.AuthenticationError, openai.PermissionDeniedError))


def _quota_spent(e: Exception) -> bool:
    """A 429 that is no rate limit: the account's quota is spent (`insufficient_quota`); waiting never helps."""
    openai = sys.modules.get("openai")
    return (
        openai is not None
        and isinstance(e, openai.RateLimitError)
        and "insufficient_quota" in (getattr(e, "code", None), getattr(e, "type", None))
    )


def _not_found(e: Exception) -> bool:
    """A 404: the endpoint has no such model (a typo in --model) or no such path (--base-url without /v1)."""
    openai = sys.modules.get("openai")
    return openai is not None and isinstance(e, openai.NotFoundError)


class LLMSummarizer:
    name = "llm"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        fallback_model: str | None = None,
        timeout: float = 120.0,
        retries: int = 2,
        cache: SummaryCache | None = None,
        llm_context: int = 32_000,
        cooldown: float = 60.0,
        warn=None,
        max_in_flight: int = 1,
    ):
        self._slots = threading.BoundedSemaphore(max(1, max_in_flight))  # LLM calls in flight (--jobs)
        # No base URL given: $OPENAI_BASE_URL, as the openai client takes it: the endpoint the cache, the breaker and
        # the messages name is the one the calls go to.
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.model, self.fallback_model, self.base_url = model, fallback_model, base_url
        self._cache, self.llm_context = cache, llm_context
        self._open_cache: Callable[[], SummaryCache | None] | None = None  # from_options: opens the cache at its first use
        self._cache_lock = threading.Lock()
        # No key given: $OPENAI_API_KEY, as the openai client takes it (the CLI passes it), else a placeholder for a
        # local server that wants none (the client refuses to be made without one).
        key = api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
        self._client_args = {"base_url": base_url, "api_key": key, "timeout": timeout, "max_retries": retries}
        # The client is made by the first call (the openai package takes ~0.6 s to import): a run that makes
        # none (every transcript fits, or the cache answers) never imports it.
        self._client = None
        self._client_lock = threading.Lock()
        # Where the openai package is imported: the CLI's shared.loading, which freezes what the import made (a
        # collection no longer walks it, nor the one at exit: ~0.1 s); a library's caller keeps its collections as they are.
        self.loading: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext
        # Models the endpoint answered 404 for in this run: not asked again (with a working fallback, every
        # transcript paid a failed call for them).
        self._missing: set[str] = set()
        # Parameters a model refused in this run (OpenAI's reasoning models: max_tokens, temperature 0): not sent again.
        self._refused: dict[str, frozenset[str]] = {}
        # one call may wait at most this long in all, retries included (a server that drips bytes
        # resets the client's read timeout forever): then it counts as a timeout
        backoff = sum(min(8.0, 0.5 * 2**k) for k in range(retries))  # the openai client's sleeps between retries
        self.call_deadline = timeout * (retries + 1) + backoff + min(DEADLINE_SLACK, timeout + 1)
        CANCEL.clear()  # a new run: an earlier Ctrl-C that the caller handled no longer applies
        _install_sigint()
        self.breaker = breaker_for(base_url or "openai", cooldown)
        self.warn = warn or (lambda msg: None)

    @property
    def cache(self) -> SummaryCache | None:
        """The summary cache, opened at the first summary (open_cache: None, said, when it cannot be used)."""
        if self._open_cache is not None:
            with self._cache_lock:
                if self._open_cache is not None:
                    self._cache, self._open_cache = self._open_cache(), None
        return self._cache

    @cache.setter
    def cache(self, cache: SummaryCache | None) -> None:
        self._cache, self._open_cache = cache, None

    @property
    def client(self):
        """The OpenAI client, made (and the openai package imported) on first use; options it refuses (a
        malformed --base-url) are a usage error, not an endpoint failure to retry."""
        with self._client_lock:
            if self._client is None:
                with self.loading():
                    import openai

                try:
                    client = openai.OpenAI(**self._client_args)
                except Exception as e:  # noqa: BLE001 - whatever the client's own checks raise
                    raise UsageError(
                        f"the LLM client refused its options (--base-url {shown_url(self.base_url)!r}?): {type(e).__name__}: {self._said(str(e))}"
                    ) from e
                with self.loading():
                    # The chat resource's modules (~0.035 s) are imported at its first use: here, where the thread that
                    # makes the client waits for it anyway (in the lane, --jobs), not in the first call's thread, where
                    # they held back the first calls (the others waited on the import) while the lane went on.
                    client.chat.completions  # noqa: B018
                self._client = client
        return self._client

    @classmethod
    def from_options(cls, opts, model: str, warn=None) -> LLMSummarizer:
        for flag, value in (("--llm-model", opts.llm_model), ("--base-url", opts.base_url), ("--fallback-model", opts.fallback_model)):
            if isinstance(value, str) and without_surrogates(value) != value:  # bytes no UTF-8 decodes (a shell's $'\xff')
                raise UsageError(f"{flag} is not valid UTF-8: {without_surrogates(value)!r}")
        if isinstance(opts.api_key, str) and without_surrogates(opts.api_key) != opts.api_key:
            raise UsageError("the API key (--api-key or $OPENAI_API_KEY) is not valid UTF-8")
        s = cls(
            opts.llm_model or model,
            opts.base_url,
            opts.api_key,
            opts.fallback_model,
            opts.timeout,
            opts.retries,
            None,
            opts.llm_context,
            warn=warn,
            max_in_flight=opts.jobs,
        )
        if not opts.no_cache:

            def open_it():
                from ..cache import open_cache

                return open_cache(opts.cache_dir, warn)

            s._open_cache = open_it
        return s

    def _call(self, client, request: dict, deadline: float):
        """The request in a helper thread, waited for until `deadline` or Ctrl-C (CANCEL)."""
        box: dict = {}
        done = threading.Event()

        def target():
            try:
                box["resp"] = self._create(client, request)
            except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
                box["err"] = e
            finally:
                done.set()

        threading.Thread(target=target, daemon=True, name="compactctl-llm").start()
        while not done.wait(0.1):
            if CANCEL.is_set() or lane.stopped():
                raise Cancelled("interrupted")
            if time.monotonic() >= deadline:
                raise Transient(f"no complete answer within the deadline ({self.call_deadline:.0f} s)")
        if "err" in box:
            raise box["err"]
        return box["resp"]

    def _create(self, client, request: dict):
        """The chat completion, asked as the model takes it: one that answers 400 to `max_tokens` (the OpenAI API's
        reasoning models want max_completion_tokens) or to `temperature` 0 (only their default) is asked again without
        it, and so is every later request to it in the run. The cache key stays the request's."""
        model = request["model"]
        while True:
            refused = self._refused.get(model, frozenset())
            try:
                return client.chat.completions.create(**_as_taken(request, refused))
            except Exception as e:
                param = _refused_param(e)
                if param is None or param in refused:
                    raise
                self._refused[model] = refused | {param}

    def _slot(self, deadline: float) -> None:
        while not self._slots.acquire(timeout=0.1):
            if CANCEL.is_set() or lane.stopped():
                raise Cancelled("interrupted")
            if time.monotonic() >= deadline:
                raise Transient("the deadline passed while waiting for a free LLM slot")

    # -- one request, with cache, breaker, fallback
    def _answer(self, resp, model: str, stats: _CallStats) -> tuple[str, bool] | None:
        """The text of a chat completion that reads as a summary and whether it is whole (not cut at max_tokens or by
        a content filter: its unfinished last line is dropped, and it is not cached), or None (said in the warnings). An endpoint
        whose answers are not summaries counts as failing (the breaker stops paying for them)."""
        try:
            choice = resp.choices[0] if resp.choices else None
            text = _text_of(choice.message.content) if choice is not None else ""
            if not isinstance(text, str):
                raise TypeError(type(text).__name__)
            text = _without_reasoning(without_surrogates(text))  # a lone surrogate (valid JSON) cannot be encoded: U+FFFD
        except Exception:  # noqa: BLE001 - a 200 that is not a chat completion (HTML, truncated JSON)
            self.breaker.record(False)
            start = " ".join(self._said(str(resp)).split())[:120]
            stats["warnings"].append(f"{model}: the answer is not a chat completion (not JSON?): {start!r}")
            return None
        cut = _CUT_BY.get(str(getattr(choice, "finish_reason", None)), "")
        if len(parse_sections(text)) < MIN_HEADINGS:
            self.breaker.record(False)
            stats["warnings"].append(f"{model}: {_unusable(resp, text, cut, self._said)}")
            return None
        self.breaker.record(True)
        if cut:
            stats["warnings"].append(f"{model}: the answer was cut {cut} (its last line dropped; not cached)")
            text = text.rsplit("\n", 1)[0]
        return text, not cut

    def _said(self, text: str) -> str:
        """What the endpoint said, as a warning shows it (stderr, the report): without the API key, which an endpoint
        may quote back and the secret rules may not know ("invalid api key: my-local-key"), then redacted."""
        key = str(self._client_args["api_key"])
        return redact(text.replace(key, "[REDACTED]") if len(key) >= 8 and key != "not-needed" else text)

    def _key(self, request: dict) -> str:
        """The cache key: the request and the endpoint it goes to (two servers may serve one model name)."""
        from ..cache import key_of

        return key_of({**request, "endpoint": self.base_url or "openai"})

    def _cached(self, key: str, stats: _CallStats) -> str | None:
        """The cached answer to this request, if there is one that reads as a summary (a damaged entry is asked again)."""
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is None or len(parse_sections(hit)) < MIN_HEADINGS:
            return None
        stats["cache_hits"] += 1
        return hit

    def _complete(self, system: str, user: str, max_tokens: int, stats: _CallStats, deadline: float | None = None) -> str:
        # Every path to the endpoint passes here: the last safety net, for both messages (the system one holds
        # --focus and --instructions).
        system, user = redact(system), redact(user)
        models = [self.model] + ([self.fallback_model] if self.fallback_model else [])
        requests = {
            model: {
                "model": model,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
                "max_tokens": max_tokens,
                "temperature": 0,
            }
            for model in models
        }
        for model in models:  # a rerun makes no call: also when the fallback wrote the answer last time
            hit = self._cached(self._key(requests[model]), stats)
            if hit is not None:
                stats["models"].append(model)
                return hit
        return self._ask(models, requests, stats, deadline)

    def _known_missing(self, model: str, missing: list[str], stats: _CallStats) -> bool:
        """Whether the endpoint answered 404 for `model` earlier in this run (then it is not asked again)."""
        if model not in self._missing:
            return False
        missing.append(model)
        stats["warnings"].append(f"{model}: not asked (the endpoint answered 404 for it earlier in this run)")
        return True

    def _failed(self, model: str, e: Exception, missing: list[str], stats: _CallStats) -> None:
        """A call that raised: 401/403 and a spent quota stop the run; a 404 marks the model missing (a configuration
        error, not an outage: it must not open the breaker, which hides it); anything else counts against the endpoint."""
        if _refused_credentials(e):
            raise LLMAuthError(
                f"the LLM endpoint refused the credentials ({getattr(e, 'status_code', '?')}): check OPENAI_API_KEY and --base-url"
            ) from e
        if _quota_spent(e):  # every later call would fail the same way: each transcript summarized offline, paid for in retries
            raise LLMAuthError(
                f"the LLM endpoint {shown_url(self.base_url or 'https://api.openai.com/v1')} answered 429 insufficient_quota: "
                "the account's quota is spent; check its plan and billing, or run without --summarizer llm"
            ) from e
        stats["warnings"].append(f"{model}: {type(e).__name__}: {self._said(str(e))[:160]}")
        if _not_found(e):
            missing.append(model)
            self._missing.add(model)
        else:
            self.breaker.record(False)

    def _sent(self, client, model: str, request: dict, call_deadline: float, missing: list[str], stats: _CallStats):
        """The endpoint's response once a call slot is free (None: the model was found missing meanwhile)."""
        lane.leave()  # a run in threads (--jobs): the next transcript is prepared while this one waits
        self._slot(call_deadline)
        try:
            if self._known_missing(model, missing, stats):
                return None
            stats["calls"] += 1
            return self._call(client, request, call_deadline)
        except Exception as e:
            if _not_found(e):  # said before the slot is free: a call waiting for it must not ask this model
                self._missing.add(model)
            raise
        finally:
            self._slots.release()

    def _ask(self, models: list[str], requests: dict[str, dict], stats: _CallStats, deadline: float | None) -> str:
        """The first usable answer of the models in order (retries are the client's), cached; Transient if none."""
        # Making the client (the first call imports openai: seconds on a busy machine) does not count against the deadlines.
        started = time.monotonic()
        client = self.client
        if deadline is not None:
            deadline += time.monotonic() - started
        missing: list[str] = []  # models the endpoint answered 404 for
        for model in models:
            if self._known_missing(model, missing, stats):
                continue
            request = requests[model]
            call_deadline = time.monotonic() + self.call_deadline
            if deadline is not None:
                call_deadline = min(call_deadline, deadline)
            if time.monotonic() >= call_deadline:
                stats["warnings"].append(f"{model}: the transcript's LLM deadline has passed")
                break
            key = self._key(request)
            if not self.breaker.allow():
                raise Transient("circuit open: the endpoint failed repeatedly; pausing LLM calls")
            with self.breaker.call():
                try:
                    resp = self._sent(client, model, request, call_deadline, missing, stats)
                    if resp is None:  # answered 404 while this call waited for its slot
                        continue
                except Cancelled:
                    raise
                except Transient as e:
                    self.breaker.record(False)
                    stats["warnings"].append(f"{model}: {e}")
                    continue
                except Exception as e:  # noqa: BLE001 - 429/5xx/timeouts, and a 200 whose body is not JSON
                    self._failed(model, e, missing, stats)
                    continue
                answer = self._answer(resp, model, stats)
            if answer is None:
                continue
            text, whole = answer
            if model != self.model:
                stats["warnings"].append(f"fallback model {model} used")
            if self.cache is not None and whole:
                self.cache.put(key, text)
            stats["models"].append(model)
            return text
        if missing == models:  # a configuration error, not an outage: every transcript would be summarized offline
            raise LLMAuthError(
                f"the LLM endpoint {shown_url(self.base_url or 'https://api.openai.com/v1')} answered 404 for {' and '.join(dict.fromkeys(missing))}: "
                f"no such model, or no such path; check --llm-model (or --model){' and --fallback-model' if len(models) > 1 else ''} "
                f"and --base-url ({stats['warnings'][-1]})"
            )
        raise Transient("; ".join(stats["warnings"][-2:]) or "no usable answer")

    def summarize(self, req: SummaryRequest, counter: Counter) -> SummaryResult:
        from . import offline

        if threading.current_thread() is threading.main_thread():
            # A Ctrl-C its caller handled (a REPL, a notebook) no longer applies to what the main thread asks next; the
            # summaries worker threads begin after it still end at once (the CLI's --jobs work queued before it).
            CANCEL.clear()
        stats: _CallStats = {"calls": 0, "cache_hits": 0, "warnings": [], "models": []}
        facts = req.facts
        blocks = serialize(req.messages[req.head_end : req.tail_start])
        system = system_prompt(req.budget, req.focus, req.instructions)
        room = max(self.llm_context - req.budget - counter.text(system) - 1_500, 1_000)
        summary = facts.prior_summary
        parts = chunk(blocks, counter, max(room - req.budget, 1_000)) if summary else chunk(blocks, counter, room)
        if len(parts) > 1 and not summary:  # a part after the first carries the summary so far (at most the budget): room for it
            parts = chunk(blocks, counter, max(room - req.budget, 1_000))
        # The transcript's overall deadline: each part's call, and the fallback model's after it when there is one.
        deadline = time.monotonic() + self.call_deadline * len(parts) * (2 if self.fallback_model else 1)
        try:
            for part in parts:
                # The transcript first, the instructions last: models (small ones most) follow what they read last.
                last = redact(facts.last_request or "")
                ask = f"LATEST USER REQUEST (copy it verbatim under Active Task):\n{last}\n\n"
                if summary:
                    # An answer (or an earlier summary) over its budget is not sent on whole: redacted before it is trimmed,
                    # which may cut through a key (one without headings is cut at twice the budget in characters).
                    summary = within(redact(summary), counter, req.budget)
                    user = f"PREVIOUS SUMMARY:\n{summary}\n\nNEW TURNS:\n{part}\n\n{UPDATE_INSTRUCTIONS}\n\n{ask}{SKELETON}"
                else:
                    user = f"TURNS TO SUMMARIZE:\n{part}\n\n{ask}{SKELETON}"
                summary = self._complete(system, user, req.budget, stats, deadline)
        except Transient as e:
            self.warn(f"{req.transcript}: LLM summary failed ({e}); used the offline summarizer")
            text = offline.summarize(facts, counter, req.budget, req.focus)
            return SummaryResult(
                text, "offline (llm failed)", calls=stats["calls"], warnings=list(dict.fromkeys(stats["warnings"] + [str(e)]))
            )
        text, retention = guard(summary or "", facts, counter, req)
        return SummaryResult(
            text,
            "llm:" + "+".join(dict.fromkeys(stats["models"] or [self.model])),  # who wrote it: the fallback too
            cache_hit=stats["calls"] == 0 and stats["cache_hits"] > 0,
            calls=stats["calls"],
            retention=retention,
            warnings=stats["warnings"],
        )


_REASONING = re.compile(r"\A\s*<(think|thinking|reasoning)>.*?(?:</\1>|\Z)\s*", re.S | re.I)
_UNOPENED = re.compile(r"</(think|thinking|reasoning)>[ \t]*$", re.M | re.I)  # a draft's end tag, ending its line


def _without_reasoning(text: str) -> str:
    """A reasoning model's answer without the <think> draft it opens with (whose headings would be read first); the
    tag anywhere else is the summary's own text ("the parser drops <think> blocks"). A template that opens the draft
    in the prompt (DeepSeek-R1, QwQ served without a reasoning parser) leaves only its end tag: what comes before the
    first one ending a line, with no opening tag before it, is the draft when what follows it reads as a summary that
    writes again the first section the draft named."""
    if "<" not in text:
        return text
    rest = _REASONING.sub("", text, count=1)
    if rest != text:
        return rest
    end = _UNOPENED.search(text)
    if end is None or f"<{end.group(1).lower()}>" in text[: end.start()].lower():
        return text
    rest = text[end.end() :].lstrip()
    found = parse_sections(rest)
    if len(found) < MIN_HEADINGS:
        return text
    # A draft is followed by the whole summary: the first section the draft names (if any) is written again after the
    # tag. A summary's own line that ends with the tag ("... up to the first </think>") is not: the sections before
    # it are the summary's, kept.
    before = next(iter(parse_sections(text[: end.start()])), None)
    return rest if before is None or before in found else text


def _text_of(content) -> str:
    """A message's content as text: a string, or the "text" blocks of a list (Mistral's reasoning models answer
    [{"type": "thinking", ...}, {"type": "text", "text": ...}]: the thinking block is their draft, left out)."""
    if isinstance(content, list):
        blocks = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "".join(b for b in blocks if isinstance(b, str))
    return content or ""


# finish_reason -> how the answer was cut (Azure OpenAI's content filter stops an answer where it starts to filter)
_CUT_BY = {"length": "at max_tokens", "content_filter": "by the content filter"}


def _unusable(resp, text: str, cut: str, shown: Callable[[str], str]) -> str:
    """Why an answer is not a summary, with what the endpoint said (an error in a 200 body, the finish reason), as
    `shown` shows it."""
    extra = getattr(resp, "model_extra", None) or {}
    error = extra.get("error") if isinstance(extra, dict) else None
    said = f"; the endpoint said: {shown(str(error))[:160]!r}" if error else ""
    if not text.strip():
        message = getattr(resp.choices[0], "message", None) if resp.choices else None
        refusal, calls = getattr(message, "refusal", None), getattr(message, "tool_calls", None)
        reason = f"cut {cut} before any text" if cut else "an empty answer"
        if refusal and isinstance(refusal, str):
            reason = f"a refusal: {shown(refusal)[:160]!r}"
        elif calls:
            reason = "tool calls, no text"
        return f"{reason}{said}"
    start = " ".join(shown(text).split())[:160]
    return f"answer has {len(parse_sections(text))} of 13 sections{f' (cut {cut})' if cut else ''}: {start!r}{said}"
