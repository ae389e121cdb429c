"""An in-process pyoxigraph store loaded from RDF files: the offline default, queried off the event loop.

Its `name` (what the response cache keys on) ends in a hash of the files' *contents*, taken when the
store is loaded: a changed file is a different endpoint, so old cache entries are never served for it.

Two paths. kgfed's own 1-hop templates run in process (inline or in a thread): they are bounded by
construction and a thread hop is the whole cost. A query written by an untrusted caller (the MCP
`sparql` tool) runs inside `with bounded(timeout=..., memory_mb=...)`: it goes to a small pool of
worker processes (`QueryWorkers`, `oxiworker`) that each hold a copy of the store, loaded once. A query past
its timeout, or whose caller gave up, is interrupted (SIGUSR1: the worker stops at its next write and stays
warm); pyoxigraph cannot interrupt a query still evaluating, so one that does not stop within
`INTERRUPT_GRACE` is ended by killing its worker (its memory is freed with it) and a fresh worker is started
in the background; a worker's address space is capped (`RLIMIT_AS`) at what the load left it plus
`memory_mb`, and an answer larger than `max_bytes` (the HTTP transport's cap, `MAX_BODY_BYTES`) is never
made whole: the worker stops writing it at the cap and the caller hears so in one line. Every answer, the
templates' in process too, is built under the answer budget (`endpoints.bounds.answer_budget`). `KG.select` (and so `kgfed query`) runs every query it is given on
a file store this way, under the KG's `--timeout` and `--query-memory` (`HttpOptions`); the defaults are
written once, in `endpoints.options`.
"""
from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import signal
import struct
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from ..sparql.errors import Closed, EndpointError, EndpointTimeout, UnknownEndpoint
from ..sparql.results import RDF_LANG_STRING, AnswerBudget, SelectResult, Term, ask_result, parse_sparql_json
from .bounds import _BOUNDS, MAX_BODY_BYTES, Bounds, answer_budget, bounded, current_bounds
from .options import DEFAULT_QUERY_MEMORY_MB, DEFAULT_QUERY_WORKERS

__all__ = ["EmbeddedEndpoint", "QueryWorkers", "Bounds", "bounded", "current_bounds", "load_store", "content_digest",
           "resolve_paths", "stop_query_workers"]

log = logging.getLogger("kgfed.embedded")

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


def _term(node: Any) -> Term:
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
        self._workers: QueryWorkers | None = None

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
        assert result is not None  # _run returns a result or an error
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
            budget, terms = answer_budget(), 0  # kgfed's own templates too: a hub's answer is counted as it is built
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
                terms += len(row)
                if len(rows) > budget.rows or terms > budget.terms:
                    over = (len(rows), "rows") if len(rows) > budget.rows else (terms, "terms")
                    return None, str(budget.refuse("the embedded store", *over))
            return SelectResult(variables, rows), None
        except SyntaxError as exc:
            error = f"the embedded store rejected the query: {_first(exc)}"
        except (OSError, ValueError, RuntimeError) as exc:  # evaluation errors (e.g. a SERVICE it cannot reach)
            error = f"the embedded store failed on the query ({exc.__class__.__name__}: {_first(exc)})"
        return None, error

    async def select(self, query: str) -> SelectResult:
        """The answer: inside `bounded(...)` from a killable worker process (see the module docstring),
        else computed in a worker thread; a 1-hop template query (it has a VALUES block) runs
        inline while such queries take under `inline_below` seconds (3 ms) on average: handing a 0.1 ms query
        to a thread costs more than running it (the thread hop measured 0.2-0.5 ms on a busy 2-core machine)."""
        if self._closed:
            raise Closed(f"{self.name} is closed: open a new KG")
        limits = _BOUNDS.get()
        if limits is not None:
            return await self._workers_for(limits).select(query, limits.timeout, limits.max_bytes, limits.budget())
        template = "VALUES" in query
        if template and self._store is not None and self._typical < self.inline_below:
            return self._timed(query)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._timed if template else self.select_sync, query)

    async def settled(self, limit: float) -> None:
        """Wait (at most `limit` s) until its query workers are all back: `QueryWorkers.settled`."""
        if self._workers is not None:
            await self._workers.settled(limit)

    def _timed(self, query: str) -> SelectResult:
        started = time.perf_counter()
        try:
            return self.select_sync(query)
        finally:
            self._typical = 0.8 * self._typical + 0.2 * (time.perf_counter() - started)

    def _workers_for(self, limits: Bounds) -> QueryWorkers:
        workers = self._workers
        if workers is None or workers.memory_mb != limits.memory_mb or workers.size != limits.workers:
            if workers is not None:
                workers.close()
            source = self.paths if self.paths else None
            workers = self._workers = QueryWorkers(source, store=None if source else self.store, size=limits.workers,
                                                   memory_mb=limits.memory_mb, name=self.name)
        return workers

    async def aclose(self) -> None:
        self._closed = True
        self._pool.shutdown(wait=False)
        if self._workers is not None:
            await self._workers.aclose()


