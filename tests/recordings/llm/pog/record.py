"""Write the hand-written LLM replies that tests/test_pog.py and tests/test_hydra.py replay.

No live LLM is reachable here, so the replies are written by hand: `HandWritten` answers each prompt
kind of PoG/HydraRAG with the reply text below for the question in the prompt (question analysis,
source selection), or by a hand rule (path selection picks the paths naming the expected entity;
the sufficiency check says {Yes} with the answer only when the paths name it). `ReplayLLM` in record
mode stores every reply under its prompt hash, exactly as it would a real model's.

    .venv/bin/python tests/recordings/llm/pog/record.py      # rewrites tests/recordings/llm/{pog,hydra}/
"""
from __future__ import annotations

import asyncio
import re
import shutil
import sys
from pathlib import Path

from kgfed.engine.harness.datasets import load_dataset
from kgfed.engine.kg import KG
from kgfed.engine.toolbox.llm import LLM, Completion, ReplayLLM
from kgfed.engine.methods.hydra import HydraRAG
from kgfed.engine.methods.pog import PoG
from kgfed.engine.toolbox.prompts import HYDRA_REFINE_PROMPT as REFINE_PROMPT
from kgfed.engine.toolbox.prompts import HYDRA_SOURCE_SELECT_PROMPT as SOURCE_SELECT_PROMPT
from kgfed.engine.toolbox.prompts import POG_EVALUATE_PROMPT as EVALUATE_PROMPT
from kgfed.engine.toolbox.prompts import POG_GENERATE_PROMPT as GENERATE_PROMPT
from kgfed.engine.toolbox.prompts import POG_SUMMARY_PROMPT as SUMMARY_PROMPT
from kgfed.engine.toolbox.prompts import POG_SUPPLEMENT_PROMPT as SUPPLEMENT_PROMPT
from kgfed.engine.toolbox.prompts import POG_PATH_SELECT_PROMPT, POG_QUESTION_ANALYSIS_PROMPT

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[3].parent / "shared" / "data"

# question -> hand-written question analysis, the entity the paths should reach, the final answer
HAND = {
    "Which nation has the Alta Verapaz Department and is in Central America?": (
        'Thinking Cot: "Central America" - contains - answer(country) - administrative divisions - "Alta Verapaz Department"\n'
        'split_question1: What country is contained in "Central America"?\n'
        'split_question2: What country has "Alta Verapaz Department" as an administrative division?',
        "Guatemala"),
    "Who is the man in the position of head coach of the squad that earned victory in the 2011 AFC Championship Game?": (
        'Thinking Cot: "2011 AFC Championship Game" - won by - team - current head coach - answer(person)\n'
        'split_question1: Who is the head coach of the team that won the "2011 AFC Championship Game"?',
        "Mike Tomlin"),
    "What is the capital city of the nation in which the monetary system is based on the South Korean won?": (
        'Thinking Cot: "South Korean won" - currency used by - country - capital - answer(city)\n'
        'split_question1: What is the capital of the country that uses the "South Korean won"?',
        "Seoul"),
    "Who played the character Ratty Nepalese in the film Raiders of the Lost Ark?": (
        'Thinking Cot: "Ratty Nepalese" - portrayed by - answer(actor)\n'
        'split_question1: Which actor played "Ratty Nepalese"?',
        "Harrison Ford"),
    "what country does justin bieber come from?": (
        'Thinking Cot: "Justin Bieber" - country of citizenship - answer(country)\n'
        'split_question1: What country is "Justin Bieber" a citizen of?',
        "Canada"),
    "what language do the russian speak?": (
        'Thinking Cot: "Russia" - official language - answer(language)\n'
        'split_question1: What language is spoken in "Russia"?',
        "Russian"),
}


def _question(prompt: str) -> str:
    for question in HAND:
        if question in prompt:
            return question
    raise KeyError(f"no hand-written reply for this prompt: {prompt[-300:]!r}")


