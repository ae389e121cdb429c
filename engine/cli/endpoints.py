"""`kgfed endpoints`: the public endpoints kgfed knows, read from the profiles themselves.

    kgfed endpoints            # name, URL, dialect, graph, server, limits
    kgfed endpoints --json     # the same, plus search mode, composite parts and old URLs still accepted
"""
from __future__ import annotations

import argparse


def register(command, add_source_options, add_cache_options) -> None:
    p = command("endpoints", cmd_endpoints, "list the endpoint profiles (URL, dialect, graph, server, limits)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


async def cmd_endpoints(args: argparse.Namespace) -> int:
    from ...endpoints.profiles import PROFILES
    from .app import emit

    rows = [profile.to_json() for profile in PROFILES.values()]
    emit(args, rows, ["name", "url", "dialect", "graph", "server", "limits"], "endpoint profiles (--endpoint NAME)")
    return 0
