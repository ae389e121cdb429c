"""The `kgfed` command line: 1-hop lookups, raw queries, and the commands other modules register.

Every command exits 0 on success and 2 with one line `kgfed: error: …` on bad input or a failing
source. Heavy libraries (torch, sentence-transformers) are imported only by commands that need them.
"""
from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..sparql.errors import KgfedError

DEMO_DIR = Path(__file__).resolve().parent / "data"
# Modules that add sub-commands: each has `register(subparsers, common)`; imported lazily per run.
COMMAND_MODULES: list[str] = [".cli_context", ".cli_federation", ".evaluate", ".cli_freebase", ".cli_ask", ".cli_run"]
Handler = Callable[[argparse.Namespace], Awaitable[int]]


# -- shared options --------------------------------------------------------------------------------
def add_source_options(parser: argparse.ArgumentParser) -> None:
    """--endpoint/--dialect and the cache/etiquette options every KG command takes."""
    parser.add_argument("--endpoint", "-e", default=None,
                        help="wikidata | qlever-wikidata | qlever-freebase | file:PATH[,PATH] | http(s)://URL (default: the demo KG)")
    parser.add_argument("--dialect", choices=["wikidata", "freebase"], help="needed for URLs; guessed for files")
    add_cache_options(parser)


def add_cache_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cache-dir", help="response cache directory (default ~/.cache/kgfed, or $KGFED_CACHE_DIR)")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the response cache")
    parser.add_argument("--offline", action="store_true", help="answer only from the cache; a miss is an error")
    parser.add_argument("--record", metavar="CASSETTE", help="record HTTP to a vcrpy cassette (replayed when it exists)")
    parser.add_argument("--replay", metavar="CASSETTE", help="replay HTTP from a vcrpy cassette only (never the network)")
    parser.add_argument("--user-agent", help="User-Agent for HTTP (Wikimedia asks for contact info)")
    parser.add_argument("--timeout", type=float, default=60.0, help="per-request timeout in seconds (default 60)")
    parser.add_argument("--concurrency", type=int, help="max parallel requests per host (WDQS default 5)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def open_kg(args: argparse.Namespace, spec: str | None = None, dialect: str | None = None, name: str | None = None):
    """A `KG` from the parsed options (the demo Wikidata KG when no endpoint is given)."""
    from .kg import KG
    from .demo import default_endpoint

    spec = spec or args.endpoint or default_endpoint(dialect or getattr(args, "dialect", None))
    kwargs: dict[str, Any] = {"dialect": dialect or getattr(args, "dialect", None), "cache_dir": args.cache_dir,
                              "cache": not args.no_cache, "offline": args.offline, "timeout": args.timeout,
                              "concurrency": args.concurrency, "name": name}
    if args.user_agent:
        kwargs["user_agent"] = args.user_agent
    return KG.open(spec, **kwargs)


def emit(args: argparse.Namespace, rows: list[dict[str, Any]], columns: list[str], title: str = "") -> None:
    """Rows as a JSON array (--json) or a readable table."""
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=title or None, show_lines=False)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*(escape("" if row.get(c) is None else str(row.get(c))) for c in columns))
    Console().print(table)
    if not rows:
        print("(no results)", file=sys.stderr)


# -- commands --------------------------------------------------------------------------------------
async def cmd_relations(args) -> int:
    async with open_kg(args) as kg:
        found = await kg.relations_many(args.entities, args.direction)
    rows = [r.to_json() for rels in found.values() for r in rels]
    emit(args, rows, ["entity", "direction", "relation", "label"], f"relations ({kg.name})")
    return 0


async def cmd_neighbors(args) -> int:
    async with open_kg(args) as kg:
        edges = await kg.neighbors(args.entity, args.relation, args.direction, limit=args.limit)
    rows = [e.to_json() for e in edges]
    emit(args, rows, ["direction", "relation", "entity", "label", "via"], f"{args.entity} {args.relation} ({kg.name})")
    return 0


async def cmd_labels(args) -> int:
    async with open_kg(args) as kg:
        labels = await kg.labels(args.ids)
    rows = [label.to_json() for label in labels.values()]
    for row in rows:
        row["aliases"] = ", ".join(row["aliases"]) if not args.json else row["aliases"]
    emit(args, rows, ["id", "label", "description", "aliases"])
    return 0


