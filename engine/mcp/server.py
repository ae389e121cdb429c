"""kgfed as an MCP server: the engine's lookups, federation, text and reasoning methods as agent tools.

    kgfed mcp                                             # stdio, the demo KGs (Freebase + Wikidata)
    kgfed mcp --transport http --port 8765 --kg wikidata --endpoint wikidata=wikidata

One `Engine` is opened per server run and shared by every session and every tool call: the KGs from
`--kg/--endpoint` (through `open_kgs`, so one response cache, one HTTP client with its per-host caps,
the same record/replay/offline switches as every command), one `Aligner`, and lazily the text source,
the LLM and the embedder. Tools are thin: each validates its arguments (the dialects validate every
id before it reaches a query), runs the engine call inside `track()` so the result reports what it
cost (SPARQL queries, cache hits, requests sent), and returns structured content (ids, labels, KG,
direction) plus a compact text for the model. Every `KgfedError` becomes an MCP tool error carrying
kgfed's one-line message; anything else becomes one line naming the exception, never a traceback.

The `sparql` tool is read-only by construction (`kgfed.sparql.guard`): the query is cut into the SPARQL
grammar's own tokens and judged on them, and the store is sent exactly those tokens, so no comment, line
end or escape can hide an update, a FROM clause or a SERVICE from the guard. A SERVICE may reach only the
queried KG's own endpoint origin (scheme, host and port) and, on WDQS, its built-in services; the whole
query is wrapped under `LIMIT max_rows+1`. On a local file store the query runs in a killable worker
process under `--timeout` and `--query-memory` (`endpoints.embedded.bounded`), and `sparql` calls have a
semaphore of their own, so a heavy query cannot hold up the other tools' 1-hop lookups. It goes through
the response cache and the `--partial` policy like every lookup. Everything shown to a client (the
instructions, `kgfed://kgs`, tool errors) passes through `kgfed.sparql.secrets.redact`.

This module imports the `mcp` SDK at top level: import it only from the `kgfed mcp` handler.
"""
from __future__ import annotations

import asyncio
import logging
import math
import os
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError
from pydantic_core import to_jsonable_python

from ...cache.costs import track
from ...sparql.dialects import COMPOUND_SEP
from ...sparql.errors import InvalidIdentifier, KgfedError
from ...sparql.guard import (BUILTIN_SERVICE_PREFIX, MAX_QUERY_CHARS, WDQS_PREFIXES,  # noqa: F401 (re-exported)
                             ServicePolicy, analyse, check_read_only)
from ...sparql.secrets import redact
from ..config import AlignOptions, CacheOptions, HttpOptions, KGSpec
from ..federation.topics import topics_from_ids

log = logging.getLogger("kgfed.mcp")

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


# -- the engine a server run shares ----------------------------------------------------------------
def _cost(counter: Mapping[str, float], seconds: float | None = None) -> Cost:
    data = {k: v for k, v in counter.items() if k in Cost.model_fields}
    if seconds is not None:
        data["seconds"] = round(seconds, 4)
    return Cost(**data)


def _partial(answers: Sequence[Any]) -> dict[str, Any]:
    """`partial`/`partial_note` of the engine's answers (`Answer`/`AnswerMap` carry them; anything else is complete)."""
    cut = [a for a in answers if getattr(a, "partial", False)]
    notes = dict.fromkeys(n for a in cut for n in (getattr(a, "notes", ()) or ("incomplete",)))
    return {"partial": bool(cut), "partial_note": "; ".join(notes) or None}


def _short(text: str | None, width: int = 60) -> str:
    if text is None:
        return ""
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 1] + "…"


