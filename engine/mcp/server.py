"""kgfed as an MCP server: the engine's lookups, federation, text and reasoning methods as agent tools.

    kgfed mcp                                             # stdio, the demo KGs (Freebase + Wikidata)
    kgfed mcp --transport http --port 8765 --kg wikidata --endpoint wikidata=wikidata

One `Engine` is opened per server run and shared by every MCP session and every tool call, over one
`kgfed.engine.session.Session`: the KGs from `--kg/--endpoint` (one response cache, one HTTP client with
its per-host caps, the same record/replay/offline switches as every command), one `Aligner`, and lazily
the text source, the LLM (an HTTP one on the same client) and the embedder. Tools are thin: each validates its arguments (the dialects validate every
id before it reaches a query), runs the engine call inside `track()` so the result reports what it
cost (SPARQL queries, cache hits, requests sent), and returns structured content (ids, labels, KG,
direction) plus a compact text for the model. Every `KgfedError` becomes an MCP tool error carrying
kgfed's one-line message; anything else becomes one line naming the exception, never a traceback.

The `sparql` tool is read-only by construction (`kgfed.sparql.guard`): the query is cut into the SPARQL
grammar's own tokens and judged on them, and the store is sent exactly those tokens, so no comment, line
end or escape can hide an update, a FROM clause or a SERVICE from the guard. A SERVICE may reach only the
queried KG's own endpoint origin (scheme, host and port) and, on WDQS, its built-in services; the whole
query is wrapped under `LIMIT max_rows+1`. On a local file store the query runs in a killable worker
process under `--timeout` and `--query-memory` (`endpoints.embedded.bounded`), and `sparql` calls have a
semaphore of their own, so a heavy query cannot hold up the other tools' 1-hop lookups. It goes through
the response cache and the `--partial` policy like every lookup. Everything shown to a client (the
instructions, `kgfed://kgs`, tool errors) passes through `kgfed.sparql.secrets.redact`.

The package is split by concern: `schemas` (limits and the tools' result models), `service` (`Engine`,
`ServerOptions`, the path finder), `wiring` (the MCP tools, resources, prompt and transports: it imports
the `mcp` SDK at top level, so import this module only from the `kgfed mcp` handler). This module is the
server's front door: `serve`, `build_server`, `Engine`, `ServerOptions` and the result models. The read-only
guard's names (`check_read_only`, `ServicePolicy`, …) and the private helpers it re-exported until 0.3.0 live in
`kgfed.sparql.guard` and the modules above (docs/migration.md).
"""
from __future__ import annotations

from .schemas import *  # noqa: F403
from .schemas import __all__ as _schema_names
from .service import Engine, ServerOptions, connecting_paths, relation_vocabulary
from .wiring import INSTRUCTIONS, READ_ONLY, SHUTDOWN_GRACE, KgfedMCP, Progress, build_server, serve

__all__ = [*_schema_names, "Engine", "ServerOptions", "connecting_paths", "relation_vocabulary", "INSTRUCTIONS",
           "READ_ONLY", "SHUTDOWN_GRACE", "KgfedMCP", "Progress", "build_server", "serve"]
