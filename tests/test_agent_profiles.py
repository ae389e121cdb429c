"""The leaders' tool interfaces as profiles (issue 37 item 2): `sog`, `kg-r1`, `graphwalker`, `wmde`.

Every tool of every profile runs on the embedded store over the shared fixtures (the CWQ Freebase subgraph,
the Wikidata-shaped CODEX-S and federation files) through the real `KG` facade; the texts are the sources'
formats (docs/agent-tools.md), the values the fixtures'. Then `--llm gold` drives each profile along the
gold queries of CWQ and of the federation set on Wikidata alone.
"""
from __future__ import annotations

import asyncio
import json

import pytest

from kgfed.endpoints.embedded import EmbeddedEndpoint
from kgfed.engine.agent.profiles import sog as sog_module
from kgfed.engine.agent.tools import PROFILES, ToolContext, ToolError, get_profile
from kgfed.engine.config import CacheOptions, KGSpec, kg_specs
from kgfed.engine.harness.datasets import load_dataset
from kgfed.engine.harness.runner import RunSpec, run, select_questions
from kgfed.engine.kg.facade import KG
from kgfed.sparql.dialects import FREEBASE, WIKIDATA
from kgfed.sparql.errors import KgfedError

from .conftest import CWQ_NT, CWQ_QUESTIONS, FED_DIR, need

FED_QUESTIONS = FED_DIR / "questions.jsonl"
SEED = 37  # the agent's CWQ sample (tests/test_agent.py)
LEADERS = {
    "sog": ["search", "answer"],
    "kg-r1": ["get_relations_out", "get_relations_in", "get_entities_out", "get_entities_in", "get_conditional_relations",
              "answer"],
    "graphwalker": ["get_relations", "get_triples", "answer"],
    "wmde": ["search_items", "search_properties", "get_statements", "get_statement_values",
             "get_instance_and_subclass_hierarchy", "execute_sparql", "answer"],
}


@pytest.fixture(scope="module")
def fed_store():
    import pyoxigraph as ox

    store = ox.Store()
    store.bulk_load(path=str(need(FED_DIR / "wikidata.nt")), format=ox.RdfFormat.N_TRIPLES)
    return store


def freebase(cwq_store) -> KG:
    return KG(EmbeddedEndpoint(store=cwq_store), FREEBASE, name="freebase", cache=None)


def wikidata(store) -> KG:
    return KG(EmbeddedEndpoint(store=store), WIKIDATA, name="wikidata", cache=None)


@pytest.fixture
def tool_runner():
    """make(profile, kg, question) -> call(tool, **args) -> the tool's text: one profile over one KG, one context
    (what was shown is kept) and one event loop (the KG's query workers live on it), closed after the test."""
    made: list[tuple[asyncio.AbstractEventLoop, KG]] = []

    def make(profile: str, kg: KG, question: str = ""):
        loop = asyncio.new_event_loop()
        made.append((loop, kg))
        tools = get_profile(profile)({kg.name: kg})
        ctx = ToolContext({kg.name: kg}, question)

        def call(name: str, **args) -> str:
            return loop.run_until_complete(tools.tool(name).call(args, ctx))

        return call

    yield make
    for loop, kg in made:
        loop.run_until_complete(kg.aclose())
        loop.close()


def test_the_leaders_profiles_are_registered_with_the_sources_tool_names(cwq_store, codex_store):
    for name, tools in LEADERS.items():
        assert name in PROFILES
        kg = wikidata(codex_store) if name == "wmde" else freebase(cwq_store)
        profile = get_profile(name)({kg.name: kg})
        assert [spec["name"] for spec in profile.specs()] == tools
        assert profile.source and profile.system
    with pytest.raises(KgfedError, match="'graphwalker' applies to freebase KGs, not wikidata"):
        get_profile("graphwalker")({"wikidata": wikidata(codex_store)})
    with pytest.raises(KgfedError, match="'wmde' applies to wikidata KGs, not freebase"):
        get_profile("wmde")({"freebase": freebase(cwq_store)})


# -- sog ---------------------------------------------------------------------------------------------------
def test_sog_search_is_a_markdown_table_of_one_direction(cwq_store, tool_runner):
    call = tool_runner("sog", freebase(cwq_store))
    out = call("search", entity="m.0146np", direction="outgoing")
    assert out.splitlines()[:4] == [
        "Outgoing neighbours of Alta Verapaz Department (m.0146np): 3",
        "| property | id | name |",
        "|---|---|---|",
        "| location.location.containedby | m.0345_ | Guatemala |",
    ]
    inbound = call("search", entity="Guatemala", direction="incoming")  # a name a table showed
    assert inbound.startswith("Incoming neighbours of Guatemala (m.0345_): 13\n")
    assert "| location.location.contains | m.01tzh | Central America |" in inbound
    # a CVT is crossed by a compound relation; its pipe is escaped in the cell
    ratty = call("search", entity="m.0z4nb1p", direction="outgoing")
    assert ("| film.film_character.portrayed_in_films\\|film.performance.film | m.0f4yh | "
            "Indiana Jones and the Raiders of the Lost Ark |") in ratty


