"""ToG over the real CWQ and federation fixtures: hand-written recorded replies, odd replies, costs, LLM-free."""
from __future__ import annotations

import pytest

from kgfed.endpoints.embedded import EmbeddedEndpoint
from kgfed.engine.kg import KG
from kgfed.engine.toolbox.llm import NoLLM, ReplayLLM
from kgfed.engine.methods import get_method
from kgfed.engine.methods.tog import ToG
from kgfed.sparql.dialects import FREEBASE, WIKIDATA
from kgfed.sparql.errors import KgfedError, LLMError

from kgfed.engine.harness.datasets import load_dataset

from .conftest import CWQ_QUESTIONS, FED_DIR, ROOT, need
from .replies import assert_llm_cost
from .recordings.llm.record_tog import BIEBER, GUATEMALA, RATTY, STEELERS

REPLIES = ROOT / "tests" / "recordings" / "llm" / "tog"
CWQ_TOPICS = {"m.01tzh": "Central America", "m.0146np": "Alta Verapaz Department"}


@pytest.fixture
def cwq_kg(cwq_store):
    return KG(EmbeddedEndpoint(store=cwq_store), FREEBASE, name="freebase", cache=None)


@pytest.fixture(scope="session")
def fed_stores():
    import pyoxigraph as ox

    stores = {}
    for name in ("freebase", "wikidata"):
        store = ox.Store()
        store.bulk_load(path=str(need(FED_DIR / f"{name}.nt")), format=ox.RdfFormat.N_TRIPLES)
        stores[name] = store
    return stores


@pytest.fixture
def fed_kgs(fed_stores):
    return {"freebase": KG(EmbeddedEndpoint(store=fed_stores["freebase"]), FREEBASE, name="freebase", cache=None),
            "wikidata": KG(EmbeddedEndpoint(store=fed_stores["wikidata"]), WIKIDATA, name="wikidata", cache=None)}


def test_registry_gives_tog():
    assert get_method("tog") is ToG


async def test_conjunction_answered_at_depth_one_from_both_topics(cwq_kg):
    llm = ReplayLLM(REPLIES)
    before = cwq_kg.stats["queries"]
    result = await ToG({"freebase": cwq_kg}, llm).answer(GUATEMALA, {"freebase": CWQ_TOPICS})
    assert result.answer == "Guatemala" and result.answer_ids == ["m.0345_"]
    assert "{Guatemala}" in result.reasoning and result.reasoning.startswith("{Yes}")
    ends = {(p[0].origin, p[-1].entity, p[-1].relation) for p in result.paths}
    assert ends == {("m.01tzh", "m.0345_", "location.location.contains"),
                    ("m.0146np", "m.0345_", "location.administrative_division.country")}
    assert result.extra["stop"] == "sufficient at depth 1"
    # 2 relation prompts + entity scoring of Central America's countries + 1 sufficiency check, all replayed
    assert_llm_cost(result, REPLIES, GUATEMALA)
    assert llm.stats["hits"] == result.cost["llm_calls"] and llm.stats["misses"] == 0
    assert result.cost["sparql_queries"] == cwq_kg.stats["queries"] - before > 0
    assert result.cost.get("cache_hits", 0) == 0


async def test_composition_needs_two_hops(cwq_kg):
    result = await ToG({"freebase": cwq_kg}, ReplayLLM(REPLIES)).answer(STEELERS, {"freebase": {"m.0_gt_jy": "2011 AFC Championship Game"}})
    assert result.answer == "Mike Tomlin" and result.answer_ids == ["m.0c5f_j"]
    [path] = result.paths
    assert [(e.relation, e.entity, e.label) for e in path] == [
        ("sports.sports_championship_event.champion", "m.05tfm", "Pittsburgh Steelers"),
        ("american_football.football_team.current_head_coach", "m.0c5f_j", "Mike Tomlin")]
    assert result.extra["depth"] == 2 and result.extra["stop"] == "sufficient at depth 2"
    assert result.path_texts()[0].startswith("2011 AFC Championship Game -[sports.sports_championship_event.champion]-> Pittsburgh Steelers")
    assert_llm_cost(result, REPLIES, STEELERS)


async def test_odd_replies_fall_back_and_never_crash(cwq_kg):
    """Relation replies naming nothing, prose entity scores, a bare 'no': SBERT steps in, then ToG's own answer."""
    result = await ToG({"freebase": cwq_kg}, ReplayLLM(REPLIES), depth=2).answer(RATTY, {"freebase": {"m.0z4nb1p": "Ratty Nepalese"}})
    assert result.answer == "Harrison Ford"
    assert result.extra["stop"] == "depth 2 reached; answered without the graph"
    warnings = result.extra["warnings"]
    assert len(warnings) == 2 and all("named none of the" in w and w.endswith("used sbert") for w in warnings)
    # the SBERT fallback still walked character -> film -> actor
    walked = [[e.label for e in c] for c in result.paths]
    assert ["Indiana Jones and the Raiders of the Lost Ark", "Harrison Ford"] in walked
    assert_llm_cost(result, REPLIES, RATTY)


