"""The `wmde` tool profile: Wikimedia Deutschland's Wikidata MCP server's tools, over kgfed's Wikidata KG.

Source: github.com/philippesaade-wmde/WikidataMCP at f20ee7a (the server behind wd-mcp.wmcloud.org):
`wikidataMCP/tools.py` (the six tools, their arguments and defaults, the texts they return, their error
texts) and `wikidataMCP/utils.py` (`execute_sparql`'s CSV: `;`-separated, a row index, entity IRIs cut to
their QIDs; `hierarchy_to_json`; `triplet_values_to_string`). Wikidata only.

What the server asks of Wikimedia's services kgfed asks of the run's Wikidata KG through its facade:
search_items/search_properties are `KG.search` (exact label or alias, then contains; WMDE's keyword search
is the MediaWiki API's, its vector search a hosted index), get_statements is `relations` + `neighbors_many`
+ `labels`, get_statement_values is `qualifiers` where the KG holds statement nodes (else the direct
claims, rank `normal`, the server's own default), get_instance_and_subclass_hierarchy walks P31/P279 with
`neighbors_many`, and execute_sparql goes through `sparql.guard` (read-only, no SERVICE, K rows).
"""
from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

from ....sparql.errors import KgfedError
from ...kg.facade import KG
from ...kg.model import Edge
from ..tools import Tool, ToolContext, ToolError, ToolProfile, answer_tool, hop_hint
from ._leaders import ONE_CALL, clean, name_ids

_ENTITY_IRI = re.compile(r"http://www\.wikidata\.org/entity/([A-Z]\d+)$")
SEARCH_LIMIT = 10  # wbsearchentities' limit in the server
WDQS_PREFIXES = {  # what the Wikidata Query Service declares for every query (the server's tips use them)
    "wd": "http://www.wikidata.org/entity/", "wdt": "http://www.wikidata.org/prop/direct/",
    "p": "http://www.wikidata.org/prop/", "ps": "http://www.wikidata.org/prop/statement/",
    "pq": "http://www.wikidata.org/prop/qualifier/", "psn": "http://www.wikidata.org/prop/statement/value-normalized/",
    "wikibase": "http://wikiba.se/ontology#", "bd": "http://www.bigdata.com/rdf#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#", "schema": "http://schema.org/",
    "skos": "http://www.w3.org/2004/02/skos/core#", "xsd": "http://www.w3.org/2001/XMLSchema#",
}

SYSTEM = """You are an assistant that explores Wikidata to answer the user's question, with the tools below. \
You cannot rely on any prior knowledge of Wikidata identifiers or schema: the only way to retrieve information is \
by using the provided tools. 1. Identify candidate items: search for the concepts or entities of the question \
(search_items, search_properties). 2. Inspect entity structure: retrieve the statements of the items \
(get_statements) and find which properties hold the relationship you need. 3. Refine with statement details \
(get_statement_values) when qualifiers matter; if the statements already answer the question, stop. \
4. Write and test SPARQL (execute_sparql) with the QIDs and PIDs you found. Finally call answer with the \
answer items' QIDs or labels as the tools showed them."""
SYSTEM += " " + ONE_CALL


def _wikidata(ctx: ToolContext) -> KG:
    return next(iter(ctx.kgs.values())) if len(ctx.kgs) == 1 else ctx.kg_named("wikidata")


def _named(label: str | None, ident: str) -> str:
    """`label (ID)` as the server writes an entity (the label is empty when Wikidata has none)."""
    return f"{label or ''} ({ident})".strip()


async def _search(args: dict[str, Any], ctx: ToolContext, kind: str) -> str:
    query = args["query"]
    if not query.strip():
        return "Query cannot be empty."
    kg = _wikidata(ctx)
    prefix = "P" if kind == "property" else "Q"
    hits = []
    for mode in ("exact", "contains"):
        found = await ctx.timed(kg.search(query, 50, mode=mode))
        hits = [h for h in found if h.id.startswith(prefix)][:SEARCH_LIMIT]
        if hits:
            break
    if not hits:
        return f"No matching Wikidata {kind}s found."
    for hit in hits:
        ctx.saw(hit.id, hit.label)
    return "\n".join(f"{h.id}: {h.label or ''} — {h.description or ''}" for h in hits)


async def search_items(args: dict[str, Any], ctx: ToolContext) -> str:
    return await _search(args, ctx, "item")


async def search_properties(args: dict[str, Any], ctx: ToolContext) -> str:
    return await _search(args, ctx, "property")


def _value(ctx: ToolContext, edge: Edge) -> str:
    if edge.literal:
        return edge.entity
    ctx.saw(edge.entity, edge.label)
    return _named(edge.label, edge.entity)


