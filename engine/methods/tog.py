"""Think-on-Graph (ToG, Sun et al., ICLR 2024): beam search over one or more KGs, pruned by an LLM.

Per depth (ToG's `main_freebase.py` loop): relation search for the whole beam (one batched
`relations_many` per KG), relation pruning (ToG's prompt per beam entity, sampled at the
exploration temperature 0.4 as ToG's code does; SBERT/BM25 when LLM-free), entity search (every
(entity, relation, direction) of the hop in one `neighbors_many` per KG), entity scoring (ToG's
prompt; score = relation score × entity score), entity pruning to the top `width`, then the
sufficiency check (`{Yes}`/`{No}`) over every triple kept so far. `{Yes}` ends the search with that
reply; an empty hop answers from the triples found (ToG's `half_stop`); reaching `depth` without
`{Yes}` makes the LLM answer on its own (ToG's `generate_without_explored_paths`).

Several KGs: each KG is explored from its own topic entities with its own beam of `width`; one
sufficiency check sees the triples of all of them; every edge keeps its `kg`.

LLM-free (`llm.available` is False): SBERT relation and entity scores, the search runs to `depth`,
and the answer is the kept chain end that best fits the question (see `choose_answer`). The LLM's
prompts of a step are asked concurrently; SBERT/BM25 scoring runs chain after chain (`ToG._each`).

Parameters (keyword arguments of the constructor, all optional):
    width=3, depth=3                  ToG's beam width W and maximum depth D
    pruning="llm"                     relation/entity scoring: llm | sbert | bm25 (llm falls back to
                                      sbert without an available LLM)
    max_candidates=20, retain=5       ToG samples `retain` of ≥ `max_candidates` neighbours before
                                      LLM entity scoring (seeded per question here)
    exploration_temperature=0.4, reasoning_temperature=0.0, max_tokens=256
    exact_prompts=True                ToG's prompt strings byte for byte (quirks included)
    stop_sequences=False              end every reply at "\nQ:" and cap it per prompt kind (relations
                                      120, entities 80, evaluation/answer 120 tokens; `TOG_LIMITS`):
                                      for small local models, which otherwise invent the next "Q: …"
                                      and run to `max_tokens` (ToG's code sends no stop; the replay
                                      key then includes the stop sequence)
    seed=0                            seeds ToG's neighbour sampling
    hop_penalty=0.03, agreement=0.1   LLM-free answer choice (`choose_answer`): subtracted per extra
                                      hop, added per further topic entity reaching the same entity;
                                      tuned on CWQ questions 1-150 only
"""
from __future__ import annotations

import asyncio
import hashlib
import random
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ...cache.costs import charge
from ...sparql.errors import InvalidIdentifier, KgfedError, LLMError
from ..kg.facade import KG
from ..toolbox.llm import ANSWER_TEMPERATURE, DEFAULT_MAX_TOKENS, EXPLORATION_TEMPERATURE, LLM
from ..kg.model import Edge
from ..toolbox.pruning import PruneSettings, ScoreMethod, relation_text, score_entities, score_relations
from ..toolbox.prompts import (
    TOG_SYSTEM, extract_answer, parse_sufficient, tog_answer_prompt, tog_evaluate_prompt, tog_generate_directly_prompt,
)
from .base import UNNAMED, Method, Result, Topics, render_path
from .params import MethodParams, param

# per prompt kind with `stop_sequences` (a small local model's replies; ToG's own code sends no stop)
TOG_LIMITS = {"relations": (120, ("\nQ:",)), "entities": (80, ("\nQ:",)), "evaluate": (120, ("\nQ:",)),
              "answer": (120, ("\nQ:",)),
              "reasoning": (200, ("\nQuestion:", "\nExample"))}  # ToG-2's reasoning prompt has no "Q:" lines


T = TypeVar("T")


async def _together(awaitables: Sequence[Awaitable[T]]) -> list[T]:
    """`asyncio.gather` of `awaitables`, but one is simply awaited: no task for the common single KG or
    single chain (a replay runs a whole question without suspending, so a task is pure overhead)."""
    if len(awaitables) == 1:
        return [await awaitables[0]]
    return list(await asyncio.gather(*awaitables))


