"""Context retrieval: entity → page through the KG (sitelinks, P646), passages, HydraRAG text edges, CLI."""
from __future__ import annotations

import json
import math

import pytest

from kgfed.cache.costs import track
from kgfed.cache.recording import recording
from kgfed.endpoints.client import HttpClient
from kgfed.endpoints.wikipedia import JsonlSource, Page, WikipediaSource
from kgfed.engine.cli import main
from kgfed.engine.config import default_text_source
from kgfed.engine.text.context import (
    DEMO_EXTRACTS, RHO, RHO_WIKI, Passage, entity_pages, entity_scores, open_text_source, passage_edges, rank_pages,
    resolve_pages, retrieve_context,
)
from kgfed.engine.data import DEMO_FREEBASE, DEMO_WIKIDATA
from kgfed.engine.kg import KG
from kgfed.sparql.errors import KgfedError

from .conftest import HTTP_DIR, SHARED, need

QUESTION = "Where did Douglas Adams study?"


@pytest.fixture
async def demo_kg():
    async with KG.open(f"file:{need(DEMO_WIKIDATA)}", cache=False) as kg:
        yield kg


def demo_extracts() -> JsonlSource:
    return JsonlSource([need(DEMO_EXTRACTS)], name="demo")


# -- entity → page ---------------------------------------------------------------------------------
async def test_ids_resolve_through_sitelinks_and_p646(demo_kg):
    refs = await resolve_pages(["Q42", "m.0282x", "Albert Einstein", "Q1", "m.0zzzzz", " "], kg=demo_kg)
    assert list(refs) == ["Q42", "m.0282x", "Albert Einstein", "Q1", "m.0zzzzz"]
    assert (refs["Q42"].qid, refs["Q42"].title, refs["Q42"].key) == ("Q42", "Douglas Adams", "Douglas Adams")
    assert (refs["m.0282x"].qid, refs["m.0282x"].key) == ("Q42", "Douglas Adams")  # Freebase mid → P646 → Q42
    assert refs["Albert Einstein"].key == "Albert Einstein" and refs["Albert Einstein"].qid is None
    assert refs["Q1"].key is None and "no enwiki sitelink" in refs["Q1"].reason
    assert refs["m.0zzzzz"].key is None and "no Wikidata item (P646)" in refs["m.0zzzzz"].reason
    by_qid = await resolve_pages(["Q42", "m.0282x"], kg=demo_kg, by_qid=True)
    assert [r.key for r in by_qid.values()] == ["Q42", "Q42"]


async def test_ids_without_a_wikidata_kg_are_explained():
    refs = await resolve_pages(["Q42", "m.0282x"])
    assert all(r.key is None and "Wikidata-dialect KG" in r.reason for r in refs.values())
    async with KG.open(f"file:{need(DEMO_FREEBASE)}", cache=False) as freebase:
        refs = await resolve_pages(["m.0282x"], kg=freebase)
    assert "Wikidata-dialect KG" in refs["m.0282x"].reason
    assert (await resolve_pages(["Q42"], by_qid=True))["Q42"].key == "Q42"  # JSONL sources need no KG


async def test_entity_pages_mark_what_has_no_text(demo_kg):
    pages = await entity_pages(["Q42", "m.0282x", "Q1", "m.0zzzzz"], text_source=demo_extracts(), kg=demo_kg)
    assert pages["Q42"] == pages["m.0282x"] and pages["Q42"].title == "Douglas Adams"
    assert pages["Q1"].missing and "demo_extracts.jsonl" in pages["Q1"].reason
    assert pages["m.0zzzzz"].missing and pages["m.0zzzzz"].text is None and "P646" in pages["m.0zzzzz"].reason


# -- passages --------------------------------------------------------------------------------------
async def test_retrieve_context_offline_with_bm25(demo_kg):
    passages = await retrieve_context(QUESTION, ["Q42", "m.0282x", "Q937", "Q1"], kg=demo_kg, text_source=demo_extracts(),
                                      ranker="bm25", top_k=3)
    assert len(passages) == 3 and all(isinstance(p, Passage) for p in passages)
    assert [p.score for p in passages] == sorted((p.score for p in passages), reverse=True)
    best = passages[0]
    assert (best.entity, best.title, best.qid, best.source) == ("Q42", "Douglas Adams", "Q42", "wikipedia")
    assert "St John's College" in best.text
    assert "m.0282x" not in {p.entity for p in passages}  # the same page is chunked once
    assert json.loads(json.dumps(best.to_json()))["text"] == best.text


class FailingSource:
    """A text source whose every page failed (as a broken server would leave them)."""

    name, by_qid = "broken", True

    async def pages(self, keys):
        return {k: Page(None, key=k, error=True, reason="GET host returned malformed JSON") for k in keys}

    async def aclose(self):
        return None


async def test_failed_pages_give_no_passages_never_an_exception():
    assert await retrieve_context(QUESTION, ["Q42"], text_source=FailingSource(), ranker="bm25") == []


