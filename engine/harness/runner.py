"""The KBQA run harness: one method over many questions, bounded, cached, resumable and Ctrl-C safe.

    spec = RunSpec("tog", kg_options={"kg": "freebase", "endpoint": ["freebase=file:cwq_subgraph.nt"]})
    summary = await run(spec, select_questions(load_dataset("cwq-subgraph"), limit=50), "preds.jsonl")

Questions run `concurrency` at a time over one shared `Runtime` (KGs, response cache, LLM, embedder,
method), or in chunks on `workers` processes / Ray actors that each build their own runtime over the
same cache directory (diskcache is process-safe). Every finished question is appended to the output
as one whole line and flushed (`tog`: the JSONL itself; `tog-json`/`tog2`: a `.partial` JSONL
journal), so an interrupted run leaves a valid file and a re-run skips the ids already there. At the
end (or on Ctrl-C) the output is rewritten atomically in dataset order, so a warm-cache re-run is
byte-identical: the prediction records carry only cache-independent cost figures (LLM calls and
tokens); the full per-question costs (SPARQL queries, requests sent, cache hits, seconds, ...) go
to a JSONL sidecar beside the predictions.
"""
from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config import CacheOptions, HttpOptions, KGSpec

from ...sparql.errors import KgfedError
from ..session import Session
from .datasets import Question, gold_answers, has_gold, read_records
from .evaluate import (NULL_ANSWER, Prediction, evaluate, prediction_from_record, prediction_record, tog_match,
                       write_predictions)
from .datasets import load_dataset as _load_dataset
from ..toolbox import gold_llm as _gold_llm

_gold_llm.question_loader = _load_dataset  # `--llm gold:FILE` reads the file as the harness does (toolbox cannot import it)

# Cost figures that do not depend on the cache or on timing: kept in the prediction records. SPARQL
# counts are not among them: alignments have their own cache, so a warm run asks fewer queries.
STABLE_COSTS = ("llm_calls", "input_tokens", "output_tokens")
MAX_FAILURES_BEFORE_SUCCESS = 10  # abort a run whose first questions all fail (a broken setup, not bad luck)
DEFAULT_IN_FLIGHT = 8  # questions at once per worker (`--in-flight`)
IN_FLIGHT_PER_LLM_CALL = 2  # with --llm-concurrency N: 2N questions at once by default (docs/llm.md, bench/llm_bound.py)
# What the last interrupted run kept (the CLI prints it once, in place of a bare "interrupted").
interrupted_note: str | None = None
PRELOAD_BELOW = 100  # load the embedding model in the background when its cache holds fewer vectors (a first run)
# open_kgs reads these options; RunSpec.kg_options overrides them.
KG_OPTION_DEFAULTS: dict[str, Any] = {"kg": None, "endpoint": None, "cache_dir": None, "no_cache": False, "offline": False,
                                      "timeout": 60.0, "concurrency": None, "user_agent": None, "contact": None,
                                      "refresh": False, "max_age": None, "partial": None, "fallback": None}


@dataclass
class RunSpec:
    """Everything a worker needs to rebuild the runtime (picklable: names and options, no objects).

    `method` is a registry name (tog, pog, ...) or `package.module:Class`; `kg_options` are the
    `--kg/--endpoint/--cache-dir/...` options `open_kgs` reads; `text` a text-source spec;
    `llm_concurrency` the calls in flight to the LLM for the whole run (`--llm-concurrency`; None: no cap).
    """

    method: str
    params: dict[str, Any] = field(default_factory=dict)
    kg_options: dict[str, Any] = field(default_factory=dict)
    llm: str = "none"
    text: str | None = None
    embeddings_dir: str | None = None
    llm_concurrency: int | None = None

    def resolved(self) -> RunSpec:
        """A copy with the cache root made explicit (an absolute directory or a Redis URL), so other
        processes and Ray actors on any node open the same stores."""
        from ...cache.root import CacheSpec

        options = self._options()
        root = CacheSpec.of(options["cache_dir"])
        if not options["no_cache"]:
            options["cache_dir"] = root.location
        embeddings = self.embeddings_dir or (None if options["no_cache"] else str(root.directory("embeddings")))
        return RunSpec(self.method, dict(self.params), options, self.llm, self.text, embeddings, self.llm_concurrency)

    def _options(self) -> dict[str, Any]:
        return {**KG_OPTION_DEFAULTS, **self.kg_options}

    def kg_specs(self) -> list[KGSpec]:
        """The run's KGs as value objects (from the `--kg`/`--endpoint`/`--partial` options)."""
        from ..config import kg_specs

        options = self._options()
        return kg_specs(options["kg"], options["endpoint"], partial=options["partial"], fallbacks=options["fallback"])

    def http_options(self) -> HttpOptions:
        from ..config import HttpOptions

        return HttpOptions.from_options(self._options())

    def cache_options(self) -> CacheOptions:
        from ..config import CacheOptions

        return CacheOptions.from_options(self._options())


