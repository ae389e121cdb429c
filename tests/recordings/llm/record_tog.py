"""Write the recorded LLM replies of tests/test_tog.py and tests/test_tog2.py (ReplayLLM directories).

No live model is reachable where these were made, so the replies are HAND-WRITTEN: `HandWritten`
is a tiny provider that answers each prompt kind (ToG relation pruning, entity scoring,
sufficiency, answer, direct answer; ToG-2 reasoning) of a few real fixture questions from the
script below, and `ReplayLLM(DIR, record_with=HandWritten(...))` writes every reply as a
`<sha256>.json` file keyed by the exact prompt. Token counts are the prompt's and reply's
whitespace-separated words. Re-run after a prompt or the search order changes:

    HF_HUB_OFFLINE=1 .venv/bin/python -m tests.recordings.llm.record_tog
"""
from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path

from kgfed.engine.toolbox.llm import LLM, Completion, ReplayLLM

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[2].parent / "shared" / "data"
CWQ_NT = SHARED / "freebase" / "cwq_subgraph.nt"
FED_DIR = SHARED / "federation"

# -- the questions and their hand-written replies -----------------------------------------------
GUATEMALA = "Which nation has the Alta Verapaz Department and is in Central America?"
STEELERS = "Who is the man in the position of head coach of the squad that earned victory in the 2011 AFC Championship Game?"
RATTY = "Who played the character Ratty Nepalese in the film Raiders of the Lost Ark?"
BIEBER = "what country does justin bieber come from?"

TOG_SCRIPT: dict[str, dict] = {
    GUATEMALA: {  # both topics lead to Guatemala in one hop: {Yes} at depth 1
        "relations": {
            "Alta Verapaz Department": (
                "1. {location.administrative_division.country (Score: 0.6)}: This relation gives the nation the department belongs to.\n"
                "2. {location.location.containedby (Score: 0.3)}: The places containing the department include its nation.\n"
                "3. {location.country.administrative_divisions (Score: 0.1)}: The nation that lists the department as a division."),
            "Central America": (
                "1. {location.location.contains (Score: 1.0)}: The nations contained in Central America are the candidates."),
        },
        "prefer": ["Guatemala"],
        "evaluate": [("Guatemala", "{Yes}. Based on the given knowledge triplets, Alta Verapaz Department is a division of "
                                   "Guatemala, and Central America contains Guatemala. Therefore, the answer to the question is {Guatemala}.")],
    },
    STEELERS: {  # the champion at depth 1 ({No}), its head coach at depth 2 ({Yes})
        "relations": {
            "2011 AFC Championship Game": (
                "1. {sports.sports_championship_event.champion (Score: 0.8)}: The champion is the squad that earned victory.\n"
                "2. {sports.sports_team.championships (Score: 0.2)}: Teams that won this championship."),
            "Pittsburgh Steelers": (
                "1. {american_football.football_team.current_head_coach (Score: 0.9)}: This relation directly gives the head coach of the team.\n"
                "2. {sports.sports_team.coaches|sports.sports_team_coach_tenure.coach (Score: 0.1)}: Coaches of the team over time."),
        },
        "prefer": ["Mike Tomlin"],
        "evaluate": [("Mike Tomlin", "{Yes}. Based on the given knowledge triplets, the Pittsburgh Steelers won the 2011 AFC "
                                     "Championship Game and their current head coach is Mike Tomlin. Therefore, the answer to the question is {Mike Tomlin}.")],
        "no": "{No}. Based on the given knowledge triplets, the Pittsburgh Steelers won the 2011 AFC Championship Game, "
              "but the triplets do not say who their head coach is.",
    },
    RATTY: {  # odd replies everywhere: no relation named, prose scores, never sufficient
        "relations": {"*": "I am not able to rank these relations without more context, sorry!"},
        "entity_reply": "Every film here could be relevant; I would give them similar weight.",
        "no": "no, these triplets are not enough",
        "direct": "First, the character Ratty Nepalese appears in Raiders of the Lost Ark, whose hero Indiana Jones "
                  "is played by Harrison Ford. The answer is {Harrison Ford}.",
    },
    BIEBER: {  # two KGs, each with its own topic entity and relation vocabulary
        "relations": {
            "Justin Bieber": None,  # answered per KG below (the prompts differ by dialect)
        },
        "relations_freebase": (
            "1. {people.person.places_lived|people.place_lived.location (Score: 0.7)}: Where he lived tells where he comes from.\n"
            "2. {music.artist.label (Score: 0.2)}: Not about origin.\n"
            "3. {people.person.gender (Score: 0.1)}: Not about origin."),
        "relations_wikidata": (
            "1. {country of citizenship (Score: 0.8)}: This relation gives the country he comes from.\n"
            "2. {languages spoken, written, or signed (Score: 0.1)}: Languages may hint at a country.\n"
            "3. {record label (Score: 0.1)}: Not about origin."),
        "prefer": ["Canada"],
        "evaluate": [("Canada", "{Yes}. Based on the given knowledge triplets, Justin Bieber is a citizen of Canada and "
                                "lived in Canada. Therefore, the answer to the question is {Canada}.")],
    },
}


