"""The model providers: Claude through the `anthropic` SDK, and any OpenAI-compatible server over HTTP.

Both send through their `LLMGate` (`llm_gate`): an answer meaning "busy" (429/503/529) becomes a
`Busy` the gate waits out for every call of the run; any other error is a one-line `LLMError` naming
the provider and what to check. Provider SDKs are imported only when a provider is built, so
importing this module is cheap. `llm.make_llm` builds them from a CLI spec.
"""
from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from ...endpoints.client import first_line
from ...sparql.errors import EndpointError, LLMError
from .llm_base import LLM, Completion, Message
from .llm_tools import anthropic_calls, anthropic_request, chat_messages, openai_calls, openai_request
from .llm_gate import BUSY_STATUSES, Busy, busy_answer

DEFAULT_ANTHROPIC_MODEL = "claude-haiku-4-5"


class AnthropicLLM(LLM):
    """Claude through the official `anthropic` SDK's async client; the key comes from ANTHROPIC_API_KEY.

    The SDK (2.x, API version 2026-10-21) has no sampling parameters and the API rejects them, so
    `temperature` is not sent unless `send_temperature=True` (for gateways or older API versions
    that still take it, passed as an extra body field).
    """

    name = "anthropic"
    native_tools = True

    def __init__(self, model: str = DEFAULT_ANTHROPIC_MODEL, *, api_key: str | None = None,
                 base_url: str | None = None, max_retries: int = 2, timeout: float = 120.0,
                 send_temperature: bool = False):
        super().__init__(model or DEFAULT_ANTHROPIC_MODEL)
        api_key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not api_key:
            raise LLMError("ANTHROPIC_API_KEY is not set: export ANTHROPIC_API_KEY=sk-ant-... "
                           "(or use --llm openai:URL, replay:DIR or none)")
        try:
            import anthropic
        except ImportError:
            raise LLMError("the anthropic SDK is not installed: pip install 'kgfed[llm]'") from None
        self._sdk = anthropic
        # The SDK's own retries (2 by default: 408/409/429/5xx and dropped connections, each call on its own,
        # Retry-After honoured) are off: the gate retries instead, so one 429 or 529 pauses every call of the run.
        self._client = anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout)
        self.max_retries = max_retries
        self.gate.retries = max_retries
        self.send_temperature = send_temperature

    def limit(self, concurrency: int | None) -> None:
        super().limit(concurrency)
        self.gate.retries = self.max_retries

    def describe(self) -> str:
        return f"the Anthropic API ({self.model})"

    async def _complete(self, prompt: str, *, temperature: float, max_tokens: int, system: str | None,
                        stop: list[str] | None = None) -> Completion:
        kwargs: dict[str, Any] = {"messages": [{"role": "user", "content": prompt}]}
        if system:
            kwargs["system"] = system
        text, _, message = await self._create(kwargs, temperature=temperature, max_tokens=max_tokens, stop=stop)
        return Completion(text, int(message.usage.input_tokens or 0), int(message.usage.output_tokens or 0))

    async def _chat(self, messages: list[Message], *, tools: list[dict[str, Any]], temperature: float, max_tokens: int,
                    stop: list[str] | None = None) -> Completion:
        """Native tool use: `tools` with `input_schema`, `tool_use` blocks back, results as `tool_result` blocks."""
        text, calls, message = await self._create(anthropic_request(messages, tools), temperature=temperature,
                                                  max_tokens=max_tokens, stop=stop)
        return Completion(text, int(message.usage.input_tokens or 0), int(message.usage.output_tokens or 0), calls)

    async def _create(self, request: dict[str, Any], *, temperature: float, max_tokens: int, stop: list[str] | None):
        """One Messages API call: (text, tool calls, the SDK's message); errors as `Busy` or one-line `LLMError`."""
        sdk = self._sdk
        kwargs: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, **request}
        if stop:
            kwargs["stop_sequences"] = list(stop)
        if self.send_temperature:
            kwargs["extra_body"] = {"temperature": temperature}
        try:
            message = await self._client.messages.create(**kwargs)
        except sdk.AuthenticationError:
            raise LLMError("Anthropic rejected the API key (HTTP 401): check ANTHROPIC_API_KEY") from None
        except sdk.APIStatusError as exc:
            busy = busy_answer(exc.status_code, exc.response.headers, exc.response.text, "the Anthropic API")
            if busy is not None:
                raise busy from None
            said = getattr(exc, "api_message", None) or exc.message  # the body's error.message, else the SDK's text
            raise LLMError(f"Anthropic API answered HTTP {exc.status_code} for model {self.model}: "
                           f"{first_line(str(said))}; check the model name, key, quota and request size") from None
        except sdk.APIConnectionError as exc:
            if self.gate.retries:
                raise Busy(f"cannot reach the Anthropic API ({exc.__class__.__name__})", shared=False) from None
            raise LLMError(f"cannot reach the Anthropic API ({exc.__class__.__name__}): check the network or ANTHROPIC_BASE_URL") from None
        text, calls = anthropic_calls(message.content)
        return text, calls, message

    async def aclose(self) -> None:
        await self._client.close()


LLM_RETRIES = 2  # an LLM call is long: a dropped connection or a 5xx is retried twice, on any client


