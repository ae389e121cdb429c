"""SPARQL 1.1 JSON results parsed into typed, serialisable values, and checked against what was asked.

A 200 answer that parses is not yet a right answer: `Expect` says what the query asked for (SELECT or
ASK, and which variables the caller reads), and `check_answer` refuses anything else with a one-line
`UnexpectedAnswer` before it can be cached or read. `query_form` finds SELECT/ASK/CONSTRUCT/DESCRIBE
after the prologue (PREFIX, BASE, comments), so raw queries are checked against their own form.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from collections.abc import Iterable
from typing import Any, Literal as TypingLiteral, NamedTuple

from .errors import EndpointError, EndpointTimeout, InvalidQuery, UnexpectedAnswer

TermKind = TypingLiteral["uri", "literal", "bnode"]
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"


class Term(NamedTuple):
    """One RDF term of a result row: an IRI, a literal (with lang or datatype) or a blank node."""

    kind: TermKind
    value: str
    lang: str | None = None
    datatype: str | None = None

    @property
    def is_iri(self) -> bool:
        return self.kind == "uri"

    @property
    def is_literal(self) -> bool:
        return self.kind == "literal"

    def python(self) -> Any:
        """The literal as a Python value where the XSD datatype says so (int, float, bool), else the text."""
        if self.kind != "literal" or not self.datatype or not self.datatype.startswith(XSD):
            return self.value
        local = self.datatype[len(XSD):]
        try:
            if local in {"integer", "int", "long", "short", "nonNegativeInteger", "positiveInteger", "gYear"}:
                return int(self.value)
            if local in {"decimal", "double", "float"}:
                return float(self.value)
            if local == "boolean":
                return self.value in {"true", "1"}
        except ValueError:
            pass
        return self.value

    def to_rdflib(self) -> Any:
        """The same term as an rdflib node (URIRef, Literal or BNode)."""
        from rdflib import BNode, Literal, URIRef

        if self.kind == "uri":
            return URIRef(self.value)
        if self.kind == "bnode":
            return BNode(self.value)
        return Literal(self.value, lang=self.lang, datatype=None if self.lang else self.datatype)

    def to_json(self) -> dict[str, str]:
        """SPARQL-JSON binding form."""
        out = {"type": self.kind, "value": self.value}
        if self.lang:
            out["xml:lang"] = self.lang
        elif self.datatype:
            out["datatype"] = self.datatype
        return out


Row = dict[str, Term]


@dataclass
class SelectResult:
    """A SELECT answer: variable names, rows of bound terms, and whether the server called it partial."""

    vars: list[str]
    rows: list[Row] = field(default_factory=list)
    partial: bool = False
    note: str | None = None  # e.g. the server's reason for a partial answer
    boolean: bool | None = None  # set for an ASK answer (then vars == ["boolean"], one row)

    def __len__(self) -> int:
        return len(self.rows)

    def column(self, var: str) -> list[Term]:
        """Bound values of one variable, in row order (unbound rows skipped)."""
        return [row[var] for row in self.rows if var in row]

    def to_json(self) -> dict[str, Any]:
        """SPARQL-JSON document (an ASK answer as `{"head": {}, "boolean": …}`)."""
        if self.boolean is not None:
            return {"head": {}, "boolean": self.boolean}
        doc: dict[str, Any] = {
            "head": {"vars": list(self.vars)},
            "results": {"bindings": [{k: t.to_json() for k, t in row.items()} for row in self.rows]},
        }
        if self.partial:
            doc["kgfed"] = {"partial": True, "note": self.note}
        return doc


_KINDS: dict[str, TermKind] = {"uri": "uri", "literal": "literal", "typed-literal": "literal", "bnode": "bnode"}


def _term(binding: Any) -> Term:
    if not isinstance(binding, dict) or "type" not in binding or "value" not in binding:
        raise EndpointError(f"malformed SPARQL-JSON binding {str(binding)[:80]!r}: expected {{type, value}}")
    kind = _KINDS.get(binding["type"]) if isinstance(binding["type"], str) else None
    if kind is None:
        raise EndpointError(f"malformed SPARQL-JSON binding: unknown term type {str(binding['type'])[:40]!r}")
    lang = binding.get("xml:lang")
    datatype = binding.get("datatype")
    if datatype == RDF_LANG_STRING:
        datatype = None
    return Term(kind, str(binding["value"]), lang or None, datatype if not lang else None)


class AnswerTooLarge(EndpointError):
    """An answer passed its `AnswerBudget` (rows or bound terms) while it was parsed; the rest is never built."""


@dataclass(frozen=True, slots=True)
class AnswerBudget:
    """How much of one answer is built into rows: `rows`, and `terms` (bound values, rows x their variables).

    The defaults are written once, in `endpoints.options` (`DEFAULT_MAX_ROWS`/`DEFAULT_MAX_TERMS`, sized so a
    client parsing one dense answer stays under 1 GB); `HttpOptions.max_rows`/`max_terms` set a run's."""

    rows: int
    terms: int
    what: str = "HttpOptions.max_rows / max_terms"  # where the caller raises it, for the error line

    def refuse(self, source: str, count: int, unit: str) -> AnswerTooLarge:
        limit = self.rows if unit == "rows" else self.terms
        return AnswerTooLarge(f"{source}'s answer passed {limit:,} {unit} ({count:,} read; the budget of one answer, "
                              f"{self.what}) and was not kept: ask for less (a LIMIT, OFFSET paging, fewer variables)")


