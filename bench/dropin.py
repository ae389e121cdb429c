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

`--workload distinct` has no repeat at all, so no cache can help: N distinct 1-hop queries (ToG's
head-relation, tail-relation and tail-entity strings for the CWQ topics and their neighbours, in
standard SPARQL) against a local Oxigraph server, each through `SPARQLWrapper(url)` as ToG sends
it, the genuine library against the cold drop-in (an empty cache directory, each answer stored) and
the drop-in with its cache off, interleaved, `--repeat` rounds (the order rotates); it reports the
median wall time and the cold drop-in's ratio to the genuine library's.

`--processes` runs each way as a whole process instead (interpreter start, imports, the queries, exit with
the cache written), as a user runs a script, and splits each one's wall time into its phases (the
interpreter's start, the import line, the first query, the other queries, the exit).

`--workload httpserver` is the same against Python's `http.server` (HTTP/1.1 keep-alive, Nagle's
algorithm on, answers written as headers then body): the case where a kept-alive client waited
~40 ms per query for a delayed ACK.

    python -m bench.dropin --workload distinct --queries 300 --repeat 3      # starts an Oxigraph
    python -m bench.dropin --workload httpserver --queries 300 --repeat 3
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

from .tog_pattern import (load_topics, sparql_head_relations, sparql_tail_entities_extract, sparql_tail_relations,
                          start_server, tog_explore)

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


# ---- no repeats: N distinct 1-hop queries ---------------------------------------------------------------
def distinct_queries(url: str, n: int) -> list[str]:
    """N distinct 1-hop queries in ToG's strings (standard SPARQL): relations both ways, then tail entities."""
    import SPARQLWrapper as genuine

    from kgfed.sparql.dialects import NS
    from kgfed.sparql.rewrite import to_standard_sparql

    def rows(query: str, var: str) -> list[str]:
        sparql = genuine.SPARQLWrapper(url)
        sparql.setQuery(query)
        sparql.setReturnFormat(genuine.JSON)
        return [b[var]["value"].removeprefix(NS) for b in sparql.query().convert()["results"]["bindings"]]

    queries: list[str] = []
    seen: set[str] = set()
    frontier = [e for topic in load_topics(200) for e in topic]
    while frontier and len(queries) < n:
        entity = frontier.pop(0)
        if entity in seen:
            continue
        seen.add(entity)
        out = to_standard_sparql(sparql_head_relations % entity)
        queries += [out, to_standard_sparql(sparql_tail_relations % entity)]
        for relation in sorted(set(rows(out, "relation")))[:2]:
            query = to_standard_sparql(sparql_tail_entities_extract % (entity, relation))
            queries.append(query)
            frontier += [x for x in rows(query, "tailEntity") if x.startswith("m.")][:2]
    queries = list(dict.fromkeys(queries))[:n]
    if len(queries) < n:
        raise SystemExit(f"only {len(queries)} distinct queries found; ask for fewer with --queries")
    return queries


@contextmanager
def default_cache_dir(path: str):
    """$KGFED_CACHE_DIR set to `path` while the block runs."""
    import os

    before = os.environ.get("KGFED_CACHE_DIR")
    os.environ["KGFED_CACHE_DIR"] = path
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("KGFED_CACHE_DIR", None)
        else:
            os.environ["KGFED_CACHE_DIR"] = before


def run_queries(url: str, queries: list[str], cls) -> tuple[float, float, list]:
    """(wall s, process CPU s, answers) for the queries sent one by one, as ToG sends them.

    Wall stops when the last answer is converted, as a caller sees it; CPU includes the drop-in's
    cache writer up to the end of its last batch (flushed after the wall clock stopped).
    """
    from SPARQLWrapper import JSON

    answers = []
    cpu, started = time.process_time(), time.perf_counter()
    for query in queries:
        sparql = cls(url)
        sparql.setQuery(query)
        sparql.setReturnFormat(JSON)
        answers.append(sparql.query().convert())
    wall = time.perf_counter() - started
    sync.flush_cache()
    return wall, time.process_time() - cpu, answers


