"""Configuration as value objects, and the named KGs of a run opened from them.

The CLI, the run harness, the MCP server and library users all describe a run the same way:

    kgs = open_kgs([KGSpec.parse("freebase=file:fb.nt"), KGSpec.parse("fb2=freebase@http://host:8890/sparql")],
                   http=HttpOptions(contact="me@example.org"), cache=CacheOptions(root="/data/kgfed-cache"))
    ...
    await close_kgs(kgs)

Every object here is frozen and picklable (names, strings and numbers: no clients, no stores), so a
run can be rebuilt in another process or on a Ray actor, and each default is written once. `open_kgs`
builds the run's one `HttpClient` from `HttpOptions` and hands it to every KG, so per-host caps,
budgets and 429 pauses hold per host for the whole run.
"""
from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, replace
from collections.abc import Mapping
from typing import Any

from ..cache.options import CacheOptions
from ..endpoints.bounds import Bounds
from ..endpoints.options import HttpOptions
from ..sparql.dialects import DIALECT_REGISTRY, DIALECTS
from ..sparql.errors import KgfedError, UnknownEndpoint

__all__ = ["HttpOptions", "CacheOptions", "KGSpec", "AlignOptions", "SessionSpec", "KGs", "kg_specs", "open_kg", "open_kgs",
           "open_endpoint", "close_kgs", "default_text_source", "split_fallback", "DIALECT_NAMES", "DEFAULT_KGS",
           "LIVE_PREFIXES"]

DIALECT_NAMES = tuple(d.name for d in DIALECTS)  # what a KG name or a `DIALECT@` prefix may say
_KG_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}")
_DIALECT_PREFIX = re.compile(r"([A-Za-z][A-Za-z0-9_-]{0,31})@(.+)")  # DIALECT@SPEC, DIALECT a registered dialect's name


@dataclass(frozen=True)
class KGSpec:
    """One named KG: its endpoint spec (a profile, `file:PATH`, a URL) and, where the name and spec do
    not say it, its dialect. `endpoint=None` opens the bundled demo KG of the dialect. `fallbacks` are
    endpoint specs asked in order when the endpoint is down or keeps failing (`--fallback`): each in the
    KG's dialect, each with its own cache entries."""

    name: str
    endpoint: str | None = None
    dialect: str | None = None
    partial: str | None = None  # the partial-answer policy: error (default), retry or allow
    fallbacks: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _KG_NAME.fullmatch(self.name):
            raise KgfedError(f"invalid KG name {self.name!r}: use letters, digits, - or _ (e.g. freebase, wikidata, fb2)")
        if self.dialect is not None and self.dialect not in DIALECT_REGISTRY:
            raise KgfedError(f"unknown dialect {self.dialect!r} for KG {self.name!r}: use one of {', '.join(DIALECT_REGISTRY)}")
        if self.name in DIALECT_NAMES and self.dialect not in (None, self.name):
            raise KgfedError(f"KG {self.name!r} cannot speak {self.dialect}: rename it (e.g. --kg {self.dialect[:2]}2 "
                             f"--endpoint {self.dialect[:2]}2={self.dialect}@…) or drop the {self.dialect}@ prefix")
        if isinstance(self.fallbacks, str) or not all(isinstance(f, str) and f.strip() for f in self.fallbacks):
            raise KgfedError(f"invalid fallbacks {self.fallbacks!r} for KG {self.name!r}: give a tuple of endpoint specs, "
                             "e.g. ('qlever-wikidata',)")

    @classmethod
    def parse(cls, item: str, *, name: str | None = None) -> KGSpec:
        """`NAME=[DIALECT@]SPEC` (or a bare `[DIALECT@]SPEC` when `name` is given)."""
        key, sep, spec = item.partition("=")
        if not sep or not spec.strip() or ":" in key or "/" in key:  # a bare spec (URLs and file: rarely hold =)
            if name is None:
                from ..sparql.secrets import redact

                raise KgfedError(f"--endpoint {redact(item)!r} names no KG: write it as KG=[DIALECT@]SPEC, e.g. --endpoint freebase=file:fb.nt")
            key, spec = name, item
        spec = spec.strip()
        prefixed = _DIALECT_PREFIX.fullmatch(spec)
        if prefixed and prefixed.group(1) in DIALECT_REGISTRY:
            return cls(key.strip(), prefixed.group(2).strip(), prefixed.group(1))
        return cls(key.strip(), spec)

    @property
    def effective_dialect(self) -> str | None:
        """The dialect the spec fixes: its prefix, else its name when that is a dialect's (else the endpoint's own)."""
        return self.dialect or (self.name if self.name in DIALECT_NAMES else None)


