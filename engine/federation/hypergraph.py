"""A hypergraph view of a (merged) subgraph: every n-ary fact becomes one hyperedge over all its entities.

    merged = await expand(["m.0157m"], kgs, hops=1)
    hg = await hypergraph_of(merged, kgs)            # CVTs and qualified statements as hyperedges
    await add_synonyms(hg, embedder=emb)             # near-same entities joined by synonym hyperedges
    await grow(hg, kgs, [hg.index("freebase", "m.0157m")])   # one more hop, added in place

- a Freebase CVT (the `via` node of a compound `r1|r2` edge) is fetched with all its role edges, in and
  out, and becomes one hyperedge over every role entity; literal roles (dates) become attributes;
- a Wikidata statement (`p:`/`ps:`/`pq:`, `KG.qualifiers`) becomes one hyperedge over
  the subject, the value and every entity-valued qualifier; literal qualifiers become attributes;
- any other edge is a hyperedge of two;
- synonym hyperedges join the entities whose label embeddings are near-same (connected components of the
  pairs above a threshold, as PRoH §4.1 builds them); entities that alignment says are the same are
  already one node of the merged graph.

Hyperedges carry a readable name ("marriage: spouse Bill Clinton; spouse Hillary Rodham Clinton; …")
that PRoH matches questions against and INSES shows its navigator.
"""
from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...sparql.dialects import COMPOUND_SEP
from ...sparql.errors import InvalidIdentifier, KgfedError
from .align import Aligner
from .matching import cosine_matrix
from ..kg.facade import KG
from ..kg.model import Edge, Statement
from .subgraph import Link, MergedGraph, Node, expand

Key = tuple[str, str]  # (KG name, short id)
KINDS = ("binary", "cvt", "statement", "synonym")


@dataclass(frozen=True, slots=True)
class Hyperedge:
    """One fact over several nodes: `members` are (role, node index); literal roles are `attributes`."""

    kind: str
    kg: str
    relation: str  # binary: the relation id; cvt: the CVT type ("people.marriage"); statement: the P-id
    members: tuple[tuple[str, int], ...]
    name: str
    attributes: tuple[tuple[str, str], ...] = ()
    id: str = ""  # the CVT node or the statement, when the fact has one
    label: str = ""  # readable relation (binary and statement hyperedges)

    @property
    def nodes(self) -> frozenset[int]:
        return frozenset(i for _, i in self.members)

    def role(self, node: int) -> str | None:
        return next((r for r, i in self.members if i == node), None)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "kg": self.kg, "relation": self.relation, "id": self.id, "name": self.name,
                "members": [{"role": r, "node": i} for r, i in self.members],
                "attributes": [{"role": r, "value": v} for r, v in self.attributes]}


