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

import re
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import islice
from typing import Any, ClassVar

from ...cache.costs import charge
from ...sparql.errors import KgfedError
from ..federation.align import Aligner
from ..toolbox.llm import ANSWER_TEMPERATURE, EXPLORATION_TEMPERATURE, PRUNING_TEMPERATURE, ask
from ..kg.model import Edge
from ..toolbox.prompts import (
    POG_EVALUATE_PROMPT, POG_GENERATE_PROMPT, POG_SUMMARY_PROMPT, POG_SUPPLEMENT_PROMPT, QuestionAnalysis, extract_answer, parse_question_analysis, parse_sufficient, pog_question_analysis_prompt,
)
from ..toolbox.pruning import POG_STRATEGIES, PathBeam, PruneSettings, pog_prune_paths, relation_text, score_paths
from ..federation.matching import best_matches
from ..federation.subgraph import MergedGraph, expand
from .base import Method, Result, Topics
from .params import MethodParams, param

# per prompt kind with `stop_sequences=true`: (max_tokens cap, stop sequences), for a small local model that
# otherwise writes the next few-shot "Q: ..." or an explanation up to the token limit (the authors' code sends no stop)
POG_LIMITS: dict[str, tuple[int, tuple[str, ...]]] = {
    "analysis": (160, ("\nQ:", "\nThe question is")), "select": (80, ("\nExplanation",)), "summary": (200, ("\nQ:",)),
    "evaluate": (150, ("\nQ:",)), "generate": (120, ("\nQ:",)), "supplement": (200, ("\nQ:",)),
}

MAX_SET_SHOWN = 12      # entities printed per supernode in a path text
MAX_RAW_PATHS = 5000    # entity paths enumerated per topic pair before clustering (safety cap)
MAX_ANSWERS = 3         # answer ids kept
FUZZY_POOL = 4          # LLM mode: more candidates than FUZZY_POOL·W1 are cut to it by the step score before SBERT (`PoG.fuzzy_pool`)


# -- clustered paths -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Step:
    """One clustered relation edge: a relation of one KG followed forward (subject→object) or backward."""

    kg: str
    relation: str
    forward: bool


@dataclass
class ClusteredPath:
    """A relation sequence with the entity set (supernode) at each position and how each member was reached.

    `parents[k]` maps each node of `sets[k+1]` to (a node of `sets[k]`, the link index used).
    `anchors` are the positions holding topic (or predicted) entities; `source` names the evidence source.
    """

    sets: list[frozenset[int]]
    steps: list[Step]
    parents: list[dict[int, tuple[int, int]]]
    anchors: tuple[int, ...] = (0,)
    source: str = "kg"
    text: str = ""
    entities: frozenset | None = None  # Ent(p) of a text path (HydraRAG); KG paths use their nodes

    @property
    def length(self) -> int:
        return len(self.steps)

    def key(self) -> tuple:
        return (tuple(self.steps), tuple(self.sets), self.source, self.text)

    def nodes(self) -> set[int]:
        return set().union(*self.sets) if self.sets else set()

    def candidates(self) -> list[int]:
        """Positions that can hold the answer: every non-anchor position (the far end first)."""
        return [k for k in range(len(self.sets) - 1, 0, -1) if k not in self.anchors]


