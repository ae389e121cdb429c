"""ToG's access pattern vs kgfed on the same server, behind a loopback proxy that adds latency per request.

ToG (IDEA-FinAI/ToG, `ToG/freebase_func.py`) reaches Freebase with one blocking SPARQLWrapper call per
entity (head relations, tail relations), per (entity, relation) (entity search) and per candidate
entity (id → name), sequentially, with no cache. kgfed does the same width-W, depth-D exploration
with batched `VALUES` queries per step (all entities, both directions, all questions at once),
concurrently, through its response cache. Both explore exactly the same entities (checked).

The relation/entity choice that ToG leaves to an LLM is the same deterministic stand-in on both
sides (ToG's relation filter, then the first W relations and the first W new mids in sorted order).
ToG's strings are sent verbatim to Virtuoso; Oxigraph needs them rewritten (dotted `ns:` names),
with `kgfed.sparql.rewrite.to_standard_sparql`. The head-entity template is filled the intended
way (relation, entity): ToG/utils.py's `% (entity, relation)` would make every incoming hop empty.

The report puts kgfed's cold time beside its critical-path bound (round trips in sequence x the
delay) and the server's own time for the same batched queries (they are logged at the proxy and
replayed straight to the server, round by round, without the delay: median of 3), with kgfed's
phases (opening the KG and its cache, each round trip, closing). `--repeat N` reports the median of N
cold runs, each on a new cache; `--no-tog` skips ToG's (long) run.

    make bench        # = python -m bench.tog_pattern
    python -m bench.tog_pattern --servers oxigraph,virtuoso --questions 20 --delay 0.05 --depth 2
    python -m bench.tog_pattern --servers oxigraph,virtuoso --delay 0.1 --repeat 5
"""
from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import threading
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import cast

from kgfed.cache.options import CacheOptions
from kgfed.endpoints.options import HttpOptions
from kgfed.engine.kg import KG
from kgfed.sparql.dialects import NS, RelationFilter
from kgfed.sparql.rewrite import to_standard_sparql

from .latency_proxy import LatencyProxy, Logged, replay

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
DATA = SHARED / "freebase" / "cwq_subgraph.nt"
GRAPH = "http://freebase.com"  # the graph ToG's README loads the dump into

# ---- ToG's access layer, verbatim (IDEA-FinAI/ToG, ToG/freebase_func.py) -------------------------
sparql_head_relations = """\nPREFIX ns: <http://rdf.freebase.com/ns/>\nSELECT ?relation\nWHERE {\n  ns:%s ?relation ?x .\n}"""
sparql_tail_relations = """\nPREFIX ns: <http://rdf.freebase.com/ns/>\nSELECT ?relation\nWHERE {\n  ?x ?relation ns:%s .\n}"""
sparql_tail_entities_extract = """PREFIX ns: <http://rdf.freebase.com/ns/>\nSELECT ?tailEntity\nWHERE {\nns:%s ns:%s ?tailEntity .\n}"""
sparql_head_entities_extract = """PREFIX ns: <http://rdf.freebase.com/ns/>\nSELECT ?tailEntity\nWHERE {\n?tailEntity ns:%s ns:%s  .\n}"""
sparql_id = """PREFIX ns: <http://rdf.freebase.com/ns/>\nSELECT DISTINCT ?tailEntity\nWHERE {\n  {\n    ?entity ns:type.object.name ?tailEntity .\n    FILTER(?entity = ns:%s)\n  }\n  UNION\n  {\n    ?entity <http://www.w3.org/2002/07/owl#sameAs> ?tailEntity .\n    FILTER(?entity = ns:%s)\n  }\n}"""


def abandon_rels(relation):  # ToG's relation filter, verbatim
    if relation == "type.object.type" or relation == "type.object.name" or relation.startswith("common.") or relation.startswith("freebase.") or "sameAs" in relation:
        return True


# the same filter for kgfed (its default TOG_RELATION_FILTER drops a few more bookkeeping namespaces)
TOG_FILTER = RelationFilter(exact=frozenset({"type.object.type", "type.object.name"}),
                            prefixes=("common.", "freebase."), contains=("sameAs",))


def choose_relations(relations: list[tuple[str, str]], width: int) -> list[tuple[str, str]]:
    """The stand-in for LLM relation pruning, identical for both: ToG's filter, then the first W in order."""
    return sorted({(r, d) for r, d in relations if not abandon_rels(r)})[:width]


