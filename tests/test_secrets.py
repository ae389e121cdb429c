"""Secrets never shown: a password in an endpoint URL and API tokens appear in no message, log line,
cassette, cache key or entry, output file or stream (issue 28, item 3).

The endpoint is a real SPARQL server on 127.0.0.1 (aiohttp over an embedded pyoxigraph store of the
CWQ fixture) that answers only requests with the right `Authorization: Basic` header, so the tests
also show that the credentials still reach the server, as a header, after being cut from the URL.
"""
from __future__ import annotations

import asyncio
import base64
import json
import logging
import threading
from itertools import islice
from pathlib import Path

import pytest

from kgfed.cache.options import CacheOptions
from kgfed.cache.recording import recording
from kgfed.cache.responses import ResponseCache, cache_key
from kgfed.endpoints.client import HttpClient
from kgfed.endpoints.http import HttpEndpoint
from kgfed.endpoints.profiles import resolve_endpoint
from kgfed.engine.cli import main
from kgfed.engine.kg import KG
from kgfed.sparql import secrets
from kgfed.sparql.errors import HttpStatusError, KgfedError, UnknownEndpoint
from kgfed.sparql.secrets import RedactingFilter, credentials, redact, split_credentials, strip_credentials

from .conftest import CWQ_NT, need

USER = "kgreader"
PASSWORD = "p@ss:w0rd/S3cr3t-7f2a"  # '@', ':' and '/' must be percent-encoded in a URL
ENCODED = "p%40ss%3Aw0rd%2FS3cr3t-7f2a"
TOKEN = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
ENTITY = "g.11b6gq6dl2"  # the fixture's first subject
FORMS = (PASSWORD, ENCODED, TOKEN, "S3cr3t-7f2a")  # every way the password could leak


class AuthServer:
    """A SPARQL endpoint (GET/POST, SPARQL JSON) over the first lines of the CWQ fixture, in a thread,
    that answers 401 unless the request carries Basic credentials USER:PASSWORD; it records what it saw."""

    def __init__(self, lines: int = 3000):
        import pyoxigraph as ox

        self.store = ox.Store()
        with open(need(CWQ_NT), encoding="utf-8") as fh:
            self.store.load("".join(islice(fh, lines)), format=ox.RdfFormat.N_TRIPLES)
        self.seen: list[dict] = []
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    async def _answer(self, request):
        import pyoxigraph as ox
        from aiohttp import web

        self.seen.append({"url": str(request.url), "authorization": request.headers.get("Authorization")})
        if request.headers.get("Authorization") != f"Basic {TOKEN}":
            return web.Response(status=401, text="Unauthorized", headers={"WWW-Authenticate": 'Basic realm="kg"'})
        fields = dict(await request.post()) if request.method == "POST" else dict(request.query)
        try:
            body = self.store.query(fields["query"]).serialize(format=ox.QueryResultsFormat.JSON)
        except (SyntaxError, ValueError, OSError) as exc:
            return web.Response(status=400, text=f"Parse error: {exc}")
        return web.Response(body=body, content_type="application/sparql-results+json")

    def _serve(self) -> None:
        from aiohttp import web

        asyncio.set_event_loop(self.loop)
        app = web.Application()
        app.router.add_route("*", "/sparql", self._answer)
        self.runner = web.AppRunner(app)
        self.loop.run_until_complete(self.runner.setup())
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        self.ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(self.runner.cleanup())
        self.loop.close()

    def __enter__(self) -> AuthServer:
        self.thread.start()
        assert self.ready.wait(30)
        return self

    def __exit__(self, *exc) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    def url(self, password: str = ENCODED) -> str:
        return f"http://{USER}:{password}@127.0.0.1:{self.port}/sparql"


@pytest.fixture(scope="module")
def server():
    with AuthServer() as running:
        yield running


def leaks(text: str) -> list[str]:
    return [form for form in FORMS if form in text]


def files_holding_the_password(root: Path) -> list[str]:
    """Every file under `root` (SQLite databases included, read as bytes) that holds any form of it."""
    found = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if any(form.encode() in data for form in FORMS):
                found.append(str(path))
    return found


