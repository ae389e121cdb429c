"""`kgfed serve`: the agent method's tool profiles as an HTTP tool server that RL rollouts share (docs/serve.md).

    kgfed serve                                                       # the embedded demo KGs, 127.0.0.1:8766
    kgfed serve --kg freebase --endpoint freebase=freebase@http://127.0.0.1:8890/sparql --port 8766
    KGFED_SERVE_TOKEN=... kgfed serve --host 0.0.0.0                  # off loopback: a bearer token is required
    kgfed serve --record-calls runs/calls                             # every answer kept; later:
    kgfed serve --replay-calls runs/calls --offline                   # the same answers, byte for byte, no KG
"""
from __future__ import annotations

import argparse
import os
import sys

from ...endpoints.options import DEFAULT_QUERY_MEMORY_MB
from ...sparql.errors import KgfedError

TOKEN_ENV = "KGFED_SERVE_TOKEN"


def register(command, add_source_options, add_cache_options) -> None:
    from .federation import add_kg_options

    p = command("serve", cmd_serve, "serve the agent tool profiles over HTTP for RL rollouts (127.0.0.1 by default)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; any other needs a bearer "
                                                        f"token in ${TOKEN_ENV} or --token-file)")
    p.add_argument("--port", type=_whole, default=8766, help="TCP port (default 8766; 0: any free one, printed)")
    p.add_argument("--token-file", metavar="FILE", help=f"a file holding the bearer token (else ${TOKEN_ENV})")
    p.add_argument("--profiles", metavar="NAME[,NAME]", help="tool profiles to offer (default: every one that applies "
                                                             "to the KGs: kgfed, sog, kg-r1, graphwalker, wmde)")
    p.add_argument("--deadline", type=float, default=30.0, metavar="S", help="seconds a tool call may take (default 30)")
    p.add_argument("--max-inflight", type=int, default=64, metavar="N", help="tool calls run at once (default 64)")
    p.add_argument("--max-queue", type=_whole, default=1024, metavar="N",
                   help="calls waiting for a slot; past it a call gets 429 with Retry-After (default 1024)")
    p.add_argument("--coalesce-ms", type=_number, default=2.0, metavar="MS",
                   help="window gathering concurrent relations/labels calls into one batched query (default 2; 0: off)")
    p.add_argument("--query-memory", type=int, default=DEFAULT_QUERY_MEMORY_MB, metavar="MB",
                   help=f"sparql tools on a file store: memory one query may add, in MB (default {DEFAULT_QUERY_MEMORY_MB})")
    p.add_argument("--query-workers", type=int, default=2, metavar="N", help="sparql tools: queries at once (default 2)")
    p.add_argument("--record-calls", metavar="DIR", help="append every call's answer to DIR/calls.jsonl (replayable)")
    p.add_argument("--replay-calls", metavar="DIR", help="answer from DIR/calls.jsonl only, byte for byte (no KG is asked)")
    add_kg_options(p)
    add_cache_options(p)


def _whole(text: str) -> int:
    """A whole number ≥ 0 (the checks of `_check` give each option its range)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {value}")
    return value


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {text}")
    return value


def _token(args: argparse.Namespace) -> str | None:
    if args.token_file:
        try:
            with open(args.token_file, encoding="utf-8") as handle:
                token = handle.read().strip()
        except OSError as exc:
            raise KgfedError(f"--token-file {args.token_file}: cannot read it ({exc.strerror or exc})") from None
    else:
        token = os.environ.get(TOKEN_ENV, "").strip()
    if token and (len(token) < 16 or not token.isprintable() or " " in token):
        raise KgfedError("the bearer token must be at least 16 printable characters without spaces: use a long random "
                         "secret (e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')")
    return token or None


def _check(args: argparse.Namespace) -> None:
    if not 0 <= args.port < 65536:
        raise KgfedError(f"--port {args.port} is not a TCP port: give 0-65535")
    if not 0 < args.deadline <= 3600:
        raise KgfedError(f"--deadline {args.deadline:g} is out of range: give 0 < S <= 3600")
    for name, low, high in (("max_inflight", 1, 4096), ("max_queue", 0, 1 << 20), ("query_workers", 1, 16),
                            ("query_memory", 64, 1 << 20)):
        value = getattr(args, name)
        if not low <= value <= high:
            raise KgfedError(f"--{name.replace('_', '-')} {value} is out of range: give {low}-{high}")
    if not 0 <= args.coalesce_ms <= 1000:
        raise KgfedError(f"--coalesce-ms {args.coalesce_ms:g} is out of range: give 0-1000")


async def cmd_serve(args: argparse.Namespace) -> int:
    from ..serve import ServeOptions, ToolServer, run_server
    from .federation import kg_specs
    from .options import cache_options, http_options

    _check(args)
    specs = kg_specs(args)
    profiles = tuple(p.strip() for p in (args.profiles or "").split(",") if p.strip())
    options = ServeOptions(kgs=tuple(specs), http=http_options(args), cache=cache_options(args), profiles=profiles,
                           host=args.host, port=args.port, token=_token(args), deadline=args.deadline,
                           max_inflight=args.max_inflight, max_queue=args.max_queue, coalesce_ms=args.coalesce_ms,
                           query_workers=args.query_workers, query_memory_mb=args.query_memory,
                           record=args.record_calls, replay=args.replay_calls)
    server = ToolServer.open(options)

    def ready(port: int) -> None:
        auth = " (bearer token required)" if options.token else ""
        print(f"kgfed serve: listening on http://{options.host}:{port}{auth}; profiles {', '.join(server.profiles)}; "
              f"KGs {', '.join(server.kgs)}; Ctrl-C stops", file=sys.stderr, flush=True)

    return await run_server(server, ready)
