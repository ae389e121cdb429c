"""What only some dialects hold: the KG facade's optional templates, each refused with a one-line `Unsupported`
on a dialect without it (`Dialect.require`). `KG` (facade.py) derives from `Capabilities`; these methods use its
batching, routing and flagging (`_batched`, `_results`, `_flag`, `_select`), declared below for type checkers.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ...sparql.dialects import QUALIFIER_BATCH, Dialect
from ...sparql.errors import InvalidIdentifier
from ...sparql.results import SelectResult
from .model import Answer, AnswerMap, Statement

if TYPE_CHECKING:
    from ...sparql.results import Term
    from .batching import Piece

__all__ = ["Capabilities"]


def _sequence(items, what: str, example: str) -> list:
    """`items` as a list; a bare string, a non-iterable or a mapping is refused with a one-line error."""
    if isinstance(items, (str, bytes, dict)) or not isinstance(items, Iterable):
        raise InvalidIdentifier(f"invalid {what} {type(items).__name__}: expected a list such as {example}")
    return list(items)



class Capabilities:
    """The optional templates of `KG`: Wikipedia sitelinks, cross-KG id links, statement qualifiers."""

    _has_qualifiers: bool | None = None  # set by KG.__init__: the store holds qualifier properties at all (probed once)

    if TYPE_CHECKING:  # what KG (facade.py) gives these methods
        name: str
        dialect: Dialect

        def check(self, entity: str) -> str: ...
        def _short(self, term: Term) -> str: ...
        async def _select(self, query: str) -> SelectResult: ...
        async def _batched(self, jobs: Sequence[tuple[Any, Sequence[Any]]], render: Any, *,
                           cap: int | None = None) -> tuple[list[tuple[Any, Sequence[Any], SelectResult]], str]: ...
        @staticmethod
        def _results(batched: tuple[Sequence[Piece], str]) -> tuple[list[SelectResult], str]: ...
        @staticmethod
        def _flag(answer: Any, results: Sequence[SelectResult], source: str | None = None) -> Any: ...

    # -- what only some dialects hold (Unsupported on the others) ----------------------------------
    def supports(self, capability: str) -> bool:
        """Whether this KG's dialect answers `capability` ("sitelinks", "qualifiers", "links")."""
        return self.dialect.supports(capability)

    def _checked(self, capability: str, ids, example: str) -> list[str]:
        self.dialect.require(capability, self.name)
        return list(dict.fromkeys(self.check(i) for i in _sequence(ids, "id list", example)))

    async def sitelinks(self, ids: Sequence[str]) -> AnswerMap:
        """The Wikipedia article title of each entity on the dialect's wiki (None when it has none)."""
        ids = self._checked("sitelinks", ids, "['Q42']")
        results, source = self._results(await self._batched([(None, ids)], lambda _, batch: self.dialect.sitelinks(batch)))
        titles: dict[str, str] = {}
        for result in results:
            for row in result.rows:
                if "id" in row and "title" in row:
                    titles.setdefault(self._short(row["id"]), row["title"].value)
        return self._flag(AnswerMap((i, titles.get(i)) for i in ids), results, source)

    async def linked_ids(self, ids: Sequence[str], other: Dialect) -> AnswerMap:
        """Each entity's ids in `other` (Wikidata `Q42` → `('m.0282x',)` through P646), in answer order."""
        self.dialect.require_link(other, self.name)
        ids = self._checked("links", ids, "['Q42']")
        results, source = self._results(await self._batched([(None, ids)], lambda _, batch: self.dialect.linked_ids(batch, other)))
        found = self._links(results, other, by_link=False)
        return self._flag(AnswerMap((i, tuple(found.get(i, ()))) for i in ids), results, source)

    async def by_linked_ids(self, ids: Sequence[str], other: Dialect) -> AnswerMap:
        """The entities citing each of `other`'s ids (Freebase `m.0282x` → `('Q42',)`), in answer order."""
        self.dialect.require_link(other, self.name)
        ids = list(dict.fromkeys(other.check_entity(i) for i in _sequence(ids, "id list", "['m.0282x']")))
        results, source = self._results(await self._batched([(None, ids)], lambda _, batch: self.dialect.by_linked_ids(batch, other)))
        found = self._links(results, other, by_link=True)
        return self._flag(AnswerMap((i, tuple(found.get(i, ()))) for i in ids), results, source)

    def _links(self, results: Sequence[SelectResult], other: Dialect, *, by_link: bool) -> dict[str, list[str]]:
        """(own id, other's id) pairs of link answers, grouped by the id asked about, first seen first."""
        found: dict[str, list[str]] = defaultdict(list)
        for result in results:
            for row in result.rows:
                if "id" not in row or "fb" not in row or row["id"].kind != "uri":
                    continue
                own, cited = self.dialect.short(row["id"].value), other.from_external_form(row["fb"].value)
                if own and cited:
                    key, value = (cited, own) if by_link else (own, cited)
                    if value not in found[key]:
                        found[key].append(value)
        return found

    async def has_qualifiers(self) -> bool:
        """Whether the store holds qualifier properties at all (one probe per KG), so `qualifiers` is worth
        asking; False on a dialect without qualifiers."""
        if not self.supports("qualifiers"):
            return False
        if self._has_qualifiers is None:
            self._has_qualifiers = bool((await self._select(self.dialect.qualifier_probe())).rows)
        return self._has_qualifiers

    async def qualifiers(self, pairs: Sequence[tuple[str, str]]) -> AnswerMap:
        """Statements of (entity, property) pairs, each with its value and qualifiers: pair -> [Statement].

        One query per `QUALIFIER_BATCH` pairs (a hop's pairs are one query), never one per pair: WDQS
        allows 5 parallel queries and 60 s of query time a minute per client.
        """
        self.dialect.require("qualifiers", self.name)
        pairs = list(dict.fromkeys(_sequence(pairs, "pair list", "[('Q42', 'P26')]")))
        results, source = self._results(await self._batched([(None, pairs)], lambda _, batch: self.dialect.qualifiers_many(batch),
                                                            cap=QUALIFIER_BATCH))
        short = self.dialect.short
        by_pair: dict[tuple[str, str], dict[str, dict]] = {pair: {} for pair in pairs}
        for result in results:
            for row in result.rows:
                if not all(v in row for v in ("e", "p", "st", "x")):
                    continue
                pair = (short(row["e"].value) or row["e"].value, self.dialect.property_of(row["p"].value))
                by_statement = by_pair.get(pair)
                if by_statement is None:
                    continue
                st = by_statement.setdefault(row["st"].value, {
                    "id": row["st"].value.rsplit("/", 1)[-1], "value": short(row["x"].value) or row["x"].value,
                    "value_label": row["xlabel"].value if "xlabel" in row else None, "qualifiers": {}, "attributes": {}})
                if "q" not in row or "qv" not in row:
                    continue
                role = row["qlabel"].value if "qlabel" in row else short(row["q"].value) or row["q"].value
                qv = row["qv"]
                entity = short(qv.value) if qv.kind == "uri" else None
                if entity:
                    st["qualifiers"][(role, entity)] = None
                else:
                    st["attributes"][(role, qv.value[:10] if qv.datatype and qv.datatype.endswith("dateTime") else qv.value)] = None
        return self._flag(AnswerMap(
            ((e, p), Answer(Statement(self.name, st["id"], e, p, st["value"], st["value_label"], tuple(st["qualifiers"]),
                                      tuple(st["attributes"])) for st in found.values()))
            for (e, p), found in by_pair.items()), results, source)
