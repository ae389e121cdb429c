"""The tool interface of the `agent` method: tools, profiles (named tool sets) and their registry.

A **tool** is what the model may call: a name, a description, its parameters as a JSON schema (the
`parameters` object of OpenAI's function schema; Anthropic's `input_schema` is the same object) and an
async `run(args, ctx) -> str` whose text the model reads. Arguments are checked against the schema
before `run` sees them (`check_arguments`), so a tool body may trust their types; anything else it
refuses (an invalid id, an unknown KG) it raises as a `KgfedError`: the agent loop answers the model
with that one line as an error result, counts it (`tool_errors`) and goes on, it never ends the run.

A **profile** (`ToolProfile`) is a tool set with its system prompt and its `answer` tool: `--param
tools=NAME` picks one. Every tool reaches the KGs through the `ToolContext`, i.e. through kgfed's `KG`
facade (batched, cached, validated ids, partial answers flagged) and, for raw SPARQL, through
`sparql.guard` (read-only, no SERVICE, row cap) under the KG's query bounds.

How to add a profile (one module, one registry line):

    # engine/agent/profiles/mine.py
    from ..tools import Tool, ToolContext, ToolProfile, answer_tool

    async def _lookup(args: dict, ctx: ToolContext) -> str:
        kg = ctx.kg_for(args["entity"])                      # the KG whose dialect takes the id (or a one-line error)
        found = await kg.relations(args["entity"])           # every KG call through the facade
        return "\\n".join(f"{r.direction} {r.relation}" for r in found) or "no relations"

    class MineProfile(ToolProfile):
        name = "mine"
        source = "Paper, year, https://github.com/owner/repo (file:line of the tool definitions)"
        system = "You answer questions over a knowledge graph. ... Call answer(...) when done."
        dialects = ("freebase", "wikidata")                  # where it applies; others are refused in one line

        def tools(self) -> list[Tool]:
            return [Tool("lookup", "Relations of an entity.", {"type": "object", "properties": {
                        "entity": {"type": "string", "description": "an entity id"}}, "required": ["entity"]},
                         _lookup),
                    answer_tool()]

    # engine/agent/tools.py: PROFILES["mine"] = ".profiles.mine:MineProfile"
    # (another package: an entry point `mine = "pkg.module:MineProfile"` in the group `kgfed.tools`)

A tool that shows one hop's far ends gets a `hint=hop_hint({...})` so that `--llm gold` can drive the
profile (HINTS below); `answer_tool()` carries its own.

`ToolProfile.opening(question, ctx)` writes the first user message (the question and its topic entities
by default); `ToolProfile.final(args, ctx)` turns the answer tool's arguments into the answer (names, and
the ids they came from when the model named ids or names it was shown). The schema subset a tool may use:
`type` (object, string, integer, number, boolean, array), `properties`, `required`, `enum`, `items`,
`minimum`, `maximum`, `maxLength` (20,000 by default), `maxItems` (200 by default), `description`,
`additionalProperties` (false by default for objects).

HINTS. `--llm gold` (the gold-guided stand-in, `toolbox.gold_llm`) drives any profile along the gold query
by a JSON hint on the tools it needs (`Tool.hint`, sent as `x-kgfed` beside the declaration; providers
never send it to a model): a tool that shows the far ends of one hop says
`{"hop": {"directions": ["out", "in"], "arguments": {"entity": "{entity}", "relation": "{relation}",
"direction": "{direction}"}, "words": {"out": "out", "in": "in"}, "compound": true}}` (the arguments
as a template: `{entity}`, `{relation}`, `{direction}` (through `words`) are filled in, in strings and in
lists of strings; `compound`: the tool takes a Freebase `r1|r2` across a CVT, else the stand-in steps
through the CVT), and the answer tool says `{"answer": "answers"}` (the argument holding the list of
names). The stand-in reads entity ids (m.0abc, g.1xyz, Q42) anywhere in the tool results to follow the
gold query, and names an answer only when a tool result shows it.
"""
from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...sparql.errors import InvalidIdentifier, KgfedError
from ...sparql.registry import Registry
from ..kg.facade import KG
from ..kg.model import Edge

__all__ = ["PROFILES", "TOOL_PROFILES", "Tool", "ToolContext", "ToolError", "ToolProfile", "answer_tool", "check_arguments",
           "get_profile", "hop_hint"]

