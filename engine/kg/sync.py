"""Blocking twins of the async API: `SyncKG` for scripts, and a faithful `SPARQLWrapper` drop-in.

    with SyncKG.open("file:kg.nt") as kg:
        kg.relations("m.0282x")

The drop-in is for code written against SPARQLWrapper (ToG's and PoG's `freebase_func.py`): change
only the import line and every query goes through kgfed's HTTP client (keep-alive, per-host cap,
retries on 5xx/resets, HTTP 429 Retry-After) and a response cache:

    from kgfed.engine.kg.sync import SPARQLWrapper, JSON, XML   # instead of `from SPARQLWrapper import ...`
    sparql = SPARQLWrapper("http://localhost:8890/sparql")
    sparql.setQuery(q); sparql.setReturnFormat(JSON)
    results = sparql.query().convert()                        # the genuine library's dict, byte for byte

How it stays faithful: the twin subclasses the genuine `SPARQLWrapper` and replaces only its
`_query()`, the step that sends the request the genuine library built (`_createRequest()`: the same
URL, parameters, `default-graph-uri`/`named-graph-uri`, method, Accept, custom headers, BASIC
credentials). The genuine `QueryResult.convert()` then reads the server's bytes, so `convert()` is the
genuine library's for the same server, whatever the format. `setTimeout` is a socket timeout on
each wait, as urllib's. SPARQL Update and DIGEST authentication go through the genuine library's own
urllib path (uncached: an update is never retried or replayed). Each calling thread drives its own
loop and client (`http.client`, kept alive, TCP_QUICKACK so a server that writes headers and body
separately is not held up by a delayed ACK) with no hand-off per query; the per-host cap and 429
pauses are shared by all threads. A User-Agent set with `addCustomHttpHeader` or `agent=` is sent
as given; only the genuine default agent becomes kgfed's.

The cache keeps the server's raw SPARQL-JSON body verbatim (never a re-serialised result) for SELECT
and ASK asked with `setReturnFormat(JSON)`; a body is stored only when it is a complete, well-formed
document of the query's form (Virtuoso's `X-SQL-State: S1TAT` anytime answers and answers cut at
`X-SPARQL-MaxRows` never are). Other formats are sent uncached. The key is the exact request
(endpoint URL, query text, parameters and graphs, method, body, Accept and custom headers;
credentials only as a slow salted digest), so two different requests never share an entry. The
caller's share is one primary-key lookup in a SQLite table; a writer thread checks and stores the
answers in batched transactions, off the caller's path. Switch the cache off with
`SPARQLWrapper(url, cache=False)` or `KGFED_NO_CACHE=1`; move it with `cache_dir=` or
`KGFED_CACHE_DIR` (entries live in `$KGFED_CACHE_DIR/sparqlwrapper`, default
`~/.cache/kgfed/sparqlwrapper`).

HTTP errors raise what the genuine `_query()` raises, status for status: `QueryBadFormed` 400,
`Unauthorized` 401, `EndPointNotFound` 404, `URITooLong` 414, `EndPointInternalError` 500, and
`urllib.error.HTTPError` for every other status (501, 505, 429, 403…; after kgfed's retries for
429/502/503/504), carrying the server's headers and body; `urllib.error.URLError` when the server
cannot be reached, `TimeoutError` on `setTimeout`. Each is also a kgfed `EndpointError` with a
one-line message carrying the endpoint's own words, and each pickles (a worker process's error
reaches its parent intact). An endpoint URL with `user:password@` is sent as Basic auth; the
password is in no key, entry or message. The shared clients are closed at interpreter exit.
A `file:PATH` endpoint (an N-Triples/Turtle file) is answered by an embedded pyoxigraph store.
"""
from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import functools
import hashlib
import http.client
import io
import json
import marshal
import os
import queue
import socket
import sqlite3
import threading
import time
import urllib.error
import urllib.request
import warnings
import weakref
from collections import Counter
from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlencode, urljoin, urlsplit

import SPARQLWrapper as _sw
from SPARQLWrapper import SmartWrapper as _smart
from SPARQLWrapper import Wrapper as _wrapper
from SPARQLWrapper import sparql_dataframe as _sparql_dataframe
# the drop-in re-exports SPARQLWrapper's names (`*_sw.__all__` below), which ruff cannot see
from SPARQLWrapper import (ASK, BASIC, CONSTRUCT, CSV, DELETE, DESCRIBE, DIGEST, GET, INSERT, JSON, JSONLD, N3, POST,  # noqa: F401
                           POSTDIRECTLY, RDF, RDFXML, SELECT, TSV, TURTLE, URLENCODED, XML, QueryResult)  # noqa: F401
from SPARQLWrapper.SPARQLExceptions import (EndPointInternalError, EndPointNotFound, QueryBadFormed,
                                            SPARQLWrapperException, Unauthorized, URITooLong)
from multidict import CIMultiDict

from ...endpoints.client import HttpClient
from ...endpoints.transport import Request, Response, TransportConnectError, TransportTimeout, TransportTruncated
from ...sparql.errors import EndpointError, EndpointTimeout, KgfedError
from ...sparql.secrets import redact, split_credentials, strip_credentials

