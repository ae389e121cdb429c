"""Typed configuration end to end: argparse names -> value objects (cli/) -> RunSpec -> Session -> KG.open.

Every default is written once (`HttpOptions`, `CacheOptions`, `AlignOptions`); `HttpClient.from_options` is
how a client is built from them; `KG.open` takes the value objects (its 0.2 keywords were removed in 0.3.0:
a one-line error); a `RunSpec` carries them to worker processes (it pickles) instead of a dict.
"""
from __future__ import annotations

import argparse
import asyncio
import pickle
from dataclasses import replace

import pytest

from kgfed.cache.options import CacheOptions
from kgfed.endpoints.client import POLITE_HOSTS, HttpClient, HttpOptions
from kgfed.endpoints.transport import MockTransport, Response
from kgfed.engine.config import AlignOptions, KGSpec
from kgfed.engine.data import DEMO_WIKIDATA
from kgfed.engine.harness.runner import RunSpec
from kgfed.engine.kg.facade import KG, LIVE_MAX_AGE
from kgfed.sparql.errors import KgfedError

from .live_services import no_user_config  # noqa: F401 (autouse)


def test_http_options_defaults_are_the_clients_defaults():
    """`HttpClient()` and `HttpClient.from_options(HttpOptions())` are the same client: one place holds the defaults."""
    bare, built = HttpClient(), HttpClient.from_options(HttpOptions())
    for attribute in ("timeout", "retries", "user_agent"):
        assert getattr(bare, attribute) == getattr(built, attribute)
    assert bare.limit_for("127.0.0.1:8890") == built.limit_for("127.0.0.1:8890") == HttpOptions().per_host == 16
    assert built.timeout == 60.0 and built.limit_for("query.wikidata.org") == POLITE_HOSTS["query.wikidata.org"]


def test_from_options_carries_every_field_and_concurrency_caps_every_host():
    options = HttpOptions(timeout=7.5, contact="me@example.org", concurrency=2, retries=1)
    client = HttpClient.from_options(options)
    assert (client.timeout, client.retries, client.contact) == (7.5, 1, "me@example.org")
    assert "(me@example.org)" in client.user_agent
    assert client.limit_for("query.wikidata.org") == client.limit_for("127.0.0.1:1") == 2  # polite hosts too
    assert HttpClient.from_options(HttpOptions(concurrency=9)).limit_for("en.wikipedia.org") == 3  # never past Wikimedia's 3
    with pytest.raises(TypeError, match="HttpOptions"):
        HttpClient.from_options({"timeout": 5})  # type: ignore[arg-type]


async def test_kg_open_takes_value_objects_and_owns_only_the_client_it_built(tmp_path):
    async with KG.open(f"file:{DEMO_WIKIDATA}", http=HttpOptions(timeout=5.0), cache=CacheOptions(root=str(tmp_path))) as kg:
        own = kg._client
        assert own is not None and own.timeout == 5.0
        assert [r.relation for r in await kg.relations("Q42", "out")]
        assert (tmp_path / "responses").exists()  # the root of CacheOptions holds the answers
    assert own.closed  # built from HttpOptions: closed with the KG

    shared = HttpClient.from_options(HttpOptions())
    async with KG.open("wikidata", http=shared, cache=CacheOptions(enabled=False)) as kg:
        assert kg.endpoint.inner.client is shared and kg._client is None
    assert not shared.closed  # the caller's client stays open for its owner
    await shared.aclose()


async def test_cache_options_max_age_none_is_the_endpoints_default_not_never_stale():
    """`CacheOptions(max_age=None)` (no --max-age) keeps live Wikidata answers a week, as --help says."""
    async with HttpClient.from_options(HttpOptions()) as client:
        async with KG.open("wikidata", http=client, cache=CacheOptions(enabled=False)) as live:
            assert live.endpoint.max_age == LIVE_MAX_AGE
        async with KG.open("wikidata", http=client, cache=CacheOptions(enabled=False, max_age=60.0)) as short:
            assert short.endpoint.max_age == 60.0
    async with KG.open(f"file:{DEMO_WIKIDATA}", cache=CacheOptions(enabled=False)) as dump:
        assert dump.endpoint.max_age is None


def test_kg_open_keywords_of_0_2_are_refused_in_0_3():
    for keywords, named in (({"cache_dir": "/tmp/c", "timeout": 3}, r"KG\.open\(timeout=, cache_dir=\)"),
                            ({"offline": True}, r"KG\.open\(offline=\)"), ({"client": object()}, r"KG\.open\(client=\)")):
        with pytest.raises(KgfedError, match=rf"^{named} was removed in kgfed 0\.3\.0: pass http=HttpOptions"):
            KG.open(f"file:{DEMO_WIKIDATA}", **keywords)


def test_run_spec_is_typed_frozen_and_pickles(tmp_path, monkeypatch):
    monkeypatch.setenv("KGFED_CACHE_DIR", str(tmp_path / "env-cache"))
    spec = RunSpec("tog", {"width": 2}, kgs=(KGSpec.parse("freebase=file:fb.nt"),), http=HttpOptions(timeout=9.0),
                   llm_concurrency=4)
    resolved = spec.resolved()
    assert resolved.cache.root == str(tmp_path / "env-cache")  # the root explicit for other processes and nodes
    assert resolved.embeddings_dir == str(tmp_path / "env-cache" / "embeddings")
    assert pickle.loads(pickle.dumps(resolved)) == resolved  # worker processes and Ray actors get it whole
    assert replace(resolved, llm_concurrency=1).http.timeout == 9.0
    with pytest.raises(AttributeError):
        spec.llm = "anthropic"  # type: ignore[misc]
    assert RunSpec("tog").kgs == (KGSpec("freebase"), KGSpec("wikidata"))  # the default: both demo KGs
    off = RunSpec("tog", cache=CacheOptions(enabled=False)).resolved()
    assert off.cache.root is None and off.embeddings_dir is None
    with pytest.raises(KgfedError, match="HttpOptions"):
        RunSpec("tog", http={"timeout": 5})  # type: ignore[arg-type]


