"""`kgfed ask` on the real CWQ and federation stores, its path picture, and ToG-style chains."""
from __future__ import annotations

import json

import pytest

from kgfed.engine.cli import main
from kgfed.engine.methods.base import UNNAMED, Result
from kgfed.engine.kg.model import Edge

from .conftest import CWQ_NT, FED_DIR, need

FB = "http://rdf.freebase.com/ns/"
QUESTION = "Which nation has the Alta Verapaz Department and is in Central America?"
TOPICS = {"m.01tzh": "Central America", "m.0146np": "Alta Verapaz Department"}  # from cwq_questions.jsonl


def ask(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["ask", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def cwq_args(*extra: str) -> list[str]:
    return ["--method", "tog", "--kg", "freebase", "--endpoint", f"freebase=file:{need(CWQ_NT)}", "--llm", "none", *extra]


def test_ask_json_paths_are_real_edges_from_the_topics(capsys, cwq_store):
    code, out, err = ask(capsys, QUESTION, *cwq_args("--topic", ",".join(TOPICS), "--json", "--width", "2", "--depth", "2"))
    assert code == 0, err
    doc = json.loads(out)
    assert {"answer", "paths", "cost"} <= set(doc)
    assert doc["answer"] and doc["paths"] and doc["extra"]["topics"] == {"freebase": TOPICS}
    for path in doc["paths"]:
        assert path[0]["subject" if path[0]["direction"] == "out" else "object"] in TOPICS  # starts at a topic
        for edge in path:
            assert "|" not in edge["relation"] or edge["via"]
            if "|" not in edge["relation"]:
                assert cwq_store.query(f"ASK {{ <{FB}{edge['subject']}> <{FB}{edge['relation']}> <{FB}{edge['object']}> }}")
        assert path[-1]["label"] == doc["answer"]  # the answer is where its paths end
    assert doc["cost"]["sparql_queries"] > 0 and doc["cost"]["seconds"] > 0


def test_ask_prints_answer_and_paths_and_draws_them(capsys, tmp_path, cwq_store):
    page = tmp_path / "paths.html"
    code, out, err = ask(capsys, QUESTION, *cwq_args("--topic", "m.01tzh", "--topic", "m.0146np", "--view", str(page)))
    assert code == 0, err
    header, *rows = out.splitlines()  # piped: tab-separated, one row per reasoning path (a terminal gets the readable view)
    assert header == "answer\tanswer_ids\tpath" and rows and all(row.split("\t")[0] == "Guatemala" for row in rows)
    assert any("Alta Verapaz Department" in row.split("\t")[2] for row in rows)
    html = page.read_text(encoding="utf-8")
    assert "<svg" in html and "<script" not in html
    assert "Alta Verapaz Department" in html and "freebase:m.0146np" in html


def test_ask_links_topics_from_the_question_without_topic(capsys, cwq_store):
    code, out, err = ask(capsys, QUESTION, *cwq_args("--json", "--depth", "1"))
    assert code == 0, err
    linked = json.loads(out)["extra"]["topics"]["freebase"]
    assert set(linked) & set(TOPICS)  # label linking found a topic the dataset names


def test_ask_over_two_kgs_keeps_each_edge_kg(capsys):
    args = ["what country does justin bieber come from?", "--method", "tog", "--kg", "freebase,wikidata",
            "--endpoint", f"freebase=file:{need(FED_DIR / 'freebase.nt')}", "--endpoint", f"wikidata=file:{FED_DIR / 'wikidata.nt'}",
            "--topic", "m.06w2sn5,Q34086", "--json"]
    code, out, err = ask(capsys, *args)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["extra"]["topics"] == {"freebase": {"m.06w2sn5": "Justin Bieber"}, "wikidata": {"Q34086": "Justin Bieber"}}
    kgs = {edge["kg"] for path in doc["paths"] for edge in path}
    assert kgs <= {"freebase", "wikidata"} and kgs


@pytest.mark.parametrize("extra, message", [
    (["--topic", "Q42x"], "fits none of the KGs"),
    (["--llm", "replay:/nonexistent/replies"], "does not exist"),
    (["--param", "width=0"], "invalid parameter width=0 for tog: expected a value ≥ 1"),
    (["--method", "nosuch"], "unknown method"),
    (["--view", "/nonexistent/dir/p.html"], "does not exist"),
])
def test_ask_bad_input_is_one_line(capsys, extra, message):
    code, out, err = ask(capsys, QUESTION, *cwq_args(*extra))
    assert code == 2 and message in err and err.count("\n") == 1 and "Traceback" not in err, err


def test_tog_chains_name_unnamed_entities_as_tog_does():
    cvt = Edge("freebase", "m.0146np", "location.administrative_division.country|location.x.y", "m.0345_",
               subject_label=None, object_label="Guatemala", via=("m.cvt1",))
    unnamed = Edge("freebase", "m.0345_", "location.location.contains", "m.0zzz", subject_label="Guatemala")
    literal = Edge("freebase", "m.0345_", "location.location.area", "108889.0", subject_label="Guatemala", literal=True)
    result = Result("q", "Guatemala", paths=[[cvt, unnamed], [literal]], extra={"topics": {"freebase": {"m.0146np": "Alta Verapaz"}}})
    assert result.tog_chains() == [
        [("Alta Verapaz", "location.administrative_division.country|location.x.y", "Guatemala"),
         ("Guatemala", "location.location.contains", UNNAMED)],
        [("Guatemala", "location.location.area", "108889.0")],
    ]
    assert UNNAMED == "UnName_Entity" and "m.0zzz" in result.path_texts()[0]  # readable text keeps ids


def test_eval_alias_scores_like_evaluate(capsys, tmp_path):
    questions = need(FED_DIR / "questions.jsonl")
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"question": "what country does justin bieber come from?", "results": "{canada}",
                                 "reasoning_chains": []}) + "\n", encoding="utf-8")
    assert main(["eval", str(preds), "--gold", str(questions), "--json"]) == 0
    via_alias = json.loads(capsys.readouterr().out)
    assert main(["evaluate", str(preds), "--questions", str(questions), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == via_alias and via_alias["hits@1"] == 1.0
    assert main(["eval", str(preds)]) == 2
    assert "--dataset NAME" in capsys.readouterr().err
