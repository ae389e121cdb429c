"""Wikipedia text sources: real recorded API answers replayed, a misbehaving local server, JSONL extracts."""
from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import parse_qs, urlsplit

import pytest
import vcr
from aiohttp import web
from aiohttp.test_utils import TestServer

from kgfed.cache.recording import recording
from kgfed.endpoints.client import HttpClient
from kgfed.cache.root import DiskStore
from kgfed.endpoints.wikipedia import JsonCache, JsonlSource, WikipediaSource, title_problem
from kgfed.sparql.errors import KgfedError, OfflineMiss, RateLimited

from . import httpfaults as hf
from .conftest import HTTP_DIR, SHARED, need

API = HTTP_DIR / "wikipedia-api"
PYTHON = "Python_(programming_language)"
EXTRACT_CASSETTES = ["TestVcrAsyncWikiExtracts.test_extracts.json", "TestVcrAsyncPageExtractProps.test_summary.json"]


def cassette_params(name: str) -> dict[str, str]:
    """The query parameters of the (single) request recorded in a cassette."""
    (interaction,) = json.loads(need(API / name).read_text())["interactions"]
    return {k: v[0] for k, v in parse_qs(urlsplit(interaction["request"]["uri"]).query).items()}


@asynccontextmanager
async def opened(client: HttpClient | None = None, **kw) -> AsyncIterator[WikipediaSource]:
    """A source over its own test client (fast retries), both closed afterwards."""
    async with client or HttpClient(retries=1, backoff=0.01) as c, WikipediaSource(c, **{"cache": False, **kw}) as wiki:
        yield wiki


def source(**kw):
    """The recordings were made without maxlag: the client must send exactly their parameters."""
    return opened(**{"maxlag": None, **kw})


# -- replayed recordings ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", EXTRACT_CASSETTES)
async def test_recorded_extract_replays_with_normalised_title(name):
    assert cassette_params(name) == {"format": "json", "redirects": "1", "action": "query", "prop": "extracts",
                                     "titles": PYTHON, "explaintext": "1", "exsectionformat": "wiki"}
    async with source() as wiki:
        with recording(API / name) as cassette:
            page = (await wiki.pages([PYTHON]))[PYTHON]
    assert cassette.play_count == 1
    assert (page.title, page.pageid, page.redirected_from) == ("Python (programming language)", 23862, (PYTHON,))
    assert page.exists and not page.missing and page.reason is None
    assert page.text.startswith("Python is a high-level, general-purpose programming language.")
    assert "\n== History ==\n" in page.text and len(page.text) > 30_000
    assert wiki.redirects == {PYTHON: "Python (programming language)"}


async def test_plain_vcr_replay_of_the_extract():
    """The cassettes replay as they are with vcrpy's own matcher too (method, URI, query)."""
    path = need(API / EXTRACT_CASSETTES[0])
    async with source() as wiki:
        with vcr.use_cassette(str(path), serializer="json", record_mode="none") as cassette:
            pages = await wiki.extracts([PYTHON])
    assert cassette.all_played and pages[PYTHON].text.count("==") > 20


INPROP = ["protection", "talkid", "watched", "watchers", "visitingwatchers", "notificationtimestamp", "subjectid",
          "url", "readable", "preload", "displaytitle", "varianttitles"]


@pytest.mark.parametrize("name,title,exists", [
    ("TestVcrAsyncPageExistence.test_exists_true.json", PYTHON, True),
    ("TestVcrAsyncPageExistence.test_exists_false.json", "NonExistentPage_WikiAPI_Test_12345", False),
])
async def test_recorded_page_existence(name, title, exists):
    assert cassette_params(name)["inprop"] == "|".join(INPROP)
    async with source() as wiki:
        with recording(API / name) as cassette:
            page = (await wiki.info([title], inprop=INPROP))[title]
    assert cassette.play_count == 1
    assert page.exists is exists and page.missing is (not exists) and page.text is None
    assert page.title == title.replace("_", " ")
    if exists:
        assert page.pageid == 23862 and page.reason is None
    else:
        assert page.pageid is None and page.reason == "no such page on en.wikipedia.org"


@pytest.mark.parametrize("name,limit", [("TestVcrAsyncPageMeta.test_search_meta.json", 3), ("TestVcrAsyncWikiSearch.test_default.json", 10)])
async def test_recorded_search_reports_hits_total_and_continuation(name, limit):
    assert cassette_params(name)["srlimit"] == str(limit)
    async with source() as wiki:
        with recording(API / name):
            found = await wiki.search("Python programming", limit)
    assert len(found.hits) == limit and found.total == 6045 and found.next_offset == limit
    assert found.hits[0].title == "Python (programming language)" and found.hits[0].pageid == 23862
    assert "<span" not in found.hits[0].snippet and found.hits[0].snippet.startswith("Python is a high-level")


