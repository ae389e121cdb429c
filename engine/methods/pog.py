"""Paths-over-Graph (PoG, Tan et al.; papers/001): multi-hop KGQA by paths that connect all topic entities.

    pog = PoG({"freebase": kg}, make_llm("none"))
    result = await pog.answer("Which nation has the Alta Verapaz Department and is in Central America?",
                              {"freebase": {"m.01tzh": "Central America", "m.0146np": "Alta Verapaz Department"}})

Steps (paper §4, Algorithm 1): (1) question subgraph G_q: every topic entity expanded to D_max hops
over all KGs at once (`subgraph.expand`, batched queries, aligned entities merged); (2) question
analysis (thinking indicator, split questions, D_predict); (3) three exploration phases: topic-entity
paths from D_predict to D_max, LLM-supplement paths through predicted entities, node-expand paths
one hop beyond G_q; after each, PoG's beam-search pruning (`pruning.pog_prune_paths`), path summary
and a sufficiency check; (4) the answer, or the LLM's own knowledge when every phase is exhausted.

Node and relation clustering: entities reached from the same entity set by the same relation (one KG,
one direction) form one supernode, so a path is a relation sequence with entity sets,
`{Central America} -> location.location.contains -> {Guatemala}`. Graph reduction: for topic-entity
lists, bidirectional BFS distances keep only nodes lying on a connecting path of the allowed length.

LLM-free (`llm.available` False): paths of every depth 1..D_max are ranked by SBERT similarity to the
question (fuzzy selection, top W_max), and the answer is the candidate entity of the best paths whose
path score, support and name similarity to the question is highest. Parameters: see `PoGParams`.
"""
from __future__ import annotations

import asyncio
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ...cache.costs import charge
from ...sparql.errors import KgfedError
from ..federation.align import Aligner
from ..toolbox.llm import ANSWER_TEMPERATURE, EXPLORATION_TEMPERATURE, PRUNING_TEMPERATURE, ask
from ..kg.model import Edge
from ..toolbox.prompts import (
    POG_EVALUATE_PROMPT, POG_GENERATE_PROMPT, POG_SUMMARY_PROMPT, POG_SUPPLEMENT_PROMPT, QuestionAnalysis, extract_answer, parse_question_analysis, parse_sufficient, pog_question_analysis_prompt,
)
from ..toolbox.pruning import POG_STRATEGIES, PathBeam, PruneSettings, pog_prune_paths, score_paths
from ..federation.matching import best_matches
from ..federation.subgraph import expand
from .base import Method, Result, Topics
from .params import MethodParams, param
# the path machinery lives in pog_paths; its names stay importable from here (tests, HydraRAG, users)
from .pog_paths import (  # noqa: F401 - re-exported
    MAX_RAW_PATHS, MAX_SET_SHOWN, ClusteredPath, Graph, Step, chain_paths, connecting_paths, extend_path, graft, listing,
    tree_paths, unique_paths,
)

# per prompt kind with `stop_sequences=true`: (max_tokens cap, stop sequences), for a small local model that
# otherwise writes the next few-shot "Q: ..." or an explanation up to the token limit (the authors' code sends no stop)
POG_LIMITS: dict[str, tuple[int, tuple[str, ...]]] = {
    "analysis": (160, ("\nQ:", "\nThe question is")), "select": (80, ("\nExplanation",)), "summary": (200, ("\nQ:",)),
    "evaluate": (150, ("\nQ:",)), "generate": (120, ("\nQ:",)), "supplement": (200, ("\nQ:",)),
}

MAX_ANSWERS = 3         # answer ids kept
FUZZY_POOL = 4          # LLM mode: more candidates than FUZZY_POOL·W1 are cut to it by the step score before SBERT (`PoG.fuzzy_pool`)


