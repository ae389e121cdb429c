"""`--llm gold`: a gold-guided stand-in for an LLM, for ceilings, regression tests and cost counts.

It is NOT a model. It reads the gold of the run's question file and nothing else: the gold answers
(names, aliases and ids), the relations of the gold query (CWQ's `sparql`; the federation set's
`freebase_relation`/`wikidata_property`) and the entities the gold query binds (it is run once per
question with every variable projected, rewritten for standard engines by `sparql.rewrite`, outside
the question's cost counter), with the KG labels of those ids and relations. With that it answers
every prompt kind of the six methods (`toolbox.prompts`) in exactly the format the prompt asks for:

- selection and scoring (ToG relations and entities, PoG/HydraRAG paths and edges, INSES triplets,
  PRoH entities, directions and paths): what lies on the gold query scores highest (a gold relation,
  a compound `a|b` by its share of gold legs, an entity the gold query binds, a path by its gold
  relations and entities, minus its other relations; a path showing a gold answer first);
- sufficiency and answers (ToG/PoG/ToG-2 `{Yes}`/`{No}`, INSES `determination`, PRoH `answers`,
  final answers): "sufficient" and a named answer only when a gold answer (name, alias or KG label
  of an answer id, matched case-insensitively between word boundaries) is in the evidence the prompt
  shows (its triplets, paths, passages or selected facts, never the few-shot examples), the name as
  the evidence writes it; else `{No}` and the answer `Unknown`;
- planning and analysis, derived from the gold and never naming a gold answer: PoG's question
  analysis gives a thinking indicator `"Topic" - relation words - entity - … - answer(entity)` per
  topic along the gold query (a nameless bound node, a CVT, joins its two relations into one step)
  and one split question per topic; HydraRAG's source selection takes every source offered, its
  refinement repeats the question with the same indicator; the LLM-supplement prediction names the
  named entities the gold query binds between topics and answers; INSES's router says multi-hop when
  the gold query has 3 or more relations, its entity extraction names the topic entities; PRoH's
  plan is one sub-question, the question itself, and its refinement changes nothing.

Which question a prompt belongs to: every prompt of the six methods contains the question text; the
stand-in finds the longest question of the file contained in the prompt, exactly, else after
normalising both (case folded, punctuation dropped, whitespace collapsed). A prompt naming no
question of the file, or of a kind it does not know, is a one-line `LLMError`.

Costs are counted as for any provider (`LLM.complete`): one call each, tokens estimated at four
characters a token (prompt plus system message; the reply), so runs compare in calls and size.
"""
from __future__ import annotations

import asyncio
import contextvars
import json
import os
import re
import string
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...sparql.dialects import dialect_of
from ...sparql.errors import KgfedError, LLMError
from . import prompts as P
from .llm import LLM, Completion

# How `gold:FILE` is read: the harness sets it to `harness.datasets.load_dataset` (toolbox cannot import the harness).
question_loader: Callable[[str], list[Any]] | None = None
CHARS_PER_TOKEN = 4
MAX_SELECTED = 5     # INSES triplets selected per navigation step
UNKNOWN = "Unknown"
_WORDS = re.compile(r"[._|/:#]+")


