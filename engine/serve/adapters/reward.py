"""The reward of a rollout's answer, by the harness's own scoring (`engine.harness.evaluate`).

`score(answer, ground_truth, metric)`: `answer` is what `kgfed serve` returned for the answer tool
(`{"names": [...], "ids": [...]}`, or None when the rollout never answered: 0.0); `ground_truth` holds the gold
`answers` (names), optionally `aliases` and `answer_ids` (`{kg: [ids]}` or a flat list); `metric` is

- `em`: KG-R1's exact match (an answer item, or a predicted id, is gold), 1.0 or 0.0;
- `f1`: the set-based F1 the leaders report (over ids when both sides have them, else over names);
- `hits1`: the strict Hits@1 rule (the first answer is a gold name or alias, or the first id a gold id).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ....sparql.errors import KgfedError
from ...harness.datasets import Question
from ...harness.evaluate import Prediction, answer_f1, exact_match, strict_match

__all__ = ["METRICS", "score"]

METRICS = ("em", "f1", "hits1")


def _question(ground_truth: Mapping[str, Any]) -> Question:
    if not isinstance(ground_truth, Mapping):
        raise KgfedError("ground_truth must be a mapping with 'answers' (and optionally 'aliases', 'answer_ids')")
    answers = ground_truth.get("answers") or ground_truth.get("target") or []
    answers = [answers] if isinstance(answers, str) else [str(a) for a in answers]
    ids = ground_truth.get("answer_ids") or {}
    if isinstance(ids, (list, tuple)):
        ids = {"kg": [str(i) for i in ids]}
    return Question("", "", answers=answers, answer_ids={str(k): [str(i) for i in v] for k, v in ids.items()},
                    aliases=[str(a) for a in ground_truth.get("aliases") or []])


def score(answer: Mapping[str, Any] | None, ground_truth: Mapping[str, Any], metric: str = "em") -> float:
    """The reward of `answer` against `ground_truth` by `metric` (see the module docstring)."""
    if metric not in METRICS:
        raise KgfedError(f"unknown reward metric {metric!r}: use one of {', '.join(METRICS)}")
    question = _question(ground_truth)
    if not answer:
        return 0.0
    names = [str(n) for n in answer.get("names") or []]
    ids = [str(i) for i in answer.get("ids") or []]
    text = "; ".join(names)
    prediction = Prediction("", text, format="tog2", extra={"answer_ids": ids})
    accepted = question.answers + question.aliases
    if metric == "em":
        return 1.0 if exact_match(text, accepted, prediction, question) else 0.0
    if metric == "f1":
        return float(answer_f1(text, question, question.aliases, prediction))
    gold_ids = {i for v in question.answer_ids.values() for i in v}
    first_id = ids[0] if ids else None
    return 1.0 if (first_id is not None and first_id in gold_ids) or strict_match(names[0] if names else "", accepted) else 0.0
