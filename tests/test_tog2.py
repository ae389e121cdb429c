"""ToG-2 end to end: demo KG + demo extracts and an AdvHotpotQA question with its paragraphs; replay and LLM-free."""
from __future__ import annotations

import pytest

from kgfed.endpoints.embedded import EmbeddedEndpoint
from kgfed.engine.text.context import open_text_source
from kgfed.engine.harness.datasets import load_dataset
from kgfed.engine.kg import KG
from kgfed.engine.toolbox.llm import NoLLM, ReplayLLM
from kgfed.engine.methods import get_method
from kgfed.engine.methods.tog2 import ToG2
from kgfed.engine.toolbox.prompts import TOG2_REASONING_PROMPT, tog2_reasoning_prompt
from kgfed.sparql.dialects import WIKIDATA
from kgfed.sparql.errors import KgfedError

from .conftest import FED_DIR, ROOT, SHARED, need
from .replies import assert_llm_cost
from .recordings.llm.record_tog import ADAMS, DEMO_NT, EINSTEIN, ROVELLI

REPLIES = ROOT / "tests" / "recordings" / "llm" / "tog2"


@pytest.fixture(scope="session")
def demo_store():
    import pyoxigraph as ox

    store = ox.Store()
    store.bulk_load(path=str(DEMO_NT), format=ox.RdfFormat.N_TRIPLES)
    return store


@pytest.fixture
def demo_kg(demo_store):
    return KG(EmbeddedEndpoint(store=demo_store), WIKIDATA, name="wikidata", cache=None)


@pytest.fixture
def embedder(tmp_path):
    from kgfed.engine.toolbox.embeddings import Embedder

    return Embedder(tmp_path / "emb")


def test_registry_and_prompt_shape():
    assert get_method("tog2") is ToG2
    prompt = tog2_reasoning_prompt("Q?", "", [([("A", "r", "B")], ["B is a town."]), ((), ["Other text."])])
    assert prompt.startswith(TOG2_REASONING_PROMPT) and prompt.endswith("\nAnswer:")
    case = prompt[len(TOG2_REASONING_PROMPT):]
    assert case == ("Question:\nQ?\n(Clues):\nNone\n(Knowledge triplets):\nA, r, B\n(Triplet's related context):\nB is a town.\n"
                    "(Knowledge triplets):\nNone\n(Triplet's related context):\nOther text.\nAnswer:")


async def test_text_then_kg_then_answer(demo_kg):
    """Round 0: the topic's page names only a college ({No} + clue); round 1: the KG hop to the university,
    its page ranked by context, {Yes}."""
    result = await ToG2({"wikidata": demo_kg}, ReplayLLM(REPLIES), text=open_text_source("demo")).answer(
        ADAMS, {"wikidata": {"Q42": "Douglas Adams"}})
    assert result.answer == "University of Cambridge" and result.answer_ids == ["Q35794"]
    assert [(e.relation, e.entity) for e in result.paths[0]] == [("P69", "Q35794")]
    assert result.extra["stop"] == "sufficient at depth 1"
    assert result.extra["clues"] == "Douglas Adams studied at St John's College, Cambridge"
    # context-guided pruning: the candidate with a document outranks those without one
    scores = {c["path"]: c["score"] for c in result.extra["chains"]}
    assert scores["Douglas Adams -[educated at]-> University of Cambridge"] > 100 * scores["Douglas Adams -[educated at]-> St John's College"]
    assert [p["title"] for p in result.extra["passages"]] == ["University of Cambridge"]
    assert "Its alumni include Charles Darwin, Douglas Adams" in result.extra["passages"][0]["text"]
    assert_llm_cost(result, REPLIES, ADAMS)
    assert result.cost["sparql_queries"] > 0


async def test_odd_replies_and_the_fallback_answer(demo_kg):
    """JSON relation scores are read; a reasoning reply without braces is {No}; after depth 1, ToG's own answer."""
    result = await ToG2({"wikidata": demo_kg}, ReplayLLM(REPLIES), text=open_text_source("demo"), depth=1).answer(
        EINSTEIN, {"wikidata": {"Q937": "Albert Einstein"}})
    assert result.answer == "Princeton" and result.answer_ids == ["Q138518"]
    assert result.extra["stop"] == "depth 1 reached; answered without the graph"
    assert [(e.relation, e.label) for e in result.paths[0]] == [("P20", "Princeton")]
    assert "clues" not in result.extra  # nothing braced in the odd replies
    assert_llm_cost(result, REPLIES, EINSTEIN)


async def test_advhotpotqa_question_with_its_paragraphs(tmp_path):
    from bench.tog_eval import paragraph_source

    [question] = [q for q in load_dataset(need(SHARED / "questions" / "hotpotadv.json")) if q.text == ROVELLI]
    async with KG.open(f"file:{need(FED_DIR / 'wikidata.nt')}", dialect="wikidata", name="wikidata", cache=False) as kg:
        result = await ToG2({"wikidata": kg}, ReplayLLM(REPLIES), text=paragraph_source(question, tmp_path), depth=1).answer(
            question.text, {"wikidata": question.topics["wikidata"]})
    assert result.answer in question.answers  # "2000", from the fallback after {No}
    assert result.extra["clues"] == "the author is an Italian physicist working in France"
    assert {p[0].origin for p in result.paths} == {"Q38", "Q142"}  # Italy and France, explored in the KG
    titles = {p["title"] for p in result.extra["passages"]}
    assert "Seven Brief Lessons on Physics" in titles or not result.extra["passages"]
    assert_llm_cost(result, REPLIES, ROVELLI)


async def test_llm_free_uses_context_scores(demo_kg, embedder):
    result = await ToG2({"wikidata": demo_kg}, NoLLM(), embedder=embedder, text=open_text_source("demo")).answer(
        ADAMS, {"wikidata": {"Q42": "Douglas Adams"}})
    assert result.answer == "University of Cambridge" and result.answer_ids == ["Q35794"]
    assert result.cost.get("llm_calls", 0) == 0
    assert result.extra["passages"] and all(p["score"] > 0 for p in result.extra["passages"])


async def test_llm_free_on_the_demo_questions(demo_kg, embedder):
    """Every demo question whose answer has a page: LLM-free ToG-2 answers most of them exactly."""
    questions = [q for q in load_dataset(need(ROOT / "engine" / "data" / "demo_questions.jsonl"))][:6]
    method = ToG2({"wikidata": demo_kg}, NoLLM(), embedder=embedder, text=open_text_source("demo"))
    right = 0
    for q in questions:
        result = await method.answer(q.text, {"wikidata": q.topics["wikidata"]})
        right += result.answer in q.answers
    assert right >= 4


async def test_without_text_it_runs_on_the_kg_and_says_so(demo_kg, embedder):
    result = await ToG2({"wikidata": demo_kg}, NoLLM(), embedder=embedder).answer(ADAMS, {"wikidata": {"Q42": "Douglas Adams"}})
    assert result.extra["warnings"][0].startswith("no text source")
    assert result.extra["passages"] == [] and result.cost.get("entity_pages", 0) == 0
    assert result.answer and result.paths


def test_bad_parameters(demo_kg):
    with pytest.raises(KgfedError, match="invalid parameter top_k=0 for tog2: expected a value ≥ 1"):
        ToG2({"wikidata": demo_kg}, NoLLM(), text=open_text_source("demo"), top_k=0)
