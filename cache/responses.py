"""Persistent response cache (diskcache or Redis, see `cache.root`) and in-flight de-duplication around any `Endpoint`.

What it promises:

- **A key never merges two queries.** The key is (endpoint name, the exact query text): no
  canonicalisation, so a `#` comment, a string literal or an IRI can never be folded into another
  query's meaning. kgfed's own templates render the same text for the same call, so they still hit.
  The endpoint name carries a fingerprint of the data where one exists (`file:` stores hash their
  files' contents), so a changed file never serves old entries.
- **Only right, complete answers are stored.** Every answer is checked against what was asked
  (`Expect`: SELECT or ASK, the projected variables) before it is cached or returned; a wrong-shape
  answer raises `UnexpectedAnswer` after a bounded number of re-tries, a partial one is never stored.
- **Freshness is known.** An entry records when and from which endpoint it came; `max_age` (per
  endpoint) turns older entries into misses, `refresh=True` re-fetches every answer once per run.
- **The loop never waits on commits.** Entries are stored as compact marshalled rows (not the
  SPARQL-JSON document, so a hit is not re-parsed), read inline (WAL readers never wait for writers;
  a few tens of µs; a Redis GET on loopback about as much) and written by one writer thread in batched
  transactions (SQLite) or MULTI/EXEC pipelines (Redis), flushed on `flush()`, `close()` and at exit.
  A killed process loses at most the unflushed batch; a batch lands whole or not at all.
- **A cache that fails never fails the answers.** A root that cannot be opened (full disk, read-only
  directory) stops at once with one line naming `--cache-dir`/`--no-cache` (`root.CacheError`; a new
  root's store is made in a thread while the first queries go out, so there at the first answer stored); a
  write that fails later (the disk filled up during the run) turns caching off for the rest of the run
  with a one-line warning, and a read that fails is a miss (one warning): answers stay right, only
  uncached. `close()` never raises for the store.
- **Cancellation is per caller.** Callers asking the same query at once share one request; a caller
  that is cancelled leaves the others waiting, and the request is cancelled only when no one is left.
"""
from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import functools
import logging
import os
import threading
import time
import weakref
from collections import Counter, OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from ..endpoints.base import Endpoint
from .costs import charge, kg_request
from .entries import (FORMAT, Compact, Entry, StoredResult, _blob, cache_key, compact, decode,  # noqa: F401 - re-exported
                      encode, endpoint_key, expect_of, normalise_query)
from .root import CACHE_FIX, CacheError, CacheSpec, Store, open_store, storage_reason
from ..sparql.errors import Closed, KgfedError, OfflineMiss, PartialResult, UnexpectedAnswer
from ..sparql.results import Expect, SelectResult, Term, check_answer, check_query_text  # noqa: F401 - Term re-exported

log = logging.getLogger("kgfed.cache")

DEFAULT_CACHE_DIR = Path(CacheSpec.of(None).location)  # kept for old imports; the root is `cache.root`
# After this many reads from disk, a process is replaying: a store of at most SNAPSHOT_LIMIT entries is
# read whole in one SQL pass (about 2 µs an entry against 50-150 µs for one diskcache `get`).
SNAPSHOT_AFTER, SNAPSHOT_LIMIT = 256, 50_000


# -- the store -------------------------------------------------------------------------------------
_OPEN: weakref.WeakSet[ResponseCache] = weakref.WeakSet()


@atexit.register
def _flush_all() -> None:  # pragma: no cover - exercised by the killed/exiting subprocess tests
    for cache in list(_OPEN):
        try:
            cache.flush()
        except Exception:
            pass


ROOM_TO_MAKE = 16 * 2**20  # free bytes below which a new store is made on the caller's path (a full disk fails at once)


def _can_make_off_path(directory: Path) -> bool:
    """Whether `directory` is a new store (nothing to read) whose making can leave the caller's path: it does
    not exist, and its nearest existing ancestor is a writable directory on a disk with room. Anything else
    (a read-only or full disk, a file in the way) is opened at once, so it fails at once, in one line."""
    if directory.exists():
        return False
    parent = directory.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    try:
        disk = os.statvfs(parent)
    except OSError:
        return False
    return parent.is_dir() and os.access(parent, os.W_OK) and disk.f_bavail * disk.f_frsize >= ROOM_TO_MAKE


