"""The guard's function allowlist and its promise never to change a valid query, against pyoxigraph.

pyoxigraph runs a query's extension functions through `custom_functions`: registered for the extension IRIs
the tests call, they record every call the store really makes. The differential test draws expressions of
SPARQL's built-ins and extension calls (full IRIs, prefixed names in any case, ``\\u`` escapes, ``bif:``
under another prefix) in every place an expression stands (projection, FILTER, BIND, ORDER BY, GROUP BY,
HAVING, a sub-query, EXISTS) and in triple patterns where an IRI before ``(`` is no call (a path group, a
collection), with comments and line ends between every two tokens, and checks: the guard refuses every query
in which the store calls an extension function; what it accepts, the store answers from the guard's text
exactly as from the caller's; a query of built-ins only is never refused.
"""
from __future__ import annotations

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from kgfed.sparql.dialects import FREEBASE, WIKIDATA
from kgfed.sparql.errors import InvalidQuery
from kgfed.sparql.guard import BUILTIN_FUNCTIONS, XSD, analyse, function_calls, tokens
from tests.test_guard import ENDED_COMMENT, WHITESPACE, run

EX = "http://ex/"
DT = f'"2011-01-10T14:45:13-05:00"^^<{XSD}dateTime>'
# every built-in of the grammar with arguments it accepts (aggregates over ?x)
BUILTIN_ARGS: dict[str, list[str]] = {
    "STR": ["?x"], "LANG": ['"a"@en'], "LANGMATCHES": ['"en"', '"*"'], "DATATYPE": ["1"], "BOUND": ["?x"],
    "IRI": [f'"{EX}i"'], "URI": [f'"{EX}i"'], "BNODE": [], "RAND": [], "ABS": ["-1"], "CEIL": ["1.5"],
    "FLOOR": ["1.5"], "ROUND": ["1.5"], "CONCAT": ['"a"', '"b"'], "STRLEN": ['"ab"'], "UCASE": ['"a"'],
    "LCASE": ['"A"'], "ENCODE_FOR_URI": ['"a b"'], "CONTAINS": ['"ab"', '"a"'], "STRSTARTS": ['"ab"', '"a"'],
    "STRENDS": ['"ab"', '"b"'], "STRBEFORE": ['"ab"', '"b"'], "STRAFTER": ['"ab"', '"a"'], "YEAR": [DT],
    "MONTH": [DT], "DAY": [DT], "HOURS": [DT], "MINUTES": [DT], "SECONDS": [DT], "TIMEZONE": [DT], "TZ": [DT],
    "NOW": [], "UUID": [], "STRUUID": [], "MD5": ['"abc"'], "SHA1": ['"abc"'], "SHA256": ['"abc"'],
    "SHA384": ['"abc"'], "SHA512": ['"abc"'], "COALESCE": ["?nothing", "1"], "IF": ["true", "1", "2"],
    "STRLANG": ['"a"', '"en"'], "STRDT": ['"1"', f"<{XSD}integer>"], "SAMETERM": ["1", "1"], "ISIRI": ["1"],
    "ISURI": ["1"], "ISBLANK": ["1"], "ISLITERAL": ["1"], "ISNUMERIC": ["1"], "REGEX": ['"ab"', '"A"', '"i"'],
    "SUBSTR": ['"abc"', "2", "1"], "REPLACE": ['"abc"', '"b"', '"x"'], "COUNT": ["?x"], "SUM": ["?x"],
    "MIN": ["?x"], "MAX": ["?x"], "AVG": ["?x"], "SAMPLE": ["?x"], "GROUP_CONCAT": ["STR(?x) ; SEPARATOR = ','"],
    "LANGDIR": ['"a"@en--ltr'], "HASLANG": ['"a"@en'], "HASLANGDIR": ['"a"@en--ltr'],
    "STRLANGDIR": ['"a"', '"en"', '"ltr"'], "ISTRIPLE": ["1"], "TRIPLE": [f"<{EX}s>", f"<{EX}p>", "1"],
    "SUBJECT": [f"TRIPLE(<{EX}s>, <{EX}p>, 1)"], "PREDICATE": [f"TRIPLE(<{EX}s>, <{EX}p>, 1)"],
    "OBJECT": [f"TRIPLE(<{EX}s>, <{EX}p>, 1)"],
}
AGGREGATES = {"COUNT", "SUM", "MIN", "MAX", "AVG", "SAMPLE", "GROUP_CONCAT"}
RANDOM = {"BNODE", "RAND", "NOW", "UUID", "STRUUID"}  # a new value on each run: only the parse is compared