class Engine:
    """The KGs, aligner, text source, LLM and methods one `kgfed mcp` run shares across sessions."""

    def __init__(self, options: "ServerOptions", kgs: Mapping[str, Any]):
        self.options = options
        self.kgs = kgs  # as `open_kgs` returns them: with the run's one HttpClient (`kgs.client`), closed with them
        self._aligner = None
        self._text = None
        self._text_client = None
        self._llm = None
        self._embedder = None
        self._lock = asyncio.Lock()
        # the sparql tool's own lane: heavy user queries wait here, never in front of other tools' lookups
        self._sparql_lane = asyncio.Semaphore(max(1, options.query_workers))

    @classmethod
    def open(cls, options: "ServerOptions") -> "Engine":
        from ..config import open_kgs

        return cls(options, open_kgs(list(options.kgs), http=options.http, cache=options.cache))

    async def aclose(self) -> None:
        from ...endpoints.embedded import stop_query_workers
        from ..config import close_kgs

        stop_query_workers()  # queries still running end now (their callers get an error), so nothing waits on them
        try:
            for closer in (getattr(self._text, "aclose", None), getattr(self._llm, "aclose", None),
                           getattr(self._text_client, "aclose", None)):
                if closer is not None:
                    await closer()
        finally:
            await close_kgs(self.kgs)

    # -- KG choice ---------------------------------------------------------------------------------
    def pick(self, kg: str | None) -> dict[str, Any]:
        """The KG called `kg`, or all of them."""
        if kg is None or kg == "":
            return dict(self.kgs)
        if not isinstance(kg, str) or kg not in self.kgs:
            raise KgfedError(f"unknown KG {_short(kg, 40)!r}: this server has {', '.join(self.kgs)}")
        return {kg: self.kgs[kg]}

    def owners(self, entity: str, kg: str | None = None) -> dict[str, Any]:
        """The KGs whose dialect accepts `entity` (raises one line naming the id forms when none does)."""
        chosen = self.pick(kg)
        if kg is not None:
            chosen[kg].check(entity)
            return chosen
        found = {}
        for name, graph in chosen.items():
            try:
                graph.check(entity)
            except InvalidIdentifier:
                continue
            found[name] = graph
        if not found:
            forms = "; ".join(f"{n}: {g.dialect.id_example}" for n, g in chosen.items())
            raise InvalidIdentifier(f"invalid entity id {_short(entity, 50)!r}: no KG of this server takes it ({forms})")
        return found

    def describe(self) -> list[dict[str, Any]]:
        return [{"name": name, "dialect": kg.dialect.name, "endpoint": redact(kg.endpoint.name),
                 "ids": kg.dialect.id_forms,
                 "stats": dict(kg.stats)} for name, kg in self.kgs.items()]

    # -- lazily built parts ------------------------------------------------------------------------
    def aligner(self, methods: Sequence[str] | None = None):
        cache = self.options.cache.enabled
        if methods:
            return replace(self.options.align, methods=tuple(methods)).aligner(self.kgs, cache=cache)
        if self._aligner is None:
            self._aligner = self.options.align.aligner(self.kgs, cache=cache)
        return self._aligner

    async def text_source(self):
        async with self._lock:
            if self._text is None:
                from ..config import default_text_source
                from ..text.context import open_text_source

                spec = self.options.text_source or default_text_source(*(kg.endpoint for kg in self.options.kgs))
                client = None
                if spec == "wikipedia":
                    client = self._http_client()
                cache = self.options.cache
                self._text = open_text_source(spec, client=client, cache_dir=cache.root, cache=cache.enabled,
                                              offline=cache.offline)
            return self._text

    def _http_client(self):
        """The run's one HttpClient (shared by the KGs; `open_kgs` makes it), else one from the same options."""
        shared = getattr(self.kgs, "client", None)
        if shared is not None:
            return shared
        if self._text_client is None:
            self._text_client = self.options.http.client()
        return self._text_client

    async def method(self, name: str, width: int | None, depth: int | None):
        """A method object over the shared KGs, LLM (`--llm`), embedder and (tog2/hydra) text source."""
        async with self._lock:
            if self._llm is None:
                import importlib.util

                from ..toolbox.llm import make_llm

                self._llm = make_llm(self.options.llm, concurrency=self.options.llm_concurrency)
                if importlib.util.find_spec("sentence_transformers") is not None:
                    from ..toolbox.embeddings import default_embedder

                    self._embedder = default_embedder()
        from ..methods import get_method

        cls = get_method(name)
        params = {k: v for k, v in (("width", width), ("depth", depth)) if v is not None}
        text = await self.text_source() if name in ("tog2", "hydra") else None
        try:
            return cls(self.kgs, self._llm, embedder=self._embedder, text=text, **params)
        except TypeError as exc:
            raise KgfedError(f"method {name!r} rejects its parameters ({exc}): check width/depth") from None

    # -- tools -------------------------------------------------------------------------------------
    async def search_entities(self, text: str, kg: str | None, limit: int) -> tuple[dict, str]:
        text = text.strip()
        if not text:
            raise KgfedError("empty search text: give a label such as 'Douglas Adams'")
        chosen = self.pick(kg)
        found = await asyncio.gather(*(g.search(text, limit) for g in chosen.values()))
        hits = [HitOut(kg=name, **h.to_json()) for name, hs in zip(chosen, found) for h in hs]
        lines = [f"{h.kg}:{h.id} {h.label or ''}" + (f" — {_short(h.description)}" if h.description else "") for h in hits]
        return {"text": text, "hits": hits, **_partial(found)}, "\n".join(lines) or f"no entity labelled {text!r} in {', '.join(chosen)}"

    async def relations(self, entity: str, direction: str, kg: str | None) -> tuple[dict, str]:
        chosen = self.owners(entity, kg)
        found = await asyncio.gather(*(g.relations(entity, direction) for g in chosen.values()))
        rels = [RelationOut(**r.to_json()) for rs in found for r in rs]
        lines = [f"{r.kg} {'->' if r.direction == 'out' else '<-'} {r.relation}" + (f" ({r.label})" if r.label else "") for r in rels]
        return {"entity": entity, "relations": rels, **_partial(found)}, f"{len(rels)} relations of {entity}:\n" + "\n".join(lines)

    async def neighbors(self, entity: str, relation: str, direction: str, limit: int, kg: str | None) -> tuple[dict, str]:
        chosen = self.owners(entity, kg)
        fits = {}
        for name, g in chosen.items():
            try:
                g.dialect.check_relation(relation)
            except InvalidIdentifier:
                if kg is not None or len(chosen) == 1:
                    raise
                continue
            fits[name] = g
        if not fits:
            raise InvalidIdentifier(f"invalid relation id {_short(relation, 60)!r} for {', '.join(chosen)}: use P69, "
                                    "people.person.nationality or r1|r2 (see the relations tool)")
        found = await asyncio.gather(*(g.neighbors(entity, relation, direction, limit=limit) for g in fits.values()))
        edges = [EdgeOut(**e.to_json()) for es in found for e in es]
        truncated = any(len(es) >= limit for es in found)
        arrow = f"-[{relation}]->" if direction == "out" else f"<-[{relation}]-"
        lines = [f"{e.kg} {entity} {arrow} " + (repr(e.entity) if e.literal else f"{e.entity} {e.label or ''}".rstrip())
                 + (f" via {','.join(e.via)}" if e.via else "") for e in edges]
        more = f"\n(first {limit} per KG; raise limit for more)" if truncated else ""
        return ({"entity": entity, "relation": relation, "direction": direction, "edges": edges, "truncated": truncated,
                 **_partial(found)},
                "\n".join(lines) + more if lines else f"no {direction} neighbours of {entity} over {relation}")

    async def labels(self, ids: Sequence[str], kg: str | None) -> tuple[dict, str]:
        if not ids:
            raise KgfedError("no ids: give at least one, e.g. [\"Q42\"]")
        if len(ids) > MAX_IDS:
            raise KgfedError(f"{len(ids)} ids in one call: give at most {MAX_IDS}")
        wanted: dict[str, list[str]] = {}
        for ident in ids:
            for name in self.owners(ident, kg):
                wanted.setdefault(name, []).append(ident)
        names = list(wanted)
        found = await asyncio.gather(*(self.kgs[n].labels(wanted[n]) for n in names))
        labels = [LabelOut(kg=n, **lab.to_json()) for n, got in zip(names, found) for lab in got.values()]
        lines = [f"{lab.kg}:{lab.id} {lab.label or '(no label)'}" + (f" — {_short(lab.description)}" if lab.description else "")
                 + (f" (aka {', '.join(lab.aliases[:5])})" if lab.aliases else "") for lab in labels]
        return {"labels": labels, **_partial(found)}, "\n".join(lines)

    async def align(self, ids: Sequence[str], kg: str | None, methods: Sequence[str] | None) -> tuple[dict, str]:
        if not ids:
            raise KgfedError("no ids: give at least one, e.g. [\"m.0282x\"]")
        if len(ids) > MAX_IDS:
            raise KgfedError(f"{len(ids)} ids in one call: give at most {MAX_IDS}")
        if len(self.kgs) < 2:
            raise KgfedError(f"alignment needs two KGs and this server has one ({', '.join(self.kgs)}): start it with --kg freebase,wikidata")
        aligner = self.aligner(methods)
        found = await aligner.align(list(ids), kg)
        wanted: dict[str, set[str]] = {n: set() for n in self.kgs}
        for entity, alignments in found.items():
            for name in (aligner.kgs_of(entity) if kg is None else [kg]):
                wanted[name].add(entity)
            for a in alignments:
                wanted[a.target_kg].add(a.target)
        names = [n for n in wanted if wanted[n]]
        got = await asyncio.gather(*(self.kgs[n].labels(sorted(wanted[n])) for n in names))
        labels = {n: {i: lab.label for i, lab in g.items()} for n, g in zip(names, got)}
        rows = [AlignmentOut(source_kg=a.source_kg, source=a.source, label=labels.get(a.source_kg, {}).get(a.source),
                             target_kg=a.target_kg, target=a.target, target_label=labels.get(a.target_kg, {}).get(a.target),
                             method=a.method, confidence=round(a.confidence, 4))
                for alignments in found.values() for a in alignments]
        unaligned = [e for e, a in found.items() if not a]
        lines = [f"{r.source_kg}:{r.source} {r.label or ''} = {r.target_kg}:{r.target} {r.target_label or ''} "
                 f"({r.method}, {r.confidence:.2f})" for r in rows]
        lines += [f"{e}: no counterpart found" for e in unaligned]
        return {"alignments": rows, "unaligned": unaligned}, "\n".join(lines)

    async def expand(self, topics: Sequence[str], hops: int, width: int, limit: int, direction: str,
                     max_edges: int, progress: Callable[[str, int, int], None] | None = None) -> tuple[dict, str]:
        merged = await self._expand(topics, hops, width, limit, direction, progress)
        nodes = [NodeOut(index=i, ids=n.ids, label=n.label, topic=n.topic, hop=n.hop) for i, n in enumerate(merged.nodes)]
        edges = [LinkOut(**e.to_json()) for e in merged.edges[:max_edges]]
        note = None
        if len(merged.edges) > max_edges:
            note = f"{len(merged.edges) - max_edges} more edges left out (max_edges={max_edges}); lower hops/width/limit or raise max_edges"
        def name(i: int) -> str:
            n = merged.nodes[i]
            return f"{n.label or '?'} [{' '.join(n.ids.values())}]"
        lines = [f"{len(merged.nodes)} entities ({sum(1 for n in merged.nodes if n.aligned)} aligned across KGs), "
                 f"{len(merged.edges)} edges"]
        lines += [f"{e.kg}: {name(e.subject)} -[{e.label}]-> {name(e.object)}" for e in edges]
        if note:
            lines.append(note)
        return ({"kgs": merged.kgs, "nodes": nodes, "edges": edges, "total_edges": len(merged.edges), "note": note},
                "\n".join(lines))

    async def _expand(self, topics: Sequence[str], hops: int, width: int | None, limit: int | None, direction: str,
                      progress: Callable[[str, int, int], None] | None = None):
        from ..federation.subgraph import expand

        if not topics:
            raise KgfedError("no topic entity: give at least one id such as Q42 or m.0d3k14")
        if len(topics) > MAX_IDS:
            raise KgfedError(f"{len(topics)} topics in one call: give at most {MAX_IDS}")
        live = [n for n, g in self.kgs.items() if getattr(g.endpoint.inner, "url", None)]
        if not width and hops >= 2 and live:
            raise KgfedError(f"every relation {hops} hops out of a live KG ({', '.join(live)}) can take thousands of queries: "
                             "give width ≥ 1 (relations followed per entity), e.g. 5")
        return await expand(list(topics), self.kgs, hops, width or None, limit=limit or None,
                            aligner=self.aligner(), direction=direction, progress=progress)

    async def paths(self, entities: Sequence[str], max_depth: int, width: int, limit: int, max_paths: int,
                    progress: Callable[[str, int, int], None] | None = None) -> tuple[dict, str]:
        entities = list(dict.fromkeys(e.strip() for e in entities if e.strip()))
        if len(entities) < 2:
            raise KgfedError("paths needs two or more distinct entities, e.g. [\"Q42\", \"Q350\"]")
        hops = math.ceil(max_depth / 2)
        merged = await self._expand(entities, hops, width, limit, "both", progress)
        found, note = connecting_paths(merged, entities, self.aligner(), max_depth, max_paths)
        lines = [p.text for p in found] or [f"no path of length ≤ {max_depth} between {', '.join(entities)} "
                                             f"in the merged subgraph ({hops} hops, width {width or 'all'}, limit {limit or 'all'})"]
        if note:
            lines.append(note)
        return ({"entities": entities, "paths": found, "note": note,
                 "searched": {"hops": hops, "nodes": len(merged.nodes), "edges": len(merged.edges)}}, "\n".join(lines))

    async def context(self, entities: Sequence[str], question: str, top_k: int, ranker: str) -> tuple[dict, str]:
        from ..text.context import entity_pages, rank_pages

        if not question.strip():
            raise KgfedError("empty question: the passages are ranked against it")
        if not entities:
            raise KgfedError("no entity: give ids such as Q42 (m.0abc through P646) or a Wikipedia title")
        if len(entities) > MAX_IDS:
            raise KgfedError(f"{len(entities)} entities in one call: give at most {MAX_IDS}")
        source = await self.text_source()
        wikidata = next((g for g in self.kgs.values() if g.dialect.supports("sitelinks")), None)
        pages = await entity_pages(list(entities), text_source=source, kg=wikidata)
        passages = await rank_pages(question, pages, top_k=top_k, ranker=ranker)  # type: ignore[arg-type]
        missing = {e: (p.reason or "empty page") for e, p in pages.items() if not p.text}
        out = [PassageOut(rank=i, entity=p.entity, title=p.title, text=p.text, score=round(p.score, 4), qid=p.qid,
                          section=p.section) for i, p in enumerate(passages, 1)]
        lines = [f"{p.rank}. [{p.title or p.entity}] {p.text}" for p in out]
        lines += [f"{e}: no text ({why})" for e, why in missing.items()]
        return ({"question": question, "source": getattr(source, "name", "text"), "passages": out, "missing": missing},
                "\n".join(lines))

    async def sparql(self, query: str, kg: str | None, max_rows: int, rewrite: bool) -> tuple[dict, str]:
        from ...endpoints.embedded import bounded

        if kg is None or kg == "":
            if len(self.kgs) > 1:
                raise KgfedError(f"which KG? give kg as one of {', '.join(self.kgs)}")
            kg = next(iter(self.kgs))
        graph = self.pick(kg)[kg]
        if rewrite:
            from ...sparql.rewrite import to_standard_sparql

            query = to_standard_sparql(query)
        checked = analyse(query, self.service_policy(kg), max_rows).text  # pure and linear: no thread needed
        options = self.options
        timeout = options.query_timeout or options.http.timeout
        async with self._sparql_lane:
            with bounded(timeout=timeout, memory_mb=options.query_memory_mb, workers=options.query_workers):
                result = await graph.select(checked)
        rows = result.rows[:max_rows]
        truncated = len(result.rows) > max_rows
        notes = []
        if truncated:
            notes.append(f"truncated to the first {max_rows} rows: add LIMIT/OFFSET to page through the rest")
        if result.partial:
            notes.append(f"partial answer from the endpoint: {result.note or 'incomplete'}")
        data = {"kg": kg, "vars": result.vars, "rows": [{k: t.to_json() for k, t in row.items()} for row in rows],
                "row_count": len(rows), "truncated": truncated, "partial": result.partial, "note": "; ".join(notes) or None}
        header = "\t".join(result.vars)
        body = ["\t".join(_short(row[v].value, 80) if v in row else "" for v in result.vars) for row in rows]
        text = "\n".join([header, *body] + ([f"({n})" for n in notes])) if result.vars else "(no variables)"
        return data, text

    def service_hosts(self) -> set[str]:
        """Host names of this server's HTTP endpoints (kept for callers of the old guard)."""
        return {h for g in self.kgs.values() for h, _ in _http_parts(g.endpoint.inner) if h}

    def service_policy(self, kg: str) -> ServicePolicy:
        """What a SERVICE in a query on `kg` may reach: that KG's own endpoint origin(s) (scheme, host and port;
        nothing for a local file store, which would fetch a service itself) and WDQS's built-in services on WDQS."""
        parts = _http_parts(self.kgs[kg].endpoint.inner)
        return ServicePolicy.for_urls([p.url for _, p in parts], builtins=any(p.server == "wdqs" for _, p in parts))

    async def ask(self, question: str, method: str, topics: Sequence[str] | None, width: int | None, depth: int | None) -> tuple[dict, str]:
        if not question.strip():
            raise KgfedError("the question is empty: give it as text, e.g. \"who founded Apple?\"")
        runner = await self.method(method, width, depth)
        given = await topics_from_ids(list(topics), self.kgs) if topics else None
        result = await runner.answer(question, given)
        data = result.to_json()
        data = {k: data[k] for k in ("question", "method", "answer", "answer_ids", "path_text", "reasoning", "cost")}
        data["paths"] = [[EdgeOut(**e.to_json()) for e in path] for path in result.paths]
        lines = [f"answer: {result.answer or '(none)'}" + (f" ({', '.join(result.answer_ids[:5])})" if result.answer_ids else "")]
        lines += [f"path: {t}" for t in result.path_texts()[:10]]
        lines.append("cost: " + ", ".join(f"{k}={v:g}" for k, v in sorted(result.cost.items())))
        return data, "\n".join(lines)


