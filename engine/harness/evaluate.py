"""Scoring KBQA predictions exactly as ToG's eval does, plus a strict score beside it.

ToG (`eval/eval.py --dataset cwq --output_file F`, `eval/utils.py`) takes the text between the
first "{" and the first "}" of a prediction's `results` (the whole text when there is no "{"),
removes spaces, lower-cases, and counts a hit when it equals a gold answer or either contains the
other ("Exact Match", reported as Hits@1). ToG-2 does the same on its records' `answer`, without
the brace step. That rule is generous: an empty answer ("{}") is inside every gold, and a short
gold alias like "en" is inside most answers. The strict score asks for an exact match after
normalisation (case, punctuation, articles, whitespace) and never credits an empty answer.

A ToG answer `{NULL}` (the model, or kgfed for a method that found nothing, saying "no answer") is
what ToG's eval.py skips: it stays in the denominator but is scored neither right nor wrong; kgfed
counts it as not right under both rules and reports how many there were (`null`) beside the scores.

    predictions = read_predictions("ToG_cwq.jsonl", "tog")
    report = evaluate(predictions, load_dataset("cwq"), "cwq")
    report.to_json()   # {"hits@1": ..., "strict": ..., "n": ..., "per_type": ..., ...}
"""
from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...sparql.errors import DatasetError
from .datasets import Question, canonical_dataset, gold_answers, kg_of, load_dataset, read_records  # noqa: F401  (load_dataset: docs/evaluation.md imports it from here)

FORMATS = ("tog", "tog-json", "tog2")
NULL_ANSWER = "NULL"  # ToG's "no answer": `{NULL}` in `results` (eval.py: in the denominator, never right)
# The prediction field holding the model's output, per format.
_OUTPUT_FIELD = {"tog": "results", "tog-json": "results", "tog2": "answer"}
# Where a prediction record keeps its question: ToG writes "question"; ToG-2's eval can be told
# another key (--data_question_string), e.g. "claim" for fever.
QUESTION_FIELDS = ("question", "claim", "sentence", "input", "RawQuestion")
# ToG-2's eval scores a fever run that stopped early as NOT ENOUGH INFO. Its test reads
# `("no entity find in depth" or "Last situation...") in remark`, i.e. only the first phrase.
_FEVER_EARLY_STOP = "no entity find in depth"


# -- the rules -------------------------------------------------------------------------------------
def extract_answer(text: str) -> str:
    """ToG's `clean_results`: text[first "{" + 1 : first "}"], or the whole text without a "{".

    Kept exactly, quirks included: with no "}" the slice ends one character early, and a "}"
    before the "{" gives "".
    """
    if "{" not in text:
        return text
    return text[text.find("{") + 1:text.find("}")]


def _squash(text: str) -> str:
    return text.strip().replace(" ", "").lower()


def tog_match(pred: str, golds: Iterable[str]) -> bool:
    """ToG's `exact_match`: spaces removed, lower-cased; equal, or either contains the other."""
    answer = _squash(pred)
    return any(answer == gold or answer in gold or gold in answer for gold in map(_squash, golds))


_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize(text: str) -> str:
    """Lower-case, drop punctuation (any Unicode P* character) and articles, collapse whitespace."""
    text = "".join(ch for ch in text.lower() if not unicodedata.category(ch).startswith("P"))
    return " ".join(_ARTICLES.sub(" ", text).split())


def _candidates(pred: str) -> list[str]:
    """The whole answer, and its first item when it lists several (Hits@1 looks at the first)."""
    first = re.split(r"[;,]", pred, maxsplit=1)[0]
    return [pred, first] if first != pred else [pred]


def strict_match(pred: str, golds_and_aliases: Iterable[str]) -> bool:
    """Normalised exact match of the answer (or its first listed item) with a gold name or alias.
    An empty answer never counts, nor does an empty gold."""
    golds = {g for g in map(normalize, golds_and_aliases) if g}
    return any(c in golds for c in map(normalize, _candidates(pred)) if c)


