"""What every reasoning method shares: its inputs, its result record, topic linking, path text.

A method is a thin strategy over the engine: `await method.answer(question, topics)` explores the
KGs in `kgs` (name → `KG`), prunes with the LLM (or embeddings when `llm` is LLM-free), and returns a
`Result` holding the answer text, answer ids, the reasoning paths as `Edge` lists, and the cost.
"""
from __future__ import annotations

import re
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...cache.costs import track
from ...sparql.errors import KgfedError
from ..kg.facade import KG
from ..toolbox.llm import DEFAULT_MAX_TOKENS, ask, llm_ready, prompt_limits
from ..kg.model import Edge
from .params import MethodParams, param

__all__ = ["Method", "MethodParams", "Result", "Topics", "UNNAMED", "candidate_spans", "link_topics",
           "name_topics", "param", "render_path"]

Topics = dict[str, dict[str, str]]  # kg name -> {short id: name}
UNNAMED = "UnName_Entity"  # ToG's name for an entity without a name (in ToG-compatible output only)
STOPWORDS = frozenset(
    "a an the of in on at to for from by with and or is are was were be been who whom whose what which where when "
    "how why did does do that this these those his her its their it he she they as than into has have had "
    "name names country countries".split()
)


@dataclass
class Result:
    """One answered question: answer text and ids, reasoning paths, cost, and method-specific extras."""

    question: str
    answer: str
    answer_ids: list[str] = field(default_factory=list)
    paths: list[list[Edge]] = field(default_factory=list)
    method: str = ""
    cost: dict[str, float] = field(default_factory=dict)
    reasoning: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def path_texts(self) -> list[str]:
        return [render_path(p) for p in self.paths]

    @property
    def partial(self) -> bool:
        """Whether any KG answer this result was reasoned over was partial (`cost["partial"]` counts them;
        only possible when the KGs were opened with `partial="allow"`, else they raise `PartialResult`)."""
        return bool(self.cost.get("partial"))

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.answer,
            "answer_ids": self.answer_ids,
            "paths": [[e.to_json() for e in path] for path in self.paths],
            "path_text": self.path_texts(),
            "method": self.method,
            "cost": dict(self.cost),
            "reasoning": self.reasoning,
            **({"partial": True} if self.partial else {}),
            **({"extra": self.extra} if self.extra else {}),
        }

    def tog_chains(self) -> list[list[tuple[str, str, str]]]:
        """Reasoning chains as ToG writes them: lists of (head name, relation, tail name); an entity
        without a name is "UnName_Entity" as in ToG (a CVT is inside a compound `r1|r2` relation). An entity
        named by any triple of the paths (e.g. the tail of hop 1, the head of hop 2) keeps that name."""
        names = {i: n for ids in (self.extra.get("topics") or {}).values() for i, n in ids.items() if n}
        for edge in (e for p in self.paths for e in p):
            for ident, label in ((edge.subject, edge.subject_label), (edge.object, None if edge.literal else edge.object_label)):
                if label:
                    names.setdefault(ident, label)
        return [[(e.subject_label or names.get(e.subject, UNNAMED), e.relation,
                  e.object_label or (e.object if e.literal else names.get(e.object, UNNAMED))) for e in p] for p in self.paths]


def _name(ident: str, label: str | None) -> str:
    return label or ident


def render_path(path: Sequence[Edge]) -> str:
    """`Douglas Adams -[educated at]-> St John's College` (labels where known, ids otherwise)."""
    if not path:
        return ""
    first = path[0]
    parts = [_name(first.origin, first.subject_label if first.direction == "out" else first.object_label)]
    for edge in path:
        rel = edge.relation_label or edge.relation
        arrow = f"-[{rel}]->" if edge.direction == "out" else f"<-[{rel}]-"
        parts.append(f"{arrow} {_name(edge.entity, edge.label)}")
    return " ".join(parts)


async def name_topics(kgs: Mapping[str, Any], topics: Topics) -> Topics:
    """`topics` ({kg name: {id: name}}) with every id given without a name named by its KG's label (the id
    itself where the KG has none); changed in place and returned."""
    for name, ids in topics.items():
        unnamed = [i for i, label in ids.items() if not label]
        if unnamed and name in kgs:
            labels = await kgs[name].labels(unnamed)
            for i in unnamed:
                ids[i] = labels[i].label if i in labels and labels[i].label else i
    return topics


