"""`HttpClient.request` as a chain of small handlers, as aiohttp's client middlewares are.

Each handler takes the `Call` on its way down and `send`, the rest of the chain, and may act before
(wait, add a header), after (read the answer, raise) or around (retry) it:

    NoRepeat -> Auth -> Retry -> Recognise -> Polite -> Transport

- `NoRepeat`: a request that timed out (the server's timeout answer or the client's own) is not sent again
  in the same run: the same error at once (unless the client was told `repeat_timeouts=True`).
- `Auth`: the Wikimedia token after a query service's authentication challenge; the challenged request is
  sent again through the rest of the chain unchanged (same `passthrough`, same `retries`).
- `Retry`: retryable failures (`Again`) are sent again with exponential backoff and full jitter; a 429's
  pause is its own delay; after the budget, the last error "(gave up after N attempts)".
- `Recognise`: what the server's `ServerKind` says its answers mean: a refusal (robot policy), its own
  timeout (QLever's 429, Blazegraph's TimeoutException), a 429 to wait out (the whole host pauses), an
  error of the query itself (not retried), a 5xx worth another try.
- `Polite`: the host's 429 pause, its concurrency cap, its per-minute request budget and its query-time
  budget, shared by every user of the client.
- `Transport`: the headers (User-Agent, token), the bytes through the `AsyncTransport`, transport
  failures as typed errors.

The client's state (caps, budgets, pauses, stats) lives on the `HttpClient`; handlers only read and
update it, so one host stays one politeness domain for every KG, text source and LLM of a run.
"""
from __future__ import annotations

import functools
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..sparql.errors import (
    EndpointConnectionError, EndpointError, EndpointTimeout, HttpStatusError, RateLimited,
)
from ..sparql.secrets import strip_credentials
from .kinds import ServerKind, first_line
from .transport import Request, Response, TransportConnectError, TransportTimeout, TransportTruncated

if TYPE_CHECKING:
    from .client import HttpClient

__all__ = ["Call", "Send", "Handler", "Again", "chain", "NoRepeat", "Auth", "Retry", "Recognise", "Polite", "Transport",
           "RETRY_STATUSES"]

RETRY_STATUSES = {500, 502, 503, 504}


@dataclass
class Call:
    """One `request(...)` on its way down the chain: what the caller asked, and the attempt in progress."""

    method: str
    url: str
    host: str  # the URL's host[:port], never its userinfo
    kind: ServerKind
    params: Mapping[str, str] | None = None
    data: Mapping[str, str] | bytes | None = None
    headers: Mapping[str, str] | None = None
    timeout: float = 60.0  # this request's limit in seconds
    passthrough: Collection[int] = ()
    retries: int = 0
    attempt: int = 0

    @property
    def what(self) -> str:
        return f"{self.method} {self.host}"

    def fingerprint(self) -> tuple:
        """What makes two calls the same request: method, URL, parameters, body and time limit."""
        data = self.data if isinstance(self.data, (bytes, type(None))) else tuple(sorted(self.data.items()))
        return self.method, self.url, tuple(sorted((self.params or {}).items())), data, self.timeout


Send = Callable[[Call], Awaitable[Response]]


class Handler(Protocol):
    async def __call__(self, call: Call, send: Send) -> Response: ...


class Again(Exception):
    """A failure worth another attempt (raised inside the chain, caught by `Retry`); `paused`: the delay is
    a host pause already set (a 429), not a backoff to sleep."""

    def __init__(self, error: EndpointError, *, paused: bool = False):
        super().__init__(str(error))
        self.error, self.paused = error, paused


def chain(handlers: Sequence[Handler], last: Send) -> Send:
    """`handlers[0]` outermost, `last` innermost: one `send(call)` (a `partial` per link: no extra frame)."""
    send = last
    for handler in reversed(handlers):
        send = functools.partial(handler, send=send)
    return send


class NoRepeat:
    """A request that timed out is not sent again in this run: its error again, at once, saying so.

    At most `size` requests are remembered, each for `seconds` (a long-lived process, the MCP server, asks
    again after that: its load may have changed)."""

    def __init__(self, client: HttpClient, *, size: int = 4096, seconds: float = 3600.0):
        self.client, self.size, self.seconds = client, size, seconds
        self.timed_out: OrderedDict[tuple, tuple[float, EndpointTimeout]] = OrderedDict()

    async def __call__(self, call: Call, send: Send) -> Response:
        if self.client.repeat_timeouts:
            return await send(call)
        if self.timed_out:  # none yet: nothing to compare
            self._refuse_repeat(call.fingerprint())
        try:
            return await send(call)
        except EndpointTimeout as exc:
            self.timed_out[call.fingerprint()] = (time.monotonic(), exc)
            while len(self.timed_out) > self.size:
                self.timed_out.popitem(last=False)
            raise

    def _refuse_repeat(self, key: tuple) -> None:
        seen = self.timed_out.get(key)
        if seen is None:
            return
        ago = time.monotonic() - seen[0]
        if ago > self.seconds:
            del self.timed_out[key]
            return
        self.client.stats["timeouts_not_repeated"] += 1
        error = seen[1]
        raise type(error)(f"{error} (not sent again: the same request timed out {ago:.0f} s ago in this run)",
                          status=error.status, retryable=error.retryable)


def asks_authentication(response: Response) -> bool:
    """A 401, or a 403 carrying a `WWW-Authenticate` challenge (a robot-policy 403 has none)."""
    return response.status == 401 or bool(response.headers.get("WWW-Authenticate"))


