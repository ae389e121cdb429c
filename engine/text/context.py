"""Context retrieval for hybrid KG + text reasoning (ToG-2, HydraRAG): entities → pages → ranked passages.

    async with Session(SessionSpec(kgs=(KGSpec("wikidata", "wikidata"),), text="wikipedia")) as session:  # engine.session
        passages = await retrieve_context("Where did Douglas Adams study?", ["Q42"], kg=session.kgs["wikidata"],
                                          text_source=session.text, embedder=session.embedder)
    edges = passage_edges(passages)          # HydraRAG text edges with source reliability rho

Entities are Wikidata ids (`Q42`), Freebase mids (`m.0282x`, mapped to a Q-id through `P646` on a
Wikidata-dialect KG) or page titles. Q-ids reach a title-keyed source (live Wikipedia) through the
KG's enwiki sitelinks (`schema:about`); a source that knows Q-ids (JSONL extracts) is asked directly.
"""
from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard, get_args

from ...endpoints.client import HttpClient
from ...endpoints.wikipedia import JsonCache, JsonlSource, Mode, Page, TextSource, WikipediaSource
from ...sparql.dialects import WIKIDATA, get_dialect
from ...sparql.errors import KgfedError
from ..data import DEMO_EXTRACTS
from ..kg.facade import KG
from .passages import DEFAULT_CHUNKS, ChunkSpec, Ranker, chunk_text, rank

if TYPE_CHECKING:
    from ...cache.root import Store
    from ..toolbox.embeddings import Embedder

TEXT_STORE_LIMIT = 2**31  # bytes of Wikipedia pages kept on a disk root (the `text` store)
TOP_K = 10  # ToG-2 §4.1: "we maintain 10 (K = 10) top-scored sentences"
# HydraRAG, Appendix C "Experiment implementation": (rho_KG, rho_Wiki, rho_Web) = (1.0, 0.8, 0.7),
# the source prior f1(p) = rho_src(p) of its cross-source verification score (§4.3).
RHO = {"kg": 1.0, "wikipedia": 0.8, "web": 0.7}
RHO_WIKI = RHO["wikipedia"]


@dataclass(frozen=True)
class PageRef:
    """Where an entity's page is: its Q-id and enwiki title when known, and the key to ask the source."""

    entity: str
    qid: str | None = None
    title: str | None = None
    key: str | None = None
    reason: str | None = None  # why there is no key


@dataclass(frozen=True)
class Passage:
    """A ranked chunk of an entity's page."""

    entity: str
    title: str | None
    text: str
    score: float
    source: str = "wikipedia"
    qid: str | None = None
    section: str | None = None
    chunk: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TextEdge:
    """HydraRAG's Wiki evidence before LLM conversion: topic entity -[page]-> passage, with its source prior."""

    entity: str
    title: str | None
    text: str
    score: float
    source: str = "wikipedia"
    rho: float = RHO_WIKI

    @property
    def relation(self) -> str:
        return f"wikipedia:{self.title}" if self.title else "wikipedia"

    def path_text(self) -> str:
        """`{Douglas Adams} -[wikipedia:Douglas Adams]-> "He studied …"`."""
        return f'{{{self.title or self.entity}}} -[{self.relation}]-> "{self.text}"'

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "relation": self.relation, "path_text": self.path_text()}


# -- text sources ----------------------------------------------------------------------------------
def _wikipedia_mode(mode: str) -> TypeGuard[Mode]:
    """Whether `WikipediaSource` reads pages in `mode` (extracts, intro, summary)."""
    return mode in get_args(Mode)


