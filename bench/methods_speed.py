"""Per-method speed, LLM-free: cold and warm questions/s and SPARQL queries/question, side by side.

    python -m bench.methods_speed --limit 20 --rounds 3            # every method, CWQ + federation
    python -m bench.methods_speed --methods tog --sets cwq --limit 0 --rounds 3 --warm-only-from DIR
    python -m bench.methods_speed --methods tog,pog,hydra --sets cwq --sample 40 --rounds 3 --cold-only   # issue 32

Each cell is one `kgfed run … --llm none --json` in its own process, exactly as a user runs it: *cold*
over an empty cache directory (responses and embeddings: every query is sent to the embedded store,
every text encoded), then *warm*, the same command again over that cache (a replay: no query sent,
no text encoded). Questions/s and queries/question are the run's own summary figures (timing starts
once the runtime is open, so the model and KG start-up are not in them). Rounds run the cells in a
rotating order, so every method meets the same machine load (the 2-core machine is shared), and the
table shows medians.

Sets: `cwq` (cwq_subgraph.nt, 538 questions), and the federation fixture (54 questions) over
`fed-fb` (Freebase only), `fed-wd` (Wikidata only) and `fed-both` (Freebase + Wikidata, merged);
`--limit N` answers the first N questions of each (0 = all), `--sample N` a seeded sample of N (`kgfed run
--sample N --seed S`, as `bench/gold_ceilings.py` and the team's prediction baseline draw it). The merged-KG
ratio compares the merged run's queries/question with the sum of its two single-KG runs'.

Whole-process wall time: every cell's `kgfed run` is also timed from outside (imports, model load and
exit included, as a user waits for it); per round each method's cold wall time is divided by ToG's on the
same set *in that round* (same machine load), and the median of those ratios is printed (issue 32: cold
LLM-free PoG and HydraRAG within 1.5x ToG's wall time). `--cold-only` skips the warm runs.
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

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
METHODS = ("tog", "tog2", "pog", "hydra", "inses", "proh")
SETS = {
    "cwq": [str(DATA / "freebase" / "cwq_questions.jsonl"), "--kg", "freebase",
            "--endpoint", f"freebase=file:{DATA / 'freebase' / 'cwq_subgraph.nt'}"],
    "fed-fb": [str(DATA / "federation" / "questions.jsonl"), "--kg", "freebase",
               "--endpoint", f"freebase=file:{DATA / 'federation' / 'freebase.nt'}"],
    "fed-wd": [str(DATA / "federation" / "questions.jsonl"), "--kg", "wikidata",
               "--endpoint", f"wikidata=file:{DATA / 'federation' / 'wikidata.nt'}"],
    "fed-both": [str(DATA / "federation" / "questions.jsonl"), "--kg", "freebase,wikidata",
                 "--endpoint", f"freebase=file:{DATA / 'federation' / 'freebase.nt'}",
                 "--endpoint", f"wikidata=file:{DATA / 'federation' / 'wikidata.nt'}"],
}


def kgfed() -> list[str]:
    """The `kgfed` command of this interpreter's environment."""
    script = Path(sys.executable).with_name("kgfed")
    return [str(script)] if script.exists() else [sys.executable, "-m", "kgfed.engine.cli"]


