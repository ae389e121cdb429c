"""How a run talks HTTP, as one frozen value object: the home of every HTTP default.

`HttpOptions` is what the CLI's `--timeout`, `--user-agent`, `--contact` and `--concurrency` become,
what a `RunSpec` carries to worker processes and Ray actors (it is frozen and picklable: numbers and
strings, no client), and what `HttpClient.from_options` turns into the run's one client. The
defaults below are written here and nowhere else: `HttpClient`'s own keyword defaults read them, so
a client built with no arguments and one built from `HttpOptions()` behave the same.

It lives in the endpoints layer (beside the client it configures) so that `endpoints` and `cache`
can take it without importing the engine; `kgfed.engine.config` re-exports it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .client import HttpClient
    from .transport import AsyncTransport

__all__ = ["HttpOptions", "DEFAULT_TIMEOUT", "DEFAULT_PER_HOST", "DEFAULT_RETRIES", "DEFAULT_QUERY_MEMORY_MB",
           "DEFAULT_QUERY_WORKERS", "DEFAULT_MAX_ROWS", "DEFAULT_MAX_TERMS", "DEFAULT_READ_GAP", "TOOL_ANSWER_BYTES"]

DEFAULT_TIMEOUT = 60.0  # seconds per request (WDQS's own per-query limit)
DEFAULT_PER_HOST = 16  # requests in flight to a host without published rules (a local Virtuoso/Oxigraph)
DEFAULT_RETRIES = 4  # retries of a 5xx answer or a dropped connection, with exponential backoff
# A caller's query on a file store (`KG.select`, `kgfed query`, the MCP `sparql` tool) runs in a killable worker
# process (`endpoints.embedded.bounded`): at most `timeout` seconds, this much memory on top of the loaded store.
DEFAULT_QUERY_MEMORY_MB = 512
DEFAULT_QUERY_WORKERS = 2  # worker processes per file store (each holds a copy of it): queries at once
# One answer's budget (`sparql.results.AnswerBudget`): rows, and bound terms (rows x their bound variables), counted
# while the SPARQL-JSON is parsed; past either, one line naming it. A parsed row of one short IRI costs about 0.4 kB
# (row dict, Term, the string), so 500k rows or 1M terms stay near 0.4 GB on top of the body (at most 256 MiB): the
# client stays under 1 GB. kgfed's own 1-hop answers are far smaller (a batch of 100 ids: thousands of rows).
DEFAULT_MAX_ROWS = 500_000
DEFAULT_MAX_TERMS = 1_000_000
DEFAULT_READ_GAP = 10.0  # seconds: once the headers are in, a body that goes quiet this long is a timeout
# The MCP `sparql` tool's answer (at most 200 rows for an agent to read) in bytes of SPARQL-JSON: two calls at once,
# their worker processes and the tool's own reply stay well under 1 GB (the HTTP cap of any answer is 256 MiB).
TOOL_ANSWER_BYTES = 16 << 20


@dataclass(frozen=True)
class HttpOptions:
    """How a run talks HTTP: timeout per request, User-Agent or contact, parallel requests per host.

    `concurrency` (the CLI's `--concurrency`) caps every host, the polite public ones included (it can
    lower WDQS's 5, never raise a Wikimedia API host's 3); None leaves each host its own default (WDQS 5,
    QLever 4, Wikimedia APIs 3, others `per_host`). `user_agent` None builds kgfed's User-Agent around
    `contact` (else `$KGFED_CONTACT`, else the config file's `contact`). `timeout` and `query_memory_mb` also
    bound a caller's query on a file store (`KG.select`, run in a killable worker process); `timeout` is sent to
    the server too where it takes one (Virtuoso, QLever). `max_rows` and `max_terms` bound one answer: counted
    while it is parsed, past either it is one line naming the bound (`sparql.results.AnswerBudget`)."""

    timeout: float = DEFAULT_TIMEOUT
    user_agent: str | None = None
    contact: str | None = None
    concurrency: int | None = None
    per_host: int = DEFAULT_PER_HOST  # the cap for hosts without published rules when `concurrency` is None
    retries: int = DEFAULT_RETRIES
    query_memory_mb: int = DEFAULT_QUERY_MEMORY_MB  # a file store's worker: memory a caller's query may add (--query-memory)
    max_rows: int = DEFAULT_MAX_ROWS  # rows of one answer, counted as it is parsed (past it: one line naming the bound)
    max_terms: int = DEFAULT_MAX_TERMS  # bound terms of one answer (rows x bound variables)

    def client(self, *, transport: AsyncTransport | None = None) -> HttpClient:
        """A new `HttpClient` with these options over `transport` (None: aiohttp; the caller closes it): the one
        call of `HttpClient.from_options` outside tests, made for a `Session` (`kgfed.engine.session`), which owns it,
        and for the one-owner conveniences (`KG.open` without a client, an HTTP LLM used outside a session)."""
        from .client import HttpClient

        return HttpClient.from_options(self, transport=transport)
