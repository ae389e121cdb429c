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
import json
import time
import urllib.error
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


def _reply(status: int, body: bytes) -> Reply:
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
        return self._json("DELETE", f"/v1/rollouts/{urllib.request.quote(rollout_id, safe='')}")

    def call(self, tool: str, arguments: Any, *, rollout_id: str | None = None, profile: str | None = None) -> Reply:
        data = {"profile": profile, "tool": tool, "arguments": arguments, "rollout_id": rollout_id}
        for attempt in range(self.retries + 1):
            status, body, headers = self._request("POST", "/v1/call", data)
            if status == 429 and attempt < self.retries:
                time.sleep(float(headers.get("Retry-After", "1")))
                continue
            return _reply(status, body)
        raise AssertionError("unreachable")  # pragma: no cover


class AsyncServeClient:
    """The same over one aiohttp session (many calls in flight)."""

    def __init__(self, url: str = "http://127.0.0.1:8766", token: str | None = None, timeout: float = 60.0,
                 retries: int = 5, connections: int = 256):
        self.url = url.rstrip("/")
        self._token = token
        self.timeout = timeout
        self.retries = retries
        self.connections = connections
        self._session: Any = None

    async def __aenter__(self) -> AsyncServeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
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
        status, body = await self.request("POST", "/v1/call", {"profile": profile, "tool": tool, "arguments": arguments,
                                                               "rollout_id": rollout_id})
        return _reply(status, body)
