"""What the leaders' tool profiles (`sog`, `kg-r1`, `graphwalker`, `wmde`) share: finding the entity a model
names (an id, or a name a tool showed, or a label of the KG), naming ids, and the raw relation under a
compound one.

The leaders' tools take an entity as an id (m.0abc, Q42) or as a name (KG-R1 and GraphWalker resolve names
to ids on their side); every lookup here goes through the `KG` facade of the run (`ToolContext.kgs`).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ....sparql.dialects import COMPOUND_SEP
from ....sparql.errors import InvalidIdentifier
from ...kg.facade import KG
from ...kg.model import Edge
from ..tools import ToolContext

__all__ = ["ONE_CALL", "by_name", "clean", "entity_ids", "far_name", "name_ids", "raw_relation"]


# every leader profile's system prompt ends so: kgfed's loop reads tool calls, not the sources' <think>/<kg-query>
# tags, and a small model that plans in prose first spends its reply cap before it calls anything
ONE_CALL = "Reply with tool calls only: no plan and no explanation before them."


def by_name(hint: dict[str, Any]) -> dict[str, Any]:
    """A hop hint (`tools.hop_hint`) saying the tool's results name entities by label, not by id: `--llm gold`
    then reads the entities it follows by the gold's labels (and calls the tool with their ids)."""
    return {"hop": {**hint["hop"], "names": True}}


def clean(text: str) -> str:
    """An argument as the model wrote it, without surrounding blanks and quotes (KG-R1 strips them too)."""
    return text.strip().strip('"').strip("'").strip()


def _id_kg(ctx: ToolContext, text: str) -> KG | None:
    """The KG whose dialect takes `text` as an entity id, if any."""
    for kg in ctx.kgs.values():
        try:
            kg.check(text)
        except InvalidIdentifier:
            continue
        return kg
    return None


async def entity_ids(ctx: ToolContext, text: str) -> tuple[KG | None, list[str]]:
    """The KG and the ids an entity argument names: the id itself, else the ids a tool result showed under that
    name, else the ids whose label or alias it is exactly; (None, []) when nothing matches."""
    text = clean(text)
    kg = _id_kg(ctx, text)
    if kg is not None:
        return kg, [text]
    shown = [ident for ident, name in ctx.names.items() if name == text]
    for kg in ctx.kgs.values():
        mine = [ident for ident in shown if _takes(kg, ident)]
        if mine:
            return kg, mine
    if not text:
        return None, []
    for kg in ctx.kgs.values():
        found = await ctx.timed(kg.match_labels([text]))
        hits = [hit.id for hit in found.get(text, ())]
        if hits:
            return kg, hits
    return None, []


def _takes(kg: KG, ident: str) -> bool:
    try:
        kg.check(ident)
    except InvalidIdentifier:
        return False
    return True


async def name_ids(ctx: ToolContext, kg: KG, ids: Iterable[str]) -> dict[str, str]:
    """id -> name (the label, else the id itself) for ids not named yet; each is noted as shown (`ctx.saw`)."""
    ids = list(dict.fromkeys(ids))
    missing = [i for i in ids if i not in ctx.names]
    if missing:
        labels = await ctx.timed(kg.labels(missing))
        for ident in missing:
            label = labels.get(ident)
            ctx.saw(ident, label.label if label is not None else None)
    return {i: ctx.names.get(i, i) for i in ids}


def far_name(ctx: ToolContext, edge: Edge) -> str:
    """The far end of an edge as the leaders print it: its name, else its id (a literal: its value); noted as shown."""
    if edge.literal:
        return edge.entity
    if edge.label:
        ctx.saw(edge.entity, edge.label)
    return edge.label or ctx.names.get(edge.entity) or edge.entity


def raw_relation(relation: str) -> str:
    """The relation an entity has to a mediator (CVT) node: the first part of a compound `r1|r2`."""
    return relation.split(COMPOUND_SEP, 1)[0]
