"""The KG facade: one endpoint, one dialect, the 1-hop templates as batched async calls.

`facade.KG` is the object every method holds (`from kgfed.engine.kg import KG`); `model` the records
it returns; `sync` its blocking twin (`SyncKG`) and the SPARQLWrapper drop-in; `doctor` checks that an
endpoint answers the templates the way kgfed needs.

Until 0.2.0 `kgfed.engine.kg` was one module; the other names it offered still resolve here, with a
`DeprecationWarning` naming their new module, until 0.3.0.
"""
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .facade import KG

__all__ = ["KG"]

# names the 0.1.0 module `kgfed.engine.kg` offered besides KG -> the module they live in now
_MOVED_NAMES = {**dict.fromkeys(("default_max_age", "LIVE_MAX_AGE", "Triple"), "facade"),
                **dict.fromkeys(("Answer", "AnswerMap", "Edge", "Hit", "Label", "Relation", "mark"), "model")}


def __getattr__(name: str):
    """`KG`, imported on first use (the SPARQLWrapper drop-in in `.sync` never loads the facade and aiohttp);
    `from kgfed.engine.kg import Edge` (0.1.0): the object, with a DeprecationWarning (PEP 562)."""
    if name == "KG":
        from .facade import KG

        return KG
    if name not in _MOVED_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    import warnings

    new = f"{__name__}.{_MOVED_NAMES[name]}"
    warnings.warn(f"{__name__}.{name} moved to {new}.{name} in kgfed 0.2.0: import it from {new}; "
                  "the old path goes away in kgfed 0.3.0", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(new), name)
