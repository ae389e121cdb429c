"""RoG/GCR subgraph files (`rmanluo/RoG-cwq`, `rmanluo/RoG-webqsp`) as a kgfed KG and a question set.

RoG and GCR evaluate on per-question Freebase subgraphs shipped as parquet files with the columns

    id: string, question: string, answer: list<string>, q_entity: list<string>,
    a_entity: list<string>, graph: list<list<string>> ([head, relation, tail]), choices: list<null>

where heads and tails are entity *names* (a nameless CVT node keeps its Freebase id, `m.0gxnnwc`) and
relations are Freebase relation ids. kgfed's Freebase templates need Freebase-shaped IRIs, so
`convert` mints one per name in the Freebase namespace:

    "Justin Bieber"  ->  <http://rdf.freebase.com/ns/m.r_3f1c0a2b9d8e7f>   (m.r_ + 14 hex of sha1(name))
                         ns:type.object.name "Justin Bieber"@en
    "m.0gxnnwc"      ->  <http://rdf.freebase.com/ns/m.0gxnnwc>            (kept, no name: a CVT)

Real mids never start with `m.r_`, so minted ids are told apart at a glance. Every question's graph
goes into one union store (the same name is the same node everywhere, as in RoG's own networkx
graphs). `load_questions` reads the other columns (never `graph`) into `Question`s whose topic and
answer ids are the same minted ids, so `kgfed run RoG-cwq/data --endpoint freebase=file:rog.nt` scores
methods on exactly those subgraphs. pyarrow is imported only here (`pip install kgfed[rog]`).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ...sparql.dialects import NS
from ...sparql.errors import DatasetError
from ...sparql.terms import FREEBASE_MID, FREEBASE_RELATION

COLUMNS = ("id", "question", "answer", "q_entity", "a_entity", "graph", "choices")
QUESTION_COLUMNS = ("id", "question", "answer", "q_entity", "a_entity")
MINTED = "m.r_"
NAME = NS + "type.object.name"


def rog_id(name: str) -> str:
    """The Freebase-shaped id of a RoG node: its own mid when it is one, else a minted `m.r_…` id."""
    if FREEBASE_MID.match(name) and not name.startswith(MINTED):
        return name
    return MINTED + hashlib.sha1(name.encode("utf-8")).hexdigest()[:14]


def parquet_files(paths: Sequence[str | os.PathLike] | str | os.PathLike) -> list[Path]:
    """The parquet files named, or found (sorted) in the directories named."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    found: list[Path] = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            found += sorted(p for p in path.rglob("*.parquet") if p.is_file())
        elif path.is_file():
            found.append(path)
        else:
            raise DatasetError(f"no parquet file or directory at {path}: give RoG-cwq/data/test-*.parquet or its directory")
    if not found:
        raise DatasetError(f"no .parquet files under {', '.join(map(str, items))}: give the RoG-cwq/RoG-webqsp data directory")
    return found


def _pyarrow():
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DatasetError("reading RoG parquet files needs pyarrow: pip install 'kgfed[rog]'") from None
    return pq


def _rows(files: Sequence[Path], columns: Sequence[str], limit: int | None) -> Iterator[dict[str, Any]]:
    """Rows of the parquet files (only `columns`), streamed in record batches."""
    pq = _pyarrow()
    seen = 0
    for path in files:
        try:
            handle = pq.ParquetFile(path)
        except Exception as exc:  # pyarrow raises ArrowInvalid/OSError for a non-parquet file
            raise DatasetError(f"{path} is not a readable parquet file ({str(exc).splitlines()[0]}): "
                               "give a RoG-cwq/RoG-webqsp parquet file") from None
        names = set(handle.schema_arrow.names)
        missing = [c for c in columns if c not in names]
        if missing:
            raise DatasetError(f"{path} lacks the RoG column(s) {', '.join(missing)} (it has {', '.join(sorted(names))}); "
                               f"expected the rmanluo/RoG-cwq layout: {', '.join(COLUMNS)}")
        for batch in handle.iter_batches(batch_size=256, columns=list(columns)):
            for row in batch.to_pylist():
                if limit is not None and seen >= limit:
                    return
                seen += 1
                yield row


