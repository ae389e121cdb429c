"""The KG facade on the embedded store over the shared Freebase (CWQ) and Wikidata (CoDEx) fixtures."""
from __future__ import annotations

import json
import random
import re
from collections import defaultdict

import pytest

from kgfed.cache.options import CacheOptions
from kgfed.engine.kg import KG
from kgfed.sparql.dialects import NO_FILTER
from kgfed.sparql.errors import InvalidIdentifier

from .conftest import CODEX_NT, CWQ_NT, CWQ_QUESTIONS, need

NS = "http://rdf.freebase.com/ns/"
WD = "http://www.wikidata.org/entity/"
_TRIPLE = re.compile(r"^\s*(\S+)\s+ns:(\S+)\s+(\S+)\s*\.?\s*$")


def topic_relations_of_gold(question: dict) -> list[tuple[str, str, str]]:
    """(topic, relation, direction) of each gold triple pattern that touches a topic entity, in order."""
    topics = set(question["topic_entity"])
    found = []
    for line in question["sparql"].splitlines():
        m = _TRIPLE.match(line)
        if not m:
            continue
        s, rel, o = m.groups()
        if s.startswith("ns:") and s[3:] in topics:
            found.append((s[3:], rel, "out"))
        elif o.startswith("ns:") and o[3:] in topics:
            found.append((o[3:], rel, "in"))
    return found


@pytest.fixture
async def cwq_kg():
    async with KG.open(f"file:{need(CWQ_NT)}", relation_filter=NO_FILTER) as kg:
        yield kg


@pytest.fixture
async def codex_kg():
    async with KG.open(f"file:{need(CODEX_NT)}") as kg:
        yield kg


