"""`kgfed evaluate`: score a prediction file with ToG's rule and the strict one (engine/harness/evaluate.py)."""
from __future__ import annotations

import argparse
import json

from ...sparql.errors import DatasetError
from ..harness.datasets import load_dataset, require_gold
from ..harness.evaluate import FORMATS, Report, compare, evaluate, read_nonempty


def summary(report: Report) -> str:
    nulls = sum(o.null for o in report.outcomes)
    lines = [f"{report.dataset}: n={report.n}  Hits@1 (ToG rule)={report.hits_at_1:.4f}  strict={report.strict:.4f}  "
             f"null={nulls}  disagreements={len(report.disagreements)}  missing={len(report.missing)}"]
    lines += [f"  {t}: n={s['n']}  Hits@1={s['hits@1']:.4f}  strict={s['strict']:.4f}" + (f"  null={s['null']}" if s["null"] else "")
              for t, s in report.per_type().items()]
    if report.cost:
        lines.append("  cost: " + ", ".join(f"{k}={v:g}" for k, v in sorted(report.cost.items())))
    return "\n".join(lines)


async def cmd_evaluate(args: argparse.Namespace) -> int:
    questions = load_dataset(args.questions, args.dataset)
    require_gold(questions, args.questions)
    report = evaluate(read_nonempty(args.predictions, args.format), questions, args.dataset)
    if getattr(args, "gold_implied", False) and report.missing:
        raise DatasetError(
            f"{len(report.missing)} of the {len(questions)} questions of the {args.questions} file have no prediction in "
            f"{args.predictions}: give the question file the run used with --gold FILE (e.g. --gold "
            "../shared/data/freebase/cwq_questions.jsonl), or --gold " + str(args.questions) + " to score a partial run against it")
    if args.compare:
        other = evaluate(read_nonempty(args.compare, args.compare_format or args.format), questions, args.dataset)
        result = compare(report, other)
        print(json.dumps(result, ensure_ascii=False, indent=1) if args.json else
              f"{summary(report)}\n{summary(other)}\nonly A: {len(result['only_a'])}  only B: {len(result['only_b'])}")
        return 0
    print(json.dumps(report.to_json(), ensure_ascii=False, indent=1) if args.json else summary(report))
    return 0


def register(command, add_source_options, add_cache_options) -> None:
    """`kgfed evaluate PREDICTIONS --questions FILE_OR_NAME [--format tog|tog-json|tog2] [--compare B]`."""
    p = command("evaluate", cmd_evaluate, "score a ToG/ToG-2 prediction file (ToG's Hits@1 rule and a strict score)")
    p.add_argument("predictions", help="the method's output file")
    p.add_argument("--questions", "-q", required=True, help="question file, or a name like cwq / webqsp / qald10")
    p.add_argument("--dataset", "-d", help="dataset rule to apply (default: detected from the question file)")
    p.add_argument("--format", "-f", choices=FORMATS, default="tog", help="tog: JSONL, tog-json: JSON list, tog2: `answer`")
    p.add_argument("--compare", metavar="PREDICTIONS_B", help="a second prediction file to compare with")
    p.add_argument("--compare-format", choices=FORMATS, help="format of the --compare file (default: --format)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
