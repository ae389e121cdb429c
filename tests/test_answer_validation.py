"""Every KG method against a local server that answers wrongly on purpose: wrong variables, the other
query form, rows binding undeclared variables, Virtuoso's partial answers (S1TAT empty and cut,
X-SPARQL-MaxRows), 429, 5xx, timeouts, truncation, resets. Counted over all methods: 0 wrong answers
returned as right, 0 entries cached from a faulty answer (the cache is inspected), 0 exceptions
outside the `KgfedError` family, and no unclosed sessions."""
from __future__ import annotations

import asyncio
import json

import pytest
from aiohttp import web

from kgfed.cache.responses import ResponseCache, cache_key
from kgfed.endpoints.client import HttpClient
from kgfed.endpoints.http import HttpEndpoint
from kgfed.engine.kg import KG
from kgfed.engine.kg.model import Answer, AnswerMap
from kgfed.sparql.dialects import WIKIDATA
from kgfed.sparql.errors import EndpointError, KgfedError, PartialResult, RateLimited, UnexpectedAnswer
from kgfed.sparql.results import Expect, SelectResult, check_answer, parse_sparql_json, query_form

from . import httpfaults as hf
from .unclosed import no_unclosed  # noqa: F401  (fixture)

WD = "http://www.wikidata.org/entity/"
CALLS = {
    "relations": lambda kg: kg.relations("Q42"),
    "relations_many": lambda kg: kg.relations_many(["Q42", "Q5"]),
    "neighbors": lambda kg: kg.neighbors("Q42", "P69"),
    "neighbors_many": lambda kg: kg.neighbors_many([("Q42", "P69", "out"), ("Q42", "P69", "in")]),
    "labels": lambda kg: kg.labels(["Q42"]),
    "search": lambda kg: kg.search("Douglas Adams"),
    "match_labels": lambda kg: kg.match_labels(["Douglas Adams"]),
    "select": lambda kg: kg.select("SELECT ?s ?p WHERE { ?s ?p ?o } LIMIT 3"),
    "ask": lambda kg: kg.select("PREFIX wd: <http://www.wikidata.org/entity/>\n# is Q42 there?\nASK { wd:Q42 ?p ?o }"),
}


def _query(request: web.Request, form: dict) -> str:
    return request.query.get("query") or form.get("query", "")


def right_body(query: str) -> dict:
    """A correct answer for any query: the form asked for, every projected variable, one row."""
    expect = Expect.of_query(query)
    if expect.form == "ASK":
        return {"head": {}, "boolean": True}
    names = sorted(expect.vars)
    fixed = {"e": f"{WD}Q42", "r": "http://www.wikidata.org/prop/direct/P69", "id": f"{WD}Q42"}
    row = {v: {"type": "uri", "value": fixed.get(v, f"{WD}Q{i + 1}")} for i, v in enumerate(names)}
    return {"head": {"vars": names}, "results": {"bindings": [row]}}


def answering(make_body, headers: dict | None = None):
    """A script step whose body depends on the query asked."""
    async def step(request):
        form = dict(await request.post()) if request.method == "POST" else {}
        body = make_body(_query(request, form))
        return web.Response(body=json.dumps(body), content_type="application/sparql-results+json", headers=headers)
    return step


def other_form(query: str) -> dict:
    if query_form(query) == "ASK":
        return {"head": {"vars": ["x"]}, "results": {"bindings": []}}
    return {"head": {}, "boolean": True}


def wrong_vars(query: str) -> dict:
    if query_form(query) == "ASK":
        return {"head": {"vars": ["boolean"]}, "results": {"bindings": []}}
    return {"head": {"vars": ["x", "y"]}, "results": {"bindings": [{"x": {"type": "uri", "value": f"{WD}Q1"}}]}}


def stray_binding(query: str) -> dict:
    body = right_body(query)
    if "results" in body:
        body["results"]["bindings"].append({"zz": {"type": "literal", "value": "not declared"}})
        return body
    return {"head": {"vars": ["x"]}, "results": {"bindings": []}}


def empty(query: str) -> dict:
    body = right_body(query)
    if "results" in body:
        body["results"]["bindings"] = []
    return body


