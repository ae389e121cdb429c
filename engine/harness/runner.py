"""The KBQA run harness: one method over many questions, bounded, cached, resumable and Ctrl-C safe.

    spec = RunSpec("tog", kgs=(KGSpec("freebase", "file:cwq_subgraph.nt"),), cache=CacheOptions(root="cache"))
    summary = await run(spec, select_questions(load_dataset("cwq-subgraph"), limit=50), "preds.jsonl")

A `RunSpec` is the whole configuration of a run as value objects (`KGSpec`s, `HttpOptions`,
`CacheOptions`, the method's name and parameters, the LLM and text-source specs): frozen and
picklable, so worker processes and Ray actors rebuild the same `Runtime` from it. Questions run
`concurrency` at a time over one shared `Runtime` (KGs, response cache, LLM, embedder, method), or in
chunks on `workers` processes / Ray actors that each build their own runtime over the same cache
root (a directory several processes share safely, or Redis). What the run writes and shows (the resumable prediction file,
its cost sidecar, the running figures, the progress bar) is `harness.output`.
"""
from __future__ import annotations

import asyncio
import json
import os
import random
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...sparql.dialects import DIALECTS
from ...cache.costs import hop_floor
from ...sparql.errors import KgfedError
from ..config import CacheOptions, HttpOptions, KGSpec, SessionSpec, kg_specs
from ..session import Session
from .datasets import Question
from .evaluate import NULL_ANSWER, Prediction
from .output import (  # noqa: F401 - MAX_FAILURES_BEFORE_SUCCESS, costs_path_for, summarize: importable from here as in 0.2
    MAX_FAILURES_BEFORE_SUCCESS, Answered, Output, Progress, Tally, costs_path_for, disk_full, summarize,
)
from .output import interrupted_note as _interrupted_note
from .datasets import load_dataset as _load_dataset
from ..toolbox import gold_llm as _gold_llm

_gold_llm.question_loader = _load_dataset  # `--llm gold:FILE` reads the file as the harness does (toolbox cannot import it)

# Cost figures that do not depend on the cache or on timing: kept in the prediction records. SPARQL
# counts are not among them: alignments have their own cache, so a warm run asks fewer queries.
STABLE_COSTS = ("llm_calls", "input_tokens", "output_tokens")
DEFAULT_IN_FLIGHT = 8  # questions at once per worker (`--in-flight`)
IN_FLIGHT_PER_LLM_CALL = 2  # with --llm-concurrency N: 2N questions at once by default (docs/llm.md, bench/llm_bound.py)
# What the last interrupted run kept (the CLI prints it once, in place of a bare "interrupted").
interrupted_note: str | None = None
PRELOAD_BELOW = 100  # load the embedding model in the background when its cache holds fewer vectors (a first run)
_HTTP, _CACHE = HttpOptions(), CacheOptions()


def _default_kgs() -> tuple[KGSpec, ...]:
    return tuple(kg_specs(None))  # freebase and wikidata, each the bundled demo KG of its dialect


