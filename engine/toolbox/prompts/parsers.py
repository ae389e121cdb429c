"""Forgiving parsers of the methods' LLM replies: scores, verdicts, answers, selections, JSON.

Real models (and small local ones most of all) answer off format: a relation named without its
namespace, scores in prose, JSON in a fence or cut at the token cap, `{Yes}` without braces. Each
parser reads the paper's own format first, then the usual ways a model departs from it, and maps
names back onto the candidates offered (exactly, case-insensitively, then fuzzily). Parsers never
crash on odd replies: they return what is usable or raise a one-line `LLMError`; where a paper has a
fallback (ToG's "all entities are created equal") they take it and count a `parse_fallbacks`.
"""
from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ....cache.costs import charge
from ....sparql.errors import LLMError

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)"
# `{rel (Score: 0.4)}` with ToG's own `))}` typo, any case, `Score=`/`score -` variants
_TOG_RELATION = re.compile(r"\{\s*([^{}()]+?)\s*\(\s*score\s*[:=\-]?\s*(" + _NUMBER + r")\s*\)+\s*\}", re.I)
# a line naming one relation with an optional score: `1. rel (Score: 0.5)`, `- rel: 0.5`, `rel - 0.5`
# a run of numbers on one line: `0.0, 1.0, 0.0` or `[0.2; 0.8]`
_NUMBER_RUN = re.compile(r"[ \t]*\[?[ \t]*((?:" + _NUMBER + r"(?:[ \t]*[,;][ \t]*|[ \t]+))*" + _NUMBER + r")")
_LINE = re.compile(r"^\s*(?:\d+[.)]|[-*•])?\s*[*`'\"]*\{?\s*([^\s{}()\[\]:;,`'\"*]+)\s*\}?[*`'\"]*\s*(?:\(\s*(?:score\s*[:=]?\s*)?("
                   + _NUMBER + r")\s*\)|[:=\-]\s*(?:score\s*[:=]?\s*)?(" + _NUMBER + r")(?![\w.]))?", re.I)


def _excerpt(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat[:width] + ("…" if len(flat) > width else "")


def _norm(name: str) -> str:
    return re.sub(r"[\s_]+", "_", name.strip().strip("'\"`*[]{}.,;:").lower())


class _Matcher:
    """Maps names the LLM wrote back onto the offered candidates: exact, case-insensitive, fuzzy."""

    def __init__(self, candidates: Sequence[str], cutoff: float = 0.85):
        self.candidates = list(candidates)
        self.exact = {c: c for c in self.candidates}
        self.folded: dict[str, str] = {}
        for c in self.candidates:
            self.folded.setdefault(_norm(c), c)
        self.cutoff = cutoff

    def __call__(self, name: str) -> str | None:
        name = name.strip()
        if name in self.exact:
            return name
        key = _norm(name)
        if key.startswith("wiki.relation.") and key[14:] in self.folded:  # ToG's Wikidata example spells labels so
            return self.folded[key[14:]]
        if key in self.folded:
            return self.folded[key]
        close = difflib.get_close_matches(key, list(self.folded), n=1, cutoff=self.cutoff)
        if close:
            return self.folded[close[0]]
        tails = [c for k, c in self.folded.items() if k.endswith("." + key)]  # `nationality` → `people.person.nationality`
        if len(tails) == 1:
            return tails[0]
        # the first leg of one compound (CVT) relation, as a real model writes it: `a` → `a|b`
        heads = [c for k, c in self.folded.items() if k.startswith(key + "|")]
        return heads[0] if len(heads) == 1 else None


def _json_values(text: str) -> list:
    """Every JSON object or array embedded in the text (outermost first), ignoring what does not parse."""
    decoder = json.JSONDecoder()
    found, i = [], 0
    while i < len(text):
        if text[i] in "[{":
            try:
                value, end = decoder.raw_decode(text, i)
            except ValueError:
                i += 1
                continue
            found.append(value)
            i = end
        else:
            i += 1
    return found


_JSON_FIELD = re.compile(r'"([^"\\]{1,60})"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|true|false|null|\[[^\[\]]*\])(?=\s*[,}\]])')


def json_object(text: str) -> dict | None:
    """The first JSON object of a reply (inside a ```json fence or not), else None.

    A reply cut at the token cap inside its object (`{"reasoning": "...", "answer": "Gua`) keeps the
    complete `"field": value` pairs written before the cut. None means nothing readable.
    """
    for value in _json_values(text):
        if isinstance(value, dict):
            return value
    start = text.find("{")
    if start < 0:
        return None
    fields: dict[str, Any] = {}
    for key, raw in _JSON_FIELD.findall(text[start:]):
        try:
            fields.setdefault(key, json.loads(raw))
        except ValueError:
            continue
    return fields or None


def _pairs_from_json(value) -> list[tuple[str, float | None]]:
    if isinstance(value, dict):
        if "relation" in value or "name" in value:
            name = value.get("relation", value.get("name"))
            score = value.get("score")
            return [(str(name), float(score) if isinstance(score, (int, float)) else None)]
        pairs: list[tuple[str, float | None]] = []
        for key, score in value.items():
            if isinstance(score, (int, float)) and not isinstance(score, bool):
                pairs.append((str(key), float(score)))
            elif isinstance(score, (list, dict)):
                pairs.extend(_pairs_from_json(score))
        return pairs
    if isinstance(value, list):
        pairs = []
        for item in value:
            if isinstance(item, str):
                pairs.append((item, None))
            elif isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str):
                pairs.append((item[0], float(item[1]) if isinstance(item[1], (int, float)) else None))
            elif isinstance(item, dict):
                pairs.extend(_pairs_from_json(item))
        return pairs
    return []


