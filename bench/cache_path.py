"""Where users wait inside the process: the cache-hit path, cold cache writes, and the engine's overhead
on the embedded store, each side by side with the raw library it sits on, in one run.

Over a sample of the CWQ subgraph (Freebase shape; the demo KG when ../shared is absent):

- **hit**: a warm `KG.relations` / `KG.neighbors` per query, (a) from the in-process memory of the
  cache and (b) from disk (a fresh process's view: memory off, every answer read and decoded), against
  raw diskcache `get` of the same answers stored as SPARQL-JSON, with and without `json.loads`;
- **cold write**: per answer, the time `ResponseCache.set` holds the caller (encode + queue) and the
  writer thread's batched commit, against raw diskcache `set` (one committed transaction each);
- **engine overhead**: `KG.neighbors`/`KG.relations` on the embedded endpoint with the cache off,
  against the raw `pyoxigraph.Store.query` of the same SPARQL with its rows read.

Every way runs `--rounds` times, interleaved; medians are reported (µs per query or per answer).

    python -m bench.cache_path                  # CWQ subgraph, 200 queries, 5 rounds
    python -m bench.cache_path --queries 400 --rounds 7 --json bench/out/cache_path.json
"""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

import diskcache
import pyoxigraph as ox

from kgfed.cache.responses import ResponseCache, cache_key
from kgfed.endpoints.embedded import EmbeddedEndpoint
from kgfed.engine.kg import KG
from kgfed.sparql.dialects import FREEBASE, WIKIDATA

ROOT = Path(__file__).resolve().parents[1]
CWQ = ROOT.parent / "shared" / "data" / "freebase" / "cwq_subgraph.nt"
DEMO = ROOT / "engine" / "data" / "demo_freebase.nt"


def sample(store: ox.Store, dialect, n: int) -> list[tuple[str, str]]:
    """(entity, relation) pairs with at least one edge, a seeded random sample of all of them."""
    ns = "http://rdf.freebase.com/ns/"
    pairs: dict[tuple[str, str], None] = {}
    for quad in store.quads_for_pattern(None, None, None):
        s, p = quad.subject, quad.predicate
        if not isinstance(s, ox.NamedNode) or not s.value.startswith(ns + "m."):
            continue
        e, r = s.value[len(ns):], p.value[len(ns):] if p.value.startswith(ns) else None
        if r is None or dialect.relation_filter.drops(r):
            continue
        try:
            dialect.check_relation(r)
        except Exception:
            continue
        pairs.setdefault((e, r), None)
    return random.Random(0).sample(list(pairs), min(n, len(pairs)))


def median_us(samples: list[float], per: int) -> float:
    return round(statistics.median(samples) / per * 1e6, 1)


