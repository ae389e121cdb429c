"""Tool calling in the LLM layer (issue 37 item 1): the native request and response shapes of the Anthropic Messages
API (`tool_use` / `tool_result` blocks) and of OpenAI-compatible servers (`tools`, `tool_calls`, role `tool`), each
replayed from hand-written responses in the providers' documented shapes by a 127.0.0.1 server through the real
client (the SDK for Anthropic); the text protocol (Qwen2.5's `<tool_call>`); chat record/replay.
"""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from aiohttp import web

from kgfed.cache.costs import track
from kgfed.engine.kg.facade import KG
from kgfed.engine.methods import get_method
from kgfed.engine.toolbox.llm import AnthropicLLM, OpenAICompatibleLLM, make_llm
from kgfed.engine.toolbox.llm_base import Message, ToolCall
from kgfed.engine.toolbox.llm_tools import as_prompt, chat_messages, read_tool_calls
from kgfed.sparql.errors import LLMError

RECORDINGS = Path(__file__).parent / "recordings" / "llm"
DEMO_FREEBASE = Path(__file__).resolve().parents[1] / "engine" / "data" / "demo_freebase.nt"
QUESTION = "Which country is Ulm in?"
TOPICS = {"freebase": {"m.019xz9": "Ulm"}}


@pytest.fixture
async def server():
    """127.0.0.1 server answering /v1/chat/completions and /v1/messages with the recorded replies in order."""
    seen: list[dict] = []
    replies: dict[str, list[str]] = {"/v1/chat/completions": ["openai_tool_calls.json", "openai_tool_answer.json"],
                                     "/v1/messages": ["anthropic_tool_use.json", "anthropic_tool_answer.json"]}

    async def answer(request: web.Request) -> web.Response:
        seen.append({"path": request.path, "headers": dict(request.headers), "body": await request.json()})
        return web.Response(body=(RECORDINGS / replies[request.path].pop(0)).read_bytes(), content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/chat/completions", answer)
    app.router.add_post("/v1/messages", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}", seen
    await runner.cleanup()


async def ask_agent(llm):
    async with KG.open(f"file:{DEMO_FREEBASE}", dialect="freebase", cache=False) as kg:
        with track():
            return await get_method("agent")({"freebase": kg}, llm).answer(QUESTION, TOPICS)


async def test_openai_native_tool_calls_round_trip(server):
    url, seen = server
    async with OpenAICompatibleLLM(url, "Qwen2-7B-Instruct") as llm:
        result = await ask_agent(llm)
    assert (result.answer, result.answer_ids) == ("Germany", ["m.0345h"])
    assert (result.cost["llm_calls"], result.cost["input_tokens"], result.cost["output_tokens"]) == (2, 2501, 60)
    first, second = (s["body"] for s in seen)
    assert [t["type"] for t in first["tools"]] == ["function"] * 6
    neighbors = next(t["function"] for t in first["tools"] if t["function"]["name"] == "neighbors")
    assert neighbors["parameters"]["required"] == ["entity", "relation"] and "x-kgfed" not in json.dumps(first["tools"])
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert first["messages"][1]["content"] == "Question: Which country is Ulm in?\nTopic entities: m.019xz9 (Ulm)"
    assistant, tool = second["messages"][2:]
    assert assistant == {"role": "assistant", "content": None, "tool_calls": [{
        "id": "chatcmpl-tool-3f1c9a0d2e7b4c61", "type": "function", "function": {
            "name": "neighbors", "arguments": "{\"entity\": \"m.019xz9\", \"relation\": \"location.location.containedby\", \"direction\": \"out\"}"}}]}
    assert tool["role"] == "tool" and tool["tool_call_id"] == "chatcmpl-tool-3f1c9a0d2e7b4c61"
    assert tool["content"].splitlines()[1:] == ["m.0345h: Germany"]


async def test_anthropic_native_tool_use_round_trip(server, monkeypatch):
    url, seen = server
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key")
    llm = AnthropicLLM("claude-haiku-4-5", base_url=url, max_retries=0)
    try:
        result = await ask_agent(llm)
    finally:
        await llm.aclose()
    assert (result.answer, result.answer_ids) == ("Germany", ["m.0345h"])
    assert (result.cost["llm_calls"], result.cost["input_tokens"], result.cost["output_tokens"]) == (2, 2737, 129)
    first, second = (s["body"] for s in seen)
    headers = {k.lower(): v for k, v in seen[0]["headers"].items()}
    assert "anthropic-version" in headers and seen[0]["path"] == "/v1/messages"
    assert first["system"].startswith("You answer questions by exploring knowledge graphs") and "temperature" not in first
    assert [set(t) for t in first["tools"]] == [{"name", "description", "input_schema"}] * 6
    assert first["messages"] == [{"role": "user", "content": "Question: Which country is Ulm in?\nTopic entities: m.019xz9 (Ulm)"}]
    assistant, results = second["messages"][1:]
    assert assistant == {"role": "assistant", "content": [
        {"type": "text", "text": "I will look up where Ulm is located."},
        {"type": "tool_use", "id": "toolu_01A9kgfedHandWritten0001", "name": "neighbors",
         "input": {"entity": "m.019xz9", "relation": "location.location.containedby", "direction": "out"}}]}
    [block] = results["content"]
    assert results["role"] == "user" and block["type"] == "tool_result"
    assert block["tool_use_id"] == "toolu_01A9kgfedHandWritten0001" and "is_error" not in block
    assert block["content"].splitlines()[1:] == ["m.0345h: Germany"]


def test_the_text_protocol_is_qwen25s_and_reads_every_block():
    tools = [{"name": "neighbors", "description": "one hop", "parameters": {"type": "object", "properties": {}}, "x-kgfed": {}}]
    messages = [Message("system", "Be brief."), Message("user", "Q?"),
                Message("assistant", "", (ToolCall("c0", "neighbors", '{"entity": "m.1"}'), ToolCall("c1", "neighbors", "{}"))),
                Message("tool", "m.2: Two", tool_call_id="c0"), Message("tool", "no KG takes it", tool_call_id="c1", is_error=True)]
    rendered = chat_messages(messages, tools)
    assert [m["role"] for m in rendered] == ["system", "user", "assistant", "user"]
    assert rendered[0]["content"].startswith("Be brief.\n\n# Tools\n") and "<tools>\n{\"type\": \"function\"" in rendered[0]["content"]
    assert "x-kgfed" not in rendered[0]["content"]
    assert rendered[2]["content"] == ('<tool_call>\n{"name": "neighbors", "arguments": {"entity": "m.1"}}\n</tool_call>\n'
                                      '<tool_call>\n{"name": "neighbors", "arguments": {}}\n</tool_call>')
    assert rendered[3]["content"] == ("<tool_response>\nm.2: Two\n</tool_response>\n"
                                      "<tool_response>\nerror: no KG takes it\n</tool_response>")
    system, prompt = as_prompt(messages, tools)
    assert system == rendered[0]["content"] and prompt.endswith("<|assistant|>\n")
    calls = read_tool_calls('ok <tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call> then '
                            '<tool_call>{"name": "b", "arguments": "{\\"y\\": 2}"}</tool_call><tool_call>{oops</tool_call>'
                            '<tool_call>{"name": "cut", "arguments": {')
    assert calls == (ToolCall("call_0", "a", '{"x": 1}'), ToolCall("call_1", "b", '{"y": 2}'),
                     ToolCall("call_2", "", "{oops"), ToolCall("call_3", "", '{"name": "cut", "arguments": {'))


async def test_chat_is_recorded_and_replayed_with_its_tool_calls(server, tmp_path):
    url, seen = server
    replies = tmp_path / "replies"
    async with make_llm(f"record:{replies}:openai:{url}#Qwen2-7B-Instruct") as recorder:
        recorded = await ask_agent(recorder)
    assert len(seen) == 2 and len(list(replies.iterdir())) == 2
    saved = [json.loads(p.read_text()) for p in sorted(replies.iterdir())]
    assert {c["name"] for s in saved for c in s["tool_calls"]} == {"neighbors", "answer"}
    replayed = await ask_agent(make_llm(f"replay:{replies}"))
    assert len(seen) == 2  # no HTTP
    assert (replayed.answer, replayed.answer_ids) == (recorded.answer, recorded.answer_ids) == ("Germany", ["m.0345h"])
    assert replayed.cost["input_tokens"] == recorded.cost["input_tokens"] == 2501
    with pytest.raises(LLMError, match="no recorded LLM reply for conversation [0-9a-f]{64}"):
        await make_llm(f"replay:{replies}").chat([Message("user", "other")], temperature=0)


def test_complete_is_unchanged_for_the_six_methods():
    """`complete()` sends one user prompt as before: the agent's chat adds, it does not replace."""
    async def main(url, seen):
        async with OpenAICompatibleLLM(url, "Qwen2-7B-Instruct") as llm:
            reply = await llm.complete("hello", temperature=0, max_tokens=8)
        return reply

    async def serve():
        seen: list[dict] = []

        async def answer(request):
            seen.append(await request.json())
            return web.Response(body=(RECORDINGS / "openai_chat_completion.json").read_bytes(), content_type="application/json")

        app = web.Application()
        app.router.add_post("/v1/chat/completions", answer)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        try:
            reply = await main(f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}", seen)
        finally:
            await runner.cleanup()
        return reply, seen

    reply, seen = asyncio.run(serve())
    assert seen == [{"model": "Qwen2-7B-Instruct", "messages": [{"role": "user", "content": "hello"}], "temperature": 0.0,
                     "max_tokens": 8}]
    assert reply.tool_calls == () and reply.text.startswith("{Yes}")


async def test_the_mcp_ask_tool_runs_the_agent(tmp_path):
    """`kgfed mcp --llm replay:DIR` answers `ask(method="agent")`: the conversation recorded in process from a
    scripted model (text protocol) replays byte for byte through the MCP server's own session and KGs."""
    pytest.importorskip("mcp")
    from kgfed.engine.toolbox.llm_base import LLM, Completion
    from kgfed.engine.toolbox.llm_replay import ReplayLLM

    from .test_mcp import call, stdio

    class Scripted(LLM):
        name = "scripted"

        def __init__(self, replies):
            super().__init__("scripted")
            self.replies = list(replies)

        async def _complete(self, prompt, *, temperature, max_tokens, system, **_):
            return Completion(self.replies.pop(0), 100, 10)

    replies = tmp_path / "replies"
    script = ['<tool_call>\n{"name": "neighbors", "arguments": {"entity": "m.019xz9", "relation": "location.location.containedby"}}\n</tool_call>',
              '<tool_call>\n{"name": "answer", "arguments": {"answers": ["m.0345h"]}}\n</tool_call>']
    demo = DEMO_FREEBASE.parent
    async with KG.open(f"file:{DEMO_FREEBASE}", dialect="freebase", cache=False) as fb, \
            KG.open(f"file:{demo / 'demo_wikidata.nt'}", dialect="wikidata", cache=False) as wd:
        recorded = await get_method("agent")({"wikidata": wd, "freebase": fb}, ReplayLLM(replies, record_with=Scripted(script))).answer(
            QUESTION, TOPICS)
    assert recorded.answer == "Germany" and len(list(replies.iterdir())) == 2
    async with stdio("--llm", f"replay:{replies}") as client:
        answer = await call(client, "ask", question=QUESTION, method="agent", topics=["m.019xz9"])
    assert (answer["method"], answer["answer"], answer["answer_ids"]) == ("agent", "Germany", ["m.0345h"])
    assert answer["cost"]["llm_calls"] == 2 and answer["cost"]["tool_calls"] == 2 and answer["cost"]["sparql_queries"] >= 1


def test_native_requests_carry_errors_and_group_results():
    from kgfed.engine.toolbox.llm_tools import anthropic_request, openai_calls, openai_request

    messages = [Message("system", "S"), Message("user", "Q?"),
                Message("assistant", "", (ToolCall("t1", "neighbors", '{"entity": "m.1"}'), ToolCall("t2", "labels", "not json"))),
                Message("tool", "m.2: Two", tool_call_id="t1"), Message("tool", "error: bad", tool_call_id="t2", is_error=True),
                Message("assistant", ""), Message("user", "error: no tool call in your reply.")]
    sent = anthropic_request(messages, [])
    assert sent["system"] == "S" and "tools" not in sent
    assert sent["messages"][1]["content"][1] == {"type": "tool_use", "id": "t2", "name": "labels", "input": {"text": "not json"}}
    assert sent["messages"][2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "m.2: Two"},
        {"type": "tool_result", "tool_use_id": "t2", "content": "error: bad", "is_error": True}]}
    assert sent["messages"][3] == {"role": "assistant", "content": "(empty reply)"}
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user", "assistant", "user"]
    wire = openai_request(messages, [])["messages"]
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool", "tool", "assistant", "user"]
    assert wire[4] == {"role": "tool", "tool_call_id": "t2", "content": "error: bad"}
    assert openai_calls({"tool_calls": [{"id": "c", "type": "function", "function": {"name": "x", "arguments": {"a": 1}}},
                                        {"type": "function", "function": {"arguments": "{}"}}]}) == (
        ToolCall("c", "x", '{"a": 1}'), ToolCall("call_1", "", "{}"))
