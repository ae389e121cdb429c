"""The sentence model's backends (engine/toolbox/encoders.py): the choice, the cached export, the vectors.

The model-loading tests (marked `embeddings`) export the installed all-MiniLM-L6-v2 to ONNX once per
test session into a temporary $KGFED_ENCODER_DIR (10-30 s on a loaded 2-core machine)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kgfed.engine.toolbox import embeddings, encoders
from kgfed.sparql.errors import KgfedError

TEXTS = ["where was he born", "people.person.place_of_birth", "Barack Obama",
         "What country bordering France has the largest population? -> location.location.adjoin_s -> Germany",
         "a", "the team that won the 2011 AFC Championship Game " * 8]


def test_backend_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(encoders.BACKEND_ENV, raising=False)
    assert encoders.backend() == encoders.DEFAULT_BACKEND == "onnx"
    for name in ("onnx", "onnx-int8", " ONNX "):
        monkeypatch.setenv(encoders.BACKEND_ENV, name)
        assert encoders.backend() == name.strip().lower()


def test_a_bad_backend_is_a_one_line_error(monkeypatch):
    monkeypatch.setenv(encoders.BACKEND_ENV, "tensorflow")
    with pytest.raises(KgfedError) as caught:
        encoders.backend()
    message = str(caught.value)
    assert "\n" not in message and "KGFED_EMBEDDINGS_BACKEND='tensorflow'" in message and "onnx-int8" in message
    with pytest.raises(KgfedError):  # the runner's first check (before any KG is opened) says it too
        embeddings.missing_extra()


def test_a_bad_backend_stops_kgfed_run_before_any_question(tmp_path):
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "q1", "question": "who?", "topic_entity": {"m.0abc": "X"}, "answer": ["Y"]}) + "\n")
    kg = tmp_path / "kg.nt"
    kg.write_text('<http://rdf.freebase.com/ns/m.0abc> <http://rdf.freebase.com/ns/type.object.name> "X" .\n')
    done = subprocess.run([sys.executable, "-m", "kgfed.engine.cli", "run", str(questions), "--kg", "freebase",
                           "--endpoint", f"freebase=file:{kg}", "--method", "tog", "--llm", "none",
                           "--out", str(tmp_path / "out.jsonl"), "--cache-dir", str(tmp_path / "cache"), "--no-progress"],
                          capture_output=True, text=True, env={**os.environ, encoders.BACKEND_ENV: "gpu"}, timeout=300)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "kgfed: error: KGFED_EMBEDDINGS_BACKEND='gpu' is not a backend: use one of torch, onnx, onnx-int8, or unset it"]
    assert not (tmp_path / "out.jsonl").exists() or not (tmp_path / "out.jsonl").read_text()


def test_exports_live_under_the_encoder_dir(monkeypatch, tmp_path):
    monkeypatch.setenv(encoders.ENCODER_DIR_ENV, str(tmp_path / "enc"))
    assert encoders.encoder_dir() == tmp_path / "enc"
    monkeypatch.delenv(encoders.ENCODER_DIR_ENV)
    assert encoders.encoder_dir() == Path.home() / ".cache" / "kgfed" / "encoders"


def test_least_padding_cuts_where_padding_costs_more_than_a_pass():
    # one long text and three short ones: padding the short ones to 40 tokens costs more than a second pass
    assert encoders.least_padding([40, 8, 8, 8], 16, 7) == [range(0, 1), range(1, 4)]
    # like lengths stay together (a second pass would cost more than the padding it saves)
    assert encoders.least_padding([10, 10, 9, 9], 16, 7) == [range(0, 4)]
    # never more than `most` a pass, and every text in exactly one pass, in order
    groups = encoders.least_padding([5] * 37, 16, 7)
    assert len(groups) == 3 and max(len(g) for g in groups) <= 16  # the fewest passes: padding is nil
    assert [i for g in groups for i in g] == list(range(37))
    assert encoders.least_padding([], 16, 7) == []


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    """One temporary export directory for this module's model tests (the export runs once)."""
    directory = tmp_path_factory.mktemp("encoders")
    old = os.environ.get(encoders.ENCODER_DIR_ENV)
    os.environ[encoders.ENCODER_DIR_ENV] = str(directory)
    yield directory
    if old is None:
        os.environ.pop(encoders.ENCODER_DIR_ENV, None)
    else:
        os.environ[encoders.ENCODER_DIR_ENV] = old


