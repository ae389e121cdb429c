"""LLM-bound runs: one cap on calls in flight for the whole run, and busy answers (429/503/529) paused and retried.

Real HTTP on 127.0.0.1 only: the OpenAI-compatible provider against `bench.llm_bound.ScriptedLLMServer`
(fixed latency, a cap it enforces with OpenAI's own 429, scripted faults in the shapes OpenAI, vLLM and
llama.cpp send), and the official anthropic SDK pointed (`base_url`) at a scripted Messages API that
answers Anthropic's `rate_limit_error`/`overloaded_error` bodies with their `retry-after` headers.
"""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import pytest
from aiohttp import web

from bench.llm_bound import OPENAI_429, OPENAI_503, ScriptedLLMServer, chains, minimal_reply
from kgfed.cache.costs import track
from kgfed.engine.toolbox import prompts as P
from kgfed.engine.toolbox.llm import AnthropicLLM, LLMGate, busy_answer, make_llm, retry_after
from kgfed.sparql.errors import LLMError

from .conftest import CWQ_NT, CWQ_QUESTIONS, ROOT, need

QUOTA_429 = {"error": {"message": "You exceeded your current quota, please check your plan and billing details.",
                       "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}}
LLAMA_CPP_503 = {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}


def fast(llm, **gate):
    """Shrink the gate's backoff so a test waits milliseconds, not seconds (the bounds stay as given)."""
    llm.gate.backoff = gate.pop("backoff", 0.02)
    for key, value in gate.items():
        setattr(llm.gate, key, value)
    return llm


# -- the cap ----------------------------------------------------------------------------------------------
async def test_cap_holds_for_every_call_and_the_llm_stays_full():
    async with ScriptedLLMServer(latency=0.1, cap=3) as server:
        llm = make_llm(f"openai:{server.url}#m", concurrency=3)
        async with llm:
            started = time.monotonic()
            replies = await asyncio.gather(*(llm.complete(f"prompt {i}", temperature=0) for i in range(12)))
            took = time.monotonic() - started
    assert [r.text for r in replies] == ["{No}"] * 12
    assert server.peak == 3 and server.rejected == 0 and server.answered == 12  # never above the cap: no 429 needed
    assert llm.gate.stats["peak"] == 3 and llm.gate.stats["calls"] == 12
    assert took < 0.1 * 12 / 3 + 0.35  # 4 rounds of 3: the cap is used, not one call at a time


async def test_default_host_cap_rises_to_the_llm_cap(tmp_path):
    """The run's HttpClient caps a host at 16 by default: --llm-concurrency 24 raises the LLM host's cap to 24."""
    from kgfed.endpoints.client import HttpClient

    async with ScriptedLLMServer(latency=0.2) as server:
        async with HttpClient() as client:
            llm = make_llm(f"openai:{server.url}#m", client=client, concurrency=24)
            await asyncio.gather(*(llm.complete(f"p{i}", temperature=0) for i in range(30)))
            assert client.limit_for(llm.host) == 24
    assert server.peak == 24


async def test_a_cap_above_the_llms_settles_on_the_llms_after_one_pause():
    """Asked for 8 at once by a server that takes 4: the 429s narrow the gate to 4 (one shared pause), all succeed."""
    async with ScriptedLLMServer(latency=0.2, cap=4, retry_after=0.3) as server:
        llm = make_llm(f"openai:{server.url}#m", concurrency=8)
        async with llm:
            replies = await asyncio.gather(*(llm.complete(f"p{i}", temperature=0) for i in range(24)))
    assert len(replies) == 24 and server.answered == 24 and server.peak == 4
    assert llm.gate.cap == 4 and server.rejected == 4  # the first burst's four extra calls, then never again
    assert llm.gate.stats["busy"] == 4 and llm.gate.stats["peak"] == 8


async def test_the_narrowed_cap_grows_back_when_the_llm_stops_refusing():
    gate = LLMGate(6, recover=0.2)
    gate.in_flight = 5
    gate._narrow()
    assert gate.cap == 4
    gate.in_flight = 0

    async def fine():
        return "ok"
    await gate.call(fine)
    assert gate.cap == 4  # too soon
    await asyncio.sleep(0.25)
    await gate.call(fine)
    assert gate.cap == 5
    await asyncio.sleep(0.25)
    await gate.call(fine)
    await asyncio.sleep(0.25)
    await gate.call(fine)
    assert gate.cap == 6 == gate.concurrency  # never above the cap asked for


def test_bad_caps_are_one_line_errors():
    with pytest.raises(LLMError, match=r"^--llm-concurrency 0 is not a number of calls: give 1 or more"):
        LLMGate(0)
    done = subprocess.run([sys.executable, "-m", "kgfed.engine.cli", "run", "x.jsonl", "-o", "o.jsonl",
                           "--llm-concurrency", "0"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2 and done.stderr == ("kgfed: error: run: argument --llm-concurrency: must be >= 1, got 0 "
                                                    "(see kgfed run --help)\n")


# -- OpenAI-compatible busy answers ----------------------------------------------------------------------
async def test_openai_429_retry_after_pauses_every_call_then_all_succeed():
    """One 429 with Retry-After: 1 pauses the whole LLM for a second; nothing else is sent meanwhile."""
    faults = [(429, {"Retry-After": "1"}, OPENAI_429)]
    async with ScriptedLLMServer(latency=0.05, faults=faults) as server:
        llm = make_llm(f"openai:{server.url}#m", concurrency=4)
        async with llm:
            first = asyncio.create_task(llm.complete("first", temperature=0))
            await asyncio.sleep(0.2)  # the 429 has come back by now: the others start during the pause
            with track() as cost:
                rest = await asyncio.gather(*(llm.complete(f"p{i}", temperature=0) for i in range(6)))
            await first
    assert server.faulted == 1 and server.answered == 7 and len(rest) == 6
    pause_start = server.arrivals[0]
    sent_after = sorted(server.arrivals[1:])
    assert sent_after[0] - pause_start >= 0.95  # honoured: no request in the second Retry-After asked for
    assert llm.gate.stats["busy"] == 1 and llm.gate.stats["retries"] == 1
    assert cost["llm_calls"] == 6  # a retried call is charged once


@pytest.mark.parametrize("status,body", [(503, OPENAI_503), (503, LLAMA_CPP_503), (429, OPENAI_429)])
async def test_openai_busy_without_retry_after_backs_off_and_succeeds(status, body):
    faults = [(status, {}, body)] * 3
    async with ScriptedLLMServer(latency=0.01, faults=faults) as server:
        llm = fast(make_llm(f"openai:{server.url}#m"))
        async with llm:
            reply = await llm.complete(P.tog_evaluate_prompt("Q?", [("a", "r", "b")]), temperature=0)
    assert reply.text.startswith("{No}") and server.requests == 4 and llm.gate.stats["retries"] == 3


async def test_openai_busy_for_good_gives_up_in_one_line():
    faults = [(503, {}, OPENAI_503)] * 10
    async with ScriptedLLMServer(latency=0.01, faults=faults) as server:
        llm = fast(make_llm(f"openai:{server.url}#m"), max_attempts=4)
        async with llm:
            with pytest.raises(LLMError) as info:
                await llm.complete("x", temperature=0)
    message = str(info.value)
    assert "\n" not in message and server.requests == 4
    assert message.startswith(f"the LLM server at {server.url}/v1 stayed busy (the LLM server at {server.url}/v1 answered "
                              "HTTP 503 server_error: The server is overloaded or not ready yet.) after 4 attempts")
    assert message.endswith("lower --llm-concurrency, or run again later (answered questions are kept)")


async def test_quota_429_and_long_retry_after_fail_at_once():
    faults = [(429, {"Retry-After": "20"}, QUOTA_429), (429, {"Retry-After": "3600"}, OPENAI_429)]
    async with ScriptedLLMServer(latency=0.01, faults=faults) as server:
        llm = make_llm(f"openai:{server.url}#m")
        async with llm:
            with pytest.raises(LLMError, match=r"answered HTTP 429: You exceeded your current quota"):
                await llm.complete("x", temperature=0)
            with pytest.raises(LLMError, match=r"asks to wait 3600 s \(.*HTTP 429 requests: Rate limit reached.*\): more than 300 s"):
                await llm.complete("y", temperature=0)
    assert server.requests == 2  # neither was sent again


def test_retry_after_headers_and_busy_shapes():
    assert retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after({"Retry-After": "2"}) == 2.0 and retry_after({"Retry-After": "1.5"}) == 1.5
    assert 0 <= retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}) < 1 and retry_after({}) is None
    anthropic_429 = json.dumps({"type": "error", "error": {"type": "rate_limit_error", "message": "Number of request tokens "
                                "has exceeded your per-minute rate limit"}, "request_id": "req_011"})
    busy = busy_answer(429, {"retry-after": "7"}, anthropic_429, "the Anthropic API")
    assert (busy.status, busy.retry_after, busy.shared) == (429, 7.0, True)
    assert busy.message == "the Anthropic API answered HTTP 429 rate_limit_error: Number of request tokens has exceeded your per-minute rate limit"
    spend = json.dumps({"type": "error", "error": {"type": "rate_limit_error", "message": "spend limit",
                                                   "details": {"error_code": "enforced_spend_limit_reached"}}})
    assert busy_answer(429, {}, spend, "x") is None and busy_answer(400, {}, "{}", "x") is None
    assert busy_answer(529, {"x-should-retry": "false"}, "{}", "x") is None
    assert busy_answer(500, {}, "oops", "x").shared is False  # retried per call, a few times, no shared pause


# -- Anthropic: the official SDK against a scripted Messages API -----------------------------------------------
def anthropic_message(text: str) -> dict:
    return {"id": "msg_01Scripted", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": 3}}


def anthropic_error(kind: str, message: str, **details) -> dict:
    error = {"type": kind, "message": message, **({"details": details} if details else {})}
    return {"type": "error", "error": error, "request_id": "req_011Scripted"}


@pytest.fixture
async def anthropic_server():
    """A Messages API on 127.0.0.1: answers `script` (status, headers, body) in order, then 200 messages."""
    state = {"script": [], "arrivals": [], "active": 0, "peak": 0}

    async def messages(request: web.Request) -> web.Response:
        body = await request.json()
        state["arrivals"].append((time.monotonic(), request.headers.get("x-stainless-retry-count")))
        if state["script"]:
            status, headers, payload = state["script"].pop(0)
            return web.json_response(payload, status=status, headers={"request-id": "req_011Scripted", **headers})
        state["active"] += 1
        state["peak"] = max(state["peak"], state["active"])
        try:
            await asyncio.sleep(0.05)
        finally:
            state["active"] -= 1
        return web.json_response(anthropic_message("{Yes}. The answer is {" + body["messages"][0]["content"] + "}."))

    app = web.Application()
    app.router.add_post("/v1/messages", messages)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}", state
    await runner.cleanup()


async def test_anthropic_429_and_529_pause_the_run_and_retry(anthropic_server, monkeypatch):
    url, state = anthropic_server
    state["script"] = [(429, {"retry-after": "1"}, anthropic_error("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")),
                       (529, {}, anthropic_error("overloaded_error", "Overloaded"))]
    llm = fast(AnthropicLLM("claude-haiku-4-5", api_key="sk-ant-test-not-a-key", base_url=url))
    llm.limit(2)
    fast(llm)
    first = asyncio.create_task(llm.complete("Guatemala", temperature=0))
    await asyncio.sleep(0.3)
    others = await asyncio.gather(*(llm.complete(f"e{i}", temperature=0) for i in range(4)))
    reply = await first
    await llm.aclose()
    assert reply.text == "{Yes}. The answer is {Guatemala}." and [P.extract_answer(o.text) for o in others] == [f"e{i}" for i in range(4)]
    times = [t for t, _ in state["arrivals"]]
    assert min(times[1:]) - times[0] >= 0.95  # the 429's retry-after held every call, not only the one that got it
    assert {count for _, count in state["arrivals"]} <= {"0", None}  # the SDK never retried by itself
    assert len(times) == 7 and state["peak"] <= 2 and llm.gate.stats["busy"] == 2
    assert llm.usage.calls == 5


async def test_anthropic_spend_limit_and_bad_request_fail_at_once(anthropic_server):
    url, state = anthropic_server
    state["script"] = [(429, {}, anthropic_error("rate_limit_error", "You have reached your usage tier's monthly spend limit",
                                                 error_code="enforced_spend_limit_reached")),
                       (400, {}, anthropic_error("invalid_request_error", "max_tokens: must be at most 64000"))]
    llm = AnthropicLLM("claude-haiku-4-5", api_key="sk-ant-test-not-a-key", base_url=url)
    with pytest.raises(LLMError, match=r"^Anthropic API answered HTTP 429 for model claude-haiku-4-5: You have reached"):
        await llm.complete("x", temperature=0)
    with pytest.raises(LLMError, match=r"HTTP 400 .*max_tokens: must be at most 64000"):
        await llm.complete("y", temperature=0)
    await llm.aclose()
    assert len(state["arrivals"]) == 2


# -- a whole run: one cap for every question, busy answers never fail a question ----------------------------
@pytest.mark.slow
async def test_a_run_shares_one_cap_and_survives_busy_answers(tmp_path):
    need(CWQ_NT)
    from kgfed.engine.harness.datasets import load_dataset
    from kgfed.engine.config import CacheOptions, KGSpec
    from kgfed.engine.harness.runner import RunSpec, in_flight_for, run

    questions = load_dataset(str(need(CWQ_QUESTIONS)))[:6]
    faults = [(503, {"Retry-After": "1"}, OPENAI_503), (503, {}, LLAMA_CPP_503)]  # busy, not a sign of a lower cap
    async with ScriptedLLMServer(latency=0.05, cap=3, questions=[q.text for q in questions], faults=faults) as server:
        spec = RunSpec("tog", {}, kgs=(KGSpec("freebase", f"file:{CWQ_NT}"),), cache=CacheOptions(root=str(tmp_path / "c")),
                       llm=f"openai:{server.url}#m", llm_concurrency=3)
        assert in_flight_for(spec) == 8  # at least the usual 8 questions at once; 2 per allowed call beyond that
        summary = await run(spec, questions, tmp_path / "preds.jsonl", progress=False)
    assert summary["failed"] == 0 and summary["answered"] == 6
    assert summary["llm_gate"]["busy"] == 2 and summary["llm_gate"]["peak"] == 3  # the gate's figures in the summary
    assert server.peak == 3 and server.rejected == 0 and server.faulted == 2  # the cap held over all 6 questions at once
    per_question = chains(server.intervals)
    assert set(per_question) == {q.text for q in questions}  # every question's calls reached the LLM
    costs = [json.loads(line) for line in (tmp_path / "preds.costs.jsonl").read_text().splitlines()]
    assert sum(c["llm_calls"] for c in costs) == server.answered and not any(c.get("parse_fallbacks") for c in costs)


def test_minimal_replies_parse_for_every_tog_and_pog_kind():
    q = "Which nation has the Alta Verapaz Department and is in Central America?"
    relations = ["location.administrative_division.country", "film.film.starring", "location.location.containedby"]
    located = "What country is the Alta Verapaz Department located in?"  # shares words with two of the relations
    picked = P.parse_relation_scores(minimal_reply(P.tog_relation_prompt(located, "Alta Verapaz Department", relations, 2)), relations)
    assert [r for r, _ in picked] == ["location.administrative_division.country", "location.location.containedby"]
    assert P.parse_entity_scores(minimal_reply(P.tog_entity_prompt(q, "r", ["A", "B", "C", "D"])), ["A", "B", "C", "D"]) == [0.25] * 4
    triples = [("Alta Verapaz Department", "location.administrative_division.country", "Guatemala"),
               ("Guatemala", "location.location.containedby", "Central America")]
    verdict = minimal_reply(P.tog_evaluate_prompt(q, triples))
    assert verdict.startswith("{No}") or P.extract_answer(verdict) == "Central America"
    assert P.extract_answer(minimal_reply(P.tog_answer_prompt(q, triples))) == "Central America"
    analysis = P.parse_question_analysis(minimal_reply(P.pog_question_analysis_prompt(q, {"m.0146np": "Alta Verapaz Department"})))
    assert analysis.indicator.startswith('"Alta Verapaz Department"') and analysis.split_questions
    assert P.parse_path_selection(minimal_reply(P.pog_path_select_prompt(q, "cot", ["{a} - {r} - {b}"] * 5)), 5) == [0, 1, 2]
    assert P.parse_path_selection(minimal_reply(P.pog_edge_select_prompt(q, "cot", ["e"], ["x", "y"])), 2) == [0, 1]


def test_the_run_report_says_how_often_the_llm_was_busy():
    from kgfed.engine.cli.run import report_text

    summary = {"answered": 6, "questions": 6, "out": "p.jsonl", "new": 6, "skipped": 0, "failed": 0, "hits@1": 0.5,
               "strict": 0.5, "questions_per_second": 1.0, "queries_per_question": 3.0, "requests_per_question": 3.0,
               "cache_hit_rate": 0.0, "llm_calls_per_question": 5.0, "tokens_per_question": 900, "costs": "p.costs.jsonl",
               "llm_gate": {"busy": 2, "calls": 32, "paused": 1.5, "peak": 3, "retries": 2}}
    assert "the LLM answered busy (429/503/529) 2 times: retried, 2 s paused in all; at most 3 calls in flight" in report_text(summary)
    assert "busy" not in report_text({**summary, "llm_gate": {"calls": 30, "peak": 3}})
