"""The tool server one `kgfed serve` run shares: the agent method's tool profiles over one `Session`.

`ToolServer.open(options)` opens a `Session` over the `--kg/--endpoint` KGs (its one HttpClient and one response
cache), wraps each KG in a `CoalescingKG` (concurrent single calls gathered into batched queries, raw queries
guarded as the MCP `sparql` tool guards them) and offers every profile of `engine.agent.tools.PROFILES` over the
KGs whose dialect it applies to. What HTTP carries (engine/serve/http.py) calls:

- `tools(profile)`: the profile's tools as OpenAI function schemas (`{"type": "function", "function": {...}}`);
- `start(profile, question, topics, rollout_id)`: a rollout's context (what the model was shown, for the answer
  tool and the heads of later results), its system prompt and first user message, as the agent method writes them;
- `call(profile, tool, arguments, rollout_id, deadline)`: one tool call's text, under a deadline, admitted by a
  bounded queue (`Overloaded` past it: HTTP 429), recorded or replayed byte for byte (`engine/serve/record.py`);
- `release(rollout_id)`: forget a rollout (contexts are also dropped oldest first past `max_rollouts`).

A call's text is exactly the agent method's: the same `Tool.call` on the same kind of `ToolContext`.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...endpoints.options import DEFAULT_QUERY_MEMORY_MB
from ...sparql.errors import KgfedError
from ...sparql.guard import ServicePolicy, analyse
from ..agent.tools import PROFILES, TOOL_PROFILES, ToolContext, ToolError, ToolProfile
from ..config import CacheOptions, HttpOptions, KGSpec, SessionSpec
from ..session import Session
from .coalesce import CoalescingKG
from .record import Recorder, Replayer, chain_key, start_key

__all__ = ["Overloaded", "ServeError", "ServeOptions", "ToolServer"]

MAX_ROLLOUT_ID = 200
SPARQL_ROW_CAP = 1000  # the most rows any profile's raw-query tool shows (Search-on-Graph's cap)


class ServeError(KgfedError):
    """A call the server refuses: `status` is its HTTP status (400 bad call, 404 unknown, 504 deadline...)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class Overloaded(ServeError):
    """More calls waiting than the queue holds: answered 429 with Retry-After."""

    def __init__(self, message: str, retry_after: float = 1.0):
        super().__init__(message, 429)
        self.retry_after = retry_after


@dataclass(frozen=True)
class ServeOptions:
    """What one `kgfed serve` run serves and how (the command line's options)."""

    kgs: tuple[KGSpec, ...] = (KGSpec("freebase"), KGSpec("wikidata"))
    http: HttpOptions = HttpOptions()
    cache: CacheOptions = CacheOptions()
    profiles: tuple[str, ...] = ()  # () = every profile that applies to one of the KGs
    host: str = "127.0.0.1"
    port: int = 8766
    token: str | None = field(default=None, repr=False)  # bearer token (required off loopback); never logged
    deadline: float = 30.0  # seconds a call may take (a caller may ask for less)
    max_inflight: int = 64  # tool calls run at once
    max_queue: int = 1024  # calls waiting for a slot; past it 429
    read_timeout: float = 10.0  # seconds a client may take to send a request's body
    coalesce_ms: float = 2.0  # window gathering concurrent single calls (0: off)
    query_workers: int = 2  # raw queries (sparql tools) at once, and worker processes per file store
    query_memory_mb: int = DEFAULT_QUERY_MEMORY_MB
    sparql_rows: int = 100  # the kgfed profile's sparql row cap (the agent method's default)
    max_rollouts: int = 65536  # rollout contexts kept (oldest dropped first)
    record: str | None = None  # directory: every call's answer appended (engine/serve/record.py)
    replay: str | None = None  # directory: answers come from a recording, nothing reaches a KG


@dataclass
class Rollout:
    """One rollout's state: its profile, tool context and the key chain of its calls (for record/replay)."""

    profile: str
    ctx: ToolContext
    key: str
    answer: dict[str, Any] | None = None
    calls: int = 0


def _loopback(host: str) -> bool:
    return host in ("127.0.0.1", "::1", "localhost") or host.startswith("127.")


def _http_urls(kg: Any) -> tuple[list[str], bool]:
    """The KG's HTTP endpoint URLs and whether one is WDQS (its built-in SERVICEs are allowed there)."""
    inner = kg.endpoint.inner
    parts = getattr(inner, "parts", None) or getattr(inner, "endpoints", None) or [inner]
    urls = [u for p in parts if isinstance(u := getattr(p, "url", None), str) and u]
    return urls, any(getattr(p, "server", None) == "wdqs" for p in parts)


