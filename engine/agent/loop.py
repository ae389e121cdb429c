"""The agent loop: the LLM calls a profile's tools until it calls the answer tool or the turn budget ends.

One turn is one LLM call (`LLM.chat`); every tool call of its reply runs (in order) and its text goes back
as a `tool` message. What the model gets wrong is answered to it as an error result and counted, never
raised: arguments that are not a JSON object (`bad_tool_json`), an unknown tool (`unknown_tool`),
arguments the schema refuses or an id no KG takes (`tool_errors`, all of them counted there too), a
reply with no tool call (`no_tool_call`: it is told to call a tool or answer). Costs go to the question's
counter (`cache.costs`): `tool_calls`, `tool_errors`, `agent_turns` (the KG's `kg_seconds` as for any method).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ...cache.costs import charge
from ..toolbox.llm_base import LLM, Message, ToolCall
from .tools import ToolContext, ToolError, ToolProfile, check_arguments

MAX_CALLS_PER_TURN = 32  # a reply's calls past this are answered as errors, not run
NO_TOOL_CALL = "error: no tool call in your reply. Call one of the tools, or call {answer} with your answer(s) to finish."


@dataclass
class AgentRun:
    """What one question's loop did: the answer (names, ids), whether the answer tool was called, the transcript."""

    names: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    answered: bool = False
    turns: int = 0
    messages: list[Message] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)  # every tool call: name, arguments, error or not


def _arguments(call: ToolCall) -> Any:
    """The call's arguments as JSON, or a `ToolError` naming the problem (counted as `bad_tool_json`)."""
    if not call.name:
        charge("bad_tool_json")
        raise ToolError(f"unreadable tool call {call.arguments[:80]!r}: write "
                        '{"name": TOOL, "arguments": {...}} (a JSON object)')
    try:
        return json.loads(call.arguments) if call.arguments.strip() else {}
    except ValueError:
        charge("bad_tool_json")
        raise ToolError(f"{call.name}: arguments are not valid JSON ({call.arguments[:80]!r})") from None


async def _execute(profile: ToolProfile, ctx: ToolContext, call: ToolCall) -> tuple[str, bool]:
    """One call's result text and whether it is an error."""
    charge("tool_calls")
    ctx.stats["tool_calls"] += 1
    try:
        if not call.name:
            _arguments(call)  # an unreadable block: refused as such (bad_tool_json), not as an unknown tool
        try:
            tool = profile.tool(call.name)
        except ToolError:
            charge("unknown_tool")
            raise
        ctx.stats[f"tool:{tool.name}"] += 1
        return await tool.call(_arguments(call), ctx), False
    except ToolError as exc:
        charge("tool_errors")
        ctx.stats["tool_errors"] += 1
        return f"error: {exc}", True


async def run_agent(llm: LLM, profile: ToolProfile, ctx: ToolContext, question: str, *, turns: int,
                    temperature: float, max_tokens: int, calls_per_turn: int = MAX_CALLS_PER_TURN) -> AgentRun:
    """Run the loop for one question (see the module docstring): at most `turns` replies, each reply's first
    `calls_per_turn` tool calls run."""
    run = AgentRun(messages=[Message("system", profile.system_prompt(ctx)), Message("user", profile.opening(question, ctx))])
    specs = profile.specs()
    for _ in range(turns):
        run.turns += 1
        charge("agent_turns")
        reply = await llm.chat(run.messages, tools=specs, temperature=temperature, max_tokens=max_tokens)
        run.messages.append(Message("assistant", reply.text, reply.tool_calls))
        if not reply.tool_calls:
            charge("no_tool_call")
            charge("tool_errors")
            run.messages.append(Message("user", NO_TOOL_CALL.format(answer=profile.answer_name)))
            continue
        if await _turn(profile, ctx, run, reply.tool_calls, calls_per_turn):
            break
    return run


async def _turn(profile: ToolProfile, ctx: ToolContext, run: AgentRun, calls: tuple[ToolCall, ...],
                limit: int = MAX_CALLS_PER_TURN) -> bool:
    """Run one reply's calls (the first `limit`; the rest answered as errors); True when the answer tool was
    called with valid arguments (the loop ends)."""
    for call in calls[:limit]:
        if call.name == profile.answer_name:
            try:
                args = check_arguments(profile.tool(call.name).parameters, _arguments(call), call.name)
            except ToolError as exc:
                charge("tool_calls")
                charge("tool_errors")
                run.messages.append(Message("tool", f"error: {exc}", tool_call_id=call.id, is_error=True))
                run.calls.append({"name": call.name, "arguments": call.arguments, "error": True})
                continue
            charge("tool_calls")
            run.names, run.ids = profile.final(args, ctx)
            run.answered = True
            run.messages.append(Message("tool", "answer recorded", tool_call_id=call.id))
            run.calls.append({"name": call.name, "arguments": call.arguments, "error": False})
            return True
        text, error = await _execute(profile, ctx, call)
        run.messages.append(Message("tool", text, tool_call_id=call.id, is_error=error))
        run.calls.append({"name": call.name, "arguments": call.arguments, "error": error})
    for call in calls[limit:]:
        charge("tool_calls")
        charge("tool_errors")
        run.messages.append(Message("tool", f"error: more than {limit} calls in one reply: this one was "
                                    "not run", tool_call_id=call.id, is_error=True))
    return False
