"""Pruning: BM25/SBERT on real Freebase relations, LLM scoring from recorded replies, PoG's four strategies."""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pytest

from kgfed.engine.toolbox.embeddings import Embedder
from kgfed.engine.toolbox.llm import EXPLORATION_TEMPERATURE, NoLLM, ReplayLLM
from kgfed.engine.toolbox.pruning import (
    POG_STRATEGIES, PathBeam, PruneSettings, _Path, bm25_scores, pog_prune_paths, relation_text, score_entities,
    score_paths, score_relations,
)
from kgfed.sparql.errors import KgfedError

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
CWQ_NT = SHARED / "freebase" / "cwq_subgraph.nt"
REPLAY = Path(__file__).parent / "recordings" / "llm" / "replay"

QUESTION = "Which nation has the Alta Verapaz Department and is in Central America?"
ALTA_VERAPAZ_RELATIONS = [  # every relation of m.0146np in the CWQ subgraph but type.object.name, as the KG lists them
    "location.location.containedby", "location.administrative_division.country", "location.location.contains",
    "base.aareas.schema.administrative_area.administrative_parent", "location.country.administrative_divisions",
    "base.aareas.schema.administrative_area.administrative_children", "location.location.containedby",
]
POG_QUESTION = "What country bordering France contains an airport that serves Nijmegen?"
POG_INDICATOR = '"Nijmegen" - service by - airport - owned by - answer(country) - border with - "France"'
POG_ANALYSIS = ("Thinking Cot:  " + POG_INDICATOR + "\nsplit_question1: What country contains an airport that serves "
                '"Nijmegen"?\nsplit_question2: What country bordering "France"?')
NIJ, FR = "{m.05g2b: Nijmegen}", "{m.0f8l9c: France}"
POG_PATHS = [  # PoG's own rendering: {entities} - {relations} - {entities} ...
    f"{NIJ} - {{ -> location.location.nearby_airports ->}} - {{m.06cm5d: Weeze Airport}} - {{ -> location.location.containedby ->}} - {{m.0345h: Germany}} - {{ -> location.location.adjoin_s ->}} - {FR}",
    f"{NIJ} - {{ -> location.location.containedby ->}} - {{m.059j2: Netherlands}} - {{ -> location.location.containedby ->}} - {{m.02j9z: Europe}} - {{ -> location.location.contains ->}} - {FR}",
    f"{NIJ} - {{ -> location.location.nearby_airports ->}} - {{m.0j7ng: Düsseldorf Airport}} - {{ -> location.location.containedby ->}} - {{m.0345h: Germany}} - {{ -> location.location.adjoin_s ->}} - {FR}",
    f"{NIJ} - {{ -> location.location.containedby ->}} - {{m.059j2: Netherlands}} - {{ -> location.location.adjoin_s ->}} - {{m.0154j: Belgium}} - {{ -> location.location.adjoin_s ->}} - {FR}",
    f"{NIJ} - {{ <- geography.river.cities <-}} - {{m.06fz_: Rhine}} - {{ -> location.location.partially_containedby ->}} - {{m.0345h: Germany}} - {{ -> location.location.adjoin_s ->}} - {FR}",
    f"{NIJ} - {{ <- geography.river.cities <-}} - {{m.06fz_: Rhine}} - {{ -> geography.river.basin_countries ->}} - {FR}",
    f"{NIJ} - {{ -> location.location.time_zones ->}} - {{m.02llzg: Central European Time Zone}} - {{ <- location.location.time_zones <-}} - {FR}",
]


@lru_cache(maxsize=1)
def cwq_relations() -> tuple[str, ...]:
    """Every Freebase relation used in the shared CWQ subgraph (773 of them)."""
    if not CWQ_NT.exists():
        pytest.skip(f"shared fixture {CWQ_NT} is absent (expected ../shared/data beside the project)")
    text = CWQ_NT.read_text(encoding="utf-8")
    return tuple(sorted(set(re.findall(r"^\S+ <http://rdf\.freebase\.com/ns/([a-z][\w.]*)>", text, re.M))))


