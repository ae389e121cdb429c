"""`KG.select` and `kgfed query` on a file store are bounded as the MCP server's `sparql` tool is: a
caller's query runs in a killable worker process under the KG's `--timeout` and `--query-memory`, and its
answer under the cap of any answer; past a bound, one line naming it and the fix. Real pyoxigraph workers."""
from __future__ import annotations

import asyncio
import subprocess
import sys

import pyoxigraph as ox
import pytest

from kgfed.endpoints.embedded import INTERRUPT_GRACE, bounded, current_bounds
from kgfed.endpoints.options import DEFAULT_QUERY_MEMORY_MB, HttpOptions
from kgfed.engine.cli import main
from kgfed.engine.kg import KG
from kgfed.sparql.errors import EndpointError, EndpointTimeout

from .conftest import CWQ_NT, need

CROSS = "SELECT * WHERE { ?a ?b ?c . ?d ?e ?f }"
COUNT_CROSS = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f }"
NAME = "http://rdf.freebase.com/ns/type.object.name"


async def test_kg_select_on_a_file_store_stops_a_cross_product_at_the_timeout():
    async with KG.open(f"file:{need(CWQ_NT)}", http=HttpOptions(timeout=2), cache=False) as kg:
        with pytest.raises(EndpointTimeout, match=r"ran over 2 s and was stopped: .*raise --timeout"):
            await kg.select(COUNT_CROSS)
        workers = kg.endpoint.inner._workers
        await asyncio.sleep(INTERRUPT_GRACE + 0.5)  # a COUNT cannot be interrupted: killed once the grace is over
        assert workers is not None and workers.stats["killed"] == 1
        # the KG still answers, and its answers are the store's own
        query = f'SELECT ?s ?o WHERE {{ ?s <{NAME}> ?o FILTER(LANG(?o) = "en") }} ORDER BY ?s ?o LIMIT 30'
        got = await kg.select(query)
    store = ox.Store()
    store.bulk_load(path=str(CWQ_NT), format=ox.RdfFormat.N_TRIPLES)
    want = [(s["s"].value, s["o"].value) for s in store.query(query)]
    assert [(r["s"].value, r["o"].value) for r in got.rows] == want and len(want) == 30


async def test_kg_select_answer_bytes_are_capped():
    async with KG.open(f"file:{need(CWQ_NT)}", cache=False) as kg:
        with bounded(timeout=30, max_bytes=1 << 20):  # the caller's own bounds win over the KG's
            with pytest.raises(EndpointError, match=r"answer passed 1 MiB \(the cap of one answer; 1.\d+ MiB when it was "
                                                    r"stopped\) and was not read: ask for less \(a LIMIT"):
                await kg.select("SELECT * WHERE { ?s ?p ?o }")  # every triple: about 5.3 MiB of SPARQL-JSON
            # its worker stopped writing at the cap (it never held the 5.3 MiB) and stays warm for the next query
            assert kg.endpoint.inner._workers.stats["killed"] == kg.endpoint.inner._workers.stats["died"] == 0
            assert len((await kg.select("SELECT * WHERE { ?s ?p ?o } LIMIT 10")).rows) == 10


async def test_the_bounds_come_from_the_kgs_options():
    async with KG.open(f"file:{need(CWQ_NT)}", http=HttpOptions(timeout=7, query_memory_mb=300), cache=False) as kg:
        assert (kg.query_bounds.timeout, kg.query_bounds.memory_mb) == (7.0, 300)
        assert current_bounds() is None
        await kg.select("ASK { ?s ?p ?o }")
        assert kg.endpoint.inner._workers.memory_mb == 300  # the query ran in a worker under these bounds
    async with KG.open(f"file:{need(CWQ_NT)}", cache=False) as kg:
        assert kg.query_bounds.memory_mb == DEFAULT_QUERY_MEMORY_MB == HttpOptions().query_memory_mb


async def test_the_memory_ceiling_is_one_line_naming_query_memory():
    async with KG.open(f"file:{need(CWQ_NT)}", http=HttpOptions(timeout=60, query_memory_mb=64), cache=False) as kg:
        with pytest.raises(EndpointError, match=r"64 MB query memory ceiling .*raise --query-memory"):
            await kg.select(CROSS + " LIMIT 50000000")


def test_kgfed_query_on_a_file_store_is_bounded_by_timeout(tmp_path):
    """The command line: a cross product ends with one line and exit 2 (a subprocess: a hang fails, not waits)."""
    argv = [sys.executable, "-m", "kgfed.engine.cli", "query", COUNT_CROSS, "-e", f"file:{need(CWQ_NT)}",
            "--timeout", "2", "--cache-dir", str(tmp_path / "cache")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("kgfed: error: ") and "Traceback" not in done.stderr
    assert "ran over 2 s" in done.stderr and "--timeout" in done.stderr and done.stdout == ""


def test_kgfed_query_memory_option(tmp_path, capsys):
    base = ["query", "-e", f"file:{need(CWQ_NT)}", "--no-cache"]
    assert main([*base, CROSS + " LIMIT 50000000", "--query-memory", "64", "--timeout", "60"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "64 MB query memory ceiling" in err and "--query-memory" in err
    assert main([*base, f"SELECT (COUNT(*) AS ?n) WHERE {{ ?s <{NAME}> ?o }}", "--json"]) == 0
    assert '"value": "' in capsys.readouterr().out
    assert main([*base, "ASK { ?s ?p ?o }", "--query-memory", "8"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--query-memory" in err and "64" in err


async def test_a_sessions_kgs_take_its_query_memory(tmp_path):
    from kgfed.engine.config import CacheOptions, KGSpec
    from kgfed.engine.session import Session, SessionSpec

    spec = KGSpec("freebase", f"file:{need(CWQ_NT)}")
    async with Session(SessionSpec(kgs=[spec], http=HttpOptions(timeout=9, query_memory_mb=200),
                                   cache=CacheOptions(enabled=False))) as session:
        kg = session.kgs["freebase"]
        assert (kg.query_bounds.timeout, kg.query_bounds.memory_mb) == (9.0, 200)
        assert (await kg.select("ASK { ?s ?p ?o }")).boolean is True
        assert kg.endpoint.inner._workers.memory_mb == 200


async def test_bound_false_runs_kgfeds_own_queries_in_process():
    """`kgfed extract` renders its queries itself: they run in this process (no worker loads the store again)."""
    query = f'SELECT ?s ?o WHERE {{ ?s <{NAME}> ?o FILTER(LANG(?o) = "en") }} ORDER BY ?s ?o LIMIT 5'
    async with KG.open(f"file:{need(CWQ_NT)}", cache=False) as kg:
        got = await kg.select(query, bound=False)
        assert kg.endpoint.inner._workers is None and len(got.rows) == 5
        assert [r["s"].value for r in (await kg.select(query)).rows] == [r["s"].value for r in got.rows]
        assert kg.endpoint.inner._workers is not None  # the caller's form went to a worker