# profile name -> "module:Class" (relative to this package), imported on first use like methods.REGISTRY
PROFILES: dict[str, str] = {
    "kgfed": ".profiles.kgfed:KgfedProfile",
    "sog": ".profiles.sog:SogProfile",  # Search-on-Graph's search (docs/agent-tools.md)
    "kg-r1": ".profiles.kg_r1:KgR1Profile",  # KG-R1's retrieval actions
    "graphwalker": ".profiles.graphwalker:GraphWalkerProfile",  # GraphWalker's get_relations/get_triples (Freebase)
    "wmde": ".profiles.wmde:WmdeProfile",  # Wikimedia Deutschland's Wikidata MCP tools (Wikidata)
}
MAX_RESULT_CHARS = 6000  # a tool result longer than this is cut (with a note) before the model reads it
MAX_STRING = 20_000  # a string argument longer than this is refused (a schema's `maxLength` sets its own)
MAX_ITEMS = 200  # a list argument longer than this is refused (a schema's `maxItems` sets its own)


class ToolError(KgfedError):
    """A tool call the loop answers with an error result: bad arguments, unknown tool, invalid id."""


# every profile: another package adds one with an entry point in the group `kgfed.tools` (NAME = "pkg.mod:Class")
TOOL_PROFILES: Registry[type[ToolProfile]] = Registry("tool profile", "kgfed.tools", PROFILES, package=__package__,
                                                      hint=" (--param tools=NAME)")


def get_profile(name: str) -> type[ToolProfile]:
    """The profile class called `name` (a one-line error listing the known ones)."""
    return TOOL_PROFILES.get(name)


ToolFunction = Callable[[dict[str, Any], "ToolContext"], Awaitable[str]]


@dataclass(frozen=True)
class Tool:
    """One tool: name, description, JSON-schema `parameters` and the async body `run(args, ctx) -> text`."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    run: ToolFunction
    hint: Mapping[str, Any] | None = None  # how `--llm gold` calls it (HINTS in the module docstring); never sent to a model

    def spec(self) -> dict[str, Any]:
        """The provider-neutral declaration {name, description, parameters} (providers wrap it in their own shape,
        sending only those three), plus the stand-in's `x-kgfed` hint when the tool has one."""
        spec = {"name": self.name, "description": self.description, "parameters": dict(self.parameters)}
        if self.hint:
            spec["x-kgfed"] = dict(self.hint)
        return spec

    async def call(self, args: Any, ctx: ToolContext) -> str:
        """`run` on arguments checked against the schema; a refusal is a `ToolError` (one line)."""
        checked = check_arguments(self.parameters, args, self.name)
        try:
            text = await self.run(checked, ctx)
        except ToolError:
            raise
        except KgfedError as exc:
            raise ToolError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
        return text if len(text) <= MAX_RESULT_CHARS else text[:MAX_RESULT_CHARS] + "\n(cut here: ask for less)"


# -- argument checking (the schema subset of the module docstring) -----------------------------------------
_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
                                       "array": (list,), "object": (dict,)}


def check_arguments(schema: Mapping[str, Any], args: Any, tool: str) -> dict[str, Any]:
    """`args` (a JSON object) checked against the tool's `parameters` schema, or a one-line `ToolError`."""
    if not isinstance(args, dict):
        raise ToolError(f"{tool}: arguments must be a JSON object, got {type(args).__name__}")
    _check(schema, args, f"{tool}")
    return args


