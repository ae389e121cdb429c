"""Reasoning methods over the engine (ToG, ToG-2, PoG, HydraRAG, INSES, PRoH, the tool-using agent) and their registry."""
from __future__ import annotations

import importlib

# method name -> "module:Class", imported on first use so `kgfed` starts fast
REGISTRY: dict[str, str] = {
    "tog": ".tog:ToG",
    "tog2": ".tog2:ToG2",
    "pog": ".pog:PoG",
    "hydra": ".hydra:HydraRAG",
    "inses": ".inses:INSES",
    "proh": ".proh:PRoH",
    "agent": ".agent:Agent",
}


def get_method(name: str):
    """The method class called `name` (raises a clear error listing the known ones)."""
    from ...sparql.errors import KgfedError

    try:
        module_name, class_name = REGISTRY[name].split(":")
    except KeyError:
        raise KgfedError(f"unknown method {name!r}: choose one of {', '.join(sorted(REGISTRY)) or '(none yet)'}") from None
    try:
        module = importlib.import_module(module_name, __name__)
    except ModuleNotFoundError as error:
        if error.name and error.name.endswith(module_name.lstrip(".")):
            raise KgfedError(f"method {name!r} is not available in this install: update kgfed") from None
        raise
    return getattr(module, class_name)
