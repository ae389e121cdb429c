"""One KG shared by every rollout of `kgfed serve`: concurrent single-entity calls gathered into batched queries.

`CoalescingKG(kg, window)` stands in for a `KG` facade in the tools' `ToolContext`: every attribute is the
facade's, except

- `relations(entity, direction)`: the calls arriving within `window` seconds of each other (per direction)
  are asked as one `relations_many` (one query per batch of the endpoint's working size), each caller given
  its entity's answer; identical calls in flight share one future;
- `labels(ids)`: the ids of the calls within the window asked as one `labels`, each caller given its own ids
  in its own order;
- `select(query)`: a caller's raw query (a profile's `sparql` tool) passes `guard(query, kg)` first (the MCP
  `sparql` tool's checks: `sparql.guard` with the dialect's functions and the own-origin SERVICE policy) and
  runs inside the `runner(kg, query)` the server gives (fair lanes, bounded workers).

`neighbors` is not gathered: a batched `neighbors_many` carries no per-triple LIMIT (the facade caps each
triple after the rows arrive), so one triple with a million far ends would cost the whole batch; identical
`neighbors` calls in flight share one future here (and one request in the response cache).
A complete answer is kept `memo_seconds` (in memory, at most `memo_size` keys) so that a later rollout's call
does not depend on which batch the first one fell into; a partial answer is never kept.
"""
from __future__ import annotations

import asyncio
import functools
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Any

from ..kg.model import Answer, AnswerMap, mark

__all__ = ["CoalescingKG"]

Guard = Callable[[str, Any], str]
Runner = Callable[[Any, str], Awaitable[Any]]


class _Memo:
    """Complete answers by key, at most `size`, each for `seconds` (LRU)."""

    def __init__(self, size: int, seconds: float):
        self.size, self.seconds = size, seconds
        self._items: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()

    def get(self, key: Hashable) -> Any:
        item = self._items.get(key)
        if item is None:
            return None
        if item[0] < time.monotonic():
            del self._items[key]
            return None
        self._items.move_to_end(key)
        return item[1]

    def put(self, key: Hashable, value: Any) -> None:
        if self.size <= 0 or self.seconds <= 0 or getattr(value, "partial", False):
            return
        self._items[key] = (time.monotonic() + self.seconds, value)
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)


class _Window:
    """Keys gathered for `window` seconds, then answered together by `flush(keys) -> {key: answer}`."""

    def __init__(self, window: float, flush: Callable[[list[Any]], Awaitable[dict[Any, Any]]], stats: dict[str, int]):
        self.window, self.flush, self.stats = window, flush, stats
        self._pending: dict[Any, asyncio.Future[Any]] = {}
        self._timer: asyncio.Task[None] | None = None

    async def get(self, key: Any) -> Any:
        future = self._pending.get(key)
        if future is None:
            future = self._pending[key] = asyncio.get_running_loop().create_future()
            if self._timer is None:
                self._timer = asyncio.get_running_loop().create_task(self._run())
        else:
            self.stats["shared"] = self.stats.get("shared", 0) + 1
        return await asyncio.shield(future)

    async def _run(self) -> None:
        await asyncio.sleep(self.window)
        pending, self._pending, self._timer = self._pending, {}, None
        self.stats["batches"] = self.stats.get("batches", 0) + 1
        self.stats["batched_keys"] = self.stats.get("batched_keys", 0) + len(pending)
        try:
            found = await self.flush(list(pending))
        except BaseException as exc:  # every waiter gets the batch's error (a cancelled server: cancelled)
            for future in pending.values():
                if not future.done():
                    future.set_exception(exc if isinstance(exc, Exception) else asyncio.CancelledError())
            if not isinstance(exc, Exception):
                raise
            return
        for key, future in pending.items():
            if not future.done():
                future.set_result(found[key])


