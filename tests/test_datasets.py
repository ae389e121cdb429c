"""Question loaders on the real shared sample files, the shapes without a sample, and bad input."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from kgfed.engine.harness.datasets import (
    FEVER_SYNONYMS, Question, canonical_dataset, dataset_from_name, fill_answer_names, gold_answers, has_gold,
    load_dataset, require_gold,
)
from kgfed.sparql.errors import DatasetError

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def data_file(relative: str) -> Path:
    """A shared data file, or a clean skip when ../shared/data is absent."""
    path = DATA / relative
    if not path.is_file():
        pytest.skip(f"shared data file {path} is absent (expected ../shared/data beside the project)")
    return path


def write(tmp_path: Path, name: str, records: list | dict) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


# -- every shared sample file: count, then one real record checked field by field -------------------
SAMPLES = [
    # file, dataset, count, index, id, text, topics, answers, answer_ids, type
    ("questions/cwq.json", "cwq", 1000, 1, "WebQTrn-1259_1997cb4922db71983be26e6a509950f4",
     'Where did the "Country Nation World Tour" concert artist go to college?',
     {"freebase": {"m.010qhfmm": "Country Nation World Tour", "m.019v9k": "Bachelor's degree"},
      "wikidata": {"Q17004176": "Country Nation World Tour", "Q163727": "Bachelor's degree"}},
     ["Belmont University"], {}, "composition"),
    ("questions/WebQuestions.json", "webquestions", 1000, 0, "webquestions-0", "what does jamaican people speak?",
     {"freebase": {"m.03_r3": "Jamaica"}, "wikidata": {"Q766": "Jamaica"}},
     ["Jamaican Creole English Language", "Jamaican English"], {}, None),
    ("questions/SimpleQA.json", "simpleqa", 1000, 0, "simpleqa-0", "where is the madam satan located",
     {"freebase": {"m.02qkg8m": "Madam Satan"}, "wikidata": {"Q1750317": "Madam Satan"}},
     ["United States of America"], {}, "country"),
    ("questions/Zero_Shot_RE.json", "zeroshotre", 1000, 5, "zeroshotre-5",
     "Alvin and the Chipmunks Meet the Wolfman [SEP] production company",
     {"freebase": {"m.08_d24": "Alvin and the Chipmunks Meet the Wolfman"},
      "wikidata": {"Q2840611": "Alvin and the Chipmunks Meet the Wolfman"}},
     ["Bagdasarian Productions"], {}, "production company"),
    ("questions/hotpotadv.json", "hotpot", 308, 0, "5ab52a255542996a3a96a048",
     "Where were the Olympics held when the 1993 World Champion figure skater's home country won it's second "
     "Winter Games gold medal?",
     {"freebase": {"m.05nd_": "Olympic Games", "m.01hczr": "World Figure Skating Championships",
                   "m.086px": "Winter Olympic Games"},
      "wikidata": {"Q5389": "Olympic Games", "Q285389": "World Figure Skating Championships",
                   "Q82414": "Winter Olympic Games"}},
     ["Sochi, Russia"], {}, None),
    ("questions/qald_10-en.json", "qald", 333, 0, "qald-0", "After whom is the Riemannian geometry named?",
     {"freebase": {"m.01br2f": "Riemannian geometry"}, "wikidata": {"Q761383": "Riemannian geometry"}},
     ["Bernhard Riemann"], {"wikidata": ["Q42299"]}, None),
    ("questions/webqsp_test.json", "webqsp", 1000, 999, "WebQTest-1467", "who did ben franklin marry?",
     {"wikidata": {"Q34969": "Benjamin Franklin"}}, ["Deborah Read Franklin", "Deborah Franklin", "Deborah Read"], {},
     None),
    ("questions/creak.json", "creak", 1000, 0, "dev_0", "Eating soup means eating only solids.",
     {"wikidata": {"Q41415": "Soup"}}, ["false"], {}, "false"),
    ("questions/fever_1000_entities_azure.json", "fever", 1000, 0, "50888",
     "Austin Lee Russells is the real name of Chumlee.",
     {"wikidata": {"Q75853986": "Austin Lee", "Q13359766": "Chumlee"}}, ["SUPPORTS"], {}, "SUPPORTS"),
    ("qald10/qald_10.json", "qald", 394, 0, "0", "After whom is the Riemannian geometry named?",
     {}, [], {"wikidata": ["Q42299"]}, None),
    ("freebase/cwq_questions.jsonl", "cwq", 538, 0, "WebQTest-576_01e2da60a2779c4ae4b5d1547499a4f8",
     "Which nation has the Alta Verapaz Department and is in Central America?",
     {"freebase": {"m.01tzh": "Central America", "m.0146np": "Alta Verapaz Department"}},
     ["Guatemala"], {"freebase": ["m.0345_"]}, "conjunction"),
    ("federation/questions.jsonl", "webqsp", 54, 0, "WebQTest-827", "what country does justin bieber come from?",
     {"freebase": {"m.06w2sn5": "Justin Bieber"}, "wikidata": {"Q34086": "Justin Bieber"}},
     ["Canada"], {"freebase": ["m.0d060g"], "wikidata": ["Q16"]}, None),
]


@pytest.mark.parametrize("relative,dataset,count,index,qid,text,topics,answers,answer_ids,qtype", SAMPLES,
                         ids=[s[0] for s in SAMPLES])
def test_sample_file(relative, dataset, count, index, qid, text, topics, answers, answer_ids, qtype):
    questions = load_dataset(data_file(relative))
    assert len(questions) == count
    assert len({q.id for q in questions}) == count
    assert {q.dataset for q in questions} == {dataset}
    q = questions[index]
    assert q.id == qid
    assert q.answer_ids == answer_ids
    assert q.type == qtype
    assert (q.text, q.topics, q.answers) == (text, topics, answers)


def test_webqsp_tog2_answers_mix_names_and_aliases():
    q = load_dataset(data_file("questions/webqsp_test.json"))[0]
    assert (q.id, q.text, q.topics) == ("WebQTest-0", "what does jamaican people speak?", {"wikidata": {"Q766": "Jamaica"}})
    assert len(q.answers) == 26
    assert q.answers[:3] == ["English language", "ISO 639:en", "The English language"]
    assert {"en", "jam", "eng", "Jamaican English"} <= set(q.answers)


def test_cwq_types_counted():
    types = Counter(q.type for q in load_dataset(data_file("questions/cwq.json")))
    assert types == {"composition": 471, "conjunction": 406, "comparative": 68, "superlative": 55}
    subgraph = Counter(q.type for q in load_dataset(data_file("freebase/cwq_questions.jsonl")))
    assert subgraph == {"composition": 313, "conjunction": 225}


def test_cwq_keeps_gold_sparql_and_webqsp_link():
    q = load_dataset(data_file("questions/cwq.json"))[0]
    assert q.meta["webqsp_ID"] == "WebQTest-832"
    assert "ns:sports.sports_team.team_mascot ns:m.03_dwn" in q.meta["sparql"]
    assert (q.topics, q.answers) == ({"freebase": {"m.03_dwn": "Lou Seal"}}, ["2014 World Series"])


def test_placeholder_topic_ids_become_unlinked_names():
    questions = load_dataset(data_file("questions/creak.json"))
    q = questions[34]
    assert (q.id, q.text, q.topics) == ("dev_34", "Robots form most of Internet trolling.", {})
    assert q.meta["unlinked_topics"] == ["Internet troll"]
    assert sum("unlinked_topics" in x.meta for x in questions) == 28


def test_qald_tog_literal_answers_have_no_ids():
    q = load_dataset(data_file("questions/qald_10-en.json"))[7]
    assert (q.id, q.text, q.answers, q.answer_ids) == ("qald-7", "What is the boiling point of water?", ["100"], {})


def test_qald_official_multilingual_and_boolean():
    questions = load_dataset(data_file("qald10/qald_10.json"))
    first, ask = questions[0], questions[7]
    assert first.meta["texts"]["de"] == "Nach wem ist die Riemannsche Geometrie benannt?"
    assert "wdt:P138" in first.meta["sparql"]
    assert (ask.id, ask.answers, ask.answer_ids, ask.meta["aggregation"]) == ("7", ["true"], {}, False)
    assert ask.text == "are brooke raboutou and colin duffy from same state of the usa?"
    named = fill_answer_names([first], {"Q42299": "Bernhard Riemann"})[0]
    assert named.answers == ["Bernhard Riemann"] and first.answers == []


def test_relation_extraction_aliases_are_not_tog_gold():
    q = load_dataset(data_file("questions/Zero_Shot_RE.json"))[5]
    assert q.aliases == ["Bagdasarian Productions", "Universal Animation Studios"]
    assert gold_answers(q) == ["Bagdasarian Productions"]


def test_gold_answers_per_dataset_rule():
    fever = load_dataset(data_file("questions/fever_1000_entities_azure.json"))[0]
    assert gold_answers(fever) == ["SUPPORTS", "supports", "support", "true", "correct"]
    webquestions = load_dataset(data_file("questions/WebQuestions.json"))[966]
    assert webquestions.text == "what book did benjamin franklin published?"
    assert gold_answers(webquestions)[:2] == ["", "America's Big Ben"]  # an empty gold, as in the file
    creak = load_dataset(data_file("questions/creak.json"))[0]
    assert gold_answers(creak) == ["false"]


def test_repeated_claim_text_keeps_distinct_ids():
    questions = load_dataset(data_file("questions/fever_1000_entities_azure.json"))
    same = [q.id for q in questions if q.text == "Polynesian languages includes several languages."]
    assert same == ["203186", "203172"]


def test_load_by_name_uses_shared_data(monkeypatch):
    data_file("questions/cwq.json")
    monkeypatch.setenv("KGFED_DATA", str(DATA))
    assert len(load_dataset("cwq")) == 1000
    assert load_dataset("hotpot_e")[0].id == "5ab52a255542996a3a96a048"
    assert len(load_dataset("federation")) == 54


def test_explicit_dataset_that_does_not_fit_names_missing_fields():
    with pytest.raises(DatasetError, match="lacks claim, label"):
        load_dataset(data_file("questions/cwq.json"), dataset="fever")


# -- shapes named in the issue without a shared sample ----------------------------------------------
GRAILQA = {  # ToG's data/graliqa.json, first record (trimmed)
    "qid": 2101960008000, "question": "which play is produced by the illusion?",
    "answer": [{"answer_type": "Entity", "answer_argument": "m.0yrltsn", "entity_name": "The Illusion"}],
    "function": "none", "num_node": 2, "num_edge": 1,
    "graph_query": {"nodes": [
        {"nid": 0, "node_type": "class", "id": "theater.play", "friendly_name": "Play", "question_node": 1},
        {"nid": 1, "node_type": "entity", "id": "m.0yrlqjm", "friendly_name": "The Illusion", "question_node": 0}],
        "edges": [{"start": 0, "end": 1, "relation": "theater.play.productions"}]},
    "level": "i.i.d.", "domains": ["theater"],
}


def test_grailqa_entity_names_and_literal_arguments(tmp_path):
    literal = {**GRAILQA, "qid": 3, "level": "zero-shot",
               "answer": [{"answer_type": "Value", "answer_argument": "1990"}]}
    questions = load_dataset(write(tmp_path, "grailqa_dev.json", [GRAILQA, literal]))
    q = questions[0]
    assert (q.id, q.dataset, q.type) == ("2101960008000", "grailqa", "i.i.d.")
    assert q.topics == {"freebase": {"m.0yrlqjm": "The Illusion"}}
    assert (q.answers, q.answer_ids) == (["The Illusion"], {"freebase": ["m.0yrltsn"]})
    assert (questions[1].answers, questions[1].answer_ids, questions[1].type) == (["1990"], {}, "zero-shot")


WEBQSP_ORIGINAL = {"Version": "1.0", "Questions": [{
    "QuestionId": "WebQTest-0", "RawQuestion": "what does jamaican people speak?",
    "ProcessedQuestion": "what does jamaican people speak",
    "Parses": [{"ParseId": "WebQTest-0.P0", "TopicEntityName": "Jamaica", "TopicEntityMid": "m.03_r3",
                "Sparql": "PREFIX ns: <http://rdf.freebase.com/ns/> SELECT DISTINCT ?x WHERE { "
                          "ns:m.03_r3 ns:location.country.languages_spoken ?x . }",
                "Answers": [{"AnswerType": "Entity", "AnswerArgument": "m.01428y", "EntityName": "Jamaican English"},
                            {"AnswerType": "Entity", "AnswerArgument": "m.04ygk0",
                             "EntityName": "Jamaican Creole English Language"}]},
               {"ParseId": "WebQTest-0.P1", "TopicEntityName": "Jamaica", "TopicEntityMid": "m.03_r3",
                "Answers": [{"AnswerType": "Value", "AnswerArgument": "1962", "EntityName": None}]}],
}]}


def test_webqsp_original_parses(tmp_path):
    [q] = load_dataset(write(tmp_path, "WebQSP.test.json", WEBQSP_ORIGINAL))
    assert (q.id, q.text, q.dataset) == ("WebQTest-0", "what does jamaican people speak?", "webqsp")
    assert q.topics == {"freebase": {"m.03_r3": "Jamaica"}}
    assert q.answers == ["Jamaican English", "Jamaican Creole English Language", "1962"]
    assert q.answer_ids == {"freebase": ["m.01428y", "m.04ygk0"]}
    assert "languages_spoken" in q.meta["sparql"]


def test_trex_tog_file_and_kilt(tmp_path):
    tog = {"input": "Cirith Ungol [SEP] genre", "topic_entity": {"Q2266196": "Cirith Ungol"},
           "wikipedia_title": "King of the Dead (album)", "answer": "heavy metal", "alias": ["heavy metal"],
           "answer_numbers": 2, "topic_entity_ids": {"Q2266196": "Cirith Ungol"}}
    [q] = load_dataset(write(tmp_path, "T-REX.json", [tog]))
    assert (q.id, q.dataset, q.type, q.answers) == ("trex-0", "trex", "genre", ["heavy metal"])
    assert q.topics == {"wikidata": {"Q2266196": "Cirith Ungol"}}
    kilt = {"id": "kilt-7", "input": "Mitsubishi [SEP] manufacturer",
            "output": [{"answer": "Mitsubishi Motors", "provenance": []}, {"answer": "Mitsubishi"}]}
    [k] = load_dataset(write(tmp_path, "trex-dev-kilt.jsonl", [kilt]))
    assert (k.id, k.dataset, k.type, k.answers, k.aliases) == (
        "kilt-7", "trex", "manufacturer", ["Mitsubishi Motors"], ["Mitsubishi"])


def test_cwq_original_answers_with_aliases_are_gold(tmp_path):
    record = {"ID": "WebQTrn-60_x", "question": "Which country speaks Portuguese?", "compositionality_type": "conjunction",
              "answers": [{"answer": "Mozambique", "answer_id": "m.04wlh", "aliases": ["Republic of Mozambique"]}]}
    [q] = load_dataset(write(tmp_path, "ComplexWebQuestions_dev.json", [record]))
    assert (q.answers, q.aliases, q.answer_ids) == (["Mozambique"], ["Republic of Mozambique"], {"freebase": ["m.04wlh"]})
    assert gold_answers(q) == ["Mozambique", "Republic of Mozambique"]


def test_python_repr_strings_are_parsed(tmp_path):
    record = {"ID": "c1", "question": "q?", "answer": "Foo", "topic_entity": "{'m.0abc': 'Foo Bar'}",
              "QID": "{'Q42': 'Douglas Adams', 'UnknownQID': 'Nobody'}"}
    [q] = load_dataset(write(tmp_path, "cwq.json", [record]))
    assert q.topics == {"freebase": {"m.0abc": "Foo Bar"}, "wikidata": {"Q42": "Douglas Adams"}}
    assert q.meta["unlinked_topics"] == ["Nobody"]
    [w] = load_dataset(write(tmp_path, "WebQuestions.json", [{"question": "q?", "answers": "['A', \"B's\"]"}]))
    assert w.answers == ["A", "B's"]


# -- bad input --------------------------------------------------------------------------------------
def test_unknown_shape_names_the_fields_it_lacks(tmp_path):
    path = write(tmp_path, "mystery.json", [{"query": "x", "gold": "y"}])
    with pytest.raises(DatasetError) as err:
        load_dataset(path)
    message = str(err.value)
    assert "has fields gold, query" in message and "lacks question of the nearest (plain)" in message
    assert "\n" not in message


def test_record_missing_a_field_midway(tmp_path):
    path = tmp_path / "cwq_part.jsonl"
    path.write_text(json.dumps({"ID": "a", "question": "q1", "answer": "x"}) + "\n"
                    + json.dumps({"ID": "b", "question": "q2"}) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="record 1 lacks answer"):
        load_dataset(path)


def test_bad_json_line_and_bad_field(tmp_path):
    path = tmp_path / "cwq.jsonl"
    path.write_text('{"ID": "a", "question": "q", "answer": "x"}\n{not json\n', encoding="utf-8")
    with pytest.raises(DatasetError, match="line 2 is not JSON"):
        load_dataset(path)
    listed = write(tmp_path, "cwq.json", [{"ID": "a", "question": "q", "answer": "x", "topic_entity": ["m.0abc"]}])
    assert load_dataset(listed)[0].topics == {"freebase": {"m.0abc": ""}}  # a list of ids is a topic list
    bad = write(tmp_path, "cwq.json", [{"ID": "a", "question": "q", "answer": "x", "topic_entity": [3]}])
    with pytest.raises(DatasetError, match="'topic_entity' is a list of int"):
        load_dataset(bad)
    with pytest.raises(DatasetError, match="label 'MAYBE'"):
        load_dataset(write(tmp_path, "fever.json", [{"claim": "c", "label": "MAYBE"}]))


def test_missing_file_empty_file_and_unknown_dataset(tmp_path):
    with pytest.raises(DatasetError, match="no question file"):
        load_dataset(tmp_path / "nope.json")
    with pytest.raises(DatasetError, match="holds no questions"):
        load_dataset(write(tmp_path, "cwq.json", []))
    with pytest.raises(DatasetError, match="unknown dataset 'metaqa'"):
        canonical_dataset("metaqa")


def test_duplicate_ids_are_made_unique(tmp_path):
    records = [{"ID": "same", "question": f"q{i}", "answer": "x"} for i in range(3)]
    assert [q.id for q in load_dataset(write(tmp_path, "cwq.json", records))] == ["same", "same#2", "same#3"]


def test_names_and_fields_detection():
    assert [dataset_from_name(n) for n in ("WebQSP.test.json", "WebQuestions.json", "Zero_Shot_RE.json", "T-REX.json",
                                           "qald_10-en.json", "graliqa.json", "questions.jsonl")] == [
        "webqsp", "webquestions", "zeroshotre", "trex", "qald", "grailqa", None]
    assert canonical_dataset("hotpot_e") == "hotpot" and canonical_dataset("ZSRE") == "zeroshotre"
    assert set(FEVER_SYNONYMS) == {"REFUTES", "SUPPORTS", "NOT ENOUGH INFO"}
    q = Question("x", "t", meta={"type": 3})
    assert q.type == "3" and q.to_json()["id"] == "x"


# -- plain question files (no gold) ------------------------------------------------------------------
def test_plain_jsonl_with_optional_id_and_topics(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"question": "Who founded Apple?"},
        {"id": "b", "question": "Where was he born?", "topic_entity": {"m.0282x": "Douglas Adams"}},
        {"question": "q3", "topics": ["Q42", "m.0abc"]},
        {"question": "q4", "topics": "Q42, m.0abc"},
        {"question": "q5", "topics": {"freebase": {"m.0abc": "Foo"}}},
    ]) + "\n", encoding="utf-8")
    questions = load_dataset(path)
    assert [q.id for q in questions] == ["plain-0", "b", "plain-2", "plain-3", "plain-4"]
    assert {q.dataset for q in questions} == {"plain"} and not any(has_gold(q) for q in questions)
    assert questions[0].topics == {} and questions[1].topics == {"freebase": {"m.0282x": "Douglas Adams"}}
    assert questions[2].topics == questions[3].topics == {"wikidata": {"Q42": ""}, "freebase": {"m.0abc": ""}}
    assert questions[4].topics == {"freebase": {"m.0abc": "Foo"}}
    with pytest.raises(DatasetError, match="has no gold answers") as err:
        require_gold(questions, path)
    assert "\n" not in str(err.value)


def test_plain_txt_and_csv_one_question_a_line(tmp_path):
    txt = tmp_path / "questions.txt"
    txt.write_text("Who founded Apple?\n\n# a comment\n  Where is Paris?  \n", encoding="utf-8")
    assert [(q.id, q.text) for q in load_dataset(txt)] == [("plain-0", "Who founded Apple?"), ("plain-1", "Where is Paris?")]
    csv_file = tmp_path / "questions.csv"
    csv_file.write_text('"Who, in 1990, won the cup?"\nWhere is Paris?\n', encoding="utf-8")
    assert [q.text for q in load_dataset(csv_file)] == ["Who, in 1990, won the cup?", "Where is Paris?"]
    headed = tmp_path / "headed.csv"
    headed.write_text('id,question,topics,answers\na1,"Who founded Apple, Inc.?",m.0abc Q42,Steve Jobs|Wozniak\n',
                      encoding="utf-8")
    [q] = load_dataset(headed)
    assert (q.id, q.text, q.dataset) == ("a1", "Who founded Apple, Inc.?", "plain")
    assert q.topics == {"freebase": {"m.0abc": ""}, "wikidata": {"Q42": ""}} and q.answers == ["Steve Jobs", "Wozniak"]
    assert has_gold(q) and gold_answers(q) == ["Steve Jobs", "Wozniak"]
    empty = tmp_path / "empty.txt"
    empty.write_text("\n# nothing\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="holds no questions"):
        load_dataset(empty)
