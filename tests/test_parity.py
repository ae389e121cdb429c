"""Parity with ToG's Freebase access layer, minus its bugs: a differential test over every entity.

ToG (IDEA-FinAI/ToG) reaches Freebase through five SPARQL strings (quoted verbatim in bench/tog_pattern.py from
`ToG/freebase_func.py`), each filled with `%` for one entity or (entity, relation) and sent to Virtuoso
one at a time. Here the same strings are run for EVERY entity of both Freebase fixtures
(`freebase/cwq_subgraph.nt`, `federation/freebase.nt`), both directions, on three engines (a real
Virtuoso, an Oxigraph server, the embedded pyoxigraph store), and compared with what kgfed's Freebase
templates return through `KG` (`relations_many`, `neighbors_many`, `labels`) on the same engine.

To stay fast, ToG's strings are not filled 30,000 times: each `ns:%s` slot is bound by a `VALUES`
block instead of text substitution (`batched`), which is the same query for a whole beam. That this
changes nothing is itself tested: the verbatim `%`-filled strings give the same sets on a sample.

ToG's head-entity bug: `entity_search` in ToG/utils.py (commit d31dd39) fills
`sparql_head_entities_extract` (slots: relation, entity) as `% (entity, relation)`, so the query asks
for triples whose *predicate* is the entity: every incoming-edge hop returns nothing. A later
`ToG/freebase_func.py` (commit f756ccf) fills `% (relation, entity)`; PoG fixed it the same way. kgfed
matches the intended query; the buggy fill is shown to return nothing on real data.

CVTs: kgfed reports a relation into a nameless node as the compound `r1|r2` (one more hop). ToG sees
the same through two of its own hops (entity search, then relation search on the nameless node); the
test composes ToG's answers that way. ToG's relation filter (`abandon_rels`) is applied to both
sides, to every part of a compound.
"""
from __future__ import annotations

import asyncio
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

# ToG's five SPARQL strings and `abandon_rels`, verbatim from IDEA-FinAI/ToG ToG/freebase_func.py (one
# copy, shared with the benchmark), and the same filter as a kgfed RelationFilter.
from bench.tog_pattern import (TOG_FILTER, abandon_rels, sparql_head_entities_extract, sparql_head_relations,
                               sparql_id, sparql_tail_entities_extract, sparql_tail_relations)
from kgfed.endpoints.client import HttpClient
from kgfed.endpoints.embedded import EmbeddedEndpoint
from kgfed.endpoints.http import HttpEndpoint
from kgfed.engine.kg import KG
from kgfed.sparql.dialects import FREEBASE, NS
from kgfed.sparql.results import SelectResult
from kgfed.sparql.rewrite import to_standard_sparql
from kgfed.sparql.terms import FREEBASE_MID, FREEBASE_RELATION
from tests.conftest_servers import CWQ_GRAPH, FEDERATION_GRAPH, shared_file

# How ToG fills each template: the argument each `%s` slot receives, in slot order.
# e = the entity, r = the relation. HEAD_ENTITIES_BUGGY is ToG/utils.py's `% (entity, relation)`.
HEAD_RELATIONS, TAIL_RELATIONS = ("e",), ("e",)
TAIL_ENTITIES = ("e", "r")            # `sparql_tail_entities_extract % (entity, relation)`
HEAD_ENTITIES = ("r", "e")            # intended: `sparql_head_entities_extract % (relation, entity)`
HEAD_ENTITIES_BUGGY = ("e", "r")      # ToG/utils.py: `sparql_head_entities_extract % (entity, relation)`
ID_TO_NAME = ("e", "e")               # `sparql_id % (entity_id, entity_id)`

SLOT = "ns:%s"
DATASETS = {"cwq": ("freebase/cwq_subgraph.nt", CWQ_GRAPH, "oxigraph_freebase"),
            "federation": ("federation/freebase.nt", FEDERATION_GRAPH, "oxigraph_federation")}
ENGINES = ("virtuoso", "oxigraph", "embedded")
BATCH = 400


def filled(template: str, fill: Sequence[str], binding: dict[str, str]) -> str:
    """ToG's own way: `template % args`, one query per binding."""
    return template % tuple(binding[name] for name in fill)


