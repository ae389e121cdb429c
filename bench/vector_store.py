"""The embedder's vector store: what a replay pays per vector, read in bulk and one by one.

A replay (or a warm rerun) of an LLM-free method reads back every sentence vector the cold run
stored. `Embedder.warm()` (and the first `BULK_AFTER` single reads) read every vector of the model at
once (`VectorStore.load_all`: on disk one SQL pass over diskcache's table; on Redis a SCAN and MGETs);
later misses are read one lookup batch at a time (`get_many`). This stores `--vectors` random unit
vectors (the model's 384 float32) through `Embedder` itself (its encoder replaced by a random one, so
no model is loaded), then times, in fresh `Embedder`s, `--rounds` times:

- bulk: `warm()` (µs per vector read into memory);
- single: lookups of 16 texts at a time (what a method's similarity call reads), past the bulk trigger.

    python -m bench.vector_store --vectors 20000                  # a fresh directory
    python -m bench.vector_store --vectors 20000 --redis          # also a throwaway redis-server

Reported: the median µs per vector of each way, in the calling thread's CPU time (`time.thread_time`:
what the reads cost the process, not the machine's load; a Redis read's wait on the server is not in it),
and in wall time (which a loaded machine inflates). The same script runs on an older tree (its Embedder
takes a directory too), which is how docs/benchmarks.md compares before and after a change.
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fill(make, texts: list[str]) -> None:
    import numpy as np

    from kgfed.engine.toolbox import embeddings

    rng = np.random.default_rng(7)

    def random_unit(path, batch, batch_size=16):
        v = rng.standard_normal((len(batch), 384)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    real, embeddings.encode_texts = embeddings.encode_texts, random_unit
    try:
        writer = make()
        for i in range(0, len(texts), 1000):
            writer.encode_sync(texts[i:i + 1000])
        writer.close()
    finally:
        embeddings.encode_texts = real


def _time(make, texts: list[str], rounds: int) -> dict[str, float]:
    from kgfed.engine.toolbox import embeddings

    bulk, single, bulk_wall, single_wall = [], [], [], []
    for _ in range(rounds):
        reader = make()
        started, wall = time.thread_time(), time.perf_counter()
        n = reader.warm()
        bulk.append((time.thread_time() - started) / max(1, n) * 1e6)
        bulk_wall.append((time.perf_counter() - wall) / max(1, n) * 1e6)
        assert n == len(texts), (n, len(texts))
        reader.close()
        reader = make()
        reader.model_id  # noqa: B018 - resolved before timing
        reader._reads = embeddings.BULK_AFTER  # past the bulk trigger: one lookup per call
        sample = texts[: min(len(texts), 4000)]
        started, wall = time.thread_time(), time.perf_counter()
        for i in range(0, len(sample), 16):
            found = reader._lookup(sample[i:i + 16])
            assert len(found) == len(sample[i:i + 16])
        single.append((time.thread_time() - started) / len(sample) * 1e6)
        single_wall.append((time.perf_counter() - wall) / len(sample) * 1e6)
        reader.close()
    return {"bulk": statistics.median(bulk), "single": statistics.median(single),
            "bulk wall": statistics.median(bulk_wall), "single wall": statistics.median(single_wall)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--redis", action="store_true", help="also on a throwaway redis-server (needs redis-server)")
    args = parser.parse_args(argv)
    import numpy  # noqa: F401 - imported before timing

    from kgfed.engine.toolbox.embeddings import Embedder

    texts = [f"relation number {i} of some entity" for i in range(args.vectors)]
    rows = {}
    work = tempfile.mkdtemp(prefix="kgfed-vectors-")
    try:
        directory = os.path.join(work, "emb")
        _fill(lambda: Embedder(cache=directory), texts)
        rows["disk"] = _time(lambda: Embedder(cache=directory), texts, args.rounds)
        if args.redis:
            from kgfed.cache.root import open_store

            port = _free_port()
            server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                       "--appendonly", "no"], stdout=subprocess.DEVNULL)
            try:
                url = f"redis://127.0.0.1:{port}/0"
                for _ in range(100):
                    try:
                        open_store(url, "embeddings").close()
                        break
                    except Exception:  # noqa: BLE001 - not up yet
                        time.sleep(0.05)
                _fill(lambda: Embedder(open_store(url, "embeddings")), texts)
                rows["redis"] = _time(lambda: Embedder(open_store(url, "embeddings")), texts, args.rounds)
            finally:
                server.terminate()
                server.wait()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{args.vectors} vectors, medians of {args.rounds} rounds; load {os.getloadavg()[0]:.1f}")
    print("| store | bulk µs/vector (CPU) | single µs/vector (CPU) | bulk (wall) | single (wall) |\n|---|---:|---:|---:|---:|")
    for name, row in rows.items():
        print(f"| {name} | {row['bulk']:.2f} | {row['single']:.1f} | {row['bulk wall']:.2f} | {row['single wall']:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