@dataclass
class Hypergraph:
    """Nodes (merged entities, as in `MergedGraph`) and hyperedges, with node → hyperedge incidence."""

    kgs: dict[str, str] = field(default_factory=dict)  # KG name -> dialect name
    nodes: list[Node] = field(default_factory=list)
    edges: list[Hyperedge] = field(default_factory=list)
    descriptions: dict[int, str] = field(default_factory=dict)
    _keys: dict[Key, int] = field(default_factory=dict, repr=False)
    _incident: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list), repr=False)
    _seen: dict[tuple, int] = field(default_factory=dict, repr=False)
    expanded: set[int] = field(default_factory=set)  # nodes whose 1-hop neighbourhood has been added
    skipped: list[Key] = field(default_factory=list)  # entities whose neighbourhood could not be asked for
    entity_labels: dict[Key, str] = field(default_factory=dict, repr=False)  # (KG, id) -> its label there, as fetched

    # -- nodes -------------------------------------------------------------------------------------
    def index(self, kg: str, entity: str) -> int | None:
        return self._keys.get((kg, entity))

    def add_node(self, ids: Mapping[str, str], label: str | None = None, *, topic: bool = False, hop: int = 0) -> int:
        """The index of the node holding any of `ids` (given ids added to it), else of a new node."""
        found = next((self._keys[k] for k in ids.items() if k in self._keys), None)
        if found is None:
            found = len(self.nodes)
            self.nodes.append(Node(dict(ids), label, {}, topic, hop))
        node = self.nodes[found]
        for kg, entity in ids.items():
            if kg not in node.ids and (kg, entity) not in self._keys:
                node.ids[kg] = entity
            self._keys.setdefault((kg, entity), found)
        node.label = node.label or label
        node.topic = node.topic or topic
        return found

    def label(self, node: int) -> str:
        n = self.nodes[node]
        return n.label or next(iter(n.ids.values()))

    def text(self, node: int) -> str:
        """Label and (when known) description: what entity similarity embeds."""
        desc = self.descriptions.get(node)
        return f"{self.label(node)}, {desc.split('. ')[0][:120]}" if desc else self.label(node)

    def id_in(self, node: int, kg: str | None = None) -> str:
        ids = self.nodes[node].ids
        return ids[kg] if kg in ids else next(iter(ids.values()))

    # -- hyperedges --------------------------------------------------------------------------------
    def add_edge(self, edge: Hyperedge) -> int:
        """Add a hyperedge (once: the same fact from two expansions is one hyperedge)."""
        key = (edge.kind, edge.kg, edge.id) if edge.id else (edge.kind, edge.kg, edge.relation, edge.members)
        if key in self._seen:
            return self._seen[key]
        self._seen[key] = len(self.edges)
        self.edges.append(edge)
        for node in edge.nodes:
            self._incident[node].append(self._seen[key])
        return self._seen[key]

    def incident(self, node: int, *, kinds: Iterable[str] = KINDS) -> list[int]:
        """Hyperedges containing `node` (E(v))."""
        kinds = set(kinds)
        return [e for e in self._incident.get(node, []) if self.edges[e].kind in kinds]

    def neighbours(self, edge: int, *, kinds: Iterable[str] = KINDS) -> list[int]:
        """Hyperedges sharing at least one node with `edge` (Nbr(e))."""
        found = dict.fromkeys(e for v in self.edges[edge].nodes for e in self.incident(v, kinds=kinds))
        found.pop(edge, None)
        return list(found)

    def overlap(self, a: int, b: int) -> frozenset[int]:
        return self.edges[a].nodes & self.edges[b].nodes

    def as_edge(self, edge: int, origin: int, target: int) -> Edge:
        """The hop `origin` → `target` across a hyperedge, as an `Edge` for `Result.paths`."""
        h = self.edges[edge]
        kg = h.kg if h.kg in self.nodes[origin].ids else next(iter(self.nodes[origin].ids))
        via = (h.id,) if h.id else ()
        if h.kind == "binary" and h.members[0][1] == target:  # the stored triple points at `origin`
            return Edge(h.kg, self.id_in(target, h.kg), h.relation, self.id_in(origin, h.kg), "in", self.label(target),
                        h.label or h.name, self.label(origin), via)
        relation = h.relation if h.kind == "binary" else COMPOUND_SEP.join(r for r in (h.role(origin), h.role(target)) if r) or h.kind
        return Edge(kg, self.id_in(origin, kg), relation, self.id_in(target, h.kg), "out", self.label(origin),
                    h.label or h.name, self.label(target), via)

    def to_json(self) -> dict[str, Any]:
        return {"kgs": dict(self.kgs), "nodes": [n.to_json() for n in self.nodes],
                "edges": [e.to_json() for e in self.edges]}


# -- building ------------------------------------------------------------------------------------------
async def hypergraph_of(merged: MergedGraph, kgs: Mapping[str, KG], *, statements: bool = True) -> Hypergraph:
    """The hypergraph view of a merged subgraph (CVT role edges and statement qualifiers fetched)."""
    hg = Hypergraph(dict(merged.kgs))
    await extend(hg, merged, kgs, statements=statements)
    return hg


