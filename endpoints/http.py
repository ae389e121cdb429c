"""SPARQL 1.1 Protocol over HTTP (WDQS, QLever, Virtuoso, Oxigraph server, any standard endpoint)."""
from __future__ import annotations

import re
import time
from typing import Literal as TypingLiteral
from urllib.parse import urlsplit

from ..sparql.errors import EndpointError, EndpointTimeout, HttpStatusError, NotAnAnswer, PartialResult
from ..sparql.results import AnswerBudget, SelectResult, parse_sparql_json
from ..sparql.secrets import redact, split_credentials
from .bounds import answer_budget, current_bounds
from .client import HttpClient, Response, first_line
from .kinds import kind_named

ACCEPT = "application/sparql-results+json"
ServerKind = TypingLiteral["virtuoso", "qlever", "wdqs", "oxigraph", "generic"]
SENDS_TIMEOUT = {"virtuoso", "generic"}  # servers that get Virtuoso's `timeout` parameter (milliseconds)
QLEVER_DEFAULT_TIMEOUT = 30.0  # seconds: qlever-control's default; a `timeout` above a server's own is a 403 without a token
_PARSE_INLINE = 1 << 20  # bytes: a larger answer is parsed in a thread, so the event loop keeps serving other calls
_QLEVER_HOSTS = {"qlever.dev", "qlever.cs.uni-freiburg.de"}
PartialPolicy = TypingLiteral["error", "retry", "allow", "report"]
PARTIAL_POLICIES = ("error", "retry", "allow", "report")
_LIMIT = re.compile(r"\bLIMIT\s+(\d+)\s*$", re.IGNORECASE)


