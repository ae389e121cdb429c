"""`kgfed extract`: a dataset's D-hop neighbourhood from a big endpoint, as one N-Triples file.

A CWQ or WebQSP run needs only the part of Freebase around its questions' topic entities. This
module fetches that part from any endpoint kgfed speaks (QLever-Freebase, a Virtuoso with the full
dump, Wikidata) and writes it as N-Triples that `file:KG.nt` loads, so later runs need no server.

Leak-free by construction: the extractor's only input is a list of `Topics` (question id, topic
entity ids). `read_topics` projects a question file onto that before anything is fetched, and
`write_topics` freezes the projection into a file that holds nothing else (`kgfed extract
--topics-only`). Gold answers and gold queries are read only by the separate check step
(`kgfed extract-check`), after the extract is written.

What one question's extract holds (hops = D):
- every edge, in both directions, of every node within D hops of a topic entity, through the
  dialect's own templates (a relation census per batch of nodes, then the `neighbors` template in
  batches sized to stay under the server's row cap, all through the response cache);
- Freebase CVT nodes (no name) are expanded inside the hop that reaches them, so `r1|r2` compound
  relations are complete at every depth, the last one included;
- the names (and aliases) of every node, and the types of the boundary nodes (`type.object.type`,
  `common.topic.notable_types`; Wikidata `P31`).
Fan-out caps (`Caps`, documented defaults): at most `per_relation` far ends per (node, relation,
direction), type relations are never followed backwards (no "all instances of Person") and their
objects are never expanded, bookkeeping relations are excluded, and a question stops growing at
`max_nodes`. Every cap that fired is reported per question.

Resumable: each finished question appends its triples to `OUT.partial` and its report to
`OUT.questions.jsonl`; a re-run skips the questions already reported, and at the end (or on
Ctrl-C) `OUT` is written sorted and de-duplicated, with the sidecar `OUT.json` (source endpoint,
date, hops, caps, counts).

Writes that survive (`harness.files`): journal lines are appended whole or not at all (a write that
hits a full disk is cut back), a resume first cuts a torn last line (as `kgfed run` does), and `OUT`
and its sidecar are replaced atomically, so `OUT` always parses. A full disk or an unwritable
directory stops the extract with one line (`DiskError`) saying what was kept; freeing space and running
the same command again finishes it, to the same file an uninterrupted extract writes.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...sparql import terms
from ...sparql.dialects import NS, WDT, WIKIBASE, Dialect, Direction
from ...sparql.errors import InvalidIdentifier, KgfedError
from ...sparql.results import SelectResult, Term
from ...sparql.secrets import redact
from .files import DiskError, LineLog, atomic_write, check_lines, disk_error, drop_partial_line

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
_IRI_BAD = re.compile(r'[\x00-\x20<>"{}|^`\\]')
FORMAT_VERSION = 1
MAX_FAILURES_BEFORE_SUCCESS = 10  # a run whose first questions all fail is a broken setup, not bad luck
interrupted_note: str | None = None  # what the last interrupted extract kept (the CLI prints it once)

# Relations whose objects are types: kept outgoing, never followed backwards, objects not expanded.
FREEBASE_TYPES = ("type.object.type", "common.topic.notable_types")
WIKIDATA_TYPES = ("P31",)
# Never fetched as edges: names/aliases/descriptions come from the labels template; the rest is
# Freebase bookkeeping (keys, permissions, web pages, the freebase./kg./dataworld./user. domains).
FREEBASE_EXCLUDE = (
    "type.object.name", "common.topic.alias", "common.topic.description", "type.object.key",
    "type.object.permission", "common.topic.topic_equivalent_webpage", "common.topic.webpage",
    "common.webpage.", "common.annotation_category.", "common.topic.article", "common.document.",
    "freebase.", "kg.", "dataworld.", "user.",
)


@dataclass(frozen=True)
class Topics:
    """All the extractor may know of a question: its id and its topic entity ids. Nothing else."""

    id: str
    entities: tuple[str, ...]


@dataclass(frozen=True)
class Caps:
    """Fan-out limits of one extraction (the defaults are the documented ones)."""

    per_relation: int = 100      # far ends kept per (node, relation, direction)
    max_nodes: int = 5_000       # nodes per question; expansion stops when reached
    row_budget: int = 5_000      # rows per neighbours query (Virtuoso's default cap is 10,000)
    batch_size: int = 50         # nodes per census/labels query
    type_relations: tuple[str, ...] = FREEBASE_TYPES
    exclude: tuple[str, ...] = FREEBASE_EXCLUDE

    @classmethod
    def for_dialect(cls, dialect: Dialect, **overrides: Any) -> Caps:
        """The defaults of a dialect (Freebase or Wikidata), with `overrides` (None = keep default)."""
        base = cls() if dialect.compound_relations else cls(type_relations=WIKIDATA_TYPES, exclude=())  # Freebase's defaults
        given = {k: v for k, v in overrides.items() if v is not None}
        for name in ("per_relation", "max_nodes", "row_budget", "batch_size"):
            if name in given and given[name] < 1:
                raise KgfedError(f"--{name.replace('_', '-')} must be at least 1")
        return cls(**{**asdict(base), **{k: tuple(v) if isinstance(v, list) else v for k, v in given.items()}})

    def excluded(self, relation: str) -> bool:
        return any(relation == x or (x.endswith(".") and relation.startswith(x)) for x in self.exclude)


# -- topics: the only input ---------------------------------------------------------------------------
TOPICS_KEYS = frozenset({"id", "topics"})


def read_topics(path: str | os.PathLike[str], kg: str = "freebase") -> list[Topics]:
    """(question id, topic ids) of every question of a topics file or any question file kgfed reads.

    A question file's gold fields are dropped here, before the extractor sees anything.
    """
    from .datasets import TEXT_SUFFIXES, is_rog, load_dataset, read_records, resolve_path

    if not is_rog(path) and resolve_path(path).suffix.lower() not in TEXT_SUFFIXES:  # .txt/.csv: plain questions
        records = read_records(resolve_path(path))
        if records and all(set(r) <= TOPICS_KEYS and "id" in r for r in records):
            return [Topics(str(r["id"]), tuple(sorted((r.get("topics") or {}).get(kg, {})))) for r in records]
    return [Topics(q.id, tuple(sorted(q.topics.get(kg, {})))) for q in load_dataset(path)]


def write_topics(questions: str | os.PathLike[str], out: str | os.PathLike[str]) -> int:
    """Freeze a question file's ids and topic entities (with names) into `out` (JSONL); returns the count."""
    from .datasets import load_dataset

    lines = [json.dumps({"id": q.id, "topics": q.topics}, ensure_ascii=False, sort_keys=True) for q in load_dataset(questions)]
    atomic_write(Path(out), "".join(line + "\n" for line in lines))
    return len(lines)


