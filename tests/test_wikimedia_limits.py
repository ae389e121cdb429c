"""Wikimedia's 2026 limits as kgfed keeps them (numbers and sources in docs/endpoints.md, checked
2026-11-25): per-minute budgets per API host for an unidentified client, an identified one (contact
set) and an authenticated one; at most 3 requests in flight to an API host whatever --concurrency says;
WDQS's 60 s of query time a minute; and `KGFED_WIKIMEDIA_TOKEN` sent to a query service only once it
asks for authentication, never to another host, never into the cache."""
from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest

from kgfed.cache import recording
from kgfed.cache.responses import ResponseCache
from kgfed.endpoints import client as client_module
from kgfed.endpoints import kinds
from kgfed.endpoints.client import HttpClient
from kgfed.endpoints.http import HttpEndpoint
from kgfed.endpoints.transport import MockTransport, Request, Response
from kgfed.engine.kg import KG
from kgfed.sparql.dialects import WIKIDATA
from kgfed.sparql.errors import HttpStatusError

from .live_services import Services, no_user_config  # noqa: F401 (autouse)

TOKEN = "wm-oauth-token-123"
CONTACT = "ops@example.org"
WDQS = "https://query.wikidata.org/sparql"
# An OAuth 2.0 protected resource's challenge (RFC 6750 §3): what a query service behind an
# authenticating proxy answers a request without a token.
CHALLENGE = Response.of(401, json.dumps({"httpCode": 401, "httpReason": "Unauthorized", "detail": "Authentication required"}),
                        content_type="application/json", headers={"WWW-Authenticate": 'Bearer realm="wdqs"'})


def _ok(_request: Request) -> Response:
    return Response.of(200, b'{"head": {"vars": ["x"]}, "results": {"bindings": []}}',
                       content_type="application/sparql-results+json")


def test_per_minute_budgets_follow_the_published_numbers(monkeypatch):
    unidentified = HttpClient(transport=MockTransport(_ok))
    identified = HttpClient(contact=CONTACT, transport=MockTransport(_ok))
    monkeypatch.setenv("KGFED_WIKIMEDIA_TOKEN", TOKEN)
    authenticated = HttpClient(contact=CONTACT, transport=MockTransport(_ok))
    for host in ("en.wikipedia.org", "www.wikidata.org", "de.wikipedia.org"):
        assert unidentified.budget_for(host) == pytest.approx(500 / 60)  # the restrictive tier: 500 an hour
        assert identified.budget_for(host) == 60
        assert authenticated.budget_for(host) == pytest.approx(5000 / 60)  # 5,000 an hour
    assert identified.budget_for("api.wikimedia.org") == pytest.approx(500 / 60)  # per IP without a token, contact or not
    for host in ("query.wikidata.org", "query-scholarly.wikidata.org", "commons-query.wikimedia.org", "qlever.dev", "127.0.0.1:7878"):
        assert identified.budget_for(host) is None  # no request budget: their own limits below
    assert identified.query_seconds_for("query.wikidata.org") == 60 and identified.query_seconds_for("qlever.dev") is None
    assert client_module.is_query_service("commons-query.wikimedia.org") and not client_module.is_wikimedia_api("query-main.wikidata.org")


async def test_an_unidentified_client_waits_after_its_budget():
    seen: list[str] = []
    http = HttpClient(transport=MockTransport(lambda r: (seen.append(r.host), _ok(r))[1]))
    async with http:
        for _ in range(8):  # 500 an hour is 8.3 a minute: eight at once, then one every 7.2 s
            await http.request("GET", "https://en.wikipedia.org/w/api.php")
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(http.request("GET", "https://en.wikipedia.org/w/api.php"), 0.3)
        await http.request("GET", "https://qlever.dev/api/wikidata")  # another host is not held
    assert seen == ["en.wikipedia.org"] * 8 + ["qlever.dev"]


@pytest.mark.parametrize("concurrency", [None, 2, 16])
async def test_at_most_three_requests_in_flight_to_an_api_host(concurrency):
    active = peak = 0

    async def slow(request: Request) -> Response:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.02)
        active -= 1
        return _ok(request)

    http = HttpClient.configured(contact=CONTACT, concurrency=concurrency, transport=MockTransport(slow),
                                 budgets={"en.wikipedia.org": 0})
    async with http:
        assert http.limit_for("en.wikipedia.org") == min(3, concurrency or 3) == http.limit_for("www.wikidata.org")
        await asyncio.gather(*(http.request("GET", "https://en.wikipedia.org/w/api.php") for _ in range(12)))
    assert peak == min(3, concurrency or 3)