def batched(template: str, fill: Sequence[str], bindings: Sequence[dict[str, str]]) -> str:
    """ToG's template with every `ns:%s` slot bound by VALUES instead of `%`: one query for a beam.

    Slot i becomes `?kgfed_<fill[i]>`; a `VALUES` block of the bindings opens the innermost group
    around each slot (so a FILTER inside a UNION branch sees it), and the slot variables are projected.
    """
    names = list(dict.fromkeys(fill))
    variables = " ".join(f"?kgfed_{n}" for n in names)
    rows = " ".join("(" + " ".join(f"<{NS}{b[n]}>" for n in names) + ")" for b in bindings)
    values = f"VALUES ({variables}) {{ {rows} }} "
    text, inserts, slot = template, [], 0
    while (at := text.find(SLOT)) >= 0:
        depth, open_at = 0, at
        while open_at > 0:  # innermost unclosed `{` before the slot
            open_at -= 1
            if text[open_at] == "}":
                depth += 1
            elif text[open_at] == "{":
                if depth == 0:
                    break
                depth -= 1
        inserts.append(open_at + 1)
        text = text[:at] + f"?kgfed_{fill[slot]}" + text[at + len(SLOT):]
        slot += 1
    assert slot == len(fill), "one fill name per %s slot"
    for position in sorted(set(inserts), reverse=True):
        text = text[:position] + values + text[position:]
    return re.sub(r"SELECT( DISTINCT)? ", lambda m: f"SELECT{m.group(1) or ''} {variables} ", text, count=1)


def expressible(relation: str) -> bool:
    """Whether kgfed's id check accepts the (possibly compound) relation id."""
    return all(FREEBASE_RELATION.match(part) for part in relation.split("|"))


def short(value: str) -> str:
    """ToG's `replace_relation_prefix` / `replace_entities_prefix`."""
    return value.replace(NS, "")


# ---- engines ---------------------------------------------------------------------------------------
@dataclass
class Engine:
    """One engine holding one dataset: ToG's raw queries go to `endpoint`, kgfed's through `KG`s on it."""

    name: str
    endpoint: object
    standard: bool  # needs the Virtuoso→standard rewrite (ToG's strings use dotted `ns:` names)

    async def tog(self, query: str) -> SelectResult:
        return await self.endpoint.select(to_standard_sparql(query) if self.standard else query)

    def kg(self, *, expand_cvt: bool) -> KG:
        return KG(self.endpoint, FREEBASE, cache=None, batch_size=BATCH, expand_cvt=expand_cvt, relation_filter=TOG_FILTER)


@dataclass
class Snapshot:
    """Everything ToG's layer and kgfed's templates answer on one engine for one dataset."""

    entities: list[str]
    tog_rels: dict[tuple[str, str], set[str]] = field(default_factory=dict)        # (e, out|in) -> raw relations
    tog_ents: dict[tuple[str, str, str], set[str]] = field(default_factory=dict)   # (e, r, out|in) -> far ends
    tog_buggy: dict[tuple[str, str], set[str]] = field(default_factory=dict)       # (e, r) -> buggy head fill
    tog_names: dict[str, set[str]] = field(default_factory=dict)
    kg_rels: dict[tuple[str, str], set[str]] = field(default_factory=dict)         # expand_cvt=False
    kg_ents: dict[tuple[str, str, str], set[str]] = field(default_factory=dict)
    kg_labels: dict[str, str | None] = field(default_factory=dict)
    kg_cvt_rels: dict[tuple[str, str], set[str]] = field(default_factory=dict)     # expand_cvt=True
    kg_cvt_ents: dict[tuple[str, str, str], set[str]] = field(default_factory=dict)


def _chunks(items: Sequence, size: int = BATCH) -> Iterable[Sequence]:
    return (items[i:i + size] for i in range(0, len(items), size))


async def _tog_batched(engine: Engine, template: str, fill: Sequence[str], bindings: list[dict[str, str]],
                       key: Sequence[str], value: str) -> dict[tuple, set[str]]:
    """Run a batched ToG template over all bindings; answers grouped by the binding (`key` names)."""
    out: dict[tuple, set[str]] = {tuple(b[k] for k in key): set() for b in bindings}
    results = await asyncio.gather(*(engine.tog(batched(template, fill, chunk)) for chunk in _chunks(bindings)))
    for result in results:
        assert not result.partial, result.note
        for row in result.rows:
            group = tuple(short(row[f"kgfed_{k}"].value) for k in key)
            out[group].add(short(row[value].value))
    return out


