"""The sentence model's backends side by side: torch vs ONNX Runtime fp32 vs ONNX int8 (issue 32 item 1).

    python -m bench.encoders throughput [--texts-from CACHE/embeddings] [--rounds 3]
    python -m bench.encoders methods --methods tog,pog,hydra --sets cwq40 --backends torch,onnx,onnx-int8
    python -m bench.encoders passes                  # a forward pass's cost by shape (ONNX fp32, one thread)
    python -m bench.encoders methods --methods tog,tog2,pog,hydra,inses,proh --sets cwq100,fed-both \\
        --backends torch,onnx --json out.json        # the predictions compared question by question

`throughput`: every backend loaded in this one process (one thread each, `$KGFED_TORCH_THREADS`
unset = 1), encoding the same texts in `embeddings.encode_texts`' batches (longest first, 16 a batch)
in rotating order, round after round: texts/s (median), each backend's cosine to torch's vectors
(min and mean), and, in a fresh process each, the time from `python` to the first vector (the
import and load a cold `kgfed run` pays). `--texts-from` takes the texts of an embedding store
(a cold run's `CACHE/embeddings`: the texts a method really encodes), else the CWQ questions.

`passes`: ONNX Runtime fp32 on one thread, forward passes of b texts of L tokens each: milliseconds a
pass and microseconds a token. What `encoders.PASS_COST_TOKENS` (a pass's own cost, in tokens) is read
from, and how close a pass comes to the core's peak (one AVX2 core: 2 FMA units x 8 floats x 2 flops a
cycle; all-MiniLM-L6-v2 computes about 21 MFLOP a token).

`methods`: one `kgfed run … --llm none` per (set, method, backend) in its own process over a fresh
cache directory (cold: every query sent to the embedded store, every text encoded), the cells in
rotating order; whole-process wall seconds, Hits@1, and every question whose answer differs from
the first backend's run (`--backends torch,onnx`: from torch's). The ONNX exports are made once before the runs (kept under $KGFED_ENCODER_DIR), so
no cell pays for an export.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.methods_speed import DATA, SETS, kgfed

BACKENDS = ("torch", "onnx", "onnx-int8")
CWQ = DATA / "freebase" / "cwq_questions.jsonl"


def _texts(store: str | None, limit: int) -> list[str]:
    if store:
        import diskcache

        with diskcache.Cache(store) as cache:
            texts = [key[2] for key in cache.iterkeys() if isinstance(key, tuple) and len(key) == 3 and key[0] == "emb"]
    else:
        texts = [json.loads(line)["question"] for line in CWQ.open()]
    texts = sorted(set(texts))
    return texts[:limit] if limit else texts


def _cold_start(backend: str) -> float:
    """Seconds from a fresh `python` to its first vector on `backend` (imports and model load included)."""
    code = "from kgfed.engine.toolbox import embeddings; embeddings.encode_texts(None, ['where was he born'])"
    env = {**os.environ, "KGFED_EMBEDDINGS_BACKEND": backend}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True)
    return time.perf_counter() - started


def throughput(args: argparse.Namespace) -> dict:
    import numpy as np

    from kgfed.engine.toolbox import embeddings, encoders

    texts = _texts(args.texts_from, args.limit)
    order = np.argsort([-len(t) for t in texts])
    batches = [[texts[i] for i in order[s:s + embeddings.BATCH_SIZE]] for s in range(0, len(texts), embeddings.BATCH_SIZE)]
    backends = args.backends.split(",")
    models = {b: encoders.load(embeddings.model_dir(), b) for b in backends}
    if "torch" in models:
        embeddings._limit_torch_threads()
    for model in models.values():  # warm-up: first-call allocations
        model.encode(batches[0], batch_size=len(batches[0]), normalize_embeddings=True)
    seconds: dict[str, list[float]] = {b: [] for b in backends}
    vectors: dict[str, np.ndarray] = {}
    for r in range(args.rounds):
        for b in backends[r % len(backends):] + backends[:r % len(backends)]:
            started = time.perf_counter()
            vectors[b] = np.concatenate([models[b].encode(batch, batch_size=len(batch), normalize_embeddings=True)
                                         for batch in batches])
            seconds[b].append(time.perf_counter() - started)
    result = {"texts": len(texts), "rounds": args.rounds, "load": os.getloadavg(), "backends": {}}
    for b in backends:
        row = {"texts_per_s": round(len(texts) / statistics.median(seconds[b]), 1)}
        if "torch" in vectors:
            cos = (vectors[b] * vectors["torch"]).sum(axis=1)
            row.update(min_cos=round(float(cos.min()), 7), mean_cos=round(float(cos.mean()), 7))
        row["cold_start_s"] = round(_cold_start(b), 2)
        result["backends"][b] = row
    torch_rate = result["backends"].get("torch", {}).get("texts_per_s")
    print(f"{len(texts)} texts, {args.rounds} rounds, load {result['load'][0]:.1f}")
    print(f"{'backend':10} {'texts/s':>8} {'x torch':>8} {'min cos':>10} {'mean cos':>10} {'first vector':>13}")
    for b, row in result["backends"].items():
        ratio = f"{row['texts_per_s'] / torch_rate:.2f}" if torch_rate else "-"
        print(f"{b:10} {row['texts_per_s']:8.1f} {ratio:>8} {row.get('min_cos', '-'):>10} {row.get('mean_cos', '-'):>10} "
              f"{row['cold_start_s']:12.2f}s")
    return result


def _question_file(name: str, directory: Path) -> list[str]:
    """`cwqN`: the last N CWQ questions (a file in `directory`); other names: methods_speed's sets."""
    if name.startswith("cwq") and name[3:].isdigit():
        lines = CWQ.read_text().splitlines()[-int(name[3:]):]
        path = directory / f"{name}.jsonl"
        path.write_text("\n".join(lines) + "\n")
        return [str(path), *SETS["cwq"][1:]]
    return SETS[name]


