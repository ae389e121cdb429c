"""Entity alignment on the shared federation fixture: P646 both ways, exact labels with P646 hidden,
SBERT, ambiguity, hostile and unknown ids, the alignment cache."""
from __future__ import annotations

import json
import math
import re
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from kgfed.engine.federation.align import Aligner, Alignment, best_matches, exclusive
from kgfed.engine.kg import KG
from kgfed.sparql.errors import InvalidIdentifier, KgfedError

from .conftest import FED_DIR, need

FB_NT = FED_DIR / "freebase.nt"
WD_NT = FED_DIR / "wikidata.nt"
_FB_ENTITY = re.compile(r"<http://rdf\.freebase\.com/ns/([mg]\.[0-9a-z_]+)>")
_WD_ENTITY = re.compile(r"<http://www\.wikidata\.org/entity/(Q[0-9]+)>")
_P646 = re.compile(r'^<http://www\.wikidata\.org/entity/(Q[0-9]+)> <http://www\.wikidata\.org/prop/direct/P646> "/m/([0-9a-z_]+)"')


def questions() -> list[dict]:
    return [json.loads(line) for line in need(FED_DIR / "questions.jsonl").read_text().splitlines() if line.strip()]


def fixture_ids() -> tuple[list[str], list[str]]:
    """Every Freebase mid and every Wikidata QID mentioned in the fixture KGs."""
    mids = sorted({m for line in need(FB_NT).read_text().splitlines() for m in _FB_ENTITY.findall(line)})
    qids = sorted({q for line in need(WD_NT).read_text().splitlines() for q in _WD_ENTITY.findall(line)})
    return mids, qids


def gold_mapping() -> dict[str, str]:
    """mid -> QID from the fixture's P646 triples, for mids present in the Freebase fixture."""
    mids, _ = fixture_ids()
    present = set(mids)
    gold = {}
    for line in need(WD_NT).read_text().splitlines():
        match = _P646.match(line)
        if match and f"m.{match.group(2)}" in present:
            gold[f"m.{match.group(2)}"] = match.group(1)
    return gold


def without_p646(directory: Path) -> Path:
    """The Wikidata fixture with every P646 triple removed (identifier links hidden)."""
    path = directory / "wikidata_no_p646.nt"
    path.write_text("".join(line for line in need(WD_NT).read_text().splitlines(keepends=True) if "/prop/direct/P646>" not in line))
    return path


@asynccontextmanager
async def fed_kgs(wikidata: Path | None = None, **options):
    """Both fixture KGs on embedded stores, named freebase and wikidata."""
    async with KG.open(f"file:{need(FB_NT)}", **options) as fb, KG.open(f"file:{wikidata or need(WD_NT)}", **options) as wd:
        yield {"freebase": fb, "wikidata": wd}


def scores(found: list[Alignment], gold: dict[str, str]) -> tuple[float, float, int]:
    """(precision, recall, predicted) of mid↔QID links against the gold mapping."""
    pairs = {a.ids["freebase"]: a.ids["wikidata"] for a in found}
    correct = sum(gold.get(mid) == qid for mid, qid in pairs.items())
    return correct / max(len(pairs), 1), correct / len(gold), len(pairs)


def flat(found: dict[str, list[Alignment]]) -> list[Alignment]:
    return [a for alignments in found.values() for a in alignments]


# -- identifiers -----------------------------------------------------------------------------------
async def test_p646_both_ways_is_exact_and_batched():
    mids, qids = fixture_ids()
    gold = gold_mapping()
    assert len(gold) == 320
    async with fed_kgs(cache=False) as kgs:
        aligner = Aligner(kgs, methods=("p646",), cache=False)
        forward = flat(await aligner.align(mids, kg="freebase"))
        assert kgs["wikidata"].stats["queries"] == math.ceil(len(mids) / kgs["wikidata"].batch_size)
        assert kgs["freebase"].stats["queries"] == 0
        backward = flat(await aligner.align(qids, kg="wikidata"))
    assert scores(forward, gold) == (1.0, 1.0, 320)
    assert {(a.method, a.confidence) for a in forward + backward} == {("p646", 1.0)}
    # QID -> mid finds every P646 claim; those whose mid is in the Freebase fixture are exactly the gold
    assert {a.ids["freebase"]: a.ids["wikidata"] for a in backward if a.target in gold} == gold


