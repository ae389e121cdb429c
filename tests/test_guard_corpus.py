"""The guard passes every query kgfed itself writes or reads, and sends it unchanged (a LIMIT aside).

kgfed's own templates (both dialects, every template and capability), the doctor's probes, the agent
profiles' query shapes, and the 538 CWQ gold queries as written for Virtuoso (with the Freebase dialect's
`functions`) and rewritten for standard engines (with no extra function): each is accepted, and the text
sent is the caller's with at most a top-level LIMIT added or lowered and its comments dropped. The methods'
prompts hold no SPARQL (the agent profiles' tool hints are the queries a model is shown: checked here). On a
real Virtuoso, a sample of the raw gold queries answers from the guard's text exactly as from the original.
"""
from __future__ import annotations

import json
import re

import pytest

from kgfed.engine.agent.profiles.wmde import _INCOMING, WDQS_PREFIXES
from kgfed.engine.harness.doctor import ANY_TRIPLE, HEAVY
from kgfed.sparql.dialects import FREEBASE, WIKIDATA, Dialect
from kgfed.sparql.guard import ServicePolicy, analyse, tokens
from kgfed.sparql.rewrite import to_standard_sparql

from .conftest_servers import http_select, shared_file

CAP = 100


def templates(dialect: Dialect) -> list[str]:
    """One rendering of each of the dialect's templates."""
    e, e2 = ("Q42", "Q5") if dialect is WIKIDATA else ("m.0d3k14", "m.02mjmr")
    r = "P69" if dialect is WIKIDATA else "people.person.nationality"
    out = [dialect.relations([e, e2], "out"), dialect.relations([e], "in"), dialect.neighbors([(e, r)], "out"),
           dialect.neighbors([(e, r), (e2, r)], "in", limit=50), dialect.labels([e, e2]), dialect.name_probe(),
           dialect.search("Douglas Adams", 10), dialect.search("it's \"odd\"", 5, mode="contains"),
           dialect.match_labels(["Douglas Adams", "Paris"])]
    if dialect.compound_relations:
        out += [dialect.neighbors([(e, "people.person.places_lived|people.place_lived.location")], "out", limit=20),
                dialect.relations([e], "out", expand_cvt=False)]
    if dialect.supports("qualifiers"):
        out += [dialect.qualifiers_many([(e, "P69"), (e2, "P31")]), dialect.qualifier_probe()]
    if dialect.supports("sitelinks"):
        out.append(dialect.sitelinks([e, e2]))
    if dialect.supports("links"):
        out += [dialect.linked_ids([e], FREEBASE), dialect.by_linked_ids(["m.0d3k14"], FREEBASE)]
    return out


def unchanged(query: str, text: str) -> bool:
    """`text` is `query` with its comments dropped and at most one LIMIT added or lowered."""
    stripped = "".join("" if t.kind == "COMMENT" else t.text for t in tokens(query))
    if text == stripped:
        return True
    added = text.replace(f" LIMIT {CAP + 1}", "", 1)
    lowered = re.sub(rf"(LIMIT\s+){CAP + 1}\b", lambda m: m.group(1), text, count=1)
    return added == stripped or re.sub(r"(LIMIT\s+)\d+", lambda m: m.group(1), stripped, count=1) == lowered


def passes(query: str, dialect: Dialect, policy: ServicePolicy = ServicePolicy()) -> str:  # noqa: B008 (frozen)
    text = analyse(query, policy, CAP, functions=dialect.functions).text
    assert unchanged(query, text), (query, text)
    return text


@pytest.mark.parametrize("dialect", [WIKIDATA, FREEBASE], ids=lambda d: d.name)
def test_every_template_passes_unchanged(dialect):
    rendered = templates(dialect)
    for query in rendered:
        passes(query, dialect)
    if dialect is WIKIDATA:  # the MediaWiki search service: a WDQS built-in, allowed on WDQS only
        passes(WIKIDATA.search("Douglas Adams", 10, mode="mwapi"), WIKIDATA, ServicePolicy(builtins=True))
    assert any("FILTER" in q and "STRSTARTS" in q for q in rendered) or dialect is FREEBASE


def test_kgfeds_other_queries_pass_unchanged():
    for query in (HEAVY, ANY_TRIPLE, "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"):
        passes(query, WIKIDATA)
    incoming = _INCOMING.format(relation="P19", entity="Q350")
    declared = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in WDQS_PREFIXES.items() if f"{name}:" in incoming)
    passes(declared + incoming, WIKIDATA)


def gold_queries() -> list[str]:
    with open(shared_file("freebase/cwq_questions.jsonl"), encoding="utf-8") as fh:
        return [json.loads(line)["sparql"] for line in fh]


def test_every_cwq_gold_query_passes_raw_and_rewritten():
    queries = gold_queries()
    assert len(queries) == 538
    casts = 0
    for raw in queries:
        passes(raw, FREEBASE)  # as written for Virtuoso: its xsd:datetime cast is the Freebase dialect's
        rewritten = to_standard_sparql(raw)
        passes(rewritten, WIKIDATA)  # standard SPARQL: no dialect function needed
        casts += "xsd:datetime(" in raw
    assert casts >= 10  # the Virtuoso casts were really there


def test_the_raw_gold_queries_answer_on_virtuoso_from_the_guards_text(virtuoso_freebase):
    url = virtuoso_freebase.graph_url(virtuoso_freebase.cwq_graph)
    sample = gold_queries()[::6]
    answered = 0
    for raw in sample:
        text = analyse(raw, ServicePolicy(), 10_000, functions=FREEBASE.functions).text
        before, after = http_select(url, raw), http_select(url, text)
        assert sorted(map(repr, before.rows)) == sorted(map(repr, after.rows)), raw
        answered += bool(before.rows)
    assert answered >= len(sample) // 2, (answered, len(sample))