def _http_parts(endpoint: Any) -> list[tuple[str, Any]]:
    """(host, HttpEndpoint) of an endpoint's HTTP parts (a split-graph endpoint has several; a file store none)."""
    parts = getattr(endpoint, "parts", None) or getattr(endpoint, "endpoints", None) or [endpoint]
    out = []
    for part in parts:
        url = getattr(part, "url", None)
        if isinstance(url, str) and url:
            out.append(((urlsplit(url).hostname or "").lower(), part))
    return out


# -- paths in a merged subgraph --------------------------------------------------------------------
def connecting_paths(merged, entities: Sequence[str], aligner, max_depth: int, max_paths: int) -> tuple[list[PathOut], str | None]:
    """Simple paths of length ≤ `max_depth` between every pair of `entities` (edges taken either way)."""
    import itertools

    import networkx as nx

    index: dict[str, int] = {}
    for entity in entities:
        spot = next((i for name in aligner.kgs_of(entity) if (i := merged.index(name, entity)) is not None), None)
        if spot is None:
            raise KgfedError(f"{entity} is not in the merged subgraph: check the id with the labels tool")
        index[entity] = spot
    graph = nx.MultiGraph()
    graph.add_nodes_from(range(len(merged.nodes)))
    for k, link in enumerate(merged.edges):
        graph.add_edge(link.subject, link.object, key=k)
    found: list[PathOut] = []
    more = False
    for a, b in itertools.combinations(entities, 2):
        if index[a] == index[b]:
            continue
        for edge_path in nx.all_simple_edge_paths(graph, index[a], index[b], cutoff=max_depth):
            if len(found) >= max_paths:
                more = True
                break
            found.append(_path(merged, a, b, index[a], edge_path))
        if more:
            break
    found.sort(key=lambda p: (p.length, p.source, p.target, p.text))
    note = f"more than {max_paths} paths: only the first {max_paths} found are listed (raise max_paths)" if more else None
    return found, note


