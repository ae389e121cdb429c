"""The real HTTP endpoint against a local server that misbehaves on purpose."""
from __future__ import annotations

import asyncio
import time

import pytest

from kgfed.cache.responses import ResponseCache
from kgfed.endpoints.client import HttpClient, parse_retry_after
from kgfed.endpoints.http import HttpEndpoint
from kgfed.endpoints.options import DEFAULT_TIMEOUT
from kgfed.engine.kg import KG
from kgfed.sparql.dialects import WIKIDATA
from kgfed.sparql.errors import EndpointError, PartialResult, RateLimited

from . import httpfaults as hf

QUERY = "SELECT ?x WHERE { ?x ?p ?o } LIMIT 1"


server = pytest.fixture(hf.serve, name="server")


def client(**kw) -> HttpClient:
    return HttpClient(**{"backoff": 0.01, "retries": 3, **kw})


async def select(server, policy="report", **kw):
    async with client(**kw) as c:
        return await HttpEndpoint(server.url, c, partial=policy).select(QUERY), c


async def test_success_parses_values_and_sends_polite_headers(server):
    server.script = [hf.ok()]
    result, _ = await select(server, user_agent="kgfed-test/1 (me@example.org)")
    assert result.rows[0]["x"].value == "http://www.wikidata.org/entity/Q42"
    seen = server.seen[0]
    assert seen.method == "GET" and seen.query == QUERY
    assert seen.headers["User-Agent"] == "kgfed-test/1 (me@example.org)"
    assert seen.headers["Accept"] == "application/sparql-results+json"


async def test_long_queries_are_posted(server):
    server.script = [hf.ok()]
    long_query = WIKIDATA.labels([f"Q{i}" for i in range(1, 400)])
    async with client() as c:
        await HttpEndpoint(server.url, c).select(long_query)
    assert server.seen[0].method == "POST" and server.seen[0].query == long_query


async def test_429_waits_for_retry_after_then_succeeds(server):
    server.script = [hf.status(429, {"Retry-After": "1"}), hf.ok()]
    started = time.monotonic()
    result, c = await select(server)
    assert time.monotonic() - started >= 0.95  # honoured the server's wait, not our backoff
    assert len(result.rows) == 1 and len(server.seen) == 2
    assert c.stats["rate_limited"] == 1


async def test_429_with_a_long_ban_fails_at_once_with_the_wait(server):
    server.script = [hf.status(429, {"Retry-After": "3600"})]
    with pytest.raises(RateLimited, match="3600 s") as info:
        await select(server)
    assert info.value.retry_after == 3600 and len(server.seen) == 1


async def test_500_then_success_is_retried(server):
    server.script = [hf.status(500), hf.status(503), hf.ok()]
    result, c = await select(server)
    assert len(result.rows) == 1 and len(server.seen) == 3 and c.stats["retries"] == 2


async def test_persistent_500_gives_up_after_the_budget(server):
    server.script = [hf.status(502, text="Bad gateway from upstream")]
    with pytest.raises(EndpointError, match=r"HTTP 502: Bad gateway from upstream \(gave up after 4 attempts\)"):
        await select(server)
    assert len(server.seen) == 4


async def test_400_is_not_retried_and_names_the_server_message(server):
    server.script = [hf.status(400, text="Virtuoso 37000 Error SP030: SPARQL compiler, line 1: syntax error")]
    with pytest.raises(EndpointError, match="HTTP 400: Virtuoso 37000 Error SP030"):
        await select(server)
    assert len(server.seen) == 1


async def test_timeout_is_reported_not_retried(server):
    server.script = [hf.ok(delay=2.0)]
    started = time.monotonic()
    with pytest.raises(EndpointError, match="timed out after 0.3 s"):
        await select(server, timeout=0.3)
    assert time.monotonic() - started < 1.5 and len(server.seen) == 1


@pytest.mark.parametrize("body", [b"<html>Service unavailable</html>", b'{"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "u',
                                  b"[1, 2, 3]", b'{"head": {}, "results": {"bindings": [{"x": {"value": "no type"}}]}}'])
