"""Fold: rebuild runs, calls and context reports from a transcript's events alone.

Never calls a handler. One loop over the reader's records, so memory grows with the number
of runs and call ids (to catch reused ids), never with the size of the events.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs

from mini_harness.errors import ReplayError
from mini_harness.events import (
    ApprovalDecided,
    JsonValue,
    ModelRequested,
    ModelResponded,
    RunFinished,
    RunStarted,
    ToolCalled,
    ToolFailed,
    ToolSucceeded,
    TranscriptStarted,
    UnknownEvent,
    to_wire,
)
from mini_harness.replay.agent_fold import AgentRun, AgentRunFolder, select_agent_run
from mini_harness.replay.model import (
    FAILED,
    IN_DOUBT,
    SUCCEEDED,
    AgentFigures,
    CallList,
    CallRecord,
    FoldResult,
    LogProblem,
    RunInfo,
    RunSummary,
    Totals,
    names_run,
    no_run_error,
)
from mini_harness.runtime.context import (
    ContextRow,
    estimate_tokens,
    pretty_json,
    render_context_report,
)
from mini_harness.runtime.results import display_failure, display_result
from mini_harness.transcripts.reader import TranscriptReader
from mini_harness.transcripts.verify import CallProtocol, RunProtocol


@attrs.define
class _RunState:
    info: RunInfo
    succeeded: int = 0
    failed: int = 0
    in_doubt: int = 0
    # Context report: token estimates only, so a long run costs no memory per call.
    tool_tokens: int = 0
    result_tokens: int = 0
    error_tokens: int = 0

    def count_tokens(self, call: CallRecord) -> None:
        """Add a finished call to the report's estimates."""
        duration = call.duration_ms or 0.0
        if call.error is None:
            shown = display_result(call.name, call.input, call.output, duration)
            self.result_tokens += estimate_tokens(pretty_json(shown))
        else:
            shown = display_failure(call.name, call.input, call.error, duration)
            self.error_tokens += estimate_tokens(pretty_json(shown))

    def summary(self, context_reports: bool) -> RunSummary:
        report = render_context_report(self.context_rows()) if context_reports else None
        return RunSummary(self.info, self.succeeded, self.failed, self.in_doubt, report)

    def context_rows(self) -> list[ContextRow]:
        """Tool definitions, then one row for the results and one for the errors, if any.

        A run with one successful call (every successful CLI run) gives exactly the rows the
        live `--context-report` printed. Several results are summed in one row.
        """
        rows = [ContextRow("Tool definitions", self.tool_tokens)]
        for count, tokens, one, many in (
            (self.succeeded, self.result_tokens, "Tool result", "Tool results"),
            (self.failed, self.error_tokens, "Tool error", "Tool errors"),
        ):
            if count:
                rows.append(ContextRow(one if count == 1 else f"{many} ({count})", tokens))
        return rows


