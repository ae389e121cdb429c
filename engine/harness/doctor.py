"""`kgfed doctor SPEC`: is this endpoint fit for kgfed's templates, before a long run finds out?

Each check is one line: `ok`, `warn` (works, but know this) or `fail` (the templates will not work);
the endpoint is fit when nothing failed. In order:

1. reachable: an `ASK {}` answers HTTP 2xx with SPARQL results (an error status, an HTML or
   text/plain page such as Wikimedia's robot-policy notice, or a dropped connection fail here);
2. server: the software from the `Server` header (Virtuoso, Oxigraph, QLever …), or the embedded store;
3. dialect: which name predicate the data has (`ns:type.object.name` = Freebase, `rdfs:label` on
   `wd:` entities = Wikidata), against the dialect asked for;
4. probes: well-known entities (Freebase `m.09c7w0` United States, `m.0345_` Guatemala; Wikidata
   `Q42`, `Q30`; all in the shared fixtures too) have a name and relations, through the dialect's own
   templates; `--probe ID` replaces them;
5. cvt (Freebase): a compound `r1|r2` relation through a nameless node is listed and followed;
6. size: the number of triples (a count that takes longer than 20 s is reported as big, not failed);
7. row cap: whether 10,001 rows come back whole (Virtuoso's `ResultSetMaxRows` shows as
   `X-SPARQL-MaxRows`);
8. partial answers: Virtuoso's anytime timeout, probed with a query the server must cut after 1 s
   (`X-SQL-State: S1TAT`); other servers do not signal partial answers (kgfed's `--timeout` bounds them).

Nothing is cached: a doctor that read yesterday's answers would be no doctor.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from ...endpoints.options import HttpOptions
from ...sparql.dialects import DIALECTS, get_dialect
from ...sparql.errors import KgfedError

ROW_PROBE = 10_001
SIZE_SECONDS = 20.0
ANYTIME_MS = 1000
ANYTIME_SECONDS = 15.0
# A three-way cross product: no server finishes it; Virtuoso must cut it at the `timeout` given.
HEAVY = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?p ?b . ?c ?q ?d . ?e ?r ?f }"
# SELECT … LIMIT 1 rather than ASK: every engine (and the embedded store's select) answers it alike.
ANY_TRIPLE = "SELECT ?s WHERE { ?s ?p ?o } LIMIT 1"


class Report:
    """The checks done so far, in order."""

    def __init__(self, spec: str):
        from ...sparql.secrets import strip_credentials

        self.data: dict[str, Any] = {"endpoint": strip_credentials(spec), "checks": []}  # never a URL's password

    def add(self, check: str, status: str, detail: str, **extra: Any) -> None:
        self.data["checks"].append({"check": check, "status": status, "detail": detail, **extra})

    @property
    def failed(self) -> bool:
        return any(c["status"] == "fail" for c in self.data["checks"])


async def diagnose(args: argparse.Namespace, http: HttpOptions | None = None) -> dict[str, Any]:
    """Run the checks on `args.spec` (with --dialect, --graph, --probe, --no-size) over `http` (default `HttpOptions()`)."""
    from ...endpoints.http import HttpEndpoint
    from ...endpoints.profiles import PROFILES
    from ...endpoints.profiles import with_default_graph
    from ..config import CacheOptions, KGSpec, SessionSpec
    from ..kg.facade import KG
    from ..session import Session

    spec = with_default_graph(args.spec, getattr(args, "graph", None))
    report = Report(spec)
    options = http if http is not None else HttpOptions()
    wanted = args.dialect or (PROFILES[spec].dialect if spec in PROFILES else None)
    try:  # a session of the one KG, uncached; a URL needs some dialect to open: the data decides below
        kg_spec = KGSpec("doctor", spec, wanted or (None if spec.startswith("file:") else "freebase"),
                         partial=getattr(args, "partial", None))
        session = Session(SessionSpec(kgs=(kg_spec,), http=options, cache=CacheOptions(enabled=False))).open()
    except KgfedError as exc:
        report.add("reachable", "fail", str(exc))
        return _finish(report, None)
    async with session:
        base = session.kgs["doctor"]
        endpoint = base.endpoint.inner
        served = endpoint if isinstance(endpoint, HttpEndpoint) else None  # None: an embedded store
        if served is None and not args.dialect:  # a file's dialect as kgfed guessed it
            wanted = base.dialect.name
        if not await _reachable(report, endpoint, served):
            return _finish(report, None)
        dialect = await _dialect(report, endpoint, wanted)
        if dialect is None:
            return _finish(report, None)
        kg = KG(endpoint, get_dialect(dialect), cache=None)
        await _probes(report, kg, args.probe or kg.dialect.probe_ids)
        if not getattr(args, "no_size", False):
            await _size(report, endpoint)
        if served is not None:
            await _row_cap(report, served)
            await _partial(report, served)
        else:
            report.add("row cap", "ok", "none (embedded store)")
            report.add("partial answers", "ok", "never partial (embedded store, answered in full)")
        return _finish(report, dialect)


def _finish(report: Report, dialect: str | None) -> dict[str, Any]:
    report.data["dialect"] = dialect
    report.data["fit"] = not report.failed and dialect is not None
    return report.data


async def _timed(make: Callable[[], Awaitable[Any]]) -> tuple[Any, float]:
    started = time.perf_counter()
    value = await make()
    return value, round(time.perf_counter() - started, 3)


async def _reachable(report: Report, endpoint, http) -> bool:
    """`ASK {}`: HTTP status, content type, SPARQL-JSON body; the server software from its headers."""
    from ...sparql.results import parse_sparql_json

    if http is None:
        try:
            _, seconds = await _timed(lambda: endpoint.select(ANY_TRIPLE))
        except KgfedError as exc:
            report.add("reachable", "fail", str(exc))
            return False
        import pyoxigraph

        report.add("reachable", "ok", f"embedded store over {', '.join(endpoint.paths)} ({seconds:.2f} s to load and answer)")
        report.add("server", "ok", f"embedded pyoxigraph {pyoxigraph.__version__}", software="pyoxigraph")
        return True
    host = urlsplit(http.url).netloc
    try:
        response, seconds = await _timed(lambda: http.client.request(
            "GET", http.url, params={"query": "ASK {}", **({"default-graph-uri": http.default_graph} if http.default_graph else {})},
            headers=http.request_headers()))
    except KgfedError as exc:
        report.add("reachable", "fail", str(exc))
        return False
    server = response.headers.get("Server", "")
    content_type = response.headers.get("Content-Type", "").split(";")[0].strip()
    first = next((line.strip() for line in response.text().splitlines() if line.strip()), "")[:160]
    if response.status >= 400:
        report.add("reachable", "fail", f"{host} answered HTTP {response.status} ({content_type or 'no content type'}): {first}",
                   status_code=response.status)
        return False
    try:
        parse_sparql_json(response.body, source=host)
    except KgfedError:
        hint = (" (the server wants a descriptive User-Agent: pass --contact you@example.org or --user-agent)"
                if "user-agent" in first.lower() or "robot" in first.lower() else "")
        report.add("reachable", "fail", f"{host} answered HTTP {response.status} {content_type or 'without a content type'}, "
                   f"not SPARQL results: {first!r}{hint}", status_code=response.status)
        return False
    report.add("reachable", "ok", f"{host} answered ASK {{}} in {seconds:.2f} s ({content_type})", status_code=response.status)
    software = server.split("/")[0].strip() or "unknown"
    detail = server.strip() or "no Server header"
    if software.lower() == "unknown" and "qlever" in http.url.lower():
        software, detail = "QLever", "QLever (by its URL; no Server header)"
    report.add("server", "ok", detail, software=software)
    if software.lower() == "virtuoso" and not http.default_graph and "default-graph-uri" not in http.url:
        report.add("graph", "warn", "no default graph: queries see every graph, Virtuoso's own system triples included "
                   "(ToG's setup loads Freebase into http://freebase.com: add --graph http://freebase.com)")
    return True


async def _dialect(report: Report, endpoint, wanted: str | None) -> str | None:
    """Which name predicate the data has, against the dialect asked for (guessed when none was)."""
    has = {}
    for candidate in DIALECTS:
        try:
            has[candidate.name] = bool((await endpoint.select(candidate.name_probe())).rows)
        except KgfedError as exc:
            report.add("dialect", "fail", f"the name-predicate query failed: {exc}")
            return None
    predicate = {d.name: d.name_evidence for d in DIALECTS}
    if wanted is None:
        wanted = next((name for name, found in has.items() if found), None)
        if wanted is None:
            report.add("dialect", "fail", "neither ns:type.object.name (Freebase) nor rdfs:label on wd: entities (Wikidata) "
                       "is in the data: wrong endpoint, or an empty/other graph (try --graph)")
            return None
        report.add("dialect", "ok", f"{wanted} (guessed: {predicate[wanted]} present; give --dialect to be explicit)")
        return wanted
    if has[wanted]:
        report.add("dialect", "ok", f"{wanted}: name predicate {predicate[wanted]} present")
        return wanted
    other = next((name for name, found in has.items() if found and name != wanted), None)
    hint = f": the data looks like {other}, use --dialect {other}" if other else \
        ": wrong endpoint, or the data is in a named graph (try --graph http://freebase.com)"
    report.add("dialect", "fail", f"{wanted}: name predicate {predicate[wanted]} absent{hint}")
    return wanted


async def _probes(report: Report, kg, probes) -> None:
    """Each probe has a name and relations (the dialect's templates); Freebase: one CVT path is followed."""
    compound = None
    for probe in probes:
        try:
            kg.check(probe)
            labels = await kg.labels([probe])
            relations = await kg.relations(probe)
        except KgfedError as exc:
            report.add(f"probe {probe}", "fail", str(exc))
            continue
        name = labels[probe].label
        if not relations and not name:
            report.add(f"probe {probe}", "fail", f"{probe} is absent (no name, no relations): wrong KG or graph, or pass "
                       "--probe ID with an entity it holds")
            continue
        status = "ok" if relations and name else "warn"
        report.add(f"probe {probe}", status, f"{name or '(no name)'}: {len(relations)} relations", relations=len(relations))
        compound = compound or next(((probe, r) for r in relations if "|" in r.relation), None)
    if not kg.dialect.compound_relations:  # no CVTs to check
        return
    if compound is None:
        report.add("cvt", "fail", "no compound relation (r1|r2 through a nameless CVT node) from the probes: "
                   "the data has no CVTs or lost their names' absence (is type.object.name on every node?)")
        return
    probe, relation = compound
    edges = await kg.neighbors(probe, relation.relation, relation.direction)
    if edges:
        report.add("cvt", "ok", f"{probe} {relation.relation} ({relation.direction}) → {len(edges)} far ends via "
                   f"{edges[0].via[0] if edges[0].via else 'a CVT'}")
    else:
        report.add("cvt", "fail", f"{probe} lists {relation.relation} but following it returns nothing")


async def _size(report: Report, endpoint) -> None:
    try:
        result = await asyncio.wait_for(endpoint.select("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"), SIZE_SECONDS)
        count = int(result.rows[0]["n"].value)
    except TimeoutError:
        report.add("size", "ok", f"big: counting did not finish in {SIZE_SECONDS:.0f} s")
        return
    except (KgfedError, LookupError, ValueError) as exc:
        report.add("size", "warn", f"cannot count triples: {str(exc).splitlines()[0] if str(exc) else exc}")
        return
    report.add("size", "ok" if count else "fail", f"{count:,} triples" + ("" if count else ": the store is empty"),
               triples=count)


async def _row_cap(report: Report, http) -> None:
    """Ask for ROW_PROBE rows: a server cap shows as fewer rows and/or X-SPARQL-MaxRows."""
    from ...sparql.results import parse_sparql_json

    params = {"query": f"SELECT ?s ?p ?o WHERE {{ ?s ?p ?o }} LIMIT {ROW_PROBE}"}
    if http.default_graph:
        params["default-graph-uri"] = http.default_graph
    try:
        response = await http.client.request("GET", http.url, params=params, headers=http.request_headers())
        rows = len(parse_sparql_json(response.body, source="row probe").rows) if response.status < 400 else None
    except KgfedError as exc:
        report.add("row cap", "warn", f"could not probe: {exc}")
        return
    header = response.headers.get("X-SPARQL-MaxRows")
    if header:
        report.add("row cap", "warn", f"{header} rows (X-SPARQL-MaxRows, Virtuoso ResultSetMaxRows): bigger answers are "
                   "cut; kgfed marks them partial and `kgfed extract` keeps its batches under --row-budget",
                   row_cap=int(header))
    elif rows is None:
        report.add("row cap", "warn", f"the {ROW_PROBE}-row probe failed with HTTP {response.status}")
    elif rows < ROW_PROBE:
        report.add("row cap", "ok", f"none seen: the data has only {rows} triples", row_cap=None)
    else:
        report.add("row cap", "ok", f"none up to {ROW_PROBE} rows", row_cap=None)


async def _partial(report: Report, http) -> None:
    """Virtuoso: the anytime timeout must cut HEAVY and say so; elsewhere partial answers are not signalled."""
    software = next((c.get("software") for c in report.data["checks"] if c["check"] == "server"), "") or ""
    if software.lower() != "virtuoso":
        report.add("partial answers", "ok", f"not signalled by {software or 'this server'}: a slow query fails or times out "
                   "(kgfed's --timeout) rather than answering in part")
        return

    params = {"query": HEAVY, "timeout": str(ANYTIME_MS)}
    if http.default_graph:
        params["default-graph-uri"] = http.default_graph
    try:
        response, seconds = await _timed(lambda: asyncio.wait_for(
            http.client.request("GET", http.url, params=params, headers=http.request_headers()), ANYTIME_SECONDS))
    except TimeoutError:
        report.add("partial answers", "warn", f"Virtuoso ran a query past {ANYTIME_SECONDS:.0f} s despite timeout={ANYTIME_MS} "
                   "(anytime queries off?): long template queries may hang; set MaxQueryExecutionTime")
        return
    except KgfedError as exc:
        report.add("partial answers", "warn", f"anytime probe failed: {exc}")
        return
    if response.headers.get("X-SQL-State", "").upper() == "S1TAT":
        report.add("partial answers", "ok", f"signalled: anytime timeout cut a query after {seconds:.1f} s with "
                   "X-SQL-State: S1TAT (kgfed marks such answers partial and never caches them)", anytime=True)
    else:
        report.add("partial answers", "warn", f"no X-SQL-State on a query cut by timeout={ANYTIME_MS} (HTTP {response.status}); "
                   "partial answers may go unnoticed", anytime=False)


def render(report: dict[str, Any]) -> str:
    """The report as short lines: one per check, then the verdict."""
    marks = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}
    lines = [f"kgfed doctor {report['endpoint']}"]
    lines += [f"  {marks.get(c['status'], c['status'])} {c['check']:<16} {c['detail']}" for c in report["checks"]]
    verdict = (f"fit for the {report['dialect']} templates" if report["fit"]
               else "NOT fit" + (f" for the {report['dialect']} templates" if report["dialect"] else ""))
    lines.append(f"  → {verdict}")
    return "\n".join(lines)


def to_json(report: dict[str, Any]) -> str:
    return json.dumps(report, ensure_ascii=False, indent=1)
