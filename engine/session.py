"""A run's shared objects, opened once and closed once: the session.

Every entry point of kgfed (the `kgfed` commands, `kgfed doctor`, the run harness and its worker processes
and Ray actors, the MCP server, `kgfed serve`) and library code that wants more than one KG obtains the run's
shared objects from one `Session`, built from one frozen `SessionSpec`, instead of building them itself:

    spec = SessionSpec(kgs=(KGSpec.parse("wikidata=wikidata"),), http=HttpOptions(contact="me@example.org"),
                       cache=CacheOptions(root="/data/kgfed-cache"), llm="none", text="wikipedia")
    async with Session(spec) as session:
        session.kgs["wikidata"]     # the KGs, each over the session's client and its one response cache
        session.client              # the one HttpClient: per-host caps, budgets and 429 pauses for the whole run
        session.text                # the text source (its Wikipedia requests go through the same client)
        session.llm                 # the LLM provider (an OpenAI-compatible one on the same client)
        session.embedder            # the sentence embedder over the cache root's vectors (None without the extra)
        session.store("alignments") # a cache store of the root (`kgfed.cache.root.open_store`), opened once

The spec is built once (the CLI's `cli.options.session_spec(args)`, the harness's `RunSpec.session_spec()`, the
MCP server's `ServerOptions.session_spec()`, `kgfed serve`'s `open_session`, or the caller) and nothing is patched
after it is built.

What it owns, it builds from the spec's value objects (`HttpOptions`, `CacheOptions`, `KGSpec`, `AlignOptions`,
an LLM spec, a text-source spec), so a worker process or a Ray actor rebuilds the same session from the same spec.
Lower layers (`kg`, `federation`, `text`, `methods`, `toolbox`) take these objects as arguments and
build none of them: a ranker, an aligner or a method given no embedder has none.

The HTTP client and the KGs are made when the session opens; the LLM, the embedder, the text source
and the stores on first use (an MCP server that is never asked a question loads no model and opens no
Wikipedia client). `aclose` closes each once, in reverse order of need: the text source, the LLM, the
embedder, the KGs, their one response cache, the stores, and the client last, since everything above
may still have been using it. A client handed in (`client=`, e.g. one over a `MockTransport` in
tests) is used and left open for its owner.
"""
from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..sparql.errors import Closed, KgfedError
from .config import CacheOptions, HttpOptions, KGs, KGSpec, SessionSpec

if TYPE_CHECKING:
    from ..cache.root import Store
    from ..endpoints.client import HttpClient
    from ..endpoints.transport import AsyncTransport
    from ..endpoints.wikipedia import TextSource
    from .toolbox.embeddings import Embedder
    from .toolbox.llm_base import LLM
    from ..cache.responses import ResponseCache
    from .config import AlignOptions

__all__ = ["Session", "SessionSpec"]


