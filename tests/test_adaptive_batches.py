"""Adaptive batches against real local servers that time out heavy `VALUES` blocks as QLever, WDQS and
Virtuoso do (`tests/timeoutserver.py`): the batched calls split, re-ask and answer exactly what the
healthy server answers; the working batch size drops for the rest of the run; only complete answers
are cached; a single item that still times out is an error naming it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest

from kgfed.cache.responses import ResponseCache, cache_key
from kgfed.endpoints.client import HttpClient
from kgfed.endpoints.http import HttpEndpoint
from kgfed.engine.kg import KG
from kgfed.sparql.dialects import FREEBASE
from kgfed.sparql.errors import EndpointTimeout, OfflineMiss, PartialResult, QueryTimeout

from .conftest import CWQ_NT, CWQ_QUESTIONS, ROOT, need
from .timeoutserver import TimeoutServer, values_terms
from .unclosed import no_unclosed  # noqa: F401  (fixture)

SHAPES = ["qlever", "wdqs", "wdqs-stream", "virtuoso", "slow"]


def cwq_topics(n: int) -> list[str]:
    seen: dict[str, None] = {}
    with open(need(CWQ_QUESTIONS), encoding="utf-8") as fh:
        for line in fh:
            for mid in json.loads(line)["topic_entity"]:
                seen[mid] = None
            if len(seen) >= n:
                break
    return list(seen)[:n]


@pytest.fixture(scope="module")
def healthy(cwq_store):
    with TimeoutServer(cwq_store, shape=None) as server:
        yield server


def _kg(url: str, client: HttpClient, cache=None, **options) -> KG:
    partial = options.pop("partial", "error")
    return KG(HttpEndpoint(url, client, partial=partial, timeout_ms=1000, max_timeout_ms=4000), FREEBASE, cache=cache,
              **options)


async def _answers(url: str, entities: list[str], **options):
    async with HttpClient(timeout=options.pop("timeout", 30.0), retries=1, backoff=0.01) as client:
        kg = _kg(url, client, **options)
        try:
            relations = await kg.relations_many(entities)
            edges = await kg.neighbors_many([(r.entity, r.relation, r.direction) for e in entities[:6] for r in relations[e][:3]])
            labels = await kg.labels(entities)
            return relations, edges, labels, kg.stats
        finally:
            await kg.aclose()


def test_values_blocks_are_counted_as_the_server_sees_them():
    assert values_terms(FREEBASE.relations(["m.0abc", "m.0def", "m.0ghi"], "out")) == 3
    assert values_terms(FREEBASE.neighbors([("m.0abc", "people.person.nationality"), ("m.0def", "film.film.genre")], "out")) == 2
    assert values_terms(FREEBASE.labels(["m.0abc"])) == 1
    assert values_terms("SELECT * WHERE { ?s ?p ?o }") == 0


@pytest.mark.parametrize("shape", SHAPES)
async def test_relations_many_over_40_entities_equals_the_healthy_answer(shape, healthy, cwq_store, no_unclosed):
    entities = cwq_topics(40)
    expected = await _answers(healthy.url, entities)
    options = {"partial": "retry"} if shape == "virtuoso" else {}
    if shape == "slow":  # heavy blocks answer after 3 s, the client waits 1 s (a loaded machine answers the rest in time)
        options["timeout"] = 1.0
    with TimeoutServer(cwq_store, shape=shape, max_terms=2, delay=3.0) as server:
        relations, edges, labels, stats = await _answers(server.url, entities, **options)
    assert relations == expected[0] and [list(v) for v in relations.values()] == [list(v) for v in expected[0].values()]
    assert sum(map(len, relations.values())) > 100  # a real answer, not two empty ones
    assert edges == expected[1] and labels == expected[2]
    assert not relations.partial and relations.source == server.url
    assert server.timeouts >= 5 and max(server.asked) > 2  # it did refuse the big blocks ...
    assert stats["batch_size"] == 2 and stats["batch_splits"] >= 5  # ... and the working size came down to what works
    assert stats["batch_timeouts"] >= 5


async def test_the_working_size_holds_for_the_rest_of_the_run(cwq_store, no_unclosed):
    entities = cwq_topics(40)
    with TimeoutServer(cwq_store, shape="qlever", max_terms=2) as server:
        async with HttpClient(retries=0) as client:
            kg = _kg(server.url, client)
            await kg.relations_many(entities[:20])
            refused = server.timeouts
            assert kg.stats["batch_size"] == 2 and kg.batch_sizes == {server.url: 2}
            await kg.relations_many(entities[20:])  # cut at 2 at once: no further timeout
            assert server.timeouts == refused and max(n for n in server.asked if server.asked[n]) <= 50
            await kg.aclose()


async def test_only_complete_answers_are_cached(cwq_store, tmp_path, no_unclosed):
    entities = cwq_topics(40)
    cache = ResponseCache(tmp_path / "c")
    with TimeoutServer(cwq_store, shape="wdqs", max_terms=2) as server:
        async with HttpClient(retries=0) as client:
            kg = _kg(server.url, client, cache=cache)
            first = await kg.relations_many(entities)
            await kg.aclose()
    cache.flush()
    stored = set(cache.keys())
    assert server.refused and len(stored) >= 20  # the pieces' answers are stored ...
    assert stored <= {cache_key(server.url, query) for query in server.queries}  # (keys as the server saw the queries)
    assert not stored & {cache_key(server.url, query) for query in server.refused}  # ... no refused query's
    assert all(not cache.entry(key).result.partial for key in stored)
    async with HttpClient(retries=0) as client:  # offline from the cache alone: the same answer
        kg = KG(HttpEndpoint("http://127.0.0.1:9/sparql", client), FREEBASE, cache=cache, offline=True)
        with pytest.raises(OfflineMiss):
            await kg.relations_many(entities)  # another endpoint name: another set of cache entries
        await kg.aclose()
        kg = KG(HttpEndpoint(server.url, client), FREEBASE, cache=cache, offline=True)
        assert await kg.relations_many(entities) == first
        await kg.aclose()
    cache.close()


@pytest.mark.parametrize("shape, error", [("qlever", QueryTimeout), ("wdqs", QueryTimeout), ("virtuoso", PartialResult),
                                          ("slow", EndpointTimeout)])
async def test_a_single_entity_that_still_times_out_is_an_error_naming_it(shape, error, cwq_store, no_unclosed):
    entities = cwq_topics(6)
    options = {"partial": "retry"} if shape == "virtuoso" else {}
    with TimeoutServer(cwq_store, shape=shape, max_terms=0, delay=1.0) as server:
        async with HttpClient(retries=0, timeout=0.3) as client:
            kg = _kg(server.url, client, **options)
            with pytest.raises(error, match=r"the query about m\.\w+ timed out even alone") as raised:
                await kg.relations_many(entities)
            assert "\n" not in str(raised.value)
            await kg.aclose()


def _run(url: str, out, cache) -> subprocess.CompletedProcess:
    argv = ["run", str(need(CWQ_QUESTIONS)), "--method", "tog", "--kg", "freebase", "--endpoint", f"freebase=freebase@{url}",
            "--llm", "none", "--limit", "10", "--out", str(out), "--cache-dir", str(cache), "--no-progress", "--json"]
    return subprocess.run([sys.executable, "-c", "import sys; from kgfed.engine.cli import main; sys.exit(main(sys.argv[1:]))",
                           *argv], cwd=ROOT, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"},
                          timeout=600)


@pytest.mark.slow
def test_a_tog_run_over_a_timing_out_server_writes_the_healthy_predictions(healthy, cwq_store, tmp_path):
    need(CWQ_NT)
    done = _run(healthy.url, tmp_path / "healthy.jsonl", tmp_path / "c1")
    assert done.returncode == 0, done.stderr
    with TimeoutServer(cwq_store, shape="qlever", max_terms=2) as server:
        ran = _run(server.url, tmp_path / "timeouts.jsonl", tmp_path / "c2")
    assert ran.returncode == 0, ran.stderr
    assert server.timeouts > 0
    healthy_bytes = (tmp_path / "healthy.jsonl").read_bytes()
    assert len(healthy_bytes.splitlines()) == 10
    assert (tmp_path / "timeouts.jsonl").read_bytes() == healthy_bytes


async def test_under_partial_allow_a_lone_timeout_flags_the_answer_instead(cwq_store, healthy, no_unclosed):
    entities = cwq_topics(8)
    expected, *_ = await _answers(healthy.url, entities)
    heavy = max(entities, key=lambda e: len(expected[e]))  # the one entity the server cannot answer even alone

    class OneHeavy(TimeoutServer):
        async def handle(self, request):
            form = dict(await request.post()) if request.method == "POST" else {}
            query = {**request.query, **form}.get("query", "")
            self.max_terms = 0 if heavy in query else 2
            return await super().handle(request)

    with OneHeavy(cwq_store, shape="qlever") as server:
        async with HttpClient(retries=0) as client:
            kg = _kg(server.url, client, partial="allow")
            found = await kg.relations_many(entities)
            await kg.aclose()
    assert found.partial and any(f"the query about {heavy} timed out even alone" in note for note in found.notes)
    assert found[heavy] == [] and all(found[e] == expected[e] for e in entities if e != heavy)


@pytest.mark.parametrize("shape", ["qlever", "wdqs", "slow"])
async def test_no_query_is_sent_twice_while_blocks_split(shape, cwq_store, no_unclosed):
    """Every block is awaited to its own outcome: a sibling's timeout cancels nothing, a block that timed out
    is never asked again (only its halves), a single item that times out is never asked again alone."""
    entities = cwq_topics(10)  # blocks of 8 and 2 a direction: both time out, the 2 no larger than the new working size
    with TimeoutServer(cwq_store, shape=shape, max_terms=1, delay=3.0) as server:
        async with HttpClient(retries=0, timeout=1.0 if shape == "slow" else 30.0) as client:
            kg = _kg(server.url, client, batch_size=8)
            await kg.relations_many(entities, direction="both")
            await kg.aclose()
    assert server.timeouts >= 8  # blocks of 8, 4, 2 were refused ...
    repeated = {query: n for query, n in Counter(server.queries).items() if n > 1}
    assert not repeated, f"{len(repeated)} queries sent more than once"  # ... and none was asked twice


async def test_a_lone_item_that_times_out_in_both_directions_costs_two_requests(no_unclosed):
    import pyoxigraph as ox

    with TimeoutServer(ox.Store(), shape="qlever", max_terms=-1) as server:  # every query: QLever's 429 timeout
        async with HttpClient(retries=4) as client:
            kg = _kg(server.url, client)
            with pytest.raises(QueryTimeout, match=r"the query about m\.0abc timed out even alone"):
                await kg.relations_many(["m.0abc"], direction="both")
            with pytest.raises(QueryTimeout):  # asked again in the same run: not sent again
                await kg.relations_many(["m.0abc"], direction="both")
            await kg.aclose()
    assert len(server.queries) == 2 and len(set(server.queries)) == 2


def test_kgfed_relations_over_a_server_that_always_times_out_sends_each_query_once():
    """The issue's check: `kgfed relations Q42` against QLever's 429 timeout on every query: one line, exit 2,
    at most 2 requests (one a direction)."""
    import pyoxigraph as ox

    with TimeoutServer(ox.Store(), shape="qlever", max_terms=-1) as server:
        done = subprocess.run([sys.executable, "-c", "import sys; from kgfed.engine.cli import main; sys.exit(main(sys.argv[1:]))",
                               "relations", "Q42", "--endpoint", server.url, "--dialect", "wikidata", "--no-cache"],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("kgfed: error: ") and "Q42 timed out even alone" in done.stderr
    assert len(server.queries) <= 2 and len(set(server.queries)) == len(server.queries)
