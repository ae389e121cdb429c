"""Wikipedia page text for context retrieval: the live MediaWiki APIs and offline JSONL extracts.

    async with WikipediaSource(client) as wiki:                # Action API, full plain-text extracts
        pages = await wiki.pages(["Douglas Adams", "Nowhere_Page_123"])
    pages["Nowhere_Page_123"].missing                          # True: a result, never an exception

Both sources implement `TextSource`: `await source.pages(keys) -> {key: Page}`, one `Page` per key
asked, with `text=None` and a `reason` when there is no text (missing page, invalid title, failed
request). `WikipediaSource` sends titles only (Q-ids are resolved to titles by the caller through the
KG's sitelinks, see `kgfed.engine.text.context`); `JsonlSource` answers Q-ids, titles and labels.

Etiquette: every request goes through the run's shared `HttpClient` (User-Agent with contact, at most
3 parallel requests and a per-minute budget per Wikipedia host, 429 + Retry-After, an optional OAuth
token); Action API requests carry `maxlag=5` and a `maxlag` error body pauses the whole host for
`Retry-After` (every request of the run to it waits) before the retry. A robot-policy refusal raises. Answers are cached, keyed by
URL + parameters, in the store the caller hands in (`JsonCache(store)`: the cache root's `text` store, a
directory or Redis; this layer opens none itself); error answers are never cached.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import quote, unquote, urlsplit

from ..sparql.errors import ClientClosed, EndpointError, KgfedError, OfflineMiss, RateLimited, UserAgentRejected
from .client import HttpClient, parse_retry_after

Mode = Literal["extracts", "intro", "summary"]
Charge = Callable[[str], None]
QID = re.compile(r"^Q[1-9][0-9]*$")
# Characters MediaWiki never allows in a title (plus control characters); "|" would also split the batch.
_BAD_TITLE = re.compile(r"[#<>\[\]|{}\x00-\x1f\x7f]")
MAX_TITLE_BYTES = 255
TITLES_PER_REQUEST = 50  # Action API limit for `titles` without the bot right
INTRO_EXTRACTS_PER_REQUEST = 20  # TextExtracts: exlimit max 20, and only with exintro (else 1)
MAX_CONTINUE_ROUNDS = 100
DEFAULT_LAG_WAIT = 5.0  # seconds, when a maxlag error carries no Retry-After


@dataclass(frozen=True)
class Page:
    """The text of one asked-for page; `text is None` with `missing`/`invalid`/`reason` when there is none."""

    title: str | None
    text: str | None = None
    missing: bool = False
    invalid: bool = False
    error: bool = False  # the request failed (see `reason`); asking again may work
    qid: str | None = None
    pageid: int | None = None
    key: str | None = None  # what was asked (title or Q-id); defaults to `title`
    redirected_from: tuple[str, ...] = ()  # the asked title and every normalisation/redirect hop before `title`
    reason: str | None = None
    source: str = "wikipedia"

    @property
    def exists(self) -> bool:
        """The page exists (its text may still be absent, e.g. from a `prop=info` lookup)."""
        return not (self.missing or self.invalid or self.error)

    def to_json(self) -> dict[str, Any]:
        row = asdict(self)
        row["redirected_from"] = list(self.redirected_from)
        return row


@dataclass(frozen=True)
class SearchHit:
    title: str
    pageid: int | None
    snippet: str
    wordcount: int | None = None


@dataclass(frozen=True)
class SearchResults:
    """One page of full-text search hits; `next_offset` is set when the API offers more (`continue`)."""

    hits: list[SearchHit]
    total: int | None
    next_offset: int | None


class TextSource(Protocol):
    """Anything that maps page keys (titles, or Q-ids when `by_qid`) to `Page`s."""

    name: str
    by_qid: bool  # True: Q-ids can be asked directly; False: ask titles (resolve Q-ids via sitelinks)

    async def pages(self, keys: Sequence[str]) -> dict[str, Page]: ...

    async def aclose(self) -> None: ...


def title_problem(title: str) -> str | None:
    """Why `title` can never be a Wikipedia title, or None when it might be one."""
    if not title.strip():
        return "empty title"
    if _BAD_TITLE.search(title):
        return "title contains a character MediaWiki forbids (# < > [ ] | { } or a control character)"
    if len(title.strip().encode()) > MAX_TITLE_BYTES:
        return f"title longer than {MAX_TITLE_BYTES} bytes"
    return None


def _canonical(title: str) -> str:
    """MediaWiki's main-namespace normal form: spaces for underscores, first letter upper-case."""
    title = " ".join(title.replace("_", " ").split())
    return title[:1].upper() + title[1:]