class Calls:
    """pyoxigraph's custom functions for the extension IRIs below: each call is recorded."""

    IRIS = (f"{EX}f", "bif:http_get", "http://www.openlinksw.com/schemas/bif#http_get", "sql:exec")

    def __init__(self) -> None:
        self.made: list[str] = []

    def functions(self) -> dict:
        def recorder(iri: str):
            return lambda *args: self.made.append(iri) or ox.Literal("called")
        return {ox.NamedNode(iri): recorder(iri) for iri in self.IRIS}

    def run(self, store: ox.Store, query: str):
        """What the store does with `query` (as `tests.test_guard.run`) and whether it called a function."""
        before = len(self.made)
        try:
            result = store.query(query, custom_functions=self.functions())
            status, rows = "ok", (bool(result) if isinstance(result, ox.QueryBoolean)
                                  else sorted(tuple(str(v) for v in s) for s in result))
        except SyntaxError:
            status, rows = "invalid", None
        except (OSError, RuntimeError, ValueError) as exc:
            status, rows = "error", str(exc)
        return status, rows, len(self.made) > before


@pytest.fixture(scope="module")
def store():
    return ox.Store()


def verdict(query: str, **options):
    try:
        return "ok", analyse(query, max_rows=50, **options).text
    except InvalidQuery as exc:
        assert "\n" not in str(exc)
        return "refused", str(exc)


def builtin_query(name: str, spelling: str, between: str) -> str:
    call = f"{spelling}{between}({', '.join(BUILTIN_ARGS[name])})"
    rows = "1 2" if name in AGGREGATES else "1"
    return f"SELECT ({call} AS ?v) WHERE {{ VALUES ?x {{ {rows} }} }}"


def test_the_examples_cover_every_builtin():
    assert set(BUILTIN_ARGS) == BUILTIN_FUNCTIONS


@pytest.mark.parametrize("name", sorted(BUILTIN_FUNCTIONS))
def test_every_builtin_is_passed_and_the_store_reads_the_same(store, name):
    """Each built-in, in upper and lower case, with "(" right after its name, after spaces and after a comment
    ended by \\r: the guard accepts it, and pyoxigraph parses (and answers) the guard's text exactly as the
    caller's. The old guard's re-joined tokens broke `CONCAT (` and `COALESCE (` on Oxigraph."""
    parsed = 0
    for spelling in (name, name.lower()):
        for between in ("", " ", "\t#c\r"):
            query = builtin_query(name, spelling, between)
            status, text = verdict(query)
            assert status == "ok", (query, text)
            before, after = run(store, query), run(store, text)
            assert before[0] == after[0], (query, text, before, after)
            if name not in RANDOM:
                assert before == after, (query, text)
            parsed += before[0] == "ok"
    assert parsed, f"pyoxigraph parses no form of {name}: the example is wrong"


@pytest.mark.parametrize("query", [
    'SELECT (CONCAT("a","b") AS ?x) WHERE { }',
    "SELECT (COALESCE(?n, 1) AS ?x) WHERE { }",
    "SELECT (BNODE() AS ?x) WHERE { }",
    "SELECT ?x WHERE { } ORDER BY DESC(?x)",
])
def test_the_issues_queries_answer_from_the_guards_text(store, query):
    status, text = verdict(query)
    assert status == "ok" and text == query + " LIMIT 51"
    assert run(store, text)[0] == "ok"


