"""Fallback endpoints against real local servers: an endpoint that only answers 500s, refuses
connections or bans for a day is replaced by its fallback (one warning line), each answer says which
endpoint gave it, and the cache keeps each endpoint's answers apart."""
from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import subprocess
import sys

import pytest

from kgfed.cache.responses import ResponseCache
from kgfed.endpoints.client import HttpClient
from kgfed.endpoints.http import HttpEndpoint
from kgfed.engine.cli import main
from kgfed.engine.config import CacheOptions, HttpOptions, KGSpec, close_kgs, kg_specs, open_kgs
from kgfed.engine.kg import KG, facade
from kgfed.sparql.dialects import FREEBASE
from kgfed.sparql.errors import HttpStatusError, KgfedError, UnknownEndpoint

from . import httpfaults as hf
from .conftest import CODEX_NT, CWQ_NT, ROOT, need
from .test_adaptive_batches import cwq_topics
from .timeoutserver import TimeoutServer
from .unclosed import no_unclosed  # noqa: F401  (fixture)

server = pytest.fixture(hf.serve, name="server")


@pytest.fixture(scope="module")
def healthy(cwq_store):
    with TimeoutServer(cwq_store, shape=None) as up:
        yield up


@pytest.fixture(scope="module")
def down(cwq_store):
    with TimeoutServer(cwq_store, shape="down") as failing:
        yield failing


def _refused_url() -> str:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/sparql"


def _kg(primary: str, fallback: str, client: HttpClient, cache=None, **options) -> KG:
    return KG(HttpEndpoint(primary, client), FREEBASE, fallbacks=[HttpEndpoint(fallback, client)], cache=cache, **options)


def _kgfed(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "import sys; from kgfed.engine.cli import main; sys.exit(main(sys.argv[1:]))",
                           *argv], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "KGFED_CONFIG": os.devnull})


def test_cli_relations_answers_from_the_fallback_when_the_endpoint_answers_only_500s(healthy, down):
    mid = cwq_topics(1)[0]
    direct = _kgfed("relations", mid, "--endpoint", healthy.url, "--dialect", "freebase", "--json", "--no-cache")
    assert direct.returncode == 0, direct.stderr
    expected = json.loads(direct.stdout)
    asked_before = sum(down.asked.values())
    done = _kgfed("relations", mid, "--endpoint", down.url, "--fallback", healthy.url, "--dialect", "freebase", "--json",
                  "--no-cache")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == expected and len(expected) >= 2
    assert sum(down.asked.values()) > asked_before  # the endpoint was asked first (and retried) ...
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kgfed: warning: KG 'freebase': ")  # ... then one line said so
    assert down.url in lines[0] and healthy.url in lines[0] and "HTTP 500" in lines[0]


async def test_each_answer_names_its_endpoint_and_the_cache_keeps_them_apart(healthy, cwq_store, tmp_path, monkeypatch,
                                                                             no_unclosed):
    entities = cwq_topics(12)
    cache = ResponseCache(tmp_path / "c")
    with TimeoutServer(cwq_store, shape="down") as flaky:
        async with HttpClient(retries=1, backoff=0.01) as client:
            kg = _kg(flaky.url, healthy.url, client, cache=cache)
            assert kg.endpoints == [flaky.url, healthy.url]
            first = await kg.relations_many(entities)
            assert first.source == healthy.url and sum(map(len, first.values())) > 20
            one = await kg.relations(entities[0])
            assert one.source == healthy.url and one == first[entities[0]]
            asked = sum(flaky.asked.values())
            labels = await kg.labels(entities)  # within the cool-down the failing endpoint is not asked again
            assert labels.source == healthy.url and sum(flaky.asked.values()) == asked
            assert kg.stats["fallbacks"] == 1 and kg.stats["fallback_sent"] >= 3
            await kg.aclose()
            cache.flush()
            assert {cache.entry(key).source for key in cache.keys()} == {healthy.url}  # stored under the fallback only
            flaky.shape = None  # the endpoint is back; after the cool-down it answers again, into its own entries
            monkeypatch.setattr(facade, "FALLBACK_COOLDOWN", 0.0)
            kg = _kg(flaky.url, healthy.url, client, cache=cache)
            again = await kg.relations_many(entities)
            assert again == first and again.source == flaky.url and kg.stats["sent"] >= 2
            await kg.aclose()
            cache.flush()
            assert {cache.entry(key).source for key in cache.keys()} == {healthy.url, flaky.url}
            offline = KG(HttpEndpoint(_refused_url(), client), FREEBASE, fallbacks=[HttpEndpoint(healthy.url, client)],
                         cache=cache, offline=True)
            replay = await offline.labels(entities)  # offline: a miss in one endpoint's entries is looked up in the next's
            assert replay == labels and replay.source == healthy.url
            await offline.aclose()
    cache.close()


async def test_a_refused_connection_and_a_day_long_ban_fall_back(healthy, server, no_unclosed):
    entities = cwq_topics(3)
    async with HttpClient(retries=1, backoff=0.01) as client:
        kg = _kg(_refused_url(), healthy.url, client)
        assert (await kg.relations_many(entities)).source == healthy.url
        await kg.aclose()
        server.script = [hf.status(429, headers={"Retry-After": "86400"}, text="You have been banned until ...")]
        kg = _kg(server.url, healthy.url, client)
        assert (await kg.labels(entities)).source == healthy.url and len(server.seen) == 1  # no wait, no second ask
        await kg.aclose()


