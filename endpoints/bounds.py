"""The limits of one caller's query, carried by a context variable (`bounded(...)`), and one answer's budget.

Inside `with bounded(timeout=..., memory_mb=..., ...)` (the MCP `sparql` tool, `KG.select` of a caller's query):

- a file store runs the query in a killable worker process (`endpoints.embedded.QueryWorkers`) for at most
  `timeout` seconds and `memory_mb` MB on top of the loaded store;
- an HTTP endpoint sends `timeout` to the server where the server takes one (Virtuoso's `timeout` in ms, QLever's
  `timeout` in seconds: `endpoints.http`), so the endpoint stops the query when kgfed stops waiting;
- every answer is at most `max_bytes` of SPARQL-JSON (the transport stops reading past it), and at most
  `max_rows` rows and `max_terms` bound terms are built from it (`sparql.results.AnswerBudget`).

Outside such a block kgfed's own 1-hop templates run with the endpoint's defaults (the same budget, the
transport's 256 MiB cap). Light on purpose: no pyoxigraph, no aiohttp (the HTTP path imports it).
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from ..sparql.results import AnswerBudget
from .options import (DEFAULT_MAX_ROWS, DEFAULT_MAX_TERMS, DEFAULT_QUERY_MEMORY_MB, DEFAULT_QUERY_WORKERS,
                      DEFAULT_TIMEOUT)

MAX_BODY_BYTES = 256 << 20  # an answer larger than this (decompressed SPARQL-JSON) is an error
DEFAULT_BUDGET = AnswerBudget(DEFAULT_MAX_ROWS, DEFAULT_MAX_TERMS)

__all__ = ["Bounds", "bounded", "current_bounds", "answer_budget", "MAX_BODY_BYTES"]


@dataclass(frozen=True)
class Bounds:
    """Limits of an untrusted caller's query: seconds, extra memory of its worker, workers per store, bytes, rows
    and bound terms of its answer (defaults: `endpoints.options`, the HTTP transport's body cap)."""

    timeout: float = DEFAULT_TIMEOUT
    memory_mb: int = DEFAULT_QUERY_MEMORY_MB
    workers: int = DEFAULT_QUERY_WORKERS
    max_bytes: int = MAX_BODY_BYTES
    max_rows: int = DEFAULT_MAX_ROWS
    max_terms: int = DEFAULT_MAX_TERMS

    def budget(self) -> AnswerBudget:
        return AnswerBudget(self.max_rows, self.max_terms)


_BOUNDS: ContextVar[Bounds | None] = ContextVar("kgfed_embedded_bounds", default=None)


@contextlib.contextmanager
def bounded(timeout: float = DEFAULT_TIMEOUT, memory_mb: int = DEFAULT_QUERY_MEMORY_MB,
            workers: int = DEFAULT_QUERY_WORKERS, max_bytes: int = MAX_BODY_BYTES, max_rows: int = DEFAULT_MAX_ROWS,
            max_terms: int = DEFAULT_MAX_TERMS) -> Iterator[Bounds]:
    """Queries made inside this block (tasks started inside inherit it) run under these limits (module docstring)."""
    limits = Bounds(float(timeout), int(memory_mb), max(1, int(workers)), max(1, int(max_bytes)), max(1, int(max_rows)),
                    max(1, int(max_terms)))
    token = _BOUNDS.set(limits)
    try:
        yield limits
    finally:
        _BOUNDS.reset(token)


def current_bounds() -> Bounds | None:
    """The limits of the enclosing `bounded(...)` block (None outside one)."""
    return _BOUNDS.get()


def answer_budget(default: AnswerBudget | None = None) -> AnswerBudget:
    """The answer budget here: the tighter of the enclosing block's and `default` (the endpoint's: the run's
    `HttpOptions.max_rows`/`max_terms`), else the defaults of `endpoints.options`."""
    own = default or DEFAULT_BUDGET
    limits = _BOUNDS.get()
    if limits is None:
        return own
    return AnswerBudget(min(own.rows, limits.max_rows), min(own.terms, limits.max_terms))
