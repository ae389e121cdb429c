"""One cache root, two backends: `CacheSpec` and `open_store` hand out every store (responses,
alignments, text) from a directory or a real Redis, with the same guarantees; several processes share
one root; `kgfed run --ray` over a two-node Ray cluster shares one Redis cache."""
from __future__ import annotations

import logging
import re
import asyncio

import pickle
from dataclasses import replace
import subprocess
import time
import sys
import textwrap
from pathlib import Path

import pytest

from kgfed.cache.options import CacheOptions
from kgfed.cache.responses import ResponseCache, cache_key
from kgfed.cache.root import CacheSpec, DiskStore, RedisStore, Store, local_root, open_store
from kgfed.engine.harness.datasets import load_dataset
from kgfed.engine.data import DEMO_WIKIDATA
from kgfed.engine.kg import KG
from kgfed.engine.methods.base import Method, Result
from kgfed.engine.config import KGSpec
from kgfed.engine.harness.runner import RunSpec, run, select_questions
from kgfed.sparql.errors import KgfedError
from kgfed.sparql.results import SelectResult, Term

ROOT = Path(__file__).resolve().parents[1]
DEMO_QUESTIONS = ROOT / "engine" / "data" / "demo_questions.jsonl"


# -- the spec ------------------------------------------------------------------------------------------
def test_a_spec_is_a_frozen_picklable_location(tmp_path, monkeypatch):
    spec = CacheSpec.of(tmp_path / "x" / ".." / "root")
    assert spec == CacheSpec(str(tmp_path / "root")) and spec.backend == "disk"
    assert pickle.loads(pickle.dumps(spec)) == spec and CacheSpec.of(spec) is spec
    with pytest.raises(AttributeError):
        spec.location = "elsewhere"  # type: ignore[misc]
    assert spec.directory("responses") == tmp_path / "root" / "responses"
    assert spec.directory("text") == tmp_path / "root" / "wikipedia"
    redis = CacheSpec.of("redis://127.0.0.1:6390/3")
    assert redis.backend == "redis" and str(redis) == "redis://127.0.0.1:6390/3"
    assert redis.directory("embeddings") == Path.home() / ".cache" / "kgfed" / "embeddings"  # where it would be on disk (the store itself is Redis's)
    monkeypatch.setenv("KGFED_CACHE_DIR", str(tmp_path / "env"))
    assert CacheSpec.of(None).location == str(tmp_path / "env") == str(local_root())
    monkeypatch.setenv("KGFED_CACHE_DIR", "redis://127.0.0.1:6390/0")
    assert CacheSpec.of(None).backend == "redis" and local_root() == Path.home() / ".cache" / "kgfed"


@pytest.mark.parametrize("bad, says", [("redis://:6379/0", "not a Redis URL"), ("redis://h:1/x", "not a Redis URL"),
                                       ("s3://bucket/cache", "unknown scheme")])
def test_bad_locations_are_one_line_errors(bad, says):
    with pytest.raises(KgfedError, match=says) as caught:
        CacheSpec.of(bad)
    assert "\n" not in str(caught.value)
    with pytest.raises(KgfedError, match="unknown cache store 'vectors'"):
        open_store(None, "vectors")


def test_an_unreachable_redis_is_a_one_line_error(redis_server):
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(KgfedError, match=rf"cannot reach the Redis cache at redis://127.0.0.1:{port}/0 .*start redis-server"):
        ResponseCache(f"redis://127.0.0.1:{port}/0")


def test_a_response_cache_made_before_the_root_is_still_read(tmp_path):
    """Before the root, `--cache-dir DIR` held the answers in DIR itself: such a store is kept."""
    import diskcache

    old = diskcache.Cache(str(tmp_path / "old"))
    old.set("k", b"v")
    old.close()
    assert CacheSpec.of(tmp_path / "old").directory("responses") == tmp_path / "old"
    assert CacheSpec.of(tmp_path / "new").directory("responses") == tmp_path / "new" / "responses"


