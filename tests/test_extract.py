"""`kgfed extract` against the whole CWQ fixture served as "the remote Freebase" (Oxigraph server, Virtuoso,
embedded store): leak-free input, retained questions, same method answers on the extract, caps, resume."""
from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from pathlib import Path

import pyoxigraph as ox
import pytest

from kgfed.cache.options import CacheOptions
from kgfed.engine.cli import main
from kgfed.engine.harness.datasets import load_dataset
from kgfed.engine.harness.extract import Caps, Extractor, Topics, extract, nt_line, read_topics, write_topics
from kgfed.engine.kg import KG
from kgfed.engine.config import KGSpec
from kgfed.engine.harness.runner import RunSpec, run
from kgfed.sparql.errors import KgfedError
from kgfed.sparql.results import Term

from .conftest import CODEX_NT, CWQ_NT, CWQ_QUESTIONS, need

N = 30  # questions in the end-to-end checks (hops 2 keeps them to a few seconds)
TOG_N = 8  # of them, answered by LLM-free ToG on the server and on the extract
NS = "http://rdf.freebase.com/ns/"


def first_questions(tmp_path: Path, n: int = N) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(need(CWQ_QUESTIONS).read_text(encoding="utf-8").splitlines(keepends=True)[:n]), encoding="utf-8")
    return path


def scrubbed(questions: Path, tmp_path: Path) -> Path:
    """The same questions with every gold field replaced by nonsense."""
    out = tmp_path / "scrubbed.jsonl"
    records = [json.loads(line) for line in questions.read_text(encoding="utf-8").splitlines()]
    for record in records:
        record.update(answers=["nonsense"], answer_mids=["m.0zzzzzz"], sparql="SELECT ?x WHERE { ?x ?p ?o }")
    out.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return out


async def extract_file(spec: str, topics, out: Path, hops: int = 2, **kw) -> dict:
    async with KG.open(spec, dialect="freebase", cache=CacheOptions(root=str(out.parent / "cache"))) as kg:
        return await extract(kg, topics, out, hops=hops, source=spec, progress=False, **kw)


def triples(path: Path) -> set[str]:
    return set(path.read_text(encoding="utf-8").splitlines())


# -- leak-freedom ---------------------------------------------------------------------------------------
def test_the_extractor_input_holds_ids_and_topics_only(tmp_path):
    assert [f.name for f in dataclasses.fields(Topics)] == ["id", "entities"]
    questions = first_questions(tmp_path, 5)
    frozen = tmp_path / "topics.jsonl"
    assert write_topics(questions, frozen) == 5
    records = [json.loads(line) for line in frozen.read_text(encoding="utf-8").splitlines()]
    assert all(set(r) == {"id", "topics"} for r in records)
    assert records[0] == {"id": "WebQTest-576_01e2da60a2779c4ae4b5d1547499a4f8",
                          "topics": {"freebase": {"m.01tzh": "Central America", "m.0146np": "Alta Verapaz Department"}}}
    assert read_topics(frozen) == read_topics(questions) == read_topics(scrubbed(questions, tmp_path))
    assert "m.0345_" not in frozen.read_text(encoding="utf-8")  # the first question's gold answer


async def test_gold_fields_cannot_change_the_extract(tmp_path):
    questions = first_questions(tmp_path, 8)
    spec = f"file:{need(CWQ_NT)}"
    await extract_file(spec, read_topics(questions), tmp_path / "a.nt")
    await extract_file(spec, read_topics(scrubbed(questions, tmp_path)), tmp_path / "b.nt")
    assert (tmp_path / "a.nt").read_bytes() == (tmp_path / "b.nt").read_bytes()


