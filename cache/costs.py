"""Per-task cost accounting: which queries, cache hits, LLM calls and tokens one question caused.

Many questions run concurrently over shared KGs and LLMs, so global counters cannot say what one
question cost. Each question runs inside `track()`; everything it awaits (tasks inherit the context)
charges its own counter through `charge()`:

    with track() as cost:
        await method.answer(question)
    cost["sparql_queries"], cost["cache_hits"], cost["llm_calls"], cost["input_tokens"]
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_current: ContextVar[Counter | None] = ContextVar("kgfed_costs", default=None)


def charge(name: str, amount: int | float = 1) -> None:
    """Add `amount` to the current question's counter (no-op outside `track()`)."""
    counter = _current.get()
    if counter is not None:
        counter[name] += amount  # type: ignore[assignment]  # seconds are float; typeshed types Counter values int


@contextmanager
def track() -> Iterator[Counter]:
    """Collect the charges of everything run inside this block (and tasks started from it)."""
    counter: Counter = Counter()
    token = _current.set(counter)
    try:
        yield counter
    finally:
        _current.reset(token)
