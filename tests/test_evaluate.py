"""ToG's eval rule reproduced, the strict score beside it, prediction files, reports and comparison."""
from __future__ import annotations

import argparse
import asyncio
import json

import pytest

from kgfed.engine.harness.datasets import Question, gold_answers, load_dataset
from kgfed.engine.harness.evaluate import (
    FORMATS, Prediction, compare, evaluate, extract_answer, normalize, prediction_from_record, read_predictions,
    strict_match, tog_match, write_predictions,
)
from kgfed.engine.cli.evaluate import register
from kgfed.sparql.errors import DatasetError

from .test_datasets import data_file


# -- extracting the answer ------------------------------------------------------------------------
@pytest.mark.parametrize("text,expected", [
    ("The answer is {Paris}.", "Paris"),
    ("{Jamaican English}, {Jamaican Creole}", "Jamaican English"),  # the first braces only
    ("no braces at all", "no braces at all"),
    ("{}", ""),
    ("{Paris", "Pari"),            # ToG's slice with no "}" ends one character early
    ("} then {Paris}", ""),        # a "}" before the "{" gives the empty string
])
def test_extract_answer_is_togs_clean_results(text, expected):
    assert extract_answer(text) == expected


# -- ToG rule against strict ----------------------------------------------------------------------
WEBQSP_0 = ["English", "en", "jam", "Jamaican English", "Jamaican Patois"]


@pytest.mark.parametrize("pred,golds,tog,strict", [
    ("paris", ["Paris"], True, True),                                   # case
    ("The Beatles", ["Beatles"], True, True),                           # article
    ("U.S.A.", ["USA"], False, True),                                   # punctuation: ToG keeps the dots
    ("Barack Obama's", ["Barack Obama"], True, False),                  # containment
    ("Obama", ["Barack Obama"], True, False),
    ("New York City", ["NewYork City"], True, False),                   # ToG drops spaces
    ("New\tYork", ["New York"], False, True),                           # ... only spaces, not tabs
    ("Jamaican Patois", WEBQSP_0, True, True),                          # alias
    ("French", WEBQSP_0, True, False),                                  # "en" is inside "french"
    ("Benjamin Franklin", WEBQSP_0, True, False),                       # "jam" is inside "benjamin"
    ("Guatemala, Honduras", ["Guatemala"], True, True),                 # several answers: first counts
    ("Honduras; Guatemala", ["Guatemala"], True, False),
    ("Sochi, Russia", ["Sochi, Russia"], True, True),
    ("", ["Paris"], True, False),                                       # empty answer: inside every gold
    ("Anything", ["", "America's Big Ben"], True, False),               # an empty gold: inside every answer
    ("Paris", [], False, False),
])
def test_tog_rule_against_strict(pred, golds, tog, strict):
    assert tog_match(pred, golds) is tog
    assert strict_match(pred, golds) is strict


def test_empty_braces_score_under_tog_rule_only():
    answer = extract_answer("I could not find it. {}")
    assert tog_match(answer, ["2014 World Series"]) and not strict_match(answer, ["2014 World Series"])


def test_normalize():
    assert normalize("  The  U.S.A.!  ") == "usa"
    assert normalize("«Café» — an Éclair") == "café éclair"


# -- prediction files -----------------------------------------------------------------------------
QUESTIONS = [
    Question("q1", "Who wrote Hamlet?", answers=["William Shakespeare"], aliases=["Shakespeare"],
             meta={"type": "composition"}, dataset="cwq"),
    Question("q2", "Capital of France?", answers=["Paris"], meta={"type": "conjunction"}, dataset="cwq"),
    Question("q3", "Language of Jamaica?", answers=["English", "en"], meta={"type": "conjunction"}, dataset="cwq"),
    Question("q4", "Largest planet?", answers=["Jupiter"], meta={"type": "superlative"}, dataset="cwq"),
]
RAW = {"q1": "Based on the triplets, the answer is {Shakespeare}.", "q2": "{paris}", "q3": "{French}", "q4": "{}"}


