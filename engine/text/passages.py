"""Page text → sentence-aware chunks → chunks ranked against a question (SBERT, or BM25 as the cheap ranker).

    chunks = chunk_text(page.text)                                # ≤ 3 sentences, ≤ 100 words, 1 shared
    ranked = await rank(question, [c.text for c in chunks], top_k=10, embedder=session.embedder)  # [(index, score)], best first

Sentences come from pysbd, per paragraph (a line break always ends a sentence) and never cross a
`== Heading ==` of a full-page extract; a chunk is always whole sentences, cut from the page text as
it is (`text[chunk.start:chunk.end] == chunk.text`). A sentence longer than `max_words` stays whole
in a chunk of its own. Ranking follows ToG-2 (Eq. 5): a chunk may carry a context sentence (the
reasoning path that led to its entity), scored as `[context: chunk]` against the question.
"""
from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from ...sparql.errors import KgfedError

if TYPE_CHECKING:
    from ..toolbox.embeddings import Embedder

Ranker = Literal["sbert", "bm25"]
RANKERS = ("sbert", "bm25")
_HEADING = re.compile(r"^(=+)\s*(.*?)\s*\1$")
_MAYBE_SEVERAL = re.compile(r"[.!?…。]\W*\s")  # a paragraph without this is one sentence (skips pysbd)
# pysbd's cuts are kept only after sentence-final punctuation (it also cuts e.g. "No.2| Branch")
_ENDS_SENTENCE = re.compile(r"[.!?…。][\"'”’»)\]]*\s*$")
_local = threading.local()


@dataclass(frozen=True)
class ChunkSpec:
    """Chunk size in sentences and words, and the sentences consecutive chunks share."""

    max_sentences: int = 3
    max_words: int = 100
    overlap: int = 1

    def __post_init__(self) -> None:
        if self.max_sentences < 1 or self.max_words < 1:
            raise KgfedError("chunks need at least 1 sentence and 1 word: raise --max-sentences/--max-words")
        if not 0 <= self.overlap < self.max_sentences:
            raise KgfedError(f"overlap {self.overlap} must be ≥ 0 and below max_sentences {self.max_sentences}: lower --overlap")


DEFAULT_CHUNKS = ChunkSpec()
SENTENCES = ChunkSpec(max_sentences=1, max_words=10**6, overlap=0)  # the papers' unit: one sentence per chunk


@dataclass(frozen=True)
class Chunk:
    """Whole sentences `first`..`last - 1` (page-wide indices) of a page, at `text[start:end]`."""

    text: str
    start: int
    end: int
    first: int
    last: int
    index: int
    section: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "text": self.text, "start": self.start, "end": self.end,
                "sentences": [self.first, self.last], "section": self.section}


# -- sentences -------------------------------------------------------------------------------------
def _segmenter():
    seg = getattr(_local, "segmenter", None)
    if seg is None:  # pysbd keeps per-call state on the instance: one per thread
        import pysbd

        seg = _local.segmenter = pysbd.Segmenter(language="en", clean=False)
    return seg


def _paragraph_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Sentence spans inside `text[start:end]` (one line), whitespace trimmed.

    pysbd sometimes rewrites or drops text; only the starts of segments found verbatim, after
    sentence-final punctuation, become boundaries, so every character stays in exactly one sentence.
    """
    para = text[start:end]
    cuts = [0]
    if _MAYBE_SEVERAL.search(para):
        cursor = 0
        for segment in _segmenter().segment(para):
            piece = segment.strip()
            at = para.find(piece, cursor) if piece else -1
            if at > cuts[-1] and _ENDS_SENTENCE.search(para[max(0, at - 16):at]):
                cuts.append(at)
            if at >= 0:
                cursor = at + len(piece)
    cuts.append(len(para))
    spans = []
    for a, b in zip(cuts, cuts[1:]):
        piece = para[a:b]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            spans.append((start + a + lead, start + a + len(piece.rstrip())))
    return spans


@lru_cache(maxsize=256)
def sections(text: str) -> tuple[tuple[str | None, tuple[tuple[int, int], ...]], ...]:
    """(heading, sentence spans) per section of a plain-text extract; the lead section's heading is None."""
    out: list[tuple[str | None, list[tuple[int, int]]]] = [(None, [])]
    offset = 0
    for line in text.splitlines(keepends=True):
        body = line.strip()
        heading = _HEADING.match(body)
        if heading:
            out.append((heading.group(2) or None, []))
        elif body:
            out[-1][1].extend(_paragraph_spans(text, offset, offset + len(line.rstrip("\r\n"))))
        offset += len(line)
    return tuple((name, tuple(spans)) for name, spans in out if spans)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Every sentence of `text` as (start, end) offsets, in order."""
    return [span for _, spans in sections(text) for span in spans]


# -- chunks ----------------------------------------------------------------------------------------
def chunk_text(text: str, spec: ChunkSpec = DEFAULT_CHUNKS) -> list[Chunk]:
    """Greedy windows of whole sentences within each section, `spec.overlap` sentences shared."""
    chunks: list[Chunk] = []
    base = 0  # page-wide index of the section's first sentence
    for section, spans in sections(text):
        words = [len(text[a:b].split()) for a, b in spans]
        i = 0
        while i < len(spans):
            j, count = i + 1, words[i]
            while j < len(spans) and j - i < spec.max_sentences and count + words[j] <= spec.max_words:
                count += words[j]
                j += 1
            start, end = spans[i][0], spans[j - 1][1]
            chunks.append(Chunk(text[start:end], start, end, base + i, base + j, len(chunks), section))
            if j == len(spans):
                break
            i = max(i + 1, j - spec.overlap)
        base += len(spans)
    return chunks


# -- ranking ---------------------------------------------------------------------------------------
def with_context(texts: Sequence[str], context: str | Sequence[str | None] | None) -> list[str]:
    """`[context: text]` per text (ToG-2 Eq. 5); one context for all, one per text, or none."""
    if context is None or isinstance(context, str):
        contexts: Sequence[str | None] = [context] * len(texts)
    else:
        contexts = context
        if len(contexts) != len(texts):
            raise KgfedError(f"{len(contexts)} contexts for {len(texts)} texts: give one per text or a single one")
    return [f"{c}: {t}" if c else t for c, t in zip(contexts, texts)]


async def rank(
    question: str,
    texts: Sequence[str],
    *,
    ranker: Ranker = "sbert",
    context: str | Sequence[str | None] | None = None,
    top_k: int | None = None,
    embedder: Embedder | None = None,
) -> list[tuple[int, float]]:
    """(index into `texts`, score) of the best `top_k` texts for the question, best first (ties by index)."""
    if ranker not in RANKERS:
        raise KgfedError(f"unknown ranker {ranker!r}: use sbert or bm25")
    scored = with_context(texts, context)
    if ranker == "sbert":  # cosine of normalised vectors, cached by the Embedder
        if embedder is None:  # the caller's (a session's `embedder`): never one made up here
            raise KgfedError("SBERT ranking needs an embedder: pass embedder= (a session's, or toolbox.embeddings."
                             "Embedder()), or rank with ranker='bm25'")
        scores = await embedder.similarity(question, scored)
    else:  # Okapi BM25 (bm25s, Lucene variant, English stopwords), the pruning toolbox's
        from ..toolbox.pruning import bm25_scores

        scores = await asyncio.to_thread(bm25_scores, question, scored)
    order = sorted(range(len(texts)), key=lambda i: (-float(scores[i]), i))
    return [(i, float(scores[i])) for i in order[:top_k]]
