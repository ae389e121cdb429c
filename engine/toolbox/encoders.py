"""Inference backends for the sentence model: PyTorch (sentence-transformers) or ONNX Runtime.

`$KGFED_EMBEDDINGS_BACKEND` chooses how `embeddings.py` runs all-MiniLM-L6-v2:

- `torch`: `SentenceTransformer(model_dir)`, as before 0.3.
- `onnx` (the default since the six methods' predictions on the shared fixtures were found identical
  on both backends: docs/benchmarks.md): the same network exported once to ONNX (fp32) and run by ONNX Runtime, with the model's own
  fast tokenizer (`tokenizers`), mean pooling and L2 normalisation done here in numpy. Neither torch
  nor transformers is imported to encode: a cold process starts encoding after a 0.5 s import instead
  of torch's 13 s (load 10, 2 cores). Vectors agree with torch's to a cosine of 0.9999999 (not bit
  for bit: the float sums run in another order).
- `onnx-int8`: the ONNX model with its weights dynamically quantised to int8 (per channel): about
  1.6-1.9x the texts a second of fp32 on an AVX2 CPU, but vectors only within a cosine of about 0.985
  of torch's, which can reorder close candidates. Opt-in. Dynamic quantisation scales a forward pass's
  activations by their range over the whole batch, so a text's int8 vector depends on the texts batched
  with it (by up to 0.03 a component, measured): this backend encodes every text alone, so that a text
  has one vector however and whenever it is asked for (about 8 % fewer texts a second than batches).

Sentence-transformers' own `backend="onnx"` needs `optimum-onnx`, whose releases pin transformers < 4.58
(kgfed has 5.x), so the export is done here with `torch.onnx.export` (the TorchScript exporter) from the
installed weights, offline, and quantised with `onnxruntime.quantization.quantize_dynamic`. The export
runs once per model and is kept under `$KGFED_ENCODER_DIR` (default `~/.cache/kgfed/encoders`, outside
any one run's `--cache-dir`, so fresh-cache runs do not export again), written atomically (a temporary
file renamed into place), with a progress line on stderr.

An encoder object has the slice of `SentenceTransformer`'s interface that `embeddings.encode_texts`
uses: `encode(texts, batch_size=..., normalize_embeddings=True, convert_to_numpy=True,
show_progress_bar=False)`, optionally `batches(texts, batch_size)` (the forward passes it would make; else
longest first by characters, as `SentenceTransformer.encode`) with `encode_pass(texts)` (one of them), plus `uses_torch` (whether torch's thread limit
applies) and `replica()` (another encoder for a concurrent encoding: ONNX replicas share one session,
whose `run` is thread-safe).
"""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...sparql.errors import KgfedError

if TYPE_CHECKING:
    import numpy as np

BACKEND_ENV = "KGFED_EMBEDDINGS_BACKEND"
BACKENDS = ("torch", "onnx", "onnx-int8")
DEFAULT_BACKEND = "onnx"  # chosen by measurement: same predictions, 2x faster cold (docs/benchmarks.md)
ENCODER_DIR_ENV = "KGFED_ENCODER_DIR"
THREADS_ENV = "KGFED_TORCH_THREADS"  # threads per encoding, for either runtime (default 1)
ONNX_HINT = "pip install -c requirements.lock -e '.[embeddings]' (onnxruntime, onnx)"
OPSET = 17
# A forward pass's own cost in tokens' worth of compute: on this 2-core AVX2 machine (one thread, quiet) a
# pass of one 8-token text took 4.2 ms against 0.26 ms a token in large passes, one of 32 tokens 10.1 ms
# (bench/encoders.py `passes`). What `least_padding` weighs padding against.
PASS_COST_TOKENS = 7
# How many exports ran in this process (the tests check that a second load reuses the file).
exports = 0


