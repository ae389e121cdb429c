"""What a dialect can do, asked instead of tested by type or name; the KG facade's batched capability
operations (sitelinks, qualifiers, cross-KG ids) on the real embedded stores, and the one-line error on a
dialect without them."""
from __future__ import annotations

import re

import pytest

from kgfed.engine.data import DEMO_WIKIDATA, default_endpoint
from kgfed.engine.kg import KG
from kgfed.engine.kg.model import Statement
from kgfed.sparql.dialects import FREEBASE, WIKIDATA, dialect_of
from kgfed.sparql.errors import InvalidIdentifier, KgfedError, Unsupported

from .conftest import CODEX_NT, FED_DIR, need

SITELINK = re.compile(r'^<(https://en\.wikipedia\.org/wiki/[^>]+)> <http://schema\.org/about> <http://www\.wikidata\.org/entity/(Q\d+)> \.$')
TITLE = re.compile(r'^<(https://en\.wikipedia\.org/wiki/[^>]+)> <http://schema\.org/name> "(.*)"@en \.$')
P646 = re.compile(r'^<http://www\.wikidata\.org/entity/(Q\d+)> <http://www\.wikidata\.org/prop/direct/P646> "/([mg])/([0-9a-z_]+)" \.$')


def demo_kgs():
    return (KG.open(default_endpoint("wikidata"), cache=False, batch_size=7),
            KG.open(default_endpoint("freebase"), cache=False))


def test_capabilities_are_answered_by_the_dialect():
    assert WIKIDATA.supports("sitelinks") and WIKIDATA.supports("qualifiers") and WIKIDATA.supports("links")
    assert not any(FREEBASE.supports(c) for c in ("sitelinks", "qualifiers", "links"))
    assert WIKIDATA.relation_labels and not FREEBASE.relation_labels  # ToG's prompt style: labels vs ids
    assert FREEBASE.compound_relations and not WIKIDATA.compound_relations
    assert WIKIDATA.live and not FREEBASE.live
    assert WIKIDATA.links_to(FREEBASE) and not FREEBASE.links_to(WIKIDATA) and not WIKIDATA.links_to(WIKIDATA)
    # a CVT: the synthetic id, or any nameless node, only where the dialect has CVTs
    assert FREEBASE.is_cvt("m.cvt_12", "named anyway") and FREEBASE.is_cvt("m.0abc", None)
    assert not FREEBASE.is_cvt("m.0abc", "Cambridge") and not WIKIDATA.is_cvt("Q42", None)
    assert FREEBASE.cvt_id("m.cvt_12") and not FREEBASE.cvt_id("m.0abc")
    # id ranking: numerically older Wikidata ids first (Q5 < Q42 < Q100, not by text), m. mids before g. ids
    assert sorted(["Q100", "Q42", "Q5", "L7"], key=WIKIDATA.id_rank) == ["Q5", "Q42", "Q100", "L7"]
    assert sorted(["g.11x", "m.0b", "m.0a"], key=FREEBASE.id_rank) == ["m.0a", "m.0b", "g.11x"]
    assert [getattr(dialect_of(i), "name", None) for i in ("m.0282x", "g.11b6gq6dl2", "Q42", "P31", "Douglas")] == \
        ["freebase", "freebase", "wikidata", None, None]
    assert FREEBASE.external_form("m.0282x") == "/m/0282x" and FREEBASE.from_external_form("/m/0282x") == "m.0282x"
    with pytest.raises(InvalidIdentifier, match="unknown capability 'sitelink'"):
        WIKIDATA.supports("sitelink")


def test_a_dialect_without_a_capability_says_so_in_one_line_naming_the_fix():
    for render in (lambda: FREEBASE.sitelinks(["m.0282x"]), lambda: FREEBASE.qualifiers_many([("m.0282x", "P26")]),
                   lambda: FREEBASE.linked_ids(["m.0282x"], WIKIDATA), lambda: WIKIDATA.linked_ids(["Q42"], WIKIDATA)):
        with pytest.raises(Unsupported) as info:
            render()
        message = str(info.value)
        assert isinstance(info.value, KgfedError) and "\n" not in message
    with pytest.raises(Unsupported, match=r"^KG 'fb' \(freebase dialect\) has no Wikipedia sitelinks: use a Wikidata-dialect KG"):
        FREEBASE.require("sitelinks", "fb")
    with pytest.raises(Unsupported, match="holds no wikidata ids"):
        WIKIDATA.require_link(WIKIDATA, "wd")


async def test_the_facade_refuses_before_sending_a_query():
    wd, fb = demo_kgs()
    async with wd, fb:
        before = fb.stats["queries"]
        with pytest.raises(Unsupported, match=r"^KG 'freebase' \(freebase dialect\) has no Wikipedia sitelinks"):
            await fb.sitelinks(["m.0282x"])
        with pytest.raises(Unsupported, match="has no statement qualifiers"):
            await fb.qualifiers([("m.0282x", "people.person.spouse_s")])
        with pytest.raises(Unsupported, match="has no cross-KG id links"):
            await fb.linked_ids(["m.0282x"], WIKIDATA)
        with pytest.raises(Unsupported, match="holds no wikidata ids"):
            await wd.by_linked_ids(["Q42"], WIKIDATA)
        assert await fb.has_qualifiers() is False and not fb.supports("sitelinks")
        assert fb.stats["queries"] == before  # nothing was asked
        with pytest.raises(InvalidIdentifier, match="invalid Wikidata id 'm.0282x'"):
            await wd.sitelinks(["m.0282x"])
        with pytest.raises(InvalidIdentifier, match="invalid Freebase id 'Q42'"):
            await wd.by_linked_ids(["Q42"], FREEBASE)