# -- the helpers -----------------------------------------------------------------------------------------
def test_credentials_are_split_off_a_url_and_remembered():
    url = f"http://{USER}:{ENCODED}@example.org:8890/sparql?default-graph-uri=http%3A%2F%2Ffreebase.com"
    assert credentials(url) == (USER, PASSWORD)
    clean, header = split_credentials(url)
    assert clean == "http://example.org:8890/sparql?default-graph-uri=http%3A%2F%2Ffreebase.com"
    assert header == f"Basic {TOKEN}" and base64.b64decode(header.split()[1]).decode() == f"{USER}:{PASSWORD}"
    assert strip_credentials("http://example.org/sparql") == "http://example.org/sparql"
    assert split_credentials("file:kg.nt") == ("file:kg.nt", None)
    # remembered: masked wherever it is quoted later, bare or encoded, even outside a URL
    message = f"server said: bad password {PASSWORD!r} (encoded {ENCODED}, header Basic {TOKEN})"
    assert leaks(redact(message)) == [] and "server said" in redact(message)


def test_tokens_from_the_environment_are_masked_bare(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-abcdefghijklmnop")
    monkeypatch.setenv("OPENAI_API_KEY", "plainkeywithoutprefix42")
    monkeypatch.setenv("KGFED_WIKIMEDIA_TOKEN", "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.payload")
    monkeypatch.setenv("KGFED_SOME_SWITCH", "plainkeywithoutprefix42-not-secret-name")
    text = ("keys: sk-ant-api03-abcdefghijklmnop plainkeywithoutprefix42 "
            "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.payload; Authorization: Bearer abcdefgh12345678")
    out = redact(text)
    assert "abcdefghijklmnop" not in out and "plainkeywithoutprefix42" not in out and "eyJ0eXAi" not in out
    assert "abcdefgh12345678" not in out and out.startswith("keys: ")


def test_log_records_are_redacted_by_the_filter():
    import io

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger("kgfed.test_secrets")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        secrets.remember(PASSWORD)
        logger.warning("GET %s failed for %s", f"http://{USER}:{ENCODED}@host/sparql", PASSWORD)
        try:
            raise ValueError(f"boom {PASSWORD}")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    assert leaks(stream.getvalue()) == [] and "GET http://***@host/sparql failed for ***" in stream.getvalue()


# -- the endpoint: credentials go as a header, never in names, keys or messages ----------------------------
async def test_the_endpoint_sends_a_basic_header_and_names_itself_without_credentials(server, tmp_path):
    async with HttpClient() as client:
        endpoint, _ = resolve_endpoint(server.url(), dialect="freebase", client=client)
        assert isinstance(endpoint, HttpEndpoint)
        assert endpoint.name == endpoint.url == f"http://127.0.0.1:{server.port}/sparql"
        result = await endpoint.select(f"SELECT ?p WHERE {{ <http://rdf.freebase.com/ns/{ENTITY}> ?p ?o }} LIMIT 3")
        assert len(result.rows) == 3
        assert server.seen[-1]["authorization"] == f"Basic {TOKEN}" and "@" not in server.seen[-1]["url"]

        wrong, _ = resolve_endpoint(server.url("not-the-password-123"), dialect="freebase", client=client)
        with pytest.raises(HttpStatusError) as caught:
            await wrong.select("SELECT ?s WHERE { ?s ?p ?o } LIMIT 1")
        assert "HTTP 401" in str(caught.value) and "not-the-password-123" not in str(caught.value)

    with pytest.raises(UnknownEndpoint) as caught:  # no dialect: the message names the URL without its userinfo
        resolve_endpoint(server.url())
    assert leaks(str(caught.value)) == [] and f"127.0.0.1:{server.port}/sparql" in str(caught.value)


async def test_the_cache_keys_on_the_url_without_credentials(server, tmp_path):
    query = f"SELECT ?p ?o WHERE {{ <http://rdf.freebase.com/ns/{ENTITY}> ?p ?o }}"
    bare = f"http://127.0.0.1:{server.port}/sparql"
    assert cache_key(server.url(), query) == cache_key(bare, query) == cache_key(server.url("other-password"), query)
    async with KG.open(server.url(), dialect="freebase", cache=CacheOptions(root=str(tmp_path))) as kg:
        first = await kg.select(query)
    sent = len(server.seen)
    # the same endpoint with another password (or none) is answered from the same entries, offline
    async with KG.open(server.url("another-password-99"), dialect="freebase", cache=CacheOptions(root=str(tmp_path), offline=True)) as kg:
        assert await kg.select(query) == first
    assert len(server.seen) == sent
    cache = ResponseCache(tmp_path)
    try:
        entry = cache.entry(cache_key(bare, query))
        assert entry is not None and entry.source == bare
    finally:
        cache.close()
    assert files_holding_the_password(tmp_path) == []


def test_a_cassette_recorded_from_a_url_with_userinfo_holds_no_credentials(server, tmp_path):
    """vcrpy's aiohttp stub records `str(URL)`, userinfo included, when a caller hands aiohttp such a URL."""
    import aiohttp

    cassette = tmp_path / "raw.yaml"

    async def fetch() -> int:
        async with aiohttp.ClientSession() as session:
            async with session.get(server.url(), params={"query": "ASK { ?s ?p ?o }"},
                                   headers={"Cookie": "session=abc12345"}) as resp:
                await resp.read()
                return resp.status

    with recording(cassette, "once"):
        assert asyncio.run(fetch()) == 200  # aiohttp turned the userinfo into a Basic header itself
    text = cassette.read_text(encoding="utf-8")
    assert f"127.0.0.1:{server.port}/sparql" in text and leaks(text) == []
    assert "authorization" not in text.lower() and "abc12345" not in text
    with recording(cassette, "none"):  # and it still replays (matching sees the same scrubbed request)
        assert asyncio.run(fetch()) == 200


# -- the whole command line: nothing shown, nothing stored ------------------------------------------------------
def test_a_password_in_an_endpoint_url_is_shown_and_stored_nowhere(server, tmp_path, capsys):
    cache, cassette = tmp_path / "cache", tmp_path / "run.yaml"
    url = server.url()
    common = ["--dialect", "freebase", "--cache-dir", str(cache)]
    codes, streams = [], []

    def run(*argv: str) -> None:
        codes.append(main(list(argv)))
        captured = capsys.readouterr()
        streams.append(captured.out + captured.err)

    try:
        run("relations", ENTITY, "-e", url, *common, "-vv", "--record", str(cassette))
        run("relations", ENTITY, "-e", url, *common, "--json", "--replay", str(cassette))
        run("query", f"SELECT ?p ?o WHERE {{ <http://rdf.freebase.com/ns/{ENTITY}> ?p ?o }} LIMIT 5", "-e", url, *common, "--json")
        run("query", "SELECT ?x WHERE { this is not sparql }", "-e", url, *common)                   # the server's 400
        run("relations", ENTITY, "-e", server.url("wrong-password-1234"), *common, "--no-cache")      # a 401 (the cache
        # keys on the URL without credentials: a cached answer would be served whatever the password)
        run("relations", ENTITY, "-e", url, "--cache-dir", str(cache))                               # no dialect
        run("relations", ENTITY, "-e", url.replace("http://", "htp://"), *common)                     # not a URL
        topics = tmp_path / "topics.jsonl"
        topics.write_text(json.dumps({"id": "q1", "topics": {"freebase": {ENTITY: "Knights"}}}) + "\n", encoding="utf-8")
        run("extract", str(topics), "-e", url, *common, "--hops", "1", "--out", str(tmp_path / "kg.nt"), "--no-progress")
        questions = tmp_path / "questions.jsonl"
        questions.write_text("".join(json.dumps({"id": f"q{i}", "question": f"what is {e}?", "answers": ["x"],
                                                 "topics": {"freebase": {e: e}}}) + "\n"
                                     for i, e in enumerate([ENTITY, "m.0bad", "g.11b6gq6dl2"])), encoding="utf-8")
        run("run", str(questions), "--method", "tests.test_disk_full:FirstRelation", "--param", "fail_below=3", "--kg",
            "freebase", "--endpoint", f"freebase=freebase@{server.url()}", "--llm", "none", "--no-progress",
            "--out", str(tmp_path / "preds.jsonl"), "--cache-dir", str(cache), "--json")
        run("doctor", url, "--dialect", "freebase", "--no-size", "--probe", ENTITY, "--cache-dir", str(cache))
        run("doctor", url, "--dialect", "freebase", "--no-size", "--probe", ENTITY, "--cache-dir", str(cache), "--json")
    finally:
        logger = logging.getLogger("kgfed")
        logger.handlers.clear()
        logger.setLevel(logging.NOTSET)
        logger.propagate = True
    assert codes == [0, 0, 0, 2, 2, 2, 2, 0, 1, 0, 0], (codes, streams)
    assert "film.film.cinematography" in streams[0] and "DEBUG kgfed.http: GET" in streams[0]
    assert "HTTP 400" in streams[3] and "HTTP 401" in streams[4] and "needs a dialect" in streams[5]
    assert '"failed": 2' in streams[8] and "asked to fail" in streams[8]  # a run: summary, failures, predictions
    assert "fit for the freebase templates" in streams[9] and '"fit": true' in streams[10]  # doctor sent the credentials too
    assert [leaks(s) for s in streams] == [[]] * len(streams)
    assert json.loads(Path(f"{tmp_path / 'kg.nt'}.json").read_text())["settings"]["source"] == f"http://127.0.0.1:{server.port}/sparql"
    assert (tmp_path / "kg.nt").stat().st_size > 0 and cassette.stat().st_size > 0
    assert files_holding_the_password(tmp_path) == []
    assert all(seen["authorization"] for seen in server.seen)  # every request carried the credentials


def test_unknown_specs_and_kg_specs_do_not_echo_a_password():
    from kgfed.engine.config import KGSpec

    with pytest.raises(KgfedError) as caught:
        KGSpec.parse(f"ftp://{USER}:{ENCODED}@host/x")
    assert leaks(str(caught.value)) == []
    with pytest.raises(UnknownEndpoint) as caught:
        resolve_endpoint(f"ftp://{USER}:{ENCODED}@host/x")
    assert leaks(str(caught.value)) == []


# -- cassettes: a secret masked where it is a credential, not inside the data ---------------------------------
def test_a_password_that_occurs_in_the_data_is_masked_only_as_a_credential(monkeypatch):
    """Issue 41: with the password `people`, a cassette showed `***.person.gender` in the recorded query."""
    import vcr.request

    from kgfed.cache.recording import _scrub_request

    monkeypatch.setattr(secrets, "_known", set())  # this test's secret is forgotten after it
    url, header = split_credentials("http://reader:people@127.0.0.1:8890/sparql")
    assert header is not None
    query = "SELECT ?g WHERE { ?p <http://rdf.freebase.com/ns/people.person.gender> ?g }"
    from urllib.parse import urlencode

    fields = urlencode({"query": query, "pw": "people"})
    recorded = _scrub_request(vcr.request.Request("POST", f"http://reader:people@127.0.0.1:8890/people/sparql?{fields}",
                                                  fields.encode(), {}))
    for text in (recorded.uri, recorded.body.decode()):
        assert "people.person.gender" in text and "pw=***" in text and "=people" not in text
    assert recorded.uri.startswith("http://127.0.0.1:8890/***/sparql?")  # userinfo cut, a path segment masked
    json_body = secrets.redact_credentials('{"password_of_the_day": "people", "question": "which people live here"}')
    assert json_body == '{"password_of_the_day": "***", "question": "which people live here"}'
    assert redact("people.person.gender") == "***.person.gender"  # messages stay on the safe side: masked anywhere
