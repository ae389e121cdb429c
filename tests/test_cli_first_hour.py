"""The first hour of a new user (issue 21): careless input fails fast with one line, nothing hangs,
exit codes and warnings mean something, and the LLM-free default either runs or names the extra.

Every case runs the real `kgfed` (in-process `main()` or a subprocess) on the bundled demo KGs, the
shared fixtures, or local sockets; nothing here reaches the network.
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

import pytest

from kgfed.engine.cli import main
from kgfed.engine.methods.base import Method, MethodParams, Result
from kgfed.sparql.errors import KgfedError

from .conftest import CWQ_NT, CWQ_QUESTIONS, ROOT, need

HERE = "tests.test_cli_first_hour"
DEMO_QUESTIONS = ROOT / "engine" / "data" / "demo_questions.jsonl"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def kgfed(*argv: str, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgfed.engine.cli", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}, **kwargs)


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kgfed: error: ") and "Traceback" not in err, err
    return lines[0]


# -- numbers are checked when parsed ------------------------------------------------------------------
@pytest.mark.parametrize("argv, message", [
    (["relations", "Q42", "--concurrency", "0"], "argument --concurrency: must be >= 1, got 0"),
    (["relations", "Q42", "--endpoint", "qlever-freebase", "--concurrency", "0"], "argument --concurrency: must be >= 1"),
    (["relations", "Q42", "--concurrency", "-1"], "argument --concurrency: must be >= 1, got -1"),
    (["relations", "Q42", "--timeout", "0"], "argument --timeout: must be > 0, got 0"),
    (["relations", "Q42", "--timeout", "nan"], "argument --timeout: expected a finite number"),
    (["neighbors", "Q42", "P69", "--limit", "-1"], "argument --limit: must be >= 1"),
    (["search", "Adams", "--limit", "0"], "argument --limit: must be >= 1"),
    (["expand", "Q42", "--hops", "0"], "argument --hops: must be >= 1"),
    (["expand", "Q42", "--width", "-2"], "argument --width: must be >= 0"),
    (["align", "Q42", "--threshold", "1.5"], "argument --threshold: must be between 0 and 1"),
    (["context", "Q42", "--top-k", "0"], "argument --top-k: must be >= 1"),
    (["ask", "q?", "--depth", "0"], "argument --depth: must be >= 1"),
    (["run", "cwq", "--out", "x.jsonl", "--workers", "0"], "argument --workers: must be >= 1"),
    (["run", "cwq", "--out", "x.jsonl", "--in-flight", "0"], "argument --in-flight: must be >= 1"),
    (["run", "cwq", "--out", "x.jsonl", "--sample", "x"], "argument --sample: expected a whole number, got 'x'"),
    (["serve-oxigraph", "a.nt", "--port", "70000"], "argument --port: must be between 1 and 65535"),
    (["gold", "cwq", "-e", "file:x.nt", "--limit", "0"], "argument --limit: must be >= 1"),
])
def test_numeric_options_are_checked_up_front(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    line = one_line_error(err)
    assert message in line and f"(see kgfed {argv[0]} --help)" in line


def test_every_numeric_option_has_a_checked_type():
    from kgfed.engine.cli.app import build_parser

    parser, _ = build_parser()
    unchecked = [(name, a.option_strings) for name, sub in parser._subparsers._group_actions[0].choices.items()
                 for a in sub._actions if a.type in (int, float)]
    assert unchecked == []


def test_a_server_that_never_answers_times_out_in_one_line():
    """--timeout bounds a request to a server that accepts and then says nothing (it used to hang)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        port = server.getsockname()[1]
        held: list[socket.socket] = []
        stop = threading.Event()

        def accept() -> None:
            server.settimeout(0.2)
            while not stop.is_set():
                try:
                    held.append(server.accept()[0])
                except OSError:
                    pass

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        started = time.monotonic()
        done = kgfed("relations", "Q42", "--endpoint", f"http://127.0.0.1:{port}/sparql", "--dialect", "wikidata",
                     "--timeout", "0.5", "--no-cache", timeout=90)
        elapsed = time.monotonic() - started
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
    assert done.returncode == 2, done.stderr
    assert "time" in one_line_error(done.stderr).lower()
    assert elapsed < 60  # retries with backoff, but bounded: never a hang


