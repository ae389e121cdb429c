"""Write the recorded LLM replies of tests/test_inses.py and tests/test_proh.py (no live LLM here).

    .venv/bin/python tests/recordings/llm/inses/record_inses_proh.py

A tiny scripted provider answers each prompt from hand-written facts per question (what the question
is about, its plan, the answer of each sub-question) and simple rules (select the numbered lines that
mention a relevant entity, score relevant entities 0.9 and others 0.1); `ReplayLLM` in record mode
writes every reply as `<sha256>.json` beside this script (INSES) and in ../proh (PRoH). Re-running
rewrites nothing that exists; delete the JSON files first to record again.
"""
from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
SHARED = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))

from kgfed.engine.toolbox.llm import LLM, Completion, ReplayLLM  # noqa: E402

# -- hand-written facts, one entry per recorded question ----------------------------------------------------
INSES_QUESTIONS = {
    "Where was Douglas Adams born?": {
        "multi_hop": False, "rag_answer": "Cambridge", "rag_confidence": 0.9, "answer": "Cambridge", "relevant": ["Cambridge"]},
    "what country does justin bieber come from?": {
        "multi_hop": False, "rag_answer": "", "rag_confidence": 0.1, "answer": "Canada",
        "relevant": ["Canada", "Stratford", "country of citizenship", "nationality"]},
    "What is the capital city of the nation in which the monetary system is based on the South Korean won?": {
        "multi_hop": True, "answer": "Seoul", "relevant": ["South Korea", "Seoul", "capital"]},
}
PROH_QUESTIONS = {
    "What is the capital city of the nation in which the monetary system is based on the South Korean won?": {
        "plan": [{"id": 1, "question": "Which nation uses the South Korean won?", "depends_on": []},
                 {"id": 2, "question": "What is the capital city of #1?", "depends_on": [1]}],
        "steps": {"Which nation uses the South Korean won?": ["South Korea"], "What is the capital city of South Korea?": ["Seoul"]},
        "answer": "Seoul", "relevant": ["South Korea", "Seoul", "South Korean won"]},
    "what country does justin bieber come from?": {
        "plan": [{"id": 1, "question": "What country is Justin Bieber from?", "depends_on": []}],
        "steps": {"What country is Justin Bieber from?": ["Canada"]}, "answer": "Canada", "relevant": ["Canada", "Justin Bieber"]},
    "Which nation has the Alta Verapaz Department and is in Central America?": {
        "plan": [{"id": 1, "question": "Which nation contains the Alta Verapaz Department?", "depends_on": []},
                 {"id": 2, "question": "Is #1 in Central America?", "depends_on": [1]}],
        "steps": {"Which nation contains the Alta Verapaz Department?": ["Guatemala"], "Is Guatemala in Central America?": ["Guatemala"]},
        "answer": "Guatemala", "relevant": ["Guatemala", "Alta Verapaz Department", "Central America"]},
}


def field(prompt: str, name: str) -> str:
    m = re.search(rf"^{name}:\s*(.*)$", prompt, re.M)
    return m.group(1).strip() if m else ""


def numbered(prompt: str) -> list[tuple[int, str]]:
    return [(int(n), text) for n, text in re.findall(r"^(\d+)\. (.*)$", prompt, re.M)]


def mentions(text: str, names: list[str]) -> bool:
    return any(n.lower() in text.lower() for n in names)


