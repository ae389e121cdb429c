"""The `graphwalker` tool profile: GraphWalker's two KG calls, get_relations and get_triples, with CVT flattening.

Source: GraphWalker (XuShuwenn/GraphWalker at c9877ff, "GraphWalker-7B"), the evaluation client
`slime/examples/graphwalker/src/eval/kg_augmented_client.py` (the two call forms, the top 10 relations, the
first 4 relations of a get_triples call, the `[head, relation, tail]` lines, the error texts), the KG client
`slime/examples/graphwalker/src/tools/direct_sparql_client.py` (incoming and outgoing relations, the
"meaningless" relations dropped, CVT flattening: a mediator node's relations joined to the one that reached
it with their common prefix removed, at most 8 flattened relations, 5 triples a relation) and the prompt
`slime/examples/graphwalker/prompts/prompts.py`. Freebase only (it queries `ns:` MIDs and CVTs).

Where GraphWalker draws at random (a sample of 5 triples, a shuffle before its LLM relation filter) kgfed
takes the first ones in order, and where it asks a second LLM to filter relations it keeps the BM25 ranking
against the question that precedes it (GraphWalker's own first stage), so a run is repeatable and costs one
model. A flattened relation is named once per (relation, CVT relation) pair, without GraphWalker's
per-CVT-node suffix (`_1`, `_2`). Every lookup is the `KG` facade's: `relations_many`, `neighbors_many`
(a compound `r1|r2` of kgfed is GraphWalker's flattened relation), `labels`, `match_labels`.
"""
from __future__ import annotations

from typing import Any

from ....sparql.dialects import COMPOUND_SEP
from ...kg.facade import KG
from ...kg.model import Relation
from ...toolbox.pruning import bm25_scores, relation_text
from ..tools import Tool, ToolContext, ToolError, ToolProfile, answer_tool, hop_hint
from ._leaders import ONE_CALL, by_name, clean, entity_ids, far_name, name_ids, raw_relation

TOP_K = 10  # relations a get_relations call shows (kg_top_k)
RELATIONS_PER_CALL = 4  # get_triples queries the first 4 relations it is given
TRIPLES_PER_RELATION = 5  # limit_per_relation
TRIPLES_WITH_CVT = 15  # a relation that reached CVT nodes keeps up to 15 plain triples
FLATTENED = 8  # flattened (CVT) relations a get_triples call keeps
MEANINGLESS = (
    "type.object.type", "type.type.instance", "type.type.properties", "type.property.schema", "common.topic.article",
    "common.topic.image", "common.image_source", "common.document", "common.webpage", "common.license",
    "common.topic.description", "freebase.type_hints.included_types", "freebase.property_hints.best_value_properties",
    "freebase.property_hints.mediator", "freebase.property_hints.unit", "freebase.property_hints.expected_type",
    "freebase.type_hints.enumerationtype.object.key", "type.object.permission", "type.object.profile",
    "type.object.servicecommon.topic.topic_equivalent_webpage", "common.topic.topic_equivalent",
)  # GraphWalker's skip list as its code has it (two missing commas join four entries into two)

SYSTEM = """You are a helpful assistant that answers questions based on knowledge graphs. You can query the \
knowledge base provided to you to answer the question.

Available query functions:
- get_relations("entity_name"): Returns all relations (incoming and outgoing) for the entity.
- get_triples("entity_name", ["relation1", "relation2", ...]): Returns triples for the entity limited to the \
specified relations.

Instructions:
1. Begin your search from the initial entities with get_relations. Use the entity name exactly as shown.
2. Before calling get_triples, you must have seen the entity's relations. Give get_triples the candidate relations \
ranked by relevance to the question; the top 4 are queried. Copy each relation exactly as it appears.
3. Answer only from the KG results: call answer with the exact, complete entity names from the retrieved triples \
(not a MID such as m.01234). If several entities satisfy the question, list them all."""
SYSTEM += " " + ONE_CALL


def _meaningless(relation: str) -> bool:
    return any(relation == p or relation.startswith(p + ".") for p in MEANINGLESS)


def flatten(first: str, second: str) -> str:
    """GraphWalker's name for two relations across a CVT: the common dotted prefix removed from the first, then joined."""
    common = 0
    for a, b in zip(first.split("."), second.split(".")):
        if a != b:
            break
        common += 1
    head = ".".join(first.split(".")[common:]) if common else first
    return f"{head}.{second}"


def flat_name(relation: Relation | str, direction: str) -> str:
    """The flattened name of a compound `r1|r2` (out: r1 then r2; in: the CVT's far relation first, as GraphWalker)."""
    rel = relation if isinstance(relation, str) else relation.relation
    first, second = rel.split(COMPOUND_SEP, 1)
    return flatten(first, second) if direction == "out" else flatten(second, first)


async def _entity(ctx: ToolContext, text: str) -> tuple[KG, str, str]:
    kg, ids = await entity_ids(ctx, text)
    if kg is None or not ids:
        raise ToolError("Invalid entity. Use an entity returned by the previous step and copy it exactly.")
    (name,) = (await name_ids(ctx, kg, ids[:1])).values()
    return kg, ids[0], name


async def _all_relations(ctx: ToolContext, kg: KG, ident: str) -> list[Relation]:
    found = await ctx.timed(kg.relations_many([ident], "both"))
    return list(found[ident])


