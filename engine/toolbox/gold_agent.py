"""What the `--llm gold` stand-in answers in a tool-calling conversation (`LLM.chat`, the `agent` method).

It walks the gold query with the profile's own tools and names an answer only when a tool result showed one:

- its routes: per topic entity of the question (on a KG of the run), the relation steps of the gold query
  from it to the answer variable (CWQ's `sparql` patterns; the federation set's one relation, out then in),
  each step a relation, a direction and the variable it reaches; two steps through a nameless node (a
  Freebase CVT) are one `r1|r2` step when the hop tool takes compound relations;
- each reply makes, for every route still alive, the calls of its next step: the profile's hop tool (the
  one whose `x-kgfed` hint says it shows one hop's far ends; `engine.agent.tools` HINTS) for each entity of
  the route's frontier (the topic first; then the ids the last results showed that the gold query binds
  to the step's variable, else the first three shown);
- before that, it reads every tool result it has received: when they show gold answers (names, aliases or
  KG labels of answer ids, as `Gold.answers_in` reads KG evidence) it calls the answer tool with them, as
  written there; when every route is walked or dead it calls the answer tool with no answer.

It never reads an answer from the question file into a reply: with the answers' triples gone from the KG,
no result shows one and it answers nothing. Call ids carry the route and step (`g{turn}r{route}s{step}e{i}`),
so the walk is rebuilt from the conversation on every call (the stand-in keeps no state between calls).
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...sparql.dialects import COMPOUND_SEP, dialect_of
from ...sparql.errors import KgfedError
from .gold_reader import Gold, _alternation, _whole
from .llm_base import Message, ToolCall

FRONTIER = 3  # entities followed per step when the gold query binds none of those shown
_ID = re.compile(r"(?<![\w.])(?:[mg]\.[0-9a-z_]+|Q[1-9]\d*)(?![\w])")
_CALL_ID = re.compile(r"^g\d+r(\d+)s(\d+)e(\d+)$")


@dataclass(frozen=True)
class Step:
    relation: str
    direction: str
    var: str  # the gold query term the step reaches (`?x` for the answer)


@dataclass
class Route:
    topic: str
    steps: list[Step]
    frontier: list[str] = field(default_factory=list)
    done: int = 0  # steps already asked


@dataclass(frozen=True)
class HopTool:
    name: str
    arguments: Mapping[str, Any]
    words: Mapping[str, str]
    compound: bool
    names: bool = False  # its results name entities by label, not id (KG-R1, GraphWalker): read them by the gold's labels


def hop_tools(tools: Sequence[Mapping[str, Any]]) -> dict[str, HopTool]:
    """direction -> the tool showing one hop's far ends in that direction (from the tools' `x-kgfed` hints)."""
    found: dict[str, HopTool] = {}
    for tool in tools:
        hop = (tool.get("x-kgfed") or {}).get("hop")
        if not hop:
            continue
        for direction in hop.get("directions", ("out", "in")):
            found.setdefault(direction, HopTool(tool["name"], hop.get("arguments", {}), hop.get("words") or {},
                                                bool(hop.get("compound", True)), bool(hop.get("names", False))))
    return found


def answer_tool(tools: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """(the answer tool's name, the argument holding the answer list)."""
    for tool in tools:
        hint = tool.get("x-kgfed") or {}
        if "answer" in hint:
            return tool["name"], str(hint["answer"])
    return "answer", "answers"


def _fill(template: Any, values: Mapping[str, str]) -> Any:
    if isinstance(template, str):
        return template.format(**values) if "{" in template else template
    if isinstance(template, list):
        return [_fill(t, values) for t in template]
    if isinstance(template, dict):
        return {k: _fill(v, values) for k, v in template.items()}
    return template


# -- the routes --------------------------------------------------------------------------------------------
def routes(gold: Gold, dialects: Sequence[Any], hops: Mapping[str, HopTool]) -> list[Route]:
    """The gold query's routes from the topic entities the run's KGs take (see the module docstring)."""
    topics = [t for t in gold.topics if any(d is dialect_of(t) for d in dialects)]
    out: list[Route] = []
    if gold.patterns:
        for topic in topics:
            steps = _pattern_steps(gold, topic)
            if steps:
                out.append(Route(topic, _merged(gold, steps, hops, dialect_of(topic)), [topic]))
        return out
    for topic in topics:
        dialect = dialect_of(topic)
        if dialect is None:
            continue
        for relation in gold.relations:
            relation = _compound(relation) if dialect.compound_relations else relation
            try:
                dialect.check_relation(relation)
            except KgfedError:  # a relation of the other KG's dialect
                continue
            if COMPOUND_SEP in relation and not all(h.compound for h in hops.values()):
                continue
            out += [Route(topic, [Step(relation, d, "?x")], [topic]) for d in ("out", "in")]
    return out


def _compound(relation: str) -> str:
    """The federation set writes a CVT relation as its two ids joined (a.b.c.d.e.f): kgfed's a.b.c|d.e.f."""
    parts = relation.split(".")
    return ".".join(parts[:3]) + COMPOUND_SEP + ".".join(parts[3:]) if len(parts) == 6 else relation


def _pattern_steps(gold: Gold, topic: str) -> list[Step]:
    adjacency: dict[str, list[tuple[str, str]]] = {}
    for s, rel, o in gold.patterns:
        adjacency.setdefault(s, []).append((rel, o))
        adjacency.setdefault(o, []).append((rel, s))
    route = gold._route(adjacency, f"ns:{topic}", "?x")
    if not route:
        return []
    steps, previous = [], f"ns:{topic}"
    forward = set(gold.patterns)
    for rel, node in route:
        steps.append(Step(rel, "out" if (previous, rel, node) in forward else "in", node))
        previous = node
    return steps


def _merged(gold: Gold, steps: list[Step], hops: Mapping[str, HopTool], dialect: Any) -> list[Step]:
    """Steps through a nameless node (a CVT) joined as one compound step when the hop tool takes `r1|r2`."""
    if dialect is None or not dialect.compound_relations:
        return steps
    out: list[Step] = []
    i = 0
    while i < len(steps):
        step = steps[i]
        nxt = steps[i + 1] if i + 1 < len(steps) else None
        tool = hops.get(step.direction)
        if nxt is not None and nxt.direction == "out" and tool is not None and tool.compound and not gold._named(step.var):
            out.append(Step(f"{step.relation}{COMPOUND_SEP}{nxt.relation}", step.direction, nxt.var))
            i += 2
            continue
        out.append(step)
        i += 1
    return out


# -- the walk, rebuilt from the conversation --------------------------------------------------------------
def _results(messages: Sequence[Message]) -> dict[str, str]:
    return {m.tool_call_id: m.content for m in messages if m.role == "tool" and not m.is_error}


def _replay(gold: Gold, walk: list[Route], messages: Sequence[Message], by_name: frozenset[str] = frozenset()) -> int:
    """Advance the routes over the calls already made; the number of turns taken. The results of a tool in
    `by_name` show entities by name: the ids the gold query binds whose labels they show count as shown."""
    results = _results(messages)
    turns = 0
    for message in messages:
        if message.role != "assistant" or not message.tool_calls:
            continue
        turns += 1
        shown: dict[int, list[str]] = {}
        asked: dict[int, set[str]] = {}
        for call in message.tool_calls:
            m = _CALL_ID.match(call.id)
            if not m:
                continue
            r = int(m.group(1))
            asked.setdefault(r, set()).add(_asked_entity(call))
            text = results.get(call.id, "")
            shown.setdefault(r, []).extend(_ID.findall(text) + (_named_ids(gold, text) if call.name in by_name else []))
        for r, ids in shown.items():
            if r < len(walk):
                _advance(gold, walk[r], [i for i in dict.fromkeys(ids) if i not in asked.get(r, set())])
    return turns


def _named_ids(gold: Gold, text: str) -> list[str]:
    """Ids the gold query binds whose KG label the text shows as a whole element (first shown first)."""
    labels = {gold.labels[i]: i for ids in gold.bound.values() for i in sorted(ids) if gold.labels.get(i)}
    pattern = _alternation(labels)
    if pattern is None:
        return []
    folded = {name.casefold(): ident for name, ident in labels.items()}
    return [folded[m.group(0).casefold()] for line in text.splitlines() for m in pattern.finditer(line)
            if _whole(line, m.start(), m.end()) and m.group(0).casefold() in folded]


def _asked_entity(call: ToolCall) -> str:
    try:
        args = json.loads(call.arguments)
    except ValueError:
        return ""
    found = _ID.findall(json.dumps(args))
    return found[0] if found else ""


def _advance(gold: Gold, route: Route, shown: list[str]) -> None:
    step = route.steps[route.done]
    route.done += 1
    bound = gold.bound.get(step.var.lstrip("?")) if step.var.startswith("?") else None
    if bound:
        chosen = [i for i in shown if i in bound]
    else:
        target = step.var[3:] if step.var.startswith("ns:") else None
        chosen = [target] if target and target in shown else shown[:FRONTIER]
    route.frontier = chosen[:FRONTIER * 2]


def next_calls(gold: Gold, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]],
               dialects: Sequence[Any]) -> tuple[str, tuple[ToolCall, ...]]:
    """The stand-in's reply to a tool conversation: (text, calls) — see the module docstring."""
    answer_name, answer_key = answer_tool(tools)
    shown = _shown_answers(gold, messages)
    if shown:
        args = json.dumps({answer_key: shown}, ensure_ascii=False)
        return f"The tool results show {', '.join(shown)}.", (ToolCall("g_answer", answer_name, args),)
    hops = hop_tools(tools)
    walk = routes(gold, dialects, hops)
    turn = _replay(gold, walk, messages, frozenset(t.name for t in hops.values() if t.names)) + 1
    calls: list[ToolCall] = []
    for r, route in enumerate(walk):
        if route.done >= len(route.steps) or not route.frontier:
            continue
        step = route.steps[route.done]
        tool = hops.get(step.direction)
        if tool is None:
            continue
        for e, entity in enumerate(route.frontier):
            values = {"entity": entity, "relation": step.relation, "direction": tool.words.get(step.direction, step.direction)}
            calls.append(ToolCall(f"g{turn}r{r}s{route.done}e{e}", tool.name,
                                  json.dumps(_fill(tool.arguments, values), ensure_ascii=False)))
    if calls:
        steps = sorted({f"{json.loads(c.arguments).get('relation', c.name)}" for c in calls})
        return f"Following {', '.join(steps)}.", tuple(calls)
    return "No tool result shows an answer.", (ToolCall("g_answer", answer_name, json.dumps({answer_key: []})),)


def _shown_answers(gold: Gold, messages: Sequence[Message]) -> list[str]:
    """Gold answers the tool results show, as written there (first seen first)."""
    found: dict[str, None] = {}
    for message in messages:
        if message.role == "tool" and not message.is_error:
            for name in gold.answers_in(message.content):
                if name.casefold() not in {f.casefold() for f in found}:
                    found[name] = None
    return list(found)