async def extend(hg: Hypergraph, merged: MergedGraph, kgs: Mapping[str, KG], *, statements: bool = True,
                 topics: bool = True) -> list[int]:
    """Add a merged subgraph's nodes and facts to `hg`; returns the indexes of the hyperedges added or met.

    `topics=False` keeps the merged graph's topic flags out (a growth step's seeds are not question topics).
    """
    hg.kgs.update(merged.kgs)
    hidden = {i: n.ids[k] for i, n in enumerate(merged.nodes) for k in n.ids
              if len(n.ids) == 1 and not n.topic and merged.dialect(k).is_cvt(n.ids[k], n.label)}
    where = [-1 if i in hidden else hg.add_node(n.ids, n.label, topic=topics and n.topic, hop=n.hop) for i, n in enumerate(merged.nodes)]
    for node, index in zip(merged.nodes, where):
        for kg, label in node.labels.items():
            hg.entity_labels.setdefault((kg, node.ids[kg]), label)
        if index >= 0:
            hg.nodes[index].labels.update(node.labels)
    cvts: dict[str, list[Link]] = defaultdict(list)
    plain: list[Link] = []
    for link in merged.edges:
        # a nameless Freebase node (a CVT reached by a simple relation) is a fact, not an entity
        ends = tuple(hidden[i] for i in (link.subject, link.object) if i in hidden)
        if ends:
            cvts[link.kg].append(Link(link.kg, link.subject, link.relation, link.object, link.label, ends, link.hop))
        else:
            (cvts[link.kg].append(link) if link.via else plain.append(link))
    qualified = await _statements(hg, plain, merged, where, kgs) if statements else {}
    found = []
    for link in plain:
        if id(link) in qualified:
            found.append(qualified[id(link)])
            continue
        s, o = where[link.subject], where[link.object]
        found.append(hg.add_edge(Hyperedge("binary", link.kg, link.relation, (("subject", s), (link.label, o)),
                                           f"{hg.label(s)} {link.label} {hg.label(o)}", label=link.label)))
    for kg, links in cvts.items():
        found += await _cvts(hg, kgs[kg], links, merged, where)
    return found


async def _cvts(hg: Hypergraph, kg: KG, links: Sequence[Link], merged: MergedGraph, where: Sequence[int]) -> list[int]:
    """Each CVT of the links, with all its role edges (both directions), as one hyperedge."""
    ids = list(dict.fromkeys(v for link in links for v in link.via))
    roles = await cvt_roles(kg, ids)
    out = []
    for cvt in ids:
        edges = roles.get(cvt, [])
        if not edges:  # the store gave nothing more: keep what the compound edges say
            edges = [e for link in links if cvt in link.via for e in _link_edges(kg.name, link, merged)]
        out.append(hg.add_edge(cvt_hyperedge(hg, kg.name, cvt, edges)))
    return out


def _link_edges(kg: str, link: Link, merged: MergedGraph) -> list[Edge]:
    cvt = link.via[0]
    if COMPOUND_SEP not in link.relation:  # a simple edge to or from the CVT itself
        end = merged.nodes[link.object if merged.nodes[link.subject].ids.get(kg) == cvt else link.subject]
        if end.ids.get(kg) == cvt:
            return []
        direction = "out" if merged.nodes[link.subject].ids.get(kg) == cvt else "in"
        return [Edge(kg, cvt, link.relation, end.ids[kg], "out", object_label=end.label) if direction == "out"
                else Edge(kg, end.ids[kg], link.relation, cvt, "in", end.label)]
    first, _, second = link.relation.partition(COMPOUND_SEP)
    s, o = merged.nodes[link.subject], merged.nodes[link.object]
    return [Edge(kg, s.ids[kg], first, cvt, "in", s.labels.get(kg) or s.label),
            Edge(kg, cvt, second, o.ids[kg], "out", object_label=o.labels.get(kg) or o.label)]


