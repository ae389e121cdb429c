"""What the `--llm gold` stand-in answers, prompt kind by prompt kind (`KINDS`).

A prompt's kind is the longest known template it starts with (`kind_of`): the templates of the six
methods in `toolbox.prompts`, so a prompt is recognised by the very text the method sent. Each kind
has a replier `(gold, prompt) -> reply` that reads the prompt's own evidence (its triplets, paths,
passages or selected facts, never the few-shot examples) and answers in exactly the format the prompt
asks for, from the question's gold (`gold_reader.Gold`); the module docstring of `gold_llm` says what
each family of kinds answers. A prompt of no known kind is a one-line `LLMError`.
"""
from __future__ import annotations

import json
import re
import string
from collections.abc import Sequence
from typing import Any

from ...sparql.errors import LLMError
from . import prompts as P
from .gold_reader import Gold

MAX_SELECTED = 5     # INSES triplets selected per navigation step
UNKNOWN = "Unknown"


def _first_words(prompt: str) -> str:
    return repr(" ".join(prompt.split())[:60] + "…")


# -- prompt kinds ---------------------------------------------------------------------------------------------
def _after(prompt: str, marker: str) -> str:
    at = prompt.rfind(marker)
    return prompt[at + len(marker):] if at >= 0 else prompt


def _between(text: str, start: str, end: str | None = None) -> str:
    at = text.find(start)
    if at < 0:
        return ""
    body = text[at + len(start):]
    if end:
        stop = body.find(end)
        body = body if stop < 0 else body[:stop]
    return body


def _fields(template: str, prompt: str) -> dict[str, str]:
    """The values a `str.format` template was filled with (literal parts matched exactly)."""
    pattern, names = "", []
    for literal, name, _, _ in string.Formatter().parse(template):
        pattern += re.escape(literal)
        if name is not None:
            if name in names:
                pattern += f"(?P={name})"
            else:
                pattern += f"(?P<{name}>.*?)"
                names.append(name)
    m = re.fullmatch(pattern, prompt, re.S)
    return {k: v for k, v in m.groupdict().items()} if m else {}


def _ranked(scores: Sequence[float]) -> list[int]:
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


# ToG -----------------------------------------------------------------------------------------------------------
def _tog_relations(gold: Gold, prompt: str) -> str:
    width = int(m.group(1)) if (m := re.match(r"Please retrieve (\d+) relations", prompt)) else 3
    case = _after(prompt, "\n\nQ: ")
    block = case.split("\nRelations:", 1)[1] if "\nRelations:" in case else ""
    block = block.rstrip()
    block = block[:-2] if block.endswith("A:") else block
    if block.startswith("\n"):  # Wikidata style: numbered lines
        names = [re.sub(r"^\d+\.\s*", "", line).strip() for line in block.strip().splitlines() if line.strip()]
    else:
        names = [n.strip() for n in block.split("; ") if n.strip()]
    if not names:
        raise LLMError("--llm gold: a relation-pruning prompt without relations")
    scores = [gold.relation_score(n) for n in names]
    chosen = [i for i in _ranked(scores) if scores[i] > 0][:width]
    if not chosen:  # nothing on the gold query: one relation named, scored 0 (ToG then drops the chain)
        chosen, shares = [0], {0: 0.0}
    else:
        total = sum(scores[i] for i in chosen)
        shares = {i: round(scores[i] / total, 3) for i in chosen}
    if any(re.search(r"[(){};]", names[i]) for i in chosen):
        return json.dumps({names[i]: shares[i] for i in chosen}, ensure_ascii=False)
    return "\n".join(f"{k}. {{{names[i]} (Score: {shares[i]})}}: "
                     + ("This relation is on the way to the answer." if shares[i] else "No offered relation leads to the answer.")
                     for k, i in enumerate(chosen, 1))