@dataclass(frozen=True)
class RunSpec:
    """Everything a worker needs to rebuild the runtime, as value objects (frozen and picklable: no clients).

    `method` is a registry name (tog, pog, ...) or `package.module:Class`, `params` its parameters;
    `kgs` the run's KGs (default: freebase and wikidata, the bundled demo KGs); `http`/`cache` how it
    talks HTTP and caches; `llm` an LLM spec (`toolbox.llm.make_llm`) with `llm_concurrency` calls in
    flight for the whole run (`--llm-concurrency`; None: no cap); `text` a text-source spec;
    `embeddings_dir` where the sentence vectors live (None: the cache root's). (0.2's third argument,
    the `kg_options` dict, was removed in 0.3.0: docs/migration.md.)
    """

    method: str
    params: dict[str, Any] = field(default_factory=dict)
    llm: str = "none"
    text: str | None = None
    embeddings_dir: str | None = None
    llm_concurrency: int | None = None
    kgs: tuple[KGSpec, ...] = field(default_factory=_default_kgs)
    http: HttpOptions = _HTTP
    cache: CacheOptions = _CACHE

    def __post_init__(self) -> None:
        if isinstance(self.llm, Mapping):  # RunSpec(method, params, {"kg": ...}): 0.2's kg_options
            raise KgfedError("RunSpec's third argument is the LLM spec: 0.2's kg_options dict was removed in kgfed 0.3.0; "
                             "pass kgs=(KGSpec, ...), http=HttpOptions(...), cache=CacheOptions(...) (docs/migration.md)")
        if not isinstance(self.kgs, tuple):
            object.__setattr__(self, "kgs", tuple(self.kgs))
        for value, kind in ((self.http, HttpOptions), (self.cache, CacheOptions)):
            if not isinstance(value, kind):
                raise KgfedError(f"RunSpec got {type(value).__name__} where {kind.__name__} belongs: build it with "
                                 f"{kind.__name__}(...) (kgfed.engine.config)")
        if not self.kgs or not all(isinstance(k, KGSpec) for k in self.kgs):
            raise KgfedError("RunSpec.kgs must hold KGSpec objects, e.g. kgs=(KGSpec.parse('freebase=file:fb.nt'),)")

    def resolved(self) -> RunSpec:
        """A copy with the cache root made explicit (an absolute directory or a Redis URL) and, on a disk root,
        the embeddings directory under it, so other processes and Ray actors on any node open the same stores
        (on a Redis root the vectors are its `embeddings` store: `embeddings_dir` stays None)."""
        cache = self.cache.resolved()
        embeddings = self.embeddings_dir
        if embeddings is None and cache.enabled:
            from ...cache.root import CacheSpec

            spec = CacheSpec.of(cache.root)
            embeddings = str(spec.directory("embeddings")) if spec.local else None
        return replace(self, cache=cache, embeddings_dir=embeddings)

    def session_spec(self) -> SessionSpec:
        """The run's `SessionSpec`, built here and nowhere else (the runtime, the topic check, the option check,
        each worker process and Ray actor open a `Session` of it): KGs, HTTP, cache, LLM, text, embeddings."""
        embeddings = self.embeddings_dir or (None if self.cache.enabled else False)
        return SessionSpec(kgs=self.kgs, http=self.http, cache=self.cache, llm=self.llm,
                           llm_concurrency=self.llm_concurrency, text=self.text, embeddings=embeddings)



def method_class(name: str):
    """The Method class for a registry name (`kgfed.engine.methods.METHODS`, entry points included) or `package.module:Class`."""
    from ..methods import get_method

    return get_method(name)