def choose_entities(candidates: set[str], width: int) -> list[str]:
    """The stand-in for entity pruning: the first W mids in order (ToG keeps only m.* candidates)."""
    return sorted(c for c in candidates if c.startswith("m."))[:width]


# ---- ToG: blocking, sequential, one query per binding ------------------------------------------------
def tog_explore(url: str, topics: list[list[str]], width: int, depth: int, standard: bool,
                counts: Counter | None = None) -> list[set[str]]:
    """ToG's loop; `counts` tallies its requests by kind (relations, entities, names)."""
    from SPARQLWrapper import JSON, SPARQLWrapper

    counts = Counter() if counts is None else counts

    def execurte_sparql(sparql_query: str) -> list[dict]:  # ToG's helper (plus the rewrite for Oxigraph)
        kind = "names" if sparql_query.startswith(sparql_id[:60]) and "UNION" in sparql_query else (
            "relations" if "?relation" in sparql_query else "entities")
        counts[kind] += 1
        sparql = SPARQLWrapper(url)
        sparql.setQuery(to_standard_sparql(sparql_query) if standard else sparql_query)
        sparql.setReturnFormat(JSON)
        return sparql.query().convert()["results"]["bindings"]

    def strip(rows: list[dict], var: str) -> list[str]:
        return [row[var]["value"].replace(NS, "") for row in rows]

    explored = []
    for frontier in topics:
        seen = set(frontier)
        for _ in range(depth):
            candidates: set[str] = set()
            for e in frontier:
                rels = [(r, "out") for r in strip(execurte_sparql(sparql_head_relations % e), "relation")]
                rels += [(r, "in") for r in strip(execurte_sparql(sparql_tail_relations % e), "relation")]
                for r, d in choose_relations(rels, width):
                    query = sparql_tail_entities_extract % (e, r) if d == "out" else sparql_head_entities_extract % (r, e)
                    ids = [x for x in strip(execurte_sparql(query), "tailEntity") if x.startswith("m.")]
                    for x in ids:  # entity_score names every candidate: id2entity_name_or_type
                        execurte_sparql(sparql_id % (x, x))
                    candidates.update(ids)
            frontier = choose_entities(candidates - seen, width)
            seen.update(frontier)
        explored.append(seen)
    return explored


# ---- kgfed: one batched round per step, everything concurrent ------------------------------------------
async def kgfed_explore(url: str, topics: list[list[str]], width: int, depth: int, cache_dir: Path,
                        marks: list[tuple[str, float]] | None = None) -> tuple[list[set[str]], int]:
    """The same exploration through kgfed; returns (explored sets, round trips on the critical path).
    `marks` gets (phase, `time.perf_counter()`) as each phase ends: open, each round trip, close."""
    def mark(phase: str) -> None:
        if marks is not None:
            marks.append((phase, time.perf_counter()))

    mark("start")
    async with KG.open(url, dialect="freebase", cache=CacheOptions(root=str(cache_dir)), expand_cvt=False, relation_filter=TOG_FILTER,
                       http=HttpOptions(concurrency=64), batch_size=100) as kg:
        mark("open")
        frontiers = [list(t) for t in topics]
        seen = [set(t) for t in topics]
        rounds = 0
        for _ in range(depth):
            rels = await kg.relations_many(sorted({e for f in frontiers for e in f}))
            mark("relations")
            chosen = {e: choose_relations([(r.relation, r.direction) for r in rs], width) for e, rs in rels.items()}
            triples = sorted({(e, r, d) for f in frontiers for e in f for r, d in chosen[e]})
            edges = await kg.neighbors_many(triples)  # far ends come with their names (no extra query)
            mark("neighbors")
            rounds += 2
            for i, frontier in enumerate(frontiers):
                candidates = {edge.entity for e in frontier for r, d in chosen[e] for edge in edges[(e, r, d)] if not edge.literal}
                frontiers[i] = choose_entities(candidates - seen[i], width)
                seen[i].update(frontiers[i])
        mark("explored")
    mark("closed")
    return seen, rounds