# -- replies ---------------------------------------------------------------------------------------------
def parse_supplement(reply: str) -> list[tuple[str, str]]:
    """(predicted entity, its thinking indicator) pairs from an LLM-supplement reply; odd replies give []."""
    predicts = [m.strip().strip("{}\"' ") for m in re.findall(r"predict\w*\s*\d*\s*:\s*(.+)", reply, re.I)]
    predicts = [p for p in predicts if p]
    if not predicts:
        predicts = [b for b in re.findall(r"\{([^{}]+)\}", reply) if b.strip().lower() not in {"yes", "no", "entity"}]
    cots = [c.strip() for c in re.findall(r"(?:thinking\s*)?cot\s*\d*\s*:\s*(.+)", reply, re.I)]
    return [(p, cots[i] if i < len(cots) else p) for i, p in enumerate(predicts[:3])]


# -- the method ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PoGParams(MethodParams):
    """PoG's parameters (paper defaults); `width`/`depth` (kgfed ask --width/--depth) mean max_width/max_depth."""

    ALIASES: ClassVar[Mapping[str, str]] = {"width": "max_width", "depth": "max_depth"}
    max_width: int = param(3, low=1, help="W_max: paths kept after pruning")
    max_depth: int = param(3, low=1, help="D_max: subgraph radius and deepest path")
    w1: int = param(80, low=1, help="fuzzy top-W1; also the per-depth beam while growing trees")
    w2: int = param(20, low=1, help="the 3-step strategy's branch-reduced width")
    strategy: str = param("fuzzy+precise", choices=tuple(POG_STRATEGIES), help="PoG's Algorithm 2 case")
    relation_width: int | None = param(None, help="relations per entity while building G_q (None: all, as the papers)")
    neighbor_limit: int | None = param(None, help="neighbours per (entity, relation) while building G_q (None: all)")
    align: tuple[str, ...] | None = param(("p646", "label"), help="entity alignment between KGs (`subgraph.expand`); "
                                          "add sbert for embedding alignment (~10x slower); None: none")
    expand_phase: bool = param(True, help="run PoG's second phase (node-expand exploration)")
    supplement_phase: bool = param(True, help="run PoG's third phase (LLM supplement paths)")
    max_tokens: int = param(256, help="per LLM call (the papers' 256)")
    stop_sequences: bool = param(False, help="cap each reply per prompt kind and end it at the kind's stop sequences")


