"""One graph from several KGs: expand topics over every KG at once and merge aligned entities.

    merged = await expand(["Q42"], {"freebase": fb, "wikidata": wd}, hops=2, width=3)
    merged.node("wikidata", "Q42").ids      # {"wikidata": "Q42", "freebase": "m.0282x"}

Each hop runs all KGs concurrently (`asyncio.gather`); inside a KG the frontier goes out in batched
`relations_many` / `neighbors_many` queries. Width is the number of relations followed per entity:
the first W in a stable order (outgoing first, then by id), or the W best by a `scorer` callback.
Entities reached in one KG are aligned to the others between hops, so the next hop expands them
everywhere. Every edge keeps its KG and original relation id (a Freebase CVT stays one compound
`r1|r2` edge with its CVT in `via`); relations get readable labels comparable across KGs.
"""
from __future__ import annotations

import asyncio
import inspect
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from ...sparql.dialects import COMPOUND_SEP, Dialect, get_dialect
from ...sparql.errors import InvalidIdentifier, KgfedError
from .align import RANK, Aligner, Alignment
from .matching import best_matches
from ..kg.facade import KG
from ..kg.model import Edge, Relation

RelationScorer = Callable[[Sequence[Relation]], Sequence[float] | Awaitable[Sequence[float]]]
Progress = Callable[[str, int, int], None]  # (what is happening, steps done, steps in all)
Key = tuple[str, str]  # (KG name, short id)


@dataclass
class Node:
    """One entity of the merged graph, holding its id in every KG it was aligned across."""

    ids: dict[str, str]
    label: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    topic: bool = False
    hop: int = 0
    alignments: list[Alignment] = field(default_factory=list)

    @property
    def aligned(self) -> bool:
        return len(self.ids) > 1

    def to_json(self) -> dict[str, Any]:
        return {"ids": dict(self.ids), "label": self.label, "labels": dict(self.labels), "topic": self.topic,
                "hop": self.hop, "aligned": self.aligned, "alignments": [a.to_json() for a in self.alignments]}


@dataclass(frozen=True, slots=True)
class Link:
    """An edge of one source KG between two merged nodes (indexes), with its original relation id."""

    kg: str
    subject: int
    relation: str
    object: int
    label: str
    via: tuple[str, ...] = ()
    hop: int = 1

    def to_json(self) -> dict[str, Any]:
        return {"kg": self.kg, "subject": self.subject, "relation": self.relation, "object": self.object,
                "label": self.label, "via": list(self.via), "hop": self.hop}


@dataclass(frozen=True, slots=True)
class RelationMatch:
    """Relation `left` of KG `left_kg` means what `right` of `right_kg` means (label embeddings)."""

    left_kg: str
    left: str
    right_kg: str
    right: str
    score: float

    def to_json(self) -> dict[str, Any]:
        return {"left_kg": self.left_kg, "left": self.left, "right_kg": self.right_kg, "right": self.right,
                "score": round(self.score, 4)}


@dataclass
class MergedGraph:
    """Nodes (aligned entities merged), edges with their source KG, readable relation labels."""

    kgs: dict[str, str]  # KG name -> dialect name
    nodes: list[Node] = field(default_factory=list)
    edges: list[Link] = field(default_factory=list)
    relation_labels: dict[str, dict[str, str]] = field(default_factory=dict)  # kg -> relation -> label
    relation_matches: list[RelationMatch] = field(default_factory=list)
    conflicts: list[Alignment] = field(default_factory=list)  # refused: would give a node two ids in one KG

    def dialect(self, kg: str) -> Dialect:
        """The dialect KG `kg` speaks (what it can do: `relation_labels`, `is_cvt`, `supports(...)`)."""
        return get_dialect(self.kgs[kg])

    def index(self, kg: str, entity: str) -> int | None:
        """Index of the node holding `entity` of KG `kg`, or None."""
        for i, node in enumerate(self.nodes):
            if node.ids.get(kg) == entity:
                return i
        return None

    def node(self, kg: str, entity: str) -> Node | None:
        i = self.index(kg, entity)
        return None if i is None else self.nodes[i]

    def edges_of(self, index: int) -> list[Link]:
        return [e for e in self.edges if index in (e.subject, e.object)]

    def to_json(self) -> dict[str, Any]:
        """`{"kgs", "nodes": [{"ids": {kg: id}, "label", …}], "edges": [{"kg", "subject", "relation", "object", …}]}`."""
        return {
            "kgs": dict(self.kgs),
            "nodes": [n.to_json() for n in self.nodes],
            "edges": [e.to_json() for e in self.edges],
            "relation_matches": [m.to_json() for m in self.relation_matches],
            "conflicts": [a.to_json() for a in self.conflicts],
        }