def test_p646_values_are_validated():
    from kgfed.sparql.dialects import FREEBASE

    assert FREEBASE.from_external_form("/m/0d060g") == "m.0d060g"
    assert FREEBASE.from_external_form("/g/11b6gq6dl2") == "g.11b6gq6dl2"
    for bad in ("m.0d060g", "/m/0D060G", '/m/0abc" }', "/m/", "/x/0abc", "", None):
        assert FREEBASE.from_external_form(bad) is None


async def test_alignment_is_cached_beside_the_response_cache():
    async with fed_kgs() as kgs:
        first = await Aligner(kgs).align(["m.06w2sn5", "Q16", "m.0zzzzz"])
    async with fed_kgs() as kgs:
        again = await Aligner(kgs).align(["m.06w2sn5", "Q16", "m.0zzzzz"])
        assert kgs["freebase"].stats["queries"] == kgs["wikidata"].stats["queries"] == 0
    assert first == again
    assert first["m.06w2sn5"] == [Alignment("freebase", "m.06w2sn5", "wikidata", "Q34086", "p646", 1.0)]
    assert first["Q16"][0].target == "m.0d060g" and first["m.0zzzzz"] == []


# -- labels (P646 hidden) --------------------------------------------------------------------------
async def test_label_alignment_with_p646_hidden(tmp_path):
    mids, qids = fixture_ids()
    gold = gold_mapping()
    async with fed_kgs(without_p646(tmp_path), cache=False) as kgs:
        found = await Aligner(kgs, methods=("label", "p646"), cache=False).align_pools({"freebase": mids, "wikidata": qids})
    assert {a.method for a in found} == {"label"}  # no identifier link is left to find
    precision, recall, _ = scores(found, gold)
    assert precision >= 0.98 and recall >= 0.98, (precision, recall)


async def test_label_prefers_a_label_over_an_alias_and_refuses_shared_names(tmp_path):
    async with fed_kgs(without_p646(tmp_path), cache=False) as kgs:
        found = await Aligner(kgs, methods=("label",), cache=False).align(["m.02h40lc", "m.01cmp9", "m.0chghy"])
    # "English": label of Q1860 (the language), alias of Q42406 (the people)
    assert [(a.target, a.confidence) for a in found["m.02h40lc"]] == [("Q1860", 0.9)]
    # "Chicago" and "Australia" each name two Wikidata items: neither is merged
    assert found["m.01cmp9"] == [] and found["m.0chghy"] == []


def write_nt(path: Path, triples: list[tuple[str, str, str]]) -> Path:
    path.write_text("".join(f"<{s}> <{p}> {o} .\n" for s, p, o in triples))
    return path


FB = "http://rdf.freebase.com/ns/"
WD = "http://www.wikidata.org/entity/"
NAME = FB + "type.object.name"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"


@asynccontextmanager
async def twin_kgs(tmp_path: Path, fb_names: dict[str, str], wd_names: dict[str, str]):
    """Tiny KGs holding just names (no P646): to test ambiguity in isolation."""
    fb = write_nt(tmp_path / "fb.nt", [(FB + m, NAME, f'"{n}"@en') for m, n in fb_names.items()])
    wd = write_nt(tmp_path / "wd.nt", [(WD + q, LABEL, f'"{n}"@en') for q, n in wd_names.items()])
    async with KG.open(f"file:{fb}", cache=False) as a, KG.open(f"file:{wd}", cache=False) as b:
        yield {"freebase": a, "wikidata": b}


@pytest.mark.parametrize("fb_names, wd_names", [
    ({"m.0spring1": "Springfield", "m.0spring2": "Springfield"}, {"Q151076": "Springfield"}),
    ({"m.0spring1": "Springfield"}, {"Q151076": "Springfield", "Q28515": "Springfield"}),
])
async def test_two_entities_with_one_name_are_never_both_merged(tmp_path, fb_names, wd_names):
    async with twin_kgs(tmp_path, fb_names, wd_names) as kgs:
        aligner = Aligner(kgs, methods=("p646", "label"), cache=False)
        assert await aligner.align_pools({"freebase": list(fb_names), "wikidata": list(wd_names)}) == []
        assert flat(await aligner.align(list(fb_names) + list(wd_names))) == []


def test_exclusive_keeps_identifiers_and_drops_contested_names():
    p646 = Alignment("fb", "m.01", "wd", "Q1", "p646", 1.0)
    contested = [Alignment("fb", "m.02", "wd", "Q2", "label", 0.9), Alignment("fb", "m.03", "wd", "Q2", "sbert", 0.95)]
    loser = Alignment("fb", "m.04", "wd", "Q1", "label", 0.9)
    assert exclusive([p646, *contested, loser]) == [p646]


