"""Blocking HTTP for the SPARQLWrapper drop-in: a thread-driven loop, a keep-alive `http.client` transport.

The drop-in (`kgfed.engine.kg.dropin`) answers a blocking call, as urllib does, but through kgfed's
`HttpClient` (per-host caps, retries, 429 pauses, error classes). This module holds the machinery:

- `_LoopThread`: one private event loop on a daemon thread (`SyncKG`, and the drop-in's one background
  loop for calls made inside a running event loop);
- `_BlockingTransport`: kgfed's transport seam over the standard library's `http.client`, connections
  kept alive, TCP_QUICKACK after each request;
- `_PoliteClient`: an `HttpClient` whose 429 pauses hold the host for every drop-in client of the process;
- `_ThreadClient`: a loop and client that the calling thread drives itself, with no hand-off.

Importing it costs no more than the drop-in's first query needs: `asyncio` (about 12 ms of a script's
start-up, more than the genuine library's whole import of `urllib`) and `multidict` are not imported
here. A `_ThreadClient` makes its event loop only when a request first has to wait (a retry's
backoff, a 429 pause, a per-minute budget): nearly every request runs straight through without one;
the answer's headers are `http.client`'s own `HTTPMessage` (case-insensitive, as urllib gives them).
"""
from __future__ import annotations

import contextvars
import http.client
import socket
import sys
import threading
import weakref
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar
from urllib.parse import urlencode, urljoin, urlsplit

from ...endpoints.client import HttpClient
from ...endpoints.transport import Request, Response, TransportConnectError, TransportTimeout, TransportTruncated

T = TypeVar("T")


class _LoopThread:
    """One private event loop on a daemon thread; `run` submits a coroutine and waits for it."""

    def __init__(self) -> None:
        import asyncio

        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="kgfed-sync", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self.loop.is_closed() or not self._thread.is_alive():  # used after close(): kgfed's Closed, not asyncio's
            from ...sparql.errors import Closed

            coro.close()
            raise Closed("this SyncKG is closed: open a new one (SyncKG.open(...), or `with SyncKG.open(...) as kg:`)")
        import asyncio

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
# A connection that failed leaves its OSError there instead (the drop-in's URLError says what urllib's says).
_LAST_RESPONSE: contextvars.ContextVar[list[Response | OSError] | None] = contextvars.ContextVar("kgfed_sync_last",
                                                                                                 default=None)


def _remember(response: Response) -> Response:
    holder = _LAST_RESPONSE.get()
    if holder is not None:
        holder[:] = [response]
    return response


def _remember_failure(exc: OSError) -> None:
    holder = _LAST_RESPONSE.get()
    if holder is not None:
        holder[:] = [exc]


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
            import asyncio

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
                  timeout: float) -> tuple[int, http.client.HTTPMessage, bytes]:
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
                if isinstance(exc, OSError):
                    _remember_failure(exc)
                raise TransportConnectError(f"{exc.__class__.__name__}: {exc}") from None
            if response.will_close:
                connection.close()
            else:
                self._give_back(key, connection)
            response.msg.kgfed_reason = response.reason  # type: ignore[attr-defined]  # the status phrase, for urllib's HTTPError text
            return response.status, response.msg, data  # case-insensitive `get`, `items()` as received
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.close()


# ---- one runtime per process: HTTP clients, caches; closed at exit ------------------------------------------
NO_LIMIT = 24 * 3600.0  # no client-side time limit unless setTimeout asks for one (as the genuine library)


class _NoSlot:
    """An uncontended slot: the drop-in's per-host cap is the process-wide semaphore `_Runtime.send` holds."""

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


_NO_SLOT = _NoSlot()