class Graph:
    """G_q as adjacency over a MergedGraph: node → [(link index, neighbour, forward)], plus names."""

    def __init__(self, merged: MergedGraph):
        self.merged = merged
        self.adj: dict[int, list[tuple[int, int, bool]]] = defaultdict(list)
        for i, link in enumerate(merged.edges):
            self.adj[link.subject].append((i, link.object, True))
            if link.object != link.subject:
                self.adj[link.object].append((i, link.subject, False))
        self.key_index = {(kg, ident): i for i, node in enumerate(merged.nodes) for kg, ident in node.ids.items()}
        self.wiki = {name for name in merged.kgs if merged.dialect(name).relation_labels}  # steps shown by label
        self._step_texts: dict[tuple[Step, bool], str] = {}

    def index(self, kg: str, ident: str) -> int | None:
        return self.key_index.get((kg, ident))

    def name(self, i: int) -> str:
        node = self.merged.nodes[i]
        return node.label or next(iter(node.ids.values()))

    def named(self, i: int) -> bool:
        """A node with a real name (not a CVT or an unnamed id)."""
        return bool(self.merged.nodes[i].label)

    def step_text(self, step: Step, *, words: bool = False) -> str:
        """Relation as shown: Freebase ids (their words with `words`), Wikidata labels (memoised per graph)."""
        known = self._step_texts.get((step, words))
        if known is None:
            known = self._step_texts[(step, words)] = self._step_text(step, words)
        return known

    def _step_text(self, step: Step, words: bool) -> str:
        label = self.merged.relation_labels.get(step.kg, {}).get(step.relation)
        if step.kg in self.wiki or not label:
            text = label or step.relation
        else:
            text = relation_text(step.relation) if words else step.relation
        return text if step.forward else f"{text} (reverse)" if words else f"<- {text}"

    def set_text(self, nodes: Iterable[int], limit: int = MAX_SET_SHOWN) -> str:
        names = sorted({self.name(i) for i in nodes}, key=lambda n: (n[:2] in ("m.", "g.") or n[:1] == "Q" and n[1:].isdigit(), n))
        shown = names[:limit] + ([f"... ({len(names) - limit} more)"] if len(names) > limit else [])
        return "{" + ", ".join(shown) + "}"

    def render(self, path: ClusteredPath) -> str:
        """PoG's structural sentence `{e…} - { -> r ->} - {e…}` (kgfed pruning reads this form)."""
        parts = [self.set_text(path.sets[0])]
        for step, nodes in zip(path.steps, path.sets[1:]):
            parts.append("{ -> " + self.step_text(step) + " ->}")
            parts.append(self.set_text(nodes))
        return " - ".join(parts)

    def edges_of(self, path: ClusteredPath, end: int) -> list[Edge]:
        """One concrete entity chain of the path ending at node `end` of its last set, as kgfed Edges."""
        chain: list[tuple[int, int, bool]] = []
        node = end
        for k in range(path.length - 1, -1, -1):
            parent, link = path.parents[k].get(node, (None, None))
            if parent is None:
                return []
            chain.append((link, parent, path.steps[k].forward))
            node = parent
        edges = []
        for link_index, _, forward in reversed(chain):
            edges.append(self.edge(link_index, forward))
        return edges

    def edge(self, link_index: int, forward: bool) -> Edge:
        link = self.merged.edges[link_index]
        subject, obj = self.merged.nodes[link.subject], self.merged.nodes[link.object]
        return Edge(link.kg, subject.ids.get(link.kg, ""), link.relation, obj.ids.get(link.kg, ""),
                    "out" if forward else "in", subject.labels.get(link.kg, subject.label), link.label,
                    obj.labels.get(link.kg, obj.label), link.via)


def tree_paths(graph: Graph, start: int, depth: int, *, exclude: Iterable[int] = (),
               beam: int | None = None, score: Callable[[ClusteredPath], float] | None = None) -> list[ClusteredPath]:
    """Clustered paths from `start` of length 1..depth (relation sequences, no node revisited).

    With `beam` and `score`, only the `beam` best paths of each depth are grown further (the tree-based
    retrieval of HydraRAG, Algorithm 1; PoG's fuzzy selection applied per depth), so hubs stay bounded.
    """
    blocked = set(exclude)
    found: list[ClusteredPath] = []
    level = [ClusteredPath([frozenset([start])], [], [])]
    for _ in range(depth):
        nxt = []
        for path in level:
            seen = path.nodes() | blocked
            for hop in _one_hop_groups(graph, path.sets[-1], seen):
                nxt.append(ClusteredPath(path.sets + hop.sets[1:], path.steps + hop.steps, path.parents + hop.parents,
                                         path.anchors, path.source))
        found.extend(nxt)
        if beam is not None and score is not None and len(nxt) > beam:
            nxt = sorted(nxt, key=lambda p: -score(p))[:beam]
        level = nxt
    return found


def _bfs(graph: Graph, source: int, limit: int, allowed: set[int] | None = None) -> dict[int, int]:
    dist = {source: 0}
    frontier = [source]
    for d in range(1, limit + 1):
        nxt = []
        for u in frontier:
            for _, v, _ in graph.adj.get(u, ()):
                if v not in dist and (allowed is None or v in allowed):
                    dist[v] = d
                    nxt.append(v)
        frontier = nxt
    return dist


