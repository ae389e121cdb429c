"""The `kgfed` tool profile: the engine's own 1-hop operations as tools (the default of `--param tools=`).

search_entities, relations, neighbors and labels are the `KG` facade's calls (batched, cached, ids
validated); sparql runs a read-only query through `sparql.guard` (SELECT/ASK only, no SERVICE, no FROM,
at most `ToolContext.sparql_rows` rows) under the KG's query bounds; answer ends the loop. The same
operations the MCP server offers (`engine/mcp/service.py`), in a text the model reads line by line:
every entity a result shows is written `ID: name` at the start of its line (`; ` then any detail), which
is also how `--llm gold` reads the results back.
"""
from __future__ import annotations

from typing import Any

from ...kg.facade import KG
from ...kg.model import Edge
from ..tools import Tool, ToolContext, ToolError, ToolProfile, answer_tool, hop_hint

DEFAULT_NEIGHBORS = 100
MAX_NEIGHBORS = 500
_KG = {"type": "string", "description": "the KG to ask (optional when an id says which, or when there is one KG)"}
_DIRECTION = {"type": "string", "enum": ["out", "in"],
              "description": "out: the entity is the subject; in: the entity is the object"}

SYSTEM = """You answer questions by exploring knowledge graphs with tools. Entities have ids (Freebase: m.0abc, \
Wikidata: Q42); relations have ids (Freebase: people.person.nationality, or r1|r2 across an unnamed node; \
Wikidata: P27). Start from the topic entities of the question: list their relations, follow the relations \
that lead towards the answer with neighbors, and call answer with the answer entities' names or ids as the \
tools showed them, best first. Give no answer you did not see in a tool result; answer [] when you cannot \
find one."""


def _short(text: str | None, width: int = 80) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[:width - 1] + "…"


async def search_entities(args: dict[str, Any], ctx: ToolContext) -> str:
    text = args["text"].strip()
    if not text:
        raise ToolError("search_entities: empty text: give a label such as 'Douglas Adams'")
    kgs = [ctx.kg_named(args["kg"])] if args.get("kg") else list(ctx.kgs.values())
    found = await ctx.gather(*(kg.search(text, args.get("limit", 10)) for kg in kgs))
    lines = []
    for kg, hits in zip(kgs, found):
        for hit in hits:
            ctx.saw(hit.id, hit.label)
            detail = f"; {_short(hit.description)}" if hit.description else ""
            lines.append(f"{hit.id}: {hit.label or '(no name)'}{detail}" + (f"; kg {kg.name}" if len(ctx.kgs) > 1 else ""))
    return "\n".join(lines) or f"no entity labelled {text!r}"


async def relations(args: dict[str, Any], ctx: ToolContext) -> str:
    entity = args["entity"]
    kg = ctx.kg_for(entity, args.get("kg"))
    found = await ctx.timed(kg.relations(entity, args.get("direction", "both")))
    lines = [f"{'->' if r.direction == 'out' else '<-'} {r.relation}" + (f": {r.label}" if r.label else "") for r in found]
    name = ctx.names.get(entity)
    head = f"{len(lines)} relations of {entity}" + (f" ({name})" if name else "") + " (-> out, <- in):"
    return head + "\n" + "\n".join(lines) if lines else f"no relations of {entity}"


def _edge_line(edge: Edge, ctx: ToolContext) -> str:
    if edge.literal:
        return f'value: "{_short(edge.entity, 200)}"'
    ctx.walked(edge)
    via = f"; via {', '.join(edge.via)}" if edge.via else ""
    return f"{edge.entity}: {edge.label or '(no name)'}{via}"


async def neighbors(args: dict[str, Any], ctx: ToolContext) -> str:
    entity, relation, direction = args["entity"], args["relation"], args.get("direction", "out")
    limit = args.get("limit", DEFAULT_NEIGHBORS)
    kg = ctx.kg_for(entity, args.get("kg"))
    kg.dialect.check_relation(relation)
    found = await ctx.timed(kg.neighbors(entity, relation, direction, limit=limit))
    lines = [_edge_line(e, ctx) for e in found]
    arrow = f"-[{relation}]->" if direction == "out" else f"<-[{relation}]-"
    name = ctx.names.get(entity)
    head = f"{len(lines)} neighbours {entity}{f' ({name})' if name else ''} {arrow}:"
    more = f"\n(the first {limit}: raise limit for more)" if len(lines) >= limit else ""
    return head + "\n" + "\n".join(lines) + more if lines else f"no {direction} neighbours of {entity} over {relation}"


