"""`kgfed serve`'s HTTP face (aiohttp): JSON in and out, one POST per call.

    GET    /v1/health                  {"ok": true, "profiles": {...}, "kgs": {...}}
    GET    /v1/tools?profile=NAME      {"profile": NAME, "tools": [OpenAI function schemas]}
    POST   /v1/rollouts                {"profile", "question", "topics", "rollout_id"?} -> system prompt, opening, tools
    DELETE /v1/rollouts/{id}           forget a rollout (its answer, if it gave one)
    POST   /v1/call                    {"profile", "tool", "arguments", "rollout_id"?, "deadline"?} -> {"tool", "text"}
    POST   /v1/tools/{name}            the same, the tool named in the path
    POST   /v1/batch                   {"calls": [call, ...]} -> {"results": [{"status", "body"}, ...]} (1-1024 calls)
    GET    /v1/stats                   counters: calls, errors, 429s, coalesced batches, the KGs' requests

Every refusal is one JSON line `{"error": "...", "status": N}` with that HTTP status (400 a malformed call or
a tool's refusal, 401 no or a wrong token, 404 an unknown tool or profile, 409 a call not in the replayed
recording, 413 a body over 1 MiB, 429 busy (with Retry-After), 504 past the call's deadline). With a token
(`KGFED_SERVE_TOKEN`), every request but /v1/health needs `Authorization: Bearer TOKEN`, compared in constant
time; the token is never logged. A client has `read_timeout` seconds to send its body; a stalled one holds
only its own connection (each connection is served one request at a time, the others go on).
"""
from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from ...sparql.errors import KgfedError
from .core import Overloaded, ServeError, ToolServer
from .record import body_text

__all__ = ["make_app", "run_server"]

log = logging.getLogger("kgfed.serve")
MAX_BODY = 1 << 20
SERVER_KEY: web.AppKey[ToolServer] = web.AppKey("server", ToolServer)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=body_text(data).encode(), status=status, content_type="application/json",
                        headers=headers)


def _error(message: str, status: int, headers: dict[str, str] | None = None) -> web.Response:
    line = " ".join(str(message).split())[:500] or "error"
    return _json({"error": line, "status": status}, status, headers)


