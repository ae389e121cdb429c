"""Memory bounded per answer (issue 41 items 3 and 5), measured on a real `kgfed mcp --transport http` process tree.

A SPARQL server on 127.0.0.1 (aiohttp, answers in the exact SPARQL-JSON shape) serves the CWQ subgraph from
pyoxigraph for every query, except two shapes the issue describes:

- **dense**: any query naming `m.0dense` (kgfed's own `relations` template on that entity) gets 1.88M small rows
  (under 1 MB gzipped, far under every byte cap);
- **big**: any query naming `<http://example.org/big>` gets 200 rows of 1.2 MB literals (240 MB, under the 256 MiB
  cap of an answer).

The MCP server is driven by the SDK's own client: `relations` on `m.0dense`; then two `sparql` calls of the big
answer at once while 1-hop `relations` calls run meanwhile. Printed: each outcome's first line, the seconds, the
1-hop latencies during the big calls, and the peak RSS of the server's process tree (sampled every 0.1 s).

    python -m bench.answer_memory                       # --timeout 10
    python -m bench.answer_memory --file-store          # the two big calls on a 240 MB file store
    python -m bench.answer_memory --json bench/out/answer_memory.json
"""
from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CWQ = ROOT.parent / "shared" / "data" / "freebase" / "cwq_subgraph.nt"
FB = "http://rdf.freebase.com/ns/"
BIG = "SELECT ?v WHERE { ?s <http://example.org/big> ?v }"
DENSE_ROWS, BIG_ROWS, BIG_VALUE = 1_880_000, 200, 1_200_000


def _dense() -> bytes:
    row = '{"r":{"type":"uri","value":"' + FB + 'people.person.p%d"}}'
    body = '{"head":{"vars":["r"]},"results":{"bindings":[' + ",".join(row % (i % 97) for i in range(DENSE_ROWS)) + "]}}"
    return gzip.compress(body.encode(), 6)


def _big() -> bytes:
    value = "x" * BIG_VALUE
    rows = ",".join('{"v":{"type":"literal","value":"' + value + str(i) + '"}}' for i in range(BIG_ROWS))
    return gzip.compress(('{"head":{"vars":["v"]},"results":{"bindings":[' + rows + "]}}").encode(), 1)


class Server:
    """The SPARQL server above, in its own thread and event loop."""

    def __init__(self) -> None:
        import pyoxigraph as ox

        self.store = ox.Store()
        self.store.bulk_load(path=str(CWQ), format=ox.RdfFormat.N_TRIPLES)
        self.dense, self.big = _dense(), _big()
        self.ready = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()
        assert self.ready.wait(60)

    async def _answer(self, request):
        import pyoxigraph as ox
        from aiohttp import web

        fields = dict(await request.post()) if request.method == "POST" else dict(request.query)
        query = fields.get("query", "")
        headers = {"Content-Type": "application/sparql-results+json", "Content-Encoding": "gzip"}
        if "m.0dense" in query:
            return web.Response(body=self.dense, headers=headers)
        if "example.org/big" in query:
            return web.Response(body=self.big, headers=headers)
        body = await asyncio.to_thread(lambda: self.store.query(query).serialize(format=ox.QueryResultsFormat.JSON))
        return web.Response(body=body, content_type="application/sparql-results+json")

    def _run(self) -> None:
        from aiohttp import web

        loop = asyncio.new_event_loop()
        app = web.Application(client_max_size=1 << 24)
        app.router.add_route("*", "/sparql", self._answer)
        runner = web.AppRunner(app)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/sparql"
        self.ready.set()
        loop.run_forever()


def _first(result) -> str:
    text = result.content[0].text if result.content else ""
    return ("error: " if result.is_error else "") + (text.splitlines()[0] if text else "")[:200]


