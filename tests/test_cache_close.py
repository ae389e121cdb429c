"""The response cache's writer thread batches a burst of answers into one transaction, and closing the cache
commits what is queued at once: `close()` never waits out the writer's linger; a new root's store is made in a
thread while the first queries go out, and a root that cannot be made still fails in one line (issue 32, the
critical path)."""
from __future__ import annotations

import time

import pytest

from kgfed.cache.responses import ResponseCache
from kgfed.cache.root import CacheError
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


def test_a_new_root_is_made_off_the_callers_path_and_keeps_every_answer(tmp_path):
    root = tmp_path / "new"
    cache = ResponseCache(root)  # returns before the store is made (in a thread); reads meanwhile are misses
    assert cache.directory == root / "responses" and cache.get("k0") is None
    for i in range(3):
        cache.set(f"k{i}", answer(i))  # the first write waits for the store
    assert cache.get("k2") == answer(2)
    cache.close()
    again = ResponseCache(root)  # an existing root: opened at once, as before
    try:
        assert again._opening is None and [again.get(f"k{i}") for i in range(3)] == [answer(i) for i in range(3)]
    finally:
        again.close()


def test_a_new_root_that_cannot_be_made_fails_at_once_or_at_the_first_write_in_one_line(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(CacheError, match=r"^cannot open the cache at .*a-file/cache/responses \(.*--no-cache"):
        ResponseCache(blocker / "cache")  # a file in the way: opened (and failing) at once, as before
    # A store that fails only once it is being made (here a dangling link where its directory goes): the
    # first answer stored, and any read after, raise the open's one line (never a silent miss).
    root = tmp_path / "root"
    root.mkdir()
    (root / "responses").symlink_to(tmp_path / "nowhere" / "at-all")
    cache = ResponseCache(root)
    assert cache._opening is not None and cache._opening.exception(timeout=60) is not None
    with pytest.raises(CacheError, match=r"^cannot open the cache at .*root/responses \(.*--no-cache"):
        cache.set("k", answer(1))
    with pytest.raises(CacheError, match="cannot open the cache"):
        cache.get("k")
    cache.close()  # never raises for the store
