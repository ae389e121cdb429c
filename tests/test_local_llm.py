"""`--llm local:PATH.gguf` and stop sequences.

The real-model test starts llama.cpp's server from the `xllamacpp` wheel on the GGUF named by
KGFED_LOCAL_MODEL (build it with examples/assemble_local_model.py); without it the test skips, as
the model is 1.1 GB and too slow for CI. Everything else runs everywhere.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kgfed.engine.toolbox.llm import make_llm, prompt_key
from kgfed.sparql.errors import LLMError

from .test_llm import openai_server  # noqa: F401  (the fixture: a local OpenAI-shaped server)

MODEL = os.environ.get("KGFED_LOCAL_MODEL")


def test_missing_model_file_is_one_line_with_the_fix(tmp_path):
    with pytest.raises(LLMError) as info:
        make_llm(f"local:{tmp_path / 'nope.gguf'}")
    message = str(info.value)
    assert message.startswith(f"no model file at {tmp_path / 'nope.gguf'}") and "assemble_local_model.py" in message
    assert "\n" not in message


async def test_stop_sequences_reach_the_server_and_the_replay_key(openai_server, tmp_path):  # noqa: F811
    url, seen = openai_server
    async with make_llm(f"record:{tmp_path}:openai:{url}#Qwen2-7B-Instruct") as llm:
        await llm.complete("Q: capital of France?\nA:", temperature=0, max_tokens=16, stop=["\nQ:"])
        await llm.complete("Q: capital of France?\nA:", temperature=0, max_tokens=16)  # no stop: another recording
    assert seen[0]["body"]["stop"] == ["\nQ:"] and "stop" not in seen[1]["body"]
    with_stop = prompt_key("Q: capital of France?\nA:", system=None, temperature=0, stop=["\nQ:"])
    without = prompt_key("Q: capital of France?\nA:", system=None, temperature=0)
    assert with_stop != without
    assert json.loads((tmp_path / f"{with_stop}.json").read_text())["stop"] == ["\nQ:"]
    assert "stop" not in json.loads((tmp_path / f"{without}.json").read_text())


async def test_no_llm_still_refuses_with_stop_sequences():
    with pytest.raises(LLMError, match="needs an LLM but none is configured"):
        await make_llm("none").complete("hi", temperature=0, stop=["\n"])


@pytest.mark.skipif(not MODEL or not Path(MODEL).is_file(), reason="set KGFED_LOCAL_MODEL to a GGUF (examples/assemble_local_model.py)")
async def test_real_local_model_answers_stops_and_is_stopped_by_pid():
    llm = make_llm(f"local:{MODEL}")
    async with llm:
        reply = await llm.complete("Q: What is the capital of France?\nA:", temperature=0, max_tokens=40, stop=["\nQ:"])
        pid = llm._process.pid
        assert "Paris" in reply.text and "Q:" not in reply.text
        assert reply.input_tokens > 5 and 0 < reply.output_tokens < 40
        assert llm.settings["threads"] >= 1 and llm.settings["model_file"] == Path(MODEL).name
    assert llm._process is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
