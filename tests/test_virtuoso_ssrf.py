"""Issue 41's SSRF on a real Virtuoso: its `bif:` built-ins reach any URL, the guard lets none through.

A throwaway Virtuoso 7 (tests/conftest_servers.py) and a canary HTTP server on 127.0.0.1. Each attack is first
sent to Virtuoso *without* the guard, to show it is real here: the network ones reach the canary and read
its body back, the others answer (the ini file's path, the DBMS name, SQL run by `bif:exec`). Then the guard
refuses every one of them, and their variants under another prefix, in other cases and with escapes, in one
line naming the function; through `kgfed mcp`'s `sparql` tool too, with 0 canary hits; and the queries the
issue found broken (CONCAT, COALESCE, BNODE) answer through the same tool. (`bif:exec` runs SQL as the SPARQL
user: its `http_get` reaches the canary too; `sql:` calls the DB.DBA procedures granted to that user.)
"""
from __future__ import annotations

import urllib.error

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from kgfed.endpoints.servers import VirtuosoServer
from kgfed.sparql.dialects import FREEBASE
from kgfed.sparql.errors import InvalidQuery
from kgfed.sparql.guard import ServicePolicy, analyse

from .conftest_servers import _start, http_select
from .test_guard import Canary

# the attacks Virtuoso 7.2 runs as the default SPARQL user: (query, what it does without the guard)
REACHES = [  # each reaches the canary: "{url}" is replaced by its URL
    'SELECT (bif:http_get("{url}") AS ?x) WHERE { }',
    'SELECT bif:http_get("{url}") WHERE { }',  # Virtuoso projects an expression without AS
    'SELECT (bif:http_get ("{url}") AS ?x) WHERE { }',
    'SELECT (<bif:http_get>("{url}") AS ?x) WHERE { }',
    'PREFIX x: <bif:> SELECT (x:http_get("{url}") AS ?x) WHERE { }',
    'SELECT (bif:http_client("{url}") AS ?x) WHERE { }',
    'SELECT ?x WHERE { BIND(bif:http_get("{url}") AS ?x) }',
    'SELECT ?s WHERE { ?s ?p ?o FILTER(bif:http_get("{url}") != "") } LIMIT 1',
    'SELECT ?s WHERE { ?s ?p ?o } ORDER BY bif:http_get("{url}") LIMIT 1',
    'SELECT ?b WHERE { { SELECT (bif:http_get("{url}") AS ?b) WHERE { } } }',
    'SELECT (bif:HTTP_GET("{url}") AS ?x) WHERE { }',  # Virtuoso reads the function's name in any case
    """SELECT (bif:exec("select http_get('{url}')") AS ?x) WHERE { }""",
    'SELECT (<bif:HTTP_GET>("{url}") AS ?x) WHERE { }',
    'SELECT (IRI(bif:http_get("{url}")) AS ?x) WHERE { }',
    'SELECT ?s WHERE { ?s ?p ?o FILTER bif:http_get("{url}") } LIMIT 1',
    'SELECT ?s WHERE { ?s ?p ?o } GROUP BY ?s HAVING (bif:http_get("{url}") != "") LIMIT 1',
]
ANSWERS = [  # each answers with the server's own data
    "SELECT (bif:virtuoso_ini_path() AS ?x) WHERE { }",
    "SELECT (bif:sys_stat('st_dbms_name') AS ?x) WHERE { }",
    "SELECT (bif:exec('select 1') AS ?x) WHERE { }",
    "SELECT (<bif:virtuoso_ini_path>() AS ?x) WHERE { }",
    "SELECT (sql:RDF_DATATYPE_OF_OBJ(1) AS ?x) WHERE { }",  # sql: calls the DB.DBA procedures granted to SPARQL
    "SELECT (<sql:rdf_datatype_of_long>(1) AS ?x) WHERE { }",
]
OTHERS = [  # variants Virtuoso 7.2 itself rejects or cannot resolve, refused by the guard all the same
    'SELECT (BIF:http_get("{url}") AS ?x) WHERE { }',
    'SELECT (Bif:http_get("{url}") AS ?x) WHERE { }',
    'SELECT (<BIF:http_get>("{url}") AS ?x) WHERE { }',
    'SELECT (<b\\u0069f:http_get>("{url}") AS ?x) WHERE { }',
    'PREFIX bif: <http://www.w3.org/2001/XMLSchema#> SELECT (bif:http_get("{url}") AS ?x) WHERE { }',
    'SELECT (<http://www.openlinksw.com/schemas/bif#http_get>("{url}") AS ?x) WHERE { }',
    'SELECT (sql:http_get("{url}") AS ?x) WHERE { }',
    "SELECT (<sql:virtuoso_ini_path>() AS ?x) WHERE { }",
    "SELECT (sql:DB.DBA.HTTP_GET('{url}') AS ?x) WHERE { }",
    'SELECT ?s WHERE { ?s bif:http_get ("{url}") } LIMIT 1',
    'SELECT ?s WHERE { ?s ?p ?o . ?o bif:http_get "{url}" } LIMIT 1',
    'SELECT ?s WHERE { bif:http_get("{url}") ?p ?o } LIMIT 1',
    'SELECT (<bif%3Ahttp_get>("{url}") AS ?x) WHERE { }',
    'SELECT (bif:http\\_get("{url}") AS ?x) WHERE { }',
    'SELECT (<bif:http_get#>("{url}") AS ?x) WHERE { }',
    'SELECT (<DB.DBA.HTTP_GET>("{url}") AS ?x) WHERE { }',
    'SELECT (sql:HTTP_GET("{url}") AS ?x) WHERE { }',
    'SELECT ("x"^^bif:http_get AS ?x) WHERE { }',
]