def _tog_entities(gold: Gold, prompt: str) -> str:
    case = _after(prompt, "\n\nQ: ")
    listing = _between(case, "\nEntites: ", "\nScore:")
    names = [n for n in listing.split("; ")]
    scores = [1.0 if gold.is_entity(n) else 0.0 for n in names]
    return ", ".join(f"{s:.1f}" for s in scores) + "\nEntities the answer is reached through score 1, the others 0."


def _tog_verdict(gold: Gold, prompt: str, template: str) -> str:
    triplets = _between(prompt[len(template):], "\nKnowledge Triplets: ")
    answer = gold.answer_in(triplets[:-3] if triplets.endswith("A: ") else triplets)
    if answer:
        return f"{{Yes}}. Based on the given knowledge triplets, the answer to the question is {{{answer}}}."
    return "{No}. Based on the given knowledge triplets, it's not sufficient to answer the question."


def _tog_answer(gold: Gold, prompt: str) -> str:
    triplets = _between(prompt, "\nKnowledge Triplets: ")
    answer = gold.answer_in(triplets[:-3] if triplets.endswith("A: ") else triplets)
    return f"Based on the given knowledge triplets, the answer to the question is {{{answer or UNKNOWN}}}."


def _tog_direct(gold: Gold, prompt: str) -> str:
    return f"The knowledge needed is not given. The answer is {{{UNKNOWN}}}."


def _tog2_reasoning(gold: Gold, prompt: str) -> str:
    case = _after(prompt, "Now, please carefully consider the following case:\n")
    evidence = case.split("\n(Knowledge triplets):", 1)[1] if "\n(Knowledge triplets):" in case else ""
    answer = gold.answer_in(evidence, prose=True)
    if answer:
        return f"{{Yes}} The analyzed answer entity is {{{answer}}}."
    return ("{No} The given knowledge does not name the answer yet. The useful information for now is "
            f"{{{_clue(gold)}}}")


def _clue(gold: Gold) -> str:
    parts = [f"from {name} the answer is reached through {' then '.join(steps)}" for name, steps in gold.chains() if steps]
    clue = "; ".join(parts) or "the answer is not in the given knowledge"
    return clue if not gold.answer_in(clue) else "the answer is not in the given knowledge"


# PoG and HydraRAG ------------------------------------------------------------------------------------------------
def _indicator(gold: Gold) -> tuple[str, list[str]]:
    """PoG's thinking indicator and split questions from the gold query (no gold answer in them)."""
    chains = [(name, steps) for name, steps in gold.chains() if steps] or [(n, ["related to"]) for n in gold.topics.values()]
    if not chains:
        chains = [("", ["related to"])]
    halves = []
    for k, (name, steps) in enumerate(chains[:2]):
        parts = [f'"{name}"']
        for i, step in enumerate(steps):
            parts.append(step)
            if i < len(steps) - 1:
                parts.append("entity")
        halves.append(parts if k == 0 else parts[::-1])
    items = halves[0] + ["answer(entity)"] + (halves[1] if len(halves) > 1 else [])
    splits = [f'What is connected to "{name}" by {" then ".join(steps)}?' for name, steps in chains]
    indicator = " - ".join(items)
    if gold.answer_in(indicator) or any(gold.answer_in(s) for s in splits):  # a topic named like an answer
        indicator, splits = "answer(entity)", [gold.text]
    return indicator, splits


def _pog_analysis(gold: Gold, prompt: str) -> str:
    indicator, splits = _indicator(gold)
    return "Thinking Cot: " + indicator + "\n" + "".join(f"split_question{i}: {q}\n" for i, q in enumerate(splits, 1))


_NUMBERED = {"path": re.compile(r"(?m)^Path (\d+): "), "edge": re.compile(r"(?m)^Candidate Edge (\d+): ")}


def _numbered(text: str, kind: str) -> list[tuple[int, str]]:
    marks = list(_NUMBERED[kind].finditer(text))
    return [(int(m.group(1)), text[m.end(): marks[k + 1].start() if k + 1 < len(marks) else len(text)].strip())
            for k, m in enumerate(marks)]


