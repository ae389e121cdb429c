"""The 0.1.0 import paths keep working in 0.2.0, with a DeprecationWarning that names the new path.

The list below is the move itself, read from git (`git show --stat 797e47b`, "Lay engine/ out by
concern"): every `engine/X.py` that became `engine/FOLDER/Y.py`. It is written out here rather than
read from `kgfed.engine.MOVED`, so a path dropped from the table fails. Each old path is imported for
real (its `sys.modules` entry removed first), must warn once with the new path and the release it goes
away in, and must give the very objects of the new module.
"""
from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

import kgfed.engine
from kgfed.engine import MOVED, REMOVED_IN, __version__

# old module -> new module (the main home), as moved in 797e47b
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
# public names users imported from the old paths (README examples of 0.1.0, ToG/PoG ports)
NAMES = {
    "kgfed.engine.sync": ["SyncKG", "SPARQLWrapper", "JSON", "XML"],
    "kgfed.engine.llm": ["make_llm"],
    "kgfed.engine.model": ["Edge", "Relation", "Label"],
    "kgfed.engine.runner": ["RunSpec", "Runtime", "answer_all"],
    "kgfed.engine.datasets": ["load_dataset", "Question"],
    "kgfed.engine.evaluate": ["evaluate", "Report"],
    "kgfed.engine.align": ["Aligner"],
    "kgfed.engine.subgraph": ["expand"],
}


