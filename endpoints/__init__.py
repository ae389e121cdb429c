
from __future__ import annotations

from typing import TYPE_CHECKING

from ..sparql.lazy import exports

__all__ = ["Endpoint", "HttpClient", "HttpOptions", "MockTransport", "PROFILES", "ServerKind", "resolve_endpoint"]

if TYPE_CHECKING:
    from .base import Endpoint
    from .client import HttpClient
    from .options import HttpOptions
    from .profiles import PROFILES, resolve_endpoint
    from .kinds import ServerKind
    from .transport import MockTransport

# the front door, each name imported on first use (PEP 562): importing the package loads none of them
__getattr__, __dir__ = exports(__name__, {
    "Endpoint": ".base",
    "HttpClient": ".client",
    "HttpOptions": ".options",
    "PROFILES": ".profiles", "resolve_endpoint": ".profiles",
    "MockTransport": ".transport",
    "ServerKind": ".kinds",
})
