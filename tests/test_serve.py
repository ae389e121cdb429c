"""`kgfed serve`: every tool of every profile through HTTP, the OpenAI listing, bad calls, auth, floods, Ctrl-C,
coalescing and replayable rollouts, on the bundled demo KGs (embedded pyoxigraph) and real sockets on 127.0.0.1."""
from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path

import jsonschema
import pytest

from kgfed.engine.config import CacheOptions, KGSpec
from kgfed.engine.serve import ServeOptions, ToolServer
from kgfed.engine.serve.client import AsyncServeClient
from kgfed.engine.serve.http import start_site
from kgfed.sparql.errors import KgfedError

KGFED = str(Path(sys.executable).with_name("kgfed"))


@asynccontextmanager
async def serving(**options):
    options.setdefault("cache", CacheOptions(enabled=False))
    server = ToolServer.open(ServeOptions(port=0, **options))
    runner, port = await start_site(server)
    try:
        async with AsyncServeClient(f"http://127.0.0.1:{port}", token=options.get("token"), retries=0) as client:
            yield server, client, port
    finally:
        await runner.cleanup()
        await server.aclose()


# one call per tool with arguments that reach the demo KGs, and a word its answer must show
CALLS = {
    "kgfed": [("search_entities", {"text": "Douglas Adams"}, "Q42"),
              ("relations", {"entity": "Q42"}, "P69"),
              ("neighbors", {"entity": "Q42", "relation": "P69", "direction": "out"}, "Q"),
              ("labels", {"ids": ["Q42", "m.0282x"]}, "Douglas Adams"),
              ("sparql", {"query": "SELECT ?o WHERE { <http://www.wikidata.org/entity/Q42> <http://www.wikidata.org/prop/direct/P69> ?o }",
                          "kg": "wikidata"}, "Q"),
              ("answer", {"answers": ["Q42"]}, "answer recorded")],
    "sog": [("search", {"entity": "m.0282x", "direction": "outgoing"}, "people.person"),
            ("answer", {"answers": ["x"]}, "answer recorded")],
    "kg-r1": [("get_relations_out", {"entity": "m.0282x"}, "people.person"),
              ("get_relations_in", {"entity": "Q42"}, ""),
              ("get_entities_out", {"entity": "Q42", "relation": "P69"}, "Q"),
              ("get_entities_in", {"entity": "Q42", "relation": "P50"}, ""),
              ("get_conditional_relations", {"entity": "m.0282x", "concept": "people"}, "people."),
              ("answer", {"answers": ["x"]}, "answer recorded")],
    "graphwalker": [("get_relations", {"entity": "m.0282x"}, "people.person"),
                    ("get_triples", {"entity": "m.0282x", "relations": ["people.person.education"]}, "Bachelor"),
                    ("answer", {"answers": ["x"]}, "answer recorded")],
    "wmde": [("search_items", {"query": "Douglas Adams"}, "Q42"),
             ("search_properties", {"query": "educated at"}, "P69"),
             ("get_statements", {"entity_id": "Q42"}, "P69"),
             ("get_statement_values", {"entity_id": "Q42", "property_id": "P69"}, "Q"),
             ("get_instance_and_subclass_hierarchy", {"entity_id": "Q42"}, "Q5"),
             ("execute_sparql", {"sparql": "SELECT ?o WHERE { wd:Q42 wdt:P69 ?o }"}, "Q"),
             ("answer", {"answers": ["x"]}, "answer recorded")],
}


async def test_every_tool_of_every_profile_answers_through_the_server():
    async with serving() as (server, client, _):
        assert set(server.profiles) == set(CALLS)
        for profile, calls in CALLS.items():
            listed = {t["function"]["name"] for t in json.loads((await client.request("GET", f"/v1/tools?profile={profile}"))[1])["tools"]}
            assert listed == {name for name, _, _ in calls}, profile  # every tool of the profile is exercised
            started = await client.start(profile, "Where was Douglas Adams educated?", {"Q42": "Douglas Adams"}
                                         if profile not in ("graphwalker",) else {"m.0282x": "Douglas Adams"})
            for name, arguments, shows in calls:
                reply = await client.call(name, arguments, rollout_id=started["rollout_id"], profile=profile)
                assert reply.status == 200 and not reply.error, (profile, name, reply.text)
                assert shows in reply.text, (profile, name, reply.text[:300])
        assert server.report()["calls"]["calls"] >= sum(len(c) for c in CALLS.values())


