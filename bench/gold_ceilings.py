"""Ceilings with the gold stand-in (`--llm gold`) beside the LLM-free runs, per method and question set.

    python -m bench.gold_ceilings --out bench/out/ceilings.jsonl                        # every cell
    python -m bench.gold_ceilings --methods tog,pog --sets cwq --cwq-sample 50 --out x.jsonl
    python -m bench.gold_ceilings --methods agent --out x.jsonl                         # the tool-using agent

Each cell runs `kgfed run … --json` in its own process over its own empty cache directory (cold: every
query sent to the embedded store, every text encoded), first with `--llm gold`, then with `--llm none`
over the same questions, and appends one JSON line: Hits@1 (ToG's rule), strict, LLM calls, prompt and
completion tokens and SPARQL queries per question, parse fallbacks, wall seconds (per question too) and
the gold/none wall ratio (issue 27 item 6: at most 2x, plus 10 s). ToG-2 reads the Wikipedia extracts.
Results and the machine load go in docs/ceilings.md.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("KGFED_DATA") or ROOT.parent / "shared" / "data")
KGFED = [sys.executable, "-m", "kgfed.engine.cli"]
METHODS = ("tog", "tog2", "pog", "hydra", "inses", "proh")
FED = DATA / "federation"
SETS = {
    "cwq": (DATA / "freebase" / "cwq_questions.jsonl", "freebase", [f"freebase=file:{DATA / 'freebase' / 'cwq_subgraph.nt'}"]),
    "fed-both": (FED / "questions.jsonl", "freebase,wikidata",
                 [f"freebase=file:{FED / 'freebase.nt'}", f"wikidata=file:{FED / 'wikidata.nt'}"]),
    "fed-freebase": (FED / "questions.jsonl", "freebase", [f"freebase=file:{FED / 'freebase.nt'}"]),
    "fed-wikidata": (FED / "questions.jsonl", "wikidata", [f"wikidata=file:{FED / 'wikidata.nt'}"]),
}
TEXT = f"file:{DATA / 'wikipedia' / 'extracts.jsonl'}"


def run_cell(method: str, name: str, llm: str, sample: int | None, workdir: Path) -> dict:
    questions, kg, endpoints = SETS[name]
    out = workdir / f"{method}-{name}-{llm}.jsonl"
    cmd = [*KGFED, "run", str(questions), "-m", method, "--kg", kg, "--llm", llm, "--out", str(out), "--no-progress",
           "--json", "--cache-dir", str(workdir / f"cache-{method}-{name}-{llm}")]
    for endpoint in endpoints:
        cmd += ["--endpoint", endpoint]
    if method == "tog2":
        cmd += ["--text", TEXT]
    if sample:
        cmd += ["--sample", str(sample), "--seed", "27"]
    env = dict(os.environ)
    if llm == "gold":  # what each prompt showed and each reply named, for bench/gold_report.py
        env["KGFED_GOLD_TRACE"] = str(out.with_suffix(".trace.jsonl"))
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    if done.returncode not in (0, 1) or not done.stdout.strip().startswith("{"):
        return {"method": method, "set": name, "llm": llm, "error": done.stderr.strip().splitlines()[-1:]}
    s = json.loads(done.stdout[done.stdout.index("{"):])
    n = max(1, s["new"])
    cost = s["cost"]
    return {"method": method, "set": name, "llm": llm, "questions": s["questions"], "hits@1": round(s["hits@1"], 4),
            "strict": round(s["strict"], 4), "llm_calls": round(cost.get("llm_calls", 0) / n, 2),
            "prompt_tokens": round(cost.get("input_tokens", 0) / n), "completion_tokens": round(cost.get("output_tokens", 0) / n),
            "queries": round(cost.get("sparql_queries", 0) / n, 1), "parse_fallbacks": cost.get("parse_fallbacks", 0),
            "em": s.get("em"), "f1": s.get("f1"), "per_question": s.get("per_question"),  # issue 37: EM/F1, the headline
            "failed": s["failed"], "wall": round(wall, 1), "seconds_per_question": round(wall / n, 3),
            "load": os.getloadavg()[0], "out": str(out)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--cwq-sample", type=int, default=None, help="a seeded sample of CWQ (default: all 538)")
    parser.add_argument("--llms", default="gold,none")
    parser.add_argument("--out", required=True, help="JSONL, one line per cell (appended)")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="kgfed-ceilings-"))
    for name in args.sets.split(","):
        for method in args.methods.split(","):
            walls = {}
            for llm in args.llms.split(","):
                cell = run_cell(method, name, llm, args.cwq_sample if name == "cwq" else None, workdir)
                walls[llm] = cell.get("wall")
                if llm == "none" and walls.get("gold") and cell.get("wall"):
                    cell["gold_over_none"] = round(walls["gold"] / cell["wall"], 2)
                print(json.dumps(cell), flush=True)
                with open(args.out, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps(cell) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