class Runtime(Session):
    """The run harness's session (`kgfed.engine.session.Session`) built from a `RunSpec`, plus its method.

    In the LLM-free mode a missing embeddings extra is a one-line error up front, and on a first run
    (an embedding cache with few vectors) the model starts loading in a background thread while the
    method's first KG queries run.
    """

    def __init__(self, spec: RunSpec):
        self.run_spec = spec.resolved()
        super().__init__(self.run_spec.session_spec())

    async def __aenter__(self) -> Runtime:
        cls = method_class(self.run_spec.method)
        if hasattr(cls, "resolve"):  # a misspelt --param fails before any KG, LLM or model is opened
            cls.resolve(self.run_spec.params)
        if self.run_spec.llm == "none":
            from ..toolbox.embeddings import missing_extra

            missing = missing_extra()
            if missing:
                raise KgfedError(f"{missing} (or choose an LLM with --llm)")
        try:
            self.open()
            llm = self.llm
            embedder = self.embedder
            self._preload()
            text = self.text
            try:
                self.method = cls(self.kgs, llm, embedder=embedder, text=text, **self.run_spec.params)
            except TypeError as exc:
                raise KgfedError(f"method {self.run_spec.method!r} rejects its parameters ({exc}): check --param") from None
        except BaseException:
            await self.aclose()
            raise
        return self

    def _preload(self) -> None:
        """Start loading the embedding model now when the embedding cache is (nearly) empty (a first run).

        Over a warm cache (a replay: the vectors are stored, the model is never loaded) the embedder's
        own start-up happens here instead, with the runtime's (`Embedder.warm`): numpy's import (about
        0.1 s, which otherwise holds up the first questions while their look-ups wait in threads), the
        model id its cache keys are scoped by, and one read of every stored vector."""
        embedder = self.embedder
        if embedder is None or self.run_spec.llm != "none" or ":" in self.run_spec.method:  # custom methods: on first use
            return
        cache = embedder.cache
        if cache is None or len(cache) < PRELOAD_BELOW:
            from ..toolbox.embeddings import preload

            preload(embedder.model_path)
        else:
            embedder.warm()  # with numpy imported, the embedder's look-ups run on the loop

    def topics_for(self, question: Question) -> dict[str, dict[str, str]]:
        """The question's topic entities per KG of the run (by KG name, else by the KG's dialect)."""
        return {name: dict(topics_of_kg(question.topics, name, kg.dialect)) for name, kg in self.kgs.items()}

    async def named_topics(self, question: Question) -> dict[str, dict[str, str]]:
        """`topics_for`, with a topic given by id only (a plain question file) named by its KG's label."""
        from ..methods.base import name_topics

        return await name_topics(self.kgs, self.topics_for(question))

    async def answer(self, question: Question, fmt: str) -> Answered:
        """One question through the method; any failure is recorded, never raised (except cancellation)."""
        try:
            result = await self.method.answer(question.text, await self.named_topics(question))
        except Exception as exc:  # one bad question must not end a run of thousands
            from ...sparql.secrets import redact  # the error text goes to the summary, stderr and --json

            return Answered(question.id, None, {}, f"{type(exc).__name__}: {redact(str(exc).splitlines()[0]) if str(exc) else ''}")
        cost = dict(result.cost)  # with the hop floor (cache.costs.hop_floor): hops walked, requests above two a hop
        cost.update(hop_floor(cost, cost.get("hops") or max((len(p) for p in result.paths), default=0)))
        return Answered(question.id, to_prediction(question, result, fmt), cost)


def to_prediction(question: Question, result, fmt: str) -> Prediction:
    """A ToG (`results`, `{answer}`, reasoning chains) or ToG-2 (`answer`) prediction of a Result."""
    answer = (result.answer or "").strip() or NULL_ANSWER  # "no answer": never "{}", which ToG's rule scores as right
    raw = answer if fmt == "tog2" or "{" in answer else f"{{{answer}}}"
    stable = {k: result.cost[k] for k in STABLE_COSTS if k in result.cost}
    chains = [[list(t) for t in chain] for chain in result.tog_chains()] if fmt != "tog2" else []
    return Prediction(question.text, raw, question.id, fmt, chains, stable, {"answer_ids": list(result.answer_ids)})


async def answer_all(runtime: Runtime, questions: Sequence[Question], fmt: str, concurrency: int,
                     on_done: Callable[[Answered], None] | None = None) -> list[Answered]:
    """Answer `questions` with at most `concurrency` in flight; `on_done` sees each as it finishes."""
    done: list[Answered] = []
    pending: Iterator[Question] = iter(questions)

    async def worker() -> None:
        for question in pending:  # one shared iterator: each question is taken once
            answered = await runtime.answer(question, fmt)
            done.append(answered)
            if on_done is not None:
                on_done(answered)

    await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(questions))))))
    return done


# -- scale-out: processes and Ray actors run chunks of questions ---------------------------------------
class ChunkWorker:
    """A runtime that answers chunks of questions (one per process or Ray actor, opened on first use)."""

    def __init__(self, spec: RunSpec, fmt: str, concurrency: int):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        self.spec, self.fmt, self.concurrency = spec, fmt, concurrency
        self._runtime: Runtime | None = None

    async def run(self, questions: list[Question]) -> list[Answered]:
        if self._runtime is None:
            self._runtime = await Runtime(self.spec).__aenter__()
        answered = await answer_all(self._runtime, questions, self.fmt, self.concurrency)
        # A chunk's answers are stored before it is handed back: another process or Ray node can hit
        # them at once, and a worker stopped later (ray.kill, a terminated pool) loses none of them.
        caches = {id(c): c for kg in self._runtime.kgs.values() if (c := getattr(kg.endpoint, "cache", None)) is not None}
        for cache in caches.values():
            await asyncio.to_thread(cache.flush)
        return answered

    async def aclose(self) -> None:
        if self._runtime is not None:
            await self._runtime.aclose()