class _InFlight:
    """ONNX Runtime calls in flight, so the interpreter's exit waits for them.

    Encodings run in daemon threads (a Ctrl-C must not wait for them, see `embeddings._in_daemon_thread`).
    An ONNX Runtime call still running while the interpreter tears its modules down aborts the process
    (C++ `terminate`, exit -6, instead of a Ctrl-C's 130). At exit, new calls are refused and the ones
    running are waited for (one batch: milliseconds; at most `EXIT_WAIT` seconds). The CLI's
    `embeddings.settle()` (joining the encoding threads it knows) was measured not to be enough for ONNX
    Runtime: interrupted runs still aborted, so the guard sits at the runtime's own calls."""

    EXIT_WAIT = 10.0

    def __init__(self) -> None:
        self.count = 0
        self.exiting = False
        self.changed = threading.Condition()

    def __enter__(self) -> None:
        with self.changed:
            if self.exiting:
                raise KgfedError("the process is exiting: no more sentence encoding")
            self.count += 1

    def __exit__(self, *exc: object) -> None:
        with self.changed:
            self.count -= 1
            self.changed.notify_all()

    def drain(self) -> None:
        with self.changed:
            self.exiting = True
            self.changed.wait_for(lambda: self.count == 0, timeout=self.EXIT_WAIT)


_in_flight = _InFlight()
atexit.register(_in_flight.drain)


def backend() -> str:
    """The chosen backend: $KGFED_EMBEDDINGS_BACKEND (torch, onnx or onnx-int8), else the default."""
    raw = os.environ.get(BACKEND_ENV, "").strip().lower()
    if not raw:
        return DEFAULT_BACKEND
    if raw not in BACKENDS:
        raise KgfedError(f"{BACKEND_ENV}={raw!r} is not a backend: use one of {', '.join(BACKENDS)}, or unset it")
    return raw


def encoder_dir() -> Path:
    """Where exported models are kept: $KGFED_ENCODER_DIR, else ~/.cache/kgfed/encoders."""
    raw = os.environ.get(ENCODER_DIR_ENV, "").strip()
    if raw:
        return Path(raw).expanduser()
    from ...cache.root import home_root

    return home_root() / "encoders"


def _threads() -> int:
    raw = os.environ.get(THREADS_ENV, "").strip() or "1"
    if not raw.isdigit() or int(raw) < 1:
        raise KgfedError(f"{THREADS_ENV}={raw!r} is not a whole number ≥ 1: unset it or give e.g. 2")
    return int(raw)


def load(model_dir: str | os.PathLike, which: str) -> Any:
    """An encoder for the sentence-transformers model in `model_dir` on backend `which`."""
    if which == "torch":
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(str(model_dir))
    int8 = which == "onnx-int8"
    return OnnxEncoder(Path(model_dir), onnx_file(Path(model_dir), int8=int8), alone=int8)


def replica(model: Any, model_dir: str | os.PathLike) -> Any:
    """Another encoder like `model` for a concurrent encoding."""
    if isinstance(model, OnnxEncoder):
        return model.replica()
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(model_dir))


def _fingerprint(model_dir: Path) -> str:
    """Names a model's exports: its directory and its weights' size and mtime (a reinstall exports again)."""
    weights = [p for p in (model_dir / "model.safetensors", model_dir / "pytorch_model.bin") if p.is_file()]
    stamp = [str(model_dir.resolve())] + [f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in weights]
    return hashlib.sha256("\n".join(stamp).encode()).hexdigest()[:16]


def onnx_file(model_dir: Path, int8: bool = False) -> Path:
    """The exported ONNX model of `model_dir` (fp32 or int8), exporting it first when not kept yet."""
    _check_onnx_installed()
    target_dir = encoder_dir() / f"{model_dir.name}-{_fingerprint(model_dir)}"
    fp32 = target_dir / "model.onnx"
    if not fp32.is_file():
        _export(model_dir, fp32)
    if not int8:
        return fp32
    quantised = target_dir / "model-int8.onnx"
    if not quantised.is_file():
        _quantise(fp32, quantised)
    return quantised


def _check_onnx_installed() -> None:
    import importlib.util

    for module, what in (("onnxruntime", "onnxruntime"), ("tokenizers", "tokenizers")):
        if importlib.util.find_spec(module) is None:
            raise KgfedError(f"{BACKEND_ENV}={backend()} needs {what}, which is not installed: {ONNX_HINT}, "
                             f"or set {BACKEND_ENV}=torch")