@pytest.fixture(scope="module")
def virtuoso():
    server = _start(lambda: VirtuosoServer())
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def canary():
    server = Canary()
    yield server
    server.close()


def raw(virtuoso, query: str):
    """What Virtuoso does with `query` when nothing guards it: its rows, or its HTTP error code."""
    try:
        return http_select(virtuoso.url, query, timeout=30).rows
    except urllib.error.HTTPError as exc:
        return exc.code


def guard(query: str) -> str:
    with pytest.raises(InvalidQuery) as refused:
        analyse(query, ServicePolicy(), 100, functions=FREEBASE.functions)
    message = str(refused.value)
    assert "\n" not in message and "is refused" in message and ("SPARQL 1.1" in message), message
    return message


@pytest.mark.parametrize("attack", REACHES)
def test_without_the_guard_virtuoso_reaches_the_canary_and_the_guard_refuses(virtuoso, canary, attack):
    query = attack.replace("{url}", canary.url)
    rows = raw(virtuoso, query)
    assert canary.hits, (query, rows)  # the attack is real on this Virtuoso: the test can fail
    hits = len(canary.hits)
    message = guard(query)
    named = message.split(" is refused")[0]  # the function (or its prefix) as the query wrote it
    assert named.lower().startswith(("bif:http_get", "bif:http_client", "<bif:http_get>", "x: (<bif:>)", "bif:exec")), message
    assert len(canary.hits) == hits


@pytest.mark.parametrize("attack", ANSWERS)
def test_without_the_guard_virtuoso_answers_from_its_own_server_and_the_guard_refuses(virtuoso, attack):
    rows = raw(virtuoso, attack)
    assert isinstance(rows, list) and len(rows) == 1 and rows[0]["x"].value, rows
    message = guard(attack)
    assert attack.split("(", 2)[1].split()[0].strip("<>") in message, message


@pytest.mark.parametrize("attack", OTHERS)
def test_variants_in_other_cases_prefixes_and_escapes_are_refused(virtuoso, canary, attack):
    query = attack.replace("{url}", canary.url)
    raw(virtuoso, query)  # whatever Virtuoso 7.2 makes of it, it calls nobody
    assert not canary.hits
    guard(query)


def test_the_guards_text_answers_on_virtuoso_as_the_callers(virtuoso):
    """CONCAT and COALESCE (which the old guard's re-joined tokens broke on Oxigraph) answer on Virtuoso from
    the guard's text exactly as from the caller's; BNODE() Virtuoso 7.2 does not implement ("not implemented")."""
    for query, value in (('SELECT (CONCAT("a","b") AS ?x) WHERE { }', "ab"),
                         ("SELECT (COALESCE(?nothing, 7) AS ?x) WHERE { }", "7"),
                         ('SELECT (STRLEN(CONCAT ("a" , "bc")) AS ?x) WHERE { }', "3")):
        text = analyse(query, ServicePolicy(), 100).text
        assert text == query + " LIMIT 101"
        assert [r["x"].value for r in raw(virtuoso, text)] == [r["x"].value for r in raw(virtuoso, query)] == [value]


# -- through kgfed mcp's sparql tool -------------------------------------------------------------------
async def test_the_mcp_sparql_tool_refuses_every_attack_and_answers_the_issues_queries(virtuoso, canary):
    pytest.importorskip("mcp")
    from .test_mcp import call, refused, stdio

    async with stdio("--kg", "fb", "--endpoint", f"fb=freebase@{virtuoso.url}", "--no-cache") as client:
        for attack in REACHES + ANSWERS + OTHERS:
            message = await refused(client, "sparql", query=attack.replace("{url}", canary.url))
            assert "is refused" in message, message
        assert canary.hits == []
        for query, value in (('SELECT (CONCAT("a","b") AS ?x) WHERE { }', "ab"),
                             ("SELECT (COALESCE(?nothing, 7) AS ?x) WHERE { }", "7")):
            assert [r["x"]["value"] for r in (await call(client, "sparql", query=query))["rows"]] == [value]
        own = f"SELECT * WHERE {{ SERVICE <{virtuoso.url}> {{ ?s ?p ?o }} }}"
        assert "own endpoint" in await refused(client, "sparql", query=own)