def _dataset_of(files: Sequence[Path], ids: Iterable[str]) -> str:
    from .datasets import dataset_from_name

    for path in files:
        for part in (path.name, *(p.name for p in path.parents)):
            found = dataset_from_name(part)
            if found in ("cwq", "webqsp"):
                return found
    # RoG-cwq ids carry CWQ's "_<hex>" suffix (WebQTest-832_c3345…); RoG-webqsp ids do not (WebQTest-0)
    return "cwq" if any("_" in i for i in ids) else "webqsp"


def load_questions(paths, limit: int | None = None) -> list:
    """RoG questions as kgfed `Question`s: topics and answer ids are the minted ids of `convert`."""
    from .datasets import Question

    files = parquet_files(paths)
    rows = list(_rows(files, QUESTION_COLUMNS, limit))
    if not rows:
        raise DatasetError(f"{files[0]} holds no questions: pass a non-empty RoG parquet file")
    dataset = _dataset_of(files, (str(r["id"]) for r in rows[:20]))
    questions = []
    for row in rows:
        topics = {rog_id(n): n for n in row["q_entity"] or [] if n}
        answers = [str(a) for a in row["answer"] or []]
        questions.append(Question(
            id=str(row["id"]), text=str(row["question"]), topics={"freebase": topics} if topics else {},
            answers=answers, answer_ids={"freebase": [rog_id(a) for a in row["a_entity"] or [] if a]},
            meta={"source": "rog"}, dataset=dataset,
        ))
    return questions


def _triples(row_graph: Iterable[Sequence[str]], counts: dict[str, int], names: dict[str, str]):
    """pyoxigraph triples of one question's graph (name triples included), counting what is skipped."""
    import pyoxigraph as ox

    name_predicate = ox.NamedNode(NAME)
    for triple in row_graph or []:
        if triple is None or len(triple) != 3 or not all(isinstance(t, str) and t for t in triple):
            counts["skipped_triples"] += 1
            continue
        head, relation, tail = (t.strip() for t in triple)
        if not FREEBASE_RELATION.match(relation):
            counts["skipped_triples"] += 1
            continue
        ends = []
        for node in (head, tail):
            node_id = rog_id(node)
            if node_id not in names:
                names[node_id] = node
                counts["entities"] += 1
                counts["mids" if node_id == node else "named"] += 1
                if node_id != node:
                    yield ox.Triple(ox.NamedNode(NS + node_id), name_predicate, ox.Literal(node, language="en"))
            elif names[node_id] != node:
                raise DatasetError(f"minted id {node_id} is shared by {names[node_id]!r} and {node!r}: report this "
                                   "collision (sha1 prefix) to kgfed")
            ends.append(ox.NamedNode(NS + node_id))
        yield ox.Triple(ends[0], ox.NamedNode(NS + relation), ends[1])


def convert(paths, out: str | os.PathLike, *, limit: int | None = None) -> dict[str, int]:
    """Write the union of the questions' subgraphs as N-Triples to `out`; returns counts."""
    import pyoxigraph as ox

    files = parquet_files(paths)
    out = Path(out)
    counts = {"questions": 0, "graph_triples": 0, "skipped_triples": 0, "entities": 0, "named": 0, "mids": 0}
    names: dict[str, str] = {}
    workdir = tempfile.mkdtemp(prefix="kgfed-rog-", dir=out.parent if out.parent.exists() else None)
    try:
        store = ox.Store(workdir)  # on disk: the union of millions of triples need not fit in memory
        for row in _rows(files, ("id", "graph"), limit):
            counts["questions"] += 1
            counts["graph_triples"] += len(row["graph"] or [])
            store.bulk_extend(ox.Quad(t.subject, t.predicate, t.object) for t in _triples(row["graph"], counts, names))
        tmp = out.with_name(out.name + ".tmp")
        store.dump(str(tmp), format=ox.RdfFormat.N_TRIPLES, from_graph=ox.DefaultGraph())
        counts["triples"] = len(store)
        del store
        os.replace(tmp, out)
    except OSError as exc:
        raise DatasetError(f"cannot write {out}: {exc.strerror or exc}") from None
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return counts
