"""Rollouts at RL scale: N concurrent simulated rollouts replay the agent method's tool calls against `kgfed serve`
and against the leaders' way (one SPARQLWrapper client per worker with a per-process dict cache), on one Virtuoso.

    python -m bench.rollouts                         # 256 rollouts over 40 CWQ questions' traces (a throwaway Virtuoso)
    python -m bench.rollouts --rollouts 512 --questions 60 --out bench/out/rollouts.jsonl
    python -m bench.rollouts --delay 0.05            # every Virtuoso request 50 ms later (bench/latency_proxy.py)

1. Traces: the agent method (`engine.agent.loop.run_agent`, profile kgfed) with `--llm gold` answers a seeded sample
   of the CWQ fixture over the Virtuoso; each tool call's name, arguments and text are kept (the agent's own), and,
   replayed once more with the response cache off, the SPARQL queries that call sent and their answers (a hash of
   the sorted bindings).
2. (a) `kgfed serve` (a child process on the same Virtuoso, an empty cache directory): N rollouts at once, rollout i
   replaying trace i mod T (GRPO-like: ~N/T samples a question) as one rollout (POST /v1/rollouts, then its calls
   one after the other). Every text must equal the agent's own.
   (b) N worker threads, each with its own `SPARQLWrapper(url)` (10 s timeout, JSON, POST) and its own dict cache
   (GraphWalker's client style: a worker is a process, its dict nobody else's), replaying the same traces' queries;
   every answer's hash must equal the trace's.
3. Cold: everything empty. Warm: the same servers and caches, every worker/rollout given the next trace (a new
   training step hands a worker other prompts). Reported per way: calls/s, p50/p99 call latency, the requests
   Virtuoso received (serve: its stats; SPARQLWrapper: the queries sent), the server's calls received, peak memory
   (serve: the server's VmHWM; SPARQLWrapper: the bench process's RSS growth) and the machine's load.
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("KGFED_DATA") or ROOT.parent / "shared" / "data")
QUESTIONS = DATA / "freebase" / "cwq_questions.jsonl"
SUBGRAPH = DATA / "freebase" / "cwq_subgraph.nt"
GRAPH = "http://kgfed.test/cwq"
KGFED = str(Path(sys.executable).with_name("kgfed"))


# -- traces ------------------------------------------------------------------------------------------------
class LoggingTransport:
    """The aiohttp transport, keeping each SPARQL query sent and its answer's hash (for the baseline's check)."""

    def __init__(self) -> None:
        from kgfed.endpoints.transport import AiohttpTransport

        self.inner = AiohttpTransport()
        self.log: list[tuple[str, str]] = []

    async def send(self, request: Any) -> Any:
        response = await self.inner.send(request)
        query = _query_of(request)
        if query is not None:
            self.log.append((query, bindings_hash(response.body)))
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def _query_of(request: Any) -> str | None:
    data = request.data
    if isinstance(data, (bytes, bytearray)):
        fields = parse_qs(data.decode())
        return fields.get("query", [None])[0]
    if isinstance(data, dict) and "query" in data:
        return str(data["query"])
    if request.params and "query" in request.params:
        return str(request.params["query"])
    return None


def bindings_hash(body: bytes | dict) -> str:
    """The answer's rows, order-free: a hash of the sorted JSON bindings."""
    doc = json.loads(body) if isinstance(body, (bytes, bytearray, str)) else body
    rows = sorted(json.dumps(b, sort_keys=True) for b in doc.get("results", {}).get("bindings", []))
    if "boolean" in doc:
        rows = [str(doc["boolean"])]
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()[:16]


def sample_questions(n: int, seed: int) -> list[dict]:
    rows = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    random.Random(seed).shuffle(rows)
    return rows[:n]


async def record_traces(url: str, questions: list[dict]) -> list[dict]:
    """The agent's tool calls and texts per question, and each call's SPARQL queries with their answers' hashes."""
    import kgfed.engine.harness.runner  # noqa: F401  (hands `--llm gold:FILE` the harness's question loader)
    from kgfed.engine.agent.loop import run_agent
    from kgfed.engine.agent.tools import ToolContext, get_profile
    from kgfed.engine.config import CacheOptions, KGSpec
    from kgfed.engine.serve.core import open_session

    transport = LoggingTransport()
    traces = []
    async with open_session([KGSpec.parse(f"freebase=freebase@{url}")], cache=CacheOptions(enabled=False),
                            llm=f"gold:{QUESTIONS}", transport=transport) as session:
        for q in questions:
            topics = {"freebase": dict(q["topic_entity"])}
            profile = get_profile("kgfed")(session.kgs)
            ctx = ToolContext(session.kgs, q["question"], topics)
            run = await run_agent(session.llm, profile, ctx, q["question"], turns=7, temperature=0.0, max_tokens=512)
            texts = {m.tool_call_id: m.content for m in run.messages if m.role == "tool"}
            calls = [{"tool": c.name, "arguments": json.loads(c.arguments or "{}"), "text": texts.get(c.id, "")}
                     for m in run.messages if m.role == "assistant" for c in m.tool_calls]
            # the same calls again on a fresh context, cache off: each call's queries (and the texts, once more)
            ctx = ToolContext(session.kgs, q["question"], topics)
            profile.opening(q["question"], ctx)
            for call in calls:
                transport.log.clear()
                if call["tool"] == profile.answer_name:
                    call["queries"] = []
                    continue
                try:
                    again = await profile.tool(call["tool"]).call(call["arguments"], ctx)
                except Exception as exc:  # a refused call: the agent read its error line
                    again = f"error: {exc}"
                assert again == call["text"] or call["text"].startswith("error:"), (call["tool"], again[:200], call["text"][:200])
                call["queries"] = list(transport.log)
            traces.append({"id": q["id"], "question": q["question"], "topics": topics, "calls": calls,
                           "answer": run.names, "gold": q["answers"]})
    return traces


