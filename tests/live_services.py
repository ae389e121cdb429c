"""Scripted stand-ins for the live public services, in the exact shapes they answer in (2026).

- WDQS after the graph split: `query.wikidata.org` holds the main graph, `query-scholarly.wikidata.org`
  only scholarly articles; each is a real SPARQL engine (pyoxigraph) over its half of a small graph.
  A request without a contact in its User-Agent gets HTTP 200 with the robot-policy notice as plain
  text; a generic library agent gets 403 with the same text (HAProxy), as WDQS does since early 2026.
- QLever (`qlever.dev`, and the old `qlever.cs.uni-freiburg.de`): the whole graph; a query past the time
  limit gets HTTP 429 with QLever's error JSON (`composeError`: keys sorted, 4-space indent, no
  Retry-After); a `timeout` parameter above the default gets 403 with QLever's message.
"""
from __future__ import annotations

import json
import re
from collections import Counter

import pyoxigraph as ox
import pytest

from kgfed.endpoints import client as client_module
from kgfed.endpoints.transport import Request, Response

WD, WDT, RDFS = "http://www.wikidata.org/entity/", "http://www.wikidata.org/prop/direct/", "http://www.w3.org/2000/01/rdf-schema#"
ONTOLOGY = "http://wikiba.se/ontology#"
ROBOT_POLICY = "Please set a user-agent and respect our robot policy https://w.wiki/4wJS. See also T400119.\n"
GENERIC_AGENTS = re.compile(r"^(python-requests|aiohttp|Python-urllib|curl|Wget)/", re.IGNORECASE)
CONTACT = re.compile(r"\([^)]*(@|https?://)[^)]*\)")
PAPER = "Q90000001"  # a scholarly article (P31 Q13442814): only on the scholarly graph


@pytest.fixture(autouse=True)
def no_user_config(monkeypatch, tmp_path):
    """No contact, token or config file from the machine running the tests; the contact warning re-armed.

    Autouse in every test module that imports it."""
    for name in ("KGFED_CONTACT", "KGFED_WIKIMEDIA_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KGFED_CONFIG", str(tmp_path / "absent.toml"))
    monkeypatch.setattr(client_module, "_warned_no_contact", False)


def _triples(*rows: tuple[str, str, str]) -> bytes:
    out = []
    for s, p, o in rows:
        obj = o if o.startswith(("<", '"')) else f"<{o}>"
        out.append(f"<{s}> <{p}> {obj} .")
    return "\n".join(out).encode()


def _prop(pid: str, label: str) -> list[tuple[str, str, str]]:
    return [(WD + pid, ONTOLOGY + "directClaim", WDT + pid), (WD + pid, RDFS + "label", f'"{label}"@en')]


MAIN = _triples(
    (WD + "Q42", RDFS + "label", '"Douglas Adams"@en'),
    (WD + "Q42", WDT + "P31", WD + "Q5"),
    (WD + "Q42", WDT + "P646", '"/m/0282x"'),
    (WD + "Q5", RDFS + "label", '"human"@en'),
    (WD + "Q13442814", RDFS + "label", '"scholarly article"@en'),
    *_prop("P31", "instance of"), *_prop("P50", "author"), *_prop("P646", "Freebase ID"),
)
SCHOLARLY = _triples(
    (WD + PAPER, RDFS + "label", '"On the Use of Towels in Interstellar Travel"@en'),
    (WD + PAPER, WDT + "P31", WD + "Q13442814"),
    (WD + PAPER, WDT + "P50", WD + "Q42"),
)


def store(*parts: bytes) -> ox.Store:
    s = ox.Store()
    for part in parts:
        s.load(part, format=ox.RdfFormat.N_TRIPLES)
    return s


def sparql_answer(graph: ox.Store, query: str) -> Response:
    result = graph.query(query)
    body = result.serialize(format=ox.QueryResultsFormat.JSON)
    return Response.of(200, body, content_type="application/sparql-results+json")


def qlever_error(status: int, query: str, exception: str, millis: int = 60012) -> Response:
    """QLever's error body: `responseJson::composeError`, dumped with indent 4 (nlohmann sorts keys)."""
    doc = {"exception": exception, "query": query, "resultsize": 0, "status": "ERROR",
           "time": {"computeResult": millis, "total": millis}}
    return Response.of(status, json.dumps(doc, indent=4, sort_keys=True), content_type="application/json",
                       headers={"Access-Control-Allow-Origin": "*"})


class Services:
    """One handler for every scripted host; `seen` counts requests per host, `fields` keeps what was sent."""

    def __init__(self, *, qlever_times_out: str | None = None):
        self.main = store(MAIN)
        self.scholarly = store(SCHOLARLY)
        self.full = store(MAIN, SCHOLARLY)
        self.seen: Counter[str] = Counter()
        self.sent: list[Request] = []
        self.qlever_times_out = qlever_times_out  # a query containing this text runs past QLever's limit

    def __call__(self, request: Request) -> Response:
        self.seen[request.host] += 1
        self.sent.append(request)
        query = request.fields().get("query", "")
        if request.host.endswith("wikidata.org"):
            agent = request.headers.get("User-Agent", "")
            if GENERIC_AGENTS.match(agent):
                return Response.of(403, ROBOT_POLICY, headers={"Server": "HAProxy"})
            if not CONTACT.search(agent):
                return Response.of(200, ROBOT_POLICY)
            graph = self.scholarly if request.host == "query-scholarly.wikidata.org" else self.main
            return sparql_answer(graph, query)
        if request.host in ("qlever.dev", "qlever.cs.uni-freiburg.de"):
            if "timeout" in request.fields():
                return qlever_error(403, query, "User submitted timeout was higher than what is currently allowed by "
                                                "this instance (60s). Please use a valid-access token to override this "
                                                "server configuration.", 0)
            if self.qlever_times_out and self.qlever_times_out in query:
                return qlever_error(429, query, f"Operation timed out. Last operation: IndexScan ?x <{WDT}P50> ?e")
            return sparql_answer(self.full, query)
        return Response.of(404, "Unknown path")
