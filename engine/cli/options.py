"""The options every `kgfed` command shares, and the one place argparse names become value objects.

argparse spells a run's configuration as flat option names (`--timeout`, `--cache-dir`, `--kg`, ...);
the library takes frozen value objects. The translation happens here and nowhere else:

    args (argparse.Namespace)
      -> http_options(args)   HttpOptions    (--timeout, --user-agent, --contact, --concurrency)
      -> cache_options(args)  CacheOptions   (--cache-dir, --no-cache, --offline, --refresh, --max-age)
      -> align_options(args)  AlignOptions   (--methods, --threshold, --margin)
      -> kg_specs(args)       [KGSpec, ...]  (--kg, --endpoint, --dialect, --partial, --fallback; cli.federation)
      -> session_spec(args)   SessionSpec    (all of the above, plus --llm, --llm-concurrency, --text)
      -> run_spec(args)       RunSpec        (the session spec's parts, plus --method, --param)

A command opens one `Session(session_spec(args))` (`kgfed.engine.session`), the only thing that builds the
run's HTTP client, response cache and KGs; a one-KG command's `open_kg(args)` is a session of that one KG.

so adding an option is: its `add_argument` here (or in its command's module), its field on the value
object with the default written once there, and one keyword in the function above. Every numeric
option is also checked here when parsed (`check_numbers` gives each int/float option a range), so a
`--concurrency 0` or `--timeout 0` is refused up front instead of hanging.
"""
from __future__ import annotations

import argparse
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...cache.options import CacheOptions
from ...endpoints.options import DEFAULT_QUERY_MEMORY_MB, DEFAULT_TIMEOUT, HttpOptions
from ...sparql.dialects import DIALECT_REGISTRY
from ...sparql.errors import KgfedError
from ..config import AlignOptions, KGSpec, SessionSpec

if TYPE_CHECKING:
    from ..harness.runner import RunSpec
    from ..session import Session
    from ..kg.facade import KG

__all__ = ["add_source_options", "add_cache_options", "add_query_memory_option", "query_memory", "http_options", "cache_options", "align_options", "session_spec",
           "run_spec", "open_kg", "OneKG", "check_writable", "check_numbers", "positive_int", "nonnegative_int",
           "positive_float", "fraction", "port"]

_ALIGN = AlignOptions()  # the alignment defaults, written once in AlignOptions


def add_source_options(parser: argparse.ArgumentParser) -> None:
    """--endpoint/--dialect and the cache/etiquette options every KG command takes."""
    parser.add_argument("--endpoint", "-e", default=None,
                        help="wikidata | qlever-wikidata | qlever-freebase | file:PATH[,PATH] | http(s)://URL (default: the demo KG)")
    parser.add_argument("--dialect", choices=DIALECT_REGISTRY, metavar="DIALECT",
                        help="%(choices)s: needed for URLs; guessed for files")
    add_cache_options(parser)


def add_cache_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cache-dir", help="cache root: a directory (default $KGFED_CACHE_DIR, else ~/.cache/kgfed) "
                        "or redis://HOST:PORT/DB to share answers between machines")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the response cache")
    parser.add_argument("--offline", action="store_true", help="answer only from the cache; a miss is an error")
    parser.add_argument("--verbose", "-v", action="count", default=0,
                        help="log on stderr: -v retries, 429 pauses and warnings; -vv every request and cache hit")
    parser.add_argument("--record", metavar="CASSETTE", help="record HTTP to a vcrpy cassette (replayed when it exists)")
    parser.add_argument("--replay", metavar="CASSETTE", help="replay HTTP from a vcrpy cassette only (never the network)")
    parser.add_argument("--user-agent", help="the whole User-Agent for HTTP (default kgfed/VERSION (CONTACT) aiohttp/VERSION)")
    parser.add_argument("--contact", help="your email or URL for the User-Agent, which Wikimedia requires "
                                          "(default $KGFED_CONTACT, or contact = \"...\" in ~/.config/kgfed/config.toml)")
    parser.add_argument("--timeout", type=positive_float, default=DEFAULT_TIMEOUT,
                        help=f"per-request timeout in seconds (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--concurrency", type=positive_int, help="max parallel requests per host (WDQS default 5)")
    parser.add_argument("--refresh", action="store_true", help="re-fetch every answer once and store the new one")
    parser.add_argument("--max-age", type=positive_float, metavar="SECONDS",
                        help="serve cached answers at most this old (default: a week for live Wikidata endpoints, "
                             "unlimited for files, Freebase and local servers)")
    parser.add_argument("--partial", choices=["error", "retry", "allow"], default=None,
                        help="answers a server marks incomplete (Virtuoso timeout/row cap): error (default), retry "
                             "with longer timeouts then error, or allow them (flagged; exit status 3)")
    parser.add_argument("--fallback", action="append", default=None, metavar="[KG=]SPEC",
                        help="an endpoint to ask while the KG's is down or keeps failing (5xx, refused connections, a "
                             "ban-length 429), repeatable, in order: e.g. --endpoint wikidata --fallback qlever-wikidata")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


