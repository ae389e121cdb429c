"""The one transport interface every SPARQL source implements (HTTP, embedded store, cache wrapper)."""
from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..sparql.results import SelectResult


@runtime_checkable
class Endpoint(Protocol):
    """An async SPARQL SELECT source.

    `name` identifies the data behind it (URL + graph, or file path + fingerprint): the response cache
    keys on it, so two endpoints with the same name must give the same answers.
    """

    @property
    def name(self) -> str:
        """The data's identity (an attribute or a read-only property in implementations)."""
        ...

    async def select(self, query: str) -> SelectResult:
        """Run a SELECT (or ASK) query; raise `EndpointError` on failure, never return a silent empty."""
        ...

    async def aclose(self) -> None:
        """Release connections/threads (idempotent)."""
        ...
