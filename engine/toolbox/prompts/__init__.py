"""The methods' prompt templates, verbatim, with their renderers and forgiving reply parsers.

One module per method, the reply parsers beside them:

- `tog`: ToG's templates (IDEA-FinAI/ToG `ToG/prompt_list.py`): relation pruning, entity scoring,
  sufficiency evaluation, answer, direct generation, their Wikidata (`*_WIKI`) variants, and the
  renderers that reproduce ToG's string building byte for byte (`exact=False` repairs its quirks).
- `tog2`: ToG-2's reasoning prompt (appendix E, table 18).
- `pog`: PoG's question analysis, path and edge selection (from its authors' HydraRAG repository,
  matching appendix E of the PoG paper) and the paper's supplement/summary/evaluate/generate templates.
- `hydra`: HydraRAG's source selection and refinement (it asks PoG's prompts for the rest).
- `inses`: INSES's templates (appendix B and F) and kgfed's router prompt.
- `proh`: PRoH's prompts (kgfed's: the paper defers its own to an unavailable repository).
- `common`: what several share: ToG's system message and how triplets are printed.
- `parsers`: the reply parsers; they never crash on odd replies: they return what is usable or raise
  a one-line `LLMError`.

Recorded real-model replies are replayed by prompt (`toolbox.llm_replay.prompt_key`), so not a byte of a
template may change. Every name is importable from `kgfed.engine.toolbox.prompts` itself, as when this
was one module (see docs/llm.md for the sources and the quirks kept).
"""
from __future__ import annotations

from .common import TOG_SYSTEM, Triple, tog_triplets
from .hydra import HYDRA_REFINE_PROMPT, HYDRA_SOURCE_SELECT_PROMPT
from .inses import (
    INSES_ANSWER_PROMPT, INSES_EXTRACT_ENTITIES_PROMPT, INSES_NAVIGATION_PROMPT, INSES_RAG_PROMPT, INSES_ROUTER_PROMPT,
)
from .parsers import (
    QuestionAnalysis, braced, extract_answer, json_object, parse_entity_scores, parse_path_selection,
    parse_question_analysis, parse_relation_scores, parse_sufficient,
)
from .pog import (
    POG_EDGE_SELECT_PROMPT, POG_EVALUATE_PROMPT, POG_GENERATE_PROMPT, POG_PATH_SELECT_PROMPT,
    POG_QUESTION_ANALYSIS_PROMPT, POG_SUMMARY_PROMPT, POG_SUPPLEMENT_PROMPT, pog_edge_select_prompt,
    pog_path_select_prompt, pog_question_analysis_prompt,
)
from .proh import (
    PROH_DIRECTIONS_PROMPT, PROH_FINAL_PROMPT, PROH_JUDGE_PROMPT, PROH_PATHS_PROMPT, PROH_PLAN_PROMPT,
    PROH_REFINE_PROMPT, PROH_SCORE_PROMPT, PROH_STEP_PROMPT,
)
from .tog import (
    ANSWER_PROMPT, ANSWER_PROMPT_WIKI, EXTRACT_RELATION_PROMPT, EXTRACT_RELATION_PROMPT_WIKI, GENERATE_DIRECTLY,
    PROMPT_EVALUATE, PROMPT_EVALUATE_WIKI, SCORE_ENTITY_CANDIDATES_PROMPT, SCORE_ENTITY_CANDIDATES_PROMPT_WIKI,
    tog_answer_prompt, tog_entity_prompt, tog_evaluate_prompt, tog_generate_directly_prompt, tog_relation_prompt,
)
from .tog2 import TOG2_REASONING_PROMPT, Group, tog2_reasoning_prompt

__all__ = [
    # common
    "TOG_SYSTEM", "Triple", "tog_triplets",
    # ToG
    "ANSWER_PROMPT", "ANSWER_PROMPT_WIKI", "EXTRACT_RELATION_PROMPT", "EXTRACT_RELATION_PROMPT_WIKI", "GENERATE_DIRECTLY",
    "PROMPT_EVALUATE", "PROMPT_EVALUATE_WIKI", "SCORE_ENTITY_CANDIDATES_PROMPT", "SCORE_ENTITY_CANDIDATES_PROMPT_WIKI",
    "tog_answer_prompt", "tog_entity_prompt", "tog_evaluate_prompt", "tog_generate_directly_prompt", "tog_relation_prompt",
    # ToG-2
    "TOG2_REASONING_PROMPT", "Group", "tog2_reasoning_prompt",
    # PoG
    "POG_EDGE_SELECT_PROMPT", "POG_EVALUATE_PROMPT", "POG_GENERATE_PROMPT", "POG_PATH_SELECT_PROMPT",
    "POG_QUESTION_ANALYSIS_PROMPT", "POG_SUMMARY_PROMPT", "POG_SUPPLEMENT_PROMPT", "pog_edge_select_prompt",
    "pog_path_select_prompt", "pog_question_analysis_prompt",
    # HydraRAG
    "HYDRA_REFINE_PROMPT", "HYDRA_SOURCE_SELECT_PROMPT",
    # INSES
    "INSES_ANSWER_PROMPT", "INSES_EXTRACT_ENTITIES_PROMPT", "INSES_NAVIGATION_PROMPT", "INSES_RAG_PROMPT",
    "INSES_ROUTER_PROMPT",
    # PRoH
    "PROH_DIRECTIONS_PROMPT", "PROH_FINAL_PROMPT", "PROH_JUDGE_PROMPT", "PROH_PATHS_PROMPT", "PROH_PLAN_PROMPT",
    "PROH_REFINE_PROMPT", "PROH_SCORE_PROMPT", "PROH_STEP_PROMPT",
    # reply parsers
    "QuestionAnalysis", "braced", "extract_answer", "json_object", "parse_entity_scores", "parse_path_selection",
    "parse_question_analysis", "parse_relation_scores", "parse_sufficient",
]