# A body up to this size is parsed whole by `json` (fast; at most ~30x its size in objects); a larger one that may
# hold more objects than the budget allows is parsed as a stream (`ijson`), counted as it goes.
_WHOLE_BYTES = 8 << 20


def parse_sparql_json(body: str | bytes | dict[str, Any], *, source: str = "endpoint",
                      budget: AnswerBudget | None = None, deadline: float | None = None) -> SelectResult:
    """Parse a SPARQL 1.1 JSON results document; anything malformed or truncated raises EndpointError, an
    answer past `budget` `AnswerTooLarge` before more than the budget is built (None: no budget, for documents
    kgfed holds already); a large one still being read at `deadline` (`time.monotonic()`) `EndpointTimeout`."""
    if isinstance(body, (str, bytes)):
        if budget is not None and len(body) > _WHOLE_BYTES and _objects(body) > min(budget.rows, budget.terms):
            return _parse_stream(body.encode() if isinstance(body, str) else body, source, budget, deadline)
        doc = _loads(body, source)
    else:
        doc = body
    return _from_doc(doc, source, budget)


def _objects(body: str | bytes) -> int:
    """An upper bound on the JSON objects in `body` (rows and terms are objects): its `{` count, at memchr speed."""
    return body.count("{") if isinstance(body, str) else body.count(b"{")


def _loads(body: str | bytes, source: str) -> Any:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        snippet = body[:60] if isinstance(body, str) else body[:60].decode("utf-8", "replace")
        raise EndpointError(
            f"{source} returned malformed or truncated JSON ({exc.__class__.__name__}: {exc}); body starts {snippet!r}",
            retryable=True,
        ) from None


def _from_doc(doc: Any, source: str, budget: AnswerBudget | None) -> SelectResult:
    if not isinstance(doc, dict):
        raise EndpointError(f"{source} returned JSON that is not a SPARQL results document")
    if "boolean" in doc:  # ASK
        if not isinstance(doc["boolean"], bool):
            raise EndpointError(f"{source} returned an ASK answer whose boolean is {str(doc['boolean'])[:20]!r}, not true/false")
        return ask_result(doc["boolean"])
    try:
        variables = list(doc["head"].get("vars", []))
        bindings = doc["results"]["bindings"]
    except (KeyError, TypeError, AttributeError):
        raise EndpointError(f"{source} returned JSON without head/results.bindings: not a SPARQL SELECT result") from None
    if not isinstance(bindings, list):
        raise EndpointError(f"{source} returned results.bindings that is not a list")
    if budget is not None and len(bindings) > budget.rows:
        raise budget.refuse(source, len(bindings), "rows")
    rows, terms = [], 0
    for binding in bindings:
        if not isinstance(binding, dict):
            raise EndpointError(f"{source} returned a result row that is not an object")
        terms += len(binding)
        if budget is not None and terms > budget.terms:
            raise budget.refuse(source, terms, "terms")
        rows.append({name: _term(value) for name, value in binding.items()})
    extra = doc.get("kgfed") or {}
    return SelectResult(variables, rows, partial=bool(extra.get("partial")), note=extra.get("note"))


_ROWS = "results.bindings.item"
_CHECK_EVERY = 4096  # rows between looks at the clock


