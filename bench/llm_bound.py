"""LLM-bound runs: how close a run comes to keeping a capped LLM busy all the time.

    python -m bench.llm_bound                                  # ToG and PoG, 100 CWQ questions, 500 ms, cap 16
    python -m bench.llm_bound --methods tog --limit 40 --latency 0.5 --concurrency 16 --in-flight 0

A scripted OpenAI-compatible server (`ScriptedLLMServer`, aiohttp on 127.0.0.1, in a child process so
its timing does not share the run's event loop) answers every chat completion after a fixed latency
and refuses with OpenAI's 429 (`rate_limit_exceeded`, `Retry-After`) whatever goes beyond its
concurrency cap. Its replies are well-formed for every ToG and PoG prompt kind (`minimal_reply`,
read by the parsers in `engine/toolbox/prompts/parsers.py`), chosen from the prompt text alone, so a run is
repeatable. Each method runs twice over the same cache directory:

1. *uncapped* (`--llm-concurrency` unset, every question in flight, the server's cap off): each
   question's dependent chain of LLM calls shows as the union of its calls' intervals (the server
   tells the questions apart by their text in the prompts); it also warms the KG and embedding caches;
2. *capped* (`--llm-concurrency N`, server cap N): the timed run.

The bound is max(total LLM seconds / N, the longest chain); the figure is the capped run's wall time
(the harness's own `seconds`: answering, not opening the runtime) against it. The gap is broken down:
the server's utilisation over time (time to the first call, the tail once fewer than N calls are in
flight for good), 429s sent, and how long the run's event loop was held up between callbacks (a
10 ms ticker's overshoot: CPU work such as SBERT encoding or parsing on the loop).
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from aiohttp import web

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("KGFED_SHARED", ROOT.parent / "shared"))
CWQ_QUESTIONS = SHARED / "data" / "freebase" / "cwq_questions.jsonl"
CWQ_NT = SHARED / "data" / "freebase" / "cwq_subgraph.nt"
MODEL = "scripted-500ms"


# -- replies: well-formed for every ToG and PoG prompt kind, chosen from the prompt alone -----------------
def _lines_after(prompt: str, marker: str) -> list[str]:
    at = prompt.rfind(marker)
    return [] if at < 0 else [line.strip() for line in prompt[at + len(marker):].splitlines() if line.strip()]


def _flip(prompt: str) -> bool:
    """A repeatable coin per prompt: half the sufficiency checks say yes."""
    return hashlib.sha256(prompt.encode()).digest()[0] % 2 == 0


def _question_words(prompt: str) -> set[str]:
    asked = re.findall(r"(?:^|\n)Q: ?(.+)", prompt)  # the last one: the few-shot examples come first
    return _stems(asked[-1] if asked else "")


def _stems(text: str) -> set[str]:
    """Words of 3+ letters cut to 5 ("located" and "location" meet)."""
    return {w[:5] for w in re.findall(r"[a-z]{3,}", text.lower())}


def minimal_reply(prompt: str) -> str:
    """A reply in the format the prompt asks for (ToG: relations, entities, evaluate, answer, direct;
    PoG: analysis, path/edge selection, summary, evaluate, generate, supplement); `{No}` otherwise."""
    head = prompt.lstrip()[:120]
    if head.startswith("Please retrieve"):  # ToG relation pruning: the offered relations closest to the question
        m = re.search(r"Please retrieve (\d+) relations", head)
        width = int(m.group(1)) if m else 3
        tail = prompt[prompt.rfind("Relations:") + len("Relations:"):]
        tail = tail[:tail.rfind("A:")] if "A:" in tail else tail
        names = [re.sub(r"^\d+\.\s*", "", r.strip()) for r in re.split(r";|\n", tail) if r.strip()]
        words = _question_words(prompt)
        ranked = sorted(names, key=lambda r: -len(words & _stems(r)))[:width]
        share = round(1 / max(1, len(ranked)), 2)
        return " ".join(f"{i}. {{{r} (Score: {share})}}: shares words with the question." for i, r in enumerate(ranked, 1))
    if head.startswith("Please score the entities"):  # ToG entity scoring: equal shares
        tail = prompt[prompt.rfind("Entites:") + len("Entites:"):].split("\nScore:")[0]
        names = [n for n in re.split(r";|\n-", tail) if n.strip()]
        return ", ".join([f"{1 / max(1, len(names)):.3f}"] * max(1, len(names)))
    if "Knowledge Triplets:" in prompt and "whether it's sufficient" in prompt[:300]:  # ToG evaluation
        triples = [t for t in _lines_after(prompt, "Knowledge Triplets:") if t.count(",") >= 2]
        if len(triples) >= 2 and _flip(prompt):
            return f"{{Yes}}. Based on the given knowledge triplets, the answer is {{{triples[-1].rsplit(',', 1)[-1].strip(' A:')}}}."
        return "{No}. The given knowledge triplets do not answer the question yet."
    if "Knowledge Triplets:" in prompt:  # ToG answer
        triples = [t for t in _lines_after(prompt, "Knowledge Triplets:") if t.count(",") >= 2]
        answer = triples[-1].rsplit(",", 1)[-1].strip(" A:") if triples else "unknown"
        return f"Based on the given knowledge triplets, the answer is {{{answer}}}."
    if head.startswith("Q: What state is home to the university"):  # ToG's generate-directly
        return "The answer is {unknown}."
    if head.startswith("You will receive a multi-hop question"):  # PoG question analysis
        topics = re.findall(r"'[^']*': '([^']*)'", prompt[prompt.rfind("Main Topic Entities"):])
        chain = " - relation - ".join(f'"{t}"' for t in topics[:1]) or '"topic"'
        splits = "\n".join(f'split_question{i}: What is related to "{t}"?' for i, t in enumerate(topics or ["topic"], 1))
        return f"Thinking Cot: {chain} - relation - answer(entity)\n{splits}"
    if head.startswith("Given a question and the associated retrieved entities lists"):  # PoG path selection
        count = len(re.findall(r"\nPath \d+:", prompt))
        return "Answer: top_list: {" + ", ".join(f"Path {i}" for i in range(1, min(3, count) + 1)) + "}"
    if "Candidate Edge list" in prompt:  # PoG edge selection
        count = len(re.findall(r"\nCandidate Edge \d+:", prompt))
        return "top_list:{" + ", ".join(f"Candidate Edge {i}" for i in range(1, min(3, count) + 1)) + "}"
    if head.startswith("Given a main question") and "summarize the provided" in prompt[:600]:  # PoG summary
        return "The related paths connect the topic entities to candidate answers."
    if head.startswith("Given a main question") and "respond {Yes}" in prompt[:900]:  # PoG evaluation
        paths = _lines_after(prompt, "Related Paths:")
        ends = re.findall(r"\{([^{}]+)\}\s*$", paths[0]) if paths and _flip(prompt) else []
        return f"{{Yes}}. The answer is {{{ends[-1].split(',')[0].strip()}}}." if ends else "{No}. The paths are not enough."
    if head.startswith("Given a main question"):  # PoG generation (and HydraRAG's refinement: a new question)
        return "New question: what else is known?\n{unknown}" if "New question" in prompt[:1200] else "{unknown}"
    if head.startswith("Using the main question"):  # PoG supplement
        return 'Predict 1: {unknown}\nThinking Cot 1: "topic" - relation - answer(unknown)'
    return "{No}"


# -- the scripted server -------------------------------------------------------------------------------------
OPENAI_429 = {"error": {"message": "Rate limit reached for requests in organization org-scripted on requests per min "
                                   "(RPM): Limit 16, Used 16, Requested 1. Please try again in 1s.",
                        "type": "requests", "param": None, "code": "rate_limit_exceeded"}}
OPENAI_503 = {"error": {"message": "The server is overloaded or not ready yet.", "type": "server_error", "param": None,
                        "code": None}}


class ScriptedLLMServer:
    """An OpenAI-compatible chat server on 127.0.0.1: fixed latency, a concurrency cap, scripted faults.

    `replies(prompt) -> text` makes each answer (default `minimal_reply`). Beyond `cap` calls in
    flight it answers OpenAI's 429 with `Retry-After: retry_after`. `faults` is a list of
    `(status, headers, body)` answered, in order, to the next requests before any normal answer.
    `questions` lets it charge each call to the question whose text the prompt holds (`intervals`).
    """

    def __init__(self, *, latency: float = 0.5, cap: int | None = None, retry_after: float = 1.0,
                 replies: Callable[[str], str] = minimal_reply, faults: Sequence[tuple[int, dict, object]] = (),
                 questions: Sequence[str] = ()):
        self.latency, self.cap, self.retry_after, self.replies = latency, cap, retry_after, replies
        self.faults = list(faults)
        self.questions = sorted(set(questions), key=len, reverse=True)
        self.url = ""
        self._runner: web.AppRunner | None = None
        self.reset()

    def reset(self) -> None:
        self.requests = self.answered = self.rejected = self.faulted = self.active = self.peak = 0
        self.started = time.monotonic()
        self.intervals: list[tuple[str, float, float]] = []  # (question, start, end) of answered calls
        self.timeline: list[tuple[float, int]] = []  # (time, calls in flight) at every change
        self.arrivals: list[float] = []

    def _question_of(self, prompt: str) -> str:
        return next((q for q in self.questions if q in prompt), "")

    def _mark(self, delta: int) -> None:
        self.active += delta
        self.peak = max(self.peak, self.active)
        self.timeline.append((time.monotonic() - self.started, self.active))

    async def chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests += 1
        self.arrivals.append(time.monotonic() - self.started)
        if self.faults:
            status, headers, payload = self.faults.pop(0)
            self.faulted += 1
            return web.json_response(payload, status=status, headers=headers)
        if self.cap is not None and self.active >= self.cap:
            self.rejected += 1
            return web.json_response(OPENAI_429, status=429, headers={"Retry-After": f"{self.retry_after:g}"})
        prompt = body["messages"][-1]["content"]
        start = time.monotonic() - self.started
        self._mark(+1)
        try:  # the reply is made while the latency runs (a gold stand-in may ask its KG first)
            made = self.replies(prompt)
            reply = asyncio.ensure_future(made) if asyncio.isfuture(made) or asyncio.iscoroutine(made) else None
            await asyncio.sleep(self.latency)
            text = await reply if reply is not None else made
        finally:
            self._mark(-1)
        self.answered += 1
        self.intervals.append((self._question_of(prompt), start, time.monotonic() - self.started))
        return web.json_response({
            "id": f"chatcmpl-{self.answered}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model") or MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(text) // 4,
                      "total_tokens": len(prompt) // 4 + len(text) // 4}})

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "kgfed-bench"}]})

    async def stats_handler(self, request: web.Request) -> web.Response:
        return web.json_response(self.stats())

    async def reset_handler(self, request: web.Request) -> web.Response:
        self.reset()
        return web.json_response({"ok": True})

    def stats(self) -> dict:
        return {"requests": self.requests, "answered": self.answered, "rejected": self.rejected, "faulted": self.faulted,
                "peak": self.peak, "intervals": self.intervals, "timeline": self.timeline, "arrivals": self.arrivals}

    async def __aenter__(self) -> ScriptedLLMServer:
        return await self.start()

    async def start(self, port: int = 0) -> ScriptedLLMServer:
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/stats", self.stats_handler)
        app.router.add_post("/reset", self.reset_handler)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port)
        await site.start()
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


def gold_replies(questions: Path):
    """Replies of kgfed's gold stand-in (`--llm gold`, engine/toolbox/gold_llm.py) over the CWQ subgraph."""
    from kgfed.engine.harness import runner  # noqa: F401  (sets the stand-in's question loader)
    from kgfed.engine.kg.facade import KG
    from kgfed.engine.toolbox.gold_llm import GoldLLM

    gold = GoldLLM.from_file(str(questions))
    gold.bind({"freebase": KG.open(f"file:{CWQ_NT}", dialect="freebase")})

    async def reply(prompt: str) -> str:
        return (await gold._complete(prompt, temperature=0.0, max_tokens=256, system=None)).text
    return reply


