"""LLM providers behind one async interface: Anthropic, OpenAI-compatible servers, replay/record, none.

    llm = make_llm("anthropic")                      # or "openai:http://localhost:8000#Qwen2-7B", "replay:DIR", "none"
    reply = await llm.complete(prompt, temperature=EXPLORATION_TEMPERATURE, max_tokens=256)
    reply.text, reply.input_tokens, reply.output_tokens, llm.usage

Every call is charged to the instance's `usage` and to the current question's cost counter
(`kgfed.cache.costs`: `llm_calls`, `input_tokens`, `output_tokens`). Provider SDKs are imported
only when a provider is built, so importing this module is cheap.

Every provider sends through its `LLMGate` (`llm.gate`): at most `concurrency` calls in flight to
the LLM for the whole run (`make_llm(spec, concurrency=N)`, the CLI's `--llm-concurrency`), and the
pauses the LLM asks for shared by every call. A 429 (rate limit), 503 (unavailable) or 529
(Anthropic's overloaded) pauses the whole gate for the answer's `Retry-After` (else a backoff that
doubles with every busy answer in a row), and the call is sent again: up to `max_attempts` times and
`max_wait` seconds a call, so a busy LLM slows a run down instead of failing its questions. A 429
that will not clear by waiting (OpenAI's `insufficient_quota`, Anthropic's spend limit) or a
`Retry-After` beyond `max_retry_after` is a one-line `LLMError` at once.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import random
import time
from abc import ABC, abstractmethod
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from ...cache.costs import charge
from ...endpoints.client import first_line, parse_retry_after
from ...sparql.errors import EndpointError, LLMError

log = logging.getLogger("kgfed.llm")
T = TypeVar("T")

# Temperatures the papers use: ToG/PoG/HydraRAG explore at 0.4 and reason (prune paths, judge
# sufficiency, answer) at 0; ToG-2 uses 0 throughout. ToG's own code also scores relations and
# entities at its exploration temperature (0.4).
EXPLORATION_TEMPERATURE = 0.4
PRUNING_TEMPERATURE = 0.0
ANSWER_TEMPERATURE = 0.0
DEFAULT_MAX_TOKENS = 256  # ToG's --max_length
DEFAULT_ANTHROPIC_MODEL = "claude-haiku-4-5"
SPEC_HELP = "use anthropic[:MODEL], openai:URL[#MODEL], local:PATH.gguf, replay:DIR, record:DIR:SPEC, gold (kgfed run) or none"
# Answers that mean "busy, ask again later": the whole gate pauses (Anthropic's 529 is its "overloaded_error").
BUSY_STATUSES = frozenset({429, 503, 529})
# Answers the provider's SDK would retry on their own (timeouts, conflicts, other 5xx): retried per call, a few times.
RETRY_STATUSES = frozenset({408, 409, 500, 502, 504})
# 429s that waiting does not clear: OpenAI's exhausted quota, Anthropic's monthly spend limit.
NOT_RETRYABLE = frozenset({"insufficient_quota", "billing_hard_limit_reached", "enforced_spend_limit_reached"})


@dataclass(frozen=True)
class Completion:
    """One reply: its text and the tokens the provider counted."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class Usage:
    """Running totals of one provider instance; `snapshot()`/`since()` give per-question deltas."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, completion: Completion) -> None:
        self.calls += 1
        self.input_tokens += completion.input_tokens
        self.output_tokens += completion.output_tokens

    def snapshot(self) -> Usage:
        return replace(self)

    def since(self, earlier: Usage) -> Usage:
        return Usage(self.calls - earlier.calls, self.input_tokens - earlier.input_tokens,
                     self.output_tokens - earlier.output_tokens)

    def reset(self) -> None:
        self.calls = self.input_tokens = self.output_tokens = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


class Busy(Exception):
    """A provider's "ask again later" (HTTP 429/503/529, or a transient failure): handled by `LLMGate`.

    `shared`: the LLM as a whole is busy (every call pauses); otherwise only this call is retried
    (a dropped connection, a 500), at most `LLMGate.retries` times. `retry_after`: seconds the LLM
    asked for (Retry-After), None when it named none.
    """

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None, shared: bool = True):
        super().__init__(message)
        self.message, self.status, self.retry_after, self.shared = message, status, retry_after, shared


class _Places:
    """A semaphore whose size can change while it is held (the gate's working cap); waiters in arrival order."""

    def __init__(self, size: int | None):
        self.size = size  # None: no cap
        self.held = 0
        self._waiters: deque[asyncio.Future] = deque()

    def _wake(self) -> None:
        while self._waiters and (self.size is None or self.held < self.size):
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.held += 1
                waiter.set_result(None)

    def resize(self, size: int | None) -> None:
        self.size = size
        self._wake()

    async def acquire(self) -> None:
        if not self._waiters and (self.size is None or self.held < self.size):
            self.held += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # the place was handed over just before the cancel
                self.release()
            raise

    def release(self) -> None:
        self.held -= 1
        self._wake()


class LLMGate:
    """Calls in flight to one LLM, and the pauses it asked for, shared by every question of a run.

    `concurrency` caps the calls sent at once (None: no cap of kgfed's own; the provider's HTTP
    limits still hold); calls waiting for the cap go in arrival order. A `Busy` answer pauses every
    call for its Retry-After, or for a backoff that doubles with each busy answer in a row (from
    `backoff` up to `max_backoff` seconds, with jitter), and the call is sent again; a call gives up
    with a one-line `LLMError` after `max_attempts` sends or `max_wait` seconds of waiting, and at
    once when the LLM asks for more than `max_retry_after` seconds. A 429 that comes while other
    calls are out also shows where the LLM's own limit is: the gate's working cap (`cap`) drops to
    the calls the LLM was still answering (those in flight but this one), and grows back by one after
    each `recover` seconds without a busy answer, up to `concurrency` (or without end when there is
    none), so a cap set above the LLM's costs a pause or two, not one per call. (503/529 pause and
    back off without narrowing: an overloaded or loading server says nothing about a cap.) `stats` counts `calls`, `busy`, `retries`,
    `paused` (seconds) and the `peak` of calls in flight.
    """

    def __init__(self, concurrency: int | None = None, *, max_attempts: int = 8, max_wait: float = 600.0,
                 max_retry_after: float = 300.0, backoff: float = 1.0, max_backoff: float = 60.0, retries: int = 2,
                 recover: float = 60.0):
        if concurrency is not None and concurrency < 1:
            raise LLMError(f"--llm-concurrency {concurrency} is not a number of calls: give 1 or more (or leave it out)")
        self.concurrency = concurrency
        self.max_attempts, self.max_wait, self.max_retry_after = max_attempts, max_wait, max_retry_after
        self.backoff, self.max_backoff, self.retries = backoff, max_backoff, retries
        self.recover = recover
        self._places = _Places(concurrency)
        self._last_busy = 0.0
        self._paused_until = 0.0
        self._strikes = 0  # busy answers in a row, gate-wide: the shared backoff grows with them
        self.in_flight = 0
        self.stats: Counter[str] = Counter()

    @property
    def cap(self) -> int | None:
        """The working cap: `concurrency`, or lower after busy answers (None: no cap)."""
        return self._places.size

    def _narrow(self) -> None:
        """A 429 came while `in_flight` calls were out, this one among them: the LLM takes the others."""
        self._last_busy = time.monotonic()
        working = max(1, self.in_flight - 1)
        if self._places.size is None or working < self._places.size:
            self._places.resize(working)
            self.stats["cap"] = working
            log.info("the LLM answered busy with %d calls in flight: at most %d at once from now on", self.in_flight, working)

    def _widen(self) -> None:
        """One more call at once after `recover` seconds without a busy answer (up to `concurrency`)."""
        size = self._places.size
        if size is None or size == self.concurrency or not self._last_busy:
            return
        if time.monotonic() - self._last_busy >= self.recover:
            self._last_busy = time.monotonic()
            self._places.resize(size + 1 if self.concurrency is None or size < self.concurrency else self.concurrency)
            self.stats["cap"] = self._places.size

    def pause(self, seconds: float) -> None:
        """Hold every call of this LLM for `seconds` (counted from now; a longer pause already set wins)."""
        until = time.monotonic() + max(0.0, seconds)
        if until > self._paused_until:
            self.stats["paused"] += until - max(self._paused_until, time.monotonic())
            self._paused_until = until

    async def _wait_pause(self) -> None:
        while (delay := self._paused_until - time.monotonic()) > 0:
            await asyncio.sleep(delay)

    def _shared_delay(self) -> float:
        return random.uniform(0.5, 1.0) * min(self.max_backoff, self.backoff * 2 ** min(self._strikes - 1, 30))

    async def call(self, send: Callable[[], Awaitable[T]], what: str = "the LLM") -> T:
        """`await send()` within the cap and the shared pauses, sent again on `Busy` within the bounds."""
        waited = 0.0
        attempt = 0
        while True:
            attempt += 1
            await self._wait_pause()
            try:
                await self._places.acquire()
                try:
                    await self._wait_pause()  # another call may have paused the LLM while this one queued
                    return await self._send(send)
                finally:
                    self._places.release()
            except Busy as busy:
                self.stats["busy"] += 1
                if busy.retry_after is not None and busy.retry_after > self.max_retry_after:
                    raise LLMError(f"{what} asks to wait {busy.retry_after:.0f} s ({busy.message}): more than "
                                   f"{self.max_retry_after:.0f} s, so the run stops here; run it again later "
                                   "(answered questions are kept)") from None
                if busy.shared:
                    self._strikes += 1
                    delay = busy.retry_after if busy.retry_after is not None else self._shared_delay()
                    limit = self.max_attempts
                else:
                    delay = random.uniform(0.5, 1.0) * min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
                    limit = self.retries + 1
                if attempt >= limit or waited + delay > self.max_wait:
                    raise LLMError(f"{what} stayed busy ({busy.message}) after {attempt} attempts and {waited:.0f} s "
                                   "of waiting: lower --llm-concurrency, or run again later (answered questions are kept)") from None
                waited += delay
                self.stats["retries"] += 1
                log.info("%s: %s; trying again in %.1f s (attempt %d)", what, busy.message, delay, attempt + 1)
                if busy.shared:
                    self.pause(delay)  # every call of the run waits, not only this one
                else:
                    await asyncio.sleep(delay)

    async def _send(self, send: Callable[[], Awaitable[T]]) -> T:
        self.in_flight += 1
        self.stats["calls"] += 1
        self.stats["peak"] = max(self.stats["peak"], self.in_flight)
        try:
            result = await send()
        except Busy as busy:
            if busy.status == 429 and self.in_flight > 1:  # a rate limit met with other calls out: the LLM's own cap
                self._narrow()
            raise
        finally:
            self.in_flight -= 1
        self._strikes = 0
        self._widen()
        return result


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from `retry-after-ms` (Anthropic, OpenAI) or `Retry-After` (seconds, decimals or an HTTP-date)."""
    lower = {k.lower(): v for k, v in headers.items()}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = (lower.get(name) or "").strip()
        if not value:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            if name == "retry-after":
                return parse_retry_after(value)
    return None


def busy_answer(status: int, headers: Mapping[str, str], body: str, who: str) -> Busy | None:
    """The `Busy` of an error answer that asking again later may cure, None for one it will not.

    Shapes: Anthropic `{"type": "error", "error": {"type": "rate_limit_error" | "overloaded_error", "message"},
    "request_id"}` (429/529, `retry-after`); OpenAI-compatible `{"error": {"message", "type", "code"}}` (429 with
    `Retry-After`, 503), llama.cpp's `{"error": {"code": 503, "message": "Loading model"}}`. A header
    `x-should-retry: false` (Anthropic's) and the quota/spend-limit codes in `NOT_RETRYABLE` are final.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    if lower.get("x-should-retry", "").strip().lower() == "false":
        return None
    if status not in BUSY_STATUSES | RETRY_STATUSES and lower.get("x-should-retry", "").strip().lower() != "true":
        return None
    error = _error_object(body)
    codes = {str(error.get(k)) for k in ("type", "code") if error.get(k) is not None}
    details = error.get("details")
    if isinstance(details, dict) and details.get("error_code"):
        codes.add(str(details["error_code"]))
    if codes & NOT_RETRYABLE:
        return None
    message = f"{who} answered HTTP {status}" + (f" {error['type']}" if isinstance(error.get("type"), str) else "")
    if error.get("message"):
        message += f": {first_line(str(error['message']), 120)}"
    return Busy(message, status=status, retry_after=retry_after(headers), shared=status in BUSY_STATUSES)


def _error_object(body: str) -> dict:
    try:
        doc = json.loads(body)
    except ValueError:
        return {"message": first_line(body)} if body.strip() else {}
    error = doc.get("error", doc) if isinstance(doc, dict) else None
    return error if isinstance(error, dict) else ({"message": str(error)} if error else {})


class LLM(ABC):
    """The interface methods use. `available` is False for the LLM-free provider."""

    name = "llm"
    available = True

    def __init__(self, model: str = ""):
        self.model = model
        self.usage = Usage()
        self.gate = LLMGate()

    def limit(self, concurrency: int | None) -> None:
        """Cap the calls in flight to this LLM at `concurrency` for everything that shares the provider
        (a run's questions; `--llm-concurrency`). Set it before the first call."""
        self.gate = LLMGate(concurrency)

    def describe(self) -> str:
        """The LLM as messages name it."""
        return f"the {self.name} LLM" + (f" ({self.model})" if self.model else "")

    async def complete(self, prompt: str, *, temperature: float, max_tokens: int = DEFAULT_MAX_TOKENS,
                       system: str | None = None, stop: list[str] | None = None) -> Completion:
        """Send one user prompt (plus an optional system message) and return the reply.

        `stop` sequences end the reply early (a small model otherwise invents the next "Q: ..." and
        runs to `max_tokens`); providers that take none ignore it, and it is passed on only when given.
        The call waits for a place under the gate's cap and for any pause the LLM asked for (`LLMGate`).
        """
        extra = {"stop": list(stop)} if stop else {}
        completion = await self.gate.call(lambda: self._complete(prompt, temperature=float(temperature),
                                                                 max_tokens=max_tokens, system=system, **extra),
                                          self.describe())
        self.usage.add(completion)
        charge("llm_calls")
        charge("input_tokens", completion.input_tokens)
        charge("output_tokens", completion.output_tokens)
        return completion

    @abstractmethod
    async def _complete(self, prompt: str, *, temperature: float, max_tokens: int, system: str | None) -> Completion:
        """The provider call itself, without accounting."""

    async def aclose(self) -> None:  # noqa: B027 (a no-op default on purpose: not every provider holds connections)
        """Release connections (no-op by default)."""

    async def __aenter__(self) -> LLM:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}:{self.model}>"


def llm_ready(llm: LLM | None) -> bool:
    """Whether `llm` answers: False without one and for `NoLLM` (then methods run LLM-free). The one test of it."""
    return llm is not None and bool(getattr(llm, "available", False))


class NoLLM(LLM):
    """The LLM-free provider: `available` is False and `complete` raises; methods fall back to SBERT/BM25."""

    name = "none"
    available = False

    async def _complete(self, prompt: str, *, temperature: float, max_tokens: int, system: str | None, **_) -> Completion:
        raise LLMError("this step needs an LLM but none is configured (--llm none): "
                       "pass --llm anthropic, openai:URL[#MODEL] or replay:DIR, or use an LLM-free method (sbert/bm25)")


class AnthropicLLM(LLM):
    """Claude through the official `anthropic` SDK's async client; the key comes from ANTHROPIC_API_KEY.

    The SDK (2.x, API version 2026-10-21) has no sampling parameters and the API rejects them, so
    `temperature` is not sent unless `send_temperature=True` (for gateways or older API versions
    that still take it, passed as an extra body field).
    """

    name = "anthropic"

    def __init__(self, model: str = DEFAULT_ANTHROPIC_MODEL, *, api_key: str | None = None,
                 base_url: str | None = None, max_retries: int = 2, timeout: float = 120.0,
                 send_temperature: bool = False):
        super().__init__(model or DEFAULT_ANTHROPIC_MODEL)
        api_key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not api_key:
            raise LLMError("ANTHROPIC_API_KEY is not set: export ANTHROPIC_API_KEY=sk-ant-... "
                           "(or use --llm openai:URL, replay:DIR or none)")
        try:
            import anthropic
        except ImportError:
            raise LLMError("the anthropic SDK is not installed: pip install 'kgfed[llm]'") from None
        self._sdk = anthropic
        # The SDK's own retries (2 by default: 408/409/429/5xx and dropped connections, each call on its own,
        # Retry-After honoured) are off: the gate retries instead, so one 429 or 529 pauses every call of the run.
        self._client = anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout)
        self.max_retries = max_retries
        self.gate.retries = max_retries
        self.send_temperature = send_temperature

    def limit(self, concurrency: int | None) -> None:
        super().limit(concurrency)
        self.gate.retries = self.max_retries

    def describe(self) -> str:
        return f"the Anthropic API ({self.model})"

    async def _complete(self, prompt: str, *, temperature: float, max_tokens: int, system: str | None,
                        stop: list[str] | None = None) -> Completion:
        sdk = self._sdk
        kwargs: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens,
                                  "messages": [{"role": "user", "content": prompt}]}
        if system:
            kwargs["system"] = system
        if stop:
            kwargs["stop_sequences"] = list(stop)
        if self.send_temperature:
            kwargs["extra_body"] = {"temperature": temperature}
        try:
            message = await self._client.messages.create(**kwargs)
        except sdk.AuthenticationError:
            raise LLMError("Anthropic rejected the API key (HTTP 401): check ANTHROPIC_API_KEY") from None
        except sdk.APIStatusError as exc:
            busy = busy_answer(exc.status_code, exc.response.headers, exc.response.text, "the Anthropic API")
            if busy is not None:
                raise busy from None
            said = getattr(exc, "api_message", None) or exc.message  # the body's error.message, else the SDK's text
            raise LLMError(f"Anthropic API answered HTTP {exc.status_code} for model {self.model}: "
                           f"{first_line(str(said))}; check the model name, key, quota and request size") from None
        except sdk.APIConnectionError as exc:
            if self.gate.retries:
                raise Busy(f"cannot reach the Anthropic API ({exc.__class__.__name__})", shared=False) from None
            raise LLMError(f"cannot reach the Anthropic API ({exc.__class__.__name__}): check the network or ANTHROPIC_BASE_URL") from None
        text = "".join(getattr(block, "text", "") for block in message.content if getattr(block, "type", "") == "text")
        return Completion(text, int(message.usage.input_tokens or 0), int(message.usage.output_tokens or 0))

    async def aclose(self) -> None:
        await self._client.close()