def _answers(out: Path) -> dict[str, list[str]]:
    rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    return {row.get("id") or row["question"]: sorted(row.get("answer_ids") or []) or [str(row.get("results"))] for row in rows}


def methods(args: argparse.Namespace) -> dict:
    from kgfed.engine.toolbox import embeddings, encoders

    backends = args.backends.split(",")
    for b in backends:  # exports made here, not inside a timed cell
        if b != "torch":
            encoders.onnx_file(embeddings.model_dir(), int8=b == "onnx-int8")
    work = Path(tempfile.mkdtemp(prefix="kgfed-bench-encoders-"))
    cells = [(s, m, b) for s in args.sets.split(",") for m in args.methods.split(",") for b in backends]
    results: dict = {}
    for r in range(args.rounds):
        shift = r % len(backends)
        for s, m, _ in cells[::len(backends)]:
            for b in backends[shift:] + backends[:shift]:
                cache, out = Path(tempfile.mkdtemp(dir=work)), work / f"{s}-{m}-{b}.jsonl"
                out.unlink(missing_ok=True)
                command = [*kgfed(), "run", *_question_file(s, work), "--method", m, "--llm", "none", "--out", str(out),
                           "--cache-dir", str(cache), "--in-flight", "8", "--json", "--no-progress"]
                env = {**os.environ, "KGFED_EMBEDDINGS_BACKEND": b}
                started = time.perf_counter()
                done = subprocess.run(command, capture_output=True, text=True, env=env)
                wall = time.perf_counter() - started
                if done.returncode != 0:
                    print(f"{s} {m} {b}: failed (exit {done.returncode}): {done.stderr.strip()[-300:]}", file=sys.stderr)
                    continue
                summary = json.loads(done.stdout)
                cell = results.setdefault(f"{s}/{m}/{b}", {"wall": [], "hits": summary["hits@1"], "n": summary["questions"]})
                cell["wall"].append(round(wall, 2))
                cell["answers"] = _answers(out)
                print(f"{s:9} {m:6} {b:10} wall {wall:6.1f}s hits@1 {summary['hits@1']:.3f} "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)
    report: dict = {"load_end": os.getloadavg(), "cells": {}}
    for key, cell in results.items():
        s, m, b = key.split("/")
        reference = args.backends.split(",")[0]  # answers are compared with the first backend's
        base = results.get(f"{s}/{m}/{reference}")
        diffs = [q for q, a in cell["answers"].items() if base and base["answers"].get(q) != a] if b != reference else []
        report["cells"][key] = {"wall": statistics.median(cell["wall"]), "hits": cell["hits"], "n": cell["n"],
                                "differences": diffs}
    print(f"\n{'set':9} {'method':6} {'backend':10} {'wall s':>7} {'x tog':>6} {'Hits@1':>7} {'answers differ':>15}")
    for key, row in report["cells"].items():
        s, m, b = key.split("/")
        tog = report["cells"].get(f"{s}/tog/{b}")
        ratio = f"{row['wall'] / tog['wall']:.2f}" if tog else "-"
        print(f"{s:9} {m:6} {b:10} {row['wall']:7.1f} {ratio:>6} {row['hits']:7.3f} {len(row['differences']):>15}")
    return report