def tokens(text: str) -> int:
    """The stand-in's token estimate: one token per four characters (at least one for a non-empty text)."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


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


_OPEN = set("\n,{([;:>\"'")
_CLOSE = set("\n,})];<\"'.")


def _whole(line: str, start: int, end: int) -> bool:
    """Whether line[start:end] stands as a whole KG element (delimiters, or the line's ends, on both sides)."""
    before = line[:start].rstrip(" ")
    after = line[end:].lstrip(" ")
    opens = not before or before[-1] in _OPEN or before.endswith((" -", "-]-", "->"))
    if not opens:  # a role of an n-ary fact in lower-case words before the value: `; office holder Abdullah al-Thani`
        cut = max(before.rfind(ch) for ch in _OPEN)
        opens = cut >= 0 and re.fullmatch(r"[a-z][a-z ]*", before[cut + 1:].strip()) is not None
    closes = not after or after[0] in _CLOSE or after.startswith(("- ", "-[", "<-", "(reverse)"))
    return opens and closes


# -- the gold of one question ------------------------------------------------------------------------------
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


# -- the stand-in ---------------------------------------------------------------------------------------------
class GoldLLM(LLM):
    """The gold-guided stand-in (`--llm gold`): replies from the question file's gold; see the module docstring."""

    name = "gold"

    def __init__(self, questions: Iterable[Any], *, source: str = "the question file"):
        super().__init__("gold-stand-in")
        self.golds: list[Gold] = [Gold.of(q) for q in questions]
        if not any(g.has_gold for g in self.golds):
            raise LLMError(f"{source} has no gold answers: --llm gold needs a question file with answers "
                           "(CWQ, WebQSP, the federation set ...); use a real LLM or --llm none for plain questions")
        self.by_text: dict[str, Gold] = {}
        self.by_norm: dict[str, Gold] = {}
        for gold in self.golds:
            self.by_text.setdefault(gold.text, gold)
            self.by_norm.setdefault(normalise(gold.text), gold)
        self._texts = sorted(self.by_text, key=len, reverse=True)
        self._norms = sorted(self.by_norm, key=len, reverse=True)
        self.kgs: dict[str, Any] = {}
        # $KGFED_GOLD_TRACE: a JSONL file noting, per call, whether a gold answer was shown and named (bench/gold_report.py)
        self.trace: str | None = os.environ.get("KGFED_GOLD_TRACE") or None
        self._locks: dict[int, asyncio.Lock] = {}

    @classmethod
    def from_file(cls, path: str) -> GoldLLM:
        """The stand-in for the questions of `path` (`gold:PATH`; `kgfed run PATH --llm gold` names the run's file)."""
        if not path:
            raise LLMError("--llm gold needs the run's question file: use kgfed run QUESTIONS --llm gold (or --llm gold:QUESTIONS)")
        if question_loader is None:
            raise LLMError("--llm gold reads a question file through the run harness: use kgfed run QUESTIONS --llm gold")
        return cls(question_loader(path), source=f"question file {path}")

    def bind(self, kgs: Mapping[str, Any]) -> None:
        """The run's KGs: the gold query is run and gold ids are labelled over them (outside any question's costs)."""
        self.kgs = dict(kgs)

    # -- which question --
    def gold_for(self, prompt: str) -> Gold:
        """The gold of the question the prompt is about (longest contained question text, exact then normalised)."""
        for text in self._texts:
            if text and text in prompt:
                return self.by_text[text]
        folded = normalise(prompt)
        for text in self._norms:
            if text and text in folded:
                return self.by_norm[text]
        raise LLMError(f"--llm gold: the prompt ({_first_words(prompt)}) names none of the {len(self.golds)} questions "
                       "of the question file: run the stand-in over the same file as the run (kgfed run FILE --llm gold)")

    async def resolve(self, gold: Gold) -> Gold:
        """Run the gold query (every variable projected) and label the gold ids, once per question."""
        if gold.resolved:
            return gold
        lock = self._locks.setdefault(id(gold), asyncio.Lock())
        async with lock:
            if not gold.resolved:
                # a fresh context: the gold's own queries are charged to no question
                await asyncio.create_task(self._resolve(gold), context=contextvars.Context())
        return gold

    async def _resolve(self, gold: Gold) -> None:
        try:
            if gold.sparql:
                await self._run_gold_query(gold)
            await self._label(gold)
        except KgfedError:
            pass  # the stand-in then knows the answers and relation ids only
        gold.finish()

    async def _run_gold_query(self, gold: Gold) -> None:
        from ...sparql.rewrite import to_standard_sparql

        kg = next((kg for kg in self.kgs.values() if any(kg.dialect is dialect_of(i) for i in gold.answer_ids + list(gold.topics))), None)
        if kg is None:
            return
        query = re.sub(r"SELECT\s+(DISTINCT\s+)?(\?\w+\s*)+", "SELECT DISTINCT * ", gold.sparql or "", count=1, flags=re.I)
        try:
            result = await kg.select(to_standard_sparql(query))
        except KgfedError:
            result = await kg.select(query)
        for row in result.rows:
            for var, term in row.items():
                short = kg.dialect.short(term.value) if term.is_iri else None
                if short:
                    gold.bound.setdefault(var, set()).add(short)

    async def _label(self, gold: Gold) -> None:
        ids = set(gold.answer_ids) | {i for ids in gold.bound.values() for i in ids}
        for kg in self.kgs.values():
            mine = sorted(i for i in ids if kg.dialect is dialect_of(i))
            # opaque relation ids (Wikidata P-ids) are shown by their labels: those are what prompts hold
            relations = [r for r in gold.relations if kg.dialect.relation_labels and re.fullmatch(r"P\d+", r)]
            if not mine and not relations:
                continue
            try:
                found = await kg.labels(mine + relations)
            except KgfedError:
                continue
            for ident, label in found.items():
                if label is not None and label.label:
                    gold.labels.setdefault(ident, label.label)

    # -- the provider call --
    async def _complete(self, prompt: str, *, temperature: float, max_tokens: int, system: str | None, **_: Any) -> Completion:
        prefix, kind, reply = _kind(prompt)
        gold = await self.resolve(self.gold_for(prompt))
        text = reply(gold, prompt)
        if self.trace is not None:
            self._note(gold, kind, prompt[len(prefix):], text)
        return Completion(text, tokens(prompt) + tokens(system or ""), tokens(text))

    def _note(self, gold: Gold, kind: str, case: str, reply: str) -> None:
        """One line of the trace (`$KGFED_GOLD_TRACE`): did the prompt show a gold answer, did the reply name one."""
        shown = gold.answer_in(case.replace(gold.text, " "), prose=True) is not None
        named = gold.answer_in(reply.replace(gold.text, " "), prose=True) is not None
        with open(self.trace, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"id": gold.id, "kind": kind, "shown": shown, "named": named}) + "\n")


