"""KBQA question files in one model: the ToG / ToG-2 / PoG / HydraRAG files and the CWQ, WebQSP,
GrailQA, T-REx and QALD originals.

    questions = load_dataset("../shared/data/questions/cwq.json")   # or load_dataset("cwq")
    questions[0].topics          # {"freebase": {"m.03_dwn": "Lou Seal"}}
    gold_answers(questions[0])   # the names ToG's eval compares a prediction with

The dataset is told by the file name (``cwq.json``, ``webqsp_test.json``, ``T-REX.json`` ...) or,
failing that, by the fields of the first record; the record shape (which fields hold the text,
answers and topic entities) is always told by the fields. Ids are short everywhere: Freebase
``m.0abc``, Wikidata ``Q42``. Placeholder topic ids in the files (``UnknownMID``, ``UnknownQID``,
``None``) are not kept as topics; their names go to ``meta["unlinked_topics"]``.

Plain question files need no gold: a JSONL/JSON file of ``{"question": ...}`` records (optional
``id``, ``topic_entity``/``topics`` as ``{id: name}``, a list of ids or ``"m.0abc,Q42"``, optional
``answers``), a ``.txt`` file of one question a line, or a ``.csv`` file of one question a line (or
with a header row naming ``question`` and optionally ``id``, ``topics`` and ``answers`` columns).
They load as the ``plain`` dataset; `has_gold` tells whether a file can be scored. Topic entities a
plain question lacks are linked from its text by the method (`methods.base.link_topics`).
"""
from __future__ import annotations

import ast
import csv
import io
import json
import re
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ...sparql.dialects import WIKIDATA, dialect_of
from ...sparql.errors import DatasetError, EndpointError
from ...sparql.results import parse_sparql_json

DATASETS = ("cwq", "webqsp", "grailqa", "simpleqa", "qald", "webquestions", "trex", "zeroshotre",
            "creak", "hotpot", "fever", "plain")
# Other spellings used by the methods' scripts and file names.
_DATASET_ALIASES = {
    "complexwebquestions": "cwq", "webquestionssp": "webqsp", "graliqa": "grailqa", "simplequestions": "simpleqa",
    "qald10": "qald", "qald10en": "qald", "t-rex": "trex", "zsre": "zeroshotre", "zero_shot_re": "zeroshotre",
    "hotpotadv": "hotpot", "hotpot_e": "hotpot", "hotpotqa": "hotpot",
}
# File-name hints, checked in order (webqsp before webquestions: "webquestionssp" contains both).
_NAME_HINTS = (
    ("webqsp", "webqsp"), ("webquestionssp", "webqsp"), ("complexwebquestions", "cwq"), ("cwq", "cwq"),
    ("grailqa", "grailqa"), ("graliqa", "grailqa"), ("simpleqa", "simpleqa"), ("simplequestions", "simpleqa"),
    ("qald", "qald"), ("webquestions", "webquestions"), ("trex", "trex"), ("zeroshotre", "zeroshotre"),
    ("zsre", "zeroshotre"), ("creak", "creak"), ("hotpot", "hotpot"), ("fever", "fever"),
)
# `load_dataset(NAME)`: the shared sample files, under $KGFED_DATA or ../shared/data beside the project.
BUILTIN_FILES = {
    "cwq": "questions/cwq.json", "webqsp": "questions/webqsp_test.json", "simpleqa": "questions/SimpleQA.json",
    "webquestions": "questions/WebQuestions.json", "zeroshotre": "questions/Zero_Shot_RE.json",
    "hotpot": "questions/hotpotadv.json", "qald": "questions/qald_10-en.json", "creak": "questions/creak.json",
    "fever": "questions/fever_1000_entities_azure.json", "qald10": "qald10/qald_10.json",
    "cwq-subgraph": "freebase/cwq_questions.jsonl", "federation": "federation/questions.jsonl",
}
# ToG-2's eval/utils.py `align` for fever: the label plus these phrasings all count as the gold answer.
FEVER_SYNONYMS: dict[str, list[str]] = {
    "REFUTES": ["refutes", "refute", "false", "incorrect", "not accurate", "not true", "not correct",
                "does not make sense", "not entirely accurate", "incomplete"],
    "SUPPORTS": ["supports", "support", "true", "correct"],
    "NOT ENOUGH INFO": ["not enough information", "not enough info"],
}
# Record fields that hold {entity id: name} topic entities, in any of the files.
TOPIC_FIELDS = ("topic_entity", "QID", "qid_topic_entity", "topic_entity_ids", "entities", "topics", "topic")
# Fields a question file may wrap its records in (QALD: "questions", WebQSP: "Questions").
_CONTAINER_KEYS = ("questions", "Questions", "data")