ADAMS = "Which university did Douglas Adams attend?"
EINSTEIN = "Where did Albert Einstein die?"
ROVELLI = "Seven Brief Lessons on Physics was written by an Italian physicist that has worked in France since what year?"
DEMO_NT = HERE.parents[2] / "engine" / "data" / "demo_wikidata.nt"

TOG2_SCRIPT: dict[str, dict] = {
    ADAMS: {  # the topic's page names a college, not the university: {No} with a clue, then the KG hop
        "relations": {"Douglas Adams": (
            "1. {educated at (Score: 0.8)}: This relation gives the institutions Douglas Adams attended.\n"
            "2. {residence (Score: 0.1)}: Where he lived may hint at a university town.\n"
            "3. {occupation (Score: 0.1)}: Not about education.")},
        "tog2": [("Douglas Adams, educated at, University of Cambridge",
                  "{Yes} The knowledge triplets say Douglas Adams was educated at the University of Cambridge, and its page "
                  "lists him among its alumni. The analyzed answer entity is {University of Cambridge}.")],
        "tog2_no": "{No} The page says Douglas Adams studied English at St John's College, Cambridge, but does not name the "
                   "university. The useful information for now is {Douglas Adams studied at St John's College, Cambridge}",
    },
    EINSTEIN: {  # odd replies: relation scores as JSON, a reasoning reply without braces, then ToG's own answer
        "relations": {"Albert Einstein": '[{"relation": "place of death", "score": 0.9}, {"relation": "residence", "score": 0.1}]'},
        "tog2": [],
        "tog2_no": "Hard to say from this.",
        "direct": "First, Albert Einstein emigrated to the United States and worked in Princeton. The answer is {Princeton}.",
    },
    ROVELLI: {  # AdvHotpotQA: the topics (Italy, France) are generic; the paragraphs hold the answer
        "relations": {"*": "1. {country (Score: 0.5)}: The country links the physicist to Italy and France."},
        "tog2": [("since 2000", "{Yes} The context says Carlo Rovelli, the Italian physicist who wrote Seven Brief Lessons on "
                                "Physics, has worked in France since 2000. The analyzed answer entity is {2000}.")],
        "tog2_no": "{No} The contexts do not say who wrote the book. The useful information for now is {the author is an Italian physicist working in France}",
        "direct": "First, Seven Brief Lessons on Physics was written by Carlo Rovelli. Second, Carlo Rovelli has worked in "
                  "France since 2000. The answer is {2000}.",
    },
}


def _kind(prompt: str) -> str:
    if prompt.startswith("Please retrieve"):
        return "relations"
    if prompt.startswith("Please score the entities"):
        return "entities"
    if "whether it's sufficient" in prompt[:300]:
        return "evaluate"
    if "you are asked to answer the question" in prompt[:300]:
        return "answer"
    if prompt.startswith("Q: What state is home"):
        return "direct"
    if prompt.startswith("Given a question, some clues"):
        return "tog2"
    raise ValueError(f"unknown prompt kind: {prompt[:80]!r}")