if TYPE_CHECKING:  # imported when a SyncKG opens: the drop-in alone never loads the facade (nor aiohttp)
    from .facade import KG

__all__ = [
    *_sw.__all__,
    "SPARQLWrapperException", "EndPointInternalError", "EndPointNotFound", "QueryBadFormed", "Unauthorized",
    "URITooLong", "SyncKG", "flush_cache", "stats",
]

T = TypeVar("T")
CACHE_VERSION = "raw-v2"  # part of every key: a change of what is stored never reads old entries
_SPARQL_JSON_TYPES = tuple(_wrapper._SPARQL_JSON)
_TERM_TYPES = frozenset({"uri", "literal", "typed-literal", "bnode", "triple"})


class _LoopThread:
    """One private event loop on a daemon thread; `run` submits a coroutine and waits for it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="kgfed-sync", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self.loop.is_closed() or not self._thread.is_alive():  # used after close(): kgfed's Closed, not asyncio's
            from ...sparql.errors import Closed

            coro.close()
            raise Closed("this SyncKG is closed: open a new one (SyncKG.open(...), or `with SyncKG.open(...) as kg:`)")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self.loop.close()


class SyncKG:
    """The `KG` facade with blocking methods (same names, same results)."""

    def __init__(self, kg: KG, runner: _LoopThread):
        self._kg, self._runner = kg, runner

    @classmethod
    def open(cls, spec: str, **options) -> SyncKG:
        from .facade import KG

        runner = _LoopThread()

        async def make() -> KG:
            return KG.open(spec, **options)

        return cls(runner.run(make()), runner)

    def __enter__(self) -> SyncKG:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._runner.loop.is_closed():  # closing twice is harmless
            return
        self._runner.run(self._kg.aclose())
        self._runner.close()

    @property
    def kg(self) -> KG:
        return self._kg

    def __getattr__(self, name: str):
        method = getattr(self._kg, name)
        if not asyncio.iscoroutinefunction(method):
            return method
        return lambda *args, **kwargs: self._runner.run(method(*args, **kwargs))


# ---- the drop-in's errors: the genuine classes, and kgfed's EndpointError too ------------------------------
# Every class below pickles (a worker process's error reaches its parent intact): `__reduce__` rebuilds it
# by its registered name, since `sync.QueryBadFormed` is (and must stay) the genuine class itself.
_TWINS: dict[str, Any] = {}


def _rebuild_twin(name: str, message: str) -> Exception:
    """Unpickle a drop-in error (its attributes follow as pickled state)."""
    return _TWINS[name](message)


def _twin_error(genuine: type[Exception], kgfed: type[KgfedError] = EndpointError) -> Any:
    """A subclass of the genuine exception that is also a kgfed error, with a one-line message."""

    def __init__(self, message: str, *, status: int | None = None, response: bytes = b"") -> None:
        Exception.__init__(self, message)
        self.status, self.retryable, self.response, self.reason = status, False, response, message

    def __reduce__(self):
        return _rebuild_twin, (genuine.__name__, self.args[0]), dict(self.__dict__)

    twin = type(genuine.__name__, (genuine, kgfed), {
        "__init__": __init__, "__str__": lambda self: self.args[0], "__reduce__": __reduce__, "__module__": __name__,
        "__doc__": f"The genuine `{genuine.__name__}`, raised by the drop-in (also a kgfed `{kgfed.__name__}`).",
    })
    _TWINS[genuine.__name__] = twin
    return twin


# the genuine `_query()`'s mapping, exactly: these five statuses, every other non-2xx is urllib's HTTPError
_STATUS_ERRORS = {400: _twin_error(QueryBadFormed), 401: _twin_error(Unauthorized),
                  404: _twin_error(EndPointNotFound), 414: _twin_error(URITooLong),
                  500: _twin_error(EndPointInternalError)}
_UNREACHABLE = _twin_error(urllib.error.URLError)
_TIMEOUT = _twin_error(TimeoutError)
_NOT_SELECT = _twin_error(_sparql_dataframe.QueryException, KgfedError)
_FIXES = {400: "fix the query", 401: "check setCredentials", 404: "check the endpoint URL",
          414: "setMethod(POST) for long queries", 500: "the endpoint failed; see its log or try again later"}


def _rebuild_http_error(url: str, code: int, message: str, headers: list[tuple[str, str]], body: bytes,
                        reason: str) -> _HTTPError:
    return _HTTPError(url, code, message, headers, body, reason)


class _HTTPError(urllib.error.HTTPError, EndpointError):
    """`urllib.error.HTTPError` (what the genuine library raises for other statuses), also a kgfed error.

    It carries what the server sent, as urllib's does: `code`, `headers` (e.g. `Retry-After`), `read()`
    (the body) and `reason` (the status phrase); `str()` is kgfed's one line. Unlike urllib's, it pickles.
    """

    def __init__(self, url: str, status: int, message: str, headers, body: bytes, reason: str | None = None):
        if not isinstance(headers, http.client.HTTPMessage):
            items = headers.items() if hasattr(headers, "items") else headers
            headers = http.client.HTTPMessage()
            for name, value in items:
                headers[name] = value
        if reason is None:
            try:
                reason = http.HTTPStatus(status).phrase
            except ValueError:
                reason = ""
        urllib.error.HTTPError.__init__(self, url, status, reason, headers, io.BytesIO(body))
        self.retryable, self.response, self.message = status == 429, body, message  # `status` is HTTPError's (= code)

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):
        return _rebuild_http_error, (self.url, self.code, self.message, list(self.hdrs.items()), self.response, self.msg)


_HTTPError.__name__ = _HTTPError.__qualname__ = "HTTPError"
_TWINS["HTTPError"] = _HTTPError


def _first_line(body: bytes, width: int = 200) -> str:
    for line in body.decode("utf-8", "replace").splitlines():
        if line.strip():
            return line.strip()[:width]
    return "(empty body)"


def _raise_for_status(url: str, status: int, headers, body: bytes) -> None:
    """Raise what the genuine library raises for this status (never returns unless it is 2xx).

    As urllib: any status outside 200-299 (redirects are followed before) is an error; 400, 401, 404,
    414 and 500 become the genuine library's own classes, every other one `urllib.error.HTTPError`.
    """
    if 200 <= status < 300:
        return
    host = urlsplit(url).netloc or url
    words = redact(_first_line(body))
    if status in _STATUS_ERRORS:
        raise _STATUS_ERRORS[status](f"{host} answered HTTP {status}: {words}: {_FIXES[status]}", status=status, response=body)
    raise _HTTPError(url, status, f"{host} answered HTTP {status}: {words}", headers, body)


# ---- a response the genuine QueryResult can read -------------------------------------------------------------
class _Response(io.BytesIO):
    """The fully read answer, shaped like urllib's response: read(), info(), geturl(), getcode()."""

    def __init__(self, url: str, status: int, headers: list[tuple[str, str]], body: bytes):
        super().__init__(body)
        self.url, self.status, self.code, self._headers = url, status, status, headers

    def info(self) -> dict[str, str]:
        return dict(self._headers)

    def getheader(self, name: str, default: str | None = None) -> str | None:
        return next((v for k, v in self._headers if k.lower() == name.lower()), default)

    def geturl(self) -> str:
        return self.url

    def getcode(self) -> int:
        return self.status


