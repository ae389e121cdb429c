"""A query worker process: one pyoxigraph store, queries in over stdin, SPARQL-JSON answers out over stdout.

Started by `embedded.QueryWorkers` as ``python -m kgfed.endpoints.oxiworker MEMORY_MB PATH...`` (or with
``-`` for N-Quads read from stdin first). It loads the files once, lowers its CPU priority (a heavy query
must not starve the server's 1-hop lookups), caps its own address space at what the load left it plus
MEMORY_MB (`RLIMIT_AS`: an allocation past the ceiling fails and the process dies, which the parent
reports), then answers until stdin closes.

The answer is serialised into a capped sink: past the request's byte cap the serialisation stops there (reply
``L``), so the worker never holds more than the cap. A caller that gives up sends SIGUSR1: the serialisation
stops at its next write (reply ``I``) and the worker stays warm. pyoxigraph cannot stop a query that is still
evaluating (an aggregate, a sort, a path closure write nothing until the end): if no reply comes within the
parent's grace, the parent kills the process, which frees its memory at once.

Frames, both ways: 1 byte kind + 4 bytes big-endian length + payload. Requests: ``Q`` + 8 bytes big-endian byte
cap + query (UTF-8). Replies: ``R`` + ready note after loading; ``J`` + SPARQL-JSON; ``E`` + one-line error;
``L`` + the bytes written when the cap was passed (ASCII digits); ``I`` (interrupted, empty).
"""
from __future__ import annotations

import os
import struct
import sys
import time
from typing import Any


def _frame(kind: bytes, payload: bytes) -> bytes:
    return kind + struct.pack(">I", len(payload)) + payload


def _read_exact(stream: Any, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _vm_size() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


def _first(exc: BaseException) -> str:
    lines = str(exc).splitlines()
    return lines[0][:200] if lines else exc.__class__.__name__


def _die_with_parent() -> None:
    """Linux: be killed when the parent dies (a crashed server leaves no query running on)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C on the terminal ends a running query at once
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the parent is already gone
        sys.exit(0)


class _Stop(Exception):
    """The sink refused a write: the answer passed its cap, or the caller gave up (SIGUSR1)."""


class _Sink:
    """Where pyoxigraph writes the SPARQL-JSON: kept in memory up to `cap` bytes; stops at the cap or an interrupt."""

    interrupted = False  # set by the SIGUSR1 handler; cleared when a query arrives

    def __init__(self, cap: int):
        self.cap, self.size = cap, 0
        self.chunks: list[bytes] = []

    def write(self, data: bytes) -> int:
        if _Sink.interrupted:
            raise _Stop("interrupted")
        self.size += len(data)
        if self.size > self.cap:
            raise _Stop("too large")
        self.chunks.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        return None


def _interrupt(signum: int, frame: object) -> None:
    _Sink.interrupted = True


def _answer(store: Any, query: str, cap: int, memory_mb: int) -> tuple[bytes, list[bytes]]:
    """The reply to one query: its kind and its payload's pieces (written as they are: no second copy)."""
    import pyoxigraph as ox

    sink = _Sink(cap)
    try:
        result = store.query(query)
        if isinstance(result, ox.QueryTriples):
            return b"E", [b"the embedded store got a CONSTRUCT/DESCRIBE query: kgfed's select takes SELECT or ASK"]
        result.serialize(sink, format=ox.QueryResultsFormat.JSON)
        del result
    except SyntaxError as exc:
        return b"E", [f"the embedded store rejected the query: {_first(exc)}".encode()]
    except MemoryError:
        return b"E", [f"the query needed more than {memory_mb} MB: it was stopped; "
                      "narrow it (a LIMIT, fewer joins, a bounded path)".encode()]
    except (OSError, ValueError, RuntimeError, AttributeError, _Stop) as exc:
        if _Sink.interrupted:
            return b"I", []
        if sink.size > cap:
            return b"L", [str(sink.size).encode()]
        return b"E", [f"the embedded store failed on the query ({exc.__class__.__name__}: {_first(exc)})".encode()]
    if _Sink.interrupted:
        return b"I", []
    return b"J", sink.chunks


def main(argv: list[str]) -> int:
    _die_with_parent()
    import pyoxigraph as ox

    from .embedded import _FORMATS

    memory_mb = int(argv[0])
    paths = argv[1:]
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    started = time.perf_counter()
    store = ox.Store()
    if paths == ["-"]:
        head = _read_exact(stdin, 5)
        if head is None:
            return 1
        data = _read_exact(stdin, struct.unpack(">I", head[1:])[0]) or b""
        store.bulk_load(data, format=ox.RdfFormat.N_QUADS)
    else:
        for path in paths:
            try:
                store.bulk_load(path=path, format=_FORMATS[os.path.splitext(path)[1].lower()])
            except (SyntaxError, OSError) as exc:  # the parent says it in one line naming the file, not "a worker died"
                stdout.write(_frame(b"E", f"{os.path.basename(path)} is not valid RDF ({_first(exc)}): fix the file or "
                                          "convert it to N-Triples".encode()))
                stdout.flush()
                return 1
    try:
        os.nice(5)
    except OSError:
        pass
    if memory_mb > 0:
        try:
            import resource

            limit = _vm_size() + memory_mb * (1 << 20)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (ImportError, ValueError, OSError):
            pass
    import signal

    signal.signal(signal.SIGUSR1, _interrupt)
    stdout.write(_frame(b"R", f"{len(store)} triples in {time.perf_counter() - started:.3f} s".encode()))
    stdout.flush()
    while True:
        head = _read_exact(stdin, 5)
        if head is None:
            return 0
        payload = _read_exact(stdin, struct.unpack(">I", head[1:])[0]) or b"\0" * 8
        _Sink.interrupted = False  # a late interrupt meant for the query before has been handled by now
        cap = struct.unpack(">Q", payload[:8])[0]
        kind, chunks = _answer(store, payload[8:].decode("utf-8"), cap, memory_mb)
        stdout.write(kind + struct.pack(">I", sum(map(len, chunks))))
        for chunk in chunks:
            stdout.write(chunk)
        stdout.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
