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
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Literal, TypeVar

import attrs

from mini_harness.errors import ExitCode, exit_code_of
from mini_harness.events import JsonObject, JsonValue
from mini_harness.replay.continuing.outcomes import OUTCOMES
from mini_harness.replay.corpus.summary import (
    FOLD,
    PROBLEMS,
    STATUSES,
    UNREADABLE,
    FileSummary,
    RegistryFactory,
    SummaryMerge,
    SummaryOptions,
    ToolFigures,
    add_counts,
    summarize_batch,
    summarize_file,
)
from mini_harness.replay.history import AgentFigures

PERCENTILES = (50, 95, 99)
BATCH_FILES = 64
_GLOB_CHARS = frozenset("*?[")

Progress = Callable[[FileSummary], None]
"""Called in the driver once per file, as each one is done (in the order they finish)."""
Task = TypeVar("Task", bound=Hashable)
Count = Literal["events", "runs", "calls", "failed", "in_doubt", "problems"]


@attrs.frozen
class CorpusFile:
    """A file to fold, found by expanding the paths given; `missing` says why there is none."""

    path: str
    size: int = 0
    missing: str | None = None


def expand_paths(paths: Iterable[str | os.PathLike[str]]) -> list[CorpusFile]:
    """Files, directories (every `*.jsonl` below them) and globs, as sorted unique files.

    A directory is searched without entering linked directories (a link back up would
    list the tree again at every depth, and two such links would never end), and a file
    reached under two names is listed once. A path that names nothing is kept as a
    CorpusFile with `missing` set, so the report says so instead of the corpus being
    refused.
    """
    found: dict[str, CorpusFile] = {}
    for given in paths:
        text = os.fspath(given)
        if os.path.isdir(text):
            matches = _below(Path(text), ("**", "*.jsonl"))
            why = f"no *.jsonl file under the directory {text}"
        elif not os.path.lexists(text) and _GLOB_CHARS & set(text):
            matches, why = _glob(text), f"no file matches {text}"
        else:
            matches, why = [text], ""
        if not matches:
            found.setdefault(text, CorpusFile(text, missing=why))
        for name in matches:
            key = os.path.realpath(name)
            if key not in found:
                found[key] = CorpusFile(name, _size(name))
    return sorted(found.values(), key=lambda item: item.path)


def _glob(pattern: str) -> list[str]:
    """The files a glob names: its fixed leading directories, then the rest matched below."""
    parts = Path(pattern).parts
    fixed = next((n for n, part in enumerate(parts) if _GLOB_CHARS & set(part)), len(parts))
    return _below(Path(*parts[:fixed]) if fixed else Path(), parts[fixed:])


