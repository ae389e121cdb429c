"""Exports of a merged graph: JSON, networkx, rdflib Dataset, DOT, and the HTML picture as a person
sees it (rendered by headless Chromium: a screenshot and the DOM)."""
from __future__ import annotations

import html
import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from kgfed.engine.federation import views
from kgfed.engine.federation.align import Aligner, Alignment
from kgfed.engine.federation.subgraph import Link, MergedGraph, Node, expand

from .conftest_servers import unavailable
from .test_align import fed_kgs

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture
async def bieber() -> MergedGraph:
    async with fed_kgs() as kgs:
        return await expand(["m.06w2sn5"], kgs, hops=1, width=4, limit=6, aligner=Aligner(kgs, methods=("p646", "label")))


def hostile() -> MergedGraph:
    """A hand-made graph whose labels try to break DOT, HTML and SVG."""
    merged = MergedGraph({"freebase": "freebase", "wikidata": "wikidata"})
    merged.nodes = [
        Node({"freebase": "m.0aaa", "wikidata": "Q1"}, 'Say "hi" \\ <script>alert(1)</script>', topic=True,
             alignments=[Alignment("freebase", "m.0aaa", "wikidata", "Q1", "label", 0.9)]),
        Node({"wikidata": "Q2"}, "line\nbreak & ampersand } ] ;"),
        Node({"freebase": "m.0bbb"}, None),
    ]
    merged.edges = [Link("wikidata", 0, "P31", 1, 'rel "quoted" </text>'), Link("freebase", 2, "a.b.c|d.e.f", 0, "c / f", via=("m.0cvt",))]
    return merged


# -- data exports ----------------------------------------------------------------------------------
async def test_json_has_ids_maps_and_index_edges(bieber):
    doc = json.loads(json.dumps(views.to_json(bieber)))
    assert doc["nodes"][0]["ids"] == {"freebase": "m.06w2sn5", "wikidata": "Q34086"} and doc["nodes"][0]["label"] == "Justin Bieber"
    assert all(set(n["ids"]) <= {"freebase", "wikidata"} and n["ids"] for n in doc["nodes"])
    for edge in doc["edges"]:
        assert {"kg", "subject", "relation", "object"} <= set(edge)
        assert edge["kg"] in {"freebase", "wikidata"} and 0 <= edge["subject"] < len(doc["nodes"]) and 0 <= edge["object"] < len(doc["nodes"])
        assert edge["kg"] in doc["nodes"][edge["subject"]]["ids"] and edge["kg"] in doc["nodes"][edge["object"]]["ids"]
    assert {e["kg"] for e in doc["edges"]} == {"freebase", "wikidata"}


async def test_networkx_multidigraph_keeps_parallel_edges_from_each_source(bieber):
    graph = views.to_networkx(bieber)
    assert graph.is_multigraph() and graph.is_directed()
    assert graph.number_of_nodes() == len(bieber.nodes) and graph.number_of_edges() == len(bieber.edges)
    piano = bieber.index("freebase", "m.05r5c")
    assert set(graph[0][piano]) == {"freebase:music.group_member.instruments_played", "wikidata:P1303"}
    assert {d["kg"] for d in graph[0][piano].values()} == {"freebase", "wikidata"}
    assert graph.nodes[piano]["ids"] == {"freebase": "m.05r5c", "wikidata": "Q5994"} and graph.nodes[piano]["aligned"]


async def test_rdf_dataset_one_named_graph_per_source_with_original_iris(bieber, tmp_path):
    from rdflib import Dataset, URIRef
    from rdflib.namespace import OWL

    dataset = views.to_rdflib(bieber)
    names = {str(g.identifier) for g in dataset.graphs()}
    assert {"urn:kgfed:graph:freebase", "urn:kgfed:graph:wikidata", "urn:kgfed:graph:alignment"} <= names
    fb = dataset.graph(URIRef("urn:kgfed:graph:freebase"))
    wd = dataset.graph(URIRef("urn:kgfed:graph:wikidata"))
    bieber_fb, bieber_wd = URIRef("http://rdf.freebase.com/ns/m.06w2sn5"), URIRef("http://www.wikidata.org/entity/Q34086")
    assert (bieber_fb, URIRef("http://rdf.freebase.com/ns/music.group_member.instruments_played"),
            URIRef("http://rdf.freebase.com/ns/m.05r5c")) in fb
    assert (bieber_wd, URIRef("http://www.wikidata.org/prop/direct/P1303"), URIRef("http://www.wikidata.org/entity/Q5994")) in wd
    assert not any(str(p).startswith("http://www.wikidata.org/") for _, p, _ in fb)
    assert (bieber_fb, OWL.sameAs, bieber_wd) in dataset.graph(URIRef("urn:kgfed:graph:alignment"))
    cvt = next(e for e in bieber.edges if e.via)  # a CVT edge is written as its two real hops
    first, second = cvt.relation.split("|")
    via = URIRef("http://rdf.freebase.com/ns/" + cvt.via[0])
    assert (None, URIRef("http://rdf.freebase.com/ns/" + first), via) in fb and (via, URIRef("http://rdf.freebase.com/ns/" + second), None) in fb
    path = tmp_path / "merged.trig"
    dataset.serialize(destination=str(path), format="trig")
    again = Dataset()
    again.parse(str(path), format="trig")
    assert len(again) == len(dataset)


