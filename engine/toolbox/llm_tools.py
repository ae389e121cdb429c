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
    """The `<tool_call>` blocks of a reply, in order; an unreadable block is a call named "" (see the module docstring).
    A reply without any block may still write its calls as bare JSON objects `{"name": ..., "arguments": {...}}`
    (Qwen2.5-Coder-1.5B drops the tags when told to reply with calls only): those are its calls, in order."""
    if not _CALL.search(text or ""):
        return _bare_calls(text or "")
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


_BARE = re.compile(r'\{\s*"name"\s*:')


def _bare_calls(text: str) -> tuple[ToolCall, ...]:
    """Whole JSON objects with a string `name` and an `arguments` key written in a reply's text (one cut off by the
    reply cap is no call: nothing says it was one)."""
    decoder = json.JSONDecoder()
    calls: list[ToolCall] = []
    end = 0
    for found in _BARE.finditer(text):
        if found.start() < end:
            continue
        try:
            doc, end = decoder.raw_decode(text, found.start())
        except ValueError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("name"), str) and "arguments" in doc:
            arguments = doc["arguments"]
            text_args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
            calls.append(ToolCall(f"call_{len(calls)}", doc["name"], text_args))
    return tuple(calls)


# -- native wire shapes ------------------------------------------------------------------------------------
def _json_object(text: str) -> Any:
    """A call's arguments as the object a native API wants back (a text that is no JSON object is sent as {"text": ...})."""
    try:
        value = json.loads(text) if text.strip() else {}
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"text": text}


def anthropic_request(messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """`system`, `messages` and `tools` of an Anthropic Messages API request: assistant `tool_use` blocks, the
    results as `tool_result` blocks (`is_error` when refused) in the next user turn, consecutive ones together."""
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        if message.role == "assistant":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content else []
            blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": _json_object(c.arguments)}
                       for c in message.tool_calls]
            out.append({"role": "assistant", "content": blocks or "(empty reply)"})  # the API refuses empty text
            continue
        if message.role == "tool":
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id, "content": message.content}
            if message.is_error:
                block["is_error"] = True
        else:
            block = {"type": "text", "text": message.content}
        if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
            out[-1]["content"].append(block)
        else:
            out.append({"role": "user", "content": [block] if message.role == "tool" else message.content})
    request: dict[str, Any] = {"messages": out}
    if system:
        request["system"] = system
    if tools:
        request["tools"] = [{"name": t["name"], "description": t.get("description", ""),
                             "input_schema": t.get("parameters") or {"type": "object", "properties": {}}} for t in tools]
    return request


def anthropic_calls(content: Sequence[Any]) -> tuple[str, tuple[ToolCall, ...]]:
    """The text and `tool_use` blocks of an Anthropic reply's `content` (SDK objects or dicts)."""
    def get(block: Any, key: str) -> Any:
        return block.get(key) if isinstance(block, dict) else getattr(block, key, None)

    text = "".join(get(b, "text") or "" for b in content if get(b, "type") == "text")
    calls = tuple(ToolCall(str(get(b, "id")), str(get(b, "name")), json.dumps(get(b, "input") or {}, ensure_ascii=False))
                  for b in content if get(b, "type") == "tool_use")
    return text, calls


def openai_request(messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """`messages` and `tools` of an OpenAI chat-completions request: assistant `tool_calls` (arguments as a JSON
    string), each result a `tool` message with its `tool_call_id` (a refused call's text starts with "error:")."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": message.content or None}
            if message.tool_calls:
                entry["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                                       for c in message.tool_calls]
            out.append(entry)
        elif message.role == "tool":
            out.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content})
        else:
            out.append({"role": message.role, "content": message.content})
    request: dict[str, Any] = {"messages": out}
    if tools:
        request["tools"] = [function_schema(t) for t in tools]
    return request


def openai_calls(message: Mapping[str, Any]) -> tuple[ToolCall, ...]:
    """The `tool_calls` of an OpenAI reply's `choices[0].message` (a call without a function name is kept as "")."""
    calls = []
    for i, call in enumerate(message.get("tool_calls") or ()):
        function = call.get("function") or {} if isinstance(call, dict) else {}
        arguments = function.get("arguments")
        text = arguments if isinstance(arguments, str) else json.dumps(arguments or {}, ensure_ascii=False)
        calls.append(ToolCall(str(call.get("id") or f"call_{i}") if isinstance(call, dict) else f"call_{i}",
                              str(function.get("name") or ""), text))
    return tuple(calls)
