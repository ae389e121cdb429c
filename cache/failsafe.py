"""A store that fails softly: the response cache's rule for every other store of a run.

The response cache never fails an answer (`cache.responses`): a write that fails (the disk filled up
during the run, the directory turned read-only, Redis went away) turns its writes off for the rest of
the run with one warning line naming the problem and the fix, a read that fails makes every later
lookup a miss (one warning), and the run goes on uncached. `FailSafeStore` gives the other stores a
run opens (`alignments`, `text`, `embeddings`, `documents`) the same behaviour, in the same words
(the store's own one-line `CacheError`: `root.storage_reason`, `root.cache_fix`; the `kgfed.cache`
logger), by wrapping any `root.Store`:

    store = open_failsafe(spec, "text")        # a store that cannot be opened is off from the start
    store.set(key, value)                      # a full disk: one warning, then writes are dropped
    store.get(key)                             # still read (a read failure: one warning, then misses)

A wrapped store keeps the `Store` protocol, so its users (`AlignmentCache`, the Wikipedia `JsonCache`,
`VectorStore`) need no code of their own for a failing disk: what they were asked is still answered,
only not kept. A store its owner closed (`root.StoreClosed`) still raises: that is a shutdown, not a
failing disk. `Session.store` hands out these stores; `inner` is the store wrapped.
"""
from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from ..sparql.secrets import strip_credentials
from .root import CacheError, CacheSpec, DiskStore, Store, StoreClosed, open_store

__all__ = ["FailSafeStore", "failsafe", "open_failsafe", "open_failsafe_at"]

log = logging.getLogger("kgfed.cache")
T = TypeVar("T")

# What each kind keeps, as its warning names it.
WHAT = {"responses": "answers", "alignments": "alignments", "embeddings": "sentence vectors",
        "text": "Wikipedia pages", "documents": "answers"}


class FailSafeStore:
    """A `Store` whose failures (`CacheError`) switch it off with one warning instead of reaching the caller.

    `store`: the store guarded (None: one that could not be opened, off from the start, `failed` saying
    why); `kind` names what it keeps in the warning. `write_failed`/`read_failed`: the one-line reason
    once writes/reads stopped (None while they work).
    """

    def __init__(self, store: Store | None, kind: str, *, location: str | None = None, failed: str | None = None):
        self.inner = store
        self.kind = kind
        self.location: str = location if location is not None else getattr(store, "location", "?")
        self.write_failed: str | None = failed
        self.read_failed: str | None = failed
        self._lock = threading.Lock()

    # -- the one mechanism -----------------------------------------------------------------------------
    def _failure(self, exc: CacheError, *, writing: bool) -> None:
        """Writes (or reads) stopped working: one warning line (the problem and the fix), then they are skipped."""
        with self._lock:
            if (self.write_failed if writing else self.read_failed) is not None:
                return
            if writing:
                self.write_failed = str(exc)
            else:
                self.read_failed = str(exc)
        outcome = (f"this run goes on without storing new {WHAT.get(self.kind, 'entries')}" if writing
                   else "every lookup in it is a miss from now on")
        log.warning("kgfed: warning: %s; %s", exc, outcome)

    def _guarded(self, call: Callable[[Store], T], default: T, *, writing: bool) -> T:
        """`call(store)`, or `default` once writes (or reads) have failed; a first failure is `_failure`."""
        store = self.inner
        if (self.write_failed if writing else self.read_failed) is not None or store is None:
            return default
        try:
            return call(store)
        except StoreClosed:  # its owner closed it: a shutdown, not a failing disk
            raise
        except CacheError as exc:
            self._failure(exc, writing=writing)
            return default

    def _read(self, call: Callable[[Store], T], default: T) -> T:
        return self._guarded(call, default, writing=False)

    def _write(self, call: Callable[[Store], T], default: T) -> T:
        return self._guarded(call, default, writing=True)

    # -- the Store protocol ----------------------------------------------------------------------------
    def get(self, key: str) -> bytes | None:
        return self._read(lambda store: store.get(key), None)

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        return self._read(lambda store: store.get_many(keys), [None] * len(keys))

    def set(self, key: str, value: bytes) -> None:
        self._write(lambda store: store.set(key, value), None)

    def set_many(self, items: Sequence[tuple[str, bytes]]) -> None:
        self._write(lambda store: store.set_many(items), None)

    def add_many(self, items: Sequence[tuple[str, bytes]]) -> list[bytes]:
        """The values stored under each key; while writes are off, the values given (nobody else's is known)."""
        return self._write(lambda store: store.add_many(items), [value for _, value in items])

    def delete(self, key: str) -> None:
        self._write(lambda store: store.delete(key), None)

    def keys(self) -> Iterator[str]:
        none: list[str] = []
        return iter(self._read(lambda store: list(store.keys()), none))

    def __len__(self) -> int:
        return self._read(len, 0)

    def clear(self) -> None:
        self._write(lambda store: store.clear(), None)

    def flush(self) -> None:
        self._write(lambda store: store.flush(), None)

    def close(self) -> None:
        """Close the store; never raises for it (closing loses nothing)."""
        if self.inner is not None:
            try:
                self.inner.close()
            except CacheError as exc:
                log.warning("kgfed: warning: closing the cache at %s failed (%s)", self.location, exc)

    def __getattr__(self, name: str) -> Any:
        """The rest of the store's own surface (`snapshot`, `release`, `directory`, ...), as the store has it."""
        inner = self.__dict__.get("inner")
        if inner is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(inner, name)

    def __repr__(self) -> str:
        state = "off" if self.write_failed else "on"
        return f"FailSafeStore({self.kind}, {self.location}, {state})"


def failsafe(store: Store, kind: str) -> FailSafeStore:
    """`store` guarded (itself when it already is)."""
    return store if isinstance(store, FailSafeStore) else FailSafeStore(store, kind)


def open_failsafe(spec: CacheSpec | str | os.PathLike[str] | None, kind: str, **options: Any) -> FailSafeStore:
    """`root.open_store(spec, kind, **options)`, guarded; a store that cannot be opened (a full or read-only
    disk, Redis not answering) is one warning and a store that keeps nothing, and the run goes on."""
    root = CacheSpec.of(spec)
    location = str(root.directory(kind)) if root.local else strip_credentials(root.location)
    return _opened(lambda: open_store(root, kind, **options), kind, location)


def open_failsafe_at(directory: str | os.PathLike[str], kind: str, **options: Any) -> FailSafeStore:
    """A `root.DiskStore` in `directory` (a run's own `embeddings_dir`, say), guarded as `open_failsafe`."""
    return _opened(lambda: DiskStore(directory, **options), kind, os.fspath(directory))


def _opened(opener: Callable[[], Store], kind: str, location: str) -> FailSafeStore:
    try:
        return FailSafeStore(opener(), kind)
    except StoreClosed:
        raise
    except CacheError as exc:
        log.warning("kgfed: warning: %s; this run goes on without storing %s", exc, WHAT.get(kind, "entries"))
        return FailSafeStore(None, kind, location=location, failed=str(exc))