def test_best_matches_needs_threshold_margin_and_mutuality():
    table = [[0.95, 0.50], [0.80, 0.91], [0.20, 0.89]]
    assert best_matches(table, 0.9, 0.05, mutual=False) == [(0, 0, 0.95), (1, 1, 0.91)]
    assert best_matches(table, 0.85, 0.05, mutual=False) == [(0, 0, 0.95), (1, 1, 0.91), (2, 1, 0.89)]
    assert best_matches(table, 0.85, 0.05, mutual=True) == [(0, 0, 0.95)]  # rows 1 and 2 contest column 1
    assert best_matches([], 0.9, 0.05, mutual=True) == []


# -- bad input -------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["m.0d3k14 }", "Q42; DROP ALL", "<http://x>", "", "Q-1", "m.", "ns:m.0d3k14", 42])
async def test_hostile_ids_raise_before_any_query(bad):
    async with fed_kgs(cache=False) as kgs:
        with pytest.raises(InvalidIdentifier) as error:
            await Aligner(kgs).align(["Q42", bad])
        assert kgs["freebase"].stats["queries"] == kgs["wikidata"].stats["queries"] == 0
    assert "\n" not in str(error.value) and "expected" in str(error.value)


async def test_unknown_ids_and_wrong_kg_align_to_nothing_or_fail_clearly():
    async with fed_kgs(cache=False) as kgs:
        aligner = Aligner(kgs, cache=False)
        found = await aligner.align(["m.0zzzzz", "Q999999999"])
        assert found == {"m.0zzzzz": [], "Q999999999": []}
        with pytest.raises(InvalidIdentifier, match="KG 'freebase'"):
            await aligner.align(["Q42"], kg="freebase")
        with pytest.raises(KgfedError, match="unknown KG 'dbpedia'"):
            await aligner.align(["Q42"], kg="dbpedia")
        with pytest.raises(KgfedError, match="unknown alignment method 'magic'"):
            Aligner(kgs, methods=("p646", "magic"))


# -- SBERT -----------------------------------------------------------------------------------------
def sbert_embedder(tmp_path: Path):
    """The embedder the aligner scores with: the caller's (a session's in a run), never one it makes up."""
    from kgfed.engine.toolbox.embeddings import Embedder

    return Embedder(tmp_path / "emb")


async def test_sbert_without_an_embedder_is_left_out_by_default_and_refused_when_named():
    async with fed_kgs(cache=False) as kgs:
        assert Aligner(kgs, cache=False).methods == ("p646", "label")
        assert Aligner(kgs, embedder=object(), cache=False).methods == ("p646", "label", "sbert")
        with pytest.raises(KgfedError, match="SBERT alignment needs an embedder") as caught:
            Aligner(kgs, methods=("label", "sbert"), cache=False)
        assert "\n" not in str(caught.value)


@pytest.mark.embeddings
async def test_sbert_alignment_with_p646_hidden(tmp_path):
    mids, qids = fixture_ids()
    gold = gold_mapping()
    async with fed_kgs(without_p646(tmp_path), cache=False) as kgs:
        embedder = sbert_embedder(tmp_path)
        alone = await Aligner(kgs, methods=("sbert",), embedder=embedder, cache=False).align_pools({"freebase": mids, "wikidata": qids})
        both = await Aligner(kgs, methods=("label", "sbert"), embedder=embedder, cache=False).align_pools({"freebase": mids, "wikidata": qids})
    assert {a.method for a in alone} == {"sbert"} and all(0.9 <= a.confidence <= 1.0 + 1e-6 for a in alone)
    precision, recall, _ = scores(alone, gold)
    assert precision >= 0.98 and recall >= 0.98, (precision, recall)
    precision, recall, _ = scores(both, gold)
    assert precision >= 0.98 and recall >= 0.98, (precision, recall)


