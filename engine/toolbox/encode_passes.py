"""How one encoding's texts run on an encoder's replicas (`embeddings._Replicas`): `encode_on` shares a call's
passes out among the free replicas (the calling thread on one, a daemon thread on each other), `encode_shared` lets
small calls of concurrent callers wait together and run in the same passes (ONNX fp32, whose vectors do not depend
on the other texts of a pass), and each call is charged its work (`cache.costs`). `embeddings.encode_texts` picks
between them."""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...cache.costs import charge_to, current_cost
from ...sparql.errors import KgfedError

if TYPE_CHECKING:
    import numpy as np

    Replicas = Any  # embeddings._Replicas: take(wait=), give(model), changed (a Condition), waiting (a list of Job)

TORCH_THREADS_ENV = "KGFED_TORCH_THREADS"


def limit_torch_threads() -> None:
    """Set torch's intra-op threads for this (encoding) thread from $KGFED_TORCH_THREADS (default 1)."""
    import torch

    raw = os.environ.get(TORCH_THREADS_ENV, "").strip() or "1"
    if not raw.isdigit() or int(raw) < 1:
        raise KgfedError(f"{TORCH_THREADS_ENV}={raw!r} is not a whole number ≥ 1: unset it or give e.g. 2")
    if torch.get_num_threads() != int(raw):
        torch.set_num_threads(int(raw))


class Job:
    """One call's texts waiting for a replica, and where its vectors (or error) and costs go."""

    __slots__ = ("texts", "counter", "taken", "done", "vectors", "error")

    def __init__(self, texts: list[str]) -> None:
        self.texts, self.counter = texts, current_cost()
        self.taken = False  # a caller holding a replica took these texts with its own
        self.done = threading.Event()
        self.vectors: np.ndarray | None = None
        self.error: BaseException | None = None


def encode_shared(pool: Replicas, texts: list[str], batch_size: int) -> np.ndarray:
    """`texts` encoded in passes shared with every other call waiting when a replica comes free."""
    job = Job(texts)
    with pool.changed:
        pool.waiting.append(job)
        while not job.taken:
            model = pool.take(wait=False)
            if model is not None:  # this caller encodes every waiting call's texts
                jobs, pool.waiting = pool.waiting, []
                for other in jobs:
                    other.taken = True
                pool.changed.notify_all()  # their callers now wait for their vectors, not for a replica
                break
            pool.changed.wait()
        else:
            model = None
    if model is not None:
        run_jobs(pool, model, jobs, batch_size)
    job.done.wait()
    if job.error is not None or job.vectors is None:
        raise job.error or KgfedError("an encoding ended without its vectors")
    return job.vectors


def run_jobs(pool: Replicas, model, jobs: list[Job], batch_size: int) -> None:
    """Every job's texts in one encoding on `model` (given back), each job's rows and share of the costs handed over."""
    texts = [t for job in jobs for t in job.texts]
    try:
        out, work = encode_on(pool, model, texts, batch_size)
    except BaseException as exc:  # noqa: BLE001 - raised again by every waiting caller
        for job in jobs:
            job.error = exc
            job.done.set()
        return
    lengths = work.pop("lengths")
    total, start = sum(lengths) or 1, 0
    for job in jobs:
        n = len(job.texts)
        share = sum(lengths[start:start + n]) / total
        charge_to(job.counter, "texts_encoded", n)
        charge_to(job.counter, "tokens_encoded", sum(lengths[start:start + n]))
        for name in ("tokens_padded", "encoder_passes", "encoder_cpu_seconds"):
            charge_to(job.counter, name, round(work[name] * share, 6))
        job.vectors = out[start:start + n]
        start += n
        job.done.set()


def encode_on(pool: Replicas, first, texts: Sequence[str], batch_size: int) -> tuple[np.ndarray, dict]:
    """`texts` encoded starting on replica `first` (taken; given back), with free replicas helping: the vectors,
    and the work (`texts_encoded`, `encoder_passes`, `encoder_cpu_seconds`; on ONNX `tokens_encoded`, `tokens_padded`
    and each text's `lengths`)."""
    import numpy as np

    plan = getattr(first, "plan", None)
    work: dict = {"texts_encoded": len(texts)}
    try:
        if plan is not None:
            groups, lengths = plan(texts, batch_size)
            batches = [np.asarray(rows) for rows in groups]
            work.update(tokens_encoded=sum(lengths), lengths=lengths,
                        tokens_padded=sum(len(rows) * max(lengths[i] for i in rows) for rows in groups))
        else:  # SentenceTransformer.encode's: longest first by characters, `batch_size` each
            order = np.argsort([-len(t) for t in texts])
            batches = [order[start:start + batch_size] for start in range(0, len(texts), batch_size)]
    except BaseException:
        pool.give(first)
        raise
    work["encoder_passes"] = len(batches)
    cpu: list[float] = []  # each thread's CPU seconds (list.append is atomic)
    vectors: list = [None] * len(batches)
    pending = iter(range(len(batches)))
    next_lock = threading.Lock()
    errors: list[BaseException] = []

    def run(model) -> None:
        started = time.thread_time()
        try:
            if getattr(model, "uses_torch", True):
                limit_torch_threads()
            while not errors:
                with next_lock:
                    k = next(pending, None)
                if k is None:
                    return
                group = [texts[i] for i in batches[k]]
                if plan is not None:  # the encoder's own grouping: one pass each, not grouped again
                    vectors[k] = model.encode_pass(group, normalize_embeddings=True)
                else:
                    vectors[k] = model.encode(group, batch_size=len(group), normalize_embeddings=True,
                                              convert_to_numpy=True, show_progress_bar=False)
        except BaseException as exc:  # noqa: BLE001 - raised again on the calling thread
            errors.append(exc)
        finally:
            cpu.append(time.thread_time() - started)
            pool.give(model)

    helpers: list[threading.Thread] = []
    while len(helpers) + 1 < len(batches) and (extra := pool.take(wait=False)) is not None:
        helper = threading.Thread(target=run, args=(extra,), name="kgfed-embeddings-batch", daemon=True)
        helper.start()
        helpers.append(helper)
    run(first)
    for helper in helpers:
        helper.join()
    work["encoder_cpu_seconds"] = round(sum(cpu), 6)
    if errors:
        raise errors[0]
    out = np.empty((len(texts), vectors[0].shape[1]), dtype=np.float32)
    for rows, block in zip(batches, vectors):
        out[rows] = block
    return out, work
