"""PRoH: EWO and its parts on hand-computed values, reasoning DAGs (Hasse reduction, levels, #k answers),
LLM-free (PRoH-L style) answers on the CWQ fixture, and recorded replies (tests/recordings/llm/proh,
hand-written by tests/recordings/llm/inses/record_inses_proh.py)."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from kgfed.engine.federation.hypergraph import Hypergraph
from kgfed.engine.harness.datasets import load_dataset
from kgfed.engine.kg import KG
from kgfed.engine.toolbox.gold_llm import GoldLLM
from kgfed.engine.toolbox.llm import LLM, Completion, NoLLM, ReplayLLM
from kgfed.engine.toolbox.prompts import PROH_FINAL_PROMPT, PROH_PLAN_PROMPT, PROH_SCORE_PROMPT
from kgfed.engine.methods import get_method
from kgfed.engine.methods.proh import CONTEXT, Dag, PRoH, combine, entity_weight, ewo, path_score

from .conftest import CWQ_NT, CWQ_QUESTIONS, FED_DIR, need

RECORDED = Path(__file__).parent / "recordings" / "llm" / "proh"


# -- EWO (Eqs. 4–6), by hand -------------------------------------------------------------------------------
def test_combine_is_the_mean_of_max_and_average_by_default():
    assert combine([0.8, 0.2]) == pytest.approx(0.5 * 0.8 + 0.5 * 0.5)  # 0.65
    assert combine([0.8, 0.2], alpha=1.0) == pytest.approx(0.8)           # max only
    assert combine([0.8, 0.2], alpha=0.0) == pytest.approx(0.5)           # mean only
    assert combine([0.3]) == pytest.approx(0.3)
    assert combine([]) == 0.0


def test_entity_weight_cuts_below_theta_and_prefers_the_llm_score():
    assert entity_weight(0.15, theta=0.2) == 0.0
    assert entity_weight(0.15, theta=0.2, llm_score=0.9) == 0.0  # the LLM is never asked below theta
    assert entity_weight(0.35, theta=0.2) == pytest.approx(0.35)  # PRoH-L: SE itself
    assert entity_weight(0.35, theta=0.2, llm_score=0.9) == pytest.approx(0.9)
    assert entity_weight(0.2, theta=0.2) == pytest.approx(0.2)  # at the threshold counts


def test_ewo_aggregates_only_the_overlap_and_sp_sums_distinct_entities():
    weights = {"Nintendo": 0.9, "Ubisoft": 0.3, "Mario": 0.0}
    # e and e' share Nintendo and Ubisoft: 0.5·0.9 + 0.5·0.6 = 0.75
    assert ewo({"Nintendo", "Ubisoft"}, weights) == pytest.approx(0.75)
    assert ewo({"Mario"}, weights) == 0.0
    assert ewo(set(), weights) == 0.0
    assert ewo({"unknown"}, weights) == 0.0
    # a path over {Nintendo, Mario} then {Nintendo, Ubisoft}: Nintendo counted once, 0.9 + 0.0 + 0.3
    assert path_score(["Nintendo", "Mario", "Nintendo", "Ubisoft"], weights) == pytest.approx(1.2)


# -- DAGs -----------------------------------------------------------------------------------------------------
def test_plan_is_hasse_reduced_and_levelled_and_answers_fill_later_questions():
    plan = {"subquestions": [
        {"id": 1, "question": "Which nation uses the South Korean won?", "depends_on": []},
        {"id": 2, "question": "What is the capital of #1?", "depends_on": [1]},
        {"id": 3, "question": "Which river flows through #2 in #1?", "depends_on": [1, 2]},
        {"id": 4, "question": "Who founded the Bank of Korea?", "depends_on": []},
    ]}
    dag = Dag.of(plan, "fallback")
    assert dag.edges == [(1, 2), (2, 3)]  # 1 → 3 is implied by 1 → 2 → 3
    assert dag.levels() == [[1, 4], [2], [3]]
    dag.answers[1] = ("South Korea", -1, [])
    assert dag.text(2) == "What is the capital of South Korea?"
    assert dag.text(3) == "Which river flows through #2 in South Korea?"


@pytest.mark.parametrize("plan", [
    {},
    {"subquestions": []},
    {"subquestions": [{"id": 1, "question": "a?", "depends_on": [2]}, {"id": 2, "question": "b?", "depends_on": [1]}]},
    {"subquestions": [{"id": 1, "question": "  "}]},
])
def test_unusable_plans_fall_back_to_the_question_itself(plan):
    dag = Dag.of(plan, "the question?")
    assert dag.questions == {1: "the question?"} and dag.levels() == [[1]]


# -- LLM-free on CWQ --------------------------------------------------------------------------------------------
def cwq(prefix: str) -> dict:
    for line in need(CWQ_NT.parent / "cwq_questions.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["question"].startswith(prefix):
            return record
    raise LookupError(prefix)


@pytest.mark.embeddings
async def test_llm_free_proh_answers_from_an_ewo_guided_path():
    q = cwq("Which nation has the Alta Verapaz Department")
    async with KG.open(f"file:{need(CWQ_NT)}", dialect="freebase", name="freebase", cache=False) as kg:
        result = await get_method("proh")({"freebase": kg}, NoLLM()).answer(q["question"], {"freebase": q["topic_entity"]})
    assert result.answer == "Guatemala" and result.answer_ids == q["answer_mids"]
    dag = result.extra["dags"][0]
    assert dag["subquestions"] == {1: q["question"]} and dag["answers"] == {1: "Guatemala"}
    assert result.paths[0][-1].entity == "m.0345_" and result.cost.get("llm_calls", 0) == 0
    assert result.cost["sparql_queries"] > 0 and result.extra["states"] == 2


# -- recorded replies ----------------------------------------------------------------------------------------------
@pytest.mark.embeddings
async def test_recorded_plan_of_two_steps_reaches_seoul_through_south_korea():
    llm = ReplayLLM(RECORDED)
    q = cwq("What is the capital city of the nation in which the monetary")
    async with KG.open(f"file:{need(CWQ_NT)}", dialect="freebase", name="freebase", cache=False) as kg:
        result = await PRoH({"freebase": kg}, llm, initial_plans=1, solutions=1).answer(q["question"], {"freebase": q["topic_entity"]})
    assert llm.stats["misses"] == 0
    assert result.answer == "Seoul" and result.answer_ids == ["m.0hsqf"]
    dag = result.extra["dags"][0]
    assert dag["levels"] == [[1], [2]] and dag["answers"] == {1: "South Korea", 2: "Seoul"}
    assert result.cost["llm_calls"] == llm.stats["hits"] and result.cost["input_tokens"] > 0


@pytest.mark.embeddings
async def test_recorded_replies_answer_federation_and_cwq_questions():
    llm = ReplayLLM(RECORDED)
    async with KG.open(f"file:{need(FED_DIR / 'freebase.nt')}", name="freebase", cache=False) as fb:
        bieber = await PRoH({"freebase": fb}, llm, initial_plans=1, solutions=1).answer(
            "what country does justin bieber come from?", {"freebase": {"m.06w2sn5": "Justin Bieber"}})
    q = cwq("Which nation has the Alta Verapaz Department")
    async with KG.open(f"file:{need(CWQ_NT)}", dialect="freebase", name="freebase", cache=False) as kg:
        alta = await PRoH({"freebase": kg}, llm, initial_plans=1, solutions=1).answer(q["question"], {"freebase": q["topic_entity"]})
    assert llm.stats["misses"] == 0
    assert bieber.answer == "Canada" and bieber.answer_ids == ["m.0d060g"]
    assert alta.answer == "Guatemala" and alta.extra["dags"][0]["answers"] == {1: "Guatemala", 2: "Guatemala"}


# -- LLM mode's engine time (issue 27 item 6) ----------------------------------------------------------------
class Watched(LLM):
    """The gold stand-in, each call noted (its prompt, how many calls were in flight when it started)."""

    def __init__(self, inner: GoldLLM):
        super().__init__("watched")
        self.inner = inner
        self.calls: list[tuple[str, int]] = []
        self.flight = 0

    def bind(self, kgs) -> None:
        self.inner.bind(kgs)

    async def _complete(self, prompt: str, *, temperature: float, max_tokens: int, system: str | None) -> Completion:
        self.flight += 1
        self.calls.append((prompt, self.flight))
        try:
            await asyncio.sleep(0.02)  # a reply takes a little while: calls made together overlap
            return await self.inner._complete(prompt, temperature=temperature, max_tokens=max_tokens, system=system)
        finally:
            self.flight -= 1

    def of(self, template: str) -> list[tuple[str, int]]:
        prefix = template.split("{", 1)[0]
        return [(p, f) for p, f in self.calls if p.startswith(prefix)]


@pytest.mark.embeddings
async def test_llm_mode_plans_from_what_it_shows_with_se_and_asks_independent_calls_together():
    questions = [q for q in load_dataset(need(CWQ_QUESTIONS)) if q.text.startswith("Which nation has the Alta Verapaz")]
    async with KG.open(f"file:{need(CWQ_NT)}", dialect="freebase", name="freebase", cache=False) as kg:
        llm = Watched(GoldLLM(questions))
        llm.bind({"freebase": kg})
        result = await PRoH({"freebase": kg}, llm).answer(questions[0].text, questions[0].topics)
    assert result.answer == "Guatemala"
    plans, scores, finals = llm.of(PROH_PLAN_PROMPT), llm.of(PROH_SCORE_PROMPT), llm.of(PROH_FINAL_PROMPT)
    assert len(plans) == 2 and len(finals) == 2  # n0 = K = 2
    # Algorithm 1 scores the plan context by SE: no entity-scoring call before the plans
    first_plan = next(i for i, (p, _) in enumerate(llm.calls) if p == plans[0][0])
    assert scores and all(llm.calls.index(s) > first_plan for s in scores)
    # each layer of the plan context is at most what the prompt shows, the anchors' most similar hyperedges first
    context = plans[0][0].split("(nearest first):", 1)[1].split("Your response", 1)[0]
    layers = [line.split("]", 1)[0] for line in context.splitlines() if line.startswith("[")]
    assert layers and max(layers.count(d) for d in set(layers)) <= CONTEXT and "[2" in " ".join(layers)
    # the n0 plans and the K final answers are asked together, not one after the other
    assert max(f for _, f in plans) == 2 and max(f for _, f in finals) == 2


@pytest.mark.embeddings
async def test_reanchoring_matches_targets_over_the_anchored_graph_not_over_later_fetches():
    q = cwq("Which nation has the Alta Verapaz Department")
    async with KG.open(f"file:{need(CWQ_NT)}", dialect="freebase", name="freebase", cache=False) as kg:
        method = PRoH({"freebase": kg}, NoLLM())
        hg = Hypergraph()
        seeds = [hg.add_node({"freebase": mid}, name, topic=True) for mid, name in q["topic_entity"].items()]
        topics, first = await method.anchor(q["question"], hg, seeds)
        anchored = len(hg.edges)
        await method._grow(hg, [n for e in first for n in hg.edges[e].nodes])  # what planning and beam search fetch
        assert len(hg.edges) > anchored
        own = {e for n in topics for e in hg.incident(n)}
        sub = "What is the capital of Guatemala?"  # a sub-question about a node the growth reached
        _, again = await method.anchor(sub, hg, seeds, anchored=anchored)
        _, everything = await method.anchor(sub, hg, seeds)
    assert all(e < anchored or e in own for e in again)
    later = [hg.edges[e].name for e in everything if e >= anchored and e not in own]
    assert later and all("Guatemala" in name for name in later)  # unrestricted, later fetches about Guatemala are matched


@pytest.mark.parametrize("name,params,message", [
    ("proh", {"beam": "wide"}, "invalid parameter beam='wide' for proh: expected int"),
    ("proh", {"max_depth": -1}, "invalid parameter max_depth=-1 for proh: expected a value ≥ 0"),
    ("inses", {"tau": 0.8}, "unknown inses parameter(s) tau: use some of"),
])
def test_bad_parameters_fail_with_one_line(name, params, message):
    from kgfed.sparql.errors import KgfedError

    with pytest.raises(KgfedError) as caught:
        get_method(name)({"freebase": object()}, NoLLM(), **params)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_string_parameters_from_the_command_line_are_converted():
    method = get_method("inses")({"freebase": object()}, NoLLM(), max_iter="4", router="false", tau_sim="0.85")
    assert (method.params.max_iter, method.params.router, method.params.tau_sim) == (4, False, 0.85)
