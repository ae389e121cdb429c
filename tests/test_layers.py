"""The architecture map (docs/ARCHITECTURE.md) as a test: imports go one way, lazy ones included.

Every `import`/`from … import` in the source tree, at module level or inside a function, is resolved
to the kgfed package it reaches. A package may import only the packages listed below it; no library
package imports the CLI; the subpackages of `engine/` form no cycle.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# package -> the kgfed packages it may import (besides itself). Read top-down as the layers.
ALLOWED: dict[str, set[str]] = {
    "sparql": set(),
    "endpoints": {"sparql"},
    "cache": {"sparql", "endpoints"},
    "engine.data": set(),
    "engine.kg": {"sparql", "endpoints", "cache"},
    "engine.toolbox": {"sparql", "endpoints", "cache"},
    "engine.federation": {"sparql", "endpoints", "cache", "engine.kg", "engine.toolbox"},
    "engine.text": {"sparql", "endpoints", "cache", "engine.data", "engine.kg", "engine.toolbox"},
    # tool-using agents: tools and profiles over the KG facade, the loop over the LLM layer
    "engine.agent": {"sparql", "endpoints", "cache", "engine.kg", "engine.toolbox"},
    "engine.methods": {"sparql", "endpoints", "cache", "engine.kg", "engine.toolbox", "engine.federation", "engine.text",
                       "engine.agent"},
    "engine.config": {"sparql", "endpoints", "cache", "engine.data", "engine.kg", "engine.federation"},
    # the session owns a run's shared objects (client, KGs, stores, LLM, embedder, text): above what it opens,
    # below everything that obtains them from it
    "engine.session": {"sparql", "endpoints", "cache", "engine.data", "engine.kg", "engine.toolbox", "engine.federation",
                       "engine.text", "engine.methods", "engine.config", "engine.agent"},
    "engine.harness": {"sparql", "endpoints", "cache", "engine.data", "engine.kg", "engine.toolbox", "engine.federation",
                       "engine.text", "engine.methods", "engine.config", "engine.session", "engine.agent"},
    "engine.mcp": {"sparql", "endpoints", "cache", "engine.data", "engine.kg", "engine.toolbox", "engine.federation",
                   "engine.text", "engine.methods", "engine.config", "engine.session", "engine.agent"},    # `kgfed serve`: the agent profiles over HTTP on one session; rewards by the harness's scoring
    "engine.serve": {"sparql", "endpoints", "cache", "engine.data", "engine.kg", "engine.toolbox", "engine.config",
                     "engine.session", "engine.agent", "engine.harness"},
}


def package_of(module: str) -> str:
    """`kgfed.engine.kg.facade` -> `engine.kg`; `kgfed.cache.root` -> `cache`; `kgfed.engine.config` -> `engine.config`."""
    parts = module.split(".")[1:]
    return ".".join(parts[:2]) if parts[0] == "engine" and len(parts) > 1 else parts[0]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return "kgfed." + ".".join(parts)


def imports(path: Path, name: str | None = None) -> set[str]:
    """Every kgfed module `path` (module `name`) imports, lazily or not (relative imports resolved)."""
    name = name or module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                if not node.module:  # `from . import views`: the names are modules
                    found |= {f"{target}.{alias.name}" for alias in node.names}
                    continue
            else:
                target = node.module or ""
            if target.startswith("kgfed."):
                found.add(target)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("kgfed.")}
    return found


SOURCES = sorted(p for top in ("sparql", "endpoints", "cache", "engine") for p in (ROOT / top).rglob("*.py"))


def test_the_map_covers_every_package():
    packages = {package_of(module_name(p)) for p in SOURCES} - {"engine.__init__", "engine"}
    assert packages - set(ALLOWED) == {"engine.cli"}, "add new packages to ALLOWED and to docs/ARCHITECTURE.md"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_go_one_way(path):
    here = package_of(module_name(path))
    if here in ("engine.cli", "engine"):
        return  # the CLI sits on top; engine/__init__ imports nothing (its front door's names are lazy)
    # `kgfed.engine.__version__` is a constant of the package root, which imports nothing: any engine module may read it
    wrong = sorted(m for m in imports(path) if package_of(m) not in ALLOWED[here] | {here} and m != "kgfed.engine.__version__")
    assert not wrong, f"{here} must not import {wrong} (see the layers in docs/ARCHITECTURE.md)"


def test_no_import_cycle_between_engine_packages():
    graph: dict[str, set[str]] = {}
    for path in SOURCES:
        here = package_of(module_name(path))
        graph.setdefault(here, set()).update(package_of(m) for m in imports(path) if package_of(m) != here)
    done: set[str] = set()

    def visit(node: str, trail: tuple[str, ...]) -> None:
        assert node not in trail, f"import cycle: {' -> '.join(trail + (node,))}"
        if node in done:
            return
        for nxt in graph.get(node, ()):
            visit(nxt, trail + (node,))
        done.add(node)

    for node in graph:
        visit(node, ())


def test_the_checker_sees_lazy_and_relative_imports(tmp_path):
    """The rule has teeth: a lazy, relative import of the CLI from a library module is found."""
    probe = ROOT / "engine" / "kg" / "facade.py"
    found = imports(probe)
    assert "kgfed.engine.kg.model" in found and "kgfed.sparql.errors" in found
    fake = tmp_path / "probe.py"
    fake.write_text("def f():\n    from ..cli.app import main\n    from . import views\n")
    assert imports(fake, "kgfed.engine.kg.probe") == {"kgfed.engine.cli.app", "kgfed.engine.kg.views"}
    assert package_of("kgfed.engine.cli.app") not in ALLOWED["engine.kg"]
