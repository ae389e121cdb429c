"""Tool-using agents over the engine: the tool interface and its profiles (`tools`), and the loop (`loop`).

`engine/methods/agent.py` is the `agent` method (`kgfed run/ask --method agent --param tools=NAME`);
`kgfed serve` offers the same profiles' tools over HTTP. See docs/agent.md.
"""
from __future__ import annotations

from .tools import PROFILES, Tool, ToolContext, ToolError, ToolProfile, answer_tool, get_profile, hop_hint

__all__ = ["PROFILES", "Tool", "ToolContext", "ToolError", "ToolProfile", "answer_tool", "get_profile", "hop_hint"]
