"""The hypergraph view on real data: Freebase CVTs of the CWQ fixture (marriage, education) with all their
role entities, Wikidata statements with qualifiers from the bundled demo KG, growth, synonym hyperedges."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from kgfed.engine.federation.align import Aligner
from kgfed.engine.federation.hypergraph import Hyperedge, Hypergraph, add_synonyms, grow, hypergraph_of
from kgfed.engine.kg import KG
from kgfed.engine.federation.subgraph import expand

from .conftest import CODEX_NT, CWQ_NT, need

DEMO_WD = Path(__file__).resolve().parents[1] / "engine" / "data" / "demo_wikidata.nt"
_FB = re.compile(r"<http://rdf\.freebase\.com/ns/([^>]+)>")


def cvt_entities(cvt: str) -> set[str]:
    """Every named entity joined to a CVT by any triple of the fixture (read from the file, not the code)."""
    lines = [line for line in need(CWQ_NT).read_text().splitlines(keepends=True) if f"ns/{cvt}>" in line and "type.object" not in line]
    ends = {m for line in lines for m in _FB.findall(line)[::2] if m != cvt}  # subject and object ids
    named = {line.split()[0][len("<http://rdf.freebase.com/ns/"):-1] for line in need(CWQ_NT).read_text().splitlines() if "type.object.name" in line}
    return ends & named


async def cwq_hypergraph(*topics: str) -> tuple[Hypergraph, KG]:
    kg = KG.open(f"file:{need(CWQ_NT)}", dialect="freebase", name="freebase", cache=False)
    kgs = {"freebase": kg}
    merged = await expand({"freebase": list(topics)}, kgs, hops=1, width=None, aligner=Aligner(kgs, methods=(), cache=False))
    return await hypergraph_of(merged, kgs), kg


def members(hg: Hypergraph, edge: Hyperedge) -> set[str]:
    return {hg.id_in(n, "freebase") for n in edge.nodes}


async def test_marriage_cvt_is_one_hyperedge_over_spouses_and_union_type():
    hg, kg = await cwq_hypergraph("m.01lwx")  # Charles Darwin
    async with kg:
        edge = next(e for e in hg.edges if e.id == "m.0hybz8y")
    assert edge.kind == "cvt" and edge.relation == "people.marriage"
    assert members(hg, edge) == cvt_entities("m.0hybz8y") == {"m.01lwx", "m.02z3h4", "m.04ztj"}
    assert edge.role(hg.index("freebase", "m.02z3h4")) == "spouse"
    assert edge.role(hg.index("freebase", "m.04ztj")) == "type of union"
    assert edge.name.startswith("marriage: ") and "spouse Emma Darwin" in edge.name and "type of union Marriage" in edge.name


async def test_education_and_ceremony_cvts_keep_every_role_entity():
    hg, kg = await cwq_hypergraph("m.051cc", "m.01pctb")
    async with kg:
        education = next(e for e in hg.edges if e.id == "m.02wp75f")
        marriage = next(e for e in hg.edges if e.id == "m.02kkmwz")
    assert len(members(hg, education)) == 3 and members(hg, education) == cvt_entities("m.02wp75f")
    assert {education.role(n) for n in education.nodes} == {"student", "institution", "degree"}
    assert members(hg, marriage) == cvt_entities("m.02kkmwz") and len(members(hg, marriage)) == 4
    assert "location of ceremony" in {marriage.role(n) for n in marriage.nodes}
    # no CVT node is an entity of the view, and every other fact is a hyperedge of two
    assert not any(n.ids.get("freebase", "").startswith("m.cvt_") for n in hg.nodes)
    assert hg.index("freebase", "m.02wp75f") is None
    assert all(len(e.nodes) == 2 for e in hg.edges if e.kind == "binary")


async def test_statement_with_qualifiers_becomes_one_hyperedge():
    async with KG.open(f"file:{DEMO_WD}", dialect="wikidata", name="wikidata", cache=False) as kg:
        kgs = {"wikidata": kg}
        merged = await expand({"wikidata": ["Q42"]}, kgs, hops=1, width=None, aligner=Aligner(kgs, methods=(), cache=False))
        hg = await hypergraph_of(merged, kgs)
    spouse = next(e for e in hg.edges if e.id == "Q42-AD60B977-EE78-5F09-8758-60C4EE82715C")
    assert spouse.kind == "statement" and spouse.relation == "P26"
    assert members_of(hg, spouse) == {"Q42", "Q14623681"}
    assert dict(spouse.attributes) == {"start time": "1991-11-25", "end time": "2001-05-11"}  # the demo file's pq: values
    assert "Jane Belson" in spouse.name and "start time 1991-11-25" in spouse.name
    educated = next(e for e in hg.edges if e.id == "Q42-37FA0816-6F61-5164-9FF7-F6EE6D451B53")
    assert dict(educated.attributes) == {"start time": "1971-01-01", "end time": "1974-01-01"}
    # Q42's P26/P69 claims became the statements; Jane Belson's own P26 claim (no qualifiers) stays binary
    claims = {(e.relation, hg.id_in(e.members[0][1], "wikidata"), hg.id_in(e.members[1][1], "wikidata"))
              for e in hg.edges if e.kind == "binary"}
    assert ("P26", "Q42", "Q14623681") not in claims and ("P69", "Q42", "Q691283") not in claims
    assert ("P26", "Q14623681", "Q42") in claims and ("P19", "Q42", "Q350") in claims


def members_of(hg: Hypergraph, edge: Hyperedge) -> set[str]:
    return {hg.id_in(n, "wikidata") for n in edge.nodes}


async def test_no_statement_queries_on_a_store_without_qualifiers():
    async with KG.open(f"file:{need(CODEX_NT)}", dialect="wikidata", cache=False) as kg:
        assert await kg.has_qualifiers() is False
        before = kg.stats["queries"]
        assert await kg.has_qualifiers() is False  # the probe runs once per KG
        assert kg.stats["queries"] == before


async def test_grow_adds_a_hop_once_and_neighbours_share_entities():
    hg, kg = await cwq_hypergraph("m.01lwx")
    async with kg:
        n_edges = len(hg.edges)
        emma = hg.index("freebase", "m.04ztj")  # "Marriage": the union type of many marriages
        await grow(hg, {"freebase": kg}, [emma])
        grown = len(hg.edges)
        await grow(hg, {"freebase": kg}, [emma])  # already expanded: nothing asked, nothing added
    assert grown > n_edges and len(hg.edges) == grown
    marriage = next(i for i, e in enumerate(hg.edges) if e.id == "m.0hybz8y")
    for other in hg.neighbours(marriage):
        assert hg.overlap(marriage, other)
    assert not hg.nodes[emma].topic and hg.nodes[hg.index("freebase", "m.01lwx")].topic


@pytest.mark.embeddings
async def test_synonym_hyperedges_join_near_same_labels_only(tmp_path):
    from kgfed.engine.toolbox.embeddings import Embedder

    embedder = Embedder(tmp_path / "emb")
    hg = Hypergraph({"a": "wikidata", "b": "freebase"})
    usa = hg.add_node({"a": "Q30"}, "United States of America")
    us = hg.add_node({"b": "m.09c7w0"}, "United States of America ")
    canada = hg.add_node({"a": "Q16"}, "Canada")
    added = await add_synonyms(hg, threshold=0.9, embedder=embedder)
    assert len(added) == 1
    edge = hg.edges[added[0]]
    assert edge.kind == "synonym" and edge.nodes == {usa, us} and canada not in edge.nodes
    refused = await add_synonyms(hg, threshold=0.9, embedder=embedder, confirm=lambda comp: _none(comp))
    assert refused == []


async def _none(component):
    return []


async def test_symbol_cvt_with_a_capitalised_role_is_one_hyperedge():
    # `location.location_symbol_relationship.Kind_of_symbol` is a real relation id with a capital
    hg, kg = await cwq_hypergraph("m.03gh4")  # Hawaii
    async with kg:
        symbol = next(e for e in hg.edges if e.id == "m.0hz9k44")
    assert members(hg, symbol) == cvt_entities("m.0hz9k44") == {"m.03gh4", "m.03dkj_", "m.04627gn"}
    assert symbol.role(hg.index("freebase", "m.04627gn")) == "Kind of symbol"


async def test_a_seed_its_kg_refuses_costs_only_itself():
    async with KG.open(f"file:{need(CWQ_NT)}", dialect="freebase", name="freebase", cache=False) as kg:
        hg = Hypergraph()
        wrong = hg.add_node({"freebase": "Q42"}, "Douglas Adams")  # a Wikidata id filed under Freebase
        darwin = hg.add_node({"freebase": "m.01lwx"}, "Charles Darwin", topic=True)
        await grow(hg, {"freebase": kg}, [wrong, darwin])
    assert hg.skipped == [("freebase", "Q42")]
    assert any(e.id == "m.0hybz8y" for e in hg.edges)  # Darwin's marriage is still there
