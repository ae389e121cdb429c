"""One cache root: where every kgfed store lives, and the small key-value protocol they share.

kgfed keeps five stores: `responses` (SPARQL answers, `cache.responses.ResponseCache`), `alignments`
(per-id alignment outcomes, `cache.alignments.AlignmentCache`), `embeddings` (sentence vectors,
`cache.vectors.VectorStore`), `text` (Wikipedia answers, `endpoints.wikipedia.JsonCache`) and
`documents` (the SPARQLWrapper drop-in's raw answers, `cache.documents.DocumentCache`). All of them
hang off one root, named by a `CacheSpec` (frozen, picklable: it is what a worker process or a Ray
actor receives):

- a directory (default `$KGFED_CACHE_DIR`, else `~/.cache/kgfed`; this module is the only reader of
  that variable): one diskcache (SQLite) store per kind in `ROOT/responses`, `ROOT/alignments`,
  `ROOT/embeddings`, `ROOT/wikipedia`, and the drop-in's SQLite table in `ROOT/sparqlwrapper`
  (`cache.documents.TableStore`: a primary-key read on the caller's thread). Safe for several
  processes on one machine.
- `redis://HOST:PORT/DB` (also `rediss://`, `unix://`): one Redis database shared by every machine
  of a run, each kind under its own key prefix (`kgfed:responses:KEY`, `kgfed:embeddings:KEY`, ...).

`open_store(spec, kind)` hands out a `Store`: `get`, `get_many` (one `MGET` on Redis), `set`,
`set_many` (one transaction / one MULTI-EXEC pipeline: all or nothing), `add_many` (first writer
wins: each value is stored only where its key is absent, and the value stored is returned), `delete`,
`keys`, `__len__`, `clear`, `flush`, `close`; keys are strings, values bytes. Batching and in-process
memory are the caller's business (`ResponseCache` and `DocumentCache` add a writer thread on top).

A store that cannot be used raises `CacheError` (a `KgfedError`: one line naming the directory, the
reason and the fix, `--cache-dir`/`--no-cache`), never SQLite's or the OS's own exception: a full disk
(`database or disk is full`, ENOSPC), a read-only or unwritable directory, a locked or damaged database.
diskcache writes when it opens a directory, so a full or read-only root already fails at `open_store`.
"""
from __future__ import annotations

import os
import sqlite3
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..sparql.errors import Closed, KgfedError
from ..sparql.registry import Registry
from ..sparql.secrets import redact, remember, strip_credentials

ENV = "KGFED_CACHE_DIR"
CACHE_FIX = "free space or fix its permissions, give another --cache-dir, or run with --no-cache"


class CacheError(KgfedError):
    """A cache store cannot be opened, read or written (full disk, read-only directory, damaged database)."""


class StoreClosed(CacheError, Closed):
    """A store used after its owner closed it (a run shutting down while a worker thread still writes)."""


def cache_fix(reason: str) -> str:
    """The fix to name for a failing store: a damaged database can only be deleted (it is a cache)."""
    if "malformed" in reason or "not a database" in reason:
        return "delete that directory (it holds only cached answers), give another --cache-dir, or run with --no-cache"
    return CACHE_FIX


