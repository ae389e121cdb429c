"""RoG/GCR subgraph parquet files (rmanluo/RoG-cwq, RoG-webqsp layout) written here with pyarrow, never
downloaded: conversion to N-Triples, the question loader, kgfed's templates, search and ToG on them."""
from __future__ import annotations

import asyncio
import json

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from kgfed.engine.cli import main  # noqa: E402
from kgfed.engine.harness.datasets import load_dataset  # noqa: E402
from kgfed.engine.kg import KG  # noqa: E402
from kgfed.engine.harness.rog import MINTED, convert, load_questions, rog_id  # noqa: E402
from kgfed.engine.config import CacheOptions, KGSpec  # noqa: E402
from kgfed.engine.harness.runner import RunSpec, run  # noqa: E402
from kgfed.sparql.errors import DatasetError  # noqa: E402

# The dataset card's features (huggingface.co/datasets/rmanluo/RoG-cwq README): id, question, answer,
# q_entity, a_entity (sequences of strings), graph (sequence of sequences of strings), choices (sequence of null).
SCHEMA = pa.schema([
    ("id", pa.string()), ("question", pa.string()), ("answer", pa.list_(pa.string())),
    ("q_entity", pa.list_(pa.string())), ("a_entity", pa.list_(pa.string())),
    ("graph", pa.list_(pa.list_(pa.string()))), ("choices", pa.list_(pa.null())),
])
ROWS = [
    {"id": "WebQTest-0", "question": "what is the name of justin bieber brother", "answer": ["Jaxon Bieber"],
     "q_entity": ["Justin Bieber"], "a_entity": ["Jaxon Bieber"], "choices": [],
     "graph": [["Justin Bieber", "people.person.sibling_s", "m.0gxnnwc"],
               ["m.0gxnnwc", "people.sibling_relationship.sibling", "Jaxon Bieber"],
               ["Justin Bieber", "people.person.gender", "Male"],
               ["Jaxon Bieber", "people.person.gender", "Male"],
               ["Justin Bieber", "people.person.place_of_birth", "London"],  # the Ontario one, by name
               ["Justin Bieber", "not a relation id", "Nowhere"]]},
    {"id": "WebQTest-1", "question": "what character did natalie portman play in star wars", "answer": ["Padmé Amidala"],
     "q_entity": ["Natalie Portman", "Star Wars"], "a_entity": ["Padmé Amidala"], "choices": [],
     "graph": [["Natalie Portman", "film.actor.film", "m.0k3qy8"],
               ["m.0k3qy8", "film.performance.character", "Padmé Amidala"],
               ["m.0k3qy8", "film.performance.film", "Star Wars Episode I: The Phantom Menace"],
               ["Natalie Portman", "people.person.gender", "Female"],
               ["Padmé Amidala", "fictional_universe.fictional_character.appears_in_these_fictional_universes", "Star Wars"],
               ["London", "location.location.containedby", "United Kingdom"]]},
]
NS = "http://rdf.freebase.com/ns/"


@pytest.fixture
def rog_parquet(tmp_path):
    """Two questions in the exact RoG-webqsp layout, split over two parquet shards in a data/ directory."""
    data = tmp_path / "RoG-webqsp" / "data"
    data.mkdir(parents=True)
    for i, row in enumerate(ROWS):
        pq.write_table(pa.Table.from_pylist([row], schema=SCHEMA), data / f"test-0000{i}-of-00002-abc.parquet")
    return data


def test_minted_ids_are_freebase_shaped_and_stable():
    assert rog_id("m.0gxnnwc") == "m.0gxnnwc"
    minted = rog_id("Justin Bieber")
    assert minted.startswith(MINTED) and len(minted) == 18 and minted == rog_id("Justin Bieber")
    assert rog_id("Justin Bieber ") != minted and rog_id(minted) != minted  # a minted-looking name is minted anew
    from kgfed.sparql.terms import freebase_mid

    assert freebase_mid(minted) == minted


