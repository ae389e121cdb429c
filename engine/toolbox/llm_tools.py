"""Tool calling as text, for providers without native tools (a local GGUF model, any `_complete`-only provider).

The protocol is Qwen2.5's own chat template for tools (the local model of ../shared/local-llm.md is a
Qwen2.5): the system message lists the tools inside `<tools></tools>`, one OpenAI-style function
declaration a line; the model calls a tool by writing

    <tool_call>
    {"name": "neighbors", "arguments": {"entity": "m.0abc", "relation": "people.person.nationality"}}
    </tool_call>

and reads each result in the next user turn inside `<tool_response></tool_response>`. `chat_messages`
renders a conversation (`llm_base.Message`) as plain role/content messages in that form (for an
OpenAI-compatible server without native tools); `as_prompt` folds it into one system text and one prompt
(for `_complete`-only providers); `read_tool_calls` reads the calls back from a reply. A block that is not
a JSON object with a string `name` comes back as a call named `""` whose arguments are the block's text:
the agent loop answers it with an error, it is never dropped silently.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .llm_base import Message, ToolCall

TOOLS_HEADER = ("# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n")
TOOLS_FOOTER = ("\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
                "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
                "<args-json-object>}\n</tool_call>")
_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)


def function_schema(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A neutral tool declaration in OpenAI's function form: {"type": "function", "function": {...}}."""
    return {"type": "function", "function": {"name": tool["name"], "description": tool.get("description", ""),
                                             "parameters": tool.get("parameters") or {"type": "object", "properties": {}}}}


def tools_block(tools: Sequence[Mapping[str, Any]]) -> str:
    """The system message's tool section (empty without tools)."""
    if not tools:
        return ""
    lines = "\n".join(json.dumps(function_schema(t), ensure_ascii=False) for t in tools)
    return TOOLS_HEADER + lines + TOOLS_FOOTER


def write_call(call: ToolCall) -> str:
    """One call as the model writes it."""
    try:
        arguments: Any = json.loads(call.arguments)
    except ValueError:
        arguments = call.arguments
    return "<tool_call>\n" + json.dumps({"name": call.name, "arguments": arguments}, ensure_ascii=False) + "\n</tool_call>"


def chat_messages(messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The conversation as role/content messages in the text protocol (consecutive tool results in one user turn)."""
    out: list[dict[str, str]] = []
    block = tools_block(tools)
    system = [m.content for m in messages if m.role == "system"]
    if system or block:
        out.append({"role": "system", "content": "\n\n".join([*system, block] if block else system)})
    for message in messages:
        if message.role == "system":
            continue
        if message.role == "assistant":
            text = "\n".join([message.content.strip()] * bool(message.content.strip()) + [write_call(c) for c in message.tool_calls])
            out.append({"role": "assistant", "content": text})
        elif message.role == "tool":
            response = "<tool_response>\n" + ("error: " if message.is_error else "") + message.content + "\n</tool_response>"
            if out and out[-1]["role"] == "user" and out[-1]["content"].startswith("<tool_response>"):
                out[-1]["content"] += "\n" + response
            else:
                out.append({"role": "user", "content": response})
        else:
            out.append({"role": "user", "content": message.content})
    return out


def as_prompt(messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> tuple[str | None, str]:
    """(system, prompt): the text-protocol conversation folded into one prompt for a `_complete`-only provider."""
    rendered = chat_messages(messages, tools)
    system = rendered[0]["content"] if rendered and rendered[0]["role"] == "system" else None
    turns = rendered[1:] if system is not None else rendered
    prompt = "\n\n".join(f"<|{m['role']}|>\n{m['content']}" for m in turns) + "\n\n<|assistant|>\n"
    return system, prompt


def read_tool_calls(text: str) -> tuple[ToolCall, ...]:
    """The `<tool_call>` blocks of a reply, in order; an unreadable block is a call named "" (see the module docstring)."""
    calls = []
    for i, found in enumerate(_CALL.finditer(text or "")):
        body = found.group(1).strip()
        try:
            doc = json.loads(body)
        except ValueError:
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("name"), str):
            arguments = doc.get("arguments", {})
            text_args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
            calls.append(ToolCall(f"call_{i}", doc["name"], text_args))
        else:
            calls.append(ToolCall(f"call_{i}", "", body))
    return tuple(calls)
