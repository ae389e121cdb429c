"""What a run writes and shows: the prediction file and its cost sidecar, the running figures, the progress bar.

The run loop (`harness.runner.run`) hands every finished question, an `Answered`, to three objects:

- `Output`: the predictions and costs, loaded for resuming, appended one whole line per question and
  flushed (`tog`: the JSONL itself; `tog-json`/`tog2`: a `.partial` JSONL journal), and rewritten
  atomically in dataset order by `finalize`, so a warm-cache re-run is byte-identical. Beside the
  predictions, `FILE.kgfed.json` says what wrote them (method, format, KGs, dataset, options). Every check
  comes before any write: a file that is no prediction file, or one written with another method, format or
  KG, is refused and left byte-identical; an unfinished last line is cut only in a file kgfed wrote;
- `Tally`: the running figures (done, failed, Hits@1 by ToG's rule, cache-hit rate, rates), which also
  stops a run whose first `MAX_FAILURES_BEFORE_SUCCESS` questions all failed (a broken setup);
- `Progress`: a rich bar on a terminal, a line every 10 s otherwise.

`summarize` turns them into the run's report; `disk_full` and `interrupted_note` say what was kept when
the disk filled or the run was stopped. Nothing here opens a KG, an LLM or a model.
"""
from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...cache.costs import headline
from ...sparql.errors import KgfedError
from .datasets import Question, gold_answers, has_gold, read_records
from .evaluate import (
    Prediction, evaluate, meta_dialects, meta_path_for, prediction_from_record, prediction_record, read_meta,
    sniff_predictions, tog_match, write_predictions,
)
from .files import drop_partial_line as _drop_partial_line  # shared with `extract`

if TYPE_CHECKING:
    from rich.progress import Progress as RichProgress, TaskID

__all__ = ["Answered", "Output", "Tally", "Progress", "costs_path_for", "summarize", "disk_full", "interrupted_note",
           "MAX_FAILURES_BEFORE_SUCCESS"]

MAX_FAILURES_BEFORE_SUCCESS = 10  # abort a run whose first questions all fail (a broken setup, not bad luck)


@dataclass
class Answered:
    """What one question produced: its prediction (None when it failed), full cost, error text."""

    id: str
    prediction: Prediction | None
    cost: dict[str, float]
    error: str | None = None

# -- the prediction file and its cost sidecar ---------------------------------------------------------------------------------------
def costs_path_for(out: str | Path) -> Path:
    """`preds.jsonl` -> `preds.costs.jsonl` (the per-question cost sidecar)."""
    out = Path(out)
    return out.with_name(out.with_suffix("").name + ".costs.jsonl")


