"""Topic entities given as ids, placed in every KG whose dialect takes them and named by their labels."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...sparql.errors import InvalidIdentifier, KgfedError


async def topics_from_ids(ids: Sequence[str], kgs: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """Each id in every KG whose dialect it fits, named by the KG's label (the id when unnamed)."""
    wanted: dict[str, list[str]] = {name: [] for name in kgs}
    for ident in ids:
        fits = []
        for name, kg in kgs.items():
            try:
                kg.check(ident)
            except InvalidIdentifier:
                continue
            fits.append(name)
            wanted[name].append(ident)
        if not fits:
            raise KgfedError(f"topic {ident!r} fits none of the KGs {', '.join(kgs)}: use m.0abc for Freebase, Q42 for Wikidata")
    topics: dict[str, dict[str, str]] = {}
    for name, kg_ids in wanted.items():
        labels = await kgs[name].labels(kg_ids) if kg_ids else {}
        topics[name] = {i: (labels[i].label if i in labels and labels[i].label else i) for i in kg_ids}
    return topics
