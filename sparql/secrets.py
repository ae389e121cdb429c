"""Secrets never shown: credentials in URLs and API tokens, redacted before any text leaves kgfed.

An endpoint URL may carry a password (``http://user:pw@host/sparql``) and an error message may quote
a header or an API key. Everything kgfed shows or stores (messages, MCP resources and tool errors,
logs, cassettes, cache keys and entries) passes through :func:`redact` first; cache keys and endpoint
names use :func:`strip_credentials`, so the same endpoint with another password shares its cache and
the password is written nowhere.

Besides the patterns below (URL userinfo, the services' token shapes, `key=value` and `Bearer`
forms), :func:`redact` masks every secret kgfed has met: a password taken from an endpoint URL
(:func:`remember`, called where credentials are split off) and the value of every environment variable
named like a secret (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `KGFED_WIKIMEDIA_TOKEN`, `*_PASSWORD`, ...),
so a message that quotes one bare, outside any recognisable form, is still masked.
:class:`RedactingFilter` applies the same to log records (the class is made on first use, so importing
this module does not import `logging`: the SPARQLWrapper drop-in's import must stay as cheap as the
genuine library's).

String functions (no I/O; the environment is read, never written), so every layer can use them.
"""

from __future__ import annotations

import base64
import functools
import os
import re
import threading
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

MASK = "***"

# The patterns are compiled on first use (`_patterns`): 1.2 ms of every import, which the SPARQLWrapper
# drop-in's users pay at each start, for patterns only an error message or a log record needs.
# scheme://userinfo@ : the userinfo is everything up to the last '@' before the host part
_USERINFO = r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.\-]*://)(?P<userinfo>[^\s/?#@]*@)"
# tokens as the services issue them, and key=value / header forms that carry one
_TOKENS = (
    r"\bsk-ant-[A-Za-z0-9_\-]{8,}",                  # Anthropic
    r"\bsk-(?:proj-)?[A-Za-z0-9_\-]{16,}",           # OpenAI-style
    r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{8,}",
    r"(?i)\b((?:x-)?api[-_]?key|access[-_]?token|auth[-_]?token|token|password|passwd|pwd|secret)"
    r"(\s*[=:]\s*|\"\s*:\s*\")([^\s&\"',;]+)",
)


# environment variables whose values are secrets wherever they appear
_SECRET_ENV = r"(?i)((^|_)key|token|secret|passw(or)?d|credentials?)$"


@functools.cache
def _patterns() -> tuple[re.Pattern[str], tuple[re.Pattern[str], ...], re.Pattern[str]]:
    """The userinfo, token and secret-variable patterns above, compiled."""
    return re.compile(_USERINFO), tuple(re.compile(token) for token in _TOKENS), re.compile(_SECRET_ENV)


_MIN_SECRET = 4  # shorter "secrets" would mask ordinary words
_MIN_ENV_SECRET = 8  # an environment switch such as FOO_TOKEN=true is not a secret
_known: set[str] = set()
_known_lock = threading.Lock()


def remember(*secrets: str | None) -> None:
    """Mask these values (and their percent-encoded forms) in everything :func:`redact` sees from now on."""
    with _known_lock:
        for secret in secrets:
            if secret and len(secret) >= _MIN_SECRET:
                _known.update({secret, quote(secret, safe=""), quote(secret, safe="!$&'()*+,;=")})


def known_secrets() -> list[str]:
    """The remembered secrets and the secret-named environment variables' values, longest first."""
    secret_env = _patterns()[2]
    found = {v for k, v in os.environ.items() if len(v) >= _MIN_ENV_SECRET and secret_env.search(k)}
    with _known_lock:
        found |= _known
    return sorted(found, key=len, reverse=True)