async def test_two_kgs_each_from_its_own_topic(fed_kgs):
    result = await ToG(fed_kgs, ReplayLLM(REPLIES), depth=1).answer(
        BIEBER, {"freebase": {"m.06w2sn5": "Justin Bieber"}, "wikidata": {"Q34086": "Justin Bieber"}})
    assert result.answer == "Canada" and set(result.answer_ids) == {"m.0d060g", "Q16"}
    by_kg = {p[0].kg: p for p in result.paths}
    assert set(by_kg) == {"freebase", "wikidata"}
    assert by_kg["wikidata"][0].relation == "P27" and by_kg["wikidata"][0].relation_label == "country of citizenship"
    assert by_kg["freebase"][0].relation == "people.person.places_lived|people.place_lived.location"
    assert by_kg["freebase"][0].via  # crossed the places_lived CVT
    assert_llm_cost(result, REPLIES, BIEBER)


async def test_unrecorded_prompt_is_a_clear_error(cwq_kg):
    with pytest.raises(LLMError, match="no recorded LLM reply"):
        await ToG({"freebase": cwq_kg}, ReplayLLM(REPLIES)).answer("Which country uses the Guatemalan quetzal?",
                                                                    {"freebase": {"m.0146np": "Alta Verapaz Department"}})


async def test_llm_free_answers_a_two_hop_question(cwq_kg, tmp_path):
    from kgfed.engine.toolbox.embeddings import Embedder

    [question] = [q for q in load_dataset(need(CWQ_QUESTIONS)) if q.text == "The country that contains Alta Verapaz Department uses what money?"]
    method = ToG({"freebase": cwq_kg}, NoLLM(), embedder=Embedder(tmp_path / "emb"))
    result = await method.answer(question.text, question.topics)
    assert result.answer in question.answers and result.answer_ids == question.answer_ids["freebase"]
    assert any([e.label for e in p] == ["Guatemala", "Guatemalan quetzal"] for p in result.paths)
    assert result.cost.get("llm_calls", 0) == 0 and result.cost["sparql_queries"] > 0
    assert result.reasoning.startswith("LLM-free ToG")


async def test_llm_free_over_both_kgs(fed_kgs, tmp_path):
    from kgfed.engine.toolbox.embeddings import Embedder

    [question] = [q for q in load_dataset(need(FED_DIR / "questions.jsonl")) if q.text == "what language do the russian speak?"]
    assert set(question.topics) == {"freebase", "wikidata"}
    result = await ToG(fed_kgs, NoLLM(), embedder=Embedder(tmp_path / "emb")).answer(question.text, question.topics)
    assert result.answer in question.answers
    assert set(result.answer_ids) <= {i for ids in question.answer_ids.values() for i in ids}
    assert {e.kg for p in result.paths for e in p} <= {"freebase", "wikidata"}


@pytest.mark.parametrize("params, message", [
    ({"width": 0}, "invalid parameter width=0 for tog: expected a value ≥ 1"),
    ({"pruning": "magic"}, "invalid parameter pruning='magic' for tog: use one of llm, sbert, bm25"),
    ({"widht": 5}, "unknown tog parameter\\(s\\) widht: use some of agreement, depth, "),
    ({"exact_prompts": "maybe"}, "invalid parameter exact_prompts='maybe' for tog: expected bool")])
def test_bad_parameters(cwq_kg, params, message):
    with pytest.raises(KgfedError, match=message):
        ToG({"freebase": cwq_kg}, NoLLM(), **params)


async def test_bad_topics_are_one_line_errors(cwq_kg):
    method = ToG({"freebase": cwq_kg}, NoLLM())
    with pytest.raises(KgfedError, match="topics name KG wikidata"):
        await method.answer("q?", {"wikidata": {"Q1": "x"}})
    with pytest.raises(KgfedError, match="topic 'Q1'"):
        await method.answer("q?", {"freebase": {"Q1": "x"}})


@pytest.mark.parametrize("direction", ["out", "in"])
def test_a_chain_names_its_first_edge_from_the_topic_only_where_the_kg_gave_no_name(direction):
    from dataclasses import replace

    from kgfed.engine.kg.model import Edge
    from kgfed.engine.methods.tog import Chain

    origin = "subject_label" if direction == "out" else "object_label"
    bare = Edge("fb", "m.0a", "p.q.r", "m.0b", direction, None, "r label", None, ("m.cvt",), False)
    named = Chain("fb", "m.0a", "Topic").extend(bare, 0.5)
    assert named.edges == (replace(bare, **{origin: "Topic"}),) and named.score == 0.5 and named.entity == bare.entity
    kept = replace(bare, **{origin: "KG name"})
    assert Chain("fb", "m.0a", "Topic").extend(kept, 1.0).edges == (kept,)
    assert named.extend(bare, 0.2).edges[1] is bare  # later edges are kept as the KG gave them


async def test_the_llm_prompts_of_a_step_overlap(cwq_kg):
    """Relation pruning of the two topic entities asks the LLM for both at once (LLM-free scoring runs
    chain after chain: it is CPU work, which the questions in flight already overlap)."""
    import asyncio

    class Overlapping(ReplayLLM):
        in_flight = peak = 0

        async def complete(self, prompt, **kwargs):
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            try:
                await asyncio.sleep(0.01)
                return await super().complete(prompt, **kwargs)
            finally:
                self.in_flight -= 1

    llm = Overlapping(REPLIES)
    result = await ToG({"freebase": cwq_kg}, llm).answer(GUATEMALA, {"freebase": CWQ_TOPICS})
    assert result.answer == "Guatemala" and llm.peak == 2