def guard(query: str, kg: Any) -> str:
    """The MCP `sparql` tool's checks on a caller's query: read-only, the dialect's functions only, no SERVICE
    but WDQS's built-ins, never back to the KG's own endpoint; rows capped at `SPARQL_ROW_CAP`."""
    urls, builtins = _http_urls(kg)
    policy = ServicePolicy.own_origin_refused(urls, builtins=builtins)
    return analyse(query, policy, SPARQL_ROW_CAP, functions=kg.dialect.functions).text


def open_session(kgs: Any, http: HttpOptions | None = None, cache: CacheOptions | None = None, *, llm: Any = "none",
                 transport: Any = None) -> Session:
    """A `Session` over `kgs` (opened): the one place `kgfed serve` builds its `SessionSpec`."""
    spec = SessionSpec(kgs=tuple(kgs), http=http or HttpOptions(), cache=cache or CacheOptions(), llm=llm)
    return Session(spec, transport=transport).open()


class ToolServer:
    """The profiles, rollouts and admission of one `kgfed serve` run (see the module docstring)."""

    def __init__(self, options: ServeOptions, session: Session):
        self.options = options
        self.session = session
        self.stats: Counter[str] = Counter()
        self.latencies: list[float] = []
        self._running = asyncio.Semaphore(max(1, options.max_inflight))
        self._waiting = 0
        self._lanes = asyncio.Semaphore(max(1, options.query_workers))
        window = max(0.0, options.coalesce_ms) / 1000.0
        self.kgs = {name: CoalescingKG(kg, window, guard=guard, runner=self._run_query) for name, kg in session.kgs.items()}
        self.profiles = self._profiles(options.profiles)
        self.rollouts: OrderedDict[str, Rollout] = OrderedDict()
        self.recorder = Recorder(options.record) if options.record else None
        self.replayer = Replayer(options.replay) if options.replay else None

    @classmethod
    def open(cls, options: ServeOptions) -> ToolServer:
        if not _loopback(options.host) and not options.token:
            raise KgfedError(f"--host {options.host} is not a loopback address: a bearer token is required there; set "
                             "KGFED_SERVE_TOKEN (or --token-file FILE) to a long random secret")
        if options.record and options.replay:
            raise KgfedError("--record-calls and --replay-calls together: record once, then replay")
        session = open_session(options.kgs, options.http, options.cache)
        try:
            return cls(options, session)
        except BaseException:
            session._close_client_soon()
            raise

    async def aclose(self) -> None:
        from ...endpoints.embedded import stop_query_workers

        if self.recorder is not None:
            self.recorder.close()
        stop_query_workers()
        await self.session.aclose()

    # -- profiles ------------------------------------------------------------------------------------
    def _profiles(self, wanted: tuple[str, ...]) -> dict[str, ToolProfile]:
        names = list(wanted) or list(PROFILES)
        out: dict[str, ToolProfile] = {}
        for name in names:
            cls = TOOL_PROFILES.get(name)  # an unknown name: the registry's one-line error
            kgs = {n: kg for n, kg in self.kgs.items() if kg.dialect.name in cls.dialects}
            if not kgs:
                if wanted:
                    raise KgfedError(f"tool profile {name!r} applies to {', '.join(cls.dialects)} KGs and this server has "
                                     f"none ({', '.join(f'{n}: {kg.dialect.name}' for n, kg in self.kgs.items())})")
                continue
            out[name] = cls(kgs)  # type: ignore[arg-type]  # CoalescingKG stands in for KG
        return out

    def profile(self, name: Any) -> ToolProfile:
        if name is None and len(self.profiles) == 1:
            return next(iter(self.profiles.values()))
        if name is None:
            name = "kgfed" if "kgfed" in self.profiles else None
        if not isinstance(name, str) or name not in self.profiles:
            raise ServeError(f"unknown profile {str(name)[:40]!r}: give one of {', '.join(self.profiles)}", 404)
        return self.profiles[name]

    def tools(self, profile: Any = None) -> list[dict[str, Any]]:
        """The profile's tools as OpenAI function schemas (without the stand-in's `x-kgfed` hints)."""
        chosen = self.profile(profile)
        return [{"type": "function", "function": {k: spec[k] for k in ("name", "description", "parameters")}}
                for spec in chosen.specs()]

    def describe(self) -> dict[str, Any]:
        return {"profiles": {n: {"dialects": list(p.dialects), "kgs": list(p.kgs), "source": p.source,
                                 "answer_tool": p.answer_name} for n, p in self.profiles.items()},
                "kgs": {n: kg.dialect.name for n, kg in self.kgs.items()},
                "replay": bool(self.replayer), "record": bool(self.recorder)}

    # -- rollouts ------------------------------------------------------------------------------------
    def start(self, profile: Any, question: Any = "", topics: Any = None, rollout_id: Any = None) -> dict[str, Any]:
        chosen = self.profile(profile)
        if not isinstance(question, str) or len(question) > 20_000:
            raise ServeError("question must be a string of at most 20,000 characters")
        topics = _topics(topics, chosen)
        rid = _rollout_id(rollout_id) if rollout_id is not None else uuid.uuid4().hex
        ctx = ToolContext(chosen.kgs, question, topics, sparql_rows=self.options.sparql_rows)
        opening = chosen.opening(question, ctx)
        self._keep(rid, Rollout(chosen.name, ctx, start_key(chosen.name, question, topics)))
        self.stats["rollouts"] += 1
        return {"rollout_id": rid, "profile": chosen.name, "system": chosen.system_prompt(ctx), "opening": opening,
                "answer_tool": chosen.answer_name, "tools": self.tools(chosen.name)}

    def _keep(self, rid: str, rollout: Rollout) -> None:
        self.rollouts[rid] = rollout
        self.rollouts.move_to_end(rid)
        while len(self.rollouts) > max(1, self.options.max_rollouts):
            self.rollouts.popitem(last=False)

    def release(self, rollout_id: Any) -> dict[str, Any]:
        rollout = self.rollouts.pop(_rollout_id(rollout_id), None)
        return {"released": rollout is not None, "answer": rollout.answer if rollout else None}

    def answer(self, rollout_id: Any) -> dict[str, Any] | None:
        rollout = self.rollouts.get(_rollout_id(rollout_id))
        return rollout.answer if rollout else None

    def _rollout(self, profile: ToolProfile, rollout_id: Any) -> tuple[str | None, Rollout]:
        if rollout_id is None:  # a one-off call: a fresh context, kept nowhere
            return None, Rollout(profile.name, ToolContext(profile.kgs, sparql_rows=self.options.sparql_rows),
                                 start_key(profile.name, "", {}))
        rid = _rollout_id(rollout_id)
        rollout = self.rollouts.get(rid)
        if rollout is None:  # a rollout never started: its calls still share one context
            rollout = Rollout(profile.name, ToolContext(profile.kgs, sparql_rows=self.options.sparql_rows),
                              start_key(profile.name, "", {}))
            self._keep(rid, rollout)
        elif rollout.profile != profile.name:
            raise ServeError(f"rollout {rid!r} uses profile {rollout.profile!r}, not {profile.name!r}")
        return rid, rollout

    # -- calls ---------------------------------------------------------------------------------------
    async def call(self, profile: Any, tool: Any, arguments: Any = None, rollout_id: Any = None,
                   deadline: Any = None) -> dict[str, Any]:
        """One tool call: `{"tool", "text"}` (+ `"answer"` for the answer tool); a refusal is a
        `ServeError` (the tool's one line, status 400; unknown tool 404; past the deadline 504)."""
        chosen = self.profile(profile)
        try:
            tool_ = chosen.tool(tool)
        except ToolError as exc:
            raise ServeError(str(exc), 404) from None
        if arguments is None:
            arguments = {}
        seconds = self._deadline(deadline)
        rid, rollout = self._rollout(chosen, rollout_id)
        if self.recorder is not None or self.replayer is not None:  # the chain costs a hash a call: only when kept
            rollout.key = chain_key(rollout.key, tool_.name, arguments)
        if self.replayer is not None:
            self.stats["replayed"] += 1
            return self.replayer.answer(rollout.key, tool_.name)
        async with self._admitted():
            started = time.perf_counter()
            try:
                async with asyncio.timeout(seconds):  # no task of its own (wait_for makes one per call)
                    out = await self._run(chosen, tool_, arguments, rollout)
            except ToolError as exc:
                self.stats["tool_errors"] += 1
                error = ServeError(str(exc).splitlines()[0] if str(exc) else "bad call", 400)
                self._record(rollout.key, tool_.name, None, error)
                raise error from None
            except TimeoutError:
                self.stats["deadline"] += 1
                raise ServeError(f"{tool_.name}: no answer within the deadline of {seconds:g} s: ask for less, or retry "
                                 "(the KG may be busy)", 504) from None
            finally:
                self.latencies.append(time.perf_counter() - started)
                if len(self.latencies) > 100_000:
                    del self.latencies[:50_000]
        self._record(rollout.key, tool_.name, out, None)
        return out

    def _deadline(self, deadline: Any) -> float:
        limit = self.options.deadline
        if deadline is None:
            return limit
        if isinstance(deadline, bool) or not isinstance(deadline, (int, float)) or not deadline > 0:
            raise ServeError(f"deadline must be a positive number of seconds, got {str(deadline)[:20]!r}")
        return min(float(deadline), limit)

    async def _run(self, profile: ToolProfile, tool: Any, arguments: Any, rollout: Rollout) -> dict[str, Any]:
        self.stats["calls"] += 1
        self.stats[f"tool:{tool.name}"] += 1
        rollout.calls += 1
        if tool.name == profile.answer_name:
            from ..agent.tools import check_arguments

            args = check_arguments(tool.parameters, arguments, tool.name)
            names, ids = profile.final(args, rollout.ctx)
            rollout.answer = {"names": names, "ids": ids}
            return {"tool": tool.name, "text": "answer recorded", "answer": rollout.answer}
        rollout.ctx.stats["tool_calls"] += 1
        text = await tool.call(arguments, rollout.ctx)
        return {"tool": tool.name, "text": text}

    def _record(self, key: str, tool: str, out: Mapping[str, Any] | None, error: ServeError | None) -> None:
        if self.recorder is None:
            return
        if error is not None:
            self.recorder.write(key, tool, error.status, {"error": str(error), "status": error.status})
        elif out is not None:
            self.recorder.write(key, tool, 200, dict(out))

    @contextlib.asynccontextmanager
    async def _admitted(self) -> AsyncIterator[None]:
        """A slot among `max_inflight`, waiting in a queue of at most `max_queue` calls (past it: `Overloaded`)."""
        if self._running.locked() and self._waiting >= self.options.max_queue:
            self.stats["rejected"] += 1
            raise Overloaded(f"the server is busy ({self._waiting} calls waiting): retry after a second")
        self._waiting += 1
        try:
            await self._running.acquire()
        finally:
            self._waiting -= 1
        try:
            yield
        finally:
            self._running.release()

    async def _run_query(self, kg: Any, query: str) -> Any:
        """A caller's guarded raw query: in one of `query_workers` lanes, bounded as the MCP `sparql` tool's."""
        from ...endpoints.bounds import bounded
        from ...endpoints.options import TOOL_ANSWER_BYTES

        options = self.options
        async with self._lanes:
            with bounded(timeout=options.http.timeout, memory_mb=options.query_memory_mb, workers=options.query_workers,
                         max_bytes=TOOL_ANSWER_BYTES, max_rows=options.http.max_rows, max_terms=options.http.max_terms):
                return await kg.select(query)

    def report(self) -> dict[str, Any]:
        """Counters: calls, errors, rejected, replayed, coalesced batches, the KGs' requests."""
        lat = sorted(self.latencies)

        def pct(p: float) -> float | None:
            return round(lat[min(len(lat) - 1, int(p * len(lat)))] * 1000, 3) if lat else None

        coalesced: Counter[str] = Counter()
        for kg in self.kgs.values():
            coalesced.update(kg.coalesce_stats)
        return {"calls": dict(self.stats), "coalesced": dict(coalesced), "waiting": self._waiting,
                "rollouts": len(self.rollouts), "latency_ms": {"p50": pct(0.5), "p99": pct(0.99)},
                "kgs": {n: dict(kg.inner.stats) for n, kg in self.kgs.items()}}