def fresh_import(old: str, monkeypatch) -> tuple[object, list[warnings.WarningMessage]]:
    """Import `old` as a first import would (no cached module, no attribute on the parent)."""
    monkeypatch.delitem(sys.modules, old, raising=False)
    parent, child = old.rsplit(".", 1)
    monkeypatch.delattr(sys.modules[parent], child, raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    return module, [w for w in caught if issubclass(w.category, DeprecationWarning) and old in str(w.message)]


def test_the_table_covers_the_move():
    assert set(MOVES) <= set(MOVED)
    assert all(MOVED[old][0] == new for old, new in MOVES.items())


@pytest.mark.parametrize("old", sorted(MOVES))
def test_old_path_imports_warns_and_is_the_new_module(old, monkeypatch):
    new = importlib.import_module(MOVES[old])
    module, caught = fresh_import(old, monkeypatch)
    assert len(caught) == 1, [str(w.message) for w in caught]
    message = str(caught[0].message)
    assert MOVES[old] in message and f"goes away in kgfed {REMOVED_IN}" in message
    assert caught[0].filename == __file__  # pointed at the importing line, not at importlib
    if len(MOVED[old]) == 1:
        assert module is new  # the module itself: same classes, functions, monkeypatching works
        assert module.__spec__.name == MOVES[old]  # the new module's own spec is untouched
    for name in NAMES.get(old, []) + [n for n in dir(new) if not n.startswith("_")][:20]:
        assert getattr(module, name) is getattr(new, name), f"{old}.{name}"
    assert sys.modules[old] is module  # a second import is the same module, and silent
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        assert importlib.import_module(old) is module
    assert not again


def test_from_engine_import_form_warns_too(monkeypatch):
    monkeypatch.delitem(sys.modules, "kgfed.engine.sync", raising=False)
    monkeypatch.delattr(kgfed.engine, "sync", raising=False)
    with pytest.warns(DeprecationWarning, match=r"kgfed\.engine\.sync moved to kgfed\.engine\.kg\.sync"):
        from kgfed.engine import sync
    from kgfed.engine.kg import sync as new
    assert sync is new and sync.SyncKG is new.SyncKG


def test_split_modules_find_each_name_in_its_new_home(monkeypatch):
    """`demo` went to data/ (the paths) and cli/ (the tour); `evaluate`'s command part went to the CLI."""
    from kgfed.engine import data
    from kgfed.engine.cli import demo as cli_demo
    from kgfed.engine.cli import evaluate as cli_evaluate
    from kgfed.engine.harness import evaluate as harness_evaluate

    demo, caught = fresh_import("kgfed.engine.demo", monkeypatch)
    assert caught and "kgfed.engine.data and kgfed.engine.cli.demo" in str(caught[0].message)
    assert demo.DEMO_WIKIDATA == data.DEMO_WIKIDATA and demo.DEMO_WIKIDATA.is_file()
    assert demo.default_endpoint is data.default_endpoint and demo.run_demo is cli_demo.run_demo
    assert {"DEMO_FREEBASE", "run_demo"} <= set(demo.__all__)
    evaluate, _ = fresh_import("kgfed.engine.evaluate", monkeypatch)
    assert evaluate.evaluate is harness_evaluate.evaluate and evaluate.cmd_evaluate is cli_evaluate.cmd_evaluate
    with pytest.raises(AttributeError, match="no attribute 'nope' .*moved to kgfed.engine.harness.evaluate"):
        evaluate.nope  # noqa: B018 (the attribute access is what is tested)


def test_names_of_the_old_kg_module_resolve_with_a_warning():
    from kgfed.engine.kg import facade, model

    with pytest.warns(DeprecationWarning, match=r"kgfed\.engine\.kg\.Edge moved to kgfed\.engine\.kg\.model\.Edge"):
        from kgfed.engine.kg import Edge
    assert Edge is model.Edge
    with pytest.warns(DeprecationWarning, match=r"kgfed\.engine\.kg\.default_max_age moved to kgfed\.engine\.kg\.facade"):
        from kgfed.engine.kg import default_max_age
    assert default_max_age is facade.default_max_age
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # KG stays where it was: no warning
        from kgfed.engine.kg import KG
    assert KG is facade.KG
    with pytest.raises(ImportError):
        from kgfed.engine.kg import NoSuchName  # noqa: F401


def test_new_paths_and_unknown_old_ones_do_not_involve_the_shims(monkeypatch):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for new in sorted(set(MOVES.values())):
            importlib.import_module(new)
    assert not [w for w in caught if "moved to" in str(w.message)]
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("kgfed.engine.no_such_module")


def test_a_user_script_sees_the_warning_and_can_make_it_an_error(tmp_path):
    """Python shows a DeprecationWarning raised in __main__ by default: a user's script hears of it."""
    script = tmp_path / "user.py"
    script.write_text("from kgfed.engine.sync import SyncKG\nprint(SyncKG.__module__)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "kgfed.engine.kg.sync"
    assert f"{script}:1: DeprecationWarning: kgfed.engine.sync moved to kgfed.engine.kg.sync" in done.stderr
    strict = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", str(script)], capture_output=True,
                            text=True, timeout=120)
    assert strict.returncode == 1 and "DeprecationWarning: kgfed.engine.sync moved" in strict.stderr


def test_shims_go_in_the_release_they_promise():
    """At REMOVED_IN the shims must be gone: MOVED (engine/__init__.py), _MOVED_NAMES (kg), _MOVED_TO_APP (cli), this file."""
    def parts(version: str) -> tuple[int, ...]:
        return tuple(int(p) for p in version.split(".")[:3])

    assert parts(__version__) < parts(REMOVED_IN), "remove the 0.1.0 import shims (kgfed.engine.MOVED) in this release"
    assert parts(REMOVED_IN) == (parts(__version__)[0], parts(__version__)[1] + 1, 0)


def test_the_version_is_written_once_and_read_everywhere():
    """pyproject.toml reads `kgfed.engine.__version__`; the installed metadata and `kgfed --version` agree."""
    import tomllib
    from importlib.metadata import version
    from pathlib import Path

    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert "version" in pyproject["project"]["dynamic"] and "version" not in pyproject["project"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "kgfed.engine.__version__"}
    assert __version__ == "0.2.0"
    assert version("kgfed") == __version__, "reinstall (make test does): the installed metadata is older than the source"
    done = subprocess.run([sys.executable, "-m", "kgfed.engine.cli", "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == f"kgfed {__version__}"


def test_names_of_the_old_cli_module_resolve_with_a_warning():
    """`kgfed.engine.cli` was one module in 0.1.0 (now the package's `app`); `main` stays where it was."""
    from kgfed.engine.cli import app

    with pytest.warns(DeprecationWarning, match=r"kgfed\.engine\.cli\.build_parser moved to kgfed\.engine\.cli\.app\.build_parser"):
        from kgfed.engine.cli import build_parser
    assert build_parser is app.build_parser
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from kgfed.engine.cli import main
        from kgfed.engine.cli import run  # a submodule, not a moved name
    assert main is app.main and run.__name__ == "kgfed.engine.cli.run"
    with pytest.raises(ImportError):
        from kgfed.engine.cli import no_such_name  # noqa: F401
