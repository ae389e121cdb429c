"""One parameter scheme for every method: declared defaults, aliases to each paper's names, casts, unknown names refused."""
from __future__ import annotations

import pytest

from kgfed.endpoints.embedded import EmbeddedEndpoint
from kgfed.engine.kg import KG
from kgfed.engine.methods import REGISTRY, get_method
from kgfed.engine.methods.base import Method, Param
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
               "hydra": ("max_width", "max_depth"), "inses": ("width", "max_iter"), "proh": ("beam", "max_depth")}


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_width_and_depth_reach_each_papers_names(kgs, name):
    method = get_method(name)(kgs, NoLLM(), width=2, depth=4)
    width, depth = WIDTH_DEPTH[name]
    assert (method.params[width], method.params[depth]) == (2, 4)
    assert set(method.params) == set(type(method).PARAMS)  # every declared parameter, defaults filled in


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
    assert cls.resolve({width: "2"})[width] == 2
    with pytest.raises(KgfedError, match=f"invalid parameter {width}='two' for {name}: expected int"):
        cls.resolve({width: "two"})
    with pytest.raises(KgfedError, match=f"invalid parameter {width}=2.5 for {name}: expected int"):
        cls.resolve({width: 2.5})
    alias, target = next(iter(cls.ALIASES.items()), ("width", "width"))
    if alias != target:  # an alias and its paper name given different values
        with pytest.raises(KgfedError, match=f"{alias}=2 and {target}=3 disagree for {name} \\({alias} means {target}\\)"):
            cls.resolve({alias: 2, target: 3})
        assert cls.resolve({alias: 2, target: 2})[target] == 2


def test_casts_of_each_kind():
    assert Param(True).cast("m", "k", "false") is False and Param(True).cast("m", "k", 1) is True
    assert Param(0.5).cast("m", "k", "0.25") == 0.25 and Param(0.5).cast("m", "k", 1) == 1.0
    assert Param(None).cast("m", "k", None) is None and Param(None).cast("m", "k", "7") == 7
    assert Param(("a",)).cast("m", "k", ["a", "b"]) == ("a", "b") and Param(("a",)).cast("m", "k", "a, b") == ("a", "b")
    assert Param(3, low=None).cast("m", "k", -1) == -1
    with pytest.raises(KgfedError, match="invalid parameter k=-1 for m: expected a value ≥ 0"):
        Param(3).cast("m", "k", -1)
    with pytest.raises(KgfedError, match="invalid parameter k=True for m: expected int"):
        Param(3).cast("m", "k", True)
    with pytest.raises(KgfedError, match="invalid parameter k=None for m: expected int"):
        Param(3).cast("m", "k", None)


def test_string_booleans_are_read_as_meant(kgs):
    tog = get_method("tog")(kgs, NoLLM(), exact_prompts="false", stop_sequences="yes")
    assert (tog.exact_prompts, tog.stop_sequences) == (False, True)  # bool("false") would have been True


def test_a_method_without_declared_parameters_takes_none(kgs):
    class Bare(Method):
        name = "bare"

        async def _answer(self, question, topics):
            raise AssertionError

    assert Bare(kgs, NoLLM()).params == {}
    with pytest.raises(KgfedError, match=r"unknown bare parameter\(s\) delay: use some of \(none\)"):
        Bare(kgs, NoLLM(), delay=1)


def test_a_parameter_named_like_a_method_attribute_stays_in_params(kgs):
    hydra = get_method("hydra")(kgs, NoLLM(), select_sources=False)
    assert hydra.params["select_sources"] is False and callable(hydra.select_sources)


class Nearest(Method):
    """The shape docs/ARCHITECTURE.md gives a new method: PARAMS, the facade, the run's embedder, Result."""

    name = "nearest"
    PARAMS = {"width": Param(3, low=1), "threshold": 0.0}

    async def _answer(self, question, topics):
        from kgfed.engine.methods.base import Result

        name, ids = next((n, i) for n, i in topics.items() if i)
        kg, topic = self.kgs[name], sorted(ids)[0]
        relations = [r for r in await kg.relations(topic, "out") if r.label][: self.width]
        edges = [e for r in relations for e in await kg.neighbors(topic, r.relation) if e.label]
        sims = await self.embedder.similarity(question, [f"{e.relation_label} {e.label}" for e in edges])
        best = max(zip(sims, range(len(edges))))
        edge = edges[best[1]] if best[0] >= self.params["threshold"] else None
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