async def test_answers_are_the_agent_methods_own():
    """The server's text for a rollout is what the agent method's tools write in-process (same ToolContext path)."""
    from kgfed.engine.agent.tools import ToolContext, get_profile
    from kgfed.engine.serve.core import open_session

    steps = [("relations", {"entity": "Q42"}), ("neighbors", {"entity": "Q42", "relation": "P69"}),
             ("labels", {"ids": ["Q42", "P69"]})]
    async with open_session([KGSpec("freebase"), KGSpec("wikidata")], cache=CacheOptions(enabled=False)) as session:
        profile = get_profile("kgfed")(session.kgs)
        ctx = ToolContext(session.kgs, "q", {"wikidata": {"Q42": "Douglas Adams"}})
        profile.opening("q", ctx)
        own = [await profile.tool(name).call(args, ctx) for name, args in steps]
    async with serving() as (_, client, _):
        started = await client.start("kgfed", "q", {"wikidata": {"Q42": "Douglas Adams"}})
        got = [(await client.call(name, args, rollout_id=started["rollout_id"], profile="kgfed")).text for name, args in steps]
    assert got == own
    assert "(Douglas Adams)" in got[0]  # the rollout's context: the topic's name in the head, as the agent shows it


async def test_the_listing_validates_as_openai_function_schemas():
    async with serving() as (server, client, _):
        for profile in server.profiles:
            status, body = await client.request("GET", f"/v1/tools?profile={profile}")
            tools = json.loads(body)["tools"]
            assert status == 200 and tools
            for tool in tools:
                assert tool["type"] == "function" and set(tool["function"]) == {"name", "description", "parameters"}
                assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", tool["function"]["name"])  # OpenAI's name rule
                params = tool["function"]["parameters"]
                jsonschema.Draft202012Validator.check_schema(params)
                assert params["type"] == "object" and "x-kgfed" not in json.dumps(tool)
            try:
                from verl.tools.schemas import OpenAIFunctionToolSchema  # verl's own model, when verl is installed
            except ImportError:
                continue
            for tool in tools:
                assert OpenAIFunctionToolSchema.model_validate(tool).function.name == tool["function"]["name"]


