"""The `agent` method: an LLM calls a tool profile's tools over the run's KGs until it answers or its turns end.

    kgfed run QUESTIONS --method agent --llm gold                       # the gold stand-in drives it (a ceiling)
    kgfed ask "..." --method agent --llm anthropic --param tools=kgfed --param turns=7

The turn budget defaults to 7: KG-R1 (Song et al., "Efficient and Transferable Agentic Knowledge Graph RAG
via Reinforcement Learning", arXiv 2509.26383; github.com/Jinyeop3110/KG-R1, "Up to 7 turns of KG
exploration per question", its `..._turn7` training and evaluation scripts) trains and evaluates with at
most 7. A turn is one LLM call; the calls of one reply run together. The profile (`--param tools=NAME`,
`engine.agent.tools.PROFILES`) decides the tools, the system prompt and the answer tool; the loop is
`engine.agent.loop`. The answer is the answer tool's list (names; ids the tools showed are named by the
name shown), first answer first; no answer (turns spent, or `answer([])`) is an empty answer.
Costs beside the usual ones: `tool_calls`, `tool_errors` (with `bad_tool_json`, `unknown_tool`,
`no_tool_call`), `agent_turns`, and `hops` (the longest hop chain the tools walked from a
topic entity to an answer; the floor of two requests a hop is counted from it).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any, ClassVar

from ...cache.costs import charge
from ..agent.loop import MAX_CALLS_PER_TURN, AgentRun, run_agent
from ..agent.tools import ToolContext, get_profile
from ..toolbox.llm import ANSWER_TEMPERATURE
from .base import STOPWORDS, Method, Result, Topics
from .params import MethodParams, param

DEFAULT_TURNS = 7  # KG-R1's budget (see the module docstring)
AGENT_MAX_TOKENS = 512  # a reply holds one or a few tool calls, or a short answer


@dataclass(frozen=True)
class AgentParams(MethodParams):
    """The agent's parameters: its turn budget and tool profile."""

    ALIASES: ClassVar[Mapping[str, str]] = {"width": "calls_per_turn", "depth": "turns"}

    turns: int = param(DEFAULT_TURNS, low=1, help="LLM calls at most per question (KG-R1: 7)")
    calls_per_turn: int = param(MAX_CALLS_PER_TURN, low=1,
                                help="tool calls run from one reply (the rest answered as errors)")
    tools: str = param("kgfed", help="the tool profile (engine/agent/tools.py PROFILES: kgfed, ...)")
    temperature: float = param(ANSWER_TEMPERATURE, help="temperature of every call")
    max_tokens: int = param(AGENT_MAX_TOKENS, low=1, help="reply cap per LLM call")
    sparql_rows: int = param(100, low=1, help="row cap of a sparql tool")


class Agent(Method):
    """A tool-using agent over every KG in `kgs` (see the module docstring)."""

    name = "agent"
    Params = AgentParams
    params: AgentParams

    def __init__(self, kgs, llm, **options: Any):
        super().__init__(kgs, llm, **options)
        self.profile = get_profile(self.params.tools)(self.kgs)

    async def _answer(self, question: str, topics: Topics) -> Result:
        if not self.llm_ready:
            return await self._llm_free(question, topics)
        ctx = ToolContext(self.kgs, question, {k: dict(v) for k, v in topics.items()}, sparql_rows=self.params.sparql_rows)
        run = await run_agent(self.llm, self.profile, ctx, question, turns=self.params.turns,
                              temperature=self.params.temperature, max_tokens=self.params.max_tokens,
                              calls_per_turn=self.params.calls_per_turn)
        paths = ctx.paths_to(run.ids)
        hops = max((len(p) for p in paths), default=0) or _hops(run)
        if hops:
            charge("hops", hops)
        return Result(question, "; ".join(run.names), run.ids, paths, method=self.name,
                      reasoning="" if run.answered else f"no answer within {self.params.turns} turns",
                      extra={"profile": self.profile.name, "turns": run.turns, "answered": run.answered,
                             "tool_calls": run.calls})


    async def _llm_free(self, question: str, topics: Topics) -> Result:
        """Without an LLM (`--llm none`) no model calls tools: a one-hop lexical baseline over the same KGs. The
        relations of the topic entities, the one whose words share most with the question (ties: outgoing, then
        by id), its far ends named; no relation sharing a word gives no answer."""
        words = _words(question)
        found = []  # (score, outgoing, relation, direction, kg name, topic)
        for name, ids in topics.items():
            if name not in self.kgs or not ids:
                continue
            for topic, rels in (await self.kgs[name].relations_many(list(ids))).items():
                for rel in rels:
                    score = len(words & _words(f"{rel.relation} {rel.label or ''}"))
                    if score:
                        found.append((score, rel.direction == "out", rel.relation, rel.direction, name, topic))
        if not found:
            return Result(question, "", method=self.name, reasoning="no relation of a topic entity shares a word with "
                          "the question (LLM-free baseline: pass --llm for the agent)", extra={"llm_free": True})
        _, _, relation, direction, name, topic = max(found, key=lambda f: (f[0], f[1], [-ord(c) for c in f[2]]))
        kg = self.kgs[name]
        edges = [e.with_origin_label(topics[name].get(topic) or None) for e in await kg.neighbors(topic, relation, direction, limit=3)]
        charge("hops")
        return Result(question, "; ".join(e.label or e.entity for e in edges), [e.entity for e in edges if not e.literal],
                      [[e] for e in edges], method=self.name, extra={"llm_free": True},
                      reasoning=f"LLM-free baseline: {topic} {relation} ({direction})")


def _words(text: str) -> set[str]:
    """Lower-cased word stems (first five letters) of a text or a relation id, stopwords dropped."""
    return {w[:5] for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 2 and w not in STOPWORDS}


def _hops(run: AgentRun) -> int:
    """The turns that walked the graph (a call other than search, labels or the answer): the agent's hop count."""
    return sum(1 for m in run.messages if m.role == "assistant"
               and any(c.name and not c.name.startswith(("search", "label", "answer")) for c in m.tool_calls))
