"""What kgfed knows of each kind of server, in one capability object per kind (as `Dialect` is per dialect).

The HTTP client and the SPARQL endpoint ask a `ServerKind` what to do; they never test a host name or a
server's type themselves. A kind says:

- how polite to be: its published cap on parallel requests (`concurrency`, a `concurrency_ceiling` no
  option may raise), a requests-per-minute budget (`request_budget`: Wikimedia's API tiers) and a
  server-time budget (`query_seconds_per_minute`: WDQS's 60 s of query time a minute);
- which answers are not answers: a refusal of the client (`refusals`: Wikimedia's robot-policy notice), a
  query stopped at the server's time limit (`timeouts`: QLever's 429 "Operation timed out", WDQS's
  Blazegraph `TimeoutException`), and an error that asking again cannot cure (`fixed_errors`: Virtuoso's
  syntax, permission and "transitive start not given" errors, sent as HTTP 500);
- whether it gets the Wikimedia token (`token`: always, after an authentication challenge, never);
- which parameter carries a server-side time limit, in which form, below which ceiling (`timeout_fields`).

A host is mapped to its kind by `kind_of_host` (the public services by name; anything else is `GENERIC`,
which recognises every known server's unmistakable answers, since a local Virtuoso or Oxigraph looks like
any other `127.0.0.1:PORT`). A caller that knows better declares it (`HttpClient.declare_kind`). Adding a
kind is one `ServerKind(...)` below and its name in `KINDS`.
"""
from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from ..sparql.errors import HttpStatusError, QueryTimeout, UserAgentRejected
from .transport import Response

__all__ = ["ServerKind", "KINDS", "WDQS", "QLEVER", "VIRTUOSO", "OXIGRAPH", "WIKIMEDIA_API", "GENERIC", "kind_named",
           "kind_of_host", "is_wikimedia", "is_query_service", "is_wikimedia_api", "first_line", "HOW_TO_SET_CONTACT"]

Recogniser = Callable[[str, str, Response], None]  # (what, host, response): raises when the answer is not one
TokenRule = Literal["never", "always", "on-challenge"]

CONTACT_ENV = "KGFED_CONTACT"
DEFAULT_CONFIG = Path.home() / ".config" / "kgfed" / "config.toml"
HOW_TO_SET_CONTACT = (f"set your contact (an email or a URL) with --contact, ${CONTACT_ENV} or contact = \"...\" "
                      f"in {DEFAULT_CONFIG}")
_WIKIMEDIA_DOMAINS = ("wikidata.org", "wikipedia.org", "wikimedia.org", "mediawiki.org", "wiktionary.org",
                      "wikiquote.org", "wikisource.org", "wikibooks.org", "wikinews.org", "wikiversity.org", "wikivoyage.org")


def first_line(text: str, width: int = 160) -> str:
    """The first non-blank line of a reply body, cut to `width` (for one-line error messages)."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:width]
    return "(empty body)"


@functools.lru_cache(maxsize=256)  # asked three times a request (8 µs of the drop-in's ~0.4 ms CPU a query)
def is_wikimedia(host: str) -> bool:
    """A host run by the Wikimedia Foundation (its User-Agent and robot policies apply)."""
    host = host.split(":")[0].lower()
    return any(host == d or host.endswith("." + d) for d in _WIKIMEDIA_DOMAINS)


def is_query_service(host: str) -> bool:
    """A Wikimedia SPARQL query service (WDQS main/scholarly, the Commons query service): its own limits."""
    first = host.split(":")[0].lower().split(".")[0]
    return is_wikimedia(host) and (first.startswith("query") or first.endswith("-query"))


def is_wikimedia_api(host: str) -> bool:
    """A Wikimedia API host under the global per-minute limits (api.php, REST); not the query services."""
    return is_wikimedia(host) and not is_query_service(host)


# -- answers that are not answers ------------------------------------------------------------------------
def refuse_robot_policy(what: str, host: str, response: Response) -> None:
    """Wikimedia's robot-policy notice (HTTP 200 plain text since 2026, or 403): an error, never an answer."""
    if response.status not in (200, 403) or len(response.body) > 4096 or "json" in response.content_type:
        return
    text = response.text().lower()
    if "robot policy" in text or (response.status == 403 and is_wikimedia(host) and "user-agent" in text):
        raise UserAgentRejected(
            f"{what} refused the request for its User-Agent (HTTP {response.status}: {first_line(response.text(), 90)}): "
            f"{HOW_TO_SET_CONTACT}",
            status=response.status,
        )


