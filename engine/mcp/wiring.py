"""The MCP wiring: tools, resources and the prompt over an `Engine`, and the server's transports.

Imports the `mcp` SDK at top level: import it only from the `kgfed mcp` handler.
"""
from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError
from pydantic_core import to_jsonable_python

from ...cache.costs import track
from ...sparql.errors import KgfedError
from ...sparql.guard import MAX_QUERY_CHARS
from ...sparql.secrets import redact
from .schemas import (MAX_EXPAND_EDGES, MAX_HOPS, MAX_IDS, MAX_NEIGHBORS, MAX_PATHS, MAX_DEPTH, MAX_ROWS,
                      AlignOut, AskOut, ContextOut, Direction, ExpandOut, Id, KgName, LabelsOut, NeighborsOut,
                      OneDirection, PathsOut, RelationsOut, SearchOut, SparqlOut)
from .lanes import caller_of
from .service import Engine, ServerOptions, _cost, _short, relation_vocabulary

log = logging.getLogger("kgfed.mcp")

# -- the MCP server --------------------------------------------------------------------------------
def _one_line(exc: BaseException) -> str:
    """The first line of an error, secrets (URL credentials, tokens) masked."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return redact(text)


async def _guard(name: str, call: Callable[[], Awaitable[tuple[dict, str]]]) -> CallToolResult:
    """Run a tool body with cost tracking; kgfed's errors become tool errors with their one-line message."""
    import time

    started = time.perf_counter()
    try:
        with track() as counter:
            data, text = await call()
    except KgfedError as exc:
        raise ToolError(_one_line(exc)) from None
    except (ToolError, asyncio.CancelledError):
        raise
    except Exception as exc:  # a library error: one line, the traceback only with KGFED_DEBUG
        kind = exc.__class__.__name__
        if kind == "CannotOverwriteExistingCassetteException":
            raise ToolError("request not in the cassette (replay-only): record it with --record") from None
        if os.environ.get("KGFED_DEBUG"):
            log.warning("tool %s failed", name, exc_info=True)  # on the server's stderr, never to the client
        raise ToolError(f"unexpected {kind}: {_short(_one_line(exc), 200)}") from None
    data = dict(data)
    if data.get("partial_note"):
        text += f"\n(partial answer, rows may be missing: {data['partial_note']})"
    if name != "ask":  # a method's Result carries its own, fuller cost
        data["cost"] = _cost(counter, time.perf_counter() - started)
    cost = data["cost"]
    figures = cost if isinstance(cost, dict) else cost.model_dump()
    summary = ", ".join(f"{k}={v:g}" for k, v in figures.items() if isinstance(v, (int, float)) and v)
    payload = to_jsonable_python(data)
    return CallToolResult(content=[TextContent(type="text", text=f"{text}\n[cost: {summary or 'nothing'}]")],
                          structured_content=payload)


