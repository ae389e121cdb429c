"""Fuzzing every public KG method on the embedded demo KG: whatever goes in (lone surrogates, non-strings,
ids with a trailing newline, unknown modes, zero/negative limits, odd queries), what comes out is an
answer or a one-line `KgfedError`, never another exception."""
from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kgfed.cache.responses import ResponseCache
from kgfed.engine.data import DEMO_FREEBASE, DEMO_WIKIDATA
from kgfed.engine.kg import KG
from kgfed.engine.kg.model import Answer, AnswerMap
from kgfed.sparql.errors import InvalidIdentifier, KgfedError
from kgfed.sparql.results import SelectResult

ANY_TEXT = st.text(st.characters(blacklist_categories=()), max_size=20)  # surrogates included
IDS = st.sampled_from(["Q42", "Q5", "P69", "P31", "m.0abc", "g.11b6gq6dl2", "people.person.nationality",
                       "people.person.education|education.education.institution", "Q42\n", " Q42", "q42", "Q0", ""])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True), st.binary(max_size=4))
VALUE = st.one_of(IDS, ANY_TEXT, SCALARS)
LISTS = st.one_of(st.lists(VALUE, max_size=4), VALUE, st.dictionaries(IDS, IDS, max_size=2), st.tuples(VALUE, VALUE))
DIRECTION = st.one_of(st.sampled_from(["out", "in", "both", "OUT", "sideways"]), SCALARS)
LIMIT = st.one_of(st.none(), st.integers(-2, 3), st.booleans(), st.floats(), st.text(max_size=2))
MODE = st.one_of(st.none(), st.sampled_from(["exact", "contains", "mwapi", "fuzzy", "EXACT"]), SCALARS)
TRIPLE = st.one_of(st.tuples(VALUE, VALUE, DIRECTION), st.lists(VALUE, max_size=4), VALUE)
QUERY = st.one_of(
    ANY_TEXT, SCALARS,
    st.sampled_from(["SELECT ?s WHERE { ?s ?p ?o } LIMIT 2", "ASK { ?s ?p ?o }", "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }",
                     "DESCRIBE <http://www.wikidata.org/entity/Q42>", "SELECT * WHERE { ?s ?p ?o } # c\nLIMIT 1",
                     "SELECT ?x WHERE { SERVICE <http://127.0.0.1:9/sparql> { ?x ?p ?o } }", "SELECT ?s WHERE {",
                     "PREFIX : <http://x/> SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", "SELECT ?s WHERE { ?s ?p \"\ud800\" }"]),
)

CALLS = {
    "relations": st.tuples(VALUE, DIRECTION).map(lambda a: lambda kg: kg.relations(*a)),
    "relations_many": st.tuples(LISTS, DIRECTION).map(lambda a: lambda kg: kg.relations_many(*a)),
    "neighbors": st.tuples(VALUE, VALUE, DIRECTION, LIMIT).map(lambda a: lambda kg: kg.neighbors(a[0], a[1], a[2], limit=a[3])),
    "neighbors_many": st.tuples(st.one_of(st.lists(TRIPLE, max_size=3), VALUE), LIMIT).map(
        lambda a: lambda kg: kg.neighbors_many(a[0], limit=a[1])),
    "labels": LISTS.map(lambda a: lambda kg: kg.labels(a)),
    "search": st.tuples(VALUE, LIMIT, MODE).map(lambda a: lambda kg: kg.search(a[0], a[1], mode=a[2])),
    "match_labels": LISTS.map(lambda a: lambda kg: kg.match_labels(a)),
    "select": QUERY.map(lambda q: lambda kg: kg.select(q)),
}


@pytest.fixture(scope="module")
def kgs(tmp_path_factory):
    loop = asyncio.new_event_loop()
    cache = ResponseCache(tmp_path_factory.mktemp("fuzz") / "c")
    opened = [KG.open(f"file:{DEMO_WIKIDATA}", cache=cache), KG.open(f"file:{DEMO_FREEBASE}", cache=cache)]
    yield loop, opened
    for kg in opened:
        loop.run_until_complete(kg.aclose())
    loop.close()
    cache.close()


def _outcome(loop, kg, call):
    try:
        answer = loop.run_until_complete(call(kg))
    except KgfedError as exc:
        assert "\n" not in str(exc), repr(str(exc))
        return exc
    assert isinstance(answer, (Answer, AnswerMap, SelectResult)), type(answer)
    assert not getattr(answer, "partial", False)
    return answer


@pytest.mark.parametrize("method", list(CALLS))
def test_every_method_answers_or_raises_a_kgfed_error(kgs, method):
    loop, opened = kgs

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(CALLS[method], st.sampled_from([0, 1]))
    def fuzz(call, which):
        _outcome(loop, opened[which], call)

    fuzz()


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(VALUE)
def test_check_validates_or_raises_a_kgfed_error(kgs, value):
    _, opened = kgs
    for kg in opened:
        try:
            assert kg.check(value) == value
        except KgfedError:
            pass


@pytest.mark.parametrize("call, message", [
    (lambda kg: kg.relations("Q42\n"), "invalid Wikidata id"),
    (lambda kg: kg.neighbors("Q42", "P69\n"), "invalid Wikidata id"),
    (lambda kg: kg.neighbors("Q42", "P69", limit=0), "invalid limit 0"),
    (lambda kg: kg.neighbors("Q42", "P69", limit=-1), "invalid limit -1"),
    (lambda kg: kg.neighbors_many([("Q42", "P69", "out")], limit=True), "invalid limit True"),
    (lambda kg: kg.search("Douglas Adams", 0), "invalid limit 0"),
    (lambda kg: kg.search("Douglas Adams", mode="fuzzy"), "unknown search mode 'fuzzy'"),
    (lambda kg: kg.search("Douglas Adams", mode="mwapi"), "needs the Wikidata Query Service"),
    (lambda kg: kg.search("Douglas \ud800Adams"), "lone surrogate"),
    (lambda kg: kg.labels("Q42"), "expected a list"),
    (lambda kg: kg.labels([42]), "invalid Wikidata id 42"),
    (lambda kg: kg.match_labels(["Douglas Adams", None]), "every item must be a string"),
    (lambda kg: kg.neighbors_many([("Q42", "P69")]), "expected (entity, relation, direction)"),
    (lambda kg: kg.select(b"SELECT ?s WHERE { ?s ?p ?o }"), "expected the SPARQL text as a str"),
    (lambda kg: kg.select("SELECT ?s WHERE { ?s ?p \"\udc00\" }"), "lone surrogate"),
    (lambda kg: kg.select("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }"), "takes SELECT or ASK"),
])
def test_bad_inputs_are_named_in_one_line(kgs, call, message):
    loop, (wikidata, _) = kgs
    with pytest.raises(KgfedError) as info:
        loop.run_until_complete(call(wikidata))
    assert message in str(info.value) and "\n" not in str(info.value)
    if "limit" in message or "Wikidata id" in message:
        assert isinstance(info.value, InvalidIdentifier)


def test_valid_calls_still_answer(kgs):
    loop, (wikidata, freebase) = kgs
    assert any(r.relation == "P69" for r in loop.run_until_complete(wikidata.relations("Q42")))
    assert loop.run_until_complete(wikidata.neighbors("Q42", "P69", limit=1))
    assert loop.run_until_complete(wikidata.search("Douglas Adams"))[0].id == "Q42"
    assert loop.run_until_complete(wikidata.select("ASK { ?s ?p ?o }")).boolean is True
