"""The gold of one question, as the `--llm gold` stand-in (`gold_llm.GoldLLM`) knows it, and how evidence is read.

`Gold.of(question)` takes a question of the run's file: its gold answers (names and aliases), answer
ids, topic entities, and the relations and triple patterns of its gold query (CWQ's `sparql`; the
federation set's `freebase_relation`/`wikidata_property`). `GoldLLM.resolve` then fills in what the
KGs say (the ids the gold query binds, their labels) and `Gold.finish` compiles the matchers.

The questions the repliers (`gold_replies`) ask of it: which gold answer the evidence shows, as the
evidence writes it (`answer_in`: a whole KG element in triplets and paths, word boundaries in prose),
how much of the gold query a relation or a path text follows (`relation_score`, `text_score`), and
the chains of relation steps from each topic entity to the answer (`chains`), for the plans and
thinking indicators the stand-in writes without naming an answer.
"""
from __future__ import annotations

import re
import string
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

_WORDS = re.compile(r"[._|/:#]+")


def normalise(text: str) -> str:
    """Case folded, punctuation dropped, whitespace collapsed: the second way a prompt's question is matched."""
    text = "".join(" " if ch in string.punctuation else ch for ch in text.casefold())
    return " ".join(text.split())


def relation_words(relation: str) -> str:
    return _WORDS.sub(" ", relation).strip()


def _alternation(names: Iterable[str]) -> re.Pattern[str] | None:
    """One case-insensitive pattern matching any of `names` between word boundaries (longest first)."""
    unique = sorted({n.strip() for n in names if n and n.strip()}, key=lambda n: (-len(n), n))
    if not unique:
        return None
    return re.compile(r"(?<![\w])(?:" + "|".join(re.escape(n) for n in unique) + r")(?![\w])", re.I)


_OPEN = set("\n,{([;:>\"'|")  # `|`: a markdown table cell (the sog profile's results)
_CLOSE = set("\n,})];<\"'.|")


_ID_AFTER = re.compile(r"\((?:[mg]\.[0-9a-z_]+|[QP][1-9]\d*)\)")  # `label (ID)`, as the wmde profile writes an entity


def _whole(line: str, start: int, end: int) -> bool:
    """Whether line[start:end] stands as a whole KG element (delimiters, or the line's ends, on both sides)."""
    before = line[:start].rstrip(" ")
    after = line[end:].lstrip(" ")
    opens = not before or before[-1] in _OPEN or before.endswith((" -", "-]-", "->"))
    if not opens:  # a role of an n-ary fact in lower-case words before the value: `; office holder Abdullah al-Thani`
        cut = max(before.rfind(ch) for ch in _OPEN)
        opens = cut >= 0 and re.fullmatch(r"[a-z][a-z ]*", before[cut + 1:].strip()) is not None
    closes = (not after or after[0] in _CLOSE or after.startswith(("- ", "-[", "<-", "(reverse)"))
              or _ID_AFTER.match(after) is not None)
    return opens and closes



_TRIPLE = re.compile(r"^\s*(\S+)\s+(ns:[\w.]+)\s+(\S+?)\s*\.?\s*$")
_NS_ENTITY = re.compile(r"^ns:([mg]\.[\w]+)$")


