"""Every store of the cache root goes through `open_store`/`Store`, so one root holds all of them: on
disk, and on a real Redis (`redis_root`: a throwaway redis-server). The stores are `responses`,
`alignments`, `text`, `embeddings` (`cache.vectors.VectorStore`) and `documents` (the SPARQLWrapper
drop-in's raw answers, `cache.documents`: a SQLite table on disk)."""
from __future__ import annotations

import marshal

import pytest

from kgfed.cache.alignments import AlignmentCache
from kgfed.cache.documents import DocumentCache, TableStore
from kgfed.cache.root import KINDS, CacheError, CacheSpec, DiskStore, RedisStore, Store, open_store
from kgfed.cache.vectors import VectorStore

SELECT_DOC = b'{"head":{"vars":["x"]},"results":{"bindings":[{"x":{"type":"uri","value":"http://e/1"}}]}}'


def test_a_redis_root_holds_every_store(redis_root):
    import redis

    stores = {kind: open_store(redis_root, kind) for kind in KINDS}
    assert all(isinstance(store, RedisStore) for store in stores.values()), stores
    for kind, store in stores.items():
        store.set("k", kind.encode())
    client = redis.Redis.from_url(redis_root)
    assert sorted(k.decode() for k in client.keys("kgfed:*")) == sorted(f"kgfed:{kind}:k" for kind in KINDS)
    assert all(store.get("k") == kind.encode() for kind, store in stores.items())  # each kind its own keys
    client.close()
    for store in stores.values():
        store.close()


def test_a_disk_root_keeps_the_documents_in_one_sqlite_table(tmp_path):
    stores = {kind: open_store(tmp_path, kind) for kind in KINDS}
    assert isinstance(stores["documents"], TableStore) and isinstance(stores["documents"], Store)
    assert all(isinstance(store, DiskStore) for kind, store in stores.items() if kind != "documents")
    assert stores["documents"].location == str(CacheSpec.of(tmp_path).directory("documents")) == str(tmp_path / "sparqlwrapper")
    for store in stores.values():
        store.close()


@pytest.mark.parametrize("kind", ["embeddings", "documents", "alignments"])
def test_the_protocol_holds_on_both_backends(cache_root, kind):
    store = open_store(cache_root, kind)
    store.set_many([("a", b"1"), ("b", b"2")])
    assert store.get_many(["a", "b", "nope"]) == [b"1", b"2", None] and len(store) == 2
    assert store.add_many([("a", b"other"), ("c", b"3")]) == [b"1", b"3"]  # first writer wins, the stored value back
    assert sorted(store.keys()) == ["a", "b", "c"]
    store.delete("b")
    assert store.get("b") is None and len(store) == 2
    store.clear()
    assert len(store) == 0 and list(store.keys()) == []
    store.close()


def test_vectors_first_writer_wins_and_the_bulk_read_on_both_backends(cache_root):
    vectors = VectorStore(open_store(cache_root, "embeddings"))
    assert vectors.add_many("m==1", [("born", b"\x01" * 8), ("died", b"\x02" * 8)]) == [b"\x01" * 8, b"\x02" * 8]
    assert vectors.add_many("m==1", [("born", b"\x09" * 8)]) == [b"\x01" * 8]  # a second writer gets the first vector
    vectors.add_many("other==2", [("born", b"\x03" * 8)])
    assert vectors.get_many("m==1", ["born", "nope"]) == {"born": b"\x01" * 8}
    assert vectors.load_all("m==1", limit=10) == {"born": b"\x01" * 8, "died": b"\x02" * 8}  # this model's only
    assert vectors.load_all("m==1", limit=2) is None  # more entries than the limit: left to single reads
    vectors.close()


def test_a_closed_disk_store_is_a_one_line_cache_error(tmp_path):
    store = open_store(tmp_path, "embeddings")
    store.close()
    for use in (lambda: len(store), lambda: store.get("x")):
        with pytest.raises(CacheError, match="is closed: open it again"):
            use()


