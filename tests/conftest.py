"""Shared fixtures: where the shared data lives, embedded stores over it, a private cache per test."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# A shell without job control starts `pytest … &` with SIGINT ignored, and every child inherits that: the
# Ctrl-C tests' `kgfed run` would then never see their SIGINT. The suite's children get Python's own handler.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
CWQ_NT = SHARED / "freebase" / "cwq_subgraph.nt"
CWQ_QUESTIONS = SHARED / "freebase" / "cwq_questions.jsonl"
CODEX_NT = SHARED / "wikidata" / "codex_s.nt"
FED_DIR = SHARED / "federation"
HTTP_DIR = SHARED / "http"

pytest_plugins = ["tests.conftest_servers"] if (Path(__file__).parent / "conftest_servers.py").exists() else []


def need(path: Path) -> Path:
    """Skip the test cleanly when a shared fixture file is absent."""
    if not path.exists():
        pytest.skip(f"shared fixture {path} is absent (expected ../shared/data beside the project)")
    return path


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """Every test gets its own response cache directory: no test sees another's answers."""
    monkeypatch.setenv("KGFED_CACHE_DIR", str(tmp_path / "kgfed-cache"))
    import kgfed.cache.responses as responses

    monkeypatch.setattr(responses, "DEFAULT_CACHE_DIR", tmp_path / "kgfed-cache")


@pytest.fixture(scope="session")
def cwq_store():
    import pyoxigraph as ox

    store = ox.Store()
    store.bulk_load(path=str(need(CWQ_NT)), format=ox.RdfFormat.N_TRIPLES)
    return store


@pytest.fixture(scope="session")
def codex_store():
    import pyoxigraph as ox

    store = ox.Store()
    store.bulk_load(path=str(need(CODEX_NT)), format=ox.RdfFormat.N_TRIPLES)
    return store