class HttpEndpoint:
    """A SPARQL endpoint URL. GET for short queries, POST (form-encoded) for long ones.

    Virtuoso answers HTTP 200 with incomplete results when its anytime timeout fires and says so only
    in the `X-SQL-State: S1TAT` header, and cuts answers at its row cap (`X-SPARQL-MaxRows`, or a result
    as long as a declared `max_rows`). A partial answer is never silent; the `partial` policy says what
    happens to it:

    - `"error"` (default): raise `PartialResult`;
    - `"retry"`: re-send with a 4x longer `timeout` parameter up to `max_timeout_ms`, then raise
      `PartialResult` if it is still incomplete (a row cap is not retried: paging is the fix);
    - `"allow"`: return it marked `partial` (with `note`); the cache never stores it and the KG's
      answers say `.partial`. (`"report"` is the old name of `"allow"`.)

    Credentials in the URL (`http://user:pw@host/sparql`) are split off at once: every request carries
    them as an `Authorization: Basic` header and goes to the URL without userinfo, and `url` and `name`
    (hence cache keys, messages and logs) never hold them.
    """

    def __init__(
        self,
        url: str,
        client: HttpClient,
        *,
        default_graph: str | None = None,
        post_threshold: int = 1800,
        partial: PartialPolicy = "error",
        timeout_ms: int | None = None,
        max_timeout_ms: int = 600_000,
        max_rows: int | None = None,
        name: str | None = None,
        server: ServerKind | None = None,
    ):
        parts = urlsplit(url)
        if parts.scheme not in {"http", "https"} or not parts.netloc:
            raise EndpointError(f"invalid endpoint URL {redact(url)!r}: expected http(s)://host[:port]/path")
        url, self._authorization = split_credentials(url)
        self.url = url
        self.client = client
        self.default_graph = default_graph
        self.post_threshold = post_threshold
        self.partial = partial
        self.timeout_ms = timeout_ms
        self.max_timeout_ms = max_timeout_ms
        self.max_rows = max_rows
        self.name = name or (url if not default_graph else f"{url}#graph={default_graph}")
        self.requests = 0
        self.server: ServerKind = server or server_kind(url)
        if server is not None and hasattr(client, "declare_kind"):  # what the client recognises in this host's answers
            client.declare_kind(urlsplit(url).netloc, server)

    def server_timeout_ms(self) -> int | None:
        """The time limit the server is told, in ms: `timeout_ms` if set, else the caller's `bounded(timeout=...)`,
        else the client's timeout: the server stops a query when kgfed stops waiting for it."""
        if self.timeout_ms:
            return self.timeout_ms
        limits = current_bounds()
        seconds = limits.timeout if limits is not None else getattr(self.client, "timeout", None)
        return int(seconds * 1000) if seconds else None

    async def select(self, query: str) -> SelectResult:
        """The answer to `query`, under the partial policy (see the class docstring)."""
        if self.partial not in PARTIAL_POLICIES:
            raise EndpointError(f"unknown partial policy {self.partial!r}: use error, retry or allow")
        timeout_ms = self.server_timeout_ms()
        attempts = 1
        while True:
            result = await self._send(query, timeout_ms)
            if not result.partial or self.partial != "retry" or (timeout_ms or 0) >= self.max_timeout_ms:
                break
            timeout_ms = min(self.max_timeout_ms, (timeout_ms or 10_000) * 4)
            attempts += 1
        limit = _LIMIT.search(query.strip())
        asked = int(limit.group(1)) if limit else None
        if self.max_rows and len(result.rows) >= self.max_rows and (asked is None or asked > self.max_rows):
            result.partial = True
            result.note = f"result has {len(result.rows)} rows, the server's cap (ResultSetMaxRows): add LIMIT/OFFSET paging"
        if result.partial and self.partial not in ("allow", "report"):
            tried = f" after {attempts} attempts" if self.partial == "retry" else ""
            raise PartialResult(
                f"{self.name} returned a partial result{tried} ({result.note}): narrow the query or raise the server's "
                "limits, or open the KG with partial='allow' (CLI: --partial allow) to accept it marked partial"
            )
        return result

    async def _send(self, query: str, timeout_ms: int | None) -> SelectResult:
        """One request; the answer must be a SPARQL JSON results document, or a typed error says why not.

        The server is told the time limit where it takes one (`_limit_fields`), so a query kgfed gives up on
        stops there too. The answer is parsed under the caller's `AnswerBudget` (rows and terms, counted as
        they are built); a large one in a thread, off the event loop.
        """
        seconds = self._seconds()
        deadline = time.monotonic() + seconds
        fields = {"query": query}
        if self.default_graph:
            fields["default-graph-uri"] = self.default_graph
        limited = {**fields, **self._limit_fields(timeout_ms)}
        response = await self._request(limited)
        host = urlsplit(self.url).netloc
        if response.status == 403 and limited != fields and "timeout" in response.text().lower():
            response = await self._request(fields)  # a QLever whose own limit is lower than ours: it bounds the query
        if response.status >= 400:
            raise HttpStatusError(
                f"{host} rejected the query with HTTP {response.status}: {first_line(response.text())}",
                status=response.status,
            )
        _require_results_document(host, response)
        result = await self._parse(response.body, host, deadline)
        state = response.headers.get("X-SQL-State", "")
        if state.upper() == "S1TAT":
            if self.partial == "error" and not self.timeout_ms and "timeout" in limited and \
                    time.monotonic() >= deadline - 0.2 * seconds:  # stopped at kgfed's own limit: a timeout, as the client's
                raise EndpointTimeout(f"{host} stopped the query at kgfed's time limit of {seconds:g} s (Virtuoso's anytime "
                                      "timeout, X-SQL-State: S1TAT): simplify the query, batch less, or raise --timeout")
            result.partial = True
            result.note = response.headers.get("X-SQL-Message") or "Virtuoso anytime timeout (X-SQL-State: S1TAT)"
        elif response.headers.get("X-SPARQL-MaxRows"):  # Virtuoso cut the result at its ResultSetMaxRows
            result.partial = True
            result.note = (f"result cut at the server's cap of {response.headers['X-SPARQL-MaxRows']} rows "
                           "(ResultSetMaxRows): add LIMIT/OFFSET paging")
        return result

    def _limit_fields(self, timeout_ms: int | None) -> dict[str, str]:
        """The server's own time limit as a request parameter: Virtuoso's (and unknown servers') `timeout` in ms
        (its anytime limit), QLever's `timeout` (`NNNms`) below its default of 30 s (a higher one needs an access
        token: QLever bounds the query by its own limit then); WDQS stops queries at its own 60 s and takes none."""
        return kind_named(self.server).timeout_fields(timeout_ms)  # the server kind's parameter, form and ceiling

    async def _request(self, fields: dict[str, str]) -> Response:
        headers = self.request_headers()
        self.requests += 1
        if len(fields["query"]) <= self.post_threshold:
            return await self.client.request("GET", self.url, params=fields, headers=headers)
        return await self.client.request("POST", self.url, data=fields, headers=headers)

    def _seconds(self) -> float:
        """kgfed's time limit for one query here: the caller's `bounded(timeout=...)`, else the client's."""
        limits = current_bounds()
        return limits.timeout if limits is not None else float(getattr(self.client, "timeout", 0) or 3600)

    async def _parse(self, body: bytes, host: str, deadline: float) -> SelectResult:
        """The answer under the budget; a large one in a thread, and within the query's time limit (`deadline`)."""
        budget = answer_budget(self.budget())
        if len(body) <= _PARSE_INLINE:
            return parse_sparql_json(body, source=host, budget=budget)
        import asyncio

        return await asyncio.to_thread(parse_sparql_json, body, source=host, budget=budget, deadline=deadline)

    def budget(self) -> AnswerBudget:
        """This endpoint's answer budget outside a caller's `bounded(...)` block: its client's (`HttpOptions.max_rows`
        and `max_terms`), else the defaults."""
        return getattr(self.client, "answer_budget", None) or answer_budget()

    def request_headers(self) -> dict[str, str]:
        """The headers every request to this endpoint carries: `Accept`, and the URL's credentials as
        `Authorization: Basic` (for code that sends its own requests to `url`, e.g. `kgfed doctor`)."""
        headers = {"Accept": ACCEPT}
        if self._authorization:
            headers["Authorization"] = self._authorization
        return headers

    def __repr__(self) -> str:  # never the Authorization value
        return f"HttpEndpoint({self.name!r}, server={self.server!r})"

    async def aclose(self) -> None:  # the client is shared and closed by its owner
        return None


def server_kind(url: str) -> ServerKind:
    """Which server software a URL reaches, from its host (`generic` when unknown)."""
    host = (urlsplit(url).hostname or "").lower()
    if host in _QLEVER_HOSTS:
        return "qlever"
    if host.endswith(".wikidata.org") and host.startswith("query"):
        return "wdqs"
    return "generic"


def _require_results_document(host: str, response: Response) -> None:
    """A 2xx that is not SPARQL JSON (an HTML page, a plain-text notice) raises NotAnAnswer: never parsed or cached."""
    kind = response.content_type
    start = response.body.lstrip()[:1]
    if start in (b"{", b"[") and "html" not in kind:
        return  # JSON: parse_sparql_json judges its shape
    what = "an HTML page" if "html" in kind or start == b"<" else f"{kind or 'untyped'} text"
    raise NotAnAnswer(
        f"{host} answered HTTP {response.status} with {what}, not SPARQL results ({first_line(response.text(), 100)}): "
        "check the endpoint URL (it must be the SPARQL endpoint itself) and your --user-agent/--contact",
        status=response.status,
    )