# -- what is refused, where ---------------------------------------------------------------------------
@pytest.mark.parametrize("query", [
    'SELECT (bif:http_get("http://127.0.0.1:9/x") AS ?x) WHERE { }',
    'SELECT bif:http_get("http://127.0.0.1:9/x") WHERE { }',  # Virtuoso's projection without AS
    'SELECT (<bif:http_get>("u") AS ?x) WHERE { }',
    'SELECT (<BIF:http_get>("u") AS ?x) WHERE { }',
    'SELECT (BIF:http_get("u") AS ?x) WHERE { }',
    'SELECT (Bif:http_get("u") AS ?x) WHERE { }',
    'PREFIX x: <bif:> SELECT (x:http_get("u") AS ?x) WHERE { }',
    'PREFIX x: <b\\u0069f:> SELECT (x:http_get("u") AS ?x) WHERE { }',
    'SELECT (<\\u0062if:http_get>("u") AS ?x) WHERE { }',
    'SELECT (sql:exec("u") AS ?x) WHERE { }',
    'SELECT * WHERE { ?s ?p ?o . ?o bif:contains "x" }',  # bif: names are refused wherever they stand
    'SELECT * WHERE { ?s ?p ?o FILTER(?o = <SQL:x>) }',
    'SELECT (<java:org.example.F>(1) AS ?x) WHERE { }',
])
def test_vendor_names_are_refused_anywhere(query):
    status, message = verdict(query)
    assert status == "refused" and "bif:, sql: and java:" in message, message


@pytest.mark.parametrize("query", [
    'SELECT (<http://www.openlinksw.com/schemas/bif#http_get>("u") AS ?x) WHERE { }',
    'PREFIX afn: <http://jena.apache.org/ARQ/function#> SELECT (afn:now() AS ?x) WHERE { }',
    'PREFIX geof: <http://www.opengis.net/def/function/geosparql/> SELECT ?x WHERE { ?x ?p ?o FILTER(geof:distance(?o, ?o) < 1) }',
    "SELECT ?x WHERE { ?x ?p ?o FILTER <http://ex/f>(?o) }",
    "SELECT ?x WHERE { ?x ?p ?o FILTER(!<http://ex/f>(?o)) }",
    "SELECT ?x WHERE { ?x ?p ?o BIND(<http://ex/f>(?o) AS ?y) }",
    "SELECT ?x WHERE { ?x ?p ?o } ORDER BY <http://ex/f>(?o)",
    "SELECT ?x WHERE { ?x ?p ?o } ORDER BY ?x <http://ex/f>(?o)",
    "SELECT ?x WHERE { ?x ?p ?o } GROUP BY ?x <http://ex/f>(?x)",
    "SELECT ?x WHERE { ?x ?p ?o } GROUP BY ?x HAVING (<http://ex/f>(?x))",
    "SELECT ?x WHERE { { SELECT ?x (<http://ex/f>(?x) AS ?y) WHERE { ?x ?p ?o } } }",
    "SELECT ?x WHERE { { SELECT ?x WHERE { ?x ?p ?o } ORDER BY ?x <http://ex/f>(?x) } }",
    "SELECT ?x WHERE { ?x ?p ?o FILTER NOT EXISTS { ?x ?q ?r FILTER(<http://ex/f>(?r)) } }",
    "SELECT (COUNT(DISTINCT <http://ex/f>(?x)) AS ?n) WHERE { ?x ?p ?o }",
    "SELECT (<http://ex/agg>(DISTINCT ?x) AS ?n) WHERE { ?x ?p ?o }",  # a custom aggregate
    "SELECT ?x WHERE { VALUES ?x { <http://ex/f>(1) } }",
    "PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> SELECT (xsd:http_get(1) AS ?x) WHERE { }",
    "SELECT (nope:f(1) AS ?x) WHERE { }",
    'SELECT (http_get("u") AS ?x) WHERE { }',
    "DEFINE input:grab-all 'yes' SELECT * WHERE { ?s ?p ?o }",
    "SELECT * WHERE { ?s ?p ?o } OPTION (QUIETCAST)",
])
def test_extension_calls_and_vendor_words_are_refused_in_one_line(query):
    status, message = verdict(query)
    assert status == "refused", message
    assert ("is refused" in message and "built-in functions" in message) or "no keyword" in message \
        or "undeclared prefix" in message or "expected SELECT" in message, message