# ---- the raw-answer cache: reads on the caller's thread, writes batched on a writer thread --------------
def complete_document(body: bytes, query_type: str) -> bool:
    """True when `body` is a well-formed SPARQL-JSON document of the query's form (SELECT or ASK)."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return False
    if not isinstance(doc, dict) or not isinstance(doc.get("head"), dict):
        return False
    if query_type == ASK:
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


Entry = tuple[int, list[tuple[str, str]], bytes]  # status, headers, body: what the server sent


class _RawCache:
    """Raw answers in one SQLite table (WAL): read on the caller's thread, checked and written by a writer.

    The caller's whole share of a cold query is a primary-key lookup (a few µs on its own connection;
    diskcache's `get` took 50-250 µs) and, after the answer, a dict insert and a queue put. The writer
    thread waits `linger` seconds after the first queued answer (or `batch_size` answers), then checks
    each body (a complete SPARQL-JSON document of the query's form; refused ones are dropped), encodes
    it (`marshal`) and stores the batch with one `executemany` in one transaction. An answer still
    queued is served to a repeat at once, checked first. A new file is created (WAL set up, the table
    made: ~50 ms of disk syncs) by the writer, not the caller, and a lookup in it reads SQLite only for
    a key this process wrote. Several processes may share the directory (SQLite locking, a 30 s busy timeout); a
    failing disk costs a warning, never an answer.
    """

    linger, batch_size = 0.2, 2048
    FILE = "answers-v3.sqlite3"  # the layout's version is in the name: an older layout is never read

    def __init__(self, directory: Path):
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / self.FILE
        # A file that did not exist holds only what this process wrote (another process writing the same new
        # file meanwhile is missed, which costs a request, never a wrong answer): a lookup is a set lookup.
        self._existed = self.path.exists()
        self._written: set[str] = set()
        self._ready = threading.Event()
        self._reader: sqlite3.Connection | None = None  # one for all threads, one lookup at a time: a connection
        self._read_lock = threading.Lock()  # per thread would leave one file open per ended thread (SQLite keeps them)
        self._queue: queue.Queue = queue.Queue()
        self._closing = threading.Event()
        self._pending: dict[str, tuple[Entry, str]] = {}
        self._writer = threading.Thread(target=self._write_loop, name="kgfed-sync-cache", daemon=True)
        self._writer.start()

    def _open_for_writing(self) -> sqlite3.Connection | None:
        try:
            connection = self._connect()
            connection.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID")
            return connection
        except (sqlite3.Error, OSError) as exc:
            warnings.warn(f"kgfed: the drop-in cannot keep answers in {self.directory} ({exc}); queries are sent "
                          "uncached: give a writable cache_dir= or KGFED_CACHE_DIR, or set KGFED_NO_CACHE=1", RuntimeWarning,
                          stacklevel=2)
            return None
        finally:
            self._ready.set()

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        connection.execute("PRAGMA mmap_size=268435456")  # page reads without a system call each
        return connection

    def get(self, key: str, query_type: str) -> Entry | None:
        queued = self._pending.get(key)
        if queued is not None:  # a repeat of an answer not yet written: checked as the writer would
            entry, kind = queued
            return entry if kind == query_type and complete_document(entry[2], kind) else None
        if not self._existed and key not in self._written:
            return None
        try:
            with self._read_lock:
                if self._reader is None:
                    self._reader = self._connect()
                row = self._reader.execute("SELECT value FROM answers WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error:  # a locked or damaged file: a miss, the query is sent
            return None
        if row is None:
            return None
        try:
            status, headers, body = marshal.loads(row[0])
        except (ValueError, EOFError, TypeError):  # a damaged value: a miss
            return None
        return status, headers, body

    def put(self, key: str, entry: Entry, query_type: str) -> None:
        """Queue `entry` for the writer, which stores it if its body is a complete document of the query's form."""
        self._pending[key] = (entry, query_type)
        self._queue.put(key)

    def _write_loop(self) -> None:
        connection = self._open_for_writing()  # None: unusable, answers are dropped (one warning said so)
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
                if rows and connection is not None:
                    with connection:  # one transaction
                        connection.execute("BEGIN")
                        connection.executemany("INSERT OR REPLACE INTO answers (key, value) VALUES (?, ?)", rows)
                    if not self._existed:
                        self._written.update(key for key, _ in rows)
                        if len(self._written) > 500_000:  # ~80 MB of keys: from now on SQLite answers every lookup
                            self._existed, self._written = True, set()
            except (sqlite3.Error, OSError) as exc:  # a full disk must not stop the answers
                warnings.warn(f"kgfed: the drop-in's cache in {self.directory} could not store {len(rows)} answers "
                              f"({exc}); answers are still returned, free space or set KGFED_NO_CACHE=1", RuntimeWarning,
                              stacklevel=2)
            finally:
                for key, queued in taken.items():
                    if self._pending.get(key) is queued:  # not replaced meanwhile by a newer answer
                        self._pending.pop(key, None)
                for _ in batch:
                    self._queue.task_done()
            if None in batch:
                if connection is not None:
                    connection.close()
                return

    def flush(self) -> None:
        """Wait until every queued answer is written (at most one `linger` later)."""
        self._queue.join()

    def close(self) -> None:
        """Write what is queued (at once, no linger: the process is exiting) and close the file."""
        self._closing.set()
        self._queue.put(None)
        self._writer.join(30)
        with self._read_lock:
            reader, self._reader = self._reader, None
        if reader is not None:
            with contextlib.suppress(sqlite3.Error):
                reader.close()


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


_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization"})


@functools.lru_cache(maxsize=64)
def _credential_digest(value: str) -> str:
    """PBKDF2 of a credential (once per credential and process, ~0.1 s): a guess costs as much."""
    return hashlib.pbkdf2_hmac("sha256", value.encode("utf-8", "surrogatepass"), b"kgfed-sparqlwrapper-cache-v1",
                               100_000).hex()


def _complete_headers(headers: list[tuple[str, str]]) -> bool:
    """False for Virtuoso's partial answers (anytime timeout, result cut at ResultSetMaxRows)."""
    names = {k.lower(): v for k, v in headers}
    return names.get("x-sql-state", "").upper() != "S1TAT" and "x-sparql-maxrows" not in names


# ---- a keep-alive http.client transport for a loop that one blocking caller drives ---------------------
# A server that writes its answer in two pieces (headers, then body) with Nagle's algorithm on
# (Python's `http.server`) holds the body until the headers are acknowledged, and a kept-alive
# client's delayed ACK waits ~40 ms for it: every query would take 40 ms. urllib never meets this,
# since it opens a new connection per request. `http.client` already sets TCP_NODELAY on our side;
# TCP_QUICKACK, set after each request is sent (Linux resets it), acknowledges at once instead.
_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)

