"""A faithful `SPARQLWrapper` drop-in over kgfed's HTTP client and the cache root's document store.

The drop-in is for code written against SPARQLWrapper (ToG's and PoG's `freebase_func.py`): change
only the import line and every query goes through kgfed's HTTP client (keep-alive, per-host cap of 16
settable with `set_host_limit`, HTTP 429 Retry-After; retries on 5xx/resets only with `retries=`) and a
response cache:

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
cache is `kgfed.cache.documents.DocumentCache` over the root's `documents` store: on disk the
caller's share is one primary-key lookup in a SQLite table; a writer thread checks and stores the
answers in batched transactions, off the caller's path. Switch the cache off with
`SPARQLWrapper(url, cache=False)` or `KGFED_NO_CACHE=1`; move it with `cache_dir=` or
`KGFED_CACHE_DIR` (entries live in `$KGFED_CACHE_DIR/sparqlwrapper`, default
`~/.cache/kgfed/sparqlwrapper`; a `redis://` root keeps them under its `kgfed:documents:*` keys).

HTTP errors raise what the genuine `_query()` raises, status for status: `QueryBadFormed` 400,
`Unauthorized` 401, `EndPointNotFound` 404, `URITooLong` 414, `EndPointInternalError` 500, and
`urllib.error.HTTPError` for every other status (501, 505, 429, 403…), carrying the server's headers
and body; `urllib.error.URLError` when the server cannot be reached, `TimeoutError` on `setTimeout`.
Each is sent once, as the genuine library sends it. `str()` of each is the genuine library's text (the
server's response after `Response:\n` as a bytes repr; urllib's `HTTP Error N: phrase`; "timed out"),
which agents parse; each is also a kgfed `EndpointError` whose `hint` is a one-line message carrying
the endpoint's own words and the fix, and each pickles (a worker process's error
reaches its parent intact). An endpoint URL with `user:password@` is sent as Basic auth; the
password is in no key, entry or message. At interpreter exit the shared clients are closed and the
last answers committed to the cache (`kgfed.cache.documents` says what is left to the writer thread).
A `file:PATH` endpoint (an N-Triples/Turtle file) is answered by an embedded pyoxigraph store.
"""
from __future__ import annotations

import atexit
import functools
import http.client
import io
import os
import sys
import threading
import urllib.error
import urllib.request
import warnings
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import SPARQLWrapper as _sw
from SPARQLWrapper import SmartWrapper as _smart
from SPARQLWrapper import Wrapper as _wrapper
from SPARQLWrapper import sparql_dataframe as _sparql_dataframe
# the drop-in re-exports SPARQLWrapper's names (`*_sw.__all__` below), which ruff cannot see
from SPARQLWrapper import (ASK, BASIC, CONSTRUCT, CSV, DELETE, DESCRIBE, DIGEST, GET, INSERT, JSON, JSONLD, N3, POST,  # noqa: F401
                           POSTDIRECTLY, RDF, RDFXML, SELECT, TSV, TURTLE, URLENCODED, XML, QueryResult)  # noqa: F401
from SPARQLWrapper.SPARQLExceptions import (EndPointInternalError, EndPointNotFound, QueryBadFormed,
                                            SPARQLWrapperException, Unauthorized, URITooLong)

from ...cache.documents import CACHE_VERSION, DocumentCache, Entry, cache_key, complete_document  # noqa: F401
from ...cache.documents import complete_headers as _complete_headers
from ...cache.root import CacheError, Store
from ...endpoints.client import POLITE_HOSTS, WIKIMEDIA_API_CONCURRENCY, HttpClient, is_wikimedia_api
from ...endpoints.options import DEFAULT_PER_HOST
from ...endpoints.transport import Response
from ...sparql.errors import EndpointError, EndpointTimeout, KgfedError
from ...sparql.secrets import redact, split_credentials, strip_credentials
from .blocking import _LAST_RESPONSE, _BlockingTransport, _LoopThread, _PoliteClient, _ThreadClient

__all__ = [
    *_sw.__all__,
    "SPARQLWrapperException", "EndPointInternalError", "EndPointNotFound", "QueryBadFormed", "Unauthorized",
    "URITooLong", "flush_cache", "stats", "set_host_limit", "host_limit",
]