# -- cache -----------------------------------------------------------------------------------------
class ByteStore(Protocol):
    """What the text cache needs of a store: bytes under string keys (`kgfed.cache.root.Store` has it)."""

    def get(self, key: str) -> bytes | None: ...
    def set(self, key: str, value: bytes) -> None: ...
    def __len__(self) -> int: ...
    def close(self) -> None: ...


class JsonCache:
    """Decoded JSON answers keyed by URL + parameters (`maxlag` ignored), over a `ByteStore`.

    `store`: the cache root's `text` store (`kgfed.cache.root.open_store(spec, "text")`: a directory or
    Redis; the engine's `open_text_source` and the session pass it). This layer reads no configuration
    and opens no store: `JsonCache(directory)` of kgfed < 0.3 is a one-line error naming the fix.
    """

    def __init__(self, store: ByteStore):
        if store is None or isinstance(store, (str, os.PathLike)):
            raise KgfedError("JsonCache takes a store now, not a directory: JsonCache(kgfed.cache.root.open_store(DIR, 'text'))")
        self.directory: Path | None = getattr(store, "directory", None)
        self._cache = store

    @staticmethod
    def key(url: str, params: Mapping[str, str] | None) -> str:
        items = sorted((k, str(v)) for k, v in (params or {}).items() if k != "maxlag")
        return hashlib.sha256(f"{url}\n{json.dumps(items)}".encode()).hexdigest()

    def get(self, key: str) -> Any:
        raw = self._cache.get(key)
        return None if raw is None else json.loads(raw)

    def set(self, key: str, doc: Any) -> None:
        self._cache.set(key, json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))

    def __len__(self) -> int:
        return len(self._cache)

    def close(self) -> None:
        self._cache.close()


