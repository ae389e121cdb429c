"""HydraRAG's own prompts (Tan et al.): source selection and the refinement of a question.

HydraRAG is PoG's authors' successor and asks PoG's prompts (`prompts.pog`) for everything else.
"""
from __future__ import annotations

# -- HydraRAG (Tan et al.) -------------------------------------------------------------------------------
HYDRA_SOURCE_SELECT_PROMPT = (
    "You are a source selection agent. Your task is to decide the most appropriate knowledge source(s) to answer a "
    "user's question. You will be provided with up to three sources: Local Knowledge Graph (KG) Wiki Documents (Wiki) "
    "Web Search (Web). Follow these steps carefully:\nI. Analyze the question thoroughly.\nII. Prioritize KG if "
    "available: If KG alone is sufficient, select KG. If KG is incomplete, check if Wiki can fill the missing "
    "information. If so, combine KG with Wiki. If neither KG nor Wiki suffices, include Web search.\nIII. If KG is "
    "unavailable: Choose between Wiki and Web based on recency and the likely completeness of the Wiki documents.\n"
    "Clearly state your reasoning, and then indicate your decision using these actions:\naction1 for KG\naction2 for "
    "Wiki\naction3 for Web\nNoted, combinations allowed (e.g., [action1 + action2]).\n")


HYDRA_REFINE_PROMPT = (
    "Given a main question, an uncertain LLM-generated thinking Cot that considers all the entities, a few split "
    "questions that you can use and finally obtain the final answer, the associated accuracy retrieved knowledge "
    "paths from the Related_path section, and the main topic entities Please predict the additional evidence that "
    "needs to be found to answer the current question, then provide a suitable query for retrieving this potential "
    "evidence. and give the possible Chains of Thought that can lead to the predicted result in the same format "
    "below, by the given knowledge path and your own knowledge.\nAnswer in this format:\nNew question: ...\n"
    "Thinking Cot: \"topic\" - relation - answer(type) - ...\n")