def _parse_stream(body: bytes, source: str, budget: AnswerBudget, deadline: float | None = None) -> SelectResult:
    """`parse_sparql_json` of a large body as a stream: ijson builds one row at a time (in C), rows and terms are
    counted as they are built, so an answer past the budget costs the budget, never the whole document in objects.
    `deadline` (`time.monotonic()`): past it, `EndpointTimeout`; reading the answer counts against the time limit."""
    import ijson  # type: ignore[import-untyped]  # no stubs

    try:
        top = _stream_top(ijson, body, source)
        if "boolean" in top:
            return _from_doc(top, source, budget)
        rows: list[Row] = []
        terms = 0
        seen: dict[tuple, Term] = {}  # a term repeated across rows is built once
        for binding in ijson.items(body, _ROWS, use_float=True):
            if not isinstance(binding, dict):
                raise EndpointError(f"{source} returned a result row that is not an object")
            terms += len(binding)
            if len(rows) >= budget.rows:
                raise budget.refuse(source, len(rows) + 1, "rows")
            if terms > budget.terms:
                raise budget.refuse(source, terms, "terms")
            rows.append({name: _seen_term(seen, value) for name, value in binding.items()})
            if deadline is not None and len(rows) % _CHECK_EVERY == 0 and time.monotonic() > deadline:
                raise EndpointTimeout(f"{source}'s answer was still being read at the time limit ({len(rows):,} rows): "
                                      "ask for less (a LIMIT, OFFSET paging) or raise --timeout")
    except ijson.JSONError as exc:
        raise EndpointError(f"{source} returned malformed or truncated JSON ({_first_line(exc)}); body starts "
                            f"{body[:60].decode('utf-8', 'replace')!r}", retryable=True) from None
    extra = top.get("kgfed") or {}
    return SelectResult(top["vars"], rows, partial=bool(extra.get("partial")), note=extra.get("note"))


def _stream_top(ijson: Any, body: bytes, source: str) -> dict[str, Any]:
    """What a streamed answer holds besides its rows: `vars` (head.vars), `boolean` of an ASK, the `kgfed`
    extension; and the check that results.bindings is an array. Each is read up to where it ends (head comes first
    in practice: a few events), `boolean` and `kgfed` only when the body names them at all."""
    top: dict[str, Any] = {}
    if b'"boolean"' in body:
        found = next(ijson.items(body, "boolean"), None)
        if found is not None:
            return {"boolean": found}
    head = next(ijson.items(body, "head"), None)
    if not isinstance(head, dict):
        raise EndpointError(f"{source} returned JSON without head/results.bindings: not a SPARQL SELECT result")
    variables = head.get("vars", [])
    top["vars"] = [str(v) for v in variables] if isinstance(variables, list) else []
    for prefix, event, _ in ijson.parse(body):
        if prefix == "results.bindings":
            if event != "start_array":
                raise EndpointError(f"{source} returned results.bindings that is not a list")
            break
    else:
        raise EndpointError(f"{source} returned JSON without head/results.bindings: not a SPARQL SELECT result")
    if b'"kgfed"' in body:
        extra = next(ijson.items(body, "kgfed"), None)
        top["kgfed"] = extra if isinstance(extra, dict) else None
    return top


def _seen_term(seen: dict[tuple, Term], binding: Any) -> Term:
    if not isinstance(binding, dict):
        return _term(binding)  # its one-line error
    key = (binding.get("type"), binding.get("value"), binding.get("xml:lang"), binding.get("datatype"))
    try:
        term = seen.get(key)
    except TypeError:  # an unhashable part (a list or an object): `_term` says what is wrong
        return _term(binding)
    if term is None:
        term = _term(binding)
        if len(seen) < 65536:
            seen[key] = term
    return term


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{exc.__class__.__name__}: {text[0][:120]}" if text else exc.__class__.__name__


def ask_result(value: bool) -> SelectResult:
    """The answer to an ASK query."""
    return SelectResult(["boolean"], [{"boolean": Term("literal", "true" if value else "false", None, XSD + "boolean")}],
                        boolean=bool(value))


# -- what was asked --------------------------------------------------------------------------------
QueryForm = TypingLiteral["SELECT", "ASK", "CONSTRUCT", "DESCRIBE"]
# The prologue before the query form: whitespace, comments, BASE <iri>, PREFIX p: <iri>, Virtuoso's
# `DEFINE name "value"` pragmas. IRIs may contain '#', so they are skipped as whole tokens.
_PROLOGUE = re.compile(
    r"""(?:\s+|\#[^\n\r]*|BASE\s*<[^<>]*>|PREFIX\s+[^\s:]*:\s*<[^<>]*>|DEFINE\s+\S+\s+(?:"[^"\n]*"|'[^'\n]*'|<[^<>]*>|\S+))""",
    re.IGNORECASE,
)
_FORM = re.compile(r"(SELECT|ASK|CONSTRUCT|DESCRIBE)\b", re.IGNORECASE)
_PROJECTION = re.compile(r"\s*(?:DISTINCT\b|REDUCED\b)?(.*?)(?:\bWHERE\b|\{|\bFROM\b)", re.IGNORECASE | re.DOTALL)
_PROJECTION_TOKEN = re.compile(r"\(|\)|\bAS\s+[?$](\w+)|[?$](\w+)|\*", re.IGNORECASE)


