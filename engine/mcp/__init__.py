"""kgfed for LLM agents: the MCP server (`server`) exposing the 1-hop tools over stdio and HTTP."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...sparql.lazy import exports

__all__ = ["Engine", "ServerOptions", "build_server", "serve"]

if TYPE_CHECKING:
    from .service import Engine, ServerOptions
    from .wiring import build_server, serve

# the front door, each name imported on first use (PEP 562): importing the package loads none of them
__getattr__, __dir__ = exports(__name__, {
    "Engine": ".service", "ServerOptions": ".service",
    "build_server": ".wiring", "serve": ".wiring",
})