def _first_words(prompt: str) -> str:
    return repr(" ".join(prompt.split())[:60] + "…")


# -- prompt kinds ---------------------------------------------------------------------------------------------
def _after(prompt: str, marker: str) -> str:
    at = prompt.rfind(marker)
    return prompt[at + len(marker):] if at >= 0 else prompt


def _between(text: str, start: str, end: str | None = None) -> str:
    at = text.find(start)
    if at < 0:
        return ""
    body = text[at + len(start):]
    if end:
        stop = body.find(end)
        body = body if stop < 0 else body[:stop]
    return body


def _fields(template: str, prompt: str) -> dict[str, str]:
    """The values a `str.format` template was filled with (literal parts matched exactly)."""
    pattern, names = "", []
    for literal, name, _, _ in string.Formatter().parse(template):
        pattern += re.escape(literal)
        if name is not None:
            if name in names:
                pattern += f"(?P={name})"
            else:
                pattern += f"(?P<{name}>.*?)"
                names.append(name)
    m = re.fullmatch(pattern, prompt, re.S)
    return {k: v for k, v in m.groupdict().items()} if m else {}


def _ranked(scores: Sequence[float]) -> list[int]:
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


# ToG -----------------------------------------------------------------------------------------------------------
def _tog_relations(gold: Gold, prompt: str) -> str:
    width = int(m.group(1)) if (m := re.match(r"Please retrieve (\d+) relations", prompt)) else 3
    case = _after(prompt, "\n\nQ: ")
    block = case.split("\nRelations:", 1)[1] if "\nRelations:" in case else ""
    block = block.rstrip()
    block = block[:-2] if block.endswith("A:") else block
    if block.startswith("\n"):  # Wikidata style: numbered lines
        names = [re.sub(r"^\d+\.\s*", "", line).strip() for line in block.strip().splitlines() if line.strip()]
    else:
        names = [n.strip() for n in block.split("; ") if n.strip()]
    if not names:
        raise LLMError("--llm gold: a relation-pruning prompt without relations")
    scores = [gold.relation_score(n) for n in names]
    chosen = [i for i in _ranked(scores) if scores[i] > 0][:width]
    if not chosen:  # nothing on the gold query: one relation named, scored 0 (ToG then drops the chain)
        chosen, shares = [0], {0: 0.0}
    else:
        total = sum(scores[i] for i in chosen)
        shares = {i: round(scores[i] / total, 3) for i in chosen}
    if any(re.search(r"[(){};]", names[i]) for i in chosen):
        return json.dumps({names[i]: shares[i] for i in chosen}, ensure_ascii=False)
    return "\n".join(f"{k}. {{{names[i]} (Score: {shares[i]})}}: "
                     + ("This relation is on the way to the answer." if shares[i] else "No offered relation leads to the answer.")
                     for k, i in enumerate(chosen, 1))


