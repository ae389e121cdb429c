"""`kgfed mcp` driven by the MCP SDK's own client over both transports (stdio subprocess, streamable HTTP).

Values are checked against pyoxigraph stores of the same files; the read-only guard, host caps, cache
sharing and replay run against a local SPARQL endpoint (aiohttp over a pyoxigraph store) that would
execute an update if one reached it, so a missing guard fails the test.
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from . import httpfaults as hf
from .conftest import CODEX_NT, CWQ_NT, FED_DIR, ROOT, need

mcp = pytest.importorskip("mcp")
ox = pytest.importorskip("pyoxigraph")

from mcp import Client, StdioServerParameters  # noqa: E402

DEMO = ROOT / "engine" / "data"
KGFED = Path(sys.executable).parent / "kgfed"
WD, WDT = "http://www.wikidata.org/entity/", "http://www.wikidata.org/prop/direct/"
FB = "http://rdf.freebase.com/ns/"
TOOLS = {"search_entities", "relations", "neighbors", "labels", "align", "expand", "paths", "context", "sparql", "ask"}


# -- helpers ---------------------------------------------------------------------------------------
def store_of(*paths: Path):
    store = ox.Store()
    for path in paths:
        store.bulk_load(path=str(path), format=ox.RdfFormat.N_TRIPLES)
    return store


def column(store, query: str, var: str = "x") -> set[str]:
    return {s[var].value for s in store.query(query)}


def env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def stdio(*args: str, **options) -> Client:
    """A client that launches `kgfed mcp ARGS` and talks to it over stdin/stdout."""
    if not KGFED.exists():
        pytest.skip(f"{KGFED} is not installed (pip install -e .)")
    return Client(StdioServerParameters(command=str(KGFED), args=["mcp", *args], env=env(), cwd=str(ROOT)), **options)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@asynccontextmanager
async def http_server(*args: str):
    """`kgfed mcp --transport http` as a subprocess; yields its URL; stops it with SIGTERM."""
    if not KGFED.exists():
        pytest.skip(f"{KGFED} is not installed (pip install -e .)")
    port = free_port()
    proc = await asyncio.create_subprocess_exec(str(KGFED), "mcp", "--transport", "http", "--port", str(port), *args,
                                                env=env(), cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for _ in range(300):
            if proc.returncode is not None:
                raise AssertionError(f"kgfed mcp exited {proc.returncode}: {(await proc.stderr.read()).decode()[-800:]}")
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.1)
                continue
            writer.close()
            break
        else:
            raise AssertionError("kgfed mcp --transport http did not listen within 30 s")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        if proc.returncode is None:
            proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 15)
        except TimeoutError:
            proc.kill()
            await proc.wait()
    err = (await proc.stderr.read()).decode()
    assert "Traceback" not in err, err[-2000:]


async def call(client: Client, tool: str, **arguments):
    """A successful call's structured content (fails with the tool's message otherwise)."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    assert result.structured_content is not None and result.content and result.content[0].text
    return result.structured_content