class Output:
    """The prediction file and its cost sidecar: loaded for resuming, appended line by line, and
    rewritten atomically in question order by `finalize`."""

    def __init__(self, path: str | Path, fmt: str, questions: Sequence[Question], costs: str | Path | None = None,
                 meta: Mapping[str, Any] | None = None):
        self.path = Path(path)
        self.fmt = fmt
        self.costs_path = Path(costs) if costs else costs_path_for(self.path)
        self.journal = self.path if fmt == "tog" else self.path.with_name(self.path.name + ".partial")
        self.meta_path = meta_path_for(self.path)
        self.meta = {"kgfed": "predictions", **(meta or {}), "format": fmt}
        for target in (self.path, self.costs_path):
            if not target.parent.is_dir():
                raise KgfedError(f"cannot write {target}: directory {target.parent} does not exist")
        self._order = {q.id: i for i, q in enumerate(questions)}
        self._by_text: dict[str, str] = {}
        for q in questions:
            self._by_text.setdefault(q.text, q.id)
        self.predictions: dict[str, Prediction] = {}
        self.costs: dict[str, dict[str, Any]] = {}
        self._files: dict[Path, Any] = {}
        self._meta_written = False
        self._torn: set[Path] = set()  # files whose last line a killed run left unfinished
        self._own = self._check()  # read-only: every refusal comes before any write
        self._load()

    def _key(self, prediction: Prediction) -> str:
        return prediction.id or self._by_text.get(prediction.question) or f"\0{prediction.question}"

    # The options a resumed file must have been written with (the rest, e.g. --in-flight, may change).
    RESUME_KEYS = ("method", "format", "kgs")

    def _check(self) -> bool:
        """Refuse, before anything is written, to resume a file that is not kgfed's to extend: not a
        prediction file, another format, method or KG (its sidecar), or a foreign file with a torn last
        line. Returns whether the files are kgfed's own (then a torn last line may be cut)."""
        main = sniff_predictions(self.path) if self.path.is_file() else None
        journal = sniff_predictions(self.journal) if self.journal != self.path and self.journal.is_file() else None
        old = read_meta(self.path) if main or journal else None
        if old is not None:
            self._refuse_other_options(old)
        found = main.format if main and main.format else journal.format if journal and journal.format else None
        if found is not None and _field(found) != _field(self.fmt) or main and main.format not in (None, self.fmt):
            raise KgfedError(f"{self.path} holds {found} predictions, not {self.fmt}: pass --format {found} to resume it, "
                             "or choose another --out (the file is left as it is)")
        sniffed = [s for s in (main, journal) if s is not None]
        self._torn = {f for f, s in ((self.path, main), (self.journal, journal)) if s is not None and s.torn}
        own = old is not None or all(s.own or s.format is None and not s.torn for s in sniffed)
        if any(s.torn for s in sniffed) and not own:
            raise KgfedError(f"{self.path} ends in an unfinished line and kgfed did not write it (no {self.meta_path.name}): "
                             "choose another --out; the file is left as it is")
        self._check_costs(own)
        return own

    def _refuse_other_options(self, old: Mapping[str, Any]) -> None:
        differ = [k for k in self.RESUME_KEYS if k in self.meta and _resumable(k, old.get(k)) != _resumable(k, self.meta[k])]
        if differ:
            then = " ".join(_option(k, old.get(k)) for k in differ)
            now = " ".join(_option(k, self.meta.get(k)) for k in differ)
            raise KgfedError(f"{self.path} was written with {then} ({self.meta_path.name}); this run asks {now}: resume it "
                             "with the same options, or choose another --out (the file is left as it is)")

    def _check_costs(self, own: bool) -> None:
        if not self.costs_path.is_file() or self.costs_path.stat().st_size == 0:
            return
        try:
            lines = self.costs_path.read_bytes().decode("utf-8").split("\n")
            rows = [json.loads(line) for line in lines[:-1] if line.strip()]
            ours = all(isinstance(r, dict) and "id" in r for r in rows) and (own or not lines[-1])
        except (OSError, UnicodeDecodeError, ValueError):
            ours = False
        if not ours:
            raise KgfedError(f"{self.costs_path} is not a kgfed cost file: choose another --costs (or --out); the file "
                             "is left as it is")

    def _load(self) -> None:
        sources = [self.path] if self.fmt == "tog" else [self.path, self.journal]
        for source in sources:
            if not source.is_file() or source.stat().st_size == 0:
                continue
            if source in self._torn and self._own:
                _drop_partial_line(source)
            for i, record in enumerate(read_records(source, what="prediction file")):
                prediction = prediction_from_record(record, self.fmt, f"{source} record {i} (resuming)")
                self.predictions.setdefault(self._key(prediction), prediction)
        if self.costs_path.is_file():
            _drop_partial_line(self.costs_path)
            for record in read_records(self.costs_path, what="cost file"):
                if "id" in record:
                    self.costs[str(record["id"])] = record

    def _write_meta(self) -> None:
        """The sidecar, once per run, before the first prediction is written (a killed run leaves it too)."""
        if self._meta_written:
            return
        tmp = self.meta_path.with_name(f".{self.meta_path.name}.{os.getpid()}.tmp")
        try:  # an OSError (a full disk) goes up as it is: the run says what it kept (`disk_full`)
            tmp.write_text(json.dumps(self.meta, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            os.replace(tmp, self.meta_path)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise
        self._meta_written = True

    @property
    def done(self) -> set[str]:
        return set(self.predictions)

    def _append(self, path: Path, record: Mapping[str, Any]) -> None:
        self._write_meta()
        handle = self._files.get(path)
        if handle is None:
            ends_open = path.is_file() and path.stat().st_size > 0 and not path.read_bytes().endswith(b"\n")
            handle = self._files[path] = path.open("a", encoding="utf-8")
            if ends_open:  # a whole last record without its line feed (a file written by hand or another tool)
                handle.write("\n")
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
        self._write_meta()
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        write_predictions([self.predictions[k] for k in self._sorted(self.predictions)], tmp, self.fmt)
        os.replace(tmp, self.path)
        if self.journal != self.path and self.journal.exists():
            self.journal.unlink()
        tmp = self.costs_path.with_name(f".{self.costs_path.name}.{os.getpid()}.tmp")
        tmp.write_text("".join(json.dumps(self.costs[k], ensure_ascii=False) + "\n" for k in self._sorted(self.costs)),
                       encoding="utf-8")
        os.replace(tmp, self.costs_path)


def _resumable(key: str, value: Any) -> Any:
    """What must match to resume: a KG's name and endpoint (its --fallback, dialect and scope may change)."""
    if key == "kgs" and isinstance(value, list):
        return [(k.get("name"), k.get("endpoint")) for k in value if isinstance(k, dict)]
    return value


def _field(fmt: str) -> str:
    return "answer" if fmt == "tog2" else "results"


def _option(key: str, value: Any) -> str:
    """A sidecar value as the options that give it (`--kg freebase=file:/d/fb.nt`)."""
    if key == "kgs" and isinstance(value, list):
        return "--kg " + ",".join(f"{k.get('name')}={k.get('endpoint') or 'demo'}" for k in value if isinstance(k, dict))
    return f"--{key} {value}"


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
        self._bar: RichProgress | None = None
        self._task: TaskID
        self._last = 0.0
        self._loading = False
        self._hook: Callable[[bool], None] | None = None

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

def disk_full(exc: OSError, output: Output, tally: Tally) -> KgfedError:
    """The one-line error of a run whose files could not be written: what is kept, what failed, the fix."""
    from .files import disk_error

    for tmp in (output.path, output.costs_path):  # a half-written replacement takes space and is never read
        tmp.with_name(f".{tmp.name}.{os.getpid()}.tmp").unlink(missing_ok=True)
    first = next(iter(tally.failures.items()), None)
    failed = f"; {len(tally.failures)} question(s) failed (first: {first[0]}: {first[1]})" if first else ""
    return disk_error(exc, exc.filename or output.path,
                      f"free space, then run the same command again to resume ({tally.done} new answers kept{failed})")


def interrupted_note(output: Output, tally: Tally, sigterm: bool) -> str:
    """What an interrupted run kept: the answers in the file, or that nothing was written."""
    why = "interrupted (SIGTERM)" if sigterm else "interrupted"
    if output.path.exists() and output.predictions:
        return f"{why}: {tally.done} new answers kept in {output.path} ({len(output.predictions)} in all; run again to resume)"
    return f"{why} before any question was answered: nothing written"

def peak_rss_mb() -> float:
    """The largest resident set, in MB, of this process and of any worker process it waited for (getrusage)."""
    import resource

    kb = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return round(kb / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)  # macOS reports bytes, Linux kilobytes


def summarize(output: Output, questions: Sequence[Question], tally: Tally, skipped: int) -> dict[str, Any]:
    """Scores of everything in the output for these questions (ToG rule and strict) and this run's rates."""
    wanted = {q.id for q in questions}
    predictions = [p for k, p in output.predictions.items() if k in wanted]
    scored = any(has_gold(q) for q in questions)  # a plain question file has no gold: nothing to score
    report = evaluate(predictions, questions, kgs=meta_dialects(output.meta)) if predictions and scored else None
    n = tally.done
    cost = tally.cost
    return {
        "out": str(output.path), "costs": str(output.costs_path), "questions": len(questions),
        "answered": len(predictions), "new": n, "skipped": skipped, "failed": len(tally.failures),
        "failures": dict(list(tally.failures.items())[:20]),
        "hits@1": report.hits_at_1 if report else (0.0 if scored else None),
        "strict": report.strict if report else (0.0 if scored else None),
        "em": report.em if report else (0.0 if scored else None),
        "f1": report.f1 if report else (0.0 if scored else None),
        "kg": "; ".join(f"{k['name']} = {k['scope']} ({k['endpoint'] or 'bundled demo KG'})"
                        for k in output.meta.get("kgs") or [] if "scope" in k) or None,
        "seconds": round(tally.elapsed, 3),
        "questions_per_second": round(n / tally.elapsed, 3) if n else 0.0,
        "queries_per_question": round(cost.get("sparql_queries", 0) / n, 3) if n else 0.0,
        "requests_per_question": round(cost.get("requests_sent", 0) / n, 3) if n else 0.0,
        "cache_hit_rate": round(cost.get("cache_hits", 0) / cost["sparql_queries"], 4) if cost.get("sparql_queries") else 0.0,
        "llm_calls_per_question": round(cost.get("llm_calls", 0) / n, 3) if n else 0.0,
        "tokens_per_question": round((cost.get("input_tokens", 0) + cost.get("output_tokens", 0)) / n, 1) if n else 0.0,
        "per_question": headline(cost, n),  # cache.costs.headline: the cost of a question as the README's table shows it
        "cost": {k: round(v, 4) if isinstance(v, float) else v for k, v in sorted(cost.items())},
        "peak_rss_mb": peak_rss_mb(),
        **({"llm_gate": {k: round(v, 2) for k, v in sorted(tally.llm.items())}} if tally.llm else {}),
    }