def _top_list(gold: Gold, items: list[tuple[int, str]], label: str) -> str:
    if not items:
        raise LLMError(f"--llm gold: a {label.lower()} selection prompt without candidates")
    scores = [gold.text_score(text) for _, text in items]
    picked = [items[i][0] for i in _ranked(scores)[:3]]
    return (f"Answer: top_list: {{{', '.join(f'{label} {n}' for n in picked)}}}\n"
            "Explanation: these follow the relations and entities the question asks about.")


def _pog_paths(gold: Gold, prompt: str) -> str:
    return _top_list(gold, _numbered(_after(prompt, "\nThe entity list is: \n"), "path"), "Path")


def _pog_edges(gold: Gold, prompt: str) -> str:
    return _top_list(gold, _numbered(_after(prompt, "\nThe Candidate Edge list is: \n"), "edge"), "Candidate Edge")


def _pog_block(prompt: str) -> str:
    """The evidence of a PoG/HydraRAG answering prompt: its path listing (and summary)."""
    for marker in ("Related Paths:\n", "Related_paths:\n", "Existing Knowledge Paths:\n"):
        if marker in prompt:
            body = _after(prompt, marker)
            return body[:-3] if body.endswith("\nA:") else body
    return ""


def _pog_summary(gold: Gold, prompt: str) -> str:
    chains = [f"{name}: {' then '.join(steps)}" for name, steps in gold.chains() if steps]
    text = "The related paths are read along " + ("; ".join(chains) or "the topic entities") + "."
    return text if not gold.answer_in(text) else "The related paths are read along the topic entities."


def _pog_evaluate(gold: Gold, prompt: str) -> str:
    answer = gold.answer_in(_pog_block(prompt))
    if answer:
        return f"{{Yes}}. The knowledge paths answer the main question: {{{answer}}}."
    return "{No}. The knowledge paths do not reach the answer of the main question."


def _pog_generate(gold: Gold, prompt: str) -> str:
    return f"{{{gold.answer_in(_pog_block(prompt)) or UNKNOWN}}}"


def _pog_supplement(gold: Gold, prompt: str) -> str:
    names = [n for n in gold.entity_names if n.casefold() not in {t.casefold() for t in gold.topics.values()}][:3]
    if not names:
        return "No further entity can be predicted from the given paths."
    indicator, _ = _indicator(gold)
    return "\n".join(f"Predict {i}: {{{name}}}\nThinking Cot {i}: {indicator}" for i, name in enumerate(names, 1))


def _hydra_source(gold: Gold, prompt: str) -> str:
    offered = _between(prompt, "Provided sources: ", "\n")
    actions = [a for a, name in (("action1", "KG"), ("action2", "Wiki"), ("action3", "Web")) if name in offered] or ["action1"]
    return "Every provided source may hold the evidence. Decision: [" + " + ".join(actions) + "]"


def _hydra_refine(gold: Gold, prompt: str) -> str:
    indicator, _ = _indicator(gold)
    return f"New question: {gold.text}\nThinking Cot: {indicator}"


# INSES ------------------------------------------------------------------------------------------------------------
def _inses_router(gold: Gold, prompt: str) -> str:
    hops = len(gold.relations)
    return json.dumps({"multi_hop": hops >= 3, "reason": f"the question chains {hops} relation(s)"})


def _inses_entities(gold: Gold, prompt: str) -> str:
    names = list(gold.topics.values()) or gold.entity_names[:3]
    return ", ".join(n for n in names if n and not gold.is_answer(n)) or "none"


def _inses_navigation(gold: Gold, prompt: str) -> str:
    f = _fields(P.INSES_NAVIGATION_PROMPT, prompt)
    lines = [(int(m.group(1)), m.group(2)) for m in re.finditer(r"(?m)^(\d+)\. (.*)$", f.get("adjacent", ""))]
    scores = [gold.text_score(text) for _, text in lines]
    picked = [lines[i] for i in _ranked(scores) if scores[i] > 0][:MAX_SELECTED]
    evidence = f.get("selected", "") + "\n" + "\n".join(text for _, text in picked)
    sufficient = gold.answer_in(evidence) is not None
    return json.dumps({"determination": "sufficient" if sufficient else "insufficient",
                       "selection": ", ".join(str(n) for n, _ in picked)})