def method_class(name: str):
    """The Method class for a registry name or `package.module:Class`."""
    if ":" not in name:
        from ..methods import get_method

        return get_method(name)
    import importlib

    module_name, _, class_name = name.partition(":")
    try:
        return getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise KgfedError(f"cannot load method {name!r} ({exc}): give a registry name or package.module:Class") from None


class Runtime(Session):
    """The run harness's session (`kgfed.engine.session.Session`) built from a `RunSpec`, plus its method.

    In the LLM-free mode a missing embeddings extra is a one-line error up front, and on a first run
    (an embedding cache with few vectors) the model starts loading in a background thread while the
    method's first KG queries run.
    """

    def __init__(self, spec: RunSpec):
        self.spec = spec.resolved()
        super().__init__(kgs=self.spec.kg_specs(), http=self.spec.http_options(), cache=self.spec.cache_options(),
                         llm=self.spec.llm, llm_concurrency=self.spec.llm_concurrency, text=self.spec.text,
                         embeddings=self.spec.embeddings_dir or False)

    async def __aenter__(self) -> Runtime:
        cls = method_class(self.spec.method)
        if hasattr(cls, "resolve"):  # a misspelt --param fails before any KG, LLM or model is opened
            cls.resolve(self.spec.params)
        if self.spec.llm == "none":
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
                self.method = cls(self.kgs, llm, embedder=embedder, text=text, **self.spec.params)
            except TypeError as exc:
                raise KgfedError(f"method {self.spec.method!r} rejects its parameters ({exc}): check --param") from None
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
        if embedder is None or self.spec.llm != "none" or ":" in self.spec.method:  # custom methods: on first use
            return
        cache = embedder.cache
        if cache is None or len(cache) < PRELOAD_BELOW:
            from ..toolbox.embeddings import preload

            preload(embedder.model_path)
        else:
            embedder.warm()  # with numpy imported, the embedder's look-ups run on the loop

    def topics_for(self, question: Question) -> dict[str, dict[str, str]]:
        """The question's topic entities per KG of the run (by KG name, else by the KG's dialect)."""
        return {name: dict(question.topics.get(name) or question.topics.get(kg.dialect.name) or {})
                for name, kg in self.kgs.items()}

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
        return Answered(question.id, to_prediction(question, result, fmt), dict(result.cost))


@dataclass
class Answered:
    """What one question produced: its prediction (None when it failed), full cost, error text."""

    id: str
    prediction: Prediction | None
    cost: dict[str, float]
    error: str | None = None


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
        ray.init(address=address or None, include_dashboard=False, log_to_driver=False,
                 **({} if address else {"num_cpus": max(workers, 1)}))
    actors = [ray.remote(ChunkWorker).options(num_cpus=1).remote(spec, fmt, concurrency) for _ in range(workers)]
    try:
        slots = [lambda part, actor=actor: actor.run.remote(part) for actor in actors]
        await _drive(slots, questions, max(1, concurrency), on_done)
    finally:
        for actor in actors:
            ray.kill(actor)
        if started:
            ray.shutdown()


# -- output ------------------------------------------------------------------------------------------
def costs_path_for(out: str | Path) -> Path:
    """`preds.jsonl` -> `preds.costs.jsonl` (the per-question cost sidecar)."""
    out = Path(out)
    return out.with_name(out.with_suffix("").name + ".costs.jsonl")


