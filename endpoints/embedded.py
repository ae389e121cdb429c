"""An in-process pyoxigraph store loaded from RDF files: the offline default, queried off the event loop.

Its `name` (what the response cache keys on) ends in a hash of the files' *contents*, taken when the
store is loaded: a changed file is a different endpoint, so old cache entries are never served for it.
"""
from __future__ import annotations

import asyncio
import hashlib
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyoxigraph as ox

from ..sparql.errors import Closed, EndpointError, UnknownEndpoint
from ..sparql.results import RDF_LANG_STRING, SelectResult, Term, ask_result

_FORMATS = {
    ".nt": ox.RdfFormat.N_TRIPLES,
    ".ntriples": ox.RdfFormat.N_TRIPLES,
    ".nq": ox.RdfFormat.N_QUADS,
    ".ttl": ox.RdfFormat.TURTLE,
    ".trig": ox.RdfFormat.TRIG,
    ".rdf": ox.RdfFormat.RDF_XML,
    ".owl": ox.RdfFormat.RDF_XML,
}
_STORES: dict[tuple, ox.Store] = {}
_STORES_LOCK = threading.Lock()


_DIGESTS: dict[tuple, str] = {}  # (path, size, mtime_ns, ctime_ns, inode) -> content hash


def _fingerprint(paths: Sequence[Path]) -> tuple:
    return tuple((str(p), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino) for p in paths for st in [os.stat(p)])


