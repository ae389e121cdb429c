"""The response cache never merges two queries, never serves a changed file's old answers, knows how
old its entries are, stores exactly what it was given, batches its writes, and survives being killed."""
from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyoxigraph as ox
from hypothesis import HealthCheck, given, settings, strategies as st

from kgfed.cache.options import CacheOptions
from kgfed.cache.responses import CachedEndpoint, ResponseCache, StoredResult, cache_key, compact, decode, encode, normalise_query
from kgfed.endpoints.embedded import EmbeddedEndpoint
from kgfed.engine.data import DEMO_WIKIDATA
from kgfed.engine.kg.facade import KG, LIVE_MAX_AGE, default_max_age
from kgfed.sparql.results import SelectResult, Term

ROOT = Path(__file__).resolve().parents[1]
LABEL = "<http://www.w3.org/2000/01/rdf-schema#label>"
_STORE = ox.Store()
_STORE.bulk_load(path=str(DEMO_WIKIDATA), format=ox.RdfFormat.N_TRIPLES)


def run(query: str):
    """What the query means: its rows (as sorted text), or 'error'."""
    try:
        return sorted(str(list(s)) for s in _STORE.query(query))
    except SyntaxError:
        return "error"


# -- keys --------------------------------------------------------------------------------------------
def test_a_comment_ending_in_a_newline_is_not_folded():
    cut = "SELECT ?s WHERE { ?s ?p ?o } # one row please\nLIMIT 1"
    whole = "SELECT ?s WHERE { ?s ?p ?o } # one row please LIMIT 1"
    assert len(run(cut)) == 1 and len(run(whole)) > 100
    assert cache_key("file:x", cut) != cache_key("file:x", whole)
    assert normalise_query(cut) != normalise_query(whole)


SPACE = st.sampled_from([" ", "  ", "\n", "\t ", " \n "])
LITERAL = st.sampled_from(['"Douglas Adams"', '"Douglas  Adams"', '"""Douglas\nAdams"""', "'Douglas Adams'", '"a # b"'])
COMMENT = st.sampled_from(["", "# note", "# note LIMIT 1", "#LIMIT 2"])
TAIL = st.sampled_from(["", "LIMIT 1", "LIMIT 2"])


@st.composite
def queries(draw) -> str:
    tokens = ["SELECT", "?s", "WHERE", "{", "?s", LABEL, "?o", ".", "FILTER(STR(?o)", "!=", draw(LITERAL), ")", "}"]
    comment, tail = draw(COMMENT), draw(TAIL)
    text = "".join(t + draw(SPACE) for t in tokens)
    if comment:
        text += comment + draw(st.sampled_from(["\n", " ", "\r\n", "  "]))
    return text + tail


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries(), queries())
def test_two_queries_with_different_results_never_share_a_key(a, b):
    if run(a) != run(b):
        assert cache_key("file:demo", a) != cache_key("file:demo", b)
        assert normalise_query(a) != normalise_query(b)  # (what recordings match on)


@settings(max_examples=100, deadline=None)
@given(queries())
def test_normalising_keeps_the_meaning(query):
    assert run(normalise_query(query)) == run(query)


# -- stored exactly ------------------------------------------------------------------------------------
TEXT = st.text(st.characters(blacklist_categories=["Cs"]), max_size=12)
TERM = st.one_of(
    st.builds(lambda v: Term("uri", "http://x/" + v), TEXT),
    st.builds(lambda v: Term("bnode", "b" + v), TEXT),
    st.builds(lambda v, lang: Term("literal", v, lang, None), TEXT, st.sampled_from(["en", "pt-BR"])),
    st.builds(lambda v, dt: Term("literal", v, None, dt), TEXT, st.sampled_from([None, "http://www.w3.org/2001/XMLSchema#integer"])),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["a", "b", "c"]), TERM), max_size=8))
def test_entries_decode_to_exactly_what_was_stored(rows):
    result = SelectResult(["a", "b", "c"], rows)
    entry = decode(encode(result, "src", 12.5))
    assert entry.result == result and entry.created == 12.5 and entry.source == "src"
    assert result == entry.result and len(entry.result) == len(rows) and not entry.result.partial
    # the compact form the KG facade reads names the same terms, row by row, as the rows themselves
    terms, shapes, packed = compact(entry.result)
    assert [{v: Term(*terms[i]) for v, i in zip(shapes[r[0]], r[1:])} for r in packed] == rows
    assert compact(result) == compact(entry.result)  # built from rows, or as stored: the same table
    assert decode(b"not marshal") is None


