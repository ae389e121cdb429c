"""Hits@1 of ToG / ToG-2 (LLM-free by default) on the shared question files, with costs per question.

    python -m bench.tog_eval cwq                       # 538 CWQ questions over cwq_subgraph.nt
    python -m bench.tog_eval cwq --random              # the random-named-entity-within-2-hops baseline
    python -m bench.tog_eval federation --kg freebase,wikidata
    python -m bench.tog_eval hotpot --method tog2 --text file:../shared/data/wikipedia/extracts.jsonl
    python -m bench.tog_eval hotpot --method tog2 --text paragraphs   # each question's own paragraphs
    python -m bench.tog_eval demo --method tog2 --kg wikidata --text demo   # bundled demo KG + extracts

Prints one JSON object: hits@1 (ToG's rule, `evaluate.tog_match`), strict, n, and the mean SPARQL
queries, cache hits, text requests, LLM calls and seconds per question. The response cache is off
(`cache=False`), so every query is really asked of the embedded store.
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import asyncio
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from kgfed.engine import config
from kgfed.engine.config import CacheOptions, KGSpec
from kgfed.engine.harness.datasets import Question, gold_answers, load_dataset
from kgfed.engine.harness.evaluate import strict_match, tog_match
from kgfed.engine.kg import KG
from kgfed.engine.toolbox.llm import make_llm
from kgfed.engine.methods import get_method

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
SETS = {
    "cwq": (SHARED / "freebase" / "cwq_questions.jsonl", {"freebase": SHARED / "freebase" / "cwq_subgraph.nt"}),
    "federation": (SHARED / "federation" / "questions.jsonl",
                   {"freebase": SHARED / "federation" / "freebase.nt", "wikidata": SHARED / "federation" / "wikidata.nt"}),
    "hotpot": (SHARED / "questions" / "hotpotadv.json", {"wikidata": SHARED / "federation" / "wikidata.nt"}),
    "demo": (ROOT / "engine" / "data" / "demo_questions.jsonl",
             {"wikidata": ROOT / "engine" / "data" / "demo_wikidata.nt", "freebase": ROOT / "engine" / "data" / "demo_freebase.nt"}),
}


def open_kgs(name: str, which: list[str]) -> dict[str, KG]:
    """The set's KGs named by their dialect, uncached, over one HTTP client (`engine.config.open_kgs`)."""
    stores = SETS[name][1]
    return config.open_kgs([KGSpec(k, f"file:{stores[k]}") for k in which], cache=CacheOptions(enabled=False))


async def random_baseline(questions: list[Question], kgs: dict[str, KG], seed: int = 0) -> dict:
    """A random named entity within 2 hops of the topic entities (seeded), scored like the methods."""
    rng = random.Random(seed)
    hits = 0
    for q in questions:
        names: dict[str, str] = {}
        for kg_name, kg in kgs.items():
            frontier = list(q.topics.get(kg_name, {}))
            topics = set(frontier)
            for _ in range(2):
                if not frontier:
                    break
                rels = await kg.relations_many(frontier)
                edges = await kg.neighbors_many([(e, r.relation, r.direction) for e, rs in rels.items() for r in rs])
                nxt = {}
                for es in edges.values():
                    for e in es:
                        if e.label and not e.literal and e.entity not in topics:
                            names.setdefault(e.entity, e.label)
                            nxt[e.entity] = None
                frontier = list(nxt)
        pick = rng.choice(sorted(names.items()))[1] if names else ""
        hits += bool(pick) and tog_match(pick, gold_answers(q))
    return {"baseline": "random named entity within 2 hops", "seed": seed, "n": len(questions),
            "hits@1": round(hits / len(questions), 4)}