class _PoliteClient(HttpClient):
    """kgfed's HttpClient whose 429 pauses hold the host for every drop-in client of the process.

    Its per-host cap is not an `asyncio.Semaphore` per client: every drop-in request is sent while its
    calling thread holds the host's process-wide `threading.BoundedSemaphore` (`_Runtime.send`, sized
    by `limit_for`), which caps all clients together; a client's own loop serves one thread at a time.
    Before anything that may wait on the loop (a backoff or 429 sleep, a per-minute or query-time
    budget) it calls `need_loop`, which the `_ThreadClient` driving it sets: its loop is made then.
    """

    peers: weakref.WeakSet[_PoliteClient] = weakref.WeakSet()

    def __init__(self, transport: Any = None) -> None:
        # a script that asks a query again after a timeout sends it again, as the genuine library does
        super().__init__(timeout=NO_LIMIT, transport=transport, repeat_timeouts=True)
        self.need_loop: Any = None  # a _ThreadClient's `_loop_now`; None on a running loop (the background one)
        _PoliteClient.peers.add(self)

    def pause(self, host: str, seconds: float) -> None:
        for peer in list(_PoliteClient.peers):
            HttpClient.pause(peer, host, seconds)

    def _semaphore(self, host: str) -> Any:
        return _NO_SLOT

    def _loop_ready(self) -> None:
        if self.need_loop is not None:
            self.need_loop()

    async def _sleep(self, seconds: float) -> None:
        self._loop_ready()
        await super()._sleep(seconds)

    async def _spend_budget(self, host: str) -> None:
        if self.budget_for(host) is None:  # as the client's own: no budget, nothing to wait for
            return
        self._loop_ready()
        await super()._spend_budget(host)

    def _time_budget(self, host: str) -> Any:
        budget = super()._time_budget(host)
        if budget is not None:
            self._loop_ready()
        return budget


class _ThreadClient:
    """A private loop and client that the calling thread drives itself: no hand-off to another thread.

    The loop (and `asyncio` itself, in a script that never imported it) is made when a request first has
    to wait (`_loop_now`, called by the client before a sleep or a budget), or as soon as `asyncio` is
    imported by anyone: from then on every step runs with the loop marked as running, as a task's would.
    """

    def __init__(self) -> None:
        self.loop: Any = None  # an asyncio event loop, made by `_loop_now`
        self.client = _PoliteClient(_BlockingTransport())
        self.client.need_loop = self._loop_now
        self.thread = threading.current_thread()

    def _loop_now(self) -> Any:
        """This thread's loop, made now if need be, marked as running (the step under way may wait on it)."""
        import asyncio

        if self.loop is None:
            self.loop = asyncio.new_event_loop()
        asyncio._set_running_loop(self.loop)
        return self.loop

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
                if "asyncio" in sys.modules:  # imported (by anyone): the step runs with the loop marked running
                    self._loop_now()
                try:
                    waiting = coro.send(None)
                except StopIteration as done:
                    return done.value
                finally:
                    if self.loop is not None:  # made before or during this step
                        sys.modules["asyncio"]._set_running_loop(None)
                if waiting is None and self.loop is None:  # a bare yield with no loop: nothing else to run
                    continue
                import asyncio

                if waiting is None:  # a bare yield (asyncio.sleep(0)): let the loop run its callbacks once
                    self.loop.run_until_complete(asyncio.sleep(0))
                else:
                    waiting._asyncio_future_blocking = False  # what a Task does before waiting on it
                    self.loop.run_until_complete(asyncio.wait([waiting]))  # its result or error stays in it
        except BaseException:
            coro.close()  # e.g. Ctrl-C: nothing keeps running behind the caller's back
            raise

    def close(self) -> None:
        if self.loop is None:  # never waited: closing the client (its idle sockets) waits for nothing either
            self.run(self.client.aclose())
            if self.loop is not None:  # made meanwhile (asyncio imported since): closed with the client
                self.loop.close()
            return
        if self.loop.is_running() or self.loop.is_closed():
            return
        try:
            self.loop.run_until_complete(self.client.aclose())
        finally:
            self.loop.close()
