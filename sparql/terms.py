"""Validation and escaping of everything that enters a query.

No user string is ever pasted into SPARQL unchecked: identifiers must match a strict pattern for
their dialect (the whole string: `fullmatch`, so a trailing newline is refused) (otherwise `InvalidIdentifier`), IRIs must be absolute and free of the characters the
SPARQL grammar forbids inside `<...>`, and literals are escaped per the SPARQL 1.1 `STRING_LITERAL2`
rule (ECHAR escapes for quote, backslash and line breaks).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from .errors import InvalidIdentifier

# Wikidata: items Q…, properties P…, lexemes L… (forms/senses not used by the templates).
WIKIDATA_ID = re.compile(r"^[QPL][1-9][0-9]{0,11}$")
# Freebase machine ids m.0abc / g.11b… (lowercase alphanumerics and underscore after the dot).
FREEBASE_MID = re.compile(r"^[mg]\.[0-9a-z_]{2,16}$")
# Freebase relation (and type) ids: dot-separated word segments, e.g. people.person.nationality.
FREEBASE_RELATION = re.compile(r"^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+){1,6}$")  # real ids have capitals: ...Kind_of_symbol
# Characters the SPARQL grammar forbids inside an IRIREF, plus whitespace.
_IRI_FORBIDDEN = re.compile(r'[\x00-\x20<>"{}|^`\\]')
_IRI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_LANG_TAG = re.compile(r"^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$")
_SURROGATE = re.compile("[\ud800-\udfff]")  # lone surrogates: not encodable, never valid text


def _show(value: object) -> str:
    """A short, single-line rendering of bad input for error messages."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def wikidata_id(value: str, kinds: str = "QPL") -> str:
    """Return `value` if it is a Wikidata id of one of `kinds` (e.g. 'Q' or 'P'), else raise."""
    if not isinstance(value, str) or not WIKIDATA_ID.fullmatch(value) or value[0] not in kinds:
        want = {"Q": "an item id like Q42", "P": "a property id like P69"}.get(kinds, "a Wikidata id like Q42 or P69")
        raise InvalidIdentifier(f"invalid Wikidata id {_show(value)}: expected {want}")
    return value


def freebase_mid(value: str) -> str:
    """Return `value` if it is a Freebase machine id (m.0abc, g.11b…), else raise."""
    if not isinstance(value, str) or not FREEBASE_MID.fullmatch(value):
        raise InvalidIdentifier(f"invalid Freebase id {_show(value)}: expected a mid like m.0d3k14 or g.11b6gq6dl2")
    return value


def freebase_relation(value: str) -> str:
    """Return `value` if it is a Freebase relation id (people.person.nationality), else raise."""
    if not isinstance(value, str) or not FREEBASE_RELATION.fullmatch(value):
        raise InvalidIdentifier(
            f"invalid Freebase relation {_show(value)}: expected dotted words like people.person.nationality"
        )
    return value


def iri(value: str) -> str:
    """Return `<value>` if `value` is an absolute IRI that is safe inside `<...>`, else raise."""
    if not isinstance(value, str) or not _IRI_SCHEME.match(value) or _IRI_FORBIDDEN.search(value) or _SURROGATE.search(value):
        raise InvalidIdentifier(
            f"invalid IRI {_show(value)}: expected an absolute IRI without spaces, quotes, <, >, {{, }}, |, ^, ` or \\"
        )
    return f"<{value}>"


_ECHAR = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_ECHAR_RE = re.compile(r'[\\"\n\r\t\b\f]')


def literal(text: str, lang: str | None = None) -> str:
    """A SPARQL string literal for `text`, with an optional validated language tag."""
    if not isinstance(text, str):
        raise InvalidIdentifier(f"invalid literal {_show(text)}: expected a string")
    if "\x00" in text:
        raise InvalidIdentifier("invalid literal: NUL characters are not allowed in a query; remove them")
    bad = _SURROGATE.search(text)
    if bad:
        raise InvalidIdentifier(f"invalid literal: lone surrogate {bad.group(0)!r} at {bad.start()}; pass valid Unicode text")
    body = _ECHAR_RE.sub(lambda m: _ECHAR[m.group(0)], text)
    if lang is None:
        return f'"{body}"'
    if not isinstance(lang, str) or not _LANG_TAG.fullmatch(lang):
        raise InvalidIdentifier(f"invalid language tag {_show(lang)}: expected a BCP 47 tag like en or pt-BR")
    return f'"{body}"@{lang}'


def positive_int(value: int, name: str = "limit") -> int:
    """An integer ≥ 1 for LIMIT-like clauses (bool and negatives rejected)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidIdentifier(f"invalid {name} {_show(value)}: expected a whole number ≥ 1")
    return value


def optional_limit(value: int | None, name: str = "limit") -> int | None:
    """None (no limit) or an integer ≥ 1; 0, negatives, bools and non-integers are refused alike."""
    return None if value is None else positive_int(value, name)


def values_block(variables: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A `VALUES (?a ?b) { (x y) … }` block from already-rendered terms (each validated by the caller)."""
    header = " ".join(f"?{v}" for v in variables)
    body = " ".join("(" + " ".join(row) + ")" for row in rows)
    return f"VALUES ({header}) {{ {body} }}"