def test_dot_escapes_hostile_labels_and_graphviz_accepts_it():
    dot = views.to_dot(hostile(), title='t "x"')
    assert '\\"hi\\"' in dot and "\\\\ <script>" in dot and "line\\nbreak" in dot
    if shutil.which("dot") is None:
        unavailable("Graphviz dot is not installed: apt-get install graphviz")
    svg = views.render_svg(dot)
    assert svg.startswith("<svg") and "&lt;script&gt;" in svg and "<script>" not in svg


@pytest.mark.parametrize("layout", ["simple", "dot"])
def test_html_is_self_contained_and_escaped(layout):
    if layout == "dot" and shutil.which("dot") is None:
        unavailable("Graphviz dot is not installed: apt-get install graphviz")
    page = views.to_html(hostile(), "hostile <b>title</b>", layout=layout)
    assert "<script" not in page.lower() and " src=" not in page and "<link" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "hostile &lt;b&gt;title&lt;/b&gt;" in page
    assert "aligned entity (1)" in page and "freebase edges (1)" in page and "wikidata edges (1)" in page


# -- the picture, as a person sees it --------------------------------------------------------------
def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    binary = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if binary is None:
        unavailable("headless Chromium is not installed: apt-get install chromium")
    profile = tmp_path / "chromium-profile"
    return subprocess.run([binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)})


def screenshot(tmp_path: Path, page: Path, name: str) -> Path:
    out = tmp_path / name
    done = chromium(tmp_path, f"--screenshot={out}", "--window-size=1400,1000", page.as_uri())
    assert out.is_file(), done.stderr[-2000:]
    return out


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("layout", ["dot", "simple"])
async def test_picture_renders_in_chromium_with_every_label(bieber, tmp_path, layout):
    if layout == "dot" and shutil.which("dot") is None:
        unavailable("Graphviz dot is not installed: apt-get install graphviz")
    page = tmp_path / "merged.html"
    page.write_text(views.to_html(bieber, "Justin Bieber across Freebase and Wikidata", layout=layout), encoding="utf-8")
    blank = tmp_path / "blank.html"
    blank.write_text("<!doctype html><html><body></body></html>")
    shot, empty = screenshot(tmp_path, page, "merged.png"), screenshot(tmp_path, blank, "blank.png")
    assert png_size(shot) == (1400, 1000)
    assert shot.stat().st_size > 5 * empty.stat().st_size, (shot.stat().st_size, empty.stat().st_size)
    dom = chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
    assert "<svg" in dom and "Justin Bieber" in dom
    cut = 26 if layout == "simple" else None  # the built-in layout shortens long names
    for node in bieber.nodes:
        shown = views.node_title(node)[:cut]
        assert html.escape(shown, quote=False) in dom, shown
    for edge in bieber.edges:
        assert html.escape(edge.label, quote=False) in dom
    assert "aligned entity" in dom and "freebase edges" in dom and "wikidata edges" in dom