def predictions(fmt: str) -> list[Prediction]:
    chains = [[["Hamlet", "author", "x"]]] if fmt != "tog2" else []
    return [Prediction(q.text, RAW[q.id], id=q.id, format=fmt, reasoning_chains=chains,
                       cost={"sparql_queries": i + 1, "llm_calls": 2, "input_tokens": 100.5}, extra={"depth": i})
            for i, q in enumerate(QUESTIONS)]


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip_and_scoring_per_format(tmp_path, fmt):
    path = write_predictions(predictions(fmt), tmp_path / f"out.{fmt}", fmt)
    text = path.read_text(encoding="utf-8")
    first = json.loads(text.splitlines()[0]) if fmt == "tog" else json.loads(text)[0]
    output = "answer" if fmt == "tog2" else "results"
    assert first["question"] == "Who wrote Hamlet?" and first[output] == RAW["q1"] and first["id"] == "q1"
    assert ("reasoning_chains" in first) is (fmt != "tog2")
    back = read_predictions(path, fmt)
    assert back == predictions(fmt)
    report = evaluate(back, QUESTIONS, "cwq")
    data = report.to_json()
    if fmt == "tog2":  # ToG-2 scores the whole `answer`: no brace extraction
        assert [o.answer for o in report.outcomes] == list(RAW.values())
        assert (data["hits"], data["strict_hits"]) == (3, 1)  # "{}" is not empty for ToG-2; strict sees "paris"
        assert report.disagreements == ["q1", "q3"]
    else:
        assert [o.answer for o in report.outcomes] == ["Shakespeare", "paris", "French", ""]
        assert (data["hits@1"], data["strict"]) == (1.0, 0.5)
        assert report.disagreements == ["q3", "q4"]
    assert data["n"] == 4 and data["cost"] == {"sparql_queries": 10, "llm_calls": 8, "input_tokens": 402.0}
    assert set(data) >= {"hits@1", "strict", "n", "per_type", "disagreements", "cost"}


def test_per_type_scores():
    report = evaluate(predictions("tog"), QUESTIONS)
    assert report.per_type() == {
        "composition": {"n": 1, "hits@1": 1.0, "strict": 1.0, "em": 1.0, "f1": 1.0, "hits": 1, "strict_hits": 1,
                        "em_hits": 1, "null": 0},  # "Shakespeare" is an alias of the one gold answer
        "conjunction": {"n": 2, "hits@1": 1.0, "strict": 0.5, "em": 0.5, "f1": 0.5, "hits": 2, "strict_hits": 1,
                        "em_hits": 1, "null": 0},
        "superlative": {"n": 1, "hits@1": 1.0, "strict": 0.0, "em": 0.0, "f1": 0.0, "hits": 1, "strict_hits": 0,
                        "em_hits": 0, "null": 0},
    }


def test_tog_jsonl_as_tog_writes_it(tmp_path):
    path = tmp_path / "ToG_cwq.jsonl"
    lines = [{"question": "Capital of France?", "results": "{Paris}", "reasoning_chains": []},
             {"question": "Largest planet?", "results": "Saturn", "reasoning_chains": []}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    report = evaluate(read_predictions(path, "tog"), QUESTIONS, "cwq")  # matched by question text
    assert (report.n, report.hits_at_1, report.missing, report.cost) == (2, 0.5, ["q1", "q3"], {})


def test_tog2_record_without_answer_and_fever_early_stop():
    fever = [Question("50888", "Austin Lee Russells is the real name of Chumlee.", answers=["SUPPORTS"], dataset="fever"),
             Question("1", "A claim.", answers=["NOT ENOUGH INFO"], dataset="fever")]
    records = [{"question": "Austin Lee Russells is the real name of Chumlee.", "answer": "It is not true."},
               {"claim": "A claim.", "answer": "{REFUTES}", "remark": "no entity find in depth 2"}]
    preds = [prediction_from_record(r, "tog2") for r in records]
    report = evaluate(preds, fever)
    # "not true" contains the SUPPORTS synonym "true"; the early stop is scored NOT ENOUGH INFO
    assert [(o.answer, o.tog, o.strict) for o in report.outcomes] == [
        ("It is not true.", True, False), ("NOT ENOUGH INFO", True, True)]
    assert prediction_from_record({"question": "A claim."}, "tog2").raw == ""


def test_duplicates_missing_and_unmatched():
    preds = [Prediction("Capital of France?", "{Lyon}"), Prediction("Capital of France?", "{Paris}"),
             Prediction("renamed", "{Jupiter}", id="q4")]
    report = evaluate(preds, QUESTIONS, "cwq")
    assert (report.n, report.hits_at_1, report.duplicates, report.missing) == (2, 0.5, ["q2"], ["q1", "q3"])
    with pytest.raises(DatasetError, match="1 prediction\\(s\\) match no question"):
        evaluate([Prediction("Who painted the Mona Lisa?", "{Leonardo}")], QUESTIONS, "cwq")


def test_bad_prediction_files(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"question": "q", "answer": "x"}) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="lacks results"):
        read_predictions(path, "tog")
    with pytest.raises(DatasetError, match="unknown prediction format 'pog'"):
        read_predictions(path, "pog")
    assert read_predictions(path, "tog2")[0].answer == "x"