def _below(anchor: Path, pattern: tuple[str, ...]) -> list[str]:
    """The files under `anchor` that `pattern` (path components) matches, in sorted order.

    pathlib's `**` never enters a linked directory. Names starting with a dot match only
    when the pattern spells a dot, as with the shell and `glob`.
    """
    dotted = any(part.startswith(".") for part in pattern)
    try:
        matches = list(anchor.glob(os.path.join(*pattern)))
    except ValueError:  # `**` inside a component (`a**b`): a plain `*` there, as in glob
        return sorted(filter(os.path.isfile, glob.glob(os.path.join(anchor, *pattern))))
    return sorted(
        str(match)
        for match in matches
        if (dotted or not any(p.startswith(".") for p in match.relative_to(anchor).parts))
        and match.is_file()
    )


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


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
        return {
            "name": self.name,
            "calls": figures.calls,
            "failed": figures.failed,
            "inDoubt": figures.in_doubt,
            "failureRate": self.failure_rate,
            "errors": error_rates(figures.errors, figures.calls),
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
        codes = (
            exit_code_of(unreadable=item.status == UNREADABLE, failed=item.status == PROBLEMS)
            for item in self.files
        )
        return max(codes, default=ExitCode.OK)

    def total(self, count: Count) -> int:
        """One of the files' counts summed over the corpus."""
        return sum(getattr(item, count) for item in self.files)

    def errors(self) -> dict[str, int]:
        """Failed calls by error kind, over every tool."""
        out: dict[str, int] = {}
        for tool in self.tools:
            add_counts(out, tool.figures.errors)
        return {kind: out[kind] for kind in sorted(out)}

    def damaged(self) -> list[str]:
        """The files with integrity problems (a broken chain, damage, a torn tail)."""
        return [item.path for item in self.files if item.integrity_problems]

    def to_json(self) -> JsonObject:
        totals: JsonObject = {
            "files": len(self.files),
            **{status: self.count(status) for status in STATUSES},
            "events": self.total("events"),
            "runs": self.total("runs"),
            "calls": self.total("calls"),
            "failed": self.total("failed"),
            "inDoubt": self.total("in_doubt"),
            "problems": self.total("problems"),
            "errors": error_rates(self.errors(), self.total("calls")),
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


def error_rates(errors: dict[str, int], calls: int) -> JsonObject:
    """Failed calls by error kind (sorted), each with its rate among `calls`."""
    return {
        kind: {"calls": errors[kind], "rate": errors[kind] / calls if calls else 0.0}
        for kind in sorted(errors)
    }


def corpus_report(merge: SummaryMerge, *, rerun: bool = False) -> CorpusReport:
    """The report of merged summaries: files sorted by path, tools by name."""
    outcomes: dict[str, int] | None = None
    if rerun:
        outcomes = dict.fromkeys(OUTCOMES, 0)
        for row in merge.rows:
            add_counts(outcomes, row.rerun or {})
    return CorpusReport(
        files=tuple(sorted(merge.rows, key=lambda row: row.path)),
        tools=tuple(ToolReport(name, merge.tools[name]) for name in sorted(merge.tools)),
        agent=merge.agent,
        rerun=outcomes,
    )


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
    return merged_report(summarize_files(files, options, workers=workers), options, progress)


def merged_report(
    parts: Iterable[FileSummary | SummaryMerge], options: SummaryOptions, progress: Progress | None
) -> CorpusReport:
    """The report of summaries (one file's, or one batch's) as they come, telling `progress`
    of each file."""
    merge = SummaryMerge()
    for part in parts:
        if isinstance(part, FileSummary):
            merge.add(part)
            rows = [part]
        else:
            merge.merge(part)
            rows = part.rows
        if progress is not None:
            for row in rows:
                progress(row)
    return corpus_report(merge, rerun=options.rerun is not None)


def missing_summaries(files: Iterable[CorpusFile]) -> Iterator[FileSummary]:
    """An unreadable summary for each path that named no file, saying why."""
    for item in files:
        if item.missing is not None:
            yield FileSummary(item.path, status=UNREADABLE, error=item.missing)


def summarize_files(
    files: Sequence[CorpusFile], options: SummaryOptions, *, workers: int | None = None
) -> Iterator[FileSummary | SummaryMerge]:
    """Summaries as they are done: missing files first, then each file (in this process) or
    each batch of files (from worker processes)."""
    count = workers if workers is not None else (os.cpu_count() or 1)
    if count < 1:
        raise ValueError(f"workers must be at least 1, not {count}")
    yield from missing_summaries(files)
    todo = [item.path for item in files if item.missing is None]
    if count == 1 or len(todo) <= 1:
        for path in todo:
            yield shown_as(path, summarize_file(os.path.abspath(path), options))
        return
    # forkserver: a fork of a process with threads (a CLI with a progress thread, a test
    # runner) can deadlock; spawn where there is no forkserver.
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        # Workers fork from a server that has imported the fold once, not each on its own.
        context.set_forkserver_preload([summarize_batch.__module__])
    workers = min(count, len(todo))
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        try:
            yield from in_flight(
                batches(todo, count),
                workers,
                start=lambda paths: pool.submit(summarize_batch, paths, options),
                wait=lambda futures: concurrent.futures.wait(
                    futures, return_when=concurrent.futures.FIRST_COMPLETED
                )[0],
                result=concurrent.futures.Future.result,
                lost=(concurrent.futures.process.BrokenProcessPool, "worker died"),
            )
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise


def batches(paths: Sequence[str], workers: int) -> list[list[str]]:
    """Paths in batches: about 8 per worker (so the last ones finish close together), of at
    most BATCH_FILES files (so progress moves and a lost batch costs little)."""
    size = max(1, min(BATCH_FILES, len(paths) // (workers * 8)))
    return [list(paths[start : start + size]) for start in range(0, len(paths), size)]


def in_flight(
    parts: Iterable[list[str]],
    workers: int,
    *,
    start: Callable[[list[str]], Task],
    wait: Callable[[list[Task]], Iterable[Task]],
    result: Callable[[Task], SummaryMerge],
    lost: tuple[type[Exception], str],
) -> Iterator[SummaryMerge]:
    """Each batch's summary as its task ends (worker processes or Ray tasks), two per worker
    in flight, so the driver holds no more than that many results at once.

    `start` starts a task on a batch's absolute paths (a worker does not run in this
    process's directory), `wait` returns the tasks that are done, `result` a task's
    summary. When `result` raises `lost`'s error (the worker was lost), each file of that
    batch is unreadable, `lost`'s text and the error saying why.
    """
    pending = iter(parts)
    running: dict[Task, list[str]] = {}

    def submit() -> None:
        for part in pending:
            running[start([os.path.abspath(path) for path in part])] = part
            return

    for _ in range(workers * 2):
        submit()
    while running:
        for task in wait(list(running)):
            part = running.pop(task)
            submit()
            try:
                summary = result(task)
            except lost[0] as exc:
                summary = SummaryMerge()
                for path in part:
                    summary.add(FileSummary(path, status=UNREADABLE, error=f"{lost[1]}: {exc}"))
            else:
                for path, row in zip(part, summary.rows, strict=True):
                    shown_as(path, row)  # rows come back in the batch's order
            yield summary


def shown_as(path: str, summary: FileSummary) -> FileSummary:
    """The summary under the path as it was given (workers are handed absolute paths)."""
    if summary.error is not None:
        summary.error = summary.error.replace(os.path.abspath(path), path)
    summary.path = path
    return summary