# -- numeric options: checked when parsed ----------------------------------------------------------
def _number(kind: type, text: str, low: float | None, high: float | None, low_open: bool = False):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {'a whole number' if kind is int else 'a number'}, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    if low is not None and (value <= low if low_open else value < low) or high is not None and value > high:
        shown = (lambda v: str(int(v))) if kind is int else (lambda v: f"{v:g}")  # 1048576, not 1.04858e+06
        if high is None or high >= MAX_INT and value <= high:  # too small, and the top is only the integer's width
            bounds = f"> {shown(low)}" if low_open else f">= {shown(low)}"
        elif high >= MAX_INT:
            bounds = f"at most {shown(high)} (a 64-bit integer)"
        else:
            bounds = f"between {shown(low)} and {shown(high)}"
        raise argparse.ArgumentTypeError(f"must be {bounds}, got {text}")
    return value


MAX_INT = (1 << 63) - 1  # a LIMIT past a 64-bit integer is a parser error in every store (pyoxigraph's leaked out)


def positive_int(text: str) -> int:
    """argparse type: a whole number >= 1 (and at most `MAX_INT`)."""
    return _number(int, text, 1, MAX_INT)


def nonnegative_int(text: str) -> int:
    """argparse type: a whole number >= 0 (options where 0 means none/all; at most `MAX_INT`)."""
    return _number(int, text, 0, MAX_INT)


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0 (timeouts)."""
    return _number(float, text, 0, None, low_open=True)


def fraction(text: str) -> float:
    """argparse type: a number between 0 and 1 (similarity thresholds and margins)."""
    return _number(float, text, 0, 1)


def query_memory(text: str) -> int:
    """argparse type: MB a query on a file store may use on top of the loaded store (64 MB to 1 TB)."""
    return _number(int, text, 64, 1 << 20)


def add_query_memory_option(parser: argparse.ArgumentParser) -> None:
    """--query-memory: a caller's query on a file store runs in a worker process ended past this much memory
    (and past --timeout); the default is `HttpOptions.query_memory_mb`."""
    parser.add_argument("--query-memory", type=query_memory, default=DEFAULT_QUERY_MEMORY_MB, metavar="MB",
                        help="on a file store: memory the query may use on top of the loaded store, in MB (default "
                             f"{DEFAULT_QUERY_MEMORY_MB}; its worker process is ended past it, or past --timeout)")


def port(text: str) -> int:
    """argparse type: a TCP port 1-65535."""
    return _number(int, text, 1, 65535)


# Options whose 0 means something (none / all / omit); every other int option must be >= 1.
ZERO_ALLOWED = {"--maxlag", "--overlap", "--seed", "--query-timeout"}
FRACTIONS = {"--threshold", "--margin", "--align-relations"}
PORTS = {"--port", "--isql-port"}


def _range_for(action: argparse.Action):
    """The checked type of a numeric option (None when it has none or already has a checked one)."""
    if action.type not in (int, float):
        return None
    names = set(action.option_strings)
    if names & PORTS:
        return port
    if action.type is float:
        return fraction if names & FRACTIONS else positive_float
    if names & ZERO_ALLOWED or re.search(r"(?<![\d.])0 (=|to |means)", action.help or ""):  # "0 = all", "0 to omit"
        return nonnegative_int
    return positive_int


def check_numbers(parser: argparse.ArgumentParser) -> None:
    """Give every plain int/float option of every sub-command a range (modules register `type=int`)."""
    for action in parser._actions:
        checked = _range_for(action)
        if checked is not None:
            action.type = checked
        subparsers = action.choices if isinstance(action.choices, dict) else {}  # (a registry's names are no parsers)
        for sub in subparsers:
            if isinstance(subparsers[sub], argparse.ArgumentParser):
                check_numbers(subparsers[sub])


# -- argparse names -> value objects ---------------------------------------------------------------
def http_options(args: argparse.Namespace) -> HttpOptions:
    """`HttpOptions` from --timeout/--user-agent/--contact/--concurrency (absent options: its defaults)."""
    timeout = getattr(args, "timeout", None)
    memory = getattr(args, "query_memory", None)
    return HttpOptions(timeout=DEFAULT_TIMEOUT if timeout is None else timeout, user_agent=getattr(args, "user_agent", None),
                       contact=getattr(args, "contact", None), concurrency=getattr(args, "concurrency", None),
                       query_memory_mb=DEFAULT_QUERY_MEMORY_MB if memory is None else memory)


def cache_options(args: argparse.Namespace) -> CacheOptions:
    """`CacheOptions` from --cache-dir/--no-cache/--offline/--refresh/--max-age (absent options: its defaults)."""
    return CacheOptions(root=getattr(args, "cache_dir", None), enabled=not getattr(args, "no_cache", False),
                        offline=bool(getattr(args, "offline", False)), refresh=bool(getattr(args, "refresh", False)),
                        max_age=getattr(args, "max_age", None))


def align_options(args: argparse.Namespace) -> AlignOptions:
    """`AlignOptions` from --methods (`p646,label,sbert` or `auto`)/--threshold/--margin."""
    methods = getattr(args, "methods", None) or _ALIGN.methods
    if isinstance(methods, str) and methods != "auto":
        methods = tuple(m.strip() for m in methods.split(",") if m.strip())
    threshold, margin = getattr(args, "threshold", None), getattr(args, "margin", None)
    return AlignOptions(methods=methods, threshold=_ALIGN.threshold if threshold is None else threshold,
                        margin=_ALIGN.margin if margin is None else margin)


def session_spec(args: argparse.Namespace, *, kgs: Sequence[KGSpec] | None = None, **parts: Any) -> SessionSpec:
    """The command's `SessionSpec`, built once from its options: the KGs (`kgs`; default: --kg/--endpoint/--dialect
    of a command that federates KGs, else none), HTTP, cache, alignment, --llm/--llm-concurrency and --text;
    `parts` are the command's own (`text`, `text_mode`, `maxlag`, `embeddings`)."""
    if kgs is None:
        from .federation import kg_specs

        kgs = kg_specs(args) if hasattr(args, "kg") else ()
    defaults = {"llm": getattr(args, "llm", None) or "none", "llm_concurrency": getattr(args, "llm_concurrency", None),
                "text": getattr(args, "text", None)}
    return SessionSpec(kgs=tuple(kgs), http=http_options(args), cache=cache_options(args), align=align_options(args),
                       **{**defaults, **parts})