async def refused(client: Client, tool: str, **arguments) -> str:
    """A call that must fail as a tool error: its one-line message."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} {arguments} should have been refused"
    text = result.content[0].text
    assert "Traceback" not in text and "\n" not in text.strip(), text
    return text


def oxigraph_step(store, *, delay: float = 0.0, updates: list[str] | None = None, headers: dict | None = None):
    """A permissive SPARQL endpoint: runs queries, and ALSO runs updates sent to it (as Virtuoso with update
    rights does), recording them; so any update that got through kgfed would change `store`."""
    from aiohttp import web

    async def step(request):
        params = {**request.query, **(dict(await request.post()) if request.method == "POST" else {})}
        text = params.get("query") or params.get("update") or ""
        if delay:
            await asyncio.sleep(delay)
        if "SERVICE" in text:  # pyoxigraph would fetch the service: this endpoint answers nothing instead
            return web.Response(body=b'{"head":{"vars":["o","l"]},"results":{"bindings":[]}}', content_type="application/sparql-results+json")
        try:
            result = store.query(text)
        except SyntaxError:
            try:
                store.update(text)
            except SyntaxError as exc:
                return web.Response(status=400, text=str(exc))
            if updates is not None:
                updates.append(text)
            return web.Response(body=b'{"head":{},"boolean":true}', content_type="application/sparql-results+json")
        return web.Response(body=result.serialize(format=ox.QueryResultsFormat.JSON), content_type="application/sparql-results+json",
                            headers=headers)
    return step


@asynccontextmanager
async def sparql_endpoint(store, **options):
    server = hf.FaultServer(script=[oxigraph_step(store, **options)])
    runner = await hf.start(server)
    try:
        yield server
    finally:
        await runner.cleanup()


# -- the tools on the bundled demo KGs (stdio) -----------------------------------------------------
async def test_stdio_lists_every_tool_with_schemas_and_calls_them_on_the_demo_kgs():
    wd = store_of(DEMO / "demo_wikidata.nt")
    fb = store_of(DEMO / "demo_freebase.nt")
    async with stdio("--methods", "p646,label", "--text-source", "demo") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        for tool in tools.values():
            assert tool.input_schema["type"] == "object" and tool.input_schema["properties"]
            assert tool.output_schema and "cost" in tool.output_schema["properties"] or tool.name == "ask"
            assert len(tool.description) > 150, tool.name
        assert tools["relations"].input_schema["properties"]["direction"]["enum"] == ["out", "in", "both"]
        assert "entity" in tools["relations"].input_schema["required"]
        assert set(tools["expand"].input_schema["properties"]) == {"topics", "hops", "width", "limit", "direction", "max_edges"}

        found = await call(client, "search_entities", text="Douglas Adams")
        assert {("freebase", "m.0282x"), ("wikidata", "Q42")} <= {(h["kg"], h["id"]) for h in found["hits"]}

        rels = await call(client, "relations", entity="Q42", direction="out")
        store_rels = column(wd, f"SELECT DISTINCT ?x WHERE {{ <{WD}Q42> ?p ?o FILTER(STRSTARTS(STR(?p), '{WDT}')) "
                                f"BIND(STRAFTER(STR(?p), '{WDT}') AS ?x) }}")
        assert {r["relation"] for r in rels["relations"]} == store_rels
        assert all(r["kg"] == "wikidata" and r["direction"] == "out" for r in rels["relations"])
        assert {"relation": "P69", "label": "educated at"}.items() <= next(r for r in rels["relations"] if r["relation"] == "P69").items()

        edges = (await call(client, "neighbors", entity="Q42", relation="P69"))["edges"]
        assert {e["entity"] for e in edges} == {o.removeprefix(WD) for o in column(wd, f"SELECT ?x WHERE {{ <{WD}Q42> <{WDT}P69> ?x }}")}
        cvt = "people.person.education|education.education.institution"
        edges = (await call(client, "neighbors", entity="m.0282x", relation=cvt))["edges"]
        expected = column(fb, f"SELECT ?x WHERE {{ <{FB}m.0282x> <{FB}people.person.education> ?c . "
                              f"?c <{FB}education.education.institution> ?x }}")
        assert {FB + e["entity"] for e in edges} == expected and all(e["via"] for e in edges)

        names = {(lab["kg"], lab["id"]): lab for lab in (await call(client, "labels", ids=["Q42", "P69", "m.0282x"]))["labels"]}
        assert names[("wikidata", "Q42")]["label"] == next(iter(column(wd, f"SELECT ?x WHERE {{ <{WD}Q42> <http://www.w3.org/2000/01/rdf-schema#label> ?x }}")))
        assert names[("wikidata", "P69")]["label"] == "educated at" and names[("freebase", "m.0282x")]["label"] == "Douglas Adams"

        links = (await call(client, "align", ids=["m.0282x"]))["alignments"]
        assert [(a["target_kg"], a["target"], a["method"], a["confidence"]) for a in links] == [("wikidata", "Q42", "p646", 1.0)]
        assert wd.query(f'ASK {{ <{WD}Q42> <{WDT}P646> "/m/0282x" }}')

        steps = []

        async def progress(done, total, message):
            steps.append((done, total, message))

        result = await client.call_tool("expand", {"topics": ["Q42"], "hops": 1, "width": 4}, progress_callback=progress)
        merged = result.structured_content
        assert [m for _, _, m in steps][:2] == ["aligning topics", "hop 1/1: 2 entities"] and steps[-1] == (3, 3, "done")
        topic = next(n for n in merged["nodes"] if n["topic"])
        assert topic["ids"] == {"freebase": "m.0282x", "wikidata": "Q42"}
        assert merged["edges"] and {e["kg"] for e in merged["edges"]} == {"freebase", "wikidata"}
        for edge in merged["edges"]:  # every wikidata edge is a triple of the store
            if edge["kg"] == "wikidata" and "|" not in edge["relation"]:
                s, o = merged["nodes"][edge["subject"]]["ids"]["wikidata"], merged["nodes"][edge["object"]]["ids"]["wikidata"]
                assert wd.query(f"ASK {{ <{WD}{s}> <{WDT}{edge['relation']}> <{WD}{o}> }}"), edge

        found = await call(client, "paths", entities=["Q42", "Q350"], max_depth=1)
        direct = {(p["steps"][0]["kg"], p["steps"][0]["relation"]) for p in found["paths"] if p["length"] == 1}
        assert ("wikidata", "P19") in direct and ("freebase", "people.person.place_of_birth") in direct
        assert wd.query(f"ASK {{ <{WD}Q42> <{WDT}P19> <{WD}Q350> }}")
        two = await call(client, "paths", entities=["Q42", "Q350"], max_depth=2)
        assert any(p["length"] == 2 and [s["direction"] for s in p["steps"]] == ["forward", "forward"] for p in two["paths"])

        passages = await call(client, "context", entities=["Q42"], question="Where did Douglas Adams study?", ranker="bm25", top_k=2)
        assert "St John's College" in passages["passages"][0]["text"] and passages["source"] == "demo"

        count = await call(client, "sparql", kg="wikidata", query="SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
        assert int(count["rows"][0]["n"]["value"]) == len(wd)
        for subject, expected in (("m.0282x", "true"), ("m.0nothing", "false")):
            asked = await call(client, "sparql", kg="freebase", query=f"ASK {{ <{FB}{subject}> ?p ?o }}")
            assert asked["vars"] == ["boolean"] and asked["rows"][0]["boolean"]["value"] == expected
        # pyoxigraph would fetch a SERVICE itself: on a file store none is allowed, not even WDQS's label service
        message = await refused(client, "sparql", kg="wikidata",
                                query='SELECT ?l WHERE { SERVICE wikibase:label { bd:serviceParam wikibase:language "en" } }')
        assert "allows no SERVICE" in message
        assert "which KG? give kg as one of freebase, wikidata" in await refused(client, "sparql", query="ASK { ?s ?p ?o }", kg="")
        assert "unknown KG" in await refused(client, "sparql", query="ASK { ?s ?p ?o }", kg="nope")

        kgs = json.loads((await client.read_resource("kgfed://kgs")).contents[0].text)
        assert [k["name"] for k in kgs] == ["freebase", "wikidata"] and kgs[1]["stats"]["queries"] > 0
        vocabulary = json.loads((await client.read_resource("kgfed://kg/wikidata/relations")).contents[0].text)
        assert {"relation": "P69", "label": "educated at"}.items() <= next(v for v in vocabulary if v["relation"] == "P69").items()
        prompt = await client.get_prompt("explore", {"question": "Where was Douglas Adams born?"})
        assert "search_entities" in prompt.messages[0].content.text


# -- the shared fixtures over streamable HTTP ------------------------------------------------------
async def test_http_transport_on_the_federation_fixture():
    fb_nt, wd_nt = need(FED_DIR / "freebase.nt"), need(FED_DIR / "wikidata.nt")
    question = json.loads((FED_DIR / "questions.jsonl").read_text().splitlines()[0])
    mid, qid, answer_qid = question["topic_mid"], question["topic_qid"], question["answer_qids"][0]
    wd, fb = store_of(wd_nt), store_of(fb_nt)
    async with http_server("--endpoint", f"freebase=file:{fb_nt}", "--endpoint", f"wikidata=file:{wd_nt}",
                           "--methods", "p646,label") as url, Client(url) as client:
        assert set(t.name for t in (await client.list_tools()).tools) == TOOLS
        rels = await call(client, "relations", entity=qid, direction="out")
        assert {r["relation"] for r in rels["relations"]} == {
            p.removeprefix(WDT) for p in column(wd, f"SELECT DISTINCT ?x WHERE {{ <{WD}{qid}> ?x ?o FILTER(STRSTARTS(STR(?x), '{WDT}')) }}")}
        prop = question["wikidata_property"]
        edges = (await call(client, "neighbors", entity=qid, relation=prop, limit=500))["edges"]
        assert {e["entity"] for e in edges} == {o.removeprefix(WD) for o in column(wd, f"SELECT ?x WHERE {{ <{WD}{qid}> <{WDT}{prop}> ?x }}")}
        assert answer_qid in {e["entity"] for e in edges}

        links = (await call(client, "align", ids=[mid]))["alignments"]
        assert (links[0]["target"], links[0]["method"]) == (qid, "p646")

        found = await call(client, "paths", entities=[qid, answer_qid], max_depth=1)
        assert any(s["relation"] == prop and s["kg"] == "wikidata" for p in found["paths"] for s in p["steps"])

        count = await call(client, "sparql", kg="freebase", query="SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
        assert int(count["rows"][0]["n"]["value"]) == len(fb)
        capped = await call(client, "sparql", kg="wikidata", query="SELECT ?s WHERE { ?s ?p ?o }", max_rows=7)
        assert capped["row_count"] == 7 and capped["truncated"] and "truncated" in capped["note"]
        # a web page in the user's browser cannot drive the loopback server (DNS rebinding, cross-origin)
        import aiohttp

        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        headers = {"Accept": "application/json, text/event-stream"}
        async with aiohttp.ClientSession() as http:
            async with http.post(url, json=body, headers={**headers, "Host": "evil.example"}) as response:
                assert response.status == 421
            async with http.post(url, json=body, headers={**headers, "Origin": "http://evil.example"}) as response:
                assert response.status == 403


async def test_stdio_cwq_and_codex_single_kgs_compound_cvt_relations():
    cwq, codex = need(CWQ_NT), need(CODEX_NT)
    fb = store_of(cwq)
    cvt = "people.person.places_lived|people.place_lived.location"
    async with stdio("--kg", "cwq,codex", "--endpoint", f"cwq=file:{cwq}", "--endpoint", f"codex=file:{codex}",
                     "--methods", "p646", mode="legacy") as client:  # the initialize handshake of pre-2026 clients
        assert client.server_info.name == "kgfed" and "cwq" in client.instructions
        rels = await call(client, "relations", entity="m.06w2sn5", kg="cwq")
        assert cvt in {r["relation"] for r in rels["relations"] if r["direction"] == "out"}
        edges = (await call(client, "neighbors", entity="m.06w2sn5", relation=cvt))["edges"]
        expected = column(fb, f"SELECT ?x WHERE {{ <{FB}m.06w2sn5> <{FB}people.person.places_lived> ?c . "
                              f"?c <{FB}people.place_lived.location> ?x }}")
        assert {FB + e["entity"] for e in edges} == expected and all(e["kg"] == "cwq" for e in edges)
        edges = (await call(client, "neighbors", entity="Q42", relation="P19"))["edges"]
        assert [(e["kg"], e["entity"], e["label"]) for e in edges] == [("codex", "Q350", "Cambridge")]
        message = await refused(client, "sparql", query="SELECT * WHERE { ?s ?p ?o }")
        assert "which KG" in message and "cwq, codex" in message


# -- safety: the read-only guard and hostile ids ---------------------------------------------------
async def test_sparql_is_read_only_and_hostile_ids_never_reach_the_endpoint():
    store = store_of(DEMO / "demo_wikidata.nt")
    before = len(store)
    updates: list[str] = []
    async with sparql_endpoint(store, updates=updates) as endpoint, \
            stdio("--kg", "wikidata", "--endpoint", f"wikidata={endpoint.url}", "--no-cache") as client:
        host = endpoint.url.split("/")[2].split(":")[0]
        hostile = [
            "INSERT DATA { <http://www.wikidata.org/entity/Q42> <http://example.org/p> 'x' }",
            "DELETE WHERE { ?s ?p ?o }",
            "PREFIX wd: <http://www.wikidata.org/entity/> DELETE { ?s ?p ?o } WHERE { wd:Q42 ?p ?o BIND(wd:Q42 AS ?s) }",
            "LOAD <http://example.org/data.nt>",
            "CLEAR ALL",
            "DROP GRAPH <http://example.org/g>",
            "SELECT * WHERE { ?s ?p ?o } ; INSERT DATA { <a:b> <a:c> <a:d> }",
        ]
        for query in hostile:
            message = await refused(client, "sparql", query=query)
            assert "read-only" in message or "not valid SPARQL" in message, message
        assert "CONSTRUCT queries are refused" in await refused(client, "sparql", query="CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }")
        for query in ("SELECT * WHERE { SERVICE <http://evil.example/sparql> { ?s ?p ?o } }",
                      "PREFIX e: <https://evil.example/> SELECT * WHERE { SERVICE SILENT e:q { ?s ?p ?o } }",
                      "SELECT * WHERE { ?s ?p ?o OPTIONAL { SERVICE ?where { ?s ?p ?x } } }",
                      "SELECT * WHERE { { SELECT ?s WHERE { SERVICE <http://169.254.169.254/> { ?s ?p ?o } } } }"):
            assert "SERVICE" in await refused(client, "sparql", query=query)
        assert not endpoint.seen, [s.query for s in endpoint.seen]
        # the endpoint's host on another port, and WDQS built-ins on an endpoint that is not WDQS, are refused
        for query in (f"SELECT ?o WHERE {{ SERVICE <http://{host}:1/sparql> {{ <{WD}Q42> <{WDT}P19> ?o }} }}",
                      'SELECT ?l WHERE { SERVICE wikibase:label { bd:serviceParam wikibase:language "en" } }'):
            assert "SERVICE" in await refused(client, "sparql", query=query)
        assert not endpoint.seen, [s.query for s in endpoint.seen]
        # a SERVICE back to the endpoint's own origin is refused too: it only multiplies the endpoint's work (issue 41)
        origin = endpoint.url.rsplit("/", 1)[0]
        query = f"SELECT ?o WHERE {{ SERVICE <{origin}/sparql> {{ <{WD}Q42> <{WDT}P19> ?o }} }}"
        assert "own endpoint" in await refused(client, "sparql", query=query)
        assert not endpoint.seen, [s.query for s in endpoint.seen]
        # an accepted query is sent as the caller wrote it, a LIMIT added after its last token
        query = f"SELECT ?o WHERE {{ <{WD}Q42> <{WDT}P19> ?o }}"
        assert (await call(client, "sparql", query=query))["rows"] == [{"o": {"type": "uri", "value": f"{WD}Q350"}}]
        assert endpoint.seen and endpoint.seen[-1].query == query + " LIMIT 101"
        for entity, relation in (("Q42> } ; DROP ALL #", "P69"), ("Q42", "P69> ?x } INSERT DATA { <a:b> <a:c> <a:d> } #"),
                                 ('m.0abc" .', "P19"), ("Q42\nDELETE", "P19")):
            message = await refused(client, "neighbors", entity=entity, relation=relation)
            assert "invalid" in message, message
        assert "invalid" in await refused(client, "labels", ids=["Q42", "Q1 } DROP ALL {"])
        assert "invalid" in await refused(client, "relations", entity="<http://evil.example/>")
        seen = len(endpoint.seen)
        assert "unknown KG" in await refused(client, "relations", entity="Q42", kg="nope")
        assert "give width ≥ 1" in await refused(client, "paths", entities=["Q42", "Q350"], max_depth=3)
        assert "invalid arguments (direction: Input should be" in await refused(client, "relations", entity="Q42", direction="sideways")
        assert len(endpoint.seen) == seen
        asked = await call(client, "sparql", query=f"ASK {{ <{WD}Q42> <{WDT}P19> <{WD}Q350> }}")
        assert asked["rows"] == [{"boolean": {"type": "literal", "value": "true", "datatype": "http://www.w3.org/2001/XMLSchema#boolean"}}]
        select = await call(client, "sparql", query="SELECT ?s WHERE { ?s ?p ?o }", max_rows=5)
        assert select["truncated"] and select["row_count"] == 5
        assert endpoint.seen[-1].query.rstrip().endswith("LIMIT 6")  # the row cap reached the endpoint
        # a trailing VALUES cannot undo the cap: the whole query is wrapped under it
        values = await call(client, "sparql", query=f"SELECT ?s ?o WHERE {{ ?s ?p ?o }} VALUES ?s {{ <{WD}Q42> }}", max_rows=2)
        assert values["truncated"] and values["row_count"] == 2
        assert endpoint.seen[-1].query.endswith("} LIMIT 3 VALUES ?s { <http://www.wikidata.org/entity/Q42> }")
        assert "unknown argument limit" in await refused(client, "sparql", query="ASK { ?s ?p ?o }", limit=3)
    assert len(store) == before and updates == []


# -- partial answers follow the --partial policy ---------------------------------------------------
async def test_partial_answers_are_errors_by_default_and_flagged_when_allowed():
    store = store_of(DEMO / "demo_wikidata.nt")
    timeout = {"X-SQL-State": "S1TAT", "X-SQL-Message": "RC...: Returning incomplete results, query interrupted by result timeout"}
    async with sparql_endpoint(store, headers=timeout) as endpoint:
        spec = f"wikidata={endpoint.url}"
        async with stdio("--kg", "wikidata", "--endpoint", spec, "--no-cache") as client:
            assert "partial" in (await refused(client, "relations", entity="Q42")).lower()
        async with stdio("--kg", "wikidata", "--endpoint", spec, "--no-cache", "--partial", "allow") as client:
            result = await client.call_tool("relations", {"entity": "Q42", "direction": "out"})
            rels = result.structured_content
            assert rels["partial"] and "incomplete results" in rels["partial_note"] and rels["relations"]
            assert "partial answer, rows may be missing" in result.content[0].text
            rows = await call(client, "sparql", query=f"SELECT ?o WHERE {{ <{WD}Q42> <{WDT}P69> ?o }}")
            assert rows["partial"] and "incomplete results" in rows["note"]
            assert {r["o"]["value"] for r in rows["rows"]} == column(store, f"SELECT ?x WHERE {{ <{WD}Q42> <{WDT}P69> ?x }}")


# -- one engine per run: cache and host caps shared across calls and sessions ----------------------
async def test_concurrent_calls_share_the_cache_and_the_host_cap():
    store = store_of(DEMO / "demo_wikidata.nt")
    async with sparql_endpoint(store, delay=0.3) as endpoint, \
            http_server("--kg", "wikidata", "--endpoint", f"wikidata={endpoint.url}", "--concurrency", "2") as url, \
            Client(url) as first, Client(url) as second:
        calls = [("relations", {"entity": e, "direction": "out"}) for e in ("Q42", "Q350", "Q145")] + \
                [("labels", {"ids": [e]}) for e in ("Q42", "Q5", "Q1860")]
        results = await asyncio.gather(*(client.call_tool(tool, args) for client in (first, second) for tool, args in calls))
        assert not any(r.is_error for r in results)
        assert len(endpoint.seen) == len(calls)  # the twin calls of the second session sent nothing
        assert endpoint.peak == 2  # six distinct queries at once, never more than --concurrency 2 in flight
        again = await call(first, "relations", entity="Q42", direction="out")
        assert again["cost"]["cache_hits"] == 1 and again["cost"]["requests_sent"] == 0
        assert again == {**results[0].structured_content, "cost": again["cost"]}
        stats = json.loads((await second.read_resource("kgfed://kgs")).contents[0].text)[0]["stats"]
        assert stats["queries"] == 2 * len(calls) + 1 and stats["cache_hits"] + stats.get("shared", 0) == len(calls) + 1
        assert len(endpoint.seen) == len(calls)


# -- record once, replay offline -------------------------------------------------------------------
async def test_replay_from_a_cassette_and_offline_from_the_cache(tmp_path):
    store = store_of(DEMO / "demo_wikidata.nt")
    cassette, cache = tmp_path / "mcp.yaml", tmp_path / "cache"
    async with sparql_endpoint(store) as endpoint:
        spec = f"wikidata={endpoint.url}"
        async with stdio("--kg", "wikidata", "--endpoint", spec, "--record", str(cassette), "--cache-dir", str(cache)) as client:
            live = await call(client, "neighbors", entity="Q42", relation="P69")
            names = await call(client, "labels", ids=["Q42"])
        sent = len(endpoint.seen)
    assert cassette.exists() and sent == 2
    # the endpoint is gone: the cassette (no cache) and the cache (--offline) answer alone
    async with stdio("--kg", "wikidata", "--endpoint", spec, "--replay", str(cassette), "--no-cache") as client:
        replayed = await call(client, "neighbors", entity="Q42", relation="P69")
        assert replayed["edges"] == live["edges"] and replayed["cost"]["requests_sent"] == 1
        assert (await call(client, "labels", ids=["Q42"]))["labels"] == names["labels"]
        assert "not in the cassette" in await refused(client, "labels", ids=["Q5"])
    async with stdio("--kg", "wikidata", "--endpoint", spec, "--offline", "--cache-dir", str(cache)) as client:
        cached = await call(client, "neighbors", entity="Q42", relation="P69")
        assert cached["edges"] == live["edges"] and cached["cost"]["cache_hits"] == 1
        assert "--offline" in await refused(client, "relations", entity="Q5")


# -- a whole method --------------------------------------------------------------------------------
@pytest.mark.embeddings
async def test_ask_sbert_alignment_and_sbert_passages_in_one_server():
    """The calls that load the embedding model, kept to one server and a few small calls."""
    pytest.importorskip("sentence_transformers")
    stores = {"wikidata": (store_of(DEMO / "demo_wikidata.nt"), WD, WDT), "freebase": (store_of(DEMO / "demo_freebase.nt"), FB, FB)}
    async with stdio() as client:
        answer = await call(client, "ask", question="Where was Douglas Adams born?", topics=["Q42"], width=2, depth=1)
        links = (await call(client, "align", ids=["m.07tg4"], methods=["sbert"]))["alignments"]
        passages = await call(client, "context", entities=["Q42"], question="Which college did Douglas Adams attend?", top_k=1)
    assert answer["method"] == "tog" and answer["answer"] and answer["paths"]
    assert answer["cost"]["sparql_queries"] > 0 and answer["cost"].get("llm_calls", 0) == 0 and answer["cost"]["seconds"] > 0
    for path in answer["paths"]:
        for edge in path:
            store, entity, relation = stores[edge["kg"]]
            if not edge["literal"] and "|" not in edge["relation"]:
                assert store.query(f"ASK {{ <{entity}{edge['subject']}> <{relation}{edge['relation']}> <{entity}{edge['object']}> }}"), edge
    assert [(a["target"], a["method"]) for a in links] == [("Q35794", "sbert")] and links[0]["confidence"] >= 0.9
    assert "St John's College" in passages["passages"][0]["text"]


# -- start-up and a second client ------------------------------------------------------------------
def test_other_commands_do_not_import_the_sdk():
    code = ("import sys; from kgfed.engine.cli.app import build_parser; build_parser(); "
            "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'kgfed.engine.mcp', 'uvicorn', 'starlette'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def inspector() -> list[str]:
    """The MCP Inspector's CLI (installed locally under $KGFED_INSPECTOR or on PATH), else skip."""
    prefix = os.environ.get("KGFED_INSPECTOR")  # an `npm install --prefix DIR @modelcontextprotocol/inspector` DIR
    local = Path(prefix) / "node_modules" / ".bin" / "mcp-inspector" if prefix else None
    if local is not None and local.exists():
        return [str(local)]
    if shutil.which("mcp-inspector"):
        return ["mcp-inspector"]
    pytest.skip("the MCP Inspector is not installed (npm install @modelcontextprotocol/inspector; see docs/mcp.md)")