def connecting_paths(graph: Graph, a: int, b: int, max_length: int, min_length: int = 1) -> list[ClusteredPath]:
    """Clustered paths from `a` to `b` with min_length ≤ length ≤ max_length (bidirectional BFS + reduction).

    Distances from both ends keep only nodes with d(a,v) + d(v,b) ≤ max_length (graph reduction); a
    depth-first walk over that reduced graph, never leaving the distance bound, lists the entity paths,
    which are then clustered by relation sequence.
    """
    da, db = _bfs(graph, a, max_length), _bfs(graph, b, max_length)
    keep = {v for v in da if v in db and da[v] + db[v] <= max_length}
    if b not in keep:
        return []
    raw: list[list[tuple[int, int, bool]]] = []
    # the reduced graph: each kept node's neighbours inside `keep`, with their distance to b (same order)
    near = {u: [(link, v, forward, db[v]) for link, v, forward in graph.adj.get(u, ()) if v in keep] for u in keep}

    def walk(u: int, trail: list[tuple[int, int, bool]], visited: set[int]) -> None:
        if len(raw) >= MAX_RAW_PATHS:
            return
        if u == b:
            if len(trail) >= min_length:
                raw.append(list(trail))
            return
        room = max_length - len(trail) - 1
        for link, v, forward, to_b in near[u]:
            if to_b <= room and v not in visited:
                trail.append((link, v, forward))
                visited.add(v)
                walk(v, trail, visited)
                visited.discard(v)
                trail.pop()

    walk(a, [], {a})
    # clustered by relation sequence: each (link, direction) numbered by its Step, a sequence keyed by the numbers
    edges = graph.merged.edges
    steps_known: dict[Step, int] = {}
    step_list: list[Step] = []
    number: dict[tuple[int, bool], int] = {}

    def numbered(link: int, forward: bool) -> int:
        step = Step(edges[link].kg, edges[link].relation, forward)
        n = steps_known.setdefault(step, len(step_list))
        if n == len(step_list):
            step_list.append(step)
        number[(link, forward)] = n
        return n

    clustered: dict[tuple[int, ...], tuple[ClusteredPath, list[set[int]]]] = {}
    for trail in raw:
        key = tuple(number[(link, f)] if (link, f) in number else numbered(link, f) for link, _, f in trail)
        entry = clustered.get(key)
        if entry is None:
            steps = [step_list[n] for n in key]
            entry = clustered[key] = (ClusteredPath([frozenset([a])] + [frozenset()] * len(steps), steps,
                                                    [dict() for _ in steps], anchors=(0, len(steps))),
                                      [set() for _ in steps])
        path, members = entry
        prev = a
        for k, (link, v, _) in enumerate(trail):
            members[k].add(v)
            path.parents[k].setdefault(v, (prev, link))
            prev = v
    for path, members in clustered.values():  # the member sets, frozen once
        path.sets[1:] = [frozenset(m) for m in members]
    return [path for path, _ in clustered.values()]


def chain_paths(graph: Graph, anchors: Sequence[int], depth: int, *, total: tuple[int, int] | None = None,
                limit: int = 2000, beam: int | None = None, score: Callable[[ClusteredPath], float] | None = None,
                segment: int | None = None) -> list[ClusteredPath]:
    """Entity paths through every anchor in order (PoG's EntityPathFind): segments of ≤ `segment` hops
    (default `depth`) joined. `total` = (lo, hi) keeps paths with lo < length ≤ hi (PoG: |Topic|·(D−1) <
    length ≤ |Topic|·D). A single anchor gives tree paths of length ≤ depth (`beam` best grown per depth).
    """
    if len(anchors) == 1:
        paths = tree_paths(graph, anchors[0], depth, beam=beam, score=score)
    else:
        paths = []
        for a, b in zip(anchors, anchors[1:]):
            segs = connecting_paths(graph, a, b, segment or depth)
            if not segs:
                return []
            # the first `limit` joins, made lazily: three topics through hubs give millions of pairs
            paths = segs if not paths else list(islice((_join(p, s) for p in paths for s in segs), limit))
    if total is not None:
        lo, hi = total
        paths = [p for p in paths if lo < p.length <= hi]
    return paths


def _join(left: ClusteredPath, right: ClusteredPath) -> ClusteredPath:
    """`left` then `right` (right starts where left ends)."""
    offset = left.length
    return ClusteredPath(left.sets + right.sets[1:], left.steps + right.steps, left.parents + right.parents,
                         tuple(dict.fromkeys(left.anchors + tuple(k + offset for k in right.anchors))))


def extend_path(graph: Graph, path: ClusteredPath) -> list[ClusteredPath]:
    """Node expansion: the path followed by one more clustered hop from its last set (new triples merged in)."""
    return [ClusteredPath(path.sets + p.sets[1:], path.steps + p.steps, path.parents + p.parents, path.anchors, path.source)
            for p in _one_hop_groups(graph, path.sets[-1], path.nodes())]


def _one_hop_groups(graph: Graph, nodes: Iterable[int], seen: set[int]) -> list[ClusteredPath]:
    groups: dict[Step, dict[int, tuple[int, int]]] = defaultdict(dict)
    for u in sorted(nodes):
        for link, v, forward in graph.adj.get(u, ()):
            if v not in seen:
                groups[Step(graph.merged.edges[link].kg, graph.merged.edges[link].relation, forward)].setdefault(v, (u, link))
    return [ClusteredPath([frozenset(nodes)] + [frozenset(p)], [s], [p]) for s, p in groups.items()]


