"""The `KG` facade: the same four 1-hop operations over any endpoint of either dialect.

    async with KG.open("wikidata") as kg:
        rels = await kg.relations("Q42")
        edges = await kg.neighbors("Q42", "P69")

Batched forms (`relations_many`, `neighbors_many`, `labels`) put a whole beam into `VALUES` blocks of
`batch_size` and run the blocks concurrently; every query goes through the response cache.
"""
from __future__ import annotations

import asyncio
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace

from ..cache.responses import CachedEndpoint, ResponseCache
from ..endpoints.base import Endpoint
from ..endpoints.client import DEFAULT_USER_AGENT, POLITE_HOSTS, HttpClient
from ..endpoints.profiles import resolve_endpoint
from ..sparql.dialects import COMPOUND_SEP, DIRECTIONS, Dialect, FreebaseDialect, RelationFilter, check_direction
from ..sparql.errors import InvalidIdentifier
from ..sparql.results import SelectResult, Term
from .model import Edge, Hit, Label, Relation

Triple = tuple[str, str, str]  # (entity, relation, direction)


def _chunks(items: Sequence, size: int) -> Iterable[Sequence]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


class KG:
    """One knowledge graph behind one endpoint, speaking one dialect, with a response cache."""

    def __init__(
        self,
        endpoint: Endpoint,
        dialect: Dialect,
        *,
        name: str | None = None,
        cache: ResponseCache | None = None,
        offline: bool = False,
        batch_size: int = 50,
        expand_cvt: bool = True,
        relation_filter: RelationFilter | None = None,
        client: HttpClient | None = None,
    ):
        self.dialect = dialect if relation_filter is None else replace(dialect, relation_filter=relation_filter)
        self.name = name or dialect.name
        self.endpoint = CachedEndpoint(endpoint, cache, offline=offline)
        self.batch_size = batch_size
        self.expand_cvt = expand_cvt and isinstance(dialect, FreebaseDialect)
        self._client = client  # owned: closed with the KG
        self._relation_labels: dict[str, str] = {}

    # -- construction ----------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        spec: str,
        *,
        dialect: str | Dialect | None = None,
        name: str | None = None,
        cache_dir: str | os.PathLike | None = None,
        cache: ResponseCache | None | bool = True,
        offline: bool = False,
        user_agent: str = DEFAULT_USER_AGENT,
        timeout: float = 60.0,
        concurrency: int | None = None,
        client: HttpClient | None = None,
        **options,
    ) -> "KG":
        """A KG for an endpoint spec (`wikidata`, `qlever-freebase`, `file:kg.nt`, a URL + dialect).

        `cache=False` disables the response cache; `cache_dir` moves it; `offline=True` answers only
        from the cache. `concurrency` caps requests per host (WDQS defaults to 5).
        """
        owned = client is None
        if client is None:
            explicit = None if concurrency is None else {host: concurrency for host in POLITE_HOSTS}
            client = HttpClient(user_agent=user_agent, timeout=timeout, per_host=concurrency or 16, host_limits=explicit)
        http_keys = {"default_graph", "partial", "timeout_ms", "max_rows", "post_threshold"}
        http_options = {k: options.pop(k) for k in list(options) if k in http_keys}
        endpoint, chosen = resolve_endpoint(spec, dialect=dialect, client=client, **http_options)
        if cache is True:
            cache = ResponseCache(cache_dir)
        elif cache is False:
            cache = None
        return cls(endpoint, chosen, name=name, cache=cache, offline=offline, client=client if owned else None, **options)

    async def __aenter__(self) -> "KG":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.endpoint.aclose()
        if self._client is not None:
            await self._client.aclose()

    @property
    def stats(self) -> Counter[str]:
        """Queries asked, cache hits, requests actually sent (and HTTP-level counts when remote)."""
        stats = Counter(self.endpoint.stats)
        client = getattr(self.endpoint.inner, "client", None)
        if client is not None:
            stats.update({f"http_{k}": v for k, v in client.stats.items()})
        return stats

    # -- raw -------------------------------------------------------------------------------------
    async def select(self, query: str) -> SelectResult:
        """Run any SELECT/ASK through the cache."""
        return await self.endpoint.select(query)

    async def _gather(self, queries: Iterable[str]) -> list[SelectResult]:
        return list(await asyncio.gather(*(self.endpoint.select(q) for q in queries)))

    def _short(self, term: Term) -> str:
        if term.kind == "uri":
            return self.dialect.short(term.value) or term.value
        return term.value

    def _directions(self, direction: str) -> tuple[str, ...]:
        if direction == "both":
            return DIRECTIONS
        return (check_direction(direction),)

    # -- relations -------------------------------------------------------------------------------
    async def relations(self, entity: str, direction: str = "both") -> list[Relation]:
        """Relations of one entity (outgoing first), filtered by the dialect's relation filter."""
        return (await self.relations_many([entity], direction))[entity]

    async def relations_many(self, entities: Sequence[str], direction: str = "both") -> dict[str, list[Relation]]:
        """Relations of a beam of entities, one query per batch and direction, split back per entity.

        Only relations `neighbors` can ask about are listed, so every one can be followed.
        """
        entities = list(dict.fromkeys(self.dialect.check_entity(e) for e in entities))
        directions = self._directions(direction)
        jobs = [(d, batch) for d in directions for batch in _chunks(entities, self.batch_size)]
        results = await self._gather(self._relations_query(batch, d) for d, batch in jobs)
        found: dict[str, dict[tuple[str, str], Relation]] = {e: {} for e in entities}
        for (d, _), result in zip(jobs, results):
            for row in result.rows:
                if "e" not in row or "r" not in row:
                    continue
                rel = self._short(row["r"])
                if "r2" in row:
                    rel = f"{rel}{COMPOUND_SEP}{self._short(row['r2'])}"
                if self.dialect.relation_filter.drops(rel) or not self._queryable(rel):
                    continue
                label = row["rlabel"].value if "rlabel" in row else None
                if label:
                    self._relation_labels[rel] = label
                entity = self._short(row["e"])
                found.setdefault(entity, {}).setdefault((rel, d), Relation(self.name, entity, rel, d, label))
        return {e: list(found.get(e, {}).values()) for e in entities}

    def _queryable(self, relation: str) -> bool:
        """Whether `neighbors` could ask about this relation (a dump may hold ids the dialect refuses)."""
        try:
            self.dialect.check_relation(relation)
        except InvalidIdentifier:
            return False
        return True

    def _relations_query(self, batch: Sequence[str], direction: str) -> str:
        if isinstance(self.dialect, FreebaseDialect):
            return self.dialect.relations(batch, direction, expand_cvt=self.expand_cvt)
        return self.dialect.relations(batch, direction)

    # -- neighbours ------------------------------------------------------------------------------
    async def neighbors(self, entity: str, relation: str, direction: str = "out", *, limit: int | None = None) -> list[Edge]:
        """Far ends of `entity` over `relation` in one direction (a compound `r1|r2` crosses its CVT)."""
        key = (entity, relation, check_direction(direction))
        return (await self.neighbors_many([key], limit=limit))[key]

    async def neighbors_many(self, triples: Sequence[Triple], *, limit: int | None = None) -> dict[Triple, list[Edge]]:
        """Neighbours of many (entity, relation, direction) at once; `limit` caps each triple's edges."""
        keys = list(dict.fromkeys((self.dialect.check_entity(e), self.dialect.check_relation(r), check_direction(d)) for e, r, d in triples))
        groups: dict[tuple[str, bool], list[tuple[str, str]]] = defaultdict(list)
        for e, r, d in keys:
            groups[(d, COMPOUND_SEP in r)].append((e, r))
        jobs = [(d, batch) for (d, _), pairs in groups.items() for batch in _chunks(pairs, self.batch_size)]
        results = await self._gather(
            self.dialect.neighbors(batch, d, limit=limit if len(keys) == 1 else None) for d, batch in jobs
        )
        out: dict[Triple, dict[tuple, Edge]] = {k: {} for k in keys}
        for (d, _), result in zip(jobs, results):
            for row in result.rows:
                edge = self._edge(row, d)
                bucket = out.get((edge.origin, edge.relation, d))
                if bucket is not None and (limit is None or len(bucket) < limit):
                    bucket.setdefault((edge.subject, edge.object, edge.via), edge)
        return {k: list(v.values()) for k, v in out.items()}

    def _edge(self, row: dict[str, Term], direction: str) -> Edge:
        origin = self._short(row["e"])
        relation = self._short(row["r"])
        if "r2" in row:
            relation = f"{relation}{COMPOUND_SEP}{self._short(row['r2'])}"
        far = row["x"]
        far_id = self._short(far)
        far_label = row["xlabel"].value if "xlabel" in row else (far.value if far.kind == "literal" else None)
        via = (self._short(row["via"]),) if "via" in row else ()
        common = {"kg": self.name, "relation": relation, "direction": direction, "via": via,
                  "relation_label": self._relation_labels.get(relation), "literal": far.kind == "literal"}
        if direction == "out":
            return Edge(subject=origin, object=far_id, object_label=far_label, **common)
        return Edge(subject=far_id, object=origin, subject_label=far_label, **common)

    # -- labels and search -----------------------------------------------------------------------
    async def labels(self, ids: Sequence[str]) -> dict[str, Label]:
        """Label, description and aliases of each id (entities or properties); unknown ids get `label=None`."""
        ids = list(dict.fromkeys(self.dialect.check_entity(i) for i in ids))
        results = await self._gather(self.dialect.labels(batch) for batch in _chunks(ids, self.batch_size))
        names: dict[str, str] = {}
        descriptions: dict[str, str] = {}
        aliases: dict[str, dict[str, None]] = defaultdict(dict)
        fallback: dict[str, str] = {}
        for result in results:
            for row in result.rows:
                key = self._short(row["id"])
                if "label" in row:
                    names.setdefault(key, row["label"].value)
                if "desc" in row:
                    descriptions.setdefault(key, row["desc"].value)
                if "alias" in row:
                    aliases[key][row["alias"].value] = None
                if "same" in row:  # ToG's owl:sameAs fallback name
                    fallback.setdefault(key, self._short(row["same"]))
        return {
            i: Label(i, names.get(i) or fallback.get(i), descriptions.get(i), tuple(aliases.get(i, ())))
            for i in ids
        }

    async def search(self, text: str, limit: int = 10, *, mode: str | None = None) -> list[Hit]:
        """Entities whose label or alias matches `text` (exact by default; `contains`; `mwapi` on WDQS)."""
        result = await self.select(self.dialect.search(text, limit, mode))  # type: ignore[arg-type]
        hits: dict[str, Hit] = {}
        for row in result.rows:
            if "id" not in row:
                continue
            key = self._short(row["id"])
            hits.setdefault(key, Hit(key, row["label"].value if "label" in row else None, row["desc"].value if "desc" in row else None))
        return list(hits.values())

    async def match_labels(self, texts: Sequence[str]) -> dict[str, list[Hit]]:
        """Exact label/alias matches for many texts at once (entity linking): text -> hits."""
        texts = list(dict.fromkeys(t.strip() for t in texts if t.strip()))
        results = await self._gather(self.dialect.match_labels(batch) for batch in _chunks(texts, self.batch_size))
        found: dict[str, dict[str, Hit]] = {t: {} for t in texts}
        for result in results:
            for row in result.rows:
                if "id" in row and row["id"].kind == "uri":
                    key = self._short(row["id"])
                    if self.dialect.short(row["id"].value) is not None:
                        found.setdefault(row["l"].value, {}).setdefault(key, Hit(key, row["label"].value if "label" in row else None))
        return {t: list(found.get(t, {}).values()) for t in texts}

    def check(self, entity: str) -> str:
        """Validate an entity id for this KG's dialect (raises InvalidIdentifier)."""
        try:
            return self.dialect.check_entity(entity)
        except InvalidIdentifier as exc:
            raise InvalidIdentifier(f"{exc} (KG {self.name!r})") from None
