"""The method options `kgfed ask` and `kgfed run` share, and the `RunSpec` they describe."""
from __future__ import annotations

import argparse
import json
from typing import Any

from ...sparql.errors import KgfedError
from ..methods import REGISTRY

METHOD_NAMES = "|".join(REGISTRY)  # the built-in ones; `kgfed.methods` entry points add more


def add_method_options(parser: argparse.ArgumentParser) -> None:
    """--method, --llm, --llm-concurrency, --param KEY=VALUE (repeatable), --width, --depth, --text."""
    parser.add_argument("--method", "-m", default="tog", help=f"{METHOD_NAMES}, or package.module:Class (default tog)")
    parser.add_argument("--llm", default="none",
                        help="anthropic[:MODEL] | openai:URL[#MODEL] | replay:DIR | record:DIR:SPEC | gold (kgfed run: a gold-guided stand-in, not a model) | none (default: none, LLM-free)")
    parser.add_argument("--llm-concurrency", type=int, metavar="N",
                        help="LLM calls in flight at once for the whole run, all questions together (default: no cap "
                             "of kgfed's own; the LLM host's HTTP cap, 16, still holds). 429/503/529 answers pause every "
                             "call and are retried (docs/llm.md)")
    parser.add_argument("--param", "-p", action=ParamAction, default=[], metavar="KEY=VALUE",
                        help="method parameter, repeatable (values parsed as JSON when they can be: width=3, pruning=bm25); "
                             "--param help lists the method's parameters, types, defaults and bounds")
    parser.add_argument("--width", type=int, help="beam width (the method's own name: ToG/ToG-2/INSES width, PoG/HydraRAG "
                        "max_width, PRoH beam, the agent's calls_per_turn)")
    parser.add_argument("--depth", type=int, help="maximum depth (ToG/ToG-2 depth, PoG/HydraRAG/PRoH max_depth, INSES "
                        "max_iter, the agent's turns)")
    parser.add_argument("--text", metavar="SOURCE", help="text source for methods that read passages: file:PATH.jsonl | wikipedia | demo")


class ParamAction(argparse._AppendAction):
    """`--param` (repeatable). `--param help` also asks the parser to list the method's parameters instead of
    refusing a command line that lacks the other required arguments (`kgfed run --method pog --param help`):
    `KgfedParser.error` prints `listing_instead()` and exits 0 for a "required" error, and only for that one."""

    def __call__(self, parser, namespace, values, option_string=None):
        super().__call__(parser, namespace, values, option_string)
        if isinstance(values, str) and values.strip().lower() in HELP_WORDS:
            parser.listing_instead = lambda: listing_for(namespace)


HELP_WORDS = ("help", "list")


def listing_for(namespace: argparse.Namespace) -> tuple[int, str]:
    """(exit status, text) of `--param help`: the parameters of the method named so far (default tog) on
    stdout and 0, or a one-line error and 2 (an unknown method)."""
    try:
        return 0, params_listing(getattr(namespace, "method", None) or "tog")
    except KgfedError as exc:
        return 2, f"kgfed: error: {exc}"


def method_params(args: argparse.Namespace) -> dict[str, Any]:
    """--param KEY=VALUE pairs (JSON values when they parse) plus --width/--depth.

    `--param help` prints the method's parameters (`params_listing`) and exits 0, as --help does."""
    params: dict[str, Any] = {}
    for item in getattr(args, "param", None) or []:
        if item.strip().lower() in HELP_WORDS:
            print(params_listing(getattr(args, "method", None) or "tog"))
            raise SystemExit(0)
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key.isidentifier():
            raise KgfedError(f"--param {item!r} is not KEY=VALUE: write e.g. --param width=3")
        try:
            params[key] = json.loads(value)
        except ValueError:
            params[key] = value
    for name in ("width", "depth"):
        value = getattr(args, name, None)
        if value is not None:
            if value < 1:
                raise KgfedError(f"--{name} must be at least 1")
            params[name] = value
    return params


def params_listing(method: str) -> str:
    """The parameters of `method` (a registry name or package.module:Class) as text, read from its `Params`
    dataclass: name, type, default, bounds or choices, the CLI names that mean it, and its help line."""
    from ..harness.runner import method_class
    from ..methods.params import shown

    cls = method_class(method)
    rows = cls.Params.describe()
    if not rows:
        return f"{cls.name} takes no parameters"
    cells = []
    for row in rows:
        accepts = (f"one of {', '.join(map(str, row['choices']))}" if row["choices"]
                   else f">= {row['low']:g}" if row["low"] is not None else "")
        names = row["name"] + "".join(f" (--{alias})" for alias in row["aliases"])
        cells.append((names, row["type"], shown(row["default"]), accepts, row["help"]))
    widths = [max(len(c[i]) for c in cells) for i in range(4)]
    lines = [f"{cls.name} parameters (--param KEY=VALUE; values cast to the type, checked against the bounds):"]
    lines += ["  " + "  ".join(c[i].ljust(widths[i]) for i in range(4)) + ("  " + c[4] if c[4] else "") for c in cells]
    return "\n".join(line.rstrip() for line in lines)


def run_spec(args: argparse.Namespace):
    """The RunSpec of `kgfed ask`/`run` options (`cli.options.run_spec`, where argparse names become value objects)."""
    from .options import run_spec as typed_run_spec

    return typed_run_spec(args)
