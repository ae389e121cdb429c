"""Extending kgfed from another package: a method, an LLM provider, a dialect and a cache backend, each one file
plus one entry point (issue 40 item 2), used through `kgfed run` and the MCP server as any built-in one is.

The package is written to a temporary directory outside the repository with its `.dist-info` (METADATA and
`entry_points.txt`, what `pip install` writes), and reaches the processes through PYTHONPATH, so kgfed finds it
only through `importlib.metadata`'s entry-point groups `kgfed.methods`, `kgfed.llm`, `kgfed.dialects`,
`kgfed.cache`. The method follows the relation its LLM names out of the topic; the LLM answers with the text
its spec gives; the dialect is Freebase's shape under another name; the backend keeps each store as a JSON
file. So the run's answers prove each piece took part: the plugin LLM's relation, the plugin dialect's KG, the
plugin backend's file holding the run's SPARQL answers.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kgfed.cache.root import BACKENDS, CacheSpec
from kgfed.engine.methods import METHODS, get_method
from kgfed.engine.toolbox.llm import PROVIDERS, make_llm
from kgfed.sparql.dialects import DIALECT_REGISTRY, get_dialect
from kgfed.sparql.errors import InvalidIdentifier, KgfedError, LLMError
from kgfed.sparql.registry import Registry

from .conftest import ROOT

DEMO_FB = ROOT / "engine" / "data" / "demo_freebase.nt"
DEMO_QUESTIONS = ROOT / "engine" / "data" / "demo_questions.jsonl"
KGFED = Path(sys.executable).parent / "kgfed"
BIRTHPLACE = "people.person.place_of_birth"

FILES = {
    "method.py": '''
        """A method in one file: the relation the LLM names, followed out of the topic; its first named neighbour."""
        from kgfed.engine.methods.base import Method, Result
        from kgfed.engine.toolbox.llm import ask


        class HopOnce(Method):
            name = "hop-once"

            async def _answer(self, question, topics):
                kg_name, ids = next(((n, i) for n, i in topics.items() if i), (None, None))
                if kg_name is None:
                    return Result(question, "")
                kg, topic = self.kgs[kg_name], sorted(ids)[0]
                relation = (await ask(self.llm, question, temperature=0.0)).strip()
                edges = sorted((e for e in await kg.neighbors(topic, relation, "out") if e.object_label),
                               key=lambda e: e.object)
                if not edges:
                    return Result(question, "")
                return Result(question, edges[0].object_label, [edges[0].object], [[edges[0]]])
        ''',
    "llm.py": '''
        """An LLM provider in one file: replies with the text after its name in the spec (`--llm fixed:TEXT`)."""
        from kgfed.engine.toolbox.llm_base import LLM, Completion


        class FixedLLM(LLM):
            name = "fixed"

            def __init__(self, reply: str = ""):
                super().__init__("fixed")
                self.reply = reply

            async def _complete(self, prompt, *, temperature, max_tokens, system, **_):
                return Completion(self.reply, len(prompt.split()), len(self.reply.split()))
        ''',
    "dialect.py": '''
        """A dialect in one file: Freebase's shape under another name."""
        from dataclasses import dataclass

        from kgfed.sparql.dialects import FreebaseDialect


        @dataclass(frozen=True)
        class MirrorDialect(FreebaseDialect):
            name: str = "fbmirror"


        MIRROR = MirrorDialect()
        ''',
    "cache.py": '''
        """A cache backend in one file: `--cache-dir jsonkv:///PATH`, each kind's store one JSON file under PATH."""
        import base64
        import json
        import threading
        from pathlib import Path

        from kgfed.cache.root import Backend


        class JsonStore:
            def __init__(self, path):
                self.path = Path(path)
                self.location = str(self.path)
                self.lock = threading.Lock()
                self.data = ({k: base64.b64decode(v) for k, v in json.loads(self.path.read_text()).items()}
                             if self.path.exists() else {})

            def get(self, key):
                return self.data.get(key)

            def get_many(self, keys):
                return [self.data.get(k) for k in keys]

            def set(self, key, value):
                self.set_many([(key, value)])

            def set_many(self, items):
                with self.lock:
                    self.data.update(items)
                    self.flush()

            def add_many(self, items):
                with self.lock:
                    for key, value in items:
                        self.data.setdefault(key, value)
                    self.flush()
                    return [self.data[k] for k, _ in items]

            def delete(self, key):
                with self.lock:
                    self.data.pop(key, None)
                    self.flush()

            def keys(self):
                return iter(list(self.data))

            def __len__(self):
                return len(self.data)

            def clear(self):
                with self.lock:
                    self.data.clear()
                    self.flush()

            def flush(self):
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.path.write_text(json.dumps({k: base64.b64encode(v).decode() for k, v in self.data.items()}))

            def close(self):
                pass


        def open_json(spec, kind, **options):
            return JsonStore(Path(spec.location.split("://", 1)[1]) / f"{kind}.json")


        JSONKV = Backend("jsonkv", open_json)
        ''',
}
ENTRY_POINTS = """\
[kgfed.methods]
hop-once = kgfed_plugin_demo.method:HopOnce

[kgfed.llm]
fixed = kgfed_plugin_demo.llm:FixedLLM

[kgfed.dialects]
fbmirror = kgfed_plugin_demo.dialect:MIRROR

[kgfed.cache]
jsonkv = kgfed_plugin_demo.cache:JSONKV
"""


@pytest.fixture
def plugin(tmp_path) -> Path:
    """The plugin package as `pip install --target` lays it out: the code and its `.dist-info`."""
    site = tmp_path / "site"
    package = site / "kgfed_plugin_demo"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for name, text in FILES.items():
        (package / name).write_text(textwrap.dedent(text).lstrip())
    info = site / "kgfed_plugin_demo-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kgfed-plugin-demo\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    assert not site.is_relative_to(ROOT)
    return site


def env_with(site: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(site), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def kgfed(site: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgfed.engine.cli", *argv], cwd=ROOT, env=env_with(site),
                          capture_output=True, text=True, timeout=300)


def run_argv(tmp_path: Path, out: Path) -> list[str]:
    return ["run", str(DEMO_QUESTIONS), "--method", "hop-once", "--llm", f"fixed:{BIRTHPLACE}", "--kg", "fb",
            "--endpoint", f"fb=fbmirror@file:{DEMO_FB}", "--cache-dir", f"jsonkv://{tmp_path / 'kv'}",
            "--out", str(out), "--limit", "3"]


def test_a_plugin_package_runs_through_kgfed_run(plugin, tmp_path):
    out = tmp_path / "preds.jsonl"
    done = kgfed(plugin, *run_argv(tmp_path, out))
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["results"], r["answer_ids"]) for r in rows] == [
        ("demo-01", "{Cambridge}", ["m.0978r"]),  # Douglas Adams' birthplace, through the relation the LLM named
        ("demo-02", "{Cambridge}", ["m.0978r"]),  # (a fixed reply: the same relation for the university question)
        ("demo-03", "{London}", ["m.0b1t1"]),
    ]
    assert all(r["cost"]["llm_calls"] == 1 for r in rows)
    assert rows[0]["reasoning_chains"] == [[["Douglas Adams", BIRTHPLACE, "Cambridge"]]]
    stored = json.loads((tmp_path / "kv" / "responses.json").read_text())  # the plugin backend kept the answers
    assert len(stored) >= 3
    again = kgfed(plugin, *run_argv(tmp_path, tmp_path / "again.jsonl"), "--offline")  # answered from that store
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "again.jsonl").read_text() == out.read_text()


def test_unknown_names_list_the_plugins_too(plugin):
    done = kgfed(plugin, "run", str(DEMO_QUESTIONS), "--method", "nosuch", "--out", "/dev/null")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert "unknown method 'nosuch'" in line and "hop-once" in line and "tog" in line
    done = kgfed(plugin, "relations", "m.0282x", "--endpoint", f"file:{DEMO_FB}", "--dialect", "nosuch")
    assert done.returncode == 2 and "fbmirror" in done.stderr and "freebase" in done.stderr
    done = kgfed(plugin, "relations", "m.0282x", "--endpoint", f"file:{DEMO_FB}", "--dialect", "fbmirror")
    assert done.returncode == 0, done.stderr
    assert BIRTHPLACE in done.stdout


async def test_a_plugin_method_is_asked_through_mcp(plugin, tmp_path):
    pytest.importorskip("mcp")
    from mcp import Client, StdioServerParameters

    if not KGFED.exists():
        pytest.skip(f"{KGFED} is not installed (pip install -e .)")
    args = ["mcp", "--kg", "fb", "--endpoint", f"fb=fbmirror@file:{DEMO_FB}", "--llm", f"fixed:{BIRTHPLACE}",
            "--cache-dir", f"jsonkv://{tmp_path / 'kv'}"]
    async with Client(StdioServerParameters(command=str(KGFED), args=args, env=env_with(plugin), cwd=str(ROOT))) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        method = tools["ask"].input_schema["properties"]["method"]
        assert {"hop-once", "tog", "pog"} <= set(method["enum"])
        result = await client.call_tool("ask", {"question": "Where was Douglas Adams born?", "method": "hop-once",
                                                "topics": ["m.0282x"]})
        assert not result.is_error, result.content[0].text
        assert result.structured_content["answer"] == "Cambridge"
        assert result.structured_content["answer_ids"] == ["m.0978r"]
        refused = await client.call_tool("ask", {"question": "Where?", "method": "nosuch"})
        assert refused.is_error
    assert (tmp_path / "kv" / "responses.json").exists()


# -- the registries in process -------------------------------------------------------------------------
@pytest.fixture
def on_path(plugin, monkeypatch):
    monkeypatch.syspath_prepend(str(plugin))
    yield plugin
    for name in [m for m in sys.modules if m.startswith("kgfed_plugin_demo")]:
        del sys.modules[name]


def test_a_registry_reads_entry_points_only_when_a_name_is_not_its_own(on_path):
    methods = Registry("method", "kgfed.methods", {"tog": "kgfed.engine.methods.tog:ToG"})
    assert methods.get("tog") is get_method("tog") and not methods._scanned  # a built-in name: no scan
    assert methods.get("hop-once").__name__ == "HopOnce" and methods._scanned
    assert methods.names() == ["hop-once", "tog"] and "hop-once" in methods and len(methods) == 2
    methods.register("hop-once", "kgfed.engine.methods.tog:ToG")  # code wins over an entry point
    assert methods.get("hop-once") is get_method("tog")
    with pytest.raises(KgfedError, match=r"^unknown method 'nope': choose one of hop-once, tog$"):
        methods.get("nope")
    broken = Registry("thing", "kgfed.nothing", {"x": "kgfed_plugin_demo.method:Nope"})
    with pytest.raises(KgfedError, match=r"^cannot load thing 'x' from 'kgfed_plugin_demo.method:Nope' \(AttributeError"):
        broken.get("x")


def test_the_registries_hand_out_the_plugin_objects(on_path):
    for registry in (METHODS, DIALECT_REGISTRY, BACKENDS, PROVIDERS):  # another test may have listed them first
        registry._scanned = False  # read the entry points again, now that the plugin is on the path
    try:
        assert get_method("hop-once").__name__ == "HopOnce"
        assert get_dialect("fbmirror").name == "fbmirror" and get_dialect("fbmirror").compound_relations
        spec = CacheSpec.of("jsonkv:///tmp/kv")
        assert (spec.backend, spec.local, spec.location) == ("jsonkv", False, "jsonkv:///tmp/kv")
        assert make_llm(f"fixed:{BIRTHPLACE}").reply == BIRTHPLACE
        assert make_llm(f"kgfed_plugin_demo.llm:FixedLLM:{BIRTHPLACE}").reply == BIRTHPLACE  # no registration needed
    finally:
        for registry in (METHODS, DIALECT_REGISTRY, BACKENDS, PROVIDERS):
            registry.found.clear()
            registry._loaded = {k: v for k, v in registry._loaded.items() if k in registry.entries}


def test_unknown_names_are_one_line_errors():
    with pytest.raises(LLMError, match=r"^unknown LLM spec 'nosuch:x': use anthropic"):
        make_llm("nosuch:x")
    with pytest.raises(LLMError, match=r"^cannot load LLM provider 'no_such_pkg.mod:Class'"):
        make_llm("no_such_pkg.mod:Class")
    with pytest.raises(InvalidIdentifier, match=r"^unknown dialect 'nosuch': choose one of .*freebase, wikidata"):
        get_dialect("nosuch")
    with pytest.raises(KgfedError, match=r"^cache location 'nosuch://x' has an unknown scheme: .*redis://"):
        CacheSpec.of("nosuch://x")
    with pytest.raises(KgfedError, match="unknown scheme"):
        CacheSpec.of("disk:///tmp/x")  # `disk` names plain directories, not a URL scheme
    with pytest.raises(KgfedError, match=r"^unknown method 'nosuch': choose one of .*tog.*, or package.module:Class$"):
        get_method("nosuch")


def test_an_llm_object_is_used_as_it_is():
    from kgfed.engine.toolbox.llm_base import NoLLM

    llm = NoLLM()
    assert make_llm(llm) is llm
    assert make_llm(llm, concurrency=2) is llm and llm.gate.concurrency == 2


async def test_a_session_takes_an_llm_object():
    from kgfed.engine.session import Session, SessionSpec
    from kgfed.engine.toolbox.llm_base import NoLLM

    llm = NoLLM()
    async with Session(SessionSpec(llm=llm, llm_concurrency=3)) as session:
        assert session.llm is llm and llm.gate.concurrency == 3
        assert session.describe()["llm"] == llm.describe()


def test_a_command_naming_built_in_entries_reads_no_entry_points(tmp_path):
    """Reading the entry points costs about 40 ms (importlib.metadata and a scan of every installed package):
    a command whose names are all built in never pays it, though its parser offers the registries' names."""
    code = ("import sys\nfrom kgfed.engine.cli import main\n"
            "try:\n    main(['relations', 'm.0282x', '--dialect', 'freebase', '--no-cache'])\nexcept SystemExit:\n    pass\n"
            "print('importlib.metadata' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert BIRTHPLACE in done.stdout and done.stdout.strip().splitlines()[-1] == "False"


def test_a_plugin_dialect_without_an_endpoint_asks_for_one():
    """No bundled demo KG speaks a plugin's dialect: a KG of it without an endpoint is one line, not the Wikidata demo."""
    import dataclasses

    from kgfed.engine.config import KGSpec, open_kg
    from kgfed.sparql.dialects import FreebaseDialect

    mirror = dataclasses.replace(FreebaseDialect(), name="mirror2")
    DIALECT_REGISTRY.register("mirror2", mirror)
    try:
        assert get_dialect("mirror2") is mirror
        with pytest.raises(KgfedError, match=r"^no endpoint for KG 'mk': add --endpoint mk=SPEC"):
            open_kg(KGSpec("mk", None, "mirror2"))
    finally:
        del DIALECT_REGISTRY.entries["mirror2"]
        DIALECT_REGISTRY._loaded.pop("mirror2", None)
