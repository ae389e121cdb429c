"""A prediction file knows what wrote it (`FILE.kgfed.json`), and kgfed never damages a file it did not write.

Issue 42 items 1-3 and 11, issue 37 item 5: `eval` detects the format and refuses a mismatch, a resume refuses
another method, format or KG and leaves the file byte-identical, every option is checked before a resume, a
file that is no prediction file is refused before any write, EM and F1 beside Hits@1 and strict.
"""
from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import pytest

from kgfed.engine.cli.app import main
from kgfed.engine.config import KGSpec
from kgfed.engine.harness.datasets import Question, load_dataset
from kgfed.engine.harness.evaluate import (
    Prediction, answer_f1, detect_format, evaluate, meta_dialects, meta_path_for, prediction_from_record, read_predictions, write_predictions,
)
from kgfed.engine.harness.runner import costs_path_for, run
from kgfed.sparql.errors import DatasetError, KgfedError

from .conftest import CWQ_QUESTIONS, FED_DIR, need
from .test_runner import HERE, cwq_questions, cwq_spec, lines

METHOD = f"{HERE}:FirstNeighbour"


def snapshot(*paths: Path) -> dict[Path, bytes | None]:
    return {p: p.read_bytes() if p.exists() else None for p in paths}


def files_of(out: Path) -> tuple[Path, ...]:
    return out, meta_path_for(out), costs_path_for(out), out.with_name(out.name + ".partial")


@pytest.fixture
def tog_file(tmp_path, cwq_store) -> Path:
    out = tmp_path / "tog-cwq.jsonl"
    asyncio.run(run(cwq_spec(), cwq_questions(4), out, progress=False, dataset=str(CWQ_QUESTIONS)))
    return out


def one_line_error(capsys, argv: list[str], *needles: str) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kgfed: error: ") and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err
    return err


