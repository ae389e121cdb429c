"""Why a method missed a question the gold stand-in could have answered (issue 27 item 3).

    python -m bench.gold_report PREDICTIONS.jsonl QUESTIONS [--trace T.jsonl] [--costs C.jsonl]

Reads a `--llm gold` run's predictions, its per-question costs and the stand-in's trace
(`$KGFED_GOLD_TRACE`, written by `bench.gold_ceilings`: per LLM call, whether the prompt showed a gold
answer and whether the reply named one) and prints, for every question not answered right by the
strict score, the cause:

- `parse`: a reply fell back (`parse_fallbacks` > 0);
- `answer choice`: the stand-in named a gold answer, the method's final answer is another;
- `pruned away`: a gold answer was shown in some prompt (a candidate list, a path listing) but never in
  the evidence of a sufficiency or answer prompt, so it was never named;
- `not reached (beam or depth limit)`: no prompt ever showed a gold answer: the search did not reach it
  within the method's width and depth (or the KG lacks it).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

from kgfed.engine.harness.datasets import gold_answers, load_dataset
from kgfed.engine.harness.evaluate import extract_answer, strict_match


def causes(predictions: Path, questions: str, trace: Path | None = None, costs: Path | None = None) -> list[dict]:
    """One record per question not strictly right: id, question, prediction, gold, cause."""
    trace = trace or predictions.with_suffix(".trace.jsonl")
    costs = costs or predictions.with_name(predictions.with_suffix("").name + ".costs.jsonl")
    by_id = {q.id: q for q in load_dataset(questions)}
    shown: dict[str, Counter] = defaultdict(Counter)
    kinds: dict[str, Counter] = defaultdict(Counter)  # the prompt kinds that showed a gold answer
    if trace.is_file():
        for line in trace.read_text(encoding="utf-8").splitlines():
            note = json.loads(line)
            shown[note["id"]]["shown"] += note["shown"]
            shown[note["id"]]["named"] += note["named"]
            if note["shown"]:
                kinds[note["id"]][note["kind"]] += 1
    fallbacks = {}
    if costs.is_file():
        for line in costs.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            fallbacks[record["id"]] = record.get("parse_fallbacks", 0)
    out = []
    for line in predictions.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        question = by_id.get(record.get("id"))
        if question is None:
            continue
        answer = extract_answer(str(record.get("results", record.get("answer", ""))))
        golds = gold_answers(question) + question.aliases
        if strict_match(answer, golds):
            continue
        seen = shown.get(question.id, Counter())
        cause = ("parse" if fallbacks.get(question.id) else "answer choice" if seen["named"] else
                 "pruned away" if seen["shown"] else "not reached (beam or depth limit)")
        out.append({"id": question.id, "question": question.text, "prediction": answer, "gold": question.answers[:3],
                    "cause": cause, "shown_in": dict(kinds.get(question.id, {}))})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("predictions", type=Path)
    parser.add_argument("questions")
    parser.add_argument("--trace", type=Path)
    parser.add_argument("--costs", type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    found = causes(args.predictions, args.questions, args.trace, args.costs)
    if args.json:
        print(json.dumps(found, ensure_ascii=False, indent=1))
        return 0
    print(f"{len(found)} question(s) missed: " + ", ".join(f"{c} {n}" for c, n in Counter(f['cause'] for f in found).most_common()))
    for f in found:
        where = f" (shown in {', '.join(f['shown_in'])})" if f["shown_in"] else ""
        print(f"- {f['id']}: {f['question']} — predicted {f['prediction']!r}, gold {f['gold']}: {f['cause']}{where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
