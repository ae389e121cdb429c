"""The seam under `HttpClient`: one request in, one fully read response out.

`HttpClient` owns politeness (per-host caps, budgets, 429 pauses, retries, error classification); a
transport only moves bytes. Two implementations:

- `AiohttpTransport`: one aiohttp session (opened lazily, so vcrpy cassettes still patch it).
- `MockTransport(handler)`: hands each `Request` to a function (sync or async) that returns a
  `Response` or raises, as httpx's MockTransport does. Fault tests run the real client code against
  scripted answers in the exact shapes real services send, without sockets.

Transports signal failures with `TransportTimeout`, `TransportConnectError` and `TransportTruncated`;
a handler may also raise the built-in `TimeoutError`/`ConnectionError`, which mean the same.

    def wdqs(request: Request) -> Response:
        return Response.of(200, "Please set a user-agent and respect our robot policy https://w.wiki/4wJS …")
    async with HttpClient(transport=MockTransport(wdqs)) as client: ...
"""
from __future__ import annotations

import asyncio
import inspect
import json as _json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable
from urllib.parse import parse_qsl, urlencode, urlsplit

from multidict import CIMultiDict, CIMultiDictProxy


@dataclass
class Request:
    """One HTTP request as the client sends it (headers already include User-Agent/Authorization)."""

    method: str
    url: str
    params: Mapping[str, str] | None = None
    data: Mapping[str, str] | bytes | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 60.0

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
    headers: CIMultiDictProxy[str] | CIMultiDict[str]
    body: bytes
    url: str = ""

    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    @property
    def content_type(self) -> str:
        return self.headers.get("Content-Type", "").split(";")[0].strip().lower()

    @classmethod
    def of(cls, status: int, body: str | bytes | dict | list = b"", *, headers: Mapping[str, str] | None = None,
           content_type: str | None = None, url: str = "") -> "Response":
        """A response for scripted tests: a dict/list body is JSON, a str is UTF-8 text."""
        if isinstance(body, (dict, list)):
            raw, kind = _json.dumps(body).encode(), "application/json"
        elif isinstance(body, str):
            raw, kind = body.encode(), "text/plain; charset=utf-8"
        else:
            raw, kind = body, "application/octet-stream"
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


class AiohttpTransport:
    """HTTP over one lazily opened aiohttp session with no connection caps of its own (the client caps)."""

    def __init__(self) -> None:
        self._session: Any = None

    def _get_session(self):
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
                body = await resp.read()
                return Response(resp.status, resp.headers.copy(), body, str(resp.url))
        except asyncio.TimeoutError:
            raise TransportTimeout(f"no answer within {request.timeout:g} s") from None
        except aiohttp.ClientPayloadError as exc:
            raise TransportTruncated(str(exc)) from None
        except (aiohttp.ClientConnectionError, ConnectionError) as exc:
            raise TransportConnectError(f"{exc.__class__.__name__}: {exc}") from None

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