@pytest.fixture(scope="module")
def embedder(tmp_path_factory):
    return Embedder(cache=tmp_path_factory.mktemp("emb"))


def test_relation_text_and_bm25_basics():
    assert relation_text("people.person.place_of_birth") == "people person place of birth"
    assert relation_text("people.person.education|education.education.institution") == "people person education education education institution"
    assert bm25_scores("anything", []) == [] and bm25_scores("the of", ["film film starring"]) == [0.0]


async def test_bm25_on_real_freebase_relations():
    relations = cwq_relations()
    assert len(relations) > 500 and "location.country.administrative_divisions" in relations
    top = await score_relations("What form of government is used in the governmental jurisdiction that includes the Cabinet of Israel?",
                                relations, PruneSettings(method="bm25", width=3))
    assert top[0][0] == "government.governmental_jurisdiction.government" and top[0][1] > top[2][1] > 0
    zone = await score_relations("What time zone is the area where newspaper Ke Klahea is circulated in?", relations,
                                 PruneSettings(method="bm25", width=1))
    assert zone[0][0] == "time.time_zone.locations_in_this_time_zone"
    nothing = await score_relations("Who?", relations[:4], PruneSettings(method="bm25", width=4))  # no shared word: ToG's equal shares
    assert [s for _, s in nothing] == [0.25] * 4 and [r for r, _ in nothing] == list(relations[:4])


@pytest.mark.embeddings
async def test_sbert_ranks_real_relations_and_is_the_llm_free_fallback(embedder):
    relations = cwq_relations()
    question = "Which nation has the Alta Verapaz Department?"
    ranked = [r for r, _ in await score_relations(question, relations, PruneSettings(method="sbert", embedder=embedder, width=None))]
    assert ranked.index("location.country.administrative_divisions") < 3  # measured: 2nd of 773
    assert ranked.index("location.country.administrative_divisions") < ranked.index("film.film.starring") - 400
    fallback = await score_relations(question, relations, PruneSettings(method="llm", llm=NoLLM(), embedder=embedder, width=5))
    assert [r for r, _ in fallback] == ranked[:5]
    entities = await score_entities(question, ["film director", "Guatemala", "Kenyan shilling"], PruneSettings(embedder=embedder))
    assert [name for name, _ in entities] == ["film director", "Guatemala", "Kenyan shilling"]  # input order kept
    assert max(entities, key=lambda p: p[1])[0] == "Guatemala" and sum(s for _, s in entities) == pytest.approx(1.0)


# -- LLM scoring from recorded replies (hand-written, see docs/llm.md) ------------------------------
@pytest.fixture
def replay():
    return ReplayLLM(REPLAY)


async def test_llm_relation_scoring_replays_tog_prompt(replay):
    scoring = PruneSettings(method="llm", llm=replay, width=2, temperature=EXPLORATION_TEMPERATURE)
    top = await score_relations(QUESTION, ALTA_VERAPAZ_RELATIONS, scoring, entity="Alta Verapaz Department")
    # the recorded reply has prose, wrong case and a relation that was not offered (film.film.starring)
    assert top == [("location.administrative_division.country", 0.7), ("location.location.containedby", 0.2)]
    assert replay.stats["hits"] == 1 and replay.usage.calls == 1


async def test_llm_entity_scoring_maps_sorted_prompt_back(replay):
    scoring = PruneSettings(method="llm", llm=replay, temperature=EXPLORATION_TEMPERATURE)
    scored = await score_entities(QUESTION, ["Guatemala", "Central America", "Americas"], scoring,
                                  relation="location.location.containedby")
    assert scored == [("Guatemala", pytest.approx(0.9)), ("Central America", 0.0), ("Americas", pytest.approx(0.1))]
    assert await score_entities(QUESTION, ["Guatemala"], PruneSettings(llm=replay)) == [("Guatemala", 1.0)]  # no call
    assert replay.usage.calls == 1