def _mask_token(match: re.Match[str]) -> str:
    groups = match.groups()
    if len(groups) == 3:                       # key = value: keep the key, mask the value
        return f"{groups[0]}{groups[1]}{MASK}"
    if len(groups) == 1:                       # Bearer/Basic <token>
        return f"{groups[0]} {MASK}"
    return MASK


def _mask_shapes(text: str) -> str:
    """`text` with URL userinfo and API-token shapes masked (what `redact` and `redact_credentials` both do first)."""
    userinfo, tokens, _ = _patterns()
    out = userinfo.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    for pattern in tokens:
        out = pattern.sub(_mask_token, out)
    return out


def redact(text: str, *secrets: str | None) -> str:
    """`text` with URL credentials, API tokens and each of `secrets` (e.g. a configured key) masked."""
    if not text:
        return text
    out = _mask_shapes(text)
    for secret in (*(s for s in secrets if s), *known_secrets()):
        if len(secret) >= _MIN_SECRET:
            out = out.replace(secret, MASK)
    return out


def redact_credentials(text: str) -> str:
    """`text` (a request's URL or body, as a cassette records it) with URL credentials and API tokens masked, and
    each remembered secret only where it stands as a whole value: a URL or form parameter's (`=SECRET` up to `&`
    or the end), a URL path segment (`/SECRET/`) or a quoted JSON string's (`"SECRET"`). A password that also occurs in the data (`people`, in a
    query naming `people.person.gender`) is left in the data, where it is no credential."""
    if not text:
        return text
    out = _mask_shapes(text)
    for secret in known_secrets():
        if len(secret) >= _MIN_SECRET and secret in out:
            escaped = re.escape(secret)
            out = re.sub(rf"(?<==){escaped}(?=&|$)|(?<=/){escaped}(?=[/?#]|$)|(?<=\"){escaped}(?=\")", MASK, out)
    return out


def _filter(self: Any, record: Any) -> bool:
    """Pass `record` through :func:`redact` (its message, and an error quoted in its traceback)."""
    message = record.getMessage()
    clean = redact(message)
    if clean != message:
        record.msg, record.args = clean, None
    if record.exc_info and record.exc_info[1] is not None:  # the traceback's last line quotes the error
        text = str(record.exc_info[1])
        if redact(text) != text:
            record.exc_info, record.exc_text = None, None
            record.msg = f"{record.msg} ({redact(text)})"
    return True


def _redacting_filter() -> type:
    import logging

    class RedactingFilter(logging.Filter):
        """A logging filter (put it on a handler) that passes every record through :func:`redact`."""

        filter = _filter

    RedactingFilter.__module__, RedactingFilter.__qualname__ = __name__, "RedactingFilter"
    return RedactingFilter


def __getattr__(name: str) -> Any:
    """`RedactingFilter`: a `logging.Filter` subclass, made once on first use (PEP 562)."""
    if name != "RedactingFilter":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _known_lock:
        made = globals().get("RedactingFilter")
        if made is None:
            made = globals()["RedactingFilter"] = _redacting_filter()
    return made


def strip_credentials(url: str) -> str:
    """`url` without its userinfo (``http://user:pw@host:8890/sparql`` → ``http://host:8890/sparql``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    if not parts.scheme or "@" not in parts.netloc:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def credentials(url: str) -> tuple[str, str] | None:
    """The (user, password) in `url`, unquoted, or None: for the transport's Authorization header only."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.username is None:
        return None
    return unquote(parts.username), unquote(parts.password or "")


def split_credentials(url: str) -> tuple[str, str | None]:
    """`url` without userinfo, and the `Authorization: Basic …` value its userinfo stands for (or None).

    The password is remembered (:func:`remember`), so it is masked wherever it is quoted later.
    """
    found = credentials(url)
    if found is None:
        return url, None
    user, password = found
    remember(password)
    if len(user) >= 8:  # a user name long enough to be a token (e.g. https://TOKEN@host/)
        remember(user)
    token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    remember(token)
    return strip_credentials(url), f"Basic {token}"