class ResponseCache:
    """The `responses` store of a cache root, safe to share across processes (and, on Redis, machines);
    writes go through one writer thread.

    `root`: a `CacheSpec`, a directory (answers in `ROOT/responses`) or `redis://HOST:PORT/DB`; None is
    `$KGFED_CACHE_DIR` or `~/.cache/kgfed`. `memory` decoded entries are kept in process (a repeated hit
    costs a dict lookup). Results handed out are shared: treat them as read-only.
    """

    def __init__(self, root: CacheSpec | str | os.PathLike | None = None, *, size_limit: int = 2**32,
                 batch: int = 512, linger: float = 0.05, memory: int = 4096):
        self.spec = CacheSpec.of(root)
        # A new disk root has nothing to read: its store (SQLite, a few tens of ms to create) is made
        # in a thread while the first queries go out; reads meanwhile are misses without waiting, and
        # the first write, flush or read after it waits for it and raises its `CacheError` (as the
        # open itself would). An existing store, or Redis, is opened here.
        self._opening: concurrent.futures.Future[Store] | None = None
        self._opened: Store | None = None
        self._opener: threading.Thread | None = None
        self._let_go = threading.Event()  # the opening thread keeps its connection (and SQLite's WAL files) until then
        self.directory: Path | None
        if self.spec.local and _can_make_off_path(self.spec.directory("responses")):
            self.directory = self.spec.directory("responses")
            self.location = str(self.directory)
            self._opening = concurrent.futures.Future()
            self._opener = threading.Thread(target=self._open_in_thread, args=(size_limit,), name="kgfed-cache-open",
                                            daemon=True)
            self._opener.start()
        else:
            self._opened = open_store(self.spec, "responses", size_limit=size_limit)
            self.directory = Path(self._opened.location) if self.spec.local else None
            self.location = self._opened.location
        # Whether `prefetch` reads anything: Redis answers many keys in one round trip; a disk read has none to save.
        self.prefetches = not self.spec.local
        self._batch = batch
        self._linger = linger
        self._memory: OrderedDict[str, Entry] = OrderedDict()
        self._memory_size = memory
        self._pending: dict[str, bytes] = {}  # queued for the writer, not yet committed
        self._reads = 0  # reads from the store so far (SNAPSHOT_AFTER)
        self._snapshot: dict[str, bytes] = {}  # stored blobs read at once, not yet decoded (taken on first use)
        self._queue: list[tuple[str, bytes]] = []
        self._wakeup = threading.Condition()
        self._write_lock = threading.Lock()
        self._writer: threading.Thread | None = None
        self._closed = False
        self.stats: Counter[str] = Counter()
        self.last_error: str | None = None
        self.write_failed: str | None = None  # why writes stopped (caching is off for the rest of the run)
        self.read_failed: str | None = None   # why reads stopped (every lookup is a miss)
        _OPEN.add(self)

    def _open_in_thread(self, size_limit: int) -> None:
        assert self._opening is not None
        try:
            store = open_store(self.spec, "responses", size_limit=size_limit)
        except BaseException as exc:  # noqa: BLE001 - handed to the first user of the store
            self._opening.set_exception(exc)
            return
        self._opening.set_result(store)
        # Hold this thread's connection, as the constructing thread's was held before: while one is open,
        # SQLite keeps the WAL files, so a later connection (another thread's) need not create them.
        self._let_go.wait()
        store_release = getattr(store, "release", None)
        if store_release is not None:
            store_release()

    def _release_opener(self) -> None:
        """Let the opening thread close its connection, and wait for it (no file stays open)."""
        self._let_go.set()
        opener = self._opener
        if opener is not None and opener is not threading.current_thread():
            opener.join(5)

    @property
    def _store(self) -> Store:
        """The store, once opened (waits for a new root's open; raises its `CacheError` if it failed)."""
        if self._opened is None:
            assert self._opening is not None
            self._opened = self._opening.result()
        return self._opened

    def _still_opening(self) -> bool:
        """A new, empty root's store is still being made (nothing can be read from it yet)."""
        return self._opened is None and self._opening is not None and not self._opening.done()

    # -- reads -----------------------------------------------------------------------------------
    def entry(self, key: str) -> Entry | None:
        """The stored entry for `key` (memory, then queued writes, then disk), or None."""
        found = self._memory.get(key)
        if found is not None:
            try:
                self._memory.move_to_end(key)
            except KeyError:  # evicted meanwhile by another thread's write
                pass
            return found
        blob = self._pending.get(key)
        if blob is None:
            blob = self._snapshot.pop(key, None) if self._snapshot else None
        if blob is None:
            if self.read_failed is not None or self._still_opening():
                return None
            store = self._store  # a new root's store: raises its open failure, as opening it here would have
            try:
                blob = store.get(key)
            except CacheError as exc:
                self._read_failure(exc)
                return None
            self._reads += 1
            if self._reads == SNAPSHOT_AFTER:
                snapshot = getattr(self._store, "snapshot", None)  # optional: not part of the Store protocol
                if callable(snapshot):
                    self._snapshot = snapshot(SNAPSHOT_LIMIT) or {}
            if blob is None:
                return None
        found = decode(blob) if isinstance(blob, bytes) else None
        if found is not None:
            self._remember(key, found)
        return found

    def get(self, key: str, *, max_age: float | None = None) -> SelectResult | None:
        """The stored answer for `key` unless it is older than `max_age` seconds."""
        found = self.entry(key)
        if found is None or (max_age is not None and time.time() - found.created > max_age):
            return None
        return found.result

    def prefetch(self, keys: Sequence[str]) -> None:
        """Read the entries of `keys` not yet in memory in one round trip (Redis `MGET`; on disk a read
        costs no round trip, so nothing is done). Later `get`s of them are memory hits (max-age still applies)."""
        if not self.prefetches or self.read_failed is not None or self._still_opening():
            return
        missing = [k for k in dict.fromkeys(keys) if k not in self._memory and k not in self._pending]
        if len(missing) < 2:
            return
        try:
            blobs = self._store.get_many(missing[:self._memory_size])
        except CacheError as exc:
            self._read_failure(exc)
            return
        for key, blob in zip(missing, blobs):
            found = decode(blob) if isinstance(blob, bytes) else None
            if found is not None:
                self._remember(key, found)

    def _remember(self, key: str, entry: Entry) -> None:
        self._memory[key] = entry
        if len(self._memory) > self._memory_size:
            self._memory.popitem(last=False)

    def _read_failure(self, exc: BaseException) -> None:
        """Reads stopped working: every lookup is a miss from now on; said once."""
        if self.read_failed is None:
            self.read_failed = storage_reason(exc) if not isinstance(exc, CacheError) else str(exc)
            self.stats["read_errors"] += 1
            log.warning("kgfed: warning: %s; answers are fetched without the cache from now on", self.read_failed)

    # -- writes ----------------------------------------------------------------------------------
    def _write_failure(self, exc: BaseException) -> None:
        """A write failed (full disk, read-only directory, database locked or gone): caching stops for
        the rest of this process with one warning; answers are unaffected (they stay in memory)."""
        self.stats["write_errors"] += 1
        self.last_error = f"{exc.__class__.__name__}: {exc}"
        with self._wakeup:
            first = self.write_failed is None
            if first:
                self.write_failed = str(exc) if isinstance(exc, KgfedError) else \
                    f"cannot write the cache at {self.location} ({storage_reason(exc)}): {CACHE_FIX}"
            self._queue.clear()
            self._pending.clear()  # what was queued is kept in memory (`_remember`), not in the store
        if first:
            log.warning("kgfed: warning: %s; this run goes on without caching new answers", self.write_failed)

    def set(self, key: str, result: SelectResult, *, source: str = "") -> None:
        """Queue a complete answer for storage (partial answers are refused); returns at once."""
        if result.partial:
            return
        if self._closed:
            raise Closed(f"the response cache at {self.location} is closed: open a new ResponseCache")
        if self._opened is None:
            self._store  # noqa: B018 - the first write waits for a new root's store and raises if it could not be made
        created = time.time()
        packed = compact(result)
        self._snapshot.pop(key, None)  # never serve the value read before this one
        self._remember(key, Entry(created, source, StoredResult(list(result.vars), packed, result.boolean)))
        if self.write_failed is not None:  # the store cannot take it: this run keeps it in memory only
            return
        blob = _blob(packed, result, source, created)
        with self._wakeup:
            self._pending[key] = blob
            self._queue.append((key, blob))
            if len(self._queue) == 1:  # the writer sleeps on an empty queue: wake it (once per batch)
                if self._writer is None or not self._writer.is_alive():
                    self._writer = threading.Thread(target=self._run, name="kgfed-cache-writer", daemon=True)
                    self._writer.start()
                self._wakeup.notify()

    def release(self) -> None:
        """Close the calling thread's connection to the store (reopened on next use): no file stays open."""
        if self._opener is not None:
            self._release_opener()
        if self._opened is None:  # a new root's store nobody has used yet (its opening thread closed its own)
            return
        release = getattr(self._opened, "release", None)
        if release is not None:
            release()

    def _flush_and_release(self) -> None:
        self.flush()
        self.release()

    def _run(self) -> None:
        while True:
            with self._wakeup:
                while not self._queue and not self._closed:
                    self._wakeup.wait()
                if not self._queue and self._closed:
                    self.release()  # the writer's own connection
                    return
                # Let a burst of answers join one transaction; `close()` cuts the wait short (it flushes
                # itself), so closing never waits out the linger on a caller's critical path.
                deadline = time.monotonic() + self._linger
                while not self._closed and (left := deadline - time.monotonic()) > 0:
                    self._wakeup.wait(left)
            try:
                self._drain()
            except Exception as exc:  # a full disk, a locked database, Redis gone: keep serving, caching off
                self._write_failure(exc)

    def _drain(self) -> None:
        with self._write_lock:
            while True:
                with self._wakeup:
                    batch, self._queue = self._queue[:self._batch], self._queue[self._batch:]
                if not batch:
                    return
                started = time.perf_counter()
                self._store.set_many(batch)  # one transaction / one MULTI-EXEC: whole or nothing
                self.stats["commit_seconds"] += time.perf_counter() - started  # type: ignore[assignment]  # float in a Counter
                self.stats["written"] += len(batch)
                self.stats["transactions"] += 1
                with self._wakeup:
                    for key, blob in batch:
                        if self._pending.get(key) is blob:
                            del self._pending[key]

    def flush(self) -> None:
        """Commit every queued write now (blocking; from async code use `await asyncio.to_thread(cache.flush)`).
        A write that fails turns caching off with a warning (see `_write_failure`); it is not raised. A batch
        the writer thread has taken but not yet committed (`_pending`) is waited for too."""
        if self._queue or self._pending:
            try:
                self._drain()
            except Exception as exc:  # noqa: BLE001 - the answers are right; only their storage failed
                self._write_failure(exc)

    def delete(self, key: str) -> None:
        self.flush()
        self._memory.pop(key, None)
        self._snapshot.pop(key, None)
        self._store.delete(key)

    # -- housekeeping ----------------------------------------------------------------------------
    def __len__(self) -> int:
        self.flush()
        return len(self._store)

    def keys(self) -> list[str]:
        self.flush()
        return list(self._store.keys())

    def clear(self) -> None:
        self.flush()
        self._memory.clear()
        self._snapshot.clear()
        self._store.clear()

    def close(self) -> None:
        """Flush, stop the writer and release the database (idempotent)."""
        if self._closed:
            return
        self.flush()
        with self._wakeup:
            self._closed = True
            self._wakeup.notify_all()
        if self._writer is not None:
            self._writer.join(5)
        self.flush()
        if self._opener is not None:
            self._release_opener()
        if self._opened is None and self._opening is not None and self._opening.exception() is not None:
            _OPEN.discard(self)  # a new root's store could not be made: nothing to close (its user got the error)
            return
        try:
            self._store.close()
        except Exception as exc:  # noqa: BLE001 - closing loses nothing: never hide the run's own outcome
            log.warning("kgfed: warning: closing the cache at %s failed (%s)", self.location, storage_reason(exc))
        _OPEN.discard(self)


