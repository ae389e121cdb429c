"""Every live profile without network: the real client, endpoints and KG facade over scripted services in
the shapes WDQS (split graphs, robot-policy answers) and QLever (429 timeouts, timeout rejection) send."""
from __future__ import annotations

import json
import logging

import pytest

from kgfed.endpoints.client import HttpClient
from kgfed.endpoints.http import HttpEndpoint
from kgfed.endpoints.profiles import PROFILES, resolve_endpoint
from kgfed.endpoints.transport import MockTransport
from kgfed.endpoints.wikidata_full import SplitGraphEndpoint
from kgfed.engine.federation.align import Aligner
from kgfed.engine.cli import main
from kgfed.engine.kg import KG
from kgfed.engine.federation.subgraph import expand
from kgfed.sparql.errors import QueryTimeout, UserAgentRejected

from .live_services import PAPER, Services, no_user_config  # noqa: F401 (autouse)

CONTACT = "kgfed-tests@example.org"


def open_kg(services: Services, spec: str, **kw) -> KG:
    http = HttpClient(contact=kw.pop("contact", CONTACT), user_agent=kw.pop("user_agent", None),
                      transport=MockTransport(services), backoff=0.01)
    kg = KG.open(spec, http=http, cache=False, **kw)
    kg._test_client = http  # closed by the test
    return kg


async def close(kg: KG) -> None:
    await kg.aclose()
    await kg._test_client.aclose()


async def test_wikidata_is_the_main_graph_only_and_scholarly_items_are_elsewhere():
    services = Services()
    main_kg, scholarly_kg = open_kg(services, "wikidata"), open_kg(services, "wikidata-scholarly")
    try:
        assert await main_kg.relations(PAPER, "out") == []  # the split, as WDQS serves it: silently absent
        assert {r.relation for r in await scholarly_kg.relations(PAPER, "out")} == {"P31", "P50"}
        assert {r.relation for r in await main_kg.relations("Q42", "out")} == {"P31", "P646"}
    finally:
        await close(main_kg), await close(scholarly_kg)
    assert services.seen == {"query.wikidata.org": 2, "query-scholarly.wikidata.org": 1}


async def test_wikidata_full_answers_every_template_from_both_graphs():
    services = Services()
    kg = open_kg(services, "wikidata-full")
    try:
        assert isinstance(kg.endpoint.inner, SplitGraphEndpoint)
        out = {r.relation: r.label for r in await kg.relations(PAPER, "out")}
        assert set(out) == {"P31", "P50"}
        authors = await kg.neighbors(PAPER, "P50", "out")
        assert [(e.entity, e.label) for e in authors] == [("Q42", "Douglas Adams")]
        # Q42's incoming "author" edge lives only in the scholarly graph
        papers = await kg.neighbors("Q42", "P50", "in")
        assert [(e.entity, e.label) for e in papers] == [(PAPER, "On the Use of Towels in Interstellar Travel")]
        labels = await kg.labels(["Q42", PAPER])
        assert labels["Q42"].label == "Douglas Adams"  # from main, the side that holds it
        assert labels[PAPER].label.startswith("On the Use of Towels")  # from scholarly
        both = await kg.relations_many(["Q42", PAPER], "both")
        assert ("P50", "in") in {(r.relation, r.direction) for r in both["Q42"]}
    finally:
        await close(kg)
    assert services.seen["query.wikidata.org"] == services.seen["query-scholarly.wikidata.org"] > 0


async def test_alignment_and_expansion_work_over_wikidata_full(tmp_path):
    services = Services()
    fb = tmp_path / "fb.nt"
    fb.write_text('<http://rdf.freebase.com/ns/m.0282x> <http://rdf.freebase.com/ns/type.object.name> "Douglas Adams"@en .\n')
    wikidata = open_kg(services, "wikidata-full")
    freebase = KG.open(f"file:{fb}", cache=False)
    kgs = {"wikidata": wikidata, "freebase": freebase}
    try:
        found = await Aligner(kgs, methods=("p646",), cache=None).align(["m.0282x"])
        assert [(a.target, a.method) for a in found["m.0282x"]] == [("Q42", "p646")]
        merged = await expand(["Q42"], {"wikidata": wikidata}, hops=1, width=None,
                              aligner=Aligner({"wikidata": wikidata}, methods=(), cache=None))
        reached = {node.ids.get("wikidata") for node in merged.nodes}
        assert {"Q42", PAPER, "Q5"} <= reached  # the paper comes from the scholarly graph
    finally:
        await close(wikidata), await freebase.aclose()


async def test_qlever_serves_the_full_graph_and_never_gets_a_timeout_parameter():
    services = Services()
    kg = open_kg(services, "qlever-wikidata", timeout_ms=120_000)
    try:
        assert kg.dialect.search_mode == "exact"  # no mwapi on QLever
        assert {r.relation for r in await kg.relations(PAPER, "out")} == {"P31", "P50"}
    finally:
        await close(kg)
    assert services.sent and all("timeout" not in r.fields() for r in services.sent)


async def test_the_old_qlever_host_is_accepted_without_a_dialect():
    async with HttpClient(contact=CONTACT) as client:
        endpoint, dialect = resolve_endpoint("https://qlever.cs.uni-freiburg.de/api/freebase", client=client)
    assert dialect.name == "freebase" and isinstance(endpoint, HttpEndpoint) and endpoint.server == "qlever"
    services = Services()
    kg = open_kg(services, "https://qlever.cs.uni-freiburg.de/api/wikidata")
    try:
        assert [e.entity for e in await kg.neighbors(PAPER, "P50")] == ["Q42"]
    finally:
        await close(kg)
    assert services.seen == {"qlever.cs.uni-freiburg.de": 1}