async def _entity(ctx: ToolContext, text: str) -> tuple[KG, str, str]:
    """The KG, the checked id and `label (ID)`; an id no Wikidata KG takes is `Entity X not found`."""
    kg, ident = _wikidata(ctx), clean(text)
    try:
        kg.check(ident)
    except KgfedError:
        raise ToolError(f"Entity {ident} not found") from None
    (name,) = (await name_ids(ctx, kg, [ident])).values()
    return kg, ident, _named(None if name == ident else name, ident)


async def get_statements(args: dict[str, Any], ctx: ToolContext) -> str:
    if not args["entity_id"].strip():
        return "Entity ID cannot be empty."
    kg, ident, head = await _entity(ctx, args["entity_id"])
    found = await ctx.timed(kg.relations(ident, "out"))
    if not found:
        return f"Entity {ident} not found"
    edges = await ctx.timed(kg.neighbors_many([(ident, r.relation, "out") for r in found]))
    lines = [f"{head}: {_named(rel.label, rel.relation)}: {_value(ctx, edge)}"
             for rel in found for edge in edges[(ident, rel.relation, "out")]]
    return "\n".join(lines) or f"Entity {ident} not found"


async def get_statement_values(args: dict[str, Any], ctx: ToolContext) -> str:
    if not args["entity_id"].strip():
        return "Entity ID cannot be empty."
    if not args["property_id"].strip():
        return "Property ID cannot be empty."
    kg, ident, head = await _entity(ctx, args["entity_id"])
    prop = clean(args["property_id"])
    kg.dialect.check_relation(prop)
    (prop_label,) = (await name_ids(ctx, kg, [prop])).values()
    named_prop = _named(None if prop_label == prop else prop_label, prop)
    if await kg.has_qualifiers():
        blocks = await _qualified(ctx, kg, ident, prop, head, named_prop)
    else:
        edges = await ctx.timed(kg.neighbors(ident, prop, "out"))
        blocks = [f"{head}: {named_prop}: {_value(ctx, e)}\n  Rank: normal" for e in edges]
    return "\n".join(blocks) if blocks else f"No statement found for {ident} with property {prop}"


async def _qualified(ctx: ToolContext, kg: KG, ident: str, prop: str, head: str, named_prop: str) -> list[str]:
    found = await ctx.timed(kg.qualifiers([(ident, prop)]))
    blocks = []
    for st in found[(ident, prop)]:
        ctx.saw(st.value, st.value_label)
        text = f"{head}: {named_prop}: {_named(st.value_label, st.value)}\n  Rank: normal"
        roles = [f"    - {role}: {_named(ctx.names.get(q), q)}" for role, q in st.qualifiers]
        roles += [f"    - {role}: {value}" for role, value in st.attributes]
        blocks.append(text + ("\n  Qualifier:\n" + "\n".join(roles) if roles else ""))
    return blocks


async def get_instance_and_subclass_hierarchy(args: dict[str, Any], ctx: ToolContext) -> str:
    if not args["entity_id"].strip():
        return "Entity ID cannot be empty."
    kg, ident, _ = await _entity(ctx, args["entity_id"])
    depth = args.get("max_depth", 5)
    data: dict[str, dict[str, list[str]]] = {}
    level, todo = 0, [ident]
    while todo and level <= depth:
        edges = await ctx.timed(kg.neighbors_many([(q, p, "out") for q in todo for p in ("P31", "P279")]))
        for q in todo:
            data[q] = {key: [e.entity for e in edges[(q, p, "out")] if not e.literal] for key, p in
                       (("instanceof", "P31"), ("subclassof", "P279"))}
        todo = sorted({i for q in todo for key in ("instanceof", "subclassof") for i in data[q][key]} - set(data))
        level += 1
    names = await name_ids(ctx, kg, list(data))
    labels = {q: "" if names[q] == q else names[q] for q in data}
    return json.dumps(_tree(ident, data, labels, depth), indent=2, ensure_ascii=False)


def _tree(qid: str, data: dict[str, dict[str, list[str]]], labels: dict[str, str], level: int) -> Any:
    """WMDE's `hierarchy_to_json`: `label (QID)` -> instance of / subclass of, `level` deep (deeper: the name)."""
    if level <= 0:
        return f"{labels[qid]} ({qid})"
    return {f"{labels[qid]} ({qid})": {
        "instance of (P31)": [_tree(i, data, labels, level - 1) for i in data[qid]["instanceof"] if i in data],
        "subclass of (P279)": [_tree(i, data, labels, level - 1) for i in data[qid]["subclassof"] if i in data]}}