# -- exact match and F1, as the 2025-26 agents report them -----------------------------------------
# KG-R1 (verl/utils/reward_score/qa_em_format_kg.py `em_check_kg`): the normalised answer, or any item of a
# listed answer, equals a normalised gold. RoG / GNN-RAG (`evaluate_results.py` `eval_f1`), which KG-R1 and
# the agents after it follow: precision = matched predicted items / predicted items, recall = matched gold
# answers / gold answers. kgfed matches by id when the prediction carries answer ids and the question gold
# ids (docs/evaluation.md), else by normalised name (gold names and aliases).
_ITEM_SEPARATORS = re.compile(r"[;|,\n]")


def answer_items(text: str, accepted: Iterable[str] = ()) -> list[str]:
    """The normalised items of an answer: split at `,` `;` `|` and line breaks, except where the joined
    parts are an accepted name ("Sochi, Russia"); empty items dropped, duplicates once."""
    names = {n for n in map(normalize, accepted) if n}
    whole = normalize(text)
    if not whole or whole in names:
        return [whole] if whole else []
    parts = _ITEM_SEPARATORS.split(text)
    items: list[str] = []
    i = 0
    while i < len(parts):
        j = next((j for j in range(len(parts), i + 1, -1) if normalize(",".join(parts[i:j])) in names), i + 1)
        items.append(normalize(",".join(parts[i:j])))
        i = j
    return [item for item in dict.fromkeys(items) if item]


def _id_sets(prediction: Prediction | None, question: Question,
             kgs: Collection[str] | None = None) -> tuple[set[str], set[str]]:
    """The predicted and the gold answer ids. The gold holds the ids of the run's KGs (`kgs`: their dialect
    names, from the sidecar), else of the KGs the predicted ids belong to: a one-KG run over a question with
    gold ids in two KGs is not held to find the other KG's ids."""
    raw = (prediction.extra.get("answer_ids") if prediction is not None else None) or []
    predicted = {str(i) for i in raw} if isinstance(raw, list) else set()
    wanted = set(kgs) if kgs else {kg for kg in map(kg_of, predicted) if kg}
    gold = {i for kg, ids in question.answer_ids.items() if not wanted or kg in wanted for i in ids}
    return predicted, gold


def exact_match(text: str, accepted: Iterable[str], prediction: Prediction | None = None,
                question: Question | None = None, kgs: Collection[str] | None = None) -> bool:
    """KG-R1's exact match: the normalised answer or one of its listed items is a gold name or alias (or a
    predicted answer id is a gold id). An empty answer never matches."""
    names = {n for n in map(normalize, accepted) if n}
    if question is not None:
        predicted, gold = _id_sets(prediction, question, kgs)
        if predicted & gold:
            return True
    return any(item in names for item in answer_items(text, names))


def answer_f1(text: str, question: Question, accepted: Iterable[str] = (), prediction: Prediction | None = None,
              kgs: Collection[str] | None = None) -> float:
    """Set-based F1 of one answer: over ids when the prediction carries answer ids and the question has
    gold ids (of `kgs`, see `_id_sets`), else over normalised names (an item matching only an alias counts for
    one gold answer)."""
    predicted, gold = _id_sets(prediction, question, kgs)
    if predicted and gold:
        hit = len(predicted & gold)
        return _f1(hit / len(predicted), hit / len(gold))
    golds = list(dict.fromkeys(n for n in map(normalize, question.answers) if n))
    names = set(golds) | {n for n in map(normalize, accepted) if n}
    items = answer_items(text, names)
    if not items or not golds:
        return 0.0
    right = [item for item in items if item in names]
    found = {item for item in right if item in golds}
    by_alias = len([item for item in right if item not in golds])
    recall = min(1.0, (len(found) + min(by_alias, len(golds) - len(found))) / len(golds))
    return _f1(len(right) / len(items), recall)


def _f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