def test_sog_summarises_past_50_neighbours_then_shows_the_properties_asked(cwq_store, tool_runner):
    call = tool_runner("sog", freebase(cwq_store))
    summary = call("search", entity="m.09c7w0", direction="incoming")
    assert summary.startswith("Incoming neighbours of United States of America (m.09c7w0): 240 neighbours, more than 50;")
    assert "| property | neighbours |" in summary and "| people.person.nationality | 91 |" in summary
    assert "| film.film.country | 25 |" in summary and "m.0" not in summary.split("\n", 1)[1]  # counts, no rows
    rows = call("search", entity="m.09c7w0", direction="incoming", properties=["film.film.country", "no.such.property"])
    assert rows.startswith("Incoming neighbours of United States of America (m.09c7w0): 25\n| property | id | name |")
    assert rows.count("| film.film.country |") == 25
    assert rows.endswith("Not incoming properties of m.09c7w0: no.such.property")


def test_sog_caps_a_call_at_its_row_cap(cwq_store, monkeypatch, tool_runner):
    monkeypatch.setattr(sog_module, "ROW_CAP", 40)
    call = tool_runner("sog", freebase(cwq_store))
    out = call("search", entity="m.09c7w0", direction="incoming", properties=["people.person.nationality"])
    assert out.startswith("Incoming neighbours of United States of America (m.09c7w0): more than 40\n")
    assert out.count("| people.person.nationality |") == 40
    assert out.endswith("(the first 40 rows; more exist: ask for fewer properties)")
    summary = call("search", entity="m.09c7w0", direction="incoming")
    assert "| people.person.nationality | more than 40 |" in summary and "| film.film.country | 25 |" in summary


def test_sog_on_wikidata_names_properties_and_refuses_unknown_entities(codex_store, tool_runner):
    call = tool_runner("sog", wikidata(codex_store))
    out = call("search", entity="Q42", direction="outgoing")
    assert out.startswith("Outgoing neighbours of Douglas Adams (Q42): 13\n")
    assert "| P27 (country of citizenship) | Q145 | United Kingdom |" in out
    assert "| P646 |  | /m/0282x |" in out  # a literal: no id
    with pytest.raises(ToolError, match="search: unknown entity 'Nobody Atall'"):
        call("search", entity="Nobody Atall", direction="outgoing")
    with pytest.raises(ToolError, match="is not one of outgoing, incoming"):
        call("search", entity="Q42", direction="sideways")


# -- kg-r1 -------------------------------------------------------------------------------------------------
def test_kg_r1_actions_answer_in_kg_r1s_texts(cwq_store, tool_runner):
    call = tool_runner("kg-r1", freebase(cwq_store))
    assert call("get_relations_out", entity="Alta Verapaz Department") == (
        'Outgoing relations for entity "Alta Verapaz Department":\n'
        "base.aareas.schema.administrative_area.administrative_parent, location.administrative_division.country, "
        "location.location.containedby")
    assert call("get_relations_in", entity="m.0146np") == (
        'Incoming relations for entity "m.0146np":\n'
        "base.aareas.schema.administrative_area.administrative_children, location.country.administrative_divisions, "
        "location.location.contains")
    assert call("get_entities_in", entity="Alta Verapaz Department", relation="location.country.administrative_divisions") == (
        'Entities incoming via relation "location.country.administrative_divisions" to "Alta Verapaz Department": Guatemala')
    # a relation into a CVT shows the CVT's id; its relations are asked next, as in KG-R1's subgraphs
    assert call("get_entities_out", entity="Ratty Nepalese", relation="film.film_character.portrayed_in_films") == (
        'Entities outgoing via relation "film.film_character.portrayed_in_films" from "Ratty Nepalese": m.0z4nb1l')
    assert call("get_entities_out", entity="m.0z4nb1l", relation="film.performance.film") == (
        'Entities outgoing via relation "film.performance.film" from "m.0z4nb1l": Indiana Jones and the Raiders of the Lost Ark')
    assert call("get_conditional_relations", entity="Guatemala", concept="finance") == 'No relations found for entity "Guatemala" with concept "finance" in knowledge graph'
    assert call("get_conditional_relations", entity="Guatemala", concept="location").startswith(
        'Relations for entity "Guatemala" with concept "location": location.country.administrative_divisions, '
        "location.country.currency_used, location.location.containedby, location.location.contains")
    assert call("get_entities_out", entity="Guatemala", relation="film.film.country") == (
        'No entities found outgoing via relation "film.film.country" from "Guatemala" in knowledge graph')


