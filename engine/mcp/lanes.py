"""Fair lanes for the MCP `sparql` tool: its queries at once, shared between callers (MCP sessions).

`FairLanes(size)` hands out `size` lanes. No caller holds more than `per_caller` of them (default: all but
one, so a caller alone with several queries in flight always leaves a lane for the next caller; stdio's one client
and in-process calls, caller `"stdio"` or None, have no one to leave it to and may take them all), and a lane
that frees goes to the waiting caller that holds the fewest, and among equals to the one served least recently
(round robin; a new caller first): two heavy callers cannot keep a third one's cheap query waiting behind their
queues, only behind one running query.
A waiter cancelled (its caller gave up) leaves the queue, and a lane granted to it at that moment is passed on.

Who the caller is (`caller_of`): the MCP session (`Mcp-Session-Id`, a client of the stateful protocol revisions),
else an authenticated client (its `Authorization`), else over stdio the one client; a client of the stateless
2026-07-28 revision without either has no identity beyond its HTTP connection, so each connection is a caller
(a client that opens several connections at once counts as several: the lanes still bound it to `size`).
"""
from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
from collections import Counter
from collections.abc import AsyncIterator, Hashable
from typing import Any


_SOLE = frozenset({"stdio", None})  # the only client a server can have: nobody else needs a lane left


class FairLanes:
    """`size` lanes; see the module docstring. `lane(caller)` is the context manager a query runs in."""

    def __init__(self, size: int, per_caller: int | None = None):
        self.size = max(1, int(size))
        self.per_caller = max(1, per_caller if per_caller is not None else self.size - 1)
        self.held: Counter[Hashable] = Counter()
        self._waiting: dict[Hashable, list[tuple[int, asyncio.Future[None]]]] = {}
        self._order = itertools.count()
        self._served: dict[Hashable, int] = {}  # caller -> when it last got a lane (the grant's number)

    @property
    def free(self) -> int:
        return self.size - sum(self.held.values())

    @contextlib.asynccontextmanager
    async def lane(self, caller: Hashable) -> AsyncIterator[None]:
        await self._acquire(caller)
        try:
            yield
        finally:
            self._release(caller)

    async def _acquire(self, caller: Hashable) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(caller, []).append((next(self._order), future))
        self._dispatch()
        try:
            await future
        except BaseException:
            if future.done() and not future.cancelled():  # granted as the caller gave up: pass the lane on
                self._release(caller)
            else:
                self._forget(caller, future)
            raise

    def _forget(self, caller: Hashable, future: asyncio.Future[None]) -> None:
        queue = [item for item in self._waiting.get(caller, []) if item[1] is not future]
        if queue:
            self._waiting[caller] = queue
        else:
            self._waiting.pop(caller, None)

    def _release(self, caller: Hashable) -> None:
        self.held[caller] -= 1
        if self.held[caller] <= 0:
            del self.held[caller]
        self._dispatch()

    def _dispatch(self) -> None:
        """Grant free lanes: to the eligible caller holding the fewest, the least recently served among equals."""
        while self.free > 0:
            eligible = [(self.held[c], self._served.get(c, -1), q[0][0], c) for c, q in self._waiting.items()
                        if q and (self.held[c] < self.per_caller or c in _SOLE)]
            if not eligible:
                return
            caller = min(eligible, key=lambda item: item[:3])[3]
            _, future = self._waiting[caller].pop(0)
            if not self._waiting[caller]:
                del self._waiting[caller]
            if future.done():  # cancelled while queued: skip it
                continue
            self.held[caller] += 1
            self._served[caller] = next(self._order)
            future.set_result(None)


def caller_of(ctx: Any) -> Hashable:
    """The caller an MCP request comes from (module docstring); `ctx` is the SDK's tool `Context`."""
    try:
        request = ctx.request_context.request
    except (AttributeError, ValueError):  # outside a request
        return None
    headers = getattr(request, "headers", None)
    if headers is None:  # stdio: one client
        return "stdio"
    session = headers.get("mcp-session-id")
    if session:
        return ("session", session)
    authorization = headers.get("authorization")
    if authorization:  # kept as a digest: the lanes never hold a credential
        return ("auth", hashlib.blake2b(authorization.encode(), digest_size=16).hexdigest())
    peer = getattr(request, "client", None)
    return ("peer", getattr(peer, "host", None), getattr(peer, "port", None))
