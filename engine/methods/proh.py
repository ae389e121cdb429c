"""PRoH (paper 004): planning and reasoning over the knowledge hypergraph of the federated KGs.

    method = PRoH({"freebase": fb}, llm)          # defaults d_p=3, d_max=3, n0=2, K=2 (paper, appendix C)
    result = await method.answer("Which nation has the Alta Verapaz Department and is in Central America?", topics)
    result.extra["dags"]        # completed reasoning DAGs: sub-questions, levels, answers with their paths

Stages (§4): graph anchoring (topic entities; target hyperedges = the hyperedge names most similar to
the question, above `theta_e`); context-aware planning (Algorithm 1: the plan context graph grown `d_p`
levels from the anchors along the best SH-scored directions, written layer by layer, then `n0` LLM
plans whose dependencies are Hasse-reduced and topologically levelled); reasoning as a depth-first
state-space search over evolving DAGs (Algorithm 2), each sub-question answered by EWO-guided beam
search over hyperedges (Algorithm 3) with several answer–path pairs, successors for every joint
assignment, refined by the LLM; the final answer from the completed DAGs, judged when they disagree.

The question subgraph H_q (the D_max-hop neighbourhood of the anchors) is grown lazily: a node's
neighbourhood is fetched when the search first needs its neighbour hyperedges. Several KGs are merged
as the federation does (P646, labels, SBERT), which is PRoH's synonym merge.

LLM-free (`NoLLM`) is PRoH-L's embedding-based EWO (EW = SE when SE ≥ theta_emb) plus: one plan (the
question itself), directions and paths chosen by SBERT similarity of the path text to the sub-question,
and the step answer = the entities of the best path's last hyperedge that are not anchors, best SE first.
"""
from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..federation.hypergraph import Hypergraph, describe, grow
from ..toolbox.llm import ANSWER_TEMPERATURE, EXPLORATION_TEMPERATURE
from ..toolbox.prompts import (
    PROH_DIRECTIONS_PROMPT, PROH_FINAL_PROMPT, PROH_JUDGE_PROMPT, PROH_PATHS_PROMPT, PROH_PLAN_PROMPT, PROH_REFINE_PROMPT,
    PROH_SCORE_PROMPT, PROH_STEP_PROMPT,
)
from .base import Result, Topics
from .hypergraph_method import JSON_STOP, HypergraphMethod, HypergraphParams, numbers
from .params import param

# -- defaults: appendix C for PRoH (d_p=3, d_max=3, n0=2, K=2); the paper gives no b or thresholds ------
PLAN_DEPTH, MAX_DEPTH, INITIAL_PLANS, SOLUTIONS = 3, 3, 2, 2
BEAM, THETA_EMB, THETA_E, TARGETS, ALPHA = 3, 0.2, 0.3, 3, 0.5
MAX_STATES, MAX_ANSWERS = 12, 2
CONTEXT = 15  # hyperedges of each plan-context layer the plan prompt shows (and the plan context explores from)

# -- scores (§4.5, Eqs. 2–6) ------------------------------------------------------------------------------
def combine(scores: Iterable[float], alpha: float = ALPHA) -> float:
    """Combine(S_max, S_avg) of Algorithms 1 and 3: alpha·max + (1−alpha)·mean (0 for no scores)."""
    values = list(scores)
    if not values:
        return 0.0
    return alpha * max(values) + (1 - alpha) * sum(values) / len(values)


def entity_weight(se: float, theta: float = THETA_EMB, llm_score: float | None = None) -> float:
    """EW(v|q), Eq. 4: the LLM's score (PRoH-L / LLM-free: SE itself) when SE ≥ theta_emb, else 0."""
    if se < theta:
        return 0.0
    return se if llm_score is None else llm_score


def ewo(overlap: Iterable[Any], weights: Mapping[Any, float], alpha: float = ALPHA) -> float:
    """EWO(e'|q, e), Eq. 5: Combine over the EW of the entities e and e' share."""
    return combine((weights.get(v, 0.0) for v in overlap), alpha)


def path_score(entities: Iterable[Any], weights: Mapping[Any, float]) -> float:
    """SP(p), Eq. 6: the sum of EW over the distinct entities of the path's hyperedges."""
    return sum(weights.get(v, 0.0) for v in set(entities))


