"""Adaptive batches: a `VALUES` block that times out is split in halves and asked again.

kgfed asks a beam in one query per batch (a bind join's block, as FedX and Comunica call it). On a
public endpoint a heavy block is also what fails first: QLever stops it with its 429 "Operation timed
out", WDQS with an HTTP 500 carrying Blazegraph's `java.util.concurrent.TimeoutException`, Virtuoso
with a partial S1TAT answer, or nothing comes back within the client's `--timeout`. Asking the same
block again fails the same way (the timeout is deterministic), so `AdaptiveBatches` does what FedX's
block-size control does, driven by the server's own verdict:

- a block that times out is split in halves and both halves are asked (concurrently, under the same
  per-host caps), recursively, down to single items; the block itself is never asked again, and the
  blocks of one call are each awaited to their own outcome (a sibling's timeout cancels nothing), so no
  query is sent twice: a block of one item that times out is an error at once, never asked again alone;
- only a single item that still times out is an error: `QueryTimeout` naming that item (every other
  item was answered, and those answers are cached, so a rerun asks only what failed); under the
  `partial="allow"` policy the call answers instead, that item empty and the answer flagged `.partial`
  with the error as its note;
- the working block size of the endpoint drops to the half that was asked, for the rest of the run:
  later calls cut their beams at that size at once instead of timing out again. It never grows back
  on its own (a probe would cost another server timeout); `AdaptiveBatches.reset()` does.

Answers are the same as the healthy server's: every row of a block belongs to one of its items
(kgfed's templates are keyed by the `VALUES` item), so the union of the halves' rows is the block's
answer, and the facade reads the pieces in the order of their items. Nothing partial is ever cached:
a timed-out query raised, so the response cache stored nothing for it.

What counts as a timeout (`splittable`): `EndpointTimeout` (the client's own timeout) and
`QueryTimeout` (QLever's 429 and WDQS's 500 as `endpoints.client` recognises them), and a
`PartialResult` when the endpoint's partial policy is `"retry"` (Virtuoso kept answering S1TAT after
its longer timeouts). Offline, a block missing from the cache is looked up in halves too (a live run
that split it cached the halves), without touching the working size. Anything else (a bad query, a 4xx, a connection failure) is raised as it is,
with every sibling query cancelled, as `CachedEndpoint.select_all` does. Below, the HTTP client never sends a
request that timed out twice in a run either (`endpoints.handlers.NoRepeat`).
"""
from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from ...endpoints.client import first_line
from ...sparql.errors import EndpointTimeout, OfflineMiss, PartialResult, QueryTimeout
from ...sparql.results import SelectResult

log = logging.getLogger("kgfed.batching")

Job = tuple[Hashable, Sequence]  # (what the items share: a direction, a template kind; the items)
Piece = tuple[Hashable, Sequence, SelectResult]  # a job's key, the items one query asked about, its answer


def splittable(exc: BaseException, partial_policy: str | None = None) -> bool:
    """Whether a smaller block may succeed where this one failed: a server or client timeout, or a
    partial answer after the `"retry"` policy's longer timeouts."""
    if isinstance(exc, (EndpointTimeout, OfflineMiss)):  # offline: the halves may be what a live run cached
        return True
    return isinstance(exc, PartialResult) and partial_policy == "retry"


def _show(item: Any) -> str:
    if isinstance(item, tuple):
        return "(" + ", ".join(str(part) for part in item) + ")"
    return str(item)


async def _all(coros: Sequence) -> list:
    """Every result in order, or the first failure (in order) with every sibling cancelled."""
    return await _settled(coros, lambda exc: False)