async def test_recorded_wikipedia_page_through_the_whole_pipeline():
    title = "Python_(programming_language)"
    async with HttpClient(retries=0) as client:
        wiki = open_text_source("wikipedia", client=client, cache=False, maxlag=None)
        assert isinstance(wiki, WikipediaSource)
        with recording(need(HTTP_DIR / "wikipedia-api" / "TestVcrAsyncWikiExtracts.test_extracts.json")), track() as cost:
            passages = await retrieve_context("Which comedy series is the name Python derived from?", [title], text_source=wiki,
                                              ranker="bm25", top_k=5)
        await wiki.aclose()
    assert cost["text_requests"] == 1
    assert passages[0].title == "Python (programming language)" and passages[0].entity == title
    assert "Monty Python's Flying Circus" in passages[0].text and passages[0].section == "History"


async def test_path_text_is_scored_with_each_chunk_of_its_entity(demo_kg):
    pages = await entity_pages(["Q42", "Q937"], text_source=demo_extracts(), kg=demo_kg)
    plain = await rank_pages("Nobel Prize winner", pages, ranker="bm25", top_k=None)
    guided = await rank_pages("Nobel Prize winner", pages, ranker="bm25", top_k=None,
                              path_text={"Q42": "Douglas Adams won the Nobel Prize"})
    assert max(p.score for p in guided if p.entity == "Q42") > max(p.score for p in plain if p.entity == "Q42")
    assert {p.text for p in guided} == {p.text for p in plain}  # the context is scored, not returned


def test_hydrarag_text_edges_carry_the_wiki_source_prior():
    passages = [Passage("Q42", "Douglas Adams", "He studied at St John's College.", 0.9, qid="Q42")]
    (edge,) = passage_edges(passages)
    assert RHO == {"kg": 1.0, "wikipedia": 0.8, "web": 0.7} and edge.rho == RHO_WIKI == 0.8
    assert edge.path_text() == '{Douglas Adams} -[wikipedia:Douglas Adams]-> "He studied at St John\'s College."'
    assert edge.to_json()["relation"] == "wikipedia:Douglas Adams" and edge.to_json()["rho"] == 0.8
    assert passage_edges(passages, rho=0.5)[0].rho == 0.5


def test_tog2_entity_scores_decay_with_rank():
    passages = [Passage("A", "a", "x", 0.9), Passage("B", "b", "y", 0.8), Passage("A", "a", "z", 0.5)]
    scores = entity_scores(passages, alpha=0.5)
    assert scores["A"] == pytest.approx(0.9 * math.exp(-0.5) + 0.5 * math.exp(-1.5))
    assert scores["B"] == pytest.approx(0.8 * math.exp(-1.0))


def test_text_source_specs(tmp_path):
    assert isinstance(open_text_source("demo"), JsonlSource)
    assert open_text_source(f"file:{need(SHARED / 'wikipedia' / 'extracts.jsonl')}").name == "extracts.jsonl"
    with pytest.raises(KgfedError, match="no extracts file at"):
        open_text_source(f"file:{tmp_path / 'absent.jsonl'}")
    with pytest.raises(KgfedError, match="unknown text source 'web'"):
        open_text_source("web")
    assert default_text_source(None) == default_text_source(f"file:{DEMO_WIKIDATA}") == "demo"
    assert default_text_source("wikidata") == default_text_source("https://qlever.dev/api/wikidata") == "wikipedia"


# -- CLI -------------------------------------------------------------------------------------------
def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_context_offline_on_the_demo(capsys):
    need(DEMO_EXTRACTS)
    code, out, err = run(capsys, "context", "Q42", "m.0282x", "Q1", "-q", QUESTION, "--ranker", "bm25", "--top-k", "2", "--json")
    rows = json.loads(out)
    assert code == 0 and [r["rank"] for r in rows] == [1, 2]
    assert rows[0]["entity"] == "Q42" and "St John's College" in rows[0]["text"]
    assert "Q1: no text" in err


def test_cli_context_on_a_jsonl_file(capsys):
    path = need(SHARED / "wikipedia" / "extracts.jsonl")
    code, out, _ = run(capsys, "context", "Q23739", "Q12152", "-q", "What is the longest-running radio soap opera?",
                       "--text-source", f"file:{path}", "--ranker", "bm25", "--top-k", "1", "--json")
    assert code == 0 and "The Archers" in json.loads(out)[0]["text"]


@pytest.mark.parametrize("argv,message", [
    (["--text-source", "web"], "unknown text source"),
    (["--overlap", "5"], "overlap 5 must be"),
    (["--top-k", "0"], "argument --top-k: must be >= 1, got 0"),
])
def test_cli_context_bad_options_are_one_line_errors(capsys, argv, message):
    code, _, err = run(capsys, "context", "Q42", "-q", QUESTION, "--ranker", "bm25", *argv)
    assert code == 2 and message in err and err.count("\n") == 1


@pytest.mark.embeddings
async def test_sbert_context_on_the_demo(demo_kg, tmp_path):
    from kgfed.engine.toolbox.embeddings import Embedder

    passages = await retrieve_context(QUESTION, ["Q42", "Q937", "Q25169"], kg=demo_kg, text_source=demo_extracts(),
                                      top_k=3, embedder=Embedder(cache=tmp_path / "emb"))
    assert passages[0].entity == "Q42" and "St John's College" in passages[0].text
    assert -1.0 <= passages[-1].score <= passages[0].score <= 1.0