class Method(ABC):
    """A KG reasoning method over one or more KGs; subclasses implement `_answer`.

    Parameters are declared once per method, as a frozen dataclass derived from `MethodParams` named by
    `Params` (fields typed, bounded with `param()`, `ALIASES` for the CLI's `width`/`depth` under the paper's
    names). `Method.resolve` builds it from given values (cast, checked, unknown names refused) and the
    method reads `self.params.width`. (The old declaration, `PARAMS` and `ALIASES` on the method class, and the
    reads `Method.PARAMS`, `method.width`, were removed in 0.3.0: docs/migration.md.)
    """

    name = "method"
    Params: ClassVar[type[MethodParams]] = MethodParams
    READS_TEXT: ClassVar[bool] = False  # True: the method reads passages (`text=`): the MCP server hands it the text source
    params: MethodParams
    # prompt kind -> (max_tokens cap, stop sequences), used when the `stop_sequences` parameter is on
    LIMITS: ClassVar[Mapping[str, tuple[int, tuple[str, ...]]]] = {}

    def __init__(self, kgs: Mapping[str, KG] | KG | Sequence[KG], llm, *, embedder=None, text=None, **params: Any):
        if isinstance(kgs, KG):  # one KG: under its own name (its dialect's unless opened with name=)
            kgs = {kgs.name: kgs}
        elif isinstance(kgs, (list, tuple)) and all(isinstance(kg, KG) for kg in kgs):
            kgs = {kg.name: kg for kg in kgs}
        if not kgs:
            raise ValueError("a method needs at least one KG")
        if not isinstance(kgs, Mapping):
            raise KgfedError(f"kgs is a {type(kgs).__name__}: give a KG, a list of KGs or a {{name: KG}} mapping")
        self.kgs = dict(kgs)
        self.llm = llm
        self.embedder = embedder
        self.text = text
        self.params = self.resolve(params)

    @classmethod
    def resolve(cls, params: Mapping[str, Any]) -> MethodParams:
        """The method's `Params`: the given values (aliases renamed, values cast) over the defaults.

        An unknown name, an alias and its target given different values, or a value of the wrong type
        or out of bounds is a one-line KgfedError naming what is accepted.
        """
        return cls.Params.resolve(params, method=cls.name)

    @property
    def llm_ready(self) -> bool:
        """Whether an LLM answers (False without one or with `NoLLM`: the method runs LLM-free)."""
        return llm_ready(self.llm)

    def limits(self, kind: str) -> dict[str, Any]:
        """`max_tokens` (and, with the `stop_sequences` parameter, the kind's cap and stops) for one prompt kind."""
        return prompt_limits(kind, self.LIMITS, enabled=bool(getattr(self.params, "stop_sequences", False)),
                             max_tokens=getattr(self.params, "max_tokens", DEFAULT_MAX_TOKENS))

    async def ask(self, prompt: str, kind: str, *, temperature: float, system: str | None = None, json_mode: bool = False) -> Any:
        """One LLM call of prompt kind `kind` (`toolbox.llm.ask` with `limits(kind)`): the reply text, or its JSON object."""
        return await ask(self.llm, prompt, temperature=temperature, system=system, json_mode=json_mode, **self.limits(kind))

    @property
    def embedder(self):
        """The run's embedder: the one given (a `Session`'s, in the harness and the MCP server), else the
        process's default `Embedder`, made on first use. This is the one default left below the session, kept
        so that `ToG(kg, llm)` works in a notebook as `KG.open(spec)` does; everything the method calls
        (pruning, ranking, alignment) is handed this one and builds none of its own."""
        if self._run_embedder is None:
            from ..toolbox.embeddings import default_embedder

            self._run_embedder = default_embedder()
        return self._run_embedder

    @embedder.setter
    def embedder(self, value) -> None:
        self._run_embedder = value

    async def answer(self, question: str, topics: Topics | Mapping[str, str] | Sequence[str] | str | None = None) -> Result:
        """Answer one question; topics are linked from the question text by label when not given.

        `topics` may be per KG (`{"wikidata": {"Q42": "Douglas Adams"}}`), a flat `{id: name}`, a list
        of ids or one id: each id goes to the KGs whose dialect takes it, unnamed ones named by label."""
        started = time.perf_counter()
        with track() as cost:
            topics = await self._given_topics(topics)
            if not topics or not any(topics.values()):
                topics = await link_topics(question, self.kgs)
            result = await self._answer(question, topics)
        seconds = round(time.perf_counter() - started, 4)
        result.cost = {**dict(cost), "seconds": seconds, **result.cost}
        result.method = result.method or self.name
        result.extra.setdefault("topics", topics)
        return result

    async def _given_topics(self, topics: Any) -> Topics | None:
        """The `topics` argument of `answer` as {kg name: {id: name}} (see there), or None when not given."""
        from ...sparql.errors import InvalidIdentifier

        if topics is None or isinstance(topics, Mapping) and not topics:
            return None
        if isinstance(topics, str):
            topics = [topics]
        if isinstance(topics, Mapping) and (all(k in self.kgs for k in topics)
                                            or all(isinstance(v, (Mapping, list, tuple, set)) for v in topics.values())):
            # per KG ({kg name: {id: name} or [ids]}); a KG the method lacks is the method's to refuse
            per_kg = {k: dict.fromkeys(v, "") if isinstance(v, (list, tuple, set)) else dict(v or {}) for k, v in topics.items()}
        elif isinstance(topics, Mapping) or isinstance(topics, (list, tuple, set)) and all(isinstance(t, str) for t in topics):
            named = dict(topics) if isinstance(topics, Mapping) else dict.fromkeys(topics, "")
            per_kg = {name: {} for name in self.kgs}
            for ident, label in named.items():
                fits = []
                for name, kg in self.kgs.items():
                    try:
                        kg.check(ident)
                    except InvalidIdentifier:
                        continue
                    fits.append(name)
                    per_kg[name][ident] = label or ""
                if not fits:
                    raise KgfedError(f"topic {ident!r} fits none of the KGs {', '.join(self.kgs)} (the keys of a per-KG "
                                     "topics mapping are KG names): use m.0abc for Freebase, Q42 for Wikidata")
        else:
            raise KgfedError(f"topics is a {type(topics).__name__}: give an id, a list of ids, {{id: name}} or "
                             "{kg name: {id: name}}")
        return await name_topics(self.kgs, per_kg)

    @abstractmethod
    async def _answer(self, question: str, topics: Topics) -> Result: ...


