"""Reasoning methods over the engine (ToG, ToG-2, PoG, HydraRAG, INSES, PRoH, the tool-using agent) and their registry."""
from __future__ import annotations

from typing import Any

from ...sparql.errors import KgfedError
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
    found = METHODS.load(name) if name not in METHODS.entries and reference(name) else METHODS.get(name)
    from .base import Method

    if not (isinstance(found, type) and issubclass(found, Method)):  # checked before anything calls it (os:system)
        raise KgfedError(f"method {name!r} is {_what(found)}, not a method: give a class deriving from "
                         "kgfed.engine.methods.base.Method (package.module:Class) or one of " + ", ".join(method_names()))
    return found


def _what(found: Any) -> str:
    kind = "a class" if isinstance(found, type) else "a function" if callable(found) else f"a {type(found).__name__}"
    return f"{kind} ({getattr(found, '__module__', None) or '?'}.{getattr(found, '__qualname__', None) or type(found).__name__})"


def method_names() -> list[str]:
    """Every method name: the built-in ones and those other packages add (entry points)."""
    return METHODS.names()


__all__ = ["METHODS", "REGISTRY", "get_method", "method_names"]
