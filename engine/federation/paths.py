"""Paths between entities in a merged subgraph (several KGs as one).

`merged_paths` lists the simple paths of at most `max_depth` edges joining every pair of the given
entities in a `subgraph.MergedSubgraph`, edges taken either way (an edge walked against its direction is a
`backward` step). Each entity is found through the aligner's `kgs_of` (the KGs whose dialect takes the id),
so a Wikidata QID and a Freebase MID reach the same merged node when they were aligned. The search is
networkx's `all_simple_edge_paths`, cut at `max_paths` (the note says so): on a dense subgraph the number
of simple paths grows exponentially with the depth, so the cap, not the depth, bounds the work.

The MCP `paths` tool is its caller (`engine.mcp.service.Engine.paths`), turning each `MergedPath` into the
tool's result model.
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ...sparql.errors import KgfedError

__all__ = ["PathStep", "MergedPath", "merged_paths"]


@dataclass(frozen=True)
class PathStep:
    """One edge of a path: its KG and relation, walked `forward` (along the edge) or `backward`."""

    kg: str
    relation: str
    label: str
    direction: Literal["forward", "backward"]
    source: dict[str, str]  # KG name -> id of the step's start (a merged node may have several)
    source_label: str | None
    target: dict[str, str]
    target_label: str | None


@dataclass(frozen=True)
class MergedPath:
    """A path between two of the entities asked about, with a one-line rendering (`text`)."""

    source: str
    target: str
    length: int
    steps: tuple[PathStep, ...]
    text: str


def merged_paths(merged: Any, entities: Sequence[str], aligner: Any, max_depth: int,
                 max_paths: int) -> tuple[list[MergedPath], str | None]:
    """Simple paths of length ≤ `max_depth` between every pair of `entities` (edges taken either way),
    shortest first, at most `max_paths`; the note says when more were found. An entity not in `merged`
    is a one-line KgfedError."""
    import networkx as nx

    index: dict[str, int] = {}
    for entity in entities:
        spot = next((i for name in aligner.kgs_of(entity) if (i := merged.index(name, entity)) is not None), None)
        if spot is None:
            raise KgfedError(f"{entity} is not in the merged subgraph: check the id with the labels tool")
        index[entity] = spot
    graph = nx.MultiGraph()
    graph.add_nodes_from(range(len(merged.nodes)))
    for k, link in enumerate(merged.edges):
        graph.add_edge(link.subject, link.object, key=k)
    found: list[MergedPath] = []
    more = False
    for a, b in itertools.combinations(entities, 2):
        if index[a] == index[b]:
            continue
        for edge_path in nx.all_simple_edge_paths(graph, index[a], index[b], cutoff=max_depth):
            if len(found) >= max_paths:
                more = True
                break
            found.append(_path(merged, a, b, index[a], edge_path))
        if more:
            break
    found.sort(key=lambda p: (p.length, p.source, p.target, p.text))
    note = f"more than {max_paths} paths: only the first {max_paths} found are listed (raise max_paths)" if more else None
    return found, note


def _path(merged: Any, a: str, b: str, start: int, edge_path: Sequence[tuple[int, int, int]]) -> MergedPath:
    steps, here = [], start
    for _u, _v, k in edge_path:
        link = merged.edges[k]
        forward = link.subject == here
        there = link.object if forward else link.subject
        steps.append(PathStep(kg=link.kg, relation=link.relation, label=link.label,
                              direction="forward" if forward else "backward",
                              source=merged.nodes[here].ids, source_label=merged.nodes[here].label,
                              target=merged.nodes[there].ids, target_label=merged.nodes[there].label))
        here = there
    parts = [steps[0].source_label or next(iter(steps[0].source.values()))]
    for s in steps:
        arrow = f"-[{s.kg}: {s.label}]->" if s.direction == "forward" else f"<-[{s.kg}: {s.label}]-"
        parts.append(f"{arrow} {s.target_label or next(iter(s.target.values()))}")
    return MergedPath(source=a, target=b, length=len(steps), steps=tuple(steps), text=" ".join(parts))