@pytest.mark.embeddings
async def test_sbert_resolves_a_shared_name_only_by_description(tmp_path):
    fb_names = {"m.0spring1": "Springfield"}
    wd_names = {"Q151076": "Springfield", "Q28515": "Springfield"}
    embedder = sbert_embedder(tmp_path)
    async with twin_kgs(tmp_path, fb_names, wd_names) as kgs:  # no descriptions: nothing to go by
        assert flat(await Aligner(kgs, embedder=embedder, cache=False).align(list(fb_names))) == []
    desc = "http://rdf.freebase.com/ns/common.topic.description"
    sdesc = "http://schema.org/description"
    fb = write_nt(tmp_path / "fb2.nt", [(FB + "m.0spring1", NAME, '"Springfield"@en'),
                                        (FB + "m.0spring1", desc, '"Springfield is the capital city of Illinois."@en')])
    wd = write_nt(tmp_path / "wd2.nt", [(WD + "Q28515", LABEL, '"Springfield"@en'), (WD + "Q28515", sdesc, '"capital city of Illinois"@en'),
                                        (WD + "Q151076", LABEL, '"Springfield"@en'), (WD + "Q151076", sdesc, '"city in Massachusetts"@en')])
    async with KG.open(f"file:{fb}", cache=False) as a, KG.open(f"file:{wd}", cache=False) as b:
        found = await Aligner({"freebase": a, "wikidata": b}, threshold=0.75, embedder=embedder, cache=False).align(["m.0spring1"])
    assert [(x.target, x.method) for x in found["m.0spring1"]] == [("Q28515", "sbert")]


# -- CLI -------------------------------------------------------------------------------------------
def fixture_endpoints() -> list[str]:
    return ["--endpoint", f"freebase=file:{need(FB_NT)}", "--endpoint", f"wikidata=file:{need(WD_NT)}"]


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    from kgfed.engine.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_align_json_rows(capsys):
    code, out, err = run_cli(capsys, "align", "m.06w2sn5", "Q16", "m.0zzzzz", "--kg", "freebase,wikidata",
                             *fixture_endpoints(), "--methods", "p646,label", "--json")
    assert code == 0, err
    rows = {r["source"]: r for r in json.loads(out)}
    assert rows["m.06w2sn5"] == {"source_kg": "freebase", "source": "m.06w2sn5", "label": "Justin Bieber", "target_kg": "wikidata",
                                 "target": "Q34086", "target_label": "Justin Bieber", "method": "p646", "confidence": 1.0}
    assert rows["Q16"]["target"] == "m.0d060g" and rows["m.0zzzzz"]["target"] is None and rows["m.0zzzzz"]["method"] is None


def test_cli_align_on_the_demo_kgs_by_default(capsys):
    code, out, _ = run_cli(capsys, "align", "m.0282x", "--methods", "p646", "--json")
    assert code == 0 and [(r["target_kg"], r["target"]) for r in json.loads(out)] == [("wikidata", "Q42")]


@pytest.mark.parametrize("argv, message", [
    (["align", "m.0d3k14 } DROP"], "invalid entity id"),
    (["align", "Q42", "--endpoint", "file:/x.nt", "--endpoint", "file:/y.nt"], "names no KG"),
    (["align", "Q42", "--kg", "wikidata", "--endpoint", "freebase=file:/x.nt"], "which --kg does not list"),
    (["align", "Q42", "--kg", "fb2,wikidata"], "no endpoint for KG 'fb2'"),
    (["align", "Q42", "--kg", "wiki data"], "invalid KG name"),
    (["align", "Q42", "--kg", "freebase,freebase"], "KG named twice"),
    (["align", "Q42", "--methods", "p646,magic"], "unknown alignment method"),
    (["align", "Q42", "--endpoint", "wikidata=file:/nonexistent.nt"], "no RDF file"),
])
def test_cli_align_bad_input_is_one_line(capsys, argv, message):
    code, _, err = run_cli(capsys, *argv)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and message in lines[0], err


def test_open_kgs_is_reusable_with_a_single_bare_endpoint():
    import argparse

    from kgfed.engine.cli.federation import kg_names, open_kgs

    args = argparse.Namespace(kg="wikidata", endpoint=f"file:{need(WD_NT)}", cache_dir=None, no_cache=True, offline=False,
                              timeout=5.0, concurrency=None, user_agent=None)
    kgs = open_kgs(args)
    assert list(kgs) == ["wikidata"] and kgs["wikidata"].dialect.name == "wikidata" and str(WD_NT.resolve()) in kgs["wikidata"].endpoint.name
    assert kg_names(argparse.Namespace(kg=None, endpoint=None)) == ["freebase", "wikidata"]
    assert kg_names(argparse.Namespace(kg=None, endpoint=["fb=qlever-freebase"])) == ["fb"]
