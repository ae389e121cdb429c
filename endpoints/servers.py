"""Throwaway local SPARQL servers for tests and offline runs: Virtuoso (Debian's virtuoso-opensource)
and Oxigraph (the `oxigraph` CLI from PyPI).

Both are context managers that start the server in a temporary directory on free localhost ports,
load N-Triples files, wait until the SPARQL endpoint answers, and stop it again:

    with VirtuosoServer({"http://kgfed.local/cwq": ["cwq_subgraph.nt"]}) as vt:
        vt.url                      # http://127.0.0.1:PORT/sparql (use default-graph-uri=GRAPH)
    with OxigraphServer(["codex_s.nt"]) as ox:
        ox.url                      # http://127.0.0.1:PORT/query

`serve_virtuoso` / `serve_oxigraph` run one in the foreground until Ctrl-C (for the CLI).
"""
from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO, TypeVar

from ..sparql.errors import KgfedError

PathLike = str | os.PathLike[str]

VIRTUOSO_INSTALL_HINT = "install Debian's virtuoso-opensource (apt-get install virtuoso-opensource)"
OXIGRAPH_INSTALL_HINT = "install the oxigraph CLI (pip install oxigraph, part of kgfed's dev extra)"


class ServerNotFound(KgfedError):
    """The server binary is not installed (or not on PATH)."""


class ServerError(KgfedError):
    """A local server failed to start, load data or stop."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on `host` right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def find_binary(names: Sequence[str], hint: str) -> Path:
    """Absolute path of the first of `names` on PATH or beside this Python (a venv's bin/)."""
    here = Path(sys.executable).parent
    for name in names:
        found = shutil.which(name) or shutil.which(name, path=str(here))
        if found:
            return Path(found).resolve()
    raise ServerNotFound(f"{names[0]} not found: {hint}")


def find_virtuoso() -> tuple[Path, Path]:
    """(virtuoso-t, isql-vt) absolute paths; raises ServerNotFound if either is missing."""
    return (
        find_binary(["virtuoso-t"], VIRTUOSO_INSTALL_HINT),
        find_binary(["isql-vt", "isql-v"], VIRTUOSO_INSTALL_HINT),
    )


def find_oxigraph() -> Path:
    """The `oxigraph` CLI's absolute path; raises ServerNotFound if missing."""
    return find_binary(["oxigraph"], OXIGRAPH_INSTALL_HINT)


def _data_files(files: Iterable[PathLike]) -> list[Path]:
    """Resolved paths of existing files (raises ServerError naming the missing one)."""
    out = []
    for f in files:
        p = Path(f).expanduser().resolve()
        if not p.is_file():
            raise ServerError(f"no data file at {str(f)!r}: give an existing N-Triples/Turtle file")
        out.append(p)
    return out


def _sql_string(text: str) -> str:
    """`text` as a single-quoted SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def _log_tail(path: Path, lines: int = 3) -> str:
    """The reason in a server's log, on one line: its error lines if it has any (a Rust panic's
    message, not its backtrace), else the last non-empty lines ("" if unreadable)."""
    try:
        return _reason(path.read_text(errors="replace"), lines)
    except OSError:
        return ""


def _reason(output: str, lines: int = 3) -> str:
    """The error in a program's output on one line: a Rust panic's message (not its backtrace), the
    lines that say error, else the last lines."""
    text = [ln.strip() for ln in output.splitlines() if ln.strip()]
    for line in text:
        if "` value: " in line:  # called `Result::unwrap()` on an `Err` value: THE REASON
            return line.split("` value: ", 1)[1][:400]
    noise = ("stack backtrace", "at ./", "at /", "note:", "thread '")
    text = [ln for ln in text if not ln.lower().startswith(noise) and not ln.split(":", 1)[0].strip().isdigit()]
    errors = [ln for ln in text if "error" in ln.lower() or "panicked" in ln.lower()]
    if len(errors) > 1 and errors[-1].startswith("Error: "):  # a summary after the real reason
        errors = errors[:-1]
    return " | ".join((errors or text)[-lines:])[:400]


def check_port_free(port: int, option: str, host: str = "127.0.0.1") -> None:
    """Raise ServerError when `port` is taken on `host` (before a server fails on it less clearly)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except PermissionError:
            raise ServerError(f"port {port} ({option}) needs privileges on {host}: pick one above 1024, "
                              "or leave the option out for a free port") from None
        except OSError:
            raise ServerError(f"port {port} ({option}) is already in use on {host}: stop what holds it, pick another, "
                              "or leave the option out for a free port") from None


