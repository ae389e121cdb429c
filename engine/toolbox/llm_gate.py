"""The LLMGate: how many calls go to one LLM at once, and the pauses a busy LLM asks for.

Every provider (`llm_base.LLM`) sends through its gate (`llm.gate`): at most `concurrency` calls in
flight to the LLM for the whole run (`make_llm(spec, concurrency=N)`, the CLI's `--llm-concurrency`),
and the pauses the LLM asks for shared by every call. A 429 (rate limit), 503 (unavailable) or 529
(Anthropic's overloaded) pauses the whole gate for the answer's `Retry-After` (else a backoff that
doubles with every busy answer in a row), and the call is sent again: up to `max_attempts` times and
`max_wait` seconds a call, so a busy LLM slows a run down instead of failing its questions. A 429
that will not clear by waiting (OpenAI's `insufficient_quota`, Anthropic's spend limit) or a
`Retry-After` beyond `max_retry_after` is a one-line `LLMError` at once.

Providers turn an error answer into a `Busy` with `busy_answer` (which reads the provider's error body
and its `Retry-After`/`retry-after-ms` headers); the gate does the waiting. Nothing here knows a provider.
"""
from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from ...endpoints.client import first_line, parse_retry_after
from ...sparql.errors import LLMError

log = logging.getLogger("kgfed.llm")
T = TypeVar("T")

# Answers that mean "busy, ask again later": the whole gate pauses (Anthropic's 529 is its "overloaded_error").
BUSY_STATUSES = frozenset({429, 503, 529})
# Answers the provider's SDK would retry on their own (timeouts, conflicts, other 5xx): retried per call, a few times.
RETRY_STATUSES = frozenset({408, 409, 500, 502, 504})
# 429s that waiting does not clear: OpenAI's exhausted quota, Anthropic's monthly spend limit.
NOT_RETRYABLE = frozenset({"insufficient_quota", "billing_hard_limit_reached", "enforced_spend_limit_reached"})


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
            grown = size + 1 if self.concurrency is None or size < self.concurrency else self.concurrency
            self._places.resize(grown)
            self.stats["cap"] = grown

    def pause(self, seconds: float) -> None:
        """Hold every call of this LLM for `seconds` (counted from now; a longer pause already set wins)."""
        until = time.monotonic() + max(0.0, seconds)
        if until > self._paused_until:
            # seconds, a float: a Counter adds any numbers, typeshed types its values int
            self.stats["paused"] += until - max(self._paused_until, time.monotonic())  # type: ignore[assignment]
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