def _path(merged, a: str, b: str, start: int, edge_path) -> PathOut:
    steps, here = [], start
    for u, v, k in edge_path:
        link = merged.edges[k]
        forward = link.subject == here
        there = link.object if forward else link.subject
        steps.append(StepOut(kg=link.kg, relation=link.relation, label=link.label,
                             direction="forward" if forward else "backward",
                             source=merged.nodes[here].ids, source_label=merged.nodes[here].label,
                             target=merged.nodes[there].ids, target_label=merged.nodes[there].label))
        here = there
    parts = [steps[0].source_label or next(iter(steps[0].source.values()))]
    for s in steps:
        arrow = f"-[{s.kg}: {s.label}]->" if s.direction == "forward" else f"<-[{s.kg}: {s.label}]-"
        parts.append(f"{arrow} {s.target_label or next(iter(s.target.values()))}")
    return PathOut(source=a, target=b, length=len(steps), steps=steps, text=" ".join(parts))


# -- the MCP server --------------------------------------------------------------------------------
def _one_line(exc: BaseException) -> str:
    """The first line of an error, secrets (URL credentials, tokens) masked."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return redact(text)


async def _guard(name: str, call: Callable[[], Awaitable[tuple[dict, str]]]) -> CallToolResult:
    """Run a tool body with cost tracking; kgfed's errors become tool errors with their one-line message."""
    import time

    started = time.perf_counter()
    try:
        with track() as counter:
            data, text = await call()
    except KgfedError as exc:
        raise ToolError(_one_line(exc)) from None
    except (ToolError, asyncio.CancelledError):
        raise
    except Exception as exc:  # a library error: one line, the traceback only with KGFED_DEBUG
        kind = exc.__class__.__name__
        if kind == "CannotOverwriteExistingCassetteException":
            raise ToolError("request not in the cassette (replay-only): record it with --record") from None
        if os.environ.get("KGFED_DEBUG"):
            log.warning("tool %s failed", name, exc_info=True)  # on the server's stderr, never to the client
        raise ToolError(f"unexpected {kind}: {_short(_one_line(exc), 200)}") from None
    data = dict(data)
    if data.get("partial_note"):
        text += f"\n(partial answer, rows may be missing: {data['partial_note']})"
    if name != "ask":  # a method's Result carries its own, fuller cost
        data["cost"] = _cost(counter, time.perf_counter() - started)
    cost = data["cost"]
    figures = cost if isinstance(cost, dict) else cost.model_dump()
    summary = ", ".join(f"{k}={v:g}" for k, v in figures.items() if isinstance(v, (int, float)) and v)
    payload = to_jsonable_python(data)
    return CallToolResult(content=[TextContent(type="text", text=f"{text}\n[cost: {summary or 'nothing'}]")],
                          structured_content=payload)