_process_worker: ChunkWorker | None = None
_process_loop: asyncio.AbstractEventLoop | None = None


def _init_process(spec: RunSpec, fmt: str, concurrency: int) -> None:
    import signal

    global _process_worker, _process_loop
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops the workers
    _process_worker = ChunkWorker(spec, fmt, concurrency)
    _process_loop = asyncio.new_event_loop()


def _run_process_chunk(questions: list[Question]) -> list[Answered]:
    assert _process_worker is not None and _process_loop is not None
    return _process_loop.run_until_complete(_process_worker.run(questions))


Slot = Callable[[list[Question]], Awaitable[list[Answered]]]


async def _drive(slots: Sequence[Slot], questions: Sequence[Question], chunk: int, on_done: Callable[[Answered], None]) -> None:
    """Hand chunks to the slots (a slot takes the next chunk when its last one returns)."""
    chunks = iter([list(questions[i:i + chunk]) for i in range(0, len(questions), chunk)])

    async def feed(slot: Slot) -> None:
        for part in chunks:
            for answered in await slot(part):
                on_done(answered)

    await asyncio.gather(*(feed(slot) for slot in slots))


async def _run_processes(spec: RunSpec, questions: Sequence[Question], fmt: str, concurrency: int, workers: int,
                         on_done: Callable[[Answered], None]) -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_init_process, initargs=(spec, fmt, concurrency))
    loop = asyncio.get_running_loop()
    finished = False
    try:
        slots = [lambda part: loop.run_in_executor(pool, _run_process_chunk, part) for _ in range(workers)]
        await _drive(slots, questions, max(1, concurrency), on_done)
        finished = True
    finally:
        if not finished:  # Ctrl-C or an error: stop the workers now, their chunks are redone on resume
            for process in list(getattr(pool, "_processes", {}).values()):
                process.terminate()
        pool.shutdown(wait=finished, cancel_futures=True)


async def _run_ray(spec: RunSpec, questions: Sequence[Question], fmt: str, concurrency: int, workers: int,
                   address: str | None, on_done: Callable[[Answered], None]) -> None:
    try:
        import ray
    except ImportError:
        raise KgfedError("--ray needs Ray: pip install 'kgfed[distributed]' (or run with --workers N on one machine)") from None
    started = not ray.is_initialized()
    if started:
        # num_cpus=None is ray.init's default: a cluster (address given) sets its own CPUs
        ray.init(address=address or None, include_dashboard=False, log_to_driver=False,
                 num_cpus=None if address else max(workers, 1))
    actors = [ray.remote(ChunkWorker).options(num_cpus=1).remote(spec, fmt, concurrency) for _ in range(workers)]
    try:
        slots = [lambda part, actor=actor: actor.run.remote(part) for actor in actors]
        await _drive(slots, questions, max(1, concurrency), on_done)
    finally:
        for actor in actors:
            # ray types .remote() as ActorHandle | type[T] (so that methods type-check); it is an ActorHandle
            ray.kill(actor)  # type: ignore[arg-type]
        if started:
            ray.shutdown()


def topics_of_kg(topics: Mapping[str, Mapping[str, str]], name: str, dialect: Any) -> Mapping[str, str]:
    """A question's topic entities for one KG: those given for the KG's name, else for its dialect's; a dialect
    kgfed does not ship (one a plugin registered) takes the first group whose every id it accepts."""
    found = topics.get(name) or topics.get(dialect.name)
    if found or dialect in DIALECTS:
        return found or {}
    return next((ids for ids in topics.values() if ids and all(dialect.is_entity(i) for i in ids)), {})


# -- the run -----------------------------------------------------------------------------------------
TOPIC_CHECK = 20  # topic entities looked up per KG before a run answers anything


