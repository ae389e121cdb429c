"""HydraRAG (Tan et al.; papers/000), KG sources: cross-source verified paths over merged Freebase + Wikidata.

    hydra = HydraRAG({"freebase": fb, "wikidata": wd}, make_llm("none"), text=open_text_source("demo"))
    result = await hydra.answer("what country does justin bieber come from?",
                                {"freebase": {"m.06w2sn5": "Justin Bieber"}, "wikidata": {"Q34086": "Justin Bieber"}})

Steps (paper §4, Algorithms 1–4): available evidence (KGs with topic entities, the text source when
given, a web-search provider when given), question analysis (skyline indicator, split questions,
D_predict; PoG's prompt), the agentic source selector, then three exploration phases — initial (selected
sources, D_predict), refined (LLM follow-up question, all sources, D_max), predicted (LLM-predicted
entities) — each followed by evidence pruning and a sufficiency check. Structured retrieval is PoG's
machinery over the merged multi-KG subgraph (`subgraph.expand` over every KG, aligned entities merged)
with tree-based BiBFS: the best W1 partial paths are grown at each depth. Evidence pruning ranks by
relevance (top W1), then by `cross_score` (top W2), then the LLM keeps W_max (LLM-free: top W_max).

Web search is an interface (`WebSearch`) with no default provider: pass `web=` an object with
`name` and `async search(query, limit) -> list[WebDoc]`.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ...cache.costs import charge
from ...sparql.errors import KgfedError
from ..text.context import RHO, passage_edges, rank_pages, retrieve_context
from ..toolbox.llm import EXPLORATION_TEMPERATURE, ask
from ..toolbox.prompts import (
    HYDRA_REFINE_PROMPT, HYDRA_SOURCE_SELECT_PROMPT, POG_SUPPLEMENT_PROMPT, QuestionAnalysis, parse_question_analysis,
)
from ..toolbox.pruning import PruneSettings, score_paths
from .base import Result, Topics
from .params import param
from .pog import FUZZY_POOL, POG_LIMITS, ClusteredPath, Graph, PoG, PoGParams, chain_paths, listing, parse_supplement, unique_paths

ALPHAS = (1 / 3, 1 / 3, 1 / 3)  # the paper's alpha_k = 0.33 each, taken as exactly 1/3 so that sum alpha_k = 1
# KG candidate paths embedded LLM-free (at most W1): PoG's W1. Over the 538 CWQ questions, cold, it wrote the
# answers of a W1 (100) pool at 2.13 instead of 1.87 q/s (13 reasoning chains differ); over the 54 federation
# questions the same answers on either KG alone and 2 of 54 different over both (Hits@1 equal).
LLM_FREE_POOL = 80
SELF_SIMILAR = 0.999  # a unit vector's float32 cosine with itself is at least this (it is 1 up to rounding)

ACTIONS = {"1": "kg", "2": "wikipedia", "3": "web"}
# PoG's prompt kinds plus HydraRAG's own, with `stop_sequences=true` (see pog.POG_LIMITS)
HYDRA_LIMITS = {**POG_LIMITS, "source": (120, ("\nQ:",)), "refine": (160, ("\nQ:",))}


# -- the cross-source verification score (paper §4.3) ------------------------------------------------------
@dataclass(frozen=True)
class CrossScore:
    """HydraRAG's scores of one candidate path: relevance, the three reliability features, verification, cross."""

    relevance: float
    f1: float
    f2: float
    f3: float
    verification: float
    cross: float


def jaccard(a: Iterable, b: Iterable) -> float:
    a, b = set(a), set(b)
    return len(a & b) / len(a | b) if a | b else 0.0