def passes(args: argparse.Namespace) -> dict:
    """Milliseconds per forward pass of `b` texts x `L` tokens (fp32 ONNX, one thread), medians of rounds."""
    import numpy as np

    from kgfed.engine.toolbox import embeddings, encoders

    model = encoders.load(embeddings.model_dir(), "onnx")
    rows = []
    for length in (8, 16, 32, 64):
        for size in (1, 2, 4, 8, 16, 32):
            ids = np.full((size, length), 2000, dtype=np.int64)
            ids[:, 0], ids[:, -1] = 101, 102
            feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
            if "token_type_ids" in model.inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            model.session.run(None, feeds)
            reps = max(3, 600 // (size * length))
            times = []
            for _ in range(args.rounds):
                started = time.perf_counter()
                for _ in range(reps):
                    model.session.run(None, feeds)
                times.append((time.perf_counter() - started) / reps)
            ms = statistics.median(times) * 1e3
            rows.append({"L": length, "b": size, "ms": round(ms, 2), "us_per_token": round(ms * 1e3 / (size * length))})
    print("| tokens a text | " + " | ".join(f"{b} a pass" for b in (1, 2, 4, 8, 16, 32)) + " |")
    print("|---|" + "---|" * 6)
    for length in (8, 16, 32, 64):
        cells = [f"{r['ms']} ms ({r['us_per_token']} µs/token)" for r in rows if r["L"] == length]
        print(f"| {length} | " + " | ".join(cells) + " |")
    big = min(r["us_per_token"] for r in rows)
    small = [r for r in rows if r["b"] == 1]
    overhead = statistics.median(r["ms"] * 1e3 / big - r["L"] for r in small)
    print(f"largest passes: {big} µs a token ({21.2e-3 / (big * 1e-6):.0f} GFLOP/s); a one-text pass costs about "
          f"{overhead:.0f} tokens more than its own (encoders.PASS_COST_TOKENS = {encoders.PASS_COST_TOKENS})")
    return {"passes": rows, "best_us_per_token": big, "pass_overhead_tokens": overhead}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    one = sub.add_parser("throughput", help="texts/s and cosine to torch, every backend in one process")
    one.add_argument("--texts-from", help="an embedding store directory whose texts to encode (default: CWQ questions)")
    one.add_argument("--limit", type=int, default=600, help="at most N texts (0 = all; default 600)")
    one.add_argument("--rounds", type=int, default=3)
    one.add_argument("--backends", default=",".join(BACKENDS))
    three = sub.add_parser("passes", help="a forward pass's cost by shape (ONNX fp32, one thread)")
    three.add_argument("--rounds", type=int, default=3)
    two = sub.add_parser("methods", help="cold whole-process runs per backend, and the answers that differ")
    two.add_argument("--methods", default="tog,pog,hydra")
    two.add_argument("--sets", default="cwq40", help="cwqN (the last N CWQ questions) or a methods_speed set")
    two.add_argument("--backends", default=",".join(BACKENDS))
    two.add_argument("--rounds", type=int, default=1)
    for p in (one, two, three):
        p.add_argument("--json", dest="json_out", help="also write the figures to this file")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    result = {"throughput": throughput, "methods": methods, "passes": passes}[args.what](args)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()
