"""Record and replay: LLM replies kept as `<sha256>.json` files, named by what was asked.

`prompt_key` names a reply by its prompt, system message, temperature and stop sequences (not the
model), so a recorded run replays byte for byte and offline. A tool conversation (`LLM.chat`) is named by
`chat_key` (messages, tools, temperature, stop) and its file keeps the reply's tool calls. `ReplayLLM` answers from the files
(`--llm replay:DIR`) or, given a provider, records what it does not have yet (`--llm record:DIR:SPEC`).
"""
from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ...sparql.errors import LLMError
from .llm_base import LLM, Completion, Message, NoLLM, ToolCall


def prompt_key(prompt: str, *, system: str | None, temperature: float, stop: list[str] | None = None) -> str:
    """sha256 naming a recorded reply: the prompt, system message, temperature and stop sequences (not the model).

    Stop sequences enter the key only when given, so recordings made without them keep their names.
    """
    fields: dict[str, Any] = {"prompt": prompt, "system": system, "temperature": float(temperature)}
    if stop:
        fields["stop"] = list(stop)
    payload = json.dumps(fields, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def chat_key(messages: list[Message], *, tools: list[dict[str, Any]], temperature: float,
             stop: list[str] | None = None) -> str:
    """sha256 naming a recorded chat reply: the messages (tool calls and results included), the tools' declarations
    (their `x-kgfed` hints too), temperature and stop sequences (not the model)."""
    fields: dict[str, Any] = {"messages": [m.to_json() for m in messages], "tools": tools, "temperature": float(temperature)}
    if stop:
        fields["stop"] = list(stop)
    payload = json.dumps(fields, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ReplayLLM(LLM):
    """Replies recorded as `<sha256>.json` files in a directory.

    Replay only (`record_with=None`): a prompt without a file raises `LLMError` naming its hash.
    Record (`record_with=provider`): files that exist are replayed, misses go to the provider and
    are written. Recorded token counts are charged again on replay, so costs stay comparable.
    """

    name = "replay"

    def __init__(self, directory: str | os.PathLike, *, record_with: LLM | None = None):
        if isinstance(record_with, (ReplayLLM, NoLLM)):
            raise LLMError("record needs a real provider to record from: use record:DIR:anthropic or record:DIR:openai:URL")
        super().__init__(record_with.model if record_with else "replay")
        self.directory = Path(directory)
        self.inner = record_with
        if record_with is None and not self.directory.is_dir():
            raise LLMError(f"replay directory {self.directory} does not exist: record replies first with "
                           f"--llm record:{self.directory}:<provider spec>")
        if record_with is not None:
            self.name = "record"
            self.directory.mkdir(parents=True, exist_ok=True)
        self.stats: Counter[str] = Counter()

    def path_for(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    async def _complete(self, prompt: str, *, temperature: float, max_tokens: int, system: str | None,
                        stop: list[str] | None = None) -> Completion:
        extra = {"stop": list(stop)} if stop else {}
        key = prompt_key(prompt, system=system, temperature=temperature, stop=stop)
        return await self._replayed(key, "prompt", {"prompt": prompt, "system": system}, temperature, max_tokens, extra,
                                    lambda inner: inner._complete(prompt, temperature=temperature, max_tokens=max_tokens,
                                                                  system=system, **extra))

    async def _chat(self, messages: list[Message], *, tools: list[dict[str, Any]], temperature: float, max_tokens: int,
                    stop: list[str] | None = None) -> Completion:
        """A tool conversation's reply from `<chat_key>.json` (its text and tool calls), or recorded from the provider
        (in the provider's own protocol: native tool calling or the text one)."""
        extra = {"stop": list(stop)} if stop else {}
        key = chat_key(messages, tools=tools, temperature=temperature, stop=stop)
        asked = {"messages": [m.to_json() for m in messages], "tools": tools}
        return await self._replayed(key, "conversation", asked, temperature, max_tokens, extra,
                                    lambda inner: inner._chat(messages, tools=tools, temperature=temperature,
                                                              max_tokens=max_tokens, **extra))

    async def _replayed(self, key: str, what: str, asked: dict[str, Any], temperature: float, max_tokens: int,
                        extra: dict[str, Any], call: Callable[[LLM], Awaitable[Completion]]) -> Completion:
        """The recording `key`, else (recording) the provider's reply to `call`, written with what was `asked`."""
        path = self.path_for(key)
        if path.is_file():
            self.stats["hits"] += 1
            return _read_recording(path)
        self.stats["misses"] += 1
        if self.inner is None:
            raise LLMError(f"no recorded LLM reply for {what} {key} in {self.directory}: record it with "
                           f"--llm record:{self.directory}:<provider spec> (e.g. record:{self.directory}:anthropic)")
        inner = self.inner
        completion = await inner.gate.call(lambda: call(inner), inner.describe())
        calls = {"tool_calls": [c.to_json() for c in completion.tool_calls]} if "messages" in asked else {}
        record = {"key": key, **asked, "temperature": temperature, "max_tokens": max_tokens, **extra,
                  "provider": inner.name, "model": inner.model, "text": completion.text, **calls,
                  "input_tokens": completion.input_tokens, "output_tokens": completion.output_tokens}
        self._write(path, record)
        return completion

    def _write(self, path: Path, record: dict[str, Any]) -> None:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        self.stats["recorded"] += 1

    def limit(self, concurrency: int | None) -> None:
        """Replayed replies are read at once; the cap is the recorded provider's (its misses)."""
        if self.inner is not None:
            self.inner.limit(concurrency)

    async def aclose(self) -> None:
        if self.inner is not None:
            await self.inner.aclose()


def _read_recording(path: Path) -> Completion:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        calls = tuple(ToolCall(str(c["id"]), str(c["name"]), str(c["arguments"])) for c in doc.get("tool_calls") or ())
        return Completion(str(doc["text"]), int(doc.get("input_tokens", 0)), int(doc.get("output_tokens", 0)), calls)
    except (ValueError, KeyError, TypeError):
        raise LLMError(f"recorded reply {path} is malformed (needs a 'text' field): delete it and record again") from None
