"""The SPARQLWrapper drop-in against the genuine library: same servers, same requests, equal answers.

Differential: ToG's and PoG's query strings, filled for entities of the CWQ fixture, go through the
genuine `SPARQLWrapper` 2.0.0 and through `kgfed.engine.kg.sync.SPARQLWrapper` (cold cache, then warm
cache, then cache off) against a real Virtuoso and a real Oxigraph server; every `convert()` must be
equal, ASK included, and the warm pass must send nothing. Oxigraph gets ToG's strings rewritten to
standard SPARQL (`to_standard_sparql`), as in bench/tog_pattern.py; the raw strings are a parse error
there, and both libraries must raise the same `QueryBadFormed` for them.

Request options are checked on an echo server (stdlib `ThreadingHTTPServer` on 127.0.0.1) that answers
with a SPARQL-JSON document describing the request it received (method, content type, query,
parameters, graphs, custom headers, credentials): equal documents mean equal requests. The same server
scripts statuses, delays and Virtuoso's partial-answer headers.
"""
from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import pickle
import subprocess
import sys
import threading
import urllib.error
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest
import SPARQLWrapper as genuine

from bench.tog_pattern import (sparql_head_entities_extract, sparql_head_relations, sparql_id,
                               sparql_tail_entities_extract, sparql_tail_relations)
from kgfed.engine.kg import sync
from kgfed.sparql.errors import EndpointError
from kgfed.sparql.rewrite import to_standard_sparql
from tests.conftest_servers import CWQ_GRAPH, FEDERATION_GRAPH

ROOT = Path(__file__).resolve().parents[1]

# PoG (SteveTANTAN/PoG, PoG/freebase_func.py and PoG/utils.py), verbatim. PoG's first five strings are
# ToG's five (imported above); these are the ones it adds.
pog_tail_entities_and_relations = """
PREFIX ns: <http://rdf.freebase.com/ns/>
SELECT ?relation ?tailEntity
WHERE {
    ns:%s ?relation ?tailEntity .
}
"""
pog_head_entities_and_relations = """
PREFIX ns: <http://rdf.freebase.com/ns/>
SELECT ?relation ?headEntity
WHERE {
    ?headEntity ?relation ns:%s .
}
"""
pog_combined = """
    PREFIX ns: <http://rdf.freebase.com/ns/>
    SELECT ?relation ?connectedEntity ?direction
    WHERE {
        {
            ns:%s ?relation ?connectedEntity .
            BIND("tail" AS ?direction)
        }
        UNION
        {
            ?connectedEntity ?relation ns:%s .
            BIND("head" AS ?direction)
        }
    }
    """
pog_combined_named = """
    PREFIX ns: <http://rdf.freebase.com/ns/>
    SELECT ?relation ?connectedEntity ?connectedEntityName ?direction
    WHERE {
        {
            ns:%s ?relation ?connectedEntity .
            OPTIONAL {
                ?connectedEntity ns:type.object.name ?name .
                FILTER(lang(?name) = 'en')
            }
            BIND(COALESCE(?name, "Unnamed Entity") AS ?connectedEntityName)
            BIND("tail" AS ?direction)
        }
        UNION
        {
            ?connectedEntity ?relation ns:%s .
            OPTIONAL {
                ?connectedEntity ns:type.object.name ?name .
                FILTER(lang(?name) = 'en')
            }
            BIND(COALESCE(?name, "Unnamed Entity") AS ?connectedEntityName)
            BIND("head" AS ?direction)
        }
    }
    """
ASK_EDGE = "PREFIX ns: <http://rdf.freebase.com/ns/>\nASK { ns:%s ?relation ?x . }"
# high and low degree, a CVT-rich one, one that is absent (empty answers, ASK false)
ENTITIES = ["m.0146np", "m.0345_", "m.02hrh1q", "m.0f8l9c", "m.07ssc", "m.000kgfedabsent"]
NS = "http://rdf.freebase.com/ns/"


def ask(module, url: str, query: str, *, fmt: str = genuine.JSON, **options):
    """One query the way ToG/PoG send it; returns convert() or the exception raised."""
    sparql = module.SPARQLWrapper(url, **options)
    sparql.setQuery(query)
    sparql.setReturnFormat(fmt)
    try:
        return sparql.query().convert()
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return exc


def tog_pog_queries(url: str, standard: bool) -> list[str]:
    """ToG's and PoG's strings filled for ENTITIES (relations taken from the server's own answers)."""
    fix = to_standard_sparql if standard else (lambda q: q)
    queries = []
    for e in ENTITIES:
        queries += [sparql_head_relations % e, sparql_tail_relations % e, sparql_id % (e, e),
                    pog_tail_entities_and_relations % e, pog_head_entities_and_relations % e,
                    pog_combined % (e, e), pog_combined_named % (e, e), ASK_EDGE % e]
        for template, entities in ((sparql_head_relations, sparql_tail_entities_extract),
                                   (sparql_tail_relations, sparql_head_entities_extract)):
            rows = ask(genuine, url, fix(template % e))
            relations = sorted({row["relation"]["value"].removeprefix(NS) for row in rows["results"]["bindings"]})
            for r in relations[:3]:
                queries.append(entities % ((e, r) if entities is sparql_tail_entities_extract else (r, e)))
    return [fix(q) for q in queries]


def requests_sent() -> int:
    return sync.stats()["requests"]