def test_kg_r1_errors_are_kg_r1s(cwq_store, codex_store, tool_runner):
    call = tool_runner("kg-r1", freebase(cwq_store))
    with pytest.raises(ToolError, match='^Entity "Nowhere Land" not found in KG$'):
        call("get_relations_out", entity='"Nowhere Land"')
    with pytest.raises(ToolError, match='^Relation "not a relation" not found in KG$'):
        call("get_entities_out", entity="Guatemala", relation="not a relation")
    wd = tool_runner("kg-r1", wikidata(codex_store))
    out = wd("get_relations_out", entity="Douglas Adams")
    assert out.startswith('Outgoing relations for entity "Douglas Adams":\n') and "P27 (country of citizenship)" in out
    assert wd("get_entities_out", entity="Q42", relation="P27 (country of citizenship)") == (
        'Entities outgoing via relation "P27 (country of citizenship)" from "Q42": United Kingdom')


# -- graphwalker ---------------------------------------------------------------------------------------------
def test_graphwalker_lists_ten_relations_and_flattens_cvts(cwq_store, tool_runner):
    call = tool_runner("graphwalker", freebase(cwq_store), "Who played the character Ratty Nepalese in the film Raiders of the Lost Ark?")
    assert call("get_relations", entity="Ratty Nepalese").splitlines() == [
        "film.film_character.portrayed_in_films", "film.performance.character"]
    assert call("get_triples", entity="Ratty Nepalese", relations=["film.film_character.portrayed_in_films"]) == (
        "[Ratty Nepalese, film_character.portrayed_in_films.film.performance.film, Indiana Jones and the Raiders of the Lost Ark]")
    # a flattened name is a relation of the entity from then on
    assert call("get_triples", entity="Ratty Nepalese",
                relations=["film_character.portrayed_in_films.film.performance.film"]).startswith("[Ratty Nepalese, ")
    usa = call("get_relations", entity="m.09c7w0")
    assert len(usa.splitlines()) == 10 and "type.object.type" not in usa


def test_graphwalker_triples_caps_and_errors(cwq_store, tool_runner):
    call = tool_runner("graphwalker", freebase(cwq_store), "Which nation has the Alta Verapaz Department?")
    out = call("get_triples", entity="Guatemala", relations=["location.location.contains", "location.location.contains"])
    assert out.splitlines() == ["[Guatemala, location.location.contains, Sacatepéquez Department]",
                                "[Guatemala, location.location.contains, Alta Verapaz Department]",
                                "[Americas, location.location.contains, Guatemala]",
                                "[Central America, location.location.contains, Guatemala]"]
    usa = call("get_triples", entity="m.09c7w0", relations=["people.person.nationality"])
    assert len(usa.splitlines()) == 5  # limit_per_relation
    with pytest.raises(ToolError, match="^Invalid entity. Use an entity returned by the previous step and copy it exactly.$"):
        call("get_relations", entity="Nobody Atall")
    with pytest.raises(ToolError, match="The relation 'film.foo' is not in the latest predicate list. Choose predicates"):
        call("get_triples", entity="Guatemala", relations=["film.foo"])


# -- wmde --------------------------------------------------------------------------------------------------
def test_wmde_search_and_statements_in_the_servers_texts(fed_store, tool_runner):
    call = tool_runner("wmde", wikidata(fed_store))
    assert call("search_items", query="Justin Bieber") == "Q34086: Justin Bieber — Canadian singer-songwriter, record producer and actor"
    assert call("search_items", query="bieber") == "Q34086: Justin Bieber — Canadian singer-songwriter, record producer and actor"
    assert call("search_properties", query="country of citizenship").startswith("P27: country of citizenship — ")
    assert call("search_items", query="zzzxq") == "No matching Wikidata items found."
    assert call("search_properties", query="zzzxq") == "No matching Wikidata propertys found."  # sic, the server's plural
    assert call("search_items", query="  ") == "Query cannot be empty."
    statements = call("get_statements", entity_id="Q34086").splitlines()
    assert "Justin Bieber (Q34086): country of citizenship (P27): Canada (Q16)" in statements
    assert "Justin Bieber (Q34086): record label (P264): Def Jam Recordings (Q654283)" in statements
    assert call("get_statement_values", entity_id="Q34086", property_id="P27") == (
        "Justin Bieber (Q34086): country of citizenship (P27): Canada (Q16)\n  Rank: normal")
    assert call("get_statement_values", entity_id="Q34086", property_id="P26") == "No statement found for Q34086 with property P26"
    assert call("get_statements", entity_id="Q999999999") == "Entity Q999999999 not found"
    with pytest.raises(ToolError, match="^Entity m.0abc not found$"):
        call("get_statements", entity_id="m.0abc")


