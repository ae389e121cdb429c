"""Endpoint specs by name (the public graphs as served in 2026), `file:PATH[,PATH]`, or a URL.

The Wikidata Query Service is split in two graphs (final since January 2026): `query.wikidata.org`
(= `query-main.wikidata.org`) serves the main graph only, and scholarly articles (P31 Q13442814 and
its listed subclasses, or P13046) live only at `query-scholarly.wikidata.org`. The `wikidata-full`
profile asks both and merges (`SplitGraphEndpoint`); `qlever-wikidata` serves the whole graph in one.
`kgfed endpoints` prints this table; adding a profile is one `Profile(...)` line below.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..sparql.dialects import FREEBASE, WIKIDATA, Dialect, SearchMode, get_dialect
from ..sparql.errors import UnknownEndpoint
from ..sparql.secrets import redact, strip_credentials
from .base import Endpoint
from .client import HttpClient
from .embedded import EmbeddedEndpoint
from .http import HttpEndpoint, ServerKind


@dataclass(frozen=True)
class Profile:
    """A public endpoint kgfed knows: where it is, what it serves, which dialect, how to search it."""

    name: str
    url: str
    dialect: str
    search_mode: SearchMode = "exact"
    graph: str = ""
    server: ServerKind = "generic"
    limits: str = ""
    about: str = ""
    parts: tuple[str, ...] = ()  # a composite: the profiles asked together (answers merged)
    aliases: tuple[str, ...] = ()  # other URLs of the same service (old hosts still cited)

    def to_json(self) -> dict:
        return {"name": self.name, "url": self.url, "dialect": self.dialect, "graph": self.graph,
                "server": self.server, "search": self.search_mode, "limits": self.limits, "about": self.about,
                "parts": list(self.parts), "aliases": list(self.aliases)}


WDQS_LIMITS = "60 s per query, 60 s query time per minute, 5 parallel; 429 + Retry-After; User-Agent with contact required"
QLEVER_LIMITS = "server time limit (429 'Operation timed out'; no longer timeout without an access token), 4 parallel"
PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile("wikidata", "https://query.wikidata.org/sparql", "wikidata", "mwapi", "main (no scholarly articles)",
                "wdqs", WDQS_LIMITS, "Wikidata Query Service, main graph (Blazegraph)",
                aliases=("https://query-main.wikidata.org/sparql",)),
        Profile("wikidata-scholarly", "https://query-scholarly.wikidata.org/sparql", "wikidata", "mwapi",
                "scholarly articles (P31 Q13442814 and subclasses, P13046)", "wdqs", WDQS_LIMITS,
                "Wikidata Query Service, scholarly graph"),
        Profile("wikidata-full", "https://query.wikidata.org/sparql + https://query-scholarly.wikidata.org/sparql",
                "wikidata", "mwapi", "main + scholarly (each query asked of both, rows merged)", "wdqs",
                "both WDQS graphs' limits (each query costs two requests)",
                "the whole Wikidata graph over WDQS", parts=("wikidata", "wikidata-scholarly")),
        Profile("qlever-wikidata", "https://qlever.dev/api/wikidata", "wikidata", "exact", "full (main + scholarly)",
                "qlever", QLEVER_LIMITS, "QLever's public Wikidata: no wikibase:label, no mwapi",
                aliases=("https://qlever.cs.uni-freiburg.de/api/wikidata",)),
        Profile("qlever-freebase", "https://qlever.dev/api/freebase", "freebase", "exact", "Freebase (final dump)",
                "qlever", QLEVER_LIMITS, "QLever's public Freebase: fb: = http://rdf.freebase.com/ns/, same MIDs",
                aliases=("https://qlever.cs.uni-freiburg.de/api/freebase",)),
    )
}


def profile_for_url(url: str) -> Profile | None:
    """The profile whose URL (or an alias, e.g. the old qlever.cs.uni-freiburg.de host) is `url`."""
    wanted = url.rstrip("/")
    for profile in PROFILES.values():
        if not profile.parts and wanted in (profile.url, *profile.aliases):
            return profile
    return None


def with_default_graph(spec: str, graph: str | None) -> str:
    """A URL spec with `default-graph-uri=GRAPH` added (Virtuoso's named graphs); other specs unchanged."""
    if not graph or not spec.startswith(("http://", "https://")):
        return spec
    from urllib.parse import urlencode

    return spec + ("&" if "?" in spec else "?") + urlencode({"default-graph-uri": graph})


def sniff_dialect(path: str | Path) -> Dialect | None:
    """Guess a file's dialect from the IRIs in its first 200 lines."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        head = "".join(line for _, line in zip(range(200), fh))
    if "http://rdf.freebase.com/ns/" in head:
        return FREEBASE
    if "http://www.wikidata.org/" in head:
        return WIKIDATA
    return None


def _profile_dialect(profile: Profile, dialect: str | Dialect | None) -> Dialect:
    chosen = get_dialect(dialect or profile.dialect)
    if dialect is None and chosen.search_mode != profile.search_mode:
        chosen = replace(chosen, search_mode=profile.search_mode)
    return chosen


def _open_profile(profile: Profile, client: HttpClient, url: str | None = None, **http_options: Any) -> Endpoint:
    if profile.parts:
        from .wikidata_full import SplitGraphEndpoint

        parts = [_open_profile(PROFILES[name], client, **http_options) for name in profile.parts]
        return SplitGraphEndpoint(parts, name=profile.name)
    if profile.server != "virtuoso":
        http_options.pop("timeout_ms", None)  # Virtuoso's parameter: QLever would reject it, WDQS ignores it
    return HttpEndpoint(url or profile.url, client, server=profile.server, **http_options)


def _need(client: HttpClient | None, spec: str) -> HttpClient:
    """The caller's client for a remote spec (lower layers never build one of their own)."""
    if client is None:
        raise TypeError(f"endpoint {strip_credentials(spec)} is remote: pass client=, the run's HttpClient "
                        "(a Session's client, or HttpOptions(...).client())")
    return client


def resolve_endpoint(
    spec: str,
    *,
    dialect: str | Dialect | None = None,
    client: HttpClient | None = None,
    **http_options: Any,
) -> tuple[Endpoint, Dialect]:
    """Turn an endpoint spec into an endpoint and its dialect (explicit `dialect` wins over the profile's).

    A remote spec (a profile, a URL) needs `client`, the run's shared `HttpClient` (the caller owns and
    closes it; a `Session`'s, or `HttpOptions(...).client()`); `file:` specs need none.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise UnknownEndpoint(f"empty endpoint: use {', '.join(PROFILES)}, file:PATH or an http(s) URL")
    spec = spec.strip()
    if spec in PROFILES:
        profile = PROFILES[spec]
        return _open_profile(profile, _need(client, spec), **http_options), _profile_dialect(profile, dialect)
    if spec.startswith("file:"):
        paths = [p for p in spec[5:].split(",") if p]
        endpoint = EmbeddedEndpoint(paths)
        chosen = get_dialect(dialect) if dialect else sniff_dialect(endpoint.paths[0])
        if chosen is None:
            raise UnknownEndpoint(f"cannot tell the dialect of {paths[0]}: add --dialect wikidata or --dialect freebase")
        return endpoint, chosen
    if spec.startswith(("http://", "https://")):
        known = profile_for_url(strip_credentials(spec))
        if known is not None:  # a profile's URL or an old alias: its server kind and dialect are known
            return _open_profile(known, _need(client, spec), url=spec, **http_options), _profile_dialect(known, dialect)
        if dialect is None:
            raise UnknownEndpoint(f"endpoint {strip_credentials(spec)} needs a dialect: add --dialect wikidata or --dialect freebase")
        return HttpEndpoint(spec, _need(client, spec), **http_options), get_dialect(dialect)
    names = ", ".join(PROFILES)
    raise UnknownEndpoint(f"unknown endpoint {redact(spec)!r}: use one of {names}, file:PATH or an http(s) URL")