async def test_sitelinks_are_the_files_titles_in_batches():
    lines = DEMO_WIKIDATA.read_text().splitlines()
    article = {m.group(2): m.group(1) for m in map(SITELINK.match, lines) if m}
    title = {m.group(1): m.group(2) for m in map(TITLE.match, lines) if m}
    expected = {q: title[a] for q, a in article.items()}
    assert len(expected) == 58 and expected["Q42"] == "Douglas Adams"
    wd, fb = demo_kgs()
    async with wd, fb:
        asked = sorted(expected) + ["Q14623681", "Q4961791"]  # two items without an enwiki article
        before = wd.stats["queries"]
        found = await wd.sitelinks(asked)
        assert wd.stats["queries"] - before == -(-len(asked) // 7)  # one query per batch of 7
        assert list(found) == asked and not found.partial
        assert {q: t for q, t in found.items() if t} == expected
        assert found["Q14623681"] is None and found["Q4961791"] is None


async def test_cross_kg_ids_both_ways_match_the_p646_claims_of_the_fixture():
    path = need(FED_DIR / "wikidata.nt")
    claims = [(m.group(1), f"{m.group(2)}.{m.group(3)}") for m in map(P646.match, path.read_text().splitlines()) if m]
    assert len(claims) > 100
    qids = list(dict.fromkeys(q for q, _ in claims))
    mids = list(dict.fromkeys(m for _, m in claims))
    async with KG.open(f"file:{path}", dialect="wikidata", cache=False) as wd:
        forward = await wd.linked_ids(qids, FREEBASE)
        backward = await wd.by_linked_ids(mids + ["m.0zzzzz"], FREEBASE)
    assert {(q, m) for q, ms in forward.items() for m in ms} == set(claims)
    assert {(q, m) for m, qs in backward.items() for q in qs} == set(claims)
    assert backward["m.0zzzzz"] == ()


async def test_qualifiers_are_the_demo_statements_and_probe_once():
    wd, fb = demo_kgs()
    async with wd, fb:
        assert await wd.has_qualifiers() is True
        before = wd.stats["queries"]
        assert await wd.has_qualifiers() is True and wd.stats["queries"] == before  # probed once
        found = await wd.qualifiers([("Q42", "P26"), ("Q42", "P69"), ("Q42", "P19"), ("Q42", "P26")])
        assert wd.stats["queries"] - before == 1  # all pairs in one VALUES query
    assert list(found) == [("Q42", "P26"), ("Q42", "P69"), ("Q42", "P19")]
    spouse = next(st for st in found[("Q42", "P26")] if st.value == "Q14623681")
    assert isinstance(spouse, Statement) and spouse.kg == "wikidata" and spouse.value_label == "Jane Belson"
    assert set(spouse.attributes) == {("start time", "1991-11-25"), ("end time", "2001-05-11")}
    educated = next(st for st in found[("Q42", "P69")] if st.id == "Q42-37FA0816-6F61-5164-9FF7-F6EE6D451B53")
    assert educated.value == "Q691283" and set(educated.attributes) == {("start time", "1971-01-01"), ("end time", "1974-01-01")}
    assert found[("Q42", "P19")] == []  # a claim without a full statement in the file
    assert spouse.to_json()["attributes"] and spouse.to_json()["entity"] == "Q42"


async def test_a_wikidata_store_without_qualifiers_is_probed_not_queried():
    async with KG.open(f"file:{need(CODEX_NT)}", dialect="wikidata", cache=False) as kg:
        assert kg.supports("qualifiers") and await kg.has_qualifiers() is False


async def test_cvt_nodes_of_the_demo_freebase_are_recognised_by_the_dialect():
    wd, fb = demo_kgs()
    async with wd, fb:
        compound = [r for r in await fb.relations("m.0282x") if "|" in r.relation]
        assert compound
        edges = await fb.neighbors("m.0282x", compound[0].relation, compound[0].direction)
        vias = {v for e in edges for v in e.via}
        names = await fb.labels(sorted(vias))
    assert vias and all(FREEBASE.is_cvt(v, names[v].label) for v in vias)
    assert not any(WIKIDATA.is_cvt(v, names[v].label) for v in vias)


def test_the_blocking_twin_has_the_capability_operations():
    from kgfed.engine.kg.sync import SyncKG

    with SyncKG.open(default_endpoint("wikidata"), cache=False) as wd:
        assert wd.sitelinks(["Q42", "Q14623681"]) == {"Q42": "Douglas Adams", "Q14623681": None}
        assert wd.by_linked_ids(["m.0282x"], FREEBASE) == {"m.0282x": ("Q42",)}
    with SyncKG.open(default_endpoint("freebase"), cache=False) as fb:
        with pytest.raises(Unsupported, match="no Wikipedia sitelinks"):
            fb.sitelinks(["m.0282x"])
