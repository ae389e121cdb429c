"""Pruning toolbox: score relations, entities and paths by LLM, SBERT or BM25; PoG's beam strategies.

Pure scoring: no KG access. LLM scoring uses the verbatim ToG/PoG prompts of `prompts`; SBERT uses
`Embedder`; BM25 uses the `bm25s` library. Whenever the LLM is absent or `llm.available` is
False, LLM scoring falls back to SBERT, so every function also runs LLM-free.

How a step scores travels as one frozen `PruneSettings` the caller builds (the scorer, the LLM and the
embedder, how many to keep, the LLM call's temperature, token cap, stop sequences and system prompt);
PoG's beam search adds a `PathBeam` (strategy, W_max, W1, W2, D_max):

    llm_scoring = PruneSettings(method="llm", llm=llm, embedder=embedder, width=3)
    top = await score_relations(q, relations, llm_scoring, entity="Brahui Language")
    keep = await pog_prune_paths(q, paths, llm_scoring, PathBeam("fuzzy+precise"), indicator=cot)

The loose keywords of the old signatures (`method=`, `llm=`, `width=`, `temperature=` …) were removed in 0.3.0.
"""
from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Callable, Awaitable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ...cache.costs import charge
from ...sparql.errors import KgfedError, LLMError
from .embeddings import Embedder
from .llm import DEFAULT_MAX_TOKENS, PRUNING_TEMPERATURE, LLM, llm_ready
from .prompts import (
    TOG_SYSTEM, parse_entity_scores, parse_path_selection, parse_relation_scores, pog_path_select_prompt,
    tog_entity_prompt, tog_relation_prompt,
)

ScoreMethod = Literal["llm", "sbert", "bm25"]
METHODS = ("llm", "sbert", "bm25")
# PoG's Algorithm 2 (appendix A.2): the four beam-search cases, from LLM-free to fully LLM-reliant.
POG_STRATEGIES = ("fuzzy", "fuzzy+precise", "fuzzy+branch", "fuzzy+branch+precise")
PATHS_PER_CALL = 40  # PoG/HydraRAG show the LLM at most 40 numbered paths per selection call


@dataclass(frozen=True)
class PruneSettings:
    """How a pruning step scores, built once by the caller: the scorer and what it keeps, and the LLM call.

    `method`: llm | sbert | bm25 (llm falls back to SBERT when `llm` is absent or unavailable); `width`: how
    many to keep (None: all; entity scoring keeps every candidate); `temperature`, `max_tokens`, `stop`: the
    LLM call's; `system`: the system prompt, None for the prompt family's own (ToG's relation and entity
    prompts: `TOG_SYSTEM`; PoG's path selection: none)."""

    method: ScoreMethod = "llm"
    llm: LLM | None = None
    embedder: Embedder | None = None
    width: int | None = 3
    temperature: float = PRUNING_TEMPERATURE
    max_tokens: int = DEFAULT_MAX_TOKENS
    stop: Sequence[str] | None = None
    system: str | None = None

    def llm_call(self, default_system: str | None) -> dict[str, Any]:
        """The keyword arguments of `LLM.complete` for one call of a prompt whose own system prompt is `default_system`."""
        return {"temperature": self.temperature, "max_tokens": self.max_tokens, "system": self.system or default_system,
                "stop": list(self.stop) if self.stop else None}


@dataclass(frozen=True)
class PathBeam:
    """PoG's beam search (Algorithm 2): the strategy (one of `POG_STRATEGIES`), W_max (`width`), W1, W2, D_max."""

    strategy: str = "fuzzy+precise"
    width: int = 3
    w1: int = 80
    w2: int = 20
    max_depth: int = 3


SBERT_PATHS = PruneSettings(method="sbert")  # score_paths' default: SBERT similarity, top 3


@functools.lru_cache(maxsize=1 << 16)
def relation_text(relation: str) -> str:
    """Words of a relation id for SBERT/BM25: `people.person.place_of_birth` → `people person place of birth`."""
    return re.sub(r"[._|/:#]+", " ", relation).strip()