# -- live source -----------------------------------------------------------------------------------
class WikipediaSource:
    """Wikipedia over HTTP: Action API extracts (`extracts`: whole page, `intro`: lead) or REST `summary`."""

    by_qid = False

    def __init__(
        self,
        client: HttpClient,
        *,
        own_client: bool = False,
        lang: str = "en",
        mode: Mode = "extracts",
        api_url: str | None = None,
        rest_url: str | None = None,
        maxlag: int | None = 5,
        lag_retries: int = 3,
        cache: JsonCache | ByteStore | bool | None = None,
        offline: bool = False,
        charge: Charge | None = None,
        name: str = "wikipedia",
    ):
        if mode not in ("extracts", "intro", "summary"):
            raise KgfedError(f"unknown Wikipedia mode {mode!r}: use extracts, intro or summary")
        self.mode = mode
        self.api_url = api_url or f"https://{lang}.wikipedia.org/w/api.php"
        self.rest_url = (rest_url or f"https://{lang}.wikipedia.org/api/rest_v1").rstrip("/")
        if client is None:  # the run's shared client: the source never builds its own
            raise TypeError("WikipediaSource needs the run's HttpClient: WikipediaSource(HttpOptions().client())")
        self.client = client
        self._owns_client = own_client  # closed with the source (a client made for it alone)
        self.maxlag = maxlag
        self.lag_retries = lag_retries
        if cache is True:
            raise KgfedError("WikipediaSource(cache=True) needs the store to keep answers in: give "
                             "cache=kgfed.cache.root.open_store(DIR, 'text') (or cache=None for none)")
        self.cache = None if cache is None or cache is False else cache if isinstance(cache, JsonCache) else JsonCache(cache)
        self.offline = offline
        self.name = name
        self.redirects: dict[str, str] = {}  # every normalisation/redirect seen: asked title -> final title
        self._charge = charge or (lambda _name: None)
        self._inflight: dict[str, asyncio.Future] = {}

    async def __aenter__(self) -> WikipediaSource:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_client:
            await self.client.aclose()
        if self.cache is not None:
            self.cache.close()

    # -- TextSource ------------------------------------------------------------------------------
    async def pages(self, keys: Sequence[str]) -> dict[str, Page]:
        """Text of each title in `keys` (by `mode`); failures become `Page(reason=...)`, never exceptions."""
        keys = list(dict.fromkeys(keys))
        out = {k: Page(None, key=k, missing=True, reason="a Wikidata id, not a title: resolve it through the KG's sitelinks first")
               for k in keys if QID.match(k.strip())}
        titles = [k for k in keys if k not in out]
        if self.mode == "summary":
            found = [await self.summaries(titles)]
        else:
            size = INTRO_EXTRACTS_PER_REQUEST if self.mode == "intro" else 1
            found = await asyncio.gather(*(self._guarded(batch, self.extracts) for batch in _batches(titles, size)))
        for part in found:
            out.update(part)
        return {k: out[k] for k in keys}

    async def _guarded(self, titles: list[str], fetch: Callable) -> dict[str, Page]:
        """Run one batch; a failing request turns into explained text-less pages for that batch."""
        try:
            return await fetch(titles)
        except (UserAgentRejected, ClientClosed):
            raise  # every later request would fail the same way: say so once, loudly
        except KgfedError as exc:
            return {t: Page(t, key=t, error=True, reason=str(exc)) for t in titles}

    # -- Action API ------------------------------------------------------------------------------
    def _params(self, **params: str) -> dict[str, str]:
        base = {"format": "json", "redirects": "1", "action": "query"}
        if self.maxlag is not None:
            base["maxlag"] = str(self.maxlag)
        return {**base, **params}

    async def extracts(self, titles: Sequence[str], *, intro: bool | None = None) -> dict[str, Page]:
        """Plain-text extracts (`explaintext`, `== Section ==` headings) of `titles`, following `continue`."""
        intro = self.mode == "intro" if intro is None else intro
        params = {"prop": "extracts", "explaintext": "1", "exsectionformat": "wiki"}
        if intro:
            params.update(exintro="1", exlimit="max")
        return await self._titles_query(titles, params, INTRO_EXTRACTS_PER_REQUEST if intro else TITLES_PER_REQUEST, text=True)

    async def info(self, titles: Sequence[str], *, inprop: Sequence[str] = ()) -> dict[str, Page]:
        """Existence and ids of `titles` (`prop=info`); `Page.exists` tells, `text` stays None."""
        params = {"prop": "info"}
        if inprop:
            params["inprop"] = "|".join(inprop)
        return await self._titles_query(titles, params, TITLES_PER_REQUEST, text=False)

    async def search(self, text: str, limit: int = 10, *, offset: int = 0) -> SearchResults:
        """Full-text search of article titles and bodies (`list=search`, namespace 0, by relevance)."""
        params = self._params(list="search", srsearch=text, srnamespace="0", srlimit=str(max(1, min(limit, 500))), srsort="relevance")
        if offset:
            params["sroffset"] = str(offset)
        doc = await self._get(self.api_url, params)
        query = doc.get("query", {})
        hits = [
            SearchHit(h["title"], h.get("pageid"), _strip_tags(h.get("snippet", "")), h.get("wordcount"))
            for h in query.get("search", []) if isinstance(h, dict) and "title" in h
        ]
        more = doc.get("continue", {})
        return SearchResults(hits, (query.get("searchinfo") or {}).get("totalhits"), more.get("sroffset") if isinstance(more, dict) else None)

    async def query(self, params: Mapping[str, str]) -> dict[str, Any]:
        """One `action=query` with every `continue` round followed; pages and title maps merged."""
        merged: dict[str, Any] = {"pages": {}, "normalized": [], "converted": [], "redirects": [], "interwiki": []}
        cont: dict[str, str] = {}
        for _ in range(MAX_CONTINUE_ROUNDS):
            doc = await self._get(self.api_url, self._params(**params, **cont))
            query = doc.get("query", {})
            for rec in _records(query.get("pages")):
                merged["pages"].setdefault(rec.get("pageid") or rec.get("title"), {}).update(rec)
            for name in ("normalized", "converted", "redirects", "interwiki"):
                merged[name].extend(x for x in query.get(name) or [] if isinstance(x, dict))
            nxt = doc.get("continue")
            if not isinstance(nxt, dict) or not nxt:
                return merged
            cont = {k: str(v) for k, v in nxt.items()}
        raise EndpointError(f"{_host(self.api_url)} kept sending `continue` after {MAX_CONTINUE_ROUNDS} rounds: ask fewer titles")

    async def _titles_query(self, titles: Sequence[str], params: dict[str, str], size: int, *, text: bool) -> dict[str, Page]:
        out: dict[str, Page] = {}
        valid: list[str] = []
        for title in dict.fromkeys(titles):
            problem = title_problem(title)
            if problem:
                out[title] = Page(title, key=title, invalid=True, reason=problem)
            else:
                valid.append(title)
        batches = list(_batches(valid, size))
        merged = await asyncio.gather(*(self.query({**params, "titles": "|".join(t.strip() for t in b)}) for b in batches))
        for batch, query in zip(batches, merged):
            out.update(self._pages_from(query, batch, text=text))
        return {t: out[t] for t in dict.fromkeys(titles)}

    def _pages_from(self, query: dict[str, Any], titles: Sequence[str], *, text: bool) -> dict[str, Page]:
        hops = {x["from"]: x["to"] for name in ("normalized", "converted", "redirects") for x in query[name] if "from" in x and "to" in x}
        interwiki = {x.get("title"): x.get("iw") for x in query["interwiki"]}
        by_title = {rec.get("title"): rec for rec in query["pages"].values()}
        out = {}
        for asked in titles:
            chain: list[str] = []
            current = asked.strip()
            while current in hops and current not in chain and len(chain) < 10:
                chain.append(current)
                current = hops[current]
            if chain:
                self.redirects[asked] = current
            rec = by_title.get(current)
            if current in interwiki:
                out[asked] = Page(current, key=asked, invalid=True, redirected_from=tuple(chain), reason=f"interwiki link to {interwiki[current]!r}")
            elif rec is None:
                out[asked] = Page(current, key=asked, missing=True, redirected_from=tuple(chain), reason="not in the API answer")
            else:
                out[asked] = _page_from_record(rec, asked, tuple(chain), text=text, host=_host(self.api_url))
        return out

    # -- REST summary ----------------------------------------------------------------------------
    async def summaries(self, titles: Sequence[str]) -> dict[str, Page]:
        """Lead-paragraph summaries from the REST `page/summary` endpoint (one request per title)."""
        found = await asyncio.gather(*(self._guarded([t], self._summary) for t in dict.fromkeys(titles)))
        return {k: v for part in found for k, v in part.items()}

    async def _summary(self, titles: list[str]) -> dict[str, Page]:
        (title,) = titles
        problem = title_problem(title)
        if problem:
            return {title: Page(title, key=title, invalid=True, reason=problem)}
        url = f"{self.rest_url}/page/summary/{quote(title.strip().replace(' ', '_'), safe='')}"
        doc = await self._get(url, None, missing_ok=True)
        if doc is None:
            return {title: Page(title, key=title, missing=True, reason=f"no such page on {_host(self.rest_url)}")}
        final = (doc.get("titles") or {}).get("normalized") or doc.get("title") or title
        chain = (title,) if _canonical(final) != _canonical(title) else ()
        if chain:
            self.redirects[title] = final
        return {title: Page(final, text=doc.get("extract"), qid=doc.get("wikibase_item"), pageid=doc.get("pageid"),
                            key=title, redirected_from=chain)}

    # -- transport -------------------------------------------------------------------------------
    async def _get(self, url: str, params: dict[str, str] | None, *, missing_ok: bool = False) -> Any:
        """A decoded JSON answer: from the cache, shared with an identical request in flight, or fetched."""
        key = JsonCache.key(url, params)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self._charge("text_cache_hits")
                return hit
        if self.offline:
            raise OfflineMiss(f"--offline: no cached answer from {_host(url)} for this page; run once without --offline")
        pending = self._inflight.get(key)
        if pending is None:
            pending = self._inflight[key] = asyncio.ensure_future(self._fetch(url, params, missing_ok, key))
            pending.add_done_callback(lambda _f: self._inflight.pop(key, None))
        return await asyncio.shield(pending)

    async def _fetch(self, url: str, params: dict[str, str] | None, missing_ok: bool, key: str) -> Any:
        host = _host(url)
        for attempt in range(self.lag_retries + 1):
            self._charge("text_requests")
            response = await self.client.request("GET", url, params=params)
            if response.status == 404 and missing_ok:
                return None
            if response.status >= 400:
                raise EndpointError(f"GET {host} answered HTTP {response.status}: {response.text().strip()[:160] or '(empty body)'}",
                                    status=response.status)
            try:
                doc = json.loads(response.body)
            except ValueError as exc:
                raise EndpointError(f"GET {host} returned malformed JSON ({exc}): retry later; nothing was cached") from None
            if not isinstance(doc, dict):
                raise EndpointError(f"GET {host} returned JSON {type(doc).__name__}, not an object: check the API URL")
            if not isinstance(doc.get("query", {}), dict):
                raise EndpointError(f"{host} answered without a query object: check the API URL")
            error = doc.get("error")
            if error is None:
                if self.cache is not None:
                    self.cache.set(key, doc)
                return doc
            code, info = (error.get("code", "?"), str(error.get("info", "")).strip()) if isinstance(error, dict) else ("?", str(error))
            if code != "maxlag":
                raise EndpointError(f"{host} API error {code}: {info[:160]}")
            told = parse_retry_after(response.headers.get("Retry-After"))
            wait = min(DEFAULT_LAG_WAIT if told is None else told, self.client.max_retry_after)
            if attempt < self.lag_retries:
                self.client.pause(host, wait)  # the replica lag holds for every request to the host, not just this one
        raise RateLimited(f"{host} stayed over maxlag={self.maxlag} ({info}) for {self.lag_retries + 1} attempts: retry later",
                          retry_after=wait)


