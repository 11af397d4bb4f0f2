"""Fold a corpus: many transcripts into one report, in parallel worker processes.

Each file is folded on its own into a FileSummary (counts, never events), and summaries
are merged as they arrive. Every merge is an exact sum and the report lists files and
tools in sorted order, so it is the same byte for byte whatever the number of workers and
the order files finish in. The driver keeps one small row per file and the merged counts:
its memory does not grow with the size of the files.
"""

from __future__ import annotations

import concurrent.futures
import glob
import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator, Sequence

import attrs

from mini_harness.events import JsonObject, JsonValue
from mini_harness.replay.corpus_summary import (
    EXIT_CODES,
    FOLD,
    OK,
    PROBLEMS,
    STATUSES,
    UNREADABLE,
    FileSummary,
    RegistryFactory,
    SummaryMerge,
    SummaryOptions,
    ToolFigures,
    file_size,
    summarize_batch,
    summarize_file,
)
from mini_harness.replay.model import OUTCOMES, AgentFigures

PERCENTILES = (50, 95, 99)
BATCH_FILES = 64
_GLOB_CHARS = frozenset("*?[")

Progress = Callable[[FileSummary], None]
"""Called in the driver once per file, as each one is done (in the order they finish)."""


@attrs.frozen
class CorpusFile:
    """A file to fold, found by expanding the paths given; `missing` says why there is none."""

    path: str
    size: int = 0
    missing: str | None = None


def expand_paths(paths: Iterable[str | os.PathLike[str]]) -> list[CorpusFile]:
    """Files, directories (every `*.jsonl` below them) and globs, as sorted unique files.

    A path that names nothing is kept as a CorpusFile with `missing` set, so the report
    says so instead of the corpus being refused.
    """
    found: dict[str, CorpusFile] = {}
    for given in paths:
        text = os.fspath(given)
        if os.path.isdir(text):
            names = sorted(
                glob.glob(os.path.join(glob.escape(text), "**", "*.jsonl"), recursive=True)
            )
            matches = [name for name in names if os.path.isfile(name)]
            why = f"no *.jsonl file under the directory {text}"
        elif not os.path.lexists(text) and _GLOB_CHARS & set(text):
            matches = sorted(
                name for name in glob.glob(text, recursive=True) if os.path.isfile(name)
            )
            why = f"no file matches {text}"
        else:
            matches = [text]
            why = ""
        if not matches:
            found.setdefault(text, CorpusFile(text, missing=why))
        for name in matches:
            key = os.path.normpath(os.path.abspath(name))
            if key not in found:
                found[key] = CorpusFile(name, file_size(name))
    return sorted(found.values(), key=lambda item: item.path)


def is_corpus(paths: Sequence[str]) -> bool:
    """Whether the paths ask for a corpus: several, a directory or a glob (not one file)."""
    if len(paths) != 1:
        return True
    path = paths[0]
    return os.path.isdir(path) or (not os.path.lexists(path) and bool(_GLOB_CHARS & set(path)))


@attrs.frozen
class ToolReport:
    """One tool over the corpus: its calls, failure rates and duration percentiles."""

    name: str
    figures: ToolFigures

    @property
    def failure_rate(self) -> float:
        return self.figures.failed / self.figures.calls if self.figures.calls else 0.0

    def percentiles(self) -> dict[str, float | None]:
        return {f"p{p}": self.figures.percentile(p) for p in PERCENTILES}

    def to_json(self) -> JsonObject:
        figures = self.figures
        calls = figures.calls
        errors: JsonObject = {
            kind: {"calls": figures.errors[kind], "rate": figures.errors[kind] / calls}
            for kind in sorted(figures.errors)
        }
        return {
            "name": self.name,
            "calls": calls,
            "failed": figures.failed,
            "inDoubt": figures.in_doubt,
            "failureRate": self.failure_rate,
            "errors": errors,
            "durationMs": dict[str, JsonValue](self.percentiles()),
        }


