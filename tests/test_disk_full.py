"""Writes that survive a full or read-only disk (issue 28, item 4), tested on a real tiny file system.

As root, a tmpfs of 800 KB is mounted for a test (`mount -t tmpfs -o size=800k`), grown with
`mount -o remount,size=64m` or made read-only with `remount,ro`, and unmounted afterwards; without
the right to mount, the tests that need it are skipped with the reason.

- `kgfed extract` stopped by a full disk says so in one line and keeps whole journal lines; run again
  after space is freed, it writes the same file as an uninterrupted extract (a torn tail is cut first).
- A cache that fills up during a run turns caching off with one warning; answers stay right, the run's
  summary (which questions failed) is still shown. A cache root that cannot be opened (full, read-only)
  stops with one line naming `--cache-dir` and `--no-cache`, exit 2; so does an unwritable `--out`.
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph as ox
import pytest

from kgfed.cache.options import CacheOptions
from kgfed.cache.responses import ResponseCache
from kgfed.cache.root import CacheError, DiskStore
from kgfed.engine.cli import main
from kgfed.engine.harness.extract import extract, read_topics
from kgfed.engine.harness.files import DiskError, LineLog, drop_partial_line
from kgfed.engine.kg import KG
from kgfed.engine.methods.base import Method, MethodParams, Result
from kgfed.sparql.errors import KgfedError

from .conftest import CWQ_NT, CWQ_QUESTIONS, need

HERE = "tests.test_disk_full"
N = 40  # questions: their 2-hop extract is about 1.7 MB, twice what the tiny disk holds


class TinyDisk:
    """A tmpfs mounted at `path` for one test."""

    def __init__(self, path: Path):
        self.path = path

    def _mount(self, *options: str) -> None:
        done = subprocess.run(["mount", *options, str(self.path)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr

    def grow(self, size: str = "64m") -> None:
        self._mount("-o", f"remount,size={size}")

    def read_only(self) -> None:
        self._mount("-o", "remount,ro")

    def fill(self) -> None:
        """Take every free byte with a filler file (what another process on a full disk would do)."""
        with open(self.path / "filler", "wb") as fh:
            try:
                while True:
                    fh.write(b"\0" * 65536)
                    fh.flush()
            except OSError:
                pass
        assert os.statvfs(self.path).f_bavail == 0


@pytest.fixture
def tiny_disk(tmp_path):
    path = tmp_path / "disk"
    path.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=800k", "tmpfs", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode}): run as root to test a full disk")
    try:
        yield TinyDisk(path)
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def questions(tmp_path: Path, n: int = N) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(need(CWQ_QUESTIONS).read_text(encoding="utf-8").splitlines(keepends=True)[:n]), encoding="utf-8")
    return path


def parses(path: Path) -> int:
    """The triples in an N-Triples file (pyoxigraph raises on a torn or joined line)."""
    store = ox.Store()
    store.bulk_load(path=str(path), format=ox.RdfFormat.N_TRIPLES)
    return len(store)


def whole_lines(path: Path) -> list[str]:
    data = path.read_bytes()
    assert not data or data.endswith(b"\n"), f"{path} ends in a torn line"
    return data.decode("utf-8").splitlines()


def extract_argv(qs: Path, out: Path, cache: Path) -> list[str]:
    return ["extract", str(qs), "-e", f"file:{need(CWQ_NT)}", "--hops", "2", "--out", str(out),
            "--cache-dir", str(cache), "--no-progress"]


# -- kgfed extract ---------------------------------------------------------------------------------------------
def test_extract_resumed_after_a_full_disk_equals_an_uninterrupted_extract(tmp_path, tiny_disk, capsys):
    qs, cache = questions(tmp_path), tmp_path / "cache"
    assert main(extract_argv(qs, tmp_path / "whole.nt", cache)) == 0
    capsys.readouterr()

    out = tiny_disk.path / "kg.nt"
    assert main(extract_argv(qs, out, cache)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kgfed: error: cannot write ") and "No space left on device" in err
    assert "questions kept in" in err and "run the same command again" in err and "Traceback" not in err
    kept = whole_lines(Path(f"{out}.questions.jsonl"))  # the journal holds whole lines only
    partial = Path(f"{out}.partial")
    assert 0 < len(kept) < N and partial.exists() and all(line.endswith(" .") for line in whole_lines(partial))
    assert not out.exists()

    tiny_disk.grow()
    assert main(extract_argv(qs, out, cache)) == 0
    assert "error" not in capsys.readouterr().err
    assert out.read_bytes() == (tmp_path / "whole.nt").read_bytes()
    assert parses(out) == len(whole_lines(out)) > 10_000
    sidecar = json.loads(Path(f"{out}.json").read_text(encoding="utf-8"))
    assert sidecar["counts"]["questions"] == N and sidecar["run"]["new_questions"] == N - len(kept)
    assert not partial.exists() and not list(tiny_disk.path.glob(".*.tmp"))


def test_extract_that_cannot_write_its_final_file_keeps_the_journal(tmp_path, tiny_disk, capsys):
    """Here the journal fits and OUT (written beside it before the journal goes) does not: no file is left
    half-written, and the next run finishes the job."""
    qs, cache = questions(tmp_path, 8), tmp_path / "cache"
    assert main(extract_argv(qs, tmp_path / "whole.nt", cache)) == 0
    size = (tmp_path / "whole.nt").stat().st_size
    assert 400_000 < size < 700_000, size  # the journal fits in 800 KB, journal + OUT do not
    capsys.readouterr()
    out = tiny_disk.path / "kg.nt"
    assert main(extract_argv(qs, out, cache)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot write {out} (No space left on device)" in err and "8 questions kept" in err
    assert not out.exists() and len(whole_lines(Path(f"{out}.questions.jsonl"))) == 8
    tiny_disk.grow()
    assert main(extract_argv(qs, out, cache)) == 0
    assert out.read_bytes() == (tmp_path / "whole.nt").read_bytes() and not Path(f"{out}.partial").exists()


async def test_a_torn_journal_tail_is_cut_before_resuming(tmp_path):
    """What a kill -9 (or an older kgfed on a full disk) leaves: the last triple and report cut mid-line."""
    spec = f"file:{need(CWQ_NT)}"
    topics = read_topics(questions(tmp_path, 8))
    async with KG.open(spec, dialect="freebase", cache=CacheOptions(root=str(tmp_path / "cache"))) as kg:
        await extract(kg, topics, tmp_path / "whole.nt", hops=2, source=spec, progress=False)
        out = tmp_path / "resumed.nt"
        await extract(kg, topics[:4], out, hops=2, source=spec, progress=False)  # the first half, finished
        partial, reports = Path(f"{out}.partial"), Path(f"{out}.questions.jsonl")
        partial.write_text('<http://rdf.freebase.com/ns/m.0abc> <http://rdf.freebase.com/ns/people.per', encoding="utf-8")
        with open(reports, "a", encoding="utf-8") as fh:
            fh.write('{"id": "WebQ')
        again = await extract(kg, topics, out, hops=2, source=spec, progress=False)
    assert again["run"]["new_questions"] == 4 and again["counts"]["questions"] == 8
    assert out.read_bytes() == (tmp_path / "whole.nt").read_bytes()
    assert parses(out) == len(whole_lines(out)) and "people.per\n" not in out.read_text(encoding="utf-8")


def test_a_line_log_write_that_fails_leaves_no_partial_line(tmp_path, tiny_disk):
    path = tiny_disk.path / "journal"
    log = LineLog(path)
    log.append("first line\n")
    with pytest.raises(DiskError, match=r"cannot write .*journal \(No space left on device\): free space"):
        log.append("x" * 2_000_000 + "\n")  # more than the disk holds: part of it reaches the disk first
    log.close()
    assert path.read_bytes() == b"first line\n"
    path.write_bytes(b"first line\nsecond, torn")
    assert drop_partial_line(path) == len(b"second, torn") and path.read_bytes() == b"first line\n"


def test_an_unwritable_out_is_one_line_and_exit_2(tmp_path, tiny_disk, capsys):
    qs = questions(tmp_path, 2)
    tiny_disk.read_only()
    assert main(extract_argv(qs, tiny_disk.path / "kg.nt", tmp_path / "cache")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Read-only file system" in err and "unexpected" not in err
    assert main(["extract", str(qs), "--topics-only", "--out", str(tiny_disk.path / "topics.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Read-only file system" in err and "unexpected" not in err


def test_extract_prints_interrupted_once(tmp_path):
    """Ctrl-C during an extract: one line saying what was kept (it used to print "interrupted" twice)."""
    import signal
    import sys
    import time

    qs = questions(tmp_path, 30)
    out = tmp_path / "kg.nt"
    proc = subprocess.Popen([sys.executable, "-m", "kgfed.engine.cli", *extract_argv(qs, out, tmp_path / "cache"),
                             "--parallel", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reports = Path(f"{out}.questions.jsonl")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None and not (reports.exists() and reports.read_text().count("\n") >= 2):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.count("interrupted") == 1 and "questions kept in" in err and "Traceback" not in err, err
    assert parses(out) > 0


# -- the cache ---------------------------------------------------------------------------------------------------
def test_a_cache_that_fills_up_turns_caching_off_with_one_warning(tmp_path, tiny_disk, caplog):
    cache = ResponseCache(tiny_disk.path, linger=0.0)
    try:
        from kgfed.sparql.results import SelectResult, Term

        answers = {f"k{i}": SelectResult(["x"], [{"x": Term("literal", f"{i}" * 200)}]) for i in range(3000)}
        keys = list(answers)
        for key in keys[:10]:
            cache.set(key, answers[key])
        cache.flush()
        assert cache.write_failed is None and cache.get("k1") == answers["k1"]
        tiny_disk.fill()
        with caplog.at_level(logging.WARNING, logger="kgfed.cache"):
            for key in keys[10:]:
                cache.set(key, answers[key])
            cache.flush()
            cache.close()  # never raises for the store
        warnings = [r.getMessage() for r in caplog.records if r.name == "kgfed.cache"]
        assert len(warnings) == 1 and "database or disk is full" in warnings[0] and "--no-cache" in warnings[0]
        assert cache.write_failed and cache.stats["write_errors"] >= 1
        assert cache.get("k2999") == answers["k2999"] and cache.get("k1") == answers["k1"]  # memory and store
    finally:
        cache.close()


def test_a_full_or_read_only_cache_root_stops_with_one_line(tmp_path, tiny_disk, capsys):
    argv = ["relations", "g.11b6gq6dl2", "-e", f"file:{need(CWQ_NT)}", "--cache-dir", str(tiny_disk.path)]
    assert main(argv) == 0  # the cache is made and written
    capsys.readouterr()
    tiny_disk.read_only()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"kgfed: error: cannot open the cache at {tiny_disk.path}/responses (")
    assert ("readonly database" in err or "unable to open database file" in err) and "--cache-dir" in err and "--no-cache" in err
    assert main([*argv, "--no-cache"]) == 0  # the fix the line names works
    assert "g.11b6gq6dl2" in capsys.readouterr().out
    with pytest.raises(CacheError, match="cannot open the cache"):
        DiskStore(tiny_disk.path / "new")


def test_a_full_cache_root_at_open_stops_with_one_line(tmp_path, tiny_disk, capsys):
    tiny_disk.fill()
    assert main(["relations", "g.11b6gq6dl2", "-e", f"file:{need(CWQ_NT)}", "--cache-dir", str(tiny_disk.path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot open the cache" in err and ("disk is full" in err or "No space" in err)


@dataclass(frozen=True)
class FirstRelationParams(MethodParams):
    fail_below: int = 0
    fill: str = ""  # fill=DIR: another process fills that disk as the first question starts


class FirstRelation(Method):
    """A small LLM-free method: the topic's first outgoing relation and its first neighbour; questions
    whose id ends in a digit below `fail_below` fail (to see them named in the summary)."""

    name = "first-relation"
    Params = FirstRelationParams
    params: FirstRelationParams

    async def _answer(self, question: str, topics) -> Result:
        if self.params.fill and not (Path(self.params.fill) / "filler").exists():
            TinyDisk(Path(self.params.fill)).fill()
        kg_name, ids = next(((n, ids) for n, ids in topics.items() if ids), (None, None))
        if kg_name is None:
            return Result(question, "")
        kg, topic = self.kgs[kg_name], sorted(ids)[0]
        if self.params.fail_below > int(topic[-1], 36) % 10:
            raise KgfedError(f"asked to fail for {topic}")
        relations = sorted(r.relation for r in await kg.relations(topic, "out") if "|" not in r.relation)
        edges = []
        for relation in relations[:2]:
            edges += [e for e in await kg.neighbors(topic, relation, "out") if e.object_label]
        edges.sort(key=lambda e: e.object)
        return Result(question, edges[0].object_label if edges else "", [edges[0].object] if edges else [])


def test_a_run_whose_cache_fills_up_still_answers_and_reports_its_failures(tmp_path, tiny_disk, capsys, caplog):
    qs = questions(tmp_path, 30)
    argv = ["run", str(qs), "--method", f"{HERE}:FirstRelation", "--param", "fail_below=3", "--kg", "freebase",
            "--endpoint", f"freebase=file:{need(CWQ_NT)}", "--no-progress", "--llm", "none"]
    assert main([*argv, "--out", str(tmp_path / "a.jsonl"), "--cache-dir", str(tmp_path / "cache")]) == 1
    reference = capsys.readouterr()
    with caplog.at_level(logging.WARNING, logger="kgfed"):  # (on the command line: one stderr line)
        assert main([*argv, "--param", f"fill={tiny_disk.path}", "--out", str(tmp_path / "b.jsonl"),
                     "--cache-dir", str(tiny_disk.path / "cache")]) == 1
    got = capsys.readouterr()
    warnings = [r.getMessage() for r in caplog.records if r.name == "kgfed.cache"]
    assert len(warnings) == 1 and "disk is full" in warnings[0] and "without caching" in warnings[0], got.err
    assert "unexpected" not in got.err and "Traceback" not in got.err
    failed = [line for line in got.err.splitlines() if "question(s) failed" in line]
    assert failed == [line for line in reference.err.splitlines() if "question(s) failed" in line] and failed
    assert got.out.splitlines()[:2] == [line.replace("a.jsonl", "b.jsonl") for line in reference.out.splitlines()[:2]]
    a = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    b = [json.loads(line) for line in (tmp_path / "b.jsonl").read_text().splitlines()]
    assert [(r["question"], r["results"]) for r in a] == [(r["question"], r["results"]) for r in b] and len(a) > 10


def test_a_run_whose_output_disk_fills_up_names_what_failed_and_resumes(tmp_path, tiny_disk, capsys):
    qs = questions(tmp_path, 30)
    argv = ["run", str(qs), "--method", f"{HERE}:FirstRelation", "--param", "fail_below=3", "--kg", "freebase",
            "--endpoint", f"freebase=file:{need(CWQ_NT)}", "--no-progress", "--llm", "none", "--cache-dir", str(tmp_path / "cache")]
    assert main([*argv, "--out", str(tmp_path / "a.jsonl")]) == 1
    reference = capsys.readouterr()
    out = tiny_disk.path / "b.jsonl"
    assert main([*argv, "--param", f"fill={tiny_disk.path}", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kgfed: error: cannot write ") and "No space left on device" in err
    assert "question(s) failed (first: " in err and "run the same command again" in err, err
    (tiny_disk.path / "filler").unlink()
    assert main([*argv, "--out", str(out)]) == 1  # resumed: the failing questions fail again, the rest is written
    again = capsys.readouterr()
    assert [line for line in again.err.splitlines() if "question(s) failed" in line] == \
        [line for line in reference.err.splitlines() if "question(s) failed" in line]
    assert out.read_text(encoding="utf-8") == (tmp_path / "a.jsonl").read_text(encoding="utf-8")


@pytest.mark.embeddings
def test_an_embedding_cache_that_fills_up_is_a_warning_not_a_failure(tmp_path, tiny_disk, caplog):
    import numpy as np

    from kgfed.engine.toolbox.embeddings import Embedder

    reference = Embedder(cache=False).encode_sync(["place of birth", "film director", "country of citizenship"])
    embedder = Embedder(cache=tiny_disk.path / "emb")
    first = embedder.encode_sync(["place of birth"])
    tiny_disk.fill()
    with caplog.at_level(logging.WARNING, logger="kgfed.embeddings"):
        more = embedder.encode_sync([f"text number {i} " * 20 for i in range(200)] + ["film director", "country of citizenship"])
    warnings = [r.getMessage() for r in caplog.records if r.name == "kgfed.embeddings"]
    assert len(warnings) == 1 and "disk is full" in warnings[0] and "--cache-dir" in warnings[0]
    assert np.allclose(np.vstack([first, more[-2:]]), reference, atol=1e-5)
    assert np.allclose(embedder.encode_sync(["place of birth"]), first)  # still answered (memory)


def test_a_damaged_cache_database_is_one_line_naming_the_fix(tmp_path, capsys):
    argv = ["relations", "g.11b6gq6dl2", "-e", f"file:{need(CWQ_NT)}", "--cache-dir", str(tmp_path / "c")]
    assert main(argv) == 0
    capsys.readouterr()
    db = tmp_path / "c" / "responses" / "cache.db"
    data = bytearray(db.read_bytes())
    data[100:4000] = b"x" * 3900  # the schema pages overwritten
    db.write_bytes(bytes(data))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "(database disk image is malformed)" in err and "delete that directory" in err
    assert main([*argv, "--no-cache"]) == 0
