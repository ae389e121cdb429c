"""The `KG` facade: the same four 1-hop operations over any endpoint of either dialect.

    async with KG.open("wikidata") as kg:
        rels = await kg.relations("Q42")
        edges = await kg.neighbors("Q42", "P69")

Batched forms (`relations_many`, `neighbors_many`, `labels`) put a whole beam into `VALUES` blocks of
`batch_size` and run the blocks concurrently (structured: one failing block cancels its siblings);
every query goes through the response cache, which checks each answer against the template's variables.

What only some dialects hold is asked through the facade too, batched the same way: `sitelinks`
(Wikipedia titles), `qualifiers` (statements with their qualifiers), `linked_ids`/`by_linked_ids` (the
cross-KG id property: Wikidata's P646 ↔ Freebase mids). On a dialect without the capability they raise a
one-line `Unsupported` naming the fix; `kg.supports(capability)` asks first.

Every answer is right, flagged, or an error: lists come back as `Answer` (dicts as `AnswerMap`) with
`.partial`; a partial server answer raises `PartialResult` unless the KG was opened with
`partial="allow"`. Bad input raises `InvalidIdentifier` (a `KgfedError`) before any query is built,
and a closed KG refuses new calls with `Closed`.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import replace
from typing import Any, TypeVar, cast

from ...cache.options import CacheOptions
from ...cache.responses import CachedEndpoint, ResponseCache, compact
from ...endpoints.base import Endpoint
from ...endpoints.client import TOKEN_ENV, HttpClient
from ...endpoints.embedded import Bounds, bounded, current_bounds
from ...endpoints.options import HttpOptions
from ...endpoints.profiles import resolve_endpoint
from ...sparql import terms
from ...sparql.dialects import COMPOUND_SEP, DIALECT_REGISTRY, DIRECTIONS, Dialect, RelationFilter, SearchMode, check_direction
from ...sparql.errors import (
    Closed, EndpointConnectionError, EndpointError, HttpStatusError, InvalidIdentifier, KgfedError, NotAnAnswer, OfflineMiss, RateLimited,
    UnknownEndpoint, UserAgentRejected,
)
from ...sparql.results import SelectResult, Term
from .batching import AdaptiveBatches, Piece
from .capabilities import Capabilities, _sequence
from .model import Answer, AnswerMap, Edge, Hit, Label, Relation, mark

log = logging.getLogger("kgfed.kg")

Triple = tuple[str, str, str]  # (entity, relation, direction)
K = TypeVar("K", bound=Hashable)  # a batched job's key (a direction, a template kind): its pieces carry it back
# The variables the row loops read, in the order of their positions (`KG._read`).
_RELATION_VARS = ("e", "r", "r2", "rlabel")
_EDGE_VARS = ("e", "r", "r2", "x", "xlabel", "via")
LIVE_MAX_AGE = 7 * 86400.0  # default max-age of answers from a live public Wikidata endpoint (seconds)
_LOCAL_HOSTS = ("127.", "localhost", "[::1]", "0.0.0.0")
FALLBACK_COOLDOWN = 300.0  # seconds a failing endpoint is left alone (its fallback answers) before it is asked again


def fails_over(exc: BaseException) -> bool:
    """Whether the endpoint that raised `exc` is down or keeps failing, so its fallback should answer:
    connection failures and 5xx after the client's retries, a 429 that kept coming back or asked for a
    ban-length wait, an HTML error page where results belong, a query service asking for a token kgfed
    has not got. Not a bad query (4xx), not a timeout (the
    block is split instead), not a refused User-Agent (a setup error every endpoint would see)."""
    if isinstance(exc, (EndpointConnectionError, RateLimited)):
        return True
    if isinstance(exc, HttpStatusError):  # 5xx, or a query service asking for a token kgfed lacks or had refused
        return (exc.status or 0) >= 500 or exc.status == 401 or (exc.status == 403 and TOKEN_ENV in str(exc))
    return isinstance(exc, NotAnAnswer) and not isinstance(exc, UserAgentRejected)


def default_max_age(endpoint: Endpoint, dialect: Dialect) -> float | None:
    """A week for live public Wikidata endpoints (WDQS, QLever-Wikidata); None (never stale) for fixed
    dumps: files, Freebase (frozen since 2016), and servers on this machine."""
    parts = getattr(endpoint, "parts", None)  # a composite (wikidata-full): live if any part is
    if parts:
        ages = [default_max_age(part, dialect) for part in parts]
        return min((a for a in ages if a is not None), default=None)
    url = getattr(endpoint, "url", None) or getattr(endpoint, "name", "")
    if not dialect.live or not str(url).startswith(("http://", "https://")):
        return None
    host = str(url).split("://", 1)[1]
    return None if host.startswith(_LOCAL_HOSTS) else LIVE_MAX_AGE


def _fallback_endpoint(item: str, dialect: Dialect, client: HttpClient, kg: str, http_options: dict) -> Endpoint:
    """The endpoint of a `--fallback` spec (`[DIALECT@]SPEC`), which must speak the KG's dialect."""
    if not isinstance(item, str) or not item.strip():
        raise UnknownEndpoint(f"empty fallback for KG {kg!r}: give an endpoint spec, e.g. qlever-wikidata")
    prefix, sep, rest = item.strip().partition("@")
    said = prefix if sep and prefix in DIALECT_REGISTRY else None
    spec = rest if said else item.strip()
    try:
        endpoint, spoken = resolve_endpoint(spec, dialect=said, client=client, **http_options)
    except UnknownEndpoint:
        if said or not spec.startswith(("http://", "https://")):
            raise
        endpoint, spoken = resolve_endpoint(spec, dialect=dialect, client=client, **http_options)  # a bare URL: the KG's
    if spoken.name != dialect.name:
        raise UnknownEndpoint(f"fallback {spec} speaks {spoken.name} but KG {kg!r} speaks {dialect.name}: "
                              f"give a {dialect.name} endpoint as its fallback")
    return endpoint