def cross_score(semantic: float, topics: Iterable, entities: Iterable, *, rho: float, supporting_sources: int,
                graph_entities: Iterable, lambda_sem: float = 0.7, alpha_cross: float = 0.7,
                alphas: Sequence[float] = ALPHAS, max_width: int = 3) -> CrossScore:
    """The paper's score of one path p_i (pure; every input given).

    s_rel = λsem·cos(h(I), h(p_i)) + λent·Jaccard(Topic(q), Ent(p_i)), λent = 1 − λsem;
    f1 = ρ_src(p_i); f2 = min(|Supp(p_i)|, W_max) / W_max; f3 = |Ent(p_i) ∩ E_q| / |Ent(p_i)|;
    s_ver = Σ α_k f_k; cross = α_cross·s_rel + (1 − α_cross)·s_ver.
    `semantic` is the cosine, `supporting_sources` is |Supp(p_i)|, `graph_entities` is E_q.
    """
    if not 0.0 <= lambda_sem <= 1.0 or not 0.0 <= alpha_cross <= 1.0:
        raise KgfedError(f"lambda_sem={lambda_sem} and alpha_cross={alpha_cross} must lie in [0, 1]")
    if len(alphas) != 3 or any(a < 0 for a in alphas):
        raise KgfedError(f"alphas {tuple(alphas)} must be three non-negative weights (the paper: 0.33 each)")
    ents = set(entities)
    relevance = lambda_sem * semantic + (1.0 - lambda_sem) * jaccard(topics, ents)
    f1 = rho
    f2 = min(supporting_sources, max_width) / max_width
    known = graph_entities if isinstance(graph_entities, (set, frozenset)) else set(graph_entities)
    f3 = len(ents & known) / len(ents) if ents else 0.0
    verification = alphas[0] * f1 + alphas[1] * f2 + alphas[2] * f3
    return CrossScore(relevance, f1, f2, f3, verification, alpha_cross * relevance + (1.0 - alpha_cross) * verification)


# -- web search: an interface without a default provider -------------------------------------------------------
@dataclass(frozen=True)
class WebDoc:
    """One web search result."""

    title: str
    url: str
    text: str


@runtime_checkable
class WebSearch(Protocol):
    """A web-search provider (HydraRAG uses Google via SerpAPI); kgfed ships none."""

    name: str

    async def search(self, query: str, limit: int = 3) -> list[WebDoc]: ...


# -- the method -------------------------------------------------------------------------------------------
_MENTION = re.compile(r"\b[A-Z][\w'’.-]*(?:\s+(?:of|the|de|and|[A-Z][\w'’.-]*))*")


@dataclass(frozen=True)
class HydraParams(PoGParams):
    """HydraRAG's parameters (paper defaults; PoG's, with W1=100): see `HydraRAG`."""

    w1: int = param(100, low=1, help="relevance top-W1; also the per-depth beam while growing trees")
    w2: int = param(20, low=1, help="the cross-score's top-W2")
    lambda_sem: float = param(0.7, help="λsem (λent = 1 − λsem)")
    alpha_cross: float = param(0.7, help="α_cross")
    alphas: tuple[float, ...] = param(ALPHAS, help="α_1..3 (the paper's 0.33, taken as 1/3 so that Σα = 1)")
    rho: dict[str, float] = param(factory=lambda: dict(RHO), help="source reliability ρ (f1)")
    gamma: float = param(0.8, help="cosine threshold of Supp(p) (the paper names γ without a value)")
    web: WebSearch | None = param(None, help="a `WebSearch` provider (`name`, `async search(query, limit) -> "
                                  "list[WebDoc]`; Python only); none ships")
    select_sources: bool = param(True, help="ask the LLM's agentic source selector (LLM-free: every available source)")
    relevance_pool: int | None = param(None, help="KG candidate paths embedded for s_rel: the N best by the beam's step "
                                       "score; 0: every candidate (Algorithm 4 as printed); None: 4·W1 with an LLM, "
                                       "LLM-free 80 (PoG's W1; at most W1)")