@dataclass(frozen=True)
class AlignOptions:
    """How entities are matched across KGs: the methods in order, and SBERT's threshold and margin.

    `methods="auto"` is every method, SBERT only when the embeddings extra is installed."""

    methods: str | tuple[str, ...] = "auto"
    threshold: float = 0.9
    margin: float = 0.05

    def method_names(self) -> list[str]:
        from .federation.align import METHODS

        if self.methods == "auto":
            import importlib.util

            return [m for m in METHODS if m != "sbert" or importlib.util.find_spec("sentence_transformers")]
        return list(self.methods)

    def aligner(self, kgs: Mapping[str, Any], *, cache: bool = True, embedder: Any = None):
        """An `Aligner` over `kgs` with these options, scoring SBERT with `embedder` (the caller's, e.g. a
        session's; `auto` leaves SBERT out without one)."""
        from .federation.align import Aligner

        methods = self.method_names()
        if self.methods == "auto" and embedder is None:
            methods = [m for m in methods if m != "sbert"]
        return Aligner(kgs, methods=methods, threshold=self.threshold, margin=self.margin, cache=cache, embedder=embedder)


@dataclass(frozen=True)
class SessionSpec:
    """Everything a `Session` (`kgfed.engine.session`) builds from, as one frozen, picklable value: built once,
    from the command line (`cli.options.session_spec`) or by the caller, and never patched afterwards.

    `kgs`: the named KGs; `http`: the client's options (and a caller's query bounds on a file store: `--timeout`,
    `--query-memory`, see `query_bounds`); `cache`: the cache root and policy (one response cache for every KG);
    `align`: entity alignment; `llm`: an LLM spec (`toolbox.llm.make_llm`; an `LLM` object also works, but is not
    picklable) with `llm_concurrency` calls in flight; `text`: a text-source spec (`wikipedia`, `demo`,
    `file:PATH`; None: none) read in `text_mode` with `maxlag`; `embeddings`: where the embedder keeps its
    vectors (a directory; False: nowhere; None: the cache root's `embeddings` store, nowhere with the cache off)."""

    kgs: tuple[KGSpec, ...] = ()
    http: HttpOptions = HttpOptions()
    cache: CacheOptions = CacheOptions()
    align: AlignOptions = AlignOptions()
    llm: Any = "none"  # str | LLM
    llm_concurrency: int | None = None
    text: str | None = None
    text_mode: str = "extracts"
    maxlag: int | None = 5
    embeddings: str | bool | None = None

    def __post_init__(self) -> None:
        if isinstance(self.kgs, (KGSpec, str)):
            raise KgfedError("SessionSpec.kgs is a tuple of KGSpec: write kgs=(KGSpec.parse('wikidata=wikidata'),)")
        object.__setattr__(self, "kgs", tuple(self.kgs))
        for value, kind in ((self.http, HttpOptions), (self.cache, CacheOptions), (self.align, AlignOptions)):
            if not isinstance(value, kind):
                raise KgfedError(f"SessionSpec got {type(value).__name__} where {kind.__name__} belongs: build it "
                                 f"with {kind.__name__}(...) (kgfed.engine.config)")
        if not all(isinstance(k, KGSpec) for k in self.kgs):
            raise KgfedError("SessionSpec.kgs must hold KGSpec objects, e.g. kgs=(KGSpec.parse('freebase=file:fb.nt'),)")
        names = [k.name for k in self.kgs]
        if len(set(names)) != len(names):
            raise KgfedError(f"KG named twice ({', '.join(names)}): give each KG once")

    @property
    def query_bounds(self) -> Bounds:
        """A caller's query on a file store (`KG.select`): at most `--timeout` seconds and `--query-memory` MB."""
        return Bounds(timeout=float(self.http.timeout), memory_mb=self.http.query_memory_mb)