def differential(url: str, queries: list[str], cache_dir: Path) -> int:
    """Genuine vs drop-in cold, warm and uncached for every query; returns how many were compared."""
    expected = [ask(genuine, url, q) for q in queries]
    assert not any(isinstance(x, Exception) for x in expected), [x for x in expected if isinstance(x, Exception)][:1]
    cold = [ask(sync, url, q, cache_dir=cache_dir) for q in queries]
    sync.flush_cache()
    before = requests_sent()
    warm = [ask(sync, url, q, cache_dir=cache_dir) for q in queries]
    assert requests_sent() == before, "the warm pass must be answered from the cache"
    uncached = [ask(sync, url, q, cache=False) for q in queries]
    assert requests_sent() - before == len(queries)
    for q, want, *got in zip(queries, expected, cold, warm, uncached):
        assert got == [want] * 3, q
    return len(queries)


# ---- ToG's and PoG's strings on real servers --------------------------------------------------------------
@pytest.mark.virtuoso
def test_tog_and_pog_strings_give_the_genuine_documents_on_virtuoso(virtuoso_freebase, tmp_path):
    url = virtuoso_freebase.url
    queries = tog_pog_queries(url, standard=False)
    assert differential(url, queries, tmp_path / "c") >= 60
    # Virtuoso's own fields survive verbatim (the old drop-in dropped or rewrote them)
    doc = ask(sync, url, queries[0], cache_dir=tmp_path / "c")
    assert doc["head"]["link"] == [] and doc["results"]["distinct"] is False and doc["results"]["ordered"] is True
    assert ask(sync, url, ASK_EDGE % "m.0146np", cache_dir=tmp_path / "c")["boolean"] is True
    assert ask(sync, url, ASK_EDGE % "m.000kgfedabsent", cache_dir=tmp_path / "c")["boolean"] is False


def test_tog_and_pog_strings_give_the_genuine_documents_on_oxigraph(oxigraph_freebase, tmp_path):
    url = oxigraph_freebase.url
    queries = tog_pog_queries(url, standard=True)
    assert differential(url, queries, tmp_path / "c") >= 60
    assert ask(sync, url, to_standard_sparql(ASK_EDGE % "m.0146np"), cache_dir=tmp_path / "c") == {"head": {}, "boolean": True}
    # ToG's raw strings are not standard SPARQL: Oxigraph rejects them, and both libraries say so alike
    raw = sparql_tail_entities_extract % ("m.0146np", "location.location.containedby")
    want, got = ask(genuine, url, raw), ask(sync, url, raw, cache_dir=tmp_path / "c")
    assert type(want) is genuine.SPARQLExceptions.QueryBadFormed
    assert isinstance(got, genuine.SPARQLExceptions.QueryBadFormed) and isinstance(got, EndpointError)
    assert str(got) == str(want) and "expected" in str(got)  # the genuine text with the server's own words
    assert "\n" not in got.hint and "expected" in got.hint  # kgfed's one line


@pytest.mark.virtuoso
def test_graphs_method_and_formats_are_honoured_on_virtuoso(virtuoso_freebase, tmp_path):
    url, count = virtuoso_freebase.url, "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"

    def run(module, setup, fmt=genuine.JSON, **options):
        sparql = module.SPARQLWrapper(url, **options)
        sparql.setQuery(setup.get("query", count))
        sparql.setReturnFormat(fmt)
        for graph in setup.get("default", []):
            sparql.addDefaultGraph(graph)
        for graph in setup.get("named", []):
            sparql.addNamedGraph(graph)
        if setup.get("post"):
            sparql.setMethod(genuine.POST)
        return sparql.query().convert()

    cases = {"all": {}, "cwq": {"default": [CWQ_GRAPH]}, "fed": {"default": [FEDERATION_GRAPH]},
             "both": {"default": [CWQ_GRAPH, FEDERATION_GRAPH]}, "cwq-post": {"default": [CWQ_GRAPH], "post": True},
             "named": {"named": [FEDERATION_GRAPH],
                       "query": "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g"}}
    counts = {}
    for name, setup in cases.items():
        want = run(genuine, setup)
        for _ in range(2):  # cold, then warm
            assert run(sync, setup, cache_dir=tmp_path / "c") == want, name
            sync.flush_cache()
        counts[name] = [int(b["n"]["value"]) for b in want["results"]["bindings"]]
    # the graphs really restrict the answer (so one cache entry per graph setting, never merged)
    assert counts["cwq"] == counts["cwq-post"] and counts["cwq"][0] + counts["fed"][0] == counts["both"][0]
    assert counts["all"][0] > counts["both"][0] > counts["cwq"][0] > 0 and len(counts["named"]) == 1
    # other formats go through the drop-in uncached and convert exactly as the genuine library's
    select = {"query": "PREFIX ns: <http://rdf.freebase.com/ns/> SELECT ?p ?o WHERE { ns:m.0146np ?p ?o } ORDER BY ?p ?o"}
    for fmt in (genuine.CSV, genuine.TSV):
        assert run(sync, select, fmt, cache_dir=tmp_path / "c") == run(genuine, select, fmt)
    assert run(sync, select, genuine.XML).toxml() == run(genuine, select, genuine.XML).toxml()
    construct = {"query": "PREFIX ns: <http://rdf.freebase.com/ns/> CONSTRUCT { ns:m.0146np ?p ?o } WHERE { ns:m.0146np ?p ?o }"}
    assert run(sync, construct, genuine.TURTLE) == run(genuine, construct, genuine.TURTLE)
    assert set(run(sync, construct, genuine.RDFXML)) == set(run(genuine, construct, genuine.RDFXML))


