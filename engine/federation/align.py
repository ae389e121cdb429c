"""Entity alignment across KGs: Freebase mid ↔ Wikidata QID, each link with its method and confidence.

    aligner = Aligner({"freebase": fb, "wikidata": wd}, embedder=session.embedder)   # SBERT needs the embedder
    found = await aligner.align(["m.0d3k14", "Q42"])      # id -> [Alignment in each other KG]
    links = await aligner.align_pools({"freebase": mids, "wikidata": qids})   # one-to-one within sets

Methods, tried in this order for every id that is still unaligned:

- ``p646``: Wikidata's "Freebase ID" claims (``wdt:P646 "/m/0abc"``), one ``VALUES`` query per batch,
  mid → QID and QID → mid, through the KG's response cache (confidence 1.0);
- ``label``: exact label match against the other KG's labels and aliases, accepted only when exactly
  one entity there carries that name and no other entity here does (0.9 on a label, 0.75 on an alias);
- ``sbert``: label embeddings (descriptions added when resolving a name shared by several entities):
  the best candidate must reach ``threshold`` and lead the runner-up by ``margin``; in pools the
  match must also be mutual. Confidence is the cosine similarity.

Two KGs of one dialect share their ids (method ``id``). Per-id outcomes are kept in the cache root's
``alignments`` store (``kgfed.cache.alignments.AlignmentCache``: a directory or Redis) beside
the response cache, so a repeated alignment sends no query.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import unicodedata
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from ...cache.alignments import AlignmentCache, Outcome  # AlignmentCache: its old import path still works
from ...cache.root import open_store
from ...sparql.errors import InvalidIdentifier, KgfedError
from ..kg.facade import KG
from ..kg.model import Label
from .matching import best_matches, cosine_matrix

METHODS: tuple[str, ...] = ("p646", "label", "sbert")
RANK = {"id": 0, "p646": 0, "label": 1, "sbert": 2}  # merge order: identifiers first
LABEL_CONFIDENCE, ALIAS_CONFIDENCE = 0.9, 0.75
_CACHE_VERSION = "align-v1"


@dataclass(frozen=True, slots=True)
class Alignment:
    """`source` in KG `source_kg` is `target` in KG `target_kg`, found by `method` with `confidence`."""

    source_kg: str
    source: str
    target_kg: str
    target: str
    method: str
    confidence: float

    @property
    def ids(self) -> dict[str, str]:
        return {self.source_kg: self.source, self.target_kg: self.target}

    def reversed(self) -> Alignment:
        return Alignment(self.target_kg, self.target, self.source_kg, self.source, self.method, self.confidence)

    def to_json(self) -> dict[str, Any]:
        return {"source_kg": self.source_kg, "source": self.source, "target_kg": self.target_kg,
                "target": self.target, "method": self.method, "confidence": round(self.confidence, 4)}


def normalise_label(text: str) -> str:
    """Casefolded, NFKC-normalised, whitespace-folded label (for comparing names across KGs)."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _describe(label: Label, with_description: bool) -> str:
    """Text to embed: the label, plus the first clause of the description when asked and known."""
    text = label.label or ""
    if with_description and label.description:
        text += ", " + label.description.split(". ")[0][:120]
    return text


def _outcome(target: str | None = None, method: str | None = None, confidence: float = 0.0,
             ambiguous: Iterable[str] = ()) -> Outcome:
    return {"target": target, "method": method, "confidence": confidence, "ambiguous": list(ambiguous)}


