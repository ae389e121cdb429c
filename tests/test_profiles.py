"""Endpoint profiles and standard conformance of every template (what QLever, Virtuoso and WDQS parse)."""
from __future__ import annotations

import pytest
from rdflib.plugins.sparql import prepareQuery

from kgfed.endpoints.client import HttpClient
from kgfed.endpoints.embedded import EmbeddedEndpoint
from kgfed.endpoints.http import HttpEndpoint
from kgfed.endpoints.options import HttpOptions
from kgfed.endpoints.profiles import PROFILES, resolve_endpoint
from kgfed.sparql.dialects import FREEBASE, WIKIDATA, FreebaseDialect, WikidataDialect
from kgfed.sparql.errors import UnknownEndpoint

from .conftest import CODEX_NT, CWQ_NT, need

TEMPLATES = {
    "wd relations out": WIKIDATA.relations(["Q42", "Q5"], "out"),
    "wd relations in": WIKIDATA.relations(["Q42"], "in"),
    "wd neighbors": WIKIDATA.neighbors([("Q42", "P69"), ("Q5", "P31")], "in", limit=10),
    "wd labels": WIKIDATA.labels(["Q42", "P69"]),
    "wd qualifiers": WIKIDATA.qualifiers("Q42", "P69"),
    "wd sitelinks": WIKIDATA.sitelinks(["Q42"]),
    "wd p646": WIKIDATA.freebase_ids(["Q42"]),
    "wd by p646": WIKIDATA.by_freebase_ids(["m.0282x"]),
    "wd search exact": WIKIDATA.search("Douglas Adams", 5, "exact"),
    "wd search contains": WIKIDATA.search("adams", 5, "contains"),
    "wd search mwapi": WIKIDATA.search("Douglas Adams", 5, "mwapi"),
    "fb relations": FREEBASE.relations(["m.0282x"], "out"),
    "fb relations plain": FREEBASE.relations(["m.0282x"], "in", expand_cvt=False),
    "fb neighbors": FREEBASE.neighbors([("m.0282x", "people.person.nationality")], "out"),
    "fb neighbors cvt": FREEBASE.neighbors([("m.0282x", "people.person.education|education.education.institution")], "in"),
    "fb labels": FREEBASE.labels(["m.0282x"]),
    "fb search": FREEBASE.search("Douglas Adams"),
}


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_every_template_is_standard_sparql(name):
    prepareQuery(TEMPLATES[name])  # rdflib's SPARQL 1.1 grammar; raises on anything non-standard


@pytest.fixture
def client():
    """The caller's client (nothing is sent: these tests only resolve specs)."""
    return HttpClient.from_options(HttpOptions())


def test_profiles_resolve_to_the_public_endpoints(client):
    endpoint, dialect = resolve_endpoint("wikidata", client=client)
    assert endpoint.client is client
    assert isinstance(endpoint, HttpEndpoint) and endpoint.url == "https://query.wikidata.org/sparql"
    assert isinstance(dialect, WikidataDialect) and dialect.search_mode == "mwapi"
    endpoint, dialect = resolve_endpoint("qlever-wikidata", client=client)
    assert endpoint.url == PROFILES["qlever-wikidata"].url and dialect.search_mode == "exact"  # no mwapi on QLever
    assert "SERVICE" not in dialect.search("Douglas Adams")
    endpoint, dialect = resolve_endpoint("qlever-freebase", client=client)
    assert endpoint.url.endswith("/api/freebase") and isinstance(dialect, FreebaseDialect)
    assert "<http://rdf.freebase.com/ns/type.object.name>" in dialect.labels(["m.0282x"])


def test_wdqs_search_uses_the_mwapi_service(client):
    _, dialect = resolve_endpoint("wikidata", client=client)
    q = dialect.search("Douglas Adams")
    assert "EntitySearch" in q and '"Douglas Adams"' in q


def test_files_sniff_their_dialect_and_urls_need_one(client):
    _, d = resolve_endpoint(f"file:{need(CWQ_NT)}")
    assert d is FREEBASE
    endpoint, d = resolve_endpoint(f"file:{need(CODEX_NT)}")
    assert d is WIKIDATA and isinstance(endpoint, EmbeddedEndpoint)
    with pytest.raises(UnknownEndpoint, match="--dialect"):
        resolve_endpoint("http://127.0.0.1:8890/sparql")
    endpoint, d = resolve_endpoint("http://127.0.0.1:8890/sparql", dialect="freebase", client=client, default_graph="http://g")
    assert endpoint.name == "http://127.0.0.1:8890/sparql#graph=http://g"
    with pytest.raises(UnknownEndpoint, match="unknown endpoint"):
        resolve_endpoint("ftp://x")


def test_remote_specs_need_the_callers_client():
    """No lower layer builds a client of its own: a remote spec without one is refused, naming the fix."""
    for spec in ("wikidata", "https://qlever.dev/api/freebase", "http://127.0.0.1:8890/sparql"):
        with pytest.raises(TypeError, match="pass client="):
            resolve_endpoint(spec, dialect="freebase" if "127.0" in spec else None)
    endpoint, d = resolve_endpoint(f"file:{need(CWQ_NT)}")  # a file needs no client
    assert d is FREEBASE and isinstance(endpoint, EmbeddedEndpoint)
