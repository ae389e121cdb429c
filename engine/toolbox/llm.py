"""LLM providers behind one async interface: Anthropic, OpenAI-compatible servers, replay/record, none.

    llm = make_llm("anthropic")                      # or "openai:http://localhost:8000#Qwen2-7B", "replay:DIR", "none"
    reply = await llm.complete(prompt, temperature=EXPLORATION_TEMPERATURE, max_tokens=256)
    reply.text, reply.input_tokens, reply.output_tokens, llm.usage

Every call is charged to the instance's `usage` and to the current question's cost counter
(`kgfed.cache.costs`: `llm_calls`, `input_tokens`, `output_tokens`). Provider SDKs are imported

Every provider sends through its `LLMGate` (`llm.gate`, module `llm_gate`): at most `concurrency`
calls in flight to the LLM for the whole run (`make_llm(spec, concurrency=N)`, the CLI's
`--llm-concurrency`), and the pauses a busy LLM asks for shared by every call.

This module is the front door: `make_llm` (a CLI spec to a provider), `ask` (one call for a method)
and `prompt_limits`. The parts live beside it, and every name is importable from here as before:
`llm_base` (the `LLM` interface, `Completion`, `Usage`, `NoLLM`, temperatures), `llm_gate` (the
gate and busy answers), `llm_providers` (Anthropic, OpenAI-compatible), `llm_replay` (replay/record).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...cache.costs import charge
from ...sparql.errors import LLMError
from .llm_base import (
    ANSWER_TEMPERATURE, DEFAULT_MAX_TOKENS, EXPLORATION_TEMPERATURE, LLM, PRUNING_TEMPERATURE, Completion, NoLLM,
    Usage, llm_ready,
)
from .llm_gate import BUSY_STATUSES, NOT_RETRYABLE, RETRY_STATUSES, Busy, LLMGate, T, busy_answer, log, retry_after
from .llm_providers import DEFAULT_ANTHROPIC_MODEL, AnthropicLLM, OpenAICompatibleLLM
from .llm_replay import ReplayLLM, prompt_key

__all__ = [
    "ANSWER_TEMPERATURE", "BUSY_STATUSES", "DEFAULT_ANTHROPIC_MODEL", "DEFAULT_MAX_TOKENS", "EXPLORATION_TEMPERATURE",
    "LLM", "NOT_RETRYABLE", "PRUNING_TEMPERATURE", "RETRY_STATUSES", "SPEC_HELP", "AnthropicLLM", "Busy", "Completion",
    "LLMGate", "NoLLM", "OpenAICompatibleLLM", "ReplayLLM", "Usage", "ask", "busy_answer", "llm_ready", "log", "make_llm",
    "prompt_key", "prompt_limits", "retry_after", "T",
]

SPEC_HELP = "use anthropic[:MODEL], openai:URL[#MODEL], local:PATH.gguf, replay:DIR, record:DIR:SPEC, gold (kgfed run) or none"


def prompt_limits(kind: str, table: Mapping[str, tuple[int, Sequence[str]]], *, enabled: bool, max_tokens: int) -> dict[str, Any]:
    """`max_tokens` (and `stop`) for one prompt kind of a method, as keyword arguments for `ask`.

    Off (`enabled` False, the default of every method's `stop_sequences` parameter): the method's
    `max_tokens` and no stop, as the papers' code sends, so replay keys stay those of older recordings.
    On: `min(max_tokens, cap)` and the kind's stop sequences from `table` (kind -> (cap, stops)), for a
    small local model that otherwise invents the next example and runs to the token limit.
    """
    if not enabled:
        return {"max_tokens": max_tokens}
    cap, stop = table[kind]
    return {"max_tokens": min(max_tokens, cap), "stop": list(stop) or None}


async def ask(llm: LLM, prompt: str, *, temperature: float, max_tokens: int = DEFAULT_MAX_TOKENS,
              stop: Sequence[str] | None = None, system: str | None = None, json_mode: bool = False) -> Any:
    """One LLM call for a method: the reply text, or with `json_mode` the reply's first JSON object.

    Accounting is `LLM.complete`'s (provider usage; the question's `llm_calls`/`input_tokens`/
    `output_tokens`). In JSON mode a reply without a readable object gives `{}` (each method then takes
    its paper's fallback) and adds 1 to the question's `cost["parse_fallbacks"]`; a reply cut at
    `max_tokens` inside the object keeps the fields written before the cut (`prompts.json_object`).
    """
    reply = await llm.complete(prompt, temperature=temperature, max_tokens=max_tokens, system=system,
                               stop=list(stop) if stop else None)
    if not json_mode:
        return reply.text
    from .prompts import json_object

    value = json_object(reply.text)
    if value is None:
        charge("parse_fallbacks")
        return {}
    return value


def make_llm(spec: str | None, *, client=None, concurrency: int | None = None) -> LLM:
    """Build a provider from a CLI spec: anthropic[:MODEL], openai:URL[#MODEL], local:PATH.gguf, replay:DIR, record:DIR:SPEC, none.

    `concurrency` caps the calls in flight to the LLM for everything sharing the provider (`LLM.limit`).
    """
    llm = _make_llm(spec, client=client)
    if concurrency is not None:
        llm.limit(concurrency)
    return llm


def _make_llm(spec: str | None, *, client=None) -> LLM:
    spec = (spec or "none").strip()
    kind, _, rest = spec.partition(":")
    kind = kind.lower()
    if kind == "none" and not rest:
        return NoLLM()
    if kind == "anthropic":
        return AnthropicLLM(rest or DEFAULT_ANTHROPIC_MODEL)
    if kind == "openai" and rest:
        url, _, model = rest.partition("#")
        return OpenAICompatibleLLM(url, model or None, client=client)  # the run's shared HttpClient, when given
    if kind == "local" and rest:
        from .local_llm import LocalLLM

        return LocalLLM(rest)
    if kind == "replay" and rest:
        return ReplayLLM(rest)
    if kind == "record":
        directory, _, inner = rest.partition(":")
        if not directory or not inner:
            raise LLMError(f"bad LLM spec {spec!r}: record needs a directory and a provider, e.g. record:replies:anthropic")
        return ReplayLLM(directory, record_with=make_llm(inner, client=client))
    if kind == "gold":  # the gold-guided stand-in (not a model): `kgfed run QUESTIONS --llm gold` gives gold:QUESTIONS
        from .gold_llm import GoldLLM

        return GoldLLM.from_file(rest)
    raise LLMError(f"unknown LLM spec {spec!r}: {SPEC_HELP}")
