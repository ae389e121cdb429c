"""What kgfed knows of each server kind (`endpoints.kinds.ServerKind`) and the client's chain of handlers
(`endpoints.handlers`): Virtuoso's errors of the query itself (HTTP 500 with SQLSTATE 37000/42000) are not
retried, against a real Virtuoso through a counting proxy and in their measured shapes; a request re-sent
after a token challenge keeps its `passthrough` and `retries`; a request that timed out is not sent twice."""
from __future__ import annotations

import json

import pytest

from bench.latency_proxy import LatencyProxy
from kgfed.endpoints import kinds
from kgfed.endpoints.client import POLITE_HOSTS, HttpClient
from kgfed.endpoints.http import HttpEndpoint
from kgfed.endpoints.transport import MockTransport, Request, Response
from kgfed.sparql.errors import EndpointTimeout, HttpStatusError, QueryTimeout

from .live_services import no_user_config, qlever_error  # noqa: F401 (autouse)

TOKEN = "wm-oauth-token-123"
CONTACT = "ops@example.org"
WDQS = "https://query.wikidata.org/sparql"
LOCAL = "http://127.0.0.1:8890/sparql"
CHALLENGE = Response.of(401, json.dumps({"httpCode": 401, "httpReason": "Unauthorized", "detail": "Authentication required"}),
                        content_type="application/json", headers={"WWW-Authenticate": 'Bearer realm="wdqs"'})

# Virtuoso 7.2's answers, as measured here (`virtuoso-t` 07.20.3229 over HTTP): text/plain, the SQLSTATE first.
PERMISSION = ("Virtuoso 42000 Error SR186:SECURITY: No permission to execute procedure DB.DBA.USER_CREATE with user ID 107, "
              "group ID 107\n\nSPARQL query:\nSELECT (sql:USER_CREATE(\"x\",\"y\") AS ?x) WHERE {}")
TRANSITIVE = "Virtuoso 37000 Error TR...: transitive start not given\n\nSPARQL query:\nSELECT ?x WHERE { ?x <http://e/p>* ?y }"
SYNTAX = "Virtuoso 37000 Error SP030: SPARQL compiler, line 2: syntax error\n\nSPARQL query:\nSELECT * WHERE { ?s ?p ?o "
DEADLOCK = "Virtuoso 40001 Error SR172: Transaction deadlocked\n\nSPARQL query:\nSELECT * WHERE { ?s ?p ?o }"
# Queries a real Virtuoso answers with HTTP 500 and one of the errors above, every time.
FIXED_ERROR_QUERIES = {
    "permission": 'SELECT (sql:USER_CREATE("x","y") AS ?x) WHERE {}',
    "transitive start not given": "SELECT ?x WHERE { ?x <http://kgfed.test/p>* ?y }",
    "negative limit": "SELECT ?s WHERE { ?s ?p ?o } LIMIT -1",
}


def _ok(_request: Request) -> Response:
    return Response.of(200, b'{"head": {"vars": ["x"]}, "results": {"bindings": []}}',
                       content_type="application/sparql-results+json")


def _virtuoso_500(body: str) -> Response:
    return Response.of(500, body, content_type="text/plain", headers={"Server": "Virtuoso/07.20.3229 (Linux) x86_64-pc-linux-gnu"})


# -- the capability objects ---------------------------------------------------------------------------------
def test_each_host_maps_to_its_kind_and_the_polite_caps_come_from_the_kinds():
    assert kinds.kind_of_host("query.wikidata.org") is kinds.WDQS
    assert kinds.kind_of_host("commons-query.wikimedia.org").name == "wdqs"
    assert kinds.kind_of_host("qlever.dev") is kinds.QLEVER and kinds.kind_of_host("QLever.dev:443") is kinds.QLEVER
    assert kinds.kind_of_host("en.wikipedia.org") is kinds.WIKIMEDIA_API
    assert kinds.kind_of_host("127.0.0.1:8890") is kinds.GENERIC
    assert dict(POLITE_HOSTS) == {"query.wikidata.org": 5, "query-main.wikidata.org": 5, "query-scholarly.wikidata.org": 5,
                                  "www.wikidata.org": 3, "en.wikipedia.org": 3, "qlever.cs.uni-freiburg.de": 4,
                                  "qlever.dev": 4}
    assert kinds.VIRTUOSO.timeout_fields(5000) == {"timeout": "5000"} and kinds.QLEVER.timeout_fields(5000) == {"timeout": "5000ms"}
    assert kinds.QLEVER.timeout_fields(30_000) == {} and kinds.WDQS.timeout_fields(5000) == {}
    assert kinds.OXIGRAPH.timeout_fields(5000) == {} and kinds.VIRTUOSO.timeout_fields(None) == {}
    with pytest.raises(ValueError, match="unknown server kind 'blazegraph': use one of wdqs, qlever"):
        kinds.kind_named("blazegraph")


