"""`kgfed gold`, `kgfed serve-virtuoso`, `kgfed serve-oxigraph`: Freebase the way ToG and PoG run it.

    kgfed gold ../shared/data/freebase/cwq_questions.jsonl -e file:cwq_subgraph.nt -e http://127.0.0.1:8890/sparql
    kgfed serve-virtuoso cwq_subgraph.nt --port 8890 --graph http://freebase.com
    kgfed serve-oxigraph cwq_subgraph.nt --port 7878

`gold` runs every question's gold SPARQL (CWQ/WebQSP/GrailQA, Virtuoso dialect) on each endpoint and
counts how many return a gold answer. `--rewrite auto` sends the queries as they are to Virtuoso and
rewritten to standard SPARQL (`kgfed.sparql.rewrite`) to every other engine.
"""
from __future__ import annotations

import argparse
import asyncio
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...sparql.dialects import DIALECT_REGISTRY
from ...sparql.errors import KgfedError

SPARQL_FIELDS = ("sparql", "sparql_query")  # CWQ/WebQSP (loaded into meta["sparql"]), GrailQA
DEFAULT_GRAPH = "http://freebase.com"        # the graph ToG's README loads the dump into


def register(command, add_source_options, add_cache_options) -> None:
    p = command("gold", cmd_gold, "run the gold SPARQL of a question file on endpoints; count gold answers per engine")
    p.add_argument("questions", help="question file with gold SPARQL (e.g. ../shared/data/freebase/cwq_questions.jsonl)")
    p.add_argument("--endpoint", "-e", action="append", required=True, metavar="SPEC",
                   help="endpoint, repeatable: file:PATH, a SPARQL URL (Virtuoso, Oxigraph, QLever) or qlever-freebase")
    p.add_argument("--dialect", choices=DIALECT_REGISTRY, metavar="DIALECT", default="freebase", help="%(choices)s (default freebase)")
    p.add_argument("--graph", help="default-graph-uri for URL endpoints (e.g. http://freebase.com)")
    p.add_argument("--rewrite", choices=["auto", "yes", "no"], default="auto",
                   help="rewrite Virtuoso-dialect SPARQL to standard SPARQL: auto = for every engine except Virtuoso")
    p.add_argument("--limit", type=int, help="only the first N questions")
    p.add_argument("--var", default="x", help="answer variable (default x; the first variable when absent)")
    add_cache_options(p)

    p = command("serve-virtuoso", cmd_serve_virtuoso,
                "serve N-Triples files from a throwaway Virtuoso on 127.0.0.1 until Ctrl-C (prints the endpoint URL)")
    p.add_argument("files", nargs="+", metavar="DATA.nt")
    p.add_argument("--port", type=int, help="HTTP port of the SPARQL endpoint (default: a free port)")
    p.add_argument("--isql-port", type=int, help="SQL port for isql-vt (default: a free port)")
    p.add_argument("--graph", default=DEFAULT_GRAPH, help=f"graph IRI the files are loaded into (default {DEFAULT_GRAPH})")
    p.add_argument("--workdir", help="keep the database here and reuse it next time (default: a temp dir, removed)")
    p.add_argument("--max-rows", type=int, default=10_000, help="ResultSetMaxRows (default 10000)")
    p.add_argument("--query-timeout", type=int, default=0, help="MaxQueryExecutionTime in s, the anytime limit (0 = none)")
    p.add_argument("--json", action="store_true", help="print the endpoint as one JSON line")

    p = command("serve-oxigraph", cmd_serve_oxigraph,
                "serve RDF files from a read-only Oxigraph server on 127.0.0.1 until Ctrl-C (prints the endpoint URL)")
    p.add_argument("files", nargs="+", metavar="DATA.nt")
    p.add_argument("--port", type=int, help="HTTP port (default: a free port)")
    p.add_argument("--workdir", help="keep the store here and reuse it next time (default: a temp dir, removed)")
    p.add_argument("--query-timeout", type=int, help="per-query timeout in seconds")
    p.add_argument("--json", action="store_true", help="print the endpoint as one JSON line")


# -- gold ------------------------------------------------------------------------------------------
@dataclass
class EngineReport:
    """How one endpoint did on the gold queries."""

    endpoint: str
    rewrite: bool
    questions: int = 0
    with_sparql: int = 0
    gold_answer: int = 0          # returned a gold answer: by id (answer_mids), else by name
    any_answer: int = 0           # returned anything
    errors: int = 0
    partial: int = 0
    seconds: float = 0.0
    answered: list[str] = field(default_factory=list)           # ids of questions with a gold answer
    failures: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def gold_questions(path: str, limit: int | None = None) -> list:
    """Questions of `path` (any format kgfed reads); a clear error when none carries gold SPARQL."""
    from ..harness.datasets import load_dataset

    questions = load_dataset(path)[:limit] if limit else load_dataset(path)
    if not any(_sparql(q) for q in questions):
        raise KgfedError(
            f"{path} has no gold SPARQL: none of its {len(questions)} questions has a 'sparql' field "
            "(CWQ/WebQSP) or 'sparql_query' (GrailQA); give e.g. ../shared/data/freebase/cwq_questions.jsonl"
        )
    return questions


