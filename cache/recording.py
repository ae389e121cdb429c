"""Record and replay the HTTP layer with vcrpy, so KBQA runs and CI are reproducible offline.

    with recording("cassettes/run.yaml", mode="once"):      # record live once, replay afterwards
        ...
    with recording("cassettes/run.yaml"):                   # replay only: an unrecorded request fails

Requests match on method, host, path and *the SPARQL query itself* (from the URL or the form body,
whitespace-normalised), plus the body for everything else: vcrpy's default ignores bodies, so two
POSTs replayed out of order would silently swap answers. Secrets never reach a cassette: the
`Authorization`/key/cookie request headers and key/token parameters are dropped, the URL's userinfo
(`http://user:pw@host/…`; `HttpEndpoint` already sends it as a header) is cut, every remembered
secret is masked in the URL and body where it stands as a whole value (`sparql.secrets.redact_credentials`:
a password that also occurs in a query's text stays in the query), and `Set-Cookie` answers are dropped.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import vcr
import yaml

from ..sparql.secrets import redact_credentials, strip_credentials
from .responses import normalise_query

SECRET_HEADERS = ["authorization", "x-api-key", "api-key", "cookie", "set-cookie", "proxy-authorization"]
SECRET_PARAMS = ["key", "api_key", "apikey", "token", "access_token"]
RecordMode = str  # "none" (replay only), "once", "new_episodes", "all"


def _fields(request: Any) -> dict[str, list[str]]:
    """URL query parameters merged with a form-encoded body."""
    out = parse_qs(urlsplit(request.uri).query)
    body = request.body
    if body:
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
        if "=" in text and not text.lstrip().startswith(("{", "[")):
            for key, values in parse_qs(text).items():
                out.setdefault(key, []).extend(values)
    return out


def _sparql_or_body(r1: Any, r2: Any) -> None:
    """Match SPARQL requests by normalised query text; other requests by exact body."""
    q1, q2 = _fields(r1).get("query"), _fields(r2).get("query")
    if q1 or q2:
        if [normalise_query(q) for q in q1 or []] != [normalise_query(q) for q in q2 or []]:
            raise AssertionError("different SPARQL query")
        return
    if (r1.body or b"") != (r2.body or b""):
        raise AssertionError("different body")


def _params_except_query(r1: Any, r2: Any) -> None:
    """Other URL parameters must agree too (format=json is ignored: it only restates Accept; so is `timeout`, the
    time limit kgfed tells the server, which follows --timeout: a cassette recorded at another one still plays)."""
    def rest(r: Any) -> list[tuple[str, list[str]]]:
        return sorted((k, v) for k, v in parse_qs(urlsplit(r.uri).query).items() if k not in {"query", "format", "timeout"})
    if rest(r1) != rest(r2):
        raise AssertionError("different parameters")


def _scrub_request(request: Any) -> Any:
    """What is recorded of a request: no userinfo, no remembered secret as a value in its URL or body."""
    request.uri = redact_credentials(strip_credentials(request.uri))
    body = request.body
    if body:
        text = body.decode("utf-8", "surrogateescape") if isinstance(body, bytes) else str(body)
        clean = redact_credentials(text)
        if clean != text:
            request.body = clean.encode("utf-8", "surrogateescape") if isinstance(body, bytes) else clean
    return request


def _scrub_response(response: dict) -> dict:
    """What is recorded of a response: without the cookies a server set."""
    headers = response.get("headers") or {}
    for name in list(headers):
        if name.lower() in {"set-cookie", "set-cookie2", "authorization", "proxy-authenticate"}:
            del headers[name]
    return response


def make_vcr(mode: RecordMode = "none", *, serializer: str = "yaml") -> vcr.VCR:
    """A VCR configured for kgfed: SPARQL-aware matching, secrets filtered, repeats allowed."""
    recorder = vcr.VCR(
        record_mode=mode,
        serializer=serializer,
        match_on=["method", "host", "path", "params_except_query", "sparql_or_body"],
        filter_headers=SECRET_HEADERS,
        filter_query_parameters=SECRET_PARAMS,
        before_record_request=_scrub_request,
        before_record_response=_scrub_response,
        decode_compressed_response=True,
    )
    recorder.register_matcher("sparql_or_body", _sparql_or_body)
    recorder.register_matcher("params_except_query", _params_except_query)
    return recorder


@contextmanager
def recording(path: str | os.PathLike, mode: RecordMode | None = None) -> Iterator[Any]:
    """Replay (default, or `KGFED_RECORD_MODE`) or record HTTP to the cassette at `path`."""
    mode = mode or os.environ.get("KGFED_RECORD_MODE", "none")
    path = Path(path)
    serializer = "json" if path.suffix == ".json" else "yaml"
    with make_vcr(mode, serializer=serializer).use_cassette(str(path), allow_playback_repeats=True) as cassette:
        yield cassette


def convert_httpx_cassette(src: str | os.PathLike, dst: str | os.PathLike) -> Path:
    """Rewrite a cassette written by vcrpy's httpx stub into vcrpy's common shape (playable by aiohttp).

    The httpx stub stores `status_code`/`content` and the *decoded* body while keeping the
    `content-encoding: gzip` header; the common shape wants `status: {code, message}` and
    `body: {string}`, and the encoding header must go since the body is no longer compressed.
    """
    from http import HTTPStatus

    doc = yaml.safe_load(Path(src).read_text())
    for interaction in doc.get("interactions", []):
        response = interaction["response"]
        if "status_code" in response:
            code = int(response.pop("status_code"))
            response["status"] = {"code": code, "message": HTTPStatus(code).phrase}
        if "content" in response:
            response["body"] = {"string": response.pop("content")}
        response.pop("http_version", None)
        headers = response.get("headers") or {}
        for name in list(headers):
            if name.lower() in {"content-encoding", "transfer-encoding", "content-length"}:
                del headers[name]
    dst = Path(dst)
    dst.write_text(yaml.safe_dump(doc, sort_keys=False))
    return dst