def open_text_source(
    spec: str = "wikipedia",
    *,
    client: HttpClient | None = None,
    cache_dir: str | os.PathLike | None = None,
    cache: bool = True,
    offline: bool = False,
    mode: str = "extracts",
    maxlag: int | None = 5,
    store: Store | None = None,
) -> TextSource:
    """`wikipedia` (live, cached), `demo` (the bundled extracts) or `file:PATH[,PATH]` (JSONL extracts).

    `wikipedia` goes through `client`, the run's `HttpClient` (a session's `client`; none is made up here),
    and keeps pages in `store` (a session's `store("text")`), else in the `text` store under `cache_dir`; either
    fails softly (`cache.failsafe`: a full disk is one warning, and the pages are still returned)."""
    if spec == "wikipedia":
        from ...cache.costs import charge

        from ...cache.failsafe import failsafe, open_failsafe

        if client is None:
            raise TypeError("open_text_source('wikipedia') needs the run's HttpClient: pass client= (a session's "
                            "`client`, or HttpOptions().client())")
        if cache and store is None:
            store = open_failsafe(cache_dir, "text", size_limit=TEXT_STORE_LIMIT)
        # a store that fails (a full disk) is one warning and then off: the pages asked for are still returned
        pages = JsonCache(store=failsafe(store, "text")) if cache and store is not None else None
        if not _wikipedia_mode(mode):  # WikipediaSource's own first check, its words: the mode is a Mode below
            raise KgfedError(f"unknown Wikipedia mode {mode!r}: use extracts, intro or summary")
        return WikipediaSource(client, mode=mode, maxlag=maxlag, cache=pages, offline=offline, charge=charge)
    if spec == "demo":
        if not DEMO_EXTRACTS.exists():
            raise KgfedError(f"the demo extracts are not installed ({DEMO_EXTRACTS}): use --text-source wikipedia or file:PATH.jsonl")
        return JsonlSource([DEMO_EXTRACTS], name="demo")
    if spec.startswith("file:"):
        paths = [p for p in spec[len("file:"):].split(",") if p]
        missing = [p for p in paths if not Path(p).is_file()]
        if not paths or missing:
            raise KgfedError(f"no extracts file at {', '.join(missing) or '(empty path)'}: give file:PATH.jsonl of {{qid, title, text}} lines")
        return JsonlSource(paths, name=Path(paths[0]).name)
    raise KgfedError(f"unknown text source {spec!r}: use wikipedia, demo or file:PATH.jsonl")


# -- entity → page ---------------------------------------------------------------------------------
async def resolve_pages(entities: Sequence[str], *, kg: KG | None = None, by_qid: bool = False) -> dict[str, PageRef]:
    """Where each entity's page is: mids → Q-ids (P646), Q-ids → enwiki titles (sitelinks) unless `by_qid`."""
    entities = list(dict.fromkeys(e.strip() for e in entities if e and e.strip()))
    wikidata = kg if kg is not None and kg.dialect.supports("sitelinks") else None
    home = wikidata.dialect if wikidata is not None else WIKIDATA  # the dialect whose items have pages
    cited = [get_dialect(name) for name in home.id_links]  # the KGs whose ids it holds (Freebase, through P646)
    foreign = {e: d for e in entities for d in reversed(cited) if d.is_entity(e)}
    mids = list(foreign)
    qid_of = {e: e for e in entities if e not in foreign and home.is_item(e)}
    need_wikidata = "needs a Wikidata-dialect KG (P646 links and enwiki sitelinks): pass --endpoint wikidata or a Wikidata file"
    if mids and wikidata is not None:
        for other in cited:
            found = await wikidata.by_linked_ids([e for e, d in foreign.items() if d is other], other)
            qid_of.update((mid, min(qids, key=home.id_rank)) for mid, qids in found.items() if qids)
    titles: dict[str, str] = {}
    if not by_qid and wikidata is not None and qid_of:
        found_titles = await wikidata.sitelinks(sorted(set(qid_of.values())))
        titles = {qid: title for qid, title in found_titles.items() if title}
    refs = {}
    for e in entities:
        qid = qid_of.get(e)
        if e in mids and qid is None:
            reason = f"Freebase mid {e} " + (need_wikidata if wikidata is None else f"has no Wikidata item (P646) in {wikidata.name}")
            refs[e] = PageRef(e, reason=reason)
        elif qid is None:  # a title given directly
            refs[e] = PageRef(e, title=e, key=e)
        elif by_qid:
            refs[e] = PageRef(e, qid, key=qid)
        elif qid in titles:
            refs[e] = PageRef(e, qid, titles[qid], key=titles[qid])
        else:
            why = need_wikidata if wikidata is None else f"has no enwiki sitelink in {wikidata.name}"
            refs[e] = PageRef(e, qid, reason=f"{qid} {why}")
    return refs