def test_wmde_execute_sparql_is_guarded_csv(fed_store, tool_runner):
    call = tool_runner("wmde", wikidata(fed_store))
    query = 'SELECT ?x ?l WHERE { wd:Q34086 wdt:P27 ?x . OPTIONAL { ?x rdfs:label ?l . FILTER(LANG(?l) = "en") } }'
    assert call("execute_sparql", sparql=query) == ";x;l\n0;Q16;Canada\n"  # WDQS's prefixes, QIDs cut, `;` CSV, an index
    assert call("execute_sparql", sparql="SELECT ?x WHERE { wd:Q34086 wdt:P27 wd:Q1 }") == '""\n'
    many = call("execute_sparql", sparql="SELECT ?s WHERE { ?s wdt:P27 ?o }", K=3)
    assert many.splitlines()[0] == ";s" and [line.split(";")[0] for line in many.splitlines()[1:]] == ["0", "1", "2"]
    with pytest.raises(ToolError, match="read-only"):
        call("execute_sparql", sparql="INSERT DATA { wd:Q1 wdt:P1 wd:Q2 }")
    with pytest.raises(ToolError, match="SERVICE"):
        call("execute_sparql", sparql="SELECT * WHERE { SERVICE <http://127.0.0.1:9/sparql> { ?s ?p ?o } }")


def test_wmde_hierarchy_is_the_servers_json(tmp_path, tool_runner):
    import pyoxigraph as ox

    wd, wdt = "http://www.wikidata.org/entity/", "http://www.wikidata.org/prop/direct/"
    label = "http://www.w3.org/2000/01/rdf-schema#label"
    store = ox.Store()
    for s, p, o in [("Q42", "P31", "Q5"), ("Q5", "P279", "Q154954"), ("Q154954", "P279", "Q215627")]:
        store.add(ox.Quad(ox.NamedNode(wd + s), ox.NamedNode(wdt + p), ox.NamedNode(wd + o)))
    for ident, name in [("Q42", "Douglas Adams"), ("Q5", "human"), ("Q154954", "natural person"), ("Q215627", "person")]:
        store.add(ox.Quad(ox.NamedNode(wd + ident), ox.NamedNode(label), ox.Literal(name, language="en")))
    call = tool_runner("wmde", wikidata(store))
    assert json.loads(call("get_instance_and_subclass_hierarchy", entity_id="Q42", max_depth=2)) == {
        "Douglas Adams (Q42)": {
            "instance of (P31)": [{"human (Q5)": {"instance of (P31)": [], "subclass of (P279)": ["natural person (Q154954)"]}}],
            "subclass of (P279)": []}}


# -- the gold stand-in drives the leaders' profiles ----------------------------------------------------------
@pytest.mark.parametrize("profile,floor", [("sog", 0.85), ("kg-r1", 0.90), ("graphwalker", 0.80)])
def test_gold_drives_a_leaders_profile_on_cwq(tmp_path, profile, floor):
    questions = select_questions(load_dataset(need(CWQ_QUESTIONS)), sample=40, seed=SEED)
    spec = RunSpec("agent", {"tools": profile}, kgs=(KGSpec("freebase", f"file:{need(CWQ_NT)}"),),
                   cache=CacheOptions(root=str(tmp_path / "cache")), llm=f"gold:{need(CWQ_QUESTIONS)}")
    summary = asyncio.run(run(spec, questions, tmp_path / "agent.jsonl", progress=False))
    assert summary["failed"] == 0, summary["failures"]
    assert summary["strict"] >= floor, f"{profile}: strict {summary['strict']:.3f}"
    assert summary["cost"].get("tool_errors", 0) == 0 and summary["cost"]["tool_calls"] >= 40


@pytest.mark.parametrize("profile", ["sog", "kg-r1", "wmde"])
def test_gold_drives_a_leaders_profile_on_wikidata_alone(tmp_path, profile):
    questions = select_questions(load_dataset(need(FED_QUESTIONS)), sample=30, seed=SEED)
    spec = RunSpec("agent", {"tools": profile}, kgs=tuple(kg_specs("wikidata", [f"wikidata=file:{need(FED_DIR / 'wikidata.nt')}"])),
                   cache=CacheOptions(root=str(tmp_path / "cache")), llm=f"gold:{need(FED_QUESTIONS)}")
    summary = asyncio.run(run(spec, questions, tmp_path / "agent.jsonl", progress=False))
    assert summary["failed"] == 0 and summary["strict"] >= 0.80, f"{profile}: strict {summary['strict']:.3f}"