async def snapshot(engine: Engine, entities: list[str]) -> Snapshot:
    snap = Snapshot(entities)
    ents = [{"e": e} for e in entities]
    for direction, template in (("out", sparql_head_relations), ("in", sparql_tail_relations)):
        found = await _tog_batched(engine, template, ("e",), ents, ("e",), "relation")
        snap.tog_rels.update({(e, direction): rels for (e,), rels in found.items()})
    pairs = {d: [{"e": e, "r": r} for (e, dd), rels in snap.tog_rels.items() if dd == d for r in sorted(rels)
                 if not r.startswith("http")] for d in ("out", "in")}  # ns: relations (all here)
    for direction, template, fill in (("out", sparql_tail_entities_extract, TAIL_ENTITIES),
                                      ("in", sparql_head_entities_extract, HEAD_ENTITIES)):
        found = await _tog_batched(engine, template, fill, pairs[direction], ("e", "r"), "tailEntity")
        snap.tog_ents.update({(e, r, direction): xs for (e, r), xs in found.items()})
    snap.tog_buggy = await _tog_batched(engine, sparql_head_entities_extract, HEAD_ENTITIES_BUGGY, pairs["in"], ("e", "r"), "tailEntity")
    names = await _tog_batched(engine, sparql_id, ID_TO_NAME, ents, ("e",), "tailEntity")
    snap.tog_names = {e: v for (e,), v in names.items()}

    kg = engine.kg(expand_cvt=False)
    rels = await kg.relations_many(entities)
    snap.kg_rels = {(e, d): {r.relation for r in rs if r.direction == d} for e, rs in rels.items() for d in ("out", "in")}
    triples = sorted({(e, r, d) for (e, d), rs in snap.kg_rels.items() for r in rs if expressible(r)})
    edges = await kg.neighbors_many(triples)
    snap.kg_ents = {k: {edge.entity for edge in v} for k, v in edges.items()}
    snap.kg_labels = {i: label.label for i, label in (await kg.labels(entities)).items()}

    kg = engine.kg(expand_cvt=True)
    rels = await kg.relations_many(entities)
    snap.kg_cvt_rels = {(e, d): {r.relation for r in rs if r.direction == d} for e, rs in rels.items() for d in ("out", "in")}
    compound = sorted({(e, r, d) for (e, d), rs in snap.kg_cvt_rels.items() for r in rs if "|" in r and expressible(r)})
    edges = await kg.neighbors_many(compound)
    snap.kg_cvt_ents = {k: {edge.entity for edge in v} for k, v in edges.items()}
    return snap


def fixture_entities(path: Path) -> list[str]:
    """Every Freebase entity of an N-Triples file: each subject and IRI object with a valid mid."""
    import pyoxigraph as ox

    found = set()
    for triple in ox.parse(path=str(path), format=ox.RdfFormat.N_TRIPLES):
        for term in (triple.subject, triple.object):
            if isinstance(term, ox.NamedNode) and term.value.startswith(NS):
                found.add(term.value[len(NS):])
    valid = sorted(e for e in found if FREEBASE_MID.match(e))
    assert len(valid) == len(found), sorted(found - set(valid))[:5]
    return valid


_SNAPSHOTS: dict[tuple[str, str], Snapshot] = {}


@pytest.fixture
def snap(request) -> Snapshot:
    """The snapshot of (dataset, engine) from the test's parameters, computed once per session."""
    dataset, engine_name = request.node.callspec.params["dataset"], request.node.callspec.params["engine"]
    key = (dataset, engine_name)
    if key not in _SNAPSHOTS:
        _SNAPSHOTS[key] = _take(request, dataset, engine_name)
    return _SNAPSHOTS[key]


def _take(request, dataset: str, engine_name: str) -> Snapshot:
    relative, graph, oxigraph_fixture = DATASETS[dataset]
    path = shared_file(relative)
    entities = fixture_entities(path)

    async def run() -> Snapshot:
        async with HttpClient(per_host=8, timeout=120) as client:
            if engine_name == "virtuoso":
                virtuoso = request.getfixturevalue("virtuoso_freebase")
                engine = Engine("virtuoso", HttpEndpoint(virtuoso.url, client, default_graph=graph), standard=False)
            elif engine_name == "oxigraph":
                server = request.getfixturevalue(oxigraph_fixture)
                engine = Engine("oxigraph", HttpEndpoint(server.url, client), standard=True)
            else:
                engine = Engine("embedded", EmbeddedEndpoint([path]), standard=True)
            return await snapshot(engine, entities)

    return asyncio.run(run())


