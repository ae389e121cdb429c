"""Issue 42 item 11, the small things a new user still met: the TSV `via` column, `--rdf` in the format its
suffix names, plural captions."""
from __future__ import annotations

import pytest

from kgfed.engine.federation import views
from kgfed.engine.federation.subgraph import Link, MergedGraph, Node

from .conftest import CWQ_NT, need
from .test_align import fixture_endpoints, run_cli

COMPOUND = "government.political_appointer.appointees|government.government_position_held.jurisdiction_of_office"


def test_the_tsv_via_column_is_ids_not_a_python_list(capsys):
    code, out, err = run_cli(capsys, "neighbors", "m.02722_", COMPOUND, "--endpoint", f"file:{need(CWQ_NT)}",
                             "--dialect", "freebase")
    assert code == 0, err
    header, row = out.splitlines()
    cells = dict(zip(header.split("\t"), row.split("\t")))
    assert (cells["label"], cells["via"]) == ("Nebraska", "m.0hz71sg")  # was "['m.0hz71sg']"


@pytest.mark.parametrize("name", ["x.rdfxml", "x.ttl", "x.rdf", "x"])
def test_rdf_in_a_format_that_cannot_hold_one_graph_per_kg_is_refused_before_work(tmp_path, capsys, name):
    code, _, err = run_cli(capsys, "expand", "Q34086", "--kg", "freebase,wikidata", *fixture_endpoints(), "--hops", "1",
                           "--methods", "p646,label", "--rdf", str(tmp_path / name))
    assert code == 2 and err.count("\n") == 1 and "names no RDF dataset format" in err and ".trig" in err, err
    assert not (tmp_path / name).exists()


def test_rdf_is_written_in_the_format_its_suffix_names(tmp_path, capsys):
    from rdflib import Dataset

    out = tmp_path / "merged.nq"
    code, _, err = run_cli(capsys, "expand", "Q34086", "--kg", "freebase,wikidata", *fixture_endpoints(), "--hops", "1",
                           "--width", "3", "--methods", "p646,label", "--rdf", str(out))
    assert code == 0, err
    assert not out.read_text(encoding="utf-8").lstrip().startswith(("@prefix", "PREFIX"))  # N-Quads, not TriG
    dataset = Dataset()
    dataset.parse(out, format="nquads")
    graphs = {str(g.identifier) for g in dataset.graphs() if len(g)}
    assert {"urn:kgfed:graph:freebase", "urn:kgfed:graph:wikidata"} <= graphs


def test_captions_say_1_edge_from_1_kg():
    merged = MergedGraph({"wikidata": "wikidata"})
    merged.nodes = [Node({"wikidata": "Q42"}, "Douglas Adams", topic=True), Node({"wikidata": "Q5"}, "human")]
    merged.edges = [Link("wikidata", 0, "P31", 1, "instance of")]
    page = views.to_html(merged, "one edge")
    assert "2 entities (0 aligned across KGs), 1 edge from 1 KG<" in page
    assert views.caption(MergedGraph({"a": "wikidata", "b": "freebase"}), 0) == "0 entities (0 aligned across KGs), 0 edges from 2 KGs"