def test_run_spec_kg_options_dict_of_0_2_is_refused_in_0_3():
    with pytest.raises(KgfedError, match=r"^RunSpec's third argument is the LLM spec: 0\.2's kg_options dict was removed"):
        RunSpec("tog", {}, {"kg": "freebase", "endpoint": ["freebase=file:fb.nt"]})  # type: ignore[arg-type]
    for accessor in ("kg_specs", "http_options", "cache_options"):
        assert not hasattr(RunSpec("tog"), accessor)


def test_the_cli_turns_argparse_names_into_the_value_objects():
    from kgfed.engine.cli.app import build_parser
    from kgfed.engine.cli.options import align_options, cache_options, http_options, run_spec

    parser, _ = build_parser()
    args = parser.parse_args(["run", "cwq", "--out", "p.jsonl", "--kg", "freebase,wd", "--endpoint", "freebase=file:fb.nt",
                              "--endpoint", "wd=wikidata@http://127.0.0.1:8890/sparql", "--timeout", "12",
                              "--contact", "me@example.org", "--concurrency", "3", "--cache-dir", "/tmp/kc", "--offline",
                              "--max-age", "30", "--param", "width=2", "--llm-concurrency", "5", "--text", "demo"])
    spec = run_spec(args)
    assert spec.kgs == (KGSpec("freebase", "file:fb.nt"), KGSpec("wd", "http://127.0.0.1:8890/sparql", "wikidata"))
    assert spec.http == HttpOptions(timeout=12.0, contact="me@example.org", concurrency=3) == http_options(args)
    assert spec.cache == CacheOptions(root="/tmp/kc", offline=True, max_age=30.0) == cache_options(args)
    assert (spec.params, spec.llm_concurrency, spec.text) == ({"width": 2}, 5, "demo")
    defaults = parser.parse_args(["relations", "Q42"])
    assert http_options(defaults) == HttpOptions() and cache_options(defaults) == CacheOptions()
    align = parser.parse_args(["align", "Q42", "--methods", "p646,label"])
    assert align_options(align) == AlignOptions(methods=("p646", "label"))
    assert align_options(argparse.Namespace()) == AlignOptions()


def test_lower_layers_build_no_client_of_their_own():
    from kgfed.endpoints.profiles import resolve_endpoint
    from kgfed.endpoints.wikipedia import WikipediaSource

    with pytest.raises(TypeError, match="pass client="):
        resolve_endpoint("qlever-wikidata")
    with pytest.raises(TypeError, match="needs the run's HttpClient"):
        WikipediaSource(None)  # type: ignore[arg-type]

    async def shared() -> None:
        seen: list[str] = []

        def wiki(request) -> Response:
            seen.append(request.host)
            return Response.of(200, {"batchcomplete": True, "query": {"pages": [{"title": "Nowhere", "missing": True}]}})

        client = HttpClient.from_options(HttpOptions(contact="me@example.org"), transport=MockTransport(wiki))
        async with WikipediaSource(client, cache=False, maxlag=None) as source:
            assert (await source.pages(["Nowhere"]))["Nowhere"].missing
        assert seen == ["en.wikipedia.org"] and not client.closed  # the caller's client: used, left open
        await client.aclose()

    asyncio.run(shared())


def test_the_mapping_constructors_of_0_2_are_gone_in_0_3():
    for cls in (HttpOptions, CacheOptions, AlignOptions):
        assert not hasattr(cls, "from_options"), cls


def test_no_code_outside_the_client_module_constructs_an_http_client():
    """`HttpClient.from_options` is the one way: no `HttpClient(...)` call in the package outside its module
    (docstrings may still show `HttpClient(transport=MockTransport(...))`, as tests do)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    found = []
    for top in ("sparql", "endpoints", "cache", "engine"):
        for path in (root / top).rglob("*.py"):
            if path == root / "endpoints" / "client.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call):
                    func = node.func
                    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
                    if name == "HttpClient":
                        found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not found, f"build clients with HttpClient.from_options(HttpOptions(...)): {found}"


def _calls(name: str) -> list[str]:
    """Where the package calls `name(...)` or `X.name(...)` (docstrings and messages are not calls)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    found = []
    for top in ("sparql", "endpoints", "cache", "engine"):
        for path in sorted((root / top).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call):
                    func = node.func
                    called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
                    if called == name:
                        found.append(str(path.relative_to(root)))
    return found


def test_one_place_builds_a_client_from_options_and_one_opens_a_response_cache():
    """Issue 40's check: `HttpClient.from_options(` and `ResponseCache(` are each called in one place (the session
    and `KG.open`'s one-KG session go through them); before, config.open_kgs, KG.open, cli.options, the session
    and the OpenAI provider each built a client, and every KG opened its own response cache."""
    outside = [path for path in _calls("from_options") if path != "endpoints/client.py"]  # (its own shorthands)
    assert outside == ["endpoints/options.py"]  # `HttpOptions.client()`
    assert _calls("ResponseCache") == ["engine/kg/facade.py"]
