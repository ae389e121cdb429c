"""kgfed's engine: the KG facade, federation, the reasoning methods, the KBQA harness, MCP and the CLI.

`__version__` is the package's version (pyproject.toml reads it from here). The names below are the engine's
front door, each imported on first use (PEP 562), so `import kgfed.engine` loads nothing else and changes no
import machinery:

    from kgfed.engine import KG, Session, KGSpec, HttpOptions, CacheOptions, make_llm, get_method

The 0.1.0 module paths (`kgfed.engine.sync`, `kgfed.engine.llm`, …), deprecated in 0.2.0, were removed in
0.3.0: docs/migration.md maps each to its home.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.3.0"

# public name -> the module it lives in (imported on first use)
_LAZY: dict[str, str] = {
    "KG": "kgfed.engine.kg.facade",
    "SyncKG": "kgfed.engine.kg.sync",
    "Session": "kgfed.engine.session",
    "SessionSpec": "kgfed.engine.config",
    "KGSpec": "kgfed.engine.config",
    "HttpOptions": "kgfed.engine.config",
    "CacheOptions": "kgfed.engine.config",
    "AlignOptions": "kgfed.engine.config",
    "RunSpec": "kgfed.engine.harness.runner",
    "make_llm": "kgfed.engine.toolbox.llm",
    "get_method": "kgfed.engine.methods",
    "KgfedError": "kgfed.sparql.errors",
}

__all__ = ["__version__", "AlignOptions", "CacheOptions", "HttpOptions", "KG", "KGSpec", "KgfedError", "RunSpec", "Session",
           "SessionSpec", "SyncKG", "get_method", "make_llm"]

if TYPE_CHECKING:
    from ..sparql.errors import KgfedError
    from .config import AlignOptions, CacheOptions, HttpOptions, KGSpec, SessionSpec
    from .harness.runner import RunSpec
    from .kg.facade import KG
    from .kg.sync import SyncKG
    from .methods import get_method
    from .session import Session
    from .toolbox.llm import make_llm


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}"
                         + (" (removed in kgfed 0.3.0: see docs/migration.md)" if name in _REMOVED else ""))


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


# the 0.1.0 module names, removed in 0.3.0: `from kgfed.engine import sync` says where they went
_REMOVED = frozenset(("model", "sync", "align", "subgraph", "views", "hypergraph", "llm", "local_llm", "prompts",
                      "pruning", "embeddings", "context", "passages", "datasets", "runner", "evaluate", "extract",
                      "doctor", "rog", "mcp_server", "demo", "cli_ask", "cli_context", "cli_endpoints", "cli_extract",
                      "cli_federation", "cli_freebase", "cli_mcp", "cli_run", "MOVED", "REMOVED_IN", "moved_message"))