@dataclass
class Gold:
    """What the stand-in knows of one question: gold answers, gold-query relations and bound entities."""

    id: str
    text: str
    answers: list[str]                       # names and aliases from the file
    answer_ids: list[str]
    relations: list[str]                     # relation ids of the gold query (Freebase ids, Wikidata P-ids)
    topics: dict[str, str]                   # topic id -> name (every KG)
    sparql: str | None = None
    patterns: list[tuple[str, str, str]] = field(default_factory=list)  # gold query triple patterns (s, relation, o)
    # filled in by `GoldLLM.resolve`
    answer_names: list[str] = field(default_factory=list)     # file names first, then KG labels of answer ids
    entity_names: list[str] = field(default_factory=list)     # labels of bound non-answer, non-topic entities
    labels: dict[str, str] = field(default_factory=dict)      # bound id / relation id -> KG label
    bound: dict[str, set[str]] = field(default_factory=dict)  # gold query variable -> ids bound
    relation_forms: set[str] = field(default_factory=set)     # lower-cased ids, labels and compound pieces
    resolved: bool = False
    _answer_re: re.Pattern | None = None
    _entity_re: re.Pattern | None = None
    _relation_re: re.Pattern | None = None

    @classmethod
    def of(cls, question: Any) -> Gold:
        """From a `harness.datasets.Question` (any object with its fields: text, answers, aliases, answer_ids, meta, topics)."""
        meta = dict(getattr(question, "meta", {}) or {})
        sparql = meta.get("sparql") if isinstance(meta.get("sparql"), str) else None
        relations: list[str] = []
        patterns: list[tuple[str, str, str]] = []
        if sparql:
            for line in sparql.splitlines():
                m = _TRIPLE.match(line)
                if m:
                    patterns.append((m.group(1), m.group(2)[3:], m.group(3)))
            relations = [p[1] for p in patterns]
            if not relations:
                relations = [r for r in re.findall(r"ns:([a-z][\w]*(?:\.[\w]+){2,})", sparql)]
        for key in ("freebase_relation", "wikidata_property"):
            if isinstance(meta.get(key), str) and meta[key]:
                relations.append(meta[key])
        ids = [i for group in (getattr(question, "answer_ids", {}) or {}).values() for i in group]
        topics = {i: n for group in (getattr(question, "topics", {}) or {}).values() for i, n in group.items()}
        answers = list(dict.fromkeys([*getattr(question, "answers", []), *getattr(question, "aliases", [])]))
        return cls(str(getattr(question, "id", "")), question.text, [a for a in answers if a.strip()], ids, list(dict.fromkeys(relations)), topics, sparql, patterns)

    @property
    def has_gold(self) -> bool:
        return bool(self.answers or self.answer_ids)

    def finish(self) -> None:
        """Compile the matchers once the labels are known."""
        names = list(self.answers) + [self.labels[i] for i in self.answer_ids if self.labels.get(i)]
        self.answer_names = list(dict.fromkeys(n for n in names if n.strip()))
        answer_folded = {n.casefold() for n in self.answer_names}
        topic_ids = set(self.topics)
        bound_ids = {i for ids in self.bound.values() for i in ids} - set(self.answer_ids) - topic_ids
        self.entity_names = sorted({self.labels[i] for i in bound_ids if self.labels.get(i)} - {""},
                                   key=lambda n: n.casefold())
        self.entity_names = [n for n in self.entity_names if n.casefold() not in answer_folded]
        forms: set[str] = set()
        for rel in self.relations:
            forms.add(rel.casefold())
            parts = rel.split(".")
            if len(parts) == 6:  # the federation set writes a CVT relation as its two ids joined: a.b.c.d.e.f
                forms |= {".".join(parts[:3]).casefold(), ".".join(parts[3:]).casefold()}
            if self.labels.get(rel):
                forms.add(self.labels[rel].casefold())
        self.relation_forms = forms
        self._answer_re = _alternation(self.answer_names)
        self._entity_re = _alternation(self.entity_names)
        self._relation_re = _alternation(forms)
        self.resolved = True

    # -- what the evidence shows --
    def answer_in(self, evidence: str, *, prose: bool = False) -> str | None:
        """The first gold answer the evidence shows, as the evidence writes it, else None.

        KG evidence (triplets, paths, facts) must show it as a whole element: between delimiters
        (line ends, commas, braces, brackets, parentheses, arrows, quotes; an n-ary fact's lower-case
        role before it), so `Guatemala` is not read out of `Guatemala Department` or `Korea` out of
        `South Korea`; prose (passages, and lines of a path listing quoting a passage)
        between word boundaries."""
        return next(self.answers_in(evidence, prose=prose), None)

    def answers_in(self, evidence: str, *, prose: bool = False) -> Iterator[str]:
        """Every gold answer the evidence shows (see `answer_in`), in order, as written there."""
        if self._answer_re is None or not evidence:
            return
        for line in evidence.splitlines():
            text_line = prose or '-[wikipedia]-> "' in line or '-[web]-> "' in line
            for found in self._answer_re.finditer(line):
                if text_line or _whole(line, found.start(), found.end()):
                    yield found.group(0)

    def is_answer(self, name: str) -> bool:
        return bool(name.strip()) and name.strip().casefold() in {n.casefold() for n in self.answer_names}

    def is_entity(self, name: str) -> bool:
        folded = name.strip().casefold()
        return bool(folded) and (folded in {n.casefold() for n in self.entity_names} or self.is_answer(name))

    def relation_score(self, shown: str) -> float:
        """1 for a gold relation (id or label), a compound `a|b` by its share of gold legs, else 0."""
        key = shown.strip().casefold()
        if key in self.relation_forms:
            return 1.0
        if "|" in key:
            legs = key.split("|")
            if ".".join(legs) in self.relation_forms:
                return 1.0
            return sum(leg in self.relation_forms for leg in legs) / len(legs)
        return 0.0

    def text_score(self, text: str, *, prose: bool = False) -> float:
        """A path or fact text: 3 for a gold answer in it, 1 per gold relation, 0.5 per gold entity it names,
        minus 0.5 per PoG step (`{ -> r ->}`) off the gold query."""
        score = 3.0 if self.answer_in(text, prose=prose) else 0.0
        if self._relation_re is not None:
            score += len({m.group(0).casefold() for m in self._relation_re.finditer(text)})
        if self._entity_re is not None:
            score += 0.5 * len({m.group(0).casefold() for m in self._entity_re.finditer(text)})
        for step in re.findall(r"\{ -> (?:<- )?(.*?) ->\}", text):
            if self.relation_score(step) == 0.0:
                score -= 0.5
        return score

    def chains(self) -> list[tuple[str, list[str]]]:
        """Per topic entity, the relation steps of the gold query from it to the answer variable (`?x`).

        Bound nodes without a label (CVTs) join their two relations into one step `a|b`."""
        if not self.patterns:
            rels = self.relations[:1]
            return [(name, [relation_words(r) for r in rels]) for name in self.topics.values()] or [("", rels)]
        adjacency: dict[str, list[tuple[str, str]]] = {}
        for s, rel, o in self.patterns:
            adjacency.setdefault(s, []).append((rel, o))
            adjacency.setdefault(o, []).append((rel, s))
        out = []
        for term in adjacency:
            m = _NS_ENTITY.match(term)
            if not m or m.group(1) not in self.topics:
                continue
            route = self._route(adjacency, term, "?x")
            if route is None:
                continue
            steps: list[str] = []
            pending: list[str] = []
            for rel, node in route:
                pending.append(self.labels.get(rel) or relation_words(rel))
                if node == "?x" or self._named(node):
                    steps.append(" | ".join(pending))
                    pending = []
                else:
                    continue
            if pending:
                steps.append(" | ".join(pending))
            out.append((self.topics[m.group(1)], steps))
        return out

    def _named(self, node: str) -> bool:
        """A variable whose bindings have a label (a real entity, not a CVT); constants count as named."""
        if not node.startswith("?"):
            return True
        return any(self.labels.get(i) for i in self.bound.get(node[1:], ()))

    @staticmethod
    def _route(adjacency: Mapping[str, list[tuple[str, str]]], start: str, goal: str) -> list[tuple[str, str]] | None:
        previous: dict[str, tuple[str, str] | None] = {start: None}
        frontier = [start]
        while frontier:
            nxt = []
            for node in frontier:
                for rel, other in adjacency.get(node, ()):
                    if other not in previous:
                        previous[other] = (rel, node)
                        nxt.append(other)
            frontier = nxt
        if goal not in previous:
            return None
        route = []
        node = goal
        while previous[node] is not None:
            rel, prev = previous[node]  # type: ignore[misc]
            route.append((rel, node))
            node = prev
        return route[::-1]

