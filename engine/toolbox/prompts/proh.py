"""PRoH's prompts (paper 004). The paper defers its prompts to its repository, which is not available,
so these are kgfed's, in the style of INSES's: `str.format` templates whose replies are JSON
(read with `parsers.json_object`).
"""
from __future__ import annotations

# -- PRoH (paper 004): the paper defers its prompts to its repository (not available here); these are kgfed's --
PROH_PLAN_PROMPT = """You are planning how to answer a question from a knowledge hypergraph. Decompose the question into a small number of sub-questions, each answerable by one or two facts, and state which sub-questions must be answered before which. Refer to the answer of sub-question k as #k.

Question: {question}
Topic entities: {topics}
Knowledge around the topic entities (nearest first):
{context}

Your response must be in JSON format:
{{"subquestions": [{{"id": 1, "question": "...", "depends_on": []}}, {{"id": 2, "question": "... #1 ...", "depends_on": [1]}}]}}

JSON Response:"""


PROH_REFINE_PROMPT = """You are refining a reasoning plan while answering a question. Some sub-questions are answered. Rewrite the unanswered sub-questions so that they use the answers found (replace #k by the answer), and add a sub-question only if it is needed.

Question: {question}
Answered sub-questions:
{answered}
Unanswered sub-questions:
{open}

Your response must be in JSON format:
{{"subquestions": [{{"id": 2, "question": "...", "depends_on": [1]}}]}}

JSON Response:"""


PROH_SCORE_PROMPT = """Rate how relevant each entity is for answering the question, from 0 (irrelevant) to 1 (essential).

Question: {question}
Entities:
{entities}

Your response must be in JSON format, one score per entity number: {{"1": 0.9, "2": 0.1}}

JSON Response:"""


PROH_DIRECTIONS_PROMPT = """Select up to {b} reasoning paths over a knowledge hypergraph that are most promising to extend towards the answer of the question.

Question: {question}
Candidate paths:
{paths}

Your response must be in JSON format: {{"selection": "path numbers, e.g., 1, 2"}}

JSON Response:"""


PROH_PATHS_PROMPT = """Decide which reasoning paths give enough knowledge to answer the question. Select none if no path is sufficient.

Question: {question}
Candidate paths:
{paths}

Your response must be in JSON format: {{"selection": "path numbers, e.g., 1, 2, or empty"}}

JSON Response:"""


PROH_STEP_PROMPT = """Answer the question using only the knowledge below. Give every answer the knowledge supports, most likely first, as entity names exactly as written.

Question: {question}
Knowledge:
{context}

Your response must be in JSON format: {{"answers": ["..."]}}

JSON Response:"""


PROH_FINAL_PROMPT = """Answer the question using the reasoning steps and the knowledge retrieved for them.

Question: {question}
Reasoning steps:
{steps}

Your response must be in JSON format with two fields: {{"reasoning": "...", "answer": "concise answer"}}

JSON Response:"""


PROH_JUDGE_PROMPT = """Several reasoning processes answered the same question. Choose the answer most consistent with its reasoning path.

Question: {question}
Candidates:
{candidates}

Your response must be in JSON format: {{"choice": candidate number}}

JSON Response:"""
