"""Ctrl-C while a model is thinking: `kgfed run` stops at once, never waits for the reply.

A real llama.cpp server takes minutes per reply on 2 cores, so a run stopped mid-question must not
wait for it. The model server here is a stand-in on 127.0.0.1 in the OpenAI chat-completions shape
that holds every request open (as a slow model does); the run talks to it through the real
`openai:` provider. The run is started as a process of its own (not through a shell, which would
ignore SIGINT for background jobs) and interrupted while the request is pending.
"""
from __future__ import annotations

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
