"""The bundled demo KGs (engine/data): valid RDF in the right shapes, small, answerable, reproducible."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyoxigraph as ox
import pytest

from kgfed.engine.kg import KG
from kgfed.sparql import terms

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "engine" / "data"
GENERATOR = ROOT / "examples" / "make_demo_kg.py"
WD_NT = DATA / "demo_wikidata.nt"
FB_NT = DATA / "demo_freebase.nt"
QUESTIONS = DATA / "demo_questions.jsonl"
EXTRACTS = DATA / "demo_extracts.jsonl"
GENERATED = [WD_NT, FB_NT, QUESTIONS, EXTRACTS]

NS = "http://rdf.freebase.com/ns/"
WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
P = "http://www.wikidata.org/prop/"
PS = "http://www.wikidata.org/prop/statement/"
PQ = "http://www.wikidata.org/prop/qualifier/"
WIKIBASE = "http://wikiba.se/ontology#"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
SKOS_ALT = "http://www.w3.org/2004/02/skos/core#altLabel"
SCHEMA = "http://schema.org/"
FB_NAME = NS + "type.object.name"


def load(path: Path) -> ox.Store:
    store = ox.Store()
    store.bulk_load(path=str(path), format=ox.RdfFormat.N_TRIPLES)
    return store


@pytest.fixture(scope="module")
def wd() -> ox.Store:
    return load(WD_NT)


@pytest.fixture(scope="module")
def fb() -> ox.Store:
    return load(FB_NT)


def rows(store: ox.Store, query: str) -> list:
    return list(store.query(query))


def values(store: ox.Store, query: str, var: str = "o") -> set[str]:
    return {r[var].value for r in store.query(query)}


def questions() -> list[dict]:
    return [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines()]


def question_ids() -> list[str]:
    return [q["id"] for q in questions()]


# ---- files ------------------------------------------------------------------------------------
def test_files_load_and_are_small(wd, fb):
    assert len(wd) > 500 and len(fb) > 300
    sizes = {p.name: p.stat().st_size for p in DATA.iterdir() if p.is_file()}
    assert sum(sizes.values()) < 1_000_000, sizes
    assert all(p.exists() for p in GENERATED)


def test_generator_reproduces_the_committed_files(tmp_path):
    subprocess.run([sys.executable, str(GENERATOR), "--out", str(tmp_path)], check=True, capture_output=True)
    for path in GENERATED:
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), f"{path.name} differs: re-run the generator"


# ---- Wikidata shape ------------------------------------------------------------------------------
def test_wikidata_items_have_labels_and_valid_ids(wd):
    subjects = values(wd, f"SELECT DISTINCT ?o WHERE {{ ?o ?p ?x FILTER(STRSTARTS(STR(?o), '{WD}')) }}")
    items = {s[len(WD):] for s in subjects if not s.startswith(WD + "statement/")}
    assert len(items) >= 40
    for short in items:
        terms.wikidata_id(short)
    unlabelled = values(wd, f"""SELECT ?o WHERE {{ ?o ?p ?x . FILTER(STRSTARTS(STR(?o), '{WD}Q'))
        FILTER NOT EXISTS {{ ?o <{RDFS_LABEL}> ?l }} }}""")
    assert not unlabelled
    # every item used as a claim object is described too
    dangling = values(wd, f"""SELECT ?o WHERE {{ ?s ?p ?o . FILTER(STRSTARTS(STR(?p), '{WDT}') && isIRI(?o))
        FILTER NOT EXISTS {{ ?o <{RDFS_LABEL}> ?l }} }}""")
    assert not dangling


def test_wikidata_properties_have_labels_and_direct_claims(wd):
    used = values(wd, f"SELECT DISTINCT ?o WHERE {{ ?s ?o ?x FILTER(STRSTARTS(STR(?o), '{WDT}')) }}")
    assert {WDT + p for p in ("P19", "P27", "P69", "P569", "P646")} <= used
    for direct in used:
        pid = direct[len(WDT):]
        found = rows(wd, f"""SELECT ?l WHERE {{ <{WD}{pid}> <{WIKIBASE}directClaim> <{direct}> ;
                                             <{RDFS_LABEL}> ?l }}""")
        assert found, f"property {pid} lacks rdfs:label or wikibase:directClaim"


def test_wikidata_has_qualified_statements(wd):
    found = rows(wd, f"""SELECT ?st ?pq ?v WHERE {{ <{WD}Q42> <{P}P69> ?st . ?st <{PS}P69> <{WD}Q691283> ;
                                               ?pq ?v . ?q <{WIKIBASE}qualifier> ?pq }}""")
    assert {r["pq"].value: r["v"].value for r in found} == {PQ + "P580": "1971-01-01T00:00:00Z",
                                                          PQ + "P582": "1974-01-01T00:00:00Z"}
    nobels = rows(wd, f"""SELECT ?prize ?when WHERE {{ <{WD}Q7186> <{P}P166> ?st . ?st <{PS}P166> ?prize ;
                                                     <{PQ}P585> ?when }}""")
    assert len(nobels) == 2
    # every qualifier predicate in use has its wikibase:qualifier link
    unlinked = values(wd, f"""SELECT DISTINCT ?o WHERE {{ ?st ?o ?v FILTER(STRSTARTS(STR(?o), '{PQ}'))
        FILTER NOT EXISTS {{ ?prop <{WIKIBASE}qualifier> ?o }} }}""")
    assert not unlinked
    # every full statement's value is also a truthy direct claim
    missing = rows(wd, f"""SELECT ?s ?p WHERE {{ ?s ?p ?st . ?st ?ps ?v .
        FILTER(STRSTARTS(STR(?p), '{P}P') && STRSTARTS(STR(?ps), '{PS}'))
        BIND(IRI(CONCAT('{WDT}', STRAFTER(STR(?p), '{P}'))) AS ?wdt)
        FILTER NOT EXISTS {{ ?s ?wdt ?v }} }}""")
    assert not missing


def test_wikidata_literals_and_sitelinks(wd):
    born = rows(wd, f"SELECT ?d WHERE {{ <{WD}Q42> <{WDT}P569> ?d }}")
    assert [(r["d"].value, r["d"].datatype.value) for r in born] == [
        ("1952-03-11T00:00:00Z", "http://www.w3.org/2001/XMLSchema#dateTime")]
    links = rows(wd, f"""SELECT ?a ?t WHERE {{ ?a <{SCHEMA}about> <{WD}Q42> ;
                                            <{SCHEMA}isPartOf> <https://en.wikipedia.org/> ; <{SCHEMA}name> ?t }}""")
    assert [(r["a"].value, r["t"].value) for r in links] == [
        ("https://en.wikipedia.org/wiki/Douglas_Adams", "Douglas Adams")]
    # apostrophes are percent-encoded as WDQS does
    article = "https://en.wikipedia.org/wiki/The_Hitchhiker%27s_Guide_to_the_Galaxy"
    assert bool(wd.query(f"ASK {{ <{article}> <{SCHEMA}about> <{WD}Q25169> }}"))


def test_every_freebase_id_points_into_the_freebase_kg(wd, fb):
    links = rows(wd, f"SELECT ?s ?fb WHERE {{ ?s <{WDT}P646> ?fb }}")
    assert len(links) >= 30
    names = {r["s"].value[len(NS):]: r["o"].value for r in fb.query(f"SELECT ?s ?o WHERE {{ ?s <{FB_NAME}> ?o }}")}
    labels: dict[str, set[str]] = {}
    for r in wd.query(f"SELECT ?s ?o WHERE {{ ?s <{RDFS_LABEL}>|<{SKOS_ALT}> ?o }}"):
        labels.setdefault(r["s"].value[len(WD):], set()).add(r["o"].value.lower())
    seen = set()
    for r in links:
        value = r["fb"].value
        assert value.startswith("/m/") and r["fb"].datatype.value.endswith("#string"), value
        mid = "m." + value[3:]
        assert mid in names, f"{r['s'].value} P646 {value}: no such mid in demo_freebase.nt"
        assert mid not in seen, f"two items share {mid}"
        seen.add(mid)
        qid = r["s"].value[len(WD):]
        assert names[mid].lower() in labels[qid], (qid, labels[qid], mid, names[mid])  # same entity, same name


# ---- Freebase shape ------------------------------------------------------------------------------
def test_freebase_ids_relations_and_cvts(fb):
    nodes = values(fb, "SELECT DISTINCT ?o WHERE { { ?o ?p ?x } UNION { ?x ?p ?o FILTER(isIRI(?o)) } }")
    predicates = values(fb, "SELECT DISTINCT ?o WHERE { ?s ?o ?x }")
    types = values(fb, f"SELECT DISTINCT ?o WHERE {{ ?s <{NS}type.object.type> ?o }}")
    for node in nodes - predicates - types:
        assert node.startswith(NS), node
        terms.freebase_mid(node[len(NS):])
    for predicate in predicates:
        assert predicate.startswith(NS), predicate
        terms.freebase_relation(predicate[len(NS):])
    # CVTs: nameless nodes reached by a person's n-ary relation, with real mediator relations behind them
    cvts = rows(fb, f"""SELECT ?s ?r ?cvt ?r2 ?o WHERE {{ ?s ?r ?cvt . ?cvt ?r2 ?o .
        FILTER NOT EXISTS {{ ?cvt <{FB_NAME}> ?n }} FILTER(?o != ?s) }}""")
    compound = {(r["r"].value[len(NS):], r["r2"].value[len(NS):]) for r in cvts}
    assert ("people.person.education", "education.education.institution") in compound
    assert ("people.person.spouse_s", "people.marriage.spouse") in compound
    # bookkeeping edges that ToG's relation filter drops
    for rel in ("type.object.type", "common.topic.alias", "common.topic.description"):
        assert NS + rel in predicates


# ---- questions -----------------------------------------------------------------------------------
def _path_query(ns: str, topic: str, path: list[str]) -> str:
    """SELECT ?o reached from topic along path; a part `r1|r2` crosses a CVT (?s r1 ?cvt . ?cvt r2 ?o)."""
    steps, current = [], f"<{topic}>"
    n = 0
    for part in path:
        for rel in part.split("|"):
            n += 1
            nxt = f"?v{n}"
            steps.append(f"{current} <{ns}{rel}> {nxt} .")
            current = nxt
    return f"SELECT DISTINCT ?o WHERE {{ {' '.join(steps)} BIND({current} AS ?o) }}"


def _paths(q: dict) -> tuple[list[str], list[str]]:
    fb_rel, wd_prop = q["freebase_relation"], q["wikidata_property"]
    if q["hops"] == 1:
        assert isinstance(fb_rel, str) and isinstance(wd_prop, str)
        return [fb_rel], [wd_prop]
    assert len(fb_rel) == len(wd_prop) == q["hops"]
    return fb_rel, wd_prop


def test_questions_shape():
    qs = questions()
    assert 10 <= len(qs) <= 30
    assert len({q["id"] for q in qs}) == len(qs)
    assert {q["hops"] for q in qs} == {1, 2}
    for q in qs:
        assert set(q) >= {"id", "question", "topic_mid", "topic_qid", "topic_name", "answer_mids", "answer_qids",
                          "answer_names", "freebase_relation", "wikidata_property", "hops"}
        assert len(q["answer_mids"]) == len(q["answer_qids"]) == len(q["answer_names"]) >= 1
        fb_path, wd_path = _paths(q)
        for rel in fb_path:
            for part in rel.split("|"):
                terms.freebase_relation(part)
        for prop in wd_path:
            terms.wikidata_id(prop, "P")


@pytest.mark.parametrize("qid", question_ids())
def test_question_is_answerable_on_both_kgs(qid, wd, fb):
    q = next(q for q in questions() if q["id"] == qid)
    fb_path, wd_path = _paths(q)
    got_fb = {v[len(NS):] for v in values(fb, _path_query(NS, NS + q["topic_mid"], fb_path))}
    got_wd = {v[len(WD):] for v in values(wd, _path_query(WDT, WD + q["topic_qid"], wd_path))}
    assert set(q["answer_mids"]) <= got_fb, (q["question"], got_fb)
    assert set(q["answer_qids"]) <= got_wd, (q["question"], got_wd)
    # topic and answers are the same entities in both KGs (P646) and carry the given names
    for qid_, mid, name in [(q["topic_qid"], q["topic_mid"], q["topic_name"]),
                            *zip(q["answer_qids"], q["answer_mids"], q["answer_names"])]:
        assert values(wd, f"SELECT ?o WHERE {{ <{WD}{qid_}> <{WDT}P646> ?o }}") == {"/" + mid.replace(".", "/", 1)}
        assert values(wd, f"SELECT ?o WHERE {{ <{WD}{qid_}> <{RDFS_LABEL}> ?o }}") == {name}
        assert values(fb, f"SELECT ?o WHERE {{ <{NS}{mid}> <{FB_NAME}> ?o }}") == {name}


async def test_kg_facade_crosses_a_cvt_on_the_demo_freebase_kg():
    async with KG.open(f"file:{FB_NT}", dialect="freebase", cache=False) as kg:
        edges = await kg.neighbors("m.0jcx", "people.person.education|education.education.institution")
        assert {e.entity for e in edges} == {"m.01dyk8", "m.01tpvt"}
        assert all(e.via for e in edges)
        relations = {r.relation for r in await kg.relations("m.0282x")}
        assert "people.person.place_of_birth" in relations
        assert not any(r.startswith(("type.", "common.")) for r in relations)


async def test_kg_facade_on_the_demo_wikidata_kg():
    async with KG.open(f"file:{WD_NT}", dialect="wikidata", cache=False) as kg:
        labels = await kg.labels(["Q42"])
        assert labels["Q42"].label == "Douglas Adams"
        hits = await kg.search("London")
        assert {h.id for h in hits} >= {"Q84", "Q92561"}


# ---- extracts ------------------------------------------------------------------------------------
def test_extracts_name_demo_entities(wd):
    records = [json.loads(line) for line in EXTRACTS.read_text(encoding="utf-8").splitlines()]
    assert len(records) >= 10
    for r in records:
        assert set(r) == {"qid", "title", "label", "text"}
        assert values(wd, f"SELECT ?o WHERE {{ <{WD}{r['qid']}> <{RDFS_LABEL}> ?o }}") == {r["label"]}
        titles = values(wd, f"SELECT ?o WHERE {{ ?a <{SCHEMA}about> <{WD}{r['qid']}> ; <{SCHEMA}name> ?o }}")
        assert titles == {r["title"]}
        sentences = r["text"].count(". ") + 1
        assert 2 <= sentences <= 6 and len(r["text"]) < 1000, r["qid"]