async def _serve(port: int, latency: float, cap: int | None, questions: Path | None, replies: str, gold: Path) -> None:
    texts = [json.loads(line).get("question", "") for line in questions.open()] if questions else []
    made = gold_replies(gold) if replies == "gold" else minimal_reply
    server = await ScriptedLLMServer(latency=latency, cap=cap, questions=texts, replies=made).start(port)
    print(server.url, flush=True)
    await asyncio.Event().wait()


class ServerChild:
    """The scripted server in a child process (its own event loop and core share); `set_cap`/`reset`/`stats` over HTTP."""

    def __init__(self, latency: float, questions: Path, replies: str = "minimal", gold: Path = CWQ_QUESTIONS):
        self.latency, self.questions, self.replies, self.gold = latency, questions, replies, gold
        self.process: subprocess.Popen | None = None
        self.url = ""

    def start(self, cap: int | None) -> str:
        command = [sys.executable, "-m", "bench.llm_bound", "--serve", "--latency", str(self.latency),
                   "--questions", str(self.questions), "--replies", self.replies, "--gold", str(self.gold)]
        command += ["--server-cap", str(cap)] if cap else []
        self.process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        self.url = self.process.stdout.readline().strip()
        if not self.url.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"the scripted server did not start ({self.url!r})")
        return self.url

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)
            self.process = None

    async def call(self, method: str, path: str) -> dict:
        import aiohttp

        async with aiohttp.ClientSession() as session, session.request(method, self.url + path) as response:
            return await response.json()