# -- the sidecar ------------------------------------------------------------------------------------
def test_the_sidecar_says_what_wrote_the_file_and_togs_evals_still_read_it(tog_file):
    meta = json.loads(meta_path_for(tog_file).read_text(encoding="utf-8"))
    assert (meta["kgfed"], meta["method"], meta["format"], meta["dataset"]) == ("predictions", METHOD, "tog", str(CWQ_QUESTIONS))
    (kg,) = meta["kgs"]
    assert (kg["name"], kg["scope"]) == ("freebase", "subgraph fixture") and kg["endpoint"].endswith("cwq_subgraph.nt")
    # ToG: tools/jsonl2json.py turns each line into a record, eval/eval.py reads `question` and `results` of each
    records = [json.loads(line) for line in tog_file.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 4 and all(isinstance(r["question"], str) and isinstance(r["results"], str) for r in records)
    # ToG-2: eval/utils.py json.load()s a list whose records have the question and (optionally) `answer`
    tog2 = tog_file.with_name("tog2.json")
    asyncio.run(run(cwq_spec(), cwq_questions(4), tog2, fmt="tog2", progress=False))
    doc = json.loads(tog2.read_text(encoding="utf-8"))
    assert isinstance(doc, list) and all(set(r) >= {"question", "answer"} for r in doc)
    assert json.loads(meta_path_for(tog2).read_text(encoding="utf-8"))["format"] == "tog2"


def test_a_warm_rerun_writes_the_same_sidecar(tog_file):
    first = snapshot(*files_of(tog_file))[meta_path_for(tog_file)]
    asyncio.run(run(cwq_spec(), cwq_questions(4), tog_file, progress=False, dataset=str(CWQ_QUESTIONS)))
    assert meta_path_for(tog_file).read_bytes() == first


# -- eval: the format is the file's ------------------------------------------------------------------
def test_eval_refuses_a_format_the_file_is_not(tog_file, capsys):
    gold = str(CWQ_QUESTIONS)
    one_line_error(capsys, ["eval", str(tog_file), "--gold", gold, "--format", "tog2"], "is a tog prediction file", "--format tog")
    meta_path_for(tog_file).unlink()  # a file of kgfed 0.2, or of ToG itself: told by its records
    one_line_error(capsys, ["eval", str(tog_file), "--gold", gold, "--format", "tog2"], "records hold `results`")
    assert main(["eval", str(tog_file), "--gold", gold, "--json"]) == 0  # detected
    assert json.loads(capsys.readouterr().out)["n"] == 4
    assert detect_format(tog_file) == "tog" and detect_format(tog_file, "tog-json") == "tog-json"  # same field


def test_a_tog2_record_without_answer_is_never_right():
    """ToG-2's eval reads a missing `answer` as "", which its containment rule counts as right."""
    question = Question("q", "Capital of France?", answers=["Paris"], dataset="cwq")
    report = evaluate([prediction_from_record({"question": "Capital of France?"}, "tog2")], [question])
    assert (report.n, report.hits_at_1, report.strict, report.em, report.f1) == (1, 0.0, 0.0, 0.0, 0.0)


# -- resuming: the same method, format and KG, or nothing is touched ---------------------------------
@pytest.mark.parametrize("change", ["method", "format", "kg"])
def test_resume_refuses_another_method_format_or_kg_and_leaves_the_files(tog_file, change):
    before = snapshot(*files_of(tog_file))
    spec, fmt = cwq_spec(), "tog"
    if change == "method":
        spec = cwq_spec("tog")
    elif change == "format":
        fmt = "tog2"
    else:
        spec = replace(spec, kgs=(KGSpec("freebase", f"file:{need(FED_DIR / 'freebase.nt')}"),))
    with pytest.raises(KgfedError, match=f"was written with --{'kg' if change == 'kg' else change} ") as caught:
        asyncio.run(run(spec, cwq_questions(6), tog_file, fmt=fmt, progress=False))
    assert "\n" not in str(caught.value) and "left as it is" in str(caught.value)
    assert snapshot(*files_of(tog_file)) == before


def test_resume_without_a_sidecar_still_refuses_another_format(tog_file):
    meta_path_for(tog_file).unlink()
    before = snapshot(*files_of(tog_file))
    for fmt in ("tog2", "tog-json"):
        with pytest.raises(KgfedError, match=f"holds tog predictions, not {fmt}: pass --format tog"):
            asyncio.run(run(cwq_spec(), cwq_questions(6), tog_file, fmt=fmt, progress=False))
    assert snapshot(*files_of(tog_file)) == before


@pytest.mark.parametrize("bad, message", [
    ({"method": "nosuch"}, "unknown method"),
    ({"kgs": (KGSpec("freebase", "file:/nonexistent/kg.nt"),)}, "no RDF file"),
    ({"fallback": "bogus-profile"}, "unknown endpoint 'bogus-profile'"),
    ({"ray": "not an address"}, "is not a Ray address"),
])
def test_every_option_is_checked_before_a_run_with_nothing_left_to_answer(tog_file, bad, message):
    before = snapshot(*files_of(tog_file))
    spec, ray = cwq_spec(), None
    if "method" in bad:
        spec = replace(spec, method=bad["method"])
    if "kgs" in bad:
        spec = replace(spec, kgs=bad["kgs"])
    if "fallback" in bad:
        spec = replace(spec, kgs=(replace(spec.kgs[0], fallbacks=(bad["fallback"],)),))
    if "ray" in bad:
        ray = bad["ray"]
    with pytest.raises(KgfedError, match=message):
        asyncio.run(run(spec, cwq_questions(4), tog_file, progress=False, use_ray=ray is not None, ray_address=ray))
    assert snapshot(*files_of(tog_file)) == before


def test_a_cut_line_of_kgfeds_own_file_is_still_repaired(tog_file):
    with tog_file.open("a", encoding="utf-8") as handle:
        handle.write('{"question": "half a rec')
    summary = asyncio.run(run(cwq_spec(), cwq_questions(5), tog_file, progress=False))
    assert (summary["skipped"], summary["new"]) == (4, 1) and len(lines(tog_file)) == 5


# -- a file kgfed did not write is never damaged -----------------------------------------------------
FOREIGN = {
    "notes.md": b"# Notes\n\nThe run of Tuesday.\nno newline at the end",
    "blob.jsonl": bytes(range(256)) * 16,  # 4,096 bytes, not UTF-8
    "other.json": b'{"name": "not a prediction", "values": [1, 2, 3]}\n',
    "tog-own.jsonl": b'{"question": "Capital of France?", "results": "{Paris}", "reasoning_chains": []}\n{"question": "Who',
}


@pytest.mark.parametrize("name", sorted(FOREIGN))
def test_out_on_a_file_kgfed_did_not_write_is_refused_and_left_byte_identical(tmp_path, name, capsys, cwq_store):
    out = tmp_path / name
    out.write_bytes(FOREIGN[name])
    before = snapshot(*files_of(out))
    err = one_line_error(capsys, ["run", str(CWQ_QUESTIONS), "--method", METHOD, "--kg", "freebase", "--endpoint",
                                  f"freebase=file:{need(CWQ_QUESTIONS).parent / 'cwq_subgraph.nt'}", "--limit", "2",
                                  "--out", str(out), "--no-progress"], str(out), "left as it is")
    assert ("unfinished line" in err) if name == "tog-own.jsonl" else ("is not a prediction file" in err)
    assert snapshot(*files_of(out)) == before


def test_a_foreign_cost_file_is_refused_before_anything_is_written(tmp_path, cwq_store):
    out, costs = tmp_path / "p.jsonl", tmp_path / "costs.txt"
    costs.write_bytes(b"my cost notes\nline two")
    with pytest.raises(KgfedError, match="is not a kgfed cost file"):
        asyncio.run(run(cwq_spec(), cwq_questions(2), out, costs=costs, progress=False))
    assert costs.read_bytes() == b"my cost notes\nline two" and not out.exists() and not meta_path_for(out).exists()


# -- EM and F1 beside Hits@1 and strict --------------------------------------------------------------
@pytest.mark.parametrize("right", [True, False])
def test_em_and_f1_are_one_for_the_gold_answers_and_zero_for_wrong_ones(tmp_path, right, capsys):
    questions = load_dataset(need(CWQ_QUESTIONS))[:30]
    wrong = "Zzyzx Road"
    preds = [Prediction(q.text, "{" + (", ".join(q.answers) if right else wrong) + "}", id=q.id) for q in questions]
    path = write_predictions(preds, tmp_path / "gold.jsonl")
    assert main(["eval", str(path), "--gold", str(CWQ_QUESTIONS), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["em"], report["f1"]) == ((1.0, 1.0) if right else (0.0, 0.0))
    assert all((s["em"], s["f1"]) == ((1.0, 1.0) if right else (0.0, 0.0)) for s in report["per_type"].values())
    assert set(report["per_type"]) >= {"composition", "conjunction"}  # CWQ's compositionality types
    assert main(["evaluate", str(path), "--questions", str(CWQ_QUESTIONS)]) == 0
    text = capsys.readouterr().out
    assert f"EM={1.0 if right else 0.0:.4f}  F1={1.0 if right else 0.0:.4f}" in text
    assert "KG: not recorded" in text  # written by hand: no sidecar says on what KG


def test_f1_is_set_based_over_ids_or_names():
    q = Question("q", "Which countries border Belize?", answers=["Guatemala", "Mexico"],
                 answer_ids={"freebase": ["m.01", "m.02"]}, aliases=["Estados Unidos Mexicanos"], dataset="cwq")
    assert answer_f1("Guatemala", q, q.answers + q.aliases) == pytest.approx(2 / 3)  # P 1, R 1/2
    assert answer_f1("Guatemala, Honduras", q, q.answers + q.aliases) == pytest.approx(0.5)  # P 1/2, R 1/2
    assert answer_f1("Estados Unidos Mexicanos; Guatemala", q, q.answers + q.aliases) == 1.0  # an alias counts once
    by_ids = Prediction("x", "{whatever}", extra={"answer_ids": ["m.01", "m.02", "m.03"]})
    assert answer_f1("whatever", q, q.answers, by_ids) == pytest.approx(0.8)  # P 2/3, R 1
    sochi = Question("s", "Where?", answers=["Sochi, Russia"], dataset="cwq")
    assert answer_f1("Sochi, Russia", sochi, sochi.answers) == 1.0  # a comma inside a gold name is no list


def test_f1_over_ids_holds_a_run_to_its_own_kgs_gold():
    """A federation question has gold ids in both KGs: a run on one KG is scored against that KG's ids (the
    sidecar's KGs, else the KGs of the predicted ids), a run on both against both."""
    q = Question("w", "what country does justin bieber come from?", answers=["Canada"],
                 answer_ids={"freebase": ["m.0d060g"], "wikidata": ["Q16"]}, dataset="federation")
    freebase_only = Prediction("w", "{Canada}", extra={"answer_ids": ["m.0d060g"]})
    assert answer_f1("Canada", q, q.answers, freebase_only) == 1.0  # was 2/3: Q16 counted as missed
    assert answer_f1("Canada", q, q.answers, freebase_only, kgs=("freebase",)) == 1.0
    assert answer_f1("Canada", q, q.answers, freebase_only, kgs=("freebase", "wikidata")) == pytest.approx(2 / 3)
    both = Prediction("w", "{Canada}", extra={"answer_ids": ["m.0d060g", "Q16"]})
    assert answer_f1("Canada", q, q.answers, both, kgs=("freebase", "wikidata")) == 1.0
    assert meta_dialects({"kgs": [{"name": "fb", "dialect": "freebase"}, {"name": "wd", "dialect": "wikidata"}]}) \
        == ("freebase", "wikidata")
    assert meta_dialects(None) is None and meta_dialects({"kgs": []}) is None


def test_eval_says_on_what_kg_the_predictions_were_made(tog_file, capsys):
    assert main(["eval", str(tog_file), "--gold", str(CWQ_QUESTIONS)]) == 0
    out = capsys.readouterr().out
    assert "KG: freebase = subgraph fixture (file:" in out and "EM=" in out and "F1=" in out


def test_eval_and_evaluate_take_both_spellings_and_cache_dir(tog_file, tmp_path, capsys):
    for command in ("eval", "evaluate"):
        for option in ("--gold", "--questions", "-g", "-q"):
            assert main([command, str(tog_file), option, str(CWQ_QUESTIONS), "--cache-dir", str(tmp_path), "--json"]) == 0
            assert json.loads(capsys.readouterr().out)["n"] == 4


def test_reading_by_the_api_is_unchanged(tog_file):
    assert len(read_predictions(tog_file, "tog")) == 4
    tog2 = tog_file.with_name("answers.json")
    tog2.write_text(json.dumps([{"question": "q", "answer": "x"}]), encoding="utf-8")
    with pytest.raises(DatasetError, match="lacks results"):
        read_predictions(tog2, "tog")
    assert sorted(p.name for p in tog_file.parent.iterdir() if p.is_file()) == sorted(  # no stray temporary files
        [tog_file.name, meta_path_for(tog_file).name, costs_path_for(tog_file).name, tog2.name])


def test_a_resume_may_add_a_fallback_to_the_same_kg(tog_file):
    spec = cwq_spec()
    spec = replace(spec, kgs=(replace(spec.kgs[0], fallbacks=("qlever-freebase",)),))  # never asked: the file answers
    summary = asyncio.run(run(spec, cwq_questions(5), tog_file, progress=False))
    assert (summary["skipped"], summary["new"], summary["failed"]) == (4, 1, 0)


def test_a_whole_last_record_without_its_line_feed_is_kept_and_extended(tmp_path, cwq_store):
    """A ToG file written by another tool whose last record lacks the final line feed: a record, not a torn line."""
    questions = cwq_questions(3)
    out = tmp_path / "ToG_cwq.jsonl"
    out.write_text("\n".join(json.dumps({"question": q.text, "results": "{x}", "reasoning_chains": []})
                             for q in questions[:2]), encoding="utf-8")
    summary = asyncio.run(run(cwq_spec(), questions, out, progress=False))
    assert (summary["skipped"], summary["new"]) == (2, 1)
    assert [r["results"] for r in lines(out)][:2] == ["{x}", "{x}"] and len(lines(out)) == 3
