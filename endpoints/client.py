"""The shared HTTP client: one per run, polite per host, retries, and honest typed errors.

Every KG, the Wikipedia text source and the OpenAI-compatible LLM of a run share one `HttpClient`, so
one host is one politeness domain: its concurrency cap, its per-minute budget and its 429 pauses hold
for all of them together. Bytes move through an injectable `AsyncTransport` (aiohttp by default,
`MockTransport` in tests), so fault tests run this code without sockets.

Wikimedia's rules shape the defaults:

- User-Agent `kgfed/VERSION (CONTACT) aiohttp/VERSION` (the User-Agent policy's form). The contact
  comes from `contact=`, `$KGFED_CONTACT` or `contact = "..."` in the config file
  (`$KGFED_CONFIG`, default `~/.config/kgfed/config.toml`); without one, the first request to a
  Wikimedia host logs a one-line warning saying how to set it (WDQS answers such requests with a
  robot-policy notice, or 403).
- At most 5 parallel queries to WDQS, never more than 3 to a Wikimedia API host (their published
  advice; `--concurrency` cannot raise it), a client-side per-minute budget per Wikimedia API host
  that follows the published numbers for an unidentified client (no contact: 500 an hour), an
  identified one (60 a minute) and an authenticated one (5,000 an hour), and WDQS's 60 s of query
  time a minute spent per host (`[budgets]` in the config file overrides the request budgets;
  sources and dates in docs/endpoints.md).
- An OAuth 2.0 access token from `$KGFED_WIKIMEDIA_TOKEN` goes (as `Authorization: Bearer`) to
  Wikimedia API hosts, and to a Wikimedia query service only after it asked for authentication (401,
  or 403 with `WWW-Authenticate`); never to another host. Cassettes filter the header, caches never see it.
- On HTTP 429 the whole host pauses for `Retry-After` (ignoring it on WDQS earns a 24 h ban), except
  QLever's 429 "Operation timed out", which is a query timeout: raised at once, never retried. WDQS's
  timeout (HTTP 500, or a 200 whose JSON breaks off, with Blazegraph's `TimeoutException`) is one too.
- 5xx answers and dropped connections are retried with exponential backoff and full jitter; a
  robot-policy notice (HTTP 200 text or 403) raises `UserAgentRejected` at once, and a 5xx the server's kind
  marks as an error of the query itself (Virtuoso's SQLSTATE 37000/42000 500s) `HttpStatusError` at once.
- A request that timed out is not sent again in the same run (`repeat_timeouts=True` allows it).

`request(...)` is a chain of small handlers (`endpoints.handlers`: no-repeat, auth, retry, recognition,
politeness, transport); what kgfed knows of each kind of server (WDQS, QLever, Virtuoso, Oxigraph,
Wikimedia API, generic) is one `ServerKind` capability object each (`endpoints.kinds`), which the handlers
ask. This class holds the state they share: caps, budgets, pauses, the authorized hosts, `stats`.
"""
from __future__ import annotations

import email.utils
import json
import os
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:  # imported where used (sleeps, semaphores): the SPARQLWrapper drop-in's import never loads them
    import asyncio
    import logging


from ..sparql.errors import ClientClosed, EndpointError, HttpStatusError
from . import handlers
from .handlers import RETRY_STATUSES, Call
from .kinds import (
    CONTACT_ENV, DEFAULT_CONFIG, HOW_TO_SET_CONTACT, POLITE_HOSTS, ServerKind, first_line, is_query_service, is_wikimedia,
    WDQS, WIKIMEDIA_API, is_wikimedia_api, kind_named, kind_of_host,
)
from .options import DEFAULT_PER_HOST, DEFAULT_RETRIES, DEFAULT_TIMEOUT, HttpOptions
from .transport import AiohttpTransport, AsyncTransport, Response