def storage_reason(exc: BaseException) -> str:
    """The one-line reason of a disk or SQLite error (`No space left on device`, `database or disk is full`)."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc).strip().splitlines()
    return text[0] if text else exc.__class__.__name__


def _storage_errors() -> tuple[type[BaseException], ...]:
    import diskcache

    return (OSError, sqlite3.Error, diskcache.Timeout)

KINDS: dict[str, str] = {"responses": "responses", "alignments": "alignments", "embeddings": "embeddings",
                         "text": "wikipedia", "documents": "sparqlwrapper"}  # kind -> directory name under a disk root
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def home_root() -> Path:
    """`~/.cache/kgfed`: the root when nothing else is said."""
    return Path.home() / ".cache" / "kgfed"


def default_root() -> str:
    """`$KGFED_CACHE_DIR` (a directory or a redis:// URL), else `~/.cache/kgfed` (read at each call)."""
    return os.environ.get(ENV) or str(home_root())


def local_root() -> Path:
    """The default root if it is a directory, else (a Redis root) `~/.cache/kgfed` (kept for callers of kgfed < 0.3)."""
    spec = CacheSpec.of(None)
    return Path(spec.location) if spec.local else home_root()


@dataclass(frozen=True)
class CacheSpec:
    """Where a run's stores live: an absolute directory or a Redis URL (`location`)."""

    location: str

    @classmethod
    def of(cls, value: CacheSpec | str | os.PathLike[str] | None = None) -> CacheSpec:
        """A spec from `--cache-dir`/`cache_dir=` (None: `$KGFED_CACHE_DIR` or `~/.cache/kgfed`)."""
        if isinstance(value, CacheSpec):
            return value
        text = default_root() if value is None or os.fspath(value) == "" else os.fspath(value)
        scheme, sep, _ = text.partition("://")
        if not sep:
            return cls(str(Path(text).expanduser().resolve()))
        if not scheme or scheme == "disk" or scheme not in BACKENDS:
            raise KgfedError(f"cache location {redact(text)!r} has an unknown scheme: give a directory, redis://HOST:PORT/DB "
                             f"or the URL of a registered cache backend ({', '.join(n + '://' for n in BACKENDS if n != 'disk')})")
        return cls(BACKENDS.get(scheme).check(text))

    @property
    def store_backend(self) -> Backend:
        """The `Backend` this root's location names (`disk` for a directory)."""
        scheme, sep, _ = self.location.partition("://")
        return BACKENDS.get(scheme if sep else "disk")

    @property
    def backend(self) -> str:
        """The backend's name: `disk`, `redis`, or one another package registered."""
        return self.store_backend.name

    @property
    def local(self) -> bool:
        """Whether the stores are directories on this machine (`directory(kind)`): the disk backend's."""
        return self.store_backend.local

    def directory(self, kind: str) -> Path:
        """The disk directory of a kind's store; on a Redis root, the one it would have under `~/.cache/kgfed`."""
        name = KINDS[_check_kind(kind)]
        if self.local:
            root = Path(self.location)
            if kind == "responses" and (root / "cache.db").exists() and not (root / name).exists():
                return root  # a response cache made before the root (its --cache-dir held the answers)
            return root / name
        return home_root() / name

    def __str__(self) -> str:
        return self.location


def _check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise KgfedError(f"unknown cache store {kind!r}: use one of {', '.join(KINDS)}")
    return kind


@runtime_checkable
class Store(Protocol):
    """A string -> bytes store. `set_many` is all-or-nothing; `flush` makes earlier writes durable."""

    location: str

    def get(self, key: str) -> bytes | None: ...
    def get_many(self, keys: Sequence[str]) -> list[bytes | None]: ...
    def set(self, key: str, value: bytes) -> None: ...
    def set_many(self, items: Sequence[tuple[str, bytes]]) -> None: ...
    def add_many(self, items: Sequence[tuple[str, bytes]]) -> list[bytes]: ...
    def delete(self, key: str) -> None: ...
    def keys(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def clear(self) -> None: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...


class DiskStore:
    """A diskcache (SQLite, WAL) store in one directory; several processes may share it."""

    def __init__(self, directory: str | os.PathLike[str], *, size_limit: int = 2**30):
        import diskcache

        self.directory = Path(directory)
        self.location = str(self.directory)
        self._errors = _storage_errors()
        try:
            self.cache = diskcache.Cache(self.location, size_limit=size_limit)
        except self._errors as exc:
            reason = storage_reason(exc)
            raise CacheError(f"cannot open the cache at {self.location} ({reason}): {cache_fix(reason)}") from None

    def _do(self, what: str, call: Any, *args: Any) -> Any:
        """`call(*args)`, with a disk or SQLite failure as a one-line `CacheError`."""
        try:
            return call(*args)
        except self._errors as exc:
            reason = storage_reason(exc)
            raise CacheError(f"cannot {what} the cache at {self.location} ({reason}): {cache_fix(reason)}") from None

    def get(self, key: str) -> bytes | None:
        value = self._do("read", self.cache.get, key)
        return value.encode("utf-8") if isinstance(value, str) else value  # str: written by kgfed < 0.2

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        return [self.get(key) for key in keys]

    def snapshot(self, limit: int, prefix: str = "") -> dict[str, bytes] | None:
        """Every value stored inline (bytes under a str key, unexpired; with `prefix`, under the keys that
        start with it, found through the key index) read in one SQL pass, when the store holds at most
        `limit` entries, else None. About 2 µs an entry against 50-150 µs for one `get` (a replay reads
        its whole cache); a value kept in a file of its own is left to `get`."""
        sql = ("SELECT key, value FROM Cache WHERE raw = 1 AND mode = 1 AND filename IS NULL"
               " AND (expire_time IS NULL OR expire_time > ?)")
        parameters: tuple = (time.time(),)
        if prefix:
            sql += " AND key >= ? AND key < ?"
            parameters += (prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1))
        try:
            if len(self.cache) > limit:
                return None
            rows = self.cache._sql(sql, parameters).fetchall()  # diskcache's table: raw str keys, MODE_RAW (1) inline bytes
        except Exception:  # noqa: BLE001 - another diskcache layout: single reads still work
            return None
        return {key: bytes(value) for key, value in rows if type(key) is str and value is not None}

    def set(self, key: str, value: bytes) -> None:
        self._do("write", self.cache.set, key, value)

    def set_many(self, items: Sequence[tuple[str, bytes]]) -> None:
        self._do("write", self._transaction, items)

    def _transaction(self, items: Sequence[tuple[str, bytes]]) -> None:
        with self.cache.transact():
            for key, value in items:
                self.cache.set(key, value)

    def add_many(self, items: Sequence[tuple[str, bytes]]) -> list[bytes]:
        """Store each value whose key is absent, in one transaction; the value stored under each key."""
        return self._do("write", self._add_transaction, items) if items else []

    def _add_transaction(self, items: Sequence[tuple[str, bytes]]) -> list[bytes]:
        stored = []
        with self.cache.transact():
            for key, value in items:
                if not self.cache.add(key, value):
                    value = self.cache.get(key, value)
                stored.append(value)
        return stored

    def delete(self, key: str) -> None:
        self._do("write", self.cache.delete, key)

    def keys(self) -> Iterator[str]:
        return iter(self._do("read", lambda: [k for k in self.cache.iterkeys() if isinstance(k, str)]))

    def __len__(self) -> int:
        return self._do("read", len, self.cache)

    def clear(self) -> None:
        self._do("write", self.cache.clear)

    def flush(self) -> None:
        """Writes are committed when `set`/`set_many` return."""

    def release(self) -> None:
        """Close the calling thread's SQLite connection (diskcache keeps one per thread and opens it again
        on the next use). A connection is only closed by its own thread, and one never closed stays open
        until the garbage collector breaks its reference cycle: each thread that used the store calls this."""
        try:
            self.cache.close()
        except self._errors:
            pass

    def close(self) -> None:
        """Close this thread's connection and drop the diskcache object (other threads `release` theirs)."""
        cache, self.cache = self.cache, _Closed(self.location)
        try:
            cache.close()
        except self._errors:  # closing releases the connections; nothing is lost by a failure here
            pass


class _Closed:
    """What a closed `DiskStore` holds instead of its diskcache: any use is a one-line error."""

    def __init__(self, location: str):
        self.location = location

    def close(self) -> None:
        return None

    def __len__(self) -> int:
        raise StoreClosed(f"the cache at {self.location} is closed: open it again")

    def __getattr__(self, name: str) -> Any:
        raise StoreClosed(f"the cache at {self.location} is closed: open it again")


def _redis_reason(exc: BaseException) -> str:
    """redis-py's error in one line, without the pipeline command it quotes (`Command # 1 (SET kgfed:KIND:KEY
    VALUE...) of pipeline caused error: ...`: raw key and value bytes)."""
    text = str(exc).rpartition(" of pipeline caused error: ")[2].strip()
    line = text.splitlines()[0] if text else ""
    return f"{exc.__class__.__name__}: {redact(line)[:200]}" if line else exc.__class__.__name__


class RedisStore:
    """One kind's keys in a Redis database (`kgfed:KIND:KEY`), shared by every machine that reaches it.

    Uses redis-py's thread-safe, fork-aware connection pool. `set_many` is one MULTI/EXEC pipeline, so a
    batch lands whole or not at all, and a single value is never seen half-written.
    """

    def __init__(self, url: str, kind: str, *, timeout: float = 10.0):
        try:
            import redis
        except ImportError:
            raise KgfedError(f"the Redis cache ({url}) needs the redis package: pip install 'kgfed[redis]'") from None
        self.location = strip_credentials(url)  # shown in messages: never the password of redis://:PW@host
        remember(urllib.parse.urlsplit(url).password)
        self.prefix = f"kgfed:{_check_kind(kind)}:"
        self._errors = (redis.RedisError, OSError)
        self.client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout,
                                           health_check_interval=30)
        try:
            self.client.ping()
        except self._errors as exc:
            self.client.close()
            raise CacheError(f"cannot reach the Redis cache at {self.location} ({exc.__class__.__name__}: {redact(str(exc))}): start "
                             f"redis-server there or give another --cache-dir") from None

    def _do(self, what: str, call: Any, *args: Any) -> Any:
        """`call(*args)`, with a lost server as a one-line `KgfedError` (not a redis-py traceback)."""
        try:
            return call(*args)
        except self._errors as exc:
            fix = "check the server, or run with --no-cache"
            if exc.__class__.__name__ == "OutOfMemoryError":  # the server's maxmemory is reached
                fix = "raise the server's maxmemory or give it an eviction policy (maxmemory-policy allkeys-lru), or run with --no-cache"
            raise CacheError(f"the Redis cache at {self.location} failed to {what} ({_redis_reason(exc)}): {fix}") from None

    def get(self, key: str) -> bytes | None:
        return self._do("read", self.client.get, self.prefix + key)

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        """One `MGET` round trip for all of them."""
        return self._do("read", self.client.mget, [self.prefix + key for key in keys]) if keys else []

    def set(self, key: str, value: bytes) -> None:
        self._do("write", self.client.set, self.prefix + key, value)

    def set_many(self, items: Sequence[tuple[str, bytes]]) -> None:
        if items:
            self._do("write", self._transaction, items)

    def _transaction(self, items: Sequence[tuple[str, bytes]]) -> None:
        with self.client.pipeline(transaction=True) as pipe:
            for key, value in items:
                pipe.set(self.prefix + key, value)
            pipe.execute()

    def add_many(self, items: Sequence[tuple[str, bytes]]) -> list[bytes]:
        """`SET NX` then `GET` for each item, in one MULTI/EXEC pipeline: the value stored under each key."""
        return self._do("write", self._add_transaction, items) if items else []

    def _add_transaction(self, items: Sequence[tuple[str, bytes]]) -> list[bytes]:
        with self.client.pipeline(transaction=True) as pipe:
            for key, value in items:
                pipe.set(self.prefix + key, value, nx=True)
                pipe.get(self.prefix + key)
            replies = pipe.execute()
        return [stored if stored is not None else value for (_, value), stored in zip(items, replies[1::2])]

    def delete(self, key: str) -> None:
        self._do("delete", self.client.delete, self.prefix + key)

    def _scan(self) -> list[bytes]:
        return self._do("list keys", lambda: list(self.client.scan_iter(match=self.prefix + "*", count=1000)))

    def keys(self) -> Iterator[str]:
        start = len(self.prefix)
        return (k.decode("utf-8", "surrogatepass")[start:] for k in self._scan())

    def __len__(self) -> int:
        return len(self._scan())

    def clear(self) -> None:
        found = self._scan()
        for i in range(0, len(found), 1000):
            self._do("delete", self.client.delete, *found[i:i + 1000])

    def flush(self) -> None:
        """Writes are acknowledged by the server when `set`/`set_many` return (durability is its config)."""

    def close(self) -> None:
        self.client.close()


