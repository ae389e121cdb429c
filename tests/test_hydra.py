"""HydraRAG: the cross-source score on hand-computed values, LLM-free answers on the merged Freebase +
Wikidata fixture (one node holding both ids), text and web evidence, hand-written recorded replies."""
from __future__ import annotations

import json
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from kgfed.endpoints.wikipedia import JsonlSource
from kgfed.engine.harness.datasets import load_dataset
from kgfed.engine.kg import KG
from kgfed.engine.toolbox.llm import NoLLM, ReplayLLM
from kgfed.engine.methods import get_method
from kgfed.engine.methods.hydra import LLM_FREE_POOL, HydraRAG, WebDoc, cross_score, jaccard
from kgfed.engine.methods.pog import FUZZY_POOL
from kgfed.sparql.errors import KgfedError

from .conftest import FED_DIR, SHARED, need

REPLIES = Path(__file__).parent / "recordings" / "llm" / "hydra" / "replies"
EXTRACTS = SHARED / "wikipedia" / "extracts.jsonl"


@asynccontextmanager
async def fed(*names: str):
    async with KG.open(f"file:{need(FED_DIR / 'freebase.nt')}", dialect="freebase", name="freebase") as fb, \
            KG.open(f"file:{need(FED_DIR / 'wikidata.nt')}", dialect="wikidata", name="wikidata") as wd:
        both = {"freebase": fb, "wikidata": wd}
        yield {n: both[n] for n in names or both}


@pytest.fixture(scope="module")
def questions():
    return {q.id: q for q in load_dataset(need(FED_DIR / "questions.jsonl"))}


# -- the score -------------------------------------------------------------------------------------------
def test_cross_score_by_hand():
    # semantic 0.6; Topic = {1, 2}, Ent(p) = {1, 3, 4}: Jaccard = 1/4
    # s_rel = 0.7·0.6 + 0.3·0.25 = 0.495; f1 = 0.8 (Wiki); f2 = min(2, 3)/3; f3 = |{1, 3}|/3 = 2/3
    s = cross_score(0.6, {1, 2}, {1, 3, 4}, rho=0.8, supporting_sources=2, graph_entities={1, 3, 9},
                    alphas=(0.33, 0.33, 0.33))
    assert s.relevance == pytest.approx(0.495)
    assert (s.f1, s.f2, s.f3) == pytest.approx((0.8, 2 / 3, 2 / 3))
    assert s.verification == pytest.approx(0.33 * (0.8 + 4 / 3))            # 0.704
    assert s.cross == pytest.approx(0.7 * 0.495 + 0.3 * 0.704)              # 0.5577
    default = cross_score(0.6, {1, 2}, {1, 3, 4}, rho=0.8, supporting_sources=2, graph_entities={1, 3, 9})
    assert default.cross == pytest.approx(0.3465 + 0.3 * (0.8 + 4 / 3) / 3)  # alpha_k = 1/3: 0.55983


def test_cross_score_edges():
    kg = cross_score(1.0, {"a"}, {"a"}, rho=1.0, supporting_sources=5, graph_entities={"a"})
    assert (kg.relevance, kg.f2, kg.f3, kg.verification, kg.cross) == pytest.approx((1.0, 1.0, 1.0, 1.0, 1.0))
    empty = cross_score(0.0, {"a"}, set(), rho=0.7, supporting_sources=0, graph_entities={"a"}, lambda_sem=0.5, alpha_cross=0.0)
    assert (empty.relevance, empty.f3, empty.cross) == pytest.approx((0.0, 0.0, 0.7 / 3))
    assert jaccard([], []) == 0.0
    with pytest.raises(KgfedError, match="lambda_sem"):
        cross_score(0.5, {1}, {1}, rho=1.0, supporting_sources=1, graph_entities={1}, lambda_sem=1.5)
    with pytest.raises(KgfedError, match="alphas"):
        cross_score(0.5, {1}, {1}, rho=1.0, supporting_sources=1, graph_entities={1}, alphas=(0.5, 0.5))


# -- LLM-free --------------------------------------------------------------------------------------------
async def test_llm_free_merged_answer_holds_both_ids(questions):
    q = questions["WebQTest-827"]  # what country does justin bieber come from? -> Canada (m.0d060g / Q16)
    async with fed() as kgs:
        result = await HydraRAG(kgs, NoLLM()).answer(q.text, q.topics)
    assert result.answer == "Canada"
    assert sorted(result.answer_ids) == ["Q16", "m.0d060g"]  # one merged node, both ids
    assert {e.kg for p in result.paths for e in p} <= {"freebase", "wikidata"} and result.paths
    scores = result.extra["scores"]
    assert len(scores) == 3 and all(s["f1"] == 1.0 and s["f3"] == 1.0 for s in scores)
    assert scores == sorted(scores, key=lambda s: -s["cross"])
    assert result.cost["sparql_queries"] > 0 and result.cost.get("llm_calls", 0) == 0


async def test_llm_free_single_kg(questions):
    q = questions["WebQTest-827"]
    async with fed("wikidata") as kgs:
        result = await HydraRAG(kgs, NoLLM()).answer(q.text, {"wikidata": q.topics["wikidata"]})
    assert result.answer == "Canada" and result.answer_ids == ["Q16"]
    assert {e.kg for p in result.paths for e in p} == {"wikidata"}