async def run(path: Path, n: int, rounds: int) -> dict:
    endpoint = EmbeddedEndpoint([path])
    store = endpoint.store
    dialect = FREEBASE if "freebase" in path.name or "cwq" in path.name else WIKIDATA
    pairs = sample(store, dialect, n)
    entities = list(dict.fromkeys(e for e, _ in pairs))
    tmp = Path(tempfile.mkdtemp(prefix="kgfed-bench-"))
    times: dict[str, list[float]] = {}

    def add(name: str, seconds: float) -> None:
        times.setdefault(name, []).append(seconds)

    # fill the kgfed cache and a raw diskcache with the same answers (SPARQL-JSON documents)
    cache = ResponseCache(tmp / "kgfed")
    kg = KG(endpoint, dialect, cache=cache)
    for e, r in pairs:
        await kg.neighbors(e, r)
    for e in entities:
        await kg.relations(e)
    cache.flush()
    raw = diskcache.Cache(str(tmp / "raw"))
    docs = []
    for e, r in pairs:
        query = dialect.neighbors([(e, r)], "out")
        doc = json.dumps(endpoint.select_sync(query).to_json(), separators=(",", ":"))
        key = cache_key(endpoint.name, query)
        raw.set(key, doc)
        docs.append((key, doc))
    raw_keys = [k for k, _ in docs]
    rel_keys = []
    for e in entities:
        for d in ("out", "in"):
            query = dialect.relations([e], d)
            key = cache_key(endpoint.name, query)
            raw.set(key, json.dumps(endpoint.select_sync(query).to_json(), separators=(",", ":")))
            rel_keys.append(key)
    nocache = KG(endpoint, dialect, cache=None)
    queries = [dialect.neighbors([(e, r)], "out") for e, r in pairs]
    rel_queries = [q for e in entities for q in (dialect.relations([e], "out"), dialect.relations([e], "in"))]
    disk = ResponseCache(tmp / "kgfed", memory=0)
    disk_kg = KG(endpoint, dialect, cache=disk)
    writes = ResponseCache(tmp / "writes")
    answers = [endpoint.select_sync(q) for q in queries]

    clock = time.perf_counter

    def read_rows(q: str) -> list:
        return [[(node.value if node is not None else None) for node in solution] for solution in store.query(q)]

    committed = 0.0
    for round_no in range(rounds):
        # interleaved per query: every way meets the same load (the machine is shared)
        acc: dict[str, float] = {}

        def tick(name: str, seconds: float) -> None:
            acc[name] = acc.get(name, 0.0) + seconds  # noqa: B023 (called within this round only)

        writes.clear()
        for i, (e, r) in enumerate(pairs):
            k, q = raw_keys[i], queries[i]
            t = clock(); raw.get(k); tick("raw diskcache get", clock() - t)
            t = clock(); json.loads(raw.get(k)); tick("raw diskcache get + json.loads", clock() - t)
            t = clock(); await kg.neighbors(e, r); tick("warm neighbors (memory)", clock() - t)
            t = clock(); await disk_kg.neighbors(e, r); tick("warm neighbors (disk)", clock() - t)
            t = clock(); read_rows(q); tick("raw Store.query neighbors + read values", clock() - t)
            t = clock(); await nocache.neighbors(e, r); tick("KG.neighbors, cache off", clock() - t)
        for j, e in enumerate(entities):
            t = clock(); [json.loads(raw.get(k)) for k in rel_keys[2 * j:2 * j + 2]]
            tick("raw diskcache get + json.loads (relations answers)", clock() - t)
            t = clock(); await kg.relations(e); tick("warm relations (memory)", clock() - t)
            t = clock(); await disk_kg.relations(e); tick("warm relations (disk)", clock() - t)
            t = clock(); [read_rows(q) for q in rel_queries[2 * j:2 * j + 2]]
            tick("raw Store.query relations + read values", clock() - t)
            t = clock(); await nocache.relations(e); tick("KG.relations, cache off", clock() - t)
        for i, answer in enumerate(answers):  # (apart from the reads: the writer thread would slow them)
            t = clock(); writes.set(f"w{i}", answer, source="bench"); tick("kgfed set, on the caller", clock() - t)
        writes.flush()  # the writer thread's commit time, whichever thread ran it
        tick("kgfed set, writer commit (off the caller)", writes.stats["commit_seconds"] - committed)
        committed = writes.stats["commit_seconds"]
        raw_writes = diskcache.Cache(str(tmp / f"raw-writes-{round_no}"))
        t = clock()
        for i, (_, doc) in enumerate(docs):
            raw_writes.set(f"w{i}", doc)
        tick("raw diskcache set (a transaction each)", clock() - t)
        raw_writes.close()
        for name, seconds in acc.items():
            add(name, seconds)

    per = {name: len(pairs) for name in times}
    for name in ("warm relations (memory)", "warm relations (disk)"):
        per[name] = 2 * len(entities)  # two queries (out, in) per entity
    for name in ("raw Store.query relations + read values",):
        per[name] = len(rel_queries)
    per["KG.relations, cache off"] = 2 * len(entities)
    per["raw diskcache get + json.loads (relations answers)"] = len(rel_keys)
    medians = {name: median_us(samples, per[name]) for name, samples in times.items()}
    rows = sum(len(a.rows) for a in answers) / len(answers)
    rel_rows = sum(len(endpoint.select_sync(q).rows) for q in rel_queries) / len(rel_queries)
    for closing in (kg, nocache, disk_kg):
        await closing.endpoint.aclose() if closing is kg else None
    for c in (cache, disk, writes):
        c.close()
    raw.close()
    m = medians
    ratios = {
        "warm neighbors (memory) / raw get+json.loads": m["warm neighbors (memory)"] / m["raw diskcache get + json.loads"],
        "warm neighbors (disk) / raw get+json.loads": m["warm neighbors (disk)"] / m["raw diskcache get + json.loads"],
        "warm relations (memory) / raw get+json.loads": m["warm relations (memory)"] / m["raw diskcache get + json.loads (relations answers)"],
        "warm relations (disk) / raw get+json.loads": m["warm relations (disk)"] / m["raw diskcache get + json.loads (relations answers)"],
        "neighbors overhead over Store.query (µs)": m["KG.neighbors, cache off"] - m["raw Store.query neighbors + read values"],
        "relations overhead over Store.query (µs)": m["KG.relations, cache off"] - m["raw Store.query relations + read values"],
        "cold write on the caller + writer (µs)": m["kgfed set, on the caller"] + m["kgfed set, writer commit (off the caller)"],
    }
    return {"ratios": {k: round(v, 2) for k, v in ratios.items()}, "data": path.name, "queries": len(pairs), "entities": len(entities), "rows_per_neighbors_answer": round(rows, 1),
            "rows_per_relations_answer": round(rel_rows, 1),
            "rounds": rounds, "median_us_per_query": medians}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--data", type=Path, default=CWQ if CWQ.exists() else DEMO)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    report = asyncio.run(run(args.data, args.queries, args.rounds))
    print(f"{report['data']}: {report['queries']} neighbors queries over {report['entities']} entities, "
          f"{report['rows_per_neighbors_answer']} rows per neighbors answer, {report['rows_per_relations_answer']} per relations "
          f"answer, median of {report['rounds']} rounds")
    for name, value in report["median_us_per_query"].items():
        print(f"  {name:52s} {value:9.1f} µs")
    for name, value in report["ratios"].items():
        print(f"  {name:52s} {value:9.2f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
