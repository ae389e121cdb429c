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

The work a question made (issue 39), beside what it asked: `kg_request()` wraps every request sent past the
cache (cache.responses) and counts its `dependent_rounds`, the longest chain of KG requests the question waited
for one after another: a round starts when the question sends a request while none of its requests is in
flight, and lasts until none is (requests sent while one is in flight overlap it: they cost no further round
trip). `kg_wait_seconds` is the time the question had at least one request in flight (its critical KG time, where
`kg_seconds` sums overlapping requests). The sentence encoder charges `texts_encoded`, `tokens_encoded` (real),
`tokens_padded` (what its forward passes computed), `encoder_passes` and `encoder_cpu_seconds` (the CPU time of
the threads that ran them) to the question whose call encoded them (a text another question was already
encoding is that question's work).
"""
from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar


class Cost(Counter):
    """One question's counters, and its KG requests in flight (`kg_request`: not a counter, not written out)."""

    in_flight = 0
    round_started = 0.0


_current: ContextVar[Counter | None] = ContextVar("kgfed_costs", default=None)
_charging = threading.Lock()


def charge(name: str, amount: int | float = 1) -> None:
    """Add `amount` to the current question's counter (no-op outside `track()`)."""
    charge_to(_current.get(), name, amount)


def current_cost() -> Counter | None:
    """The current question's counter (None outside `track()`), for `charge_to` from elsewhere."""
    return _current.get()


def charge_to(counter: Counter | None, name: str, amount: int | float = 1) -> None:
    """Add `amount` to `counter` (a question's, from `current_cost`; None: nothing), from any thread."""
    if counter is not None:
        with _charging:  # the encoder charges from its threads
            counter[name] += amount  # type: ignore[assignment]  # seconds are float; typeshed types Counter values int


@contextmanager
def track() -> Iterator[Counter]:
    """Collect the charges of everything run inside this block (and tasks started from it)."""
    counter: Counter = Cost()
    token = _current.set(counter)
    try:
        yield counter
    finally:
        _current.reset(token)


@contextmanager
def kg_request() -> Iterator[None]:
    """Around one request sent to a KG (past the cache): counts the question's `dependent_rounds` and
    `kg_wait_seconds` (see the module docstring). A no-op outside `track()`; on the event loop's thread only."""
    counter = _current.get()
    if not isinstance(counter, Cost):
        yield
        return
    if counter.in_flight == 0:
        counter["dependent_rounds"] += 1
        counter.round_started = time.perf_counter()
    counter.in_flight += 1
    try:
        yield
    finally:
        counter.in_flight -= 1
        if counter.in_flight == 0:
            waited = round(counter["kg_wait_seconds"] + time.perf_counter() - counter.round_started, 6)
            counter["kg_wait_seconds"] = waited  # type: ignore[assignment]  # seconds are float (see charge_to)


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
    "dependent_rounds": ("dependent_rounds",),
    "kg_wait_seconds": ("kg_wait_seconds",),
    "texts_encoded": ("texts_encoded",),
    "tokens_encoded": ("tokens_encoded",),
    "tokens_padded": ("tokens_padded",),
    "encoder_cpu_seconds": ("encoder_cpu_seconds",),
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
    requests above the hop floor, and its work: dependent rounds, KG wait seconds, texts and tokens encoded (real
    and padded), encoder CPU seconds; from a run's summed counters."""
    if questions <= 0:
        return {name: 0.0 for name in HEADLINE}
    return {name: round(sum(cost.get(k, 0) for k in keys) / questions, 4) for name, keys in HEADLINE.items()}