async def test_answers_are_cached_by_url_and_params_then_served_offline(tmp_path):
    cache = JsonCache(DiskStore(tmp_path / "wiki"))
    async with source(cache=cache) as wiki:
        with recording(need(API / EXTRACT_CASSETTES[0])) as cassette:
            first = await wiki.pages([PYTHON])
            again = await wiki.pages([PYTHON])
    assert cassette.play_count == 1 and len(DiskStore(tmp_path / "wiki")) == 1 and first == again
    async with source(cache=JsonCache(DiskStore(tmp_path / "wiki")), offline=True, maxlag=5) as offline:  # maxlag is not part of the key
        assert (await offline.pages([PYTHON]))[PYTHON].text == first[PYTHON].text
        miss = (await offline.pages(["Douglas Adams"]))["Douglas Adams"]
        assert miss.error and miss.text is None and "--offline" in miss.reason
        with pytest.raises(OfflineMiss):
            await offline.extracts(["Douglas Adams"])


def test_the_text_cache_takes_a_store_and_opens_none_itself(tmp_path):
    from kgfed.endpoints.client import HttpClient

    with pytest.raises(KgfedError, match=r"JsonCache takes a store now.*open_store\(DIR, 'text'\)") as caught:
        JsonCache(tmp_path / "wiki")  # kgfed < 0.3's directory form
    assert "\n" not in str(caught.value) and not (tmp_path / "wiki").exists()
    with pytest.raises(KgfedError, match="cache=True.*open_store"):
        WikipediaSource(HttpClient(), cache=True)
    store = DiskStore(tmp_path / "text")
    wiki = WikipediaSource(HttpClient(), cache=store)  # a bare store is wrapped
    wiki.cache.set("k", {"title": "Douglas Adams"})
    assert store.get("k") == b'{"title":"Douglas Adams"}' and wiki.cache.directory == tmp_path / "text"
    store.close()


# -- a local server that misbehaves ----------------------------------------------------------------
@pytest.fixture
async def server():
    """`httpfaults.FaultServer` answering every path (Action API and REST) on 127.0.0.1."""
    srv = hf.FaultServer()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", srv.handle)
    async with TestServer(app, host="127.0.0.1") as test_server:
        srv.url = str(test_server.make_url("")).rstrip("/")
        yield srv


def local(server, **kw):
    return opened(api_url=f"{server.url}/w/api.php", rest_url=f"{server.url}/api/rest_v1", **kw)


def answer(pages: dict, **extra) -> dict:
    return {"batchcomplete": "", "query": {"pages": pages, **extra}}


@pytest.fixture
def maxlag() -> dict:
    """The real recorded MediaWiki maxlag error body (skips when the shared recordings are absent)."""
    return json.loads(need(HTTP_DIR / "wikidata-api" / "error-maxlag.json").read_text())
DOUGLAS = answer({"8091": {"pageid": 8091, "ns": 0, "title": "Douglas Adams", "extract": "Douglas Adams was an English author."}})


async def test_requests_carry_maxlag_and_the_user_agent(server):
    server.script = [hf.ok(DOUGLAS)]
    async with local(server, client=HttpClient(user_agent="kgfed-test/1 (me@example.org)")) as wiki:
        page = (await wiki.pages(["Douglas Adams"]))["Douglas Adams"]
    seen = server.seen[0]
    assert page.text == "Douglas Adams was an English author."
    assert seen.params["maxlag"] == "5" and seen.params["titles"] == "Douglas Adams" and "exintro" not in seen.params
    assert seen.headers["User-Agent"] == "kgfed-test/1 (me@example.org)"


async def test_identical_requests_in_flight_are_sent_once(server):
    server.script = [hf.ok(DOUGLAS, delay=0.2)]
    async with local(server) as wiki:
        first, second = await asyncio.gather(wiki.pages(["Douglas Adams"]), wiki.pages(["Douglas Adams"]))
    assert first == second and first["Douglas Adams"].text and len(server.seen) == 1


