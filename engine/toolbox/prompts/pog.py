"""PoG's prompts (Paths-over-Graph, Tan et al.) and their renderers.

PoG's own repository is not in the stored index, so the question-analysis and path-selection
prompts come from the same authors' HydraRAG repository (SteveTANTAN/EMNLP2025_Submit-Hydra,
`Hydra_run/cot_prompt_list.py`), whose text matches the templates in appendix E of the PoG paper;
the supplement, summary, evaluation and generation templates are the paper's appendix E as printed.
HydraRAG (`prompts.hydra`) reuses all of them. Trailing spaces inside the texts are the originals'.
Replies are read by `parsers.parse_question_analysis` and `parsers.parse_path_selection`.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

# ---------------------------------------------------------------------------------------------
# PoG prompts, verbatim from SteveTANTAN/EMNLP2025_Submit-Hydra Hydra_run/cot_prompt_list.py
# (commit f9d9a70; PoG's authors' code base): question analysis (`split_question_prompt`),
# precise path selection (`main_path_select_prompt`), node-expansion edge selection
# (`explored_path_select_prompt`).
# ---------------------------------------------------------------------------------------------
POG_QUESTION_ANALYSIS_PROMPT = """
You will receive a multi-hop question, which is composed of several interconnected queries, along with a list of topic entities that serve as the main keywords for the question. Please split the multi-hop question into parts for clarity and depth.

please give me the Thinking CoT which contains chain relations of "ALL" the topic entities and predicted answer type, and serval split questions.

Each entity in the topic list is already included in the knowledge graph. Your task is to consider how to obtain the answer by using all the topic entities and split the multi-hop question into multiple simpler questions using one Topic Entity once. Each split question should explore the relationship between one of the topic entities and the others entities or the answer. Your goal is to determine how to derive the final answer by systematically addressing each split question.

note: the number of split questions should be equal to the number of topic entities. since each split question is work for one topic entity.




For example:
Q: 
Question: What country bordering France contains an airport that serves Nijmegen?
also writen as: what countries share borders with france and is the location contains and airport that server Nijmegen?
Main Topic Entities: {m.05g2b: Nijmegen, m.0f8l9c: France}
A:
Thinking Cot:  "Nijmegen" - service by - airport - owned by - answer(country) - border with - "France"
split_question1: What country contains an airport that serves "Nijmegen"?
split_question2: What country bordering "France"?

please provide answer(A) section only in the same format as the example above.

The question is:

"""

POG_PATH_SELECT_PROMPT = """
Given a question and the associated retrieved entities lists, 
Please score and give me the top three lists that can be highly to be the answer to the question.

please give me a summary final answer exactly same to the format below in each question beginning

Answer: top_list: {path 1, path 2, path3}
Explanation: The top three lists are path 1, path 2, and path 3....

"""

POG_EDGE_SELECT_PROMPT = """
Given a main question, a LLM-generated thinking Cot that consider all the entities, a few split questions that you can use stepply and finally obtain the final answer, and the associated retrieved knowledge graph path, {set of entities (with id start with "m.")} -> {set of relationships} -> {set of entities(with id start with "m.")}, 

Please score and give me the top three lists from the candidate set can be highly to be the answer of the question.
please answer in the same format, such as, top_list:{Candidate Edge 1, Candidate Edge 3, Candidate Edge4}.

For example:
Q: question
exsiting path: {set of entities (with id start with "m.")} -> {set of relationships} -> {set of entities(with id start with "m.")}
Candidate Edge 1:  {set of entities (with id start with "m.")} -> {set of relationships} -> {set of entities(with id start with "m.")}  
Candidate Edge 2:  {set of entities (with id start with "m.")} -> {set of relationships} -> {set of entities(with id start with "m.")}  
Candidate Edge 3:  {set of entities (with id start with "m.")} -> {set of relationships} -> {set of entities(with id start with "m.")}  
Candidate Edge 4:  {set of entities (with id start with "m.")} -> {set of relationships} -> {set of entities(with id start with "m.")}  
A: top_list:{Candidate Edge 1, Candidate Edge 3, Candidate Edge4}

