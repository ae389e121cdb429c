"""Method parameters: one frozen dataclass per method, its fields typed, bounded and aliased.

Every reasoning method declares its parameters once, as a frozen dataclass derived from `MethodParams`,
and names it `Method.Params`:

    @dataclass(frozen=True)
    class ToGParams(MethodParams):
        ALIASES: ClassVar[Mapping[str, str]] = {}           # e.g. {"depth": "max_iter"}: --depth, the paper's name
        width: int = param(3, low=1, help="beam width W")
        pruning: str = param("llm", choices=("llm", "sbert", "bm25"))
        relation_width: int | None = None

The field's annotation is the type a given value is cast to (strings from the command line included:
"3" → 3, "false" → False, "a, b" → ("a", "b")); `X | None` also accepts None; a `Literal[...]` accepts its
values only; `Any` or a class other than
bool/int/float/str/tuple/dict takes the value as given. `param()` adds what a type cannot say: the least
number accepted (`low`, 0 unless given; None: any), the accepted `choices`, a help line. `ALIASES` maps the
CLI's shared names (`--width`, `--depth`) to the paper's.

`MethodParams.resolve(given, method=name)` renames aliases, refuses unknown names (naming every accepted
one), casts and checks each value, and fills in the defaults: every refusal is one line of `KgfedError`.
The instance is what `Method.params` holds, so method code reads `self.params.width`, typed. `describe()`
lists the fields for the CLI (`--param help`) and the docs.

The dict-like reads of the old scheme (`params["width"]`, `params.get("width")`) were removed in 0.3.0.
"""
from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeVar, Union

from ...sparql.errors import KgfedError

P = TypeVar("P", bound="MethodParams")

_TRUE, _FALSE = frozenset({"1", "true", "yes", "on"}), frozenset({"0", "false", "no", "off"})
_KEY = "kgfed"  # the field-metadata key of a parameter's `Bounds`
_MISSING: Any = dataclasses.MISSING
_SPECS: dict[type, dict[str, Spec]] = {}  # per MethodParams class, filled on first use


@dataclass(frozen=True)
class Bounds:
    """What a field's type cannot say: the least number accepted (None: any), the accepted values, a help line.

    `kind`/`none` override what the annotation gives (used by the old `Param` declarations)."""

    low: float | None = 0
    choices: tuple[Any, ...] = ()
    help: str = ""
    kind: type | None = None
    none: bool | None = None


def param(default: Any = _MISSING, *, low: float | None = 0, choices: tuple[Any, ...] = (), help: str = "",
          factory: Any = _MISSING) -> Any:
    """A parameter field: its default (or a `factory` for a mutable one), bounds and help line."""
    meta = {_KEY: Bounds(low, tuple(choices), help)}
    if factory is not _MISSING:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


@dataclass(frozen=True)
class Spec:
    """One parameter as resolved from its field: name, cast type, default, whether None is accepted, bounds."""

    name: str
    kind: type
    default: Any
    none: bool
    bounds: Bounds
    annotation: str

    def cast(self, method: str, value: Any) -> Any:
        """`value` as this parameter's type, or a one-line KgfedError naming the parameter and what it takes."""
        return cast_value(method, self.name, value, kind=self.kind, none=self.none, low=self.bounds.low,
                          choices=self.bounds.choices)


def cast_value(method: str, key: str, value: Any, *, kind: type, none: bool, low: float | None,
               choices: tuple[Any, ...]) -> Any:
    """`value` cast to `kind` and checked against `low`/`choices` (None passes when `none`); else a one-line KgfedError."""
    if value is None and none:
        return None
    try:
        value = _cast(kind, value)
    except (TypeError, ValueError):
        raise KgfedError(f"invalid parameter {key}={value!r} for {method}: expected {kind.__name__}") from None
    if low is not None and kind in (int, float) and value < low:
        raise KgfedError(f"invalid parameter {key}={value!r} for {method}: expected a value ≥ {low:g}")
    if choices and value not in choices:
        raise KgfedError(f"invalid parameter {key}={value!r} for {method}: use one of {', '.join(map(str, choices))}")
    return value


def _cast(kind: type, value: Any) -> Any:
    if kind is bool:
        if isinstance(value, bool) or value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise ValueError(value)
    if kind in (int, float):
        if isinstance(value, bool):
            raise TypeError(value)
        if kind is int and isinstance(value, float):
            if not value.is_integer():
                raise ValueError(value)
            return int(value)
        return kind(value.strip() if isinstance(value, str) else value)
    if kind is str:
        if not isinstance(value, str):
            raise TypeError(value)
        return value
    if kind is tuple:
        if isinstance(value, str):
            return tuple(v.strip() for v in value.split(",") if v.strip())
        if not isinstance(value, (list, tuple)):
            raise TypeError(value)
        return tuple(value)
    if kind is dict:
        if not isinstance(value, Mapping):
            raise TypeError(value)
        return dict(value)
    return value  # any other kind (a provider object): as given


def _kind(annotation: Any) -> tuple[type, bool, tuple[Any, ...]]:
    """(the type a value is cast to, whether None is accepted, a `Literal`'s values) of a resolved annotation."""
    none = False
    origin = typing.get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        none = len(args) < len(typing.get_args(annotation))
        annotation = args[0] if len(args) == 1 else object
    origin = typing.get_origin(annotation) or annotation
    if origin is Literal:
        values = typing.get_args(annotation)
        return type(values[0]), none, values
    if origin is Any or not isinstance(origin, type):
        return object, none, ()
    if issubclass(origin, Mapping):
        return dict, none, ()
    return origin, none, ()