def _say(message: str) -> None:
    print(f"kgfed: {message}", file=sys.stderr, flush=True)


def _export(model_dir: Path, target: Path) -> None:
    """Export the transformer of `model_dir` to `target` (fp32 ONNX, dynamic batch and length), offline."""
    global exports
    import importlib.util

    if importlib.util.find_spec("onnx") is None:
        raise KgfedError(f"exporting the sentence model to ONNX needs the onnx package: {ONNX_HINT}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    target.parent.mkdir(parents=True, exist_ok=True)
    _say(f"exporting the sentence model to ONNX, once (about 10-30 s): {target}")
    started = time.monotonic()
    import warnings

    import torch
    from transformers import AutoModel

    # Eager attention: the traced graph then applies the attention mask as data. (SDPA's path decides
    # in Python whether a mask is needed, which a trace would freeze.)
    network = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()

    class LastHiddenState(torch.nn.Module):
        def __init__(self, inner) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    ids = torch.tensor([[101, 2054, 2003, 1996, 3007, 1997, 2605, 102], [101, 7592, 2088, 102, 0, 0, 0, 0]])
    mask = (ids != 0).long()
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(LastHiddenState(network), (ids, mask, torch.zeros_like(ids)), str(partial),
                              input_names=names, output_names=["last_hidden_state"],
                              dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]},
                              opset_version=OPSET, dynamo=False)
        os.replace(partial, target)  # atomic: a concurrent process sees no file or a whole one
    finally:
        partial.unlink(missing_ok=True)
    exports += 1
    _say(f"exported the sentence model to ONNX in {time.monotonic() - started:.1f} s")


