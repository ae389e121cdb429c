"""The records kgfed returns: relations of an entity, edges to neighbours, labels, search hits, statements."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Relation:
    """A relation incident to `entity` in one direction (`out`: entity is the subject)."""

    kg: str
    entity: str
    relation: str
    direction: str
    label: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kg": self.kg, "entity": self.entity, "relation": self.relation, "direction": self.direction, "label": self.label}


@dataclass(frozen=True, slots=True)
class Edge:
    """One edge (subject, relation, object) of a KG, seen from the entity it was asked about.

    `direction` is `out` when that entity is the subject; `entity`/`label` give the far end.
    A compound Freebase relation `r1|r2` crosses the CVT node(s) listed in `via`.
    (`KG._collect` and `with_origin_label` build edges by position, in this field order.)
    """

    kg: str
    subject: str
    relation: str
    object: str
    direction: str = "out"
    subject_label: str | None = None
    relation_label: str | None = None
    object_label: str | None = None
    via: tuple[str, ...] = ()
    literal: bool = False  # the far end is a literal value, not an entity

    @property
    def entity(self) -> str:
        return self.object if self.direction == "out" else self.subject

    @property
    def origin(self) -> str:
        return self.subject if self.direction == "out" else self.object

    @property
    def label(self) -> str | None:
        return self.object_label if self.direction == "out" else self.subject_label

    def with_origin_label(self, label: str | None) -> Edge:
        """This edge with `label` as the name of its origin (the entity it was asked about); a
        cheaper `dataclasses.replace` for the one field a walk fills in."""
        if self.direction == "out":
            return Edge(self.kg, self.subject, self.relation, self.object, self.direction, label, self.relation_label,
                        self.object_label, self.via, self.literal)
        return Edge(self.kg, self.subject, self.relation, self.object, self.direction, self.subject_label,
                    self.relation_label, label, self.via, self.literal)

    def to_json(self) -> dict[str, Any]:
        row = asdict(self)
        row["via"] = list(self.via)
        row["entity"] = self.entity
        row["label"] = self.label
        return row


@dataclass(frozen=True, slots=True)
class Label:
    """Names of one entity or property."""

    id: str
    label: str | None = None
    description: str | None = None
    aliases: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "description": self.description, "aliases": list(self.aliases)}


@dataclass(frozen=True, slots=True)
class Hit:
    """A search result."""

    id: str
    label: str | None = None
    description: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "description": self.description}


@dataclass(frozen=True, slots=True)
class Statement:
    """One qualified statement of (entity, property) (`KG.qualifiers`): its value, the entity-valued
    qualifiers as (role label, id) and the literal ones as (role label, value; dates as YYYY-MM-DD)."""

    kg: str
    id: str
    entity: str
    property: str
    value: str
    value_label: str | None = None
    qualifiers: tuple[tuple[str, str], ...] = ()
    attributes: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        row = asdict(self)
        row["qualifiers"] = [list(q) for q in self.qualifiers]
        row["attributes"] = [list(a) for a in self.attributes]
        return row


class Answer(list):
    """A list of records that says whether it is complete.

    `partial` is True when an answer it was built from was partial (the KG was opened with
    `partial="allow"` and the server cut or timed out the query); `notes` hold the servers' reasons.
    Complete answers are `Answer`s too, with `partial=False`, so callers can always ask.
    """

    partial: bool = False
    notes: tuple[str, ...] = ()
    source: str | None = None  # the name of the endpoint that gave it (the KG's, or a fallback's)


class AnswerMap(dict):
    """A dict of per-key answers (the `*_many` forms, `labels`) with the same `partial`/`notes`/`source`."""

    partial: bool = False
    notes: tuple[str, ...] = ()
    source: str | None = None


def mark(answer, partial: bool, notes: tuple[str, ...] = ()):
    """Set `partial`/`notes` on an `Answer`/`AnswerMap` (and on the lists inside a map)."""
    if partial:
        answer.partial, answer.notes = True, notes
        if isinstance(answer, dict):
            for value in answer.values():
                if isinstance(value, Answer):
                    value.partial, value.notes = True, notes
    return answer
