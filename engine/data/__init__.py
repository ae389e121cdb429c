"""The bundled demo KGs: real facts in both dialects (see README.md here for where they come from).

`default_endpoint()` is the KG a command or a `KGSpec` opens when no endpoint is given.
"""
from __future__ import annotations

from pathlib import Path

__all__ = ["DATA", "DEMO_EXTRACTS", "DEMO_FREEBASE", "DEMO_QUESTIONS", "DEMO_WIKIDATA", "default_endpoint"]

DATA = Path(__file__).resolve().parent
DEMO_WIKIDATA = DATA / "demo_wikidata.nt"
DEMO_FREEBASE = DATA / "demo_freebase.nt"
DEMO_QUESTIONS = DATA / "demo_questions.jsonl"
DEMO_EXTRACTS = DATA / "demo_extracts.jsonl"


def default_endpoint(dialect: str | None = None) -> str:
    """The demo KG of the requested dialect (Wikidata when none is given)."""
    return f"file:{DEMO_FREEBASE if dialect == 'freebase' else DEMO_WIKIDATA}"