def open_store(spec: CacheSpec | str | os.PathLike[str] | None, kind: str, **options: Any) -> Store:
    """The `kind` store (`responses`, `alignments`, `embeddings`, `text`, `documents`) under `spec`'s root.

    `options` go to the diskcache backend (`size_limit`). On a Redis root every kind is a `RedisStore`
    (its own key prefix); on a disk root, `documents` is the drop-in's SQLite table
    (`cache.documents.TableStore`) and every other kind a `DiskStore`.
    """
    spec = CacheSpec.of(spec)
    _check_kind(kind)
    return spec.store_backend.open(spec, kind, **options)


def _open_disk(spec: CacheSpec, kind: str, **options: Any) -> Store:
    if kind == "documents":
        from .documents import TableStore  # it imports this module

        return TableStore(spec.directory(kind))
    return DiskStore(spec.directory(kind), **options)


def _open_redis(spec: CacheSpec, kind: str, **options: Any) -> Store:
    return RedisStore(spec.location, kind)


def _check_redis(text: str) -> str:
    parsed = urllib.parse.urlparse(text)
    db = parsed.path.strip("/") if parsed.scheme != "unix" else ""
    if (parsed.scheme != "unix" and not parsed.hostname) or (db and not db.isdigit()):
        raise KgfedError(f"cache location {redact(text)!r} is not a Redis URL: give redis://HOST:PORT/DB (e.g. redis://127.0.0.1:6379/0)")
    return text