def parse_relation_scores(reply: str, candidates: Sequence[str]) -> list[tuple[str, float]]:
    """(relation, score) pairs from a relation-pruning reply, restricted to the offered candidates.

    Reads ToG's `{rel (Score: x)}` format first, then JSON (lists, `{rel: score}`), then one relation
    per line, then bare mentions of candidates. Names match exactly, case-insensitively or fuzzily;
    missing scores become equal shares. Raises `LLMError` when nothing usable is found.
    """
    match = _Matcher(candidates)
    found: list[tuple[str, float | None]] = [(m.group(1), float(m.group(2))) for m in _TOG_RELATION.finditer(reply)]
    if not found:
        for value in _json_values(reply):
            found.extend(_pairs_from_json(value))
    if not any(match(name) for name, _ in found):
        found = []
        for line in reply.splitlines():
            m = _LINE.match(line)
            if m and match(m.group(1)):
                score = m.group(2) or m.group(3)
                found.append((m.group(1), float(score) if score else None))
    if not any(match(name) for name, _ in found):
        lowered = reply.lower()
        hits = [(lowered.find(c.lower()), c) for c in candidates if c and c.lower() in lowered]
        found = [(c, None) for _, c in sorted(hits)]
    pairs: dict[str, float | None] = {}
    for name, score in found:
        if ";" in name:  # ToG skips `{a; b (Score: …)}`
            continue
        relation = match(name)
        if relation is not None and relation not in pairs:
            pairs[relation] = score
    if not pairs:
        raise LLMError(f"the LLM named none of the {len(candidates)} offered relations in its reply "
                       f"({_excerpt(reply)!r}): check the model follows ToG's '{{relation (Score: x)}}' format, or prune with sbert/bm25")
    if all(score is None for score in pairs.values()):
        share = 1.0 / len(pairs)
        return [(r, share) for r in pairs]
    return [(r, max(0.0, s) if s is not None else 0.0) for r, s in pairs.items()]


def _normalise(scores: list[float]) -> list[float]:
    total = sum(scores)
    if total <= 0:
        return [1.0 / len(scores)] * len(scores) if scores else []
    return [s / total for s in scores]


def parse_entity_scores(reply: str, candidates: Sequence[str]) -> list[float]:
    """Scores for `candidates` (in order) from an entity-scoring reply, normalised to sum 1.

    Reads the first run of numbers (the line after ToG's `Score: `), else every decimal in the
    reply as ToG's `clean_scores` does, else `name: score` lines. A count that matches none of
    these gives every candidate an equal share, as ToG does ("All entities are created equal").
    """
    n = len(candidates)
    if n == 0:
        return []
    after_label = re.split(r"scores?\s*:", reply, maxsplit=1, flags=re.I)
    for text in ([after_label[1]] if len(after_label) == 2 else []) + [reply]:
        run = _NUMBER_RUN.match(text)
        if run:
            numbers = [float(x) for x in re.findall(_NUMBER, run.group(1))]
            if len(numbers) == n:
                return _normalise([max(0.0, x) for x in numbers])
    decimals = [float(x) for x in re.findall(r"\d+\.\d+", reply)]  # ToG's rule
    if len(decimals) == n:
        return _normalise(decimals)
    by_name: dict[str, float] = {}
    match = _Matcher(candidates)
    for line in reply.splitlines():
        m = re.match(r"^\s*(?:[-*•]|\d+[.)])?\s*\"?(.+?)\"?\s*[:=\-]\s*(" + _NUMBER + r")\s*$", line)
        if m and (name := match(m.group(1))) is not None:
            by_name.setdefault(name, max(0.0, float(m.group(2))))
    if by_name:
        return _normalise([by_name.get(c, 0.0) for c in candidates])
    prose = _prose_entity_scores(reply, match)  # "the score for Guatemala would be 1, … all other entities would be 0"
    if prose is not None:
        return _normalise([prose[0].get(c, prose[1]) for c in candidates])
    charge("parse_fallbacks")  # ToG: "All entities are created equal"
    return [1.0 / n] * n


