"""The KBQA harness: question files (`datasets`, `rog`), runs with journals and resumption
(`runner`), ToG-compatible scoring (`evaluate`), and leak-free fixture subgraphs (`extract`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...sparql.lazy import exports

__all__ = ["Question", "Report", "RunSpec", "Runtime", "load_dataset", "run"]

if TYPE_CHECKING:
    from .datasets import Question, load_dataset
    from .evaluate import Report
    from .runner import RunSpec, Runtime, run

# the front door, each name imported on first use (PEP 562): importing the package loads none of them
__getattr__, __dir__ = exports(__name__, {
    "Question": ".datasets", "load_dataset": ".datasets",
    "Report": ".evaluate",
    "RunSpec": ".runner", "Runtime": ".runner", "run": ".runner",
})