def _page_from_record(rec: dict[str, Any], asked: str, chain: tuple[str, ...], *, text: bool, host: str) -> Page:
    common: dict[str, Any] = {"key": asked, "redirected_from": chain, "pageid": rec.get("pageid")}
    title = rec.get("title", asked)
    if "invalid" in rec:
        return Page(title, invalid=True, reason=rec.get("invalidreason") or "invalid title", **common)
    if "missing" in rec:
        return Page(title, missing=True, reason=f"no such page on {host}", **common)
    if not text:
        return Page(title, **common)
    extract = rec.get("extract")
    return Page(title, text=extract, reason=None if extract is not None else "the API returned no extract", **common)


def _records(pages: Any) -> Iterable[dict[str, Any]]:
    """Page records of formatversion 1 (dict by id) or 2 (list)."""
    values = pages.values() if isinstance(pages, dict) else pages if isinstance(pages, list) else []
    return (rec for rec in values if isinstance(rec, dict))


def _batches(items: Sequence[str], size: int) -> Iterable[list[str]]:
    for start in range(0, len(items), size):
        yield list(items[start:start + size])


def _host(url: str) -> str:
    return urlsplit(url).netloc


def _strip_tags(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


# -- offline source --------------------------------------------------------------------------------
@dataclass
class JsonlSource:
    """Pages from JSONL files of `{qid, title, label?, text}` (one object a line), found by Q-id, title or label."""

    paths: Sequence[str | os.PathLike]
    name: str = "file"
    by_qid: bool = True
    _by_key: dict[str, dict[str, Any]] | None = field(default=None, init=False, repr=False)

    def _index(self) -> dict[str, dict[str, Any]]:
        if self._by_key is None:
            index: dict[str, dict[str, Any]] = {}
            labels: dict[str, dict[str, Any]] = {}
            for path in self.paths:
                for row in _read_jsonl(Path(path)):
                    title = str(row.get("title") or "")
                    for key in (row.get("qid"), title and _canonical(title), title and _canonical(unquote(title))):
                        if key:
                            index.setdefault(key, row)
                    if row.get("label"):
                        labels.setdefault("label:" + str(row["label"]).casefold(), row)
            self._by_key = {**labels, **index}
        return self._by_key

    def lookup(self, key: str) -> dict[str, Any] | None:
        index, key = self._index(), key.strip()
        if QID.match(key):
            return index.get(key)
        return index.get(_canonical(key)) or index.get("label:" + key.casefold())

    async def pages(self, keys: Sequence[str]) -> dict[str, Page]:
        out = {}
        for key in dict.fromkeys(keys):
            row = self.lookup(key)
            if row is None:
                out[key] = Page(None if QID.match(key.strip()) else key, key=key, missing=True, source=self.name,
                                reason=f"not in {', '.join(Path(p).name for p in self.paths)}")
            else:
                out[key] = Page(unquote(row["title"]) if row.get("title") else None, text=row["text"], qid=row.get("qid"), key=key, source=self.name)
        return out

    async def __aenter__(self) -> JsonlSource:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        return None


def _read_jsonl(path: Path) -> Iterable[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise KgfedError(f"cannot read extracts file {path}: {exc.strerror}: give a JSONL file of {{qid, title, text}}") from None
    except UnicodeDecodeError as exc:  # a binary file: one line naming it, not the codec's words
        raise KgfedError(f"extracts file {path} is not UTF-8 text (byte {exc.start}): give a JSONL file of "
                         "{qid, title, text}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if not isinstance(row, dict) or not isinstance(row.get("text"), str) or not (row.get("qid") or row.get("title")):
            raise KgfedError(f"{path}:{number}: not a JSON object with text and qid or title: fix or drop the line")
        yield row
