"""The response cache's writer thread batches a burst of answers into one transaction, and closing the cache
commits what is queued at once: `close()` never waits out the writer's linger (issue 32, the critical path)."""
from __future__ import annotations

import time

from kgfed.cache.responses import ResponseCache
from kgfed.sparql.results import SelectResult, Term


def answer(i: int) -> SelectResult:
    return SelectResult(["x"], [{"x": Term("uri", f"http://x/{i}")}])


def test_close_commits_the_queue_without_waiting_out_the_linger(tmp_path):
    cache = ResponseCache(tmp_path, linger=60.0)  # the writer would sleep a minute before committing
    for i in range(5):
        cache.set(f"k{i}", answer(i))
    writer = cache._writer
    assert writer is not None and writer.is_alive() and cache.stats["written"] == 0
    started = time.monotonic()
    cache.close()
    assert time.monotonic() - started < 30  # not the 60 s linger: close cut it short (a hang guard, not a speed goal)
    assert not writer.is_alive() and cache.stats["written"] == 5 and cache.stats["transactions"] == 1
    again = ResponseCache(tmp_path)
    try:
        assert [again.get(f"k{i}") for i in range(5)] == [answer(i) for i in range(5)]
    finally:
        again.close()


def test_a_burst_of_answers_is_still_one_transaction(tmp_path):
    cache = ResponseCache(tmp_path, linger=2.0)
    try:
        for i in range(50):
            cache.set(f"k{i}", answer(i))
        deadline = time.monotonic() + 60
        while cache.stats["written"] < 50 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert cache.stats["written"] == 50 and cache.stats["transactions"] == 1  # the linger gathered them
        assert cache.get("k49") == answer(49)
    finally:
        cache.close()