@pytest.mark.parametrize("query", [
    "PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> SELECT (xsd:integer(\"1\") AS ?x) WHERE { }",
    'SELECT (xsd:dateTime("2000-01-01T00:00:00") AS ?x) WHERE { }',  # xsd: as the stores predeclare it
    f'SELECT (<{XSD}d\\u0061te>("2000-01-01") AS ?x) WHERE {{ }}',
    "SELECT * WHERE { <http://ex/s> (<http://ex/p>|<http://ex/q>)* ?o }",  # a path group after a subject IRI
    "SELECT * WHERE { ?s <http://ex/p> (1 2) }",  # a collection after a predicate
    "SELECT * WHERE { ?s <http://ex/p> ?o ; <http://ex/q> (1 (2)) . [] <http://ex/r> (?a) }",
    "SELECT * WHERE { ?s <http://ex/p>/<http://ex/q> (1) FILTER(?s != <http://ex/x>) <http://ex/s> (<http://ex/p>) ?o }",
    "SELECT * WHERE { ?s ?p ?o FILTER EXISTS { <http://ex/s> (<http://ex/p>) ?o } }",
])
def test_casts_paths_and_collections_pass(query):
    assert verdict(query)[0] == "ok", verdict(query)


def test_the_dialects_own_functions():
    raw = "SELECT ?x WHERE { ?x ?p ?d FILTER(xsd:datetime(?d) <= xsd:datetime(\"2010\")) }"
    assert "xsd:datetime is refused" in verdict(raw, functions=WIKIDATA.functions)[1]
    assert verdict(raw, functions=FREEBASE.functions)[0] == "ok"
    assert WIKIDATA.functions == frozenset()


def test_function_calls_finds_the_calls_not_the_patterns():
    query = ("SELECT (STR(?x) AS ?s) WHERE { <http://ex/s> (<http://ex/p>) ?x ; <http://ex/q> (1) "
             "FILTER <http://ex/f>(?x) BIND(<http://ex/g>(1) AS ?y) } ORDER BY <http://ex/h>(?x)")
    calls = [t.text for t in function_calls([t for t in tokens(query) if t.kind not in ("WS", "COMMENT")])]
    assert calls == ["SELECT", "STR", "<http://ex/f>", "BIND", "<http://ex/g>", "<http://ex/h>"]  # words: all checked


# -- the differential test ----------------------------------------------------------------------------
CALLEES = [  # (callee as written, the PREFIX it needs, whether the guard may refuse it as a vendor name)
    (f"<{EX}f>", "", False), ("ex:f", f"PREFIX ex: <{EX}>", False), ("EX:f", f"PREFIX EX: <{EX}>", False),
    ("<http://ex/\\u0066>", "", False), ("<\\u0068ttp://ex/f>", "", False), ("ex:\\u0066", f"PREFIX ex: <{EX}>", False),
    ("bif:http_get", "", True), ("x:http_get", "PREFIX x: <bif:>", True), ("BIF:http_get", "PREFIX BIF: <bif:>", True),
    ("<bif:http_get>", "", True), ("<b\\u0069f:http_get>", "", True), ("q:exec", "PREFIX q: <sql:>", True),
    ("<http://www.openlinksw.com/schemas/bif#http_get>", "", False),
]
PLAIN = sorted(set(BUILTIN_ARGS) - RANDOM - AGGREGATES)
# between every two tokens: a space mostly, else other whitespace or a comment ended by \r, \n or \r\n
SEPARATORS = st.one_of(st.just(" "), st.just(" "), WHITESPACE, ENDED_COMMENT)