class Output:
    """The prediction file and its cost sidecar: loaded for resuming, appended line by line, and
    rewritten atomically in question order by `finalize`."""

    def __init__(self, path: str | Path, fmt: str, questions: Sequence[Question], costs: str | Path | None = None):
        self.path = Path(path)
        self.fmt = fmt
        self.costs_path = Path(costs) if costs else costs_path_for(self.path)
        self.journal = self.path if fmt == "tog" else self.path.with_name(self.path.name + ".partial")
        for target in (self.path, self.costs_path):
            if not target.parent.is_dir():
                raise KgfedError(f"cannot write {target}: directory {target.parent} does not exist")
        self._order = {q.id: i for i, q in enumerate(questions)}
        self._by_text = {}
        for q in questions:
            self._by_text.setdefault(q.text, q.id)
        self.predictions: dict[str, Prediction] = {}
        self.costs: dict[str, dict[str, Any]] = {}
        self._load()
        self._files: dict[Path, Any] = {}

    def _key(self, prediction: Prediction) -> str:
        return prediction.id or self._by_text.get(prediction.question) or f"\0{prediction.question}"

    def _load(self) -> None:
        sources = [self.path] if self.fmt == "tog" else [self.path, self.journal]
        for source in sources:
            if not source.is_file() or source.stat().st_size == 0:
                continue
            if source == self.journal:
                _drop_partial_line(source)
            for i, record in enumerate(read_records(source, what="prediction file")):
                prediction = prediction_from_record(record, self.fmt, f"{source} record {i} (resuming)")
                self.predictions.setdefault(self._key(prediction), prediction)
        if self.costs_path.is_file():
            _drop_partial_line(self.costs_path)
            for record in read_records(self.costs_path, what="cost file"):
                if "id" in record:
                    self.costs[str(record["id"])] = record

    @property
    def done(self) -> set[str]:
        return set(self.predictions)

    def _append(self, path: Path, record: Mapping[str, Any]) -> None:
        handle = self._files.get(path)
        if handle is None:
            handle = self._files[path] = path.open("a", encoding="utf-8")
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")  # one whole line per write
        handle.flush()

    def add(self, answered: Answered) -> None:
        if answered.prediction is None:
            return
        self.predictions[answered.id] = answered.prediction
        self.costs[answered.id] = {"id": answered.id, **answered.cost}
        self._append(self.journal, prediction_record(answered.prediction, self.fmt))
        self._append(self.costs_path, self.costs[answered.id])

    def _sorted(self, keys: Iterable[str]) -> list[str]:
        last = len(self._order)
        return sorted(keys, key=lambda k: self._order.get(k, last))  # stable: unknown ids keep their order

    def finalize(self) -> None:
        """Rewrite the predictions (and costs) in question order, atomically; drop the journal."""
        for handle in self._files.values():
            handle.close()
        self._files.clear()
        if not self.predictions and not self.path.exists():
            return
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        write_predictions([self.predictions[k] for k in self._sorted(self.predictions)], tmp, self.fmt)
        os.replace(tmp, self.path)
        if self.journal != self.path and self.journal.exists():
            self.journal.unlink()
        tmp = self.costs_path.with_name(f".{self.costs_path.name}.{os.getpid()}.tmp")
        tmp.write_text("".join(json.dumps(self.costs[k], ensure_ascii=False) + "\n" for k in self._sorted(self.costs)),
                       encoding="utf-8")
        os.replace(tmp, self.costs_path)


from .files import drop_partial_line as _drop_partial_line  # noqa: E402  (shared with `extract`)


