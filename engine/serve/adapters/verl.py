"""A verl tool over `kgfed serve` (`verl.tools.base_tool.BaseTool`): one instance per tool of a profile.

verl's tool config (`actor_rollout_ref.rollout.multi_turn.tool_config_path`) names the class and its config:

    tools:
      - class_name: kgfed.engine.serve.adapters.verl.KgfedVerlTool
        config: {url: "http://127.0.0.1:8766", profile: kgfed, tool: relations, metric: em, type: native}
        tool_schema: null          # fetched from the server (GET /v1/tools?profile=kgfed)

`create(instance_id, create_kwargs={"question", "topics", "ground_truth", "rollout_id"})` starts the rollout on the
server once per `rollout_id` (every tool of one trajectory shares it: give the same `rollout_id` in the dataset's
`tools_kwargs`); `execute` sends one call and returns its text (`ToolResponse`) with step reward 0; `calc_reward`
scores the rollout's answer (the profile's answer tool) with the harness's scoring (`reward.score`); `release`
forgets the instance (the rollout is released by the answer tool's instance, or when the server drops it).
verl 0.9.1 cannot be installed beside kgfed's locked dependencies (it needs transformers < 5.11; docs/serve.md).
"""
from __future__ import annotations

import os
import uuid
from typing import Any

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from ..client import AsyncServeClient
from .reward import score

__all__ = ["KgfedVerlTool"]


class KgfedVerlTool(BaseTool):
    """One tool of a `kgfed serve` profile as a verl tool (see the module docstring)."""

    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema | None = None):
        token = config.get("token") or os.environ.get(config.get("token_env", "KGFED_SERVE_TOKEN"), "")
        self.client = AsyncServeClient(config.get("url", "http://127.0.0.1:8766"), token=token or None)
        self.profile = config.get("profile", "kgfed")
        self.metric = config.get("metric", "em")
        if tool_schema is None:
            from ..client import ServeClient

            listed = ServeClient(self.client.url, token=token or None).tools(self.profile)
            wanted = config.get("tool")
            found = [t for t in listed if t["function"]["name"] == wanted]
            if not found:
                raise ValueError(f"kgfed serve profile {self.profile!r} has no tool {wanted!r}: "
                                 f"{', '.join(t['function']['name'] for t in listed)}")
            tool_schema = OpenAIFunctionToolSchema.model_validate(found[0])
        super().__init__(config, tool_schema)
        self._instances: dict[str, dict[str, Any]] = {}
        self._started: set[str] = set()

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, ToolResponse]:
        instance_id = instance_id or uuid.uuid4().hex
        given = kwargs.get("create_kwargs", kwargs) or {}
        rollout = str(given.get("rollout_id") or instance_id)
        if rollout not in self._started and (given.get("question") or given.get("topics")):
            await self.client.start(self.profile, str(given.get("question", "")), given.get("topics"), rollout)
            self._started.add(rollout)
        self._instances[instance_id] = {"rollout": rollout, "ground_truth": given.get("ground_truth") or {},
                                        "answer": None}
        return instance_id, ToolResponse()

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs: Any) -> tuple[ToolResponse, float, dict]:
        state = self._instances.get(instance_id) or {"rollout": instance_id, "ground_truth": {}, "answer": None}
        reply = await self.client.call(self.name, parameters, rollout_id=state["rollout"], profile=self.profile)
        if reply.answer is not None:
            state["answer"] = reply.answer
        return ToolResponse(text=reply.text), 0.0, {"error": reply.error, "status": reply.status}

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        state = self._instances.get(instance_id)
        if state is None:
            return 0.0
        return score(state["answer"], kwargs.get("ground_truth") or state["ground_truth"], self.metric)

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        self._instances.pop(instance_id, None)