_SPARQL_JSON_TYPES = tuple(_wrapper._SPARQL_JSON)
_RawCache = DocumentCache  # its name before the cache moved to kgfed.cache.documents
Location = Path | str | Store  # a cache directory, a Redis URL, or a store handed in
PUBLIC_MODULE = "kgfed.engine.kg.sync"  # where users import the drop-in from: its classes' `__module__`


# ---- the drop-in's errors: the genuine classes, and kgfed's EndpointError too ------------------------------
# Every class below pickles (a worker process's error reaches its parent intact): `__reduce__` rebuilds it
# by its registered name, since `sync.QueryBadFormed` is (and must stay) the genuine class itself.
_TWINS: dict[str, Any] = {}


def _rebuild_twin(name: str, message: str, text: str | None = None) -> Exception:
    """Unpickle a drop-in error (its attributes follow as pickled state)."""
    return _TWINS[name](message, text=text)


def _genuine_text(genuine: type[Exception], response: bytes, hint: str) -> str:
    """What the genuine library's error says for the same answer: SPARQLWrapper's own text (the server's
    response after `Response:\n`, as a bytes repr), urllib's "timed out"; else kgfed's one line."""
    if issubclass(genuine, SPARQLWrapperException):
        return str(genuine(response or None))
    if issubclass(genuine, TimeoutError):
        return "timed out"
    if genuine is _sparql_dataframe.QueryException:
        return "Only SPARQL SELECT queries are supported."
    return hint