_PROSE_VERB = r"\s*(?:would\s+be|will\s+be|should\s+be|is|are|of|=|:)\s*"
_PROSE_SCORE = re.compile(r"score\s+(?:for|of)\s+(?:the\s+entity\s+)?[\"'“]?(.+?)[\"'”]?" + _PROSE_VERB + "(" + _NUMBER + r")(?![\w.])", re.I)
_PROSE_OTHERS = re.compile(r"(?:all\s+)?(?:the\s+)?other\s+entit\w*" + _PROSE_VERB + "(" + _NUMBER + r")(?![\w.])", re.I)


def _prose_entity_scores(reply: str, match: _Matcher) -> tuple[dict[str, float], float] | None:
    """Scores a reply states in prose, and the score it gives "all other entities" (0 if unsaid)."""
    named: dict[str, float] = {}
    for m in _PROSE_SCORE.finditer(reply):
        if (name := match(m.group(1))) is not None:
            named.setdefault(name, max(0.0, float(m.group(2))))
    if not named:
        return None
    others = _PROSE_OTHERS.search(reply)
    return named, max(0.0, float(others.group(1))) if others else 0.0


def braced(reply: str) -> list[str]:
    """Every `{...}` span in the reply, stripped, in order."""
    return [m.strip() for m in re.findall(r"\{([^{}]*)\}", reply)]


def parse_sufficient(reply: str) -> bool:
    """True when the reply says `{Yes}` (ToG's evaluation); a leading bare `Yes` also counts."""
    for span in braced(reply):
        word = re.sub(r"[^a-z]", "", span.lower())
        if word in {"yes", "no"}:
            return word == "yes"
    m = re.match(r"\W*(?:response\W*|answer\W*|a\W*:)?\W*(yes|no)\b", reply.strip(), re.I)
    return bool(m and m.group(1).lower() == "yes")


def extract_answer(reply: str) -> str:
    """The answer in braces (ToG/PoG `{answer}`); empty when the reply has none.

    Skips `{Yes}`/`{No}` verdicts, so `{Yes}. ... the answer is {De Smet}` gives `De Smet`.
    """
    for span in braced(reply):
        if re.sub(r"[^a-z]", "", span.lower()) not in {"yes", "no"} and span:
            return span
    return ""


def parse_path_selection(reply: str, count: int) -> list[int]:
    """0-based indices of the paths PoG's selection reply chose (`top_list: {path 1, path 3}`).

    Falls back to `Path N`/`Candidate Edge N` mentions anywhere; out-of-range numbers are dropped.
    Raises `LLMError` when the reply selects nothing.
    """
    numbers: list[int] = []
    m = re.search(r"ist\s*:?\s*[\{\[]([^{}\[\]]+)[\}\]]", reply, re.I)
    if m:
        numbers = [int(x) for x in re.findall(r"\d+", m.group(1))]
    if not any(1 <= x <= count for x in numbers):
        numbers = [int(x) for x in re.findall(r"(?:path|edge)\s*:?\s*(\d+)", reply, re.I)]
    chosen = list(dict.fromkeys(x - 1 for x in numbers if 1 <= x <= count))
    if not chosen:
        raise LLMError(f"the LLM selected none of the {count} candidate paths ({_excerpt(reply)!r}): "
                       "check the model answers 'top_list: {path 1, path 2, path 3}', or use an LLM-free strategy ('fuzzy')")
    return chosen


@dataclass
class QuestionAnalysis:
    """PoG's question analysis: the thinking indicator, split questions and the predicted depth."""

    indicator: str = ""
    split_questions: list[str] = field(default_factory=list)
    depth: int = 1
    raw: str = ""


def parse_question_analysis(reply: str) -> QuestionAnalysis:
    """Thinking CoT, split questions and D_predict from a PoG question-analysis reply.

    D_predict is the largest number of hops between `answer(...)` and an end of the indicator chain
    (`"Nijmegen" - service by - airport - owned by - answer(country) - border with - "France"` → 2).
    """
    indicator = ""
    m = re.search(r"thinking\s*cot\s*:\s*(.+)", reply, re.I)
    if m:
        indicator = m.group(1).strip()
    splits = [q.strip() for q in re.findall(r"split_question\s*\d*\s*:\s*(.+)", reply, re.I)]
    depth = 1
    if indicator:
        parts = [p.strip() for p in indicator.split(" - ")]
        answer = next((i for i, p in enumerate(parts) if p.lower().startswith("answer")), len(parts) - 1)
        depth = max(1, (max(answer, len(parts) - 1 - answer) + 1) // 2)
    return QuestionAnalysis(indicator, splits, depth, reply)
