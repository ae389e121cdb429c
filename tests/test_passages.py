"""Sentence-aware chunking (property checks over the shared extracts) and passage ranking (probes)."""
from __future__ import annotations

import json
import re
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgfed.engine.text.passages import DEFAULT_CHUNKS, SENTENCES, ChunkSpec, chunk_text, rank, sections, sentence_spans
from kgfed.sparql.errors import KgfedError

from .conftest import HTTP_DIR, SHARED, need

# Independent of pysbd: a sentence ends in final punctuation (maybe closed by quotes/brackets) or at a line end.
FINAL = re.compile(r"[.!?…。][\"'”’»)\]]*$")
HEADING = re.compile(r"^=+.*=+$")


@lru_cache(maxsize=1)
def extracts() -> dict[str, dict]:
    rows = (json.loads(line) for line in need(SHARED / "wikipedia" / "extracts.jsonl").read_text().splitlines())
    return {row["qid"]: row for row in rows}


def sample(step: int = 4) -> list[str]:
    """Every `step`-th extract (in file order), for checks that run pysbd over many pages."""
    return [row["text"] for row in list(extracts().values())[::step]]


def python_page() -> str:
    """The full, sectioned extract of a real recorded page."""
    cassette = json.loads(need(HTTP_DIR / "wikipedia-api" / "TestVcrAsyncWikiExtracts.test_extracts.json").read_text())
    body = json.loads(cassette["interactions"][0]["response"]["body"]["string"])
    return body["query"]["pages"]["23862"]["extract"]


def ends_sentence(text: str, end: int) -> bool:
    return bool(FINAL.search(text[:end])) or text[end:].lstrip(" \t")[:1] in ("", "\n", "\r")


def starts_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip(" \t")
    return not before or before.endswith("\n") or bool(FINAL.search(before))


def check_chunks(text: str, spec: ChunkSpec) -> int:
    """Every property of `chunk_text(text, spec)`; returns the number of chunks."""
    spans = sentence_spans(text)
    starts, ends = {a for a, _ in spans}, {b for _, b in spans}
    chunks = chunk_text(text, spec)
    covered: set[int] = set()
    for prev, chunk in zip([None, *chunks], chunks):
        assert text[chunk.start:chunk.end] == chunk.text and chunk.text == chunk.text.strip()
        assert chunk.start in starts and chunk.end in ends  # whole sentences only
        assert starts_sentence(text, chunk.start) and ends_sentence(text, chunk.end), chunk.text
        count = chunk.last - chunk.first
        assert 1 <= count <= spec.max_sentences
        assert count == 1 or len(chunk.text.split()) <= spec.max_words
        covered.update(range(chunk.first, chunk.last))
        if prev is not None and prev.section == chunk.section and chunk.first < prev.last:
            shared = prev.last - chunk.first
            assert shared == min(spec.overlap, prev.last - prev.first - 1)
    assert covered == set(range(len(spans)))
    return len(chunks)


# -- sentences -------------------------------------------------------------------------------------
def test_sentences_cover_every_character_once_and_never_cross_a_line():
    for text in sample(step=4):
        spans = sentence_spans(text)
        assert all(a < b <= c for (a, b), (c, _) in zip(spans, spans[1:]))
        assert all("\n" not in text[a:b] for a, b in spans)
        inside = {i for a, b in spans for i in range(a, b)}
        lines = [m for m in re.finditer(r"[^\n]+", text) if not HEADING.match(m.group().strip())]
        assert all(i in inside for m in lines for i in range(m.start(), m.end()) if not text[i].isspace())


def test_pysbd_losing_text_or_cutting_mid_sentence_is_repaired():
    pages = extracts()
    piano, saxophone, union = pages["Q5994"]["text"], pages["Q9798"]["text"], pages["Q11851202"]["text"]
    for text, phrase in [(piano, 'The black keys are for the "accidentals"'),
                         (saxophone, "Instruments from the series pitched in C and F"),
                         (union, "(e.g. Manchester No.2 Branch)")]:
        at = text.index(phrase)
        assert any(a <= at and at + len(phrase) <= b for a, b in sentence_spans(text)), phrase


def test_sections_of_a_full_page_extract():
    text = python_page()
    found = sections(text)
    assert found[0][0] is None and "History" in [name for name, _ in found]
    chunks = chunk_text(text)
    assert not any(HEADING.match(line.strip()) for c in chunks for line in c.text.splitlines())
    assert {c.section for c in chunks} >= {None, "History"}
    assert check_chunks(text, DEFAULT_CHUNKS) > 100


# -- chunking properties ---------------------------------------------------------------------------
def test_chunking_never_splits_a_sentence_over_many_extracts():
    texts = sample(step=4)
    specs = [DEFAULT_CHUNKS, SENTENCES, ChunkSpec(5, 40, 2), ChunkSpec(2, 1000, 0)]
    assert len(texts) > 500
    per_text = [[check_chunks(text, spec) for spec in specs] for text in texts]  # text-major: pysbd once a text
    counts = [sum(column) for column in zip(*per_text)]
    assert all(n > len(texts) for n in counts) and counts[1] == max(counts)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.integers(1, 6), st.integers(1, 150), st.data())
