"""INSES's prompts (paper 002), verbatim from its appendix B (tables 4-6) and F (table 12), plus kgfed's router.

`str.format` templates with `{query}` (and the navigation prompt's `{visited}`, `{selected}`,
`{current}`, `{adjacent}`; the answer prompts' `{context}`); the replies are JSON, read with
`parsers.json_object`.
"""
from __future__ import annotations

# -- INSES (paper 002): appendix B, tables 4–6, and F, table 12; verbatim --------------------------------
INSES_EXTRACT_ENTITIES_PROMPT = """Your task is to extract several entities from the given query, so they can be used to search a knowledge graph for clues relevant to answering the query.

Return only the entities you extract, separated by commas, with no other text.

Query: {query}"""


INSES_NAVIGATION_PROMPT = """Your task is to provide support for complex queries and multi-hop reasoning in the knowledge graph. Based on the following query, the visited nodes and the selected triplets, as well as the current nodes and their adjacent triplets, select the triplet numbers (separated by commas) from the adjacent triplets of the current nodes that help answer the query.

Selection criteria: Select the triplets that are most relevant to the query and most likely to help answer it.

Then determine:

1. Based on the visited nodes, the selected triplets, and the triplets you just selected, is this information sufficient to answer the query?

2. If so, answer "sufficient";

3. If not, answer "insufficient";

Your response must be in JSON format with two fields:

"determination": "sufficient/insufficient",

"selection": "triplet numbers, e.g., 1, 2, 3"

Query: {query}

The visited nodes:

{visited}

The selected triplets and their corresponding source text:

{selected}

The current nodes:

{current}

The adjacent triplets and their corresponding source text:

{adjacent}"""


INSES_ANSWER_PROMPT = """You are a helpful assistant that provides accurate and concise answers based on the provided knowledge graph information.

Please answer the following query: {query}

The following information is extracted from a knowledge graph, which contains entities, relationships, and relevant text:

{context}

Your response must be in JSON format with two fields:

1. "reasoning": Your step-by-step reasoning process based on the knowledge graph information.

Explain how the entities and relationships help answer the query.

2. "answer": The final answer to the query, as concise as possible without unnecessary explanations.

Example response format:

{{

"reasoning": "Step 1: Identified entity X and its relationship to entity Y. Step 2: Found that entity Z is connected to both X and Y. Step 3: Based on these relationships, concluded that...",

"answer": "Concise answer here"

}}

JSON Response:"""


INSES_RAG_PROMPT = """You are a helpful assistant that provides accurate and concise answers based on the provided context.

Please answer the following query: {query}

Context information is below:

{context}

Your response must be in JSON format with three fields:

1. "reasoning": Your step-by-step reasoning process based on the context.

2. "answer": The final answer to the query, as concise as possible without unnecessary explanations.

3. "confidence": The confidence level of your answer, where 0 means no confidence and 1 means complete certainty. If you cannot derive a reasonable answer from the provided context, the returned confidence level should be low.

Example response format:

{{

"reasoning": "Step 1: ... Step 2: ... Step 3: ...",

"answer": "Concise answer here",

"confidence": 0.8

}}

JSON Response:"""


# Algorithm 2 line 1 ("use LLM to determine if q is related to multi-hop (≥ 3) search") has no prompt in
# the paper; this one is kgfed's, in the style of the tables above.
INSES_ROUTER_PROMPT = """Your task is to decide how a query should be answered. Simple factual queries (one or two reasoning steps) can be answered from retrieved text passages; multi-hop queries need three or more reasoning steps that chain different entities through a knowledge graph.

Your response must be in JSON format with two fields:

"multi_hop": true or false,

"reason": "one short sentence"

Query: {query}

JSON Response:"""