def _params():
    return pytest.mark.parametrize("dataset, engine", [
        pytest.param(d, e, marks=[pytest.mark.virtuoso] if e == "virtuoso" else [], id=f"{d}-{e}")
        for d in DATASETS for e in ENGINES
    ])


def _tog_kept(rels: set[str]) -> set[str]:
    return {r for r in rels if not abandon_rels(r)}


# ---- the differential tests ------------------------------------------------------------------------
def test_uppercase_relation_ids_are_accepted():
    assert FREEBASE.relation("location.location_symbol_relationship.Kind_of_symbol").endswith("Kind_of_symbol>")


def test_tog_filter_is_abandon_rels():
    """The RelationFilter used on kgfed's side drops exactly what ToG's `abandon_rels` drops."""
    cases = ["type.object.type", "type.object.name", "common.topic.alias", "freebase.valuenotation.is_reviewed",
             "http://www.w3.org/2002/07/owl#sameAs", "people.person.nationality", "type.type.instance",
             "kg.object_profile.prominent_type", "user.x.y", "base.schemastaging.context_name.pronunciation"]
    assert [bool(abandon_rels(c)) for c in cases] == [TOG_FILTER.drops(c) for c in cases]
    assert [c for c in cases if TOG_FILTER.drops(c)] == cases[:5]


@_params()
def test_relations_match_tog(dataset, engine, snap):
    """Head and tail relations of every entity: kgfed == ToG's queries after ToG's filter, both directions."""
    assert len(snap.entities) > (1000 if dataset == "cwq" else 500)
    for key, raw in snap.tog_rels.items():
        assert snap.kg_rels[key] == _tog_kept(raw), key
    assert sum(len(v) for v in snap.kg_rels.values()) > len(snap.entities)
    assert any(snap.kg_rels[(e, "in")] for e in snap.entities) and any(snap.kg_rels[(e, "out")] for e in snap.entities)


@_params()
def test_neighbors_match_tog(dataset, engine, snap):
    """Tail entities (out) and head entities (in, the intended fill) of every (entity, relation): equal sets."""
    kept = {k for k in snap.tog_ents if not abandon_rels(k[1])}
    assert all(expressible(k[1]) for k in kept)  # every real relation id passes kgfed's check (capitals too)
    assert kept == set(snap.kg_ents)
    for key in kept:
        assert snap.kg_ents[key] == snap.tog_ents[key] and snap.tog_ents[key], key
    assert sum(1 for k in kept if k[2] == "in") > (1000 if dataset == "cwq" else 300)


@_params()
def test_tog_head_entity_bug_returns_nothing(dataset, engine, snap):
    """ToG/utils.py's `% (entity, relation)` fill finds nothing for any incoming hop; the intended fill
    finds exactly kgfed's incoming neighbours."""
    incoming = [k for k in snap.tog_ents if k[2] == "in"]
    assert len(incoming) > 300
    assert all(not snap.tog_buggy[(e, r)] for e, r, _ in incoming)
    assert sum(len(snap.tog_ents[k]) for k in incoming) > len(incoming)
    assert all(snap.kg_ents[k] == snap.tog_ents[k] for k in incoming if not abandon_rels(k[1]) and expressible(k[1]))


@_params()
def test_names_match_tog(dataset, engine, snap):
    """id → name: kgfed's label is one of ToG's names; an entity ToG calls "UnName_Entity" has none in kgfed."""
    named = 0
    for e in snap.entities:
        tog = snap.tog_names[e]
        if tog:
            named += 1
            assert snap.kg_labels[e] in tog, e
        else:
            assert snap.kg_labels[e] is None, e
    assert 0 < named < len(snap.entities)  # the fixtures hold nameless CVT nodes too


def _tog_cvt(snap: Snapshot) -> tuple[dict[tuple[str, str], set[str]], dict[tuple[str, str, str], set[str]]]:
    """kgfed's CVT view composed from ToG's own answers: ToG's entity search over r1 reaches a node
    ToG names "UnName_Entity"; ToG's relation search on it gives r2, and its entity search the far end."""
    nameless = {e for e, names in snap.tog_names.items() if not names}
    rels: dict[tuple[str, str], set[str]] = defaultdict(set)
    ents: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for (e, r, d), xs in snap.tog_ents.items():
        for x in xs:
            hops = {(r2, y) for r2 in snap.tog_rels.get((x, "out"), ()) for y in snap.tog_ents.get((x, r2, "out"), ())
                    if y != e} if x in nameless else set()
            if not hops:
                if not abandon_rels(r):
                    rels[(e, d)].add(r)
                continue
            for r2, y in hops:
                if not abandon_rels(r) and not abandon_rels(r2):
                    rels[(e, d)].add(f"{r}|{r2}")
                    ents[(e, f"{r}|{r2}", d)].add(y)
    return rels, ents


