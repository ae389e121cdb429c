"""Pytest plugin: session-scoped throwaway SPARQL servers over the shared data.

Register with `pytest_plugins = ["tests.conftest_servers"]` (or `-p tests.conftest_servers`).

- `virtuoso_freebase` → `VirtuosoFreebase(server, url, cwq_graph, federation_graph)`: one Virtuoso with
  freebase/cwq_subgraph.nt and federation/freebase.nt, each in its own named graph.
- `oxigraph_freebase`, `oxigraph_codex` → a running `OxigraphServer` (`.url` is its /query endpoint)
  over freebase/cwq_subgraph.nt and wikidata/codex_s.nt.
- `make_virtuoso(graphs, **options)` → a function-scoped factory for servers with other settings
  (e.g. a tiny `result_set_max_rows`), stopped after the test.

A missing server binary skips these tests, except under `KGFED_REQUIRE_SERVERS=1` (CI), where it
fails them; absent shared data always skips.
"""
from __future__ import annotations

import os
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

from kgfed.endpoints.servers import OxigraphServer, ServerNotFound, VirtuosoServer
from kgfed.sparql.results import SelectResult, parse_sparql_json

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
CWQ_GRAPH = "http://kgfed.test/graph/freebase-cwq"
FEDERATION_GRAPH = "http://kgfed.test/graph/freebase-federation"


@dataclass(frozen=True)
class VirtuosoFreebase:
    """The session's Virtuoso: endpoint URL and the IRIs of its two Freebase graphs."""

    server: VirtuosoServer
    url: str
    cwq_graph: str
    federation_graph: str

    def graph_url(self, graph: str) -> str:
        """Endpoint URL with `default-graph-uri=graph` (queries without FROM see only that graph)."""
        return self.server.graph_url(graph)


def servers_required() -> bool:
    """True when a missing server must fail the run (CI sets KGFED_REQUIRE_SERVERS=1)."""
    return os.environ.get("KGFED_REQUIRE_SERVERS", "") == "1"


def unavailable(message: str) -> NoReturn:
    """Skip with `message`, or fail under KGFED_REQUIRE_SERVERS=1."""
    if servers_required():
        pytest.fail(f"{message} (KGFED_REQUIRE_SERVERS=1 makes a missing server an error)", pytrace=False)
    pytest.skip(message)


def shared_file(relative: str) -> Path:
    """A file under ../shared/data, or skip the test cleanly when it is absent."""
    path = SHARED_DATA / relative
    if not path.is_file():
        pytest.skip(f"shared fixture {path} is absent (expected ../shared/data beside the project)")
    return path