def test_the_document_cache_checks_before_storing_on_both_backends(cache_root):
    """Only complete documents of the query's form are stored; a repeat is served from the queue at once."""
    cache = DocumentCache(open_store(cache_root, "documents"))
    good, cut = (200, [("Content-Type", "application/sparql-results+json")], SELECT_DOC), SELECT_DOC[:-1]
    cache.put("good", good, "SELECT")
    cache.put("cut", (200, [], cut), "SELECT")
    cache.put("form", good, "ASK")  # a SELECT body for an ASK query: never
    assert cache.get("good", "SELECT") == good and cache.get("cut", "SELECT") is None
    cache.flush()
    stored = open_store(cache_root, "documents")
    assert marshal.loads(stored.get("good")) == good and stored.get("cut") is None and stored.get("form") is None
    stored.close()
    cache.close()
    again = DocumentCache(cache_root if cache_root.startswith("redis") else CacheSpec.of(cache_root).directory("documents"))
    assert again.get("good", "SELECT") == good  # a new process's view: read from the store
    again.close()


def test_a_table_store_is_made_by_the_writer_not_the_caller(tmp_path):
    """Opening the documents store writes nothing (the caller's thread pays no SQLite set-up); the
    writer thread makes the file before its first batch."""
    store = TableStore(tmp_path / "docs")
    assert store.fresh and not store.path.exists() and store.get("k") is None
    cache = DocumentCache(store)
    cache.put("k", (200, [], SELECT_DOC), "SELECT")
    cache.flush()
    assert store.path.exists() and TableStore(tmp_path / "docs").fresh is False
    cache.close()


def test_a_documents_directory_in_the_way_is_a_cache_error(tmp_path):
    (tmp_path / "a-file").write_text("not a directory")
    with pytest.raises(CacheError, match=r"cannot open the cache at .*a-file.*--no-cache") as caught:
        TableStore(tmp_path / "a-file" / "docs")
    assert "\n" not in str(caught.value)


def test_alignments_on_a_redis_root(redis_root):
    cache = AlignmentCache(store=open_store(redis_root, "alignments"))
    cache.set("fb:m.0d3k14>wd", {"target": "Q42", "method": "p646", "confidence": 1.0, "ambiguous": []})
    assert AlignmentCache(store=open_store(redis_root, "alignments")).get("fb:m.0d3k14>wd")["target"] == "Q42"
    assert cache.directory is None and len(cache) == 1


@pytest.mark.embeddings
def test_an_embedder_keeps_its_vectors_in_a_redis_root(redis_root):
    import numpy as np

    from kgfed.engine.toolbox.embeddings import BULK_AFTER, Embedder

    store = open_store(redis_root, "embeddings")
    first = Embedder(store)
    a = first.encode_sync(["place of birth", "film director"])
    first.close()
    assert len(store) == 2  # a store handed in stays open, and holds the vectors
    second = Embedder(open_store(redis_root, "embeddings"))
    assert second.warm() == 2 and second._reads == BULK_AFTER  # the bulk read: SCAN + MGET
    assert np.array_equal(second.encode_sync(["film director", "place of birth"]), a[::-1])
    assert second.stats["encoded"] == 0 and second.stats["hits"] == 2
    second.close()
    store.close()


def test_a_run_on_a_redis_root_keeps_its_vectors_there(redis_root, tmp_path):
    """`RunSpec.resolved` pins the vectors to `ROOT/embeddings` on a disk root only; on a Redis root the run's
    session hands the embedder the root's `embeddings` store."""
    from kgfed.engine.config import CacheOptions
    from kgfed.engine.harness.runner import RunSpec, Runtime

    assert RunSpec("tog", cache=CacheOptions(root=str(tmp_path))).resolved().embeddings_dir == str(tmp_path / "embeddings")
    spec = RunSpec("tog", cache=CacheOptions(root=redis_root))
    assert spec.resolved().embeddings_dir is None
    runtime = Runtime(spec)
    assert runtime.embeddings is None  # the session's `store("embeddings")`, not a directory
    store = runtime.store("embeddings")
    assert isinstance(store.inner, RedisStore) and store.location == redis_root  # guarded: cache.failsafe
    store.close()
    assert Runtime(RunSpec("tog", cache=CacheOptions(enabled=False))).embeddings is False  # the cache off: nowhere