class LocalServer:
    """Lifecycle shared by the local servers: temp workdir, start, readiness poll, stop, cleanup."""

    name = "server"

    def __init__(self, workdir: PathLike | None, startup_timeout: float) -> None:
        self._own_workdir = workdir is None
        self.workdir = Path(tempfile.mkdtemp(prefix=f"kgfed-{self.name}-")) if workdir is None else Path(workdir).expanduser().resolve()
        self._remove_workdir = self._workdir_finalizer()
        self.startup_timeout = startup_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.startup_seconds: float | None = None
        self.log_path = self.workdir / f"{self.name}.out"

    # -- to implement -------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """The SPARQL query endpoint."""
        raise NotImplementedError

    def _command(self) -> list[str]:
        raise NotImplementedError

    def _before_start(self) -> None:
        """Prepare the workdir (config, data) before the process starts."""

    def _after_start(self) -> None:
        """Work that needs the running server (bulk loads)."""

    def _ports(self) -> dict[str, int]:
        """The ports the server will bind, by the CLI option that sets them (checked before starting)."""
        return {}

    def _request_shutdown(self) -> None:
        """Ask the server to stop cleanly (default: SIGTERM)."""
        assert self.process is not None
        self.process.terminate()

    # -- lifecycle ------------------------------------------------------------------------------
    def _workdir_finalizer(self) -> weakref.finalize | None:
        """Removes a temporary workdir on stop() or garbage collection; None for a given workdir."""
        return weakref.finalize(self, shutil.rmtree, self.workdir, True) if self._own_workdir else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> LocalServer:
        """Start the server, wait until its endpoint answers, run post-start work; returns self."""
        if self.running:
            return self
        t0 = time.monotonic()
        for option, number in self._ports().items():
            check_port_free(number, option)
        try:
            self.workdir.mkdir(parents=True, exist_ok=True)
            probe = self.workdir / ".kgfed-write-test"
            probe.touch()
            probe.unlink()
        except OSError as exc:
            raise ServerError(f"cannot use {self.workdir} as the {self.name} workdir ({exc.strerror}): "
                              "give a writable --workdir, or leave it out for a temporary one") from None
        if self._remove_workdir is not None and not self._remove_workdir.alive:  # restarted after stop()
            self._remove_workdir = self._workdir_finalizer()
        try:
            self._before_start()
            with open(self.log_path, "ab") as log:
                # own session: a Ctrl-C in the terminal reaches us, and we shut the server down cleanly
                self.process = subprocess.Popen(
                    self._command(), cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, start_new_session=True,
                )
            atexit.register(self.stop)
            self._wait_ready(t0 + self.startup_timeout)
            self._after_start()
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def _wait_ready(self, deadline: float) -> None:
        """Poll the endpoint with `ASK {}` until it answers 200, the process dies, or the deadline passes."""
        probe = self.url + "?" + urllib.parse.urlencode({"query": "ASK {}"})
        while True:
            assert self.process is not None
            if self.process.poll() is not None:
                raise ServerError(
                    f"{self.name} exited during startup (code {self.process.returncode}): "
                    f"{_log_tail(self.log_path) or 'no output'}"
                    + ("" if self._own_workdir else f" (log: {self.log_path})")
                )
            try:
                req = urllib.request.Request(probe, headers={"Accept": "application/sparql-results+json"})
                with urllib.request.urlopen(req, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise ServerError(
                    f"{self.name} did not answer at {self.url} within {self.startup_timeout:.0f}s "
                    f"({_log_tail(self.log_path) or 'no output'}): raise startup_timeout or check the log"
                )
            time.sleep(0.2)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop cleanly, kill after `timeout` seconds, and remove a temporary workdir. Idempotent."""
        atexit.unregister(self.stop)
        proc = self.process
        if proc is not None and proc.poll() is None:
            try:
                self._request_shutdown()
                proc.wait(timeout=timeout)
            except Exception:
                proc.kill()
                proc.wait(timeout=10)
        self.process = None
        if self._remove_workdir is not None:
            self._remove_workdir()

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<{type(self).__name__} {self.url} {state}>"


class VirtuosoServer(LocalServer):
    """A throwaway Virtuoso 7 with N-Triples files bulk-loaded into named graphs.

    `graphs` maps a graph IRI to its files. Query a graph as the default graph with
    `default-graph-uri=IRI` (see `graph_url`): without it queries also see Virtuoso's ~2.5k system
    triples. `result_set_max_rows` and `max_query_execution_time` (seconds, the anytime timeout: 0 =
    none) go to the `[SPARQL]` section; `ini` adds/overrides any `{section: {key: value}}`.
    """

    name = "virtuoso"

    def __init__(
        self,
        graphs: Mapping[str, Sequence[PathLike]] | None = None,
        *,
        port: int | None = None,
        http_port: int | None = None,
        workdir: PathLike | None = None,
        result_set_max_rows: int = 10_000,
        max_query_execution_time: int = 0,
        max_query_cost_estimation_time: int | None = None,
        number_of_buffers: int = 10_000,
        max_dirty_buffers: int = 6_000,
        ini: Mapping[str, Mapping[str, str | int]] | None = None,
        startup_timeout: float = 60.0,
    ) -> None:
        self.virtuoso_binary, self.isql_binary = find_virtuoso()
        self.graphs = {g: _data_files(files) for g, files in (graphs or {}).items()}
        super().__init__(workdir, startup_timeout)
        self.port = port or free_port()
        self.http_port = http_port or free_port()
        self.ini_path = self.workdir / "virtuoso.ini"
        sparql: dict[str, str | int] = {
            "ResultSetMaxRows": result_set_max_rows,
            "MaxQueryExecutionTime": max_query_execution_time,
        }
        if max_query_cost_estimation_time is not None:
            sparql["MaxQueryCostEstimationTime"] = max_query_cost_estimation_time
        self._settings: dict[str, dict[str, str | int]] = {
            "Parameters": {"NumberOfBuffers": number_of_buffers, "MaxDirtyBuffers": max_dirty_buffers},
            "SPARQL": sparql,
        }
        for section, values in (ini or {}).items():
            self._settings.setdefault(section, {}).update(values)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/sparql"

    def _ports(self) -> dict[str, int]:
        return {"--port": self.http_port, "--isql-port": self.port}

    def graph_url(self, graph: str) -> str:
        """The endpoint URL with `default-graph-uri=graph`: queries without FROM see only that graph."""
        return f"{self.url}?{urllib.parse.urlencode({'default-graph-uri': graph})}"

    def ini_text(self) -> str:
        """The virtuoso.ini for this instance: everything inside the workdir, localhost only."""
        w = self.workdir
        dirs = [str(w), *sorted({str(p.parent) for files in self.graphs.values() for p in files})]
        sections: dict[str, dict[str, str | int | Path]] = {
            "Database": {
                "DatabaseFile": w / "virtuoso.db", "ErrorLogFile": w / "virtuoso.log",
                "LockFile": w / "virtuoso.lck", "TransactionFile": w / "virtuoso.trx",
                "xa_persistent_file": w / "virtuoso.pxa", "ErrorLogLevel": 7, "FileExtend": 200,
                "MaxCheckpointRemap": 2000, "Striping": 0, "TempStorage": "TempDatabase",
            },
            "TempDatabase": {
                "DatabaseFile": w / "virtuoso-temp.db", "TransactionFile": w / "virtuoso-temp.trx",
                "MaxCheckpointRemap": 2000, "Striping": 0,
            },
            "Parameters": {
                "ServerPort": f"127.0.0.1:{self.port}", "DisableUnixSocket": 1, "DisableTcpSocket": 0,
                "MaxClientConnections": 10, "CheckpointInterval": 60, "O_DIRECT": 0, "CaseMode": 2,
                "DirsAllowed": ", ".join(dirs), "MaxQueryMem": "1G", "ThreadsPerQuery": 2,
                "AsyncQueueMaxThreads": 4,
            },
            "HTTPServer": {
                "ServerPort": f"127.0.0.1:{self.http_port}", "ServerRoot": w / "www", "MaxClientConnections": 8,
                "ServerThreads": 8, "MaxKeepAlives": 8, "KeepAliveTimeout": 10, "EnabledGzipContent": 0,
            },
            "Client": {"SQL_QUERY_TIMEOUT": 0, "SQL_TXN_TIMEOUT": 0},
        }
        for section, values in self._settings.items():
            sections.setdefault(section, {}).update(values)
        return "".join(
            f"[{section}]\n" + "".join(f"{k} = {v}\n" for k, v in values.items()) + "\n"
            for section, values in sections.items()
        )

    def _before_start(self) -> None:
        (self.workdir / "www").mkdir(exist_ok=True)  # an empty web root: the database files stay private
        self.ini_path.write_text(self.ini_text())

    def _command(self) -> list[str]:
        return [str(self.virtuoso_binary), "+configfile", str(self.ini_path), "+foreground"]

    def _after_start(self) -> None:
        for graph, files in self.graphs.items():
            self.load(graph, files)

    def isql(self, sql: str, timeout: float = 600.0) -> str:
        """Run SQL statements through isql-vt as dba; returns stdout, raises ServerError on `*** Error`."""
        try:
            done = subprocess.run(
                [str(self.isql_binary), f"127.0.0.1:{self.port}", "dba", "dba", "VERBOSE=OFF", "BANNER=OFF",
                 "PROMPT=OFF", "ECHO=OFF", f"exec={sql}"],
                capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            raise ServerError(f"isql-vt did not finish within {timeout:.0f}s: {sql[:80]!r}") from None
        output = done.stdout + done.stderr
        if done.returncode != 0 or "*** Error" in output:
            detail = next((ln for ln in output.splitlines() if "Error" in ln), output.strip()[:200])
            raise ServerError(f"isql-vt failed on {sql[:60]!r}: {detail.strip()}")
        return done.stdout

    def load(self, graph: str, files: Sequence[PathLike]) -> None:
        """Bulk-load files into `graph` (their directories must be in DirsAllowed: pass them at init)."""
        paths = _data_files(files)
        allowed = [self.workdir, *(p.parent for fs in self.graphs.values() for p in fs)]
        outside = [str(p) for p in paths if not any(p.is_relative_to(a) for a in allowed)]
        if outside:
            raise ServerError(f"{outside[0]} is outside DirsAllowed: list it in VirtuosoServer(graphs=...) before start")
        adds = " ".join(f"ld_add({_sql_string(str(p))}, {_sql_string(graph)});" for p in paths)
        self.isql(f"{adds} rdf_loader_run(); checkpoint;")
        failed = self.isql("select ll_file, ll_error from DB.DBA.LOAD_LIST where ll_error is not null;")
        if any(str(p) in failed for p in paths):
            raise ServerError(f"Virtuoso could not load into {graph}: {' '.join(failed.split())[:300]}")

    def _request_shutdown(self) -> None:
        try:
            self.isql("shutdown;", timeout=30)
        except KgfedError:
            assert self.process is not None
            self.process.terminate()


class OxigraphServer(LocalServer):
    """A throwaway read-only Oxigraph server over RDF files loaded into its default graph (or `graph`)."""

    name = "oxigraph"

    def __init__(
        self,
        files: Sequence[PathLike],
        *,
        graph: str | None = None,
        port: int | None = None,
        workdir: PathLike | None = None,
        timeout_s: int | None = None,
        startup_timeout: float = 60.0,
    ) -> None:
        self.binary = find_oxigraph()
        self.files = _data_files(files)
        self.graph = graph
        self.timeout_s = timeout_s
        super().__init__(workdir, startup_timeout)
        self.port = port or free_port()
        self.location = self.workdir / "store"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/query"

    def _ports(self) -> dict[str, int]:
        return {"--port": self.port}

    def _before_start(self) -> None:
        if not self.files:
            return
        cmd = [str(self.binary), "load", "--location", str(self.location), "--file", *map(str, self.files)]
        if self.graph:
            cmd += ["--graph", self.graph]
        done = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            reason = _reason(done.stderr, 1) or "no output"
            held = "" if self._own_workdir else f", and check no server holds {self.location}"
            raise ServerError(f"oxigraph load failed ({reason}): fix the file{held}")

    def _command(self) -> list[str]:
        cmd = [str(self.binary), "serve-read-only", "--location", str(self.location), "--bind", f"127.0.0.1:{self.port}"]
        if self.timeout_s:
            cmd += ["--timeout-s", str(self.timeout_s)]
        return cmd


_Server = TypeVar("_Server", bound="LocalServer")


def _serve_forever(server: _Server, describe: Callable[[_Server], str], out: TextIO = sys.stdout,
                   info: Callable[[_Server], dict] | None = None) -> int:
    """Start `server`, print how to reach it (one JSON line when `info` is given), block until Ctrl-C
    or SIGTERM, stop it; returns 0."""

    def _raise_interrupt(signum: int, frame: object) -> None:  # SIGTERM → same clean path as Ctrl-C
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        with server:
            if info is not None:
                import json

                print(json.dumps(info(server)), file=out, flush=True)
            else:
                print(describe(server), file=out, flush=True)
                print("Ctrl-C to stop", file=out, flush=True)
            while server.running:
                time.sleep(1)
            code = server.process.returncode if server.process else None
            # the reason, read now: a temporary workdir (and its log) is gone once the server is stopped
            raise ServerError(f"{server.name} exited unexpectedly (code {code}): {_log_tail(server.log_path) or 'no output'}"
                              + ("" if server._own_workdir else f" (log: {server.log_path})"))
    except KeyboardInterrupt:
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)


def serve_virtuoso(
    data_files: Sequence[PathLike],
    graph: str,
    port: int | None = None,
    http_port: int | None = None,
    workdir: PathLike | None = None,
    as_json: bool = False,
    **options: Any,
) -> int:
    """Run Virtuoso with `data_files` loaded into `graph` until Ctrl-C (a given `workdir` is kept and reused)."""
    server = VirtuosoServer({graph: data_files}, port=port, http_port=http_port, workdir=workdir, **options)
    return _serve_forever(
        server,
        lambda s: (f"Virtuoso SPARQL endpoint: {s.url}  (graph <{graph}>: {s.graph_url(graph)})\n"
                   f"isql: {s.isql_binary} 127.0.0.1:{s.port} dba dba   workdir: {s.workdir}"),
        info=(lambda s: {"endpoint": s.url, "graph": graph, "graph_endpoint": s.graph_url(graph), "isql_port": s.port,
                         "workdir": str(s.workdir), "startup_seconds": round(s.startup_seconds or 0, 2)}) if as_json else None,
    )


def serve_oxigraph(
    data_files: Sequence[PathLike],
    port: int | None = None,
    workdir: PathLike | None = None,
    as_json: bool = False,
    **options: Any,
) -> int:
    """Run a read-only Oxigraph server over `data_files` until Ctrl-C (a given `workdir` is kept and reused)."""
    server = OxigraphServer(data_files, port=port, workdir=workdir, **options)
    return _serve_forever(server, lambda s: f"Oxigraph SPARQL endpoint: {s.url}   workdir: {s.workdir}",
                          info=(lambda s: {"endpoint": s.url, "workdir": str(s.workdir),
                                           "startup_seconds": round(s.startup_seconds or 0, 2)}) if as_json else None)
