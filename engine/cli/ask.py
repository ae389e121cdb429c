"""`kgfed ask`: one question through a reasoning method; the answer, its reasoning paths and cost.

    kgfed ask "what country does justin bieber come from?" --method tog --kg freebase,wikidata \\
        --endpoint freebase=file:fb.nt --endpoint wikidata=file:wd.nt --llm none --topic m.06w2sn5,Q34086 \\
        --view paths.html --json

Without --topic, topic entities are linked from the question by label (Method.answer does it).
`add_method_options`/`method_params` are shared with `kgfed run`.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path

from ...sparql.errors import KgfedError
from ..federation.topics import topics_from_ids
from .method_options import add_method_options



def register(command, add_source_options, add_cache_options) -> None:
    from .federation import add_kg_options

    p = command("ask", cmd_ask, "answer one question with a KG reasoning method (ToG, PoG, HydraRAG, …)")
    p.add_argument("question", help="the question, in quotes")
    p.add_argument("--topic", "-t", action="append", default=[], metavar="ID[,ID…]",
                   help="topic entities (m.0abc / Q42; each goes to the KGs whose ids it fits); default: linked from the question")
    p.add_argument("--view", metavar="HTML", help="draw the reasoning paths as a self-contained HTML picture")
    p.add_argument("--layout", choices=["auto", "dot", "simple"], default="auto",
                   help="picture layout: Graphviz dot, the built-in circle, or auto (dot when installed)")
    add_method_options(p)
    add_kg_options(p)
    add_cache_options(p)


def paths_graph(result, kg_dialects: Mapping[str, str]):
    """A `MergedGraph` of the Result's reasoning paths (for views.to_html / to_dot)."""
    from ..federation.subgraph import Link, MergedGraph, Node, readable_relation

    topics = result.extra.get("topics") or {}
    merged = MergedGraph(dict(kg_dialects))
    index: dict[tuple[str, str], int] = {}

    def node(kg: str, ident: str, label: str | None) -> int:
        key = (kg, ident)
        if key not in index:
            index[key] = len(merged.nodes)
            merged.nodes.append(Node({kg: ident}, label, {kg: label} if label else {}, topic=ident in topics.get(kg, {})))
        elif label and not merged.nodes[index[key]].label:
            merged.nodes[index[key]].label = label
        return index[key]

    seen: set[tuple] = set()
    for hop, edge in ((h, e) for path in result.paths for h, e in enumerate(path, 1)):
        key = (edge.kg, edge.subject, edge.relation, edge.object)
        if key in seen:
            continue
        seen.add(key)
        subject = node(edge.kg, edge.subject, edge.subject_label)
        obj = node(edge.kg, edge.object, edge.object_label)
        merged.edges.append(Link(edge.kg, subject, edge.relation, obj, readable_relation(edge.relation, edge.relation_label),
                                 edge.via, hop))
    return merged


def _print_result(result) -> None:
    from rich.console import Console
    from rich.markup import escape

    console = Console()
    console.print(f"[bold]answer:[/bold] {escape(result.answer) or '(none)'}"
                  + (f"  [dim]({escape(', '.join(result.answer_ids[:5]))})[/dim]" if result.answer_ids else ""))
    if result.paths:
        console.print(f"[bold]reasoning paths[/bold] ({len(result.paths)}):")
        for text in result.path_texts()[:20]:
            console.print(f"  {escape(text)}")
        if len(result.paths) > 20:
            console.print(f"  … {len(result.paths) - 20} more (use --json or --view)")
    else:
        console.print("[bold]reasoning paths:[/bold] none")
    if result.reasoning:
        console.print(f"[bold]reasoning:[/bold] {escape(result.reasoning[:600])}")
    console.print("[dim]cost: " + escape(", ".join(f"{k}={v:g}" for k, v in sorted(result.cost.items()))) + "[/dim]")


async def _warn_absent_topics(args: argparse.Namespace, topics: Mapping[str, Mapping[str, str]], kgs) -> None:
    """One warning per KG naming the --topic ids it holds neither a label nor an edge of (a typo, a deleted
    item): the method would start from nothing and answer nothing, which must not pass silently."""
    from .app import warn_unknown

    for name, ids in topics.items():
        unnamed = [i for i, label in ids.items() if label == i]
        if unnamed:
            found = await kgs[name].relations_many(unnamed, "both")
            warn_unknown(args, [i for i in unnamed if not found.get(i)], "label or edge", name)


async def cmd_ask(args: argparse.Namespace) -> int:
    from .federation import kg_names
    from .options import run_spec
    from ..harness.runner import Runtime

    if not args.question.strip():
        raise KgfedError("the question is empty: give it in quotes, e.g. kgfed ask \"who founded Apple?\"")
    if args.view:
        from .options import check_writable

        check_writable(args.view, "--view")
    kg_names(args)
    ids = [i.strip() for item in args.topic for i in item.split(",") if i.strip()]
    from .app import Spinner

    with Spinner(f"answering with {args.method}…"):
        async with Runtime(run_spec(args)) as runtime:
            topics = await topics_from_ids(ids, runtime.kgs) if ids else None
            if topics:
                await _warn_absent_topics(args, topics, runtime.kgs)
            result = await runtime.method.answer(args.question, topics)
            dialects = {name: kg.dialect.name for name, kg in runtime.kgs.items()}
    if args.view:
        from ..federation import views

        title = f"kgfed ask ({result.method}): {args.question}"
        try:
            Path(args.view).write_text(views.to_html(paths_graph(result, dialects), title, layout=args.layout), encoding="utf-8")
        except OSError as exc:
            raise KgfedError(f"cannot write {args.view}: {exc.strerror}") from None
        print(f"kgfed: wrote {args.view}", file=sys.stderr)
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False, indent=1))
    elif not sys.stdout.isatty():  # a pipe or file: tab-separated, one row per reasoning path, nothing cut
        from .app import emit

        joined = " ".join(result.answer_ids)
        rows = [{"answer": result.answer, "answer_ids": joined, "path": text} for text in result.path_texts()]
        args.warned = True  # an answer without paths is still an answer
        emit(args, rows or [{"answer": result.answer, "answer_ids": joined, "path": ""}], ["answer", "answer_ids", "path"])
    else:
        _print_result(result)
    return 0