async def cmd_search(args) -> int:
    async with open_kg(args) as kg:
        hits = await kg.search(args.text, args.limit, mode=args.mode)
    emit(args, [h.to_json() for h in hits], ["id", "label", "description"], f"search {args.text!r} ({kg.name})")
    return 0


async def cmd_query(args) -> int:
    if args.file:
        try:
            query = Path(args.file).read_text(encoding="utf-8")
        except OSError as exc:
            raise KgfedError(f"cannot read query file {args.file}: {exc.strerror}") from None
    elif args.sparql:
        query = args.sparql
    else:
        raise KgfedError("no query: give it as an argument or with --file q.rq")
    async with open_kg(args) as kg:
        if args.rewrite:
            from ..sparql.rewrite import to_standard_sparql

            query = to_standard_sparql(query)
        result = await kg.select(query)
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False, indent=1))
    else:
        emit(args, [{v: (row[v].value if v in row else None) for v in result.vars} for row in result.rows], result.vars)
    if result.partial:
        print(f"kgfed: warning: partial result: {result.note}", file=sys.stderr)
    return 0


async def cmd_demo(args) -> int:
    """A few 1-hop lookups on the bundled demo KGs (both dialects), offline."""
    from .demo import run_demo

    return await run_demo(args)


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, Handler]]:
    parser = argparse.ArgumentParser(prog="kgfed", description="Async, cached, federated 1-hop SPARQL for KG reasoning.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    handlers: dict[str, Handler] = {}

    def command(name: str, handler: Handler, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        handlers[name] = handler
        return p

    p = command("relations", cmd_relations, "relations of one or more entities")
    p.add_argument("entities", nargs="+", help="Q42 / m.0d3k14 …")
    p.add_argument("--direction", choices=["out", "in", "both"], default="both")
    add_source_options(p)

    p = command("neighbors", cmd_neighbors, "neighbours of an entity over a relation")
    p.add_argument("entity")
    p.add_argument("relation", help="P69 / people.person.nationality / r1|r2 (through a CVT)")
    p.add_argument("--direction", choices=["out", "in"], default="out")
    p.add_argument("--limit", type=int)
    add_source_options(p)

    p = command("labels", cmd_labels, "labels, descriptions and aliases of ids")
    p.add_argument("ids", nargs="+")
    add_source_options(p)

    p = command("search", cmd_search, "entities by label")
    p.add_argument("text")
    p.add_argument("--limit", type=int, default=10)
    p.add_argument("--mode", choices=["exact", "contains", "mwapi"], help="default: mwapi on WDQS, exact elsewhere")
    add_source_options(p)

    p = command("query", cmd_query, "run a SPARQL SELECT/ASK")
    p.add_argument("sparql", nargs="?")
    p.add_argument("--file", "-f", help="read the query from a file")
    p.add_argument("--rewrite", action="store_true", help="rewrite Virtuoso-dialect gold SPARQL for standard engines")
    add_source_options(p)

    p = command("demo", cmd_demo, "offline tour of the bundled demo KGs")
    add_cache_options(p)

    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name, __package__).register(command, add_source_options, add_cache_options)
    return parser, handlers


def _recording_context(args: argparse.Namespace):
    from contextlib import nullcontext

    cassette = getattr(args, "record", None) or getattr(args, "replay", None)
    if not cassette:
        return nullcontext()
    from ..cache.recording import recording

    if getattr(args, "replay", None):
        if not Path(cassette).exists():
            raise KgfedError(f"no cassette at {cassette}: record one first with --record {cassette}")
        return recording(cassette, "none")
    return recording(cassette, "once" if not Path(cassette).exists() else "new_episodes")


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    parser, handlers = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    try:
        with _recording_context(args):
            return asyncio.run(handlers[args.command](args))
    except KgfedError as exc:
        print(f"kgfed: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kgfed: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # vcrpy's replay miss and other library errors: one line, never a traceback
        name = exc.__class__.__name__
        if name == "CannotOverwriteExistingCassetteException":
            print("kgfed: error: request not in the cassette (replay-only): record it with --record", file=sys.stderr)
            return 2
        if os.environ.get("KGFED_DEBUG"):
            raise
        print(f"kgfed: error: unexpected {name}: {str(exc).splitlines()[0] if str(exc) else ''} (set KGFED_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
