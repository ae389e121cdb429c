"""A query worker process: one pyoxigraph store, queries in over stdin, SPARQL-JSON answers out over stdout.

Started by `embedded.QueryWorkers` as ``python -m kgfed.endpoints.oxiworker MEMORY_MB PATH...`` (or with
``-`` for N-Quads read from stdin first). It loads the files once, lowers its CPU priority (a heavy query
must not starve the server's 1-hop lookups), caps its own address space at what the load left it plus
MEMORY_MB (`RLIMIT_AS`: an allocation past the ceiling fails and the process dies, which the parent
reports), then answers until stdin closes. A query that runs too long is not asked to stop: the parent
kills the process, which frees its memory at once.

Frames, both ways: 1 byte kind + 4 bytes big-endian length + payload. Requests: ``Q`` + query (UTF-8).
Replies: ``R`` + ready note after loading; ``J`` + SPARQL-JSON; ``E`` + one-line error.
"""
from __future__ import annotations

import os
import struct
import sys
import time


def _frame(kind: bytes, payload: bytes) -> bytes:
    return kind + struct.pack(">I", len(payload)) + payload


def _read_exact(stream, size: int) -> bytes | None:
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
            store.bulk_load(path=path, format=_FORMATS[os.path.splitext(path)[1].lower()])
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
    stdout.write(_frame(b"R", f"{len(store)} triples in {time.perf_counter() - started:.3f} s".encode()))
    stdout.flush()
    json_format = ox.QueryResultsFormat.JSON
    while True:
        head = _read_exact(stdin, 5)
        if head is None:
            return 0
        query = (_read_exact(stdin, struct.unpack(">I", head[1:])[0]) or b"").decode("utf-8")
        try:
            result = store.query(query)
            if isinstance(result, ox.QueryTriples):
                reply = _frame(b"E", b"the embedded store got a CONSTRUCT/DESCRIBE query: kgfed's select takes SELECT or ASK")
            else:
                reply = _frame(b"J", result.serialize(format=json_format))  # type: ignore[arg-type]  # bytes: no output file given
            del result
        except SyntaxError as exc:
            reply = _frame(b"E", f"the embedded store rejected the query: {_first(exc)}".encode())
        except MemoryError:
            reply = _frame(b"E", f"the query needed more than {memory_mb} MB: it was stopped; "
                                 "narrow it (a LIMIT, fewer joins, a bounded path)".encode())
        except (OSError, ValueError, RuntimeError) as exc:
            reply = _frame(b"E", f"the embedded store failed on the query ({exc.__class__.__name__}: {_first(exc)})".encode())
        stdout.write(reply)
        stdout.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
