"""A loopback HTTP proxy that adds a fixed delay to every request: a stand-in for a remote endpoint.

    async with LatencyProxy("http://127.0.0.1:7878/query", delay=0.1) as proxy:
        proxy.url  # send SPARQL here; proxy.requests counts what passed through
"""
from __future__ import annotations

import asyncio

import aiohttp
from aiohttp import web

HOP_HEADERS = {"host", "content-length", "transfer-encoding", "connection", "content-encoding"}


class LatencyProxy:
    """Forwards GET/POST to `target` after `delay` seconds; counts requests and peak concurrency."""

    def __init__(self, target: str, delay: float = 0.1):
        self.target = target
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
        try:
            await asyncio.sleep(self.delay)
            body = await request.read()
            headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_HEADERS}
            async with self._session.request(request.method, self.target, params=request.query, data=body or None,
                                             headers=headers) as upstream:
                payload = await upstream.read()
                out = {k: v for k, v in upstream.headers.items() if k.lower() not in HOP_HEADERS}
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