# The last response kgfed's client received for the request being sent (per task): when the client
# gives up (a persistent 429 or 5xx) the drop-in raises with that response's real headers and body.
_LAST_RESPONSE: contextvars.ContextVar[list[Response] | None] = contextvars.ContextVar("kgfed_sync_last", default=None)


def _remember(response: Response) -> Response:
    holder = _LAST_RESPONSE.get()
    if holder is not None:
        holder[:] = [response]
    return response


class _BlockingTransport:
    """kgfed's transport seam implemented with the standard library's `http.client`, connections kept alive.

    Blocking inside the coroutine is right here and only here: the loop belongs to one thread that is
    waiting for this very answer (as it would wait in urllib), so nothing else is held up, and the
    per-request work is urllib's, not aiohttp's, minus a new TCP connection per query. `HttpClient`
    above it still does the caps, 429 pauses, retries and error classes. Redirects are followed as
    urllib follows them; a kept-alive connection the server closed meanwhile is reopened once.
    `threaded=True` (the one background loop that serves calls made inside a running event loop)
    runs each exchange on a worker thread instead, over a pool of idle connections per host.
    """

    max_redirects = 10

    def __init__(self, threaded: bool = False) -> None:
        self.threaded = threaded
        self._idle: dict[tuple[str, str], list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()

    async def send(self, request: Request) -> Response:
        if self.threaded:
            return await asyncio.to_thread(self._send, request)
        return self._send(request)

    def _send(self, request: Request) -> Response:
        method, url, body = request.method, request.full_url(), request.data
        if isinstance(body, Mapping):
            body = urlencode(body).encode()
        headers = dict(request.headers)
        for _ in range(self.max_redirects + 1):
            status, answer_headers, data = self._exchange(method, url, body, headers, request.timeout)
            if status not in (301, 302, 303, 307, 308) or "Location" not in answer_headers:
                return _remember(Response(status, answer_headers, data, url))
            url = urljoin(url, answer_headers["Location"])
            if status == 303 or (status in (301, 302) and method == "POST"):  # as urllib: the body is dropped
                method, body = "GET", None
                headers = {k: v for k, v in headers.items() if k.lower() not in ("content-type", "content-length")}
        raise TransportConnectError(f"more than {self.max_redirects} redirects from {request.url}")

    def _take(self, key: tuple[str, str]) -> http.client.HTTPConnection | None:
        with self._lock:
            idle = self._idle.get(key)
            return idle.pop() if idle else None

    def _give_back(self, key: tuple[str, str], connection: http.client.HTTPConnection) -> None:
        with self._lock:
            self._idle.setdefault(key, []).append(connection)

    def _exchange(self, method: str, url: str, body: bytes | None, headers: dict[str, str],
                  timeout: float) -> tuple[int, CIMultiDict, bytes]:
        parts = urlsplit(url)
        key = (parts.scheme, parts.netloc)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        for attempt in (0, 1):
            connection = self._take(key)
            reused = connection is not None
            if connection is None:
                kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
                connection = kind(parts.netloc, timeout=timeout)
            connection.timeout = timeout
            if connection.sock is not None:
                connection.sock.settimeout(timeout)
            try:
                connection.request(method, target, body=body, headers=headers)
                if _QUICKACK is not None and connection.sock is not None:  # see _QUICKACK
                    connection.sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
                response = connection.getresponse()
                data = response.read()
            except TimeoutError:
                connection.close()
                raise TransportTimeout(f"no answer within {timeout:g} s") from None
            except http.client.IncompleteRead as exc:
                connection.close()
                raise TransportTruncated(f"{len(exc.partial)} bytes of the body arrived") from None
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as exc:
                connection.close()
                if reused and attempt == 0:  # closed by the server while idle: open a new one
                    continue
                raise TransportConnectError(f"{exc.__class__.__name__}: {exc}") from None
            except (OSError, http.client.HTTPException) as exc:
                connection.close()
                raise TransportConnectError(f"{exc.__class__.__name__}: {exc}") from None
            if response.will_close:
                connection.close()
            else:
                self._give_back(key, connection)
            return response.status, CIMultiDict(response.getheaders()), data
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.close()


# ---- one runtime per process: HTTP clients, caches; closed at exit ------------------------------------------
NO_LIMIT = 24 * 3600.0  # no client-side time limit unless setTimeout asks for one (as the genuine library)


class _PoliteClient(HttpClient):
    """kgfed's HttpClient whose 429 pauses hold the host for every drop-in client of the process."""

    peers: weakref.WeakSet[_PoliteClient] = weakref.WeakSet()

    def __init__(self, transport: Any = None) -> None:
        super().__init__(timeout=NO_LIMIT, transport=transport)
        _PoliteClient.peers.add(self)

    def pause(self, host: str, seconds: float) -> None:
        for peer in list(_PoliteClient.peers):
            HttpClient.pause(peer, host, seconds)


class _ThreadClient:
    """A private loop and client that the calling thread drives itself: no hand-off to another thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.client = _PoliteClient(_BlockingTransport())
        self.thread = threading.current_thread()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Drive `coro` on this thread until it returns.

        A request that never waits (no retry, 429 pause or contended cap: nearly every one) runs straight
        through with this loop marked as running and no task scheduled, which saves the loop's two
        iterations and their polls (about a third of kgfed's own CPU per query); when the coroutine
        awaits a future (a backoff sleep), the loop runs until that future is done, then it resumes.
        """
        waiting = None
        try:
            while True:
                asyncio._set_running_loop(self.loop)
                try:
                    waiting = coro.send(None)
                except StopIteration as done:
                    return done.value
                finally:
                    asyncio._set_running_loop(None)
                if waiting is None:  # a bare yield (asyncio.sleep(0)): let the loop run its callbacks once
                    self.loop.run_until_complete(asyncio.sleep(0))
                else:
                    waiting._asyncio_future_blocking = False  # what a Task does before waiting on it
                    self.loop.run_until_complete(asyncio.wait([waiting]))  # its result or error stays in it
        except BaseException:
            coro.close()  # e.g. Ctrl-C: nothing keeps running behind the caller's back
            raise

    def close(self) -> None:
        if self.loop.is_running() or self.loop.is_closed():
            return
        try:
            self.loop.run_until_complete(self.client.aclose())
        finally:
            self.loop.close()


class _Runtime:
    """The drop-in's process-wide state.

    Each calling thread drives its own loop and client (a blocking call, like urllib's, with no
    thread hand-off per query); a per-host semaphore shared by all threads keeps kgfed's per-host cap
    process-wide, and a 429 pause holds the host for every thread. Called from inside a running event
    loop, a query goes to one background loop thread instead, whose transport runs each exchange on a
    worker thread over a pool of kept-alive connections. Caches are shared by directory.
    """

    def __init__(self) -> None:
        self.local = threading.local()
        self.clients: list[_ThreadClient] = []
        self.background: tuple[_LoopThread, _PoliteClient] | None = None
        self.slots: dict[str, threading.BoundedSemaphore] = {}
        self.caches: dict[Path, _RawCache | None] = {}
        self.lock = threading.Lock()

    def cache(self, directory: Path) -> _RawCache | None:
        """The cache in `directory`; None (and one warning) when it cannot be opened: answers go uncached."""
        if directory in self.caches:  # the common case, without the lock (a dict read is atomic)
            return self.caches[directory]
        with self.lock:
            if directory not in self.caches:
                try:
                    self.caches[directory] = _RawCache(directory)
                except (OSError, sqlite3.Error) as exc:
                    warnings.warn(f"kgfed: the drop-in cannot keep answers in {directory} ({exc}); queries are sent "
                                  "uncached: give a writable cache_dir= or KGFED_CACHE_DIR, or set KGFED_NO_CACHE=1",
                                  RuntimeWarning, stacklevel=4)
                    self.caches[directory] = None
            return self.caches[directory]

    def _own(self) -> _ThreadClient:
        own = getattr(self.local, "client", None)
        if own is None or not all(c.thread.is_alive() for c in self.clients):  # a few µs
            with self.lock:
                dead = [c for c in self.clients if not c.thread.is_alive()]
                self.clients = [c for c in self.clients if c.thread.is_alive()]
            for client in dead:  # threads that ended (a finished pool): release their connections
                client.close()
        if own is None:
            own = self.local.client = _ThreadClient()
            with self.lock:
                self.clients.append(own)
        return own

    def _background(self) -> tuple[_LoopThread, _PoliteClient]:
        with self.lock:
            if self.background is None:
                self.background = (_LoopThread(), _PoliteClient(_BlockingTransport(threaded=True)))
            return self.background

    def _slot(self, host: str, client: HttpClient) -> threading.BoundedSemaphore:
        with self.lock:
            if host not in self.slots:
                self.slots[host] = threading.BoundedSemaphore(client.limit_for(host))
            return self.slots[host]

    def send(self, method: str, url: str, body: bytes | None, headers: dict[str, str], timeout: float | None):
        """One request through kgfed's client; `timeout` (setTimeout) bounds each wait, as urllib's does."""
        runner: _LoopThread | _ThreadClient
        if _running_loop() is not None:
            runner, client = self._background()
        else:
            runner = self._own()
            client = runner.client
        with self._slot(urlsplit(url).netloc, client):
            return runner.run(_exchange(client, method, url, body, headers, timeout or None))

    def stats(self) -> Counter:
        with self.lock:
            clients = [c.client for c in self.clients] + ([self.background[1]] if self.background else [])
        return sum((Counter(c.stats) for c in clients), Counter())

    def close(self) -> None:
        try:
            for client in self.clients:
                client.close()
            if self.background is not None:
                loop_thread, polite = self.background
                try:
                    loop_thread.run(polite.aclose())
                finally:
                    loop_thread.close()
        finally:
            for cache in self.caches.values():
                if cache is not None:
                    cache.close()


async def _exchange(client: HttpClient, method: str, url: str, body: bytes | None, headers: dict[str, str],
                    timeout: float | None) -> Response:
    """`client.request`; an EndpointError it raises carries the last response received (`last_response`)."""
    holder: list[Response] = []
    token = _LAST_RESPONSE.set(holder)  # a task's own context, or the caller's (driven without a task): reset below
    try:
        return await client.request(method, url, data=body, headers=headers, timeout=timeout)
    except EndpointError as exc:
        setattr(exc, "last_response", holder[0] if holder else None)  # noqa: B010 - read by _send
        raise
    finally:
        _LAST_RESPONSE.reset(token)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


_RUNTIME: _Runtime | None = None
_RUNTIME_LOCK = threading.Lock()


def _runtime() -> _Runtime:
    global _RUNTIME
    with _RUNTIME_LOCK:
        if _RUNTIME is None:
            _RUNTIME = _Runtime()
        return _RUNTIME


@atexit.register
def _close_runtime() -> None:
    """Close the shared session and loop, and finish pending cache writes, at interpreter exit."""
    global _RUNTIME
    with _RUNTIME_LOCK:
        runtime, _RUNTIME = _RUNTIME, None
    if runtime is not None:
        runtime.close()


def _forget_runtime() -> None:  # a forked child has no loop thread: it starts its own on first use
    global _RUNTIME, _RUNTIME_LOCK
    _RUNTIME, _RUNTIME_LOCK = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_runtime)


