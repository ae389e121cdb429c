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

    for _ in range(rounds):
        t = time.perf_counter()
        for k in raw_keys:
            raw.get(k)
        add("raw diskcache get", time.perf_counter() - t)
        t = time.perf_counter()
        for k in raw_keys:
            json.loads(raw.get(k))
        add("raw diskcache get + json.loads", time.perf_counter() - t)
        t = time.perf_counter()
        for k in rel_keys:
            json.loads(raw.get(k))
        add("raw diskcache get + json.loads (relations answers)", time.perf_counter() - t)

        t = time.perf_counter()
        for e, r in pairs:
            await kg.neighbors(e, r)
        add("warm neighbors (memory)", time.perf_counter() - t)
        t = time.perf_counter()
        for e in entities:
            await kg.relations(e)
        add("warm relations (memory)", time.perf_counter() - t)
        t = time.perf_counter()
        for e, r in pairs:
            await disk_kg.neighbors(e, r)
        add("warm neighbors (disk)", time.perf_counter() - t)
        t = time.perf_counter()
        for e in entities:
            await disk_kg.relations(e)
        add("warm relations (disk)", time.perf_counter() - t)

        t = time.perf_counter()
        for q in queries:
            for _solution in store.query(q):
                pass
        add("raw Store.query neighbors", time.perf_counter() - t)
        t = time.perf_counter()
        for q in queries:
            [[(node.value if node is not None else None) for node in solution] for solution in store.query(q)]
        add("raw Store.query neighbors + read values", time.perf_counter() - t)
        t = time.perf_counter()
        for e, r in pairs:
            await nocache.neighbors(e, r)
        add("KG.neighbors, cache off", time.perf_counter() - t)
        t = time.perf_counter()
        for q in rel_queries:
            [[(node.value if node is not None else None) for node in solution] for solution in store.query(q)]
        add("raw Store.query relations + read values", time.perf_counter() - t)
        t = time.perf_counter()
        for e in entities:
            await nocache.relations(e)
        add("KG.relations, cache off", time.perf_counter() - t)

        writes.clear()
        t = time.perf_counter()
        for i, answer in enumerate(answers):
            writes.set(f"w{i}", answer, source="bench")
        add("kgfed set, on the caller", time.perf_counter() - t)
        t = time.perf_counter()
        writes.flush()
        add("kgfed set, writer commit", time.perf_counter() - t)
        raw_writes = diskcache.Cache(str(tmp / f"raw-writes-{len(times['kgfed set, on the caller'])}"))
        t = time.perf_counter()
        for i, (_, doc) in enumerate(docs):
            raw_writes.set(f"w{i}", doc)
        add("raw diskcache set (a transaction each)", time.perf_counter() - t)
        raw_writes.close()

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
    return {"data": path.name, "queries": len(pairs), "entities": len(entities), "rows_per_neighbors_answer": round(rows, 1),
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
        print(f"  {name:45s} {value:9.1f} µs")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
