"""A transcript's history: its runs (their steps are in steps.py, their calls in
calls.py), what was wrong with the log, and the figures a report needs. Built by the one
fold (history/fold.py)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import TYPE_CHECKING, TypeAlias, TypeVar

import attrs

from mini_harness.errors import ReplayError
from mini_harness.events import (
    ApprovalDecided,
    CallOrigin,
    ImportSource,
    JsonObject,
    Message,
    ModelIdentity,
    ProjectRules,
    RunFinished,
    RunOrigin,
    RunSettings,
    RunStarted,
    RunWorkspace,
    ToolDefinition,
    TranscriptStarted,
)
from mini_harness.replay.history.calls import Call
from mini_harness.replay.history.figures import CHAIN_KINDS, AgentFigures, LogProblem, Totals
from mini_harness.replay.history.steps import Step
from mini_harness.transcripts import TranscriptRecord

if TYPE_CHECKING:
    from collections.abc import Sequence


T = TypeVar("T")


RunItem: TypeAlias = Step | Call | TranscriptRecord
"""What a run holds, in the order recorded: steps (agent runs), calls made outside any
step (tool runs, `--tool` before a task), and other events as read."""


@attrs.define(eq=False)
class Run:
    """A run from its RunStarted (or its first event, when that is missing) to its end.

    Always: what its RunStarted and RunFinished say (`started`, `finished`: typed), the
    calls it made by how they ended and its model requests. When the fold `keeps` the
    run (an agent run whose requests are rebuilt, or every run with the detail): `steps`
    (those with a model request), `calls` (every call, in the order begun) and
    `opening_calls` (those before its first request); reading them from a run not kept
    is a ReplayError. With the detail, `items` holds everything in the order recorded
    (RunItem), and `records` its RunStarted and RunFinished lines as read.
    """

    index: int  # 1-based, in the order runs started in the file
    run_id: str
    line: int  # of its RunStarted, or of its first event
    ts: str  # when it started (its first event's ts)
    started: RunStarted | None = None
    finished: RunFinished | None = None
    succeeded: int = 0
    failed: int = 0
    in_doubt: int = 0
    requests: int = 0  # model requests made
    keeps: bool = attrs.field(default=False, init=False)  # its steps and calls are kept
    _steps: list[Step] | None = attrs.field(default=None, init=False, repr=False)
    _calls: list[Call] | None = attrs.field(default=None, init=False, repr=False)
    _opening_calls: list[Call] | None = attrs.field(default=None, init=False, repr=False)
    conversation: list[Message] | None = None  # the messages so far, as rebuilt
    budget: int | None = None  # the context budget its trims recorded
    items: list[RunItem] | None = None
    records: list[TranscriptRecord] | None = None
    children: list[Run] = attrs.Factory(list)
    last_ts: str | None = None  # of its last event (kept with the detail)

    def __repr__(self) -> str:
        return f"<Run(index={self.index}, run_id={self.run_id!r})>"

    def keep(self) -> None:
        """Keep its steps and calls from now on (the fold decides)."""
        if not self.keeps:
            self._steps, self._calls, self._opening_calls = [], [], []
            self.keeps = True

    def _kept(self, found: list[T] | None) -> list[T]:
        if found is None:
            raise ReplayError(f"the steps and calls of run {self.run_id} were not kept")
        return found

    @property
    def steps(self) -> list[Step]:
        """Its steps that made a model request, in order."""
        return self._kept(self._steps)

    @property
    def calls(self) -> list[Call]:
        """Every call it made, in the order they began."""
        return self._kept(self._calls)

    @property
    def opening_calls(self) -> list[Call]:
        """The calls it made before its first model request (`--tool`, or those a
        continued run had left over)."""
        return self._kept(self._opening_calls)

    @property
    def is_agent(self) -> bool:
        """An agent run: its RunStarted gave a task."""
        return self.started is not None and self.started.task is not None

    @property
    def replays_offline(self) -> bool:
        """An agent run of mini-harness's own, whose recorded answers today's tools can be
        replayed under. An imported session's run is re-run call by call instead: its
        model asked for another agent's tools."""
        return self.is_agent and self.imported is None

    @property
    def harness(self) -> str:
        return self.started.harness if self.started is not None else ""

    @property
    def tools(self) -> tuple[ToolDefinition, ...]:
        return self.started.tools if self.started is not None else ()

    @property
    def tool_names(self) -> list[str]:
        return [tool.name for tool in self.tools]

    @property
    def task(self) -> str:
        started = self.started
        return started.task or "" if started is not None else ""

    @property
    def model(self) -> ModelIdentity | None:
        return self.started.model if self.started is not None else None

    @property
    def system_prompt(self) -> str:
        started = self.started
        return started.system_prompt or "" if started is not None else ""

    @property
    def rules(self) -> tuple[ProjectRules, ...]:
        started = self.started
        return started.project_rules or () if started is not None else ()

    @property
    def max_steps(self) -> int | None:
        return self.started.max_steps if self.started is not None else None

    @property
    def resumed_from(self) -> RunOrigin | None:
        return self.started.resumed_from if self.started is not None else None

    @property
    def forked_from(self) -> RunOrigin | None:
        return self.started.forked_from if self.started is not None else None

    @property
    def spawned_by(self) -> RunOrigin | None:
        """The run and step that started it, for a subagent's run (imported sessions)."""
        return self.started.spawned_by if self.started is not None else None

    @property
    def imported(self) -> ImportSource | None:
        """Where it came from, for a run imported from another agent's session file."""
        return self.started.imported if self.started is not None else None

    @property
    def undoes(self) -> CallOrigin | None:
        """The call it reverts, for a run `mini-harness undo` wrote."""
        return self.started.undoes if self.started is not None else None

    @property
    def origin(self) -> tuple[str, RunOrigin] | None:
        """("resumed", "forked" or "spawned", the run and step it continues or that started
        it) when it names one."""
        links = (
            ("resumed", self.resumed_from),
            ("forked", self.forked_from),
            ("spawned", self.spawned_by),
        )
        for how, link in links:
            if link is not None:
                return how, link
        return None

    @property
    def policy_sha256(self) -> str | None:
        return self.started.policy_sha256 if self.started is not None else None

    @property
    def workspace(self) -> RunWorkspace | None:
        """Where it worked, if its RunStarted says (agent runs started by the CLI)."""
        return self.started.workspace if self.started is not None else None

    @property
    def settings(self) -> RunSettings | None:
        return self.started.settings if self.started is not None else None

    @property
    def unverified(self) -> tuple[str, ...] | None:
        return self.started.unverified if self.started is not None else None

    @property
    def stop_reason(self) -> str | None:
        """How it ended (None while unfinished: no RunFinished)."""
        return self.finished.stop_reason if self.finished is not None else None

    @property
    def final_text(self) -> str | None:
        return self.finished.final_text if self.finished is not None else None

    @property
    def in_doubt_calls(self) -> list[Call]:
        """The calls begun and never ended."""
        return [call for call in self.calls if not call.ended]

    def every_call(self) -> Iterator[Call]:
        """Its calls in the order they were recorded in its items (with the detail)."""
        for item in self.items or ():
            if isinstance(item, Call):
                yield item
            elif isinstance(item, Step):
                yield from item.calls

    def pruned(self, items: list[RunItem], children: list[Run]) -> Run:
        """A copy of the run holding only `items` (some of its own) and `children`: its
        steps and calls are those among the items."""
        pruned = copy.copy(self)
        pruned.items, pruned.children = items, children
        steps = [item for item in items if isinstance(item, Step)]
        pruned._steps = [step for step in steps if step.requested is not None]
        pruned._calls = list(pruned.every_call())
        kept = {id(call) for call in pruned._calls}
        pruned._opening_calls = [call for call in self.opening_calls if id(call) in kept]
        return pruned

    def step_numbers(self) -> list[int]:
        return [step.number for step in self.steps] if self.keeps else []


