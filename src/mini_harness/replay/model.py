"""What a fold and a re-run report: plain frozen values, each with its JSON shape."""

from __future__ import annotations

import array
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import overload

import attrs
import orjson

from mini_harness.errors import ReplayError, counted
from mini_harness.events import FileEffect, JsonObject, JsonValue, ToolDefinition, Usage, to_wire

SUCCEEDED = "succeeded"
FAILED = "failed"
IN_DOUBT = "in-doubt"

MATCHED = "matched"
DIVERGED = "diverged"
NOW_FAILS = "now-fails"
NOW_SUCCEEDS = "now-succeeds"
SKIPPED = "skipped"
OUTCOMES = (MATCHED, DIVERGED, NOW_FAILS, NOW_SUCCEEDS, SKIPPED)
DIFFERING = (DIVERGED, NOW_FAILS, NOW_SUCCEEDS)
"""The re-run outcomes that differ from the record: each fails a replay."""


def differing(counts: Mapping[str, int]) -> str:
    """`1 diverged, 2 now-fails`: the differing outcomes among `counts` ("" when none)."""
    return ", ".join(f"{counts[name]} {name}" for name in DIFFERING if counts.get(name))


@attrs.frozen
class RunInfo:
    """A run as its RunStarted recorded it; `index` counts runs from 1 in file order."""

    index: int
    run_id: str
    harness: str
    started: str
    line: int
    tools: tuple[ToolDefinition, ...]

    @property
    def tool_names(self) -> list[str]:
        return [tool.name for tool in self.tools]

    def to_json(self) -> JsonObject:
        return {
            "index": self.index,
            "runId": self.run_id,
            "harness": self.harness,
            "started": self.started,
            "line": self.line,
            "tools": self.tool_names,
        }


def names_run(wanted: str | None, index: int, run_id: str) -> bool:
    """Whether `--run WANTED` names run `index` (1-based, in file order) `run_id`: all
    digits is an index, anything else a run id or its prefix (None and "" name none). The
    first run of a file it names is the one selected."""
    if not wanted:
        return False
    if wanted.isdigit():
        return index == int(wanted)
    return run_id.startswith(wanted)


def no_run_error(
    path: str | os.PathLike[str], wanted: str, runs: Sequence[tuple[int, str]]
) -> ReplayError:
    """`t.jsonl has no run 9 (it has 2 runs: 1 <id>, 2 <id>)`: `runs` (index and id) listed
    up to ten."""
    listing = ", ".join(f"{index} {run_id}" for index, run_id in runs[:10])
    more = f", and {len(runs) - 10} more" if len(runs) > 10 else ""
    has = f"it has {counted(len(runs), 'run')}: {listing}{more}" if runs else "it has no runs"
    shown = wanted or '""'
    return ReplayError(f"{path} has no run {shown} ({has})")


@attrs.define
class CallRecord:
    """One recorded call: `status` is succeeded, failed or in-doubt (no terminal event).

    Not frozen, unlike the other values: a fold makes one per call, and a frozen attrs
    class costs about five times as much to build. Treat it as read-only.
    """

    run_index: int
    run_id: str
    call_id: str
    name: str
    input: JsonValue
    status: str
    line: int  # of the ToolCalled
    end_line: int | None = None
    output: JsonValue = None
    error: JsonObject | None = None
    duration_ms: float | None = None
    effects: list[FileEffect] | None = None  # the files a succeeded call changed

    def to_json(self) -> JsonObject:
        out: JsonObject = {
            "callId": self.call_id,
            "run": self.run_index,
            "name": self.name,
            "status": self.status,
            "durationMs": self.duration_ms,
            "line": self.line,
            "endLine": self.end_line,
        }
        if self.error is not None:
            out["error"] = self.error
        return out