@dataclass
class Question:
    """One KBQA question, whatever file it came from."""

    id: str
    text: str
    topics: dict[str, dict[str, str]] = field(default_factory=dict)  # kg -> {short id: name}
    answers: list[str] = field(default_factory=list)                  # gold names, as the file gives them
    answer_ids: dict[str, list[str]] = field(default_factory=dict)    # kg -> gold ids
    aliases: list[str] = field(default_factory=list)                  # further accepted names
    meta: dict[str, Any] = field(default_factory=dict)                # type, sparql, label, ...
    dataset: str = ""

    @property
    def type(self) -> str | None:
        """The question's type for per-type scores (CWQ compositionality, GrailQA level, label ...)."""
        value = self.meta.get("type")
        return None if value is None else str(value)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# -- dataset names ---------------------------------------------------------------------------------
def canonical_dataset(name: str) -> str:
    """`name` as one of DATASETS (accepting the methods' spellings like hotpot_e or T-REx)."""
    key = str(name).strip().lower()
    key = _DATASET_ALIASES.get(key, key)
    if key not in DATASETS:
        raise DatasetError(f"unknown dataset {name!r}: use one of {', '.join(DATASETS)}")
    return key


def dataset_from_name(path: str | Path) -> str | None:
    """The dataset a file name points to (``Zero_Shot_RE.json`` -> zeroshotre), or None."""
    stem = Path(path).name.lower().replace("-", "").replace("_", "")
    return next((dataset for hint, dataset in _NAME_HINTS if hint in stem), None)


def data_dir() -> Path:
    """Where the shared data lives: $KGFED_DATA, else ../shared/data beside the project."""
    return Path(os.environ.get("KGFED_DATA") or Path(__file__).resolve().parents[3] / "shared" / "data")


def resolve_path(path_or_name: str | os.PathLike[str]) -> Path:
    """An existing file, or the shared sample file of a dataset name (see BUILTIN_FILES)."""
    path = Path(path_or_name)
    if path.is_file():
        return path
    key = str(path_or_name).strip().lower()
    key = key if key in BUILTIN_FILES else _DATASET_ALIASES.get(key, key)
    if key in BUILTIN_FILES:
        builtin = data_dir() / BUILTIN_FILES[key]
        if builtin.is_file():
            return builtin
        raise DatasetError(f"dataset {path_or_name!r} expects {builtin}, which is absent: set KGFED_DATA or pass a path")
    raise DatasetError(f"no question file at {path_or_name}: pass an existing path or one of {', '.join(BUILTIN_FILES)}")


# -- reading files ---------------------------------------------------------------------------------
TEXT_SUFFIXES = (".txt", ".csv")  # one question a line (a CSV may have a header row naming its columns)