def content_digest(paths: Sequence[Path]) -> str:
    """A hash of the files' names and contents (memoised per path, size, mtime, ctime and inode: any
    write changes ctime, which no one can set back)."""
    overall = hashlib.blake2b(digest_size=8)
    for stat_key in _fingerprint(paths):
        digest = _DIGESTS.get(stat_key)
        if digest is None:
            h = hashlib.blake2b(digest_size=16)
            with open(stat_key[0], "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
            digest = _DIGESTS[stat_key] = h.hexdigest()
        overall.update(f"{stat_key[0]}\n{digest}\n".encode())
    return overall.hexdigest()


def resolve_paths(paths: Sequence[str | os.PathLike]) -> list[Path]:
    """Absolute paths of existing RDF files in a known format (raises UnknownEndpoint otherwise)."""
    resolved = []
    for path in paths:
        p = Path(path).expanduser().resolve()
        if not p.is_file():
            raise UnknownEndpoint(f"no RDF file at {str(path)!r}: give an existing .nt/.ttl path, e.g. file:kg.nt")
        if p.suffix.lower() not in _FORMATS:
            raise UnknownEndpoint(f"unknown RDF format {p.suffix!r} for {p.name}: use .nt, .nq, .ttl, .trig or .rdf")
        resolved.append(p)
    return resolved


def load_store(paths: Sequence[str | os.PathLike]) -> ox.Store:
    """An in-memory store with the files loaded; one per distinct file set per process (re-loaded if a file changes)."""
    return _load(resolve_paths(paths))[0]


def _load(resolved: Sequence[Path]) -> tuple[ox.Store, str]:
    """The store for these files and the content digest of what was loaded into it."""
    with _STORES_LOCK:
        digest = content_digest(resolved)
        key = (tuple(map(str, resolved)), digest)
        store = _STORES.get(key)
        if store is None:
            store = ox.Store()
            for p in resolved:
                try:
                    store.bulk_load(path=str(p), format=_FORMATS[p.suffix.lower()])
                except SyntaxError as exc:
                    raise UnknownEndpoint(f"{p.name} is not valid RDF ({exc}): fix the file or convert it to N-Triples") from None
            if content_digest(resolved) != digest:
                raise UnknownEndpoint(f"{resolved[0].name} changed while it was loaded: retry once the file is written")
            _STORES[key] = store
    return store, digest


def _term(node) -> Term:
    if isinstance(node, ox.NamedNode):
        return Term("uri", node.value)
    if isinstance(node, ox.Literal):
        datatype = node.datatype.value
        if node.language or datatype == RDF_LANG_STRING:
            return Term("literal", node.value, node.language, None)
        return Term("literal", node.value, None, None if datatype.endswith("#string") else datatype)
    if isinstance(node, ox.BlankNode):
        return Term("bnode", node.value)
    return Term("literal", str(node))  # triple terms etc.: printable, never crash


def _first(exc: BaseException) -> str:
    lines = str(exc).splitlines()
    return lines[0][:200] if lines else exc.__class__.__name__


class EmbeddedEndpoint:
    """SPARQL over a pyoxigraph `Store` (files or a given store) in worker threads."""

    def __init__(self, paths: Sequence[str | os.PathLike] = (), *, store: ox.Store | None = None, workers: int = 2,
                 inline_below: float = 0.003):
        if store is None and not paths:
            raise UnknownEndpoint("an embedded endpoint needs at least one RDF file: file:PATH[,PATH...]")
        self.paths = [str(p) for p in resolve_paths(paths)]
        self._store = store
        self._digest = content_digest([Path(p) for p in self.paths]) if paths else f"mem{id(store):x}"
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kgfed-oxigraph")
        self._closed = False
        self._load_lock = threading.Lock()
        self.inline_below = inline_below
        self._typical = inline_below  # moving average of template query time (s); starts at the threshold

    @property
    def name(self) -> str:
        """`file:PATHS#DIGEST`: the digest of the contents loaded (or, before loading, on disk now)."""
        return "file:" + ",".join(self.paths) + f"#{self._digest}"

    @property
    def store(self) -> ox.Store:
        if self._store is None:
            with self._load_lock:
                if self._store is None:
                    self._store, self._digest = _load([Path(p) for p in self.paths])
        return self._store

    def select_sync(self, query: str) -> SelectResult:
        """Run a query in the calling thread."""
        result, error = self._run(self.store, query)
        if error is not None:
            raise EndpointError(error)
        return result

    @staticmethod
    def _run(store: ox.Store, query: str) -> tuple[SelectResult | None, str | None]:
        """(answer, None) or (None, why): pyoxigraph's solution objects must die in the thread that made
        them, so no exception (whose traceback would hold them) leaves this frame."""
        error = None
        try:
            solutions = store.query(query)
            if isinstance(solutions, (bool, ox.QueryBoolean)):  # ASK
                return ask_result(bool(solutions)), None
            if not isinstance(solutions, ox.QuerySolutions):
                return None, "the embedded store got a CONSTRUCT/DESCRIBE query: kgfed's select takes SELECT or ASK"
            variables = [v.value for v in solutions.variables]
            rows = []
            seen: dict = {}  # node -> Term: a node repeated across rows is converted once
            for solution in solutions:  # computed lazily: evaluation errors surface here too
                row = {}
                for i, name in enumerate(variables):
                    node = solution[i]
                    if node is not None:
                        term = seen.get(node)
                        if term is None:
                            term = seen[node] = _term(node)
                        row[name] = term
                rows.append(row)
            return SelectResult(variables, rows), None
        except SyntaxError as exc:
            error = f"the embedded store rejected the query: {_first(exc)}"
        except (OSError, ValueError, RuntimeError) as exc:  # evaluation errors (e.g. a SERVICE it cannot reach)
            error = f"the embedded store failed on the query ({exc.__class__.__name__}: {_first(exc)})"
        return None, error

    async def select(self, query: str) -> SelectResult:
        """The answer, computed in a worker thread; a 1-hop template query (it has a VALUES block) runs
        inline while such queries take under `inline_below` seconds (3 ms) on average: handing a 0.1 ms query
        to a thread costs more than running it (the thread hop measured 0.2-0.5 ms on a busy 2-core machine)."""
        if self._closed:
            raise Closed(f"{self.name} is closed: open a new KG")
        template = "VALUES" in query
        if template and self._store is not None and self._typical < self.inline_below:
            return self._timed(query)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._timed if template else self.select_sync, query)

    def _timed(self, query: str) -> SelectResult:
        started = time.perf_counter()
        try:
            return self.select_sync(query)
        finally:
            self._typical = 0.8 * self._typical + 0.2 * (time.perf_counter() - started)

    async def aclose(self) -> None:
        self._closed = True
        self._pool.shutdown(wait=False)
