"""The training frameworks' adapters of `kgfed serve`: a SkyRL-Gym episode end to end through the installed
package's own registry and base class against a real `kgfed serve` process; the reward is the harness's scoring.
verl 0.9.1 cannot be installed beside the locked dependencies (transformers < 5.11; docs/serve.md): its test runs
where verl is installed."""
from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kgfed.engine.serve.adapters.reward import score
from kgfed.sparql.errors import KgfedError

KGFED = str(Path(sys.executable).with_name("kgfed"))
GOLD = {"answers": ["University of Cambridge"], "answer_ids": {"wikidata": ["Q35794"]}}
EPISODE = {"question": "Where was Douglas Adams educated?", "topics": {"Q42": "Douglas Adams"},
           "reward_spec": {"ground_truth": GOLD}, "max_turns": 5}


@pytest.fixture(scope="module")
def server_url():
    proc = subprocess.Popen([KGFED, "serve", "--port", "0", "--no-cache"], stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    found = re.search(r"http://127\.0\.0\.1:(\d+)", proc.stderr.readline())
    assert found
    yield f"http://127.0.0.1:{found.group(1)}"
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=10)
    proc.stderr.close()


def test_the_reward_is_the_harness_scoring():
    assert score({"names": ["University of Cambridge"], "ids": ["Q35794"]}, GOLD, "em") == 1.0
    assert score({"names": ["Cambridge University Press"], "ids": ["Q912887"]}, GOLD, "em") == 0.0
    assert score({"names": ["University of Cambridge", "St John's College"], "ids": ["Q35794", "Q691283"]}, GOLD,
                 "f1") == pytest.approx(2 / 3)
    assert score({"names": ["St John's College", "University of Cambridge"], "ids": []}, GOLD, "hits1") == 0.0
    assert score({"names": ["university of cambridge"], "ids": []}, GOLD, "hits1") == 1.0
    assert score(None, GOLD, "f1") == 0.0
    with pytest.raises(KgfedError, match="unknown reward metric"):
        score(None, GOLD, "bleu")


def test_a_skyrl_gym_episode_end_to_end(server_url):
    skyrl_gym = pytest.importorskip("skyrl_gym", reason="the train extra is not installed (pip install 'kgfed[train]')")
    from skyrl_gym.envs.registration import register, registry
    from skyrl_gym.envs.base_text_env import BaseTextEnv

    if "kgfed-test" not in registry:
        register(id="kgfed-test", entry_point="kgfed.engine.serve.adapters.skyrl:KgfedTextEnv")
    env = skyrl_gym.make("kgfed-test", env_config={"url": server_url, "profile": "kgfed", "metric": "f1"}, extras=EPISODE)
    assert isinstance(env, BaseTextEnv)
    prompt, info = env.init([])
    assert prompt[0]["role"] == "system" and "<tools>" in prompt[0]["content"] and '"name": "neighbors"' in prompt[0]["content"]
    assert prompt[1] == {"role": "user", "content": "Question: Where was Douglas Adams educated?\nTopic entities: Q42 (Douglas Adams)"}
    out = env.step("I look first.\n<tool_call>\n{\"name\": \"relations\", \"arguments\": {\"entity\": \"Q42\"}}\n</tool_call>")
    assert not out["done"] and out["reward"] == 0.0 and "-> P69: educated at" in out["observations"][0]["content"]
    out = env.step("<tool_call>{\"name\": \"neighbors\", \"arguments\": {\"entity\": 42}}</tool_call>")  # a bad call
    assert not out["done"] and "error: neighbors: missing argument(s) relation" in out["observations"][0]["content"]
    out = env.step("<tool_call>{\"name\": \"neighbors\", \"arguments\": {\"entity\": \"Q42\", \"relation\": \"P69\"}}</tool_call>")
    assert "Q35794: University of Cambridge" in out["observations"][0]["content"]
    out = env.step("<tool_call>{\"name\": \"answer\", \"arguments\": {\"answers\": [\"Q35794\"]}}</tool_call>")
    assert out["done"] and out["reward"] == 1.0 and out["observations"] == []
    assert env.get_metrics() == {"tool_calls": 4, "tool_errors": 1, "answered": 1.0, "reward": 1.0}
    env.close()


def test_a_skyrl_gym_episode_without_an_answer_ends_at_the_turn_budget_with_reward_zero(server_url):
    pytest.importorskip("skyrl_gym", reason="the train extra is not installed (pip install 'kgfed[train]')")
    from kgfed.engine.serve.adapters.skyrl import KgfedTextEnv

    env = KgfedTextEnv({"url": server_url, "metric": "em"}, {**EPISODE, "max_turns": 2})
    env.init([])
    first = env.step("no tool call here")
    assert not first["done"] and first["observations"][0]["content"].startswith("<tool_response>\nerror: no tool call")
    last = env.step("<tool_call>{\"name\": \"relations\", \"arguments\": {\"entity\": \"Q42\"}}</tool_call>")
    assert last["done"] and last["reward"] == 0.0
    env.close()


async def test_a_verl_tool_episode(server_url):
    pytest.importorskip("verl.tools.base_tool", reason="verl 0.9.1 conflicts with the locked transformers (docs/serve.md)")
    from verl.tools.base_tool import BaseTool

    from kgfed.engine.serve.adapters.verl import KgfedVerlTool

    tools = {name: KgfedVerlTool({"url": server_url, "profile": "kgfed", "tool": name, "metric": "em"}, None)
             for name in ("relations", "neighbors", "answer")}
    assert all(isinstance(t, BaseTool) for t in tools.values())
    kwargs = {"create_kwargs": {"question": EPISODE["question"], "topics": EPISODE["topics"], "ground_truth": GOLD,
                                "rollout_id": "verl-1"}}
    ids = {name: (await tool.create(None, **kwargs))[0] for name, tool in tools.items()}
    reply, step, _ = await tools["neighbors"].execute(ids["neighbors"], {"entity": "Q42", "relation": "P69"})
    assert "Q35794: University of Cambridge" in reply.text and step == 0.0
    await tools["answer"].execute(ids["answer"], {"answers": ["Q35794"]})
    assert await tools["answer"].calc_reward(ids["answer"]) == 1.0
    for name, tool in tools.items():
        await tool.release(ids[name])
        await tool.client.aclose()