BAD = [  # (method, path, raw body, status, words of the error)
    ("POST", "/v1/call", b"{not json", 400, "not JSON"),
    ("POST", "/v1/call", b"[1, 2]", 400, "JSON object"),
    ("POST", "/v1/call", json.dumps({"profile": "kgfed", "tool": "nope"}).encode(), 404, "unknown tool 'nope'"),
    ("POST", "/v1/call", json.dumps({"profile": "ghost", "tool": "relations"}).encode(), 404, "unknown profile"),
    ("POST", "/v1/call", json.dumps({"profile": "kgfed", "tool": "relations", "arguments": {"entity": 5}}).encode(), 400,
     "expected string, got integer"),
    ("POST", "/v1/call", json.dumps({"profile": "kgfed", "tool": "relations", "arguments": {"entity": "Q42", "x": 1}}).encode(),
     400, "unknown argument"),
    ("POST", "/v1/call", json.dumps({"profile": "kgfed", "tool": "relations", "arguments": {"entity": "Q42"}, "extra": 1}).encode(),
     400, "unknown field"),
    ("POST", "/v1/call", json.dumps({"profile": "kgfed", "tool": "relations", "arguments": "{bad"}).encode(), 400, "not valid JSON"),
    ("POST", "/v1/call", json.dumps({"profile": "kgfed", "tool": "relations", "arguments": {"entity": "Q42 } ; DROP"}}).encode(),
     400, "invalid id"),
    ("POST", "/v1/call", json.dumps({"profile": "kgfed", "tool": "relations", "arguments": {"entity": "Q42"},
                                     "rollout_id": 7}).encode(), 400, "rollout_id"),
    ("POST", "/v1/call", json.dumps({"profile": "kgfed", "tool": "relations", "arguments": {"entity": "Q42"},
                                     "deadline": "soon"}).encode(), 400, "deadline"),
    ("POST", "/v1/tools/sparql", json.dumps({"profile": "kgfed", "arguments": {"query": "DELETE WHERE { ?s ?p ?o }", "kg": "wikidata"}}).encode(),
     400, "read-only"),
    ("POST", "/v1/tools/sparql", json.dumps({"profile": "kgfed", "arguments": {
        "query": "SELECT * WHERE { SERVICE <http://127.0.0.1:1/sparql> { ?s ?p ?o } }", "kg": "wikidata"}}).encode(), 400, "SERVICE"),
    ("POST", "/v1/tools/sparql", json.dumps({"profile": "kgfed", "arguments": {
        "query": "SELECT (<bif:http_get>('http://127.0.0.1:1/') AS ?x) WHERE {}", "kg": "freebase"}}).encode(), 400, "bif:http_get"),
    ("POST", "/v1/rollouts", json.dumps({"profile": "kgfed", "topics": {"Q42 }": "x"}}).encode(), 400, "topics"),
    ("GET", "/v1/nowhere", b"", 404, "Not Found"),
]


async def test_bad_calls_get_one_line_json_errors_and_the_server_goes_on():
    async with serving() as (server, client, port):
        for method, path, raw, status, words in BAD:
            session = client._get()
            async with session.request(method, client.url + path, data=raw,
                                       headers={"Content-Type": "application/json"}) as response:
                body = await response.read()
            data = json.loads(body)
            assert response.status == status, (path, raw[:80], body)
            assert data["status"] == status and words.lower() in data["error"].lower(), (words, data)
            assert "\n" not in data["error"] and "Traceback" not in data["error"]
            good = await client.call("relations", {"entity": "Q42"}, profile="kgfed")
            assert good.status == 200 and "P69" in good.text
        assert server.report()["calls"]["tool_errors"] >= 3
        reader, writer = await asyncio.open_connection("127.0.0.1", port)  # a body announced over 1 MiB: refused unread
        writer.write(b"POST /v1/call HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2097152\r\n\r\n")
        await writer.drain()
        head = await asyncio.wait_for(reader.read(4096), 5)
        writer.close()
        assert b" 413 " in head.split(b"\r\n")[0] and b"at most 1048576" in head


async def test_a_call_past_its_deadline_is_504_and_the_next_one_answers():
    async with serving(coalesce_ms=200.0) as (_, client, _):  # the gathering window alone outlasts the deadline
        status, body = await client.request("POST", "/v1/call", {"profile": "kgfed", "tool": "relations",
                                                                 "arguments": {"entity": "Q42"}, "deadline": 0.05})
        assert status == 504 and "deadline" in json.loads(body)["error"]
        assert (await client.call("relations", {"entity": "Q42"}, profile="kgfed")).status == 200


async def test_concurrent_single_calls_are_gathered_into_batches_with_the_same_answers():
    entities = ["Q42", "Q5", "Q35794", "Q145", "Q84", "Q691283", "P69", "Q3918", "m.0282x", "m.0demo_cvt01"]
    async with serving(coalesce_ms=0.0) as (_, client, _):
        alone = [(await client.call("relations", {"entity": e}, profile="kgfed")).text for e in entities]
    async with serving(coalesce_ms=20.0) as (server, client, _):
        together = await asyncio.gather(*(client.call("relations", {"entity": e}, profile="kgfed") for e in entities))
        again = await asyncio.gather(*(client.call("relations", {"entity": e}, profile="kgfed") for e in entities))
        report = server.report()
    assert [r.text for r in together] == alone == [r.text for r in again]
    assert report["coalesced"]["batches"] <= 4 and report["coalesced"]["batched_keys"] == len(entities)
    assert report["coalesced"]["memo"] == len(entities)  # the second round: from memory, no new batch
    assert report["kgs"]["wikidata"]["sent"] + report["kgs"]["freebase"]["sent"] <= 8  # two directions a KG, at most