def bm25_scores(query: str, docs: Sequence[str]) -> list[float]:
    """BM25 (bm25s, Lucene variant, English stop words) of `query` against each doc."""
    import bm25s

    if not docs:
        return []
    corpus = bm25s.tokenize(list(docs), stopwords="en", show_progress=False)
    terms = bm25s.tokenize([query], stopwords="en", show_progress=False, return_ids=False)[0]
    if not terms or not corpus.vocab:
        return [0.0] * len(docs)
    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    return [float(x) for x in retriever.get_scores(terms)]


def _check_method(method: str) -> str:
    if method not in METHODS:
        raise KgfedError(f"unknown scoring method {method!r}: use one of {', '.join(METHODS)}")
    return method


async def _similarities(method: str, query: str, texts: Sequence[str], embedder: Embedder | None) -> list[float]:
    if method == "bm25":
        return bm25_scores(query, texts)
    return await _need(embedder).similarity(query, texts)


def _need(embedder: Embedder | None) -> Embedder:
    """The embedder SBERT scoring was given; none is a one-line error (pruning builds no default of its own)."""
    if embedder is None:
        raise KgfedError("SBERT scoring needs an embedder: pass embedder= (a Session's or a method's `embedder`), "
                         "or score with bm25")
    return embedder


def _top(pairs: Sequence[tuple[str, float]], k: int | None) -> list[tuple[str, float]]:
    """Highest scores first (stable for ties), at most k."""
    ranked = sorted(pairs, key=lambda p: -p[1])
    return ranked if k is None else ranked[:k]


def _uniform_if_zero(scores: list[float]) -> list[float]:
    """ToG's rule for BM25/SBERT: all-zero scores become equal shares."""
    if scores and all(s == 0 for s in scores):
        return [1.0 / len(scores)] * len(scores)
    return scores


async def score_relations(question: str, relations: Sequence[str], settings: PruneSettings = PruneSettings(), *,
                          entity: str = "", wiki: bool = False) -> list[tuple[str, float]]:
    """The top-`settings.width` (relation, score) pairs for the question, best first.

    Candidates are de-duplicated and sorted first, as ToG does, so the prompt (and its replay key)
    does not depend on the KG's answer order. `llm`: ToG's relation prompt about topic `entity`
    (ToG itself samples at EXPLORATION_TEMPERATURE). `sbert`/`bm25`: similarity of the question
    to the relation's words, all-zero scores made equal (ToG).
    """
    method = _check_method(settings.method)
    candidates = sorted(set(relations))
    if not candidates:
        return []
    width = settings.width
    if method == "llm" and settings.llm is not None and llm_ready(settings.llm):
        prompt = tog_relation_prompt(question, entity, candidates, width if width is not None else len(candidates), wiki=wiki)
        reply = await settings.llm.complete(prompt, **settings.llm_call(TOG_SYSTEM))
        return _top(parse_relation_scores(reply.text, candidates), width)
    method = "sbert" if method == "llm" else method
    scores = _uniform_if_zero(await _similarities(method, question, [relation_text(r) for r in candidates], settings.embedder))
    return _top(list(zip(candidates, scores)), width)


async def score_entities(question: str, candidates: Sequence[str], settings: PruneSettings = PruneSettings(), *,
                         relation: str = "", wiki: bool = False) -> list[tuple[str, float]]:
    """(candidate, score) for every candidate name, in the input order, scores summing to 1.

    A single candidate scores 1 without a call (ToG). `llm`: ToG's entity-scoring prompt over the
    candidates sorted by name (ToG's order), mapped back; `sbert`/`bm25`: similarity to the question.
    `settings.width` does not apply: every candidate is scored.
    """
    method = _check_method(settings.method)
    names = list(candidates)
    if len(names) <= 1:
        return [(name, 1.0) for name in names]
    if method == "llm" and settings.llm is not None and llm_ready(settings.llm):
        order = sorted(range(len(names)), key=lambda i: names[i])
        shown = [names[i] for i in order]
        reply = await settings.llm.complete(tog_entity_prompt(question, relation, shown, wiki=wiki),
                                            **settings.llm_call(TOG_SYSTEM))
        scores = [0.0] * len(names)
        for i, score in zip(order, parse_entity_scores(reply.text, shown)):
            scores[i] = score
        return list(zip(names, scores))
    method = "sbert" if method == "llm" else method
    raw = [max(0.0, s) for s in await _similarities(method, question, names, settings.embedder)]
    total = sum(raw)
    scores = [s / total for s in raw] if total > 0 else [1.0 / len(names)] * len(names)
    return list(zip(names, scores))


