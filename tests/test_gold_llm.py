"""The gold-guided stand-in (`--llm gold`, `toolbox.gold_llm`): every prompt kind, its formats, what it may say.

Replies are read back with the methods' own parsers (`toolbox.prompts`), over real prompts rendered by the
methods' renderers; the KG is the embedded CWQ subgraph.
"""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from kgfed.cache.costs import track
from kgfed.engine.harness.datasets import load_dataset
from kgfed.engine.config import CacheOptions, KGSpec
from kgfed.engine.harness.runner import RunSpec, run
from kgfed.engine.kg import KG
from kgfed.engine.toolbox import gold_llm, prompts as P
from kgfed.engine.toolbox.gold_llm import GoldLLM, kind_of
from kgfed.engine.toolbox.llm import make_llm
from kgfed.sparql.errors import LLMError

from .conftest import CWQ_NT, CWQ_QUESTIONS, FED_DIR, need

# CWQ question 0: "Which nation has the Alta Verapaz Department and is in Central America?" -> Guatemala (m.0345_)
Q0 = "Which nation has the Alta Verapaz Department and is in Central America?"


@pytest.fixture(scope="module")
def questions():
    return load_dataset(need(CWQ_QUESTIONS))


def stand_in(questions, kg=None) -> GoldLLM:
    llm = GoldLLM(questions)
    if kg is not None:
        llm.bind({"freebase": kg})
    return llm


async def reply(llm: GoldLLM, prompt: str) -> str:
    return (await llm.complete(prompt, temperature=0.0)).text


def test_every_prompt_kind_of_the_six_methods_is_known():
    analysis = "Thinking Cot: x"
    rendered = {
        "tog-relations": P.tog_relation_prompt(Q0, "Central America", ["a.b.c", "d.e.f"]),
        "tog-entities": P.tog_entity_prompt(Q0, "a.b.c", ["X", "Y"]),
        "tog-evaluate": P.tog_evaluate_prompt(Q0, [("A", "r", "B")]),
        "tog-evaluate-wiki": P.tog_evaluate_prompt(Q0, [("A", "r", "B")], wiki=True),
        "tog-answer": P.tog_answer_prompt(Q0, [("A", "r", "B")]),
        "tog-direct": P.tog_generate_directly_prompt(Q0),
        "tog2-reasoning": P.tog2_reasoning_prompt(Q0, "", [([("A", "r", "B")], ["text"])]),
        "pog-analysis": P.pog_question_analysis_prompt(Q0, {"m.01tzh": "Central America"}),
        "pog-select": P.pog_path_select_prompt(Q0, analysis, ["{A} - { -> r ->} - {B}"]),
        "pog-edges": P.pog_edge_select_prompt(Q0, analysis, ["p"], ["e"]),
        "pog-supplement": P.POG_SUPPLEMENT_PROMPT + f"\nQ: {Q0}\n",
        "pog-summary": P.POG_SUMMARY_PROMPT + f"\nQ: {Q0}\nRelated Paths:\nPath 1: x\nA:",
        "pog-evaluate": P.POG_EVALUATE_PROMPT + f"\nQ: {Q0}\nRelated Paths:\nPath 1: x\nA:",
        "pog-generate": P.POG_GENERATE_PROMPT + f"\nQ: {Q0}\nRelated Paths:\nPath 1: x\nA:",
        "hydra-source": P.HYDRA_SOURCE_SELECT_PROMPT + f"\nQ: {Q0}\nProvided sources: KG, Wiki\n",
        "hydra-refine": P.HYDRA_REFINE_PROMPT + f"\nQ: {Q0}\n",
        "inses-entities": P.INSES_EXTRACT_ENTITIES_PROMPT.format(query=Q0),
        "inses-navigate": P.INSES_NAVIGATION_PROMPT.format(query=Q0, visited="", selected="", current="", adjacent=""),
        "inses-answer": P.INSES_ANSWER_PROMPT.format(query=Q0, context=""),
        "inses-rag": P.INSES_RAG_PROMPT.format(query=Q0, context=""),
        "inses-router": P.INSES_ROUTER_PROMPT.format(query=Q0),
        "proh-plan": P.PROH_PLAN_PROMPT.format(question=Q0, topics="", context=""),
        "proh-refine": P.PROH_REFINE_PROMPT.format(question=Q0, answered="", open=""),
        "proh-score": P.PROH_SCORE_PROMPT.format(question=Q0, entities=""),
        "proh-directions": P.PROH_DIRECTIONS_PROMPT.format(b=3, question=Q0, paths=""),
        "proh-paths": P.PROH_PATHS_PROMPT.format(question=Q0, paths=""),
        "proh-step": P.PROH_STEP_PROMPT.format(question=Q0, context=""),
        "proh-final": P.PROH_FINAL_PROMPT.format(question=Q0, steps=""),
        "proh-judge": P.PROH_JUDGE_PROMPT.format(question=Q0, candidates=""),
    }
    assert {kind: kind_of(prompt) for kind, prompt in rendered.items()} == {k: k for k in rendered}
    with pytest.raises(LLMError, match="does not know this prompt"):
        kind_of("Translate this into French: " + Q0)


