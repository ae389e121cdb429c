"""Secrets never shown: credentials in URLs and API tokens, redacted before any text leaves kgfed.

An endpoint URL may carry a password (``http://user:pw@host/sparql``) and an error message may quote
a header or an API key. Everything kgfed shows or stores (messages, MCP resources and tool errors,
logs, cassettes, cache keys and entries) passes through :func:`redact` first; cache keys and endpoint
names use :func:`strip_credentials`, so the same endpoint with another password shares its cache and
the password is written nowhere.

Pure string functions (no I/O), so every layer can use them.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

MASK = "***"

# scheme://userinfo@ : the userinfo is everything up to the last '@' before the host part
_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.\-]*://)(?P<userinfo>[^\s/?#@]*@)")
# tokens as the services issue them, and key=value / header forms that carry one
_TOKENS = [
    re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{8,}"),                  # Anthropic
    re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_\-]{16,}"),           # OpenAI-style
    re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{8,}"),
    re.compile(r"(?i)\b((?:x-)?api[-_]?key|access[-_]?token|auth[-_]?token|token|password|passwd|pwd|secret)"
               r"(\s*[=:]\s*|\"\s*:\s*\")([^\s&\"',;]+)"),
]


def _mask_token(match: re.Match[str]) -> str:
    groups = match.groups()
    if len(groups) == 3:                       # key = value: keep the key, mask the value
        return f"{groups[0]}{groups[1]}{MASK}"
    if len(groups) == 1:                       # Bearer/Basic <token>
        return f"{groups[0]} {MASK}"
    return MASK


def redact(text: str, *secrets: str | None) -> str:
    """`text` with URL credentials, API tokens and each of `secrets` (e.g. a configured key) masked."""
    if not text:
        return text
    out = _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    for pattern in _TOKENS:
        out = pattern.sub(_mask_token, out)
    for secret in secrets:
        if secret and len(secret) >= 4:
            out = out.replace(secret, MASK)
    return out


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
    from urllib.parse import unquote

    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.username is None:
        return None
    return unquote(parts.username), unquote(parts.password or "")