class Progress:
    """Expansion steps as MCP progress notifications (sent in order, all before the result)."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.pending: list[asyncio.Task] = []

    def __call__(self, what: str, done: int, total: int) -> None:
        self.pending.append(asyncio.get_running_loop().create_task(self._send(len(self.pending), what, done, total)))

    async def _send(self, k: int, what: str, done: int, total: int) -> None:
        if k:
            await asyncio.wait([self.pending[k - 1]])  # keep the order the steps happened in
        await self.ctx.report_progress(done, total or None, what)

    async def __aenter__(self) -> "Progress":
        return self

    async def __aexit__(self, *exc) -> None:
        await asyncio.gather(*self.pending, return_exceptions=True)  # a client gone away must not fail the call


READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=True)

INSTRUCTIONS = """kgfed: knowledge-graph lookups over {kgs}.
Ids: Freebase entities m.0abc / g.11x and relations like people.person.nationality (a CVT hop is one compound relation r1|r2);
Wikidata entities Q42 and properties P69. Typical use: search_entities to find an id, relations to see what an entity has,
neighbors to follow one relation, labels to name ids, align to find the same entity in the other KG, expand or paths for
a merged neighbourhood, context for Wikipedia passages, sparql for anything else (read-only), ask to run a whole
reasoning method. Every result reports its cost (SPARQL queries, cache hits, requests sent); repeated calls are cached."""


class KgfedMCP(MCPServer):
    """MCPServer whose argument-validation errors are one line too (pydantic's span several)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        if tool is not None and isinstance(arguments, dict):
            known = set((tool.parameters or {}).get("properties", {}))
            unknown = sorted(str(k) for k in arguments if k not in known)
            if unknown:
                raise ToolError(f"Error executing tool {_short(name, 40)}: unknown argument"
                                f"{'s' if len(unknown) > 1 else ''} {_short(', '.join(unknown), 120)}: "
                                f"this tool takes {', '.join(sorted(known)) or 'no arguments'}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}" for err in cause.errors()[:5])
            raise ToolError(f"Error executing tool {_short(name, 40)}: invalid arguments ({_short(problems, 300)}): "
                            "follow the tool's input schema") from cause


def build_server(engine: Engine) -> MCPServer:
    """An MCPServer whose tools, resources and prompt call `engine`."""
    kg_list = redact(", ".join(f"{n} ({g.dialect.name}: {g.endpoint.name})" for n, g in engine.kgs.items()))
    from importlib.metadata import PackageNotFoundError, version

    try:
        own_version = version("kgfed")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        own_version = "0"
    server = KgfedMCP("kgfed", title="kgfed knowledge graphs", version=own_version,
                       instructions=INSTRUCTIONS.format(kgs=kg_list), log_level="WARNING")
    for handler in logging.getLogger().handlers:  # libraries that set their own logger to DEBUG (bm25s) stay quiet
        handler.setLevel(logging.WARNING)

    @server.tool(annotations=READ_ONLY, description=(
        "Find entity ids by label in each KG (exact label or alias match; WDQS uses its entity search). Use it first "
        "when you have a name but no id. Returns hits with KG, id, label and description. Cost: one SPARQL query per KG."))
    async def search_entities(
        text: Annotated[str, Field(description="the label to look for, e.g. 'Douglas Adams'", max_length=200)],
        kg: KgName = None,
        limit: Annotated[int, Field(ge=1, le=50, description="hits per KG")] = 10,
    ) -> Annotated[CallToolResult, SearchOut]:
        return await _guard("search_entities", lambda: engine.search_entities(text, kg, limit))

    @server.tool(annotations=READ_ONLY, description=(
        "List the relations an entity has (outgoing: the entity is the subject; incoming: the object), with labels, in "
        "every KG whose id form fits. Use it to decide which relation to follow with neighbors. Freebase relations "
        "into a nameless CVT node are listed as one compound relation r1|r2. Cost: one SPARQL query per direction and KG."))
    async def relations(
        entity: Annotated[str, Field(description="entity id: Q42 (Wikidata) or m.0282x (Freebase)", max_length=200)],
        direction: Annotated[Direction, Field(description="out, in or both")] = "both",
        kg: KgName = None,
    ) -> Annotated[CallToolResult, RelationsOut]:
        return await _guard("relations", lambda: engine.relations(entity, direction, kg))

    @server.tool(annotations=READ_ONLY, description=(
        "Follow one relation from an entity and get the entities (or literal values) at the other end, with labels. "
        "direction out reads entity -relation-> x, in reads x -relation-> entity. A compound Freebase relation r1|r2 "
        "crosses its CVT node (listed in via). Cost: one SPARQL query per KG."))
    async def neighbors(
        entity: Annotated[str, Field(description="entity id: Q42 or m.0282x", max_length=200)],
        relation: Annotated[str, Field(description="relation id from the relations tool: P69, people.person.nationality, r1|r2", max_length=400)],
        direction: Annotated[OneDirection, Field(description="out or in")] = "out",
        limit: Annotated[int, Field(ge=1, le=MAX_NEIGHBORS, description="edges per KG at most")] = 50,
        kg: KgName = None,
    ) -> Annotated[CallToolResult, NeighborsOut]:
        return await _guard("neighbors", lambda: engine.neighbors(entity, relation, direction, limit, kg))

    @server.tool(annotations=READ_ONLY, description=(
        "Name ids: label, description and aliases of entities or properties (Q42, P69, m.0282x). Use it to read ids "
        "returned by other tools. Cost: one SPARQL query per KG per 50 ids."))
    async def labels(
        ids: Annotated[list[Id], Field(description="ids to name", min_length=1, max_length=MAX_IDS)],
        kg: KgName = None,
    ) -> Annotated[CallToolResult, LabelsOut]:
        return await _guard("labels", lambda: engine.labels(ids, kg))

    @server.tool(annotations=READ_ONLY, description=(
        "Find the same entity in the other KGs: a Freebase mid to its Wikidata QID and back, by Wikidata's Freebase ID "
        "claims (P646, confidence 1), a unique exact label (0.9, alias 0.75) or label embeddings (SBERT, cosine; loads "
        "a model the first time). Each link says its method and confidence. Cost: a few SPARQL queries; cached per id."))
    async def align(
        ids: Annotated[list[Id], Field(description="ids of any KG", min_length=1, max_length=MAX_IDS)],
        kg: KgName = None,
        methods: Annotated[list[Literal["p646", "label", "sbert"]] | None,
                           Field(description="alignment methods in order (default: the server's --methods)")] = None,
    ) -> Annotated[CallToolResult, AlignOut]:
        return await _guard("align", lambda: engine.align(ids, kg, methods))

    @server.tool(annotations=READ_ONLY, description=(
        "Expand topic entities over all KGs at once into one merged subgraph: each hop follows `width` relations per "
        "entity and keeps `limit` neighbours per relation; entities aligned across KGs become one node holding all their "
        "ids, and every edge keeps the KG it came from and its original relation id. Bounded: hops ≤ 3, max_edges "
        "returned. Cost: about 2 queries per KG per hop plus alignment and label queries."))
    async def expand(
        ctx: Context,
        topics: Annotated[list[Id], Field(description="topic ids (Q42, m.0282x)", min_length=1, max_length=MAX_IDS)],
        hops: Annotated[int, Field(ge=0, le=MAX_HOPS)] = 1,
        width: Annotated[int, Field(ge=0, le=100, description="relations followed per entity and KG (0 = all)")] = 3,
        limit: Annotated[int, Field(ge=0, le=MAX_NEIGHBORS, description="neighbours kept per entity and relation (0 = all)")] = 10,
        direction: Annotated[Direction, Field(description="out, in or both")] = "both",
        max_edges: Annotated[int, Field(ge=1, le=2000)] = MAX_EXPAND_EDGES,
    ) -> Annotated[CallToolResult, ExpandOut]:
        async with Progress(ctx) as progress:
            return await _guard("expand", lambda: engine.expand(topics, hops, width, limit, direction, max_edges, progress))

    @server.tool(annotations=READ_ONLY, description=(
        "Find how two or more entities are connected: paths of at most max_depth edges (taken either way) between every "
        "pair, searched in the merged subgraph around all of them (ceil(max_depth/2) hops each, over every KG, aligned "
        "entities merged). Each step gives the KG, relation and direction. Use it for 'how is X related to Y'. "
        "Cost: like expand with hops = ceil(max_depth/2); width 0 follows every relation."))
    async def paths(
        ctx: Context,
        entities: Annotated[list[Id], Field(description="two or more ids", min_length=2, max_length=10)],
        max_depth: Annotated[int, Field(ge=1, le=MAX_DEPTH, description="edges per path at most")] = 2,
        width: Annotated[int, Field(ge=0, le=100, description="relations followed per entity (0 = all)")] = 0,
        limit: Annotated[int, Field(ge=0, le=MAX_NEIGHBORS, description="neighbours kept per relation (0 = all)")] = 20,
        max_paths: Annotated[int, Field(ge=1, le=MAX_PATHS)] = 20,
    ) -> Annotated[CallToolResult, PathsOut]:
        async with Progress(ctx) as progress:
            return await _guard("paths", lambda: engine.paths(entities, max_depth, width, limit, max_paths, progress))

    @server.tool(annotations=READ_ONLY, description=(
        "Wikipedia passages about entities, ranked against a question (ToG-2's context retrieval): ids go to their "
        "English Wikipedia page (Freebase mids through P646), pages are split into sentence chunks and the best top_k "
        "are returned. ranker sbert loads an embedding model the first time; bm25 is instant. "
        "Cost: one or two SPARQL queries plus one text request per page (cached)."))
    async def context(
        entities: Annotated[list[Annotated[str, Field(max_length=300)]], Field(description="Q42, m.0282x or page titles", min_length=1, max_length=20)],
        question: Annotated[str, Field(description="the question the passages are ranked against", max_length=1000)],
        top_k: Annotated[int, Field(ge=1, le=50)] = 5,
        ranker: Literal["sbert", "bm25"] = "sbert",
    ) -> Annotated[CallToolResult, ContextOut]:
        return await _guard("context", lambda: engine.context(entities, question, top_k, ranker))

    @server.tool(annotations=READ_ONLY, description=(
        "Run a read-only SPARQL SELECT or ASK on one KG, for what the other tools cannot ask. Updates, LOAD, "
        "CONSTRUCT/DESCRIBE and SERVICE calls to other hosts are refused; at most max_rows rows come back (a LIMIT is "
        "added when the query has none; longer answers are truncated with a note). Wikidata KGs use wd:/wdt: IRIs, "
        "Freebase ones http://rdf.freebase.com/ns/. Cost: one SPARQL query (cached)."))
    async def sparql(
        query: Annotated[str, Field(description="SPARQL 1.1 SELECT or ASK", max_length=MAX_QUERY_CHARS)],
        kg: Annotated[str | None, Field(description="the KG to query (needed when the server has several)")] = None,
        max_rows: Annotated[int, Field(ge=1, le=MAX_ROWS)] = 100,
        rewrite: Annotated[bool, Field(description="rewrite Virtuoso-dialect CWQ/WebQSP gold SPARQL for standard engines")] = False,
    ) -> Annotated[CallToolResult, SparqlOut]:
        return await _guard("sparql", lambda: engine.sparql(query, kg, max_rows, rewrite))

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=False, open_world_hint=True),
                 description=(
        "Answer a natural-language question with a whole KG reasoning method over this server's KGs: tog "
        "(Think-on-Graph beam search), tog2 (ToG with Wikipedia passages), pog (Paths-over-Graph), hydra (HydraRAG, "
        "both KGs + text), inses, proh. Returns the answer, answer ids, the reasoning paths and the cost. Topics are "
        "linked from the question by label unless given. Slow: tens to hundreds of SPARQL queries and, with the server's "
        "--llm, several LLM calls; without an LLM it scores with embeddings (loads a model the first time)."))
    async def ask(
        question: Annotated[str, Field(description="the question", max_length=1000)],
        method: Annotated[Literal["tog", "tog2", "pog", "hydra", "inses", "proh"], Field(description="the reasoning method")] = "tog",
        topics: Annotated[list[Id] | None, Field(description="topic ids (default: linked from the question)", max_length=10)] = None,
        width: Annotated[int | None, Field(ge=1, le=10, description="beam width")] = None,
        depth: Annotated[int | None, Field(ge=1, le=5, description="maximum depth")] = None,
    ) -> Annotated[CallToolResult, AskOut]:
        return await _guard("ask", lambda: engine.ask(question, method, topics, width, depth))

    @server.resource("kgfed://kgs", name="kgs", title="the KGs of this server", mime_type="application/json",
                     description="Each KG: name, dialect, endpoint, id forms, and its query counters (queries, cache hits, requests sent).")
    def kgs_resource() -> str:
        import json

        return json.dumps(engine.describe(), ensure_ascii=False, indent=1)

    @server.resource("kgfed://kg/{name}/relations", name="relation vocabulary", mime_type="application/json",
                     description="Relations used in a KG held in a local file (id, label, how often), most frequent first; "
                                 "live endpoints are too large to list: use the relations tool on an entity.")
    async def vocabulary(name: str) -> str:
        import json

        try:
            return json.dumps(await relation_vocabulary(engine, name), ensure_ascii=False, indent=1)
        except KgfedError as exc:
            from mcp.server.mcpserver.exceptions import ResourceError

            raise ResourceError(_one_line(exc)) from None

    @server.prompt(name="explore", description="A plan for answering a question from the KGs with these tools.")
    def explore(question: str) -> str:
        return (f"Answer from the knowledge graphs ({kg_list}): {question}\n"
                "1. search_entities for each named thing (note the ids per KG). 2. relations on the topic ids; pick the ones "
                "the question needs. 3. neighbors over them (a Freebase CVT relation r1|r2 is one step). 4. labels to name "
                "ids; align to switch KG; paths to see how two entities connect. 5. Cite ids and relations for each fact. "
                "Use sparql only for counts or filters the tools cannot express.")

    return server