async def test_maxlag_error_body_waits_retry_after_then_retries(server, tmp_path, maxlag):
    assert maxlag["error"]["code"] == "maxlag"
    server.script = [hf.ok(maxlag, headers={"Retry-After": "1"}), hf.ok(DOUGLAS)]
    cache = JsonCache(DiskStore(tmp_path / "wiki"))
    started = time.monotonic()
    async with local(server, cache=cache) as wiki:
        page = (await wiki.pages(["Douglas Adams"]))["Douglas Adams"]
    assert time.monotonic() - started >= 0.95 and len(server.seen) == 2
    assert page.text and len(DiskStore(tmp_path / "wiki")) == 1  # the answer is cached, the lag error was not


async def test_persistent_maxlag_is_an_explained_page_and_a_rate_limit(server, maxlag):
    server.script = [hf.ok(maxlag, headers={"Retry-After": "0"})]
    async with local(server, lag_retries=2) as wiki:
        page = (await wiki.pages(["Douglas Adams"]))["Douglas Adams"]
        assert page.error and page.text is None and "maxlag=5" in page.reason and "lagged" in page.reason
        assert len(server.seen) == 3
        with pytest.raises(RateLimited, match="retry later"):
            await wiki.extracts(["Douglas Adams"])


async def test_429_with_retry_after_is_honoured(server):
    server.script = [hf.status(429, {"Retry-After": "1"}), hf.ok(DOUGLAS)]
    started = time.monotonic()
    async with local(server) as wiki:
        page = (await wiki.pages(["Douglas Adams"]))["Douglas Adams"]
    assert page.text and time.monotonic() - started >= 0.95 and len(server.seen) == 2


@pytest.mark.parametrize("body,expect", [
    (b'{"batchcomplete":"","query":{"pages":{"8091":{"title":"Douglas Ad', "malformed JSON"),
    (b"<html>Wikimedia Error</html>", "malformed JSON"),
    (b"[1, 2]", "not an object"),
    (b'{"query": "nonsense"}', "without a query object"),
])
async def test_malformed_bodies_give_explained_pages_never_crash_nor_cache(server, tmp_path, body, expect):
    server.script = [hf.raw(body, "application/json")]
    cache = JsonCache(DiskStore(tmp_path / "wiki"))
    async with local(server, cache=cache) as wiki:
        pages = await wiki.pages(["Douglas Adams", "Albert Einstein"])
    for page in pages.values():
        assert page.error and page.text is None and expect in page.reason and "\n" not in page.reason
    assert len(DiskStore(tmp_path / "wiki")) == 0  # a fresh view: the source closed its store


async def test_api_error_body_is_reported_not_cached(server, tmp_path):
    body = json.loads(need(HTTP_DIR / "wikidata-api" / "error.json").read_text())
    server.script = [hf.ok(body)]
    async with local(server, cache=JsonCache(DiskStore(tmp_path / "wiki"))) as wiki:
        page = (await wiki.pages(["Q0 page"]))["Q0 page"]
        assert "API error no-such-entity: Could not find such an entity" in page.reason and len(wiki.cache) == 0


async def test_missing_invalid_interwiki_and_redirects_are_explicit(server):
    server.script = [hf.ok(answer(
        {
            "-1": {"ns": 0, "title": "No such page 123", "missing": ""},
            "-2": {"title": "Talk:", "invalidreason": "The requested page title is empty or contains only the name of a namespace.", "invalid": ""},
            "736": {"pageid": 736, "ns": 0, "title": "Albert Einstein", "extract": "Albert Einstein was a physicist."},
        },
        normalized=[{"from": "albert_einstein", "to": "Albert einstein"}],
        redirects=[{"from": "Albert einstein", "to": "Albert Einstein"}],
        interwiki=[{"title": "fr:Paris", "iw": "fr"}],
    ))]
    titles = ["albert_einstein", "No such page 123", "Talk:", "fr:Paris", "Bad|title", ""]
    async with local(server, mode="intro") as wiki:
        pages = await wiki.pages(titles)
    assert list(pages) == titles and len(server.seen) == 1
    sent = server.seen[0].params
    assert sent["titles"] == "albert_einstein|No such page 123|Talk:|fr:Paris" and sent["exintro"] == "1" and sent["exlimit"] == "max"
    einstein = pages["albert_einstein"]
    assert (einstein.title, einstein.text, einstein.redirected_from) == ("Albert Einstein", "Albert Einstein was a physicist.", ("albert_einstein", "Albert einstein"))
    assert wiki.redirects == {"albert_einstein": "Albert Einstein"}
    assert pages["No such page 123"].missing and pages["No such page 123"].text is None
    assert pages["Talk:"].invalid and "empty" in pages["Talk:"].reason
    assert pages["fr:Paris"].invalid and "interwiki" in pages["fr:Paris"].reason
    assert pages["Bad|title"].invalid and "forbids" in pages["Bad|title"].reason  # never sent: it would split the batch
    assert pages[""].invalid and pages[""].reason == "empty title"