def _sparql(question) -> str | None:
    return next((question.meta[k] for k in SPARQL_FIELDS if question.meta.get(k)), None)


async def is_virtuoso(kg) -> bool:
    """True when the endpoint is a Virtuoso server (its HTTP `Server` header says so)."""
    from ...endpoints.http import ACCEPT, HttpEndpoint

    inner = kg.endpoint.inner
    if not isinstance(inner, HttpEndpoint):
        return False
    response = await inner.client.request("GET", inner.url, params={"query": "ASK {}"}, headers={"Accept": ACCEPT})
    return "virtuoso" in response.headers.get("Server", "").lower()


async def run_gold(kg, questions: list, *, rewrite: bool, var: str, concurrency: int, progress=None) -> EngineReport:
    """Run each question's gold SPARQL on `kg` (at most `concurrency` at once) and score it."""
    from ...sparql.rewrite import to_standard_sparql

    report = EngineReport(kg.endpoint.name, rewrite, questions=len(questions))
    limit = asyncio.Semaphore(concurrency)
    done = 0
    started = time.perf_counter()

    async def one(question) -> None:
        nonlocal done
        query = _sparql(question)
        try:
            if query is None:
                return
            report.with_sparql += 1
            gold = set(question.answer_ids.get("freebase", [])) | set(question.answer_ids.get(kg.name, []))
            async with limit:
                result = await kg.select(to_standard_sparql(query) if rewrite else query)
            name = var if var in result.vars else (result.vars[0] if result.vars else var)
            returned = {kg._short(row[name]) for row in result.rows if name in row}
            report.partial += result.partial
            report.any_answer += bool(returned)
            if returned & gold or (not gold and await _named_as_gold(kg, returned, question)):
                report.gold_answer += 1
                report.answered.append(question.id)
            else:
                report.failures.append({"id": question.id, "returned": sorted(returned)[:5]})
        except KgfedError as exc:
            report.errors += 1
            report.failures.append({"id": question.id, "error": str(exc).splitlines()[0]})
        finally:
            done += 1
            if progress:
                progress(f"gold {kg.endpoint.name}", done, len(questions))

    await asyncio.gather(*(one(q) for q in questions))
    report.answered.sort()
    report.seconds = round(time.perf_counter() - started, 2)
    return report


async def _named_as_gold(kg, returned: set[str], question) -> bool:
    """For files with answer names only (ToG's cwq.json): is a returned entity named like a gold answer?"""
    wanted = {name.casefold() for name in [*question.answers, *question.aliases] if name}
    if not wanted or not returned:
        return False
    if {value.casefold() for value in returned} & wanted:  # literal answers
        return True
    ids = [i for i in sorted(returned) if _is_entity(kg, i)][:100]
    labels = await kg.labels(ids) if ids else {}
    return any((label.label or "").casefold() in wanted for label in labels.values())


def _is_entity(kg, short_id: str) -> bool:
    try:
        kg.dialect.check_entity(short_id)
        return True
    except KgfedError:
        return False


async def cmd_gold(args: argparse.Namespace) -> int:
    from ...endpoints.profiles import with_default_graph
    from .app import emit
    from .options import open_kg
    from .federation import ProgressBar

    questions = gold_questions(args.questions, args.limit)
    reports = []
    with ProgressBar() as progress:
        for spec in args.endpoint:
            async with open_kg(args, spec=with_default_graph(spec, args.graph), dialect=args.dialect) as kg:
                rewrite = {"yes": True, "no": False}.get(args.rewrite)
                if rewrite is None:
                    rewrite = not await is_virtuoso(kg)
                reports.append(await run_gold(kg, questions, rewrite=rewrite, var=args.var,
                                              concurrency=args.concurrency or 8, progress=progress))
    if args.json:
        emit(args, [r.to_json() for r in reports], [])
    else:
        rows = [{**r.to_json(), "gold answer": f"{r.gold_answer}/{r.with_sparql}"} for r in reports]
        emit(args, rows, ["endpoint", "rewrite", "gold answer", "any_answer", "errors", "partial", "seconds"],
             f"gold SPARQL of {Path(args.questions).name}")
    return 0


# -- servers ---------------------------------------------------------------------------------------
def _foreground(serve, *posargs, **kwargs) -> int:
    """Run a blocking serve_* function with Ctrl-C raising KeyboardInterrupt (asyncio.run's own SIGINT
    handler would only cancel the task, which a blocking call never notices)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return serve(*posargs, **kwargs)
    finally:
        signal.signal(signal.SIGINT, previous)


async def cmd_serve_virtuoso(args: argparse.Namespace) -> int:
    from ...endpoints.servers import serve_virtuoso

    return _foreground(serve_virtuoso, args.files, args.graph, port=args.isql_port, http_port=args.port,
                       workdir=args.workdir, result_set_max_rows=args.max_rows,
                       max_query_execution_time=args.query_timeout, as_json=args.json)


async def cmd_serve_oxigraph(args: argparse.Namespace) -> int:
    from ...endpoints.servers import serve_oxigraph

    return _foreground(serve_oxigraph, args.files, port=args.port, workdir=args.workdir, timeout_s=args.query_timeout,
                       as_json=args.json)
