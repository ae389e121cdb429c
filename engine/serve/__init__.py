"""`kgfed serve`: the agent method's tool profiles as one HTTP tool server that RL rollouts share (docs/serve.md).

`core.ToolServer` (one `Session`, the profiles of `engine.agent`, rollouts, deadlines, admission), `coalesce`
(concurrent single calls gathered into batched queries), `record` (replayable rollouts), `http` (aiohttp),
`client` (what adapters and benchmarks call), `ray_replicas` and `ray_serve` (replicas on Ray actors or Ray Serve
sharing a `redis://` cache root, a rollout on the replica its id hashes to),
`adapters` (a verl tool and a SkyRL-Gym environment; imported only when used).
"""
from __future__ import annotations

from .core import Overloaded, ServeError, ServeOptions, ToolServer
from .http import make_app, run_server

__all__ = ["Overloaded", "ServeError", "ServeOptions", "ToolServer", "make_app", "run_server"]
