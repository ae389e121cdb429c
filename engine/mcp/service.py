"""The engine one `kgfed mcp` run shares, and what each tool does with it (no MCP SDK here).

`Engine` holds the server's `Session` (`kgfed.engine.session`, built from `ServerOptions`: the KGs over one
HttpClient, the cache stores, and lazily the text source, the LLM and the embedder, all on that client) and
the aligner; each tool is one `Engine` method returning (structured data, text).
The `sparql` method checks the query with `kgfed.sparql.guard` against the KG's `ServicePolicy` and runs
it in a lane of its own under `endpoints.embedded.bounded` (see `server`'s docstring).
"""
from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

from ...endpoints.options import DEFAULT_QUERY_MEMORY_MB, TOOL_ANSWER_BYTES
from ...sparql.dialects import COMPOUND_SEP
from ...sparql.errors import InvalidIdentifier, KgfedError
from ...sparql.guard import ServicePolicy, analyse
from ...sparql.secrets import redact
from ..config import AlignOptions, CacheOptions, HttpOptions, KGSpec, SessionSpec
from ..federation.paths import merged_paths
from ..federation.topics import topics_from_ids
from ..session import Session
from .lanes import FairLanes
from .schemas import (MAX_IDS, AlignmentOut, Cost, EdgeOut, HitOut, LabelOut, LinkOut, NodeOut, PassageOut,
                      PathOut, RelationOut, StepOut)

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
    query_memory_mb: int = DEFAULT_QUERY_MEMORY_MB  # sparql on a file store: memory a query's worker may add to the loaded store
    query_workers: int = 2  # sparql: queries at once (and worker processes per file store)

    def session_spec(self) -> SessionSpec:
        """The server's `SessionSpec`, built here and nowhere else: its KGs, HTTP, cache, alignment, LLM and text."""
        return SessionSpec(kgs=self.kgs, http=self.http, cache=self.cache, align=self.align, llm=self.llm,
                           llm_concurrency=self.llm_concurrency, text=_text_spec(self))


# -- the engine a server run shares ----------------------------------------------------------------
def _cost(counter: Mapping[str, float], seconds: float | None = None) -> Cost:
    data = {k: v for k, v in counter.items() if k in Cost.model_fields}
    if seconds is not None:
        data["seconds"] = round(seconds, 4)
    return Cost.model_validate(data)  # Cost(**data): the counter's numbers checked against the fields


def _partial(answers: Sequence[Any]) -> dict[str, Any]:
    """`partial`/`partial_note` of the engine's answers (`Answer`/`AnswerMap` carry them; anything else is complete)."""
    cut = [a for a in answers if getattr(a, "partial", False)]
    notes = dict.fromkeys(n for a in cut for n in (getattr(a, "notes", ()) or ("incomplete",)))
    return {"partial": bool(cut), "partial_note": "; ".join(notes) or None}


def _quoted(text: str, width: int = 60) -> str:
    """`repr` of the id as given, shortened: 'Q42\\n' shows its line feed (`_short` would make it 'Q42')."""
    shown = repr(str(text))
    return shown if len(shown) <= width else shown[:width - 1] + "…"


def _short(text: str | None, width: int = 60) -> str:
    if text is None:
        return ""
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 1] + "…"


