"""Several KGs as one: entity alignment, the merged subgraph, its views, the hypergraph.

`align` finds the same entity in the other KG (cross-KG id properties, then labels); `subgraph`
expands a merged graph hop by hop over every KG and merges aligned nodes; `views` draws it;
`hypergraph` groups edges into the hyperedges INSES and PRoH walk.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...sparql.lazy import exports

__all__ = ["Aligner", "expand"]

if TYPE_CHECKING:
    from .align import Aligner
    from .subgraph import expand

# the front door, each name imported on first use (PEP 562): importing the package loads none of them
__getattr__, __dir__ = exports(__name__, {
    "Aligner": ".align",
    "expand": ".subgraph",
})