class TranscriptFold:
    """Iterate a transcript as RunInfo (when a run starts) and CallRecord (when a call ends).

    Calls still open at the end of the file are yielded last, as in-doubt. After (or during)
    iteration, `summaries()`, `problems()` and `totals()` describe what was read so far,
    `agent` counts agent runs by how they ended and model usage, `decisions` holds the
    approval decisions; `result()` collects everything into a FoldResult. `run` selects one
    run by 1-based index (all digits) or by run id / id prefix (the first run it matches:
    see names_run). With `agent_runs` (implied by `context_reports`) the agent runs are
    rebuilt in the same pass (`agent_runs()`). `path` may be a FIFO or "-" (standard
    input): it is read once, front to back.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        run: str | None = None,
        context_reports: bool = False,
        agent_runs: bool = False,
    ) -> None:
        self.path = Path(path)
        self.reader = TranscriptReader(path)
        self.context_reports = context_reports
        self.selection = run
        self.transcript_id: str | None = None
        self.offset = 0  # byte offset of the last line read
        self.finished = False
        self._protocol = CallProtocol()
        self._inputs: dict[str, JsonValue] = {}  # open calls only
        self._runs: dict[str, _RunState] = {}
        self._selected: str | None = None
        self._extra_problems: list[LogProblem] = []
        self._unknown = 0
        self.decisions: list[ApprovalDecided] = []  # every approval decision, in file order
        self._agent_protocol = RunProtocol()
        self.agent = AgentFigures()  # counted always: a few numbers
        # Agent runs (their requests and histories) are rebuilt only when asked for.
        self._agent_folder = AgentRunFolder() if context_reports or agent_runs else None

    def __repr__(self) -> str:
        return f"<TranscriptFold(path={str(self.path)!r}, offset={self.offset})>"

    def __iter__(self) -> Iterator[RunInfo | CallRecord]:
        # Once per line of files with millions of lines: a call's two events take the
        # first two branches, with the state they touch in locals.
        runs = self._runs
        inputs = self._inputs
        called = self._protocol.called
        agent_runs = self._agent_protocol  # agent runs and model requests in doubt
        agent_folder = self._agent_folder
        for record in self.reader:
            self.offset = record.offset
            event = record.event
            if agent_folder is not None:
                agent_folder.add(event)
            # A tuple, not `ToolSucceeded | ToolFailed`: that builds a new union every line.
            if isinstance(event, (ToolSucceeded, ToolFailed)):
                call = self._ended(record.line, record.seq, event)
                if call is not None:
                    yield call
            elif isinstance(event, ToolCalled):
                started = None
                if event.run_id not in runs:
                    started = self._implicit_run(record.line, event)
                if called(record.line, record.seq, event.run_id, event.call_id, event.name):
                    inputs[event.call_id] = event.input
                if started is not None:
                    yield started
            elif isinstance(event, RunStarted):
                started = self._run_started(record.line, record.seq, event)
                if started is not None:
                    yield started
            elif isinstance(event, ModelRequested):
                agent_runs.feed(record.line, record.seq, event)
            elif isinstance(event, ModelResponded):
                agent_runs.feed(record.line, record.seq, event)
                self.agent.responded(event.usage)
            elif isinstance(event, RunFinished):
                agent_runs.feed(record.line, record.seq, event)
                self.agent.run_finished(event.run_id, event.stop_reason)
            elif isinstance(event, TranscriptStarted):
                if record.line == 1:
                    self.transcript_id = event.transcript_id
            elif isinstance(event, ApprovalDecided):
                self.decisions.append(event)
            elif isinstance(event, UnknownEvent):
                self._unknown += 1
        if self.reader.empty:
            self._extra_problems.append(
                LogProblem("integrity", 1, "the file is empty: it has no TranscriptStarted line")
            )
        yield from self._in_doubt()
        for opened in self._agent_protocol.in_doubt():
            self._extra_problems.append(LogProblem("in-doubt", opened.line, opened.message()))
        self.agent.close()
        self.finished = True
        if self.selection is not None and self._selected is None:
            listed = [(state.info.index, run_id) for run_id, state in runs.items()]
            raise no_run_error(self.path, self.selection, listed)

    def _run_started(self, line: int, seq: int, event: RunStarted) -> RunInfo | None:
        """Fold a RunStarted; the run's RunInfo if it is new and shown."""
        if event.task is not None:  # an agent run: it must end, as a call must
            self.agent.run_started(event.run_id)
        self._agent_protocol.feed(line, seq, event)
        if event.run_id in self._runs:
            message = f"run {event.run_id} is started again"
            self._extra_problems.append(LogProblem("protocol", line, message))
            return None
        info = RunInfo(
            len(self._runs) + 1, event.run_id, event.harness, event.ts, line, event.tools
        )
        return info if self._add_run(info) else None

    def agent_runs(self) -> list[AgentRun]:
        """The agent runs, rebuilt request by request (after the fold; with agent_runs)."""
        if self._agent_folder is None or not self.finished:
            raise ReplayError("agent runs are rebuilt only by a finished fold with agent_runs")
        return list(self._agent_folder.runs.values())

    def _implicit_run(self, line: int, event: ToolCalled) -> RunInfo | None:
        """Start the run a ToolCalled names when no RunStarted did; its RunInfo if shown."""
        message = f"ToolCalled for run {event.run_id}, with no RunStarted"
        self._extra_problems.append(LogProblem("protocol", line, message))
        info = RunInfo(len(self._runs) + 1, event.run_id, "", event.ts, line, ())
        return info if self._add_run(info) else None

    def _ended(self, line: int, seq: int, event: ToolSucceeded | ToolFailed) -> CallRecord | None:
        """Fold a terminal event; the call it ends, if it ends one and its run is shown."""
        kind = type(event).__name__
        opened = self._protocol.finished(line, seq, kind, event.call_id, event.run_id, event.name)
        if opened is None:
            return None
        state = self._runs[opened.run_id]
        tool_input = self._inputs.pop(opened.call_id)
        effects = None
        if isinstance(event, ToolSucceeded):
            state.succeeded += 1
            status, output, error = SUCCEEDED, event.output, None
            if event.effects:
                effects = list(event.effects)
        else:
            state.failed += 1
            status, output, error = FAILED, None, to_wire(event.error)
        call = CallRecord(
            state.info.index,
            opened.run_id,
            opened.call_id,
            opened.name,
            tool_input,
            status,
            opened.line,
            line,
            output,
            error,
            event.duration_ms,
            effects,
        )
        if self.context_reports:
            state.count_tokens(call)
        return call if self.shows(opened.run_id) else None

    def _in_doubt(self) -> Iterator[CallRecord]:
        for opened in self._protocol.in_doubt():
            state = self._runs[opened.run_id]
            state.in_doubt += 1
            if self.shows(opened.run_id):
                yield CallRecord(
                    state.info.index,
                    opened.run_id,
                    opened.call_id,
                    opened.name,
                    self._inputs[opened.call_id],
                    IN_DOUBT,
                    opened.line,
                )

    def _add_run(self, info: RunInfo) -> bool:
        """Fold a run's start; whether the run is shown."""
        state = _RunState(info)
        if self.context_reports:
            state.tool_tokens = estimate_tokens(pretty_json(to_wire(info.tools)))
        self._runs[info.run_id] = state
        if self._selected is None and names_run(self.selection, info.index, info.run_id):
            self._selected = info.run_id
        return self.shows(info.run_id)

    def shows(self, run_id: str) -> bool:
        """Whether run `run_id` is shown: every run is, unless `run` selects one."""
        return self.selection is None or run_id == self._selected

    # --- what was found so far --------------------------------------------------------

    def summaries(self) -> list[RunSummary]:
        return [
            state.summary(self.context_reports)
            for run_id, state in self._runs.items()
            if self.shows(run_id)
        ]

    def problems(self) -> list[LogProblem]:
        """Integrity, protocol and torn-tail problems in line order."""
        found = [LogProblem("integrity", p.line, p.message) for p in self.reader.problems]
        found += [LogProblem("protocol", p.line, p.message) for p in self._protocol.problems]
        found += self._extra_problems
        tail = self.reader.torn_tail
        if tail is not None:
            found.append(LogProblem("torn-tail", tail.line, tail.describe()))
        return sorted(found, key=lambda problem: problem.line)

    def totals(self) -> Totals:
        states = [state for run_id, state in self._runs.items() if self.shows(run_id)]
        return Totals(
            events=self.reader.records_read,
            runs=len(states),
            succeeded=sum(s.succeeded for s in states),
            failed=sum(s.failed for s in states),
            in_doubt=sum(s.in_doubt for s in states),
            unknown_events=self._unknown,
        )

    def result(self) -> FoldResult:
        """Read the whole transcript and collect what it says (one record per call, held
        compactly: see CallList)."""
        return self.found(CallList(item for item in self if type(item) is CallRecord))

    def found(self, calls: Sequence[CallRecord]) -> FoldResult:
        """What the fold found so far, with `calls` (those it yielded)."""
        return FoldResult(
            path=str(self.path),
            transcript_id=self.transcript_id,
            runs=tuple(self.summaries()),
            calls=calls,
            problems=tuple(self.problems()),
            totals=self.totals(),
        )


