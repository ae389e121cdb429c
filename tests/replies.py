"""Recorded LLM replies (ReplayLLM directories) and the cost a method run must show for them."""
from __future__ import annotations

import json
from pathlib import Path


def recorded_for(replies: Path, question: str) -> list[dict]:
    """The recorded replies in `replies` whose prompt asks `question` (each is replayed once per run)."""
    docs = [json.loads(p.read_text()) for p in replies.glob("*.json")]
    return [d for d in docs if question in d["prompt"]]


def assert_llm_cost(result, replies: Path, question: str) -> None:
    """LLM calls and tokens charged to `result` equal the recorded replies for `question`."""
    used = recorded_for(replies, question)
    assert result.cost["llm_calls"] == len(used)
    assert result.cost["input_tokens"] == sum(d["input_tokens"] for d in used)
    assert result.cost["output_tokens"] == sum(d["output_tokens"] for d in used)
