"""Blocking twins: SyncKG and the SPARQLWrapper drop-in give what the async engine gives."""
from __future__ import annotations

import asyncio

from kgfed.engine.kg import KG
from kgfed.engine.kg.sync import JSON, SPARQLWrapper, SyncKG

from .conftest import CODEX_NT, CWQ_NT, need


def test_sync_kg_matches_async():
    spec = f"file:{need(CODEX_NT)}"

    async def reference():
        async with KG.open(spec) as kg:
            return await kg.relations("Q42"), await kg.neighbors("Q42", "P69")

    rels, edges = asyncio.run(reference())
    with SyncKG.open(spec) as kg:
        assert kg.relations("Q42") == rels
        assert kg.neighbors("Q42", "P69") == edges
        before = kg.stats["cache_hits"]
        kg.relations("Q42")  # both directions answered from the cache
        assert kg.stats["cache_hits"] == before + 2


def test_sparqlwrapper_drop_in_returns_the_json_tog_reads():
    sparql = SPARQLWrapper(f"file:{need(CWQ_NT)}")
    sparql.setQuery("SELECT ?tailEntity WHERE { <http://rdf.freebase.com/ns/m.0146np> "
                    "<http://rdf.freebase.com/ns/location.location.containedby> ?tailEntity . }")
    sparql.setReturnFormat(JSON)
    results = sparql.query().convert()
    assert [b["tailEntity"]["value"] for b in results["results"]["bindings"]] == ["http://rdf.freebase.com/ns/m.0345_"]


def test_sparqlwrapper_drop_in_on_a_file_answers_ask_and_raises_the_genuine_error():
    from SPARQLWrapper import XML
    from SPARQLWrapper.SPARQLExceptions import QueryBadFormed

    sparql = SPARQLWrapper(f"file:{need(CWQ_NT)}")
    sparql.setReturnFormat(JSON)
    sparql.setQuery("ASK { <http://rdf.freebase.com/ns/m.0146np> ?p ?o }")
    assert sparql.query().convert() == {"head": {}, "boolean": True}
    sparql.setQuery("SELECT ?o WHERE { <http://rdf.freebase.com/ns/m.0146np> "
                    "<http://rdf.freebase.com/ns/location.location.containedby> ?o }")
    sparql.setReturnFormat(XML)
    uris = [node.firstChild.data for node in sparql.query().convert().getElementsByTagName("uri")]
    assert uris == ["http://rdf.freebase.com/ns/m.0345_"]
    sparql.setQuery("SELECT ?o WHERE { ?o }")
    try:
        sparql.query()
    except QueryBadFormed as exc:
        assert "file:" in exc.hint and "\n" not in exc.hint and str(exc).startswith("QueryBadFormed: ")  # type: ignore[attr-defined]
        assert "\n\nResponse:\nb" in str(exc)  # the parser's words, where a server's would be (issue 42 item 12)
    else:
        raise AssertionError("a malformed query must raise QueryBadFormed")


def test_the_drop_in_imports_neither_aiohttp_nor_the_kg_facade():
    """PoG's import line pays for SPARQLWrapper and kgfed's HTTP client only (aiohttp alone took 0.4 s to import)."""
    import subprocess
    import sys

    script = ("import sys\nfrom kgfed.engine.kg.sync import SPARQLWrapper, JSON, XML\n"
              "print(sorted(m for m in ('aiohttp', 'kgfed.engine.kg.facade', 'pandas', 'pyoxigraph') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    from kgfed.engine.kg import KG as lazy  # the package still offers KG, imported on first use

    assert lazy is KG