def readable_relation(relation: str, label: str | None = None, *, long: bool = False) -> str:
    """A label comparable across KGs: the KG's own label when it has one (Wikidata), else from the id.

    `people.person.nationality` → "nationality" (long: "person nationality"); a compound CVT relation
    `people.person.places_lived|people.place_lived.location` → "places lived / location".
    """
    if label:
        return label
    parts = []
    for k, part in enumerate(relation.split(COMPOUND_SEP)):
        segments = part.split(".")
        words = segments[-1].replace("_", " ")
        if long and k == 0 and len(segments) >= 2:
            words = f"{segments[-2].replace('_', ' ')} {words}"
        parts.append(words)
    return " / ".join(parts)


# -- expansion -------------------------------------------------------------------------------------
async def expand(
    topics: Sequence[str] | Mapping[str, Iterable[str]],
    kgs: Mapping[str, KG],
    hops: int = 1,
    width: int | None = 3,
    *,
    limit: int | None = None,
    scorer: RelationScorer | None = None,
    aligner: Aligner | None = None,
    direction: str = "both",
    progress: Progress | None = None,
    labels: Mapping[str, Mapping[str, str]] | None = None,
    offload: bool = False,
) -> MergedGraph:
    """Expand `topics` over all `kgs` to `hops`, `width` relations per entity, into one merged graph.

    `topics` are ids of any KG (a QID or a mid; each is aligned to the other KGs first) or a mapping
    KG name → ids already known there. `limit` caps the neighbours kept per (entity, relation).
    `scorer(relations) -> scores` (sync or async) picks which relations count towards `width`.
    `aligner` merges entities (default: all methods); `Aligner(kgs, methods=())` merges nothing.
    `labels`: KG name → {id: label} the caller knows already (e.g. of the topics), not asked again.
    `offload`: do the CPU-heavy bookkeeping (recording each hop's edges, assembling the merged graph) in a
    worker thread, so that the event loop stays free for other work meanwhile (a run waiting on an LLM
    sends its calls without delay); the graph is the same either way.
    """
    if not kgs:
        raise KgfedError("expansion needs at least one KG: give e.g. --kg freebase,wikidata")
    if isinstance(hops, bool) or not isinstance(hops, int) or hops < 0:
        raise KgfedError(f"invalid hops {hops!r}: expected a whole number ≥ 0")
    if width is not None and (isinstance(width, bool) or not isinstance(width, int) or width < 1):
        raise KgfedError(f"invalid width {width!r}: expected a whole number ≥ 1 (relations per entity), or None for all")
    aligner = aligner or Aligner(kgs)
    state = _State(kgs)
    for name, given in (labels or {}).items():
        if name in state.labels:
            state.labels[name].update((entity, label) for entity, label in given.items() if label)
    total = hops + 2
    report = progress or (lambda *_: None)
    report("aligning topics", 0, total)
    frontier = await _seed(topics, kgs, aligner)
    for name, ids in frontier.items():
        for entity in sorted(ids):  # sets of ids: sorted, so node order never depends on the hash seed
            state.reach(name, entity, 0)
    state.topics = {(n, i) for n, ids in frontier.items() for i in ids}
    for hop in range(1, hops + 1):
        report(f"hop {hop}/{hops}: {sum(map(len, frontier.values()))} entities", hop - 1, total)
        active = [n for n in kgs if frontier.get(n)]
        found = await asyncio.gather(*(_hop(kgs[n], frontier[n], width, limit, scorer, direction, offload) for n in active))
        if offload:
            new = await asyncio.to_thread(state.add_all, active, found, hop)
        else:
            new = state.add_all(active, found, hop)
        if hop < hops and len(kgs) > 1 and any(new.values()):  # expand what one KG reached in the others too
            pools = {name: sorted(ids) for name, ids in new.items()}
            known = state.known_labels(pools)
            for a in await aligner.align_pools(pools, labels=known):
                for kg, entity in (a.target_kg, a.target), (a.source_kg, a.source):
                    if state.reach(kg, entity, hop):
                        new[kg].add(entity)
            state.absorb(known)
        frontier = new
    report(f"aligning {sum(map(len, state.seen.values()))} entities", hops, total)
    alignments = []
    if len(kgs) > 1:
        pools = {n: list(ids) for n, ids in state.seen.items()}
        known = state.known_labels(pools)
        alignments = await aligner.align_pools(pools, labels=known)
        state.absorb(known)
    report("labels", hops + 1, total)
    merged = await state.build(alignments, offload=offload)
    report("done", total, total)
    return merged