class OpenAICompatibleLLM(LLM):
    """Any server speaking OpenAI's `/v1/chat/completions` (vLLM, Ollama, llama.cpp, LM Studio).

    The model defaults to the server's first `/v1/models` entry (as ToG does for local servers);
    the API key (optional) comes from `api_key` or OPENAI_API_KEY and is sent as a Bearer token.
    HTTP goes through kgfed's `HttpClient` (retries, 429 Retry-After, per-host cap).
    """

    name = "openai"
    native_tools = True  # OpenAI's `tools`/`tool_calls`; LocalLLM (llama.cpp without --jinja) uses the text protocol

    def __init__(self, base_url: str, model: str | None = None, *, api_key: str | None = None,
                 client=None, timeout: float = 300.0, retries: int = LLM_RETRIES):
        super().__init__(model or "")
        if not base_url.startswith(("http://", "https://")):
            raise LLMError(f"{base_url!r} is not an http(s) URL: use --llm openai:http://HOST:PORT[#MODEL]")
        base = base_url.rstrip("/")
        self.base_url = base if base.endswith("/v1") else base + "/v1"
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.timeout = timeout
        self.retries = retries  # per call, also on the run's shared client (whose own retries are for KG queries)
        self._client = client
        self._owns_client = client is None
        self._model_lock = asyncio.Lock()

    @property
    def host(self) -> str:
        from urllib.parse import urlsplit

        return urlsplit(self.base_url).netloc.rpartition("@")[2]  # as HttpClient keys its hosts

    def describe(self) -> str:
        return f"the LLM server at {self.base_url}"

    def limit(self, concurrency: int | None) -> None:
        """The gate's cap, and the HTTP client's cap for the LLM's host raised to match (its default is 16)."""
        super().limit(concurrency)
        if concurrency and self._client is not None and hasattr(self._client, "set_limit"):
            self._client.set_limit(self.host, max(concurrency, self._client.limit_for(self.host)))

    def _http(self):
        if self._client is None:  # used outside a session (which hands in its client): a client of its own
            from ...endpoints.options import DEFAULT_PER_HOST, HttpOptions

            options = HttpOptions(timeout=self.timeout, retries=self.retries,
                                  per_host=max(DEFAULT_PER_HOST, self.gate.concurrency or 0))
            self._client = options.client()
        return self._client

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    async def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        url = self.base_url + path
        data = json.dumps(body).encode() if body is not None else None
        try:  # busy answers come back to the gate (shared pause); the client retries dropped connections and 5xx
            response = await self._http().request(method, url, data=data, headers=self._headers(), timeout=self.timeout,
                                                  retries=self.retries,
                                                  passthrough=BUSY_STATUSES)
        except EndpointError as exc:
            raise LLMError(f"the LLM server at {self.base_url} failed: {exc}; start it or fix the URL in --llm openai:URL") from None
        if response.status in BUSY_STATUSES:
            busy = busy_answer(response.status, response.headers, response.text(), self.describe())
            if busy is not None:
                raise busy
        if response.status >= 400:
            raise LLMError(f"{method} {url} answered HTTP {response.status}: {_error_message(response.text())}; "
                           "check the model name, key and request size")
        try:
            return json.loads(response.body)
        except ValueError:
            raise LLMError(f"{method} {url} returned malformed JSON: is this an OpenAI-compatible server?") from None

    async def resolve_model(self) -> str:
        """The configured model, or the server's first advertised model."""
        async with self._model_lock:
            if not self.model:
                listing = await self._call("GET", "/models")
                models: list[str] = [m["id"] for m in listing.get("data", []) if isinstance(m, dict) and m.get("id")]
                if not models:
                    raise LLMError(f"{self.base_url}/models lists no model: name one with --llm openai:URL#MODEL")
                self.model = models[0]
        return self.model

    async def _complete(self, prompt: str, *, temperature: float, max_tokens: int, system: str | None,
                        stop: list[str] | None = None) -> Completion:
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        text, _, usage = await self._send({"messages": messages}, temperature=temperature, max_tokens=max_tokens, stop=stop)
        return Completion(text, *usage)

    async def _chat(self, messages: list[Message], *, tools: list[dict[str, Any]], temperature: float, max_tokens: int,
                    stop: list[str] | None = None) -> Completion:
        """Native (`native_tools`): `tools` as functions, `tool_calls` back, results as `tool` messages. Else the
        text protocol of `llm_tools` over plain chat messages (a llama.cpp server without `--jinja`)."""
        if self.native_tools:
            text, calls, usage = await self._send(openai_request(messages, tools), temperature=temperature,
                                                  max_tokens=max_tokens, stop=stop)
            return Completion(text, *usage, calls)
        from .llm_tools import read_tool_calls

        text, _, usage = await self._send({"messages": chat_messages(messages, tools)}, temperature=temperature,
                                          max_tokens=max_tokens, stop=stop)
        return Completion(text, *usage, read_tool_calls(text))

    async def _send(self, request: dict[str, Any], *, temperature: float, max_tokens: int,
                    stop: list[str] | None) -> tuple[str, tuple, tuple[int, int]]:
        """One `/chat/completions` call: (text, tool calls, (prompt tokens, completion tokens))."""
        body = {"model": await self.resolve_model(), **request, "temperature": temperature, "max_tokens": max_tokens}
        if stop:
            body["stop"] = list(stop)
        reply = await self._call("POST", "/chat/completions", body)
        try:
            message = reply["choices"][0]["message"]
            text = message.get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            raise LLMError(f"{self.base_url}/chat/completions answered without choices[0].message: "
                           f"{first_line(json.dumps(reply))}") from None
        usage = reply.get("usage") or {}
        return text, openai_calls(message), (int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))

    async def aclose(self) -> None:
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None


def _error_message(body: str) -> str:
    """The `error.message` of an OpenAI-style error body, else its first line."""
    try:
        doc = json.loads(body)
        error = doc.get("error", doc) if isinstance(doc, dict) else doc
        message = error.get("message") if isinstance(error, dict) else error
        if message:
            return first_line(str(message))
    except ValueError:
        pass
    return first_line(body)