# Endpoint specs served over the network: beside them, text comes from live Wikipedia.
LIVE_PREFIXES = ("wikidata", "qlever-", "http://", "https://")


def default_text_source(*endpoints: str | None) -> str:
    """`wikipedia` beside a live KG endpoint (any of `endpoints`), else `demo` (the bundled extracts)."""
    return "wikipedia" if any(e and e.startswith(LIVE_PREFIXES) for e in endpoints) else "demo"


DEFAULT_KGS = ("freebase", "wikidata")
DEFAULT_HTTP = HttpOptions()  # the defaults, written once in `HttpOptions` (endpoints/options.py)
DEFAULT_CACHE = CacheOptions()  # and in `CacheOptions` (cache/options.py)


def split_fallback(item: str) -> tuple[str | None, str]:
    """`[NAME=]SPEC` of `--fallback` as (NAME or None, SPEC); `=` inside a URL or file path is not a name."""
    key, sep, spec = item.partition("=")
    if sep and spec.strip() and _KG_NAME.fullmatch(key.strip()):
        return key.strip(), spec.strip()
    return None, item.strip()


def kg_specs(kg: str | None, endpoints: list[str] | str | None = None, *, partial: str | None = None,
             fallbacks: list[str] | str | None = None) -> list[KGSpec]:
    """The KGs of `--kg NAME[,NAME]` with their `--endpoint NAME=[DIALECT@]SPEC` items: the names listed (else
    the endpoints' names, else freebase,wikidata), each with its endpoint (none: the demo KG of its dialect),
    and the `--fallback [NAME=]SPEC` items of each (a bare SPEC when there is one KG)."""
    names = [n.strip() for n in kg.split(",") if n.strip()] if kg else None
    items = [endpoints] if isinstance(endpoints, str) else list(endpoints or [])
    single = names[0] if names is not None and len(names) == 1 else None
    by_name = {spec.name: spec for spec in (KGSpec.parse(item, name=single) for item in items)}
    if names is None:
        names = list(by_name) or list(DEFAULT_KGS)
    if len(set(names)) != len(names):
        raise KgfedError(f"KG named twice in --kg {kg!r}: give each KG once")
    extra = [n for n in by_name if n not in names]
    if extra:
        raise KgfedError(f"--endpoint for KG {extra[0]!r}, which --kg does not list: add it to --kg or drop the endpoint")
    backups: dict[str, list[str]] = {}
    for item in [fallbacks] if isinstance(fallbacks, str) else list(fallbacks or []):
        key, spec = split_fallback(item)
        if not spec:
            raise KgfedError(f"empty --fallback {item!r}: give an endpoint spec, e.g. --fallback qlever-wikidata")
        if key is None:
            if len(names) != 1:
                raise KgfedError(f"--fallback {item!r} names no KG and there are {len(names)}: write it as KG=SPEC, "
                                 f"e.g. --fallback {names[0]}={item}")
            key = names[0]
        if key not in names:
            raise KgfedError(f"--fallback for KG {key!r}, which --kg does not list: add it to --kg or drop the fallback")
        backups.setdefault(key, []).append(spec)
    return [replace(by_name.get(name) or KGSpec(name), partial=partial, fallbacks=tuple(backups.get(name, ())))
            for name in names]


class KGs(dict):
    """The named KGs of a command or run, the one `HttpClient` they share and the one response cache they share
    (`store`): each closed with them when they own it (`open_kgs` without a session's client and store)."""

    client: Any = None
    owns_client: bool = False
    store: Any = None
    owns_store: bool = False


