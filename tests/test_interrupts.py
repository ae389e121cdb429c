"""Ctrl-C while a model is thinking: `kgfed run` stops at once, never waits for the reply.

A real llama.cpp server takes minutes per reply on 2 cores, so a run stopped mid-question must not
wait for it. The model server here is a stand-in on 127.0.0.1 in the OpenAI chat-completions shape
that holds every request open (as a slow model does); the run talks to it through the real
`openai:` provider. The run is started as a process of its own (not through a shell, which would
ignore SIGINT for background jobs) and interrupted while the request is pending.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from .conftest import CWQ_NT, CWQ_QUESTIONS, ROOT, need


class SlowModel(BaseHTTPRequestHandler):
    """`/v1/models` answers; a chat completion is received, then held until the test ends."""

    pending = threading.Event()
    release = threading.Event()

    def do_GET(self):  # noqa: N802
        body = b'{"object": "list", "data": [{"id": "slow-model", "object": "model"}]}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        SlowModel.pending.set()
        SlowModel.release.wait(120)

    def log_message(self, *args):
        pass


@pytest.fixture
def slow_model():
    SlowModel.pending.clear()
    SlowModel.release.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowModel)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    SlowModel.release.set()
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["int", "term"])
def test_a_pending_model_call_does_not_hold_up_ctrl_c(tmp_path, slow_model, stop):
    out = tmp_path / "preds.jsonl"
    argv = [sys.executable, "-m", "kgfed.engine.cli", "run", str(need(CWQ_QUESTIONS)), "--method", "tog",
            "--llm", f"openai:{slow_model}#slow-model", "--kg", "freebase", "--endpoint", f"freebase=file:{need(CWQ_NT)}",
            "--limit", "2", "--out", str(out), "--cache-dir", str(tmp_path / "cache"), "--no-progress"]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert SlowModel.pending.wait(120), "the run never asked the model"
        assert proc.poll() is None  # the request is pending: the model has not answered
        proc.send_signal(stop)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert not SlowModel.release.is_set()  # it ended while the model still held the request open
    assert not out.exists() or out.read_text() == ""  # no answer was invented for the pending question


# -- Ctrl-C at any moment of an LLM-free run: starting, loading the embedding model, answering ----------------
def _mapped(pid: int, library: str) -> bool:
    """Whether the process has loaded a shared library: `_asyncio` once kgfed's own code runs (Python's start-up
    before it is the interpreter's), the sentence model's runtime (`onnxruntime`, the default backend, or
    `libtorch`) once the model load is under way."""
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as maps:
            return library in maps.read()
    except OSError:
        return False


def _runtime_library() -> str:
    from kgfed.engine.toolbox import encoders

    return "libtorch" if encoders.backend() == "torch" else "onnxruntime"


def _answered(out) -> bool:
    return out.exists() and out.stat().st_size > 0


# (what to wait for, seconds after it): 2 while starting, 3 while the model loads, 3 while answering
MOMENTS = [("start", 0.0), ("start", 0.5), ("model", 0.0), ("model", 0.7), ("model", 2.0),
           ("answer", 0.0), ("answer", 0.4), ("answer", 1.5)]


@pytest.mark.parametrize("phase, after", MOMENTS, ids=[f"{p}+{a}s" for p, a in MOMENTS])
def test_ctrl_c_at_any_moment_exits_130_and_says_so_at_once(tmp_path, phase, after):
    """Every Ctrl-C ends with 130, its acknowledgement first on stderr and what was kept last; never torch's
    'terminate called without an active exception' (exit 134, or -6 from ONNX Runtime torn down under a running
    encoder thread) from encoder threads, never a traceback."""
    import time

    out = tmp_path / "preds.jsonl"
    argv = [sys.executable, "-m", "kgfed.engine.cli", "run", str(need(CWQ_QUESTIONS)), "--method", "tog", "--kg", "freebase",
            "--endpoint", f"freebase=file:{need(CWQ_NT)}", "--limit", "40", "--out", str(out),
            "--cache-dir", str(tmp_path / "cache"), "--no-progress"]  # a fresh cache: the model is loaded every time
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready = {"start": lambda: _mapped(proc.pid, "_asyncio"), "model": lambda: _mapped(proc.pid, _runtime_library()),
                 "answer": lambda: _answered(out)}[phase]
        deadline = time.monotonic() + 300
        while not ready() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(after)
        if proc.poll() is not None:
            proc.communicate()
            pytest.skip(f"the run finished before the {phase}+{after}s moment (a fast machine): nothing to interrupt")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    lines = err.strip().splitlines()
    assert proc.returncode == 130, err
    assert "terminate called" not in err and "Traceback" not in err, err
    assert lines[0].startswith("kgfed: stopping") and lines[-1].startswith("kgfed: interrupted"), err
    if out.exists():  # whatever was kept is whole ToG records
        for line in out.read_text(encoding="utf-8").splitlines():
            assert "results" in json.loads(line)
