"""A caller that cancels its `sparql` calls every 0.3 s, and another caller's cheap calls meanwhile (issue 41
item 5: on a 1.5M-triple store, 2 of the other client's 7 calls failed with "workers busy").

Through the MCP engine's `sparql` (fair lanes, query workers) on a generated N-Triples store of `--triples`
triples: caller X starts a query and cancels it 0.3 s later, over and over (a streaming `SELECT`, which a
worker can stop at its next write, or with `--heavy` a `COUNT`, which only a kill stops); caller Y asks 7
cheap queries one after the other. Printed: Y's outcomes and seconds, the pool's started/killed/interrupted.

    python -m bench.cancel_storm                      # 300k triples, streaming queries cancelled
    python -m bench.cancel_storm --heavy --triples 1500000
"""
from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

STREAM = "SELECT * WHERE { ?a ?b ?c . ?d ?e ?f }"
HEAVY = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f }"
CHEAP = "SELECT ?s WHERE { ?s ?p ?o } LIMIT 5"


def store_file(triples: int, folder: Path) -> Path:
    path = folder / f"storm-{triples}.nt"
    with path.open("w", encoding="utf-8") as out:
        for i in range(triples):
            out.write(f"<http://x.test/e{i % 50000}> <http://x.test/p{i % 97}> \"v{i}\" .\n")
    return path


async def storm(path: Path, heavy: bool, timeout: float) -> dict:
    from kgfed.engine.config import CacheOptions, HttpOptions, KGSpec
    from kgfed.engine.mcp.service import Engine, ServerOptions

    engine = Engine.open(ServerOptions(kgs=(KGSpec("storm", f"file:{path}", dialect="wikidata"),),
                                       http=HttpOptions(timeout=timeout), cache=CacheOptions(enabled=False)))
    outcomes: list[tuple[str, float]] = []
    stop = asyncio.Event()

    async def attacker() -> int:
        sent: list[asyncio.Task] = []
        while not stop.is_set():  # an MCP client cancels a call and sends the next at once (it waits for nothing)
            task = asyncio.create_task(engine.sparql(HEAVY if heavy else STREAM, "storm", 10, False, caller="x"))
            sent.append(task)
            await asyncio.sleep(0.3)
            task.cancel()
        await asyncio.gather(*sent, return_exceptions=True)
        return len(sent)

    try:
        await engine.sparql(CHEAP, "storm", 10, False, caller="y")  # the workers are up
        started = time.monotonic()
        x = asyncio.create_task(attacker())
        for i in range(7):
            await asyncio.sleep(1.0)  # Y asks now and then; X keeps cancelling meanwhile
            began = time.monotonic()
            try:
                await engine.sparql(f"{CHEAP} # {i}", "storm", 10, False, caller="y")
                outcomes.append(("ok", round(time.monotonic() - began, 2)))
            except Exception as exc:  # noqa: BLE001  (counted: what the issue saw)
                outcomes.append((str(exc)[:90], round(time.monotonic() - began, 2)))
        stop.set()
        cancelled = await x
        workers = engine.kgs["storm"].endpoint.inner._workers
        return {"triples": sum(1 for _ in path.open()), "heavy": heavy, "timeout": timeout,
                "load_seconds": [round(s, 2) for s in workers.load_seconds], "y": outcomes,
                "y_failed": sum(1 for o, _ in outcomes if o != "ok"), "x_cancelled": cancelled,
                "pool": dict(workers.stats), "wall": round(time.monotonic() - started, 1)}
    finally:
        await engine.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--triples", type=int, default=300_000)
    parser.add_argument("--heavy", action="store_true")
    parser.add_argument("--timeout", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        print(json.dumps(asyncio.run(storm(store_file(args.triples, Path(folder)), args.heavy, args.timeout)), indent=1))


if __name__ == "__main__":
    main()