@st.composite
def expressions(draw, depth: int = 2) -> tuple[list[str], set[str], bool]:
    """(tokens of an expression, prefixes it needs, whether it calls an extension function)."""
    kind = draw(st.sampled_from(["leaf", "builtin", "extension"] if depth else ["leaf"]))
    if kind == "leaf":
        return [draw(st.sampled_from(["?x", '"a"', "1", f"<{EX}s>"]))], set(), False
    if kind == "builtin":
        name = draw(st.sampled_from(PLAIN))
        arity, prefixes, calls = len(BUILTIN_ARGS[name]), set(), False
        head = [draw(st.sampled_from([name, name.lower()])), "("]
    else:
        callee, prefix, _ = draw(st.sampled_from(CALLEES))
        arity, prefixes, calls = draw(st.integers(0, 2)), {prefix} - {""}, True
        head = [callee, "("]
    body: list[str] = []
    for k in range(arity):
        tokens_, needed, inner = draw(expressions(depth - 1))
        body += ([","] if k else []) + tokens_
        prefixes |= needed
        calls |= inner
    return head + body + [")"], prefixes, calls


PLACES = {  # where an expression stands: E is replaced by it
    "select": "SELECT ( E AS ?v ) WHERE { VALUES ?x { 1 } }",
    "filter": "SELECT ?x WHERE { VALUES ?x { 1 } FILTER ( E ) }",
    "filter-call": "SELECT ?x WHERE { VALUES ?x { 1 } FILTER E }",
    "bind": "SELECT ?x ?b WHERE { VALUES ?x { 1 } BIND ( E AS ?b ) }",
    "order": "SELECT ?x WHERE { VALUES ?x { 1 2 } } ORDER BY DESC ( E )",
    "group": "SELECT ?g WHERE { VALUES ?x { 1 2 } } GROUP BY ( E AS ?g )",
    "having": "SELECT ?x WHERE { VALUES ?x { 1 2 } } GROUP BY ?x HAVING ( E )",
    "sub": "SELECT ?v WHERE { { SELECT ( E AS ?v ) WHERE { VALUES ?x { 1 } } } }",
    "exists": "SELECT ?x WHERE { VALUES ?x { 1 } FILTER EXISTS { VALUES ?y { 1 } FILTER ( E ) } }",
}
DECOYS = {  # an IRI before "(" that is no call: C is replaced by the callee
    "path": "SELECT ?x WHERE { VALUES ?x { 1 } OPTIONAL { C ( <http://ex/p> | <http://ex/q> ) ?o } }",
    "collection": "SELECT ?x WHERE { VALUES ?x { 1 } OPTIONAL { ?s C ( 1 ?x ) } }",
}


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow])
@given(place=st.sampled_from(sorted(PLACES) + sorted(DECOYS)), expression=expressions(),
       callee=st.sampled_from(CALLEES), data=st.data())
def test_guard_refuses_every_call_the_store_makes_and_changes_nothing_else(store, place, expression, callee, data):
    calls = Calls()
    if place in PLACES:
        pieces, prefixes, extension = expression
        template, vendor = PLACES[place], False
        words = template.split(" ")
        at = words.index("E")
        words[at:at + 1] = pieces
    else:
        written, prefix, vendor = callee
        prefixes, extension = {prefix} - {""}, False
        words = [written if w == "C" else w for w in DECOYS[place].split(" ")]
    words = [*sorted(prefixes), *words]
    seps = data.draw(st.lists(SEPARATORS, min_size=len(words) - 1, max_size=len(words) - 1))
    query = words[0] + "".join(sep + word for sep, word in zip(seps, words[1:]))
    status, rows, called = calls.run(store, query)
    guarded, text = verdict(query)
    event(f"{place}: guard {guarded}, store {status}{', function called' if called else ''}")
    if called:  # the store ran an extension function: the guard refused the query
        assert guarded == "refused", (query, text)
    if guarded == "ok":  # the guard's text is read as the caller's, and calls nothing
        assert calls.run(store, text) == (status, rows, False), (query, text)
    elif not extension and not vendor:  # never a refusal of built-ins, casts, paths or collections
        assert status == "invalid", (query, text, status)
