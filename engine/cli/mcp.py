"""`kgfed mcp`: serve the engine to LLM agents over the Model Context Protocol (stdio or streamable HTTP).

    kgfed mcp                                                    # stdio, demo KGs (Freebase + Wikidata)
    kgfed mcp --kg wikidata --endpoint wikidata=wikidata --user-agent "my-agent/1.0 (me@example.org)"
    kgfed mcp --transport http --port 8765 --kg freebase,wikidata \\
        --endpoint freebase=file:fb.nt --endpoint wikidata=file:wd.nt --replay session.yaml --offline

The `mcp` SDK (extra `mcp`) is imported only when the command runs; see docs/mcp.md. The `sparql` tool's
queries on a file store run in killable worker processes bounded by `--timeout` and `--query-memory`.
"""
from __future__ import annotations

import argparse

from ...endpoints.options import DEFAULT_QUERY_MEMORY_MB
from ...sparql.errors import KgfedError


def register(command, add_source_options, add_cache_options) -> None:
    from .method_options import METHOD_NAMES
    from .federation import add_alignment_options, add_kg_options

    p = command("mcp", cmd_mcp, "serve the KGs as MCP tools for LLM agents (stdio, or streamable HTTP on 127.0.0.1)")
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                   help="stdio (default: Claude Desktop/Code launch the command) or streamable HTTP on 127.0.0.1")
    p.add_argument("--port", type=int, default=8765, help="HTTP port on 127.0.0.1 (default 8765)")
    p.add_argument("--llm", default="none",
                   help=f"LLM of the ask tool ({METHOD_NAMES}): anthropic[:MODEL] | openai:URL[#MODEL] | replay:DIR | none (default)")
    p.add_argument("--llm-concurrency", type=int, metavar="N",
                   help="LLM calls in flight at once for all ask tool calls together (default: no cap of kgfed's own)")
    p.add_argument("--text-source", help="text of the context tool: wikipedia | demo | file:PATH.jsonl "
                                         "(default: wikipedia beside a live endpoint, else the demo extracts)")
    p.add_argument("--query-memory", type=int, default=DEFAULT_QUERY_MEMORY_MB, metavar="MB",
                   help="sparql tool on a file store: memory one query may use on top of the loaded store, in MB "
                        f"(default {DEFAULT_QUERY_MEMORY_MB}; the query's worker process is ended past it)")
    p.add_argument("--query-workers", type=int, default=2, metavar="N",
                   help="sparql tool: queries run at once (and worker processes per file store; default 2)")
    add_kg_options(p)
    add_alignment_options(p)
    add_cache_options(p)
    for action in p._actions:  # tool results are JSON already: --json means nothing here
        if "--json" in action.option_strings:
            action.help = argparse.SUPPRESS


async def cmd_mcp(args: argparse.Namespace) -> int:
    import importlib.util

    from .federation import kg_specs

    if not 0 < args.port < 65536:
        raise KgfedError(f"--port {args.port} is not a TCP port: give 1-65535")
    if not 64 <= args.query_memory <= 1 << 20:
        raise KgfedError(f"--query-memory {args.query_memory} MB is out of range: give 64-1048576")
    if not 1 <= args.query_workers <= 16:
        raise KgfedError(f"--query-workers {args.query_workers} is out of range: give 1-16")
    if importlib.util.find_spec("mcp") is None:
        raise KgfedError("the MCP SDK is not installed: pip install 'kgfed[mcp]'")
    specs = kg_specs(args)  # validate --kg/--endpoint before anything starts
    await _check_llm(args.llm)
    from ..mcp.server import ServerOptions, serve
    from .options import align_options, cache_options, http_options

    return await serve(ServerOptions(kgs=tuple(specs), http=http_options(args), cache=cache_options(args),
                                     align=align_options(args),
                                     llm=args.llm, llm_concurrency=args.llm_concurrency,
                                     text_source=args.text_source, transport=args.transport, port=args.port,
                                     query_memory_mb=args.query_memory, query_workers=args.query_workers))


async def _check_llm(spec: str) -> None:
    """--llm built (and closed) before the server starts: a bad spec is one line now, not at the first ask call."""
    from ..toolbox.llm import make_llm

    await make_llm(spec).aclose()
