"""Where a run caches answers and how it uses them, as one frozen value object.

`CacheOptions` is what the CLI's `--cache-dir`, `--no-cache`, `--offline`, `--refresh` and `--max-age`
become, what a `RunSpec` carries to worker processes and Ray actors (frozen and picklable: a location
string, flags and a number, no open store), and what `KG.open(spec, cache=...)` and the session read.
It lives in the cache layer, below the KG facade that takes it; `kgfed.engine.config` re-exports it.
The guarantees behind each flag are in docs/trust.md.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["CacheOptions"]


@dataclass(frozen=True)
class CacheOptions:
    """Where answers are cached and how they are used (see docs/trust.md for the guarantees)."""

    root: str | None = None  # a directory or redis://HOST:PORT/DB; None: $KGFED_CACHE_DIR, else ~/.cache/kgfed
    enabled: bool = True
    offline: bool = False  # answer only from the cache; a miss is an error
    refresh: bool = False  # re-fetch every answer once and store the new one
    max_age: float | None = None  # seconds; None: the endpoint's default (a week for live Wikidata, else never stale)

    def resolved(self) -> CacheOptions:
        """A copy whose root is explicit (an absolute directory or a Redis URL, `$KGFED_CACHE_DIR` read now),
        so other processes and Ray actors on any node open the same stores; unchanged with the cache off."""
        if not self.enabled:
            return self
        from .root import CacheSpec

        return replace(self, root=CacheSpec.of(self.root).location)
