"""kgfed's engine: the KG facade, federation, the reasoning methods, the KBQA harness, MCP and the CLI.

`__version__` is the package's version (pyproject.toml reads it from here).

The modules that lived directly in `engine/` until 0.1.0 moved into one folder per concern in 0.2.0
(`kgfed.engine.sync` is now `kgfed.engine.kg.sync`, `kgfed.engine.llm` is `kgfed.engine.toolbox.llm`, …).
Their old import paths still work until `REMOVED_IN`: a finder on `sys.meta_path`, installed when
`kgfed.engine` is first imported, answers an old path with the new module itself (the same module
object, so the same classes and functions) and emits a `DeprecationWarning` that names the new path.
A module the move split in two (`demo`, `evaluate`) is answered by a small module that looks each name
up in the new homes in turn. The table is `MOVED`; nothing is imported until an old path is asked for.
"""
from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types
import warnings

__version__ = "0.2.0"

__all__ = ["__version__", "MOVED", "REMOVED_IN", "moved_message"]

REMOVED_IN = "0.3.0"  # the next minor release after the one that moved them

# old module path -> its new home(s), the first being the main one
MOVED: dict[str, tuple[str, ...]] = {
    # kg/: the facade's records and its blocking twin
    "kgfed.engine.model": ("kgfed.engine.kg.model",),
    "kgfed.engine.sync": ("kgfed.engine.kg.sync",),
    # federation/
    "kgfed.engine.align": ("kgfed.engine.federation.align",),
    "kgfed.engine.subgraph": ("kgfed.engine.federation.subgraph",),
    "kgfed.engine.views": ("kgfed.engine.federation.views",),
    "kgfed.engine.hypergraph": ("kgfed.engine.federation.hypergraph",),
    # toolbox/
    "kgfed.engine.llm": ("kgfed.engine.toolbox.llm",),
    "kgfed.engine.local_llm": ("kgfed.engine.toolbox.local_llm",),
    "kgfed.engine.prompts": ("kgfed.engine.toolbox.prompts",),
    "kgfed.engine.pruning": ("kgfed.engine.toolbox.pruning",),
    "kgfed.engine.embeddings": ("kgfed.engine.toolbox.embeddings",),
    # text/
    "kgfed.engine.context": ("kgfed.engine.text.context",),
    "kgfed.engine.passages": ("kgfed.engine.text.passages",),
    # harness/ (`kgfed evaluate`'s command part went to the CLI)
    "kgfed.engine.datasets": ("kgfed.engine.harness.datasets",),
    "kgfed.engine.runner": ("kgfed.engine.harness.runner",),
    "kgfed.engine.evaluate": ("kgfed.engine.harness.evaluate", "kgfed.engine.cli.evaluate"),
    "kgfed.engine.extract": ("kgfed.engine.harness.extract",),
    "kgfed.engine.doctor": ("kgfed.engine.harness.doctor",),
    "kgfed.engine.rog": ("kgfed.engine.harness.rog",),
    # mcp/
    "kgfed.engine.mcp_server": ("kgfed.engine.mcp.server",),
    # the demo data paths went to data/, the tour to the CLI
    "kgfed.engine.demo": ("kgfed.engine.data", "kgfed.engine.cli.demo"),
    # cli/: one module per command group
    "kgfed.engine.cli_ask": ("kgfed.engine.cli.ask",),
    "kgfed.engine.cli_context": ("kgfed.engine.cli.context",),
    "kgfed.engine.cli_endpoints": ("kgfed.engine.cli.endpoints",),
    "kgfed.engine.cli_extract": ("kgfed.engine.cli.extract",),
    "kgfed.engine.cli_federation": ("kgfed.engine.cli.federation",),
    "kgfed.engine.cli_freebase": ("kgfed.engine.cli.freebase",),
    "kgfed.engine.cli_mcp": ("kgfed.engine.cli.mcp",),
    "kgfed.engine.cli_run": ("kgfed.engine.cli.run",),
}


def moved_message(old: str, new: tuple[str, ...] | str) -> str:
    """The one-line deprecation text for an old module path (or an old `module.name`)."""
    homes = (new,) if isinstance(new, str) else new
    where = " and ".join(homes)
    return (f"{old} moved to {where} in kgfed 0.2.0: import it from there; "
            f"the old path goes away in kgfed {REMOVED_IN}")


def _caller_stacklevel() -> int:
    """The `stacklevel` that points a warning at the line that imported, past the import machinery.

    `warnings` itself does not count the frames of `importlib._bootstrap` (its `_is_internal_frame`);
    the others between here and the importing line (this module, `importlib.import_module`) are counted.
    """
    frame: types.FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None:
        filename = frame.f_code.co_filename
        if "importlib" in filename and "_bootstrap" in filename:
            frame = frame.f_back
            continue
        if frame.f_globals.get("__name__") not in (__name__, "importlib"):
            return level
        frame, level = frame.f_back, level + 1
    return 1


def _split_module(old: str, homes: tuple[str, ...]) -> types.ModuleType:
    """A module whose names are looked up in each new home in turn (a module the move split in two)."""
    module = types.ModuleType(old, f"Deprecated: {moved_message(old, homes)}")

    def __getattr__(name: str):
        if name == "__all__":  # `from old import *`: the public names of every home
            return [n for n in __dir__() if not n.startswith("_")]
        for home in homes:
            target = importlib.import_module(home)
            if hasattr(target, name):
                return getattr(target, name)
        raise AttributeError(f"module {old!r} has no attribute {name!r} (it moved to {' and '.join(homes)})")

    def __dir__() -> list[str]:
        return sorted({n for home in homes for n in dir(importlib.import_module(home))})

    module.__getattr__ = __getattr__  # type: ignore[method-assign]  # PEP 562: a module-level hook
    module.__dir__ = __dir__  # type: ignore[method-assign]
    return module


class _MovedModules:
    """Answers the old module paths of `MOVED` with their new modules, with a `DeprecationWarning`.

    A finder and loader by their methods (`find_spec`; `create_module`, `exec_module`), as the import system
    calls them: subclassing `importlib.abc`'s classes would import `importlib.abc` and `importlib.resources`
    into every script that imports kgfed (2 ms of the SPARQLWrapper drop-in's import)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        """The default (empty) module: `exec_module` puts the real one in its place."""
        return None

    def exec_module(self, module):
        """Put the new module itself under the old name in `sys.modules`: the import statement then binds it
        (the same module object, so the same classes and functions, and monkeypatching works), and its own
        `__spec__` stays untouched."""
        old = module.__name__
        homes = MOVED[old]
        warnings.warn(moved_message(old, homes), DeprecationWarning, stacklevel=_caller_stacklevel())
        sys.modules[old] = importlib.import_module(homes[0]) if len(homes) == 1 else _split_module(old, homes)


if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    sys.meta_path.insert(0, _MovedModules())
