"""`--llm gold`: a gold-guided stand-in for an LLM, for ceilings, regression tests and cost counts.

It is NOT a model. It reads the gold of the run's question file and nothing else: the gold answers
(names, aliases and ids), the relations of the gold query (CWQ's `sparql`; the federation set's
`freebase_relation`/`wikidata_property`) and the entities the gold query binds (it is run once per
question with every variable projected, rewritten for standard engines by `sparql.rewrite`, outside
the question's cost counter), with the KG labels of those ids and relations. With that it answers
every prompt kind of the six methods (`toolbox.prompts`) in exactly the format the prompt asks for:

- selection and scoring (ToG relations and entities, PoG/HydraRAG paths and edges, INSES triplets,
  PRoH entities, directions and paths): what lies on the gold query scores highest (a gold relation,
  a compound `a|b` by its share of gold legs, an entity the gold query binds, a path by its gold
  relations and entities, minus its other relations; a path showing a gold answer first);
- sufficiency and answers (ToG/PoG/ToG-2 `{Yes}`/`{No}`, INSES `determination`, PRoH `answers`,
  final answers): "sufficient" and a named answer only when a gold answer (name, alias or KG label
  of an answer id, matched case-insensitively between word boundaries) is in the evidence the prompt
  shows (its triplets, paths, passages or selected facts, never the few-shot examples), the name as
  the evidence writes it; else `{No}` and the answer `Unknown`;
- planning and analysis, derived from the gold and never naming a gold answer: PoG's question
  analysis gives a thinking indicator `"Topic" - relation words - entity - … - answer(entity)` per
  topic along the gold query (a nameless bound node, a CVT, joins its two relations into one step)
  and one split question per topic; HydraRAG's source selection takes every source offered, its
  refinement repeats the question with the same indicator; the LLM-supplement prediction names the
  named entities the gold query binds between topics and answers; INSES's router says multi-hop when
  the gold query has 3 or more relations, its entity extraction names the topic entities; PRoH's
  plan is one sub-question, the question itself, and its refinement changes nothing.

Which question a prompt belongs to: every prompt of the six methods contains the question text; the
stand-in finds the longest question of the file contained in the prompt, exactly, else after
normalising both (case folded, punctuation dropped, whitespace collapsed). A prompt naming no
question of the file, or of a kind it does not know, is a one-line `LLMError`.

Costs are counted as for any provider (`LLM.complete`): one call each, tokens estimated at four
characters a token.

In a tool conversation (`LLM.chat`: the `agent` method) it calls the profile's tools along the gold query
and names an answer only once a tool result showed it (`gold_agent`).

The stand-in is three modules (and `gold_agent` for tool conversations): this one (`GoldLLM`, the provider: which question a prompt is about,
the gold query run once per question, the costs), `gold_reader` (`Gold`: what it knows of one
question and how evidence is matched) and `gold_replies` (`KINDS`: one replier per prompt kind).
Their public names are importable from here as before.
"""
from __future__ import annotations

import asyncio
import contextvars
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ...sparql.dialects import dialect_of
from ...sparql.errors import KgfedError, LLMError
from .gold_reader import Gold, normalise, relation_words
from .gold_replies import KINDS, MAX_SELECTED, UNKNOWN, _first_words, _kind, kind_of
from .llm import LLM, Completion
from .llm_base import Message

__all__ = ["CHARS_PER_TOKEN", "KINDS", "MAX_SELECTED", "UNKNOWN", "Gold", "GoldLLM", "gold_path", "kind_of",
           "normalise", "question_loader", "relation_words", "tokens"]

# How `gold:FILE` is read: the harness sets it to `harness.datasets.load_dataset` (toolbox cannot import the harness).
question_loader: Callable[[str], list[Any]] | None = None
CHARS_PER_TOKEN = 4