__all__ = ["HttpClient", "HttpOptions", "Response", "DEFAULT_USER_AGENT", "POLITE_HOSTS", "parse_retry_after", "make_user_agent",
           "resolve_contact", "is_wikimedia", "is_wikimedia_api", "is_query_service", "first_line", "RETRY_STATUSES"]



class _Log:
    """`logging.getLogger(name)`, with `logging` imported only when a record could be shown.

    asyncio and logging are imported where they are needed, not here: the SPARQLWrapper drop-in's import
    (this module included) must cost a script no more than the genuine library's. While no module has
    imported `logging`, nothing can have configured it: a DEBUG or INFO record would be dropped by the
    root logger's WARNING level, so it is skipped; WARNING and above import `logging` (its last-resort
    handler prints them, as before)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger_made: logging.Logger | None = None

    def _logger(self) -> logging.Logger:
        logger = self._logger_made
        if logger is None:
            import logging

            logger = self._logger_made = logging.getLogger(self.name)
        return logger

    def debug(self, *args: Any, **kwargs: Any) -> None:
        if self._logger_made is not None or "logging" in sys.modules:
            self._logger().debug(*args, stacklevel=2, **kwargs)

    def info(self, *args: Any, **kwargs: Any) -> None:
        if self._logger_made is not None or "logging" in sys.modules:
            self._logger().info(*args, stacklevel=2, **kwargs)

    def warning(self, *args: Any, **kwargs: Any) -> None:
        self._logger().warning(*args, stacklevel=2, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._logger(), name)


log = _Log("kgfed.http")


def _normal_name(name: str) -> str:  # importlib.metadata's `Prepared.normalize`
    return re.sub(r"[-_.]+", "_", name).lower()


def _metadata_version(path: str) -> str | None:
    """The `Version:` header of a `.dist-info`/`.egg-info` (METADATA, PKG-INFO or the file itself, as
    `importlib.metadata` reads it); None if it cannot be read."""
    for candidate in (os.path.join(path, "METADATA"), os.path.join(path, "PKG-INFO"), path):
        try:
            with open(candidate, encoding="utf-8") as metadata:
                for line in metadata:
                    if not line.strip():  # the end of the headers
                        return None
                    if line.lower().startswith("version:"):
                        return line[len("version:"):].strip() or None
            return None
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
            continue
        except (OSError, ValueError):
            return None
    return None


def _listed_versions(*distributions: str) -> dict[str, str | None]:
    """Each distribution's version from the first `.dist-info`/`.egg-info` on `sys.path` naming it, found as
    `importlib.metadata` finds it (path order, names normalised), every directory listed once for all of them.
    A distribution missing from the answer (a zip archive or an egg on the path first, none found) or None
    (unreadable) is for `importlib.metadata` to answer."""
    pending = {_normal_name(d): d for d in distributions}
    initials = {key[:1] for key in pending}
    versions: dict[str, str | None] = {}
    for entry in sys.path:
        if not pending or entry.lower().endswith(".egg"):  # an egg: importlib.metadata reads those
            break
        try:
            names = os.listdir(entry or ".")
        except NotADirectoryError:  # a zip archive: importlib.metadata reads those
            break
        except OSError:  # nothing there, or a path hook's name
            continue
        for name in names:
            low = name.lower()
            if low[:1] not in initials or not low.endswith((".dist-info", ".egg-info")):
                continue
            key = _normal_name(low.rpartition(".")[0].partition("-")[0])
            if key in pending:
                versions[pending.pop(key)] = _metadata_version(os.path.join(entry or ".", name))
    return versions


def _version(distribution: str = "kgfed", default: str = "0+unknown", listed: dict[str, str | None] | None = None) -> str:
    """`distribution`'s installed version, read from its `.dist-info` directly (`listed`: already read). Importing
    `importlib.metadata` and searching with it cost about 9 ms of every script that imports the drop-in."""
    found = (_listed_versions(distribution) if listed is None else listed).get(distribution)
    if found is not None:
        return found
    try:
        from importlib.metadata import version

        return version(distribution)
    except Exception:  # not installed as a distribution (a source checkout on sys.path)
        return default


_LISTED = _listed_versions("kgfed", "aiohttp")  # one pass over sys.path for both
VERSION = _version(listed=_LISTED)
AIOHTTP_VERSION = _version("aiohttp", "3", _LISTED)  # read from its metadata: importing aiohttp here costs 0.4 s
TOKEN_ENV = "KGFED_WIKIMEDIA_TOKEN"
CONFIG_ENV = "KGFED_CONFIG"


def make_user_agent(contact: str | None = None) -> str:
    """`kgfed/VERSION (CONTACT) aiohttp/VERSION`, the form Wikimedia's User-Agent policy asks for."""
    middle = f" ({contact.strip()})" if contact and contact.strip() else ""
    return f"kgfed/{VERSION}{middle} aiohttp/{AIOHTTP_VERSION}"


