"""Blocking HTTP for the SPARQLWrapper drop-in: a thread-driven loop, a keep-alive `http.client` transport.

The drop-in (`kgfed.engine.kg.dropin`) answers a blocking call, as urllib does, but through kgfed's
`HttpClient` (per-host caps, retries, 429 pauses, error classes). This module holds the machinery:

- `_LoopThread`: one private event loop on a daemon thread (`SyncKG`, and the drop-in's one background
  loop for calls made inside a running event loop);
- `_BlockingTransport`: kgfed's transport seam over the standard library's `http.client`, connections
  kept alive, TCP_QUICKACK after each request;
- `_PoliteClient`: an `HttpClient` whose 429 pauses hold the host for every drop-in client of the process;
- `_ThreadClient`: a loop and client that the calling thread drives itself, with no hand-off.
"""
from __future__ import annotations

import asyncio
import contextvars
import http.client
import socket
import threading
import weakref
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar
from urllib.parse import urlencode, urljoin, urlsplit

from multidict import CIMultiDict

from ...endpoints.client import HttpClient
from ...endpoints.transport import Request, Response, TransportConnectError, TransportTimeout, TransportTruncated

T = TypeVar("T")


class _LoopThread:
    """One private event loop on a daemon thread; `run` submits a coroutine and waits for it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="kgfed-sync", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self.loop.is_closed() or not self._thread.is_alive():  # used after close(): kgfed's Closed, not asyncio's
            from ...sparql.errors import Closed

            coro.close()
            raise Closed("this SyncKG is closed: open a new one (SyncKG.open(...), or `with SyncKG.open(...) as kg:`)")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self.loop.close()


# ---- a keep-alive http.client transport for a loop that one blocking caller drives ---------------------
# A server that writes its answer in two pieces (headers, then body) with Nagle's algorithm on
# (Python's `http.server`) holds the body until the headers are acknowledged, and a kept-alive
# client's delayed ACK waits ~40 ms for it: every query would take 40 ms. urllib never meets this,
# since it opens a new connection per request. `http.client` already sets TCP_NODELAY on our side;
# TCP_QUICKACK, set after each request is sent (Linux resets it), acknowledges at once instead.
_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)

# The last response kgfed's client received for the request being sent (per task): when the client
# gives up (a persistent 429 or 5xx) the drop-in raises with that response's real headers and body.
_LAST_RESPONSE: contextvars.ContextVar[list[Response] | None] = contextvars.ContextVar("kgfed_sync_last", default=None)


def _remember(response: Response) -> Response:
    holder = _LAST_RESPONSE.get()
    if holder is not None:
        holder[:] = [response]
    return response


class _BlockingTransport:
    """kgfed's transport seam implemented with the standard library's `http.client`, connections kept alive.

    Blocking inside the coroutine is right here and only here: the loop belongs to one thread that is
    waiting for this very answer (as it would wait in urllib), so nothing else is held up, and the
    per-request work is urllib's, not aiohttp's, minus a new TCP connection per query. `HttpClient`
    above it still does the caps, 429 pauses, retries and error classes. Redirects are followed as
    urllib follows them; a kept-alive connection the server closed meanwhile is reopened once.
    `threaded=True` (the one background loop that serves calls made inside a running event loop)
    runs each exchange on a worker thread instead, over a pool of idle connections per host.
    """

    max_redirects = 10

    def __init__(self, threaded: bool = False) -> None:
        self.threaded = threaded
        self._idle: dict[tuple[str, str], list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()

    async def send(self, request: Request) -> Response:
        if self.threaded:
            return await asyncio.to_thread(self._send, request)
        return self._send(request)

    def _send(self, request: Request) -> Response:
        method, url, body = request.method, request.full_url(), request.data
        if isinstance(body, Mapping):
            body = urlencode(body).encode()
        headers = dict(request.headers)
        for _ in range(self.max_redirects + 1):
            status, answer_headers, data = self._exchange(method, url, body, headers, request.timeout)
            if status not in (301, 302, 303, 307, 308) or "Location" not in answer_headers:
                return _remember(Response(status, answer_headers, data, url))
            url = urljoin(url, answer_headers["Location"])
            if status == 303 or (status in (301, 302) and method == "POST"):  # as urllib: the body is dropped
                method, body = "GET", None
                headers = {k: v for k, v in headers.items() if k.lower() not in ("content-type", "content-length")}
        raise TransportConnectError(f"more than {self.max_redirects} redirects from {request.url}")

    def _take(self, key: tuple[str, str]) -> http.client.HTTPConnection | None:
        with self._lock:
            idle = self._idle.get(key)
            return idle.pop() if idle else None

    def _give_back(self, key: tuple[str, str], connection: http.client.HTTPConnection) -> None:
        with self._lock:
            self._idle.setdefault(key, []).append(connection)

    def _exchange(self, method: str, url: str, body: bytes | None, headers: dict[str, str],
                  timeout: float) -> tuple[int, CIMultiDict, bytes]:
        parts = urlsplit(url)
        key = (parts.scheme, parts.netloc)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        for attempt in (0, 1):
            connection = self._take(key)
            reused = connection is not None
            if connection is None:
                kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
                connection = kind(parts.netloc, timeout=timeout)
            connection.timeout = timeout
            if connection.sock is not None:
                connection.sock.settimeout(timeout)
            try:
                connection.request(method, target, body=body, headers=headers)
                if _QUICKACK is not None and connection.sock is not None:  # see _QUICKACK
                    connection.sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
                response = connection.getresponse()
                data = response.read()
            except TimeoutError:
                connection.close()
                raise TransportTimeout(f"no answer within {timeout:g} s") from None
            except http.client.IncompleteRead as exc:
                connection.close()
                raise TransportTruncated(f"{len(exc.partial)} bytes of the body arrived") from None
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as exc:
                connection.close()
                if reused and attempt == 0:  # closed by the server while idle: open a new one
                    continue
                raise TransportConnectError(f"{exc.__class__.__name__}: {exc}") from None
            except (OSError, http.client.HTTPException) as exc:
                connection.close()
                raise TransportConnectError(f"{exc.__class__.__name__}: {exc}") from None
            if response.will_close:
                connection.close()
            else:
                self._give_back(key, connection)
            return response.status, CIMultiDict(response.getheaders()), data
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.close()


# ---- one runtime per process: HTTP clients, caches; closed at exit ------------------------------------------
NO_LIMIT = 24 * 3600.0  # no client-side time limit unless setTimeout asks for one (as the genuine library)


class _PoliteClient(HttpClient):
    """kgfed's HttpClient whose 429 pauses hold the host for every drop-in client of the process."""

    peers: weakref.WeakSet[_PoliteClient] = weakref.WeakSet()

    def __init__(self, transport: Any = None) -> None:
        super().__init__(timeout=NO_LIMIT, transport=transport)
        _PoliteClient.peers.add(self)

    def pause(self, host: str, seconds: float) -> None:
        for peer in list(_PoliteClient.peers):
            HttpClient.pause(peer, host, seconds)


