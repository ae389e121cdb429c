"""Real recorded WDQS traffic replayed through the real HTTP endpoint (vcrpy, no network)."""
from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from kgfed.cache.recording import convert_httpx_cassette, recording
from kgfed.endpoints.client import HttpClient
from kgfed.endpoints.http import HttpEndpoint
from kgfed.engine.kg import KG
from kgfed.sparql.dialects import WIKIDATA
from kgfed.sparql.results import parse_sparql_json

from .conftest import HTTP_DIR, need

WDQS = "https://query.wikidata.org/sparql"


def flickypedia_sparql():
    """(cassette, query, expected QIDs) for every recorded WDQS interaction."""
    cases = []
    for path in sorted(need(HTTP_DIR / "wdqs-flickypedia").glob("*.yml")):
        for interaction in yaml.safe_load(path.read_text())["interactions"]:
            uri = interaction["request"]["uri"]
            if not uri.startswith(WDQS):
                continue
            query = parse_qs(urlsplit(uri).query)["query"][0]
            body = json.loads(interaction["response"]["content"])
            qids = sorted(b["item"]["value"].rsplit("/", 1)[1] for b in body["results"]["bindings"])
            cases.append((path, query, qids))
    return cases


def test_every_recorded_wdqs_answer_replays_through_the_http_endpoint(tmp_path):
    cases = flickypedia_sparql()
    assert len(cases) == 5

    async def run(path, query):
        async with HttpClient(retries=0) as client:
            return await HttpEndpoint(WDQS, client).select(query)

    import asyncio

    seen_empty = seen_hit = False
    for path, query, qids in cases:
        cassette = convert_httpx_cassette(path, tmp_path / path.name)
        with recording(cassette):  # replay only: an unrecorded request would raise
            result = asyncio.run(run(path, query))
        assert sorted(t.value.rsplit("/", 1)[1] for t in result.column("item")) == qids
        seen_empty |= not qids
        seen_hit |= bool(qids)
    assert seen_empty and seen_hit  # both a real empty answer and a real hit came through


async def test_replay_miss_is_an_error_not_a_silent_empty(tmp_path):
    path, query, _ = flickypedia_sparql()[0]
    cassette = convert_httpx_cassette(path, tmp_path / "c.yml")
    from vcr.errors import CannotOverwriteExistingCassetteException

    with recording(cassette):
        async with KG(HttpEndpoint(WDQS, HttpClient(retries=0)), WIKIDATA, cache=None) as kg:
            with pytest.raises(CannotOverwriteExistingCassetteException):
                await kg.relations("Q42")
            await kg.endpoint.inner.client.aclose()


def test_record_then_replay_round_trip_matches_on_query_text(tmp_path):
    """Record against a local server, then replay with the server gone: same answers, by query."""
    import asyncio

    from . import httpfaults as hf

    async def record_and_replay():
        srv = hf.FaultServer(script=[hf.ok()])
        runner = await hf.start(srv)
        cassette = tmp_path / "round.yaml"
        queries = ['SELECT ?x WHERE { ?x ?p "a" }', 'SELECT ?x WHERE { ?x ?p "b" }']
        with recording(cassette, "once"):
            async with HttpClient() as c:
                recorded = [await HttpEndpoint(srv.url, c, post_threshold=30).select(q) for q in queries]
        await runner.cleanup()  # nothing listens any more
        with recording(cassette):
            async with HttpClient(retries=0) as c:
                # POSTed bodies differ only in the literal: replayed out of order, each gets its own answer
                replayed = [await HttpEndpoint(srv.url, c, post_threshold=30).select(q) for q in reversed(queries)]
        return recorded, replayed, cassette

    recorded, replayed, cassette = asyncio.run(record_and_replay())
    assert [r.rows for r in recorded] == [r.rows for r in reversed(replayed)]
    text = cassette.read_text()
    assert "User-Agent" in text or "user-agent" in text.lower()


@pytest.mark.parametrize("name", ["multi_vars_sparql_results.json", "no_datatype_sparql_results.json",
                                  "sparql_results_with_optional_values.json", "sparql_results_with_statements.json"])
def test_real_wdqs_result_documents_parse_to_typed_values(name):
    doc = json.loads(need(HTTP_DIR / "wdqs-results-wikibase-sdk" / name).read_text())
    result = parse_sparql_json(doc)
    assert result.vars == doc["head"]["vars"] and len(result.rows) == len(doc["results"]["bindings"])
    for row, binding in zip(result.rows, doc["results"]["bindings"]):
        assert set(row) == set(binding)  # optional (unbound) values stay absent, never None
        for var, term in row.items():
            assert term.value == binding[var]["value"] and term.lang == binding[var].get("xml:lang")
    if name == "multi_vars_sparql_results.json":
        first = result.rows[0]
        assert first["year"].python() == 1903 and first["entityLabel"].lang == "en"
        assert WIKIDATA.short(first["entity"].value) == "Q3731207"
    if name == "no_datatype_sparql_results.json":
        assert result.rows[0]["year"].python() == "1937" and result.rows[0]["year"].datatype is None


def test_secrets_never_reach_a_cassette(tmp_path):
    import asyncio

    from . import httpfaults as hf

    async def go():
        srv = hf.FaultServer(script=[hf.ok()])
        runner = await hf.start(srv)
        with recording(tmp_path / "s.yaml", "once"):
            async with HttpClient() as c:
                await c.request("GET", srv.url, params={"query": "ASK {}", "api_key": "SECRET1"},
                                headers={"Authorization": "Bearer SECRET2", "x-api-key": "SECRET3"})
        await runner.cleanup()

    asyncio.run(go())
    text = (tmp_path / "s.yaml").read_text()
    assert "SECRET" not in text