@attrs.frozen
class CorpusReport:
    """One report over many files: a row per file (sorted by path) and corpus totals."""

    files: tuple[FileSummary, ...]
    tools: tuple[ToolReport, ...]
    agent: AgentFigures
    rerun: dict[str, int] | None

    def count(self, status: str) -> int:
        return sum(1 for item in self.files if item.status == status)

    @property
    def exit_code(self) -> int:
        """As for one file, over the worst file: 0 ok, 1 problems or differences, 2 unreadable."""
        return max((EXIT_CODES[item.status] for item in self.files), default=0)

    @property
    def calls(self) -> int:
        return sum(item.calls for item in self.files)

    @property
    def in_doubt(self) -> int:
        return sum(item.in_doubt for item in self.files)

    @property
    def events(self) -> int:
        return sum(item.events for item in self.files)

    def errors(self) -> dict[str, int]:
        """Failed calls by error kind, over every tool."""
        out: dict[str, int] = {}
        for tool in self.tools:
            for kind, count in tool.figures.errors.items():
                out[kind] = out.get(kind, 0) + count
        return {kind: out[kind] for kind in sorted(out)}

    def damaged(self) -> list[str]:
        """The files with integrity problems (a broken chain, damage, a torn tail)."""
        return [item.path for item in self.files if item.integrity_problems]

    def to_json(self) -> JsonObject:
        calls = self.calls
        errors: JsonObject = {
            kind: {"calls": count, "rate": count / calls if calls else 0.0}
            for kind, count in self.errors().items()
        }
        totals: JsonObject = {
            "files": len(self.files),
            **{status: self.count(status) for status in STATUSES},
            "events": self.events,
            "runs": sum(item.runs for item in self.files),
            "calls": calls,
            "failed": sum(item.failed for item in self.files),
            "inDoubt": self.in_doubt,
            "problems": sum(item.problems for item in self.files),
            "errors": errors,
            "filesWithIntegrityProblems": list[JsonValue](self.damaged()),
        }
        return {
            "files": [item.to_json() for item in self.files],
            "tools": [tool.to_json() for tool in self.tools],
            "agentRuns": self.agent.to_json(),
            "rerun": None if self.rerun is None else dict[str, JsonValue](self.rerun),
            "totals": totals,
            "exitCode": self.exit_code,
        }


def corpus_report(merge: SummaryMerge, *, rerun: bool = False) -> CorpusReport:
    """The report of merged summaries: files sorted by path, tools by name."""
    outcomes: dict[str, int] | None = None
    if rerun:
        outcomes = dict.fromkeys(OUTCOMES, 0)
        for row in merge.rows:
            for outcome, count in (row.rerun or {}).items():
                outcomes[outcome] = outcomes.get(outcome, 0) + count
    return CorpusReport(
        files=tuple(sorted(merge.rows, key=lambda row: row.path)),
        tools=tuple(ToolReport(name, merge.tools[name]) for name in sorted(merge.tools)),
        agent=merge.agent,
        rerun=outcomes,
    )


def missing_summary(item: CorpusFile) -> FileSummary:
    return FileSummary(item.path, status=UNREADABLE, error=item.missing)


def fold_corpus(
    paths: Iterable[str | os.PathLike[str]],
    *,
    workers: int | None = None,
    mode: str = FOLD,
    rerun: RegistryFactory | None = None,
    allow_side_effects: bool = False,
    progress: Progress | None = None,
) -> CorpusReport:
    """Fold every transcript the paths name (files, directories, globs) into one report.

    `workers` processes fold files in parallel (default: the machine's cores; 1 folds in
    this process). `mode` "verify" checks each file as `transcript verify` does instead.
    `rerun`, a picklable function returning a ToolRegistry, re-runs each file's calls
    against it with the usual safety rules (`allow_side_effects` to run every tool).
    """
    options = SummaryOptions(mode, rerun, allow_side_effects)
    return fold_files(expand_paths(paths), options, workers=workers, progress=progress)


def fold_files(
    files: Sequence[CorpusFile],
    options: SummaryOptions,
    *,
    workers: int | None = None,
    progress: Progress | None = None,
) -> CorpusReport:
    """`fold_corpus` over files already expanded (see `expand_paths`)."""
    merge = SummaryMerge()
    for part in summarize_files(files, options, workers=workers):
        merge_part(merge, part, progress)
    return corpus_report(merge, rerun=options.rerun is not None)


