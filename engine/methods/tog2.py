"""Think-on-Graph 2.0 (ToG-2, Ma et al., ICLR 2025): KG exploration and entity-document retrieval, alternating.

Algorithm 1 of the paper (papers/003): the topic entities' documents give the first top-K chunks and
a first sufficiency check; then, per iteration up to `depth`:

1. relation discovery and pruning from the current topic entities (ToG's hop code: `ToG.relation_step`,
   relations scoring below `relation_threshold` dropped when an LLM prunes);
2. entity discovery (`ToG.entity_step`, one batched query per KG);
3. knowledge-guided context retrieval: the candidates' documents (`context.entity_pages`, then the
   page titled by the entity's label, then the text source's search when it has one) chunked and
   ranked against the question with the triple sentence that reached each candidate in front (Eq. 5,
   `context.rank_pages(path_text=...)`), top-K kept as Ctx^i;
4. context-based entity pruning (Eq. 6, `context.entity_scores`: Σ s_k·e^(−α·k) over the top-K);
   the top `width` become the next topic entities (candidates without a document fill free slots
   in relation-score order);
5. reasoning with hybrid knowledge: ToG-2's prompt (Appendix E, Table 18) with the clues of the
   previous round, the triple paths and their contexts; `{Yes}` answers, `{No}` gives the next clues.

After `depth` rounds without `{Yes}` the LLM answers on its own (ToG's fallback). LLM-free, relations
are pruned by SBERT, there is no sufficiency check, and the answer is the kept chain end that best
fits the question (`ToG.choose_answer`: the context acts through the pruning, as in the paper; adding
the context score to the choice lowered the demo set from 0.76 to 0.47), else the title of the
best-ranked page.

Parameters (paper defaults, §4.1): width=3, depth=3, top_k=10 (K), relation_threshold=0.2,
temperature 0 for every call; alpha=0.3 (Eq. 6's decay: the paper gives no value, kgfed's choice),
ranker="sbert" (the paper's BGE-embedding is not available offline; MiniLM is its Fig. 3a
alternative), max_documents=20 (candidates per relation whose documents are read; more are cut
by SBERT name similarity), pruning as for ToG. `text`: a text source (`context.open_text_source`); without one ToG-2 runs on the
KG alone (ToG's entity scores) and says so in `extra["warnings"]`.
"""
from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ...cache.costs import charge
from ..text.context import TOP_K, Passage, entity_pages, entity_scores, rank_pages
from ..kg.facade import KG
from ..toolbox.prompts import Group, extract_answer, parse_sufficient, tog2_reasoning_prompt
from ..toolbox.pruning import PruneSettings, score_entities
from .base import Result, Topics
from .params import param
from .tog import Chain, Hop, ToG, ToGParams, Trace, edge_triple

ALPHA = 0.3  # Eq. 6 decay; not stated in the paper
RELATION_THRESHOLD = 0.2  # §4.1: "a threshold of 0.2 to filter relations with low relevance scores"

NO_TEXT = ("no text source: entities were pruned by ToG's scores, without documents; pass "
           "text=open_text_source('file:extracts.jsonl' | 'wikipedia' | 'demo') (CLI: --text)")

@dataclass(frozen=True)
class ToG2Params(ToGParams):
    """ToG-2's parameters: ToG's, sampled at 0, and the context retrieval's (paper §4.1)."""

    exploration_temperature: float = param(0.0, help="temperature of the pruning calls (ToG-2 samples every call at 0)")
    top_k: int = param(TOP_K, low=1, help="K, chunks kept as context")
    alpha: float = param(ALPHA, help="Eq. 6's decay (the paper gives no value)")
    relation_threshold: float = param(RELATION_THRESHOLD, help="relations scoring below it are dropped when an LLM prunes")
    ranker: str = param("sbert", help="how chunks are ranked against the question")
    max_documents: int = param(20, help="candidates per relation whose documents are read")