# -- the remote Freebase: retained rate, size, and the same method answers ------------------------------------
def test_oxigraph_extract_retains_the_questions_and_tog_answers_alike(tmp_path, oxigraph_freebase):
    questions = first_questions(tmp_path)
    frozen = tmp_path / "topics.jsonl"
    out = tmp_path / "cwq.nt"
    cache = str(tmp_path / "cache")
    assert main(["extract", str(questions), "--topics-only", "--out", str(frozen)]) == 0
    assert main(["extract", str(frozen), "-e", oxigraph_freebase.url, "--dialect", "freebase", "--hops", "2",
                 "--out", str(out), "--cache-dir", cache, "--no-progress"]) == 0
    sidecar = json.loads(Path(f"{out}.json").read_text(encoding="utf-8"))
    assert sidecar["settings"]["source"] == oxigraph_freebase.url and sidecar["settings"]["hops"] == 2
    assert sidecar["counts"]["questions"] == N and sidecar["counts"]["triples"] == len(triples(out))
    assert sidecar["topics_sha256"] and sidecar["date"].endswith("+00:00")
    reports = [json.loads(line) for line in Path(f"{out}.questions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {r["id"] for r in reports} == {q.id for q in load_dataset(questions)}
    assert all(r["nodes"] > 0 and r["triples"] > 0 and not r["missing_topics"] for r in reports)

    check = tmp_path / "check.json"
    retained = tmp_path / "retained.jsonl"
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["extract-check", str(questions), "--kg", str(out), "--source", oxigraph_freebase.url,
                     "--source-size", "--retained-out", str(retained), "--cache-dir", cache, "--json"]) == 0
    check.write_text(buffer.getvalue(), encoding="utf-8")
    report = json.loads(buffer.getvalue())
    assert report["answered_on_source"] == N
    assert report["retained_rate"] >= 0.9  # measured: 1.0 for the first 30 questions at 2 hops
    assert report["source_triples"] == 24_985 and report["extract_triples"] < report["source_triples"]
    kept = load_dataset(retained)
    assert sorted(q.id for q in kept) == report["retained_ids"]

    # LLM-free ToG on retained questions (the first TOG_N: SBERT pruning is slow on a busy machine):
    # the server and the extract give the same answers and reasoning chains
    kept = kept[:TOG_N]
    answers = {}
    for name, endpoint in (("server", oxigraph_freebase.url), ("extract", f"file:{out}")):
        spec = RunSpec("tog", {}, kgs=(KGSpec("freebase", endpoint),), cache=CacheOptions(root=str(tmp_path / name)),
                       embeddings_dir=str(tmp_path / "embeddings"))  # shared: the second run reuses the vectors
        asyncio.run(run(spec, kept, tmp_path / f"{name}.jsonl", concurrency=4, progress=False))
        records = [json.loads(line) for line in (tmp_path / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()]
        answers[name] = {r["id"]: (r["results"], r["reasoning_chains"]) for r in records}
    assert answers["server"] == answers["extract"] and len(answers["server"]) == len(kept)


@pytest.mark.virtuoso
async def test_virtuoso_and_the_embedded_store_give_the_same_extract(tmp_path, virtuoso_freebase):
    topics = read_topics(first_questions(tmp_path, 10))
    await extract_file(virtuoso_freebase.graph_url(virtuoso_freebase.cwq_graph), topics, tmp_path / "v.nt")
    await extract_file(f"file:{need(CWQ_NT)}", topics, tmp_path / "e.nt")
    assert triples(tmp_path / "v.nt") == triples(tmp_path / "e.nt")


# -- caps ---------------------------------------------------------------------------------------------------
async def test_per_relation_cap_is_applied_and_reported(tmp_path):
    async with KG.open(f"file:{need(CWQ_NT)}", dialect="freebase", cache=False) as kg:
        full = await Extractor(kg, 1).question(Topics("usa", ("m.09c7w0",)))
        capped = await Extractor(kg, 1, Caps.for_dialect(kg.dialect, per_relation=3)).question(Topics("usa", ("m.09c7w0",)))
    contains = f"<{NS}m.09c7w0> <{NS}location.location.contains> "
    assert sum(line.startswith(contains) for line in full.lines) > 3
    assert sum(line.startswith(contains) for line in capped.lines) == 3
    cap = next(c for c in capped.report["capped"] if c["relation"] == "location.location.contains" and c["direction"] == "out")
    assert cap["count"] == sum(line.startswith(contains) for line in full.lines) and cap["kept"] == 3
    assert not full.report["capped"]


async def test_type_relations_are_not_followed_backwards_and_exclusions_hold(tmp_path):
    country_type = "m.01mp"  # common.topic.notable_types object of countries in the fixture
    async with KG.open(f"file:{need(CWQ_NT)}", dialect="freebase", cache=False) as kg:
        fetched = await Extractor(kg, 1).question(Topics("type", (country_type,)))
        guatemala = await Extractor(kg, 1).question(Topics("gt", ("m.0345_",)))
    # the type node keeps its name but none of the (many) countries that point at it
    assert not any(f"<{NS}common.topic.notable_types> <{NS}{country_type}>" in line for line in fetched.lines)
    assert any(line.startswith(f"<{NS}{country_type}> <{NS}type.object.name>") for line in fetched.lines)
    # Guatemala's own type is kept, the type node is not expanded, bookkeeping relations are excluded
    assert f"<{NS}m.0345_> <{NS}common.topic.notable_types> <{NS}{country_type}> ." in guatemala.lines
    assert not any("/ns/common.topic.webpage>" in line or "/ns/dataworld." in line for line in guatemala.lines)


async def test_node_budget_stops_a_question(tmp_path):
    async with KG.open(f"file:{need(CWQ_NT)}", dialect="freebase", cache=False) as kg:
        fetched = await Extractor(kg, 3, Caps.for_dialect(kg.dialect, max_nodes=20)).question(Topics("usa", ("m.09c7w0",)))
    assert fetched.report["node_budget_hit"] and fetched.report["expanded"] < fetched.report["nodes"]


async def test_cvts_are_expanded_inside_the_hop_and_topics_absent_are_reported(tmp_path):
    async with KG.open(f"file:{need(CWQ_NT)}", dialect="freebase", cache=False) as kg:
        fetched = await Extractor(kg, 1).question(Topics("q", ("m.0z4nb1p", "m.0zzzzzz", "Q42")))
    assert fetched.report["cvts"] >= 1
    assert fetched.report["missing_topics"] == ["m.0zzzzzz"] and fetched.report["invalid_topics"] == ["Q42"]
    # Ratty Nepalese ← performance CVT m.0z4nb1l ↔ the film, both directions, all within one hop
    assert f"<{NS}m.0z4nb1l> <{NS}film.performance.character> <{NS}m.0z4nb1p> ." in fetched.lines
    assert f"<{NS}m.0z4nb1l> <{NS}film.performance.film> <{NS}m.0f4yh> ." in fetched.lines
    assert f"<{NS}m.0f4yh> <{NS}film.film.starring> <{NS}m.0z4nb1l> ." in fetched.lines
    assert not any(line.startswith(f"<{NS}m.0f4yh> <{NS}film.film.directed_by>") for line in fetched.lines)


async def test_wikidata_type_relations_are_kept_outgoing_and_never_expanded():
    # the CoDEx fixture has no P31, so occupation (P106) plays the type relation here
    wd, wdt = "http://www.wikidata.org/entity/", "http://www.wikidata.org/prop/direct/"
    async with KG.open(f"file:{need(CODEX_NT)}", cache=False) as kg:
        assert Caps.for_dialect(kg.dialect).type_relations == ("P31",) and Caps.for_dialect(kg.dialect).exclude == ()
        plain = await Extractor(kg, 2).question(Topics("q", ("Q42",)))
        typed = await Extractor(kg, 2, Caps.for_dialect(kg.dialect, type_relations=("P106",))).question(Topics("q", ("Q42",)))
    writer = f"<{wd}Q36180> <{wdt}"
    for fetched in (plain, typed):
        assert f'<{wd}Q42> <http://www.w3.org/2000/01/rdf-schema#label> "Douglas Adams"@en .' in fetched.lines
        assert f"<{wd}Q42> <{wdt}P106> <{wd}Q36180> ." in fetched.lines
        assert f'<{wd}Q36180> <http://www.w3.org/2000/01/rdf-schema#label> "writer"@en .' in fetched.lines
    # the properties' directClaim links and labels, which the relations template reads to name relations
    for fetched in (plain, typed):
        assert f"<{wd}P106> <http://wikiba.se/ontology#directClaim> <{wdt}P106> ." in fetched.lines
        assert f'<{wd}P106> <http://www.w3.org/2000/01/rdf-schema#label> "occupation"@en .' in fetched.lines
    # as a plain relation the writer node is expanded at hop 2 (its out-edge and up to 100 writers)
    assert any(line.startswith(writer) for line in plain.lines)
    assert sum(line.endswith(f"<{wdt}P106> <{wd}Q36180> .") for line in plain.lines) >= 100
    assert {"node": "Q36180", "relation": "P106", "direction": "in", "count": 265, "kept": 100} in plain.report["capped"]
    assert not any(c["node"] == "Q36180" for c in typed.report["capped"])
    # as a type relation it is neither expanded nor followed backwards (boundary nodes still get their types)
    assert not any(line.startswith(writer) for line in typed.lines)


# -- files: N-Triples, resume, settings ------------------------------------------------------------------------
def test_ntriples_escaping_round_trips_through_pyoxigraph(tmp_path):
    s, p = Term("uri", NS + "m.0abc"), Term("uri", NS + "common.topic.alias")
    weird = Term("literal", 'a "quoted" \\ back\nslash\rline', "en")
    typed = Term("literal", "1998", None, "http://www.w3.org/2001/XMLSchema#gYear")
    lines = [nt_line(s, p, weird), nt_line(s, p, typed), nt_line(s, p, Term("literal", "plain"))]
    assert nt_line(Term("bnode", "b0"), p, typed) is None and nt_line(s, p, Term("uri", "http://x/a b")) is None
    path = tmp_path / "t.nt"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    store = ox.Store()
    store.bulk_load(path=str(path), format=ox.RdfFormat.N_TRIPLES)
    values = {(q.object.value, getattr(q.object, "language", None)) for q in store}
    assert ('a "quoted" \\ back\nslash\rline', "en") in values and ("1998", None) in values


async def test_an_interrupted_extract_resumes_to_the_same_file(tmp_path):
    spec = f"file:{need(CWQ_NT)}"
    topics = read_topics(first_questions(tmp_path, 12))
    await extract_file(spec, topics, tmp_path / "whole.nt")

    out = tmp_path / "resumed.nt"
    reports = Path(f"{out}.questions.jsonl")
    async with KG.open(spec, dialect="freebase", cache=CacheOptions(root=str(tmp_path / "cache2"))) as kg:
        task = asyncio.create_task(extract(kg, topics, out, hops=2, source=spec, progress=False, parallel=1))
        while not reports.exists() or len(reports.read_text(encoding="utf-8").splitlines()) < 3:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    sidecar = json.loads(Path(f"{out}.json").read_text(encoding="utf-8"))
    done = sidecar["counts"]["questions"]
    assert sidecar["run"]["interrupted"] and 3 <= done < 12 and out.exists()
    again = await extract_file(spec, topics, out)
    assert again["run"]["new_questions"] == 12 - done and not again["run"]["interrupted"]
    assert out.read_bytes() == (tmp_path / "whole.nt").read_bytes()
    assert not Path(f"{out}.partial").exists()


async def test_other_settings_on_the_same_out_are_refused(tmp_path):
    spec = f"file:{need(CWQ_NT)}"
    topics = read_topics(first_questions(tmp_path, 2))
    await extract_file(spec, topics, tmp_path / "x.nt", hops=1)
    with pytest.raises(KgfedError, match="other settings.*hops=1.*--fresh"):
        await extract_file(spec, topics, tmp_path / "x.nt", hops=2)
    fresh = await extract_file(spec, topics, tmp_path / "x.nt", hops=2, fresh=True)
    assert fresh["settings"]["hops"] == 2


def test_cli_errors_are_one_line(tmp_path, capsys):
    questions = first_questions(tmp_path, 2)
    assert main(["extract", str(questions), "--out", str(tmp_path / "x.nt")]) == 2
    assert "needs --endpoint" in capsys.readouterr().err
    assert main(["extract", str(questions), "-e", f"file:{need(CWQ_NT)}", "--hops", "0", "--out", str(tmp_path / "x.nt")]) == 2
    assert "--hops" in (err := capsys.readouterr().err) and "1" in err and err.count("\n") == 1
    assert main(["extract-check", str(questions), "--kg", str(tmp_path / "none.nt")]) == 2
    assert "run kgfed extract first" in capsys.readouterr().err


# -- failures: one question's endpoint error does not stop the others ------------------------------------------
async def test_a_failing_question_is_reported_and_retried_on_the_next_run(tmp_path):
    from aiohttp import web

    from . import httpfaults as hf

    broken = {"on": True}

    async def answer(request):
        query = (dict(await request.post()) if request.method == "POST" else dict(request.query)).get("query", "")
        if broken["on"] and "m.0bad" in query:
            return web.Response(status=400, text="Virtuoso 37000 Error SP030: simulated failure")
        head = re.search(r"SELECT(.*?)WHERE", query, re.S)  # an empty answer with the variables asked for
        names = list(dict.fromkeys(re.findall(r"\?(\w+)", head.group(1) if head else "")))
        return web.Response(body=json.dumps({"head": {"vars": names}, "results": {"bindings": []}}),
                            content_type="application/sparql-results+json")

    server = hf.FaultServer([answer])
    runner = await hf.start(server)
    topics = [Topics("good", ("m.0good",)), Topics("bad", ("m.0bad",)), Topics("also", ("m.0also",))]
    out = tmp_path / "x.nt"
    try:
        first = await extract_file(server.url, topics, out, hops=1)
        assert first["run"]["failed"] == 1 and "HTTP 400" in first["run"]["failures"]["bad"]
        assert first["counts"]["questions"] == 2 and first["run"]["new_questions"] == 2
        reports = {json.loads(line)["id"]: json.loads(line) for line in Path(f"{out}.questions.jsonl").read_text().splitlines()}
        assert set(reports) == {"good", "also"} and reports["good"]["missing_topics"] == ["m.0good"]
        broken["on"] = False
        second = await extract_file(server.url, topics, out, hops=1)
        assert second["run"]["failed"] == 0 and second["run"]["new_questions"] == 1 and second["counts"]["questions"] == 3
        broken["on"] = True  # new ids: the answers of the healed server are cached for m.0bad
        with pytest.raises(KgfedError, match="the first 10 questions all failed.*kgfed doctor"):
            await extract_file(server.url, [Topics(f"b{i}", (f"m.0bad{i}",)) for i in range(12)], tmp_path / "y.nt", hops=1)
    finally:
        await runner.cleanup()