def test_compare_two_runs():
    a = evaluate(predictions("tog"), QUESTIONS)
    better = [Prediction(p.question, p.raw.replace("{}", "{Jupiter}"), id=p.id, cost={"llm_calls": 1})
              for p in predictions("tog")]
    b = evaluate(better, QUESTIONS)
    result = compare(a, b)
    assert result["n_common"] == 4
    assert (result["a"]["strict"], result["b"]["strict"]) == (0.5, 0.75)
    assert (result["only_a"], result["only_b"], result["strict_only_b"]) == ([], [], ["q4"])
    assert result["cost"]["delta"] == {"input_tokens": -402.0, "llm_calls": -4, "sparql_queries": -10}


# -- real question files --------------------------------------------------------------------------
def test_real_cwq_gold_answers_score_fully():
    questions = load_dataset(data_file("questions/cwq.json"))[:50]
    preds = [Prediction(q.text, f"So the answer is {{{q.answers[0]}}}.") for q in questions]
    report = evaluate(preds, questions)
    assert (report.n, report.hits_at_1, report.strict, report.disagreements) == (50, 1.0, 1.0, [])
    assert report.per_type()["composition"]["n"] == sum(q.type == "composition" for q in questions)


def test_real_webqsp_two_letter_alias():
    questions = load_dataset(data_file("questions/webqsp_test.json"))
    q = questions[0]
    assert tog_match("French", gold_answers(q)) and not strict_match("French", gold_answers(q) + q.aliases)
    report = evaluate([Prediction(q.text, "{French}"), Prediction(questions[999].text, "{Deborah Read}")], questions)
    assert (report.hits_at_1, report.strict, report.disagreements) == (1.0, 0.5, ["WebQTest-0"])
    assert len(report.missing) == 998


def test_real_webquestions_empty_gold_credits_anything():
    questions = load_dataset(data_file("questions/WebQuestions.json"))
    report = evaluate([Prediction(questions[966].text, "{Poor Richard's Almanack}")], questions)
    assert (report.hits_at_1, report.strict, report.disagreements) == (1.0, 0.0, ["webquestions-966"])


def test_real_creak_label_and_fever_synonyms():
    creak = load_dataset(data_file("questions/creak.json"))
    assert evaluate([Prediction(creak[0].text, "{No, that is false.}")], creak).hits_at_1 == 1.0
    fever = load_dataset(data_file("questions/fever_1000_entities_azure.json"))
    assert (fever[0].answers, fever[2].id, fever[2].answers) == (["SUPPORTS"], "164986", ["REFUTES"])
    # "incorrect" is a REFUTES synonym, and it also contains SUPPORTS' synonym "correct"
    report = evaluate([Prediction(fever[0].text, "{incorrect}"), Prediction(fever[2].text, "{incorrect}")], fever)
    assert [(o.id, o.tog, o.strict) for o in report.outcomes] == [("50888", True, False), ("164986", True, True)]


# -- command line ---------------------------------------------------------------------------------
def test_cli_handler(tmp_path, capsys):
    questions = data_file("freebase/cwq_questions.jsonl")
    first = load_dataset(questions)[0]
    path = write_predictions([Prediction(first.text, "{Guatemala}", id=first.id)], tmp_path / "run.jsonl", "tog")
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    handlers = {}

    def command(name, handler, help_text):
        handlers[name] = handler
        return sub.add_parser(name, help=help_text)

    register(command, None, None)
    args = parser.parse_args(["evaluate", str(path), "--questions", str(questions), "--json"])
    assert asyncio.run(handlers["evaluate"](args)) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["dataset"], out["n"], out["hits@1"], len(out["missing"])) == ("cwq", 1, 1.0, 537)
    args = parser.parse_args(["evaluate", str(path), "-q", str(questions), "--compare", str(path)])
    assert asyncio.run(handlers["evaluate"](args)) == 0
    assert "only A: 0  only B: 0" in capsys.readouterr().out


def test_null_answer_is_scored_as_togs_eval_does():
    """ToG's eval.py: `{NULL}` adds to neither right nor error but stays in the denominator. On GrailQA,
    whose gold can be the literal name "null", containment would otherwise make it a hit."""
    questions = [Question("g1", "Which film has no sequel?", answers=["null"], meta={"type": "grailqa"}, dataset="grailqa"),
                 Question("g2", "Capital of France?", answers=["Paris"], meta={"type": "grailqa"}, dataset="grailqa")]
    predictions = [Prediction("Which film has no sequel?", "{NULL}", "g1"), Prediction("Capital of France?", "{Paris}", "g2")]
    report = evaluate(predictions, questions)
    assert [(o.id, o.tog, o.strict, o.null) for o in report.outcomes] == [("g1", False, False, True), ("g2", True, True, False)]
    data = report.to_json()
    assert (data["n"], data["hits"], data["null"], data["hits@1"]) == (2, 1, 1, 0.5)
    assert Prediction("q", "{NULL}").null and not Prediction("q", "NULL").null and not Prediction("q", "{null}").null
    assert not Prediction("q", "{NULL}", format="tog2").null  # ToG-2's eval has no such rule
