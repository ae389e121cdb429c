"""A local aiohttp server whose answers a test scripts: faults, delays, headers, and what it saw."""
from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from aiohttp import web

OK_BODY = {"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "uri", "value": "http://www.wikidata.org/entity/Q42"}}]}}


@dataclass
class Seen:
    method: str
    query: str | None
    params: dict
    headers: dict


@dataclass
class FaultServer:
    """Serves `script[i]` for the i-th request (the last entry repeats)."""

    script: list[Callable[[web.Request], asyncio.Future | web.StreamResponse]] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    active: int = 0
    peak: int = 0
    url: str = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        form = dict(await request.post()) if request.method == "POST" else {}
        params = {**request.query, **form}
        self.seen.append(Seen(request.method, params.get("query"), params, dict(request.headers)))
        step = self.script[min(len(self.seen) - 1, len(self.script) - 1)]
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            return await step(request)
        finally:
            self.active -= 1


def ok(body=OK_BODY, delay: float = 0.0, headers: dict | None = None):
    async def step(request):
        if delay:
            await asyncio.sleep(delay)
        return web.Response(body=json.dumps(body), content_type="application/sparql-results+json", headers=headers)
    return step


def status(code: int, headers: dict | None = None, text: str = "error"):
    async def step(request):
        return web.Response(status=code, text=text, headers=headers)
    return step


def raw(body: bytes, content_type: str = "application/sparql-results+json"):
    async def step(request):
        return web.Response(body=body, content_type=content_type)
    return step


def reset():
    """Drop the connection without answering."""
    async def step(request):
        request.transport.close()
        await asyncio.sleep(0.05)
        return web.Response(text="never sent")
    return step


def short_body():
    """Promise more bytes than are sent, then close: a truncated body at the transport level."""
    async def step(request):
        resp = web.StreamResponse(headers={"Content-Type": "application/sparql-results+json", "Content-Length": "500"})
        await resp.prepare(request)
        await resp.write(b'{"head": {"vars": ["x"]}, "results": {"bind')
        request.transport.close()
        return resp
    return step


async def start(server: FaultServer) -> web.AppRunner:
    app = web.Application()
    app.router.add_route("*", "/sparql", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    server.url = f"http://127.0.0.1:{port}/sparql"
    return runner


async def serve() -> AsyncIterator[FaultServer]:
    """A started `FaultServer`, cleaned up afterwards: a test module's fixture is
    `server = pytest.fixture(hf.serve, name="server")`."""
    server = FaultServer()
    runner = await start(server)
    try:
        yield server
    finally:
        await runner.cleanup()
