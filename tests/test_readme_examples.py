"""Every example in README.md and in the full tour it links to (docs/cli.md), run as written (issue 21: a new
user copies them from a fresh clone). The tour moved out of the README in 0.2.0 and stays tested here.

The convention, for whoever adds a README paragraph (e.g. for `mcp`, `extract`, `doctor`, `endpoints`):

* Every fenced block is extracted. A ```python block runs as a script; any other block is shell: each
  command (a line, or lines joined by a trailing backslash) runs with bash, in order, in a scratch
  directory `work/` whose sibling `shared` links to the real ../shared, so `../shared/data/...` paths
  resolve as they do from a clone. `kgfed` is this venv's; the cache is private (KGFED_CACHE_DIR).
  Files one command writes (gold.rq, tog-cwq.jsonl) are there for the next ones of the README.
* `<!-- readme-test: skip (why) -->` on the line right before a fence: the block is not run (installs,
  `make`, anything that needs a machine of its own). Say why in the comment.
* A command that needs the network, an LLM API or a server the README starts elsewhere is recognised
  by `LIVE` below (an endpoint `wikidata` / `qlever-*`, `--llm anthropic|openai:|record:`, `--text
  wikipedia`, the 127.0.0.1 ports of the `serve-*` examples). It is parsed, not run: argparse must
  accept it, nothing is sent. A Python block that opens a live spec is compiled, not run. Add a
  pattern to `LIVE` when you document a new live spec.
* `kgfed serve-*` commands (and any in `SERVERS`) are started, must print "Ctrl-C to stop", and are
  stopped with SIGINT, which must exit 0; they are skipped when the server binary is missing. A new
  long-running command (an MCP stdio server) goes into `SERVERS` with the line that says it is ready,
  or gets the skip comment.
* Every other command must exit 0 with no traceback on stderr.

Slow (it loads the embedding model and answers questions): marked `slow`, left out of `make test-fast`.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, SHARED, need

pytestmark = pytest.mark.slow

README = ROOT / "README.md"
# the README first, then the full tour, in one scratch directory (a page may use files the README wrote)
PAGES = [README, ROOT / "docs" / "cli.md"]
BIN = Path(sys.executable).parent
SKIP = re.compile(r"<!--\s*readme-test:\s*skip\b")
LIVE = [re.compile(p) for p in (
    r"--endpoint\s+(?:\w+=)?(?:wikidata|qlever-[\w-]+)(?:\s|$)",      # live WDQS / QLever
    r"--llm\s+(?:anthropic|openai:|record:)",                           # an LLM API
    r"--text\s+wikipedia\b",                                            # live Wikipedia
    r"http://127\.0\.0\.1:(?:7878|8890)/",                              # the serve-* examples' ports
    r"""KG\.open\(\s*["'](?:wikidata|qlever-)""",                       # Python: a live endpoint
)]
# Commands that run until Ctrl-C: (pattern, the line that says they are ready, binary they need).
SERVERS = [(re.compile(r"^kgfed serve-virtuoso\b"), "Ctrl-C to stop", "virtuoso-t"),
           (re.compile(r"^kgfed serve-oxigraph\b"), "Ctrl-C to stop", "oxigraph")]


def readme_blocks(text: str) -> list[tuple[int, str, str]]:
    """(line number, language, body) of every fenced block not marked skip."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        start, body = i, []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        i += 1
        skipped = start > 0 and SKIP.search(lines[start - 1])
        if not skipped:
            blocks.append((start + 1, fence.group(1) or "sh", "\n".join(body)))
    return blocks


def commands(body: str) -> list[str]:
    """Shell commands of a block: continuation lines joined, blank lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", body)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def is_live(text: str) -> bool:
    return any(p.search(text) for p in LIVE)


BLOCKS = [(page.name, *block) for page in PAGES for block in readme_blocks(page.read_text(encoding="utf-8"))]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> dict[str, str]:
    """A `work/` directory beside a `shared` link (README paths are relative to a clone) and the env."""
    need(SHARED)
    root = tmp_path_factory.mktemp("readme")
    (root / "shared").symlink_to(SHARED.resolve().parent)  # ../shared, as beside a clone
    (root / "work").mkdir()
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "KGFED_CACHE_DIR": str(root / "cache"),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "COLUMNS": "200"}
    return {"cwd": str(root / "work"), **{f"env:{k}": v for k, v in env.items()}}


def _env(scratch: dict[str, str]) -> dict[str, str]:
    return {k[4:]: v for k, v in scratch.items() if k.startswith("env:")}


def _parse_only(command: str) -> None:
    from kgfed.engine.cli.app import build_parser

    argv = shlex.split(command, comments=True)
    assert argv[0] == "kgfed", f"a live example that is not a kgfed command: {command}"
    parser, _ = build_parser()
    try:
        parser.parse_args(argv[1:])
    except SystemExit as exc:
        pytest.fail(f"README command does not parse (exit {exc.code}): {command}")


def _serve(command: str, ready: str, binary: str, scratch: dict[str, str]) -> None:
    if shutil.which(binary) is None and shutil.which(binary, path=str(BIN)) is None:
        return  # the server is not installed here; its own tests say so (tests/test_servers.py)
    proc = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=scratch["cwd"], env=_env(scratch), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if ready in line:
                break
        assert any(ready in line for line in seen), f"{command} ended before it was ready: {''.join(seen)[-800:]}"
    finally:
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "Traceback" not in rest, f"{command}: exit {proc.returncode}: {rest[-800:]}"


@pytest.mark.parametrize("page, line, lang, body", BLOCKS, ids=[f"{b[0].removesuffix('.md')}-line-{b[1]}" for b in BLOCKS])
def test_readme_block_runs_as_written(scratch, page, line, lang, body):
    if lang == "python":
        if is_live(body):
            compile(body, f"{page}:{line}", "exec")
            return
        done = subprocess.run([sys.executable, "-c", body], cwd=scratch["cwd"], env=_env(scratch), capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, f"{page}:{line} python block failed:\n{done.stderr[-1500:]}"
        return
    for command in commands(body):
        server = next(((ready, binary) for pattern, ready, binary in SERVERS if pattern.search(command)), None)
        if server:
            _serve(command, *server, scratch)
        elif is_live(command):
            _parse_only(command)
        else:
            done = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=scratch["cwd"], env=_env(scratch),
                                  capture_output=True, text=True, timeout=600)
            assert done.returncode == 0 and "Traceback" not in done.stderr, \
                f"{page}:{line}: `{command}` exited {done.returncode}:\n{done.stderr[-1500:]}"


def test_the_convention_sees_every_kind_of_example():
    """The extraction itself: blocks are found, skips honoured, live lines recognised (a README edit that
    breaks the convention fails here, not silently)."""
    assert {page for page, *_ in BLOCKS} == {p.name for p in PAGES}
    kinds = {lang for _, _, lang, _ in BLOCKS}
    assert {"python", "sh"} <= kinds
    all_commands = [c for _, _, lang, body in BLOCKS if lang != "python" for c in commands(body)]
    assert not any(c.startswith(("make ", "pip ")) for c in all_commands)  # installs are marked skip
    assert any(is_live(c) for c in all_commands) and any(not is_live(c) for c in all_commands)
    assert is_live("kgfed relations Q42 --endpoint wikidata") and not is_live("kgfed expand Q42 --endpoint wikidata=file:x.nt")
    assert all(c.startswith(("kgfed ", "head ")) for c in all_commands), [c for c in all_commands if not c.startswith("kgfed ")]