async def measure(timeout: float) -> dict:
    from mcp import Client

    from tests.test_bounded_mcp import a_hub, tree_rss_mb  # the issue-28 check's own measures

    server, hub = Server(), a_hub(CWQ)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([str(Path(sys.executable).parent / "kgfed"), "mcp", "--transport", "http", "--port", str(port),
                             "--kg", "freebase", "--endpoint", f"freebase={server.url}", "--timeout", str(timeout),
                             "--no-cache"], cwd=str(ROOT), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak, out = [0.0], {}
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        done = asyncio.Event()

        async def watch() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], tree_rss_mb(proc.pid))
                await asyncio.sleep(0.1)

        watcher = asyncio.create_task(watch())
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            await client.call_tool("relations", {"entity": hub, "direction": "out"})
            peak[0] = 0.0
            started = time.monotonic()
            dense = await client.call_tool("relations", {"entity": "m.0dense", "direction": "out"})
            out["dense"] = {"seconds": round(time.monotonic() - started, 2), "answer": _first(dense),
                            "peak_tree_mb": round(peak[0])}
            peak[0] = 0.0

            async def big() -> tuple[float, str]:
                began = time.monotonic()
                result = await client.call_tool("sparql", {"query": BIG})
                return time.monotonic() - began, _first(result)

            started = time.monotonic()
            calls = [asyncio.create_task(big()) for _ in range(2)]
            hops = []
            while not all(c.done() for c in calls):
                began = time.monotonic()
                await client.call_tool("relations", {"entity": hub, "direction": "out"})
                hops.append(round(time.monotonic() - began, 3))
                await asyncio.sleep(0.05)
            outcomes = [c.result() for c in calls]
            out["two_big_sparql"] = {"seconds": [round(s, 2) for s, _ in outcomes], "answers": [a for _, a in outcomes],
                                     "one_hop_seconds_meanwhile": hops, "one_hop_max": max(hops) if hops else None,
                                     "peak_tree_mb": round(peak[0]), "wall": round(time.monotonic() - started, 2)}
        done.set()
        await watcher
    finally:
        proc.terminate()
        proc.wait(15)
    return out


async def measure_file_store(timeout: float, folder: Path) -> dict:
    """The two big `sparql` calls on a file store of 200 literals of 1.2 MB (the store in the server for the 1-hop
    templates, and once in each of the two query workers)."""
    from mcp import Client

    from tests.test_bounded_mcp import tree_rss_mb

    data = folder / "big.nt"
    value = "x" * BIG_VALUE
    with data.open("w", encoding="utf-8") as out:
        for i in range(BIG_ROWS):
            out.write(f'<{FB}m.0big{i}> <{FB}common.topic.description> "{value}{i}" .\n'
                      f'<{FB}m.0big{i}> <{FB}type.object.name> "big {i}"@en .\n')
    query = f"SELECT ?d WHERE {{ ?s <{FB}common.topic.description> ?d }}"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([str(Path(sys.executable).parent / "kgfed"), "mcp", "--transport", "http", "--port", str(port),
                             "--kg", "freebase", "--endpoint", f"freebase=file:{data}", "--timeout", str(timeout),
                             "--no-cache"], cwd=str(ROOT), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak, done = [0.0], asyncio.Event()
    try:
        for _ in range(600):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)

        async def watch() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], tree_rss_mb(proc.pid))
                await asyncio.sleep(0.1)

        watcher = asyncio.create_task(watch())
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            await client.call_tool("relations", {"entity": "m.0big1", "direction": "out"})  # the server's own copy
            await client.call_tool("sparql", {"query": "ASK { ?s ?p ?o }"})  # the workers' copies
            await asyncio.sleep(2)
            loaded = tree_rss_mb(proc.pid)

            async def big() -> tuple[float, str]:
                began = time.monotonic()
                result = await client.call_tool("sparql", {"query": query})
                return round(time.monotonic() - began, 2), _first(result)

            calls = [asyncio.create_task(big()) for _ in range(2)]
            hops = []
            while not all(c.done() for c in calls):
                began = time.monotonic()
                await client.call_tool("relations", {"entity": "m.0big2", "direction": "out"})
                hops.append(round(time.monotonic() - began, 3))
                await asyncio.sleep(0.05)
        done.set()
        await watcher
        return {"loaded_tree_mb": round(loaded), "peak_tree_mb": round(peak[0]), "calls": [c.result() for c in calls],
                "one_hop_max": max(hops) if hops else None}
    finally:
        proc.terminate()
        proc.wait(15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--file-store", action="store_true", help="the big calls on a file store instead (240 MB)")
    args = parser.parse_args()
    if args.file_store:
        import tempfile

        with tempfile.TemporaryDirectory() as folder:
            result = asyncio.run(measure_file_store(args.timeout, Path(folder)))
    else:
        result = asyncio.run(measure(args.timeout))
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
