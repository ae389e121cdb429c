"""The interface every LLM provider implements, with its accounting: `LLM`, `Completion`, `Usage`, `NoLLM`.

`LLM.complete` is the one way a method's prompt reaches a model: it waits on the provider's
`LLMGate` (`llm_gate`), calls the provider's `_complete`, and charges the call to the instance's
`usage` and to the current question's cost counter (`kgfed.cache.costs`: `llm_calls`,
`input_tokens`, `output_tokens`). The temperatures and token cap the papers use live here too, so
providers and methods read them from one place. The providers themselves are in `llm_providers`
(Anthropic, OpenAI-compatible) and `llm_replay` (replay/record); `llm` builds them from a CLI spec.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ...cache.costs import charge
from ...sparql.errors import LLMError
from .llm_gate import LLMGate

# Temperatures the papers use: ToG/PoG/HydraRAG explore at 0.4 and reason (prune paths, judge
# sufficiency, answer) at 0; ToG-2 uses 0 throughout. ToG's own code also scores relations and
# entities at its exploration temperature (0.4).
EXPLORATION_TEMPERATURE = 0.4
PRUNING_TEMPERATURE = 0.0
ANSWER_TEMPERATURE = 0.0
DEFAULT_MAX_TOKENS = 256  # ToG's --max_length


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a reply: the provider's call id, the tool's name, and its arguments as the JSON text the
    model wrote (Anthropic's `input` object is serialised; a text-protocol call that was not JSON keeps its text)."""

    id: str
    name: str
    arguments: str

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class Message:
    """One chat message: `system`, `user`, `assistant` (its text and `tool_calls`) or `tool` (the result of the
    call `tool_call_id`; `is_error` when the call was refused). Providers turn these into their wire shapes."""

    role: str
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""
    is_error: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_json() for c in self.tool_calls]
        if self.role == "tool":
            out["tool_call_id"] = self.tool_call_id
            out["is_error"] = self.is_error
        return out

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Message:
        calls = tuple(ToolCall(str(c["id"]), str(c["name"]), str(c["arguments"])) for c in doc.get("tool_calls") or ())
        return cls(str(doc["role"]), str(doc.get("content") or ""), calls, str(doc.get("tool_call_id") or ""),
                   bool(doc.get("is_error")))


@dataclass(frozen=True)
class Completion:
    """One reply: its text, the tokens the provider counted, and (from `LLM.chat`) the tool calls it made."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    tool_calls: tuple[ToolCall, ...] = field(default=())


@dataclass
class Usage:
    """Running totals of one provider instance; `snapshot()`/`since()` give per-question deltas."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, completion: Completion) -> None:
        self.calls += 1
        self.input_tokens += completion.input_tokens
        self.output_tokens += completion.output_tokens

    def snapshot(self) -> Usage:
        return replace(self)

    def since(self, earlier: Usage) -> Usage:
        return Usage(self.calls - earlier.calls, self.input_tokens - earlier.input_tokens,
                     self.output_tokens - earlier.output_tokens)

    def reset(self) -> None:
        self.calls = self.input_tokens = self.output_tokens = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


class LLM(ABC):
    """The interface methods use. `available` is False for the LLM-free provider."""

    name = "llm"
    available = True
    native_tools = False  # whether `_chat` sends tools in the provider's own request shape (else the text protocol)

    def __init__(self, model: str = ""):
        self.model = model
        self.usage = Usage()
        self.gate = LLMGate()

    def limit(self, concurrency: int | None) -> None:
        """Cap the calls in flight to this LLM at `concurrency` for everything that shares the provider
        (a run's questions; `--llm-concurrency`). Set it before the first call."""
        self.gate = LLMGate(concurrency)

    def describe(self) -> str:
        """The LLM as messages name it."""
        return f"the {self.name} LLM" + (f" ({self.model})" if self.model else "")

    async def complete(self, prompt: str, *, temperature: float, max_tokens: int = DEFAULT_MAX_TOKENS,
                       system: str | None = None, stop: list[str] | None = None) -> Completion:
        """Send one user prompt (plus an optional system message) and return the reply.

        `stop` sequences end the reply early (a small model otherwise invents the next "Q: ..." and
        runs to `max_tokens`); providers that take none ignore it, and it is passed on only when given.
        The call waits for a place under the gate's cap and for any pause the LLM asked for (`LLMGate`).
        """
        extra = {"stop": list(stop)} if stop else {}
        completion = await self.gate.call(lambda: self._complete(prompt, temperature=float(temperature),
                                                                 max_tokens=max_tokens, system=system, **extra),
                                          self.describe())
        self.usage.add(completion)
        charge("llm_calls")
        charge("input_tokens", completion.input_tokens)
        charge("output_tokens", completion.output_tokens)
        return completion

    @abstractmethod
    async def _complete(self, prompt: str, *, temperature: float, max_tokens: int, system: str | None) -> Completion:
        """The provider call itself, without accounting."""

    async def chat(self, messages: Sequence[Message], *, tools: Sequence[Mapping[str, Any]] = (), temperature: float,
                   max_tokens: int = DEFAULT_MAX_TOKENS, stop: list[str] | None = None) -> Completion:
        """Send a conversation with the tools the model may call; the reply's text and `tool_calls`.

        `tools` are provider-neutral declarations {name, description, parameters (a JSON schema)}. Providers
        with native tool calling (`native_tools`: Anthropic, OpenAI-compatible) send them in their own request
        shape; the others use the text protocol of `llm_tools` (tools in the system message, calls written as
        `<tool_call>{...}</tool_call>`, results as `<tool_response>`). Gate and accounting as `complete`.
        """
        extra = {"stop": list(stop)} if stop else {}
        completion = await self.gate.call(lambda: self._chat(list(messages), tools=[dict(t) for t in tools],
                                                              temperature=float(temperature), max_tokens=max_tokens,
                                                              **extra), self.describe())
        self.usage.add(completion)
        charge("llm_calls")
        charge("input_tokens", completion.input_tokens)
        charge("output_tokens", completion.output_tokens)
        return completion

    async def _chat(self, messages: list[Message], *, tools: list[dict[str, Any]], temperature: float,
                    max_tokens: int, stop: list[str] | None = None) -> Completion:
        """The provider's chat call without accounting. By default the text protocol over `_complete`: the whole
        conversation as one prompt (`llm_tools.as_prompt`), the reply's `<tool_call>` blocks read back."""
        from .llm_tools import as_prompt, read_tool_calls

        system, prompt = as_prompt(messages, tools)
        extra = {"stop": list(stop)} if stop else {}
        reply = await self._complete(prompt, temperature=temperature, max_tokens=max_tokens, system=system, **extra)
        return replace(reply, tool_calls=read_tool_calls(reply.text))

    async def aclose(self) -> None:  # noqa: B027 (a no-op default on purpose: not every provider holds connections)
        """Release connections (no-op by default)."""

    async def __aenter__(self) -> LLM:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}:{self.model}>"


def llm_ready(llm: LLM | None) -> bool:
    """Whether `llm` answers: False without one and for `NoLLM` (then methods run LLM-free). The one test of it."""
    return llm is not None and bool(getattr(llm, "available", False))


class NoLLM(LLM):
    """The LLM-free provider: `available` is False and `complete` raises; methods fall back to SBERT/BM25."""

    name = "none"
    available = False

    async def _complete(self, prompt: str, *, temperature: float, max_tokens: int, system: str | None, **_) -> Completion:
        raise LLMError("this step needs an LLM but none is configured (--llm none): "
                       "pass --llm anthropic, openai:URL[#MODEL] or replay:DIR, or use an LLM-free method (sbert/bm25)")