def http_select(url: str, query: str, params: Mapping[str, str] | None = None, timeout: float = 60) -> SelectResult:
    """POST a SPARQL query (form-encoded) and parse the SPARQL-JSON answer (plain urllib, for tests)."""
    body = urllib.parse.urlencode({"query": query, **(params or {})}).encode()
    request = urllib.request.Request(
        url, data=body,
        headers={"Accept": "application/sparql-results+json", "Content-Type": "application/x-www-form-urlencoded"},
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return parse_sparql_json(response.read(), source=url)


def _start(factory: Callable[[], VirtuosoServer | OxigraphServer]) -> VirtuosoServer | OxigraphServer:
    """Build and start a server; a missing binary skips (or fails under KGFED_REQUIRE_SERVERS=1)."""
    try:
        server = factory()
    except ServerNotFound as exc:
        unavailable(f"{exc} to run these tests")
    return server.start()


@pytest.fixture(scope="session")
def virtuoso_freebase() -> Iterator[VirtuosoFreebase]:
    """Virtuoso with cwq_subgraph.nt in CWQ_GRAPH and federation/freebase.nt in FEDERATION_GRAPH."""
    cwq, federation = shared_file("freebase/cwq_subgraph.nt"), shared_file("federation/freebase.nt")
    server = _start(lambda: VirtuosoServer({CWQ_GRAPH: [cwq], FEDERATION_GRAPH: [federation]}))
    try:
        yield VirtuosoFreebase(server, server.url, CWQ_GRAPH, FEDERATION_GRAPH)
    finally:
        server.stop()


@pytest.fixture
def make_virtuoso() -> Iterator[Callable[..., VirtuosoServer]]:
    """Factory: `make_virtuoso({graph: [files]}, result_set_max_rows=5, ...)` → a started VirtuosoServer."""
    started: list[VirtuosoServer] = []

    def make(graphs: Mapping[str, Sequence[str | os.PathLike[str]]] | None = None, **options) -> VirtuosoServer:
        server = _start(lambda: VirtuosoServer(graphs, **options))
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


def _oxigraph(relative: str) -> Iterator[OxigraphServer]:
    server = _start(lambda: OxigraphServer([shared_file(relative)]))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def oxigraph_freebase() -> Iterator[OxigraphServer]:
    """Read-only Oxigraph server over freebase/cwq_subgraph.nt (default graph)."""
    yield from _oxigraph("freebase/cwq_subgraph.nt")


@pytest.fixture(scope="session")
def oxigraph_codex() -> Iterator[OxigraphServer]:
    """Read-only Oxigraph server over wikidata/codex_s.nt (default graph)."""
    yield from _oxigraph("wikidata/codex_s.nt")



@pytest.fixture(scope="session")
def oxigraph_federation() -> Iterator[OxigraphServer]:
    """Read-only Oxigraph server over federation/freebase.nt (default graph)."""
    yield from _oxigraph("federation/freebase.nt")


# -- Redis (the shared cache backend) ------------------------------------------------------------------
class RedisServer:
    """A throwaway `redis-server` on 127.0.0.1 (a free port, no persistence, a temporary directory)."""

    def __init__(self, binary: str = "redis-server"):
        import shutil

        found = shutil.which(binary)
        if found is None:
            raise ServerNotFound(f"{binary} is not installed (Debian: apt-get install redis-server)")
        self.binary = found
        self.process = None
        self.port = 0

    @property
    def host_port(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, db: int = 0) -> str:
        """`redis://127.0.0.1:PORT/DB`: a cache root for `--cache-dir`."""
        return f"redis://{self.host_port}/{db}"

    def start(self, timeout: float = 20.0) -> RedisServer:
        import socket
        import subprocess
        import tempfile
        import time

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.directory = tempfile.TemporaryDirectory(prefix="kgfed-redis-")
        self.process = subprocess.Popen(
            [self.binary, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "", "--appendonly", "no",
             "--dir", self.directory.name, "--databases", "64", "--protected-mode", "yes"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with status {self.process.returncode} on port {self.port}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"redis-server did not answer on port {self.port} within {timeout:.0f} s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except Exception:
                self.process.kill()
                self.process.wait()
        self.process = None
        if getattr(self, "directory", None) is not None:
            self.directory.cleanup()
            self.directory = None


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One throwaway redis-server for the session (skipped when absent; an error under KGFED_REQUIRE_SERVERS=1)."""
    try:
        import redis  # noqa: F401  (the client kgfed's Redis backend uses)
    except ImportError:
        unavailable("the redis package is not installed (pip install 'kgfed[redis]') to run these tests")
    server = _start(RedisServer)
    try:
        yield server
    finally:
        server.stop()


_REDIS_DBS = iter(range(1, 64))


@pytest.fixture
def redis_root(redis_server: RedisServer) -> Iterator[str]:
    """A cache root of the session's Redis (`redis://127.0.0.1:PORT/DB`), empty for this test."""
    import redis

    db = next(_REDIS_DBS, 1)
    client = redis.Redis(host="127.0.0.1", port=redis_server.port, db=db)
    client.flushdb()
    try:
        yield redis_server.url(db)
    finally:
        client.flushdb()
        client.close()


@pytest.fixture(params=["disk", "redis"])
def cache_root(request, tmp_path) -> str:
    """Each backend in turn: a fresh directory, then an empty Redis database (`ResponseCache(cache_root)`)."""
    if request.param == "disk":
        return str(tmp_path / "c")
    return request.getfixturevalue("redis_root")