def test_a_stored_answer_is_the_answer_given_rows_read_only_when_asked():
    result = SelectResult(["x", "y"], [{"x": Term("uri", "http://x/1"), "y": Term("literal", "a", "en")},
                                       {"x": Term("uri", "http://x/1")}])
    stored = decode(encode(result, "src", 1.0)).result
    assert isinstance(stored, StoredResult) and stored._rows is None and len(stored) == 2  # nothing decoded yet
    assert stored.rows == result.rows and stored.rows[0]["x"] is stored.rows[1]["x"]  # one Term per distinct term
    assert stored == result and result == stored and stored != SelectResult(["x", "y"], result.rows[:1])
    stored.rows = result.rows[:1]  # a caller writing rows (never kgfed's own code) reads back what it wrote
    assert len(stored) == 1 and compact(stored).rows == [(0, 0, 1)]


def test_writes_are_batched_and_read_back_before_and_after_the_flush(cache_root):
    cache = ResponseCache(cache_root)
    result = SelectResult(["x"], [{"x": Term("uri", "http://x/1")}])
    for i in range(2000):
        cache.set(f"k{i}", result, source="s")
    assert cache.get("k1999") == result  # read-your-writes before the commit
    cache.flush()
    assert len(cache) == 2000 and cache.stats["written"] == 2000
    assert cache.stats["transactions"] <= 2000 // 512 + 4  # batched, not one commit per answer
    cache.close()
    again = ResponseCache(cache_root, memory=0)
    assert again.get("k7") == result and again.entry("k7").source == "s"
    again.close()


def test_a_replay_reads_the_store_at_once_and_a_newer_write_still_wins(cache_root):
    from kgfed.cache import responses

    cache = ResponseCache(cache_root)
    old, new = (SelectResult(["x"], [{"x": Term("literal", v)}]) for v in ("old", "new"))
    for i in range(responses.SNAPSHOT_AFTER + 50):
        cache.set(f"k{i}", SelectResult(["x"], [{"x": Term("uri", f"http://x/{i}")}]))
    cache.set("late", old)
    cache.close()
    again = ResponseCache(cache_root, memory=0)
    for i in range(responses.SNAPSHOT_AFTER):  # single reads, then the whole store in one pass
        assert again.get(f"k{i}").rows == [{"x": Term("uri", f"http://x/{i}")}]
    disk = again.spec.backend == "disk"  # Redis reads many keys at once through prefetch (MGET) instead
    assert len(again._snapshot) == (responses.SNAPSHOT_AFTER + 51 if disk else 0)
    key = f"k{responses.SNAPSHOT_AFTER + 7}"
    assert again.get(key).rows == [{"x": Term("uri", f"http://x/{responses.SNAPSHOT_AFTER + 7}")}]
    assert again._reads == responses.SNAPSHOT_AFTER + (0 if disk else 1)  # from the snapshot: no store read
    again.set("late", new)  # written after the snapshot: the snapshot's older value is never served
    again._memory.clear()
    again.flush()
    assert again.get("late") == new and again.get("missing") is None
    again.close()


def test_a_killed_process_loses_at_most_its_unflushed_batch_and_never_corrupts(cache_root):
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from kgfed.cache.responses import ResponseCache
        from kgfed.sparql.results import SelectResult, Term
        cache = ResponseCache({cache_root!r}, linger=0.01)
        i = 0
        while True:
            rows = [{{"x": Term("literal", f"row {{j}} of {{i}}")}} for j in range(20)]
            cache.set(f"k{{i}}", SelectResult(["x"], rows), source="writer")
            if i == 3000:
                cache.flush()
                print("flushed", flush=True)
            i += 1
            if i % 200 == 0:
                time.sleep(0.001)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "flushed"
        time.sleep(0.3)  # the writer thread is committing batches now
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
    cache = ResponseCache(cache_root, memory=0)
    if cache.spec.backend == "disk":
        assert cache._store.cache.check() == []  # diskcache's integrity check (SQLite + files)
    keys = set(cache.keys())
    assert {f"k{i}" for i in range(3001)} <= keys  # everything flushed survived
    for key in keys:  # and every entry there is whole
        entry = cache.entry(key)
        assert entry is not None and len(entry.result.rows) == 20 and entry.source == "writer"
    cache.close()