class PoG(Method):
    """Paths-over-Graph. Params (paper defaults): `max_width` W_max=3, `max_depth` D_max=3, `w1`=80 (fuzzy
    selection), `w2`=20 (branch-reduced width of the 3-step strategy), `strategy` one of POG_STRATEGIES
    (paper: "fuzzy+precise"), `relation_width` relations followed per entity while building G_q (None: all),
    `neighbor_limit` neighbours kept per (entity, relation) (None: all), `align` alignment methods between
    KGs (("p646", "label"); add "sbert" for embedding alignment, ~10x slower on the federation fixture),
    `expand_phase` run node-expand exploration (True), `supplement_phase` (True), `max_tokens` (256);
    `width`/`depth` (kgfed ask --width/--depth) mean max_width/max_depth."""

    name = "pog"
    Params = PoGParams
    params: PoGParams
    LIMITS = POG_LIMITS

    # -- shared steps (HydraRAG reuses them) --
    async def detect(self, topics: Topics) -> tuple[Graph, list[int]]:
        """G_q: topics expanded to D_max hops over every KG into one merged graph; topic node indexes."""
        seeds = {kg: list(ids) for kg, ids in topics.items() if kg in self.kgs and ids}
        if not seeds:
            raise KgfedError(f"no topic entity in {', '.join(self.kgs)}: give topic ids (the topics argument of answer(); --topic on the command line) or a question naming an entity")
        aligner = Aligner(self.kgs, methods=self.params.align, embedder=self.embedder) if self.params.align is not None else None
        merged = await expand(seeds, self.kgs, hops=self.params.max_depth, width=self.params.relation_width,
                              limit=self.params.neighbor_limit, aligner=aligner, offload=self.llm_ready)
        graph = await self.off_loop(Graph, merged)
        found = [graph.index(kg, ident) for kg, ids in seeds.items() for ident in ids]
        order = list(dict.fromkeys(i for i in found if i is not None))
        return graph, order

    async def off_loop(self, work: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """`work(*args, **kwargs)`, pure CPU over this question's G_q (building it, finding paths), in a worker
        thread when an LLM is in use, so the event loop meanwhile sends and reads other questions' calls (an
        LLM-bound run otherwise leaves its LLM idle behind a path search); inline LLM-free (nothing waits)."""
        if not self.llm_ready:
            return work(*args, **kwargs)
        return await asyncio.to_thread(work, *args, **kwargs)

    async def analyse(self, question: str, graph: Graph, topic_nodes: Sequence[int]) -> QuestionAnalysis:
        """PoG's question analysis (one LLM call at the exploration temperature)."""
        shown = {next(iter(graph.merged.nodes[i].ids.values())): graph.name(i) for i in topic_nodes}
        reply = await ask(self.llm, pog_question_analysis_prompt(question, shown), temperature=EXPLORATION_TEMPERATURE,
                          **self.limits("analysis"))
        return parse_question_analysis(reply)

    @staticmethod
    def reorder(graph: Graph, nodes: Sequence[int], indicator: str) -> list[int]:
        """Topic entities in the order the indicator mentions them (unmentioned ones last)."""
        low = indicator.lower()

        def position(i: int) -> int:
            at = low.find(graph.name(i).lower())
            return at if at >= 0 else len(low) + 1
        return sorted(nodes, key=position)

    def context(self, analysis: QuestionAnalysis | None) -> str:
        if analysis is None:
            return ""
        splits = "".join(f"split_question{i}: {q}\n" for i, q in enumerate(analysis.split_questions, 1))
        return f"Thinking Cot: {analysis.indicator}\n{splits}"

    async def prune(self, question: str, graph: Graph, paths: list[ClusteredPath], indicator: str,
                    analysis: QuestionAnalysis | None, anchors: Sequence[int]) -> list[ClusteredPath]:
        """PoG's beam search (Algorithm 2) over the paths; LLM-free it is fuzzy SBERT selection."""
        if not paths:
            return []
        if self.llm_ready:
            paths = await self.fuzzy_pool(indicator, graph, paths)
        texts = [p.text or graph.render(p) for p in paths]
        strategy = self.params.strategy if self.llm_ready else "fuzzy"
        keep = await pog_prune_paths(question, texts, PruneSettings(llm=self.llm, embedder=self.embedder, **self.limits("select")),
                                     PathBeam(strategy, self.params.max_width, self.params.w1, self.params.w2, self.params.max_depth),
                                     indicator=indicator, analysis=self.context(analysis),
                                     entities=[graph.set_text([a]) for a in anchors])
        return [paths[i] for i in keep]

    async def fuzzy_pool(self, query: str, graph: Graph, paths: list[ClusteredPath]) -> list[ClusteredPath]:
        """The candidates PoG's fuzzy selection encodes in LLM mode: all of them up to `FUZZY_POOL`·W1, else the
        `FUZZY_POOL`·W1 best by the cheap step score (relation-word similarity, no path encoded), in their order.

        The fuzzy selection (SBERT of the indicator with the full path texts, top W1 for the LLM) then runs on
        at most that many texts: a hub's thousands of candidates are never all encoded. Up to the bound the
        selection is the paper's, so the recorded replies' prompts are unchanged. See docs/methods/pog-hydra.md."""
        bound = FUZZY_POOL * self.params.w1
        if len(paths) <= bound:
            return paths
        score = await self.step_scorer(query, graph)
        kept = set(sorted(range(len(paths)), key=lambda i: -score(paths[i]))[:bound])
        return [p for i, p in enumerate(paths) if i in kept]

    async def step_scorer(self, query: str, graph: Graph, paths: Sequence[ClusteredPath] | None = None
                          ) -> Callable[[ClusteredPath], float]:
        """A cheap path score for growing trees: mean SBERT similarity of `query` to each step's relation words.

        `paths`: only these paths will be scored, so only their relations are encoded (else every relation of G_q)."""
        if paths is None:
            keys = sorted({(link.kg, link.relation) for link in graph.merged.edges})
        else:
            keys = sorted({(s.kg, s.relation) for p in paths for s in p.steps})
        texts = [graph.step_text(Step(kg, rel, True), words=True) for kg, rel in keys]
        sims = await self.embedder.similarity(query, texts) if keys else []
        table = dict(zip(keys, sims))

        def score(path: ClusteredPath) -> float:
            return sum(table.get((s.kg, s.relation), 0.0) for s in path.steps) / max(1, path.length)
        return score

    async def rank(self, query: str, graph: Graph, paths: list[ClusteredPath],
                   score: Callable[[ClusteredPath], float] | None = None) -> list[tuple[ClusteredPath, float]]:
        """Paths with their SBERT similarity to `query`, best first (texts use relation words).

        With a cheap `score`, only the W1 best paths by it are embedded (the rest are dropped).
        """
        if not paths:
            return []
        if score is not None and len(paths) > self.params.w1:
            cheap = score
            paths = sorted(paths, key=lambda p: -cheap(p))[: self.params.w1]
        texts = [self.sbert_text(graph, p) for p in paths]
        scored = await score_paths(query, texts, PruneSettings(method="sbert", embedder=self.embedder, width=None))
        by_text: dict[str, list[int]] = defaultdict(list)
        for i, t in enumerate(texts):
            by_text[t].append(i)
        out = []
        for text, similarity in scored:
            for i in by_text.pop(text, []):
                out.append((paths[i], similarity))
        return out

    @staticmethod
    def sbert_text(graph: Graph, path: ClusteredPath) -> str:
        if path.text:
            return path.text
        parts = [graph.set_text(path.sets[0], 3)[1:-1]]
        for step in path.steps:
            parts.append(graph.step_text(step, words=True))
        return " ; ".join(parts)

    async def choose_answer(self, question: str, graph: Graph, ranked: Sequence[tuple[ClusteredPath, float]],
                            topic_nodes: Sequence[int]) -> tuple[list[int], ClusteredPath | None, dict[int, float]]:
        """LLM-free answer: candidates on the top paths scored by path score, support and name similarity."""
        topics = set(topic_nodes)
        score: dict[int, float] = defaultdict(float)
        best_path: dict[int, tuple[float, ClusteredPath]] = {}
        for rank, (path, s) in enumerate(ranked[: self.params.max_width]):
            for k in path.candidates()[:1]:
                members = [i for i in path.sets[k] if i not in topics and graph.named(i)]
                if not members:
                    continue
                share = s / (1.0 + 0.1 * (len(members) - 1))  # specific sets count more
                for i in members:
                    score[i] += share * (0.5 ** rank)
                    if i not in best_path or best_path[i][0] < s:
                        best_path[i] = (s, path)
        if not score:
            return [], None, {}
        names = list(score)
        sims = await self.embedder.similarity(question, [graph.name(i) for i in names])
        final = {i: score[i] + 0.15 * sim for i, sim in zip(names, sims)}
        order = sorted(final, key=lambda i: (-final[i], graph.name(i)))
        return order, best_path[order[0]][1], final

    def result(self, question: str, graph: Graph, answer: str, answer_nodes: Sequence[int], paths: Sequence[ClusteredPath],
               **extra: Any) -> Result:
        """A Result: answer text and ids, concrete edge chains of the kept paths (to the answer where it lies)."""
        answer_ids = [ident for i in answer_nodes[:MAX_ANSWERS] for ident in graph.merged.nodes[i].ids.values()]
        chains: list[list[Edge]] = []
        for path in paths:
            if path.source != "kg" or not path.steps:
                continue
            ends = ([i for i in answer_nodes if i in path.sets[-1]] or sorted(i for i in path.sets[-1] if graph.named(i))
                    or sorted(path.sets[-1]))
            chain = graph.edges_of(path, ends[0])
            if chain:
                chains.append(chain)
        texts = [p.text or graph.render(p) for p in paths]
        return Result(question, answer, answer_ids, chains, reasoning=extra.pop("reasoning", ""),
                      extra={"path_text_clustered": texts, **extra})

    def nodes_named(self, graph: Graph, answer: str, paths: Sequence[ClusteredPath]) -> list[int]:
        """Nodes of the paths whose name matches the LLM's answer text (case-insensitive, either contains)."""
        want = answer.strip().lower()
        if not want:
            return []
        pool = sorted(set().union(*(p.nodes() for p in paths)) if paths else set())
        exact = [i for i in pool if graph.name(i).lower() == want]
        return exact or [i for i in pool if graph.named(i) and (want in graph.name(i).lower() or graph.name(i).lower() in want)]

    # -- LLM question answering --
    def _qa_block(self, question: str, analysis: QuestionAnalysis | None, paths_text: str) -> str:
        return f"\nQ: {question}\n{self.context(analysis)}Related Paths:\n{paths_text}\nA:"

    async def summarize_and_check(self, question: str, graph: Graph, paths: Sequence[ClusteredPath],
                                  analysis: QuestionAnalysis | None) -> tuple[bool, str, str]:
        """Path summary, then the sufficiency evaluation: (sufficient, answer text, summary)."""
        shown = listing(graph, paths)
        summary = await ask(self.llm, POG_SUMMARY_PROMPT + self._qa_block(question, analysis, shown),
                            temperature=PRUNING_TEMPERATURE, **self.limits("summary"))
        block = self._qa_block(question, analysis, shown + "\nSummary: " + summary.strip())
        verdict = await ask(self.llm, POG_EVALUATE_PROMPT + block, temperature=ANSWER_TEMPERATURE, **self.limits("evaluate"))
        if not parse_sufficient(verdict):
            return False, "", summary
        answer = extract_answer(verdict)
        if not answer:
            answer = await self.generate(question, graph, paths, analysis, summary)
        return True, answer, summary

    async def generate(self, question: str, graph: Graph, paths: Sequence[ClusteredPath], analysis: QuestionAnalysis | None,
                       summary: str = "") -> str:
        """The generation prompt (also the final answer from the LLM's own knowledge when paths are exhausted)."""
        shown = listing(graph, paths) + ("\nSummary: " + summary.strip() if summary else "")
        reply = await ask(self.llm, POG_GENERATE_PROMPT + self._qa_block(question, analysis, shown),
                          temperature=ANSWER_TEMPERATURE, **self.limits("generate"))
        answer = extract_answer(reply)
        if not answer:  # no {answer}: the reply's first line, as the authors' code keeps the whole reply
            charge("parse_fallbacks")
        return answer or _first_line(reply)

    # -- the algorithm --
    async def _answer(self, question: str, topics: Topics) -> Result:
        graph, topic_nodes = await self.detect(topics)
        if not self.llm_ready:
            return await self._answer_free(question, graph, topic_nodes)
        return await self._answer_llm(question, graph, topic_nodes)

    async def _answer_free(self, question: str, graph: Graph, topic_nodes: list[int]) -> Result:
        """LLM-free PoG: topic-entity paths of every depth (node-expand paths when none connect), SBERT-ranked."""
        dmax, beam = self.params.max_depth, self.params.w1
        # The step score (every relation text of G_q encoded) only when a beam or the W1 cut reads it:
        # connecting paths between several topics need none, and W1 or fewer of them are all ranked.
        score = await self.step_scorer(question, graph) if len(topic_nodes) == 1 else None
        paths = chain_paths(graph, topic_nodes, dmax, beam=beam, score=score)
        phase = "topic"
        if not paths and len(topic_nodes) > 1:  # no path joins all topics: explore from each (node expansion)
            phase = "expand"
            score = await self.step_scorer(question, graph)
            paths = [p for t in topic_nodes
                     for p in tree_paths(graph, t, dmax, exclude=set(topic_nodes) - {t}, beam=beam, score=score)]
        if score is None and len(paths) > beam:
            score = await self.step_scorer(question, graph, paths)
        ranked = await self.rank(question, graph, paths, score)
        order, best, scores = await self.choose_answer(question, graph, ranked, topic_nodes)
        kept = [p for p, _ in ranked[: self.params.max_width]]
        if best is not None and best not in kept:
            kept = [best] + kept[:-1]
        answer = graph.name(order[0]) if order else ""
        return self.result(question, graph, answer, order[:1], kept, phase=phase, candidates=len(paths),
                           llm_free=True, graph_nodes=len(graph.merged.nodes), graph_edges=len(graph.merged.edges))

    async def _answer_llm(self, question: str, graph: Graph, topic_nodes: list[int]) -> Result:
        dmax = self.params.max_depth
        analysis = await self.analyse(question, graph, topic_nodes)
        indicator = analysis.indicator or question
        order = self.reorder(graph, topic_nodes, indicator)
        n = len(order)
        score = await self.step_scorer(indicator, graph)
        explored: list[ClusteredPath] = []
        # phase 1: topic-entity paths, D from min(D_predict, D_max) to D_max
        depth = min(analysis.depth, dmax)
        topic_kept: list[ClusteredPath] = []
        while depth <= dmax:
            paths = await self.off_loop(chain_paths, graph, order, depth, total=(n * (depth - 1), n * depth), beam=self.params.w1,
                                        score=score, segment=n * depth if n > 1 else depth)
            topic_kept = await self.prune(question, graph, paths, indicator, analysis, order)
            if topic_kept:
                ok, answer, summary = await self.summarize_and_check(question, graph, topic_kept, analysis)
                if ok:
                    return self._done(question, graph, answer, topic_kept, "topic", analysis, summary)
            depth += 1
        explored += topic_kept
        # phase 2: LLM supplement paths through predicted entities
        supplement_kept: list[ClusteredPath] = []
        if self.params.supplement_phase:
            supplement_kept = await self._supplement(question, graph, order, topic_kept, analysis)
            if supplement_kept:
                ok, answer, summary = await self.summarize_and_check(question, graph, supplement_kept, analysis)
                if ok:
                    return self._done(question, graph, answer, supplement_kept, "supplement", analysis, summary)
            explored += supplement_kept
        # phase 3: node expansion, one hop beyond the current paths per round
        if self.params.expand_phase:
            current = explored or [p for t in order for p in tree_paths(graph, t, 1)]
            current = await self._shortlist(indicator, graph, current, score)
            current = await self.prune(question, graph, current, indicator, analysis, order)
            for _ in range(dmax):
                grown = await self._expand_once(graph, current)
                if not grown:
                    break
                current = await self.prune(question, graph, await self._shortlist(indicator, graph, grown, score),
                                           indicator, analysis, order)
                ok, answer, summary = await self.summarize_and_check(question, graph, current, analysis)
                if ok:
                    return self._done(question, graph, answer, current, "expand", analysis, summary)
            explored += current
        final = await self.prune(question, graph, unique_paths(explored), indicator, analysis, order)
        answer = await self.generate(question, graph, final, analysis)
        return self._done(question, graph, answer, final, "final", analysis, "")

    async def _shortlist(self, query: str, graph: Graph, paths: list[ClusteredPath],
                         score: Callable[[ClusteredPath], float]) -> list[ClusteredPath]:
        """At most W1 paths, by the cheap step score then SBERT (keeps node expansion bounded)."""
        return [p for p, _ in await self.rank(query, graph, paths, score)]

    def _done(self, question: str, graph: Graph, answer: str, paths: list[ClusteredPath], phase: str,
              analysis: QuestionAnalysis, summary: str) -> Result:
        nodes = self.nodes_named(graph, answer, paths)
        return self.result(question, graph, answer, nodes, paths, phase=phase, reasoning=summary,
                           indicator=analysis.indicator, split_questions=analysis.split_questions, depth=analysis.depth)

    async def _supplement(self, question: str, graph: Graph, order: list[int], kept: list[ClusteredPath],
                          analysis: QuestionAnalysis) -> list[ClusteredPath]:
        """Predicted entities (LLM) aligned to G_q by name similarity; paths through topics + each, D_max deep."""
        topics = ", ".join(graph.name(i) for i in order)
        prompt = (POG_SUPPLEMENT_PROMPT + f"\nQ: {question}\nTopic Entity: {topics}\n{self.context(analysis)}"
                  f"Related_paths:\n{listing(graph, kept)}\nA:")
        reply = await ask(self.llm, prompt, temperature=EXPLORATION_TEMPERATURE, **self.limits("supplement"))
        predictions = parse_supplement(reply)
        if not predictions:
            return []
        found: list[ClusteredPath] = []
        dmax = self.params.max_depth
        for entity, cot in predictions:
            target = await self.locate(graph, entity, exclude=order)
            if target is None:
                continue
            chain = self.reorder(graph, order + [target], cot)
            paths = await self.off_loop(chain_paths, graph, chain, dmax, total=(0, len(order) * dmax), segment=len(order) * dmax)
            if paths:  # FuzzySelect(Paths_s', I_sup(e), W_max), then PathPruning over them all
                paths = await self.fuzzy_pool(cot, graph, paths)
                texts = [graph.render(p) for p in paths]
                keep = await pog_prune_paths(question, texts, PruneSettings(embedder=self.embedder),
                                             PathBeam("fuzzy", width=self.params.max_width), indicator=cot)
                found += [paths[i] for i in keep]
        return await self.prune(question, graph, unique_paths(found), analysis.indicator or question, analysis, order)

    async def locate(self, graph: Graph, name: str, *, exclude: Iterable[int] = (), threshold: float = 0.8) -> int | None:
        """The G_q node named `name`: exact (case-insensitive) label, else the most similar label ≥ threshold (SBERT)."""
        skip = set(exclude)
        named = [i for i in range(len(graph.merged.nodes)) if graph.named(i) and i not in skip]
        if not named or not name.strip():
            return None
        labels = [graph.name(i) for i in named]
        exact = [i for i, label in zip(named, labels) if label.lower() == name.strip().lower()]
        if exact:
            return exact[0]
        sims = await self.embedder.similarity(name, labels)
        found = best_matches([sims], threshold, 0.0, mutual=False)  # the most similar label, when it reaches threshold
        return named[found[0][1]] if found else None

    async def _expand_once(self, graph: Graph, paths: Sequence[ClusteredPath]) -> list[ClusteredPath]:
        """1-hop neighbours (from the KGs, beyond G_q when needed) of each path's last set, merged into the paths."""
        ends = sorted({i for p in paths for i in p.sets[-1]})
        missing = [i for i in ends if not graph.adj.get(i)]
        if missing:
            seeds: dict[str, list[str]] = defaultdict(list)
            for i in missing:
                for kg, ident in graph.merged.nodes[i].ids.items():
                    if kg in self.kgs:
                        seeds[kg].append(ident)
            if seeds:
                more = await expand(dict(seeds), self.kgs, hops=1, width=self.params.relation_width, limit=self.params.neighbor_limit,
                                    aligner=Aligner(self.kgs, methods=()), offload=self.llm_ready)
                graft(graph, more)
        return await self.off_loop(lambda: [q for p in paths for q in extend_path(graph, p)])


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""