async def check_topics(kgs: Mapping[str, Any], questions: Sequence[Question], demo: Iterable[str] = ()) -> None:
    """Stop a run whose KGs hold none of its questions' topic entities (the first TOPIC_CHECK per KG).

    That is a set-up mistake (no --endpoint, so the bundled demo KG stood in; or the wrong file), which
    would otherwise run to the end with every answer wrong. `demo` names the KGs opened on the demo KG.
    A KG that cannot be asked (offline miss, endpoint error) is not judged here: the run reports it."""
    demo = set(demo)
    given: dict[str, list[str]] = {}
    for question in questions[:TOPIC_CHECK]:
        for kg, kg_topics in question.topics.items():
            given.setdefault(kg, []).extend(i for i in kg_topics if i not in given.get(kg, []))
    grouped = {kg: dict.fromkeys(ids, "") for kg, ids in given.items()}
    if given and not any(topics_of_kg(grouped, name, kg.dialect) for name, kg in kgs.items()):  # topics only for KGs the
        # run does not have: all would be linked anew
        other = sorted(given)[0]
        shown = ", ".join(given[other][:3]) + (", …" if len(given[other]) > 3 else "")
        raise KgfedError(f"the questions' topic entities are {other} ids ({shown}) but the run's KGs are "
                         f"{', '.join(kgs)}: add --kg {other} --endpoint {other}=SPEC (e.g. {other}=file:KG.nt)")
    for name, kg in kgs.items():
        ids: list[str] = []
        for question in questions:
            topics = topics_of_kg(question.topics, name, kg.dialect)
            ids += [i for i in topics if i not in ids]
            if len(ids) >= TOPIC_CHECK:
                break
        ids = ids[:TOPIC_CHECK]  # (a question without topics for this KG has them linked from its text)
        if not ids:
            continue
        try:
            labels = await kg.labels(ids)
            if any(label.label or label.description for label in labels.values()):
                continue
            found = await kg.relations_many(ids, "out")
            if any(found.get(i) for i in ids):
                continue
        except KgfedError:
            continue
        shown = ", ".join(ids[:3]) + (", …" if len(ids) > 3 else "")
        where = ("the bundled demo KG, used because no --endpoint was given for it" if name in demo
                 else f"endpoint {kg.endpoint.name}")
        raise KgfedError(f"KG {name!r} ({where}) holds none of the questions' topic entities ({shown}): give the KG "
                         f"that holds them with --endpoint {name}=SPEC (e.g. {name}=file:KG.nt, {name}=qlever-{kg.dialect.name})")


async def _check_run_topics(spec: RunSpec, questions: Sequence[Question], runtime: Runtime | None = None) -> None:
    """`check_topics` over the run's KGs (the runtime's, else a session of the run's spec, opened for the check)."""
    demo = [s.name for s in spec.kgs if s.endpoint is None]
    if runtime is not None:
        await check_topics(runtime.kgs, questions, demo)
        return
    async with Session(spec.session_spec()) as session:
        await check_topics(session.kgs, questions, demo)


def select_questions(questions: Sequence[Question], *, limit: int | None = None, sample: int | None = None,
                     seed: int = 0) -> list[Question]:
    """A seeded random sample (kept in dataset order), then the first `limit`."""
    chosen = list(questions)
    if sample is not None:
        if sample < 1:
            raise KgfedError("--sample must be at least 1")
        picked = set(random.Random(seed).sample(range(len(chosen)), min(sample, len(chosen))))
        chosen = [q for i, q in enumerate(chosen) if i in picked]
    if limit is not None:
        if limit < 1:
            raise KgfedError("--limit must be at least 1")
        chosen = chosen[:limit]
    return chosen