def _tog_entities(gold: Gold, prompt: str) -> str:
    case = _after(prompt, "\n\nQ: ")
    listing = _between(case, "\nEntites: ", "\nScore:")
    names = [n for n in listing.split("; ")]
    scores = [1.0 if gold.is_entity(n) else 0.0 for n in names]
    return ", ".join(f"{s:.1f}" for s in scores) + "\nEntities the answer is reached through score 1, the others 0."


def _tog_verdict(gold: Gold, prompt: str, template: str) -> str:
    triplets = _between(prompt[len(template):], "\nKnowledge Triplets: ")
    answer = gold.answer_in(triplets[:-3] if triplets.endswith("A: ") else triplets)
    if answer:
        return f"{{Yes}}. Based on the given knowledge triplets, the answer to the question is {{{answer}}}."
    return "{No}. Based on the given knowledge triplets, it's not sufficient to answer the question."


def _tog_answer(gold: Gold, prompt: str) -> str:
    triplets = _between(prompt, "\nKnowledge Triplets: ")
    answer = gold.answer_in(triplets[:-3] if triplets.endswith("A: ") else triplets)
    return f"Based on the given knowledge triplets, the answer to the question is {{{answer or UNKNOWN}}}."


def _tog_direct(gold: Gold, prompt: str) -> str:
    return f"The knowledge needed is not given. The answer is {{{UNKNOWN}}}."


def _tog2_reasoning(gold: Gold, prompt: str) -> str:
    case = _after(prompt, "Now, please carefully consider the following case:\n")
    evidence = case.split("\n(Knowledge triplets):", 1)[1] if "\n(Knowledge triplets):" in case else ""
    answer = gold.answer_in(evidence, prose=True)
    if answer:
        return f"{{Yes}} The analyzed answer entity is {{{answer}}}."
    return ("{No} The given knowledge does not name the answer yet. The useful information for now is "
            f"{{{_clue(gold)}}}")


def _clue(gold: Gold) -> str:
    parts = [f"from {name} the answer is reached through {' then '.join(steps)}" for name, steps in gold.chains() if steps]
    clue = "; ".join(parts) or "the answer is not in the given knowledge"
    return clue if not gold.answer_in(clue) else "the answer is not in the given knowledge"


# PoG and HydraRAG ------------------------------------------------------------------------------------------------
def _indicator(gold: Gold) -> tuple[str, list[str]]:
    """PoG's thinking indicator and split questions from the gold query (no gold answer in them)."""
    chains = [(name, steps) for name, steps in gold.chains() if steps] or [(n, ["related to"]) for n in gold.topics.values()]
    if not chains:
        chains = [("", ["related to"])]
    halves = []
    for k, (name, steps) in enumerate(chains[:2]):
        parts = [f'"{name}"']
        for i, step in enumerate(steps):
            parts.append(step)
            if i < len(steps) - 1:
                parts.append("entity")
        halves.append(parts if k == 0 else parts[::-1])
    items = halves[0] + ["answer(entity)"] + (halves[1] if len(halves) > 1 else [])
    splits = [f'What is connected to "{name}" by {" then ".join(steps)}?' for name, steps in chains]
    indicator = " - ".join(items)
    if gold.answer_in(indicator) or any(gold.answer_in(s) for s in splits):  # a topic named like an answer
        indicator, splits = "answer(entity)", [gold.text]
    return indicator, splits


def _pog_analysis(gold: Gold, prompt: str) -> str:
    indicator, splits = _indicator(gold)
    return "Thinking Cot: " + indicator + "\n" + "".join(f"split_question{i}: {q}\n" for i, q in enumerate(splits, 1))


_NUMBERED = {"path": re.compile(r"(?m)^Path (\d+): "), "edge": re.compile(r"(?m)^Candidate Edge (\d+): ")}


