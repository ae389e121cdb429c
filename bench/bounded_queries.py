"""What bounding untrusted queries costs, and what it buys (issue 28), on the CWQ subgraph.

- **start**: a query worker's start (interpreter, pyoxigraph import, the store loaded from the file) until
  it answers, against loading the same store in process;
- **per query**: the same small user query (a 1-row lookup, a COUNT over the store) in process vs in a
  worker (`bounded(...)`): the pipe and SPARQL-JSON round trip a worker adds;
- **1-hop under load**: `KG.relations` of a hub entity (kgfed's template, in process) alone, then while two
  exploding queries run in the workers (`bounded(timeout=...)`), and how long those take to be stopped.

    python -m bench.bounded_queries                    # 20 rounds, exploding queries stopped at 10 s
    python -m bench.bounded_queries --rounds 50 --timeout 5 --json bench/out/bounded_queries.json
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from pathlib import Path

from kgfed.endpoints.embedded import EmbeddedEndpoint, bounded
from kgfed.engine.kg import KG

CWQ = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "freebase" / "cwq_subgraph.nt"
NAME = "http://rdf.freebase.com/ns/type.object.name"
SMALL = f"SELECT ?s ?o WHERE {{ ?s <{NAME}> ?o }} LIMIT 1"
COUNT = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
CROSS = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f }"
PATH = f"SELECT * WHERE {{ ?a (<{NAME}>|!<{NAME}>)* ?b }}"


def median_ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 3)


async def per_query(endpoint: EmbeddedEndpoint, query: str, rounds: int) -> dict[str, float]:
    local, remote = [], []
    for _ in range(rounds):
        started = time.perf_counter()
        await endpoint.select(query)
        local.append(time.perf_counter() - started)
        with bounded(timeout=60):
            started = time.perf_counter()
            await endpoint.select(query)
            remote.append(time.perf_counter() - started)
    return {"in_process_ms": median_ms(local), "worker_ms": median_ms(remote)}


async def main(rounds: int, timeout: float) -> dict:
    out: dict = {"load_average": os.getloadavg()[0], "rounds": rounds, "timeout": timeout}
    started = time.perf_counter()
    endpoint = EmbeddedEndpoint([CWQ])
    _ = endpoint.store  # the property loads the file
    out["in_process_load_s"] = round(time.perf_counter() - started, 3)
    try:
        with bounded(timeout=60):
            started = time.perf_counter()
            await endpoint.select("ASK { ?s ?p ?o }")
            out["first_worker_answer_s"] = round(time.perf_counter() - started, 3)
        out["worker_start_s"] = [round(s, 3) for s in endpoint._workers.load_seconds]
        out["small_query"] = await per_query(endpoint, SMALL, rounds)
        out["count_query"] = await per_query(endpoint, COUNT, rounds)
    finally:
        await endpoint.aclose()

    async with KG.open(f"file:{CWQ}", dialect="freebase", cache=False) as kg:
        hub = "m.0d05w3"
        rows = (await kg.select("SELECT ?s (COUNT(*) AS ?n) WHERE { ?s ?p ?o FILTER(STRSTARTS(STR(?s), "
                                "'http://rdf.freebase.com/ns/m.')) } GROUP BY ?s ORDER BY DESC(?n) LIMIT 1")).rows
        hub = rows[0]["s"].value.rsplit("/", 1)[1] if rows else hub
        idle = []
        for _ in range(rounds):
            started = time.perf_counter()
            await kg.relations(hub)
            idle.append(time.perf_counter() - started)

        async def heavy(query: str) -> float:
            started = time.perf_counter()
            with bounded(timeout=timeout):
                try:
                    await kg.select(query)
                except Exception:  # noqa: BLE001 - stopped: that is the point
                    pass
            return time.perf_counter() - started

        with bounded(timeout=60):
            await kg.select("ASK { ?s ?p ?o }")  # workers up before the clock starts
        tasks = [asyncio.create_task(heavy(CROSS)), asyncio.create_task(heavy(PATH))]
        await asyncio.sleep(1.0)
        busy = []
        while not all(t.done() for t in tasks):
            started = time.perf_counter()
            await kg.relations(hub)
            busy.append(time.perf_counter() - started)
            await asyncio.sleep(0.1)
        out["one_hop"] = {"entity": hub, "idle_ms": median_ms(idle), "during_two_exploding_ms": median_ms(busy),
                          "during_max_ms": round(max(busy) * 1000, 3), "calls_during": len(busy),
                          "exploding_stopped_after_s": [round(t.result(), 2) for t in tasks]}
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    result = asyncio.run(main(args.rounds, args.timeout))
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")