def stats() -> Counter:
    """Requests, retries, timeouts… sent by the drop-in in this process (kgfed's HttpClient counters)."""
    return _runtime().stats()


def flush_cache() -> None:
    """Wait until every answer queued for the drop-in's caches is on disk (tests, benchmarks)."""
    if _RUNTIME is not None:
        for cache in list(_RUNTIME.caches.values()):
            if cache is not None:
                cache.flush()


def _cache_enabled(cache: bool | None) -> bool:
    if cache is not None:
        return cache
    return os.environ.get("KGFED_NO_CACHE", "").strip().lower() not in {"1", "true", "yes", "on"}


def _cache_directory(cache_dir: str | os.PathLike | None) -> Path:
    """`cache_dir`, else `$KGFED_CACHE_DIR/sparqlwrapper`, else `~/.cache/kgfed/sparqlwrapper` (absolute)."""
    if cache_dir is not None:
        return _absolute(os.fspath(cache_dir))
    return _default_directory(os.environ.get("KGFED_CACHE_DIR"), os.environ.get("HOME"))


@functools.lru_cache(maxsize=16)
def _default_directory(cache_dir_variable: str | None, home: str | None) -> Path:
    """Resolved once per value of the variables it reads (ToG makes a wrapper per query: 0.2 ms each)."""
    from ...cache.root import local_root  # the one reader of $KGFED_CACHE_DIR

    return _absolute(os.path.join(local_root(), "sparqlwrapper"))


