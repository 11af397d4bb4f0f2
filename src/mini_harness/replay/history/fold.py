"""The one fold: a transcript read once, front to back, into its History.

Every reader of a transcript's history (the replay report and its context reports and
effects, show, view, resume, fork, re-run, offline replay, undo, the corpus) iterates a
TranscriptFold, which yields each run as it starts and each call as it ends, and builds
the History as it goes. Never calls a handler or a model. What it keeps is what its
reader asks for:

- always: every run (what its RunStarted and RunFinished say, its calls by how they
  ended, its model requests), the problems, the approval decisions, the agent figures;
  the calls themselves are yielded, not kept, so memory grows with the number of runs and
  of call ids (kept to catch a reused one), never with the size of events;
- `requests`: agent runs' steps and calls, each step's whole request rebuilt (the first
  ModelRequested holds the opening conversation and each later one the messages added
  since; ContextTrimmed replaces earlier messages by their placeholders);
- `detail`: every run's steps, calls with their approvals and other events, each with its
  lines as read, for a timeline.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from mini_harness.errors import TranscriptCorruptError
from mini_harness.events import (
    ApprovalDecided,
    ApprovalRequested,
    ContextTrimmed,
    Event,
    ModelFailed,
    ModelRequested,
    ModelResponded,
    RunFinished,
    RunStarted,
    ToolCalled,
    ToolFailed,
    ToolSucceeded,
    TranscriptStarted,
    UnknownEvent,
)
from mini_harness.replay.history.calls import FAILED, SUCCEEDED, Call
from mini_harness.replay.history.figures import LogProblem, read_problems
from mini_harness.replay.history.runs import History, Run
from mini_harness.replay.history.select import RunSelection
from mini_harness.replay.history.step_folder import StepFolder
from mini_harness.transcripts import TranscriptReader, TranscriptRecord
from mini_harness.transcripts.log_fold import LogFold, OpenCall, RecordSource

FoldItem = Run | Call
"""What a fold yields: a run when it starts, a call when it ends (calls in doubt last)."""


class TranscriptFold(LogFold):
    """Iterate a transcript as its runs start and its calls end, building `history`.

    `path` may be a FIFO or "-" (standard input): it is read once, front to back. `run`
    selects one run by the one rule (history/select.py): only its items are yielded and
    counted, and when the file has no such run, or several, iterating ends in
    ReplayError. `requests` and `detail` say what else is kept (see the module). A line
    damaged mid-file raises TranscriptCorruptError, unless `damage`: then reading stops
    there and the damage is one of the history's problems. `source`, when given, is read
    instead of the file at `path` (which then only names it). With `follow`, the file is
    read as it is written, while `follow()` is true (TranscriptReader).

    It is the one log fold (transcripts/log_fold.py: the chain, the call protocol and the
    agent runs' checked, as `transcript verify` checks them) with the history built on it.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        run: str | None = None,
        requests: bool = False,
        detail: bool = False,
        damage: bool = False,
        source: RecordSource | None = None,
        follow: Callable[[], bool] | None = None,
    ) -> None:
        super().__init__(TranscriptReader(path, follow=follow) if source is None else source)
        self.path = os.fspath(path)
        self.history = History(self.path, self.reader.name)
        self.selection = RunSelection(run) if run is not None else None
        self.requests = requests
        self.detail = detail
        self.damage = damage
        self.finished = False
        self._runs: dict[str, Run] = {}
        self._shown: Run | None = None
        self._open: dict[str, Call] = {}  # calls begun and not ended (every call, with detail)
        self._take = self._open.__getitem__ if detail else self._open.pop
        self._every = self.selection is None  # every run is shown
        self._steps = StepFolder(detail=detail)
        self._waiting: dict[str, list[TranscriptRecord]] = {}  # approvals before their call

    def __repr__(self) -> str:
        return f"<TranscriptFold(path={self.path!r}, offset={self.offset})>"

    def read(self) -> History:
        """Read the whole transcript; its history (nothing is yielded to anyone)."""
        for _item in self:
            pass
        return self.history

    def shows(self, run: Run) -> bool:
        """Whether `run` is shown: every run is, unless `run=` selects one."""
        return self._every or run is self._shown

    def __iter__(self) -> Iterator[FoldItem]:
        try:
            yield from self._fold(self.reader)
        except TranscriptCorruptError as exc:
            if not self.damage:
                raise
            self._problem("damage", exc.line, exc.message)
        yield from self._finish()

    def _begun(self, record: TranscriptRecord, event: ToolCalled, fresh: bool) -> None:
        run_id = event.run_id
        run = self._runs.get(run_id) or self._implicit(record, run_id)
        if fresh:
            call_id = event.call_id
            call = Call(
                run.index,
                run_id,
                call_id,
                event.name,
                event.input,
                record.line,
                event.tool_use_id,
                event.step,
            )
            begun = run.started
            if begun is not None and begun.imported is not None:
                call.imported = True  # its output is the text its model read
            self._open[call_id] = call
            if run.keeps:
                self._place(run, call, record)
        elif self.detail:
            self._item(run, record)  # a reused call id: shown as it is
        if self.detail:
            run.last_ts = event.ts

    def _other(self, record: TranscriptRecord, event: Event) -> None:
        """Fold an event other than a call's."""
        super()._other(record, event)
        history = self.history
        if isinstance(event, RunStarted):
            self._run_started(record, event)
        elif isinstance(event, TranscriptStarted):
            if record.line == 1:
                history.header = event
                if self.detail:
                    history.header_record = record
            elif self.detail:
                history.others.append(record)
        elif isinstance(event, UnknownEvent):
            self._unknown(record, event)
        else:
            run = self._runs.get(event.run_id) or self._implicit(record, event.run_id)
            if isinstance(event, ModelRequested):
                self._steps.requested(record, event, run)
            elif isinstance(event, ModelResponded):
                history.agent.responded(event.usage)
                self._steps.answered(record, event, run)
            elif isinstance(event, ModelFailed):
                self._steps.answered(record, event, run)
            elif isinstance(event, RunFinished):
                history.agent.run_finished(event.run_id, event.stop_reason)
                run.finished = event
                if run.records is not None:
                    run.records.append(record)
            elif isinstance(event, ContextTrimmed):
                self._steps.trimmed(record, event, run)
            elif isinstance(event, ApprovalRequested | ApprovalDecided):
                self._approval(record, event)
        if self.detail:
            self._last_ts(record)

    def _unknown(self, record: TranscriptRecord, event: UnknownEvent) -> None:
        """An event of a type this version does not know: counted, and kept with the
        detail (in its run, and its step, when its fields name them)."""
        run_id = event.data.get("runId")
        if not isinstance(run_id, str):
            if self.detail:
                self.history.others.append(record)
            return
        run = self._runs.get(run_id) or self._implicit(record, run_id)
        if self.detail:
            step = event.data.get("step")
            if type(step) is int:
                self._steps.step(run, step).others.append(record)
            else:
                self._item(run, record)

    # --- runs ---------------------------------------------------------------------

    def _new_run(self, record: TranscriptRecord, run_id: str, started: RunStarted | None) -> Run:
        """A run seen for the first time (yielded once its line is folded)."""
        run = Run(len(self._runs) + 1, run_id, record.line, record.event.ts, started)
        self._runs[run_id] = run
        self.history.runs.append(run)
        self._keep(run)
        if self.selection is not None and self.selection.offer(run):
            self._shown = run
        if self.shows(run):
            self.out.append(run)  # yielded once its line is folded
        return run

    def _keep(self, run: Run) -> None:
        """Give `run` what its reader keeps of it: steps for an agent run whose requests
        are rebuilt, everything with the detail."""
        if self.detail or (self.requests and run.is_agent):
            run.keep()
        if self.requests and run.is_agent and run.conversation is None:
            run.conversation = []
        if self.detail and run.items is None:
            run.items, run.records = [], []

    def _implicit(self, record: TranscriptRecord, run_id: str) -> Run:
        """The run an event names when no RunStarted started it: a protocol problem."""
        kind = type(record.event).__name__
        if isinstance(record.event, UnknownEvent):
            kind = record.event.type
        self._problem("protocol", record.line, f"{kind} for run {run_id}, with no RunStarted")
        return self._new_run(record, run_id, None)

    def _run_started(self, record: TranscriptRecord, event: RunStarted) -> None:
        if event.task is not None:  # an agent run: it must end, as a call must
            self.history.agent.run_started(event.run_id)
        run = self._runs.get(event.run_id)
        if run is None:
            run = self._new_run(record, event.run_id, event)
        elif run.started is None:  # its first event came before it
            run.started = event
            self._keep(run)
        else:
            self._problem("protocol", record.line, f"run {event.run_id} is started again")
            self._item(run, record)
            return
        if run.records is not None:
            run.records.append(record)

    def _item(self, run: Run, record: TranscriptRecord) -> None:
        """Keep an event of the run as read (with the detail)."""
        if run.items is not None:
            run.items.append(record)

    def _last_ts(self, record: TranscriptRecord) -> None:
        event = record.event
        run_id = event.data.get("runId") if isinstance(event, UnknownEvent) else None
        run = self._runs.get(str(run_id or getattr(event, "run_id", "")))
        if run is not None:
            run.last_ts = event.ts

    # --- calls --------------------------------------------------------------------

    def _place(self, run: Run, call: Call, record: TranscriptRecord) -> None:
        """Keep a call in its run: in the step that made it (the run's latest request), or
        among the opening calls (made before the run's first request: `--tool`, or those a
        continued run had left over)."""
        run.calls.append(call)
        if self.detail:
            call.records = [record, *self._waiting.pop(call.call_id, ())]
            approvals = [r.event for r in call.records[1:]]
            call.approvals = tuple(
                a for a in approvals if isinstance(a, ApprovalRequested | ApprovalDecided)
            )
        if call.step is not None and run.steps:
            run.steps[-1].calls.append(call)
            return
        run.opening_calls.append(call)
        if call.step is not None:
            self._steps.step(run, call.step).calls.append(call)
        elif run.items is not None:
            run.items.append(call)

    def _ended(
        self, record: TranscriptRecord, event: ToolSucceeded | ToolFailed, opened: OpenCall | None
    ) -> None:
        """Fold a terminal event: the call it ends is yielded, if it ends one and its run is
        shown."""
        run_id = event.run_id
        run = self._runs.get(run_id) or self._implicit(record, run_id)
        if self.detail:
            run.last_ts = event.ts
        if opened is None:
            if self.detail:
                self._item(run, record)  # shown as it is
            return
        # With the detail, calls stay findable after they end (an approval may come late).
        call = self._take(opened.call_id)
        # The call is as its ToolCalled recorded it, whatever run this event names.
        owner = run if opened.run_id == run_id else self._runs[opened.run_id]
        if isinstance(event, ToolSucceeded):
            owner.succeeded += 1
            call.status = SUCCEEDED
            call.output = event.output
            call.effects = event.effects
        else:
            owner.failed += 1
            call.status = FAILED
            call.error = event.error
        call.end_line = record.line
        call.duration_ms = event.duration_ms
        if call.records is not None:
            call.records.append(record)
        if self._every or owner is self._shown:
            self.out.append(call)

    def _approval(
        self, record: TranscriptRecord, event: ApprovalRequested | ApprovalDecided
    ) -> None:
        if isinstance(event, ApprovalDecided):
            self.history.decisions.append(event)
        call = self._open.get(event.call_id)
        if call is None:
            if self.detail:
                self._waiting.setdefault(event.call_id, []).append(record)
            return
        call.approvals = (*call.approvals, event)
        if call.records is not None:
            call.records.append(record)

    # --- the end ------------------------------------------------------------------

    def _problem(self, kind: str, line: int, message: str) -> None:
        self.history.problems.append(LogProblem(kind, line, message))

    def _finish(self) -> Iterator[Call]:
        history = self.history
        reader = self.reader
        if reader.empty:
            message = "the file is empty: it has no TranscriptStarted line"
            self._problem("integrity", 1, message)
        for opened in self.protocol.in_doubt():
            call = self._open[opened.call_id]
            owner = self._runs[opened.run_id]
            owner.in_doubt += 1
            if self.shows(owner):
                yield call
        for records in self._waiting.values():  # approvals whose call never began
            for record in records:
                self._item(self._runs[record.event.run_id], record)  # type: ignore[union-attr]
        problems = history.problems
        problems += [LogProblem("integrity", p.line, p.message) for p in self.misplaced]
        problems += read_problems(reader)
        problems += [LogProblem("protocol", p.line, p.message) for p in self.protocol.problems]
        problems += [
            LogProblem("in-doubt", opened.line, opened.message())
            for opened in self.agent_protocol.in_doubt()
        ]
        problems.sort(key=lambda problem: problem.line)
        history.events = reader.records_read
        history.unknown_events = sum(self.unknown.values())
        history.head_hash = reader.head_hash
        history.agent.close()
        history.arrange()
        self.finished = True
        if self.selection is not None:
            history.selected = self.selection.check(history.name, history.runs)