class Auth:
    """The Wikimedia token over the transport: a query service that challenges gets it from then on."""

    def __init__(self, client: HttpClient):
        self.client = client

    async def __call__(self, call: Call, send: Send) -> Response:
        response = await send(call)
        if response.status not in (401, 403) or call.kind.token != "on-challenge" or not asks_authentication(response):
            return response
        client = self.client
        if client.token and call.host not in client.authorized:  # the query service now wants the token
            client.authorized.add(call.host)
            client.log.info("%s asked for authentication (HTTP %d): sending $%s to it from now on", call.what,
                            response.status, client.token_env)
            return await self(call, send)  # the same call: its passthrough and retries kept
        refused = "refused the token in" if client.token else "asks for authentication:"
        raise HttpStatusError(f"{call.what} {refused} ${client.token_env} (HTTP {response.status}: "
                              f"{first_line(response.text(), 90)}): set it to a valid Wikimedia OAuth 2.0 access token, "
                              "or use --fallback qlever-wikidata", status=response.status)


class Retry:
    """Attempts up to `call.retries + 1`; backoff between them; the last error after the budget."""

    def __init__(self, client: HttpClient):
        self.client = client

    async def __call__(self, call: Call, send: Send) -> Response:
        client = self.client
        last: EndpointError | None = None
        for attempt in range(call.retries + 1):
            call.attempt = attempt
            try:
                return await send(call)
            except Again as again:
                last = again.error
                if again.paused:
                    continue  # the host pause is the delay
            if attempt < call.retries:
                client.stats["retries"] += 1
                delay = client._delay(attempt)
                client.log.info("%s; retry %d of %d in %.1f s", last, attempt + 1, call.retries, delay)
                await client._sleep(delay)
        assert last is not None
        client.stats["errors"] += 1
        raise type(last)(f"{last} (gave up after {call.retries + 1} attempts)", **_error_kwargs(last))


def _error_kwargs(error: EndpointError) -> dict:
    if isinstance(error, RateLimited):
        return {"retry_after": error.retry_after}
    return {"status": error.status, "retryable": error.retryable}


class Recognise:
    """What an answer means, as the server's kind tells: returned, raised, or `Again` for another attempt."""

    def __init__(self, client: HttpClient):
        self.client = client

    async def __call__(self, call: Call, send: Send) -> Response:
        response = await send(call)
        kind, what = call.kind, call.what
        kind.refuse(what, call.host, response)
        if response.status in call.passthrough:
            return response
        if response.status == 429:
            self.client.stats["rate_limited"] += 1
        kind.raise_timeout(what, call.host, response)
        if response.status == 429:
            raise self._rate_limited(call, response)
        if response.status in RETRY_STATUSES:
            kind.raise_fixed_error(what, call.host, response)
            raise Again(HttpStatusError(f"{what} answered HTTP {response.status}: {first_line(response.text())}",
                                        status=response.status, retryable=True))
        self.client.log.debug("%s answered %d (%d bytes)", what, response.status, len(response.body))
        return response

    def _rate_limited(self, call: Call, response: Response) -> Again:
        """A 429 (not a timeout): the whole host pauses for `Retry-After`; one too long is `RateLimited` at once."""
        from .client import parse_retry_after

        client, what = self.client, call.what
        wait = parse_retry_after(response.headers.get("Retry-After"))
        if wait is not None and wait > client.max_retry_after:
            raise RateLimited(
                f"{what} is rate limited for {wait:.0f} s (HTTP 429 Retry-After): wait, then rerun; cached answers are kept",
                retry_after=wait,
            )
        wait = wait if wait is not None else client._delay(call.attempt + 1)
        client.pause(call.host, wait)
        client.log.info("%s answered 429: pausing the host %.1f s", what, wait)
        return Again(RateLimited(f"{what} answered HTTP 429 (rate limited) {call.attempt + 1} times", retry_after=wait),
                     paused=True)


class Polite:
    """The host's pause, concurrency cap, request budget and query-time budget around one attempt."""

    def __init__(self, client: HttpClient):
        self.client = client

    async def __call__(self, call: Call, send: Send) -> Response:
        client, host = self.client, call.host
        await client._wait_if_paused(host)
        async with client._semaphore(host):
            await client._wait_if_paused(host)  # a 429 may have paused the host while this one queued
            await client._spend_budget(host)
            seconds = client._time_budget(host)
            if seconds is not None:
                await seconds.wait()
            started = time.monotonic()
            try:
                return await send(call)
            finally:
                if seconds is not None:
                    seconds.spend(time.monotonic() - started)


class Transport:
    """The last link: headers, the bytes through the transport, its failures as typed errors."""

    def __init__(self, client: HttpClient):
        self.client = client

    async def __call__(self, call: Call) -> Response:
        client, what = self.client, call.what
        client.stats["requests"] += 1
        request = Request(call.method, call.url, call.params, call.data, client._headers(call.host, call.headers),
                          call.timeout)
        client.log.debug("%s %s (attempt %d)", call.method, strip_credentials(call.url), call.attempt + 1)
        try:
            return await client.transport.send(request)
        except TransportTimeout:
            client.stats["timeouts"] += 1
            raise EndpointTimeout(
                f"{what} timed out after {call.timeout:g} s: simplify the query, batch less, or raise --timeout",
            ) from None
        except TransportTruncated as exc:
            raise Again(EndpointConnectionError(f"{what} sent a truncated response ({exc})", retryable=True)) from None
        except TransportConnectError as exc:
            raise Again(EndpointConnectionError(f"{what} connection failed ({exc})", retryable=True)) from None
