"""Fair lanes and warm workers for the MCP `sparql` tool (issue 41 item 5): no caller holds every lane, a third
caller's cheap query waits behind one running query (not behind the heavy callers' queues), a cancelled query is
interrupted without killing its worker where the worker can stop, and a worker being replaced never makes another
caller's call fail. Real pyoxigraph worker processes over the CWQ fixture; real asyncio scheduling."""
from __future__ import annotations

import asyncio
import os
import signal

import pytest

from kgfed.endpoints.embedded import QueryWorkers
from kgfed.engine.config import HttpOptions, KGSpec
from kgfed.engine.mcp.lanes import FairLanes, caller_of
from kgfed.engine.mcp.service import Engine, ServerOptions
from kgfed.sparql.errors import EndpointError, EndpointTimeout

from .conftest import CWQ_NT, need

COUNT_CROSS = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f }"  # evaluates for minutes, writes nothing until then
STREAM_CROSS = "SELECT * WHERE { ?a ?b ?c . ?d ?e ?f }"  # writes its rows as they come: interruptible


# -- the lanes themselves ----------------------------------------------------------------------------
async def test_no_caller_holds_every_lane_and_a_new_caller_goes_next():
    lanes = FairLanes(2)
    order: list[str] = []
    gates = {name: asyncio.Event() for name in ("a1", "a2", "a3", "b1", "b2", "c1")}

    async def call(caller: str, name: str) -> None:
        async with lanes.lane(caller):
            order.append(name)
            await gates[name].wait()

    tasks = [asyncio.create_task(call("a", n)) for n in ("a1", "a2", "a3")]
    await asyncio.sleep(0)
    tasks += [asyncio.create_task(call("b", n)) for n in ("b1", "b2")]
    await asyncio.sleep(0.05)
    assert order == ["a1", "b1"] and lanes.held == {"a": 1, "b": 1}  # a asked first, for three, and got one
    tasks.append(asyncio.create_task(call("c", "c1")))
    await asyncio.sleep(0.05)
    gates["a1"].set()  # a's lane frees: c (never served) goes before a's and b's queued calls
    await asyncio.sleep(0.05)
    assert order == ["a1", "b1", "c1"]
    for name in ("b1", "c1"):
        gates[name].set()
    await asyncio.sleep(0.05)
    assert order[3:] == ["a2", "b2"]  # then round robin between the heavy callers
    for gate in gates.values():
        gate.set()
    await asyncio.gather(*tasks)
    assert lanes.free == 2 and not lanes.held


async def test_a_waiter_that_gives_up_leaves_no_lane_behind():
    lanes = FairLanes(1)
    hold = asyncio.Event()

    async def call(caller: str) -> None:
        async with lanes.lane(caller):
            await hold.wait()

    first = asyncio.create_task(call("a"))
    waiting = [asyncio.create_task(call(c)) for c in ("b", "c")]
    await asyncio.sleep(0.05)
    waiting[0].cancel()
    hold.set()
    await asyncio.gather(first, waiting[1], return_exceptions=True)
    assert waiting[0].cancelled() and lanes.free == 1 and not lanes.held


# -- through the MCP engine ---------------------------------------------------------------------------
@pytest.mark.slow
async def test_a_third_callers_cheap_query_waits_for_one_heavy_query_not_for_their_queues():
    options = ServerOptions(kgs=(KGSpec("cwq", f"file:{need(CWQ_NT)}", dialect="freebase"),),
                            http=HttpOptions(timeout=2), query_workers=2)
    engine = Engine.open(options)
    finished: list[str] = []

    async def ask(caller: str, name: str, query: str) -> None:
        try:
            await engine.sparql(query, "cwq", 10, False, caller=caller)
        except EndpointTimeout:
            pass
        finished.append(name)

    try:
        await engine.sparql("ASK { ?s ?p ?o }", "cwq", 10, False, caller="warm-up")
        heavy = [asyncio.create_task(ask(caller, f"{caller}{i}", COUNT_CROSS)) for i in range(3) for caller in "ab"]
        await asyncio.sleep(0.5)
        cheap = asyncio.create_task(ask("c", "c", "ASK { ?s ?p ?o }"))
        await asyncio.gather(cheap, *heavy)
    finally:
        await engine.aclose()
    # c answered right after the first heavy query that ended, before either heavy caller's second query
    assert finished.index("c") <= 2 and finished.index("c") < min(finished.index("a1"), finished.index("b1")), finished