async def labels(args: dict[str, Any], ctx: ToolContext) -> str:
    ids = list(dict.fromkeys(args["ids"]))
    if not ids:
        raise ToolError("labels: no ids: give at least one, e.g. [\"Q42\"]")
    by_kg: dict[str, list[str]] = {}
    for ident in ids:
        by_kg.setdefault(ctx.kg_for(ident, args.get("kg")).name, []).append(ident)
    found = await ctx.gather(*(ctx.kgs[name].labels(group) for name, group in by_kg.items()))
    lines = []
    for got in found:
        for label in got.values():
            ctx.saw(label.id, label.label)
            detail = f"; {_short(label.description)}" if label.description else ""
            aka = f"; also {', '.join(label.aliases[:5])}" if label.aliases else ""
            lines.append(f"{label.id}: {label.label or '(no name)'}{detail}{aka}")
    return "\n".join(lines)


async def sparql(args: dict[str, Any], ctx: ToolContext) -> str:
    from ....sparql.guard import ServicePolicy, analyse

    kg: KG = ctx.kg_named(args.get("kg"))
    checked = analyse(args["query"], ServicePolicy(), ctx.sparql_rows).text  # read-only, no SERVICE, rows capped
    result = await ctx.timed(kg.select(checked))
    rows = result.rows[:ctx.sparql_rows]
    if not result.vars:
        return "(no variables)"

    def cell(term) -> str:
        short = kg.dialect.short(term.value) if term.is_iri else None
        return short or _short(term.value, 80)

    body = ["\t".join(cell(row[v]) if v in row else "" for v in result.vars) for row in rows]
    note = [f"(truncated to {ctx.sparql_rows} rows)"] if len(result.rows) > ctx.sparql_rows else []
    return "\n".join(["\t".join(result.vars), *body, *note])


class KgfedProfile(ToolProfile):
    """search_entities, relations, neighbors, labels, a guarded sparql, answer (see the module docstring)."""

    name = "kgfed"
    source = "kgfed's own KG facade (the operations of its MCP server)"
    system = SYSTEM

    def tools(self) -> list[Tool]:
        entity = {"type": "string", "description": "an entity id, e.g. m.0abc or Q42"}
        return [
            Tool("search_entities", "Find entities whose name is the text exactly (ids with names).",
                 {"type": "object", "properties": {"text": {"type": "string"}, "kg": _KG,
                                                   "limit": {"type": "integer", "minimum": 1, "maximum": 50}},
                  "required": ["text"]}, search_entities),
            Tool("relations", "List the relations of an entity (-> it is the subject, <- it is the object).",
                 {"type": "object", "properties": {"entity": entity, "direction": {**_DIRECTION, "enum": ["out", "in", "both"]},
                                                   "kg": _KG}, "required": ["entity"]}, relations),
            Tool("neighbors", "The entities linked to an entity by one relation, in one direction (ids with names).",
                 {"type": "object", "properties": {"entity": entity, "relation": {"type": "string", "description": "a relation id"},
                                                   "direction": _DIRECTION, "kg": _KG,
                                                   "limit": {"type": "integer", "minimum": 1, "maximum": MAX_NEIGHBORS}},
                  "required": ["entity", "relation"]}, neighbors,
                 hop_hint({"entity": "{entity}", "relation": "{relation}", "direction": "{direction}"})),
            Tool("labels", "Names, descriptions and aliases of entity or relation ids.",
                 {"type": "object", "properties": {"ids": {"type": "array", "items": {"type": "string"}}, "kg": _KG},
                  "required": ["ids"]}, labels),
            Tool("sparql", "Run a read-only SPARQL SELECT or ASK on one KG (no SERVICE; rows capped).",
                 {"type": "object", "properties": {"query": {"type": "string"}, "kg": _KG}, "required": ["query"]}, sparql),
            answer_tool(),
        ]