S1TAT = {"X-SQL-State": "S1TAT", "X-SQL-Message": "RC...: Returning incomplete results, query interrupted by result timeout."}
# scenario -> (script, the error every method must raise, whether a partial-allowing KG gets a flagged answer)
FAULTS = {
    "wrong variables": ([answering(wrong_vars)], UnexpectedAnswer, False),
    "other query form": ([answering(other_form)], UnexpectedAnswer, False),
    "row binds an undeclared variable": ([answering(stray_binding)], UnexpectedAnswer, False),
    "S1TAT empty": ([answering(empty, S1TAT)], PartialResult, True),
    "S1TAT cut": ([answering(right_body, S1TAT)], PartialResult, True),
    "X-SPARQL-MaxRows": ([answering(right_body, {"X-SPARQL-MaxRows": "1"})], PartialResult, True),
    "429": ([hf.status(429, {"Retry-After": "0"})], RateLimited, False),
    "500": ([hf.status(500)], EndpointError, False),
    "timeout": ([hf.ok(delay=1.0)], EndpointError, False),
    "truncated": ([hf.short_body()], EndpointError, False),
    "reset": ([hf.reset()], EndpointError, False),
    "html page": ([hf.raw(b"<html><body>Service unavailable</body></html>", "text/html")], EndpointError, False),
}


server = pytest.fixture(hf.serve, name="server")


def _kg(server, cache, client, partial="error") -> KG:
    return KG(HttpEndpoint(server.url, client, partial=partial), WIKIDATA, cache=cache)


def _client() -> HttpClient:
    return HttpClient(backoff=0.001, retries=1, timeout=0.3)


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_every_method_refuses_a_faulty_answer_and_caches_nothing(server, tmp_path, fault, no_unclosed):
    script, error, _ = FAULTS[fault]
    server.script = script
    cache = ResponseCache(tmp_path / "c")
    wrong_returned, outside_family = [], []
    async with _client() as client:
        kg = _kg(server, cache, client)
        for name, call in CALLS.items():
            try:
                answer = await call(kg)
            except error as exc:
                assert "\n" not in str(exc), str(exc)
            except Exception as exc:  # noqa: BLE001 - counted, then asserted below
                (wrong_returned if isinstance(exc, KgfedError) else outside_family).append(f"{name}: {exc!r}")
            else:
                wrong_returned.append(f"{name} returned {answer!r}")
        await kg.aclose()
    assert outside_family == []
    assert wrong_returned == []
    assert len(cache) == 0, f"{fault}: {len(cache)} entries cached from faulty answers"
    cache.close()


@pytest.mark.parametrize("fault", [f for f, (_, _, flagged) in FAULTS.items() if flagged])
async def test_partial_answers_allowed_are_flagged_and_never_cached(server, tmp_path, fault, no_unclosed):
    script, _, _ = FAULTS[fault]
    server.script = script
    cache = ResponseCache(tmp_path / "c")
    async with _client() as client:
        kg = _kg(server, cache, client, partial="allow")
        for name, call in CALLS.items():
            answer = await call(kg)
            if isinstance(answer, SelectResult):
                assert answer.partial and answer.note, name
            else:
                assert isinstance(answer, (Answer, AnswerMap)) and answer.partial and answer.notes, name
                if isinstance(answer, AnswerMap):  # every list inside says so too
                    assert all(v.partial for v in answer.values() if isinstance(v, Answer)), name
        assert kg.stats["partial"] == len(CALLS) + 3  # relations(_many) and neighbors_many send two queries each
        await kg.aclose()
    assert len(cache) == 0


async def test_partial_retry_never_ends_in_a_silent_empty(server, tmp_path, no_unclosed):
    server.script = [answering(empty, S1TAT)]
    async with _client() as client:
        kg = KG(HttpEndpoint(server.url, client, partial="retry", timeout_ms=1000, max_timeout_ms=16000), WIKIDATA, cache=None)
        with pytest.raises(PartialResult, match="after 3 attempts"):
            await kg.relations("Q42", "out")
        await kg.aclose()
    assert [s.params.get("timeout") for s in server.seen[:3]] == ["1000", "4000", "16000"]


async def test_a_wrong_answer_is_retried_and_the_right_one_cached_and_replayed(server, tmp_path, no_unclosed):
    """Wrong shape twice, then right: the method answers right, only the right answer is stored, and a
    second run against the healthy server replays it."""
    cache = ResponseCache(tmp_path / "c")
    async with _client() as client:
        for name, call in CALLS.items():
            server.script = [answering(wrong_vars), answering(other_form), answering(right_body)]
            server.seen.clear()
            kg = _kg(server, cache, client)
            answer = await call(kg)
            assert kg.stats["unexpected"] >= 2, name
            if isinstance(answer, SelectResult):
                assert answer.rows or answer.boolean, name
            await kg.aclose()
        stored = [cache.entry(k) for k in cache.keys()]
        assert stored and all(e is not None and e.source == server.url for e in stored)
        for entry in stored:  # every stored answer has the right shape for its query
            assert entry.result.boolean is True or entry.result.vars
        server.script = [hf.status(500)]  # the server is down now: every answer comes from the cache
        kg = _kg(server, cache, client)
        for call in CALLS.values():
            await call(kg)
        assert kg.stats["sent"] == 0
        await kg.aclose()
    cache.close()