class OpenAICompatibleLLM(LLM):
    """Any server speaking OpenAI's `/v1/chat/completions` (vLLM, Ollama, llama.cpp, LM Studio).

    The model defaults to the server's first `/v1/models` entry (as ToG does for local servers);
    the API key (optional) comes from `api_key` or OPENAI_API_KEY and is sent as a Bearer token.
    HTTP goes through kgfed's `HttpClient` (retries, 429 Retry-After, per-host cap).
    """

    name = "openai"

    def __init__(self, base_url: str, model: str | None = None, *, api_key: str | None = None,
                 client=None, timeout: float = 300.0):
        super().__init__(model or "")
        if not base_url.startswith(("http://", "https://")):
            raise LLMError(f"{base_url!r} is not an http(s) URL: use --llm openai:http://HOST:PORT[#MODEL]")
        base = base_url.rstrip("/")
        self.base_url = base if base.endswith("/v1") else base + "/v1"
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.timeout = timeout
        self._client = client
        self._owns_client = client is None
        self._model_lock = asyncio.Lock()

    @property
    def host(self) -> str:
        from urllib.parse import urlsplit

        return urlsplit(self.base_url).netloc.rpartition("@")[2]  # as HttpClient keys its hosts

    def describe(self) -> str:
        return f"the LLM server at {self.base_url}"

    def limit(self, concurrency: int | None) -> None:
        """The gate's cap, and the HTTP client's cap for the LLM's host raised to match (its default is 16)."""
        super().limit(concurrency)
        if concurrency and self._client is not None and hasattr(self._client, "set_limit"):
            self._client.set_limit(self.host, max(concurrency, self._client.limit_for(self.host)))

    def _http(self):
        if self._client is None:
            from ...endpoints.client import HttpClient

            self._client = HttpClient(timeout=self.timeout, retries=2, per_host=max(16, self.gate.concurrency or 0))
        return self._client

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    async def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        url = self.base_url + path
        data = json.dumps(body).encode() if body is not None else None
        try:  # busy answers come back to the gate (shared pause); the client retries dropped connections and 5xx
            response = await self._http().request(method, url, data=data, headers=self._headers(), timeout=self.timeout,
                                                  passthrough=BUSY_STATUSES)
        except EndpointError as exc:
            raise LLMError(f"the LLM server at {self.base_url} failed: {exc}; start it or fix the URL in --llm openai:URL") from None
        if response.status in BUSY_STATUSES:
            busy = busy_answer(response.status, response.headers, response.text(), self.describe())
            if busy is not None:
                raise busy
        if response.status >= 400:
            raise LLMError(f"{method} {url} answered HTTP {response.status}: {_error_message(response.text())}; "
                           "check the model name, key and request size")
        try:
            return json.loads(response.body)
        except ValueError:
            raise LLMError(f"{method} {url} returned malformed JSON: is this an OpenAI-compatible server?") from None

    async def resolve_model(self) -> str:
        """The configured model, or the server's first advertised model."""
        async with self._model_lock:
            if not self.model:
                listing = await self._call("GET", "/models")
                models = [m.get("id") for m in listing.get("data", []) if isinstance(m, dict) and m.get("id")]
                if not models:
                    raise LLMError(f"{self.base_url}/models lists no model: name one with --llm openai:URL#MODEL")
                self.model = models[0]
        return self.model

    async def _complete(self, prompt: str, *, temperature: float, max_tokens: int, system: str | None,
                        stop: list[str] | None = None) -> Completion:
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        body = {"model": await self.resolve_model(), "messages": messages, "temperature": temperature, "max_tokens": max_tokens}
        if stop:
            body["stop"] = list(stop)
        reply = await self._call("POST", "/chat/completions", body)
        try:
            text = reply["choices"][0]["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            raise LLMError(f"{self.base_url}/chat/completions answered without choices[0].message: "
                           f"{first_line(json.dumps(reply))}") from None
        usage = reply.get("usage") or {}
        return Completion(text, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))

    async def aclose(self) -> None:
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None


