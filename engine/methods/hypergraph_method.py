"""What the two hypergraph methods (INSES, PRoH) share: JSON replies from their prompts and the numbers in them."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..toolbox.llm import PRUNING_TEMPERATURE
from .base import Method
from .params import MethodParams, param

# a JSON reply ends at its closing fence (a small local model writes "```json ... ```" and then explains)
JSON_STOP = ("\n```\n",)


def numbers(value: Any, count: int) -> list[int]:
    """0-based indexes from "1, 3" / [1, 3] / "triplet 2", within 1..count."""
    found = re.findall(r"\d+", value if isinstance(value, str) else json.dumps(value))
    return list(dict.fromkeys(int(x) - 1 for x in found if 1 <= int(x) <= count))


@dataclass(frozen=True)
class HypergraphParams(MethodParams):
    """The parameters INSES and PRoH share: how a node is expanded and how each reply is capped."""

    hop_width: int | None = param(None, help="relations followed per entity when a node is expanded (None: all)")
    limit: int | None = param(None, help="neighbours kept per relation when a node is expanded (None: all)")
    max_tokens: int = param(512, help="reply cap per LLM call")
    stop_sequences: bool = param(False, help="cap each reply per prompt kind and end JSON replies at their fence")


class HypergraphMethod(Method):
    """A method over the hypergraph view of the KGs (`federation.hypergraph`) whose prompts ask for JSON."""

    params: HypergraphParams

    async def _ask(self, prompt: str, kind: str, temperature: float = PRUNING_TEMPERATURE, *, json_mode: bool = True) -> Any:
        """One LLM call (`Method.ask`): the reply's JSON object ({} and a parse fallback when it has none), or its
        text; `max_tokens` (512), or with `stop_sequences` the kind's cap and stop sequences."""
        return await self.ask(prompt, kind, temperature=temperature, json_mode=json_mode)