# KG.open's keywords of 0.2, removed in 0.3.0 (`http=`/`cache=` carry them)
_REMOVED_OPEN = ("client", "user_agent", "timeout", "concurrency", "cache_dir", "offline", "refresh", "max_age")


def response_cache(cache: CacheOptions) -> ResponseCache | None:
    """The response cache `cache` describes (None with the cache off): the one place kgfed makes one, for a KG
    opened alone (`KG.open`) or for the KGs of a run to share (`config.open_kgs`)."""
    return ResponseCache(cache.root) if cache.enabled else None


def _refuse_removed_options(options: dict) -> None:
    """A one-line error for KG.open's 0.2 keywords (docs/migration.md)."""
    given = [k for k in _REMOVED_OPEN if k in options]
    if given:
        raise KgfedError(f"KG.open({', '.join(k + '=' for k in given)}) was removed in kgfed 0.3.0: pass "
                         "http=HttpOptions(...) or the run's HttpClient, and cache=CacheOptions(...) (docs/migration.md)")


_NO_BOUNDS = contextlib.nullcontext()


class KG(Capabilities):
    """One knowledge graph behind one endpoint, speaking one dialect, with a response cache.

    The templates only some dialects answer (`sitelinks`, `linked_ids`, `qualifiers`, …) are its `Capabilities`
    (`kg/capabilities.py`)."""

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
        max_age: float | None | str = "auto",
        refresh: bool = False,
        own_cache: bool = False,
        fallbacks: Sequence[Endpoint] = (),
        query_bounds: Bounds | None = None,
    ):
        self.dialect = dialect if relation_filter is None else replace(dialect, relation_filter=relation_filter)
        self.name = name or dialect.name
        self.batch_size = terms.positive_int(batch_size, "batch_size")
        # The endpoint, then its fallbacks in order: each with its own cache entries (keyed by its name) and
        # its own working batch size (`batching.AdaptiveBatches`).
        self._routes: list[tuple[CachedEndpoint, AdaptiveBatches]] = []
        for inner in (endpoint, *fallbacks):
            age = default_max_age(inner, self.dialect) if max_age == "auto" else max_age
            cached = CachedEndpoint(inner, cache, offline=offline, max_age=age, refresh=refresh)
            policy = getattr(inner, "partial", None) or getattr(next(iter(getattr(inner, "parts", ())), None), "partial", None)
            self._routes.append((cached, AdaptiveBatches(self.batch_size, name=cached.name, partial_policy=policy)))
        self.endpoint = self._routes[0][0]
        self._down_until = [0.0] * len(self._routes)
        self._route_stats: Counter[str] = Counter()
        self.expand_cvt = expand_cvt and dialect.compound_relations
        self._client = client  # owned: closed with the KG
        self._own_cache = own_cache  # made by KG.open: closed with the KG
        self._closed = False
        self._relation_labels: dict[str, str] = {}
        self._queries: dict[tuple, str] = {}  # rendered templates by arguments
        self._shorts: dict[str, str] = {}  # IRI -> short id
        self._plans: dict[tuple, tuple[int, ...]] = {}  # (variables read, a row shape) -> their positions
        self._triples: set[Triple] = set()  # (entity, relation, direction) triples already found valid
        self._follow: dict[str, bool] = {}  # relation -> listed by relations() (filter and dialect allow it)
        self._has_qualifiers: bool | None = None  # the store holds qualifier properties at all (probed once)
        # a caller's query on a file store (`select`): the run's --timeout and --query-memory (KG.open passes them)
        self.query_bounds = query_bounds if query_bounds is not None else Bounds()

    # -- construction ----------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        spec: str,
        *,
        dialect: str | Dialect | None = None,
        name: str | None = None,
        http: HttpOptions | HttpClient | None = None,
        cache: CacheOptions | ResponseCache | bool | None = True,
        fallbacks: Sequence[str] = (),
        query_memory_mb: int | None = None,
        store: ResponseCache | None = None,
        **options,
    ) -> KG:
        """A KG for an endpoint spec (`wikidata`, `qlever-freebase`, `file:kg.nt`, a URL + dialect).

        `http`: the run's shared `HttpClient` (used, left open), or `HttpOptions` (timeout, contact,
        concurrency) for a client the KG builds (`HttpOptions.client`) and closes; default
        `HttpOptions()`. `cache`: `CacheOptions` (root, enabled, offline, refresh, max_age: None is the
        endpoint's default, a week for live public Wikidata endpoints and never stale for files, Freebase
        and local servers), a shared `ResponseCache` (left open), True (default: `CacheOptions()`), or
        False/None for none. `partial` is the policy for answers a server marks incomplete: `"error"`
        (default, raise `PartialResult`), `"retry"` (longer timeouts, then raise), `"allow"` (return
        them, flagged `.partial`). `fallbacks` are endpoint specs in the same dialect, asked in order
        while the endpoint is down or keeps failing (each answer's `.source` names the endpoint that gave it).
        A caller's query on a file store (`select`) runs for at most the client's timeout with `query_memory_mb`
        MB on top of the store (None: `http`'s `query_memory_mb` when it is `HttpOptions`, else the default).
        `store`: the run's shared response cache (`response_cache(cache)`, used and left open; the KGs of a
        session share one), with `cache` (`CacheOptions`) still giving the offline/refresh/max-age policy.

        The keywords of 0.2 (`cache_dir`, `offline`, `refresh`, `max_age`, `user_agent`, `timeout`,
        `concurrency`, `client`) were removed in 0.3.0: a one-line error names their replacement.
        """
        _refuse_removed_options(options)
        if isinstance(http, HttpClient):
            client, owned = http, False
        else:  # a one-KG session (as httpx.get opens a Client): built here from HttpOptions, closed with the KG
            client, owned = (http or HttpOptions()).client(), True
        http_keys = {"default_graph", "partial", "timeout_ms", "max_rows", "post_threshold"}
        http_options = {k: options.pop(k) for k in list(options) if k in http_keys}
        endpoint, chosen = resolve_endpoint(spec, dialect=dialect, client=client, **http_options)
        backups = [_fallback_endpoint(item, chosen, client, name or spec, http_options) for item in fallbacks or ()]
        shared = cache if isinstance(cache, ResponseCache) else None  # the caller's store: used, left open
        cache = cache if isinstance(cache, CacheOptions) else CacheOptions(enabled=cache is True or shared is not None)
        if store is not None and cache.enabled:
            shared = store
        own_cache = shared is None and cache.enabled
        store = shared if shared is not None else response_cache(cache)
        max_age: float | str = "auto" if cache.max_age is None else cache.max_age
        if query_memory_mb is None:
            query_memory_mb = (http if isinstance(http, HttpOptions) else HttpOptions()).query_memory_mb
        return cls(endpoint, chosen, name=name, cache=store, client=client if owned else None, own_cache=own_cache,
                   fallbacks=backups, offline=cache.offline, refresh=cache.refresh, max_age=max_age,
                   query_bounds=Bounds(timeout=float(client.timeout), memory_mb=query_memory_mb), **options)

    async def __aenter__(self) -> KG:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Refuse new calls, cancel queries in flight, flush the cache, close what the KG opened (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            await asyncio.gather(*(cached.aclose() for cached, _ in self._routes))
        finally:
            if self._client is not None:
                await self._client.aclose()
            if self._own_cache and self.endpoint.cache is not None:
                await asyncio.to_thread(self.endpoint.cache.close)

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise Closed(f"KG {self.name!r} is closed: open a new one (async with KG.open(...) as kg)")

    @property
    def stats(self) -> Counter[str]:
        """Queries asked, cache hits, requests actually sent (and HTTP-level counts when remote)."""
        stats = Counter(self.endpoint.stats)
        client = getattr(self.endpoint.inner, "client", None)
        if client is not None:
            stats.update({f"http_{k}": v for k, v in client.stats.items()})
        batches = self._routes[0][1]
        stats.update(batches.stats)
        stats["batch_size"] = batches.size  # the working batch size (lower after timeouts)
        for i, (cached, batches) in enumerate(self._routes[1:], 1):
            prefix = "fallback_" if i == 1 else f"fallback{i}_"
            stats.update({prefix + k: v for k, v in (*cached.stats.items(), *batches.stats.items())})
            stats[prefix + "batch_size"] = batches.size
        stats.update(self._route_stats)
        return stats

    @property
    def batch_sizes(self) -> dict[str, int]:
        """The working batch size of each endpoint (the KG's, then its fallbacks'), by endpoint name."""
        return {cached.name: batches.size for cached, batches in self._routes}

    @property
    def endpoints(self) -> list[str]:
        """The names of the endpoint and its fallbacks, in the order they are asked."""
        return [cached.name for cached, _ in self._routes]

    # -- raw -------------------------------------------------------------------------------------
    async def select(self, query: str, *, bound: bool = True) -> SelectResult:
        """Run any SELECT/ASK through the cache; the answer is checked against the query's form and variables.

        The query is the caller's, so on a file store it is bounded as the MCP server bounds an agent's: it
        runs in a killable worker process for at most `query_bounds.timeout` seconds (the KG's `--timeout`),
        with `query_bounds.memory_mb` MB on top of the loaded store (`--query-memory`), its answer at most the
        cap of any answer (256 MiB); past one, a one-line `EndpointError` naming it and the fix. Inside the
        caller's own `endpoints.embedded.bounded(...)` block, that block's limits hold. `bound=False` runs it
        in this process, as the 1-hop templates run: for queries kgfed renders itself (`kgfed extract`'s,
        bounded by construction), where the workers' second and third copy of the store cost time for nothing."""
        self._check_open()
        if not bound:
            return await self._select(query)
        with bounded(**dataclasses.asdict(self.query_bounds)) if current_bounds() is None else _NO_BOUNDS:
            return await self._select(query)

    async def _select(self, query: str) -> SelectResult:
        """`select` unbounded: kgfed's own template queries (bounded by construction)."""
        if len(self._routes) == 1:
            return await self.endpoint.select(query)
        return (await self._routed(lambda cached, _: cached.select(query)))[0]

    async def _gather(self, queries: Iterable[str]) -> list[SelectResult]:
        """All answers, or the first error with every sibling query cancelled (structured: no request
        outlives the call unless another caller shares it). Cache hits are taken without a task."""
        self._check_open()
        queries = list(queries)
        return (await self._routed(lambda cached, _: cached.select_all(queries)))[0]

    async def _batched(self, jobs: Sequence[tuple[K, Sequence[Any]]], render, *,
                       cap: int | None = None) -> tuple[list[tuple[K, Sequence[Any], SelectResult]], str]:
        """Each job's items asked in blocks of the endpoint's working batch size, blocks that time out split
        and asked again (`batching.AdaptiveBatches`): the answers as (key, items, result) in job and item
        order, and the name of the endpoint that gave them."""
        self._check_open()
        return await self._routed(lambda cached, batches: batches.run(cached, jobs, render, cap=cap))

    @staticmethod
    def _results(batched: tuple[Sequence[Piece], str]) -> tuple[list[SelectResult], str]:
        pieces, source = batched
        return [result for _, _, result in pieces], source

    async def _routed(self, call):
        """`call(cached_endpoint, batches)` on the endpoint, or on its fallbacks in order while the ones
        before are down or keep failing (`fails_over`: a one-line warning, then that endpoint is left alone
        for `FALLBACK_COOLDOWN` s); `(answer, name of the endpoint that gave it)`. Offline, a miss in one
        endpoint's cache entries is looked up in the next one's."""
        last = len(self._routes) - 1
        for i, (cached, batches) in enumerate(self._routes):
            if i < last and self._down_until[i] > time.monotonic():
                continue
            try:
                return await call(cached, batches), cached.name
            except (EndpointError, OfflineMiss) as exc:
                if i == last:
                    raise
                if isinstance(exc, OfflineMiss):
                    continue
                if not fails_over(exc):
                    raise
                now = time.monotonic()
                if self._down_until[i] > now:  # another call already found it down and said so
                    continue
                self._down_until[i] = now + FALLBACK_COOLDOWN
                self._route_stats["fallbacks"] += 1
                log.warning("kgfed: warning: KG %r: %s is failing (%s); asking the fallback %s for the next %.0f s",
                            self.name, cached.name, str(exc)[:200], self._routes[i + 1][0].name, FALLBACK_COOLDOWN)
        raise AssertionError("unreachable")  # pragma: no cover

    def _rendered(self, memo_key: tuple | None, render) -> str:
        """A template's text, memoised on its (already valid) arguments: a repeated call skips validation
        and rendering. `memo_key` is None when an argument is not a plain str (then always rendered)."""
        if memo_key is None:
            return render()
        query = self._queries.get(memo_key)
        if query is None:
            query = render()
            if len(self._queries) >= 8192:
                self._queries.clear()
            self._queries[memo_key] = query
        return query

    @staticmethod
    def _flag(answer, results: Sequence[SelectResult], source: str | None = None):
        """Mark `answer` partial when any of `results` was, and with the endpoint that gave it (`source`)."""
        answer.source = source
        if any(r.partial for r in results):
            notes = tuple(dict.fromkeys(r.note or "partial answer" for r in results if r.partial))
            return mark(answer, True, notes)
        return answer

    def _short(self, term: Term) -> str:
        return self._short_iri(term[1]) if term[0] == "uri" else term[1]

    def _short_iri(self, iri: str) -> str:
        """The short id of an IRI (the IRI itself when the dialect has none), memoised."""
        short = self._shorts.get(iri)
        if short is None:
            short = self.dialect.short(iri) or iri
            if len(self._shorts) >= 262144:
                self._shorts.clear()
            self._shorts[iri] = short
        return short

    def _read(self, result: SelectResult, variables: tuple[str, ...]) -> tuple[Sequence[tuple], list[str], list[tuple[int, ...]], Sequence[tuple]]:
        """`result` read for a loop over its rows: its distinct terms and their short ids (converted once
        per answer, however many rows repeat them), per row shape the positions of `variables` in a
        compact row (0: unbound), and the compact rows (see `cache.responses.Compact`)."""
        terms, shapes, rows = compact(result)
        memo, short = self._shorts, self._short_iri
        shorts = [(memo.get(t[1]) or short(t[1])) if t[0] == "uri" else t[1] for t in terms]
        plans = []
        for shape in shapes:
            plan = self._plans.get((variables, shape))
            if plan is None:
                plan = self._plans[(variables, shape)] = tuple(shape.index(v) + 1 if v in shape else 0 for v in variables)
            plans.append(plan)
        return terms, shorts, plans, rows

    def _directions(self, direction: str) -> tuple[str, ...]:
        if isinstance(direction, str) and direction == "both":
            return DIRECTIONS
        return (check_direction(direction),)

    # -- relations -------------------------------------------------------------------------------
    async def relations(self, entity: str, direction: str = "both") -> Answer:
        """Relations of one entity (outgoing first), filtered by the dialect's relation filter."""
        if type(entity) is not str or type(direction) is not str:
            self.dialect.check_entity(entity)
            self._directions(direction)
        found = await self.relations_many([entity], direction)
        answer = found[entity]
        answer.source = found.source
        return answer

    async def relations_many(self, entities: Sequence[str], direction: str = "both") -> AnswerMap:
        """Relations of a beam of entities, one query per batch and direction, split back per entity.

        Only relations `neighbors` can ask about are listed, so every one can be followed.
        """
        entities = _sequence(entities, "entity list", "['Q42', 'Q5']")
        entities = list(dict.fromkeys(self.dialect.check_entity(e) for e in entities))
        directions = self._directions(direction)
        pieces, source = await self._batched(
            [(d, entities) for d in directions],
            lambda d, batch: self._rendered(("relations", d, *batch), lambda: self._relations_query(batch, d)))
        found: dict[str, dict[tuple[str, str], Relation]] = {e: {} for e in entities}
        follows, labels, drops = self._follow, self._relation_labels, self.dialect.relation_filter.drops
        for d, _, result in pieces:
            terms, shorts, plans, rows = self._read(result, _RELATION_VARS)
            for row in rows:
                ie, ir, ir2, il = plans[row[0]]
                if not (ie and ir):
                    continue
                rel = shorts[row[ir]]
                if ir2:
                    rel = f"{rel}{COMPOUND_SEP}{shorts[row[ir2]]}"
                follow = follows.get(rel)
                if follow is None:
                    follow = follows[rel] = not drops(rel) and self._queryable(rel)
                if not follow:
                    continue
                label = terms[row[il]][1] if il else None
                if label:
                    labels[rel] = label
                entity = shorts[row[ie]]
                bucket = found.get(entity)
                if bucket is None:
                    bucket = found[entity] = {}
                if (rel, d) not in bucket:
                    bucket[(rel, d)] = Relation(self.name, entity, rel, d, label)
        return self._flag(AnswerMap((e, Answer(found.get(e, {}).values())) for e in entities), [r for _, _, r in pieces], source)

    def _queryable(self, relation: str) -> bool:
        """Whether `neighbors` could ask about this relation (a dump may hold ids the dialect refuses)."""
        try:
            self.dialect.check_relation(relation)
        except InvalidIdentifier:
            return False
        return True

    def _relations_query(self, batch: Sequence[str], direction: str) -> str:
        return self.dialect.relations(batch, check_direction(direction), expand_cvt=self.expand_cvt)

    # -- neighbours ------------------------------------------------------------------------------
    async def neighbors(self, entity: str, relation: str, direction: str = "out", *, limit: int | None = None) -> Answer:
        """Far ends of `entity` over `relation` in one direction (a compound `r1|r2` crosses its CVT).

        `limit` is None (all) or a whole number ≥ 1; 0 and negatives are refused."""
        plain = type(entity) is str and type(relation) is str and type(direction) is str and (limit is None or type(limit) is int)
        memo = ("neighbors", entity, relation, direction, limit) if plain else None
        query = self._rendered(memo, lambda: self.dialect.neighbors(
            [(self.dialect.check_entity(entity), self.dialect.check_relation(relation))], check_direction(direction),
            limit=terms.optional_limit(limit)))
        ((_, _, result),), source = await self._batched([(direction, [(entity, relation)])], lambda d, batch: query)
        bucket: dict[tuple, Edge] = {}
        self._collect({(entity, relation, direction): bucket}, direction, result, limit)
        return self._flag(Answer(bucket.values()), [result], source)

    async def neighbors_many(self, triples: Sequence[Triple], *, limit: int | None = None) -> AnswerMap:
        """Neighbours of many (entity, relation, direction) at once; `limit` caps each triple's edges."""
        limit = terms.optional_limit(limit)
        keys = list(dict.fromkeys(self._triple(t) for t in _sequence(triples, "triple list", "[('Q42', 'P69', 'out')]")))
        groups: dict[tuple[str, bool], list[tuple[str, str]]] = defaultdict(list)
        for e, r, d in keys:
            groups[(d, COMPOUND_SEP in r)].append((e, r))
        capped = limit if len(keys) == 1 else None
        pieces, source = await self._batched(
            list(groups.items()),
            lambda key, batch: self._rendered(("neighbors_many", key[0], capped, *batch),
                                              lambda: self.dialect.neighbors(batch, key[0], limit=capped)))
        out: dict[Triple, dict[tuple, Edge]] = {k: {} for k in keys}
        for (d, _), _, result in pieces:
            self._collect(out, d, result, limit)
        return self._flag(AnswerMap((k, Answer(v.values())) for k, v in out.items()), [r for _, _, r in pieces], source)

    def _collect(self, out: dict[Triple, dict[tuple, Edge]], direction: str, result: SelectResult, limit: int | None) -> None:
        """Edges of `result` into the buckets of the triples asked about (each capped at `limit`; the
        first edge of a (subject, object, via) kept)."""
        terms, shorts, plans, rows = self._read(result, _EDGE_VARS)
        name, labels, out_ = self.name, self._relation_labels, direction == "out"
        for row in rows:
            ie, ir, ir2, ix, ixl, iv = plans[row[0]]
            if not (ie and ir and ix):
                continue  # unbound in a row: nothing to report (the head was checked)
            origin, relation = shorts[row[ie]], shorts[row[ir]]
            if ir2:
                relation = f"{relation}{COMPOUND_SEP}{shorts[row[ir2]]}"
            bucket = out.get((origin, relation, direction))
            if bucket is None or (limit is not None and len(bucket) >= limit):
                continue
            far, far_id = terms[row[ix]], shorts[row[ix]]
            via = (shorts[row[iv]],) if iv else ()
            key = (origin, far_id, via) if out_ else (far_id, origin, via)
            if key in bucket:
                continue
            literal = far[0] == "literal"
            far_label = terms[row[ixl]][1] if ixl else (far[1] if literal else None)
            if out_:
                bucket[key] = Edge(name, origin, relation, far_id, direction, None, labels.get(relation), far_label, via, literal)
            else:
                bucket[key] = Edge(name, far_id, relation, origin, direction, far_label, labels.get(relation), None, via, literal)

    def _triple(self, triple) -> Triple:
        if type(triple) is tuple:
            try:
                if triple in self._triples:  # checked before
                    return triple
            except TypeError:  # an unhashable part: refused below with the one-line error
                pass
        if isinstance(triple, (str, bytes)) or not isinstance(triple, Sequence) or len(triple) != 3:
            raise InvalidIdentifier(f"invalid triple {terms._show(triple)}: expected (entity, relation, direction) like ('Q42', 'P69', 'out')")
        e, r, d = triple
        checked = (self.dialect.check_entity(e), self.dialect.check_relation(r), check_direction(d))
        if type(e) is str and type(r) is str and type(d) is str:
            if len(self._triples) >= 65536:
                self._triples.clear()
            self._triples.add(checked)
        return checked

    # -- labels and search -----------------------------------------------------------------------
    async def labels(self, ids: Sequence[str]) -> AnswerMap:
        """Label, description and aliases of each id (entities or properties); unknown ids get `label=None`."""
        ids = list(dict.fromkeys(self.dialect.check_entity(i) for i in _sequence(ids, "id list", "['Q42']")))
        results, source = self._results(await self._batched([(None, ids)], lambda _, batch: self.dialect.labels(batch)))
        names: dict[str, str] = {}
        descriptions: dict[str, str] = {}
        aliases: dict[str, dict[str, None]] = defaultdict(dict)
        fallback: dict[str, str] = {}
        for result in results:
            for row in result.rows:
                if "id" not in row:
                    continue
                key = self._short(row["id"])
                if "label" in row:
                    names.setdefault(key, row["label"].value)
                if "desc" in row:
                    descriptions.setdefault(key, row["desc"].value)
                if "alias" in row:
                    aliases[key][row["alias"].value] = None
                if "same" in row:  # ToG's owl:sameAs fallback name
                    fallback.setdefault(key, self._short(row["same"]))
        return self._flag(AnswerMap(
            (i, Label(i, names.get(i) or fallback.get(i), descriptions.get(i), tuple(aliases.get(i, ()))))
            for i in ids
        ), results, source)

    async def search(self, text: str, limit: int = 10, *, mode: str | None = None) -> Answer:
        """Entities whose label or alias matches `text` (exact by default; `contains`; `mwapi` on WDQS)."""
        if mode == "mwapi" and self.dialect.search_mode != "mwapi":
            raise InvalidIdentifier(f"search mode 'mwapi' needs the Wikidata Query Service; KG {self.name!r} is not one: use exact or contains")
        query = self.dialect.search(text, limit, cast("SearchMode | None", mode))
        self._check_open()
        result, source = await self._routed(lambda cached, _: cached.select(query))
        hits: dict[str, Hit] = {}
        for row in result.rows:
            if "id" not in row:
                continue
            key = self._short(row["id"])
            hits.setdefault(key, Hit(key, row["label"].value if "label" in row else None, row["desc"].value if "desc" in row else None))
        return self._flag(Answer(hits.values()), [result], source)

    async def match_labels(self, texts: Sequence[str]) -> AnswerMap:
        """Exact label/alias matches for many texts at once (entity linking): text -> hits."""
        texts = _sequence(texts, "text list", "['Douglas Adams']")
        if any(not isinstance(t, str) for t in texts):
            raise InvalidIdentifier("invalid text list: every item must be a string such as 'Douglas Adams'")
        texts = list(dict.fromkeys(t.strip() for t in texts if t.strip()))
        results, source = self._results(await self._batched([(None, texts)], lambda _, batch: self.dialect.match_labels(batch)))
        found: dict[str, dict[str, Hit]] = {t: {} for t in texts}
        for result in results:
            for row in result.rows:
                if "id" in row and "l" in row and row["id"].kind == "uri":
                    key = self._short(row["id"])
                    if self.dialect.short(row["id"].value) is not None:
                        found.setdefault(row["l"].value, {}).setdefault(key, Hit(key, row["label"].value if "label" in row else None))
        return self._flag(AnswerMap((t, Answer(found.get(t, {}).values())) for t in texts), results, source)

    def check(self, entity: str) -> str:
        """Validate an entity id for this KG's dialect (raises InvalidIdentifier)."""
        try:
            return self.dialect.check_entity(entity)
        except InvalidIdentifier as exc:
            raise InvalidIdentifier(f"{exc} (KG {self.name!r})") from None