async def _seed(topics: Sequence[str] | Mapping[str, Iterable[str]], kgs: Mapping[str, KG], aligner: Aligner) -> dict[str, set[str]]:
    """Topic ids per KG: given per KG, or aligned from whichever KG each id belongs to."""
    seeds: dict[str, set[str]] = defaultdict(set)
    if isinstance(topics, Mapping):
        for name, ids in topics.items():
            if name not in kgs:
                raise KgfedError(f"unknown KG {name!r} in topics: this federation has {', '.join(kgs)}")
            seeds[name].update(kgs[name].check(i) for i in ids)
    else:
        if isinstance(topics, str):
            topics = [topics]
        if not topics:
            raise KgfedError("no topic entity: give at least one id such as Q42 or m.0d3k14")
        sources = aligner.sources(topics)
        for entity, names in sources.items():
            for name in names:
                seeds[name].add(entity)
        if len(kgs) > 1:
            for alignments in (await aligner.align(list(sources))).values():
                for a in alignments:
                    seeds[a.target_kg].add(a.target)
    return seeds


async def _hop(kg: KG, entities: Iterable[str], width: int | None, limit: int | None,
               scorer: RelationScorer | None, direction: str, offload: bool = False) -> list[Edge]:
    """One hop in one KG: relations of the frontier, W per entity, their neighbours (entities only)."""
    found = await kg.relations_many(sorted(entities), direction)
    # the cross-KG id claims (P646) are alignment data, not knowledge: never followed as relations
    skip = frozenset(kg.dialect.id_links.values())
    chosen = await asyncio.gather(*(_choose(rels, width, scorer, skip) for rels in found.values()))
    triples = [(r.entity, r.relation, r.direction) for rels in chosen for r in rels]
    if not triples:
        return []
    edges = await kg.neighbors_many(triples, limit=limit)
    if offload:
        return await asyncio.to_thread(_entity_edges, kg, edges.values())
    return _entity_edges(kg, edges.values())


def _entity_edges(kg: KG, buckets: Iterable[Sequence[Edge]]) -> list[Edge]:
    """The edges whose far end is an entity of the KG (no literal, no IRI outside its namespace), in order."""
    out = []
    valid: dict[str, bool] = {}  # far ends repeat across buckets: each checked once
    check = kg.dialect.check_entity
    for bucket in buckets:
        for edge in bucket:
            if edge.literal:
                continue
            entity = edge.entity
            ok = valid.get(entity)
            if ok is None:
                try:
                    check(entity)
                    ok = True
                except InvalidIdentifier:  # an IRI outside the KG's namespace: not an entity we can expand
                    ok = False
                valid[entity] = ok
            if ok:
                out.append(edge)
    return out


async def _choose(relations: Sequence[Relation], width: int | None, scorer: RelationScorer | None,
                  skip: frozenset[str] = frozenset()) -> list[Relation]:
    """The `width` relations to follow: stable order (outgoing first, then id), or best-scored first."""
    rels = sorted((r for r in relations if r.relation.split(COMPOUND_SEP)[0] not in skip),
                  key=lambda r: (r.direction != "out", r.relation))
    if scorer is not None and rels:
        scores = scorer(rels)
        if inspect.isawaitable(scores):
            scores = await scores
        scores = list(scores)
        if len(scores) != len(rels):
            raise KgfedError(f"relation scorer returned {len(scores)} scores for {len(rels)} relations: return one per relation")
        order = sorted(range(len(rels)), key=lambda k: -float(scores[k]))
        rels = [rels[k] for k in order]
    return rels if width is None else rels[:width]