def measure_distinct(url: str, queries: list[str], repeat: int) -> dict:
    """Genuine vs cold drop-in vs cache off on queries that never repeat, interleaved, `repeat` rounds."""
    ways = ("genuine", "cold", "cache off")
    walls: dict[str, list[float]] = {w: [] for w in ways}
    cpus: dict[str, list[float]] = {w: [] for w in ways}
    reference = None
    run_queries(url, queries[:20], genuine_package.Wrapper.SPARQLWrapper)  # unmeasured: the server is warm,
    run_queries(url, queries[:20], drop_in(cache=False))  # and this thread's client exists, for everyone
    for i in range(repeat):
        with tempfile.TemporaryDirectory() as cache_dir, default_cache_dir(cache_dir):
            # cold: `SPARQLWrapper(url)` as ToG writes it, its cache where $KGFED_CACHE_DIR says
            runs = {"genuine": genuine_package.Wrapper.SPARQLWrapper, "cold": drop_in(),
                    "cache off": drop_in(cache=False)}
            sync._runtime().cache(sync._cache_directory(None))  # opened untimed (its file is made by the writer)
            sent = sync.stats()["requests"]
            for way in ways[i % 3:] + ways[:i % 3]:
                wall, cpu, answers = run_queries(url, queries, runs[way])
                reference = reference or answers
                assert answers == reference, f"{way} answered differently from the genuine library"
                walls[way].append(wall)
                cpus[way].append(cpu)
            assert sync.stats()["requests"] - sent == 2 * len(queries), "the cold drop-in must send every query"
    row: dict = {"workload": "distinct", "queries": len(queries), "repeat": repeat}
    for way in ways:
        median = statistics.median(walls[way])
        row[way] = {"wall_s": round(median, 3), "ms_per_query": round(1000 * median / len(queries), 3),
                    "cpu_ms_per_query": round(1000 * statistics.median(cpus[way]) / len(queries), 3),
                    "walls": [round(w, 3) for w in walls[way]]}
    row["cold_vs_genuine"] = round(row["cold"]["wall_s"] / row["genuine"]["wall_s"], 3)
    row["paired_cold_vs_genuine"] = round(statistics.median(c / g for c, g in zip(walls["cold"], walls["genuine"])), 3)
    row["paired_off_vs_genuine"] = round(statistics.median(
        c / g for c, g in zip(walls["cache off"], walls["genuine"])), 3)
    return row


PROCESS_SCRIPT = """
import json, sys, time
started = time.time()
if sys.argv[1] == "genuine":
    from SPARQLWrapper import SPARQLWrapper, JSON
else:
    from kgfed.engine.kg.sync import SPARQLWrapper, JSON
imported = time.time()
url, queries = json.load(open(sys.argv[2]))
for i, query in enumerate(queries):
    sparql = SPARQLWrapper(url)
    sparql.setQuery(query)
    sparql.setReturnFormat(JSON)
    sparql.query().convert()
    if i == 0:
        first = time.time()
print(json.dumps([started, imported, first, time.time()]))
"""
PHASES = ("start", "import", "first query", "other queries", "exit")


def measure_processes(url: str, queries: list[str], repeat: int) -> dict:
    """Whole processes (start, import, the queries, exit with the cache written), as a user runs a script."""
    import os
    import subprocess
    import sys

    ways = ("genuine", "cold", "cache off")
    walls: dict[str, list[float]] = {w: [] for w in ways}
    phases: dict[str, list[list[float]]] = {w: [] for w in ways}  # per run: ms in each of PHASES
    with tempfile.TemporaryDirectory() as work:
        data = Path(work) / "queries.json"
        data.write_text(json.dumps([url, queries]))
        for i in range(repeat + 1):  # the first round is unmeasured (the OS's file cache, the bytecode)
            for way in ways[i % 3:] + ways[:i % 3]:
                env = {**os.environ, "KGFED_CACHE_DIR": tempfile.mkdtemp(dir=work),  # bytecode cached (in a
                       "PYTHONPYCACHEPREFIX": str(Path(work) / "pycache")}  # private place), as in a normal install
                env.pop("PYTHONDONTWRITEBYTECODE", None)
                if way == "cache off":
                    env["KGFED_NO_CACHE"] = "1"
                started, clock = time.perf_counter(), time.time()
                done = subprocess.run([sys.executable, "-c", PROCESS_SCRIPT, way.split()[0], str(data)], env=env, check=True,
                                      capture_output=True, text=True)
                wall, ended = time.perf_counter() - started, time.time()
                if i:
                    walls[way].append(wall)
                    marks = [clock, *json.loads(done.stdout.splitlines()[-1]), ended]  # the child's time.time() marks
                    phases[way].append([1000 * (b - a) for a, b in zip(marks, marks[1:])])
    row: dict = {"workload": "processes", "queries": len(queries), "repeat": repeat}
    for way in ways:
        row[way] = {"wall_s": round(statistics.median(walls[way]), 3), "walls": [round(w, 3) for w in walls[way]],
                    "phases_ms": {name: round(statistics.median(run[k] for run in phases[way]), 1)
                                  for k, name in enumerate(PHASES)}}
    row["cold_vs_genuine"] = round(row["cold"]["wall_s"] / row["genuine"]["wall_s"], 3)
    row["paired_cold_vs_genuine"] = round(statistics.median(c / g for c, g in zip(walls["cold"], walls["genuine"])), 3)
    return row


def markdown_distinct(row: dict) -> str:
    lines = ["| way | wall s (median) | ms / query | vs genuine | client CPU ms / query | walls |",
             "|---|---:|---:|---:|---:|---|"]
    for way in ("genuine", "cold", "cache off"):
        r = row[way]
        lines.append(f"| {way} | {r['wall_s']:.3f} | {r['ms_per_query']:.3f} | {r['wall_s'] / row['genuine']['wall_s']:.2f}× | "
                     f"{r['cpu_ms_per_query']:.3f} | {', '.join(f'{w:.3f}' for w in r['walls'])} |")
    return "\n".join(lines)


