"""One politeness domain per host per run: every KG of a run (and its text source and LLM) shares one
HttpClient, so two KGs on one host never exceed the host's cap together and one 429 pauses both."""
from __future__ import annotations

import asyncio
import re
import time

from kgfed.endpoints.client import POLITE_HOSTS, HttpClient
from kgfed.endpoints.transport import MockTransport, Request, Response
from kgfed.engine.config import CacheOptions, HttpOptions, close_kgs, kg_specs, open_kgs
from kgfed.engine.harness.runner import RunSpec, Runtime

from .live_services import no_user_config  # noqa: F401 (autouse)

_PROJECTION = re.compile(r"SELECT\s+(?:DISTINCT\s+)?((?:\?\w+\s*)+)WHERE", re.IGNORECASE)
FEDERATION = {"kg": "wikidata,freebase", "endpoint": ["wikidata=qlever-wikidata", "freebase=qlever-freebase"]}
NO_CACHE = CacheOptions(enabled=False)


class Host:
    """A QLever-like host that answers slowly, counting requests in flight (peak) and when each arrived."""

    def __init__(self, first: Response | None = None):
        self.active = self.peak = 0
        self.arrivals: list[tuple[float, str]] = []
        self.first = first

    async def __call__(self, request: Request) -> Response:
        self.arrivals.append((time.monotonic(), request.path))
        if self.first is not None and len(self.arrivals) == 1:
            return self.first
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            await asyncio.sleep(0.05)
        finally:
            self.active -= 1
        variables = _PROJECTION.search(request.fields()["query"])[1].replace("?", "").split()
        return Response.of(200, {"head": {"vars": variables}, "results": {"bindings": []}},
                           content_type="application/sparql-results+json")


def federation(host: Host):
    http = HttpClient(transport=MockTransport(host), contact="me@example.org", backoff=0.01)
    kgs = open_kgs(kg_specs(FEDERATION["kg"], FEDERATION["endpoint"]), cache=NO_CACHE, client=http)
    return http, kgs


async def ask_both(kgs, n: int) -> None:
    await asyncio.gather(*(kgs["wikidata"].relations(f"Q{i}", "out") for i in range(1, n + 1)),
                         *(kgs["freebase"].relations(f"m.0{i}x", "out") for i in range(1, n + 1)))


async def test_two_kgs_on_one_host_never_exceed_the_host_cap_together():
    host = Host()
    http, kgs = federation(host)
    try:
        assert kgs["wikidata"].endpoint.inner.client is kgs["freebase"].endpoint.inner.client is http
        await ask_both(kgs, 12)
    finally:
        await close_kgs(kgs)
        await http.aclose()
    assert len(host.arrivals) == 24 and {p for _, p in host.arrivals} == {"/api/wikidata", "/api/freebase"}
    assert host.peak == POLITE_HOSTS["qlever.dev"] == 4  # reached, never passed: 8 if each KG had its own client


async def test_one_429_pauses_both_kgs():
    host = Host(first=Response.of(429, "Too Many Requests", headers={"Retry-After": "1"}))
    http, kgs = federation(host)
    try:
        await kgs["wikidata"].relations("Q1", "out")  # gets the 429, waits, retries
        await ask_both(kgs, 3)
    finally:
        await close_kgs(kgs)
        await http.aclose()
    limited_at = host.arrivals[0][0]
    later = host.arrivals[1:]
    assert len(later) == 7 and {p for _, p in later} == {"/api/wikidata", "/api/freebase"}
    assert all(at - limited_at >= 0.95 for at, _ in later)  # the freebase KG's requests waited out the pause too
    assert http.stats["rate_limited"] == 1


async def test_open_kgs_makes_one_client_and_closes_it():
    kgs = open_kgs(kg_specs(FEDERATION["kg"], FEDERATION["endpoint"]), http=HttpOptions(concurrency=2), cache=NO_CACHE)
    client = kgs.client
    assert kgs["wikidata"].endpoint.inner.client is kgs["freebase"].endpoint.inner.client is client
    assert client.limit_for("qlever.dev") == 2
    await close_kgs(kgs)
    assert client.closed


async def test_a_run_shares_one_client_between_kgs_text_source_and_llm(tmp_path):
    spec = RunSpec("tog", kgs=tuple(kg_specs(FEDERATION["kg"], FEDERATION["endpoint"])),
                   cache=CacheOptions(root=str(tmp_path / "cache")), llm="openai:http://127.0.0.1:9/v1#test-model",
                   text="wikipedia")
    async with Runtime(spec) as runtime:
        shared = runtime._client
        assert shared is not None and not shared.closed
        assert {id(kg.endpoint.inner.client) for kg in runtime.kgs.values()} == {id(shared)}
        assert runtime.text.client is shared and runtime.llm._http() is shared
    assert shared.closed


async def test_fallbacks_share_the_runs_client_and_its_per_host_caps():
    """A fallback is one more endpoint of the run: same HttpClient, so qlever.dev's cap of 4 holds for a KG
    whose fallback is on qlever.dev together with another KG served from there."""
    host = Host()
    http = HttpClient(transport=MockTransport(host), contact="me@example.org", backoff=0.01, retries=0)
    kgs = open_kgs(kg_specs(FEDERATION["kg"], ["wikidata=https://query.wikidata.org/sparql", "freebase=qlever-freebase"],
                            fallbacks=["wikidata=qlever-wikidata"]), cache=NO_CACHE, client=http)
    try:
        wikidata = kgs["wikidata"]
        assert wikidata.endpoints == ["https://query.wikidata.org/sparql", "https://qlever.dev/api/wikidata"]
        assert {id(cached.inner.client) for cached, _ in wikidata._routes} == {id(http)}
        wikidata._down_until[0] = time.monotonic() + 60  # WDQS found down: the fallback answers
        await ask_both(kgs, 12)
    finally:
        await close_kgs(kgs)
        await http.aclose()
    assert len(host.arrivals) == 24 and {p for _, p in host.arrivals} == {"/api/wikidata", "/api/freebase"}
    assert host.peak == POLITE_HOSTS["qlever.dev"] == 4
