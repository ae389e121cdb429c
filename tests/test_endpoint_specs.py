"""`--endpoint NAME=[DIALECT@]SPEC`: any number of KGs of either dialect, named freely, federated by URL.

Two Freebase KGs (the CWQ fixture behind a real Oxigraph server and the same file embedded) are
opened side by side under names that say nothing about their dialect; the prefix does.
"""
from __future__ import annotations

import argparse
import json

import pyoxigraph as ox
import pytest

from kgfed.engine.cli import main
from kgfed.engine.cli_federation import close_kgs, endpoint_choices, open_kgs
from kgfed.sparql.errors import KgfedError

from .conftest import CWQ_NT, need

GUATEMALA = "m.0345_"


def namespace(*endpoints: str, kg: str | None = None) -> argparse.Namespace:
    return argparse.Namespace(kg=kg, endpoint=list(endpoints), cache_dir=None, no_cache=True, offline=False, timeout=30.0,
                              concurrency=None, user_agent=None, contact=None, refresh=False, max_age=None, partial="error")


def test_the_prefix_is_the_dialect_and_only_a_known_dialect_is_a_prefix():
    args = namespace("fb2=freebase@http://127.0.0.1:9/sparql", "wd=wikidata@file:wd.nt",
                     "auth=http://user@host.example/sparql", "odd=file:with@sign.nt")
    assert endpoint_choices(args, None) == {"fb2": ("freebase", "http://127.0.0.1:9/sparql"), "wd": ("wikidata", "file:wd.nt"),
                                            "auth": (None, "http://user@host.example/sparql"), "odd": (None, "file:with@sign.nt")}


async def test_two_freebase_kgs_by_url_and_file_answer_alike(oxigraph_freebase):
    args = namespace(f"fb1=file:{need(CWQ_NT)}", f"fb2=freebase@{oxigraph_freebase.url}", kg="fb1,fb2")
    kgs = open_kgs(args)
    try:
        assert [kg.dialect.name for kg in kgs.values()] == ["freebase", "freebase"]
        assert kgs["fb2"].endpoint.inner.client is kgs.client     # the run's one client
        local = sorted((r.relation, r.direction) for r in await kgs["fb1"].relations(GUATEMALA))
        remote = sorted((r.relation, r.direction) for r in await kgs["fb2"].relations(GUATEMALA))
    finally:
        await close_kgs(kgs)
    store = ox.Store()
    store.bulk_load(path=str(CWQ_NT), format=ox.RdfFormat.N_TRIPLES)
    out = {s["p"].value.rsplit("/", 1)[1] for s in store.query(
        "SELECT DISTINCT ?p WHERE { <http://rdf.freebase.com/ns/m.0345_> ?p ?o }")}
    assert local == remote and local
    assert {rel.split("|")[0] for rel, d in local if d == "out"} <= out


def test_cli_names_the_prefix_when_a_url_has_no_dialect(capsys):
    code = main(["expand", GUATEMALA, "--kg", "fb2", "--endpoint", "fb2=http://127.0.0.1:9/sparql"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "write --endpoint fb2=freebase@http://127.0.0.1:9/sparql or fb2=wikidata@http://127.0.0.1:9/sparql" in err


def test_a_dialect_name_cannot_take_the_other_dialect():
    with pytest.raises(KgfedError, match=r"KG 'freebase' cannot speak wikidata: rename it"):
        open_kgs(namespace("freebase=wikidata@file:x.nt", kg="freebase"))


def test_cli_expand_over_two_freebase_kgs(capsys, oxigraph_freebase):
    code = main(["expand", GUATEMALA, "--kg", "fb1,fb2", "--endpoint", f"fb1=file:{need(CWQ_NT)}",
                 "--endpoint", f"fb2=freebase@{oxigraph_freebase.url}", "--hops", "1", "--methods", "label",
                 "--no-cache", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    graph = json.loads(out)
    kgs = {edge["kg"] for edge in graph["edges"]}
    assert kgs == {"fb1", "fb2"}