def _numbered(text: str, kind: str) -> list[tuple[int, str]]:
    marks = list(_NUMBERED[kind].finditer(text))
    return [(int(m.group(1)), text[m.end(): marks[k + 1].start() if k + 1 < len(marks) else len(text)].strip())
            for k, m in enumerate(marks)]


def _top_list(gold: Gold, items: list[tuple[int, str]], label: str) -> str:
    if not items:
        raise LLMError(f"--llm gold: a {label.lower()} selection prompt without candidates")
    scores = [gold.text_score(text) for _, text in items]
    picked = [items[i][0] for i in _ranked(scores)[:3]]
    return (f"Answer: top_list: {{{', '.join(f'{label} {n}' for n in picked)}}}\n"
            "Explanation: these follow the relations and entities the question asks about.")


def _pog_paths(gold: Gold, prompt: str) -> str:
    return _top_list(gold, _numbered(_after(prompt, "\nThe entity list is: \n"), "path"), "Path")


def _pog_edges(gold: Gold, prompt: str) -> str:
    return _top_list(gold, _numbered(_after(prompt, "\nThe Candidate Edge list is: \n"), "edge"), "Candidate Edge")


def _pog_block(prompt: str) -> str:
    """The evidence of a PoG/HydraRAG answering prompt: its path listing (and summary)."""
    for marker in ("Related Paths:\n", "Related_paths:\n", "Existing Knowledge Paths:\n"):
        if marker in prompt:
            body = _after(prompt, marker)
            return body[:-3] if body.endswith("\nA:") else body
    return ""


def _pog_summary(gold: Gold, prompt: str) -> str:
    chains = [f"{name}: {' then '.join(steps)}" for name, steps in gold.chains() if steps]
    text = "The related paths are read along " + ("; ".join(chains) or "the topic entities") + "."
    return text if not gold.answer_in(text) else "The related paths are read along the topic entities."


def _pog_evaluate(gold: Gold, prompt: str) -> str:
    answer = gold.answer_in(_pog_block(prompt))
    if answer:
        return f"{{Yes}}. The knowledge paths answer the main question: {{{answer}}}."
    return "{No}. The knowledge paths do not reach the answer of the main question."


def _pog_generate(gold: Gold, prompt: str) -> str:
    return f"{{{gold.answer_in(_pog_block(prompt)) or UNKNOWN}}}"


def _pog_supplement(gold: Gold, prompt: str) -> str:
    names = [n for n in gold.entity_names if n.casefold() not in {t.casefold() for t in gold.topics.values()}][:3]
    if not names:
        return "No further entity can be predicted from the given paths."
    indicator, _ = _indicator(gold)
    return "\n".join(f"Predict {i}: {{{name}}}\nThinking Cot {i}: {indicator}" for i, name in enumerate(names, 1))


def _hydra_source(gold: Gold, prompt: str) -> str:
    offered = _between(prompt, "Provided sources: ", "\n")
    actions = [a for a, name in (("action1", "KG"), ("action2", "Wiki"), ("action3", "Web")) if name in offered] or ["action1"]
    return "Every provided source may hold the evidence. Decision: [" + " + ".join(actions) + "]"


def _hydra_refine(gold: Gold, prompt: str) -> str:
    indicator, _ = _indicator(gold)
    return f"New question: {gold.text}\nThinking Cot: {indicator}"


# INSES ------------------------------------------------------------------------------------------------------------
def _inses_router(gold: Gold, prompt: str) -> str:
    hops = len(gold.relations)
    return json.dumps({"multi_hop": hops >= 3, "reason": f"the question chains {hops} relation(s)"})


def _inses_entities(gold: Gold, prompt: str) -> str:
    names = list(gold.topics.values()) or gold.entity_names[:3]
    return ", ".join(n for n in names if n and not gold.is_answer(n)) or "none"


