"""A real model drives the agent (issue 37 item 4): Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, llama.cpp's server
from the xllamacpp wheel; ../shared/local-llm.md) recorded on 5 questions per tool profile, replayed here.

`tests/recordings/llm/agent-<profile>/` holds what `--llm record:DIR:local:MODEL` wrote (one `<chat_key>.json` a
reply: the conversation it answered, the tools, the reply's text and tool calls, its tokens), the recorded run's
predictions and per-question costs, and `sidecar.json` (the model file and its SHA-256, the runtime and its
settings, the exact command, when and how long, the load). No model runs here:

- each recorded run, replayed through the real CLI with `--llm replay:DIR`, writes the recorded predictions
  byte for byte, with the same LLM calls, tokens, tool calls, tool errors and turns per question;
- the recorded answers and tool-call counts are the ones written below (what the model did);
- every reply is named by its conversation (`chat_key`), and a recording stays small (< 1 MB).
"""
from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from kgfed.engine.toolbox.llm_base import Message
from kgfed.engine.toolbox.llm_replay import chat_key

from .conftest import ROOT, SHARED

LLM_DIR = ROOT / "tests" / "recordings" / "llm"
KGFED = Path(sys.executable).with_name("kgfed")
COST_KEYS = ("llm_calls", "input_tokens", "output_tokens", "tool_calls", "tool_errors", "agent_turns", "no_tool_call",
             "bad_tool_json", "unknown_tool")
REPLY = re.compile(r"[0-9a-f]{64}\.json")  # a reply's file: its chat_key
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"

# profile -> per question (in file order): (the answer written, tool calls made), as the model did when recorded
RECORDED: dict[str, list[tuple[str, int]]] = {
    # kgfed's own profile: the model planned in prose every turn (64 tokens) and called no tool: no answer
    "kgfed": [("{NULL}", 0), ("{NULL}", 0), ("{NULL}", 0), ("{NULL}", 0), ("{NULL}", 0)],
    # sog: a search a turn (on the topic entity, properties=["name"] or a guessed one), no answer within 3 turns
    "sog": [("{NULL}", 3), ("{NULL}", 3), ("{NULL}", 4), ("{NULL}", 3), ("{NULL}", 3)],
    # kg-r1: get_entities_out with a guessed relation (none found), then answer([]); once the topic entity itself
    "kg-r1": [("{NULL}", 2), ("{NULL}", 2), ("{NULL}", 2), ("{NULL}", 2), ("{Paul Ryan}", 3)],
    # wmde (5 federation questions, Wikidata alone): get_statements of the topic item, then sentences as answers
    "wmde": [("{NULL}", 3), ("{NULL}", 3),
             ("{Nick Cannon (Q348533) plays in the movie 'The Fast and the Furious' (Q11401) and the movie "
              "'Fast and Furious 2' (Q28389).}", 2),
             ("{David Beckham (Q10520) plays association football (Q2736)}", 2), ("{NULL}", 3)],
    # graphwalker: get_relations, get_triples, then the names the triples showed (Guatemala among them)
    "graphwalker": [("{Panama; Honduras; Guatemala; El Salvador; Costa Rica}", 3),
                    ("{Pittsburgh Steelers; 2011 AFC Championship Game}", 3),
                    ("{Ratty Nepalese; Indiana Jones and the Raiders of the Lost Ark}", 3), ("{Angelina Jolie}", 2),
                    ("{NULL}", 6)],
}


def _sidecars() -> list[tuple[str, Path, dict]]:
    return [(path.parent.name, path.parent, json.loads(path.read_text()))
            for path in sorted(LLM_DIR.glob("agent-*/sidecar.json"))]


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _costs(path: Path) -> dict[str, dict[str, float]]:
    return {row["id"]: {k: row.get("cost", row).get(k, 0) for k in COST_KEYS} for row in _rows(path)}


