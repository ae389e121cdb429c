"""Per-id entity alignment outcomes: the cache root's `alignments` store.

`kgfed.engine.federation.align.Aligner` asks, for an id in one KG, which entity it is in another
(Wikidata's Freebase-ID claims, labels, label embeddings), and keeps each outcome here so a repeated
alignment sends no query. An outcome is a small JSON object (`{"target": id | None, "method": ...,
"confidence": ..., "ambiguous": [...]}`) under the aligner's key (its method steps, the two KGs and
the id); the store is the root's `alignments` (`ROOT/alignments` on disk, `kgfed:alignments:*` on Redis).
A store that fails (a full disk) costs one warning and is off for the rest of the run, as the response
cache is (`cache.failsafe`): an alignment is still returned, only not kept.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .failsafe import failsafe
from .root import DiskStore, Store, open_store

__all__ = ["AlignmentCache", "Outcome"]

Outcome = dict[str, Any]  # {"target": id | None, "method": str | None, "confidence": float, "ambiguous": [ids]}


class AlignmentCache:
    """Per-id alignment outcomes over one `Store` (the root's `alignments`).

    `store`: a `kgfed.cache.root.Store` (e.g. a session's `store("alignments")`); else `directory`, a
    store of its own there; else the default root's `alignments` store.
    """

    def __init__(self, directory: str | os.PathLike | None = None, *, store: Store | None = None):
        if store is None:
            store = DiskStore(directory) if directory is not None else open_store(None, "alignments")
        self.directory = Path(store.location) if isinstance(getattr(store, "inner", store), DiskStore) else None
        self._cache = failsafe(store, "alignments")

    def get(self, key: str) -> Outcome | None:
        raw = self._cache.get(key)
        return None if raw is None else json.loads(raw)

    def set(self, key: str, value: Outcome) -> None:
        self._cache.set(key, json.dumps(value, separators=(",", ":")).encode("utf-8"))

    def __len__(self) -> int:
        return len(self._cache)