def phase_seconds(marks: list[tuple[str, float]]) -> dict:
    """Seconds per phase from `kgfed_explore`'s marks: open, each round trip (with the loop's own work
    after it), close."""
    steps = [(name, round(t - marks[i - 1][1], 4)) for i, (name, t) in enumerate(marks) if i]
    return {"open_s": steps[0][1], "rounds_s": [sec for name, sec in steps if name in ("relations", "neighbors")],
            "after_last_round_s": dict(steps)["explored"], "close_s": dict(steps)["closed"]}


def by_round(log: list[Logged], marks: list[tuple[str, float]]) -> list[list[Logged]]:
    """The proxy's requests grouped by the round trip of `kgfed_explore` they belong to (its marks; the
    proxy runs in this process, so the clocks agree)."""
    ends = [t for name, t in marks if name in ("relations", "neighbors")]
    groups: list[list[Logged]] = [[] for _ in ends]
    for item in log:
        groups[next(i for i, end in enumerate(ends) if item.arrived <= end)].append(item)
    return [group for group in groups if group]


@contextmanager
def proxied(target: str, delay: float):
    """A LatencyProxy to `target` running on its own event loop in a thread."""
    ready, state = threading.Event(), {}

    def serve():
        loop = asyncio.new_event_loop()
        state["loop"], state["stop"] = loop, loop.create_future()

        async def main():
            async with LatencyProxy(target, delay, record=True) as proxy:
                state["proxy"] = proxy
                ready.set()
                await state["stop"]

        loop.run_until_complete(main())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    if not ready.wait(30):
        raise RuntimeError("latency proxy did not start")
    try:
        yield state["proxy"]
    finally:
        state["loop"].call_soon_threadsafe(state["stop"].set_result, None)
        thread.join(10)


def load_topics(n: int) -> list[list[str]]:
    questions = [json.loads(line) for line in (SHARED / "freebase" / "cwq_questions.jsonl").open()]
    return [sorted(q["topic_entity"]) for q in questions[:n]]


@contextmanager
def start_server(kind: str):
    from kgfed.endpoints.servers import OxigraphServer, VirtuosoServer

    if kind == "virtuoso":
        with VirtuosoServer({GRAPH: [DATA]}) as server:  # ToG queries the whole store, no graph given
            yield server.url
    else:
        with OxigraphServer([DATA]) as server:
            yield server.url


