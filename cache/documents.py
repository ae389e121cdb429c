"""The SPARQLWrapper drop-in's document cache: the server's raw SPARQL-JSON answers, stored verbatim.

The drop-in (`kgfed.engine.kg.sync.SPARQLWrapper`) keeps what the server sent (status, headers, body)
for SELECT and ASK asked with `setReturnFormat(JSON)`, keyed by the exact request (`cache_key`), and
answers a repeat from it byte for byte. A body is stored only when it is a complete, well-formed
document of the query's form (`complete_document`) and the headers do not mark a partial answer
(`complete_headers`: Virtuoso's anytime `X-SQL-State: S1TAT`, a result cut at `X-SPARQL-MaxRows`).

Where the documents live is the cache root's `documents` store (`open_store(spec, "documents")`):

- on a disk root, `TableStore`: one SQLite table (WAL) in `ROOT/sparqlwrapper/answers-v3.sqlite3`,
  read with one primary-key lookup on the caller's thread (a few µs, where a diskcache `get` took
  50-250 µs: ToG sends a query per entity, relation and candidate, so this is the drop-in's hot path).
  The file is made (WAL set up, the table created: ~50 ms of disk syncs) by the writer thread, not the
  caller, and a lookup in a file this process made reads SQLite only for a key it wrote.
- on a Redis root, the `RedisStore` under `kgfed:documents:*`, shared by every machine of a run; a
  lookup is one `GET` round trip.

`DocumentCache` puts a writer thread on top of either: the caller's share of a cold query is a dict
insert and a queue put; the writer waits `linger` seconds after the first queued answer (or
`batch_size` answers), checks each body, encodes it (`marshal`) and stores the batch with one
`set_many` (one transaction). An answer still queued is served to a repeat at once, checked first.
A store that fails (a full disk, a lost server) costs a `RuntimeWarning`, never an answer.

At interpreter exit (`close(at_exit=True)`, the drop-in's atexit hook) the caller waits until the
last queued answers are committed, and the store is not closed: closing the last connection to the
SQLite file runs a checkpoint (the write-ahead log copied into the main file, with its disk syncs),
which a script's exit waited for, 3-12 ms measured here, whichever thread ran it. The writer thread
(a daemon) holds the store open until the process ends, so the file is left as a killed process
leaves it. Nothing is lost: a committed transaction is in the `-wal` file, and the next connection
to open the file reads it from there (SQLite's recovery); the next checkpoint (SQLite's automatic
one, on a writer thread's commit once the log passes 1,000 pages, or a clean close) folds it in.
Only a power cut before the OS has written the log out (seconds) could lose those last answers, as
it could any answer committed under SQLite's `synchronous=NORMAL` (set here) before a checkpoint: a
cache miss later, never a wrong answer (a torn log frame fails SQLite's checksum and is dropped).
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import marshal
import os
import queue
import sqlite3
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

from ..sparql.secrets import strip_credentials
from .root import CacheError, CacheSpec, Store, cache_fix, open_store, storage_reason

__all__ = ["CACHE_VERSION", "DocumentCache", "Entry", "TableStore", "cache_key", "complete_document",
           "complete_headers", "open_documents"]

CACHE_VERSION = "raw-v2"  # part of every key: a change of what is stored never reads old entries
_TERM_TYPES = frozenset({"uri", "literal", "typed-literal", "bnode", "triple"})
Entry = tuple[int, list[tuple[str, str]], bytes]  # status, headers, body: what the server sent


def complete_document(body: bytes, query_type: str) -> bool:
    """True when `body` is a well-formed SPARQL-JSON document of the query's form (`SELECT` or `ASK`)."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return False
    if not isinstance(doc, dict) or not isinstance(doc.get("head"), dict):
        return False
    if query_type == "ASK":
        return isinstance(doc.get("boolean"), bool) and "results" not in doc
    variables, results = doc["head"].get("vars"), doc.get("results")
    if "boolean" in doc or not isinstance(variables, list) or not all(isinstance(v, str) for v in variables):
        return False
    if not isinstance(results, dict) or not isinstance(results.get("bindings"), list):
        return False
    names = set(variables)
    for row in results["bindings"]:  # plain loops: this runs for every answer stored
        if not isinstance(row, dict) or not row.keys() <= names:
            return False
        for term in row.values():
            if not isinstance(term, dict) or term.get("type") not in _TERM_TYPES or "value" not in term:
                return False
    return True