async def test_a_token_is_required_off_loopback_and_compared():
    with pytest.raises(KgfedError, match="token is required"):
        ToolServer.open(ServeOptions(host="0.0.0.0", cache=CacheOptions(enabled=False)))
    token = "t0ken-" + "x" * 30
    async with serving(token=token) as (_, client, port):
        assert (await client.call("relations", {"entity": "Q42"}, profile="kgfed")).status == 200
        async with AsyncServeClient(f"http://127.0.0.1:{port}", retries=0) as anonymous:
            reply = await anonymous.call("relations", {"entity": "Q42"}, profile="kgfed")
            assert reply.status == 401 and "bearer token" in reply.text
        async with AsyncServeClient(f"http://127.0.0.1:{port}", token=token[:-1] + "y", retries=0) as wrong:
            reply = await wrong.call("relations", {"entity": "Q42"}, profile="kgfed")
            assert reply.status == 401 and token not in reply.text


def test_the_command_refuses_another_interface_without_a_token(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "KGFED_SERVE_TOKEN"}
    done = subprocess.run([KGFED, "serve", "--host", "0.0.0.0", "--no-cache"], capture_output=True, text=True,
                          timeout=60, env=env)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "kgfed: error:" in done.stderr and "token is required" in done.stderr


def _start(*args: str, env: dict | None = None) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([KGFED, "serve", "--port", "0", "--no-cache", *args], stderr=subprocess.PIPE, text=True,
                            env=env)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    found = re.search(r"http://127\.0\.0\.1:(\d+)", line)
    assert found, line
    return proc, int(found.group(1))


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_ctrl_c_stops_the_server_in_about_a_second():
    token = "s3cret-" + "z" * 30
    proc, port = _start(env={**os.environ, "KGFED_SERVE_TOKEN": token})
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):  # an idle client connected must not hold it
            started = time.monotonic()
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=10)
            assert time.monotonic() - started < 3.0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        rest = proc.stderr.read() if proc.stderr else ""
        if proc.stderr:
            proc.stderr.close()
    assert token not in rest and "Traceback" not in rest


async def _flood(port: int, n: int) -> dict[int, int]:
    counts: dict[int, int] = {}
    async with AsyncServeClient(f"http://127.0.0.1:{port}", retries=0, connections=n) as client:
        async def one(i: int) -> None:
            query = f"SELECT ?o WHERE {{ <http://www.wikidata.org/entity/Q42> ?p ?o }} LIMIT {i % 50 + 1}"  # no memo
            status, body = await client.request("POST", "/v1/call", {"profile": "kgfed", "tool": "sparql",
                                                                     "arguments": {"query": query, "kg": "wikidata"}})
            counts[status] = counts.get(status, 0) + 1
            if status == 429:
                assert json.loads(body)["error"].startswith("the server is busy")
        await asyncio.gather(*(one(i) for i in range(n)))
    return counts


async def test_a_flood_gets_429_with_retry_after_and_memory_stays_flat():
    proc, port = _start("--max-inflight", "1", "--max-queue", "4", "--coalesce-ms", "50")
    try:
        first = await _flood(port, 300)
        assert first.get(429, 0) > 0 and first.get(200, 0) >= 1 and set(first) <= {200, 429}
        base = _rss_kb(proc.pid)
        for _ in range(4):
            counts = await _flood(port, 300)
            assert counts.get(429, 0) > 0
        grown = _rss_kb(proc.pid) - base
        assert grown < 30_000, f"RSS grew {grown} kB over four floods of 300 calls"
        async with AsyncServeClient(f"http://127.0.0.1:{port}", retries=0) as client:
            async with client._get().post(client.url + "/v1/call", json={"profile": "kgfed", "tool": "relations",
                                                                          "arguments": {"entity": "Q42"}}) as response:
                assert response.status == 200
            status, body = await client.request("GET", "/v1/stats")
            assert json.loads(body)["calls"]["rejected"] > 0
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)
        if proc.stderr:
            proc.stderr.close()


