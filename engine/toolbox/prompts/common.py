"""What the prompts of several methods share: ToG's system message and its way of printing triplets.

ToG sends `TOG_SYSTEM` with every prompt (`run_llm` in ToG/utils.py); kgfed's relation and entity
pruning (`toolbox.pruning`) sends it for every method that prunes the ToG way. A knowledge triplet is
printed `head, relation, tail`, one a line (`tog_triplets`), as ToG joins its reasoning chains.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

# The system message ToG sends with every prompt (`run_llm` in ToG/utils.py).
TOG_SYSTEM = "You are an AI assistant that helps people find information."

Triple = Sequence[str]  # (head, relation, tail) as ToG prints them


def tog_triplets(triples: Iterable[Triple]) -> str:
    """Knowledge triplets one per line, `head, relation, tail`, as ToG joins its reasoning chains."""
    return "\n".join(", ".join(str(x) for x in triple) for triple in triples)
