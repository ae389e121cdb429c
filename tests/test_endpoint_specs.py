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
from kgfed.engine.cli.federation import close_kgs, open_kgs
from kgfed.engine.config import KGSpec, kg_specs
from kgfed.sparql.errors import KgfedError

from .conftest import CWQ_NT, need

GUATEMALA = "m.0345_"


def namespace(*endpoints: str, kg: str | None = None) -> argparse.Namespace:
    return argparse.Namespace(kg=kg, endpoint=list(endpoints), cache_dir=None, no_cache=True, offline=False, timeout=30.0,
                              concurrency=None, user_agent=None, contact=None, refresh=False, max_age=None, partial="error")


def test_the_prefix_is_the_dialect_and_only_a_known_dialect_is_a_prefix():
    specs = kg_specs(None, ["fb2=freebase@http://127.0.0.1:9/sparql", "wd=wikidata@file:wd.nt",
                            "auth=http://user@host.example/sparql", "odd=file:with@sign.nt"])
    assert specs == [KGSpec("fb2", "http://127.0.0.1:9/sparql", "freebase"), KGSpec("wd", "file:wd.nt", "wikidata"),
                     KGSpec("auth", "http://user@host.example/sparql"), KGSpec("odd", "file:with@sign.nt")]


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


# -- the value objects the CLI parses into (kgfed.engine.config) ---------------------------------------
def test_specs_are_frozen_picklable_values_with_one_line_errors():
    import dataclasses
    import pickle

    from kgfed.engine.config import CacheOptions, HttpOptions, KGSpec

    spec = KGSpec.parse("fb2=freebase@http://127.0.0.1:9/sparql")
    assert spec == KGSpec("fb2", "http://127.0.0.1:9/sparql", "freebase") and spec.effective_dialect == "freebase"
    assert KGSpec.parse("wikidata=wikidata").effective_dialect == "wikidata" and KGSpec("kg", "file:x.nt").effective_dialect is None
    for value in (spec, HttpOptions(timeout=5, contact="me@example.org"), CacheOptions(root="/tmp/x", max_age=60)):
        assert pickle.loads(pickle.dumps(value)) == value
        with pytest.raises(dataclasses.FrozenInstanceError):
            value.__setattr__("timeout" if isinstance(value, HttpOptions) else "root" if isinstance(value, CacheOptions) else "name", "x")
    for bad, message in ((lambda: KGSpec("2fb"), "invalid KG name '2fb'"), (lambda: KGSpec("fb\n"), "invalid KG name"),
                         (lambda: KGSpec("kg", dialect="dbpedia"), "unknown dialect 'dbpedia'"),
                         (lambda: KGSpec.parse("http://host/sparql"), "names no KG")):
        with pytest.raises(KgfedError, match=message) as info:
            bad()
        assert "\n" not in str(info.value)


async def test_library_opens_a_run_from_specs_without_the_cli(oxigraph_freebase):
    from kgfed.engine.config import CacheOptions, HttpOptions, KGSpec, close_kgs, open_kgs as open_specs

    kgs = open_specs([KGSpec("fb1", f"file:{need(CWQ_NT)}"), KGSpec.parse(f"fb2=freebase@{oxigraph_freebase.url}"),
                      KGSpec("wikidata")],  # no endpoint: the bundled demo KG of its dialect
                     http=HttpOptions(timeout=30, concurrency=2), cache=CacheOptions(enabled=False))
    try:
        assert list(kgs) == ["fb1", "fb2", "wikidata"] and kgs.owns_client
        assert kgs["fb2"].endpoint.inner.client is kgs.client and kgs.client.limit_for("127.0.0.1") == 2
        names = await kgs["wikidata"].labels(["Q42"])
        edges = await kgs["fb2"].neighbors(GUATEMALA, "location.country.currency_used")
    finally:
        await close_kgs(kgs)
    assert names["Q42"].label == "Douglas Adams"
    store = ox.Store()
    store.bulk_load(path=str(CWQ_NT), format=ox.RdfFormat.N_TRIPLES)
    fb = "http://rdf.freebase.com/ns/"
    expected = {s["x"].value[len(fb):] for s in store.query(
        f"SELECT ?x WHERE {{ <{fb}{GUATEMALA}> <{fb}location.country.currency_used> ?x }}")}
    assert {e.entity for e in edges} == expected and "Guatemalan quetzal" in {e.label for e in edges}
    assert kgs.client.closed
