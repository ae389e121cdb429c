"""Virtuoso's partial answers on a real server: the anytime timeout (HTTP 200 + `X-SQL-State: S1TAT`)
and the `ResultSetMaxRows` cap raise `PartialResult` by default, are retried (then raised) or returned
flagged with `partial="allow"`, and are never stored by the response cache."""
from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from kgfed.cache.responses import CachedEndpoint, ResponseCache
from kgfed.endpoints.client import HttpClient
from kgfed.endpoints.http import HttpEndpoint
from kgfed.endpoints.servers import VirtuosoServer
from kgfed.sparql.errors import PartialResult
from tests.conftest_servers import _start, shared_file

pytestmark = pytest.mark.virtuoso

GRAPH = "http://kgfed.test/graph/partial"
CAP = 50  # ResultSetMaxRows of the throwaway server
# a three-way cross product (~10^13 rows): never done within any timeout used here, however idle the machine
HEAVY = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?p ?b . ?c ?q ?d . ?e ?r ?f }"
ALL_TRIPLES = "SELECT ?s ?p ?o WHERE { ?s ?p ?o }"


@pytest.fixture(scope="module")
def tiny_virtuoso() -> Iterator[VirtuosoServer]:
    """A Virtuoso of its own with a 50-row cap and a 2 s query-time ceiling, over cwq_subgraph.nt."""
    data = shared_file("freebase/cwq_subgraph.nt")
    server = _start(lambda: VirtuosoServer({GRAPH: [data]}, result_set_max_rows=CAP, max_query_execution_time=2))
    try:
        yield server
    finally:
        server.stop()


def _run(server: VirtuosoServer, tmp_path, queries: list[str], **options):
    """Send `queries` through cache → HttpEndpoint; returns (results or exceptions, cache size, stats, requests)."""

    async def go():
        cache = ResponseCache(tmp_path / "cache")
        async with HttpClient(per_host=4, timeout=60) as client:
            http = HttpEndpoint(server.url, client, default_graph=GRAPH, **options)
            cached = CachedEndpoint(http, cache)
            out = []
            for query in queries:
                try:
                    out.append(await cached.select(query))
                except PartialResult as exc:
                    out.append(exc)
            return out, len(cache), cached.stats, http.requests

    return asyncio.run(go())


def test_anytime_timeout_is_partial_and_not_cached(tiny_virtuoso, tmp_path):
    """With `timeout=200` ms Virtuoso answers 200 OK with incomplete rows: reported, never cached."""
    (first, second), cached, stats, requests = _run(tiny_virtuoso, tmp_path, [HEAVY, HEAVY], timeout_ms=200, partial="allow")
    assert first.partial and "incomplete results" in first.note  # Virtuoso's own X-SQL-Message
    assert second.partial
    assert cached == 0 and stats["cache_hits"] == 0 and stats["partial"] == 2 and requests == 2


def test_anytime_timeout_retry_and_error_policies(tiny_virtuoso, tmp_path):
    """`partial="retry"` re-sends with a 4x longer timeout up to the ceiling, then raises (never a silent
    partial answer); `partial="error"` (the default) raises at once."""
    (result,), cached, _, requests = _run(tiny_virtuoso, tmp_path, [HEAVY], timeout_ms=100, partial="retry", max_timeout_ms=400)
    assert isinstance(result, PartialResult) and "after 2 attempts" in str(result)
    assert requests == 2 and cached == 0  # 100 ms, then 400 ms, still incomplete
    (error,), cached, _, _ = _run(tiny_virtuoso, tmp_path, [HEAVY], timeout_ms=200)
    assert isinstance(error, PartialResult) and "partial result" in str(error) and cached == 0


def test_row_cap_truncation_is_partial_and_not_cached(tiny_virtuoso, tmp_path):
    """A result cut at ResultSetMaxRows (declared as `max_rows`) is partial; a small complete one is cached."""
    small = f"SELECT ?s ?p ?o WHERE {{ ?s ?p ?o }} LIMIT {CAP // 5}"
    (cut, whole), cached, stats, _ = _run(tiny_virtuoso, tmp_path, [ALL_TRIPLES, small], max_rows=CAP, partial="allow")
    assert len(cut.rows) == CAP and cut.partial and "ResultSetMaxRows" in cut.note
    assert len(whole.rows) == CAP // 5 and not whole.partial
    assert cached == 1 and stats["partial"] == 1
    (again, _), cached, stats, requests = _run(tiny_virtuoso, tmp_path, [ALL_TRIPLES, small], max_rows=CAP, partial="allow")
    assert again.partial and stats["cache_hits"] == 1 and requests == 1  # only the complete answer came from the cache


def test_row_cap_below_query_limit_is_partial(tiny_virtuoso, tmp_path):
    query = f"SELECT ?s ?p ?o WHERE {{ ?s ?p ?o }} LIMIT {CAP + 10}"
    (cut,), cached, _, _ = _run(tiny_virtuoso, tmp_path, [query], max_rows=CAP, partial="allow")
    assert len(cut.rows) == CAP  # Virtuoso returned 50 of the 60 rows asked for
    assert cut.partial and cached == 0


def test_row_cap_detected_from_the_header_alone(tiny_virtuoso, tmp_path):
    """Without `max_rows` configured, Virtuoso's X-SPARQL-MaxRows header (sent only when the cap cut
    the answer) marks truncation; an answer under the cap is complete and cached."""
    over, under = f"{ALL_TRIPLES} LIMIT {CAP + 10}", f"{ALL_TRIPLES} LIMIT {CAP - 10}"
    (cut, whole, unlimited), cached, stats, _ = _run(tiny_virtuoso, tmp_path, [over, under, ALL_TRIPLES], partial="allow")
    assert len(cut.rows) == CAP and cut.partial and f"cap of {CAP} rows" in cut.note
    assert len(unlimited.rows) == CAP and unlimited.partial
    assert len(whole.rows) == CAP - 10 and not whole.partial
    assert cached == 1 and stats["partial"] == 2
