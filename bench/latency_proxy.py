"""A loopback HTTP proxy that adds a fixed delay to every request: a stand-in for a remote endpoint.

    async with LatencyProxy("http://127.0.0.1:7878/query", delay=0.1) as proxy:
        proxy.url  # send SPARQL here; proxy.requests counts what passed through
        proxy.log  # with record=True: each request (method, query, body, headers) and when it came and went

`replay(url, requests)` sends logged requests straight to the server, round by round (`rounds`
groups them: a request opens a new round when every request before it had already been answered), and
returns each round's seconds: the server's own time for the same queries, without the added delay.
"""
from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

HOP_HEADERS = {"host", "content-length", "transfer-encoding", "connection", "content-encoding"}


@dataclass
class Logged:
    """One request that passed through the proxy (times are `time.perf_counter()` seconds)."""

    method: str
    query: list[tuple[str, str]]
    body: bytes
    headers: dict[str, str]
    arrived: float
    finished: float = field(default=0.0)
    upstream: float = field(default=0.0)  # seconds the server took (sent after the delay, until its answer was read)


def ack_now(response: aiohttp.ClientResponse) -> None:
    """Acknowledge a response's headers at once (TCP_QUICKACK), as kgfed's own transport does.

    Virtuoso writes a large answer's headers and body separately with Nagle on: the body waits for the
    headers' ACK, which a kept-alive connection delays ~40 ms. Without this, the proxy's hop to the server
    (and `replay`) added that stall to every answer over ~32 KB, which kgfed talking to the server
    directly does not pay (`kgfed.endpoints.transport.AiohttpTransport`)."""
    option = getattr(socket, "TCP_QUICKACK", None)
    transport = response.connection.transport if response.connection is not None else None
    sock = transport.get_extra_info("socket") if transport is not None else None
    if option is not None and sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, option, 1)


def rounds(log: list[Logged]) -> list[list[Logged]]:
    """The round trips in sequence: a request starts a new round when it arrived after every request
    of the current round had been answered (concurrent requests share a round)."""
    out: list[list[Logged]] = []
    for item in sorted(log, key=lambda r: r.arrived):
        if out and item.arrived < max(r.finished for r in out[-1]):
            out[-1].append(item)
        else:
            out.append([item])
    return out


async def replay(url: str, requests: list[list[Logged]]) -> list[float]:
    """Send each round's requests to `url` at once (no added delay), rounds in sequence; each round's seconds."""
    seconds = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        async def one(item: Logged) -> None:
            async with session.request(item.method, url, params=item.query, data=item.body or None,
                                       headers=item.headers) as response:
                ack_now(response)
                await response.read()
                response.raise_for_status()

        for group in requests:
            started = time.perf_counter()
            await asyncio.gather(*(one(item) for item in group))
            seconds.append(time.perf_counter() - started)
    return seconds


class LatencyProxy:
    """Forwards GET/POST to `target` after `delay` seconds; counts requests and peak concurrency."""

    def __init__(self, target: str, delay: float = 0.1, *, record: bool = False):
        self.target = target
        self.record = record
        self.log: list[Logged] = []
        self.delay = delay
        self.requests = 0
        self.active = 0
        self.peak = 0
        self.url = ""
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    async def _forward(self, request: web.Request) -> web.Response:
        self.requests += 1
        self.active += 1
        self.peak = max(self.peak, self.active)
        arrived = time.perf_counter()
        try:
            await asyncio.sleep(self.delay)
            body = await request.read()
            headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_HEADERS}
            if self.record:
                logged = Logged(request.method, list(request.query.items()), body, headers, arrived)
                self.log.append(logged)
            sent = time.perf_counter()
            async with self._session.request(request.method, self.target, params=request.query, data=body or None,
                                             headers=headers) as upstream:
                ack_now(upstream)
                payload = await upstream.read()
                out = {k: v for k, v in upstream.headers.items() if k.lower() not in HOP_HEADERS}
            if self.record:
                logged.finished = time.perf_counter()
                logged.upstream = logged.finished - sent
            return web.Response(status=upstream.status, body=payload, headers=out)
        finally:
            self.active -= 1

    async def __aenter__(self) -> LatencyProxy:
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/sparql"
        return self

    async def __aexit__(self, *exc) -> None:
        if self._runner:
            await self._runner.cleanup()
        if self._session:
            await self._session.close()