@web.middleware
async def _guarded(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Auth, then the handler; every refusal one JSON line (never a traceback)."""
    server = request.app[SERVER_KEY]
    token = server.options.token
    if token and request.path != "/v1/health":
        given = request.headers.get("Authorization", "")
        expected = f"Bearer {token}"
        if not hmac.compare_digest(given.encode(), expected.encode()):
            return _error("missing or wrong bearer token: send Authorization: Bearer TOKEN", 401,
                          {"WWW-Authenticate": "Bearer"})
    try:
        return await handler(request)
    except Overloaded as exc:
        return _error(str(exc), 429, {"Retry-After": str(max(1, round(exc.retry_after)))})
    except ServeError as exc:
        return _error(str(exc), exc.status)
    except KgfedError as exc:
        return _error(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, 400)
    except web.HTTPException as exc:
        return _error(exc.reason or "bad request", exc.status)
    except (asyncio.CancelledError, KeyboardInterrupt):
        raise
    except Exception as exc:  # a bug must not end the server nor show a traceback to a caller
        log.exception("kgfed serve: internal error on %s", request.path)
        return _error(f"internal error ({type(exc).__name__}): see the server's log", 500)


async def _body(request: web.Request) -> dict[str, Any]:
    """The request's JSON object, read within the read timeout (a stalled client gets 408)."""
    server = request.app[SERVER_KEY]
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise ServeError(f"request body of {request.content_length} bytes: at most {MAX_BODY}", 413)
    try:
        raw = await asyncio.wait_for(request.read(), server.options.read_timeout)
    except TimeoutError:
        raise ServeError(f"the request body did not arrive within {server.options.read_timeout:g} s", 408) from None
    except web.HTTPRequestEntityTooLarge:
        raise ServeError(f"request body over {MAX_BODY} bytes", 413) from None
    try:
        data = json.loads(raw or b"{}")
    except json.JSONDecodeError as exc:
        raise ServeError(f"the body is not JSON ({exc.msg} at character {exc.pos}): send a JSON object") from None
    except ValueError:  # not UTF-8
        raise ServeError("the body is not JSON (not UTF-8 text): send a JSON object") from None
    if not isinstance(data, dict):
        raise ServeError(f"the body must be a JSON object, got {type(data).__name__}")
    return data


_CALL_FIELDS = {"profile", "tool", "arguments", "rollout_id", "deadline"}


async def _call(request: web.Request) -> web.Response:
    data = await _body(request)
    name = request.match_info.get("name")
    fields = _CALL_FIELDS - ({"tool"} if name else set())
    unknown = sorted(set(data) - fields)
    if unknown:
        raise ServeError(f"unknown field(s) {', '.join(unknown)[:80]}: a call has {', '.join(sorted(fields))}")
    tool = name if name else data.get("tool")
    if not isinstance(tool, str):
        raise ServeError("no tool: give \"tool\" (a tool's name, see GET /v1/tools)")
    arguments = _arguments(tool, data.get("arguments"))
    server = request.app[SERVER_KEY]
    return _json(await server.call(data.get("profile"), tool, arguments, data.get("rollout_id"), data.get("deadline")))


MAX_BATCH = 1024


def _arguments(tool: Any, arguments: Any) -> Any:
    if isinstance(arguments, str):  # OpenAI-style arguments as a JSON string
        try:
            return json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            raise ServeError(f"{tool}: arguments are not valid JSON ({arguments[:60]!r})") from None
    return arguments


async def _one(server: ToolServer, item: Any) -> dict[str, Any]:
    """One call of a batch as `{"status", "body"}` (its refusal is its own; the batch goes on)."""
    try:
        if not isinstance(item, dict):
            raise ServeError(f"a batch item must be a JSON object, got {type(item).__name__}")
        unknown = sorted(set(item) - _CALL_FIELDS)
        if unknown:
            raise ServeError(f"unknown field(s) {', '.join(unknown)[:80]}: a call has {', '.join(sorted(_CALL_FIELDS))}")
        tool = item.get("tool")
        if not isinstance(tool, str):
            raise ServeError("no tool: give \"tool\" (a tool's name, see GET /v1/tools)")
        body = await server.call(item.get("profile"), tool, _arguments(tool, item.get("arguments")), item.get("rollout_id"),
                                 item.get("deadline"))
        return {"status": 200, "body": body}
    except ServeError as exc:
        return {"status": exc.status, "body": {"error": " ".join(str(exc).split())[:500], "status": exc.status}}
    except KgfedError as exc:
        return {"status": 400, "body": {"error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__, "status": 400}}


async def _batch(request: web.Request) -> web.Response:
    """Several calls in one request (a rollout worker's concurrent calls, gathered by its client): each answered as
    if it came alone, in order."""
    data = await _body(request)
    calls = data.get("calls")
    if set(data) != {"calls"} or not isinstance(calls, list) or not 1 <= len(calls) <= MAX_BATCH:
        raise ServeError(f"a batch is {{\"calls\": [call, ...]}} with 1-{MAX_BATCH} calls")
    server = request.app[SERVER_KEY]
    server.stats["batches"] += 1
    return _json({"results": await asyncio.gather(*(_one(server, item) for item in calls))})


async def _start(request: web.Request) -> web.Response:
    data = await _body(request)
    unknown = sorted(set(data) - {"profile", "question", "topics", "rollout_id"})
    if unknown:
        raise ServeError(f"unknown field(s) {', '.join(unknown)[:80]}: a rollout has profile, question, topics, rollout_id")
    server = request.app[SERVER_KEY]
    return _json(server.start(data.get("profile"), data.get("question", ""), data.get("topics"), data.get("rollout_id")))


async def _release(request: web.Request) -> web.Response:
    return _json(request.app[SERVER_KEY].release(request.match_info["rollout"]))


async def _tools(request: web.Request) -> web.Response:
    server = request.app[SERVER_KEY]
    profile = request.query.get("profile")
    chosen = server.profile(profile)
    return _json({"profile": chosen.name, "tools": server.tools(chosen.name)})


async def _health(request: web.Request) -> web.Response:
    return _json({"ok": True, **request.app[SERVER_KEY].describe()})


async def _stats(request: web.Request) -> web.Response:
    return _json(request.app[SERVER_KEY].report())


def make_app(server: ToolServer) -> web.Application:
    app = web.Application(middlewares=[_guarded], client_max_size=MAX_BODY)
    app[SERVER_KEY] = server
    app.router.add_get("/v1/health", _health)
    app.router.add_get("/v1/tools", _tools)
    app.router.add_get("/v1/stats", _stats)
    app.router.add_post("/v1/rollouts", _start)
    app.router.add_delete("/v1/rollouts/{rollout}", _release)
    app.router.add_post("/v1/call", _call)
    app.router.add_post("/v1/tools/{name}", _call)
    app.router.add_post("/v1/batch", _batch)
    return app


async def start_site(server: ToolServer) -> tuple[web.AppRunner, int]:
    """The app listening on `options.host:port` (port 0: any free one); (runner, the port bound)."""
    options = server.options
    runner = web.AppRunner(make_app(server), access_log=None, keepalive_timeout=max(5.0, options.read_timeout),
                           shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, options.host, options.port, backlog=1024)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise KgfedError(f"cannot listen on {options.host}:{options.port} ({exc.strerror or exc}): give another --port "
                         "(or stop what holds it)") from None
    sockets = [s for s in (runner.addresses or [])]
    port = sockets[0][1] if sockets and isinstance(sockets[0], tuple) else options.port
    return runner, port


async def run_server(server: ToolServer, ready: Callable[[int], None] | None = None) -> int:
    """Serve until cancelled (Ctrl-C: the CLI cancels this task; the listener closes within about a second)."""
    runner, port = await start_site(server)
    try:
        if ready is not None:
            ready(port)
        await asyncio.Event().wait()
    finally:
        try:
            await asyncio.wait_for(asyncio.shield(runner.cleanup()), 2.0)
        except (TimeoutError, asyncio.CancelledError):
            pass
        await server.aclose()
    return 0
