"""`kgfed extract`, `kgfed extract-check`, `kgfed doctor`, `kgfed rog`: a KG for a dataset without a big server.

    kgfed extract cwq_questions.jsonl --topics-only --out topics.jsonl      # freeze ids + topic entities
    kgfed extract topics.jsonl -e qlever-freebase --hops 2 --out cwq.nt      # fetch their neighbourhood
    kgfed extract-check cwq_questions.jsonl --kg cwq.nt --source qlever-freebase   # retained rate (reads gold)
    kgfed doctor http://127.0.0.1:8890/sparql --dialect freebase            # is this endpoint fit?
    kgfed rog test.parquet --out rog.nt                                      # RoG/GCR subgraphs as N-Triples

`extract` never reads gold answers or gold queries (see `kgfed.engine.harness.extract`); `extract-check` is the
separate step that does, after the extract is written.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ...sparql.dialects import DIALECT_REGISTRY
from ...sparql.errors import KgfedError

COUNT_TRIPLES = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"


def register(command, add_source_options, add_cache_options) -> None:
    p = command("extract", cmd_extract,
                "fetch the D-hop neighbourhood of a dataset's topic entities into an N-Triples file (never reads gold)")
    p.add_argument("questions", help="question file (CWQ, WebQSP, … or a --topics-only file)")
    p.add_argument("--out", "-o", required=True, help="N-Triples file to write (with OUT.json and OUT.questions.jsonl)")
    p.add_argument("--topics-only", action="store_true",
                   help="only write question ids and topic entities to OUT (JSONL), the frozen input of a later extract")
    p.add_argument("--hops", type=int, default=2, help="hops from the topic entities (default 2; a CVT is inside its hop)")
    p.add_argument("--graph", help="default-graph-uri for URL endpoints (e.g. http://freebase.com)")
    p.add_argument("--per-relation", type=int, help="far ends kept per (node, relation, direction) (default 100)")
    p.add_argument("--max-nodes", type=int, help="nodes per question before expansion stops (default 5000)")
    p.add_argument("--row-budget", type=int, help="rows per neighbours query (default 5000, under Virtuoso's 10000 cap)")
    p.add_argument("--type-relations", help="comma-separated type relations (default type.object.type,"
                   "common.topic.notable_types; Wikidata P31)")
    p.add_argument("--exclude", help="comma-separated relations (a trailing '.' = prefix) never fetched, or 'none' "
                   "(default: names/aliases/descriptions, keys, web pages, freebase./kg./dataworld./user.)")
    p.add_argument("--descriptions", action="store_true", help="also write descriptions (common.topic.description)")
    p.add_argument("--parallel", type=int, default=4, help="questions extracted at once (default 4)")
    p.add_argument("--limit", type=int, help="only the first N questions")
    p.add_argument("--fresh", action="store_true", help="discard an earlier (partial) extraction to OUT")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_source_options(p)

    p = command("extract-check", cmd_extract_check,
                "retained-question rate of an extract: gold SPARQL answerable on it (and on the source)")
    p.add_argument("questions", help="question file with gold SPARQL (e.g. ../shared/data/freebase/cwq_questions.jsonl)")
    p.add_argument("--kg", required=True, help="the extract (N-Triples written by kgfed extract)")
    p.add_argument("--source", help="the endpoint it was extracted from: retained = answered on both / on the source")
    p.add_argument("--graph", help="default-graph-uri for a URL --source")
    p.add_argument("--dialect", choices=DIALECT_REGISTRY, metavar="DIALECT", default="freebase", help="%(choices)s (default freebase)")
    p.add_argument("--source-size", action="store_true", help="also count the source's triples (slow on a full dump)")
    p.add_argument("--retained-out", help="write the retained questions' records (JSONL) here, for kgfed run")
    add_cache_options(p)

    p = command("doctor", cmd_doctor, "check an endpoint before a run: reachable, dialect, names, probes, caps")
    p.add_argument("spec", help="file:PATH, a SPARQL URL, qlever-freebase, wikidata …")
    p.add_argument("--dialect", choices=DIALECT_REGISTRY, metavar="DIALECT", help="the templates you will run (default: the profile's "
                   "or guessed)")
    p.add_argument("--graph", help="default-graph-uri for a URL")
    p.add_argument("--probe", action="append", metavar="ID", help="entity expected in the KG (repeatable; default: "
                   "m.09c7w0, m.0345_ for Freebase, Q42, Q30 for Wikidata)")
    p.add_argument("--no-size", action="store_true", help="skip the triple count")
    add_cache_options(p)

    p = command("rog", cmd_rog, "convert RoG/GCR subgraph parquet files (rmanluo/RoG-cwq, RoG-webqsp) to N-Triples")
    p.add_argument("parquet", nargs="+", help="parquet file(s) or a directory of them (e.g. RoG-cwq/data/test-*.parquet)")
    p.add_argument("--out", "-o", required=True, help="N-Triples file for file:OUT (the questions load from the parquet)")
    p.add_argument("--limit", type=int, help="only the first N questions")
    p.add_argument("--json", action="store_true", help="print the counts as JSON")


def _lookup(args: argparse.Namespace, spec: str, dialect: str | None):
    from .options import open_kg
    from ...endpoints.profiles import with_default_graph

    return open_kg(args, spec=with_default_graph(spec, getattr(args, "graph", None)), dialect=dialect)


def _list(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    return () if value.strip().lower() == "none" else tuple(v.strip() for v in value.split(",") if v.strip())


# -- extract -----------------------------------------------------------------------------------------
async def cmd_extract(args: argparse.Namespace) -> int:
    from ..harness.extract import Caps, extract, read_topics, write_topics

    if args.topics_only:
        count = write_topics(args.questions, args.out)
        print(f"kgfed: wrote {count} questions' ids and topic entities to {args.out}", file=sys.stderr)
        from ..harness.datasets import load_dataset

        bare = sum(1 for q in load_dataset(args.questions) if not any(q.topics.values()))
        if bare:  # a plain question file: the text is not frozen, so nothing can be linked later
            print(f"kgfed: warning: {bare} of them have no topic entities: extract from the question file itself "
                  f"(kgfed extract {args.questions} -e SPEC …), which links them from their text", file=sys.stderr)
        return 0
    if not args.endpoint:
        raise KgfedError("kgfed extract needs --endpoint SPEC (the KG to extract from), e.g. -e qlever-freebase")
    async with _lookup(args, args.endpoint, args.dialect) as kg:
        topics = read_topics(args.questions, kg.dialect.name)
        topics = topics[:args.limit] if args.limit else topics
        if not topics:
            raise KgfedError(f"{args.questions} holds no questions")
        topics = await _link_missing(args.questions, topics, kg)
        caps = Caps.for_dialect(kg.dialect, per_relation=args.per_relation, max_nodes=args.max_nodes,
                                row_budget=args.row_budget, type_relations=_list(args.type_relations),
                                exclude=_list(args.exclude))
        source = kg.endpoint.name
        topics_file = args.questions if Path(args.questions).is_file() else None
        sidecar = await extract(kg, topics, args.out, hops=args.hops, caps=caps, source=source,
                                parallel=args.parallel, fresh=args.fresh, descriptions=args.descriptions,
                                progress=not args.no_progress, topics_file=topics_file)
    if args.json:
        print(json.dumps(sidecar, ensure_ascii=False, indent=1))
    else:
        c, run = sidecar["counts"], sidecar["run"]
        print(f"kgfed: {c['questions']} questions → {c['triples']} triples ({c['bytes'] / 1e6:.1f} MB) in {args.out}; "
              f"{run['new_questions']} new, {run['queries']} queries ({run['cache_hits']} cached, {run['sent']} sent), "
              f"{run['seconds']} s; capped relations {c['capped_relations']} in {c['questions_capped']} questions, "
              f"node budget hit {c['questions_node_budget_hit']}, questions with a topic absent "
              f"{c['questions_missing_topics']}; per question: {args.out}.questions.jsonl", file=sys.stderr)
    run = sidecar["run"]
    if run["failed"]:
        first = next(iter(run["failures"].items()))
        print(f"kgfed: error: {run['failed']} question(s) failed and were not extracted (first: {first[0]}: {first[1]}); "
              "run again to retry them", file=sys.stderr)
    return 1 if run["failed"] else 0


async def _link_missing(path: str, topics: list, kg) -> list:
    """Questions without topic entities (a plain question file) get them linked from their text by label,
    as `kgfed ask` does without --topic (`methods.base.link_topics`); the text is all that is read."""
    import asyncio

    from ..harness.datasets import load_dataset
    from ..harness.extract import Topics
    from ..methods.base import link_topics

    missing = {t.id for t in topics if not t.entities}
    if not missing:
        return topics
    try:
        texts = {q.id: q.text for q in load_dataset(path) if q.id in missing}
    except KgfedError:  # a --topics-only file: ids and topics, no text to link from
        return topics
    limit = asyncio.Semaphore(4)

    async def link(t):
        if t.id not in texts:
            return t
        async with limit:
            found = await link_topics(texts[t.id], {kg.dialect.name: kg})
        return Topics(t.id, tuple(sorted(found.get(kg.dialect.name, {}))))

    linked = list(await asyncio.gather(*(link(t) for t in topics)))
    print(f"kgfed: linked topic entities from the text of {sum(1 for t in linked if t.id in texts and t.entities)} of "
          f"{len(texts)} questions without them", file=sys.stderr)
    return linked


# -- extract-check (reads gold: the separate step) ------------------------------------------------------
async def cmd_extract_check(args: argparse.Namespace) -> int:
    from .app import emit
    from ..harness.datasets import read_records, resolve_path

    report = await check_extract(args)
    if args.retained_out:
        path = resolve_path(args.questions)
        records = read_records(path) if path.suffix != ".parquet" else None
        if records is None:
            raise KgfedError("--retained-out needs a JSON/JSONL question file")
        from ..harness.datasets import load_dataset

        keep = set(report["retained_ids"])
        lines = [json.dumps(rec, ensure_ascii=False) for rec, q in zip(records, load_dataset(path)) if q.id in keep]
        Path(args.retained_out).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
    else:
        row = {k: v for k, v in report.items() if not isinstance(v, (list, dict))}
        emit(args, [row], [k for k in row], f"extract check: {Path(args.kg).name}")
    return 0


async def check_extract(args: argparse.Namespace) -> dict[str, Any]:
    """Gold SPARQL on the extract (and the source): retained rate, sizes, ids."""
    from .freebase import gold_questions, is_virtuoso, run_gold

    kg_path = Path(args.kg)
    if not kg_path.is_file():
        raise KgfedError(f"no extract at {kg_path}: run kgfed extract first")
    questions = gold_questions(args.questions)
    reports_path = kg_path.with_name(kg_path.name + ".questions.jsonl")
    if reports_path.exists():  # only the questions the extract was made for
        wanted = {json.loads(line)["id"] for line in reports_path.read_text(encoding="utf-8").splitlines() if line.strip()}
        questions = [q for q in questions if q.id in wanted]
    if not questions:
        raise KgfedError(f"none of {args.questions}'s questions is in {reports_path.name}: give the file the extract was made from")
    concurrency = args.concurrency or 8
    async with _lookup(args, f"file:{kg_path}", args.dialect) as kg:
        on_extract = await run_gold(kg, questions, rewrite=True, var="x", concurrency=concurrency)
        extract_triples = int((await kg.select(COUNT_TRIPLES)).rows[0]["n"].value)
    report: dict[str, Any] = {"extract": str(kg_path), "questions": len(questions),
                              "with_sparql": on_extract.with_sparql, "answered_on_extract": on_extract.gold_answer,
                              "extract_triples": extract_triples, "extract_errors": on_extract.errors}
    retained = set(on_extract.answered)
    base = on_extract.with_sparql
    if args.source:
        async with _lookup(args, args.source, args.dialect) as source:
            on_source = await run_gold(source, questions, rewrite=not await is_virtuoso(source), var="x",
                                       concurrency=concurrency)
            if args.source_size:
                result = await source.select(COUNT_TRIPLES)
                report["source_triples"] = int(result.rows[0]["n"].value)
                report["extract_share"] = round(extract_triples / max(report["source_triples"], 1), 4)
        report["answered_on_source"] = on_source.gold_answer
        retained &= set(on_source.answered)
        base = on_source.gold_answer
    report["retained"] = len(retained)
    report["retained_rate"] = round(len(retained) / base, 4) if base else 0.0
    report["retained_ids"] = sorted(retained)
    report["lost_ids"] = sorted({q.id for q in questions} - retained)
    return report


# -- doctor and rog -------------------------------------------------------------------------------------
async def cmd_doctor(args: argparse.Namespace) -> int:
    from ..harness.doctor import diagnose, render
    from .options import http_options

    report = await diagnose(args, http_options(args))
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
    else:
        print(render(report))
    return 0 if report["fit"] else 1


async def cmd_rog(args: argparse.Namespace) -> int:
    from ..harness.rog import convert

    counts = convert(args.parquet, args.out, limit=args.limit)
    if args.json:
        print(json.dumps(counts, ensure_ascii=False, indent=1))
    else:
        print(f"kgfed: {counts['questions']} questions → {counts['triples']} triples, {counts['entities']} entities "
              f"({counts['named']} named, {counts['mids']} kept as Freebase ids) in {args.out}; "
              f"skipped {counts['skipped_triples']} triples with relations that are not Freebase ids", file=sys.stderr)
    return 0