def fold_transcript(
    path: str | os.PathLike[str], *, run: str | None = None, context_reports: bool = True
) -> FoldResult:
    """Fold a transcript into runs, calls, problems and (by default) context reports.

    Raises a TranscriptError if the file cannot be read, ReplayError if `run` matches none.
    """
    return TranscriptFold(path, run=run, context_reports=context_reports).result()


def fold_agent_runs(path: str | os.PathLike[str], *, run: str | None = None) -> list[AgentRun]:
    """The agent runs of a transcript, in the order they started (tool runs are passed
    over); with `run`, only the run it selects, if that is an agent run. Raises a
    TranscriptError if the file cannot be read, ReplayError if `run` matches none."""
    fold = TranscriptFold(path, run=run, agent_runs=True)
    for _item in fold:
        pass
    return [found for found in fold.agent_runs() if fold.shows(found.run_id)]


def agent_context_report(
    path: str | os.PathLike[str], *, step: int | None = None, run_id: str | None = None
) -> str:
    """`replay PATH --context-report [--step N]` for an agent run: the report of step N's
    request (default: the last), byte-identical to what the live run printed."""
    return select_agent_run(fold_agent_runs(path), run_id).context_report(step)


def fold_effects(path: str | os.PathLike[str]) -> tuple[list[CallRecord], list[ApprovalDecided]]:
    """The calls that changed files (with their `effects`) and every approval decision, in
    file order. Raises a TranscriptError if the file cannot be read."""
    fold = TranscriptFold(path)
    calls = [item for item in fold if type(item) is CallRecord and item.effects]
    return calls, fold.decisions