async def score_paths(question: str, paths: Sequence[str], settings: PruneSettings = SBERT_PATHS, *,
                      query: str | None = None, analysis: str = "") -> list[tuple[str, float]]:
    """The top-`settings.width` (path text, score) pairs, best first.

    `sbert`/`bm25`: similarity of `query` (e.g. PoG's thinking indicator; default the question) to
    each path. `llm`: PoG's precise path selection; the i-th chosen path scores 1/(i+1).
    """
    method = _check_method(settings.method)
    texts = list(paths)
    if not texts:
        return []
    if method == "llm" and llm_ready(settings.llm):
        selector = _Selector(question, analysis, query or question, settings)
        chosen = await selector.precise(texts, settings.width or len(texts))
        return [(texts[i], 1.0 / (rank + 1)) for rank, i in enumerate(chosen)]
    method = "sbert" if method == "llm" else method
    scores = await _similarities(method, query or question, texts, settings.embedder)
    return _top(list(zip(texts, scores)), settings.width)


# ---------------------------------------------------------------------------------------------
# PoG three-step beam search (paper 001, section 4.3 and Algorithm 2)
# ---------------------------------------------------------------------------------------------
_ARROW = re.compile(r"\s+(-\[[^\]]*\]->|<-\[[^\]]*\]-)\s+")
_BRACES = re.compile(r"\{[^{}]*\}")


@dataclass(frozen=True)
class _Path:
    """A path as alternating entity, relation, entity, ... items, and how to print a piece of it."""

    items: tuple[str, ...]
    joiner: str
    text: str

    @classmethod
    def of(cls, path: str | Sequence[str]) -> _Path:
        if not isinstance(path, str):
            items = tuple(str(x) for x in path)
            return cls(items, " - ", " - ".join(items))
        blocks = _BRACES.findall(path)
        if len(blocks) >= 3:  # PoG's `{e} - { -> r ->} - {e}` rendering
            return cls(tuple(blocks), " - ", path)
        parts = _ARROW.split(path)  # kgfed's `A -[r]-> B <-[r2]- C` (methods.base.render_path)
        return cls(tuple(p.strip() for p in parts), " ", path)

    def segment(self, entity: str, depth: int) -> str | None:
        """The first `depth` steps from `entity`: from the head, back from the tail, or from inside."""
        n = 2 * depth + 1
        if _names(self.items[0], entity):
            return self.joiner.join(self.items[:n])
        if _names(self.items[-1], entity):
            return self.joiner.join(self.items[-n:])
        for i in range(2, len(self.items) - 1, 2):
            if _names(self.items[i], entity):
                return self.joiner.join(self.items[i:i + n])
        return None


def _names(item: str, entity: str) -> bool:
    return item == entity or (len(entity) > 1 and entity in item)


class _Selector:
    """Fuzzy (SBERT) and precise (LLM, SBERT when LLM-free) selection over path texts."""

    def __init__(self, question: str, analysis: str, query: str, settings: PruneSettings):
        self.question, self.analysis, self.query = question, analysis, query
        self.llm, self.embedder, self.settings = settings.llm, settings.embedder, settings

    async def fuzzy(self, texts: Sequence[str], k: int) -> list[int]:
        """Indices of the k texts most similar to the query (indicator), best first."""
        if len(texts) <= k:
            return list(range(len(texts)))
        scores = await _need(self.embedder).similarity(self.query, texts)
        return sorted(range(len(texts)), key=lambda i: -scores[i])[:k]

    async def _ask(self, texts: Sequence[str]) -> list[int]:
        assert self.llm is not None  # only asked when llm_ready(self.llm)
        reply = await self.llm.complete(pog_path_select_prompt(self.question, self.analysis, texts),
                                        **self.settings.llm_call(None))
        try:
            return parse_path_selection(reply.text, len(texts))
        except LLMError:  # an unusable selection: rank this batch by similarity instead of failing the question
            charge("parse_fallbacks")
            return await self.fuzzy(texts, 3)

    async def precise(self, texts: Sequence[str], k: int) -> list[int]:
        """Indices of the k texts the LLM selects (batches of 40 asked concurrently, repeated until ≤ k)."""
        alive = list(range(len(texts)))
        if not llm_ready(self.llm):
            return await self.fuzzy(texts, k)
        while len(alive) > k:
            batches = [alive[i:i + PATHS_PER_CALL] for i in range(0, len(alive), PATHS_PER_CALL)]
            picks = await asyncio.gather(*(self._ask([texts[j] for j in batch]) for batch in batches))
            chosen = list(dict.fromkeys(batch[j] for batch, pick in zip(batches, picks) for j in pick))
            if not chosen or len(chosen) >= len(alive):
                alive = (chosen or alive)[:k]
                break
            alive = chosen
        return alive[:k]


