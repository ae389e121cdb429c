"""The secondary stores on a full disk behave as the response cache does: one warning line naming the
problem and the fix, the store switched off for the rest of the run, the question still answered.

Tested on a real full file system (a tmpfs of 800 KB, as tests/test_disk_full.py: root only, else skipped):
the Wikipedia-text store, the alignment store, the embeddings store a session hands out, and a store first
opened after the disk filled up. `FailSafeStore` is the one mechanism (`cache.failsafe`)."""
from __future__ import annotations

import logging
import os

import pytest

from kgfed.cache.alignments import AlignmentCache
from kgfed.cache.failsafe import FailSafeStore, open_failsafe
from kgfed.cache.recording import recording
from kgfed.cache.root import DiskStore, StoreClosed
from kgfed.cache.vectors import VectorStore
from kgfed.endpoints.client import HttpClient
from kgfed.engine.config import AlignOptions, CacheOptions, KGSpec
from kgfed.engine.data import DEMO_WIKIDATA
from kgfed.engine.session import Session, SessionSpec

from .conftest import HTTP_DIR, need
from .test_disk_full import tiny_disk  # noqa: F401 - the fixture: a real 800 KB tmpfs

API = HTTP_DIR / "wikipedia-api"
PYTHON = "Python_(programming_language)"
CASSETTE = "TestVcrAsyncWikiExtracts.test_extracts.json"


def fill(disk) -> None:
    """Take every free byte of the tiny disk (unbuffered writes: nothing is left to flush on close)."""
    fd = os.open(disk.path / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError:
        pass
    finally:
        os.close(fd)
    assert os.statvfs(disk.path).f_bavail == 0


def cache_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "kgfed.cache" and r.levelno == logging.WARNING]


async def test_a_full_disk_under_the_text_store_still_answers_the_page(tiny_disk, caplog):
    root = tiny_disk.path / "cache"
    client = HttpClient(retries=1, backoff=0.01)
    async with client, Session(SessionSpec(cache=CacheOptions(root=str(root)), text="wikipedia", maxlag=None), client=client) as session:
        source = session.text
        store = session.store("text")
        assert isinstance(store, FailSafeStore) and isinstance(store.inner, DiskStore) and source.cache._cache is store
        store.set("probe", b"written while there is room")
        assert store.get("probe") == b"written while there is room"
        fill(tiny_disk)
        with caplog.at_level(logging.WARNING, logger="kgfed.cache"), recording(need(API / CASSETTE)) as cassette:
            page = (await source.pages([PYTHON]))[PYTHON]
        assert cassette.play_count == 1  # fetched once, from the (recorded) API
        assert page.exists and page.reason is None and page.text.startswith("Python is a high-level")  # answered
        warnings = cache_warnings(caplog)
        assert len(warnings) == 1, warnings
        assert warnings[0].startswith(f"kgfed: warning: cannot write the cache at {root}/wikipedia (")
        assert "disk is full" in warnings[0] or "No space left" in warnings[0]
        assert "free space" in warnings[0] and "--cache-dir" in warnings[0] and "--no-cache" in warnings[0]
        assert "this run goes on without storing new Wikipedia pages" in warnings[0]
        assert store.write_failed and store.read_failed is None
        store.set("more", b"x" * 100_000)  # switched off: no second attempt, no second warning
        assert store.get("more") is None and store.get("probe") == b"written while there is room"
        assert len(cache_warnings(caplog)) == 1


async def test_a_full_disk_under_the_alignment_store_still_aligns(tiny_disk, caplog):
    kgs = [KGSpec("wikidata", f"file:{need(DEMO_WIKIDATA)}"), KGSpec("freebase")]
    async with Session(SessionSpec(kgs=kgs, cache=CacheOptions(root=str(tiny_disk.path / "cache")))) as session:
        aligner = session.aligner(AlignOptions(methods=("p646", "label")))
        assert aligner.cache._cache is session.store("alignments")
        fill(tiny_disk)
        with caplog.at_level(logging.WARNING, logger="kgfed.cache"):
            found = await aligner.align(["Q42"])
            again = await aligner.align(["Q42"])
    assert [a.target for a in found["Q42"]] == ["m.0282x"] == [a.target for a in again["Q42"]]
    warnings = [w for w in cache_warnings(caplog) if "/alignments" in w]
    assert len(warnings) == 1 and "without storing new alignments" in warnings[0] and "--cache-dir" in warnings[0]


def test_the_alignment_cache_on_its_own_store_is_failsafe_too(tiny_disk, caplog):
    cache = AlignmentCache(tiny_disk.path / "alignments")
    cache.set("a", {"target": "Q1"})
    assert cache.get("a") == {"target": "Q1"} and cache.directory == tiny_disk.path / "alignments"
    fill(tiny_disk)
    with caplog.at_level(logging.WARNING, logger="kgfed.cache"):
        for i in range(200):
            cache.set(f"k{i}", {"target": f"Q{i}", "pad": "x" * 2000})
    assert cache.get("a") == {"target": "Q1"} and len(cache_warnings(caplog)) == 1