def _as_is(text: str) -> str:
    return text


@dataclass(frozen=True)
class Backend:
    """A cache backend: how a root's stores open, and what callers may ask of it instead of its name.

    `open(spec, kind, **options)` returns the `kind` store (a `Store`) under the root `spec`; `check(location)`
    validates a location of its scheme and returns it as the root is named (`CacheSpec.location`); `local`:
    its stores are directories on this machine (`CacheSpec.directory(kind)`; False: one shared location,
    such as a Redis database, whose `prefetch` saves round trips). It is registered under the URL scheme(s)
    it answers (`BACKENDS.register("mykv", Backend("mykv", open_mykv))` for `--cache-dir mykv://…`), or by
    another package with an entry point in the group `kgfed.cache` naming such an object.
    """

    name: str
    open: Callable[..., Store]  # (spec, kind, **options): the disk backend takes `size_limit`
    local: bool = False
    check: Callable[[str], str] = _as_is


DISK = Backend("disk", _open_disk, local=True)
REDIS = Backend("redis", _open_redis, check=_check_redis)
# URL scheme -> backend (`disk`: a plain directory)
BACKENDS: Registry[Backend] = Registry("cache backend", "kgfed.cache", {
    "disk": DISK, "redis": REDIS, "rediss": REDIS, "unix": REDIS,
})