def tokens(text: str) -> int:
    """The stand-in's token estimate: one token per four characters (at least one for a non-empty text)."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


# -- the stand-in ---------------------------------------------------------------------------------------------
class GoldLLM(LLM):
    """The gold-guided stand-in (`--llm gold`): replies from the question file's gold; see the module docstring."""

    name = "gold"

    def __init__(self, questions: Iterable[Any], *, source: str = "the question file"):
        super().__init__("gold-stand-in")
        self.golds: list[Gold] = [Gold.of(q) for q in questions]
        if not any(g.has_gold for g in self.golds):
            raise LLMError(f"{source} has no gold answers: --llm gold needs a question file with answers "
                           "(CWQ, WebQSP, the federation set ...); use a real LLM or --llm none for plain questions")
        self.by_text: dict[str, Gold] = {}
        self.by_norm: dict[str, Gold] = {}
        for gold in self.golds:
            self.by_text.setdefault(gold.text, gold)
            self.by_norm.setdefault(normalise(gold.text), gold)
        self._texts = sorted(self.by_text, key=len, reverse=True)
        self._norms = sorted(self.by_norm, key=len, reverse=True)
        self.kgs: dict[str, Any] = {}
        # $KGFED_GOLD_TRACE: a JSONL file noting, per call, whether a gold answer was shown and named (bench/gold_report.py)
        self.trace: str | None = os.environ.get("KGFED_GOLD_TRACE") or None
        self._locks: dict[int, asyncio.Lock] = {}

    @classmethod
    def from_file(cls, path: str) -> GoldLLM:
        """The stand-in for the questions of `path` (`gold:PATH`; `kgfed run PATH --llm gold` names the run's file)."""
        if not path:
            raise LLMError("--llm gold needs the run's question file: use kgfed run QUESTIONS --llm gold (or --llm gold:QUESTIONS)")
        if question_loader is None:
            raise LLMError("--llm gold reads a question file through the run harness: use kgfed run QUESTIONS --llm gold")
        return cls(question_loader(path), source=f"question file {path}")

    def bind(self, kgs: Mapping[str, Any]) -> None:
        """The run's KGs: the gold query is run and gold ids are labelled over them (outside any question's costs)."""
        self.kgs = dict(kgs)

    # -- which question --
    def gold_for(self, prompt: str) -> Gold:
        """The gold of the question the prompt is about (longest contained question text, exact then normalised)."""
        for text in self._texts:
            if text and text in prompt:
                return self.by_text[text]
        folded = normalise(prompt)
        for text in self._norms:
            if text and text in folded:
                return self.by_norm[text]
        raise LLMError(f"--llm gold: the prompt ({_first_words(prompt)}) names none of the {len(self.golds)} questions "
                       "of the question file: run the stand-in over the same file as the run (kgfed run FILE --llm gold)")

    async def resolve(self, gold: Gold) -> Gold:
        """Run the gold query (every variable projected) and label the gold ids, once per question."""
        if gold.resolved:
            return gold
        lock = self._locks.setdefault(id(gold), asyncio.Lock())
        async with lock:
            if not gold.resolved:
                # a fresh context: the gold's own queries are charged to no question
                await asyncio.create_task(self._resolve(gold), context=contextvars.Context())
        return gold

    async def _resolve(self, gold: Gold) -> None:
        try:
            if gold.sparql:
                await self._run_gold_query(gold)
            await self._label(gold)
        except KgfedError:
            pass  # the stand-in then knows the answers and relation ids only
        gold.finish()

    async def _run_gold_query(self, gold: Gold) -> None:
        from ...sparql.rewrite import to_standard_sparql

        kg = next((kg for kg in self.kgs.values() if any(kg.dialect is dialect_of(i) for i in gold.answer_ids + list(gold.topics))), None)
        if kg is None:
            return
        query = re.sub(r"SELECT\s+(DISTINCT\s+)?(\?\w+\s*)+", "SELECT DISTINCT * ", gold.sparql or "", count=1, flags=re.I)
        try:
            result = await kg.select(to_standard_sparql(query))
        except KgfedError:
            result = await kg.select(query)
        for row in result.rows:
            for var, term in row.items():
                short = kg.dialect.short(term.value) if term.is_iri else None
                if short:
                    gold.bound.setdefault(var, set()).add(short)

    async def _label(self, gold: Gold) -> None:
        ids = set(gold.answer_ids) | {i for ids in gold.bound.values() for i in ids}
        for kg in self.kgs.values():
            mine = sorted(i for i in ids if kg.dialect is dialect_of(i))
            # opaque relation ids (Wikidata P-ids) are shown by their labels: those are what prompts hold
            relations = [r for r in gold.relations if kg.dialect.relation_labels and re.fullmatch(r"P\d+", r)]
            if not mine and not relations:
                continue
            try:
                found = await kg.labels(mine + relations)
            except KgfedError:
                continue
            for ident, label in found.items():
                if label is not None and label.label:
                    gold.labels.setdefault(ident, label.label)

    # -- the provider call --
    async def _complete(self, prompt: str, *, temperature: float, max_tokens: int, system: str | None, **_: Any) -> Completion:
        prefix, kind, reply = _kind(prompt)
        gold = await self.resolve(self.gold_for(prompt))
        text = reply(gold, prompt)
        if self.trace is not None:
            self._note(gold, kind, prompt[len(prefix):], text)
        return Completion(text, tokens(prompt) + tokens(system or ""), tokens(text))

    async def _chat(self, messages: list[Message], *, tools: list[dict[str, Any]], temperature: float, max_tokens: int,
                    stop: list[str] | None = None) -> Completion:
        """A turn of a tool conversation (the `agent` method): calls along the gold query, an answer only once a
        tool result showed it (`gold_agent`). Tokens as for a prompt: the whole conversation and the tools in."""
        from .gold_agent import next_calls

        opening = next((m.content for m in messages if m.role == "user"), "")
        gold = await self.resolve(self.gold_for(opening))
        text, calls = next_calls(gold, messages, tools, [kg.dialect for kg in self.kgs.values()])
        sent = sum(tokens(m.content) + sum(tokens(c.arguments) + tokens(c.name) for c in m.tool_calls) for m in messages)
        shown = sum(tokens(json.dumps({k: t[k] for k in ("name", "description", "parameters") if k in t})) for t in tools)
        written = tokens(text) + sum(tokens(c.name) + tokens(c.arguments) for c in calls)
        if self.trace is not None:
            self._note(gold, "agent", "\n".join(m.content for m in messages if m.role == "tool"), text)
        return Completion(text, sent + shown, written, tool_calls=calls)

    def _note(self, gold: Gold, kind: str, case: str, reply: str) -> None:
        """One line of the trace (`$KGFED_GOLD_TRACE`): did the prompt show a gold answer, did the reply name one."""
        if self.trace is None:
            return
        shown = gold.answer_in(case.replace(gold.text, " "), prose=True) is not None
        named = gold.answer_in(reply.replace(gold.text, " "), prose=True) is not None
        with open(self.trace, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"id": gold.id, "kind": kind, "shown": shown, "named": named}) + "\n")


def gold_path(spec: str) -> str | None:
    """The question file of a `gold:PATH` spec (None for any other spec)."""
    kind, sep, rest = spec.strip().partition(":")
    return rest if kind.lower() == "gold" and sep and rest else None

