"""The whole Wikidata graph over the split WDQS: every query asked of the main and the scholarly graph.

Since the WDQS graph split, an item lives in exactly one graph: scholarly articles at
`query-scholarly.wikidata.org`, everything else at `query.wikidata.org`. kgfed's templates are 1-hop
and keyed by entity, and kgfed cannot know an entity's graph before asking, so `SplitGraphEndpoint`
sends each query to every part at once and merges the rows:

- rows are concatenated in the parts' order (main first) and each distinct row is kept once;
- a row that another row extends (the same bindings plus more: the side that lacks the item answers
  an `OPTIONAL` with nothing) is dropped, so a label comes from the side that holds the item;
- a `?x`/`?xlabel` pair left half-bound because the label lives in the other graph (a paper's author,
  a property used on a paper) is completed with one label query per part, in the query's language.

A failing part fails the query (no silent half answer); a partial part makes the merged result partial.
"""
from __future__ import annotations

import asyncio
import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from ..sparql import terms
from ..sparql.results import Row, SelectResult, Term, ask_result
from .base import Endpoint

RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
_ENTITY = re.compile(r"^http://www\.wikidata\.org/(?:entity|prop/direct)/([QP][1-9][0-9]*)$")
_LANG = re.compile(r'LANGMATCHES\(LANG\(\?\w+\),\s*"([A-Za-z0-9-]+)"\)')


class SplitGraphEndpoint:
    """One logical endpoint over the graphs of one split dataset: queries fan out, rows merge."""

    def __init__(self, parts: Sequence[Endpoint], *, name: str | None = None):
        if len(parts) < 2:
            raise ValueError("a split-graph endpoint needs at least two parts")
        self.parts = list(parts)
        # the response cache keys on the name: it names every part, so other parts are another cache
        self.name = f"{name or 'split'}[{' + '.join(p.name for p in self.parts)}]"

    @property
    def client(self) -> Any:
        """The parts' shared HttpClient (what `KG.stats` reads the HTTP counts from)."""
        return getattr(self.parts[0], "client", None)

    async def select(self, query: str) -> SelectResult:
        results = await asyncio.gather(*(part.select(query) for part in self.parts))
        merged = merge_results(results)
        missing = _unlabelled(merged)
        if missing:
            found = _LANG.search(query)
            lang = found[1] if found else "en"
            labels = await self._labels(missing, lang)
            merged = merge_results([_with_labels(merged, labels)])
        return merged

    async def _labels(self, iris: Sequence[str], lang: str) -> dict[str, Term]:
        values = " ".join(f"(<{iri}> <http://www.wikidata.org/entity/{_ENTITY.match(iri)[1]}>)" for iri in iris)  # type: ignore[index]  # _unlabelled keeps only _ENTITY matches
        query = (f"SELECT ?v ?label WHERE {{\n  VALUES (?v ?e) {{ {values} }}\n  ?e <{RDFS_LABEL}> ?label .\n"
                 f'  FILTER(LANG(?label) = "" || LANGMATCHES(LANG(?label), {terms.literal(lang)}))\n}}')
        found: dict[str, Term] = {}
        for result in await asyncio.gather(*(part.select(query) for part in self.parts)):
            for row in result.rows:
                if "v" in row and "label" in row:
                    found.setdefault(row["v"].value, row["label"])
        return found

    async def aclose(self) -> None:
        await asyncio.gather(*(part.aclose() for part in self.parts))


def merge_results(results: Sequence[SelectResult]) -> SelectResult:
    """Rows of every result in order, each distinct row once and no row another extends; ASK: any true."""
    first = results[0]
    if first.boolean is not None:
        merged = ask_result(any(bool(r.boolean) for r in results))
    else:
        variables = list(dict.fromkeys(v for r in results for v in r.vars))
        rows = list({tuple(sorted(row.items())): row for r in results for row in r.rows}.values())
        merged = SelectResult(variables, _drop_subsumed(rows, variables))
    if any(r.partial for r in results):
        merged.partial = True
        merged.note = "; ".join(r.note for r in results if r.partial and r.note) or "a graph of the split answered partially"
    return merged


def _drop_subsumed(rows: list[Row], variables: Sequence[str]) -> list[Row]:
    """Rows minus those whose bindings are all in another row (compared within rows sharing the always-bound values)."""
    always = [v for v in variables if all(v in row for row in rows)]
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        groups[tuple(row[v] for v in always)].append(i)
    dropped: set[int] = set()
    for members in groups.values():
        if len(members) < 2:
            continue
        items = {i: set(rows[i].items()) for i in members}
        for i in members:
            if any(j != i and j not in dropped and items[i] < items[j] for j in members):
                dropped.add(i)
    return [row for i, row in enumerate(rows) if i not in dropped]


def _unlabelled(result: SelectResult) -> list[str]:
    """Wikidata IRIs bound in a `?v` column whose `?vlabel` is unbound in the same row."""
    pairs = [(v, v + "label") for v in result.vars if v + "label" in result.vars]
    found = {row[v].value for row in result.rows for v, label in pairs
             if v in row and label not in row and row[v].kind == "uri" and _ENTITY.match(row[v].value)}
    return sorted(found)


def _with_labels(result: SelectResult, labels: dict[str, Term]) -> SelectResult:
    pairs = [(v, v + "label") for v in result.vars if v + "label" in result.vars]
    rows = []
    for row in result.rows:
        extra = {label: labels[row[v].value] for v, label in pairs
                 if v in row and label not in row and row[v].value in labels}
        rows.append({**row, **extra} if extra else row)
    out = SelectResult(result.vars, rows, result.partial, result.note)
    return out
