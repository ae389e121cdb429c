"""Per-task cost accounting: which queries, cache hits, LLM calls and tokens one question caused.

Many questions run concurrently over shared KGs and LLMs, so global counters cannot say what one
question cost. Each question runs inside `track()`; everything it awaits (tasks inherit the context)
charges its own counter through `charge()`:

    with track() as cost:
        await method.answer(question)
    cost["sparql_queries"], cost["cache_hits"], cost["llm_calls"], cost["input_tokens"]

`headline` turns a run's summed counters into the cost of a question as users compare it (issue 37: LLM
calls, tokens, tool calls, SPARQL requests, KG seconds, wall seconds, requests above the hop floor of
`hop_floor`, two a hop).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
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


# -- the cost of a question as a headline (README's table, the run summary) ----------------------------------
REQUESTS_PER_HOP = 2  # the floor: a hop needs at least its relations and its neighbours asked
# headline figure -> the counter(s) it sums
HEADLINE: dict[str, tuple[str, ...]] = {
    "llm_calls": ("llm_calls",),
    "tokens": ("input_tokens", "output_tokens"),
    "tool_calls": ("tool_calls",),
    "sparql_requests": ("sparql_queries",),
    "requests_sent": ("requests_sent",),
    "kg_seconds": ("kg_seconds",),
    "seconds": ("seconds",),
    "above_hop_floor": ("above_hop_floor",),
}


def hop_floor(cost: Mapping[str, float], hops: int) -> dict[str, float]:
    """One question's `hops` and `above_hop_floor`: its SPARQL requests (`sparql_queries`, every one the method
    asked, cache hits included, so a warm cache does not hide them) beyond two a hop, at least 0.

    `hops` is the longest chain the method walked to its answer (a path's edges; the agent's hop-walking turns)."""
    hops = max(0, int(hops))
    return {"hops": hops, "above_hop_floor": max(0, cost.get("sparql_queries", 0) - REQUESTS_PER_HOP * hops)}


def headline(cost: Mapping[str, float], questions: int) -> dict[str, float]:
    """Per question: LLM calls, tokens, tool calls, SPARQL requests (asked; `requests_sent`: sent past the cache),
    KG seconds (the seconds of the requests it sent, `cache.responses`, summed over concurrent ones), wall seconds,
    and requests above the hop floor; from a run's summed counters."""
    if questions <= 0:
        return {name: 0.0 for name in HEADLINE}
    return {name: round(sum(cost.get(k, 0) for k in keys) / questions, 4) for name, keys in HEADLINE.items()}