def _twin_error(genuine: type[Exception], kgfed: type[KgfedError] = EndpointError) -> Any:
    """A subclass of the genuine exception that is also a kgfed error: `str()` is the genuine library's text
    (agents parse it), `hint` kgfed's one line naming the endpoint and the fix."""

    def __init__(self, message: str, *, status: int | None = None, response: bytes = b"", text: str | None = None) -> None:
        Exception.__init__(self, _genuine_text(genuine, response, message) if text is None else text)
        self.status, self.retryable, self.response, self.reason, self.hint = status, False, response, message, message

    def __reduce__(self):
        return _rebuild_twin, (genuine.__name__, self.hint, self.args[0]), dict(self.__dict__)

    twin = type(genuine.__name__, (genuine, kgfed), {
        "__init__": __init__, "__str__": lambda self: self.args[0], "__reduce__": __reduce__, "__module__": PUBLIC_MODULE,
        "__doc__": f"The genuine `{genuine.__name__}`, raised by the drop-in (also a kgfed `{kgfed.__name__}`): "
                   "`str()` is the genuine text, `hint` kgfed's one line.",
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
    (the body) and `reason` (the server's status phrase); `str()` is urllib's (`HTTP Error 503: Service
    Unavailable`), `hint` kgfed's one line. Unlike urllib's, it pickles.
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

    @property
    def hint(self) -> str:
        return self.message

    def __str__(self) -> str:
        return urllib.error.HTTPError.__str__(self)

    def __reduce__(self):
        return _rebuild_http_error, (self.url, self.code, self.message, list(self.hdrs.items()), self.response, self.msg)


_HTTPError.__name__ = _HTTPError.__qualname__ = "HTTPError"
_HTTPError.__module__ = PUBLIC_MODULE
_TWINS["HTTPError"] = _HTTPError


def _first_line(body: bytes, width: int = 200) -> str:
    for line in body.decode("utf-8", "replace").splitlines():
        if line.strip():
            return line.strip()[:width]
    return "(empty body)"


def _raise_for_status(url: str, status: int, headers, body: bytes, reason: str | None = None) -> None:
    """Raise what the genuine library raises for this status (never returns unless it is 2xx).

    As urllib: any status outside 200-299 (redirects are followed before) is an error; 400, 401, 404,
    414 and 500 become the genuine library's own classes, every other one `urllib.error.HTTPError`
    with the server's status phrase (`reason`, else the one the blocking transport kept on `headers`).
    """
    if 200 <= status < 300:
        return
    host = urlsplit(url).netloc or url
    words = redact(_first_line(body))
    if status in _STATUS_ERRORS:
        raise _STATUS_ERRORS[status](f"{host} answered HTTP {status}: {words}: {_FIXES[status]}", status=status, response=body)
    raise _HTTPError(url, status, f"{host} answered HTTP {status}: {words}", headers, body,
                     reason if reason is not None else getattr(headers, "kgfed_reason", None))


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


class _Runtime:
    """The drop-in's process-wide state.

    Each calling thread drives its own loop and client (a blocking call, like urllib's, with no
    thread hand-off per query); a per-host semaphore shared by all threads keeps kgfed's per-host cap
    process-wide, and a 429 pause holds the host for every thread. Called from inside a running event
    loop, a query goes to one background loop thread instead, whose transport runs each exchange on a
    worker thread over a pool of kept-alive connections. Caches are shared by location.
    """

    def __init__(self) -> None:
        self.local = threading.local()
        self.clients: list[_ThreadClient] = []
        self.background: tuple[_LoopThread, _PoliteClient] | None = None
        self.slots: dict[str, threading.BoundedSemaphore] = {}
        self.caches: dict[Location, DocumentCache | None] = {}
        self.lock = threading.Lock()

    def cache(self, location: Location) -> DocumentCache | None:
        """The cache at `location` (a directory, a Redis URL, a `Store`); None (and one warning) when it cannot
        be opened: answers go uncached."""
        if location in self.caches:  # the common case, without the lock (a dict read is atomic)
            return self.caches[location]
        with self.lock:
            if location not in self.caches:
                try:
                    self.caches[location] = (DocumentCache(location, close_store=False) if isinstance(location, Store)
                                             else DocumentCache(location))
                except (OSError, CacheError) as exc:
                    warnings.warn(f"kgfed: the drop-in cannot keep answers in {getattr(location, 'location', location)} "
                                  f"({exc}); queries are sent uncached: give a writable cache_dir= or KGFED_CACHE_DIR, "
                                  "or set KGFED_NO_CACHE=1", RuntimeWarning, stacklevel=4)
                    self.caches[location] = None
            return self.caches[location]

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

    def _slot(self, host: str) -> threading.BoundedSemaphore:
        with self.lock:
            if host not in self.slots:
                self.slots[host] = threading.BoundedSemaphore(host_limit(host))
            return self.slots[host]

    def send(self, method: str, url: str, body: bytes | None, headers: dict[str, str], timeout: float | None,
             retries: int = 0):
        """One request through kgfed's client; `timeout` (setTimeout) bounds each wait, as urllib's does;
        `retries` of a 5xx, a 429 or a dropped connection (0: none, as the genuine library)."""
        runner: _LoopThread | _ThreadClient
        if _running_loop() is not None:
            runner, client = self._background()
        else:
            runner = self._own()
            client = runner.client
        with self._slot(urlsplit(url).netloc):
            return runner.run(_exchange(client, method, url, body, headers, timeout or None, retries))

    def stats(self) -> Counter:
        with self.lock:
            clients = [c.client for c in self.clients] + ([self.background[1]] if self.background else [])
        return sum((Counter(c.stats) for c in clients), Counter())

    def close(self, at_exit: bool = False) -> None:
        """Close the clients and loops, then the caches (`at_exit`: see `DocumentCache.close`)."""
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
                    cache.close(at_exit=at_exit)


async def _exchange(client: HttpClient, method: str, url: str, body: bytes | None, headers: dict[str, str],
                    timeout: float | None, retries: int = 0) -> Response:
    """`client.request`; an EndpointError it raises carries the last response received (`last_response`)."""
    holder: list[Response | OSError] = []
    token = _LAST_RESPONSE.set(holder)  # a task's own context, or the caller's (driven without a task): reset below
    try:
        return await client.request(method, url, data=body, headers=headers, timeout=timeout, retries=retries)
    except EndpointError as exc:
        setattr(exc, "last_response", holder[0] if holder else None)  # noqa: B010 - read by _send
        raise
    finally:
        _LAST_RESPONSE.reset(token)


def _running_loop() -> Any:
    """The event loop running in this thread, if any (without importing asyncio: unimported, none can run)."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
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


def _close_runtime(at_exit: bool = False) -> None:
    """Close the shared clients and loops, and finish pending cache writes (at interpreter exit: `at_exit`,
    which returns once the last answers are committed and leaves closing the cache files to their writers)."""
    global _RUNTIME
    with _RUNTIME_LOCK:
        runtime, _RUNTIME = _RUNTIME, None
    if runtime is not None:
        runtime.close(at_exit)


atexit.register(_close_runtime, True)


def _forget_runtime() -> None:  # a forked child has no loop thread: it starts its own on first use
    global _RUNTIME, _RUNTIME_LOCK
    _RUNTIME, _RUNTIME_LOCK = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_runtime)


# ---- the per-host cap: how many drop-in requests may be in flight to one host, all threads together ------
_HOST_LIMITS: dict[str | None, int] = {}  # set_host_limit: a host's own cap, or every host's (None)
HOST_LIMIT_ENV = "KGFED_DROPIN_PER_HOST"


def _valid_limit(limit: object, where: str) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"{where} = {limit!r}: the per-host cap must be a whole number, at least 1")
    return limit


def set_host_limit(limit: int | None, host: str | None = None) -> None:
    """Allow `limit` drop-in requests in flight at once to `host` (`"127.0.0.1:8890"`; None: every host without
    published rules), counted over all threads of the process; `None` restores the default
    (`$KGFED_DROPIN_PER_HOST`, else 16; a host with published rules keeps kgfed's polite cap unless named, and
    a Wikimedia API host never gets more than its published 3). Requests already waiting keep the old cap."""
    if limit is None:
        _HOST_LIMITS.pop(host, None)
    else:
        _HOST_LIMITS[host] = _valid_limit(limit, "set_host_limit")
    if _RUNTIME is not None:
        with _RUNTIME.lock:
            _RUNTIME.slots.clear()


def host_limit(host: str) -> int:
    """The drop-in's cap on requests in flight to `host` (`netloc`, e.g. `"127.0.0.1:8890"`)."""
    limit = _HOST_LIMITS.get(host)
    if limit is None and host in POLITE_HOSTS:
        limit = POLITE_HOSTS[host]
    if limit is None:
        limit = _HOST_LIMITS.get(None)
    if limit is None and os.environ.get(HOST_LIMIT_ENV, "").strip():
        text = os.environ[HOST_LIMIT_ENV].strip()
        limit = _valid_limit(int(text) if text.isdigit() else text, f"${HOST_LIMIT_ENV}")
    if limit is None:
        limit = DEFAULT_PER_HOST
    return min(limit, WIKIMEDIA_API_CONCURRENCY) if is_wikimedia_api(host) else limit


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


def _cache_directory(cache_dir: str | os.PathLike | Store | None) -> Location:
    """Where the documents live: `cache_dir` (a directory, a Redis URL, or a `Store` such as a session's
    `store("documents")`), else `$KGFED_CACHE_DIR/sparqlwrapper` (on a Redis root, its `documents` keys),
    else `~/.cache/kgfed/sparqlwrapper`."""
    if cache_dir is None:
        return _default_directory(os.environ.get("KGFED_CACHE_DIR"), os.environ.get("HOME"))
    if isinstance(cache_dir, str):  # ToG makes a wrapper per query: the cheap tests first
        return _location(cache_dir)
    if isinstance(cache_dir, os.PathLike):
        return _location(os.fspath(cache_dir))
    return cache_dir  # a Store


@functools.lru_cache(maxsize=16)
def _default_directory(cache_dir_variable: str | None, home: str | None) -> Location:
    """Resolved once per value of the variables it reads (ToG makes a wrapper per query: 0.2 ms each)."""
    from ...cache.root import CacheSpec  # the one reader of $KGFED_CACHE_DIR

    spec = CacheSpec.of(None)
    return spec.location if not spec.local else _absolute(os.fspath(spec.directory("documents")))


@functools.lru_cache(maxsize=64)
def _location(text: str) -> Location:
    """A Redis URL as it is (checked: a bad one is a one-line error), else the directory, absolute."""
    from ...cache.root import CacheSpec

    return CacheSpec.of(text).location if "://" in text else _absolute(text)


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
                                  status=400, response=str(exc).encode()) from None  # as a server: its parser's words
    if query_type in (CONSTRUCT, DESCRIBE):
        name, content_type = _FILE_GRAPH_FORMATS.get(return_format, ("N_TRIPLES", "application/n-triples"))
        return content_type, result.serialize(format=getattr(ox.RdfFormat, name)) or b""
    name, content_type = _FILE_FORMATS.get(return_format, _FILE_FORMATS[XML])
    return content_type, result.serialize(format=getattr(ox.QueryResultsFormat, name)) or b""


# ---- the drop-in --------------------------------------------------------------------------------------------
class SPARQLWrapper(_wrapper.SPARQLWrapper):
    """The genuine `SPARQLWrapper` whose requests go through kgfed's HTTP client and response cache.

    Same constructor and methods; `cache=False` (or `KGFED_NO_CACHE=1`) sends every query,
    `cache_dir` picks where answers are kept: a directory, a `redis://` URL, or a `Store`
    (`kgfed.cache.root.open_store(root, "documents")`, e.g. a session's `store("documents")`).
    """

    def __init__(self, endpoint: str, updateEndpoint: str | None = None, returnFormat: str = XML,
                 defaultGraph: str | None = None, agent: str = _sw.__agent__, *,
                 cache: bool | None = None, cache_dir: str | os.PathLike | Store | None = None, dialect: str | None = None,
                 retries: int = 0):
        super().__init__(endpoint, updateEndpoint, returnFormat, defaultGraph, agent)
        self._kgfed_setup(cache, cache_dir, retries)

    def _kgfed_setup(self, cache: bool | None, cache_dir: str | os.PathLike | Store | None, retries: int = 0) -> None:
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError(f"retries={retries!r}: give a whole number of retries, 0 (the genuine library's) or more")
        self.kgfed_cache_dir = _cache_directory(cache_dir) if _cache_enabled(cache) else None
        self.kgfed_retries = retries

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
            _raise_for_status(url, exc.code, exc.headers or {}, body, exc.reason)
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
            return runtime.send(method, url, body, headers, self.timeout, getattr(self, "kgfed_retries", 0))
        except EndpointError as exc:  # after kgfed's retries: the class the genuine library raises for it
            last = exc.__dict__.pop("last_response", None)
            status = exc.status
            if status is None:
                if isinstance(exc, EndpointTimeout):
                    raise _TIMEOUT(f"{host} did not answer within setTimeout({self.timeout}) s: "
                                   "simplify the query or raise the timeout") from None
                hint = f"{redact(str(exc))}: check that the endpoint is running and the URL is right"
                # urllib's text for the same failure: `<urlopen error [Errno 111] Connection refused>`
                raise _UNREACHABLE(hint, text=f"<urlopen error {last}>" if isinstance(last, OSError) else None) from None
            if isinstance(last, Response) and last.status == status:  # what the server really sent (headers, body)
                _raise_for_status(url, status, last.headers, last.body)
            if status in _STATUS_ERRORS or not 200 <= status < 300:
                _raise_for_status(url, status, {}, str(exc).encode())
            raise  # a 2xx kgfed refuses (e.g. a robot-policy page): its own one-line error


class SPARQLWrapper2(SPARQLWrapper, _smart.SPARQLWrapper2):
    """The genuine `SPARQLWrapper2` (JSON SELECT as `Bindings`) over the drop-in's client and cache."""

    def __init__(self, baseURI: str, defaultGraph: str | None = None, *,
                 cache: bool | None = None, cache_dir: str | os.PathLike | Store | None = None, retries: int = 0):
        _smart.SPARQLWrapper2.__init__(self, baseURI, defaultGraph)
        self._kgfed_setup(cache, cache_dir, retries)


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


for _public in (SPARQLWrapper, SPARQLWrapper2, get_sparql_dataframe, stats, flush_cache, set_host_limit, host_limit):
    _public.__module__ = PUBLIC_MODULE  # reprs and pickles name the import path, as before the split
