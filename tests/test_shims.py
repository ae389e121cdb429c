"""0.3.0 removed the deprecation shims 0.2.0 announced (issue 40 item 3): the 0.1.0 module paths, the names the
old `kgfed.engine.kg` and `kgfed.engine.cli` modules offered, and the 0.2 keywords and accessors. These tests
check they are gone, that asking for one says where it went (where that is cheap: an attribute, never an import
hook), that `import kgfed.engine` changes no import machinery and loads nothing else, and that no module of the
four packages imports an old path or still carries a `DeprecationWarning`.

The list of old paths is the move itself, read from git (`git show --stat 797e47b`, "Lay engine/ out by concern").
"""
from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from kgfed.engine import __version__

ROOT = Path(__file__).resolve().parents[1]

# old module -> new module (the main home), as moved in 797e47b; docs/migration.md lists each
MOVES = {
    "kgfed.engine.model": "kgfed.engine.kg.model",
    "kgfed.engine.sync": "kgfed.engine.kg.sync",
    "kgfed.engine.align": "kgfed.engine.federation.align",
    "kgfed.engine.hypergraph": "kgfed.engine.federation.hypergraph",
    "kgfed.engine.subgraph": "kgfed.engine.federation.subgraph",
    "kgfed.engine.views": "kgfed.engine.federation.views",
    "kgfed.engine.datasets": "kgfed.engine.harness.datasets",
    "kgfed.engine.doctor": "kgfed.engine.harness.doctor",
    "kgfed.engine.evaluate": "kgfed.engine.harness.evaluate",
    "kgfed.engine.extract": "kgfed.engine.harness.extract",
    "kgfed.engine.rog": "kgfed.engine.harness.rog",
    "kgfed.engine.runner": "kgfed.engine.harness.runner",
    "kgfed.engine.mcp_server": "kgfed.engine.mcp.server",
    "kgfed.engine.context": "kgfed.engine.text.context",
    "kgfed.engine.passages": "kgfed.engine.text.passages",
    "kgfed.engine.embeddings": "kgfed.engine.toolbox.embeddings",
    "kgfed.engine.llm": "kgfed.engine.toolbox.llm",
    "kgfed.engine.local_llm": "kgfed.engine.toolbox.local_llm",
    "kgfed.engine.prompts": "kgfed.engine.toolbox.prompts",
    "kgfed.engine.pruning": "kgfed.engine.toolbox.pruning",
    "kgfed.engine.demo": "kgfed.engine.data",
    "kgfed.engine.cli_ask": "kgfed.engine.cli.ask",
    "kgfed.engine.cli_context": "kgfed.engine.cli.context",
    "kgfed.engine.cli_endpoints": "kgfed.engine.cli.endpoints",
    "kgfed.engine.cli_extract": "kgfed.engine.cli.extract",
    "kgfed.engine.cli_federation": "kgfed.engine.cli.federation",
    "kgfed.engine.cli_freebase": "kgfed.engine.cli.freebase",
    "kgfed.engine.cli_mcp": "kgfed.engine.cli.mcp",
    "kgfed.engine.cli_run": "kgfed.engine.cli.run",
}


@pytest.mark.parametrize("old", sorted(MOVES))
def test_old_paths_are_gone_and_their_homes_import(old):
    assert importlib.import_module(MOVES[old]).__name__ == MOVES[old]
    sys.modules.pop(old, None)
    with pytest.raises(ModuleNotFoundError, match=old.replace(".", r"\.")):
        importlib.import_module(old)


def test_an_old_name_says_where_it_went():
    import kgfed.engine
    from kgfed.engine import cli, kg

    with pytest.raises(AttributeError, match=r"has no attribute 'sync' \(removed in kgfed 0\.3\.0: see docs/migration\.md\)"):
        kgfed.engine.sync  # noqa: B018 - the access is what is tested
    with pytest.raises(AttributeError, match=r"'Edge' \(removed in kgfed 0\.3\.0: import it from kgfed\.engine\.kg\.model\)"):
        kg.Edge  # noqa: B018
    with pytest.raises(AttributeError, match=r"'default_max_age' \(removed .*kgfed\.engine\.kg\.facade\)"):
        kg.default_max_age  # noqa: B018
    with pytest.raises(AttributeError, match=r"'build_parser' \(removed in kgfed 0\.3\.0: import it from kgfed\.engine\.cli\.app\)"):
        cli.build_parser  # noqa: B018
    with pytest.raises(ImportError):
        from kgfed.engine.kg import Edge  # noqa: F401
    with pytest.raises(AttributeError, match="'nope'$"):
        kgfed.engine.nope  # noqa: B018
    for gone in ("MOVED", "REMOVED_IN", "moved_message"):
        assert not hasattr(kgfed.engine, gone)


def test_the_front_door_names_are_lazy_and_the_same_objects():
    import kgfed.engine
    from kgfed.engine.config import HttpOptions
    from kgfed.engine.kg.facade import KG
    from kgfed.engine.session import Session

    assert kgfed.engine.KG is KG and kgfed.engine.Session is Session and kgfed.engine.HttpOptions is HttpOptions
    for name in kgfed.engine.__all__:
        assert getattr(kgfed.engine, name) is not None, name
    assert set(kgfed.engine.__all__) <= set(dir(kgfed.engine))


def test_import_kgfed_engine_changes_no_import_machinery_and_loads_nothing_else():
    code = ("import sys; finders = list(sys.meta_path); hooks = list(sys.path_hooks); before = set(sys.modules)\n"
            "import kgfed.engine\n"
            "assert sys.meta_path == finders and sys.path_hooks == hooks, 'import machinery changed'\n"
            "print(sorted(m for m in set(sys.modules) - before if m.startswith('kgfed')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['kgfed', 'kgfed.engine']"


def _sources() -> list[Path]:
    return [p for package in ("engine", "endpoints", "cache", "sparql") for p in (ROOT / package).rglob("*.py")]


def test_no_module_imports_an_old_path():
    old_tails = {old.rsplit(".", 1)[1] for old in MOVES}
    found = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                module = node.module
                if module in MOVES or (path.parent == ROOT / "engine" and node.level == 1 and module in old_tails):
                    found.append(f"{path.relative_to(ROOT)}: from {'.' * node.level}{module}")
            elif isinstance(node, ast.Import):
                found += [f"{path.relative_to(ROOT)}: import {a.name}" for a in node.names if a.name in MOVES]
    assert found == []


def test_no_deprecation_shim_is_left():
    """0.3.0 removed every `DeprecationWarning` shim; a new deprecation names its own release in the CHANGELOG."""
    found = [f"{p.relative_to(ROOT)}:{i}" for p in _sources() for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if "DeprecationWarning" in line]
    assert found == []


def test_the_version_is_written_once_and_read_everywhere():
    """pyproject.toml reads `kgfed.engine.__version__`; the installed metadata and `kgfed --version` agree."""
    import tomllib
    from importlib.metadata import version

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" in pyproject["project"]["dynamic"] and "version" not in pyproject["project"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "kgfed.engine.__version__"}
    assert __version__ == "0.3.0"
    assert version("kgfed") == __version__, "reinstall (make test does): the installed metadata is older than the source"
    done = subprocess.run([sys.executable, "-m", "kgfed.engine.cli", "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == f"kgfed {__version__}"