@dataclass(frozen=True)
class Chain:
    """A reasoning chain of the beam: the edges walked from a topic entity, and ToG's running score."""

    kg: str
    topic: str
    topic_name: str
    edges: tuple[Edge, ...] = ()
    score: float = 1.0

    @property
    def entity(self) -> str:
        return self.edges[-1].entity if self.edges else self.topic

    @property
    def name(self) -> str:
        return (self.edges[-1].label or UNNAMED) if self.edges else self.topic_name

    @property
    def expandable(self) -> bool:
        return not (self.edges and self.edges[-1].literal)

    def extend(self, edge: Edge, score: float) -> Chain:
        """The chain one edge longer (the first edge carries the topic's name where the KG gave none)."""
        if not self.edges and not (edge.subject_label if edge.direction == "out" else edge.object_label):
            edge = edge.with_origin_label(self.topic_name)
        return Chain(self.kg, self.topic, self.topic_name, self.edges + (edge,), score)  # replace() costs 3x

    def text(self) -> str:
        return render_path(self.edges) if self.edges else self.topic_name

    def sentence(self) -> str:
        """The chain in words for embedding: `Central America location location contains Guatemala`."""
        words = [self.topic_name]
        for edge in self.edges:
            words += [relation_text(edge.relation_label or edge.relation), edge.label or ""]
        return " ".join(w for w in words if w)


@dataclass(frozen=True)
class Hop:
    """A relation chosen for a chain in one direction, with its pruning score."""

    chain: Chain
    relation: str
    direction: str
    score: float


@dataclass
class Trace:
    """What one question's search did, for `Result.extra` and the LLM-free answer."""

    depth: int = 0
    kept: list[Chain] = field(default_factory=list)        # every chain kept, all depths, in order
    warnings: list[str] = field(default_factory=list)
    stop: str = ""

    def triples(self) -> list[tuple[str, str, str]]:
        """The knowledge triplets ToG shows the LLM: the last edge of every kept chain, once each."""
        seen: dict[tuple[str, str, str], None] = {}
        for chain in self.kept:
            if chain.edges:
                seen.setdefault(edge_triple(chain.edges[-1]), None)
        return list(seen)


def edge_triple(edge: Edge) -> tuple[str, str, str]:
    """(subject name, relation, object name) as ToG prints a knowledge triplet."""
    return (edge.subject_label or UNNAMED, edge.relation_label or edge.relation, edge.object_label or UNNAMED)


def _is_wiki(kg: KG) -> bool:
    """ToG's Wikidata prompt style: relations shown by their labels (opaque ids such as P19)."""
    return kg.dialect.relation_labels


class _Tap:
    """Passes calls to the LLM and notes whether it replied, so a reply that parses to nothing can be
    told apart from a provider failure."""

    def __init__(self, llm: LLM):
        self.llm = llm
        self.available = llm.available
        self.replied = False

    async def complete(self, *args: Any, **kwargs: Any):
        reply = await self.llm.complete(*args, **kwargs)
        self.replied = True
        return reply


@dataclass(frozen=True)
class ToGParams(MethodParams):
    """ToG's parameters (see the module docstring); `--width`/`--depth` are ToG's own names."""

    width: int = param(3, low=1, help="beam width W")
    depth: int = param(3, low=1, help="maximum depth D")
    pruning: ScoreMethod = param("llm", help="relation/entity scoring (llm falls back to sbert without an available LLM)")
    max_candidates: int = param(20, help="neighbours from which ToG samples `retain` before LLM entity scoring")
    retain: int = param(5, help="neighbours sampled (seeded per question)")
    exploration_temperature: float = param(EXPLORATION_TEMPERATURE, help="temperature of the pruning calls")
    reasoning_temperature: float = param(ANSWER_TEMPERATURE, help="temperature of the evaluation and answer calls")
    max_tokens: int = param(DEFAULT_MAX_TOKENS, help="reply cap per LLM call")
    exact_prompts: bool = param(True, help="ToG's prompt strings byte for byte (quirks included)")
    stop_sequences: bool = param(False, help="end every reply at \"\\nQ:\" and cap it per prompt kind (small local models)")
    seed: int = param(0, help="seeds ToG's neighbour sampling")
    agreement: float = param(0.1, help="LLM-free answer choice: added per further topic entity reaching the entity")
    hop_penalty: float = param(0.03, help="LLM-free answer choice: subtracted per extra hop")


