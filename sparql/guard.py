"""The read-only SPARQL guard: what an untrusted caller's query may do, decided on what the store will parse.

An agent's query is hostile until shown otherwise. `check_read_only(query, policy, max_rows)` returns the
text to send, or raises a one-line `InvalidQuery`. It does not pattern-match the raw text, and it does not
trust a second parser to agree with the store on where a comment ends (rdflib ends a ``#`` comment only at
a line feed; the SPARQL grammar, Oxigraph and Virtuoso also at a carriage return, so
``?o #\\r SERVICE <http://127.0.0.1:9/x> { }`` hid a SERVICE from the old rdflib guard). Instead:

1. The query is cut into tokens by the SPARQL grammar's own terminals (``WS ::= #x20|#x9|#xD|#xA``,
   ``COMMENT ::= '#' [^#xD#xA]*``, ``IRIREF`` with its ``UCHAR`` escapes, the four string forms with
   ``ECHAR``/``UCHAR``, prefixed names, variables, numbers, punctuation of SPARQL 1.1 and 1.2). A character
   no terminal takes is a one-line error.
2. The verdict is taken on those tokens: the prologue may hold only ``PREFIX`` (and ``VERSION``), the
   form must be ``SELECT`` or ``ASK``; any update keyword (``INSERT``, ``DELETE``, ``LOAD``, ...), any
   ``FROM``/``FROM NAMED`` dataset clause and any ``SERVICE`` whose IRI (``\\u`` escapes decoded,
   prefixed names resolved) is not allowed by the KG's `ServicePolicy` is refused. Keywords are bare
   words, which only the grammar's keywords and built-in function names can be, so a keyword can hide
   in no string, IRI, prefixed name or comment.
3. The text sent is *those tokens*, re-joined by single spaces (comments dropped): the store parses
   exactly what was judged, whatever its own lexer would have made of the original's line ends.
4. A SELECT is bounded: its top-level ``LIMIT`` is kept when it is at most max_rows+1, lowered to that
   otherwise, or added where the grammar puts it (before a trailing ``VALUES``, which the SPARQL algebra
   joins before the slice, so no later clause can undo the cap).
5. Nesting deeper than `MAX_NESTING` brackets is refused in one line (a recursive parser would overflow).

Full syntax is left to the store that runs the query (its error comes back as one line). pyoxigraph has no
parse-only call: `Store().query` on an empty store *evaluates* the query (a SERVICE is fetched, a COUNT
over three 2000-row VALUES blocks runs for minutes), so it is never used as a checker here.

Pure: no I/O, standard library only.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from .errors import InvalidQuery

MAX_QUERY_CHARS = 20_000
MAX_NESTING = 40
# WDQS built-in services are evaluated by the endpoint itself, not fetched from another host.
BUILTIN_SERVICE_PREFIX = "http://wikiba.se/ontology#"
WDQS_PREFIXES = {"wikibase": BUILTIN_SERVICE_PREFIX, "bd": "http://www.bigdata.com/rdf#"}
UPDATE_KEYWORDS = frozenset({"INSERT", "DELETE", "LOAD", "CLEAR", "CREATE", "DROP", "COPY", "MOVE", "ADD",
                             "WITH", "USING"})

# -- the grammar's terminals (SPARQL 1.1 §19.8, plus the SPARQL 1.2 punctuation Oxigraph accepts) ------
_HEX = "[0-9A-Fa-f]"
_UCHAR = rf"\\u{_HEX}{{4}}|\\U{_HEX}{{8}}"
_ECHAR = r"""\\[tbnrf\\"']"""
_PN_CHARS_BASE = ("A-Za-z\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u02FF\u0370-\u037D\u037F-\u1FFF\u200C-\u200D"
                  "\u2070-\u218F\u2C00-\u2FEF\u3001-\uD7FF\uF900-\uFDCF\uFDF0-\uFFFD\U00010000-\U000EFFFF")
_PN_CHARS_U = _PN_CHARS_BASE + "_"
_PN_CHARS = _PN_CHARS_U + r"\-0-9\u00B7\u0300-\u036F\u203F-\u2040"
_PN_PREFIX = rf"[{_PN_CHARS_BASE}](?:[{_PN_CHARS}.]*[{_PN_CHARS}])?"
_PLX = rf"%{_HEX}{_HEX}|\\[_~.\-!$&'()*+,;=/?#@%]"
_PN_LOCAL = (rf"(?:[{_PN_CHARS_U}:0-9]|{_PLX})"
             rf"(?:(?:[{_PN_CHARS}.:]|{_PLX})*(?:[{_PN_CHARS}:]|{_PLX}))?")
_VARNAME = rf"[{_PN_CHARS_U}0-9][{_PN_CHARS_U}0-9\u00B7\u0300-\u036F\u203F-\u2040]*"
_EXP = r"[eE][+-]?[0-9]+"

_TOKENS: list[tuple[str, str]] = [
    ("WS", r"[\x20\x09\x0D\x0A]+"),
    ("COMMENT", r"#[^\x0D\x0A]*"),
    ("IRI", rf"<(?:[^<>\"{{}}|^`\\\x00-\x20]|{_UCHAR})*>"),
    ("STRING", rf"'''(?:(?:'|'')?(?:[^'\\]|{_ECHAR}|{_UCHAR}))*'''"),
    ("STRING", rf'"""(?:(?:"|"")?(?:[^"\\]|{_ECHAR}|{_UCHAR}))*"""'),
    ("STRING", rf"'(?:[^\x27\x5C\x0A\x0D]|{_ECHAR}|{_UCHAR})*'"),
    ("STRING", rf'"(?:[^\x22\x5C\x0A\x0D]|{_ECHAR}|{_UCHAR})*"'),
    ("VAR", rf"[?$]{_VARNAME}"),
    ("BNODE", rf"_:[{_PN_CHARS_U}0-9](?:[{_PN_CHARS}.]*[{_PN_CHARS}])?"),
    ("PNAME", rf"(?:{_PN_PREFIX})?:(?:{_PN_LOCAL})?"),
    ("LANG", r"@[a-zA-Z]+(?:-[a-zA-Z0-9]+)*(?:--[a-zA-Z]+)?"),
    ("NUMBER", rf"[+-]?(?:[0-9]+\.[0-9]*{_EXP}|\.[0-9]+{_EXP}|[0-9]+{_EXP}|[0-9]*\.[0-9]+|[0-9]+)"),
    ("WORD", r"[A-Za-z_][A-Za-z0-9_]*"),
    ("PUNCT", r"<<\(|\)>>|<<|>>|\{\||\|\}|\^\^|&&|\|\||!=|<=|>=|[{}()\[\].,;*+\-/!=<>?^|~]"),
]
_LEXER = re.compile("|".join(f"(?P<{kind}{i}>{pattern})" for i, (kind, pattern) in enumerate(_TOKENS)))
_OPEN, _CLOSE = {"{": "}", "(": ")", "[": "]", "{|": "|}", "<<": ">>", "<<(": ")>>"}, {"}", ")", "]", "|}", ">>", ")>>"}


@dataclass(frozen=True)
class Token:
    kind: str   # WS, COMMENT, IRI, STRING, VAR, BNODE, PNAME, LANG, NUMBER, WORD, PUNCT
    text: str
    at: int     # offset in the query
    depth: int = 0  # brackets open before it

    @property
    def word(self) -> str:
        """The keyword in upper case (empty for anything but a bare word)."""
        return self.text.upper() if self.kind == "WORD" else ""


@dataclass(frozen=True)
class ServicePolicy:
    """Which SERVICE IRIs a KG's queries may name.

    `origins`: (scheme, host, port) triples a SERVICE may reach (the KG's own HTTP endpoint; nothing for a
    local file store, which would fetch the service itself); `builtins`: WDQS's built-in services
    (`wikibase:label`, `wikibase:mwapi`, ...), which only a WDQS endpoint evaluates (itself, no fetch).
    """

    origins: frozenset[tuple[str, str, int]] = frozenset()
    builtins: bool = False

    @classmethod
    def for_urls(cls, urls: Iterable[str], *, builtins: bool = False) -> ServicePolicy:
        return cls(frozenset(o for u in urls if (o := origin(u)) is not None), builtins)

    def allows(self, iri: str) -> bool:
        if iri.startswith(BUILTIN_SERVICE_PREFIX):
            return self.builtins
        found = origin(iri)
        return found is not None and found in self.origins

    def describe(self) -> str:
        parts = [f"{s}://{h}:{p}" for s, h, p in sorted(self.origins)]
        if self.builtins:
            parts.append("WDQS built-in services (wikibase:label, wikibase:mwapi)")
        return ", ".join(parts) or "nothing (this KG needs no federated query)"


def origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an http(s) URL, the port made explicit; None for anything else."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    scheme = parts.scheme.lower()
    return scheme, parts.hostname.lower().rstrip("."), port or (443 if scheme == "https" else 80)


def _short(text: str, width: int = 80) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 1] + "…"


