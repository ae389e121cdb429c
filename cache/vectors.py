"""Sentence vectors keyed by (model id, text): the cache root's `embeddings` store.

`kgfed.engine.toolbox.embeddings.Embedder` keeps every vector it encodes here, so a text is encoded
once per model, and a rerun (or another process, or on a Redis root another machine) reads it back.
A vector is the float32 bytes of one unit vector (384 of them for all-MiniLM-L6-v2), stored under
`MODEL_ID\\nTEXT` (a string key of the `Store` protocol: `ROOT/embeddings` on disk,
`kgfed:embeddings:*` on Redis).

Three ways in, for three costs:

- `get_many`: the vectors of a few texts (a diskcache `get` each, ~50 µs; one `MGET` on Redis);
- `add_many`: store new vectors, first writer wins (`Store.add_many`): a text encoded twice at once,
  by two processes in batches of other texts (which shifts the last float bits), still gets one
  vector, and everyone uses the stored one, so a warm rerun sees exactly the numbers the cold run used;
- `load_all`: every vector of a model at once, for a replay, when the store holds at most `limit`
  entries: on disk one SQL pass over diskcache's table (`DiskStore.snapshot`, ~2 µs a vector);
  on Redis a `SCAN` and `MGET`s of 1,000 keys.

A store that fails raises `CacheError` (one line); the embedder then goes on without it, with one
warning (see docs/cache.md).
"""
from __future__ import annotations

from collections.abc import Sequence

from .root import Store

__all__ = ["VectorStore"]

_CHUNK = 1000  # keys per MGET of the Redis bulk read


class VectorStore:
    """Vectors (bytes) per (model id, text) over one `Store` (the root's `embeddings`)."""

    def __init__(self, store: Store, *, owned: bool = True):
        """`owned`: close `store` with this object (False for a store a session hands in and closes itself)."""
        self.store = store
        self.location = store.location
        self._owned = owned

    @staticmethod
    def key(model_id: str, text: str) -> str:
        return f"{model_id}\n{text}"

    def get_many(self, model_id: str, texts: Sequence[str]) -> dict[str, bytes]:
        """The stored vectors of `texts` (those not stored are left out)."""
        values = self.store.get_many([self.key(model_id, text) for text in texts])
        return {text: value for text, value in zip(texts, values) if value is not None}

    def add_many(self, model_id: str, pairs: Sequence[tuple[str, bytes]]) -> list[bytes]:
        """Store each (text, vector) not stored yet, in one transaction; the vector stored for each text."""
        return self.store.add_many([(self.key(model_id, text), vector) for text, vector in pairs])

    def load_all(self, model_id: str, limit: int) -> dict[str, bytes] | None:
        """Every stored vector of `model_id` (text -> bytes) when the store holds at most `limit` entries, else None."""
        prefix = model_id + "\n"
        start = len(prefix)
        snapshot = getattr(self.store, "snapshot", None)  # DiskStore's one SQL pass
        if snapshot is not None:
            rows = snapshot(limit, prefix)
            return None if rows is None else {key[start:]: value for key, value in rows.items()}
        if len(self.store) > limit:
            return None
        keys = [key for key in self.store.keys() if key.startswith(prefix)]  # noqa: SIM118 - a Store, not a dict
        found: dict[str, bytes] = {}
        for i in range(0, len(keys), _CHUNK):
            chunk = keys[i:i + _CHUNK]
            found.update((key[start:], value) for key, value in zip(chunk, self.store.get_many(chunk)) if value is not None)
        return found

    def __len__(self) -> int:
        return len(self.store)

    def close(self) -> None:
        if self._owned:
            self.store.close()