DEFAULT_USER_AGENT = make_user_agent()  # no contact: the first Wikimedia request warns
_CONTACT_IN_UA = re.compile(r"\([^)]*(@|https?://|[a-z0-9-]+\.[a-z]{2,})[^)]*\)", re.IGNORECASE)

# Hosts with published rules get a low default cap (`kinds.POLITE_HOSTS`, from each `ServerKind`); everything
# else (local Virtuoso/Oxigraph) a high one.
# "limit the number of concurrent requests to 3 or fewer" (Wikimedia APIs/Rate limits): the kind's ceiling
WIKIMEDIA_API_CONCURRENCY: int = WIKIMEDIA_API.concurrency_ceiling or 3
# Client-side requests per minute per Wikimedia API host (api.php, REST); `[budgets]` in the config file
# overrides. Where each number comes from (checked 2026-11-25) is in docs/endpoints.md:
# - api.wikimedia.org publishes 500 requests/hour per IP without a token and 5,000/hour with one
#   (https://api.wikimedia.org/wiki/Documentation/Getting_started/Rate_limits);
# - the global API limits (https://www.mediawiki.org/wiki/Wikimedia_APIs/Rate_limits, rolled out from
#   March 2026) put a client without operator contact in its User-Agent in a restrictive tier, a client
#   with one in the normal tier, an authenticated one higher.
UNIDENTIFIED_BUDGET = 500 / 60  # no contact: the restrictive tier, held to the published anonymous 500/hour
ANONYMOUS_BUDGET = 60  # contact set, no token: one request a second (API:Etiquette: in series, not in parallel)
AUTHENTICATED_BUDGET = 5000 / 60  # with KGFED_WIKIMEDIA_TOKEN: the published 5,000/hour of an authenticated client
API_PORTAL = "api.wikimedia.org"  # its published per-IP hourly limits hold for every client without a token
# WDQS: "one client (User-Agent + IP) is allowed 60 seconds of processing time each 60 seconds" and 5 parallel
# queries (https://www.mediawiki.org/wiki/Wikidata_Query_Service/User_Manual#Query_limits); kgfed spends the
# wall time of each answer from a per-host bucket refilled at 60 s a minute, so it never asks past the limit.
QUERY_SECONDS_PER_MINUTE: float = WDQS.query_seconds_per_minute or 60.0  # what the WDQS kind holds
_warned_no_contact = False


class _TimeBudget:
    """Seconds of server time per minute (WDQS's query-time limit): a bucket refilled continuously."""

    def __init__(self, per_minute: float):
        self.capacity = self.level = per_minute
        self.rate = per_minute / 60.0
        self.at = time.monotonic()

    def _refill(self) -> None:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self.at) * self.rate)
        self.at = now

    async def wait(self) -> None:
        self._refill()
        import asyncio

        while self.level <= 0:
            await asyncio.sleep(-self.level / self.rate + 0.01)
            self._refill()

    def spend(self, seconds: float) -> None:
        self._refill()
        self.level -= seconds