def _quantise(source: Path, target: Path) -> None:
    """Dynamic int8 quantisation of `source` (weights per output channel) into `target`."""
    global exports
    import logging

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    _say(f"quantising the ONNX sentence model to int8, once: {target}")
    started = time.monotonic()
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # quantize_dynamic warns about pre-processing on the root logger
    try:
        quantize_dynamic(str(source), str(partial), weight_type=QuantType.QInt8, per_channel=True,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        os.replace(partial, target)
    finally:
        root.setLevel(level)
        partial.unlink(missing_ok=True)
    exports += 1
    _say(f"quantised the sentence model in {time.monotonic() - started:.1f} s")


def least_padding(lengths: Sequence[int], most: int, pass_cost: float) -> list[range]:
    """Consecutive groups of `lengths` (sorted longest first), at most `most` each, that compute the fewest
    tokens: a group costs `pass_cost` plus its size times its first (longest) length. Dynamic programming,
    O(len(lengths) * most)."""
    n = len(lengths)
    best = [0.0] + [float("inf")] * n
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        for i in range(max(0, j - most), j):
            cost = best[i] + pass_cost + (j - i) * lengths[i]
            if cost < best[j]:
                best[j], cut[j] = cost, i
    groups: list[range] = []
    while n:
        groups.append(range(cut[n], n))
        n = cut[n]
    return groups[::-1]


class OnnxEncoder:
    """all-MiniLM-style sentence encoding on ONNX Runtime: tokenizer -> transformer -> mean pooling -> L2.

    Reads the sentence-transformers directory's `modules.json`, `sentence_bert_config.json` (max length)
    and `1_Pooling/config.json`; a model that is not Transformer + mean Pooling (+ Normalize) is refused
    with a one-line error naming the torch backend."""

    uses_torch = False

    def __init__(self, model_dir: Path, onnx_path: Path, *, alone: bool = False, _shared: tuple | None = None) -> None:
        self.model_dir, self.onnx_path = model_dir, onnx_path
        self.alone = alone  # one text a forward pass (a quantised model's vectors depend on the batch)
        if _shared is not None:
            self.session, self.tokenizer, self.normalise, self.inputs = _shared
            return
        import onnxruntime as ort
        from tokenizers import Tokenizer

        modules = [m.get("type", "") for m in json.loads((model_dir / "modules.json").read_text())]
        pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text()) if (model_dir / "1_Pooling" / "config.json").is_file() else {}
        modes = {k for k, v in pooling.items() if k.startswith("pooling_mode_") and v}
        if not modules or not modules[0].endswith("Transformer") or modes != {"pooling_mode_mean_tokens"}:
            raise KgfedError(f"{model_dir} is not a Transformer with mean pooling, which the ONNX backend runs: "
                             f"set {BACKEND_ENV}=torch")
        self.normalise = any(m.endswith("Normalize") for m in modules)
        config = model_dir / "sentence_bert_config.json"
        max_length = json.loads(config.read_text()).get("max_seq_length", 256) if config.is_file() else 256
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tokenizer.enable_truncation(max_length)
        pad_id = tokenizer.token_to_id("[PAD]")
        tokenizer.enable_padding(pad_id=pad_id if pad_id is not None else 0, pad_token="[PAD]")
        options = ort.SessionOptions()
        options.intra_op_num_threads = _threads()
        options.inter_op_num_threads = 1
        with _in_flight:
            self.session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.tokenizer = tokenizer

    def replica(self) -> OnnxEncoder:
        """An encoder sharing this one's session and tokenizer (both safe to use from several threads)."""
        return OnnxEncoder(self.model_dir, self.onnx_path, alone=self.alone,
                           _shared=(self.session, self.tokenizer, self.normalise, self.inputs))

    def _input_length(self, text: str) -> int:
        """The text's length in tokens (what its forward pass computes)."""
        return len(self.tokenizer.encode(text).ids)

    def batches(self, texts: Sequence[str], batch_size: int) -> list[list[int]]:
        """Positions of `texts` grouped into forward passes: longest first by tokens, at most `batch_size` a
        pass, cut where padding the shorter texts to a pass's longest would cost more than another pass.

        ONNX Runtime's CPU kernels give a text the same vector, bit for bit, whatever else is in its pass and
        however far the pass is padded (tests/test_encoders.py checks it), so the grouping is free to
        minimise the tokens computed. Sorted by characters in fixed batches (as `SentenceTransformer.encode`
        does), 40 CWQ questions' calls computed 1.43x their real tokens for ToG and 1.17x for PoG."""
        return self.plan(texts, batch_size)[0]

    def plan(self, texts: Sequence[str], batch_size: int) -> tuple[list[list[int]], list[int]]:
        """`batches`, and each text's length in tokens (what its passes compute: the work a cost counts)."""
        lengths = [self._input_length(t) for t in texts]
        if self.alone:
            return [[i] for i in range(len(texts))], lengths
        order = sorted(range(len(texts)), key=lambda i: -lengths[i])
        groups = least_padding([lengths[i] for i in order], batch_size, PASS_COST_TOKENS)
        return [[order[k] for k in group] for group in groups], lengths

    def encode(self, texts: str | Sequence[str], batch_size: int = 32, normalize_embeddings: bool = False,
               convert_to_numpy: bool = True, show_progress_bar: bool = False) -> np.ndarray:
        """(n, dim) float32 sentence vectors of `texts` in order, in the passes `batches` forms."""
        import numpy as np

        single = isinstance(texts, str)
        listed: list[str] = [texts] if isinstance(texts, str) else list(texts)
        out: list = [None] * len(listed)
        for rows in self.batches(listed, batch_size):
            block = self.encode_pass([listed[i] for i in rows], normalize_embeddings)
            for i, vector in zip(rows, block):
                out[i] = vector
        vectors = np.array(out, dtype=np.float32) if out else np.zeros((0, 0), dtype=np.float32)
        return vectors[0] if single else vectors

    def encode_pass(self, texts: Sequence[str], normalize_embeddings: bool = False) -> np.ndarray:
        """(n, dim) float32 vectors of `texts` in one forward pass, as `batches` grouped them (not grouped again)."""
        import numpy as np

        block = self._forward(texts)
        if normalize_embeddings or self.normalise:
            block /= np.clip(np.linalg.norm(block, axis=1, keepdims=True), 1e-12, None)
        return block

    def _forward(self, batch: Sequence[str]) -> np.ndarray:
        import numpy as np

        encodings = self.tokenizer.encode_batch(list(batch))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feeds["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        with _in_flight:
            hidden = self.session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        return (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