# -- progress and figures ----------------------------------------------------------------------------
class Tally:
    """Running figures of a run: done, failed, Hits@1 by ToG's rule, cache-hit rate, rates per second."""

    def __init__(self, questions: Sequence[Question], total: int):
        self.by_id = {q.id: q for q in questions}
        self.total = total
        self.done = self.hits = 0
        self.failures: dict[str, str] = {}
        self.cost: dict[str, float] = {}
        self.llm: dict[str, float] = {}  # the LLM gate's figures (calls, peak in flight, busy answers, paused s)
        self.started = time.perf_counter()

    def add(self, answered: Answered) -> None:
        if answered.prediction is None:
            self.failures[answered.id] = answered.error or "failed"
            if not self.done and len(self.failures) >= MAX_FAILURES_BEFORE_SUCCESS:
                raise KgfedError(f"the first {len(self.failures)} questions all failed (first: {next(iter(self.failures.values()))}): "
                                 "fix the setup (endpoint, --llm, method parameters) and run again")
            return
        self.done += 1
        question = self.by_id[answered.id]
        self.hits += not answered.prediction.null and tog_match(answered.prediction.answer, gold_answers(question))
        for key, value in answered.cost.items():
            if isinstance(value, (int, float)):
                self.cost[key] = self.cost.get(key, 0) + value

    @property
    def elapsed(self) -> float:
        return max(time.perf_counter() - self.started, 1e-9)

    def figures(self) -> dict[str, float]:
        queries = self.cost.get("sparql_queries", 0)
        return {"hits@1": self.hits / self.done if self.done else 0.0,
                "cache_hit_rate": self.cost.get("cache_hits", 0) / queries if queries else 0.0,
                "questions_per_second": self.done / self.elapsed, "queries_per_second": queries / self.elapsed}

    def line(self) -> str:
        f = self.figures()
        failed = f" · {len(self.failures)} failed" if self.failures else ""
        scored = any(has_gold(q) for q in self.by_id.values())  # plain questions: nothing to score
        return (f"{'Hits@1 ' + format(f['hits@1'], '.3f') if scored else 'no gold'} · cache {f['cache_hit_rate']:.0%} · {f['questions_per_second']:.1f} q/s · "
                f"{f['queries_per_second']:.0f} queries/s{failed}")


class Progress:
    """A rich progress bar on stderr (done/total, ETA, running figures); periodic lines when not a terminal."""

    def __init__(self, tally: Tally, enabled: bool = True):
        self.tally = tally
        self.enabled = enabled
        self._bar = None
        self._last = 0.0
        self._loading = False
        self._hook = None

    def loading(self, started: bool) -> None:
        """`embeddings.on_loading` while the bar is shown: the bar says the model is loading."""
        self._loading = started
        self.update()

    def __enter__(self) -> Progress:
        from rich.console import Console

        console = Console(stderr=True)
        if self.enabled and console.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeRemainingColumn

            self._bar = Bar(TextColumn("run"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                            TextColumn("{task.fields[stats]}"), console=console, transient=False)
            self._bar.__enter__()
            self._task = self._bar.add_task("run", total=self.tally.total, stats="starting…")
            from ..toolbox import embeddings

            self._hook, embeddings.on_loading = embeddings.on_loading, self.loading
        return self

    def update(self) -> None:
        t = self.tally
        if self._bar is not None:
            stats = ("loading the sentence-embedding model…" if self._loading else
                     t.line() if t.done or t.failures else "starting…")
            self._bar.update(self._task, completed=t.done + len(t.failures), stats=stats)
        elif self.enabled and time.perf_counter() - self._last >= 10:
            self._last = time.perf_counter()
            print(f"kgfed: {t.done + len(t.failures)}/{t.total} · {t.line()}", file=sys.stderr, flush=True)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            from ..toolbox import embeddings

            embeddings.on_loading = self._hook
            self.update()
            self._bar.__exit__(*exc)


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
        for kg, ids in question.topics.items():
            given.setdefault(kg, []).extend(i for i in ids if i not in given.get(kg, []))
    usable = {kg.dialect.name for kg in kgs.values()} | set(kgs)
    if given and not set(given) & usable:  # topics only for KGs the run does not have: all would be linked anew
        other = sorted(given)[0]
        shown = ", ".join(given[other][:3]) + (", …" if len(given[other]) > 3 else "")
        raise KgfedError(f"the questions' topic entities are {other} ids ({shown}) but the run's KGs are "
                         f"{', '.join(kgs)}: add --kg {other} --endpoint {other}=SPEC (e.g. {other}=file:KG.nt)")
    for name, kg in kgs.items():
        ids: list[str] = []
        for question in questions:
            topics = question.topics.get(name) or question.topics.get(kg.dialect.name) or {}
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
    """`check_topics` over the run's KGs (the runtime's, else opened for the check and closed)."""
    from ..config import close_kgs, open_kgs

    demo = [s.name for s in spec.kg_specs() if s.endpoint is None]
    if runtime is not None:
        await check_topics(runtime.kgs, questions, demo)
        return
    kgs = open_kgs(spec.kg_specs(), http=spec.http_options(), cache=spec.cache_options())
    try:
        await check_topics(kgs, questions, demo)
    finally:
        await close_kgs(kgs)


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
              costs: str | Path | None = None, progress: bool = True) -> dict[str, Any]:
    """Answer the questions not yet in `out`, write them, and return the summary (see `summarize`).

    `concurrency` is the questions in flight per worker (default `in_flight_for(spec)`); with several
    workers the LLM cap `spec.llm_concurrency` is shared among them."""
    if concurrency is None:
        concurrency = in_flight_for(spec, workers)
    if concurrency < 1 or workers < 1:
        raise KgfedError("--concurrency and --workers must be at least 1")
    spec = _share_llm(spec, workers)
    output = Output(out, fmt, questions, costs)
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
        raise _disk_full(exc, output, tally) from None
    finally:
        _restore_sigterm()
        try:
            output.finalize()
        except OSError as exc:  # a full disk: say what is kept and which questions failed (never hidden)
            if not interrupted:
                raise _disk_full(exc, output, tally) from None
        if interrupted:
            global interrupted_note
            interrupted_note = _interrupted_note(output, tally, terminated())
    return summarize(output, questions, tally, len(questions) - len(todo))


