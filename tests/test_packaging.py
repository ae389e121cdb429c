"""The wheel as users install it: PEP 561 `py.typed` markers in the four packages.

The wheel is built for real (`pip wheel --no-deps`) from a copy of the sources in a temp dir, so the test
never writes `build/` or `*.egg-info` into the work tree. About 5 s.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sparql", "cache", "endpoints", "engine")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The file names inside a freshly built kgfed wheel."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    for name in PACKAGES:
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(out), str(src)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (built,) = out.glob("kgfed-*.whl")
    with zipfile.ZipFile(built) as whl:
        return whl.namelist()


def test_the_wheel_marks_each_package_typed(wheel: list[str]) -> None:
    for name in PACKAGES:
        assert f"kgfed/{name}/py.typed" in wheel, name


def test_the_typed_packages_carry_their_code(wheel: list[str]) -> None:
    # the marker is worth something only next to the modules it covers (package-dir mapping included)
    for module in ("kgfed/sparql/guard.py", "kgfed/cache/responses.py", "kgfed/endpoints/client.py",
                   "kgfed/engine/methods/tog.py", "kgfed/engine/data/demo_freebase.nt"):
        assert module in wheel, module
    assert "kgfed/__init__.py" not in wheel  # kgfed is a namespace package
    assert not any(name.startswith(("kgfed/tests/", "tests/")) for name in wheel)
