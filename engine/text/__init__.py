"""Text context beside the KG: Wikipedia pages for an entity (`context`), cut into chunks and ranked
(`passages`), as ToG-2 and HydraRAG read them."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...sparql.lazy import exports

__all__ = ["open_text_source", "rank"]

if TYPE_CHECKING:
    from .context import open_text_source
    from .passages import rank

# the front door, each name imported on first use (PEP 562): importing the package loads none of them
__getattr__, __dir__ = exports(__name__, {
    "open_text_source": ".context",
    "rank": ".passages",
})
