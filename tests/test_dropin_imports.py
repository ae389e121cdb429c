"""The SPARQLWrapper drop-in's import stays as light as the genuine library's (issue 32 item 4).

A script that swaps `from SPARQLWrapper import ...` for `from kgfed.engine.kg.sync import ...` pays,
at every start, for each module that import loads. The genuine library loads `urllib`, `http.client`
and `xml.dom`; the drop-in adds kgfed's client and cache, and must not bring back what it measurably
cost before (asyncio about 12 ms, importlib.metadata about 9 ms, logging 4 ms, multidict 3 ms: the
drop-in's whole-process run of 300 queries was 1.19x the genuine library's). These tests run fresh
interpreters and check which modules they loaded, before and after real queries to a real local
server (names, never timings: the times are in docs/benchmarks.md), and that what became lazy still
works when it is needed: a retry that sleeps, a log record, the version in the User-Agent.
"""
from __future__ import annotations

import json
import logging
import marshal
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# modules the drop-in's import and its queries must not load (the genuine library loads none of them)
HEAVY = ("asyncio", "concurrent.futures", "logging", "importlib.metadata", "multidict", "aiohttp", "yarl",
         "kgfed.engine.kg.facade", "pyoxigraph", "rdflib", "pandas", "numpy", "diskcache", "redis")