class HandWritten(LLM):
    """Replies from a hand-written script, chosen by prompt kind, question and (for pruning) the topic entity."""

    name = "handwritten"

    def __init__(self, script: dict[str, dict]):
        super().__init__("handwritten")
        self.script = script

    def _entry(self, prompt: str) -> dict:
        tail = prompt[-4000:]  # the question is near the end, after the few-shot examples
        found = [q for q in self.script if q in tail]
        if len(found) != 1:
            raise ValueError(f"no single scripted question in prompt ending {tail[-200:]!r}")
        return self.script[found[0]]

    def reply(self, prompt: str) -> str:
        kind, entry = _kind(prompt), self._entry(prompt)
        if kind == "relations":
            entity = re.findall(r"Topic Entity: (.*)\n", prompt)[-1]
            if entity not in entry["relations"] and "*" not in entry["relations"]:
                raise ValueError(f"no scripted relation reply for {entity!r}")
            text = entry["relations"].get(entity, entry["relations"].get("*"))
            if text is None:
                text = entry["relations_wikidata" if "\nRelations:\n" in prompt else "relations_freebase"]
            return text
        if kind == "entities":
            if "entity_reply" in entry:
                return entry["entity_reply"]
            names = prompt.rsplit("Entites: ", 1)[1].split("\nScore:")[0].split("; ")
            scores = [1.0 if n in entry.get("prefer", []) else 0.0 for n in names]
            if not any(scores):
                scores = [round(1 / len(names), 3)] * len(names)
            return "Score: " + ", ".join(f"{s:.1f}" if s in (0.0, 1.0) else str(s) for s in scores) + \
                "\nThe entity that fits the question best gets the highest score."
        if kind in ("evaluate", "tog2"):
            shown = prompt[-3000:] if kind == "evaluate" else prompt.rsplit("Now, please carefully consider the following case:", 1)[1]
            for needle, text in entry.get(kind if kind == "tog2" else "evaluate", []):
                if needle in shown:
                    return text
            return entry.get("no" if kind == "evaluate" else "tog2_no", "{No}. The triplets are not enough.")
        return entry[kind]

    async def _complete(self, prompt: str, *, temperature: float, max_tokens: int, system: str | None) -> Completion:
        text = self.reply(prompt)
        return Completion(text, len(((system or "") + " " + prompt).split()), len(text.split()))


# -- recording ----------------------------------------------------------------------------------
async def record_tog(directory: Path) -> None:
    from kgfed.engine.kg import KG
    from kgfed.engine.methods.tog import ToG

    shutil.rmtree(directory, ignore_errors=True)
    llm = ReplayLLM(directory, record_with=HandWritten(TOG_SCRIPT))
    async with KG.open(f"file:{CWQ_NT}", dialect="freebase", name="freebase", cache=False) as kg:
        await ToG({"freebase": kg}, llm).answer(GUATEMALA, {"freebase": {"m.01tzh": "Central America", "m.0146np": "Alta Verapaz Department"}})
        await ToG({"freebase": kg}, llm).answer(STEELERS, {"freebase": {"m.0_gt_jy": "2011 AFC Championship Game"}})
        await ToG({"freebase": kg}, llm, depth=2).answer(RATTY, {"freebase": {"m.0z4nb1p": "Ratty Nepalese"}})
    async with KG.open(f"file:{FED_DIR / 'freebase.nt'}", dialect="freebase", name="freebase", cache=False) as fb, \
            KG.open(f"file:{FED_DIR / 'wikidata.nt'}", dialect="wikidata", name="wikidata", cache=False) as wd:
        await ToG({"freebase": fb, "wikidata": wd}, llm, depth=1).answer(
            BIEBER, {"freebase": {"m.06w2sn5": "Justin Bieber"}, "wikidata": {"Q34086": "Justin Bieber"}})
    print(f"{directory}: {llm.stats['recorded']} replies recorded")


async def record_tog2(directory: Path) -> None:
    from kgfed.engine.text.context import open_text_source
    from kgfed.engine.harness.datasets import load_dataset
    from kgfed.engine.kg import KG
    from kgfed.engine.methods.tog2 import ToG2

    from bench.tog_eval import paragraph_source

    shutil.rmtree(directory, ignore_errors=True)
    llm = ReplayLLM(directory, record_with=HandWritten(TOG2_SCRIPT))
    async with KG.open(f"file:{DEMO_NT}", dialect="wikidata", name="wikidata", cache=False) as kg:
        demo = open_text_source("demo")
        await ToG2({"wikidata": kg}, llm, text=demo).answer(ADAMS, {"wikidata": {"Q42": "Douglas Adams"}})
        await ToG2({"wikidata": kg}, llm, text=demo, depth=1).answer(EINSTEIN, {"wikidata": {"Q937": "Albert Einstein"}})
    [question] = [q for q in load_dataset(SHARED / "questions" / "hotpotadv.json") if q.text == ROVELLI]
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        async with KG.open(f"file:{FED_DIR / 'wikidata.nt'}", dialect="wikidata", name="wikidata", cache=False) as kg:
            await ToG2({"wikidata": kg}, llm, text=paragraph_source(question, Path(tmp)), depth=1).answer(
                ROVELLI, {"wikidata": question.topics["wikidata"]})
    print(f"{directory}: {llm.stats['recorded']} replies recorded")


async def main() -> None:
    await record_tog(HERE / "tog")
    await record_tog2(HERE / "tog2")


if __name__ == "__main__":
    asyncio.run(main())
