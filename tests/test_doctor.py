"""`kgfed doctor` on the embedded store, a real Oxigraph server, a real Virtuoso, and a local server that
answers errors or Wikimedia's robot-policy page."""
from __future__ import annotations

import argparse
import json

import pytest

from kgfed.engine.cli import main
from kgfed.engine.harness.doctor import diagnose, render

from . import httpfaults as hf
from .conftest import CODEX_NT, CWQ_NT, need

ROBOT_PAGE = (b"Please set a user-agent and respect our robot policy https://w.wiki/4wJS. "
              b"See also https://phabricator.wikimedia.org/T400119.\n")


def options(spec: str, **kw) -> argparse.Namespace:
    base = {"spec": spec, "dialect": None, "graph": None, "probe": None, "no_size": False, "user_agent": None,
            "contact": None, "timeout": 10.0, "cache_dir": None, "no_cache": False, "offline": False, "concurrency": None}
    return argparse.Namespace(**{**base, **kw})


def checks(report: dict) -> dict[str, dict]:
    return {c["check"]: c for c in report["checks"]}


server = pytest.fixture(hf.serve, name="server")


async def test_embedded_freebase_is_fit_with_names_probes_cvt_and_size():
    report = await diagnose(options(f"file:{need(CWQ_NT)}"))
    found = checks(report)
    assert report["fit"] and report["dialect"] == "freebase"
    assert found["probe m.09c7w0"]["detail"].startswith("United States of America:")
    assert found["probe m.0345_"]["detail"].startswith("Guatemala:")
    assert "|" in found["cvt"]["detail"] and found["cvt"]["status"] == "ok"
    assert found["size"]["triples"] == 24_985
    assert "fit for the freebase templates" in render(report)


async def test_embedded_wikidata_guessed_and_wrong_dialect_is_not_fit():
    codex = f"file:{need(CODEX_NT)}"
    ok = await diagnose(options(codex))
    assert ok["fit"] and ok["dialect"] == "wikidata"
    assert checks(ok)["probe Q42"]["detail"].startswith("Douglas Adams:")
    wrong = await diagnose(options(codex, dialect="freebase"))
    assert not wrong["fit"]
    assert "use --dialect wikidata" in checks(wrong)["dialect"]["detail"]


async def test_absent_probe_fails_and_names_the_fix():
    report = await diagnose(options(f"file:{need(CWQ_NT)}", probe=["m.0zzzzzz"], no_size=True))
    assert not report["fit"]
    assert "--probe ID" in checks(report)["probe m.0zzzzzz"]["detail"]
    assert "size" not in checks(report)


def test_cli_exit_codes_and_json(capsys):
    assert main(["doctor", f"file:{need(CWQ_NT)}", "--json", "--no-size"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["fit"] is True and report["endpoint"].startswith("file:")
    assert main(["doctor", f"file:{need(CWQ_NT)}", "--probe", "m.0zzzzzz", "--no-size"]) == 1
    assert "NOT fit" in capsys.readouterr().out


async def test_robot_policy_page_is_not_fit_and_names_the_user_agent_fix(server):
    server.script = [hf.raw(ROBOT_PAGE, content_type="text/plain")]
    report = await diagnose(options(server.url, dialect="wikidata"))
    reachable = checks(report)["reachable"]
    assert not report["fit"] and reachable["status"] == "fail"
    # the HTTP client or the doctor itself names the problem (a User-Agent page, not SPARQL) and the fix
    assert "user-agent" in reachable["detail"].lower() and "robot p" in reachable["detail"]
    assert "--contact" in reachable["detail"] or "--user-agent" in reachable["detail"]
    assert len(checks(report)) == 1  # nothing else is tried on a server that does not speak SPARQL


async def test_error_status_is_not_fit(server):
    server.script = [hf.status(403, text="Forbidden: blocked by policy")]
    report = await diagnose(options(server.url, dialect="freebase"))
    assert not report["fit"]
    assert "HTTP 403" in checks(report)["reachable"]["detail"] and "Forbidden" in checks(report)["reachable"]["detail"]


async def test_server_errors_after_retries_are_not_fit(server):
    server.script = [hf.status(503, text="Service Unavailable")]
    report = await diagnose(options(server.url, dialect="freebase"))
    assert not report["fit"] and checks(report)["reachable"]["status"] == "fail"
    assert "503" in checks(report)["reachable"]["detail"]


async def test_sparql_server_without_the_dialects_data_is_not_fit(server):
    # answers every query with an empty result: reachable, but no names, no probes
    server.script = [hf.ok({"head": {"vars": ["s"]}, "results": {"bindings": []}}, headers={"Server": "Toy/1.0"})]
    report = await diagnose(options(server.url))
    found = checks(report)
    assert found["reachable"]["status"] == "ok" and found["server"]["software"] == "Toy"
    assert found["dialect"]["status"] == "fail" and not report["fit"]


def test_oxigraph_server_is_fit_without_partial_signalling(oxigraph_freebase):
    assert main(["doctor", oxigraph_freebase.url, "--dialect", "freebase", "--json"]) == 0


async def test_oxigraph_server_report(oxigraph_freebase):
    report = await diagnose(options(oxigraph_freebase.url, dialect="freebase"))
    found = checks(report)
    assert report["fit"]
    assert found["server"]["software"] == "Oxigraph"
    assert found["row cap"]["detail"] == "none up to 10001 rows"
    assert "not signalled by Oxigraph" in found["partial answers"]["detail"]
    assert found["size"]["triples"] == 24_985


@pytest.mark.virtuoso
async def test_virtuoso_row_cap_and_anytime_partial_answers(virtuoso_freebase):
    report = await diagnose(options(virtuoso_freebase.url, graph=virtuoso_freebase.cwq_graph))
    found = checks(report)
    assert report["fit"] and report["dialect"] == "freebase"  # guessed from the data
    assert found["server"]["software"] == "Virtuoso"
    assert found["row cap"]["row_cap"] == 10_000 and found["row cap"]["status"] == "warn"
    assert found["partial answers"]["anytime"] is True and "S1TAT" in found["partial answers"]["detail"]
    assert found["size"]["triples"] == 24_985
    assert "graph" not in found  # the graph was given


@pytest.mark.virtuoso
async def test_virtuoso_without_the_graph_misses_the_probes(virtuoso_freebase):
    report = await diagnose(options(virtuoso_freebase.url + "?default-graph-uri=http://kgfed.test/none",
                                    dialect="freebase", no_size=True))
    assert not report["fit"]
    assert "try --graph" in checks(report)["dialect"]["detail"]
    whole = await diagnose(options(virtuoso_freebase.url, dialect="freebase", no_size=True))
    assert whole["fit"] and "add --graph http://freebase.com" in checks(whole)["graph"]["detail"]