# -- measuring -------------------------------------------------------------------------------------------
class LoopLag:
    """How long the event loop was held between callbacks: a 10 ms ticker's overshoot (total, max, > 50 ms count)."""

    def __init__(self, tick: float = 0.01):
        self.tick, self.total, self.worst, self.long = tick, 0.0, 0.0, 0
        self._task: asyncio.Task | None = None

    async def _run(self) -> None:
        while True:
            before = time.perf_counter()
            await asyncio.sleep(self.tick)
            late = time.perf_counter() - before - self.tick
            if late > 0.002:
                self.total += late
                self.worst = max(self.worst, late)
                self.long += late > 0.05

    def __enter__(self) -> LoopLag:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc) -> None:
        if self._task is not None:
            self._task.cancel()


class GateWatch:
    """The client's side of the cap: calls in flight through every `LLMGate` over time (patched in for the bench)."""

    def __init__(self):
        self.timeline: list[tuple[float, int]] = []
        self.started = time.monotonic()
        self._original = None

    def __enter__(self) -> GateWatch:
        from kgfed.engine.toolbox.llm import LLMGate

        original = self._original = LLMGate._send
        watch = self

        async def _send(gate, send):
            watch.timeline.append((time.monotonic() - watch.started, gate.in_flight + 1))
            try:
                return await original(gate, send)
            finally:
                watch.timeline.append((time.monotonic() - watch.started, gate.in_flight))
        LLMGate._send = _send
        return self

    def __exit__(self, *exc) -> None:
        from kgfed.engine.toolbox.llm import LLMGate

        LLMGate._send = self._original


