"""`kgfed evaluate` / `kgfed eval`: score a prediction file with ToG's rule, the strict one, EM and F1
(engine/harness/evaluate.py). Both commands take the same options; the gold file is `--gold` or `--questions`."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ...sparql.errors import DatasetError, KgfedError
from ..harness.datasets import load_dataset, require_gold
from ..harness.evaluate import (FORMATS, Report, compare, detect_format, evaluate, meta_dialects, read_meta,
                                read_nonempty)


def kg_line(meta: dict[str, Any] | None, path: str | Path) -> str:
    """What KG the predictions were made on: per KG, a per-question subgraph fixture or a whole graph."""
    if meta is None:
        return f"KG: not recorded ({Path(path).name} has no .kgfed.json sidecar: a file kgfed 0.2 or another tool wrote)"
    kgs = [k for k in meta.get("kgs") or [] if isinstance(k, dict)]
    return "KG: " + "; ".join(f"{k.get('name')} = {k.get('scope', 'scope not recorded')} "
                              f"({k.get('endpoint') or 'bundled demo KG'})" for k in kgs)


def summary(report: Report, kg: str | None = None) -> str:
    nulls = sum(o.null for o in report.outcomes)
    lines = [f"{report.dataset}: n={report.n}  Hits@1 (ToG rule)={report.hits_at_1:.4f}  strict={report.strict:.4f}  "
             f"EM={report.em:.4f}  F1={report.f1:.4f}  null={nulls}  disagreements={len(report.disagreements)}  "
             f"missing={len(report.missing)}"]
    lines += [f"  {t}: n={s['n']}  Hits@1={s['hits@1']:.4f}  strict={s['strict']:.4f}  EM={s['em']:.4f}  F1={s['f1']:.4f}"
              + (f"  null={s['null']}" if s["null"] else "") for t, s in report.per_type().items()]
    if kg:
        lines.append(f"  {kg}")
    if report.cost:
        lines.append("  cost: " + ", ".join(f"{k}={v:g}" for k, v in sorted(report.cost.items())))
    return "\n".join(lines)


def _scored(path: str, fmt: str | None, questions, dataset: str | None) -> tuple[Report, str]:
    fmt = detect_format(path, fmt)
    meta = read_meta(path)
    report = evaluate(read_nonempty(path, fmt), questions, dataset, kgs=meta_dialects(meta))
    return report, kg_line(meta, path)


async def cmd_evaluate(args: argparse.Namespace) -> int:
    if not args.questions and not args.dataset:
        raise KgfedError("no gold answers: give --gold FILE (the question file the run used; --questions is the same) "
                         "or --dataset NAME")
    source = args.questions or args.dataset
    questions = load_dataset(source, args.dataset)
    require_gold(questions, source)
    report, kg = _scored(args.predictions, args.format, questions, args.dataset)
    if not args.questions and report.missing:  # the shared file stands in: it must be the one the run used
        raise DatasetError(
            f"{len(report.missing)} of the {len(questions)} questions of the {source} file have no prediction in "
            f"{args.predictions}: give the question file the run used with --gold FILE (e.g. --gold "
            "../shared/data/freebase/cwq_questions.jsonl), or --gold " + str(source) + " to score a partial run against it")
    if args.compare:
        other, other_kg = _scored(args.compare, args.compare_format or args.format, questions, args.dataset)
        result = compare(report, other)
        print(json.dumps({**result, "kg": {"a": kg, "b": other_kg}}, ensure_ascii=False, indent=1) if args.json else
              f"{summary(report, kg)}\n{summary(other, other_kg)}\nonly A: {len(result['only_a'])}  only B: {len(result['only_b'])}")
        return 0
    print(json.dumps({**report.to_json(), "kg": kg}, ensure_ascii=False, indent=1) if args.json else summary(report, kg))
    return 0


def add_eval_options(p: argparse.ArgumentParser) -> None:
    """The options of `eval` and `evaluate` (one set: either spelling of the gold file works in both)."""
    p.add_argument("predictions", help="the method's output file")
    p.add_argument("--gold", "-g", "--questions", "-q", dest="questions", metavar="FILE_OR_NAME",
                   help="question file the run used, with the gold answers, or a name like cwq / webqsp / qald10 "
                        "(default: the shared file of --dataset, which must then cover every question)")
    p.add_argument("--dataset", "-d", help="dataset rule to apply (cwq, webqsp, …; default: detected from the question file)")
    p.add_argument("--format", "-f", choices=FORMATS, default=None,
                   help="tog: JSONL, tog-json: JSON list, tog2: `answer` (default: the file's .kgfed.json sidecar, else "
                        "its records; a format the file is not is refused)")
    p.add_argument("--compare", metavar="PREDICTIONS_B", help="a second prediction file to compare with")
    p.add_argument("--compare-format", choices=FORMATS, help="format of the --compare file (default: detected)")
    p.add_argument("--cache-dir", help="accepted as by every command; scoring reads no cache")
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def register(command, add_source_options, add_cache_options) -> None:
    """`kgfed evaluate PREDICTIONS --gold FILE_OR_NAME [--format tog|tog-json|tog2] [--compare B]`."""
    p = command("evaluate", cmd_evaluate, "score a ToG/ToG-2 prediction file (ToG's Hits@1 rule, strict, EM and F1)")
    add_eval_options(p)