async def test_gave_up_error_names_endpoint_and_what_came_back(server, tmp_path):
    server.script = [answering(other_form)]
    async with _client() as client:
        kg = _kg(server, None, client)
        with pytest.raises(UnexpectedAnswer) as info:
            await kg.neighbors("Q42", "P69")
        await kg.aclose()
    message = str(info.value)
    assert server.url in message and "ASK boolean" in message and "gave up after 3 attempts" in message
    assert len(server.seen) == 3


def test_check_answer_against_the_query_form():
    select = parse_sparql_json({"head": {"vars": ["s"]}, "results": {"bindings": [{"s": {"type": "uri", "value": "x:y"}}]}})
    ask = parse_sparql_json({"head": {}, "boolean": False})
    assert check_answer(select, Expect.of_query("PREFIX a: <http://x#> SELECT ?s WHERE { ?s ?p ?o }"), source="t") is select
    assert check_answer(ask, Expect.of_query("# SELECT in a comment\nASK {}"), source="t").boolean is False
    with pytest.raises(UnexpectedAnswer, match=r"missing \[\?o\]"):
        check_answer(select, Expect.of_query("SELECT ?s ?o WHERE { ?s ?p ?o }"), source="t")
    with pytest.raises(UnexpectedAnswer, match="ASK query with a SELECT table"):
        check_answer(select, Expect.of_query("ask {}"), source="t")
    assert ask.to_json() == {"head": {}, "boolean": False}
    with pytest.raises(EndpointError, match="boolean"):
        parse_sparql_json({"head": {}, "boolean": "yes"})


def test_the_key_is_the_query_text():
    assert cache_key("e", "SELECT ?s WHERE { ?s ?p ?o } # one row please\nLIMIT 1") != \
        cache_key("e", "SELECT ?s WHERE { ?s ?p ?o } # one row please LIMIT 1")


async def _kgfed(*argv: str) -> tuple[int, str, str]:
    import sys

    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "kgfed.engine.cli", *argv,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    return proc.returncode, out.decode(), err.decode()


async def test_cli_partial_answers_error_by_default_and_exit_3_when_allowed(server, tmp_path):
    server.script = [answering(right_body, S1TAT)]
    common = ["--endpoint", server.url, "--dialect", "wikidata", "--cache-dir", str(tmp_path / "c"), "--json"]
    code, out, err = await _kgfed("relations", "Q42", "--direction", "out", *common)
    assert code == 2 and out == "" and "partial result" in err and len(err.strip().splitlines()) == 1
    code, out, err = await _kgfed("relations", "Q42", "--direction", "out", "--partial", "allow", *common)
    rows = json.loads(out)
    assert code == 3 and rows and all(r["partial"] is True for r in rows)
    assert "partial answer" in err and "incomplete results" in err
    code, out, err = await _kgfed("query", "SELECT ?s ?p WHERE { ?s ?p ?o }", "--partial", "allow", *common)
    assert code == 3 and json.loads(out)["kgfed"]["partial"] is True
    server.script = [answering(right_body)]
    code, out, err = await _kgfed("relations", "Q42", "--direction", "out", "--partial", "allow", *common)
    assert code == 0 and all("partial" not in r for r in json.loads(out))


async def test_a_methods_cost_and_record_carry_partial_answers(server, no_unclosed):
    from kgfed.engine.methods.base import Method, Result

    class OneHop(Method):
        async def _answer(self, question, topics):
            relations = await self.kgs["wd"].relations("Q42", "out")
            return Result(question, "x", extra={"saw_partial": relations.partial})

    server.script = [answering(right_body, S1TAT)]
    async with _client() as client:
        kg = _kg(server, None, client, partial="allow")
        result = await OneHop({"wd": kg}, llm=None).answer("where?", {"wd": {"Q42": "Douglas Adams"}})
        await kg.aclose()
    assert result.cost["partial"] == 1 and result.partial and result.extra["saw_partial"]
    assert result.to_json()["partial"] is True