def _cosines(a, b):
    return (a * b).sum(axis=1)


@pytest.mark.embeddings
def test_the_export_is_cached_and_a_second_load_does_not_export(encoder_dir, capfd):
    model_dir = embeddings.model_dir()
    before = encoders.exports
    first = encoders.onnx_file(model_dir)
    err = capfd.readouterr().err
    assert first.is_file() and first.parent.parent == encoder_dir and first.stat().st_size > 50_000_000
    assert encoders.exports == before + 1
    assert "kgfed: exporting the sentence model to ONNX" in err and "kgfed: exported the sentence model" in err
    assert not [p for p in first.parent.iterdir() if p.name.endswith(".partial")]
    stamp = first.stat().st_mtime_ns
    again = encoders.load(model_dir, "onnx")  # a second load: the kept file, no export, no progress line
    assert again.onnx_path == first and first.stat().st_mtime_ns == stamp
    assert encoders.exports == before + 1 and "exporting" not in capfd.readouterr().err


@pytest.mark.embeddings
def test_onnx_vectors_match_torch(encoder_dir):
    import numpy as np

    torch_vectors = encoders.load(embeddings.model_dir(), "torch").encode(TEXTS, batch_size=16, normalize_embeddings=True)
    onnx_model = encoders.load(embeddings.model_dir(), "onnx")
    onnx_vectors = onnx_model.encode(TEXTS, batch_size=16, normalize_embeddings=True)
    assert onnx_vectors.shape == torch_vectors.shape == (len(TEXTS), 384) and onnx_vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(onnx_vectors, axis=1), 1.0, atol=1e-5)
    assert _cosines(onnx_vectors, torch_vectors).min() > 0.999
    # a text padded in a batch of longer ones gets the vector it gets alone (the mask is applied)
    alone = onnx_model.encode(["a"], batch_size=1, normalize_embeddings=True)[0]
    assert float(alone @ onnx_vectors[TEXTS.index("a")]) > 0.99999
    # the ranking the methods use: the same order of candidates for a query
    query = onnx_model.encode(["where was he born"], normalize_embeddings=True)[0]
    torch_query = torch_vectors[0]
    assert list(np.argsort(-(onnx_vectors @ query))) == list(np.argsort(-(torch_vectors @ torch_query)))


@pytest.mark.embeddings
def test_onnx_gives_a_text_the_same_bits_in_any_batch(encoder_dir):
    """What lets the ONNX backend batch texts by token count: a text's vector does not depend, bit for bit,
    on the other texts of its batch or on how far the batch is padded."""
    import numpy as np

    model = encoders.load(embeddings.model_dir(), "onnx")
    texts = TEXTS + [f"{t} ; film.film.directed_by ; {i}" for i, t in enumerate(TEXTS)]
    alone = np.stack([model.encode([t], batch_size=1, normalize_embeddings=True)[0] for t in texts])
    for batch_size in (2, 5, 16):
        assert np.array_equal(model.encode(texts, batch_size=batch_size, normalize_embeddings=True), alone)
    assert np.array_equal(model.encode(texts[::-1], batch_size=3, normalize_embeddings=True), alone[::-1])
    lengths = [model._input_length(t) for t in texts]
    assert lengths[TEXTS.index("a")] == 3 and max(lengths[:len(TEXTS)]) == lengths[len(TEXTS) - 1] > 60  # [CLS] a [SEP]; tokens, not characters
    passes = model.batches(texts, 16)
    assert sorted(i for rows in passes for i in rows) == list(range(len(texts)))
    longest = max(range(len(texts)), key=lambda i: lengths[i])
    assert [longest] in passes or all(lengths[i] > 40 for rows in passes if longest in rows for i in rows)