async def entity_pages(
    entities: Sequence[str], *, text_source: TextSource, kg: KG | None = None
) -> dict[str, Page]:
    """Each entity's page (text, or `text=None` with the reason): resolved through `kg`, read from the source."""
    refs = await resolve_pages(entities, kg=kg, by_qid=getattr(text_source, "by_qid", False))
    keys = [r.key for r in refs.values() if r.key]
    pages = await text_source.pages(keys) if keys else {}
    return {
        e: pages[r.key] if r.key else Page(r.title, key=e, qid=r.qid, missing=True, reason=r.reason,
                                            source=getattr(text_source, "name", "text"))
        for e, r in refs.items()
    }


# -- pages → passages ------------------------------------------------------------------------------
async def rank_pages(
    question: str,
    pages: Mapping[str, Page],
    *,
    top_k: int | None = TOP_K,
    ranker: Ranker = "sbert",
    chunks: ChunkSpec = DEFAULT_CHUNKS,
    path_text: str | Mapping[str, str] | None = None,
    embedder: Embedder | None = None,
) -> list[Passage]:
    """Chunk every page with text (each page once) and rank all chunks together against the question.

    `path_text` (one string, or per entity) is put before each chunk of that entity as ToG-2 does
    with the triple sentence of the path that reached the entity (Eq. 5).
    """
    owners: dict[tuple[str | None, str], str] = {}
    for entity, page in pages.items():
        if page.text:
            owners.setdefault((page.title, page.text), entity)
    chunked = await asyncio.gather(*(asyncio.to_thread(chunk_text, text, chunks) for _, text in owners))
    items = [(entity, pages[entity], c) for entity, cs in zip(owners.values(), chunked) for c in cs]
    context = [path_text.get(entity) for entity, _, _ in items] if isinstance(path_text, Mapping) else path_text
    ranked = await rank(question, [c.text for _, _, c in items], ranker=ranker, context=context, top_k=top_k, embedder=embedder)
    return [
        Passage(entity, page.title, c.text, score, qid=page.qid, section=c.section, chunk=c.index)
        for (entity, page, c), score in ((items[i], score) for i, score in ranked)
    ]


async def retrieve_context(
    question: str,
    entities: Sequence[str],
    *,
    text_source: TextSource,
    kg: KG | None = None,
    top_k: int | None = TOP_K,
    **ranking: Any,
) -> list[Passage]:
    """The `top_k` passages of the entities' pages most relevant to the question, best first.

    `ranking` takes `rank_pages`' options: `ranker` (sbert | bm25), `chunks`, `path_text`, `embedder`.
    """
    pages = await entity_pages(entities, text_source=text_source, kg=kg)
    return await rank_pages(question, pages, top_k=top_k, **ranking)


def passage_edges(passages: Sequence[Passage], *, rho: float = RHO_WIKI) -> list[TextEdge]:
    """HydraRAG text edges (entity → passage) carrying the Wiki source prior `rho` (0.8)."""
    return [TextEdge(p.entity, p.title, p.text, p.score, p.source, rho) for p in passages]


def entity_scores(passages: Sequence[Passage], *, alpha: float) -> dict[str, float]:
    """ToG-2's context-based entity score (Eq. 6): sum over ranked passages of s_k · exp(-alpha · k), k from 1."""
    scores: dict[str, float] = {}
    for k, p in enumerate(passages, 1):
        scores[p.entity] = scores.get(p.entity, 0.0) + p.score * math.exp(-alpha * k)
    return scores