def test_a_full_disk_under_a_sessions_vector_store_keeps_the_vectors(tiny_disk, caplog):
    """The session's `embeddings` store (what the embedder writes through `VectorStore`): `add_many` on a full
    disk returns the vectors given, with one warning, and reads go on."""
    import asyncio

    async def go():
        async with Session(SessionSpec(cache=CacheOptions(root=str(tiny_disk.path / "cache")))) as session:
            vectors = VectorStore(session.store("embeddings"), owned=False)
            assert vectors.add_many("m", [("first", b"\1" * 1536)]) == [b"\1" * 1536]
            fill(tiny_disk)
            with caplog.at_level(logging.WARNING, logger="kgfed.cache"):
                pairs = [(f"text {i}", bytes([i % 256]) * 1536) for i in range(300)]
                assert vectors.add_many("m", pairs) == [v for _, v in pairs]
                assert vectors.get_many("m", ["first", "text 1"]) == {"first": b"\1" * 1536}
                assert vectors.load_all("m", 1000) == {"first": b"\1" * 1536}
            return cache_warnings(caplog)

    warnings = asyncio.run(go())
    assert len(warnings) == 1 and "/embeddings" in warnings[0] and "without storing new sentence vectors" in warnings[0]


def test_a_store_first_opened_on_a_full_disk_is_one_warning(tiny_disk, caplog):
    fill(tiny_disk)
    with caplog.at_level(logging.WARNING, logger="kgfed.cache"):
        store = open_failsafe(str(tiny_disk.path), "text")
        store.set("k", b"v")
        assert store.get("k") is None and len(store) == 0 and list(store.keys()) == []
        store.close()
    warnings = cache_warnings(caplog)
    assert len(warnings) == 1 and warnings[0].startswith(f"kgfed: warning: cannot open the cache at {tiny_disk.path}/wikipedia (")
    assert "--cache-dir" in warnings[0] and store.write_failed and store.inner is None


async def test_a_session_store_opened_after_the_disk_filled_up(tiny_disk, caplog):
    async with Session(SessionSpec(cache=CacheOptions(root=str(tiny_disk.path / "cache")))) as session:
        fill(tiny_disk)
        with caplog.at_level(logging.WARNING, logger="kgfed.cache"):
            store = session.store("alignments")
            cache = AlignmentCache(store=store)
            cache.set("k", {"target": "Q1"})
            assert cache.get("k") is None
        assert len(cache_warnings(caplog)) == 1


def test_a_closed_store_still_raises_closed(tmp_path):
    """Closing is a shutdown, not a failing disk: users that treat it as such (the embedder) still hear it."""
    store = FailSafeStore(DiskStore(tmp_path / "s"), "embeddings")
    store.close()
    with pytest.raises(StoreClosed):
        store.get("k")
    assert store.write_failed is None and store.read_failed is None


async def test_a_runs_own_embeddings_directory_on_a_full_disk_is_one_warning(tiny_disk, caplog):
    """`kgfed run` pins the vectors to a directory (`RunSpec.embeddings_dir`): the session opens it as a guarded
    store when the embedder is first made, so a disk already full then is one warning, not a failed question."""
    directory = tiny_disk.path / "cache" / "embeddings"
    async with Session(SessionSpec(cache=CacheOptions(root=str(tiny_disk.path / "cache")), embeddings=str(directory))) as session:
        fill(tiny_disk)
        with caplog.at_level(logging.WARNING, logger="kgfed.cache"):
            store = session._embeddings_location()
            assert session._embeddings_location() is store  # opened once
            vectors = VectorStore(store, owned=False)
            assert vectors.add_many("m", [("a", b"\2" * 1536)]) == [b"\2" * 1536] and vectors.get_many("m", ["a"]) == {}
    warnings = cache_warnings(caplog)
    assert len(warnings) == 1 and warnings[0].startswith(f"kgfed: warning: cannot open the cache at {directory} (")
    assert "--cache-dir" in warnings[0] and isinstance(store, FailSafeStore) and store.inner is None


async def test_a_runs_own_embeddings_directory_with_room_keeps_the_vectors(tmp_path):
    directory = tmp_path / "emb"
    async with Session(SessionSpec(cache=CacheOptions(root=str(tmp_path / "cache")), embeddings=str(directory))) as session:
        vectors = VectorStore(session._embeddings_location(), owned=False)
        vectors.add_many("m", [("a", b"\3" * 1536)])
    assert VectorStore(DiskStore(directory)).get_many("m", ["a"]) == {"a": b"\3" * 1536}  # closed, kept on disk


def test_the_drop_ins_cache_on_a_full_disk_warns_once_and_stops_storing(tiny_disk):
    """The SPARQLWrapper drop-in's document cache: a batch that cannot be stored is one warning, later batches
    are not tried (no warning per batch), and what was stored before the disk filled is still served."""
    from kgfed.cache.documents import DocumentCache

    body = b'{"head": {"vars": ["x"]}, "results": {"bindings": []}}'
    entry = (200, [("Content-Type", "application/sparql-results+json")], body)
    cache = DocumentCache(tiny_disk.path / "sparqlwrapper")
    cache.put("before", entry, "SELECT")
    cache.flush()
    assert cache.get("before", "SELECT") == entry
    fill(tiny_disk)
    with pytest.warns(RuntimeWarning) as caught:
        for batch in range(3):
            for i in range(50):
                cache.put(f"after-{batch}-{i}-" + "k" * 4000, entry, "SELECT")
            cache.flush()
    messages = [str(w.message) for w in caught if "drop-in" in str(w.message)]
    assert len(messages) == 1 and "uncached from now on" in messages[0] and "KGFED_NO_CACHE=1" in messages[0]
    assert cache.get("before", "SELECT") == entry and cache.get("after-2-0-" + "k" * 4000, "SELECT") is None
    cache.close()