DOC = {"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "uri", "value": "http://example.org/a"}}]}}


class _Scripted(BaseHTTPRequestHandler):
    """A SPARQL endpoint on 127.0.0.1: `/sparql` answers DOC; `/flaky` answers 503 to every other request."""

    protocol_version = "HTTP/1.1"
    count = 0
    lock = threading.Lock()

    def log_message(self, *args) -> None:
        return None

    def do_GET(self) -> None:
        with _Scripted.lock:
            _Scripted.count += 1
            n = _Scripted.count
        status, body = 200, json.dumps(DOC).encode()
        if self.path.startswith("/flaky") and n % 2 == 1:
            status, body = 503, b"busy, try again"
        self.send_response(status)
        self.send_header("Content-Type", "application/sparql-results+json" if status == 200 else "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def run(script: str, tmp_path: Path, **env: str) -> list[str]:
    """Run `script` in a fresh interpreter (cache under tmp_path); its printed lines."""
    environment = {k: v for k, v in os.environ.items() if k != "KGFED_NO_CACHE"}
    environment.update({"KGFED_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT), **env})
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


LOADED = f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"


def test_importing_the_drop_in_loads_nothing_heavy(tmp_path):
    lines = run("import json, sys\nfrom kgfed.engine.kg.sync import SPARQLWrapper, JSON, XML, SPARQLWrapper2\n"
                + LOADED, tmp_path)
    assert json.loads(lines[0]) == []


def test_the_genuine_library_loads_none_of_them_either(tmp_path):
    """The list above is what kgfed would add: the genuine library itself needs none of it."""
    lines = run("import json, sys\nfrom SPARQLWrapper import SPARQLWrapper, JSON\n" + LOADED, tmp_path)
    assert json.loads(lines[0]) == []


@pytest.mark.parametrize("cache", ["cold", "off"])
def test_queries_load_nothing_heavy_and_a_cold_answer_is_in_the_cache_after_exit(endpoint, tmp_path, cache):
    script = ("import json, sys\nfrom kgfed.engine.kg.sync import SPARQLWrapper, JSON\n"
              "for q in ('SELECT ?x WHERE { ?x ?p ?o }', 'SELECT ?x WHERE { ?s ?p ?x }'):\n"
              f"    s = SPARQLWrapper({endpoint + '/sparql'!r}); s.setQuery(q); s.setReturnFormat(JSON)\n"
              "    print(json.dumps(s.query().convert()))\n" + LOADED)
    lines = run(script, tmp_path, **({"KGFED_NO_CACHE": "1"} if cache == "off" else {}))
    assert [json.loads(line) for line in lines[:2]] == [DOC, DOC]
    assert json.loads(lines[2]) == []
    from kgfed.cache.documents import TableStore

    directory = tmp_path / "cache" / "sparqlwrapper"
    if cache == "off":
        assert not (directory / TableStore.FILE).exists()
        return
    store = TableStore(directory)  # written by the exiting process: both answers, as the server sent them
    try:
        entries = [marshal.loads(store.get(key)) for key in store.keys()]
    finally:
        store.close()
    assert [(status, json.loads(body)) for status, _, body in entries] == [(200, DOC), (200, DOC)]


def test_a_retry_that_must_wait_imports_asyncio_then_and_still_answers(endpoint, tmp_path):
    """The first answer is a 503 (retried, as asked): the client's backoff sleeps on an event loop made at that moment."""
    script = ("import json, sys\nfrom kgfed.engine.kg.sync import SPARQLWrapper, JSON, stats\n"
              "print('asyncio' in sys.modules)\n"
              f"s = SPARQLWrapper({endpoint + '/flaky'!r}, cache=False, retries=1); s.setQuery('ASK {{ ?s ?p ?o }}')\n"
              "s.setReturnFormat(JSON)\n"
              "print(json.dumps(s.query().convert()))\n"
              "print('asyncio' in sys.modules, stats()['requests'], stats()['retries'])\n")
    _Scripted.count = 0
    lines = run(script, tmp_path)
    assert lines[0] == "False"
    assert json.loads(lines[1]) == DOC
    assert lines[2] == "True 2 1"


def test_a_thread_whose_process_imported_asyncio_drives_its_requests_on_a_running_loop(endpoint, tmp_path):
    """With asyncio imported (by the caller), every step runs with the thread's loop marked running, as before."""
    script = ("import asyncio, json, sys\nfrom kgfed.engine.kg import dropin\n"
              "from kgfed.engine.kg.sync import SPARQLWrapper, JSON\n"
              f"s = SPARQLWrapper({endpoint + '/sparql'!r}, cache=False); s.setQuery('SELECT * {{ ?s ?p ?o }}')\n"
              "s.setReturnFormat(JSON)\n"
              "print(json.dumps(s.query().convert()))\n"
              "own = dropin._runtime().local.client\n"
              "print(own.loop is not None and not own.loop.is_closed(), asyncio._get_running_loop() is None)\n")
    lines = run(script, tmp_path)
    assert json.loads(lines[0]) == DOC
    assert lines[1] == "True True"


def test_the_user_agents_versions_are_the_installed_distributions():
    from importlib.metadata import version

    from kgfed.endpoints import client

    installed = {"kgfed": version("kgfed"), "aiohttp": version("aiohttp")}
    assert (installed["kgfed"], installed["aiohttp"]) == (client.VERSION, client.AIOHTTP_VERSION)
    assert "kgfed/{kgfed} aiohttp/{aiohttp}".format(**installed) == client.DEFAULT_USER_AGENT
    assert client._version("no-such-distribution-kgfed", "fallback") == "fallback"


def test_versions_are_found_as_importlib_metadata_finds_them(tmp_path, monkeypatch):
    """Path order, normalised names, `.dist-info` and `.egg-info` (a directory or a file), METADATA or PKG-INFO."""
    from importlib.metadata import version

    from kgfed.endpoints import client

    first, second = tmp_path / "first", tmp_path / "second"
    (first / "Foo_Bar-1.2.dist-info").mkdir(parents=True)
    (first / "Foo_Bar-1.2.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: Foo_Bar\nVersion: 1.2\n\nVersion: 7\n")
    (second / "foo.bar-9.9.dist-info").mkdir(parents=True)  # later on the path: not this one
    (second / "foo.bar-9.9.dist-info" / "METADATA").write_text("Name: foo.bar\nVersion: 9.9\n")
    (second / "baz_qux.egg-info").mkdir()
    (second / "baz_qux.egg-info" / "PKG-INFO").write_text("Metadata-Version: 1.0\nName: baz-qux\nversion: 3.1\n")
    (second / "solo.egg-info").write_text("Metadata-Version: 1.0\nName: solo\nVersion: 0.4\n")
    monkeypatch.setattr(sys, "path", [str(first), str(second), *sys.path])
    names = ["foo-bar", "FOO.BAR", "baz-qux", "solo"]
    assert [client._version(name) for name in names] == [version(name) for name in names] == ["1.2", "1.2", "3.1", "0.4"]
    assert client._listed_versions("foo_bar", "solo", "absent-x") == {"foo_bar": "1.2", "solo": "0.4"}


def test_the_clients_log_records_name_the_line_that_logged(caplog):
    """`log` imports logging only when needed; with logging configured, records are as before (name, caller)."""
    import asyncio

    from kgfed.endpoints.client import HttpClient
    from kgfed.endpoints.transport import MockTransport, Response

    async def main() -> int:
        async with HttpClient(transport=MockTransport(lambda request: Response.of(200, DOC))) as http:
            return (await http.request("GET", "http://127.0.0.1:9/sparql")).status

    with caplog.at_level(logging.DEBUG, logger="kgfed.http"):
        assert asyncio.run(main()) == 200
    records = [r for r in caplog.records if r.name == "kgfed.http"]
    assert [r.getMessage() for r in records] == ["GET http://127.0.0.1:9/sparql (attempt 1)",
                                                 f"GET 127.0.0.1:9 answered 200 ({len(json.dumps(DOC))} bytes)"]
    assert {(r.funcName, Path(r.pathname).name) for r in records} == {("__call__", "handlers.py")}  # the client's chain


def test_the_redacting_filter_is_one_logging_filter_class():
    from kgfed.sparql import secrets
    from kgfed.sparql.secrets import RedactingFilter

    assert issubclass(RedactingFilter, logging.Filter) and secrets.RedactingFilter is RedactingFilter
    record = logging.LogRecord("kgfed", logging.WARNING, __file__, 1, "GET %s failed", ("http://ann:pw@host/x",), None)
    assert RedactingFilter().filter(record) and record.getMessage() == "GET http://***@host/x failed"
    with pytest.raises(AttributeError):
        secrets.NoSuchName  # noqa: B018
