"""kgfed's 1-hop templates answer the same over HTTP (an Oxigraph server) as on the embedded store.

For every entity of the CoDEx Wikidata fixture and of the CWQ Freebase fixture, the `KG` facade
runs relations (both directions), neighbours of every (entity, relation, direction) it found, labels,
exact-label search and batched label matching once through `HttpEndpoint` → `oxigraph serve-read-only`
and once through `EmbeddedEndpoint` (pyoxigraph in-process); the answers must be identical, edge
for edge and label for label. The Wikidata-only templates (sitelinks, Freebase ids) are compared too.
"""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kgfed.endpoints.client import HttpClient
from kgfed.endpoints.embedded import EmbeddedEndpoint
from kgfed.endpoints.http import HttpEndpoint
from kgfed.engine.kg import KG
from kgfed.sparql.dialects import FREEBASE, WIKIDATA, Dialect
from kgfed.sparql.errors import InvalidIdentifier
from tests.conftest_servers import shared_file

CASES = {
    "codex-wikidata": ("wikidata/codex_s.nt", "oxigraph_codex", WIKIDATA),
    "cwq-freebase": ("freebase/cwq_subgraph.nt", "oxigraph_freebase", FREEBASE),
}


def entities_of(path: Path, dialect: Dialect) -> list[str]:
    """Every entity id of the file the dialect accepts (subjects and IRI objects)."""
    import pyoxigraph as ox

    found = set()
    for triple in ox.parse(path=str(path), format=ox.RdfFormat.N_TRIPLES):
        for term in (triple.subject, triple.object):
            if isinstance(term, ox.NamedNode) and (short := dialect.short(term.value)):
                try:
                    found.add(dialect.check_entity(short))
                except InvalidIdentifier:
                    pass  # property ids (P31) and relation names are not entities
    return sorted(found)


async def answers(kg: KG, entities: list[str]) -> dict:
    """Everything the 1-hop templates return for `entities`, in a comparable (sorted) form."""
    rels = await kg.relations_many(entities)
    triples = sorted({(r.entity, r.relation, r.direction) for rs in rels.values() for r in rs if _valid(kg.dialect, r.relation)})
    edges = await kg.neighbors_many(triples)
    labels = await kg.labels(entities)
    names = sorted({label.label for label in labels.values() if label.label})[::7][:150]
    search = {name: sorted(map(repr, await kg.search(name, limit=50))) for name in names}
    matches = await kg.match_labels(names)
    out = {
        "relations": {e: sorted(map(repr, rs)) for e, rs in rels.items()},
        "neighbors": {k: sorted(map(repr, v)) for k, v in edges.items()},
        # aliases come in no defined order (SPARQL rows are unordered)
        "labels": {k: (v.label, v.description, sorted(v.aliases)) for k, v in labels.items()},
        "search": search,
        "match_labels": {t: sorted(map(repr, hits)) for t, hits in matches.items()},
    }
    if kg.dialect is WIKIDATA:
        for name, query in (("sitelinks", WIKIDATA.sitelinks(entities)), ("freebase_ids", WIKIDATA.freebase_ids(entities))):
            result = await kg.select(query)
            out[name] = sorted(tuple(sorted((v, t.value) for v, t in row.items())) for row in result.rows)
    return out


def _valid(dialect: Dialect, relation: str) -> bool:
    try:
        dialect.check_relation(relation)
        return True
    except InvalidIdentifier:
        return False  # see tests/test_parity.py::test_uppercase_relation_ids_are_accepted


@pytest.mark.parametrize("case", list(CASES))
def test_http_oxigraph_answers_like_embedded(request, case):
    relative, server_fixture, dialect = CASES[case]
    path = shared_file(relative)
    server = request.getfixturevalue(server_fixture)
    entities = entities_of(path, dialect)
    assert len(entities) > 1000

    async def run():
        async with HttpClient(per_host=8) as client:
            remote = KG(HttpEndpoint(server.url, client), dialect, cache=None, batch_size=200)
            local = KG(EmbeddedEndpoint([path]), dialect, cache=None, batch_size=200)
            got = await asyncio.gather(answers(remote, entities), answers(local, entities))
            return got, remote.stats, client.stats

    (over_http, embedded), stats, http_stats = asyncio.run(run())
    assert stats["sent"] > 20 and http_stats  # really went over HTTP
    for part in embedded:
        assert over_http[part] == embedded[part], part
    # real content, not two empty answers
    assert sum(map(len, embedded["relations"].values())) > len(entities)
    assert sum(map(len, embedded["neighbors"].values())) > 10_000
    assert sum(1 for v in embedded["labels"].values() if v[0]) > 500
    assert sum(map(len, embedded["search"].values())) >= len(embedded["search"]) > 50
    if dialect is WIKIDATA:
        assert len(embedded["sitelinks"]) > 500 and len(embedded["freebase_ids"]) > 500