def text_records(path: str | Path) -> list[dict[str, Any]]:
    """The questions of a `.txt` (one a line; blank lines and `#` comments skipped) or `.csv` file as
    plain records. A CSV whose first row has a `question` cell is read by its header (`id`, `question`,
    `topics`/`topic_entity` ids separated by spaces, commas or semicolons, `answers` separated by `|`)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"cannot read question file {path}: {exc}; pass a readable UTF-8 text file") from None
    if path.suffix.lower() != ".csv":
        return [{"question": line.strip()} for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    try:
        rows = [row for row in csv.reader(io.StringIO(text)) if any(cell.strip() for cell in row)]
    except csv.Error as exc:
        raise DatasetError(f"question file {path} is not valid CSV ({exc}): fix the file or use one question a line in .txt") from None
    header = [cell.strip().lower() for cell in rows[0]] if rows else []
    if "question" not in header:
        return [{"question": ",".join(row).strip()} for row in rows]  # an unquoted comma stays in the question
    records = []
    for number, row in enumerate(rows[1:], 2):
        cells = dict(zip(header, (cell.strip() for cell in row)))
        if not cells.get("question"):
            raise DatasetError(f"question file {path} line {number} has no question: fill its question column or drop the line")
        record: dict[str, Any] = {"question": cells["question"]}
        if cells.get("id"):
            record["id"] = cells["id"]
        topics = cells.get("topics") or cells.get("topic_entity") or cells.get("topic")
        if topics:
            record["topics"] = topics
        if cells.get("answers") or cells.get("answer"):
            record["answers"] = [a.strip() for a in (cells.get("answers") or cells["answer"]).split("|") if a.strip()]
        records.append(record)
    return records


def read_records(path: str | Path, what: str = "question file") -> list[dict[str, Any]]:
    """The records of a JSON list, a JSON object wrapping one (QALD, WebQSP) or a JSONL file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"cannot read {what} {path}: {exc}; pass a readable UTF-8 JSON/JSONL file") from None
    try:
        doc: Any = json.loads(text)
    except ValueError:
        doc = _json_lines(text, path, what)
    records = _unwrap(doc)
    bad = next((i for i, rec in enumerate(records) if not isinstance(rec, dict)), None)
    if bad is not None:
        raise DatasetError(f"{what} {path}: record {bad} is a {type(records[bad]).__name__}, not an object; "
                           "pass a file of JSON objects")
    return records


def _json_lines(text: str, path: Path, what: str) -> list[Any]:
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except ValueError as exc:
            raise DatasetError(f"{what} {path} line {number} is not JSON ({exc}); fix or remove that line") from None
    return records


def _unwrap(doc: Any) -> list[Any]:
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict):
        inner = next((doc[k] for k in _CONTAINER_KEYS if isinstance(doc.get(k), list)), None)
        return inner if inner is not None else [doc]
    return [doc]


# -- field helpers ---------------------------------------------------------------------------------
def _structured(value: Any, name: str) -> Any:
    """A dict/list field, parsed when the file stores it as a JSON or Python-repr string."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    for parse in (json.loads, ast.literal_eval):  # literal_eval evaluates literals only, never code
        try:
            return parse(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    raise DatasetError(f"field {name!r} holds {value[:40]!r}, not a dict or list: fix the file or pass the right dataset")


_ID_SEPARATORS = re.compile(r"[\s,;]+")


def _topic_mapping(value: Any, name: str) -> dict[str, str]:
    """A topic field as {id: name}: a mapping, a `{kg: {id: name}}` mapping, a list of ids, or ids in a string."""
    if isinstance(value, str) and not value.strip().startswith(("{", "[")):
        return {i: "" for i in _ID_SEPARATORS.split(value.strip()) if i}
    value = _structured(value, name)
    if isinstance(value, (list, tuple)):
        if not all(isinstance(v, str) for v in value):
            raise DatasetError(f"field {name!r} is a list of {type(next(v for v in value if not isinstance(v, str))).__name__}, "
                               "expected ids (\"m.0abc\", \"Q42\") or {id: name}: fix the file")
        return {v.strip(): "" for v in value if v.strip()}
    if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
        return {str(k): "" if n is None else str(n) for inner in value.values() for k, n in inner.items()}
    return _mapping(value, name)


def _mapping(value: Any, name: str) -> dict[str, str]:
    """An {id: name} field as strings (None names become "")."""
    value = _structured(value, name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise DatasetError(f"field {name!r} is a {type(value).__name__}, expected {{id: name}}: fix the file")
    return {str(k): "" if v is None else str(v) for k, v in value.items()}


def _strings(value: Any, name: str) -> list[str]:
    """A list-of-names field; a plain string is one name, a '[...]' string is parsed."""
    if isinstance(value, str) and not value.strip().startswith("["):
        return [value]
    value = _structured(value, name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise DatasetError(f"field {name!r} is a {type(value).__name__}, expected a list of names: fix the file")
    return [str(v) for v in value if v is not None]


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def kg_of(entity_id: str) -> str | None:
    """The default KG name of the dialect of `entity_id` (freebase for m./g. ids, wikidata for Q ids), None
    for anything else (placeholders)."""
    dialect = dialect_of(entity_id) if isinstance(entity_id, str) else None
    return dialect.name if dialect else None


def _ids_by_kg(ids: Iterable[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for entity_id in _unique(ids):
        kg = kg_of(entity_id)
        if kg:
            out.setdefault(kg, []).append(entity_id)
    return out


def _group_topics(mapping: Mapping[str, str]) -> tuple[dict[str, dict[str, str]], list[str]]:
    """{id: name} split by KG; names of placeholder ids come back as unlinked."""
    topics: dict[str, dict[str, str]] = {}
    unlinked = []
    for entity_id, name in mapping.items():
        kg = kg_of(entity_id)
        if kg:
            topics.setdefault(kg, {}).setdefault(entity_id, name)
        elif name:
            unlinked.append(name)
    return topics, unlinked


def _text(value: Any, name: str) -> str:
    """The question text: a string, or the English entry of a QALD [{language, string}] list."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = _texts_by_language(value)
        if "en" in texts:
            return texts["en"]
    raise DatasetError(f"field {name!r} holds no question text (expected a string or an English QALD entry): fix the file")


