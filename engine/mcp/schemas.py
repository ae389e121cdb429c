"""The MCP tools' limits and structured results (pydantic models: the tools' output schemas).

Pure data: no engine, no MCP SDK. `service` fills these, `wiring` declares them as the tools' outputs.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

MAX_ROWS = 200          # sparql: rows returned at most (the query is wrapped under LIMIT max_rows+1)
MAX_NEIGHBORS = 500     # neighbors: largest `limit` accepted
MAX_HOPS = 3            # expand
MAX_EXPAND_EDGES = 400  # expand: edges returned at most (the rest counted in a note)
MAX_DEPTH = 4           # paths
MAX_PATHS = 50
MAX_IDS = 100           # labels / align: ids per call

Direction = Literal["out", "in", "both"]
OneDirection = Literal["out", "in"]
Id = Annotated[str, Field(max_length=200)]
KgName = Annotated[str | None, Field(description="name of one KG of this server (see the `kgfed://kgs` resource); default: every KG the id fits")]


# -- structured results ----------------------------------------------------------------------------
class Cost(BaseModel):
    """What the call cost: SPARQL queries asked, answered from cache, HTTP requests actually sent."""

    sparql_queries: int = 0
    cache_hits: int = 0
    requests_sent: int = 0
    shared: int = 0
    text_requests: int = 0
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0


class Costed(BaseModel):
    """A tool result with what it cost."""

    cost: Cost


class Lookup(Costed):
    """A lookup's result, flagged when a server said it is incomplete."""

    partial: bool = Field(False, description="a server said its answer is incomplete (only with --partial allow)")
    partial_note: str | None = None


class HitOut(BaseModel):
    kg: str
    id: str
    label: str | None = None
    description: str | None = None


class SearchOut(Lookup):
    text: str
    hits: list[HitOut]


class RelationOut(BaseModel):
    kg: str
    entity: str
    relation: str = Field(description="short relation id: P69, people.person.nationality, or r1|r2 through a Freebase CVT")
    direction: str = Field(description="out: the entity is the subject; in: the object")
    label: str | None = None


class RelationsOut(Lookup):
    entity: str
    relations: list[RelationOut]


class EdgeOut(BaseModel):
    kg: str
    subject: str
    relation: str
    object: str
    direction: str = Field(description="out: the asked entity is the subject; in: it is the object")
    entity: str = Field(description="the far end (id, or the literal value)")
    label: str | None = Field(None, description="label of the far end")
    subject_label: str | None = None
    relation_label: str | None = None
    object_label: str | None = None
    via: list[str] = Field(default_factory=list, description="CVT node ids crossed by a compound relation r1|r2")
    literal: bool = False


class NeighborsOut(Lookup):
    entity: str
    relation: str
    direction: str
    edges: list[EdgeOut]
    truncated: bool = Field(description="true when `limit` edges came back in some KG (there may be more)")


class LabelOut(BaseModel):
    kg: str
    id: str
    label: str | None = None
    description: str | None = None
    aliases: list[str] = Field(default_factory=list)


class LabelsOut(Lookup):
    labels: list[LabelOut]


class AlignmentOut(BaseModel):
    source_kg: str
    source: str
    label: str | None = None
    target_kg: str
    target: str
    target_label: str | None = None
    method: str = Field(description="p646 (Wikidata's Freebase ID claim), label (unique exact label), sbert (label embeddings), id (same dialect)")
    confidence: float


class AlignOut(Costed):
    alignments: list[AlignmentOut]
    unaligned: list[str] = Field(description="ids no method could place in another KG")


class NodeOut(BaseModel):
    index: int
    ids: dict[str, str] = Field(description="KG name -> id of this entity there (several when aligned)")
    label: str | None = None
    topic: bool = False
    hop: int = 0


class LinkOut(BaseModel):
    kg: str = Field(description="the KG this edge comes from (provenance)")
    subject: int = Field(description="index into nodes")
    relation: str = Field(description="the KG's own relation id")
    object: int
    label: str
    via: list[str] = Field(default_factory=list)
    hop: int = 1


class ExpandOut(Costed):
    kgs: dict[str, str] = Field(description="KG name -> dialect")
    nodes: list[NodeOut]
    edges: list[LinkOut]
    total_edges: int
    note: str | None = None


class StepOut(BaseModel):
    kg: str
    relation: str
    label: str
    direction: Literal["forward", "backward"] = Field(description="forward: the edge points along the path")
    source: dict[str, str] = Field(description="KG name -> id of the step's start")
    source_label: str | None = None
    target: dict[str, str]
    target_label: str | None = None


class PathOut(BaseModel):
    source: str
    target: str
    length: int
    steps: list[StepOut]
    text: str


class PathsOut(Costed):
    entities: list[str]
    paths: list[PathOut]
    searched: dict[str, int] = Field(description="hops expanded around every entity, nodes and edges of the merged subgraph")
    note: str | None = None


class PassageOut(BaseModel):
    rank: int
    entity: str
    title: str | None = None
    text: str
    score: float
    qid: str | None = None
    section: str | None = None


class ContextOut(Costed):
    question: str
    source: str
    passages: list[PassageOut]
    missing: dict[str, str] = Field(description="entity -> why no text was found")


class SparqlOut(Costed):
    kg: str
    vars: list[str]
    rows: list[dict[str, dict[str, str]]] = Field(description="SPARQL-JSON bindings: var -> {type, value, xml:lang?, datatype?}")
    row_count: int
    truncated: bool
    partial: bool = Field(description="the endpoint said the answer is incomplete (e.g. Virtuoso's anytime timeout)")
    note: str | None = None


class AskOut(BaseModel):
    question: str
    method: str
    answer: str
    answer_ids: list[str]
    paths: list[list[EdgeOut]]
    path_text: list[str]
    reasoning: str = ""
    cost: dict[str, Any] = Field(description="sparql_queries, cache_hits, requests_sent, llm_calls, input/output tokens, seconds")


__all__ = ["MAX_ROWS", "MAX_NEIGHBORS", "MAX_HOPS", "MAX_EXPAND_EDGES", "MAX_DEPTH", "MAX_PATHS", "MAX_IDS", "Direction", "OneDirection", "Id", "KgName", "Cost", "Costed", "Lookup", "HitOut", "SearchOut", "RelationOut", "RelationsOut", "EdgeOut", "NeighborsOut", "LabelOut", "LabelsOut", "AlignmentOut", "AlignOut", "NodeOut", "LinkOut", "ExpandOut", "StepOut", "PathOut", "PathsOut", "PassageOut", "ContextOut", "SparqlOut", "AskOut"]