def _check(schema: Mapping[str, Any], value: Any, where: str) -> None:
    kind = schema.get("type")
    if kind is not None:
        allowed = _TYPES.get(kind, ())
        if not isinstance(value, allowed) or (kind in ("integer", "number") and isinstance(value, bool)):
            raise ToolError(f"{where}: expected {kind}, got {_json_type(value)}")
    if "enum" in schema and value not in schema["enum"]:
        raise ToolError(f"{where}: {str(value)[:40]!r} is not one of {', '.join(map(str, schema['enum']))}")
    limit = schema.get("maxLength", MAX_STRING) if isinstance(value, str) else schema.get("maxItems", MAX_ITEMS)
    if isinstance(value, (str, list)) and len(value) > limit:
        raise ToolError(f"{where}: {len(value)} {'characters' if isinstance(value, str) else 'items'}, at most {limit}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            raise ToolError(f"{where}: {value} is below the minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            raise ToolError(f"{where}: {value} is above the maximum {schema['maximum']}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            _check(schema["items"], item, f"{where}[{i}]")
    if isinstance(value, dict) and kind == "object":
        _check_object(schema, value, where)


def _check_object(schema: Mapping[str, Any], value: dict, where: str) -> None:
    properties = schema.get("properties", {})
    missing = [k for k in schema.get("required", ()) if k not in value]
    if missing:
        raise ToolError(f"{where}: missing argument(s) {', '.join(missing)}")
    extra = [k for k in value if k not in properties]
    if extra and not schema.get("additionalProperties", False):
        raise ToolError(f"{where}: unknown argument(s) {', '.join(map(str, extra))}; accepted: {', '.join(properties)}")
    for key, item in value.items():
        if key in properties:
            _check(properties[key], item, f"{where}.{key}")


def _json_type(value: Any) -> str:
    for name, kinds in _TYPES.items():
        if isinstance(value, kinds) and not (name in ("integer", "number") and isinstance(value, bool)):
            return name
    return "null" if value is None else type(value).__name__


# -- the context every tool runs in ------------------------------------------------------------------------
@dataclass
class ToolContext:
    """What a tool reaches: the run's KGs (name -> `KG` facade), the question and its topics, and what was shown.

    `names` holds every id a tool result showed with its name, so the answer tool can name an id the
    model gives; `stats` counts this question's calls (`tool_calls`, `tool_errors`, per tool `tool:NAME`).
    """

    kgs: Mapping[str, KG]
    question: str = ""
    topics: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    stats: Counter[str] = field(default_factory=Counter)
    sparql_rows: int = 100  # the guarded sparql tool's row cap
    edges: list[Edge] = field(default_factory=list)  # the KG edges tool results showed (`walked`), in order

    def kg_named(self, name: str | None) -> KG:
        """The KG called `name`, or the only one; else a one-line error naming the choices."""
        if name in (None, "") and len(self.kgs) == 1:
            return next(iter(self.kgs.values()))
        if not isinstance(name, str) or name not in self.kgs:
            raise ToolError(f"unknown KG {name!r}: give kg as one of {', '.join(self.kgs)}")
        return self.kgs[name]

    def kg_for(self, ident: str, kg: str | None = None) -> KG:
        """The KG whose dialect takes `ident` (the one named by `kg`, when given); else a one-line error."""
        if kg:
            chosen = self.kg_named(kg)
            chosen.check(ident)
            return chosen
        for graph in self.kgs.values():
            try:
                graph.check(ident)
            except InvalidIdentifier:
                continue
            return graph
        forms = "; ".join(f"{n}: {g.dialect.id_example}" for n, g in self.kgs.items())
        raise ToolError(f"invalid id {str(ident)[:60]!r}: no KG of this run takes it ({forms})")

    def walked(self, edge: Edge) -> None:
        """Note that a tool result showed `edge` (the agent's reasoning paths are built from these)."""
        known = edge.subject_label if edge.direction == "out" else edge.object_label
        if not known and self.names.get(edge.origin):
            edge = edge.with_origin_label(self.names[edge.origin])
        self.edges.append(edge)
        self.saw(edge.entity, edge.label)

    def paths_to(self, ids: list[str], limit: int = 7) -> list[list[Edge]]:
        """For each answer id, the chain of shown edges that reached it from a topic entity (or from the first
        entity asked about), at most `limit` long: the agent's reasoning paths."""
        reached: dict[str, Edge] = {}
        for edge in self.edges:
            reached.setdefault(edge.entity, edge)
        topics = {i for ids_ in self.topics.values() for i in ids_}
        paths = []
        for ident in ids:
            path: list[Edge] = []
            node = ident
            while node in reached and node not in topics and len(path) < limit:
                edge = reached[node]
                if edge in path:
                    break
                path.append(edge)
                node = edge.origin
            if path:
                paths.append(path[::-1])
        return paths

    def saw(self, ident: str, name: str | None) -> None:
        """Note that a tool result showed `ident` named `name` (the answer tool resolves ids by it)."""
        if name and ident not in self.names:
            self.names[ident] = name

    async def timed(self, call: Awaitable[Any]) -> Any:
        """Await a KG call (its requests' seconds are charged to `kg_seconds` where they are sent: `cache.responses`)."""
        return await call

    async def gather(self, *calls: Awaitable[Any]) -> list[Any]:
        """Several KG calls at once."""
        return await asyncio.gather(*calls)


# -- profiles ----------------------------------------------------------------------------------------------
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answers": {"type": "array", "items": {"type": "string"},
                               "description": "the answer(s): entity ids or names as the tools showed them, best first"}},
    "required": ["answers"],
}


