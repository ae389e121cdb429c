"""The seam under `HttpClient`: one request in, one fully read response out.

`HttpClient` owns politeness (per-host caps, budgets, 429 pauses, retries, error classification); a
transport only moves bytes. Two implementations:

- `AiohttpTransport`: one aiohttp session (opened lazily, so vcrpy cassettes still patch it). A body is
  read in chunks, after decompression, and one larger than `max_body_bytes` (default `MAX_BODY_BYTES`,
  256 MiB; lower inside a caller's `endpoints.bounds.bounded(max_bytes=...)`) is an `EndpointError` as soon as
  the cap is passed: a 1 MB gzip that inflates to 1 GB costs 256 MiB at most, never the whole gigabyte.
  Reads are timed per phase: the headers (the server's query time) and the whole request within the
  request's `timeout`; once the headers are in, a body that goes quiet for `read_gap` seconds (default
  `DEFAULT_READ_GAP`, 10 s, never more than the timeout) ends with `TransportTimeout`, and a dripping one
  ends at the timeout: no connection outlives it.
- `MockTransport(handler)`: hands each `Request` to a function (sync or async) that returns a
  `Response` or raises, as httpx's MockTransport does. Fault tests run the real client code against
  scripted answers in the exact shapes real services send, without sockets.

Transports signal failures with `TransportTimeout`, `TransportConnectError` and `TransportTruncated`;
a handler may also raise the built-in `TimeoutError`/`ConnectionError`, which mean the same.

    def wdqs(request: Request) -> Response:
        return Response.of(200, "Please set a user-agent and respect our robot policy https://w.wiki/4wJS …")
    async with HttpClient.from_options(HttpOptions(), transport=MockTransport(wdqs)) as client: ...
"""
from __future__ import annotations

import contextlib
import json as _json
import socket
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from urllib.parse import parse_qsl, urlencode, urlsplit

if TYPE_CHECKING:  # imported where used: the SPARQLWrapper drop-in's import needs neither multidict nor asyncio
    from http.client import HTTPMessage

    from multidict import CIMultiDict, CIMultiDictProxy

from ..sparql.errors import EndpointError
from .bounds import MAX_BODY_BYTES, current_bounds
from .options import DEFAULT_READ_GAP, DEFAULT_TIMEOUT

__all__ = ["Request", "Response", "AsyncTransport", "AiohttpTransport", "MockTransport", "TransportError",
           "TransportTimeout", "TransportConnectError", "TransportTruncated", "ResponseTooLarge", "MAX_BODY_BYTES"]


@dataclass
class Request:
    """One HTTP request as the client sends it (headers already include User-Agent/Authorization)."""

    method: str
    url: str
    params: Mapping[str, str] | None = None
    data: Mapping[str, str] | bytes | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT

    @property
    def host(self) -> str:
        return urlsplit(self.url).netloc

    @property
    def path(self) -> str:
        return urlsplit(self.url).path

    def fields(self) -> dict[str, str]:
        """URL query parameters merged with a form-encoded body (what a SPARQL server reads)."""
        out = dict(parse_qsl(urlsplit(self.url).query))
        out.update({k: str(v) for k, v in (self.params or {}).items()})
        if isinstance(self.data, Mapping):
            out.update({k: str(v) for k, v in self.data.items()})
        return out

    def full_url(self) -> str:
        return self.url + ("?" + urlencode(self.params) if self.params else "")


@dataclass
class Response:
    """A fully read HTTP response."""

    status: int
    headers: CIMultiDictProxy[str] | CIMultiDict[str] | HTTPMessage  # case-insensitive `get`; the drop-in's are http.client's
    body: bytes
    url: str = ""

    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    @property
    def content_type(self) -> str:
        return self.headers.get("Content-Type", "").split(";")[0].strip().lower()

    @classmethod
    def of(cls, status: int, body: str | bytes | dict | list = b"", *, headers: Mapping[str, str] | None = None,
           content_type: str | None = None, url: str = "") -> Response:
        """A response for scripted tests: a dict/list body is JSON, a str is UTF-8 text."""
        if isinstance(body, (dict, list)):
            raw, kind = _json.dumps(body).encode(), "application/json"
        elif isinstance(body, str):
            raw, kind = body.encode(), "text/plain; charset=utf-8"
        else:
            raw, kind = body, "application/octet-stream"
        from multidict import CIMultiDict

        merged = CIMultiDict({"Content-Type": content_type or kind})
        merged.update(headers or {})
        return cls(status, merged, raw, url)


class TransportError(Exception):
    """A failure below HTTP (the client turns it into a typed EndpointError)."""


class TransportTimeout(TransportError):
    """Nothing (or not all) arrived within the request's timeout."""


class TransportConnectError(TransportError):
    """The connection could not be made or was dropped."""


class TransportTruncated(TransportError):
    """The body ended before its announced length."""


@runtime_checkable
class AsyncTransport(Protocol):
    """Sends one request and returns the whole response; raises TransportError subclasses."""

    async def send(self, request: Request) -> Response: ...

    async def aclose(self) -> None: ...