# -- plans and DAGs ----------------------------------------------------------------------------------------
@dataclass
class Dag:
    """A reasoning DAG (§4.3): sub-questions, Hasse-reduced dependencies, levels, answer–path pairs."""

    questions: dict[int, str]
    edges: list[tuple[int, int]]
    answers: dict[int, tuple[str, int, list[int]]] = field(default_factory=dict)  # id -> (answer, node, path)

    @classmethod
    def of(cls, plan: Mapping[str, Any], fallback: str) -> Dag:
        """Parse an LLM plan; any defect (no sub-question, a cycle) falls back to the single question."""
        import networkx as nx

        questions, deps = {}, []
        for k, item in enumerate(plan.get("subquestions") or [], 1):
            if not isinstance(item, Mapping) or not str(item.get("question", "")).strip():
                continue
            qid = int(item["id"]) if str(item.get("id", "")).isdigit() else k
            questions[qid] = str(item["question"]).strip()
            deps += [(int(d), qid) for d in item.get("depends_on") or [] if str(d).isdigit()]
        graph = nx.DiGraph()
        graph.add_nodes_from(questions)
        graph.add_edges_from((a, b) for a, b in deps if a in questions and b in questions and a != b)
        if not questions or not nx.is_directed_acyclic_graph(graph):
            return cls({1: fallback}, [])
        return cls(questions, sorted(nx.transitive_reduction(graph).edges()))

    def levels(self) -> list[list[int]]:
        """Sub-questions by topological level (HasseTopSort)."""
        import networkx as nx

        graph = nx.DiGraph()
        graph.add_nodes_from(self.questions)
        graph.add_edges_from(self.edges)
        return [sorted(level) for level in nx.topological_generations(graph)]

    def text(self, qid: int) -> str:
        """The sub-question with #k replaced by the answer found for k."""
        return re.sub(r"#(\d+)", lambda m: self.answers.get(int(m.group(1)), (m.group(0),))[0], self.questions[qid])

    def copy(self) -> Dag:
        return Dag(dict(self.questions), list(self.edges), dict(self.answers))

    def to_json(self) -> dict[str, Any]:
        return {"subquestions": self.questions, "dependencies": self.edges, "levels": self.levels(),
                "answers": {k: a for k, (a, _, _) in self.answers.items()}}


@dataclass(frozen=True)
class PRoHParams(HypergraphParams):
    """PRoH's parameters (appendix C: d_p=3, d_max=3, n0=2, K=2; the paper gives no b or thresholds)."""

    ALIASES: ClassVar[Mapping[str, str]] = {"width": "beam", "depth": "max_depth"}
    plan_depth: int = param(PLAN_DEPTH, help="d_p, levels of the plan context graph")
    max_depth: int = param(MAX_DEPTH, help="d_max, hops of the question subgraph")
    initial_plans: int = param(INITIAL_PLANS, help="n0, plans asked of the LLM")
    solutions: int = param(SOLUTIONS, help="K, completed DAGs sought")
    beam: int = param(BEAM, help="b, beam width of the hyperedge search")
    theta_emb: float = param(THETA_EMB, help="SE threshold of the entity weight")
    theta_e: float = param(THETA_E, help="similarity threshold of the target hyperedges")
    targets: int = param(TARGETS, help="target hyperedges")
    alpha: float = param(ALPHA, help="Combine = alpha·max + (1−alpha)·mean")
    max_states: int = param(MAX_STATES, help="states of the DAG search")
    max_answers: int = param(MAX_ANSWERS, help="answers per sub-question")


