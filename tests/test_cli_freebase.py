"""`kgfed gold` on embedded and a real Virtuoso; `kgfed serve-oxigraph` / `serve-virtuoso` as real
subprocesses: they print the endpoint, answer SPARQL, and stop cleanly on Ctrl-C."""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.error
from pathlib import Path

import pytest

from kgfed.endpoints.servers import free_port, find_oxigraph, find_virtuoso, ServerNotFound
from kgfed.engine.cli import main
from tests.conftest import CWQ_NT, CWQ_QUESTIONS, SHARED, need
from tests.conftest_servers import http_select, unavailable

URL = re.compile(r"http://127\.0\.0\.1:\d+/[^\s)]+")


def _gold(capsys, *args: str) -> tuple[int, list[dict] | str]:
    code = main(["gold", *args, "--no-cache", "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else err)


@pytest.mark.virtuoso
def test_gold_on_embedded_matches_virtuoso(capsys, virtuoso_freebase):
    """Every gold query Virtuoso answers (as written) is answered on the embedded store (rewritten)."""
    questions = [json.loads(line) for line in need(CWQ_QUESTIONS).read_text().splitlines() if line.strip()]
    endpoint = virtuoso_freebase.graph_url(virtuoso_freebase.cwq_graph)
    code, reports = _gold(capsys, str(CWQ_QUESTIONS), "-e", endpoint, "-e", f"file:{CWQ_NT}", "--concurrency", "4")
    assert code == 0
    virtuoso, embedded = reports
    assert (virtuoso["rewrite"], embedded["rewrite"]) == (False, True)  # --rewrite auto recognised Virtuoso
    assert virtuoso["with_sparql"] == embedded["with_sparql"] == len(questions)
    assert virtuoso["errors"] == embedded["errors"] == virtuoso["partial"] == 0
    assert virtuoso["gold_answer"] > 0.9 * len(questions)
    assert set(virtuoso["answered"]) <= set(embedded["answered"])
    assert set(virtuoso["answered"]) <= {q["id"] for q in questions}


def test_gold_without_rewrite_reports_each_rejected_query(capsys):
    """pyoxigraph rejects the Virtuoso dialect: every question is an error with a one-line reason."""
    code, (report,) = _gold(capsys, str(need(CWQ_QUESTIONS)), "-e", f"file:{CWQ_NT}", "--rewrite", "no", "--limit", "20")
    assert code == 0 and report["with_sparql"] == report["errors"] == 20 and report["gold_answer"] == 0
    assert all("rejected the query" in f["error"] and "\n" not in f["error"] for f in report["failures"])
    code, (report,) = _gold(capsys, str(CWQ_QUESTIONS), "-e", f"file:{CWQ_NT}", "--limit", "20")
    assert report["gold_answer"] == 20 and report["errors"] == 0


def test_gold_judges_by_name_when_the_file_has_no_mids(capsys):
    """ToG's cwq.json gives answer names only: a returned entity named like the answer counts."""
    path = need(SHARED / "questions" / "cwq.json")
    code, (report,) = _gold(capsys, str(path), "-e", f"file:{CWQ_NT}", "--limit", "60")
    assert code == 0 and report["with_sparql"] == 60
    assert 0 < report["gold_answer"] <= report["any_answer"] < 60


def test_gold_file_without_sparql_is_one_line_error(capsys):
    path = need(SHARED / "questions" / "SimpleQA.json")
    code, err = _gold(capsys, str(path), "-e", f"file:{CWQ_NT}")
    assert code == 2
    assert err.count("\n") == 1 and "has no gold SPARQL" in err and "cwq_questions.jsonl" in err


# -- servers in the foreground -----------------------------------------------------------------------
def _serve(args: list[str], timeout: float = 90) -> tuple[subprocess.Popen, list[str]]:
    """Start `kgfed ARGS` and read its banner until the 'Ctrl-C to stop' line."""
    proc = subprocess.Popen([sys.executable, "-m", "kgfed.engine.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line)
        if "Ctrl-C to stop" in line:
            return proc, lines
    proc.wait(timeout)
    pytest.fail(f"kgfed {args[0]} exited ({proc.returncode}) before serving: {''.join(lines)[-500:]}")


def _ctrl_c(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=60)
    return rest


@pytest.mark.parametrize("kind", [pytest.param("oxigraph"), pytest.param("virtuoso", marks=pytest.mark.virtuoso)])
def test_serve_prints_url_answers_and_stops_on_ctrl_c(kind):
    try:
        find_oxigraph() if kind == "oxigraph" else find_virtuoso()
    except ServerNotFound as exc:
        unavailable(f"{exc} to run these tests")
    port = free_port()
    graph = "http://kgfed.test/graph/served"
    extra = ["--graph", graph] if kind == "virtuoso" else []
    proc, banner = _serve([f"serve-{kind}", str(need(CWQ_NT)), "--port", str(port), *extra])
    try:
        urls = URL.findall("".join(banner))
        assert urls and urls[0].startswith(f"http://127.0.0.1:{port}/")
        workdir = Path(re.search(r"workdir: (\S+)", "".join(banner)).group(1))
        assert workdir.is_dir()
        url = urls[-1]  # Virtuoso prints the graph's URL last
        count = http_select(url, "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }").rows[0]["n"].value
        assert int(count) == sum(1 for line in CWQ_NT.read_text().splitlines() if line.strip())
    finally:
        rest = _ctrl_c(proc)
    assert proc.returncode == 0, rest
    assert "Traceback" not in rest
    assert not workdir.exists()  # the temporary database went with it
    with pytest.raises((urllib.error.URLError, OSError)):
        http_select(url, "ASK {}", timeout=3)


# -- servers: every failure is one line ------------------------------------------------------------
DEMO_NT = Path(__file__).resolve().parents[1] / "engine" / "data" / "demo_wikidata.nt"


def _serve_fails(capsys, *argv: str) -> str:
    code = main(list(argv))
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("kgfed: error: ") and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("kind", ["oxigraph", pytest.param("virtuoso", marks=pytest.mark.virtuoso)])
def test_serve_on_a_busy_port_says_so(capsys, kind):
    try:
        find_oxigraph() if kind == "oxigraph" else find_virtuoso()
    except ServerNotFound as exc:
        unavailable(f"{exc} to run these tests")
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        err = _serve_fails(capsys, f"serve-{kind}", str(DEMO_NT), "--port", str(port))
    assert f"port {port} (--port) is already in use" in err


def test_serve_bad_paths_and_bad_data_are_one_line(capsys, tmp_path):
    try:
        find_oxigraph()
    except ServerNotFound as exc:
        unavailable(f"{exc} to run these tests")
    assert "no data file at" in _serve_fails(capsys, "serve-oxigraph", str(tmp_path / "missing.nt"))
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    err = _serve_fails(capsys, "serve-oxigraph", str(DEMO_NT), "--workdir", str(blocker / "db"))
    assert "cannot use" in err and "--workdir" in err
    bad = tmp_path / "bad.nt"
    bad.write_text('<a> <b> "unterminated .\n')
    err = _serve_fails(capsys, "serve-oxigraph", str(bad))
    assert "oxigraph load failed (Error while loading file" in err and "backtrace" not in err.lower()
    assert "/tmp/kgfed-oxigraph" not in err  # never a path to a temporary directory that is already gone
    no_suffix = tmp_path / "triples"
    no_suffix.write_text(DEMO_NT.read_text())
    assert "no extension to guess a file format" in _serve_fails(capsys, "serve-oxigraph", str(no_suffix))


def test_serve_rejects_a_bad_port_before_starting(capsys):
    err = _serve_fails(capsys, "serve-oxigraph", str(DEMO_NT), "--port", "0")
    assert "argument --port: must be between 1 and 65535" in err


def test_serve_json_prints_one_line_with_the_endpoint():
    try:
        find_oxigraph()
    except ServerNotFound as exc:
        unavailable(f"{exc} to run these tests")
    proc = subprocess.Popen([sys.executable, "-m", "kgfed.engine.cli", "serve-oxigraph", str(DEMO_NT), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        info = json.loads(proc.stdout.readline())
        assert http_select(info["endpoint"], "ASK { ?s ?p ?o }").boolean is True
    finally:
        _ctrl_c(proc)
    assert proc.returncode == 0
