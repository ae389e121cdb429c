"""A client of `kgfed serve` (the adapters, the Ray workers and bench/rollouts.py use it).

    client = ServeClient("http://127.0.0.1:8766", token=None)
    started = client.start("kgfed", "who wrote ...", {"m.0abc": "Name"})        # rollout id, prompt, tools
    reply = client.call("relations", {"entity": "m.0abc"}, rollout_id=started["rollout_id"], profile="kgfed")
    reply.text, reply.error, reply.status

`call` returns a `Reply` for tool refusals too (`error=True`, the server's one line in `text`): the model is
answered with that line, as the agent loop does. A busy server (429) is asked again after its Retry-After, at
most `retries` times. Only the URL given is ever reached. `AsyncServeClient` is the same over aiohttp.
"""
from __future__ import annotations

import asyncio
import functools
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from ...sparql.errors import KgfedError

__all__ = ["AsyncServeClient", "Reply", "ServeClient"]


@dataclass
class Reply:
    """One call's answer: the text the model reads, whether it is an error, the HTTP status, the answer tool's."""

    text: str
    error: bool = False
    status: int = 200
    answer: dict[str, Any] | None = None
    body: bytes = field(default=b"", repr=False)


def _reply(status: int, body: bytes, data: Any = None) -> Reply:
    if data is None:
        try:
            data = json.loads(body)
        except ValueError:
            return Reply(f"error: the server answered {status} with no JSON", True, status, body=body)
    if status == 200 and isinstance(data, dict) and "text" in data:
        return Reply(str(data["text"]), False, 200, data.get("answer"), body)
    message = data.get("error", "error") if isinstance(data, dict) else "error"
    return Reply(f"error: {message}", True, status, body=body)


