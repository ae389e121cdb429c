"""`kgfed serve` beyond one machine: replicas on Ray actors sharing one `redis://` cache root, rollouts routed by id.

    import ray
    from kgfed.engine.serve.ray_replicas import start_replicas
    replicas = start_replicas(ServeOptions(kgs=..., cache=CacheOptions(root="redis://10.0.0.5:6379/0")), 4)
    client = replicas.client()                 # in a rollout worker (a Ray actor): picklable, routes by rollout id
    started = client.start("kgfed", question, topics, rollout_id="step3-q17-s2")
    reply = client.call("relations", {"entity": "m.0abc"}, rollout_id="step3-q17-s2", profile="kgfed")

Each replica is an async Ray actor running a whole `kgfed serve` (its own `Session`, coalescing, deadlines,
admission) on a free port of its node's `host` (127.0.0.1 by default: workers on the same node only; another
interface needs the bearer token, as the command does). Every replica's KGs share the cache root, so an answer
one replica fetched is a cache hit on every other. A rollout's calls must reach one replica (its context holds
what the rollout was shown): `ReplicaSet.url_for(rollout_id)` picks it by a stable hash of the id, the same in
every process. Ray is imported only here.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from .client import Reply, ServeClient
from .core import ServeOptions

__all__ = ["ReplicaSet", "RoutedClient", "start_replicas"]


class _Replica:
    """One `kgfed serve` inside an async Ray actor."""

    def __init__(self, options: ServeOptions):
        self.options = options
        self.server: Any = None
        self.runner: Any = None

    async def start(self) -> tuple[str, str]:
        import ray

        from .core import ToolServer
        from .http import start_site

        self.server = ToolServer.open(self.options)
        self.runner, port = await start_site(self.server)
        return f"http://{self.options.host}:{port}", ray.get_runtime_context().get_node_id()

    async def report(self) -> dict[str, Any]:
        return self.server.report()

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            await self.server.aclose()
            self.runner = None


def _pick(rollout_id: str, n: int) -> int:
    return int.from_bytes(hashlib.sha256(rollout_id.encode()).digest()[:8], "big") % n


@dataclass
class RoutedClient:
    """A `ServeClient` per replica, each rollout's calls sent to its replica (picklable: only URLs and the token)."""

    urls: list[str]
    token: str | None = field(default=None, repr=False)
    timeout: float = 60.0

    def _for(self, rollout_id: str | None) -> ServeClient:
        url = self.urls[_pick(rollout_id, len(self.urls))] if rollout_id else self.urls[0]
        return ServeClient(url, token=self.token, timeout=self.timeout)

    def start(self, profile: str | None, question: str, topics: Any = None, rollout_id: str | None = None) -> dict[str, Any]:
        if rollout_id is None:
            import uuid

            rollout_id = uuid.uuid4().hex
        return self._for(rollout_id).start(profile, question, topics, rollout_id)

    def call(self, tool: str, arguments: Any, *, rollout_id: str | None = None, profile: str | None = None) -> Reply:
        return self._for(rollout_id).call(tool, arguments, rollout_id=rollout_id, profile=profile)

    def release(self, rollout_id: str) -> dict[str, Any]:
        return self._for(rollout_id).release(rollout_id)


@dataclass
class ReplicaSet:
    """The replicas' URLs, nodes and actors."""

    urls: list[str]
    nodes: list[str]
    actors: list[Any]
    token: str | None = field(default=None, repr=False)

    def url_for(self, rollout_id: str) -> str:
        return self.urls[_pick(rollout_id, len(self.urls))]

    def client(self, timeout: float = 60.0) -> RoutedClient:
        return RoutedClient(list(self.urls), self.token, timeout)

    def reports(self) -> list[dict[str, Any]]:
        import ray

        return ray.get([actor.report.remote() for actor in self.actors])

    def stop(self) -> None:
        import ray

        ray.get([actor.stop.remote() for actor in self.actors])
        for actor in self.actors:
            ray.kill(actor)


def start_replicas(options: ServeOptions, replicas: int = 2, *, nodes: list[str] | None = None,
                   num_cpus: float = 0) -> ReplicaSet:
    """`replicas` kgfed serve actors (on `nodes` in turn when given: node ids, hard affinity), each on a free port;
    the cache root should be `redis://` for them to share answers (a directory is per machine)."""
    import dataclasses

    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from ...sparql.errors import KgfedError

    if replicas < 1:
        raise KgfedError(f"replicas {replicas}: give 1 or more")
    options = dataclasses.replace(options, port=0)
    actor_class: Any = ray.remote(num_cpus=num_cpus)(_Replica)
    actors = []
    for i in range(replicas):
        chosen = actor_class
        if nodes:
            chosen = actor_class.options(scheduling_strategy=NodeAffinitySchedulingStrategy(nodes[i % len(nodes)], soft=False))
        actors.append(chosen.remote(options))
    started = ray.get([actor.start.remote() for actor in actors])
    return ReplicaSet([url for url, _ in started], [node for _, node in started], actors, options.token)