def tokens(query: str) -> list[Token]:
    """The query's tokens by the SPARQL grammar's terminals, with their bracket depth (one-line error
    for a character no terminal takes, an unbalanced bracket or nesting deeper than `MAX_NESTING`)."""
    out: list[Token] = []
    stack: list[str] = []
    pos, end = 0, len(query)
    while pos < end:
        match = _LEXER.match(query, pos)
        if match is None or match.end() == pos:
            line = query.count("\n", 0, pos) + 1
            raise InvalidQuery(f"not valid SPARQL: unexpected {query[pos]!r} at line {line}, offset {pos}: "
                               "check quotes, IRIs <...> and escapes")
        kind = match.lastgroup.rstrip("0123456789")  # type: ignore[union-attr]
        text = match.group()
        if kind == "PUNCT" and text in _CLOSE:
            if not stack or _OPEN[stack[-1]] != text:
                raise InvalidQuery(f"not valid SPARQL: unbalanced {text!r} at offset {pos}: check the brackets")
            stack.pop()
        out.append(Token(kind, text, pos, len(stack)))
        if kind == "PUNCT" and text in _OPEN:
            stack.append(text)
            if len(stack) > MAX_NESTING:
                raise InvalidQuery(f"query too deeply nested (more than {MAX_NESTING} brackets inside each other): "
                                   "flatten the groups")
        pos = match.end()
    if stack:
        raise InvalidQuery(f"not valid SPARQL: {stack[-1]!r} is never closed: check the brackets")
    return out