class Scripted(LLM):
    """Replies from the facts above; any prompt it cannot place fails loudly."""

    name = "scripted"

    def __init__(self, facts: dict[str, dict], main: dict[str, str] | None = None):
        super().__init__("hand-written")
        self.facts = facts
        self.main = main or {}

    def _facts(self, prompt: str) -> dict:
        for question, facts in self.facts.items():
            if question in prompt:
                return facts
        for sub, question in self.main.items():
            if sub in prompt:
                return self.facts[question]
        raise KeyError(f"no facts for prompt: {prompt[:200]!r}")

    async def _complete(self, prompt: str, *, temperature: float, max_tokens: int, system: str | None) -> Completion:
        facts = self._facts(prompt)
        reply: dict
        if prompt.startswith("Your task is to decide how a query"):
            reply = {"multi_hop": facts["multi_hop"], "reason": "needs a chain of entities" if facts["multi_hop"] else "one fact"}
        elif "Context information is below" in prompt:
            reply = {"reasoning": "Step 1: read the passages.", "answer": facts["rag_answer"], "confidence": facts["rag_confidence"]}
        elif prompt.startswith("Your task is to provide support for complex queries"):
            adjacent = prompt.split("The adjacent triplets and their corresponding source text:", 1)[1]
            picked = [n for n, text in numbered(adjacent) if mentions(text, facts["relevant"])][:3]
            done = any(mentions(t, [facts["answer"]]) for n, t in numbered(adjacent) if n in picked)
            reply = {"determination": "sufficient" if done else "insufficient", "selection": ", ".join(map(str, picked))}
        elif prompt.startswith("You are a helpful assistant that provides accurate and concise answers based on the provided knowledge graph"):
            found = mentions(prompt.split("relevant text:", 1)[1], [facts["answer"]])
            reply = {"reasoning": "Step 1: follow the selected triplets to the answer.", "answer": facts["answer"] if found else "unknown"}
        elif prompt.startswith("You are planning how to answer"):
            reply = {"subquestions": facts["plan"]}
        elif prompt.startswith("You are refining a reasoning plan"):
            reply = {"subquestions": []}
        elif prompt.startswith("Rate how relevant each entity is"):
            reply = {str(n): (0.9 if mentions(text, facts["relevant"]) else 0.1) for n, text in numbered(prompt)}
        elif prompt.startswith("Select up to"):
            picked = [n for n, text in numbered(prompt) if mentions(text, facts["relevant"])] or [1]
            reply = {"selection": ", ".join(map(str, picked[:3]))}
        elif prompt.startswith("Decide which reasoning paths"):
            step = facts["steps"].get(field(prompt, "Question"), [])
            reply = {"selection": ", ".join(str(n) for n, text in numbered(prompt) if mentions(text, step))}
        elif prompt.startswith("Answer the question using only the knowledge below"):
            reply = {"answers": facts["steps"].get(field(prompt, "Question"), [])}
        elif prompt.startswith("Answer the question using the reasoning steps"):
            found = mentions(prompt.split("Reasoning steps:", 1)[1], [facts["answer"]])
            reply = {"reasoning": "The last step gives the answer.", "answer": facts["answer"] if found else "unknown"}
        elif prompt.startswith("Several reasoning processes"):
            reply = {"choice": 1}
        else:
            raise KeyError(f"unknown prompt kind: {prompt[:120]!r}")
        text = json.dumps(reply)
        return Completion(text, len(prompt.split()), len(text.split()))


async def record() -> None:
    from kgfed.engine.text.context import open_text_source
    from kgfed.engine.kg import KG
    from kgfed.engine.methods.inses import INSES
    from kgfed.engine.methods.proh import PRoH

    demo = ROOT / "engine" / "data"
    sub = {s["question"]: q for q, f in PROH_QUESTIONS.items() for s in f["plan"]}
    sub.update({k: q for q, f in PROH_QUESTIONS.items() for k in f["steps"]})
    async with KG.open(f"file:{demo / 'demo_wikidata.nt'}", name="wikidata", cache=False) as dwd, \
            KG.open(f"file:{SHARED / 'federation' / 'freebase.nt'}", name="freebase", cache=False) as ffb, \
            KG.open(f"file:{SHARED / 'federation' / 'wikidata.nt'}", name="wikidata", cache=False) as fwd, \
            KG.open(f"file:{SHARED / 'freebase' / 'cwq_subgraph.nt'}", dialect="freebase", name="freebase", cache=False) as cwq:
        inses_llm = ReplayLLM(HERE, record_with=Scripted(INSES_QUESTIONS))
        text = open_text_source("demo")
        for kgs, question, topics in [
            ({"wikidata": dwd}, "Where was Douglas Adams born?", {"wikidata": {"Q42": "Douglas Adams"}}),
            ({"freebase": ffb, "wikidata": fwd}, "what country does justin bieber come from?",
             {"freebase": {"m.06w2sn5": "Justin Bieber"}, "wikidata": {"Q34086": "Justin Bieber"}}),
            ({"freebase": cwq}, "What is the capital city of the nation in which the monetary system is based on the South Korean won?",
             {"freebase": {"m.01rn1k": "South Korean won"}}),
        ]:
            result = await INSES(kgs, inses_llm, text=text).answer(question, topics)
            print("inses:", question, "->", result.answer, result.extra["router"])
        proh_llm = ReplayLLM(HERE.parent / "proh", record_with=Scripted(PROH_QUESTIONS, sub))
        for kgs, question, topics in [
            ({"freebase": cwq}, "What is the capital city of the nation in which the monetary system is based on the South Korean won?",
             {"freebase": {"m.01rn1k": "South Korean won"}}),
            ({"freebase": ffb}, "what country does justin bieber come from?", {"freebase": {"m.06w2sn5": "Justin Bieber"}}),
            ({"freebase": cwq}, "Which nation has the Alta Verapaz Department and is in Central America?",
             {"freebase": {"m.01tzh": "Central America", "m.0146np": "Alta Verapaz Department"}}),
        ]:
            result = await PRoH(kgs, proh_llm, initial_plans=1, solutions=1).answer(question, topics)
            print("proh:", question, "->", result.answer, result.extra["states"])
    print("recorded", inses_llm.stats, proh_llm.stats)


if __name__ == "__main__":
    asyncio.run(record())