def test_a_declared_kind_is_what_the_client_asks():
    client = HttpClient(transport=MockTransport(_ok))
    assert client.kind_for("127.0.0.1:8890") is kinds.GENERIC
    client.declare_kind("127.0.0.1:8890", "oxigraph")
    assert client.kind_for("127.0.0.1:8890") is kinds.OXIGRAPH and client.kind_for("127.0.0.1:8891") is kinds.GENERIC


# -- Virtuoso's errors of the query itself -----------------------------------------------------------------
@pytest.mark.parametrize("body", [PERMISSION, TRANSITIVE, SYNTAX], ids=["permission", "transitive", "syntax"])
@pytest.mark.parametrize("kind", [None, "virtuoso"])
async def test_a_virtuoso_error_of_the_query_itself_is_not_retried(body, kind):
    sent: list[Request] = []
    async with HttpClient(retries=4, backoff=0.001, transport=MockTransport(lambda r: (sent.append(r), _virtuoso_500(body))[1])) as client:
        if kind:
            client.declare_kind("127.0.0.1:8890", kind)
        with pytest.raises(HttpStatusError) as raised:
            await client.request("GET", LOCAL, params={"query": "SELECT * WHERE { ?s ?p ?o }"})
    assert len(sent) == 1 and client.stats["retries"] == 0  # 5 before
    message = str(raised.value)
    assert raised.value.status == 500 and not raised.value.retryable and "\n" not in message
    assert message.startswith(f"GET 127.0.0.1:8890 answered HTTP 500: {body.splitlines()[0]}") and "not retried" in message


async def test_a_virtuoso_error_that_may_pass_is_still_retried():
    answers = iter([_virtuoso_500(DEADLOCK), _virtuoso_500(DEADLOCK), _ok(None)])  # type: ignore[arg-type]
    sent: list[Request] = []
    async with HttpClient(retries=4, backoff=0.001, transport=MockTransport(lambda r: (sent.append(r), next(answers))[1])) as client:
        response = await client.request("GET", LOCAL, params={"query": "SELECT * WHERE { ?s ?p ?o }"})
    assert response.status == 200 and len(sent) == 3


async def test_a_virtuoso_body_on_a_wdqs_host_is_not_read_as_virtuoso():
    sent: list[Request] = []  # WDQS's kind knows no Virtuoso errors: its 500s that are not timeouts are retried
    async with HttpClient(contact=CONTACT, retries=2, backoff=0.001,
                          transport=MockTransport(lambda r: (sent.append(r), _virtuoso_500(SYNTAX))[1])) as client:
        with pytest.raises(HttpStatusError, match=r"gave up after 3 attempts"):
            await client.request("GET", WDQS, params={"query": "SELECT * WHERE { ?s ?p ?o }"})
    assert len(sent) == 3


@pytest.mark.parametrize("what", list(FIXED_ERROR_QUERIES))
async def test_a_real_virtuoso_is_asked_once_for_a_query_it_refuses(what, virtuoso_freebase):
    async with LatencyProxy(virtuoso_freebase.url, delay=0.0) as proxy, HttpClient(retries=4, backoff=0.001) as client:
        endpoint = HttpEndpoint(proxy.url, client, default_graph=virtuoso_freebase.cwq_graph)
        with pytest.raises(HttpStatusError) as raised:
            await endpoint.select(FIXED_ERROR_QUERIES[what])
        assert proxy.requests == 1  # 5 before: the same error each time
    assert raised.value.status == 500 and "Virtuoso" in str(raised.value) and "not retried" in str(raised.value)