async def relation_vocabulary(engine: Engine, name: str, top: int = 2000) -> list[dict[str, Any]]:
    """Relations of a file-backed KG with how often each is used (one SPARQL query, cached)."""
    graph = engine.pick(name)[name]
    if getattr(graph.endpoint.inner, "url", None):
        raise KgfedError(f"KG {name!r} is a live endpoint ({graph.endpoint.name}): too large to list, use the relations tool on an entity")
    result = await graph.select(f"SELECT ?p (COUNT(*) AS ?n) WHERE {{ ?s ?p ?o }} GROUP BY ?p ORDER BY DESC(?n) LIMIT {int(top)}")
    out, ids = [], []
    for row in result.rows:
        if "p" not in row:
            continue
        short = graph.dialect.short(row["p"].value)
        if short is None or COMPOUND_SEP in short or not graph._queryable(short) or graph.dialect.relation_filter.drops(short):
            continue
        ids.append(short)
        out.append({"relation": short, "count": int(row["n"].value) if "n" in row else 0})
    if graph.dialect.relation_labels and ids:
        names = await graph.labels(sorted(set(ids)))
        for item in out:
            item["label"] = names[item["relation"]].label if item["relation"] in names else None
    return out


def _check_port(port: int) -> None:
    """Fail with one line when the loopback port is taken (uvicorn would log and exit)."""
    import socket

    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: only a listener conflicts
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            raise KgfedError(f"cannot listen on 127.0.0.1:{port} ({exc.strerror}): pick another --port") from None