async def _settled(coros: Sequence, tolerated: Callable[[BaseException], bool]) -> list:
    """Every result or tolerated failure, in order; a failure not tolerated is raised (the first in order) with
    every sibling cancelled. Unlike `_all`, a tolerated failure (a timeout) leaves its siblings running, so each
    block's own outcome is known and none has to be asked again."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        pending = set(tasks)
        while pending:
            _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_EXCEPTION)
            for task in tasks:
                failure = task.exception() if task.done() and not task.cancelled() else None
                if failure is not None and not tolerated(failure):
                    raise failure
        return [task.exception() or task.result() for task in tasks]
    finally:
        rest = [task for task in tasks if not task.done()]
        for task in rest:
            task.cancel()
        if rest:
            await asyncio.gather(*rest, return_exceptions=True)
        for task in tasks:  # failures not raised are seen (no "never retrieved" noise)
            if task.done() and not task.cancelled():
                task.exception()


class AdaptiveBatches:
    """The working block size of one endpoint, and the splitting of blocks that time out.

    `limit` is the largest block asked (the KG's `batch_size`); `size` the working one (≤ limit), lowered
    by each timeout to the half that was asked next. `stats` counts `batch_timeouts` (blocks that timed
    out) and `batch_splits` (blocks split)."""

    def __init__(self, limit: int, *, name: str = "", partial_policy: str | None = None):
        self.limit = limit
        self.size = limit
        self.name = name
        self.partial_policy = partial_policy
        self.stats: Counter[str] = Counter()

    def reset(self) -> None:
        """Back to the configured block size (e.g. after the endpoint's load went down)."""
        self.size = self.limit

    def chunks(self, items: Sequence, cap: int | None = None) -> list[Sequence]:
        size = min(self.size, cap) if cap else self.size
        return [items[i:i + size] for i in range(0, len(items), size)]

    def _shrink(self, asked: int) -> None:
        half = max(1, (asked + 1) // 2)
        if half < self.size:
            log.info("%s: a block of %d timed out; working batch size %d -> %d for the rest of the run",
                     self.name, asked, self.size, half)
            self.size = half

    async def run(self, endpoint, jobs: Sequence[Job], render: Callable[[Hashable, Sequence], str], *,
                  cap: int | None = None) -> list[Piece]:
        """Ask every job's items in blocks of the working size (at most `cap`), splitting blocks that time
        out; the answers as (key, items asked, result) in job and item order. No query is asked twice: a
        block's outcome is known per block, so only the halves of a block that timed out are asked next."""
        blocks = [(key, block) for key, items in jobs for block in self.chunks(items, cap)]
        if not blocks:
            return []
        if len(blocks) == 1:  # one query: its own outcome, without a task
            key, block = blocks[0]
            return await self._answer(endpoint, key, block, render)
        outcomes = await _settled([endpoint.select(render(key, block)) for key, block in blocks],
                                  lambda exc: splittable(exc, self.partial_policy))
        if not any(isinstance(outcome, BaseException) for outcome in outcomes):  # the common case
            return [(key, block, result) for (key, block), result in zip(blocks, outcomes)]
        timed_out = [len(block) for (_, block), outcome in zip(blocks, outcomes)
                     if isinstance(outcome, BaseException) and not isinstance(outcome, OfflineMiss)]
        if timed_out:
            self._shrink(max(timed_out))
        pieces = await _all([self._after(endpoint, key, block, render, outcome)
                             for (key, block), outcome in zip(blocks, outcomes)])
        return [piece for group in pieces for piece in group]

    async def _after(self, endpoint, key: Hashable, items: Sequence, render, outcome) -> list[Piece]:
        """A block already asked: its answer, or what its failure calls for (halves, or the lone item's error)."""
        if isinstance(outcome, BaseException):
            return await self._failed(endpoint, key, items, render, outcome)
        return [(key, items, outcome)]

    def _alone(self, item: Any, exc: BaseException) -> Exception:
        """The error of one item that timed out alone: the same kind (a partial answer stays a
        `PartialResult`, anything else is a `QueryTimeout`), naming the item."""
        kind = PartialResult if isinstance(exc, PartialResult) else QueryTimeout
        return kind(f"{self.name}: the query about {_show(item)} timed out even alone ({first_line(str(exc), 240)}): "
                    "retry later, raise --timeout, or leave it out (answers about other items are kept in the cache)",
                    status=getattr(exc, "status", None))

    def _lone(self, key: Hashable, items: Sequence, exc: BaseException) -> Piece:
        """A single item that timed out: an error naming it, or, when the endpoint's partial policy is
        `"allow"`, an empty answer marked partial with that error as its note (never cached)."""
        error = self._alone(items[0], exc)
        if self.partial_policy not in ("allow", "report"):
            raise error from None
        self.stats["partial_items"] += 1
        return key, items, SelectResult([], [], partial=True, note=str(error))

    async def _ask(self, endpoint, key: Hashable, items: Sequence, render) -> list[Piece]:
        if len(items) > self.size:  # a sibling's timeout already showed a block this large fails: cut it first
            groups = await _all([self._ask(endpoint, key, block, render) for block in self.chunks(items)])
            return [piece for group in groups for piece in group]
        return await self._answer(endpoint, key, items, render)

    async def _answer(self, endpoint, key: Hashable, items: Sequence, render) -> list[Piece]:
        """Ask one block; a timeout is handled by `_failed` (the block itself is never asked again)."""
        try:
            return [(key, items, await endpoint.select(render(key, items)))]
        except Exception as exc:
            if not splittable(exc, self.partial_policy):
                raise
            if not isinstance(exc, OfflineMiss):
                self._shrink(len(items))
            return await self._failed(endpoint, key, items, render, exc)

    async def _failed(self, endpoint, key: Hashable, items: Sequence, render, exc: BaseException) -> list[Piece]:
        """A block that timed out (or missed offline): its halves are asked, a lone item is an error."""
        if isinstance(exc, OfflineMiss):  # not a timeout: look the halves up, leave the working size alone
            if len(items) == 1:
                raise exc
        else:
            self.stats["batch_timeouts"] += 1
            if len(items) == 1:
                return [self._lone(key, items, exc)]
            self.stats["batch_splits"] += 1
        middle = (len(items) + 1) // 2
        left, right = await _all([self._ask(endpoint, key, items[:middle], render),
                                  self._ask(endpoint, key, items[middle:], render)])
        return left + right
