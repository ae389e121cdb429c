"""The session (`kgfed.engine.session.Session`): one HttpClient, KG set, store set, LLM, embedder and text
source per run, opened once and closed once, and obtained from it by the CLI, the MCP server and the harness."""
from __future__ import annotations

import re

import pytest

from kgfed.cache.root import DiskStore
from kgfed.endpoints.client import HttpClient
from kgfed.endpoints.transport import MockTransport, Request, Response
from kgfed.engine.cli import main
from kgfed.engine.config import AlignOptions, CacheOptions, HttpOptions, KGSpec, SessionSpec
from kgfed.engine.data import DEMO_WIKIDATA
from kgfed.engine.session import Session
from kgfed.sparql.errors import Closed, KgfedError

from .conftest import need
from .live_services import no_user_config  # noqa: F401 (autouse)

LIVE = (KGSpec("wikidata", "wikidata"), KGSpec("freebase", "qlever-freebase"))


def uses(kg) -> HttpClient:
    """The HttpClient a KG's endpoint sends with."""
    return kg.endpoint.inner.client


async def test_a_runs_wikipedia_source_and_kgs_share_one_client_with_contact_and_concurrency(tmp_path):
    http = HttpOptions(contact="me@example.org", concurrency=2)
    async with Session(SessionSpec(kgs=LIVE, http=http, cache=CacheOptions(root=str(tmp_path)), text="wikipedia",
                                   llm="openai:http://127.0.0.1:9/v1#test-model")) as session:
        client = session.client
        assert uses(session.kgs["wikidata"]) is uses(session.kgs["freebase"]) is client
        assert session.text.client is client and session.llm._http() is client
        assert client.contact == "me@example.org" and "me@example.org" in client.user_agent
        # --concurrency caps every host, Wikipedia's API and the query services alike
        assert client.limit_for("en.wikipedia.org") == client.limit_for("query.wikidata.org") == 2
        assert client.limit_for("qlever.dev") == 2
    assert client.closed


async def test_the_shared_client_carries_the_contact_to_both_wikipedia_and_the_kg(tmp_path):
    """Real requests through one client (a MockTransport in the services' shapes): both hosts see the
    contact in the User-Agent, and the one client counts both requests."""
    seen: list[tuple[str, str]] = []

    async def services(request: Request) -> Response:
        seen.append((request.host, request.headers.get("User-Agent", "")))
        if request.host == "en.wikipedia.org":
            return Response.of(200, {"batchcomplete": "", "query": {"pages": {"8091": {
                "pageid": 8091, "ns": 0, "title": "Douglas Adams", "extract": "Douglas Adams was an English author."}}}})
        asked = re.search(r"SELECT\s+(?:DISTINCT\s+)?((?:\?\w+\s*)+)WHERE", request.fields()["query"], re.IGNORECASE)
        return Response.of(200, {"head": {"vars": asked[1].replace("?", "").split()}, "results": {"bindings": []}},
                           content_type="application/sparql-results+json")

    http = HttpOptions(contact="me@example.org", concurrency=2)
    async with Session(SessionSpec(kgs=[KGSpec("wikidata", "wikidata")], http=http, cache=CacheOptions(enabled=False),
                                   text="wikipedia"), transport=MockTransport(services)) as session:
        pages = await session.text.pages(["Douglas Adams"])
        assert "English author" in pages["Douglas Adams"].text
        await session.kgs["wikidata"].sitelinks(["Q42"])
        assert {host for host, _ in seen} == {"en.wikipedia.org", "query.wikidata.org"}
        assert all("me@example.org" in agent for _, agent in seen)
        client = session.client
        assert client.stats["requests"] == len(seen) >= 2  # the one client sent them all
    assert client.closed


async def test_a_client_handed_in_is_used_and_left_open():
    client = HttpClient.from_options(HttpOptions(contact="me@example.org"))
    async with Session(SessionSpec(kgs=[KGSpec("wikidata", "wikidata")], cache=CacheOptions(enabled=False),
                                   text="wikipedia"), client=client) as session:
        assert session.client is client and uses(session.kgs["wikidata"]) is client and session.text.client is client
    assert not client.closed  # its owner's to close
    await client.aclose()