class Engine:
    """The session (KGs, client, stores, text source, LLM, embedder), aligner and methods one `kgfed mcp` run
    shares across MCP sessions."""

    def __init__(self, options: ServerOptions, session: Session):
        if not isinstance(session, Session):  # 0.2's Engine(options, kgs), removed in 0.3.0
            raise KgfedError(f"Engine(options, {type(session).__name__}) was removed in kgfed 0.3.0: use Engine.open(options) "
                             "or Engine(options, session) (docs/migration.md)")
        self.options = options
        self.session = session
        self.kgs = session.kgs  # over the session's one HttpClient, closed with it
        self._aligner = None
        self._lock = asyncio.Lock()
        # the sparql tool's own lanes: heavy user queries wait here, never in front of other tools' lookups, and
        # fairly between callers (MCP sessions): no caller holds every lane (`lanes.FairLanes`)
        self._sparql_lanes = FairLanes(max(1, options.query_workers))

    @classmethod
    def open(cls, options: ServerOptions) -> Engine:
        """The engine over a new session of `options` (its KGs opened now; text, LLM and embedder on first use)."""
        return cls(options, Session(options.session_spec()).open())

    async def aclose(self) -> None:
        from ...endpoints.embedded import stop_query_workers

        stop_query_workers()  # queries still running end now (their callers get an error), so nothing waits on them
        await self.session.aclose()

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
            raise InvalidIdentifier(f"invalid entity id {_quoted(entity, 50)}: no KG of this server takes it ({forms})")
        return found

    def describe(self) -> list[dict[str, Any]]:
        return [{"name": name, "dialect": kg.dialect.name, "endpoint": redact(kg.endpoint.name),
                 "ids": kg.dialect.id_forms,
                 "stats": dict(kg.stats)} for name, kg in self.kgs.items()]

    # -- lazily built parts ------------------------------------------------------------------------
    def aligner(self, methods: Sequence[str] | None = None):
        """The session's aligner with `--align` options (one, kept), or one with other `methods` for this call."""
        if methods:
            return self.session.aligner(self.options.align, methods)
        if self._aligner is None:
            self._aligner = self.session.aligner(self.options.align)
        return self._aligner

    async def text_source(self):
        """The session's text source (Wikipedia beside a live endpoint, else the demo extracts; `--text-source`)."""
        async with self._lock:
            return self.session.text

    async def method(self, name: str, width: int | None, depth: int | None):
        """A method object over the session's KGs, LLM (`--llm`), embedder and (tog2/hydra) text source."""
        async with self._lock:
            llm, embedder = self.session.llm, self.session.embedder
        from ..methods import get_method

        cls = get_method(name)
        params = {k: v for k, v in (("width", width), ("depth", depth)) if v is not None}
        text = await self.text_source() if getattr(cls, "READS_TEXT", False) else None
        try:
            return cls(self.kgs, llm, embedder=embedder, text=text, **params)
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
            raise InvalidIdentifier(f"invalid relation id {_quoted(relation, 60)} for {', '.join(chosen)}: use P69, "
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
        embedder = None
        if ranker == "sbert":  # the session's (None when sentence embeddings cannot run here)
            async with self._lock:
                embedder = self.session.embedder
            if embedder is None:
                from ..toolbox.embeddings import missing_extra

                raise KgfedError(f"{missing_extra() or 'no sentence embedder'}; or give ranker bm25")
        passages = await rank_pages(question, pages, top_k=top_k, ranker=ranker, embedder=embedder)  # type: ignore[arg-type]
        missing = {e: (p.reason or "empty page") for e, p in pages.items() if not p.text}
        out = [PassageOut(rank=i, entity=p.entity, title=p.title, text=p.text, score=round(p.score, 4), qid=p.qid,
                          section=p.section) for i, p in enumerate(passages, 1)]
        lines = [f"{p.rank}. [{p.title or p.entity}] {p.text}" for p in out]
        lines += [f"{e}: no text ({why})" for e, why in missing.items()]
        return ({"question": question, "source": getattr(source, "name", "text"), "passages": out, "missing": missing},
                "\n".join(lines))

    async def sparql(self, query: str, kg: str | None, max_rows: int, rewrite: bool,
                     caller: Hashable = None) -> tuple[dict, str]:
        """`caller` (the MCP session) picks its fair lane; the answer is bounded by `--timeout`, its bytes by
        `TOOL_ANSWER_BYTES` and its rows and terms by the run's budget, before the tool builds its reply."""
        from ...endpoints.bounds import bounded

        if kg is None or kg == "":
            if len(self.kgs) > 1:
                raise KgfedError(f"which KG? give kg as one of {', '.join(self.kgs)}")
            kg = next(iter(self.kgs))
        graph = self.pick(kg)[kg]
        if rewrite:
            from ...sparql.rewrite import to_standard_sparql

            query = to_standard_sparql(query)
        checked = analyse(query, self.service_policy(kg), max_rows,  # pure and linear: no thread needed
                          functions=graph.dialect.functions).text
        options = self.options
        timeout = options.query_timeout or options.http.timeout
        async with self._sparql_lanes.lane(caller):
            with bounded(timeout=timeout, memory_mb=options.query_memory_mb, workers=options.query_workers,
                         max_bytes=TOOL_ANSWER_BYTES, max_rows=options.http.max_rows, max_terms=options.http.max_terms):
                try:
                    result = await graph.select(checked)
                except BaseException:  # stopped or given up: the lane stays held until its worker is back
                    settled = getattr(graph.endpoint.inner, "settled", None)
                    if settled is not None:
                        await settled(2 * timeout)
                    raise
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
        """What a SERVICE in a caller's query on `kg` may reach: WDQS's built-in services on WDQS, nothing else; not
        even the KG's own endpoint origin(s) (each such call multiplies the endpoint's work; issue 41)."""
        parts = _http_parts(self.kgs[kg].endpoint.inner)
        return ServicePolicy.own_origin_refused([p.url for _, p in parts], builtins=any(p.server == "wdqs" for _, p in parts))

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


def _text_spec(options: ServerOptions) -> str:
    """`--text-source`, else Wikipedia beside a live endpoint, else the demo extracts."""
    from ..config import default_text_source

    return options.text_source or default_text_source(*(kg.endpoint for kg in options.kgs))


def _http_parts(endpoint: Any) -> list[tuple[str, Any]]:
    """(host, HttpEndpoint) of an endpoint's HTTP parts (a split-graph endpoint has several; a file store none)."""
    parts = getattr(endpoint, "parts", None) or getattr(endpoint, "endpoints", None) or [endpoint]
    out = []
    for part in parts:
        url = getattr(part, "url", None)
        if isinstance(url, str) and url:
            out.append(((urlsplit(url).hostname or "").lower(), part))
    return out


# -- paths in a merged subgraph (the search is federation.paths) ----------------------------------------
def connecting_paths(merged, entities: Sequence[str], aligner, max_depth: int, max_paths: int) -> tuple[list[PathOut], str | None]:
    """`federation.paths.merged_paths` as the `paths` tool's result models."""
    found, note = merged_paths(merged, entities, aligner, max_depth, max_paths)
    return [PathOut(source=p.source, target=p.target, length=p.length, text=p.text,
                    steps=[StepOut(**asdict(step)) for step in p.steps]) for p in found], note


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