async def test_text_and_web_sources_join_the_evidence(questions):
    q = questions["WebQTest-621"]  # what countries have german as the official language?

    class HandWrittenWeb:
        """A web-search provider replaying one hand-written result."""

        name = "hand-web"

        async def search(self, query, limit=3):
            return [WebDoc("German language", "https://example.org/german",
                           "German is the official language of Germany, Austria and Liechtenstein; the Duden sets its spelling.")]

    async with fed() as kgs:
        hydra = HydraRAG(kgs, NoLLM(), text=JsonlSource([need(EXTRACTS)]), web=HandWrittenWeb())
        graph, topics = await hydra.detect(q.topics)
        paths = await hydra.structured(graph, topics, 1, q.text, exact=False)
        texts = await hydra.unstructured(q.text, graph, topics, q.text, ["wikipedia", "web"])
        scored = await hydra.score(q.text, graph, paths + texts, topics)
        result = await hydra.answer(q.text, q.topics)
    assert {p.source for p in texts} == {"wikipedia", "web"}
    assert sum(p.source == "wikipedia" for p in texts) == 3  # top W_max passages of the German language page
    by_source = {p.source: s for p, s in scored}
    assert (by_source["kg"].f1, by_source["wikipedia"].f1, by_source["web"].f1) == (1.0, 0.8, 0.7)
    web = next(p for p in texts if p.source == "web")
    named = {graph.name(i) for i in web.entities if isinstance(i, int)}
    assert {"Austria", "Liechtenstein"} <= named  # Ent(p) of the web passage: G_q entities it names
    assert 0 < by_source["web"].f3 < 1  # ... and "Duden" is a mention G_q has no entity for
    assert result.extra["sources"] == ["kg", "wikipedia", "web"]
    assert result.answer in {"Austria", "Liechtenstein", "Germany", "Switzerland", "Belgium", "Luxembourg"}


async def test_relevance_pool_embeds_only_the_best_kg_paths_by_step_score(questions):
    q = questions["WebQTest-827"]  # what country does justin bieber come from?
    async with fed() as kgs:
        hydra = HydraRAG(kgs, NoLLM(), relevance_pool=5)
        graph, topics = await hydra.detect(q.topics)
        paths = await hydra.structured(graph, topics, 3, q.text, exact=False)
        text = hydra._text_path(graph, topics[0], "{Justin Bieber} -[wiki]-> \"born in London, Ontario\"", "wikipedia")
        kept = await hydra.relevance_candidates(q.text, graph, [*paths, text], topics)
        step = await hydra.step_scorer(q.text, graph)
        cheap = [0.7 * step(p) + 0.3 * jaccard(topics, p.nodes()) for p in paths]
        assert len(paths) > 5 and len(kept) == 6 and kept[-1] is text  # 5 KG paths, the text path kept
        assert min(cheap[paths.index(p)] for p in kept[:-1]) >= sorted(cheap, reverse=True)[4]
        everything = HydraRAG(kgs, NoLLM(), relevance_pool=0)  # the paper's Algorithm 4: every candidate
        assert await everything.relevance_candidates(q.text, graph, paths, topics) == paths
        by_w1 = HydraRAG(kgs, NoLLM(), w1=5)  # LLM-free, the default pool is 80 but at most W1 ...
        with_llm = HydraRAG(kgs, ReplayLLM(need(REPLIES)), w1=5)  # ... with an LLM, FUZZY_POOL·W1 (PoG's fuzzy_pool)
        pool_20 = HydraRAG(kgs, NoLLM(), relevance_pool=FUZZY_POOL * 5)
        with_llm_chosen = await with_llm.relevance_candidates(q.text, graph, paths, topics)
        assert len(with_llm_chosen) == FUZZY_POOL * 5 < len(paths)
        assert with_llm_chosen == await pool_20.relevance_candidates(q.text, graph, paths, topics)
        assert by_w1.params.relevance_pool is None
        assert await by_w1.relevance_candidates(q.text, graph, [*paths, text], topics) == kept
        assert LLM_FREE_POOL == 80 and HydraRAG(kgs, NoLLM()).params.w1 == 100 and len(paths) > 80, len(paths)
        by_default, pool_80 = HydraRAG(kgs, NoLLM()), HydraRAG(kgs, NoLLM(), relevance_pool=80)
        chosen = await by_default.relevance_candidates(q.text, graph, paths, topics)
        assert len(chosen) == 80 and chosen == await pool_80.relevance_candidates(q.text, graph, paths, topics)
        result = await hydra.answer(q.text, q.topics)
    assert result.answer == "Canada" and result.extra["candidates"] == len(paths)  # the pool limits embedding only


async def test_bad_web_provider_and_params():
    async with fed("wikidata") as kgs:
        with pytest.raises(KgfedError, match="WebSearch"):
            HydraRAG(kgs, NoLLM(), web="google")
        with pytest.raises(KgfedError, match="unknown hydra parameter"):
            HydraRAG(kgs, NoLLM(), beta=1)
        assert HydraRAG(kgs, NoLLM()).params.w1 == 100 and get_method("hydra") is HydraRAG


# -- recorded replies ------------------------------------------------------------------------------------
async def test_recorded_replies(questions):
    llm = ReplayLLM(need(REPLIES))
    expected = {"WebQTest-827": ("Canada", "Q16"), "WebQTest-1077": ("Russian", "Q7737")}
    async with fed() as kgs:
        for qid, (answer, qid_answer) in expected.items():
            q = questions[qid]
            calls = llm.usage.calls
            result = await HydraRAG(kgs, llm).answer(q.text, q.topics)
            assert result.answer == answer and qid_answer in result.answer_ids
            assert result.extra["phase"] == "initial" and result.extra["sources"] == ["kg"]
            assert any(answer in t for t in result.path_texts())
            assert result.cost["llm_calls"] == llm.usage.calls - calls >= 3
    recorded = [json.loads(p.read_text()) for p in REPLIES.glob("*.json")]
    assert llm.usage.input_tokens == sum(r["input_tokens"] for r in recorded)  # each recorded reply served once
