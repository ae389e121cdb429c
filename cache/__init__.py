
from __future__ import annotations

from typing import TYPE_CHECKING

from ..sparql.lazy import exports

__all__ = ["BACKENDS", "Backend", "CacheError", "CacheOptions", "CacheSpec", "ResponseCache", "Store", "open_store",
           "track"]

if TYPE_CHECKING:
    from .costs import track
    from .options import CacheOptions
    from .responses import ResponseCache
    from .root import BACKENDS, Backend, CacheError, CacheSpec, Store, open_store

# the front door, each name imported on first use (PEP 562): importing the package loads none of them
__getattr__, __dir__ = exports(__name__, {
    "track": ".costs",
    "CacheOptions": ".options",
    "ResponseCache": ".responses",
    "BACKENDS": ".root", "Backend": ".root", "CacheError": ".root", "CacheSpec": ".root", "Store": ".root", "open_store": ".root",
})