class HydraRAG(PoG):
    """HydraRAG over KG (and optional text/web) sources. Params (paper defaults): `max_width` W_max=3,
    `max_depth` D_max=3, `w1`=100, `w2`=20, `lambda_sem`=0.7, `alpha_cross`=0.7, `alphas`=(1/3,1/3,1/3),
    `rho` per source type {"kg": 1.0, "wikipedia": 0.8, "web": 0.7}, `gamma` support similarity threshold
    (0.8; the paper leaves it unset), `web` a WebSearch provider (None), `select_sources` run the agentic
    selector when an LLM is present (True), `relevance_pool` embed for the relevance ranking only the best N
    KG candidate paths by the BiBFS beam's own step score (0: every candidate, as the paper's Algorithm 4
    reads, about 1,000 path texts never seen before per CWQ question; None: 4·W1 with an LLM (PoG's `fuzzy_pool` bound), LLM-free 80
    (PoG's W1, at most W1: the answers of a W1 pool on all 538 CWQ questions, 1.14x as fast)), plus
    PoG's `relation_width`, `neighbor_limit`, `align`, `max_tokens`."""

    name = "hydra"
    LIMITS = HYDRA_LIMITS
    Params = HydraParams
    READS_TEXT = True
    params: HydraParams

    def __init__(self, kgs, llm, *, embedder=None, text=None, **params: Any):
        super().__init__(kgs, llm, embedder=embedder, text=text, **params)
        web = self.params.web
        if web is not None and not isinstance(web, WebSearch):
            raise KgfedError("web= must be a WebSearch provider (an object with name and async search(query, limit))")

    # -- sources --
    def available(self, topics: Topics) -> list[str]:
        """S_t: 'kg' when a KG holds a topic entity, 'wikipedia' with a text source, 'web' with a provider."""
        found = ["kg"] if any(ids for kg, ids in topics.items() if kg in self.kgs) else []
        if self.text is not None:
            found.append("wikipedia")
        if self.params.web is not None:
            found.append("web")
        return found

    async def select_sources(self, question: str, available: list[str], analysis: QuestionAnalysis | None) -> list[str]:
        """The agentic source selector (LLM); LLM-free or on an unusable reply every available source."""
        if not self.llm_ready or not self.params.select_sources or len(available) <= 1:
            return list(available)
        names = {"kg": "KG", "wikipedia": "Wiki", "web": "Web"}
        prompt = (HYDRA_SOURCE_SELECT_PROMPT + f"\nQ: {question}\nProvided sources: {', '.join(names[s] for s in available)}\n"
                  f"Question analysis: {self.context(analysis)}\nA:")
        reply = await ask(self.llm, prompt, temperature=EXPLORATION_TEMPERATURE, **self.limits("source"))
        chosen = [ACTIONS[d] for d in re.findall(r"action\s*([123])", reply, re.I)]
        chosen = [s for s in dict.fromkeys(chosen) if s in available]
        if not chosen:  # no readable action (a real reply reasoned past its token cap): every source, counted
            charge("parse_fallbacks")
        return chosen or list(available)

    # -- retrieval --
    async def structured(self, graph: Graph, order: Sequence[int], depth: int, query: str, exact: bool) -> list[ClusteredPath]:
        """Tree-based BiBFS paths through all topic entities in order (W1 seeds kept per depth)."""
        n = len(order)
        # the level score (every relation text of G_q encoded) only where a beam reads it: connecting paths
        # between several topics need none (`relevance_candidates` scores them itself when it must cut)
        level_score = await self.level_scorer(query, graph, order) if n == 1 else None
        total = (n * (depth - 1), n * depth) if exact else (0, n * depth)
        paths = await self.off_loop(chain_paths, graph, list(order), depth, total=total, beam=self.params.w1, score=level_score,
                                    segment=n * depth if n > 1 else depth)
        if not paths and len(order) > 1:  # no path joins every topic: grow from each one
            level_score = await self.level_scorer(query, graph, order)
            paths = await self.off_loop(lambda: [p for t in order for p in chain_paths(graph, [t], depth, beam=self.params.w1,
                                                                                          score=level_score)])
        return paths

    async def level_scorer(self, query: str, graph: Graph, topics: Iterable[int], paths: Sequence[ClusteredPath] | None = None
                           ) -> Callable[[ClusteredPath], float]:
        """The cross-score's relevance part, cheap per step: λsem · the steps' mean relation-word similarity to
        `query` + λent · Jaccard(topics, Ent(p)). The BiBFS beam grows by it; `relevance_pool` ranks by it
        (`paths`: only those are scored, so only their relations are encoded)."""
        step = await self.step_scorer(query, graph, paths)
        lam, topics = self.params.lambda_sem, set(topics)
        return lambda path: lam * step(path) + (1 - lam) * jaccard(topics, self.entities_of(path))

    async def unstructured(self, question: str, graph: Graph, order: Sequence[int], query: str, sources: Sequence[str]) -> list[ClusteredPath]:
        """Top-W_max passages of the topic entities' pages (ranked against the indicator) and web results, as text paths."""
        width = self.params.max_width
        found: list[ClusteredPath] = []
        if "wikipedia" in sources and self.text is not None:
            wiki_kg = next((kg for name, kg in self.kgs.items() if name in graph.merged.kgs and kg.dialect.supports("sitelinks")), None)
            ids = [ident for t in order for name in self.kgs if (ident := graph.merged.nodes[t].ids.get(name))]
            passages = await retrieve_context(query, ids, text_source=self.text, kg=wiki_kg, top_k=width, embedder=self.embedder)
            for edge in passage_edges(passages, rho=self.params.rho["wikipedia"]):
                anchor = next((t for t in order if edge.entity in graph.merged.nodes[t].ids.values()), order[0])
                found.append(self._text_path(graph, anchor, edge.path_text(), "wikipedia"))
        if "web" in sources and self.params.web is not None:
            from ...endpoints.wikipedia import Page

            docs = await self.params.web.search(question, width)
            pages = {doc.url or doc.title: Page(doc.title, doc.text, key=doc.url, source="web") for doc in docs}
            for passage in await rank_pages(query, pages, top_k=width, embedder=self.embedder):
                found.append(self._text_path(graph, order[0], f'{{{passage.title}}} -[web]-> "{passage.text}"', "web"))
        return found

    def _text_path(self, graph: Graph, anchor: int, text: str, source: str) -> ClusteredPath:
        """A text evidence path; its entities are G_q nodes named in the text (plus unmatched capitalised mentions)."""
        low = text.lower()
        named = {i for i in range(len(graph.merged.nodes))
                 if graph.named(i) and len(graph.name(i)) >= 4 and re.search(r"\b" + re.escape(graph.name(i).lower()) + r"\b", low)}
        known = {graph.name(i).lower() for i in named}
        mentions = {m.strip() for m in _MENTION.findall(text) if len(m.strip()) >= 4}
        unmatched = {("mention", m.lower()) for m in mentions if not any(m.lower() in k or k in m.lower() for k in known)}
        return ClusteredPath([frozenset([anchor])], [], [], source=source, text=text,
                             entities=frozenset(named | {anchor}) | frozenset(unmatched))

    # -- evidence pruning (Algorithm 4) --
    def source_of(self, path: ClusteredPath) -> str:
        if path.source != "kg":
            return path.source
        kgs = sorted({s.kg for s in path.steps})
        return "+".join(kgs) or "kg"

    def rho_of(self, path: ClusteredPath) -> float:
        return self.params.rho.get("kg" if path.source == "kg" else path.source, self.params.rho.get("kg", 1.0))

    @staticmethod
    def entities_of(path: ClusteredPath) -> frozenset:
        return path.entities if path.entities is not None else frozenset(path.nodes())

    async def score(self, query: str, graph: Graph, candidates: list[ClusteredPath], topic_nodes: Sequence[int]
                    ) -> list[tuple[ClusteredPath, CrossScore]]:
        """Relevance top-W1, then cross-scores, best first (all of them, for the caller to cut at W2)."""
        if not candidates:
            return []
        candidates = await self.relevance_candidates(query, graph, candidates, topic_nodes)
        texts = [self.sbert_text(graph, p) for p in candidates]
        embedder = self.embedder
        sims = await embedder.similarity(query, texts)
        lam = self.params.lambda_sem
        rel = [lam * s + (1 - lam) * jaccard(topic_nodes, self.entities_of(p)) for s, p in zip(sims, candidates)]
        top = sorted(range(len(candidates)), key=lambda i: -rel[i])[: self.params.w1]
        pool = [candidates[i] for i in top]
        graph_nodes = frozenset(range(len(graph.merged.nodes)))
        sources = [self.source_of(p) for p in pool]
        if len(set(sources)) == 1 and self.params.gamma <= SELF_SIMILAR:
            # One source (a single KG, no text): every path's Supp is that source alone, since a unit vector's
            # cosine with itself reaches gamma; the verification texts need no encoding (same scores).
            supports = [1] * len(pool)
        else:
            vectors = await embedder.encode([self.verify_text(graph, p) for p in pool])
            close = (vectors @ vectors.T) >= self.params.gamma
            supports = [len({sources[b] for b in close[a].nonzero()[0]}) for a in range(len(pool))]
        scored = []
        for a, i in enumerate(top):
            path = candidates[i]
            score = cross_score(sims[i], topic_nodes, self.entities_of(path), rho=self.rho_of(path),
                                supporting_sources=supports[a], graph_entities=graph_nodes, lambda_sem=lam, alpha_cross=self.params.alpha_cross,
                                alphas=self.params.alphas, max_width=self.params.max_width)
            scored.append((path, score))
        scored.sort(key=lambda ps: -ps[1].cross)
        return scored

    async def relevance_candidates(self, query: str, graph: Graph, candidates: list[ClusteredPath],
                                   topic_nodes: Sequence[int]) -> list[ClusteredPath]:
        """The candidates whose texts are embedded, in the given order: every text path and the `relevance_pool`
        (0: all; None: all with an LLM, LLM-free LLM_FREE_POOL but at most W1) best KG paths by the relevance
        score with the path text's similarity replaced by its steps' mean relation-word similarity, the score
        the BiBFS beam grew them by."""
        pool = self.params.relevance_pool
        if pool is None:  # with an LLM as PoG's `fuzzy_pool`: the FUZZY_POOL·W1 best by the step score
            pool = FUZZY_POOL * self.params.w1 if self.llm_ready else min(self.params.w1, LLM_FREE_POOL)
        kg_paths = [i for i, p in enumerate(candidates) if p.source == "kg"]
        if not pool or len(kg_paths) <= pool:
            return candidates
        level_score = await self.level_scorer(query, graph, topic_nodes, [candidates[i] for i in kg_paths])
        cheap = {i: level_score(candidates[i]) for i in kg_paths}
        keep = set(sorted(kg_paths, key=lambda i: -cheap[i])[:pool])
        return [p for i, p in enumerate(candidates) if p.source != "kg" or i in keep]

    def verify_text(self, graph: Graph, path: ClusteredPath) -> str:
        """What two paths are compared on for corroboration: end entities and relation words."""
        if path.text:
            return path.text
        return self.sbert_text(graph, path) + " ; " + graph.set_text(path.sets[-1], 3)[1:-1]

    async def prune_evidence(self, question: str, query: str, graph: Graph, candidates: list[ClusteredPath],
                             topic_nodes: Sequence[int], analysis: QuestionAnalysis | None) -> list[tuple[ClusteredPath, CrossScore]]:
        """Algorithm 4: relevance → cross-score top-W2 → the LLM's W_max (LLM-free: the top W_max by cross-score)."""
        scored = (await self.score(query, graph, unique_paths(candidates), topic_nodes))[: self.params.w2]
        if not self.llm_ready or len(scored) <= self.params.max_width:
            return scored[: self.params.max_width]
        texts = [p.text or graph.render(p) for p, _ in scored]
        scoring = PruneSettings(method="llm", llm=self.llm, embedder=self.embedder, width=self.params.max_width,
                                **self.limits("select"))
        picked = await score_paths(question, texts, scoring, query=query, analysis=self.context(analysis))
        by_text = {t: k for k, t in reversed(list(enumerate(texts)))}
        return [scored[by_text[t]] for t, _ in picked if t in by_text]

    # -- the algorithm --
    async def _answer(self, question: str, topics: Topics) -> Result:
        graph, topic_nodes = await self.detect(topics)
        available = self.available(topics)
        if not self.llm_ready:
            return await self._answer_free_sources(question, graph, topic_nodes, available)
        return await self._answer_llm_sources(question, graph, topic_nodes, available)

    async def _answer_free_sources(self, question: str, graph: Graph, topic_nodes: list[int], available: list[str]) -> Result:
        """LLM-free HydraRAG: every source, paths to D_max, cross-score pruning, embedding answer choice.

        Candidates named in the kept text evidence gain its cross-score (cross-source corroboration)."""
        paths = await self.structured(graph, topic_nodes, self.params.max_depth, question, exact=False)
        paths += await self.unstructured(question, graph, topic_nodes, question, available)
        kept = await self.prune_evidence(question, question, graph, paths, topic_nodes, None)
        kg_ranked = [(p, s.cross) for p, s in kept if p.source == "kg"]
        order, best, scores = await self.choose_answer(question, graph, kg_ranked, topic_nodes)
        for path, s in kept:
            if path.source != "kg":
                for i in self.entities_of(path):
                    if isinstance(i, int) and i in scores:
                        scores[i] += s.cross
        order = sorted(scores, key=lambda i: (-scores[i], graph.name(i)))
        answer = graph.name(order[0]) if order else ""
        return self.result(question, graph, answer, order[:1], [p for p, _ in kept], llm_free=True, sources=available,
                           scores=[_score_json(s) for _, s in kept], graph_nodes=len(graph.merged.nodes),
                           graph_edges=len(graph.merged.edges), candidates=len(paths))

    async def _answer_llm_sources(self, question: str, graph: Graph, topic_nodes: list[int], available: list[str]) -> Result:
        analysis = await self.analyse(question, graph, topic_nodes)
        indicator = analysis.indicator or question
        order = self.reorder(graph, topic_nodes, indicator)
        selected = await self.select_sources(question, available, analysis)
        dmax = self.params.max_depth
        history: list[ClusteredPath] = []
        # initial exploration: the selected sources at D_predict
        kept, done = await self._phase(question, question, graph, order, min(analysis.depth, dmax), indicator, selected,
                                       analysis, "initial", exact=True)
        if done:
            return done
        history += [p for p, _ in kept]
        # refined exploration: a follow-up question and indicator over every available source at D_max
        topics_text = ", ".join(graph.name(i) for i in order)
        reply = await ask(self.llm, HYDRA_REFINE_PROMPT + f"\nQ: {question}\nTopic Entity: {topics_text}\n{self.context(analysis)}"
                          f"Existing Knowledge Paths:\n{listing(graph, history)}\nA:",
                          temperature=EXPLORATION_TEMPERATURE, **self.limits("refine"))
        follow = re.search(r"new\s*question\s*:\s*(.+)", reply, re.I)
        new_indicator = parse_question_analysis(reply).indicator or indicator
        kept, done = await self._phase(question, follow.group(1).strip() if follow else question, graph, order, dmax,
                                       new_indicator, available, analysis, "refined", exact=False)
        if done:
            return done
        history += [p for p, _ in kept]
        # predicted exploration: LLM-predicted entities joined to the topics
        predicted = await self._predicted(question, graph, order, history, analysis)
        kept = await self.prune_evidence(question, indicator, graph, predicted, order, analysis)
        done = await self._check(question, graph, kept, analysis, "predicted", available)
        if done:
            return done
        history += [p for p, _ in kept]
        final = await self.prune_evidence(question, indicator, graph, history, order, analysis)
        answer = await self.generate(question, graph, [p for p, _ in final], analysis)
        return self._finish(question, graph, answer, final, analysis, "final", available, "")

    async def _phase(self, question: str, ask: str, graph: Graph, order: list[int], depth: int, query: str,
                     sources: list[str], analysis: QuestionAnalysis, phase: str, *, exact: bool
                     ) -> tuple[list[tuple[ClusteredPath, CrossScore]], Result | None]:
        """One exploration phase: structured + unstructured retrieval from `sources`, pruning, the check."""
        paths = await self.structured(graph, order, depth, query, exact=exact) if "kg" in sources else []
        paths += await self.unstructured(ask, graph, order, query, sources)
        kept = await self.prune_evidence(question, query, graph, paths, order, analysis)
        return kept, await self._check(question, graph, kept, analysis, phase, sources)

    async def _check(self, question: str, graph: Graph, kept: list[tuple[ClusteredPath, CrossScore]],
                     analysis: QuestionAnalysis, phase: str, sources: list[str]) -> Result | None:
        if not kept:
            return None
        ok, answer, summary = await self.summarize_and_check(question, graph, [p for p, _ in kept], analysis)
        return self._finish(question, graph, answer, kept, analysis, phase, sources, summary) if ok else None

    def _finish(self, question: str, graph: Graph, answer: str, kept: list[tuple[ClusteredPath, CrossScore]],
                analysis: QuestionAnalysis, phase: str, sources: list[str], summary: str) -> Result:
        paths = [p for p, _ in kept]
        return self.result(question, graph, answer, self.nodes_named(graph, answer, paths), paths, phase=phase,
                           reasoning=summary, indicator=analysis.indicator, split_questions=analysis.split_questions,
                           depth=analysis.depth, sources=sources, scores=[_score_json(s) for _, s in kept])

    async def _predicted(self, question: str, graph: Graph, order: list[int], history: list[ClusteredPath],
                         analysis: QuestionAnalysis) -> list[ClusteredPath]:
        """Predict exploration: the LLM names likely answers; those found in G_q join the topic list (D_max)."""
        prompt = (POG_SUPPLEMENT_PROMPT + f"\nQ: {question}\nTopic Entity: {', '.join(graph.name(i) for i in order)}\n"
                  f"{self.context(analysis)}Existing Knowledge Paths:\n{listing(graph, history)}\nA:")
        reply = await ask(self.llm, prompt, temperature=EXPLORATION_TEMPERATURE, **self.limits("supplement"))
        found: list[ClusteredPath] = []
        for entity, cot in parse_supplement(reply):
            target = await self.locate(graph, entity, exclude=order)
            if target is None:
                continue
            chain = self.reorder(graph, order + [target], cot)
            found += await self.structured(graph, chain, self.params.max_depth, cot, exact=False)
        return found


def _score_json(score: CrossScore) -> dict[str, float]:
    return {k: round(v, 4) for k, v in score.__dict__.items()}
