"""The SPARQLWrapper drop-in vs the genuine library on ToG's query pattern, against a local Virtuoso.

ToG's exploration loop (`tog_explore` in bench/tog_pattern.py: ToG's five verbatim strings, one
blocking `SPARQLWrapper(url).query().convert()` per entity, relation and candidate, sequentially) runs
four ways in one process, against the same server, interleaved (the order rotates), `--repeat` times:

- genuine:   `from SPARQLWrapper import SPARQLWrapper` (urllib, a new connection per query, no cache)
- cold:      `from kgfed.engine.kg.sync import SPARQLWrapper` with an empty cache directory
- warm:      the same, again, on the cache the cold run filled
- cache off: the drop-in with `cache=False` (kgfed's client, nothing stored)

"Cold" is an empty cache whose directory exists (its one-off SQLite set-up is not timed).
The drop-in is put in exactly as a user would: ToG's loop imports `SPARQLWrapper` from the
`SPARQLWrapper` package, and that one name is swapped for the run. Every way must explore the same
entities (checked). Reported: median wall seconds, milliseconds per query, requests sent, and the
client process's CPU per query (load-independent: the server's time is not in it).

    python -m bench.dropin                       # starts a Virtuoso over cwq_subgraph.nt
    python -m bench.dropin --questions 20 --repeat 5 --url http://127.0.0.1:8890/sparql
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections import Counter
from contextlib import contextmanager, nullcontext
from pathlib import Path

import SPARQLWrapper as genuine_package

from kgfed.engine.kg import sync

from .tog_pattern import load_topics, start_server, tog_explore

OUT = Path(__file__).resolve().parent / "out"


@contextmanager
def imported_as(cls):
    """ToG's `from SPARQLWrapper import SPARQLWrapper` picks up `cls` while the block runs."""
    original = genuine_package.SPARQLWrapper
    genuine_package.SPARQLWrapper = cls
    try:
        yield
    finally:
        genuine_package.SPARQLWrapper = original


def drop_in(**options) -> type:
    """The drop-in with fixed constructor options (ToG calls `SPARQLWrapper(url)`)."""

    class DropIn(sync.SPARQLWrapper):
        def __init__(self, endpoint: str, *args, **kwargs):
            super().__init__(endpoint, *args, **{**options, **kwargs})

    return DropIn


def run_once(url: str, topics: list[list[str]], width: int, depth: int, cls) -> tuple[float, float, int, list[set[str]], int]:
    """(wall s, process CPU s, queries, explored sets, requests the drop-in sent) for one exploration.

    CPU is the whole process's (the cache writer thread included, its last batch flushed inside the
    measurement); wall stops when ToG's loop returns, as a user would see it.
    """
    counts: Counter = Counter()
    sent = sync.stats()["requests"]
    with imported_as(cls):
        cpu, started = time.process_time(), time.perf_counter()
        explored = tog_explore(url, topics, width, depth, False, counts)
        wall = time.perf_counter() - started
        sync.flush_cache()
        cpu = time.process_time() - cpu
    return wall, cpu, sum(counts.values()), explored, sync.stats()["requests"] - sent


def measure(url: str, topics: list[list[str]], width: int, depth: int, repeat: int) -> dict:
    ways = ("genuine", "cold", "warm", "cache off")
    walls: dict[str, list[float]] = {w: [] for w in ways}
    cpus: dict[str, list[float]] = {w: [] for w in ways}
    sent: dict[str, list[int]] = {w: [] for w in ways}
    queries, reference = 0, None
    tog_explore(url, topics, width, depth, False)  # unmeasured passes: Virtuoso's buffers are warm for everyone,
    run_once(url, topics, width, depth, drop_in(cache=False))  # and the drop-in's client exists (once per thread)
    blocks = [["genuine"], ["cold", "warm"], ["cache off"]]
    for i in range(repeat):
        with tempfile.TemporaryDirectory() as cache_dir:
            runs = {"genuine": genuine_package.Wrapper.SPARQLWrapper, "cold": drop_in(cache_dir=cache_dir),
                    "warm": drop_in(cache_dir=cache_dir), "cache off": drop_in(cache=False)}
            order = [way for block in blocks[i % 3:] + blocks[:i % 3] for way in block]  # no way always first
            sync._runtime().cache(sync._cache_directory(cache_dir))  # created (one-off SQLite set-up) untimed, empty
            for way in order:
                cls = runs[way]
                wall, cpu, queries, explored, requests = run_once(url, topics, width, depth, cls)
                reference = reference or explored
                assert explored == reference, f"{way} explored other entities than the genuine library"
                walls[way].append(wall)
                cpus[way].append(cpu)
                sent[way].append(queries if way == "genuine" else requests)
    row = {"questions": len(topics), "width": width, "depth": depth, "queries": queries, "repeat": repeat}
    for way in ways:
        median = statistics.median(walls[way])
        row[way] = {"wall_s": round(median, 3), "ms_per_query": round(1000 * median / queries, 3),
                    "cpu_ms_per_query": round(1000 * statistics.median(cpus[way]) / queries, 3),
                    "requests": statistics.median(sent[way]), "walls": [round(w, 3) for w in walls[way]]}
    row["cold_vs_genuine"] = round(row["cold"]["wall_s"] / row["genuine"]["wall_s"], 3)
    # the ratio within each repetition (the four ways ran back to back), robust to load that drifts
    row["paired_cold_vs_genuine"] = round(statistics.median(
        c / g for c, g in zip(walls["cold"], walls["genuine"])), 3)
    row["paired_off_vs_genuine"] = round(statistics.median(
        c / g for c, g in zip(walls["cache off"], walls["genuine"])), 3)
    return row


def markdown(row: dict) -> str:
    lines = ["| way | requests sent | wall s (median) | ms / query | vs genuine | client CPU ms / query |",
             "|---|---:|---:|---:|---:|---:|"]
    for way in ("genuine", "cold", "warm", "cache off"):
        r = row[way]
        lines.append(f"| {way} | {r['requests']:g} | {r['wall_s']:.3f} | {r['ms_per_query']:.3f} | "
                     f"{r['wall_s'] / row['genuine']['wall_s']:.2f}× | {r['cpu_ms_per_query']:.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m bench.dropin", description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="an existing Virtuoso loaded with cwq_subgraph.nt (default: start one)")
    parser.add_argument("--questions", type=int, default=20, help="CWQ questions whose topics are explored (default 20)")
    parser.add_argument("--width", type=int, default=3)
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5, help="interleaved repetitions; medians are reported (default 5)")
    args = parser.parse_args(argv)
    topics = load_topics(args.questions)
    with (nullcontext(args.url) if args.url else start_server("virtuoso")) as url:
        row = measure(url, topics, args.width, args.depth, args.repeat)
    OUT.mkdir(exist_ok=True)
    (OUT / "dropin.json").write_text(json.dumps(row, indent=2))
    print(markdown(row))
    print(f"\n{row['queries']} queries per run, {args.repeat} runs each; cold / genuine = {row['cold_vs_genuine']} "
          f"(median of paired ratios {row['paired_cold_vs_genuine']}; cache off {row['paired_off_vs_genuine']})")
    verdict = "yes" if row["paired_cold_vs_genuine"] <= 1.0 else "NO (rerun at lower load, or more --repeat)"
    print(f"cold drop-in not slower than the genuine library: {verdict}")
    return row


if __name__ == "__main__":
    main()
