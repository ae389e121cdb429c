"""The bundled demo KGs (real facts, both dialects) and the offline tour `kgfed demo` prints."""
from __future__ import annotations

import argparse
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
DEMO_WIKIDATA = DATA / "demo_wikidata.nt"
DEMO_FREEBASE = DATA / "demo_freebase.nt"


def default_endpoint(dialect: str | None = None) -> str:
    """The demo KG of the requested dialect (Wikidata when none is given)."""
    return f"file:{DEMO_FREEBASE if dialect == 'freebase' else DEMO_WIKIDATA}"


async def run_demo(args: argparse.Namespace) -> int:
    """Relations, neighbours (incl. a Freebase CVT hop), labels and search on both demo KGs."""
    from rich.console import Console
    from rich.markup import escape

    from .kg import KG

    console = Console(highlight=False)
    started = time.perf_counter()
    cache_options = {"cache": not args.no_cache, "cache_dir": args.cache_dir, "offline": args.offline}
    async with KG.open(default_endpoint("wikidata"), **cache_options) as wd, \
               KG.open(default_endpoint("freebase"), **cache_options) as fb:
        console.rule("[bold]Wikidata-shaped demo KG: Douglas Adams (Q42)")
        labels = await wd.labels(["Q42"])
        console.print(f"Q42 = {labels['Q42'].label!r}: {labels['Q42'].description}")
        rels = await wd.relations("Q42", "out")
        console.print("relations:", ", ".join(f"{r.relation} ({r.label})" for r in rels))
        for prop in ("P69", "P800"):
            for edge in await wd.neighbors("Q42", prop):
                console.print(f"  Q42 --{prop} {edge.relation_label or ''}--> {edge.entity} {edge.label!r}")
        hits = await wd.search("The Hitchhiker's Guide to the Galaxy")
        console.print("search 'The Hitchhiker's Guide to the Galaxy':", ", ".join(f"{h.id} {h.label!r}" for h in hits))

        console.rule("[bold]Freebase-shaped demo KG: the same person (m.0282x)")
        rels = await fb.relations("m.0282x")
        console.print("relations (ToG's filter applied, CVTs expanded):")
        for r in rels:
            console.print(escape(f"  [{r.direction}] {r.relation}"))
        compound = next((r for r in rels if "|" in r.relation), None)
        if compound:
            for edge in await fb.neighbors("m.0282x", compound.relation, compound.direction):
                console.print(f"  m.0282x --{edge.relation}--> {edge.entity} {edge.label!r} (via CVT {', '.join(edge.via)})")
    console.rule()
    stats = wd.stats + fb.stats
    console.print(f"{stats['queries']} queries, {stats['cache_hits']} cache hits, "
                  f"{time.perf_counter() - started:.2f} s, offline on the embedded store")
    return 0
