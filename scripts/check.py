"""`make check`: the lint and type checks CI runs before the tests.

Three steps, all must pass:

1. **ruff** with the rule set in `pyproject.toml` (`[tool.ruff]`, reasons in docs/development.md): 0 findings.
2. **complexity**: ruff's C901 (mccabe) at `max-complexity` 15 (`[tool.ruff.lint.mccabe]`). The functions over
   it today are listed in `scripts/complexity-baseline` (`PATH FUNCTION COMPLEXITY`, one a line): a function not
   listed, or over its listed complexity, fails; a listed one that fell (or is gone) is named, to be lowered in
   the same commit (`--update-baseline` rewrites the list). The list may only shrink.
3. **mypy** on the code laid out as it installs. The top-level folders `sparql/ cache/ endpoints/ engine/`
   become `kgfed.sparql` … only through setuptools' package-dir mapping; checked as installed, the editable
   install's import hook hides them and mypy checks nothing. So the check builds `build/check/kgfed/`, a
   tree of symlinks to the four folders, and runs mypy there. `sparql`, `cache` and `endpoints` must have 0
   errors; `engine` has a recorded count (`scripts/mypy-engine-baseline`) that may fall but never rise.
   When it falls, the script says so: lower the number in the same commit (`--update-baseline`).

Usage: `python scripts/check.py [--update-baseline] [--only ruff|complexity|mypy]`. Exit 0 when all pass, 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sparql", "cache", "endpoints", "engine")
STRICT = ("sparql", "cache", "endpoints")  # must stay at 0 errors
BASELINE = ROOT / "scripts" / "mypy-engine-baseline"
COMPLEXITY_BASELINE = ROOT / "scripts" / "complexity-baseline"
TOO_COMPLEX = re.compile(r"^`(?P<function>[^`]+)` is too complex \((?P<complexity>\d+) > \d+\)")
ERROR = re.compile(r"^kgfed/(\w+)/\S+:\d+(?::\d+)?: error: ")


def run_ruff() -> bool:
    print("== ruff check", flush=True)
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT).returncode == 0


def complexity_offenders() -> dict[tuple[str, str], int]:
    """{(path, function): complexity} of every function over the max-complexity (ruff C901, JSON output)."""
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--select", "C901", "--output-format",
                          "json", "--exit-zero", "."], cwd=ROOT, capture_output=True, text=True, check=True)
    found: dict[tuple[str, str], int] = {}
    for item in json.loads(out.stdout or "[]"):
        m = TOO_COMPLEX.match(item["message"])
        if m:
            path = Path(item["filename"]).resolve().relative_to(ROOT).as_posix()
            key = (path, m["function"])
            found[key] = max(found.get(key, 0), int(m["complexity"]))
    return found


def read_complexity_baseline() -> dict[tuple[str, str], int]:
    listed: dict[tuple[str, str], int] = {}
    for line in COMPLEXITY_BASELINE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            path, function, complexity = line.split()
            listed[(path, function)] = int(complexity)
    return listed


def run_complexity(update_baseline: bool) -> bool:
    print("== ruff C901 (max-complexity 15; scripts/complexity-baseline)", flush=True)
    found = complexity_offenders()
    if update_baseline:
        lines = [f"{path} {function} {n}" for (path, function), n in sorted(found.items())]
        COMPLEXITY_BASELINE.write_text("# functions over ruff's max-complexity (15) when C901 was adopted: this list may "
                                       "only shrink (scripts/check.py)\n" + "\n".join(lines) + "\n")
        print(f"complexity baseline written: {len(found)} functions")
        return True
    listed = read_complexity_baseline()
    worse = [f"{p}: {f} has complexity {n} (" + (f"listed at {listed[(p, f)]}" if (p, f) in listed else "max 15") + ")"
             for (p, f), n in sorted(found.items()) if n > listed.get((p, f), 15)]
    fell = [f"{p} {f}" for (p, f), n in sorted(listed.items()) if found.get((p, f), 0) < n]
    for line in worse:
        print(line)
    if fell:
        print("fell below the baseline (lower scripts/complexity-baseline, --update-baseline): " + ", ".join(fell))
    print(f"complexity: {len(found)} functions over 15 (baseline {len(listed)})" + ("; split the new ones" if worse else ""))
    return not worse


def layout() -> Path:
    """`build/check/kgfed/<pkg>` -> `<pkg>/` for the four packages; the same paths every run (mypy's cache)."""
    tree = ROOT / "build" / "check"
    pkg = tree / "kgfed"
    pkg.mkdir(parents=True, exist_ok=True)
    for name in PACKAGES:
        link = pkg / name
        target = Path(os.path.relpath(ROOT / name, pkg))
        if link.is_symlink() and Path(os.readlink(link)) == target:
            continue
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target, target_is_directory=True)
    return tree