async def test_the_mcp_sparql_tool_answers_concat_coalesce_and_bnode_on_oxigraph():
    """The issue's three queries through `kgfed mcp`'s sparql tool on a file store (pyoxigraph, whose parser
    refused the old guard's `CONCAT (`); Virtuoso 7.2 has no BNODE()."""
    pytest.importorskip("mcp")
    from .conftest import ROOT
    from .test_mcp import call, stdio

    demo = ROOT / "engine" / "data" / "demo_freebase.nt"
    async with stdio("--kg", "fb", "--endpoint", f"fb=freebase@file:{demo}", "--no-cache") as client:
        for query, value in (('SELECT (CONCAT("a","b") AS ?x) WHERE { }', "ab"),
                             ("SELECT (COALESCE(?nothing, 7) AS ?x) WHERE { }", "7")):
            assert [r["x"]["value"] for r in (await call(client, "sparql", query=query))["rows"]] == [value]
        rows = (await call(client, "sparql", query="SELECT (BNODE() AS ?x) WHERE { }"))["rows"]
        assert len(rows) == 1 and rows[0]["x"]["type"] == "bnode", rows


# -- the differential test on Virtuoso ------------------------------------------------------------------
SPELLINGS = [  # (callee, the PREFIX it needs)
    ("bif:http_get", ""), ("bif:HTTP_GET", ""), ("<bif:http_get>", ""), ("<bif:Http_Get>", ""),
    ("x:http_get", "PREFIX x: <bif:>"), ("BIF:http_get", ""), ("<b\\u0069f:http_get>", ""),
    ("<http://www.openlinksw.com/schemas/bif#http_get>", ""), ("sql:http_get", ""),
]
WRAPS = ["{call}", "STR({call})", 'CONCAT("a", {call})', "IF(true, {call}, 1)", "COALESCE({call}, 1)"]
SITES = {  # {E}: the expression; {C}: the callee alone (a triple pattern's IRI before "(")
    "select": "SELECT ({E} AS ?v) WHERE { VALUES ?x { 1 } }",
    "bare-select": "SELECT {E} WHERE { VALUES ?x { 1 } }",
    "filter": "SELECT ?x WHERE { VALUES ?x { 1 } FILTER ({E} != 'z') }",
    "filter-call": "SELECT ?x WHERE { VALUES ?x { 1 } FILTER {E} }",
    "bind": "SELECT ?b WHERE { VALUES ?x { 1 } BIND ({E} AS ?b) }",
    "order": "SELECT ?x WHERE { VALUES ?x { 1 2 } } ORDER BY {E}",
    "having": "SELECT ?x WHERE { VALUES ?x { 1 2 } } GROUP BY ?x HAVING ({E} != 'z')",
    "sub": "SELECT ?v WHERE { { SELECT ({E} AS ?v) WHERE { VALUES ?x { 1 } } } }",
    "exists": "SELECT ?x WHERE { VALUES ?x { 1 } FILTER EXISTS { VALUES ?y { 1 } FILTER ({E} != 'z') } }",
    "path": "SELECT ?x WHERE { VALUES ?x { 1 } OPTIONAL { {C} ({URL}) ?o } }",
    "collection": "SELECT ?x WHERE { VALUES ?x { 1 } OPTIONAL { ?s {C} ({URL}) } }",
}


@pytest.fixture(scope="module")
def module_canary():
    server = Canary()
    yield server
    server.close()


def virtuoso_answer(virtuoso, query: str):
    """(status, rows) of `query` on Virtuoso: rows as sorted reprs, or the HTTP error code."""
    rows = raw(virtuoso, query)
    return ("ok", sorted(repr(r) for r in rows)) if isinstance(rows, list) else ("error", rows)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(site=st.sampled_from(sorted(SITES)), spelling=st.sampled_from(SPELLINGS), wrap=st.sampled_from(WRAPS),
       seps=st.lists(st.sampled_from([" ", "\n", "\t", "\r\n", " #c\n", " #c\r", " #c\r\n"]), min_size=4, max_size=4))
def test_guard_refuses_every_query_that_reaches_the_canary_on_virtuoso(virtuoso, module_canary, site, spelling, wrap,
                                                                      seps):
    callee, prefix = spelling
    url = f"'{module_canary.url}'"
    call = f"{callee}{seps[0]}({seps[1]}{url}{seps[2]})"
    query = SITES[site].replace("{E}", wrap.format(call=call)).replace("{C}", callee).replace("{URL}", url)
    query = (prefix + seps[3] if prefix else "") + query
    before = len(module_canary.hits)
    status = virtuoso_answer(virtuoso, query)
    reached = len(module_canary.hits) > before
    try:
        text = analyse(query, ServicePolicy(), 100, functions=FREEBASE.functions).text
    except InvalidQuery as exc:
        verdict, text = "refused", str(exc)
    else:
        verdict = "ok"
    event(f"{site}: guard {verdict}, Virtuoso {status[0]}{', canary reached' if reached else ''}")
    if reached:
        assert verdict == "refused", (query, text)
    if verdict == "ok":  # only the decoys: Virtuoso reads the guard's text as the caller's and calls nobody
        before = len(module_canary.hits)
        assert virtuoso_answer(virtuoso, text) == status and len(module_canary.hits) == before, (query, text)