@dataclass(frozen=True)
class MethodParams:
    """The parameters of a method (a subclass per method adds the fields); an instance is `Method.params`."""

    ALIASES: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def specs(cls) -> dict[str, Spec]:
        """Every parameter of this class by name, in declaration order (computed once per class)."""
        cached = _SPECS.get(cls)
        if cached is None:
            hints = typing.get_type_hints(cls)
            cached = {}
            for f in dataclasses.fields(cls):
                bounds = f.metadata.get(_KEY) or Bounds()
                kind, none, values = _kind(hints[f.name])
                if values and not bounds.choices:  # a Literal's values are its choices
                    bounds = dataclasses.replace(bounds, choices=values)
                default = f.default if f.default is not _MISSING else \
                    f.default_factory() if callable(f.default_factory) else None
                if bounds.kind is not None:
                    kind = bounds.kind
                if bounds.none is not None:
                    none = bounds.none
                text = kind.__name__ + (" | None" if none else "") if values else _annotation_text(hints[f.name])
                cached[f.name] = Spec(f.name, kind, default, none or default is None, bounds, text)
            _SPECS[cls] = cached
        return cached

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The parameter names, in declaration order."""
        return tuple(cls.specs())

    @classmethod
    def accepted(cls) -> list[str]:
        """Every name a caller may give: the parameters and their aliases, sorted."""
        return sorted(set(cls.specs()) | set(cls.ALIASES))

    @classmethod
    def resolve(cls: type[P], given: Mapping[str, Any], *, method: str = "method") -> P:
        """An instance from `given` (aliases renamed, values cast and checked) over the defaults.

        An unknown name, an alias and its target given different values, or a value of the wrong type or out
        of bounds is a one-line KgfedError naming what is accepted."""
        named_values: dict[str, Any] = {}
        named: dict[str, str] = {}  # target -> the name it was given as
        for key, value in given.items():
            target = cls.ALIASES.get(key, key)
            if target in named_values and named_values[target] != value:
                raise KgfedError(f"{named[target]}={named_values[target]!r} and {key}={value!r} disagree for {method} "
                                 f"({key if key != target else named[target]} means {target}): give one of them")
            named_values[target], named[target] = value, key
        specs = cls.specs()
        unknown = sorted(set(named_values) - set(specs))
        if unknown:
            raise KgfedError(f"unknown {method} parameter(s) {', '.join(unknown)}: use some of "
                             f"{', '.join(cls.accepted()) or '(none)'}")
        return cls(**{key: specs[key].cast(method, value) for key, value in named_values.items()})

    def as_dict(self) -> dict[str, Any]:
        """{name: value} of every parameter (values as held, not copied: a provider object stays itself)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def describe(cls) -> list[dict[str, Any]]:
        """One row per parameter for listings and docs: name, type, default, bounds, choices, aliases, help."""
        aliases: dict[str, list[str]] = {}
        for alias, target in cls.ALIASES.items():
            aliases.setdefault(target, []).append(alias)
        rows = []
        for spec in cls.specs().values():
            numeric = spec.kind in (int, float)
            rows.append({"name": spec.name, "type": spec.annotation, "default": spec.default,
                         "low": spec.bounds.low if numeric else None, "choices": spec.bounds.choices,
                         "aliases": aliases.get(spec.name, []), "help": spec.bounds.help})
        return rows


def _annotation_text(annotation: Any) -> str:
    """`int`, `int | None`, `tuple[str, ...]`, `WebSearch | None`: an annotation as a reader writes it."""
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__name__
    return re.sub(r"(?:[A-Za-z_]\w*\.)+([A-Za-z_]\w*)", r"\1", str(annotation)).replace("NoneType", "None")


def shown(value: Any) -> str:
    """A default as `--param KEY=VALUE` reads it (JSON), floats to 4 significant digits: `null`, `true`, `[0.3333, 0.5]`."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        return repr(value) if len(repr(value)) <= 6 else f"{value:.4g}"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(shown(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {shown(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (int, str)):
        return json.dumps(value)
    return repr(value)


DOCS_BLOCK = re.compile(r"<!-- params: (\S+) .*?-->\n.*?<!-- /params -->", re.S)


def markdown_table(method: str) -> str:
    """The parameter table of registry method `method` for docs/methods/*.md, read from its `Params`."""
    from . import get_method

    cls = get_method(method)
    lines = [f"<!-- params: {method} (generated from {cls.Params.__name__} by `python -m kgfed.engine.methods.params "
             "docs/methods/*.md`: edit the dataclass, not this table) -->",
             "| parameter | type | default | accepts | meaning |", "|---|---|---|---|---|"]
    for row in cls.Params.describe():
        names = f"`{row['name']}`" + "".join(f" (`--{a}`)" for a in row["aliases"])
        if row["name"] in ("width", "depth") and not row["aliases"]:
            names += f" (`--{row['name']}`)"
        accepts = (" \\| ".join(f"`{c}`" for c in row["choices"]) if row["choices"]
                   else f"≥ {row['low']:g}" if row["low"] is not None else "")
        meaning = row["help"].replace("|", "\\|")
        lines.append(f"| {names} | `{row['type']}` | `{shown(row['default'])}` | {accepts} | {meaning} |")
    return "\n".join(lines + ["<!-- /params -->"])


def sync_docs(text: str) -> str:
    """`text` with every `<!-- params: NAME … -->` … `<!-- /params -->` block regenerated."""
    return DOCS_BLOCK.sub(lambda m: markdown_table(m.group(1)), text)


def main(paths: list[str]) -> int:
    """Regenerate the parameter tables in the given Markdown files; prints the ones that changed."""
    from pathlib import Path

    for path in paths:
        file = Path(path)
        old = file.read_text(encoding="utf-8")
        new = sync_docs(old)
        if new != old:
            file.write_text(new, encoding="utf-8")
            print(f"updated {path}")
    return 0


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