# -- pictures that scale: CVTs as compound edges, one arrow per pair, bundled fans, filters ---------------
def cvt_graph() -> MergedGraph:
    """Bieber -education-> (nameless CVT) -institution-> school, plus a CVT reached from one side only,
    a fan of 12 films over one relation, and one fact both KGs state."""
    merged = MergedGraph({"freebase": "freebase", "wikidata": "wikidata"})
    merged.nodes = [Node({"freebase": "m.06w2sn5", "wikidata": "Q34086"}, "Justin Bieber", topic=True),
                    Node({"freebase": "m.cvt_0001"}, None, hop=1),
                    Node({"freebase": "m.0school"}, "Stratford Northwestern", hop=2),
                    Node({"freebase": "m.cvt_0002"}, None, hop=1),
                    Node({"freebase": "m.0canada", "wikidata": "Q16"}, "Canada", hop=1)]
    merged.nodes += [Node({"wikidata": f"Q90{i:02d}"}, f"Film {i:02d}", hop=1) for i in range(12)]
    merged.edges = [Link("freebase", 0, "people.person.education", 1, "education"),
                    Link("freebase", 1, "education.education.institution", 2, "institution"),
                    Link("freebase", 3, "award.award_honor.award_winner", 0, "award winner"),
                    Link("freebase", 0, "people.person.nationality", 4, "nationality"),
                    Link("wikidata", 0, "P27", 4, "country of citizenship")]
    merged.edges += [Link("wikidata", 0, "P1269", 5 + i, "cast member of") for i in range(12)]
    return merged


def test_display_graph_draws_cvts_as_compound_edges_and_bundles_fans():
    merged = cvt_graph()
    shown = views.display_graph(merged)
    titles = [views.node_title(n) for n in shown.nodes]
    assert "m.cvt_0001" not in titles  # the CVT between two entities is an edge now
    compound = next(e for e in shown.edges if "|" in e.relation)
    assert (titles[compound.subject], compound.label, titles[compound.object], compound.via) == \
        ("Justin Bieber", "education | institution", "Stratford Northwestern", ("m.cvt_0001",))
    assert "m.cvt_0002" in titles and views.is_cvt(shown, titles.index("m.cvt_0002"))  # one edge: kept, drawn as a dot
    both = next(e for e in shown.edges if titles[e.object] == "Canada")  # one arrow for the fact both KGs state
    assert both.kg == "freebase+wikidata" and both.label == "nationality\ncountry of citizenship"
    assert sum(1 for e in shown.edges if titles[e.object] == "Canada") == 1
    bundle = next(n for n in shown.nodes if (n.label or "").startswith("12 entities: "))
    assert bundle.label == "12 entities: Film 00, Film 01, Film 02, Film 03, Film 04, Film 05 … and 6 more"
    assert len(shown.edges) == 4 and len(merged.edges) == 17
    dot = views.to_dot(shown)
    assert 'shape=point' in dot and 'color="#1f6fb4:#d9480f"' in dot and "class=\"kg-freebase kg-wikidata" in dot
    assert len(views.to_dot(merged).splitlines()) > len(dot.splitlines())  # the --dot export keeps every edge


async def test_93_edge_merged_subgraph_is_readable_in_chromium(tmp_path):
    """The picture the issue found unreadable (Justin Bieber, 2 hops over both federation KGs: 93 edges),
    checked as rendered: ranked by hop, CVTs not drawn as boxes, filters that really hide arrows."""
    if shutil.which("dot") is None:
        unavailable("Graphviz dot is not installed: apt-get install graphviz")
    async with fed_kgs() as kgs:
        merged = await expand(["m.06w2sn5"], kgs, hops=2, width=3, limit=10, aligner=Aligner(kgs, methods=("p646", "label")))
    assert len(merged.edges) == 93
    page = tmp_path / "merged.html"
    page.write_text(views.to_html(merged, "Justin Bieber, 2 hops"), encoding="utf-8")
    text = page.read_text()
    assert "<script" not in text and "93 edges from 2 KGs; drawn as 37 boxes and 90 arrows" in text
    assert 'id="hide-rel-occupation"' in text and "All 93 edges" in text
    filtered = tmp_path / "filtered.html"
    filtered.write_text(text.replace('id="hide-rel-occupation" hidden>', 'id="hide-rel-occupation" hidden checked>'))
    shot, less = screenshot(tmp_path, page, "merged.png"), screenshot(tmp_path, filtered, "filtered.png")
    assert png_size(shot) == (1400, 1000)
    assert less.stat().st_size < 0.9 * shot.stat().st_size  # 48 occupation arrows gone from the picture
    dom = chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
    for node in merged.nodes:
        if not views.is_cvt(merged, merged.nodes.index(node)):
            assert html.escape(views.node_title(node), quote=False) in dom
    assert dom.count('class="node cvt"') == sum(views.is_cvt(merged, i) for i in range(len(merged.nodes))) == 2  # dots, not boxes