@dataclass(frozen=True)
class ServerOptions:
    """What one `kgfed mcp` server serves (its KGs, HTTP and cache options, alignment, LLM, text) and how."""

    kgs: tuple[KGSpec, ...] = (KGSpec("freebase"), KGSpec("wikidata"))
    http: HttpOptions = HttpOptions()
    cache: CacheOptions = CacheOptions()
    align: AlignOptions = AlignOptions()
    llm: str = "none"  # the ask tool's LLM spec (`make_llm`)
    llm_concurrency: int | None = None  # LLM calls in flight for every ask together (`--llm-concurrency`)
    text_source: str | None = None  # None: Wikipedia beside a live endpoint, else the demo extracts
    transport: str = "stdio"  # or "http": streamable HTTP on 127.0.0.1:`port`
    port: int = 8765
    query_timeout: float | None = None  # sparql on a file store: seconds per query (None: http.timeout, i.e. --timeout)
    query_memory_mb: int = 512  # sparql on a file store: memory a query's worker may add to the loaded store
    query_workers: int = 2  # sparql: queries at once (and worker processes per file store)


async def _serve_http(server: MCPServer, port: int) -> None:
    """`run_streamable_http_async` with a bounded graceful shutdown: on Ctrl-C uvicorn waits at most
    `SHUTDOWN_GRACE` seconds for calls in flight (a `sparql` call may wait up to --timeout), then cancels them."""
    import uvicorn

    from ...endpoints.embedded import stop_query_workers

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            super().handle_exit(sig, frame)
            stop_query_workers()  # sparql calls in flight end now, with an error, instead of holding the shutdown

    def cancelled_on_shutdown(record: logging.LogRecord) -> bool:
        """uvicorn logs a call cancelled after the grace period as a traceback: a stop is not an error."""
        return not (record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError))

    logging.getLogger("uvicorn.error").addFilter(cancelled_on_shutdown)
    app = server.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level=server.settings.log_level.lower(),
                            timeout_graceful_shutdown=SHUTDOWN_GRACE)
    await Server(config).serve()


SHUTDOWN_GRACE = 2.0


async def serve(options: ServerOptions) -> int:
    """Open the engine, then serve MCP on stdio or streamable HTTP until the client or a signal ends it."""
    engine = Engine.open(options)
    try:
        server = build_server(engine)
        if options.transport == "stdio":
            if sys.stdin.isatty():
                print("kgfed: MCP server on stdio, waiting for an MCP client (an agent such as Claude Desktop/Code "
                      "starts this command itself; --transport http serves a port instead; Ctrl-C stops it)",
                      file=sys.stderr)
            await server.run_stdio_async()
        else:
            _check_port(options.port)
            print(f"kgfed: MCP server on http://127.0.0.1:{options.port}/mcp (streamable HTTP; Ctrl-C stops it)",
                  file=sys.stderr)
            await _serve_http(server, options.port)
    finally:
        await engine.aclose()
    return 0