# -- the endpoint wrapper --------------------------------------------------------------------------
class _Flight:
    """One request in flight and how many callers still wait for it."""

    __slots__ = ("task", "waiters")

    def __init__(self, task: asyncio.Task):
        self.task = task
        self.waiters = 0


class CachedEndpoint:
    """Wraps an endpoint with answer validation, the response cache, in-flight sharing and an offline switch.

    `max_age` (seconds; default: the endpoint's own `max_age`, None = never stale) bounds how old a
    served entry may be (not when `offline`: a replay serves what was kept, however old); `refresh=True` re-fetches each answer once this run; `validate_retries`
    bounds how often a wrong-shape answer is asked again before `UnexpectedAnswer` is raised.
    """

    def __init__(self, inner: Endpoint, cache: ResponseCache | None, *, offline: bool = False,
                 max_age: float | None | str = "endpoint", refresh: bool = False, validate_retries: int = 2):
        self.inner = inner
        self.cache = cache
        self.offline = offline
        self.max_age: float | None = getattr(inner, "max_age", None) if max_age == "endpoint" else cast("float | None", max_age)
        self.refresh = refresh
        self.validate_retries = validate_retries
        self._refreshed: set[str] = set()
        self._keys: dict[str, str] = {}  # query text -> key (texts seen are valid: checked once)
        self._inflight: dict[str, _Flight] = {}
        self._closed = False
        self.stats: Counter[str] = Counter()

    @property
    def name(self) -> str:
        return endpoint_key(self.inner.name)

    def _key(self, query: str) -> str:
        key = self._keys.get(query) if type(query) is str else None
        if key is None:
            key = cache_key(self.inner.name, check_query_text(query))
            if len(self._keys) >= 8192:
                self._keys.clear()
            self._keys[query] = key
        return key

    async def select(self, query: str, expect: Expect | None = None) -> SelectResult:
        """The answer to `query` (checked against `expect`, by default the query's own form and variables)."""
        got = self._join(query, expect)
        if not isinstance(got, _Flight):
            return got
        try:
            return await asyncio.shield(got.task)
        except asyncio.CancelledError:
            raise self._cancelled(got) from None
        finally:
            await self._leave([got])

    async def select_all(self, queries: Sequence[str]) -> list[SelectResult]:
        """The answers to several queries, or the first failure (in query order) with every request that no
        other caller waits for cancelled: a TaskGroup's guarantees, without a task per query. Cache hits
        are taken at once; the misses are shared flights awaited together."""
        results: list[SelectResult | None] = []
        joined: list[tuple[int, _Flight]] = []
        if (self.cache is not None and self.cache.prefetches and not self._closed and len(queries) > 1
                and (not self.refresh or self._refreshed)):
            try:
                keys = [self._key(q) for q in queries]
            except KgfedError:  # refused below, in query order
                keys = []
            self.cache.prefetch([k for k in keys if not self.refresh or k in self._refreshed])
        try:
            for i, query in enumerate(queries):
                got = self._join(query)
                if isinstance(got, _Flight):
                    joined.append((i, got))
                    results.append(None)
                else:
                    results.append(got)
            if joined:
                try:
                    await asyncio.wait([f.task for _, f in joined], return_when=asyncio.FIRST_EXCEPTION)
                except asyncio.CancelledError:
                    raise self._cancelled(joined[0][1]) from None
                for _, flight in joined:
                    if flight.task.done() and (flight.task.cancelled() or flight.task.exception() is not None):
                        if flight.task.cancelled():
                            raise self._cancelled(flight)
                        raise flight.task.exception()  # type: ignore[misc]
                for i, flight in joined:
                    results[i] = flight.task.result()
        finally:
            await self._leave([flight for _, flight in joined])
        return results  # type: ignore[return-value]

    def _join(self, query: str, expect: Expect | None = None) -> SelectResult | _Flight:
        """A cache hit, or the flight (shared or new) this caller now waits for (`_leave` it after)."""
        if self._closed:
            raise Closed(f"{self.name} is closed: open a new KG (requests after aclose() are refused)")
        key = self._key(query)
        self.stats["queries"] += 1
        charge("sparql_queries")
        if self.cache is not None and (not self.refresh or key in self._refreshed):
            hit = self.cache.get(key, max_age=None if self.offline else self.max_age)  # offline: what is kept is all there is
            if hit is not None:
                self.stats["cache_hits"] += 1
                charge("cache_hits")
                return hit
        if expect is None:
            expect = expect_of(query)  # refuses CONSTRUCT/DESCRIBE before anything is sent
        if self.offline:
            raise OfflineMiss(
                f"--offline: no cached answer from {self.name} for this query; run once without --offline to fill the cache"
            )
        flight = self._inflight.get(key)
        if flight is None:
            flight = self._inflight[key] = _Flight(asyncio.ensure_future(self._fetch(query, key, expect)))
            flight.task.add_done_callback(functools.partial(self._landed, key))
            self.stats["sent"] += 1
            charge("requests_sent")
        else:
            self.stats["shared"] += 1
            charge("shared")
        flight.waiters += 1
        return flight

    async def _leave(self, flights: list[_Flight]) -> None:
        """This caller stops waiting; a request no caller waits for any more is cancelled, and (as a
        TaskGroup would) awaited, so nothing it started is still running when the caller moves on."""
        orphans = []
        for flight in flights:
            flight.waiters -= 1
            if flight.waiters == 0 and not flight.task.done():
                flight.task.cancel()
                orphans.append(flight.task)
        if orphans:
            await asyncio.wait(orphans)

    def _cancelled(self, flight: _Flight) -> BaseException:
        """What a waiter raises when cancelled: `Closed` if the KG closed under it, else the cancellation."""
        current = asyncio.current_task()
        if flight.task.cancelled() and self._closed and not (current and current.cancelling()):
            return Closed(f"{self.name} was closed while this query was in flight")
        return asyncio.CancelledError()

    def _landed(self, key: str, task: asyncio.Task) -> None:
        if self._inflight.get(key) is not None and self._inflight[key].task is task:
            del self._inflight[key]
        if not task.cancelled():
            task.exception()  # retrieved: waiters re-raise it; with no waiter left nobody must

    async def _timed(self, query: str) -> SelectResult:
        """The endpoint's answer; its seconds charged to the question that sent it (`kg_seconds`, cache.costs)."""
        started = time.perf_counter()
        try:
            with kg_request():  # the question's dependent rounds and KG wait (cache.costs)
                return await self.inner.select(query)
        finally:
            charge("kg_seconds", round(time.perf_counter() - started, 6))

    async def _fetch(self, query: str, key: str, expect: Expect) -> SelectResult:
        for attempt in range(self.validate_retries + 1):
            try:
                result = check_answer(await self._timed(query), expect, source=self.name)
            except UnexpectedAnswer as exc:
                self.stats["unexpected"] += 1
                charge("unexpected_answers")
                if attempt == self.validate_retries:
                    raise UnexpectedAnswer(f"{exc} (gave up after {attempt + 1} attempts)") from None
                await asyncio.sleep(0.05 * 2**attempt)
                continue
            except PartialResult:
                self.stats["partial"] += 1
                charge("partial")
                raise
            break
        if result.partial:
            self.stats["partial"] += 1
            charge("partial")
        elif self.cache is not None:
            name = endpoint_key(self.inner.name)  # re-read: an embedded store fingerprints its files when it loads them
            stored = cache_key(name, query)
            if stored != key:  # the data changed under the name: forget keys made with the old one
                self._keys.clear()
            self.cache.set(stored, result, source=name)
            if self.refresh:
                self._refreshed.add(key)
        return result

    async def aclose(self) -> None:
        """Refuse new queries, cancel the ones in flight, flush queued cache writes, close the endpoint."""
        self._closed = True
        tasks = [flight.task for flight in self._inflight.values()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self.cache is not None:
            if self.cache._queue:
                await asyncio.to_thread(self.cache._flush_and_release)
            self.cache.release()  # this (the loop's) thread's connection: a closed KG keeps no file open
        await self.inner.aclose()
