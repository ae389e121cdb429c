"""A plain question file's topic that is no entity id (issue 42 item 9): refused in one line, as `ask --topic` does,
instead of being dropped and the question answered {NULL} without a word."""
from __future__ import annotations

import json

import pytest

from kgfed.engine.cli.app import main
from kgfed.engine.harness.datasets import load_dataset
from kgfed.sparql.errors import DatasetError


@pytest.mark.parametrize("name, text", [
    ("q.csv", "id,question,topics\nq1,Who founded Apple?,m.0k8z\nq2,Where was Douglas Adams born?,notanid\n"),
    ("q.jsonl", json.dumps({"question": "Who founded Apple?", "topics": ["Q42", "notanid"]}) + "\n"),
])
def test_a_topic_that_is_no_id_is_refused(tmp_path, name, text, capsys):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DatasetError, match="topic 'notanid' is no entity id of any KG: use m.0abc for Freebase, Q42"):
        load_dataset(path)
    out = tmp_path / "p.jsonl"
    assert main(["run", str(path), "--llm", "none", "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'notanid'" in err and not out.exists()


def test_ids_and_placeholders_still_load(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text("question,topics\nWho founded Apple?,m.0k8z Q312\nA question with no id yet,UnknownMID\n", encoding="utf-8")
    first, second = load_dataset(path)
    assert first.topics == {"freebase": {"m.0k8z": ""}, "wikidata": {"Q312": ""}} and second.topics == {}
