"""The read-only SPARQL guard (`kgfed.sparql.guard`) against the store that runs the query.

The differential test draws queries whose SERVICE call, FROM clause or pattern is hidden or not by
comments ending at \\r, \\n or \\r\\n, other whitespace and \\u/\\U escapes, and compares the guard's
verdict with what pyoxigraph really does with the same text: whether it calls a canary HTTP server on
127.0.0.1, which graph it reads, or whether it rejects the syntax.
"""
from __future__ import annotations

import http.server
import threading

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from kgfed.sparql.errors import InvalidQuery
from kgfed.sparql.guard import MAX_NESTING, ServicePolicy, analyse, check_read_only, origin, tokens

EX = "http://example.org/"


# -- a canary SPARQL server: counts every request, answers one row -----------------------------------
class Canary:
    def __init__(self) -> None:
        self.hits: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                outer.hits.append(self.path)
                body = (b'{"head":{"vars":["a"]},"results":{"bindings":[{"a":{"type":"uri","value":"http://canary.example/"}}]}}')
                self.send_response(200)
                self.send_header("Content-Type", "application/sparql-results+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802
                self._answer()

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                self._answer()

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/x"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def canary():
    server = Canary()
    yield server
    server.close()


@pytest.fixture(scope="module")
def store():
    s = ox.Store()
    s.add(ox.Quad(ox.NamedNode(EX + "s"), ox.NamedNode(EX + "p"), ox.Literal("default")))
    s.add(ox.Quad(ox.NamedNode(EX + "t"), ox.NamedNode(EX + "p"), ox.Literal("named"), ox.NamedNode(EX + "g")))
    return s


def run(store, query: str):
    """What the store does with `query`: ('invalid', None) or ('ok', sorted rows)."""
    try:
        result = store.query(query)
    except SyntaxError:
        return "invalid", None
    except (OSError, RuntimeError, ValueError) as exc:  # an evaluation error (e.g. the canary's answer)
        return "error", str(exc)
    if isinstance(result, ox.QueryBoolean):
        return "ok", bool(result)
    return "ok", sorted(tuple(str(v) for v in s) for s in result)


def guard(query: str, policy: ServicePolicy = ServicePolicy(), max_rows: int = 50):  # noqa: B008 (frozen)
    """('service'|'dataset'|'update'|'invalid', message) when refused, else ('ok', text to send)."""
    try:
        return "ok", analyse(query, policy, max_rows).text
    except InvalidQuery as exc:
        message = str(exc)
        assert "\n" not in message and "Traceback" not in message
        for kind in ("SERVICE", "FROM", "update"):
            if kind in message:
                return {"SERVICE": "service", "FROM": "dataset", "update": "update"}[kind], message
        return "invalid", message


# -- the attack and its relatives -------------------------------------------------------------
@pytest.mark.parametrize("eol", ["\r", "\n", "\r\n"])
def test_a_comment_ended_by_any_line_end_hides_no_service(canary, store, eol):
    query = f"SELECT * WHERE {{ ?s ?p ?o #{eol} SERVICE <{canary.url}> {{ ?a ?b ?c }} \n}} LIMIT 1"
    before = len(canary.hits)
    verdict, message = guard(query)
    assert verdict == "service", message
    assert str(canary.port) in message
    run(store, query)  # the store does call it: the guard was right to refuse
    assert len(canary.hits) == before + 1


def test_a_service_inside_a_comment_is_dropped_not_sent(canary, store):
    query = f"SELECT * WHERE {{ ?s ?p ?o # SERVICE <{canary.url}> {{ ?a ?b ?c }}\n}}"
    verdict, text = guard(query)
    assert verdict == "ok" and "SERVICE" not in text and "#" not in text
    before = len(canary.hits)
    assert run(store, text) == run(store, "SELECT * WHERE { ?s ?p ?o }")
    assert run(store, text)[1] and sorted(run(store, text)[1][0]) == sorted([f"<{EX}p>", f"<{EX}s>", '"default"'])
    assert len(canary.hits) == before


def test_escaped_service_iris_are_decoded_before_judging(canary):
    escaped = canary.url.replace(":", "\\u003A").replace("h", "\\U00000068", 1)
    verdict, message = guard(f"SELECT * WHERE {{ SERVICE <{escaped}> {{ ?a ?b ?c }} }}")
    assert verdict == "service" and canary.url in message
    prefixed = f"PREFIX c: <http://127.0.0.1:{canary.port}/> SELECT * WHERE {{ SERVICE SILENT c:x {{ ?a ?b ?c }} }}"
    assert guard(prefixed)[0] == "service"
    assert "variable" in guard("SELECT * WHERE { SERVICE ?where { ?a ?b ?c } }")[1]
    assert "undeclared prefix" in guard("SELECT * WHERE { SERVICE nope:x { ?a ?b ?c } }")[1]


def test_service_only_to_the_endpoints_own_origin():
    policy = ServicePolicy.for_urls(["http://kg.example:8890/sparql"])
    ok = "SELECT * WHERE { SERVICE <http://kg.example:8890/other> { ?a ?b ?c } }"
    assert guard(ok, policy)[0] == "ok"
    for other in ("http://kg.example:8891/sparql", "https://kg.example:8890/sparql", "http://kg.example/sparql",
                  "http://evil.example:8890/sparql", "http://kg.example.evil.example:8890/", "file:///etc/passwd"):
        verdict, message = guard(f"SELECT * WHERE {{ SERVICE <{other}> {{ ?a ?b ?c }} }}", policy)
        assert verdict == "service" and "http://kg.example:8890" in message, (other, message)
    assert origin("https://Host.Example/x") == ("https", "host.example", 443)
    builtin = 'SELECT ?l WHERE { SERVICE wikibase:label { bd:serviceParam wikibase:language "en" } }'
    assert guard(builtin, policy)[0] == "service"
    assert guard(builtin, ServicePolicy(builtins=True))[0] == "ok"
    # the old signature (a set of host names) still works, on default ports only
    assert check_read_only(ok.replace(":8890", ""), {"kg.example"}, 5).endswith("LIMIT 6")
    with pytest.raises(InvalidQuery, match="SERVICE"):
        check_read_only(ok, {"kg.example"}, 5)


def test_the_old_import_path_is_gone_in_0_3():
    with pytest.raises(ImportError, match="check_read_only"):
        from kgfed.engine.mcp.server import check_read_only  # noqa: F401 - re-exported until 0.3.0


@pytest.mark.parametrize("query, kind", [
    ("INSERT DATA { <a:b> <a:c> <a:d> }", "update"),
    ("SELECT * WHERE { ?s ?p ?o } ; insert data { <a:b> <a:c> <a:d> }", "update"),
    ("# hidden?\rDELETE WHERE { ?s ?p ?o }", "update"),
    ("LOAD <http://example.org/x.nt>", "update"),
    ("SELECT * FROM <http://example.org/g> WHERE { ?s ?p ?o }", "dataset"),
    ("SELECT * #\r FROM NAMED <http://example.org/g> WHERE { ?s ?p ?o }", "dataset"),
    ("ASK FROM <http://example.org/g> { ?s ?p ?o }", "dataset"),
    ("CONSTRUCT WHERE { ?s ?p ?o }", "invalid"),
    ("DESCRIBE <http://example.org/s>", "invalid"),
    ("BASE <http://evil.example/> SELECT * WHERE { SERVICE <x> { ?s ?p ?o } }", "invalid"),
    ("# only a comment", "invalid"),
    ("SELECT * WHERE { ?s ?p 'unterminated }", "invalid"),
    ("SELECT * WHERE { ?s ?p ?o", "invalid"),
    ("DEFINE get:soft \"replace\" SELECT * WHERE { ?s ?p ?o }", "invalid"),
])
def test_refusals_are_one_line(query, kind):
    verdict, message = guard(query)
    assert verdict == kind, message


def test_deep_nesting_is_one_line_not_a_recursion_error(store):
    query = "SELECT * WHERE " + "{" * 100 + " ?s ?p ?o " + "}" * 100
    verdict, message = guard(query)
    assert verdict == "invalid" and "too deeply nested" in message and "Recursion" not in message
    fine = "SELECT * WHERE " + "{" * (MAX_NESTING - 2) + " ?s ?p ?o " + "}" * (MAX_NESTING - 2)
    verdict, text = guard(fine)
    assert verdict == "ok" and run(store, text)[0] == "ok"


def test_the_row_cap_holds_whatever_follows(store):
    many = ox.Store()
    for i in range(30):
        many.add(ox.Quad(ox.NamedNode(f"{EX}s{i}"), ox.NamedNode(EX + "p"), ox.Literal(str(i))))
    values = " ".join(f"<{EX}s{i}>" for i in range(30))
    for query in (f"SELECT ?s WHERE {{ ?s ?p ?o }} VALUES ?s {{ {values} }}",
                  "SELECT ?s WHERE { ?s ?p ?o } LIMIT 1000",
                  "SELECT ?s WHERE { ?s ?p ?o } OFFSET 2",
                  "SELECT * WHERE { ?s ?p ?o }",
                  "SELECT DISTINCT ?s (STR(?o) AS ?v) WHERE { ?s ?p ?o } ORDER BY ?v"):
        verdict, text = guard(query, max_rows=4)
        assert verdict == "ok" and " LIMIT 5" in text, text
        status, rows = run(many, text)
        assert status == "ok" and len(rows) == 5, (text, rows)
    # its own small LIMIT is kept as it is, and the projection (order included) survives the wrapping
    assert guard("SELECT ?s WHERE { ?s ?p ?o } LIMIT 3", max_rows=4)[1] == "SELECT ?s WHERE { ?s ?p ?o } LIMIT 3"
    ordered = guard("SELECT ?o ?s WHERE { ?s ?p ?o } ORDER BY DESC(?o) LIMIT 10", max_rows=4)[1]
    assert ordered == "SELECT ?o ?s WHERE { ?s ?p ?o } ORDER BY DESC(?o) LIMIT 5"  # the caller's text, the number replaced
    sub = guard("SELECT ?s WHERE { { SELECT ?s WHERE { ?s ?p ?o } LIMIT 1000 } VALUES ?o { 1 } }", max_rows=4)[1]
    assert sub.endswith("LIMIT 1000 } VALUES ?o { 1 } } LIMIT 5")  # a sub-query's LIMIT and inline VALUES are not the top
    assert guard("SELECT ?s WHERE { ?s ?p ?o } VALUES ?s { 1 }", max_rows=4)[1].endswith("} LIMIT 5 VALUES ?s { 1 }")
    assert [r["o"].value for r in many.query(ordered)] == ["9", "8", "7", "6", "5"]
    assert guard("ASK { ?s ?p ?o }")[1] == "ASK { ?s ?p ?o }"


def test_tokens_follow_the_grammar():
    kinds = [(t.kind, t.text) for t in tokens("SELECT ?x #c\r<http://a/b#c> 'it''s' \"\"\"a\nb\"\"\" ex:a\\.b _:b1 -1.5e3")
             if t.kind not in ("WS",)]
    assert kinds == [("WORD", "SELECT"), ("VAR", "?x"), ("COMMENT", "#c"), ("IRI", "<http://a/b#c>"),
                     ("STRING", "'it'"), ("STRING", "'s'"), ("STRING", '"""a\nb"""'), ("PNAME", "ex:a\\.b"),
                     ("BNODE", "_:b1"), ("NUMBER", "-1.5e3")]


# -- the differential test ----------------------------------------------------------------------------
EOLS = ["\r", "\n", "\r\n"]
WHITESPACE = st.sampled_from([" ", "\t", "\n", "\r", "\r\n", "  \t "])
ENDED_COMMENT = st.builds(lambda text, eol: f"#{text}{eol}", st.sampled_from(["", " c", " SERVICE", " } {", "\\u000A", "'"]),
                          st.sampled_from(EOLS))
OPEN_COMMENT = st.builds(lambda text: f"#{text}", st.sampled_from(["", " no end here", " \\u000D"]))  # to the next EOL
SEPARATORS = st.one_of(WHITESPACE, WHITESPACE, ENDED_COMMENT, ENDED_COMMENT, OPEN_COMMENT)


def escape_some(text: str, picks: list[int], wide: bool) -> str:
    """`text` with the characters at `picks` written as \\uXXXX (or \\UXXXXXXXX) escapes."""
    out = []
    for i, ch in enumerate(text):
        if i in picks:
            out.append(f"\\U{ord(ch):08X}" if wide else f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return "".join(out)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seps=st.lists(SEPARATORS, min_size=6, max_size=6),
       keyword=st.sampled_from(["SERVICE", "service", "Service", "SERVICE SILENT", "SERVICE", "\\u0053ERVICE"]),
       picks=st.lists(st.integers(0, 40), max_size=3), wide=st.booleans(),
       form=st.sampled_from(["iri", "pname"]), dataset=st.booleans())
def test_guard_verdict_equals_the_stores_parse(canary, store, seps, keyword, picks, wide, form, dataset):
    iri = escape_some(canary.url, picks, wide)
    if form == "iri":
        prologue, target = "", f"<{iri}>"
    else:
        prologue, target = f"PREFIX c: <{escape_some(f'http://127.0.0.1:{canary.port}/', picks, wide)}>\n", "c:x"
    s = seps
    source = f"FROM <{EX}g>{s[5]}" if dataset else ""
    query = (f"{prologue}SELECT ?s{s[0]}{source}WHERE {{ ?s ?p ?o{s[1]}{keyword}{s[2]}{target}{s[3]}"
             f"{{ ?a ?b ?c }}{s[4]}}}")
    before = len(canary.hits)
    status, rows = run(store, query)
    called = len(canary.hits) > before
    verdict, detail = guard(query)
    event(f"guard {verdict}, store {status}{', canary called' if called else ''}")

    if called:  # the store would reach the canary: the guard must have refused it (and seen why)
        assert verdict == "service" or (dataset and verdict == "dataset"), (query, verdict, detail)
    if verdict == "ok":  # what the guard lets through is what the store made of the original, and calls nobody
        assert not called, query
        before = len(canary.hits)
        assert run(store, detail) == (status, rows), (query, detail)
        assert len(canary.hits) == before
    elif verdict == "service":  # never a false alarm: the store parses a SERVICE there too
        assert called or status == "invalid", (query, status)
    elif verdict == "dataset":  # never a false alarm: the store really reads the FROM graph
        assert status == "invalid" or rows and all(r in {("<http://example.org/t>",), ("None",)} for r in rows), (query, rows)
    else:
        assert verdict == "invalid" and status == "invalid", (query, verdict, detail, status)
