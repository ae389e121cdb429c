"""Issue 42's first-hour defects: bad input gets one line naming the problem and the fix, in bounded time.

Each case runs the real `kgfed` (in-process `main()` or a subprocess) on the shared fixtures, small files
written here, or local sockets on 127.0.0.1; nothing reaches the network.
"""
from __future__ import annotations

import subprocess
import time

import pytest

from .conftest import CWQ_NT, CWQ_QUESTIONS, need
from .test_cli_first_hour import kgfed, one_line_error, run

MALFORMED = '<http://rdf.freebase.com/ns/m.01> <http://rdf.freebase.com/ns/type.object.name> "unterminated .\n'


# -- item 5: a malformed .nt is named, at once, by every command ------------------------------------------
@pytest.mark.parametrize("command", ["query", "extract-check", "relations"])
def test_a_malformed_nt_file_is_one_line_naming_the_file_within_20_s(tmp_path, command):
    bad = tmp_path / "bad.nt"
    bad.write_text(MALFORMED, encoding="utf-8")
    argv = {"query": ["query", "--endpoint", f"file:{bad}", "--dialect", "freebase", "SELECT * WHERE { ?s ?p ?o } LIMIT 1"],
            "extract-check": ["extract-check", str(need(CWQ_QUESTIONS)), "--kg", str(bad)],
            "relations": ["relations", "m.01", "--endpoint", f"file:{bad}", "--dialect", "freebase"]}[command]
    started = time.monotonic()
    done = kgfed(*argv, "--cache-dir", str(tmp_path / "cache"), timeout=60)
    took = time.monotonic() - started
    line = one_line_error(done.stderr)
    assert done.returncode == 2 and took < 20, (took, done.stderr)
    assert "bad.nt is not valid RDF" in line and "fix the file" in line
    assert "installation" not in line and "Unknown child process" not in done.stderr


# -- item 6: an unreachable --ray address is one line, in bounded time --------------------------------------
@pytest.mark.parametrize("address", ["127.0.0.1:1", "ray://127.0.0.1:1", "127.0.0.1:99999"])
def test_an_unreachable_ray_address_is_one_line_within_20_s(tmp_path, address):
    started = time.monotonic()
    done = kgfed("run", str(need(CWQ_QUESTIONS)), "--method", "tog", "--kg", "freebase", "--endpoint",
                 f"freebase=file:{need(CWQ_NT)}", "--limit", "1", "--out", str(tmp_path / "preds.jsonl"), "--ray", address,
                 "--cache-dir", str(tmp_path / "cache"), "--no-progress", timeout=60)
    took = time.monotonic() - started
    line = one_line_error(done.stderr)
    assert done.returncode == 2 and took < 20, (took, done.stderr)
    assert f"--ray {address}: nothing answers at 127.0.0.1:" in line and "ray start --head" in line
    assert not (tmp_path / "preds.jsonl").exists()


# -- item 8: binary input is one line naming the file, exit 2 ------------------------------------------------
BINARY = bytes(range(256)) * 4 + b"\xff\xfe\x00"


def test_a_binary_query_file_is_one_line(capsys, tmp_path):
    binary = tmp_path / "q.rq"
    binary.write_bytes(BINARY)
    code, _, err = run(capsys, "query", "--file", str(binary), "--cache-dir", str(tmp_path / "cache"))
    line = one_line_error(err)
    assert code == 2 and f"query file {binary} is not UTF-8 text" in line and "UnicodeDecodeError" not in line


def test_a_binary_text_source_is_one_line(capsys, tmp_path):
    binary = tmp_path / "extracts.jsonl"
    binary.write_bytes(BINARY)
    code, _, err = run(capsys, "context", "Q42", "-q", "who was he?", "--ranker", "bm25", "--text-source",
                       f"file:{binary}", "--cache-dir", str(tmp_path / "cache"))
    line = one_line_error(err)
    assert code == 2 and f"extracts file {binary} is not UTF-8 text" in line and "UnicodeDecodeError" not in line


# -- item 9: what was accepted silently ---------------------------------------------------------------------
def test_context_with_an_empty_question_is_an_error(capsys, tmp_path):
    for question in ("", "   "):
        code, out, err = run(capsys, "context", "Q42", "-q", question, "--ranker", "bm25", "--cache-dir", str(tmp_path))
        assert code == 2 and "the question (-q) is empty" in one_line_error(err) and out == ""


def test_align_with_one_kg_is_an_error(capsys, tmp_path):
    code, out, err = run(capsys, "align", "m.0282x", "--kg", "freebase", "--cache-dir", str(tmp_path))
    assert code == 2 and out == ""
    assert "align needs two KGs, got only 'freebase'" in one_line_error(err) and "--kg freebase,wikidata" in err