async def test_topic_relations_contain_the_gold_first_relation(cwq_kg):
    questions = [json.loads(line) for line in need(CWQ_QUESTIONS).read_text().splitlines()]
    # The first topic pattern must be there; a UNION query was kept for the branch that answers,
    # so there any one of its topic patterns will do.
    probes = [(q, found) for q in questions if (found := topic_relations_of_gold(q))]
    assert len(probes) > 450  # nearly every gold query starts at a topic entity
    found = await cwq_kg.relations_many(sorted({t for _, pats in probes for t, _, _ in pats}))
    missing = []
    for question, patterns in probes:
        candidates = patterns if "UNION" in question["sparql"] else patterns[:1]
        if not any(rel in {r.relation.split("|")[0] for r in found[t] if r.direction == d} for t, rel, d in candidates):
            missing.append((question["id"], candidates[0]))
    assert not missing, missing[:5]
    # batching: a beam of ~500 topics took a handful of queries, not one per entity
    assert cwq_kg.stats["sent"] <= 2 * (len(found) // cwq_kg.batch_size + 1)


def _direct_edges(store, subject_iris):
    """(s, p, o) for s in the sample, straight from pyoxigraph."""
    out = defaultdict(set)
    for s in subject_iris:
        for quad in store.quads_for_pattern(__import__("pyoxigraph").NamedNode(s), None, None):
            out[s].add((quad.predicate.value, quad.object.value))
    return out


async def test_neighbors_and_labels_agree_with_direct_queries_on_hundreds_of_entities(cwq_store):
    async with KG.open(f"file:{need(CWQ_NT)}", relation_filter=NO_FILTER, expand_cvt=False) as kg:
        subjects = sorted({q.subject.value for q in cwq_store.quads_for_pattern(None, None, None)
                           if q.subject.value.startswith(NS)})
        sample = random.Random(7).sample(subjects, 300)
        direct = _direct_edges(cwq_store, sample)
        rels = await kg.relations_many([s[len(NS):] for s in sample], "out")
        triples = [(e, r.relation, "out") for e, rs in rels.items() for r in rs]
        edges = await kg.neighbors_many(triples)
        for s in sample:
            mine = {(NS + e.relation, (NS + e.object) if not e.literal else e.object)
                    for (ent, _, _), es in edges.items() if ent == s[len(NS):] for e in es}
            assert mine == direct[s], s
        names = await kg.labels([s[len(NS):] for s in sample])
        for s in sample:
            want = {o for p, o in direct[s] if p == NS + "type.object.name"}
            got = names[s[len(NS):]].label
            assert (got in want) if want else got is None, s


async def test_incoming_neighbors_agree_with_direct_queries(cwq_store):
    import pyoxigraph as ox

    async with KG.open(f"file:{need(CWQ_NT)}", relation_filter=NO_FILTER, expand_cvt=False) as kg:
        objects = sorted({q.object.value for q in cwq_store.quads_for_pattern(None, None, None)
                          if isinstance(q.object, ox.NamedNode)})
        sample = random.Random(11).sample(objects, 200)
        rels = await kg.relations_many([o[len(NS):] for o in sample], "in")
        edges = await kg.neighbors_many([(e, r.relation, "in") for e, rs in rels.items() for r in rs])
        for o in sample:
            direct = {(q.subject.value, q.predicate.value) for q in cwq_store.quads_for_pattern(None, None, ox.NamedNode(o))}
            mine = {(NS + e.subject, NS + e.relation) for (ent, _, _), es in edges.items() if ent == o[len(NS):] for e in es}
            assert mine == direct, o


async def test_cvt_is_crossed_transparently(cwq_kg):
    # Justin Bieber's places_lived goes through a nameless CVT node to a named place.
    rels = {r.relation for r in await cwq_kg.relations("m.06w2sn5", "out")}
    assert "people.person.places_lived|people.place_lived.location" in rels
    assert "people.person.places_lived" not in rels  # the bare CVT hop is not offered
    edges = await cwq_kg.neighbors("m.06w2sn5", "people.person.places_lived|people.place_lived.location")
    assert {(e.entity, e.label) for e in edges} >= {("m.0d060g", "Canada")}
    assert all(e.via and e.via[0].startswith("m.cvt_") for e in edges)


async def test_tog_relation_filter_drops_bookkeeping(cwq_store):
    async with KG.open(f"file:{need(CWQ_NT)}") as kg:
        everything = KG(kg.endpoint.inner, kg.dialect, relation_filter=NO_FILTER)
        kept = {r.relation for r in await kg.relations("m.0146np")}
        allr = {r.relation for r in await everything.relations("m.0146np")}
        assert "location.location.containedby" in kept
        dropped = allr - kept
        assert all(r.startswith(("common.", "type.", "freebase.", "kg.")) for r in dropped)


async def test_wikidata_relations_neighbors_labels_on_codex(codex_kg, codex_store):
    rels = await codex_kg.relations("Q42", "out")
    by_id = {r.relation: r.label for r in rels}
    assert by_id["P27"] == "country of citizenship" and by_id["P19"] == "place of birth"
    direct = {(q.predicate.value.rsplit("/", 1)[1], q.object.value.removeprefix(WD))
              for q in codex_store.quads_for_pattern(__import__("pyoxigraph").NamedNode(WD + "Q42"), None, None)
              if q.predicate.value.startswith("http://www.wikidata.org/prop/direct/")}
    edges = await codex_kg.neighbors_many([("Q42", r, "out") for r in by_id])
    mine = {(e.relation, e.entity) for es in edges.values() for e in es}
    assert mine == direct
    assert ("P19", "Q350") in mine  # born in Cambridge
    labels = await codex_kg.labels(["Q42", "Q350", "P19"])
    assert labels["Q42"].label == "Douglas Adams" and labels["Q350"].label == "Cambridge"
    assert labels["P19"].label == "place of birth"
    assert "Douglas Noël Adams" in labels["Q42"].aliases
    hits = await codex_kg.search("Douglas Adams")
    assert [h.id for h in hits] == ["Q42"]
    edges = await codex_kg.neighbors("Q350", "P19", "in")
    assert "Q42" in {e.entity for e in edges} and all(e.direction == "in" and e.object == "Q350" for e in edges)


async def test_unknown_ids_and_bad_input(codex_kg, cwq_kg):
    labels = await codex_kg.labels(["Q999999999"])
    assert labels["Q999999999"].label is None  # unknown, not an error, not silently missing
    with pytest.raises(InvalidIdentifier, match="Wikidata id"):
        await codex_kg.relations("m.0282x")
    with pytest.raises(InvalidIdentifier, match="Freebase id"):
        await cwq_kg.relations("Q42")
    assert await codex_kg.relations("Q999999999") == []


async def test_cache_answers_repeat_queries(tmp_path):
    async with KG.open(f"file:{need(CODEX_NT)}", cache=CacheOptions(root=str(tmp_path / "c"))) as kg:
        first = await kg.relations("Q42")
        assert kg.stats["sent"] == 2 and kg.stats["cache_hits"] == 0
        assert await kg.relations("Q42") == first
        assert kg.stats["sent"] == 2 and kg.stats["cache_hits"] == 2
    async with KG.open(f"file:{need(CODEX_NT)}", cache=CacheOptions(root=str(tmp_path / "c"), offline=True)) as kg:
        assert await kg.relations("Q42") == first  # a new process: served from disk, offline
        from kgfed.sparql.errors import OfflineMiss

        with pytest.raises(OfflineMiss, match="--offline"):
            await kg.relations("Q350")


async def test_relations_list_only_what_neighbors_can_follow(tmp_path):
    """A dump may hold a relation id the dialect refuses (here with a hyphen): it is not listed, so a
    method following every listed relation never meets an InvalidIdentifier; the capitalised real id is."""
    ns = "http://rdf.freebase.com/ns/"
    data = tmp_path / "fb.nt"
    data.write_text(
        f'<{ns}m.0a> <{ns}location.location_symbol_relationship.Kind_of_symbol> <{ns}m.0b> .\n'
        f'<{ns}m.0a> <{ns}odd.relation-with.hyphen> <{ns}m.0c> .\n'
        f'<{ns}m.0b> <{ns}type.object.name> "B"@en .\n')
    async with KG.open(f"file:{data}", dialect="freebase", cache=False) as kg:
        rels = await kg.relations("m.0a", "out")
        assert [r.relation for r in rels] == ["location.location_symbol_relationship.Kind_of_symbol"]
        edges = await kg.neighbors_many([("m.0a", r.relation, r.direction) for r in rels])
        assert [e.entity for es in edges.values() for e in es] == ["m.0b"]


async def test_fresh_remembered_and_stored_answers_give_the_same_records(tmp_path):
    """The facade reads answers in their compact form: a fresh answer from the store, one remembered
    in memory and one read back from disk in a new process must give equal records, CVT-crossing
    relations, literals and labels included."""
    async def walk(kg: KG):
        rels = await kg.relations_many(["m.0a", "m.0b"])
        triples = [(e, r.relation, r.direction) for e, rs in rels.items() for r in rs]
        return rels, await kg.neighbors_many(triples), await kg.neighbors("m.0a", "p.q.r", "out", limit=1)

    ns = "http://rdf.freebase.com/ns/"
    data = tmp_path / "fb.nt"
    data.write_text(
        f'<{ns}m.0a> <{ns}p.q.r> <{ns}m.0b> .\n<{ns}m.0a> <{ns}p.q.r> <{ns}m.0c> .\n'
        f'<{ns}m.0a> <{ns}p.q.year> "1999" .\n<{ns}m.0a> <{ns}p.q.role> <{ns}m.cvt_1> .\n'
        f'<{ns}m.cvt_1> <{ns}p.role.who> <{ns}m.0c> .\n<{ns}m.0b> <{ns}type.object.name> "B"@en .\n'
        f'<{ns}m.0c> <{ns}type.object.name> "C"@en .\n<{ns}m.0c> <{ns}p.q.r> <{ns}m.0b> .\n')
    async with KG.open(f"file:{data}", dialect="freebase", cache=False) as kg:
        fresh = await walk(kg)
    async with KG.open(f"file:{data}", dialect="freebase", cache=CacheOptions(root=str(tmp_path / "c"))) as kg:
        first, remembered = await walk(kg), await walk(kg)
        assert kg.stats["cache_hits"] == kg.stats["sent"]
    async with KG.open(f"file:{data}", dialect="freebase", cache=CacheOptions(root=str(tmp_path / "c"), offline=True)) as kg:
        stored = await walk(kg)
    assert fresh == first == remembered == stored
    rels, edges, capped = stored
    assert {r.relation for r in rels["m.0a"]} >= {"p.q.r", "p.q.year", "p.q.role|p.role.who"}
    assert {(e.relation, e.entity, e.label, e.literal, e.via) for es in edges.values() for e in es} >= {
        ("p.q.year", "1999", "1999", True, ()), ("p.q.role|p.role.who", "m.0c", "C", False, ("m.cvt_1",)),
        ("p.q.r", "m.0b", "B", False, ())}
    assert len(capped) == 1
    # triples found valid once are not checked again; anything else still is, with the one-line error
    async with KG.open(f"file:{data}", dialect="freebase", cache=False) as kg:
        assert await kg.neighbors_many([("m.0a", "p.q.r", "out")]) == await kg.neighbors_many([["m.0a", "p.q.r", "out"]])
        for bad in [("m.0a", ["p.q.r"], "out"), ("m.0a", "p.q.r", "sideways"), ("m.0a", "not a relation", "out")]:
            with pytest.raises(InvalidIdentifier):
                await kg.neighbors_many([("m.0a", "p.q.r", "out"), bad])