def complete_headers(headers: list[tuple[str, str]]) -> bool:
    """False for Virtuoso's partial answers (anytime timeout, result cut at ResultSetMaxRows)."""
    names = {k.lower(): v for k, v in headers}
    return names.get("x-sql-state", "").upper() != "S1TAT" and "x-sparql-maxrows" not in names


_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization"})


def cache_key(method: str, url: str, body: bytes | None, headers: dict[str, str]) -> str:
    """The exact request: method, URL (query, graphs, parameters), body, and every header but User-Agent.

    Credentials (an `Authorization` header, e.g. setCredentials; URL userinfo was turned into one) enter
    only as a slow salted digest, so the key, itself a SHA-256, gives no cheap test of a guessed password.
    """
    parts = [CACHE_VERSION, method, strip_credentials(url) if "@" in url else url, (body or b"").hex()]
    for name, value in sorted(headers.items(), key=lambda kv: kv[0].lower()):
        lowered = name.lower()
        if lowered == "user-agent":
            continue
        parts.append(f"{lowered}:{_credential_digest(value) if lowered in _SECRET_HEADERS else value}")
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


@functools.lru_cache(maxsize=64)
def _credential_digest(value: str) -> str:
    """PBKDF2 of a credential (once per credential and process, ~0.1 s): a guess costs as much."""
    return hashlib.pbkdf2_hmac("sha256", value.encode("utf-8", "surrogatepass"), b"kgfed-sparqlwrapper-cache-v1",
                               100_000).hex()


