"""The KG facade: one endpoint, one dialect, the 1-hop templates as batched async calls.

`facade.KG` is the object every method holds (`from kgfed.engine.kg import KG`); `model` the records
it returns; `sync` its blocking twin (`SyncKG`) and the SPARQLWrapper drop-in; `doctor` checks that an
endpoint answers the templates the way kgfed needs.
"""
from .facade import KG

__all__ = ["KG"]