def _raw(relations: list[Relation]) -> list[str]:
    """The entity's relations as GraphWalker lists them: raw ones (into a CVT: the first part), meaningless dropped."""
    names = dict.fromkeys(raw_relation(r.relation) for r in relations)
    return [r for r in names if not _meaningless(r)]


def _ranked(relations: list[str], question: str) -> list[str]:
    """BM25 against the question (GraphWalker's `rank_by_similarity`), ties in order; the top 10."""
    if not question or len(relations) <= TOP_K:
        return relations[:TOP_K]
    scores = bm25_scores(question, [relation_text(r) for r in relations])
    order = sorted(range(len(relations)), key=lambda i: -scores[i])
    return [relations[i] for i in order[:TOP_K]]


async def get_relations(args: dict[str, Any], ctx: ToolContext) -> str:
    kg, ident, _ = await _entity(ctx, args["entity"])
    shown = _ranked(_raw(await _all_relations(ctx, kg, ident)), ctx.question)
    return "\n".join(shown) or "No relations found."


def _asked(relations: list[str], known: list[Relation]) -> tuple[list[str], dict[str, tuple[str, str]]]:
    """The first 4 distinct relations asked and the compound (relation, direction) each flattened name stands for;
    a relation the entity does not have is refused as GraphWalker refuses one outside the latest list."""
    flat = {flat_name(r, r.direction): (r.relation, r.direction) for r in known if COMPOUND_SEP in r.relation}
    raw = set(_raw(known))
    asked = list(dict.fromkeys(clean(r) for r in relations))[:RELATIONS_PER_CALL]
    for rel in asked:
        if rel not in raw and rel not in flat:
            listed = "\n".join(sorted(raw))
            raise ToolError(f"The relation '{rel}' is not in the latest predicate list. Choose predicates from the list "
                            f"below:\n\n{listed}")
    return asked, flat


def _plan(ident: str, asked: list[str], known: list[Relation],
          flat: dict[str, tuple[str, str]]) -> list[tuple[str, list[tuple[str, str, str]], list[tuple[str, str, str]]]]:
    """Per relation asked: its plain lookups (both ways) and its compound ones (the CVTs it reaches, flattened);
    a flattened name asked again is its compound lookup."""
    plan: list[tuple[str, list[tuple[str, str, str]], list[tuple[str, str, str]]]] = []
    for rel in asked:
        if rel in flat:
            plan.append((rel, [], [(ident, *flat[rel])]))
            continue
        compounds = [(ident, r.relation, r.direction) for r in known if COMPOUND_SEP in r.relation
                     and raw_relation(r.relation) == rel and not _meaningless(r.relation.split(COMPOUND_SEP)[1])]
        plan.append((rel, [(ident, rel, "out"), (ident, rel, "in")], compounds))
    return plan


async def get_triples(args: dict[str, Any], ctx: ToolContext) -> str:
    kg, ident, name = await _entity(ctx, args["entity"])
    known = await _all_relations(ctx, kg, ident)
    asked, flat = _asked(args["relations"], known)
    plan = _plan(ident, asked, known, flat)
    jobs = list(dict.fromkeys(job for _, plain, compound in plan for job in (*plain, *compound)))
    found = await ctx.timed(kg.neighbors_many(jobs)) if jobs else {}
    lines: list[str] = []
    blocks: dict[str, None] = {}
    for rel, plain, compound in plan:
        edges = [(job[2], edge) for job in plain for edge in found[job]]
        named = [(d, e) for d, e in edges if e.literal or e.label]
        cap = TRIPLES_WITH_CVT if len(named) < len(edges) else TRIPLES_PER_RELATION
        lines += [_line(ctx, name, rel, d, e) for d, e in named[:cap]]
        for job in compound:
            shown = [e for e in found[job] if e.entity != ident][:TRIPLES_PER_RELATION]
            blocks["\n".join(_line(ctx, name, flat_name(job[1], job[2]), job[2], e) for e in shown)] = None
    lines += [block for block in blocks if block][:FLATTENED]
    return "\n".join(lines) or "No triples found."


def _line(ctx: ToolContext, name: str, relation: str, direction: str, edge: Any) -> str:
    far = far_name(ctx, edge)
    return f"[{name}, {relation}, {far}]" if direction == "out" else f"[{far}, {relation}, {name}]"


class GraphWalkerProfile(ToolProfile):
    """GraphWalker's get_relations and get_triples (CVTs flattened) and answer (see the module docstring)."""

    name = "graphwalker"
    source = "GraphWalker, github.com/XuShuwenn/GraphWalker@c9877ff slime/examples/graphwalker (eval client, KG client)"
    system = SYSTEM
    dialects = ("freebase",)

    def tools(self) -> list[Tool]:
        entity = {"type": "string", "description": "an entity name exactly as shown (or its MID, m.0abc)"}
        return [
            Tool("get_relations", "All relations (incoming and outgoing) of the entity, the 10 most relevant.",
                 {"type": "object", "properties": {"entity": entity}, "required": ["entity"]}, get_relations),
            Tool("get_triples", "Triples of the entity for the given relations (the first 4 are queried); relations "
                 "into unnamed CVT nodes come back flattened.",
                 {"type": "object", "properties": {"entity": entity, "relations": {
                     "type": "array", "items": {"type": "string"}, "description": "relations ranked by relevance"}},
                  "required": ["entity", "relations"]}, get_triples,
                 by_name(hop_hint({"entity": "{entity}", "relations": ["{relation}"]}, compound=False))),
            answer_tool(),
        ]