def merge_part(
    merge: SummaryMerge, part: FileSummary | SummaryMerge, progress: Progress | None
) -> None:
    """Add one file's summary or one batch's to `merge`, telling `progress` of each file."""
    if isinstance(part, FileSummary):
        merge.add(part)
        rows = [part]
    else:
        merge.merge(part)
        rows = part.rows
    if progress is not None:
        for row in rows:
            progress(row)


def batches(paths: Sequence[str], workers: int) -> list[list[str]]:
    """Paths in batches: about 8 per worker (so the last ones finish close together), of at
    most BATCH_FILES files (so progress moves and a lost batch costs little)."""
    size = max(1, min(BATCH_FILES, len(paths) // (workers * 8)))
    return [list(paths[start : start + size]) for start in range(0, len(paths), size)]


def summarize_files(
    files: Sequence[CorpusFile], options: SummaryOptions, *, workers: int | None = None
) -> Iterator[FileSummary | SummaryMerge]:
    """Summaries as they are done: missing files first, then each file (in this process) or
    each batch of files (from worker processes)."""
    count = workers if workers is not None else (os.cpu_count() or 1)
    if count < 1:
        raise ValueError(f"workers must be at least 1, not {count}")
    todo = []
    for item in files:
        if item.missing is not None:
            yield missing_summary(item)
        else:
            todo.append(item.path)
    if count == 1 or len(todo) <= 1:
        for path in todo:
            yield shown_as(path, summarize_file(os.path.abspath(path), options))
        return
    yield from _in_processes(batches(todo, count), options, min(count, len(todo)))


def _in_processes(
    parts: list[list[str]], options: SummaryOptions, workers: int
) -> Iterator[SummaryMerge]:
    """Batches summed up by a process pool, a bounded number in flight at a time."""
    # forkserver: a fork of a process with threads (a CLI with a progress thread, a test
    # runner) can deadlock; spawn where there is no forkserver.
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        # Workers fork from a server that has imported the fold once, not each on its own.
        context.set_forkserver_preload([summarize_batch.__module__])
    pending = iter(parts)
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        running: dict[concurrent.futures.Future[SummaryMerge], list[str]] = {}

        def submit() -> None:
            for part in pending:
                # Absolute: a worker's directory may not be this one's by the time it starts.
                absolute = [os.path.abspath(path) for path in part]
                running[pool.submit(summarize_batch, absolute, options)] = part
                return

        try:
            for _ in range(workers * 2):
                submit()
            while running:
                done, _ = concurrent.futures.wait(
                    running, return_when=concurrent.futures.FIRST_COMPLETED
                )
                for future in done:
                    part = running.pop(future)
                    submit()
                    try:
                        yield batch_shown_as(part, future.result())
                    except concurrent.futures.process.BrokenProcessPool as exc:
                        yield lost_batch(part, f"worker died: {exc}")
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise


def batch_shown_as(paths: Sequence[str], batch: SummaryMerge) -> SummaryMerge:
    """The batch's rows under the paths as given (rows come back in the batch's order)."""
    for path, row in zip(paths, batch.rows, strict=True):
        shown_as(path, row)
    return batch


def lost_batch(paths: Sequence[str], error: str) -> SummaryMerge:
    """A batch whose worker was lost: each of its files is reported unreadable."""
    batch = SummaryMerge()
    for path in paths:
        batch.add(FileSummary(path, status=UNREADABLE, error=error))
    return batch


def shown_as(path: str, summary: FileSummary) -> FileSummary:
    """The summary under the path as it was given (workers are handed absolute paths)."""
    if summary.error is not None:
        summary.error = summary.error.replace(os.path.abspath(path), path)
    summary.path = path
    return summary


__all__ = [
    "OK",
    "PROBLEMS",
    "UNREADABLE",
    "CorpusFile",
    "CorpusReport",
    "ToolReport",
    "corpus_report",
    "expand_paths",
    "fold_corpus",
    "fold_files",
    "is_corpus",
]