class ParagraphSource:
    """The question's own AdvHotpotQA paragraphs as a text source: pages by title or label, and a
    BM25 `search` over title + text (ToG-2 searches full Wikipedia; this is the distractor pool)."""

    name = "paragraphs"
    by_qid = False

    def __init__(self, pages: dict[str, str], path: Path):
        from kgfed.endpoints.wikipedia import JsonlSource

        path.write_text("".join(json.dumps({"title": t, "label": t, "text": x}) + "\n" for t, x in pages.items()))
        self.inner = JsonlSource([path], name="paragraphs")
        self.titles = list(pages)
        self.docs = [f"{t}. {x}" for t, x in pages.items()]

    async def pages(self, keys):
        return await self.inner.pages(keys)

    async def search(self, text: str, limit: int = 10):
        from kgfed.endpoints.wikipedia import SearchHit, SearchResults
        from kgfed.engine.toolbox.pruning import bm25_scores

        scores = bm25_scores(text, self.docs)
        ranked = [i for i in sorted(range(len(scores)), key=lambda i: -scores[i]) if scores[i] > 0][:limit]
        return SearchResults([SearchHit(self.titles[i], None, self.docs[i][:80]) for i in ranked], len(ranked), None)

    async def aclose(self) -> None:
        return None


def paragraph_source(question: Question, directory: Path) -> ParagraphSource:
    raw = question.meta.get("paragraphs") or "[]"
    paragraphs = ast.literal_eval(raw) if isinstance(raw, str) else raw
    pages: dict[str, list[str]] = {}
    for p in paragraphs:
        pages.setdefault(str(p.get("title")), []).append(str(p.get("context", "")))
    return ParagraphSource({t: "\n".join(cs) for t, cs in pages.items()}, directory / f"{hashlib.sha1(question.id.encode()).hexdigest()[:12]}.jsonl")


async def run(args) -> dict:
    questions = load_dataset(SETS[args.set][0])
    if args.limit:
        questions = questions[args.offset:args.offset + args.limit]
    kg_names = args.kg.split(",") if args.kg else list(SETS[args.set][1])
    kgs = open_kgs(args.set, kg_names)
    for q in questions:
        q.topics = {k: v for k, v in q.topics.items() if k in kgs}
    if args.random:
        return await random_baseline(questions, kgs, args.seed)
    llm = make_llm(args.llm)
    cls = get_method(args.method)
    params = json.loads(args.params) if args.params else {}
    text = None
    tmp = tempfile.TemporaryDirectory()
    if args.text and args.text != "paragraphs":
        from kgfed.engine.text.context import open_text_source

        text = open_text_source(args.text, client=kgs.client)  # Wikipedia on the KGs' one client
    rows = []
    started = time.perf_counter()
    for q in questions:
        source = paragraph_source(q, Path(tmp.name)) if args.text == "paragraphs" else text
        method = cls(kgs, llm, text=source, **params)
        result = await method.answer(q.text, q.topics or None)
        golds = gold_answers(q)
        rows.append({"id": q.id, "question": q.text, "answer": result.answer, "gold": golds,
                     "hit": tog_match(result.answer, golds) if result.answer else False,
                     "strict": strict_match(result.answer, golds), "cost": result.cost,
                     "paths": result.path_texts()[:3]})
        if args.verbose:
            print(json.dumps(rows[-1], ensure_ascii=False))
    elapsed = time.perf_counter() - started
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))

    def mean(key: str) -> float:
        return round(statistics.fmean(r["cost"].get(key, 0) for r in rows), 2)

    await config.close_kgs(kgs)
    tmp.cleanup()
    return {"set": args.set, "method": args.method, "kg": kg_names, "llm": args.llm, "text": args.text, "params": params,
            "n": len(rows), "hits@1": round(sum(r["hit"] for r in rows) / len(rows), 4),
            "strict": round(sum(r["strict"] for r in rows) / len(rows), 4),
            "sparql_queries/q": mean("sparql_queries"), "cache_hits/q": mean("cache_hits"),
            "text_requests/q": mean("text_requests"), "entity_pages/q": mean("entity_pages"),
            "entity_pages_found/q": mean("entity_pages_found"), "llm_calls/q": mean("llm_calls"),
            "seconds/q": round(elapsed / len(rows), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("set", choices=sorted(SETS))
    parser.add_argument("--method", default="tog")
    parser.add_argument("--kg", help="comma-separated KG names of the set (default: all)")
    parser.add_argument("--llm", default="none")
    parser.add_argument("--text", help="text source for tog2: file:PATH.jsonl, demo, or paragraphs")
    parser.add_argument("--params", help="method parameters as JSON, e.g. '{\"width\": 3}'")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--offset", type=int, default=0)
    parser.add_argument("--random", action="store_true", help="measure the random 2-hop baseline instead")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="write per-question rows (JSONL)")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args)), ensure_ascii=False))


if __name__ == "__main__":
    main()