def chains(intervals: Sequence[Sequence]) -> dict[str, float]:
    """Per question, the seconds at least one of its calls was in flight (its dependent chain when uncapped)."""
    by_question: dict[str, list[tuple[float, float]]] = {}
    for question, start, end in intervals:
        by_question.setdefault(question, []).append((start, end))
    out = {}
    for question, spans in by_question.items():
        total, reach = 0.0, float("-inf")
        for start, end in sorted(spans):
            if end > reach:
                total += end - max(start, reach)
                reach = end
        out[question] = total
    return out


def utilisation(timeline: Sequence[Sequence], cap: int, wall_end: float) -> dict[str, float]:
    """Seconds at the cap, first call, and the tail: from the last moment at the cap to the last reply."""
    at_cap = 0.0
    last_full = 0.0
    for (t0, n), (t1, _) in zip(timeline, list(timeline[1:]) + [(wall_end, 0)]):
        if n >= cap:
            at_cap += t1 - t0
            last_full = t1
    first = timeline[0][0] if timeline else 0.0
    last = timeline[-1][0] if timeline else 0.0
    return {"first_call": round(first, 2), "seconds_at_cap": round(at_cap, 2), "last_at_cap": round(last_full, 2),
            "last_reply": round(last, 2), "tail": round(last - last_full, 2)}