@attrs.define(eq=False)
class History:
    """Everything a transcript records, read once.

    `runs` are every run in the order they started, `roots` the tops of the run tree (a
    run that resumes or forks another is a child of it, when that run is in the file);
    `selected` the run a `--run` named (None: every run is shown). `problems` are in line
    order; `decisions` every approval decision in file order. `calls`, when the reader
    asked for them (`fold_transcript`), holds every call of the runs shown in the order
    they ended (calls in doubt last). With the detail, `others` are events of no run and
    `header_record` the first line, as read.
    """

    path: str  # as given ("-" for standard input)
    name: str  # as shown ("standard input" for "-")
    header: TranscriptStarted | None = None
    runs: list[Run] = attrs.Factory(list)
    roots: list[Run] = attrs.Factory(list)
    selected: Run | None = None
    problems: list[LogProblem] = attrs.Factory(list)
    decisions: list[ApprovalDecided] = attrs.Factory(list)
    agent: AgentFigures = attrs.Factory(AgentFigures)
    events: int = 0
    unknown_events: int = 0
    head_hash: str | None = None
    calls: Sequence[Call] = ()
    others: list[TranscriptRecord] = attrs.Factory(list)
    header_record: TranscriptRecord | None = None

    def __repr__(self) -> str:
        return f"<History(path={self.path!r}, runs={len(self.runs)}, events={self.events})>"

    @property
    def transcript_id(self) -> str | None:
        return self.header.transcript_id if self.header is not None else None

    @property
    def chain_intact(self) -> bool:
        """No line is damaged, torn or out of the hash chain."""
        return not any(problem.kind in CHAIN_KINDS for problem in self.problems)

    @property
    def shown(self) -> list[Run]:
        """The runs a report shows: the selected one, or every run."""
        return [self.selected] if self.selected is not None else self.runs

    def agent_runs(self) -> list[Run]:
        """The agent runs shown, in the order they started."""
        return [run for run in self.shown if run.is_agent]

    def offline_runs(self) -> list[Run]:
        """The agent runs shown that replay offline (Run.replays_offline)."""
        return [run for run in self.shown if run.replays_offline]

    def walk(self) -> Iterator[tuple[Run, int]]:
        """Every run of the tree with its depth, parents before their children."""
        stack = [(run, 0) for run in reversed(self.roots)]
        while stack:
            run, depth = stack.pop()
            yield run, depth
            stack.extend((child, depth + 1) for child in reversed(run.children))

    def arrange(self) -> None:
        """Put each run under the run it resumes or forks, when that run is in the file
        (a run whose origin is not, or that would close a cycle, is a root)."""
        by_id = {run.run_id: run for run in self.runs}
        for run in self.runs:
            origin = run.origin
            parent = by_id.get(origin[1].run_id) if origin is not None else None
            if parent is not None and parent is not run and not _descends(parent, run, by_id):
                parent.children.append(run)
            else:
                self.roots.append(run)

    @property
    def totals(self) -> Totals:
        runs = self.shown
        return Totals(
            events=self.events,
            runs=len(runs),
            succeeded=sum(run.succeeded for run in runs),
            failed=sum(run.failed for run in runs),
            in_doubt=sum(run.in_doubt for run in runs),
            unknown_events=self.unknown_events,
        )

    @property
    def ok(self) -> bool:
        """No problem with the log and no call in doubt (failed calls are not log problems)."""
        return not self.problems and self.totals.in_doubt == 0

    def run_json(self, run: Run) -> JsonObject:
        """A run as `replay --json` writes it."""
        return {
            "index": run.index,
            "runId": run.run_id,
            "harness": run.harness,
            "started": run.ts,
            "line": run.line,
            "tools": list(run.tool_names),
            "succeeded": run.succeeded,
            "failed": run.failed,
            "inDoubt": run.in_doubt,
        }

    def to_json(self) -> JsonObject:
        """The facts `replay --json` writes: path, transcript id, calls (when held), runs,
        problems and totals."""
        return {
            "path": self.path,
            "transcriptId": self.transcript_id,
            "calls": [call.to_json() for call in self.calls],
            "runs": [self.run_json(run) for run in self.shown],
            "problems": [problem.to_json() for problem in self.problems],
            "totals": self.totals.to_json(),
        }


def _descends(run: Run, ancestor: Run, runs: dict[str, Run]) -> bool:
    """Whether `ancestor` is already above `run` (a cycle of origins would loop)."""
    seen: set[str] = set()
    origin = run.origin
    while origin is not None and origin[1].run_id not in seen:
        if origin[1].run_id == ancestor.run_id:
            return True
        seen.add(origin[1].run_id)
        above = runs.get(origin[1].run_id)
        origin = above.origin if above is not None else None
    return False
