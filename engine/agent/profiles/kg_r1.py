"""The `kg-r1` tool profile: KG-R1's retrieval operations over kgfed's engine.

Source: Song et al., "Efficient and Transferable Agentic Knowledge Graph RAG via Reinforcement Learning"
(KG-R1, arXiv:2509.26383), code https://github.com/Jinyeop3110/KG-R1 at 7538a53: the actions of
`kg_r1/search/actions.py` (get_relations_in, get_relations_out, get_entities_in, get_entities_out,
get_conditional_relations; the older names get_head_relations/get_tail_relations/get_head_entities/
get_tail_entities are aliases there), the prompt `detailed_flat_turn7` of
`verl/trainer/ppo/prompt_augmentation_kg.py` (at most 7 queries) and the flat relation format its
evaluation server sets (`KG_RELATION_FORMAT=flat`). The result texts are the actions' texts, word for word.

An entity is named as KG-R1 names it: by its name (every entity of the KG carrying that name), or by its
id (m.02mjmr, Q42). Relations are the KG's raw ones: on Freebase a relation into a mediator (CVT) node
shows the CVT's id, whose relations are asked next, as in KG-R1's subgraphs. Where KG-R1 shuffles a
relation list (for fair truncation in training) kgfed sorts it, so a run is repeatable. Every lookup is
the `KG` facade's (`relations`, `neighbors_many`, `labels`, `match_labels`).
"""
from __future__ import annotations

from typing import Any

from ....sparql.errors import InvalidIdentifier
from ...kg.facade import KG
from ..tools import Tool, ToolContext, ToolError, ToolProfile, answer_tool, hop_hint
from ._leaders import ONE_CALL, by_name, clean, entity_ids, far_name, raw_relation

SYSTEM = """Answer the given question. You can query the knowledge graph with the tools below, up to 7 queries \
across multiple reasoning turns. If you encounter a KG-related error, read the error message carefully and correct \
your query.

- get_relations_out(entity): Returns outgoing relations where the entity is the subject/head (entity → relation → ?).
- get_relations_in(entity): Returns incoming relations where the entity is the object/tail (? → relation → entity).
- get_entities_out(entity, relation): Returns entities connected from the given entity by the specified relation \
(entity → relation → ?).
- get_entities_in(entity, relation): Returns entities from which the given entity is connected by the specified \
relation (? → relation → entity).

Always prefer information retrieved from the KG over your internal knowledge. Build upon information from previous \
turns to answer complex multi-step questions. Entities are names ("Barack Obama") or ids ("m.02mjmr", "Q42"); \
relations are copied exactly from the results ("people.person.nationality"). When you have the answer, call answer \
with the answer entities' names exactly as the results wrote them."""
SYSTEM += " " + ONE_CALL

_ENTITY = {"type": "string", "description": "an entity name (\"Barack Obama\") or id (\"m.02mjmr\", \"Q42\")"}
_RELATION = {"type": "string", "description": "a relation exactly as a result wrote it (\"people.person.nationality\")"}


def _entity_schema(**more: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"entity": _ENTITY, **more}, "required": ["entity", *more]}


async def _entity(ctx: ToolContext, text: str) -> tuple[KG, list[str], str]:
    """The KG, the ids an entity argument names and the name to print; `Entity "X" not found in KG` otherwise."""
    kg, ids = await entity_ids(ctx, text)
    if kg is None or not ids:
        raise ToolError(f'Entity "{clean(text)}" not found in KG')
    return kg, ids, clean(text)


def _relation_id(kg: KG, text: str) -> str:
    """A relation as written (`P27` or `P27 (country of citizenship)` on Wikidata), checked by the dialect."""
    relation = clean(text).split(" (", 1)[0].strip()
    try:
        return kg.dialect.check_relation(relation)
    except InvalidIdentifier:
        raise ToolError(f'Relation "{clean(text)}" not found in KG') from None


async def _relations(ctx: ToolContext, kg: KG, ids: list[str], direction: str) -> list[str]:
    """The raw relations of the ids in one direction (a compound `r1|r2` is its `r1`, into the CVT), sorted."""
    found = await ctx.timed(kg.relations_many(ids, direction))
    shown: dict[str, None] = {}
    for answer in found.values():
        for rel in answer:
            raw = raw_relation(rel.relation)
            shown[f"{raw} ({rel.label})" if rel.label and raw == rel.relation else raw] = None
    return sorted(shown)