class _ThreadClient:
    """A private loop and client that the calling thread drives itself: no hand-off to another thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.client = _PoliteClient(_BlockingTransport())
        self.thread = threading.current_thread()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Drive `coro` on this thread until it returns.

        A request that never waits (no retry, 429 pause or contended cap: nearly every one) runs straight
        through with this loop marked as running and no task scheduled, which saves the loop's two
        iterations and their polls (about a third of kgfed's own CPU per query); when the coroutine
        awaits a future (a backoff sleep), the loop runs until that future is done, then it resumes.
        """
        waiting = None
        try:
            while True:
                asyncio._set_running_loop(self.loop)
                try:
                    waiting = coro.send(None)
                except StopIteration as done:
                    return done.value
                finally:
                    asyncio._set_running_loop(None)
                if waiting is None:  # a bare yield (asyncio.sleep(0)): let the loop run its callbacks once
                    self.loop.run_until_complete(asyncio.sleep(0))
                else:
                    waiting._asyncio_future_blocking = False  # what a Task does before waiting on it
                    self.loop.run_until_complete(asyncio.wait([waiting]))  # its result or error stays in it
        except BaseException:
            coro.close()  # e.g. Ctrl-C: nothing keeps running behind the caller's back
            raise

    def close(self) -> None:
        if self.loop.is_running() or self.loop.is_closed():
            return
        try:
            self.loop.run_until_complete(self.client.aclose())
        finally:
            self.loop.close()