class CallList(Sequence[CallRecord]):
    """Call records held compactly: each as one row of compact JSON in one buffer, rebuilt
    when read.

    A fold of a million events ends about half a million calls; as objects with their
    inputs and outputs they take about a kilobyte each, as rows about a fifth of that.
    Reading `calls[i]` (or iterating) gives an equal CallRecord each time.
    """

    def __init__(self, calls: Iterable[CallRecord] = ()) -> None:
        self._data = bytearray()
        self._ends = array.array("Q")  # where each row ends in _data
        self._run_ids: list[str] = []  # a row names its run by its place here
        self._run_places: dict[str, int] = {}
        for call in calls:
            self.append(call)

    def append(self, call: CallRecord) -> None:
        place = self._run_places.get(call.run_id)
        if place is None:
            place = self._run_places[call.run_id] = len(self._run_ids)
            self._run_ids.append(call.run_id)
        self._data += orjson.dumps(
            (
                call.run_index,
                place,
                call.call_id,
                call.name,
                call.input,
                call.status,
                call.line,
                call.end_line,
                call.output,
                call.error,
                call.duration_ms,
                None if call.effects is None else [attrs.astuple(e) for e in call.effects],
            )
        )
        self._ends.append(len(self._data))

    def _record(self, index: int) -> CallRecord:
        start = self._ends[index - 1] if index else 0
        row = orjson.loads(memoryview(self._data)[start : self._ends[index]])
        row[1] = self._run_ids[row[1]]
        if row[11] is not None:
            row[11] = [FileEffect(*effect) for effect in row[11]]
        return CallRecord(*row)

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, index: int) -> CallRecord: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[CallRecord]: ...

    def __getitem__(self, index: int | slice) -> CallRecord | Sequence[CallRecord]:
        if isinstance(index, slice):
            return [self._record(i) for i in range(*index.indices(len(self)))]
        return self._record(range(len(self))[index])

    def __iter__(self) -> Iterator[CallRecord]:
        for index in range(len(self)):
            yield self._record(index)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment] # mutable, compared by value

    def __repr__(self) -> str:
        return f"<CallList(calls={len(self)})>"


UNFINISHED = "unfinished"
"""The stop reason shown for an agent run with no RunFinished (the process died)."""


@attrs.define
class AgentFigures:
    """Agent runs by stop reason and summed model usage, for one file or a corpus.

    A count a provider did not report adds nothing, so `usage` starts at zero and
    transcripts without agent runs simply report none.
    """

    stop_reasons: Counter[str] = attrs.Factory(Counter)
    responses: int = 0
    usage: Usage = attrs.Factory(lambda: Usage(0, 0, 0))
    _open_runs: set[str] = attrs.Factory(set)

    @property
    def runs(self) -> int:
        return sum(self.stop_reasons.values())

    def run_started(self, run_id: str) -> None:
        """An agent run (a RunStarted with a task) began."""
        self._open_runs.add(run_id)

    def run_finished(self, run_id: str, stop_reason: str) -> None:
        self._open_runs.discard(run_id)
        self.stop_reasons[stop_reason] += 1

    def responded(self, usage: Usage) -> None:
        """A model response; the counts of its `usage` are added."""
        self.responses += 1
        self.usage += usage

    def close(self) -> None:
        """At the end of a file: agent runs that never finished count as unfinished."""
        if self._open_runs:
            self.stop_reasons[UNFINISHED] += len(self._open_runs)
            self._open_runs.clear()

    def merge(self, other: AgentFigures) -> None:
        self.stop_reasons.update(other.stop_reasons)
        self.responses += other.responses
        self.usage += other.usage

    def to_json(self) -> JsonObject:
        reasons: JsonObject = {name: self.stop_reasons[name] for name in sorted(self.stop_reasons)}
        return {
            "runs": self.runs,
            "byStopReason": reasons,
            "modelResponses": self.responses,
            "usage": to_wire(self.usage),
        }


