"""One transcript of a corpus, summed up: a small value that workers send back and merge.

A summary holds counts, never events: per tool its calls, failures by error kind and a
count per distinct recorded duration (durations are recorded to the microsecond, so a
tool has at most a few thousand distinct values in practice, however many calls it made).
Counts add up exactly, in any order, which is what makes a corpus report the same
whatever the number of workers and the order files finish in.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

import attrs

from mini_harness.errors import MiniHarnessError
from mini_harness.events import JsonObject, JsonValue
from mini_harness.replay.continuing.call_by_call import TranscriptRerun, Translate
from mini_harness.replay.continuing.outcomes import DIFFERING, RerunOutcome
from mini_harness.replay.history import FAILED, IN_DOUBT, AgentFigures, Call, TranscriptFold
from mini_harness.runtime import ToolRegistry
from mini_harness.runtime.approval import Approver
from mini_harness.transcripts.signing import TrustedKeys, note_path_for, verify_signed
from mini_harness.transcripts.verify import verify_transcript

OK = "ok"
PROBLEMS = "problems"
UNREADABLE = "unreadable"
STATUSES = (OK, PROBLEMS, UNREADABLE)

FOLD = "fold"
VERIFY = "verify"

SHOWN_PROBLEMS = 5
"""Problems kept word for word per file; the rest are only counted (a summary stays small)."""

RegistryFactory = Callable[[], ToolRegistry]
Key = TypeVar("Key", bound=Hashable)


@attrs.define
class ToolFigures:
    """One tool's calls in one file (or, merged, in a corpus)."""

    calls: int = 0
    failed: int = 0
    in_doubt: int = 0
    errors: dict[str, int] = attrs.Factory(dict)  # error kind -> failed calls
    durations: dict[float, int] = attrs.Factory(dict)  # recorded durationMs -> calls

    def add_call(self, call: Call) -> None:
        self.calls += 1
        if call.status == IN_DOUBT:
            self.in_doubt += 1
            return
        if call.status == FAILED:
            self.failed += 1
            kind = call.error.kind if call.error is not None else "unknown"
            add_counts(self.errors, {kind: 1})
        duration = call.duration_ms
        if isinstance(duration, int | float) and not isinstance(duration, bool):
            add_counts(self.durations, {float(duration): 1})

    def merge(self, other: ToolFigures) -> None:
        self.calls += other.calls
        self.failed += other.failed
        self.in_doubt += other.in_doubt
        add_counts(self.errors, other.errors)
        add_counts(self.durations, other.durations)

    def percentile(self, p: int) -> float | None:
        """The nearest-rank percentile: the smallest recorded duration with at least p% of
        the timed calls at or below it. Exact, from the counts alone."""
        timed = sum(self.durations.values())
        if not timed:
            return None
        rank = max((p * timed + 99) // 100, 1)  # ceil(p * n / 100), in integers
        values = sorted(self.durations)
        seen = itertools.accumulate(self.durations[value] for value in values)
        return next(value for value, calls in zip(values, seen, strict=True) if calls >= rank)


@attrs.define
class FileSummary:
    """What a corpus report needs from one file. `status` is ok, problems or unreadable."""

    path: str
    status: str = OK
    error: str | None = None  # why the file could not be read
    events: int = 0
    runs: int = 0
    calls: int = 0
    failed: int = 0
    in_doubt: int = 0
    problems: int = 0
    integrity_problems: int = 0  # chain and torn-tail problems, the "file is damaged" kind
    shown_problems: list[str] = attrs.Factory(list)
    head_hash: str | None = None  # verify mode
    signed_by: tuple[str, ...] | None = None  # verify mode with trusted keys
    tools: dict[str, ToolFigures] = attrs.Factory(dict)
    agent: AgentFigures = attrs.Factory(AgentFigures)
    rerun: dict[str, int] | None = None  # outcome -> calls, with --rerun

    def problem(self, kind: str, text: str) -> None:
        self.problems += 1
        if kind in ("integrity", "torn-tail"):
            self.integrity_problems += 1
        if len(self.shown_problems) < SHOWN_PROBLEMS:
            self.shown_problems.append(text)

    def add_call(self, call: Call) -> None:
        self.calls += 1
        if call.status == FAILED:
            self.failed += 1
        figures = self.tools.get(call.name)
        if figures is None:
            figures = self.tools[call.name] = ToolFigures()
        figures.add_call(call)

    def row(self) -> FileSummary:
        """This summary without its per-tool figures: what the report keeps per file."""
        return attrs.evolve(self, tools={}, agent=AgentFigures())

    def to_json(self) -> JsonObject:
        out: JsonObject = {
            "path": self.path,
            "status": self.status,
            "events": self.events,
            "runs": self.runs,
            "calls": self.calls,
            "failed": self.failed,
            "inDoubt": self.in_doubt,
            "problems": self.problems,
            "integrityProblems": self.integrity_problems,
            "shownProblems": list[JsonValue](self.shown_problems),
        }
        if self.error is not None:
            out["error"] = self.error
        if self.head_hash is not None:
            out["headHash"] = self.head_hash
        if self.signed_by is not None:
            out["signedBy"] = list[JsonValue](self.signed_by)
        if self.rerun is not None:
            out["rerun"] = dict[str, JsonValue](self.rerun)
        return out


@attrs.frozen
class SummaryOptions:
    """How to sum up each file; picklable, so it can go to worker processes and Ray tasks.

    `rerun` builds the registry to re-run calls against (called in the worker: a registry
    holds handlers, which do not travel between processes); `approver` decides which calls
    run again (today's policy; it must answer at once, and travel). With `trusted` keys, verify
    checks each file against the head signed in its note beside it (PATH.sig).
    """

    mode: str = FOLD
    rerun: RegistryFactory | None = None
    allow_side_effects: bool = False
    translate: Translate | None = None
    approver: Approver | None = None
    trusted: TrustedKeys | None = None


def summarize_file(path: str, options: SummaryOptions) -> FileSummary:
    """Fold (or verify) one file into a summary; a file that cannot be read is a summary
    with status unreadable, never an exception: one bad file must not stop a corpus."""
    summary = FileSummary(path)
    try:
        if options.mode == VERIFY:
            _verify(path, summary, options.trusted)
        else:
            _fold(path, options, summary)
    except (MiniHarnessError, OSError) as exc:
        return FileSummary(path, status=UNREADABLE, error=str(exc))
    except Exception as exc:  # a bug met on one file must not lose the others
        error = f"unexpected {type(exc).__name__}: {exc}"
        return FileSummary(path, status=UNREADABLE, error=error)
    differs = any((summary.rerun or {}).get(name) for name in DIFFERING)
    if summary.problems or summary.in_doubt or differs:
        summary.status = PROBLEMS
    return summary


@attrs.define
class SummaryMerge:
    """Summaries added up: a row per file (its counts, no per-tool figures), and the per-tool
    and agent figures merged. Every merge is an exact sum, so any grouping and order of
    files gives the same figures. A batch of files folded by one worker is one of these."""

    rows: list[FileSummary] = attrs.Factory(list)
    tools: dict[str, ToolFigures] = attrs.Factory(dict)
    agent: AgentFigures = attrs.Factory(AgentFigures)

    def add(self, summary: FileSummary) -> None:
        self._figures(summary.tools, summary.agent)
        self.rows.append(summary.row())

    def merge(self, other: SummaryMerge) -> None:
        self._figures(other.tools, other.agent)
        self.rows.extend(other.rows)

    def _figures(self, tools: dict[str, ToolFigures], agent: AgentFigures) -> None:
        for name, figures in tools.items():
            self.tools.setdefault(name, ToolFigures()).merge(figures)
        self.agent.merge(agent)


def summarize_batch(paths: Sequence[str], options: SummaryOptions) -> SummaryMerge:
    """Several files summed up in one worker: the driver then merges one value per batch,
    not one per file (merging is the driver's only work per file)."""
    batch = SummaryMerge()
    for path in paths:
        batch.add(summarize_file(path, options))
    return batch


def _fold(path: str, options: SummaryOptions, summary: FileSummary) -> None:
    fold = TranscriptFold(path)
    items: Iterable[object] = fold
    if options.rerun is not None:
        summary.rerun = {}
        items = TranscriptRerun(
            fold,
            options.rerun(),
            allow_side_effects=options.allow_side_effects,
            translate=options.translate,
            approver=options.approver,
        )
    for item in items:
        if isinstance(item, Call):
            summary.add_call(item)
        elif isinstance(item, RerunOutcome):
            summary.add_call(item.call)
            assert summary.rerun is not None
            add_counts(summary.rerun, {item.outcome: 1})
    history = fold.history
    summary.agent = history.agent
    totals = history.totals
    summary.events = totals.events
    summary.runs = totals.runs
    summary.in_doubt = totals.in_doubt
    for problem in history.problems:
        summary.problem(problem.kind, problem.describe())


def _verify(path: str, summary: FileSummary, trusted: TrustedKeys | None) -> None:
    if trusted is None:
        report = verify_transcript(path)
    else:
        report = verify_signed(path, note_path_for(path), trusted)
        summary.signed_by = report.signed.signers if report.signed else ()
    summary.events = report.lines
    summary.runs = report.runs
    summary.calls = report.calls
    summary.failed = report.failed
    summary.in_doubt = len(report.in_doubt)
    summary.head_hash = report.head_hash
    problems = report.problems()
    summary.problems = len(problems)
    torn = report.torn_tail is not None
    summary.integrity_problems = len(report.damaged) + len(report.integrity) + torn
    summary.shown_problems = problems[:SHOWN_PROBLEMS]


def add_counts(into: dict[Key, int], more: Mapping[Key, int]) -> None:
    """Add `more`'s counts to `into`'s (a name or value first seen goes at the end)."""
    for name, count in more.items():
        into[name] = into.get(name, 0) + count
