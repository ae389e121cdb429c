"""Structured concurrency of the KG: a shared in-flight request outlives any one cancelled caller and is
cancelled when the last one leaves; one failing batch cancels its siblings (TaskGroup); a closed KG
refuses new calls and ends the ones in flight with `Closed`; nothing is left unclosed."""
from __future__ import annotations

import asyncio
import time

import pytest

from kgfed.cache.options import CacheOptions
from kgfed.cache.responses import ResponseCache
from kgfed.endpoints.client import HttpClient
from kgfed.endpoints.http import HttpEndpoint
from kgfed.engine.kg import KG
from kgfed.sparql.dialects import WIKIDATA
from kgfed.sparql.errors import Closed, EndpointError

from . import httpfaults as hf
from .test_answer_validation import CALLS, answering, right_body, server  # noqa: F401  (server: the fixture)
from .unclosed import no_unclosed  # noqa: F401  (fixture)

QUERY = "SELECT ?x WHERE { ?x ?p ?o } LIMIT 1"


async def test_cancelling_one_caller_leaves_the_others_their_shared_answer(server, tmp_path, no_unclosed):
    server.script = [hf.ok(delay=0.3)]
    async with HttpClient() as client:
        kg = KG(HttpEndpoint(server.url, client), WIKIDATA, cache=ResponseCache(tmp_path / "c"))
        first = asyncio.ensure_future(kg.select(QUERY))
        second = asyncio.ensure_future(kg.select(QUERY))
        await asyncio.sleep(0.05)
        first.cancel()
        result = await second
        assert first.cancelled() and result.rows[0]["x"].value.endswith("Q42")
        assert len(server.seen) == 1 and kg.stats["shared"] == 1
        assert await kg.select(QUERY) is not None and kg.stats["cache_hits"] == 1  # and it was cached
        await kg.aclose()


async def test_the_request_is_cancelled_when_its_last_caller_leaves(server, no_unclosed):
    server.script = [hf.ok(delay=0.5)]
    async with HttpClient() as client:
        kg = KG(HttpEndpoint(server.url, client), WIKIDATA, cache=None)
        callers = [asyncio.ensure_future(kg.select(QUERY)) for _ in range(3)]
        await asyncio.sleep(0.05)
        flight = next(iter(kg.endpoint._inflight.values()))
        for caller in callers:
            caller.cancel()
        await asyncio.gather(*callers, return_exceptions=True)
        await asyncio.sleep(0)
        assert flight.task.cancelled() and kg.endpoint._inflight == {}
        await kg.aclose()


async def test_one_failing_batch_cancels_its_siblings(server, no_unclosed):
    """labels() over 4 batches: the first answers 400 at once, the others would take 2 s each."""
    async def step(request):
        if len(server.seen) == 1:
            return await hf.status(400, text="syntax error")(request)
        return await hf.ok(delay=2.0)(request)

    server.script = [step]
    async with HttpClient(retries=0) as client:
        kg = KG(HttpEndpoint(server.url, client), WIKIDATA, cache=None, batch_size=1)
        started = time.monotonic()
        with pytest.raises(EndpointError, match="HTTP 400"):
            await kg.labels(["Q1", "Q2", "Q3", "Q4"])
        assert time.monotonic() - started < 1.5
        await asyncio.sleep(0)
        assert kg.endpoint._inflight == {}  # siblings cancelled, not left retrying
        await kg.aclose()
    sent = len(server.seen)
    await asyncio.sleep(0.2)
    assert len(server.seen) == sent <= 4


async def test_a_closed_kg_refuses_every_call_and_ends_queries_in_flight(server, no_unclosed):
    server.script = [hf.ok(delay=1.0)]
    kg = KG.open(server.url, dialect="wikidata", cache=False)  # owns its HttpClient
    pending = asyncio.ensure_future(kg.select(QUERY))
    await asyncio.sleep(0.05)
    await kg.aclose()
    with pytest.raises(Closed, match="closed"):
        await pending
    for name, call in CALLS.items():
        with pytest.raises(Closed) as info:
            await call(kg)
        assert "\n" not in str(info.value), name
    await kg.aclose()  # idempotent


async def test_kg_open_with_its_own_client_and_cache_leaves_nothing_open(server, tmp_path, no_unclosed):
    server.script = [answering(right_body)]
    async with KG.open(server.url, dialect="wikidata", cache=CacheOptions(root=str(tmp_path / "c"))) as kg:
        for call in CALLS.values():
            await call(kg)
    assert kg.closed and kg.endpoint.cache._closed
    assert len(ResponseCache(tmp_path / "c")) == len(server.seen)  # flushed on close: every answer stored


async def test_cancelling_a_batched_call_keeps_what_others_share_and_ends_the_rest(server, no_unclosed):
    """Two labels() calls share Q1's and Q2's requests; the first also asks Q3 alone. Cancelling the first
    ends Q3's request only; the second still gets its answer from the shared ones."""
    async with HttpClient() as client:
        kg = KG(HttpEndpoint(server.url, client), WIKIDATA, cache=None, batch_size=1)
        server.script = [hf.ok(delay=0.4, body={"head": {"vars": ["id", "label", "desc", "alias"]},
                                                "results": {"bindings": []}})]
        first = asyncio.ensure_future(kg.labels(["Q1", "Q2", "Q3"]))
        await asyncio.sleep(0.05)
        second = asyncio.ensure_future(kg.labels(["Q1", "Q2"]))
        await asyncio.sleep(0.05)
        assert len(kg.endpoint._inflight) == 3
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
        assert first.cancelled() and len(kg.endpoint._inflight) == 2  # Q3's request ended with its caller
        labels = await second
        assert set(labels) == {"Q1", "Q2"} and kg.stats["shared"] == 2 and len(server.seen) == 3
        await kg.aclose()