def one_run(method: str, dataset: str, limit: int, cache: Path, out: Path, sample: tuple[int, int] | None = None) -> dict:
    """One `kgfed run` (cache directory `cache`, predictions `out`, removed first): its JSON summary."""
    for stale in (out, out.with_name(out.stem + ".costs.jsonl")):
        stale.unlink(missing_ok=True)
    command = [*kgfed(), "run", *SETS[dataset], "--method", method, "--llm", "none", "--out", str(out),
               "--cache-dir", str(cache), "--in-flight", "8", "--json", "--no-progress"]
    if sample:
        command += ["--sample", str(sample[0]), "--seed", str(sample[1])]
    elif limit:
        command += ["--limit", str(limit)]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{method} on {dataset} failed (exit {done.returncode}): {done.stderr.strip()[-400:]}")
    summary = json.loads(done.stdout)
    return {"qps": summary["questions_per_second"], "queries": summary["queries_per_question"],
            "hits": summary["hits@1"], "n": summary["questions"], "wall": round(wall, 2),
            "answers": out.read_bytes()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated (default: all six)")
    parser.add_argument("--sets", default=",".join(SETS), help=f"comma-separated, of {', '.join(SETS)}")
    parser.add_argument("--limit", type=int, default=20, help="first N questions of each set (0 = all; default 20)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, in rotating order (default 3)")
    parser.add_argument("--sample", type=int, default=0, help="a seeded sample of N questions instead of the first N")
    parser.add_argument("--seed", type=int, default=27, help="the sample's seed (default 27)")
    parser.add_argument("--cold-only", action="store_true", help="no warm runs (the cold wall-time ratios only)")
    parser.add_argument("--json", dest="json_out", help="also write the figures to this file")
    args = parser.parse_args()
    sample = (args.sample, args.seed) if args.sample else None
    methods = [m for m in args.methods.split(",") if m]
    sets = [s for s in args.sets.split(",") if s]
    for name in sets:
        if name not in SETS:
            raise SystemExit(f"unknown set {name!r}: use some of {', '.join(SETS)}")
    cells = [(m, s) for m in methods for s in sets]
    figures: dict[tuple[str, str], dict[str, list]] = {c: {"cold": [], "warm": [], "queries": [], "hits": [],
                                                           "same": [], "wall": []} for c in cells}
    with tempfile.TemporaryDirectory(prefix="kgfed-speed-") as tmp:
        for r in range(args.rounds):
            order = cells[r % len(cells):] + cells[: r % len(cells)]
            for method, dataset in order:
                cache = Path(tmp) / f"cache-{method}-{dataset}-{r}"
                cold = one_run(method, dataset, args.limit, cache, Path(tmp) / "cold.jsonl", sample)
                warm = cold if args.cold_only else one_run(method, dataset, args.limit, cache, Path(tmp) / "warm.jsonl", sample)
                f = figures[(method, dataset)]
                f["cold"].append(cold["qps"])
                f["warm"].append(warm["qps"])
                f["wall"].append(cold["wall"])
                f["queries"].append(cold["queries"])
                f["hits"].append(cold["hits"])
                f["same"].append(cold["answers"] == warm["answers"])
                print(f"round {r + 1}: {method:6} {dataset:9} n={cold['n']:<4} cold {cold['qps']:8.2f} q/s "
                      f"({cold['wall']:6.1f} s whole process)  warm {warm['qps']:8.2f} q/s  {cold['queries']:7.1f} "
                      f"queries/q  hits@1 {cold['hits']:.3f}  load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
    rows = []
    print("| method | set | n | q/s cold | q/s warm | queries/q | Hits@1 | warm = cold |")
    print("|---|---|---|---|---|---|---|---|")
    for (method, dataset), f in figures.items():
        row = {"method": method, "set": dataset, "limit": args.limit, "sample": args.sample, "rounds": args.rounds,
               "qps_cold": round(statistics.median(f["cold"]), 2), "qps_warm": round(statistics.median(f["warm"]), 1),
               "queries_per_question": round(statistics.median(f["queries"]), 1),
               "hits@1": round(statistics.median(f["hits"]), 3), "warm_equals_cold": all(f["same"]),
               "runs": {"cold": f["cold"], "warm": f["warm"], "wall": f["wall"]}}
        rows.append(row)
        print(f"| {method} | {dataset} | {args.sample or args.limit or 'all'} | {row['qps_cold']} | {row['qps_warm']} | "
              f"{row['queries_per_question']} | {row['hits@1']} | {'yes' if row['warm_equals_cold'] else 'no'} |")
    for row in rows:  # cold whole-process wall time against ToG's on the same set in the same round
        tog = figures.get(("tog", row["set"]))
        if tog and row["method"] != "tog":
            ratios = [w / t for w, t in zip(figures[(row["method"], row["set"])]["wall"], tog["wall"])]
            row["wall_over_tog"] = round(statistics.median(ratios), 2)
            row["runs"]["wall_over_tog"] = [round(x, 2) for x in ratios]
            print(f"{row['method']} / tog on {row['set']}, cold whole-process wall time: median {row['wall_over_tog']}x "
                  f"(rounds: {', '.join(f'{x:.2f}' for x in ratios)}; walls {figures[(row['method'], row['set'])]['wall']} "
                  f"vs {tog['wall']} s)")
    by = {(r["method"], r["set"]): r for r in rows}
    for method in methods:
        parts = [by.get((method, s)) for s in ("fed-fb", "fed-wd", "fed-both")]
        if all(parts) and all(p["queries_per_question"] for p in parts[:2]):
            fb, wd, both = (p["queries_per_question"] for p in parts)
            print(f"{method}: merged {both} queries/q; Freebase alone {fb} ({both / fb:.2f}x), Wikidata alone {wd} "
                  f"({both / wd:.2f}x), their sum {fb + wd:.1f} ({both / (fb + wd):.2f}x)")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"load": os.getloadavg(), "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
