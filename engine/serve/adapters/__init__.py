"""Adapters of `kgfed serve` for the frameworks RL agents are trained with (each imports its framework on use).

- `skyrl.KgfedTextEnv`: a SkyRL-Gym text environment (`skyrl_gym.envs.base_text_env.BaseTextEnv`);
- `verl.KgfedVerlTool`: a verl tool (`verl.tools.base_tool.BaseTool`);
- `reward.score`: the reward of an answer by the harness's scoring (exact match, F1 or Hits@1).
"""
from __future__ import annotations