def _inses_answer(gold: Gold, prompt: str) -> str:
    answer = gold.answer_in(_fields(P.INSES_ANSWER_PROMPT, prompt).get("context", ""))
    return json.dumps({"reasoning": "The answer is the entity of the extracted knowledge the question asks for."
                       if answer else "The extracted knowledge does not name the answer.", "answer": answer or UNKNOWN},
                      ensure_ascii=False)


def _inses_rag(gold: Gold, prompt: str) -> str:
    answer = gold.answer_in(_fields(P.INSES_RAG_PROMPT, prompt).get("context", ""), prose=True)
    return json.dumps({"reasoning": "Read from the context." if answer else "The context does not name the answer.",
                       "answer": answer or UNKNOWN, "confidence": 0.9 if answer else 0.0}, ensure_ascii=False)


# PRoH -------------------------------------------------------------------------------------------------------------
# PRoH shows facts as `subject relation words object` (hyperedge names) without delimiters: they are read as prose.
def _proh_plan(gold: Gold, prompt: str) -> str:
    return json.dumps({"subquestions": [{"id": 1, "question": gold.text, "depends_on": []}]}, ensure_ascii=False)


def _proh_refine(gold: Gold, prompt: str) -> str:
    return json.dumps({"subquestions": []})


def _numbered_lines(text: str) -> list[tuple[int, str]]:
    return [(int(m.group(1)), m.group(2)) for m in re.finditer(r"(?m)^(\d+)\. (.*)$", text)]


def _proh_score(gold: Gold, prompt: str) -> str:
    lines = _numbered_lines(_fields(P.PROH_SCORE_PROMPT, prompt).get("entities", ""))
    scores = {str(n): 1.0 if gold.is_entity(text.split(", ", 1)[0]) or gold.is_entity(text) else 0.0 for n, text in lines}
    return json.dumps(scores)


def _proh_directions(gold: Gold, prompt: str) -> str:
    f = _fields(P.PROH_DIRECTIONS_PROMPT, prompt)
    lines = _numbered_lines(f.get("paths", ""))
    width = int(f["b"]) if f.get("b", "").isdigit() else 3
    scores = [gold.text_score(text, prose=True) for _, text in lines]
    return json.dumps({"selection": ", ".join(str(lines[i][0]) for i in _ranked(scores)[:width])})


def _proh_paths(gold: Gold, prompt: str) -> str:
    lines = _numbered_lines(_fields(P.PROH_PATHS_PROMPT, prompt).get("paths", ""))
    return json.dumps({"selection": ", ".join(str(n) for n, text in lines if gold.answer_in(text, prose=True))})


def _proh_step(gold: Gold, prompt: str) -> str:
    context = _fields(P.PROH_STEP_PROMPT, prompt).get("context", "")
    found = list(dict.fromkeys(gold.answers_in(context, prose=True)))
    return json.dumps({"answers": found[:3]}, ensure_ascii=False)


def _proh_final(gold: Gold, prompt: str) -> str:
    answer = gold.answer_in(_fields(P.PROH_FINAL_PROMPT, prompt).get("steps", ""), prose=True)
    return json.dumps({"reasoning": "From the reasoning steps." if answer else "The steps do not name the answer.",
                       "answer": answer or UNKNOWN}, ensure_ascii=False)


def _proh_judge(gold: Gold, prompt: str) -> str:
    lines = _numbered_lines(_fields(P.PROH_JUDGE_PROMPT, prompt).get("candidates", ""))
    choice = next((n for n, text in lines if gold.is_answer(text.split(" (because: ", 1)[0])), lines[0][0] if lines else 1)
    return json.dumps({"choice": choice})


def _prefix(template: str) -> str:
    """The literal text of a `str.format` template before its first field (braces unescaped)."""
    literal = next(iter(string.Formatter().parse(template)))[0]
    return literal