async def _relations_text(args: dict[str, Any], ctx: ToolContext, direction: str, word: str) -> str:
    """KG-R1's text for one direction's relations (`word`: outgoing or incoming)."""
    kg, ids, name = await _entity(ctx, args["entity"])
    found = await _relations(ctx, kg, ids, direction)
    if not found:
        return f'No {word} relations found for entity "{name}" in knowledge graph'
    return f'{word.capitalize()} relations for entity "{name}":\n' + ", ".join(found)


async def get_relations_out(args: dict[str, Any], ctx: ToolContext) -> str:
    return await _relations_text(args, ctx, "out", "outgoing")


async def get_relations_in(args: dict[str, Any], ctx: ToolContext) -> str:
    return await _relations_text(args, ctx, "in", "incoming")


async def _entities(ctx: ToolContext, args: dict[str, Any], direction: str) -> tuple[str, str, list[str]]:
    kg, ids, name = await _entity(ctx, args["entity"])
    relation = _relation_id(kg, args["relation"])
    found = await ctx.timed(kg.neighbors_many([(i, relation, direction) for i in ids]))
    names = {far_name(ctx, edge) for edges in found.values() for edge in edges}
    return name, clean(args["relation"]), sorted(names)


async def get_entities_out(args: dict[str, Any], ctx: ToolContext) -> str:
    name, relation, found = await _entities(ctx, args, "out")
    if not found:
        return f'No entities found outgoing via relation "{relation}" from "{name}" in knowledge graph'
    return f'Entities outgoing via relation "{relation}" from "{name}": {", ".join(found)}'


async def get_entities_in(args: dict[str, Any], ctx: ToolContext) -> str:
    name, relation, found = await _entities(ctx, args, "in")
    if not found:
        return f'No entities found incoming via relation "{relation}" to "{name}" in knowledge graph'
    return f'Entities incoming via relation "{relation}" to "{name}": {", ".join(found)}'


async def get_conditional_relations(args: dict[str, Any], ctx: ToolContext) -> str:
    kg, ids, name = await _entity(ctx, args["entity"])
    concept = clean(args["concept"])
    found = [r for r in await _relations(ctx, kg, ids, "out") if "." in r and r.split(".", 1)[0].lower() == concept.lower()]
    if not found:
        return f'No relations found for entity "{name}" with concept "{concept}" in knowledge graph'
    return f'Relations for entity "{name}" with concept "{concept}": {", ".join(found)}'


class KgR1Profile(ToolProfile):
    """KG-R1's five retrieval actions and answer (see the module docstring)."""

    name = "kg-r1"
    source = "KG-R1, arXiv:2509.26383; github.com/Jinyeop3110/KG-R1@7538a53 kg_r1/search/actions.py"
    system = SYSTEM
    dialects = ("freebase", "wikidata")

    def tools(self) -> list[Tool]:
        hop = {"entity": "{entity}", "relation": "{relation}"}
        return [
            Tool("get_relations_out", "Outgoing relations where the entity is the subject/head (entity → relation → ?).",
                 _entity_schema(), get_relations_out),
            Tool("get_relations_in", "Incoming relations where the entity is the object/tail (? → relation → entity).",
                 _entity_schema(), get_relations_in),
            Tool("get_entities_out", "Entities connected from the entity by the relation (entity → relation → ?).",
                 _entity_schema(relation=_RELATION), get_entities_out, by_name(hop_hint(hop, directions=("out",), compound=False))),
            Tool("get_entities_in", "Entities from which the entity is connected by the relation (? → relation → entity).",
                 _entity_schema(relation=_RELATION), get_entities_in, by_name(hop_hint(hop, directions=("in",), compound=False))),
            Tool("get_conditional_relations", "Outgoing relations of the entity whose first part is the concept "
                 "(people, location, ...).", _entity_schema(concept={"type": "string", "description": "e.g. people"}),
                 get_conditional_relations),
            answer_tool(),
        ]
