"""`kgfed serve` replicas on Ray (every address 127.0.0.1): two replica actors sharing one Redis cache root; rollout
workers on Ray actors replay the same rollout through the routed client. A two-node local cluster
(`ray.cluster_utils.Cluster`) was tried: on this machine its head publishes the GCS on the non-loopback address,
whatever `node_ip_address` says, and `ray start --node-ip-address=127.0.0.1` heads refuse a driver without Ray's
auth token; the replicas here share one node (docs/serve.md)."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from kgfed.engine.config import CacheOptions, KGSpec
from kgfed.engine.serve import ServeOptions

DEMO_WIKIDATA = Path(__file__).resolve().parents[1] / "engine" / "data" / "demo_wikidata.nt"
STEPS = [("relations", {"entity": "Q42"}), ("neighbors", {"entity": "Q42", "relation": "P69"}),
         ("labels", {"ids": ["Q35794", "Q691283"]}), ("answer", {"answers": ["Q35794"]})]


def _rollout(client, rollout_id: str) -> tuple[str, list[str], dict]:
    """In a Ray task: one rollout through the routed client; (node, texts, answer)."""
    import ray

    client.start("kgfed", "Where was Douglas Adams educated?", {"Q42": "Douglas Adams"}, rollout_id)
    replies = [client.call(tool, args, rollout_id=rollout_id, profile="kgfed") for tool, args in STEPS]
    return ray.get_runtime_context().get_node_id(), [r.text for r in replies], replies[-1].answer


@pytest.mark.slow
def test_replicas_on_ray_share_one_redis_cache_and_workers_on_actors_use_them(redis_root):
    try:
        import ray
    except ImportError:
        pytest.skip("ray is not installed (pip install 'kgfed[distributed]'): the replicated server is untested here")
    from kgfed.engine.serve.ray_replicas import _pick, start_replicas

    options = ServeOptions(kgs=(KGSpec("wikidata", f"file:{DEMO_WIKIDATA}"),), cache=CacheOptions(root=redis_root),
                           profiles=("kgfed",))
    ray.init(_node_ip_address="127.0.0.1", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        replicas = start_replicas(options, 2)
        assert len(set(replicas.urls)) == 2 and all(u.startswith("http://127.0.0.1:") for u in replicas.urls)
        # two rollout ids that the stable hash sends to replica 0 and to replica 1
        ids = [next(f"r{i}" for i in range(100) if _pick(f"r{i}", 2) == k) for k in (0, 1)]
        task = ray.remote(num_cpus=0)(_rollout)
        first = ray.get(task.remote(replicas.client(), ids[0]))  # a rollout worker actor, served by replica 0
        time.sleep(0.5)  # the response cache's writer commits within its linger (50 ms): then every replica reads it
        second = ray.get(task.remote(replicas.client(), ids[1]))  # another, served by replica 1
        assert first[1] == second[1] and "Q35794: University of Cambridge" in first[1][1]
        assert "(Douglas Adams)" in first[1][0]  # the rollout's context held on its replica
        assert first[2] == second[2] == {"names": ["University of Cambridge"], "ids": ["Q35794"]}
        one, two = replicas.reports()
        assert one["kgs"]["wikidata"].get("sent", 0) > 0  # replica 0 asked the KG ...
        assert two["kgs"]["wikidata"].get("sent", 0) == 0 and two["kgs"]["wikidata"]["cache_hits"] > 0  # ... replica 1 hit Redis
        replicas.stop()
    finally:
        ray.shutdown()


def _rollout_on_serve(rollout_id: str) -> tuple[list[str], dict]:
    """In a Ray task: one rollout through the handle of the Serve application its id picks."""

    from kgfed.engine.serve.ray_serve import handle_for

    handle = handle_for(rollout_id, 2)
    handle.start.remote("kgfed", "Where was Douglas Adams educated?", {"Q42": "Douglas Adams"}, rollout_id).result()
    out = [handle.call.remote("kgfed", tool, args, rollout_id).result() for tool, args in STEPS]
    assert all(o["status"] == 200 for o in out), out
    return [o["body"]["text"] for o in out], out[-1]["body"]["answer"]


@pytest.mark.slow
# ray.serve's own models use pydantic v1-style Field(update_type=...): a third-party warning at its import
@pytest.mark.filterwarnings("ignore:Using extra keyword arguments on `Field` is deprecated:DeprecationWarning")
def test_ray_serve_applications_answer_rollouts_from_ray_tasks(redis_root):
    try:
        import ray
        from ray import serve
    except ImportError:
        pytest.skip("ray[serve] is not installed (pip install 'kgfed[train]'): the Serve deployment is untested here")
    from kgfed.engine.serve.ray_replicas import _pick
    from kgfed.engine.serve.ray_serve import run_apps
    from kgfed.endpoints.servers import free_port

    options = ServeOptions(kgs=(KGSpec("wikidata", f"file:{DEMO_WIKIDATA}"),), cache=CacheOptions(root=redis_root),
                           profiles=("kgfed",))
    ray.init(_node_ip_address="127.0.0.1", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": free_port()})
        assert run_apps(options, 2) == ["kgfed-0", "kgfed-1"]
        handle = serve.get_app_handle("kgfed-0")
        tools = handle.tools.remote("kgfed").result()
        assert [t["function"]["name"] for t in tools][:2] == ["search_entities", "relations"]
        task = ray.remote(num_cpus=0)(_rollout_on_serve)
        ids = [next(f"r{i}" for i in range(100) if _pick(f"r{i}", 2) == k) for k in (0, 1)]  # one on each application
        first, second = ray.get([task.remote(ids[0]), task.remote(ids[1])])
        assert first == second and "Q35794: University of Cambridge" in first[0][1] and "(Douglas Adams)" in first[0][0]
        assert first[1] == {"names": ["University of Cambridge"], "ids": ["Q35794"]}
        bad = handle.call.remote("kgfed", "relations", {"entity": 5}).result()
        assert bad == {"status": 400, "body": {"error": "relations.entity: expected string, got integer", "status": 400}}
        serve.shutdown()
    finally:
        ray.shutdown()
