"""Every untrusted query is bounded: the embedded store's killable workers (time, memory, a caller that gives
up) and the HTTP transport's response-size cap, on the real components (pyoxigraph, aiohttp on 127.0.0.1)."""
from __future__ import annotations

import asyncio
import gzip
import time

import pytest

from kgfed.endpoints.client import HttpClient
from kgfed.endpoints.embedded import INTERRUPT_GRACE, EmbeddedEndpoint, bounded
from kgfed.endpoints.http import HttpEndpoint
from kgfed.endpoints.transport import AiohttpTransport, ResponseTooLarge
from kgfed.sparql.errors import EndpointError, EndpointTimeout

from .conftest import CWQ_NT, need

CROSS = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f }"
NAME = "http://rdf.freebase.com/ns/type.object.name"
PATH = f"SELECT * WHERE {{ ?a (<{NAME}>|!<{NAME}>)* ?b }}"


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


async def test_worker_answers_equal_the_in_process_store():
    need(CWQ_NT)
    endpoint = EmbeddedEndpoint([CWQ_NT])
    try:
        queries = ["SELECT ?p (COUNT(*) AS ?n) WHERE { ?s ?p ?o } GROUP BY ?p ORDER BY DESC(?n) ?p LIMIT 20",
                   f'SELECT ?s ?o WHERE {{ ?s <{NAME}> ?o FILTER(LANG(?o) = "en") }} ORDER BY ?s LIMIT 50',
                   "ASK { ?s ?p ?o }"]
        for query in queries:
            local = await endpoint.select(query)
            with bounded(timeout=30, memory_mb=256):
                remote = await endpoint.select(query)
            assert remote.vars == local.vars and remote.rows == local.rows and len(remote.rows) > 0
        with bounded(timeout=30):
            with pytest.raises(EndpointError, match="rejected the query"):
                await endpoint.select("SELECT * WHERE { ?a ?b }")
        assert endpoint._workers.stats["killed"] == 0
    finally:
        await endpoint.aclose()
    assert all(not alive(pid) for pid in endpoint._workers.pids()) or not endpoint._workers.pids()


async def test_a_query_past_its_timeout_is_stopped_and_its_worker_replaced():
    need(CWQ_NT)
    endpoint = EmbeddedEndpoint([CWQ_NT])
    try:
        with bounded(timeout=2, memory_mb=512, workers=1):
            await endpoint.select("ASK { ?s ?p ?o }")
            (pid,) = endpoint._workers.pids()
            started = time.monotonic()
            with pytest.raises(EndpointTimeout, match="ran over 2 s and was stopped"):
                await endpoint.select(CROSS)
            assert time.monotonic() - started < 4
            await asyncio.sleep(INTERRUPT_GRACE + 0.5)  # a COUNT writes nothing until the end: no interrupt can land
            assert not alive(pid)  # the query did not run on: its process is gone, its memory with it
            assert endpoint._workers.stats["killed"] == 1
            answer = await endpoint.select("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")  # the replacement answers
            assert int(answer.rows[0]["n"].value) == len(endpoint.store)
    finally:
        await endpoint.aclose()


async def test_a_caller_that_gives_up_cancels_its_query():
    need(CWQ_NT)
    endpoint = EmbeddedEndpoint([CWQ_NT])
    try:
        with bounded(timeout=60, workers=1):
            await endpoint.select("ASK { ?s ?p ?o }")
            (pid,) = endpoint._workers.pids()
            task = asyncio.create_task(endpoint.select(CROSS))
            await asyncio.sleep(0.5)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.sleep(INTERRUPT_GRACE + 0.5)
            assert not alive(pid) and endpoint._workers.stats["killed"] == 1
    finally:
        await endpoint.aclose()


@pytest.mark.slow
async def test_the_memory_ceiling_ends_an_exploding_path_query():
    need(CWQ_NT)
    endpoint = EmbeddedEndpoint([CWQ_NT])
    try:
        with bounded(timeout=60, memory_mb=200, workers=1):
            started = time.monotonic()
            with pytest.raises(EndpointError, match="200 MB query memory ceiling"):
                await endpoint.select(PATH)
            assert time.monotonic() - started < 60
            assert endpoint._workers.stats["died"] == 1
            assert (await endpoint.select("ASK { ?s ?p ?o }")).rows  # a fresh worker took its place
    finally:
        await endpoint.aclose()


# -- the HTTP transport's body cap ------------------------------------------------------------------
async def _serve(handler):
    from aiohttp import web

    app = web.Application()
    app.router.add_route("*", "/sparql", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    return runner, f"http://127.0.0.1:{port}/sparql"


async def test_a_gzip_bomb_stops_at_the_body_cap():
    from aiohttp import web

    row = b'{"s":{"type":"literal","value":"' + b"x" * 1000 + b'"}},'
    inflated = b'{"head":{"vars":["s"]},"results":{"bindings":[' + row * 64_000 + b'{}]}}'  # ~66 MB
    bomb = gzip.compress(inflated, 9)
    assert len(bomb) < 1 << 20

    async def handler(request):
        return web.Response(body=bomb, headers={"Content-Encoding": "gzip",
                                                "Content-Type": "application/sparql-results+json"})

    runner, url = await _serve(handler)
    try:
        async with HttpClient(transport=AiohttpTransport(max_body_bytes=4 << 20), retries=0) as client:
            endpoint = HttpEndpoint(url, client)
            with pytest.raises(ResponseTooLarge, match=r"passed 4194304 bytes \(the cap is 4 MiB, decompressed\)"):
                await endpoint.select("SELECT ?s WHERE { ?s ?p ?o }")
        async with HttpClient(transport=AiohttpTransport(max_body_bytes=128 << 20), retries=0) as client:
            result = await HttpEndpoint(url, client).select("SELECT ?s WHERE { ?s ?p ?o }")
            assert len(result.rows) == 64_001
    finally:
        await runner.cleanup()


async def test_a_worker_that_cannot_start_is_one_line_not_a_wait(monkeypatch, tmp_path):
    need(CWQ_NT)
    import kgfed.endpoints.embedded as embedded

    monkeypatch.setattr(embedded.sys, "executable", str(tmp_path / "no-python"))
    endpoint = EmbeddedEndpoint([CWQ_NT])
    try:
        with bounded(timeout=30, workers=1):
            started = time.monotonic()
            with pytest.raises(EndpointError, match="could not start a query worker .*FileNotFoundError"):
                await endpoint.select("ASK { ?s ?p ?o }")
            assert time.monotonic() - started < 5
    finally:
        await endpoint.aclose()