def open_kg(spec: KGSpec, *, http: HttpOptions = DEFAULT_HTTP, cache: CacheOptions = DEFAULT_CACHE, client=None,
            store=None):
    """One `KG` from its spec. With `client` (the run's shared one) the KG uses it; without, it gets its own;
    likewise `store`, the run's shared response cache."""
    dialect = spec.effective_dialect
    endpoint = spec.endpoint
    if endpoint is None:
        if dialect is None or dialect not in DIALECT_NAMES:  # a plugin's dialect has no bundled demo KG
            raise KgfedError(f"no endpoint for KG {spec.name!r}: add --endpoint {spec.name}=SPEC (e.g. {spec.name}=file:kg.nt)")
        from .data import default_endpoint

        endpoint = default_endpoint(dialect)
    try:
        return open_endpoint(endpoint, name=spec.name, dialect=dialect, partial=spec.partial, http=http, cache=cache,
                             client=client, fallbacks=spec.fallbacks, store=store)
    except UnknownEndpoint:
        if dialect is None and endpoint.startswith(("http://", "https://")):
            from ..sparql.secrets import redact

            shown = redact(endpoint)  # never a URL's password
            raise UnknownEndpoint(f"endpoint {shown} of KG {spec.name!r} needs a dialect: write --endpoint "
                                  f"{spec.name}=freebase@{shown} or {spec.name}=wikidata@{shown}") from None
        raise


def open_endpoint(endpoint: str, *, name: str | None = None, dialect: str | None = None, partial: str | None = None,
                  http: HttpOptions = DEFAULT_HTTP, cache: CacheOptions = DEFAULT_CACHE, client=None,
                  fallbacks: tuple[str, ...] | list[str] = (), store=None):
    """`KG.open` with the value objects of a run: over `client` (the run's shared one) when given, else a
    client of its own built from `http` (closed with the KG)."""
    from .kg.facade import KG

    extra: dict[str, Any] = {} if partial is None else {"partial": partial}
    return KG.open(endpoint, dialect=dialect, name=name, http=client if client is not None else http, cache=cache,
                   fallbacks=tuple(split_fallback(item)[1] for item in fallbacks), query_memory_mb=http.query_memory_mb,
                   store=store, **extra)


def open_kgs(specs: list[KGSpec], *, http: HttpOptions = DEFAULT_HTTP, cache: CacheOptions = DEFAULT_CACHE,
             client=None, store=None) -> KGs:
    """The named KGs of a run over one `HttpClient` and one response cache.

    A `Session` passes its own `client` and `store` (the KGs borrow them); without them this is a library
    convenience, a session of KGs only: it builds both (`HttpOptions.client`, `kg.facade.response_cache`) and
    `close_kgs` closes them."""
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names):
        raise KgfedError(f"KG named twice ({', '.join(names)}): give each KG once")
    kgs = KGs()
    kgs.owns_client = client is None
    kgs.client = http.client() if client is None else client
    try:
        if store is not None or not cache.enabled:
            kgs.store = store if cache.enabled else None
        elif specs:  # one response cache for the KGs, closed with them (`close_kgs`)
            from .kg.facade import response_cache

            kgs.store, kgs.owns_store = response_cache(cache), True
        for spec in specs:
            kgs[spec.name] = open_kg(spec, http=http, cache=cache, client=kgs.client, store=kgs.store)
    except BaseException:
        try:  # nothing was sent yet (sessions open lazily): closing only releases worker threads
            loop = asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(close_kgs(kgs))
        else:
            loop.create_task(close_kgs(kgs))
        raise
    return kgs


async def close_kgs(kgs: dict[str, Any]) -> None:
    """Close every KG, then the shared client when the KGs own it."""
    await asyncio.gather(*(kg.aclose() for kg in kgs.values()))
    store = getattr(kgs, "store", None)
    if store is not None and getattr(kgs, "owns_store", False):  # their own shared response cache: closed after them
        kgs.store = None  # type: ignore[attr-defined]
        await asyncio.to_thread(store.close)
    if getattr(kgs, "owns_client", False) and kgs.client is not None:  # type: ignore[attr-defined]
        await kgs.client.aclose()  # type: ignore[attr-defined]
