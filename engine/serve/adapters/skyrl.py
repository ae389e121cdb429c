"""A SkyRL-Gym text environment over `kgfed serve` (`skyrl_gym.envs.base_text_env.BaseTextEnv`).

    from kgfed.engine.serve.adapters.skyrl import KgfedTextEnv
    env = KgfedTextEnv({"url": "http://127.0.0.1:8766", "profile": "kgfed", "metric": "em"},
                       {"question": "...", "topics": {"m.0abc": "Name"}, "max_turns": 7,
                        "reward_spec": {"ground_truth": {"answers": ["Gold name"], "answer_ids": ["m.0xyz"]}}})
    prompt, info = env.init([])              # system prompt (tools in the text protocol) + the question
    out = env.step('<tool_call>{"name": "relations", "arguments": {"entity": "m.0abc"}}</tool_call>')
    ...                                      # out["observations"]: the tool results; out["done"], out["reward"]
    env.close()

An action's `<tool_call>` blocks (the Hermes/Qwen text protocol, `toolbox.llm_tools`) each become one POST to the
server; their results come back as one user message of `<tool_response>` blocks. A call of the profile's answer tool
ends the episode with the reward of its answer (`reward.score`: `metric` em, f1 or hits1); so does the turn
budget (`max_turns`, default 7 as the agent method), with the reward 0 when no answer was given. A malformed call is
answered as an error result, as the agent loop answers it; the episode goes on. Register it with SkyRL-Gym as
`skyrl_gym.envs.register(id="kgfed", entry_point="kgfed.engine.serve.adapters.skyrl:KgfedTextEnv")`.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput, ConversationType

from ...toolbox.llm_tools import read_tool_calls, tools_block
from ..client import ServeClient
from .reward import score

__all__ = ["KgfedTextEnv"]

DEFAULT_TURNS = 7


def _get(config: Any, key: str, default: Any = None) -> Any:
    return config.get(key, default) if isinstance(config, Mapping) or hasattr(config, "get") else getattr(config, key, default)


class KgfedTextEnv(BaseTextEnv):
    """One episode: a question, tool calls answered by `kgfed serve`, a reward from the harness's scoring."""

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None):
        super().__init__()
        env_config = env_config or {}
        extras = dict(extras or {})
        token = _get(env_config, "token") or os.environ.get(_get(env_config, "token_env", "KGFED_SERVE_TOKEN") or "")
        self.client = ServeClient(_get(env_config, "url", "http://127.0.0.1:8766"), token=token or None,
                                  timeout=float(_get(env_config, "timeout", 60.0)))
        self.profile = _get(env_config, "profile", "kgfed")
        self.metric = _get(env_config, "metric", "em")
        self.question = str(extras.get("question", ""))
        self.topics = extras.get("topics")
        self.ground_truth = (extras.get("reward_spec") or {}).get("ground_truth", {})
        self.max_turns = int(extras.get("max_turns", DEFAULT_TURNS))
        self.rollout_id: str | None = extras.get("rollout_id")
        self.answer_tool = "answer"
        self.answer: dict[str, Any] | None = None
        self.calls = 0
        self.errors = 0
        self.chat_history: ConversationType = []

    def init(self, prompt: ConversationType) -> tuple[ConversationType, dict[str, Any]]:
        started = self.client.start(self.profile, self.question, self.topics, self.rollout_id)
        self.rollout_id = started["rollout_id"]
        self.answer_tool = started["answer_tool"]
        system = started["system"] + "\n\n" + tools_block([t["function"] for t in started["tools"]])
        messages = list(prompt or [])
        if not any(m.get("role") == "system" for m in messages):
            messages.insert(0, {"role": "system", "content": system})
        if not any(m.get("role") == "user" for m in messages):
            messages.append({"role": "user", "content": started["opening"]})
        self.chat_history = list(messages)
        return messages, {"rollout_id": self.rollout_id, "tools": started["tools"]}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        self.chat_history.append({"role": "assistant", "content": action})
        results = []
        for call in read_tool_calls(action):
            results.append(self._run(call.name, call.arguments))
            if self.answer is not None:
                break
        done = self.answer is not None or self.turns >= self.max_turns
        metadata = {"rollout_id": self.rollout_id, "tool_calls": self.calls, "tool_errors": self.errors}
        if done:
            return BaseTextEnvStepOutput(observations=[], reward=self.reward(), done=True, metadata=metadata)
        if not results:
            results.append(f"error: no tool call in your reply. Call one of the tools, or call {self.answer_tool} "
                           "with your answer(s) to finish.")
        observation = {"role": "user", "content": "\n".join(f"<tool_response>\n{r}\n</tool_response>" for r in results)}
        self.chat_history.append(observation)
        return BaseTextEnvStepOutput(observations=[observation], reward=0.0, done=False, metadata=metadata)

    def _run(self, name: str, arguments: str) -> str:
        self.calls += 1
        if not name:
            self.errors += 1
            return f"error: unreadable tool call {arguments[:80]!r}: write {{\"name\": TOOL, \"arguments\": {{...}}}}"
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            self.errors += 1
            return f"error: {name}: arguments are not valid JSON ({arguments[:80]!r})"
        reply = self.client.call(name, parsed, rollout_id=self.rollout_id, profile=self.profile)
        if reply.error:
            self.errors += 1
        if reply.answer is not None:
            self.answer = reply.answer
        return reply.text

    def reward(self) -> float:
        return score(self.answer, self.ground_truth, self.metric)

    def close(self) -> None:
        if self.rollout_id is not None:
            self.client.release(self.rollout_id)

    def get_metrics(self) -> dict[str, Any]:
        return {"tool_calls": self.calls, "tool_errors": self.errors, "answered": float(self.answer is not None),
                "reward": self.reward()}