# -- (a) kgfed serve ---------------------------------------------------------------------------------------
def start_server(url: str, cache_dir: str) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([KGFED, "serve", "--port", "0", "--kg", "freebase", "--endpoint", f"freebase=freebase@{url}",
                             "--cache-dir", cache_dir, "--max-inflight", "256", "--max-queue", "4096",
                             "--profiles", "kgfed"], stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    found = re.search(r"http://127\.0\.0\.1:(\d+)", line)
    if not found:
        proc.kill()
        raise SystemExit(f"kgfed serve did not start: {line}")
    return proc, int(found.group(1))


def vm(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


async def serve_round(port: int, traces: list[dict], n: int, shift: int, tag: str, batch: float,
                      max_batch: int = 256) -> dict[str, Any]:
    from kgfed.engine.serve.client import AsyncServeClient

    latencies: list[float] = []
    wrong: list[str] = []
    async with AsyncServeClient(f"http://127.0.0.1:{port}", connections=n, retries=20, batch_window=batch,
                                max_batch=max_batch) as client:
        async def rollout(i: int) -> None:
            trace = traces[(i + shift) % len(traces)]
            started = await client.start("kgfed", trace["question"], trace["topics"], f"{tag}-{i}")
            for call in trace["calls"]:
                t0 = time.perf_counter()
                reply = await client.call(call["tool"], call["arguments"], rollout_id=started["rollout_id"], profile="kgfed")
                latencies.append(time.perf_counter() - t0)
                expected = "answer recorded" if call["tool"] == "answer" else call["text"]
                if reply.text != expected and not (reply.error and expected.startswith("error:")):
                    wrong.append(f"{trace['id']} {call['tool']}: {reply.text[:80]!r} != {expected[:80]!r}")
                if reply.answer is not None and reply.answer["names"] != trace["answer"]:
                    wrong.append(f"{trace['id']} answer {reply.answer['names']} != {trace['answer']}")
        t0 = time.perf_counter()
        await asyncio.gather(*(rollout(i) for i in range(n)))
        wall = time.perf_counter() - t0
        status, body = await client.request("GET", "/v1/stats")
    return {"wall": wall, "latencies": latencies, "wrong": wrong, "stats": json.loads(body)}


# -- (b) one SPARQLWrapper client per worker, a dict cache each --------------------------------------------
def baseline_round(url: str, traces: list[dict], workers: list[dict], shift: int) -> dict[str, Any]:
    from SPARQLWrapper import JSON, POST, SPARQLWrapper

    latencies: list[float] = []
    wrong: list[str] = []
    sent = [0]
    lock = threading.Lock()
    barrier = threading.Barrier(len(workers) + 1)

    def work(i: int) -> None:
        state = workers[i]
        if "client" not in state:
            client = SPARQLWrapper(url)
            client.setReturnFormat(JSON)
            client.setMethod(POST)
            client.setTimeout(10)
            state["client"], state["cache"] = client, {}
        client, cache = state["client"], state["cache"]
        trace = traces[(i + shift) % len(traces)]
        mine, bad, count = [], [], 0
        barrier.wait()
        for call in trace["calls"]:
            t0 = time.perf_counter()
            for query, expected in call["queries"]:
                answer = cache.get(query)
                if answer is None:
                    client.setQuery(query)
                    count += 1
                    try:
                        answer = cache[query] = client.query().convert()
                    except Exception as exc:  # the client's error is the rollout's: counted as a wrong answer
                        bad.append(f"{trace['id']} {call['tool']}: {type(exc).__name__} {str(exc)[:60]}")
                        continue
                if bindings_hash(answer) != expected:
                    bad.append(f"{trace['id']} {call['tool']}")
            mine.append(time.perf_counter() - t0)
        with lock:
            latencies.extend(mine)
            wrong.extend(bad)
            sent[0] += count

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(len(workers))]
    rss0 = vm(os.getpid(), "VmRSS")
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return {"wall": wall, "latencies": latencies, "wrong": wrong, "sent": sent[0],
            "rss_growth_kb": vm(os.getpid(), "VmRSS") - rss0}


def summary(way: str, phase: str, got: dict[str, Any], requests: int, memory_kb: int, received: int | None) -> dict[str, Any]:
    lat = sorted(got["latencies"])
    pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000 if lat else 0.0  # noqa: E731
    return {"way": way, "phase": phase, "calls": len(lat), "calls_per_s": round(len(lat) / got["wall"], 1),
            "p50_ms": round(pct(0.50), 2), "p99_ms": round(pct(0.99), 2), "mean_ms": round(statistics.fmean(lat) * 1000, 2),
            "wall_s": round(got["wall"], 2), "virtuoso_requests": requests, "server_received": received,
            "memory_kb": memory_kb, "wrong": len(got["wrong"]), "wrong_examples": got["wrong"][:3],
            "load": round(os.getloadavg()[0], 2)}


class ProxyThread:
    """`bench.latency_proxy.LatencyProxy` on an event loop of its own thread (the SPARQLWrapper threads block)."""

    def __init__(self, target: str, delay: float):
        from .latency_proxy import LatencyProxy

        self.proxy = LatencyProxy(target, delay=delay)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self) -> ProxyThread:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.proxy.__aenter__(), self.loop).result(30)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.proxy.__aexit__(None, None, None), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