# -- the command line itself ------------------------------------------------------------------------
def test_version_and_one_line_argument_errors(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("kgfed ") and out.count("\n") == 1
    for argv, message in ((["nonsense"], "invalid choice: 'nonsense'"), (["relations"], "required: entities"),
                          (["query", "-f", "q.rq"], "unrecognized arguments: -f"), (["labels", "Q42", "--bogus"], "--bogus")):
        code, _, err = run(capsys, *argv)
        assert code == 2 and message in one_line_error(err)


def test_option_names_mean_one_thing_across_commands():
    from kgfed.engine.cli.app import build_parser

    parser, _ = build_parser()
    meanings: dict[str, set[str]] = {}
    for sub in parser._subparsers._group_actions[0].choices.values():
        for action in sub._actions:
            for flag in action.option_strings:
                meanings.setdefault(flag, set()).add(action.dest)
    assert meanings["--concurrency"] == {"concurrency"}  # requests per host everywhere, `run` included
    assert meanings["-f"] == {"format"} and "-f" not in {f for a in parser._subparsers._group_actions[0].choices["query"]._actions
                                                           for f in a.option_strings}
    assert meanings["--in-flight"] == {"in_flight"}


def test_closed_pipe_ends_quietly():
    """`kgfed query … | head -1`: no BrokenPipeError, no traceback."""
    query = "SELECT ?s ?p ?o WHERE { ?s ?p ?o } LIMIT 20000"
    proc = subprocess.Popen([sys.executable, "-m", "kgfed.engine.cli", "query", query, "--endpoint", f"file:{need(CWQ_NT)}",
                             "--no-cache"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    proc.stderr.close()
    proc.wait(timeout=120)
    assert first.split("\t") == ["s", "p", "o\n"]
    assert proc.returncode == 0 and "BrokenPipe" not in err and "Traceback" not in err, err


def test_piped_tables_never_cut_ids():
    rel = "people.person.places_lived|people.place_lived.location"
    done = kgfed("relations", "m.06w2sn5", "--endpoint", f"file:{need(CWQ_NT)}", "--no-cache")
    rows = [line.split("\t") for line in done.stdout.splitlines()]
    assert done.returncode == 0 and rows[0] == ["entity", "direction", "relation", "label"]
    assert ["m.06w2sn5", "out", rel] == rows[[r[2] for r in rows].index(rel)][:3]  # whole, not "people.person.plac…"
    assert "…" not in done.stdout


def test_demo_json(capsys):
    code, out, _ = run(capsys, "demo", "--json", "--no-cache")
    doc = json.loads(out)
    assert code == 0 and doc["wikidata"]["label"]["label"] == "Douglas Adams"
    assert any(e["via"] for e in doc["freebase"]["cvt_neighbors"]) and doc["queries"] > 0


def test_raw_cwq_sparql_gets_the_rewrite_hint(capsys, tmp_path):
    gold = json.loads(need(CWQ_QUESTIONS).read_text().splitlines()[0])["sparql"]
    query = tmp_path / "gold.rq"
    query.write_text(gold)
    code, _, err = run(capsys, "query", "--file", str(query), "--endpoint", f"file:{CWQ_NT}", "--no-cache")
    assert code == 2 and "add --rewrite" in one_line_error(err)
    code, out, _ = run(capsys, "query", "--file", str(query), "--endpoint", f"file:{CWQ_NT}", "--no-cache", "--rewrite", "--json")
    assert code == 0 and json.loads(out)["results"]["bindings"]


# -- nothing silent: warnings for ids and dialects that match nothing ----------------------------------------
def test_unknown_ids_and_a_wrong_dialect_warn(capsys):
    code, out, err = run(capsys, "relations", "Q42", "Q99999999", "--no-cache")
    assert code == 0 and "Q42\t" in out and "warning: no relations for Q99999999" in err and "Q42 " not in err
    code, out, err = run(capsys, "labels", "Q42", "Q99999999", "--no-cache")
    assert code == 0 and "warning: no label for Q99999999" in err
    code, out, err = run(capsys, "relations", "Q42", "--endpoint", f"file:{need(CWQ_NT)}", "--dialect", "wikidata", "--no-cache")
    assert code == 0 and "no relations for Q42 in wikidata: " in err and "holds freebase IRIs but --dialect is wikidata" in err
    code, out, err = run(capsys, "search", "Douglas Adams", "--endpoint", f"file:{CWQ_NT}", "--dialect", "wikidata", "--no-cache")
    assert code == 0 and "holds freebase IRIs but --dialect is wikidata (drop --dialect or use --dialect freebase)" in err
    code, out, err = run(capsys, "expand", "Q99999999", "--kg", "wikidata", "--no-cache", "--methods", "p646,label")
    assert code == 0 and "warning: no edges from Q99999999" in err


def test_unknown_method_parameter_is_an_error(capsys):
    code, _, err = run(capsys, "ask", "Where did Douglas Adams study?", "--kg", "wikidata", "--param", "widht=2")
    assert code == 2 and "unknown tog parameter(s) widht" in one_line_error(err)


# -- runs and evaluation: exit codes and answers that mean something ----------------------------------------
@dataclass(frozen=True)
class FlakyParams(MethodParams):
    delay: float = 0.0  # --param delay=SECONDS


class Flaky(Method):
    """Waits `delay` seconds, then fails on the "…born?" questions and finds nothing for the rest (an empty answer)."""

    name = "flaky"
    Params = FlakyParams
    params: FlakyParams

    async def _answer(self, question: str, topics) -> Result:
        await asyncio.sleep(self.params.delay)
        if question.endswith("born?"):
            raise KgfedError("asked to fail")
        return Result(question, "")


def test_run_fails_when_questions_fail_and_never_writes_an_empty_answer(tmp_path):
    out = tmp_path / "p.jsonl"
    done = kgfed("run", str(DEMO_QUESTIONS), "--method", f"{HERE}:Flaky", "--kg", "wikidata", "--out", str(out),
                 "--cache-dir", str(tmp_path / "c"), "--no-progress")
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert done.returncode == 1, done.stderr
    assert "question(s) failed and were not written" in done.stderr
    assert records and {r["results"] for r in records} == {"{NULL}"}  # nothing found: ToG's "no answer", not "{}"
    failed = sum(1 for line in DEMO_QUESTIONS.read_text().splitlines() if json.loads(line)["question"].endswith("born?"))
    assert len(records) == sum(1 for _ in DEMO_QUESTIONS.read_text().splitlines()) - failed
    scored = kgfed("eval", str(out), "--gold", str(DEMO_QUESTIONS), "--json")
    report = json.loads(scored.stdout)
    assert scored.returncode == 0 and report["null"] == len(records) and report["hits"] == 0


def test_core_install_names_the_extra(capsys, monkeypatch, tmp_path):
    """Without numpy/sentence-transformers (the core install) the LLM-free default says what to install."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in ("numpy", "sentence_transformers") else real(name, *a))
    code, _, err = run(capsys, "ask", "Where did Douglas Adams study?", "--kg", "wikidata", "--cache-dir", str(tmp_path))
    line = one_line_error(err)
    assert code == 2 and "numpy is not installed" in line and "'.[embeddings]'" in line
    out = tmp_path / "p.jsonl"
    code, _, err = run(capsys, "run", str(DEMO_QUESTIONS), "--kg", "wikidata", "--out", str(out), "--cache-dir", str(tmp_path),
                       "--no-progress")
    assert code == 2 and "'.[embeddings]'" in one_line_error(err) and not out.exists()


def test_ctrl_c_during_start_up_is_prompt_and_said_once(tmp_path):
    out = tmp_path / "p.jsonl"
    argv = ["run", str(need(CWQ_QUESTIONS)), "--method", f"{HERE}:Flaky", "--kg", "freebase", "--endpoint",
            f"freebase=file:{CWQ_NT}", "--out", str(out), "--cache-dir", str(tmp_path / "c"), "--param", "delay=60"]
    proc = subprocess.Popen([sys.executable, "-m", "kgfed.engine.cli", *argv], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    time.sleep(2)  # starting: importing, loading the store, the first questions waiting
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert time.monotonic() - sent < 15
    assert proc.returncode == 130 and err.count("interrupted") == 1 and "Traceback" not in err, err
    assert "kept in" not in err and not out.exists()


def test_eval_without_the_runs_question_file_is_an_error(tmp_path):
    preds = tmp_path / "p.jsonl"
    first = json.loads(need(CWQ_QUESTIONS).read_text().splitlines()[0])
    preds.write_text(json.dumps({"question": first["question"], "results": "{Guatemala}", "id": first["id"]}) + "\n")
    done = kgfed("eval", str(preds), "--dataset", "cwq")
    assert done.returncode == 2 and "give the question file the run used with --gold FILE" in one_line_error(done.stderr)
    done = kgfed("eval", str(preds), "--dataset", "cwq", "--gold", str(CWQ_QUESTIONS), "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["n"] == 1
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    done = kgfed("eval", str(empty), "--gold", str(CWQ_QUESTIONS))
    assert done.returncode == 2 and "holds no predictions" in one_line_error(done.stderr)
    done = kgfed("eval", str(preds))
    assert done.returncode == 2 and "--gold FILE" in one_line_error(done.stderr)


def test_commands_without_embeddings_import_nothing_heavy():
    code = ("import sys, runpy; sys.argv = ['kgfed', 'relations', 'Q42', '--no-cache']; "
            "from kgfed.engine.cli import main; main(sys.argv[1:]); "
            "print(sorted(m for m in ('torch', 'sentence_transformers', 'numpy', 'transformers') if m in sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr


@pytest.mark.embeddings
def test_embedding_load_reports_start_and_end(monkeypatch, tmp_path):
    """`embeddings.on_loading` (the CLI's spinner, the run's bar) hears when a model load starts and ends,
    also when it fails (here: a directory that holds no model)."""
    from kgfed.engine.toolbox import embeddings

    with embeddings._load_lock:  # a model load an earlier test started in the background has ended
        pass
    seen: list[bool] = []
    monkeypatch.setattr(embeddings, "on_loading", seen.append)
    with pytest.raises(Exception):  # noqa: B017 (whatever the library raises for an empty model dir)
        embeddings.load_model(tmp_path)
    assert seen == [True, False] and not embeddings.loading.is_set()


def test_embeddings_never_hold_up_ctrl_c():
    """Encoding runs in daemon threads: a loop that is torn down does not wait for them."""
    from kgfed.engine.toolbox.embeddings import _in_daemon_thread

    async def main_task() -> float:
        return await _in_daemon_thread(lambda x: x * 2, 21)

    assert asyncio.run(main_task()) == 42