_WORD = re.compile(r"[\w'’.-]+", re.UNICODE)


def candidate_spans(question: str, max_words: int = 6) -> list[str]:
    """Word n-grams of the question (longest first) that could be an entity label, in a few casings."""
    words = [w.strip(".'’") for w in _WORD.findall(question)]
    words = [w for w in words if w]
    spans: dict[str, None] = {}
    for n in range(min(max_words, len(words)), 0, -1):
        for i in range(len(words) - n + 1):
            chunk = words[i:i + n]
            if chunk[0].lower() in STOPWORDS or chunk[-1].lower() in STOPWORDS:
                continue
            text = " ".join(chunk)
            if n == 1 and (len(text) < 3 or text.lower() in STOPWORDS):
                continue
            for variant in (text, text.title(), text[:1].upper() + text[1:]):
                spans[variant] = None
    return list(spans)


async def link_topics(question: str, kgs: Mapping[str, KG], max_topics: int = 3) -> Topics:
    """Topic entities by exact label match of question spans, longest non-overlapping spans first."""
    import asyncio

    spans = candidate_spans(question)
    if not spans:
        return {name: {} for name in kgs}
    matches = await asyncio.gather(*(kg.match_labels(spans) for kg in kgs.values()))
    topics: Topics = {}
    for name, found in zip(kgs, matches):
        chosen: dict[str, str] = {}
        used: list[str] = []
        for span in spans:  # longest first
            hits = found.get(span) or []
            if not hits or any(span.lower() in u.lower() for u in used):
                continue
            used.append(span)
            hit = sorted(hits, key=lambda h: (h.label != span, kgs[name].dialect.id_rank(h.id)))[0]  # older ids first
            chosen.setdefault(hit.id, hit.label or span)
            if len(chosen) >= max_topics:
                break
        topics[name] = chosen
    return topics