async def run(args: argparse.Namespace) -> list[dict]:
    import contextlib

    from kgfed.endpoints.servers import VirtuosoServer

    rows = []
    with VirtuosoServer({GRAPH: [SUBGRAPH]}) as virtuoso, tempfile.TemporaryDirectory() as tmp, \
            (ProxyThread(virtuoso.url, args.delay) if args.delay else contextlib.nullcontext()) as proxy:
        url = proxy.proxy.url if proxy is not None else virtuoso.url
        traces = await record_traces(virtuoso.url, sample_questions(args.questions, args.seed))
        answered = sum(1 for t in traces if t["answer"])
        print(f"traces: {len(traces)} questions, {sum(len(t['calls']) for t in traces)} calls, {answered} answered",
              file=sys.stderr)
        proc, port = start_server(url, str(Path(tmp) / "cache"))
        try:
            for phase, shift in (("cold", 0), ("warm", 1)):
                before = (await _stats(port))["kgs"]["freebase"].get("sent", 0)
                got = await serve_round(port, traces, args.rollouts, shift, phase, args.batch_ms / 1000, args.max_batch)
                sent = got["stats"]["kgs"]["freebase"].get("sent", 0) - before
                rows.append(summary("kgfed serve", phase, got, sent, vm(proc.pid, "VmHWM"),
                                    got["stats"]["calls"].get("calls", 0)))
                rows[-1]["http_requests"] = got["stats"]["calls"].get("batches", 0) + got["stats"]["calls"].get("rollouts", 0) \
                    if args.batch_ms else None  # batches and rollout starts, cumulative
                print(json.dumps(rows[-1]), file=sys.stderr)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=10)
            if proc.stderr:
                proc.stderr.close()
        workers: list[dict] = [{} for _ in range(args.rollouts)]
        for phase, shift in (("cold", 0), ("warm", 1)):
            got = baseline_round(url, traces, workers, shift)
            rows.append(summary("SPARQLWrapper per worker", phase, got, got["sent"], got["rss_growth_kb"], None))
            print(json.dumps(rows[-1]), file=sys.stderr)
    for phase in ("cold", "warm"):
        serve, base = (next(r for r in rows if r["phase"] == phase and r["way"] == w) for w in ("kgfed serve", "SPARQLWrapper per worker"))
        serve["speedup"] = round(serve["calls_per_s"] / max(base["calls_per_s"], 1e-9), 2)
        serve["p99_over_p50"] = round(serve["p99_ms"] / max(serve["p50_ms"], 1e-9), 2)
    for row in rows:
        row.update(rollouts=args.rollouts, questions=args.questions, delay_ms=round(args.delay * 1000),
                   batch_ms=args.batch_ms if row["way"] == "kgfed serve" else None)
    return rows


async def _stats(port: int) -> dict:
    from kgfed.engine.serve.client import AsyncServeClient

    async with AsyncServeClient(f"http://127.0.0.1:{port}") as client:
        return json.loads((await client.request("GET", "/v1/stats"))[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=256)
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--batch-ms", type=float, default=2.0,
                        help="the rollout worker's client gathers the calls of this window into one POST /v1/batch (0: one POST a call)")
    parser.add_argument("--max-batch", type=int, default=256, help="calls at most in one POST /v1/batch")
    parser.add_argument("--delay", type=float, default=0.0,
                        help="seconds added to every Virtuoso request by a loopback proxy (a remote or a full-size KG)")
    parser.add_argument("--out", help="append the rows to this JSONL file")
    args = parser.parse_args(argv)
    rows = asyncio.run(run(args))
    for row in rows:
        print(json.dumps(row))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "a") as handle:
            for row in rows:
                handle.write(json.dumps(row) + "\n")
    cold = next(r for r in rows if r["way"] == "kgfed serve" and r["phase"] == "cold")
    ok = all(r["wrong"] == 0 for r in rows) and cold["speedup"] >= 5 and cold["p99_over_p50"] <= 3
    print(f"checks: every answer the agent's own, >= 5x, p99 <= 3x p50: {'pass' if ok else 'FAIL'}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