@functools.lru_cache(maxsize=64)
def _absolute(path: str) -> Path:  # ToG makes a wrapper per query: resolve each directory once
    return Path(path).expanduser().resolve()


# ---- file: endpoints, answered by an embedded pyoxigraph store ------------------------------------------
_FILE_FORMATS = {  # return format -> (pyoxigraph results format name, content type)
    JSON: ("JSON", "application/sparql-results+json"), XML: ("XML", "application/sparql-results+xml"),
    CSV: ("CSV", "text/csv"), TSV: ("TSV", "text/tab-separated-values"),
}
_FILE_GRAPH_FORMATS = {TURTLE: ("TURTLE", "text/turtle"), N3: ("TURTLE", "text/turtle"),
                       XML: ("RDF_XML", "application/rdf+xml"), RDFXML: ("RDF_XML", "application/rdf+xml"),
                       RDF: ("RDF_XML", "application/rdf+xml")}


def _file_answer(path: str, query: str, query_type: str, return_format: str) -> tuple[str, bytes]:
    """(content type, body) for a query on an N-Triples/Turtle file, as a server would send it."""
    import pyoxigraph as ox

    from ...endpoints.embedded import load_store

    store = load_store([path])
    try:
        result = store.query(query)
    except SyntaxError as exc:
        raise _STATUS_ERRORS[400](f"file:{path} rejected the query: {_first_line(str(exc).encode())}: fix the query",
                                  status=400) from None
    if query_type in (CONSTRUCT, DESCRIBE):
        name, content_type = _FILE_GRAPH_FORMATS.get(return_format, ("N_TRIPLES", "application/n-triples"))
        return content_type, result.serialize(format=getattr(ox.RdfFormat, name)) or b""
    name, content_type = _FILE_FORMATS.get(return_format, _FILE_FORMATS[XML])
    return content_type, result.serialize(format=getattr(ox.QueryResultsFormat, name)) or b""


