"""The response cache's keys and row codec: what one stored answer looks like.

`ResponseCache` (`cache.responses`) keys an answer by (endpoint name, the exact query text):
`cache_key` hashes them with the layout version `FORMAT`, so another layout is never read, and the
endpoint name without URL credentials (`endpoint_key`), so another password reads the same answers.
`normalise_query` folds whitespace outside literals, IRIs and comments, for matching recordings only.

An answer is stored as one `marshal`led row, not as the SPARQL-JSON document, so a hit is not re-parsed:
its rows as indices into a table of its distinct terms, grouped by the variables they bind
(`Compact`). `encode` writes it, `decode` reads it back as an `Entry` whose result is a
`StoredResult`: complete, equal to the `SelectResult` it was made from, its rows turned into dicts of
`Term`s only when someone reads them. A damaged or foreign value decodes to None (a miss).
"""
from __future__ import annotations

import functools
import hashlib
import marshal
import re
from collections.abc import Sequence
from typing import NamedTuple

from ..sparql.results import Expect, SelectResult, Term
from ..sparql.secrets import strip_credentials

__all__ = ["FORMAT", "Compact", "Entry", "StoredResult", "cache_key", "compact", "decode", "encode", "endpoint_key",
           "expect_of", "normalise_query"]

FORMAT = 2  # entry layout version; part of the key, so other layouts are never read
_NEW_TERM = tuple.__new__


# -- keys ------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1024)
def expect_of(query: str) -> Expect:
    """`Expect.of_query`, memoised (templates repeat their texts)."""
    return Expect.of_query(query)


@functools.lru_cache(maxsize=256)
def endpoint_key(name: str) -> str:
    """An endpoint's name as keys and entries hold it: without URL credentials (another password, same answers)."""
    return strip_credentials(name)


def cache_key(endpoint_name: str, query: str) -> str:
    """The cache key of a query on an endpoint: the exact text, nothing folded (the name without credentials)."""
    name = endpoint_key(endpoint_name)
    return hashlib.sha256(f"kgfed-v{FORMAT}\n{name}\n{query}".encode("utf-8", "surrogatepass")).hexdigest()


# Tokens whose text is kept byte for byte by `normalise_query`: long and short string literals, IRIs,
# and comments *with* the line break that ends them (folding it would comment out the next line).
_PROTECTED = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*"""|\'\'\'(?:[^\'\\]|\\.|\'(?!\'\'))*\'\'\''
    r'|"(?:[^"\\\n\r]|\\.)*"|\'(?:[^\'\\\n\r]|\\.)*\'|<[^<>\s]*>|#[^\n\r]*(?:\r\n|\n|\r)?'
)
_SPACE = re.compile(r"\s+")


def normalise_query(query: str) -> str:
    """Fold whitespace outside literals, IRIs and comments (for matching recordings, not for cache keys)."""
    out, last = [], 0
    for match in _PROTECTED.finditer(query):
        out.append(_SPACE.sub(" ", query[last:match.start()]))
        out.append(match.group(0))
        last = match.end()
    out.append(_SPACE.sub(" ", query[last:]))
    return "".join(out).strip()


# -- entries ---------------------------------------------------------------------------------------
class Entry(NamedTuple):
    """A stored answer: when (epoch seconds) and from which endpoint it came."""

    created: float
    source: str
    result: SelectResult


class Compact(NamedTuple):
    """An answer's rows as indices into a table of its distinct terms: the form the cache stores.

    `terms` holds each distinct term once (a `Term`, or the plain (kind, value, lang, datatype) tuple
    read back from the store: index it, never read it by name); `shapes` the variable tuples the rows
    bind; `rows` one (shape number, term index per variable of that shape) tuple per row, in answer
    order. Readers that turn many rows into records (the KG facade) work on this form: a term is
    converted once however many rows repeat it, and no row dict is built.
    """

    terms: Sequence[tuple]
    shapes: Sequence[tuple[str, ...]]
    rows: Sequence[tuple[int, ...]]


class StoredResult(SelectResult):
    """An answer read from (or written to) the store: complete, its rows kept in `Compact` form and
    turned into `rows` (dicts of `Term`s) only when someone reads them. It equals the `SelectResult`
    it was made from. Shared between callers: treat it, as every cached answer, as read-only."""

    def __init__(self, variables: list[str], packed: Compact, boolean: bool | None = None):
        self.vars, self.compact, self.boolean = variables, packed, boolean
        self.partial, self.note = False, None  # partial answers are never stored
        self._rows: list | None = None

    @property
    def rows(self) -> list:
        rows = self._rows
        if rows is None:
            table = [t if type(t) is Term else _NEW_TERM(Term, t) for t in self.compact.terms]
            get, shapes = table.__getitem__, self.compact.shapes
            rows = self._rows = [dict(zip(shapes[r[0]], map(get, r[1:]))) for r in self.compact.rows]
        return rows

    @rows.setter
    def rows(self, rows: list) -> None:  # a writer (never kgfed's code) gets what it wrote, compact included
        self._rows = rows
        self.compact = compact(SelectResult(self.vars, rows))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SelectResult):
            return NotImplemented
        return (self.vars, self.rows, self.partial, self.note, self.boolean) == \
            (other.vars, other.rows, other.partial, other.note, other.boolean)

    def __len__(self) -> int:
        return len(self.compact.rows)

    __hash__ = None  # type: ignore[assignment]  # mutable, as SelectResult


def compact(result: SelectResult) -> Compact:
    """`result`'s rows in `Compact` form: a stored answer's own, else built from its rows (in row order)."""
    if type(result) is StoredResult:
        return result.compact
    table: dict[Term, int] = {}
    shapes: dict[tuple[str, ...], int] = {}
    rows = []
    for row in result.rows:
        shape = shapes.setdefault(tuple(row), len(shapes))
        rows.append((shape, *[table.setdefault(t, len(table)) for t in row.values()]))
    return Compact(list(table), list(shapes), rows)


def _blob(packed: Compact, result: SelectResult, source: str, created: float) -> bytes:
    return marshal.dumps((FORMAT, created, source, tuple(result.vars), result.boolean,
                          [tuple(t) for t in packed.terms], list(packed.shapes), list(packed.rows)))


def encode(result: SelectResult, source: str, created: float) -> bytes:
    """Rows as indices into a table of distinct terms, grouped by which variables they bind (`Compact`)."""
    return _blob(compact(result), result, source, created)


def decode(blob: bytes) -> Entry | None:
    """The entry stored in `blob`, or None for another layout or a damaged value (then it is a miss).
    Its rows stay compact until read (`StoredResult`)."""
    try:
        fmt, created, source, variables, boolean, terms, shapes, rows = marshal.loads(blob)
    except (ValueError, EOFError, TypeError):
        return None
    if fmt != FORMAT:
        return None
    return Entry(created, source, StoredResult(list(variables), Compact(terms, shapes, rows), boolean))