def test_chunking_properties_hold_for_any_spec(pick, max_sentences, max_words, data):
    overlap = data.draw(st.integers(0, max_sentences - 1))
    texts = sample(step=4)
    check_chunks(texts[pick % len(texts)], ChunkSpec(max_sentences, max_words, overlap))


def test_long_sentences_stay_whole_and_empty_text_has_no_chunks():
    text = "One two three four five six seven eight nine ten. Short one. Another short one."
    chunks = chunk_text(text, ChunkSpec(max_sentences=3, max_words=4, overlap=0))
    assert [c.text for c in chunks] == ["One two three four five six seven eight nine ten.", "Short one.", "Another short one."]
    assert chunk_text("") == [] and chunk_text("\n\n== Empty ==\n") == []


@pytest.mark.parametrize("kwargs", [{"max_sentences": 0}, {"max_words": 0}, {"overlap": 3}, {"overlap": -1}])
def test_bad_chunk_specs_are_one_line_errors(kwargs):
    with pytest.raises(KgfedError, match="overlap|at least"):
        ChunkSpec(**kwargs)


# -- ranking ---------------------------------------------------------------------------------------
async def test_bm25_rank_orders_ties_by_index_and_uses_context():
    texts = ["Cats purr.", "Dogs bark loudly.", "Dogs bark.", "Birds sing."]
    ranked = await rank("Why do dogs bark?", texts, ranker="bm25")
    assert [i for i, _ in ranked][:2] == [2, 1] and ranked[-1][1] == 0.0
    assert [i for i, _ in ranked[2:]] == [0, 3]  # zero scores keep their order
    lifted = await rank("purr", texts, ranker="bm25", context=[None, "cats purr", None, None], top_k=2)
    assert {i for i, _ in lifted} == {0, 1}
    assert await rank("anything", [], ranker="bm25") == []
    with pytest.raises(KgfedError, match="unknown ranker"):
        await rank("q", texts, ranker="tfidf")  # type: ignore[arg-type]
    with pytest.raises(KgfedError, match="one per text"):
        await rank("q", texts, ranker="bm25", context=["a"])


# Questions written for the shared extracts; each fact was checked to stand in that page's text.
PROBES = [
    ("Q23739", "What is the world's longest-running radio soap opera?", "The Archers, first broadcast in 1950"),
    ("Q12152", "What is the most common symptom of a heart attack?", "The most common symptom is chest pain"),
    ("Q1276346", "How many troops does an EU battlegroup have?", "(1,500 troops)"),
    ("Q23058", "How many cantons does Switzerland have?", "The 26 cantons of Switzerland"),
    ("Q12202", "What are the two main types of stroke?", "ischemic, due to lack of blood flow, and hemorrhagic"),
    ("Q1446169", "Who coined the term collagen disease?", "Alvin F. Coburn in 1932"),
    ("Q1404470", "At what age is Felty's syndrome most common?", "aged 50–70 years"),
    ("Q6741352", "What is recommended for pregnant women living where malaria is endemic?", "routine malaria chemoprevention is recommended"),
    ("Q132438", "What kind of vocals does black metal use?", "a shrieking vocal style"),
    ("Q16575965", "Which literary historian defined the horror story?", "J. A. Cuddon"),
    ("Q9585", "Whom did Muhammad designate as his successor according to Shia Islam?", "Ali ibn Abi Talib"),
    ("Q695469", "How many provinces is Mozambique divided into?", "10 provinces"),
]


def probe_pool() -> list[tuple[str, str]]:
    """(qid, chunk text) of the probe pages plus 40 unrelated pages (the first by id)."""
    pages = extracts()
    probe_ids = [q for q, _, _ in PROBES]
    pool = probe_ids + sorted(set(pages) - set(probe_ids))[:40]
    return [(q, c.text) for q in pool for c in chunk_text(pages[q]["text"])]


async def run_probes(ranker: str, embedder=None) -> list[tuple[int, int]]:
    """Per probe: (rank of the best passage holding the fact, passages of other pages ranked above it)."""
    pool = probe_pool()
    results = []
    for qid, question, fact in PROBES:
        assert fact in extracts()[qid]["text"]
        ranked = await rank(question, [text for _, text in pool], ranker=ranker, embedder=embedder)  # type: ignore[arg-type]
        position = next(n for n, (i, _) in enumerate(ranked) if fact in pool[i][1])
        results.append((position + 1, sum(pool[i][0] != qid for i, _ in ranked[:position])))
    return results


def assert_probes(results: list[tuple[int, int]]) -> None:
    assert len(results) >= 8
    assert all(unrelated == 0 for _, unrelated in results), results  # the fact beats every unrelated passage
    assert sum(position == 1 for position, _ in results) >= 10, results  # and is usually the very first


async def test_bm25_probes_rank_the_fact_above_unrelated_passages():
    assert_probes(await run_probes("bm25"))


@pytest.mark.embeddings
async def test_sbert_probes_rank_the_fact_above_unrelated_passages(tmp_path):
    from kgfed.engine.toolbox.embeddings import Embedder

    assert_probes(await run_probes("sbert", Embedder(cache=tmp_path / "emb")))
