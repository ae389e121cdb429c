"""CI at scale: every method's LLM path with the gold stand-in (`--llm gold`) over samples of CWQ and the
federation set, asserting ceilings (strict Hits@1), costs (LLM calls counted, 0 parse fallbacks) and
byte-identical predictions on a re-run.

Thresholds are the measured values of docs/ceilings.md minus a margin; a drop below one is a regression of
a method's LLM path (or of the stand-in). ToG and ToG-2 run in the fast suite; PoG, HydraRAG, INSES and PRoH
encode with the sentence-embedding model and are marked `slow`.
"""
from __future__ import annotations

import asyncio

import pytest

from kgfed.engine.harness.datasets import load_dataset
from kgfed.engine.config import CacheOptions, KGSpec, kg_specs
from kgfed.engine.harness.runner import RunSpec, run, select_questions

from .conftest import CWQ_NT, CWQ_QUESTIONS, FED_DIR, SHARED, need

EXTRACTS = SHARED / "wikipedia" / "extracts.jsonl"
FED_QUESTIONS = FED_DIR / "questions.jsonl"
SEED = 27  # the samples: seeded, in dataset order (`select_questions`)

# method -> (CWQ sample size, strict Hits@1 floor). Measured (docs/ceilings.md) minus a margin.
CWQ_CEILINGS = {"tog": (50, 0.90), "tog2": (30, 0.90), "pog": (20, 0.85), "hydra": (20, 0.85),
                "inses": (20, 0.80), "proh": (20, 0.80)}
# method -> (federation sample size, strict floor over both KGs)
FED_CEILINGS = {"tog": (20, 0.80), "tog2": (20, 0.80), "pog": (10, 0.70), "hydra": (10, 0.70),
                "inses": (10, 0.60), "proh": (10, 0.60)}
FAST = ("tog", "tog2")


def cwq_spec(method: str, cache, text: bool = False) -> RunSpec:
    return RunSpec(method, {}, kgs=(KGSpec("freebase", f"file:{need(CWQ_NT)}"),), cache=CacheOptions(root=str(cache)),
                   llm=f"gold:{need(CWQ_QUESTIONS)}", text=f"file:{need(EXTRACTS)}" if text else None)


def fed_spec(method: str, cache, text: bool = False) -> RunSpec:
    endpoints = [f"freebase=file:{need(FED_DIR / 'freebase.nt')}", f"wikidata=file:{need(FED_DIR / 'wikidata.nt')}"]
    return RunSpec(method, {}, kgs=tuple(kg_specs("freebase,wikidata", endpoints)), cache=CacheOptions(root=str(cache)),
                   llm=f"gold:{need(FED_QUESTIONS)}", text=f"file:{need(EXTRACTS)}" if text else None)


def check(tmp_path, spec: RunSpec, questions, floor: float) -> dict:
    """Run, assert the ceiling and costs, re-run over the warm cache and compare the bytes."""
    first, again = tmp_path / "first.jsonl", tmp_path / "again.jsonl"
    summary = asyncio.run(run(spec, questions, first, progress=False))
    assert summary["failed"] == 0, summary["failures"]
    assert summary["strict"] >= floor, f"{spec.method}: strict {summary['strict']:.3f} < ceiling floor {floor}"
    assert summary["cost"].get("parse_fallbacks", 0) == 0
    assert summary["cost"]["llm_calls"] >= len(questions) and summary["cost"]["input_tokens"] > 0
    asyncio.run(run(spec, questions, again, progress=False))
    assert again.read_bytes() == first.read_bytes()
    return summary


def _marks(method: str):
    return [] if method in FAST else [pytest.mark.slow, pytest.mark.embeddings]


@pytest.mark.parametrize("method", [pytest.param(m, marks=_marks(m)) for m in CWQ_CEILINGS])
def test_cwq_ceiling(tmp_path, method):
    size, floor = CWQ_CEILINGS[method]
    questions = select_questions(load_dataset(need(CWQ_QUESTIONS)), sample=size, seed=SEED)
    check(tmp_path, cwq_spec(method, tmp_path / "cache", text=method == "tog2"), questions, floor)


@pytest.mark.parametrize("method", [pytest.param(m, marks=_marks(m)) for m in FED_CEILINGS])
def test_federation_ceiling(tmp_path, method):
    size, floor = FED_CEILINGS[method]
    questions = select_questions(load_dataset(need(FED_QUESTIONS)), sample=size, seed=SEED)
    check(tmp_path, fed_spec(method, tmp_path / "cache", text=method == "tog2"), questions, floor)
