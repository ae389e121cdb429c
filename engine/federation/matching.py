"""The one embedding matcher: cosine similarities of two lists of texts, and the clear winners among them.

Alignment (`align.Aligner`'s SBERT rule, `subgraph`'s merge), INSES's similarity expansion
(`methods.inses.similar_nodes`), the hypergraph's synonym edges (`hypergraph.add_synonyms`) and PoG's
entity location (`methods.pog.PoG.locate`) all decide "is this the same thing?" here: a pair must reach
`threshold`, and a winner must lead its runner-up by `margin` (two equally similar candidates: no
match). Callers rule candidates out beforehand by setting their score to `-inf` — that is where each
applies its label-ambiguity guard (a name two entities of one KG share links neither).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np


async def cosine_matrix(embedder: Any, rows: Sequence[str], columns: Sequence[str] | None = None) -> np.ndarray:
    """rows × columns cosine similarities (rows × rows without `columns`), all texts encoded in one call."""
    import numpy as np

    rows = list(rows)
    if columns is None:
        vectors = np.asarray(await embedder.encode(rows))
        return vectors @ vectors.T
    vectors = np.asarray(await embedder.encode(rows + list(columns)))
    return vectors[:len(rows)] @ vectors[len(rows):].T


def best_matches(scores, threshold: float, margin: float, *, mutual: bool) -> list[tuple[int, int, float]]:
    """(row, column, score) for each row whose best column reaches `threshold` and leads the row's
    runner-up by `margin`; with `mutual`, the row must also be its column's clear winner. `-inf` = not a candidate."""
    import numpy as np

    scores = np.asarray(scores, dtype=float)
    if scores.size == 0:
        return []

    def clear(values, best: int) -> bool:
        top = values[best]
        rest = np.delete(values, best)
        rest = rest[np.isfinite(rest)]
        return bool(top >= threshold and (rest.size == 0 or top - rest.max() >= margin))

    out = []
    for r in range(scores.shape[0]):
        c = int(np.argmax(scores[r]))
        if not np.isfinite(scores[r, c]) or not clear(scores[r], c):
            continue
        if mutual and (int(np.argmax(scores[:, c])) != r or not clear(scores[:, c], r)):
            continue
        out.append((r, c, float(scores[r, c])))
    return out