async def cvt_roles(kg: KG, cvts: Sequence[str]) -> dict[str, list[Edge]]:
    """All simple edges of each CVT node, out (its roles) and in (entities pointing at it)."""
    if not cvts:
        return {}
    rels = await kg.relations_many(list(cvts), "both")
    triples = [(r.entity, r.relation, r.direction) for found in rels.values() for r in found if COMPOUND_SEP not in r.relation]
    edges = await kg.neighbors_many(triples) if triples else {}
    out: dict[str, list[Edge]] = defaultdict(list)
    for (cvt, _, _), found in edges.items():
        out[cvt] += found
    return out


def cvt_hyperedge(hg: Hypergraph, kg: str, cvt: str, edges: Sequence[Edge]) -> Hyperedge:
    """One hyperedge over the role entities of a CVT (its outgoing relations name the roles)."""
    members: dict[int, str] = {}
    attributes: list[tuple[str, str]] = []
    types: Counter[str] = Counter()
    for edge in edges:
        # an out-edge names the entity's role; an in-edge (entity -> CVT) names the entity's type
        role = edge.relation.split(".")[-1 if edge.direction == "out" else -2].replace("_", " ")
        if edge.direction == "out":
            types[".".join(edge.relation.split(".")[:2])] += 1
        if edge.literal:
            attributes.append((role, edge.label or edge.entity))
            continue
        if edge.entity == cvt or not edge.label:  # nameless: another CVT, not a role entity
            continue
        node = hg.add_node({kg: edge.entity}, edge.label)
        if edge.direction == "out" or node not in members:
            members[node] = role
    kind = types.most_common(1)[0][0] if types else "cvt"
    parts = [f"{role} {hg.label(n)}" for n, role in members.items()] + [f"{r} {v}" for r, v in attributes]
    name = f"{kind.split('.')[-1].replace('_', ' ')}: " + "; ".join(parts)
    return Hyperedge("cvt", kg, kind, tuple((r, n) for n, r in members.items()), name, tuple(attributes), cvt)


async def _statements(hg: Hypergraph, links: Sequence[Link], merged: MergedGraph, where: Sequence[int],
                      kgs: Mapping[str, KG]) -> dict[int, int]:
    """Statement hyperedges for Wikidata links that carry qualifiers: id(link) -> hyperedge index."""
    out: dict[int, int] = {}
    for name, kg in kgs.items():
        if not await kg.has_qualifiers():
            continue
        mine = [link for link in links if link.kg == name]
        pairs = list(dict.fromkeys((merged.nodes[link.subject].ids[name], link.relation) for link in mine))
        found = await kg.qualifiers(pairs)
        for link in mine:
            subject, value = merged.nodes[link.subject].ids[name], merged.nodes[link.object].ids[name]
            for st in found.get((subject, link.relation), []):
                if st.value == value and (st.qualifiers or st.attributes):
                    out[id(link)] = hg.add_edge(_statement_edge(hg, name, link, where, st))
    return out


def _statement_edge(hg: Hypergraph, kg: str, link: Link, where: Sequence[int], st: Statement) -> Hyperedge:
    s, o = where[link.subject], where[link.object]
    members = [("subject", s), (link.label, o)]
    for role, entity in st.qualifiers:
        members.append((role, hg.add_node({kg: entity})))
    attributes = st.attributes
    parts = [f"{role} {hg.label(n)}" for role, n in members[2:]] + [f"{r} {v}" for r, v in attributes]
    name = f"{hg.label(s)} {link.label} {hg.label(o)}" + (f" ({'; '.join(parts)})" if parts else "")
    return Hyperedge("statement", kg, link.relation, tuple(members), name, attributes, st.id, link.label)