def in_flight_for(spec: RunSpec, workers: int = 1) -> int:
    """Questions answered at once per worker by default: 8, or enough to keep a capped LLM busy
    (`IN_FLIGHT_PER_LLM_CALL` questions per call allowed in flight: a question waits on its KG, its
    embeddings and its own earlier calls between LLM calls, so one per call would leave the cap idle)."""
    if spec.llm_concurrency and spec.llm != "none":
        return max(DEFAULT_IN_FLIGHT, -(-IN_FLIGHT_PER_LLM_CALL * spec.llm_concurrency // workers))
    return DEFAULT_IN_FLIGHT


def _share_llm(spec: RunSpec, workers: int) -> RunSpec:
    """The spec each of `workers` processes runs: the run's LLM cap divided among them (at least 1 each)."""
    if workers <= 1 or not spec.llm_concurrency:
        return spec
    from dataclasses import replace

    return replace(spec, llm_concurrency=max(1, spec.llm_concurrency // workers))


async def run(spec: RunSpec, questions: Sequence[Question], out: str | Path, *, fmt: str = "tog",
              concurrency: int | None = None, workers: int = 1, ray_address: str | None = None, use_ray: bool = False,
              costs: str | Path | None = None, progress: bool = True, dataset: str | None = None) -> dict[str, Any]:
    """Answer the questions not yet in `out`, write them, and return the summary (see `summarize`).

    `concurrency` is the questions in flight per worker (default `in_flight_for(spec)`); with several
    workers the LLM cap `spec.llm_concurrency` is shared among them. Every option is checked (`check_options`)
    before the output is read, so a run with nothing left to answer still refuses a bad one; `dataset` (the
    question file or name) goes into the prediction file's sidecar with the method, format and KGs (`run_meta`)."""
    if concurrency is None:
        concurrency = in_flight_for(spec, workers)
    if concurrency < 1 or workers < 1:
        raise KgfedError("--concurrency and --workers must be at least 1")
    await check_options(spec, use_ray=use_ray, ray_address=ray_address)
    spec = _share_llm(spec, workers)
    output = Output(out, fmt, questions, costs, meta=run_meta(spec, fmt, dataset))
    todo = [q for q in questions if q.id not in output.done]
    tally = Tally(questions, len(todo))
    spec = spec.resolved()
    interrupted = False
    terminated = _cancel_on_sigterm()
    try:
        with Progress(tally, progress) as bar:
            def on_done(answered: Answered) -> None:
                output.add(answered)
                tally.add(answered)
                bar.update()

            if not todo:
                pass
            elif use_ray:
                await _check_run_topics(spec, todo)
                await _run_ray(spec, todo, fmt, concurrency, workers, ray_address, on_done)
            elif workers > 1:
                await _check_run_topics(spec, todo)
                await _run_processes(spec, todo, fmt, concurrency, workers, on_done)
            else:
                async with Runtime(spec) as runtime:
                    await _check_run_topics(spec, todo, runtime)
                    tally.started = time.perf_counter()  # rates measure answering, not opening the runtime
                    await answer_all(runtime, todo, fmt, concurrency, on_done)
                    if getattr(runtime.llm, "available", False) and hasattr(runtime.llm, "gate"):
                        tally.llm = dict(runtime.llm.gate.stats)
    except (asyncio.CancelledError, KeyboardInterrupt):  # Ctrl-C, or SIGTERM (a scheduler, `kill`): same ending
        interrupted = True
        if terminated():
            raise KeyboardInterrupt from None
        raise  # asyncio.run turns the cancellation into KeyboardInterrupt once its loop is shut down cleanly
    except OSError as exc:  # the journal could not be appended (a full disk)
        raise disk_full(exc, output, tally) from None
    finally:
        _restore_sigterm()
        try:
            output.finalize()
        except OSError as exc:  # a full disk: say what is kept and which questions failed (never hidden)
            if not interrupted:
                raise disk_full(exc, output, tally) from None
        if interrupted:
            global interrupted_note
            interrupted_note = _interrupted_note(output, tally, terminated())
    return summarize(output, questions, tally, len(questions) - len(todo))


# -- what a run checks before it reads its output, and what its sidecar records ------------------------
_RAY_ADDRESS = re.compile(r"(auto|local|(ray://)?[A-Za-z0-9_.\-]+:\d{1,5})")


async def check_options(spec: RunSpec, *, use_ray: bool = False, ray_address: str | None = None) -> None:
    """Every option of a run, checked before its output is read or any question answered: the method and
    its parameters, each KG's endpoint and --fallback (opened and closed: nothing is sent), --ray."""
    cls = method_class(spec.method)
    if hasattr(cls, "resolve"):
        cls.resolve(spec.params)
    async with Session(SessionSpec(kgs=spec.kgs, http=spec.http, cache=replace(spec.cache, enabled=False))):
        pass  # each KG's endpoint and fallbacks opened (nothing sent) and closed
    if use_ray:
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            raise KgfedError("--ray needs Ray: pip install 'kgfed[distributed]' (or run with --workers N on one machine)")
        if ray_address and not _RAY_ADDRESS.fullmatch(ray_address.strip()):
            raise KgfedError(f"--ray {ray_address!r} is not a Ray address: give HOST:PORT (e.g. 127.0.0.1:6379), "
                             "ray://HOST:PORT or auto, or --ray alone for a local cluster")
        if ray_address:
            await asyncio.to_thread(_check_ray_reachable, ray_address.strip())


RAY_CONNECT_SECONDS = 5.0  # a cluster's head answers a TCP connect at once; ray.init itself retries for minutes


def _check_ray_reachable(address: str) -> None:
    """A short TCP connect to --ray's HOST:PORT (ray.init keeps retrying an unreachable head for minutes)."""
    import socket

    if address in ("auto", "local"):
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=RAY_CONNECT_SECONDS).close()
    except (OSError, OverflowError) as exc:  # OverflowError: a port past 65535
        why = (f"no answer within {RAY_CONNECT_SECONDS:g} s" if isinstance(exc, TimeoutError)
               else getattr(exc, "strerror", None) or str(exc))
        raise KgfedError(f"--ray {address}: nothing answers at {host}:{port} ({why}): start the cluster there "
                         "(ray start --head --node-ip-address=127.0.0.1) or give its address; --ray alone starts "
                         "a local one") from None


def kg_scope(kg: KGSpec) -> str:
    """Whether a KG is a per-question subgraph fixture (a file of the shared data, a `*subgraph*` file, the
    bundled demo KG), a whole graph (an endpoint: a profile or URL) or a local RDF file of unknown extent."""
    if kg.endpoint is None:
        return "subgraph fixture"
    if not kg.endpoint.startswith("file:"):
        return "whole graph"
    from .datasets import data_dir

    path = Path(kg.endpoint[5:]).expanduser().resolve()
    return "subgraph fixture" if "subgraph" in path.name or path.is_relative_to(data_dir().resolve()) else "local file"


def run_meta(spec: RunSpec, fmt: str, dataset: str | None = None) -> dict[str, Any]:
    """The sidecar of a prediction file (`FILE.kgfed.json`): what wrote it, so `eval` knows its format and KG
    scope and a resume refuses another method, format or KG. No time stamp: a re-run writes the same bytes."""
    from ...sparql.secrets import redact
    from .. import __version__

    def endpoint(kg: KGSpec) -> str | None:
        if kg.endpoint and kg.endpoint.startswith("file:"):
            return "file:" + str(Path(kg.endpoint[5:]).expanduser().resolve())
        return redact(kg.endpoint) if kg.endpoint else None

    kgs = [{"name": k.name, "endpoint": endpoint(k), "dialect": k.effective_dialect, "scope": kg_scope(k),
            **({"fallbacks": [redact(f) for f in k.fallbacks]} if k.fallbacks else {})} for k in spec.kgs]
    return {"kgfed": "predictions", "kgfed_version": __version__, "method": spec.method, "format": fmt, "kgs": kgs,
            "dataset": dataset, "params": json.loads(json.dumps(spec.params, default=str)), "llm": redact(spec.llm),
            **({"text": redact(spec.text)} if spec.text else {})}


def _cancel_on_sigterm() -> Callable[[], bool]:
    """Make SIGTERM cancel the running task (so the output is finalized); returns 'was it SIGTERM?'."""
    import signal

    hit: list[bool] = []
    task = asyncio.current_task()

    def on_term() -> None:
        hit.append(True)
        if task is not None:
            task.cancel()

    try:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, on_term)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
        pass
    return lambda: bool(hit)


def _restore_sigterm() -> None:
    import signal

    try:
        asyncio.get_running_loop().remove_signal_handler(signal.SIGTERM)
    except (NotImplementedError, RuntimeError, ValueError):
        pass