class ServeClient:
    """Blocking client (urllib): one request per call."""

    def __init__(self, url: str = "http://127.0.0.1:8766", token: str | None = None, timeout: float = 60.0,
                 retries: int = 5):
        self.url = url.rstrip("/")
        self._token = token
        self.timeout = timeout
        self.retries = retries

    def _request(self, method: str, path: str, data: Any = None) -> tuple[int, bytes, dict[str, str]]:
        body = None if data is None else json.dumps(data).encode()
        headers = {"Content-Type": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        request = urllib.request.Request(self.url + path, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 (the caller's URL)
                return response.status, response.read(), dict(response.headers)
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read(), dict(exc.headers or {})
        except (urllib.error.URLError, OSError) as exc:
            raise KgfedError(f"kgfed serve at {self.url} does not answer ({getattr(exc, 'reason', exc)}): start it with "
                             "`kgfed serve`") from None

    def _json(self, method: str, path: str, data: Any = None) -> Any:
        for attempt in range(self.retries + 1):
            status, body, headers = self._request(method, path, data)
            if status == 429 and attempt < self.retries:
                time.sleep(float(headers.get("Retry-After", "1")))
                continue
            break
        parsed = json.loads(body)
        if status != 200:
            raise KgfedError(f"kgfed serve: {parsed.get('error', status)}")
        return parsed

    def tools(self, profile: str | None = None) -> list[dict[str, Any]]:
        return self._json("GET", "/v1/tools" + (f"?profile={profile}" if profile else ""))["tools"]

    def start(self, profile: str | None, question: str, topics: Any = None, rollout_id: str | None = None) -> dict[str, Any]:
        data = {"profile": profile, "question": question, "topics": topics}
        if rollout_id is not None:
            data["rollout_id"] = rollout_id
        return self._json("POST", "/v1/rollouts", data)

    def release(self, rollout_id: str) -> dict[str, Any]:
        return self._json("DELETE", f"/v1/rollouts/{urllib.parse.quote(rollout_id, safe='')}")

    def call(self, tool: str, arguments: Any, *, rollout_id: str | None = None, profile: str | None = None) -> Reply:
        data = {"profile": profile, "tool": tool, "arguments": arguments, "rollout_id": rollout_id}
        for attempt in range(self.retries + 1):
            status, body, headers = self._request("POST", "/v1/call", data)
            if status == 429 and attempt < self.retries:
                time.sleep(float(headers.get("Retry-After", "1")))
                continue
            return _reply(status, body)
        raise AssertionError("unreachable")  # pragma: no cover


def _settle(future: asyncio.Future[Reply], done: asyncio.Future[tuple[int, bytes]]) -> None:
    """`future` takes the outcome of `done` (a call sent again alone)."""
    if future.done():
        return
    if done.cancelled():
        future.cancel()
    elif done.exception() is not None:
        future.set_exception(done.exception())  # type: ignore[arg-type]
    else:
        future.set_result(_reply(*done.result()))


class AsyncServeClient:
    """The same over one aiohttp session (many calls in flight).

    `batch_window` > 0: the calls made within that many seconds of each other (a rollout worker's many
    trajectories at once) go as one POST /v1/batch of at most `max_batch` calls; each still gets its own answer,
    byte for byte what /v1/call would have sent, and a call the server was too busy for is sent again alone."""

    def __init__(self, url: str = "http://127.0.0.1:8766", token: str | None = None, timeout: float = 60.0,
                 retries: int = 5, connections: int = 256, batch_window: float = 0.0, max_batch: int = 256):
        self.url = url.rstrip("/")
        self._token = token
        self.timeout = timeout
        self.retries = retries
        self.connections = connections
        self.batch_window = batch_window
        self.max_batch = max(1, min(1024, max_batch))
        self._session: Any = None
        self._pending: list[tuple[dict[str, Any], asyncio.Future[Reply]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._sending: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> AsyncServeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        self._flush()
        if self._sending:
            await asyncio.gather(*self._sending, return_exceptions=True)
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _get(self) -> Any:
        if self._session is None:
            import aiohttp

            headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
            self._session = aiohttp.ClientSession(headers=headers, timeout=aiohttp.ClientTimeout(total=self.timeout),
                                                  connector=aiohttp.TCPConnector(limit=self.connections))
        return self._session

    async def request(self, method: str, path: str, data: Any = None) -> tuple[int, bytes]:
        session = self._get()
        for attempt in range(self.retries + 1):
            async with session.request(method, self.url + path, json=data) as response:
                body = await response.read()
                if response.status == 429 and attempt < self.retries:
                    await asyncio.sleep(float(response.headers.get("Retry-After", "1")))
                    continue
                return response.status, body
        raise AssertionError("unreachable")  # pragma: no cover

    async def start(self, profile: str | None, question: str, topics: Any = None, rollout_id: str | None = None) -> dict[str, Any]:
        data = {"profile": profile, "question": question, "topics": topics}
        if rollout_id is not None:
            data["rollout_id"] = rollout_id
        status, body = await self.request("POST", "/v1/rollouts", data)
        parsed = json.loads(body)
        if status != 200:
            raise KgfedError(f"kgfed serve: {parsed.get('error', status)}")
        return parsed

    async def call(self, tool: str, arguments: Any, *, rollout_id: str | None = None, profile: str | None = None) -> Reply:
        item = {"profile": profile, "tool": tool, "arguments": arguments, "rollout_id": rollout_id}
        if self.batch_window <= 0:
            return _reply(*await self.request("POST", "/v1/call", item))
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        if len(self._pending) >= self.max_batch:
            self._flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.batch_window, self._flush)
        return await future

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        pending, self._pending = self._pending, []
        if pending:
            task = asyncio.ensure_future(self._send(pending))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    async def _send(self, pending: list[tuple[dict[str, Any], asyncio.Future[Reply]]]) -> None:
        from .record import body_text

        try:
            status, body = await self.request("POST", "/v1/batch", {"calls": [item for item, _ in pending]})
            results = json.loads(body)["results"] if status == 200 else [{"status": status, "body": json.loads(body)}] * len(pending)
        except Exception as exc:  # the batch failed as a whole (connection): each caller gets the error
            for _, future in pending:
                if not future.done():
                    future.set_exception(exc)
            return
        for (item, future), result in zip(pending, results):
            if result["status"] == 429:  # busy: this call alone, after its Retry-After (request() retries)
                retry = asyncio.ensure_future(self.request("POST", "/v1/call", item))
                retry.add_done_callback(functools.partial(_settle, future))
            elif not future.done():
                future.set_result(_reply(result["status"], body_text(result["body"]).encode(), result["body"]))
