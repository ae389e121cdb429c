"""`bench.methods_bound` on 2 CWQ questions: every figure is the run's own, and the bound is its formula (not timed)."""
from __future__ import annotations

import json

from bench import methods_bound

from .conftest import CWQ_NT, need


def test_the_bound_is_tokens_over_threads_plus_rounds():
    assert methods_bound.bound(1000, 4, 250e-6, 2, 0.01) == 1000 * 250e-6 / 2 + 4 * 0.01
    # questions in flight overlap their rounds: the longest question's, or the sum over those in flight
    assert methods_bound.chain([{"dependent_rounds": 5}, {"dependent_rounds": 3}, {}], in_flight=8) == 5
    assert methods_bound.chain([{"dependent_rounds": 5}] * 4, in_flight=2) == 10


def test_the_bench_runs_two_methods_on_two_questions(tmp_path):
    need(CWQ_NT)
    out = tmp_path / "bound.json"
    result = methods_bound.main(["--sample", "2", "--methods", "tog,agent", "--json", str(out), "--keep",
                                 str(tmp_path / "runs"), "--no-warmup"])
    assert json.loads(out.read_text()) == json.loads(json.dumps(result))
    assert 50 < result["per_token_us"] < 100_000 and result["round_trip_ms"] > 0
    rows = {r["method"]: r for r in result["rows"]}
    assert set(rows) == {"tog", "agent"}
    for method, row in rows.items():
        costs = [json.loads(line) for line in (tmp_path / "runs" / f"{method}.costs.jsonl").read_text().splitlines()]
        assert row["n"] == len(costs) == 2 and row["failed"] == 0 and row["llm_calls"] == 0
        assert row["tokens_encoded"] == sum(c.get("tokens_encoded", 0) for c in costs)
        assert row["sparql_requests"] == sum(c.get("requests_sent", 0) for c in costs) > 0
        assert row["dependent_rounds"] == max(c.get("dependent_rounds", 0) for c in costs)  # 2 questions, 8 in flight
        expected = methods_bound.bound(row["tokens_encoded"], row["dependent_rounds"], result["per_token_us"] * 1e-6,
                                       result["encoder_threads"], result["round_trip_ms"] * 1e-3)
        assert abs(row["bound"] - expected) < 0.01
        assert row["wall"] >= row["answering"] > 0 and row["cpu_seconds"] > 0
        assert 50 < row["peak_rss_mb"] < 2048
    assert rows["tog"]["tokens_encoded"] > 0 and rows["tog"]["tokens_padded"] >= rows["tog"]["tokens_encoded"]
