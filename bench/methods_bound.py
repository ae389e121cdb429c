"""Each method's cold LLM-free run beside the bound of its own work (issue 39 item 2).

    python -m bench.methods_bound --sample 40                     # the six methods and the agent, CWQ fixture
    python -m bench.methods_bound --sample 8 --methods pog,hydra --keep DIR --json out.json

A method's *bound* is what its own work costs on this machine, from its run's own figures (the cost sidecar,
`cache/costs.py`):

    bound = tokens_encoded x per_token / encoder_threads  +  dependent_rounds x round_trip

- `per_token`: the sentence model's cost a token, measured in this process at the start (`bench.encoders`'
  pass table, ONNX fp32 on one thread: its best, the large passes' microseconds a token);
- `encoder_threads`: the encodings that run at once (`embeddings.encoders()`, `$KGFED_ENCODERS`);
- `tokens_encoded`: the real tokens of every text the run encoded (padding is kgfed's doing, so not in the bound;
  `tokens_padded` is reported beside it);
- `round_trip`: one 1-hop round on the fixture (a topic's relations, both directions at once, no cache), the
  median over the sample's topics, measured in this process at the start (`--round-trip S` for a link's own);
- `dependent_rounds`: the run's longest chain of KG requests waited for one after another. Questions run
  `--in-flight` at once, so their rounds overlap: the run's chain is at least the longest question's and at
  least the sum over questions divided by the questions in flight; the larger of the two.

Each method runs as a user runs it: one whole `kgfed run … --llm none --json` process over a fresh cache directory
(every query sent to the embedded store, every text encoded), timed from outside (*cold wall*: imports, model and
store load, exit included); *answering* is the run's own `seconds` (from its runtime being open). The table gives
both against the bound, with the machine load (`os.getloadavg`, 1 minute) before and after each run, the run's
LLM calls, SPARQL requests and peak RSS (`peak_rss_mb` of its summary), and the CPU seconds of its process (user +
system, `getrusage` of the child): on a loaded machine the wall time mostly measures the other processes, the CPU
time what the run itself spent (`encoder_cpu_over_tokens`: the encoder's CPU against its tokens at the measured
price, `other_cpu_seconds`: the process's CPU beside the encoder's). The machine is shared: a bound is measured
at the start, a load that grows later makes the ratios larger. An untimed one-question run comes first (`--no-warmup`
skips it), and every run keeps its compiled bytecode (`bytecode_env`), as an installed kgfed's processes do. `--keep DIR` keeps each method's prediction
file (DIR/METHOD.jsonl), to compare runs byte for byte.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from bench.methods_speed import DATA, SETS, kgfed

METHODS = ("tog", "tog2", "pog", "hydra", "inses", "proh", "agent")
CWQ_NT = DATA / "freebase" / "cwq_subgraph.nt"
CWQ_QUESTIONS = DATA / "freebase" / "cwq_questions.jsonl"


def per_token_seconds(rounds: int = 1) -> float:
    """The sentence model's seconds a token in large passes (`bench.encoders passes`, its table on stderr)."""
    from bench.encoders import passes

    with contextlib.redirect_stdout(sys.stderr):
        table = passes(argparse.Namespace(rounds=rounds))
    return table["best_us_per_token"] * 1e-6


def sample_topics(sample: int, seed: int) -> list[str]:
    """The Freebase topic ids of the questions `kgfed run --sample N --seed S` answers."""
    from kgfed.engine.harness.datasets import load_dataset
    from kgfed.engine.harness.runner import select_questions

    questions = select_questions(load_dataset(str(CWQ_QUESTIONS)), sample=sample or None, seed=seed)
    return sorted({t for q in questions for t in q.topics.get("freebase", {})})


def round_trip_seconds(topics: Sequence[str]) -> float:
    """The median seconds of one 1-hop round (a topic's relations, both directions) on the fixture, uncached."""
    from kgfed.engine.kg import KG

    async def measure() -> float:
        async with KG.open(f"file:{CWQ_NT}", cache=False) as kg:
            await kg.relations(topics[0])  # the store loads on first use
            times = []
            for topic in topics[:40]:
                started = time.perf_counter()
                await kg.relations(topic)
                times.append(time.perf_counter() - started)
        return statistics.median(times)

    return asyncio.run(measure())