@attrs.frozen
class LogProblem:
    """Something wrong with the log itself; `kind` is torn-tail, integrity, protocol,
    in-doubt (an agent run without RunFinished, a model request without a response) or,
    in a timeline, damage."""

    kind: str
    line: int
    message: str

    def describe(self) -> str:
        return f"line {self.line}: {self.message}"

    def to_json(self) -> JsonObject:
        return {"kind": self.kind, "line": self.line, "message": self.message}


@attrs.frozen
class RunSummary:
    """A run's totals and, when asked for, its Context Explorer report."""

    info: RunInfo
    succeeded: int
    failed: int
    in_doubt: int
    context_report: str | None = None

    def to_json(self) -> JsonObject:
        out = self.info.to_json()
        out.update(succeeded=self.succeeded, failed=self.failed, inDoubt=self.in_doubt)
        if self.context_report is not None:
            out["contextReport"] = self.context_report
        return out


@attrs.frozen
class Totals:
    """Counts over the whole fold."""

    events: int
    runs: int
    succeeded: int
    failed: int
    in_doubt: int
    unknown_events: int

    @property
    def calls(self) -> int:
        return self.succeeded + self.failed + self.in_doubt

    def to_json(self) -> JsonObject:
        return {
            "events": self.events,
            "runs": self.runs,
            "calls": self.calls,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "inDoubt": self.in_doubt,
            "unknownEvents": self.unknown_events,
        }


@attrs.frozen
class FoldResult:
    """Everything a fold found: runs, calls (in the order they ended; in-doubt last), problems."""

    path: str
    transcript_id: str | None
    runs: tuple[RunSummary, ...]
    calls: Sequence[CallRecord]  # a CallList from a fold
    problems: tuple[LogProblem, ...]
    totals: Totals

    @property
    def ok(self) -> bool:
        """No problem with the log and no call in doubt (failed calls are not log problems)."""
        return not self.problems and self.totals.in_doubt == 0

    def to_json(self) -> JsonObject:
        return {
            "path": self.path,
            "transcriptId": self.transcript_id,
            "calls": [call.to_json() for call in self.calls],
            "runs": [run.to_json() for run in self.runs],
            "problems": [problem.to_json() for problem in self.problems],
            "totals": self.totals.to_json(),
        }


@attrs.frozen
class Drift:
    """A recorded tool whose current definition differs (`changed`) or is gone (`removed`)."""

    tool: str
    change: str
    fields: tuple[str, ...]
    run_index: int

    def describe(self) -> str:
        if self.change == "removed":
            return f"{self.tool}: no longer in the registry (recorded in run {self.run_index})"
        return f"{self.tool}: {' and '.join(self.fields)} changed since run {self.run_index}"

    def to_json(self) -> JsonObject:
        return {
            "tool": self.tool,
            "change": self.change,
            "fields": list(self.fields),
            "run": self.run_index,
        }


@attrs.frozen
class RerunOutcome:
    """One recorded call dispatched again (or skipped) and compared with its record."""

    call: CallRecord
    outcome: str
    reason: str | None = None
    current: JsonValue = None  # the new output, or the new error as {kind, message}
    diff: str | None = None

    def to_json(self) -> JsonObject:
        out: JsonObject = {"outcome": self.outcome}
        if self.reason is not None:
            out["reason"] = self.reason
        if self.diff is not None:
            out["diff"] = self.diff
        return out


@attrs.frozen
class RerunReport:
    """A fold plus each call's re-run outcome and the tools that drifted."""

    fold: FoldResult
    outcomes: tuple[RerunOutcome, ...]
    drift: tuple[Drift, ...]

    def count(self, outcome: str) -> int:
        return sum(1 for item in self.outcomes if item.outcome == outcome)

    @property
    def ok(self) -> bool:
        """Every re-run call matched or was skipped, and the log has no problem."""
        return self.fold.ok and not any(item.outcome in DIFFERING for item in self.outcomes)