# (prefix the prompt starts with, kind, replier), most specific first
KINDS: list[tuple[str, str, Any]] = [
    ("Please retrieve ", "tog-relations", _tog_relations),
    ("Please score the entities' contribution", "tog-entities", _tog_entities),
    (P.PROMPT_EVALUATE, "tog-evaluate", lambda g, p: _tog_verdict(g, p, P.PROMPT_EVALUATE)),
    (P.PROMPT_EVALUATE_WIKI, "tog-evaluate-wiki", lambda g, p: _tog_verdict(g, p, P.PROMPT_EVALUATE_WIKI)),
    (P.ANSWER_PROMPT[: -len("Q: {}\n")], "tog-answer", _tog_answer),
    (P.ANSWER_PROMPT_WIKI[: -len("Q: {}\n")], "tog-answer-wiki", _tog_answer),
    (P.GENERATE_DIRECTLY, "tog-direct", _tog_direct),
    (P.TOG2_REASONING_PROMPT, "tog2-reasoning", _tog2_reasoning),
    (P.POG_QUESTION_ANALYSIS_PROMPT, "pog-analysis", _pog_analysis),
    (P.POG_PATH_SELECT_PROMPT, "pog-select", _pog_paths),
    (P.POG_EDGE_SELECT_PROMPT, "pog-edges", _pog_edges),
    (P.POG_SUPPLEMENT_PROMPT, "pog-supplement", _pog_supplement),
    (P.POG_SUMMARY_PROMPT, "pog-summary", _pog_summary),
    (P.POG_EVALUATE_PROMPT, "pog-evaluate", _pog_evaluate),
    (P.POG_GENERATE_PROMPT, "pog-generate", _pog_generate),
    (P.HYDRA_SOURCE_SELECT_PROMPT, "hydra-source", _hydra_source),
    (P.HYDRA_REFINE_PROMPT, "hydra-refine", _hydra_refine),
    (_prefix(P.INSES_EXTRACT_ENTITIES_PROMPT), "inses-entities", _inses_entities),
    (_prefix(P.INSES_NAVIGATION_PROMPT), "inses-navigate", _inses_navigation),
    (_prefix(P.INSES_ANSWER_PROMPT), "inses-answer", _inses_answer),
    (_prefix(P.INSES_RAG_PROMPT), "inses-rag", _inses_rag),
    (_prefix(P.INSES_ROUTER_PROMPT), "inses-router", _inses_router),
    (_prefix(P.PROH_PLAN_PROMPT), "proh-plan", _proh_plan),
    (_prefix(P.PROH_REFINE_PROMPT), "proh-refine", _proh_refine),
    (_prefix(P.PROH_SCORE_PROMPT), "proh-score", _proh_score),
    (_prefix(P.PROH_DIRECTIONS_PROMPT), "proh-directions", _proh_directions),
    (_prefix(P.PROH_PATHS_PROMPT), "proh-paths", _proh_paths),
    (_prefix(P.PROH_STEP_PROMPT), "proh-step", _proh_step),
    (_prefix(P.PROH_FINAL_PROMPT), "proh-final", _proh_final),
    (_prefix(P.PROH_JUDGE_PROMPT), "proh-judge", _proh_judge),
]


def _kind(prompt: str) -> tuple[str, str, Any]:
    """(the template prefix, the kind, its replier) of the longest known template the prompt starts with."""
    best = max(((prefix, kind, reply) for prefix, kind, reply in KINDS if prompt.startswith(prefix)), default=None,
               key=lambda t: len(t[0]))
    if best is None:
        raise LLMError(f"--llm gold does not know this prompt ({_first_words(prompt)}): the stand-in answers the "
                       "prompts of kgfed's six methods only (toolbox.prompts)")
    return best


def kind_of(prompt: str) -> str:
    """The prompt kind the stand-in reads `prompt` as (for tests and reports)."""
    return _kind(prompt)[1]