the question is:
"""


def pog_question_analysis_prompt(question: str, topic_entities: Mapping[str, str]) -> str:
    """PoG's question analysis (split questions + thinking indicator), as `run_split_question_prompt` builds it."""
    return (POG_QUESTION_ANALYSIS_PROMPT + "\nQ:\n Question: " + question + "\n"
            + "Main Topic Entities: \n" + str(dict(topic_entities)) + "\n" + "A:\n")


def pog_path_select_prompt(question: str, analysis: str, paths: Sequence[str]) -> str:
    """PoG's precise path selection over numbered candidate paths (`beam_path_select`)."""
    listing = "".join(f"Path {i}: {path}\n" for i, path in enumerate(paths, start=1))
    return POG_PATH_SELECT_PROMPT + "\nQ: " + question + f"\n {analysis}" + "\nThe entity list is: \n" + listing


def pog_edge_select_prompt(question: str, analysis: str, existing: Sequence[str], edges: Sequence[str]) -> str:
    """PoG's node-expansion selection of candidate edges given the existing paths (`beam_path_expand_select`)."""
    have = "".join(f"existing_path {j}: {path}\n" for j, path in enumerate(existing, start=1))
    listing = "".join(f"Candidate Edge {i}: {edge}\n" for i, edge in enumerate(edges, start=1))
    return POG_EDGE_SELECT_PROMPT + "\nQ: " + question + f"\n {analysis}" + have + "\n\nThe Candidate Edge list is: \n" + listing


# -- PoG (Tan et al.) ------------------------------------------------------------------------------------
# PoG appendix E templates (the paper prints their instructions; the few-shot examples are not published).
POG_SUPPLEMENT_PROMPT = (
    "Using the main question, a possibly uncertain chain of thought generated by a language model, some related "
    "split questions, paths from the \"Related_paths\" section, and main topic entities: please first provide three "
    "predicted results, and second offer three possible chains of thought that could lead to these results, using "
    "the provided knowledge paths and your own knowledge. If any answers are unclear, suggest alternative answers to "
    "fill in the gaps in the chains of thought, following the same format as the provided examples.\n"
    "Answer in this format:\nPredict 1: {entity}\nThinking Cot 1: \"topic\" - relation - answer(entity) - ...\n")


POG_SUMMARY_PROMPT = (
    "Given a main question, an uncertain LLM-generated thinking Cot that considers all the entities, a few split "
    "questions that you can use one by one and finally obtain the final answer, the associated accuracy retrieved "
    "knowledge paths from the Related paths section, and main topic entities. Your task is to summarize the provided "
    "knowledge triple in the Related paths section and generate a chain of thoughts by the knowledge triple related "
    "to the main topic entities of the question, which will used for generating the answer for the main question and "
    "split question further. You have to make sure you summarize correctly by using the provided knowledge triple, "
    "you can only use the entity with id from the given path and you can not skip in steps.\n")


POG_EVALUATE_PROMPT = (
    "Given a main question, an uncertain LLM-generated thinking Cot that considers all the entities, a few split "
    "questions that you can use and finally obtain the final answer, and the associated retrieved knowledge graph "
    "path, {set of entities (with id start with \"m.\")} -> {set of relationships} -> {set of entities(with id start "
    "with \"m.\")}. Your task is to determine if this knowledge graph path is sufficient to answer the given split "
    "question first then the main question. If it's sufficient, you need to respond {Yes} and provide the answer to "
    "the main question. If the answer is obtained from the given knowledge path, it should be the entity name from "
    "the path. Otherwise, you need to response {No}, then explain the reason.\n")


POG_GENERATE_PROMPT = (
    "Given a main question, an uncertain LLM-generated thinking Cot that considers all the entities, a few split "
    "questions that you can use one by one and finally obtain the final answer, and the associated retrieved "
    "knowledge graph path, {set of entities (with id start with \"m.\")} -> {set of relationships} -> {set of "
    "entities(with id start with \"m.\")}, Your task is to generate the answer based on the given knowledge graph "
    "path and your own knowledge. Give the answer in braces, e.g. {answer}.\n")