class Progress:
    """Expansion steps as MCP progress notifications (sent in order, all before the result)."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.pending: list[asyncio.Task] = []

    def __call__(self, what: str, done: int, total: int) -> None:
        self.pending.append(asyncio.get_running_loop().create_task(self._send(len(self.pending), what, done, total)))

    async def _send(self, k: int, what: str, done: int, total: int) -> None:
        if k:
            await asyncio.wait([self.pending[k - 1]])  # keep the order the steps happened in
        await self.ctx.report_progress(done, total or None, what)

    async def __aenter__(self) -> Progress:
        return self

    async def __aexit__(self, *exc) -> None:
        await asyncio.gather(*self.pending, return_exceptions=True)  # a client gone away must not fail the call


READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=True)

INSTRUCTIONS = """kgfed: knowledge-graph lookups over {kgs}.
Ids: Freebase entities m.0abc / g.11x and relations like people.person.nationality (a CVT hop is one compound relation r1|r2);
Wikidata entities Q42 and properties P69. Typical use: search_entities to find an id, relations to see what an entity has,
neighbors to follow one relation, labels to name ids, align to find the same entity in the other KG, expand or paths for
a merged neighbourhood, context for Wikipedia passages, sparql for anything else (read-only), ask to run a whole
reasoning method. Every result reports its cost (SPARQL queries, cache hits, requests sent); repeated calls are cached."""


class KgfedMCP(MCPServer):
    """MCPServer whose argument-validation errors are one line too (pydantic's span several)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        if tool is not None and isinstance(arguments, dict):
            known = set((tool.parameters or {}).get("properties", {}))
            unknown = sorted(str(k) for k in arguments if k not in known)
            if unknown:
                raise ToolError(f"Error executing tool {_short(name, 40)}: unknown argument"
                                f"{'s' if len(unknown) > 1 else ''} {_short(', '.join(unknown), 120)}: "
                                f"this tool takes {', '.join(sorted(known)) or 'no arguments'}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}" for err in cause.errors()[:5])
            raise ToolError(f"Error executing tool {_short(name, 40)}: invalid arguments ({_short(problems, 300)}): "
                            "follow the tool's input schema") from cause


# the `ask` tool's method names: `build_server` sets it from the method registry (entry points included) before
# the tool is declared, so a method added by a plugin needs no edit here (the SDK reads annotations from globals)
MethodName: Any = str


def build_server(engine: Engine) -> MCPServer:
    """An MCPServer whose tools, resources and prompt call `engine`."""
    from ..methods import method_names

    global MethodName
    MethodName = Literal.__getitem__(tuple(method_names()))  # Literal["tog", "tog2", ...]
    kg_list = redact(", ".join(f"{n} ({g.dialect.name}: {g.endpoint.name})" for n, g in engine.kgs.items()))
    from importlib.metadata import PackageNotFoundError, version

    try:
        own_version = version("kgfed")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        own_version = "0"
    server = KgfedMCP("kgfed", title="kgfed knowledge graphs", version=own_version,
                       instructions=INSTRUCTIONS.format(kgs=kg_list), log_level="WARNING")
    for handler in logging.getLogger().handlers:  # libraries that set their own logger to DEBUG (bm25s) stay quiet
        handler.setLevel(logging.WARNING)

    @server.tool(annotations=READ_ONLY, description=(
        "Find entity ids by label in each KG (exact label or alias match; WDQS uses its entity search). Use it first "
        "when you have a name but no id. Returns hits with KG, id, label and description. Cost: one SPARQL query per KG."))
    async def search_entities(
        text: Annotated[str, Field(description="the label to look for, e.g. 'Douglas Adams'", max_length=200)],
        kg: KgName = None,
        limit: Annotated[int, Field(ge=1, le=50, description="hits per KG")] = 10,
    ) -> Annotated[CallToolResult, SearchOut]:
        return await _guard("search_entities", lambda: engine.search_entities(text, kg, limit))

    @server.tool(annotations=READ_ONLY, description=(
        "List the relations an entity has (outgoing: the entity is the subject; incoming: the object), with labels, in "
        "every KG whose id form fits. Use it to decide which relation to follow with neighbors. Freebase relations "
        "into a nameless CVT node are listed as one compound relation r1|r2. Cost: one SPARQL query per direction and KG."))
    async def relations(
        entity: Annotated[str, Field(description="entity id: Q42 (Wikidata) or m.0282x (Freebase)", max_length=200)],
        direction: Annotated[Direction, Field(description="out, in or both")] = "both",
        kg: KgName = None,
    ) -> Annotated[CallToolResult, RelationsOut]:
        return await _guard("relations", lambda: engine.relations(entity, direction, kg))

    @server.tool(annotations=READ_ONLY, description=(
        "Follow one relation from an entity and get the entities (or literal values) at the other end, with labels. "
        "direction out reads entity -relation-> x, in reads x -relation-> entity. A compound Freebase relation r1|r2 "
        "crosses its CVT node (listed in via). Cost: one SPARQL query per KG."))
    async def neighbors(
        entity: Annotated[str, Field(description="entity id: Q42 or m.0282x", max_length=200)],
        relation: Annotated[str, Field(description="relation id from the relations tool: P69, people.person.nationality, r1|r2", max_length=400)],
        direction: Annotated[OneDirection, Field(description="out or in")] = "out",
        limit: Annotated[int, Field(ge=1, le=MAX_NEIGHBORS, description="edges per KG at most")] = 50,
        kg: KgName = None,
    ) -> Annotated[CallToolResult, NeighborsOut]:
        return await _guard("neighbors", lambda: engine.neighbors(entity, relation, direction, limit, kg))

    @server.tool(annotations=READ_ONLY, description=(
        "Name ids: label, description and aliases of entities or properties (Q42, P69, m.0282x). Use it to read ids "
        "returned by other tools. Cost: one SPARQL query per KG per 50 ids."))
    async def labels(
        ids: Annotated[list[Id], Field(description="ids to name", min_length=1, max_length=MAX_IDS)],
        kg: KgName = None,
    ) -> Annotated[CallToolResult, LabelsOut]:
        return await _guard("labels", lambda: engine.labels(ids, kg))

    @server.tool(annotations=READ_ONLY, description=(
        "Find the same entity in the other KGs: a Freebase mid to its Wikidata QID and back, by Wikidata's Freebase ID "
        "claims (P646, confidence 1), a unique exact label (0.9, alias 0.75) or label embeddings (SBERT, cosine; loads "
        "a model the first time). Each link says its method and confidence. Cost: a few SPARQL queries; cached per id."))
    async def align(
        ids: Annotated[list[Id], Field(description="ids of any KG", min_length=1, max_length=MAX_IDS)],
        kg: KgName = None,
        methods: Annotated[list[Literal["p646", "label", "sbert"]] | None,
                           Field(description="alignment methods in order (default: the server's --methods)")] = None,
    ) -> Annotated[CallToolResult, AlignOut]:
        return await _guard("align", lambda: engine.align(ids, kg, methods))

    @server.tool(annotations=READ_ONLY, description=(
        "Expand topic entities over all KGs at once into one merged subgraph: each hop follows `width` relations per "
        "entity and keeps `limit` neighbours per relation; entities aligned across KGs become one node holding all their "
        "ids, and every edge keeps the KG it came from and its original relation id. Bounded: hops ≤ 3, max_edges "
        "returned. Cost: about 2 queries per KG per hop plus alignment and label queries."))
    async def expand(
        ctx: Context,
        topics: Annotated[list[Id], Field(description="topic ids (Q42, m.0282x)", min_length=1, max_length=MAX_IDS)],
        hops: Annotated[int, Field(ge=0, le=MAX_HOPS)] = 1,
        width: Annotated[int, Field(ge=0, le=100, description="relations followed per entity and KG (0 = all)")] = 3,
        limit: Annotated[int, Field(ge=0, le=MAX_NEIGHBORS, description="neighbours kept per entity and relation (0 = all)")] = 10,
        direction: Annotated[Direction, Field(description="out, in or both")] = "both",
        max_edges: Annotated[int, Field(ge=1, le=2000)] = MAX_EXPAND_EDGES,
    ) -> Annotated[CallToolResult, ExpandOut]:
        async with Progress(ctx) as progress:
            return await _guard("expand", lambda: engine.expand(topics, hops, width, limit, direction, max_edges, progress))

    @server.tool(annotations=READ_ONLY, description=(
        "Find how two or more entities are connected: paths of at most max_depth edges (taken either way) between every "
        "pair, searched in the merged subgraph around all of them (ceil(max_depth/2) hops each, over every KG, aligned "
        "entities merged). Each step gives the KG, relation and direction. Use it for 'how is X related to Y'. "
        "Cost: like expand with hops = ceil(max_depth/2); width 0 follows every relation."))
    async def paths(
        ctx: Context,
        entities: Annotated[list[Id], Field(description="two or more ids", min_length=2, max_length=10)],
        max_depth: Annotated[int, Field(ge=1, le=MAX_DEPTH, description="edges per path at most")] = 2,
        width: Annotated[int, Field(ge=0, le=100, description="relations followed per entity (0 = all)")] = 0,
        limit: Annotated[int, Field(ge=0, le=MAX_NEIGHBORS, description="neighbours kept per relation (0 = all)")] = 20,
        max_paths: Annotated[int, Field(ge=1, le=MAX_PATHS)] = 20,
    ) -> Annotated[CallToolResult, PathsOut]:
        async with Progress(ctx) as progress:
            return await _guard("paths", lambda: engine.paths(entities, max_depth, width, limit, max_paths, progress))

    @server.tool(annotations=READ_ONLY, description=(
        "Wikipedia passages about entities, ranked against a question (ToG-2's context retrieval): ids go to their "
        "English Wikipedia page (Freebase mids through P646), pages are split into sentence chunks and the best top_k "
        "are returned. ranker sbert loads an embedding model the first time; bm25 is instant. "
        "Cost: one or two SPARQL queries plus one text request per page (cached)."))
    async def context(
        entities: Annotated[list[Annotated[str, Field(max_length=300)]], Field(description="Q42, m.0282x or page titles", min_length=1, max_length=20)],
        question: Annotated[str, Field(description="the question the passages are ranked against", max_length=1000)],
        top_k: Annotated[int, Field(ge=1, le=50)] = 5,
        ranker: Literal["sbert", "bm25"] = "sbert",
    ) -> Annotated[CallToolResult, ContextOut]:
        return await _guard("context", lambda: engine.context(entities, question, top_k, ranker))

    @server.tool(annotations=READ_ONLY, description=(
        "Run a read-only SPARQL SELECT or ASK on one KG, for what the other tools cannot ask. Updates, LOAD, "
        "CONSTRUCT/DESCRIBE, SERVICE calls (WDQS's built-ins aside) and extension functions (bif:, sql:, ...: only SPARQL 1.1's "
        "built-ins and xsd: casts) are refused; at most max_rows rows come back (a LIMIT is "
        "added when the query has none; longer answers are truncated with a note). Wikidata KGs use wd:/wdt: IRIs, "
        "Freebase ones http://rdf.freebase.com/ns/. Cost: one SPARQL query (cached)."))
    async def sparql(
        ctx: Context,
        query: Annotated[str, Field(description="SPARQL 1.1 SELECT or ASK", max_length=MAX_QUERY_CHARS)],
        kg: Annotated[str | None, Field(description="the KG to query (needed when the server has several)")] = None,
        max_rows: Annotated[int, Field(ge=1, le=MAX_ROWS)] = 100,
        rewrite: Annotated[bool, Field(description="rewrite Virtuoso-dialect CWQ/WebQSP gold SPARQL for standard engines")] = False,
    ) -> Annotated[CallToolResult, SparqlOut]:
        caller = caller_of(ctx)  # the MCP session (or client): its fair share of the sparql lanes
        return await _guard("sparql", lambda: engine.sparql(query, kg, max_rows, rewrite, caller))

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=False, open_world_hint=True),
                 description=(
        "Answer a natural-language question with a whole KG reasoning method over this server's KGs: tog "
        "(Think-on-Graph beam search), tog2 (ToG with Wikipedia passages), pog (Paths-over-Graph), hydra (HydraRAG, "
        "both KGs + text), inses, proh. Returns the answer, answer ids, the reasoning paths and the cost. Topics are "
        "linked from the question by label unless given. Slow: tens to hundreds of SPARQL queries and, with the server's "
        "--llm, several LLM calls; without an LLM it scores with embeddings (loads a model the first time)."))
    async def ask(
        question: Annotated[str, Field(description="the question", max_length=1000)],
        method: Annotated[MethodName, Field(description="the reasoning method")] = "tog",
        topics: Annotated[list[Id] | None, Field(description="topic ids (default: linked from the question)", max_length=10)] = None,
        width: Annotated[int | None, Field(ge=1, le=10, description="beam width")] = None,
        depth: Annotated[int | None, Field(ge=1, le=5, description="maximum depth")] = None,
    ) -> Annotated[CallToolResult, AskOut]:
        return await _guard("ask", lambda: engine.ask(question, method, topics, width, depth))

    @server.resource("kgfed://kgs", name="kgs", title="the KGs of this server", mime_type="application/json",
                     description="Each KG: name, dialect, endpoint, id forms, and its query counters (queries, cache hits, requests sent).")
    def kgs_resource() -> str:
        import json

        return json.dumps(engine.describe(), ensure_ascii=False, indent=1)

    @server.resource("kgfed://kg/{name}/relations", name="relation vocabulary", mime_type="application/json",
                     description="Relations used in a KG held in a local file (id, label, how often), most frequent first; "
                                 "live endpoints are too large to list: use the relations tool on an entity.")
    async def vocabulary(name: str) -> str:
        import json

        try:
            return json.dumps(await relation_vocabulary(engine, name), ensure_ascii=False, indent=1)
        except KgfedError as exc:
            from mcp.server.mcpserver.exceptions import ResourceError

            raise ResourceError(_one_line(exc)) from None

    @server.prompt(name="explore", description="A plan for answering a question from the KGs with these tools.")
    def explore(question: str) -> str:
        return (f"Answer from the knowledge graphs ({kg_list}): {question}\n"
                "1. search_entities for each named thing (note the ids per KG). 2. relations on the topic ids; pick the ones "
                "the question needs. 3. neighbors over them (a Freebase CVT relation r1|r2 is one step). 4. labels to name "
                "ids; align to switch KG; paths to see how two entities connect. 5. Cite ids and relations for each fact. "
                "Use sparql only for counts or filters the tools cannot express.")

    return server