async def test_a_bad_query_is_not_a_reason_to_fall_back(healthy, server, no_unclosed):
    server.script = [hf.status(400, text="Parse error: unexpected token")]
    async with HttpClient(retries=1, backoff=0.01) as client:
        kg = _kg(server.url, healthy.url, client)
        with pytest.raises(HttpStatusError, match="HTTP 400"):
            await kg.relations_many(cwq_topics(2))
        assert kg.stats["fallbacks"] == 0 and kg.stats.get("fallback_sent", 0) == 0
        await kg.aclose()


def test_fallbacks_in_kg_specs_and_their_one_line_errors():
    specs = kg_specs("freebase,wikidata", ["freebase=file:a.nt", "wikidata=wikidata"],
                     fallbacks=["wikidata=qlever-wikidata", "freebase=qlever-freebase", "wikidata=file:wd.nt"])
    assert [s.fallbacks for s in specs] == [("qlever-freebase",), ("qlever-wikidata", "file:wd.nt")]
    assert kg_specs(None, ["wikidata=wikidata"], fallbacks="qlever-wikidata")[0].fallbacks == ("qlever-wikidata",)
    assert kg_specs(None, ["fb=freebase@http://h/sparql"], fallbacks=["http://h2/sparql?a=b"])[0].fallbacks == ("http://h2/sparql?a=b",)
    with pytest.raises(KgfedError, match="names no KG and there are 2"):
        kg_specs("freebase,wikidata", None, fallbacks=["qlever-wikidata"])
    with pytest.raises(KgfedError, match="which --kg does not list"):
        kg_specs("wikidata", None, fallbacks=["fb=qlever-freebase"])
    with pytest.raises(KgfedError, match="invalid fallbacks"):
        KGSpec("wikidata", fallbacks="qlever-wikidata")  # type: ignore[arg-type]


async def test_a_fallback_in_another_dialect_is_refused_before_anything_is_sent(no_unclosed):
    with pytest.raises(UnknownEndpoint, match="fallback qlever-wikidata speaks wikidata but KG 'freebase' speaks freebase"):
        open_kgs([KGSpec("freebase", f"file:{need(CWQ_NT)}", fallbacks=("qlever-wikidata",))], cache=CacheOptions(enabled=False))
    kgs = open_kgs([KGSpec("wikidata", f"file:{need(CODEX_NT)}", fallbacks=("qlever-wikidata", "wikidata"))],
                   http=HttpOptions(), cache=CacheOptions(enabled=False))
    try:
        assert kgs["wikidata"].endpoints[1:] == ["https://qlever.dev/api/wikidata", "https://query.wikidata.org/sparql"]
    finally:
        await close_kgs(kgs)


def test_the_fallback_warning_is_one_line_on_stderr(caplog, healthy, down):
    caplog.set_level(logging.WARNING, logger="kgfed")
    assert main(["labels", cwq_topics(1)[0], "--endpoint", down.url, "--fallback", f"freebase={healthy.url}",
                 "--dialect", "freebase", "--json", "--no-cache"]) == 0
    lines = [r.getMessage() for r in caplog.records if "fallback" in r.getMessage()]
    assert len(lines) == 1 and "\n" not in lines[0] and lines[0].startswith("kgfed: warning: KG ")


async def test_a_query_service_that_wants_a_token_falls_back(healthy, no_unclosed):
    from kgfed.endpoints.transport import AiohttpTransport, MockTransport, Response

    local = AiohttpTransport()

    async def transport(request):  # WDQS behind an authenticating proxy; everything else over real sockets
        if request.host == "query.wikidata.org":
            return Response.of(401, '{"httpCode": 401, "httpReason": "Unauthorized"}', content_type="application/json",
                               headers={"WWW-Authenticate": 'Bearer realm="wdqs"'})
        return await local.send(request)

    async with HttpClient(contact="ops@example.org", transport=MockTransport(transport)) as client:
        kg = KG(HttpEndpoint("https://query.wikidata.org/sparql", client), FREEBASE,
                fallbacks=[HttpEndpoint(healthy.url, client)], cache=None)
        assert (await kg.labels(cwq_topics(2))).source == healthy.url and kg.stats["fallbacks"] == 1
        await kg.aclose()
    await local.aclose()


async def test_the_mcp_server_carries_fallbacks_in_its_kg_specs(healthy, down, no_unclosed):
    from kgfed.engine.mcp.server import Engine, ServerOptions

    mid = cwq_topics(1)[0]
    options = ServerOptions(kgs=(KGSpec("freebase", down.url, fallbacks=(healthy.url,)),),
                            http=HttpOptions(timeout=10.0), cache=CacheOptions(enabled=False))
    engine = Engine.open(options)
    try:
        assert engine.kgs["freebase"].endpoints == [down.url, healthy.url]
        found, text = await engine.relations(mid, "both", "freebase")
        assert found["relations"] and f"relations of {mid}" in text
        assert engine.kgs["freebase"].stats["fallbacks"] == 1
    finally:
        await engine.aclose()


async def test_concurrent_calls_that_find_the_endpoint_down_warn_once(healthy, down, caplog, no_unclosed):
    caplog.set_level(logging.WARNING, logger="kgfed")
    entities = cwq_topics(8)
    async with HttpClient(retries=1, backoff=0.01) as client:
        kg = _kg(down.url, healthy.url, client)
        answers = await asyncio.gather(*(kg.relations(e) for e in entities))
        assert all(a.source == healthy.url for a in answers) and sum(map(len, answers)) > 8
        assert kg.stats["fallbacks"] == 1
        await kg.aclose()
    assert len([r for r in caplog.records if "asking the fallback" in r.getMessage()]) == 1