async def test_qlever_429_timeout_is_a_query_timeout_not_a_rate_limit():
    services = Services(qlever_times_out="prop/direct/P50")
    kg = open_kg(services, "qlever-wikidata")
    try:
        with pytest.raises(QueryTimeout, match=r"time limit \(HTTP 429: Operation timed out\.\): ask a narrower query") as info:
            await kg.neighbors("Q42", "P50", "in")
        assert "\n" not in str(info.value) and "Last operation" not in str(info.value)
        assert services.seen["qlever.dev"] == 1  # no retry storm
        assert kg._test_client._paused_until == {}  # and no Retry-After pause: the next query goes at once
        assert [e.entity for e in await kg.neighbors("Q42", "P31")] == ["Q5"]
    finally:
        await close(kg)


@pytest.mark.parametrize("user_agent, status", [(None, 200), ("aiohttp/3.14.5", 403)])
async def test_wdqs_robot_policy_answers_are_errors_never_results(user_agent, status, caplog):
    services = Services()
    kg = open_kg(services, "wikidata", contact=None, user_agent=user_agent)
    try:
        with caplog.at_level(logging.WARNING, logger="kgfed.http"):
            for _ in range(2):  # not cached: asked again, fails again, once each (no retry loop)
                with pytest.raises(UserAgentRejected, match=rf"HTTP {status}: Please set a user-agent .*--contact") as info:
                    await kg.relations("Q42", "out")
                assert "\n" not in str(info.value)
    finally:
        await close(kg)
    assert services.seen["query.wikidata.org"] == 2
    warnings = [r.getMessage() for r in caplog.records if "no contact" in r.getMessage()]
    assert len(warnings) == 1 and "KGFED_CONTACT" in warnings[0]


async def test_the_contact_goes_into_the_user_agent_of_every_wikimedia_request(monkeypatch):
    monkeypatch.setenv("KGFED_CONTACT", "https://example.org/me")
    services = Services()
    kg = open_kg(services, "wikidata-full", contact=None)
    try:
        await kg.labels(["Q42"])
    finally:
        await close(kg)
    agents = {r.headers["User-Agent"] for r in services.sent}
    assert len(agents) == 1 and agents.pop().startswith("kgfed/") and len(services.sent) == 2
    assert all("(https://example.org/me) aiohttp/" in r.headers["User-Agent"] for r in services.sent)


def test_endpoints_listing_comes_from_the_profiles(capsys):
    assert main(["endpoints", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == list(PROFILES)
    by_name = {r["name"]: r for r in rows}
    assert by_name["wikidata"]["url"] == "https://query.wikidata.org/sparql" and by_name["wikidata"]["graph"].startswith("main")
    assert by_name["wikidata-scholarly"]["url"] == "https://query-scholarly.wikidata.org/sparql"
    assert by_name["wikidata-full"]["parts"] == ["wikidata", "wikidata-scholarly"]
    assert by_name["qlever-freebase"]["url"] == "https://qlever.dev/api/freebase"
    assert "https://qlever.cs.uni-freiburg.de/api/wikidata" in by_name["qlever-wikidata"]["aliases"]
    assert all(r["limits"] and r["dialect"] in ("wikidata", "freebase") for r in rows)


async def test_hypergraph_qualifiers_are_one_values_query_per_hop_with_the_per_pair_answers():
    from pathlib import Path

    from .live_services import CONTACT as AGENT_CONTACT, sparql_answer, store

    demo = Path(__file__).resolve().parents[1] / "engine" / "data" / "demo_wikidata.nt"
    graph = store(demo.read_bytes())
    sent = []

    def wdqs(request):
        sent.append(request)
        assert AGENT_CONTACT.search(request.headers["User-Agent"])
        return sparql_answer(graph, request.fields()["query"])

    pairs = [("Q42", "P26"), ("Q42", "P69"), ("Q42", "P19"), ("Q14623681", "P26")]
    http = HttpClient(contact=CONTACT, transport=MockTransport(wdqs))
    async with KG.open("wikidata", http=http, cache=False) as kg, KG.open(f"file:{demo}", cache=False) as local:
        batched = await kg.qualifiers(pairs)
        assert len(sent) == 1 and "VALUES (?e ?p ?ps)" in sent[0].fields()["query"]
        for pair in pairs:  # the same statements as the dialect's one-pair template finds, pair by pair
            one = (await local.select(local.dialect.qualifiers(*pair))).rows
            assert {st.id for st in batched[pair]} == {row["st"].value.rsplit("/", 1)[-1] for row in one}
    await http.aclose()
    spouse = next(st for st in batched[("Q42", "P26")] if st.value == "Q14623681")
    assert set(spouse.attributes) == {("start time", "1991-11-25"), ("end time", "2001-05-11")}


async def test_an_llm_free_method_answers_through_the_scholarly_graph_only_over_wikidata_full():
    from kgfed.engine.toolbox.llm import make_llm
    from kgfed.engine.methods import get_method

    question = "Who is the author of On the Use of Towels in Interstellar Travel?"
    topics = {"wikidata": {PAPER: "On the Use of Towels in Interstellar Travel"}}
    answers = {}
    for spec in ("wikidata-full", "wikidata"):
        kg = open_kg(Services(), spec, name="wikidata")
        try:
            method = get_method("tog")({"wikidata": kg}, make_llm("none"), pruning="bm25", depth=1)
            answers[spec] = (await method.answer(question, topics)).answer_ids
        finally:
            await close(kg)
    assert answers == {"wikidata-full": ["Q42"], "wikidata": []}