def measure(kind: str, topics: list[list[str]], delay: float, width: int, depth: int, repeat: int = 1,
            tog: bool = True) -> dict:
    """ToG's pattern, kgfed cold cache, kgfed warm cache: wall time and requests, side by side.
    `repeat` kgfed cold runs (each on a new, empty cache, then warm over it): the median cold run is reported."""
    with start_server(kind) as url, proxied(url, delay) as proxy:
        cpu: list[float] = []  # this process's CPU seconds in the last timed run (kgfed and the proxy's thread)

        def timed(run):
            before, started, cpu_before = proxy.requests, time.perf_counter(), time.process_time()
            value = run()
            cpu[:] = [time.process_time() - cpu_before]
            return value, round(time.perf_counter() - started, 3), proxy.requests - before

        kinds: Counter = Counter()
        tog_seen, tog_s, tog_n = timed(lambda: tog_explore(proxy.url, topics, width, depth, kind != "virtuoso", kinds)) \
            if tog else (None, None, None)
        runs = []
        for _ in range(repeat):
            with tempfile.TemporaryDirectory() as cache_dir:
                logged, marks = len(proxy.log), cast(list[tuple[str, float]], [])
                (cold_seen, rounds), cold_s, cold_n = timed(
                    lambda marks=marks: asyncio.run(kgfed_explore(proxy.url, topics, width, depth, Path(cache_dir), marks)))
                cold_rounds, cold_cpu = by_round(proxy.log[logged:], marks), cpu[0]
                (warm_seen, _), warm_s, warm_n = timed(
                    lambda: asyncio.run(kgfed_explore(proxy.url, topics, width, depth, Path(cache_dir))))
            if not (cold_seen == warm_seen and (tog_seen is None or tog_seen == cold_seen)):
                raise AssertionError("ToG's pattern and kgfed explored different entities")
            if len(cold_rounds) != rounds:
                raise AssertionError(f"kgfed made {rounds} round trips but the proxy saw {len(cold_rounds)}")
            runs.append((cold_s, cold_n, marks, cold_rounds, warm_s, warm_n, cold_cpu))
        cold_s, cold_n, marks, cold_rounds, warm_s, warm_n, cold_cpu = sorted(runs, key=lambda run: run[0])[(len(runs) - 1) // 2]
        # the server's own time for the same batched queries: sent straight to it, round by round, no delay
        # (acknowledged at once, as kgfed's transport does: see `latency_proxy.ack_now`)
        replays = [asyncio.run(replay(url, cold_rounds)) for _ in range(3)]
    bound = rounds * delay
    server_s = statistics.median(map(sum, replays))
    server_rounds_s = [round(statistics.median(run[i] for run in replays), 4) for i in range(len(cold_rounds))]
    in_run_s = sum(max(r.upstream for r in group) for group in cold_rounds)
    return {
        "server": kind, "questions": len(topics), "width": width, "depth": depth, "delay_ms": round(delay * 1000),
        "entities_explored": sum(map(len, cold_seen)),
        "tog": {"seconds": tog_s, "requests": tog_n, "by_kind": dict(kinds)},
        "kgfed_cold": {"seconds": cold_s, "requests": cold_n, "round_trips": rounds, **phase_seconds(marks),
                       "all_runs_s": [run[0] for run in runs], "cpu_s": round(cold_cpu, 3)},
        "kgfed_warm": {"seconds": warm_s, "requests": warm_n},
        "speedup_cold": round(tog_s / cold_s, 1) if tog_s else None,
        "critical_path_bound_s": round(bound, 3),
        # the server's own time for kgfed's batched queries on the critical path (replayed without the
        # delay, median of 3), and the same as it was during the cold run (per round the slowest answer)
        "server_s": round(server_s, 3),
        "server_in_run_s": round(in_run_s, 3),
        "server_rounds_s": server_rounds_s,  # the replayed time of each round (median of 3), in order
        "cold_over_bound": round(cold_s / bound, 2) if bound else None,
        "cold_over_bound_plus_server": round(cold_s / (bound + server_s), 2) if bound + server_s else None,
    }


def markdown(rows: list[dict]) -> str:
    head = ("| server | questions | width x depth | delay | ToG: requests | ToG: wall s | kgfed cold: requests | "
            "kgfed cold: wall s | speed-up | bound (round trips x delay) | server's own time | cold / bound | "
            "cold / (bound + server) | kgfed cold: open / close s | kgfed warm: requests | kgfed warm: wall s |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        lines.append(
            f"| {r['server']} | {r['questions']} | {r['width']}x{r['depth']} | {r['delay_ms']} ms | {r['tog']['requests'] or '–'} | "
            f"{'–' if r['tog']['seconds'] is None else round(r['tog']['seconds'], 1)} | {r['kgfed_cold']['requests']} | {r['kgfed_cold']['seconds']:.2f} | "
            f"{'–' if r['speedup_cold'] is None else str(r['speedup_cold']) + 'x'} | {r['kgfed_cold']['round_trips']} x {r['delay_ms']} ms = {r['critical_path_bound_s']} s | "
            f"{r['server_s']} s | {r['cold_over_bound']} | {r['cold_over_bound_plus_server']} | "
            f"{r['kgfed_cold']['open_s']:.3f} / {r['kgfed_cold']['close_s']:.3f} | "
            f"{r['kgfed_warm']['requests']} | {r['kgfed_warm']['seconds']:.3f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default="oxigraph,virtuoso", help="comma-separated: oxigraph, virtuoso")
    parser.add_argument("--questions", type=int, default=20, help="CWQ questions whose topics are explored (default 20)")
    parser.add_argument("--delay", type=float, default=0.05, help="seconds the proxy adds per request (default 0.05)")
    parser.add_argument("--width", type=int, default=3)
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1, help="kgfed cold runs, each on a new cache; the median is reported")
    parser.add_argument("--no-tog", action="store_true", help="skip ToG's run (kgfed's critical path only)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "out" / "tog_pattern.json"))
    args = parser.parse_args(argv)
    topics = load_topics(args.questions)
    rows = [measure(kind.strip(), topics, args.delay, args.width, args.depth, max(1, args.repeat), not args.no_tog)
            for kind in args.servers.split(",") if kind.strip()]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=1))
    print(json.dumps(rows, indent=1))
    print(markdown(rows))
    return rows


if __name__ == "__main__":
    main()