class CoalescingKG:
    """A `KG` facade whose concurrent single calls are gathered (see the module docstring)."""

    def __init__(self, kg: Any, window: float = 0.002, *, guard: Guard | None = None, runner: Runner | None = None,
                 memo_size: int = 16384, memo_seconds: float = 600.0):
        self.inner = kg
        self.window = max(0.0, float(window))
        self.coalesce_stats: dict[str, int] = {}
        self._guard, self._runner = guard, runner
        self._memo = _Memo(memo_size, memo_seconds)
        self._relations: dict[str, _Window] = {}
        self._flights: dict[tuple, asyncio.Future[Any]] = {}
        self._labels = _Window(self.window, self._flush_labels, self.coalesce_stats)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def relations(self, entity: str, direction: str = "both") -> Answer:
        if self.window <= 0 or type(entity) is not str or type(direction) is not str:
            return await self.inner.relations(entity, direction)
        self.inner.dialect.check_entity(entity)  # a bad id fails its own call only, never the batch
        self.inner._directions(direction)
        key = ("relations", entity, direction)
        answer = self._memo.get(key)
        if answer is not None:
            self.coalesce_stats["memo"] = self.coalesce_stats.get("memo", 0) + 1
            return answer
        window = self._relations.get(direction)
        if window is None:
            window = self._relations[direction] = _Window(self.window, functools.partial(self._flush_relations, direction=direction),
                                                          self.coalesce_stats)
        return await window.get(entity)

    async def _flush_relations(self, entities: list[str], direction: str) -> dict[str, Answer]:
        found = await self.inner.relations_many(entities, direction)
        out = {}
        for entity in entities:
            answer = found[entity]
            answer.source = found.source
            self._memo.put(("relations", entity, direction), answer)
            out[entity] = answer
        return out

    async def neighbors(self, entity: str, relation: str, direction: str = "out", *, limit: int | None = None) -> Answer:
        plain = type(entity) is str and type(relation) is str and type(direction) is str and (limit is None or type(limit) is int)
        if self.window <= 0 or not plain:
            return await self.inner.neighbors(entity, relation, direction, limit=limit)
        key = ("neighbors", entity, relation, direction, limit)
        answer = self._memo.get(key)
        if answer is not None:
            self.coalesce_stats["memo"] = self.coalesce_stats.get("memo", 0) + 1
            return answer
        flight = self._flights.get(key)
        if flight is None:
            flight = self._flights[key] = asyncio.ensure_future(self.inner.neighbors(entity, relation, direction, limit=limit))
            flight.add_done_callback(lambda done, key=key: self._landed(key, done))
        else:
            self.coalesce_stats["shared"] = self.coalesce_stats.get("shared", 0) + 1
        return await asyncio.shield(flight)

    def _landed(self, key: tuple, flight: asyncio.Future[Any]) -> None:
        self._flights.pop(key, None)
        if not flight.cancelled() and flight.exception() is None:
            self._memo.put(key, flight.result())

    async def labels(self, ids: Sequence[str]) -> AnswerMap:
        if self.window <= 0 or isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence) \
                or any(type(i) is not str for i in ids):
            return await self.inner.labels(ids)
        ids = list(dict.fromkeys(self.inner.dialect.check_entity(i) for i in ids))
        got = await asyncio.gather(*(self._label(i) for i in ids))
        out = AnswerMap(zip(ids, (label for label, _ in got)))
        cut = [notes for _, notes in got if notes is not None]
        if cut:
            mark(out, True, tuple(dict.fromkeys(n for notes in cut for n in notes)))
        return out

    async def _label(self, ident: str) -> tuple[Any, tuple[str, ...] | None]:
        key = ("labels", ident)
        label = self._memo.get(key)
        if label is not None:
            self.coalesce_stats["memo"] = self.coalesce_stats.get("memo", 0) + 1
            return label, None
        return await self._labels.get(ident)

    async def _flush_labels(self, ids: list[str]) -> dict[str, tuple[Any, tuple[str, ...] | None]]:
        found = await self.inner.labels(ids)
        notes = found.notes if found.partial else None
        if notes is None:
            for ident in ids:
                self._memo.put(("labels", ident), found[ident])
        return {ident: (found[ident], notes) for ident in ids}

    async def select(self, query: str, **options: Any) -> Any:
        checked = self._guard(query, self.inner) if self._guard is not None else query
        if self._runner is not None:
            return await self._runner(self.inner, checked)
        return await self.inner.select(checked, **options)
