"""`kgfed context`: Wikipedia passages about entities, ranked against a question (ToG-2 context retrieval)."""
from __future__ import annotations

import argparse
import sys

from ...sparql.errors import KgfedError
from ..config import default_text_source


def register(command, add_source_options, add_cache_options) -> None:
    p = command("context", cmd_context, "Wikipedia passages about entities, ranked against a question")
    p.add_argument("entities", nargs="+", help="Q42 / m.0282x (via P646) / a Wikipedia title")
    p.add_argument("--question", "-q", required=True, help="the question the passages are ranked against")
    p.add_argument("--top-k", type=int, default=10, help="passages to return (default 10, ToG-2's K)")
    p.add_argument("--text-source", help="wikipedia | demo | file:PATH.jsonl (default: wikipedia with a live "
                                         "--endpoint, else the bundled demo extracts)")
    p.add_argument("--wiki-mode", choices=["extracts", "intro", "summary"], default="extracts",
                   help="live text: whole page (default), lead section only, or the REST summary")
    p.add_argument("--ranker", choices=["sbert", "bm25"], default="sbert", help="SBERT cosine (default) or BM25")
    p.add_argument("--path-text", help="reasoning-path sentence put before every chunk (ToG-2 Eq. 5)")
    p.add_argument("--max-sentences", type=int, default=3, help="sentences per chunk (default 3)")
    p.add_argument("--max-words", type=int, default=100, help="words per chunk unless one sentence is longer (default 100)")
    p.add_argument("--overlap", type=int, default=1, help="sentences shared by consecutive chunks (default 1)")
    p.add_argument("--maxlag", type=int, default=5, help="MediaWiki maxlag in seconds (default 5; 0 to omit)")
    add_source_options(p)


async def cmd_context(args: argparse.Namespace) -> int:
    from ...sparql.dialects import WIKIDATA, dialect_of
    from .app import emit
    from .options import session_spec
    from ..config import KGSpec
    from ..session import Session
    from ..text.context import entity_pages, rank_pages
    from ..text.passages import ChunkSpec

    if not args.question.strip():
        raise KgfedError("the question (-q) is empty: give the question the passages are ranked against, "
                         "e.g. -q \"where was he born?\"")
    if args.top_k < 1:
        raise KgfedError("--top-k must be at least 1")
    import pysbd  # noqa: F401 - the text extra, asked for before the embedder: the CLI names a missing one
    spec = args.text_source or default_text_source(args.endpoint)
    chunks = ChunkSpec(args.max_sentences, args.max_words, args.overlap)
    # one session: the Wikipedia source and the KG (when ids need one) share its HttpClient, so --contact,
    # --concurrency and the 429 pauses hold for both (one politeness domain per host)
    async with Session(session_spec(args, text=spec, text_mode=args.wiki_mode, maxlag=args.maxlag or None)) as session:
        source = session.text
        if source is None:  # (the spec above is never empty)
            raise KgfedError("no text source: give --text-source wikipedia, demo or file:PATH.jsonl")
        ids = [e for e in args.entities if dialect_of(e) is not None]  # the rest are Wikipedia titles
        needs_kg = any(not WIKIDATA.is_item(e) for e in ids) or (bool(ids) and not source.by_qid)  # mids need P646
        kg = None
        if needs_kg:
            dialect = args.dialect or "wikidata"
            endpoint = args.endpoint or ("wikidata" if spec == "wikipedia" else None)
            kg = session.add_kg(KGSpec(dialect, endpoint, dialect, partial=getattr(args, "partial", None),
                                       fallbacks=tuple(getattr(args, "fallback", None) or ())))
        embedder = session.embedder if args.ranker == "sbert" else None
        if args.ranker == "sbert" and embedder is None:
            from ..toolbox.embeddings import missing_extra

            raise KgfedError(f"{missing_extra() or 'no sentence embedder'}; or rank with --ranker bm25")
        pages = await entity_pages(args.entities, text_source=source, kg=kg)
        passages = await rank_pages(args.question, pages, top_k=args.top_k, ranker=args.ranker, chunks=chunks,
                                    path_text=args.path_text, embedder=embedder)
    for entity, page in pages.items():
        if not page.text:
            print(f"kgfed: warning: {entity}: no text ({page.reason or 'empty page'})", file=sys.stderr)
    if not passages and any(p.error for p in pages.values()):
        raise KgfedError(next(p.reason for p in pages.values() if p.error))
    rows = [{"rank": i, **p.to_json()} for i, p in enumerate(passages, 1)]
    if not args.json:
        for row in rows:
            row["score"] = f"{row['score']:.3f}"
    emit(args, rows, ["rank", "score", "entity", "title", "text"], f"context for {args.question!r} ({source.name})")
    return 0
