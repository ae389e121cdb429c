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
from ...sparql.registry import Registry, reference
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
    "LLMGate", "NoLLM", "OpenAICompatibleLLM", "PROVIDERS", "ReplayLLM", "Usage", "ask", "busy_answer", "llm_ready", "log", "make_llm",
    "build_provider", "prompt_key", "prompt_limits", "retry_after", "T",
]

SPEC_HELP = ("use anthropic[:MODEL], openai:URL[#MODEL], local:PATH.gguf, replay:DIR, record:DIR:SPEC, gold (kgfed run), none, "
             "a provider registered in the entry-point group kgfed.llm, or package.module:Class[:ARG]")


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


def make_llm(spec: str | LLM | None, *, client: Any = None, concurrency: int | None = None) -> LLM:
    """Build a provider from a CLI spec, `NAME[:REST]` (anthropic[:MODEL], openai:URL[#MODEL], local:PATH.gguf,
    replay:DIR, record:DIR:SPEC, gold:QUESTIONS, none, or a provider another package registered) or
    `package.module:Class[:REST]`; an `LLM` object is used as it is.

    `concurrency` caps the calls in flight to the LLM for everything sharing the provider (`LLM.limit`).
    """
    llm = spec if isinstance(spec, LLM) else _make_llm(spec, client=client)
    if concurrency is not None:
        llm.limit(concurrency)
    return llm


def _make_llm(spec: str | None, *, client: Any = None) -> LLM:
    spec = (spec or "none").strip()
    name, _, rest = spec.partition(":")
    if name.lower() in PROVIDERS.entries:
        factory, name = PROVIDERS.get(name.lower()), name.lower()
    elif "." in name and reference(f"{name}:{rest.partition(':')[0]}"):  # package.module:Class[:REST]
        attr, _, rest = rest.partition(":")
        factory = PROVIDERS.load(f"{name}:{attr}")
    elif name in PROVIDERS:  # an entry point of the group `kgfed.llm`
        factory = PROVIDERS.get(name)
    else:
        raise LLMError(f"unknown LLM spec {spec!r}: {SPEC_HELP}")
    llm = build_provider(factory, rest, client=client)
    if not isinstance(llm, LLM):
        raise LLMError(f"LLM spec {spec!r} made a {type(llm).__name__}, not an LLM: a provider subclasses "
                       "kgfed.engine.toolbox.llm_base.LLM")
    return llm


def build_provider(factory: Any, rest: str, *, client: Any = None) -> Any:
    """A provider from its registered factory: a class with a `from_spec(REST, client=)` classmethod, a class
    built as `Class(REST)` (`Class()` when the spec has nothing after its name), or a function `f(REST, client=)`."""
    if hasattr(factory, "from_spec"):
        return factory.from_spec(rest, client=client)
    if isinstance(factory, type):
        return factory(rest) if rest else factory()
    return factory(rest, client=client)


def _none(rest: str, *, client: Any = None) -> LLM:
    if rest:
        raise LLMError(f"unknown LLM spec 'none:{rest}': {SPEC_HELP}")
    return NoLLM()


def _anthropic(rest: str, *, client: Any = None) -> LLM:
    return AnthropicLLM(rest or DEFAULT_ANTHROPIC_MODEL)


def _openai(rest: str, *, client: Any = None) -> LLM:
    if not rest:
        raise LLMError(f"unknown LLM spec 'openai': {SPEC_HELP}")
    url, _, model = rest.partition("#")
    return OpenAICompatibleLLM(url, model or None, client=client)  # the run's shared HttpClient, when given


def _local(rest: str, *, client: Any = None) -> LLM:
    if not rest:
        raise LLMError(f"unknown LLM spec 'local': {SPEC_HELP}")
    from .local_llm import LocalLLM

    return LocalLLM(rest)


def _replay(rest: str, *, client: Any = None) -> LLM:
    if not rest:
        raise LLMError(f"unknown LLM spec 'replay': {SPEC_HELP}")
    return ReplayLLM(rest)


def _record(rest: str, *, client: Any = None) -> LLM:
    directory, _, inner = rest.partition(":")
    if not directory or not inner:
        raise LLMError(f"bad LLM spec 'record:{rest}': record needs a directory and a provider, e.g. record:replies:anthropic")
    return ReplayLLM(directory, record_with=make_llm(inner, client=client))


def _gold(rest: str, *, client: Any = None) -> LLM:
    """The gold-guided stand-in (not a model): `kgfed run QUESTIONS --llm gold` gives gold:QUESTIONS."""
    from .gold_llm import GoldLLM

    return GoldLLM.from_file(rest)


# provider name -> factory (`build_provider`); another package adds one with an entry point in the group
# `kgfed.llm` (`NAME = "pkg.mod:Class"`) or `PROVIDERS.register(NAME, ...)`; `--llm NAME[:REST]` then builds it
PROVIDERS: Registry[Any] = Registry("LLM provider", "kgfed.llm", {
    "none": _none, "anthropic": _anthropic, "openai": _openai, "local": _local, "replay": _replay,
    "record": _record, "gold": _gold,
}, error=LLMError, hint=", or package.module:Class")