class HandWritten(LLM):
    """Replies written by hand for the questions in HAND, chosen by prompt kind."""

    name = "hand"

    def __init__(self):
        super().__init__("hand-written")

    async def _complete(self, prompt: str, *, temperature: float, max_tokens: int, system: str | None) -> Completion:
        question = _question(prompt)
        analysis, target = HAND[question]
        if prompt.startswith(POG_QUESTION_ANALYSIS_PROMPT):
            text = analysis
        elif prompt.startswith(POG_PATH_SELECT_PROMPT):
            paths = re.findall(r"^Path (\d+): (.*)$", prompt, re.M)
            chosen = [n for n, text in paths if target in text] or [n for n, _ in paths[:3]]
            text = "Answer: top_list: {" + ", ".join(f"path {n}" for n in chosen[:3]) + "}\nExplanation: these paths reach " + target + "."
        elif prompt.startswith(SUMMARY_PROMPT):
            lines = [line for line in prompt.splitlines() if line.startswith("Path ") and target in line]
            text = "Summary: " + (lines[0].split(": ", 1)[1] if lines else "the paths do not reach the answer")
        elif prompt.startswith(EVALUATE_PROMPT):
            listing = prompt.split("Related Paths:", 1)[1].split("Summary:", 1)[0]
            text = (f"{{Yes}}. The paths lead to {target}, so the answer is {{{target}}}." if target in listing
                    else "{No}. The paths do not reach the answer yet.")
        elif prompt.startswith(GENERATE_PROMPT):
            text = f"Based on the paths, the answer is {{{target}}}."
        elif prompt.startswith(SUPPLEMENT_PROMPT):
            text = f"Predict 1: {{{target}}}\nThinking Cot 1: {analysis.splitlines()[0].split(': ', 1)[1]}"
        elif prompt.startswith(SOURCE_SELECT_PROMPT):
            text = "The knowledge graph should hold this fact; the Wiki page can confirm it. [action1 + action2]"
        elif prompt.startswith(REFINE_PROMPT):
            text = f"New question: {question}\n{analysis.splitlines()[0]}"
        else:
            raise KeyError(f"unknown prompt kind: {prompt[:120]!r}")
        return Completion(text, input_tokens=len(prompt) // 4, output_tokens=max(1, len(text) // 4))


async def record() -> None:
    cwq = {q.text: q for q in load_dataset(SHARED / "freebase" / "cwq_questions.jsonl")}
    fed = {q.text: q for q in load_dataset(SHARED / "federation" / "questions.jsonl")}
    for name in ("pog", "hydra"):
        shutil.rmtree(HERE.parent / name / "replies", ignore_errors=True)
    async with KG.open(f"file:{SHARED / 'freebase' / 'cwq_subgraph.nt'}", dialect="freebase", name="freebase", cache=False) as kg:
        llm = ReplayLLM(HERE / "replies", record_with=HandWritten())
        for text in list(HAND)[:4]:
            result = await PoG({"freebase": kg}, llm).answer(text, cwq[text].topics)
            print("pog", text, "->", result.answer, result.extra.get("phase"), file=sys.stderr)
    fb_path, wd_path = SHARED / "federation" / "freebase.nt", SHARED / "federation" / "wikidata.nt"
    async with KG.open(f"file:{fb_path}", dialect="freebase", name="freebase", cache=False) as fb, \
            KG.open(f"file:{wd_path}", dialect="wikidata", name="wikidata", cache=False) as wd:
        llm = ReplayLLM(HERE.parent / "hydra" / "replies", record_with=HandWritten())
        for text in list(HAND)[4:]:
            result = await HydraRAG({"freebase": fb, "wikidata": wd}, llm).answer(text, fed[text].topics)
            print("hydra", text, "->", result.answer, result.extra.get("phase"), file=sys.stderr)


if __name__ == "__main__":
    asyncio.run(record())