def test_convert_writes_names_and_keeps_cvt_mids(rog_parquet, tmp_path):
    out = tmp_path / "rog.nt"
    counts = convert([rog_parquet], out)
    assert counts["questions"] == 2 and counts["graph_triples"] == 12 and counts["skipped_triples"] == 1
    assert counts["mids"] == 2 and counts["named"] == counts["entities"] - 2
    lines = set(out.read_text(encoding="utf-8").splitlines())
    bieber, jaxon = rog_id("Justin Bieber"), rog_id("Jaxon Bieber")
    assert f'<{NS}{bieber}> <{NS}type.object.name> "Justin Bieber"@en .' in lines
    assert f"<{NS}{bieber}> <{NS}people.person.sibling_s> <{NS}m.0gxnnwc> ." in lines
    assert f"<{NS}m.0gxnnwc> <{NS}people.sibling_relationship.sibling> <{NS}{jaxon}> ." in lines
    assert not any(line.startswith(f"<{NS}m.0gxnnwc> <{NS}type.object.name>") for line in lines)
    assert not any("Nowhere" in line for line in lines)
    # one node per name across questions: "London" of question 0 is the subject in question 1
    assert f"<{NS}{rog_id('London')}> <{NS}location.location.containedby> <{NS}{rog_id('United Kingdom')}> ." in lines
    assert counts["triples"] == len(lines)
    limited = convert([rog_parquet], tmp_path / "one.nt", limit=1)
    assert limited["questions"] == 1 and "Portman" not in (tmp_path / "one.nt").read_text(encoding="utf-8")


def test_questions_load_with_minted_topics_and_answers(rog_parquet):
    questions = load_dataset(rog_parquet)
    assert questions == load_questions(rog_parquet)
    first = questions[0]
    assert first.id == "WebQTest-0" and first.dataset == "webqsp"  # told by the RoG-webqsp directory
    assert first.topics == {"freebase": {rog_id("Justin Bieber"): "Justin Bieber"}}
    assert first.answers == ["Jaxon Bieber"] and first.answer_ids == {"freebase": [rog_id("Jaxon Bieber")]}
    assert load_dataset(rog_parquet, "cwq")[0].dataset == "cwq"


async def test_templates_search_and_cvt_compounds_work_on_the_converted_graph(rog_parquet, tmp_path):
    out = tmp_path / "rog.nt"
    convert([rog_parquet], out)
    bieber, jaxon = rog_id("Justin Bieber"), rog_id("Jaxon Bieber")
    async with KG.open(f"file:{out}", cache=False) as kg:
        assert kg.dialect.name == "freebase"
        assert [h.id for h in await kg.search("Justin Bieber")] == [bieber]
        relations = {r.relation for r in await kg.relations(bieber, "out")}
        assert "people.person.sibling_s|people.sibling_relationship.sibling" in relations
        edges = await kg.neighbors(bieber, "people.person.sibling_s|people.sibling_relationship.sibling")
        assert [(e.object, e.object_label, e.via) for e in edges] == [(jaxon, "Jaxon Bieber", ("m.0gxnnwc",))]


def test_tog_answers_a_rog_question_and_the_cli_converts(rog_parquet, tmp_path, capsys):
    out = tmp_path / "rog.nt"
    assert main(["rog", str(rog_parquet), "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["questions"] == 2
    spec = RunSpec("tog", {}, kgs=(KGSpec("freebase", f"file:{out}"),), cache=CacheOptions(root=str(tmp_path / "c")))
    summary = asyncio.run(run(spec, load_dataset(rog_parquet)[:1], tmp_path / "p.jsonl", progress=False))
    record = json.loads((tmp_path / "p.jsonl").read_text(encoding="utf-8"))
    assert record["results"] == "{Jaxon Bieber}" and summary["hits@1"] == 1.0


def test_wrong_files_are_one_line_errors(tmp_path, capsys):
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"id": ["x"], "question": ["q"]}), bad)
    with pytest.raises(DatasetError, match="lacks the RoG column.*answer.*expected the rmanluo/RoG-cwq layout"):
        load_questions(bad)
    (tmp_path / "text.parquet").write_text("not parquet", encoding="utf-8")
    assert main(["rog", str(tmp_path / "text.parquet"), "--out", str(tmp_path / "o.nt")]) == 2
    assert "not a readable parquet file" in capsys.readouterr().err
    assert main(["rog", str(tmp_path / "absent"), "--out", str(tmp_path / "o.nt")]) == 2
    assert "no parquet file or directory" in capsys.readouterr().err