def _read_config() -> dict:
    path = Path(os.environ.get(CONFIG_ENV) or DEFAULT_CONFIG).expanduser()
    if not path.is_file():
        return {}
    import tomllib

    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EndpointError(f"cannot read the kgfed config file {path} ({exc}): fix its TOML or point ${CONFIG_ENV} elsewhere") from None


def resolve_contact(explicit: str | None = None) -> str | None:
    """The contact for the User-Agent: the argument, else $KGFED_CONTACT, else `contact` in the config file."""
    for value in (explicit, os.environ.get(CONTACT_ENV), _read_config().get("contact")):
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class HttpClient:
    """Async HTTP with per-host caps and budgets, retries, 429 handling and typed errors; one per run.

    `repeat_timeouts`: send a request that timed out again when asked again (default False: its error at once)."""

    def __init__(
        self,
        *,
        user_agent: str | None = None,
        contact: str | None = None,
        per_host: int = DEFAULT_PER_HOST,
        host_limits: dict[str, int] | None = None,
        budgets: Mapping[str, float] | None = None,
        token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        max_retry_after: float = 300.0,
        transport: AsyncTransport | None = None,
        repeat_timeouts: bool = False,
    ):
        config = _read_config()
        self.contact = resolve_contact(contact)
        given = user_agent if user_agent and user_agent != DEFAULT_USER_AGENT else None
        self.user_agent = given or make_user_agent(self.contact)
        self.has_contact = bool(self.contact) if not given else bool(_CONTACT_IN_UA.search(given))
        self.token = token if token is not None else (os.environ.get(TOKEN_ENV) or None)
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_retry_after = max_retry_after
        self.transport: AsyncTransport = transport or AiohttpTransport()
        self._per_host = per_host
        self._host_limits = {**POLITE_HOSTS, **(host_limits or {})}
        self._budget_overrides = {**{k: float(v) for k, v in (config.get("budgets") or {}).items()},
                                  **{k: float(v) for k, v in (budgets or {}).items()}}
        self._semaphores: dict[str, asyncio.Semaphore] = {}
        self._limiters: dict[str, object] = {}
        self._paused_until: dict[str, float] = {}
        self._time_budgets: dict[str, _TimeBudget] = {}
        self.authorized: set[str] = set()  # query-service hosts that asked for authentication (they get the token)
        self.repeat_timeouts = repeat_timeouts  # True: a request that timed out may be sent again in this run
        self._kinds: dict[str, ServerKind] = {}  # hosts whose kind a caller declared (`declare_kind`)
        self._closed = False
        self.stats: Counter[str] = Counter()
        self.answer_budget: Any = None  # the run's `sparql.results.AnswerBudget` (HttpOptions.max_rows/max_terms): from_options
        self.log, self.token_env = log, TOKEN_ENV  # what the handlers log to and name
        self._send = handlers.chain([handlers.NoRepeat(self), handlers.Auth(self), handlers.Retry(self),
                                     handlers.Recognise(self), handlers.Polite(self)], handlers.Transport(self))

    @classmethod
    def from_options(cls, options: HttpOptions, *, transport: AsyncTransport | None = None,
                     host_limits: Mapping[str, int] | None = None, **tuning: Any) -> HttpClient:
        """The client a run's `HttpOptions` describe: the one way code outside this module builds one.

        `concurrency` caps every host (the polite ones included); without it each host keeps its own cap
        and the others get `per_host`. `transport` swaps the bytes layer (`MockTransport` in tests);
        `host_limits` adds caps for hosts the caller knows (a Wikipedia mirror gets en.wikipedia.org's);
        `tuning` passes the rarer knobs through (`backoff`, `budgets`, `token`, `max_retry_after`)."""
        if not isinstance(options, HttpOptions):
            raise TypeError(f"HttpClient.from_options takes an HttpOptions, not {type(options).__name__}")
        limits = dict(host_limits or {})
        if options.concurrency is not None:
            limits.update({host: options.concurrency for host in POLITE_HOSTS})
        client = cls(user_agent=options.user_agent, contact=options.contact, timeout=options.timeout,
                     per_host=options.concurrency or options.per_host, host_limits=limits or None,
                     retries=options.retries, transport=transport, **tuning)
        from ..sparql.results import AnswerBudget  # the run's budget of one answer, read by `HttpEndpoint.budget`

        client.answer_budget = AnswerBudget(options.max_rows, options.max_terms)
        return client

    @classmethod
    def configured(cls, *, user_agent: str | None = None, contact: str | None = None, timeout: float = DEFAULT_TIMEOUT,
                   concurrency: int | None = None, transport: AsyncTransport | None = None, **tuning: Any) -> HttpClient:
        """A client from CLI-style options (0.2's spelling of `from_options(HttpOptions(...))`)."""
        options = HttpOptions(timeout=timeout, user_agent=user_agent, contact=contact, concurrency=concurrency,
                              **{k: tuning.pop(k) for k in ("per_host", "retries") if k in tuning})
        return cls.from_options(options, transport=transport, **tuning)

    # -- lifecycle -------------------------------------------------------------------------------
    async def __aenter__(self) -> HttpClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the transport; later requests raise `ClientClosed` (idempotent)."""
        self._closed = True
        await self.transport.aclose()

    @property
    def closed(self) -> bool:
        return self._closed

    # -- politeness ------------------------------------------------------------------------------
    def kind_for(self, host: str) -> ServerKind:
        """What kgfed knows of the server at `host` (declared with `declare_kind`, else `kinds.kind_of_host`)."""
        declared = self._kinds.get(host)
        return declared if declared is not None else kind_of_host(host)

    def declare_kind(self, host: str, kind: ServerKind | str) -> None:
        """`host` is a server of `kind` (a `ServerKind` or its name): e.g. a local Virtuoso behind a plain URL."""
        self._kinds[host] = kind_named(kind) if isinstance(kind, str) else kind

    def limit_for(self, host: str) -> int:
        """Requests in flight allowed to `host` at once."""
        ceiling = self.kind_for(host).concurrency_ceiling
        if ceiling is not None:  # never more than Wikimedia's 3, whatever --concurrency says
            return min(self._host_limits.get(host, ceiling), ceiling)
        if host in self._host_limits:
            return self._host_limits[host]
        return self._per_host

    def set_limit(self, host: str, limit: int) -> None:
        """Allow `limit` requests in flight to `host` (an LLM server capped by --llm-concurrency); before its first request."""
        self._host_limits[host] = limit
        self._semaphores.pop(host, None)

    def budget_for(self, host: str) -> float | None:
        """Requests per minute allowed to `host` (None: no budget, only the concurrency cap)."""
        if host in self._budget_overrides:
            return self._budget_overrides[host] or None
        if not self.kind_for(host).request_budget:
            return None
        if self.token:
            return AUTHENTICATED_BUDGET
        if host.split(":")[0].lower() == API_PORTAL or not self.has_contact:
            return UNIDENTIFIED_BUDGET
        return ANONYMOUS_BUDGET

    def query_seconds_for(self, host: str) -> float | None:
        """Seconds of query time per minute allowed to `host` (WDQS's published 60; None: no such budget)."""
        return self.kind_for(host).query_seconds_per_minute

    def _time_budget(self, host: str) -> _TimeBudget | None:
        budget = self._time_budgets.get(host)
        if budget is None:
            per_minute = self.query_seconds_for(host)
            if per_minute is None:
                return None
            budget = self._time_budgets[host] = _TimeBudget(per_minute)
        return budget

    def _semaphore(self, host: str) -> asyncio.Semaphore:
        sem = self._semaphores.get(host)
        if sem is None:
            import asyncio

            sem = self._semaphores[host] = asyncio.Semaphore(self.limit_for(host))
        return sem

    async def _spend_budget(self, host: str) -> None:
        per_minute = self.budget_for(host)
        if per_minute is None:
            return
        limiter = self._limiters.get(host)
        if limiter is None:
            from aiolimiter import AsyncLimiter

            limiter = self._limiters[host] = AsyncLimiter(per_minute, 60.0)
        await limiter.acquire()  # type: ignore[attr-defined]

    def pause(self, host: str, seconds: float) -> None:
        """Hold every request to `host` for `seconds` (a 429, a maxlag answer): shared by all users."""
        self._paused_until[host] = max(self._paused_until.get(host, 0.0), time.monotonic() + seconds)

    async def _wait_if_paused(self, host: str) -> None:
        while (delay := self._paused_until.get(host, 0.0) - time.monotonic()) > 0:
            await self._sleep(delay)

    async def _sleep(self, seconds: float) -> None:
        """Every wait of the client (429 pauses, backoffs): `asyncio.sleep`, imported here."""
        import asyncio

        await asyncio.sleep(seconds)

    def _delay(self, attempt: int) -> float:
        return random.uniform(0, min(self.max_backoff, self.backoff * 2**attempt))

    def _headers(self, host: str, headers: Mapping[str, str] | None) -> dict[str, str]:
        global _warned_no_contact
        out = {"User-Agent": self.user_agent}
        kind = self.kind_for(host)
        if kind.wikimedia:
            if not self.has_contact and not _warned_no_contact:
                _warned_no_contact = True
                log.warning("kgfed: warning: no contact in the User-Agent for %s (Wikimedia may refuse the request): %s",
                            host, HOW_TO_SET_CONTACT)
            if self.token and (kind.token == "always" or (kind.token == "on-challenge" and host in self.authorized)):
                out["Authorization"] = f"Bearer {self.token}"
        out.update(headers or {})
        return out

    # -- requests --------------------------------------------------------------------------------
    async def request(
        self,
        method: str,
        url: str,
        *,
        params: dict[str, str] | None = None,
        data: dict[str, str] | bytes | None = None,
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
        passthrough: Collection[int] = (),
        retries: int | None = None,
    ) -> Response:
        """Send one request (with retries); return the final response whatever its status below 500.

        A status in `passthrough` is returned as it came, without a retry or a pause (the LLM
        providers handle 429/503/529 themselves: `toolbox.llm.LLMGate`). `timeout` and `retries` are this
        request's own (None: the client's), so a caller sharing the run's client keeps its needs (an LLM:
        long calls, few retries).

        Raises `EndpointTimeout` at once on a timeout, `QueryTimeout` on QLever's 429 timeout,
        `UserAgentRejected` on a robot-policy answer, `RateLimited` on a 429 that keeps coming back, and
        `EndpointConnectionError`/`HttpStatusError` after the retry budget on dropped connections/5xx.
        """
        host = urlsplit(url).netloc.rpartition("@")[2]  # never the userinfo (secrets.py)
        if self._closed:
            raise ClientClosed(f"{method} {host}: the HTTP client is closed: open the KG/run again (a closed client sends nothing)")
        call = Call(method, url, host, self.kind_for(host), params, data, headers, timeout or self.timeout, passthrough,
                    self.retries if retries is None else retries)
        return await self._send(call)

    async def get_json(self, url: str, *, params: dict[str, str] | None = None, headers: dict[str, str] | None = None) -> Any:
        """GET and decode JSON; a non-2xx status raises HttpStatusError, a malformed body EndpointError."""
        response = await self.request("GET", url, params=params, headers=headers)
        if response.status >= 400:
            raise HttpStatusError(
                f"GET {urlsplit(url).netloc.rpartition('@')[2]} answered HTTP {response.status}: {first_line(response.text())}",
                status=response.status,
            )
        try:
            return json.loads(response.body)
        except ValueError as exc:
            raise EndpointError(f"GET {urlsplit(url).netloc.rpartition('@')[2]} returned malformed JSON ({exc})") from None