# ---- the drop-in --------------------------------------------------------------------------------------------
class SPARQLWrapper(_wrapper.SPARQLWrapper):
    """The genuine `SPARQLWrapper` whose requests go through kgfed's HTTP client and response cache.

    Same constructor and methods; `cache=False` (or `KGFED_NO_CACHE=1`) sends every query,
    `cache_dir` picks where answers are kept.
    """

    def __init__(self, endpoint: str, updateEndpoint: str | None = None, returnFormat: str = XML,
                 defaultGraph: str | None = None, agent: str = _sw.__agent__, *,
                 cache: bool | None = None, cache_dir: str | os.PathLike | None = None, dialect: str | None = None):
        super().__init__(endpoint, updateEndpoint, returnFormat, defaultGraph, agent)
        self._kgfed_setup(cache, cache_dir)

    def _kgfed_setup(self, cache: bool | None, cache_dir: str | os.PathLike | None) -> None:
        self.kgfed_cache_dir = _cache_directory(cache_dir) if _cache_enabled(cache) else None

    def _query(self) -> tuple[Any, str]:
        """Send the request the genuine library built, through kgfed; (response, format) as the genuine one."""
        if self.isSparqlUpdateRequest() or (self.user and self.passwd and self.http_auth == DIGEST):
            return self._genuine_query()  # the genuine urllib path, uncached
        if self.endpoint.startswith("file:"):
            content_type, answer = _file_answer(self.endpoint[5:], self.queryString, self.queryType or SELECT,
                                                self.returnFormat)
            return _Response(self.endpoint, 200, [("Content-Type", content_type)], answer), self.returnFormat
        request = self._createRequest()
        method, url, body = request.get_method(), request.full_url, request.data
        assert body is None or isinstance(body, bytes)  # _createRequest sets bytes or nothing
        headers = {name.title(): value for name, value in request.header_items()}  # urllib's "User-agent"
        if self.agent == _sw.__agent__ and not any(k.lower() == "user-agent" for k in self.customHttpHeaders):
            headers.pop("User-Agent", None)  # the genuine default agent: send kgfed's descriptive one
        url, userinfo = split_credentials(url)  # http://user:pw@host/: Basic auth, as kgfed's client does
        if userinfo is not None:
            headers.setdefault("Authorization", userinfo)
        runtime = _runtime()
        query_type = self.queryType or SELECT
        cache, key = None, ""
        if self.kgfed_cache_dir is not None and self.returnFormat == JSON and self.queryType in (SELECT, ASK):
            cache = runtime.cache(self.kgfed_cache_dir)
        if cache is not None:
            key = cache_key(method, url, body, headers)
            hit = cache.get(key, query_type)
            if hit is not None:
                status, stored_headers, stored_body = hit
                return _Response(url, status, stored_headers, stored_body), self.returnFormat
        response = self._send(runtime, method, url, body, headers)
        answer_headers = [(str(k), str(v)) for k, v in response.headers.items()]
        _raise_for_status(url, response.status, response.headers, response.body)
        content_type = response.headers.get("Content-Type", "")
        if (cache is not None and response.status == 200 and any(t in content_type for t in _SPARQL_JSON_TYPES)
                and _complete_headers(answer_headers)):
            cache.put(key, (response.status, answer_headers, response.body), query_type)
        return _Response(strip_credentials(response.url or url), response.status, answer_headers,
                         response.body), self.returnFormat

    def _genuine_query(self) -> tuple[Any, str]:
        """The genuine `_query()` (urllib, its opener: DIGEST, updates), with the drop-in's picklable errors."""
        request = self._createRequest()
        url = strip_credentials(request.full_url)
        try:
            if self.timeout:
                return _wrapper.urlopener(request, timeout=self.timeout), self.returnFormat
            return _wrapper.urlopener(request), self.returnFormat
        except urllib.error.HTTPError as exc:
            body = exc.read() if exc.fp is not None else b""
            _raise_for_status(url, exc.code, exc.headers or {}, body)
            raise  # a 2xx HTTPError: as urllib
        except TimeoutError:
            raise _TIMEOUT(f"{urlsplit(url).netloc} did not answer within setTimeout({self.timeout}) s: "
                           "simplify the query or raise the timeout") from None
        except urllib.error.URLError as exc:
            raise _UNREACHABLE(f"{urlsplit(url).netloc}: {redact(str(exc.reason))}: check that the endpoint is running "
                               "and the URL is right") from None

    def _send(self, runtime: _Runtime, method: str, url: str, body: bytes | None, headers: dict[str, str]):
        host = urlsplit(url).netloc or url
        try:
            return runtime.send(method, url, body, headers, self.timeout)
        except EndpointError as exc:  # after kgfed's retries: the class the genuine library raises for it
            last = exc.__dict__.pop("last_response", None)
            status = exc.status
            if status is None:
                if isinstance(exc, EndpointTimeout):
                    raise _TIMEOUT(f"{host} did not answer within setTimeout({self.timeout}) s: "
                                   "simplify the query or raise the timeout") from None
                raise _UNREACHABLE(f"{redact(str(exc))}: check that the endpoint is running and the URL is right") from None
            if last is not None and last.status == status:  # what the server really sent (headers, body)
                _raise_for_status(url, status, last.headers, last.body)
            if status in _STATUS_ERRORS or not 200 <= status < 300:
                _raise_for_status(url, status, {}, str(exc).encode())
            raise  # a 2xx kgfed refuses (e.g. a robot-policy page): its own one-line error