class Aligner:
    """Aligns entities between the KGs of a federation (any number; pairs of Freebase/Wikidata dialects)."""

    def __init__(
        self,
        kgs: Mapping[str, KG],
        *,
        methods: Sequence[str] | None = None,
        embedder: Any = None,
        threshold: float = 0.9,
        margin: float = 0.05,
        cache: AlignmentCache | bool | None = True,
    ):
        if methods is None:  # every method; SBERT only with an embedder to score with (none is made up here)
            methods = METHODS if embedder is not None else tuple(m for m in METHODS if m != "sbert")
        unknown = [m for m in methods if m not in METHODS]
        if unknown:
            raise KgfedError(f"unknown alignment method {unknown[0]!r}: use some of {', '.join(METHODS)}")
        if "sbert" in methods and embedder is None:
            raise KgfedError("SBERT alignment needs an embedder: pass embedder= (a session's `embedder`), "
                             "or leave 'sbert' out of the alignment methods")
        if not kgs:
            raise KgfedError("alignment needs at least one KG: give e.g. --kg freebase,wikidata")
        self.kgs = dict(kgs)
        self.methods = tuple(methods)
        self.embedder = embedder
        self.threshold = threshold
        self.margin = margin
        if cache is True:
            first = next((kg.endpoint.cache for kg in self.kgs.values() if kg.endpoint.cache is not None), None)
            cache = AlignmentCache(store=open_store(first.spec, "alignments")) if first is not None else None
        self.cache: AlignmentCache | None = cache if isinstance(cache, AlignmentCache) else None

    # -- ids and KGs -------------------------------------------------------------------------------
    def kgs_of(self, entity: str) -> list[str]:
        """Names of the KGs whose dialect accepts `entity` as an entity id."""
        found = []
        for name, kg in self.kgs.items():
            try:
                kg.dialect.check_entity(entity)
            except InvalidIdentifier:
                continue
            found.append(name)
        return found

    def sources(self, ids: Iterable[str], kg: str | None = None) -> dict[str, list[str]]:
        """Each id with the KG(s) it belongs to; raises InvalidIdentifier for ids no KG accepts."""
        if kg is not None and kg not in self.kgs:
            raise KgfedError(f"unknown KG {kg!r}: this federation has {', '.join(self.kgs)}")
        out: dict[str, list[str]] = {}
        for entity in ids:
            if kg is not None:
                out[self.kgs[kg].check(entity)] = [kg]
                continue
            names = self.kgs_of(entity)
            if not names:
                shown = repr(entity) if len(repr(entity)) <= 60 else repr(entity)[:57] + "..."
                kinds = "; ".join(f"{n}: an id like {k.dialect.id_example or 'its own'}" for n, k in self.kgs.items())
                raise InvalidIdentifier(f"invalid entity id {shown}: expected an id of one of the KGs ({kinds})")
            out[entity] = names
        return out

    def _key(self, step: str, s: str, t: str, entity: str) -> str:
        parts = [_CACHE_VERSION, step, self.kgs[s].endpoint.name, self.kgs[s].dialect.name,
                 self.kgs[t].endpoint.name, self.kgs[t].dialect.name, entity]
        if step == "sbert":
            parts += [repr(self.threshold), repr(self.margin), str(getattr(self._embedder(), "model_id", "embedder"))]
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()

    async def _cached(self, step: str, s: str, t: str, ids: Sequence[str],
                      compute: Callable[[list[str]], Awaitable[dict[str, Outcome]]]) -> dict[str, Outcome]:
        """Outcomes per id from the alignment cache, computing (and storing) only the missing ones."""
        out: dict[str, Outcome] = {}
        todo: list[str] = []
        for entity in ids:
            hit = self.cache.get(self._key(step, s, t, entity)) if self.cache is not None else None
            if hit is None:
                todo.append(entity)
            else:
                out[entity] = hit
        if todo:
            fresh = await compute(todo)
            for entity in todo:
                out[entity] = fresh.get(entity) or _outcome()
                if self.cache is not None:
                    self.cache.set(self._key(step, s, t, entity), out[entity])
        return out

    # -- public API --------------------------------------------------------------------------------
    async def align(self, ids: Sequence[str], kg: str | None = None) -> dict[str, list[Alignment]]:
        """Counterparts of each id in every other KG (an id no method can place gets an empty list)."""
        sources = self.sources(ids, kg)
        jobs = [(s, t, [i for i, names in sources.items() if s in names])
                for s in self.kgs for t in self.kgs if s != t]
        jobs = [job for job in jobs if job[2]]
        results = await asyncio.gather(*(self._align_pair(s, t, batch) for s, t, batch in jobs))
        out: dict[str, list[Alignment]] = {i: [] for i in sources}
        for found in results:
            for entity, alignment in found.items():
                if alignment.target_kg not in sources[entity]:  # same-dialect KGs: the id is already there
                    out[entity].append(alignment)
        return out

    async def align_pools(self, pools: Mapping[str, Iterable[str]], *,
                          labels: Mapping[str, Mapping[str, str | None]] | None = None) -> list[Alignment]:
        """One-to-one alignments between the entity sets of each pair of KGs (what merging uses).

        Identifier and label links may point outside the pools; SBERT matches only pool against pool.
        `labels`: KG name → {id: its label, or None for none} the caller already holds (an expansion's
        edges name most entities); the label step asks the KG only for the other ids, and adds what it
        asked to these dicts (so the caller never asks them again).
        """
        labels = labels or {}
        checked = {}
        for name, ids in pools.items():
            if name not in self.kgs:
                raise KgfedError(f"unknown KG {name!r}: this federation has {', '.join(self.kgs)}")
            checked[name] = list(dict.fromkeys(self.kgs[name].check(i) for i in ids))
        pairs = [(s, t) for s, t in combinations(self.kgs, 2) if checked.get(s) or checked.get(t)]
        results = await asyncio.gather(*(self._pool_pair(s, t, checked.get(s, []), checked.get(t, []), labels)
                                         for s, t in pairs))
        return [a for found in results for a in found]

    # -- per pair ----------------------------------------------------------------------------------
    async def _align_pair(self, s: str, t: str, ids: list[str]) -> dict[str, Alignment]:
        outcomes = await self._resolved(s, t, ids)
        if "sbert" in self.methods:
            left = [i for i, o in outcomes.items() if o["target"] is None]
            if left:
                ambiguous = {i: outcomes[i]["ambiguous"] for i in left}
                outcomes.update(await self._cached("sbert", s, t, left, lambda todo: self._sbert_search(s, t, todo, ambiguous)))
        return {i: Alignment(s, i, t, o["target"], o["method"], o["confidence"]) for i, o in outcomes.items() if o["target"]}

    async def _pool_pair(self, s: str, t: str, a_ids: list[str], b_ids: list[str],
                         labels: Mapping[str, Mapping[str, str | None]] | None = None) -> list[Alignment]:
        labels = labels or {}
        forward, backward = await asyncio.gather(self._resolved(s, t, a_ids, labels.get(s)),
                                                 self._resolved(t, s, b_ids, labels.get(t)))
        found: dict[tuple[str, str], Alignment] = {}
        for entity, o in forward.items():
            if o["target"]:
                found.setdefault((entity, o["target"]), Alignment(s, entity, t, o["target"], o["method"], o["confidence"]))
        for entity, o in backward.items():
            if o["target"]:
                found.setdefault((o["target"], entity), Alignment(s, o["target"], t, entity, o["method"], o["confidence"]))
        if "sbert" in self.methods:
            done_a = {a for a, _ in found}
            done_b = {b for _, b in found}
            loose_a = [i for i in a_ids if i not in done_a and not forward[i]["ambiguous"]]
            loose_b = [j for j in b_ids if j not in done_b and not backward[j]["ambiguous"]]
            shared = {i: forward[i]["ambiguous"] for i in a_ids if i not in done_a and forward[i]["ambiguous"]}
            pooled, resolved = await asyncio.gather(
                self._by_embedding(s, t, {i: loose_b for i in loose_a}, mutual=True, describe=False,
                                   known=(labels.get(s), labels.get(t))),
                self._by_embedding(s, t, shared, mutual=False, describe=True),
            )
            for entity, o in {**pooled, **resolved}.items():
                found.setdefault((entity, o["target"]), Alignment(s, entity, t, o["target"], "sbert", o["confidence"]))
        return exclusive(found.values())

    async def _resolved(self, s: str, t: str, ids: list[str], known: Mapping[str, str | None] | None = None) -> dict[str, Outcome]:
        """Identifier, then label outcome of each id (cached per id); `known` labels are not asked again."""
        steps = [m for m in self.methods if m != "sbert"]
        if not ids or not steps:
            return {i: _outcome() for i in ids}

        async def compute(todo: list[str]) -> dict[str, Outcome]:
            out = await self._by_identifier(s, t, todo) if "p646" in steps else {}
            rest = [i for i in todo if i not in out]
            if "label" in steps and rest:
                out.update(await self._by_label(s, t, rest, known))
            return out

        return await self._cached("+".join(steps), s, t, ids, compute)

    # -- methods -----------------------------------------------------------------------------------
    async def _by_identifier(self, s: str, t: str, ids: list[str]) -> dict[str, Outcome]:
        """Same-dialect identity, or the cross-KG id claims (P646) of whichever side holds them."""
        source, target = self.kgs[s], self.kgs[t]
        if type(source.dialect) is type(target.dialect):
            return {i: _outcome(i, "id", 1.0) for i in ids}
        if target.dialect.links_to(source.dialect):
            found = await target.by_linked_ids(ids, source.dialect)
        elif source.dialect.links_to(target.dialect):
            found = await source.linked_ids(ids, target.dialect)
        else:
            return {}
        wanted = set(ids)  # an id with several P646 targets is ambiguous: left to the label step
        return {e: _outcome(targets[0], "p646", 1.0) for e, targets in found.items() if e in wanted and len(targets) == 1}

    async def _by_label(self, s: str, t: str, ids: list[str], known: Mapping[str, str | None] | None = None) -> dict[str, Outcome]:
        """Exact label/alias match, unambiguous on both sides; shared names are reported as ambiguous.

        The labels of `ids` come from `known` (id → label, None for none) where it has them, else from the KG."""
        source, target = self.kgs[s], self.kgs[t]
        labels = await self._labels_of(s, ids, known)
        named = {i: lab.label.strip() for i, lab in labels.items() if lab.label and lab.label.strip()}
        if not named:
            return {}
        texts = list(dict.fromkeys(named.values()))
        there, here = await asyncio.gather(target.match_labels(texts), source.match_labels(texts))
        out: dict[str, Outcome] = {}
        for entity, text in named.items():
            candidates = there.get(text, [])
            labelled = [h for h in candidates if _same(h.label, text)]  # a label beats an alias
            pick = labelled or candidates
            rivals = {h.id for h in here.get(text, []) if _same(h.label, text)} - {entity}
            if len(pick) == 1 and not rivals:
                out[entity] = _outcome(pick[0].id, "label", LABEL_CONFIDENCE if labelled else ALIAS_CONFIDENCE)
            elif candidates:
                out[entity] = _outcome(ambiguous=[h.id for h in candidates])
        return out

    async def _sbert_search(self, s: str, t: str, ids: list[str], ambiguous: Mapping[str, Sequence[str]]) -> dict[str, Outcome]:
        """SBERT over candidates: the names shared by several entities, else the target KG's search hits."""
        shared = {i: list(ambiguous[i]) for i in ids if ambiguous.get(i)}
        labels = await self.kgs[s].labels([i for i in ids if i not in shared])
        named = {i: lab.label for i, lab in labels.items() if lab.label}
        hits = await asyncio.gather(*(self.kgs[t].search(text, 10) for text in named.values()))
        searched = {i: [h.id for h in found] for i, found in zip(named, hits)}
        out = await self._by_embedding(s, t, shared, mutual=False, describe=True)
        out.update(await self._by_embedding(s, t, searched, mutual=False, describe=False))
        return {i: {**o, "method": "sbert"} for i, o in out.items()}

    async def _labels_of(self, kg: str, ids: Sequence[str], known: Mapping[str, str | None] | None) -> dict[str, Label]:
        """Labels of `ids` in KG `kg`: from `known` (id → label, None for none) where it has them, else asked
        (and added to `known` when it is a dict)."""
        known = {} if known is None else known
        ids = list(dict.fromkeys(ids))
        asked = [i for i in ids if i not in known]
        fetched = await self.kgs[kg].labels(asked) if asked else {}
        if asked and isinstance(known, dict):
            known.update((i, fetched[i].label) for i in asked)
        return {i: fetched[i] if i in fetched else Label(i, known[i], None, ()) for i in ids}

    async def _by_embedding(self, s: str, t: str, candidates: Mapping[str, Sequence[str]], *, mutual: bool,
                            describe: bool, known: tuple[Mapping[str, str | None] | None, ...] = (None, None)) -> dict[str, Outcome]:
        """Best candidate per id by cosine similarity: ≥ threshold, ≥ margin ahead of the runner-up.

        `known` labels (of `s`'s and `t`'s ids) are not asked again; with `describe` every label is asked (descriptions)."""
        candidates = {i: list(c) for i, c in candidates.items() if c}
        if not candidates:
            return {}
        import numpy as np

        columns = list(dict.fromkeys(c for cs in candidates.values() for c in cs))
        if describe:
            known = (None, None)
        mine, theirs = await asyncio.gather(self._labels_of(s, list(candidates), known[0]), self._labels_of(t, columns, known[1]))
        rows = [i for i in candidates if mine[i].label and (mine[i].description or not describe)]
        columns = [c for c in columns if theirs[c].label]
        if not rows or not columns:  # a shared name is resolved by descriptions or not at all
            return {}
        scores = await cosine_matrix(self._embedder(), [_describe(mine[i], describe) for i in rows],
                                     [_describe(theirs[c], describe) for c in columns])
        index = {c: k for k, c in enumerate(columns)}
        allowed = np.zeros(scores.shape, dtype=bool)
        for r, entity in enumerate(rows):
            allowed[r, [index[c] for c in candidates[entity] if c in index]] = True
        matches = best_matches(np.where(allowed, scores, -np.inf), self.threshold, self.margin, mutual=mutual)
        return {rows[r]: _outcome(columns[c], "sbert", score) for r, c, score in matches}

    def _embedder(self) -> Any:
        """The embedder given (the caller's, e.g. a session's; the model loads on first encode)."""
        if self.embedder is None:  # taken away after construction
            raise KgfedError("SBERT alignment needs an embedder: pass embedder= (a session's `embedder`), "
                             "or leave 'sbert' out of the alignment methods")
        return self.embedder


def _same(label: str | None, text: str) -> bool:
    return label is not None and normalise_label(label) == normalise_label(text)


def exclusive(found: Iterable[Alignment]) -> list[Alignment]:
    """Drop label/SBERT links sharing an end with another link: a name two entities share merges neither."""
    found = list(found)
    sources = Counter(a.source for a in found)
    targets = Counter(a.target for a in found)
    return [a for a in found if RANK[a.method] == 0 or (sources[a.source] == 1 and targets[a.target] == 1)]