def _serve_fixed(answers: dict[str, bytes], ready) -> None:
    """Python's http.server (HTTP/1.1 keep-alive, Nagle on) answering each query with its stored body."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from urllib.parse import parse_qs, urlsplit

    class Fixed(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            return None

        def do_GET(self) -> None:
            body = answers[parse_qs(urlsplit(self.path).query)["query"][0]]
            self.send_response(200)
            self.send_header("Content-Type", "application/sparql-results+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()  # the headers in one write, the body in another: Nagle holds the body
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Fixed)
    server.daemon_threads = True
    ready.send(server.server_address[1])
    server.serve_forever()


@contextmanager
def nagle_http_server(url: str, queries: list[str]):
    """A child process serving `url`'s answers to `queries` from Python's http.server (no GIL shared with us)."""
    import multiprocessing

    import SPARQLWrapper as genuine

    answers = {}
    for query in queries:
        sparql = genuine.SPARQLWrapper(url)
        sparql.setQuery(query)
        sparql.setReturnFormat(genuine.JSON)
        answers[query] = sparql.query().response.read()
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_serve_fixed, args=(answers, send), daemon=True)
    child.start()
    try:
        if not receive.poll(30):
            raise RuntimeError("the http.server child did not start")
        yield f"http://127.0.0.1:{receive.recv()}/sparql"
    finally:
        child.terminate()
        child.join(10)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m bench.dropin", description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=["tog", "distinct", "httpserver"], default="tog",
                        help="tog: ToG's loop on Virtuoso (default); distinct: N queries that never repeat, on Oxigraph; "
                             "httpserver: the same through Python's http.server")
    parser.add_argument("--url", help="an existing server loaded with cwq_subgraph.nt (default: start one)")
    parser.add_argument("--questions", type=int, default=20, help="CWQ questions whose topics are explored (default 20)")
    parser.add_argument("--width", type=int, default=3)
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--queries", type=int, default=300, help="distinct queries (--workload distinct/httpserver)")
    parser.add_argument("--processes", action="store_true",
                        help="--workload distinct/httpserver: each way as a whole process (import and exit included)")
    parser.add_argument("--repeat", type=int, default=None,
                        help="interleaved repetitions; medians are reported (default 5 for tog, 3 otherwise)")
    args = parser.parse_args(argv)
    OUT.mkdir(exist_ok=True)
    if args.workload != "tog":
        repeat = args.repeat or 3
        with nullcontext(args.url) if args.url else start_server("oxigraph") as url:
            queries = distinct_queries(url, args.queries)
            with nagle_http_server(url, queries) if args.workload == "httpserver" else nullcontext(url) as target:
                if args.processes:
                    row = measure_processes(target, queries, repeat)
                else:
                    row = measure_distinct(target, queries, repeat)
        row["workload"] = args.workload + (" (whole processes)" if args.processes else "")
        if args.processes:
            print("| way | wall s (median) | walls |\n|---|---:|---|")
            for way in ("genuine", "cold", "cache off"):
                print(f"| {way} | {row[way]['wall_s']:.3f} | {', '.join(f'{w:.3f}' for w in row[way]['walls'])} |")
            print(f"\ncold / genuine = {row['cold_vs_genuine']} (median of paired ratios {row['paired_cold_vs_genuine']})")
            print("\nwhere the time goes (ms, medians; start: the interpreter until the script's first line; exit: after "
                  "the last answer until the process ended)\n")
            print("| way | " + " | ".join(PHASES) + " |\n|---|" + "---:|" * len(PHASES))
            for way in ("genuine", "cold", "cache off"):
                print(f"| {way} | " + " | ".join(f"{row[way]['phases_ms'][name]:.1f}" for name in PHASES) + " |")
            (OUT / f"dropin_{args.workload}_processes.json").write_text(json.dumps(row, indent=2))
            return row
        (OUT / f"dropin_{args.workload}.json").write_text(json.dumps(row, indent=2))
        print(markdown_distinct(row))
        print(f"\n{row['queries']} distinct queries per run, {repeat} interleaved rounds; cold / genuine = "
              f"{row['cold_vs_genuine']} (median of paired ratios {row['paired_cold_vs_genuine']}; cache off "
              f"{row['paired_off_vs_genuine']})")
        verdict = "yes" if row["cold_vs_genuine"] <= 1.0 else "NO (rerun at lower load, or more --repeat)"
        print(f"cold drop-in not slower than the genuine library: {verdict}")
        return row
    topics = load_topics(args.questions)
    with (nullcontext(args.url) if args.url else start_server("virtuoso")) as url:
        row = measure(url, topics, args.width, args.depth, args.repeat or 5)
    (OUT / "dropin.json").write_text(json.dumps(row, indent=2))
    print(markdown(row))
    print(f"\n{row['queries']} queries per run, {args.repeat or 5} runs each; cold / genuine = {row['cold_vs_genuine']} "
          f"(median of paired ratios {row['paired_cold_vs_genuine']}; cache off {row['paired_off_vs_genuine']})")
    verdict = "yes" if row["paired_cold_vs_genuine"] <= 1.0 else "NO (rerun at lower load, or more --repeat)"
    print(f"cold drop-in not slower than the genuine library: {verdict}")
    return row


if __name__ == "__main__":
    main()