async def test_wdqs_query_time_is_spent_from_60_seconds_a_minute(monkeypatch):
    scaled = dataclasses.replace(kinds.WDQS, query_seconds_per_minute=0.3)  # scaled down: 0.3 s of query time a minute
    monkeypatch.setitem(kinds.KINDS, "wdqs", scaled)

    async def working(request: Request) -> Response:
        await asyncio.sleep(0.2)
        return _ok(request)

    http = HttpClient(contact=CONTACT, transport=MockTransport(working))
    async with http:
        await http.request("GET", WDQS)
        await http.request("GET", WDQS)  # 0.4 s spent: the bucket is below empty
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(http.request("GET", WDQS), 0.5)
        await http.request("GET", "https://qlever.dev/api/wikidata")  # QLever has no such budget


async def test_the_token_goes_to_the_query_service_only_once_it_asks(monkeypatch, tmp_path):
    monkeypatch.setenv("KGFED_WIKIMEDIA_TOKEN", TOKEN)
    services = Services()
    sent: list[Request] = []

    def proxy(request: Request) -> Response:  # WDQS behind an authenticating proxy; the other hosts as they are
        sent.append(request)
        if request.host == "query.wikidata.org" and request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return CHALLENGE
        return services(request)

    cache = ResponseCache(tmp_path / "c")
    async with HttpClient(contact=CONTACT, transport=MockTransport(proxy), backoff=0.01) as http:
        await http.request("GET", "https://en.wikipedia.org/w/api.php")
        kg = KG(HttpEndpoint(WDQS, http), WIKIDATA, cache=cache)
        assert [r.label for r in (await kg.labels(["Q42"])).values()] == ["Douglas Adams"]
        assert [r.relation for r in await kg.relations("Q42", "out")]  # later queries carry it at once
        await kg.aclose()
        qlever = KG(HttpEndpoint("https://qlever.dev/api/wikidata", http), WIKIDATA, cache=None)
        await qlever.relations("Q42")
        await qlever.aclose()
    auth = [(r.host, r.headers.get("Authorization")) for r in sent]
    bearer = f"Bearer {TOKEN}"
    assert auth[0] == ("en.wikipedia.org", bearer)  # an API host: always
    assert auth[1] == ("query.wikidata.org", None) and auth[2] == ("query.wikidata.org", bearer)  # asked, then sent
    assert all(a == bearer for host, a in auth[2:] if host == "query.wikidata.org")
    assert all(a is None for host, a in auth if host.startswith("qlever"))
    cache.flush()
    stored = b"".join(repr(cache.entry(k)).encode() for k in cache.keys())
    assert stored and TOKEN.encode() not in stored  # answers are cached, the token never
    cache.close()
    assert "authorization" in recording.SECRET_HEADERS  # cassettes drop the header (tests/test_transport.py records one)


@pytest.mark.parametrize("token", [None, TOKEN])
async def test_a_query_service_that_wants_authentication_is_a_one_line_error(monkeypatch, token):
    if token:
        monkeypatch.setenv("KGFED_WIKIMEDIA_TOKEN", token)
    seen: list[Request] = []
    http = HttpClient(contact=CONTACT, transport=MockTransport(lambda r: (seen.append(r), CHALLENGE)[1]))
    async with http:
        with pytest.raises(HttpStatusError, match=r"KGFED_WIKIMEDIA_TOKEN \(HTTP 401") as raised:
            await HttpEndpoint(WDQS, http).select("SELECT ?x WHERE { ?x ?p ?o } LIMIT 1")
    message = str(raised.value)
    assert "\n" not in message and TOKEN not in message
    assert ("refused the token" in message) == bool(token) and len(seen) == (2 if token else 1)


async def test_a_robot_policy_403_is_not_an_authentication_request(monkeypatch):
    monkeypatch.setenv("KGFED_WIKIMEDIA_TOKEN", TOKEN)
    seen: list[Request] = []
    http = HttpClient(user_agent="python-requests/2.32", transport=MockTransport(lambda r: (seen.append(r), Services()(r))[1]))
    async with http:
        with pytest.raises(Exception, match="User-Agent"):
            await http.request("GET", WDQS)
    assert [r.headers.get("Authorization") for r in seen] == [None]
