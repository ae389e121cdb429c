"""A real SPARQL server on 127.0.0.1 that times out heavy `VALUES` blocks the way the public servers do.

`TimeoutServer(store, shape=..., max_terms=2)` answers every query from a pyoxigraph store (a real
engine over the shared fixtures), except a query whose `VALUES` block holds more than `max_terms` terms
(rows, for a multi-variable block): that one gets the timeout of `shape`, in the server's own form:

- `"qlever"`: HTTP 429 with QLever's error JSON (`composeError`: "Operation timed out …", no Retry-After);
- `"wdqs"`: HTTP 500 `text/plain` with Blazegraph's `SPARQL-QUERY: queryStr=…` and its
  `java.util.concurrent.TimeoutException` stack (what WDQS sends at its 60 s deadline);
- `"wdqs-stream"`: HTTP 200 whose JSON breaks off into that same text (rows were already streaming);
- `"virtuoso"`: HTTP 200 with the rows cut short, `X-SQL-State: S1TAT` and Virtuoso's message;
- `"slow"`: an answer only after `delay` seconds (a client-side timeout);
- `"down"`: HTTP 500 on every query (a server that is failing), `None`: always healthy.

It runs in its own thread and event loop, so async tests and `kgfed` subprocesses can both use it.
"""
from __future__ import annotations

import asyncio
import json
import re
import threading
from collections import Counter

from aiohttp import web

_VALUES = re.compile(r"VALUES\s+(\?\w+|\([^)]*\))\s*\{(.*?)\}\s*\n", re.DOTALL)
_TERM = re.compile(r'<[^>]*>|"(?:[^"\\]|\\.)*"(?:@[A-Za-z0-9-]+|\^\^<[^>]*>)?|[\w.-]+:[\w.-]*')
BLAZEGRAPH_STACK = (
    "java.util.concurrent.TimeoutException\n"
    "\tat java.util.concurrent.FutureTask.get(FutureTask.java:205)\n"
    "\tat com.bigdata.rdf.sail.webapp.BigdataServlet.submitApiTask(BigdataServlet.java:292)\n"
    "\tat com.bigdata.rdf.sail.webapp.QueryServlet.doSparqlQuery(QueryServlet.java:678)\n"
    "\tat com.bigdata.rdf.sail.webapp.QueryServlet.doGet(QueryServlet.java:290)\n"
)
VIRTUOSO_S1TAT = {"X-SQL-State": "S1TAT",
                  "X-SQL-Message": "RC...: Returning incomplete results, query interrupted by result timeout.  "
                                   "Activity:  1R rnd  0R seq  0P disk  0B / 0 messages"}


def values_terms(query: str) -> int:
    """The number of terms (rows, for `VALUES (?a ?b)`) in the query's largest `VALUES` block (0: none)."""
    most = 0
    for head, body in _VALUES.findall(query):
        count = body.count("(") if head.startswith("(") else len(_TERM.findall(body))
        most = max(most, count)
    return most


class TimeoutServer:
    """See the module docstring; `url` once started, `asked` counts queries by VALUES size, `timeouts` those refused."""

    def __init__(self, store, *, shape: str | None = "qlever", max_terms: int = 2, delay: float = 1.0):
        self.store = store
        self.shape = shape
        self.max_terms = max_terms
        self.delay = delay
        self.asked: Counter[int] = Counter()
        self.timeouts = 0
        self.refused: list[str] = []  # the queries answered with a timeout (or a partial answer)
        self.queries: list[str] = []  # every query received
        self.url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    def _answer(self, query: str) -> bytes:
        return self.store.query(query).serialize(format=__import__("pyoxigraph").QueryResultsFormat.JSON)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        form = dict(await request.post()) if request.method == "POST" else {}
        query = {**request.query, **form}.get("query", "")
        size = values_terms(query)
        self.asked[size] += 1
        self.queries.append(query)
        if self.shape == "down":
            return web.Response(status=500, text="upstream connect error or disconnect/reset before headers")
        heavy = self.shape is not None and size > self.max_terms
        if heavy:
            self.timeouts += 1
            self.refused.append(query)
        if heavy and self.shape == "qlever":
            doc = {"exception": "Operation timed out. Last operation: IndexScan ?e ?r ?x", "query": query,
                   "resultsize": 0, "status": "ERROR", "time": {"computeResult": 60012, "total": 60012}}
            return web.Response(status=429, text=json.dumps(doc, indent=4, sort_keys=True), content_type="application/json",
                                headers={"Access-Control-Allow-Origin": "*"})
        if heavy and self.shape == "wdqs":
            return web.Response(status=500, text=f"SPARQL-QUERY: queryStr={query}\n{BLAZEGRAPH_STACK}",
                                content_type="text/plain", charset="UTF-8")
        if heavy and self.shape == "wdqs-stream":
            body = self._answer(query)
            cut = body[: max(40, len(body) // 2)]
            return web.Response(status=200, body=cut + f"\nSPARQL-QUERY: queryStr={query}\n{BLAZEGRAPH_STACK}".encode(),
                                content_type="application/sparql-results+json", charset="utf-8")
        if heavy and self.shape == "virtuoso":
            doc = json.loads(self._answer(query))
            doc["results"]["bindings"] = doc["results"]["bindings"][:1]
            return web.Response(status=200, text=json.dumps(doc), content_type="application/sparql-results+json",
                                headers=VIRTUOSO_S1TAT)
        if heavy and self.shape == "slow":
            await asyncio.sleep(self.delay)
        return web.Response(status=200, body=self._answer(query), content_type="application/sparql-results+json")

    # -- a server in its own thread -------------------------------------------------------------------
    def __enter__(self) -> TimeoutServer:
        ready = threading.Event()

        def serve() -> None:
            loop = self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            app = web.Application()
            app.router.add_route("*", "/sparql", self.handle)
            self._runner = web.AppRunner(app, access_log=None)
            loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            loop.run_until_complete(site.start())
            port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            self.url = f"http://127.0.0.1:{port}/sparql"
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=serve, daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def __exit__(self, *exc) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)