class _State:
    """What an expansion has reached so far: entities per KG (first hop), edges, labels."""

    def __init__(self, kgs: Mapping[str, KG]):
        self.kgs = kgs
        self.seen: dict[str, dict[str, int]] = {n: {} for n in kgs}
        self.edges: dict[tuple, tuple[Edge, int]] = {}
        self.labels: dict[str, dict[str, str]] = {n: {} for n in kgs}
        self.asked: set[Key] = set()  # labels asked of the KG already (found or not): never asked twice
        self.topics: set[Key] = set()

    def reach(self, kg: str, entity: str, hop: int) -> bool:
        """Record `entity` of `kg`; True when it is new."""
        if entity in self.seen[kg]:
            return False
        self.seen[kg][entity] = hop
        return True

    def add(self, kg: str, edge: Edge, hop: int) -> bool:
        """Record an edge and its far end; True when the far end is new."""
        self.edges.setdefault((kg, edge.subject, edge.relation, edge.object, edge.via), (edge, hop))
        if edge.label:
            self.labels[kg].setdefault(edge.entity, edge.label)
        return self.reach(kg, edge.entity, hop)

    def add_all(self, names: Sequence[str], found: Sequence[Sequence[Edge]], hop: int) -> dict[str, set[str]]:
        """`add` every edge of one hop (`found[k]`: KG `names[k]`'s); the far ends new per KG."""
        new: dict[str, set[str]] = defaultdict(set)
        edges, seen = self.edges, self.seen
        for name, bucket in zip(names, found):
            labels, reached, fresh = self.labels[name], seen[name], set()
            for edge in bucket:
                edges.setdefault((name, edge.subject, edge.relation, edge.object, edge.via), (edge, hop))
                entity = edge.entity
                label = edge.label
                if label:
                    labels.setdefault(entity, label)
                if entity not in reached:
                    reached[entity] = hop
                    fresh.add(entity)
            if fresh:  # only KGs that reached something new (as `add` one edge at a time left it)
                new[name] |= fresh
        return new

    async def build(self, alignments: Sequence[Alignment], *, offload: bool = False) -> MergedGraph:
        """Merge aligned entities into nodes, fetch missing labels, map edges onto node indexes
        (`offload`: the merging and mapping in a worker thread)."""
        keys: list[Key] = sorted(((n, i) for n, ids in self.seen.items() for i in ids),
                                 key=lambda k: (self.seen[k[0]][k[1]], list(self.kgs).index(k[0])))
        groups, applied, conflicts = merge_keys(keys, alignments)
        await self._fetch_labels([k for group in groups for k in group])
        relation_labels = await self._relation_labels()
        if offload:
            return await asyncio.to_thread(self._assemble, groups, applied, conflicts, relation_labels)
        return self._assemble(groups, applied, conflicts, relation_labels)

    def _assemble(self, groups: Sequence[list[Key]], applied: Sequence[list[Alignment]], conflicts: list[Alignment],
                  relation_labels: dict[str, dict[str, str]]) -> MergedGraph:
        """The merged graph: a node per group of aligned keys, a link per distinct edge between nodes."""
        rank = {name: k for k, name in enumerate(self.kgs)}
        merged = MergedGraph({n: kg.dialect.name for n, kg in self.kgs.items()}, conflicts=conflicts)
        index: dict[Key, int] = {}
        for group, links in zip(groups, applied):
            ids = {kg: entity for kg, entity in sorted(group, key=lambda k: rank[k[0]])}
            labels = {kg: self.labels[kg][entity] for kg, entity in ids.items() if entity in self.labels[kg]}
            hops = [self.seen[kg][entity] for kg, entity in group if entity in self.seen[kg]]
            node = Node(ids, next(iter(labels.values()), None), labels, any(k in self.topics for k in group), min(hops), links)
            for key in group:
                index[key] = len(merged.nodes)
            merged.nodes.append(node)
        merged.relation_labels = relation_labels
        # Two edges become one link only when aligned entities merge their ends; without merging (one key
        # per node) every edge is its own link. The key holds what decides Link equality (the label follows
        # from the KG and relation).
        merging = len(index) > len(merged.nodes)
        seen_links: set[tuple] = set()
        append = merged.edges.append
        for (kg, subject, relation, obj, via), (_edge, hop) in self.edges.items():
            s, o = index[(kg, subject)], index[(kg, obj)]
            if merging:
                seen = (kg, s, relation, o, via, hop)
                if seen in seen_links:
                    continue
                seen_links.add(seen)
            append(Link(kg, s, relation, o, relation_labels[kg][relation], via, hop))
        return merged

    def known_labels(self, pools: Mapping[str, Sequence[str]]) -> dict[str, dict[str, str | None]]:
        """The labels known so far of the pools' entities (None: asked, it has none), for aligning by label;
        the aligner adds those it asks for (`absorb` them after)."""
        return {kg: {e: self.labels[kg].get(e) for e in ids if e in self.labels[kg] or (kg, e) in self.asked}
                for kg, ids in pools.items()}

    def absorb(self, known: Mapping[str, Mapping[str, str | None]]) -> None:
        """Record labels asked elsewhere (found or not), so they are never asked again."""
        for kg, labels in known.items():
            for entity, label in labels.items():
                if label:
                    self.labels[kg].setdefault(entity, label)
                self.asked.add((kg, entity))

    async def _fetch_labels(self, keys: Iterable[Key]) -> None:
        missing: dict[str, list[str]] = defaultdict(list)
        for kg, entity in keys:
            if entity not in self.labels[kg] and (kg, entity) not in self.asked:
                self.asked.add((kg, entity))
                missing[kg].append(entity)
        names = list(missing)
        found = await asyncio.gather(*(self.kgs[n].labels(missing[n]) for n in names))
        for name, labels in zip(names, found):
            self.labels[name].update({i: lab.label for i, lab in labels.items() if lab.label})

    async def _relation_labels(self) -> dict[str, dict[str, str]]:
        """Readable labels of the relations on the edges (opaque ids' labels, Wikidata's, fetched in a batch)."""
        own: dict[str, dict[str, str | None]] = {n: {} for n in self.kgs}
        for (kg, _, relation, _, _), (edge, _) in self.edges.items():
            own[kg].setdefault(relation, edge.relation_label)
        asks = [(n, [r for r, lab in rels.items() if not lab]) for n, rels in own.items()
                if self.kgs[n].dialect.relation_labels]
        asks = [(n, rels) for n, rels in asks if rels]
        found = await asyncio.gather(*(self.kgs[n].labels(rels) for n, rels in asks))
        for (name, _), labels in zip(asks, found):
            for relation, label in labels.items():
                own[name][relation] = label.label
        return {n: {r: readable_relation(r, lab) for r, lab in rels.items()} for n, rels in own.items()}