# -- the store protocol --------------------------------------------------------------------------------
def test_every_kind_is_a_separate_store_with_the_same_protocol(cache_root):
    stores = {kind: open_store(cache_root, kind) for kind in ("responses", "alignments", "text")}
    expected = RedisStore if cache_root.startswith("redis://") else DiskStore
    assert all(isinstance(s, expected) and isinstance(s, Store) for s in stores.values())
    stores["responses"].set_many([("k", b"answer"), ("k2", b"\x00\xff binary")])
    stores["alignments"].set("k", b"outcome")
    assert stores["responses"].get("k") == b"answer" and stores["responses"].get("k2") == b"\x00\xff binary"
    assert stores["alignments"].get("k") == b"outcome" and stores["text"].get("k") is None
    assert sorted(stores["responses"].keys()) == ["k", "k2"] and len(stores["responses"]) == 2
    stores["responses"].delete("k")
    assert stores["responses"].get("k") is None and len(stores["alignments"]) == 1
    stores["responses"].clear()
    assert len(stores["responses"]) == 0 and stores["alignments"].get("k") == b"outcome"
    for store in stores.values():
        store.flush()
        store.close()


def _writer_script(root: str, worker: int, n: int) -> str:
    return textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from kgfed.cache.responses import ResponseCache
        from kgfed.sparql.results import SelectResult, Term
        cache = ResponseCache({root!r}, linger=0.005, batch=64)
        for i in range({n}):
            rows = [{{"x": Term("literal", f"{{j}} of {{i}}")}} for j in range(10)]
            cache.set(f"shared{{i}}", SelectResult(["x"], rows), source="any")      # every process writes these
            cache.set(f"w{worker}-{{i}}", SelectResult(["x"], rows[:3]), source="w{worker}")
        cache.close()
    """)


def test_several_processes_share_one_root_and_every_entry_is_whole(cache_root):
    n = 400
    procs = [subprocess.Popen([sys.executable, "-c", _writer_script(cache_root, w, n)]) for w in range(3)]
    assert [p.wait(120) for p in procs] == [0, 0, 0]
    cache = ResponseCache(cache_root, memory=0)
    keys = set(cache.keys())
    assert len(keys) == n + 3 * n and {f"w2-{i}" for i in range(n)} <= keys
    for i in range(0, n, 7):
        shared, own = cache.entry(f"shared{i}"), cache.entry(f"w1-{i}")
        assert [r["x"].value for r in shared.result.rows] == [f"{j} of {i}" for j in range(10)]
        assert len(own.result.rows) == 3 and own.source == "w1"
    cache.close()


async def test_kg_alignments_and_text_share_the_redis_root(redis_root, tmp_path):
    """`KG.open(cache=CacheOptions(root="redis://…"))` keeps answers in Redis: a second KG (any process) gets hits only;
    the aligner's and the text source's stores come from the same root."""
    from kgfed.engine.federation.align import Aligner
    from kgfed.engine.session import Session, SessionSpec

    async with KG.open(f"file:{DEMO_WIKIDATA}", cache=CacheOptions(root=str(redis_root))) as kg:
        first = await kg.relations("Q42")
        assert kg.stats["sent"] > 0 and kg.endpoint.cache.spec == CacheSpec(redis_root)
        aligner = Aligner({"wikidata": kg}, methods=("label",))
        assert isinstance(aligner.cache._cache.inner, RedisStore) and aligner.cache._cache.location == redis_root
    async with KG.open(f"file:{DEMO_WIKIDATA}", cache=CacheOptions(root=str(redis_root), offline=True)) as kg:
        assert await kg.relations("Q42") == first and kg.stats["sent"] == 0 and kg.stats["cache_hits"] > 0
    async with Session(SessionSpec(cache=CacheOptions(root=str(redis_root), offline=True), text="wikipedia")) as session:
        source = session.text  # the session's text store: the root's, on Redis
        assert isinstance(source.cache._cache.inner, RedisStore) and source.cache._cache is session.store("text")
        source.cache.set("page", {"title": "Douglas Adams"})
        assert open_store(redis_root, "text").get("page") == b'{"title":"Douglas Adams"}'
    assert not (tmp_path / "kgfed-cache").exists()  # nothing went to the default directory


def test_the_cli_takes_a_redis_cache_root(redis_root):
    """`--cache-dir redis://…`: a second, offline process answers from what the first one stored."""
    def cli(*argv: str) -> subprocess.CompletedProcess:
        main = "import sys; from kgfed.engine.cli import main; sys.exit(main(sys.argv[1:]))"
        return subprocess.run([sys.executable, "-c", main, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)

    cold = cli("relations", "Q42", "--dialect", "wikidata", "--endpoint", f"file:{DEMO_WIKIDATA}", "--cache-dir", redis_root, "--json")
    warm = cli("relations", "Q42", "--dialect", "wikidata", "--endpoint", f"file:{DEMO_WIKIDATA}", "--cache-dir", redis_root, "--json", "--offline")
    assert cold.returncode == 0 and warm.returncode == 0, cold.stderr + warm.stderr
    assert warm.stdout == cold.stdout and "Q42" in cold.stdout
    assert len(ResponseCache(redis_root)) > 0


def test_a_cache_hit_costs_no_more_than_a_few_round_trips(redis_root):
    """A Redis hit is one GET (then in process memory); a batch of writes is one MULTI/EXEC."""
    cache = ResponseCache(redis_root, memory=0, linger=0)
    result = SelectResult(["x"], [{"x": Term("uri", "http://x/1")}])
    for i in range(1000):
        cache.set(f"k{i}", result)
    cache.flush()
    assert cache.stats["written"] == 1000 and cache.stats["transactions"] <= 1000 // 512 + 4
    assert cache.get("k999") == result and cache.get(cache_key("other", "ASK {}")) is None
    cache.close()


async def test_a_batch_of_hits_is_one_redis_round_trip(redis_root, redis_server):
    """`select_all` reads the entries it lacks with one MGET: a remote Redis costs one round trip per
    batched call, not one per answer; the answers are those stored."""
    import redis

    from kgfed.cache.responses import CachedEndpoint
    from kgfed.endpoints.embedded import EmbeddedEndpoint

    queries = [f"SELECT ?o WHERE {{ <http://www.wikidata.org/entity/Q42> ?p ?o }} LIMIT {n}" for n in range(1, 21)]
    endpoint = EmbeddedEndpoint([DEMO_WIKIDATA])
    cold = CachedEndpoint(endpoint, ResponseCache(redis_root))
    stored = await cold.select_all(queries)
    cold.cache.close()
    client = redis.Redis(host="127.0.0.1", port=redis_server.port)

    def calls(command: str) -> int:
        return client.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0)

    before = (calls("get"), calls("mget"))
    warm = CachedEndpoint(endpoint, ResponseCache(redis_root))
    assert await warm.select_all(queries) == stored and warm.stats["cache_hits"] == 20 and warm.stats["sent"] == 0
    assert (calls("get") - before[0], calls("mget") - before[1]) == (0, 1)
    warm.cache.close()
    client.close()
    await endpoint.aclose()


def test_a_lost_redis_is_one_warning_a_miss_and_the_writer_keeps_going(tmp_path, caplog):
    """A Redis server lost mid-run switches the cache off with one warning line (docs/cache.md): lookups are
    misses (answers are fetched again), writes are counted as failed, nothing is raised into the caller."""
    from tests.conftest_servers import RedisServer, ServerNotFound, unavailable

    try:
        server = RedisServer().start()
    except ServerNotFound as exc:
        unavailable(str(exc))
    cache = ResponseCache(server.url(0), linger=0)
    result = SelectResult(["x"], [{"x": Term("uri", "http://x/1")}])
    cache.set("k", result)
    cache.flush()
    server.stop()
    cache._memory.clear()
    with caplog.at_level(logging.WARNING, logger="kgfed.cache"):
        assert cache.get("k") is None and cache.get("k") is None  # misses, said once
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "\n" not in warned[0], warned
    assert re.search(r"the Redis cache at redis://127\.0\.0\.1:\d+/0 failed to read .*--no-cache", warned[0]), warned
    assert cache.stats["read_errors"] == 1
    cache.set("k2", result)  # queued; the writer thread's failure is counted, never raised into the caller

    deadline = time.monotonic() + 10
    while not cache.stats["write_errors"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert cache.stats["write_errors"] >= 1 and "Redis cache" in cache.last_error
    assert cache.get("k2") == result  # still served from memory


def test_a_full_redis_is_one_line_without_the_keys_or_values(redis_root, redis_server):
    """redis-py quotes a failed pipeline's command (`Command # 1 (SET kgfed:KIND:KEY b'...') of pipeline caused
    error`): the warning names the server and the fix, never raw key or value bytes (issue 41)."""
    import redis

    from kgfed.cache.root import CacheError, RedisStore

    admin = redis.Redis(host="127.0.0.1", port=redis_server.port)
    before = admin.config_get("maxmemory")["maxmemory"], admin.config_get("maxmemory-policy")["maxmemory-policy"]
    store = RedisStore(redis_root, "responses")
    try:
        admin.config_set("maxmemory", 1)
        admin.config_set("maxmemory-policy", "noeviction")
        for write in (lambda: store.set_many([("ab" * 32, b"\x00\xff" * 500), ("cd" * 32, b"v")]),
                      lambda: store.add_many([("ef" * 32, b"\x00\xff" * 500)]), lambda: store.set("gh" * 32, b"v")):
            with pytest.raises(CacheError) as caught:
                write()
            message = str(caught.value)
            assert re.fullmatch(r"the Redis cache at redis://127\.0\.0\.1:\d+/\d+ failed to write \(OutOfMemoryError: "
                                r"command not allowed when used memory > 'maxmemory'\.\): raise the server's maxmemory or "
                                r"give it an eviction policy \(maxmemory-policy allkeys-lru\), or run with --no-cache", message)
    finally:
        admin.config_set("maxmemory", before[0])
        admin.config_set("maxmemory-policy", before[1])
        store.close()
        admin.close()


# -- a run across machines: a two-node Ray cluster simulated on this one -------------------------------
class FirstEdge(Method):
    """A small real, LLM- and embedding-free method: the topic's smallest outgoing relation whose
    neighbours are named, and its first named neighbour."""

    name = "first-edge"

    async def _answer(self, question: str, topics) -> Result:
        kg_name, ids = next(((n, ids) for n, ids in topics.items() if ids), (None, None))
        if kg_name is None:
            return Result(question, "")
        kg, topic = self.kgs[kg_name], sorted(ids)[0]
        for relation in sorted({r.relation for r in await kg.relations(topic, "out")}):
            edges = sorted((e for e in await kg.neighbors(topic, relation, "out") if e.object_label), key=lambda e: e.object)
            if edges:
                return Result(question, edges[0].object_label, [edges[0].object], [[edges[0]]])
        return Result(question, "")


def _relations_on_node(root: str) -> tuple[str, int, int, list[str]]:
    """In a Ray task: Q42's relations from the demo KG through the cache root; (node, sent, hits, relations)."""
    import ray

    async def ask():
        async with KG.open(f"file:{DEMO_WIKIDATA}", cache=CacheOptions(root=str(root))) as kg:
            found = await kg.relations("Q42")
            return kg.stats["sent"], kg.stats["cache_hits"], sorted(r.relation for r in found)

    sent, hits, relations = asyncio.run(ask())
    return ray.get_runtime_context().get_node_id(), sent, hits, relations


@pytest.mark.slow
def test_a_ray_run_over_two_nodes_shares_one_redis_cache(redis_root, tmp_path):
    try:
        import ray
        from ray.cluster_utils import Cluster
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    except ImportError:
        pytest.skip("ray is not installed (pip install 'kgfed[distributed]'): the multi-node run is untested here")
    questions = select_questions(load_dataset(DEMO_QUESTIONS), limit=6)
    spec = RunSpec(f"{__name__}:FirstEdge", {}, kgs=(KGSpec("wikidata", f"file:{DEMO_WIKIDATA}"),),
                   cache=CacheOptions(root=redis_root))
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
        nodes = sorted(n["NodeID"] for n in ray.nodes() if n["Alive"])
        assert len(nodes) == 2
        task = ray.remote(num_cpus=1)(_relations_on_node)
        on = [task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)) for node in nodes]
        first = ray.get(on[0].remote(redis_root))
        second = ray.get(on[1].remote(redis_root))
        assert (first[0], second[0]) == (nodes[0], nodes[1])  # really on two nodes
        assert first[1] > 0 and first[2] == 0  # node 1 asked the KG ...
        assert second[1] == 0 and second[2] == first[1] and second[3] == first[3]  # ... node 2 only hit the cache
        distributed = tmp_path / "ray.jsonl"
        cold = asyncio.run(run(spec, questions, distributed, workers=2, concurrency=2, use_ray=True,
                               ray_address=cluster.address, progress=False))
        assert cold["new"] == 6
    finally:
        ray.shutdown()
        cluster.shutdown()
    single = tmp_path / "single.jsonl"
    warm = asyncio.run(run(spec, questions, single, progress=False))  # one process, after the cluster is gone
    assert warm["new"] == 6 and warm["cache_hit_rate"] == 1.0  # every answer the nodes stored is a hit here
    assert single.read_bytes() == distributed.read_bytes() and "{physicist}" in single.read_text(encoding="utf-8")
    alone = tmp_path / "alone.jsonl"  # and a cold one-process run on its own disk cache says the same
    local = replace(spec, cache=CacheOptions(root=str(tmp_path / "disk")))
    assert asyncio.run(run(local, questions, alone, progress=False))["cache_hit_rate"] == 0.0
    assert alone.read_bytes() == distributed.read_bytes()
