"""A package's front door, imported on first use (PEP 562): `__getattr__, __dir__ = exports(__name__, TABLE)`.

`TABLE` maps each public name to the module (relative to the package) it lives in. Importing the package loads
none of them; the first `package.Name` (or `from package import Name`) imports that module and keeps the
object in the package's namespace, so later reads cost nothing. The package lists the same names in
`__all__`, and imports them under `if TYPE_CHECKING:` so type checkers and linters see them.
"""
from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["exports"]


def exports(package: str, table: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package` for the names of `table` (name -> module)."""

    def __getattr__(name: str) -> Any:
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(table[name], package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *table})

    return __getattr__, __dir__