def test_kgfed_context_reaches_wikipedia_and_the_kg_over_one_client(monkeypatch, tmp_path, capsys):
    """`kgfed context` with --contact/--concurrency: the Wikipedia source and the KG it opens for a mid are
    on the session's one client (before, the text source had a client of its own without the contact)."""
    opened: list[Session] = []
    real_open = Session.open

    def spy(self: Session) -> Session:
        opened.append(self)
        return real_open(self)

    monkeypatch.setattr(Session, "open", spy)
    code = main(["context", "m.0282x", "-q", "Where did Douglas Adams study?", "--text-source", "wikipedia",
                 "--endpoint", "wikidata", "--contact", "me@example.org", "--concurrency", "2", "--ranker", "bm25",
                 "--offline", "--cache-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "offline" in err and err.count("\n") == 1, err  # nothing cached: a one-line offline miss
    (session,) = opened
    client = session._client
    assert session._text.client is client and uses(session.kgs["wikidata"]) is client
    assert client.contact == "me@example.org" and client.limit_for("en.wikipedia.org") == 2
    assert client.closed


async def test_lazy_parts_are_made_on_first_use_once_and_closed_once(tmp_path):
    session = Session(SessionSpec(kgs=[KGSpec("wikidata", f"file:{need(DEMO_WIKIDATA)}")],
                                  cache=CacheOptions(root=str(tmp_path)), text="demo"))
    assert session._llm is None and session._text is None and not session._embedder_made  # nothing made yet
    async with session:
        assert session.text is session.text and session.text.name == "demo"
        assert session.llm is session.llm and not session.llm.available  # llm "none"
        store = session.store("alignments")
        assert session.store("alignments") is store and isinstance(store.inner, DiskStore)  # guarded: cache.failsafe
        store.set("k", b"v")
        assert list(session.kgs) == ["wikidata"]
        labels = await session.kgs["wikidata"].labels(["Q42"])
        assert labels["Q42"].label == "Douglas Adams"
        client = session.client
    assert client.closed and session._stores == {}
    await session.aclose()  # closing twice is a no-op
    with pytest.raises(Closed, match="session is closed"):
        session.client  # noqa: B018
    with pytest.raises(Closed):
        session.open()


async def test_the_embedder_lives_under_the_cache_root_and_none_with_the_cache_off(tmp_path):
    pytest.importorskip("sentence_transformers")
    async with Session(SessionSpec(cache=CacheOptions(root=str(tmp_path)))) as session:
        assert session.embedder is session.embedder
        assert session.embedder._cache_arg is session.store("embeddings")  # the root's store (a Redis root holds it too)
    async with Session(SessionSpec(cache=CacheOptions(enabled=False))) as session:
        assert session.embedder._cache_arg is False  # vectors kept nowhere
        with pytest.raises(KgfedError, match="cache off"):
            session.store("alignments")


async def test_the_sessions_aligner_uses_its_store_and_embedder(tmp_path):
    kgs = [KGSpec("wikidata", f"file:{need(DEMO_WIKIDATA)}"), KGSpec("freebase")]
    async with Session(SessionSpec(kgs=kgs, cache=CacheOptions(root=str(tmp_path)))) as session:
        aligner = session.aligner(AlignOptions(methods=("p646", "label")))
        assert aligner.methods == ("p646", "label") and aligner.embedder is None  # no SBERT: no embedder asked for
        assert aligner.cache is not None and aligner.cache._cache is session.store("alignments")
        found = await aligner.align(["Q42"])
        assert [a.target for a in found["Q42"]] == ["m.0282x"]
        assert len(session.store("alignments")) >= 1  # stored in the session's store
        one_off = session.aligner(AlignOptions(), methods=("label",))
        assert one_off.methods == ("label",)


def test_a_broken_kg_spec_is_one_line_and_leaves_nothing_open():
    session = Session(SessionSpec(kgs=[KGSpec("wikidata", "file:/nonexistent/kg.nt")]))
    with pytest.raises(KgfedError) as caught:
        session.open()
    assert "\n" not in str(caught.value)


async def test_the_mcp_engine_obtains_everything_from_its_session(tmp_path):
    from kgfed.engine.mcp.service import Engine, ServerOptions

    options = ServerOptions(kgs=(KGSpec("wikidata", "wikidata"),), http=HttpOptions(contact="me@example.org"),
                            cache=CacheOptions(root=str(tmp_path)), llm="openai:http://127.0.0.1:9/v1#test-model",
                            llm_concurrency=24)
    engine = Engine.open(options)
    try:
        client = engine.session.client
        assert uses(engine.kgs["wikidata"]) is client
        assert (await engine.text_source()).client is client  # Wikipedia beside a live endpoint
        await engine.method("tog", 2, 2)
        assert engine.session.llm._http() is client  # the LLM is no longer a politeness domain of its own
        assert client.limit_for("127.0.0.1:9") == 24  # its --llm-concurrency raised the shared client's cap for its host
        assert client.limit_for("query.wikidata.org") == 5  # the KGs' hosts keep theirs
    finally:
        await engine.aclose()
    assert client.closed


async def test_sbert_ranking_without_an_embedder_is_a_clear_error():
    from kgfed.engine.text.passages import rank

    with pytest.raises(KgfedError, match="SBERT ranking needs an embedder"):
        await rank("q", ["a", "b"], ranker="sbert")
    ranked = await rank("dogs", ["dogs bark", "cats purr"], ranker="bm25")  # BM25 needs none
    assert ranked[0][0] == 0 and ranked[0][1] > ranked[1][1]


async def test_the_old_engine_constructor_is_refused_in_0_3():
    from kgfed.engine.config import close_kgs, open_kgs
    from kgfed.engine.mcp.service import Engine, ServerOptions

    options = ServerOptions(kgs=(KGSpec("wikidata", f"file:{need(DEMO_WIKIDATA)}"),), cache=CacheOptions(enabled=False))
    kgs = open_kgs(list(options.kgs), http=options.http, cache=options.cache)
    try:
        with pytest.raises(KgfedError, match=r"^Engine\(options, KGs\) was removed in kgfed 0\.3\.0: use Engine\.open"):
            Engine(options, kgs)
    finally:
        await close_kgs(kgs)


async def test_the_llm_on_the_sessions_client_keeps_its_own_retries():
    """An OpenAI-compatible LLM shares the run's client but retries a failing call LLM_RETRIES times,
    not the KG queries' count; the KGs keep the client's."""
    from kgfed.engine.toolbox.llm_providers import LLM_RETRIES
    from kgfed.sparql.errors import LLMError

    hits: dict[str, int] = {}

    async def down(request: Request) -> Response:
        hits[request.host] = hits.get(request.host, 0) + 1
        return Response.of(502, {"error": {"message": "bad gateway"}})

    async with Session(SessionSpec(http=HttpOptions(contact="me@example.org"), llm="openai:http://llm.test/v1#m",
                                   cache=CacheOptions(enabled=False)), transport=MockTransport(down)) as session:
        with pytest.raises(LLMError, match="gave up after 3 attempts"):
            await session.llm.complete("hi", temperature=0.0)
        assert hits == {"llm.test": LLM_RETRIES + 1} and session.client.retries == 4


async def test_the_kgs_of_a_session_share_one_response_cache_closed_with_them(tmp_path):
    from kgfed.cache.responses import ResponseCache
    from kgfed.engine.data import DEMO_FREEBASE

    specs = [KGSpec("wikidata", f"file:{need(DEMO_WIKIDATA)}"), KGSpec("freebase", f"file:{need(DEMO_FREEBASE)}")]
    async with Session(SessionSpec(kgs=specs, cache=CacheOptions(root=str(tmp_path)))) as session:
        wd, fb = session.kgs["wikidata"], session.kgs["freebase"]
        shared = wd.endpoint.cache
        assert shared is not None and fb.endpoint.cache is shared  # one store, one writer thread, for the run
        assert (await wd.labels(["Q42"]))["Q42"].label == "Douglas Adams" and await fb.relations("m.0282x")
        sent = wd.stats["sent"] + fb.stats["sent"]
    assert shared._closed  # flushed and closed after the KGs
    assert len(ResponseCache(tmp_path)) == sent >= 2  # every answer of both KGs stored in the one cache


async def test_the_kgs_of_a_session_share_its_one_response_cache_closed_after_them(tmp_path):
    """One `ResponseCache` per session (before, each KG opened its own over the same root)."""
    kgs = [KGSpec("wikidata", f"file:{need(DEMO_WIKIDATA)}"), KGSpec("freebase")]
    async with Session(SessionSpec(kgs=kgs, cache=CacheOptions(root=str(tmp_path)))) as session:
        responses = session.kgs["wikidata"].endpoint.cache
        assert responses is not None and session.kgs["freebase"].endpoint.cache is responses
        assert (await session.kgs["wikidata"].labels(["Q42"]))["Q42"].label == "Douglas Adams"
        added = session.add_kg(KGSpec("wd2", f"file:{need(DEMO_WIKIDATA)}"))
        assert added.endpoint.cache is responses  # a KG added later borrows it too
        assert not responses._closed
    assert responses._closed  # closed once, by the session, after its KGs


async def test_kg_open_alone_is_a_one_kg_session_that_owns_its_client_and_cache(tmp_path):
    from kgfed.engine.kg.facade import KG

    async with KG.open(f"file:{need(DEMO_WIKIDATA)}", cache=CacheOptions(root=str(tmp_path))) as kg:
        responses, client = kg.endpoint.cache, kg._client
        assert responses is not None and client is not None  # its own, built through the one builders
    assert responses._closed and client.closed


def test_the_session_spec_is_frozen_picklable_and_checked_in_one_line():
    import dataclasses
    import pickle

    spec = SessionSpec(kgs=[KGSpec("wikidata", "wikidata")], http=HttpOptions(timeout=9, query_memory_mb=200))
    assert spec.kgs == (KGSpec("wikidata", "wikidata"),) and pickle.loads(pickle.dumps(spec)) == spec
    assert (spec.query_bounds.timeout, spec.query_bounds.memory_mb) == (9.0, 200)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.http = HttpOptions()  # type: ignore[misc]
    for bad, message in ((lambda: SessionSpec(http={"timeout": 5}), "got dict where HttpOptions belongs"),  # type: ignore[arg-type]
                         (lambda: SessionSpec(kgs=KGSpec("wikidata")), "tuple of KGSpec"),  # type: ignore[arg-type]
                         (lambda: SessionSpec(kgs=(KGSpec("a", "file:x.nt"), KGSpec("a", "file:y.nt"))), "named twice"),
                         (lambda: Session({"kgs": ()}), "Session takes a SessionSpec, not dict")):  # type: ignore[arg-type]
        with pytest.raises(KgfedError, match=message) as caught:
            bad()
        assert "\n" not in str(caught.value)


def test_kg_names_checks_the_kgs_and_leaves_the_parsed_options_as_they_were():
    """Before, `kg_names` folded --dialect into --kg/--endpoint by writing strings back into `args`."""
    import argparse

    from kgfed.engine.cli.federation import kg_names
    from kgfed.engine.cli.options import session_spec

    args = argparse.Namespace(kg=None, endpoint=["fb=file:fb.nt"], dialect="freebase", partial=None, fallback=None)
    assert kg_names(args) == ["fb"]
    assert (args.kg, args.endpoint, args.dialect) == (None, ["fb=file:fb.nt"], "freebase")
    assert session_spec(args).kgs == (KGSpec("fb", "file:fb.nt", "freebase"),)


async def test_the_runs_topic_and_option_checks_open_a_session_of_the_run_spec(monkeypatch):
    """The multi-worker topic check and the option check go through a Session (before, `open_kgs` each)."""
    from kgfed.engine.harness.datasets import Question
    from kgfed.engine.harness.runner import RunSpec, _check_run_topics, check_options

    opened: list[Session] = []
    real_open = Session.open

    def spy(self: Session) -> Session:
        opened.append(self)
        return real_open(self)

    monkeypatch.setattr(Session, "open", spy)
    spec = RunSpec("tog", kgs=(KGSpec("wikidata", f"file:{need(DEMO_WIKIDATA)}"),), cache=CacheOptions(enabled=False))
    await check_options(spec)
    await _check_run_topics(spec, [Question("q1", "who is Douglas Adams?", {"wikidata": {"Q42": "Douglas Adams"}}, [])])
    assert [s.spec.kgs for s in opened] == [spec.kgs, spec.kgs] and all(s._closed for s in opened)
    assert opened[1].spec == spec.session_spec()
