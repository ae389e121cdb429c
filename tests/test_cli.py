"""The `kgfed` command: JSON rows, tables, one-line errors and exit codes, quick start-up."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kgfed.engine.cli import main

from .conftest import CODEX_NT, CWQ_NT, ROOT, need


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_relations_json_rows(capsys):
    code, out, _ = run(capsys, "relations", "Q42", "--endpoint", f"file:{need(CODEX_NT)}", "--json")
    rows = json.loads(out)
    assert code == 0
    assert {"relation": "P19", "direction": "out", "label": "place of birth"}.items() <= next(r for r in rows if r["relation"] == "P19").items()
    assert all(r["direction"] in {"out", "in"} for r in rows)


def test_neighbors_json_rows_carry_entity_and_label(capsys):
    code, out, _ = run(capsys, "neighbors", "Q42", "P19", "--endpoint", f"file:{need(CODEX_NT)}", "--json")
    assert code == 0
    assert [(r["relation"], r["direction"], r["entity"], r["label"]) for r in json.loads(out)] == [("P19", "out", "Q350", "Cambridge")]


def test_freebase_cvt_neighbors_and_labels(capsys):
    spec = f"file:{need(CWQ_NT)}"
    code, out, _ = run(capsys, "neighbors", "m.06w2sn5", "people.person.places_lived|people.place_lived.location",
                       "--endpoint", spec, "--dialect", "freebase", "--json")
    rows = json.loads(out)
    assert code == 0 and ("m.0d060g", "Canada") in {(r["entity"], r["label"]) for r in rows}
    assert all(r["via"] for r in rows)
    code, out, _ = run(capsys, "labels", "m.0d060g", "--endpoint", spec, "--json")
    assert json.loads(out)[0]["label"] == "Canada"


def test_search_and_query(capsys, tmp_path):
    spec = f"file:{need(CODEX_NT)}"
    code, out, _ = run(capsys, "search", "Douglas Adams", "--endpoint", spec, "--json")
    assert code == 0 and json.loads(out)[0]["id"] == "Q42"
    q = tmp_path / "q.rq"
    q.write_text("SELECT ?o WHERE { <http://www.wikidata.org/entity/Q42> <http://www.wikidata.org/prop/direct/P19> ?o }")
    code, out, _ = run(capsys, "query", "--file", str(q), "--endpoint", spec, "--json")
    assert json.loads(out)["results"]["bindings"][0]["o"]["value"] == "http://www.wikidata.org/entity/Q350"


def test_table_output_is_readable(capsys):
    code, out, _ = run(capsys, "neighbors", "Q42", "P19", "--endpoint", f"file:{need(CODEX_NT)}")
    assert code == 0 and "Cambridge" in out and "Q350" in out


@pytest.mark.parametrize("argv, message", [
    (["relations", "Q42 } DROP", "--endpoint", "file:{codex}"], "invalid Wikidata id"),
    (["relations", "Q42", "--endpoint", "dbpedia"], "unknown endpoint 'dbpedia'"),
    (["relations", "Q42", "--endpoint", "http://127.0.0.1:9/sparql"], "needs a dialect"),
    (["relations", "Q42", "--endpoint", "file:/nonexistent.nt"], "no RDF file"),
    (["neighbors", "Q42", "people.person.nationality", "--endpoint", "file:{codex}"], "expected a property id"),
    (["query", "SELEC nonsense", "--endpoint", "file:{codex}"], "rejected the query"),
    (["query", "--endpoint", "file:{codex}"], "no query"),
    (["relations", "Q42", "--endpoint", "file:{codex}", "--offline"], "--offline"),
    (["relations", "Q42", "--endpoint", "http://127.0.0.1:9/sparql", "--dialect", "wikidata", "--no-cache"], "connection failed"),
])
def test_bad_input_is_one_line_and_nonzero(capsys, argv, message):
    argv = [a.replace("{codex}", str(need(CODEX_NT))) for a in argv]
    code, out, err = run(capsys, *argv)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kgfed: error: ") and message in lines[0], err
    assert "Traceback" not in err


def test_cli_starts_fast_without_heavy_imports():
    code = ("import sys, time; t=time.perf_counter(); from kgfed.engine.cli import app as cli; "
            "cli.build_parser(); print(time.perf_counter()-t); "
            "print(any(m in sys.modules for m in ('torch', 'sentence_transformers', 'anthropic')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout.split()
    assert out[1] == "False"
    assert float(out[0]) < 1.0


def test_console_script_exit_codes():
    exe = [sys.executable, "-m", "kgfed.engine.cli"]
    ok = subprocess.run(exe + ["labels", "Q42", "--endpoint", f"file:{need(CODEX_NT)}", "--json", "--no-cache"],
                        capture_output=True, text=True)
    assert ok.returncode == 0 and json.loads(ok.stdout)[0]["label"] == "Douglas Adams"
    bad = subprocess.run(exe + ["labels", "X1", "--endpoint", f"file:{need(CODEX_NT)}"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