def _texts_by_language(entries: list[Any]) -> dict[str, str]:
    return {e["language"]: e["string"] for e in entries if isinstance(e, dict) and "language" in e and "string" in e}


def _pick(record: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
    return {name: record[name] for name in names if name in record}


# -- shapes ----------------------------------------------------------------------------------------
# A parser returns the shape-specific parts of a Question: text, answers, answer_ids (a flat id
# list), aliases, extra topics {id: name}, meta, and the id when the record has one.
Parsed = dict[str, Any]


@dataclass(frozen=True)
class Shape:
    """One record layout: the fields it must have, the datasets it serves, and its parser."""

    name: str
    datasets: tuple[str, ...]
    required: tuple[str, ...]
    parse: Callable[[dict[str, Any]], Parsed]

    def missing(self, record: Mapping[str, Any]) -> list[str]:
        return [name for name in self.required if name not in record]


def _type(record: Mapping[str, Any], name: str) -> dict[str, Any]:
    return {"type": record[name]} if record.get(name) not in (None, "") else {}


def _cwq_answer_dicts(answers: list[Any]) -> Parsed:
    """CWQ's original [{answer, aliases, answer_id}] list (what ToG's eval cwq branch expects)."""
    names, aliases, ids = [], [], []
    for item in answers:
        names.append(str(item["answer"]))
        aliases += _strings(item.get("aliases"), "aliases")
        ids += [item["answer_id"]] if item.get("answer_id") else []
    return {"answers": names, "aliases": aliases, "answer_ids": ids}


_CWQ_META = ("sparql", "machine_question", "webqsp_ID", "webqsp_question", "created")


def _parse_cwq(record: dict[str, Any]) -> Parsed:
    """ToG/ToG-2/HydraRAG cwq.json (`answer` a string) or CWQ's own files (`answers` dicts)."""
    gold = record.get("answers", record.get("answer"))
    gold = _structured(gold, "answers") if isinstance(gold, str) and gold.startswith("[{") else gold
    parsed = _cwq_answer_dicts(gold) if isinstance(gold, list) else {"answers": [str(gold)]}
    return {"text": record["question"], "id": record["ID"], **parsed,
            "meta": {**_type(record, "compositionality_type"), **_pick(record, _CWQ_META)}}


def _parse_cwq_subgraph(record: dict[str, Any]) -> Parsed:
    """freebase/cwq_questions.jsonl: answers, answer_mids, gold sparql, compositionality_type."""
    return {"text": record["question"], "id": record["id"], "answers": _strings(record["answers"], "answers"),
            "answer_ids": _strings(record["answer_mids"], "answer_mids"),
            "meta": {**_type(record, "compositionality_type"), **_pick(record, ("sparql",))}}


def _parse_federation(record: dict[str, Any]) -> Parsed:
    """federation/questions.jsonl: one topic in both KGs, answers as names, mids and QIDs."""
    topics = {record["topic_mid"]: record.get("topic_name", ""), record["topic_qid"]: record.get("topic_name", "")}
    ids = _strings(record.get("answer_mids"), "answer_mids") + _strings(record.get("answer_qids"), "answer_qids")
    return {"text": record["question"], "id": record["id"], "answers": _strings(record["answer_names"], "answer_names"),
            "answer_ids": ids, "topics": topics,
            "meta": {"source": "federation", **_pick(record, ("freebase_relation", "wikidata_property"))}}


def _parse_webqsp_parses(record: dict[str, Any]) -> Parsed:
    """WebQSP's original shape: answers and topic entities inside every parse."""
    names, ids, topics = [], [], {}
    for parse in record["Parses"] or []:
        for answer in parse.get("Answers") or []:
            # ToG's eval: the EntityName, or the AnswerArgument when the name is null (values, dates)
            names.append(str(answer["AnswerArgument"] if answer.get("EntityName") is None else answer["EntityName"]))
            ids += [answer["AnswerArgument"]] if answer.get("AnswerType") == "Entity" else []
        if parse.get("TopicEntityMid"):
            topics[parse["TopicEntityMid"]] = parse.get("TopicEntityName") or ""
    sparql = next((p.get("Sparql") for p in record["Parses"] or [] if p.get("Sparql")), None)
    return {"text": record["RawQuestion"], "id": record["QuestionId"], "answers": names, "answer_ids": ids,
            "topics": topics, "meta": {"sparql": sparql, **_pick(record, ("ProcessedQuestion",))}}


def _parse_webqsp_tog2(record: dict[str, Any]) -> Parsed:
    """ToG-2's webqsp_test.json: id, question, answers (names and aliases), qid_topic_entity."""
    return {"text": record["question"], "id": record["id"], "answers": _strings(record["answers"], "answers")}


def _parse_grailqa(record: dict[str, Any]) -> Parsed:
    """GrailQA: answer [{answer_type, answer_argument, entity_name}], topics from graph_query entity nodes."""
    names, ids = [], []
    for answer in _structured(record["answer"], "answer") or []:
        # ToG's eval: entity_name when the key is there, else answer_argument (literals)
        names.append(str(answer["entity_name"] if "entity_name" in answer else answer["answer_argument"]))
        ids += [answer["answer_argument"]] if answer.get("answer_type") == "Entity" else []
    nodes = (_structured(record.get("graph_query"), "graph_query") or {}).get("nodes", [])
    topics = {n["id"]: n.get("friendly_name", "") for n in nodes if n.get("node_type") == "entity"}
    meta = _pick(record, ("function", "num_node", "num_edge", "domains", "s_expression", "sparql_query"))
    return {"text": record["question"], "id": record["qid"], "answers": names, "answer_ids": ids,
            "topics": topics, "meta": {**_type(record, "level"), **meta}}


def _parse_webquestions(record: dict[str, Any]) -> Parsed:
    """ToG/HydraRAG WebQuestions.json: url, question, answers (no id)."""
    return {"text": record["question"], "answers": _strings(record["answers"], "answers"),
            "meta": _pick(record, ("url",))}


def _answer_dict(value: Any) -> Parsed:
    """ToG's qald_10-en.json `answer` {QID or literal: name}: names are the values (ToG's gold)."""
    mapping = _mapping(value, "answer")
    return {"answers": list(mapping.values()), "answer_ids": list(mapping)}


def _parse_qald_tog(record: dict[str, Any]) -> Parsed:
    return {"text": record["question"], **_answer_dict(record["answer"]), "meta": _pick(record, ("sparql",))}


def _sparql_answers(documents: list[Any]) -> Parsed:
    """QALD's official answers (SPARQL-JSON): Wikidata IRIs become ids, literals and booleans names."""
    names: list[str] = []
    ids: list[str] = []
    for document in documents or []:
        try:
            result = parse_sparql_json(document, source="QALD answers")
        except EndpointError as exc:
            raise DatasetError(f"{exc}; fix the record's answers") from None
        for term in (t for row in result.rows for t in row.values()):
            short = WIKIDATA.short(term.value) if term.is_iri else None
            (ids if short else names).append(short or term.value)
    return {"answers": names, "answer_ids": ids}


def _parse_qald_official(record: dict[str, Any]) -> Parsed:
    """QALD-10's own file: multilingual texts, gold SPARQL, answers as SPARQL results (no names)."""
    meta = {"texts": _texts_by_language(record["question"]), "sparql": (record.get("query") or {}).get("sparql"),
            **_pick(record, ("aggregation",))}
    return {"text": _text(record["question"], "question"), "id": record["id"],
            **_sparql_answers(record["answers"]), "meta": meta}


def _parse_simpleqa(record: dict[str, Any]) -> Parsed:
    return {"text": record["question"], "answers": [str(record["answer"])], "meta": _type(record, "relation")}


def _relation_of(record: Mapping[str, Any]) -> dict[str, Any]:
    """T-REx / zsRE type: the `relation` field, else the part of `input` after [SEP]."""
    if record.get("relation"):
        return {"type": record["relation"]}
    head, sep, relation = str(record.get("input", "")).partition("[SEP]")
    return {"type": relation.strip()} if sep and relation.strip() else {}


def _parse_relation(record: dict[str, Any]) -> Parsed:
    """ToG/HydraRAG T-REX.json and Zero_Shot_RE.json: input 'subject [SEP] relation', answer, alias."""
    meta = _pick(record, ("template_questions", "wikipedia_title", "answer_numbers"))
    return {"text": record["input"], "answers": [str(record["answer"])],
            "aliases": _strings(record.get("alias"), "alias"), "meta": {**_relation_of(record), **meta}}


def _parse_kilt(record: dict[str, Any]) -> Parsed:
    """KILT's T-REx / zsRE: input, output [{answer, provenance}]."""
    names = [str(o["answer"]) for o in record["output"] or [] if isinstance(o, dict) and o.get("answer")]
    return {"text": record["input"], "id": record.get("id"), "answers": names[:1], "aliases": names[1:],
            "meta": _relation_of(record)}


def _parse_creak(record: dict[str, Any]) -> Parsed:
    return {"text": record["sentence"], "id": record.get("ex_id"), "answers": [str(record["label"])],
            "meta": {**_type(record, "label"), **_pick(record, ("explanation", "entity", "en_wiki_pageid"))}}


def _parse_fever(record: dict[str, Any]) -> Parsed:
    label = record["label"]
    if label not in FEVER_SYNONYMS:
        raise DatasetError(f"fever label {label!r} is none of {', '.join(FEVER_SYNONYMS)}: fix the record")
    return {"text": record["claim"], "id": record.get("id"), "answers": [label],
            "meta": {**_type(record, "label"), **_pick(record, ("verifiable", "evidence"))}}


def _parse_plain(record: dict[str, Any]) -> Parsed:
    """A plain question: `question`, and optionally `id` and gold `answers`/`answer` names (topics: TOPIC_FIELDS)."""
    gold = record.get("answers", record.get("answer"))
    return {"text": record["question"], "id": record.get("id"),
            "answers": [] if gold in (None, "") else _strings(gold, "answers"),
            "meta": _pick(record, ("type",))}


def _parse_hotpot(record: dict[str, Any]) -> Parsed:
    """ToG-2/HydraRAG hotpotadv: question, answer, adversarial paragraphs and rationale."""
    return {"text": record["question"], "id": record.get("qas_id"), "answers": [str(record["answer"])],
            "meta": _pick(record, ("paragraphs", "rationale"))}


# Tried in order: the more specific layouts first.
SHAPES: tuple[Shape, ...] = (
    Shape("qald-official", ("qald",), ("id", "question", "answers", "query"), _parse_qald_official),
    Shape("webqsp-parses", ("webqsp",), ("QuestionId", "RawQuestion", "Parses"), _parse_webqsp_parses),
    Shape("grailqa", ("grailqa",), ("qid", "question", "answer"), _parse_grailqa),
    Shape("federation", ("webqsp",), ("id", "question", "topic_mid", "topic_qid", "answer_names"), _parse_federation),
    Shape("cwq-subgraph", ("cwq",), ("id", "question", "answers", "answer_mids"), _parse_cwq_subgraph),
    Shape("cwq-original", ("cwq",), ("ID", "question", "answers"), _parse_cwq),
    Shape("cwq", ("cwq",), ("ID", "question", "answer"), _parse_cwq),
    Shape("webqsp-tog2", ("webqsp",), ("id", "question", "answers"), _parse_webqsp_tog2),
    Shape("webquestions", ("webquestions",), ("question", "answers"), _parse_webquestions),
    Shape("qald-tog", ("qald",), ("question", "answer", "sparql"), _parse_qald_tog),
    Shape("simpleqa", ("simpleqa",), ("question", "answer", "relation"), _parse_simpleqa),
    Shape("relation", ("zeroshotre", "trex"), ("input", "answer"), _parse_relation),
    Shape("kilt", ("trex", "zeroshotre"), ("input", "output"), _parse_kilt),
    Shape("creak", ("creak",), ("sentence", "label"), _parse_creak),
    Shape("fever", ("fever",), ("claim", "label"), _parse_fever),
    Shape("hotpot", ("hotpot",), ("qas_id", "question", "answer"), _parse_hotpot),
    Shape("plain", ("plain",), ("question",), _parse_plain),  # last: any record with a question, gold or not
)


def detect_shape(record: Mapping[str, Any], dataset: str | None = None, strict: bool = False,
                 source: str = "record") -> Shape:
    """The first shape whose fields `record` has; `dataset` is preferred, and required when `strict`."""
    preferred = [s for s in SHAPES if dataset in s.datasets]
    candidates = preferred if strict else preferred + [s for s in SHAPES if s not in preferred]
    found = next((s for s in candidates if not s.missing(record)), None)
    if found is None:
        nearest = min(candidates or SHAPES, key=lambda s: (len(s.missing(record)), -len(s.required)))
        fields = ", ".join(sorted(map(str, record))[:12]) or "none"
        raise DatasetError(
            f"{source} fits no {dataset or 'known'} question shape: it has fields {fields} and lacks "
            f"{', '.join(nearest.missing(record))} of the nearest ({nearest.name}); convert it or pass the right dataset")
    return found


# -- loading ---------------------------------------------------------------------------------------
def load_dataset(path_or_name: str | os.PathLike[str], dataset: str | None = None) -> list[Question]:
    """All questions of a file (or a BUILTIN_FILES name), normalised; `dataset` overrides detection."""
    if is_rog(path_or_name):  # RoG/GCR subgraph parquet files: kgfed.engine.harness.rog
        from .rog import load_questions

        rog = load_questions(path_or_name)
        return _unique_ids([replace(q, dataset=canonical_dataset(dataset)) for q in rog] if dataset else rog)
    path = resolve_path(path_or_name)
    records = text_records(path) if path.suffix.lower() in TEXT_SUFFIXES else read_records(path)
    if not records:
        raise DatasetError(f"{path} holds no questions: pass a non-empty question file")
    wanted = canonical_dataset(dataset) if dataset else None
    hint = wanted or ("plain" if path.suffix.lower() in TEXT_SUFFIXES else dataset_from_name(path))
    shape = detect_shape(records[0], hint, strict=wanted is not None, source=f"{path} record 0")
    name = hint if hint in shape.datasets else shape.datasets[0]
    return _unique_ids([build_question(shape, rec, i, name, str(path)) for i, rec in enumerate(records)])


def is_rog(path_or_name: str | os.PathLike[str]) -> bool:
    """A RoG/GCR parquet file, or a directory holding them (rmanluo/RoG-cwq, RoG-webqsp)."""
    path = Path(path_or_name)
    return path.suffix == ".parquet" or (path.is_dir() and next(path.rglob("*.parquet"), None) is not None)


def build_question(shape: Shape, record: dict[str, Any], index: int, dataset: str, source: str = "") -> Question:
    """One record as a Question: the shape's parts plus topics from the common topic fields."""
    missing = shape.missing(record)
    if missing:
        raise DatasetError(f"{source} record {index} lacks {', '.join(missing)} ({shape.name} shape): fix the record")
    try:
        parts = shape.parse(record)
    except (KeyError, TypeError, AttributeError) as exc:
        raise DatasetError(f"{source} record {index} ({shape.name} shape) is malformed "
                           f"({exc.__class__.__name__}: {exc}): fix the record") from None
    if shape.name == "plain":
        _check_plain_topics(record, index, source)
    topics, unlinked = _topics(record, parts.get("topics", {}))
    meta = {**parts.get("meta", {}), **({"unlinked_topics": unlinked} if unlinked else {})}
    raw_id = parts.get("id")
    return Question(
        id=f"{dataset}-{index}" if raw_id in (None, "") else str(raw_id),
        text=_text(parts["text"], "question"),
        topics=topics,
        answers=list(parts.get("answers", [])),
        answer_ids=_ids_by_kg(parts.get("answer_ids", [])),
        aliases=_unique(parts.get("aliases", [])),
        meta=meta,
        dataset=dataset,
    )


PLACEHOLDER_IDS = ("UnknownMID", "UnknownQID", "None")  # the benchmark files' "no id" topics: dropped, not refused


def _check_plain_topics(record: Mapping[str, Any], index: int, source: str) -> None:
    """A plain question file's topic that is no entity id of any KG (a typo, a name in the ids column) is an
    error, as `kgfed ask --topic` makes it: dropped silently, the question would be answered {NULL}."""
    for name in (n for n in TOPIC_FIELDS if n in record):
        bad = next((i for i in _topic_mapping(record[name], name) if kg_of(i) is None and i not in PLACEHOLDER_IDS), None)
        if bad is not None:
            raise DatasetError(f"{source} question {index + 1}: topic {bad!r} is no entity id of any KG: use m.0abc for Freebase, "
                               "Q42 for Wikidata (or leave the topics empty to link them from the question)")


def _topics(record: Mapping[str, Any], extra: Mapping[str, str]) -> tuple[dict[str, dict[str, str]], list[str]]:
    """Topic entities from every topic field of the record plus the shape's own, grouped by KG."""
    topics: dict[str, dict[str, str]] = {}
    unlinked: list[str] = []
    sources = [_topic_mapping(record[name], name) for name in TOPIC_FIELDS if name in record] + [dict(extra)]
    for mapping in sources:
        grouped, lost = _group_topics(mapping)
        for kg, ids in grouped.items():
            for entity_id, name in ids.items():
                topics.setdefault(kg, {}).setdefault(entity_id, name)
        unlinked += lost
    return topics, _unique(unlinked)


def _unique_ids(questions: list[Question]) -> list[Question]:
    """A repeated id gets '#2', '#3' ... so ids stay keys (the first keeps the file's id)."""
    seen: dict[str, int] = {}
    for question in questions:
        count = seen[question.id] = seen.get(question.id, 0) + 1
        if count > 1:
            question.id = f"{question.id}#{count}"
    return questions


# -- gold answers ----------------------------------------------------------------------------------
def has_gold(question: Question) -> bool:
    """Whether a question carries gold answers (names or ids) a prediction can be scored against."""
    return bool(question.answers or any(question.answer_ids.values()))


def require_gold(questions: Sequence[Question], source: str | Path) -> None:
    """A one-line DatasetError when none of `questions` has gold answers (a plain question file)."""
    if questions and not any(has_gold(q) for q in questions):
        raise DatasetError(f"{source} has no gold answers (plain questions): predictions can only be scored against "
                           "a question file with answers (e.g. --gold ../shared/data/freebase/cwq_questions.jsonl)")


def gold_answers(question: Question, dataset: str | None = None) -> list[str]:
    """The names ToG's eval (ToG-2's for fever and hotpot) compares a prediction with.

    cwq: each answer plus its aliases (aliases exist only in CWQ's original shape); fever: the
    label plus FEVER_SYNONYMS; every other dataset: the answers as the file gives them (webqsp's
    ToG-2 list already mixes names and aliases; zsRE/T-REx `alias` is not gold for ToG).
    """
    name = canonical_dataset(dataset or question.dataset)
    golds = list(question.answers)
    if name == "cwq":
        golds += question.aliases
    elif name == "fever":
        golds += [s for label in question.answers for s in FEVER_SYNONYMS.get(label, [])]
    return _unique(golds)


def fill_answer_names(questions: Iterable[Question], names: Mapping[str, str]) -> list[Question]:
    """Copies whose answers gain the names of their answer ids (e.g. from `kg.labels`), for files
    like QALD-10's own that give gold answers as ids only."""
    out = []
    for question in questions:
        found = [names[i] for ids in question.answer_ids.values() for i in ids if names.get(i)]
        out.append(replace(question, answers=_unique(question.answers + found)))
    return out