# -- freshness -----------------------------------------------------------------------------------------
async def test_entries_know_when_and_where_and_max_age_refetches(cache_root):
    cache = ResponseCache(cache_root)
    endpoint = EmbeddedEndpoint([DEMO_WIKIDATA])
    query = "SELECT ?o WHERE { <http://www.wikidata.org/entity/Q42> ?p ?o } LIMIT 3"
    before = time.time()
    first = CachedEndpoint(endpoint, cache)
    await first.select(query)
    entry = cache.entry(cache_key(endpoint.name, query))
    assert entry.source == endpoint.name and before <= entry.created <= time.time()
    fresh = CachedEndpoint(endpoint, cache, max_age=3600)
    await fresh.select(query)
    stale = CachedEndpoint(endpoint, cache, max_age=0)
    await stale.select(query)
    assert fresh.stats["cache_hits"] == 1 and stale.stats["cache_hits"] == 0 and stale.stats["sent"] == 1
    offline = CachedEndpoint(endpoint, cache, max_age=0, offline=True)  # a replay serves what was kept
    await offline.select(query)
    assert offline.stats["cache_hits"] == 1
    refresh = CachedEndpoint(endpoint, cache, refresh=True)
    await refresh.select(query)
    await refresh.select(query)  # re-fetched once per run, then served from the new entry
    assert refresh.stats["sent"] == 1 and refresh.stats["cache_hits"] == 1
    assert cache.entry(cache_key(endpoint.name, query)).created > entry.created
    await endpoint.aclose()
    cache.close()


async def test_a_changed_file_never_serves_old_entries(tmp_path, cache_root):
    data = tmp_path / "kg.nt"
    shutil.copy(DEMO_WIKIDATA, data)
    text = data.read_text(encoding="utf-8")
    assert '"Douglas Adams"@en' in text
    cache_dir = cache_root

    async def label() -> list:
        async with KG.open(f"file:{data}", cache=CacheOptions(root=str(cache_dir))) as kg:
            found = await kg.labels(["Q42"])
            return [found["Q42"].label, kg.stats["cache_hits"]]

    assert await label() == ["Douglas Adams", 0]
    assert await label() == ["Douglas Adams", 1]
    stat = data.stat()
    data.write_text(text.replace('"Douglas Adams"@en', '"Douglas Adamz"@en'), encoding="utf-8")
    os.utime(data, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size, same mtime: only the content differs
    assert data.stat().st_size == stat.st_size
    assert await label() == ["Douglas Adamz", 0]


async def test_default_max_age_is_a_week_for_live_wikidata_and_none_for_dumps():
    from kgfed.endpoints.client import HttpClient
    from kgfed.endpoints.http import HttpEndpoint
    from kgfed.sparql.dialects import FREEBASE, WIKIDATA

    client = HttpClient()
    assert default_max_age(HttpEndpoint("https://query.wikidata.org/sparql", client), WIKIDATA) == LIVE_MAX_AGE
    assert default_max_age(HttpEndpoint("https://qlever.dev/api/freebase", client), FREEBASE) is None
    assert default_max_age(HttpEndpoint("http://127.0.0.1:8890/sparql", client), WIKIDATA) is None
    assert default_max_age(EmbeddedEndpoint([DEMO_WIKIDATA]), WIKIDATA) is None
    from kgfed.endpoints.profiles import resolve_endpoint

    for spec, expected in [("wikidata-full", LIVE_MAX_AGE), ("qlever-wikidata", LIVE_MAX_AGE), ("qlever-freebase", None)]:
        endpoint, dialect = resolve_endpoint(spec, client=client)
        assert default_max_age(endpoint, dialect) == expected, spec
    await client.aclose()


async def test_the_cache_can_be_switched_off(tmp_path):
    async with KG.open(f"file:{DEMO_WIKIDATA}", cache=False) as kg:
        await kg.relations("Q42")
        await kg.relations("Q42")
        assert kg.endpoint.cache is None and kg.stats["cache_hits"] == 0 and kg.stats["sent"] == 4
    assert not (tmp_path / "c").exists()


async def test_cache_reads_and_writes_leave_the_loop_free(cache_root):
    """Writes return before any commit (the writer thread commits); the loop keeps ticking meanwhile."""
    cache = ResponseCache(cache_root, linger=0.2)
    result = SelectResult(["x"], [{"x": Term("uri", "http://x/1")}])
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.ensure_future(ticker())
    for i in range(300):
        cache.set(f"k{i}", result)
        await asyncio.sleep(0)
    assert cache.stats["transactions"] == 0  # nothing committed on the loop
    await asyncio.to_thread(cache.flush)
    task.cancel()
    assert ticks >= 300 and cache.stats["written"] == 300
    cache.close()
