"""The LLM summarizer: any OpenAI-compatible chat-completions endpoint, through the openai package.

- the middle is serialized with per-message caps that keep the start and the end of long outputs,
  secrets redacted; a middle larger than `llm_context` goes in chunks, each later chunk updating
  the summary so far (PREVIOUS SUMMARY + NEW TURNS), never cut;
- retries with backoff on 429/5xx/timeouts (the client's own, honouring retry-after), then the
  fallback model once, then the offline summarizer (the report says so); 401/403 stop the run;
- a circuit breaker per endpoint pauses calls after repeated transient failures;
- answers are cached by the exact request; a partly structured answer is completed from the offline
  summary; the retention guard adds the files, error lines, constraints and last ask the answer
  left out, and reports the share it kept.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ..cache import SummaryCache, key_of
from ..errors import LLMAuthError
from ..model import Message
from ..phases.summarize import SummaryRequest, SummaryResult
from ..tokens import Counter
from . import offline
from .facts import Facts
from .prompt import SECTIONS, UPDATE_INSTRUCTIONS, parse_sections, render, system_prompt
from .redact import redact

TOOL_HEAD, TOOL_TAIL, TEXT_CAP = 1_500, 500, 6_000
MIN_HEADINGS = 2  # fewer is garbage: the offline summary is used instead
SKELETON = "Now write the summary of the turns above, with exactly these headings, in this order:\n" + "\n".join(f"## {s}" for s in SECTIONS)


class Transient(Exception):
    pass


@dataclass
class Breaker:
    threshold: int = 3
    cooldown: float = 60.0
    failures: int = 0
    open_until: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def allow(self) -> bool:
        with self.lock:
            return time.monotonic() >= self.open_until

    def record(self, ok: bool) -> None:
        with self.lock:
            if ok:
                self.failures = 0
                return
            self.failures += 1
            if self.failures >= self.threshold:
                self.open_until = time.monotonic() + self.cooldown
                self.failures = 0


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
    """One block per message, capped, secrets redacted."""
    out = []
    for m in messages:
        if m.role == "tool":
            body = _cap(m.text(), TOOL_HEAD, TOOL_TAIL)
            out.append(redact(f"[tool result{' for ' + m.tool_call_id if m.tool_call_id else ''}]\n{body}"))
            continue
        parts = []
        text = m.text()
        if text:
            parts.append(_cap(text, TEXT_CAP // 2, TEXT_CAP // 2))
        for c in m.tool_calls:
            parts.append(f"-> call {c.name}({_cap(c.arguments, 400, 100)}){' id=' + c.id if c.id else ''}")
        out.append(redact(f"[{m.role}]\n" + "\n".join(parts)))
    return out


def chunk(blocks: list[str], counter: Counter, limit: int) -> list[str]:
    chunks, cur, used = [], [], 0
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


def key_facts(facts: Facts) -> dict[str, list[str]]:
    """What the retention guard checks for, by the section it belongs to."""
    return {
        "Relevant Files": list(facts.files),
        "Critical Context": facts.errors,
        "Constraints & Preferences": facts.constraints,
        "Active Task": [facts.last_request] if facts.last_request else [],
    }


def _norm(s: str) -> str:
    return " ".join(s.lower().split())


class LLMSummarizer:
    name = "llm"

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None, fallback_model: str | None = None,
                 timeout: float = 120.0, retries: int = 2, cache: SummaryCache | None = None, llm_context: int = 32_000,
                 cooldown: float = 60.0, warn=None, max_in_flight: int = 1):
        import openai

        self._slots = threading.BoundedSemaphore(max(1, max_in_flight))  # LLM calls in flight (--jobs)
        self.model, self.fallback_model, self.base_url = model, fallback_model, base_url
        self.cache, self.llm_context = cache, llm_context
        self.client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout, max_retries=retries)
        self.breaker = breaker_for(base_url or "openai", cooldown)
        self.warn = warn or (lambda msg: None)
        self._openai = openai

    @classmethod
    def from_options(cls, opts, model: str, warn=None) -> LLMSummarizer:
        cache = None if opts.no_cache else SummaryCache(opts.cache_dir)
        return cls(opts.llm_model or model, opts.base_url, opts.api_key, opts.fallback_model, opts.timeout, opts.retries,
                   cache, opts.llm_context, warn=warn, max_in_flight=opts.jobs)

    # -- one request, with cache, breaker, fallback
    def _complete(self, system: str, user: str, max_tokens: int, stats: dict) -> str:
        for model in [self.model] + ([self.fallback_model] if self.fallback_model else []):
            request = {"model": model, "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
                       "max_tokens": max_tokens, "temperature": 0}
            key = key_of(request)
            if self.cache is not None:
                hit = self.cache.get(key)
                if hit is not None:
                    stats["cache_hits"] += 1
                    return hit
            if not self.breaker.allow():
                raise Transient("circuit open: the endpoint failed repeatedly; pausing LLM calls")
            try:
                stats["calls"] += 1
                with self._slots:
                    resp = self.client.chat.completions.create(**request)
            except (self._openai.AuthenticationError, self._openai.PermissionDeniedError) as e:
                raise LLMAuthError(f"the LLM endpoint refused the credentials ({e.status_code}): check OPENAI_API_KEY and --base-url") from e
            except (self._openai.RateLimitError, self._openai.APITimeoutError, self._openai.APIConnectionError,
                    self._openai.InternalServerError, self._openai.APIStatusError) as e:
                self.breaker.record(False)
                stats["warnings"].append(f"{model}: {type(e).__name__}: {str(e)[:160]}")
                continue
            self.breaker.record(True)
            text = (resp.choices[0].message.content or "") if resp.choices else ""
            if len(parse_sections(text)) < MIN_HEADINGS:
                start = " ".join(text.split())[:160]
                stats["warnings"].append(f"{model}: answer has {len(parse_sections(text))} of 13 sections: {start!r}")
                continue
            if model != self.model:
                stats["warnings"].append(f"fallback model {model} used")
            if self.cache is not None:
                self.cache.put(key, text)
            return text
        raise Transient("; ".join(stats["warnings"][-2:]) or "no usable answer")

    def summarize(self, req: SummaryRequest, counter: Counter) -> SummaryResult:
        stats = {"calls": 0, "cache_hits": 0, "warnings": []}
        facts = req.facts
        blocks = serialize(req.messages[req.head_end:req.tail_start])
        system = system_prompt(req.budget, req.focus, req.instructions)
        room = max(self.llm_context - req.budget - counter.text(system) - 1_500, 1_000)
        summary = facts.prior_summary
        try:
            for part in chunk(blocks, counter, room):
                # The transcript first, the instructions last: models (small ones most) follow what they read last.
                last = redact(facts.last_request or "")
                ask = f"LATEST USER REQUEST (copy it verbatim under Active Task):\n{last}\n\n"
                if summary:
                    user = f"PREVIOUS SUMMARY:\n{redact(summary)}\n\nNEW TURNS:\n{part}\n\n{UPDATE_INSTRUCTIONS}\n\n{ask}{SKELETON}"
                else:
                    user = f"TURNS TO SUMMARIZE:\n{part}\n\n{ask}{SKELETON}"
                summary = self._complete(system, user, req.budget, stats)
        except Transient as e:
            self.warn(f"{req.transcript}: LLM summary failed ({e}); used the offline summarizer")
            text = offline.summarize(facts, counter, req.budget, req.focus)
            return SummaryResult(text, "offline (llm failed)", calls=stats["calls"], warnings=list(dict.fromkeys(stats["warnings"] + [str(e)])))
        text, retention = self._guard(summary or "", facts, counter, req)
        return SummaryResult(text, f"llm:{self.model}", cache_hit=stats["calls"] == 0 and stats["cache_hits"] > 0,
                             calls=stats["calls"], retention=retention, warnings=stats["warnings"])

    def _guard(self, answer: str, facts: Facts, counter: Counter, req: SummaryRequest) -> tuple[str, float | None]:
        """Complete missing sections from the offline summary, put back missing key facts, fit the budget."""
        secs = parse_sections(answer)
        low = _norm(answer)
        wanted = key_facts(facts)
        total = sum(len(v) for v in wanted.values())
        kept = sum(1 for v in wanted.values() for f in v if _norm(f) in low)
        retention = kept / total if total else None
        empty = [s for s in SECTIONS if s not in secs or not secs[s].strip()]
        if empty:  # sections the answer left out are filled from the offline summary
            fallback = parse_sections(offline.summarize(facts, counter, req.budget, req.focus))
            for s in empty:
                secs[s] = fallback.get(s, "None")
        if facts.last_request:
            secs["Active Task"] = offline._cap(facts.last_request, counter, offline.ANCHOR_CAP)
        for section, items in wanted.items():
            if section == "Active Task":
                continue
            missing = [f for f in items if _norm(f) not in _norm(secs.get(section, ""))]
            if missing:
                body = secs.get(section, "")
                body = "" if body.strip() == "None" else body
                secs[section] = (body + "\n" if body else "") + "\n".join(f"- {f}" for f in missing)
        text = render(secs)
        while counter.text(text) > req.budget:  # trim the longest section's oldest lines, never the anchors
            name = max((s for s in SECTIONS if s not in ("Active Task", "Constraints & Preferences")), key=lambda s: len(secs.get(s, "")))
            lines = secs[name].split("\n")
            if len(lines) <= 1:
                break
            secs[name] = "\n".join(lines[1:])
            text = render(secs)
        return text, retention