# -- predictions -----------------------------------------------------------------------------------
@dataclass
class Prediction:
    """One model output for one question, as a ToG (`results`) or ToG-2 (`answer`) record holds it."""

    question: str                       # the question text, as the record gives it
    raw: str                            # the model's whole output
    id: str | None = None               # the question id, when the record carries one
    format: str = "tog"                 # tog / tog-json: the answer is inside "{...}"; tog2: as is
    reasoning_chains: list[Any] = field(default_factory=list)
    cost: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # other fields, kept for writing back
    no_output: bool = False             # the record has no output field (ToG-2 reads it as ""): never right

    @property
    def answer(self) -> str:
        """The text that is scored."""
        return self.raw if self.format == "tog2" else extract_answer(self.raw)

    @property
    def null(self) -> bool:
        """ToG's "no answer": a `results` whose braces hold exactly NULL (eval.py scores it neither way)."""
        return self.format != "tog2" and "{" in self.raw and self.answer == NULL_ANSWER


def _check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise DatasetError(f"unknown prediction format {fmt!r}: use one of {', '.join(FORMATS)}")
    return fmt


def _as_text(value: Any) -> str:
    return "" if value is None else value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _numeric(cost: Any) -> dict[str, float]:
    if not isinstance(cost, Mapping):
        return {}
    return {str(k): v for k, v in cost.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def prediction_from_record(record: Mapping[str, Any], fmt: str = "tog", where: str = "record") -> Prediction:
    """A Prediction from one ToG / ToG-2 output record."""
    _check_format(fmt)
    key = next((k for k in QUESTION_FIELDS if k in record), None)
    output = _OUTPUT_FIELD[fmt]
    if key is None or (fmt != "tog2" and output not in record):
        lacks = [name for name, ok in (("question", key), (output, output in record)) if not ok]
        raise DatasetError(f"{where} lacks {', '.join(lacks)} (has {', '.join(sorted(record)) or 'no fields'}): "
                           f"pass the right --format ({', '.join(FORMATS)})")
    chains = record.get("reasoning_chains") if fmt != "tog2" else None
    known = {key, output, "id", "cost"} | ({"reasoning_chains"} if fmt != "tog2" else set())
    return Prediction(
        question=_as_text(record[key]),
        raw=_as_text(record.get(output)),  # ToG-2: a record without `answer` scores ""
        id=None if record.get("id") in (None, "") else str(record["id"]),
        format=fmt,
        reasoning_chains=chains if isinstance(chains, list) else [],
        cost=_numeric(record.get("cost")),
        extra={k: v for k, v in record.items() if k not in known},
        no_output=output not in record,
    )


def read_predictions(path: str | Path, fmt: str = "tog") -> list[Prediction]:
    """Records of a ToG JSONL (`tog`), ToG JSON list (`tog-json`) or ToG-2 (`tog2`) output file.
    The container (JSON list or JSONL) is read either way; `fmt` says which field is the output."""
    _check_format(fmt)
    records = read_records(path, what="prediction file")
    return [prediction_from_record(rec, fmt, f"{path} record {i}") for i, rec in enumerate(records)]


def prediction_record(prediction: Prediction, fmt: str = "tog") -> dict[str, Any]:
    """The output record ToG (`question`, `results`, `reasoning_chains`) or ToG-2 (`question`,
    `answer`) writes, with `id` and `cost` when known."""
    record: dict[str, Any] = {"question": prediction.question, _OUTPUT_FIELD[_check_format(fmt)]: prediction.raw}
    if fmt != "tog2":
        record["reasoning_chains"] = prediction.reasoning_chains
    if prediction.id is not None:
        record["id"] = prediction.id
    if prediction.cost:
        record["cost"] = prediction.cost
    return {**prediction.extra, **record}


def write_predictions(predictions: Iterable[Prediction], path: str | Path, fmt: str = "tog") -> Path:
    """Write a `tog` JSONL file (as ToG's save_2_jsonl), or a `tog-json` / `tog2` JSON list."""
    records = [prediction_record(p, fmt) for p in predictions]
    path = Path(path)
    if fmt == "tog":
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    else:
        text = json.dumps(records, ensure_ascii=False, indent=4) + "\n"
    path.write_text(text, encoding="utf-8")
    return path


# -- evaluation ------------------------------------------------------------------------------------
@dataclass
class Outcome:
    """How one question's prediction scored under both rules."""

    id: str
    type: str | None
    answer: str
    tog: bool
    strict: bool
    null: bool = False  # `{NULL}`: counted in n, right under neither rule
    em: bool = False    # exact match as the 2025-26 agents report it (see `exact_match`)
    f1: float = 0.0     # set-based F1 over the answer's ids or names (see `answer_f1`)


def _rate(hits: float, n: int) -> float:
    return hits / n if n else 0.0


def _scores(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    n = len(outcomes)
    tog = sum(o.tog for o in outcomes)
    strict = sum(o.strict for o in outcomes)
    em = sum(o.em for o in outcomes)
    return {"n": n, "hits@1": _rate(tog, n), "strict": _rate(strict, n), "em": _rate(em, n),
            "f1": round(_rate(sum(o.f1 for o in outcomes), n), 6), "hits": tog, "strict_hits": strict, "em_hits": em,
            "null": sum(o.null for o in outcomes)}


@dataclass
class Report:
    """Scores of one prediction file against one question set."""

    dataset: str
    outcomes: list[Outcome]
    missing: list[str] = field(default_factory=list)     # question ids without a prediction
    duplicates: list[str] = field(default_factory=list)  # question ids predicted more than once (first scored)
    cost: dict[str, float] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.outcomes)

    @property
    def hits_at_1(self) -> float:
        return _rate(sum(o.tog for o in self.outcomes), self.n)

    @property
    def strict(self) -> float:
        return _rate(sum(o.strict for o in self.outcomes), self.n)

    @property
    def em(self) -> float:
        return _rate(sum(o.em for o in self.outcomes), self.n)

    @property
    def f1(self) -> float:
        return round(_rate(sum(o.f1 for o in self.outcomes), self.n), 6)

    @property
    def disagreements(self) -> list[str]:
        """Question ids the ToG rule and the strict score judge differently."""
        return [o.id for o in self.outcomes if o.tog != o.strict]

    def per_type(self) -> dict[str, dict[str, Any]]:
        groups: dict[str, list[Outcome]] = {}
        for outcome in self.outcomes:
            if outcome.type is not None:
                groups.setdefault(outcome.type, []).append(outcome)
        return {name: _scores(group) for name, group in sorted(groups.items())}

    def to_json(self) -> dict[str, Any]:
        return {"dataset": self.dataset, **_scores(self.outcomes), "per_type": self.per_type(),
                "disagreements": self.disagreements, "missing": self.missing,
                "duplicates": self.duplicates, "cost": self.cost}


def _scored_text(prediction: Prediction, dataset: str) -> str:
    if dataset == "fever" and prediction.format == "tog2" and _FEVER_EARLY_STOP in str(prediction.extra.get("remark", "")):
        return "NOT ENOUGH INFO"
    return prediction.answer


def _match_questions(predictions: Sequence[Prediction], questions: Sequence[Question]) -> list[tuple[Prediction, Question]]:
    """Each prediction's question: by id when it carries a known one, else by exact text (first
    question with that text, as ToG's `align`). Unmatched predictions raise DatasetError."""
    by_id = {q.id: q for q in questions}
    by_text: dict[str, Question] = {}
    for question in questions:
        by_text.setdefault(question.text, question)
    pairs: list[tuple[Prediction, Question]] = []
    unmatched: list[Prediction] = []
    for prediction in predictions:
        match = by_id.get(prediction.id or "") or by_text.get(prediction.question)
        if match is None:
            unmatched.append(prediction)
        else:
            pairs.append((prediction, match))
    if unmatched:
        raise DatasetError(f"{len(unmatched)} prediction(s) match no question (first: {unmatched[0].question[:60]!r}): "
                           "evaluate against the question file the run used")
    return pairs


def _sum_costs(costs: Iterable[Mapping[str, float]]) -> dict[str, float]:
    total: dict[str, float] = {}
    for cost in costs:
        for key, value in cost.items():
            total[key] = total.get(key, 0) + value
    return total


def evaluate(predictions: Sequence[Prediction], questions: Sequence[Question], dataset: str | None = None,
             kgs: Collection[str] | None = None) -> Report:
    """Hits@1 by ToG's rule and the strict score of `predictions` on `questions`.

    Gold answers follow `gold_answers(question, dataset)`; the strict score also accepts the
    question's aliases; EM and F1 over ids hold the run to the gold ids of its KGs (`kgs`: dialect names, as
    the sidecar records them; None: the KGs of each prediction's ids). n counts questions with a prediction (ToG divides by the number of output
    records; a question predicted twice is scored once here, by its first record).
    """
    name = canonical_dataset(dataset or (questions[0].dataset if questions else ""))
    outcomes: list[Outcome] = []
    seen: set[str] = set()
    duplicates: list[str] = []
    used: list[Prediction] = []
    for prediction, question in _match_questions(predictions, questions):
        if question.id in seen:
            duplicates.append(question.id)
            continue
        seen.add(question.id)
        used.append(prediction)
        golds = gold_answers(question, name)
        text = _scored_text(prediction, name)
        if prediction.null or prediction.no_output:  # ToG's eval.py: `{NULL}` neither right nor wrong, still in n
            outcomes.append(Outcome(question.id, question.type, text, False, False, null=prediction.null))
            continue
        accepted = golds + question.aliases
        outcomes.append(Outcome(question.id, question.type, text, tog_match(text, golds), strict_match(text, accepted),
                                em=exact_match(text, accepted, prediction, question, kgs),
                                f1=answer_f1(text, question, accepted, prediction, kgs)))
    missing = [q.id for q in questions if q.id not in seen]
    return Report(name, outcomes, missing, list(dict.fromkeys(duplicates)), _sum_costs(p.cost for p in used))


def compare(report_a: Report, report_b: Report) -> dict[str, Any]:
    """Two runs on the same questions: scores on the questions both answered, which questions only
    one of them got (ToG rule and strict), and the cost difference (b - a)."""
    a = {o.id: o for o in report_a.outcomes}
    b = {o.id: o for o in report_b.outcomes}
    common = [i for i in a if i in b]

    def only(first: dict[str, Outcome], second: dict[str, Outcome], rule: str) -> list[str]:
        return [i for i in common if getattr(first[i], rule) and not getattr(second[i], rule)]

    keys = sorted(set(report_a.cost) | set(report_b.cost))
    return {
        "n_common": len(common),
        "a": _scores([a[i] for i in common]),
        "b": _scores([b[i] for i in common]),
        "only_a": only(a, b, "tog"), "only_b": only(b, a, "tog"),
        "strict_only_a": only(a, b, "strict"), "strict_only_b": only(b, a, "strict"),
        "cost": {"a": report_a.cost, "b": report_b.cost,
                 "delta": {k: report_b.cost.get(k, 0) - report_a.cost.get(k, 0) for k in keys}},
    }


# -- what a prediction file is: its sidecar, else its content ----------------------------------------
META_SUFFIX = ".kgfed.json"  # `preds.jsonl` -> `preds.jsonl.kgfed.json`: method, format, KGs, dataset, options
_NOT_JSON = object()


def meta_path_for(path: str | Path) -> Path:
    """The sidecar that says what wrote a prediction file (ToG's and ToG-2's evals never read it)."""
    path = Path(path)
    return path.with_name(path.name + META_SUFFIX)


def meta_dialects(meta: Mapping[str, Any] | None) -> tuple[str, ...] | None:
    """The dialect names of the KGs a sidecar says the run used (EM/F1's gold ids), None when not recorded."""
    kgs = [k for k in (meta or {}).get("kgs") or [] if isinstance(k, dict) and isinstance(k.get("dialect"), str)]
    return tuple(dict.fromkeys(k["dialect"] for k in kgs)) or None


def read_meta(path: str | Path) -> dict[str, Any] | None:
    """The sidecar of prediction file `path`, or None when there is none."""
    meta = meta_path_for(path)
    if not meta.is_file():
        return None
    try:
        doc = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise DatasetError(f"{meta} is not a readable kgfed sidecar ({exc}): delete it to treat {path} as a file of "
                           "unknown origin") from None
    if not isinstance(doc, dict) or doc.get("kgfed") != "predictions" or doc.get("format") not in FORMATS:
        raise DatasetError(f"{meta} is not a kgfed prediction sidecar: delete it to treat {path} as a file of unknown origin")
    return doc


@dataclass
class Sniffed:
    """What the content of an existing file says: its format (None: no records), whether kgfed wrote it
    (every record carries kgfed's `id`), and whether its last line is unfinished (a killed run)."""

    format: str | None
    own: bool = False
    torn: bool = False


RESUME_FIX = "choose another --out; the file is left as it is"
SCORE_FIX = "pass the output of a run: JSONL or a JSON list of records with `question` and `results` (ToG) or `answer` (ToG-2)"


def _not_predictions(path: Path, why: str, fix: str) -> DatasetError:
    return DatasetError(f"{path} is not a prediction file ({why}): {fix}")


def _lines(text: str, path: Path, fix: str) -> tuple[list[Any], bool]:
    """The records of a JSONL text, and whether its last line is unfinished (a last line that is a whole
    JSON object without its line feed is a record, not a torn one)."""
    whole = text.split("\n")
    last = whole.pop()  # "" when the text ends in a line feed
    torn = bool(last.strip()) and not _is_object(last)
    if last.strip() and not torn:
        whole.append(last)
    records = []
    for number, line in enumerate(whole, 1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except ValueError:
                raise _not_predictions(path, f"line {number} is not JSON", fix) from None
    return records, torn


def _is_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def sniff_predictions(path: str | Path, fix: str = RESUME_FIX) -> Sniffed:
    """Read-only: the format of an existing prediction file from its records (`results`: tog / tog-json by
    container, `answer` only: tog2); a file that is not one (text, binary, other JSON) is a DatasetError."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"cannot read {path} ({exc.strerror or exc}): {fix}") from None
    if not data.strip():
        return Sniffed(None)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _not_predictions(path, "binary, not UTF-8 JSON", fix) from None
    try:
        doc: Any = json.loads(text)
    except ValueError:
        doc = _NOT_JSON
    if doc is _NOT_JSON:
        records, torn = _lines(text, path, fix)
        listed = False
    else:
        records, torn, listed = (doc if isinstance(doc, list) else [doc]), False, isinstance(doc, list)
    for i, record in enumerate(records):
        if not isinstance(record, dict) or not any(k in record for k in QUESTION_FIELDS):
            raise _not_predictions(path, f"record {i} is not a question's prediction", fix)
    if not records:
        return Sniffed(None, torn=torn)
    if any("results" in r for r in records):
        fmt = "tog-json" if listed else "tog"
    elif any("answer" in r for r in records):
        fmt = "tog2"
    else:
        raise _not_predictions(path, "its records have neither `results` (ToG) nor `answer` (ToG-2)", fix)
    return Sniffed(fmt, own=all("id" in r for r in records), torn=torn)


def detect_format(path: str | Path, asked: str | None = None) -> str:
    """The format of prediction file `path`: its sidecar's, else its records'. An `asked` format whose output
    field differs from the file's (`--format tog2` on a file of `results`) is refused: it would score every
    answer as "" and ToG's rule counts "" as right."""
    meta = read_meta(path)
    found = meta["format"] if meta else sniff_predictions(path, SCORE_FIX).format
    if asked is None:
        return found or "tog"
    _check_format(asked)
    if found is not None and _OUTPUT_FIELD[found] != _OUTPUT_FIELD[asked]:
        how = f"its sidecar {meta_path_for(path).name} says so" if meta else f"its records hold `{_OUTPUT_FIELD[found]}`"
        raise DatasetError(f"{path} is a {found} prediction file ({how}), not {asked}: drop --format or pass --format {found}")
    return asked


def read_nonempty(path: str | Path, fmt: str | None = None) -> list[Prediction]:
    """`read_predictions` in the file's format (`detect_format`; an `fmt` it is not is refused), refusing a
    file with no records (its score would be a meaningless 0)."""
    predictions = read_predictions(path, detect_format(path, fmt))
    if not predictions:
        raise DatasetError(f"{path} holds no predictions: score the output of a run that answered something")
    return predictions