async def test_a_stalled_client_holds_only_its_own_connection():
    async with serving(read_timeout=1.0) as (_, client, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /v1/call HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{")
        await writer.drain()
        started = time.monotonic()
        replies = await asyncio.gather(*(client.call("relations", {"entity": "Q42"}, profile="kgfed") for _ in range(5)))
        assert all(r.status == 200 for r in replies) and time.monotonic() - started < 1.0
        head = await asyncio.wait_for(reader.read(4096), 5)
        assert b" 408 " in head.split(b"\r\n")[0] and b"did not arrive within 1 s" in head
        writer.close()


async def test_a_rollout_is_recorded_and_replayed_byte_for_byte(tmp_path):
    calls = [("relations", {"entity": "Q42"}), ("neighbors", {"entity": "Q42", "relation": "P69"}),
             ("relations", {"entity": 42}), ("labels", {"ids": ["Q42"]}), ("answer", {"answers": ["Q42"]})]

    async def rollout(client) -> list[tuple[int, bytes]]:
        started = await client.start("kgfed", "Where was Douglas Adams educated?", {"Q42": "Douglas Adams"})
        return [await client.request("POST", "/v1/call", {"profile": "kgfed", "tool": t, "arguments": a,
                                                          "rollout_id": started["rollout_id"]}) for t, a in calls]

    async with serving(record=str(tmp_path)) as (_, client, _):
        recorded = await rollout(client)
    assert [s for s, _ in recorded] == [200, 200, 400, 200, 200]
    assert json.loads(recorded[-1][1])["answer"] == {"names": ["Douglas Adams"], "ids": ["Q42"]}
    # replay: the KG is a port nothing listens on, so any request to it would fail the calls
    dead = (KGSpec.parse("freebase=freebase@http://127.0.0.1:9/sparql"), KGSpec.parse("wikidata=wikidata@http://127.0.0.1:9/sparql"))
    async with serving(replay=str(tmp_path), kgs=dead) as (server, client, _):
        assert await rollout(client) == recorded
        status, body = await client.request("POST", "/v1/call", {"profile": "kgfed", "tool": "relations",
                                                                 "arguments": {"entity": "Q5"}, "rollout_id": "other"})
        assert status == 409 and "not recorded" in json.loads(body)["error"]
        assert all(not kg.inner.stats.get("sent") for kg in server.kgs.values())


async def test_a_batch_answers_each_call_as_if_alone_and_the_batching_client_sends_fewer_requests():
    calls = [{"profile": "kgfed", "tool": "relations", "arguments": {"entity": e}} for e in ("Q42", "Q5", "m.0282x")]
    calls.append({"profile": "kgfed", "tool": "relations", "arguments": {"entity": 5}})
    async with serving() as (server, client, port):
        alone = [await client.request("POST", "/v1/call", call) for call in calls]
        status, body = await client.request("POST", "/v1/batch", {"calls": calls})
        results = json.loads(body)["results"]
        assert status == 200 and [r["status"] for r in results] == [s for s, _ in alone] == [200, 200, 200, 400]
        assert [json.dumps(r["body"], sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode() for r in results] \
            == [b for _, b in alone]
        status, body = await client.request("POST", "/v1/batch", {"calls": []})
        assert status == 400 and "1-1024 calls" in json.loads(body)["error"]
        async with AsyncServeClient(f"http://127.0.0.1:{port}", batch_window=0.02) as batching:
            replies = await asyncio.gather(*(batching.call(c["tool"], c["arguments"], profile="kgfed") for c in calls * 10))
        assert [r.body for r in replies] == [b for _, b in alone] * 10
        assert server.report()["calls"]["batches"] <= 3  # 40 calls in one or two requests (plus the one above)