async def test_continuation_rounds_are_followed_and_merged(server):
    first = answer({"1": {"pageid": 1, "title": "A", "extract": "Text of A."}, "2": {"pageid": 2, "title": "B"}})
    first["continue"] = {"excontinue": 1, "continue": "||"}
    second = answer({"1": {"pageid": 1, "title": "A"}, "2": {"pageid": 2, "title": "B", "extract": "Text of B."}})
    server.script = [hf.ok(first), hf.ok(second)]
    async with local(server) as wiki:
        pages = await wiki.extracts(["A", "B"])  # whole-page extracts: the API sends one per round
    assert {t: p.text for t, p in pages.items()} == {"A": "Text of A.", "B": "Text of B."}
    assert "excontinue" not in server.seen[0].params
    assert server.seen[1].params["excontinue"] == "1" and server.seen[1].params["continue"] == "||"


async def test_endless_continuation_is_an_error_page(server, monkeypatch):
    import kgfed.endpoints.wikipedia as wikipedia

    monkeypatch.setattr(wikipedia, "MAX_CONTINUE_ROUNDS", 3)
    looping = {**DOUGLAS, "continue": {"excontinue": 1, "continue": "||"}}
    server.script = [hf.ok(looping)]
    async with local(server) as wiki:
        page = (await wiki.pages(["Douglas Adams"]))["Douglas Adams"]
    assert page.error and "continue" in page.reason and len(server.seen) == 3


async def test_rest_summary_and_its_404(server):
    summary = {"type": "standard", "title": "Douglas Adams", "titles": {"normalized": "Douglas Adams"}, "pageid": 8091,
               "wikibase_item": "Q42", "extract": "Douglas Noël Adams was an English author."}

    async def step(request):
        if request.path.endswith("/Douglas_Adams"):
            return web.json_response(summary)
        return web.json_response({"type": "https://mediawiki.org/wiki/HyperSwitch/errors/not_found", "title": "Not found."}, status=404)

    server.script = [step]
    async with local(server, mode="summary") as wiki:
        pages = await wiki.pages(["Douglas Adams", "No such page 123"])
    adams = pages["Douglas Adams"]
    assert (adams.title, adams.qid, adams.pageid, adams.text) == ("Douglas Adams", "Q42", 8091, summary["extract"])
    assert pages["No such page 123"].missing and pages["No such page 123"].text is None
    assert [s.params for s in server.seen] == [{}, {}]  # REST: no Action API parameters, no maxlag


async def test_qids_are_not_titles(server):
    async with local(server) as wiki:
        page = (await wiki.pages(["Q42"]))["Q42"]
    assert page.missing and "sitelinks" in page.reason and not server.seen


def test_title_problems():
    assert title_problem("Douglas Adams") is None and title_problem("C#") and title_problem("x" * 300)


# -- offline JSONL ---------------------------------------------------------------------------------
async def test_jsonl_source_finds_pages_by_qid_title_and_label():
    wiki = JsonlSource([need(SHARED / "wikipedia" / "extracts.jsonl")])
    pages = await wiki.pages(["Q23739", "Soap_opera", "soap opera", "Felty's syndrome", "Q1", "No such page"])
    assert pages["Q23739"].title == "Soap opera" and "The Archers" in pages["Q23739"].text
    assert pages["Soap_opera"].text == pages["soap opera"].text == pages["Q23739"].text
    assert pages["Felty's syndrome"].qid == "Q1404470" and pages["Felty's syndrome"].title == "Felty's syndrome"
    for key in ("Q1", "No such page"):
        assert pages[key].missing and pages[key].text is None and "extracts.jsonl" in pages[key].reason


async def test_jsonl_source_names_the_bad_line(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"qid": "Q1", "title": "Universe", "text": "All of space."}\n{"qid": "Q2", "title": "Earth"}\n')
    with pytest.raises(KgfedError, match=r"x.jsonl:2: not a JSON object with text"):
        await JsonlSource([path]).pages(["Q1"])
    with pytest.raises(KgfedError, match="cannot read extracts file"):
        await JsonlSource([tmp_path / "absent.jsonl"]).pages(["Q1"])
