"""The `sog` tool profile: Search-on-Graph's single `search(entity, direction, properties?)` tool.

Source: Sun, Yu, Gotti, Mo, Wu, Hui, Nie, "Search-on-Graph: Iterative Informed Navigation for Large
Language Model Reasoning on Knowledge Graphs", arXiv:2510.08825 (v1 and v2), the Search function (one tool,
observe-then-navigate). No public code was found (docs/agent-tools.md says where it was looked for); the
interface follows the paper and issue 37: the neighbours of an entity in one direction as a markdown table;
past 50 neighbours a summary of the properties (each with its count) instead, after which the model names
the properties it wants; at most 1,000 rows a call.

Every call is the `KG` facade's: `relations(entity, direction)` then one `neighbors_many` over the
properties shown (batched, cached; a Freebase CVT is crossed by a compound `r1|r2`). Rows show the
neighbour's id beside its name, so a name the model answers with maps back to an id.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from ...kg.facade import KG
from ...kg.model import Edge, Relation
from ..tools import Tool, ToolContext, ToolError, ToolProfile, answer_tool, hop_hint
from ._leaders import ONE_CALL, clean, entity_ids, far_name, name_ids

SUMMARY_OVER = 50  # more neighbours than this: the property summary instead of the rows
ROW_CAP = 1000  # rows a call shows at most
DIRECTIONS = {"outgoing": "out", "incoming": "in"}

SYSTEM = """You answer questions by navigating a knowledge graph with one tool, search. Observe, then navigate: \
start from a topic entity of the question, call search(entity, direction) to see its outgoing (the entity is the \
subject) or incoming (the entity is the object) neighbours, decide which property leads towards the answer, and \
call search again from the entity you reach. When an entity has more than 50 neighbours, search lists its \
properties with counts instead: call it again with properties=[...] to see their neighbours. Freebase \
properties written r1|r2 cross an unnamed mediator node. When you know the answer, call answer with the \
answer entities' ids or names as the tables showed them; answer [] if the graph does not hold it."""
SYSTEM += " " + ONE_CALL


def _cell(text: str) -> str:
    """A markdown table cell: one line, its pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _property(relation: Relation) -> str:
    """A property as the table writes it: its id, and its label when the KG has one (Wikidata)."""
    return f"{relation.relation} ({relation.label})" if relation.label else relation.relation


def _table(header: tuple[str, ...], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _chosen(found: list[Relation], wanted: list[str] | None) -> tuple[list[Relation], list[str]]:
    """The relations asked for (by id, or as the summary wrote them) and the names matching none."""
    if wanted is None:
        return found, []
    by_text: dict[str, Relation] = {}
    for rel in found:
        by_text.setdefault(rel.relation, rel)
        if rel.label:
            by_text.setdefault(f"{rel.relation} ({rel.label})", rel)
            by_text.setdefault(rel.label, rel)
    picked = [by_text[clean(w)] for w in wanted if clean(w) in by_text]
    return list(dict.fromkeys(picked)), [w for w in wanted if clean(w) not in by_text]


async def _resolve(ctx: ToolContext, entity: str) -> tuple[KG, str]:
    kg, ids = await entity_ids(ctx, entity)
    if kg is None or not ids:
        forms = "; ".join(f"{g.dialect.name}: {g.dialect.id_example}" for g in ctx.kgs.values())
        raise ToolError(f"search: unknown entity {clean(entity)[:60]!r}: give an id from a table ({forms})")
    return kg, ids[0]


def _row(ctx: ToolContext, relation: Relation, edge: Edge) -> tuple[str, str, str]:
    """(property, id, name); a literal has no id, a nameless node (a CVT) no name."""
    if edge.literal:
        return _property(relation), "", far_name(ctx, edge)
    name = far_name(ctx, edge)
    return _property(relation), edge.entity, "" if name == edge.entity else name


async def search(args: dict[str, Any], ctx: ToolContext) -> str:
    kg, ident = await _resolve(ctx, args["entity"])
    direction = DIRECTIONS[args["direction"]]
    found = await ctx.timed(kg.relations(ident, direction))
    relations, unknown = _chosen(list(found), args.get("properties"))
    (name,) = (await name_ids(ctx, kg, [ident])).values()
    head = f"{args['direction'].capitalize()} neighbours of {name} ({ident})"
    note = f"\nNot {args['direction']} properties of {ident}: {', '.join(map(clean, unknown))}" if unknown else ""
    if not relations:
        return f"{head}: none" + note
    edges = await ctx.timed(kg.neighbors_many([(ident, r.relation, direction) for r in relations], limit=ROW_CAP + 1))
    rows = [(rel, edge) for rel in relations for edge in edges[(ident, rel.relation, direction)]]
    if args.get("properties") is None and len(rows) > SUMMARY_OVER:
        return _summary(head, relations, rows) + note
    more = len(rows) > ROW_CAP
    shown = [_row(ctx, rel, edge) for rel, edge in rows[:ROW_CAP]]
    cut = f"\n(the first {ROW_CAP} rows; more exist: ask for fewer properties)" if more else ""
    partial = "\n(partial: the server cut the answer)" if edges.partial else ""
    return f"{head}: {_count(len(rows))}\n" + _table(("property", "id", "name"), shown) + cut + partial + note


def _count(n: int) -> str:
    return f"more than {ROW_CAP}" if n > ROW_CAP else str(n)


def _summary(head: str, relations: list[Relation], rows: list[tuple[Relation, Edge]]) -> str:
    """Past 50 neighbours: each property with its neighbour count (at most the row cap fetched a property)."""
    counts = Counter(rel.relation for rel, _ in rows)
    summary = sorted((_property(rel), _count(counts[rel.relation])) for rel in relations if counts[rel.relation])
    return (f"{head}: {_count(len(rows))} neighbours, more than {SUMMARY_OVER}; their properties (call search again "
            f"with properties=[...] to see the neighbours):\n" + _table(("property", "neighbours"), summary))


class SogProfile(ToolProfile):
    """Search-on-Graph's one search tool and answer (see the module docstring)."""

    name = "sog"
    source = "Search-on-Graph, arXiv:2510.08825 (the Search function); docs/agent-tools.md"
    system = SYSTEM
    dialects = ("freebase", "wikidata")

    def tools(self) -> list[Tool]:
        parameters = {"type": "object", "properties": {
            "entity": {"type": "string", "description": "the entity to search from: its id (m.0abc, Q42) or a name a table showed"},
            "direction": {"type": "string", "enum": list(DIRECTIONS),
                          "description": "outgoing: the entity is the subject; incoming: the entity is the object"},
            "properties": {"type": "array", "items": {"type": "string"},
                           "description": "optional: only these properties (as the summary listed them)"}},
            "required": ["entity", "direction"]}
        hint = hop_hint({"entity": "{entity}", "direction": "{direction}", "properties": ["{relation}"]},
                        words={"out": "outgoing", "in": "incoming"})
        return [Tool("search", "The neighbours of an entity in one direction as a markdown table (property, id, name); "
                     "past 50 neighbours a summary of its properties with counts; at most 1,000 rows.",
                     parameters, search, hint),
                answer_tool()]