def run_spec(args: argparse.Namespace) -> RunSpec:
    """The `RunSpec` of `kgfed ask`/`run` options: method and params over the command's `session_spec`."""
    from ..harness.runner import RunSpec
    from .method_options import method_params

    spec = session_spec(args)
    return RunSpec(args.method, method_params(args), kgs=spec.kgs, http=spec.http, cache=spec.cache, llm=spec.llm,
                   text=spec.text, llm_concurrency=spec.llm_concurrency)


def open_kg(args: argparse.Namespace, spec: str | None = None, dialect: str | None = None,
            name: str | None = None) -> OneKG:
    """`async with open_kg(args) as kg`: the one KG of a one-KG command (the demo Wikidata KG when no endpoint is
    given) in a `Session` of the command's options (`session_spec(args)`), closed with it."""
    from ..data import default_endpoint

    dialect = dialect or getattr(args, "dialect", None)
    endpoint = spec or args.endpoint or default_endpoint(dialect)
    return OneKG(session_spec(args, kgs=(), llm="none", text=None), endpoint, dialect=dialect, name=name,
                 partial=getattr(args, "partial", None), fallbacks=tuple(getattr(args, "fallback", None) or ()))


class OneKG:
    """A session of one KG (`Session.add_endpoint`): entered, it opens the session and gives the KG; left, it
    closes the session (the KG, its response cache and the client)."""

    def __init__(self, spec: SessionSpec, endpoint: str, **kg: Any):
        self.spec, self.endpoint, self.kg = spec, endpoint, kg
        self.session: Session | None = None

    async def __aenter__(self) -> KG:
        from ..session import Session

        self.session = Session(self.spec).open()
        try:
            return self.session.add_endpoint(self.endpoint, **self.kg)
        except BaseException:
            await self.session.aclose()
            raise

    async def __aexit__(self, *exc: object) -> None:
        if self.session is not None:
            await self.session.aclose()


EXAMPLE_NAMES = {"--view": "view.html", "--dot": "view.dot", "--rdf": "subgraph.trig", "--costs": "costs.json"}  # else: predictions


def check_writable(path: str | os.PathLike, option: str) -> None:
    """Fail before any work when an output path cannot be written (a directory, a missing or read-only
    directory, a read-only file), with one line naming the option: not after a long run, at its end."""
    target = Path(path)
    if target.is_dir():
        example = target / EXAMPLE_NAMES.get(option, "out.jsonl")  # a name of the kind the option writes
        raise KgfedError(f"{option} {path} is a directory: give a file path, e.g. {example}")
    parent = target.parent
    if not parent.is_dir():
        raise KgfedError(f"cannot write {path}: directory {parent} does not exist (create it, or give another {option})")
    probe = parent / f".{target.name}.{os.getpid()}.probe"
    try:
        probe.open("w").close()  # the directory takes new files (outputs are replaced atomically through one)
        probe.unlink()
        if target.exists():
            target.open("a").close()
    except OSError as exc:
        raise KgfedError(f"cannot write {path}: {exc.strerror or exc} (give a writable {option})") from None