# -- bounded queries in killable worker processes --------------------------------------------------
# `Bounds`, `bounded` and `current_bounds` live in `endpoints.bounds` (HTTP endpoints read them too); kept here by name.


class _TooLarge(Exception):
    """A worker's answer is larger than the caller's `max_bytes` (the worker stopped writing it at the cap)."""

    def __init__(self, size: int):
        super().__init__(size)
        self.size = size


def _mib(size: int) -> str:
    return f"{size / 2**20:.3g} MiB"


INTERRUPT_GRACE = 1.0  # seconds a worker gets to stop a query its caller gave up on before it is killed


class _Worker:
    """One `oxiworker` child process and its pipes. `owed` is the reply frame still to be read (None: none, -1: its
    head, else the payload's size): a caller that gave up leaves it, and `settle` reads it before reuse."""

    def __init__(self, proc: asyncio.subprocess.Process, note: str):
        self.proc = proc
        self.note = note
        self.owed: int | None = None

    async def ask(self, query: str, max_bytes: int = MAX_BODY_BYTES) -> tuple[bytes, bytes]:
        assert self.proc.stdin is not None
        payload = query.encode("utf-8")
        self.proc.stdin.write(b"Q" + struct.pack(">IQ", len(payload) + 8, max_bytes) + payload)
        self.owed = -1
        await self.proc.stdin.drain()
        kind, body = await self.reply()
        if kind == b"L":  # the worker stopped writing at the cap: the caller never holds it
            raise _TooLarge(int(body or b"0"))
        return kind, body

    async def reply(self) -> tuple[bytes, bytes]:
        """The frame owed for the last query (its head may have been read already)."""
        assert self.proc.stdout is not None
        kind = b"?"
        if self.owed == -1:
            head = await self.proc.stdout.readexactly(5)
            kind, self.owed = head[:1], struct.unpack(">I", head[1:])[0]
        body = await self.proc.stdout.readexactly(self.owed or 0)
        self.owed = None
        return kind, body

    def interrupt(self) -> None:
        """Ask the worker to stop the query now (SIGUSR1): it replies `I` at its next write."""
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGUSR1)

    def kill(self) -> None:
        """End the process and close its pipes now (no transport is left for the garbage collector to find
        after the event loop closed: a `kgfed query` ends its loop right after its last answer)."""
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        transport = getattr(self.proc, "_transport", None)  # asyncio's Process keeps its SubprocessTransport private
        if transport is not None:
            transport.close()


_ALL_WORKERS: weakref.WeakSet[QueryWorkers] = weakref.WeakSet()


def stop_query_workers() -> int:
    """Kill every query worker process of this process now (a server shutting down: the queries they run
    end at once, and whoever awaits them gets an error instead of waiting). Returns how many pools."""
    pools = list(_ALL_WORKERS)
    for pool in pools:
        pool.close()
    return len(pools)