class ToG2(ToG):
    """ToG-2: ToG's hops with context-guided entity pruning over the entities' documents."""

    name = "tog2"
    Params = ToG2Params
    READS_TEXT = True
    params: ToG2Params

    def __init__(self, kgs: Mapping[str, KG], llm, *, embedder=None, text=None, **params: Any):
        super().__init__(kgs, llm, embedder=embedder, text=text, **params)
        self._page_kg = next((kg for kg in self.kgs.values() if kg.dialect.supports("sitelinks")), None)

    # -- documents and passages --------------------------------------------------------------------
    async def documents(self, names: Mapping[str, str]) -> dict[str, Any]:
        """Pages of entities (id → label): by id (sitelinks/P646/Q-id), else titled by the label, else the
        text source's search for the label (when it has one). Entities without text are left out."""
        ids = [e for e in names]
        if self.text is None:
            return {}
        pages = {e: p for e, p in (await entity_pages(ids, text_source=self.text, kg=self._page_kg)).items() if p.text} if ids else {}
        by_label = {e: names[e] for e in ids if e not in pages and names[e]}
        if by_label:
            found = await self.text.pages(list(dict.fromkeys(by_label.values())))
            pages.update({e: found[label] for e, label in by_label.items() if found.get(label) and found[label].text})
        searchable = [e for e in by_label if e not in pages]
        if searchable and hasattr(self.text, "search"):
            results = await asyncio.gather(*(self.text.search(names[e], 1) for e in searchable), return_exceptions=True)
            titles = {e: r.hits[0].title for e, r in zip(searchable, results) if not isinstance(r, BaseException) and r.hits}
            if titles:
                found = await self.text.pages(list(dict.fromkeys(titles.values())))
                pages.update({e: found[t] for e, t in titles.items() if found.get(t) and found[t].text})
        charge("entity_pages", len(ids))  # documents asked for / found, per question
        charge("entity_pages_found", len(pages))
        return pages

    async def context(self, question: str, chains: Sequence[Chain]) -> list[Passage]:
        """Top-K chunks of the chains' end entities' documents, each scored with its triple sentence (Eq. 5)."""
        ends = {c.entity: c for c in chains if c.expandable}
        pages = await self.documents({e: c.name if c.name != "UnName_Entity" else "" for e, c in ends.items()})
        if not pages:
            return []
        path_text = {e: " ".join(edge_triple(ends[e].edges[-1])) for e in pages if ends[e].edges}
        return await rank_pages(question, pages, top_k=self.params.top_k, ranker=self.params.ranker,  # type: ignore[arg-type]
                                path_text=path_text or None, embedder=self.embedder)

    # -- the search --------------------------------------------------------------------------------
    async def _answer(self, question: str, topics: Topics) -> Result:
        trace = Trace()
        if self.text is None:
            trace.warnings.append(NO_TEXT)
        beam = self.start(topics)
        clues, passages = "", await self.context(question, beam)
        contexts: list[Passage] = list(passages)
        if self.llm_ready:
            reply = await self._reason(question, clues, beam, passages)
            if parse_sufficient(reply):
                trace.stop = "sufficient from the topic entities' documents"
                return self._hybrid_result(question, reply, trace, contexts, clues)
            clues = extract_answer(reply) or clues
        for depth in range(1, self.params.depth + 1):
            if not beam:
                break
            hops = await self.relation_step(question, beam, trace)
            if self.params.pruning == "llm" and self.llm_ready:
                hops = [h for h in hops if h.score >= self.params.relation_threshold]
            expanded = await self.entity_step(hops)
            candidates = await self._candidates(question, expanded)
            if not candidates:
                trace.stop = f"no entity found at depth {depth}"
                break
            passages = await self.context(question, candidates)
            kept = self.prune(await self._context_scores(question, candidates, passages, expanded, trace))
            if not kept:
                trace.stop = f"no entity kept at depth {depth}"
                break
            trace.depth = depth
            trace.kept.extend(kept)
            contexts = passages or contexts
            beam = [c for c in kept if c.expandable]
            if self.llm_ready:
                reply = await self._reason(question, clues, kept, passages)
                if parse_sufficient(reply):
                    trace.stop = f"sufficient at depth {depth}"
                    return self._hybrid_result(question, reply, trace, contexts, clues)
                clues = extract_answer(reply) or clues
        trace.stop = trace.stop or f"depth {self.params.depth} reached"
        if self.llm_ready:
            result = await self.conclude(question, trace)
        else:
            result = await self.choose_answer(question, trace)  # the context acted through the pruning
            if not result.answer:
                result = self._title_answer(question, trace, contexts, topics) or result
        return self._with_context(result, contexts, clues)

    def _title_answer(self, question: str, trace: Trace, contexts: Sequence[Passage], topics: Topics) -> Result | None:
        """LLM-free, no entity reached in the KG: the title of the page whose chunks rank best (Eq. 6 over
        titles), other than a topic entity's own — the text source did the work."""
        names = {n.casefold() for ids in topics.values() for n in ids.values()}
        by_title = entity_scores([replace(p, entity=p.title or "") for p in contexts], alpha=self.params.alpha)
        scores = {t: v for t, v in by_title.items() if t and t.casefold() not in names}
        if not scores:
            return None
        title = max(scores, key=scores.__getitem__)
        return Result(question, title, [], [], reasoning=f"LLM-free ToG-2: no KG entity reached; best-ranked page {title!r} "
                      f"({scores[title]:.3f})", extra=self._extra(trace))

    async def _candidates(self, question: str, expanded: Sequence[tuple[Hop, list]]) -> list[Chain]:
        """Every neighbour as a chain (scored by its relation for now); wide relations cut to `max_documents`
        by SBERT similarity of the names, as ToG cuts wide relations before entity scoring."""
        chains: list[Chain] = []
        for hop, edges in expanded:
            if len(edges) > self.params.max_documents:
                named = [e for e in edges if e.label]
                scores = await score_entities(question, [e.label or "" for e in named],
                                              PruneSettings(method="sbert", embedder=self.embedder))
                edges = [e for e, _ in sorted(zip(named, scores), key=lambda p: -p[1][1])[:self.params.max_documents]]
            chains.extend(hop.chain.extend(e, hop.score) for e in edges)
        return chains

    async def _context_scores(self, question: str, candidates: Sequence[Chain], passages: Sequence[Passage],
                              expanded: Sequence[tuple[Hop, list]], trace: Trace) -> list[Chain]:
        """Eq. 6 scores; without any document among the candidates, ToG's entity scores instead."""
        scores = entity_scores(passages, alpha=self.params.alpha)
        if not any(v > 0 for v in scores.values()):
            if self.text is not None:
                trace.warnings.append("no candidate entity has a document: ToG's entity scores used")
            return await self.score_step(question, expanded, trace)
        floor = 1e-3 * min(v for v in scores.values() if v > 0)  # document-less candidates fill free slots
        return [replace(c, score=scores[c.entity] if scores.get(c.entity, 0) > 0 else floor * c.score) for c in candidates]

    async def _reason(self, question: str, clues: str, chains: Sequence[Chain], passages: Sequence[Passage]) -> str:
        by_entity: dict[str, list[str]] = {}
        for p in passages:
            by_entity.setdefault(p.entity, []).append(p.text)
        groups: list[Group] = [([edge_triple(e) for e in c.edges], by_entity.pop(c.entity, [])) for c in chains]
        groups += [((), texts) for texts in by_entity.values()]  # top-K chunks of entities not kept
        groups = [g for g in groups if g[0] or g[1]]
        return await self._ask(tog2_reasoning_prompt(question, clues, groups), "reasoning")

    def _hybrid_result(self, question: str, reply: str, trace: Trace, contexts: Sequence[Passage], clues: str) -> Result:
        return self._with_context(self._result(question, reply, trace), contexts, clues)

    def _with_context(self, result: Result, contexts: Sequence[Passage], clues: str) -> Result:
        result.extra["passages"] = [{"entity": p.entity, "title": p.title, "score": round(p.score, 4), "text": p.text} for p in contexts]
        if clues:
            result.extra["clues"] = clues
        return result