def test_every_profile_was_recorded_with_the_local_model():
    recorded = {sidecar["profile"] for _, _, sidecar in _sidecars()}
    assert recorded == set(RECORDED), "record with the command in a sidecar.json (docs/agent-tools.md)"
    for name, directory, sidecar in _sidecars():
        assert sidecar["model_sha256"] == MODEL_SHA256
        assert sidecar["model_file"] == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
        assert sidecar["runtime"] == "xllamacpp 2026.10.11549" and sidecar["settings"]["n_ctx"] == 4096
        assert sidecar["command"].startswith("kgfed run ") and f"--llm record:tests/recordings/llm/{name}:local:" in sidecar["command"]
        assert f"--param tools={sidecar['profile']}" in sidecar["command"]
        assert sum(p.stat().st_size for p in directory.iterdir()) < 1_000_000, f"{name}: keep a recording under 1 MB"
        assert len(_rows(directory / sidecar["predictions"])) >= 5


def test_every_reply_is_named_by_its_conversation():
    for name, directory, _ in _sidecars():
        replies = [json.loads(p.read_text()) for p in sorted(directory.glob("*.json")) if REPLY.fullmatch(p.name)]
        assert replies, name
        for reply in replies:
            messages = [Message.from_json(m) for m in reply["messages"]]
            assert reply["key"] == chat_key(messages, tools=reply["tools"], temperature=reply["temperature"], stop=reply.get("stop"))
            assert reply["provider"] == "local" and reply["output_tokens"] <= reply["max_tokens"]


@pytest.mark.parametrize("name,directory,sidecar", _sidecars(), ids=[n for n, _, _ in _sidecars()])
def test_replay_is_byte_identical_to_the_recorded_run(name, directory, sidecar, tmp_path):
    """The real CLI, replaying the recorded replies, writes the recorded predictions and costs."""
    if not SHARED.is_dir():
        pytest.skip(f"shared fixtures missing at {SHARED}")
    argv = shlex.split(sidecar["command"])[1:]
    out = tmp_path / "predictions.jsonl"
    argv[argv.index("--llm") + 1] = f"replay:{directory}"
    argv[argv.index("--out") + 1] = str(out)
    done = subprocess.run([str(KGFED), *argv], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    recorded = directory / sidecar["predictions"]
    assert out.read_bytes() == recorded.read_bytes()
    assert _costs(tmp_path / "predictions.costs.jsonl") == _costs(recorded.with_name(recorded.stem + ".costs.jsonl"))
    rows = _rows(recorded)
    costs = _costs(recorded.with_name(recorded.stem + ".costs.jsonl"))
    assert [(row["results"], costs[row["id"]]["tool_calls"]) for row in rows] == RECORDED[sidecar["profile"]]


def test_bare_json_calls_are_the_models_calls():
    """Told to reply with calls only, the local model dropped Qwen's <tool_call> tags (its replies, verbatim): the
    whole objects are its calls, in order; the one its reply cap cut off is none; plain JSON is no call."""
    from kgfed.engine.toolbox.llm_tools import read_tool_calls

    cut = ('{"name": "search", "arguments": {"entity": "m.01tzh", "direction": "incoming", "properties": ["name"]}}\n'
           '{"name": "search')
    assert [(c.name, json.loads(c.arguments)) for c in read_tool_calls(cut)] == [
        ("search", {"entity": "m.01tzh", "direction": "incoming", "properties": ["name"]})]
    assert [(c.name, c.arguments) for c in read_tool_calls('{"name": "answer", "arguments": {"answers": ["m.01tzh"]}}')] == [
        ("answer", '{"answers": ["m.01tzh"]}')]
    assert read_tool_calls('{"entity": "m.01tzh"} and {"name": "x"}') == ()
    tagged = read_tool_calls('<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>\n{"name": "b", "arguments": {}}')
    assert [c.name for c in tagged] == ["a"]  # tags, when written, are the protocol
