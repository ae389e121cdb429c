"""Per-question cost records stay separate while questions run concurrently over one shared KG."""
from __future__ import annotations

import asyncio

from kgfed.cache.costs import charge, track
from kgfed.engine.kg import KG

from .conftest import CODEX_NT, need


async def test_concurrent_questions_are_charged_separately():
    async with KG.open(f"file:{need(CODEX_NT)}") as kg:
        async def question(entity: str, repeats: int):
            with track() as cost:
                for _ in range(repeats):
                    await kg.relations(entity)  # 2 queries each (out + in); repeats hit the cache
                charge("llm_calls", 3)
            return cost

        a, b = await asyncio.gather(question("Q42", 1), question("Q350", 3))
    assert (a["sparql_queries"], a["requests_sent"], a["cache_hits"], a["llm_calls"]) == (2, 2, 0, 3)
    assert (b["sparql_queries"], b["requests_sent"], b["cache_hits"]) == (6, 2, 4)
    assert kg.stats["queries"] == 8  # the KG-wide totals are the sum


def test_charge_outside_track_is_a_no_op():
    charge("llm_calls")  # must not raise or leak into a later track()
    with track() as cost:
        pass
    assert cost == {}


async def test_dependent_rounds_count_requests_waited_for_one_after_another():
    """Two requests awaited in turn are two rounds; requests in flight together are one (issue 39)."""
    async with KG.open(f"file:{need(CODEX_NT)}") as kg:
        def ask(n: int) -> str:
            return f"SELECT ?s WHERE {{ ?s ?p ?o }} LIMIT {n}"

        async def slow(query: str):  # a sleep in the endpoint keeps the gathered requests in flight together
            await asyncio.sleep(0.05)
            return await inner_select(query)

        inner_select = kg.endpoint.inner.select
        kg.endpoint.inner.select = slow
        with track() as cost:
            await kg.select(ask(1), bound=False)
            await kg.select(ask(2), bound=False)
            await asyncio.gather(*(kg.select(ask(n), bound=False) for n in (3, 4, 5)))
            await kg.select(ask(1), bound=False)  # a cache hit: no request, no round
    assert (cost["requests_sent"], cost["cache_hits"], cost["dependent_rounds"]) == (5, 1, 3)
    assert 0.15 <= cost["kg_wait_seconds"] <= cost["kg_seconds"]  # 3 rounds of at least 50 ms; 5 requests summed more


def test_encoder_work_is_charged_to_the_question_that_encoded_it(tmp_path):
    """Texts, real and padded tokens, passes and CPU seconds, also from the encoding threads (`Embedder.encode`)."""
    from kgfed.engine.toolbox.embeddings import Embedder, load_model

    texts = ["where was he born", "people.person.place_of_birth", "location.location.containedby and then some more words",
             "where was he born"]
    tokenizer = load_model().tokenizer
    lengths = {t: len(tokenizer.encode(t).ids) for t in texts}
    embedder = Embedder(False)

    async def question():
        with track() as cost:
            await embedder.encode(texts)  # a daemon thread: charged to this question all the same
            await embedder.encode(texts[:2])  # remembered: nothing encoded again
        return cost

    cost = asyncio.run(question())
    assert cost["texts_encoded"] == 3 and cost["tokens_encoded"] == sum(lengths[t] for t in set(texts))
    assert cost["encoder_passes"] >= 1 and cost["tokens_padded"] >= cost["tokens_encoded"]
    assert cost["tokens_padded"] <= 3 * max(lengths.values())
    assert 0 < cost["encoder_cpu_seconds"] < 60


def test_a_runs_costs_file_and_summary_carry_its_work(tmp_path):
    """`kgfed run`'s sidecar and summary: rounds, encoder work, peak RSS (a method asking relations, then neighbours)."""
    import json

    from kgfed.engine.harness.runner import costs_path_for, run

    from .test_runner import cwq_questions, cwq_spec

    out = tmp_path / "preds.jsonl"
    summary = asyncio.run(run(cwq_spec(), cwq_questions(4), out, concurrency=1, progress=False))
    costs = [json.loads(line) for line in costs_path_for(out).read_text().splitlines()]
    answered = [c for c in costs if c.get("requests_sent") == 2]
    assert answered and all(c["dependent_rounds"] == 2 for c in answered)  # relations, then neighbours: in turn
    assert all(c["texts_encoded"] >= 1 and c["tokens_padded"] >= c["tokens_encoded"] > c["texts_encoded"] for c in answered)
    per_question = summary["per_question"]
    assert per_question["dependent_rounds"] == round(sum(c.get("dependent_rounds", 0) for c in costs) / len(costs), 4)
    assert per_question["tokens_encoded"] > 0 and per_question["encoder_cpu_seconds"] > 0
    assert 50 < summary["peak_rss_mb"] < 2048


def test_small_encodings_waiting_for_a_replica_share_passes_and_split_their_costs(monkeypatch):
    """Three questions' one-text encodings, queued behind a busy encoder, run in one pass; each gets the bits it
    gets alone and is charged its own texts and tokens, and its share of the pass (issue 39 item 3)."""
    import threading
    import time

    import numpy as np

    from kgfed.engine.toolbox import embeddings

    texts = ["where was he born", "people.person.place_of_birth", "location.location.containedby"]
    model = embeddings.load_model()
    alone = [model.encode([t], batch_size=1, normalize_embeddings=True)[0] for t in texts]
    pool = embeddings._replicas(None)
    held = [pool.take()]
    while (extra := pool.take(wait=False)) is not None:  # every replica busy: the encodings must wait
        held.append(extra)
    monkeypatch.setenv(embeddings.ENCODERS_ENV, str(pool.count))
    results: dict[int, tuple] = {}

    def question(k: int) -> None:
        with track() as cost:
            results[k] = (embeddings.encode_texts(None, [texts[k]]), cost)

    threads = [threading.Thread(target=question, args=(k,)) for k in range(3)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 30
    while len(pool.waiting) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(pool.waiting) == 3
    for replica in held:
        pool.give(replica)
    for thread in threads:
        thread.join(30)
    for k, (vectors, cost) in results.items():
        assert np.array_equal(vectors[0], alone[k])
        assert cost["texts_encoded"] == 1 and cost["tokens_encoded"] == len(model.tokenizer.encode(texts[k]).ids)
        assert 0 < cost["encoder_passes"] < 1 and cost["encoder_cpu_seconds"] > 0
    assert abs(sum(cost["encoder_passes"] for _, cost in results.values()) - 1) < 1e-5  # one pass, shared
