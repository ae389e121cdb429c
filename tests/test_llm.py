"""LLM providers and prompts: verbatim rendering, forgiving parsers, replay/record, real HTTP (no live model)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from aiohttp import web

from kgfed.cache.costs import track
from kgfed.engine.toolbox import prompts as P
from kgfed.engine.toolbox.llm import (
    ANSWER_TEMPERATURE, EXPLORATION_TEMPERATURE, PRUNING_TEMPERATURE, AnthropicLLM, Completion, NoLLM,
    OpenAICompatibleLLM, ReplayLLM, Usage, ask, make_llm, prompt_key, prompt_limits,
)
from kgfed.sparql.errors import LLMError

RECORDINGS = Path(__file__).parent / "recordings" / "llm"
QUESTION = "Which nation has the Alta Verapaz Department and is in Central America?"
ALTA_VERAPAZ_RELATIONS = sorted([  # every relation of m.0146np in the CWQ subgraph but type.object.name
    "base.aareas.schema.administrative_area.administrative_children", "location.country.administrative_divisions",
    "location.location.contains", "base.aareas.schema.administrative_area.administrative_parent",
    "location.administrative_division.country", "location.location.containedby",
])


# -- prompts: verbatim templates, exact rendering --------------------------------------------------
def test_tog_templates_are_verbatim():
    assert P.EXTRACT_RELATION_PROMPT.startswith("Please retrieve %s relations (separated by semicolon) that contribute")
    assert "A: 1. {language.human_language.main_country (Score: 0.4))}: This relation" in P.EXTRACT_RELATION_PROMPT  # ToG's `))` typo kept
    assert P.EXTRACT_RELATION_PROMPT.endswith("cultural background of the country in question.\n\nQ: ")
    assert P.SCORE_ENTITY_CANDIDATES_PROMPT.endswith("would be 0.\n\nQ: {}\nRelation: {}\nEntites: ")  # ToG's "Entites"
    assert 'Q: Find the person who said "Taste cannot be controlled by law", what did' in P.ANSWER_PROMPT
    assert P.ANSWER_PROMPT.endswith("its neighboring countries.\n\nQ: {}\n")
    assert P.PROMPT_EVALUATE.count("A: {Yes}.") == 2 and P.PROMPT_EVALUATE.count("A: {No}.") == 3
    assert P.PROMPT_EVALUATE.endswith("its neighboring countries.\n\n")
    assert P.GENERATE_DIRECTLY.endswith("Mitchell Lee Hedberg overdose Heroin. The answer is {Heroin}.")
    assert "Gymnopilus spectabilis, \nOpium Law, part of, norcodeine (stereochemistry defined), \n" in P.PROMPT_EVALUATE_WIKI
    assert "are:\n- Ashley Greene\n- Cecily Strong" in P.SCORE_ENTITY_CANDIDATES_PROMPT_WIKI  # ToG's `\n` escapes
    assert "Answer: top_list: {path 1, path 2, path3}\n" in P.POG_PATH_SELECT_PROMPT
    assert 'Thinking Cot:  "Nijmegen" - service by - airport - owned by - answer(country) - border with - "France"' in P.POG_QUESTION_ANALYSIS_PROMPT


def test_relation_prompt_renders_like_tog():
    got = P.tog_relation_prompt(QUESTION, "Alta Verapaz Department", ["location.location.containedby", "film.film.starring"], 3)
    template = P.EXTRACT_RELATION_PROMPT.replace("%s", "3")
    assert got == (template + "Which nation has the Alta Verapaz Department and is in Central America?\n"
                   "Topic Entity: Alta Verapaz Department\nRelations: location.location.containedby; film.film.starring\nA: ")
    wiki = P.tog_relation_prompt("Q?", "Douglas Adams", ["educated at", "spouse"], 2, wiki=True)
    assert wiki == P.EXTRACT_RELATION_PROMPT_WIKI.replace("%s", "2") + "Q?\nTopic Entity: Douglas Adams\nRelations:\n1. educated at\n2. spouseA:"
    assert P.tog_relation_prompt("Q?", "D", ["a"], 1, wiki=True, exact=False).endswith("\n1. a\nA:")


def test_entity_evaluate_answer_and_direct_prompts_render_like_tog():
    got = P.tog_entity_prompt("Q?", "film.producer.film", ["Let Me In", "So Undercover"])
    assert got == P.SCORE_ENTITY_CANDIDATES_PROMPT[:-len("Q: {}\nRelation: {}\nEntites: ")] + (
        "Q: Q?\nRelation: film.producer.film\nEntites: Let Me In; So Undercover\nScore: ")
    triples = [("Alta Verapaz Department", "location.administrative_division.country", "Guatemala"),
               ("Guatemala", "location.location.containedby", "Central America")]
    lines = ("Alta Verapaz Department, location.administrative_division.country, Guatemala\n"
             "Guatemala, location.location.containedby, Central America")
    assert P.tog_evaluate_prompt(QUESTION, triples) == P.PROMPT_EVALUATE + QUESTION + "\nKnowledge Triplets: " + lines + "A: "
    assert P.tog_evaluate_prompt(QUESTION, triples, exact=False) == (
        P.PROMPT_EVALUATE + "Q: " + QUESTION + "\nKnowledge Triplets: " + lines + "\nA: ")
    assert P.tog_answer_prompt(QUESTION, triples) == P.ANSWER_PROMPT + QUESTION + "\n\nKnowledge Triplets: " + lines + "A: "
    fixed = P.tog_answer_prompt(QUESTION, triples, exact=False)
    assert "Q: {}" not in fixed and fixed.endswith("\n\nQ: " + QUESTION + "\nKnowledge Triplets: " + lines + "\nA: ")
    assert P.tog_generate_directly_prompt("Who?") == P.GENERATE_DIRECTLY + "\n\nQ: Who?\nA:"


def test_pog_prompts_render_like_the_authors_code():
    analysis = P.pog_question_analysis_prompt("What country borders France?", {"m.0f8l9c": "France"})
    assert analysis == P.POG_QUESTION_ANALYSIS_PROMPT + "\nQ:\n Question: What country borders France?\nMain Topic Entities: \n{'m.0f8l9c': 'France'}\nA:\n"
    select = P.pog_path_select_prompt("Q?", "Thinking Cot: x", ["{a} - {r} - {b}", "{c} - {r} - {d}"])
    assert select == P.POG_PATH_SELECT_PROMPT + "\nQ: Q?\n Thinking Cot: x\nThe entity list is: \nPath 1: {a} - {r} - {b}\nPath 2: {c} - {r} - {d}\n"
    edge = P.pog_edge_select_prompt("Q?", "cot", ["{a} - {r} - {b}"], ["{b} - {s} - {c}"])
    assert edge.endswith("\nQ: Q?\n cotexisting_path 1: {a} - {r} - {b}\n\n\nThe Candidate Edge list is: \nCandidate Edge 1: {b} - {s} - {c}\n")


# -- parsers: odd replies parsed, or rejected in one line ------------------------------------------
CANDIDATES = ["language.human_language.main_country", "language.human_language.countries_spoken_in",
              "base.rosetta.languoid.parent", "kg.object_profile.prominent_type", "people.person.nationality"]


@pytest.mark.parametrize("reply, expected", [
    ("1. {language.human_language.main_country (Score: 0.4))}: highly relevant...\n"
     "2. {language.human_language.countries_spoken_in (Score: 0.3)}: also relevant",
     [("language.human_language.main_country", 0.4), ("language.human_language.countries_spoken_in", 0.3)]),
    ("Sure! Here they are:\n{People.Person.Nationality (score:0.5)} and {BASE.rosetta.languoid.parent (SCORE = 0.5)}",
     [("people.person.nationality", 0.5), ("base.rosetta.languoid.parent", 0.5)]),
    ("{base.rosetta.languoid.parnet (Score: 0.7)}", [("base.rosetta.languoid.parent", 0.7)]),  # misspelt → fuzzy
    ('["people.person.nationality", "kg.object_profile.prominent_type"]',
     [("people.person.nationality", 0.5), ("kg.object_profile.prominent_type", 0.5)]),  # no scores → equal shares
    ('```json\n{"people.person.nationality": 0.8, "made.up.relation": 0.2}\n```', [("people.person.nationality", 0.8)]),
    ('[{"relation": "base.rosetta.languoid.parent", "score": 0.9}]', [("base.rosetta.languoid.parent", 0.9)]),
    ("1. language.human_language.main_country (0.6)\n2. **base.rosetta.languoid.parent**: 0.4",
     [("language.human_language.main_country", 0.6), ("base.rosetta.languoid.parent", 0.4)]),
    ("Best: {nationality (Score: 1.0)}", [("people.person.nationality", 1.0)]),  # last segment only
    ("I would look at kg.object_profile.prominent_type first, then people.person.nationality.",
     [("kg.object_profile.prominent_type", 0.5), ("people.person.nationality", 0.5)]),  # bare mentions
    ("{a.b.c; people.person.nationality (Score: 0.5)} {people.person.nationality (Score: 0.5)}",
     [("people.person.nationality", 0.5)]),  # ToG skips `;` groups
])
def test_relation_replies_parse_to_offered_candidates(reply, expected):
    assert P.parse_relation_scores(reply, CANDIDATES) == expected


@pytest.mark.parametrize("reply", ["", "I cannot help with that.", "{film.film.starring (Score: 1.0)}", "[1, 2, 3]"])
def test_unusable_relation_replies_raise_one_line_llm_error(reply):
    with pytest.raises(LLMError) as info:
        P.parse_relation_scores(reply, CANDIDATES)
    assert "\n" not in str(info.value) and "none of the 5 offered relations" in str(info.value)


@pytest.mark.parametrize("reply, expected", [
    ("0.0, 1.0, 0.0\nThe movie that matches is \"So Undercover\"; its score would be 1.0.", [0.0, 1.0, 0.0]),
    ("Score: 0.2, 0.6, 0.2", [0.2, 0.6, 0.2]),
    ("[2, 6, 2]", [0.2, 0.6, 0.2]),  # integers, normalised
    ("0.5 0.5 0.0", [0.5, 0.5, 0.0]),
    ("- So Undercover: 0.7\n- Let Me In: 0.3", [0.3, 0.7, 0.0]),  # by name when the count is off
    ("0.0, 0.0, 0.0", [1 / 3] * 3),  # all zero → equal
    ("0.1, 0.9", [1 / 3] * 3),  # count mismatch → ToG's "All entities are created equal"
    ("no idea", [1 / 3] * 3),
])
def test_entity_scores_are_normalised_and_count_safe(reply, expected):
    assert P.parse_entity_scores(reply, ["Let Me In", "So Undercover", "The Quiet Ones"]) == pytest.approx(expected)


def test_yes_no_answers_and_path_selection():
    assert P.parse_sufficient("{Yes}. Based on the given knowledge triplets ... {De Smet}.")
    assert not P.parse_sufficient("{No}. Based on the given knowledge triplets")
    assert P.parse_sufficient("response: { yes }.") and P.parse_sufficient("Yes, the triplets suffice.")
    assert not P.parse_sufficient("The answer is {De Smet}.") and not P.parse_sufficient("")
    assert P.extract_answer("{Yes}. Therefore, the answer to the question is {De Smet}.") == "De Smet"
    assert P.extract_answer("The answer is {Washington, D.C.}.") == "Washington, D.C." and P.extract_answer("no braces") == ""
    assert P.parse_path_selection("Answer: top_list: {path 3, path 1, path9}\nExplanation: ...", 5) == [2, 0]
    assert P.parse_path_selection("top_list:{Candidate Edge 2, Candidate Edge 2, Candidate Edge4}", 4) == [1, 3]
    assert P.parse_path_selection("I prefer Path 4 and then path 2.", 4) == [3, 1]
    with pytest.raises(LLMError, match="selected none of the 2 candidate paths"):
        P.parse_path_selection("top_list: {path 7}", 2)


def test_question_analysis_gives_indicator_split_questions_and_depth():
    reply = ('Thinking Cot:  "Nijmegen" - service by - airport - owned by - answer(country) - border with - "France"\n'
             'split_question1: What country contains an airport that serves "Nijmegen"?\nsplit_question2: What country bordering "France"?')
    analysis = P.parse_question_analysis(reply)
    assert analysis.indicator.startswith('"Nijmegen" - service by') and analysis.depth == 2  # the paper's example
    assert analysis.split_questions == ['What country contains an airport that serves "Nijmegen"?', 'What country bordering "France"?']
    assert P.parse_question_analysis('Thinking CoT: "Crazy Crab" - mascot of - team - won - World Series').depth == 2
    assert P.parse_question_analysis("nonsense").depth == 1


# -- usage, specs, none ----------------------------------------------------------------------------
def test_temperatures_follow_the_papers():
    assert (EXPLORATION_TEMPERATURE, PRUNING_TEMPERATURE, ANSWER_TEMPERATURE) == (0.4, 0.0, 0.0)


def test_usage_snapshot_since_reset():
    usage = Usage()
    usage.add(Completion("a", 10, 2))
    before = usage.snapshot()
    usage.add(Completion("b", 5, 1))
    assert usage.since(before).to_dict() == {"calls": 1, "input_tokens": 5, "output_tokens": 1}
    assert before.to_dict() == {"calls": 1, "input_tokens": 10, "output_tokens": 2}
    usage.reset()
    assert usage.to_dict() == {"calls": 0, "input_tokens": 0, "output_tokens": 0}


async def test_no_llm_is_unavailable_and_raises():
    llm = make_llm("none")
    assert isinstance(llm, NoLLM) and not llm.available
    with pytest.raises(LLMError, match="--llm none"):
        await llm.complete("hi", temperature=0)


@pytest.mark.parametrize("spec, message", [
    ("gpt4", "unknown LLM spec 'gpt4'"), ("openai:", "unknown LLM spec"), ("openai:localhost:8000", "not an http"),
    ("record:only-a-dir", "record needs a directory and a provider"), ("record:d:none", "real provider"),
])
def test_bad_specs_fail_clearly(spec, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LLMError, match=message):
        make_llm(spec)


def test_specs_build_providers(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    assert make_llm("anthropic").model == "claude-haiku-4-5" and make_llm("anthropic:claude-sonnet-4-6").model == "claude-sonnet-4-6"
    llm = make_llm("openai:http://127.0.0.1:8000/#Qwen2-7B")
    assert (llm.base_url, llm.model) == ("http://127.0.0.1:8000/v1", "Qwen2-7B")
    assert make_llm("openai:http://h:1/v1").base_url == "http://h:1/v1"
    with pytest.raises(LLMError, match="does not exist"):
        make_llm(f"replay:{tmp_path / 'absent'}")
    rec = make_llm(f"record:{tmp_path / 'new'}:anthropic:claude-sonnet-4-6")
    assert rec.name == "record" and rec.inner.model == "claude-sonnet-4-6" and (tmp_path / "new").is_dir()


def test_missing_anthropic_key_is_one_clear_error(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(LLMError) as info:
        make_llm("anthropic")
    assert str(info.value).startswith("ANTHROPIC_API_KEY is not set: export ANTHROPIC_API_KEY=") and "\n" not in str(info.value)


# -- OpenAI-compatible provider against a local aiohttp server (real HTTP) -------------------------
@pytest.fixture
async def openai_server():
    """127.0.0.1 server replaying recorded vLLM-style JSON; `seen` holds every request it got."""
    seen: list[dict] = []

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append({"path": request.path, "headers": dict(request.headers), "body": body})
        name = "openai_error.json" if body.get("model") == "gpt-4o" else "openai_chat_completion.json"
        return web.Response(body=(RECORDINGS / name).read_bytes(), status=404 if "error" in name else 200,
                            content_type="application/json")

    async def models(request: web.Request) -> web.Response:
        seen.append({"path": request.path, "headers": dict(request.headers), "body": None})
        return web.Response(body=(RECORDINGS / "openai_models.json").read_bytes(), content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", models)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}", seen
    await runner.cleanup()


async def test_openai_provider_sends_chat_completion_and_parses_tokens(openai_server):
    url, seen = openai_server
    prompt = P.tog_evaluate_prompt(QUESTION, [("Alta Verapaz Department", "location.administrative_division.country", "Guatemala")])
    async with OpenAICompatibleLLM(url, "Qwen2-7B-Instruct", api_key="sk-local") as llm:
        with track() as cost:
            reply = await llm.complete(prompt, temperature=EXPLORATION_TEMPERATURE, max_tokens=64, system=P.TOG_SYSTEM)
    assert reply == Completion(json.loads((RECORDINGS / "openai_chat_completion.json").read_text())["choices"][0]["message"]["content"], 912, 41)
    assert P.parse_sufficient(reply.text) and P.extract_answer(reply.text) == "Guatemala"
    [request] = seen
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-local"
    assert request["headers"]["Content-Type"] == "application/json" and request["headers"]["User-Agent"].startswith("kgfed/")
    assert request["body"] == {"model": "Qwen2-7B-Instruct", "temperature": 0.4, "max_tokens": 64,
                               "messages": [{"role": "system", "content": P.TOG_SYSTEM}, {"role": "user", "content": prompt}]}
    assert llm.usage.to_dict() == {"calls": 1, "input_tokens": 912, "output_tokens": 41}
    assert (cost["llm_calls"], cost["input_tokens"], cost["output_tokens"]) == (1, 912, 41)


async def test_openai_provider_discovers_the_model_and_reports_errors(openai_server, monkeypatch):
    url, seen = openai_server
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    async with make_llm(f"openai:{url}") as llm:
        await llm.complete("hello", temperature=0)
        await llm.complete("again", temperature=0)
    assert [s["path"] for s in seen] == ["/v1/models", "/v1/chat/completions", "/v1/chat/completions"]  # asked once
    assert seen[1]["body"]["model"] == "Qwen2-7B-Instruct" and "Authorization" not in seen[1]["headers"]
    assert seen[1]["body"]["messages"] == [{"role": "user", "content": "hello"}]
    async with make_llm(f"openai:{url}#gpt-4o") as llm:
        with pytest.raises(LLMError, match=r"HTTP 404: The model `gpt-4o` does not exist\.; check the model name"):
            await llm.complete("hello", temperature=0)
        assert llm.usage.calls == 0


async def test_openai_provider_unreachable_server_is_an_llm_error():
    async with OpenAICompatibleLLM("http://127.0.0.1:9", "m", timeout=5) as llm:
        with pytest.raises(LLMError, match="the LLM server at http://127.0.0.1:9/v1 failed"):
            await llm.complete("hello", temperature=0)


# -- replay / record round trip with real files ----------------------------------------------------
async def test_record_then_replay_round_trip(openai_server, tmp_path):
    url, seen = openai_server
    replies = tmp_path / "replies"
    async with make_llm(f"record:{replies}:openai:{url}#Qwen2-7B-Instruct") as recorder:
        first = await recorder.complete("Is Guatemala in Central America?", temperature=0, system=P.TOG_SYSTEM)
        again = await recorder.complete("Is Guatemala in Central America?", temperature=0, system=P.TOG_SYSTEM)
    assert len(seen) == 1 and first == again and recorder.stats == {"misses": 1, "recorded": 1, "hits": 1}
    key = prompt_key("Is Guatemala in Central America?", system=P.TOG_SYSTEM, temperature=0.0)
    [file] = replies.iterdir()
    assert file.name == f"{key}.json"
    saved = json.loads(file.read_text())
    assert (saved["text"], saved["model"], saved["provider"], saved["input_tokens"]) == (first.text, "Qwen2-7B-Instruct", "openai", 912)

    replay = make_llm(f"replay:{replies}")
    with track() as cost:
        assert await replay.complete("Is Guatemala in Central America?", temperature=0.0, system=P.TOG_SYSTEM) == first
    assert cost["input_tokens"] == 912 and len(seen) == 1  # replayed, charged, no HTTP
    with pytest.raises(LLMError) as info:  # a different temperature is a different recording
        await replay.complete("Is Guatemala in Central America?", temperature=0.4, system=P.TOG_SYSTEM)
    other = prompt_key("Is Guatemala in Central America?", system=P.TOG_SYSTEM, temperature=0.4)
    assert str(info.value) == (f"no recorded LLM reply for prompt {other} in {replies}: record it with "
                               f"--llm record:{replies}:<provider spec> (e.g. record:{replies}:anthropic)")


async def test_ask_sends_cap_and_stop_and_reads_json_or_counts_a_fallback(openai_server):
    """`ask` is the methods' one call: it passes max_tokens/stop through, charges the call, and in JSON mode a reply
    without a JSON object gives {} and one parse fallback (the recorded reply is a ToG verdict in prose)."""
    url, seen = openai_server
    table = {"answer": (120, ("\nQ:",))}
    async with OpenAICompatibleLLM(url, "Qwen2-7B-Instruct") as llm:
        with track() as cost:
            text = await ask(llm, "Is Guatemala in Central America?", temperature=0,
                             **prompt_limits("answer", table, enabled=True, max_tokens=256))
            value = await ask(llm, "Is Guatemala in Central America?", temperature=0, json_mode=True,
                              **prompt_limits("answer", table, enabled=False, max_tokens=256))
    assert P.extract_answer(text) == "Guatemala" and value == {}
    assert (seen[0]["body"]["max_tokens"], seen[0]["body"]["stop"]) == (120, ["\nQ:"])
    assert seen[1]["body"]["max_tokens"] == 256 and "stop" not in seen[1]["body"]  # off: as the papers' code sends
    assert (cost["llm_calls"], cost["input_tokens"], cost["parse_fallbacks"]) == (2, 1824, 1)


@pytest.mark.parametrize("reply,expected", [
    ('```json\n{"selection": "1, 3", "determination": "sufficient"}\n```', {"selection": "1, 3", "determination": "sufficient"}),
    ('Here it is: {"answers": ["Guatemala"]} and more text', {"answers": ["Guatemala"]}),
    ('{"reasoning": "The triplets say \\"Guatemala\\" is in it", "answer": "Guate', {"reasoning": 'The triplets say "Guatemala" is in it'}),
    ('{"1": 0.9, "2": 0.1, "3": 0.', {"1": 0.9, "2": 0.1}),
    ("Guatemala", None), ('{"reasoning": "cut before any field ended', None),
])
def test_json_object_reads_fenced_embedded_and_truncated_replies(reply, expected):
    assert P.json_object(reply) == expected


def test_prompt_key_ignores_model_but_not_system_or_temperature():
    key = prompt_key("p", system=None, temperature=0)
    assert key == prompt_key("p", system=None, temperature=0.0) and len(key) == 64
    assert len({key, prompt_key("p", system="s", temperature=0), prompt_key("p", system=None, temperature=0.4),
                prompt_key("q", system=None, temperature=0)}) == 4


async def test_malformed_recording_names_the_file(tmp_path):
    key = prompt_key("p", system=None, temperature=0)
    (tmp_path / f"{key}.json").write_text("{not json")
    with pytest.raises(LLMError, match=f"{key}.json is malformed"):
        await ReplayLLM(tmp_path).complete("p", temperature=0)


# -- Anthropic provider: a hand-written Messages API exchange replayed by vcrpy --------------------
def _json_body(r1, r2) -> None:
    if json.loads(r1.body or b"null") != json.loads(r2.body or b"null"):
        raise AssertionError("different JSON body")


@pytest.fixture
def anthropic_cassette(monkeypatch):
    import vcr

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    recorder = vcr.VCR(record_mode="none", match_on=["method", "scheme", "host", "port", "path", "json_body"],
                       filter_headers=["x-api-key", "authorization"])
    recorder.register_matcher("json_body", _json_body)
    with recorder.use_cassette(str(RECORDINGS / "anthropic_messages.yaml")) as cassette:
        yield cassette


async def test_anthropic_provider_replays_the_messages_api(anthropic_cassette):
    llm = AnthropicLLM("claude-haiku-4-5", max_retries=0)
    prompt = P.tog_relation_prompt(QUESTION, "Alta Verapaz Department", ALTA_VERAPAZ_RELATIONS, 3)
    with track() as cost:
        reply = await llm.complete(prompt, temperature=EXPLORATION_TEMPERATURE, max_tokens=256, system=P.TOG_SYSTEM)
    await llm.aclose()
    assert anthropic_cassette.play_count == 1
    assert (reply.input_tokens, reply.output_tokens) == (689, 118) and dict(cost) == {"llm_calls": 1, "input_tokens": 689, "output_tokens": 118}
    assert P.parse_relation_scores(reply.text, ALTA_VERAPAZ_RELATIONS) == [
        ("location.administrative_division.country", 0.6), ("location.location.containedby", 0.3),
        ("base.aareas.schema.administrative_area.administrative_parent", 0.1)]
    sent = json.loads(anthropic_cassette.requests[0].body)
    assert "temperature" not in sent  # the 2026-10-21 API has no sampling parameters


async def test_anthropic_unrecorded_request_never_matches_silently(anthropic_cassette):
    llm = AnthropicLLM("claude-haiku-4-5", max_retries=0)
    with pytest.raises(LLMError, match="cannot reach the Anthropic API"):
        await llm.complete("a prompt nobody recorded", temperature=0, max_tokens=256, system=P.TOG_SYSTEM)
    await llm.aclose()
    assert anthropic_cassette.play_count == 0 and llm.usage.calls == 0