def _inses_navigation(gold: Gold, prompt: str) -> str:
    f = _fields(P.INSES_NAVIGATION_PROMPT, prompt)
    lines = [(int(m.group(1)), m.group(2)) for m in re.finditer(r"(?m)^(\d+)\. (.*)$", f.get("adjacent", ""))]
    scores = [gold.text_score(text) for _, text in lines]
    picked = [lines[i] for i in _ranked(scores) if scores[i] > 0][:MAX_SELECTED]
    evidence = f.get("selected", "") + "\n" + "\n".join(text for _, text in picked)
    sufficient = gold.answer_in(evidence) is not None
    return json.dumps({"determination": "sufficient" if sufficient else "insufficient",
                       "selection": ", ".join(str(n) for n, _ in picked)})


def _inses_answer(gold: Gold, prompt: str) -> str:
    answer = gold.answer_in(_fields(P.INSES_ANSWER_PROMPT, prompt).get("context", ""))
    return json.dumps({"reasoning": "The answer is the entity of the extracted knowledge the question asks for."
                       if answer else "The extracted knowledge does not name the answer.", "answer": answer or UNKNOWN},
                      ensure_ascii=False)


def _inses_rag(gold: Gold, prompt: str) -> str:
    answer = gold.answer_in(_fields(P.INSES_RAG_PROMPT, prompt).get("context", ""), prose=True)
    return json.dumps({"reasoning": "Read from the context." if answer else "The context does not name the answer.",
                       "answer": answer or UNKNOWN, "confidence": 0.9 if answer else 0.0}, ensure_ascii=False)


# PRoH -------------------------------------------------------------------------------------------------------------
# PRoH shows facts as `subject relation words object` (hyperedge names) without delimiters: they are read as prose.
def _proh_plan(gold: Gold, prompt: str) -> str:
    return json.dumps({"subquestions": [{"id": 1, "question": gold.text, "depends_on": []}]}, ensure_ascii=False)


def _proh_refine(gold: Gold, prompt: str) -> str:
    return json.dumps({"subquestions": []})


def _numbered_lines(text: str) -> list[tuple[int, str]]:
    return [(int(m.group(1)), m.group(2)) for m in re.finditer(r"(?m)^(\d+)\. (.*)$", text)]


def _proh_score(gold: Gold, prompt: str) -> str:
    lines = _numbered_lines(_fields(P.PROH_SCORE_PROMPT, prompt).get("entities", ""))
    scores = {str(n): 1.0 if gold.is_entity(text.split(", ", 1)[0]) or gold.is_entity(text) else 0.0 for n, text in lines}
    return json.dumps(scores)


def _proh_directions(gold: Gold, prompt: str) -> str:
    f = _fields(P.PROH_DIRECTIONS_PROMPT, prompt)
    lines = _numbered_lines(f.get("paths", ""))
    width = int(f["b"]) if f.get("b", "").isdigit() else 3
    scores = [gold.text_score(text, prose=True) for _, text in lines]
    return json.dumps({"selection": ", ".join(str(lines[i][0]) for i in _ranked(scores)[:width])})


def _proh_paths(gold: Gold, prompt: str) -> str:
    lines = _numbered_lines(_fields(P.PROH_PATHS_PROMPT, prompt).get("paths", ""))
    return json.dumps({"selection": ", ".join(str(n) for n, text in lines if gold.answer_in(text, prose=True))})


def _proh_step(gold: Gold, prompt: str) -> str:
    context = _fields(P.PROH_STEP_PROMPT, prompt).get("context", "")
    found = list(dict.fromkeys(gold.answers_in(context, prose=True)))
    return json.dumps({"answers": found[:3]}, ensure_ascii=False)


def _proh_final(gold: Gold, prompt: str) -> str:
    answer = gold.answer_in(_fields(P.PROH_FINAL_PROMPT, prompt).get("steps", ""), prose=True)
    return json.dumps({"reasoning": "From the reasoning steps." if answer else "The steps do not name the answer.",
                       "answer": answer or UNKNOWN}, ensure_ascii=False)


def _proh_judge(gold: Gold, prompt: str) -> str:
    lines = _numbered_lines(_fields(P.PROH_JUDGE_PROMPT, prompt).get("candidates", ""))
    choice = next((n for n, text in lines if gold.is_answer(text.split(" (because: ", 1)[0])), lines[0][0] if lines else 1)
    return json.dumps({"choice": choice})


def _prefix(template: str) -> str:
    """The literal text of a `str.format` template before its first field (braces unescaped)."""
    literal = next(iter(string.Formatter().parse(template)))[0]
    return literal


