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
from dataclasses import asdict, dataclass, replace

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
class Completion:
    """One reply: its text and the tokens the provider counted."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0


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