# -- N-Triples ---------------------------------------------------------------------------------------
def nt_term(term: Term) -> str | None:
    """A term in N-Triples syntax; None for blank nodes and IRIs N-Triples cannot hold."""
    if term.kind == "uri":
        return None if _IRI_BAD.search(term.value) else f"<{term.value}>"
    if term.kind != "literal":
        return None
    text = term.value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    if term.lang:
        return f'"{text}"@{term.lang}'
    if term.datatype and term.datatype != XSD_STRING and not _IRI_BAD.search(term.datatype):
        return f'"{text}"^^<{term.datatype}>'
    return f'"{text}"'


def nt_line(s: Term, p: Term, o: Term) -> str | None:
    parts = [nt_term(s), nt_term(p), nt_term(o)]
    if None in parts or s.kind != "uri" or p.kind != "uri":
        return None
    return f"{parts[0]} {parts[1]} {parts[2]} ."


# -- one question --------------------------------------------------------------------------------------
@dataclass
class Fetched:
    """What one question's extraction gathered, and its report."""

    id: str
    lines: set[str] = field(default_factory=set)
    report: dict[str, Any] = field(default_factory=dict)
    relations: set[str] = field(default_factory=set)  # relation ids on the written edges


@dataclass
class _Step:
    """Far ends reached by expanding a set of nodes."""

    named: set[str] = field(default_factory=set)
    nameless: set[str] = field(default_factory=set)
    typed: set[str] = field(default_factory=set)  # reached only through type relations