async def pog_prune_paths(question: str, paths: Sequence[str | Sequence[str]], settings: PruneSettings = PruneSettings(),
                          beam: PathBeam = PathBeam(), *, indicator: str = "", analysis: str = "",
                          entities: Sequence[str] | None = None) -> list[int]:
    """Indices of the paths PoG's beam search keeps (at most `beam.width` = W_max), best first.

    Strategies (Algorithm 2): `fuzzy` — SBERT top-W_max against the indicator; `fuzzy+precise` —
    SBERT top-W1, then the LLM picks W_max (PoG's default); `fuzzy+branch` — SBERT top-W1, then
    branch-reduced selection to W_max; `fuzzy+branch+precise` (3-step) — SBERT top-W1, branch-reduced
    to W2, then the LLM picks W_max. Branch reduction looks at the first D steps of every path from
    each entity in `entities` (default: the paths' end entities) for D = 1..max_depth, lets the LLM
    keep W of those prefixes when there are more, and drops paths whose prefix was not kept
    (entity by entity, so the intersection never empties the candidate set).

    Paths are PoG strings (`{e} - { -> r ->} - {e}`), kgfed `render_path` strings, or item lists
    `[entity, relation, entity, ...]`. Without an available LLM every LLM step is SBERT top-W. The LLM,
    embedder and LLM call come from `settings` (its `method` and `width` do not apply: `beam` says).
    """
    strategy, width = beam.strategy, beam.width
    if strategy not in POG_STRATEGIES:
        raise KgfedError(f"unknown PoG pruning strategy {strategy!r}: use one of {', '.join(POG_STRATEGIES)}")
    parsed = [_Path.of(p) for p in paths]
    texts = [p.text for p in parsed]
    selector = _Selector(question, analysis, indicator or question, settings)
    if strategy == "fuzzy":
        return await selector.fuzzy(texts, width)
    alive = await selector.fuzzy(texts, beam.w1)
    if strategy == "fuzzy+precise":
        return [alive[i] for i in await selector.precise([texts[i] for i in alive], width)]
    if entities is None:
        entities = list(dict.fromkeys([p.items[0] for p in parsed] + [p.items[-1] for p in parsed]))
    if strategy == "fuzzy+branch":
        return await _branch_reduce(parsed, alive, width, beam.max_depth, entities, selector.precise)
    alive = await _branch_reduce(parsed, alive, beam.w2, beam.max_depth, entities, selector.precise)
    return [alive[i] for i in await selector.precise([texts[i] for i in alive], width)]


async def _branch_reduce(paths: Sequence[_Path], alive: list[int], width: int, max_depth: int, entities: Sequence[str],
                         select: Callable[[Sequence[str], int], Awaitable[list[int]]]) -> list[int]:
    """PoG's BranchReduceSelect: prune by D-step prefixes per entity, then select among full paths."""
    depth = 1
    while len(alive) >= width and depth <= max_depth:
        for entity in entities:  # entity by entity, so the kept prefixes always share a surviving path
            groups: dict[str, list[int]] = {}
            for i in alive:
                segment = paths[i].segment(entity, depth)
                if segment is not None:
                    groups.setdefault(segment, []).append(i)
            if len(groups) > width:
                segments = list(groups)
                kept = {segments[j] for j in await select(segments, width)}
                dropped = {i for s, ids in groups.items() if s not in kept for i in ids}
                alive = [i for i in alive if i not in dropped]
        depth += 1
    if len(alive) > width:
        alive = [alive[j] for j in await select([paths[i].text for i in alive], width)]
    return alive
