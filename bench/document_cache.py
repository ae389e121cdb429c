"""The drop-in's document cache on the caller's path: CPU per query, load-independent.

ToG sends a query per entity, relation and candidate through `SPARQLWrapper(url)`, so what the
drop-in's cache costs the calling thread matters: a new wrapper (resolving where its cache lives),
a cold query's miss and queue put, and a warm query's hit (a primary-key read and the `marshal`
decoding of a 20-row answer). Measured in the calling thread's CPU time (`time.thread_time`), medians
of 5 rounds of 3,000 queries; `sync._RawCache` is the cache under its old name, so the same script
runs on a tree from before the cache moved to `kgfed.cache.documents` (how docs/benchmarks.md
compares the two).

    python -m bench.document_cache
"""
from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from kgfed.engine.kg import sync


def main() -> None:
    doc = b'{"head":{"vars":["x"]},"results":{"bindings":[' + b",".join(b'{"x":{"type":"uri","value":"http://rdf.freebase.com/ns/m.0%d"}}' % i for i in range(20)) + b']}}'
    entry = (200, [("Content-Type", "application/sparql-results+json")], doc)
    N = 3000
    keys = [sync.cache_key("GET", f"http://h/sparql?query={i}", None, {"Accept": "application/sparql-results+json"}) for i in range(N)]
    cold, warm, wrap = [], [], []
    for _ in range(5):
        with tempfile.TemporaryDirectory() as directory:
            c = sync._RawCache(Path(directory))
            c.flush()
            started = time.thread_time()
            for k in keys:
                c.get(k, "SELECT")
                c.put(k, entry, "SELECT")
            cold.append((time.thread_time() - started) / N * 1e6)
            c.flush()
            c.close()
            c = sync._RawCache(Path(directory))  # a new process's view: the file exists, hits are read from it
            started = time.thread_time()
            for k in keys:
                c.get(k, "SELECT")
            warm.append((time.thread_time() - started) / N * 1e6)
            c.close()
            started = time.thread_time()
            for _ in range(N):
                sync.SPARQLWrapper("http://h/sparql", cache_dir=directory)
            wrap.append((time.thread_time() - started) / N * 1e6)
    cold_us, warm_us, wrap_us = (statistics.median(x) for x in (cold, warm, wrap))
    print(f"caller CPU µs: cold miss+put {cold_us:.2f}, warm hit {warm_us:.2f}, new wrapper {wrap_us:.2f}")


if __name__ == "__main__":
    main()
