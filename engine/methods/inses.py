"""INSES (paper 002): LLM navigation over adjacent triples + embedding-similarity expansion, behind a router.

    method = INSES({"freebase": fb, "wikidata": wd}, llm, text=open_text_source("file:extracts.jsonl"))
    result = await method.answer("what country does justin bieber come from?", {"freebase": {"m.06w2sn5": "Justin Bieber"}})
    result.extra["router"]     # {"route": "rag" | "inses", "multi_hop": ..., "by": "llm" | "heuristic", ...}

Algorithm 2 (router): an LLM judges whether the query needs multi-hop (≥ 3) search; if not, naïve RAG over
Wikipedia passages answers with a confidence, kept when above `confidence` (else escalated). Algorithm 1
(INSES) then iterates at most `max_iter` (6) times: the navigator keeps the adjacent triples that help
(Table 5 prompt) and says when they suffice; similarity expansion (Eq. 4) adds, for each current node,
the most similar other entity (label embeddings, descriptions when both sides have one) when its cosine
reaches `tau_sim`; the next frontier is the kept triples' far ends plus those similar nodes, minus the
visited ones. Triples are hyperedges of `engine.hypergraph` (a CVT or a qualified statement is one fact).

LLM-free (`NoLLM`) stand-ins, by step: the navigator keeps the `width` triples whose path from a topic is
most similar to the question (SBERT) and stops when the best new path scores below the best kept one;
the router's hop judgement is `estimate_hops` (clause markers and topic count); naïve RAG has no reader,
so every question escalates; the answer is the far end of the best-scoring kept path.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..federation.hypergraph import Hypergraph, describe, grow
from ..federation.matching import best_matches, cosine_matrix
from ..toolbox.llm import ANSWER_TEMPERATURE
from ..toolbox.prompts import (
    INSES_ANSWER_PROMPT, INSES_EXTRACT_ENTITIES_PROMPT, INSES_NAVIGATION_PROMPT, INSES_RAG_PROMPT, INSES_ROUTER_PROMPT,
)
from .base import Result, Topics
from .hypergraph_method import JSON_STOP, HypergraphMethod, HypergraphParams, numbers
from .params import param

# -- defaults (paper §3.5: six iterations; the rest are not given by the paper and are kgfed's) ----------
MAX_ITER = 6
TAU_SIM = 0.9
SIM_MARGIN = 0.05
WIDTH = 3
MAX_TRIPLES = 40
CONFIDENCE = 0.7
MULTI_HOP = 3

_MARKERS = re.compile(r"\b(?:that|which|whose|who|whom|where|when|and|of the|of a|of an|by the|in the)\b|'s\b|’s\b", re.I)
_SUPERLATIVE = re.compile(r"\b(?:most|least|largest|smallest|biggest|first|last|earliest|latest|oldest|youngest|\w+est)\b", re.I)


def estimate_hops(question: str, topics: Topics | None = None) -> int:
    """LLM-free stand-in for the router's judgement: 1 + clause markers after the first word + extra topics.

    "what country does justin bieber come from?" → 1; "who is the spouse of the author of the novel that
    …" → ≥ 3. A superlative or comparison adds a step.
    """
    words = question.strip().split(maxsplit=1)
    rest = words[1] if len(words) > 1 else ""
    hops = 1 + len(_MARKERS.findall(rest)) + (1 if _SUPERLATIVE.search(rest) else 0)
    named = len({n for ids in (topics or {}).values() for n in ids.values()})
    return hops + max(0, named - 1)


@dataclass
class Chain:
    """How the search reached each node: (hyperedge or None for a similarity link, previous node)."""

    parent: dict[int, tuple[int | None, int]] = field(default_factory=dict)

    def steps(self, node: int) -> list[tuple[int | None, int, int]]:
        out, seen = [], {node}
        while node in self.parent:
            edge, prev = self.parent[node]
            out.append((edge, prev, node))
            if prev in seen:
                break
            seen.add(prev)
            node = prev
        return out[::-1]

    def reach(self, node: int, edge: int | None, prev: int) -> None:
        if node != prev:
            self.parent.setdefault(node, (edge, prev))


def step_text(hg: Hypergraph, edge: int | None, origin: int, target: int) -> str:
    """`A -[relation]-> B` for one hop across a hyperedge (n-ary: its kind and the far end's role)."""
    if edge is None:
        return f"-[similar to]-> {hg.label(target)}"
    h = hg.edges[edge]
    if h.kind == "binary":
        rel = h.label or h.relation
        arrow = f"-[{rel}]->" if h.members[0][1] == origin else f"<-[{rel}]-"
    else:
        kind = h.relation.split(".")[-1].replace("_", " ") if h.kind == "cvt" else (h.label or h.relation)
        extra = "".join(f"; {r} {v}" for r, v in h.attributes)
        arrow = f"-[{kind}: {h.role(target) or ''}{extra}]->"
    return f"{arrow} {hg.label(target)}"


def chain_text(hg: Hypergraph, chain: Chain, node: int, extra: tuple[int, int] | None = None) -> str:
    """The path from a seed to `node` (and one more hop `extra` = (edge, target)) as one line."""
    steps = chain.steps(node)
    start = steps[0][1] if steps else node
    parts = [hg.label(start)] + [step_text(hg, e, a, b) for e, a, b in steps]
    if extra is not None:
        parts.append(step_text(hg, extra[0], node, extra[1]))
    return " ".join(parts)


def triple_line(hg: Hypergraph, edge: int) -> str:
    """How the navigator sees a fact: `(head, relation, tail)` or the hyperedge's name."""
    h = hg.edges[edge]
    if h.kind == "binary":
        return f"({hg.label(h.members[0][1])}, {h.label or h.relation}, {hg.label(h.members[1][1])})"
    return f"({h.name})"


async def similar_nodes(hg: Hypergraph, kgs: Mapping[str, Any], nodes: Sequence[int], *, embedder: Any,
                        threshold: float = TAU_SIM, margin: float = SIM_MARGIN, exclude: set[int] | None = None) -> dict[int, tuple[int, float]]:
    """INSES Eq. 4: for each node u, the most similar other entity v*(u) when cos ≥ threshold (node -> (v*, cos)).

    Candidates are the entities carrying u's label in any KG (exact label/alias lookups, one batched
    query per KG) and every node of the hypergraph. Texts are labels; when both sides have a
    description, label + description (so two homonyms with different descriptions stay apart). Without
    descriptions a match must be unambiguous (kgfed's guard, as alignment's label rule): not two ids of
    one KG, and a name no other entity of either KG holds. A winner that leads the runner-up by less
    than `margin` is refused (two equally similar entities: no link).
    """
    import numpy as np

    nodes = [n for n in dict.fromkeys(nodes) if hg.nodes[n].label]
    if not nodes:
        return {}
    await _add_namesakes(hg, kgs, nodes)
    pool = [n for n in range(len(hg.nodes)) if hg.nodes[n].label and n not in (exclude or ())]
    sims = await cosine_matrix(embedder, [hg.label(n) for n in nodes], [hg.label(n) for n in pool])
    close = {(i, j) for i, j in zip(*np.nonzero(sims >= threshold - margin)) if nodes[i] != pool[j]}
    await describe(hg, kgs, list(nodes) + [pool[j] for _, j in close])
    await _rescore_described(hg, embedder, sims, [(i, j, nodes[i], pool[j]) for i, j in close])
    unambiguous = _label_guard(hg)
    candidates = np.full(sims.shape, -np.inf)
    for i, j in close:
        if unambiguous(nodes[i], pool[j]):
            candidates[i, j] = sims[i, j]
    return {nodes[r]: (pool[c], score) for r, c, score in best_matches(candidates, threshold, margin, mutual=False)}


async def _rescore_described(hg: Hypergraph, embedder: Any, sims, pairs: Sequence[tuple[int, int, int, int]]) -> None:
    """Pairs (row, column, u, v) with a description on both sides are scored on label + description instead."""
    import numpy as np

    both = [(i, j, u, v) for i, j, u, v in pairs if hg.descriptions.get(u) and hg.descriptions.get(v)]
    if both:
        vec = np.asarray(await embedder.encode([hg.text(u) for *_, u, _ in both] + [hg.text(v) for *_, v in both]))
        for k, (i, j, _, _) in enumerate(both):
            sims[i, j] = float(vec[k] @ vec[len(both) + k])


async def _add_namesakes(hg: Hypergraph, kgs: Mapping[str, Any], nodes: Sequence[int]) -> None:
    """Every entity of every KG carrying one of the nodes' labels (one batched lookup per KG) joins `hg`."""
    import asyncio

    labels = list(dict.fromkeys(hg.label(n) for n in nodes))
    names = list(kgs)
    found = await asyncio.gather(*(kgs[k].match_labels(labels) for k in names))
    for name, hits in zip(names, found):
        for bucket in hits.values():
            for hit in bucket:
                hg.add_node({name: hit.id}, hit.label)


def _label_guard(hg: Hypergraph):
    """kgfed's label-ambiguity guard: `(u, v) -> bool`. A pair with descriptions on both sides passes; a
    label-only pair must be unambiguous: never two ids of one KG (a KG gives two things two ids), and
    each name held by no other entity of either KG."""
    holders: dict[tuple[str, str], set[int]] = {}
    for n in range(len(hg.nodes)):
        if hg.nodes[n].label:
            for kg in hg.nodes[n].ids:
                holders.setdefault((kg, hg.label(n).strip().casefold()), set()).add(n)

    def unambiguous(u: int, v: int) -> bool:
        if hg.descriptions.get(u) and hg.descriptions.get(v):
            return True
        if set(hg.nodes[u].ids) & set(hg.nodes[v].ids):
            return False
        return all(len(holders.get((kg, hg.label(n).strip().casefold()), ())) <= 1 for n in (u, v) for kg in hg.nodes[n].ids)
    return unambiguous


@dataclass(frozen=True)
class INSESParams(HypergraphParams):
    """INSES's parameters (paper 002); `depth` (kgfed ask --depth) means max_iter."""

    ALIASES: ClassVar[Mapping[str, str]] = {"depth": "max_iter"}
    max_iter: int = param(MAX_ITER, help="navigation iterations")
    tau_sim: float = param(TAU_SIM, help="similarity threshold of the similarity-enhanced merge")
    sim_margin: float = param(SIM_MARGIN, help="margin over the second-best match")
    width: int = param(WIDTH, help="triples kept per step LLM-free")
    max_triples: int = param(MAX_TRIPLES, help="triples shown to the navigator, pre-ranked by SBERT")
    router: bool = param(True, help="route single-hop questions to naive RAG first")
    multi_hop: int = param(MULTI_HOP, help="estimated hops from which a question goes straight to graph search")
    confidence: float = param(CONFIDENCE, help="RAG answers below it escalate to graph search")
    top_k: int = param(10, help="passages for naive RAG")
    similarity: bool = param(True, help="the similarity-enhanced search")


class INSES(HypergraphMethod):
    """Intelligent Navigation and Similarity Enhanced Search, with the RAG/INSES router (paper 002).

    Params: `max_iter` (6), `tau_sim` (0.9), `sim_margin` (0.05), `width` (3, triples kept per step
    LLM-free), `max_triples` (40 shown to the navigator, pre-ranked by SBERT), `router` (True),
    `multi_hop` (3, hops from which a question goes straight to graph search), `confidence` (0.7, RAG
    answers below it escalate), `top_k` (10 passages), `hop_width`/`limit` (relations per entity and
    neighbours per relation when a node is expanded; None = all), `similarity` (True).
    """

    name = "inses"
    Params = INSESParams
    params: INSESParams
    LIMITS = {"router": (100, JSON_STOP), "rag": (300, JSON_STOP), "entities": (60, ("\n\n",)),
              "navigate": (150, JSON_STOP), "answer": (300, JSON_STOP)}

    # -- router (Algorithm 2) ----------------------------------------------------------------------------
    async def route(self, question: str, topics: Topics) -> dict[str, Any]:
        """Whether the question goes to naïve RAG first or straight to INSES, and why."""
        if self.llm_ready:
            reply = await self._ask(INSES_ROUTER_PROMPT.format(query=question), "router")
            multi = reply.get("multi_hop")
            multi = multi if isinstance(multi, bool) else str(multi).strip().lower() in {"true", "yes", "1"}
            return {"route": "inses" if multi else "rag", "multi_hop": multi, "by": "llm", "reason": str(reply.get("reason", ""))}
        hops = estimate_hops(question, topics)
        multi = hops >= self.params.multi_hop
        return {"route": "inses" if multi else "rag", "multi_hop": multi, "by": "heuristic", "hops": hops}

    async def rag(self, question: str, topics: Topics) -> dict[str, Any]:
        """Naïve RAG over the text source (Table 12 prompt): answer, confidence and the passages used."""
        if self.text is None:
            return {"answer": "", "confidence": 0.0, "reason": "no text source (pass --text-source)"}
        from ..text.context import retrieve_context
        from ..kg.facade import KG

        wiki = next((kg for kg in self.kgs.values() if kg.dialect.supports("sitelinks")), None)
        entities = [e for ids in topics.values() for e in ids]
        passages = await retrieve_context(question, entities, text_source=self.text, kg=wiki if isinstance(wiki, KG) else None,
                                          top_k=self.params.top_k, embedder=self.embedder)
        if not passages:
            return {"answer": "", "confidence": 0.0, "passages": 0, "reason": "no passage for the topic entities"}
        if not self.llm_ready:
            return {"answer": "", "confidence": 0.0, "passages": len(passages), "reason": "LLM-free: no reader for the passages"}
        context = "\n\n".join(f"[{p.title}] {p.text}" for p in passages)
        reply = await self._ask(INSES_RAG_PROMPT.format(query=question, context=context), "rag", ANSWER_TEMPERATURE)
        try:
            confidence = float(reply.get("confidence", 0.0))
        except (TypeError, ValueError):
            confidence = 0.0
        return {"answer": str(reply.get("answer", "")).strip(), "confidence": confidence, "passages": len(passages),
                "titles": list(dict.fromkeys(p.title for p in passages if p.title))}

    # -- answer -----------------------------------------------------------------------------------------
    async def _answer(self, question: str, topics: Topics) -> Result:
        decision: dict[str, Any] = {"route": "inses", "by": "off"}
        if self.params.router:
            decision = await self.route(question, topics)
            if decision["route"] == "rag":
                rag = await self.rag(question, topics)
                decision["rag_confidence"] = rag["confidence"]
                decision["rag_reason"] = rag.get("reason", "")
                if rag["answer"] and rag["confidence"] > self.params.confidence:
                    decision["answered_by"] = "rag"
                    return Result(question, rag["answer"], reasoning="naive RAG", extra={"router": decision, "rag": rag})
                decision["escalated"] = True
        decision["answered_by"] = "inses"
        result = await self.search(question, topics)
        result.extra["router"] = decision
        return result

    async def seeds(self, question: str, topics: Topics, hg: Hypergraph) -> list[int]:
        """V_init: the topic entities (Eq. 1's LLM extraction + nearest label only when none are given)."""
        found = [hg.add_node({kg: e}, name, topic=True) for kg, ids in topics.items() for e, name in ids.items() if kg in self.kgs]
        if found or not self.llm_ready:
            return list(dict.fromkeys(found))
        reply = await self._ask(INSES_EXTRACT_ENTITIES_PROMPT.format(query=question), "entities", json_mode=False)
        mentions = [m.strip() for m in reply.split(",") if m.strip()]
        for name, kg in self.kgs.items():
            for hits in (await kg.match_labels(mentions)).values() if mentions else ():
                found += [hg.add_node({name: h.id}, h.label, topic=True) for h in hits[:1]]
        return list(dict.fromkeys(found))

    async def search(self, question: str, topics: Topics) -> Result:
        """Algorithm 1 over the hypergraph view of the KGs; the answer from the selected triples."""
        hg = Hypergraph()
        current = await self.seeds(question, topics, hg)
        chain = Chain()
        visited: set[int] = set()
        selected: dict[int, float] = {}
        scores: dict[int, float] = {}  # hyperedge -> score of the best path through it
        node_scores: dict[int, float] = {}  # node -> score of the best path reaching it
        trace: list[dict[str, Any]] = []
        links: list[dict[str, Any]] = []
        best = float("-inf")
        for iteration in range(self.params.max_iter):
            if not current:
                break
            visited.update(current)
            await grow(hg, self.kgs, current, width=self.params.hop_width, limit=self.params.limit)
            adjacent = [(e, u) for u in current for e in hg.incident(u, kinds=("binary", "cvt", "statement")) if e not in selected]
            adjacent = list({e: (e, u) for e, u in adjacent}.values())
            step = {"iteration": iteration, "current": [hg.label(u) for u in current], "adjacent": len(adjacent)}
            kept, sufficient, step_best = await self.navigate(question, hg, chain, adjacent, selected, visited, current, scores, node_scores)
            candidates: list[int] = []
            for e, u in kept:
                selected[e] = scores.get(e, 0.0)
                for t in hg.edges[e].nodes:
                    if t not in visited:
                        chain.reach(t, e, u)
                        candidates.append(t)
            step.update({"selected": [triple_line(hg, e) for e, _ in kept], "sufficient": sufficient})
            if not self.llm_ready:  # stand-in for the navigator's "sufficient": no better path than before
                sufficient = bool(selected) and step_best <= best
                best = max(best, step_best)
            trace.append(step)
            if sufficient:
                break
            similar: list[int] = []
            if self.params.similarity:
                found = await similar_nodes(hg, self.kgs, current, embedder=self.embedder, threshold=self.params.tau_sim,
                                            margin=self.params.sim_margin, exclude=set())
                for u, (v, score) in found.items():
                    if v not in visited:
                        chain.reach(v, None, u)
                        similar.append(v)
                    links.append({"from": hg.label(u), "from_ids": dict(hg.nodes[u].ids), "to": hg.label(v),
                                  "to_ids": dict(hg.nodes[v].ids), "cosine": round(score, 4)})
                step["similar"] = [hg.label(v) for v in similar]
            current = [n for n in dict.fromkeys(candidates + similar) if n not in visited]
        return await self.conclude(question, hg, chain, selected, node_scores, trace, links)

    async def navigate(self, question: str, hg: Hypergraph, chain: Chain, adjacent: list[tuple[int, int]],
                       selected: Mapping[int, float], visited: set[int], current: Sequence[int],
                       scores: dict[int, float], node_scores: dict[int, float]) -> tuple[list[tuple[int, int]], bool, float]:
        """Eq. 3: the adjacent triples to keep, whether the knowledge suffices, and the best path score."""
        if not adjacent:
            return [], False, float("-inf")
        texts, owners = [], []
        for k, (e, u) in enumerate(adjacent):
            for t in hg.edges[e].nodes - {u}:
                texts.append(chain_text(hg, chain, u, (e, t)))
                owners.append((k, t))
        sims = await self.embedder.similarity(question, texts) if texts else []
        per_edge: dict[int, float] = {}
        for (k, t), s in zip(owners, sims):
            per_edge[k] = max(per_edge.get(k, float("-inf")), s)
            e = adjacent[k][0]
            scores[e] = max(scores.get(e, float("-inf")), s)
            if t not in visited:
                node_scores[t] = max(node_scores.get(t, float("-inf")), s)
        order = sorted(per_edge, key=lambda k: -per_edge[k])
        step_best = per_edge[order[0]] if order else float("-inf")
        if not self.llm_ready:
            return [adjacent[k] for k in order[:self.params.width]], False, step_best
        shown = order[:self.params.max_triples]
        prompt = INSES_NAVIGATION_PROMPT.format(
            query=question,
            visited="\n".join(hg.label(v) for v in visited if v not in current) or "none",
            selected="\n".join(triple_line(hg, e) for e in selected) or "none",
            current="\n".join(hg.label(u) for u in current) or "none",
            adjacent="\n".join(f"{i}. {triple_line(hg, adjacent[k][0])}" for i, k in enumerate(shown, 1)) or "none",
        )
        reply = await self._ask(prompt, "navigate")
        picked = [shown[i] for i in numbers(reply.get("selection", ""), len(shown))]
        sufficient = str(reply.get("determination", "")).strip().lower() == "sufficient"
        return [adjacent[k] for k in picked], sufficient, step_best

    async def conclude(self, question: str, hg: Hypergraph, chain: Chain, selected: Mapping[int, float],
                       node_scores: Mapping[int, float], trace: list[dict[str, Any]], links: list[dict[str, Any]]) -> Result:
        """The answer from the selected triples (Table 6 prompt; LLM-free: the best path's far end)."""
        ends = [n for e in selected for n in hg.edges[e].nodes if not hg.nodes[n].topic and n in chain.parent]
        ends = sorted(dict.fromkeys(ends), key=lambda n: -node_scores.get(n, float("-inf")))
        paths = [[hg.as_edge(e, a, b) for e, a, b in chain.steps(n) if e is not None] for n in ends[:3]]
        extra = {"iterations": trace, "similarity_links": links, "selected": [triple_line(hg, e) for e in selected]}
        if self.llm_ready and selected:
            context = "\n".join(triple_line(hg, e) for e in selected)
            reply = await self._ask(INSES_ANSWER_PROMPT.format(query=question, context=context), "answer", ANSWER_TEMPERATURE)
            answer = str(reply.get("answer", "")).strip()
            ids = [hg.id_in(n) for n in ends if answer and hg.label(n).lower() == answer.lower()]
            return Result(question, answer, ids, paths, reasoning=str(reply.get("reasoning", "")), extra=extra)
        if not ends:
            return Result(question, "", [], [], reasoning="no path reached an answer", extra=extra)
        top = ends[0]
        return Result(question, hg.label(top), [hg.id_in(top)], paths, reasoning=chain_text(hg, chain, top), extra=extra)


__all__ = ["INSES", "estimate_hops", "similar_nodes"]
