"""The fault suite on the transport seam: the real HttpClient and HttpEndpoint, every answer scripted in
process by a MockTransport handler (no sockets), each failure raising its typed, one-line error."""
from __future__ import annotations

import asyncio
import logging
import time

import pytest
import yaml
from aiohttp import web

from kgfed.cache.recording import recording
from kgfed.cache.responses import ResponseCache
from kgfed.endpoints import client as client_module
from kgfed.endpoints.client import HttpClient
from kgfed.endpoints.http import HttpEndpoint
from kgfed.endpoints.options import DEFAULT_TIMEOUT
from kgfed.endpoints.transport import (
    AiohttpTransport, AsyncTransport, MockTransport, Request, Response, TransportTruncated,
)
from kgfed.engine.kg import KG
from kgfed.sparql.dialects import WIKIDATA
from kgfed.sparql.errors import (
    ClientClosed, EndpointConnectionError, EndpointTimeout, HttpStatusError, NotAnAnswer, QueryTimeout,
    RateLimited, UserAgentRejected,
)

from .live_services import ROBOT_POLICY, qlever_error, no_user_config  # noqa: F401 (autouse)

URL = "http://sparql.test/sparql"
QUERY = "SELECT ?x WHERE { ?x ?p ?o } LIMIT 1"
ONE_ROW = {"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "uri", "value": "http://www.wikidata.org/entity/Q42"}}]}}


def ok() -> Response:
    return Response.of(200, ONE_ROW, content_type="application/sparql-results+json")


def scripted(*answers):
    """A handler answering with each item in turn (the last repeats); an exception item is raised."""
    queue = list(answers)

    def handler(request: Request):
        item = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(item, BaseException) or (isinstance(item, type) and issubclass(item, BaseException)):
            raise item
        return item() if callable(item) else item
    return handler


def make(handler, **kw) -> tuple[HttpClient, MockTransport]:
    transport = MockTransport(handler)
    return HttpClient(transport=transport, backoff=0.01, retries=3, **kw), transport


async def select(handler, **kw):
    http, transport = make(handler, **kw)
    async with http:
        return await HttpEndpoint(URL, http, partial="allow").select(QUERY), transport, http


def test_both_transports_implement_the_protocol():
    assert isinstance(AiohttpTransport(), AsyncTransport) and isinstance(MockTransport(lambda r: ok()), AsyncTransport)


async def test_success_sends_the_query_and_polite_headers():
    result, transport, _ = await select(scripted(ok), contact="me@example.org")
    assert result.rows[0]["x"].value == "http://www.wikidata.org/entity/Q42"
    sent = transport.requests[0]
    # the server is told kgfed's own time limit, in ms (Virtuoso's `timeout`: it stops the query when kgfed stops waiting)
    assert sent.method == "GET" and sent.fields() == {"query": QUERY, "timeout": str(int(DEFAULT_TIMEOUT * 1000))}
    assert sent.headers["User-Agent"].startswith("kgfed/") and "(me@example.org) aiohttp/" in sent.headers["User-Agent"]
    assert sent.headers["Accept"] == "application/sparql-results+json"


async def test_async_handlers_work_too():
    async def handler(request):
        await asyncio.sleep(0)
        return ok()
    result, _, _ = await select(handler)
    assert len(result.rows) == 1


async def test_429_pauses_for_retry_after_then_succeeds():
    started = time.monotonic()
    result, transport, http = await select(scripted(Response.of(429, "slow down", headers={"Retry-After": "1"}), ok))
    assert time.monotonic() - started >= 0.95 and len(transport.requests) == 2
    assert http.stats["rate_limited"] == 1 and len(result.rows) == 1


async def test_429_with_a_long_ban_fails_at_once():
    with pytest.raises(RateLimited, match="3600 s") as info:
        await select(scripted(Response.of(429, "", headers={"Retry-After": "3600"})))
    assert info.value.retry_after == 3600


async def test_5xx_is_retried_then_gives_up_with_a_status_error():
    http, transport = make(scripted(Response.of(502, "Bad gateway from upstream")))
    async with http:
        with pytest.raises(HttpStatusError, match=r"HTTP 502: Bad gateway from upstream \(gave up after 4 attempts\)") as info:
            await HttpEndpoint(URL, http).select(QUERY)
    assert info.value.status == 502 and len(transport.requests) == 4


async def test_400_is_a_status_error_at_once():
    http, transport = make(scripted(Response.of(400, "Virtuoso 37000 Error SP030: syntax error")))
    async with http:
        with pytest.raises(HttpStatusError, match="HTTP 400: Virtuoso 37000"):
            await HttpEndpoint(URL, http).select(QUERY)
    assert len(transport.requests) == 1


async def test_a_slow_handler_is_a_timeout_not_retried():
    async def slow(request):
        await asyncio.sleep(5)
        return ok()
    http, transport = make(slow, timeout=0.2)
    started = time.monotonic()
    async with http:
        with pytest.raises(EndpointTimeout, match="timed out after 0.2 s: simplify the query"):
            await HttpEndpoint(URL, http).select(QUERY)
    assert time.monotonic() - started < 1.0 and len(transport.requests) == 1


@pytest.mark.parametrize("failure", [ConnectionResetError("reset by peer"), TransportTruncated("2 of 10 bytes")])
async def test_dropped_connections_are_retried_then_typed(failure):
    result, transport, _ = await select(scripted(failure, ok))
    assert len(result.rows) == 1 and len(transport.requests) == 2
    http, transport = make(scripted(failure))
    async with http:
        with pytest.raises(EndpointConnectionError, match=r"(connection failed|truncated).*gave up after 4 attempts"):
            await HttpEndpoint(URL, http).select(QUERY)


async def test_a_closed_client_refuses_new_requests():
    http, transport = make(scripted(ok))
    await http.aclose()
    with pytest.raises(ClientClosed, match="the HTTP client is closed") as info:
        await http.request("GET", URL)
    assert "\n" not in str(info.value) and transport.requests == [] and transport.closed


async def test_qlever_timeout_429_is_raised_at_once_without_a_pause():
    body = qlever_error(429, QUERY, "Operation timed out. Last operation: IndexScan ?x ?p ?o")
    assert body.text().startswith('{\n    "exception": "Operation timed out.')  # QLever's own layout
    http, transport = make(scripted(body))
    async with http:
        with pytest.raises(QueryTimeout, match="time limit .*narrower query.*not a rate limit") as info:
            await HttpEndpoint("https://qlever.dev/api/wikidata", http).select(QUERY)
    assert info.value.status == 429 and len(transport.requests) == 1 and http._paused_until == {}


@pytest.mark.parametrize("status", [200, 403])
async def test_robot_policy_text_is_an_error_never_cached_or_retried(status, tmp_path):
    http, transport = make(scripted(Response.of(status, ROBOT_POLICY)), contact="me@example.org")
    cache = ResponseCache(tmp_path / "c")
    async with http:
        kg = KG(HttpEndpoint("https://query.wikidata.org/sparql", http), WIKIDATA, cache=cache)
        for _ in range(2):
            with pytest.raises(UserAgentRejected, match=rf"HTTP {status}: Please set a user-agent and respect our robot policy"):
                await kg.select(QUERY)
    assert len(transport.requests) == 2 and len(cache) == 0


async def test_an_html_page_is_not_an_answer():
    page = Response.of(200, "<!DOCTYPE html><html><body>Maintenance</body></html>", content_type="text/html")
    http, transport = make(scripted(page))
    async with http:
        with pytest.raises(NotAnAnswer, match=r"^sparql.test answered HTTP 200 with an HTML page, not SPARQL results"):
            await HttpEndpoint(URL, http).select(QUERY)
    assert len(transport.requests) == 1


@pytest.mark.parametrize("url, sent", [("http://127.0.0.1:8890/sparql", "40000"), ("https://qlever.dev/api/freebase", None),
                                       ("https://query.wikidata.org/sparql", None)])
async def test_virtuosos_timeout_parameter_goes_only_to_servers_that_take_it(url, sent):
    http, transport = make(scripted(ok), contact="me@example.org")
    async with http:
        await HttpEndpoint(url, http, timeout_ms=40000).select(QUERY)
    assert transport.requests[0].fields().get("timeout") == sent


async def test_the_missing_contact_warning_is_one_line_and_once(caplog):
    http, _ = make(scripted(ok))
    async with http:
        with caplog.at_level(logging.WARNING, logger="kgfed.http"):
            for host in ("query.wikidata.org", "en.wikipedia.org", "query.wikidata.org"):
                await http.request("GET", f"https://{host}/x")
            await http.request("GET", URL)
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1 and "\n" not in messages[0] and "--contact" in messages[0]


async def test_the_oauth_token_goes_to_wikimedia_apis_only(monkeypatch):
    monkeypatch.setenv("KGFED_WIKIMEDIA_TOKEN", "secret-token")
    http, transport = make(scripted(ok), contact="me@example.org")
    async with http:
        for url in ("https://en.wikipedia.org/w/api.php", "https://query.wikidata.org/sparql", "https://qlever.dev/api/wikidata", URL):
            await http.request("GET", url)
        assert http.budget_for("en.wikipedia.org") == client_module.AUTHENTICATED_BUDGET
    auth = {r.host: r.headers.get("Authorization") for r in transport.requests}
    assert auth == {"en.wikipedia.org": "Bearer secret-token", "query.wikidata.org": None, "qlever.dev": None, "sparql.test": None}


async def test_the_per_minute_budget_holds_requests_beyond_it():
    http, transport = make(scripted(ok), contact="me@example.org", budgets={"de.wikipedia.org": 3})
    async with http:
        assert http.budget_for("en.wikipedia.org") == client_module.ANONYMOUS_BUDGET and http.budget_for("sparql.test") is None
        for _ in range(3):
            await http.request("GET", "https://de.wikipedia.org/w/api.php")
        with pytest.raises(TimeoutError):  # the fourth waits for the bucket to drain (20 s at 3 a minute)
            await asyncio.wait_for(http.request("GET", "https://de.wikipedia.org/w/api.php"), 0.3)
        await http.request("GET", URL)  # other hosts are not held
    assert [r.host for r in transport.requests] == ["de.wikipedia.org"] * 3 + ["sparql.test"]


async def test_budgets_and_contact_come_from_the_config_file(monkeypatch, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('contact = "ops@example.org"\n[budgets]\n"en.wikipedia.org" = 30\n')
    monkeypatch.setenv("KGFED_CONFIG", str(config))
    http = HttpClient(transport=MockTransport(scripted(ok)))
    assert "(ops@example.org)" in http.user_agent and http.budget_for("en.wikipedia.org") == 30
    await http.aclose()


async def test_cassettes_never_hold_the_authorization_header(tmp_path):
    async def answer(request):
        return web.json_response(ONE_ROW)
    app = web.Application()
    app.router.add_get("/sparql", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    cassette = tmp_path / "run.yaml"
    try:
        with recording(cassette, "once"):
            async with HttpClient(contact="me@example.org") as http:
                response = await http.request("GET", f"http://127.0.0.1:{port}/sparql", params={"query": QUERY},
                                              headers={"Authorization": "Bearer secret-token"})
        assert response.status == 200
    finally:
        await runner.cleanup()
    text = cassette.read_text()
    assert "secret-token" not in text and "kgfed/" in text
    assert yaml.safe_load(text)["interactions"][0]["request"]["headers"].get("Authorization") is None
