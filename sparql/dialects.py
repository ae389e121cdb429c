"""Predefined 1-hop SPARQL templates for the two KG shapes kgfed speaks: Wikidata and Freebase.

Every template takes short ids (`Q42`, `P69`, `m.0d3k14`, `people.person.nationality`), validates them,
and renders one query; batched forms put a whole beam into one `VALUES` block. All templates bind the
same variable names so that one parser serves both dialects:

- relations: `?e` (entity asked about), `?r` (relation IRI), `?rlabel`, and for Freebase CVTs `?r2`
- neighbours: `?e`, `?r`, `?r2` (compound only), `?x` (the far end), `?xlabel`, `?via` (the CVT node)
- labels: `?id`, `?label`, `?desc`, `?alias`
- search: `?id`, `?label`, `?desc`
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal as TypingLiteral

from . import terms
from .errors import InvalidIdentifier

Direction = TypingLiteral["out", "in"]
DIRECTIONS: tuple[Direction, ...] = ("out", "in")
SearchMode = TypingLiteral["exact", "contains", "mwapi"]
SEARCH_MODES: tuple[str, ...] = ("exact", "contains", "mwapi")

RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
OWL_SAMEAS = "http://www.w3.org/2002/07/owl#sameAs"
COMPOUND_SEP = "|"


def check_direction(direction: str) -> Direction:
    if not isinstance(direction, str) or direction not in DIRECTIONS:
        raise InvalidIdentifier(f"invalid direction {direction!r}: expected 'out' or 'in'")
    return direction  # type: ignore[return-value]


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


@dataclass(frozen=True)
class RelationFilter:
    """Which relations a method never wants to see (ToG's `abandon_rels`, extended and configurable)."""

    exact: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()
    contains: tuple[str, ...] = ()

    def drops(self, relation: str) -> bool:
        return any(
            part in self.exact or part.startswith(self.prefixes) or any(c in part for c in self.contains)
            for part in relation.split(COMPOUND_SEP)
        )


NO_FILTER = RelationFilter()


@dataclass(frozen=True)
class Dialect:
    """Shared machinery; subclasses define id rules and the templates."""

    name: str
    lang: str = "en"
    search_mode: SearchMode = "exact"
    relation_filter: RelationFilter = field(default=NO_FILTER)

    # ---- identifiers -------------------------------------------------------------------------
    def entity(self, short_id: str) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def relation(self, short_id: str) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def short(self, iri: str) -> str | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def check_entity(self, short_id: str) -> str:
        """Validate an entity id (raises InvalidIdentifier)."""
        self.entity(short_id)
        return short_id

    def check_relation(self, short_id: str) -> str:
        """Validate a (possibly compound) relation id (raises InvalidIdentifier)."""
        for part in short_id.split(COMPOUND_SEP) if isinstance(short_id, str) else [short_id]:
            self.relation(part)
        return short_id

    def _lang_filter(self, var: str) -> str:
        return f'FILTER(LANG(?{var}) = "" || LANGMATCHES(LANG(?{var}), {terms.literal(self.lang)}))'

    # ---- templates shared by both dialects -------------------------------------------------------
    def neighbors(self, pairs: Sequence[tuple[str, str]], direction: Direction, limit: int | None = None) -> str:
        """Far ends of (entity, relation) pairs in one direction; compound relations cross their CVT."""
        check_direction(direction)
        pairs = [(e, self.check_relation(r)) for e, r in pairs]
        simple = [(e, r) for e, r in pairs if COMPOUND_SEP not in r]
        compound = [(e, r) for e, r in pairs if COMPOUND_SEP in r]
        if simple and compound:
            raise InvalidIdentifier("internal: render simple and compound relations in separate queries")
        if compound:
            return self._neighbors_compound(compound, direction, limit)
        rows = [(self.entity(e), self.relation(r)) for e, r in _unique_pairs(simple)]
        edge = "?e ?r ?x ." if direction == "out" else "?x ?r ?e ."
        return self._finish(
            f"SELECT ?e ?r ?x ?xlabel WHERE {{\n  {terms.values_block(['e', 'r'], rows)}\n  {edge}\n"
            f"  OPTIONAL {{ ?x {self.label_predicate} ?xlabel . {self._lang_filter('xlabel')} }}\n}}",
            limit,
        )

    def _neighbors_compound(self, pairs, direction: Direction, limit: int | None) -> str:
        raise InvalidIdentifier(f"compound relations (r1{COMPOUND_SEP}r2) exist only in the Freebase dialect")

    def labels(self, ids: Sequence[str]) -> str:
        """Label, description and aliases for a batch of ids."""
        values = " ".join(self.entity(i) for i in _unique(ids))
        return self._prefixes() + (
            f"SELECT ?id ?label ?desc ?alias WHERE {{\n  VALUES ?id {{ {values} }}\n"
            f"  OPTIONAL {{ ?id {self.label_predicate} ?label . {self._lang_filter('label')} }}\n"
            f"  OPTIONAL {{ ?id {self.description_predicate} ?desc . {self._lang_filter('desc')} }}\n"
            f"  OPTIONAL {{ ?id {self.alias_predicate} ?alias . {self._lang_filter('alias')} }}\n}}"
        )

    def search(self, text: str, limit: int = 10, mode: SearchMode | None = None) -> str:
        """Entities whose label (or alias) is `text` (exact), or contains it case-insensitively."""
        terms.positive_int(limit)
        mode = self.search_mode if mode is None else mode
        if not isinstance(mode, str) or mode not in SEARCH_MODES:
            raise InvalidIdentifier(f"unknown search mode {mode!r}: use exact, contains or mwapi (mwapi on WDQS only)")
        if not isinstance(text, str) or not text.strip():
            raise InvalidIdentifier("empty search text: give a label such as 'Douglas Adams'")
        text = text.strip()
        describe = (
            f"  OPTIONAL {{ ?id {self.label_predicate} ?label . {self._lang_filter('label')} }}\n"
            f"  OPTIONAL {{ ?id {self.description_predicate} ?desc . {self._lang_filter('desc')} }}\n"
        )
        if mode == "exact":
            match = (
                f"  VALUES ?l {{ {terms.literal(text, self.lang)} {terms.literal(text)} }}\n"
                f"  ?id {self.label_predicate}|{self.alias_predicate} ?l .\n"
            )
        elif mode == "contains":
            match = (
                f"  ?id {self.label_predicate}|{self.alias_predicate} ?l .\n"
                f"  FILTER(CONTAINS(LCASE(STR(?l)), {terms.literal(text.lower())}))\n"
            )
        else:
            match = self._service_search(text)
        return self._prefixes() + f"SELECT DISTINCT ?id ?label ?desc WHERE {{\n{match}{describe}}} LIMIT {limit}"

    def match_labels(self, texts: Sequence[str]) -> str:
        """Entities whose label or alias is exactly one of `texts` (any case given), in one query."""
        if isinstance(texts, str) or any(not isinstance(t, str) for t in texts):
            raise InvalidIdentifier("invalid label list: expected a list of strings such as ['Douglas Adams']")
        texts = _unique(t.strip() for t in texts if t.strip())
        if not texts:
            raise InvalidIdentifier("no label to match: give at least one non-empty text")
        values = " ".join(f"{terms.literal(t, self.lang)} {terms.literal(t)}" for t in texts)
        return self._prefixes() + (
            f"SELECT DISTINCT ?l ?id ?label WHERE {{\n  VALUES ?l {{ {values} }}\n"
            f"  ?id {self.label_predicate}|{self.alias_predicate} ?l .\n"
            f"  OPTIONAL {{ ?id {self.label_predicate} ?label . {self._lang_filter('label')} }}\n}}"
        )

    def _service_search(self, text: str) -> str:
        raise InvalidIdentifier(f"search mode 'mwapi' needs a Wikidata endpoint; use exact or contains with {self.name}")

    def _finish(self, body: str, limit: int | None) -> str:
        limit = terms.optional_limit(limit)
        return self._prefixes() + body + (f" LIMIT {limit}" if limit is not None else "")

    def _prefixes(self) -> str:
        return ""

    # predicates (rendered), overridden per dialect
    label_predicate = f"<{RDFS_LABEL}>"
    description_predicate = "<http://schema.org/description>"
    alias_predicate = "<http://www.w3.org/2004/02/skos/core#altLabel>"


def _unique_pairs(pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    return list(dict.fromkeys(pairs))


# ------------------------------------------------------------------------------------------------
WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
P = "http://www.wikidata.org/prop/"
PS = "http://www.wikidata.org/prop/statement/"
PQ = "http://www.wikidata.org/prop/qualifier/"
WIKIBASE = "http://wikiba.se/ontology#"
_WD_NAMESPACES = (WD, WDT, PS, PQ, P, "http://www.wikidata.org/wiki/")


@dataclass(frozen=True)
class WikidataDialect(Dialect):
    """WDQS RDF shape (also QLever-Wikidata and the CoDEx fixtures): wd:, wdt:, p:/ps:/pq:, rdfs:label."""

    name: str = "wikidata"
    wiki: str = "https://en.wikipedia.org/"

    def entity(self, short_id: str) -> str:
        return f"<{WD}{terms.wikidata_id(short_id)}>"

    def relation(self, short_id: str) -> str:
        return f"<{WDT}{terms.wikidata_id(short_id, 'P')}>"

    def short(self, iri: str) -> str | None:
        for ns in _WD_NAMESPACES:
            if iri.startswith(ns):
                local = iri[len(ns):]
                return local if terms.WIKIDATA_ID.fullmatch(local) else None
        return None

    def relations(self, entities: Sequence[str], direction: Direction) -> str:
        """Direct-claim properties of each entity (out: entity is subject; in: object), with labels."""
        check_direction(direction)
        values = " ".join(self.entity(e) for e in _unique(entities))
        edge = "?e ?r ?x ." if direction == "out" else "?x ?r ?e ."
        return (
            f"SELECT DISTINCT ?e ?r ?rlabel WHERE {{\n  VALUES ?e {{ {values} }}\n  {edge}\n"
            f"  FILTER(STRSTARTS(STR(?r), {terms.literal(WDT)}))\n"
            f"  OPTIONAL {{ ?prop <{WIKIBASE}directClaim> ?r ; <{RDFS_LABEL}> ?rlabel . {self._lang_filter('rlabel')} }}\n}}"
        )

    def qualifiers(self, entity: str, prop: str) -> str:
        """Statements of `entity` for `prop`: value, and each qualifier with its property label."""
        e, p = self.entity(entity), terms.wikidata_id(prop, "P")
        return (
            f"SELECT ?st ?x ?xlabel ?q ?qlabel ?qv WHERE {{\n  {e} <{P}{p}> ?st .\n  ?st <{PS}{p}> ?x .\n"
            f"  OPTIONAL {{ ?x <{RDFS_LABEL}> ?xlabel . {self._lang_filter('xlabel')} }}\n"
            f"  OPTIONAL {{ ?st ?pq ?qv . ?q <{WIKIBASE}qualifier> ?pq .\n"
            f"    OPTIONAL {{ ?q <{RDFS_LABEL}> ?qlabel . {self._lang_filter('qlabel')} }} }}\n}}"
        )

    def sitelinks(self, entities: Sequence[str]) -> str:
        """The Wikipedia article (IRI and title) of each entity on this dialect's wiki."""
        values = " ".join(self.entity(e) for e in _unique(entities))
        return (
            f"SELECT ?id ?article ?title WHERE {{\n  VALUES ?id {{ {values} }}\n"
            f"  ?article <http://schema.org/about> ?id ;\n"
            f"           <http://schema.org/isPartOf> {terms.iri(self.wiki)} ;\n"
            f"           <http://schema.org/name> ?title .\n}}"
        )

    def freebase_ids(self, entities: Sequence[str]) -> str:
        """Freebase IDs (P646, stored as "/m/0abc") of Wikidata entities."""
        values = " ".join(self.entity(e) for e in _unique(entities))
        return f"SELECT ?id ?fb WHERE {{\n  VALUES ?id {{ {values} }}\n  ?id <{WDT}P646> ?fb .\n}}"

    def by_freebase_ids(self, mids: Sequence[str]) -> str:
        """Wikidata entities whose P646 is one of the given Freebase mids (m.0abc)."""
        values = " ".join(terms.literal("/" + terms.freebase_mid(m).replace(".", "/", 1)) for m in _unique(mids))
        return f"SELECT ?id ?fb WHERE {{\n  VALUES ?fb {{ {values} }}\n  ?id <{WDT}P646> ?fb .\n}}"

    def _service_search(self, text: str) -> str:
        # WDQS's MediaWiki API service: fuzzy, ranked entity search (live Wikidata only).
        return (
            "  SERVICE <http://wikiba.se/ontology#mwapi> {\n"
            '    <http://www.bigdata.com/rdf#serviceParam> <http://wikiba.se/ontology#endpoint> "www.wikidata.org" ;\n'
            '      <http://wikiba.se/ontology#api> "EntitySearch" ;\n'
            f"      <https://www.mediawiki.org/ontology#API/search> {terms.literal(text)} ;\n"
            f"      <https://www.mediawiki.org/ontology#API/language> {terms.literal(self.lang)} .\n"
            "    ?id <http://wikiba.se/ontology#apiOutputItem> <https://www.mediawiki.org/ontology#API/item> .\n  }\n"
        )


# ------------------------------------------------------------------------------------------------
NS = "http://rdf.freebase.com/ns/"
TOG_RELATION_FILTER = RelationFilter(
    # ToG's abandon_rels: type.object.type, type.object.name, common.*, freebase.*, *sameAs*;
    # kgfed adds the other bookkeeping namespaces of the dump (kg.*, dataworld.*, type.*, user.*).
    exact=frozenset({"type.object.type", "type.object.name"}),
    prefixes=("common.", "freebase.", "kg.", "dataworld.", "type.", "user.", "http://"),
    contains=("sameAs",),
)


@dataclass(frozen=True)
class FreebaseDialect(Dialect):
    """Freebase (`ns:` = http://rdf.freebase.com/ns/), as ToG/PoG's Virtuoso or QLever-Freebase serve it."""

    name: str = "freebase"
    relation_filter: RelationFilter = field(default=TOG_RELATION_FILTER)
    label_predicate = f"<{NS}type.object.name>"
    description_predicate = f"<{NS}common.topic.description>"
    alias_predicate = f"<{NS}common.topic.alias>"

    def entity(self, short_id: str) -> str:
        return f"<{NS}{terms.freebase_mid(short_id)}>"

    def relation(self, short_id: str) -> str:
        return f"<{NS}{terms.freebase_relation(short_id)}>"

    def short(self, iri: str) -> str | None:
        return iri[len(NS):] if iri.startswith(NS) else None

    def relations(self, entities: Sequence[str], direction: Direction, *, expand_cvt: bool = True) -> str:
        """Relations of each entity; a relation into a nameless node (CVT) also yields `?r2`, its next hop."""
        check_direction(direction)
        values = " ".join(self.entity(e) for e in _unique(entities))
        edge = "?e ?r ?x ." if direction == "out" else "?x ?r ?e ."
        cvt = (
            f"  OPTIONAL {{\n    FILTER(isIRI(?x) && STRSTARTS(STR(?x), {terms.literal(NS)}))\n"
            f"    FILTER NOT EXISTS {{ ?x {self.label_predicate} ?xname }}\n"
            f"    ?x ?r2 ?y . FILTER(?y != ?e)\n  }}\n"
            if expand_cvt else ""
        )
        r2 = " ?r2" if expand_cvt else ""
        return f"SELECT DISTINCT ?e ?r{r2} WHERE {{\n  VALUES ?e {{ {values} }}\n  {edge}\n{cvt}}}"

    def _neighbors_compound(self, pairs, direction: Direction, limit: int | None) -> str:
        rows = []
        for e, r in _unique_pairs(pairs):
            first, second = r.split(COMPOUND_SEP, 1)
            if COMPOUND_SEP in second:
                raise InvalidIdentifier(f"invalid compound relation {r!r}: expected exactly two parts r1{COMPOUND_SEP}r2")
            rows.append((self.entity(e), self.relation(first), self.relation(second)))
        edge = "?e ?r ?via ." if direction == "out" else "?via ?r ?e ."
        return self._finish(
            f"SELECT ?e ?r ?r2 ?via ?x ?xlabel WHERE {{\n  {terms.values_block(['e', 'r', 'r2'], rows)}\n  {edge}\n"
            f"  ?via ?r2 ?x . FILTER(?x != ?e)\n"
            f"  OPTIONAL {{ ?x {self.label_predicate} ?xlabel . {self._lang_filter('xlabel')} }}\n}}",
            limit,
        )

    def labels(self, ids: Sequence[str]) -> str:
        """Names as ToG reads them: `type.object.name`, falling back to `owl:sameAs`; plus aliases/description."""
        values = " ".join(self.entity(i) for i in _unique(ids))
        return (
            f"SELECT ?id ?label ?desc ?alias ?same WHERE {{\n  VALUES ?id {{ {values} }}\n"
            f"  OPTIONAL {{ ?id {self.label_predicate} ?label . {self._lang_filter('label')} }}\n"
            f"  OPTIONAL {{ ?id <{OWL_SAMEAS}> ?same }}\n"
            f"  OPTIONAL {{ ?id {self.description_predicate} ?desc . {self._lang_filter('desc')} }}\n"
            f"  OPTIONAL {{ ?id {self.alias_predicate} ?alias . {self._lang_filter('alias')} }}\n}}"
        )


WIKIDATA = WikidataDialect()
FREEBASE = FreebaseDialect()
_DIALECTS = {"wikidata": WIKIDATA, "freebase": FREEBASE}


def get_dialect(name: str | Dialect) -> Dialect:
    """The dialect called `name` ('wikidata' or 'freebase')."""
    if isinstance(name, Dialect):
        return name
    try:
        return _DIALECTS[name]
    except (KeyError, TypeError):
        raise InvalidIdentifier(f"unknown dialect {name!r}: use --dialect wikidata or --dialect freebase") from None