@_params()
def test_cvt_compound_relations_match_tog(dataset, engine, snap):
    """With CVT expansion, kgfed's relations and compound neighbours equal ToG's two hops through the
    nameless node (filter on both parts)."""
    rels, ents = _tog_cvt(snap)
    for e in snap.entities:
        for d in ("out", "in"):
            assert snap.kg_cvt_rels[(e, d)] == rels.get((e, d), set()), (e, d)
    ents = {k: v for k, v in ents.items() if expressible(k[1])}
    assert set(snap.kg_cvt_ents) == set(ents)
    for key, far in ents.items():
        assert snap.kg_cvt_ents[key] == far, key
    assert len(ents) > 100  # the fixtures really contain CVTs


@pytest.mark.virtuoso
@pytest.mark.parametrize("dataset", list(DATASETS))
def test_engines_agree(request, dataset):
    """ToG's layer and kgfed's templates give the same sets on Virtuoso, an Oxigraph server and embedded."""
    snaps = {}
    for engine in ENGINES:
        key = (dataset, engine)
        if key not in _SNAPSHOTS:
            _SNAPSHOTS[key] = _take(request, dataset, engine)
        snaps[engine] = _SNAPSHOTS[key]
    first = snaps["virtuoso"]
    for engine in ENGINES[1:]:
        other = snaps[engine]
        for name in ("tog_rels", "tog_ents", "tog_names", "kg_rels", "kg_ents", "kg_labels", "kg_cvt_rels", "kg_cvt_ents"):
            assert getattr(other, name) == getattr(first, name), (engine, name)


@pytest.mark.parametrize("engine", [pytest.param(e, marks=[pytest.mark.virtuoso] if e == "virtuoso" else []) for e in ENGINES])
def test_batching_is_faithful_to_tog_strings(request, engine):
    """ToG's verbatim `%`-filled strings, one query per binding, give the same sets as the batched form."""
    dataset = "cwq"
    path = shared_file(DATASETS[dataset][0])
    entities = fixture_entities(path)[::97][:40]

    async def run():
        async with HttpClient(per_host=8, timeout=120) as client:
            if engine == "virtuoso":
                virtuoso = request.getfixturevalue("virtuoso_freebase")
                eng = Engine(engine, HttpEndpoint(virtuoso.url, client, default_graph=CWQ_GRAPH), standard=False)
            elif engine == "oxigraph":
                eng = Engine(engine, HttpEndpoint(request.getfixturevalue("oxigraph_freebase").url, client), standard=True)
            else:
                eng = Engine(engine, EmbeddedEndpoint([path]), standard=True)
            checked = 0
            for e in entities:
                for template, fill, value in ((sparql_head_relations, HEAD_RELATIONS, "relation"),
                                              (sparql_tail_relations, TAIL_RELATIONS, "relation"),
                                              (sparql_id, ID_TO_NAME, "tailEntity")):
                    one = {short(r[value].value) for r in (await eng.tog(filled(template, fill, {"e": e}))).rows}
                    many = await _tog_batched(eng, template, fill, [{"e": e}, {"e": entities[0]}], ("e",), value)
                    assert one == many[(e,)], (template, e)
                    checked += bool(one)
                for direction, template, fill in (("out", sparql_tail_entities_extract, TAIL_ENTITIES),
                                                  ("in", sparql_head_entities_extract, HEAD_ENTITIES),
                                                  ("in", sparql_head_entities_extract, HEAD_ENTITIES_BUGGY)):
                    source = sparql_head_relations if direction == "out" else sparql_tail_relations
                    for r in sorted({short(x["relation"].value) for x in (await eng.tog(filled(source, ("e",), {"e": e}))).rows})[:3]:
                        binding = {"e": e, "r": r}
                        one = {short(x["tailEntity"].value) for x in (await eng.tog(filled(template, fill, binding))).rows}
                        many = await _tog_batched(eng, template, fill, [binding], ("e", "r"), "tailEntity")
                        assert one == many[(e, r)], (template, fill, binding)
                        checked += bool(one)
            return checked

    assert asyncio.run(run()) > 60
