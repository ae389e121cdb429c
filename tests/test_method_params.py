"""One parameter scheme for every method: a frozen dataclass per method (types, bounds, aliases to each paper's
names), values cast, unknown names refused, the old dict-like and attribute reads deprecated."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest

from kgfed.endpoints.embedded import EmbeddedEndpoint
from kgfed.engine.kg import KG
from kgfed.engine.methods import REGISTRY, get_method
from kgfed.engine.methods.base import Method
from kgfed.engine.methods.params import MethodParams, cast_value, param
from kgfed.engine.toolbox.llm import NoLLM
from kgfed.sparql.dialects import WIKIDATA
from kgfed.sparql.errors import KgfedError


@pytest.fixture
def kgs():
    import pyoxigraph as ox

    from kgfed.engine.data import DEMO_WIKIDATA  # the bundled demo KG

    store = ox.Store()
    store.bulk_load(path=str(DEMO_WIKIDATA), format=ox.RdfFormat.N_TRIPLES)
    return {"wikidata": KG(EmbeddedEndpoint(store=store), WIKIDATA, name="wikidata", cache=None)}


# --width/--depth of `kgfed ask`/`run` and the MCP `ask` tool, as each paper names them
WIDTH_DEPTH = {"tog": ("width", "depth"), "tog2": ("width", "depth"), "pog": ("max_width", "max_depth"),
               "hydra": ("max_width", "max_depth"), "inses": ("width", "max_iter"), "proh": ("beam", "max_depth"),
               "agent": ("calls_per_turn", "turns")}  # the agent: tool calls a reply runs, replies a question gets


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_width_and_depth_reach_each_papers_names(kgs, name):
    method = get_method(name)(kgs, NoLLM(), width=2, depth=4)
    width, depth = WIDTH_DEPTH[name]
    assert (getattr(method.params, width), getattr(method.params, depth)) == (2, 4)
    assert type(method.params) is type(method).Params and dataclasses.is_dataclass(method.params)
    defaults = type(method).Params()  # every declared parameter, defaults filled in
    assert {k: v for k, v in method.params.as_dict().items() if k not in (width, depth)} == \
        {k: v for k, v in defaults.as_dict().items() if k not in (width, depth)}


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_a_misspelt_parameter_is_refused_naming_the_accepted_ones(kgs, name):
    with pytest.raises(KgfedError) as caught:
        get_method(name)(kgs, NoLLM(), widht=5)
    message = str(caught.value)
    assert message.startswith(f"unknown {name} parameter(s) widht: use some of ") and "\n" not in message
    assert "width" in message.split(": use some of ")[1].split(", ")


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_values_from_the_command_line_are_cast_and_checked(kgs, name):
    cls = get_method(name)
    width, _ = WIDTH_DEPTH[name]
    assert getattr(cls.resolve({width: "2"}), width) == 2
    with pytest.raises(KgfedError, match=f"invalid parameter {width}='two' for {name}: expected int"):
        cls.resolve({width: "two"})
    with pytest.raises(KgfedError, match=f"invalid parameter {width}=2.5 for {name}: expected int"):
        cls.resolve({width: 2.5})
    alias, target = next(iter(cls.Params.ALIASES.items()), ("width", "width"))
    if alias != target:  # an alias and its paper name given different values
        with pytest.raises(KgfedError, match=f"{alias}=2 and {target}=3 disagree for {name} \\({alias} means {target}\\)"):
            cls.resolve({alias: 2, target: 3})
        assert getattr(cls.resolve({alias: 2, target: 2}), target) == 2


def test_casts_of_each_kind():
    def cast(default, value, low=0):
        return cast_value("m", "k", value, kind=type(default) if default is not None else int, none=default is None, low=low,
                          choices=())

    assert cast(True, "false") is False and cast(True, 1) is True
    assert cast(0.5, "0.25") == 0.25 and cast(0.5, 1) == 1.0
    assert cast(None, None) is None and cast(None, "7") == 7
    assert cast(("a",), ["a", "b"]) == ("a", "b") and cast(("a",), "a, b") == ("a", "b")
    assert cast(3, -1, low=None) == -1
    with pytest.raises(KgfedError, match="invalid parameter k=-1 for m: expected a value ≥ 0"):
        cast(3, -1)
    with pytest.raises(KgfedError, match="invalid parameter k=True for m: expected int"):
        cast(3, True)
    with pytest.raises(KgfedError, match="invalid parameter k=None for m: expected int"):
        cast(3, None)


def test_string_booleans_are_read_as_meant(kgs):
    tog = get_method("tog")(kgs, NoLLM(), exact_prompts="false", stop_sequences="yes")
    assert (tog.params.exact_prompts, tog.params.stop_sequences) == (False, True)  # bool("false") would have been True


def test_a_method_without_declared_parameters_takes_none(kgs):
    class Bare(Method):
        name = "bare"

        async def _answer(self, question, topics):
            raise AssertionError

    assert Bare(kgs, NoLLM()).params == MethodParams() and MethodParams().as_dict() == {}
    with pytest.raises(KgfedError, match=r"unknown bare parameter\(s\) delay: use some of \(none\)"):
        Bare(kgs, NoLLM(), delay=1)


def test_a_parameter_named_like_a_method_attribute_stays_in_params(kgs):
    hydra = get_method("hydra")(kgs, NoLLM(), select_sources=False)
    assert hydra.params.select_sources is False and callable(hydra.select_sources)


@dataclass(frozen=True)
class NearestParams(MethodParams):
    width: int = param(3, low=1)
    threshold: float = 0.0


class Nearest(Method):
    """The shape docs/ARCHITECTURE.md gives a new method: its Params, the facade, the run's embedder, Result."""

    name = "nearest"
    Params = NearestParams
    params: NearestParams

    async def _answer(self, question, topics):
        from kgfed.engine.methods.base import Result

        name, ids = next((n, i) for n, i in topics.items() if i)
        kg, topic = self.kgs[name], sorted(ids)[0]
        relations = [r for r in await kg.relations(topic, "out") if r.label][: self.params.width]
        edges = [e for r in relations for e in await kg.neighbors(topic, r.relation) if e.label]
        sims = await self.embedder.similarity(question, [f"{e.relation_label} {e.label}" for e in edges])
        best = max(zip(sims, range(len(edges))))
        edge = edges[best[1]] if best[0] >= self.params.threshold else None
        return Result(question, edge.label if edge else "", [edge.entity] if edge else [], [[edge]] if edge else [])


