"""A run's shared objects, opened once and closed once: the session.

Every entry point of kgfed (the `kgfed` commands, the run harness, the MCP server) and library code
that wants more than one KG obtains the run's shared objects from one `Session` instead of building
them itself:

    async with Session(kgs=[KGSpec.parse("wikidata=wikidata")], http=HttpOptions(contact="me@example.org"),
                       cache=CacheOptions(root="/data/kgfed-cache"), llm="none", text="wikipedia") as session:
        session.kgs["wikidata"]     # the KGs, each over the session's client and response cache
        session.client              # the one HttpClient: per-host caps, budgets and 429 pauses for the whole run
        session.text                # the text source (its Wikipedia requests go through the same client)
        session.llm                 # the LLM provider (an OpenAI-compatible one on the same client)
        session.embedder            # the sentence embedder over the cache root's vectors (None without the extra)
        session.store("alignments") # a cache store of the root (`kgfed.cache.root.open_store`), opened once

What it owns, it builds from value objects (`HttpOptions`, `CacheOptions`, `KGSpec`, an LLM spec, a
text-source spec), so a worker process or a Ray actor rebuilds the same session from the same options.
Lower layers (`kg`, `federation`, `text`, `methods`, `toolbox`) take these objects as arguments and
build none of them: a ranker, an aligner or a method given no embedder has none.

The HTTP client and the KGs are made when the session opens; the LLM, the embedder, the text source
and the stores on first use (an MCP server that is never asked a question loads no model and opens no
Wikipedia client). `aclose` closes each once, in reverse order of need: the text source, the LLM, the
embedder, the KGs (their response caches), the stores, and the client last, since everything above
may still have been using it. A client handed in (`client=`, e.g. one over a `MockTransport` in
tests) is used and left open for its owner.
"""
from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..sparql.errors import Closed, KgfedError
from .config import CacheOptions, HttpOptions, KGSpec

if TYPE_CHECKING:
    from ..cache.root import Store
    from ..endpoints.client import HttpClient
    from ..endpoints.transport import AsyncTransport
    from ..endpoints.wikipedia import TextSource
    from .toolbox.embeddings import Embedder
    from .toolbox.llm_base import LLM
    from .config import AlignOptions, KGs

__all__ = ["Session"]


class Session:
    """The shared objects of one run: HTTP client, KGs, cache stores, LLM, embedder, text source.

    `kgs`: the run's KGs (more with `add_kg`); `http`/`cache`: how it talks HTTP and caches (None: the defaults); `llm`: an
    LLM spec (`toolbox.llm.make_llm`) with `llm_concurrency` calls in flight for the whole run; `text`:
    a text-source spec (`wikipedia`, `demo`, `file:PATH`; None: no text source) read in `text_mode`
    with `maxlag`; `embeddings`: where the embedder keeps its vectors (a directory; False: nowhere;
    None: the cache root's `embeddings` store, a directory or Redis; nowhere with the cache off); `client`: an `HttpClient` to
    use instead of building one (not closed by the session); `transport`: the bytes layer of the client the
    session builds (a `MockTransport` in tests; None: aiohttp).
    """

    def __init__(self, *, kgs: Sequence[KGSpec] = (), http: HttpOptions | None = None,
                 cache: CacheOptions | None = None, llm: str | LLM = "none", llm_concurrency: int | None = None,
                 text: str | None = None, text_mode: str = "extracts", maxlag: int | None = 5,
                 embeddings: str | bool | None = None, client: HttpClient | None = None,
                 transport: AsyncTransport | None = None):
        self.kg_specs = tuple(kgs)
        self.http = http if http is not None else HttpOptions()
        self.cache = cache if cache is not None else CacheOptions()
        self.llm_spec = llm
        self.llm_concurrency = llm_concurrency
        self.text_spec = text
        self.text_mode = text_mode
        self.maxlag = maxlag
        self.embeddings = embeddings
        self.transport = transport
        self._given_client = client
        self._client: HttpClient | None = client
        self.kgs: KGs | dict[str, Any] = {}
        self._llm: LLM | None = None
        self._embedder: Embedder | None = None
        self._embedder_made = False
        self._text: TextSource | None = None
        self._stores: dict[str, Store] = {}
        self._opened = False
        self._closed = False

    # -- lifetime ------------------------------------------------------------------------------------
    def open(self) -> Session:
        """Build the client and open the KGs (no request is sent: sessions and stores open lazily)."""
        if self._closed:
            raise Closed("this session is closed: open a new one")
        if self._opened:
            return self
        from .config import open_kgs

        self._opened = True
        if self._client is None:
            from ..endpoints.client import HttpClient

            self._client = HttpClient.from_options(self.http, transport=self.transport)
        try:
            self.kgs = open_kgs(list(self.kg_specs), http=self.http, cache=self.cache, client=self._client)
        except BaseException:
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
            stores, self._stores = list(self._stores.values()), {}
            for store in stores:
                store.close()
            if self._client is not None and self._client is not self._given_client:
                await self._client.aclose()

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
        kg = open_kg(spec, http=self.http, cache=self.cache, client=self.client)
        self.kgs[spec.name] = kg
        return kg

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

            self._llm = make_llm(self.llm_spec, client=self.client, concurrency=self.llm_concurrency)
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
        if isinstance(self.embeddings, str):  # a run's own directory: opened here, so a full disk fails softly
            from ..cache.failsafe import open_failsafe_at

            key = f"embeddings@{self.embeddings}"
            if key not in self._stores:
                self._stores[key] = open_failsafe_at(self.embeddings, "embeddings")
            return self._stores[key]
        if self.embeddings is not None:
            return self.embeddings
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
                                          offline=self.cache.offline, mode=self.text_mode, maxlag=self.maxlag)
        return self._text

    def aligner(self, options: AlignOptions, methods: Sequence[str] | None = None):
        """An `Aligner` over the session's KGs with `options` (`methods` overriding theirs), given the
        session's embedder when SBERT is among its methods."""
        from .federation.align import AlignmentCache, Aligner

        self._check_open()
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