def test_the_question_is_found_exactly_then_normalised(questions):
    llm = stand_in(questions)
    assert llm.gold_for("…Q: " + Q0 + "\nTopic Entity: x").text == Q0
    assert llm.gold_for("question: which NATION has the alta verapaz department, and is in central america").text == Q0
    with pytest.raises(LLMError, match="names none of the 538 questions"):
        llm.gold_for("Q: Who wrote Hamlet?")


def test_a_file_without_gold_is_a_one_line_error(tmp_path):
    plain = tmp_path / "webquestions.json"
    plain.write_text(json.dumps([{"question": "who wrote hamlet?", "answers": []}]))
    with pytest.raises(LLMError, match="has no gold answers") as err:
        GoldLLM.from_file(str(plain))
    assert "\n" not in str(err.value)
    with pytest.raises(LLMError, match="needs the run's question file"):
        make_llm("gold")
    done = subprocess.run([sys.executable, "-m", "kgfed.engine.cli", "run", str(plain), "--kg", "freebase",
                           "--endpoint", f"freebase=file:{need(CWQ_NT)}", "--llm", "gold", "--out", str(tmp_path / "p.jsonl"),
                           "--no-progress"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "has no gold answers" in done.stderr


def test_replies_parse_and_follow_the_gold(questions):
    async def main():
        async with KG.open(f"file:{need(CWQ_NT)}", dialect="freebase") as kg:
            llm = stand_in(questions, kg)
            relations = ["location.location.contains", "location.location.time_zones", "common.topic.notable_types",
                         "location.location.people_born_here"]
            text = await reply(llm, P.tog_relation_prompt(Q0, "Central America", relations))
            scored = P.parse_relation_scores(text, relations)
            assert {r for r, s in scored if s > 0} == {"location.location.contains", "common.topic.notable_types"}
            text = await reply(llm, P.tog_entity_prompt(Q0, "location.location.contains", ["Belize", "Guatemala", "Panama"]))
            assert P.parse_entity_scores(text, ["Belize", "Guatemala", "Panama"]) == [0.0, 1.0, 0.0]
            # sufficiency only when a gold answer is a whole element of the triplets shown
            shown = [("Central America", "location.location.contains", "Guatemala")]
            yes = await reply(llm, P.tog_evaluate_prompt(Q0, shown))
            assert P.parse_sufficient(yes) and P.extract_answer(yes) == "Guatemala"
            for triples in ([("Central America", "location.location.contains", "Belize")],
                            [("Central America", "location.location.contains", "Guatemala Department")]):
                no = await reply(llm, P.tog_evaluate_prompt(Q0, triples))
                assert not P.parse_sufficient(no) and "Guatemala" not in no.replace(Q0, "")
            direct = await reply(llm, P.tog_generate_directly_prompt(Q0))
            assert P.extract_answer(direct) == "Unknown"
            # PoG: analysis without the answer, path choice by the gold relations
            analysis = P.parse_question_analysis(await reply(llm, P.pog_question_analysis_prompt(
                Q0, {"m.01tzh": "Central America", "m.0146np": "Alta Verapaz Department"})))
            assert analysis.split_questions and "location contains" in analysis.indicator and "Guatemala" not in analysis.raw
            paths = ["{Central America} - { -> location.location.time_zones ->} - {Central Time Zone}",
                     "{Central America} - { -> location.location.contains ->} - {Belize, Guatemala}",
                     "{Alta Verapaz Department} - { -> location.location.people_born_here ->} - {Someone}"]
            picked = P.parse_path_selection(await reply(llm, P.pog_path_select_prompt(Q0, "", paths)), 3)
            assert picked[0] == 1
            # ToG-2: a clue without the answer, then {Yes} once a passage names it
            no = await reply(llm, P.tog2_reasoning_prompt(Q0, "", [([("Central America", "contains", "Belize")], ["Belize is a country."])]))
            assert not P.parse_sufficient(no) and P.extract_answer(no) and "Guatemala" not in no
            yes = await reply(llm, P.tog2_reasoning_prompt(Q0, "", [([], ["Guatemala is a country in Central America."])]))
            assert P.parse_sufficient(yes) and P.extract_answer(yes) == "Guatemala"
            # JSON kinds
            nav = json.loads(await reply(llm, P.INSES_NAVIGATION_PROMPT.format(
                query=Q0, visited="none", selected="none", current="Central America",
                adjacent="1. (Central America, location.location.time_zones, Central Time Zone)\n"
                         "2. (Central America, location.location.contains, Guatemala)")))
            assert nav == {"determination": "sufficient", "selection": "2"}
            final = json.loads(await reply(llm, P.PROH_FINAL_PROMPT.format(question=Q0, steps="1. q -> Belize")))
            assert final["answer"] == "Unknown"

    asyncio.run(main())


def test_calls_and_tokens_are_counted_as_for_any_provider(questions):
    llm = stand_in(questions)
    prompt = P.tog_generate_directly_prompt(Q0)

    async def main():
        with track() as cost:
            first = await llm.complete(prompt, temperature=0.0, system=P.TOG_SYSTEM)
            await llm.complete(prompt, temperature=0.0)
        return first, cost

    first, cost = asyncio.run(main())
    assert first.input_tokens == gold_llm.tokens(prompt) + gold_llm.tokens(P.TOG_SYSTEM) and first.output_tokens > 0
    assert cost["llm_calls"] == 2 == llm.usage.calls
    assert cost["input_tokens"] == llm.usage.input_tokens == 2 * gold_llm.tokens(prompt) + gold_llm.tokens(P.TOG_SYSTEM)


def test_the_gold_query_is_run_outside_the_question_costs(questions):
    async def main():
        async with KG.open(f"file:{need(CWQ_NT)}", dialect="freebase") as kg:
            llm = stand_in(questions, kg)
            with track() as cost:
                gold = await llm.resolve(llm.gold_for(Q0))
            return gold, cost

    gold, cost = asyncio.run(main())
    assert gold.bound["x"] == {"m.0345_"} and gold.labels["m.0345_"] == "Guatemala"
    assert "Guatemala" in gold.answer_names and "location.location.contains" in gold.relations
    assert not cost.get("sparql_queries")


def test_federation_gold_relations_and_labels():
    questions = load_dataset(need(FED_DIR / "questions.jsonl"))
    bieber = next(q for q in questions if q.id == "WebQTest-827")

    async def main():
        async with KG.open(f"file:{FED_DIR / 'wikidata.nt'}", dialect="wikidata") as wd:
            llm = GoldLLM(questions)
            llm.bind({"wikidata": wd})
            return await llm.resolve(llm.gold_for(bieber.text))

    gold = asyncio.run(main())
    assert gold.relation_score("people.person.places_lived|people.place_lived.location") == 1.0
    assert gold.relation_score("P27") == 1.0 and gold.relation_score("P19") == 0.0
    assert gold.relation_score(gold.labels["P27"]) == 1.0 and gold.labels["Q16"] == "Canada"


def test_tog_with_the_stand_in_and_without_the_answers_triples(tmp_path, questions):
    """The stand-in names only answers the evidence shows: with every triple of the gold answers removed
    from the KG, ToG answers at most 1 in 10 right (the same questions score high on the full KG)."""
    sample = questions[:30]
    mids = {f"<http://rdf.freebase.com/ns/{m}>" for q in sample for ids in q.answer_ids.values() for m in ids}
    pruned = tmp_path / "without_answers.nt"
    with open(need(CWQ_NT), encoding="utf-8") as source, open(pruned, "w", encoding="utf-8") as out:
        out.writelines(line for line in source if not any(m in line for m in mids))
    spec = lambda nt: RunSpec("tog", {}, kgs=(KGSpec("freebase", f"file:{nt}"),),  # noqa: E731
                              cache=CacheOptions(root=str(tmp_path / "cache")), llm=f"gold:{CWQ_QUESTIONS}")
    full = asyncio.run(run(spec(CWQ_NT), sample, tmp_path / "full.jsonl", progress=False))
    gone = asyncio.run(run(spec(pruned), sample, tmp_path / "gone.jsonl", progress=False))
    assert full["strict"] >= 0.85 and gone["hits@1"] <= 0.1 and gone["strict"] <= 0.1
    assert full["cost"].get("parse_fallbacks", 0) == 0 == gone["cost"].get("parse_fallbacks", 0)