async def test_a_real_virtuoso_still_answers_through_the_chain(virtuoso_freebase):
    async with LatencyProxy(virtuoso_freebase.url, delay=0.0) as proxy, HttpClient(retries=4) as client:
        endpoint = HttpEndpoint(proxy.url, client, default_graph=virtuoso_freebase.cwq_graph)
        result = await endpoint.select("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
        assert proxy.requests == 1
    assert int(result.rows[0]["n"].value) > 1000


# -- the token challenge ------------------------------------------------------------------------------------
def _behind_a_proxy(sent: list[Request], then: Response):
    def proxy(request: Request) -> Response:
        sent.append(request)
        return then if request.headers.get("Authorization") == f"Bearer {TOKEN}" else CHALLENGE
    return proxy


async def test_after_a_token_challenge_the_request_keeps_its_passthrough(monkeypatch):
    monkeypatch.setenv("KGFED_WIKIMEDIA_TOKEN", TOKEN)
    sent: list[Request] = []
    busy = Response.of(503, "upstream busy", headers={"Retry-After": "1"})
    async with HttpClient(contact=CONTACT, backoff=0.001, transport=MockTransport(_behind_a_proxy(sent, busy))) as client:
        response = await client.request("GET", WDQS, params={"query": "ASK {}"}, passthrough=(503,))
    assert response.status == 503 and len(sent) == 2  # the 503 handed back as asked: before, retried 5 times and raised
    assert "Authorization" not in sent[0].headers and sent[1].headers["Authorization"] == f"Bearer {TOKEN}"


async def test_after_a_token_challenge_the_request_keeps_its_retries(monkeypatch):
    monkeypatch.setenv("KGFED_WIKIMEDIA_TOKEN", TOKEN)
    sent: list[Request] = []
    failing = Response.of(502, "Bad Gateway")
    async with HttpClient(contact=CONTACT, retries=4, backoff=0.001,
                          transport=MockTransport(_behind_a_proxy(sent, failing))) as client:
        with pytest.raises(HttpStatusError, match=r"answered HTTP 502: Bad Gateway \(gave up after 1 attempts\)"):
            await client.request("GET", WDQS, params={"query": "ASK {}"}, retries=0)
    assert len(sent) == 2  # the challenge, then one attempt with the token: before, 1 + 5


# -- a request that timed out is not sent twice --------------------------------------------------------------
async def test_a_request_that_timed_out_is_not_sent_again_in_the_run():
    sent: list[Request] = []

    def qlever(request: Request) -> Response:
        sent.append(request)
        return qlever_error(429, request.fields()["query"], "Operation timed out. Last operation: IndexScan ?x ?p ?o")

    async with HttpClient(transport=MockTransport(qlever)) as client:
        for _ in range(3):
            with pytest.raises(QueryTimeout, match="stopped the query at its time limit"):
                await client.request("GET", "https://qlever.dev/api/wikidata", params={"query": "SELECT * { ?x ?p ?o }"})
        assert len(sent) == 1 and client.stats["timeouts_not_repeated"] == 2
        with pytest.raises(QueryTimeout):  # another query is another request
            await client.request("GET", "https://qlever.dev/api/wikidata", params={"query": "SELECT * { ?x ?p ?o } LIMIT 9"})
        with pytest.raises(QueryTimeout):  # a longer wait asked for is another request too
            await client.request("GET", "https://qlever.dev/api/wikidata", params={"query": "SELECT * { ?x ?p ?o }"}, timeout=300)
    assert len(sent) == 3


async def test_a_client_side_timeout_is_not_repeated_unless_asked():
    sent: list[Request] = []

    def slow(request: Request) -> Response:
        sent.append(request)
        raise TimeoutError

    for repeat, expected in ((False, 1), (True, 2)):
        sent.clear()
        async with HttpClient(transport=MockTransport(slow), repeat_timeouts=repeat) as client:
            for _ in range(2):
                with pytest.raises(EndpointTimeout, match="timed out after 60 s"):
                    await client.request("POST", LOCAL, data={"query": "SELECT * { ?s ?p ?o }"})
        assert len(sent) == expected


async def test_a_timed_out_request_is_remembered_for_a_while_and_a_bounded_number():
    from kgfed.endpoints.handlers import Call, NoRepeat

    sent: list[Call] = []

    async def times_out(call: Call) -> Response:
        sent.append(call)
        raise EndpointTimeout(f"{call.what} timed out after 1 s: simplify the query, batch less, or raise --timeout")

    client = HttpClient(transport=MockTransport(_ok))
    calls = [Call("GET", LOCAL, "127.0.0.1:8890", kinds.GENERIC, {"query": f"ASK {{ <urn:{i}> ?p ?o }}"}) for i in range(3)]
    remembering = NoRepeat(client, size=2)
    for call in (*calls, calls[0], calls[2]):  # the first was pushed out by the third: sent again, once
        with pytest.raises(EndpointTimeout):
            await remembering(call, times_out)
    with pytest.raises(EndpointTimeout, match=r"\(not sent again: the same request timed out 0 s ago in this run\)$"):
        await remembering(calls[2], times_out)
    assert [call.params for call in sent] == [c.params for c in (*calls, calls[0])]
    forgetting = NoRepeat(client, seconds=0.0)  # a long-lived server asks again once the time is up
    for _ in range(2):
        with pytest.raises(EndpointTimeout):
            await forgetting(calls[1], times_out)
    assert len(sent) == 6


def test_the_sparqlwrapper_drop_in_sends_a_query_again_when_the_script_asks_again():
    """The genuine library re-sends what a script asks again; so does the drop-in (its client repeats timeouts)."""
    import pyoxigraph as ox

    from kgfed.engine.kg import sync

    from .timeoutserver import TimeoutServer

    with TimeoutServer(ox.Store(), shape="qlever", max_terms=-1) as server:
        sparql = sync.SPARQLWrapper(server.url)
        sparql.setQuery("SELECT ?s WHERE { VALUES ?s { <urn:a> } }")
        for _ in range(2):
            with pytest.raises(Exception, match="429"):  # the class the genuine library raises for it
                sparql.query()
    assert len(server.queries) == 2
