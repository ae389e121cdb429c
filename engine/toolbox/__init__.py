"""What methods reason with: LLM providers (`llm`, the front door, with `llm_base`, `llm_gate`, `llm_providers`,
`llm_replay`; `local_llm`; the gold stand-in `gold_llm` with `gold_reader`, `gold_replies`), prompts and their
reply parsers (`prompts/`: one module per method, and `parsers`), pruning strategies (`pruning`), and the sentence
embedder (`embeddings`, `encoders`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...sparql.lazy import exports

__all__ = ["Completion", "Embedder", "LLM", "NoLLM", "PROVIDERS", "PathBeam", "PruneSettings", "ask", "make_llm"]

if TYPE_CHECKING:
    from .embeddings import Embedder
    from .llm import PROVIDERS, ask, make_llm
    from .llm_base import Completion, LLM, NoLLM
    from .pruning import PathBeam, PruneSettings

# the front door, each name imported on first use (PEP 562): importing the package loads none of them
__getattr__, __dir__ = exports(__name__, {
    "Embedder": ".embeddings",
    "PROVIDERS": ".llm", "ask": ".llm", "make_llm": ".llm",
    "Completion": ".llm_base", "LLM": ".llm_base", "NoLLM": ".llm_base",
    "PathBeam": ".pruning", "PruneSettings": ".pruning",
})