def decode_iri(text: str) -> str:
    """The IRI of an IRIREF token (`<...>`, its \\u/\\U escapes decoded)."""
    body = text[1:-1]
    return re.sub(rf"\\u({_HEX}{{4}})|\\U({_HEX}{{8}})", lambda m: chr(int(m.group(1) or m.group(2), 16)), body)


def _local(text: str) -> str:
    """A prefixed name's local part as an IRI suffix (PN_LOCAL_ESC backslashes dropped; %XX kept)."""
    return re.sub(r"\\(.)", r"\1", text)


@dataclass
class Checked:
    """What the guard found: the query's form, the text to send, the SERVICE IRIs it names."""

    form: str
    text: str
    services: list[str] = field(default_factory=list)
    limited: bool = False


def analyse(query: str, policy: ServicePolicy = ServicePolicy(), max_rows: int = 100,
            extra_prefixes: Mapping[str, str] | None = None) -> Checked:
    """The verdict on `query` (see the module docstring); raises a one-line `InvalidQuery`."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidQuery("empty query: give a SPARQL SELECT or ASK")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidQuery(f"query of {len(query)} characters: keep it under {MAX_QUERY_CHARS}")
    if "\x00" in query:
        raise InvalidQuery("the query holds a NUL character: remove it")
    toks = [t for t in tokens(query) if t.kind not in ("WS", "COMMENT")]
    if not toks:
        raise InvalidQuery("empty query (only comments): give a SPARQL SELECT or ASK")
    words = {t.word for t in toks if t.kind == "WORD"}
    if words & UPDATE_KEYWORDS:
        raise InvalidQuery("SPARQL updates (INSERT, DELETE, LOAD, CLEAR, CREATE, DROP, ...) are refused: "
                           "this tool is read-only, give a SELECT or ASK")
    # the prologue: PREFIX p: <iri> (and SPARQL 1.2's VERSION "1.2") before the form
    prefixes = dict(WDQS_PREFIXES)  # resolved for the message; the policy decides
    prefixes.update(extra_prefixes or {})
    declared: dict[str, str] = {}
    i = 0
    while i < len(toks) and toks[i].word in ("PREFIX", "BASE", "VERSION"):
        word = toks[i].word
        if word == "BASE":
            raise InvalidQuery("BASE declarations are refused: write full IRIs or PREFIX declarations")
        if word == "VERSION":
            if i + 1 >= len(toks) or toks[i + 1].kind != "STRING":
                raise InvalidQuery("not valid SPARQL: VERSION takes a string, e.g. VERSION \"1.2\"")
            i += 2
            continue
        if i + 2 >= len(toks) or toks[i + 1].kind != "PNAME" or not toks[i + 1].text.endswith(":") \
                or toks[i + 2].kind != "IRI":
            raise InvalidQuery("not valid SPARQL: PREFIX takes a name and an IRI, e.g. PREFIX wd: <http://www.wikidata.org/entity/>")
        name, iri = toks[i + 1].text[:-1], decode_iri(toks[i + 2].text)
        if declared.get(name, iri) != iri:
            raise InvalidQuery(f"prefix {name}: is declared twice with different IRIs: declare it once")
        declared[name] = prefixes[name] = iri
        i += 3
    if i >= len(toks):
        raise InvalidQuery("no query after the prefixes: give a SELECT or ASK")
    form = toks[i].word
    if form in ("CONSTRUCT", "DESCRIBE"):
        raise InvalidQuery(f"{form} queries are refused: this tool returns rows, give a SELECT or ASK")
    if form not in ("SELECT", "ASK"):
        raise InvalidQuery(f"not valid SPARQL: expected SELECT or ASK, found {_short(toks[i].text, 30)!r} "
                           "(Virtuoso-dialect gold queries: pass rewrite=true)")
    body = toks[i:]
    for tok in body:
        word = tok.word
        if word in ("CONSTRUCT", "DESCRIBE"):
            raise InvalidQuery(f"{word} queries are refused: this tool returns rows, give a SELECT or ASK")
        if word in ("FROM", "NAMED"):
            raise InvalidQuery("FROM / FROM NAMED dataset clauses are refused: the KG's own graph is queried "
                               "(use GRAPH <g> { ... } inside WHERE for a named graph)")
        if word == "BASE" or word == "PREFIX":
            raise InvalidQuery(f"{word} inside the query is not valid SPARQL: declare prefixes before SELECT/ASK")
    services = _services(body, prefixes, policy)
    text = " ".join(t.text for t in toks)  # what the store parses: the tokens judged, nothing else
    checked = Checked(form, text, services)
    if form == "SELECT":
        checked = _bounded(toks[:i], body, max_rows, services)
    return checked


def _services(body: list[Token], prefixes: Mapping[str, str], policy: ServicePolicy) -> list[str]:
    found = []
    for k, tok in enumerate(body):
        if tok.word != "SERVICE":
            continue
        nxt = body[k + 1] if k + 1 < len(body) else None
        if nxt is not None and nxt.word == "SILENT":
            nxt = body[k + 2] if k + 2 < len(body) else None
        if nxt is None:
            raise InvalidQuery("not valid SPARQL: SERVICE without an IRI")
        if nxt.kind == "IRI":
            iri = decode_iri(nxt.text)
        elif nxt.kind == "PNAME":
            prefix, _, local = nxt.text.partition(":")
            if prefix not in prefixes:
                raise InvalidQuery(f"SERVICE {_short(nxt.text, 60)} uses an undeclared prefix: declare it or write the IRI")
            iri = prefixes[prefix] + _local(local)
        elif nxt.kind == "VAR":
            raise InvalidQuery("SERVICE with a variable endpoint is refused: name the service IRI")
        else:
            raise InvalidQuery(f"not valid SPARQL: SERVICE followed by {_short(nxt.text, 30)!r}")
        if not policy.allows(iri):
            if not policy.origins and not policy.builtins:
                raise InvalidQuery(f"SERVICE <{_short(iri, 80)}> is refused: this KG allows no SERVICE (a local file "
                                   "store would fetch it itself); query the KG's own data")
            raise InvalidQuery(f"SERVICE <{_short(iri, 80)}> is refused: federated queries from this KG may only "
                               f"reach {policy.describe()}")
        found.append(iri)
    return found


def _bounded(prologue: list[Token], body: list[Token], max_rows: int, services: list[str]) -> Checked:
    """The SELECT with a top-level LIMIT of at most max_rows+1: its own when small enough, else one put in its
    place or added where the grammar wants it, before a trailing VALUES (which the algebra joins *before* the
    slice, so it cannot undo the cap). Only the outermost query's tokens are at bracket depth 0 after the WHERE
    group, so a sub-query's LIMIT or an inline VALUES is never mistaken for them."""
    cap = max_rows + 1
    out = [t.text for t in (*prologue, *body)]
    shift = len(prologue)
    where = next((k for k, t in enumerate(body) if t.kind == "PUNCT" and t.text == "{" and t.depth == 0), None)
    if where is None:  # no WHERE group: not a query the store will run; it says why
        return Checked("SELECT", " ".join(out), services)
    tail = range(where + 1, len(body))
    limit = next((k for k in tail if body[k].word == "LIMIT" and body[k].depth == 0), None)
    if limit is not None and limit + 1 < len(body) and body[limit + 1].kind == "NUMBER":
        try:
            small = 0 <= int(body[limit + 1].text) <= cap
        except ValueError:
            small = False
        if not small:
            out[shift + limit + 1] = str(cap)
        return Checked("SELECT", " ".join(out), services, limited=not small)
    values = next((k for k in tail if body[k].word == "VALUES" and body[k].depth == 0), None)
    out.insert(shift + values if values is not None else len(out), f"LIMIT {cap}")
    return Checked("SELECT", " ".join(out), services, limited=True)


def check_read_only(query: str, policy: ServicePolicy | set[str] | None = None, max_rows: int = 100, *,
                    builtin_services: bool | None = None) -> str:
    """The query to send (bounded by a LIMIT), or a one-line `InvalidQuery` when it is not a safe read.

    `policy`: the KG's `ServicePolicy`. (The old signature `check_read_only(query, hosts, max_rows,
    builtin_services=...)` with a set of host names is still accepted: each host then allows http and
    https on their default ports only.)
    """
    if policy is None:
        policy = ServicePolicy(builtins=bool(builtin_services))
    elif not isinstance(policy, ServicePolicy):
        origins = frozenset((s, h.lower(), p) for h in policy for s, p in (("http", 80), ("https", 443)))
        policy = ServicePolicy(origins, builtins=True if builtin_services is None else builtin_services)
    return analyse(query, policy, max_rows).text
