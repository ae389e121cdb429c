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
   Functions by allowlist: every bare word must be a keyword or built-in of SPARQL 1.1/1.2
   (`KEYWORDS`, `BUILTIN_FUNCTIONS`), and an IRI or prefixed name where the store reads a function call
   (`function_calls`: before ``(`` in an expression, a projection, FILTER, BIND, ORDER/GROUP BY, HAVING,
   a sub-query's clauses) must be a cast to an XSD type or one of the dialect's own `functions`; Virtuoso's
   ``bif:``/``sql:`` names and ``java:`` IRIs are refused wherever they stand (any case, any prefix).
3. The text sent is the caller's own, with only its comments dropped (each is followed by its line end or
   the end of the text, so no two tokens merge): the tokens the store reads are exactly those judged, in the
   caller's spacing, so a query the store parsed before still parses (re-joining tokens by spaces broke
   ``CONCAT (`` on Oxigraph).
4. A SELECT is bounded: its top-level ``LIMIT`` is kept when it is at most max_rows+1, lowered to that
   otherwise (the number replaced in place), or added where the grammar puts it (after the last token, or
   before a trailing ``VALUES``, which the SPARQL algebra joins before the slice, so no later clause can
   undo the cap).
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

# -- functions by allowlist ---------------------------------------------------------------------------
XSD = "http://www.w3.org/2001/XMLSchema#"
#: The grammar's BuiltInCall and Aggregate names (SPARQL 1.1 §19.8; SPARQL 1.2's triple and direction
#: functions), upper case: the only bare words a query may call.
BUILTIN_FUNCTIONS = frozenset("""
    STR LANG LANGMATCHES DATATYPE BOUND IRI URI BNODE RAND ABS CEIL FLOOR ROUND CONCAT STRLEN UCASE LCASE
    ENCODE_FOR_URI CONTAINS STRSTARTS STRENDS STRBEFORE STRAFTER YEAR MONTH DAY HOURS MINUTES SECONDS TIMEZONE
    TZ NOW UUID STRUUID MD5 SHA1 SHA256 SHA384 SHA512 COALESCE IF STRLANG STRDT SAMETERM ISIRI ISURI ISBLANK
    ISLITERAL ISNUMERIC REGEX SUBSTR REPLACE COUNT SUM MIN MAX AVG SAMPLE GROUP_CONCAT
    LANGDIR HASLANG HASLANGDIR STRLANGDIR ISTRIPLE TRIPLE SUBJECT PREDICATE OBJECT""".split())
#: The grammar's other keywords of a query (updates are refused before this list is asked), upper case;
#: `a` is the one keyword matched in lower case only. AND and OR are Virtuoso's spellings of && and ||,
#: which the CWQ/WebQSP gold queries use (operators: they call nothing; a standard store rejects them).
KEYWORDS = frozenset("""
    BASE PREFIX VERSION SELECT ASK CONSTRUCT DESCRIBE WHERE FROM NAMED DISTINCT REDUCED AS GROUP BY HAVING ORDER
    ASC DESC LIMIT OFFSET VALUES UNDEF OPTIONAL GRAPH SERVICE SILENT BIND MINUS UNION FILTER NOT IN EXISTS
    SEPARATOR LATERAL TRUE FALSE AND OR""".split())
#: Keywords a `(` may follow that are no function: FILTER (...), VALUES (?a ?b), ?x IN (...), ORDER BY
#: DESC(...), SELECT (... AS ?v), COUNT(DISTINCT (...)).
_PAREN_KEYWORDS = frozenset({"FILTER", "BIND", "VALUES", "IN", "HAVING", "BY", "SELECT", "DISTINCT", "REDUCED",
                             "ASC", "DESC", "AND", "OR"})
#: Casts to XML Schema types (SPARQL 1.1 §17.5 and the further types engines cast to): the only IRIs every
#: dialect may call. A dialect adds its own in `Dialect.functions`.
XSD_CASTS = frozenset(XSD + name for name in """
    string boolean decimal integer double float dateTime date time gYear gYearMonth gMonth gMonthDay gDay
    duration dayTimeDuration yearMonthDuration int long short byte nonNegativeInteger positiveInteger
    negativeInteger nonPositiveInteger unsignedInt unsignedLong unsignedShort unsignedByte anyURI
    dateTimeStamp""".split())
#: Prefixes a store predeclares for casts (Virtuoso, Jena, Blazegraph): an undeclared `xsd:` resolves so.
_FUNCTION_PREFIXES = {"xsd": XSD}
#: Schemes and prefix names that call server code wherever they stand: Virtuoso's `bif:` (its SQL built-ins:
#: http_get, http_client, exec, sys_stat, ...) and `sql:` (stored procedures), Jena's `java:` classes.
VENDOR_SCHEMES = frozenset({"bif", "sql", "java"})
# frames that hold triple patterns: there an IRI before "(" may be a subject before a path group, or a
# predicate before a collection, when the token before it ends a pattern or is a term
_LOOSE = frozenset({"group", "bnode", "list"})
_TRIPLE_BEFORE = frozenset({"{", ".", "}", ";", "(", "[", "]", ")", "/", "|"})
_TERM_KINDS = frozenset({"IRI", "PNAME", "VAR", "BNODE"})

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
    (`wikibase:label`, `wikibase:mwapi`, ...), which only a WDQS endpoint evaluates (itself, no fetch);
    `own`: the KG's own origins when they are refused too (`own_origin_refused`), named in the message.
    """

    origins: frozenset[tuple[str, str, int]] = frozenset()
    builtins: bool = False
    own: frozenset[tuple[str, str, int]] = frozenset()

    @classmethod
    def for_urls(cls, urls: Iterable[str], *, builtins: bool = False) -> ServicePolicy:
        return cls(frozenset(o for u in urls if (o := origin(u)) is not None), builtins)

    @classmethod
    def own_origin_refused(cls, urls: Iterable[str], *, builtins: bool = False) -> ServicePolicy:
        """The policy for an untrusted caller (the MCP `sparql` tool): no SERVICE at all but WDQS's built-ins
        on WDQS, not even back to the KG's own endpoint at `urls` (each such call multiplies its work)."""
        return cls(frozenset(), builtins, frozenset(o for u in urls if (o := origin(u)) is not None))

    def refusal(self, iri: str) -> str:
        """The one-line message refusing a SERVICE to `iri`."""
        where = f"SERVICE <{_short(iri, 80)}> is refused"
        if origin(iri) in self.own:
            return (f"{where}: a SERVICE back to this KG's own endpoint only multiplies its work; write the pattern "
                    "without SERVICE")
        if not self.origins and not self.builtins:
            return (f"{where}: this KG allows no SERVICE (a local file store would fetch it itself, an endpoint "
                    "would call out); query the KG's own data")
        return f"{where}: federated queries from this KG may only reach {self.describe()}"

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
            extra_prefixes: Mapping[str, str] | None = None, *, functions: Iterable[str] = ()) -> Checked:
    """The verdict on `query` (see the module docstring); raises a one-line `InvalidQuery`.

    `functions`: IRIs the KG's dialect may call beyond SPARQL's built-ins and the XSD casts
    (`Dialect.functions`)."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidQuery("empty query: give a SPARQL SELECT or ASK")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidQuery(f"query of {len(query)} characters: keep it under {MAX_QUERY_CHARS}")
    if "\x00" in query:
        raise InvalidQuery("the query holds a NUL character: remove it")
    every = tokens(query)
    toks = [t for t in every if t.kind not in ("WS", "COMMENT")]
    if not toks:
        raise InvalidQuery("empty query (only comments): give a SPARQL SELECT or ASK")
    words = {t.word for t in toks if t.kind == "WORD"}
    if words & UPDATE_KEYWORDS:
        raise InvalidQuery("SPARQL updates (INSERT, DELETE, LOAD, CLEAR, CREATE, DROP, ...) are refused: "
                           "this tool is read-only, give a SELECT or ASK")
    prefixes = dict(WDQS_PREFIXES)  # resolved for the message; the policy decides
    prefixes.update(extra_prefixes or {})
    i = _prologue(toks, prefixes)
    form = toks[i].word
    if form in ("CONSTRUCT", "DESCRIBE"):
        raise InvalidQuery(f"{form} queries are refused: this tool returns rows, give a SELECT or ASK")
    if form not in ("SELECT", "ASK"):
        raise InvalidQuery(f"not valid SPARQL: expected SELECT or ASK, found {_short(toks[i].text, 30)!r} "
                           "(Virtuoso-dialect gold queries: pass rewrite=true)")
    body = toks[i:]
    _vendor_names(toks, prefixes)
    _clauses(body)
    _check_functions(toks, {**_FUNCTION_PREFIXES, **prefixes}, XSD_CASTS | frozenset(functions))
    services = _services(body, prefixes, policy)
    if form == "ASK":
        return Checked(form, _render(every), services)
    return _bounded(every, body, max_rows, services)


def _prologue(toks: list[Token], prefixes: dict[str, str]) -> int:
    """Check the prologue (PREFIX p: <iri>, SPARQL 1.2's VERSION "1.2"), add its prefixes to `prefixes`;
    the index of the query form."""
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
    return i


def _clauses(body: list[Token]) -> None:
    """No second form, dataset clause or prologue word in the query's body; every bare word a keyword or
    built-in of SPARQL (vendor keywords such as Virtuoso's DEFINE or OPTION are refused)."""
    for tok in body:
        word = tok.word
        if word in ("CONSTRUCT", "DESCRIBE"):
            raise InvalidQuery(f"{word} queries are refused: this tool returns rows, give a SELECT or ASK")
        if word in ("FROM", "NAMED"):
            raise InvalidQuery("FROM / FROM NAMED dataset clauses are refused: the KG's own graph is queried "
                               "(use GRAPH <g> { ... } inside WHERE for a named graph)")
        if word == "BASE" or word == "PREFIX":
            raise InvalidQuery(f"{word} inside the query is not valid SPARQL: declare prefixes before SELECT/ASK")
        if word and tok.text != "a" and word not in KEYWORDS and word not in BUILTIN_FUNCTIONS:
            raise InvalidQuery(f"{_short(tok.text, 40)!r} is no keyword or built-in function of SPARQL 1.1: vendor "
                               "extensions are refused, write standard SPARQL (names need a prefix, e.g. wd:Q42)")


def _scheme(iri: str) -> str:
    return iri.partition(":")[0].lower() if ":" in iri else ""


def _vendor_names(toks: list[Token], prefixes: Mapping[str, str]) -> None:
    """Refuse Virtuoso's `bif:`/`sql:` names and Jena's `java:` IRIs wherever they stand: as a prefix name
    (in any case: Virtuoso predeclares them), as an IRI (escapes decoded) or as a prefix's IRI."""
    for tok in toks:
        if tok.kind == "PNAME":
            prefix, _, local = tok.text.partition(":")
            iri = prefixes[prefix] + _local(local) if prefix in prefixes else ""
            vendor = prefix.lower() in VENDOR_SCHEMES or _scheme(iri) in VENDOR_SCHEMES
        elif tok.kind == "IRI":
            iri = decode_iri(tok.text)
            vendor = _scheme(iri) in VENDOR_SCHEMES
        else:
            continue
        if vendor:
            name = _short(tok.text, 60) + (f" (<{_short(iri, 60)}>)" if tok.kind == "PNAME" and iri else "")
            raise InvalidQuery(f"{name} is refused: bif:, sql: and java: names run the server's own "
                               "code (Virtuoso's bif:http_get reaches any URL); use SPARQL 1.1's built-in functions")


def function_calls(toks: list[Token]) -> list[Token]:
    """The significant tokens a store reads as a function's name: a bare word, IRI or prefixed name before
    `(`, unless it is an IRI or prefixed name inside a triple pattern (a subject before a path group
    ``<s> (<p>|<q>) ?o``, a predicate before a collection ``?s <p> (1 2)``). When unsure it is a call:
    a refusal, never a call let through."""
    frames = ["expr"]  # the top level (projection, modifiers) is read as expressions
    calls: list[Token] = []
    values = False  # after VALUES, before its data block
    for k, tok in enumerate(toks):
        prev = toks[k - 1] if k else None
        if tok.kind == "PUNCT" and tok.text in _CLOSE:
            frames.pop()
        elif tok.kind == "PUNCT" and tok.text in _OPEN:
            frames.append(_frame(tok.text, frames[-1], calls[-1] is prev if calls and prev else False, prev, values))
            values = values and tok.text != "{"
        elif k + 1 < len(toks) and toks[k + 1].kind == "PUNCT" and toks[k + 1].text == "(" \
                and tok.kind in ("IRI", "PNAME", "WORD") and _called(tok, frames[-1], prev):
            calls.append(tok)
        if tok.word == "VALUES":
            values = True
        elif tok.word == "SELECT" and frames[-1] in _LOOSE:
            frames[-1] = "expr"  # a sub-query: its projection and modifiers are expressions
    return calls


def _called(tok: Token, frame: str, prev: Token | None) -> bool:
    if tok.kind == "WORD":
        return tok.text != "a"
    if frame not in _LOOSE or prev is None:
        return True
    return not (prev.kind in _TERM_KINDS or (prev.kind == "PUNCT" and prev.text in _TRIPLE_BEFORE))


def _frame(bracket: str, current: str, after_call: bool, prev: Token | None, values: bool) -> str:
    """What the bracket opens: "group" (triple patterns), "bnode" ([ ... ]), "list" (a collection or a path
    group inside a triple pattern) or "expr" (expressions and everything else: every name before "(" a call)."""
    if bracket == "{":
        return "expr" if values else "group"
    if values or current not in _LOOSE:
        return "expr"
    if bracket == "(":
        expression = after_call or (prev is not None and prev.kind == "WORD" and prev.text != "a")
        return "expr" if expression else "list"
    return "bnode" if bracket == "[" else "expr"


def _check_functions(toks: list[Token], prefixes: Mapping[str, str], allowed: frozenset[str]) -> None:
    """Every call is to a SPARQL built-in or an allowed IRI (see `function_calls`)."""
    for tok in function_calls(toks):
        if tok.kind == "WORD":
            if tok.word not in BUILTIN_FUNCTIONS and tok.word not in _PAREN_KEYWORDS:
                raise InvalidQuery(f"{_short(tok.text, 40)}(...) is no SPARQL 1.1 function: call only SPARQL's "
                                   "built-in functions")
            continue
        if tok.kind == "IRI":
            iri: str | None = decode_iri(tok.text)
        else:
            prefix, _, local = tok.text.partition(":")
            iri = prefixes[prefix] + _local(local) if prefix in prefixes else None
        if iri is None:
            raise InvalidQuery(f"function {_short(tok.text, 60)} uses an undeclared prefix: declare it, and call only "
                               "SPARQL 1.1's built-in functions or casts such as xsd:integer(...)")
        if iri not in allowed:
            raise InvalidQuery(f"function {_short(tok.text, 60)} is refused: extension functions can reach the network "
                               "or the server; call only SPARQL 1.1's built-in functions or casts such as "
                               "xsd:integer(...) (docs/trust.md lists what each dialect allows)")


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
            raise InvalidQuery(policy.refusal(iri))
        found.append(iri)
    return found


def _render(every: list[Token], replace: Mapping[int, str] | None = None, insert: Mapping[int, str] | None = None) -> str:
    """The caller's text with its comments dropped; the tokens at the offsets of `replace` replaced, and
    each text of `insert` put before the token at its offset (the text's length: at the end)."""
    replace, insert = replace or {}, insert or {}
    out = []
    for tok in every:
        out.append(insert.get(tok.at, ""))
        out.append("" if tok.kind == "COMMENT" else replace.get(tok.at, tok.text))
    end = every[-1].at + len(every[-1].text) if every else 0
    out.append(insert.get(end, ""))
    return "".join(out)


def _bounded(every: list[Token], body: list[Token], max_rows: int, services: list[str]) -> Checked:
    """The SELECT with a top-level LIMIT of at most max_rows+1: its own when small enough, else one put in its
    place or added where the grammar wants it, before a trailing VALUES (which the algebra joins *before* the
    slice, so it cannot undo the cap). Only the outermost query's tokens are at bracket depth 0 after the WHERE
    group, so a sub-query's LIMIT or an inline VALUES is never mistaken for them."""
    cap = max_rows + 1
    where = next((k for k, t in enumerate(body) if t.kind == "PUNCT" and t.text == "{" and t.depth == 0), None)
    if where is None:  # no WHERE group: not a query the store will run; it says why
        return Checked("SELECT", _render(every), services)
    tail = range(where + 1, len(body))
    limit = next((k for k in tail if body[k].word == "LIMIT" and body[k].depth == 0), None)
    if limit is not None and limit + 1 < len(body) and body[limit + 1].kind == "NUMBER":
        number = body[limit + 1]
        try:
            small = 0 <= int(number.text) <= cap
        except ValueError:
            small = False
        replace = {} if small else {number.at: str(cap)}
        return Checked("SELECT", _render(every, replace), services, limited=not small)
    values = next((k for k in tail if body[k].word == "VALUES" and body[k].depth == 0), None)
    if values is not None:
        insert = {body[values].at: f"LIMIT {cap} "}
    else:
        insert = {body[-1].at + len(body[-1].text): f" LIMIT {cap}"}
    return Checked("SELECT", _render(every, insert=insert), services, limited=True)


def check_read_only(query: str, policy: ServicePolicy | set[str] | None = None, max_rows: int = 100, *,
                    builtin_services: bool | None = None, functions: Iterable[str] = ()) -> str:
    """The query to send (bounded by a LIMIT), or a one-line `InvalidQuery` when it is not a safe read.

    `policy`: the KG's `ServicePolicy`; `functions`: the dialect's extra function IRIs (`Dialect.functions`).
    (The old signature `check_read_only(query, hosts, max_rows, builtin_services=...)` with a set of host
    names is still accepted: each host then allows http and https on their default ports only.)
    """
    if policy is None:
        policy = ServicePolicy(builtins=bool(builtin_services))
    elif not isinstance(policy, ServicePolicy):
        origins = frozenset((s, h.lower(), p) for h in policy for s, p in (("http", 80), ("https", 443)))
        policy = ServicePolicy(origins, builtins=True if builtin_services is None else builtin_services)
    return analyse(query, policy, max_rows, functions=functions).text
