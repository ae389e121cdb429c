"""PoG's path machinery over the question subgraph G_q: clustered paths, the graph view, path finding.

PoG (papers/001 §4.2) and HydraRAG (papers/000, Algorithm 1) reason over *clustered* paths: entities
reached from the same entity set by the same relation (one KG, one direction) form one supernode, so a
path is a relation sequence with an entity set at each position,
`{Central America} -> location.location.contains -> {Guatemala}`. This module holds what both methods
build those paths with, apart from the methods' algorithms (`pog.py`, `hydra.py`):

- `Step`, `ClusteredPath`: a relation edge of one KG followed forward or backward, and a path of them
  with its supernodes and, per member, how it was reached (`parents`), to turn a path back into concrete
  `Edge` chains for the result.
- `Graph`: G_q (a `federation.subgraph.MergedGraph`) as adjacency lists, with the names and relation
  texts the prompts and SBERT show (memoised per graph).
- `tree_paths` (paths from one entity, optionally a beam per depth: HydraRAG's tree-based retrieval,
  PoG's node expansion), `connecting_paths` (paths joining two entities: bidirectional BFS distances
  keep only nodes on a short enough connecting path, the graph reduction, then a bounded walk),
  `chain_paths` (PoG's EntityPathFind through every topic in order), `extend_path` (one more hop),
  `graft` (new triples merged into G_q), `listing` and `unique_paths`.

Everything here is plain CPU work over in-memory graphs (no I/O, no awaits), which is why the methods
may run it off the event loop.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import islice

from ..federation.subgraph import MergedGraph
from ..kg.model import Edge
from ..toolbox.pruning import relation_text

MAX_SET_SHOWN = 12      # entities printed per supernode in a path text
MAX_RAW_PATHS = 5000    # entity paths enumerated per topic pair before clustering (safety cap)


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
            reached = path.parents[k].get(node)
            if reached is None:
                return []
            parent, link = reached
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


def graft(graph: Graph, more: MergedGraph) -> None:
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