class Extractor:
    """Fetches the D-hop neighbourhood of each question's topic entities from one KG."""

    def __init__(self, kg, hops: int, caps: Caps | None = None, *, descriptions: bool = False):
        if hops < 1:
            raise KgfedError("--hops must be at least 1")
        self.kg = kg
        self.dialect: Dialect = kg.dialect
        self.hops = hops
        self.caps = caps or Caps.for_dialect(kg.dialect)
        self.descriptions = descriptions
        self.freebase = kg.dialect.compound_relations  # Freebase: CVTs expanded in their hop, readable relation ids
        self._namespace = NS if self.freebase else WDT
        self._label = _iri(self.dialect.label_predicate)
        self._alias = _iri(self.dialect.alias_predicate)
        self._description = _iri(self.dialect.description_predicate)

    # ---- public --------------------------------------------------------------------------------------
    async def question(self, topics: Topics) -> Fetched:
        """The extract of one question: edges, names and types around its topic entities."""
        from ...cache.costs import track

        started = time.perf_counter()
        out = Fetched(topics.id)
        report: dict[str, Any] = {"id": topics.id, "topics": list(topics.entities), "invalid_topics": [],
                                  "missing_topics": [], "capped": [], "partial": 0, "node_budget_hit": False}
        valid = []
        for entity in topics.entities:
            try:
                valid.append(self.dialect.check_entity(entity))
            except InvalidIdentifier:
                report["invalid_topics"].append(entity)
        with track() as cost:
            seen: set[str] = set(valid)
            expanded: set[str] = set()
            frontier = list(valid)
            cvts = 0
            for _ in range(self.hops):
                todo = [n for n in frontier if n not in expanded]
                step = await self._expand(todo, out, report)
                expanded.update(todo)
                inner = sorted(step.nameless - expanded) if self.freebase else []
                if inner:  # CVTs belong to the hop that reached them
                    more = await self._expand(inner, out, report)
                    expanded.update(inner)
                    cvts += len(inner)
                    step.named |= more.named
                    step.typed |= more.typed
                    step.nameless |= more.nameless
                reached = step.named | step.nameless
                seen |= reached
                frontier = sorted(n for n in step.named - step.typed if n not in expanded)
                if len(seen) >= self.caps.max_nodes:
                    report["node_budget_hit"] = True
                    break
            boundary = sorted(n for n in seen if n not in expanded)
            await self._types(boundary, out, report)
            found = await self._labels(sorted(seen), out)
            if not self.freebase:
                await self._properties(sorted(out.relations - {""}), out)
            has_edges = report.get("_has_edges", {})
            report["missing_topics"] = [t for t in valid if t not in found and not has_edges.get(t)]
        report.pop("_has_edges", None)
        report.update(nodes=len(seen), expanded=len(expanded), cvts=cvts, triples=len(out.lines),
                      queries=cost.get("sparql_queries", 0), cache_hits=cost.get("cache_hits", 0),
                      requests=cost.get("requests_sent", 0), seconds=round(time.perf_counter() - started, 3))
        out.report = report
        return out

    # ---- steps ---------------------------------------------------------------------------------------
    async def _expand(self, nodes: Sequence[str], out: Fetched, report: dict[str, Any]) -> _Step:
        """All edges of `nodes` in both directions (capped), written to `out`; the far ends reached."""
        step = _Step()
        if not nodes:
            return step
        census = await self._census(nodes, report)
        has_edges = report.setdefault("_has_edges", {})
        small: dict[Direction, list[tuple[str, str, int]]] = {"out": [], "in": []}
        big: list[tuple[str, str, Direction, int]] = []
        for node, relation, direction, count in census:
            has_edges[node] = True
            if self.caps.excluded(relation) or (direction == "in" and relation in self.caps.type_relations):
                continue
            if count > self.caps.per_relation:
                big.append((node, relation, direction, count))
            else:
                small[direction].append((node, relation, count))
        queries: list[tuple[Direction, str]] = []  # (direction, query)
        for direction, items in small.items():
            for batch in _budget_batches(items, self.caps.row_budget, self.caps.batch_size):
                queries.append((direction, self.dialect.neighbors([(n, r) for n, r, _ in batch], direction)))
        for node, relation, direction, count in big:
            report["capped"].append({"node": node, "relation": relation, "direction": direction,
                                     "count": count, "kept": self.caps.per_relation})
            # ordered, so every engine keeps the same far ends (a bare LIMIT keeps whichever come first)
            queries.append((direction, self.dialect.neighbors([(node, relation)], direction)
                            + f" ORDER BY STR(?x) LIMIT {self.caps.per_relation}"))
        results = await asyncio.gather(*(self.kg.select(q, bound=False) for _, q in queries))
        names: dict[str, bool] = {}
        typed_only: dict[str, bool] = {}
        for (direction, _), result in zip(queries, results):
            report["partial"] += bool(result.partial)
            for row in result.rows:
                if not {"e", "r", "x"} <= row.keys():
                    continue
                origin, rel, far = row["e"], row["r"], row["x"]
                line = nt_line(origin, rel, far) if direction == "out" else nt_line(far, rel, origin)
                if line:
                    out.lines.add(line)
                    out.relations.add(self._short(rel) or "")
                if far.kind != "uri":
                    continue
                far_id = self._entity(far)
                if far_id is None:
                    continue
                label = row.get("xlabel")
                if label is not None:
                    self._add(out, far, self._label, label)
                names[far_id] = names.get(far_id, False) or label is not None
                is_type = self._short(rel) in self.caps.type_relations and direction == "out"
                typed_only[far_id] = typed_only.get(far_id, True) and is_type
        for far_id, named in names.items():
            (step.named if named else step.nameless).add(far_id)
            if typed_only[far_id]:
                step.typed.add(far_id)
        return step

    async def _census(self, nodes: Sequence[str], report: dict[str, Any]) -> list[tuple[str, str, Direction, int]]:
        """(node, relation, direction, far ends) for every relation of `nodes` the dialect can query."""
        directions: tuple[Direction, ...] = ("out", "in")
        jobs = [(d, list(batch)) for d in directions for batch in _chunks(nodes, self.caps.batch_size)]
        results = await asyncio.gather(*(self._select_split(partial(self._census_query, direction=d), batch, report)
                                         for d, batch in jobs))
        found: list[tuple[str, str, Direction, int]] = []
        for (direction, _), rows in zip(jobs, results):
            for row in rows:
                if not {"e", "r", "n"} <= row.keys():
                    continue
                node, relation = self._short(row["e"]), self._short(row["r"])
                # ?e is bound by VALUES to the asked nodes: a row whose ?e is no node id is not theirs
                if node is None or relation is None or not self.kg._queryable(relation):
                    continue
                found.append((node, relation, direction, int(float(row["n"].value))))
        return sorted(found)

    def _census_query(self, nodes: Sequence[str], direction: Direction) -> str:
        values = " ".join(self.dialect.entity(n) for n in nodes)
        edge = "?e ?r ?x ." if direction == "out" else "?x ?r ?e ."
        return (f"SELECT ?e ?r (COUNT(?x) AS ?n) WHERE {{\n  VALUES ?e {{ {values} }}\n  {edge}\n"
                f"  FILTER(STRSTARTS(STR(?r), {terms.literal(self._namespace)}))\n}} GROUP BY ?e ?r")

    async def _select_split(self, render: Callable[[Sequence[str]], str], items: Sequence[str],
                            report: dict[str, Any]) -> list[dict[str, Term]]:
        """Rows of `render(items)`; a partial answer (row cap, timeout) is asked again in halves."""
        result: SelectResult = await self.kg.select(render(items), bound=False)
        if not result.partial:
            return result.rows
        if len(items) == 1:
            report["partial"] += 1
            return result.rows
        half = len(items) // 2
        first, second = await asyncio.gather(self._select_split(render, items[:half], report),
                                             self._select_split(render, items[half:], report))
        return first + second

    async def _types(self, nodes: Sequence[str], out: Fetched, report: dict[str, Any]) -> None:
        """Types of the boundary nodes (their other edges are beyond the hop limit)."""
        pairs = [(n, t) for n in nodes for t in self.caps.type_relations]
        queries = [self.dialect.neighbors(batch, "out") for batch in _chunks(pairs, self.caps.batch_size)]
        for result in await asyncio.gather(*(self.kg.select(q, bound=False) for q in queries)):
            report["partial"] += bool(result.partial)
            for row in result.rows:
                if {"e", "r", "x"} <= row.keys():
                    self._add(out, row["e"], row["r"], row["x"])
                    out.relations.add(self._short(row["r"]) or "")
                    if "xlabel" in row:
                        self._add(out, row["x"], self._label, row["xlabel"])

    async def _labels(self, nodes: Sequence[str], out: Fetched) -> set[str]:
        """Names and aliases (and descriptions when asked) of every node; returns the named ones."""
        queries = [self.dialect.labels(batch) for batch in _chunks(nodes, self.caps.batch_size)]
        named: set[str] = set()
        for result in await asyncio.gather(*(self.kg.select(q, bound=False) for q in queries)):
            for row in result.rows:
                node = row.get("id")
                if node is None:
                    continue
                if "label" in row:
                    self._add(out, node, self._label, row["label"])
                    short = self._short(node)
                    if short is not None:  # a nameless id is never a node (the callers test node ids)
                        named.add(short)
                if "alias" in row:
                    self._add(out, node, self._alias, row["alias"])
                if "desc" in row and self.descriptions:
                    self._add(out, node, self._description, row["desc"])
        return named

    async def _properties(self, relations: Sequence[str], out: Fetched) -> None:
        """Wikidata: each property's `wikibase:directClaim` link and label, which the relations template
        reads to name a relation (without them a method sees bare P-ids)."""
        claims = [self.dialect.relation(r) for r in relations]
        queries = [f"SELECT ?prop ?d WHERE {{\n  VALUES ?d {{ {' '.join(batch)} }}\n  ?prop <{WIKIBASE}directClaim> ?d .\n}}"
                   for batch in _chunks(claims, self.caps.batch_size)]
        props: set[str] = set()
        for result in await asyncio.gather(*(self.kg.select(q, bound=False) for q in queries)):
            for row in result.rows:
                if {"prop", "d"} <= row.keys() and (prop := self._entity(row["prop"])):
                    self._add(out, row["prop"], Term("uri", WIKIBASE + "directClaim"), row["d"])
                    props.add(prop)
        await self._labels(sorted(props), out)

    # ---- helpers -------------------------------------------------------------------------------------
    def _add(self, out: Fetched, s: Term, p: Term, o: Term) -> None:
        line = nt_line(s, p, o)
        if line:
            out.lines.add(line)

    def _short(self, term: Term) -> str | None:
        return self.dialect.short(term.value) if term.kind == "uri" else None

    def _entity(self, term: Term) -> str | None:
        short = self._short(term)
        if short is None:
            return None
        try:
            return self.dialect.check_entity(short)
        except InvalidIdentifier:
            return None