async def test_llm_path_scoring_is_pog_precise_selection(replay):
    scored = await score_paths(POG_QUESTION, POG_PATHS, PruneSettings(method="llm", llm=replay, width=3), analysis=POG_ANALYSIS)
    assert [POG_PATHS.index(p) for p, _ in scored] == [0, 2, 4] and [s for _, s in scored] == pytest.approx([1, 1 / 2, 1 / 3])


@pytest.mark.parametrize("strategy, calls", [("fuzzy+precise", 2), ("fuzzy+branch", 2), ("fuzzy+branch+precise", 3)])
async def test_pog_strategies_with_recorded_llm(replay, strategy, calls):
    kept = await pog_prune_paths(POG_QUESTION, POG_PATHS, PruneSettings(llm=replay), PathBeam(strategy, 2, w1=80, w2=4, max_depth=3),
                                 indicator=POG_INDICATOR, analysis=POG_ANALYSIS)
    assert kept == [0, 2]  # Nijmegen → Weeze / Düsseldorf airport → Germany → France
    assert replay.usage.calls == calls and replay.stats["misses"] == 0


@pytest.mark.embeddings
@pytest.mark.parametrize("strategy", POG_STRATEGIES)
async def test_pog_strategies_llm_free(strategy, embedder):
    kept = await pog_prune_paths(POG_QUESTION, POG_PATHS, PruneSettings(llm=NoLLM(), embedder=embedder),
                                 PathBeam(strategy, 2, w1=6, w2=4), indicator=POG_INDICATOR)
    assert len(kept) == 2 and len(set(kept)) == 2 and all(0 <= i < len(POG_PATHS) for i in kept)
    fuzzy = await pog_prune_paths(POG_QUESTION, POG_PATHS, PruneSettings(embedder=embedder), PathBeam("fuzzy", 7),
                                  indicator=POG_INDICATOR)
    assert sorted(fuzzy) == list(range(7)) and kept[0] in fuzzy[:4]


def test_paths_split_into_items_and_prefixes():
    pog = _Path.of(POG_PATHS[5])
    assert pog.items == (NIJ, "{ <- geography.river.cities <-}", "{m.06fz_: Rhine}", "{ -> geography.river.basin_countries ->}", FR)
    assert pog.segment("m.05g2b", 1) == NIJ + " - { <- geography.river.cities <-} - {m.06fz_: Rhine}"
    assert pog.segment("m.0f8l9c", 1) == "{m.06fz_: Rhine} - { -> geography.river.basin_countries ->} - " + FR
    assert pog.segment("Rhine", 1) == "{m.06fz_: Rhine} - { -> geography.river.basin_countries ->} - " + FR
    assert pog.segment("m.0345h", 1) is None
    kgfed = _Path.of("Alta Verapaz Department -[location.administrative_division.country]-> Guatemala <-[location.location.contains]- Central America")
    assert kgfed.items == ("Alta Verapaz Department", "-[location.administrative_division.country]->", "Guatemala",
                           "<-[location.location.contains]-", "Central America")
    assert kgfed.segment("Alta Verapaz Department", 1) == "Alta Verapaz Department -[location.administrative_division.country]-> Guatemala"
    assert _Path.of(["a", "r", "b"]).text == "a - r - b"


async def test_bad_method_and_strategy_are_clear_errors():
    with pytest.raises(KgfedError, match="unknown scoring method 'tfidf'"):
        await score_relations("q", ["a.b.c"], PruneSettings(method="tfidf"))  # type: ignore[arg-type]
    with pytest.raises(KgfedError, match="unknown PoG pruning strategy 'greedy'"):
        await pog_prune_paths("q", ["a"], beam=PathBeam("greedy"))
    assert await score_relations("q", [], PruneSettings(method="llm")) == [] and await score_paths("q", []) == []


async def test_the_old_loose_keywords_are_gone_in_0_3():
    with pytest.raises(TypeError, match="unexpected keyword argument '(method|width)'"):
        await score_relations("q", ["a.b.c"], method="bm25", width=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'strategy'"):
        await pog_prune_paths("q", ["a"], strategy="fuzzy")  # type: ignore[call-arg]
