"""Predefined 1-hop SPARQL templates for the two KG shapes kgfed speaks: Wikidata and Freebase.

Every template takes short ids (`Q42`, `P69`, `m.0d3k14`, `people.person.nationality`), validates them,
and renders one query; batched forms put a whole beam into one `VALUES` block. All templates bind the
same variable names so that one parser serves both dialects:

- relations: `?e` (entity asked about), `?r` (relation IRI), `?rlabel`, and for Freebase CVTs `?r2`
- neighbours: `?e`, `?r`, `?r2` (compound only), `?x` (the far end), `?xlabel`, `?via` (the CVT node)
- labels: `?id`, `?label`, `?desc`, `?alias`
- search: `?id`, `?label`, `?desc`

What a dialect can do is asked, never inferred from its type or name: `relation_labels`,
`compound_relations`/`is_cvt`, `live`, `id_rank`, `id_example`/`id_forms`, and the optional templates of
`capabilities` (`sitelinks`, `qualifiers`, `links`: the cross-KG id property, Wikidata's P646 ↔ Freebase
mid) through `supports(capability)` / `require(capability, kg)`, which raises a one-line `Unsupported`.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Literal as TypingLiteral

from . import terms
from .errors import InvalidIdentifier, Unsupported
from .registry import Registry

Direction = TypingLiteral["out", "in"]
DIRECTIONS: tuple[Direction, ...] = ("out", "in")
SearchMode = TypingLiteral["exact", "contains", "mwapi"]
SEARCH_MODES: tuple[str, ...] = ("exact", "contains", "mwapi")

RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
OWL_SAMEAS = "http://www.w3.org/2002/07/owl#sameAs"
COMPOUND_SEP = "|"
QUALIFIER_BATCH = 200  # (entity, property) pairs per qualifiers query: a hop's pairs in one query, POSTed

# capability -> (what it is, how to get it), for `Dialect.require`'s one-line error
CAPABILITIES: Mapping[str, tuple[str, str]] = MappingProxyType({
    "sitelinks": ("Wikipedia sitelinks", "use a Wikidata-dialect KG (--endpoint wikidata or a Wikidata file)"),
    "qualifiers": ("statement qualifiers", "use a Wikidata-dialect KG (--endpoint wikidata or a Wikidata file)"),
    "links": ("cross-KG id links (P646 Freebase ids)", "use a Wikidata-dialect KG (--endpoint wikidata or a Wikidata file)"),
})


def check_direction(direction: str) -> Direction:
    if not isinstance(direction, str) or direction not in DIRECTIONS:
        raise InvalidIdentifier(f"invalid direction {direction!r}: expected 'out' or 'in'")
    return direction


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

    # ---- capabilities: what engine code asks instead of testing the dialect's type or name ------------
    #: optional templates (keys of `CAPABILITIES`): "sitelinks", "qualifiers", "links"
    capabilities: ClassVar[frozenset[str]] = frozenset()
    #: relation ids are opaque (`P19`) and read through their labels, so prompts show the labels (ToG's
    #: Wikidata prompt style) and merged graphs fetch them; False: the id reads (`people.person.nationality`)
    relation_labels: ClassVar[bool] = False
    #: nameless mediator (CVT) nodes, crossed by compound relations `r1|r2` (Freebase)
    compound_relations: ClassVar[bool] = False
    #: the data changes, so a live public endpoint's answers age; False for a frozen dump (Freebase)
    live: ClassVar[bool] = False
    #: the property holding an entity's id in another dialect: {other dialect's name: property}
    id_links: ClassVar[Mapping[str, str]] = MappingProxyType({})
    #: id forms for messages: one example, and the whole description
    id_example: ClassVar[str] = ""
    id_forms: ClassVar[str] = ""
    #: well-known entities a full dump holds (`kgfed doctor`'s default probes), and how its names read
    probe_ids: ClassVar[tuple[str, ...]] = ()
    name_evidence: ClassVar[str] = ""
    #: function IRIs an untrusted caller's query may call on a KG of this dialect beyond SPARQL 1.1's built-ins
    #: and the XSD casts (`kgfed.sparql.guard`'s allowlist; docs/trust.md): kgfed's own templates need none
    functions: ClassVar[frozenset[str]] = frozenset()

    def name_probe(self) -> str:
        """One row if the data has this dialect's entity names (`kgfed doctor` tells the dialect by it)."""
        return f"SELECT ?s WHERE {{ ?s {self.label_predicate} ?o }} LIMIT 1"

    def supports(self, capability: str) -> bool:
        """Whether this dialect has the optional templates of `capability` (see `CAPABILITIES`)."""
        if capability not in CAPABILITIES:
            raise InvalidIdentifier(f"unknown capability {capability!r}: use one of {', '.join(CAPABILITIES)}")
        return capability in self.capabilities

    def require(self, capability: str, kg: str | None = None) -> None:
        """Raise a one-line `Unsupported` naming the KG, the capability and the fix when it is missing."""
        if not self.supports(capability):
            what, fix = CAPABILITIES[capability]
            raise Unsupported(f"KG {kg or self.name!r} ({self.name} dialect) has no {what}: {fix}")

    def links_to(self, other: Dialect) -> bool:
        """Whether this dialect's entities carry their ids in `other` (Wikidata → Freebase through P646)."""
        return other.name in self.id_links and "links" in self.capabilities

    def require_link(self, other: Dialect, kg: str | None = None) -> None:
        """`require("links")`, and a link to `other` in particular (one-line `Unsupported` otherwise)."""
        self.require("links", kg)
        if not self.links_to(other):
            raise Unsupported(f"KG {kg or self.name!r} ({self.name} dialect) holds no {other.name} ids: it links only "
                              f"{', '.join(self.id_links)}; align through labels instead")

    # ---- optional templates: a dialect with the capability overrides them ------------------------
    def sitelinks(self, entities: Sequence[str]) -> str:
        """The Wikipedia article (`?id ?article ?title`) of each entity (capability "sitelinks")."""
        self.require("sitelinks")
        raise NotImplementedError  # pragma: no cover

    def qualifiers_many(self, pairs: Sequence[tuple[str, str]]) -> str:
        """Statements of (entity, property) pairs with qualifiers (capability "qualifiers")."""
        self.require("qualifiers")
        raise NotImplementedError  # pragma: no cover

    def qualifier_probe(self) -> str:
        """A one-row query: does the store hold qualifiers at all (capability "qualifiers")."""
        self.require("qualifiers")
        raise NotImplementedError  # pragma: no cover

    def property_of(self, iri: str) -> str:
        """The property id of a statement-property IRI bound to `?p` by `qualifiers_many`."""
        self.require("qualifiers")
        raise NotImplementedError  # pragma: no cover

    def linked_ids(self, entities: Sequence[str], other: Dialect) -> str:
        """`?id` → `?fb`: the ids in `other` that entities carry (capability "links")."""
        self.require_link(other)
        raise NotImplementedError  # pragma: no cover

    def by_linked_ids(self, ids: Sequence[str], other: Dialect) -> str:
        """`?fb` → `?id`: the entities citing `other`'s ids (capability "links")."""
        self.require_link(other)
        raise NotImplementedError  # pragma: no cover

    def is_cvt(self, ident: str, label: str | None) -> bool:
        """A mediator (CVT) node: a synthetic CVT id (`m.cvt_…`) or a nameless node, in a dialect with CVTs."""
        return self.compound_relations and (self.cvt_id(ident) or not label)

    def cvt_id(self, ident: str) -> bool:
        """Whether the id alone says CVT (a fixture's synthetic `m.cvt_…`)."""
        return False

    def id_rank(self, ident: str) -> tuple[int, Any]:
        """Sort key preferring the older (smaller) id: a cheap popularity prior for ambiguous labels."""
        return (0, ident)

    def is_item(self, ident: Any) -> bool:
        """Whether `ident` is an entity id that can have a page (every entity here; Wikidata: `Q…` only)."""
        return self.is_entity(ident)

    def is_entity(self, ident: Any) -> bool:
        """Whether `ident` is a valid entity id of this dialect (no exception)."""
        try:
            self.check_entity(ident)
        except InvalidIdentifier:
            return False
        return True

    def external_form(self, ident: str) -> str:  # pragma: no cover - overridden where ids are cited
        """How other KGs cite this dialect's id (Freebase `m.0abc` as `/m/0abc` in Wikidata's P646)."""
        return ident

    def from_external_form(self, value: str) -> str | None:
        """The id of a citation in `external_form`; None when it is not a valid id here."""
        return value if self.is_entity(value) else None

    # ---- identifiers -------------------------------------------------------------------------
    def entity(self, short_id: str) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def relation(self, short_id: str) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def short(self, iri: str) -> str | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def relations(self, entities: Sequence[str], direction: Direction, *, expand_cvt: bool = False) -> str:  # pragma: no cover
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

    def _neighbors_compound(self, pairs: Iterable[tuple[str, str]], direction: Direction, limit: int | None) -> str:
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
    capabilities: ClassVar[frozenset[str]] = frozenset({"sitelinks", "qualifiers", "links"})
    relation_labels: ClassVar[bool] = True
    live: ClassVar[bool] = True
    id_links: ClassVar[Mapping[str, str]] = MappingProxyType({"freebase": "P646"})
    id_example: ClassVar[str] = "Q42 / P69"
    id_forms: ClassVar[str] = "Q42 entities, P69 properties"
    probe_ids: ClassVar[tuple[str, ...]] = ("Q42", "Q30")
    name_evidence: ClassVar[str] = "rdfs:label on wd: entities"

    def name_probe(self) -> str:
        return f'SELECT ?s WHERE {{ ?s <{RDFS_LABEL}> ?o . FILTER(STRSTARTS(STR(?s), "{WD}")) }} LIMIT 1'

    def id_rank(self, ident: str) -> tuple[int, Any]:
        """Smaller Q/P numbers first (older, usually better-known items), then anything else by text."""
        if ident[:1] in "QP" and ident[1:].isdigit():
            return (0, int(ident[1:]))
        return (1, ident)

    def is_item(self, ident: Any) -> bool:
        """Whether `ident` is an item id (`Q42`): the entities that have pages."""
        return isinstance(ident, str) and bool(terms.WIKIDATA_ID.fullmatch(ident)) and ident.startswith("Q")

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

    def relations(self, entities: Sequence[str], direction: Direction, *, expand_cvt: bool = False) -> str:
        """Direct-claim properties of each entity (out: entity is subject; in: object), with labels (no CVTs)."""
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

    def qualifiers_many(self, pairs: Sequence[tuple[str, str]]) -> str:
        """Statements of many (entity, property) pairs in one query: `VALUES (?e ?p ?ps)`, then the
        `qualifiers` pattern (value and its label, each qualifier with its property label)."""
        rows = []
        for entity, prop in pairs:
            pid = terms.wikidata_id(prop, "P")
            rows.append(f"({self.entity(entity)} <{P}{pid}> <{PS}{pid}>)")
        lang = terms.literal(self.lang)

        def labelled(var: str) -> str:
            return f'?{var} <{RDFS_LABEL}> ?{var}label . FILTER(LANG(?{var}label) = "" || LANGMATCHES(LANG(?{var}label), {lang}))'

        return (
            f"SELECT ?e ?p ?st ?x ?xlabel ?q ?qlabel ?qv WHERE {{\n  VALUES (?e ?p ?ps) {{ {' '.join(rows)} }}\n"
            f"  ?e ?p ?st .\n  ?st ?ps ?x .\n  OPTIONAL {{ {labelled('x')} }}\n"
            f"  OPTIONAL {{ ?st ?pq ?qv . ?q <{WIKIBASE}qualifier> ?pq .\n    OPTIONAL {{ {labelled('q')} }} }}\n}}"
        )

    def qualifier_probe(self) -> str:
        return f"SELECT ?p WHERE {{ ?p <{WIKIBASE}qualifier> ?q }} LIMIT 1"

    def property_of(self, iri: str) -> str:
        """The property id of a `p:` IRI (as the qualifiers template binds `?p`)."""
        return iri.rsplit("/", 1)[-1]

    def sitelinks(self, entities: Sequence[str]) -> str:
        """The Wikipedia article (IRI and title) of each entity on this dialect's wiki."""
        values = " ".join(self.entity(e) for e in _unique(entities))
        return (
            f"SELECT ?id ?article ?title WHERE {{\n  VALUES ?id {{ {values} }}\n"
            f"  ?article <http://schema.org/about> ?id ;\n"
            f"           <http://schema.org/isPartOf> {terms.iri(self.wiki)} ;\n"
            f"           <http://schema.org/name> ?title .\n}}"
        )

    def linked_ids(self, entities: Sequence[str], other: Dialect) -> str:
        """The ids in `other` that entities carry (`?id` → `?fb`, the cited form: P646's "/m/0abc")."""
        prop = self._link_property(other)
        values = " ".join(self.entity(e) for e in _unique(entities))
        return f"SELECT ?id ?fb WHERE {{\n  VALUES ?id {{ {values} }}\n  ?id <{WDT}{prop}> ?fb .\n}}"

    def by_linked_ids(self, ids: Sequence[str], other: Dialect) -> str:
        """Entities citing one of `other`'s ids (`?fb`, as P646 stores them) → `?id`."""
        prop = self._link_property(other)
        values = " ".join(terms.literal(other.external_form(other.check_entity(i))) for i in _unique(ids))
        return f"SELECT ?id ?fb WHERE {{\n  VALUES ?fb {{ {values} }}\n  ?id <{WDT}{prop}> ?fb .\n}}"

    def _link_property(self, other: Dialect) -> str:
        self.require_link(other)
        return self.id_links[other.name]

    def freebase_ids(self, entities: Sequence[str]) -> str:
        """Freebase IDs (P646, stored as "/m/0abc") of Wikidata entities."""
        return self.linked_ids(entities, FREEBASE)

    def by_freebase_ids(self, mids: Sequence[str]) -> str:
        """Wikidata entities whose P646 is one of the given Freebase mids (m.0abc)."""
        return self.by_linked_ids(mids, FREEBASE)

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
_CITED_MID = re.compile(r"^/([mg])/([0-9a-z_]+)$")
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
    compound_relations: ClassVar[bool] = True
    id_example: ClassVar[str] = "m.0abc"
    probe_ids: ClassVar[tuple[str, ...]] = ("m.09c7w0", "m.0345_")
    name_evidence: ClassVar[str] = "ns:type.object.name"
    id_forms: ClassVar[str] = "m.0abc / g.11x entities, relations like people.person.nationality or r1|r2 through a CVT"
    #: Virtuoso's lenient cast `xsd:datetime(...)`, as the CWQ/WebQSP gold queries call it (rewrite=false)
    functions: ClassVar[frozenset[str]] = frozenset({"http://www.w3.org/2001/XMLSchema#datetime"})
    label_predicate = f"<{NS}type.object.name>"
    description_predicate = f"<{NS}common.topic.description>"
    alias_predicate = f"<{NS}common.topic.alias>"

    def entity(self, short_id: str) -> str:
        return f"<{NS}{terms.freebase_mid(short_id)}>"

    def relation(self, short_id: str) -> str:
        return f"<{NS}{terms.freebase_relation(short_id)}>"

    def short(self, iri: str) -> str | None:
        return iri[len(NS):] if iri.startswith(NS) else None

    def cvt_id(self, ident: str) -> bool:
        return ident.startswith("m.cvt_")

    def id_rank(self, ident: str) -> tuple[int, Any]:
        """m. mids (topics) before g. ids, then by text."""
        return (0 if ident.startswith("m.") else 1, ident)

    def external_form(self, ident: str) -> str:
        """`m.0abc` → `/m/0abc`, as Wikidata's P646 cites it."""
        return "/" + terms.freebase_mid(ident).replace(".", "/", 1)

    def from_external_form(self, value: str) -> str | None:
        """`/m/0abc` → `m.0abc`; None for anything that is not a valid mid."""
        match = _CITED_MID.match(value.strip()) if isinstance(value, str) else None
        if not match:
            return None
        mid = f"{match.group(1)}.{match.group(2)}"
        return mid if terms.FREEBASE_MID.match(mid) else None

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

    def _neighbors_compound(self, pairs: Iterable[tuple[str, str]], direction: Direction, limit: int | None) -> str:
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
_DIALECTS: dict[str, Any] = {"wikidata": WIKIDATA, "freebase": FREEBASE}
DIALECTS: tuple[Dialect, ...] = (FREEBASE, WIKIDATA)  # the dialects kgfed itself speaks
# every dialect by name: another package adds one (a `Dialect` instance, e.g. a frozen dataclass derived from
# `FreebaseDialect` with its own `name`) with an entry point in the group `kgfed.dialects`, or `register(...)`
DIALECT_REGISTRY: Registry[Dialect] = Registry("dialect", "kgfed.dialects", _DIALECTS, package=__name__,
                                               error=InvalidIdentifier, hint=" (--dialect NAME)")


def dialect_of(entity_id: str) -> Dialect | None:
    """The dialect whose item `entity_id` is (`m.0abc` Freebase, `Q42` Wikidata), None for anything else."""
    return next((d for d in DIALECTS if d.is_item(entity_id)), None)


def get_dialect(name: str | Dialect) -> Dialect:
    """The dialect called `name` ('wikidata', 'freebase', or one another package registered)."""
    if isinstance(name, Dialect):
        return name
    if not isinstance(name, str):
        raise InvalidIdentifier(f"unknown dialect {name!r}: use --dialect wikidata or --dialect freebase")
    dialect = DIALECT_REGISTRY.get(name)
    if not isinstance(dialect, Dialect):
        raise InvalidIdentifier(f"dialect {name!r} is a {type(dialect).__name__}, not a kgfed.sparql.dialects.Dialect "
                                "instance: register an instance")
    return dialect


def dialect_names() -> list[str]:
    """Every dialect's name (the built-in ones and those other packages register), sorted."""
    return DIALECT_REGISTRY.names()