def test_a_new_method_is_one_class_and_runs_through_the_cli(capsys):
    from kgfed.engine.cli import main

    argv = ["ask", "Where was Douglas Adams educated?", "--kg", "wikidata", "--topic", "Q42", "--json",
            "-m", "tests.test_method_params:Nearest", "--width", "50", "--param", "threshold=0.1"]
    assert main(argv) == 0
    import json

    answer = json.loads(capsys.readouterr().out)
    assert answer["answer"] == "University of Cambridge" and answer["answer_ids"] == ["Q35794"]
    assert answer["path_text"] == ["Q42 -[educated at]-> University of Cambridge"]
    assert main(argv[:-1] + ["threshold=high"]) == 2
    assert "invalid parameter threshold='high' for nearest: expected float" in capsys.readouterr().err


# -- the dataclasses themselves ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_each_method_names_a_frozen_dataclass_whose_aliases_reach_its_fields(name):
    cls = get_method(name)
    fields = {f.name for f in dataclasses.fields(cls.Params)}
    assert issubclass(cls.Params, MethodParams) and cls.Params.__dataclass_params__.frozen
    assert set(cls.Params.ALIASES.values()) <= fields and not set(cls.Params.ALIASES) & fields - {"width", "depth"}
    params = cls.Params()
    with pytest.raises(dataclasses.FrozenInstanceError):
        params.max_tokens = 1  # type: ignore[misc]
    rows = {row["name"]: row for row in cls.Params.describe()}
    assert list(rows) == [f.name for f in dataclasses.fields(cls.Params)]
    assert all(rows[target]["aliases"] == [a for a, t in cls.Params.ALIASES.items() if t == target]
               for target in cls.Params.ALIASES.values())


@pytest.mark.parametrize(("name", "given", "message"), [
    ("tog", {"width": 0}, "invalid parameter width=0 for tog: expected a value ≥ 1"),
    ("tog", {"pruning": "tfidf"}, "invalid parameter pruning='tfidf' for tog: use one of llm, sbert, bm25"),
    ("tog2", {"top_k": "0"}, "invalid parameter top_k=0 for tog2: expected a value ≥ 1"),
    ("pog", {"depth": -1}, "invalid parameter max_depth=-1 for pog: expected a value ≥ 1"),
    ("pog", {"strategy": "greedy"}, "invalid parameter strategy='greedy' for pog: use one of fuzzy, fuzzy+precise, "
                                    "fuzzy+branch, fuzzy+branch+precise"),
    ("hydra", {"rho": [1, 2]}, "invalid parameter rho=[1, 2] for hydra: expected dict"),
    ("inses", {"tau_sim": -0.5}, "invalid parameter tau_sim=-0.5 for inses: expected a value ≥ 0"),
    ("proh", {"beam": None}, "invalid parameter beam=None for proh: expected int"),
    ("proh", {"width": 2, "beam": 3}, "width=2 and beam=3 disagree for proh (width means beam): give one of them"),
    ("inses", {"depht": 3}, "unknown inses parameter(s) depht: use some of confidence, depth, hop_width, limit, "
                            "max_iter, max_tokens, max_triples, multi_hop, router, sim_margin, similarity, "
                            "stop_sequences, tau_sim, top_k, width"),
])
def test_bad_values_are_refused_in_one_line(name, given, message):
    with pytest.raises(KgfedError) as caught:
        get_method(name).resolve(given)
    assert str(caught.value) == message