class QueryWorkers:
    """`size` worker processes holding the same store; a query past its time (or abandoned) kills its worker.

    Workers start lazily, load the files once (the CWQ fixture's 25k triples: about 0.5 s including the
    interpreter) and are replaced in the background when one is killed or dies.
    """

    def __init__(self, paths: Sequence[str] | None, *, store: ox.Store | None = None, size: int = DEFAULT_QUERY_WORKERS,
                 memory_mb: int = DEFAULT_QUERY_MEMORY_MB, name: str = "the embedded store"):
        self.paths = list(paths or [])
        self._dump = None if self.paths else store.dump(format=ox.RdfFormat.N_QUADS) if store is not None else b""
        self.size = size
        self.memory_mb = memory_mb
        self.name = name
        self._idle: asyncio.Queue[_Worker | str | UnknownEndpoint] | None = None
        self._all: set[_Worker] = set()
        self._starting: set[asyncio.Task] = set()
        self._ended: set[_Worker] = set()  # killed workers: their processes are waited for in `aclose`
        self._closed = False
        self.stats = {"started": 0, "killed": 0, "died": 0, "interrupted": 0}
        self.load_seconds: list[float] = []
        _ALL_WORKERS.add(self)

    async def _spawn(self) -> _Worker:
        started = time.perf_counter()
        args = [sys.executable, "-m", "kgfed.endpoints.oxiworker", str(self.memory_mb), *(self.paths or ["-"])]
        proc = await asyncio.create_subprocess_exec(*args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.DEVNULL)
        worker = _Worker(proc, "")
        self._all.add(worker)
        try:
            assert proc.stdin is not None and proc.stdout is not None
            if self._dump is not None:
                proc.stdin.write(b"D" + struct.pack(">I", len(self._dump)) + self._dump)
                await proc.stdin.drain()
            head = await proc.stdout.readexactly(5)
            worker.note = (await proc.stdout.readexactly(struct.unpack(">I", head[1:])[0])).decode()
            if head[:1] == b"E":  # the worker could not load a file (not valid RDF): its one line
                raise UnknownEndpoint(worker.note)
        except BaseException:  # cancelled while it loaded (the pool closing): end it and reap it
            worker.kill()
            self._all.discard(worker)
            with contextlib.suppress(BaseException):
                await proc.wait()
            raise
        self.stats["started"] += 1
        self.load_seconds.append(time.perf_counter() - started)
        log.debug("query worker %d for %s: %s", proc.pid, self.name, worker.note)
        return worker

    def _replace(self) -> None:
        """Start a worker in the background and put it in the idle queue."""
        if self._closed:
            return

        async def start() -> None:
            assert self._idle is not None
            try:
                worker: _Worker | str | UnknownEndpoint = await self._spawn()
            except UnknownEndpoint as exc:  # a file the worker could not load: every caller hears that, as it is
                worker = exc
            except (OSError, asyncio.IncompleteReadError) as exc:  # a caller waiting for a worker hears why
                worker = f"could not start a query worker for {self.name} ({exc.__class__.__name__}: {exc})"
            if self._closed:
                if isinstance(worker, _Worker):
                    worker.kill()
                return
            self._idle.put_nowait(worker)

        task = asyncio.get_running_loop().create_task(start())
        self._starting.add(task)
        task.add_done_callback(self._starting.discard)

    def _ensure(self) -> asyncio.Queue[_Worker | str | UnknownEndpoint]:
        if self._idle is None:
            self._idle = asyncio.Queue()
            for _ in range(self.size):
                self._replace()
        return self._idle

    async def select(self, query: str, timeout: float, max_bytes: int = MAX_BODY_BYTES,
                     budget: AnswerBudget | None = None) -> SelectResult:
        """The answer from a worker within `timeout` seconds of query time, at most `max_bytes` of SPARQL-JSON and
        `budget` rows and terms. Waiting for a free worker is bounded apart (`_checkout`): a worker being replaced
        makes a caller wait for it, never fail. A query whose caller gave up or ran out of time is interrupted; its
        worker is killed only if it does not stop within `INTERRUPT_GRACE` (`_settle`)."""
        if self._closed:
            raise Closed(f"{self.name} is closed: open a new KG")
        worker = await self._checkout(timeout)
        deadline = time.monotonic() + timeout
        try:
            async with asyncio.timeout(timeout):
                kind, payload = await worker.ask(query, max_bytes)
        except TimeoutError:
            self._settle(worker)
            raise EndpointTimeout(f"the query ran over {timeout:g} s and was stopped: narrow it (a LIMIT, fewer "
                                  "joins, a bounded path) or raise --timeout") from None
        except _TooLarge as exc:
            self._release(worker)
            raise EndpointError(f"the query's answer passed {_mib(max_bytes)} (the cap of one answer; {_mib(exc.size)} "
                                "when it was stopped) and was not read: ask for less (a LIMIT, fewer variables)") from None
        except (asyncio.IncompleteReadError, ConnectionError, BrokenPipeError):
            code = await worker.proc.wait()
            self._discard(worker, "died")
            raise EndpointError(self._death(code)) from None
        except BaseException:  # the caller gave up (cancelled): its query must not run on
            self._settle(worker)
            raise
        self._release(worker)
        if kind == b"E":
            raise EndpointError(payload.decode("utf-8", "replace"))
        if len(payload) <= 1 << 20:
            return parse_sparql_json(payload, source=self.name, budget=budget)
        return await asyncio.to_thread(parse_sparql_json, payload, source=self.name, budget=budget, deadline=deadline)

    async def _checkout(self, timeout: float) -> _Worker:
        """An idle worker within `timeout` seconds; while a worker is on its way back (its interrupted query settling,
        or a replacement loading the store) the wait is extended, up to three times, by the grace and twice the slowest
        load so far: a caller waits for a replacement, it does not fail because another caller's query was stopped."""
        idle = self._ensure()
        loop = asyncio.get_running_loop()
        deadline, extensions = loop.time() + timeout, 0
        while True:
            try:
                async with asyncio.timeout_at(deadline):
                    got = await idle.get()
            except TimeoutError:
                if self._starting and extensions < 3:  # another caller's stopped query keeps the workers reloading
                    deadline = loop.time() + INTERRUPT_GRACE + 2 * max(self.load_seconds, default=timeout) + 1
                    extensions += 1
                    continue
                if not self.load_seconds:  # none has loaded the store yet: nothing was busy, the load took the time
                    raise EndpointTimeout(f"the embedded store's query workers were still loading {self.name} after "
                                          f"{timeout:g} s (--timeout counts the load too): raise --timeout") from None
                raise EndpointTimeout(f"every query worker of the embedded store was busy for {timeout:g} s: "
                                      "try again, or raise --timeout") from None
            if isinstance(got, UnknownEndpoint):  # the file itself is bad: no new worker would load it
                idle.put_nowait(got)
                raise UnknownEndpoint(str(got))
            if isinstance(got, str):  # its start failed: say so, and try a new one for the next call
                self._replace()
                raise EndpointError(f"{got}: check the installation (python -m kgfed.endpoints.oxiworker)")
            if got.proc.returncode is None:
                return got
            self._discard(got, "died")  # died while idle: its replacement is on the way

    async def settled(self, limit: float) -> None:
        """Wait, at most `limit` seconds, until no worker is settling after a stopped query or being started (the MCP
        server holds a caller's lane until then: a caller whose queries are stopped cannot take worker after worker)."""
        deadline = asyncio.get_running_loop().time() + limit
        while self._starting and (left := deadline - asyncio.get_running_loop().time()) > 0:
            await asyncio.wait(list(self._starting), timeout=left)

    def _release(self, worker: _Worker) -> None:
        if self._closed:
            worker.kill()
        elif self._idle is not None:
            self._idle.put_nowait(worker)

    def _settle(self, worker: _Worker) -> None:
        """Interrupt the worker's query and take it back once it replies; kill it if it does not within the grace."""
        worker.interrupt()

        async def settle() -> None:
            try:
                async with asyncio.timeout(INTERRUPT_GRACE):
                    await worker.reply()
            except BaseException:  # still evaluating (or gone): end it, a fresh worker takes its place
                self._discard(worker, "killed")
                return
            self.stats["interrupted"] += 1
            self._release(worker)

        task = asyncio.get_running_loop().create_task(settle())
        self._starting.add(task)
        task.add_done_callback(self._starting.discard)

    def _death(self, code: int) -> str:
        """Why a worker died under a query, in one line."""
        if self._closed or code == -signal.SIGINT:
            return ("the query was stopped because kgfed is shutting down (an interrupt, Ctrl-C or a stop); run it "
                    "again once the server is back")
        return (f"the query needed more than the {self.memory_mb} MB query memory ceiling and was stopped (worker "
                f"exit {code}): narrow it (a LIMIT, fewer joins, a bounded path) or raise --query-memory")

    def _discard(self, worker: _Worker, why: str) -> None:
        worker.kill()
        self._all.discard(worker)
        self._ended = {w for w in self._ended if w.proc.returncode is None}  # the loop reaped the others
        self._ended.add(worker)  # reaped by `aclose` if the loop has not done it by then
        self.stats[why] += 1
        self._replace()

    def pids(self) -> list[int]:
        return [w.proc.pid for w in self._all if w.proc.returncode is None]

    def close(self) -> None:
        """Kill every worker now (no waiting)."""
        self._closed = True
        for task in list(self._starting):
            task.cancel()
        for worker in list(self._all):
            worker.kill()

    async def aclose(self) -> None:
        starting = list(self._starting)
        self.close()
        # a worker cancelled while it started: let asyncio end the process it may have made (its own cleanup)
        await asyncio.gather(*starting, return_exceptions=True)
        for worker in [*self._all, *self._ended]:
            with contextlib.suppress(Exception):
                await worker.proc.wait()
        self._all.clear()
        self._ended.clear()
