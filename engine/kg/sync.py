"""Blocking twins of the async API: `SyncKG` for scripts, and the `SPARQLWrapper` drop-in's import path.

    with SyncKG.open("file:kg.nt") as kg:
        kg.relations("m.0282x")

`SyncKG` is the `KG` facade with blocking methods (same names, same results), driven on a private
event loop thread. The drop-in for code written against SPARQLWrapper (ToG's and PoG's
`freebase_func.py`) is imported from here, as it always was:

    from kgfed.engine.kg.sync import SPARQLWrapper, JSON, XML   # instead of `from SPARQLWrapper import ...`

It lives in `kgfed.engine.kg.dropin` (the genuine library's twin: errors, the per-process runtime),
`kgfed.engine.kg.blocking` (its loops and keep-alive transport) and `kgfed.cache.documents` (its
cache of raw answers); every name it had here is re-exported, private ones used by tests and
benchmarks included (the process-wide `_RUNTIME` is read from `dropin`, where `_runtime()` keeps it).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...cache.documents import (CACHE_VERSION, _SECRET_HEADERS, Entry, _credential_digest,  # noqa: F401 - re-exported
                               cache_key, complete_document)
from ...endpoints.client import HttpClient  # noqa: F401 - re-exported
from ...endpoints.transport import (Request, Response, TransportConnectError, TransportTimeout,  # noqa: F401
                                    TransportTruncated)
from ...sparql.errors import EndpointError, EndpointTimeout, KgfedError  # noqa: F401 - re-exported
from .blocking import (_LAST_RESPONSE, _QUICKACK, NO_LIMIT, _BlockingTransport, _LoopThread,  # noqa: F401
                       _PoliteClient, _remember, _ThreadClient)
from .dropin import *  # noqa: F403 - the drop-in's public names, as before the split
from .dropin import (_FILE_FORMATS, _FILE_GRAPH_FORMATS, _FIXES, _NOT_SELECT, _SPARQL_JSON_TYPES,  # noqa: F401
                     _STATUS_ERRORS, _TIMEOUT, _TWINS, _UNREACHABLE, _absolute, _cache_directory, _cache_enabled,
                     _close_runtime, _complete_headers, _default_directory, _exchange, _file_answer, _first_line,
                     _forget_runtime, _HTTPError, _raise_for_status, _RawCache, _rebuild_http_error, _rebuild_twin,
                     _Response, _running_loop, _Runtime, _runtime, _twin_error)
from .dropin import __all__ as _dropin_all

if TYPE_CHECKING:  # imported when a SyncKG opens: the drop-in alone never loads the facade (nor aiohttp)
    from .facade import KG

__all__ = [*_dropin_all, "SyncKG"]


class SyncKG:
    """The `KG` facade with blocking methods (same names, same results)."""

    def __init__(self, kg: KG, runner: _LoopThread):
        self._kg, self._runner = kg, runner

    @classmethod
    def open(cls, spec: str, **options) -> SyncKG:
        from .facade import KG

        runner = _LoopThread()

        async def make() -> KG:
            return KG.open(spec, **options)

        return cls(runner.run(make()), runner)

    def __enter__(self) -> SyncKG:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._runner.loop.is_closed():  # closing twice is harmless
            return
        self._runner.run(self._kg.aclose())
        self._runner.close()

    @property
    def kg(self) -> KG:
        return self._kg

    def __getattr__(self, name: str):
        import asyncio  # imported here: the drop-in's import never loads asyncio (about 12 ms of a script's start)

        method = getattr(self._kg, name)
        if not asyncio.iscoroutinefunction(method):
            return method
        return lambda *args, **kwargs: self._runner.run(method(*args, **kwargs))