def prompt_limits(kind: str, table: Mapping[str, tuple[int, Sequence[str]]], *, enabled: bool, max_tokens: int) -> dict[str, Any]:
    """`max_tokens` (and `stop`) for one prompt kind of a method, as keyword arguments for `ask`.

    Off (`enabled` False, the default of every method's `stop_sequences` parameter): the method's
    `max_tokens` and no stop, as the papers' code sends, so replay keys stay those of older recordings.
    On: `min(max_tokens, cap)` and the kind's stop sequences from `table` (kind -> (cap, stops)), for a
    small local model that otherwise invents the next example and runs to the token limit.
    """
    if not enabled:
        return {"max_tokens": max_tokens}
    cap, stop = table[kind]
    return {"max_tokens": min(max_tokens, cap), "stop": list(stop) or None}


async def ask(llm: LLM, prompt: str, *, temperature: float, max_tokens: int = DEFAULT_MAX_TOKENS,
              stop: Sequence[str] | None = None, system: str | None = None, json_mode: bool = False) -> Any:
    """One LLM call for a method: the reply text, or with `json_mode` the reply's first JSON object.

    Accounting is `LLM.complete`'s (provider usage; the question's `llm_calls`/`input_tokens`/
    `output_tokens`). In JSON mode a reply without a readable object gives `{}` (each method then takes
    its paper's fallback) and adds 1 to the question's `cost["parse_fallbacks"]`; a reply cut at
    `max_tokens` inside the object keeps the fields written before the cut (`prompts.json_object`).
    """
    reply = await llm.complete(prompt, temperature=temperature, max_tokens=max_tokens, system=system,
                               stop=list(stop) if stop else None)
    if not json_mode:
        return reply.text
    from .prompts import json_object

    value = json_object(reply.text)
    if value is None:
        charge("parse_fallbacks")
        return {}
    return value


