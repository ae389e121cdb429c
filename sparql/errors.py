"""The one exception family kgfed raises. Each message is one line naming the problem and the fix."""
from __future__ import annotations


class KgfedError(Exception):
    """Base class: everything kgfed raises on bad input or a failing source."""


class InvalidIdentifier(KgfedError, ValueError):
    """An entity/relation id or IRI that is not valid for the dialect (never reaches a query)."""


class UnknownEndpoint(KgfedError, ValueError):
    """An endpoint spec that names no profile, file or URL."""


class EndpointError(KgfedError):
    """The endpoint failed: HTTP error, timeout, malformed or truncated response."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False):
        super().__init__(message)
        self.status = status
        self.retryable = retryable


class RateLimited(EndpointError):
    """HTTP 429 that outlasted the retry budget; `retry_after` is the server's wait in seconds."""

    def __init__(self, message: str, *, retry_after: float | None = None):
        super().__init__(message, status=429, retryable=True)
        self.retry_after = retry_after


class PartialResult(EndpointError):
    """The server said the answer is incomplete (Virtuoso anytime timeout, row cap)."""


class OfflineMiss(KgfedError):
    """--offline was set and the answer is not in the cache (nor in a recording)."""


class DatasetError(KgfedError, ValueError):
    """A question file in an unknown shape or with missing fields."""


class LLMError(KgfedError):
    """An LLM provider failed, or a replay has no recorded reply for a prompt."""


class UnexpectedAnswer(EndpointError):
    """A well-formed answer of the wrong shape: other variables, or ASK for SELECT (never cached; retried)."""

    def __init__(self, message: str):
        super().__init__(message, retryable=True)


class InvalidQuery(KgfedError, ValueError):
    """A query or query argument kgfed refuses before sending it (not text, a lone surrogate, CONSTRUCT…)."""


class Unsupported(KgfedError):
    """A KG asked for something its dialect cannot answer (sitelinks or qualifiers of Freebase, …): the
    message names the KG, the capability and the fix (use a KG of a dialect that has it)."""


class Closed(KgfedError):
    """A KG or response cache used after `aclose()`/`close()`: open a new one."""


# -- HTTP failures by kind (raised by `kgfed.endpoints.client`; all are EndpointErrors) -------------
class EndpointTimeout(EndpointError):
    """No answer within the client's time limit (nothing was received)."""


class QueryTimeout(EndpointTimeout):
    """The server stopped the query at its own time limit (e.g. QLever's HTTP 429 "Operation timed out")."""


class EndpointConnectionError(EndpointError):
    """The connection failed or dropped (DNS, refused, reset, truncated body)."""


class HttpStatusError(EndpointError):
    """The server answered with an HTTP error status (`status` holds it)."""


class NotAnAnswer(EndpointError):
    """A 2xx whose body is not the document asked for (an HTML page, a plain-text notice); never cached."""


class UserAgentRejected(NotAnAnswer):
    """Wikimedia refused the request for its User-Agent (robot-policy text with HTTP 200, or HTTP 403)."""


class ClientClosed(Closed, EndpointError):
    """A request on an HttpClient that was already closed."""