# -- growing ---------------------------------------------------------------------------------------------
async def grow(hg: Hypergraph, kgs: Mapping[str, KG], nodes: Iterable[int], *, width: int | None = None,
               limit: int | None = None, aligner: Aligner | None = None, scorer=None, statements: bool = True) -> list[int]:
    """Add the 1-hop neighbourhood of `nodes` (in every KG they have an id in); returns hyperedges reached.

    `aligner` defaults to merging nothing (`Aligner(kgs, methods=())`): pass `Aligner(kgs)` to merge
    counterparts as the federation does.
    """
    todo = [n for n in dict.fromkeys(nodes) if n not in hg.expanded]
    seeds: dict[str, list[str]] = defaultdict(list)
    known: dict[str, dict[str, str]] = defaultdict(dict)  # the seeds' labels, held already: not asked again
    for n in todo:
        for kg, entity in hg.nodes[n].ids.items():
            if kg in kgs and not kgs[kg].dialect.cvt_id(entity):
                seeds[kg].append(entity)
                if (kg, entity) in hg.entity_labels:
                    known[kg][entity] = hg.entity_labels[(kg, entity)]
    hg.expanded.update(todo)
    if not seeds:
        return []
    aligner = aligner or Aligner(kgs, methods=(), cache=False)
    try:
        merged = [await expand(dict(seeds), kgs, hops=1, width=width, limit=limit, scorer=scorer, aligner=aligner,
                               labels=known)]
    except InvalidIdentifier:
        # an id its KG refuses: expand the seeds one by one and
        # leave out only the ones whose neighbourhood cannot be asked for
        merged = []
        for kg, ids in seeds.items():
            for entity in ids:
                try:
                    merged.append(await expand({kg: [entity]}, kgs, hops=1, width=width, limit=limit, scorer=scorer, aligner=aligner))
                except InvalidIdentifier:
                    hg.skipped.append((kg, entity))
    return [e for m in merged for e in await extend(hg, m, kgs, statements=statements, topics=False)]


async def describe(hg: Hypergraph, kgs: Mapping[str, KG], nodes: Iterable[int]) -> None:
    """Fetch descriptions of nodes that have none yet (batched per KG)."""
    asks: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for n in dict.fromkeys(nodes):
        if n in hg.descriptions:
            continue
        hg.descriptions[n] = ""
        for kg, entity in hg.nodes[n].ids.items():
            if kg in kgs:
                asks[kg].append((n, entity))
    names = list(asks)
    found = await asyncio.gather(*(kgs[k].labels([e for _, e in asks[k]]) for k in names))
    for name, labels in zip(names, found):
        for n, entity in asks[name]:
            lab = labels.get(entity)
            if lab is not None:
                hg.descriptions[n] = hg.descriptions[n] or (lab.description or "")
                hg.nodes[n].label = hg.nodes[n].label or lab.label


# -- synonyms ---------------------------------------------------------------------------------------------
Confirm = Callable[[Sequence[int]], Awaitable[Sequence[int]]]


async def add_synonyms(hg: Hypergraph, *, embedder: Any = None, threshold: float = 0.9,
                       nodes: Iterable[int] | None = None, confirm: Confirm | None = None) -> list[int]:
    """Synonym hyperedges (PRoH §4.1): components of node pairs whose label embeddings reach `threshold`.

    `confirm(component) -> synonyms` may narrow each component (PRoH asks an LLM); without it the whole
    component is taken. Returns the indexes of the synonym hyperedges added.
    """
    import networkx as nx
    import numpy as np

    if embedder is None:  # the caller's (a session's, a method's): none is made up here
        raise KgfedError("synonym edges need an embedder: pass embedder= (a session's or the method's `embedder`)")
    chosen = [n for n in (range(len(hg.nodes)) if nodes is None else dict.fromkeys(nodes)) if hg.nodes[n].label]
    if len(chosen) < 2:
        return []
    sims = await cosine_matrix(embedder, [hg.text(n) for n in chosen])
    graph = nx.Graph()
    rows, cols = np.nonzero(np.triu(sims >= threshold, k=1))
    graph.add_edges_from((chosen[r], chosen[c]) for r, c in zip(rows, cols))
    added = []
    for component in sorted(nx.connected_components(graph), key=min):
        members = sorted(component)
        if confirm is not None:
            members = sorted(set(await confirm(members)) & component)
        if len(members) < 2:
            continue
        name = "same as: " + "; ".join(hg.label(n) for n in members)
        kg = next(iter(hg.nodes[members[0]].ids))
        added.append(hg.add_edge(Hyperedge("synonym", kg, "synonym", tuple(("synonym", n) for n in members), name)))
    return added