def test_values_are_cast_by_the_fields_annotation():
    pog, hydra = get_method("pog"), get_method("hydra")
    assert pog.resolve({"align": "p646, sbert"}).align == ("p646", "sbert")  # tuple[str, ...] | None
    assert pog.resolve({"align": None}).align is None and pog.resolve({"relation_width": "5"}).relation_width == 5
    assert hydra.resolve({"rho": {"kg": 0.5}}).rho == {"kg": 0.5} and hydra.Params().rho == {"kg": 1.0, "wikipedia": 0.8, "web": 0.7}
    assert hydra.Params().rho is not hydra.Params().rho  # a mutable default is made per instance
    web = object()
    assert hydra.resolve({"web": web}).web is web  # a provider object is taken as given (HydraRAG checks it)
    assert get_method("tog").resolve({"exploration_temperature": "1"}).exploration_temperature == 1.0


def test_no_setattr_in_the_methods():
    from pathlib import Path

    import kgfed.engine.methods as methods

    found = [p.name for p in Path(methods.__file__).parent.glob("*.py") if "setattr" in p.read_text()]
    assert found == []


# -- the old scheme, deprecated in 0.2 and removed in 0.3.0 ----------------------------------------------------
def test_the_old_reads_are_gone_in_0_3(kgs):
    tog = get_method("tog")(kgs, NoLLM(), width=2)
    with pytest.raises(AttributeError, match="'ToG' object has no attribute 'width'"):
        tog.width  # noqa: B018
    with pytest.raises(TypeError):
        tog.params["depth"]  # noqa: B018
    assert not hasattr(tog.params, "get") and not hasattr(get_method("tog"), "PARAMS")
    assert not hasattr(get_method("pog")(kgs, NoLLM(), depth=2), "p")
    assert get_method("pog").Params.ALIASES == {"width": "max_width", "depth": "max_depth"}


def test_a_method_declared_the_old_way_gets_no_params_class(kgs):
    class Old(Method):  # PARAMS/ALIASES on the class: no longer read (declare a Params dataclass)
        name = "old"
        PARAMS = {"hops": 2}

        async def _answer(self, question, topics):
            raise AssertionError

    with pytest.raises(KgfedError, match=r"unknown old parameter\(s\) hops"):
        Old(kgs, NoLLM(), hops=3)


# -- what reads the dataclasses: the CLI and the docs --------------------------------------------------------
def test_param_help_lists_the_methods_parameters_from_its_dataclass(capsys):
    from kgfed.engine.cli import main

    with pytest.raises(SystemExit) as done:
        main(["ask", "Who?", "-m", "proh", "--param", "help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("proh parameters (--param KEY=VALUE")
    assert len(out.strip().splitlines()) == 1 + len(dataclasses.fields(get_method("proh").Params))
    beam = next(line for line in out.splitlines() if line.strip().startswith("beam"))
    assert beam.split()[:5] == ["beam", "(--width)", "int", "3", ">="] and "beam width of the hyperedge search" in beam
    assert any(line.split()[:4] == ["hop_width", "int", "|", "None"] for line in out.splitlines())


def test_the_width_and_depth_help_names_each_methods_parameter():
    import argparse

    from kgfed.engine.cli.method_options import add_method_options

    parser = argparse.ArgumentParser()
    add_method_options(parser)
    helps = {a.dest: a.help for a in parser._actions}
    for name, (width, depth) in WIDTH_DEPTH.items():
        params = get_method(name).Params
        assert params.ALIASES.get("width", "width") == width and params.ALIASES.get("depth", "depth") == depth
        assert f" {width}" in helps["width"] and f" {depth}" in helps["depth"]


def test_the_docs_tables_are_the_dataclasses():
    from pathlib import Path

    from kgfed.engine.methods.params import DOCS_BLOCK, sync_docs

    docs = Path(__file__).resolve().parents[1] / "docs" / "methods"
    covered = set()
    for page in sorted(docs.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        covered |= {m.group(1) for m in DOCS_BLOCK.finditer(text)}
        assert sync_docs(text) == text, f"{page.name}: run python -m kgfed.engine.methods.params docs/methods/*.md"
    assert covered == set(REGISTRY)