class PRoH(HypergraphMethod):
    """Dynamic planning and reasoning over knowledge hypergraphs (paper 004).

    Params: `plan_depth` d_p (3), `max_depth` d_max (3), `initial_plans` n0 (2), `solutions` K (2),
    `beam` b (3), `theta_emb` (0.2), `theta_e` (0.3), `targets` (3 target hyperedges), `alpha` (0.5:
    Combine = alpha·max + (1−alpha)·mean), `max_states` (12), `max_answers` (2 per sub-question),
    `hop_width`/`limit` (relations per entity / neighbours per relation when a node is expanded).
    """

    name = "proh"
    Params = PRoHParams
    params: PRoHParams
    LIMITS = {"score": (150, JSON_STOP), "plan": (250, JSON_STOP), "directions": (80, JSON_STOP), "paths": (80, JSON_STOP),
              "step": (120, JSON_STOP), "refine": (200, JSON_STOP), "final": (300, JSON_STOP), "judge": (60, JSON_STOP)}

    async def _grow(self, hg: Hypergraph, nodes: Iterable[int]) -> None:
        aligner = None
        if len(self.kgs) > 1:
            from ..federation.align import Aligner

            aligner = Aligner(self.kgs, embedder=self.embedder)  # the run's embedder for the SBERT rule
        await grow(hg, self.kgs, nodes, width=self.params.hop_width, limit=self.params.limit, aligner=aligner)

    # -- anchoring (§4.2) ---------------------------------------------------------------------------------
    async def anchor(self, question: str, hg: Hypergraph, seeds: Sequence[int], *,
                     anchored: int | None = None) -> tuple[list[int], list[int]]:
        """Topic nodes mentioned in the (sub-)question (all seeds when none is) and target hyperedges.

        Target hyperedges are matched over H_q as anchored: every hyperedge when the question itself is
        anchored (`anchored` None), then (re-anchoring a sub-question) the first `anchored` hyperedges,
        those the question's anchoring fetched, and the sub-question's topics' own. What the plan context
        and the beam search fetch later is not matched (each match would encode every hyperedge fetched).
        """
        text = question.lower()
        topics = [n for n in seeds if hg.label(n).lower() in text] or list(seeds)
        await self._grow(hg, topics)
        edges = list(dict.fromkeys(e for n in topics for e in hg.incident(n)))
        known = range(len(hg.edges)) if anchored is None else sorted(set(range(min(anchored, len(hg.edges)))) | set(edges))
        pool = [e for e in known if hg.edges[e].kind != "synonym"]
        sims = await self.embedder.similarity(question, [hg.edges[e].name for e in pool]) if pool else []
        ranked = sorted((s, e) for s, e in zip(sims, pool) if s >= self.params.theta_e)[::-1]
        return topics, list(dict.fromkeys(edges + [e for _, e in ranked[:self.params.targets]]))

    async def similarities(self, question: str, hg: Hypergraph, nodes: Iterable[int]) -> dict[int, float]:
        """SE(v|q) for nodes (Eq. 2): the cosine of the question and each node's label and description."""
        nodes = list(dict.fromkeys(nodes))
        if not nodes:
            return {}
        await describe(hg, self.kgs, nodes)
        return dict(zip(nodes, await self.embedder.similarity(question, [hg.text(n) for n in nodes])))

    async def weights(self, question: str, hg: Hypergraph, nodes: Iterable[int]) -> dict[int, float]:
        """EW(v|q) for nodes: SE by embeddings (Eq. 2), then the LLM's score above theta_emb (Eq. 4)."""
        nodes = list(dict.fromkeys(nodes))
        if not nodes:
            return {}
        se = await self.similarities(question, hg, nodes)
        keep = [n for n in nodes if se[n] >= self.params.theta_emb]
        llm: dict[int, float] = {}
        if self.llm_ready and keep:
            reply = await self._ask(PROH_SCORE_PROMPT.format(question=question, entities="\n".join(
                f"{i}. {hg.text(n)}" for i, n in enumerate(keep, 1))), "score")
            for i, n in enumerate(keep, 1):
                try:
                    llm[n] = float(reply.get(str(i), 0.0))
                except (TypeError, ValueError):
                    llm[n] = 0.0
        return {n: entity_weight(se[n], self.params.theta_emb, llm.get(n) if self.llm_ready else None) for n in nodes}

    # -- planning (§4.3, Algorithm 1) ------------------------------------------------------------------------
    async def plan_context(self, question: str, hg: Hypergraph, topics: Sequence[int], targets: Sequence[int]) -> str:
        """FormPlanContext: the anchors' hyperedges, then d_p layers of the best SH-scored neighbours.

        SH (Eq. 3) combines the SE of the overlap, as Algorithm 1 does: no LLM score while planning. Each
        layer is the `CONTEXT` hyperedges the plan prompt shows of it (the anchors' by the question
        similarity of their names, the target hyperedges first), and the next layer is explored from those:
        every hyperedge shown neighbours one shown a layer before, and no hyperedge that is not shown is grown.
        """
        first = list(targets)
        sims = await self.embedder.similarity(question, [hg.edges[e].name for e in first]) if first else []  # encoded by anchor
        first = [first[i] for i in sorted(range(len(first)), key=lambda i: -sims[i])][:CONTEXT]
        layers = [first]
        frontier, seen = list(first), set(targets)
        for _ in range(self.params.plan_depth - 1):
            await self._grow(hg, [n for e in frontier for n in hg.edges[e].nodes])
            cands: dict[int, float] = {}
            pairs = [(e, x) for e in frontier for x in hg.neighbours(e) if x not in seen]
            se = await self.similarities(question, hg, [n for e, x in pairs for n in hg.overlap(e, x)])
            for e, x in pairs:
                cands[x] = max(cands.get(x, 0.0), combine((se.get(n, 0.0) for n in hg.overlap(e, x)), self.params.alpha))
            frontier = sorted(cands, key=lambda x: -cands[x])[:min(CONTEXT, self.params.beam * max(1, len(layers[-1])))]
            if not frontier:
                break
            seen.update(frontier)
            layers.append(frontier)
        return "\n".join(f"[{d}] {hg.edges[e].name}" for d, layer in enumerate(layers) for e in layer)

    async def plans(self, question: str, hg: Hypergraph, topics: Sequence[int], targets: Sequence[int]) -> list[Dag]:
        """n0 initial reasoning DAGs (LLM-free: the question itself as one sub-question)."""
        if not self.llm_ready:
            return [Dag({1: question}, [])]
        context = await self.plan_context(question, hg, topics, targets)
        names = ", ".join(hg.label(n) for n in topics)
        prompt = PROH_PLAN_PROMPT.format(question=question, topics=names, context=context)
        replies = await asyncio.gather(*(self._ask(prompt, "plan", EXPLORATION_TEMPERATURE) for _ in range(self.params.initial_plans)))
        return [Dag.of(reply, question) for reply in replies]

    # -- answer and path retrieval (§4.5, Algorithm 3) ------------------------------------------------------
    def path_text(self, hg: Hypergraph, path: Sequence[int]) -> str:
        return " ; ".join(hg.edges[e].name for e in path)

    async def _rank_by_text(self, question: str, hg: Hypergraph, paths: Sequence[Sequence[int]]) -> list[float]:
        return await self.embedder.similarity(question, [self.path_text(hg, p) for p in paths]) if paths else []

    async def retrieve(self, question: str, hg: Hypergraph, seeds: Sequence[int], *,
                       anchored: int | None = None) -> list[tuple[str, int, list[int]]]:
        """Answer–path pairs for one sub-question: EWO-guided beam search to d_max, answers from selected paths."""
        topics, start = await self.anchor(question, hg, seeds, anchored=anchored)
        frontier = [[e] for e in start]
        explored = list(frontier)
        best: tuple[float, list[int]] | None = None
        for depth in range(1, self.params.max_depth + 1):
            selected = await self.select_paths(question, hg, explored)
            if selected is not None:
                if self.llm_ready and selected:
                    return await self.answer_step(question, hg, selected, topics)
                if not self.llm_ready:
                    score, path = selected
                    if best is not None and score <= best[0]:
                        break
                    best = (score, path)
            if depth == self.params.max_depth:
                break
            await self._grow(hg, [n for p in frontier for n in hg.edges[p[-1]].nodes])
            pairs = [(p, x) for p in frontier for x in hg.neighbours(p[-1]) if x not in p]
            weights = await self.weights(question, hg, [n for p, x in pairs for n in hg.overlap(p[-1], x)])
            scored = sorted(((ewo(hg.overlap(p[-1], x), weights, self.params.alpha), p + [x]) for p, x in pairs), key=lambda c: -c[0])
            cands = [p for _, p in scored[:self.params.beam * 4]]  # RankSelectDirections
            frontier = await self.directions(question, hg, cands)
            if not frontier:
                break
            explored += frontier
        if self.llm_ready or best is None:
            return []
        return await self.answer_step(question, hg, [best[1]], topics)

    async def directions(self, question: str, hg: Hypergraph, cands: list[list[int]]) -> list[list[int]]:
        """LLMSelectDirections (LLM-free: the b paths most similar to the sub-question)."""
        if len(cands) <= self.params.beam:
            return cands
        if self.llm_ready:
            reply = await self._ask(PROH_DIRECTIONS_PROMPT.format(b=self.params.beam, question=question, paths="\n".join(
                f"{i}. {self.path_text(hg, p)}" for i, p in enumerate(cands, 1))), "directions")
            chosen = [cands[i] for i in numbers(reply.get("selection", ""), len(cands))][:self.params.beam]
            if chosen:
                return chosen
        sims = await self._rank_by_text(question, hg, cands)
        return [cands[i] for i in sorted(range(len(cands)), key=lambda i: -sims[i])[:self.params.beam]]

    async def select_paths(self, question: str, hg: Hypergraph, explored: list[list[int]]):
        """RankSelectPaths by SP, then LLMSelectPaths (LLM-free: the best path by text similarity, with its score)."""
        if not explored:
            return None
        nodes = {n for p in explored for e in p for n in hg.edges[e].nodes}
        weights = await self.weights(question, hg, nodes)
        ranked = sorted(explored, key=lambda p: -path_score((n for e in p for n in hg.edges[e].nodes), weights))[:self.params.beam * 3]
        if self.llm_ready:
            reply = await self._ask(PROH_PATHS_PROMPT.format(question=question, paths="\n".join(
                f"{i}. {self.path_text(hg, p)}" for i, p in enumerate(ranked, 1))), "paths")
            return [ranked[i] for i in numbers(reply.get("selection", ""), len(ranked))]
        sims = await self._rank_by_text(question, hg, ranked)
        k = max(range(len(ranked)), key=lambda i: sims[i])
        return sims[k], ranked[k]

    async def answer_step(self, question: str, hg: Hypergraph, paths: Sequence[list[int]], topics: Sequence[int]) -> list[tuple[str, int, list[int]]]:
        """LLMAnswerStep over each selected path, the paths' calls at once (LLM-free: the last hyperedge's
        non-anchor entities by SE)."""
        out: list[tuple[str, int, list[int]]] = []
        if self.llm_ready:
            await describe(hg, self.kgs, [n for path in paths for e in path for n in hg.edges[e].nodes])
            replies = await asyncio.gather(*(self._ask(PROH_STEP_PROMPT.format(
                question=question, context="\n".join(hg.edges[e].name for e in path)), "step", ANSWER_TEMPERATURE) for path in paths))
            for path, reply in zip(paths, replies):
                names = [str(a).strip() for a in reply.get("answers") or [] if str(a).strip()]
                by_label = {hg.label(n).lower(): n for e in path for n in hg.edges[e].nodes}
                out += [(a, by_label.get(a.lower(), -1), path) for a in names[:self.params.max_answers]]
        else:
            for path in paths:
                candidates = [n for n in hg.edges[path[-1]].nodes if n not in topics]
                if not candidates:
                    candidates = [n for e in path for n in hg.edges[e].nodes if n not in topics]
                se = dict(zip(candidates, await self.embedder.similarity(question, [hg.text(n) for n in candidates]))) if candidates else {}
                out += [(hg.label(n), n, path) for n in sorted(candidates, key=lambda n: -se[n])[:self.params.max_answers]]
        unique: dict[str, tuple[str, int, list[int]]] = {}
        for a in out:
            unique.setdefault(a[0].lower(), a)
        return list(unique.values())[:self.params.max_answers]

    # -- reasoning (§4.4, Algorithm 2) and final answer (§4.6) ----------------------------------------------
    async def reason(self, question: str, hg: Hypergraph, seeds: Sequence[int], dags: Sequence[Dag], *,
                     anchored: int | None = None) -> tuple[list[Dag], int]:
        """DFS over reasoning states (DAG, level) until K DAGs complete; returns them and the states visited.

        `anchored`: the hyperedges the question's anchoring fetched (`anchor`)."""
        stack = [(dag, 0) for dag in reversed(dags)]
        done: list[Dag] = []
        visited = 0
        while stack and len(done) < self.params.solutions and visited < self.params.max_states:
            dag, level = stack.pop()
            visited += 1
            levels = dag.levels()
            if level >= len(levels):
                done.append(dag)
                continue
            found = []
            for qid in levels[level]:
                anchors = list(seeds) + [n for k, (_, n, _) in dag.answers.items() if n >= 0]
                found.append([(qid, ap) for ap in await self.retrieve(dag.text(qid), hg, anchors, anchored=anchored)])
            if not all(found):
                continue
            combos = []
            for combo in itertools.islice(itertools.product(*found), self.params.max_answers * 2):
                new = dag.copy()
                for qid, ap in combo:
                    new.answers[qid] = ap
                combos.append(new)
            refined = await asyncio.gather(*(self.refine(question, new, level) for new in combos))  # independent calls
            stack += reversed([(new, level + 1) for new in refined])
        return done, visited

    async def refine(self, question: str, dag: Dag, level: int) -> Dag:
        """LLMGenerateNewDAG: the LLM rewrites the open sub-questions with the answers found (LLM-free: #k substitution)."""
        open_ids = [q for lvl in dag.levels()[level + 1:] for q in lvl]
        if not self.llm_ready or not open_ids:
            return dag
        reply = await self._ask(PROH_REFINE_PROMPT.format(
            question=question, answered="\n".join(f"{k}. {dag.text(k)} -> {a}" for k, (a, _, _) in dag.answers.items()),
            open="\n".join(f"{k}. {dag.questions[k]}" for k in open_ids)), "refine")
        for item in reply.get("subquestions") or []:
            if isinstance(item, Mapping) and str(item.get("id", "")).isdigit() and int(item["id"]) in open_ids and item.get("question"):
                dag.questions[int(item["id"])] = str(item["question"]).strip()
        return dag

    async def _answer(self, question: str, topics: Topics) -> Result:
        hg = Hypergraph()
        seeds = list(dict.fromkeys(hg.add_node({kg: e}, name, topic=True) for kg, ids in topics.items() for e, name in ids.items() if kg in self.kgs))
        if not seeds:
            return Result(question, "", reasoning="no topic entity to anchor the hypergraph", extra={"dags": []})
        topic_nodes, targets = await self.anchor(question, hg, seeds)
        anchored = len(hg.edges)  # H_q as anchored: what target matching sees when a sub-question is re-anchored
        dags = await self.plans(question, hg, topic_nodes, targets)
        done, states = await self.reason(question, hg, seeds, dags, anchored=anchored)
        extra = {"plans": [d.to_json() for d in dags], "dags": [d.to_json() for d in done], "states": states,
                 "target_hyperedges": [hg.edges[e].name for e in targets[-self.params.targets:]]}
        if not done:
            return Result(question, "", reasoning="no reasoning DAG completed", extra=extra)
        paths = [self.edges_of(hg, seeds, ap) for d in done for ap in d.answers.values()]
        if not self.llm_ready:
            last = done[0].levels()[-1][-1]
            answer, node, _ = done[0].answers[last]
            return Result(question, answer, [hg.id_in(node)] if node >= 0 else [], paths, reasoning=self._steps(done[0]), extra=extra)
        replies = await asyncio.gather(*(self._ask(PROH_FINAL_PROMPT.format(question=question, steps=self._steps(dag, hg)),
                                                   "final", ANSWER_TEMPERATURE) for dag in done))
        finals = [(str(reply.get("answer", "")).strip(), str(reply.get("reasoning", ""))) for reply in replies]
        choice = 0
        if len({a.lower() for a, _ in finals}) > 1:
            reply = await self._ask(PROH_JUDGE_PROMPT.format(question=question, candidates="\n".join(
                f"{i}. {a} (because: {self._steps(d)})" for i, ((a, _), d) in enumerate(zip(finals, done), 1))), "judge",
                ANSWER_TEMPERATURE)
            picked = numbers(reply.get("choice", ""), len(finals))
            choice = picked[0] if picked else 0
        answer, reasoning = finals[choice]
        ids = [hg.id_in(n) for _, n, _ in done[choice].answers.values() if n >= 0 and hg.label(n).lower() == answer.lower()]
        return Result(question, answer, ids, paths, reasoning=reasoning, extra=extra)

    def _steps(self, dag: Dag, hg: Hypergraph | None = None) -> str:
        lines = []
        for level in dag.levels():
            for qid in level:
                answer, _, path = dag.answers.get(qid, ("?", -1, []))
                knowledge = f" [knowledge: {self.path_text(hg, path)}]" if hg is not None and path else ""
                lines.append(f"{qid}. {dag.text(qid)} -> {answer}{knowledge}")
        return "\n".join(lines)

    def edges_of(self, hg: Hypergraph, seeds: Sequence[int], ap: tuple[str, int, list[int]]):
        """A hyperedge path as hops from an anchor, through the overlaps, to the answer node."""
        _, node, path = ap
        if not path:
            return []
        first = hg.edges[path[0]].nodes
        current = next((n for n in seeds if n in first), min(first))
        hops = []
        for k, e in enumerate(path):
            nxt = node if k == len(path) - 1 and node >= 0 else min(hg.overlap(e, path[k + 1]) if k + 1 < len(path) else hg.edges[e].nodes - {current} or {current})
            if nxt != current:
                hops.append(hg.as_edge(e, current, nxt))
            current = nxt
        return hops


__all__ = ["PRoH", "Dag", "combine", "entity_weight", "ewo", "path_score"]