def mypy_counts() -> tuple[Counter[str], list[str], int]:
    """Run mypy over the symlinked `kgfed/` tree: errors per package, the output lines, mypy's exit code."""
    tree = layout()
    cmd = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
           "--cache-dir", str(ROOT / "build" / "mypy-cache"), "--python-executable", sys.executable,
           "--no-error-summary", "--no-pretty"]
    for name in PACKAGES:
        cmd += ["-p", f"kgfed.{name}"]
    out = subprocess.run(cmd, cwd=tree, capture_output=True, text=True)
    lines = (out.stdout + out.stderr).splitlines()
    counts: Counter[str] = Counter()
    for line in lines:
        m = ERROR.match(line)
        if m:
            counts[m.group(1)] += 1
    return counts, lines, out.returncode


def run_mypy(update_baseline: bool) -> bool:
    print("== mypy (build/check/kgfed: " + ", ".join(f"kgfed.{p}" for p in PACKAGES) + ")", flush=True)
    counts, lines, rc = mypy_counts()
    if rc not in (0, 1) or (rc == 1 and not counts):  # 2: mypy itself failed (config, crash)
        print("\n".join(lines))
        print(f"mypy failed to run (exit {rc})")
        return False
    ok = True
    for line in lines:
        m = ERROR.match(line)
        if m and m.group(1) in STRICT:
            print(line)
    for name in STRICT:
        if counts[name]:
            print(f"kgfed.{name}: {counts[name]} mypy errors (must be 0)")
            ok = False
    engine = counts["engine"]
    baseline = int(BASELINE.read_text().split()[0])
    if update_baseline:
        BASELINE.write_text(f"{engine}\n")
        print(f"kgfed.engine: {engine} mypy errors; baseline written ({baseline} -> {engine})")
    elif engine > baseline:
        for line in lines:
            m = ERROR.match(line)
            if m and m.group(1) == "engine":
                print(line)
        print(f"kgfed.engine: {engine} mypy errors, more than the baseline {baseline} "
              f"(scripts/mypy-engine-baseline): fix the new ones above")
        ok = False
    else:
        note = "" if engine == baseline else f"; lower scripts/mypy-engine-baseline to {engine} (--update-baseline)"
        print(f"kgfed.engine: {engine} mypy errors (baseline {baseline}){note}")
    print("mypy errors per package: " + ", ".join(f"{p} {counts[p]}" for p in PACKAGES))
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update-baseline", action="store_true",
                        help="write engine's mypy count and the complexity list as the new baselines")
    parser.add_argument("--only", choices=("ruff", "complexity", "mypy"), help="run one step")
    args = parser.parse_args(argv)
    ok = True
    if args.only in (None, "ruff"):
        ok = run_ruff() and ok
    if args.only in (None, "complexity"):
        ok = run_complexity(args.update_baseline) and ok
    if args.only in (None, "mypy"):
        ok = run_mypy(args.update_baseline) and ok
    print("check: " + ("passed" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