def qlever_timeout(what: str, host: str, response: Response) -> None:
    """QLever answers a query past its time limit with HTTP 429 and JSON `exception`: a timeout, not a rate limit."""
    if response.status != 429 or response.headers.get("Retry-After"):
        return
    try:
        doc = json.loads(response.body)
    except ValueError:
        return
    if not isinstance(doc, dict) or not isinstance(doc.get("exception"), str):
        return
    message = doc["exception"].split(" Last operation:")[0].strip()
    if "timed out" in message.lower():
        raise QueryTimeout(f"{what} stopped the query at its time limit (HTTP 429: {message}): ask a narrower query "
                           "(a smaller --batch-size, fewer hops, a LIMIT); this is a timeout, not a rate limit", status=429)
    raise HttpStatusError(f"{what} cancelled the query (HTTP 429: {first_line(message)}): run it again later", status=429)


# What Blazegraph (WDQS) writes when a query runs past its deadline: the query, then the Java exception.
_BLAZEGRAPH_TIMEOUTS = (b"java.util.concurrent.TimeoutException", b"QueryTimeoutException", b"Query deadline is expired")


def blazegraph_timeout(what: str, host: str, response: Response) -> None:
    """WDQS stops a query at its 60 s deadline with HTTP 500 and a plain-text body (`SPARQL-QUERY:
    queryStr=…` then `java.util.concurrent.TimeoutException` and its stack), or, when rows were already
    streaming, with HTTP 200 whose JSON breaks off into the same text. Either is a query timeout: raised
    at once as `QueryTimeout` (asking the same query again times out again), never parsed or cached."""
    body = response.body
    if response.status == 500:
        head = body[:65536]
    elif response.status == 200 and not body.rstrip().endswith((b"}", b"]")) and body.lstrip()[:1] == b"{":
        head = body[-65536:]
    else:
        return
    if not any(marker in head for marker in _BLAZEGRAPH_TIMEOUTS):
        return
    raise QueryTimeout(f"{what} stopped the query at its time limit (HTTP {response.status}: "
                       "java.util.concurrent.TimeoutException): ask a narrower query (a smaller batch_size, fewer hops, "
                       "a LIMIT); kgfed's batched calls split such a query by themselves", status=response.status)


# Virtuoso's error bodies start `Virtuoso SQLSTATE Error CODE: message` (measured on 7.2: `Virtuoso 42000 Error
# SR186:SECURITY: No permission…`, `Virtuoso 37000 Error TR...: transitive start not given`, `Virtuoso 37000 Error
# SP030: SPARQL compiler…`). SQLSTATE classes that the same query always meets again: 37 (syntax and compilation),
# 42 (access rules: permissions, security restrictions), 21/22/23 (data exceptions, bad arguments). Others
# (40001 deadlock, 08 connection, S1T00 timeout, HT/HC the HTTP client) may pass on a second try.
_VIRTUOSO_ERROR = re.compile(rb"\A\s*Virtuoso (\w{5}) Error (\S+?):?\s")
_VIRTUOSO_FIXED_STATES = ("37", "42", "21", "22", "23")


def virtuoso_fixed_error(what: str, host: str, response: Response) -> None:
    """A Virtuoso 5xx whose SQLSTATE says the query itself is at fault: `HttpStatusError` at once, not retried."""
    if response.status < 500:
        return
    found = _VIRTUOSO_ERROR.match(response.body[:512])
    if found is None or not found.group(1).decode().startswith(_VIRTUOSO_FIXED_STATES):
        return
    raise HttpStatusError(f"{what} answered HTTP {response.status}: {first_line(response.text())} (an error of the query "
                          "itself, not retried: asking again fails the same way)", status=response.status)