def test_the_mcp_inspector_cli_lists_and_calls_the_tools():
    command = inspector()
    base = [*command, "--cli", str(KGFED), "mcp", "--methods", "p646,label"]
    listed = subprocess.run([*base, "--method", "tools/list"], capture_output=True, text=True, timeout=120, env=env())
    assert listed.returncode == 0, listed.stderr[-800:]
    assert {t["name"] for t in json.loads(listed.stdout)["tools"]} == TOOLS
    called = subprocess.run([*base, "--method", "tools/call", "--tool-name", "neighbors", "--tool-arg", "entity=Q42",
                             "--tool-arg", "relation=P19"], capture_output=True, text=True, timeout=120, env=env())
    assert called.returncode == 0, called.stderr[-800:]
    result = json.loads(called.stdout)
    assert [e["entity"] for e in result["structuredContent"]["edges"]] == ["Q350"]


def test_start_up_errors_are_one_line():
    if not KGFED.exists():
        pytest.skip(f"{KGFED} is not installed (pip install -e .)")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        runs = [subprocess.run([str(KGFED), "mcp", "--transport", "http", "--port", str(port)], capture_output=True, text=True,
                               timeout=60, env=env(), stdin=subprocess.DEVNULL)]
    runs.append(subprocess.run([str(KGFED), "mcp", "--endpoint", "freebase=file:/nonexistent/fb.nt"], capture_output=True,
                               text=True, timeout=60, env=env(), stdin=subprocess.DEVNULL))
    runs.append(subprocess.run([str(KGFED), "mcp", "--kg", "wikidata", "--endpoint", "freebase=file:x.nt"], capture_output=True,
                               text=True, timeout=60, env=env(), stdin=subprocess.DEVNULL))
    for run, expected in zip(runs, (f"cannot listen on 127.0.0.1:{port}", "no RDF file", "--kg does not list")):
        assert run.returncode == 2 and run.stdout == ""
        assert run.stderr.startswith("kgfed: error: ") and expected in run.stderr and run.stderr.count("\n") == 1, run.stderr