def _rollout_id(value: Any) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_ROLLOUT_ID or not value.isprintable():
        raise ServeError(f"rollout_id must be a printable string of 1-{MAX_ROLLOUT_ID} characters")
    return value


def _topics(topics: Any, profile: ToolProfile) -> dict[str, dict[str, str]]:
    """Topic entities as {kg: {id: name}}; a flat {id: name} (or a list of ids) goes to the KG whose dialect takes
    each id. Every id is checked by its KG."""
    if topics is None:
        return {}
    if isinstance(topics, list):
        topics = {str(t): "" for t in topics} if all(isinstance(t, str) for t in topics) else None
    if not isinstance(topics, dict) or len(topics) > 200:
        raise ServeError("topics must be {id: name}, {kg: {id: name}} or a list of ids (at most 200)")
    out: dict[str, dict[str, str]] = {}
    nested = all(isinstance(v, dict) for v in topics.values()) and topics
    items = [(kg, i, n) for kg, ids in topics.items() for i, n in ids.items()] if nested else \
        [(None, i, n) for i, n in topics.items()]
    ctx = ToolContext(profile.kgs)
    for kg, ident, name in items:
        if not isinstance(ident, str) or not isinstance(name, str):
            raise ServeError("topics: ids and names must be strings")
        try:
            chosen = ctx.kg_for(ident, kg)
        except KgfedError as exc:
            raise ServeError(f"topics: {exc}") from None
        out.setdefault(chosen.name, {})[ident] = name
    return out


def dumps(data: Any) -> bytes:
    """The one JSON form of every answer (so a replayed answer is the recorded bytes)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()