async def run_method(method: str, questions, server: ServerChild, *, concurrency: int, in_flight: int | None,
                     cache_dir: str, out_dir: Path, latency: float, params: dict, profile: str | None = None,
                     client: int | None = None) -> dict:
    from kgfed.engine.config import CacheOptions, KGSpec
    from kgfed.engine.harness.runner import RunSpec, run

    options = {"kgs": (KGSpec("freebase", f"file:{CWQ_NT}"),), "cache": CacheOptions(root=cache_dir)}
    row: dict = {"method": method, "questions": len(questions), "concurrency": concurrency, "latency": latency,
                 "client_concurrency": client or concurrency}

    # 1. uncapped: every question in flight, no cap anywhere: each question's dependent chain (and warm caches)
    url = server.start(None)
    try:
        spec = RunSpec(method, dict(params), **options, llm=f"openai:{url}#{MODEL}", llm_concurrency=10_000)
        summary = await run(spec, questions, out_dir / f"{method}-uncapped.jsonl", concurrency=len(questions), progress=False)
        stats = await server.call("GET", "/stats")
    finally:
        server.stop()
    chain = chains(stats["intervals"])
    row["uncapped"] = {"seconds": summary["seconds"], "calls": stats["answered"], "peak": stats["peak"],
                       "failed": summary["failed"]}
    row["longest_chain"] = round(max(chain.values(), default=0.0), 2)
    row["chain_mean"] = round(sum(chain.values()) / max(1, len(chain)), 2)

    # 2. capped: the timed run
    url = server.start(concurrency)
    try:
        spec = RunSpec(method, dict(params), **options, llm=f"openai:{url}#{MODEL}", llm_concurrency=client or concurrency)
        cpu = time.process_time()
        profiler = None
        if profile:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        with LoopLag() as lag, GateWatch() as watch:
            summary = await run(spec, questions, out_dir / f"{method}-capped.jsonl", concurrency=in_flight, progress=False)
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(f"{profile}.{method}")
        cpu = time.process_time() - cpu
        stats = await server.call("GET", "/stats")
    finally:
        server.stop()
    llm_seconds = sum(end - start for _, start, end in stats["intervals"])
    bound = max(llm_seconds / concurrency, row["longest_chain"])
    row.update({
        "seconds": summary["seconds"], "calls": stats["answered"], "rejected_429": stats["rejected"],
        "peak": stats["peak"], "failed": summary["failed"], "hits@1": summary["hits@1"],
        "llm_seconds": round(llm_seconds, 1), "bound": round(bound, 2), "ratio": round(summary["seconds"] / bound, 3),
        "cpu_seconds": round(cpu, 2),  # this process (the run), user + system, all threads
        "loop_lag": {"total": round(lag.total, 2), "worst": round(lag.worst, 3), "over_50ms": lag.long},
        "utilisation": utilisation(stats["timeline"], concurrency, stats["timeline"][-1][0] if stats["timeline"] else 0.0),
        "client": utilisation(watch.timeline, concurrency, watch.timeline[-1][0] if watch.timeline else 0.0),
    })
    return row


async def main_async(args: argparse.Namespace) -> list[dict]:
    from kgfed.engine.harness.datasets import load_dataset

    questions = load_dataset(str(args.questions))[: args.limit]
    rows = []
    with tempfile.TemporaryDirectory(prefix="kgfed-llm-bound-") as tmp:
        out = Path(tmp)
        cache = str(args.cache_dir or out / "cache")
        qfile = out / "questions.jsonl"
        qfile.write_text("".join(json.dumps({"question": q.text}) + "\n" for q in questions))
        server = ServerChild(args.latency, qfile, args.replies, args.questions)
        for method in args.methods:
            params: dict = {}
            row = await run_method(method, questions, server, concurrency=args.concurrency,
                                   in_flight=args.in_flight or None, cache_dir=cache, out_dir=out,
                                   latency=args.latency, params=params, profile=args.profile,
                                   client=args.client_concurrency)
            row["replies"] = args.replies
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", nargs="+", default=["tog", "pog"])
    parser.add_argument("--questions", type=Path, default=CWQ_QUESTIONS)
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per LLM call (default 0.5)")
    parser.add_argument("--concurrency", type=int, default=16, help="the LLM's cap: --llm-concurrency and the server's (16)")
    parser.add_argument("--client-concurrency", type=int, help="--llm-concurrency above the server's cap: its 429s "
                                                                  "(Retry-After: 1) are paused for and retried")
    parser.add_argument("--in-flight", type=int, default=0, help="questions at once (0: the runner's default for the cap)")
    parser.add_argument("--cache-dir", type=Path, help="keep the KG and embedding caches here (default: a temporary "
                                                        "directory; the uncapped run warms it either way)")
    parser.add_argument("--profile", metavar="PREFIX", help="cProfile the capped run into PREFIX.METHOD")
    parser.add_argument("--replies", choices=["minimal", "gold"], default="minimal",
                        help="minimal: a well-formed reply per prompt kind (default); gold: kgfed's gold stand-in's")
    parser.add_argument("--gold", type=Path, default=CWQ_QUESTIONS, help=argparse.SUPPRESS)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--server-cap", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        asyncio.run(_serve(0, args.latency, args.server_cap, args.questions, args.replies, args.gold))
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    asyncio.run(main_async(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
