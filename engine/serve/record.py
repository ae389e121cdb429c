"""Replayable rollouts: every tool call's answer recorded, and played back byte for byte without a KG.

`kgfed serve --record-calls DIR` appends each answer to `DIR/calls.jsonl` (one JSON line: `key`, `tool`,
`status`, `body`, the body being the exact JSON text the server sent); `kgfed serve --replay-calls DIR`
answers from those lines only (nothing reaches a KG; a call never recorded is a one-line 409 error).

A call's key is content-addressed, so a re-run of an RL evaluation replays whatever its rollout ids are:
a rollout's chain starts at `start_key(profile, question, topics)` and each call extends it with
`chain_key(previous, tool, arguments)`. The same question asked with the same calls in the same order
meets the same keys (a tool's text may depend on what the rollout was shown before: the chain holds that
too). Calls without a rollout share one chain start (profile only), so each is keyed by itself alone.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

from ...sparql.errors import KgfedError

__all__ = ["Recorder", "Replayer", "chain_key", "start_key"]

FILE = "calls.jsonl"


def _canonical(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)


def start_key(profile: str, question: str, topics: Any) -> str:
    """The key a rollout's chain starts from."""
    return hashlib.sha256(_canonical(["start", profile, question, topics]).encode()).hexdigest()


def chain_key(previous: str, tool: str, arguments: Any) -> str:
    """The key of a call following `previous` in its rollout."""
    return hashlib.sha256(_canonical([previous, tool, arguments]).encode()).hexdigest()


def body_text(data: Any) -> str:
    """The one JSON text of an answer (sorted keys, no spaces): what the server sends and the recording keeps."""
    return json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


class Recorder:
    """Appends every answer to DIR/calls.jsonl (a line per call, flushed as written)."""

    def __init__(self, directory: str):
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        self.path = path / FILE
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (kept open for the server's life)
        self._lock = threading.Lock()

    def write(self, key: str, tool: str, status: int, data: Any) -> None:
        line = _canonical({"key": key, "tool": tool, "status": status, "body": body_text(data)})
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                os.fsync(self._file.fileno())
                self._file.close()


class Replayer:
    """Answers from DIR/calls.jsonl (see the module docstring)."""

    def __init__(self, directory: str):
        path = Path(directory) / FILE
        if not path.is_file():
            raise KgfedError(f"--replay-calls {directory}: no {FILE} there: record one with --record-calls {directory}")
        self.answers: dict[str, tuple[int, str]] = {}
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    item = json.loads(line)
                    self.answers[item["key"]] = (int(item["status"]), str(item["body"]))
                except (ValueError, KeyError, TypeError):
                    if line.endswith("\n"):  # a torn last line (the recorder was killed) is skipped
                        raise KgfedError(f"--replay-calls {directory}: line {number} of {FILE} is not a recorded call: "
                                         "record it again") from None

    def answer(self, key: str, tool: str) -> dict[str, Any]:
        from .core import ServeError

        found = self.answers.get(key)
        if found is None:
            raise ServeError(f"{tool}: this call was not recorded (replay answers only the calls of the recorded "
                             "rollouts, in their order): record it with --record-calls", 409)
        status, body = found
        data = json.loads(body)
        if status != 200:
            raise ServeError(data.get("error", "recorded error"), status)
        return data