class TableStore:
    """A `Store` in one SQLite table (WAL, `key TEXT PRIMARY KEY, value BLOB`): the documents' disk backend.

    Nothing is written when it opens: the file is made by the first `set_many` (the writer thread's),
    and `fresh` says the file did not exist then (it holds only what this process writes). Reads share
    one connection, one lookup at a time (a connection per thread would leave one file open per ended
    thread); writes use their own. Several processes may share the file (SQLite locking, a 30 s busy
    timeout). Failures raise `CacheError`.
    """

    FILE = "answers-v3.sqlite3"  # the layout's version is in the name: an older layout is never read

    def __init__(self, directory: str | os.PathLike[str]):
        self.directory = Path(directory)
        self.location = str(self.directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            reason = storage_reason(exc)
            raise CacheError(f"cannot open the cache at {self.location} ({reason}): {cache_fix(reason)}") from None
        self.path = self.directory / self.FILE
        self.fresh = not self.path.exists()
        self._reader: sqlite3.Connection | None = None
        self._read_lock = threading.Lock()
        self._writer: sqlite3.Connection | None = None
        self._write_lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        connection.execute("PRAGMA mmap_size=268435456")  # page reads without a system call each
        return connection

    def _fail(self, what: str, exc: BaseException) -> CacheError:
        reason = storage_reason(exc)
        return CacheError(f"cannot {what} the cache at {self.location} ({reason}): {cache_fix(reason)}")

    def open_for_writing(self) -> None:
        """Make the file and its table now (the writer thread calls this before its first batch)."""
        with self._write_lock:
            self._writable()

    def _writable(self) -> sqlite3.Connection:
        if self._writer is None:
            try:
                connection = self._connect()
                connection.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID")
            except (sqlite3.Error, OSError) as exc:
                raise self._fail("open", exc) from None
            self._writer = connection
        return self._writer

    def get(self, key: str) -> bytes | None:
        try:
            with self._read_lock:
                if self._reader is None:
                    self._reader = self._connect()
                row = self._reader.execute("SELECT value FROM answers WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):  # made by nobody yet
                return None
            raise self._fail("read", exc) from None
        except (sqlite3.Error, OSError) as exc:
            raise self._fail("read", exc) from None
        return None if row is None else row[0]

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        return [self.get(key) for key in keys]

    def set(self, key: str, value: bytes) -> None:
        self.set_many([(key, value)])

    def set_many(self, items: Sequence[tuple[str, bytes]]) -> None:
        """Store every item in one transaction (all or nothing)."""
        if not items:
            return
        with self._write_lock:
            connection = self._writable()
            try:
                with connection:  # one transaction
                    connection.execute("BEGIN")
                    connection.executemany("INSERT OR REPLACE INTO answers (key, value) VALUES (?, ?)", items)
            except (sqlite3.Error, OSError) as exc:
                raise self._fail("write", exc) from None

    def add_many(self, items: Sequence[tuple[str, bytes]]) -> list[bytes]:
        """Store each value whose key is absent, in one transaction; the value stored under each key."""
        if not items:
            return []
        with self._write_lock:
            connection = self._writable()
            try:
                with connection:
                    connection.execute("BEGIN")
                    connection.executemany("INSERT OR IGNORE INTO answers (key, value) VALUES (?, ?)", items)
                    return [connection.execute("SELECT value FROM answers WHERE key = ?", (key,)).fetchone()[0]
                            for key, _ in items]
            except (sqlite3.Error, OSError) as exc:
                raise self._fail("write", exc) from None

    def _write(self, sql: str, parameters: tuple = ()) -> None:
        with self._write_lock:
            try:
                self._writable().execute(sql, parameters)
            except (sqlite3.Error, OSError) as exc:
                raise self._fail("write", exc) from None

    def delete(self, key: str) -> None:
        self._write("DELETE FROM answers WHERE key = ?", (key,))

    def _read_all(self, sql: str) -> list[tuple]:
        try:
            with self._read_lock:
                if self._reader is None:
                    self._reader = self._connect()
                return self._reader.execute(sql).fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return []
            raise self._fail("read", exc) from None
        except (sqlite3.Error, OSError) as exc:
            raise self._fail("read", exc) from None

    def keys(self) -> Iterator[str]:
        return iter([row[0] for row in self._read_all("SELECT key FROM answers")])

    def __len__(self) -> int:
        rows = self._read_all("SELECT COUNT(*) FROM answers")
        return rows[0][0] if rows else 0

    def clear(self) -> None:
        self._write("DELETE FROM answers")

    def flush(self) -> None:
        """Writes are committed when `set_many` returns."""

    def close(self) -> None:
        with self._read_lock:
            reader, self._reader = self._reader, None
        with self._write_lock:
            writer, self._writer = self._writer, None
        for connection in (reader, writer):
            if connection is not None:
                with contextlib.suppress(sqlite3.Error):
                    connection.close()


def open_documents(location: CacheSpec | str | os.PathLike[str]) -> Store:
    """The `documents` store at `location`: the directory itself, or a shared backend's root (Redis: its
    `kgfed:documents:*` keys)."""
    spec = CacheSpec.of(location)
    if not spec.local:
        return open_store(spec, "documents")
    return TableStore(spec.location)


class DocumentCache:
    """Raw answers over a `Store`: read on the caller's thread, checked and written by a writer thread.

    The caller's whole share of a cold query is a lookup (a primary-key read in SQLite, or one Redis
    `GET`) and, after the answer, a dict insert and a queue put. The writer thread waits `linger`
    seconds after the first queued answer (or `batch_size` answers), checks each body (a complete
    SPARQL-JSON document of the query's form; refused ones are dropped), encodes it (`marshal`) and
    stores the batch with one `set_many`. An answer still queued is served to a repeat at once, checked
    first. A failing store costs one warning, never an answer: after a write fails (a full disk), this
    process stores no more answers (as the response cache switches itself off).
    """

    linger, batch_size = 0.2, 2048
    FILE = TableStore.FILE

    def __init__(self, store: Store | str | os.PathLike[str] | CacheSpec, *, close_store: bool = True):
        """`store`: a `Store` (closed with this cache unless `close_store=False`), or where to open one
        (`open_documents`: a directory or a Redis URL)."""
        self.store: Store = store if isinstance(store, Store) else open_documents(store)
        self._close_store = close_store
        self.directory = self.store.location  # named in warnings
        # A file that did not exist holds only what this process wrote (another process writing the same new
        # file meanwhile is missed, which costs a request, never a wrong answer): a lookup is a set lookup.
        self._existed = not getattr(self.store, "fresh", False)
        self._written: set[str] = set()
        self._queue: queue.Queue = queue.Queue()
        self._closing = threading.Event()
        self._pending: dict[str, tuple[Entry, str]] = {}
        self._stored = threading.Event()  # set by the writer once the last batch (after close) is committed
        self._kept_open = False  # close(at_exit=True): the store is left open (see the module's docstring)
        self._writer = threading.Thread(target=self._write_loop, name="kgfed-sync-cache", daemon=True)
        self._writer.start()

    def _usable(self) -> bool:
        """Make the store ready for writing (a new SQLite file, off the caller's path); False, warned, if it cannot be."""
        prepare = getattr(self.store, "open_for_writing", None)
        try:
            if prepare is not None:
                prepare()
            return True
        except CacheError as exc:
            warnings.warn(f"kgfed: the drop-in cannot keep answers in {self.directory} ({exc}); queries are sent "
                          "uncached: give a writable cache_dir= or KGFED_CACHE_DIR, or set KGFED_NO_CACHE=1", RuntimeWarning,
                          stacklevel=2)
            return False

    def get(self, key: str, query_type: str) -> Entry | None:
        queued = self._pending.get(key)
        if queued is not None:  # a repeat of an answer not yet written: checked as the writer would
            entry, kind = queued
            return entry if kind == query_type and complete_document(entry[2], kind) else None
        if not self._existed and key not in self._written:
            return None
        try:
            raw = self.store.get(key)
        except CacheError:  # a locked or damaged file, a lost server: a miss, the query is sent
            return None
        if raw is None:
            return None
        try:
            status, headers, body = marshal.loads(raw)
        except (ValueError, EOFError, TypeError):  # a damaged value: a miss
            return None
        return status, headers, body

    def put(self, key: str, entry: Entry, query_type: str) -> None:
        """Queue `entry` for the writer, which stores it if its body is a complete document of the query's form."""
        self._pending[key] = (entry, query_type)
        self._queue.put(key)

    def _write_loop(self) -> None:
        usable = self._usable()  # False: answers are dropped (one warning said so)
        while True:
            batch = [self._queue.get()]
            if batch[0] is not None:
                self._closing.wait(self.linger)  # not waiting on the queue: later puts wake nobody; close() does
            while batch[-1] is not None and len(batch) < self.batch_size:  # gather: one transaction per batch
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            taken = {key: self._pending.get(key) for key in batch if key is not None}
            rows, since = [], time.perf_counter()
            for key, queued in taken.items():
                if queued is not None and complete_document(queued[0][2], queued[1]):
                    rows.append((key, marshal.dumps(queued[0])))
                if time.perf_counter() - since > 0.0005:  # every 0.5 ms of checking: a caller whose answer
                    time.sleep(0)  # just arrived gets the GIL now, not after the 5 ms switch interval
                    since = time.perf_counter()
            try:
                if rows and usable:
                    self.store.set_many(rows)
                    if not self._existed:
                        self._written.update(key for key, _ in rows)
                        if len(self._written) > 500_000:  # ~80 MB of keys: from now on the store answers every lookup
                            self._existed, self._written = True, set()
            except CacheError as exc:  # a full disk must not stop the answers: one warning, then no more writes
                usable = False
                warnings.warn(f"kgfed: the drop-in's cache in {self.directory} could not store {len(rows)} answers "
                              f"({exc}); answers are still returned, uncached from now on in this process: free space "
                              "or set KGFED_NO_CACHE=1", RuntimeWarning, stacklevel=2)
            finally:
                for key, queued in taken.items():
                    if self._pending.get(key) is queued:  # not replaced meanwhile by a newer answer
                        self._pending.pop(key, None)
                for _ in batch:
                    self._queue.task_done()
            if None in batch:
                self._stored.set()
                if self._kept_open:  # the process is exiting: this daemon thread holds the store open until it ends
                    threading.Event().wait()
                return

    def flush(self) -> None:
        """Wait until every queued answer is written (at most one `linger` later)."""
        self._queue.join()

    def close(self, *, at_exit: bool = False) -> None:
        """Write what is queued (at once, no linger: the process is exiting) and close the store.

        `at_exit` (the interpreter is exiting): return as soon as the last answers are committed, and leave
        the store open until the process ends (see the module's docstring)."""
        self._kept_open = at_exit
        self._closing.set()
        self._queue.put(None)
        if at_exit:
            while not self._stored.wait(0.05):  # returns the moment the last batch is committed
                if not self._writer.is_alive():
                    break
            return
        self._writer.join(30)
        if self._close_store:
            with contextlib.suppress(CacheError):
                self.store.close()
