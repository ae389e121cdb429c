"""`kgfed serve` as Ray Serve applications: one `ToolServer` a replica, each rollout on one of them.

    from kgfed.engine.serve.ray_serve import handle_for, run_apps
    names = run_apps(options, 4)                  # applications kgfed-0 .. kgfed-3, one replica each
    # in a rollout worker (a Ray actor or task):
    h = handle_for(rollout_id, 4)                 # the application a stable hash of the id picks
    h.start.remote("kgfed", question, topics, rollout_id).result()
    h.call.remote("kgfed", "relations", {"entity": "m.0abc"}, rollout_id).result()   # {"status", "body"}

Each replica opens its own `Session` from the options (give a `redis://` cache root: every replica then reads what
any one fetched). A rollout's context (what its results showed) lives on one replica, so its calls must reach
that one: Serve's own routing sends a request to any replica of a deployment (its multiplexed-model routing by
id is a preference: measured here, a rollout's second call reached the other replica), so `run_apps` deploys one
application a replica and `handle_for` picks the application by a stable hash of the rollout id, the same in every
process (as `ray_replicas.RoutedClient` picks a URL). Serve restarts a failed replica; its rollouts' contexts are
lost with it (their calls go on with fresh ones). Importing this module imports Ray Serve (the `train` extra).
"""
from __future__ import annotations

from typing import Any

from ray import serve

from .core import ServeError, ServeOptions, ToolServer

__all__ = ["KgfedDeployment", "handle_for", "run_apps"]

PREFIX = "kgfed"


@serve.deployment(ray_actor_options={"num_cpus": 0}, max_ongoing_requests=1024)
class KgfedDeployment:
    """One replica: a whole `ToolServer` (see the module docstring)."""

    def __init__(self, options: ServeOptions):
        self.server = ToolServer.open(options)

    async def tools(self, profile: str | None = None) -> list[dict[str, Any]]:
        return self.server.tools(profile)

    async def start(self, profile: str | None, question: str, topics: Any = None, rollout_id: str | None = None) -> dict[str, Any]:
        return self.server.start(profile, question, topics, rollout_id)

    async def call(self, profile: str | None, tool: str, arguments: Any = None, rollout_id: str | None = None) -> dict[str, Any]:
        """`{"status": 200, "body": {...}}` or `{"status": N, "body": {"error", "status"}}`, as POST /v1/call."""
        try:
            return {"status": 200, "body": await self.server.call(profile, tool, arguments, rollout_id)}
        except ServeError as exc:
            return {"status": exc.status, "body": {"error": str(exc).splitlines()[0], "status": exc.status}}

    async def report(self) -> dict[str, Any]:
        return self.server.report()

    async def __del__(self) -> None:
        await self.server.aclose()


def run_apps(options: ServeOptions, replicas: int = 2, prefix: str = PREFIX) -> list[str]:
    """Deploy `replicas` applications `PREFIX-0` .. (one replica each, no HTTP route); their names."""
    names = [f"{prefix}-{i}" for i in range(max(1, replicas))]
    for name in names:
        deployment: Any = KgfedDeployment  # a Serve Deployment (the decorator's type is not the class's)
        serve.run(deployment.options(num_replicas=1).bind(options), name=name, route_prefix=None)
    return names


def handle_for(rollout_id: str, replicas: int, prefix: str = PREFIX) -> Any:
    """The handle of the application that holds `rollout_id` (a stable hash of the id)."""
    from .ray_replicas import _pick

    return serve.get_app_handle(f"{prefix}-{_pick(rollout_id, replicas)}")