class ToG(Method):
    """Think-on-Graph beam search (width 3, depth 3 by default) over every KG in `kgs`."""

    name = "tog"

    Params = ToGParams
    params: ToGParams
    LIMITS = TOG_LIMITS

    # -- the search --------------------------------------------------------------------------------
    def start(self, topics: Topics) -> list[Chain]:
        """One empty chain per topic entity of every KG in `self.kgs` (unknown KG names are an error)."""
        unknown = [name for name, ids in topics.items() if ids and name not in self.kgs]
        if unknown:
            raise KgfedError(f"topics name KG {', '.join(unknown)} but the method has {', '.join(self.kgs)}: "
                             "give topics per KG name in use")
        chains = []
        for name, ids in topics.items():
            if name not in self.kgs:
                continue
            for ident, label in ids.items():
                try:
                    self.kgs[name].check(ident)
                except InvalidIdentifier as exc:
                    raise KgfedError(f"topic {ident!r}: {exc}") from None
                chains.append(Chain(name, ident, label or ident))
        return chains

    async def _answer(self, question: str, topics: Topics) -> Result:
        trace = Trace()
        beam = self.start(topics)
        reply = ""
        for depth in range(1, self.params.depth + 1):
            if not beam:
                break
            hops = await self.relation_step(question, beam, trace)
            candidates = await self.score_step(question, await self.entity_step(hops), trace)
            kept = self.prune(candidates)
            if not kept:
                trace.stop = f"no entity found at depth {depth}"
                break
            trace.depth = depth
            trace.kept.extend(kept)
            beam = [c for c in kept if c.expandable]
            if self.llm_ready:
                reply = await self._ask(tog_evaluate_prompt(question, trace.triples(), wiki=self._wiki(kept),
                                                            exact=self.params.exact_prompts))
                if parse_sufficient(reply):
                    trace.stop = f"sufficient at depth {depth}"
                    return self._result(question, reply, trace)
        else:
            trace.stop = trace.stop or f"depth {self.params.depth} reached"
        return await self.conclude(question, trace)

    def _wiki(self, chains: Iterable[Chain]) -> bool:
        """Use ToG's Wikidata prompts when every chain is on a Wikidata-dialect KG."""
        names = {c.kg for c in chains} or set(self.kgs)
        return all(_is_wiki(self.kgs[n]) for n in names)

    async def relation_step(self, question: str, beam: Sequence[Chain], trace: Trace) -> list[Hop]:
        """Relations of the whole beam (one batch per KG), pruned to the top `width` per chain."""
        by_kg: dict[str, list[str]] = {}
        for chain in beam:
            by_kg.setdefault(chain.kg, []).append(chain.entity)
        found = dict(zip(by_kg, await _together([self.kgs[k].relations_many(ids) for k, ids in by_kg.items()])))
        pruned = await self._each(self._prune_relations,
                                  [(question, chain, found[chain.kg].get(chain.entity, []), trace) for chain in beam])
        return [hop for hops in pruned for hop in hops]

    async def _each(self, score: Callable[..., Awaitable[T]], calls: Sequence[tuple]) -> list[T]:
        """`score(*args)` for each of `calls` (the chains or hops of a step), in order: concurrently when
        the LLM scores them (its replies take seconds: ToG's calls overlap), else one after another.
        SBERT/BM25 scoring is CPU work, which the questions in flight already overlap; a task per chain
        only added loop turns (LLM-free ToG on 538 CWQ questions: same answers, faster cold and warm)."""
        if self.params.pruning == "llm" and self.llm_ready:
            return await _together([score(*args) for args in calls])
        return [await score(*args) for args in calls]

    async def _prune_relations(self, question: str, chain: Chain, relations, trace: Trace) -> list[Hop]:
        used = {e.relation for e in chain.edges}  # ToG never walks a relation of the chain again
        options: dict[str, list[tuple[str, str]]] = {}
        kg = self.kgs[chain.kg]
        for rel in relations:
            if rel.relation in used:
                continue
            shown = rel.label if _is_wiki(kg) and rel.label else rel.relation
            options.setdefault(shown, []).append((rel.relation, rel.direction))
        if not options:
            return []
        scored = await self.score_relation_names(question, chain, list(options), trace)
        return [Hop(chain, rel, direction, score) for shown, score in scored for rel, direction in options[shown]]

    async def score_relation_names(self, question: str, chain: Chain, names: list[str], trace: Trace) -> list[tuple[str, float]]:
        """ToG's relation pruning of one chain's relations (LLM, falling back to SBERT on an unusable reply)."""
        entity, wiki = chain.name, _is_wiki(self.kgs[chain.kg])
        sbert = PruneSettings(method="sbert", embedder=self.embedder, width=self.params.width)
        if self.params.pruning == "llm" and self.llm_ready:
            tap = _Tap(self.llm)
            scoring = PruneSettings(method="llm", llm=tap, embedder=sbert.embedder, width=sbert.width,  # type: ignore[arg-type]
                                    temperature=self.params.exploration_temperature, **self.limits("relations"))
            try:
                return await score_relations(question, names, scoring, entity=entity, wiki=wiki)
            except LLMError as exc:
                if not tap.replied:
                    raise
                charge("parse_fallbacks")
                trace.warnings.append(f"relation pruning of {chain.name}: {exc}; used sbert")
                return await score_relations(question, names, sbert, entity=entity, wiki=wiki)
        method: ScoreMethod = self.params.pruning if self.params.pruning != "llm" else "sbert"
        scoring = PruneSettings(method=method, embedder=sbert.embedder, width=sbert.width)
        return await score_relations(question, names, scoring, entity=entity, wiki=wiki)

    async def entity_step(self, hops: Sequence[Hop]) -> list[tuple[Hop, list[Edge]]]:
        """Neighbours over every chosen (entity, relation, direction) of the hop, one batch per KG."""
        by_kg: dict[str, list[tuple[str, str, str]]] = {}
        for hop in hops:
            by_kg.setdefault(hop.chain.kg, []).append((hop.chain.entity, hop.relation, hop.direction))
        found = dict(zip(by_kg, await _together([self.kgs[k].neighbors_many(t) for k, t in by_kg.items()])))
        out = []
        for hop in hops:
            edges = found[hop.chain.kg].get((hop.chain.entity, hop.relation, hop.direction), [])
            seen = {e.origin for e in hop.chain.edges} | {hop.chain.topic}
            edges = [e for e in edges if e.entity not in seen]  # never step back onto the chain
            if edges:
                out.append((hop, edges))
        return out

    async def score_step(self, question: str, expanded: Sequence[tuple[Hop, list[Edge]]], trace: Trace) -> list[Chain]:
        """ToG's entity scoring of every hop's neighbours (see `_each`): chain score = relation × entity score."""
        scored = await self._each(self._score_entities, [(question, hop, edges) for hop, edges in expanded])
        return [chain for chains in scored for chain in chains]

    async def _score_entities(self, question: str, hop: Hop, edges: list[Edge]) -> list[Chain]:
        named = [e for e in edges if e.label]
        if not named:  # ToG: nameless candidates share the relation's score equally
            return [hop.chain.extend(e, hop.score / len(edges)) for e in edges]
        llm = self.params.pruning == "llm" and self.llm_ready
        if llm and len(named) >= self.params.max_candidates:  # ToG samples before asking the LLM
            named = self._rng(hop).sample(named, self.params.retain)
        method: ScoreMethod = "llm" if llm else (self.params.pruning if self.params.pruning != "llm" else "sbert")
        relation = self._relation_name(hop, edges[0])
        scoring = PruneSettings(method=method, llm=self.llm, embedder=self.embedder,
                                temperature=self.params.exploration_temperature, **self.limits("entities"))
        scores = await score_entities(question, [e.label or UNNAMED for e in named], scoring, relation=relation,
                                      wiki=_is_wiki(self.kgs[hop.chain.kg]))
        return [hop.chain.extend(e, hop.score * s) for e, (_, s) in zip(named, scores)]

    def _relation_name(self, hop: Hop, edge: Edge) -> str:
        return (edge.relation_label or hop.relation) if _is_wiki(self.kgs[hop.chain.kg]) else hop.relation

    def _rng(self, hop: Hop) -> random.Random:
        key = f"{self.params.seed}|{hop.chain.kg}|{hop.chain.entity}|{hop.relation}|{hop.direction}"
        return random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))

    def prune(self, candidates: Sequence[Chain]) -> list[Chain]:
        """ToG's entity pruning: the top `width` chains with a positive score, per KG, one chain per
        (topic, entity) — an entity reached from two topic entities keeps both chains."""
        kept: list[Chain] = []
        for kg in dict.fromkeys(c.kg for c in candidates):
            best: dict[tuple[str, str], Chain] = {}
            # scores rounded so that float noise of batched embeddings never reorders equal candidates
            for chain in sorted((c for c in candidates if c.kg == kg), key=lambda c: -round(c.score, 6)):
                if chain.score > 0 and (chain.topic, chain.entity) not in best:
                    best[(chain.topic, chain.entity)] = chain
            kept.extend(list(best.values())[:self.params.width])
        return kept

    # -- answering ---------------------------------------------------------------------------------
    async def _ask(self, prompt: str, kind: str = "evaluate") -> str:
        return await self.ask(prompt, kind, temperature=self.params.reasoning_temperature, system=TOG_SYSTEM)

    async def conclude(self, question: str, trace: Trace) -> Result:
        """No `{Yes}`: ToG answers from the triples after an empty hop, on its own after `depth` hops."""
        if not self.llm_ready:
            return await self.choose_answer(question, trace)
        if trace.kept and trace.stop.startswith("no entity"):
            prompt = tog_answer_prompt(question, trace.triples(), wiki=self._wiki(trace.kept), exact=self.params.exact_prompts)
        else:
            trace.stop += "; answered without the graph"
            prompt = tog_generate_directly_prompt(question)
        return self._result(question, await self._ask(prompt, "answer"), trace)

    def _result(self, question: str, reply: str, trace: Trace) -> Result:
        answer = extract_answer(reply)
        if not answer:  # no `{answer}`: ToG keeps the whole reply as the answer; counted
            charge("parse_fallbacks")
            answer = reply.strip()
        folded = answer.casefold()
        chains = [c for c in trace.kept if c.edges]
        hits = [c for c in chains if c.name.casefold() == folded]
        ids = list(dict.fromkeys(c.entity for c in hits))
        paths = [list(c.edges) for c in (hits or chains)]
        return Result(question, answer, ids, paths, reasoning=reply, extra=self._extra(trace))

    def _extra(self, trace: Trace) -> dict[str, Any]:
        return {"depth": trace.depth, "stop": trace.stop, **({"warnings": trace.warnings} if trace.warnings else {}),
                "chains": [{"kg": c.kg, "score": round(c.score, 6), "path": c.text()} for c in trace.kept]}

    async def choose_answer(self, question: str, trace: Trace) -> Result:
        """LLM-free answer: the kept chain end that best fits the question.

        Candidates are the named, non-topic ends of every kept chain. Each scores the SBERT
        similarity of the question with its chain's text, plus `agreement` for every further topic
        entity whose chains also reach it (conjunctions) — the reasoning path is what is compared,
        so a relation that says what the question asks for wins over a merely similar name.
        """
        topics = {c.topic for c in trace.kept}
        candidates = [c for c in trace.kept if c.edges and c.edges[-1].label and c.entity not in topics]
        if not candidates:
            return Result(question, "", [], [], reasoning="LLM-free ToG: no named entity reached from the topic entities",
                          extra=self._extra(trace))
        sims = await self.embedder.similarity(question, [c.sentence() for c in candidates])
        reached: dict[tuple[str, str], set[str]] = {}
        for chain in candidates:
            reached.setdefault((chain.kg, chain.entity), set()).add(chain.topic)
        agreement, hop_penalty = self.params.agreement, self.params.hop_penalty

        def fit(chain: Chain, sim: float) -> float:
            return sim + agreement * (len(reached[(chain.kg, chain.entity)]) - 1) - hop_penalty * (len(chain.edges) - 1)

        ranked = sorted(((c, fit(c, s)) for c, s in zip(candidates, sims)), key=lambda p: -p[1])
        best = ranked[0][0]
        same = [c for c, _ in ranked if c.name.casefold() == best.name.casefold()]
        why = "; ".join(f"{c.text()} ({s:.3f})" for c, s in ranked[:3])
        return Result(question, best.name, list(dict.fromkeys(c.entity for c in same)), [list(c.edges) for c in same],
                      reasoning=f"LLM-free ToG: best-fitting chains {why}", extra=self._extra(trace))