class Session:
    """The shared objects of one run: HTTP client, KGs, cache stores, LLM, embedder, text source.

    `spec`: what to build (`SessionSpec`: the KGs, HTTP and cache options, alignment, the LLM and text-source
    specs; None: `SessionSpec()`, no KG). The session is the one owner of what it builds: one `HttpClient`,
    one response cache shared by its KGs, the KGs (more with `add_kg`), the cache stores, the LLM, the embedder
    and the text source; everything below borrows them. Two seams, for tests and embedders: `client`, an
    `HttpClient` to use instead of building one (not closed by the session), and `transport`, the bytes layer of
    the client the session builds (a `MockTransport` in tests; None: aiohttp).
    """

    def __init__(self, spec: SessionSpec | None = None, *, client: HttpClient | None = None,
                 transport: AsyncTransport | None = None):
        if spec is None:
            spec = SessionSpec()
        elif not isinstance(spec, SessionSpec):
            raise KgfedError(f"Session takes a SessionSpec, not {type(spec).__name__}: Session(SessionSpec(kgs=..., "
                             "http=..., cache=...)) (kgfed.engine.config; docs/migration.md)")
        self.spec = spec
        self.transport = transport
        self._given_client = client
        self._client: HttpClient | None = client
        self._responses: ResponseCache | None = None  # the one response cache of the session's KGs
        self.kgs: KGs = KGs()
        self._llm: LLM | None = None
        self._embedder: Embedder | None = None
        self._embedder_made = False
        self._text: TextSource | None = None
        self._stores: dict[str, Store] = {}
        self._opened = False
        self._closed = False

    # the spec's parts, read-only
    @property
    def http(self) -> HttpOptions:
        return self.spec.http

    @property
    def cache(self) -> CacheOptions:
        return self.spec.cache

    @property
    def kg_specs(self) -> tuple[KGSpec, ...]:
        return self.spec.kgs

    @property
    def llm_spec(self) -> str | LLM:
        return self.spec.llm

    @property
    def text_spec(self) -> str | None:
        return self.spec.text

    @property
    def embeddings(self) -> str | bool | None:
        return self.spec.embeddings

    # -- lifetime ------------------------------------------------------------------------------------
    def open(self) -> Session:
        """Build the client and open the KGs (no request is sent: sessions and stores open lazily)."""
        if self._closed:
            raise Closed("this session is closed: open a new one")
        if self._opened:
            return self
        from .config import open_kgs
        from .kg.facade import response_cache

        self._opened = True
        if self._client is None:
            self._client = self.http.client(transport=self.transport)
        try:
            if self.kg_specs:  # one for every KG of the session, closed after them (no KG yet: on the first)
                self._responses = response_cache(self.cache)
            self.kgs = open_kgs(list(self.kg_specs), http=self.http, cache=self.cache, client=self._client,
                                store=self._responses)
        except BaseException:
            self._close_responses()
            self._close_client_soon()
            raise
        return self

    async def __aenter__(self) -> Session:
        return self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close everything the session opened, once (idempotent); the client last."""
        if self._closed:
            return
        self._closed = True
        from .config import close_kgs

        try:
            for closer in (getattr(self._text, "aclose", None), getattr(self._llm, "aclose", None)):
                if closer is not None:
                    await closer()
            if self._embedder is not None:
                self._embedder.close()
            await close_kgs(self.kgs)
        finally:
            await asyncio.to_thread(self._close_responses)
            stores, self._stores = list(self._stores.values()), {}
            for store in stores:
                store.close()
            if self._client is not None and self._client is not self._given_client:
                await self._client.aclose()

    def _close_responses(self) -> None:
        responses, self._responses = self._responses, None
        if responses is not None:
            responses.close()

    def _close_client_soon(self) -> None:
        client, self._client = self._client, self._given_client
        if client is None or client is self._given_client:
            return
        try:
            asyncio.get_running_loop().create_task(client.aclose())
        except RuntimeError:
            asyncio.run(client.aclose())

    def _check_open(self) -> None:
        if self._closed:
            raise Closed("this session is closed: open a new one")
        if not self._opened:
            self.open()

    # -- what it owns --------------------------------------------------------------------------------
    @property
    def client(self) -> HttpClient:
        """The run's one `HttpClient` (every KG, the text source and an HTTP LLM share it)."""
        self._check_open()
        assert self._client is not None
        return self._client

    def add_kg(self, spec: KGSpec):
        """Open one more KG over the session's client and cache (closed with the session)."""
        from .config import open_kg

        self._check_open()
        if spec.name in self.kgs:
            raise KgfedError(f"KG named twice ({spec.name}): give each KG once")
        kg = open_kg(spec, http=self.http, cache=self.cache, client=self.client, store=self._responses_for_kgs())
        self.kgs[spec.name] = kg
        return kg

    def add_endpoint(self, endpoint: str, *, dialect: str | None = None, name: str | None = None,
                     partial: str | None = None, fallbacks: Sequence[str] = ()):
        """Open one more KG from an endpoint spec (a one-KG command's `--endpoint`/`--dialect`: `name` None is the
        dialect's name, a file's as sniffed) over the session's client and response cache (closed with it)."""
        from .config import open_endpoint

        self._check_open()
        kg = open_endpoint(endpoint, name=name, dialect=dialect, partial=partial, http=self.http, cache=self.cache,
                           client=self.client, fallbacks=tuple(fallbacks), store=self._responses_for_kgs())
        if kg.name in self.kgs:
            self._close_later(kg)
            raise KgfedError(f"KG named twice ({kg.name}): give each KG once")
        self.kgs[kg.name] = kg
        return kg

    def _responses_for_kgs(self) -> ResponseCache | None:
        """The session's one response cache, opened with its first KG."""
        if self._responses is None:
            from .kg.facade import response_cache

            self._responses = response_cache(self.cache)
        return self._responses

    def _close_later(self, kg: Any) -> None:
        try:
            asyncio.get_running_loop().create_task(kg.aclose())
        except RuntimeError:
            asyncio.run(kg.aclose())

    def store(self, kind: str, **options: Any) -> Store:
        """The cache root's store of `kind` (`alignments`, `text`, `embeddings`, `documents`, ...), opened once
        (`options`, e.g. `size_limit`, apply when it is opened: `cache.root.open_store`). It fails as the
        response cache does (`cache.failsafe`): a full disk is one warning and the store is off, never an error."""
        self._check_open()
        if not self.cache.enabled:
            raise KgfedError(f"the {kind} store was asked for with the cache off: leave out --no-cache")
        if kind not in self._stores:
            from ..cache.failsafe import open_failsafe

            self._stores[kind] = open_failsafe(self.cache.root, kind, **options)
        return self._stores[kind]

    @property
    def llm(self) -> LLM:
        """The run's LLM provider (`make_llm(llm)`: an `LLM` given as `llm=` is used as it is; an HTTP one on the
        session's client), made on first use. A provider that answers from gold queries (`--llm gold`) is bound to
        the session's KGs."""
        self._check_open()
        if self._llm is None:
            from .toolbox.llm import make_llm

            self._llm = make_llm(self.llm_spec, client=self.client, concurrency=self.spec.llm_concurrency)
            bind = getattr(self._llm, "bind", None)
            if bind is not None:  # the gold stand-in runs gold queries over the run's KGs
                bind(self.kgs)
        return self._llm

    @property
    def embedder(self) -> Embedder | None:
        """The run's sentence embedder over the cache root's vectors, made on first use (cheap: the model loads
        on its first encode); None when sentence embeddings cannot run here (`toolbox.embeddings.missing_extra`)."""
        self._check_open()
        if not self._embedder_made:
            from .toolbox.embeddings import Embedder, missing_extra

            self._embedder_made = True
            if missing_extra() is None:
                self._embedder = Embedder(self._embeddings_location())
        return self._embedder

    @embedder.setter
    def embedder(self, value: Embedder | None) -> None:  # a caller's own embedder (tests; a library user's model): closed with the session
        self._embedder, self._embedder_made = value, True

    def _embeddings_location(self) -> Store | str | bool:
        embeddings = self.embeddings
        if isinstance(embeddings, str):  # a run's own directory: opened here, so a full disk fails softly
            from ..cache.failsafe import open_failsafe_at

            key = f"embeddings@{embeddings}"
            if key not in self._stores:
                self._stores[key] = open_failsafe_at(embeddings, "embeddings")
            return self._stores[key]
        if embeddings is not None:
            return embeddings
        return self.store("embeddings") if self.cache.enabled else False  # the root's store: on Redis too

    @property
    def text(self) -> TextSource | None:
        """The run's text source (`text` spec; None when the session has none), opened on first use."""
        self._check_open()
        if self._text is None and self.text_spec:
            from .text.context import TEXT_STORE_LIMIT, open_text_source

            live = self.text_spec == "wikipedia"  # the only source that caches (pages it fetched)
            store = self.store("text", size_limit=TEXT_STORE_LIMIT) if live and self.cache.enabled else None
            self._text = open_text_source(self.text_spec, client=self.client, store=store, cache=self.cache.enabled,
                                          offline=self.cache.offline, mode=self.spec.text_mode, maxlag=self.spec.maxlag)
        return self._text

    def aligner(self, options: AlignOptions | None = None, methods: Sequence[str] | None = None):
        """An `Aligner` over the session's KGs with `options` (None: the spec's `align`; `methods` overriding
        theirs), given the session's embedder when SBERT is among its methods."""
        from .federation.align import AlignmentCache, Aligner

        self._check_open()
        options = self.spec.align if options is None else options
        names = list(methods) if methods else options.method_names()
        embedder = self.embedder if "sbert" in names else None
        if not methods and options.methods == "auto" and embedder is None:  # auto: SBERT when embeddings can run
            names = [m for m in names if m != "sbert"]
        cache = AlignmentCache(store=self.store("alignments")) if self.cache.enabled else None
        return Aligner(self.kgs, methods=names, threshold=options.threshold, margin=options.margin, cache=cache,
                       embedder=embedder)

    def describe(self) -> Mapping[str, Any]:
        """What the session holds, for logs and tests (no secrets: names and flags only)."""
        llm = self.llm_spec if isinstance(self.llm_spec, str) else self.llm_spec.describe()
        return {"kgs": list(self.kgs), "llm": llm, "text": self.text_spec,
                "cache": self.cache.root if self.cache.enabled else None, "closed": self._closed}