@dataclass(frozen=True)
class ServerKind:
    """One kind of server: what kgfed knows of it, asked by the client and the endpoint (see the module)."""

    name: str
    about: str
    hosts: tuple[str, ...] = ()  # host names that are this kind (the public services)
    concurrency: int | None = None  # its published cap on parallel requests (None: the client's per-host default)
    concurrency_ceiling: int | None = None  # a cap no option raises (Wikimedia's APIs: 3)
    request_budget: bool = False  # requests a minute are budgeted (Wikimedia's API tiers; `HttpClient.budget_for`)
    query_seconds_per_minute: float | None = None  # server time a client may use a minute (WDQS: 60)
    wikimedia: bool = False  # Wikimedia's User-Agent policy applies (the contact warning)
    token: TokenRule = "never"  # when the Wikimedia token goes to it
    timeout_parameter: str | None = None  # the request parameter of a server-side time limit
    timeout_format: str = "{ms}"  # its value from the limit in milliseconds (Virtuoso: "5000"; QLever: "5000ms")
    timeout_below: float | None = None  # seconds: sent only below this (QLever refuses more than its own without a token)
    refusals: tuple[Recogniser, ...] = ()  # answers refusing the client (checked on every answer)
    timeouts: tuple[Recogniser, ...] = ()  # answers that are the server's own timeout (raise QueryTimeout)
    fixed_errors: tuple[Recogniser, ...] = ()  # 5xx answers that asking again cannot cure (not retried)

    def refuse(self, what: str, host: str, response: Response) -> None:
        """Raise when the answer refuses the client (a robot-policy notice)."""
        for recognise in self.refusals:
            recognise(what, host, response)

    def raise_timeout(self, what: str, host: str, response: Response) -> None:
        """Raise `QueryTimeout` when the answer is the server stopping the query at its time limit."""
        for recognise in self.timeouts:
            recognise(what, host, response)

    def raise_fixed_error(self, what: str, host: str, response: Response) -> None:
        """Raise a non-retryable `HttpStatusError` when a 5xx is an error of the query itself."""
        for recognise in self.fixed_errors:
            recognise(what, host, response)

    def timeout_fields(self, milliseconds: int | None) -> dict[str, str]:
        """The request parameters asking the server to stop the query after `milliseconds` (empty: it takes none,
        or the limit is not below what it allows)."""
        if not milliseconds or self.timeout_parameter is None:
            return {}
        if self.timeout_below is not None and milliseconds >= self.timeout_below * 1000:
            return {}
        return {self.timeout_parameter: self.timeout_format.format(ms=milliseconds)}


WDQS = ServerKind(
    "wdqs", "Wikidata Query Service (Blazegraph): 60 s a query, 60 s of query time a minute, 5 parallel",
    hosts=("query.wikidata.org", "query-main.wikidata.org", "query-scholarly.wikidata.org"), concurrency=5,
    query_seconds_per_minute=60.0, wikimedia=True, token="on-challenge",
    refusals=(refuse_robot_policy,), timeouts=(blazegraph_timeout,))
QLEVER = ServerKind(
    "qlever", "QLever: a server time limit answered as HTTP 429 'Operation timed out'; 4 parallel",
    hosts=("qlever.cs.uni-freiburg.de", "qlever.dev"), concurrency=4, timeouts=(qlever_timeout,),
    # `timeout` is a ParseableDuration (an integer and a unit); one above the server's own (qlever-control's
    # default: 30 s) is refused (HTTP 403) without an access token, so only a lower one is sent
    timeout_parameter="timeout", timeout_format="{ms}ms", timeout_below=30.0)
WIKIMEDIA_API = ServerKind(
    "wikimedia-api", "a Wikimedia API host (api.php, REST): at most 3 parallel, per-minute budgets",
    hosts=("www.wikidata.org", "en.wikipedia.org"), concurrency=3, concurrency_ceiling=3,  # "3 or fewer" (APIs/Rate limits)
    request_budget=True,
    wikimedia=True, token="always", refusals=(refuse_robot_policy,))
VIRTUOSO = ServerKind(
    "virtuoso", "OpenLink Virtuoso: the anytime `timeout` parameter (ms); syntax and permission errors as HTTP 500",
    timeout_parameter="timeout", fixed_errors=(virtuoso_fixed_error,))
OXIGRAPH = ServerKind("oxigraph", "Oxigraph's server: a standard SPARQL 1.1 endpoint, no server-side time limit")
GENERIC = ServerKind(
    "generic", "an endpoint of unknown software: every known server's unmistakable answers are recognised",
    timeout_parameter="timeout", refusals=(refuse_robot_policy,),
    timeouts=(qlever_timeout, blazegraph_timeout), fixed_errors=(virtuoso_fixed_error,))

KINDS: dict[str, ServerKind] = {kind.name: kind for kind in (WDQS, QLEVER, VIRTUOSO, OXIGRAPH, WIKIMEDIA_API, GENERIC)}
# Hosts with published rules and their caps (the client's `POLITE_HOSTS`): everything else gets the per-host default.
POLITE_HOSTS = MappingProxyType({host: kind.concurrency for kind in KINDS.values() for host in kind.hosts
                                 if kind.concurrency is not None})


def kind_named(name: str) -> ServerKind:
    """The kind called `name` (`wdqs`, `qlever`, `virtuoso`, `oxigraph`, `wikimedia-api`, `generic`)."""
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown server kind {name!r}: use one of {', '.join(KINDS)}") from None


def kind_of_host(host: str) -> ServerKind:
    """The kind a host (`name[:port]`) is known to be: the public services by name, else `GENERIC`."""
    return KINDS[_kind_name(host)]


@functools.lru_cache(maxsize=256)  # asked a few times a request
def _kind_name(host: str) -> str:
    if host.split(":")[0].lower() in QLEVER.hosts:
        return "qlever"
    if is_query_service(host):
        return "wdqs"
    if is_wikimedia(host):
        return "wikimedia-api"
    return "generic"