async def execute_sparql(args: dict[str, Any], ctx: ToolContext) -> str:
    from ....sparql.guard import ServicePolicy, analyse

    if not args["sparql"].strip():
        return "SPARQL query cannot be empty."
    k = args.get("K", 10)
    kg = _wikidata(ctx)
    checked = analyse(_with_prefixes(args["sparql"]), ServicePolicy(), k).text  # read-only, no SERVICE, at most K(+1) rows
    result = await ctx.timed(kg.select(checked))
    if result.boolean is not None:
        return "Unexpected server error while processing the request."  # the server's text: its CSV reads bindings only
    if not result.rows:
        return '""\n'  # what pandas writes for a result without rows
    out = io.StringIO()
    writer = csv.writer(out, delimiter=";", lineterminator="\n")
    writer.writerow(["", *result.vars])
    for i, row in enumerate(result.rows[:k]):
        writer.writerow([i, *(_cell(row[v].value) if v in row else "" for v in result.vars)])
    return out.getvalue()


def _with_prefixes(query: str) -> str:
    """The query with WDQS's predeclared prefixes it uses and does not declare itself put in front."""
    used = [name for name in WDQS_PREFIXES if re.search(rf"(?<![\w:]){name}:", query)
            and not re.search(rf"(?i)PREFIX\s+{name}:", query)]
    return "".join(f"PREFIX {name}: <{WDQS_PREFIXES[name]}>\n" for name in used) + query


def _cell(value: str) -> str:
    match = _ENTITY_IRI.match(value)
    return match.group(1) if match else value


_LANG = {"type": "string", "description": "language code for labels and descriptions (default: 'en')"}
_ID = {"type": "string", "description": 'a QID or PID such as "Q42" or "P31"'}
# how --llm gold asks for the subjects of a statement (the tools show a statement from its subject only): SPARQL,
# as the server's workflow's step 4 says (a `str.format` template: {entity} and {relation} are filled in)
_INCOMING = ("SELECT ?item ?itemLabel WHERE {{ ?item wdt:{relation} wd:{entity} . "
             "OPTIONAL {{ ?item rdfs:label ?itemLabel . FILTER(LANG(?itemLabel) = \"en\") }} }}")


class WmdeProfile(ToolProfile):
    """The Wikidata MCP server's six tools and answer (see the module docstring)."""

    name = "wmde"
    source = "Wikidata MCP (Wikimedia Deutschland), github.com/philippesaade-wmde/WikidataMCP@f20ee7a wikidataMCP/tools.py"
    system = SYSTEM
    dialects = ("wikidata",)

    def tools(self) -> list[Tool]:
        query = {"type": "object", "properties": {"query": {"type": "string"}, "lang": _LANG}, "required": ["query"]}
        return [
            Tool("search_items", "Search Wikidata items (QIDs) by label, alias or a phrase expected to appear verbatim. "
                 "Returns lines `QID: label — description`.", query, search_items),
            Tool("search_properties", "Search Wikidata properties (PIDs) by label, alias or phrase. Returns lines "
                 "`PID: label — description`.", query, search_properties),
            Tool("get_statements", "The direct statements (property-value pairs) of an entity, one a line: "
                 "`Entity (QID): Property (PID): Value`.",
                 {"type": "object", "properties": {"entity_id": _ID, "include_external_ids": {"type": "boolean"},
                                                   "lang": _LANG}, "required": ["entity_id"]}, get_statements),
            Tool("get_statement_values", "All values of one statement (entity-property pair), with rank and qualifiers.",
                 {"type": "object", "properties": {"entity_id": _ID, "property_id": {"type": "string", "description": 'a PID such as "P31"'},
                                                   "lang": _LANG}, "required": ["entity_id", "property_id"]},
                 get_statement_values,
                 hop_hint({"entity_id": "{entity}", "property_id": "{relation}"}, directions=("out",), compound=False)),
            Tool("get_instance_and_subclass_hierarchy", "The entity's place in the ontology: instance of (P31) and "
                 "subclass of (P279), as JSON, max_depth levels deep.",
                 {"type": "object", "properties": {"entity_id": _ID, "max_depth": {"type": "integer", "minimum": 0, "maximum": 10},
                                                   "lang": _LANG}, "required": ["entity_id"]},
                 get_instance_and_subclass_hierarchy),
            Tool("execute_sparql", "Run a SPARQL query on Wikidata and return up to K rows as CSV (semicolon-separated).",
                 {"type": "object", "properties": {"sparql": {"type": "string"}, "K": {"type": "integer", "minimum": 1, "maximum": 1000}},
                  "required": ["sparql"]}, execute_sparql, hop_hint({"sparql": _INCOMING, "K": 100}, directions=("in",), compound=False)),
            answer_tool(),
        ]