def prompt_key(prompt: str, *, system: str | None, temperature: float, stop: list[str] | None = None) -> str:
    """sha256 naming a recorded reply: the prompt, system message, temperature and stop sequences (not the model).

    Stop sequences enter the key only when given, so recordings made without them keep their names.
    """
    fields: dict[str, Any] = {"prompt": prompt, "system": system, "temperature": float(temperature)}
    if stop:
        fields["stop"] = list(stop)
    payload = json.dumps(fields, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ReplayLLM(LLM):
    """Replies recorded as `<sha256>.json` files in a directory.

    Replay only (`record_with=None`): a prompt without a file raises `LLMError` naming its hash.
    Record (`record_with=provider`): files that exist are replayed, misses go to the provider and
    are written. Recorded token counts are charged again on replay, so costs stay comparable.
    """

    name = "replay"

    def __init__(self, directory: str | os.PathLike, *, record_with: LLM | None = None):
        if isinstance(record_with, (ReplayLLM, NoLLM)):
            raise LLMError("record needs a real provider to record from: use record:DIR:anthropic or record:DIR:openai:URL")
        super().__init__(record_with.model if record_with else "replay")
        self.directory = Path(directory)
        self.inner = record_with
        if record_with is None and not self.directory.is_dir():
            raise LLMError(f"replay directory {self.directory} does not exist: record replies first with "
                           f"--llm record:{self.directory}:<provider spec>")
        if record_with is not None:
            self.name = "record"
            self.directory.mkdir(parents=True, exist_ok=True)
        self.stats: Counter[str] = Counter()

    def path_for(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    async def _complete(self, prompt: str, *, temperature: float, max_tokens: int, system: str | None,
                        stop: list[str] | None = None) -> Completion:
        key = prompt_key(prompt, system=system, temperature=temperature, stop=stop)
        path = self.path_for(key)
        if path.is_file():
            self.stats["hits"] += 1
            return _read_recording(path)
        self.stats["misses"] += 1
        if self.inner is None:
            raise LLMError(f"no recorded LLM reply for prompt {key} in {self.directory}: record it with "
                           f"--llm record:{self.directory}:<provider spec> (e.g. record:{self.directory}:anthropic)")
        extra = {"stop": list(stop)} if stop else {}
        inner = self.inner
        completion = await inner.gate.call(lambda: inner._complete(prompt, temperature=temperature, max_tokens=max_tokens,
                                                                    system=system, **extra), inner.describe())
        record = {"key": key, "prompt": prompt, "system": system, "temperature": temperature, "max_tokens": max_tokens, **extra,
                  "provider": self.inner.name, "model": self.inner.model, "text": completion.text,
                  "input_tokens": completion.input_tokens, "output_tokens": completion.output_tokens}
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        self.stats["recorded"] += 1
        return completion

    def limit(self, concurrency: int | None) -> None:
        """Replayed replies are read at once; the cap is the recorded provider's (its misses)."""
        if self.inner is not None:
            self.inner.limit(concurrency)

    async def aclose(self) -> None:
        if self.inner is not None:
            await self.inner.aclose()


def _read_recording(path: Path) -> Completion:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return Completion(str(doc["text"]), int(doc.get("input_tokens", 0)), int(doc.get("output_tokens", 0)))
    except (ValueError, KeyError, TypeError):
        raise LLMError(f"recorded reply {path} is malformed (needs a 'text' field): delete it and record again") from None


def make_llm(spec: str | None, *, client=None, concurrency: int | None = None) -> LLM:
    """Build a provider from a CLI spec: anthropic[:MODEL], openai:URL[#MODEL], local:PATH.gguf, replay:DIR, record:DIR:SPEC, none.

    `concurrency` caps the calls in flight to the LLM for everything sharing the provider (`LLM.limit`).
    """
    llm = _make_llm(spec, client=client)
    if concurrency is not None:
        llm.limit(concurrency)
    return llm


def _make_llm(spec: str | None, *, client=None) -> LLM:
    spec = (spec or "none").strip()
    kind, _, rest = spec.partition(":")
    kind = kind.lower()
    if kind == "none" and not rest:
        return NoLLM()
    if kind == "anthropic":
        return AnthropicLLM(rest or DEFAULT_ANTHROPIC_MODEL)
    if kind == "openai" and rest:
        url, _, model = rest.partition("#")
        return OpenAICompatibleLLM(url, model or None, client=client)  # the run's shared HttpClient, when given
    if kind == "local" and rest:
        from .local_llm import LocalLLM

        return LocalLLM(rest)
    if kind == "replay" and rest:
        return ReplayLLM(rest)
    if kind == "record":
        directory, _, inner = rest.partition(":")
        if not directory or not inner:
            raise LLMError(f"bad LLM spec {spec!r}: record needs a directory and a provider, e.g. record:replies:anthropic")
        return ReplayLLM(directory, record_with=make_llm(inner, client=client))
    if kind == "gold":  # the gold-guided stand-in (not a model): `kgfed run QUESTIONS --llm gold` gives gold:QUESTIONS
        from .gold_llm import GoldLLM

        return GoldLLM.from_file(rest)
    raise LLMError(f"unknown LLM spec {spec!r}: {SPEC_HELP}")


def _error_message(body: str) -> str:
    """The `error.message` of an OpenAI-style error body, else its first line."""
    try:
        doc = json.loads(body)
        error = doc.get("error", doc) if isinstance(doc, dict) else doc
        message = error.get("message") if isinstance(error, dict) else error
        if message:
            return first_line(str(message))
    except ValueError:
        pass
    return first_line(body)
