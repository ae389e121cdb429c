"""The bundled demo KGs (real facts, both dialects) and the offline tour `kgfed demo` prints."""
from __future__ import annotations

import argparse
import json
import sys
import time


async def run_demo(args: argparse.Namespace) -> int:
    """Relations, neighbours (incl. a Freebase CVT hop), labels and search on both demo KGs;
    a readable tour, or with --json one JSON document of the same lookups."""
    from ..config import KGSpec
    from ..session import Session
    from .options import session_spec

    started = time.perf_counter()
    kgs = (KGSpec("wikidata"), KGSpec("freebase"))  # each the bundled demo KG of its dialect
    async with Session(session_spec(args, kgs=kgs, llm="none", text=None)) as session:
        wd, fb = session.kgs["wikidata"], session.kgs["freebase"]
        label = (await wd.labels(["Q42"]))["Q42"]
        wd_relations = await wd.relations("Q42", "out")
        wd_edges = [edge for prop in ("P69", "P800") for edge in await wd.neighbors("Q42", prop)]
        hits = await wd.search("The Hitchhiker's Guide to the Galaxy")
        fb_relations = await fb.relations("m.0282x")
        compound = next((r for r in fb_relations if "|" in r.relation), None)
        cvt_edges = await fb.neighbors("m.0282x", compound.relation, compound.direction) if compound else []
    stats = wd.stats + fb.stats
    seconds = time.perf_counter() - started
    if getattr(args, "json", False):
        print(json.dumps({
            "wikidata": {"label": label.to_json(), "relations": [r.to_json() for r in wd_relations],
                         "neighbors": [e.to_json() for e in wd_edges], "search": [h.to_json() for h in hits]},
            "freebase": {"relations": [r.to_json() for r in fb_relations], "cvt_neighbors": [e.to_json() for e in cvt_edges]},
            "queries": stats["queries"], "cache_hits": stats["cache_hits"], "seconds": round(seconds, 3),
        }, ensure_ascii=False, indent=1))
        return 0
    from rich.console import Console
    from rich.markup import escape

    console = Console(highlight=False, soft_wrap=not sys.stdout.isatty())  # piped: whole lines, never wrapped at 80
    console.rule("[bold]Wikidata-shaped demo KG: Douglas Adams (Q42)")
    console.print(f"Q42 = {label.label!r}: {label.description}")
    console.print("relations:", ", ".join(f"{r.relation} ({r.label})" for r in wd_relations))
    for edge in wd_edges:
        console.print(f"  Q42 --{edge.relation} {edge.relation_label or ''}--> {edge.entity} {edge.label!r}")
    console.print("search 'The Hitchhiker's Guide to the Galaxy':", ", ".join(f"{h.id} {h.label!r}" for h in hits))
    console.rule("[bold]Freebase-shaped demo KG: the same person (m.0282x)")
    console.print("relations (ToG's filter applied, CVTs expanded):")
    for r in fb_relations:
        console.print(escape(f"  [{r.direction}] {r.relation}"))
    for edge in cvt_edges:
        console.print(f"  m.0282x --{edge.relation}--> {edge.entity} {edge.label!r} (via CVT {', '.join(edge.via)})")
    console.rule()
    console.print(f"{stats['queries']} queries, {stats['cache_hits']} cache hits, {seconds:.2f} s, offline on the embedded store")
    return 0