def listing(graph: Graph, paths: Sequence[ClusteredPath]) -> str:
    """`Path 1: …` lines as PoG's prompts list paths ("(none)" when there are none)."""
    return "\n".join(f"Path {i}: {p.text or graph.render(p)}" for i, p in enumerate(paths, 1)) or "(none)"


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

    @property
    def p(self) -> PoGParams:
        """The parameters (deprecated: read `self.params`)."""
        warnings.warn("PoG.p is deprecated: read .params (params.max_width)", DeprecationWarning, stacklevel=2)
        return self.params

    # -- shared steps (HydraRAG reuses them) --
    async def detect(self, topics: Topics) -> tuple[Graph, list[int]]:
        """G_q: topics expanded to D_max hops over every KG into one merged graph; topic node indexes."""
        seeds = {kg: list(ids) for kg, ids in topics.items() if kg in self.kgs and ids}
        if not seeds:
            raise KgfedError(f"no topic entity in {', '.join(self.kgs)}: give topic ids (the topics argument of answer(); --topic on the command line) or a question naming an entity")
        aligner = Aligner(self.kgs, methods=self.params.align, embedder=self.embedder) if self.params.align is not None else None
        merged = await expand(seeds, self.kgs, hops=self.params.max_depth, width=self.params.relation_width,
                              limit=self.params.neighbor_limit, aligner=aligner)
        graph = Graph(merged)
        found = [graph.index(kg, ident) for kg, ids in seeds.items() for ident in ids]
        order = list(dict.fromkeys(i for i in found if i is not None))
        return graph, order

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

    async def step_scorer(self, query: str, graph: Graph) -> Callable[[ClusteredPath], float]:
        """A cheap path score for growing trees: mean SBERT similarity of `query` to each step's relation words."""
        keys = sorted({(link.kg, link.relation) for link in graph.merged.edges})
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
            paths = sorted(paths, key=lambda p: -score(p))[: self.params.w1]
        texts = [self.sbert_text(graph, p) for p in paths]
        scored = await score_paths(query, texts, PruneSettings(method="sbert", embedder=self.embedder, width=None))
        by_text: dict[str, list[int]] = defaultdict(list)
        for i, t in enumerate(texts):
            by_text[t].append(i)
        out = []
        for text, score in scored:
            for i in by_text.pop(text, []):
                out.append((paths[i], score))
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
        score = await self.step_scorer(question, graph)
        paths = chain_paths(graph, topic_nodes, dmax, beam=beam, score=score)
        phase = "topic"
        if not paths and len(topic_nodes) > 1:  # no path joins all topics: explore from each (node expansion)
            phase = "expand"
            paths = [p for t in topic_nodes
                     for p in tree_paths(graph, t, dmax, exclude=set(topic_nodes) - {t}, beam=beam, score=score)]
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
            paths = chain_paths(graph, order, depth, total=(n * (depth - 1), n * depth), beam=self.params.w1, score=score,
                                segment=n * depth if n > 1 else depth)
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
            paths = chain_paths(graph, chain, dmax, total=(0, len(order) * dmax), segment=len(order) * dmax)
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
                                    aligner=Aligner(self.kgs, methods=()))
                _graft(graph, more)
        return [q for p in paths for q in extend_path(graph, p)]


def _graft(graph: Graph, more: MergedGraph) -> None:
    """Add the nodes and links of `more` to G_q (by KG id), updating the adjacency."""
    merged = graph.merged
    remap: dict[int, int] = {}
    for j, node in enumerate(more.nodes):
        found = next((graph.index(kg, ident) for kg, ident in node.ids.items() if graph.index(kg, ident) is not None), None)
        if found is None:
            found = len(merged.nodes)
            merged.nodes.append(node)
            for kg, ident in node.ids.items():
                graph.key_index[(kg, ident)] = found
        remap[j] = found
    for kg, labels in more.relation_labels.items():
        merged.relation_labels.setdefault(kg, {}).update(labels)
    graph._step_texts.clear()  # a relation may have gained its label
    for link in more.edges:
        new = replace(link, subject=remap[link.subject], object=remap[link.object])
        index = len(merged.edges)
        merged.edges.append(new)
        graph.adj[new.subject].append((index, new.object, True))
        graph.adj[new.object].append((index, new.subject, False))


def unique_paths(paths: Iterable[ClusteredPath]) -> list[ClusteredPath]:
    """The paths once each (by `ClusteredPath.key`), first occurrence first."""
    seen: dict[tuple, ClusteredPath] = {}
    for p in paths:
        seen.setdefault(p.key(), p)
    return list(seen.values())


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""
