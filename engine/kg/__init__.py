"""The KG facade: one endpoint, one dialect, the 1-hop templates as batched async calls.

`facade.KG` is the object every method holds (`from kgfed.engine.kg import KG`); `model` the records
it returns; `sync` its blocking twin (`SyncKG`) and the SPARQLWrapper drop-in; `doctor` checks that an
endpoint answers the templates the way kgfed needs.

The names the 0.1.0 module `kgfed.engine.kg` offered besides `KG` (`Edge`, `default_max_age`, …) were
removed in 0.3.0: import them from `model` or `facade` (docs/migration.md).
"""
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .facade import KG

__all__ = ["KG"]

_REMOVED = {**dict.fromkeys(("default_max_age", "LIVE_MAX_AGE", "Triple"), "facade"),
            **dict.fromkeys(("Answer", "AnswerMap", "Edge", "Hit", "Label", "Relation", "mark"), "model")}


def __getattr__(name: str) -> object:
    """`KG`, imported on first use (the SPARQLWrapper drop-in in `.sync` never loads the facade and aiohttp)."""
    if name == "KG":
        from .facade import KG

        return KG
    hint = f" (removed in kgfed 0.3.0: import it from {__name__}.{_REMOVED[name]})" if name in _REMOVED else ""
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}{hint}")