async def _answer_run(args: dict[str, Any], ctx: ToolContext) -> str:
    return "answer recorded"


def answer_tool(name: str = "answer", description: str = "Give the final answer(s) and stop. Name entities as the "
                "tools showed them (an id such as m.0abc or Q42, or its name), best first.",
                parameters: Mapping[str, Any] = ANSWER_SCHEMA, argument: str = "answers") -> Tool:
    """The tool that ends the loop: its arguments become the answer (`ToolProfile.final`; `argument` names the list)."""
    return Tool(name, description, parameters, _answer_run, {"answer": argument})


def hop_hint(arguments: Mapping[str, Any], *, directions: tuple[str, ...] = ("out", "in"),
             words: Mapping[str, str] | None = None, compound: bool = True) -> dict[str, Any]:
    """A tool's `hint` saying it shows the far ends of one hop (see HINTS in the module docstring)."""
    return {"hop": {"directions": list(directions), "arguments": dict(arguments),
                    "words": dict(words or {d: d for d in directions}), "compound": compound}}


class ToolProfile:
    """A named tool set: its tools, system prompt, the answer tool's name, the dialects it applies to.

    Subclasses set `name`, `system`, `source` (the paper or code the interface reproduces) and implement
    `tools()`; see the module docstring for a whole example.
    """

    name: ClassVar[str] = "profile"
    source: ClassVar[str] = ""
    system: ClassVar[str] = ""
    answer_name: ClassVar[str] = "answer"
    dialects: ClassVar[tuple[str, ...]] = ("freebase", "wikidata")

    def __init__(self, kgs: Mapping[str, KG]):
        wrong = [f"{n} ({kg.dialect.name})" for n, kg in kgs.items() if kg.dialect.name not in self.dialects]
        if wrong:
            raise KgfedError(f"tool profile {self.name!r} applies to {', '.join(self.dialects)} KGs, not "
                             f"{', '.join(wrong)}: pick another profile with --param tools=NAME")
        self.kgs = dict(kgs)
        self._tools = {tool.name: tool for tool in self.tools()}

    def tools(self) -> list[Tool]:
        """The profile's tools, the answer tool included."""
        raise NotImplementedError

    def tool(self, name: str) -> Tool:
        """The tool called `name`, or a `ToolError` naming the profile's tools."""
        try:
            return self._tools[name]
        except (KeyError, TypeError):
            raise ToolError(f"unknown tool {str(name)[:40]!r}: call one of {', '.join(self._tools)}") from None

    def specs(self) -> list[dict[str, Any]]:
        """Every tool's provider-neutral declaration (`Tool.spec`)."""
        return [tool.spec() for tool in self._tools.values()]

    def system_prompt(self, ctx: ToolContext) -> str:
        return self.system

    def opening(self, question: str, ctx: ToolContext) -> str:
        """The first user message: the question and its topic entities (id and name, per KG)."""
        topics = [f"{ident} ({name})" if name else ident for ids in ctx.topics.values() for ident, name in ids.items()]
        for ids in ctx.topics.values():
            for ident, name in ids.items():
                ctx.saw(ident, name)
        lines = [f"Question: {question}"]
        if topics:
            lines.append("Topic entities: " + ", ".join(topics))
        return "\n".join(lines)

    def final(self, args: Mapping[str, Any], ctx: ToolContext) -> tuple[list[str], list[str]]:
        """The answer tool's arguments as (names, ids): an id the tools showed is named by its name there."""
        names: list[str] = []
        ids: list[str] = []
        key = (self.tool(self.answer_name).hint or {}).get("answer", "answers")
        for item in args.get(key) or []:
            text = str(item).strip()
            if not text:
                continue
            if text in ctx.names:
                ids.append(text)
                text = ctx.names[text]
            else:
                ids += [i for i, n in ctx.names.items() if n == text]  # the same name on each KG (federation)
            names.append(text)
        return list(dict.fromkeys(names)), list(dict.fromkeys(ids))