def test_mcp_with_an_unknown_llm_refuses_to_start(tmp_path):
    done = kgfed("mcp", "--llm", "bogus", "--cache-dir", str(tmp_path), timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and "unknown LLM spec 'bogus'" in one_line_error(done.stderr)


def test_ask_with_a_topic_the_kg_does_not_hold_warns(capsys, tmp_path):
    code, _, err = run(capsys, "ask", "who is this?", "--topic", "Q99999999", "--llm", "none", "--cache-dir", str(tmp_path))
    assert code == 0
    assert "kgfed: warning: no label or edge for Q99999999 in wikidata" in err, err
    code, _, err = run(capsys, "ask", "who was douglas adams?", "--topic", "Q42", "--llm", "none", "--cache-dir", str(tmp_path))
    assert code == 0 and "warning" not in err, err


# -- item 10: messages that named the wrong thing -------------------------------------------------------------
async def test_an_mcp_id_with_a_line_feed_is_shown_as_given():
    from .test_mcp import refused, stdio

    async with stdio("--methods", "label", "--text-source", "demo") as client:
        for tool, arguments in (("relations", {"entity": "Q42\n"}), ("neighbors", {"entity": "Q42\n", "relation": "P69"}),
                                ("neighbors", {"entity": "Q42", "relation": "P69\n"})):
            message = await refused(client, tool, **arguments)
            assert "\\n'" in message and "'Q42'" not in message and "'P69'" not in message, message


def test_the_dialect_hint_names_the_id_in_error_not_the_example(capsys, tmp_path):
    code, _, err = run(capsys, "labels", "Q42", "m.0282x", "--cache-dir", str(tmp_path))
    line = one_line_error(err)
    assert code == 2 and "(m.0282x is a Freebase id: look it up apart, with --dialect freebase)" in line, line
    assert "Q42 is a" not in line


def test_a_method_reference_that_is_not_a_method_is_never_called(capsys, tmp_path):
    out = tmp_path / "p.jsonl"
    for reference, kind in (("os:system", "a function (posix.system)"), ("collections:OrderedDict", "a class")):
        code, _, err = run(capsys, "run", str(need(CWQ_QUESTIONS)), "--method", reference, "--kg", "freebase", "--endpoint",
                           f"freebase=file:{need(CWQ_NT)}", "--limit", "1", "--out", str(out), "--cache-dir", str(tmp_path))
        line = one_line_error(err)
        assert code == 2 and f"method {reference!r} is {kind}" in line and "kgfed.engine.methods.base.Method" in line
        assert "rejects its parameters" not in line and not out.exists()


def test_a_timeout_shorter_than_the_stores_load_is_never_blamed_on_busy_workers(capsys, tmp_path):
    """Nothing else runs: no worker was busy. The load, or the query, took the time (a cross join of the demo KG)."""
    query = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"
    code, _, err = run(capsys, "query", query, "--timeout", "0.001", "--cache-dir", str(tmp_path))
    line = one_line_error(err)
    assert code == 2 and "raise --timeout" in line and "busy" not in line, line
    assert "still loading" in line or "the query ran over 0.001 s" in line, line


@pytest.mark.parametrize("command, option, name", [
    (["expand", "Q42"], "--view", "view.html"), (["expand", "Q42"], "--rdf", "subgraph.trig"),
    (["ask", "who?", "--llm", "none"], "--view", "view.html"),
])
def test_an_output_directory_gets_an_example_of_the_right_kind(capsys, tmp_path, command, option, name):
    code, _, err = run(capsys, *command, option, str(tmp_path), "--cache-dir", str(tmp_path / "cache"))
    assert code == 2 and f"e.g. {tmp_path / name}" in one_line_error(err)


def test_integer_ranges_print_integers(capsys):
    code, _, err = run(capsys, "query", "ASK {}", "--query-memory", "1")
    assert code == 2 and "must be between 64 and 1048576, got 1" in one_line_error(err)


def test_huge_limits_are_refused_by_kgfed_not_by_the_stores_parser(capsys, tmp_path):
    code, _, err = run(capsys, "neighbors", "Q42", "P69", "--limit", "99999999999999999999", "--cache-dir", str(tmp_path))
    line = one_line_error(err)
    assert code == 2 and "argument --limit: must be at most 9223372036854775807" in line and "rejected" not in line
    code, _, err = run(capsys, "neighbors", "Q42", "P69", "--limit", "0")
    assert code == 2 and "argument --limit: must be >= 1, got 0" in one_line_error(err)


@pytest.mark.parametrize("query", ["DELETE WHERE { ?s ?p ?o }", "PREFIX a: <http://a/>\ninsert data { a:b a:c a:d }",
                                   "LOAD <http://example.org/x.nt>", "DROP ALL"])
def test_updates_are_refused_in_kgfeds_words(capsys, tmp_path, query):
    code, _, err = run(capsys, "query", query, "--cache-dir", str(tmp_path))
    line = one_line_error(err)
    assert code == 2 and "SPARQL updates" in line and "are refused" in line and "expected" not in line


def test_a_core_install_names_the_extra_for_sbert_alignment(capsys, monkeypatch, tmp_path):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("numpy", "sentence_transformers", "onnxruntime") else real(name, *a))
    code, _, err = run(capsys, "align", "m.0282x", "--methods", "sbert", "--cache-dir", str(tmp_path))
    line = one_line_error(err)
    assert code == 2 and "pip install 'kgfed[embeddings]'" in line and "embedder=" not in line


# -- make test names each skip's reason; the README's timing says on what machine and load ------------------
def test_make_test_lists_each_skip_with_its_reason():
    from .conftest import ROOT

    for target in ("test", "test-fast"):
        done = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True, timeout=60)
        pytest_lines = [line for line in done.stdout.splitlines() if "-m pytest" in line]
        assert pytest_lines and all(" -rs " in f" {line} " for line in pytest_lines), (target, done.stdout, done.stderr)
    timing = next(line for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines() if line.startswith("make test "))
    assert "2 cores" in timing and "nothing else running" in timing and "~24" in timing, timing
