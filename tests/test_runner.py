"""The KBQA run harness (`kgfed run`, engine/harness/runner.py) on the real CWQ subgraph and federation stores."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from kgfed.engine.config import CacheOptions, KGSpec
from kgfed.engine.harness.datasets import load_dataset
from kgfed.engine.harness.evaluate import read_predictions
from kgfed.engine.methods.base import Method, MethodParams, Result
from kgfed.engine.harness.runner import Output, RunSpec, costs_path_for, run, select_questions
from kgfed.sparql.errors import KgfedError

from .conftest import CWQ_NT, CWQ_QUESTIONS, FED_DIR, ROOT, need

FB = "http://rdf.freebase.com/ns/"
HERE = "tests.test_runner"


@dataclass(frozen=True)
class FirstNeighbourParams(MethodParams):
    delay: float = 0.0  # --param delay=SECONDS
    fail: bool = False  # --param fail=true


class FirstNeighbour(Method):
    """A small real method: the topic's outgoing relation most similar to the question (SBERT), and
    its first named neighbour (smallest id) as the answer."""

    name = "first-neighbour"
    Params = FirstNeighbourParams
    params: FirstNeighbourParams

    async def _answer(self, question: str, topics) -> Result:
        await asyncio.sleep(self.params.delay)
        if self.params.fail:
            raise KgfedError("asked to fail")
        kg_name, ids = next(((n, ids) for n, ids in topics.items() if ids), (None, None))
        if kg_name is None:
            return Result(question, "")
        kg, topic = self.kgs[kg_name], sorted(ids)[0]
        relations = sorted({r.relation for r in await kg.relations(topic, "out") if "|" not in r.relation})
        if not relations:
            return Result(question, "")
        sims = await self.embedder.similarity(question, [r.replace(".", " ").replace("_", " ") for r in relations])
        best = max(zip(sims, relations))[1]
        edges = sorted((e for e in await kg.neighbors(topic, best, "out") if e.object_label and not e.literal),
                       key=lambda e: e.object)
        if not edges:
            return Result(question, "")
        return Result(question, edges[0].object_label, [edges[0].object], [[edges[0]]])


def cwq_spec(method: str = f"{HERE}:FirstNeighbour", **params) -> RunSpec:
    return RunSpec(method, params, kgs=(KGSpec("freebase", f"file:{need(CWQ_NT)}"),))


def cwq_questions(n: int):
    return select_questions(load_dataset(need(CWQ_QUESTIONS)), limit=n)


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_run_writes_tog_records_in_order_with_costs(tmp_path, cwq_store):
    questions = cwq_questions(6)
    out = tmp_path / "preds.jsonl"
    summary = asyncio.run(run(cwq_spec(), questions, out, concurrency=4, progress=False))
    records = lines(out)
    assert [r["id"] for r in records] == [q.id for q in questions]  # dataset order despite concurrency
    assert summary["answered"] == summary["new"] == 6 and summary["failed"] == 0
    for record, question in zip(records, questions):
        assert record["question"] == question.text
        assert record["results"].startswith("{") and record["results"].endswith("}")
        answer = record["results"][1:-1]
        if answer == "NULL":  # no answer: written as ToG's {NULL}, never as "{}"
            continue
        # the answer is the name of a real out-neighbour of a topic entity, over the chain's relation
        (head, relation, tail), = record["reasoning_chains"][0]
        assert tail == answer and head in question.topics["freebase"].values()
        topic = next(i for i, n in question.topics["freebase"].items() if n == head)
        target = record["answer_ids"][0]
        assert cwq_store.query(f"ASK {{ <{FB}{topic}> <{FB}{relation}> <{FB}{target}> }}")
        assert "cost" not in record  # LLM-free: no LLM figures; SPARQL counts live in the sidecar
    costs = lines(costs_path_for(out))
    assert [c["id"] for c in costs] == [q.id for q in questions]
    assert all(c["sparql_queries"] in (1, 2) and c["seconds"] > 0 for c in costs), costs
    assert all(c.get("requests_sent", 0) + c.get("cache_hits", 0) + c.get("shared", 0) == c["sparql_queries"] for c in costs)
    assert all(c["sparql_queries"] == 2 for c, r in zip(costs, records) if r["answer_ids"])  # relations + neighbours
    # the summary's score is the evaluator's score of the written file
    from kgfed.engine.harness.evaluate import evaluate

    assert summary["hits@1"] == evaluate(read_predictions(out, "tog"), questions).hits_at_1


def test_resume_skips_done_ids_and_repairs_a_cut_line(tmp_path, cwq_store):
    questions = cwq_questions(6)
    out = tmp_path / "preds.jsonl"
    first = asyncio.run(run(cwq_spec(), questions[:3], out, progress=False))
    assert first["new"] == 3
    with out.open("a", encoding="utf-8") as handle:  # a run killed mid-line
        handle.write('{"question": "half a rec')
    second = asyncio.run(run(cwq_spec(), questions, out, progress=False))
    assert (second["skipped"], second["new"], second["answered"]) == (3, 3, 6)
    assert [r["id"] for r in lines(out)] == [q.id for q in questions]
    third = asyncio.run(run(cwq_spec(), questions, out, progress=False))
    assert (third["skipped"], third["new"]) == (6, 0)


def test_warm_cache_rerun_is_byte_identical(tmp_path, cwq_store):
    questions = cwq_questions(8)
    outs = [tmp_path / f"run{i}.jsonl" for i in range(3)]
    for out in outs:
        asyncio.run(run(cwq_spec(), questions, out, concurrency=8, progress=False))
    assert outs[0].read_bytes() == outs[1].read_bytes() == outs[2].read_bytes()
    warm = [lines(costs_path_for(o)) for o in outs[1:]]
    strip = lambda rows: [{k: v for k, v in r.items() if k != "seconds"} for r in rows]  # noqa: E731
    assert strip(warm[0]) == strip(warm[1])
    assert all(r["cache_hits"] == r["sparql_queries"] and "requests_sent" not in r for r in warm[0])


@pytest.mark.parametrize("fmt", ["tog-json", "tog2"])
def test_list_formats_are_written_whole_and_read_back(tmp_path, fmt, cwq_store):
    questions = cwq_questions(4)
    out = tmp_path / "preds.json"
    asyncio.run(run(cwq_spec(), questions[:2], out, fmt=fmt, progress=False))
    asyncio.run(run(cwq_spec(), questions, out, fmt=fmt, progress=False))
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert isinstance(doc, list) and [r["id"] for r in doc] == [q.id for q in questions]
    assert not out.with_name(out.name + ".partial").exists()
    key = "answer" if fmt == "tog2" else "results"
    assert all(key in r for r in doc) and ("reasoning_chains" in doc[0]) == (fmt == "tog-json")
    assert len(read_predictions(out, fmt)) == 4


def test_failures_are_reported_not_written_and_retried(tmp_path, cwq_store):
    questions = cwq_questions(3)
    out = tmp_path / "preds.jsonl"
    summary = asyncio.run(run(cwq_spec(fail=True), questions, out, progress=False))
    assert summary["failed"] == 3 and summary["answered"] == 0
    assert "asked to fail" in next(iter(summary["failures"].values()))
    assert not out.exists() or out.read_text() == ""
    assert asyncio.run(run(cwq_spec(), questions, out, progress=False))["new"] == 3


def test_a_broken_setup_stops_early(tmp_path, cwq_store):
    with pytest.raises(KgfedError, match="first 10 questions all failed"):
        asyncio.run(run(cwq_spec(fail=True), cwq_questions(40), tmp_path / "p.jsonl", concurrency=2, progress=False))


def test_sample_and_limit_are_seeded_and_in_dataset_order():
    questions = load_dataset(need(CWQ_QUESTIONS))
    a = select_questions(questions, sample=20, seed=7)
    assert [q.id for q in a] == [q.id for q in select_questions(questions, sample=20, seed=7)]
    assert [q.id for q in a] != [q.id for q in select_questions(questions, sample=20, seed=8)]
    order = {q.id: i for i, q in enumerate(questions)}
    assert [order[q.id] for q in a] == sorted(order[q.id] for q in a) and len(a) == 20
    assert [q.id for q in select_questions(questions, sample=20, seed=7, limit=5)] == [q.id for q in a[:5]]
    with pytest.raises(KgfedError):
        select_questions(questions, limit=0)


def test_output_refuses_a_missing_directory(tmp_path):
    with pytest.raises(KgfedError, match="does not exist"):
        Output(tmp_path / "nope" / "p.jsonl", "tog", [])


def test_workers_share_the_cache_and_match_a_single_process(tmp_path, cwq_store):
    questions = cwq_questions(8)
    single, multi = tmp_path / "single.jsonl", tmp_path / "multi.jsonl"
    asyncio.run(run(cwq_spec(), questions, single, progress=False))
    summary = asyncio.run(run(cwq_spec(), questions, multi, workers=2, concurrency=2, progress=False))
    assert summary["new"] == 8 and summary["cache_hit_rate"] == 1.0  # the workers read the cache the first run wrote
    assert single.read_bytes() == multi.read_bytes()


def test_ray_actors_share_the_cache(tmp_path, cwq_store):
    try:
        import ray  # noqa: F401
    except ImportError:
        pytest.skip("ray is not installed (pip install 'kgfed[distributed]'): the Ray scale-out is untested here")
    questions = cwq_questions(6)
    single, distributed = tmp_path / "single.jsonl", tmp_path / "ray.jsonl"
    asyncio.run(run(cwq_spec(), questions, single, progress=False))
    summary = asyncio.run(run(cwq_spec(), questions, distributed, workers=2, concurrency=2, use_ray=True, progress=False))
    assert summary["new"] == 6 and summary["cache_hit_rate"] == 1.0
    assert single.read_bytes() == distributed.read_bytes()


def _cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "import sys; from kgfed.engine.cli import main; sys.exit(main(sys.argv[1:]))", *argv],
                          cwd=ROOT, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=600)


@pytest.mark.parametrize("workers, stop", [("1", signal.SIGINT), ("2", signal.SIGINT), ("1", signal.SIGTERM)], ids=["int", "int-workers", "term"])
def test_ctrl_c_leaves_a_valid_file_and_the_run_resumes(tmp_path, workers, stop, cwq_store):
    out = tmp_path / "preds.jsonl"
    argv = ["run", str(CWQ_QUESTIONS), "--method", f"{HERE}:FirstNeighbour", "--param", "delay=0.3", "--kg", "freebase",
            "--endpoint", f"freebase=file:{CWQ_NT}", "--out", str(out), "--limit", "30", "--concurrency", "2",
            "--workers", workers, "--cache-dir", str(tmp_path / "cache")]
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from kgfed.engine.cli import main; sys.exit(main(sys.argv[1:]))", *argv],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:  # wait until some answers are on disk
        if out.exists() and out.read_text().count("\n") >= 4:
            break
        time.sleep(0.1)
    proc.send_signal(stop)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    questions = cwq_questions(30)
    kept = lines(out)  # every line is whole JSON
    order = [q.id for q in questions]
    assert 4 <= len(kept) < 30 and [r["id"] for r in kept] == [i for i in order if i in {r["id"] for r in kept}]
    done = _cli(*argv, "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["skipped"] == len(kept) and summary["new"] == 30 - len(kept)
    assert [r["id"] for r in lines(out)] == order


def test_cli_run_then_eval_agree(tmp_path, cwq_store):
    out = tmp_path / "preds.jsonl"
    ran = _cli("run", str(CWQ_QUESTIONS), "--method", "tog", "--kg", "freebase", "--endpoint", f"freebase=file:{CWQ_NT}",
               "--llm", "none", "--out", str(out), "--limit", "5", "--json", "--no-progress")
    assert ran.returncode == 0, ran.stderr
    summary = json.loads(ran.stdout)
    scored = _cli("eval", str(out), "--dataset", "cwq", "--gold", str(CWQ_QUESTIONS), "--json")
    assert scored.returncode == 0, scored.stderr
    report = json.loads(scored.stdout)
    assert report["n"] == 5 and report["hits@1"] == summary["hits@1"] and report["strict"] == summary["strict"]
    assert report["duplicates"] == [] and len(report["missing"]) == len(load_dataset(CWQ_QUESTIONS)) - 5


def test_cli_errors_are_one_line(tmp_path):
    bad = [
        (["--method", "nosuch"], "unknown method"),
        (["--param", "width"], "not KEY=VALUE"),
        (["--endpoint", "wikidata=file:x.nt"], "--kg does not list"),
        (["--out", str(tmp_path / "missing" / "p.jsonl")], "does not exist"),
        (["--limit", "0"], "argument --limit: must be >= 1"),
    ]
    for extra, message in bad:
        out = [] if "--out" in extra else ["--out", str(tmp_path / "p.jsonl")]
        done = _cli("run", str(need(CWQ_QUESTIONS)), "--kg", "freebase", "--endpoint", f"freebase=file:{CWQ_NT}", *out, *extra)
        assert done.returncode == 2, (extra, done.stderr)
        assert message in done.stderr and done.stderr.count("\n") == 1, (extra, done.stderr)


def _registered_methods() -> list[str]:
    from kgfed.engine.methods import REGISTRY

    return sorted(REGISTRY)


@pytest.mark.parametrize("method", _registered_methods())
def test_every_registered_method_runs_llm_free(tmp_path, method, cwq_store):
    from kgfed.engine.methods import get_method

    try:
        get_method(method)
    except KgfedError as exc:
        pytest.skip(f"method {method} is not in this checkout yet: {exc}")
    questions = cwq_questions(3)
    out = tmp_path / "preds.jsonl"
    summary = asyncio.run(run(cwq_spec(method), questions, out, progress=False))
    assert summary["failed"] == 0, summary["failures"]
    records = lines(out)
    assert [r["id"] for r in records] == [q.id for q in questions]
    assert all(c["sparql_queries"] > 0 for c in lines(costs_path_for(out)))


def test_federation_questions_over_both_kgs(tmp_path):
    questions = select_questions(load_dataset(need(FED_DIR / "questions.jsonl")), limit=4)
    spec = RunSpec(f"{HERE}:FirstNeighbour", {}, kgs=(KGSpec("freebase", f"file:{FED_DIR / 'freebase.nt'}"),
                                                     KGSpec("wikidata", f"file:{FED_DIR / 'wikidata.nt'}")))
    out = tmp_path / "fed.jsonl"
    summary = asyncio.run(run(spec, questions, out, progress=False))
    assert summary["answered"] == 4
    # FirstNeighbour answers from the first KG with topics: freebase, whose topic mids the file gives
    assert all(r["answer_ids"] == [] or r["answer_ids"][0].startswith(("m.", "g.")) for r in lines(out))


def test_run_with_recorded_llm_replies_is_reproducible(tmp_path, cwq_store):
    replies = ROOT / "tests" / "recordings" / "llm" / "tog"
    if not replies.is_dir():
        pytest.skip("ToG's recorded LLM replies are not in this checkout")
    questions = cwq_questions(2)  # the CWQ questions ToG's replies were recorded for, with their dataset topics
    spec = replace(cwq_spec("tog"), llm=f"replay:{replies}")
    outs = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    summaries = [asyncio.run(run(spec, questions, out, progress=False)) for out in outs]
    assert summaries[0]["failed"] == 0 and outs[0].read_bytes() == outs[1].read_bytes()
    recorded = [json.loads(p.read_text()) for p in replies.glob("*.json")]
    for record, question in zip(lines(outs[0]), questions):
        used = [d for d in recorded if question.text in d["prompt"]]
        assert record["cost"]["llm_calls"] == len(used) > 0  # every recorded reply of the question, replayed once
        assert record["cost"]["input_tokens"] == sum(d["input_tokens"] for d in used)
        assert record["cost"]["output_tokens"] == sum(d["output_tokens"] for d in used)
    first, second = lines(outs[0])[:2]
    assert first["results"] == f"{{{questions[0].answers[0]}}}" and second["results"] == f"{{{questions[1].answers[0]}}}"
    warm = lines(costs_path_for(outs[1]))
    assert all(c["cache_hits"] == c["sparql_queries"] and c["llm_calls"] > 0 for c in warm)


@pytest.mark.parametrize("stored", [0, 150])
def test_opening_a_runtime_loads_the_model_for_a_first_run_and_only_readies_the_embedder_for_a_replay(
        monkeypatch, tmp_path, stored):
    """A first run (few stored vectors) starts loading the model in the background; a replay never
    loads it, but the embedder's start-up (numpy, its model id, the stored vectors read in one pass)
    happens with the runtime's."""
    import numpy as np

    from kgfed.engine.harness import runner
    from kgfed.engine.toolbox import embeddings

    loads: list = []
    monkeypatch.setattr(embeddings, "preload", lambda path=None: loads.append(path))
    embedder = embeddings.Embedder(cache=tmp_path / "emb")
    embedder.cache.add_many(embedder.model_id, [(f"text {i}", np.full(384, i, dtype=np.float32).tobytes())
                                                for i in range(stored)])
    runtime = runner.Runtime(RunSpec("tog", cache=CacheOptions(enabled=False)))
    runtime.embedder = embedder
    runtime._preload()
    assert stored >= runner.PRELOAD_BELOW or (loads == [None] and not embedder._memo)
    if stored >= runner.PRELOAD_BELOW:
        assert loads == [] and "numpy" in sys.modules and len(embedder._memo) == stored
        assert embedder._memo["text 7"][0] == 7.0
    embedder.close()


def test_tog_chains_keep_the_name_an_earlier_triple_gave(cwq_store):
    """Issue 42 item 7: hop 2's head is hop 1's tail; it was written UnName_Entity (151 of 538 records of an
    LLM-free ToG run on CWQ, 0 now). Checked by id: an entity named by any triple of the paths keeps its name."""
    from kgfed.engine.harness.runner import Runtime
    from kgfed.engine.methods.base import UNNAMED

    async def chains() -> list:
        async with Runtime(cwq_spec("tog")) as runtime:
            return [await runtime.method.answer(q.text, await runtime.named_topics(q)) for q in cwq_questions(8)]

    multi_hop = 0
    for result in asyncio.run(chains()):
        named = {i for e in (e for p in result.paths for e in p)
                 for i, label in ((e.subject, e.subject_label), (e.object, e.object_label)) if label}
        for path, chain in zip(result.paths, result.tog_chains()):
            multi_hop += len(path) > 1
            for edge, (head, _, tail) in zip(path, chain):
                assert head != UNNAMED or edge.subject not in named, (edge, chain)
                assert tail != UNNAMED or edge.object not in named, (edge, chain)
    assert multi_hop >= 3  # the questions do reach hop 2 (questions 1, 3 and 7 showed the defect)