def query_form(query: str) -> QueryForm | None:
    """SELECT/ASK/CONSTRUCT/DESCRIBE of a query, read after its prologue; None when it cannot tell."""
    return _form(query)[0]


def _form(query: str) -> tuple[QueryForm | None, int]:
    pos = 0
    while True:
        match = _PROLOGUE.match(query, pos)
        if match is None or match.end() == pos:
            break
        pos = match.end()
    form = _FORM.match(query, pos)
    return (form.group(1).upper(), form.end()) if form else (None, pos)  # type: ignore[return-value]


def projected_vars(query: str, start: int) -> frozenset[str]:
    """Variables a SELECT projects (`?x`, `(… AS ?n)`); empty for `SELECT *` or when unclear."""
    match = _PROJECTION.match(query, start)
    if match is None:
        return frozenset()
    depth, found = 0, set()
    for token in _PROJECTION_TOKEN.finditer(match.group(1)):
        text = token.group(0)
        if text == "*" and depth == 0:
            return frozenset()
        if text == "(":
            depth += 1
        elif text == ")":
            depth = max(0, depth - 1)
        elif token.group(1):
            found.add(token.group(1))
        elif token.group(2) and depth == 0:
            found.add(token.group(2))
    return frozenset(found)


def check_query_text(query: object) -> str:
    """`query` if it is text that can be sent (UTF-8 encodable, not empty), else InvalidQuery."""
    if not isinstance(query, str):
        raise InvalidQuery(f"invalid query {type(query).__name__}: expected the SPARQL text as a str")
    if not query.strip():
        raise InvalidQuery("empty query: give a SPARQL SELECT or ASK")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidQuery(f"query holds a lone surrogate {query[exc.start]!r} at {exc.start}: pass valid Unicode text") from None
    return query


@dataclass(frozen=True, slots=True)
class Expect:
    """What an answer must look like: its form and the variables the caller reads (all in `head.vars`)."""

    form: TypingLiteral["SELECT", "ASK"] | None = "SELECT"  # None: either (form unknown)
    vars: frozenset[str] = frozenset()

    @classmethod
    def select(cls, *variables: str) -> Expect:
        return cls("SELECT", frozenset(variables))

    @classmethod
    def of_query(cls, query: str) -> Expect:
        """The expectation a query carries by itself (form, projected variables); CONSTRUCT/DESCRIBE are refused."""
        form, end = _form(query)
        if form in {"CONSTRUCT", "DESCRIBE"}:
            raise InvalidQuery(f"{form} query: kgfed's select takes SELECT or ASK (graphs come back as rows only)")
        return cls(form, projected_vars(query, end) if form == "SELECT" else frozenset())  # type: ignore[arg-type]

    def fits(self, result: SelectResult) -> bool:
        """Cheap re-check (e.g. of a cache entry): form and variables."""
        if self.form == "ASK":
            return result.boolean is not None
        if self.form == "SELECT" and result.boolean is not None:
            return False
        return self.vars.issubset(result.vars)


def check_answer(result: SelectResult, expect: Expect, *, source: str) -> SelectResult:
    """`result` if it answers what `expect` says was asked, else `UnexpectedAnswer` naming what came back."""
    if expect.form == "ASK" and result.boolean is None:
        raise UnexpectedAnswer(f"{source} answered an ASK query with a SELECT table (vars {_names(result.vars)}): "
                               "the endpoint is misconfigured or not a SPARQL endpoint")
    if expect.form == "SELECT" and result.boolean is not None:
        raise UnexpectedAnswer(f"{source} answered a SELECT query with an ASK boolean ({str(result.boolean).lower()}): "
                               "the endpoint is misconfigured or rewrote the query")
    if result.boolean is not None:
        return result
    missing = expect.vars.difference(result.vars)
    if missing:
        raise UnexpectedAnswer(f"{source} answered without the variables asked for: missing {_names(missing)}, "
                               f"got {_names(result.vars)}: the endpoint rewrote or misread the query")
    declared = set(result.vars)
    for row in result.rows:
        if not declared.issuperset(row):
            stray = sorted(set(row) - declared)
            raise UnexpectedAnswer(f"{source} answered with rows binding {_names(stray)}, not in its head.vars "
                                   f"{_names(result.vars)}: a malformed answer")
    return result


def _names(variables: Iterable[str]) -> str:
    shown = sorted(variables) if not isinstance(variables, list) else variables
    text = " ".join(f"?{v}" for v in shown[:8]) + (" …" if len(shown) > 8 else "")
    return f"[{text}]" if text else "[]"
