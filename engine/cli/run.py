"""`kgfed run`: a KBQA method over a whole question file, and `kgfed eval` (the issue's name for `evaluate`).

    kgfed run cwq-subgraph --method tog --kg freebase --endpoint freebase=file:cwq_subgraph.nt \\
        --llm none --out preds.jsonl --limit 100 --in-flight 8
    kgfed run cwq-subgraph --llm openai:http://127.0.0.1:8000 --llm-concurrency 16 --out preds.jsonl
    kgfed eval preds.jsonl --dataset cwq --gold ../shared/data/freebase/cwq_questions.jsonl

See docs/harness.md: output formats (tog, tog-json, tog2), the `.kgfed.json` sidecar, resuming, the cost
sidecar, --workers, --ray.
"""
from __future__ import annotations

import argparse
import json
import sys


def register(command, add_source_options, add_cache_options) -> None:
    from .method_options import add_method_options
    from .federation import add_kg_options
    from ..harness.evaluate import FORMATS

    p = command("run", cmd_run, "run a KBQA method over a question file: ToG-compatible predictions, costs, resumable")
    p.add_argument("dataset", help="question file, or a shared name: cwq, webqsp, qald, cwq-subgraph, federation …")
    p.add_argument("--dataset-name", "-d", help="dataset rule for loading and scoring (default: detected)")
    p.add_argument("--out", "-o", required=True, help="predictions file (re-running skips the ids already in it)")
    p.add_argument("--format", "-f", choices=FORMATS, default="tog",
                   help="tog: JSONL as ToG's main_freebase.py (default); tog-json: a JSON list; tog2: ToG-2's `answer` records")
    p.add_argument("--costs", help="per-question cost sidecar (default: OUT without suffix + .costs.jsonl)")
    p.add_argument("--limit", type=int, help="only the first N questions (after --sample)")
    p.add_argument("--sample", type=int, help="a seeded random sample of N questions (kept in dataset order)")
    p.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    p.add_argument("--workers", type=int, default=1, help="processes sharing the cache directory (default 1)")
    p.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="run --workers Ray actors (local cluster, or ADDRESS of a running one; share --cache-dir)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_method_options(p)
    add_kg_options(p)
    add_cache_options(p)
    # `--concurrency` keeps its meaning of every command (requests per host); questions in flight is its own option.
    p.add_argument("--in-flight", type=int, default=None,
                   help="questions answered at once per worker (default 8; with --llm-concurrency N, at least 2N "
                        "so the LLM is kept busy)")

    from .evaluate import add_eval_options

    p = command("eval", cmd_eval, "score predictions (ToG's Hits@1 rule, strict, EM and F1); alias of evaluate")
    add_eval_options(p)


async def cmd_eval(args: argparse.Namespace) -> int:
    from .evaluate import cmd_evaluate

    return await cmd_evaluate(args)


async def cmd_run(args: argparse.Namespace) -> int:
    from .federation import kg_names
    from .options import run_spec
    from ..harness.datasets import load_dataset
    from ..harness.runner import run, select_questions

    from .options import check_writable
    from ..harness.runner import costs_path_for

    kg_names(args)  # validate --kg/--endpoint before loading anything
    check_writable(args.out, "--out")
    check_writable(args.costs or costs_path_for(args.out), "--costs")
    if args.ray is not None and args.workers == 1:
        args.workers = 2
    questions = select_questions(load_dataset(args.dataset, args.dataset_name), limit=args.limit,
                                 sample=args.sample, seed=args.seed)
    if args.llm.strip().lower() == "gold":  # the gold stand-in reads the gold of this very question file
        from ..harness.datasets import resolve_path

        args.llm = f"gold:{resolve_path(args.dataset).resolve()}"
    summary = await run(run_spec(args), questions, args.out, fmt=args.format, concurrency=args.in_flight,
                        workers=args.workers, use_ray=args.ray is not None, ray_address=args.ray or None,
                        costs=args.costs, progress=not args.no_progress, dataset=args.dataset)
    if args.json:
        print(json.dumps(summary, ensure_ascii=False, indent=1))
    else:
        print(report_text(summary))
    if summary["failed"]:
        first = next(iter(summary["failures"].items()))
        print(f"kgfed: error: {summary['failed']} question(s) failed and were not written (first: {first[0]}: {first[1]}); "
              "run again to retry them", file=sys.stderr)
    return 1 if summary["failed"] else 0


def report_text(s: dict) -> str:
    """The final report of a run, a few readable lines."""
    lines = [
        f"{s['answered']}/{s['questions']} questions answered in {s['out']} ({s['new']} new, {s['skipped']} resumed, {s['failed']} failed)",
        f"Hits@1 (ToG rule) {s['hits@1']:.4f}   strict {s['strict']:.4f}   EM {s.get('em', 0.0):.4f}   "
        f"F1 {s.get('f1', 0.0):.4f}" if s["hits@1"] is not None else "not scored: the question file has no gold answers",
    ]
    if s["new"]:
        lines.append(f"{s['questions_per_second']:.2f} questions/s   {s['queries_per_question']:.1f} queries/question   "
                     f"{s['requests_per_question']:.1f} requests/question   cache hits {s['cache_hit_rate']:.0%}   "
                     f"{s['llm_calls_per_question']:.1f} LLM calls/question   {s['tokens_per_question']:.0f} tokens/question")
    if s["new"] and s.get("per_question"):  # cache.costs.headline
        h = s["per_question"]
        lines.append(f"a question: {h['llm_calls']:g} LLM calls   {h['tokens']:.0f} tokens   {h['tool_calls']:g} tool calls   "
                     f"{h['sparql_requests']:g} SPARQL requests ({h['above_hop_floor']:g} above two a hop)   "
                     f"{h['kg_seconds']:.3f} KG s   {h['seconds']:.2f} s")
    gate = s.get("llm_gate") or {}
    if gate.get("busy"):
        lines.append(f"the LLM answered busy (429/503/529) {gate['busy']:g} times: retried, {gate.get('paused', 0):.0f} s "
                     f"paused in all; at most {gate.get('peak', 0):g} calls in flight")
    if s.get("kg"):
        lines.append(f"KG: {s['kg']}")
    lines.append(f"per-question costs: {s['costs']}")
    return "\n".join(lines)