def _check_port(port: int) -> None:
    """Fail with one line when the loopback port is taken (uvicorn would log and exit)."""
    import socket

    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: only a listener conflicts
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            raise KgfedError(f"cannot listen on 127.0.0.1:{port} ({exc.strerror}): pick another --port") from None


async def _serve_http(server: MCPServer, port: int) -> None:
    """`run_streamable_http_async` with a bounded graceful shutdown: on Ctrl-C uvicorn waits at most
    `SHUTDOWN_GRACE` seconds for calls in flight (a `sparql` call may wait up to --timeout), then cancels them."""
    import uvicorn

    from ...endpoints.embedded import stop_query_workers

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            super().handle_exit(sig, frame)
            stop_query_workers()  # sparql calls in flight end now, with an error, instead of holding the shutdown

    def cancelled_on_shutdown(record: logging.LogRecord) -> bool:
        """uvicorn logs a call cancelled after the grace period as a traceback: a stop is not an error."""
        return not (record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError))

    logging.getLogger("uvicorn.error").addFilter(cancelled_on_shutdown)
    app = server.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level=server.settings.log_level.lower(),
                            timeout_graceful_shutdown=SHUTDOWN_GRACE)
    await Server(config).serve()


SHUTDOWN_GRACE = 2  # whole seconds: uvicorn's timeout_graceful_shutdown (and its CLI option) is an int


async def serve(options: ServerOptions) -> int:
    """Open the engine, then serve MCP on stdio or streamable HTTP until the client or a signal ends it."""
    engine = Engine.open(options)
    try:
        server = build_server(engine)
        if options.transport == "stdio":
            if sys.stdin.isatty():
                print("kgfed: MCP server on stdio, waiting for an MCP client (an agent such as Claude Desktop/Code "
                      "starts this command itself; --transport http serves a port instead; Ctrl-C stops it)",
                      file=sys.stderr)
            await server.run_stdio_async()
        else:
            _check_port(options.port)
            print(f"kgfed: MCP server on http://127.0.0.1:{options.port}/mcp (streamable HTTP; Ctrl-C stops it)",
                  file=sys.stderr)
            await _serve_http(server, options.port)
    finally:
        await engine.aclose()
    return 0