@pytest.mark.virtuoso
def test_errors_are_the_genuine_classes_on_virtuoso(virtuoso_freebase, tmp_path):
    url = virtuoso_freebase.url
    for query in ("SELEC ?x WHERE { ?x ?p ?o }", "SELECT ?x WHERE { ?x ?p }"):
        want, got = ask(genuine, url, query), ask(sync, url, query, cache_dir=tmp_path / "c")
        assert type(want) is genuine.SPARQLExceptions.QueryBadFormed and isinstance(got, type(want))
        assert str(got) == str(want) and "SP030" in str(got) and "\n\nResponse:\nb" in str(got)
    missing = url.replace("/sparql", "/no-such-endpoint")
    want, got = ask(genuine, missing, "ASK {}"), ask(sync, missing, "ASK {}", cache_dir=tmp_path / "c")
    assert type(want) is genuine.SPARQLExceptions.EndPointNotFound and isinstance(got, type(want))


# ---- request parity on an echo server -------------------------------------------------------------------
class _Echo(BaseHTTPRequestHandler):
    """GET/POST /<script>: answers with the request it saw, or with the scripted status/headers/delay."""

    protocol_version = "HTTP/1.1"
    hits: dict[str, int] = {}
    lock, in_flight, most = threading.Lock(), 0, 0

    def log_message(self, *args) -> None:  # quiet
        return None

    def do_GET(self) -> None:
        self.answer(b"")

    def do_POST(self) -> None:
        self.answer(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def answer(self, body: bytes) -> None:
        parts = urlsplit(self.path)
        script = parts.path.strip("/")
        _Echo.hits[script] = _Echo.hits.get(script, 0) + 1
        params = parse_qsl(parts.query, keep_blank_values=True)
        if self.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded"):
            params += parse_qsl(body.decode(), keep_blank_values=True)
        seen = {"method": self.command, "content-type": self.headers.get("Content-Type", ""),
                "body": body.decode() if not params or "form" not in self.headers.get("Content-Type", "") else "",
                "accept": self.headers.get("Accept", ""), "params": sorted(params),
                "headers": sorted((k.lower(), v) for k, v in self.headers.items() if k.lower().startswith("x-")),
                "authorization": self.headers.get("Authorization", "")}
        if script == "fixed":  # the same document whatever was asked (nothing of the request echoed)
            seen = {"fixed": True}
        if script == "agent":
            seen = {"user-agent": self.headers.get_all("User-Agent"), "authorization": self.headers.get("Authorization", "")}
        doc: dict = {"head": {"vars": ["seen"]}, "results": {"bindings": [
            {"seen": {"type": "literal", "value": json.dumps(seen, sort_keys=True)}}]}}
        headers, status = {}, 200
        reason = None
        if script.startswith("reason"):  # a status with the server's own reason phrase
            script, reason = "status" + script[6:], f"Scripted Reason {script[6:]}"
        if script.startswith("status"):
            status, doc = int(script[6:]), {"error": f"scripted {script[6:]}"}
            headers = {"Retry-After": "0", "X-Kgfed-Scripted": script[6:]}  # a 429 that keeps coming back at once
        elif script == "slow":
            threading.Event().wait(3)
        elif script == "crowd":  # counts the requests in flight at once
            with _Echo.lock:
                _Echo.in_flight += 1
                _Echo.most = max(_Echo.most, _Echo.in_flight)
            threading.Event().wait(0.3)
            with _Echo.lock:
                _Echo.in_flight -= 1
        elif script == "s1tat":
            headers = {"X-SQL-State": "S1TAT", "X-SQL-Message": "RC...: Returning incomplete results, query interrupted by result timeout."}
        elif script == "maxrows":
            headers = {"X-SPARQL-MaxRows": "1"}
        elif script == "ask-for-select":
            doc = {"head": {}, "boolean": True}
        elif script == "redirect":  # a moved endpoint: both libraries follow it
            self.send_response(302)
            self.send_header("Location", "/echo?" + parts.query if parts.query else "/echo")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        elif script == "hang-up":  # answers, then closes the kept-alive connection without saying so
            self.close_connection = True
        data = json.dumps(doc).encode() if not script.startswith("status") else f"Error {status}: scripted".encode()
        self.send_response(status, reason)
        self.send_header("Content-Type", "application/sparql-results+json" if status == 200 else "text/plain")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def echo() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    server.handle_error = lambda request, address: None  # a client that gave up (setTimeout) is expected
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def seen(module, url: str, configure, **options) -> dict:
    sparql = module.SPARQLWrapper(url, **options)
    sparql.setQuery("SELECT ?seen WHERE { ?s ?p ?seen } # a comment\nLIMIT 1")
    sparql.setReturnFormat(genuine.JSON)
    configure(sparql)
    return json.loads(sparql.query().convert()["results"]["bindings"][0]["seen"]["value"])


REQUESTS = {
    "plain": lambda s: None,
    "post": lambda s: s.setMethod(genuine.POST),
    "post-directly": lambda s: (s.setMethod(genuine.POST), s.setRequestMethod(genuine.POSTDIRECTLY)),
    "graphs": lambda s: (s.addDefaultGraph("http://g/1"), s.addDefaultGraph("http://g/2"), s.addNamedGraph("http://g/3")),
    "post-graphs": lambda s: (s.setMethod(genuine.POST), s.addDefaultGraph("http://g/1")),  # differs in the body only
    "parameter": lambda s: s.addParameter("timeout", "5000"),
    "header": lambda s: s.addCustomHttpHeader("X-Kgfed-Test", "yes"),
    "conneg": lambda s: s.setOnlyConneg(True),
    "basic": lambda s: s.setCredentials("ann", "secret"),
}


@pytest.mark.parametrize("name", list(REQUESTS))
def test_every_request_option_reaches_the_server_as_the_genuine_library_sends_it(echo, name, tmp_path):
    want = seen(genuine, f"{echo}/echo", REQUESTS[name])
    got = seen(sync, f"{echo}/echo", REQUESTS[name], cache_dir=tmp_path)
    assert got == want
    assert want["method"] == ("POST" if "post" in name else "GET")
    if "graphs" in name:
        assert ("default-graph-uri", "http://g/1") in [tuple(p) for p in got["params"]]
    if name == "header":
        assert ["x-kgfed-test", "yes"] in got["headers"]


def test_options_that_change_the_request_never_share_a_cache_entry(echo, tmp_path):
    documents = {name: seen(sync, f"{echo}/echo", configure, cache_dir=tmp_path) for name, configure in REQUESTS.items()}
    sync.flush_cache()
    assert len({json.dumps(d, sort_keys=True) for d in documents.values()}) == len(REQUESTS)
    before = _Echo.hits.get("echo", 0)
    again = {name: seen(sync, f"{echo}/echo", configure, cache_dir=tmp_path) for name, configure in REQUESTS.items()}
    assert again == documents and _Echo.hits.get("echo", 0) == before  # all warm, each its own entry


@pytest.mark.parametrize(("code", "error"), [(400, "QueryBadFormed"), (401, "Unauthorized"), (404, "EndPointNotFound"),
                                             (414, "URITooLong"), (500, "EndPointInternalError")])
def test_http_errors_raise_the_genuine_classes(echo, code, error, tmp_path):
    want, got = ask(genuine, f"{echo}/status{code}", "ASK {}"), ask(sync, f"{echo}/status{code}", "ASK {}", cache_dir=tmp_path)
    genuine_class = getattr(genuine.SPARQLExceptions, error)
    assert type(want) is genuine_class and isinstance(got, genuine_class) and isinstance(got, EndpointError)
    assert str(got) == str(want) and f"Response:\nb'Error {code}: scripted'" in str(got)
    assert f"HTTP {code}" in got.hint and "scripted" in got.hint and "\n" not in got.hint  # kgfed's one line
    assert getattr(sync, error) is genuine_class  # re-exported


def test_other_statuses_and_unreachable_servers_raise_what_urllib_raises(echo, tmp_path):
    want, got = ask(genuine, f"{echo}/status403", "ASK {}"), ask(sync, f"{echo}/status403", "ASK {}", cache_dir=tmp_path)
    assert type(want) is urllib.error.HTTPError and isinstance(got, urllib.error.HTTPError) and got.code == 403
    closed = "http://127.0.0.1:9/sparql"  # discard port: nothing listens
    want, got = ask(genuine, closed, "ASK {}"), ask(sync, closed, "ASK {}", cache_dir=tmp_path)
    assert isinstance(want, urllib.error.URLError) and isinstance(got, urllib.error.URLError)
    assert isinstance(got, EndpointError) and "127.0.0.1:9" in got.hint
    assert str(got) == str(want) == "<urlopen error [Errno 111] Connection refused>"  # urllib's words


def test_set_timeout_is_honoured(echo, tmp_path):
    def slow(module, **options):
        sparql = module.SPARQLWrapper(f"{echo}/slow", **options)
        sparql.setQuery("ASK {}")
        sparql.setReturnFormat(genuine.JSON)
        sparql.setTimeout(1)
        try:
            return sparql.query().convert()
        except Exception as exc:  # noqa: BLE001
            return exc

    want, got = slow(genuine), slow(sync, cache_dir=tmp_path)
    assert isinstance(want, TimeoutError) and isinstance(got, TimeoutError) and isinstance(got, EndpointError)
    assert str(got) == str(want) == "timed out"  # as urllib's socket timeout
    assert "setTimeout(1)" in got.hint


@pytest.mark.parametrize("script", ["s1tat", "maxrows", "ask-for-select"])
def test_partial_or_wrong_shape_answers_are_returned_as_sent_but_never_cached(echo, script, tmp_path):
    url = f"{echo}/{script}"
    query = "SELECT ?seen WHERE { ?s ?p ?seen }"
    want = ask(genuine, url, query)
    before = _Echo.hits[script]
    for _ in range(3):
        assert ask(sync, url, query, cache_dir=tmp_path) == want
        sync.flush_cache()
    assert _Echo.hits[script] - before == 3  # every call went to the server


def test_the_cache_can_be_switched_off_and_moved(echo, tmp_path, monkeypatch):
    url, query = f"{echo}/echo", "SELECT ?seen WHERE { ?s ?p ?seen } LIMIT 7"

    def sent(**options) -> int:
        before = _Echo.hits.get("echo", 0)
        for _ in range(3):
            ask(sync, url, query, **options)
            sync.flush_cache()
        return _Echo.hits["echo"] - before

    assert sent(cache_dir=tmp_path / "mine") == 1 and (tmp_path / "mine" / sync._RawCache.FILE).exists()
    assert sent(cache=False) == 3
    monkeypatch.setenv("KGFED_NO_CACHE", "1")
    assert sent() == 3 and sent(cache=True, cache_dir=tmp_path / "mine") == 0  # the flag beats the variable
    monkeypatch.delenv("KGFED_NO_CACHE")
    monkeypatch.setenv("KGFED_CACHE_DIR", str(tmp_path / "env"))
    assert sent() == 1 and (tmp_path / "env" / "sparqlwrapper" / sync._RawCache.FILE).exists()


def test_a_redis_root_holds_the_drop_ins_documents(echo, redis_root, monkeypatch):
    """`KGFED_CACHE_DIR=redis://…` (or `cache_dir=` a Redis URL or a `Store`): the documents are the root's
    `kgfed:documents:*` keys, read back byte for byte, and no file is written on this machine."""
    import redis

    from kgfed.cache.documents import DocumentCache
    from kgfed.cache.root import RedisStore, open_store

    url, query = f"{echo}/echo", "SELECT ?seen WHERE { ?s ?p ?seen } LIMIT 5"
    monkeypatch.setenv("KGFED_CACHE_DIR", redis_root)
    monkeypatch.setenv("HOME", "/nonexistent-home")  # nothing may be written under ~/.cache
    before = _Echo.hits.get("echo", 0)
    first = ask(sync, url, query)
    sync.flush_cache()
    assert ask(sync, url, query) == first and _Echo.hits["echo"] - before == 1
    client = redis.Redis.from_url(redis_root)
    keys = [k.decode() for k in client.keys("kgfed:documents:*")]
    assert len(keys) == 1  # one request, one document
    monkeypatch.delenv("KGFED_CACHE_DIR")
    store = open_store(redis_root, "documents")
    assert isinstance(store, RedisStore)
    assert ask(sync, url, query, cache_dir=store) == first  # a session's store handed in: the same entry
    assert ask(sync, url, query, cache_dir=redis_root) == first and _Echo.hits["echo"] - before == 1
    entry = DocumentCache(store, close_store=False).get(keys[0].split(":", 2)[2], "SELECT")
    assert entry is not None and entry[0] == 200 and json.loads(entry[2]) == first
    store.close()
    client.close()


# ---- the module is the genuine module's twin ------------------------------------------------------------
def test_the_module_exports_what_sparqlwrapper_exports():
    namespace: dict = {}
    exec("from kgfed.engine.kg.sync import SPARQLWrapper, JSON, XML", namespace)  # PoG's import line
    for name in genuine.__all__:
        assert hasattr(sync, name), name
        if isinstance(getattr(genuine, name), str):
            assert getattr(sync, name) == getattr(genuine, name), name
    assert issubclass(sync.SPARQLWrapper, genuine.SPARQLWrapper)
    assert issubclass(sync.SPARQLWrapper2, genuine.SPARQLWrapper2) and sync.QueryResult is genuine.QueryResult
    for name in ("SPARQLWrapperException", "QueryBadFormed", "EndPointNotFound", "EndPointInternalError",
                 "Unauthorized", "URITooLong"):
        assert getattr(sync, name) is getattr(genuine.SPARQLExceptions, name)


def test_sparqlwrapper2_bindings_through_the_drop_in(oxigraph_freebase, tmp_path):
    query = "SELECT ?o WHERE { <http://rdf.freebase.com/ns/m.0146np> <http://rdf.freebase.com/ns/location.location.containedby> ?o }"
    sparql = sync.SPARQLWrapper2(oxigraph_freebase.url, cache_dir=tmp_path)
    sparql.setQuery(query)
    reference = genuine.SPARQLWrapper2(oxigraph_freebase.url)
    reference.setQuery(query)
    assert [b["o"].value for b in sparql.query().bindings] == [b["o"].value for b in reference.query().bindings] == [
        "http://rdf.freebase.com/ns/m.0345_"]


def test_a_process_using_the_drop_in_exits_without_unclosed_session_warnings(oxigraph_freebase, tmp_path):
    script = (  # the caller's own loop, a worker thread's, and the background loop (inside asyncio.run)
        "import asyncio, atexit, gc, socket, threading, warnings; warnings.simplefilter('always')\n"
        "def left_open():  # registered first, so it runs after the drop-in's own exit handler\n"
        "    import aiohttp; gc.collect(); objects = gc.get_objects()\n"
        "    sessions = [o for o in objects if isinstance(o, aiohttp.ClientSession) and not o.closed]\n"
        "    sockets = [o for o in objects if isinstance(o, socket.socket) and o.fileno() != -1]\n"
        "    print('left open:', len(sessions), len(sockets))\n"
        "atexit.register(left_open)\n"
        "from kgfed.engine.kg.sync import SPARQLWrapper, JSON\n"
        f"s = SPARQLWrapper({oxigraph_freebase.url!r}); s.setQuery('ASK {{ ?s ?p ?o }}'); s.setReturnFormat(JSON)\n"
        "t = threading.Thread(target=lambda: s.query().convert()); t.start(); t.join()\n"
        "async def main(): return s.query().convert()['boolean']\n"
        "print(s.query().convert()['boolean'], asyncio.run(main()))\n"
    )
    env = {**os.environ, "KGFED_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-X", "dev", "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["True True", "left open: 0 0"]
    assert "Unclosed" not in done.stderr and "unclosed" not in done.stderr.lower(), done.stderr


def test_get_sparql_dataframe_refuses_what_the_genuine_one_refuses(echo):
    from SPARQLWrapper.sparql_dataframe import QueryException

    with pytest.raises(QueryException, match="^Only SPARQL SELECT queries are supported.$") as caught:
        sync.get_sparql_dataframe(f"{echo}/echo", "ASK { ?s ?p ?o }")
    assert "SELECT queries only" in caught.value.hint


def test_threads_and_running_event_loops_get_the_genuine_answers(echo, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    url = f"{echo}/echo"
    queries = [f"SELECT ?seen WHERE {{ ?s ?p ?seen }} LIMIT {n}" for n in range(1, 25)]
    want = [ask(genuine, url, q) for q in queries]
    with ThreadPoolExecutor(8) as pool:  # PoG's way: a thread pool, each thread blocking on its query
        got = list(pool.map(lambda q: ask(sync, url, q, cache=False), queries))
    assert got == want

    async def inside_a_loop():  # a notebook or an async app calling blocking code
        return [ask(sync, url, q, cache=False) for q in queries[:3]]

    assert asyncio.run(inside_a_loop()) == want[:3]
    ask(sync, url, queries[0], cache=False)  # a later call releases the clients of the pool's ended threads
    assert all(c.thread.is_alive() for c in sync._runtime().clients)


def test_redirects_are_followed_and_a_connection_the_server_dropped_is_reopened(echo, tmp_path):
    for configure in (REQUESTS["plain"], REQUESTS["post"]):
        assert seen(sync, f"{echo}/redirect", configure, cache=False) == seen(genuine, f"{echo}/redirect", configure)
    before, retries = _Echo.hits.get("echo", 0), sync.stats()["retries"]
    for n in range(3):  # each hang-up leaves a dead kept-alive connection behind; the next query must not fail
        assert ask(sync, f"{echo}/hang-up", f"ASK {{ ?s ?p {n} }}", cache=False)["results"]["bindings"]
        assert ask(sync, f"{echo}/echo", f"ASK {{ ?s ?p {n} }}", cache=False)["results"]["bindings"]
    assert _Echo.hits["echo"] - before == 3 and sync.stats()["retries"] == retries  # reopened at once, no backoff


def test_a_given_agent_is_sent_once_and_the_default_agent_becomes_kgfeds(echo):
    def agents(module, **options) -> list[str]:
        return json.loads(ask(module, f"{echo}/agent", "ASK {}", **options)["results"]["bindings"][0]["seen"]["value"])["user-agent"]

    assert agents(sync, agent="my-agent/1.0 (me@example.org)", cache=False) == agents(genuine, agent="my-agent/1.0 (me@example.org)")
    assert agents(genuine) == [genuine.__agent__]
    [default] = agents(sync, cache=False)
    assert default.startswith("kgfed/")


def test_a_user_agent_set_as_a_custom_header_wins_as_in_the_genuine_library(echo):
    def agents(module, header: str) -> list[str]:
        sparql = module.SPARQLWrapper(f"{echo}/agent", **({} if module is genuine else {"cache": False}))
        sparql.setQuery("ASK {}")
        sparql.setReturnFormat(genuine.JSON)
        sparql.addCustomHttpHeader(header, "ToG-bot/1.0 (tog@example.org)")
        return json.loads(sparql.query().convert()["results"]["bindings"][0]["seen"]["value"])["user-agent"]

    for header in ("User-Agent", "User-agent", "user-agent"):
        assert agents(sync, header) == agents(genuine, header) == ["ToG-bot/1.0 (tog@example.org)"], header


# ---- errors: the genuine mapping, exactly, with what the server sent; and they pickle --------------------
@pytest.mark.parametrize("code", [402, 403, 405, 409, 418, 429, 501, 503, 505, 999])
def test_every_other_status_raises_urllibs_http_error_with_the_servers_headers_and_body(echo, code, tmp_path):
    """As the genuine `_query()`: only 400/401/404/414/500 have classes of their own (429/503 after kgfed's retries)."""
    url = f"{echo}/status{code}"
    want, got = ask(genuine, url, "ASK {}"), ask(sync, url, "ASK {}", cache_dir=tmp_path)
    assert type(want) is urllib.error.HTTPError and want.code == code
    assert isinstance(got, urllib.error.HTTPError) and isinstance(got, EndpointError)
    assert not isinstance(got, genuine.SPARQLExceptions.SPARQLWrapperException)
    assert got.code == got.status == got.getcode() == code
    assert got.headers["X-Kgfed-Scripted"] == want.headers["X-Kgfed-Scripted"] == str(code)
    assert got.headers["retry-after"] == "0" and got.headers["Content-Type"] == want.headers["Content-Type"]
    assert got.read() == want.read() == f"Error {code}: scripted".encode()
    assert str(got) == str(want) and f"HTTP {code}" in got.hint and "\n" not in got.hint


def raised(url: str, query: str = "ASK {}", **options) -> Exception:
    error = ask(sync, url, query, cache=False, **options)
    assert isinstance(error, Exception), error
    return error


def the_drop_ins_errors(echo: str) -> list[Exception]:
    """One of each class the drop-in raises, from real servers."""
    errors = [raised(f"{echo}/status{code}") for code in (400, 401, 404, 414, 500, 403, 429, 501)]
    errors.append(raised("http://127.0.0.1:9/sparql"))  # nothing listens: URLError
    sparql = sync.SPARQLWrapper(f"{echo}/slow", cache=False)
    sparql.setQuery("ASK {}")
    sparql.setTimeout(1)  # the genuine setTimeout keeps whole seconds
    try:
        sparql.query()
    except TimeoutError as exc:
        errors.append(exc)
    try:
        sync.get_sparql_dataframe(f"{echo}/echo", "ASK { ?s ?p ?o }")
    except Exception as exc:  # noqa: BLE001
        errors.append(exc)
    update = sync.SPARQLWrapper(f"{echo}/status400", updateEndpoint=f"{echo}/status400")  # the genuine urllib path
    update.setQuery("INSERT DATA { <urn:a> <urn:b> <urn:c> }")
    update.setMethod(genuine.POST)
    try:
        update.query()
    except Exception as exc:  # noqa: BLE001
        errors.append(exc)
    return errors


def same_error(a: Exception, b: Exception) -> bool:
    fields = ("status", "code", "response", "reason", "retryable")
    return (type(a) is type(b) and str(a) == str(b)
            and all(getattr(a, f, None) == getattr(b, f, None) for f in fields))


def test_every_error_the_drop_in_raises_pickles(echo):
    errors = the_drop_ins_errors(echo)
    assert len(errors) == 12 and len({type(e) for e in errors}) == 9  # 3 HTTPError, 2 QueryBadFormed (HTTP, update)
    for error in errors:
        assert isinstance(error, (EndpointError, sync.KgfedError)), error
        for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
            back = pickle.loads(pickle.dumps(error, protocol))
            assert same_error(back, error), (error, back)
        if isinstance(error, urllib.error.HTTPError):
            back = pickle.loads(pickle.dumps(error))
            assert back.headers["X-Kgfed-Scripted"] == error.headers["X-Kgfed-Scripted"]
            assert back.read() == error.response == b"Error %d: scripted" % error.code


def _query_in_a_worker(url: str) -> str:
    """A worker process's query (PoG's multiprocessing pool): its error must reach the parent as it is."""
    return sync.SPARQLWrapper(url, cache=False).query().convert()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_worker_processs_error_reaches_the_parent_intact(echo, method):
    context = multiprocessing.get_context(method)
    with context.Pool(1) as pool:
        for code, expected in ((400, genuine.SPARQLExceptions.QueryBadFormed), (503, urllib.error.HTTPError),
                               (501, urllib.error.HTTPError)):
            with pytest.raises(expected) as caught:
                pool.apply(_query_in_a_worker, (f"{echo}/status{code}",))
            assert isinstance(caught.value, EndpointError) and f"HTTP {code}" in caught.value.hint
            assert str(caught.value) == str(ask(genuine, f"{echo}/status{code}", "ASK {}"))
            if expected is urllib.error.HTTPError:
                assert caught.value.code == code and caught.value.read() == b"Error %d: scripted" % code


def test_credentials_in_the_url_are_sent_as_basic_auth_and_never_stored_or_shown(echo, tmp_path):
    """The genuine library cannot use `http://user:pw@host/` (urllib: URLError); the drop-in sends Basic auth."""
    host = echo.removeprefix("http://")
    sparql = sync.SPARQLWrapper(f"http://ann:s3cr3t-pw@{host}/agent", cache=False)
    sparql.setQuery("SELECT ?seen WHERE { ?s ?p ?seen }")
    sparql.setReturnFormat(genuine.JSON)
    seen_there = json.loads(sparql.query().convert()["results"]["bindings"][0]["seen"]["value"])
    assert seen_there["authorization"] == "Basic YW5uOnMzY3IzdC1wdw=="  # ann:s3cr3t-pw
    before = _Echo.hits.get("fixed", 0)
    for _ in range(2):  # cached under a key that holds no secret, then answered from it
        assert ask(sync, f"http://ann:s3cr3t-pw@{host}/fixed", "SELECT ?seen WHERE { ?s ?p ?seen }", cache_dir=tmp_path)
        sync.flush_cache()
    assert _Echo.hits["fixed"] - before == 1
    stored = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert stored and b"s3cr3t" not in stored and b"YW5uOnMzY3IzdC1wdw" not in stored and b"ann:" not in stored
    error = raised("http://ann:s3cr3t-pw@127.0.0.1:9/sparql")
    assert isinstance(error, urllib.error.URLError) and "127.0.0.1:9" in error.hint
    assert "s3cr3t" not in str(error) and "s3cr3t" not in error.hint


def test_a_cache_directory_that_cannot_be_made_costs_a_warning_not_the_answers(echo, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    before = _Echo.hits.get("echo", 0)
    with pytest.warns(RuntimeWarning, match="cannot keep answers in .*a-file.*KGFED_NO_CACHE"):
        first = ask(sync, f"{echo}/echo", "SELECT ?seen WHERE { ?s ?p ?seen } LIMIT 3", cache_dir=blocked / "cache")
    assert first == ask(genuine, f"{echo}/echo", "SELECT ?seen WHERE { ?s ?p ?seen } LIMIT 3")
    assert ask(sync, f"{echo}/echo", "SELECT ?seen WHERE { ?s ?p ?seen } LIMIT 3", cache_dir=blocked / "cache") == first
    assert _Echo.hits["echo"] - before == 3  # every query sent: nothing could be kept


def test_threads_that_come_and_go_leave_no_cache_connection_open(echo, tmp_path):
    """PoG opens a thread pool per question: each thread's SQLite reader must go with its thread."""
    import gc
    from concurrent.futures import ThreadPoolExecutor

    def open_files() -> int:
        gc.collect()
        return sum(1 for fd in Path("/proc/self/fd").iterdir()
                   if str(tmp_path) in os.path.realpath(fd) if fd.exists())

    url = f"{echo}/echo"
    ask(sync, url, "SELECT ?seen WHERE { ?s ?p ?seen } LIMIT 1", cache_dir=tmp_path)
    sync.flush_cache()
    before = open_files()
    for round_ in range(10):  # ten pools of four threads, each thread reading the cache
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda n: ask(sync, url, f"SELECT ?seen WHERE {{ ?s ?p ?seen }} LIMIT {n}", cache_dir=tmp_path),
                          range(round_ * 4, round_ * 4 + 4)))
    sync.flush_cache()
    assert open_files() <= before + 2, "reader connections of ended threads are still open"


@pytest.mark.parametrize(("doc", "form", "complete"), [
    ({"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "uri", "value": "http://a"}}]}}, "SELECT", True),
    ({"head": {"vars": ["x"]}, "results": {"bindings": []}}, "SELECT", True),
    ({"head": {}, "boolean": False}, "ASK", True),
    ({"head": {"vars": ["x"]}, "results": {"bindings": [{"y": {"type": "uri", "value": "http://a"}}]}}, "SELECT", False),
    ({"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "uri"}}]}}, "SELECT", False),
    ({"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "thing", "value": "a"}}]}}, "SELECT", False),
    ({"head": {"vars": ["x"]}, "results": {"bindings": [["x"]]}}, "SELECT", False),
    ({"head": {"vars": ["x"]}, "results": {}}, "SELECT", False),
    ({"head": {}, "boolean": True}, "SELECT", False),
    ({"head": {"vars": ["x"]}, "results": {"bindings": []}}, "ASK", False),
])
def test_only_complete_documents_of_the_querys_form_are_stored(doc, form, complete):
    assert sync.complete_document(json.dumps(doc).encode(), form) is complete
    assert sync.complete_document(json.dumps(doc).encode()[:-1], form) is False  # cut short: never


# ---- the genuine library's text, and as many requests as it sends (issue 42 item 12) ---------------------
ERROR_STATUSES = [400, 401, 402, 403, 404, 405, 409, 414, 418, 429, 500, 501, 502, 503, 504, 505, 999]


@pytest.mark.parametrize("script", ["status", "reason"])
@pytest.mark.parametrize("code", ERROR_STATUSES)
def test_every_http_error_has_the_genuine_text_and_costs_what_it_costs_the_genuine_library(echo, code, script, tmp_path):
    """Agents parse the genuine text (`Response:\\n` and the server's bytes, or urllib's `HTTP Error N: reason`);
    an error is sent as often as the genuine library sends it: once (no kgfed retries unless asked)."""
    url, where = f"{echo}/{script}{code}", f"{script}{code}"
    before = _Echo.hits.get(where, 0)
    want = ask(genuine, url, "ASK {}")
    by_genuine = _Echo.hits[where] - before
    got = ask(sync, url, "ASK {}", cache_dir=tmp_path)
    if isinstance(want, urllib.error.HTTPError):
        want.close()  # urllib's keeps the connection open
    assert isinstance(want, Exception) and isinstance(got, type(want)) and isinstance(got, EndpointError)
    assert str(got) == str(want)
    assert by_genuine == 1 and _Echo.hits[where] - before == 2
    if script == "reason":
        assert str(got) == (f"HTTP Error {code}: Scripted Reason {code}" if code not in sync._STATUS_ERRORS
                            else str(want))


def test_kgfed_retries_only_when_asked(echo):
    before = _Echo.hits.get("status500", 0)
    error = ask(sync, f"{echo}/status500", "ASK {}", cache=False, retries=2)
    assert isinstance(error, genuine.SPARQLExceptions.EndPointInternalError)
    assert _Echo.hits["status500"] - before == 3
    with pytest.raises(ValueError, match="retries"):
        sync.SPARQLWrapper(f"{echo}/echo", retries=-1)


def test_the_per_host_cap_is_documented_and_settable(echo):
    from concurrent.futures import ThreadPoolExecutor

    def most_in_flight(threads: int) -> int:
        _Echo.most = 0
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda n: ask(sync, f"{echo}/crowd", f"ASK {{ }} # {n}", cache=False), range(threads)))
        return _Echo.most

    assert sync.host_limit("127.0.0.1:1") == 16
    sync.set_host_limit(3)
    try:
        assert sync.host_limit(echo.removeprefix("http://")) == 3
        assert most_in_flight(8) == 3
    finally:
        sync.set_host_limit(None)
    assert 3 < most_in_flight(20) <= 16
    with pytest.raises(ValueError, match="at least 1"):
        sync.set_host_limit(0)
    assert "set_host_limit" in (ROOT / "docs" / "dropin.md").read_text() and "16" in (ROOT / "docs" / "dropin.md").read_text()


class _Counting(BaseHTTPRequestHandler):
    """A proxy in front of a real server that counts the requests it forwards."""

    protocol_version = "HTTP/1.1"
    target = ""
    seen: list[str] = []

    def log_message(self, *args) -> None:
        return None

    def do_GET(self) -> None:
        self.forward(None)

    def do_POST(self) -> None:
        self.forward(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def forward(self, body: bytes | None) -> None:
        import http.client

        _Counting.seen.append(self.path)
        target = urlsplit(self.target)
        connection = http.client.HTTPConnection(target.netloc, timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        connection.request(self.command, self.path, body=body, headers=headers)
        answer = connection.getresponse()
        data = answer.read()
        connection.close()
        self.send_response(answer.status, answer.reason)
        for k, v in answer.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length", "server", "date"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.mark.virtuoso
def test_a_malformed_query_through_the_drop_in_is_sent_once_with_the_genuine_text_on_virtuoso(virtuoso_freebase):
    _Counting.target = virtuoso_freebase.url
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}{urlsplit(virtuoso_freebase.url).path}"
        for query in ("SELEC ?x WHERE { ?x ?p ?o }", "SELECT ?x WHERE { ?x ?p }"):
            _Counting.seen = []
            want = ask(genuine, url, query)
            assert len(_Counting.seen) == 1
            got = ask(sync, url, query, cache=False)
            assert len(_Counting.seen) == 2, _Counting.seen
            assert type(want) is genuine.SPARQLExceptions.QueryBadFormed and isinstance(got, type(want))
            assert str(got) == str(want) and "SP030" in str(got)
            response = str(got).split("Response:\n", 1)[1]  # what agents show their model
            assert response[:2] in ("b'", 'b"') and "SP030" in response
    finally:
        server.shutdown()
        server.server_close()