async def test_malformed_or_truncated_json_is_a_clear_error(server, body):
    server.script = [hf.raw(body)]
    with pytest.raises(EndpointError) as info:
        await select(server)
    assert "\n" not in str(info.value) and str(info.value).startswith(("127.0.0.1", "malformed"))


async def test_connection_reset_is_retried(server):
    server.script = [hf.reset(), hf.ok()]
    result, c = await select(server)
    assert len(result.rows) == 1 and len(server.seen) == 2, (server.seen, c.stats)


async def test_truncated_transfer_is_retried_then_reported(server):
    server.script = [hf.short_body()]
    with pytest.raises(EndpointError, match="truncated|connection"):
        await select(server)
    assert len(server.seen) == 4


async def test_per_host_cap_bounds_concurrency(server):
    server.script = [hf.ok(delay=0.1)]
    async with client(per_host=3) as c:
        endpoint = HttpEndpoint(server.url, c)
        await asyncio.gather(*(endpoint.select(f"{QUERY} # {i}") for i in range(12)))
    assert server.peak == 3 and len(server.seen) == 12


async def test_errors_and_partial_answers_are_never_cached(server, tmp_path):
    cache = ResponseCache(tmp_path / "c")
    async with client() as c:
        kg = KG(HttpEndpoint(server.url, c, partial="allow"), WIKIDATA, cache=cache)  # partial answers returned, flagged
        server.script = [hf.status(500)]
        with pytest.raises(EndpointError):
            await kg.select(QUERY)
        assert len(cache) == 0
        server.script = [hf.ok(headers={"X-SQL-State": "S1TAT", "X-SQL-Message": "RC...: Returning incomplete results, query interrupted by result timeout."})]
        server.seen.clear()
        result = await kg.select(QUERY)
        assert result.partial and "incomplete" in result.note and len(cache) == 0
        server.script = [hf.ok()]
        await kg.select(QUERY)
        assert len(cache) == 1
        await kg.select(QUERY)
        assert kg.stats["cache_hits"] == 1


async def test_virtuoso_partial_retry_raises_the_timeout(server):
    partial = hf.ok(headers={"X-SQL-State": "S1TAT"})
    server.script = [partial, partial, hf.ok()]
    result, _ = await select(server, policy="retry")
    assert not result.partial
    first = int(DEFAULT_TIMEOUT * 1000)  # the client's own limit, then 4x longer each time, at most max_timeout_ms
    assert [s.params.get("timeout") for s in server.seen] == [str(first), str(first * 4), "600000"]


async def test_virtuoso_partial_error_policy_raises(server):
    server.script = [hf.ok(headers={"X-SQL-State": "S1TAT"})]
    with pytest.raises(PartialResult, match="partial result"):
        await select(server, policy="error")


async def test_row_cap_marks_result_partial(server):
    server.script = [hf.ok()]
    async with client() as c:
        result = await HttpEndpoint(server.url, c, max_rows=1, partial="allow").select("SELECT ?x WHERE { ?x ?p ?o }")
        with pytest.raises(PartialResult, match="ResultSetMaxRows"):  # the default policy: never silent
            await HttpEndpoint(server.url, c, max_rows=1).select("SELECT ?x WHERE { ?x ?p ?o }")
    assert result.partial and "ResultSetMaxRows" in result.note


async def test_in_flight_identical_queries_share_one_request(server, tmp_path):
    server.script = [hf.ok(delay=0.2)]
    async with client() as c:
        kg = KG(HttpEndpoint(server.url, c), WIKIDATA, cache=ResponseCache(tmp_path / "c"))
        results = await asyncio.gather(*(kg.select(QUERY) for _ in range(6)))
    assert len(server.seen) == 1 and all(r.rows == results[0].rows for r in results)
    assert kg.stats["shared"] == 5  # (the key is the exact text: a reformatted query is another request)


def test_retry_after_parsing():
    assert parse_retry_after("120") == 120
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert 0 <= parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


async def test_connection_reset_every_time_is_a_clear_error(server):
    server.script = [hf.reset()]
    with pytest.raises(EndpointError, match=r"connection failed .*gave up after 4 attempts"):
        await select(server)
