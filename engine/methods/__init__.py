"""Reasoning methods over the engine (ToG, ToG-2, PoG, HydraRAG, INSES, PRoH, the tool-using agent) and their registry."""
from __future__ import annotations

from typing import Any

from ...sparql.registry import Registry, reference

# method name -> "module:Class", imported on first use so `kgfed` starts fast. Another package adds one with an
# entry point in the group `kgfed.methods` (docs/ARCHITECTURE.md, "Extending kgfed"), or `METHODS.register(...)`.
REGISTRY: dict[str, str] = {
    "tog": ".tog:ToG",
    "tog2": ".tog2:ToG2",
    "pog": ".pog:PoG",
    "hydra": ".hydra:HydraRAG",
    "inses": ".inses:INSES",
    "proh": ".proh:PRoH",
    "agent": ".agent:Agent",
}

METHODS: Registry[Any] = Registry("method", "kgfed.methods", REGISTRY, package=__name__, hint=", or package.module:Class")


def get_method(name: str) -> Any:
    """The method class called `name`, or named by a `package.module:Class` reference (an unknown name is a
    one-line error listing the known ones)."""
    if name not in METHODS.entries and reference(name):
        return METHODS.load(name)
    return METHODS.get(name)


def method_names() -> list[str]:
    """Every method name: the built-in ones and those other packages add (entry points)."""
    return METHODS.names()


__all__ = ["METHODS", "REGISTRY", "get_method", "method_names"]