def chain(costs: Sequence[Mapping[str, float]], in_flight: int) -> int:
    """The run's dependent rounds: at least its longest question's, and its questions' sum over those in flight."""
    rounds = [int(c.get("dependent_rounds", 0)) for c in costs]
    return max(max(rounds, default=0), -(-sum(rounds) // max(1, in_flight)))


def bound(tokens: float, rounds: float, per_token: float, threads: int, round_trip: float) -> float:
    """Seconds the work costs at the least: the tokens on `threads` encoders, plus the rounds one after another."""
    return tokens * per_token / max(1, threads) + rounds * round_trip


def run_method(method: str, sample: int, seed: int, in_flight: int, work: Path, env: Mapping[str, str] | None = None) -> dict:
    """One cold `kgfed run` of `method` (fresh cache directory): its summary, cost lines and whole-process wall."""
    out, cache = work / f"{method}.jsonl", work / f"cache-{method}"
    work.mkdir(parents=True, exist_ok=True)
    for stale in (out, out.with_name(out.stem + ".costs.jsonl"), out.with_name(out.name + ".kgfed.json")):
        stale.unlink(missing_ok=True)
    command = [*kgfed(), "run", *SETS["cwq"], "--method", method, "--llm", "none", "--out", str(out),
               "--cache-dir", str(cache), "--in-flight", str(in_flight), "--json", "--no-progress"]
    if sample:
        command += ["--sample", str(sample), "--seed", str(seed)]
    load_before = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise RuntimeError(f"{method} failed (exit {done.returncode}): {done.stderr.strip()[-400:]}")
    summary = json.loads(done.stdout)
    costs = [json.loads(line) for line in Path(summary["costs"]).read_text().splitlines() if line.strip()]
    return {"wall": wall, "cpu": cpu, "summary": summary, "costs": costs, "load": (load_before, os.getloadavg()[0])}


def bytecode_env(tmp: Path) -> dict[str, str]:
    """The runs' environment, with compiled bytecode kept (under `tmp`, outside the tree) as an installed kgfed has
    it: with $PYTHONDONTWRITEBYTECODE set every process compiles kgfed's modules again (about 1 s of CPU)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    return env


def figures(method: str, ran: Mapping, per_token: float, threads: int, round_trip: float, in_flight: int) -> dict:
    """A table row: the run's work, its bound, and its wall times against it."""
    summary, costs = ran["summary"], ran["costs"]
    total = summary["cost"]
    tokens, rounds = total.get("tokens_encoded", 0), chain(costs, in_flight)
    limit = bound(tokens, rounds, per_token, threads, round_trip)
    encoder_cpu = total.get("encoder_cpu_seconds", 0)
    return {
        "method": method, "n": summary["questions"], "failed": summary["failed"], "hits@1": summary["hits@1"],
        "wall": round(ran["wall"], 2), "answering": summary["seconds"], "bound": round(limit, 3),
        "wall_over_bound": round(ran["wall"] / limit, 2) if limit else None,
        "answering_over_bound": round(summary["seconds"] / limit, 2) if limit else None,
        "encoder_bound": round(tokens * per_token / max(1, threads), 3), "kg_bound": round(rounds * round_trip, 3),
        "texts_encoded": total.get("texts_encoded", 0), "tokens_encoded": tokens,
        "tokens_padded": total.get("tokens_padded", 0), "encoder_passes": total.get("encoder_passes", 0),
        "encoder_cpu_seconds": round(encoder_cpu, 2), "cpu_seconds": round(ran["cpu"], 2),
        "encoder_cpu_over_tokens": round(encoder_cpu / (tokens * per_token), 2) if tokens else None,
        "other_cpu_seconds": round(ran["cpu"] - encoder_cpu, 2),
        "sparql_requests": total.get("requests_sent", 0), "dependent_rounds": rounds,
        "dependent_rounds_summed": total.get("dependent_rounds", 0), "llm_calls": total.get("llm_calls", 0),
        "peak_rss_mb": summary.get("peak_rss_mb"), "load": [round(x, 1) for x in ran["load"]],
    }


def print_table(rows: Sequence[Mapping], header: Mapping) -> None:
    print(f"per token {header['per_token_us']} µs (one thread), {header['encoder_threads']} encoder threads, "
          f"round trip {header['round_trip_ms']} ms, {header['in_flight']} in flight; load at start {header['load'][0]:.1f}")
    print("| method | n | cold wall s | answering s | bound s (encoder + KG) | wall / bound | answering / bound | "
          "tokens (padded) | encoder CPU s (/ tokens x per token) | process CPU s | requests | rounds | LLM calls | "
          "peak RSS MB | load |")
    print("|---|" + "---|" * 14)
    for r in rows:
        print(f"| {r['method']} | {r['n']} | {r['wall']} | {r['answering']} | {r['bound']} ({r['encoder_bound']} + "
              f"{r['kg_bound']}) | {r['wall_over_bound']} | {r['answering_over_bound']} | {r['tokens_encoded']} "
              f"({r['tokens_padded']}) | {r['encoder_cpu_seconds']} ({r['encoder_cpu_over_tokens']}x) | {r['cpu_seconds']} | "
              f"{r['sparql_requests']} | {r['dependent_rounds']} | "
              f"{r['llm_calls']} | {r['peak_rss_mb']} | {r['load'][0]}-{r['load'][1]} |")


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated (default: the six and the agent)")
    parser.add_argument("--sample", type=int, default=40, help="a seeded sample of N CWQ questions (0 = all 538; default 40)")
    parser.add_argument("--seed", type=int, default=27, help="the sample's seed (default 27, as bench.methods_speed)")
    parser.add_argument("--in-flight", type=int, default=8, help="questions in flight (kgfed run --in-flight; default 8)")
    parser.add_argument("--round-trip", type=float, help="seconds of one round (default: measured on the fixture)")
    parser.add_argument("--pass-rounds", type=int, default=1, help="rounds of the pass table (default 1)")
    parser.add_argument("--no-warmup", action="store_true", help="no untimed one-question run first (bytecode, page cache)")
    parser.add_argument("--keep", help="keep each method's predictions in this directory (DIR/METHOD.jsonl)")
    parser.add_argument("--json", dest="json_out", help="also write the figures to this file")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    methods = [m for m in args.methods.split(",") if m]
    if unknown := [m for m in methods if m not in METHODS]:
        raise SystemExit(f"unknown method {unknown[0]!r}: use some of {', '.join(METHODS)}")
    from kgfed.engine.toolbox import embeddings

    load = os.getloadavg()
    per_token = per_token_seconds(args.pass_rounds)
    threads = embeddings.encoders()
    with tempfile.TemporaryDirectory(prefix="kgfed-bound-") as tmp:
        os.environ["KGFED_CACHE_DIR"] = str(Path(tmp) / "bench-cache")  # the round-trip KG's, not a run's
        round_trip = args.round_trip if args.round_trip is not None else round_trip_seconds(sample_topics(args.sample, args.seed))
        header = {"per_token_us": round(per_token * 1e6, 1), "encoder_threads": threads,
                  "round_trip_ms": round(round_trip * 1e3, 3), "in_flight": args.in_flight, "sample": args.sample,
                  "seed": args.seed, "load": load}
        work = Path(args.keep) if args.keep else Path(tmp)
        env = bytecode_env(Path(tmp))
        if not args.no_warmup:  # untimed: compiles kgfed's modules once, reads the model and store into the page cache
            with contextlib.suppress(RuntimeError):  # a method that fails says so in its own run
                run_method(methods[0], 1, args.seed, 1, Path(tmp) / "warmup", env)
        rows: list[dict] = []
        failed: dict[str, str] = {}
        for method in methods:
            try:
                ran = run_method(method, args.sample, args.seed, args.in_flight, work, env)
            except RuntimeError as exc:  # said, and the other methods still run
                print(exc, file=sys.stderr, flush=True)
                failed[method] = str(exc)
                continue
            rows.append(figures(method, ran, per_token, threads, round_trip, args.in_flight))
            r = rows[-1]
            print(f"{method:6} n={r['n']} wall {r['wall']:.1f}s answering {r['answering']:.1f}s bound {r['bound']:.2f}s "
                  f"({r['wall_over_bound']}x) peak RSS {r['peak_rss_mb']} MB load {r['load'][1]}", file=sys.stderr, flush=True)
    print_table(rows, header)
    result = {**header, "load_end": os.getloadavg(), "rows": rows, "failed": failed}
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