# (prefix the prompt starts with, kind, replier), most specific first
KINDS: list[tuple[str, str, Any]] = [
    ("Please retrieve ", "tog-relations", _tog_relations),
    ("Please score the entities' contribution", "tog-entities", _tog_entities),
    (P.PROMPT_EVALUATE, "tog-evaluate", lambda g, p: _tog_verdict(g, p, P.PROMPT_EVALUATE)),
    (P.PROMPT_EVALUATE_WIKI, "tog-evaluate-wiki", lambda g, p: _tog_verdict(g, p, P.PROMPT_EVALUATE_WIKI)),
    (P.ANSWER_PROMPT[: -len("Q: {}\n")], "tog-answer", _tog_answer),
    (P.ANSWER_PROMPT_WIKI[: -len("Q: {}\n")], "tog-answer-wiki", _tog_answer),
    (P.GENERATE_DIRECTLY, "tog-direct", _tog_direct),
    (P.TOG2_REASONING_PROMPT, "tog2-reasoning", _tog2_reasoning),
    (P.POG_QUESTION_ANALYSIS_PROMPT, "pog-analysis", _pog_analysis),
    (P.POG_PATH_SELECT_PROMPT, "pog-select", _pog_paths),
    (P.POG_EDGE_SELECT_PROMPT, "pog-edges", _pog_edges),
    (P.POG_SUPPLEMENT_PROMPT, "pog-supplement", _pog_supplement),
    (P.POG_SUMMARY_PROMPT, "pog-summary", _pog_summary),
    (P.POG_EVALUATE_PROMPT, "pog-evaluate", _pog_evaluate),
    (P.POG_GENERATE_PROMPT, "pog-generate", _pog_generate),
    (P.HYDRA_SOURCE_SELECT_PROMPT, "hydra-source", _hydra_source),
    (P.HYDRA_REFINE_PROMPT, "hydra-refine", _hydra_refine),
    (_prefix(P.INSES_EXTRACT_ENTITIES_PROMPT), "inses-entities", _inses_entities),
    (_prefix(P.INSES_NAVIGATION_PROMPT), "inses-navigate", _inses_navigation),
    (_prefix(P.INSES_ANSWER_PROMPT), "inses-answer", _inses_answer),
    (_prefix(P.INSES_RAG_PROMPT), "inses-rag", _inses_rag),
    (_prefix(P.INSES_ROUTER_PROMPT), "inses-router", _inses_router),
    (_prefix(P.PROH_PLAN_PROMPT), "proh-plan", _proh_plan),
    (_prefix(P.PROH_REFINE_PROMPT), "proh-refine", _proh_refine),
    (_prefix(P.PROH_SCORE_PROMPT), "proh-score", _proh_score),
    (_prefix(P.PROH_DIRECTIONS_PROMPT), "proh-directions", _proh_directions),
    (_prefix(P.PROH_PATHS_PROMPT), "proh-paths", _proh_paths),
    (_prefix(P.PROH_STEP_PROMPT), "proh-step", _proh_step),
    (_prefix(P.PROH_FINAL_PROMPT), "proh-final", _proh_final),
    (_prefix(P.PROH_JUDGE_PROMPT), "proh-judge", _proh_judge),
]


def _kind(prompt: str) -> tuple[str, str, Any]:
    """(the template prefix, the kind, its replier) of the longest known template the prompt starts with."""
    best = max(((prefix, kind, reply) for prefix, kind, reply in KINDS if prompt.startswith(prefix)), default=None,
               key=lambda t: len(t[0]))
    if best is None:
        raise LLMError(f"--llm gold does not know this prompt ({_first_words(prompt)}): the stand-in answers the "
                       "prompts of kgfed's six methods only (toolbox.prompts)")
    return best


def kind_of(prompt: str) -> str:
    """The prompt kind the stand-in reads `prompt` as (for tests and reports)."""
    return _kind(prompt)[1]


def gold_path(spec: str) -> str | None:
    """The question file of a `gold:PATH` spec (None for any other spec)."""
    kind, sep, rest = spec.strip().partition(":")
    return rest if kind.lower() == "gold" and sep and rest else None

