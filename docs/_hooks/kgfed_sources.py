"""mkdocs hook: lets mkdocstrings (griffe) read the `kgfed.*` packages from their source.

The four top-level folders install as one namespace under other names (`engine/` is `kgfed.engine`,
see pyproject.toml), and griffe finds a package only in a folder of its own name. Before the build this
hook lays out a throwaway `kgfed/` of symlinks to those folders and puts it first on the Python
handler's search paths, so the API pages are read statically, without importing anything.
"""
from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("engine", "endpoints", "sparql", "cache")


@event_priority(100)  # before mkdocstrings reads its handler options
def on_config(config):
    tree = Path(tempfile.mkdtemp(prefix="kgfed-docs-"))
    atexit.register(shutil.rmtree, tree, True)
    (tree / "kgfed").mkdir()
    for name in PACKAGES:
        (tree / "kgfed" / name).symlink_to(ROOT / name, target_is_directory=True)
    python = config.plugins["mkdocstrings"].config.handlers.setdefault("python", {})
    python["paths"] = [str(tree), *python.get("paths", [])]
    return config
