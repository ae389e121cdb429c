"""One registry per extension point: a name -> object table, open to other packages through entry points.

kgfed has five extension points, each a `Registry` in the module that uses it: methods
(`kgfed.engine.methods.METHODS`, entry-point group `kgfed.methods`), LLM providers
(`kgfed.engine.toolbox.llm.PROVIDERS`, `kgfed.llm`), SPARQL dialects (`kgfed.sparql.dialects.DIALECT_REGISTRY`,
`kgfed.dialects`), cache backends (`kgfed.cache.root.BACKENDS`, `kgfed.cache`) and agent tool profiles
(`kgfed.tools`). An entry is an object or a lazy `"module:object"` reference (a module starting with `.`
is relative to the registry's package), imported on first use so that `kgfed` starts fast.

Adding one is one file and one registration: `REGISTRY.register("name", "my.module:Thing")` in code, or,
from another package (as rdflib's plugins do), one entry point in that package's metadata:

    [project.entry-points."kgfed.methods"]
    mymethod = "mypkg.mymethod:MyMethod"

Entry points are read once, the first time a registry is listed or asked for a name it does not hold
(reading them costs about 40 ms: a run that names only built-in entries never pays it). A name registered
in code wins over an entry point of the same name. An unknown name is a one-line `KgfedError` (or the
registry's own subclass) listing the known ones.
"""
from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from typing import Any, Generic, TypeVar

from .errors import KgfedError

T = TypeVar("T")


class Registry(Generic[T]):
    """Names -> objects (or lazy `"module:object"` references) for one extension point.

    `kind` names the thing in messages ("method", "dialect"); `group` is the entry-point group;
    `entries` the built-in table (kept by reference: a name added to that dict is registered);
    `package` anchors relative references; `error` is the exception class for an unknown name; `hint`
    ends that message (what else is accepted, e.g. "or package.module:Class").
    """

    def __init__(self, kind: str, group: str, entries: MutableMapping[str, Any] | None = None, *,
                 package: str | None = None, error: type[KgfedError] = KgfedError, hint: str = "") -> None:
        self.kind = kind
        self.group = group
        self.entries: MutableMapping[str, Any] = entries if entries is not None else {}
        self.package = package
        self.error = error
        self.hint = hint
        self.found: dict[str, str] = {}  # the entry points' names (kept apart: `entries` stays the built-in table)
        self._loaded: dict[str, T] = {}
        self._scanned = False

    def register(self, name: str, ref: str | T) -> None:
        """Add (or replace) `name`: an object, or a `"module:object"` reference imported on first use."""
        if not name or not isinstance(name, str):
            raise KgfedError(f"a {self.kind} needs a non-empty name, not {name!r}")
        self.entries[name] = ref
        self._loaded.pop(name, None)

    def names(self) -> list[str]:
        """Every known name, the entry points' included, sorted."""
        self._scan()
        return sorted({*self.entries, *self.found})

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __bool__(self) -> bool:
        return True  # a registry is always there: its truth reads no entry points (`choices or {}` in argparse code)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if name not in self.entries:
            self._scan()
        return name in self.entries or name in self.found

    def get(self, name: str) -> T:
        """The object registered as `name`, imported on first use."""
        if name in self._loaded:
            return self._loaded[name]
        if name not in self:
            known = ", ".join(self.names()) or "(none)"
            raise self.error(f"unknown {self.kind} {name!r}: choose one of {known}{self.hint}")
        ref = self.entries[name] if name in self.entries else self.found[name]
        value: T = self.load(ref, name) if isinstance(ref, str) else ref
        self._loaded[name] = value
        return value

    def load(self, ref: str, name: str | None = None) -> Any:
        """Import `"module:attr"` (`attr` may be dotted); a failure is one line naming the reference."""
        module_name, sep, attr = ref.partition(":")
        what = f"{self.kind} {name!r}" if name else f"{self.kind} {ref!r}"
        if not sep or not module_name or not attr:
            raise self.error(f"cannot load {what}: {ref!r} is not a module:object reference (e.g. mypkg.mymod:MyClass)")
        try:
            value: Any = importlib.import_module(module_name, self.package)
            for part in attr.split("."):
                value = getattr(value, part)
        except (ImportError, AttributeError) as exc:
            raise self.error(f"cannot load {what} from {ref!r} ({exc.__class__.__name__}: {exc}): install the package "
                             f"that provides it, or fix the reference") from None
        return value

    def _scan(self) -> None:
        """Add the entry points of `group` (once; names already registered keep their object)."""
        if self._scanned:
            return
        self._scanned = True
        for name, value in entry_points(self.group):
            self.found.setdefault(name, value)


def entry_points(group: str) -> list[tuple[str, str]]:
    """`(name, "module:object")` of every installed entry point in `group`."""
    from importlib.metadata import entry_points as found  # ~30 ms to import: only when a registry is listed

    return [(ep.name, ep.value) for ep in found(group=group)]


def reference(value: str) -> bool:
    """Whether `value` looks like a `package.module:Name` reference rather than a registered name."""
    module_name, sep, attr = value.partition(":")
    return bool(sep) and all(part.isidentifier() for part in module_name.split(".")) and \
        all(part.isidentifier() for part in attr.split("."))


__all__ = ["Registry", "entry_points", "reference"]