class SPARQLWrapper2(SPARQLWrapper, _smart.SPARQLWrapper2):
    """The genuine `SPARQLWrapper2` (JSON SELECT as `Bindings`) over the drop-in's client and cache."""

    def __init__(self, baseURI: str, defaultGraph: str | None = None, *,
                 cache: bool | None = None, cache_dir: str | os.PathLike | None = None):
        _smart.SPARQLWrapper2.__init__(self, baseURI, defaultGraph)
        self._kgfed_setup(cache, cache_dir)


def get_sparql_dataframe(endpoint: str, query: str | bytes):
    """The genuine `get_sparql_dataframe` (a pandas DataFrame of typed values), answered through the drop-in."""
    sparql = SPARQLWrapper2(endpoint)
    sparql.setQuery(query)
    if sparql.queryType != SELECT:
        raise _NOT_SELECT("get_sparql_dataframe supports SELECT queries only: rewrite the query as a SELECT")
    try:
        import pandas as pd  # type: ignore[import-untyped]
    except ImportError:
        raise KgfedError("get_sparql_dataframe needs pandas: pip install pandas") from None
    import rdflib.term

    rows = [{k: rdflib.term.Literal(v.value, datatype=v.datatype).toPython() for k, v in binding.items()}
            for binding in sparql.query().bindings]  # type: ignore[union-attr]
    return pd.DataFrame(rows)