def merge_keys(keys: Sequence[Key], alignments: Sequence[Alignment]) -> tuple[list[list[Key]], list[list[Alignment]], list[Alignment]]:
    """Union (KG, id) keys along alignments, identifiers first, never two ids of one KG in a group.

    Returns the groups (in order of their first key), the alignments applied in each, and the refused ones.
    """
    parent: dict[Key, Key] = {k: k for k in keys}
    members: dict[Key, list[Key]] = {k: [k] for k in keys}
    links: dict[Key, list[Alignment]] = defaultdict(list)
    order = list(keys)
    conflicts = []

    def find(k: Key) -> Key:
        if k not in parent:  # an id outside the pools (e.g. a cross-KG id link's target not reached): its own group
            return k
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for a in sorted(alignments, key=lambda a: (RANK.get(a.method, 9), -a.confidence, a.source_kg, a.source, a.target_kg, a.target)):
        ra, rb = find((a.source_kg, a.source)), find((a.target_kg, a.target))
        if ra == rb:
            continue
        if {kg for kg, _ in members.get(ra, [ra])} & {kg for kg, _ in members.get(rb, [rb])}:
            conflicts.append(a)
            continue
        for root in (ra, rb):
            if root not in parent:
                parent[root] = root
                members[root] = [root]
                order.append(root)
        parent[rb] = ra
        members[ra] += members.pop(rb)
        links[ra] += links.pop(rb, []) + [a]
    roots = list(dict.fromkeys(find(k) for k in order))
    return [members[r] for r in roots], [links.get(r, []) for r in roots], conflicts


# -- relation alignment ----------------------------------------------------------------------------
async def align_relations(merged: MergedGraph, threshold: float = 0.6, *, margin: float = 0.02,
                          embedder: Any = None, long: bool = False) -> list[RelationMatch]:
    """Match relations across KGs by the embeddings of their readable labels (mutual best ≥ threshold).

    Freebase relations are embedded by their property words ("nationality"; `long=True` adds the type,
    "person nationality", which matched fewer Wikidata labels on the federation fixture).
    The matches are stored in `merged.relation_matches` and returned.
    """
    import numpy as np

    if embedder is None:  # the caller's (a session's): none is made up here
        raise KgfedError("relation alignment needs an embedder: pass embedder= (a session's `embedder`)")
    used: dict[str, list[str]] = defaultdict(list)
    for link in merged.edges:
        if link.relation not in used[link.kg]:
            used[link.kg].append(link.relation)
    texts = {(kg, r): _relation_text(merged, kg, r, long) for kg, rels in used.items() for r in rels}
    keys = list(texts)
    vectors = dict(zip(keys, np.asarray(await embedder.encode([texts[k] for k in keys])))) if keys else {}
    matches = []
    for a, b in combinations(list(used), 2):
        left, right = used[a], used[b]
        scores = np.array([[float(vectors[(a, x)] @ vectors[(b, y)]) for y in right] for x in left])
        for r, c, score in best_matches(scores, threshold, margin, mutual=True):
            matches.append(RelationMatch(a, left[r], b, right[c], score))
    merged.relation_matches = matches
    return matches


def _relation_text(merged: MergedGraph, kg: str, relation: str, long: bool) -> str:
    label = merged.relation_labels.get(kg, {}).get(relation)
    derived = readable_relation(relation)
    if label and label != derived:  # the KG's own label (Wikidata)
        return label
    return readable_relation(relation, long=long)