def _disk_full(exc: OSError, output: Output, tally: Tally) -> KgfedError:
    """The one-line error of a run whose files could not be written: what is kept, what failed, the fix."""
    from .files import disk_error

    for tmp in (output.path, output.costs_path):  # a half-written replacement takes space and is never read
        tmp.with_name(f".{tmp.name}.{os.getpid()}.tmp").unlink(missing_ok=True)
    first = next(iter(tally.failures.items()), None)
    failed = f"; {len(tally.failures)} question(s) failed (first: {first[0]}: {first[1]})" if first else ""
    return disk_error(exc, exc.filename or output.path,
                      f"free space, then run the same command again to resume ({tally.done} new answers kept{failed})")


def _interrupted_note(output: Output, tally: Tally, sigterm: bool) -> str:
    """What an interrupted run kept: the answers in the file, or that nothing was written."""
    why = "interrupted (SIGTERM)" if sigterm else "interrupted"
    if output.path.exists() and output.predictions:
        return f"{why}: {tally.done} new answers kept in {output.path} ({len(output.predictions)} in all; run again to resume)"
    return f"{why} before any question was answered: nothing written"


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


def summarize(output: Output, questions: Sequence[Question], tally: Tally, skipped: int) -> dict[str, Any]:
    """Scores of everything in the output for these questions (ToG rule and strict) and this run's rates."""
    wanted = {q.id for q in questions}
    predictions = [p for k, p in output.predictions.items() if k in wanted]
    scored = any(has_gold(q) for q in questions)  # a plain question file has no gold: nothing to score
    report = evaluate(predictions, questions) if predictions and scored else None
    n = tally.done
    cost = tally.cost
    return {
        "out": str(output.path), "costs": str(output.costs_path), "questions": len(questions),
        "answered": len(predictions), "new": n, "skipped": skipped, "failed": len(tally.failures),
        "failures": dict(list(tally.failures.items())[:20]),
        "hits@1": report.hits_at_1 if report else (0.0 if scored else None),
        "strict": report.strict if report else (0.0 if scored else None),
        "seconds": round(tally.elapsed, 3),
        "questions_per_second": round(n / tally.elapsed, 3) if n else 0.0,
        "queries_per_question": round(cost.get("sparql_queries", 0) / n, 3) if n else 0.0,
        "requests_per_question": round(cost.get("requests_sent", 0) / n, 3) if n else 0.0,
        "cache_hit_rate": round(cost.get("cache_hits", 0) / cost["sparql_queries"], 4) if cost.get("sparql_queries") else 0.0,
        "llm_calls_per_question": round(cost.get("llm_calls", 0) / n, 3) if n else 0.0,
        "tokens_per_question": round((cost.get("input_tokens", 0) + cost.get("output_tokens", 0)) / n, 1) if n else 0.0,
        "cost": {k: round(v, 4) if isinstance(v, float) else v for k, v in sorted(cost.items())},
        **({"llm_gate": {k: round(v, 2) for k, v in sorted(tally.llm.items())}} if tally.llm else {}),
    }