def _iri(rendered: str) -> Term:
    return Term("uri", rendered.strip("<>"))


def _chunks(items: Sequence, size: int) -> Iterable[Sequence]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _budget_batches(items: Sequence[tuple[str, str, int]], budget: int, size: int) -> Iterable[list[tuple[str, str, int]]]:
    """Consecutive batches of at most `size` items whose counts sum to at most `budget` (a bigger item alone)."""
    batch: list[tuple[str, str, int]] = []
    rows = 0
    for item in items:
        if batch and (rows + item[2] > budget or len(batch) >= size):
            yield batch
            batch, rows = [], 0
        batch.append(item)
        rows += item[2]
    if batch:
        yield batch


# -- the whole run: journal, report, sidecar -----------------------------------------------------------
def _sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _nt_line(line: str) -> bool:
    """A line of an N-Triples file kgfed wrote: a triple (`<s> <p> o .`), or a blank line."""
    return (line.startswith(("<", "_:")) and line.rstrip().endswith(" .")) or not line.strip()


def _report_line(line: str) -> bool:
    """A JSON object: a line of the report journal, or the sidecar."""
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return not line.strip()


class Journal:
    """The on-disk state of one extraction: finished questions' triples and reports, resumable."""

    def __init__(self, out: str | os.PathLike, settings: dict[str, Any], *, fresh: bool = False):
        self.out = Path(out)
        self.partial = self.out.with_name(self.out.name + ".partial")
        self.reports_path = self.out.with_name(self.out.name + ".questions.jsonl")
        self.sidecar = self.out.with_name(self.out.name + ".json")
        self.settings = settings
        self._check_own()  # before --fresh deletes or a resume merges: never a file kgfed did not write
        if fresh:
            for path in (self.out, self.partial, self.reports_path, self.sidecar):
                path.unlink(missing_ok=True)
        self.reports: dict[str, dict[str, Any]] = {}
        self._check_settings()
        try:
            self.out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise disk_error(exc, self.out.parent) from None
        self._load_reports()
        self._partial = LineLog(self.partial)  # both cut a torn last line (a full disk, a kill -9) first
        self._reports = LineLog(self.reports_path)

    def _check_own(self) -> None:
        """Refuse, before anything is deleted, merged or cut, an OUT, journal or sidecar kgfed did not write."""
        check_lines(self.out, _nt_line, "an N-Triples file", torn_ok=False)  # OUT is written whole (atomic_write)
        check_lines(self.partial, _nt_line, "an N-Triples journal")
        check_lines(self.reports_path, _report_line, "an extract report journal")
        try:
            ours = not self.sidecar.exists() or "settings" in json.loads(self.sidecar.read_bytes())
        except (OSError, ValueError, TypeError):
            ours = False
        if not ours:
            raise KgfedError(f"{self.sidecar} is not an extract sidecar kgfed wrote: choose another --out; the file is "
                             "left as it is")

    def _check_settings(self) -> None:
        if not self.sidecar.exists() and not self.reports_path.exists():
            return
        try:
            old = json.loads(self.sidecar.read_text(encoding="utf-8")).get("settings", {}) if self.sidecar.exists() else None
        except ValueError:
            old = None
        if old is not None and old != json.loads(json.dumps(self.settings)):  # tuples are lists in JSON
            diff = ", ".join(f"{k}={old.get(k)!r}" for k in self.settings if old.get(k) != self.settings[k])
            raise KgfedError(f"{self.out} was extracted with other settings ({diff}): use another --out, or --fresh to start over")

    def _load_reports(self) -> None:
        if not self.reports_path.exists():
            return
        drop_partial_line(self.reports_path, _report_line)  # a kill -9 or a full disk mid-line: that question is redone
        for line in self.reports_path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                self.reports[record["id"]] = record

    def add(self, fetched: Fetched) -> None:
        """Append one finished question (triples first, then its report: the report marks it done).
        Each append is whole or nothing (`LineLog`); a question whose report could not be written is redone."""
        self._partial.append("".join(line + "\n" for line in sorted(fetched.lines)))
        self._reports.append(json.dumps(fetched.report, ensure_ascii=False, sort_keys=True) + "\n")
        self.reports[fetched.id] = fetched.report

    def finalize(self, extra: dict[str, Any]) -> dict[str, Any]:
        """Write OUT (sorted, de-duplicated: the journal plus an earlier OUT) and the sidecar, each atomically.
        A failure (`DiskError`) leaves the journal as it was, so the next run finishes the job."""
        self._partial.close()
        self._reports.close()
        lines: set[str] = set()
        for path in (self.out, self.partial):
            if path.exists():
                with open(path, encoding="utf-8") as fh:
                    lines.update(line.rstrip("\n") for line in fh if line.endswith(" .\n"))
        atomic_write(self.out, "".join(line + "\n" for line in sorted(lines)))
        self.partial.unlink(missing_ok=True)
        subjects = {line.split(" ", 1)[0] for line in lines}
        reports = list(self.reports.values())
        sidecar = {
            "format": FORMAT_VERSION, "out": str(self.out), "settings": self.settings,
            "date": datetime.now(UTC).replace(microsecond=0).isoformat(),
            "counts": {"questions": len(reports), "triples": len(lines), "subjects": len(subjects),
                       "bytes": self.out.stat().st_size,
                       "capped_relations": sum(len(r["capped"]) for r in reports),
                       "questions_capped": sum(bool(r["capped"]) for r in reports),
                       "questions_node_budget_hit": sum(bool(r["node_budget_hit"]) for r in reports),
                       "questions_missing_topics": sum(bool(r["missing_topics"]) for r in reports),
                       "partial_answers": sum(r["partial"] for r in reports)},
            **extra,
        }
        atomic_write(self.sidecar, json.dumps(sidecar, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
        return sidecar


class Bar:
    """Progress on stderr: a rich bar on a terminal, else a line every 10 s."""

    def __init__(self, total: int, enabled: bool = True):
        self.total, self.enabled = total, enabled
        self.done = self.triples = self.queries = self.hits = 0
        self.started = self._last = time.perf_counter()
        self._bar: Progress | None = None
        self._task: TaskID

    def __enter__(self) -> Bar:
        from rich.console import Console

        console = Console(stderr=True)
        if self.enabled and console.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(TextColumn("extract"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                 TextColumn("{task.fields[stats]}"), console=console)
            self._bar.__enter__()
            self._task = self._bar.add_task("extract", total=self.total, stats="")
        return self

    def add(self, report: dict[str, Any]) -> None:
        self.done += 1
        self.triples += report["triples"]
        self.queries += report["queries"]
        self.hits += report["cache_hits"]
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        line = (f"{self.triples} triples · {self.queries / elapsed:.0f} queries/s · "
                f"cache {self.hits / self.queries if self.queries else 0:.0%}")
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, stats=line)
        elif self.enabled and time.perf_counter() - self._last >= 10:
            self._last = time.perf_counter()
            print(f"kgfed: extract {self.done}/{self.total} · {line}", file=sys.stderr, flush=True)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)


async def extract(kg, topics: Sequence[Topics], out: str | os.PathLike, *, hops: int, caps: Caps | None = None,
                  source: str = "", parallel: int = 4, fresh: bool = False, descriptions: bool = False,
                  progress: bool = True, topics_file: str | os.PathLike | None = None) -> dict[str, Any]:
    """Extract every question not yet in `out`'s journal; write `out` and its sidecar; return the sidecar.

    A journal write that fails (full disk) stops the extract: the questions in flight are cancelled, what
    is journaled is kept, and a `DiskError` says so (with the failed questions, if any)."""
    global interrupted_note
    interrupted_note = None
    if parallel < 1:
        raise KgfedError("--parallel must be at least 1")
    extractor = Extractor(kg, hops, caps, descriptions=descriptions)
    settings = {"source": source, "dialect": kg.dialect.name, "hops": hops, "caps": asdict(extractor.caps),
                "descriptions": descriptions}
    journal = Journal(out, settings, fresh=fresh)
    todo = [t for t in topics if t.id not in journal.reports]
    started = time.perf_counter()
    stats_before = kg.stats
    limit = asyncio.Semaphore(parallel)
    interrupted = False
    new = 0
    failures: dict[str, str] = {}

    async def one(t: Topics, bar: Bar) -> None:
        nonlocal new
        try:
            async with limit:
                fetched = await extractor.question(t)
        except KgfedError as exc:  # not journaled: the next run retries it
            failures[t.id] = redact(str(exc).splitlines()[0])
            if not new and len(failures) >= MAX_FAILURES_BEFORE_SUCCESS:
                raise KgfedError(f"the first {len(failures)} questions all failed (first: {next(iter(failures.values()))}): "
                                 "check the endpoint with kgfed doctor and run again") from None
            return
        journal.add(fetched)
        new += 1
        bar.add(fetched.report)

    stopped: BaseException | None = None
    try:
        with Bar(len(todo), progress) as bar:
            await _all_or_first_error([one(t, bar) for t in todo])
    except (asyncio.CancelledError, KeyboardInterrupt):
        interrupted = True
        raise
    except BaseException as exc:
        stopped = exc
        raise
    finally:
        stats = kg.stats
        extra = {"topics_file": str(topics_file) if topics_file else None,
                 "topics_sha256": _sha256(Path(topics_file)) if topics_file and Path(topics_file).is_file() else None,
                 "run": {"new_questions": new, "failed": len(failures), "failures": dict(list(failures.items())[:20]),
                         "interrupted": interrupted, "seconds": round(time.perf_counter() - started, 3),
                         **{k: stats.get(k, 0) - stats_before.get(k, 0) for k in ("queries", "cache_hits", "sent")}}}
        kept = f"{len(journal.reports)} questions kept in {journal.partial if journal.partial.exists() else journal.out}"
        failed = (f"; {len(failures)} question(s) failed (first: {next(iter(failures.items()))[0]}: "
                  f"{next(iter(failures.values()))})" if failures else "")
        try:
            sidecar = journal.finalize(extra)
        except DiskError as exc:  # the disk is still full: the journal is whole, the next run finishes OUT
            if stopped is None and not interrupted:
                raise DiskError(f"{exc}; {kept}{failed}: run the same command again to finish") from None
            if interrupted:
                interrupted_note = f"interrupted: {kept}; {exc} (run again to resume)"
        else:
            kept = f"{len(journal.reports)} questions kept in {journal.out}"
        if interrupted and interrupted_note is None:
            interrupted_note = f"interrupted: {kept} (run again to resume)"
        if isinstance(stopped, DiskError):  # said once, with what was kept and what failed
            raise DiskError(f"{stopped}; {kept}{failed}: run the same command again to resume") from None
    return sidecar


async def _all_or_first_error(jobs: list) -> None:
    """Run `jobs` concurrently; on the first error (or a cancellation) cancel the rest, wait for them, re-raise it."""
    tasks = [asyncio.ensure_future(job) for job in jobs]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