@pytest.mark.embeddings
def test_int8_vectors_stay_close_to_torch(encoder_dir):
    """Dynamic int8 quantisation (per channel): measured min cosine 0.985 to torch's over 400 CWQ texts."""
    torch_vectors = encoders.load(embeddings.model_dir(), "torch").encode(TEXTS, batch_size=16, normalize_embeddings=True)
    int8 = encoders.load(embeddings.model_dir(), "onnx-int8")
    assert int8.onnx_path.name == "model-int8.onnx" and int8.onnx_path.stat().st_size < 30_000_000
    assert _cosines(int8.encode(TEXTS, batch_size=16, normalize_embeddings=True), torch_vectors).min() > 0.95


@pytest.mark.embeddings
def test_int8_encodes_each_text_alone_so_its_vector_does_not_depend_on_the_batch(encoder_dir):
    """A dynamically quantised forward pass scales the activations by the batch's range: batched, a text's
    vector moved with its neighbours (by 0.026 a component, measured), so int8 encodes every text alone."""
    import numpy as np

    int8 = encoders.load(embeddings.model_dir(), "onnx-int8")
    assert int8.alone and int8.replica().alone
    alone = np.stack([int8.encode([t], batch_size=1, normalize_embeddings=True)[0] for t in TEXTS])
    assert np.array_equal(int8.encode(TEXTS, batch_size=16, normalize_embeddings=True), alone)
    batched = int8._forward(TEXTS)  # what one batch of all of them would give
    assert not np.allclose(batched / np.linalg.norm(batched, axis=1, keepdims=True), alone, atol=1e-4)


@pytest.mark.embeddings
def test_embedder_on_onnx_stores_apart_and_shares_batches_over_replicas(encoder_dir, monkeypatch, tmp_path):
    import numpy as np

    monkeypatch.setenv(encoders.BACKEND_ENV, "onnx")
    monkeypatch.setenv(embeddings.ENCODERS_ENV, "2")
    texts = [f"{t} {i}" for i in range(4) for t in TEXTS] * 2
    vectors = embeddings.encode_texts(None, texts, batch_size=4)
    pool = embeddings._pools[str(embeddings.model_dir().resolve())]  # onnx is the default backend
    assert pool.count == 2 and isinstance(pool.model, encoders.OnnxEncoder)
    single = embeddings.load_model().encode(texts, batch_size=4, normalize_embeddings=True)
    assert np.array_equal(vectors, single)
    embedder = embeddings.Embedder(tmp_path / "vectors")
    assert embedder.model_id.endswith("+onnx")
    scores = embedder.similarity_sync("where was he born", ["people.person.place_of_birth", "sports.team.coach"])
    assert scores[0] > scores[1]
    assert embedder.cache.get_many(embedder.model_id, ["where was he born"])  # stored under the onnx id...
    assert not embedder.cache.get_many(embedder.model_id.removesuffix("+onnx"), ["where was he born"])  # ...not torch's
    embedder.close()


@pytest.mark.embeddings
def test_the_onnx_backend_encodes_without_importing_torch(encoder_dir):
    encoders.onnx_file(embeddings.model_dir())  # exported here (once per module), not in the child
    code = ("import sys; from kgfed.engine.toolbox import embeddings; v = embeddings.encode_texts(None, ['hello']); "
            "print(v.shape, 'torch' in sys.modules, 'transformers' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, encoders.BACKEND_ENV: "onnx", encoders.ENCODER_DIR_ENV: str(encoder_dir)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["(1,", "384)", "False", "False"]
    assert "exporting" not in done.stderr  # the module's export is reused
