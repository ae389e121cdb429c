"""A local GGUF model as an LLM provider: `--llm local:PATH.gguf`.

kgfed starts llama.cpp's own OpenAI-compatible server (the `xllamacpp` wheel, extra `local`) in a
child process bound to 127.0.0.1, waits for its `/health`, talks to it through
`OpenAICompatibleLLM`, and stops it by its own PID when the provider is closed (or at exit). The
server runs in a child, not on a thread of this process, because llama.cpp's server thread only
ends with the process: a child can be stopped without taking kgfed down with it.

    llm = make_llm("local:models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
    async with llm:
        reply = await llm.complete("Q: ...", temperature=0, max_tokens=64, stop=["\\nQ:"])

Settings that matter on a small shared CPU (see ../shared/local-llm.md): `OMP_WAIT_POLICY=PASSIVE`
(set for the child), a thread count no larger than the cores (`threads`, default: all cores), one
slot (`n_parallel=1`, so the whole context serves one prompt and its prefix is reused), greedy
sampling when the caller asks for temperature 0. `examples/assemble_local_model.py` builds the GGUF.
With `--llm-concurrency N` (`LLM.limit`) the server gets N slots of `n_ctx` tokens each, so N
prompts are decoded together in one batch (faster per prompt on a GPU or many cores; on 2 cores
about the same total speed).
"""
from __future__ import annotations

import argparse
import asyncio
import atexit
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ...sparql.errors import LLMError
from .llm import OpenAICompatibleLLM

HEALTH_TIMEOUT = 180.0  # loading 1.1 GB from a cold page cache on a busy machine


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LocalLLM(OpenAICompatibleLLM):
    """A GGUF file served by a llama.cpp child process on 127.0.0.1 for as long as this provider lives."""

    name = "local"
    native_tools = False  # llama.cpp's server takes `tools` only with --jinja: tool calls go as Qwen2.5's text (llm_tools)

    def __init__(self, model_path: str | os.PathLike, *, threads: int | None = None, n_ctx: int = 4096,
                 port: int | None = None, health_timeout: float = HEALTH_TIMEOUT, timeout: float = 600.0,
                 parallel: int = 1):
        path = Path(model_path).expanduser()
        if not path.is_file():
            raise LLMError(f"no model file at {path}: build it with `python examples/assemble_local_model.py {path}`")
        try:
            import xllamacpp  # noqa: F401  (checked here so the error comes before any work)
        except ImportError:
            raise LLMError("the local LLM runtime is not installed: pip install 'kgfed[local]' (the xllamacpp wheel)") from None
        self.model_path = path.resolve()
        self.threads = int(threads or os.environ.get("KGFED_LOCAL_THREADS") or os.cpu_count() or 2)
        if self.threads < 1 or n_ctx < 256:
            raise LLMError(f"bad local model settings (threads={self.threads}, n_ctx={n_ctx}): threads >= 1, n_ctx >= 256")
        self.n_ctx = n_ctx
        self.parallel = max(1, int(parallel))
        self.port = port or _free_port()
        self.health_timeout = health_timeout
        super().__init__(f"http://127.0.0.1:{self.port}", self.model_path.name, timeout=timeout)
        self._process: subprocess.Popen | None = None
        self._log = Path(tempfile.gettempdir()) / f"kgfed-llama-{self.port}.log"
        self._start_lock = asyncio.Lock()

    @property
    def settings(self) -> dict[str, object]:
        """What a recording's sidecar should name: the runtime and its settings."""
        import xllamacpp

        return {"runtime": "xllamacpp", "runtime_version": getattr(xllamacpp, "__version__", "unknown"),
                "model_file": self.model_path.name, "threads": self.threads, "n_ctx": self.n_ctx, "n_parallel": self.parallel,
                "omp_wait_policy": "PASSIVE"}

    def limit(self, concurrency: int | None) -> None:
        """The gate's cap, and as many server slots (each of `n_ctx` tokens); before the server starts."""
        super().limit(concurrency)
        self.parallel = max(1, concurrency or 1)

    async def start(self) -> None:
        """Spawn the server (once) and wait until `/health` answers 200."""
        async with self._start_lock:
            if self._process is not None and self._process.poll() is None:
                return
            command = [sys.executable, "-m", "kgfed.engine.toolbox.local_llm", str(self.model_path), "--port", str(self.port),
                       "--threads", str(self.threads), "--ctx", str(self.n_ctx), "--parallel", str(self.parallel)]
            env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
            with open(self._log, "wb") as log:
                self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                                 stdin=subprocess.DEVNULL, start_new_session=True)
            atexit.register(self._kill)
            await self._wait_healthy()

    async def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.health_timeout
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                raise LLMError(f"the local model server exited while loading {self.model_path.name}: {self._last_log_line()}")
            try:
                response = await self._http().request("GET", f"http://127.0.0.1:{self.port}/health", timeout=5)
                if response.status == 200:
                    return
            except Exception:  # not listening yet: the connection is refused until the model is loaded
                pass
            await asyncio.sleep(0.5)
        self._kill()
        raise LLMError(f"the local model server did not become healthy in {self.health_timeout:.0f} s "
                       f"(log {self._log}): free memory/CPU or raise the timeout")

    def _last_log_line(self) -> str:
        try:
            lines = [line for line in self._log.read_text(errors="replace").splitlines() if line.strip()]
        except OSError:
            return "no log"
        return lines[-1][:200] if lines else "no output"

    async def _complete(self, prompt: str, *, temperature: float, max_tokens: int, system: str | None,
                        stop: list[str] | None = None):
        await self.start()
        return await super()._complete(prompt, temperature=temperature, max_tokens=max_tokens, system=system, stop=stop)

    async def _chat(self, messages, *, tools, temperature: float, max_tokens: int, stop: list[str] | None = None):
        await self.start()  # a tool conversation (the agent method) starts the server too
        return await super()._chat(messages, tools=tools, temperature=temperature, max_tokens=max_tokens, stop=stop)

    def _kill(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()  # its own PID only: the server exits on SIGTERM
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)

    async def aclose(self) -> None:
        self._kill()
        await super().aclose()


def serve(model: str, port: int, threads: int, n_ctx: int, parallel: int = 1) -> None:
    """Run llama.cpp's server on 127.0.0.1:PORT until SIGTERM (the child side of `LocalLLM`); `parallel` slots of `n_ctx`."""
    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = model
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = n_ctx * parallel  # llama.cpp splits the context among the slots
    params.n_parallel = parallel
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.n_batch = 512
    params.n_ubatch = 512
    params.offline = True
    params.sampling.temp = 0.0
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))  # the server thread never returns on its own
    server = xlc.Server(params)  # noqa: F841  (serves while referenced)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="serve a GGUF with llama.cpp on 127.0.0.1 (used by --llm local:PATH)")
    parser.add_argument("model")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--parallel", type=int, default=1)
    options = parser.parse_args()
    serve(options.model, options.port, options.threads, options.ctx, options.parallel)