class ResponseTooLarge(EndpointError):
    """A response body passed the transport's `max_body_bytes` (counted after decompression)."""


def _ack_now(resp: Any) -> None:
    """Acknowledge the response's headers at once (TCP_QUICKACK; Linux clears it by itself).

    A server that writes the headers and the body separately with Nagle's algorithm on (Python's
    `http.server`) holds the body until the headers are acknowledged, and a kept-alive connection's
    delayed ACK waits ~40 ms for it: every request took 44 ms instead of ~1 ms. aiohttp sets only
    TCP_NODELAY, which is about sending.
    """
    option = getattr(socket, "TCP_QUICKACK", None)
    transport = getattr(getattr(resp, "connection", None), "transport", None)
    sock = transport.get_extra_info("socket") if transport is not None else None
    if option is not None and sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, option, 1)


class AiohttpTransport:
    """HTTP over one lazily opened aiohttp session with no connection caps of its own (the client caps);
    bodies are read up to `max_body_bytes` (decompressed), with no silence longer than `read_gap` seconds."""

    def __init__(self, max_body_bytes: int = MAX_BODY_BYTES, read_gap: float = DEFAULT_READ_GAP) -> None:
        self._session: Any = None
        self.max_body_bytes = int(max_body_bytes)
        self.read_gap = float(read_gap)

    def _get_session(self) -> Any:  # an aiohttp.ClientSession (aiohttp is imported where used)
        import aiohttp

        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, limit_per_host=0))
        return self._session

    async def send(self, request: Request) -> Response:
        import aiohttp

        session = self._get_session()
        try:
            async with session.request(request.method, request.url, params=request.params, data=request.data,
                                       headers=dict(request.headers),
                                       timeout=aiohttp.ClientTimeout(total=request.timeout)) as resp:
                _ack_now(resp)
                body = await self._read_capped(resp, request)
                return Response(resp.status, resp.headers.copy(), body, str(resp.url))
        except TimeoutError:  # aiohttp's total: headers (the server's query time) and body within the timeout
            raise TransportTimeout(f"no answer within {request.timeout:g} s") from None
        except aiohttp.ClientPayloadError as exc:
            raise TransportTruncated(str(exc)) from None
        except (aiohttp.ClientConnectionError, ConnectionError) as exc:
            raise TransportConnectError(f"{exc.__class__.__name__}: {exc}") from None

    def cap(self) -> int:
        """The byte cap of a body read now: the transport's, or a caller's lower `bounded(max_bytes=...)`."""
        limits = current_bounds()
        return min(self.max_body_bytes, limits.max_bytes) if limits is not None else self.max_body_bytes

    async def _read_capped(self, resp: Any, request: Request) -> bytes:
        import asyncio

        cap = self.cap()
        declared = resp.content_length
        if declared is not None and declared > cap and "Content-Encoding" not in resp.headers:
            raise ResponseTooLarge(self._too_large(request, f"announces {declared} bytes", cap))
        gap = min(self.read_gap, request.timeout)
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                async with asyncio.timeout(gap) as quiet:
                    chunk = await resp.content.read(1 << 16)  # already decompressed
            except TimeoutError:
                resp.close()
                if not quiet.expired():  # aiohttp's own total timeout, raised from inside the read
                    raise
                raise TransportTimeout(f"the body stopped coming for {gap:g} s after the headers") from None
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > cap:
                resp.close()  # drop the connection: the rest is never read
                raise ResponseTooLarge(self._too_large(request, f"passed {cap} bytes", cap))
            chunks.append(chunk)

    def _too_large(self, request: Request, what: str, cap: int) -> str:
        from ..sparql.secrets import redact

        return (f"{request.method} {redact(request.host)}: the response {what} (the cap is {cap / 2**20:.3g} MiB, "
                "decompressed): ask for less (a LIMIT, fewer ids per batch)")

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None


Handler = Callable[[Request], "Response | Awaitable[Response]"]


class MockTransport:
    """Answers each request with `handler(request)` in process; `requests` keeps every request seen.

    The handler's time counts against the request's timeout, like a slow server's would.
    """

    def __init__(self, handler: Handler):
        self.handler = handler
        self.requests: list[Request] = []
        self.closed = False

    async def send(self, request: Request) -> Response:
        import asyncio
        import inspect

        self.requests.append(request)

        async def answer() -> Response:
            result = self.handler(request)
            if inspect.isawaitable(result):
                result = await result
            return result

        try:
            response = await asyncio.wait_for(answer(), request.timeout)
        except TransportError:
            raise
        except TimeoutError:
            raise TransportTimeout(f"no answer within {request.timeout:g} s") from None
        except ConnectionError as exc:
            raise TransportConnectError(f"{exc.__class__.__name__}: {exc}") from None
        if not response.url:
            response.url = request.full_url()
        return response

    async def aclose(self) -> None:
        self.closed = True