# -- warm workers ---------------------------------------------------------------------------------------
async def test_a_cancelled_streaming_query_is_interrupted_and_its_worker_kept():
    pool = QueryWorkers([str(need(CWQ_NT))], size=1)
    try:
        assert (await pool.select("ASK { ?s ?p ?o }", 30)).boolean is True
        (pid,) = pool.pids()
        task = asyncio.create_task(pool.select(STREAM_CROSS, 60, max_bytes=200 << 20))
        await asyncio.sleep(1.0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        answer = await pool.select("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", 30)
        assert int(answer.rows[0]["n"].value) > 20_000
        assert pool.pids() == [pid] and pool.stats == {"started": 1, "killed": 0, "died": 0, "interrupted": 1}
    finally:
        await pool.aclose()


async def test_a_query_that_cannot_stop_is_killed_after_the_grace_and_another_caller_waits_for_the_replacement():
    pool = QueryWorkers([str(need(CWQ_NT))], size=1)
    try:
        await pool.select("ASK { ?s ?p ?o }", 30)
        (pid,) = pool.pids()
        heavy = asyncio.create_task(pool.select(COUNT_CROSS, 1.0))
        await asyncio.sleep(0.2)
        cheap = asyncio.create_task(pool.select("ASK { ?s ?p ?o }", 1.0))  # its 1 s pass while the heavy one settles
        with pytest.raises(EndpointTimeout, match="ran over 1 s"):
            await heavy
        assert (await cheap).boolean is True  # answered by the replacement, not "every query worker ... was busy"
        assert pid not in pool.pids() and pool.stats["killed"] == 1 and pool.stats["started"] == 2
    finally:
        await pool.aclose()


async def test_calls_in_flight_at_a_stop_are_told_so_not_that_they_ran_out_of_memory():
    pool = QueryWorkers([str(need(CWQ_NT))], size=2)
    try:
        await asyncio.gather(pool.select("ASK { ?s ?p ?o }", 30), pool.select("ASK { ?s ?p ?o }", 30))
        calls = [asyncio.create_task(pool.select(COUNT_CROSS, 60)) for _ in range(2)]
        await asyncio.sleep(0.5)
        os.kill(pool.pids()[0], signal.SIGINT)  # Ctrl-C on a terminal reaches the workers too
        done, pending = await asyncio.wait(calls, timeout=30, return_when=asyncio.FIRST_COMPLETED)
        pool.close()  # the server shutting down (stop_query_workers) ends the other one
        await asyncio.wait(pending, timeout=30)
    finally:
        await pool.aclose()
    assert len(done) == 1 and len(pending) == 1
    for call in calls:
        message = str(call.exception())
        assert isinstance(call.exception(), EndpointError), message
        assert message.startswith("the query was stopped because kgfed is shutting down"), message
        assert "MB" not in message and "--query-memory" not in message


@pytest.mark.slow
async def test_over_mcp_http_each_client_session_is_a_caller():
    """The same check through `kgfed mcp --transport http` and three SDK clients of the stateful protocol (an
    `Mcp-Session-Id` each): the lanes key on the MCP session, whatever connections its calls use."""
    pytest.importorskip("mcp")
    from mcp import Client

    from .test_mcp import http_server

    finished: list[str] = []

    async def ask(client, name: str, query: str) -> None:
        await client.call_tool("sparql", {"query": query})
        finished.append(name)

    async with http_server("--kg", "freebase", "--endpoint", f"freebase=file:{need(CWQ_NT)}", "--timeout", "3",
                           "--no-cache") as url:
        async with Client(url, mode="legacy") as a, Client(url, mode="legacy") as b, Client(url, mode="legacy") as c:
            await ask(c, "warm-up", "ASK { ?s ?p ?o }")
            heavy = [asyncio.create_task(ask(client, f"{name}{i}", COUNT_CROSS))
                     for i in range(3) for name, client in (("a", a), ("b", b))]
            await asyncio.sleep(1.0)
            await asyncio.gather(asyncio.create_task(ask(c, "c", "ASK { ?s ?p ?o }")), *heavy)
    finished.remove("warm-up")
    assert finished.index("c") <= 2 and finished.index("c") < min(finished.index("a1"), finished.index("b1")), finished


def test_the_caller_of_a_request():
    from types import SimpleNamespace as NS

    def ctx(request):
        return NS(request_context=NS(request=request))

    assert caller_of(ctx(None)) == "stdio" and caller_of(NS()) is None
    session = NS(headers={"mcp-session-id": "abc"}, client=NS(host="127.0.0.1", port=1))
    assert caller_of(ctx(session)) == ("session", "abc")
    auth = caller_of(ctx(NS(headers={"authorization": "Bearer s3cr3t-token"}, client=NS(host="127.0.0.1", port=2))))
    assert auth[0] == "auth" and "s3cr3t" not in repr(auth)
    assert caller_of(ctx(NS(headers={}, client=NS(host="127.0.0.1", port=3)))) == ("peer", "127.0.0.1", 3)


async def test_stdios_one_client_may_use_every_lane():
    lanes = FairLanes(2)
    gate = asyncio.Event()

    async def call(caller) -> None:
        async with lanes.lane(caller):
            await gate.wait()

    tasks = [asyncio.create_task(call(c)) for c in ("stdio", "stdio", None)]
    await asyncio.sleep(0.05)
    assert lanes.held == {"stdio": 2} and lanes.free == 0
    gate.set()
    await asyncio.gather(*tasks)


@pytest.mark.slow
async def test_a_caller_cancelling_over_and_over_kills_one_worker_not_every_one():
    """Its stopped call holds its lane until the worker is back, so its next calls wait there, not in another worker."""
    options = ServerOptions(kgs=(KGSpec("cwq", f"file:{need(CWQ_NT)}", dialect="freebase"),),
                            http=HttpOptions(timeout=10), query_workers=2)
    engine = Engine.open(options)
    try:
        await engine.sparql("ASK { ?s ?p ?o }", "cwq", 10, False, caller="y")
        storm = []
        for _ in range(4):
            storm.append(asyncio.create_task(engine.sparql(COUNT_CROSS, "cwq", 10, False, caller="x")))
            await asyncio.sleep(0.3)
            storm[-1].cancel()
        answer = await asyncio.wait_for(engine.sparql("SELECT ?s WHERE { ?s ?p ?o } LIMIT 3", "cwq", 10, False, caller="y"), 5)
        await asyncio.gather(*storm, return_exceptions=True)
        workers = engine.kgs["cwq"].endpoint.inner._workers
        assert answer[0]["row_count"] == 3 and all(t.cancelled() for t in storm)
        assert workers.stats["killed"] == 1, workers.stats  # the first call's worker; the others never got one
    finally:
        await engine.aclose()
